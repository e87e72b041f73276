//! Histograms in the code domain: for elementwise 8- and 16-bit types (F16, BF16, the FP8s,
//! 8- and 16-bit integers, BOOL), stored codes are counted and each distinct code is converted
//! and binned once, not each element. Counts are integers, so parts read in any order merge
//! exactly; the statistics are taken from the counts in `f64`.
//!
//! Block types with few codes over many values (Q1_0, Q2_0, TQ2_0) are counted by (group, code)
//! instead ([`add_groups`]): each group's distinct values are converted and binned once, and
//! their statistics are folded per piece like decoded values'.

use super::ahead::fetch_ahead;
use super::decode::groups::{Entries, Scale};
use super::decode::BlockCodec;
use super::fine::{read_counted, take_counted, write_counted, Fine};
use super::histogram::Histogram;
use super::stats::{greater, lesser, Stats, F32_SUMS_LIMIT};
use super::wire::{Reader, Writer};

/// Counts of the stored codes of one elementwise 1- or 2-byte type.
///
/// Codes are counted in `u32` (a 2-byte type's 65,536 counts then take 256 KiB, not 512, and
/// stay in the core's cache: 1.3x faster measured) and settled into the `u64` totals before
/// any count could overflow. The totals are allocated only then: the pages of a fresh table cost
/// a fault each when first touched, and parts joined through them spent a millisecond so.
///
/// A part read in parallel keeps only the codes it counted once it is finished
/// ([`CodeCounts::release`]), and gives its table back to its thread for the thread's next part;
/// parts are merged code by code.
#[derive(Clone)]
pub struct CodeCounts {
    codec: BlockCodec,
    /// Counts settled so far (empty before the first settling).
    counts: Vec<u64>,
    /// Counts since the last settling (empty before the first codes, and once released).
    fresh: Vec<u32>,
    /// Codes counted into `fresh`: no fresh count can exceed it.
    fresh_n: u64,
    /// Once released (or read from bytes): every code counted, `(code, count)` in increasing code
    /// order, none zero; `counts` and `fresh` are then empty.
    kept: Vec<(u16, u64)>,
}

thread_local! {
    /// An emptied table of fresh 2-byte code counts a finished part of this thread released, for
    /// the thread's next.
    static SPARE: std::cell::Cell<Vec<u32>> = const { std::cell::Cell::new(Vec::new()) };
}

impl std::fmt::Debug for CodeCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodeCounts").field("bytes", &self.codec.block_bytes).finish_non_exhaustive()
    }
}

/// The codec whose codes a histogram of `dtype` counts ([`CodeCounts`]): the elementwise 1- and
/// 2-byte types, found without the block types' decoders (the page merges code counts; only the
/// workers decode blocks).
pub fn code_codec(dtype: &crate::model::Dtype) -> Option<BlockCodec> {
    use super::decode::{ggml, st_dtypes};
    use crate::model::Dtype;
    let codec = match dtype {
        Dtype::Safetensors(d) => st_dtypes::codec(*d),
        Dtype::Ggml(t) => match t.0 {
            1 => ggml::F16,
            24 => ggml::I8,
            25 => ggml::I16,
            30 => ggml::BF16,
            _ => return None,
        },
        Dtype::Unknown(_) => return None,
    };
    (codec.block_elems == 1 && matches!(codec.block_bytes, 1 | 2)).then_some(codec)
}

impl CodeCounts {
    /// Code counting for values stored as `codec`, when each value is one 1- or 2-byte code.
    pub fn for_codec(codec: &BlockCodec) -> Option<CodeCounts> {
        (codec.block_elems == 1 && matches!(codec.block_bytes, 1 | 2)).then(|| CodeCounts {
            codec: *codec,
            counts: Vec::new(),
            fresh: Vec::new(),
            fresh_n: 0,
            kept: Vec::new(),
        })
    }

    /// How many codes there are: 256 or 65,536.
    fn codes(&self) -> usize {
        1 << (8 * self.codec.block_bytes)
    }

    /// Count the codes of `bytes` (whole values, little-endian).
    pub fn add(&mut self, bytes: &[u8]) {
        debug_assert!(self.kept.is_empty(), "no codes are counted once released");
        if self.fresh.is_empty() {
            let spare = SPARE.take();
            self.fresh = if spare.len() == self.codes() { spare } else { vec![0; self.codes()] };
        }
        let width = self.codec.block_bytes;
        /// Codes counted per pass: below `u32::MAX`, and its bytes fit a 32-bit `usize`.
        const PART_CODES: usize = 1 << 30;
        for part in bytes.chunks(PART_CODES * width) {
            let n = (part.len() / width) as u64;
            if self.fresh_n + n > u64::from(u32::MAX) {
                self.settle();
            }
            self.fresh_n += n;
            // Codes are taken from whole little-endian words, written out: the size-optimised
            // wasm build keeps a loop as written, and one code a step spends most of its time on
            // the loop itself; one 8-byte load and shifts beat a load per code (1.12x measured).
            let (words, rest) = part.as_chunks::<8>();
            if width == 1 {
                let fresh: &mut [u32; 1 << 8] = (&mut self.fresh[..]).try_into().expect("1-byte codes");
                each_word(words, |w| {
                    fresh[(w & 0xff) as usize] += 1;
                    fresh[((w >> 8) & 0xff) as usize] += 1;
                    fresh[((w >> 16) & 0xff) as usize] += 1;
                    fresh[((w >> 24) & 0xff) as usize] += 1;
                    fresh[((w >> 32) & 0xff) as usize] += 1;
                    fresh[((w >> 40) & 0xff) as usize] += 1;
                    fresh[((w >> 48) & 0xff) as usize] += 1;
                    fresh[(w >> 56) as usize] += 1;
                });
                for &c in rest {
                    fresh[usize::from(c)] += 1;
                }
            } else {
                let fresh: &mut [u32; 1 << 16] = (&mut self.fresh[..]).try_into().expect("2-byte codes");
                each_word(words, |w| {
                    fresh[(w & 0xffff) as usize] += 1;
                    fresh[((w >> 16) & 0xffff) as usize] += 1;
                    fresh[((w >> 32) & 0xffff) as usize] += 1;
                    fresh[(w >> 48) as usize] += 1;
                });
                for c in rest.as_chunks::<2>().0 {
                    fresh[usize::from(u16::from_le_bytes(*c))] += 1;
                }
            }
        }
    }

    /// Move the fresh counts into the totals.
    fn settle(&mut self) {
        if self.counts.is_empty() {
            self.counts = vec![0; self.fresh.len()];
        }
        for (total, fresh) in self.counts.iter_mut().zip(&mut self.fresh) {
            *total += u64::from(std::mem::take(fresh));
        }
        self.fresh_n = 0;
    }

    /// Every code counted, `(code, count)` in increasing code order.
    fn counted(&self) -> std::borrow::Cow<'_, [(u16, u64)]> {
        if self.is_kept() {
            return std::borrow::Cow::Borrowed(&self.kept);
        }
        let (mut out, mut next) = (Vec::new(), 0);
        let mut chunk = [(0, 0); VALUES_STEP];
        loop {
            let n = self.counted_from(&mut next, &mut chunk);
            if n == 0 {
                return std::borrow::Cow::Owned(out);
            }
            out.extend_from_slice(&chunk[..n]);
        }
    }

    /// The codes counted from code `*next` on, into `out` (as many as fit, `*next` moved past
    /// them): how many; none when no more were counted.
    fn counted_from(&self, next: &mut usize, out: &mut [(u16, u64)]) -> usize {
        let mut n = 0;
        if self.is_kept() {
            for (slot, &item) in out.iter_mut().zip(self.kept.get(*next..).unwrap_or_default()) {
                *slot = item;
                n += 1;
            }
            *next += n;
            return n;
        }
        let settled = |code: usize| self.counts.get(code).copied().unwrap_or(0);
        // Eight codes at a time, skipped when none was counted since the last settling.
        while n + 8 <= out.len() && *next < self.fresh.len() {
            let first = *next;
            let eight = &self.fresh[first..(first + 8).min(self.fresh.len())];
            *next += eight.len();
            let settled_eight = || (first..first + eight.len()).any(|code| settled(code) != 0);
            if eight.iter().fold(0, |a, &f| a | f) == 0 && (self.counts.is_empty() || !settled_eight()) {
                continue;
            }
            for (j, &f) in eight.iter().enumerate() {
                let total = u64::from(f) + settled(first + j);
                if total != 0 {
                    out[n] = ((first + j) as u16, total);
                    n += 1;
                }
            }
        }
        n
    }

    /// A part read in parallel is finished: when the codes it counted take less room than its
    /// table (a quarter of the codes or fewer, as BF16's usually are), only they are kept and the
    /// table goes back to the thread, emptied, for the thread's next part. (Kept so, F16's
    /// 23,000 codes of 65,536 made a 2-thread histogram 0.93x.)
    pub fn release(&mut self) {
        if self.is_kept() || !self.counts.is_empty() {
            return;
        }
        if self.fresh.iter().filter(|&&c| c != 0).count() > self.codes() / 4 {
            return;
        }
        // No counts settled: the fresh ones are all.
        self.kept = take_counted(&mut self.fresh);
        let fresh = std::mem::take(&mut self.fresh);
        if fresh.len() == 1 << 16 {
            SPARE.set(fresh);
        }
        self.fresh_n = 0;
    }

    /// Whether only the codes counted are kept (released, read from bytes, or nothing counted).
    fn is_kept(&self) -> bool {
        self.fresh.is_empty() && self.counts.is_empty()
    }

    /// Append to a result's byte form.
    pub fn write(&self, w: &mut Writer) {
        write_counted(w, self.codes(), &self.counted());
    }

    /// Read what [`CodeCounts::write`] wrote, for values stored as `codec`.
    pub fn read(codec: &BlockCodec, r: &mut Reader) -> Option<CodeCounts> {
        let empty = CodeCounts::for_codec(codec)?;
        let (len, kept) = read_counted(r, empty.codes())?;
        (len == empty.codes()).then_some(CodeCounts { kept, ..empty })
    }

    /// Fold in the counts of another part: code by code where both keep only the codes counted,
    /// else into a table (the fresh counts while they cannot overflow, else the totals).
    pub fn merge(&mut self, mut other: CodeCounts) {
        if self.is_kept() && !other.is_kept() {
            std::mem::swap(self, &mut other);
        }
        if self.is_kept() {
            self.kept = merge_counted(&self.kept, &other.kept);
            return;
        }
        let other_n = if other.is_kept() {
            other.kept.iter().fold(0u64, |n, &(_, c)| n.saturating_add(c))
        } else if other.counts.is_empty() {
            other.fresh_n
        } else {
            u64::MAX
        };
        if self.fresh_n.checked_add(other_n).is_some_and(|n| n <= u64::from(u32::MAX)) {
            // Every count of the other fits in u32, and their sum with this one's too.
            if other.is_kept() {
                for &(code, c) in &other.kept {
                    self.fresh[usize::from(code)] += c as u32;
                }
            } else {
                for (a, &b) in self.fresh.iter_mut().zip(&other.fresh) {
                    *a += b;
                }
            }
            self.fresh_n += other_n;
            return;
        }
        self.settle();
        for &(code, c) in other.counted().iter() {
            let total = &mut self.counts[usize::from(code)];
            *total = total.saturating_add(c);
        }
    }

    /// Each code that occurs, as its value, with its count, in code order.
    fn values(&self) -> CodeValues<'_> {
        CodeValues { counts: self, next: 0, buf: [(0.0, 0); VALUES_STEP], len: 0, at: 0 }
    }

    /// The histogram of the values counted: its buckets and statistics made from the codes'
    /// values as they are decoded, a chunk at a time (made from lists of codes and of values and
    /// a table of buckets, an F16 histogram's serial end took 0.9 ms; now 0.5 ms).
    pub fn histogram(&self) -> Histogram {
        let keys = self.values().map(|(v, c)| ((v.to_bits() >> 16) as u16, c));
        Histogram::of(Fine::of_counts(keys), Stats::of_counts(self.values()))
    }
}

/// Codes' values decoded at a time.
const VALUES_STEP: usize = 512;

/// The values of the codes counted, with their counts, in code order ([`CodeCounts::values`]):
/// codes decoded a chunk at a time into a buffer (a call per code was a serial cost of every
/// parallel histogram).
#[derive(Clone)]
struct CodeValues<'a> {
    counts: &'a CodeCounts,
    /// Where [`CodeCounts::counted_from`] goes on from.
    next: usize,
    buf: [(f32, u64); VALUES_STEP],
    len: usize,
    at: usize,
}

impl CodeValues<'_> {
    /// Decode the next codes counted into the buffer (none left: an empty one).
    #[inline(never)]
    fn refill(&mut self) {
        let c = self.counts;
        let mut counted = [(0, 0); VALUES_STEP];
        let n = c.counted_from(&mut self.next, &mut counted);
        let width = c.codec.block_bytes;
        let mut bytes = [0u8; 2 * VALUES_STEP];
        if width == 2 {
            for (pair, &(code, _)) in bytes.as_chunks_mut::<2>().0.iter_mut().zip(&counted[..n]) {
                *pair = code.to_le_bytes();
            }
        } else {
            for (byte, &(code, _)) in bytes.iter_mut().zip(&counted[..n]) {
                *byte = code as u8;
            }
        }
        let mut decoded = [0f32; VALUES_STEP];
        (c.codec.decode)(&bytes[..width * n], &mut decoded[..n]);
        for (slot, (&v, &(_, count))) in self.buf.iter_mut().zip(decoded[..n].iter().zip(&counted[..n])) {
            *slot = (v, count);
        }
        (self.len, self.at) = (n, 0);
    }
}

impl Iterator for CodeValues<'_> {
    type Item = (f32, u64);

    #[inline]
    fn next(&mut self) -> Option<(f32, u64)> {
        if self.at == self.len {
            self.refill();
            if self.len == 0 {
                return None;
            }
        }
        self.at += 1;
        Some(self.buf[self.at - 1])
    }
}

/// `each(word)` for every little-endian word of `words`, a line (eight words) at a time with the
/// lines ahead asked for (F16 1.18x, BF16 1.16x).
#[inline(always)]
fn each_word(words: &[[u8; 8]], mut each: impl FnMut(u64)) {
    for line in words.chunks(8) {
        fetch_ahead(line);
        for w in line {
            each(u64::from_le_bytes(*w));
        }
    }
}

/// Two lists of `(code, count)` in increasing code order, as one: counts of a code added.
fn merge_counted(a: &[(u16, u64)], b: &[(u16, u64)]) -> Vec<(u16, u64)> {
    let mut out = Vec::with_capacity(a.len().max(b.len()));
    let (mut a, mut b) = (a.iter().copied().peekable(), b.iter().copied().peekable());
    loop {
        let next = match (a.peek(), b.peek()) {
            (Some(&(x, m)), Some(&(y, n))) if x == y => {
                a.next();
                b.next();
                // Counts read from bytes may be any: none may wrap or panic.
                (x, m.saturating_add(n))
            }
            (Some(&(x, _)), Some(&(y, _))) if y < x => b.next().expect("peeked"),
            (Some(_), _) => a.next().expect("peeked"),
            (None, Some(_)) => b.next().expect("peeked"),
            (None, None) => return out,
        };
        out.push(next);
    }
}

/// Count `groups` into `h`: each group's distinct values into the fine buckets, and their
/// statistics into the piece being read. Equal to decoding the groups' elements and adding them
/// (buckets, counts and extremes exactly; mean and spread to `f64` rounding of the exact values).
///
/// Statistics are kept in sixteen lanes, one per table entry: a lane adds `count · (v − s)` and
/// `count · (v − s)²` in `f64` (`s` the first value seen, a shift that keeps the spread stable
/// however large the mean), so no group is reduced on its own. Groups with large or non-finite
/// scales (rare) are taken value by value ([`Stats::of_counts`]) and merged in.
pub fn add_groups<S: Scale>(h: &mut Histogram, groups: &[Entries<S>]) {
    #[cfg(target_arch = "x86_64")]
    {
        if avx512::detected() {
            // SAFETY: detected just now.
            return unsafe { avx512::add_groups(h, groups) };
        }
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 was detected just now.
            return unsafe { avx2::add_groups(h, groups) };
        }
    }
    #[cfg(target_arch = "wasm32")]
    return simd128::add_groups(h, groups);
    #[allow(unreachable_code)]
    add_groups_with(h, groups);
}

/// [`add_groups`]' portable kernel, which every other kernel equals to the bit (for tests).
#[doc(hidden)]
pub fn add_groups_portable<S: Scale>(h: &mut Histogram, groups: &[Entries<S>]) {
    add_groups_with(h, groups);
}

/// Whether a group's values are all finite and small enough to sum in `f64` lanes: tables hold
/// magnitudes under 128.
#[inline(always)]
fn summable<S: Scale>(g: &Entries<S>) -> bool {
    g.a.four().iter().all(|a| a.abs() < F32_SUMS_LIMIT / 256.0) && g.b.four().iter().all(|b| b.abs() < F32_SUMS_LIMIT)
}

/// The statistics of a group taken value by value (one with large or non-finite values).
#[cold]
fn odd_group(v: &[f32; 16], counts: &[u16; 16]) -> Stats {
    Stats::of_counts(v.iter().copied().zip(counts.iter().map(|&c| u64::from(c))).filter(|&(_, c)| c > 0))
}

/// The shift the lanes of [`add_groups`] sum from: the first counted value of the first
/// [`summable`] group (zero when that group counts none, or no group is summable). Found before
/// the loop, as the groups the loop leaves to [`odd_groups`] are taken after it: a call inside
/// the loop made the compiler keep the lanes in memory, not in registers (each group then waited
/// on the last one's stores).
fn shift_of<S: Scale>(groups: &[Entries<S>]) -> f32 {
    let first = groups.iter().find(|g| summable(g));
    first.map_or(0.0, |g| first_counted(&std::array::from_fn(|i| g.value(i)), &g.counts).unwrap_or(0.0))
}

/// The statistics of the groups [`summable`] leaves out, in order.
#[cold]
fn odd_groups<S: Scale>(groups: &[Entries<S>]) -> Stats {
    let mut odd = Stats::default();
    for g in groups.iter().filter(|g| !summable(g)) {
        odd.merge(&odd_group(&std::array::from_fn(|i| g.value(i)), &g.counts));
    }
    odd
}

/// What the sixteen lanes of [`add_groups`] hold once every group is counted, one lane per
/// table entry: each kernel stores its vectors here.
#[derive(Default)]
struct Lanes {
    sum: [f64; 16],
    sq: [f64; 16],
    lo: [f32; 16],
    hi: [f32; 16],
    n: [u32; 16],
    zero: [u32; 16],
}

impl Lanes {
    /// Fold the lanes' statistics (sums shifted by `shift`) into the piece `h` is reading, and
    /// those of the groups the lanes left to [`odd_groups`] where there were any.
    fn fold_into<S: Scale>(&self, h: &mut Histogram, groups: &[Entries<S>], shift: f32, any_odd: bool) {
        let mut stats = self.stats(shift);
        if any_odd {
            stats.merge(&odd_groups(groups));
        }
        h.add_stats_to_piece(&stats);
    }

    /// The statistics the lanes hold.
    fn stats(&self, shift: f32) -> Stats {
        let n: u64 = self.n.iter().map(|&c| u64::from(c)).sum();
        let mut stats = Stats {
            count: n,
            finite: n,
            zero: self.zero.iter().map(|&c| u64::from(c)).sum(),
            min: f64::from(self.lo.iter().copied().fold(f32::INFINITY, lesser)),
            max: f64::from(self.hi.iter().copied().fold(f32::NEG_INFINITY, greater)),
            ..Stats::default()
        };
        if n > 0 {
            let sum: f64 = self.sum.iter().sum();
            let mean_shifted = sum / n as f64;
            stats.mean = f64::from(shift) + mean_shifted;
            stats.m2 = (self.sq.iter().sum::<f64>() - sum * mean_shifted).max(0.0);
        }
        stats
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    //! [`super::add_groups`] in AVX-512: a group's sixteen values, keys and sums are one vector
    //! each, and its keys and counts go to the buckets from memory (not lane by lane).
    use core::arch::x86_64::*;

    use super::{count_packed, shift_of, summable, Entries, Histogram, Lanes, Pipelined, Scale, CHUNK_GROUPS};

    /// Whether this CPU runs [`add_groups`].
    pub fn detected() -> bool {
        std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512dq")
    }

    /// [`super::add_groups`], the same operations lane for lane as its portable twin.
    #[target_feature(enable = "avx512f,avx512dq")]
    pub unsafe fn add_groups<S: Scale>(h: &mut Histogram, groups: &[Entries<S>]) {
        let fine = h.fine_mut();
        let shift = shift_of(groups);
        let s = _mm512_set1_pd(f64::from(shift));
        let mut any_odd = false;
        let (mut sum, mut sq) = ([_mm512_setzero_pd(); 2], [_mm512_setzero_pd(); 2]);
        let (mut lo, mut hi) = (_mm512_set1_ps(f32::INFINITY), _mm512_set1_ps(f32::NEG_INFINITY));
        let (mut n, mut zero) = (_mm512_setzero_si512(), _mm512_setzero_si512());
        let mut chunks = Pipelined::default();
        for chunk in groups.chunks(CHUNK_GROUPS) {
            let (packed, last) = chunks.next(chunk.len());
            for (i, (g, packed)) in chunk.iter().zip(packed).enumerate() {
                if let Some(p) = last.get(i) {
                    count_packed(fine, p);
                }
                // SAFETY: loads of a group's 16 table entries and 16 counts; a store of 16 lanes
                // into 16 u32s; AVX-512F and DQ are this function's.
                let (v, c) = unsafe {
                    let t = _mm512_loadu_ps(g.table.as_ptr());
                    // Lane i's scale and offset are entry i % 4's: the four, repeated.
                    let (a4, b4) = (g.a.four(), g.b.four());
                    let (a, b) = (
                        _mm512_broadcast_f32x4(_mm_loadu_ps(a4.as_ptr())),
                        _mm512_broadcast_f32x4(_mm_loadu_ps(b4.as_ptr())),
                    );
                    let v = _mm512_add_ps(_mm512_mul_ps(a, t), b);
                    let c = _mm512_cvtepu16_epi32(_mm256_loadu_si256(g.counts.as_ptr().cast()));
                    let key = _mm512_srli_epi32::<16>(_mm512_castps_si512(v));
                    _mm512_storeu_si512(packed.as_mut_ptr().cast(), _mm512_or_si512(key, _mm512_slli_epi32::<16>(c)));
                    (v, c)
                };
                if !summable(g) {
                    any_odd = true;
                    continue;
                }
                let halves = [
                    (_mm512_castps512_ps256(v), _mm512_castsi512_si256(c)),
                    (_mm512_extractf32x8_ps::<1>(v), _mm512_extracti64x4_epi64::<1>(c)),
                ];
                for (k, (v, c)) in halves.into_iter().enumerate() {
                    let d = _mm512_sub_pd(_mm512_cvtps_pd(v), s);
                    let cd = _mm512_mul_pd(_mm512_cvtepu32_pd(c), d);
                    sum[k] = _mm512_add_pd(sum[k], cd);
                    sq[k] = _mm512_add_pd(sq[k], _mm512_mul_pd(cd, d));
                }
                let held = _mm512_test_epi32_mask(c, c);
                lo = _mm512_mask_min_ps(lo, held, lo, v);
                hi = _mm512_mask_max_ps(hi, held, hi, v);
                n = _mm512_add_epi32(n, c);
                let zeros = _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(v, _mm512_setzero_ps());
                zero = _mm512_mask_add_epi32(zero, zeros, zero, c);
            }
            for p in last.get(chunk.len()..).unwrap_or_default() {
                count_packed(fine, p);
            }
        }
        for p in chunks.rest() {
            count_packed(fine, p);
        }
        let mut lanes = Lanes::default();
        // SAFETY: stores of whole vectors into arrays of their size.
        unsafe {
            for k in 0..2 {
                _mm512_storeu_pd(lanes.sum[8 * k..].as_mut_ptr(), sum[k]);
                _mm512_storeu_pd(lanes.sq[8 * k..].as_mut_ptr(), sq[k]);
            }
            _mm512_storeu_ps(lanes.lo.as_mut_ptr(), lo);
            _mm512_storeu_ps(lanes.hi.as_mut_ptr(), hi);
            _mm512_storeu_si512(lanes.n.as_mut_ptr().cast(), n);
            _mm512_storeu_si512(lanes.zero.as_mut_ptr().cast(), zero);
        }
        lanes.fold_into(h, groups, shift, any_odd);
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    //! [`super::add_groups`] in AVX2: a group's sixteen values, keys and counts are two vectors
    //! each, its sums four. (The portable kernel compiled for AVX2 took each value and key lane by
    //! lane: a 4-bit type's histogram ran 2.5x as long.)
    use core::arch::x86_64::*;

    use super::{count_packed, shift_of, summable, Entries, Histogram, Lanes, Pipelined, Scale, CHUNK_GROUPS};

    /// [`super::add_groups`], the same operations lane for lane as its portable twin.
    #[target_feature(enable = "avx2")]
    pub unsafe fn add_groups<S: Scale>(h: &mut Histogram, groups: &[Entries<S>]) {
        let fine = h.fine_mut();
        let shift = shift_of(groups);
        let s = _mm256_set1_pd(f64::from(shift));
        let mut any_odd = false;
        // Lanes 4k..4k + 4 of the sums are vector k; lanes 8h..8h + 8 of the rest vector h.
        let (mut sum, mut sq) = ([_mm256_setzero_pd(); 4], [_mm256_setzero_pd(); 4]);
        let (mut lo, mut hi) = ([_mm256_set1_ps(f32::INFINITY); 2], [_mm256_set1_ps(f32::NEG_INFINITY); 2]);
        let (mut n, mut zero) = ([_mm256_setzero_si256(); 2], [_mm256_setzero_si256(); 2]);
        let (inf, neg_inf) = (_mm256_set1_ps(f32::INFINITY), _mm256_set1_ps(f32::NEG_INFINITY));
        let mut chunks = Pipelined::default();
        for chunk in groups.chunks(CHUNK_GROUPS) {
            let (packed, last) = chunks.next(chunk.len());
            for (i, (g, packed)) in chunk.iter().zip(packed).enumerate() {
                if let Some(p) = last.get(i) {
                    count_packed(fine, p);
                }
                // SAFETY: loads of a group's 4 scales and offsets, 16 table entries and 16
                // counts; stores of 16 lanes into 16 u32s; AVX2 is this function's. Lane i's
                // scale and offset are entry i % 4's: the four, repeated.
                let (v, c) = unsafe {
                    let (a4, b4) = (g.a.four(), g.b.four());
                    let (a, b) = (
                        _mm256_broadcast_ps(&_mm_loadu_ps(a4.as_ptr())),
                        _mm256_broadcast_ps(&_mm_loadu_ps(b4.as_ptr())),
                    );
                    let v: [__m256; 2] = core::array::from_fn(|h| {
                        _mm256_add_ps(_mm256_mul_ps(a, _mm256_loadu_ps(g.table.as_ptr().add(8 * h))), b)
                    });
                    let c: [__m256i; 2] = core::array::from_fn(|h| {
                        _mm256_cvtepu16_epi32(_mm_loadu_si128(g.counts.as_ptr().add(8 * h).cast()))
                    });
                    for h in 0..2 {
                        let key = _mm256_srli_epi32::<16>(_mm256_castps_si256(v[h]));
                        let word = _mm256_or_si256(key, _mm256_slli_epi32::<16>(c[h]));
                        _mm256_storeu_si256(packed.as_mut_ptr().add(8 * h).cast(), word);
                    }
                    (v, c)
                };
                if !summable(g) {
                    any_odd = true;
                    continue;
                }
                for h in 0..2 {
                    let (v, c) = (v[h], c[h]);
                    let quarters = [
                        (_mm256_castps256_ps128(v), _mm256_castsi256_si128(c)),
                        (_mm256_extractf128_ps::<1>(v), _mm256_extracti128_si256::<1>(c)),
                    ];
                    for (k, (v, c)) in quarters.into_iter().enumerate() {
                        // Counts are below 2¹⁶: as signed integers, the same doubles.
                        let d = _mm256_sub_pd(_mm256_cvtps_pd(v), s);
                        let cd = _mm256_mul_pd(_mm256_cvtepi32_pd(c), d);
                        sum[2 * h + k] = _mm256_add_pd(sum[2 * h + k], cd);
                        sq[2 * h + k] = _mm256_add_pd(sq[2 * h + k], _mm256_mul_pd(cd, d));
                    }
                    let held = _mm256_castsi256_ps(_mm256_cmpgt_epi32(c, _mm256_setzero_si256()));
                    lo[h] = _mm256_min_ps(lo[h], _mm256_blendv_ps(inf, v, held));
                    hi[h] = _mm256_max_ps(hi[h], _mm256_blendv_ps(neg_inf, v, held));
                    n[h] = _mm256_add_epi32(n[h], c);
                    let zeros = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_EQ_OQ>(v, _mm256_setzero_ps()));
                    zero[h] = _mm256_add_epi32(zero[h], _mm256_and_si256(zeros, c));
                }
            }
            for p in last.get(chunk.len()..).unwrap_or_default() {
                count_packed(fine, p);
            }
        }
        for p in chunks.rest() {
            count_packed(fine, p);
        }
        let mut lanes = Lanes::default();
        // SAFETY: stores of whole vectors into arrays of their size.
        unsafe {
            for k in 0..4 {
                _mm256_storeu_pd(lanes.sum[4 * k..].as_mut_ptr(), sum[k]);
                _mm256_storeu_pd(lanes.sq[4 * k..].as_mut_ptr(), sq[k]);
            }
            for h in 0..2 {
                _mm256_storeu_ps(lanes.lo[8 * h..].as_mut_ptr(), lo[h]);
                _mm256_storeu_ps(lanes.hi[8 * h..].as_mut_ptr(), hi[h]);
                _mm256_storeu_si256(lanes.n[8 * h..].as_mut_ptr().cast(), n[h]);
                _mm256_storeu_si256(lanes.zero[8 * h..].as_mut_ptr().cast(), zero[h]);
            }
        }
        lanes.fold_into(h, groups, shift, any_odd);
    }
}

#[cfg(target_arch = "wasm32")]
mod simd128 {
    //! [`super::add_groups`] in explicit `simd128` vectors, the same operations lane for lane as
    //! the portable kernel: built from plain arrays the lanes stay in memory and are updated two
    //! at a time in a loop (the statistics then took half of a 4-bit type's histogram).
    use core::arch::wasm32::*;

    use super::{count_packed, shift_of, summable, Entries, Histogram, Lanes, Pipelined, Scale, CHUNK_GROUPS};

    /// `lo < x ? lo : x` per lane: `vminps`' choice (see the portable kernel).
    #[inline(always)]
    fn min(lo: v128, x: v128) -> v128 {
        v128_bitselect(lo, x, f32x4_lt(lo, x))
    }

    /// `hi > x ? hi : x` per lane.
    #[inline(always)]
    fn max(hi: v128, x: v128) -> v128 {
        v128_bitselect(hi, x, f32x4_gt(hi, x))
    }

    #[allow(clippy::needless_range_loop)] // lanes index several arrays alike
    pub fn add_groups<S: Scale>(h: &mut Histogram, groups: &[Entries<S>]) {
        let fine = h.fine_mut();
        let shift = shift_of(groups);
        let s = f64x2_splat(f64::from(shift));
        let mut any_odd = false;
        // Lanes 2k and 2k + 1 of the sums are vector k; lanes 4g..4g + 4 of the rest vector g.
        let (mut sum, mut sq) = ([f64x2_splat(0.0); 8], [f64x2_splat(0.0); 8]);
        let (mut lo, mut hi) = ([f32x4_splat(f32::INFINITY); 4], [f32x4_splat(f32::NEG_INFINITY); 4]);
        let (mut n, mut zero) = ([u32x4_splat(0); 4], [u32x4_splat(0); 4]);
        let (inf, neg_inf, nothing) = (f32x4_splat(f32::INFINITY), f32x4_splat(f32::NEG_INFINITY), f32x4_splat(0.0));
        let mut chunks = Pipelined::default();
        for chunk in groups.chunks(CHUNK_GROUPS) {
            let (packed, last) = chunks.next(chunk.len());
            for (i, (g, packed)) in chunk.iter().zip(packed).enumerate() {
                if let Some(p) = last.get(i) {
                    count_packed(fine, p);
                }
                // SAFETY (the loads and stores): 4 and 16 floats, 16 u16s and 16 u32s, in bounds,
                // unaligned. Lane 4q + j's scale and offset are entry j's of the four.
                let (a4, b4) = (g.a.four(), g.b.four());
                let (a, b) = unsafe { (v128_load(a4.as_ptr().cast()), v128_load(b4.as_ptr().cast())) };
                let (counts_lo, counts_hi) =
                    unsafe { (v128_load(g.counts.as_ptr().cast()), v128_load(g.counts.as_ptr().add(8).cast())) };
                let c = [
                    u32x4_extend_low_u16x8(counts_lo),
                    u32x4_extend_high_u16x8(counts_lo),
                    u32x4_extend_low_u16x8(counts_hi),
                    u32x4_extend_high_u16x8(counts_hi),
                ];
                let v: [v128; 4] = core::array::from_fn(|q| {
                    // SAFETY: as above.
                    let t = unsafe { v128_load(g.table.as_ptr().add(4 * q).cast()) };
                    f32x4_add(f32x4_mul(a, t), b)
                });
                for q in 0..4 {
                    let word = v128_or(u32x4_shr(v[q], 16), u32x4_shl(c[q], 16));
                    // SAFETY: as above.
                    unsafe { v128_store(packed.as_mut_ptr().add(4 * q).cast(), word) };
                }
                if !summable(g) {
                    any_odd = true;
                    continue;
                }
                macro_rules! quad {
                    ($q:literal) => {
                        let (v, c) = (v[$q], c[$q]);
                        let held = u32x4_ne(c, u32x4_splat(0));
                        lo[$q] = min(lo[$q], v128_bitselect(v, inf, held));
                        hi[$q] = max(hi[$q], v128_bitselect(v, neg_inf, held));
                        n[$q] = u32x4_add(n[$q], c);
                        zero[$q] = u32x4_add(zero[$q], v128_and(c, f32x4_eq(v, nothing)));
                        let halves = [(v, c), (i32x4_shuffle::<2, 3, 0, 1>(v, v), i32x4_shuffle::<2, 3, 0, 1>(c, c))];
                        for (k, (v, c)) in halves.into_iter().enumerate() {
                            let d = f64x2_sub(f64x2_promote_low_f32x4(v), s);
                            let cd = f64x2_mul(f64x2_convert_low_u32x4(c), d);
                            sum[2 * $q + k] = f64x2_add(sum[2 * $q + k], cd);
                            sq[2 * $q + k] = f64x2_add(sq[2 * $q + k], f64x2_mul(cd, d));
                        }
                    };
                }
                // Written out per vector, not looped (see `stats`' wasm lanes).
                quad!(0);
                quad!(1);
                quad!(2);
                quad!(3);
            }
            for p in last.get(chunk.len()..).unwrap_or_default() {
                count_packed(fine, p);
            }
        }
        for p in chunks.rest() {
            count_packed(fine, p);
        }
        let mut lanes = Lanes::default();
        // SAFETY: stores of whole vectors into arrays of their size.
        unsafe {
            for k in 0..8 {
                v128_store(lanes.sum.as_mut_ptr().add(2 * k).cast(), sum[k]);
                v128_store(lanes.sq.as_mut_ptr().add(2 * k).cast(), sq[k]);
            }
            for q in 0..4 {
                v128_store(lanes.lo.as_mut_ptr().add(4 * q).cast(), lo[q]);
                v128_store(lanes.hi.as_mut_ptr().add(4 * q).cast(), hi[q]);
                v128_store(lanes.n.as_mut_ptr().add(4 * q).cast(), n[q]);
                v128_store(lanes.zero.as_mut_ptr().add(4 * q).cast(), zero[q]);
            }
        }
        lanes.fold_into(h, groups, shift, any_odd);
    }
}

/// Groups a chunk holds: a group's keys and counts are packed into words (`key | count << 16`)
/// and counted into the buckets while the next chunk's values are computed. The two kinds of
/// work then overlap, and each word is read long after its vector was stored (a word read
/// straight after waits for the store to complete).
const CHUNK_GROUPS: usize = 64;

/// Two chunks of packed words: the one being filled and the one being counted.
struct Pipelined {
    packed: [[[u32; 16]; CHUNK_GROUPS]; 2],
    /// Which of the two is being filled, and how many groups the other holds.
    filling: usize,
    held: usize,
}

impl Default for Pipelined {
    fn default() -> Self {
        Pipelined { packed: [[[0; 16]; CHUNK_GROUPS]; 2], filling: 1, held: 0 }
    }
}

impl Pipelined {
    /// The next chunk of `n` groups to fill, and the last one's words to count.
    #[inline(always)]
    fn next(&mut self, n: usize) -> (&mut [[u32; 16]], &[[u32; 16]]) {
        let last_n = std::mem::replace(&mut self.held, n);
        self.filling ^= 1;
        let [a, b] = &mut self.packed;
        let (fill, last) = if self.filling == 0 { (a, b) } else { (b, a) };
        (&mut fill[..n], &last[..last_n])
    }

    /// The words of the chunk filled last, to count at the end.
    fn rest(&self) -> &[[u32; 16]] {
        &self.packed[self.filling][..self.held]
    }
}

/// Count a group's packed bucket words into the fine buckets.
#[inline(always)]
fn count_packed(fine: &mut [u64; 1 << 16], packed: &[u32; 16]) {
    for &p in packed {
        fine[(p & 0xffff) as usize] += u64::from(p >> 16);
    }
}

/// [`add_groups`], inlined into each instruction set's copy.
#[inline(always)]
#[allow(clippy::needless_range_loop)] // lanes index several arrays alike
fn add_groups_with<S: Scale>(h: &mut Histogram, groups: &[Entries<S>]) {
    let fine = h.fine_mut();
    let shift = shift_of(groups);
    let s = f64::from(shift);
    let mut any_odd = false;
    // Sums, extremes and counts of the finite groups, one lane per table entry; locals (not a
    // struct behind a pointer) so they stay in registers, and every update unconditional.
    let (mut sum, mut sq) = ([0f64; 16], [0f64; 16]);
    let (mut lo, mut hi) = ([f32::INFINITY; 16], [f32::NEG_INFINITY; 16]);
    let (mut n, mut zero) = ([0u32; 16], [0u32; 16]);
    let mut chunks = Pipelined::default();
    for chunk in groups.chunks(CHUNK_GROUPS) {
        let (packed, last) = chunks.next(chunk.len());
        for (i, (g, packed)) in chunk.iter().zip(packed).enumerate() {
            if let Some(p) = last.get(i) {
                count_packed(fine, p);
            }
            let mut v = [0f32; 16];
            for i in 0..16 {
                v[i] = g.value(i);
                packed[i] = (v[i].to_bits() >> 16) | u32::from(g.counts[i]) << 16;
            }
            if !summable(g) {
                any_odd = true;
                continue;
            }
            for i in 0..16 {
                // A batch holds far fewer than `u32::MAX` elements; counts are exact in f64.
                let c = u32::from(g.counts[i]);
                let (cf, d) = (f64::from(c), f64::from(v[i]) - s);
                sum[i] += cf * d;
                sq[i] += cf * d * d;
                let (low, high) = if c > 0 { (v[i], v[i]) } else { (f32::INFINITY, f32::NEG_INFINITY) };
                // As `vminps(lo, v)` and `vmaxps(hi, v)` choose: `v` unless the lane's extreme
                // is strictly beyond it (of −0 and +0 the later), hence `low` first.
                lo[i] = lesser(low, lo[i]);
                hi[i] = greater(high, hi[i]);
                n[i] += c;
                zero[i] += if v[i] == 0.0 { c } else { 0 };
            }
        }
        for p in last.get(chunk.len()..).unwrap_or_default() {
            count_packed(fine, p);
        }
    }
    for p in chunks.rest() {
        count_packed(fine, p);
    }
    Lanes { sum, sq, lo, hi, n, zero }.fold_into(h, groups, shift, any_odd);
}

/// The value of the first code a group holds.
fn first_counted(v: &[f32; 16], counts: &[u16; 16]) -> Option<f32> {
    v.iter().zip(counts).find(|(_, &c)| c > 0).map(|(&x, _)| x)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::decode::ggml;
    use crate::decode::groups::Grouping;

    /// Random whole blocks of `codec`; with `tame`, f16 fields stay small and finite.
    pub(crate) fn random_blocks(codec: &BlockCodec, blocks: usize, seed: &mut u64, tame: bool) -> Vec<u8> {
        let mut b: Vec<u8> = (0..codec.block_bytes * blocks)
            .map(|_| {
                *seed ^= *seed << 13;
                *seed ^= *seed >> 7;
                *seed ^= *seed << 17;
                (*seed >> 24) as u8
            })
            .collect();
        if tame {
            for x in b.iter_mut().skip(1).step_by(2) {
                *x &= 0x3b;
            }
        }
        b
    }

    #[test]
    fn code_counts_give_the_value_histogram() {
        let values: Vec<f32> = (0..10_000).map(|i| ((i * 37) % 1000) as f32 / 250.0 - 2.0).collect();
        let bytes: Vec<u8> = values.iter().flat_map(|&v| half::f16::from_f32(v).to_le_bytes()).collect();
        let mut decoded = vec![0f32; values.len()];
        (ggml::F16.decode)(&bytes, &mut decoded);
        let mut by_value = Histogram::default();
        by_value.add(&decoded);
        let mut counts = CodeCounts::for_codec(&ggml::F16).unwrap();
        for part in bytes.chunks(998) {
            counts.add(part);
        }
        let h = counts.histogram();
        assert_eq!(h.bins(32), by_value.bins(32));
        let (a, b) = (&h.stats, &by_value.stats);
        assert_eq!((a.count, a.finite, a.zero, a.min, a.max), (b.count, b.finite, b.zero, b.min, b.max));
        // At least as accurate as summing values: against the exact f64 moments, to f64 rounding.
        let mean = decoded.iter().map(|&v| f64::from(v)).sum::<f64>() / decoded.len() as f64;
        let var = decoded.iter().map(|&v| (f64::from(v) - mean).powi(2)).sum::<f64>() / decoded.len() as f64;
        assert!((a.mean - mean).abs() < 1e-12 && (a.std() - var.sqrt()).abs() < 1e-12, "{} {}", a.mean, a.std());
        assert!((b.mean - mean).abs() < 1e-6 && (b.std() - var.sqrt()).abs() < 1e-6);
        assert!(CodeCounts::for_codec(&ggml::Q4_K).is_none());
    }

    /// Every code type's counts, taken as counted or as a part read from bytes keeps them, give the
    /// histogram of its decoded values: codes whose values fall (negative integers) and whose
    /// values are not numbers, more of them than are decoded at a time.
    #[test]
    fn every_code_type_s_counts_give_its_values_histogram() {
        use crate::model::Dtype;
        use crate::safetensors::Dtype as St;
        let mut seed = 0x6c8e_9cf5_7093_2bd3u64;
        let types = [St::I8, St::U8, St::F8_E4M3, St::F8_E5M2, St::I16, St::U16, St::F16, St::BF16];
        for dtype in types.map(Dtype::Safetensors) {
            let codec = code_codec(&dtype).expect("a code type");
            let bytes = random_blocks(&codec, 20_000, &mut seed, false);
            let mut decoded = vec![0f32; 20_000];
            (codec.decode)(&bytes, &mut decoded);
            let mut by_value = Histogram::default();
            by_value.add(&decoded);
            for kept in [false, true] {
                let mut counts = CodeCounts::for_codec(&codec).unwrap();
                counts.add(&bytes);
                if kept {
                    // As a part read elsewhere is: only the codes counted.
                    let mut w = Writer::default();
                    counts.write(&mut w);
                    counts = CodeCounts::read(&codec, &mut Reader(&w.0)).unwrap();
                    assert!(counts.is_kept());
                }
                let h = counts.histogram();
                assert_eq!(h.bins(64), by_value.bins(64), "{dtype:?}");
                let (a, b) = (&h.stats, &by_value.stats);
                let of = |s: &Stats| (s.count, s.finite, s.zero, s.nan, s.pos_inf, s.neg_inf, s.min, s.max);
                assert_eq!(of(a), of(b), "{dtype:?}");
            }
        }
    }

    /// Every build counts groups with the same operations: each vector kernel this CPU runs
    /// (AVX2, AVX-512) gives the portable kernel's buckets and statistics to the bit.
    #[test]
    fn every_kernel_gives_the_same_bits() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for codec in crate::decode::groups::tests::GROUPED {
            for (blocks, tame) in [(1, true), (333, true), (700, false)] {
                let bytes = random_blocks(&codec, blocks, &mut seed, tame);
                let kernels = match codec.groups.expect("grouped") {
                    Grouping::Groups(f) | Grouping::ByScaleByte(f) => every_kernel(f, &bytes),
                    Grouping::ByScale { groups, .. } | Grouping::ByScalePairs { groups, .. } => {
                        every_kernel(groups, &bytes)
                    }
                    Grouping::Quads(f) => every_kernel(f, &bytes),
                };
                let bits = |h: &Histogram| {
                    let s = &h.stats;
                    (s.count, s.nan, s.zero, s.finite, [s.min, s.max, s.mean, s.m2].map(f64::to_bits))
                };
                let (_, portable) = &kernels[0];
                for (kernel, h) in &kernels[1..] {
                    let what = format!("{kernel}, {} bytes a block, {blocks} blocks", codec.block_bytes);
                    assert_eq!(bits(h), bits(portable), "{what}");
                    assert_eq!(h.bins(97), portable.bins(97), "{what}");
                }
            }
        }
    }

    /// `bytes` taken apart by `entries_of` and counted by the portable kernel, each kernel this
    /// CPU runs, and the dispatched one.
    fn every_kernel<S: Scale>(
        entries_of: impl Fn(&[u8], &mut Vec<Entries<S>>),
        bytes: &[u8],
    ) -> Vec<(&'static str, Histogram)> {
        let mut groups = Vec::new();
        entries_of(bytes, &mut groups);
        let counted = |kernel: &dyn Fn(&mut Histogram)| {
            let mut h = Histogram::default();
            kernel(&mut h);
            h.end_piece();
            h
        };
        #[allow(unused_mut)] // pushed to on x86-64 only
        let mut out = vec![
            ("portable", counted(&|h| add_groups_with(h, &groups))),
            ("dispatched", counted(&|h| add_groups(h, &groups))),
        ];
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx2") {
                // SAFETY: detected just now.
                out.push(("avx2", counted(&|h| unsafe { avx2::add_groups(h, &groups) })));
            }
            if avx512::detected() {
                // SAFETY: detected just now.
                out.push(("avx512", counted(&|h| unsafe { avx512::add_groups(h, &groups) })));
            }
        }
        out
    }

    impl CodeCounts {
        /// Every code's count, in a table.
        fn totals(&self) -> Vec<u64> {
            let mut t = vec![0; self.codes()];
            for &(code, c) in self.counted().iter() {
                t[usize::from(code)] = c;
            }
            t
        }

        /// Counts with a fresh table, to set counts in.
        fn with_table(codec: &BlockCodec) -> CodeCounts {
            let mut c = CodeCounts::for_codec(codec).unwrap();
            c.fresh = vec![0; c.codes()];
            c
        }
    }

    #[test]
    fn counts_each_code_of_any_length_and_alignment() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let bytes = random_blocks(&ggml::I8, 300, &mut seed, false);
        for codec in [ggml::I8, ggml::F16] {
            let width = codec.block_bytes;
            for start in 0..9 {
                for len in (0..=(bytes.len() - start) / width).step_by(7).chain([1, 2, 3, 5]) {
                    let part = &bytes[start..start + len * width];
                    let mut counts = CodeCounts::for_codec(&codec).unwrap();
                    counts.add(part);
                    let mut want = vec![0u64; 1 << (8 * width)];
                    for c in part.chunks(width) {
                        want[if width == 1 {
                            usize::from(c[0])
                        } else {
                            usize::from(u16::from_le_bytes([c[0], c[1]]))
                        }] += 1;
                    }
                    assert_eq!(counts.totals(), want, "{width} bytes, from {start}, {len} codes");
                }
            }
        }
    }

    /// Parts merge into the fresh counts while no count can overflow, and into the totals when
    /// one could, whichever part settled before and whichever kept only its codes: the totals
    /// are exact either way.
    #[test]
    fn merged_parts_give_exact_totals() {
        let codec = ggml::F16;
        let part = |fresh_n: u32, settled: bool| {
            let mut c = CodeCounts::with_table(&codec);
            c.fresh[7] = fresh_n;
            c.fresh[9] = 1;
            c.fresh_n = u64::from(fresh_n) + 1;
            if settled {
                c.settle();
                c.fresh[7] = 2;
                c.fresh_n = 2;
            }
            c
        };
        for (a, b) in [(5, 6), (u32::MAX - 9, 5), (u32::MAX - 1, u32::MAX - 1)] {
            for settled in [(false, false), (true, false), (false, true), (true, true)] {
                // Each part as counted, or released to its codes (when it did not settle).
                for released in [(false, false), (true, false), (false, true), (true, true)] {
                    let (mut x, mut y) = (part(a, settled.0), part(b, settled.1));
                    let want: Vec<u64> = x.totals().iter().zip(y.totals()).map(|(p, q)| p + q).collect();
                    if released.0 {
                        x.release();
                    }
                    if released.1 {
                        y.release();
                    }
                    assert_eq!(x.is_kept(), released.0 && !settled.0);
                    x.merge(y);
                    let case = format!("{a} + {b}, settled {settled:?}, released {released:?}");
                    assert_eq!(x.totals(), want, "{case}");
                    assert!(x.fresh_n <= u64::from(u32::MAX), "{case}");
                    assert!(x.fresh.iter().all(|&f| u64::from(f) <= x.fresh_n), "{case}");
                }
            }
        }
    }

    #[test]
    fn a_part_of_few_codes_keeps_them_and_gives_its_table_back() {
        let codes = |n: u16| -> Vec<u8> { (0..3 * n).flat_map(|i| (i % n * 3).to_le_bytes()).collect() };
        let mut few = CodeCounts::for_codec(&ggml::F16).unwrap();
        few.add(&codes(100));
        let (table, totals) = (few.fresh.as_ptr(), few.totals());
        let mut bytes = Writer::default();
        few.write(&mut bytes);
        few.release();
        assert!(few.is_kept() && few.fresh.is_empty());
        assert_eq!((few.totals(), few.kept.len()), (totals, 100));
        let mut kept_bytes = Writer::default();
        few.write(&mut kept_bytes);
        assert_eq!(kept_bytes.0, bytes.0, "the same byte form");
        // The thread's next part counts into the same table, emptied.
        let mut next = CodeCounts::for_codec(&ggml::F16).unwrap();
        next.add(&codes(1));
        assert_eq!(next.fresh.as_ptr(), table);
        assert_eq!(next.counted().as_ref(), [(0, 3)]);
        // Codes more than a quarter of the table stay in it.
        let mut many = CodeCounts::for_codec(&ggml::F16).unwrap();
        many.add(&codes(20_000));
        let totals = many.totals();
        many.release();
        assert!(!many.is_kept());
        assert_eq!(many.totals(), totals);
    }

    #[test]
    fn counts_from_bytes_merge_without_wrapping() {
        let mut w = Writer::default();
        w.sparse_entries(1 << 16, [(3, u64::MAX - 1), (9, 2)].into_iter());
        let part = || CodeCounts::read(&ggml::F16, &mut Reader(&w.0)).unwrap();
        // Two kept parts, then a counted one into them.
        let mut all = part();
        all.merge(part());
        let mut counted = CodeCounts::for_codec(&ggml::F16).unwrap();
        counted.add(&3u16.to_le_bytes());
        all.merge(counted);
        assert_eq!(all.counted().as_ref(), [(3, u64::MAX), (9, 4)]);
    }

    #[test]
    fn counts_near_u32_max_settle_into_exact_totals() {
        for codec in [ggml::F16, ggml::I8] {
            let mut counts = CodeCounts::with_table(&codec);
            // As if u32::MAX - 1 codes of value 3 were counted already.
            counts.fresh[3] = u32::MAX - 1;
            counts.fresh_n = u64::from(u32::MAX - 1);
            let three: Vec<u8> = (0..4).flat_map(|_| 3u16.to_le_bytes()[..codec.block_bytes].to_vec()).collect();
            counts.add(&three);
            counts.add(&three);
            assert_eq!(counts.totals()[3], u64::from(u32::MAX - 1) + 8, "{} bytes", codec.block_bytes);
            assert!(counts.fresh_n <= 8);
            let mut w = Writer::default();
            counts.write(&mut w);
            let back = CodeCounts::read(&codec, &mut Reader(&w.0)).unwrap();
            assert_eq!(back.totals(), counts.totals());
        }
    }
}
