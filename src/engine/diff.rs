//! Two checkpoints compared from their headers: tensors matched by name (only in A, only in B,
//! the same, or changed in dtype, shape or size) and metadata keys added, removed or changed.
//! Values are compared on demand by [`crate::job::compare_job`].

use crate::hash::HashMap;

use super::gguf::Value;
use super::job::{Pairing, ValueDiff};
use super::model::{Checkpoint, Format, MetaValue, Tensor};
use super::names::{self, Placement};
use super::npy::numpy_shape;
use super::summary::{summarize, Summary, Totals};

/// How an item of A relates to B.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Same,
    Changed,
    OnlyA,
    OnlyB,
}

impl Status {
    /// The name the JSON contract uses.
    pub fn name(self) -> &'static str {
        match self {
            Status::Same => "same",
            Status::Changed => "changed",
            Status::OnlyA => "only_a",
            Status::OnlyB => "only_b",
        }
    }
}

/// A tensor of A, B or both (indices into each checkpoint's tensors).
#[derive(Clone, Debug, PartialEq)]
pub struct TensorPair {
    pub a: Option<usize>,
    pub b: Option<usize>,
    pub status: Status,
    /// How far the values are apart, once compared ([`Diff::set_values`]).
    pub values: Option<ValueDiff>,
    /// How their elements pair up (a GGUF and its Hugging Face source: see [`names`]).
    pub pairing: Pairing,
}

/// A metadata key that differs (indices into each checkpoint's metadata).
#[derive(Clone, Debug, PartialEq)]
pub struct MetaPair {
    pub key: String,
    pub a: Option<usize>,
    pub b: Option<usize>,
    pub status: Status,
}

/// What differs between two checkpoints' headers.
#[derive(Clone, Debug, PartialEq)]
pub struct Diff {
    /// A's tensors in A's order, then those only B has, in B's order.
    pub tensors: Vec<TensorPair>,
    /// Keys that differ: A's in A's order, then those only B has.
    pub metadata: Vec<MetaPair>,
    /// Array keys (A's and B's metadata indices) that agree in item type, length and the items
    /// kept, but hold more: their bytes settle it ([`crate::diff_values::array_split`]).
    pub unsettled: Vec<(usize, usize)>,
}

/// The header diff of `a` and `b`: tensors match by name (a GGUF and a safetensors checkpoint
/// by the converter's names, [`names::gguf_name`]); a pair is the same when dtype and shape (in
/// numpy order) agree (values are compared apart).
pub fn diff(a: &Checkpoint, b: &Checkpoint) -> Diff {
    let matches = match (a.format, b.format) {
        (Format::Safetensors | Format::Pickle, Format::Gguf) => mapped(a, b, false),
        (Format::Gguf, Format::Safetensors | Format::Pickle) => mapped(b, a, true),
        _ => {
            let pair = |t: &Tensor| b.tensor_index(&t.name).map(|j| (j, Pairing::Same));
            a.tensors.iter().map(|t| pair(t).into_iter().collect()).collect()
        }
    };
    let mut matched = vec![false; b.tensors.len()];
    let mut tensors = Vec::with_capacity(a.tensors.len());
    for (i, (ta, found)) in a.tensors.iter().zip(matches).enumerate() {
        if found.is_empty() {
            tensors.push(TensorPair {
                a: Some(i),
                b: None,
                status: Status::OnlyA,
                values: None,
                pairing: Pairing::Same,
            });
        }
        for (j, pairing) in found {
            matched[j] = true;
            let tb = &b.tensors[j];
            // Across formats the same type has two spellings (`Dtype::Safetensors(F32)` and
            // `Dtype::Ggml(F32)`) and GGUF shapes are reversed: compare names and numpy shapes.
            let same = ta.dtype.name() == tb.dtype.name() && same_elements(ta, tb, pairing);
            let status = if same { Status::Same } else { Status::Changed };
            tensors.push(TensorPair { a: Some(i), b: Some(j), status, values: None, pairing });
        }
    }
    let only_b = matched.iter().enumerate().filter(|(_, &m)| !m).map(|(j, _)| j);
    tensors.extend(only_b.map(|j| TensorPair {
        a: None,
        b: Some(j),
        status: Status::OnlyB,
        values: None,
        pairing: Pairing::Same,
    }));

    let b_keys: HashMap<&str, usize> = b.metadata.iter().enumerate().map(|(i, (k, _))| (k.as_str(), i)).collect();
    let mut seen = vec![false; b.metadata.len()];
    let (mut metadata, mut unsettled) = (Vec::new(), Vec::new());
    for (i, (key, va)) in a.metadata.iter().enumerate() {
        match b_keys.get(key.as_str()) {
            Some(&j) => {
                seen[j] = true;
                if !same_value(va, &b.metadata[j].1) {
                    metadata.push(MetaPair { key: key.clone(), a: Some(i), b: Some(j), status: Status::Changed });
                } else if let MetaValue::Gguf(Value::Array(arr)) = va {
                    if arr.len > arr.items.len() as u64 {
                        unsettled.push((i, j));
                    }
                }
            }
            None => metadata.push(MetaPair { key: key.clone(), a: Some(i), b: None, status: Status::OnlyA }),
        }
    }
    for (j, (key, _)) in b.metadata.iter().enumerate().filter(|(j, _)| !seen[*j]) {
        metadata.push(MetaPair { key: key.clone(), a: None, b: Some(j), status: Status::OnlyB });
    }
    Diff { tensors, metadata, unsettled }
}

/// For each tensor of A, its tensors of B and how their elements pair: `hf` holds the Hugging
/// Face names, `gguf` the converted ones; `gguf_is_a` says which side A is.
fn mapped(hf: &Checkpoint, gguf: &Checkpoint, gguf_is_a: bool) -> Vec<Vec<(usize, Pairing)>> {
    let text = |key: String| match gguf.meta(&key) {
        Some(MetaValue::Gguf(v)) => v.as_u64(),
        _ => None,
    };
    let arch = match gguf.meta("general.architecture") {
        Some(MetaValue::Gguf(Value::String(s))) => s.clone(),
        _ => String::new(),
    };
    let (heads, kv_heads) =
        (text(format!("{arch}.attention.head_count")), text(format!("{arch}.attention.head_count_kv")));
    // For each HF tensor, its GGUF tensor and placement.
    let found: Vec<Option<(usize, Placement)>> = hf
        .tensors
        .iter()
        .map(|t| {
            let (name, placement) = names::gguf_name(&t.name, &arch, heads, kv_heads)?;
            gguf.tensor_index(&name).map(|j| (j, placement))
        })
        .collect();
    let pairing = |p: Placement| match p {
        Placement::Same => Pairing::Same,
        Placement::Expert { index } => Pairing::Expert { index, stacked_is_b: !gguf_is_a },
        Placement::PermutedRows { heads } => Pairing::PermutedRows { heads, hf_is_a: !gguf_is_a },
        Placement::PlusOne => Pairing::PlusOne { hf_is_a: !gguf_is_a },
    };
    if !gguf_is_a {
        return found.into_iter().map(|f| f.map(|(j, p)| (j, pairing(p))).into_iter().collect()).collect();
    }
    let mut out = vec![Vec::new(); gguf.tensors.len()];
    for (i, f) in found.into_iter().enumerate() {
        if let Some((j, p)) = f {
            out[j].push((i, pairing(p)));
        }
    }
    out
}

/// Whether two tensors hold the same elements in the same numpy shape (an expert: its slice of
/// the stack).
fn same_elements(a: &Tensor, b: &Tensor, pairing: Pairing) -> bool {
    let (sa, sb) = (numpy_shape(a), numpy_shape(b));
    match pairing {
        Pairing::Expert { stacked_is_b: true, .. } => sb.get(1..) == Some(&sa[..]),
        Pairing::Expert { stacked_is_b: false, .. } => sa.get(1..) == Some(&sb[..]),
        Pairing::Same => sa == sb && a.nbytes == b.nbytes,
        Pairing::PermutedRows { .. } | Pairing::PlusOne { .. } => sa == sb,
    }
}

/// Whether two metadata values are equal: the same type and value; arrays by item type, length
/// and the items kept (their place in the file does not matter).
fn same_value(a: &MetaValue, b: &MetaValue) -> bool {
    match (a, b) {
        (MetaValue::Gguf(Value::Array(x)), MetaValue::Gguf(Value::Array(y))) => {
            x.item_type == y.item_type && x.len == y.len && x.items.len() == y.items.len() && {
                let items = x.items.iter().zip(&y.items);
                items
                    .map(|(p, q)| (MetaValue::Gguf(p.clone()), MetaValue::Gguf(q.clone())))
                    .all(|(p, q)| same_value(&p, &q))
            }
        }
        // Floats compare by bits: NaN equals NaN, and -0 is not 0.
        (MetaValue::Gguf(Value::F32(x)), MetaValue::Gguf(Value::F32(y))) => x.to_bits() == y.to_bits(),
        (MetaValue::Gguf(Value::F64(x)), MetaValue::Gguf(Value::F64(y))) => x.to_bits() == y.to_bits(),
        _ => a == b,
    }
}

impl Diff {
    /// Record the value diff of pair `i`: a pair whose headers agree stays the same only when
    /// its values are identical.
    pub fn set_values(&mut self, i: usize, v: ValueDiff) {
        let pair = &mut self.tensors[i];
        if pair.status == Status::Same && !v.identical {
            pair.status = Status::Changed;
        }
        pair.values = Some(v);
    }

    /// Record that A's key `key` (A's metadata index `a`, B's `b`) changed, in A's order.
    pub fn add_changed_key(&mut self, key: String, a: usize, b: usize) {
        let at = self.metadata.iter().position(|m| m.a.is_none_or(|x| x > a)).unwrap_or(self.metadata.len());
        self.metadata.insert(at, MetaPair { key, a: Some(a), b: Some(b), status: Status::Changed });
    }

    /// Whether the two are the same: every tensor the same, no metadata key different.
    pub fn is_same(&self) -> bool {
        self.metadata.is_empty() && self.tensors.iter().all(|t| t.status == Status::Same)
    }

    /// How many tensors have each status: same, changed, only in A, only in B.
    pub fn counts(&self) -> [u64; 4] {
        let mut c = [0u64; 4];
        for t in &self.tensors {
            c[t.status as usize] += 1;
        }
        c
    }
}

/// A's and B's totals side by side: all tensors, then each dtype either holds (A's order, then
/// B's), as `(name, A, B)`.
pub fn totals(a: &Checkpoint, b: &Checkpoint) -> Vec<(String, Totals, Totals)> {
    let (sa, sb) = (summarize(a), summarize(b));
    let mut rows = vec![("all".to_owned(), sa.all.clone(), sb.all.clone())];
    let find =
        |s: &Summary, d: &str| s.by_dtype.iter().find(|(n, _)| n == d).map(|(_, t)| t.clone()).unwrap_or_default();
    let mut names: Vec<&String> = sa.by_dtype.iter().map(|(n, _)| n).collect();
    names.extend(sb.by_dtype.iter().map(|(n, _)| n).filter(|n| !sa.by_dtype.iter().any(|(m, _)| m == *n)));
    rows.extend(names.into_iter().map(|n| (n.clone(), find(&sa, n), find(&sb, n))));
    rows
}

/// One layer of a diff (tensors named `blk.N.…`, `model.layers.N.…`; `None`: the rest).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LayerRow {
    pub layer: Option<u64>,
    pub a_bytes: u64,
    pub b_bytes: u64,
    /// The highest NMSE of the layer's compared tensors.
    pub worst_nmse: Option<f64>,
}

/// Bytes per layer side by side, and each layer's worst NMSE once values were compared: the
/// rest first, then layers in order. A tensor counts in A's layer (B's when only B holds it).
pub fn by_layer(d: &Diff, a: &Checkpoint, b: &Checkpoint) -> Vec<LayerRow> {
    let mut rows: std::collections::BTreeMap<Option<u64>, LayerRow> = std::collections::BTreeMap::new();
    let mut counted_b = vec![false; b.tensors.len()];
    for p in &d.tensors {
        let (ta, tb) = (p.a.map(|i| &a.tensors[i]), p.b.map(|i| &b.tensors[i]));
        let layer = ta.or(tb).and_then(|t| crate::view::layer_of(&t.name));
        let row = rows.entry(layer).or_insert_with(|| LayerRow { layer, ..LayerRow::default() });
        row.a_bytes += ta.map_or(0, |t| t.nbytes);
        // A stack matched by several experts counts once.
        if let (Some(j), Some(t)) = (p.b, tb) {
            if !std::mem::replace(&mut counted_b[j], true) {
                row.b_bytes += t.nbytes;
            }
        }
        if let Some(v) = &p.values {
            row.worst_nmse = Some(row.worst_nmse.map_or(v.nmse, |w| w.max(v.nmse)));
        }
    }
    rows.into_values().collect()
}

/// A column the table of tensor pairs sorts by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortBy {
    /// A's order, then the tensors only B has.
    File,
    Name,
    Status,
    Nmse,
    Cosine,
    MaxAbs,
    /// A's bytes (B's for tensors only B has).
    Bytes,
}

/// `d`'s tensor pairs (the changed ones only, with `changed_only`) sorted by `by`, ascending or
/// `descending`; ties keep file order, and pairs whose values were not compared come last
/// whatever the direction when sorting by a value column.
pub fn sorted<'d>(
    d: &'d Diff,
    a: &Checkpoint,
    b: &Checkpoint,
    by: SortBy,
    descending: bool,
    changed_only: bool,
) -> Vec<&'d TensorPair> {
    let mut rows: Vec<&TensorPair> = d.tensors.iter().filter(|p| !changed_only || p.status != Status::Same).collect();
    let tensor = |p: &TensorPair| p.a.map(|i| &a.tensors[i]).or_else(|| p.b.map(|i| &b.tensors[i]));
    let value = |p: &TensorPair| -> Option<f64> {
        let v = p.values.as_ref()?;
        Some(match by {
            SortBy::Nmse => v.nmse,
            SortBy::Cosine => v.cosine,
            _ => v.max_abs,
        })
    };
    let flip = |o: std::cmp::Ordering| if descending { o.reverse() } else { o };
    match by {
        SortBy::File => {
            if descending {
                rows.reverse();
            }
        }
        SortBy::Name => {
            crate::sort::sort_by(&mut rows, |x, y| flip(tensor(x).map(|t| &t.name).cmp(&tensor(y).map(|t| &t.name))))
        }
        SortBy::Status => crate::sort::sort_by(&mut rows, |x, y| flip(x.status.name().cmp(y.status.name()))),
        SortBy::Bytes => {
            crate::sort::sort_by(&mut rows, |x, y| flip(tensor(x).map(|t| t.nbytes).cmp(&tensor(y).map(|t| t.nbytes))))
        }
        SortBy::Nmse | SortBy::Cosine | SortBy::MaxAbs => {
            crate::sort::sort_by(&mut rows, |x, y| match (value(x), value(y)) {
                (Some(p), Some(q)) => flip(p.total_cmp(&q)),
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (None, None) => std::cmp::Ordering::Equal,
            })
        }
    }
    rows
}
