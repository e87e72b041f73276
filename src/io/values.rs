//! Reading values in the browser: histograms, the check, `.npy` export and value diffs as the
//! engine's splits, run on the worker pool or, where workers cannot run, on the workers' wasm
//! loaded on the page (the same orders and merge either way), over the open files' sources
//! (aligned with the checkpoint's files); metadata array pages on the page.

use std::cell::RefCell;
use std::rc::Rc;

use super::browser;
use super::driver::{run, Cancel};
use super::source::Source;
use super::workers::{OnPart, Pool};
use crate::engine::diff::Diff;
use crate::engine::diff_values::{array_split, compare_split};
use crate::engine::gguf::{Array, ArrayPage};
use crate::engine::job::split::{check_split, histogram_split, npy_split, Split};
use crate::engine::job::work::{Order, Reply, Takers};
use crate::engine::job::Values;
use crate::engine::job::{array_items_job, CheckOutcome, HistogramSink, RunError, ValuesError};
use crate::engine::model::{Checkpoint, Tensor};
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

/// Run a split's orders over `sources` and merge their replies; with the number of workers used
/// (0: the page). `progress(done, total)` is in the split's bytes; streamed output (`.npy`) goes
/// to `on_part`.
async fn run_split<S: Split>(
    split: S,
    sources: &[Source],
    cancel: &Cancel,
    progress: impl FnMut(u64, u64) + 'static,
    on_part: Option<OnPart>,
) -> Result<(S::Output, usize), RunError> {
    let total = split.bytes();
    let progress = Rc::new(RefCell::new(progress));
    (progress.borrow_mut())(0, total);
    let (replies, workers) = run_orders(split.orders(), sources, cancel, progress, on_part).await?;
    let out = split.merge(replies).ok_or(RunError::Read("a reply does not answer its order".into()))?;
    Ok((out, workers))
}

/// The replies to `orders`, from the worker pool, else from the workers' wasm loaded on the page
/// (the same orders and messages either way); with the number of workers used.
async fn run_orders(
    orders: &[Order],
    sources: &[Source],
    cancel: &Cancel,
    progress: Rc<RefCell<impl FnMut(u64, u64) + 'static>>,
    on_part: Option<OnPart>,
) -> Result<(Vec<Reply>, usize), RunError> {
    let p = progress.clone();
    let on_progress = move |d, n| (p.borrow_mut())(d, n);
    if let Some(pool) = Pool::get() {
        match pool.run(orders.to_vec(), sources, cancel, on_progress.clone(), on_part.clone()).await {
            Ok(replies) => return Ok((replies, pool.size())),
            Err(Some(e)) => return Err(e),
            Err(None) => {} // the workers failed: read on the page
        }
    }
    let unavailable =
        || RunError::Read("values cannot be read here: neither Web Workers nor the workers' wasm start".into());
    let pool = Pool::on_page().await.ok_or_else(unavailable)?;
    let replies = pool
        .run(orders.to_vec(), sources, cancel, on_progress, on_part)
        .await
        .map_err(|e| e.unwrap_or_else(unavailable))?;
    Ok((replies, 0))
}

/// Histogram (and, for block-quantized types, the block-scale histogram when `scales`) of the
/// selected values of `t`, with the number of workers used. `progress(done, total)` is in bytes
/// of the plan.
pub async fn histogram(
    cp: &Checkpoint,
    t: &Tensor,
    sources: &[Source],
    sel: &Selection,
    scales: bool,
    cancel: &Cancel,
    progress: impl FnMut(u64, u64) + 'static,
) -> Result<(HistogramSink, usize), ReadError> {
    let workers = Pool::get().map_or(1, |p| p.size());
    let split = histogram_split(cp, t, sel, scales, Takers::Workers(workers))?;
    Ok(run_split(split, sources, cancel, progress, None).await?)
}

/// The whole tensor as a `.npy` Blob built from chunk parts as they are decoded (float32 for
/// float and quantized types): no buffer of the whole tensor is ever held in wasm memory.
pub async fn npy_blob(
    t: &Tensor,
    sources: &[Source],
    cancel: &Cancel,
    progress: impl FnMut(u64, u64) + 'static,
) -> Result<web_sys::Blob, ReadError> {
    let split = npy_split(t, sources.get(t.file).map_or(0, Source::len))?;
    let parts = js_sys::Array::new();
    let sink = parts.clone();
    let on_part: OnPart = Rc::new(move |part| {
        sink.push(&part);
    });
    let (last, _) = run_split(split, sources, cancel, progress, Some(on_part)).await?;
    if !last.is_empty() {
        parts.push(&browser::part(&last));
    }
    browser::blob_of(&parts, "application/octet-stream").map_err(|e| ReadError::Run(RunError::Read(e)))
}

/// The check of `cp` (SHA-256 of every file, NaN/Inf scan of every tensor), with the number of
/// workers used: files are hashed in parallel, tensors scanned in pieces. `progress(done,
/// total)` is in bytes, and starts with `(0, total)`.
pub async fn check(
    cp: &Checkpoint,
    sources: &[Source],
    sha256: bool,
    scan: bool,
    cancel: &Cancel,
    progress: impl FnMut(u64, u64) + 'static,
) -> Result<(CheckOutcome, usize), RunError> {
    let workers = Pool::get().map_or(1, |p| p.size());
    run_split(check_split(cp, sha256, scan, Takers::Workers(workers)), sources, cancel, progress, None).await
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

/// The values of `d`'s pairs compared (`values`: a sample or every element), A's files in
/// `a_sources`, B's in `b_sources`; with the number of workers used.
#[allow(clippy::too_many_arguments)]
pub async fn compare_values(
    d: &Diff,
    a: &Checkpoint,
    b: &Checkpoint,
    a_sources: &[Source],
    b_sources: &[Source],
    values: Values,
    cancel: &Cancel,
    progress: impl FnMut(u64, u64) + 'static,
) -> Result<(Diff, usize), RunError> {
    let sources: Vec<Source> = a_sources.iter().chain(b_sources).cloned().collect();
    run_split(compare_split(d, a, b, values), &sources, cancel, progress, None).await
}

/// The diff's long metadata arrays settled by their bytes (see `diff_values::array_split`).
pub async fn settle_arrays(
    d: &Diff,
    a: &Checkpoint,
    b: &Checkpoint,
    a_sources: &[Source],
    b_sources: &[Source],
    cancel: &Cancel,
) -> Result<Diff, RunError> {
    let split = array_split(d, a, b);
    if split.orders().is_empty() {
        return Ok(split.merge(vec![]).expect("no order, no reply"));
    }
    let sources: Vec<Source> = a_sources.iter().chain(b_sources).cloned().collect();
    Ok(run_split(split, &sources, cancel, |_, _| {}, None).await?.0)
}
