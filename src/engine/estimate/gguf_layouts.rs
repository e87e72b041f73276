//! Which attention layers of a GGUF model slide a window, and which keep a sparse-attention
//! indexer, read from its keys as llama.cpp's model loader reads them.

use super::facts::{swa_period, Facts};
use super::gguf_facts::Keys;

/// How an architecture's loader in llama.cpp finds its window.
#[derive(Clone, Copy)]
enum Window {
    /// The `attention.sliding_window` key, when above 0.
    Key,
    /// The key, else this (gemma 2).
    KeyOr(u64),
    /// This, whatever the key (exaone-moe).
    Fixed(u64),
    /// This, when the key is above 0 (smallthinker).
    FixedWhenKey(u64),
}

/// The architectures whose loader calls llama.cpp's `load_swa_pattern(period, dense_first)`:
/// the layers an `attention.sliding_window_pattern` array flags, else every `period`-th layer
/// full (the first of each period with `dense_first`, else the last), `period` from the
/// pattern key when it is a number.
const SWA_PERIODS: [(&str, Window, u64, bool); 16] = [
    ("gemma2", Window::KeyOr(4096), 2, false),
    ("gemma3", Window::Key, 6, false),
    ("gemma3n", Window::Key, 5, false),
    ("cohere2", Window::Key, 4, false),
    ("cohere2moe", Window::Key, 4, true),
    ("afmoe", Window::Key, 4, false),
    ("exaone-moe", Window::Fixed(128), 4, false),
    ("gpt-oss", Window::Key, 2, false),
    ("olmo2", Window::Key, 4, false),
    ("plamo3", Window::Key, 8, false),
    ("mellum", Window::Key, 4, false),
    ("muse-glimmer", Window::Key, 4, false),
    ("laguna", Window::Key, 4, true),
    ("smallthinker", Window::FixedWhenKey(4096), 4, true),
    // Chunked attention over 8192 tokens, unless the key turns it off (below).
    ("llama4", Window::Fixed(8192), 4, false),
    ("exaone4", Window::Fixed(4096), 4, false),
];

/// Architectures whose sliding-window layers only the pattern array names.
const SWA_ARRAYS: [&str; 7] = ["granite_swa", "spark2_5", "maple", "mimo2", "step35", "dots3note", "gemma4"];

/// The sliding-window layers, per architecture as llama.cpp sets them.
pub(super) fn sliding_windows(k: &Keys, facts: &mut Facts) {
    let arch = k.arch;
    let key = k.u("attention.sliding_window");
    let n_layer = facts.layers.len();
    let flags = k.flags("attention.sliding_window_pattern", n_layer);
    if let Some(&(_, window, period, dense_first)) = SWA_PERIODS.iter().find(|(a, ..)| *a == arch) {
        let window = match window {
            Window::Key => key.filter(|&w| w > 0),
            Window::KeyOr(w) => Some(key.unwrap_or(w)),
            Window::Fixed(w) => Some(w),
            Window::FixedWhenKey(w) => key.filter(|&k| k > 0).map(|_| w),
        };
        let on = match arch {
            "llama4" => key != Some(0),
            "exaone4" => n_layer == 64,
            _ => true,
        };
        if let Some(w) = window.filter(|_| on) {
            match flags {
                Some(f) => facts.set_windows(w, |i| f[i]),
                None => facts
                    .set_windows(w, swa_period(k.u("attention.sliding_window_pattern").unwrap_or(period), dense_first)),
            }
        }
    } else if arch == "lfm2" || arch == "lfm2moe" {
        // Every attention layer (the others are recurrent).
        if let Some(w) = key.filter(|&w| w > 0) {
            facts.set_windows(w, |_| true)
        }
    } else if arch == "phi3" {
        // phi3 reads a window but llama.cpp runs every layer in full.
    } else {
        match (key.filter(|&w| w > 0), flags) {
            (Some(w), Some(f)) => facts.set_windows(w, |i| f[i]),
            (Some(w), None) => {
                let why = if SWA_ARRAYS.contains(&arch) {
                    format!("{arch}.attention.sliding_window_pattern does not say which layers use it")
                } else {
                    format!("which layers use it is not known for {arch}")
                };
                facts.unknown.push(format!(
                    "{arch}.attention.sliding_window is {w}, but {why}: every layer is counted with the full context"
                ))
            }
            _ => {}
        }
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

/// The sparse-attention layers' indexer keys, as llama.cpp caches them beside the layers' own
/// (of the cache's type, in as many cells): DeepSeek V3.2's one key of
/// `attention.indexer.key_length` on every layer; GLM-5's and Hunyuan's on the layers
/// `attention.indexer.types` flags (without it, GLM-5 and 5.1, trained under 1M tokens, on
/// every layer, and GLM-5.2 on llama.cpp's table of its layers); MiniMax M3's one key per
/// indexer head on the layers after the leading dense ones.
pub(super) fn indexers(k: &Keys, facts: &mut Facts) {
    let Some(key) = k.u("attention.indexer.key_length").filter(|&w| w > 0) else { return };
    let n_layer = facts.layers.len();
    let types = k.flag_or_flags("attention.indexer.types", n_layer);
    let (width, which) = match k.arch {
        "deepseek32" => (key, vec![true; n_layer]),
        "glm-dsa" => match types {
            Some(t) => (key, t),
            None if facts.context.is_some_and(|c| c < 1 << 20) => (key, vec![true; n_layer]),
            // GLM-5.2's layers, as llama.cpp's own table has them: the first two, then one in
            // four, over its 78 layers.
            None => (key, (0..n_layer).map(|i| i < 2 || (i < 78 && (i - 2) % 4 == 0)).collect()),
        },
        "hy_v4" => (key, types.unwrap_or_else(|| vec![false; n_layer])),
        "minimax-m3" => {
            let lead = k.u("leading_dense_block_count").unwrap_or(0);
            let heads = k.u("attention.indexer.head_count").unwrap_or(1);
            (heads.saturating_mul(key), (0..n_layer).map(|i| i as u64 >= lead).collect())
        }
        _ => return,
    };
    for (l, on) in facts.layers.iter_mut().zip(which) {
        if on && l.kv_heads > 0 {
            l.index_k = width;
        }
    }
}
