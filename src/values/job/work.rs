//! Work for other threads and Web Workers: orders that say what to read without the checkpoint
//! (a tensor by dtype, shape and place; a file by index and length), the job that carries an
//! order out, and its reply, as bytes a worker posts. How an operation is cut into orders and
//! their replies merged is [`super::split`].

use std::ops::Range;

use super::compare::{compare_job, CompareError, CompareJob, Pairing, ValueDiff, Values};
use super::npy::{npy_job, NpyJob};
use super::scaled::{scaled_job, ScaleInput, ScaleMap, ScaledJob};
use super::scan::{
    read_ahead_within, scan_target, HistogramSink, NonFiniteScan, NonFiniteSink, ValueScan, ValuesError,
};
use super::sha256::Sha256Job;
use super::wire::{Reader, Writer};
use super::{Job, JobStep, Progress};
use crate::codes::code_codec;
use crate::decode::BlockCodec;
use crate::model::{Dtype, Extent, Tensor};
use crate::plan::{Plan, Selection};
use crate::range::ByteRange;
use crate::safetensors::Dtype as StDtype;
use crate::step::FeedError;

/// Pieces a histogram or scan order holds at most (a piece is at most 1 MiB): workers share even
/// one tensor evenly, and orders stay few.
const ORDER_PIECES: u64 = 64;
/// Orders one tensor is cut into at most (64 per 64 GiB: past that, orders hold more pieces).
const MAX_ORDERS: u64 = 1 << 16;
/// Pieces the last orders of a tensor shared by several workers hold at most.
const LAST_ORDER_PIECES: u64 = 8;

/// A tensor as an order names it: enough to plan its reads again (its extent is checked anew).
#[derive(Clone, Debug, PartialEq)]
pub struct TensorRef {
    /// A safetensors dtype or a GGML type (never an unknown one).
    pub dtype: Dtype,
    pub shape: Vec<u64>,
    pub file: usize,
    pub offset: u64,
    pub nbytes: u64,
    pub file_len: u64,
    /// [`Tensor::strides`].
    pub strides: Option<Vec<u64>>,
}

impl TensorRef {
    /// `t` as an order names it (in a file of `file_len` bytes), when its data can be located.
    pub fn of(t: &Tensor, file_len: u64) -> Option<TensorRef> {
        let data = t.data.as_ref().ok()?;
        if let Dtype::Unknown(_) = t.dtype {
            return None;
        }
        let dtype = t.dtype.clone();
        let r = data.range();
        let (shape, strides) = (t.shape.clone(), t.strides.clone());
        Some(TensorRef { dtype, shape, file: t.file, offset: r.start, nbytes: r.len(), file_len, strides })
    }

    /// The tensor (unnamed), its extent checked anew.
    fn tensor(&self) -> Result<Tensor, ValuesError> {
        let dtype = self.dtype.clone();
        let data = Extent::check(&dtype, &self.shape, self.offset, self.nbytes, self.file_len);
        let (shape, file, offset, nbytes) = (self.shape.clone(), self.file, Some(self.offset), self.nbytes);
        let strides = self.strides.clone();
        Ok(Tensor { name: String::new(), dtype, shape, file, offset, nbytes, data, strides })
    }

    /// The plan and codec of `sel` over the tensor.
    fn target(&self, sel: &Selection) -> Result<(Plan, BlockCodec), ValuesError> {
        scan_target(&self.tensor()?, sel)
    }
}

/// One unit of parallel work.
#[derive(Clone, Debug, PartialEq)]
pub enum Order {
    /// Pieces `pieces` of the histogram of `sel` over a tensor.
    Histogram { tensor: TensorRef, sel: Selection, scales: bool, pieces: Range<u64> },
    /// NaN/Inf counts of pieces of tensors.
    Scan { units: Vec<(TensorRef, Range<u64>)> },
    /// The SHA-256 of one file.
    Sha256 { file: usize, len: u64 },
    /// The SHA-256 of each of some byte spans `(file, start, end)`.
    Spans { spans: Vec<(usize, u64, u64)> },
    /// A tensor as `.npy` bytes, streamed (see [`OrderJob::take_output`]).
    Npy { tensor: TensorRef },
    /// The value diff of two tensors (B's file indices after A's).
    Compare { a: TensorRef, b: TensorRef, values: Values, pairing: Pairing },
    /// Pieces `pieces` of the histogram of `sel` over a weight dequantized with scales read
    /// from other tensors (`divide`: the scale is a reciprocal).
    Scaled { weight: TensorRef, inputs: Vec<(TensorRef, ScaleMap, bool)>, sel: Selection, pieces: Range<u64> },
}

/// What an order gives back.
#[derive(Debug)]
pub enum Reply {
    Histogram(Box<HistogramSink>),
    Scan(Vec<NonFiniteSink>),
    Sha256(String),
    Spans(Vec<String>),
    /// The last `.npy` bytes (the rest went out with [`OrderJob::take_output`]).
    Npy(Vec<u8>),
    Compare(ValueDiff),
}

impl Reply {
    /// The reply as bytes (to post from a worker).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::default();
        match self {
            Reply::Histogram(h) => h.write(&mut w),
            Reply::Scan(counts) => {
                w.u64(counts.len() as u64);
                for c in counts {
                    w.u64(c.values).u64(c.nan).u64(c.inf);
                }
            }
            Reply::Sha256(hex) => {
                w.bytes(hex.as_bytes());
            }
            Reply::Spans(digests) => {
                w.u64(digests.len() as u64);
                for d in digests {
                    w.bytes(d.as_bytes());
                }
            }
            Reply::Npy(bytes) => {
                w.bytes(bytes);
            }
            Reply::Compare(v) => {
                w.u64(v.compared).f64(v.nmse).f64(v.cosine).f64(v.max_abs).bool(v.identical);
            }
        }
        w.0
    }

    /// The reply to `order` read back from [`Reply::to_bytes`]; `None` when the bytes are not one.
    pub fn from_bytes(order: &Order, bytes: &[u8]) -> Option<Reply> {
        let mut r = Reader(bytes);
        let reply = match order {
            Order::Histogram { tensor, .. } => {
                Reply::Histogram(Box::new(HistogramSink::read(code_codec(&tensor.dtype).as_ref(), &mut r)?))
            }
            Order::Scaled { .. } => Reply::Histogram(Box::new(HistogramSink::read(None, &mut r)?)),
            Order::Scan { units } => {
                let n = r.u64()?;
                if n != units.len() as u64 {
                    return None;
                }
                let mut counts = Vec::with_capacity(units.len());
                for _ in 0..n {
                    counts.push(NonFiniteSink { values: r.u64()?, nan: r.u64()?, inf: r.u64()? });
                }
                Reply::Scan(counts)
            }
            Order::Sha256 { .. } => Reply::Sha256(String::from_utf8(r.bytes()?).ok()?),
            Order::Spans { spans } => {
                if r.u64()? != spans.len() as u64 {
                    return None;
                }
                let digests: Option<Vec<String>> = spans.iter().map(|_| String::from_utf8(r.bytes()?).ok()).collect();
                Reply::Spans(digests?)
            }
            Order::Npy { .. } => Reply::Npy(r.bytes()?),
            Order::Compare { .. } => Reply::Compare(ValueDiff {
                compared: r.u64()?,
                nmse: r.f64()?,
                cosine: r.f64()?,
                max_abs: r.f64()?,
                identical: r.bool()?,
            }),
        };
        r.is_empty().then_some(reply)
    }
}

/// The job that carries out an order.
pub struct OrderJob(Running);

enum Running {
    Histogram(Box<ValueScan<HistogramSink>>),
    Scan(Box<ScanUnits>),
    Sha256(Sha256Job),
    Spans(Sha256Job),
    Npy(Box<NpyJob>),
    Compare(Box<CompareJob>),
    Scaled(Box<ScaledJob<HistogramSink>>),
}

/// The job of `order`, or why its tensor cannot be read.
pub fn order_job(order: &Order) -> Result<OrderJob, ValuesError> {
    Ok(OrderJob(match order {
        Order::Histogram { tensor, sel, scales, pieces } => {
            let (plan, codec) = tensor.target(sel)?;
            let sink = HistogramSink::part(&codec, *scales && codec.scales.is_some());
            Running::Histogram(Box::new(ValueScan::part(plan, codec, sink, pieces.clone())))
        }
        Order::Scan { units } => {
            let mut targets = Vec::with_capacity(units.len());
            for (t, pieces) in units {
                let (plan, codec) = t.target(&Selection::Whole)?;
                targets.push((plan, codec, pieces.clone()));
            }
            let total = targets.iter().map(|(p, _, r)| p.bytes_of(r.clone())).sum();
            Running::Scan(Box::new(ScanUnits {
                targets: targets.into_iter(),
                current: None,
                out: Vec::new(),
                done: 0,
                total,
            }))
        }
        Order::Sha256 { file, len } => Running::Sha256(Sha256Job::new(vec![(*file, *len)])),
        Order::Spans { spans } => {
            let spans = spans.iter().map(|&(f, start, end)| (f, ByteRange::new(start, end.max(start)))).collect();
            Running::Spans(Sha256Job::spans(spans))
        }
        Order::Npy { tensor } => Running::Npy(Box::new(npy_job(&tensor.tensor()?)?)),
        Order::Compare { a, b, values, pairing } => {
            let (ta, tb) = (a.tensor()?, b.tensor()?);
            let job = compare_job(&ta, &tb, 0, *values, *pairing).map_err(|e| match e {
                CompareError::Values(v) => v,
                CompareError::Shapes(..) => ValuesError::Shapes(e.to_string()),
            })?;
            Running::Compare(Box::new(job))
        }
        Order::Scaled { weight, inputs, sel, pieces } => {
            let weight = weight.tensor()?;
            let mut ins = Vec::with_capacity(inputs.len());
            for (t, map, divide) in inputs {
                ins.push(ScaleInput { tensor: t.tensor()?, map: *map, divide: *divide });
            }
            let sink = HistogramSink::part(&f32_codec(), false);
            Running::Scaled(Box::new(scaled_job(&weight, &ins, sel, sink, pieces.clone())?))
        }
    }))
}

/// The codec dequantized values are binned as: plain `f32`, counted value by value.
fn f32_codec() -> BlockCodec {
    crate::decode::codec_for(&Dtype::Safetensors(StDtype::F32)).expect("F32 decodes")
}

impl OrderJob {
    /// Output produced so far, for orders that stream it (`.npy`); empty for the rest.
    pub fn take_output(&mut self) -> Vec<u8> {
        match &mut self.0 {
            Running::Npy(j) => j.sink_mut().take(),
            _ => Vec::new(),
        }
    }
}

impl Job for OrderJob {
    type Output = Reply;

    fn step(&mut self) -> JobStep<Reply> {
        match &mut self.0 {
            Running::Histogram(j) => match j.step() {
                JobStep::Need(n) => JobStep::Need(n),
                JobStep::Done(sink) => JobStep::Done(Reply::Histogram(Box::new(sink))),
            },
            Running::Scan(j) => match j.step() {
                JobStep::Need(n) => JobStep::Need(n),
                JobStep::Done(counts) => JobStep::Done(Reply::Scan(counts)),
            },
            Running::Sha256(j) => match j.step() {
                JobStep::Need(n) => JobStep::Need(n),
                JobStep::Done(mut digests) => JobStep::Done(Reply::Sha256(digests.pop().unwrap_or_default())),
            },
            Running::Spans(j) => match j.step() {
                JobStep::Need(n) => JobStep::Need(n),
                JobStep::Done(digests) => JobStep::Done(Reply::Spans(digests)),
            },
            Running::Npy(j) => match j.step() {
                JobStep::Need(n) => JobStep::Need(n),
                JobStep::Done(mut sink) => JobStep::Done(Reply::Npy(sink.take())),
            },
            Running::Compare(j) => match j.step() {
                JobStep::Need(n) => JobStep::Need(n),
                JobStep::Done(v) => JobStep::Done(Reply::Compare(v)),
            },
            Running::Scaled(j) => match j.step() {
                JobStep::Need(n) => JobStep::Need(n),
                JobStep::Done(sink) => JobStep::Done(Reply::Histogram(Box::new(sink))),
            },
        }
    }

    fn feed(&mut self, file: usize, offset: u64, bytes: &[u8]) -> Result<(), FeedError> {
        match &mut self.0 {
            Running::Histogram(j) => j.feed(file, offset, bytes),
            Running::Scan(j) => j.feed(file, offset, bytes),
            Running::Sha256(j) | Running::Spans(j) => j.feed(file, offset, bytes),
            Running::Npy(j) => j.feed(file, offset, bytes),
            Running::Compare(j) => j.feed(file, offset, bytes),
            Running::Scaled(j) => j.feed(file, offset, bytes),
        }
    }

    fn progress(&self) -> Progress {
        match &self.0 {
            Running::Histogram(j) => j.progress(),
            Running::Scan(j) => j.progress(),
            Running::Sha256(j) | Running::Spans(j) => j.progress(),
            Running::Npy(j) => j.progress(),
            Running::Compare(j) => j.progress(),
            Running::Scaled(j) => j.progress(),
        }
    }

    fn read_ahead(&self) -> u64 {
        match &self.0 {
            Running::Histogram(j) => j.read_ahead(),
            Running::Scan(j) => j.read_ahead(),
            Running::Sha256(j) | Running::Spans(j) => j.read_ahead(),
            Running::Npy(j) => j.read_ahead(),
            Running::Compare(j) => j.read_ahead(),
            Running::Scaled(j) => j.read_ahead(),
        }
    }
}

/// Pieces of tensors scanned one after the other.
struct ScanUnits {
    targets: std::vec::IntoIter<(Plan, BlockCodec, Range<u64>)>,
    current: Option<ValueScan<NonFiniteScan>>,
    out: Vec<NonFiniteSink>,
    done: u64,
    total: u64,
}

impl Job for ScanUnits {
    type Output = Vec<NonFiniteSink>;

    fn step(&mut self) -> JobStep<Vec<NonFiniteSink>> {
        loop {
            if let Some(scan) = &mut self.current {
                match scan.step() {
                    JobStep::Need(n) => return JobStep::Need(n),
                    JobStep::Done(scan_done) => {
                        self.done += scan.progress().total;
                        self.out.push(scan_done.counts);
                        self.current = None;
                    }
                }
            }
            match self.targets.next() {
                None => return JobStep::Done(std::mem::take(&mut self.out)),
                Some((plan, codec, pieces)) => {
                    self.current = Some(ValueScan::part(plan, codec, NonFiniteScan::for_codec(&codec), pieces));
                }
            }
        }
    }

    fn feed(&mut self, file: usize, offset: u64, bytes: &[u8]) -> Result<(), FeedError> {
        match &mut self.current {
            Some(s) => s.feed(file, offset, bytes),
            None => Ok(()),
        }
    }

    fn progress(&self) -> Progress {
        let now = self.current.as_ref().map_or(0, |s| s.progress().done);
        Progress { done: self.done + now, total: self.total }
    }

    /// Units of a sequential scan read ahead into the next units' bytes (small tensors lie
    /// back to back), up to the order's end.
    fn read_ahead(&self) -> u64 {
        match &self.current {
            Some(s) if s.is_sequential() => read_ahead_within(self.progress()),
            _ => 0,
        }
    }
}

/// Who takes a split's orders, each taker the next order as it ends one of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Takers {
    /// Threads running one order at a time (the command line's).
    Threads(usize),
    /// Workers each running several orders at once (the browser's, which overlap one order's
    /// reads with another's decoding).
    Workers(usize),
}

impl Takers {
    /// How many threads or workers.
    pub fn count(self) -> usize {
        match self {
            Takers::Threads(n) | Takers::Workers(n) => n.max(1),
        }
    }
}

/// Pieces `0..plan.pieces` cut into ranges of at most `ORDER_PIECES` (64), at least one a taker
/// when there are that many pieces (and one, empty, when there are none).
///
/// - One taker gets orders as large as they go, as each order's tables are set up, kept and
///   joined apart.
/// - Threads get orders that shrink as the pieces left do: each takes a `2 × threads`th of them,
///   down to an eighth of a thread's share (at most [`LAST_ORDER_PIECES`]). The large first ones
///   share the tensor and the small last ones even out the end (with orders all of an eighth of a
///   share, one thread often ended a whole order after the other: 5.2 ms apart on average in a
///   2-thread 64 MiB Q4_K histogram, 0.6 ms with shrinking orders).
/// - Workers get four orders each, all alike: the orders a worker runs at once even out its end,
///   and each order costs a round trip (shrinking orders measured 0.7-0.9x in the browser, F16
///   and F32 worst).
pub fn piece_ranges(plan: &Plan, takers: Takers) -> Vec<Range<u64>> {
    let pieces = plan.pieces;
    // At most MAX_ORDERS orders, however many pieces a (claimed) size makes.
    let fewest = pieces.div_ceil(MAX_ORDERS);
    let n = takers.count() as u64;
    // The fewest pieces an order holds, and the pieces left it takes a share of.
    let (least, share_of) = match takers {
        _ if n == 1 => (ORDER_PIECES, 1),
        Takers::Threads(_) => ((pieces.div_ceil(n) / 8).clamp(1, LAST_ORDER_PIECES), 2 * n),
        Takers::Workers(_) => (pieces.div_ceil(4 * n).clamp(1, ORDER_PIECES), u64::MAX),
    };
    let (mut ranges, mut at) = (Vec::new(), 0);
    while at < pieces {
        let left = pieces - at;
        let size = left.div_ceil(share_of).clamp(least, ORDER_PIECES.max(least)).max(fewest).min(left);
        ranges.push(at..at + size);
        at += size;
    }
    if ranges.is_empty() {
        ranges.push(0..0);
    }
    ranges
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An F32 vector of `nbytes` bytes right after an 8-byte header.
    fn f32_ref(nbytes: u64) -> TensorRef {
        TensorRef {
            dtype: Dtype::Safetensors(StDtype::F32),
            shape: vec![nbytes / 4],
            file: 0,
            offset: 8,
            nbytes,
            file_len: 8 + nbytes,
            strides: None,
        }
    }

    /// Each part of a whole-tensor histogram reads its own pieces' bytes, each once, and none
    /// past them (a read-ahead that ran on into the next part's bytes would read them twice).
    #[test]
    fn a_histogram_part_reads_exactly_its_pieces() {
        let t = f32_ref(41 << 19); // 20.5 MiB of F32: 21 pieces of at most 1 MiB
        let (plan, _) = t.target(&Selection::Whole).unwrap();
        for pieces in [0..9, 9..plan.pieces, 0..plan.pieces, 3..4] {
            let (first, last) = (plan.piece(pieces.start).unwrap().bytes, plan.piece(pieces.end - 1).unwrap().bytes);
            let order =
                Order::Histogram { tensor: t.clone(), sel: Selection::Whole, scales: false, pieces: pieces.clone() };
            let mut read = 0;
            let job = order_job(&order).unwrap();
            super::super::run(job, vec![t.file_len], |_, r, buf| {
                assert!(first.start <= r.start && r.end <= last.end, "{pieces:?}: read {r:?} outside its pieces");
                read += r.len();
                buf.clear();
                buf.resize(r.len() as usize, 0);
                Ok(())
            })
            .unwrap();
            assert_eq!(read, plan.bytes_of(pieces.clone()), "{pieces:?}: each byte read once");
        }
    }

    /// One taker takes a tensor in orders as large as they go; threads share it in orders that
    /// shrink as the pieces left do, to an eighth of a thread's share and to at most 8 pieces;
    /// workers in four orders each, alike.
    #[test]
    fn one_taker_takes_the_largest_orders_threads_ever_smaller_ones_workers_even_ones() {
        let sizes = |mib: u64, takers| {
            let (plan, _) = f32_ref(mib << 20).target(&Selection::Whole).unwrap();
            piece_ranges(&plan, takers).iter().map(|r| r.end - r.start).collect::<Vec<u64>>()
        };
        for one in [Takers::Threads(1), Takers::Workers(1), Takers::Threads(0)] {
            assert_eq!(sizes(64, one), [64]);
            assert_eq!(sizes(100, one), [64, 36]);
        }
        assert_eq!(sizes(64, Takers::Threads(2)), [16, 12, 9, 7, 5, 4, 4, 4, 3]);
        assert_eq!(sizes(5, Takers::Threads(4)), [1; 5]);
        assert_eq!(sizes(3, Takers::Threads(8)), [1; 3]);
        let large = sizes(1024, Takers::Threads(2));
        assert_eq!(large[..13], [64; 13]);
        assert_eq!(large[13..], [48, 36, 27, 21, 15, 12, 9, 8, 8, 8]);
        assert_eq!(sizes(64, Takers::Workers(2)), [8; 8]);
        assert_eq!(sizes(5, Takers::Workers(4)), [1; 5]);
        assert_eq!(sizes(1024, Takers::Workers(2)), [64; 16]);
    }

    /// Orders tile a tensor's pieces, no more than MAX_ORDERS of them however big it claims to be.
    #[test]
    fn orders_tile_the_pieces_and_stay_few() {
        let cases = [(41u64 << 19, 2), (64 << 30, 4), (1 << 50, 2), (4, 1), (0, 2)];
        let takers =
            cases.into_iter().flat_map(|(nbytes, n)| [(nbytes, Takers::Threads(n)), (nbytes, Takers::Workers(n))]);
        for (nbytes, takers) in takers {
            let (plan, _) = f32_ref(nbytes).target(&Selection::Whole).unwrap();
            let ranges = piece_ranges(&plan, takers);
            assert!(ranges.len() as u64 <= MAX_ORDERS, "{nbytes}: {} orders", ranges.len());
            assert_eq!(ranges[0].start, 0);
            assert_eq!(ranges.last().unwrap().end, plan.pieces);
            assert!(
                ranges.windows(2).all(|w| w[0].end == w[1].start && w[0].start < w[0].end),
                "{nbytes}: no gap, no overlap"
            );
        }
    }

    /// A scan order of small tensors lying back to back reads them in one read, and reads
    /// nothing past the last.
    #[test]
    fn a_scan_order_reads_small_tensors_back_to_back_in_one_read() {
        let (n, each) = (100u64, 4096u64);
        let file_len = 8 + n * each + (1 << 20);
        let tref = |i: u64| TensorRef {
            dtype: Dtype::Safetensors(StDtype::F32),
            shape: vec![each / 4],
            file: 0,
            offset: 8 + i * each,
            nbytes: each,
            strides: None,
            file_len,
        };
        let order = Order::Scan { units: (0..n).map(|i| (tref(i), 0..1)).collect() };
        let mut reads = vec![];
        let job = order_job(&order).unwrap();
        super::super::run(job, vec![file_len], |_, r, buf| {
            reads.push(r);
            buf.clear();
            buf.resize(r.len() as usize, 0);
            Ok(())
        })
        .unwrap();
        assert_eq!(reads, vec![ByteRange::new(8, 8 + n * each)]);
    }

    #[test]
    fn span_and_compare_replies_survive_bytes_and_broken_ones_are_refused() {
        let spans = Order::Spans { spans: vec![(0, 0, 10), (1, 5, 9)] };
        let order = Order::from_bytes(&spans.to_bytes()).unwrap();
        let reply = Reply::Spans(vec!["ab".into(), "cd".into()]);
        let bytes = reply.to_bytes();
        assert!(matches!(Reply::from_bytes(&order, &bytes), Some(Reply::Spans(d)) if d == ["ab", "cd"]));
        for cut in 0..bytes.len() {
            assert!(Reply::from_bytes(&order, &bytes[..cut]).is_none(), "cut at {cut}");
        }
        let one = Reply::Spans(vec!["ab".into()]).to_bytes();
        assert!(Reply::from_bytes(&order, &one).is_none(), "one digest for two spans");
        let v = ValueDiff { compared: 3, nmse: 0.5, cosine: f64::NAN, max_abs: 2.0, identical: false };
        let t = TensorRef {
            dtype: Dtype::Safetensors(StDtype::F32),
            shape: vec![3],
            file: 0,
            offset: 8,
            nbytes: 12,
            file_len: 20,
            strides: None,
        };
        let cmp =
            Order::Compare { a: t.clone(), b: t, values: Values::Sample, pairing: Pairing::PlusOne { hf_is_a: true } };
        let cmp = Order::from_bytes(&cmp.to_bytes()).unwrap();
        let Some(Reply::Compare(back)) = Reply::from_bytes(&cmp, &Reply::Compare(v.clone()).to_bytes()) else {
            panic!()
        };
        assert_eq!((back.compared, back.nmse, back.max_abs, back.identical), (3, 0.5, 2.0, false));
        assert!(back.cosine.is_nan());
    }
}
