//! The report of `tensorscope hist`: statistics and bins of a tensor's (selected) values.

use serde_json::{json, Value as Json};

use super::histogram::Histogram;
use super::model::Tensor;

/// The JSON of `DESIGN.md` for a histogram of `t` over `count` values in `bins` bins.
pub fn hist_json(t: &Tensor, h: &Histogram, bins: usize) -> Json {
    let s = &h.stats;
    let b = h.bins(bins);
    let finite_or_null = |v: f64| if v.is_finite() { json!(v) } else { Json::Null };
    json!({
        "tensor": t.name,
        "dtype": t.dtype.name(),
        "elements": t.elems().unwrap_or(0),
        "count": s.count,
        "nan": s.nan,
        "inf": s.pos_inf + s.neg_inf,
        "zero": s.zero,
        "min": finite_or_null(s.min),
        "max": finite_or_null(s.max),
        "mean": if s.finite > 0 { json!(s.mean) } else { Json::Null },
        "std": if s.finite > 0 { json!(s.std()) } else { Json::Null },
        "lo": b.lo,
        "hi": b.hi,
        "bins": b.counts,
    })
}
