//! Reading a plan's pieces and handing their decoded values to a sink, sans-IO: the scan asks
//! for each piece's bytes, decodes them through a fixed buffer, and reports progress.

use super::decode::BlockCodec;
use super::histogram::Histogram;
use super::plan::{Piece, Plan};
use super::range::ByteRange;
use super::step::{Decoder, FeedError, Step};

/// Values decoded at a time: small enough to stay in cache.
const BATCH_ELEMS: usize = 1 << 14;

/// Receives a scan's pieces.
pub trait Sink {
    /// Whether this sink wants decoded values (`values`) or the raw bytes (`raw`).
    fn wants_values(&self) -> bool {
        true
    }
    /// Decoded values starting at tensor element `first_elem`, in storage order.
    fn values(&mut self, _first_elem: u64, _values: &[f32]) {}
    /// The per-block scales of the blocks just decoded.
    fn scales(&mut self, _scales: &[f32]) {}
    /// Whether `scales` is wanted.
    fn wants_scales(&self) -> bool {
        false
    }
    /// A piece's raw bytes, when `wants_values` is false.
    fn raw(&mut self, _bytes: &[u8]) {}
}

/// A scan of `plan` over blocks of `codec`, feeding `sink`.
pub struct Scan<S: Sink> {
    plan: Plan,
    codec: BlockCodec,
    sink: S,
    next: usize,
    buf: Vec<u8>,
    values: Vec<f32>,
    scales: Vec<f32>,
    done_bytes: u64,
}

impl<S: Sink> Scan<S> {
    pub fn new(plan: Plan, codec: BlockCodec, sink: S) -> Self {
        Scan { plan, codec, sink, next: 0, buf: Vec::new(), values: Vec::new(), scales: Vec::new(), done_bytes: 0 }
    }

    /// Bytes read so far and in all.
    pub fn progress(&self) -> (u64, u64) {
        (self.done_bytes + self.buf.len() as u64, self.plan.bytes)
    }

    /// The sink, as far as the scan has got (for a cancelled scan's partial result).
    pub fn sink(&self) -> &S {
        &self.sink
    }

    /// The sink, to drain output as the scan goes.
    pub fn sink_mut(&mut self) -> &mut S {
        &mut self.sink
    }

    fn finish_piece(&mut self, piece: &Piece) {
        if !self.sink.wants_values() {
            self.sink.raw(&self.buf);
            return;
        }
        let (be, bb) = (self.codec.block_elems, self.codec.block_bytes);
        let batch_blocks = (BATCH_ELEMS / be).max(1);
        let (mut skip, mut keep) = (piece.skip as usize, piece.keep as usize);
        let mut elem = piece.first_elem;
        for chunk in self.buf.chunks(batch_blocks * bb) {
            let n = chunk.len() / bb * be;
            self.values.resize(n, 0.0);
            (self.codec.decode)(chunk, &mut self.values);
            if let (true, Some(scales)) = (self.sink.wants_scales(), self.codec.scales) {
                self.scales.clear();
                scales(chunk, &mut self.scales);
                self.sink.scales(&self.scales);
            }
            let s = skip.min(n);
            let k = keep.min(n - s);
            if k > 0 {
                self.sink.values(elem, &self.values[s..s + k]);
            }
            elem += k as u64;
            skip -= s;
            keep -= k;
        }
    }
}

/// Stepping a finished scan again yields a fresh (empty) sink.
impl<S: Sink + Default> Decoder for Scan<S> {
    type Output = S;

    fn step(&mut self) -> Step<S> {
        loop {
            let Some(piece) = self.plan.pieces.get(self.next).cloned() else {
                return Step::Done(std::mem::take(&mut self.sink));
            };
            let have = piece.bytes.start + self.buf.len() as u64;
            if have < piece.bytes.end {
                return Step::Need(ByteRange::new(have, piece.bytes.end));
            }
            self.finish_piece(&piece);
            self.done_bytes += piece.bytes.len();
            self.buf.clear();
            self.next += 1;
        }
    }

    fn feed(&mut self, offset: u64, bytes: &[u8]) -> Result<(), FeedError> {
        let Some(piece) = self.plan.pieces.get(self.next) else {
            return Ok(());
        };
        let expected = piece.bytes.start + self.buf.len() as u64;
        if offset != expected {
            return Err(FeedError { expected, got: offset });
        }
        let room = (piece.bytes.end - expected) as usize;
        self.buf.extend_from_slice(&bytes[..bytes.len().min(room)]);
        Ok(())
    }
}

/// Histograms of a tensor's values and, for block types, of its block scales.
#[derive(Debug, Default)]
pub struct HistogramSink {
    pub values: Histogram,
    pub scales: Option<Histogram>,
}

impl HistogramSink {
    /// A sink that also collects block scales when `scales` is set.
    pub fn new(scales: bool) -> Self {
        HistogramSink { values: Histogram::default(), scales: scales.then(Histogram::default) }
    }
}

impl Sink for HistogramSink {
    fn values(&mut self, _first_elem: u64, values: &[f32]) {
        self.values.add(values);
    }
    fn wants_scales(&self) -> bool {
        self.scales.is_some()
    }
    fn scales(&mut self, scales: &[f32]) {
        if let Some(h) = &mut self.scales {
            h.add(scales);
        }
    }
}
