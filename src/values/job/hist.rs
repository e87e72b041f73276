//! The histogram job: statistics and fine buckets of a tensor's selected values (and of its
//! block scales).

use super::scan::{scan_target, HistogramSink, ValueScan, ValuesError};
use crate::model::Tensor;
use crate::plan::Selection;

/// A histogram of one tensor's values.
pub type HistogramJob = ValueScan<HistogramSink>;

/// The histogram of `sel` over `t`; with `scales`, also of its block scales (types that have
/// them).
pub fn histogram_job(t: &Tensor, sel: &Selection, scales: bool) -> Result<HistogramJob, ValuesError> {
    let (plan, codec) = scan_target(t, sel)?;
    let scales = scales && codec.scales.is_some();
    Ok(ValueScan::new(plan, codec, HistogramSink::new(&codec, scales)))
}
