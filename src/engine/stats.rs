//! Summary statistics over decoded values, mergeable chunk by chunk.

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
    /// Statistics of `values`, in one pass: sums are taken relative to the first finite
    /// value (a shift that keeps the variance stable however large the mean), in eight
    /// independent `f64` lanes the compiler can vectorise.
    pub fn of(values: &[f32]) -> Stats {
        let non_finite = values.iter().filter(|v| !v.is_finite()).count();
        if non_finite > 0 {
            let mut s = Stats::of_finite(&values.iter().copied().filter(|v| v.is_finite()).collect::<Vec<_>>());
            s.count += non_finite as u64;
            for &v in values.iter().filter(|v| !v.is_finite()) {
                match v {
                    f32::INFINITY => s.pos_inf += 1,
                    f32::NEG_INFINITY => s.neg_inf += 1,
                    _ => s.nan += 1,
                }
            }
            return s;
        }
        Stats::of_finite(values)
    }

    /// [`Stats::of`] for values known to be finite. Sums of deviations from the first value are
    /// taken in eight `f32` lanes over runs of 64 values (relative error about 5e-7 per run) and
    /// carried in `f64` between runs, so the loop vectorises and error does not build up.
    fn of_finite(values: &[f32]) -> Stats {
        const LANES: usize = 8;
        const RUN: usize = 64;
        let Some(&first) = values.first() else {
            return Stats::default();
        };
        let (mut lo, mut hi) = ([first; LANES], [first; LANES]);
        let (mut sum, mut sq) = (0f64, 0f64);
        let mut runs = values.chunks_exact(RUN);
        for run in &mut runs {
            let (mut s, mut q) = ([0f32; LANES], [0f32; LANES]);
            for c in run.chunks_exact(LANES) {
                for i in 0..LANES {
                    let v = c[i];
                    lo[i] = if v < lo[i] { v } else { lo[i] };
                    hi[i] = if v > hi[i] { v } else { hi[i] };
                    let d = v - first;
                    s[i] += d;
                    q[i] += d * d;
                }
            }
            sum += s.iter().map(|&x| f64::from(x)).sum::<f64>();
            sq += q.iter().map(|&x| f64::from(x)).sum::<f64>();
        }
        let zeros = values.iter().filter(|&&v| v == 0.0).count() as u64;
        let (mut min, mut max) = (lo.iter().copied().fold(first, f32::min), hi.iter().copied().fold(first, f32::max));
        for &v in runs.remainder() {
            min = min.min(v);
            max = max.max(v);
            let d = f64::from(v) - f64::from(first);
            sum += d;
            sq += d * d;
        }
        let n = values.len() as f64;
        let mean_shifted = sum / n;
        Stats {
            count: values.len() as u64,
            finite: values.len() as u64,
            zero: zeros,
            min: f64::from(min),
            max: f64::from(max),
            mean: f64::from(first) + mean_shifted,
            m2: (sq - sum * mean_shifted).max(0.0),
            ..Stats::default()
        }
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
                s.min = s.min.min(f64::from(v));
                s.max = s.max.max(f64::from(v));
            }
        }
        s.finite = n;
        if n > 0 {
            s.mean = sum / n as f64;
            s.m2 = items.filter(|(v, _)| v.is_finite()).map(|(v, c)| (f64::from(v) - s.mean).powi(2) * c as f64).sum();
        }
        s
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
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
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
    fn special_values_are_counted_apart() {
        let s = Stats::of(&[f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0, 2.0]);
        assert_eq!((s.count, s.nan, s.pos_inf, s.neg_inf, s.zero, s.finite), (6, 1, 1, 1, 2, 3));
        assert_eq!((s.min, s.max), (0.0, 2.0));
        let empty = Stats::of(&[]);
        assert_eq!(empty.std(), 0.0);
    }
}
