//! Facts from a GGUF's `{arch}.*` keys, read as llama.cpp's model loader reads them.

use super::facts::{ssm_state, swa_period, to_usize, Facts, Layer, Source, CACHELESS_ARCHS};
use crate::gguf::{Value, ARRAY_ITEMS_KEPT};
use crate::model::{Checkpoint, MetaValue};

/// The keys of one architecture.
struct Keys<'a> {
    cp: &'a Checkpoint,
    arch: &'a str,
}

/// A value given once for all layers, or per layer.
enum PerLayer {
    Missing,
    All(u64),
    Each(Vec<u64>),
    /// An array longer than the items a header keeps, or of other than integers.
    Unreadable(String),
}

impl Keys<'_> {
    fn value(&self, suffix: &str) -> Option<&Value> {
        match self.cp.meta(&format!("{}.{suffix}", self.arch)) {
            Some(MetaValue::Gguf(v)) => Some(v),
            _ => None,
        }
    }

    fn u(&self, suffix: &str) -> Option<u64> {
        self.value(suffix).and_then(Value::as_u64)
    }

    fn per_layer(&self, suffix: &str, layers: usize) -> PerLayer {
        match self.value(suffix) {
            None => PerLayer::Missing,
            Some(Value::Array(a)) => {
                let items: Option<Vec<u64>> = a.items.iter().map(Value::as_u64).collect();
                match items {
                    Some(v) if v.len() as u64 == a.len && v.len() == layers => PerLayer::Each(v),
                    Some(_) if a.len > ARRAY_ITEMS_KEPT as u64 => PerLayer::Unreadable(format!(
                        "{}.{suffix} lists {} layers, more than the {ARRAY_ITEMS_KEPT} items a header keeps",
                        self.arch, a.len
                    )),
                    _ => PerLayer::Unreadable(format!(
                        "{}.{suffix} is an array of {} items for {layers} layers",
                        self.arch, a.len
                    )),
                }
            }
            Some(v) => match v.as_u64() {
                Some(n) => PerLayer::All(n),
                None => PerLayer::Unreadable(format!("{}.{suffix} is not a count", self.arch)),
            },
        }
    }

    /// A per-layer bool array (a sliding-window pattern).
    fn flags(&self, suffix: &str) -> Option<Vec<bool>> {
        match self.value(suffix)? {
            Value::Array(a) if a.items.len() as u64 == a.len => {
                a.items.iter().map(|v| if let Value::Bool(b) = v { Some(*b) } else { None }).collect()
            }
            _ => None,
        }
    }
}

/// Architectures whose every layer is recurrent.
const RECURRENT: [&str; 6] = ["mamba", "mamba2", "rwkv6", "rwkv6qwen2", "rwkv7", "arwkv7"];
/// Hybrids whose recurrent layers are those with no key/value heads.
const RECURRENT_WHERE_NO_KV: [&str; 6] = ["jamba", "granitehybrid", "lfm2", "lfm2moe", "plamo2", "bailingmoe3"];
/// Hybrids that interleave recurrent layers with one full-attention layer every N.
const INTERVAL_HYBRIDS: [&str; 3] = ["qwen3next", "qwen35", "qwen35moe"];

/// The facts of `cp`'s GGUF metadata, or `None` when it names no architecture.
pub fn from_gguf(cp: &Checkpoint) -> Option<Facts> {
    let arch = match cp.meta("general.architecture") {
        Some(MetaValue::Gguf(Value::String(s))) => s.as_str(),
        _ => return None,
    };
    // A projector opened with its language model: the model's keys are the ones that count.
    let arch = match arch {
        "clip" => cp
            .metadata
            .iter()
            .find_map(|(k, _)| k.strip_suffix(".block_count").filter(|a| *a != "clip" && !a.contains('.')))
            .unwrap_or(arch),
        a => a,
    };
    let k = Keys { cp, arch };
    let mut facts = Facts::new(Source::Gguf, Some(arch.to_owned()));
    facts.context = k.u("context_length");
    if arch == "clip" {
        facts.unknown.push("a projector: it runs beside a language model, whose cache is not counted here".into());
        return Some(facts);
    }
    let Some(n_layer) = k.u("block_count").and_then(|n| usize::try_from(n).ok()).filter(|&n| n <= 1 << 16) else {
        facts.unknown.push(format!("{arch}.block_count is missing: no layers to estimate a cache for"));
        return Some(facts);
    };
    let n_embd = k.u("embedding_length").unwrap_or(0);
    let each = |v: PerLayer, default: &[u64], facts: &mut Facts| -> Vec<u64> {
        match v {
            PerLayer::All(n) => vec![n; n_layer],
            PerLayer::Each(v) => v,
            PerLayer::Missing => default.to_vec(),
            PerLayer::Unreadable(why) => {
                facts.unknown.push(why);
                default.to_vec()
            }
        }
    };
    let heads = each(k.per_layer("attention.head_count", n_layer), &vec![0; n_layer], &mut facts);
    let kv_heads = each(k.per_layer("attention.head_count_kv", n_layer), &heads, &mut facts);
    let head0 = heads.first().copied().unwrap_or(0);
    let per_head = n_embd.checked_div(head0).unwrap_or(0);
    let head_k = k.u("attention.key_length").unwrap_or(per_head);
    let head_v = k.u("attention.value_length").unwrap_or(per_head);
    // MLA: the cache holds the compressed latent (key_length wide) and no V.
    let mla = k.u("attention.key_length_mla").is_some() && k.u("attention.value_length_mla").is_some();
    let head_v = if mla { 0 } else { head_v };
    facts.layers = kv_heads.iter().map(|&h| Layer::attention(h, head_k, head_v)).collect();

    if CACHELESS_ARCHS.contains(&arch) {
        facts.without_cache();
        return Some(facts);
    }
    recurrent_layers(&k, &mut facts);
    sliding_windows(&k, &mut facts);
    shared_kv(&k, &mut facts);
    if facts.layers.iter().all(|l| l.kv_heads == 0 && l.state == 0) {
        facts.unknown.push(format!("{arch}: no layer caches keys, values or state as far as its keys say"));
    }
    Some(facts)
}

/// The recurrent layers and their state, by llama.cpp's `n_embd_r` + `n_embd_s` rule.
fn recurrent_layers(k: &Keys, facts: &mut Facts) {
    let arch = k.arch;
    let n_layer = facts.layers.len();
    let which: Vec<bool> = if RECURRENT.contains(&arch) {
        vec![true; n_layer]
    } else if RECURRENT_WHERE_NO_KV.contains(&arch) {
        facts.layers.iter().map(|l| l.kv_heads == 0).collect()
    } else if arch == "falcon-h1" {
        vec![true; n_layer]
    } else if arch == "nemotron_h" || arch == "nemotron_h_moe" {
        let ff = match k.per_layer("feed_forward_length", n_layer) {
            PerLayer::Each(v) => v,
            PerLayer::All(n) => vec![n; n_layer],
            _ => vec![0; n_layer],
        };
        facts.layers.iter().zip(&ff).map(|(l, &ff)| l.kv_heads == 0 && ff == 0).collect()
    } else if INTERVAL_HYBRIDS.contains(&arch) {
        let interval = to_usize(k.u("full_attention_interval").unwrap_or(4)).max(1);
        (0..n_layer).map(|i| (i + 1) % interval != 0).collect()
    } else {
        return;
    };
    let n_embd = k.u("embedding_length").unwrap_or(0);
    let state = if let Some(wkv) = k.u("wkv.head_size").filter(|&w| w > 0) {
        // RWKV: token shift (r) and the wkv state (s).
        let shifts = k.u("token_shift_count").unwrap_or(2);
        shifts.saturating_mul(n_embd).saturating_add(n_embd.saturating_mul(wkv))
    } else if let Some(l_cache) = k.u("shortconv.l_cache").filter(|&l| l > 0) {
        n_embd.saturating_mul(l_cache - 1)
    } else if let (Some(conv), Some(inner), Some(d_state)) =
        (k.u("ssm.conv_kernel"), k.u("ssm.inner_size"), k.u("ssm.state_size"))
    {
        ssm_state(conv, inner, k.u("ssm.group_count").unwrap_or(0), d_state)
    } else {
        facts.unknown.push(format!("{arch}: the recurrent state's size keys (ssm.*, wkv.head_size) are missing"));
        0
    };
    for (l, recurrent) in facts.layers.iter_mut().zip(which) {
        if recurrent {
            l.state = state;
            if arch != "falcon-h1" {
                l.kv_heads = 0;
            }
        }
    }
}

/// The sliding-window layers, per architecture as llama.cpp sets them.
fn sliding_windows(k: &Keys, facts: &mut Facts) {
    let arch = k.arch;
    let key = k.u("attention.sliding_window");
    let pattern = k.u("attention.sliding_window_pattern");
    let flags = k.flags("attention.sliding_window_pattern");
    let n_layer = facts.layers.len();
    let period = |default: u64| pattern.unwrap_or(default);
    match arch {
        "gemma2" => facts.set_windows(key.unwrap_or(4096), swa_period(period(2), false)),
        "gemma3" => {
            if let Some(w) = key.filter(|&w| w > 0) {
                facts.set_windows(w, swa_period(period(6), false))
            }
        }
        "gemma3n" => {
            if let Some(w) = key {
                facts.set_windows(w, swa_period(period(5), false))
            }
        }
        "cohere2" => {
            if let Some(w) = key {
                facts.set_windows(w, swa_period(period(4), false))
            }
        }
        // Chunked attention over 8192 tokens in three layers of four, unless turned off.
        "llama4" if key != Some(0) => facts.set_windows(8192, swa_period(period(4), false)),
        "gpt-oss" => {
            if let Some(w) = key {
                facts.set_windows(w, swa_period(period(2), false))
            }
        }
        "exaone4" if n_layer == 64 => facts.set_windows(key.unwrap_or(4096), swa_period(period(4), false)),
        "smallthinker" if key.is_some_and(|w| w > 0) => facts.set_windows(4096, swa_period(period(4), true)),
        "olmo2" | "afmoe" | "cohere2moe" => {
            if let Some(w) = key.filter(|&w| w > 0) {
                match &flags {
                    Some(f) if f.len() == n_layer && arch == "cohere2moe" => facts.set_windows(w, |i| f[i]),
                    _ => facts.set_windows(w, swa_period(period(4), arch == "cohere2moe")),
                }
            }
        }
        "lfm2" | "lfm2moe" => {
            if let Some(w) = key.filter(|&w| w > 0) {
                facts.set_windows(w, |_| true)
            }
        }
        // phi3 reads a window but llama.cpp runs every layer in full.
        "phi3" => {}
        _ => match (key.filter(|&w| w > 0), flags) {
            (Some(w), Some(f)) if f.len() == n_layer => facts.set_windows(w, |i| f[i]),
            (Some(w), _) => facts.unknown.push(format!(
                "{arch}.attention.sliding_window is {w}, but which layers use it is not known for {arch}: \
                 every layer is counted with the full context"
            )),
            _ => {}
        },
    }
    // Sliding-window layers may have heads of their own size (gemma4).
    let (k_swa, v_swa) = (k.u("attention.key_length_swa"), k.u("attention.value_length_swa"));
    for l in facts.layers.iter_mut().filter(|l| l.window.is_some()) {
        l.head_k = k_swa.unwrap_or(l.head_k);
        if l.head_v > 0 {
            l.head_v = v_swa.unwrap_or(l.head_v);
        }
    }
}

/// Layers that reuse an earlier layer's cache (gemma3n: all from layer 20 on; gemma4: the last
/// `attention.shared_kv_layers`).
fn shared_kv(k: &Keys, facts: &mut Facts) {
    let n_layer = facts.layers.len();
    let from = match k.arch {
        "gemma3n" => Some(20),
        "gemma4" => k.u("attention.shared_kv_layers").map(|s| n_layer.saturating_sub(to_usize(s))),
        _ => None,
    };
    if let Some(from) = from {
        for l in facts.layers.iter_mut().skip(from) {
            l.kv_heads = 0;
        }
    }
}
