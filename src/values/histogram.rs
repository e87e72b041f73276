//! Value histograms in one pass over the data, mergeable chunk by chunk.
//!
//! Values are counted into 65,536 fine buckets keyed by the top 16 bits of their `f32`
//! encoding (sign, exponent and 7 mantissa bits: a relative width of at most 2⁻⁷). The fine
//! buckets need no range in advance, merge by addition, and are re-binned at the end into the
//! requested number of equal-width bins over `[min, max]`, each fine bucket going to the bin
//! holding its midpoint. Bin edges are therefore exact to within one fine bucket.

use super::ahead::fetch_ahead;
use super::fine::{Fine, FINE};
use super::stats::{count_zeros, Stats};
use super::wire::{Reader, Writer};

/// A histogram under construction.
///
/// Statistics are folded piece by piece, in order ([`Histogram::add_to_piece`],
/// [`Histogram::end_piece`]): a histogram built from parts read in parallel
/// ([`Histogram::join`]) folds the same pieces in the same order, so its mean and spread are the
/// sequential ones to the last bit, not merely close.
#[derive(Clone)]
pub struct Histogram {
    fine: Fine,
    pub stats: Stats,
    /// Statistics of the piece being read.
    piece: Stats,
    /// For a part read in parallel: each finished piece's statistics, in order (none folded).
    pieces: Option<Vec<Stats>>,
}

impl Default for Histogram {
    /// An empty histogram; its buckets are allocated with its first values.
    fn default() -> Self {
        Histogram { fine: Fine::Empty, stats: Stats::default(), piece: Stats::default(), pieces: None }
    }
}

impl std::fmt::Debug for Histogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Histogram").field("stats", &self.stats).finish_non_exhaustive()
    }
}

/// Equal-width bins over `[lo, hi]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Bins {
    pub lo: f64,
    pub hi: f64,
    pub counts: Vec<u64>,
}

impl Histogram {
    /// A histogram of fine buckets and statistics made elsewhere.
    pub fn of(fine: Fine, stats: Stats) -> Histogram {
        Histogram { fine, stats, ..Histogram::default() }
    }

    /// Count `values` (any `f32`; NaN and infinities are counted in the stats only).
    pub fn add(&mut self, values: &[f32]) {
        self.stats.merge(&Stats::of(values));
        count_buckets(self.fine_mut(), values);
    }

    /// Count `n` occurrences of value `v` in the buckets (statistics are the caller's).
    pub fn count(&mut self, v: f32, n: u64) {
        self.fine_mut()[(v.to_bits() >> 16) as usize] += n;
    }

    /// Add statistics gathered elsewhere to the piece being read (their values' buckets are
    /// counted with [`Histogram::count`] or [`Histogram::fine_mut`]).
    pub fn add_stats_to_piece(&mut self, stats: &Stats) {
        self.piece.merge(stats);
    }

    /// The fine buckets, indexed by the top 16 bits of a value, to count into directly.
    pub fn fine_mut(&mut self) -> &mut [u64; FINE] {
        self.fine.dense()
    }

    /// A histogram of one part of a tensor read in parallel: it keeps each piece's statistics
    /// for [`Histogram::join`] to fold in order.
    pub fn part() -> Self {
        Histogram { pieces: Some(Vec::new()), ..Histogram::default() }
    }

    /// Count `values`, part of the piece being read: buckets and statistics in one pass.
    pub fn add_to_piece(&mut self, values: &[f32]) {
        self.add_piece_values::<false>(values);
    }

    /// [`Histogram::add_to_piece`] for values read where they lie in a file's bytes, not decoded
    /// into the core's cache: their lines are fetched ahead of the bucket loop, whose scalar loads
    /// otherwise wait on each (F32 1.3x; decoded values, already in cache, gain nothing).
    pub fn add_in_place_to_piece(&mut self, values: &[f32]) {
        self.add_piece_values::<true>(values);
    }

    #[inline(always)]
    fn add_piece_values<const AHEAD: bool>(&mut self, values: &[f32]) {
        const ZERO_KEYS: [usize; 2] = [0, 0x8000]; // +0.0 and -0.0 (with the tiniest subnormals)
        let fine = self.fine_mut();
        let before = ZERO_KEYS.map(|k| fine[k]);
        let (mut stats, zeros_left) = Stats::of_each(values, &mut |v| {
            if AHEAD {
                fetch_ahead(v);
            }
            count_buckets(fine, v)
        });
        // Zeros, the costliest part of the statistics' vector loop, are counted only where
        // their buckets show some may be there.
        if zeros_left && ZERO_KEYS.map(|k| fine[k]) != before {
            stats.zero = count_zeros(values);
        }
        self.piece.merge(&stats);
    }

    /// The piece being read is complete: fold its statistics (or keep them, for a part).
    pub fn end_piece(&mut self) {
        let piece = std::mem::take(&mut self.piece);
        match &mut self.pieces {
            Some(kept) => kept.push(piece),
            None => self.stats.merge(&piece),
        }
    }

    /// A part read in parallel is finished: only its counted buckets are kept, and its table
    /// goes back to the thread for the thread's next part ([`Fine::release`]).
    pub fn finish_part(&mut self) {
        self.fine.release();
    }

    /// The histogram of parts read in parallel, in their order: buckets added, pieces folded in
    /// order, exactly as one sequential read would.
    pub fn join(parts: Vec<Histogram>) -> Histogram {
        let mut out = Histogram::default();
        for mut p in parts {
            p.end_piece();
            out.fine.absorb(std::mem::take(&mut p.fine));
            out.stats.merge(&p.stats);
            for piece in p.pieces.take().unwrap_or_default() {
                out.stats.merge(&piece);
            }
        }
        out
    }

    /// Append to a result's byte form: everything a part holds, so a part read elsewhere joins
    /// exactly as one read here.
    pub fn write(&self, w: &mut Writer) {
        self.fine.write(w);
        self.stats.write(w);
        self.piece.write(w);
        w.bool(self.pieces.is_some());
        let pieces = self.pieces.as_deref().unwrap_or_default();
        w.u64(pieces.len() as u64);
        for p in pieces {
            p.write(w);
        }
    }

    /// Read what [`Histogram::write`] wrote.
    pub fn read(r: &mut Reader) -> Option<Histogram> {
        let fine = Fine::read(r)?;
        let (stats, piece) = (Stats::read(r)?, Stats::read(r)?);
        let is_part = r.bool()?;
        let n = r.u64()?;
        let mut pieces = Vec::new();
        for _ in 0..n {
            pieces.push(Stats::read(r)?);
        }
        Some(Histogram { fine, stats, piece, pieces: is_part.then_some(pieces) })
    }

    /// Fold another partial histogram into this one.
    pub fn merge(&mut self, other: &Histogram) {
        self.stats.merge(&other.stats);
        self.fine.absorb(other.fine.clone());
    }

    /// `n` equal-width bins over the finite values' `[min, max]` (widened by ½ on each side when
    /// all values are equal, as numpy does).
    pub fn bins(&self, n: usize) -> Bins {
        let n = n.max(1);
        let mut counts = vec![0u64; n];
        if self.stats.finite == 0 {
            return Bins { lo: 0.0, hi: 0.0, counts };
        }
        let (mut lo, mut hi) = (self.stats.min, self.stats.max);
        if lo == hi {
            lo -= 0.5;
            hi += 0.5;
        }
        let width = (hi - lo) / n as f64;
        // Only the buckets finite values in [min, max] can fall in are visited.
        for keys in finite_keys(self.stats.min as f32, self.stats.max as f32) {
            self.fine.counted_in(keys, |key, c| {
                let Some(mid) = bucket_midpoint(key as u32) else { return };
                let mid = mid.clamp(self.stats.min, self.stats.max);
                let i = (((mid - lo) / width) as usize).min(n - 1);
                counts[i] += c;
            });
        }
        Bins { lo, hi, counts }
    }
}

/// Count each of `values` in its fine bucket. Four values a step, written out: the size-optimised
/// wasm build keeps a loop as written, and one value a step spends most of its time on the loop
/// itself.
#[inline]
fn count_buckets(fine: &mut [u64; FINE], values: &[f32]) {
    let key = |v: f32| (v.to_bits() >> 16) as usize;
    let (fours, rest) = values.as_chunks::<4>();
    for v in fours {
        fine[key(v[0])] += 1;
        fine[key(v[1])] += 1;
        fine[key(v[2])] += 1;
        fine[key(v[3])] += 1;
    }
    for &v in rest {
        fine[key(v)] += 1;
    }
}

/// The fine-bucket keys of the finite values in `[min, max]`: the non-negative ones, then the
/// negative ones (whose keys, sign bit set, grow with the magnitude; -0.0 among them).
fn finite_keys(min: f32, max: f32) -> [std::ops::Range<usize>; 2] {
    const NEG: usize = 0x8000; // the key of -0.0: sign bit set
    let key = |v: f32| (v.to_bits() >> 16) as usize;
    // Keys below NEG hold +0.0 and up; NEG and above hold -0.0 and down. Either zero may be
    // the min or max, so each range is cut at NEG.
    let positive_from = if min > 0.0 { key(min) } else { 0 };
    let positive = if max >= 0.0 { positive_from..(key(max) + 1).min(NEG) } else { 0..0 };
    let negative_to = if min < 0.0 { key(min) + 1 } else { NEG + 1 };
    let negative = if min <= 0.0 { NEG..negative_to } else { 0..0 };
    [positive, negative]
}

/// The middle of the values whose top 16 bits are `key`, or `None` for NaN and infinities.
fn bucket_midpoint(key: u32) -> Option<f64> {
    let first = f32::from_bits(key << 16);
    let last = f32::from_bits((key << 16) | 0xffff);
    if !first.is_finite() || !last.is_finite() {
        return None;
    }
    Some((f64::from(first) + f64::from(last)) / 2.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_cover_min_to_max_and_count_every_finite_value() {
        let values: Vec<f32> = (0..10_000).map(|i| (i as f32 / 10_000.0) * 4.0 - 2.0).collect();
        let mut h = Histogram::default();
        for c in values.chunks(999) {
            let mut part = Histogram::default();
            part.add(c);
            h.merge(&part);
        }
        h.add(&[f32::NAN, f32::INFINITY]);
        let b = h.bins(8);
        assert_eq!((b.lo, b.hi), (-2.0, f64::from(values[9999])));
        assert_eq!(b.counts.iter().sum::<u64>(), 10_000);
        for &c in &b.counts {
            assert!((1200..=1300).contains(&c), "{:?}", b.counts);
        }
        assert_eq!((h.stats.nan, h.stats.pos_inf), (1, 1));
    }

    #[test]
    fn parts_joined_in_order_equal_one_sequential_read_to_the_bit() {
        let values: Vec<f32> = (0..50_000).map(|i| 1e3 + ((i * 7919) % 1000) as f32 * 0.001).collect();
        let pieces: Vec<&[f32]> = values.chunks(3_000).collect();
        let mut one = Histogram::default();
        for p in &pieces {
            for batch in p.chunks(1000) {
                one.add_to_piece(batch);
            }
            one.end_piece();
        }
        let parts: Vec<Histogram> = pieces
            .chunks(4)
            .map(|group| {
                let mut h = Histogram::part();
                for p in group {
                    for batch in p.chunks(1000) {
                        h.add_to_piece(batch);
                    }
                    h.end_piece();
                }
                h
            })
            .collect();
        // Parts finished (their buckets kept sparse, their tables reused by the next) or not.
        let finished: Vec<Histogram> = parts
            .iter()
            .cloned()
            .enumerate()
            .map(|(i, mut p)| {
                if i % 3 != 1 {
                    p.finish_part();
                }
                p
            })
            .collect();
        for parts in [parts, finished] {
            let joined = Histogram::join(parts);
            assert_eq!(joined.stats, one.stats, "bit for bit");
            assert_eq!(joined.bins(16), one.bins(16));
        }
    }

    #[test]
    fn kept_buckets_bin_as_the_whole_table_did() {
        let values: Vec<f32> = (0..20_000).map(|i| ((i * 7919) % 4001) as f32 * 0.37 - 700.0).collect();
        let mut h = Histogram::default();
        h.add(&values);
        let mut kept = h.clone();
        kept.finish_part();
        assert!(matches!(kept.fine, Fine::Sparse(_)));
        for n in [1, 7, 100] {
            assert_eq!(kept.bins(n), h.bins(n), "{n} bins");
        }
        // Counting more into kept buckets spreads them back into a table first.
        kept.add(&values);
        h.add(&values);
        assert_eq!(kept.bins(50), h.bins(50));
    }

    #[test]
    fn bins_visit_only_the_buckets_in_range_and_miss_none() {
        for values in [
            vec![-3.5f32, -0.0, 0.0, 2.25, 1e-30],
            vec![1.0, 1.5, 2.0],
            vec![-8.0, -1e-3],
            vec![-0.0, 0.0],
            vec![-0.0, -0.0, -5.0],
            vec![0.0, -0.0, 3.0],
            vec![-0.0],
        ] {
            let mut h = Histogram::default();
            h.add(&values);
            assert_eq!(h.bins(7).counts.iter().sum::<u64>(), values.len() as u64, "{values:?}");
        }
    }

    #[test]
    fn constant_and_empty_inputs() {
        let mut h = Histogram::default();
        h.add(&[3.0; 10]);
        let b = h.bins(4);
        assert_eq!((b.lo, b.hi, b.counts.iter().sum::<u64>()), (2.5, 3.5, 10));
        let b = Histogram::default().bins(4);
        assert_eq!(b.counts, vec![0; 4]);
    }

    #[test]
    fn zeros_are_counted_exactly_whether_or_not_a_batch_holds_one() {
        let base: Vec<f32> = (1..=300).map(|i| i as f32 * 0.01 - 1.505).collect();
        assert!(!base.contains(&0.0));
        // A batch without zeros, one with each zero, one with a subnormal that shares +0.0's
        // bucket but is no zero.
        for (at, v, zeros) in [(0, 1.0, 0), (5, 0.0, 1), (200, -0.0, 1), (130, 1e-45, 0), (299, -1e-45, 0)] {
            let mut values = base.clone();
            values[at] = v;
            let mut h = Histogram::default();
            h.add_to_piece(&values);
            h.end_piece();
            assert_eq!(h.stats, Stats::of(&values), "{v} at {at}");
            assert_eq!(h.stats.zero, zeros, "{v} at {at}");
        }
    }

    #[test]
    fn values_read_in_place_count_as_decoded_ones() {
        let mut values: Vec<f32> = (0..5_000).map(|i| ((i * 7919) % 2001) as f32 * 0.01 - 10.0).collect();
        values[4_321] = f32::NAN;
        // Whole runs and a short rest, and slices ending at the allocation's end (where the
        // lines asked for ahead are past it).
        for range in [0..5_000, 17..4_000, 4_990..5_000, 0..0] {
            let (mut decoded, mut in_place) = (Histogram::default(), Histogram::default());
            decoded.add_to_piece(&values[range.clone()]);
            in_place.add_in_place_to_piece(&values[range.clone()]);
            decoded.end_piece();
            in_place.end_piece();
            assert_eq!(in_place.stats, decoded.stats, "{range:?}");
            assert_eq!(in_place.bins(64), decoded.bins(64), "{range:?}");
        }
    }
}
