//! The value diff of two tensors (of one checkpoint or of two): both sides decoded by the same
//! scans as histograms, element for element in numpy order, over windows of elements both
//! codecs read in whole blocks: a sample spread evenly over the tensor, or every element.
//! Memory stays bounded: one window of each side at a time.

use super::scan::{plan_target, storage_plan, Sink, ValueScan, ValuesError};
use super::{Job, JobStep, Progress};
use crate::decode::{codec_for, layout, BlockCodec};
use crate::model::Tensor;
use crate::names::{permuted_row, unpermuted_row};
use crate::npy::numpy_shape;
use crate::plan::{Plan, Selection};
use crate::stats::greater;
use crate::step::FeedError;

/// Which values to compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Values {
    /// [`SAMPLE_WINDOWS`] windows of about [`SAMPLE_WINDOW`] elements spread over the tensor
    /// (every element of a small one).
    Sample,
    /// Every element.
    All,
}

/// Windows of a sample, and their elements (rounded up to whole blocks of both sides).
pub const SAMPLE_WINDOWS: u64 = 64;
pub const SAMPLE_WINDOW: u64 = 4096;
/// Elements per window when every element is compared.
const ALL_WINDOW: u64 = 1 << 20;
/// Most windows of a comparison of every element (2^36 elements: real tensors hold up to a few
/// 2^30; the windows are made before any is read).
const MAX_WINDOWS: u64 = 1 << 16;
/// Most rows of a permuted weight paired one by one (each row is a window of its own; real
/// attention weights have thousands).
const MAX_PAIRED_ROWS: u64 = 1 << 16;

/// How far two tensors' values are apart, over the elements compared.
#[derive(Clone, Debug, PartialEq)]
pub struct ValueDiff {
    /// Pairs compared (both values finite; other pairs count in `identical` only).
    pub compared: u64,
    /// Σ(a−b)² / Σa² (0 when both are all zeros; infinite when only A is).
    pub nmse: f64,
    /// Σab / √(Σa² Σb²) (1 when both are all zeros, 0 when one is).
    pub cosine: f64,
    pub max_abs: f64,
    /// Whether every pair was bit for bit equal (NaN matching NaN).
    pub identical: bool,
}

/// Why two tensors' values cannot be compared.
#[derive(Clone, Debug, PartialEq)]
pub enum CompareError {
    /// A side cannot be read (its dtype, or where its data lies).
    Values(ValuesError),
    /// The sides hold different shapes (in numpy order).
    Shapes(Vec<u64>, Vec<u64>),
}

impl std::fmt::Display for CompareError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CompareError::Values(e) => write!(f, "{e}"),
            CompareError::Shapes(a, b) => write!(f, "the shapes differ: {a:?} and {b:?}"),
        }
    }
}

/// Where B's elements lie for A's (see [`crate::names::Placement`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pairing {
    /// Element for element.
    Same,
    /// One side is expert `index` of the other's stacked `[experts, …]` tensor.
    Expert { index: u64, stacked_is_b: bool },
    /// llama's Q/K row permutation, `heads` heads; `hf_is_a` when A holds the Hugging Face rows.
    PermutedRows { heads: u64, hf_is_a: bool },
    /// Element for element, the GGUF side holding the Hugging Face value plus one (gemma's
    /// norms): one is added to the Hugging Face side (A when `hf_is_a`) before comparing.
    PlusOne { hf_is_a: bool },
}

/// Collects a window's values in order (into a buffer kept from window to window: a fresh one
/// grew by copies and faulted its pages in, a third of a comparison's time).
#[derive(Debug, Default)]
struct Collect(Vec<f32>);

impl Collect {
    /// A collector into `buffer`, emptied.
    fn into(mut buffer: Vec<f32>) -> Collect {
        buffer.clear();
        Collect(buffer)
    }
}

impl Sink for Collect {
    fn values(&mut self, _first_elem: u64, values: &[f32]) {
        self.0.extend_from_slice(values);
    }
}

/// The windows of `a` and `b` compared (`values`: a sample or every element; B's file indices
/// after A's), or why they cannot be: the checks of [`compare_job`] without its decoders (the
/// page plans; the workers decode).
pub fn compare_plan(
    a: &Tensor,
    b: &Tensor,
    b_files: usize,
    values: Values,
    pairing: Pairing,
) -> Result<ComparePlan, CompareError> {
    let (sa, sb) = (numpy_shape(a), numpy_shape(b));
    // The shape both sides are compared in.
    let shape = match pairing {
        Pairing::Expert { stacked_is_b: true, .. } if sb.len() == sa.len() + 1 && sb[1..] == sa[..] => sa.clone(),
        Pairing::Expert { stacked_is_b: false, .. } if sa.len() == sb.len() + 1 && sa[1..] == sb[..] => sb.clone(),
        Pairing::Same | Pairing::PermutedRows { .. } | Pairing::PlusOne { .. } if sa == sb => sa.clone(),
        _ => return Err(CompareError::Shapes(sa, sb)),
    };
    // A transposed view is compared in its storage order, so only with one stored alike.
    let in_order = matches!(pairing, Pairing::Same | Pairing::PlusOne { .. }) && a.strides == b.strides;
    if !(a.row_major() && b.row_major() || in_order) {
        let why = "one side stores its elements in another order (a transposed view): they are not compared element \
                   by element";
        return Err(CompareError::Values(ValuesError::Shapes(why.into())));
    }
    let mut b = b.clone();
    b.file += b_files;
    let block_elems =
        |t: &Tensor| layout(&t.dtype).ok_or_else(|| CompareError::Values(ValuesError::Undecodable(t.dtype.name())));
    let (ea, eb) = (block_elems(a)?.0, block_elems(&b)?.0);
    // Both sides' data located in their files first: the windows below then number no more
    // than the bytes there allow, whatever a shape claims.
    for t in [a, &b] {
        plan_target(t, &Selection::Whole).map_err(CompareError::Values)?;
    }
    let elems =
        shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d)).ok_or(CompareError::Shapes(sa.clone(), sb.clone()))?;
    let unit = lcm(ea, eb);
    if values == Values::All && elems / ALL_WINDOW > MAX_WINDOWS {
        let why = format!("{elems} elements are too many to compare every one (at most {})", MAX_WINDOWS * ALL_WINDOW);
        return Err(CompareError::Values(ValuesError::Shapes(why)));
    }
    let pairs: Vec<((u64, u64), (u64, u64))> = match pairing {
        Pairing::Same | Pairing::PlusOne { .. } => windows(elems, unit, values).into_iter().map(|w| (w, w)).collect(),
        Pairing::Expert { index, stacked_is_b } => {
            // The expert must be one the stack holds (its index comes from a tensor's name).
            let experts = if stacked_is_b { sb.first() } else { sa.first() }.copied().unwrap_or(0);
            if index >= experts {
                let why = format!("expert {index} of a stack of {experts}");
                return Err(CompareError::Values(ValuesError::Shapes(why)));
            }
            // index < experts, and the stack's elements (experts × elems) fit a u64: no overflow.
            let at = index * elems;
            let shift = |(s, e): (u64, u64)| (s + at, e + at);
            windows(elems, unit, values)
                .into_iter()
                .map(|w| if stacked_is_b { (w, shift(w)) } else { (shift(w), w) })
                .collect()
        }
        Pairing::PermutedRows { heads, hf_is_a } => {
            let rows = shape.first().copied().unwrap_or(0);
            if values == Values::All && rows > MAX_PAIRED_ROWS {
                let why = format!("{rows} rows are too many to pair one by one (at most {MAX_PAIRED_ROWS})");
                return Err(CompareError::Values(ValuesError::Shapes(why)));
            }
            let cols = elems.checked_div(rows).unwrap_or(0);
            let mut out = Vec::new();
            for r in row_windows(rows, values) {
                let other = if hf_is_a { permuted_row(r, rows, heads) } else { unpermuted_row(r, rows, heads) };
                let o = other.ok_or(CompareError::Shapes(sa.clone(), sb.clone()))?;
                out.push(((r * cols, (r + 1) * cols), (o * cols, (o + 1) * cols)));
            }
            out
        }
    };
    let mut plans = Vec::with_capacity(pairs.len());
    for ((a0, a1), (b0, b1)) in pairs {
        let side =
            |t: &Tensor, start, end| storage_plan(t, &Selection::Elements { start, end }).map_err(CompareError::Values);
        plans.push((side(a, a0, a1)?, side(&b, b0, b1)?));
    }
    let shift = match pairing {
        Pairing::PlusOne { hf_is_a: true } => (1.0, 0.0),
        Pairing::PlusOne { hf_is_a: false } => (0.0, 1.0),
        _ => (0.0, 0.0),
    };
    Ok(ComparePlan { plans, shift })
}

/// The windows two tensors are compared in, as plans of A's and B's reads, and the shift
/// added to each side's values.
pub struct ComparePlan {
    plans: Vec<(Plan, Plan)>,
    shift: (f32, f32),
}

impl ComparePlan {
    /// Bytes the comparison reads.
    pub fn bytes(&self) -> u64 {
        self.plans.iter().map(|(pa, pb)| pa.bytes + pb.bytes).sum()
    }
}

/// The value diff job of `a` and `b`, their elements paired as `pairing` says. `b_files` is
/// where B's files start among the job's files (0 for two tensors of one checkpoint; A's file
/// count for two checkpoints).
pub fn compare_job(
    a: &Tensor,
    b: &Tensor,
    b_files: usize,
    values: Values,
    pairing: Pairing,
) -> Result<CompareJob, CompareError> {
    let plan = compare_plan(a, b, b_files, values, pairing)?;
    let total = plan.bytes();
    let codec =
        |t: &Tensor| codec_for(&t.dtype).ok_or_else(|| CompareError::Values(ValuesError::Undecodable(t.dtype.name())));
    let (ca, cb) = (codec(a)?, codec(b)?);
    let plans: Vec<Side> = plan.plans.into_iter().map(|(pa, pb)| ((pa, ca), (pb, cb))).collect();
    let acc = Acc { shift: plan.shift, ..Acc::default() };
    Ok(CompareJob {
        plans: plans.into_iter(),
        current: None,
        a_values: Vec::new(),
        spare: Vec::new(),
        acc,
        done: 0,
        total,
    })
}

/// The rows compared of a permuted weight: every row, or [`SAMPLE_WINDOWS`] spread evenly.
fn row_windows(rows: u64, values: Values) -> Vec<u64> {
    match values {
        Values::All => (0..rows).collect(),
        Values::Sample if rows <= SAMPLE_WINDOWS => (0..rows).collect(),
        Values::Sample => (0..SAMPLE_WINDOWS).map(|k| k * (rows - 1) / (SAMPLE_WINDOWS - 1)).collect(),
    }
}

/// Element windows `(start, end)` of a tensor of `elems` elements, starting on multiples of
/// `unit`.
fn windows(elems: u64, unit: u64, values: Values) -> Vec<(u64, u64)> {
    let (size, most) = match values {
        Values::Sample => (SAMPLE_WINDOW.div_ceil(unit) * unit, SAMPLE_WINDOWS),
        Values::All => (ALL_WINDOW.div_ceil(unit) * unit, u64::MAX),
    };
    let needed = elems.div_ceil(size);
    if needed <= most {
        return (0..needed).map(|k| (k * size, ((k + 1) * size).min(elems))).collect();
    }
    // Spread evenly: first window at 0, last ending at the end (both block-aligned).
    let last = (elems - size) / unit * unit;
    (0..most)
        .map(|k| {
            let start = ((u128::from(last) * u128::from(k) / u128::from(most - 1)) as u64) / unit * unit;
            (start, start + size)
        })
        .collect()
}

fn lcm(a: u64, b: u64) -> u64 {
    let gcd = |mut x: u64, mut y: u64| {
        while y != 0 {
            (x, y) = (y, x % y);
        }
        x
    };
    (a / gcd(a, b).max(1)).saturating_mul(b).max(1)
}

/// Sums over the pairs seen, in `f64`.
#[derive(Debug, Clone)]
struct Acc {
    compared: u64,
    diff2: f64,
    a2: f64,
    b2: f64,
    ab: f64,
    max_abs: f64,
    identical: bool,
    /// Added to each A and B value (in `f32`, as a converter would) before comparing.
    shift: (f32, f32),
}

impl Default for Acc {
    fn default() -> Self {
        Acc { compared: 0, diff2: 0.0, a2: 0.0, b2: 0.0, ab: 0.0, max_abs: 0.0, identical: true, shift: (0.0, 0.0) }
    }
}

/// Lanes a window's pairs are summed in: pair `i` goes to lane `i % LANES`, and the lanes are
/// added pairwise into the totals at the window's end. Independent lanes make the loop one of
/// vectors (a sum of one pair after another took 2.5 ns a pair, waiting on its additions).
const LANES: usize = 8;

/// A window's sums, lane by lane.
#[derive(Clone, Copy)]
struct Lanes {
    compared: [u64; LANES],
    diff2: [f64; LANES],
    a2: [f64; LANES],
    b2: [f64; LANES],
    ab: [f64; LANES],
    max_abs: [f64; LANES],
    /// Whether a pair of the lane differed in its bits.
    differ: [bool; LANES],
}

impl Default for Lanes {
    fn default() -> Self {
        Lanes {
            compared: [0; LANES],
            diff2: [0.0; LANES],
            a2: [0.0; LANES],
            b2: [0.0; LANES],
            ab: [0.0; LANES],
            max_abs: [0.0; LANES],
            differ: [false; LANES],
        }
    }
}

impl Lanes {
    /// Add pair `(x, y)` (shifted, when `SHIFT`, by `shift`) to lane `i`; without a branch, so
    /// that the lanes' loop is one of vectors.
    #[inline(always)]
    fn add<const SHIFT: bool>(&mut self, i: usize, x: f32, y: f32, shift: (f32, f32)) {
        let (x, y) = if SHIFT { (x + shift.0, y + shift.1) } else { (x, y) };
        let same = x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan());
        let finite = x.is_finite() && y.is_finite();
        let (x, y) = if finite { (f64::from(x), f64::from(y)) } else { (0.0, 0.0) };
        let d = x - y;
        self.compared[i] += u64::from(finite);
        self.diff2[i] += d * d;
        self.a2[i] += x * x;
        self.b2[i] += y * y;
        self.ab[i] += x * y;
        self.max_abs[i] = greater(self.max_abs[i], d.abs());
        self.differ[i] |= !same;
    }
}

/// The lanes' sum, in pairs: `((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7))`.
fn pairwise(l: [f64; LANES]) -> f64 {
    ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]))
}

impl Acc {
    /// Add a window's pairs: A's values and B's, element for element.
    fn add(&mut self, a: &[f32], b: &[f32]) {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx512f") {
                #[target_feature(enable = "avx512f")]
                unsafe fn avx512(acc: &mut Acc, a: &[f32], b: &[f32]) {
                    acc.add_with(a, b)
                }
                // SAFETY: detected just now.
                return unsafe { avx512(self, a, b) };
            }
            if std::is_x86_feature_detected!("avx2") {
                #[target_feature(enable = "avx2")]
                unsafe fn avx2(acc: &mut Acc, a: &[f32], b: &[f32]) {
                    acc.add_with(a, b)
                }
                // SAFETY: detected just now.
                return unsafe { avx2(self, a, b) };
            }
        }
        self.add_with(a, b)
    }

    /// [`Acc::add`], inlined into each instruction set's copy: the same operations in the same
    /// order, so the same sums on every CPU and in the browser.
    #[inline(always)]
    fn add_with(&mut self, a: &[f32], b: &[f32]) {
        if a.len() != b.len() {
            self.identical = false;
        }
        let n = a.len().min(b.len());
        let lanes = if self.shift == (0.0, 0.0) {
            lanes::<false>(&a[..n], &b[..n], self.shift)
        } else {
            lanes::<true>(&a[..n], &b[..n], self.shift)
        };
        self.compared += lanes.compared.iter().sum::<u64>();
        self.diff2 += pairwise(lanes.diff2);
        self.a2 += pairwise(lanes.a2);
        self.b2 += pairwise(lanes.b2);
        self.ab += pairwise(lanes.ab);
        self.max_abs = lanes.max_abs.into_iter().fold(self.max_abs, greater);
        self.identical &= !lanes.differ.contains(&true);
    }

    fn result(&self) -> ValueDiff {
        let nmse = match (self.a2 > 0.0, self.diff2 > 0.0) {
            (true, _) => self.diff2 / self.a2,
            (false, false) => 0.0,
            (false, true) => f64::INFINITY,
        };
        let cosine = match (self.a2 > 0.0, self.b2 > 0.0) {
            (true, true) => self.ab / (self.a2 * self.b2).sqrt(),
            (false, false) => 1.0,
            _ => 0.0,
        };
        ValueDiff { compared: self.compared, nmse, cosine, max_abs: self.max_abs, identical: self.identical }
    }
}

/// The sums of pairs `a[i], b[i]` (of equal lengths), lane by lane.
#[inline(always)]
fn lanes<const SHIFT: bool>(a: &[f32], b: &[f32], shift: (f32, f32)) -> Lanes {
    let mut lanes = Lanes::default();
    let ((a8, a_rest), (b8, b_rest)) = (a.as_chunks::<LANES>(), b.as_chunks::<LANES>());
    for (x, y) in a8.iter().zip(b8) {
        for i in 0..LANES {
            lanes.add::<SHIFT>(i, x[i], y[i], shift);
        }
    }
    for (i, (&x, &y)) in a_rest.iter().zip(b_rest).enumerate() {
        lanes.add::<SHIFT>(i, x, y, shift);
    }
    lanes
}

/// The plan and codec of one side of a window.
type Target = (Plan, BlockCodec);
/// A window: A's side, then B's.
type Side = (Target, Target);

/// Reads each window of A, then the same window of B, and compares them.
pub struct CompareJob {
    plans: std::vec::IntoIter<Side>,
    /// The scan under way: of A (with B's plan next) or of B.
    current: Option<(ValueScan<Collect>, Option<Target>)>,
    a_values: Vec<f32>,
    /// B's buffer of the last window, for the next window's A.
    spare: Vec<f32>,
    acc: Acc,
    done: u64,
    total: u64,
}

impl Job for CompareJob {
    type Output = ValueDiff;

    fn step(&mut self) -> JobStep<ValueDiff> {
        loop {
            if let Some((scan, then_b)) = &mut self.current {
                match scan.step() {
                    JobStep::Need(n) => return JobStep::Need(n),
                    JobStep::Done(Collect(values)) => {
                        self.done += scan.progress().total;
                        match then_b.take() {
                            Some((plan, codec)) => {
                                let last_a = std::mem::replace(&mut self.a_values, values);
                                self.current = Some((ValueScan::new(plan, codec, Collect::into(last_a)), None));
                            }
                            None => {
                                self.acc.add(&self.a_values, &values);
                                self.spare = values;
                                self.current = None;
                            }
                        }
                        continue;
                    }
                }
            }
            match self.plans.next() {
                None => return JobStep::Done(self.acc.result()),
                Some(((pa, ca), b)) => {
                    let buffer = Collect::into(std::mem::take(&mut self.spare));
                    self.current = Some((ValueScan::new(pa, ca, buffer), Some(b)))
                }
            }
        }
    }

    fn feed(&mut self, file: usize, offset: u64, bytes: &[u8]) -> Result<(), FeedError> {
        match &mut self.current {
            Some((scan, _)) => scan.feed(file, offset, bytes),
            None => Ok(()),
        }
    }

    fn progress(&self) -> Progress {
        let now = self.current.as_ref().map_or(0, |(s, _)| s.progress().done);
        Progress { done: self.done + now, total: self.total }
    }

    fn read_ahead(&self) -> u64 {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_cover_small_tensors_and_spread_over_big_ones() {
        assert_eq!(windows(10_000, 256, Values::Sample), vec![(0, 4096), (4096, 8192), (8192, 10_000)]);
        let w = windows(100_000_000, 256, Values::Sample);
        assert_eq!(w.len() as u64, SAMPLE_WINDOWS);
        assert_eq!(w[0], (0, 4096));
        assert_eq!(w.last().unwrap().1, (100_000_000 - 4096) / 256 * 256 + 4096);
        assert!(w.iter().all(|&(s, e)| s % 256 == 0 && e - s == 4096 && e <= 100_000_000));
        assert!(w.windows(2).all(|p| p[0].1 <= p[1].0), "no overlap");
        let all = windows(3 << 20, 32, Values::All);
        assert_eq!(all, vec![(0, 1 << 20), (1 << 20, 2 << 20), (2 << 20, 3 << 20)]);
        assert_eq!(windows(0, 1, Values::Sample), vec![]);
        assert_eq!(lcm(256, 32), 256);
        assert_eq!(lcm(1, 1), 1);
        assert_eq!(lcm(64, 256), 256);
    }

    fn f32_tensor(shape: &[u64], file_len: u64) -> Tensor {
        use crate::model::{Dtype, Extent};
        use crate::safetensors::Dtype as St;
        let dtype = Dtype::Safetensors(St::F32);
        let bytes = shape.iter().try_fold(4u64, |n, &d| n.checked_mul(d));
        let data = match bytes {
            Some(b) => Extent::check(&dtype, shape, 0, b, file_len),
            None => Err(crate::model::Lost::NoSize),
        };
        Tensor {
            name: "t".into(),
            dtype,
            shape: shape.to_vec(),
            file: 0,
            offset: Some(0),
            nbytes: 0,
            data,
            strides: None,
        }
    }

    #[test]
    fn shapes_a_file_cannot_hold_are_refused_before_any_window_is_made() {
        // 2^62 elements whose data is lost: no 2^42 windows are built to find that out.
        let huge = f32_tensor(&[1 << 62], 1 << 40);
        assert!(huge.data.is_err());
        let e = compare_job(&huge, &huge, 1, Values::All, Pairing::Same).err().expect("refused");
        assert!(matches!(e, CompareError::Values(ValuesError::Lost(_))), "{e}");
        // A real 4 GiB F32 weight of 2^27 rows of 8: pairing its rows one by one is refused.
        let tall = f32_tensor(&[1 << 27, 8], 1 << 32);
        assert!(tall.data.is_ok());
        let e = compare_job(&tall, &tall, 1, Values::All, Pairing::PermutedRows { heads: 8, hf_is_a: true })
            .err()
            .expect("refused");
        assert!(e.to_string().contains("134217728 rows are too many"), "{e}");
        // Sampled, the same pair is compared in a few windows.
        let job = compare_job(&tall, &tall, 1, Values::Sample, Pairing::PermutedRows { heads: 8, hf_is_a: true });
        assert!(job.is_ok());
    }

    #[test]
    fn comparing_every_element_of_a_tensor_past_2_pow_36_elements_is_refused() {
        // A (remote) file claiming 2 TiB: its windows would be made before any byte is read.
        let huge = f32_tensor(&[1 << 39], 1 << 42);
        assert!(huge.data.is_ok());
        let e = compare_job(&huge, &huge, 1, Values::All, Pairing::Same).err().expect("refused");
        assert!(e.to_string().contains("too many to compare every one"), "{e}");
        assert!(compare_job(&huge, &huge, 1, Values::Sample, Pairing::Same).is_ok(), "a sample still is");
    }

    #[test]
    fn an_expert_the_stack_does_not_hold_is_refused() {
        let (stack, one) = (f32_tensor(&[4, 8], 1 << 20), f32_tensor(&[8], 1 << 20));
        let pair = |index| Pairing::Expert { index, stacked_is_b: true };
        assert!(compare_job(&one, &stack, 1, Values::All, pair(3)).is_ok());
        for index in [4, u64::MAX / 8, u64::MAX] {
            let e = compare_job(&one, &stack, 1, Values::All, pair(index)).err().expect("refused");
            assert!(e.to_string().contains(&format!("expert {index} of a stack of 4")), "{e}");
        }
    }

    /// Sums taken in lanes equal those taken pair after pair (to rounding), over windows of any
    /// length (a last partial row of lanes), with NaN and infinities (not compared) anywhere,
    /// shifted or not; and every CPU's copy gives the same bits as the portable one.
    #[test]
    fn lanes_sum_as_pair_after_pair_does() {
        fn next(seed: &mut u64) -> u64 {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            *seed
        }
        /// A value in −8..8, or (one in 97) a special one.
        fn value(seed: &mut u64, k: u64) -> f32 {
            let special = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, 0.0];
            let r = next(seed);
            if r % 97 == k {
                special[(r >> 8) as usize % special.len()]
            } else {
                (r >> 40) as f32 / 1e6 - 8.0
            }
        }
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for (len, shift) in [(0, (0.0, 0.0)), (5, (0.0, 0.0)), (8, (1.0, 0.0)), (1003, (0.0, 0.0)), (4099, (0.0, 1.0))]
        {
            let a: Vec<f32> = (0..len).map(|_| value(&mut seed, 3)).collect();
            let b: Vec<f32> =
                a.iter().map(|&x| if next(&mut seed).is_multiple_of(3) { x } else { value(&mut seed, 5) }).collect();
            let mut lanes = Acc { shift, ..Acc::default() };
            lanes.add(&a, &b);
            let mut portable = Acc { shift, ..Acc::default() };
            portable.add_with(&a, &b);
            let bits = |acc: &Acc| {
                let r = acc.result();
                (r.compared, r.nmse.to_bits(), r.cosine.to_bits(), r.max_abs.to_bits(), r.identical)
            };
            assert_eq!(bits(&lanes), bits(&portable), "{len} pairs");
            // Pair after pair.
            let (mut compared, mut d2, mut a2, mut b2, mut ab, mut max, mut identical) =
                (0, 0f64, 0f64, 0f64, 0f64, 0f64, true);
            for (&x, &y) in a.iter().zip(&b) {
                let (x, y) = if shift == (0.0, 0.0) { (x, y) } else { (x + shift.0, y + shift.1) };
                identical &= x.to_bits() == y.to_bits() || x.is_nan() && y.is_nan();
                if x.is_finite() && y.is_finite() {
                    let (x, y) = (f64::from(x), f64::from(y));
                    compared += 1;
                    (d2, a2, b2, ab, max) =
                        (d2 + (x - y) * (x - y), a2 + x * x, b2 + y * y, ab + x * y, max.max((x - y).abs()));
                }
            }
            let r = lanes.result();
            assert_eq!((r.compared, r.max_abs, r.identical), (compared, max, identical), "{len} pairs");
            if a2 > 0.0 {
                assert!((r.nmse - d2 / a2).abs() <= 1e-12 * r.nmse.max(1.0), "{len} pairs: nmse {}", r.nmse);
                assert!((r.cosine - ab / (a2 * b2).sqrt()).abs() <= 1e-12, "{len} pairs: cosine {}", r.cosine);
            }
        }
        // A pair of zeros of two signs differs in its bits; a NaN matches a NaN.
        let mut acc = Acc::default();
        acc.add(&[1.0; 9], &[1.0; 9]);
        acc.add(&[f32::NAN, 0.0], &[f32::NAN, 0.0]);
        assert!(acc.result().identical);
        acc.add(&[0.0], &[-0.0]);
        assert!(!acc.result().identical);
        // Windows of unequal lengths are not identical.
        let mut short = Acc::default();
        short.add(&[1.0, 2.0], &[1.0]);
        assert!(!short.result().identical);
    }

    #[test]
    fn sums_give_nmse_cosine_and_identity() {
        let mut acc = Acc::default();
        acc.add(&[1.0, 2.0, f32::NAN], &[1.0, 2.0, f32::NAN]);
        let r = acc.result();
        assert_eq!((r.compared, r.nmse, r.cosine, r.max_abs, r.identical), (2, 0.0, 1.0, 0.0, true));
        acc.add(&[3.0], &[1.0]);
        let r = acc.result();
        assert!(!r.identical);
        assert!((r.nmse - 4.0 / 14.0).abs() < 1e-15 && r.max_abs == 2.0);
        assert!((r.cosine - 8.0 / (14f64 * 6.0).sqrt()).abs() < 1e-15);
        let mut zeros = Acc::default();
        zeros.add(&[0.0, 0.0], &[0.0, 1.0]);
        assert_eq!((zeros.result().nmse, zeros.result().cosine), (f64::INFINITY, 0.0));
    }
}
