//! The job layer: everything that reads bytes after (or while) opening is a sans-IO job, built by
//! one function each and run unchanged by every driver (the CLI's positioned reads, the
//! browser's `File.slice()` and HTTP ranges, Web Workers).
//!
//! A [`Job`] asks for bytes of one of several files ([`Need`]); a [`Runner`] plans the reads
//! (chunking, read-ahead, strict end of file) and feeds the job. A driver only moves bytes:
//!
//! ```text
//! loop { match runner.poll()? { Poll::Read(file, range) => runner.fill(file, range, read(file, range)?)?,
//!                               Poll::Fed => { /* progress, yield, cancel */ }, Poll::Done(out) => return out } }
//! ```

mod array;
mod check;
mod compare;
mod hist;
mod npy;
mod open;
mod order_bytes;
mod runner;
pub mod scaled;
mod scan;
mod sha256;
pub mod split;
pub use crate::wire;
pub mod work;

pub use array::{array_items_job, ArrayItemsJob};
pub use check::{check_job, CheckJob, CheckOutcome};
pub use compare::{compare_job, compare_plan, CompareError, CompareJob, ComparePlan, Pairing, ValueDiff, Values};
pub use hist::{histogram_job, HistogramJob};
pub use npy::{npy_job, npy_plan, NpyJob, NpySink};
pub use open::{headers_job, HeadersJob};
pub use runner::{run, run_draining, run_in_place, run_reusing, InPlace, Poll, ReadOpts, RunError, Runner};
pub use scan::{
    nonfinite_job, plan_target, plan_targets, scan_target, scan_targets, HistogramSink, NonFiniteJob, NonFiniteSink,
    ScanOutcome, Sink, ValueScan, ValuesError,
};
pub use sha256::{hex, Sha256Job};

use super::range::ByteRange;
use super::step::{Decoder, FeedError, Step};

/// Bytes `range` of file `file` (an index into the job's files).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Need {
    pub file: usize,
    pub range: ByteRange,
}

/// What a job wants next.
#[derive(Debug, PartialEq)]
pub enum JobStep<T> {
    /// Bytes starting at `need.range.start`; any non-empty prefix of the range is progress.
    Need(Need),
    Done(T),
}

/// Bytes done and in all, for a progress bar.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    pub done: u64,
    pub total: u64,
}

/// A push-based computation over the bytes of one or more files.
pub trait Job {
    type Output;
    /// Advance as far as the bytes fed so far allow.
    fn step(&mut self) -> JobStep<Self::Output>;
    /// Supply bytes of `file` starting at `offset`, the start of the last `Need`.
    fn feed(&mut self, file: usize, offset: u64, bytes: &[u8]) -> Result<(), FeedError>;
    /// How far the job has come.
    fn progress(&self) -> Progress {
        Progress::default()
    }
    /// Bytes worth reading past a need's end because the job reads on from there (sequential
    /// scans); 0 for jobs that jump about (headers read ahead themselves, samples).
    fn read_ahead(&self) -> u64 {
        0
    }
}

/// A single-file [`Decoder`] as a job on file `file`.
pub struct OnFile<D> {
    pub file: usize,
    pub decoder: D,
}

impl<D: Decoder> Job for OnFile<D> {
    type Output = D::Output;

    fn step(&mut self) -> JobStep<D::Output> {
        match self.decoder.step() {
            Step::Need(range) => JobStep::Need(Need { file: self.file, range }),
            Step::Done(out) => JobStep::Done(out),
        }
    }

    fn feed(&mut self, file: usize, offset: u64, bytes: &[u8]) -> Result<(), FeedError> {
        if file != self.file {
            return Err(FeedError { expected: offset, got: offset });
        }
        self.decoder.feed(offset, bytes)
    }
}
