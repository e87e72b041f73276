//! GGML type ids that upstream ggml never assigned, or assigned to something else, as forks of
//! llama.cpp use them in published files (PrismML's Bonsai files, ik_llama.cpp, bitnet.cpp), and ids upstream
//! used and removed (Q4_0_4_4 and kin, written by llama.cpp in late 2024).
//! One id can mean different layouts in different forks (142 is PrismML's PQ2_0 and ik_llama's
//! old IQ2_TN), so a tensor's type is named only when its byte span fits exactly one of them.
//! None of them are decoded: upstream llama.cpp cannot load them, and neither do we guess.

use crate::hash::HashSet;

use super::header::Header;
use super::rules as gguf_rules;
use super::value::Value;
use crate::findings::Finding;

/// Stable codes of the rules fork types and spans can break.
pub mod rules {
    use crate::findings::Rule;

    /// A type id known from a fork, not from upstream ggml.
    pub const FORK_TYPE: Rule = Rule::warning("gguf.fork_type");
    /// A tensor's byte span (to the next tensor's data) disagrees with its type's block size.
    pub const SPAN_MISMATCH: Rule = Rule::error("gguf.span_mismatch");
    /// The same rule broken in a way the reader works around.
    pub const SPAN_MISMATCH_MINOR: Rule = Rule::warning("gguf.span_mismatch");
    /// The file declares weights stored in a rotated basis (`prism.hadamard.*`).
    pub const ROTATED_WEIGHTS: Rule = Rule::info("gguf.rotated_weights");
}

const PRISM: &str = "PrismML's llama.cpp fork";
const IK: &str = "ik_llama.cpp";
const UPSTREAM_2024: &str = "llama.cpp of July to December 2024 (removed since)";
const BITNET: &str = "bitnet.cpp";
const BITNET_AND_IK: &str = "bitnet.cpp and ik_llama.cpp";

/// How a fork type's size follows from the shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Size {
    /// Each row holds `row_meta` bytes (ik_llama's per-row scales) and then blocks of `elems`
    /// elements in `bytes` bytes.
    Blocks { elems: u64, bytes: u64, row_meta: u64 },
    /// 2-bit ternary packing with one trailing 32-byte scale record: `n / 4 + 32` bytes.
    QuarterPlus32,
}

/// A type id as a fork uses it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ForkType {
    pub id: u32,
    pub name: &'static str,
    pub fork: &'static str,
    pub size: Size,
    /// Dropped by its fork: when a current type takes the same bytes, that one is meant.
    pub deprecated: bool,
}

const fn blocks(id: u32, name: &'static str, fork: &'static str, elems: u64, bytes: u64, row_meta: u64) -> ForkType {
    ForkType { id, name, fork, size: Size::Blocks { elems, bytes, row_meta }, deprecated: false }
}

const fn retired(t: ForkType) -> ForkType {
    ForkType { deprecated: true, ..t }
}

/// The fork types, by id. ik_llama.cpp's sizes are its `type_traits` (blck_size, type_size,
/// row_meta_size); PrismML's and bitnet.cpp's their block structs.
const FORK_TYPES: &[ForkType] = &[
    blocks(31, "Q4_0_4_4", UPSTREAM_2024, 32, 18, 0),
    blocks(32, "Q4_0_4_8", UPSTREAM_2024, 32, 18, 0),
    blocks(33, "Q4_0_8_8", UPSTREAM_2024, 32, 18, 0),
    ForkType { id: 36, name: "I2_S", fork: BITNET_AND_IK, size: Size::QuarterPlus32, deprecated: false },
    ForkType { id: 38, name: "TL1", fork: BITNET, size: Size::QuarterPlus32, deprecated: false },
    blocks(133, "Q6_0", IK, 32, 26, 0),
    blocks(134, "IQ1_BN", IK, 64, 13, 2),
    blocks(135, "IQ2_BN", IK, 64, 16, 4),
    blocks(137, "IQ2_K", IK, 256, 76, 0),
    blocks(138, "IQ3_K", IK, 256, 110, 0),
    blocks(139, "IQ4_K", IK, 256, 144, 0),
    blocks(140, "IQ5_K", IK, 256, 176, 0),
    blocks(141, "IQ6_K", IK, 256, 212, 0),
    blocks(142, "PQ2_0", PRISM, 128, 34, 0),
    retired(blocks(142, "IQ2_TN", IK, 256, 64, 4)),
    blocks(143, "PTQ1_0", PRISM, 128, 28, 0),
    retired(blocks(143, "IQ1_TN", IK, 256, 52, 2)),
    blocks(144, "IQ4_KS", IK, 256, 136, 4),
    blocks(145, "IQ2_KS", IK, 256, 70, 2),
    blocks(146, "IQ4_KSS", IK, 256, 128, 4),
    blocks(152, "IQ5_KS", IK, 256, 168, 4),
    blocks(153, "IQ2_KT", IK, 256, 68, 4),
    blocks(154, "IQ3_KT", IK, 256, 100, 4),
    blocks(155, "IQ4_KT", IK, 256, 128, 4),
    blocks(156, "IQ3_KS", IK, 256, 102, 2),
    blocks(157, "IQ2_KL", IK, 256, 86, 2),
    blocks(158, "IQ1_KT", IK, 256, 56, 4),
    blocks(202, "Q4_0_R8", IK, 32, 18, 0),
    blocks(206, "Q5_0_R4", IK, 32, 22, 0),
    blocks(208, "Q8_0_R8", IK, 32, 34, 0),
    blocks(210, "Q2_K_R4", IK, 256, 84, 0),
    blocks(211, "Q3_K_R4", IK, 256, 110, 0),
    blocks(212, "Q4_K_R4", IK, 256, 144, 0),
    blocks(213, "Q5_K_R4", IK, 256, 176, 0),
    blocks(214, "Q6_K_R4", IK, 256, 210, 0),
    blocks(216, "IQ2_XXS_R4", IK, 256, 66, 0),
    blocks(217, "IQ2_XS_R4", IK, 256, 74, 0),
    blocks(218, "IQ3_XXS_R4", IK, 256, 98, 0),
    blocks(219, "IQ1_S_R4", IK, 32, 6, 2),
    blocks(220, "IQ4_NL_R4", IK, 32, 18, 0),
    blocks(221, "IQ3_S_R4", IK, 256, 110, 0),
    blocks(222, "IQ2_S_R4", IK, 256, 82, 0),
    blocks(223, "IQ4_XS_R8", IK, 256, 136, 0),
    blocks(229, "IQ1_M_R4", IK, 32, 7, 2),
    blocks(230, "BF16_R16", IK, 1, 2, 0),
    blocks(233, "Q6_0_R4", IK, 32, 26, 0),
    blocks(335, "IQ2_BN_R4", IK, 64, 16, 4),
    blocks(337, "IQ2_K_R4", IK, 256, 76, 0),
    blocks(338, "IQ3_K_R4", IK, 256, 110, 0),
    blocks(339, "IQ4_K_R4", IK, 256, 144, 0),
    blocks(340, "IQ5_K_R4", IK, 256, 176, 0),
    blocks(344, "IQ4_KS_R4", IK, 256, 136, 4),
    blocks(352, "IQ5_KS_R4", IK, 256, 168, 4),
    blocks(353, "MXFP4_R8", IK, 32, 17, 0),
];

/// Other meanings of ids upstream ggml assigned itself, for messages about spans that do not fit.
const UPSTREAM_CLASHES: &[(u32, &str)] = &[(39, "TL2 in bitnet.cpp"), (41, "PQ3_0 in some PolarQuant forks")];

/// The fork types that use id `id`.
pub fn candidates(id: u32) -> impl Iterator<Item = &'static ForkType> {
    FORK_TYPES.iter().filter(move |t| t.id == id)
}

impl ForkType {
    /// Bytes a tensor of shape `ne` (ggml order) takes, or `None` when rows are not whole
    /// blocks or the size overflows.
    pub fn nbytes(&self, ne: &[u64]) -> Option<u64> {
        let elems = ne.iter().try_fold(1u64, |a, &d| a.checked_mul(d))?;
        match self.size {
            Size::Blocks { elems: be, bytes, row_meta } => {
                let row = ne.first().copied().unwrap_or(1);
                if !row.is_multiple_of(be) {
                    return None;
                }
                let rows = elems.checked_div(row).unwrap_or(0);
                rows.checked_mul((row / be).checked_mul(bytes)?.checked_add(row_meta)?)
            }
            Size::QuarterPlus32 => (elems / 4).checked_add(32),
        }
    }

    /// `PQ2_0 of PrismML's llama.cpp fork (128 elements in 34 bytes)`.
    pub fn describe(&self) -> String {
        match self.size {
            Size::Blocks { elems, bytes, row_meta: 0 } => {
                format!("{} of {} ({elems} elements in {bytes} bytes)", self.name, self.fork)
            }
            Size::Blocks { elems, bytes, row_meta } => {
                format!("{} of {} ({elems} elements in {bytes} bytes, {row_meta} more per row)", self.name, self.fork)
            }
            Size::QuarterPlus32 => format!("{} of {} (2 bits per weight and a 32-byte scale)", self.name, self.fork),
        }
    }
}

/// For each tensor, the bytes from its data to the next tensor's (in offset order), or to the
/// end of the file for the last one; `None` when its offset lies past the end.
pub fn spans(h: &Header) -> Vec<Option<u64>> {
    let Some(data_start) = h.data_start else { return vec![None; h.tensors.len()] };
    let room = h.file_len.saturating_sub(data_start);
    let mut order: Vec<usize> = (0..h.tensors.len()).collect();
    if !h.tensors.windows(2).all(|w| w[0].rel_offset <= w[1].rel_offset) {
        crate::sort::sort_by_key(&mut order, |&i| h.tensors[i].rel_offset);
    }
    let mut out = vec![None; h.tensors.len()];
    for (k, &i) in order.iter().enumerate() {
        let end = order.get(k + 1).map_or(room, |&j| h.tensors[j].rel_offset.min(room));
        out[i] = end.checked_sub(h.tensors[i].rel_offset);
    }
    out
}

/// Name fork types by their spans, and refuse types whose span disagrees with their size;
/// adds findings to `h` and each tensor's `span`. Runs once the data section is located.
pub fn check_spans(h: &mut Header) {
    let spans = spans(h);
    let align = h.alignment.max(1);
    let mut named = HashSet::default();
    let mut findings = Vec::new();
    let fits = |size: u64, span: u64, last: bool| {
        let padded = size.checked_next_multiple_of(align);
        if last {
            size <= span
        } else {
            padded == Some(span) || size == span
        }
    };
    let (h_data_start, file_len) = (h.data_start.unwrap_or(u64::MAX), h.file_len);
    let last = spans.iter().enumerate().max_by_key(|(i, _)| h.tensors[*i].rel_offset).map(|(i, _)| i);
    for (i, t) in h.tensors.iter_mut().enumerate() {
        let Some(span) = spans[i] else { continue };
        let is_last = Some(i) == last;
        // A span that ends at the end of the file and is short is a truncated file, which the
        // data bounds check reports: only a span cut by the next tensor's data says the type is wrong.
        let to_file_end = h_data_start.checked_add(t.rel_offset).and_then(|s| s.checked_add(span)) == Some(file_len);
        if !to_file_end {
            t.span = Some(span);
        }
        let forks: Vec<&ForkType> = candidates(t.ggml_type.0).collect();
        if t.nbytes.is_none() && !forks.is_empty() {
            let fitting: Vec<(&ForkType, u64)> = forks
                .iter()
                .filter_map(|f| f.nbytes(&t.ne).filter(|&n| fits(n, span, is_last)).map(|n| (*f, n)))
                .collect();
            let id = t.ggml_type.0;
            let current: Vec<&(&ForkType, u64)> = fitting.iter().filter(|(f, _)| !f.deprecated).collect();
            let chosen = match (fitting.as_slice(), current.as_slice()) {
                ([only], _) => Some(only),
                (_, [only]) => Some(*only),
                _ => None,
            };
            match chosen {
                Some((f, n)) => {
                    named.insert(t.name.clone());
                    t.nbytes = Some(*n);
                    let also: Vec<String> = fitting
                        .iter()
                        .filter(|(o, _)| o != f)
                        .map(|(o, _)| format!(" ({}'s retired {} takes the same bytes)", o.fork, o.name))
                        .collect();
                    findings.push(
                        Finding::new(
                            rules::FORK_TYPE,
                            format!(
                                "type id {id} is {}, as its {span}-byte span shows{}: upstream llama.cpp cannot \
                                 load it, and its values are not decoded",
                                f.describe(),
                                also.concat()
                            ),
                        )
                        .on_tensor(&t.name),
                    );
                }
                None => {
                    let all: Vec<String> = forks.iter().map(|f| f.describe()).collect();
                    let verdict = if fitting.is_empty() { "fits none of them" } else { "fits more than one" };
                    findings.push(
                        Finding::new(
                            rules::SPAN_MISMATCH_MINOR,
                            format!(
                                "type id {id} is {}; its {span}-byte span {verdict}, so the type is not named \
                                 and its values are not decoded",
                                all.join(" or ")
                            ),
                        )
                        .on_tensor(&t.name),
                    );
                }
            }
        } else if let Some(n) = t.nbytes.filter(|&n| n > span && !to_file_end) {
            let other = UPSTREAM_CLASHES
                .iter()
                .find(|(id, _)| *id == t.ggml_type.0)
                .map(|(_, o)| format!(" (id {} is also {o})", t.ggml_type.0))
                .unwrap_or_default();
            findings.push(
                Finding::new(
                    rules::SPAN_MISMATCH,
                    format!(
                        "its {} data takes {n} bytes but only {span} lie before the next tensor's data{other}: \
                         the bytes are not what the type says, so its values are not decoded",
                        t.ggml_type.name()
                    ),
                )
                .on_tensor(&t.name),
            );
        }
    }
    if !named.is_empty() {
        h.findings.retain(|f| {
            // A removed upstream id stays an error: upstream llama.cpp cannot load the file.
            !(f.breaks(gguf_rules::UNKNOWN_TYPE) && f.tensor.as_ref().is_some_and(|n| named.contains(n)))
        });
    }
    h.findings.extend(findings);
    h.findings.extend(rotation(h));
}

/// The finding for a file that declares rotated weights (`prism.hadamard.*`): their stored
/// values are the weights times a Hadamard transform, not the weights as trained.
fn rotation(h: &Header) -> Option<Finding> {
    let version = h.get("prism.hadamard.version")?;
    let count = match h.get("prism.hadamard.weight_names") {
        Some(Value::Array(a)) => format!("{} tensors", a.len),
        _ => "its weights".to_owned(),
    };
    let block = h.get("prism.hadamard.block_size").and_then(Value::as_u64);
    Some(Finding::new(
        rules::ROTATED_WEIGHTS,
        format!(
            "prism.hadamard.version {version}: {count} (prism.hadamard.weight_names) are stored rotated by a \
             Walsh-Hadamard transform{}; their values and histograms are of the rotated weights, and only a \
             runtime that applies prism.hadamard.* computes with them correctly",
            block.map(|b| format!(" in blocks of {b}")).unwrap_or_default()
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_the_block_layouts() {
        let pq2 = candidates(142).find(|f| f.name == "PQ2_0").unwrap();
        assert_eq!(pq2.nbytes(&[256, 3]), Some(3 * 2 * 34));
        assert_eq!(pq2.nbytes(&[100, 3]), None);
        let tn = candidates(142).find(|f| f.name == "IQ2_TN").unwrap();
        assert_eq!(tn.nbytes(&[512, 2]), Some(2 * (4 + 2 * 64)));
        let i2s = candidates(36).next().unwrap();
        assert_eq!(i2s.nbytes(&[128, 4]), Some(128 + 32));
        assert_eq!(candidates(12).count(), 0, "upstream's live ids are not fork types");
        assert!(pq2.describe().contains("128 elements in 34 bytes"));
    }
}
