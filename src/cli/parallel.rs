//! Every core: the engine's work orders (`engine::job::work`) taken by threads in turn, replies
//! kept in order so they merge exactly as one sequential read would.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::progress::Bar;
use super::source::run_on_draining;
use crate::engine::job::work::{check_orders, histogram_orders, join_histogram, order_job, Order, Reply};
use crate::engine::job::Job;
use crate::engine::job::{CheckOutcome, HistogramSink, ValuesError};
use crate::engine::model::{Checkpoint, Tensor};
use crate::engine::plan::Selection;

/// Threads to use: `TENSORSCOPE_THREADS`, else every core.
pub fn threads() -> usize {
    std::env::var("TENSORSCOPE_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1)
}

/// `work(i)` for every `i` in `0..n` on `threads` threads; the results in order of `i`, or the
/// first error.
pub fn map_units<T: Send>(
    n: usize,
    threads: usize,
    work: impl Fn(usize) -> Result<T, String> + Sync,
) -> Result<Vec<T>, String> {
    let next = AtomicUsize::new(0);
    let out: Mutex<Vec<Option<Result<T, String>>>> = Mutex::new((0..n).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..threads.clamp(1, n.max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                let r = work(i);
                let failed = r.is_err();
                out.lock().expect("no thread panics holding the lock")[i] = Some(r);
                if failed {
                    next.store(n, Ordering::Relaxed);
                }
            });
        }
    });
    let results = out.into_inner().expect("no thread panics holding the lock");
    results.into_iter().map(|r| r.unwrap_or_else(|| Err("a unit did not run".into()))).collect()
}

/// Every order on the threads, its replies in order; a progress bar (`what`) over their bytes.
pub fn run_orders(cp: &Checkpoint, orders: &[Order], what: &str) -> Result<Vec<Reply>, String> {
    let total = orders.iter().filter_map(|o| order_job(o).ok()).map(|j| j.progress().total).sum();
    let bar = Bar::new(total, what);
    map_units(orders.len(), threads(), |i| {
        let job = order_job(&orders[i]).map_err(|e| e.to_string())?;
        let mut last = 0;
        run_on_draining(job, cp, |j| {
            let done = j.progress().done;
            bar.add(done.saturating_sub(last));
            last = done;
            Ok(())
        })
    })
}

/// The histogram of `sel` over `t`, its pieces read in parallel.
pub fn histogram(cp: &Checkpoint, t: &Tensor, sel: &Selection, scales: bool) -> Result<HistogramSink, String> {
    let bad = |e: ValuesError| format!("tensor '{}': {e}", t.name);
    let orders = histogram_orders(cp, t, sel, scales, threads()).map_err(bad)?;
    join_histogram(run_orders(cp, &orders, "histogram")?).ok_or_else(|| "a part's reply is not a histogram".into())
}

/// The check's passes: every file hashed (files in parallel), every tensor scanned (pieces of
/// tensors in parallel); the same outcome as the sequential check job.
pub fn check(cp: &Checkpoint, sha256: bool, scan: bool) -> Result<CheckOutcome, String> {
    let plan = check_orders(cp, sha256, scan, threads());
    let what = match (sha256, scan) {
        (true, true) => "hashing and scanning",
        (true, false) => "hashing",
        _ => "scanning",
    };
    let replies = run_orders(cp, &plan.orders, what)?;
    plan.merge(replies).ok_or_else(|| "a reply does not answer its order".into())
}
