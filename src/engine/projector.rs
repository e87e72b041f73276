//! A multimodal projector opened with a model: does it fit? llama.cpp's mtmd refuses a pair
//! whose projector output width is not the model's embedding width; a projector made for
//! another family loads when the widths happen to agree and yields confident nonsense.

use super::findings::Finding;
use super::gguf::Value;
use super::kind::{file_kinds, Kind};
use super::model::{Checkpoint, MetaValue, Tensor};

/// Stable codes of the rules a model and its projector can break.
pub mod rules {
    use crate::findings::Rule;

    pub const WIDTH_MISMATCH: Rule = Rule::error("projector.width_mismatch");
    pub const FAMILY_MISMATCH: Rule = Rule::warning("projector.family_mismatch");
    pub const FIT_UNKNOWN: Rule = Rule::info("projector.fit_unknown");
}

/// Language-model architectures each projector type is made for, where that is one family
/// (generic projectors such as llava's `mlp` serve many and are not listed).
const FAMILIES: &[(&str, &[&str])] = &[
    ("gemma3", &["gemma3"]),
    ("gemma3nv", &["gemma3n"]),
    ("gemma3na", &["gemma3n"]),
    ("gemma4v", &["gemma4"]),
    ("gemma4a", &["gemma4"]),
    ("qwen2vl_merger", &["qwen2vl"]),
    ("qwen2.5vl_merger", &["qwen2vl"]),
    ("qwen3vl_merger", &["qwen3vl", "qwen3vlmoe"]),
    ("llama4", &["llama4"]),
    ("lfm2", &["lfm2", "lfm2moe"]),
    ("kimivl", &["deepseek2"]),
    ("pixtral", &["llama", "mistral3"]),
];

/// Findings on every projector among `cp`'s files against the model among them; none when the
/// checkpoint is not a model opened with a projector.
pub fn fit(cp: &Checkpoint) -> Vec<Finding> {
    let kinds = file_kinds(cp);
    let Some(model) = kinds.iter().position(|&k| k == Kind::Model) else { return vec![] };
    let meta = |file: usize, key: &str| -> Option<&Value> {
        cp.metadata.iter().zip(&cp.meta_file).find(|((k, _), &f)| f == file && k == key).and_then(|((_, v), _)| match v
        {
            MetaValue::Gguf(v) => Some(v),
            MetaValue::Text(_) => None,
        })
    };
    let arch = meta(model, "general.architecture").and_then(Value::as_str).unwrap_or("");
    let n_embd = meta(model, &format!("{arch}.embedding_length")).and_then(Value::as_u64);
    let deepstack = meta(model, &format!("{arch}.n_deepstack_layers")).and_then(Value::as_u64).unwrap_or(0);
    let mut out = Vec::new();
    for (p, _) in kinds.iter().enumerate().filter(|(_, &k)| k == Kind::Projector) {
        let path = &cp.files[p].path;
        let tensors = cp.tensors.iter().filter(|t| t.file == p);
        let projector = ProjectorFacts::read(|k| meta(p, k), tensors);
        let text_width = n_embd.and_then(|n| n.checked_mul(deepstack.checked_add(1)?));
        match (projector.width, text_width) {
            (Some((w, from)), Some(t)) if w != t => out.push(
                Finding::new(
                    rules::WIDTH_MISMATCH,
                    format!(
                        "{path} projects into {w}-wide embeddings ({from}) but the model's {arch}.embedding_length{} \
                         makes {t}: this projector was made for another model",
                        if deepstack > 0 { format!(" × (1 + {deepstack} deepstack layers)") } else { String::new() },
                    ),
                )
                .in_file(p),
            ),
            (Some(_), Some(_)) => {}
            (w, _) => out.push(
                Finding::new(
                    rules::FIT_UNKNOWN,
                    format!(
                        "whether {path} fits the model is not known: {} is not stated",
                        if w.is_none() { "the projector's output width" } else { "the model's embedding length" }
                    ),
                )
                .in_file(p),
            ),
        }
        if let Some(ty) = &projector.projector_type {
            if let Some((_, archs)) = FAMILIES.iter().find(|(t, _)| t == ty) {
                if !archs.contains(&arch) {
                    out.push(
                        Finding::new(
                            rules::FAMILY_MISMATCH,
                            format!(
                                "{path} is a {ty} projector, made for {} models, but the model is {arch}",
                                archs.join(" or ")
                            ),
                        )
                        .in_file(p),
                    );
                }
            }
        }
    }
    out
}

/// What a projector file says of itself.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProjectorFacts {
    /// `clip.projector_type` (or the vision/audio one).
    pub projector_type: Option<String>,
    /// The width of the embeddings it hands the model, and where that was read.
    pub width: Option<(u64, String)>,
}

impl ProjectorFacts {
    /// The facts from a projector's keys (`meta`) and its tensors, as llama.cpp's clip loader
    /// finds them: the `projection_dim` key, else the last projection tensor's output side.
    pub fn read<'a>(meta: impl Fn(&str) -> Option<&'a Value>, tensors: impl Iterator<Item = &'a Tensor>) -> Self {
        let text = |k: &str| meta(k).and_then(Value::as_str).map(str::to_owned);
        let projector_type = text("clip.projector_type")
            .or_else(|| text("clip.vision.projector_type"))
            .or_else(|| text("clip.audio.projector_type"));
        let key_width = ["clip.vision.projection_dim", "clip.audio.projection_dim"]
            .into_iter()
            .find_map(|k| meta(k).and_then(Value::as_u64).filter(|&w| w > 0).map(|w| (w, k.to_owned())));
        let deepstack = match meta("clip.vision.is_deepstack_layers") {
            Some(Value::Array(a)) => a.items.iter().filter(|v| matches!(v, Value::Bool(true))).count() as u64,
            _ => 0,
        };
        let width = key_width.or_else(|| tensor_width(tensors)).map(|(w, from)| match deepstack {
            0 => (w, from),
            d => (w.saturating_mul(d + 1), format!("{from} × (1 + {d} deepstack layers)")),
        });
        ProjectorFacts { projector_type, width }
    }
}

/// The output width from the projection tensors: `mm.input_projection.weight` ne[0] (gemma3),
/// else the highest-numbered `mm.N.weight` ne[1] (or its bias ne[0]), else `mm.model.fc.weight`
/// ne[1].
fn tensor_width<'a>(tensors: impl Iterator<Item = &'a Tensor>) -> Option<(u64, String)> {
    let mut best: Option<(u64, u64, &Tensor)> = None;
    let mut fc = None;
    for t in tensors {
        let n = t.name.as_str();
        if n == "mm.input_projection.weight" {
            return t.shape.first().map(|&w| (w, format!("{n} ne[0]")));
        }
        if n == "mm.model.fc.weight" {
            fc = t.shape.get(1).map(|&w| (w, format!("{n} ne[1]")));
        }
        let Some(rest) = n.strip_prefix("mm.") else { continue };
        let Some((idx, suffix)) = rest.split_once('.') else { continue };
        let (Ok(idx), side) = (idx.parse::<u64>(), if suffix == "weight" { 1 } else { 0 }) else { continue };
        if suffix != "weight" && suffix != "bias" {
            continue;
        }
        if let Some(&w) = t.shape.get(side) {
            if best.is_none_or(|(i, _, _)| idx > i || (idx == i && side == 1)) {
                best = Some((idx, w, t));
            }
        }
    }
    best.map(|(_, w, t)| (w, format!("{} ne[{}]", t.name, if t.name.ends_with(".weight") { 1 } else { 0 }))).or(fc)
}
