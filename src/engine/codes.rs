//! Histograms in the code domain: for elementwise 8- and 16-bit types (F16, BF16, the FP8s,
//! 8- and 16-bit integers, BOOL), stored codes are counted and each distinct code is converted
//! and binned once, not each element. Counts are integers, so parts read in any order merge
//! exactly; the statistics are taken from the counts in `f64`.

use super::decode::BlockCodec;
use super::histogram::Histogram;
use super::stats::Stats;

/// Counts of the stored codes of one elementwise 1- or 2-byte type.
#[derive(Clone)]
pub struct CodeCounts {
    codec: BlockCodec,
    counts: Vec<u64>,
}

impl std::fmt::Debug for CodeCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodeCounts").field("bytes", &self.codec.block_bytes).finish_non_exhaustive()
    }
}

impl CodeCounts {
    /// Code counting for values stored as `codec`, when each value is one 1- or 2-byte code.
    pub fn for_codec(codec: &BlockCodec) -> Option<CodeCounts> {
        (codec.block_elems == 1 && matches!(codec.block_bytes, 1 | 2))
            .then(|| CodeCounts { codec: *codec, counts: vec![0; 1 << (8 * codec.block_bytes)] })
    }

    /// Count the codes of `bytes` (whole values, little-endian).
    pub fn add(&mut self, bytes: &[u8]) {
        if self.codec.block_bytes == 1 {
            for &b in bytes {
                self.counts[usize::from(b)] += 1;
            }
        } else {
            for c in bytes.chunks_exact(2) {
                self.counts[usize::from(u16::from_le_bytes([c[0], c[1]]))] += 1;
            }
        }
    }

    /// Fold in the counts of another part.
    pub fn merge(&mut self, other: &CodeCounts) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
    }

    /// Each code that occurs, as its value, with its count.
    fn values(&self) -> impl Iterator<Item = (f32, u64)> + Clone + '_ {
        let bytes = self.codec.block_bytes;
        self.counts.iter().enumerate().filter(|(_, &c)| c > 0).map(move |(code, &c)| {
            let le = (code as u16).to_le_bytes();
            let mut v = [0f32];
            (self.codec.decode)(&le[..bytes], &mut v);
            (v[0], c)
        })
    }

    /// The histogram of the values counted.
    pub fn histogram(&self) -> Histogram {
        let mut h = Histogram::default();
        for (v, c) in self.values() {
            h.count(v, c);
        }
        h.stats = Stats::of_counts(self.values());
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::decode::ggml;

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
}
