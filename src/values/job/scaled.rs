//! Values of weights whose scales live in other tensors (FP8 with block or channel scales,
//! MXFP4 `_blocks` with `_scales`, NVFP4 with its per-block and per-tensor scales): each piece
//! of the weight is read with the scale elements it needs, and the values reach the sink
//! dequantized.

use super::scan::{plan_target, Sink, ValuesError};
use super::{Job, JobStep, Need, Progress};
use crate::decode::{codec_for, layout, BlockCodec};
use crate::model::Tensor;
use crate::plan::{Piece, Plan, Selection};
use crate::range::ByteRange;
pub use crate::st_quant::{ScaleInput, ScaleMap};
use crate::step::FeedError;

/// Values decoded at a time.
const BATCH_ELEMS: usize = 1 << 14;
/// Most blocks in a row of blocks taller than one weight row (real ones have tens to thousands).
const MAX_BLOCKS_PER_ROW: u64 = 1 << 21;

/// One scale input while scanning: its codec, its data's start, and the piece's scales.
struct Input {
    spec: ScaleInput,
    codec: BlockCodec,
    start: u64,
    /// The scale elements of the current piece, from `first`, as bytes then as values.
    first: u64,
    bytes: Vec<u8>,
    want: u64,
    values: Vec<f32>,
}

/// A scan of a weight's pieces, each with its scales, into a sink.
pub struct ScaledJob<S> {
    plan: Plan,
    codec: BlockCodec,
    inputs: Vec<Input>,
    sink: S,
    next: u64,
    end: u64,
    piece: Option<Piece>,
    buf: Vec<u8>,
    values: Vec<f32>,
    done_bytes: u64,
    total: u64,
}

/// The plan of `sel` over `weight`, whose scales are `inputs`, or why it cannot be read: the
/// checks of [`scaled_job`] without its decoders (the page plans; the workers decode).
pub fn scaled_plan(weight: &Tensor, inputs: &[ScaleInput], sel: &Selection) -> Result<Plan, ValuesError> {
    let plan = plan_target(weight, sel)?;
    let elems = weight.elems().unwrap_or(0);
    for spec in inputs {
        if layout(&spec.tensor.dtype).is_none_or(|(block_elems, _)| block_elems != 1) {
            return Err(ValuesError::Undecodable(spec.tensor.dtype.name()));
        }
        let data = spec.tensor.data.as_ref().map_err(|l| ValuesError::Lost(*l))?;
        if spec.map.needed(elems) > data.elems() {
            return Err(ValuesError::Undecodable(format!(
                "scales: {} holds {} scales, the weight needs {}",
                spec.tensor.name,
                data.elems(),
                spec.map.needed(elems)
            )));
        }
        if let ScaleMap::Blocks { cols, rows, block_cols } = spec.map {
            // A piece wrapping a row of blocks taller than one row reads two whole block rows.
            let per_row = cols.div_ceil(block_cols.max(1));
            if rows > 1 && per_row > MAX_BLOCKS_PER_ROW {
                return Err(ValuesError::Undecodable(format!(
                    "scales: {} has {per_row} blocks per row, more than {MAX_BLOCKS_PER_ROW} read with a piece",
                    spec.tensor.name
                )));
            }
        }
    }
    Ok(plan)
}

/// The dequantized values of `sel` over `weight`, whose scales are `inputs`, into `sink`;
/// pieces `pieces` of the plan only (all of them for `0..u64::MAX`).
pub fn scaled_job<S: Sink>(
    weight: &Tensor,
    inputs: &[ScaleInput],
    sel: &Selection,
    sink: S,
    pieces: std::ops::Range<u64>,
) -> Result<ScaledJob<S>, ValuesError> {
    let plan = scaled_plan(weight, inputs, sel)?;
    let codec = codec_for(&weight.dtype).ok_or_else(|| ValuesError::Undecodable(weight.dtype.name()))?;
    let mut ins = Vec::with_capacity(inputs.len());
    for spec in inputs {
        let codec = codec_for(&spec.tensor.dtype).ok_or_else(|| ValuesError::Undecodable(spec.tensor.dtype.name()))?;
        let start = spec.tensor.data.as_ref().map_err(|l| ValuesError::Lost(*l))?.range().start;
        ins.push(Input { spec: spec.clone(), codec, start, first: 0, bytes: Vec::new(), want: 0, values: Vec::new() });
    }
    let end = pieces.end.min(plan.pieces);
    let start = pieces.start.min(end);
    let total = plan.bytes_of(start..end);
    Ok(ScaledJob {
        plan,
        codec,
        inputs: ins,
        sink,
        next: start,
        end,
        piece: None,
        buf: Vec::new(),
        values: Vec::new(),
        done_bytes: 0,
        total,
    })
}

impl<S: Sink> ScaledJob<S> {
    /// The plan being read.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    fn begin(&mut self, piece: &Piece) {
        for i in &mut self.inputs {
            let (lo, hi) = i.spec.map.span(piece.first_elem, piece.first_elem + piece.keep);
            i.first = lo;
            i.want = hi - lo;
            i.bytes.clear();
        }
    }

    /// The next bytes the piece lacks: the weight's (`None` slot), then each scale input's
    /// (`Some(index)`).
    fn lacking(&self, piece: &Piece) -> Option<(Option<usize>, Need)> {
        let have = piece.bytes.start + self.buf.len() as u64;
        if have < piece.bytes.end {
            return Some((None, Need { file: self.plan.file, range: ByteRange::new(have, piece.bytes.end) }));
        }
        self.inputs.iter().enumerate().find_map(|(j, i)| {
            let bb = i.codec.block_bytes as u64;
            let start = i.start + i.first * bb + i.bytes.len() as u64;
            let end = i.start + (i.first + i.want) * bb;
            (start < end).then(|| (Some(j), Need { file: i.spec.tensor.file, range: ByteRange::new(start, end) }))
        })
    }

    fn finish_piece(&mut self, piece: &Piece) {
        for i in &mut self.inputs {
            i.values.resize(i.want as usize, 0.0);
            (i.codec.decode)(&i.bytes, &mut i.values);
        }
        let (be, bb) = (self.codec.block_elems, self.codec.block_bytes);
        let (mut skip, mut keep) = (piece.skip as usize, piece.keep as usize);
        let mut elem = piece.first_elem;
        let batch = (BATCH_ELEMS / be).max(1) * bb;
        for chunk in self.buf.chunks(batch) {
            let n = chunk.len() / bb * be;
            self.values.resize(n, 0.0);
            (self.codec.decode)(chunk, &mut self.values);
            let s = skip.min(n);
            let k = keep.min(n - s);
            let kept = &mut self.values[s..s + k];
            for i in &self.inputs {
                for (j, v) in kept.iter_mut().enumerate() {
                    let at = (i.spec.map.index(elem + j as u64) - i.first) as usize;
                    let scale = i.values.get(at).copied().unwrap_or(f32::NAN);
                    *v = if i.spec.divide { *v / scale } else { *v * scale };
                }
            }
            if k > 0 {
                self.sink.values(elem, kept);
            }
            elem += k as u64;
            skip -= s;
            keep -= k;
        }
        self.sink.piece_done();
    }
}

impl<S: Sink + Default> Job for ScaledJob<S> {
    type Output = S;

    fn step(&mut self) -> JobStep<S> {
        loop {
            let piece = match &self.piece {
                Some(p) => p.clone(),
                None => {
                    let Some(p) = (self.next < self.end).then(|| self.plan.piece(self.next)).flatten() else {
                        self.sink.finish();
                        return JobStep::Done(std::mem::take(&mut self.sink));
                    };
                    self.begin(&p);
                    self.piece = Some(p.clone());
                    p
                }
            };
            if let Some((_, need)) = self.lacking(&piece) {
                return JobStep::Need(need);
            }
            self.finish_piece(&piece);
            self.done_bytes += piece.bytes.len();
            self.buf.clear();
            self.piece = None;
            self.next += 1;
        }
    }

    fn feed(&mut self, file: usize, offset: u64, bytes: &[u8]) -> Result<(), FeedError> {
        let Some(piece) = self.piece.clone() else { return Ok(()) };
        let Some((slot, need)) = self.lacking(&piece) else { return Ok(()) };
        if file != need.file || offset != need.range.start {
            return Err(FeedError { expected: need.range.start, got: offset });
        }
        let take = usize::try_from(need.range.len()).map_or(bytes.len(), |r| r.min(bytes.len()));
        let buf = match slot {
            None => &mut self.buf,
            Some(j) => &mut self.inputs[j].bytes,
        };
        buf.extend_from_slice(&bytes[..take]);
        Ok(())
    }

    fn progress(&self) -> Progress {
        Progress { done: self.done_bytes + self.buf.len() as u64, total: self.total }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_piece_reads_the_scales_of_its_own_blocks() {
        // Per-element scales over rows of 2^28: a piece of a million elements needs a million.
        let per_elem = ScaleMap::Blocks { cols: 1 << 28, rows: 1, block_cols: 1 };
        assert_eq!(per_elem.span(5 << 20, 6 << 20), (5 << 20, 6 << 20));
        // Row-wrapping pieces of one-row blocks stay exact.
        let wide = ScaleMap::Blocks { cols: 1000, rows: 1, block_cols: 100 };
        assert_eq!(wide.span(950, 1150), (9, 12));
        // 128×128 blocks: within one row, only the blocks it crosses; wrapping a row, whole
        // block rows (the next row starts again at the first column).
        let tall = ScaleMap::Blocks { cols: 7168, rows: 128, block_cols: 128 };
        assert_eq!(tall.span(7168 * 3 + 200, 7168 * 3 + 300), (1, 3));
        assert_eq!(tall.span(7168 * 3 + 7000, 7168 * 4 + 10), (0, 56));
        assert_eq!(tall.span(7168 * 127 + 7000, 7168 * 128 + 10), (0, 112));
        for (f, e) in [(0u64, 7168 * 300), (7168 * 5 + 17, 7168 * 9 + 3), (123, 456)] {
            let (lo, hi) = tall.span(f, e);
            assert!((f..e).all(|x| (lo..hi).contains(&tall.index(x))), "{f}..{e}");
        }
        assert_eq!(tall.needed(7168 * 256), 112);
    }

    #[test]
    fn rows_of_tall_blocks_too_wide_to_read_with_a_piece_are_refused() {
        use crate::model::{Dtype, Extent};
        use crate::safetensors::Dtype as St;
        let t = |name: &str, dtype: St, shape: &[u64], at: u64| {
            let d = Dtype::Safetensors(dtype);
            let bytes = dtype.nbytes(shape.iter().product()).unwrap();
            let data = Extent::check(&d, shape, at, bytes, 1 << 40);
            Tensor {
                name: name.into(),
                dtype: d,
                shape: shape.to_vec(),
                file: 0,
                offset: Some(at),
                nbytes: bytes,
                data,
                strides: None,
            }
        };
        let w = t("w", St::F8_E4M3, &[4, 1 << 28], 0);
        let s = t("w_scale_inv", St::F32, &[2, 1 << 28], 1 << 30);
        let input = |rows| ScaleInput {
            tensor: s.clone(),
            map: ScaleMap::Blocks { cols: 1 << 28, rows, block_cols: 1 },
            divide: false,
        };
        let sink = crate::job::HistogramSink::default();
        let e = scaled_job(&w, &[input(2)], &Selection::Whole, sink, 0..u64::MAX).err().expect("refused");
        assert!(e.to_string().contains("268435456 blocks per row"), "{e}");
        let one_row = t("w_scale_inv", St::F32, &[4, 1 << 28], 1 << 30);
        let per_elem = ScaleInput {
            tensor: one_row,
            map: ScaleMap::Blocks { cols: 1 << 28, rows: 1, block_cols: 1 },
            divide: false,
        };
        assert!(
            scaled_job(&w, &[per_elem], &Selection::Whole, crate::job::HistogramSink::default(), 0..u64::MAX).is_ok()
        );
    }
}
