//! The headers job: every file's header, one after the other; [`crate::shards::Assembling`] makes
//! them one checkpoint (a separate step, so that a browser can yield between the two).

use super::{Job, JobStep, Need, Progress};
use crate::model::FileInfo;
use crate::open::{FileDecoder, Parsed};
use crate::step::{Decoder, FeedError, Step};

/// Reads the headers of a list of files.
pub struct HeadersJob {
    files: Vec<FileInfo>,
    current: Option<FileDecoder>,
    parsed: Vec<(FileInfo, Parsed)>,
    fed: u64,
}

/// Read the headers of `files` (path and size, in the order the byte sources are given).
pub fn headers_job(files: Vec<FileInfo>) -> HeadersJob {
    HeadersJob { parsed: Vec::with_capacity(files.len()), files, current: None, fed: 0 }
}

impl HeadersJob {
    /// Files whose headers are read, and in all.
    pub fn files_done(&self) -> (usize, usize) {
        (self.parsed.len(), self.files.len())
    }

    /// Header bytes fed so far.
    pub fn bytes_fed(&self) -> u64 {
        self.fed
    }
}

impl Job for HeadersJob {
    type Output = Vec<(FileInfo, Parsed)>;

    fn step(&mut self) -> JobStep<Self::Output> {
        loop {
            let i = self.parsed.len();
            let Some(info) = self.files.get(i) else {
                return JobStep::Done(std::mem::take(&mut self.parsed));
            };
            let d = self.current.get_or_insert_with(|| FileDecoder::new(&info.path, info.size));
            match d.step() {
                Step::Need(range) => return JobStep::Need(Need { file: i, range }),
                Step::Done(p) => {
                    self.current = None;
                    self.parsed.push((info.clone(), p));
                }
            }
        }
    }

    fn feed(&mut self, file: usize, offset: u64, bytes: &[u8]) -> Result<(), FeedError> {
        match &mut self.current {
            Some(d) if file == self.parsed.len() => {
                self.fed += bytes.len() as u64;
                d.feed(offset, bytes)
            }
            _ => Err(FeedError { expected: offset, got: offset }),
        }
    }

    fn progress(&self) -> Progress {
        Progress { done: self.parsed.len() as u64, total: self.files.len() as u64 }
    }
}
