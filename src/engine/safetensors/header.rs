//! The safetensors header decoder and the reference implementation's validation rules.

use serde::de::{Deserializer as _, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::Value as Json;

use super::rules;
use super::Dtype;
use crate::findings::Finding;
use crate::range::ByteRange;
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
pub struct HeaderDecoder {
    window: Window,
    state: State,
    out: Header,
}

impl HeaderDecoder {
    pub fn new(file_len: u64) -> Self {
        HeaderDecoder { window: Window::new(0), state: State::Length, out: Header { file_len, ..Header::default() } }
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
                State::Done => return Step::Done(std::mem::take(&mut self.out)),
                State::Length => {
                    if self.out.file_len < 8 {
                        let len = self.out.file_len;
                        self.stop(Finding::error(
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
                        self.stop(Finding::error(
                            rules::HEADER_TOO_LARGE,
                            format!("header length {n} exceeds the limit of {MAX_HEADER_BYTES} bytes"),
                        ));
                    } else if 8 + n > self.out.file_len {
                        let len = self.out.file_len;
                        self.stop(Finding::error(
                            rules::HEADER_PAST_END,
                            format!("header length {n} runs past the end of the {len}-byte file"),
                        ));
                    } else {
                        self.window.reserve(8 + n);
                        self.state = State::Json;
                    }
                }
                State::Json => {
                    if let Some(r) = self.have(8 + self.out.header_len) {
                        return Step::Need(r);
                    }
                    let json = &self.window.bytes()[8..(8 + self.out.header_len) as usize];
                    let out = &mut self.out;
                    if parse_json(json, out) {
                        validate(out);
                    }
                    self.window = Window::new(8 + self.out.header_len);
                    self.state = State::Done;
                }
            }
        }
    }

    fn feed(&mut self, offset: u64, bytes: &[u8]) -> Result<(), FeedError> {
        self.window.push(offset, bytes)
    }
}

/// Parse the JSON header into `out`, keeping entry order and reporting duplicate keys.
/// Returns whether the header was a JSON object at all.
fn parse_json(json: &[u8], out: &mut Header) -> bool {
    let text = match std::str::from_utf8(json) {
        Ok(t) => t,
        Err(e) => {
            out.findings.push(Finding::error(
                rules::INVALID_UTF8,
                format!("header is not valid UTF-8 (at offset {})", 8 + e.valid_up_to()),
            ));
            return false;
        }
    };
    // The reference (0.8) accepts JSON whitespace before the object; its README still says the
    // header must begin with '{', so older or stricter readers may refuse it.
    let body = text.trim_start_matches([' ', '\t', '\n', '\r']);
    if !body.starts_with('{') {
        out.findings.push(Finding::error(
            rules::HEADER_NOT_OBJECT,
            "header must be a JSON object starting with '{' at offset 8",
        ));
        return false;
    }
    if body.len() < text.len() {
        out.findings.push(Finding::warning(
            rules::LEADING_WHITESPACE,
            format!(
                "header begins with {} whitespace bytes before its '{{': the reference reader accepts this, \
                 the format's README says the header must begin with '{{'",
                text.len() - body.len()
            ),
        ));
    }
    let entries = match ordered_entries(text) {
        Ok(e) => e,
        Err(e) => {
            out.findings.push(Finding::error(
                rules::INVALID_JSON,
                format!("header is not valid JSON: {e} (byte {} of the file)", 8 + byte_of(text, e.line(), e.column())),
            ));
            return false;
        }
    };
    // The reference keeps the last entry of a repeated tensor name (serde's map), and refuses a
    // repeated `__metadata__`; so do we, reporting both.
    let dropped = crate::dupes::repeated(entries.len(), crate::dupes::Keep::Last, |i| entries[i].0.as_str());
    let mut dropped = dropped.into_iter().peekable();
    let mut metadata_seen = false;
    out.tensors.reserve(entries.len());
    for (i, (key, value)) in entries.into_iter().enumerate() {
        let repeated = dropped.next_if_eq(&i).is_some();
        if key == "__metadata__" {
            if metadata_seen {
                out.findings
                    .push(Finding::error(rules::DUPLICATE_KEY, "header key '__metadata__' appears more than once"));
                continue;
            }
            metadata_seen = true;
        } else if repeated {
            out.findings.push(Finding::warning(
                rules::DUPLICATE_KEY,
                format!("tensor '{key}' appears more than once in the header; the last entry is used, as the reference does"),
            ));
            continue;
        }
        if key == "__metadata__" {
            match serde_json::from_str(value.get()) {
                Ok(v) => metadata(v, out),
                Err(e) => out.findings.push(Finding::error(rules::INVALID_JSON, format!("__metadata__: {e}"))),
            }
        } else {
            match tensor_entry(&key, value) {
                Ok((dtype, shape, begin, end)) => out.tensors.push(TensorEntry { name: key, dtype, shape, begin, end }),
                Err(msg) => out.findings.push(Finding::error(rules::BAD_TENSOR_ENTRY, msg).on_tensor(&key)),
            }
        }
    }
    true
}

/// The byte offset of 1-based `line`, `column` in `text`.
fn byte_of(text: &str, line: usize, column: usize) -> usize {
    let line_start: usize = text.split_inclusive('\n').take(line.saturating_sub(1)).map(str::len).sum();
    (line_start + column.saturating_sub(1)).min(text.len())
}

fn metadata(value: Json, out: &mut Header) {
    if value.is_null() {
        return; // the reference reads `"__metadata__": null` as no metadata
    }
    let Json::Object(map) = value else {
        out.findings.push(Finding::error(rules::METADATA_NOT_STRINGS, "__metadata__ must be an object of strings"));
        return;
    };
    for (k, v) in map {
        match v {
            Json::String(s) => out.metadata.push((k, s)),
            other => {
                out.findings.push(Finding::error(
                    rules::METADATA_NOT_STRINGS,
                    format!("__metadata__ value of '{k}' is not a string"),
                ));
                out.metadata.push((k, other.to_string()));
            }
        }
    }
}

/// A tensor entry's fields as the reference reads them (unknown fields ignored); the dtype is
/// borrowed from the header text unless it holds escapes.
#[derive(serde::Deserialize)]
struct RawEntry<'a> {
    #[serde(borrow)]
    dtype: std::borrow::Cow<'a, str>,
    shape: Vec<u64>,
    data_offsets: (u64, u64),
}

/// The dtype, shape and data offsets of the entry `raw` of tensor `name`.
type EntryFields = (Result<Dtype, String>, Vec<u64>, u64, u64);

fn tensor_entry(name: &str, raw: &RawValue) -> Result<EntryFields, String> {
    let e: RawEntry = serde_json::from_str(raw.get()).map_err(|e| format!("entry '{name}' is malformed: {e}"))?;
    let dtype = Dtype::from_name(&e.dtype).ok_or_else(|| e.dtype.into_owned());
    let (begin, end) = e.data_offsets;
    Ok((dtype, e.shape, begin, end))
}

/// The reference implementation's `validate()`, reporting every fault instead of the first.
fn validate(out: &mut Header) {
    let data_start = out.data_start();
    let mut order: Vec<usize> = (0..out.tensors.len()).collect();
    order.sort_by_key(|&i| (out.tensors[i].begin, out.tensors[i].end));
    let mut expected = 0u64;
    let mut findings = Vec::new();
    for &i in &order {
        let t = &out.tensors[i];
        let fault = |code, msg: String| Finding::error(code, msg).on_tensor(&t.name);
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
        Some(end) if end < out.file_len => findings.push(Finding::error(
            rules::TRAILING_BYTES,
            format!("{} bytes after the data buffer's end at {end}", out.file_len - end),
        )),
        Some(end) if end > out.file_len => findings.push(Finding::error(
            rules::TRUNCATED,
            format!("the header promises data up to byte {end} but the file has {} bytes", out.file_len),
        )),
        _ => {}
    }
    out.findings.extend(findings);
}

/// The top-level object's entries in order, duplicates included.
fn ordered_entries(text: &str) -> Result<Vec<(String, &RawValue)>, serde_json::Error> {
    struct Entries;
    impl<'de> Visitor<'de> for Entries {
        type Value = Vec<(String, &'de RawValue)>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some((k, v)) = map.next_entry::<String, &'de RawValue>()? {
                out.push((k, v));
            }
            Ok(out)
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let entries = (&mut de).deserialize_map(Entries)?;
    de.end()?;
    Ok(entries)
}
