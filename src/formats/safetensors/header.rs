//! The safetensors header decoder and the reference implementation's validation rules.

use serde_json::Value as Json;

use super::rules;
use super::Dtype;
use crate::findings::{Finding, RuleCap};
use crate::range::ByteRange;
use crate::step::MAX_METADATA_ENTRIES;
use crate::step::RESERVE_ENTRIES;
use crate::step::{Decoder, FeedError, Step, Window};

/// The reference implementation's `MAX_HEADER_SIZE`.
pub const MAX_HEADER_BYTES: u64 = 100_000_000;

/// A tensor entry as the header states it.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorEntry {
    pub name: String,
    /// `Err(text)` for a dtype string the spec does not define.
    pub dtype: Result<Dtype, String>,
    pub shape: Vec<u64>,
    /// `data_offsets`, relative to the data buffer.
    pub begin: u64,
    pub end: u64,
}

/// What a safetensors header says, with every rule it breaks.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Header {
    pub file_len: u64,
    /// The declared header length `N`.
    pub header_len: u64,
    /// `__metadata__` in file order.
    pub metadata: Vec<(String, String)>,
    /// Tensors in header order.
    pub tensors: Vec<TensorEntry>,
    pub findings: Vec<Finding>,
}

impl Header {
    /// Absolute offset of the data buffer (`8 + N`).
    pub fn data_start(&self) -> u64 {
        self.header_len.saturating_add(8)
    }
}

enum State {
    Length,
    Json,
    Done,
}

/// Decodes the header of one safetensors file of `file_len` bytes.
///
/// The JSON is parsed entry by entry as its bytes arrive, so the work is spread over the reads
/// (a 65 MB header never runs as one long task) and memory holds one read chunk and the entry
/// being parsed, not the whole header text.
pub struct HeaderDecoder {
    window: Window,
    state: State,
    out: Header,
    json: JsonScan,
    /// Findings kept to so many per rule.
    cap: RuleCap,
}

impl HeaderDecoder {
    pub fn new(file_len: u64) -> Self {
        HeaderDecoder {
            window: Window::new(0),
            state: State::Length,
            out: Header { file_len, ..Header::default() },
            json: JsonScan::default(),
            cap: RuleCap::default(),
        }
    }

    fn stop(&mut self, f: Finding) {
        self.out.findings.push(f);
        self.state = State::Done;
    }

    /// Bytes `start..end` are needed and present, or the range still to read.
    fn have(&self, end: u64) -> Option<ByteRange> {
        (self.window.end() < end).then(|| ByteRange::new(self.window.end(), end))
    }
}

impl Decoder for HeaderDecoder {
    type Output = Header;

    fn step(&mut self) -> Step<Header> {
        loop {
            match self.state {
                State::Done => {
                    self.cap.finish(&mut self.out.findings);
                    return Step::Done(std::mem::take(&mut self.out));
                }
                State::Length => {
                    if self.out.file_len < 8 {
                        let len = self.out.file_len;
                        self.stop(Finding::new(
                            rules::TRUNCATED,
                            format!("file is {len} bytes; the 8-byte header length is missing"),
                        ));
                        continue;
                    }
                    if let Some(r) = self.have(8) {
                        return Step::Need(r);
                    }
                    let n = u64::from_le_bytes(self.window.bytes()[..8].try_into().expect("8 bytes"));
                    self.out.header_len = n;
                    if n > MAX_HEADER_BYTES {
                        self.stop(Finding::new(
                            rules::HEADER_TOO_LARGE,
                            format!("header length {n} exceeds the limit of {MAX_HEADER_BYTES} bytes"),
                        ));
                    } else if 8 + n > self.out.file_len {
                        let len = self.out.file_len;
                        self.stop(Finding::new(
                            rules::HEADER_PAST_END,
                            format!("header length {n} runs past the end of the {len}-byte file"),
                        ));
                    } else {
                        self.window.consume(8);
                        // Room for as many entries as the header's bytes could hold at a typical
                        // entry size, so that few reads pay for regrowing a large table; at most
                        // 65,536 before any is read (the length is a claim: a remote file's
                        // bytes may never come).
                        let entries = usize::try_from((n / 128).min(RESERVE_ENTRIES)).unwrap_or(0);
                        self.out.tensors.reserve(entries);
                        self.json.names.reserve(entries);
                        self.state = State::Json;
                    }
                }
                State::Json => {
                    let end = 8 + self.out.header_len;
                    let scanned = self.json.scan(&mut self.window, end, &mut self.out);
                    self.cap.trim(&mut self.out.findings);
                    match scanned {
                        Scanned::More => return Step::Need(ByteRange::new(self.window.end(), end)),
                        Scanned::Object => {
                            self.json.finish(&mut self.out);
                            validate(&mut self.out);
                            self.state = State::Done;
                        }
                        Scanned::Failed(f) => {
                            // As the reference refuses such a header, nothing in it is shown.
                            self.out.tensors.clear();
                            self.out.metadata.clear();
                            self.stop(f);
                        }
                    }
                }
            }
        }
    }

    fn feed(&mut self, offset: u64, bytes: &[u8]) -> Result<(), FeedError> {
        self.window.push(offset, bytes)
    }
}

/// What a scan of the bytes at hand came to.
enum Scanned {
    /// The bytes at hand are used up; the header goes on.
    More,
    /// The header is one JSON object followed only by whitespace.
    Object,
    /// The header is not JSON (or not UTF-8): the finding says where.
    Failed(Finding),
}

/// Where the scan of the top-level object is.
#[derive(Clone, Copy, Default, PartialEq)]
enum Expect {
    /// Whitespace, then `{`.
    #[default]
    Open,
    /// A key, or `}` in an empty object.
    FirstKey,
    /// A key after a `,`.
    Key,
    /// `,` or `}` after an entry.
    Next,
    /// Whitespace only, to the end of the header.
    Tail,
}

/// The top-level object of a header, entry by entry: each key and value is cut out by its
/// structure here and parsed by `serde_json`, which judges its syntax.
#[derive(Default)]
struct JsonScan {
    expect: Expect,
    /// An entry was cut short with this many bytes at hand: scan again once there are twice as
    /// many (or the header's end), so a huge entry costs one pass, not one per read.
    wait_for: usize,
    /// Findings before the object's entries (kept if the header is not JSON).
    findings_before: usize,
    /// Whether `__metadata__` was seen.
    metadata_seen: bool,
    /// Each name's last entry, by the name's hash; names whose hashes collide are in `collided`.
    names: crate::hash::HashMap<u64, Slot>,
    collided: crate::hash::HashMap<String, Option<usize>>,
    /// Names of malformed entries (no tensor holds them).
    bad_names: Vec<Box<str>>,
    /// Tensors replaced by a later entry of the same name.
    dropped: Vec<usize>,
    /// Scans that looked at the bytes (for the test of huge entries).
    scans: usize,
}

/// A name's last entry: a tensor, or a malformed entry (its name in `bad_names`).
#[derive(Clone, Copy)]
enum Slot {
    Tensor(usize),
    Bad(usize),
}

/// JSON's whitespace.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

impl JsonScan {
    /// Parse what `window` holds of the header, which ends at file offset `end`, consuming it up
    /// to the last whole item. Bytes past `end` (a driver may read ahead) are not the header's.
    fn scan(&mut self, window: &mut Window, end: u64, out: &mut Header) -> Scanned {
        let base = window.base();
        let at_end = window.end() >= end;
        let bytes = window.bytes();
        let bytes = &bytes[..bytes.len().min(usize::try_from(end.saturating_sub(base)).unwrap_or(usize::MAX))];
        if !at_end && bytes.len() < self.wait_for {
            return Scanned::More;
        }
        self.wait_for = 0;
        self.scans += 1;
        let mut i = 0;
        let result = loop {
            i += bytes[i..].iter().take_while(|&&b| is_space(b)).count();
            let at = base + i as u64;
            let Some(&b) = bytes.get(i) else {
                break if !at_end {
                    Scanned::More
                } else if self.expect == Expect::Tail {
                    Scanned::Object
                } else if self.expect == Expect::Open {
                    Scanned::Failed(not_object())
                } else {
                    Scanned::Failed(json_error("EOF while parsing an object", at))
                };
            };
            match (self.expect, b) {
                (Expect::Open, b'{') => {
                    if at > 8 {
                        out.findings.push(Finding::new(
                            rules::LEADING_WHITESPACE,
                            format!(
                                "header begins with {} whitespace bytes before its '{{': the reference reader accepts \
                                 this, the format's README says the header must begin with '{{'",
                                at - 8
                            ),
                        ));
                    }
                    self.findings_before = out.findings.len();
                    self.expect = Expect::FirstKey;
                    i += 1;
                }
                (Expect::Open, _) => break Scanned::Failed(not_object()),
                (Expect::FirstKey | Expect::Next, b'}') => {
                    self.expect = Expect::Tail;
                    i += 1;
                }
                (Expect::Next, b',') => {
                    self.expect = Expect::Key;
                    i += 1;
                }
                (Expect::FirstKey | Expect::Key, b'"') => match entry_len(&bytes[i..], at_end) {
                    Cut::Short if at_end => {
                        break Scanned::Failed(json_error("EOF while parsing an object", base + bytes.len() as u64))
                    }
                    Cut::Short => {
                        self.wait_for = (bytes.len() - i).saturating_mul(2);
                        break Scanned::More;
                    }
                    Cut::Bad(what, k) => break Scanned::Failed(text_error(&bytes[i + k..], what, at + k as u64)),
                    Cut::Entry { key, value, len } => {
                        let value = (at + value as u64, &bytes[i + value..i + len]);
                        if let Err(f) = self.entry((at, &bytes[i..i + key]), value, out) {
                            break Scanned::Failed(f);
                        }
                        self.expect = Expect::Next;
                        i += len;
                    }
                },
                (Expect::Key, b'}') => break Scanned::Failed(json_error("trailing comma", at)),
                (Expect::FirstKey | Expect::Key, _) => {
                    break Scanned::Failed(text_error(&bytes[i..], "key must be a string", at));
                }
                (Expect::Next, _) => break Scanned::Failed(text_error(&bytes[i..], "expected ',' or '}'", at)),
                (Expect::Tail, _) => break Scanned::Failed(text_error(&bytes[i..], "trailing characters", at)),
            }
        };
        if let Scanned::Failed(_) = result {
            out.findings.truncate(self.findings_before.min(out.findings.len()));
        }
        window.consume(base + i as u64);
        result
    }

    /// One entry: its key's JSON text and its value's, each with its file offset.
    fn entry(
        &mut self,
        (key_at, key): (u64, &[u8]),
        (value_at, value): (u64, &[u8]),
        out: &mut Header,
    ) -> Result<(), Finding> {
        let utf8 = |b, at: u64| std::str::from_utf8(b).map_err(|e| utf8_error(at + e.valid_up_to() as u64));
        let key = utf8(key, key_at)?;
        let value = utf8(value, value_at)?;
        let name: String = if key.bytes().any(|b| b == b'\\' || b < 0x20) {
            serde_json::from_str(key).map_err(|e| serde_error(&e, key, key_at))?
        } else {
            key[1..key.len() - 1].to_owned()
        };
        if name == "__metadata__" {
            if self.metadata_seen {
                out.findings
                    .push(Finding::new(rules::DUPLICATE_KEY, "header key '__metadata__' appears more than once"));
                return Ok(());
            }
            self.metadata_seen = true;
            let mut de = serde_json::Deserializer::from_str(value);
            serde::Deserializer::deserialize_any(&mut de, Metadata(out))
                .and_then(|()| de.end())
                .map_err(|e| serde_error(&e, value, value_at))?;
            return Ok(());
        }
        let entry = match tensor_entry(&name, value) {
            Ok((dtype, shape, begin, end)) => Ok(TensorEntry { name, dtype, shape, begin, end }),
            Err(EntryError::Syntax(e)) => return Err(serde_error(&e, value, value_at)),
            Err(EntryError::Fields(msg)) => {
                out.findings.push(Finding::new(rules::BAD_TENSOR_ENTRY, msg).on_tensor(&name));
                Err(name)
            }
        };
        // The reference keeps the last entry of a repeated tensor name (serde's map); so do we,
        // reporting each earlier one.
        let (name, slot) = match entry {
            Ok(t) => {
                out.tensors.push(t);
                let i = out.tensors.len() - 1;
                (out.tensors[i].name.as_str(), Slot::Tensor(i))
            }
            Err(name) => {
                self.bad_names.push(name.into_boxed_str());
                let i = self.bad_names.len() - 1;
                (&*self.bad_names[i], Slot::Bad(i))
            }
        };
        if let Some(earlier) = remember(&mut self.names, &mut self.collided, &out.tensors, &self.bad_names, name, slot)
        {
            out.findings.push(Finding::new(
                rules::DUPLICATE_KEY_MINOR,
                format!("tensor '{name}' appears more than once in the header; the last entry is used, as the reference does"),
            ));
            self.dropped.extend(earlier);
        }
        Ok(())
    }

    /// The header is complete: drop the tensors later entries replaced.
    fn finish(&mut self, out: &mut Header) {
        if self.dropped.is_empty() {
            return;
        }
        crate::sort::sort(&mut self.dropped);
        let mut dropped = self.dropped.iter().copied().peekable();
        let mut i = 0;
        out.tensors.retain(|_| {
            let keep = dropped.next_if_eq(&i).is_none();
            i += 1;
            keep
        });
    }
}

/// Record that `name`'s last entry is `slot`. If the name was seen before, returns the tensor
/// of its earlier entry (now replaced), if that entry had one.
fn remember(
    names: &mut crate::hash::HashMap<u64, Slot>,
    collided: &mut crate::hash::HashMap<String, Option<usize>>,
    tensors: &[TensorEntry],
    bad_names: &[Box<str>],
    name: &str,
    slot: Slot,
) -> Option<Option<usize>> {
    use std::collections::hash_map::Entry;
    use std::hash::BuildHasher;
    let tensor = |s: Slot| match s {
        Slot::Tensor(i) => Some(i),
        Slot::Bad(_) => None,
    };
    // The name's hash under the map's own secret keys (equal names, equal hashes).
    let hash = names.hasher().hash_one(name);
    match names.entry(hash) {
        Entry::Vacant(v) => {
            v.insert(slot);
            None
        }
        Entry::Occupied(mut o) => {
            let seen = match *o.get() {
                Slot::Tensor(i) => &*tensors[i].name,
                Slot::Bad(i) => &*bad_names[i],
            };
            if seen == name {
                Some(tensor(std::mem::replace(o.get_mut(), slot)))
            } else {
                collided.insert(name.to_owned(), tensor(slot))
            }
        }
    }
}

/// How an entry (`"key": value`) at the start of some bytes is cut.
enum Cut {
    /// The bytes end inside it.
    Short,
    /// Not an entry: what is wrong, at which byte.
    Bad(&'static str, usize),
    /// The key is `..key`, the value `value..len`.
    Entry { key: usize, value: usize, len: usize },
}

/// Cut the entry at the start of `b` (which starts with `"`) by its structure alone; `at_end`:
/// nothing follows `b` in the header, so a scalar value ends with it.
fn entry_len(b: &[u8], at_end: bool) -> Cut {
    let Some(key) = string_len(b) else { return Cut::Short };
    let mut i = key + b[key..].iter().take_while(|&&c| is_space(c)).count();
    match b.get(i) {
        None => return Cut::Short,
        Some(b':') => i += 1,
        Some(_) => return Cut::Bad("expected ':'", i),
    }
    i += b[i..].iter().take_while(|&&c| is_space(c)).count();
    let value = i;
    match value_len(&b[i..], at_end) {
        None => Cut::Short,
        Some(0) => Cut::Bad("expected a value", i),
        Some(n) => Cut::Entry { key, value, len: i + n },
    }
}

/// The length of the JSON string at the start of `b` (which starts with `"`), quotes included;
/// `None` if `b` ends inside it.
fn string_len(b: &[u8]) -> Option<usize> {
    let mut i = 1;
    loop {
        i += memchr::memchr2(b'"', b'\\', &b[i..])?;
        if b[i] == b'"' {
            return Some(i + 1);
        }
        i += 2; // an escape and the byte it escapes
        if i > b.len() {
            return None;
        }
    }
}

/// The length of the JSON value at the start of `b` by its structure (strings, brackets); a
/// scalar runs to the next delimiter. `None` if `b` ends inside it.
fn value_len(b: &[u8], at_end: bool) -> Option<usize> {
    match b.first()? {
        b'"' => string_len(b),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = 0;
            while i < b.len() {
                match b[i] {
                    b'"' => {
                        i += string_len(&b[i..])?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        _ => match b.iter().position(|&c| is_space(c) || matches!(c, b',' | b'}' | b']' | b':' | b'{' | b'[' | b'"')) {
            Some(n) => Some(n),
            None => at_end.then_some(b.len()),
        },
    }
}

fn not_object() -> Finding {
    Finding::new(rules::HEADER_NOT_OBJECT, "header must be a JSON object starting with '{' at offset 8")
}

fn json_error(what: &str, at: u64) -> Finding {
    Finding::new(rules::INVALID_JSON, format!("header is not valid JSON: {what} (byte {at} of the file)"))
}

fn utf8_error(at: u64) -> Finding {
    Finding::new(rules::INVALID_UTF8, format!("header is not valid UTF-8 (at offset {at})"))
}

/// `what` is wrong at the start of `b` (file offset `at`), unless that is a byte of no UTF-8
/// text, which is the fault reported.
fn text_error(b: &[u8], what: &str, at: u64) -> Finding {
    match std::str::from_utf8(&b[..b.len().min(4)]) {
        Err(e) if e.valid_up_to() == 0 && e.error_len().is_some() => utf8_error(at),
        _ => json_error(what, at),
    }
}

/// A `serde_json` error in `text`, which starts at file offset `at`.
fn serde_error(e: &serde_json::Error, text: &str, at: u64) -> Finding {
    let mut what = e.to_string();
    if let Some(cut) = what.rfind(" at line ") {
        what.truncate(cut);
    }
    json_error(&what, at + byte_of(text, e.line(), e.column()) as u64)
}

/// The byte offset of 1-based `line`, `column` in `text`.
fn byte_of(text: &str, line: usize, column: usize) -> usize {
    let line_start: usize = text.split_inclusive('\n').take(line.saturating_sub(1)).map(str::len).sum();
    (line_start + column.saturating_sub(1)).min(text.len())
}

/// `__metadata__`, read entry by entry into the header's metadata (no JSON tree of it): strings
/// as they are, other values as their JSON text with a finding; a repeated key keeps its first
/// place and its last value, as a JSON map does.
struct Metadata<'a>(&'a mut Header);

impl<'de> serde::de::Visitor<'de> for Metadata<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an object of strings")
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(()) // the reference reads `"__metadata__": null` as no metadata
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let out = self.0;
        let mut at: crate::hash::HashMap<String, usize> = crate::hash::HashMap::default();
        let mut dropped = 0u64;
        while let Some((k, v)) = map.next_entry::<String, Json>()? {
            let text = match v {
                Json::String(s) => s,
                other => {
                    out.findings.push(Finding::new(
                        rules::METADATA_NOT_STRINGS,
                        format!("__metadata__ value of '{k}' is not a string"),
                    ));
                    other.to_string()
                }
            };
            match at.get(&k) {
                Some(&i) => out.metadata[i].1 = text,
                None if at.len() < MAX_METADATA_ENTRIES => {
                    at.insert(k.clone(), out.metadata.len());
                    out.metadata.push((k, text));
                }
                None => dropped += 1,
            }
        }
        if dropped > 0 {
            out.findings.push(Finding::new(rules::TOO_MUCH_METADATA,
                format!("__metadata__ holds {dropped} more entries past the first {MAX_METADATA_ENTRIES}; they are not kept"),
            ));
        }
        Ok(())
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        self.not_an_object()
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        self.not_an_object()
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        self.not_an_object()
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        self.not_an_object()
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        self.not_an_object()
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        self.not_an_object()
    }
}

impl Metadata<'_> {
    fn not_an_object<E>(self) -> Result<(), E> {
        self.0.findings.push(Finding::new(rules::METADATA_NOT_STRINGS, "__metadata__ must be an object of strings"));
        Ok(())
    }
}

/// A tensor entry's fields as the reference reads them; the dtype is borrowed from the header
/// text unless it holds escapes. Unknown fields are read as JSON values, as the reference's
/// flattened map reads them: a number out of `f64`'s range or nesting past serde_json's depth
/// limit there makes the header invalid.
struct RawEntry<'a> {
    dtype: std::borrow::Cow<'a, str>,
    shape: Vec<u64>,
    data_offsets: (u64, u64),
}

impl<'de> serde::Deserialize<'de> for RawEntry<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> serde::de::Visitor<'de> for Fields {
            type Value = RawEntry<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("struct RawEntry")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<RawEntry<'de>, A::Error> {
                use serde::de::Error;
                let (mut dtype, mut shape, mut data_offsets) = (None, None, None);
                while let Some(Borrowed(key)) = map.next_key::<Borrowed<'de>>()? {
                    match &*key {
                        "dtype" if dtype.is_some() => return Err(A::Error::duplicate_field("dtype")),
                        "shape" if shape.is_some() => return Err(A::Error::duplicate_field("shape")),
                        "data_offsets" if data_offsets.is_some() => {
                            return Err(A::Error::duplicate_field("data_offsets"))
                        }
                        "dtype" => dtype = Some(map.next_value::<DtypeName<'de>>()?.0),
                        "shape" => shape = Some(map.next_value()?),
                        "data_offsets" => data_offsets = Some(map.next_value()?),
                        _ => {
                            // Here the header and the entry already hold two of the reference's 128 levels.
                            if depth(&map.next_value::<serde_json::Value>()?) > 125 {
                                return Err(A::Error::custom(format!(
                                    "field '{key}' nests deeper than the reference reads (recursion limit exceeded)"
                                )));
                            }
                        }
                    }
                }
                Ok(RawEntry {
                    dtype: dtype.ok_or_else(|| A::Error::missing_field("dtype"))?,
                    shape: shape.ok_or_else(|| A::Error::missing_field("shape"))?,
                    data_offsets: data_offsets.ok_or_else(|| A::Error::missing_field("data_offsets"))?,
                })
            }
            // The reference's derived struct also takes its fields as an array, in order.
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<RawEntry<'de>, A::Error> {
                use serde::de::Error;
                let dtype = seq.next_element::<DtypeName<'de>>()?.ok_or_else(|| A::Error::invalid_length(0, &self))?;
                let shape = seq.next_element()?.ok_or_else(|| A::Error::invalid_length(1, &self))?;
                let data_offsets = seq.next_element()?.ok_or_else(|| A::Error::invalid_length(2, &self))?;
                if seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
                    return Err(A::Error::invalid_length(4, &"3 elements"));
                }
                Ok(RawEntry { dtype: dtype.0, shape, data_offsets })
            }
        }
        d.deserialize_struct("RawEntry", &["dtype", "shape", "data_offsets"], Fields)
    }
}

/// How many arrays and objects nest in `v`.
fn depth(v: &serde_json::Value) -> usize {
    match v {
        serde_json::Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        serde_json::Value::Object(o) => 1 + o.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// A dtype as the reference's serde enum reads it: its name, or a map of its name to `null`
/// (serde's other spelling of a unit variant).
struct DtypeName<'a>(std::borrow::Cow<'a, str>);

impl<'de> serde::Deserialize<'de> for DtypeName<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Name;
        impl<'de> serde::de::Visitor<'de> for Name {
            type Value = DtypeName<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a dtype name")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<DtypeName<'de>, E> {
                Ok(DtypeName(std::borrow::Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<DtypeName<'de>, E> {
                Ok(DtypeName(std::borrow::Cow::Owned(v.to_owned())))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<DtypeName<'de>, A::Error> {
                use serde::de::Error;
                let Some((Borrowed(name), ())) = map.next_entry::<Borrowed<'de>, ()>()? else {
                    return Err(A::Error::invalid_length(0, &"one dtype"));
                };
                if map.next_key::<serde::de::IgnoredAny>()?.is_some() {
                    return Err(A::Error::invalid_length(2, &"one dtype"));
                }
                Ok(DtypeName(name))
            }
        }
        d.deserialize_any(Name)
    }
}

/// A string borrowed from the input where it holds no escapes.
struct Borrowed<'a>(std::borrow::Cow<'a, str>);

impl<'de> serde::Deserialize<'de> for Borrowed<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        struct Wrap<'a>(#[serde(borrow)] std::borrow::Cow<'a, str>);
        Wrap::deserialize(d).map(|w| Borrowed(w.0))
    }
}

/// Why an entry gave no tensor.
enum EntryError {
    /// Its value is not JSON: the header is not.
    Syntax(serde_json::Error),
    /// Its value is JSON but not a tensor entry.
    Fields(String),
}

/// The dtype, shape and data offsets of the entry `raw` of tensor `name`.
type EntryFields = (Result<Dtype, String>, Vec<u64>, u64, u64);

fn tensor_entry(name: &str, raw: &str) -> Result<EntryFields, EntryError> {
    // A type error can come before a syntax error later in the value: the syntax is judged apart.
    let e: RawEntry = serde_json::from_str(raw).map_err(|e| {
        if e.is_syntax() {
            return EntryError::Syntax(e);
        }
        match serde_json::from_str::<serde::de::IgnoredAny>(raw) {
            Err(syntax) => EntryError::Syntax(syntax),
            Ok(_) => EntryError::Fields(format!("entry '{name}' is malformed: {e}")),
        }
    })?;
    let dtype = Dtype::from_name(&e.dtype).ok_or_else(|| e.dtype.into_owned());
    let (begin, end) = e.data_offsets;
    Ok((dtype, e.shape, begin, end))
}

/// The reference implementation's `validate()`, reporting every fault instead of the first.
fn validate(out: &mut Header) {
    let data_start = out.data_start();
    let order = crate::sort::order_by(out.tensors.len(), &mut |a, b| {
        let (x, y) = (&out.tensors[a], &out.tensors[b]);
        (x.begin, x.end).cmp(&(y.begin, y.end))
    });
    let mut expected = 0u64;
    let mut findings = Vec::new();
    for &i in &order {
        let t = &out.tensors[i];
        let fault = |code, msg: String| Finding::new(code, msg).on_tensor(&t.name);
        if t.end < t.begin {
            findings.push(fault(
                rules::INVERTED_OFFSETS,
                format!("data_offsets [{}, {}] end before they begin", t.begin, t.end),
            ));
        }
        if t.begin > expected {
            findings.push(fault(
                rules::GAP_IN_DATA,
                format!("data begins at {} but the previous tensor ends at {expected}: a hole in the buffer", t.begin),
            ));
        } else if t.begin < expected {
            findings.push(fault(
                rules::OVERLAPPING_DATA,
                format!("data begins at {} inside the previous tensor, which ends at {expected}", t.begin),
            ));
        }
        expected = expected.max(t.end);
        // Elements × bits must not overflow either (the reference's ValidationOverflow).
        let elems = t
            .shape
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(d))
            .filter(|n| t.dtype.as_ref().map_or(true, |d| n.checked_mul(d.bits()).is_some()));
        match (elems, &t.dtype) {
            (None, _) => findings
                .push(fault(rules::ELEM_COUNT_OVERFLOW, format!("element count of shape {:?} overflows", t.shape))),
            (Some(_), Err(s)) => findings.push(fault(
                rules::UNKNOWN_DTYPE,
                format!("dtype '{s}' is not one of the 22 safetensors dtypes; decoding is disabled"),
            )),
            (Some(n), Ok(d)) => match d.nbytes(n) {
                None => findings.push(fault(
                    rules::MISALIGNED_SLICE,
                    format!("{n} elements of {} ({} bits each) are not a whole number of bytes", d.name(), d.bits()),
                )),
                Some(size) if t.end >= t.begin && size != t.end - t.begin => findings.push(fault(
                    rules::SIZE_MISMATCH,
                    format!("{n} elements of {} take {size} bytes but data_offsets span {}", d.name(), t.end - t.begin),
                )),
                Some(_) => {}
            },
        }
        if data_start.checked_add(t.end).is_none_or(|e| e > out.file_len) {
            findings.push(fault(
                rules::DATA_OUT_OF_BOUNDS,
                format!("data ends at buffer offset {} past the end of the {}-byte file", t.end, out.file_len),
            ));
        }
    }
    match data_start.checked_add(expected) {
        Some(end) if end < out.file_len => findings.push(Finding::new(
            rules::TRAILING_BYTES,
            format!("{} bytes after the data buffer's end at {end}", out.file_len - end),
        )),
        Some(end) if end > out.file_len => findings.push(Finding::new(
            rules::TRUNCATED,
            format!("the header promises data up to byte {end} but the file has {} bytes", out.file_len),
        )),
        _ => {}
    }
    out.findings.extend(findings);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file of `json` as its header and `data` bytes of zeros.
    fn file(json: &[u8], data: usize) -> Vec<u8> {
        let mut b = (json.len() as u64).to_le_bytes().to_vec();
        b.extend_from_slice(json);
        b.resize(b.len() + data, 0);
        b
    }

    fn decode(bytes: &[u8], chunk: u64) -> Header {
        decode_counting(bytes, chunk).0
    }

    /// The header, and how many scans looked at its JSON, fed `chunk` bytes at a time.
    fn decode_counting(bytes: &[u8], chunk: u64) -> (Header, usize) {
        let mut d = HeaderDecoder::new(bytes.len() as u64);
        loop {
            match d.step() {
                Step::Done(h) => return (h, d.json.scans),
                Step::Need(r) => {
                    // As a driver reading ahead may: `chunk` bytes, past the range asked for.
                    let end = (r.start + chunk).min(bytes.len() as u64) as usize;
                    d.feed(r.start, &bytes[r.start as usize..end]).unwrap();
                }
            }
        }
    }

    fn is_refused(h: &Header) -> bool {
        h.findings.iter().any(|f| {
            [rules::INVALID_JSON, rules::HEADER_NOT_OBJECT, rules::INVALID_UTF8].into_iter().any(|r| f.breaks(r))
        })
    }

    const HEADERS: &[&str] = &[
        r#"{"__metadata__":{"format":"pt","n":"1"},"a.b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"c":{"dtype":"U8","shape":[],"data_offsets":[8,9]}}"#,
        r#"  {"w\"x\\y\u00e9":{"dtype":"BF16","shape":[1,2],"data_offsets":[0,4],"extra":{"k":[1,{"z":"}]"}]}}}   "#,
        r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":7,"b":{"dtype":"U8","shape":[0],"data_offsets":[2,2]}}"#,
        r#"{"__metadata__":null,"__metadata__":{"x":"y"},"t":{"shape":[1],"data_offsets":[0,4]}}"#,
        r#"{"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},}"#,
        r#"{"x":{"dtype":"F32","shape":[1,],"data_offsets":[0,4]}}"#,
        r#"{"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}} x"#,
        "{\"\u{e9}\u{1F600}\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
        r#"{"__metadata__":{"m":"v"}}"#,
        r#"{}"#,
        r#"[]"#,
        "",
    ];

    #[test]
    fn any_chunking_gives_the_same_header() {
        for h in HEADERS {
            let bytes = file(h.as_bytes(), 12);
            let whole = decode(&bytes, 1 << 20);
            for chunk in [1, 2, 3, 5, 8, 13, 64] {
                assert_eq!(decode(&bytes, chunk), whole, "{h} in chunks of {chunk}");
            }
        }
    }

    #[test]
    fn duplicates_keep_the_last_entry_in_its_place() {
        let h = decode(&file(HEADERS[2].as_bytes(), 2), 1 << 20);
        let names: Vec<_> = h.tensors.iter().map(|t| (t.name.as_str(), t.shape.clone())).collect();
        assert_eq!(names, [("a", vec![2]), ("b", vec![0])]);
        let dupes = h.findings.iter().filter(|f| f.breaks(rules::DUPLICATE_KEY)).count();
        assert_eq!(dupes, 2, "{:?}", h.findings);
        let h = decode(&file(HEADERS[1].as_bytes(), 4), 1 << 20);
        assert_eq!(h.tensors[0].name, "w\"x\\y\u{e9}");
        assert!(h.findings.iter().any(|f| f.breaks(rules::LEADING_WHITESPACE) && f.message.contains("2 whitespace")));
    }

    /// Every prefix and many one-byte changes of valid headers: refused exactly when
    /// `serde_json` (the reference's parser) finds no JSON object in the header.
    #[test]
    fn the_header_is_refused_exactly_when_it_is_not_a_json_object() {
        let reference = |json: &[u8]| {
            std::str::from_utf8(json)
                .ok()
                .and_then(|t| serde_json::from_str::<Json>(t).ok())
                .is_some_and(|v| v.is_object())
        };
        let mut cases: Vec<Vec<u8>> = Vec::new();
        for h in &HEADERS[..3] {
            let b = h.as_bytes();
            for cut in 0..=b.len() {
                cases.push(b[..cut].to_vec());
            }
            for at in 0..b.len() {
                for sub in [b'"', b'{', b'}', b'[', b']', b',', b':', b' ', b'\\', b'x', b'1', 0, 0xff, 0xc3] {
                    let mut m = b.to_vec();
                    m[at] = sub;
                    cases.push(m);
                }
            }
        }
        for json in &cases {
            let h = decode(&file(json, 0), 7);
            let text = String::from_utf8_lossy(json);
            assert_eq!(is_refused(&h), !reference(json), "{text}: {:?}", h.findings);
            if is_refused(&h) {
                assert!(h.tensors.is_empty() && h.metadata.is_empty(), "{text}");
                assert!(
                    h.findings.iter().any(|f| f.message.contains("byte") || f.message.contains("offset")),
                    "{text}"
                );
            }
        }
    }

    #[test]
    fn entries_are_parsed_as_their_bytes_arrive() {
        // Half of a 10,000-entry header fed: the entries in it are parsed already (the work is
        // spread over the reads) and only the unparsed rest of the last read is held.
        let entries: Vec<String> = (0..10_000)
            .map(|i| format!(r#""t.{i}":{{"dtype":"U8","shape":[1],"data_offsets":[{i},{}]}}"#, i + 1))
            .collect();
        let bytes = file(format!("{{{}}}", entries.join(",")).as_bytes(), 10_000);
        let half = bytes.len() / 2;
        let mut d = HeaderDecoder::new(bytes.len() as u64);
        let mut fed = 0;
        while fed < half {
            let Step::Need(r) = d.step() else { panic!("done early") };
            let end = (r.start as usize + 4096).min(half);
            d.feed(r.start, &bytes[r.start as usize..end]).unwrap();
            fed = end;
        }
        assert!(matches!(d.step(), Step::Need(_)));
        assert!(d.out.tensors.len() > 4_000, "{} entries parsed", d.out.tensors.len());
        assert!(d.window.bytes().len() < 4096 + 100, "{} bytes held", d.window.bytes().len());
    }

    #[test]
    fn a_huge_entry_is_scanned_in_few_passes() {
        // One 4 MB metadata value, read 1 KiB at a time: the wait for twice the bytes keeps
        // the scans to a few dozen rather than one per read.
        let json = format!(r#"{{"__metadata__":{{"big":"{}"}}}}"#, "x".repeat(4 << 20));
        let (h, scans) = decode_counting(&file(json.as_bytes(), 0), 1024);
        assert_eq!(h.metadata[0].1.len(), 4 << 20);
        assert!(scans < 40, "{scans} scans for 4096 reads");
        assert!(h.findings.is_empty(), "{:?}", h.findings);
    }
}
