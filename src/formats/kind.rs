//! What a file is: a model, a projector, an adapter, an importance matrix or a vocabulary,
//! from `general.type`, its keys and its tensor names (llama.cpp's and the trainers' conventions).

use super::model::{Checkpoint, MetaValue};

/// The kind of a file or a checkpoint, as `inspect --json` names it in `"kind"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    Model,
    /// A multimodal projector (`mmproj-….gguf`, `clip.*` keys): vision or audio into a model.
    Projector,
    /// A LoRA, aLoRA or control vector, applied over a base model.
    Adapter,
    /// An importance matrix (`*.in_sum2` / `*.counts`), made to guide quantization.
    Imatrix,
    /// A tokenizer and no weights (`--vocab-only`).
    Vocab,
}

impl Kind {
    /// The contract's spelling: `"model"`, `"projector"`, `"adapter"`, `"imatrix"`, `"vocab"`.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Model => "model",
            Kind::Projector => "projector",
            Kind::Adapter => "adapter",
            Kind::Imatrix => "imatrix",
            Kind::Vocab => "vocab",
        }
    }
}

/// The kind of one file from its metadata (key and, for strings, text) and its tensor names.
pub fn classify<'a>(
    meta: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
    names: impl IntoIterator<Item = &'a str>,
) -> Kind {
    let mut e = Evidence::default();
    meta.into_iter().for_each(|(k, v)| e.key(k, v));
    names.into_iter().for_each(|n| e.name(n));
    e.kind()
}

/// What one file shows of its kind, gathered key by key and name by name.
#[derive(Clone, Debug, Default)]
struct Evidence {
    general_type: Option<String>,
    architecture: Option<String>,
    clip: bool,
    adapter: bool,
    imatrix: bool,
    tokenizer: bool,
    tensors: u64,
    lora: u64,
    imatrix_names: u64,
    directions: u64,
}

impl Evidence {
    fn key(&mut self, key: &str, text: Option<&str>) {
        match key {
            "general.type" => self.general_type = text.map(str::to_ascii_lowercase),
            "general.architecture" => self.architecture = text.map(str::to_owned),
            _ => {}
        }
        self.clip |= key.starts_with("clip.");
        self.adapter |= key.starts_with("adapter.")
            || key.starts_with("controlvector.")
            || key == "ss_network_module"
            || key == "ss_network_dim";
        self.imatrix |= key.starts_with("imatrix.");
        self.tokenizer |= key.starts_with("tokenizer.");
    }

    fn name(&mut self, name: &str) {
        self.tensors += 1;
        self.lora += u64::from(is_lora_name(name));
        self.imatrix_names += u64::from(name.ends_with(".in_sum2") || name.ends_with(".counts"));
        self.directions += u64::from(name.strip_prefix("direction.").is_some_and(|n| n.parse::<u32>().is_ok()));
    }

    fn kind(&self) -> Kind {
        match self.general_type.as_deref() {
            Some("adapter") => return Kind::Adapter,
            Some("imatrix") => return Kind::Imatrix,
            Some("mmproj") => return Kind::Projector,
            Some("vocab") => return Kind::Vocab,
            _ => {}
        }
        match self.architecture.as_deref() {
            Some("clip") => return Kind::Projector,
            Some("controlvector") => return Kind::Adapter,
            _ => {}
        }
        if self.adapter {
            return Kind::Adapter;
        }
        if self.tensors == 0 {
            return if self.imatrix {
                Kind::Imatrix
            } else if self.tokenizer {
                Kind::Vocab
            } else {
                Kind::Model
            };
        }
        if self.clip {
            return Kind::Projector;
        }
        if self.imatrix || self.imatrix_names == self.tensors {
            return Kind::Imatrix;
        }
        if self.directions == self.tensors || self.lora * 2 >= self.tensors {
            return Kind::Adapter;
        }
        Kind::Model
    }
}

/// Whether a tensor name is one half of a low-rank pair: GGUF `….lora_a`/`….lora_b`, PEFT
/// `….lora_A.weight`/`….lora_B.weight` (and embeddings' `lora_embedding_A`), kohya
/// `….lora_down.weight`/`….lora_up.weight` (and their `….alpha`).
pub fn is_lora_name(name: &str) -> bool {
    // Most names hold no "lora" at all: one cheap look before the searches.
    let b = name.as_bytes();
    if !memchr::memchr_iter(b'l', b).any(|i| b[i..].starts_with(b"lora")) {
        return false;
    }
    name.ends_with(".lora_a")
        || name.ends_with(".lora_b")
        || name.contains(".lora_A.")
        || name.contains(".lora_B.")
        || name.contains("lora_embedding_A")
        || name.contains("lora_embedding_B")
        || name.contains(".lora_down.")
        || name.contains(".lora_up.")
        || (name.starts_with("lora_") && name.ends_with(".alpha"))
}

/// The kind of each of `cp`'s files (its own metadata and tensors), in one pass.
pub fn file_kinds(cp: &Checkpoint) -> Vec<Kind> {
    let mut per = vec![Evidence::default(); cp.files.len()];
    for ((k, v), &f) in cp.metadata.iter().zip(&cp.meta_file) {
        let text = match v {
            MetaValue::Text(t) => Some(t.as_str()),
            MetaValue::Gguf(v) => v.as_str(),
        };
        if let Some(e) = per.get_mut(f) {
            e.key(k, text);
        }
    }
    for t in &cp.tensors {
        if let Some(e) = per.get_mut(t.file) {
            e.name(&t.name);
        }
    }
    per.iter().map(Evidence::kind).collect()
}

/// The kind of the whole checkpoint: a model when any of its files is one (a model opened with
/// its projector is a model), else the first file's kind. Safetensors beside an
/// `adapter_config.json` are an adapter.
pub fn kind(cp: &Checkpoint) -> Kind {
    if cp.config("adapter_config.json").is_some() && !cp.tensors.is_empty() {
        return Kind::Adapter;
    }
    let kinds = file_kinds(cp);
    if kinds.contains(&Kind::Model) {
        return Kind::Model;
    }
    kinds.first().copied().unwrap_or(Kind::Model)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(meta: &[(&str, Option<&str>)], names: &[&str]) -> Kind {
        classify(meta.iter().copied(), names.iter().copied())
    }

    #[test]
    fn general_type_decides_first() {
        assert_eq!(of(&[("general.type", Some("adapter"))], &["blk.0.attn_q.weight"]), Kind::Adapter);
        assert_eq!(of(&[("general.type", Some("imatrix"))], &[]), Kind::Imatrix);
        assert_eq!(of(&[("general.type", Some("mmproj"))], &["v.blk.0.attn_q.weight"]), Kind::Projector);
        assert_eq!(of(&[("general.type", Some("model"))], &["token_embd.weight"]), Kind::Model);
    }

    #[test]
    fn contents_decide_without_general_type() {
        let clip = [("general.architecture", Some("clip")), ("clip.has_vision_encoder", None)];
        assert_eq!(of(&clip, &["v.patch_embd.weight", "mm.0.weight"]), Kind::Projector);
        assert_eq!(of(&[], &["blk.0.attn_q.weight.lora_a", "blk.0.attn_q.weight.lora_b"]), Kind::Adapter);
        let peft = ["base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"];
        assert_eq!(of(&[], &peft), Kind::Adapter);
        let kohya = ["lora_unet_mid_block_proj_in.lora_down.weight", "lora_unet_mid_block_proj_in.alpha"];
        assert_eq!(of(&[], &kohya), Kind::Adapter);
        assert_eq!(of(&[("controlvector.layer_count", None)], &["direction.1"]), Kind::Adapter);
        assert_eq!(of(&[], &["blk.0.attn_q.weight.in_sum2", "blk.0.attn_q.weight.counts"]), Kind::Imatrix);
        assert_eq!(of(&[("tokenizer.ggml.model", Some("llama"))], &[]), Kind::Vocab);
        assert_eq!(of(&[("tokenizer.ggml.model", Some("llama"))], &["token_embd.weight"]), Kind::Model);
        assert_eq!(of(&[], &[]), Kind::Model);
    }

    #[test]
    fn a_model_with_one_lora_named_tensor_is_still_a_model() {
        let names = ["a.weight", "b.weight", "c.weight", "x.lora_A.weight"];
        assert_eq!(of(&[], &names), Kind::Model);
    }
}
