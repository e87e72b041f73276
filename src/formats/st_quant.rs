//! Quantized safetensors: which tensors are packed weights, which are their scales, zero points
//! and indexes, and how many weights a packed tensor holds. Schemes are recognised from
//! `quantization_config` (config.json) or ModelOpt's `hf_quant_config.json`, and from the tensors'
//! names and dtypes when there is no config: GPTQ, AWQ, bitsandbytes 4- and 8-bit, FP8 (block or
//! per-tensor/channel scales), compressed-tensors, ModelOpt NVFP4/FP8, and MXFP4 (gpt-oss).

use crate::hash::HashSet;

use serde_json::Value as Json;

use crate::model::{Checkpoint, Dtype, Extent, Format, Tensor};
use crate::safetensors::Dtype as St;

/// What a tensor is to the scheme.
#[derive(Clone, Debug, PartialEq)]
pub enum Role {
    /// An ordinary tensor: its elements are its parameters.
    Plain,
    /// Quantized weights holding `params` logical parameters, shown in the quant mix as `label`.
    Weight { params: u64, label: String },
    /// Scales, zero points, group indexes, lookup tables: bytes, no parameters.
    Overhead { label: String },
}

/// A scheme named by the config files.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Declared {
    /// `quant_method` (or ModelOpt's `quant_algo`), lower case.
    pub method: String,
    /// Bits per packed weight, when the config says.
    pub bits: Option<u64>,
    pub group_size: Option<i64>,
}

/// The scheme the config files declare, if any.
pub fn declared(cp: &Checkpoint) -> Option<Declared> {
    if let Some(q) = cp.config("config.json").and_then(|c| c.get("quantization_config")) {
        let method = q.get("quant_method").and_then(Json::as_str).unwrap_or("").to_ascii_lowercase();
        let weights = q
            .get("config_groups")
            .and_then(Json::as_object)
            .and_then(|g| g.values().next())
            .and_then(|g| g.get("weights"));
        let bits = q.get("bits").or_else(|| weights.and_then(|w| w.get("num_bits"))).and_then(Json::as_u64);
        let group_size =
            q.get("group_size").or_else(|| weights.and_then(|w| w.get("group_size"))).and_then(Json::as_i64);
        let method = match (method.as_str(), q.get("load_in_8bit")) {
            ("bitsandbytes", Some(Json::Bool(true))) => "bitsandbytes 8-bit".to_owned(),
            _ => method,
        };
        return Some(Declared { method, bits, group_size });
    }
    let algo = cp.config("hf_quant_config.json")?.get("quantization")?.get("quant_algo")?.as_str()?;
    Some(Declared { method: "modelopt".into(), bits: None, group_size: None }).map(|mut d| {
        d.method = format!("modelopt {}", algo.to_ascii_lowercase());
        d
    })
}

/// Suffixes of overhead tensors, whatever the scheme.
const OVERHEAD: [&str; 24] = [
    ".qzeros",
    ".scales",
    ".g_idx",
    ".absmax",
    ".quant_map",
    ".nested_absmax",
    ".nested_quant_map",
    ".SCB",
    ".weight_format",
    ".weight_scale_inv",
    ".weight_scale",
    ".weight_scale_2",
    ".weight_zero_point",
    ".weight_g_idx",
    ".weight_shape",
    ".weight_global_scale",
    ".input_global_scale",
    ".input_scale",
    ".input_zero_point",
    ".input_scale_ub",
    ".activation_scale",
    ".k_scale",
    ".v_scale",
    ".pre_quant_scale",
];

/// The role of every tensor of `cp`, in order; `None` when every tensor is [`Role::Plain`]
/// (plain checkpoints, and every GGUF, whose blocks carry their own scales): no list is built.
pub fn quant_roles(cp: &Checkpoint) -> Option<Vec<Role>> {
    if cp.format == Format::Gguf {
        return None;
    }
    let declared = declared(cp);
    // A cheap look first: plain checkpoints (most, and the 500k-tensor ones) stop here.
    let quantized = declared.is_some()
        || cp.tensors.iter().any(|t| {
            let n = t.name.as_str();
            // By the last byte first: most names end in "weight" or "bias".
            match n.as_bytes().last() {
                Some(b't') => n.ends_with(".qweight"),
                Some(b'd') => n.ends_with(".weight_packed"),
                Some(b'v') => n.ends_with(".weight_scale_inv"),
                Some(b'2') => n.ends_with(".weight_scale_2"),
                Some(b's') => n.ends_with("_blocks"),
                Some(b'x') => n.ends_with(".weight.absmax"),
                Some(b'B') => n.ends_with(".SCB"),
                _ => false,
            }
        });
    if !quantized {
        return None;
    }
    let names: HashSet<&str> = cp.tensors.iter().map(|t| t.name.as_str()).collect();
    let has = |n: String| names.contains(n.as_str());
    let method = declared.as_ref().map_or("", |d| d.method.as_str());
    let bits = declared.as_ref().and_then(|d| d.bits);
    let group = declared.as_ref().and_then(|d| d.group_size).filter(|&g| g > 0);
    let grouped = |name: &str, b: u64| match group {
        Some(g) => format!("{name} {b}-bit (group {g})"),
        None => format!("{name} {b}-bit"),
    };
    let mut out: Vec<Role> = cp
        .tensors
        .iter()
        .map(|t| {
            let n = t.name.as_str();
            let st = match &t.dtype {
                Dtype::Safetensors(d) => Some(*d),
                _ => None,
            };
            let base = n.rsplit_once('.').map_or(n, |(b, _)| b);
            if let Some(stem) = n.strip_suffix(".qweight") {
                let b = bits.unwrap_or(4);
                let name = if method == "awq" || (method.is_empty() && !has(format!("{stem}.g_idx"))) {
                    "AWQ"
                } else {
                    "GPTQ"
                };
                return packed(t, b, grouped(name, b));
            }
            if n.ends_with(".weight_packed") {
                return match st {
                    Some(St::U8) => packed(t, 4, fp4_label(method, has(format!("{base}.weight_global_scale")))),
                    _ => {
                        let b = bits.unwrap_or(4);
                        let g = group.map(|g| format!(" (group {g})")).unwrap_or_default();
                        packed(t, b, format!("compressed-tensors int{b}{g}"))
                    }
                };
            }
            if let Some(stem) = n.strip_suffix("_blocks") {
                if has(format!("{stem}_scales")) && st == Some(St::U8) {
                    return packed(t, 4, "MXFP4".into());
                }
            }
            if let Some(stem) = n.strip_suffix("_scales") {
                if has(format!("{stem}_blocks")) {
                    return Role::Overhead { label: "MXFP4".into() };
                }
            }
            if n.ends_with(".weight") {
                if has(format!("{n}.absmax")) || has(format!("{n}.quant_state.bitsandbytes__nf4")) {
                    let nf4 = !has(format!("{n}.quant_state.bitsandbytes__fp4"));
                    return packed(t, 4, if nf4 { "bitsandbytes NF4" } else { "bitsandbytes FP4" }.into());
                }
                if has(format!("{base}.SCB")) {
                    return Role::Weight { params: t.elems().unwrap_or(0), label: "bitsandbytes int8".into() };
                }
                let scaled = has(format!("{base}.weight_scale")) || has(format!("{base}.weight_scale_inv"));
                if scaled {
                    return match st {
                        Some(St::U8) => packed(t, 4, fp4_label(method, has(format!("{base}.weight_global_scale")))),
                        Some(d @ (St::F8_E4M3 | St::F8_E5M2)) => {
                            let blocks = has(format!("{base}.weight_scale_inv"));
                            let label = format!("{} {}", d.name(), if blocks { "block-scaled" } else { "scaled" });
                            Role::Weight { params: t.elems().unwrap_or(0), label }
                        }
                        Some(St::I8) => Role::Weight { params: t.elems().unwrap_or(0), label: "int8 scaled".into() },
                        _ => Role::Plain,
                    };
                }
                return Role::Plain;
            }
            match OVERHEAD.iter().find(|s| n.ends_with(*s)) {
                Some(_) => Role::Overhead { label: overhead_label(n, method) },
                None if n.contains(".quant_state.") => Role::Overhead { label: "bitsandbytes".into() },
                None => Role::Plain,
            }
        })
        .collect();
    // Overhead joins the scheme of the weight it belongs to, so each scheme's bits per weight
    // include its scales.
    let labels: crate::hash::HashMap<&str, String> = cp
        .tensors
        .iter()
        .zip(&out)
        .filter_map(|(t, r)| match r {
            Role::Weight { label, .. } => Some((module(&t.name), label.clone())),
            _ => None,
        })
        .collect();
    for (t, r) in cp.tensors.iter().zip(out.iter_mut()) {
        if let (Role::Overhead { label }, Some(l)) = (&mut *r, labels.get(module(&t.name))) {
            label.clone_from(l);
        }
    }
    Some(out)
}

/// The layer a packed weight or its overhead belongs to: `a.b` for `a.b.qweight`,
/// `a.b.weight.absmax`, `a.b.weight_scale`, and `a.b_proj` for `a.b_proj_blocks`/`_scales`.
fn module(name: &str) -> &str {
    if let Some((m, _)) = name.split_once(".weight.") {
        return m;
    }
    for s in ["_blocks", "_scales"] {
        if let Some(m) = name.strip_suffix(s) {
            return m;
        }
    }
    name.rsplit_once('.').map_or(name, |(m, _)| m)
}

/// Each tensor's logical parameters: its elements, the weights a packed tensor holds, 0 for
/// scales and other overhead.
pub fn logical_params(cp: &Checkpoint) -> Vec<u64> {
    let roles = quant_roles(cp);
    cp.tensors.iter().enumerate().map(|(i, t)| params(t, roles.as_ref().map(|r| &r[i]))).collect()
}

/// The logical parameters of `t` in `role` (`None`: plain).
pub fn params(t: &Tensor, role: Option<&Role>) -> u64 {
    match role {
        None | Some(Role::Plain) => t.elems().unwrap_or(0),
        Some(Role::Weight { params, .. }) => *params,
        Some(Role::Overhead { .. }) => 0,
    }
}

/// A packed tensor of `bits`-bit weights: its bytes hold `bytes × 8 / bits` of them.
fn packed(t: &Tensor, bits: u64, label: String) -> Role {
    Role::Weight { params: t.nbytes.saturating_mul(8) / bits.clamp(1, 64), label }
}

fn fp4_label(method: &str, global_scale: bool) -> String {
    if global_scale || method.starts_with("compressed") {
        "NVFP4 (compressed-tensors)".into()
    } else {
        "NVFP4".into()
    }
}

fn overhead_label(name: &str, method: &str) -> String {
    let by_name = if name.ends_with(".qzeros") || name.ends_with(".scales") || name.ends_with(".g_idx") {
        "GPTQ/AWQ"
    } else if name.ends_with(".absmax") || name.ends_with("quant_map") || name.ends_with(".SCB") {
        "bitsandbytes"
    } else {
        "scales"
    };
    if method.is_empty() {
        format!("{by_name} overhead")
    } else {
        format!("{method} overhead")
    }
}

/// How the values of tensor `i` of `cp` are read when they need scales from other tensors:
/// `None` for a tensor read as its own dtype; the weight (its bytes seen as the element type
/// they pack), its scale inputs and the scheme; or why a recognised scheme is not decoded.
pub fn scaled_values(cp: &Checkpoint, i: usize) -> Option<Result<Scaled, String>> {
    let t = cp.tensors.get(i)?;
    let file_len = file_len_of(cp, t);
    let sibling = |name: String| cp.tensor(&name);
    if cp.format == Format::Gguf {
        // llama.cpp's NVFP4: the per-tensor (or per-expert) second-level scale is `….scale`.
        let scale = t.name.strip_suffix(".weight").and_then(|b| sibling(format!("{b}.scale")))?;
        if t.dtype.name() != "NVFP4" {
            return None;
        }
        return Some(per_tensor(t, scale, false).map(|input| Scaled {
            weight: t.clone(),
            inputs: vec![input],
            scheme: "NVFP4 × its .scale tensor",
        }));
    }
    let role = quant_roles(cp)?.swap_remove(i);
    let Role::Weight { label, .. } = role else { return None };
    let n = t.name.as_str();
    let st = |d: St| Dtype::Safetensors(d);
    let base = n.strip_suffix(".weight_packed").or_else(|| n.strip_suffix(".weight")).unwrap_or(n);
    if let Some(stem) = n.strip_suffix("_blocks") {
        let scales = sibling(format!("{stem}_scales"))?;
        return Some((|| {
            let weight = view(t, st(St::F4), doubled(&t.shape), file_len)?;
            let scales = view(scales, st(St::F8_E8M0), scales.shape.clone(), file_len_of(cp, scales))?;
            Ok(Scaled { weight, inputs: vec![group(scales, 32)], scheme: "MXFP4: E2M1 × 2^(e−127) per 32" })
        })());
    }
    if label.starts_with("NVFP4") {
        return Some((|| {
            let block = sibling(format!("{base}.weight_scale")).ok_or("no weight_scale beside the NVFP4 weight")?;
            let weight = view(t, st(St::F4), doubled(&t.shape), file_len)?;
            let block = view(block, st(St::F8_E4M3), block.shape.clone(), file_len_of(cp, block))?;
            let mut inputs = vec![group(block, 16)];
            let (global, divide, scheme) = match sibling(format!("{base}.weight_global_scale")) {
                Some(g) => (g, true, "NVFP4: E2M1 × E4M3 per 16 ÷ weight_global_scale"),
                None => (
                    sibling(format!("{base}.weight_scale_2")).ok_or("no weight_scale_2 beside the NVFP4 weight")?,
                    false,
                    "NVFP4: E2M1 × E4M3 per 16 × weight_scale_2",
                ),
            };
            inputs.push(per_tensor(&weight, global, divide)?);
            Ok(Scaled { weight, inputs, scheme })
        })());
    }
    if let Dtype::Safetensors(St::F8_E4M3 | St::F8_E5M2) = t.dtype {
        return Some((|| {
            // `weight_scale_inv` (DeepSeek's blocks) is multiplied too, despite its name.
            let scale = sibling(format!("{base}.weight_scale_inv"))
                .or_else(|| sibling(format!("{base}.weight_scale")))
                .ok_or("no weight_scale beside the FP8 weight")?;
            let elems = t.elems().unwrap_or(0);
            let scale_elems = scale.elems().unwrap_or(0);
            let input = match (t.shape.as_slice(), scale.shape.as_slice()) {
                _ if scale_elems == 1 => group(scale.clone(), elems),
                ([rows, cols], [sr, 1] | [sr]) if sr == rows => group(scale.clone(), *cols),
                ([rows, cols], [sr, sc]) => {
                    let block = block_size(cp).unwrap_or((rows.div_ceil(*sr), cols.div_ceil(*sc)));
                    if rows.div_ceil(block.0) != *sr || cols.div_ceil(block.1) != *sc {
                        return Err(format!("scales of shape {:?} do not tile a {rows}×{cols} weight", scale.shape));
                    }
                    ScaleInput {
                        tensor: scale.clone(),
                        map: ScaleMap::Blocks { cols: *cols, rows: block.0, block_cols: block.1 },
                        divide: false,
                    }
                }
                _ => {
                    return Err(format!(
                        "scales of shape {:?} for a weight of shape {:?} are not decoded",
                        scale.shape, t.shape
                    ))
                }
            };
            Ok(Scaled { weight: t.clone(), inputs: vec![input], scheme: "FP8 × its scales" })
        })());
    }
    Some(Err(format!(
        "{label} weights are packed integers whose dequantization is not implemented; the histogram of the packed words would mislead, so none is shown"
    )))
}

/// A weight read with scales from other tensors.
#[derive(Clone, Debug, PartialEq)]
pub struct Scaled {
    pub weight: Tensor,
    pub inputs: Vec<ScaleInput>,
    /// How the values are formed, for people.
    pub scheme: &'static str,
}

fn file_len_of(cp: &Checkpoint, t: &Tensor) -> u64 {
    cp.files.get(t.file).map_or(0, |f| f.size)
}

/// `shape` with its last dimension doubled: bytes seen as two 4-bit values each.
fn doubled(shape: &[u64]) -> Vec<u64> {
    let mut s = shape.to_vec();
    if let Some(last) = s.last_mut() {
        *last = last.saturating_mul(2);
    }
    s
}

/// `t`'s bytes seen as `dtype` of `shape` (checked anew, so a size that does not fit is an error).
fn view(t: &Tensor, dtype: Dtype, shape: Vec<u64>, file_len: u64) -> Result<Tensor, String> {
    let data = t.data.as_ref().map_err(|l| l.to_string())?;
    let r = data.range();
    let extent = Extent::check(&dtype, &shape, r.start, r.len(), file_len).map_err(|l| format!("{}: {l}", t.name))?;
    Ok(Tensor { dtype, shape, data: Ok(extent), ..t.clone() })
}

fn group(scales: Tensor, elems: u64) -> ScaleInput {
    ScaleInput { tensor: scales, map: ScaleMap::Group { elems }, divide: false }
}

/// A scale for the whole weight, or one per leading slice (an expert of a stack).
fn per_tensor(weight: &Tensor, scale: &Tensor, divide: bool) -> Result<ScaleInput, String> {
    let (elems, n) = (weight.elems().unwrap_or(0), scale.elems().unwrap_or(0));
    if n == 0 || elems % n != 0 {
        return Err(format!("{} holds {n} scales for {elems} values", scale.name));
    }
    Ok(ScaleInput { tensor: scale.clone(), map: ScaleMap::Group { elems: elems / n }, divide })
}

/// `weight_block_size` of the config's `quantization_config`, as (rows, columns).
fn block_size(cp: &Checkpoint) -> Option<(u64, u64)> {
    let b = cp.config("config.json")?.get("quantization_config")?.get("weight_block_size")?.as_array()?;
    Some((b.first()?.as_u64()?.max(1), b.get(1)?.as_u64()?.max(1)))
}

/// Which scale element applies to weight element `e` (in storage order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScaleMap {
    /// One scale per `elems` consecutive elements (a group, a row, an expert, the tensor).
    Group { elems: u64 },
    /// Rows of `cols` elements, one scale per block of `rows` × `block_cols`, blocks row-major.
    Blocks { cols: u64, rows: u64, block_cols: u64 },
}

impl ScaleMap {
    /// The scale element that applies to weight element `e`.
    pub fn index(self, e: u64) -> u64 {
        match self {
            ScaleMap::Group { elems } => e / elems.max(1),
            ScaleMap::Blocks { cols, rows, block_cols } => {
                let (r, c) = (e / cols.max(1), e % cols.max(1));
                (r / rows.max(1)).saturating_mul(cols.div_ceil(block_cols.max(1))).saturating_add(c / block_cols.max(1))
            }
        }
    }

    /// The scale elements elements `first..end` use: `index(first)..=index(end − 1)`.
    pub fn span(self, first: u64, end: u64) -> (u64, u64) {
        if end <= first {
            return (0, 0);
        }
        match self {
            ScaleMap::Group { .. } => (self.index(first), self.index(end - 1) + 1),
            // Blocks one row tall, or elements of one row: the index grows with the element.
            ScaleMap::Blocks { cols, rows, .. } if rows <= 1 || first / cols.max(1) == (end - 1) / cols.max(1) => {
                (self.index(first), self.index(end - 1) + 1)
            }
            // A piece wrapping rows of taller blocks comes back to their first columns: take
            // every block of its block rows.
            ScaleMap::Blocks { cols, rows, block_cols } => {
                let per_row = cols.div_ceil(block_cols.max(1));
                let (r0, r1) = (first / cols.max(1) / rows.max(1), (end - 1) / cols.max(1) / rows.max(1));
                (r0.saturating_mul(per_row), (r1 + 1).saturating_mul(per_row))
            }
        }
    }

    /// Scale elements a weight of `elems` elements needs.
    pub fn needed(self, elems: u64) -> u64 {
        self.span(0, elems).1
    }
}

/// A tensor of scales and how they apply; `divide` for scales stored as reciprocals
/// (compressed-tensors' global scale).
#[derive(Clone, Debug, PartialEq)]
pub struct ScaleInput {
    pub tensor: Tensor,
    pub map: ScaleMap,
    pub divide: bool,
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn roles(cp: &Checkpoint) -> Vec<Role> {
        quant_roles(cp).unwrap_or_else(|| vec![Role::Plain; cp.tensors.len()])
    }
    use crate::config::ConfigFile;
    use crate::model::Lost;
    use serde_json::json;

    pub(crate) fn tensor(name: &str, dtype: St, shape: &[u64]) -> Tensor {
        let elems: u64 = shape.iter().product();
        Tensor {
            name: name.into(),
            dtype: Dtype::Safetensors(dtype),
            shape: shape.to_vec(),
            file: 0,
            offset: None,
            nbytes: dtype.nbytes(elems).unwrap(),
            data: Err(Lost::NoSize),
            strides: None,
        }
    }

    pub(crate) fn checkpoint(tensors: Vec<Tensor>, config: Option<Json>) -> Checkpoint {
        let mut cp = Checkpoint::empty(Format::Safetensors);
        cp.tensors = tensors.into();
        if let Some(json) = config {
            cp.configs.push(ConfigFile { path: "config.json".into(), json });
        }
        cp
    }

    fn params(r: &Role) -> Option<u64> {
        match r {
            Role::Weight { params, .. } => Some(*params),
            _ => None,
        }
    }

    /// A GPTQ 4-bit layer (in 4096, out 1024, group 128: qweight [512, 1024], qzeros [32, 128],
    /// scales [32, 1024], g_idx [4096]) and an F16 embedding.
    pub(crate) fn gptq_checkpoint() -> Checkpoint {
        let p = "model.layers.0.self_attn.o_proj";
        checkpoint(
            vec![
                tensor(&format!("{p}.qweight"), St::I32, &[512, 1024]),
                tensor(&format!("{p}.qzeros"), St::I32, &[32, 128]),
                tensor(&format!("{p}.scales"), St::F16, &[32, 1024]),
                tensor(&format!("{p}.g_idx"), St::I32, &[4096]),
                tensor("model.embed_tokens.weight", St::F16, &[10, 4096]),
            ],
            Some(json!({"quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128}})),
        )
    }

    #[test]
    fn gptq_packs_eight_weights_per_int32_and_its_scales_are_overhead() {
        let cp = gptq_checkpoint();
        let r = roles(&cp);
        assert_eq!(params(&r[0]), Some(4096 * 1024));
        assert_eq!(r[0], Role::Weight { params: 4096 * 1024, label: "GPTQ 4-bit (group 128)".into() });
        let gptq = Role::Overhead { label: "GPTQ 4-bit (group 128)".into() };
        assert_eq!(r[1..4], [gptq.clone(), gptq.clone(), gptq], "overhead joins its weight's scheme");
        assert_eq!(r[4], Role::Plain);
        // 3-bit: 32/3 weights per int32 word on average (rows of 3 words hold 32).
        let cp = checkpoint(
            vec![tensor("l.qweight", St::I32, &[384, 8])],
            Some(json!({"quantization_config": {"quant_method": "gptq", "bits": 3, "group_size": 128}})),
        );
        assert_eq!(params(&roles(&cp)[0]), Some(4096 * 8));
    }

    #[test]
    fn schemes_are_told_by_their_tensors_without_a_config() {
        let cp = checkpoint(
            vec![
                // AWQ: no g_idx.
                tensor("a.qweight", St::I32, &[4096, 128]),
                tensor("a.qzeros", St::I32, &[32, 128]),
                tensor("a.scales", St::F16, &[32, 1024]),
                // bitsandbytes NF4: bytes hold two weights each.
                tensor("b.weight", St::U8, &[2048, 1]),
                tensor("b.weight.absmax", St::F32, &[64]),
                tensor("b.weight.quant_map", St::F32, &[16]),
                tensor("b.weight.quant_state.bitsandbytes__nf4", St::U8, &[120]),
                // FP8 with 128×128 block scales.
                tensor("c.weight", St::F8_E4M3, &[256, 512]),
                tensor("c.weight_scale_inv", St::F32, &[2, 4]),
                // ModelOpt NVFP4.
                tensor("d.weight", St::U8, &[64, 32]),
                tensor("d.weight_scale", St::F8_E4M3, &[64, 4]),
                tensor("d.weight_scale_2", St::F32, &[]),
                tensor("d.input_scale", St::F32, &[]),
                // gpt-oss MXFP4 experts.
                tensor("e.gate_up_proj_blocks", St::U8, &[2, 8, 4, 16]),
                tensor("e.gate_up_proj_scales", St::U8, &[2, 8, 4]),
                tensor("e.gate_up_proj_bias", St::BF16, &[2, 8]),
                // bitsandbytes int8.
                tensor("f.weight", St::I8, &[16, 16]),
                tensor("f.SCB", St::F32, &[16]),
            ],
            None,
        );
        let r = roles(&cp);
        let label = |i: usize| match &r[i] {
            Role::Weight { label, .. } | Role::Overhead { label } => label.clone(),
            Role::Plain => "plain".into(),
        };
        assert_eq!((params(&r[0]), label(0)), (Some(4096 * 128 * 8), "AWQ 4-bit".into()));
        assert_eq!((params(&r[3]), label(3)), (Some(4096), "bitsandbytes NF4".into()));
        assert!(r[4..7].iter().all(|r| matches!(r, Role::Overhead { .. })), "{r:?}");
        assert_eq!((params(&r[7]), label(7)), (Some(256 * 512), "F8_E4M3 block-scaled".into()));
        assert!(matches!(r[8], Role::Overhead { .. }));
        assert_eq!((params(&r[9]), label(9)), (Some(64 * 64), "NVFP4".into()));
        assert!(r[10..13].iter().all(|r| matches!(r, Role::Overhead { .. })), "{r:?}");
        assert_eq!((params(&r[13]), label(13)), (Some(2 * 8 * 4 * 32), "MXFP4".into()));
        assert!(matches!(r[14], Role::Overhead { .. }));
        assert_eq!(r[15], Role::Plain, "biases are parameters");
        assert_eq!((params(&r[16]), label(16)), (Some(256), "bitsandbytes int8".into()));
        assert!(matches!(r[17], Role::Overhead { .. }));
    }

    #[test]
    fn compressed_tensors_pack_and_nvfp4() {
        let config = json!({"quantization_config": {"quant_method": "compressed-tensors", "format": "pack-quantized",
            "config_groups": {"group_0": {"weights": {"num_bits": 4, "group_size": 128, "type": "int"}}}}});
        let cp = checkpoint(
            vec![
                tensor("l.weight_packed", St::I32, &[1024, 512]),
                tensor("l.weight_scale", St::BF16, &[1024, 32]),
                tensor("l.weight_shape", St::I32, &[2]),
                tensor("n.weight_packed", St::U8, &[64, 32]),
                tensor("n.weight_scale", St::F8_E4M3, &[64, 4]),
                tensor("n.weight_global_scale", St::F32, &[1]),
            ],
            Some(config),
        );
        let r = roles(&cp);
        assert_eq!(r[0], Role::Weight { params: 1024 * 4096, label: "compressed-tensors int4 (group 128)".into() });
        assert_eq!(r[3], Role::Weight { params: 64 * 64, label: "NVFP4 (compressed-tensors)".into() });
        assert!([1, 2, 4, 5].iter().all(|&i| matches!(r[i], Role::Overhead { .. })), "{r:?}");
    }

    #[test]
    fn plain_checkpoints_are_untouched() {
        let cp = checkpoint(
            vec![tensor("x.weight", St::BF16, &[4, 4]), tensor("x.scales", St::F32, &[4])],
            Some(json!({"model_type": "llama"})),
        );
        assert_eq!(roles(&cp), [Role::Plain, Role::Plain], "a tensor named like a scale is not overhead by itself");
    }
}
