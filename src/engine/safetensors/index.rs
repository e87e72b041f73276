//! `model.safetensors.index.json`: which shard holds each tensor of a sharded set.
//!
//! The index is parsed straight from its bytes into the tensor → shard list (shard names
//! interned: a 60 MB index names a few hundred shards hundreds of thousands of times), with no
//! JSON tree in between.

use std::collections::HashMap;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value as Json;

use super::rules;
use crate::findings::Finding;
use crate::step::{Decoder, FeedError, Step, Window};

/// Largest index read (real ones reach tens of MB).
pub const MAX_INDEX_BYTES: u64 = 512 << 20;

/// A parsed index.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Index {
    /// `metadata.total_size`: the sum of every tensor's bytes.
    pub total_size: Option<u64>,
    /// `metadata.total_parameters` (written by recent transformers): a claim, checked against
    /// the tensors.
    pub total_parameters: Option<u64>,
    /// `weight_map`, in file order: tensor name and the index of its shard in [`Index::shards`].
    pub weight_map: Vec<(String, u32)>,
    /// The shard file names, each once, in order of first mention.
    pub shards: Vec<String>,
    pub findings: Vec<Finding>,
}

impl Index {
    /// The shard file names the index mentions, each once.
    pub fn shards(&self) -> impl Iterator<Item = &str> {
        self.shards.iter().map(String::as_str)
    }

    /// The shard file name of entry `i` of the weight map.
    pub fn shard_of(&self, i: usize) -> &str {
        &self.shards[self.weight_map[i].1 as usize]
    }
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
            return Step::Need(crate::range::ByteRange::new(self.window.end(), self.file_len));
        }
        self.done = true;
        let index = parse(self.window.bytes());
        self.window = Window::new(self.file_len);
        Step::Done(index)
    }

    fn feed(&mut self, offset: u64, bytes: &[u8]) -> Result<(), FeedError> {
        // The size is checked against the limit above: reserve it once, not by doubling.
        if offset == 0 && self.file_len <= MAX_INDEX_BYTES {
            self.window.reserve(self.file_len);
        }
        self.window.push(offset, bytes)
    }
}

/// Parse an index's bytes.
pub fn parse(bytes: &[u8]) -> Index {
    let mut index = Index::default();
    let mut saw = false;
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let result = (&mut de).deserialize_map(Root { index: &mut index, saw: &mut saw }).and_then(|()| de.end());
    if let Err(e) = result {
        index.findings.push(bad(format!("index is not valid JSON: {e}")));
    } else if !saw {
        index.findings.push(no_weight_map());
    }
    index
}

fn bad(msg: String) -> Finding {
    Finding::error(rules::BAD_INDEX, msg)
}

fn no_weight_map() -> Finding {
    bad("index has no 'weight_map' object".to_owned())
}

/// The top-level object: `metadata` and `weight_map`; anything else is skipped.
struct Root<'a> {
    index: &'a mut Index,
    /// Set once a `weight_map` object was read.
    saw: &'a mut bool,
}

impl<'de> Visitor<'de> for Root<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match &*key {
                "metadata" => {
                    let m: Json = map.next_value()?;
                    self.index.total_parameters = m.get("total_parameters").and_then(Json::as_u64);
                    if let Some(v) = m.get("total_size") {
                        match v
                            .as_u64()
                            .or_else(|| v.as_f64().filter(|f| f.fract() == 0.0 && *f >= 0.0).map(|f| f as u64))
                        {
                            Some(n) => self.index.total_size = Some(n),
                            None => {
                                self.index.findings.push(bad(format!("metadata.total_size is {v}, not a byte count")))
                            }
                        }
                    }
                }
                "weight_map" => *self.saw |= map.next_value_seed(WeightMap(self.index))?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// `weight_map`: tensor name → shard file name, shard names interned as they come. Yields
/// whether the value was an object.
struct WeightMap<'a>(&'a mut Index);

impl<'de> DeserializeSeed<'de> for WeightMap<'_> {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for WeightMap<'_> {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object of tensor names to shard file names")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let index = self.0;
        let mut ids: HashMap<String, u32> =
            index.shards.iter().enumerate().map(|(i, s)| (s.clone(), i as u32)).collect();
        while let Some(name) = map.next_key::<String>()? {
            match map.next_value::<Json>()? {
                Json::String(shard) => {
                    let id = match ids.get(&shard) {
                        Some(&id) => id,
                        None => {
                            let id = index.shards.len() as u32;
                            ids.insert(shard.clone(), id);
                            index.shards.push(shard);
                            id
                        }
                    };
                    index.weight_map.push((name, id));
                }
                other => {
                    index.findings.push(bad(format!("weight_map entry '{name}' maps to {other}, not a file name")))
                }
            }
        }
        Ok(true)
    }
    // Anything but an object: not a weight map.
    fn visit_unit<E>(self) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_bool<E>(self, _: bool) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_i64<E>(self, _: i64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_u64<E>(self, _: u64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_f64<E>(self, _: f64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_str<E>(self, _: &str) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(false)
    }
}
