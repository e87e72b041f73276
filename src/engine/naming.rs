//! What a GGUF file says it is (`general.file_type`, its file name) against what it holds.

use crate::hash::HashMap;

use super::findings::{Finding, Rule};
use super::gguf::{GgmlType, Value};
use super::model::{Checkpoint, Dtype, MetaValue, Tensor};
use super::text::base_name;

/// Stable codes of the naming rules.
pub mod rules {
    use crate::findings::Rule;

    pub const NAME_TYPE_MISMATCH: Rule = Rule::warning("gguf.name_type_mismatch");
    pub const FILE_TYPE_MISMATCH: Rule = Rule::warning("gguf.file_type_mismatch");
    pub const UNKNOWN_FILE_TYPE: Rule = Rule::info("gguf.unknown_file_type");
    pub const NAME_SIZE_MISMATCH: Rule = Rule::warning("gguf.name_size_mismatch");
    pub const SIZE_LABEL_MISMATCH: Rule = Rule::warning("gguf.size_label_mismatch");
    pub const QUANT_FALLBACK: Rule = Rule::info("gguf.quant_fallback");
}

/// llama.cpp's `llama_ftype` names (`general.file_type`), by id.
const FILE_TYPES: &[(u64, &str)] = &[
    (0, "ALL_F32"),
    (1, "MOSTLY_F16"),
    (2, "MOSTLY_Q4_0"),
    (3, "MOSTLY_Q4_1"),
    (4, "MOSTLY_Q4_1_SOME_F16"),
    (7, "MOSTLY_Q8_0"),
    (8, "MOSTLY_Q5_0"),
    (9, "MOSTLY_Q5_1"),
    (10, "MOSTLY_Q2_K"),
    (11, "MOSTLY_Q3_K_S"),
    (12, "MOSTLY_Q3_K_M"),
    (13, "MOSTLY_Q3_K_L"),
    (14, "MOSTLY_Q4_K_S"),
    (15, "MOSTLY_Q4_K_M"),
    (16, "MOSTLY_Q5_K_S"),
    (17, "MOSTLY_Q5_K_M"),
    (18, "MOSTLY_Q6_K"),
    (19, "MOSTLY_IQ2_XXS"),
    (20, "MOSTLY_IQ2_XS"),
    (21, "MOSTLY_Q2_K_S"),
    (22, "MOSTLY_IQ3_XS"),
    (23, "MOSTLY_IQ3_XXS"),
    (24, "MOSTLY_IQ1_S"),
    (25, "MOSTLY_IQ4_NL"),
    (26, "MOSTLY_IQ3_S"),
    (27, "MOSTLY_IQ3_M"),
    (28, "MOSTLY_IQ2_S"),
    (29, "MOSTLY_IQ2_M"),
    (30, "MOSTLY_IQ4_XS"),
    (31, "MOSTLY_IQ1_M"),
    (32, "MOSTLY_BF16"),
    (36, "MOSTLY_TQ1_0"),
    (37, "MOSTLY_TQ2_0"),
    (38, "MOSTLY_MXFP4_MOE"),
    (39, "MOSTLY_NVFP4"),
    (40, "MOSTLY_Q1_0"),
    (1024, "GUESSED"),
];

/// The name of `general.file_type` id `id`.
pub fn file_type_name(id: u64) -> Option<&'static str> {
    FILE_TYPES.iter().find(|(i, _)| *i == id).map(|(_, n)| *n)
}

/// The GGML type most tensors of a mix labelled `label` (`Q4_K_M`, `MOSTLY_IQ3_M`) are in.
pub fn label_type(label: &str) -> Option<GgmlType> {
    let upper = label.to_ascii_uppercase();
    let l = upper.strip_prefix("MOSTLY_").or_else(|| upper.strip_prefix("ALL_")).unwrap_or(&upper);
    if let Some(t) = GgmlType::from_name(l).filter(|t| t.block().is_some()) {
        return Some(t);
    }
    let base = match l {
        "Q3_K_S" | "Q3_K_M" | "Q3_K_L" => "Q3_K",
        "Q4_K_S" | "Q4_K_M" => "Q4_K",
        "Q5_K_S" | "Q5_K_M" => "Q5_K",
        "Q2_K_S" => "Q2_K",
        "IQ2_M" => "IQ2_S",
        "IQ3_XS" | "IQ3_M" => "IQ3_S",
        "MXFP4_MOE" => "MXFP4",
        "Q4_1_SOME_F16" => "Q4_1",
        _ => return None,
    };
    GgmlType::from_name(base)
}

/// What a GGUF file name says, by the convention
/// `<BaseName>-<SizeLabel>-<FineTune>-<Version>-<Encoding>-<Type>-<Shard>.gguf`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NameParts {
    pub base_name: String,
    pub size_label: Option<String>,
    pub encoding: Option<String>,
    pub shard: Option<(u32, u32)>,
}

/// Read a file name by the convention, tolerating the common `name.Q4_K_M.gguf` spelling.
pub fn parse_name(file_name: &str) -> NameParts {
    let name = base_name(file_name);
    let stem = match name.len().checked_sub(5) {
        Some(i) if name.is_char_boundary(i) && name[i..].eq_ignore_ascii_case(".gguf") => &name[..i],
        _ => name,
    };
    let mut parts = NameParts::default();
    let mut stem = stem;
    if let Some((k, n)) = super::shards::shard_number(&format!("{stem}.gguf")) {
        parts.shard = Some((k, n));
        stem = stem.rsplit_once("-of-").and_then(|(r, _)| r.rsplit_once('-')).map_or(stem, |(r, _)| r);
    }
    let fields = fields(stem);
    let enc_at = fields.iter().rposition(|f| label_type(f).is_some());
    parts.encoding = enc_at.map(|i| fields[i].to_owned());
    let size_at = fields.iter().position(|f| parse_size_label(f).is_some());
    parts.size_label = size_at.map(|i| fields[i].to_owned());
    let end = [enc_at, size_at].into_iter().flatten().min().unwrap_or(fields.len());
    parts.base_name = fields[..end].join("-");
    parts
}

/// The fields of a name: split at `-`, and at `.` except between two digits, where it is a
/// decimal point (`qwen2.5-coder-0.5b-instruct.Q4_K_M`: `qwen2.5`, `0.5b`, …, `Q4_K_M`).
fn fields(stem: &str) -> Vec<&str> {
    let b = stem.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    for (i, &c) in b.iter().enumerate() {
        let decimal =
            c == b'.' && i > 0 && b[i - 1].is_ascii_digit() && b.get(i + 1).is_some_and(|n| n.is_ascii_digit());
        if c == b'-' || c == b'.' && !decimal {
            out.push(&stem[from..i]);
            from = i + 1;
        }
    }
    out.push(&stem[from..]);
    out
}

/// Parameters a size label like `7B`, `1.5B`, `135M` or `8x7B` stands for.
pub fn parse_size_label(label: &str) -> Option<f64> {
    let (experts, rest) = match label.split_once(['x', 'X']) {
        Some((e, r)) if !e.is_empty() && e.bytes().all(|b| b.is_ascii_digit()) => (e.parse::<f64>().ok()?, r),
        _ => (1.0, label),
    };
    let unit = rest.chars().last()?;
    let scale = match unit.to_ascii_uppercase() {
        'K' => 1e3,
        'M' => 1e6,
        'B' => 1e9,
        'T' => 1e12,
        _ => return None,
    };
    let num = &rest[..rest.len() - 1];
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    Some(experts * num.parse::<f64>().ok()? * scale)
}

/// The types llama.cpp's quantizer (`tensor_type_fallback` in llama-quant.cpp) stores a tensor
/// in when its rows are not whole 256-element blocks of the type its mix wants: Q4_K → Q5_0,
/// Q5_K → Q5_1, Q6_K → Q8_0, the IQ types → IQ4_NL, Q2_K/Q3_K/TQ → Q4_0 (IQ4_NL before 2025),
/// and F16 where not even a 32-element block fits.
const FALLBACK_TYPES: [&str; 6] = ["Q4_0", "Q5_0", "Q5_1", "Q8_0", "IQ4_NL", "F16"];

/// Whether tensor `t`, stored as `g`, is one llama.cpp could not store in `want`: its rows are
/// not whole blocks of `want`, and `g` is where the quantizer falls back to for such rows.
fn fell_back(t: &Tensor, g: GgmlType, want: GgmlType) -> bool {
    let (Some(&row), Some((want_block, _)), Some((block, _))) = (t.shape.first(), want.block(), g.block()) else {
        return false;
    };
    let fallback = FALLBACK_TYPES.iter().any(|n| GgmlType::from_name(n) == Some(g));
    let f16_needed = g != GgmlType::F16 || !row.is_multiple_of(32);
    want_block > 1 && !row.is_multiple_of(want_block) && row.is_multiple_of(block) && fallback && f16_needed
}

/// Parameters per GGML type of the tensors that could be stored in `want` (those that fell
/// back from it left out, see [`fell_back`]), and the type holding most of them (quantized
/// types first).
fn dominant(cp: &Checkpoint, want: Option<GgmlType>) -> Option<(GgmlType, HashMap<GgmlType, u128>)> {
    let mut by: HashMap<GgmlType, u128> = HashMap::default();
    for t in &cp.tensors {
        if let Dtype::Ggml(g) = t.dtype {
            if !want.is_some_and(|w| fell_back(t, g, w)) {
                *by.entry(g).or_default() += u128::from(t.elems().unwrap_or(0));
            }
        }
    }
    let quantized = by.iter().filter(|(t, _)| !t.is_float() && !t.is_integer());
    let top = quantized
        .max_by_key(|(t, n)| (**n, std::cmp::Reverse(**t)))
        .or_else(|| by.iter().max_by_key(|(t, n)| (**n, std::cmp::Reverse(**t))))
        .map(|(t, _)| *t)?;
    Some((top, by))
}

/// Whether a mix labelled with `want` as its main type fits these per-type parameter counts:
/// the labelled type must hold at least a quarter of the weights of its kind.
fn fits(want: GgmlType, top: GgmlType, by: &HashMap<GgmlType, u128>) -> bool {
    let same_kind = |t: &GgmlType| t.is_float() == want.is_float() && !t.is_integer();
    let pool: u128 = by.iter().filter(|(t, _)| same_kind(t)).map(|(_, n)| n).sum();
    let have = by.get(&want).copied().unwrap_or(0);
    want == top || (pool > 0 && have * 4 >= pool)
}

/// A break of `rule` when the mix of tensors that could take `want` does not fit the label
/// `said` speaks of: what most weights are, and the share of `want`.
fn label_mismatch(cp: &Checkpoint, want: GgmlType, rule: Rule, said: &str) -> Option<Finding> {
    let (top, by) = dominant(cp, Some(want))?;
    let quantized_left = by.keys().any(|t| !t.is_float() && !t.is_integer());
    // Every quantized tensor fell back: nothing is left that contradicts the label.
    if fits(want, top, &by) || !want.is_float() && !quantized_left {
        return None;
    }
    Some(Finding::new(
        rule,
        format!("{said} but most weights are {} (only {:.0}% are {})", top.name(), share(want, &by), want.name()),
    ))
}

/// An info finding naming the tensors llama.cpp's quantizer stored in a fallback type because
/// their rows do not take the blocks of `want`, the main type of the mix labelled `label`.
fn fallbacks(cp: &Checkpoint, label: &str, want: GgmlType) -> Option<Finding> {
    let mut fell = Vec::new();
    let (mut params, mut total) = (0u128, 0u128);
    for t in &cp.tensors {
        if let Dtype::Ggml(g) = t.dtype {
            let n = u128::from(t.elems().unwrap_or(0));
            total += n;
            if fell_back(t, g, want) {
                params += n;
                fell.push((t, g));
            }
        }
    }
    let (first, _) = fell.first()?;
    let mut types: Vec<String> = fell.iter().map(|(_, g)| g.name()).collect();
    types.sort();
    types.dedup();
    let mut rows: Vec<u64> = fell.iter().filter_map(|(t, _)| t.shape.first().copied()).collect();
    rows.sort_unstable();
    rows.dedup();
    let rows: Vec<String> = rows.iter().take(4).map(u64::to_string).collect();
    let block = want.block().map_or(0, |b| b.0);
    Some(Finding::new(
        rules::QUANT_FALLBACK,
        format!(
            "{} tensors ({:.0}% of the weights, first {}) are {} rather than {label}'s {block}-element block types: \
             their rows ({} wide) are not a multiple of {block}, so llama.cpp's quantizer fell back (Q4_K → Q5_0, \
             Q5_K → Q5_1, Q6_K → Q8_0, IQ types → IQ4_NL, Q2_K/Q3_K → Q4_0 or IQ4_NL)",
            fell.len(),
            100.0 * params as f64 / total.max(1) as f64,
            first.name,
            types.join(", "),
            rows.join(", "),
        ),
    ))
}

/// Findings comparing `general.file_type` and the first file's name with the tensors.
pub fn check(cp: &Checkpoint) -> Vec<Finding> {
    let mut out = Vec::new();
    let Some((_, by)) = dominant(cp, None) else {
        return out;
    };
    let mut fallback_of = None;
    if let Some(MetaValue::Gguf(v)) = cp.meta("general.file_type") {
        match v.as_u64().map(|id| (id, file_type_name(id))) {
            Some((_, Some(name))) => {
                if let Some(want) = label_type(name) {
                    let said = format!("general.file_type says {name}");
                    out.extend(label_mismatch(cp, want, rules::FILE_TYPE_MISMATCH, &said));
                    fallback_of = Some((name.trim_start_matches("MOSTLY_").to_owned(), want));
                }
            }
            _ => out.push(Finding::new(
                rules::UNKNOWN_FILE_TYPE,
                format!("general.file_type {} {v} is not a known llama.cpp file type", v.value_type().name()),
            )),
        }
    }
    let complete = !cp.findings.iter().any(|f| f.breaks(super::shards::rules::MISSING_SHARD));
    let params: u128 = by.values().sum();
    let off = |label: &str| {
        parse_size_label(label).filter(|s| *s > 0.0).is_some_and(|said| !(0.5..=2.0).contains(&(params as f64 / said)))
    };
    if let (Some(MetaValue::Gguf(Value::String(label))), true) = (cp.meta("general.size_label"), complete) {
        if off(label) {
            out.push(Finding::new(
                rules::SIZE_LABEL_MISMATCH,
                format!("general.size_label says {label} parameters but the tensors hold {params}"),
            ));
        }
    }
    if let Some(first) = cp.files.first() {
        let parts = parse_name(&first.path);
        if let Some((enc, want)) = parts.encoding.as_deref().and_then(|e| Some((e, label_type(e)?))) {
            let said = format!("file name says {enc}");
            out.extend(label_mismatch(cp, want, rules::NAME_TYPE_MISMATCH, &said));
            fallback_of = fallback_of.or(Some((enc.to_owned(), want)));
        }
        if let (Some(label), true) = (parts.size_label.as_deref(), complete) {
            if off(label) {
                out.push(Finding::new(
                    rules::NAME_SIZE_MISMATCH,
                    format!("file name says {label} parameters but the tensors hold {params}"),
                ));
            }
        }
    }
    if let Some((label, want)) = fallback_of {
        out.extend(fallbacks(cp, &label, want));
    }
    out
}

fn share(t: GgmlType, by: &HashMap<GgmlType, u128>) -> f64 {
    let total: u128 = by.values().sum();
    if total == 0 {
        return 0.0;
    }
    100.0 * by.get(&t).copied().unwrap_or(0) as f64 / total as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_read_by_the_convention() {
        let p = parse_name("models/Grok-100B-v1.0-Q4_0-00003-of-00009.gguf");
        assert_eq!(p.base_name, "Grok");
        assert_eq!(p.size_label.as_deref(), Some("100B"));
        assert_eq!(p.encoding.as_deref(), Some("Q4_0"));
        assert_eq!(p.shard, Some((3, 9)));
        let p = parse_name("llama-2-7b.Q4_K_M.gguf");
        assert_eq!((p.encoding.as_deref(), p.size_label.as_deref()), (Some("Q4_K_M"), Some("7b")));
        assert_eq!(parse_name("Mixtral-8x7B-Instruct-v0.1-IQ3_M.gguf").encoding.as_deref(), Some("IQ3_M"));
        assert_eq!(parse_size_label("8x7B"), Some(56e9));
        assert_eq!(parse_size_label("1.5B"), Some(1.5e9));
        assert_eq!(parse_size_label("v1"), None);
    }

    #[test]
    fn decimal_points_stay_inside_their_field() {
        let p = parse_name("qwen2.5-coder-0.5b-instruct-q4_k_m.gguf");
        assert_eq!((p.size_label.as_deref(), p.encoding.as_deref()), (Some("0.5b"), Some("q4_k_m")));
        assert_eq!(p.base_name, "qwen2.5-coder");
        assert_eq!(parse_size_label("0.5b"), Some(0.5e9));
        for (name, label, params) in [
            ("Qwen2.5-1.5B-Instruct-Q8_0.gguf", "1.5B", 1.5e9),
            ("phi-2.7B.Q4_0.gguf", "2.7B", 2.7e9),
            ("Mixtral-8x7B-v0.1.Q2_K.gguf", "8x7B", 56e9),
            ("gemma-3-270m-it-Q4_K_M.gguf", "270m", 270e6),
            ("llama-2-7b.Q4_K_M.gguf", "7b", 7e9),
        ] {
            let p = parse_name(name);
            assert_eq!(p.size_label.as_deref(), Some(label), "{name}");
            assert_eq!(parse_size_label(label), Some(params), "{name}");
        }
        assert_eq!(parse_name("Mixtral-8x7B-v0.1.Q2_K.gguf").encoding.as_deref(), Some("Q2_K"));
    }

    #[test]
    fn labels_map_to_their_main_type() {
        assert_eq!(label_type("Q4_K_M"), GgmlType::from_name("Q4_K"));
        assert_eq!(label_type("MOSTLY_IQ2_M"), GgmlType::from_name("IQ2_S"));
        assert_eq!(label_type("ALL_F32"), Some(GgmlType::F32));
        assert_eq!(label_type("Q4_2"), None, "removed types are no label");
        assert_eq!(file_type_name(15), Some("MOSTLY_Q4_K_M"));
    }
}
