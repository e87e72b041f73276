//! Positioned reads from local files, and the CLI's driver for engine jobs.

use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex, Weak};

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
    /// Mappings shared with the other jobs of a parallel run.
    shared: Option<&'a SharedMaps>,
    /// The file and end of the last need lent.
    last_end: Option<(usize, u64)>,
    /// The bytes lent of the open file while it is mapped and shared: `start..end`.
    lent: Option<(u64, u64)>,
}

impl Drop for LocalFiles<'_> {
    fn drop(&mut self) {
        self.unmap_lent();
    }
}

/// An open local file.
enum Local {
    Mapped(Arc<memmap2::Mmap>),
    /// Read into the buffer.
    Read(FileSource, Vec<u8>),
}

/// The mappings of the jobs of one operation run on several threads (the parts of a split):
/// each file is mapped once while any of them reads it, not mapped and unmapped by every job.
/// Mapping and unmapping take the address space's lock for writing, which the other threads'
/// faults and allocations then wait on, blocked; and an unmapping stops every other core
/// running the process to flush its TLB.
///
/// A file's mapping lasts while a job holds it, and the latest one mapped until another is (so
/// consecutive parts of a file on one thread share it too): a few mappings at once, whatever the
/// number of files.
#[derive(Default)]
pub struct SharedMaps {
    maps: Mutex<Maps>,
}

#[derive(Default)]
struct Maps {
    /// File index and mapping, for every mapping a job may still hold.
    held: Vec<(usize, Weak<memmap2::Mmap>)>,
    /// The latest file mapped, kept alive for the next job.
    latest: Option<Arc<memmap2::Mmap>>,
}

impl SharedMaps {
    /// File `file`'s mapping: a live one, or one `map` makes.
    fn get(&self, file: usize, map: impl FnOnce() -> Option<memmap2::Mmap>) -> Option<Arc<memmap2::Mmap>> {
        let mut maps = self.maps.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        maps.held.retain(|(_, m)| m.strong_count() > 0);
        if let Some(live) = maps.held.iter().find(|(i, _)| *i == file).and_then(|(_, m)| m.upgrade()) {
            return Some(live);
        }
        let made = Arc::new(map()?);
        maps.held.push((file, Arc::downgrade(&made)));
        maps.latest = Some(made.clone());
        Some(made)
    }
}

/// Bytes of a need whose pages are faulted in before it is read (a scan's needs are a MiB).
const FAULT_IN: usize = 16 << 20;

/// Bytes read at a time from a file that could not be mapped.
const READ_BYTES: u64 = 1 << 20;

impl LocalFiles<'_> {
    /// Drop the page table entries of the shared mapping's pages this job was lent (whole pages
    /// only), once it reads no more of them: the mapping outlives the job, and the last unmapping
    /// of a 64 MiB file cached in 4 KiB pages took 2 ms of one thread at the end of the run. So
    /// each thread clears what it read while the others still read (the pages stay cached; a
    /// page read again is mapped again).
    fn unmap_lent(&mut self) {
        let (Some((start, end)), Some((_, Local::Mapped(map)))) = (self.lent.take(), &self.open) else { return };
        /// The smallest page size of the CPUs we run on.
        const PAGE: u64 = 4096;
        let (start, end) = (start.div_ceil(PAGE) * PAGE, end / PAGE * PAGE);
        #[cfg(target_os = "linux")]
        if let (Ok(start), Ok(end)) = (usize::try_from(start), usize::try_from(end)) {
            if start < end && end <= map.len() {
                // SAFETY: a read-only shared mapping of a file: `MADV_DONTNEED` only unmaps its
                // pages, which are mapped again from the page cache if read again.
                let _ = unsafe { map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, end - start) };
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = (map, start, end);
    }

    /// File `file`, opened (and its size checked against the one the job was planned for).
    fn open(&mut self, file: usize) -> Result<&mut Local, String> {
        if self.open.as_ref().is_none_or(|(i, _)| *i != file) {
            self.unmap_lent();
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
            // just now (a shared mapping's, by the job that made it).
            let map = || {
                let map = unsafe { memmap2::Mmap::map(&src.file) }.ok().filter(|_| !src.is_empty())?;
                // Pages not yet cached are read in 2 MiB folios, each then mapped with one
                // page table entry: a cold 512 MiB F32 histogram took as long, and every later
                // one 0.85x the time.
                #[cfg(target_os = "linux")]
                let _ = map.advise(memmap2::Advice::HugePage);
                Some(map)
            };
            let mapped = match self.shared {
                Some(shared) => shared.get(file, map),
                None => map().map(Arc::new),
            };
            let local = match mapped {
                Some(map) => Local::Mapped(map),
                None => Local::Read(src, Vec::new()),
            };
            self.open = Some((file, local));
        }
        Ok(&mut self.open.as_mut().expect("opened above").1)
    }
}

impl InPlace for LocalFiles<'_> {
    fn bytes(&mut self, file: usize, range: ByteRange) -> Result<&[u8], String> {
        let path = self.paths.get(file).copied().unwrap_or_default();
        let follows = self.last_end.replace((file, range.end)) == Some((file, range.start));
        self.open(file)?;
        if self.shared.is_some() && matches!(self.open, Some((_, Local::Mapped(_)))) {
            let (start, end) = self.lent.unwrap_or((range.start, range.end));
            self.lent = Some((start.min(range.start), end.max(range.end)));
        }
        match &mut self.open.as_mut().expect("opened just now").1 {
            Local::Mapped(map) => {
                let (start, end) = (usize::try_from(range.start), usize::try_from(range.end));
                match (start, end) {
                    (Ok(start), Ok(end)) if start <= end && end <= map.len() => {
                        let len = (end - start).min(FAULT_IN);
                        // A need that does not follow the last one (a sample's, a part's first):
                        // its bytes are asked for at once, exactly, before any fault reads
                        // around a page of it (2-4 MiB with huge pages, the disk's read-ahead
                        // without).
                        #[cfg(unix)]
                        if !follows {
                            let _ = map.advise_range(memmap2::Advice::WillNeed, start, len);
                        }
                        #[cfg(not(unix))]
                        let _ = follows;
                        let bytes = &map[start..end];
                        fault_in(&bytes[..len]);
                        Ok(bytes)
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

/// Fault in the pages of mapped `bytes` by reading a byte of each, before the values' loops do
/// it in the middle of their work. A fault maps the pages around it (the whole of a large page
/// cache folio): a 64 MiB file cached by a reader took 0.42 ms so, against 1.2 ms asking the
/// kernel to fill the page tables (`MADV_POPULATE_READ`, which walks them page by page and
/// holds the address space's lock, so another thread's mapping waited on it).
fn fault_in(bytes: &[u8]) {
    /// The smallest page size of the CPUs we run on.
    const PAGE: usize = 4096;
    for i in (0..bytes.len()).step_by(PAGE) {
        // SAFETY: `i` is in bounds; a volatile read is not optimised away.
        unsafe { std::ptr::read_volatile(bytes.as_ptr().add(i)) };
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
    run_job_sharing(job, paths, lens, None, drain)
}

/// [`run_job`], its files' mappings shared with other jobs through `shared`.
pub fn run_job_sharing<J: Job>(
    job: J,
    paths: &[&str],
    lens: Vec<u64>,
    shared: Option<&SharedMaps>,
    drain: impl FnMut(&mut J) -> Result<(), String>,
) -> Result<J::Output, String> {
    let mut files = LocalFiles { paths, lens: &lens, open: None, shared, last_end: None, lent: None };
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
        let mut mapped =
            LocalFiles { paths: &paths, lens: &lens, open: None, shared: None, last_end: None, lent: None };
        assert!(matches!(mapped.open(0), Ok(Local::Mapped(_))));
        let read = Local::Read(FileSource::open(&path).unwrap(), Vec::new());
        let mut read =
            LocalFiles { paths: &paths, lens: &lens, open: Some((0, read)), shared: None, last_end: None, lent: None };
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
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn jobs_share_a_file_s_mapping_while_any_holds_it() {
        let (path, _) = temp_file("shared", 5000);
        let file = File::open(&path).unwrap();
        let shared = SharedMaps::default();
        let made = std::cell::Cell::new(0);
        // SAFETY: a file of this test's own, not changed while mapped.
        let map = || {
            made.set(made.get() + 1);
            unsafe { memmap2::Mmap::map(&file) }.ok()
        };
        let a = shared.get(0, map).unwrap();
        let b = shared.get(0, map).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(made.get(), 1, "mapped once for two jobs");
        drop((a, b));
        // The latest mapping outlives its jobs, for the next one.
        let c = shared.get(0, map).unwrap();
        assert_eq!(made.get(), 1);
        // Another file's mapping takes its place: file 0's lasts while a job holds it...
        let other = shared.get(1, map).unwrap();
        assert_eq!(made.get(), 2);
        assert!(Arc::ptr_eq(&c, &shared.get(0, map).unwrap()));
        // ...and then goes.
        drop(c);
        assert_eq!(shared.maps.lock().unwrap().held.iter().filter(|(_, m)| m.strong_count() > 0).count(), 1);
        let again = shared.get(0, map).unwrap();
        assert_eq!(made.get(), 3, "mapped anew");
        assert!(!Arc::ptr_eq(&again, &other));
        // A file that cannot be mapped is none, and mapped by the next job that asks.
        assert!(shared.get(2, || None).is_none());
        assert!(shared.get(2, map).is_some());
        std::fs::remove_file(&path).unwrap();
    }

    /// Mapped files ask for huge pages (where the kernel has them), so pages read from disk
    /// are cached in large folios.
    #[cfg(target_os = "linux")]
    #[test]
    fn mapped_files_ask_for_huge_pages() {
        if !Path::new("/sys/kernel/mm/transparent_hugepage").exists() {
            return;
        }
        let (path, _) = temp_file("huge", 3 << 20);
        let (paths, lens) = ([path.to_str().unwrap()], [3u64 << 20]);
        let mut files = LocalFiles { paths: &paths, lens: &lens, open: None, shared: None, last_end: None, lent: None };
        let Ok(Local::Mapped(map)) = files.open(0) else { panic!("mapped") };
        let start = format!("{:x}-", map.as_ptr() as usize);
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let flags = smaps
            .lines()
            .skip_while(|l| !l.starts_with(&start))
            .find_map(|l| l.strip_prefix("VmFlags:"))
            .expect("the mapping is listed");
        assert!(flags.split_whitespace().any(|f| f == "hg"), "{flags}");
        std::fs::remove_file(&path).unwrap();
    }

    /// The resident KiB of the mapping that starts at `at`, from `/proc/self/smaps`.
    #[cfg(target_os = "linux")]
    fn resident_kib(at: *const u8) -> u64 {
        let start = format!("{:x}-", at as usize);
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let rss = smaps.lines().skip_while(|l| !l.starts_with(&start)).find_map(|l| l.strip_prefix("Rss:"));
        rss.expect("the mapping is listed").trim().trim_end_matches("kB").trim().parse().unwrap()
    }

    /// A job of a parallel run unmaps the pages it was lent of the shared mapping when it ends
    /// (whole pages only), and the mapping still lends them after.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_shared_mapping_s_pages_are_unmapped_by_the_job_they_were_lent_to() {
        let (path, bytes) = temp_file("unmapped", 4 << 20);
        let (paths, lens) = ([path.to_str().unwrap()], [bytes.len() as u64]);
        let shared = SharedMaps::default();
        let mut files =
            LocalFiles { paths: &paths, lens: &lens, open: None, shared: Some(&shared), last_end: None, lent: None };
        // Lent from the middle of a page to the middle of another, in two needs.
        let (start, end) = (1000u64, (4 << 20) - 1000);
        for range in [ByteRange::new(start, 2 << 20), ByteRange::new(2 << 20, end)] {
            assert_eq!(files.bytes(0, range).unwrap(), &bytes[range.start as usize..range.end as usize]);
        }
        let Some((_, Local::Mapped(map))) = &files.open else { panic!("mapped") };
        let (map, at) = (map.clone(), map.as_ptr());
        assert!(resident_kib(at) >= 4000, "{} KiB resident while read", resident_kib(at));
        drop(files);
        // Only the first and the last page, each partly lent, stay mapped.
        assert!(resident_kib(at) <= 8, "{} KiB resident once the job ended", resident_kib(at));
        assert_eq!(&map[..], &bytes[..], "read again, the pages hold the file");
        // A job not sharing its mapping leaves it as it is (it goes with the job).
        let mut alone = LocalFiles { paths: &paths, lens: &lens, open: None, shared: None, last_end: None, lent: None };
        alone.bytes(0, ByteRange::new(0, 1 << 20)).unwrap();
        assert!(alone.lent.is_none());
        std::fs::remove_file(&path).unwrap();
    }

    /// Which of the 4 KiB pages `pages` of `file` (of `len` bytes) are cached.
    #[cfg(target_os = "linux")]
    fn cached(file: &File, len: usize, pages: std::ops::Range<usize>) -> Vec<bool> {
        // SAFETY: a file of the test's own, not changed while mapped.
        let map = unsafe { memmap2::Mmap::map(file) }.unwrap();
        let mut resident = vec![0u8; len.div_ceil(4096)];
        // SAFETY: a mapping of `len` bytes and a byte per page of it.
        let got = unsafe { libc::mincore(map.as_ptr() as *mut _, len, resident.as_mut_ptr()) };
        assert_eq!(got, 0);
        resident[pages].iter().map(|r| r & 1 == 1).collect()
    }

    /// A need that does not follow the last one is read as it is, not with the disk's read-ahead
    /// or a huge page's worth around each of its pages: a sample of a cold file reads the sample.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_need_apart_from_the_last_reads_its_own_bytes() {
        let len = 32usize << 20;
        let (path, bytes) = temp_file("apart", len);
        let file = File::open(&path).unwrap();
        file.sync_all().unwrap();
        // SAFETY: an open file's descriptor; drops its clean pages from the cache.
        unsafe { libc::posix_fadvise(std::os::fd::AsRawFd::as_raw_fd(&file), 0, 0, libc::POSIX_FADV_DONTNEED) };
        if cached(&file, len, 0..len / 4096).iter().any(|&c| c) {
            return; // a file system whose pages stay (tmpfs): nothing to see
        }
        let (paths, lens) = ([path.to_str().unwrap()], [len as u64]);
        let mut files = LocalFiles { paths: &paths, lens: &lens, open: None, shared: None, last_end: None, lent: None };
        let need = ByteRange::new(17 << 20, (17 << 20) + (64 << 10));
        assert_eq!(files.bytes(0, need).unwrap(), &bytes[17 << 20..(17 << 20) + (64 << 10)]);
        let pages = |mib: usize| (mib << 8)..(mib << 8) + 16;
        assert!(cached(&file, len, pages(17)).iter().all(|&c| c), "the need's pages");
        for mib in [14, 16, 19, 21, 25] {
            assert!(!cached(&file, len, pages(mib)).iter().any(|&c| c), "nothing at {mib} MiB");
        }
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_file_whose_size_changed_is_an_error() {
        let (path, bytes) = temp_file("changed", 1000);
        let path_str = path.to_str().unwrap();
        let (paths, lens) = ([path_str], [bytes.len() as u64 + 1]);
        let mut files = LocalFiles { paths: &paths, lens: &lens, open: None, shared: None, last_end: None, lent: None };
        let err = files.bytes(0, ByteRange::new(0, 10)).unwrap_err();
        assert!(err.contains("changed since it was opened (1000 bytes, was 1001)"), "{err}");
        std::fs::remove_file(&path).unwrap();
    }
}
