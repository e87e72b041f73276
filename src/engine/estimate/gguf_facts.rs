//! Facts from a GGUF's `{arch}.*` keys, read as llama.cpp's model loader reads them.

use super::facts::{ssm_state, to_usize, Facts, Layer, Source, CACHELESS_ARCHS};
use super::gguf_layouts::{indexers, sliding_windows};
use crate::gguf::{Value, ARRAY_ITEMS_KEPT};
use crate::model::{Checkpoint, MetaValue};

/// The keys of one architecture.
pub(super) struct Keys<'a> {
    cp: &'a Checkpoint,
    pub(super) arch: &'a str,
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

    pub(super) fn u(&self, suffix: &str) -> Option<u64> {
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

    /// A per-layer flag array of `n_layer` layers (a sliding-window pattern), of booleans or
    /// integers (non-zero: set), as llama.cpp's `get_arr` reads one: the layers past its end are
    /// not set. `None` when absent or not such an array.
    pub(super) fn flags(&self, suffix: &str, n_layer: usize) -> Option<Vec<bool>> {
        let set: Vec<bool> = match self.value(suffix)? {
            Value::Array(a) if a.items.len() as u64 == a.len => a
                .items
                .iter()
                .map(|v| match v {
                    Value::Bool(b) => Some(*b),
                    Value::U32(_) | Value::I32(_) => v.as_u64().map(|n| n != 0).or(Some(true)),
                    _ => None,
                })
                .collect::<Option<_>>()?,
            _ => return None,
        };
        Some((0..n_layer).map(|i| set.get(i).copied().unwrap_or(false)).collect())
    }

    /// [`Keys::flags`], or one number for every layer (non-zero: set), as llama.cpp's
    /// `get_key_or_arr` reads a key.
    pub(super) fn flag_or_flags(&self, suffix: &str, n_layer: usize) -> Option<Vec<bool>> {
        self.flags(suffix, n_layer).or_else(|| self.u(suffix).map(|n| vec![n != 0; n_layer]))
    }
}

/// Architectures whose cache llama.cpp lays out in ways not modelled here, and how.
const APPROXIMATE: [(&str, &str); 4] = [
    ("deepseek4", "keeps compressed and windowed caches of its own"),
    ("dots3note", "keeps a windowed latent cache and an indexer on its full layers"),
    ("glm5-next", "pools its indexer's keys"),
    ("qwen4exp", "compresses its attention layers' cache and keeps an indexer"),
];

/// Architectures whose every layer is recurrent.
const RECURRENT: [&str; 6] = ["mamba", "mamba2", "rwkv6", "rwkv6qwen2", "rwkv7", "arwkv7"];
/// Hybrids whose recurrent layers are those with no key/value heads.
const RECURRENT_WHERE_NO_KV: [&str; 9] =
    ["jamba", "granitehybrid", "lfm2", "lfm2moe", "plamo2", "bailingmoe3", "kimi-linear", "kimi-k3", "glm5-next"];
/// Hybrids whose recurrent layers `attention.recurrent_layers` names, else all but one in every
/// `full_attention_interval` (the default here).
const INTERVAL_HYBRIDS: [(&str, u64); 4] = [("qwen3next", 4), ("qwen35", 4), ("qwen35moe", 4), ("minimax-01", 8)];

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
    // MLA: the cache holds the compressed latent (key_length wide) and no V. Both lengths
    // non-zero, as llama.cpp tests them: its own model saver writes every key, 0 where unused.
    let nonzero = |key: &str| k.u(key).is_some_and(|n| n > 0);
    let mla = nonzero("attention.key_length_mla") && nonzero("attention.value_length_mla");
    let head_v = if mla { 0 } else { head_v };
    facts.layers = kv_heads.iter().map(|&h| Layer::attention(h, head_k, head_v)).collect();

    if CACHELESS_ARCHS.contains(&arch) {
        facts.without_cache();
        return Some(facts);
    }
    recurrent_layers(&k, &mut facts, head0, head_k);
    sliding_windows(&k, &mut facts);
    indexers(&k, &mut facts);
    if let Some(how) = APPROXIMATE.iter().find(|(a, _)| *a == arch).map(|(_, how)| how) {
        facts.unknown.push(format!("{arch}: llama.cpp {how}, which is not counted here: the KV cache is approximate"));
    }
    shared_kv(&k, &mut facts);
    if facts.layers.iter().all(|l| l.kv_heads == 0 && l.state == 0) {
        facts.unknown.push(format!("{arch}: no layer caches keys, values or state as far as its keys say"));
    }
    Some(facts)
}

/// The recurrent layers and their state, by llama.cpp's `n_embd_r` + `n_embd_s` rule; `n_head`
/// is the first layer's head count, `per_head` its keys' width per head.
fn recurrent_layers(k: &Keys, facts: &mut Facts, n_head: u64, per_head: u64) {
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
        // A layer with a feed-forward is an MLP: it neither recurs nor caches.
        for (l, &ff) in facts.layers.iter_mut().zip(&ff) {
            if ff > 0 {
                l.kv_heads = 0;
            }
        }
        facts.layers.iter().zip(&ff).map(|(l, &ff)| l.kv_heads == 0 && ff == 0).collect()
    } else if let Some(&(_, default)) = INTERVAL_HYBRIDS.iter().find(|(a, _)| *a == arch) {
        k.flag_or_flags("attention.recurrent_layers", n_layer).unwrap_or_else(|| {
            let interval = to_usize(k.u("full_attention_interval").unwrap_or(default)).max(1);
            (0..n_layer).map(|i| (i + 1) % interval != 0).collect()
        })
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
    } else if let Some(kda) = k.u("kda.head_dim").filter(|&d| d > 0) {
        // Kimi's delta attention: a convolution over Q, K and V, and a head × head state per head.
        let conv = k.u("ssm.conv_kernel").filter(|&c| c > 0).map_or(3, |c| c - 1);
        let d_inner = n_head.saturating_mul(kda);
        conv.saturating_mul(3).saturating_mul(d_inner).saturating_add(kda.saturating_mul(d_inner))
    } else if arch == "minimax-01" {
        // Lightning attention: a head × head state per head.
        per_head.saturating_mul(per_head).saturating_mul(n_head)
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
