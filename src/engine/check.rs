//! The offline check's value passes: SHA-256 of whole files and a NaN/Inf scan of every
//! tensor, both sans-IO and chunked so memory stays bounded whatever the file size.

use sha2::{Digest, Sha256};

use super::findings::Finding;
use super::range::ByteRange;
use super::scan::Sink;
use super::step::{Decoder, FeedError, Step, CHUNK_BYTES};

/// Stable codes of the check's rules.
pub mod rules {
    pub const NON_FINITE: &str = "check.non_finite_values";
    pub const HASH_MISMATCH: &str = "check.sha256_mismatch";
    pub const HASH_MATCH: &str = "check.sha256_match";
    pub const NOT_SCANNED: &str = "check.not_scanned";
}

/// SHA-256 of a whole file, read in chunks.
pub struct Sha256File {
    len: u64,
    at: u64,
    hasher: Sha256,
}

impl Sha256File {
    pub fn new(len: u64) -> Self {
        Sha256File { len, at: 0, hasher: Sha256::new() }
    }

    /// Bytes hashed so far, and in all.
    pub fn progress(&self) -> (u64, u64) {
        (self.at, self.len)
    }
}

impl Decoder for Sha256File {
    /// The lowercase hex digest.
    type Output = String;

    fn step(&mut self) -> Step<String> {
        if self.at < self.len {
            return Step::Need(ByteRange::new(self.at, self.len.min(self.at.saturating_add(CHUNK_BYTES))));
        }
        let digest = std::mem::take(&mut self.hasher).finalize();
        Step::Done(digest.iter().map(|b| format!("{b:02x}")).collect())
    }

    fn feed(&mut self, offset: u64, bytes: &[u8]) -> Result<(), FeedError> {
        if offset != self.at {
            return Err(FeedError { expected: self.at, got: offset });
        }
        let take = bytes.len().min((self.len - self.at) as usize);
        self.hasher.update(&bytes[..take]);
        self.at += take as u64;
        Ok(())
    }
}

/// Counts NaN and infinite values of one tensor.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct NonFiniteSink {
    pub values: u64,
    pub nan: u64,
    pub inf: u64,
}

impl Sink for NonFiniteSink {
    fn values(&mut self, _first_elem: u64, values: &[f32]) {
        self.values += values.len() as u64;
        for v in values {
            if !v.is_finite() {
                if v.is_nan() {
                    self.nan += 1;
                } else {
                    self.inf += 1;
                }
            }
        }
    }
}

/// The finding for a tensor holding NaN or infinite values, if it does.
pub fn non_finite_finding(tensor: &str, file: usize, s: &NonFiniteSink) -> Option<Finding> {
    (s.nan + s.inf > 0).then(|| {
        Finding::warning(rules::NON_FINITE, format!("{} NaN and {} infinite values among {}", s.nan, s.inf, s.values))
            .in_file(file)
            .on_tensor(tensor)
    })
}

/// Expected digests from `sha256sum` output (`<hex>  <name>` or `<hex> *<name>`) or bare hex
/// lines (matched to files in order): `(file name or None, lowercase hex)`.
pub fn parse_expected(text: &str) -> Vec<(Option<String>, String)> {
    text.lines()
        .filter_map(|line| {
            let line = line.trim();
            let (hex, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
            let hex = hex.to_ascii_lowercase();
            if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            let name = rest.trim().trim_start_matches('*');
            Some(((!name.is_empty()).then(|| name.to_owned()), hex))
        })
        .collect()
}

/// The finding comparing file `file` (called `path`) with an expected digest.
pub fn compare_digest(file: usize, path: &str, got: &str, want: &str) -> Finding {
    if got.eq_ignore_ascii_case(want) {
        Finding::info(rules::HASH_MATCH, format!("{path}: SHA-256 matches the expected {want}")).in_file(file)
    } else {
        Finding::error(rules::HASH_MISMATCH, format!("{path}: SHA-256 is {got}, expected {want}")).in_file(file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::step::drive;

    #[test]
    fn digests_match_known_vectors_in_any_chunking() {
        let data = b"abc";
        for chunk in [1, 2, 1 << 20] {
            let h = drive(Sha256File::new(3), chunk, |r| Ok::<_, ()>(data[r.start as usize..r.end as usize].to_vec()));
            assert_eq!(h.unwrap(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        }
        let h = drive(Sha256File::new(0), 8, |_| Ok::<_, ()>(vec![])).unwrap();
        assert_eq!(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    }

    #[test]
    fn expected_digests_are_read_from_sha256sum_output() {
        let a = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        let text = format!("{a}  model-00001-of-00002.safetensors\n{}  *b.gguf\nnot a hash\n{a}\n", a.to_uppercase());
        let e = parse_expected(&text);
        assert_eq!(e.len(), 3);
        assert_eq!(e[0], (Some("model-00001-of-00002.safetensors".into()), a.into()));
        assert_eq!(e[1].0.as_deref(), Some("b.gguf"));
        assert_eq!(e[2].0, None);
        assert_eq!(compare_digest(0, "x", a, &a.to_uppercase()).code, rules::HASH_MATCH);
        assert_eq!(compare_digest(0, "x", a, &"0".repeat(64)).code, rules::HASH_MISMATCH);
    }
}
