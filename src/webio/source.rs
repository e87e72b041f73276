//! A byte source of either kind: a local Blob or a remote file over HTTP ranges.

use super::blob::{BlobRead, BlobSource};
use super::cancel::Cancel;
use super::http::HttpSource;
use tensorscope_values::range::ByteRange;

/// Where a file's bytes come from. One enum rather than a generic parameter keeps one copy of
/// the driver (and of every decoder it runs) in the bundle.
#[derive(Clone, Debug)]
pub enum Source {
    Blob(BlobSource),
    Http(HttpSource),
}

impl Source {
    /// The file's size in bytes.
    pub fn len(&self) -> u64 {
        match self {
            Source::Blob(s) => s.len(),
            Source::Http(s) => s.len(),
        }
    }

    /// Whether the file is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes read (for HTTP: transferred) through this source so far.
    pub fn bytes_read(&self) -> u64 {
        match self {
            Source::Blob(s) => s.bytes_read(),
            Source::Http(s) => s.bytes_read(),
        }
    }

    /// Whether reading goes over the network.
    pub fn is_remote(&self) -> bool {
        matches!(self, Source::Http(_))
    }

    /// The bytes of `range` clamped to the file: fewer (or none) past its end. A request under
    /// way over HTTP is aborted once `cancel` is (a Blob's read is short).
    pub async fn read(&self, range: ByteRange, cancel: &Cancel) -> Result<Vec<u8>, String> {
        match self {
            Source::Blob(s) => s.read(range).await,
            Source::Http(s) => s.read(range, cancel).await,
        }
    }
}

impl Source {
    /// Start reading `range` now where reading early costs nothing but memory (a local Blob;
    /// over HTTP each read is a request, so `None`).
    pub fn begin(&self, range: ByteRange) -> Option<BlobRead> {
        match self {
            Source::Blob(s) => s.begin(range).ok(),
            Source::Http(_) => None,
        }
    }
}

impl From<BlobSource> for Source {
    fn from(s: BlobSource) -> Self {
        Source::Blob(s)
    }
}

impl From<HttpSource> for Source {
    fn from(s: HttpSource) -> Self {
        Source::Http(s)
    }
}
