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
    /// Statistics of `values`: two passes over the slice (it is in cache), so the variance is
    /// stable however large the mean.
    pub fn of(values: &[f32]) -> Stats {
        let mut s = Stats { count: values.len() as u64, ..Stats::default() };
        let mut sum = 0f64;
        for &v in values {
            if v.is_finite() {
                let x = f64::from(v);
                s.finite += 1;
                sum += x;
                s.min = s.min.min(x);
                s.max = s.max.max(x);
                if v == 0.0 {
                    s.zero += 1;
                }
            } else if v.is_nan() {
                s.nan += 1;
            } else if v > 0.0 {
                s.pos_inf += 1;
            } else {
                s.neg_inf += 1;
            }
        }
        if s.finite > 0 {
            s.mean = sum / s.finite as f64;
            s.m2 = values.iter().filter(|v| v.is_finite()).map(|&v| (f64::from(v) - s.mean).powi(2)).sum();
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
