//! Summary statistics over decoded values, mergeable chunk by chunk.

/// The largest magnitude summed in `f32` lanes: squared deviations of such values, a run's worth
/// (and a block group's counts) at a time, stay far below `f32::MAX`. Larger values are summed
/// in `f64`.
pub const F32_SUMS_LIMIT: f32 = 1e15;

/// Whether `v` is finite and small enough to sum in `f32` lanes (false for NaN).
fn summable(v: f32) -> bool {
    v.abs() <= F32_SUMS_LIMIT
}

/// The lesser of `a` and `b`, chosen alike on every target: `b` only when it is less, so of
/// `−0` and `+0` the one seen first, and never a NaN `b`. (`f32::min` is `minss` natively but a
/// call to `fminf` in wasm, which chooses otherwise on a tie: a zero extreme's sign differed
/// between the CLI and the browser.)
#[inline(always)]
pub fn lesser<T: PartialOrd>(a: T, b: T) -> T {
    if b < a {
        b
    } else {
        a
    }
}

/// The greater of `a` and `b`, chosen as [`lesser`] chooses.
#[inline(always)]
pub fn greater<T: PartialOrd>(a: T, b: T) -> T {
    if b > a {
        b
    } else {
        a
    }
}

/// Counts, extremes, mean and spread of a set of `f32` values; moments over finite values only.
#[derive(Clone, Debug, PartialEq)]
pub struct Stats {
    /// Values seen, NaN and infinities included.
    pub count: u64,
    pub nan: u64,
    pub pos_inf: u64,
    pub neg_inf: u64,
    pub zero: u64,
    /// Finite values seen.
    pub finite: u64,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    /// Sum of squared deviations from the mean (Chan et al.'s M2).
    pub m2: f64,
}

impl Default for Stats {
    fn default() -> Self {
        Stats {
            count: 0,
            nan: 0,
            pos_inf: 0,
            neg_inf: 0,
            zero: 0,
            finite: 0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            mean: 0.0,
            m2: 0.0,
        }
    }
}

impl Stats {
    /// Statistics of `values`, in one pass: sums are taken relative to the first value (a
    /// shift that keeps the variance stable however large the mean), in sixteen `f32` lanes over
    /// runs of 128 values (eight per lane: relative error about 5e-7 per run) carried in `f64`
    /// between runs, so the loop vectorises and error does not build up. A slice holding NaN
    /// or infinities is counted value by value.
    pub fn of(values: &[f32]) -> Stats {
        Stats::of_finite(values, true, &mut |_| {}).unwrap_or_else(|| Stats::of_mixed(values))
    }

    /// [`Stats::of`], handing every value to `each` once in the same pass (pieces of the vector
    /// loop's runs, then the rest), while they are in the core's cache. Zeros are not counted
    /// when the second result is set (where counting them in the loop costs more than a pass of
    /// their own): the caller counts them ([`count_zeros`]) if any may be there.
    #[inline]
    pub fn of_each(values: &[f32], each: &mut impl FnMut(&[f32])) -> (Stats, bool) {
        // With AVX-512 a zero costs a compare into a mask and a masked add: counted in the loop.
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx512f") {
            return (Stats::of_finite(values, true, each).unwrap_or_else(|| Stats::of_mixed(values)), false);
        }
        match Stats::of_finite(values, false, each) {
            Some(s) => (s, true),
            None => (Stats::of_mixed(values), false),
        }
    }

    /// [`Stats::of`] when every value is finite and below [`F32_SUMS_LIMIT`] in magnitude;
    /// `None` otherwise. Zeros are counted when `zeros` is set. Every value goes to `each` once
    /// either way.
    #[inline(always)]
    fn of_finite(values: &[f32], zeros: bool, each: &mut impl FnMut(&[f32])) -> Option<Stats> {
        let Some(&first) = values.first() else {
            return Some(Stats::default());
        };
        let (runs, rest) = values.as_chunks::<RUN>();
        let r = if zeros { lanes::runs::<true>(first, runs, each) } else { lanes::runs::<false>(first, runs, each) };
        each(rest);
        let r = r?;
        let (mut sum, mut sq, mut zeros) = (r.sum, r.sq, r.zeros);
        let (lo, hi) = (lesser(r.lo, first), greater(r.hi, first));
        if !(summable(first) && summable(lo) && summable(hi)) {
            return None;
        }
        let (mut min, mut max) = (lo, hi);
        for &v in rest {
            if !summable(v) {
                return None;
            }
            min = lesser(min, v);
            max = greater(max, v);
            zeros += u64::from(v == 0.0);
            let d = f64::from(v) - f64::from(first);
            sum += d;
            sq += d * d;
        }
        let n = values.len() as f64;
        let mean_shifted = sum / n;
        Some(Stats {
            count: values.len() as u64,
            finite: values.len() as u64,
            zero: zeros,
            min: f64::from(min),
            max: f64::from(max),
            mean: f64::from(first) + mean_shifted,
            m2: (sq - sum * mean_shifted).max(0.0),
            ..Stats::default()
        })
    }

    /// [`Stats::of`] for values with NaN, infinities or magnitudes whose squares `f32` cannot
    /// sum: value by value, in `f64`.
    #[cold]
    fn of_mixed(values: &[f32]) -> Stats {
        let mut s = Stats::default();
        let (mut shift, mut sum, mut sq) = (None, 0f64, 0f64);
        for &v in values {
            match v {
                _ if v.is_nan() => s.nan += 1,
                f32::INFINITY => s.pos_inf += 1,
                f32::NEG_INFINITY => s.neg_inf += 1,
                _ => {
                    let v = f64::from(v);
                    let d = v - *shift.get_or_insert(v);
                    sum += d;
                    sq += d * d;
                    s.finite += 1;
                    s.zero += u64::from(v == 0.0);
                    s.min = lesser(s.min, v);
                    s.max = greater(s.max, v);
                }
            }
        }
        s.count = values.len() as u64;
        if s.finite > 0 {
            let mean_shifted = sum / s.finite as f64;
            s.mean = shift.unwrap_or(0.0) + mean_shifted;
            s.m2 = (sq - sum * mean_shifted).max(0.0);
        }
        s
    }

    /// Statistics of values given as `(value, count)` pairs (each value once), in `f64`: two
    /// passes, so the spread is exact to `f64` rounding whatever the counts.
    pub fn of_counts(items: impl Iterator<Item = (f32, u64)> + Clone) -> Stats {
        let mut s = Stats::default();
        let (mut n, mut sum) = (0u64, 0f64);
        for (v, c) in items.clone() {
            s.count += c;
            if v.is_nan() {
                s.nan += c;
            } else if v == f32::INFINITY {
                s.pos_inf += c;
            } else if v == f32::NEG_INFINITY {
                s.neg_inf += c;
            } else {
                if v == 0.0 {
                    s.zero += c;
                }
                n += c;
                sum += f64::from(v) * c as f64;
                s.min = lesser(s.min, f64::from(v));
                s.max = greater(s.max, f64::from(v));
            }
        }
        s.finite = n;
        if n > 0 {
            s.mean = sum / n as f64;
            s.m2 = items.filter(|(v, _)| v.is_finite()).map(|(v, c)| (f64::from(v) - s.mean).powi(2) * c as f64).sum();
        }
        s
    }

    /// Append to a result's byte form.
    pub fn write(&self, w: &mut crate::wire::Writer) {
        w.u64(self.count).u64(self.nan).u64(self.pos_inf).u64(self.neg_inf).u64(self.zero).u64(self.finite);
        w.f64(self.min).f64(self.max).f64(self.mean).f64(self.m2);
    }

    /// Read what [`Stats::write`] wrote.
    pub fn read(r: &mut crate::wire::Reader) -> Option<Stats> {
        Some(Stats {
            count: r.u64()?,
            nan: r.u64()?,
            pos_inf: r.u64()?,
            neg_inf: r.u64()?,
            zero: r.u64()?,
            finite: r.u64()?,
            min: r.f64()?,
            max: r.f64()?,
            mean: r.f64()?,
            m2: r.f64()?,
        })
    }

    /// Fold `other` into `self` (Chan et al.'s parallel update).
    pub fn merge(&mut self, other: &Stats) {
        let (n1, n2) = (self.finite as f64, other.finite as f64);
        if other.finite > 0 {
            let n = n1 + n2;
            let delta = other.mean - self.mean;
            self.mean += delta * n2 / n;
            self.m2 += other.m2 + delta * delta * n1 * n2 / n;
        }
        self.count += other.count;
        self.nan += other.nan;
        self.pos_inf += other.pos_inf;
        self.neg_inf += other.neg_inf;
        self.zero += other.zero;
        self.finite += other.finite;
        self.min = lesser(self.min, other.min);
        self.max = greater(self.max, other.max);
    }

    /// Population standard deviation of the finite values (0 when there are none).
    pub fn std(&self) -> f64 {
        if self.finite == 0 {
            0.0
        } else {
            (self.m2 / self.finite as f64).sqrt()
        }
    }
}

/// Zeros (of either sign) among `values`.
pub fn count_zeros(values: &[f32]) -> u64 {
    // Counted in u32 a run at a time: the compiler keeps the counts in vector lanes.
    values.chunks(1 << 16).map(|run| u64::from(run.iter().map(|&v| u32::from(v == 0.0)).sum::<u32>())).sum()
}

/// Lanes of the vector loop: four 128-bit or two 256-bit registers per sum, enough independent
/// additions to hide their latency (with sums folded pairwise, four lanes measured 2.5x slower).
const L: usize = 16;
/// Values per run: eight per lane.
const RUN: usize = 8 * L;

/// The vector loop over whole runs. Lane `i` takes the values at `i`, `i + L`, … of each run; a
/// run's sums are taken in `f32` lanes and added, lane by lane, to `f64` lanes, which are summed
/// pairwise (halves added lane by lane) at the end: the same operations in the same order
/// whatever the target, so every target gives the same bits. (Summing each run's lanes pairwise
/// instead cost a third of the loop's time in shuffles.)
mod lanes {
    use super::{L, RUN};

    /// What the runs hold: sums of the values less the shift, and of their squares; zeros (when
    /// counted); extremes.
    pub(super) struct Runs {
        pub sum: f64,
        pub sq: f64,
        pub zeros: u64,
        pub lo: f32,
        pub hi: f32,
    }

    impl Runs {
        /// The runs from their lanes; `None` when the sums are NaN: a NaN makes them NaN (the
        /// extremes skip it), and magnitudes up to the limit keep them finite.
        #[inline(always)]
        pub(super) fn of_lanes(
            sum: [f64; L],
            sq: [f64; L],
            zeros: [u32; L],
            lo: [f32; L],
            hi: [f32; L],
        ) -> Option<Runs> {
            let (sum, sq) = (pairwise(sum), pairwise(sq));
            if (sum + sq).is_nan() {
                return None;
            }
            let zeros = zeros.iter().map(|&z| u64::from(z)).sum();
            let lo = lo.iter().copied().fold(f32::INFINITY, super::lesser);
            let hi = hi.iter().copied().fold(f32::NEG_INFINITY, super::greater);
            Some(Runs { sum, sq, zeros, lo, hi })
        }
    }

    /// The runs' sums, on the widest registers the CPU has; every value also goes to `each`.
    #[inline(always)]
    pub(super) fn runs<const ZEROS: bool>(
        first: f32,
        runs: &[[f32; RUN]],
        each: &mut impl FnMut(&[f32]),
    ) -> Option<Runs> {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                // SAFETY: the CPU has AVX-512F, just checked.
                return unsafe { avx512::<ZEROS>(first, runs, each) };
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2, just checked.
                return unsafe { avx2::<ZEROS>(first, runs, each) };
            }
        }
        #[cfg(target_arch = "wasm32")]
        return wasm::runs::<ZEROS>(first, runs, each);
        #[allow(unreachable_code)]
        plain::<ZEROS>(first, runs, each)
    }

    /// [`plain`] compiled for AVX-512 (one register a lane array), its runs' sums widened a
    /// register at a time.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn avx512<const ZEROS: bool>(
        first: f32,
        runs: &[[f32; RUN]],
        each: &mut impl FnMut(&[f32]),
    ) -> Option<Runs> {
        with::<ZEROS, Zmm>(first, runs, each)
    }

    /// How a run's `f32` lane sums are added to the `f64` lanes, lane by lane.
    pub(super) trait Widen {
        fn add(acc: &mut [f64; L], s: &[f32; L]);
    }

    /// Lane by lane, as written.
    pub(super) struct Lanewise;

    impl Widen for Lanewise {
        #[inline(always)]
        fn add(acc: &mut [f64; L], s: &[f32; L]) {
            for i in 0..L {
                acc[i] += f64::from(s[i]);
            }
        }
    }

    /// Four conversions and four additions of AVX registers (see [`Zmm`]).
    #[cfg(target_arch = "x86_64")]
    struct Ymm;

    #[cfg(target_arch = "x86_64")]
    impl Widen for Ymm {
        #[inline(always)]
        fn add(acc: &mut [f64; L], s: &[f32; L]) {
            use core::arch::x86_64::*;
            // SAFETY: used only in `avx2`, which runs where AVX2 does; loads and stores of 4
            // floats and 4 doubles within the arrays.
            unsafe {
                for k in 0..L / 4 {
                    let at = acc.as_mut_ptr().add(4 * k);
                    let widened = _mm256_cvtps_pd(_mm_loadu_ps(s.as_ptr().add(4 * k)));
                    _mm256_storeu_pd(at, _mm256_add_pd(_mm256_loadu_pd(at), widened));
                }
            }
        }
    }

    /// Two conversions and two additions of AVX-512 registers: written lane by lane, the compiler
    /// made 2-lane conversions, shuffles and spills of them, half of the loop's instructions.
    #[cfg(target_arch = "x86_64")]
    struct Zmm;

    #[cfg(target_arch = "x86_64")]
    impl Widen for Zmm {
        #[inline(always)]
        fn add(acc: &mut [f64; L], s: &[f32; L]) {
            use core::arch::x86_64::*;
            // SAFETY: used only in `avx512`, which runs where AVX-512F does; loads and stores
            // of 8 floats and 8 doubles within the arrays.
            unsafe {
                for k in 0..L / 8 {
                    let at = acc.as_mut_ptr().add(8 * k);
                    let widened = _mm512_cvtps_pd(_mm256_loadu_ps(s.as_ptr().add(8 * k)));
                    _mm512_storeu_pd(at, _mm512_add_pd(_mm512_loadu_pd(at), widened));
                }
            }
        }
    }

    /// [`plain`] compiled for AVX2, its runs' sums widened a register at a time.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn avx2<const ZEROS: bool>(
        first: f32,
        runs: &[[f32; RUN]],
        each: &mut impl FnMut(&[f32]),
    ) -> Option<Runs> {
        with::<ZEROS, Ymm>(first, runs, each)
    }

    /// Plain arrays of lanes, which an optimising build turns into vector registers of whatever
    /// width the target has.
    #[inline(always)]
    #[allow(clippy::needless_range_loop)] // lanes index several arrays alike
    pub(super) fn plain<const ZEROS: bool>(
        first: f32,
        runs: &[[f32; RUN]],
        each: &mut impl FnMut(&[f32]),
    ) -> Option<Runs> {
        with::<ZEROS, Lanewise>(first, runs, each)
    }

    /// [`plain`] with the runs' sums widened by `W`.
    #[inline(always)]
    #[allow(clippy::needless_range_loop)] // lanes index several arrays alike
    fn with<const ZEROS: bool, W: Widen>(
        first: f32,
        runs: &[[f32; RUN]],
        each: &mut impl FnMut(&[f32]),
    ) -> Option<Runs> {
        let (mut lo, mut hi) = ([first; L], [first; L]);
        let (mut sum, mut sq, mut zeros) = ([0f64; L], [0f64; L], [0u32; L]);
        for run in runs {
            let (mut s, mut q) = ([0f32; L], [0f32; L]);
            for c in run.as_chunks::<L>().0 {
                // Each vector's values go to `each` before their lanes are summed: with a run's
                // worth at a time, its bucket updates and the sums took turns on the core rather
                // than running side by side (decoded Q8_0 and Q8_K 1.15x, Q6_K 1.04-1.16x on Zen 4).
                each(c);
                for i in 0..L {
                    let v = c[i];
                    lo[i] = if v < lo[i] { v } else { lo[i] };
                    hi[i] = if v > hi[i] { v } else { hi[i] };
                    if ZEROS {
                        zeros[i] += u32::from(v == 0.0);
                    }
                    let d = v - first;
                    s[i] += d;
                    q[i] += d * d;
                }
            }
            W::add(&mut sum, &s);
            W::add(&mut sq, &q);
        }
        Runs::of_lanes(sum, sq, zeros, lo, hi)
    }

    /// The sum of `a`'s lanes in a tree.
    #[inline(always)]
    fn pairwise(mut a: [f64; L]) -> f64 {
        let mut width = L;
        while width > 1 {
            width /= 2;
            for i in 0..width {
                a[i] += a[i + width];
            }
        }
        a[0]
    }

    /// [`plain`] in explicit 128-bit vectors: the bundle is built for size, which leaves plain
    /// lanes unvectorised. Lane `4g + j` of [`plain`] is lane `j` of `f32` vector `g`, and lane
    /// `2k + j` lane `j` of `f64` vector `k`.
    #[cfg(target_arch = "wasm32")]
    mod wasm {
        use super::{Runs, L, RUN};
        use core::arch::wasm32::*;

        /// Four vectors: sixteen lanes.
        type Lanes = [v128; 4];

        #[inline(always)]
        fn splat(x: f32) -> Lanes {
            [f32x4_splat(x); 4]
        }

        /// Add `run`'s sixteen `f32` lanes to `acc`'s sixteen `f64` lanes.
        #[inline(always)]
        fn widen_add(acc: &mut [v128; 8], run: Lanes) {
            for g in 0..4 {
                let high = i32x4_shuffle::<2, 3, 2, 3>(run[g], run[g]);
                acc[2 * g] = f64x2_add(acc[2 * g], f64x2_promote_low_f32x4(run[g]));
                acc[2 * g + 1] = f64x2_add(acc[2 * g + 1], f64x2_promote_low_f32x4(high));
            }
        }

        #[inline(always)]
        pub(super) fn runs<const ZEROS: bool>(
            first: f32,
            runs: &[[f32; RUN]],
            each: &mut impl FnMut(&[f32]),
        ) -> Option<Runs> {
            let shift = f32x4_splat(first);
            let (mut lo, mut hi) = (splat(first), splat(first));
            let (mut sum, mut sq) = ([f64x2_splat(0.0); 8], [f64x2_splat(0.0); 8]);
            let mut zeros = [u32x4_splat(0); 4];
            for run in runs {
                each(run);
                let (mut s, mut q) = (splat(0.0), splat(0.0));
                for c in run.as_chunks::<L>().0 {
                    // Written out per vector, not looped: at "z" a loop over the four keeps
                    // them in memory, not in registers (measured 2x slower).
                    macro_rules! group {
                        ($g:literal) => {
                            // SAFETY: `c[4g..4g + 4]` is in bounds; `v128_load` reads unaligned.
                            let v = unsafe { v128_load(c.as_ptr().add(4 * $g).cast()) };
                            // pmin(a, b) is `b < a ? b : a`: `v < lo ? v : lo`, as in plain.
                            lo[$g] = f32x4_pmin(lo[$g], v);
                            hi[$g] = f32x4_pmax(hi[$g], v);
                            if ZEROS {
                                // A true compare is all ones: −1.
                                zeros[$g] = i32x4_sub(zeros[$g], f32x4_eq(v, f32x4_splat(0.0)));
                            }
                            let d = f32x4_sub(v, shift);
                            s[$g] = f32x4_add(s[$g], d);
                            q[$g] = f32x4_add(q[$g], f32x4_mul(d, d));
                        };
                    }
                    group!(0);
                    group!(1);
                    group!(2);
                    group!(3);
                }
                widen_add(&mut sum, s);
                widen_add(&mut sq, q);
            }
            let f32s = |v: Lanes| -> [f32; L] {
                core::array::from_fn(|i| {
                    let g = v[i / 4];
                    match i % 4 {
                        0 => f32x4_extract_lane::<0>(g),
                        1 => f32x4_extract_lane::<1>(g),
                        2 => f32x4_extract_lane::<2>(g),
                        _ => f32x4_extract_lane::<3>(g),
                    }
                })
            };
            let u32s = |v: Lanes| -> [u32; L] { f32s(v).map(f32::to_bits) };
            let f64s = |v: [v128; 8]| -> [f64; L] {
                core::array::from_fn(|i| {
                    let k = v[i / 2];
                    if i % 2 == 0 {
                        f64x2_extract_lane::<0>(k)
                    } else {
                        f64x2_extract_lane::<1>(k)
                    }
                })
            };
            Runs::of_lanes(f64s(sum), f64s(sq), u32s(zeros), f32s(lo), f32s(hi))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_chunks_equal_the_whole() {
        let values: Vec<f32> = (0..1000).map(|i| 1e6 + (i as f32 * 0.37).sin()).collect();
        let whole = Stats::of(&values);
        let mut merged = Stats::default();
        for chunk in values.chunks(77) {
            merged.merge(&Stats::of(chunk));
        }
        assert_eq!((merged.count, merged.min, merged.max), (whole.count, whole.min, whole.max));
        assert!((merged.mean - whole.mean).abs() < 1e-9);
        assert!((merged.std() - whole.std()).abs() < 1e-9, "{} vs {}", merged.std(), whole.std());
        let direct = {
            let m = values.iter().map(|&v| f64::from(v)).sum::<f64>() / 1000.0;
            (values.iter().map(|&v| (f64::from(v) - m).powi(2)).sum::<f64>() / 1000.0).sqrt()
        };
        assert!((whole.std() - direct).abs() < 1e-9);
    }

    #[test]
    fn values_too_large_for_f32_sums_are_summed_in_f64() {
        let values: Vec<f32> = (0..100).map(|i| if i % 2 == 0 { 3e30 } else { -3e30 }).collect();
        let s = Stats::of(&values);
        assert_eq!((s.count, s.finite, s.min, s.max), (100, 100, f64::from(-3e30f32), f64::from(3e30f32)));
        assert!(s.mean.abs() < 1e15 && (s.std() / f64::from(3e30f32) - 1.0).abs() < 1e-12, "{s:?}");
    }

    #[test]
    fn special_values_are_counted_apart() {
        let s = Stats::of(&[f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0, 2.0]);
        assert_eq!((s.count, s.nan, s.pos_inf, s.neg_inf, s.zero, s.finite), (6, 1, 1, 1, 2, 3));
        assert_eq!((s.min, s.max), (0.0, 2.0));
        let empty = Stats::of(&[]);
        assert_eq!(empty.std(), 0.0);
    }

    #[test]
    fn a_special_value_anywhere_in_the_lanes_is_counted_as_value_by_value() {
        // Two whole runs of lanes and a remainder; each special value at every kind of place.
        let base: Vec<f32> = (0..300).map(|i| ((i * 7919) % 1000) as f32 / 100.0 - 5.0).collect();
        // Whatever vector registers the CPU lends the lanes, the same bits.
        let (runs, _) = base.as_chunks::<RUN>();
        let (fast, plain) = (
            lanes::runs::<true>(base[0], runs, &mut |_| {}).unwrap(),
            lanes::plain::<true>(base[0], runs, &mut |_| {}).unwrap(),
        );
        let bits = |r: &lanes::Runs| (r.sum.to_bits(), r.sq.to_bits(), r.zeros, r.lo, r.hi);
        assert_eq!(bits(&fast), bits(&plain));
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2, just checked.
            let avx2 = unsafe { lanes::avx2::<true>(base[0], runs, &mut |_| {}) }.unwrap();
            assert_eq!(bits(&avx2), bits(&plain));
        }
        for special in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 3e30, -3e30, 0.0] {
            for at in (0..300).step_by(7).chain([0, 127, 128, 255, 256, 299]) {
                let mut values = base.clone();
                values[at] = special;
                let (fast, slow) = (Stats::of(&values), Stats::of_mixed(&values));
                let what = format!("{special} at {at}");
                assert_eq!(
                    (fast.count, fast.nan, fast.pos_inf, fast.neg_inf, fast.zero, fast.finite, fast.min, fast.max),
                    (slow.count, slow.nan, slow.pos_inf, slow.neg_inf, slow.zero, slow.finite, slow.min, slow.max),
                    "{what}"
                );
                let scale = slow.std().max(slow.mean.abs()).max(1.0);
                assert!((fast.mean - slow.mean).abs() <= 1e-6 * scale, "{what}: {} vs {}", fast.mean, slow.mean);
                assert!((fast.std() - slow.std()).abs() <= 1e-6 * scale, "{what}: {} vs {}", fast.std(), slow.std());
            }
        }
    }
}
