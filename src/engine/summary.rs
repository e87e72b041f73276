//! Totals over a checkpoint: tensors, parameters, bytes and bits per weight, by dtype.

use std::collections::BTreeMap;

use super::model::{Checkpoint, Dtype};
use super::st_quant::{roles, Role};

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

/// Totals for the whole checkpoint, per stored dtype and per quantization scheme (largest by
/// bytes first).
///
/// Parameters are logical: a packed tensor of a quantized safetensors checkpoint counts the
/// weights it holds (eight per int32 of 4-bit GPTQ), and its scales, zero points and indexes
/// count none; their bytes are `overhead_bytes`, so bits per weight are the true ones.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    pub all: Totals,
    pub by_dtype: Vec<(String, Totals)>,
    /// The quant mix: each scheme's weights with its overhead, and plain tensors by dtype.
    pub quant_mix: Vec<(String, Totals)>,
    pub overhead_bytes: u64,
}

/// Sum up `cp`'s tensors. Element counts that overflow count as 0 (they are findings already).
pub fn summarize(cp: &Checkpoint) -> Summary {
    let mut all = Totals::default();
    let mut per: BTreeMap<&Dtype, Totals> = BTreeMap::new();
    let mut mix: BTreeMap<String, Totals> = BTreeMap::new();
    let mut overhead_bytes = 0u64;
    for (t, role) in cp.tensors.iter().zip(roles(cp)) {
        let (params, scheme) = match role {
            Role::Plain => (t.elems().unwrap_or(0), None),
            Role::Weight { params, label } => (params, Some(label)),
            Role::Overhead { label } => {
                overhead_bytes = overhead_bytes.saturating_add(t.nbytes);
                (0, Some(label))
            }
        };
        all.add(params, t.nbytes);
        per.entry(&t.dtype).or_default().add(params, t.nbytes);
        mix.entry(scheme.unwrap_or_else(|| t.dtype.name())).or_default().add(params, t.nbytes);
    }
    let sorted = |m: Vec<(String, Totals)>| {
        let mut m = m;
        m.sort_by(|a, b| b.1.bytes.cmp(&a.1.bytes).then_with(|| a.0.cmp(&b.0)));
        m
    };
    let by_dtype = sorted(per.into_iter().map(|(d, t)| (d.name(), t)).collect());
    Summary { all, by_dtype, quant_mix: sorted(mix.into_iter().collect()), overhead_bytes }
}
