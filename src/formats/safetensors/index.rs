//! `model.safetensors.index.json`: which shard holds each tensor of a sharded set.
//!
//! The index is parsed straight from its bytes into the tensor → shard list (shard names
//! interned: a 60 MB index names a few hundred shards hundreds of thousands of times), with no
//! JSON tree in between.

use crate::hash::HashMap;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value as Json;

use super::rules;
use crate::findings::{Finding, RuleCap};
use crate::step::{Decoder, FeedError, Step, Window};

/// Largest index read (real ones reach tens of MB; its names take about as much again).
pub const MAX_INDEX_BYTES: u64 = 256 << 20;

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
                findings: vec![Finding::new(
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
        // The buffer grows with the bytes that come, not with the size claimed (a remote index's
        // size is the server's word, and its bytes may never come).
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
    Finding::new(rules::BAD_INDEX, msg)
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
                "metadata" => map.next_value_seed(Metadata(self.index))?,
                "weight_map" => {
                    if *self.saw {
                        // Python's json (transformers' loader) keeps the last of a repeated key.
                        self.index.findings.push(Finding::new(
                            rules::DUPLICATE_KEY_MINOR,
                            "index key 'weight_map' appears more than once; the last is used, as Python's json does",
                        ));
                        self.index.weight_map.clear();
                        self.index.shards.clear();
                    }
                    *self.saw |= map.next_value_seed(WeightMap(self.index))?
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// `metadata`: `total_size` and `total_parameters`; anything else is skipped unread (no JSON
/// tree of a metadata object however big).
struct Metadata<'a>(&'a mut Index);

impl<'de> DeserializeSeed<'de> for Metadata<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Metadata<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match &*key {
                "total_parameters" => self.0.total_parameters = map.next_value::<Count>()?.0.ok(),
                "total_size" => match map.next_value::<Count>()?.0 {
                    Ok(n) => self.0.total_size = Some(n),
                    // A warning, as a wrong count is: loaders do not read it.
                    Err(what) => self.0.findings.push(Finding::new(
                        rules::BAD_INDEX_MINOR,
                        format!("metadata.total_size is {what}, not a byte count"),
                    )),
                },
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
    // Anything but an object holds neither.
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(())
    }
}

/// A JSON value's kind, as findings name it; containers are skipped unread.
fn kind_of<'de, D: Deserializer<'de>>(d: D) -> Result<Result<Json, &'static str>, D::Error> {
    struct Kind;
    impl<'de> Visitor<'de> for Kind {
        type Value = Result<Json, &'static str>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(Ok(Json::Null))
        }
        fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
            Ok(Ok(Json::Bool(v)))
        }
        fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
            Ok(Ok(Json::from(v)))
        }
        fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
            Ok(Ok(Json::from(v)))
        }
        fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
            Ok(Ok(Json::from(v)))
        }
        fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Ok(Json::String(v.to_owned())))
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(Err("an array"))
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok(Err("an object"))
        }
    }
    d.deserialize_any(Kind)
}

/// A count: a whole non-negative number, else what the value is instead.
struct Count(Result<u64, String>);

impl<'de> serde::Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Count, D::Error> {
        Ok(Count(match kind_of(d)? {
            Ok(v) => v
                .as_u64()
                .or_else(|| v.as_f64().filter(|f| f.fract() == 0.0 && *f >= 0.0).map(|f| f as u64))
                .ok_or_else(|| shorten(&v.to_string())),
            Err(what) => Err(what.to_owned()),
        }))
    }
}

/// A weight map's value: a shard's file name, or what it is instead.
enum ShardName {
    Text(String),
    Not(String),
}

impl<'de> serde::Deserialize<'de> for ShardName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ShardName, D::Error> {
        Ok(match kind_of(d)? {
            Ok(Json::String(s)) => ShardName::Text(s),
            Ok(v) => ShardName::Not(shorten(&v.to_string())),
            Err(what) => ShardName::Not(what.to_owned()),
        })
    }
}

/// At most 64 bytes of `s`, for a message.
fn shorten(s: &str) -> String {
    let mut end = s.len().min(64);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    if end < s.len() {
        format!("{}…", &s[..end])
    } else {
        s.to_owned()
    }
}

/// A name the weight map gives twice maps where its last entry says, as Python's json reads
/// it: the earlier entries are reported and dropped, and shards only they named forgotten.
fn keep_last_of_each_name(index: &mut Index) {
    let map = &index.weight_map;
    let dropped = crate::dupes::repeated(map.len(), crate::dupes::Keep::Last, |i| map[i].0.as_str());
    if dropped.is_empty() {
        return;
    }
    let mut cap = RuleCap::default();
    for &i in &dropped {
        index.findings.push(Finding::new(
            rules::DUPLICATE_KEY_MINOR,
            format!(
                "weight_map names tensor '{}' more than once; its last entry is used, as Python's json does",
                index.weight_map[i].0
            ),
        ));
        cap.trim(&mut index.findings);
    }
    cap.finish(&mut index.findings);
    let mut dropped = dropped.into_iter().peekable();
    let mut i = 0;
    index.weight_map.retain(|_| {
        let keep = dropped.next_if_eq(&i).is_none();
        i += 1;
        keep
    });
    let mut renumbered = vec![u32::MAX; index.shards.len()];
    let mut shards = Vec::new();
    for (_, id) in &mut index.weight_map {
        let slot = &mut renumbered[*id as usize];
        if *slot == u32::MAX {
            *slot = shards.len() as u32;
            shards.push(std::mem::take(&mut index.shards[*id as usize]));
        }
        *id = *slot;
    }
    index.shards = shards;
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
        let mut cap = RuleCap::default();
        while let Some(name) = map.next_key::<String>()? {
            match map.next_value::<ShardName>()? {
                ShardName::Text(shard) => {
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
                ShardName::Not(what) => {
                    index.findings.push(bad(format!("weight_map entry '{name}' maps to {what}, not a file name")));
                    cap.trim(&mut index.findings);
                }
            }
        }
        cap.finish(&mut index.findings);
        keep_last_of_each_name(index);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_and_bad_entries_are_read_without_keeping_their_values() {
        // A big metadata object and entries whose values are containers or numbers.
        let junk: Vec<String> = (0..50_000).map(|i| format!(r#""k{i}":[{{"a":[1,2,3]}}]"#)).collect();
        let bad: Vec<String> = (0..3000).map(|i| format!(r#""b{i}":{{"x":[{i}]}}"#)).collect();
        let text = format!(
            r#"{{"metadata":{{{},"total_size":1024,"total_parameters":256.0}},"weight_map":{{"w":"s1.safetensors","n":7,{},"v":"s1.safetensors"}}}}"#,
            junk.join(","),
            bad.join(",")
        );
        let index = parse(text.as_bytes());
        assert_eq!((index.total_size, index.total_parameters), (Some(1024), Some(256)));
        assert_eq!(index.weight_map, [("w".to_owned(), 0), ("v".to_owned(), 0)]);
        let msgs: Vec<&str> = index.findings.iter().map(|f| f.message.as_str()).collect();
        assert_eq!(msgs[0], "weight_map entry 'n' maps to 7, not a file name");
        assert_eq!(msgs[1], "weight_map entry 'b0' maps to an object, not a file name");
        assert_eq!(msgs.len(), crate::findings::MAX_PER_RULE + 1, "capped per rule");
        assert!(msgs.last().unwrap().starts_with("2001 more findings"), "{}", msgs.last().unwrap());

        let index = parse(br#"{"metadata":{"total_size":{"deep":[1]}},"weight_map":{}}"#);
        assert_eq!(index.findings[0].message, "metadata.total_size is an object, not a byte count");
        let index = parse(br#"{"metadata":{"total_size":-5},"weight_map":{}}"#);
        assert_eq!(index.findings[0].message, "metadata.total_size is -5, not a byte count");
        let index = parse(br#"{"metadata":[1,2],"weight_map":{}}"#);
        assert!(index.findings.is_empty() && index.total_size.is_none());
    }
}
