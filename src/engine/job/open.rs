//! The open job: every file's header, one after the other, assembled into one checkpoint.

use super::{Job, JobStep, Need, Progress};
use crate::model::{Checkpoint, FileInfo};
use crate::open::{FileDecoder, Parsed};
use crate::shards::assemble;
use crate::step::{Decoder, FeedError, Step};

/// Reads the headers of a list of files and assembles them.
pub struct OpenJob {
    files: Vec<FileInfo>,
    current: Option<FileDecoder>,
    parsed: Vec<(FileInfo, Parsed)>,
    fed: u64,
}

/// Open `files` (path and size, in the order the byte sources are given).
pub fn open_job(files: Vec<FileInfo>) -> OpenJob {
    OpenJob { parsed: Vec::with_capacity(files.len()), files, current: None, fed: 0 }
}

impl OpenJob {
    /// Files whose headers are read, and in all.
    pub fn files_done(&self) -> (usize, usize) {
        (self.parsed.len(), self.files.len())
    }

    /// Header bytes fed so far.
    pub fn bytes_fed(&self) -> u64 {
        self.fed
    }

    /// Parse the headers only; the caller assembles (remote sets add files as they learn of them).
    pub fn parsed(self) -> Vec<(FileInfo, Parsed)> {
        self.parsed
    }
}

impl Job for OpenJob {
    type Output = Checkpoint;

    fn step(&mut self) -> JobStep<Checkpoint> {
        loop {
            let i = self.parsed.len();
            let Some(info) = self.files.get(i) else {
                return JobStep::Done(assemble(std::mem::take(&mut self.parsed)));
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
