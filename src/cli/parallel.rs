//! Every core: the orders of an operation's split (`engine::job::split`) taken by threads in
//! turn, replies kept in order so they merge exactly as one sequential read would.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::placement::Cores;
use super::progress::Bar;
use super::source::{run_job_sharing, SharedMaps};
use crate::engine::job::split::{check_split, histogram_split, Split};
use crate::engine::job::work::{order_job, Takers};
use crate::engine::job::{CheckOutcome, HistogramSink, Job};
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
    let take_units = || loop {
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
    };
    // The calling thread is one of them: a thread of its own would only add a wake-up on
    // another core (and, for mapped files, that core to every unmapping's TLB shootdown).
    let (cores, take_units) = (&Cores::here(), &take_units);
    let mut helpers = Helpers(Vec::new());
    for k in 0..threads.clamp(1, n.max(1)) - 1 {
        // A helper waits until it is placed: one that ran out of units and ended first would
        // leave its handle naming no thread, and placing it would place the caller instead.
        let (placed, wait) = std::sync::mpsc::sync_channel::<()>(1);
        let helper = move || {
            let _ = wait.recv();
            cores.release();
            take_units();
        };
        // SAFETY: every helper is joined before what it borrows goes: below, or by `Helpers`'
        // drop when the calling thread unwinds.
        let spawned = unsafe { std::thread::Builder::new().spawn_unchecked(helper) };
        let handle = spawned.expect("a thread can be spawned");
        cores.place(k, &handle);
        let _ = placed.send(());
        helpers.0.push(handle);
    }
    take_units();
    // Every helper is joined before a panic goes on: one still running borrows this frame.
    let panics: Vec<_> = helpers.0.drain(..).filter_map(|h| h.join().err()).collect();
    if let Some(panic) = panics.into_iter().next() {
        std::panic::resume_unwind(panic);
    }
    let results = out.into_inner().expect("no thread panics holding the lock");
    results.into_iter().map(|r| r.unwrap_or_else(|| Err("a unit did not run".into()))).collect()
}

/// Helper threads, joined when dropped (their panics then ignored: the caller is unwinding).
struct Helpers(Vec<std::thread::JoinHandle<()>>);

impl Drop for Helpers {
    fn drop(&mut self) {
        for h in self.0.drain(..) {
            let _ = h.join();
        }
    }
}

/// A split's orders on the threads over the files `paths` (of `lens` bytes; a diff's B files
/// after A's), merged in order; a progress bar (`what`) over the split's bytes.
pub fn run_split<S: Split>(split: S, paths: &[&str], lens: &[u64], what: &str) -> Result<S::Output, String> {
    let bar = Bar::new(split.bytes(), what);
    let orders = split.orders();
    let maps = SharedMaps::default();
    let replies = map_units(orders.len(), threads(), |i| {
        let job = order_job(&orders[i]).map_err(|e| e.to_string())?;
        let mut last = 0;
        run_job_sharing(job, paths, lens.to_vec(), Some(&maps), |j| {
            let done = j.progress().done;
            bar.add(done.saturating_sub(last));
            last = done;
            Ok(())
        })
    })?;
    split.merge(replies).ok_or_else(|| format!("{what}: a reply does not answer its order"))
}

/// [`run_split`] over the files of `cp`.
pub fn run_split_on<S: Split>(split: S, cp: &Checkpoint, what: &str) -> Result<S::Output, String> {
    let paths: Vec<&str> = cp.files.iter().map(|f| f.path.as_str()).collect();
    let lens: Vec<u64> = cp.files.iter().map(|f| f.size).collect();
    run_split(split, &paths, &lens, what)
}

/// The histogram of `sel` over `t`, its pieces read in parallel.
pub fn histogram(cp: &Checkpoint, t: &Tensor, sel: &Selection, scales: bool) -> Result<HistogramSink, String> {
    let split = histogram_split(cp, t, sel, scales, Takers::Threads(threads()))
        .map_err(|e| format!("tensor '{}': {e}", t.name))?;
    run_split_on(split, cp, "histogram")
}

/// The check's passes: every file hashed (files in parallel), every tensor scanned (pieces of
/// tensors in parallel); the same outcome as the sequential check job.
pub fn check(cp: &Checkpoint, sha256: bool, scan: bool) -> Result<CheckOutcome, String> {
    let what = match (sha256, scan) {
        (true, true) => "hashing and scanning",
        (true, false) => "hashing",
        _ => "scanning",
    };
    run_split_on(check_split(cp, sha256, scan, Takers::Threads(threads())), cp, what)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_come_back_in_order_on_any_number_of_threads() {
        for threads in [1, 2, 5] {
            let out = map_units(23, threads, |i| Ok((i, std::thread::current().id()))).unwrap();
            assert_eq!(out.iter().map(|(i, _)| *i).collect::<Vec<_>>(), (0..23).collect::<Vec<_>>());
            if threads == 1 {
                let here = std::thread::current().id();
                assert!(out.iter().all(|(_, t)| *t == here), "one thread is the caller's own");
            }
        }
        assert!(map_units(0, 2, Ok).unwrap().is_empty());
    }

    #[test]
    fn more_threads_run_units_at_once() {
        // Unit 0 waits until another unit runs beside it: one thread alone would never finish it.
        let started = AtomicUsize::new(0);
        let out = map_units(2, 2, |_| {
            started.fetch_add(1, Ordering::SeqCst);
            let t0 = std::time::Instant::now();
            while started.load(Ordering::SeqCst) < 2 {
                if t0.elapsed() > std::time::Duration::from_secs(10) {
                    return Err("alone".to_string());
                }
                std::thread::yield_now();
            }
            Ok(std::thread::current().id())
        })
        .unwrap();
        assert_ne!(out[0], out[1]);
    }

    #[test]
    fn a_unit_s_panic_reaches_the_caller_once_every_thread_is_joined() {
        for threads in [1, 2, 4] {
            let running = AtomicUsize::new(0);
            let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                map_units(16, threads, |i| {
                    running.fetch_add(1, Ordering::SeqCst);
                    let _done = Done(&running);
                    if i == 5 {
                        panic!("unit {i}");
                    }
                    Ok(i)
                })
            }));
            let panic = caught.expect_err("the panic is the caller's");
            assert_eq!(panic.downcast_ref::<String>().map(String::as_str), Some("unit 5"), "{threads} threads");
            assert_eq!(running.load(Ordering::SeqCst), 0, "no unit runs on once the caller has the panic");
        }
    }

    /// The caller's cores are its own again once the units are done, however quickly its
    /// helpers ran out of units (a helper ended before it was placed once made the caller be
    /// placed in its stead).
    #[cfg(target_os = "linux")]
    #[test]
    fn the_caller_keeps_its_cores() {
        let cores = crate::cli::placement::tests::own_cores;
        let before = cores();
        for round in 0..300 {
            map_units(1 + round % 3, 8, Ok).unwrap();
            assert_eq!(cores(), before, "round {round}");
        }
    }

    /// Counts a unit out of `running` when it ends, panicking or not.
    struct Done<'a>(&'a AtomicUsize);

    impl Drop for Done<'_> {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_failed_unit_is_the_result() {
        for threads in [1, 3] {
            let err = map_units(10, threads, |i| if i == 4 { Err(format!("unit {i}")) } else { Ok(i) });
            assert_eq!(err.unwrap_err(), "unit 4", "{threads} threads");
        }
    }
}
