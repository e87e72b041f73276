//! Totals over a checkpoint: tensors, parameters, bytes and bits per weight, by dtype.

use std::collections::BTreeMap;

use super::model::{Checkpoint, Dtype, Tensor};
use super::st_quant::{params, quant_roles, Role};

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
    let roles = quant_roles(cp);
    let mut tally = Tally::default();
    for (i, t) in cp.tensors.iter().enumerate() {
        let role = roles.as_ref().map(|r| &r[i]);
        tally.add(t, params(t, role), role);
    }
    tally.finish()
}

/// A [`Summary`] gathered a tensor at a time.
#[derive(Default)]
pub struct Tally<'a> {
    all: Totals,
    // Few distinct dtypes and schemes, many tensors: short lists, searched from the last hit.
    per: Vec<(&'a Dtype, Totals)>,
    schemes: BTreeMap<String, Totals>,
    plain: Vec<(&'a Dtype, Totals)>,
    overhead_bytes: u64,
}

impl<'a> Tally<'a> {
    /// Count `t`, holding `params` logical parameters, in its `role` (`None`: plain).
    pub fn add(&mut self, t: &'a Tensor, params: u64, role: Option<&Role>) {
        let scheme = match role {
            None | Some(Role::Plain) => None,
            Some(Role::Weight { label, .. }) => Some(label),
            Some(Role::Overhead { label }) => {
                self.overhead_bytes = self.overhead_bytes.saturating_add(t.nbytes);
                Some(label)
            }
        };
        self.all.add(params, t.nbytes);
        by_key(&mut self.per, &t.dtype).add(params, t.nbytes);
        match scheme {
            Some(label) => match self.schemes.get_mut(label) {
                Some(totals) => totals,
                None => self.schemes.entry(label.clone()).or_default(),
            },
            None => by_key(&mut self.plain, &t.dtype),
        }
        .add(params, t.nbytes);
    }

    /// The summary of every tensor added.
    pub fn finish(self) -> Summary {
        let mut mix: BTreeMap<String, Totals> = self.schemes;
        for (d, t) in self.plain {
            mix.entry(d.name()).or_default().merge(&t);
        }
        let mut named: BTreeMap<String, Totals> = BTreeMap::new();
        for (d, t) in self.per {
            named.entry(d.name()).or_default().merge(&t);
        }
        let sorted = |m: BTreeMap<String, Totals>| {
            let mut m: Vec<(String, Totals)> = m.into_iter().collect();
            crate::sort::sort_by(&mut m, |a, b| b.1.bytes.cmp(&a.1.bytes).then_with(|| a.0.cmp(&b.0)));
            m
        };
        Summary { all: self.all, by_dtype: sorted(named), quant_mix: sorted(mix), overhead_bytes: self.overhead_bytes }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::st_quant::logical_params;
    use crate::st_quant::tests::gptq_checkpoint;

    #[test]
    fn a_gptq_mix_counts_its_scales_and_zeros_as_overhead() {
        let cp = gptq_checkpoint();
        let s = summarize(&cp);
        let (label, t) = &s.quant_mix[0];
        assert_eq!(label, "GPTQ 4-bit (group 128)");
        assert_eq!((t.tensors, t.params), (4, 4096 * 1024));
        assert_eq!(t.bytes, 512 * 1024 * 4 + 32 * 128 * 4 + 32 * 1024 * 2 + 4096 * 4);
        // 4 bits, + 16/128 of scales, + 4/128 of zeros, + 32 bits of g_idx per 1024 outputs.
        assert_eq!(t.bits_per_weight(), 4.0 + 0.125 + 0.03125 + 0.03125);
        assert_eq!(s.overhead_bytes, 32 * 128 * 4 + 32 * 1024 * 2 + 4096 * 4);
        assert_eq!(s.all.params, 4096 * 1024 + 10 * 4096, "packed weights counted as weights, scales not at all");
        assert_eq!(logical_params(&cp), [4096 * 1024, 0, 0, 0, 10 * 4096], "what the table and detail show");
        let i32s = s.by_dtype.iter().find(|(d, _)| d == "I32").unwrap();
        assert_eq!(i32s.1.params, 4096 * 1024, "by dtype too: qzeros and g_idx hold no parameters");
    }
}
