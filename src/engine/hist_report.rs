//! The report of `tensorscope hist`: statistics and bins of a tensor's (selected) values.

use serde::Serialize;

use super::histogram::Histogram;
use super::model::Tensor;
use super::report::Float;

/// The JSON of `DESIGN.md` for a histogram: statistics over the finite values (`min`, `max`,
/// `mean` and `std` are `null` when there are none), `scales` when block scales were taken, and
/// `values` when the values counted are not the stored ones (`"magnitude"`: `|z|` of complex64).
#[derive(Serialize)]
pub struct HistReport {
    pub tensor: String,
    pub dtype: String,
    pub elements: u64,
    pub count: u64,
    pub nan: u64,
    pub inf: u64,
    pub zero: u64,
    pub min: Option<Float>,
    pub max: Option<Float>,
    pub mean: Option<Float>,
    pub std: Option<Float>,
    pub lo: Float,
    pub hi: Float,
    pub bins: Vec<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scales: Option<Box<HistReport>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub values: Option<&'static str>,
}

impl HistReport {
    /// The report of histogram `h` of tensor `t` in `bins` bins, with `scales` of its block
    /// scales when given.
    pub fn new(t: &Tensor, h: &Histogram, bins: usize, scales: Option<&Histogram>) -> Self {
        let s = &h.stats;
        let b = h.bins(bins);
        let finite = |v: f64| (s.finite > 0).then_some(Float(v));
        HistReport {
            tensor: t.name.clone(),
            dtype: t.dtype.name(),
            elements: t.elems().unwrap_or(0),
            count: s.count,
            nan: s.nan,
            inf: s.pos_inf + s.neg_inf,
            zero: s.zero,
            min: finite(s.min),
            max: finite(s.max),
            mean: finite(s.mean),
            std: finite(s.std()),
            lo: Float(b.lo),
            hi: Float(b.hi),
            bins: b.counts,
            scales: scales.map(|sc| Box::new(HistReport::new(t, sc, bins, None))),
            values: super::decode::values_are(&t.dtype),
        }
    }

    /// Pretty JSON and a newline, as the CLI prints it.
    pub fn to_text(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }
}
