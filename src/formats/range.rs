//! Half-open byte ranges with absolute `u64` offsets.

use std::fmt;

/// A half-open range `start..end` of absolute byte offsets in one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ByteRange {
    pub start: u64,
    pub end: u64,
}

impl ByteRange {
    /// The range `start..end`; `end` is clamped up to `start` so a range is never inverted.
    pub fn new(start: u64, end: u64) -> Self {
        ByteRange { start, end: end.max(start) }
    }

    /// The range of `len` bytes from `start`, saturating at `u64::MAX`.
    pub fn at(start: u64, len: u64) -> Self {
        ByteRange::new(start, start.saturating_add(len))
    }

    /// Number of bytes in the range.
    pub fn len(&self) -> u64 {
        self.end - self.start
    }

    /// Whether the range holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }
}

impl fmt::Display for ByteRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.start, self.end)
    }
}
