//! Histograms in the code domain: for elementwise 8- and 16-bit types (F16, BF16, the FP8s,
//! 8- and 16-bit integers, BOOL), stored codes are counted and each distinct code is converted
//! and binned once, not each element. Counts are integers, so parts read in any order merge
//! exactly; the statistics are taken from the counts in `f64`.
//!
//! Block types with few codes over many values (Q1_0, Q2_0, TQ2_0) are counted by (group, code)
//! instead ([`add_groups`]): each group's distinct values are converted and binned once, and
//! their statistics are folded per piece like decoded values'.

use super::decode::groups::Group;
use super::decode::BlockCodec;
use super::histogram::Histogram;
use super::stats::{Stats, F32_SUMS_LIMIT};
use super::wire::{Reader, Writer};

/// Counts of the stored codes of one elementwise 1- or 2-byte type.
///
/// Codes are counted in `u32` (a 2-byte type's 65,536 counts then take 256 KiB, not 512, and
/// stay in the core's cache: 1.3x faster measured) and settled into the `u64` totals before
/// any count could overflow.
#[derive(Clone)]
pub struct CodeCounts {
    codec: BlockCodec,
    /// Counts settled so far.
    counts: Vec<u64>,
    /// Counts since the last settling.
    fresh: Vec<u32>,
    /// Codes counted into `fresh`: no fresh count can exceed it.
    fresh_n: u64,
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
        (codec.block_elems == 1 && matches!(codec.block_bytes, 1 | 2)).then(|| {
            let codes = 1 << (8 * codec.block_bytes);
            CodeCounts { codec: *codec, counts: vec![0; codes], fresh: vec![0; codes], fresh_n: 0 }
        })
    }

    /// Count the codes of `bytes` (whole values, little-endian).
    pub fn add(&mut self, bytes: &[u8]) {
        let width = self.codec.block_bytes;
        /// Codes counted per pass: below `u32::MAX`, and its bytes fit a 32-bit `usize`.
        const PART_CODES: usize = 1 << 30;
        for part in bytes.chunks(PART_CODES * width) {
            let n = (part.len() / width) as u64;
            if self.fresh_n + n > u64::from(u32::MAX) {
                self.settle();
            }
            self.fresh_n += n;
            // Four codes a step, written out: the size-optimised wasm build keeps a loop as
            // written, and one code a step spends most of its time on the loop itself.
            if width == 1 {
                let fresh: &mut [u32; 1 << 8] = (&mut self.fresh[..]).try_into().expect("1-byte codes");
                let (fours, rest) = part.as_chunks::<4>();
                for c in fours {
                    fresh[usize::from(c[0])] += 1;
                    fresh[usize::from(c[1])] += 1;
                    fresh[usize::from(c[2])] += 1;
                    fresh[usize::from(c[3])] += 1;
                }
                for &c in rest {
                    fresh[usize::from(c)] += 1;
                }
            } else {
                let fresh: &mut [u32; 1 << 16] = (&mut self.fresh[..]).try_into().expect("2-byte codes");
                let code = |c: &[u8]| usize::from(u16::from_le_bytes([c[0], c[1]]));
                let (eights, rest) = part.as_chunks::<8>();
                for c in eights {
                    fresh[code(&c[0..2])] += 1;
                    fresh[code(&c[2..4])] += 1;
                    fresh[code(&c[4..6])] += 1;
                    fresh[code(&c[6..8])] += 1;
                }
                for c in rest.as_chunks::<2>().0 {
                    fresh[code(c)] += 1;
                }
            }
        }
    }

    /// Move the fresh counts into the totals.
    fn settle(&mut self) {
        for (total, fresh) in self.counts.iter_mut().zip(&mut self.fresh) {
            *total += u64::from(std::mem::take(fresh));
        }
        self.fresh_n = 0;
    }

    /// Every code's count.
    fn totals(&self) -> Vec<u64> {
        self.counts.iter().zip(&self.fresh).map(|(&t, &f)| t + u64::from(f)).collect()
    }

    /// Append to a result's byte form.
    pub fn write(&self, w: &mut Writer) {
        w.sparse(&self.totals());
    }

    /// Read what [`CodeCounts::write`] wrote, for values stored as `codec`.
    pub fn read(codec: &BlockCodec, r: &mut Reader) -> Option<CodeCounts> {
        let empty = CodeCounts::for_codec(codec)?;
        let counts = r.sparse(empty.counts.len()).filter(|c| c.len() == empty.counts.len())?;
        Some(CodeCounts { counts, ..empty })
    }

    /// Fold in the counts of another part.
    pub fn merge(&mut self, other: &CodeCounts) {
        for (a, b) in self.counts.iter_mut().zip(other.totals()) {
            *a += b;
        }
    }

    /// Each code that occurs, as its value, with its count.
    fn values(totals: &[u64], codec: BlockCodec) -> impl Iterator<Item = (f32, u64)> + Clone + '_ {
        let bytes = codec.block_bytes;
        totals.iter().enumerate().filter(|(_, &c)| c > 0).map(move |(code, &c)| {
            let le = (code as u16).to_le_bytes();
            let mut v = [0f32];
            (codec.decode)(&le[..bytes], &mut v);
            (v[0], c)
        })
    }

    /// The histogram of the values counted.
    pub fn histogram(&self) -> Histogram {
        let totals = self.totals();
        let mut h = Histogram::default();
        for (v, c) in CodeCounts::values(&totals, self.codec) {
            h.count(v, c);
        }
        h.stats = Stats::of_counts(CodeCounts::values(&totals, self.codec));
        h
    }
}

/// Count `groups` into `h`: each group's distinct values into the fine buckets, and their
/// statistics into the piece being read. Equal to decoding the groups' elements and adding them
/// (buckets, counts and extremes exactly; mean and spread to `f64` rounding of the exact values).
///
/// A group's values are `a · t + b` over its table entries `t`, so its moments follow from two
/// exact integer sums, `Σ count · t` and `Σ count · t²` (at most 256 elements of magnitude under
/// 128: below 2²⁴, exact in `f32` lanes in any order), folded in `f64` relative to a shift (the
/// first value seen). Groups with large or non-finite scales (rare) are taken value by value
/// ([`Stats::of_counts`]) and merged in.
#[allow(clippy::needless_range_loop)] // lanes index several arrays alike
pub fn add_groups(h: &mut Histogram, groups: &[Group]) {
    let fine = h.fine_mut();
    // Kept in locals (not a struct behind a pointer) so the loop's sums stay in registers.
    let mut odd = Stats::default();
    let mut shift: Option<f32> = None;
    let (mut sum, mut sq) = (0f64, 0f64);
    let mut lanes = Lanes::default();
    for g in groups {
        let mut v = [0f32; 16];
        for i in 0..16 {
            v[i] = g.a * g.table[i] + g.b;
        }
        for i in 0..16 {
            fine[(v[i].to_bits() >> 16) as usize] += u64::from(g.counts[i]);
        }
        // Tables hold magnitudes under 128: these bounds keep every value finite in `f32`.
        if g.a.abs() < F32_SUMS_LIMIT / 256.0 && g.b.abs() < F32_SUMS_LIMIT {
            let s = *shift.get_or_insert_with(|| first_counted(&v, &g.counts).unwrap_or(0.0));
            let (t1, t2, count) = lanes.add(g, &v);
            // Σ (a·t + d) and Σ (a·t + d)², with d the offset less the shift.
            let (a, d) = (f64::from(g.a), f64::from(g.b) - f64::from(s));
            sum += a * t1 + count * d;
            sq += a * a * t2 + 2.0 * a * d * t1 + count * d * d;
        } else {
            let counted = v.iter().copied().zip(g.counts.iter().map(|&c| u64::from(c))).filter(|&(_, c)| c > 0);
            odd.merge(&Stats::of_counts(counted));
        }
    }
    let n = lanes.n.iter().map(|&x| x as u64).sum::<u64>();
    let mut stats = Stats {
        count: n,
        finite: n,
        zero: lanes.zero.iter().map(|&x| x as u64).sum(),
        min: f64::from(lanes.lo.iter().copied().fold(f32::INFINITY, f32::min)),
        max: f64::from(lanes.hi.iter().copied().fold(f32::NEG_INFINITY, f32::max)),
        ..Stats::default()
    };
    if stats.finite > 0 {
        let n = stats.finite as f64;
        let mean_shifted = sum / n;
        stats.mean = f64::from(shift.unwrap_or(0.0)) + mean_shifted;
        stats.m2 = (sq - sum * mean_shifted).max(0.0);
    }
    stats.merge(&odd);
    h.add_stats_to_piece(&stats);
}

/// Extremes and counts of finite groups, in four lanes.
struct Lanes {
    lo: [f32; 4],
    hi: [f32; 4],
    n: [i32; 4],
    zero: [i32; 4],
}

impl Default for Lanes {
    fn default() -> Self {
        Lanes { lo: [f32::INFINITY; 4], hi: [f32::NEG_INFINITY; 4], n: [0; 4], zero: [0; 4] }
    }
}

impl Lanes {
    /// Fold in group `g`, whose sixteen values `v` are all finite; its `Σ count · t`,
    /// `Σ count · t²` and `Σ count`.
    #[inline(always)]
    #[allow(clippy::needless_range_loop)] // lanes index several arrays alike
    fn add(&mut self, g: &Group, v: &[f32; 16]) -> (f64, f64, f64) {
        // Branch-free, in sixteen lanes folded to four.
        let (mut s1, mut s2, mut lo, mut hi, mut n, mut zero) =
            ([0f32; 16], [0f32; 16], [0f32; 16], [0f32; 16], [0i32; 16], [0i32; 16]);
        for i in 0..16 {
            // Counts are at most a block's elements: exact as i32 (which converts in one step).
            let c = i32::from(g.counts[i]);
            s1[i] = c as f32 * g.table[i];
            s2[i] = s1[i] * g.table[i];
            lo[i] = if c > 0 { v[i] } else { f32::INFINITY };
            hi[i] = if c > 0 { v[i] } else { f32::NEG_INFINITY };
            n[i] = c;
            zero[i] = if v[i] == 0.0 { c } else { 0 };
        }
        let (mut t1, mut t2, mut count) = ([0f32; 4], [0f32; 4], [0i32; 4]);
        for i in 0..4 {
            t1[i] = (s1[i] + s1[i + 4]) + (s1[i + 8] + s1[i + 12]);
            t2[i] = (s2[i] + s2[i + 4]) + (s2[i + 8] + s2[i + 12]);
            count[i] = (n[i] + n[i + 4]) + (n[i + 8] + n[i + 12]);
            let l = min4(min4(lo[i], lo[i + 4]), min4(lo[i + 8], lo[i + 12]));
            let h = max4(max4(hi[i], hi[i + 4]), max4(hi[i + 8], hi[i + 12]));
            self.lo[i] = min4(self.lo[i], l);
            self.hi[i] = max4(self.hi[i], h);
            self.n[i] += count[i];
            self.zero[i] += (zero[i] + zero[i + 4]) + (zero[i + 8] + zero[i + 12]);
        }
        (
            f64::from((t1[0] + t1[2]) + (t1[1] + t1[3])),
            f64::from((t2[0] + t2[2]) + (t2[1] + t2[3])),
            f64::from((count[0] + count[2]) + (count[1] + count[3])),
        )
    }
}

/// The value of the first code a group holds.
fn first_counted(v: &[f32; 16], counts: &[u16; 16]) -> Option<f32> {
    v.iter().zip(counts).find(|(_, &c)| c > 0).map(|(&x, _)| x)
}

/// The smaller of two non-NaN values, as a select the compiler vectorises.
#[inline(always)]
fn min4(a: f32, b: f32) -> f32 {
    if b < a {
        b
    } else {
        a
    }
}

/// The larger of two non-NaN values.
#[inline(always)]
fn max4(a: f32, b: f32) -> f32 {
    if b > a {
        b
    } else {
        a
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::decode::ggml;

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

    #[test]
    fn counts_near_u32_max_settle_into_exact_totals() {
        for codec in [ggml::F16, ggml::I8] {
            let mut counts = CodeCounts::for_codec(&codec).unwrap();
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
