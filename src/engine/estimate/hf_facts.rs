//! Facts from a Hugging Face `config.json`, read with the field names llama.cpp's converter
//! reads (the text model's `text_config` over the top level for multimodal models).

use serde_json::{Map, Value as Json};

use super::facts::{
    ssm_state, swa_period, to_usize, Facts, Layer, Source, CACHELESS_HF_ARCHITECTURES, ENCODER_MODEL_TYPES,
};

/// The fields of the text model: the top level, with a nested text config laid over it.
struct Fields(Map<String, Json>);

impl Fields {
    fn of(config: &Json) -> Option<Fields> {
        let mut root = config.as_object()?.clone();
        let nested = ["text_config", "llm_config", "language_config", "lm_config"]
            .iter()
            .find_map(|k| root.get(*k).and_then(Json::as_object).cloned())
            .or_else(|| root.get("thinker_config")?.get("text_config")?.as_object().cloned());
        if let Some(text) = nested {
            root.extend(text);
        }
        Some(Fields(root))
    }

    /// The first of `keys` holding a non-negative integer.
    fn u(&self, keys: &[&str]) -> Option<u64> {
        keys.iter().find_map(|k| self.0.get(*k).and_then(Json::as_u64))
    }

    fn str(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(Json::as_str)
    }

    fn strings(&self, key: &str) -> Option<Vec<&str>> {
        self.0.get(key)?.as_array()?.iter().map(Json::as_str).collect()
    }
}

/// The facts of a `config.json`, or `None` when it is no model config (no layer count).
pub fn from_config(config: &Json) -> Option<Facts> {
    let f = Fields::of(config)?;
    let n_layer = f.u(&["num_hidden_layers", "n_layers", "n_layer", "num_layers"])?;
    let n_layer = usize::try_from(n_layer).ok().filter(|&n| n <= 1 << 16)?;
    let model_type = f.str("model_type").unwrap_or("").to_owned();
    let arch =
        if model_type.is_empty() { first_architecture(config).map(str::to_owned) } else { Some(model_type.clone()) };
    let mut facts = Facts::new(Source::Config, arch);
    facts.context = f.u(&["max_position_embeddings", "n_ctx", "n_positions", "max_sequence_length", "seq_length"]);
    let n_embd = f.u(&["hidden_size", "n_embd", "dim", "d_model"]).unwrap_or(0);
    let heads = f.u(&["num_attention_heads", "n_head", "n_heads"]).unwrap_or(0);
    let kv_heads = match f.u(&["num_key_value_heads", "n_kv_heads", "num_kv_heads"]) {
        Some(n) => n,
        None if f.0.get("multi_query") == Some(&Json::Bool(true)) => 1,
        None => heads,
    };
    let head_dim = f.u(&["head_dim"]).unwrap_or(n_embd.checked_div(heads).unwrap_or(0));
    let layer = match (f.u(&["kv_lora_rank"]), f.u(&["qk_rope_head_dim"])) {
        // MLA, as llama.cpp runs it: one head of the latent plus the rotary part, no V.
        (Some(rank), Some(rope)) => Layer::attention(1, rank.saturating_add(rope), 0),
        _ => Layer::attention(kv_heads, head_dim, head_dim),
    };
    facts.layers = vec![layer; n_layer];
    if cacheless(config, &model_type) {
        facts.without_cache();
        return Some(facts);
    }
    if heads == 0 && f.u(&["kv_lora_rank"]).is_none() {
        facts.unknown.push("config.json gives no attention head count: attention caches are not estimated".into());
    }
    recurrent_layers(&f, &model_type, n_embd, &mut facts);
    sliding_windows(&f, &model_type, &mut facts);
    indexers(config, &f, &mut facts);
    if let Some(shared) = f.u(&["num_kv_shared_layers"]) {
        for l in facts.layers.iter_mut().skip(n_layer.saturating_sub(to_usize(shared))) {
            l.kv_heads = 0;
        }
    }
    Some(facts)
}

/// The first of `config.json`'s `architectures`, the one llama.cpp's converter goes by.
fn first_architecture(config: &Json) -> Option<&str> {
    config.get("architectures")?.get(0)?.as_str()
}

/// Whether the model keeps no KV cache: its architecture (the first named, as llama.cpp's
/// converter reads it) is one the converter makes cacheless, or it is an encoder.
fn cacheless(config: &Json, model_type: &str) -> bool {
    let first = first_architecture(config);
    let decoder = config.get("is_decoder") == Some(&Json::Bool(true));
    first.is_some_and(|a| CACHELESS_HF_ARCHITECTURES.contains(&a))
        || (ENCODER_MODEL_TYPES.contains(&model_type) && !decoder)
}

fn recurrent_layers(f: &Fields, model_type: &str, n_embd: u64, facts: &mut Facts) {
    let n_layer = facts.layers.len();
    let layer_types = f.strings("layer_types");
    let (which, state): (Vec<bool>, Option<u64>) = match model_type {
        "mamba" => {
            let inner = f.u(&["intermediate_size", "d_inner"]).unwrap_or(n_embd.saturating_mul(2));
            let state = ssm_state(
                f.u(&["conv_kernel", "d_conv"]).unwrap_or(4),
                inner,
                0,
                f.u(&["state_size", "d_state"]).unwrap_or(16),
            );
            (vec![true; n_layer], Some(state))
        }
        "mamba2" => {
            let inner = f.u(&["intermediate_size"]).unwrap_or(f.u(&["expand"]).unwrap_or(2).saturating_mul(n_embd));
            let conv = f.u(&["conv_kernel"]).unwrap_or(4);
            let state = ssm_state(conv, inner, f.u(&["n_groups"]).unwrap_or(1), f.u(&["state_size"]).unwrap_or(128));
            (vec![true; n_layer], Some(state))
        }
        "jamba" => {
            let (period, offset) =
                (f.u(&["attn_layer_period"]).unwrap_or(8).max(1), f.u(&["attn_layer_offset"]).unwrap_or(4));
            let inner = f.u(&["mamba_expand"]).unwrap_or(2).saturating_mul(n_embd);
            let state = ssm_state(f.u(&["mamba_d_conv"]).unwrap_or(4), inner, 0, f.u(&["mamba_d_state"]).unwrap_or(16));
            ((0..n_layer as u64).map(|i| i % period != offset).collect(), Some(state))
        }
        // Qwen3-Next, and Qwen3.5 (its text config `qwen3_5_text`, `qwen3_5_moe_text`).
        m if m == "qwen3_next" || m.starts_with("qwen3_5") => {
            let which = match &layer_types {
                Some(t) if t.len() == n_layer => t.iter().map(|t| *t == "linear_attention").collect(),
                _ => {
                    let interval = to_usize(f.u(&["full_attention_interval"]).unwrap_or(4)).max(1);
                    (0..n_layer).map(|i| (i + 1) % interval != 0).collect()
                }
            };
            let d_state = f.u(&["linear_key_head_dim"]).unwrap_or(0);
            let inner = f
                .u(&["linear_value_head_dim"])
                .unwrap_or(0)
                .saturating_mul(f.u(&["linear_num_value_heads"]).unwrap_or(0));
            let groups = f.u(&["linear_num_key_heads"]).unwrap_or(0);
            (which, Some(ssm_state(f.u(&["linear_conv_kernel_dim"]).unwrap_or(4), inner, groups, d_state)))
        }
        "nemotron_h" => {
            // Each layer Mamba-2 ('M'), attention ('*') or a feed-forward ('-', MoE 'E'), by its
            // pattern string or list of block types, as llama.cpp's converter reads them.
            let kinds: Option<Vec<char>> = match f.0.get("hybrid_override_pattern").and_then(Json::as_str) {
                Some(p) => Some(p.chars().collect()),
                None => f.strings("layers_block_type").map(|t| {
                    t.iter()
                        .map(|t| match *t {
                            "mamba" | "linear_attention" => 'M',
                            "attention" | "full_attention" => '*',
                            _ => '-',
                        })
                        .collect()
                }),
            };
            let Some(kinds) = kinds.filter(|k| k.len() == n_layer) else {
                facts.unknown.push("nemotron_h: no layer pattern of as many layers in config.json".into());
                return;
            };
            for (l, kind) in facts.layers.iter_mut().zip(&kinds) {
                if *kind != '*' {
                    l.kv_heads = 0;
                }
            }
            let head = f.u(&["mamba_head_dim"]).unwrap_or(0);
            let inner = f.u(&["mamba_num_heads", "num_heads"]).unwrap_or(0).saturating_mul(head);
            let groups = f.u(&["n_groups", "mamba_n_groups"]).unwrap_or(1);
            let conv = f.u(&["conv_kernel", "mamba_d_conv", "mamba_conv_kernel"]).unwrap_or(4);
            let d_state = f.u(&["ssm_state_size", "state_size", "mamba_d_state"]).unwrap_or(128);
            (kinds.iter().map(|k| *k == 'M').collect(), Some(ssm_state(conv, inner, groups, d_state)))
        }
        _ => match &layer_types {
            Some(t) if t.len() == n_layer && t.iter().any(|t| !t.ends_with("attention")) => {
                let which = t.iter().map(|t| !t.ends_with("attention")).collect();
                // LFM2's short convolutions keep `conv_L_cache − 1` columns of the hidden width;
                // Granite 4.0's Mamba-2 layers `mamba_*` keys (inner width `mamba_expand` × the
                // hidden width, as the converter reads them).
                let lfm2 = f.u(&["conv_L_cache"]).map(|l| n_embd.saturating_mul(l.saturating_sub(1)));
                let mamba2 = f.u(&["mamba_d_state"]).map(|d_state| {
                    let inner = f.u(&["mamba_expand"]).unwrap_or(2).saturating_mul(n_embd);
                    let groups = f.u(&["mamba_n_groups"]).unwrap_or(1);
                    ssm_state(f.u(&["mamba_d_conv"]).unwrap_or(4), inner, groups, d_state)
                });
                (which, lfm2.or(mamba2))
            }
            _ => return,
        },
    };
    let state = state.unwrap_or_else(|| {
        facts.unknown.push(format!("the recurrent state of {model_type} layers is not known from config.json"));
        0
    });
    for (l, recurrent) in facts.layers.iter_mut().zip(which) {
        if recurrent {
            *l = Layer { state, ..Layer::default() };
        }
    }
}

/// The sparse-attention indexer's keys llama.cpp caches beside each layer's own, as its converter
/// reads them: DeepSeek V3.2's `index_head_dim` on every layer; GLM-5's on the layers its
/// `indexer_types` calls "full" (every layer for GLM-5 and 5.1, trained under 1M tokens).
fn indexers(config: &Json, f: &Fields, facts: &mut Facts) {
    let Some(key) = f.u(&["index_head_dim"]).filter(|&k| k > 0) else { return };
    let n_layer = facts.layers.len();
    let which: Vec<bool> = match first_architecture(config) {
        Some("DeepseekV32ForCausalLM") => vec![true; n_layer],
        Some("GlmMoeDsaForCausalLM") => match f.strings("indexer_types") {
            Some(t) if t.len() == n_layer => t.iter().map(|t| *t == "full").collect(),
            _ if facts.context.is_some_and(|c| c < 1 << 20) => vec![true; n_layer],
            _ => {
                facts.unknown.push("config.json does not say which layers keep an indexer: none is counted".into());
                return;
            }
        },
        _ => return,
    };
    for (l, on) in facts.layers.iter_mut().zip(which) {
        if on && l.kv_heads > 0 {
            l.index_k = key;
        }
    }
}

fn sliding_windows(f: &Fields, model_type: &str, facts: &mut Facts) {
    let n_layer = facts.layers.len();
    let Some(window) = f.u(&["sliding_window", "attention_chunk_size"]).filter(|&w| w > 0) else {
        if model_type == "gemma2" {
            facts.set_windows(4096, swa_period(2, false));
        }
        return;
    };
    if let Some(types) = f.strings("layer_types").filter(|t| t.len() == n_layer) {
        facts.set_windows(window, |i| types[i] == "sliding_attention" || types[i] == "chunked_attention");
        return;
    }
    match (f.u(&["sliding_window_pattern"]), model_type) {
        (Some(period), _) => facts.set_windows(window, swa_period(period, false)),
        (None, "gemma2") => facts.set_windows(window, swa_period(2, false)),
        (None, "gemma3" | "gemma3_text") => facts.set_windows(window, swa_period(6, false)),
        (None, "cohere2") => facts.set_windows(window, swa_period(4, false)),
        (None, "llama4" | "llama4_text") => facts.set_windows(8192, swa_period(4, false)),
        _ if f.0.get("use_sliding_window") == Some(&Json::Bool(false)) => {}
        _ => facts.unknown.push(format!(
            "config.json gives a sliding window of {window} but no layer pattern: every layer is counted \
             with the full context (as llama.cpp runs {model_type})"
        )),
    }
}
