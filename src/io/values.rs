//! Reading a tensor's values in the browser: the engine's histogram and `.npy` jobs over the
//! open files' sources (aligned with the checkpoint's files).

use super::browser;
use super::driver::{run, Cancel};
use super::source::Source;
use crate::engine::gguf::{Array, ArrayPage};
use crate::engine::job::{array_items_job, histogram_job, npy_job, HistogramSink, Job, RunError, ValuesError};
use crate::engine::model::Tensor;
use crate::engine::plan::Selection;

/// Why values could not be read.
#[derive(Clone, Debug, PartialEq)]
pub enum ReadError {
    /// The dtype has no decoder, or the tensor's data cannot be located.
    Values(ValuesError),
    Run(RunError),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Values(e) => write!(f, "{e}"),
            ReadError::Run(e) => write!(f, "{e}"),
        }
    }
}

impl From<RunError> for ReadError {
    fn from(e: RunError) -> Self {
        ReadError::Run(e)
    }
}

impl From<ValuesError> for ReadError {
    fn from(e: ValuesError) -> Self {
        ReadError::Values(e)
    }
}

/// Histogram (and, for block-quantized types, the block-scale histogram when `scales`) of the
/// selected values of `t`. `progress(done, total)` is in bytes of the plan.
pub async fn histogram(
    t: &Tensor,
    sources: &[Source],
    sel: &Selection,
    scales: bool,
    cancel: &Cancel,
    mut progress: impl FnMut(u64, u64),
) -> Result<HistogramSink, ReadError> {
    let job = histogram_job(t, sel, scales)?;
    let total = job.plan().bytes;
    progress(0, total);
    let sink = run(job, sources, cancel, |j| {
        let p = j.progress();
        progress(p.done, p.total);
    })
    .await?;
    progress(total, total);
    Ok(sink)
}

/// The whole tensor as a `.npy` Blob built from chunk parts as they are decoded (float32 for
/// float and quantized types): no buffer of the whole tensor is ever held in wasm memory.
pub async fn npy_blob(
    t: &Tensor,
    sources: &[Source],
    cancel: &Cancel,
    mut progress: impl FnMut(u64, u64),
) -> Result<web_sys::Blob, ReadError> {
    let job = npy_job(t)?;
    let parts = js_sys::Array::new();
    let mut sink = run(job, sources, cancel, |j| {
        let out = j.sink_mut().take();
        if !out.is_empty() {
            parts.push(&browser::part(&out));
        }
        let p = j.progress();
        progress(p.done, p.total);
    })
    .await?;
    let out = sink.take();
    if !out.is_empty() {
        parts.push(&browser::part(&out));
    }
    browser::blob_of(&parts, "application/octet-stream").map_err(|e| ReadError::Run(RunError::Read(e)))
}

/// Items `first..first + count` of a metadata array stored in file `file` (big-endian when
/// `big_endian`: see `Checkpoint::meta_file` and `Checkpoint::big_endian`); with `query`, the
/// first `count` items matching it, and how many match.
#[allow(clippy::too_many_arguments)]
pub async fn array_items(
    array: &Array,
    sources: &[Source],
    file: usize,
    big_endian: bool,
    first: u64,
    count: u64,
    query: Option<&str>,
    cancel: &Cancel,
) -> Result<ArrayPage, RunError> {
    run(array_items_job(array, file, big_endian, first, count, query), sources, cancel, |_| {}).await
}
