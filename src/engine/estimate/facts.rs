//! What the memory estimate needs to know of a model: per layer, what it caches.

/// What one layer keeps while the model runs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Layer {
    /// Key/value heads cached (0: the layer caches no attention).
    pub kv_heads: u64,
    /// Elements of one head's key and value per token (`head_v` 0: MLA, where the value is read
    /// from the cached latent and no V is stored).
    pub head_k: u64,
    pub head_v: u64,
    /// Sliding-window (or chunked) attention over this many tokens.
    pub window: Option<u64>,
    /// Recurrent state elements (f32), one copy per sequence whatever the context.
    pub state: u64,
    /// Elements per token of a sparse-attention indexer's keys, cached beside the layer's own
    /// (DeepSeek's lightning indexer; 0: none).
    pub index_k: u64,
}

impl Layer {
    /// A full-attention layer of `kv_heads` heads of `head_k`/`head_v` elements.
    pub fn attention(kv_heads: u64, head_k: u64, head_v: u64) -> Self {
        Layer { kv_heads, head_k, head_v, ..Layer::default() }
    }

    /// Key elements cached per token.
    pub fn k_width(&self) -> u64 {
        self.kv_heads.saturating_mul(self.head_k)
    }

    /// Value elements cached per token.
    pub fn v_width(&self) -> u64 {
        self.kv_heads.saturating_mul(self.head_v)
    }
}

/// Where the facts were read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Gguf,
    Config,
    /// The widths of the `k_proj`/`v_proj` weights, when nothing else says.
    Shapes,
}

impl Source {
    /// The name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Source::Gguf => "gguf",
            Source::Config => "config.json",
            Source::Shapes => "tensor shapes",
        }
    }
}

/// A model's layers as far as memory goes, and what could not be learned.
#[derive(Clone, Debug, PartialEq)]
pub struct Facts {
    pub source: Source,
    pub architecture: Option<String>,
    /// The context length the model was trained for.
    pub context: Option<u64>,
    pub layers: Vec<Layer>,
    /// What could not be estimated, and why.
    pub unknown: Vec<String>,
}

impl Facts {
    /// Facts from `source` with nothing learned yet.
    pub fn new(source: Source, architecture: Option<String>) -> Self {
        Facts { source, architecture, context: None, layers: Vec::new(), unknown: Vec::new() }
    }

    /// No layer caches keys and values: the model reads its whole input at once.
    pub fn without_cache(&mut self) {
        for l in &mut self.layers {
            (l.kv_heads, l.window) = (0, None);
        }
    }

    /// Mark layers `0..n` sliding-window where `is_swa(layer)`, over `window` tokens.
    pub fn set_windows(&mut self, window: u64, is_swa: impl Fn(usize) -> bool) {
        for (i, l) in self.layers.iter_mut().enumerate() {
            if is_swa(i) && l.kv_heads > 0 {
                l.window = Some(window);
            }
        }
    }
}

/// llama.cpp's architectures that run without a KV cache (its `create_memory` makes none for
/// them): encoders, which read their whole input at once, and diffusion models, which read it
/// whole at every step.
pub const CACHELESS_ARCHS: [&str; 14] = [
    "bert",
    "modern-bert",
    "nomic-bert",
    "nomic-bert-moe",
    "neo-bert",
    "jina-bert-v2",
    "jina-bert-v3",
    "eurobert",
    "gemma-embedding",
    "wavtokenizer-dec",
    "dream",
    "llada",
    "llada-moe",
    "rnd1",
];

/// The Hugging Face architectures (`config.json`'s `architectures`) that llama.cpp's converter
/// turns into one of [`CACHELESS_ARCHS`].
pub const CACHELESS_HF_ARCHITECTURES: [&str; 29] = [
    "BertModel",
    "BertForMaskedLM",
    "BertForSequenceClassification",
    "CamembertModel",
    "DistilBertModel",
    "DistilBertForMaskedLM",
    "DistilBertForSequenceClassification",
    "RobertaModel",
    "RobertaForSequenceClassification",
    "XLMRobertaModel",
    "XLMRobertaForSequenceClassification",
    "NomicBertModel",
    "NeoBERT",
    "NeoBERTLMHead",
    "NeoBERTForSequenceClassification",
    "EuroBertModel",
    "JinaEmbeddingsV5Model",
    "JinaBertModel",
    "JinaBertForMaskedLM",
    "ModernBertModel",
    "ModernBertForMaskedLM",
    "ModernBertForSequenceClassification",
    "Gemma3TextModel",
    "WavTokenizerDec",
    "DreamModel",
    "LLaDAModelLM",
    "LLaDAMoEModel",
    "LLaDAMoEModelLM",
    "RND1",
];

/// Hugging Face `model_type`s of encoders, whatever head their `architectures` name
/// (`RobertaForMaskedLM`, `BertForTokenClassification`, …; the converter takes only some) and
/// those llama.cpp cannot convert (MPNet, ELECTRA, ALBERT, DeBERTa, XLM-RoBERTa-XL): they keep no
/// cache in any runtime either, unless configured as a decoder (`is_decoder`).
pub const ENCODER_MODEL_TYPES: [&str; 15] = [
    "bert",
    "roberta",
    "xlm-roberta",
    "xlm-roberta-xl",
    "camembert",
    "distilbert",
    "modernbert",
    "nomic_bert",
    "neobert",
    "eurobert",
    "mpnet",
    "electra",
    "albert",
    "deberta",
    "deberta-v2",
];

/// Mamba's state per layer, as llama.cpp sizes it (`n_embd_r + n_embd_s`): the convolution
/// window (`conv − 1` columns of the inner width plus the groups' B and C) and the SSM state
/// (`d_state × d_inner`).
pub fn ssm_state(conv: u64, inner: u64, groups: u64, d_state: u64) -> u64 {
    let conv_width = inner.saturating_add(groups.saturating_mul(2).saturating_mul(d_state));
    conv.saturating_sub(1).saturating_mul(conv_width).saturating_add(d_state.saturating_mul(inner))
}

/// `n` as a `usize`, saturating (a count from a file can exceed wasm32's 32 bits).
pub fn to_usize(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// llama.cpp's `set_swa_pattern(period, dense_first)`: which layers of a repeating period use
/// the window (the last of each period is full; with `dense_first`, the first is).
pub fn swa_period(period: u64, dense_first: bool) -> impl Fn(usize) -> bool {
    move |il| {
        let il = il as u64;
        match period {
            0 => true,
            p if dense_first => !il.is_multiple_of(p),
            p => il % p < p - 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_follow_llama_cpp() {
        let swa = |p, d| (0..8).map(swa_period(p, d)).collect::<Vec<_>>();
        // gemma2: even layers slide; gemma3: five of six; period 1: none; 0: all.
        assert_eq!(swa(2, false), [true, false, true, false, true, false, true, false]);
        assert_eq!(swa(6, false), [true, true, true, true, true, false, true, true]);
        assert_eq!(swa(1, false), [false; 8]);
        assert_eq!(swa(0, false), [true; 8]);
        assert_eq!(swa(4, true), [false, true, true, true, false, true, true, true]);
    }
}
