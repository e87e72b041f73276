//! A diff's value orders: the tensors both checkpoints hold compared value for value, and the
//! metadata arrays their headers cannot settle compared by their bytes; the replies recorded in
//! the diff. Run by the CLI's threads and the browser's workers alike.

use crate::diff::Diff;
use crate::job::work::{Order, Reply, TensorRef};
use crate::job::{compare_job, Values};
use crate::model::Checkpoint;

/// The value orders of a diff's pairs (tensors both hold, in shapes that pair up), for
/// `values`; with the index of each order's pair in `d.tensors`. B's files follow A's.
pub fn compare_orders(d: &Diff, a: &Checkpoint, b: &Checkpoint, values: Values) -> (Vec<Order>, Vec<usize>) {
    let (mut orders, mut pairs) = (Vec::new(), Vec::new());
    for (i, p) in d.tensors.iter().enumerate() {
        let (Some(ia), Some(ib)) = (p.a, p.b) else { continue };
        let (ta, tb) = (&a.tensors[ia], &b.tensors[ib]);
        // Only pairs whose job can be built: both decodable and located, shapes that pair up.
        if compare_job(ta, tb, a.files.len(), values, p.pairing).is_err() {
            continue;
        }
        let (Some(ra), Some(mut rb)) =
            (TensorRef::of(ta, a.files[ta.file].size), TensorRef::of(tb, b.files[tb.file].size))
        else {
            continue;
        };
        rb.file += a.files.len();
        orders.push(Order::Compare { a: ra, b: rb, values, pairing: p.pairing });
        pairs.push(i);
    }
    (orders, pairs)
}

/// Record the replies to [`compare_orders`] in the diff (`false` when a reply is not a value diff).
pub fn apply_compare(d: &mut Diff, pairs: &[usize], replies: Vec<Reply>) -> bool {
    for (&i, r) in pairs.iter().zip(replies) {
        let Reply::Compare(v) = r else { return false };
        d.set_values(i, v);
    }
    true
}

/// The orders that settle the metadata arrays of a diff its headers cannot: the same item type,
/// length and kept items, but more items than are kept. One order hashes both arrays' bytes (B's
/// file indices after A's); arrays of files of different byte order are left as they compare.
pub fn array_orders(d: &Diff, a: &Checkpoint, b: &Checkpoint) -> (Vec<Order>, Vec<(usize, usize)>) {
    let (mut orders, mut pairs) = (Vec::new(), Vec::new());
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
        let spans = vec![(fa, sa.start, sa.end), (fb + a.files.len(), sb.start, sb.end)];
        orders.push(Order::Spans { spans });
        pairs.push((i, j));
    }
    (orders, pairs)
}

/// Record the replies to [`array_orders`]: arrays whose bytes differ are changed keys (`false`
/// when a reply is not two digests).
pub fn apply_arrays(d: &mut Diff, a: &Checkpoint, pairs: &[(usize, usize)], replies: Vec<Reply>) -> bool {
    for (&(i, j), r) in pairs.iter().zip(replies) {
        let Reply::Spans(digests) = r else { return false };
        if digests.len() != 2 {
            return false;
        }
        if digests[0] != digests[1] {
            d.add_changed_key(a.metadata[i].0.clone(), i, j);
        }
    }
    d.unsettled.clear();
    true
}
