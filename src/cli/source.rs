//! Positioned reads from local files, and the CLI's driver for engine jobs.

use std::fs::File;
use std::io;
use std::path::Path;

use crate::engine::job::{self, InPlace, Job, RunError};
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

/// Local files lent to a job in place: each mapped into memory when first needed, one at a time
/// (a set of 10k shards needs no 10k descriptors or mappings). A mapped file's bytes are used
/// where they lie in the page cache: reading them into a buffer first took 10-20% of a histogram's
/// time. A file that cannot be mapped is read, a MiB at a time.
struct LocalFiles<'a> {
    paths: &'a [&'a str],
    lens: &'a [u64],
    open: Option<(usize, Local)>,
}

/// An open local file.
enum Local {
    Mapped(memmap2::Mmap),
    /// Read into the buffer.
    Read(FileSource, Vec<u8>),
}

/// Bytes of a need whose page tables are filled at once (a scan's needs are a MiB).
#[cfg(target_os = "linux")]
const POPULATE: usize = 16 << 20;

/// Bytes read at a time from a file that could not be mapped.
const READ_BYTES: u64 = 1 << 20;

impl LocalFiles<'_> {
    /// File `file`, opened (and its size checked against the one the job was planned for).
    fn open(&mut self, file: usize) -> Result<&mut Local, String> {
        if self.open.as_ref().is_none_or(|(i, _)| *i != file) {
            self.open = None;
            let path = self.paths.get(file).ok_or_else(|| format!("file {file} is not open"))?;
            let src = FileSource::open(Path::new(path)).map_err(|e| format!("{path}: {e}"))?;
            if src.len() != self.lens[file] {
                return Err(format!(
                    "{path}: the file changed since it was opened ({} bytes, was {})",
                    src.len(),
                    self.lens[file]
                ));
            }
            // SAFETY: the map is read-only. As with any mapped reader, were another program to
            // shrink the file while it is read, reading past its new end would stop this process
            // (SIGBUS), and bytes it rewrote would be read as rewritten; its size was checked
            // just now.
            let local = match unsafe { memmap2::Mmap::map(&src.file) } {
                Ok(map) if !src.is_empty() => Local::Mapped(map),
                _ => Local::Read(src, Vec::new()),
            };
            self.open = Some((file, local));
        }
        Ok(&mut self.open.as_mut().expect("opened above").1)
    }
}

impl InPlace for LocalFiles<'_> {
    fn bytes(&mut self, file: usize, range: ByteRange) -> Result<&[u8], String> {
        let path = self.paths.get(file).copied().unwrap_or_default();
        match self.open(file)? {
            Local::Mapped(map) => {
                let (start, end) = (usize::try_from(range.start), usize::try_from(range.end));
                match (start, end) {
                    (Ok(start), Ok(end)) if start <= end && end <= map.len() => {
                        // Page tables filled for the range's first MiBs in one call (where the
                        // kernel can), not a fault per page where files are cached in small pages.
                        #[cfg(target_os = "linux")]
                        let _ = map.advise_range(memmap2::Advice::PopulateRead, start, (end - start).min(POPULATE));
                        Ok(&map[start..end])
                    }
                    _ => Err(format!("{path}: bytes {range} are not in the file")),
                }
            }
            Local::Read(src, buf) => {
                let part = ByteRange::at(range.start, range.len().min(READ_BYTES));
                src.read_into(part, buf).map_err(|e| format!("{path}: {e}"))?;
                Ok(buf)
            }
        }
    }
}

/// Run `job` over local files `paths` (indexed as the job indexes them). `lens` are the sizes
/// the job was planned for; a file whose size changed is an error. `drain(job)` runs after every
/// feed (progress, writing output out as it goes).
pub fn run_job<J: Job>(
    job: J,
    paths: &[&str],
    lens: Vec<u64>,
    drain: impl FnMut(&mut J) -> Result<(), String>,
) -> Result<J::Output, String> {
    let mut files = LocalFiles { paths, lens: &lens, open: None };
    job::run_in_place(job, &lens, &mut files, drain).map_err(|e: RunError| e.to_string())
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A file of `n` patterned bytes in the temporary directory.
    fn temp_file(name: &str, n: usize) -> (std::path::PathBuf, Vec<u8>) {
        let bytes: Vec<u8> = (0..n).map(|i| (i * 7 % 251) as u8).collect();
        let path = std::env::temp_dir().join(format!("tensorscope-source-{}-{name}", std::process::id()));
        std::fs::write(&path, &bytes).unwrap();
        (path, bytes)
    }

    #[test]
    fn mapped_and_read_files_lend_the_same_bytes() {
        let (path, bytes) = temp_file("lend", 3 << 20);
        let path_str = path.to_str().unwrap();
        let (paths, lens) = ([path_str], [bytes.len() as u64]);
        let mut mapped = LocalFiles { paths: &paths, lens: &lens, open: None };
        assert!(matches!(mapped.open(0), Ok(Local::Mapped(_))));
        let read = Local::Read(FileSource::open(&path).unwrap(), Vec::new());
        let mut read = LocalFiles { paths: &paths, lens: &lens, open: Some((0, read)) };
        for (start, end) in [(0, 1), (5, 1 << 20), (12_345, (2 << 20) + 7), (0, 3 << 20)] {
            let range = ByteRange::new(start, end);
            assert_eq!(mapped.bytes(0, range).unwrap(), &bytes[start as usize..end as usize]);
            // A file read is lent a MiB at a time.
            let end_read = end.min(start + READ_BYTES) as usize;
            assert_eq!(read.bytes(0, range).unwrap(), &bytes[start as usize..end_read]);
        }
        let past = ByteRange::new((3 << 20) - 1, (3 << 20) + 1);
        assert!(mapped.bytes(0, past).unwrap_err().contains("not in the file"));
        assert!(mapped.bytes(1, ByteRange::new(0, 1)).unwrap_err().contains("not open"));
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn a_file_whose_size_changed_is_an_error() {
        let (path, bytes) = temp_file("changed", 1000);
        let path_str = path.to_str().unwrap();
        let (paths, lens) = ([path_str], [bytes.len() as u64 + 1]);
        let mut files = LocalFiles { paths: &paths, lens: &lens, open: None };
        let err = files.bytes(0, ByteRange::new(0, 10)).unwrap_err();
        assert!(err.contains("changed since it was opened (1000 bytes, was 1001)"), "{err}");
        std::fs::remove_file(path).unwrap();
    }
}
