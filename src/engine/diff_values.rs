//! A diff's value splits: the tensors both checkpoints hold compared value for value, and the
//! metadata arrays their headers cannot settle compared by their bytes; the replies recorded in
//! the diff. Run by the CLI's threads and the browser's workers alike.

use crate::diff::Diff;
use crate::job::split::Split;
use crate::job::work::{Order, Reply, TensorRef};
use crate::job::{compare_plan, Values};
use crate::model::Checkpoint;

/// A diff's pairs compared value for value: its merge is the diff with their values.
pub struct CompareSplit {
    diff: Diff,
    orders: Vec<Order>,
    bytes: u64,
    /// Each order's pair, an index into the diff's tensors.
    pairs: Vec<usize>,
}

/// The value orders of `d`'s pairs (tensors both hold, in shapes that pair up), for `values`.
/// B's files follow A's.
pub fn compare_split(d: &Diff, a: &Checkpoint, b: &Checkpoint, values: Values) -> CompareSplit {
    let (mut orders, mut pairs, mut bytes) = (Vec::new(), Vec::new(), 0u64);
    for (i, p) in d.tensors.iter().enumerate() {
        let (Some(ia), Some(ib)) = (p.a, p.b) else { continue };
        let (ta, tb) = (&a.tensors[ia], &b.tensors[ib]);
        // Only pairs whose job can be built: both decodable and located, shapes that pair up.
        let Ok(plan) = compare_plan(ta, tb, a.files.len(), values, p.pairing) else { continue };
        let (Some(ra), Some(mut rb)) =
            (TensorRef::of(ta, a.files[ta.file].size), TensorRef::of(tb, b.files[tb.file].size))
        else {
            continue;
        };
        rb.file += a.files.len();
        bytes = bytes.saturating_add(plan.bytes());
        orders.push(Order::Compare { a: ra, b: rb, values, pairing: p.pairing });
        pairs.push(i);
    }
    CompareSplit { diff: d.clone(), orders, bytes, pairs }
}

impl Split for CompareSplit {
    type Output = Diff;

    fn orders(&self) -> &[Order] {
        &self.orders
    }

    fn bytes(&self) -> u64 {
        self.bytes
    }

    fn merge(mut self, replies: Vec<Reply>) -> Option<Diff> {
        if replies.len() != self.pairs.len() {
            return None;
        }
        for (&i, r) in self.pairs.iter().zip(replies) {
            let Reply::Compare(v) = r else { return None };
            self.diff.set_values(i, v);
        }
        Some(self.diff)
    }
}

/// The metadata arrays of a diff its headers cannot settle (the same item type, length and
/// kept items, but more items than are kept), settled by their bytes: one order hashes both
/// arrays' bytes. Its merge is the diff with the arrays whose bytes differ as changed keys.
pub struct ArraySplit {
    diff: Diff,
    orders: Vec<Order>,
    bytes: u64,
    /// Each order's key and its index in A's and in B's metadata.
    pairs: Vec<(String, usize, usize)>,
}

/// The array orders of `d` (B's file indices after A's); arrays of files of different byte
/// order are left as they compare.
pub fn array_split(d: &Diff, a: &Checkpoint, b: &Checkpoint) -> ArraySplit {
    let (mut orders, mut pairs, mut bytes) = (Vec::new(), Vec::new(), 0u64);
    for &(i, j) in &d.unsettled {
        let (fa, fb) = (a.meta_file.get(i).copied(), b.meta_file.get(j).copied());
        let (Some(fa), Some(fb)) = (fa, fb) else { continue };
        if a.big_endian.get(fa) != b.big_endian.get(fb) {
            continue;
        }
        let span = |cp: &Checkpoint, k: usize| match &cp.metadata[k].1 {
            crate::model::MetaValue::Gguf(crate::gguf::Value::Array(arr)) => Some(arr.span),
            _ => None,
        };
        let (Some(sa), Some(sb)) = (span(a, i), span(b, j)) else { continue };
        bytes = bytes.saturating_add(sa.len()).saturating_add(sb.len());
        let spans = vec![(fa, sa.start, sa.end), (fb + a.files.len(), sb.start, sb.end)];
        orders.push(Order::Spans { spans });
        pairs.push((a.metadata[i].0.clone(), i, j));
    }
    ArraySplit { diff: d.clone(), orders, bytes, pairs }
}

impl Split for ArraySplit {
    type Output = Diff;

    fn orders(&self) -> &[Order] {
        &self.orders
    }

    fn bytes(&self) -> u64 {
        self.bytes
    }

    fn merge(mut self, replies: Vec<Reply>) -> Option<Diff> {
        if replies.len() != self.pairs.len() {
            return None;
        }
        for ((key, i, j), r) in self.pairs.into_iter().zip(replies) {
            let Reply::Spans(digests) = r else { return None };
            if digests.len() != 2 {
                return None;
            }
            if digests[0] != digests[1] {
                self.diff.add_changed_key(key, i, j);
            }
        }
        self.diff.unsettled.clear();
        Some(self.diff)
    }
}
