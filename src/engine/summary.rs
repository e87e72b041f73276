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

    fn merge(&mut self, other: &Totals) {
        self.tensors += other.tensors;
        self.params = self.params.saturating_add(other.params);
        self.bytes = self.bytes.saturating_add(other.bytes);
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

/// The totals kept for `key` in `list`, added if new; the last entry is looked at first.
fn by_key<'a, 'l>(list: &'l mut Vec<(&'a Dtype, Totals)>, key: &'a Dtype) -> &'l mut Totals {
    let i = match list.iter().rposition(|(d, _)| *d == key) {
        Some(i) => i,
        None => {
            list.push((key, Totals::default()));
            list.len() - 1
        }
    };
    let n = list.len() - 1;
    list.swap(i, n);
    &mut list[n].1
}

/// Sum up `cp`'s tensors. Element counts that overflow count as 0 (they are findings already).
pub fn summarize(cp: &Checkpoint) -> Summary {
    let mut all = Totals::default();
    // Few distinct dtypes and schemes, many tensors: short lists, searched from the last hit.
    let mut per: Vec<(&Dtype, Totals)> = Vec::new();
    let mut schemes: BTreeMap<String, Totals> = BTreeMap::new();
    let mut plain: Vec<(&Dtype, Totals)> = Vec::new();
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
        by_key(&mut per, &t.dtype).add(params, t.nbytes);
        match scheme {
            Some(label) => schemes.entry(label).or_default(),
            None => by_key(&mut plain, &t.dtype),
        }
        .add(params, t.nbytes);
    }
    let mut mix: BTreeMap<String, Totals> = schemes;
    for (d, t) in plain {
        mix.entry(d.name()).or_default().merge(&t);
    }
    let mut named: BTreeMap<String, Totals> = BTreeMap::new();
    for (d, t) in per {
        named.entry(d.name()).or_default().merge(&t);
    }
    let sorted = |m: Vec<(String, Totals)>| {
        let mut m = m;
        m.sort_by(|a, b| b.1.bytes.cmp(&a.1.bytes).then_with(|| a.0.cmp(&b.0)));
        m
    };
    let by_dtype = sorted(named.into_iter().collect());
    Summary { all, by_dtype, quant_mix: sorted(mix.into_iter().collect()), overhead_bytes }
}
