//! The sans-IO protocol shared by every decoder, and a synchronous driver for it.
//!
//! A decoder answers [`Step::Need`] with the range it wants next; the caller reads bytes
//! starting at `range.start` (as many or as few as it likes) and hands them to
//! [`Decoder::feed`]. Any chunking of the same bytes gives the same result.

use super::range::ByteRange;

/// Most metadata entries a file keeps (real ones hold tens; each costs many times its bytes):
/// header decoders count the rest in a finding.
pub const MAX_METADATA_ENTRIES: usize = 1 << 16;

/// What a decoder wants next.
#[derive(Debug, PartialEq)]
pub enum Step<T> {
    /// Bytes starting at `range.start`; any non-empty prefix of the range is progress.
    Need(ByteRange),
    /// Decoding is finished.
    Done(T),
}

/// Bytes were fed at an offset the decoder did not ask for: a bug in the driver, not the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedError {
    pub expected: u64,
    pub got: u64,
}

impl std::fmt::Display for FeedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "bytes fed at offset {} but the decoder needs offset {}", self.got, self.expected)
    }
}

impl std::error::Error for FeedError {}

/// A push-based decoder over one file.
pub trait Decoder {
    type Output;
    /// Advance as far as the bytes fed so far allow.
    fn step(&mut self) -> Step<Self::Output>;
    /// Supply bytes starting at `offset`, which must be the start of the last `Need`.
    fn feed(&mut self, offset: u64, bytes: &[u8]) -> Result<(), FeedError>;
}

/// Largest read the drivers issue at once.
pub const CHUNK_BYTES: u64 = 1 << 20;

/// Most entries a header decoder reserves room for from what a header claims, before any is
/// read (a claim in a 40 GB file could ask for gigabytes); more grow as entries are read.
pub const RESERVE_ENTRIES: u64 = 1 << 16;

/// Run `decoder` to completion, reading through `read(range)` in chunks of at most `chunk` bytes.
///
/// `read` may return fewer bytes than asked (a short read at the end of a file); returning none
/// for a non-empty request ends decoding with the decoder's view of a truncated file.
pub fn drive<D, E>(
    mut decoder: D,
    chunk: u64,
    mut read: impl FnMut(ByteRange) -> Result<Vec<u8>, E>,
) -> Result<D::Output, E>
where
    D: Decoder,
{
    let chunk = chunk.max(1);
    loop {
        match decoder.step() {
            Step::Done(out) => return Ok(out),
            Step::Need(range) => {
                let want = ByteRange::at(range.start, range.len().clamp(1, chunk));
                let bytes = read(want)?;
                decoder.feed(want.start, &bytes).expect("the driver feeds exactly where the decoder asked");
            }
        }
    }
}

/// A growable window of file bytes: the file's bytes from `base` on.
///
/// Decoders parse whole items from it and [`Window::consume`] them, so memory holds the item
/// being parsed plus at most one read chunk. Consuming is amortised O(1): dropped bytes are
/// compacted away only once they outnumber the live ones.
#[derive(Debug, Default)]
pub struct Window {
    base: u64,
    buf: Vec<u8>,
    /// Index in `buf` of the byte at `base`.
    start: usize,
}

impl Window {
    /// An empty window whose first byte will be at `base`.
    pub fn new(base: u64) -> Self {
        Window { base, buf: Vec::new(), start: 0 }
    }

    /// Absolute offset of the first buffered byte.
    pub fn base(&self) -> u64 {
        self.base
    }

    /// Absolute offset just past the last buffered byte.
    pub fn end(&self) -> u64 {
        self.base + (self.buf.len() - self.start) as u64
    }

    /// The buffered bytes from `base`.
    pub fn bytes(&self) -> &[u8] {
        &self.buf[self.start..]
    }

    /// Append bytes that must start at [`Window::end`].
    pub fn push(&mut self, offset: u64, bytes: &[u8]) -> Result<(), FeedError> {
        if offset != self.end() {
            return Err(FeedError { expected: self.end(), got: offset });
        }
        if self.start > 0 && self.start >= self.buf.len() - self.start {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(bytes);
        Ok(())
    }

    /// Make room for `n` bytes in all, once (a decoder that knows the size it will buffer).
    pub fn reserve(&mut self, n: u64) {
        let have = self.buf.len() - self.start;
        if let Some(more) = usize::try_from(n).ok().and_then(|n| n.checked_sub(have)) {
            self.buf.reserve_exact(more);
        }
    }

    /// Drop everything before absolute offset `to` (which may lie past the buffered bytes).
    pub fn consume(&mut self, to: u64) {
        if to >= self.end() {
            self.buf.clear();
            self.start = 0;
            self.base = to;
        } else if to > self.base {
            self.start += (to - self.base) as usize;
            self.base = to;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_rejects_bytes_at_the_wrong_offset() {
        let mut w = Window::new(10);
        assert_eq!(w.push(11, b"x"), Err(FeedError { expected: 10, got: 11 }));
        w.push(10, b"abc").unwrap();
        w.consume(12);
        assert_eq!((w.base(), w.bytes()), (12, &b"c"[..]));
        w.consume(20);
        assert_eq!((w.base(), w.end()), (20, 20));
    }
}
