//! Reading a tensor's values in the browser: the engine's histogram and `.npy` jobs over the
//! open files' sources (aligned with the checkpoint's files).

use std::cell::RefCell;
use std::rc::Rc;

use super::browser;
use super::driver::{run, Cancel};
use super::source::Source;
use super::workers::{OnPart, Pool};
use crate::engine::gguf::{Array, ArrayPage};
use crate::engine::job::work::{check_orders, histogram_orders, join_histogram, Order, Reply, TensorRef};
use crate::engine::job::{array_items_job, histogram_job, npy_job, HistogramSink, Job, RunError, ValuesError};
use crate::engine::job::{check_job, CheckOutcome};
use crate::engine::model::Checkpoint;
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
/// selected values of `t`, on the workers (or on the page where workers cannot run), with the
/// number of workers used. `progress(done, total)` is in bytes of the plan.
pub async fn histogram(
    t: &Tensor,
    sources: &[Source],
    sel: &Selection,
    scales: bool,
    cancel: &Cancel,
    progress: impl FnMut(u64, u64) + 'static,
) -> Result<(HistogramSink, usize), ReadError> {
    let progress = Rc::new(RefCell::new(progress));
    if let Some(pool) = Pool::get() {
        let len = sources.get(t.file).map_or(0, Source::len);
        let orders = histogram_orders(t, len, sel, scales, pool.size())?;
        let p = progress.clone();
        match pool.run(orders, sources, cancel, move |d, n| (p.borrow_mut())(d, n)).await {
            Ok(replies) => {
                let sink = join_histogram(replies).ok_or(RunError::Read("a part is not a histogram".into()))?;
                return Ok((sink, pool.size()));
            }
            Err(Some(e)) => return Err(e.into()),
            Err(None) => {} // the workers failed: read on the page
        }
    }
    let mut progress = move |d, n| (progress.borrow_mut())(d, n);
    Ok((histogram_here(t, sources, sel, scales, cancel, &mut progress).await?, 0))
}

/// [`histogram`] on the page itself.
async fn histogram_here(
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
/// float and quantized types), on a worker (or on the page where workers cannot run): no buffer
/// of the whole tensor is ever held in wasm memory.
pub async fn npy_blob(
    t: &Tensor,
    sources: &[Source],
    cancel: &Cancel,
    progress: impl FnMut(u64, u64) + 'static,
) -> Result<web_sys::Blob, ReadError> {
    let progress = Rc::new(RefCell::new(progress));
    let parts = js_sys::Array::new();
    let blob = |parts: &js_sys::Array| {
        browser::blob_of(parts, "application/octet-stream").map_err(|e| ReadError::Run(RunError::Read(e)))
    };
    if let Some(pool) = Pool::get() {
        npy_job(t)?; // the same refusal as on the page, before any worker starts
        let len = sources.get(t.file).map_or(0, Source::len);
        let tensor = TensorRef::of(t, len).ok_or_else(|| ValuesError::Undecodable(t.dtype.name()))?;
        let p = progress.clone();
        let sink = parts.clone();
        let on_part: OnPart = Rc::new(move |part| {
            sink.push(&part);
        });
        let orders = vec![Order::Npy { tensor }];
        match pool.run_streaming(orders, sources, cancel, move |d, n| (p.borrow_mut())(d, n), Some(on_part)).await {
            Ok(replies) => {
                for r in replies {
                    if let Reply::Npy(last) = r {
                        if !last.is_empty() {
                            parts.push(&browser::part(&last));
                        }
                    }
                }
                return blob(&parts);
            }
            Err(Some(e)) => return Err(e.into()),
            Err(None) => parts.set_length(0),
        }
    }
    let job = npy_job(t)?;
    let mut sink = run(job, sources, cancel, |j| {
        let out = j.sink_mut().take();
        if !out.is_empty() {
            parts.push(&browser::part(&out));
        }
        let p = j.progress();
        (progress.borrow_mut())(p.done, p.total);
    })
    .await?;
    let out = sink.take();
    if !out.is_empty() {
        parts.push(&browser::part(&out));
    }
    blob(&parts)
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

/// The check of `cp` (SHA-256 of every file, NaN/Inf scan of every tensor) on the workers, or on
/// the page where workers cannot run, with the number of workers used. `progress(done, total,
/// phase)` is in bytes; `phase` names the pass on the page, `None` on the workers (both at once).
pub async fn check(
    cp: &Checkpoint,
    sources: &[Source],
    sha256: bool,
    scan: bool,
    cancel: &Cancel,
    progress: impl FnMut(u64, u64, Option<&'static str>) + 'static,
) -> Result<(CheckOutcome, usize), RunError> {
    let progress = Rc::new(RefCell::new(progress));
    if let Some(pool) = Pool::get() {
        let plan = check_orders(cp, sha256, scan, pool.size());
        let orders = plan.orders.clone();
        let p = progress.clone();
        match pool.run(orders, sources, cancel, move |d, n| (p.borrow_mut())(d, n, None)).await {
            Ok(replies) => {
                let out = plan.merge(replies).ok_or(RunError::Read("a reply does not answer its order".into()))?;
                return Ok((out, pool.size()));
            }
            Err(Some(e)) => return Err(e),
            Err(None) => {}
        }
    }
    let out = run(check_job(cp, sha256, scan), sources, cancel, |j| {
        let p = j.progress();
        (progress.borrow_mut())(p.done, p.total, Some(j.phase()));
    })
    .await?;
    Ok((out, 0))
}
