//! Which byte ranges of a tensor to read: all of it, an element range, or a block-aligned
//! sample spread over it. A plan states exactly which elements it covers.

use super::decode::BlockCodec;
use super::model::Tensor;
use super::range::ByteRange;

/// Largest single read of a plan.
pub const READ_BYTES: u64 = 1 << 20;
/// Bytes per sampled piece.
const SAMPLE_PIECE_BYTES: u64 = 64 << 10;
/// Default sample budget.
pub const DEFAULT_SAMPLE_BYTES: u64 = 4 << 20;

/// What part of a tensor to decode.
#[derive(Clone, Debug, PartialEq)]
pub enum Selection {
    Whole,
    /// Elements `start..end` in storage order.
    Elements {
        start: u64,
        end: u64,
    },
    /// About `budget_bytes` of whole blocks spread evenly over the tensor.
    Sample {
        budget_bytes: u64,
    },
}

/// One read and the values of it to keep.
#[derive(Clone, Debug, PartialEq)]
pub struct Piece {
    /// Absolute byte range (whole blocks).
    pub bytes: ByteRange,
    /// Values decoded from `bytes` to drop from the front, and to keep after that.
    pub skip: u64,
    pub keep: u64,
    /// Index of the first kept element in the tensor.
    pub first_elem: u64,
}

/// The reads that cover a selection.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub pieces: Vec<Piece>,
    /// Elements the plan covers, and the tensor's total.
    pub elems: u64,
    pub tensor_elems: u64,
    pub bytes: u64,
}

/// Why a selection cannot be planned.
#[derive(Clone, Debug, PartialEq)]
pub enum PlanError {
    /// The tensor's size is not a whole number of blocks, or overflows.
    BadLayout,
    /// An element range outside `0..tensor_elems`, or empty.
    BadRange { start: u64, end: u64, elems: u64 },
}

impl std::fmt::Display for PlanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PlanError::BadLayout => write!(f, "the tensor's size is not a whole number of blocks"),
            PlanError::BadRange { start, end, elems } => {
                write!(f, "element range {start}:{end} is not within the tensor's {elems} elements")
            }
        }
    }
}

/// Plan the reads of `sel` over tensor `t`, stored as `codec` blocks.
pub fn plan(t: &Tensor, codec: &BlockCodec, sel: &Selection) -> Result<Plan, PlanError> {
    let (be, bb) = (codec.block_elems as u64, codec.block_bytes as u64);
    let elems = t.elems().ok_or(PlanError::BadLayout)?;
    if elems % be != 0 || (elems / be).checked_mul(bb) != Some(t.nbytes) {
        return Err(PlanError::BadLayout);
    }
    let blocks = elems / be;
    let (first, last, skip, keep) = match *sel {
        Selection::Whole => (0, blocks, 0, elems),
        Selection::Elements { start, end } => {
            if start >= end || end > elems {
                return Err(PlanError::BadRange { start, end, elems });
            }
            let (fb, lb) = (start / be, end.div_ceil(be));
            (fb, lb, start - fb * be, end - start)
        }
        Selection::Sample { budget_bytes } => {
            if budget_bytes >= t.nbytes {
                (0, blocks, 0, elems)
            } else {
                return Ok(sample(t, be, bb, blocks, elems, budget_bytes));
            }
        }
    };
    let mut pieces = Vec::new();
    let per_read = (READ_BYTES / bb).max(1);
    let mut b = first;
    let (mut to_skip, mut to_keep) = (skip, keep);
    while b < last {
        let n = per_read.min(last - b);
        let decoded = n * be;
        let s = to_skip.min(decoded);
        let k = to_keep.min(decoded - s);
        pieces.push(Piece {
            bytes: ByteRange::at(t.offset + b * bb, n * bb),
            skip: s,
            keep: k,
            first_elem: b * be + s,
        });
        to_skip -= s;
        to_keep -= k;
        b += n;
    }
    Ok(Plan { bytes: (last - first) * bb, pieces, elems: keep, tensor_elems: elems })
}

/// Pieces of whole blocks at evenly spaced positions, `budget_bytes` in all.
fn sample(t: &Tensor, be: u64, bb: u64, blocks: u64, elems: u64, budget_bytes: u64) -> Plan {
    let piece_blocks = (SAMPLE_PIECE_BYTES.min(budget_bytes) / bb).max(1);
    let n = (budget_bytes / (piece_blocks * bb)).max(1);
    let stride = blocks / n;
    let pieces: Vec<Piece> = (0..n)
        .map(|i| {
            let b = i * stride + (stride.saturating_sub(piece_blocks)) / 2;
            let len = piece_blocks.min(blocks - b);
            Piece { bytes: ByteRange::at(t.offset + b * bb, len * bb), skip: 0, keep: len * be, first_elem: b * be }
        })
        .collect();
    let covered: u64 = pieces.iter().map(|p| p.keep).sum();
    let bytes = pieces.iter().map(|p| p.bytes.len()).sum();
    Plan { pieces, elems: covered, tensor_elems: elems, bytes }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::decode::ggml;
    use crate::engine::gguf::GgmlType;
    use crate::engine::model::Dtype;

    fn q4k(rows: u64) -> Tensor {
        Tensor {
            name: "w".into(),
            dtype: Dtype::Ggml(GgmlType(12)),
            shape: vec![4096, rows],
            file: 0,
            offset: 1000,
            nbytes: 4096 * rows / 256 * 144,
        }
    }

    #[test]
    fn whole_tensors_are_read_in_bounded_block_aligned_pieces() {
        let t = q4k(1024);
        let p = plan(&t, &ggml::Q4_K, &Selection::Whole).unwrap();
        assert_eq!((p.elems, p.bytes), (4096 * 1024, t.nbytes));
        assert!(p.pieces.iter().all(|x| x.bytes.len() <= READ_BYTES && x.bytes.len() % 144 == 0));
        assert_eq!(p.pieces[0].bytes.start, 1000);
        assert_eq!(p.pieces.last().unwrap().bytes.end, 1000 + t.nbytes);
    }

    #[test]
    fn element_ranges_cover_exactly_the_elements_asked() {
        let t = q4k(4);
        let p = plan(&t, &ggml::Q4_K, &Selection::Elements { start: 300, end: 700 }).unwrap();
        assert_eq!(p.elems, 400);
        assert_eq!(p.pieces[0].skip, 300 - 256);
        assert_eq!(p.pieces[0].first_elem, 300);
        assert_eq!(p.pieces[0].bytes, ByteRange::at(1000 + 144, 2 * 144));
        assert!(plan(&t, &ggml::Q4_K, &Selection::Elements { start: 5, end: 5 }).is_err());
        assert!(plan(&t, &ggml::Q4_K, &Selection::Elements { start: 0, end: 4096 * 4 + 1 }).is_err());
    }

    #[test]
    fn samples_stay_within_budget_and_spread() {
        let t = q4k(100_000);
        let p = plan(&t, &ggml::Q4_K, &Selection::Sample { budget_bytes: 4 << 20 }).unwrap();
        assert!(p.bytes <= 4 << 20 && p.bytes > 3 << 20, "{}", p.bytes);
        assert!(p.pieces.last().unwrap().bytes.start > t.offset + t.nbytes / 2);
        assert!(p.pieces.windows(2).all(|w| w[0].bytes.end <= w[1].bytes.start));
        assert!(p.pieces.iter().all(|x| (x.bytes.start - t.offset).is_multiple_of(144)));
        let small = q4k(2);
        assert_eq!(plan(&small, &ggml::Q4_K, &Selection::Sample { budget_bytes: 1 << 20 }).unwrap().elems, 8192);
    }

    #[test]
    fn inconsistent_layouts_are_refused() {
        let mut t = q4k(4);
        t.nbytes += 1;
        assert_eq!(plan(&t, &ggml::Q4_K, &Selection::Whole), Err(PlanError::BadLayout));
    }
}
