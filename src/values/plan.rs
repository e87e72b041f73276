//! Which byte ranges of a tensor to read: all of it, an element range, or a block-aligned
//! sample spread over it. A plan states exactly which elements it covers, and computes its
//! pieces one at a time: its memory does not grow with the tensor.

use super::model::Extent;
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

/// How the pieces are laid out.
#[derive(Clone, Debug, PartialEq)]
enum Layout {
    /// Blocks `first..last` read `per_read` at a time, keeping elements `start..end`.
    Run { first: u64, last: u64, per_read: u64, start: u64, end: u64 },
    /// `n` pieces of `piece_blocks` blocks, `stride` blocks apart, each centred in its stride.
    Sample { n: u64, piece_blocks: u64, stride: u64 },
}

/// The reads that cover a selection of one tensor's extent.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// Index of the file holding the tensor.
    pub file: usize,
    /// Absolute offset of the tensor's first block.
    base: u64,
    block_elems: u64,
    block_bytes: u64,
    layout: Layout,
    /// Pieces in the plan.
    pub pieces: u64,
    /// Elements the plan covers, and the tensor's total.
    pub elems: u64,
    pub tensor_elems: u64,
    /// Bytes the plan reads.
    pub bytes: u64,
}

/// Why a selection cannot be planned.
#[derive(Clone, Debug, PartialEq)]
pub enum PlanError {
    /// The blocks do not tile the extent (blocks that are not the tensor's dtype's).
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

/// Plan the reads of `sel` over the extent `data` of a tensor in file `file`, stored in blocks
/// of `block = (elements, bytes)` ([`crate::decode::layout`]). Nothing is allocated: pieces
/// are computed by [`Plan::piece`].
pub fn plan(file: usize, data: &Extent, block: (u64, u64), sel: &Selection) -> Result<Plan, PlanError> {
    let (be, bb) = block;
    let (elems, range) = (data.elems(), data.range());
    if be == 0 || bb == 0 || elems % be != 0 || (elems / be).checked_mul(bb) != Some(range.len()) {
        return Err(PlanError::BadLayout);
    }
    let blocks = elems / be;
    let per_read = (READ_BYTES / bb).max(1);
    let run = |start: u64, end: u64| {
        let (first, last) = (start / be, end.div_ceil(be));
        Layout::Run { first, last, per_read, start, end }
    };
    let layout = match *sel {
        Selection::Whole => run(0, elems),
        Selection::Elements { start, end } => {
            if start >= end || end > elems {
                return Err(PlanError::BadRange { start, end, elems });
            }
            run(start, end)
        }
        Selection::Sample { budget_bytes } if budget_bytes >= range.len() => run(0, elems),
        Selection::Sample { budget_bytes } => {
            // budget < len, so n · piece_blocks < blocks and pieces never overlap.
            let piece_blocks = (SAMPLE_PIECE_BYTES.min(budget_bytes) / bb).max(1).min(blocks);
            let n = (budget_bytes / (piece_blocks * bb)).max(1);
            Layout::Sample { n, piece_blocks, stride: blocks / n }
        }
    };
    let (pieces, covered, bytes) = match layout {
        Layout::Run { first, last, start, end, .. } => {
            ((last - first).div_ceil(per_read), end - start, (last - first) * bb)
        }
        Layout::Sample { n, piece_blocks, .. } => (n, n * piece_blocks * be, n * piece_blocks * bb),
    };
    Ok(Plan {
        file,
        base: range.start,
        block_elems: be,
        block_bytes: bb,
        layout,
        pieces,
        elems: covered,
        tensor_elems: elems,
        bytes,
    })
}

impl Plan {
    /// Piece `i` (of [`Plan::pieces`]), in increasing byte order.
    pub fn piece(&self, i: u64) -> Option<Piece> {
        if i >= self.pieces {
            return None;
        }
        let (be, bb) = (self.block_elems, self.block_bytes);
        Some(match self.layout {
            Layout::Run { first, last, per_read, start, end } => {
                let b = first + i * per_read;
                let n = per_read.min(last - b);
                let (lo, hi) = (b * be, (b + n) * be);
                let (from, to) = (start.max(lo), end.min(hi));
                Piece {
                    bytes: ByteRange::at(self.base + b * bb, n * bb),
                    skip: from - lo,
                    keep: to - from,
                    first_elem: from,
                }
            }
            Layout::Sample { piece_blocks, stride, .. } => {
                let b = i * stride + (stride - piece_blocks) / 2;
                Piece {
                    bytes: ByteRange::at(self.base + b * bb, piece_blocks * bb),
                    skip: 0,
                    keep: piece_blocks * be,
                    first_elem: b * be,
                }
            }
        })
    }

    /// Bytes read by pieces `range` (a part of the plan).
    pub fn bytes_of(&self, range: std::ops::Range<u64>) -> u64 {
        let end = range.end.min(self.pieces);
        if range.start >= end {
            return 0;
        }
        match self.layout {
            Layout::Run { .. } => {
                let (first, last) = (self.piece(range.start), self.piece(end - 1));
                first.zip(last).map_or(0, |(f, l)| l.bytes.end - f.bytes.start)
            }
            Layout::Sample { piece_blocks, .. } => (end - range.start) * piece_blocks * self.block_bytes,
        }
    }

    /// Every piece, in order.
    pub fn iter(&self) -> impl Iterator<Item = Piece> + '_ {
        (0..self.pieces).map_while(|i| self.piece(i))
    }

    /// Whether the pieces follow each other in the file (a run), so reading ahead pays.
    pub fn is_sequential(&self) -> bool {
        matches!(self.layout, Layout::Run { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gguf::GgmlType;
    use crate::model::Dtype;

    /// The blocks of Q4_K and Q8_0.
    const Q4_K: (u64, u64) = (256, 144);
    const Q8_0: (u64, u64) = (32, 34);

    fn q4k(rows: u64) -> Extent {
        let dtype = Dtype::Ggml(GgmlType(12));
        let len = 4096 * rows / 256 * 144;
        Extent::check(&dtype, &[4096, rows], 1000, len, u64::MAX).unwrap()
    }

    #[test]
    fn whole_tensors_are_read_in_bounded_block_aligned_pieces() {
        let e = q4k(1024);
        let p = plan(0, &e, Q4_K, &Selection::Whole).unwrap();
        assert_eq!((p.elems, p.bytes), (4096 * 1024, e.range().len()));
        let pieces: Vec<Piece> = p.iter().collect();
        assert_eq!(pieces.len() as u64, p.pieces);
        assert!(pieces.iter().all(|x| x.bytes.len() <= READ_BYTES && x.bytes.len() % 144 == 0));
        assert_eq!(pieces[0].bytes.start, 1000);
        assert_eq!(pieces.last().unwrap().bytes.end, e.range().end);
        assert!(pieces.windows(2).all(|w| w[0].bytes.end == w[1].bytes.start));
        assert_eq!(pieces.iter().map(|x| x.keep).sum::<u64>(), p.elems);
    }

    #[test]
    fn element_ranges_cover_exactly_the_elements_asked() {
        let e = q4k(4);
        let p = plan(0, &e, Q4_K, &Selection::Elements { start: 300, end: 700 }).unwrap();
        assert_eq!(p.elems, 400);
        let first = p.piece(0).unwrap();
        assert_eq!(first.skip, 300 - 256);
        assert_eq!(first.first_elem, 300);
        assert_eq!(first.bytes, ByteRange::at(1000 + 144, 2 * 144));
        assert!(plan(0, &e, Q4_K, &Selection::Elements { start: 5, end: 5 }).is_err());
        assert!(plan(0, &e, Q4_K, &Selection::Elements { start: 0, end: 4096 * 4 + 1 }).is_err());
    }

    #[test]
    fn element_ranges_across_many_pieces_keep_every_element_once() {
        let e = q4k(4096);
        let (start, end) = (1_000_003, 9_999_999);
        let p = plan(0, &e, Q4_K, &Selection::Elements { start, end }).unwrap();
        let mut next = start;
        for x in p.iter() {
            assert_eq!(x.first_elem, next);
            next += x.keep;
        }
        assert_eq!(next, end);
    }

    #[test]
    fn samples_stay_within_budget_and_spread() {
        let e = q4k(100_000);
        let p = plan(0, &e, Q4_K, &Selection::Sample { budget_bytes: 4 << 20 }).unwrap();
        assert!(p.bytes <= 4 << 20 && p.bytes > 3 << 20, "{}", p.bytes);
        let pieces: Vec<Piece> = p.iter().collect();
        assert!(pieces.last().unwrap().bytes.start > e.range().start + e.range().len() / 2);
        assert!(pieces.windows(2).all(|w| w[0].bytes.end <= w[1].bytes.start));
        assert!(pieces.iter().all(|x| (x.bytes.start - 1000).is_multiple_of(144)));
        assert!(pieces.iter().all(|x| x.bytes.end <= e.range().end));
        assert_eq!(pieces.iter().map(|x| x.bytes.len()).sum::<u64>(), p.bytes);
        let small = q4k(2);
        assert_eq!(plan(0, &small, Q4_K, &Selection::Sample { budget_bytes: 1 << 20 }).unwrap().elems, 8192);
    }

    #[test]
    fn huge_tensors_plan_without_allocating_per_piece() {
        // 64 TiB of Q8_0: the plan is a few words, whatever the size.
        let blocks = (64u64 << 40) / 34;
        let dtype = Dtype::Ggml(GgmlType(8));
        let e = Extent::check(&dtype, &[blocks * 32], 0, blocks * 34, u64::MAX).unwrap();
        let p = plan(0, &e, Q8_0, &Selection::Whole).unwrap();
        assert!(p.pieces > 60_000_000);
        assert_eq!(p.piece(p.pieces - 1).unwrap().bytes.end, blocks * 34);
        assert_eq!(p.piece(p.pieces), None);
    }

    #[test]
    fn blocks_that_do_not_tile_the_extent_are_refused() {
        let e = q4k(4);
        assert_eq!(plan(0, &e, Q8_0, &Selection::Whole), Err(PlanError::BadLayout));
    }
}
