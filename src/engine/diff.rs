//! Two checkpoints compared from their headers: tensors matched by name (only in A, only in B,
//! the same, or changed in dtype, shape or size) and metadata keys added, removed or changed.
//! Values are compared on demand by [`crate::engine::job::compare_job`].

use std::collections::HashMap;

use super::job::ValueDiff;
use super::model::{Checkpoint, MetaValue};

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
}

/// The header diff of `a` and `b`: tensors match by name; a pair is the same when dtype, shape
/// and byte size agree (values are compared apart).
pub fn diff(a: &Checkpoint, b: &Checkpoint) -> Diff {
    let b_tensors: HashMap<&str, usize> = b.tensors.iter().enumerate().map(|(i, t)| (t.name.as_str(), i)).collect();
    let mut matched = vec![false; b.tensors.len()];
    let mut tensors = Vec::with_capacity(a.tensors.len());
    for (i, ta) in a.tensors.iter().enumerate() {
        match b_tensors.get(ta.name.as_str()) {
            Some(&j) => {
                matched[j] = true;
                let tb = &b.tensors[j];
                let same = ta.dtype == tb.dtype && ta.shape == tb.shape && ta.nbytes == tb.nbytes;
                let status = if same { Status::Same } else { Status::Changed };
                tensors.push(TensorPair { a: Some(i), b: Some(j), status, values: None });
            }
            None => tensors.push(TensorPair { a: Some(i), b: None, status: Status::OnlyA, values: None }),
        }
    }
    let only_b = matched.iter().enumerate().filter(|(_, &m)| !m).map(|(j, _)| j);
    tensors.extend(only_b.map(|j| TensorPair { a: None, b: Some(j), status: Status::OnlyB, values: None }));

    let b_keys: HashMap<&str, usize> = b.metadata.iter().enumerate().map(|(i, (k, _))| (k.as_str(), i)).collect();
    let mut seen = vec![false; b.metadata.len()];
    let mut metadata = Vec::new();
    for (i, (key, va)) in a.metadata.iter().enumerate() {
        match b_keys.get(key.as_str()) {
            Some(&j) => {
                seen[j] = true;
                if !same_value(va, &b.metadata[j].1) {
                    metadata.push(MetaPair { key: key.clone(), a: Some(i), b: Some(j), status: Status::Changed });
                }
            }
            None => metadata.push(MetaPair { key: key.clone(), a: Some(i), b: None, status: Status::OnlyA }),
        }
    }
    for (j, (key, _)) in b.metadata.iter().enumerate().filter(|(j, _)| !seen[*j]) {
        metadata.push(MetaPair { key: key.clone(), a: None, b: Some(j), status: Status::OnlyB });
    }
    Diff { tensors, metadata }
}

/// Whether two metadata values are equal: the same type and value; arrays by item type, length
/// and the items kept (their place in the file does not matter).
fn same_value(a: &MetaValue, b: &MetaValue) -> bool {
    use super::gguf::Value;
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
