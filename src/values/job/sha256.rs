//! SHA-256 of whole files, read in chunks: memory stays bounded whatever the file size.

use sha2::{Digest, Sha256};

use super::{Job, JobStep, Need, Progress};
use crate::range::ByteRange;
use crate::step::{FeedError, CHUNK_BYTES};

/// Read-ahead of the hash: big reads, few round trips.
const HASH_READ_AHEAD: u64 = 8 << 20;

/// The SHA-256 of each of a list of files (or byte spans of files), one after the other.
pub struct Sha256Job {
    /// `(file index, span)` of what to hash.
    files: Vec<(usize, ByteRange)>,
    current: usize,
    at: u64,
    hasher: Sha256,
    digests: Vec<String>,
    done_bytes: u64,
    total_bytes: u64,
}

impl Sha256Job {
    /// Hash files `(index, length)` in the order given.
    pub fn new(files: Vec<(usize, u64)>) -> Self {
        Sha256Job::spans(files.into_iter().map(|(f, len)| (f, ByteRange::new(0, len))).collect())
    }

    /// Hash byte spans `(file index, range)` in the order given, one digest each.
    pub fn spans(files: Vec<(usize, ByteRange)>) -> Self {
        let total_bytes = files.iter().map(|f| f.1.len()).fold(0u64, u64::saturating_add);
        let at = files.first().map_or(0, |f| f.1.start);
        Sha256Job { files, current: 0, at, hasher: Sha256::new(), digests: Vec::new(), done_bytes: 0, total_bytes }
    }

    /// Hash every file of a set of `lens` bytes.
    pub fn all(lens: &[u64]) -> Self {
        Sha256Job::new(lens.iter().copied().enumerate().collect())
    }
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    bytes.iter().flat_map(|b| [DIGITS[usize::from(b >> 4)] as char, DIGITS[usize::from(b & 15)] as char]).collect()
}

impl Job for Sha256Job {
    /// Lowercase hex digests, one per file, in the order given.
    type Output = Vec<String>;

    fn step(&mut self) -> JobStep<Vec<String>> {
        loop {
            let Some(&(file, span)) = self.files.get(self.current) else {
                return JobStep::Done(std::mem::take(&mut self.digests));
            };
            if self.at < span.end {
                let end = span.end.min(self.at.saturating_add(CHUNK_BYTES));
                return JobStep::Need(Need { file, range: ByteRange::new(self.at, end) });
            }
            self.digests.push(hex(&std::mem::take(&mut self.hasher).finalize()));
            self.done_bytes += span.len();
            self.current += 1;
            self.at = self.files.get(self.current).map_or(0, |f| f.1.start);
        }
    }

    fn feed(&mut self, file: usize, offset: u64, bytes: &[u8]) -> Result<(), FeedError> {
        let Some(&(want, span)) = self.files.get(self.current) else { return Ok(()) };
        if file != want || offset != self.at {
            return Err(FeedError { expected: self.at, got: offset });
        }
        // Stay in u64: on wasm32 a usize cannot hold what is left of a file past 4 GiB.
        let left = span.end - self.at;
        let take = usize::try_from(left).map_or(bytes.len(), |l| l.min(bytes.len()));
        self.hasher.update(&bytes[..take]);
        self.at += take as u64;
        Ok(())
    }

    fn progress(&self) -> Progress {
        let start = self.files.get(self.current).map_or(self.at, |f| f.1.start);
        Progress { done: self.done_bytes + (self.at - start), total: self.total_bytes }
    }

    /// Within the file or span being hashed: the bytes past it are not this job's (a 200 KB
    /// span of a remote file read 8 MiB).
    fn read_ahead(&self) -> u64 {
        let end = self.files.get(self.current).map_or(self.at, |f| f.1.end);
        HASH_READ_AHEAD.min(end.saturating_sub(self.at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::run;

    #[test]
    fn digests_match_known_vectors_in_any_chunking() {
        let files: [&[u8]; 3] = [b"abc", b"", &[7u8; 3_000_000]];
        let lens: Vec<u64> = files.iter().map(|f| f.len() as u64).collect();
        let d = run(Sha256Job::all(&lens), lens, |f, r, buf| {
            *buf = files[f][r.start as usize..r.end as usize].to_vec();
            Ok(())
        })
        .unwrap();
        assert_eq!(d[0], "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(d[1], "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_eq!(d[2], hex(&Sha256::digest(files[2])));
    }

    #[test]
    fn spans_hash_just_their_bytes() {
        let file: Vec<u8> = (0..=255u8).cycle().take(5000).collect();
        let spans = vec![(0, ByteRange::new(10, 4000)), (0, ByteRange::new(0, 0)), (0, ByteRange::new(4999, 5000))];
        let d = run(Sha256Job::spans(spans), vec![5000], |_, r, buf| {
            *buf = file[r.start as usize..r.end as usize].to_vec();
            Ok(())
        })
        .unwrap();
        assert_eq!(
            d,
            vec![hex(&Sha256::digest(&file[10..4000])), hex(&Sha256::digest(b"")), hex(&Sha256::digest(&file[4999..]))]
        );
    }

    #[test]
    fn spans_read_their_own_bytes_only() {
        // Two 200 KB spans 100 MB apart: each is read alone, not with 8 MiB after it.
        let (a, b) = (ByteRange::new(1000, 201_000), ByteRange::new(100_000_000, 100_200_000));
        let mut reads = Vec::new();
        run(Sha256Job::spans(vec![(0, a), (0, b)]), vec![200_000_000], |_, r, buf| {
            reads.push(r);
            buf.clear();
            buf.resize(r.len() as usize, 0);
            Ok(())
        })
        .unwrap();
        let read: u64 = reads.iter().map(|r| r.len()).sum();
        assert_eq!(read, a.len() + b.len(), "{reads:?}");
        assert!(reads.iter().all(|r| (a.start <= r.start && r.end <= a.end) || (b.start <= r.start && r.end <= b.end)));
    }

    #[test]
    fn what_is_left_of_a_file_past_4_gib_is_not_truncated() {
        // (4 GiB + 100) as a 32-bit usize is 100: the wasm32 bug took 100 bytes of a 1 MiB read.
        let mut job = Sha256Job::new(vec![(0, (4 << 30) + 100)]);
        assert!(matches!(job.step(), JobStep::Need(_)));
        job.feed(0, 0, &vec![0u8; 1 << 20]).unwrap();
        assert_eq!(job.progress().done, 1 << 20);
    }
}
