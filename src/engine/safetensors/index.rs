//! `model.safetensors.index.json`: which shard holds each tensor of a sharded set.

use serde_json::Value as Json;

use super::rules;
use crate::engine::findings::Finding;
use crate::engine::step::{Decoder, FeedError, Step, Window};

/// Largest index read (real ones reach tens of MB).
pub const MAX_INDEX_BYTES: u64 = 512 << 20;

/// A parsed index.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Index {
    /// `metadata.total_size`: the sum of every tensor's bytes.
    pub total_size: Option<u64>,
    /// `weight_map`, in file order: tensor name → shard file name.
    pub weight_map: Vec<(String, String)>,
    pub findings: Vec<Finding>,
}

/// Reads a whole index file in chunks, then parses it.
pub struct IndexDecoder {
    file_len: u64,
    window: Window,
    done: bool,
}

impl IndexDecoder {
    pub fn new(file_len: u64) -> Self {
        IndexDecoder { file_len, window: Window::new(0), done: false }
    }
}

impl Decoder for IndexDecoder {
    type Output = Index;

    fn step(&mut self) -> Step<Index> {
        if self.done {
            return Step::Done(Index::default());
        }
        if self.file_len > MAX_INDEX_BYTES {
            self.done = true;
            return Step::Done(Index {
                findings: vec![Finding::error(
                    rules::INDEX_TOO_LARGE,
                    format!("index is {} bytes, over the limit of {MAX_INDEX_BYTES}", self.file_len),
                )],
                ..Index::default()
            });
        }
        if self.window.end() < self.file_len {
            return Step::Need(crate::engine::range::ByteRange::new(self.window.end(), self.file_len));
        }
        self.done = true;
        let index = parse(self.window.bytes());
        self.window = Window::new(self.file_len);
        Step::Done(index)
    }

    fn feed(&mut self, offset: u64, bytes: &[u8]) -> Result<(), FeedError> {
        self.window.push(offset, bytes)
    }
}

/// Parse an index's bytes.
pub fn parse(bytes: &[u8]) -> Index {
    let mut index = Index::default();
    let bad = |msg: String| Finding::error(rules::BAD_INDEX, msg);
    let root: Json = match serde_json::from_slice(bytes) {
        Ok(v) => v,
        Err(e) => {
            index.findings.push(bad(format!("index is not valid JSON: {e}")));
            return index;
        }
    };
    match root.get("metadata").and_then(|m| m.get("total_size")) {
        None => {}
        Some(v) => {
            match v.as_u64().or_else(|| v.as_f64().filter(|f| f.fract() == 0.0 && *f >= 0.0).map(|f| f as u64)) {
                Some(n) => index.total_size = Some(n),
                None => index.findings.push(bad(format!("metadata.total_size is {v}, not a byte count"))),
            }
        }
    }
    match root.get("weight_map") {
        Some(Json::Object(map)) => {
            for (name, shard) in map {
                match shard {
                    Json::String(s) => index.weight_map.push((name.clone(), s.clone())),
                    other => {
                        index.findings.push(bad(format!("weight_map entry '{name}' maps to {other}, not a file name")))
                    }
                }
            }
        }
        _ => index.findings.push(bad("index has no 'weight_map' object".to_owned())),
    }
    index
}
