//! Positioned reads from a local file.

use std::fs::File;
use std::io;
use std::path::Path;

use crate::engine::range::ByteRange;

/// A local file read with positioned reads, never whole.
pub struct FileSource {
    file: File,
    len: u64,
    /// Bytes handed out so far.
    pub bytes_read: u64,
}

impl FileSource {
    pub fn open(path: &Path) -> io::Result<Self> {
        let file = File::open(path)?;
        let len = file.metadata()?.len();
        Ok(FileSource { file, len, bytes_read: 0 })
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes of `range` that lie within the file.
    pub fn read(&mut self, range: ByteRange) -> io::Result<Vec<u8>> {
        let end = range.end.min(self.len);
        let n = end.saturating_sub(range.start);
        let mut buf = vec![0u8; usize::try_from(n).map_err(|_| io::Error::other("read too large"))?];
        read_exact_at(&self.file, &mut buf, range.start)?;
        self.bytes_read += n;
        Ok(buf)
    }
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
