//! Adapters: LoRA files as llama.cpp (GGUF), PEFT and kohya-ss write them, and control vectors.
//! Rank per module from the low-rank pair's shapes; alpha from the file's own records (GGUF
//! `adapter.lora.alpha`, PEFT's `adapter_config.json`, kohya's per-module `.alpha` tensors or
//! `ss_network_alpha`); the base model and target modules where the file names them.

use std::collections::BTreeMap;

use crate::hash::HashMap;

use serde_json::Value as Json;

use super::gguf::Value;
use super::job::{Job, JobStep, Need};
use super::model::{Checkpoint, Dtype, MetaValue};
use super::safetensors::Dtype as St;
use super::step::FeedError;

/// Which trainer's conventions an adapter follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavour {
    /// llama.cpp's `convert_lora_to_gguf.py`: `….weight.lora_a` / `….lora_b`.
    GgufLora,
    /// An activated LoRA (GGUF `adapter.alora.invocation_tokens`).
    GgufAlora,
    /// A control vector: one `direction.N` per layer.
    ControlVector,
    /// PEFT's `adapter_model.safetensors`: `….lora_A.weight` / `….lora_B.weight`.
    Peft,
    /// kohya-ss (sd-scripts): `lora_unet_…` / `lora_te_…`, `lora_down` / `lora_up` / `alpha`.
    Kohya,
}

impl Flavour {
    /// How the summary names it.
    pub fn label(self) -> &'static str {
        match self {
            Flavour::GgufLora => "LoRA (llama.cpp GGUF)",
            Flavour::GgufAlora => "aLoRA (llama.cpp GGUF)",
            Flavour::ControlVector => "control vector",
            Flavour::Peft => "LoRA (PEFT)",
            Flavour::Kohya => "LoRA (kohya-ss)",
        }
    }
}

/// Where a module's alpha came from.
#[derive(Clone, Debug, PartialEq)]
pub enum Alpha {
    /// Stated: the value and the key, config field or tensor that states it.
    Stated(f64, String),
    /// In the module's own alpha tensor (index into `cp.tensors`), not yet read.
    InTensor(usize),
    /// Not stated: the trainer's default (kohya: the rank; PEFT: 8).
    Default(f64),
}

impl Alpha {
    /// The value, when known without reading.
    pub fn value(&self) -> Option<f64> {
        match self {
            Alpha::Stated(v, _) | Alpha::Default(v) => Some(*v),
            Alpha::InTensor(_) => None,
        }
    }
}

/// One adapted module.
#[derive(Clone, Debug, PartialEq)]
pub struct Module {
    /// The module's name, without the low-rank suffixes.
    pub name: String,
    /// The rank, from the pair's shapes (`None` when the halves disagree or one is missing).
    pub rank: Option<u64>,
    /// Input and output widths, from the pair's shapes.
    pub in_features: Option<u64>,
    pub out_features: Option<u64>,
    pub alpha: Alpha,
}

/// What an adapter holds.
#[derive(Clone, Debug, PartialEq)]
pub struct Adapter {
    pub flavour: Flavour,
    /// The base model the file names (GGUF `general.base_model.0.*`, PEFT
    /// `base_model_name_or_path`, kohya `ss_sd_model_name`).
    pub base_model: Option<String>,
    /// Target module names: PEFT's `target_modules`, else the distinct last parts of the modules.
    pub target_modules: Vec<String>,
    pub modules: Vec<Module>,
}

impl Adapter {
    /// The distinct ranks, smallest first.
    pub fn ranks(&self) -> Vec<u64> {
        let mut r: Vec<u64> = self.modules.iter().filter_map(|m| m.rank).collect();
        crate::sort::sort(&mut r);
        r.dedup();
        r
    }

    /// Tensors holding per-module alphas still to be read ([`scalars_job`]).
    pub fn alpha_tensors(&self) -> Vec<usize> {
        self.modules
            .iter()
            .filter_map(|m| match m.alpha {
                Alpha::InTensor(i) => Some(i),
                _ => None,
            })
            .collect()
    }

    /// The same adapter with alphas read from their tensors (`values[k]` for the k-th of
    /// [`Adapter::alpha_tensors`]); `None` values stay unread.
    pub fn with_alphas(mut self, cp: &Checkpoint, values: &[Option<f64>]) -> Self {
        let mut k = 0;
        for m in &mut self.modules {
            if let Alpha::InTensor(i) = m.alpha {
                if let Some(Some(v)) = values.get(k) {
                    m.alpha = Alpha::Stated(*v, cp.tensors[i].name.clone());
                }
                k += 1;
            }
        }
        self
    }

    /// One line: `LoRA (PEFT), rank 8, alpha 16, 4 modules, base example/model`.
    pub fn describe(&self) -> String {
        let mut parts = vec![self.flavour.label().to_owned()];
        if self.flavour == Flavour::ControlVector {
            parts.push(format!("{} layers", self.modules.len()));
        } else {
            let ranks: Vec<String> = self.ranks().iter().map(u64::to_string).collect();
            if !ranks.is_empty() {
                parts.push(format!("rank {}", ranks.join("/")));
            }
            let mut alphas: Vec<String> = self.modules.iter().filter_map(|m| m.alpha.value()).map(fmt_num).collect();
            crate::sort::sort(&mut alphas);
            alphas.dedup();
            if !alphas.is_empty() && alphas.len() <= 4 {
                parts.push(format!("alpha {}", alphas.join("/")));
            }
            parts.push(format!("{} modules", self.modules.len()));
        }
        if let Some(b) = &self.base_model {
            parts.push(format!("base {b}"));
        }
        parts.join(", ")
    }
}

/// A number as people write it: `16`, `0.5`.
pub fn fmt_num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// Whether the adapter `a` (of checkpoint `adapter`, opened apart) fits `base`: `Ok` when the
/// architectures agree (where both files state one) and every adapted module's input and output
/// widths are the base tensor's; else the first difference. `None` when the flavour's modules
/// are not named as the base's tensors are (kohya's, control vectors).
pub fn check_fit(base: &Checkpoint, adapter: &Checkpoint, a: &Adapter) -> Option<Result<(), String>> {
    let gguf = matches!(a.flavour, Flavour::GgufLora | Flavour::GgufAlora);
    if !gguf && a.flavour != Flavour::Peft {
        return None;
    }
    let arch = |cp: &Checkpoint| match cp.meta("general.architecture") {
        Some(MetaValue::Gguf(v)) => v.as_str().map(str::to_owned),
        _ => None,
    };
    if let (Some(x), Some(y)) = (arch(adapter), arch(base)) {
        if x != y {
            return Some(Err(format!("the adapter is for {x} models, the base is {y}")));
        }
    }
    for m in &a.modules {
        let (Some(inf), Some(outf)) = (m.in_features, m.out_features) else { continue };
        // GGUF names the base tensor itself, in ggml order (in, out); PEFT names its module,
        // whose weight is row-major (out, in).
        let (name, want) =
            if gguf { (m.name.clone(), [inf, outf]) } else { (format!("{}.weight", m.name), [outf, inf]) };
        match base.tensor(&name) {
            None => return Some(Err(format!("the base has no {name}, which the adapter changes"))),
            Some(t) if t.shape.len() != 2 || t.shape[..] != want => {
                return Some(Err(format!(
                    "{name}: the adapter maps {inf} inputs to {outf} outputs, the base tensor's shape is {:?}",
                    t.shape
                )))
            }
            Some(_) => {}
        }
    }
    Some(Ok(()))
}

/// Stable codes of the rules an adapter opened with its base can break.
pub mod rules {
    use crate::findings::Rule;

    /// llama.cpp refuses a LoRA whose tensors do not match the model's (`lora_a`/`lora_b` shapes).
    pub const BASE_MISMATCH: Rule = Rule::error("adapter.base_mismatch");
}

/// Findings on an adapter opened together with its base model (one checkpoint of both): the
/// first module whose widths the base does not have ([`check_fit`], by module; the
/// architectures are compared only when the two are opened apart, as `repo` does). None when
/// the checkpoint holds no model and adapter together.
pub fn fit_findings(cp: &Checkpoint) -> Vec<crate::findings::Finding> {
    use crate::kind::{file_kinds, Kind};
    let kinds = file_kinds(cp);
    let Some(file) = kinds.iter().position(|&k| k == Kind::Adapter) else { return vec![] };
    if !kinds.contains(&Kind::Model) {
        return vec![];
    }
    let Some(a) = adapter(cp) else { return vec![] };
    match check_fit(cp, cp, &a) {
        Some(Err(why)) => {
            let path = &cp.files[file].path;
            let message = format!("{path} does not fit the model opened with it: {why}");
            vec![crate::findings::Finding::new(rules::BASE_MISMATCH, message).in_file(file)]
        }
        _ => vec![],
    }
}

/// The adapter in `cp`, when it holds one.
pub fn adapter(cp: &Checkpoint) -> Option<Adapter> {
    let gguf = |k: &str| match cp.meta(k) {
        Some(MetaValue::Gguf(v)) => Some(v),
        _ => None,
    };
    let text = |k: &str| match cp.meta(k) {
        Some(MetaValue::Text(t)) => Some(t.as_str()),
        Some(MetaValue::Gguf(v)) => v.as_str(),
        None => None,
    };
    if text("general.architecture") == Some("controlvector") || gguf("controlvector.layer_count").is_some() {
        let modules = cp
            .tensors
            .iter()
            .filter(|t| t.name.starts_with("direction."))
            .map(|t| Module {
                name: t.name.clone(),
                rank: None,
                in_features: t.shape.first().copied(),
                out_features: None,
                alpha: Alpha::Default(1.0),
            })
            .collect();
        let base = text("controlvector.model_hint").map(str::to_owned);
        return Some(Adapter { flavour: Flavour::ControlVector, base_model: base, target_modules: vec![], modules });
    }
    let names = || cp.tensors.iter().enumerate();
    let flavour = if names().any(|(_, t)| t.name.ends_with(".lora_a") || t.name.ends_with(".lora_b")) {
        if gguf("adapter.alora.invocation_tokens").is_some() {
            Flavour::GgufAlora
        } else {
            Flavour::GgufLora
        }
    } else if names().any(|(_, t)| t.name.contains(".lora_A.") || t.name.contains("lora_embedding_A")) {
        Flavour::Peft
    } else if names().any(|(_, t)| t.name.contains(".lora_down.")) {
        Flavour::Kohya
    } else {
        return None;
    };
    // Module name -> (down/A tensor, up/B tensor, alpha tensor).
    let mut pairs: BTreeMap<String, [Option<usize>; 3]> = BTreeMap::new();
    for (i, t) in names() {
        let n = t.name.as_str();
        let (module, slot) = match flavour {
            Flavour::GgufLora | Flavour::GgufAlora => match (n.strip_suffix(".lora_a"), n.strip_suffix(".lora_b")) {
                (Some(m), _) => (m, 0),
                (_, Some(m)) => (m, 1),
                _ => continue,
            },
            Flavour::Peft => match split_peft(n) {
                Some(x) => x,
                None => continue,
            },
            _ => match (n.split_once(".lora_down."), n.split_once(".lora_up."), n.strip_suffix(".alpha")) {
                (Some((m, _)), _, _) => (m, 0),
                (_, Some((m, _)), _) => (m, 1),
                (_, _, Some(m)) => (m, 2),
                _ => continue,
            },
        };
        let module = module.strip_prefix("base_model.model.").unwrap_or(module);
        pairs.entry(module.to_owned()).or_default()[slot] = Some(i);
    }
    let config = cp.config("adapter_config.json");
    let cfg_num = |k: &str| config.and_then(|c| c.get(k)).and_then(Json::as_f64);
    let network_alpha = text("ss_network_alpha").and_then(|s| s.trim().parse::<f64>().ok());
    let gguf_alpha = gguf("adapter.lora.alpha").and_then(|v| match v {
        Value::F32(a) => Some(f64::from(*a)),
        Value::F64(a) => Some(*a),
        other => other.as_u64().map(|a| a as f64),
    });
    let alpha_pattern = Pattern::of(config, "alpha_pattern");
    let modules = pairs
        .into_iter()
        .map(|(name, [a, b, alpha_t])| {
            let shape = |i: Option<usize>| i.map(|i| cp.tensors[i].shape.as_slice());
            // (rank, in, out) from each half, in the file's own axis order.
            let (ra, rb, inf, outf) = match flavour {
                Flavour::GgufLora | Flavour::GgufAlora => (
                    shape(a).and_then(|s| s.get(1).copied()),
                    shape(b).and_then(|s| s.first().copied()),
                    shape(a).and_then(|s| s.first().copied()),
                    shape(b).and_then(|s| s.get(1).copied()),
                ),
                _ => (
                    shape(a).and_then(|s| s.first().copied()),
                    shape(b).and_then(|s| s.get(1).copied()),
                    shape(a).and_then(|s| s.get(1).copied()),
                    shape(b).and_then(|s| s.first().copied()),
                ),
            };
            let rank = match (ra, rb) {
                (Some(x), Some(y)) if x == y => Some(x),
                _ => None,
            };
            let alpha = match flavour {
                Flavour::GgufLora | Flavour::GgufAlora => match gguf_alpha {
                    Some(v) => Alpha::Stated(v, "adapter.lora.alpha".into()),
                    None => Alpha::Default(rank.unwrap_or(1) as f64),
                },
                Flavour::Peft => match alpha_pattern.get(&name).or_else(|| cfg_num("lora_alpha")) {
                    Some(v) => Alpha::Stated(v, "adapter_config.json".into()),
                    None => Alpha::Default(8.0),
                },
                _ => match (alpha_t, network_alpha) {
                    (Some(i), _) => Alpha::InTensor(i),
                    (None, Some(v)) => Alpha::Stated(v, "ss_network_alpha".into()),
                    (None, None) => Alpha::Default(rank.unwrap_or(1) as f64),
                },
            };
            Module { name, rank, in_features: inf, out_features: outf, alpha }
        })
        .collect::<Vec<_>>();
    let base_model = match flavour {
        Flavour::Peft => {
            config.and_then(|c| c.get("base_model_name_or_path")).and_then(Json::as_str).map(str::to_owned)
        }
        Flavour::Kohya => text("ss_sd_model_name").map(str::to_owned),
        _ => text("general.base_model.0.name")
            .or_else(|| text("general.base_model.0.repo_url"))
            .or_else(|| text("adapter.lora.base_model"))
            .map(str::to_owned),
    };
    let target_modules = match config.and_then(|c| c.get("target_modules")) {
        Some(Json::Array(list)) => list.iter().filter_map(Json::as_str).map(str::to_owned).collect(),
        Some(Json::String(s)) => vec![s.clone()],
        _ => {
            let mut t: Vec<String> = modules.iter().map(|m| last_part(&m.name).to_owned()).collect();
            crate::sort::sort(&mut t);
            t.dedup();
            t
        }
    };
    Some(Adapter { flavour, base_model, target_modules, modules })
}

/// `(module, slot)` of a PEFT name: slot 0 for A, 1 for B.
fn split_peft(n: &str) -> Option<(&str, usize)> {
    for (tag, slot) in [(".lora_A.", 0), (".lora_B.", 1), (".lora_embedding_A", 0), (".lora_embedding_B", 1)] {
        if let Some((m, _)) = n.split_once(tag) {
            return Some((m, slot));
        }
    }
    None
}

/// The module's last part: `q_proj` of `model.layers.0.self_attn.q_proj`; kohya's names use `_`.
fn last_part(name: &str) -> &str {
    name.rsplit('.').next().unwrap_or(name)
}

/// A PEFT `alpha_pattern` / `rank_pattern`: module name or dotted suffix → value, each key with
/// its place in the file (the first key that applies wins, as in PEFT).
struct Pattern<'a>(HashMap<&'a str, (usize, Option<f64>)>);

impl<'a> Pattern<'a> {
    fn of(config: Option<&'a Json>, field: &str) -> Pattern<'a> {
        let map = config.and_then(|c| c.get(field)).and_then(Json::as_object);
        Pattern(map.into_iter().flatten().enumerate().map(|(i, (k, v))| (k.as_str(), (i, v.as_f64()))).collect())
    }

    /// The value of the first entry whose key is `module` or a dotted suffix of it: one lookup
    /// per part of the name, not one comparison per key.
    fn get(&self, module: &str) -> Option<f64> {
        if self.0.is_empty() {
            return None;
        }
        let suffixes = module.match_indices('.').map(|(i, _)| &module[i + 1..]);
        std::iter::once(module).chain(suffixes).filter_map(|k| self.0.get(k)).min_by_key(|(i, _)| *i)?.1
    }
}

/// Reads the first value of each of a few small tensors (alphas): F16, BF16, F32 or F64.
pub struct ScalarsJob {
    wants: Vec<Option<(usize, u64, Dtype)>>,
    next: usize,
    out: Vec<Option<f64>>,
}

/// The job reading the value of tensors `indexes` of `cp` (`None` for one that is not a
/// readable float scalar).
pub fn scalars_job(cp: &Checkpoint, indexes: &[usize]) -> ScalarsJob {
    let wants = indexes
        .iter()
        .map(|&i| {
            let t = cp.tensors.get(i)?;
            let start = t.data.as_ref().ok()?.range().start;
            let width = match &t.dtype {
                Dtype::Safetensors(St::F16 | St::BF16) => 2,
                Dtype::Safetensors(St::F32) => 4,
                Dtype::Safetensors(St::F64) => 8,
                _ => return None,
            };
            (t.data.as_ref().ok()?.range().len() >= width).then(|| (t.file, start, t.dtype.clone()))
        })
        .collect::<Vec<_>>();
    let n = wants.len();
    ScalarsJob { wants, next: 0, out: Vec::with_capacity(n) }
}

impl Job for ScalarsJob {
    type Output = Vec<Option<f64>>;

    fn step(&mut self) -> JobStep<Vec<Option<f64>>> {
        while let Some(w) = self.wants.get(self.next) {
            match w {
                Some((file, start, dtype)) => {
                    let width = width(dtype);
                    return JobStep::Need(Need {
                        file: *file,
                        range: super::range::ByteRange::new(*start, start + width),
                    });
                }
                None => {
                    self.out.push(None);
                    self.next += 1;
                }
            }
        }
        JobStep::Done(std::mem::take(&mut self.out))
    }

    fn feed(&mut self, file: usize, offset: u64, bytes: &[u8]) -> Result<(), FeedError> {
        let Some(Some((f, start, dtype))) = self.wants.get(self.next) else {
            return Err(FeedError { expected: offset, got: offset });
        };
        if *f != file || *start != offset {
            return Err(FeedError { expected: *start, got: offset });
        }
        let w = width(dtype) as usize;
        if bytes.len() < w {
            return Ok(()); // a short read: asked again
        }
        let b = &bytes[..w];
        let v = match dtype {
            Dtype::Safetensors(St::F16) => f64::from(half::f16::from_le_bytes([b[0], b[1]])),
            Dtype::Safetensors(St::BF16) => f64::from(half::bf16::from_le_bytes([b[0], b[1]])),
            Dtype::Safetensors(St::F32) => f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            _ => f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
        };
        self.out.push(Some(v));
        self.next += 1;
        Ok(())
    }
}

fn width(d: &Dtype) -> u64 {
    match d {
        Dtype::Safetensors(St::F16 | St::BF16) => 2,
        Dtype::Safetensors(St::F32) => 4,
        _ => 8,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pattern_applies_by_name_or_dotted_suffix_its_first_key_winning() {
        let config: Json = serde_json::from_str(
            r#"{"alpha_pattern": {"self_attn.q_proj": 32, "q_proj": 16, "layers.1.mlp.up_proj": 8, "v_proj": "x"}}"#,
        )
        .unwrap();
        let p = Pattern::of(Some(&config), "alpha_pattern");
        assert_eq!(p.get("model.layers.0.self_attn.q_proj"), Some(32.0), "first in the file, not the shortest");
        assert_eq!(p.get("model.layers.0.cross.q_proj"), Some(16.0));
        assert_eq!(p.get("q_proj"), Some(16.0), "the whole name");
        assert_eq!(p.get("model.layers.1.mlp.up_proj"), Some(8.0));
        assert_eq!(p.get("model.layers.11.mlp.up_proj"), None, "a suffix starts at a dot");
        assert_eq!(p.get("model.xq_proj"), None);
        assert_eq!(p.get("model.v_proj"), None, "a key that applies but holds no number");
        assert_eq!(Pattern::of(None, "alpha_pattern").get("q_proj"), None);

        // Many keys that never apply: each module is still a few lookups.
        let keys: Vec<String> = (0..200_000).map(|i| format!(r#""nomatch_{i}":1"#)).collect();
        let config: Json =
            serde_json::from_str(&format!(r#"{{"alpha_pattern":{{{},"o_proj":4}}}}"#, keys.join(","))).unwrap();
        let p = Pattern::of(Some(&config), "alpha_pattern");
        for i in 0..100_000 {
            assert_eq!(p.get(&format!("model.layers.{i}.self_attn.o_proj")), Some(4.0));
        }
    }
}
