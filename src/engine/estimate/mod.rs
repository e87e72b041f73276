//! What it takes to run a checkpoint: its weights, the KV cache at chosen context lengths and
//! cache types, and recurrent state, by llama.cpp's own sizing rules (one sequence, the default
//! micro-batch of 512, sliding-window layers caching their window only). Compute buffers and
//! runtime overheads are not counted.

mod facts;
mod gguf_facts;
mod gguf_layouts;
mod hf_facts;
mod positions;

pub use facts::{swa_period, Facts, Layer, Source};
pub use gguf_facts::from_gguf;
pub use hf_facts::from_config;
pub use positions::LearnedPositions;

use crate::kind::Kind;
use crate::model::{Checkpoint, Format, Tensor};

/// Context lengths always estimated, besides the model's own.
pub const CONTEXTS: [u64; 3] = [4096, 8192, 32768];

/// llama.cpp pads the context (and the sliding-window cache) to a multiple of this.
const PAD: u64 = 256;
/// llama.cpp's default micro-batch: a sliding-window cache holds the window plus one of these.
const UBATCH: u64 = 512;

/// A cache element type llama.cpp offers for keys and values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheType {
    F16,
    Q8_0,
    Q4_0,
}

impl CacheType {
    pub const ALL: [CacheType; 3] = [CacheType::F16, CacheType::Q8_0, CacheType::Q4_0];

    /// The name used in reports (as llama.cpp's `--cache-type-k` spells it).
    pub fn name(self) -> &'static str {
        match self {
            CacheType::F16 => "f16",
            CacheType::Q8_0 => "q8_0",
            CacheType::Q4_0 => "q4_0",
        }
    }

    /// (elements per block, bytes per block).
    fn block(self) -> (u64, u64) {
        match self {
            CacheType::F16 => (1, 2),
            CacheType::Q8_0 => (32, 34),
            CacheType::Q4_0 => (32, 18),
        }
    }

    /// ggml's row size of `width` elements; `None` when a head is not whole blocks.
    fn row_bytes(self, width: u64, head: u64) -> Option<u64> {
        let (elems, bytes) = self.block();
        if !head.is_multiple_of(elems) {
            return None;
        }
        Some((width / elems).saturating_mul(bytes))
    }
}

/// The KV cache at one context length and cache type.
#[derive(Clone, Debug, PartialEq)]
pub struct KvCache {
    pub context: u64,
    pub cache: CacheType,
    pub bytes: u64,
}

/// The memory a checkpoint needs to run.
#[derive(Clone, Debug, PartialEq)]
pub struct Estimate {
    /// Where the model's layout was learned (`None`: nowhere).
    pub source: Option<Source>,
    pub architecture: Option<String>,
    /// The context length the model was trained for.
    pub context: Option<u64>,
    /// Layers, and of them those that cache keys and values.
    pub layers: u64,
    pub kv_layers: u64,
    /// Every tensor's bytes (all experts of a mixture are resident), but a projector's.
    pub weights_bytes: u64,
    /// The bytes of a multimodal projector opened with the model (llama.cpp's `mmproj` GGUF).
    pub projector_bytes: u64,
    pub kv_cache: Vec<KvCache>,
    /// Recurrent state of one sequence (0 when the model has none).
    pub state_bytes: u64,
    /// The most tokens it can run, when its positions are learned in a table.
    pub runs_at_most: Option<u64>,
    /// What could not be estimated, and why.
    pub unknown: Vec<String>,
}

impl Estimate {
    /// The weights alone, and why no cache is estimated.
    fn not_estimated(weights_bytes: u64, projector_bytes: u64, why: &str) -> Self {
        Estimate {
            source: None,
            architecture: None,
            context: None,
            layers: 0,
            kv_layers: 0,
            weights_bytes,
            projector_bytes,
            kv_cache: Vec::new(),
            state_bytes: 0,
            runs_at_most: None,
            unknown: vec![why.to_owned()],
        }
    }

    /// Weights, cache and state together, for one cache entry.
    pub fn total(&self, kv: &KvCache) -> u64 {
        self.without_cache().saturating_add(kv.bytes)
    }

    /// Weights, projector and state.
    fn without_cache(&self) -> u64 {
        self.weights_bytes.saturating_add(self.projector_bytes).saturating_add(self.state_bytes)
    }

    /// All the model needs at any context when its layers are known, none caches keys and
    /// values (an encoder, a recurrent model) and nothing is left unknown; else `None`.
    pub fn total_without_cache(&self) -> Option<u64> {
        (self.layers > 0 && self.kv_layers == 0 && self.unknown.is_empty()).then(|| self.without_cache())
    }

    /// All the model needs at `context` tokens with a `cache` cache, when estimated there (the
    /// estimate must have been made at `context`, unless the model keeps no cache).
    pub fn total_at(&self, context: u64, cache: CacheType) -> Option<u64> {
        self.total_without_cache()
            .or_else(|| self.kv_cache.iter().find(|k| k.context == context && k.cache == cache).map(|k| self.total(k)))
    }
}

/// The facts of `cp` when its GGUF metadata or its `config.json` decide them (a GGUF without
/// them has none); `None` when its attention weights' shapes must.
fn facts_unless_shapes(cp: &Checkpoint) -> Option<Option<Facts>> {
    match cp.format {
        Format::Gguf => Some(from_gguf(cp)),
        Format::Safetensors | Format::Pickle => cp.config("config.json").and_then(from_config).map(Some),
    }
}

/// Per-layer K and V widths from Hugging Face `self_attn.{k,v}_proj.weight` shapes (rows =
/// heads × head size), gathered a tensor at a time; no context length, no windows.
#[derive(Default)]
struct Shapes {
    layers: Vec<Layer>,
}

impl Shapes {
    fn add(&mut self, t: &Tensor) {
        let Some(at) = memchr::memmem::find(t.name.as_bytes(), b"layers.") else { return };
        let rest = &t.name[at + "layers.".len()..];
        let Some((n, what)) = rest.split_once('.') else { return };
        let (Ok(n), Some(&rows)) = (n.parse::<usize>(), t.shape.first()) else { return };
        let is_k = what == "self_attn.k_proj.weight";
        if !(is_k || what == "self_attn.v_proj.weight") || n >= 1 << 16 {
            return;
        }
        if self.layers.len() <= n {
            self.layers.resize(n + 1, Layer::default());
        }
        // One "head" of the whole width: the per-head size is unknown, so quantized cache
        // types assume whole blocks.
        let l = &mut self.layers[n];
        l.kv_heads = 1;
        if is_k {
            l.head_k = rows;
        } else {
            l.head_v = rows;
        }
    }

    fn finish(self) -> Option<Facts> {
        if self.layers.is_empty() {
            return None;
        }
        let mut f = Facts::new(Source::Shapes, None);
        f.unknown.push(
            "no config.json: the cache is sized from the k_proj/v_proj weights, with no trained context length \
             and no sliding windows"
                .into(),
        );
        f.layers = self.layers;
        Some(f)
    }
}

/// The cache cells llama.cpp allocates for a layer at context `ctx`.
fn cells(ctx: u64, window: Option<u64>) -> u64 {
    let full = ctx.div_ceil(PAD).saturating_mul(PAD);
    match window {
        Some(w) => full.min(w.saturating_add(UBATCH)).div_ceil(PAD).saturating_mul(PAD),
        None => full,
    }
}

/// The KV cache bytes of `facts`' layers at context `ctx` with `cache` elements, or `None` when
/// a head is not a whole number of the type's blocks (llama.cpp refuses such a cache).
pub fn kv_bytes(facts: &Facts, ctx: u64, cache: CacheType) -> Option<u64> {
    let mut total = 0u64;
    for l in facts.layers.iter().filter(|l| l.kv_heads > 0) {
        let k = cache.row_bytes(l.k_width(), l.head_k)?;
        let v = if l.head_v == 0 { 0 } else { cache.row_bytes(l.v_width(), l.head_v)? };
        let index = if l.index_k == 0 { 0 } else { cache.row_bytes(l.index_k, l.index_k)? };
        let row = k.saturating_add(v).saturating_add(index);
        total = total.saturating_add(row.saturating_mul(cells(ctx, l.window)));
    }
    Some(total)
}

/// The bytes of each file's tensors, and which files are multimodal projectors (GGUFs whose every
/// tensor is named as llama.cpp's projectors name theirs: `v.*` vision, `a.*` audio, `mm.*` the
/// projection), gathered a tensor at a time.
struct FileBytes {
    files: Vec<FileTally>,
    /// Bytes of tensors of no file of the checkpoint's (weights).
    unfiled: u64,
}

#[derive(Clone)]
struct FileTally {
    bytes: u64,
    /// Every tensor so far is named as a projector's (GGUF only).
    projector: bool,
    any: bool,
}

impl FileBytes {
    fn new(cp: &Checkpoint) -> Self {
        let file = FileTally { bytes: 0, projector: cp.format == Format::Gguf, any: false };
        FileBytes { files: vec![file; cp.files.len()], unfiled: 0 }
    }

    fn add(&mut self, t: &Tensor) {
        let Some(f) = self.files.get_mut(t.file) else {
            self.unfiled = self.unfiled.saturating_add(t.nbytes);
            return;
        };
        if f.projector {
            f.projector = ["v.", "a.", "mm."].iter().any(|p| t.name.starts_with(p));
        }
        f.any = true;
        f.bytes = f.bytes.saturating_add(t.nbytes);
    }

    /// (bytes of weights, bytes of projector files).
    fn finish(&self) -> (u64, u64) {
        self.files.iter().fold((self.unfiled, 0u64), |(w, p), f| {
            if f.projector && f.any {
                (w, p.saturating_add(f.bytes))
            } else {
                (w.saturating_add(f.bytes), p)
            }
        })
    }
}

/// What the estimate reads of a checkpoint's tensors, gathered once: it is then made for any
/// contexts without another pass over them.
#[derive(Clone, Debug, PartialEq)]
pub struct Inputs {
    pub weights_bytes: u64,
    pub projector_bytes: u64,
    pub facts: Option<Facts>,
    pub positions: Option<LearnedPositions>,
}

/// [`Inputs`] gathered a tensor at a time.
pub struct Gathering {
    format: Format,
    bytes: FileBytes,
    positions: Option<LearnedPositions>,
    /// The facts, when the metadata or config decide them; else the shapes being read.
    facts: Result<Option<Facts>, Shapes>,
}

impl Gathering {
    pub fn new(cp: &Checkpoint) -> Self {
        Gathering {
            format: cp.format,
            bytes: FileBytes::new(cp),
            positions: None,
            facts: facts_unless_shapes(cp).ok_or_else(Shapes::default),
        }
    }

    pub fn add(&mut self, t: &Tensor) {
        self.bytes.add(t);
        if self.positions.is_none() {
            self.positions = LearnedPositions::of(self.format, t);
        }
        if let Err(shapes) = &mut self.facts {
            shapes.add(t);
        }
    }

    pub fn finish(self) -> Inputs {
        let (weights_bytes, projector_bytes) = self.bytes.finish();
        let facts = self.facts.unwrap_or_else(Shapes::finish);
        Inputs { weights_bytes, projector_bytes, facts, positions: self.positions }
    }
}

impl Inputs {
    pub fn of(cp: &Checkpoint) -> Self {
        let mut g = Gathering::new(cp);
        cp.tensors.iter().for_each(|t| g.add(t));
        g.finish()
    }
}

/// The estimate for `cp`, at the default contexts.
pub fn estimate(cp: &Checkpoint) -> Estimate {
    estimate_at(cp, &[])
}

/// The estimate for `cp`, at the default contexts and at `contexts` (chosen by the user).
pub fn estimate_at(cp: &Checkpoint, contexts: &[u64]) -> Estimate {
    estimate_from(&Inputs::of(cp), crate::kind::kind(cp), contexts)
}

/// [`estimate_at`] from the [`Inputs`] of a checkpoint whose [`crate::kind::kind`] is known.
pub fn estimate_from(inputs: &Inputs, kind: Kind, contexts: &[u64]) -> Estimate {
    let (weights_bytes, projector_bytes) = (inputs.weights_bytes, inputs.projector_bytes);
    let not_run = match kind {
        Kind::Adapter => Some("an adapter: it is applied over its base model, whose cache is not counted here"),
        Kind::Imatrix => Some("an importance matrix: it guides quantization and is never run"),
        Kind::Vocab => Some("a vocabulary only: there are no weights to run"),
        Kind::Model | Kind::Projector => None,
    };
    if let Some(why) = not_run {
        return Estimate::not_estimated(weights_bytes, projector_bytes, why);
    }
    let Some(facts) = &inputs.facts else {
        return Estimate::not_estimated(
            weights_bytes,
            projector_bytes,
            "no architecture metadata or config.json: the KV cache is not estimated",
        );
    };
    let chosen = contexts;
    let mut contexts: Vec<u64> = CONTEXTS.to_vec();
    contexts.extend(facts.context.filter(|&c| c > 0));
    contexts.extend(chosen.iter().copied().filter(|&c| c > 0));
    crate::sort::sort(&mut contexts);
    contexts.dedup();
    let mut unknown = facts.unknown.clone();
    let mut kv_cache = Vec::new();
    let caches = facts.layers.iter().any(|l| l.kv_heads > 0);
    let mut runs_at_most = None;
    if let Some(p) = inputs.positions.as_ref().filter(|_| caches) {
        // The most it runs (its trained context where that is fewer), and nothing past it.
        let most = facts.context.filter(|&c| c > 0).map_or(p.positions, |c| c.min(p.positions));
        let beyond: Vec<String> = contexts.iter().filter(|&&c| c > most).map(u64::to_string).collect();
        contexts.retain(|&c| c <= most);
        if contexts.last() != Some(&most) {
            contexts.push(most);
        }
        runs_at_most = Some(most);
        if !beyond.is_empty() {
            unknown.push(format!(
                "no cache at {} tokens: its positions are learned ({} holds {} positions), and it runs at most {most}",
                beyond.join(", "),
                p.tensor,
                p.positions
            ));
        }
    }
    for cache in CacheType::ALL.into_iter().filter(|_| caches) {
        let mut fits = true;
        for &context in &contexts {
            match kv_bytes(facts, context, cache) {
                Some(bytes) => kv_cache.push(KvCache { context, cache, bytes }),
                None => fits = false,
            }
        }
        if !fits {
            unknown.push(format!("a {} cache needs heads of whole 32-element blocks; these are not", cache.name()));
        }
    }
    let state_bytes = facts.layers.iter().fold(0u64, |s, l| s.saturating_add(l.state.saturating_mul(4)));
    Estimate {
        source: Some(facts.source),
        architecture: facts.architecture.clone(),
        context: facts.context,
        layers: facts.layers.len() as u64,
        kv_layers: facts.layers.iter().filter(|l| l.kv_heads > 0).count() as u64,
        weights_bytes,
        projector_bytes,
        kv_cache,
        state_bytes,
        runs_at_most,
        unknown,
    }
}

#[cfg(test)]
mod tests;
