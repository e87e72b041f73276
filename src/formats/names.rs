//! Hugging Face tensor names as llama.cpp's converter names them in GGUF, for the common
//! architectures (llama, mistral, qwen2/qwen3 and their MoE, gemma 2/3, phi3, mixtral), and where
//! the converter moves elements: llama's Q/K row permutation, experts stacked into one tensor.
//! Names the table does not know are left unmatched, never guessed.

/// Where a Hugging Face tensor's elements lie in the GGUF tensor it became.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Element for element, in numpy order.
    Same,
    /// Expert `index` of a stacked `[experts, …]` tensor: the elements of its slice.
    Expert { index: u64 },
    /// llama's rotary row permutation of Q and K (per head, the two halves interleaved), with
    /// the head count that applies.
    PermutedRows { heads: u64 },
    /// Element for element, plus one: gemma's RMS norms store `1 + w` in GGUF (the converter adds
    /// the one that Hugging Face's `GemmaRMSNorm` adds at run time).
    PlusOne,
}

/// The GGUF name of Hugging Face tensor `hf` in a GGUF of architecture `arch`
/// (`general.architecture`), and where its elements went.
pub fn gguf_name(hf: &str, arch: &str, heads: Option<u64>, kv_heads: Option<u64>) -> Option<(String, Placement)> {
    let fixed = match hf {
        "model.embed_tokens.weight" => Some("token_embd.weight"),
        "model.norm.weight" => Some("output_norm.weight"),
        "lm_head.weight" => Some("output.weight"),
        _ => None,
    };
    if let Some(n) = fixed {
        let gemma_norm = n == "output_norm.weight" && matches!(arch, "gemma" | "gemma2" | "gemma3");
        return Some((n.to_owned(), if gemma_norm { Placement::PlusOne } else { Placement::Same }));
    }
    let rest = hf.strip_prefix("model.layers.")?;
    let (layer, rest) = rest.split_once('.')?;
    layer.parse::<u64>().ok()?;
    let (module, kind) = rest.rsplit_once('.')?;
    if !matches!(kind, "weight" | "bias") {
        return None;
    }
    let gemma2 = matches!(arch, "gemma2" | "gemma3");
    // Experts: `…experts.{e}.{proj}` → one stacked tensor per projection.
    if let Some((_, expert)) = module.split_once("experts.") {
        let (index, proj) = expert.split_once('.')?;
        let index = index.parse().ok()?;
        let stacked = match proj {
            "w1" | "gate_proj" => "ffn_gate_exps",
            "w2" | "down_proj" => "ffn_down_exps",
            "w3" | "up_proj" => "ffn_up_exps",
            _ => return None,
        };
        return Some((format!("blk.{layer}.{stacked}.{kind}"), Placement::Expert { index }));
    }
    let gguf = match module {
        "self_attn.q_proj" => "attn_q",
        "self_attn.k_proj" => "attn_k",
        "self_attn.v_proj" => "attn_v",
        "self_attn.o_proj" => "attn_output",
        "self_attn.qkv_proj" => "attn_qkv",
        "self_attn.q_norm" => "attn_q_norm",
        "self_attn.k_norm" => "attn_k_norm",
        "mlp.gate_proj" => "ffn_gate",
        "mlp.up_proj" | "mlp.gate_up_proj" => "ffn_up",
        "mlp.down_proj" => "ffn_down",
        "mlp.gate" | "block_sparse_moe.gate" => "ffn_gate_inp",
        "input_layernorm" => "attn_norm",
        "post_attention_layernorm" if gemma2 => "post_attention_norm",
        "post_attention_layernorm" => "ffn_norm",
        "pre_feedforward_layernorm" => "ffn_norm",
        "post_feedforward_layernorm" => "post_ffw_norm",
        _ => return None,
    };
    // llama.cpp's converter permutes the rows of llama's Q and K weights (not their biases,
    // and not in the other architectures), and adds one to gemma's norm weights.
    let gemma = matches!(arch, "gemma" | "gemma2" | "gemma3");
    let placement = match (arch, gguf, kind) {
        (_, norm, "weight") if gemma && norm.ends_with("norm") => Some(Placement::PlusOne),
        ("llama", "attn_q", "weight") => heads.map(|heads| Placement::PermutedRows { heads }),
        ("llama", "attn_k", "weight") => kv_heads.or(heads).map(|heads| Placement::PermutedRows { heads }),
        _ => Some(Placement::Same),
    }
    .unwrap_or(Placement::Same);
    Some((format!("blk.{layer}.{gguf}.{kind}"), placement))
}

/// The GGUF row that Hugging Face row `row` of a permuted Q or K weight of `rows` rows became
/// (`None` when the rows do not split into `heads` heads of an even size).
pub fn permuted_row(row: u64, rows: u64, heads: u64) -> Option<u64> {
    let per_head = rows.checked_div(heads).filter(|p| p % 2 == 0 && p * heads == rows)?;
    let (head, within) = (row / per_head, row % per_head);
    let (half, j) = (within / (per_head / 2), within % (per_head / 2));
    Some(head * per_head + j * 2 + half)
}

/// The Hugging Face row that GGUF row `row` of a permuted Q or K weight holds: the inverse of
/// [`permuted_row`].
pub fn unpermuted_row(row: u64, rows: u64, heads: u64) -> Option<u64> {
    let per_head = rows.checked_div(heads).filter(|p| p % 2 == 0 && p * heads == rows)?;
    let (head, within) = (row / per_head, row % per_head);
    Some(head * per_head + (within % 2) * (per_head / 2) + within / 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llama_names_and_their_permutation() {
        let g = |n: &str| gguf_name(n, "llama", Some(32), Some(8));
        assert_eq!(g("model.embed_tokens.weight"), Some(("token_embd.weight".into(), Placement::Same)));
        assert_eq!(g("lm_head.weight"), Some(("output.weight".into(), Placement::Same)));
        assert_eq!(
            g("model.layers.3.self_attn.q_proj.weight"),
            Some(("blk.3.attn_q.weight".into(), Placement::PermutedRows { heads: 32 }))
        );
        assert_eq!(
            g("model.layers.3.self_attn.k_proj.weight"),
            Some(("blk.3.attn_k.weight".into(), Placement::PermutedRows { heads: 8 }))
        );
        assert_eq!(g("model.layers.0.post_attention_layernorm.weight").unwrap().0, "blk.0.ffn_norm.weight");
        assert_eq!(g("model.layers.0.mlp.down_proj.weight").unwrap().0, "blk.0.ffn_down.weight");
        assert_eq!(
            g("model.layers.1.block_sparse_moe.experts.5.w2.weight"),
            Some(("blk.1.ffn_down_exps.weight".into(), Placement::Expert { index: 5 }))
        );
        assert_eq!(g("model.layers.x.mlp.down_proj.weight"), None);
        assert_eq!(g("model.layers.0.mystery.weight"), None);
        assert_eq!(g("vision_tower.blocks.0.weight"), None);
        // Other architectures: no permutation; gemma 2/3's extra norms.
        assert_eq!(
            gguf_name("model.layers.0.self_attn.q_proj.weight", "qwen2", Some(8), None).unwrap().1,
            Placement::Same
        );
        let gemma = |n: &str| gguf_name(n, "gemma2", None, None).unwrap().0;
        assert_eq!(gemma("model.layers.2.post_attention_layernorm.weight"), "blk.2.post_attention_norm.weight");
        assert_eq!(gemma("model.layers.2.pre_feedforward_layernorm.weight"), "blk.2.ffn_norm.weight");
        assert_eq!(gemma("model.layers.2.post_feedforward_layernorm.weight"), "blk.2.post_ffw_norm.weight");
        let place = |n: &str, arch: &str| gguf_name(n, arch, None, None).unwrap().1;
        assert_eq!(place("model.layers.2.input_layernorm.weight", "gemma3"), Placement::PlusOne);
        assert_eq!(place("model.layers.2.self_attn.q_norm.weight", "gemma3"), Placement::PlusOne);
        assert_eq!(place("model.norm.weight", "gemma2"), Placement::PlusOne);
        assert_eq!(place("model.norm.weight", "llama"), Placement::Same);
        assert_eq!(place("model.layers.2.mlp.up_proj.weight", "gemma2"), Placement::Same);
    }

    #[test]
    fn the_permutation_is_the_converters() {
        // convert_hf_to_gguf: w.reshape(heads, 2, rows/heads/2, cols).swapaxes(1, 2).reshape(rows, cols):
        // GGUF row (h, j, half) holds HF row (h, half, j).
        let (rows, heads) = (16u64, 2u64);
        let mut gguf_rows = Vec::new();
        for h in 0..heads {
            for j in 0..4 {
                for half in 0..2 {
                    gguf_rows.push(h * 8 + half * 4 + j); // the HF row at GGUF position len()
                }
            }
        }
        for (g, &hf) in gguf_rows.iter().enumerate() {
            assert_eq!(permuted_row(hf, rows, heads), Some(g as u64));
            assert_eq!(unpermuted_row(g as u64, rows, heads), Some(hf));
        }
        assert_eq!(permuted_row(0, 12, 8), None, "rows that do not split into heads");
        assert_eq!(permuted_row(0, 15, 5), None, "odd rows per head");
    }
}
