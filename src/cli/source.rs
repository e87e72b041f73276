//! Positioned reads from local files, and the CLI's driver for engine jobs.

use std::fs::File;
use std::io;
use std::path::Path;

use crate::engine::job::{self, Job, ReadOpts, RunError};
use crate::engine::model::Checkpoint;
use crate::engine::range::ByteRange;

/// A local file read with positioned reads, never whole.
pub struct FileSource {
    file: File,
    len: u64,
}

impl FileSource {
    pub fn open(path: &Path) -> io::Result<Self> {
        let file = File::open(path)?;
        let len = file.metadata()?.len();
        Ok(FileSource { file, len })
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes of `range` that lie within the file, into `buf` (its allocation reused).
    pub fn read_into(&mut self, range: ByteRange, buf: &mut Vec<u8>) -> io::Result<()> {
        let end = range.end.min(self.len);
        let n = end.saturating_sub(range.start);
        // Only bytes the buffer did not hold before are zeroed; every byte is then read over.
        buf.resize(usize::try_from(n).map_err(|_| io::Error::other("read too large"))?, 0);
        read_exact_at(&self.file, buf, range.start)
    }
}

/// Reads of local files: no read-ahead past 1 MiB. A read then stays in the core's cache until it
/// is decoded (8 MiB reads measured up to 1.4x the CPU time), and a system call per MiB costs
/// nothing next to the work on it.
const LOCAL_READS: ReadOpts = ReadOpts { chunk: 1 << 20, max_read_ahead: 1 << 20, max_feed: u64::MAX };

/// Run `job` over local files `paths` (indexed as the job indexes them), opening each when it is
/// first read and keeping one open at a time (a set of 10k shards needs no 10k descriptors).
/// `lens` are the sizes the job was planned for; a file whose size changed is an error.
/// `drain(job)` runs after every feed (progress, writing output out as it goes).
pub fn run_job<J: Job>(
    job: J,
    paths: &[&str],
    lens: Vec<u64>,
    drain: impl FnMut(&mut J) -> Result<(), String>,
) -> Result<J::Output, String> {
    let mut open: Option<(usize, FileSource)> = None;
    let read = |file: usize, range, buf: &mut Vec<u8>| {
        if open.as_ref().is_none_or(|(i, _)| *i != file) {
            let path = paths.get(file).ok_or_else(|| format!("file {file} is not open"))?;
            let src = FileSource::open(Path::new(path)).map_err(|e| format!("{path}: {e}"))?;
            if src.len() != lens[file] {
                return Err(format!(
                    "{path}: the file changed since it was opened ({} bytes, was {})",
                    src.len(),
                    lens[file]
                ));
            }
            open = Some((file, src));
        }
        let (_, src) = open.as_mut().expect("opened above");
        src.read_into(range, buf).map_err(|e| format!("{}: {e}", paths[file]))
    };
    // Each thread keeps its last read buffer for its next job: a job's first read then touches
    // no fresh pages.
    thread_local! {
        static SPARE: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let mut spare = SPARE.take();
    let out = job::run_reusing(job, lens.clone(), LOCAL_READS, &mut spare, read, drain);
    SPARE.set(spare);
    out.map_err(|e: RunError| e.to_string())
}

/// Run `job` over the files of `cp`.
pub fn run_on<J: Job>(job: J, cp: &Checkpoint) -> Result<J::Output, String> {
    run_on_draining(job, cp, |_| Ok(()))
}

/// [`run_on`], with `drain(job)` after every feed.
pub fn run_on_draining<J: Job>(
    job: J,
    cp: &Checkpoint,
    drain: impl FnMut(&mut J) -> Result<(), String>,
) -> Result<J::Output, String> {
    let paths: Vec<&str> = cp.files.iter().map(|f| f.path.as_str()).collect();
    run_job(job, &paths, cp.files.iter().map(|f| f.size).collect(), drain)
}

#[cfg(unix)]
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(not(unix))]
fn read_exact_at(mut file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    file.seek(SeekFrom::Start(offset))?;
    file.read_exact(buf)
}
