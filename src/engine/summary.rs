//! Totals over a checkpoint: tensors, parameters, bytes and bits per weight, by dtype.

use std::collections::BTreeMap;

use super::model::{Checkpoint, Dtype};

/// Totals for one group of tensors.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Totals {
    pub tensors: u64,
    pub params: u64,
    pub bytes: u64,
}

impl Totals {
    fn add(&mut self, params: u64, bytes: u64) {
        self.tensors += 1;
        self.params = self.params.saturating_add(params);
        self.bytes = self.bytes.saturating_add(bytes);
    }

    /// Average bits per parameter (0 when there are none).
    pub fn bits_per_weight(&self) -> f64 {
        if self.params == 0 {
            0.0
        } else {
            self.bytes as f64 * 8.0 / self.params as f64
        }
    }
}

/// Totals for the whole checkpoint and per dtype (largest by bytes first).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    pub all: Totals,
    pub by_dtype: Vec<(String, Totals)>,
}

/// Sum up `cp`'s tensors. Element counts that overflow count as 0 (they are findings already).
pub fn summarize(cp: &Checkpoint) -> Summary {
    let mut all = Totals::default();
    let mut per: BTreeMap<&Dtype, Totals> = BTreeMap::new();
    for t in &cp.tensors {
        let params = t.elems().unwrap_or(0);
        all.add(params, t.nbytes);
        per.entry(&t.dtype).or_default().add(params, t.nbytes);
    }
    let mut by: Vec<(String, Totals)> = per.into_iter().map(|(d, t)| (d.name(), t)).collect();
    by.sort_by(|a, b| b.1.bytes.cmp(&a.1.bytes).then_with(|| a.0.cmp(&b.0)));
    Summary { all, by_dtype: by }
}
