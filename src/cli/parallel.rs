//! Every core: work split into units that threads take in turn, results kept in unit order so
//! they merge exactly as one sequential read would (see `Histogram::join`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::source::run_on;
use crate::engine::decode::BlockCodec;
use crate::engine::job::{scan_targets, CheckOutcome, HistogramSink, NonFiniteSink, ScanOutcome, Sha256Job, ValueScan};
use crate::engine::model::Checkpoint;
use crate::engine::plan::Plan;

/// Threads to use: `TENSORSCOPE_THREADS`, else every core.
pub fn threads() -> usize {
    std::env::var("TENSORSCOPE_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1)
}

/// Pieces a unit of work holds at most (a piece is at most 1 MiB).
const UNIT_PIECES: u64 = 64;

/// `work(i)` for every `i` in `0..n` on `threads` threads; the results in order of `i`, or the
/// first error.
fn map_units<T: Send>(
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

/// Pieces `0..plan.pieces` cut into ranges of at most [`UNIT_PIECES`], at least `threads` of them
/// when there are that many pieces.
fn ranges(plan: &Plan, threads: usize) -> Vec<std::ops::Range<u64>> {
    let per = plan.pieces.div_ceil(threads as u64 * 4).clamp(1, UNIT_PIECES);
    (0..plan.pieces.div_ceil(per)).map(|i| i * per..((i + 1) * per).min(plan.pieces)).collect()
}

/// The histogram of a plan, its pieces read in parallel.
pub fn histogram(cp: &Checkpoint, plan: Plan, codec: BlockCodec, scales: bool) -> Result<HistogramSink, String> {
    let threads = threads();
    let units = ranges(&plan, threads);
    let parts = map_units(units.len(), threads, |i| {
        run_on(ValueScan::part(plan.clone(), codec, HistogramSink::part(&codec, scales), units[i].clone()), cp)
    })?;
    Ok(HistogramSink::join(parts))
}

/// The check's passes: every file hashed (files in parallel), every tensor scanned (pieces of
/// tensors in parallel); the same outcome as the sequential check job.
pub fn check(cp: &Checkpoint, sha256: bool, scan: bool) -> Result<CheckOutcome, String> {
    let threads = threads();
    let mut out = CheckOutcome::default();
    if sha256 {
        let files: Vec<(usize, u64)> = cp.files.iter().map(|f| f.size).enumerate().collect();
        let digests = map_units(files.len(), threads, |i| run_on(Sha256Job::new(vec![files[i]]), cp))?;
        out.digests = Some(digests.into_iter().flatten().collect());
    }
    if scan {
        let targets = scan_targets(cp);
        // Units: (tensor, pieces) over every readable tensor.
        let units: Vec<(usize, std::ops::Range<u64>)> = targets
            .iter()
            .enumerate()
            .filter_map(|(t, target)| target.as_ref().ok().map(|(plan, _)| (t, plan)))
            .flat_map(|(t, plan)| ranges(plan, threads).into_iter().map(move |r| (t, r)))
            .collect();
        let counts = map_units(units.len(), threads, |i| {
            let (t, range) = &units[i];
            let (plan, codec) = targets[*t].as_ref().expect("units are readable tensors");
            run_on(ValueScan::part(plan.clone(), *codec, NonFiniteSink::default(), range.clone()), cp)
        })?;
        let mut sums: Vec<Option<NonFiniteSink>> = vec![None; targets.len()];
        for ((t, _), c) in units.iter().zip(counts) {
            let s = sums[*t].get_or_insert_with(NonFiniteSink::default);
            s.values += c.values;
            s.nan += c.nan;
            s.inf += c.inf;
        }
        let outcomes = targets
            .into_iter()
            .zip(sums)
            .map(|(target, sum)| match target {
                Err(outcome) => outcome,
                Ok(_) => ScanOutcome::Counted(sum.unwrap_or_default()),
            })
            .collect();
        out.scan = Some(outcomes);
    }
    Ok(out)
}
