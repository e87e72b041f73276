//! The `.npy` export job: the `.npy` header, then the tensor's values (float32) or stored bytes
//! (integers, bool, complex), produced chunk by chunk for the driver to write out.

use super::scan::{scan_target, Sink, ValueScan, ValuesError};
use crate::model::Tensor;
use crate::npy;
use crate::plan::Selection;

/// Collects `.npy` bytes; the driver drains them with [`NpySink::take`] as the job goes.
#[derive(Debug, Default)]
pub struct NpySink {
    raw: bool,
    out: Vec<u8>,
}

impl NpySink {
    /// The bytes produced since the last call.
    pub fn take(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.out)
    }
}

impl Sink for NpySink {
    fn wants_values(&self) -> bool {
        !self.raw
    }
    fn values(&mut self, _first_elem: u64, values: &[f32]) {
        self.out.reserve(values.len() * 4);
        for v in values {
            self.out.extend_from_slice(&v.to_le_bytes());
        }
    }
    fn raw(&mut self, bytes: &[u8]) {
        self.out.extend_from_slice(bytes);
    }
}

/// The `.npy` file of tensor `t`, chunk by chunk: drain `job.sink_mut().take()` after every
/// feed, and the finished sink once at the end.
pub type NpyJob = ValueScan<NpySink>;

/// The export of `t` as `.npy`; its first output is the `.npy` header.
pub fn npy_job(t: &Tensor) -> Result<NpyJob, ValuesError> {
    let (descr, raw) = npy::layout(&t.dtype).ok_or_else(|| ValuesError::Undecodable(t.dtype.name()))?;
    let (plan, codec) = scan_target(t, &Selection::Whole)?;
    let sink = NpySink { raw, out: npy::header(descr, &npy::numpy_shape(t)) };
    Ok(ValueScan::new(plan, codec, sink))
}
