//! The offline check's job: SHA-256 of every file, then the NaN/Inf scan of every tensor.

use super::scan::{nonfinite_job, NonFiniteJob, ScanOutcome};
use super::sha256::Sha256Job;
use super::{Job, JobStep, Progress};
use crate::model::Checkpoint;
use crate::step::FeedError;

/// What a check read: digests (with `--sha256`) and scan outcomes (with `--scan`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CheckOutcome {
    /// One lowercase hex digest per file of the checkpoint.
    pub digests: Option<Vec<String>>,
    /// One outcome per tensor of the checkpoint.
    pub scan: Option<Vec<ScanOutcome>>,
}

/// Hashes then scans, over the checkpoint's files.
pub struct CheckJob {
    hash: Option<Sha256Job>,
    scan: Option<NonFiniteJob>,
    out: CheckOutcome,
    hash_total: u64,
}

/// The check of `cp`: hash every file when `sha256`, scan every tensor when `scan`.
pub fn check_job(cp: &Checkpoint, sha256: bool, scan: bool) -> CheckJob {
    let lens: Vec<u64> = cp.files.iter().map(|f| f.size).collect();
    let hash = sha256.then(|| Sha256Job::all(&lens));
    let hash_total = hash.as_ref().map_or(0, |h| h.progress().total);
    CheckJob { hash, scan: scan.then(|| nonfinite_job(cp)), out: CheckOutcome::default(), hash_total }
}

impl CheckJob {
    /// What the job is doing now: `"sha256"`, `"scan"` or `"done"`.
    pub fn phase(&self) -> &'static str {
        match (&self.hash, &self.scan) {
            (Some(_), _) => "sha256",
            (None, Some(_)) => "scan",
            _ => "done",
        }
    }
}

impl Job for CheckJob {
    type Output = CheckOutcome;

    fn step(&mut self) -> JobStep<CheckOutcome> {
        if let Some(h) = &mut self.hash {
            match h.step() {
                JobStep::Need(n) => return JobStep::Need(n),
                JobStep::Done(d) => {
                    self.out.digests = Some(d);
                    self.hash = None;
                }
            }
        }
        if let Some(s) = &mut self.scan {
            match s.step() {
                JobStep::Need(n) => return JobStep::Need(n),
                JobStep::Done(o) => {
                    self.out.scan = Some(o);
                    self.scan = None;
                }
            }
        }
        JobStep::Done(std::mem::take(&mut self.out))
    }

    fn feed(&mut self, file: usize, offset: u64, bytes: &[u8]) -> Result<(), FeedError> {
        match (&mut self.hash, &mut self.scan) {
            (Some(h), _) => h.feed(file, offset, bytes),
            (None, Some(s)) => s.feed(file, offset, bytes),
            _ => Ok(()),
        }
    }

    fn progress(&self) -> Progress {
        let hashed =
            self.hash.as_ref().map_or(self.out.digests.as_ref().map_or(0, |_| self.hash_total), |h| h.progress().done);
        let scan = self.scan.as_ref().map(|s| s.progress()).unwrap_or_default();
        let scan_total = if self.out.scan.is_some() { 0 } else { scan.total };
        Progress { done: hashed + scan.done, total: self.hash_total + scan_total }
    }

    fn read_ahead(&self) -> u64 {
        match (&self.hash, &self.scan) {
            (Some(h), _) => h.read_ahead(),
            (None, Some(s)) => s.read_ahead(),
            _ => 0,
        }
    }
}
