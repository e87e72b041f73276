//! Reading a plan's pieces and handing their decoded values (or raw bytes) to a sink, and the
//! NaN/Inf scan of every tensor built on it.

use super::wire::{Reader, Writer};
use super::{Job, JobStep, Need, Progress};
use crate::codes::{add_groups, CodeCounts};
use crate::decode::by_scale::ByScale;
use crate::decode::groups::{Group, Grouping, GroupsFn, MergedFn, Quad};
use crate::decode::{codec_for, layout, BlockCodec};
use crate::histogram::Histogram;
use crate::model::{Checkpoint, Lost, Tensor};
use crate::plan::{Plan, PlanError, Selection, READ_BYTES};
use crate::range::ByteRange;
use crate::step::FeedError;

/// Bytes of blocks decoded or taken apart at a time (about), each step after asking for the bytes
/// 2 KiB ahead: the page cache's pages are apart in memory, and the CPU's own prefetching stops at
/// each page's end (Q8_0 1.17-1.35x, Q5_1 1.26-1.28x; steps of 1 KiB measured alike or worse).
const STEP_BYTES: usize = 512;

/// Units (blocks or values) of `unit_bytes` taken at a time out of `total`, each step after asking
/// for its bytes ahead ([`STEP_BYTES`]): a multiple of `multiple`; where nothing is asked for
/// ahead (the workers' wasm), all of them in one step.
fn step_units(unit_bytes: usize, multiple: usize, total: usize) -> usize {
    if crate::ahead::FETCHES_AHEAD {
        (STEP_BYTES / unit_bytes).max(multiple).next_multiple_of(multiple)
    } else {
        total.max(1)
    }
}

/// Decode `src`'s whole blocks into `dst` a step at a time ([`step_units`]).
fn decode_fetching_ahead(codec: &BlockCodec, src: &[u8], dst: &mut [f32]) {
    let (be, bb) = (codec.block_elems, codec.block_bytes);
    let blocks = step_units(bb, 1, src.len() / bb);
    for (src, dst) in src.chunks(blocks * bb).zip(dst.chunks_mut(blocks * be)) {
        crate::ahead::fetch_ahead(src);
        (codec.decode)(src, dst);
    }
}

/// Values decoded at a time: small enough to stay in cache.
const BATCH_ELEMS: usize = 1 << 12;
/// Elements counted by group at a time (whole blocks): their groups stay in cache, and each
/// batch's fixed costs are spread over a few hundred groups whatever the block size.
const GROUP_BATCH_ELEMS: usize = 1 << 13;
/// Read-ahead of sequential scans.
pub(crate) const SCAN_READ_AHEAD: u64 = 8 << 20;

/// Receives a scan's pieces.
pub trait Sink {
    /// Whether this sink wants decoded values (`values`) or the raw bytes (`raw`).
    fn wants_values(&self) -> bool {
        true
    }
    /// Decoded values starting at tensor element `first_elem`, in storage order.
    fn values(&mut self, _first_elem: u64, _values: &[f32]) {}
    /// [`Sink::values`] for values read where they lie in the file's bytes (F32), not decoded
    /// into the core's cache.
    fn values_in_place(&mut self, first_elem: u64, values: &[f32]) {
        self.values(first_elem, values);
    }
    /// The per-block scales of the blocks just decoded.
    fn scales(&mut self, _scales: &[f32]) {}
    /// Whether `scales` is wanted.
    fn wants_scales(&self) -> bool {
        false
    }
    /// A piece's raw bytes, when `wants_values` is false.
    fn raw(&mut self, _bytes: &[u8]) {}
    /// Every value (or byte) of a piece was handed over.
    fn piece_done(&mut self) {}
    /// The scan is over: a last chance to turn what was gathered into the result.
    fn finish(&mut self) {}
}

/// Why a tensor's values cannot be read.
#[derive(Clone, Debug, PartialEq)]
pub enum ValuesError {
    /// The dtype has no decoder (its name).
    Undecodable(String),
    /// The data cannot be located.
    Lost(Lost),
    Plan(PlanError),
    /// A quantization scheme whose values are not decoded (why).
    Scheme(String),
    /// Two tensors compared element for element do not pair up (why).
    Shapes(String),
    /// The work needs the shape's own element order, which the tensor is not stored in (why).
    Order(String),
}

impl std::fmt::Display for ValuesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ValuesError::Undecodable(d) => write!(f, "values of dtype {d} cannot be decoded"),
            ValuesError::Lost(l) => write!(f, "the tensor's data cannot be read: {l}"),
            ValuesError::Plan(e) => write!(f, "{e}"),
            ValuesError::Scheme(why) | ValuesError::Shapes(why) | ValuesError::Order(why) => f.write_str(why),
        }
    }
}

/// The plan of `sel` over `t`, or why its values cannot be read, found without its decoder
/// (the page plans; the workers decode).
pub fn plan_target(t: &Tensor, sel: &Selection) -> Result<Plan, ValuesError> {
    if let (Selection::Elements { .. }, Some(strides)) = (sel, &t.strides) {
        return Err(ValuesError::Order(format!(
            "its elements are stored in another order (strides {strides:?}), so an element range of its shape is \
             not one span: read the whole tensor or a sample"
        )));
    }
    storage_plan(t, sel)
}

/// [`plan_target`] with element ranges taken in storage order, whatever order the tensor's
/// elements are stored in.
pub(crate) fn storage_plan(t: &Tensor, sel: &Selection) -> Result<Plan, ValuesError> {
    let block = layout(&t.dtype).ok_or_else(|| ValuesError::Undecodable(t.dtype.name()))?;
    let data = t.data.as_ref().map_err(|l| ValuesError::Lost(*l))?;
    crate::plan::plan(t.file, data, block, sel).map_err(ValuesError::Plan)
}

/// The plan of `sel` over `t` and the codec that decodes it, or why its values cannot be read.
pub fn scan_target(t: &Tensor, sel: &Selection) -> Result<(Plan, BlockCodec), ValuesError> {
    Ok((plan_target(t, sel)?, codec_of(t)?))
}

/// The codec of `t`'s dtype.
fn codec_of(t: &Tensor) -> Result<BlockCodec, ValuesError> {
    codec_for(&t.dtype).ok_or_else(|| ValuesError::Undecodable(t.dtype.name()))
}

/// A scan of one plan (or of a range of its pieces) over blocks of `codec`, feeding a sink.
pub struct ValueScan<S> {
    plan: Plan,
    codec: BlockCodec,
    sink: S,
    next: u64,
    /// The end of the pieces read (the plan's count unless this is a part).
    end: u64,
    piece: Option<crate::plan::Piece>,
    buf: Vec<u8>,
    values: Vec<f32>,
    scales: Vec<f32>,
    done_bytes: u64,
    /// Bytes this scan reads.
    total: u64,
}

impl<S: Sink> ValueScan<S> {
    pub fn new(plan: Plan, codec: BlockCodec, sink: S) -> Self {
        let pieces = 0..plan.pieces;
        ValueScan::part(plan, codec, sink, pieces)
    }

    /// A scan of pieces `pieces` of the plan only (a part read in parallel with others).
    pub fn part(plan: Plan, codec: BlockCodec, sink: S, pieces: std::ops::Range<u64>) -> Self {
        let end = pieces.end.min(plan.pieces);
        let total = plan.bytes_of(pieces.start..end);
        ValueScan {
            plan,
            codec,
            sink,
            next: pieces.start,
            end,
            total,
            piece: None,
            buf: Vec::new(),
            values: Vec::new(),
            scales: Vec::new(),
            done_bytes: 0,
        }
    }

    /// The plan being read.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// The sink, as far as the scan has got (for a cancelled scan's partial result).
    pub fn sink(&self) -> &S {
        &self.sink
    }

    /// The sink, to drain output as the scan goes.
    pub fn sink_mut(&mut self) -> &mut S {
        &mut self.sink
    }

    /// Take the sink out (the scan is spent), finished.
    pub fn into_sink(mut self) -> S {
        self.sink.finish();
        self.sink
    }

    /// Hand the piece's bytes `buf` (all of them) to the sink.
    fn finish_piece(&mut self, piece: &crate::plan::Piece, buf: &[u8]) {
        let (be, bb) = (self.codec.block_elems, self.codec.block_bytes);
        // Raw bytes go to a sink that wants them when they hold exactly the values kept: the
        // kept elements of an elementwise type, or whole blocks kept whole.
        let whole_blocks = piece.skip == 0 && piece.keep == piece.bytes.len() / bb as u64 * be as u64;
        if !self.sink.wants_values() && (be == 1 || whole_blocks) {
            let bytes =
                if be == 1 { &buf[piece.skip as usize * bb..(piece.skip + piece.keep) as usize * bb] } else { buf };
            self.sink.raw(bytes);
            if let (true, Some(scales)) = (self.sink.wants_scales(), self.codec.scales) {
                self.scales.clear();
                scales(bytes, &mut self.scales);
                self.sink.scales(&self.scales);
            }
            self.sink.piece_done();
            return;
        }
        let batch_blocks = (BATCH_ELEMS / be).max(1);
        // A piece is at most READ_BYTES + one block, so its counts fit a usize.
        let (mut skip, mut keep) = (piece.skip as usize, piece.keep as usize);
        let mut elem = piece.first_elem;
        for chunk in buf.chunks(batch_blocks * bb) {
            let n = chunk.len() / bb * be;
            // F32 is read where it lies (no copy); anything else is decoded.
            let in_place = self.codec.as_f32s(chunk);
            let values = match in_place {
                Some(v) => v,
                None => {
                    self.values.resize(n, 0.0);
                    decode_fetching_ahead(&self.codec, chunk, &mut self.values);
                    &self.values[..]
                }
            };
            if let (true, Some(scales)) = (self.sink.wants_scales(), self.codec.scales) {
                self.scales.clear();
                scales(chunk, &mut self.scales);
                self.sink.scales(&self.scales);
            }
            let s = skip.min(n);
            let k = keep.min(n - s);
            if k > 0 {
                if in_place.is_some() && crate::ahead::FETCHES_AHEAD {
                    self.sink.values_in_place(elem, &values[s..s + k]);
                } else {
                    self.sink.values(elem, &values[s..s + k]);
                }
            }
            elem += k as u64;
            skip -= s;
            keep -= k;
        }
        self.sink.piece_done();
    }

    /// Step the scan; `Done(())` once every piece went to the sink.
    fn advance(&mut self) -> Option<Need> {
        loop {
            let piece = match &self.piece {
                Some(p) => p.clone(),
                None => {
                    if self.next >= self.end {
                        return None;
                    }
                    let p = self.plan.piece(self.next)?;
                    debug_assert!(p.bytes.len() <= READ_BYTES + self.codec.block_bytes as u64);
                    self.piece = Some(p.clone());
                    p
                }
            };
            let have = piece.bytes.start + self.buf.len() as u64;
            if have < piece.bytes.end {
                return Some(Need { file: self.plan.file, range: ByteRange::new(have, piece.bytes.end) });
            }
            let buf = std::mem::take(&mut self.buf);
            self.finish_piece(&piece, &buf);
            self.buf = buf;
            self.piece_read(&piece);
        }
    }

    /// The piece being read went to the sink: on to the next.
    fn piece_read(&mut self, piece: &crate::plan::Piece) {
        self.done_bytes += piece.bytes.len();
        self.buf.clear();
        self.piece = None;
        self.next += 1;
    }

    fn take(&mut self, file: usize, offset: u64, bytes: &[u8]) -> Result<(), FeedError> {
        let Some(piece) = &self.piece else { return Ok(()) };
        let expected = piece.bytes.start + self.buf.len() as u64;
        if file != self.plan.file || offset != expected {
            return Err(FeedError { expected, got: offset });
        }
        let room = piece.bytes.end - expected;
        let take = usize::try_from(room).map_or(bytes.len(), |r| r.min(bytes.len()));
        if self.buf.is_empty() && take as u64 == room {
            // The whole piece is at hand: read it where it lies, not from a copy.
            let piece = piece.clone();
            self.finish_piece(&piece, &bytes[..take]);
            self.piece_read(&piece);
        } else {
            self.buf.extend_from_slice(&bytes[..take]);
        }
        Ok(())
    }

    fn scan_progress(&self) -> Progress {
        Progress { done: self.done_bytes + self.buf.len() as u64, total: self.total }
    }

    /// Whether the scan reads its pieces back to back.
    pub fn is_sequential(&self) -> bool {
        self.plan.is_sequential()
    }

    /// Sequential scans read ahead, never past their last piece.
    fn scan_read_ahead(&self) -> u64 {
        if self.is_sequential() {
            read_ahead_within(self.scan_progress())
        } else {
            0
        }
    }
}

/// A finished scan yields its sink.
impl<S: Sink + Default> Job for ValueScan<S> {
    type Output = S;

    fn step(&mut self) -> JobStep<S> {
        match self.advance() {
            Some(n) => JobStep::Need(n),
            None => {
                self.sink.finish();
                JobStep::Done(std::mem::take(&mut self.sink))
            }
        }
    }

    fn feed(&mut self, file: usize, offset: u64, bytes: &[u8]) -> Result<(), FeedError> {
        self.take(file, offset, bytes)
    }

    fn progress(&self) -> Progress {
        self.scan_progress()
    }

    fn read_ahead(&self) -> u64 {
        self.scan_read_ahead()
    }
}

/// Counts NaN and infinite values of one tensor.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct NonFiniteSink {
    pub values: u64,
    pub nan: u64,
    pub inf: u64,
}

impl Sink for NonFiniteSink {
    fn values(&mut self, _first_elem: u64, values: &[f32]) {
        self.values += values.len() as u64;
        let (nan, inf) = crate::decode::nonfinite_of(values);
        self.nan += nan;
        self.inf += inf;
    }
}

/// The NaN/Inf count of one tensor stored as a codec: from the stored bits where the codec can
/// (floats from each value's, block types from their scales'), else from the decoded values.
#[derive(Default)]
pub struct NonFiniteScan {
    pub counts: NonFiniteSink,
    /// The codec's count from bits, its block's bytes and values.
    bits: Option<(crate::decode::NonFiniteFn, usize, usize)>,
}

impl NonFiniteScan {
    pub fn for_codec(codec: &BlockCodec) -> Self {
        let bits = codec.nonfinite.map(|f| (f, codec.block_bytes, codec.block_elems));
        NonFiniteScan { counts: NonFiniteSink::default(), bits }
    }
}

impl Sink for NonFiniteScan {
    fn wants_values(&self) -> bool {
        self.bits.is_none()
    }

    fn values(&mut self, first_elem: u64, values: &[f32]) {
        self.counts.values(first_elem, values);
    }

    fn raw(&mut self, bytes: &[u8]) {
        if let Some((count, width, elems)) = self.bits {
            // A step at a time after asking for its bytes ahead, as blocks are decoded: F32's scan
            // 1.4x, F16's and BF16's 1.3x.
            let (mut nan, mut inf) = (0, 0);
            for step in bytes.chunks(step_units(width, 1, bytes.len() / width) * width) {
                crate::ahead::fetch_ahead(step);
                let (n, i) = count(step);
                nan += n;
                inf += i;
            }
            self.counts.values += (bytes.len() / width * elems) as u64;
            self.counts.nan += nan;
            self.counts.inf += inf;
        }
    }
}

/// What the NaN/Inf scan did with one tensor.
#[derive(Clone, Debug, PartialEq)]
pub enum ScanOutcome {
    /// Its dtype has no decoder (an info finding).
    NotDecodable(String),
    /// Its data cannot be located: a header finding already; nothing to add.
    Skipped,
    Counted(NonFiniteSink),
}

/// The NaN/Inf scan of every tensor of a checkpoint, one after the other.
pub struct NonFiniteJob {
    /// Per tensor: its plan and codec, or what the scan says of it without reading.
    targets: std::vec::IntoIter<Result<(Plan, BlockCodec), ScanOutcome>>,
    current: Option<ValueScan<NonFiniteScan>>,
    outcomes: Vec<ScanOutcome>,
    done_bytes: u64,
    total_bytes: u64,
}

/// What the NaN/Inf scan reads of each tensor of `cp`: its plan, or its outcome without reading.
pub fn plan_targets(cp: &Checkpoint) -> Vec<Result<Plan, ScanOutcome>> {
    cp.tensors
        .iter()
        .map(|t| match plan_target(t, &Selection::Whole) {
            Ok(p) => Ok(p),
            Err(ValuesError::Undecodable(d)) => Err(ScanOutcome::NotDecodable(d)),
            Err(_) => Err(ScanOutcome::Skipped),
        })
        .collect()
}

/// [`plan_targets`] with each plan's codec.
pub fn scan_targets(cp: &Checkpoint) -> Vec<Result<(Plan, BlockCodec), ScanOutcome>> {
    let with_codec = |(p, t): (Plan, &Tensor)| codec_of(t).map(|c| (p, c)).map_err(|_| ScanOutcome::Skipped);
    plan_targets(cp).into_iter().zip(cp.tensors.iter()).map(|(p, t)| p.and_then(|p| with_codec((p, t)))).collect()
}

/// The scan of every tensor of `cp`.
pub fn nonfinite_job(cp: &Checkpoint) -> NonFiniteJob {
    let targets = scan_targets(cp);
    let total_bytes = targets.iter().filter_map(|t| t.as_ref().ok()).map(|(p, _)| p.bytes).sum();
    NonFiniteJob {
        outcomes: Vec::with_capacity(targets.len()),
        targets: targets.into_iter(),
        current: None,
        done_bytes: 0,
        total_bytes,
    }
}

impl NonFiniteJob {
    /// Bytes this job reads in all.
    pub fn total_bytes(&self) -> u64 {
        self.total_bytes
    }

    /// Tensors finished so far.
    pub fn tensors_done(&self) -> usize {
        self.outcomes.len()
    }
}

impl Job for NonFiniteJob {
    type Output = Vec<ScanOutcome>;

    fn step(&mut self) -> JobStep<Vec<ScanOutcome>> {
        loop {
            if let Some(scan) = &mut self.current {
                if let Some(n) = scan.advance() {
                    return JobStep::Need(n);
                }
                let scan = self.current.take().expect("just matched");
                self.done_bytes += scan.total;
                self.outcomes.push(ScanOutcome::Counted(scan.into_sink().counts));
            }
            match self.targets.next() {
                None => return JobStep::Done(std::mem::take(&mut self.outcomes)),
                Some(Ok((plan, codec))) => {
                    self.current = Some(ValueScan::new(plan, codec, NonFiniteScan::for_codec(&codec)))
                }
                Some(Err(outcome)) => self.outcomes.push(outcome),
            }
        }
    }

    fn feed(&mut self, file: usize, offset: u64, bytes: &[u8]) -> Result<(), FeedError> {
        match &mut self.current {
            Some(s) => s.take(file, offset, bytes),
            None => Ok(()),
        }
    }

    fn progress(&self) -> Progress {
        let now = self.current.as_ref().map_or(0, |s| s.scan_progress().done);
        Progress { done: self.done_bytes + now, total: self.total_bytes }
    }

    fn read_ahead(&self) -> u64 {
        read_ahead_within(self.progress())
    }
}

/// The read-ahead of a sequential scan that has `p` left to read: it stops at the scan's end.
pub(crate) fn read_ahead_within(p: Progress) -> u64 {
    SCAN_READ_AHEAD.min(p.total.saturating_sub(p.done))
}

/// Histograms of a tensor's values and, for block types, of its block scales. Elementwise 8- and
/// 16-bit types are counted by stored code ([`CodeCounts`]), each distinct code converted once;
/// block types with groups ([`crate::decode::BlockCodec::groups`]) by group and code.
#[derive(Debug, Default)]
pub struct HistogramSink {
    pub values: Histogram,
    pub scales: Option<Histogram>,
    codes: Option<CodeCounts>,
    groups: Option<Grouped>,
    /// A part read in parallel: its codes stay counts until [`HistogramSink::join`].
    part: bool,
}

impl HistogramSink {
    /// A sink for values stored as `codec`; it also collects block scales when `scales` is set.
    pub fn new(codec: &BlockCodec, scales: bool) -> Self {
        HistogramSink {
            values: Histogram::default(),
            scales: scales.then(Histogram::default),
            codes: CodeCounts::for_codec(codec),
            groups: Grouped::for_codec(codec),
            part: false,
        }
    }

    /// A sink for one part of a tensor read in parallel (see [`Histogram::part`]).
    pub fn part(codec: &BlockCodec, scales: bool) -> Self {
        HistogramSink {
            values: Histogram::part(),
            scales: scales.then(Histogram::part),
            codes: CodeCounts::for_codec(codec),
            groups: Grouped::for_codec(codec),
            part: true,
        }
    }

    /// Append a part's result to its byte form (see [`super::work`]).
    pub fn write(&self, w: &mut Writer) {
        self.values.write(w);
        w.bool(self.scales.is_some());
        if let Some(h) = &self.scales {
            h.write(w);
        }
        w.bool(self.codes.is_some());
        if let Some(c) = &self.codes {
            c.write(w);
        }
    }

    /// Read a part's result written by [`HistogramSink::write`], whose codes (if it counted
    /// them) are those of `codes` ([`crate::codes::code_codec`]).
    pub fn read(codes: Option<&BlockCodec>, r: &mut Reader) -> Option<HistogramSink> {
        let values = Histogram::read(r)?;
        let scales = if r.bool()? { Some(Histogram::read(r)?) } else { None };
        let codes = if r.bool()? { Some(CodeCounts::read(codes?, r)?) } else { None };
        Some(HistogramSink { values, scales, codes, groups: None, part: true })
    }

    /// The sink of parts read in parallel, in their order.
    pub fn join(parts: Vec<HistogramSink>) -> HistogramSink {
        let want_scales = parts.iter().any(|p| p.scales.is_some());
        let mut codes: Option<CodeCounts> = None;
        let mut values = Vec::with_capacity(parts.len());
        let mut scales = Vec::new();
        for p in parts {
            if let Some(c) = p.codes {
                match &mut codes {
                    Some(all) => all.merge(c),
                    None => codes = Some(c),
                }
            }
            values.push(p.values);
            scales.extend(p.scales);
        }
        let values = match &codes {
            Some(c) => c.histogram(),
            None => Histogram::join(values),
        };
        HistogramSink {
            values,
            scales: want_scales.then(|| Histogram::join(scales)),
            codes: None,
            groups: None,
            part: false,
        }
    }
}

impl Sink for HistogramSink {
    fn wants_values(&self) -> bool {
        self.codes.is_none() && self.groups.is_none()
    }
    fn raw(&mut self, bytes: &[u8]) {
        if let Some(c) = &mut self.codes {
            c.add(bytes);
        } else if let Some(g) = &mut self.groups {
            g.add(&mut self.values, bytes);
        }
    }
    fn finish(&mut self) {
        if let Some(g) = &mut self.groups {
            g.release();
        }
        if self.part {
            self.values.finish_part();
            if let Some(h) = &mut self.scales {
                h.finish_part();
            }
            if let Some(c) = &mut self.codes {
                c.release();
            }
        } else if let Some(c) = self.codes.take() {
            self.values = c.histogram();
        }
    }
    fn values(&mut self, _first_elem: u64, values: &[f32]) {
        self.values.add_to_piece(values);
    }
    fn values_in_place(&mut self, _first_elem: u64, values: &[f32]) {
        self.values.add_in_place_to_piece(values);
    }
    fn wants_scales(&self) -> bool {
        self.scales.is_some()
    }
    fn scales(&mut self, scales: &[f32]) {
        if let Some(h) = &mut self.scales {
            h.add_to_piece(scales);
        }
    }
    fn piece_done(&mut self) {
        self.values.end_piece();
        if let Some(h) = &mut self.scales {
            h.end_piece();
        }
    }
}

/// Bytes a piece needs for its groups to be merged by scale ([`ByScale`]): a sample's 64 KiB
/// pieces ran 1.7x slower merged (as many distinct scales as groups, and tables grown for each).
const MERGED_PIECE_BYTES: usize = 256 << 10;

/// Whole blocks counted by group ([`add_groups`]), a batch of blocks at a time.
#[derive(Debug)]
struct Grouped {
    steps: Steps,
    batch: Batch,
}

/// How many bytes of whole blocks are taken apart at a time.
#[derive(Clone, Copy, Debug)]
struct Steps {
    /// A batch's, whose entries are counted together.
    batch: usize,
    /// A step's, after asking for its bytes ahead ([`step_units`]).
    step: usize,
}

/// A batch of groups, or of quads, and what fills it.
#[derive(Debug)]
enum Batch {
    Groups(fn(&[u8], &mut Vec<Group>), Vec<Group>),
    /// A type's blocks merged by their scales' bits as they are counted ([`Grouping::ByScale`]),
    /// and as groups, with a batch of them (for small pieces).
    ByScale(MergedFn<1>, GroupsFn, Vec<Group>, Box<ByScale<1>>),
    /// The same for blocks of two groups ([`Grouping::ByScalePairs`]).
    Pairs(MergedFn<2>, GroupsFn, Vec<Group>, Box<ByScale<2>>),
    Quads(fn(&[u8], &mut Vec<Quad>), Vec<Quad>),
    /// A type whose groups are a whole piece's ([`Grouping::ByScaleByte`]).
    Piece(fn(&[u8], &mut Vec<Group>), Vec<Group>),
}

impl Grouped {
    fn for_codec(codec: &BlockCodec) -> Option<Grouped> {
        let batch_bytes = (GROUP_BATCH_ELEMS / codec.block_elems).max(1) * codec.block_bytes;
        let batch = match codec.groups? {
            Grouping::Groups(f) => Batch::Groups(f, Vec::new()),
            Grouping::ByScale { merged, groups } => Batch::ByScale(merged, groups, Vec::new(), Box::default()),
            Grouping::ByScalePairs { merged, groups } => Batch::Pairs(merged, groups, Vec::new(), Box::default()),
            Grouping::Quads(f) => Batch::Quads(f, Vec::new()),
            Grouping::ByScaleByte(f) => Batch::Piece(f, Vec::new()),
        };
        // Steps of whole pairs of blocks (the 4-bit types count blocks two at a time).
        let step = step_units(codec.block_bytes, 2, batch_bytes / codec.block_bytes) * codec.block_bytes;
        Some(Grouped { steps: Steps { batch: batch_bytes, step }, batch })
    }

    /// Every piece was added: give back what only adding needs.
    fn release(&mut self) {
        match &mut self.batch {
            Batch::ByScale(.., by_scale) => by_scale.release(),
            Batch::Pairs(.., by_scale) => by_scale.release(),
            Batch::Groups(..) | Batch::Quads(..) | Batch::Piece(..) => {}
        }
    }

    fn add(&mut self, h: &mut Histogram, bytes: &[u8]) {
        match &mut self.batch {
            Batch::Groups(f, batch) => in_batches(bytes, self.steps, *f, batch, |b| add_groups(h, b)),
            // A small piece (a sample's) holds too few blocks a scale for merging to pay: its
            // blocks are counted as their groups.
            Batch::ByScale(_, f, batch, _) | Batch::Pairs(_, f, batch, _) if bytes.len() < MERGED_PIECE_BYTES => {
                in_batches(bytes, self.steps, *f, batch, |b| add_groups(h, b))
            }
            Batch::ByScale(merge, .., by_scale) => {
                in_steps(bytes, self.steps, |step| merge(step, by_scale));
                by_scale.count_with(|groups| add_groups(h, groups));
            }
            Batch::Pairs(merge, .., by_scale) => {
                in_steps(bytes, self.steps, |step| merge(step, by_scale));
                by_scale.count_with(|groups| add_groups(h, groups));
            }
            Batch::Quads(f, batch) => in_batches(bytes, self.steps, *f, batch, |b| add_groups(h, b)),
            Batch::Piece(f, groups) => {
                groups.clear();
                f(bytes, groups);
                add_groups(h, groups);
            }
        }
    }
}

/// Take `bytes` apart with `entries_of` a batch at a time (into `batch`), and hand each batch's
/// entries (groups or quads) to `take`. A batch is taken apart a step at a time, after
/// asking for the step's bytes ahead (as [`decode_fetching_ahead`]).
fn in_batches<T>(
    bytes: &[u8],
    steps: Steps,
    entries_of: fn(&[u8], &mut Vec<T>),
    batch: &mut Vec<T>,
    mut take: impl FnMut(&[T]),
) {
    for blocks in bytes.chunks(steps.batch) {
        batch.clear();
        in_steps(blocks, steps, |step| entries_of(step, batch));
        take(batch);
    }
}

/// `each(step)` for each step of `bytes`, after asking for the step's bytes ahead.
fn in_steps(bytes: &[u8], steps: Steps, mut each: impl FnMut(&[u8])) {
    for step in bytes.chunks(steps.step) {
        crate::ahead::fetch_ahead(step);
        each(step);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codes::tests::random_blocks;

    /// NaN and infinities counted from the stored bits a step at a time are every one of them:
    /// at a step's first and last value, and in a short last step.
    #[test]
    fn non_finite_bits_are_counted_across_steps() {
        use crate::decode::ggml;
        /// A value's stored bytes.
        type Store = fn(f32) -> Vec<u8>;
        let stored: [(BlockCodec, Store); 3] = [
            (ggml::F32, |v| v.to_le_bytes().to_vec()),
            (ggml::F16, |v| half::f16::from_f32(v).to_le_bytes().to_vec()),
            (ggml::BF16, |v| half::bf16::from_f32(v).to_le_bytes().to_vec()),
        ];
        for (codec, store) in stored {
            let per_step = STEP_BYTES / codec.block_bytes;
            let n = 5 * per_step + 7;
            let mut values = vec![1.5f32; n];
            let odd = [0, per_step - 1, per_step, 2 * per_step - 1, 3 * per_step + 1, n - 1];
            for (k, &at) in odd.iter().enumerate() {
                values[at] = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY][k % 3];
            }
            let bytes: Vec<u8> = values.iter().flat_map(|&v| store(v)).collect();
            let mut scan = NonFiniteScan::for_codec(&codec);
            assert!(!scan.wants_values(), "counted from bits");
            scan.raw(&bytes);
            assert_eq!(scan.counts, NonFiniteSink { values: n as u64, nan: 2, inf: 4 });
        }
    }

    /// Groups taken apart a step at a time, in batches, are those of one call over every
    /// block, in order (steps of an odd number of blocks too, and a short last step).
    #[test]
    fn groups_in_steps_and_batches_equal_one_call() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let key = |g: &Group| (g.a.to_bits(), g.b.to_bits(), g.table.as_ptr(), g.counts);
        for codec in crate::decode::groups::tests::GROUPED {
            let Some(Grouping::Groups(f) | Grouping::ByScale { groups: f, .. }) = codec.groups else { continue };
            let bytes = random_blocks(&codec, 333, &mut seed, false);
            let mut whole = Vec::new();
            f(&bytes, &mut whole);
            let bb = codec.block_bytes;
            for (batch_blocks, step_blocks) in [(333, 2), (40, 3), (7, 7), (1, 1)] {
                let (mut batch, mut stepped) = (Vec::new(), Vec::new());
                in_batches(&bytes, Steps { batch: batch_blocks * bb, step: step_blocks * bb }, f, &mut batch, |b| {
                    stepped.extend_from_slice(b)
                });
                assert_eq!(
                    whole.iter().map(key).collect::<Vec<_>>(),
                    stepped.iter().map(key).collect::<Vec<_>>(),
                    "{} blocks of {bb} bytes, batches of {batch_blocks}, steps of {step_blocks}",
                    whole.len()
                );
            }
        }
    }

    /// Decoding a few blocks at a time gives every value a whole decode gives, to the bit,
    /// whatever the block size (steps of one block, of several, and a last short step).
    #[test]
    fn decoding_in_steps_equals_one_decode() {
        use crate::decode::{ggml, st_dtypes};
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let codecs =
            [ggml::Q8_0, ggml::Q5_1, ggml::Q6_K, ggml::F16, st_dtypes::codec(crate::safetensors::Dtype::F8_E4M3)];
        for codec in codecs {
            for blocks in [1, 7, 333] {
                let bytes = random_blocks(&codec, blocks, &mut seed, false);
                let n = blocks * codec.block_elems;
                let (mut whole, mut stepped) = (vec![0f32; n], vec![1f32; n]);
                (codec.decode)(&bytes, &mut whole);
                decode_fetching_ahead(&codec, &bytes, &mut stepped);
                assert_eq!(
                    whole.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    stepped.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
                );
            }
        }
    }

    #[test]
    fn group_counts_give_the_value_histogram() {
        let grouped = crate::decode::groups::tests::GROUPED;
        let mut seed = 0x853c_49e6_748f_ea9bu64;
        for codec in grouped {
            for tame in [true, false] {
                let bytes = random_blocks(&codec, 700, &mut seed, tame);
                let mut values = vec![0f32; 700 * codec.block_elems];
                (codec.decode)(&bytes, &mut values);
                let mut by_value = Histogram::default();
                by_value.add(&values);
                let mut sink = HistogramSink::new(&codec, false);
                assert!(!sink.wants_values());
                for piece in bytes.chunks(codec.block_bytes * 97) {
                    sink.raw(piece);
                    sink.piece_done();
                }
                sink.finish();
                let (a, b) = (&sink.values.stats, &by_value.stats);
                let what = format!("{} bytes per block, tame {tame}", codec.block_bytes);
                assert_eq!(
                    (a.count, a.finite, a.nan, a.pos_inf, a.neg_inf, a.zero, a.min, a.max),
                    (b.count, b.finite, b.nan, b.pos_inf, b.neg_inf, b.zero, b.min, b.max),
                    "{what}"
                );
                assert_eq!(sink.values.bins(64), by_value.bins(64), "{what}");
                // The moments agree with the exact ones, in f64, as closely as summing values does.
                let finite: Vec<f64> = values.iter().filter(|v| v.is_finite()).map(|&v| f64::from(v)).collect();
                let mean = finite.iter().sum::<f64>() / finite.len() as f64;
                let std = (finite.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / finite.len() as f64).sqrt();
                let scale = std.max(mean.abs()).max(f64::MIN_POSITIVE);
                for (h, name) in [(a, "groups"), (b, "values")] {
                    assert!((h.mean - mean).abs() <= 1e-5 * scale, "{what} {name} mean {} vs {mean}", h.mean);
                    assert!((h.std() - std).abs() <= 1e-5 * scale, "{what} {name} std {} vs {std}", h.std());
                }
            }
        }
    }

    #[test]
    fn groups_merged_by_scale_give_the_value_histogram() {
        use crate::decode::groups::Grouping;
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let merged = crate::decode::groups::tests::GROUPED
            .into_iter()
            .filter(|c| matches!(c.groups, Some(Grouping::ByScale { .. } | Grouping::ByScalePairs { .. })));
        let mut codecs = 0;
        for codec in merged {
            codecs += 1;
            let bb = codec.block_bytes;
            // Pieces big enough to be merged, of blocks drawn from a few (so scales repeat).
            let few = random_blocks(&codec, 40, &mut seed, true);
            let piece_blocks = MERGED_PIECE_BYTES / bb + 1;
            let bytes: Vec<u8> = (0..2 * piece_blocks + 5)
                .flat_map(|i| {
                    let k = (i * 7 + i / 3) % 40;
                    few[k * bb..(k + 1) * bb].iter().copied()
                })
                .collect();
            let mut values = vec![0f32; bytes.len() / bb * codec.block_elems];
            (codec.decode)(&bytes, &mut values);
            let mut by_value = Histogram::default();
            by_value.add(&values);
            let mut sink = HistogramSink::new(&codec, false);
            for piece in bytes.chunks(piece_blocks * bb) {
                sink.raw(piece);
                sink.piece_done();
            }
            sink.finish();
            let (a, b) = (&sink.values.stats, &by_value.stats);
            let what = format!("{bb} bytes per block");
            assert_eq!(
                (a.count, a.finite, a.nan, a.zero, a.min, a.max),
                (b.count, b.finite, b.nan, b.zero, b.min, b.max),
                "{what}"
            );
            assert_eq!(sink.values.bins(64), by_value.bins(64), "{what}");
            let finite: Vec<f64> = values.iter().filter(|v| v.is_finite()).map(|&v| f64::from(v)).collect();
            let mean = finite.iter().sum::<f64>() / finite.len() as f64;
            let var = finite.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / finite.len() as f64;
            let scale = var.sqrt().max(mean.abs()).max(f64::MIN_POSITIVE);
            assert!((a.mean - mean).abs() <= 1e-9 * scale, "{what}: mean {} vs {mean}", a.mean);
            assert!((a.std() - var.sqrt()).abs() <= 1e-9 * scale, "{what}: std {} vs {}", a.std(), var.sqrt());
        }
        assert_eq!(codecs, 8);
    }
}
