//! The GGUF header decoder: a resumable state machine over key/values and tensor infos.
//!
//! Every count and length is checked against the bytes left in the file before anything is
//! read or allocated. Items are parsed whole; big arrays keep their length, first items and
//! byte span; fixed-size array items past the kept ones are skipped without being read.

use super::reader::{Reader, Short};
use super::rules;
use super::value::{Array, Value, ValueType, ARRAY_ITEMS_KEPT};
use super::GgmlType;
use crate::findings::{Finding, RuleCap};
use crate::range::ByteRange;
use crate::step::MAX_METADATA_ENTRIES;
use crate::step::RESERVE_ENTRIES;
use crate::step::{Decoder, FeedError, Step, Window};

/// `general.alignment` when a file does not set it.
pub const DEFAULT_ALIGNMENT: u64 = 32;
/// ggml's `GGML_MAX_DIMS`.
pub const MAX_DIMS: u32 = 4;
/// Most dimensions a tensor info is still read with (then flagged): beyond, parsing stops.
const MAX_READ_DIMS: u32 = 64;
/// ggml's `GGML_MAX_NAME`: a tensor name must be shorter, to fit with its NUL.
pub const MAX_NAME_BYTES: u64 = 64;
/// Longest string value read (chat templates, embedded tokenizer JSON).
pub const MAX_STRING_BYTES: u64 = 64 << 20;
/// Bytes of each string an array's tail keeps ([`super::Array::tail`]).
pub const TAIL_TEXT_BYTES: usize = 4 << 10;
/// Longest key read.
pub const MAX_KEY_BYTES: u64 = 1 << 16;
/// Deepest nesting of arrays read.
pub const MAX_ARRAY_DEPTH: usize = 8;
/// ggml's `GGUF_MAX_ARRAY_ELEMENTS`: llama.cpp refuses longer arrays.
pub const MAX_ARRAY_ELEMENTS: u64 = 1 << 30;
/// Bytes read ahead of the item being parsed.
const READ_AHEAD: u64 = 64 << 10;

/// The smallest encodings, for checking counts against the bytes left.
const MIN_KV_BYTES: u64 = 8 + 4 + 1;
const MIN_TENSOR_INFO_BYTES: u64 = 8 + 4 + 4 + 8;

/// One tensor info as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorInfo {
    pub name: String,
    pub ggml_type: GgmlType,
    /// ggml `ne` order, innermost first.
    pub ne: Vec<u64>,
    /// Offset relative to the data section.
    pub rel_offset: u64,
    /// Bytes of data, when the type and shape define it (or a fork type was named by its span).
    pub nbytes: Option<u64>,
    /// Bytes from its data to the next tensor's, once the data section is located; a span
    /// shorter than `nbytes` means the type is not what the bytes hold. `None` where the data
    /// would reach the end of the file: running short there is a truncated file.
    pub span: Option<u64>,
}

/// What a GGUF header says, with every rule it breaks.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Header {
    pub file_len: u64,
    /// 0 when the magic was not read.
    pub version: u32,
    pub big_endian: bool,
    pub alignment: u64,
    /// Keys in file order (duplicates dropped after the first).
    pub metadata: Vec<(String, Value)>,
    pub tensors: Vec<TensorInfo>,
    /// Declared counts.
    pub tensor_count: u64,
    pub kv_count: u64,
    /// Absolute offset of the data section, when the header was read to its end.
    pub data_start: Option<u64>,
    pub findings: Vec<Finding>,
}

impl Header {
    /// The value stored under `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Absolute offset of tensor `t`'s data, when the data section was located.
    pub fn abs_offset(&self, t: &TensorInfo) -> Option<u64> {
        self.data_start?.checked_add(t.rel_offset)
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum State {
    Preamble,
    Counts,
    KeyValue,
    ArrayItems,
    TensorInfo,
    Done,
}

/// An array being read: its items so far.
struct Frame {
    item_type: ValueType,
    len: u64,
    read: u64,
    items: Vec<Value>,
    /// A string array's last items past the kept ones ([`Array::tail`]).
    tail: Vec<Value>,
    start: u64,
    /// Findings about the array, reported once its head is known to be whole.
    findings: Vec<Finding>,
    /// Items that are not valid UTF-8 strings, or bools other than 0 or 1, and the first of them.
    bad_items: u64,
    first_bad: u64,
}

/// Why parsing stopped early: a finding, after which nothing more can be trusted.
struct Stop(Finding);

enum Outcome {
    Progress,
    Short(Short),
    Stop(Stop),
}

impl From<Short> for Outcome {
    fn from(s: Short) -> Self {
        Outcome::Short(s)
    }
}

impl From<Stop> for Outcome {
    fn from(s: Stop) -> Self {
        Outcome::Stop(s)
    }
}

/// Decodes the header of one GGUF file of `file_len` bytes.
pub struct HeaderDecoder {
    window: Window,
    state: State,
    out: Header,
    kvs_read: u64,
    tensors_read: u64,
    frames: Vec<Frame>,
    /// The key of the top-level array being read: its text and its bytes.
    pending_key: Option<(String, Vec<u8>, u64)>,
    /// Offset of each metadata entry, for the duplicate-key findings made at the end.
    key_at: Vec<u64>,
    /// The stored bytes of keys that are not valid UTF-8 (keys are compared byte for byte).
    raw_keys: Vec<(usize, Vec<u8>)>,
    /// Offset of each tensor info.
    tensor_at: Vec<u64>,
    /// Tensor names as ggml compares them (up to the first NUL), where that differs from the name.
    name_keys: Vec<(usize, Vec<u8>)>,
    /// Don't retry the current item until the window reaches this offset.
    wait_until: u64,
    /// Findings kept to so many per rule.
    cap: RuleCap,
    /// Key/values read and not kept, past [`MAX_METADATA_ENTRIES`].
    kvs_dropped: u64,
    /// A key or tensor name too long to keep, already stepped over: what follows it is read next.
    stepped: Option<SteppedName>,
}

/// A key or tensor name longer than [`MAX_KEY_BYTES`] that the file holds: its first
/// [`KEPT_NAME_BYTES`] are kept, the rest stepped over.
struct SteppedName {
    /// Its first bytes as text, marked as cut.
    text: String,
    /// What it is compared by: its first bytes and its length (two such names alike in both
    /// count as one).
    raw: Vec<u8>,
    len: u64,
    at: u64,
}

/// Bytes kept of a key or tensor name that is stepped over.
const KEPT_NAME_BYTES: usize = 1024;

impl HeaderDecoder {
    pub fn new(file_len: u64) -> Self {
        HeaderDecoder {
            window: Window::new(0),
            state: State::Preamble,
            out: Header { file_len, alignment: DEFAULT_ALIGNMENT, ..Header::default() },
            kvs_read: 0,
            tensors_read: 0,
            frames: Vec::new(),
            pending_key: None,
            key_at: Vec::new(),
            raw_keys: Vec::new(),
            tensor_at: Vec::new(),
            name_keys: Vec::new(),
            wait_until: 0,
            cap: RuleCap::default(),
            kvs_dropped: 0,
            stepped: None,
        }
    }

    /// Step over the key or tensor name (`what`) at `start`, too long to keep but held by the
    /// file, keeping its first bytes: gguf.cpp reads names of any length, and what follows
    /// is still shown.
    fn step_over_name(&mut self, what: &'static str, start: u64) -> Outcome {
        let big = self.out.big_endian;
        let Some(bytes) = self.window.bytes().get(..8 + KEPT_NAME_BYTES) else {
            return Short::Need(8 + KEPT_NAME_BYTES as u64).into();
        };
        let len = match Reader::new(&bytes[..8], big).u64() {
            Ok(l) => l,
            Err(s) => return s.into(),
        };
        let kept = &bytes[8..];
        // A character cut by the limit is dropped, not reported as invalid UTF-8.
        let whole = match std::str::from_utf8(kept) {
            Err(e) if e.error_len().is_none() => &kept[..e.valid_up_to()],
            _ => kept,
        };
        let text = format!("{}…", text(whole, start, what, &mut self.out.findings));
        self.out.findings.push(Finding::new(
            rules::NAME_NOT_KEPT,
            format!(
                "the {what} at offset {start} is {len} bytes, over the {MAX_KEY_BYTES} kept: its first \
                 {KEPT_NAME_BYTES} bytes are shown, the rest is stepped over"
            ),
        ));
        let raw = [kept, &len.to_le_bytes()].concat();
        self.stepped = Some(SteppedName { text, raw, len, at: start });
        self.window.consume(start + 8 + len);
        Outcome::Progress
    }

    fn pos(&self) -> u64 {
        self.window.base()
    }

    fn left(&self) -> u64 {
        self.out.file_len.saturating_sub(self.pos())
    }

    fn finish(&mut self) {
        if self.kvs_dropped > 0 {
            self.out.findings.push(Finding::new(
                rules::TOO_MANY_KEYS,
                format!(
                    "{} more key/values past the first {MAX_METADATA_ENTRIES} were read and not kept (nor \
                     checked for repeated keys)",
                    self.kvs_dropped
                ),
            ));
            self.kvs_dropped = 0;
        }
        self.state = State::Done;
        self.window = Window::new(self.pos());
        self.frames.clear();
        self.dedupe_keys();
        self.dedupe_names();
    }

    fn stop(&mut self, finding: Finding) {
        self.out.findings.push(finding);
        self.finish();
    }

    /// Try to parse the next item from the buffered bytes.
    fn advance(&mut self) -> Outcome {
        match self.state {
            State::Preamble => self.preamble(),
            State::Counts => self.counts(),
            State::KeyValue => self.key_value(),
            State::ArrayItems => self.array_items(),
            State::TensorInfo => self.tensor_info(),
            State::Done => Outcome::Progress,
        }
    }

    fn reader(&self) -> Reader<'_> {
        Reader::new(self.window.bytes(), self.out.big_endian)
    }

    fn preamble(&mut self) -> Outcome {
        let mut r = self.reader();
        let magic = match r.take(4) {
            Ok(m) => m,
            Err(s) => return s.into(),
        };
        if magic != b"GGUF" {
            return Stop(Finding::new(
                rules::BAD_MAGIC,
                format!("file does not start with the GGUF magic (found {magic:02x?})"),
            ))
            .into();
        }
        let raw = match r.take(4) {
            Ok(v) => u32::from_le_bytes(v.try_into().expect("4 bytes")),
            Err(s) => return s.into(),
        };
        let (version, big) = match raw {
            v if v & 0xffff != 0 => (v, false),
            v => (v.swap_bytes(), true),
        };
        self.out.version = version;
        self.out.big_endian = big;
        if big && matches!(version, 2 | 3) {
            self.out.findings.push(Finding::new(
                rules::BIG_ENDIAN,
                "the file is big-endian: llama.cpp loads it only on big-endian machines (on others it \
                 reports an endianness mismatch); its header is read, its tensor values are not decoded",
            ));
        }
        match version {
            2 | 3 => {}
            1 => {
                return Stop(Finding::new(
                    rules::UNSUPPORTED_VERSION,
                    "GGUF version 1 (u32 counts and lengths, before August 2023) is recognised but \
                     not supported by current readers; convert the file",
                ))
                .into()
            }
            v => {
                return Stop(Finding::new(
                    rules::UNSUPPORTED_VERSION,
                    format!("GGUF version {v} is not one of the supported versions 2 and 3"),
                ))
                .into()
            }
        }
        self.window.consume(8);
        self.state = State::Counts;
        Outcome::Progress
    }

    fn counts(&mut self) -> Outcome {
        let mut r = self.reader();
        let (tensors, kvs) = match (r.u64(), r.u64()) {
            (Ok(t), Ok(k)) => (t, k),
            (Err(s), _) | (_, Err(s)) => return s.into(),
        };
        self.out.tensor_count = tensors;
        self.out.kv_count = kvs;
        self.window.consume(24);
        let min = tensors
            .checked_mul(MIN_TENSOR_INFO_BYTES)
            .and_then(|t| kvs.checked_mul(MIN_KV_BYTES).and_then(|k| k.checked_add(t)));
        if min.is_none_or(|m| m > self.left()) {
            return Stop(Finding::new(
                rules::COUNT_EXCEEDS_FILE,
                format!(
                    "header declares {tensors} tensors and {kvs} key/values, more than the \
                     {} bytes after offset 24 can hold",
                    self.left()
                ),
            ))
            .into();
        }
        // Room for what a real header holds: the counts fit the file's bytes, not memory (a
        // damaged count in a 40 GB file could ask for gigabytes); more grows as entries are read.
        let hint = |n: u64| usize::try_from(n.min(RESERVE_ENTRIES)).unwrap_or(0);
        self.out.metadata.reserve(hint(kvs));
        self.out.tensors.reserve(hint(tensors));
        self.key_at.reserve(hint(kvs));
        self.state = State::KeyValue;
        Outcome::Progress
    }

    fn key_value(&mut self) -> Outcome {
        if self.kvs_read == self.out.kv_count {
            self.state = State::TensorInfo;
            return self.alignment_rule();
        }
        let big = self.out.big_endian;
        let left = self.left();
        // Where the key starts, and where the reader does (after a key stepped over, its type).
        let (start, at) = (self.stepped.as_ref().map_or(self.pos(), |s| s.at), self.pos());
        let mut r = Reader::new(self.window.bytes(), big);
        let key = match &self.stepped {
            Some(_) => None,
            None => match r.string_bytes("key", MAX_KEY_BYTES.min(left)) {
                Ok(k) => Some(k),
                Err(Short::TooLong(_, len)) if len <= left.saturating_sub(8) => {
                    return self.step_over_name("key", start)
                }
                Err(s) => return self.short_or_stop(s, start),
            },
        };
        let type_id = match r.u32() {
            Ok(t) => t,
            Err(s) => return s.into(),
        };
        let (key_raw, key_text) = match key {
            Some(key) => (key.to_vec(), text(key, start, "key", &mut self.out.findings)),
            None => {
                let s = self.stepped.as_ref().expect("a key stepped over");
                (s.raw.clone(), s.text.clone())
            }
        };
        if key_raw.is_empty() {
            self.out.findings.push(Finding::new(
                rules::EMPTY_KEY,
                format!("key at offset {start} is empty; llama.cpp refuses empty keys"),
            ));
        }
        let Some(vt) = ValueType::from_id(type_id) else {
            return Stop(Finding::new(
                rules::BAD_VALUE_TYPE,
                format!("key '{key_text}' at offset {start} has value type {type_id}, not one of the 13 GGUF types"),
            ))
            .into();
        };
        if vt == ValueType::String {
            match self.long_string_end(&r, at) {
                Ok(Some(end)) => {
                    let (at, len) = (at + r.pos(), end - at - r.pos() - 8);
                    self.out.findings.push(Finding::new(
                        rules::STRING_NOT_KEPT,
                        format!(
                            "the value of '{key_text}' at offset {at} is a {len}-byte string, over the \
                             {MAX_STRING_BYTES} bytes kept: it is skipped and shown empty"
                        ),
                    ));
                    self.kvs_read += 1;
                    self.stepped = None;
                    self.window.consume(end);
                    self.push_kv(key_text, key_raw, Value::String(String::new()), start);
                    return Outcome::Progress;
                }
                Ok(None) => {}
                Err(o) => return o,
            }
        }
        let value = if vt == ValueType::Array {
            match self.array_head(&mut Reader::new(&self.window.bytes()[r.pos() as usize..], big), at + r.pos()) {
                Ok(mut frame) => {
                    let used = r.pos() + 12;
                    self.out.findings.append(&mut frame.findings);
                    self.frames.push(frame);
                    self.pending_key = Some((key_text, key_raw, start));
                    self.kvs_read += 1;
                    self.stepped = None;
                    self.window.consume(at + used);
                    self.frames.last_mut().expect("just pushed").start = at + used;
                    self.state = State::ArrayItems;
                    return Outcome::Progress;
                }
                Err(Outcome::Short(Short::Need(n))) => return Short::Need(r.pos() + n).into(),
                Err(o) => return o,
            }
        } else {
            match scalar(&mut r, vt, at, self.out.file_len, &mut self.out.findings) {
                Ok(v) => v,
                Err(o) => return o,
            }
        };
        let used = r.pos();
        self.kvs_read += 1;
        self.stepped = None;
        self.window.consume(at + used);
        self.push_kv(key_text, key_raw, value, start);
        Outcome::Progress
    }

    /// Where a string value that starts at `r`'s position ends, when it is longer than
    /// [`MAX_STRING_BYTES`] and the file holds it (llama.cpp reads up to 1 GiB): such a string is
    /// stepped over, not buffered.
    fn long_string_end(&self, r: &Reader<'_>, start: u64) -> Result<Option<u64>, Outcome> {
        let here = r.pos() as usize;
        let Some(len_bytes) = self.window.bytes().get(here..here + 8) else {
            return Err(Short::Need(r.pos() + 8).into());
        };
        let len = Reader::new(len_bytes, self.out.big_endian).u64().map_err(Outcome::from)?;
        let end = (start + r.pos() + 8).checked_add(len).filter(|&e| e <= self.out.file_len);
        Ok(end.filter(|_| len > MAX_STRING_BYTES))
    }

    /// Read an array's item type and count, checked against the bytes left.
    fn array_head(&self, r: &mut Reader<'_>, at: u64) -> Result<Frame, Outcome> {
        let item_id = r.u32().map_err(Outcome::from)?;
        let len = r.u64().map_err(Outcome::from)?;
        let Some(item_type) = ValueType::from_id(item_id) else {
            return Err(Stop(Finding::new(
                rules::BAD_VALUE_TYPE,
                format!("array at offset {at} has item type {item_id}, not one of the 13 GGUF types"),
            ))
            .into());
        };
        if item_type == ValueType::Array && self.frames.len() + 1 >= MAX_ARRAY_DEPTH {
            return Err(Stop(Finding::new(
                rules::ARRAY_TOO_DEEP,
                format!("arrays nested deeper than {MAX_ARRAY_DEPTH} at offset {at}"),
            ))
            .into());
        }
        let mut findings = Vec::new();
        if item_type == ValueType::Array && self.frames.is_empty() {
            findings.push(Finding::new(
                rules::NESTED_ARRAY,
                format!("array at offset {at} holds arrays: the format allows it, but llama.cpp refuses nested arrays"),
            ));
        }
        let min_item = item_type.fixed_bytes().unwrap_or(if item_type == ValueType::String { 8 } else { 12 });
        let left = self.out.file_len.saturating_sub(at + 12);
        if len.checked_mul(min_item).is_none_or(|b| b > left) {
            return Err(Stop(Finding::new(
                rules::COUNT_EXCEEDS_FILE,
                format!(
                    "array at offset {at} declares {len} {} items, more than the {left} bytes left can hold",
                    item_type.name()
                ),
            ))
            .into());
        }
        if len > MAX_ARRAY_ELEMENTS {
            findings.push(Finding::new(
                rules::ARRAY_TOO_LONG,
                format!(
                    "array at offset {at} has {len} items; llama.cpp refuses arrays of more than {MAX_ARRAY_ELEMENTS}"
                ),
            ));
        }
        Ok(Frame {
            item_type,
            len,
            read: 0,
            items: Vec::new(),
            tail: Vec::new(),
            start: at + 12,
            findings,
            bad_items: 0,
            first_bad: 0,
        })
    }

    fn short_or_stop(&self, s: Short, at: u64) -> Outcome {
        short_or_stop(self.out.file_len, s, at)
    }

    fn push_kv(&mut self, key: String, raw: Vec<u8>, value: Value, at: u64) {
        // Past the cap only the key that places the data is kept.
        if self.out.metadata.len() >= MAX_METADATA_ENTRIES && key != "general.alignment" {
            self.kvs_dropped += 1;
            return;
        }
        if raw != key.as_bytes() {
            self.raw_keys.push((self.out.metadata.len(), raw));
        }
        self.key_at.push(at);
        self.out.metadata.push((key, value));
    }

    /// Report repeated keys (compared as stored) and keep the first of each.
    fn dedupe_keys(&mut self) {
        let meta = &self.out.metadata;
        let raw = &self.raw_keys;
        let key = |i: usize| match raw.binary_search_by_key(&i, |r| r.0) {
            Ok(j) => raw[j].1.as_slice(),
            Err(_) => meta[i].0.as_bytes(),
        };
        let dupes = crate::dupes::repeated(meta.len(), crate::dupes::Keep::First, key);
        if dupes.is_empty() {
            return;
        }
        for &i in &dupes {
            self.out.findings.push(Finding::new(
                rules::DUPLICATE_KEY,
                format!(
                    "key '{}' at offset {} appears more than once; the first is kept",
                    self.out.metadata[i].0, self.key_at[i]
                ),
            ));
        }
        let mut drop = dupes.into_iter().peekable();
        let mut i = 0;
        self.out.metadata.retain(|_| {
            let keep = drop.next_if_eq(&i).is_none();
            i += 1;
            keep
        });
    }

    /// Report tensor names used more than once (as ggml compares them: up to a NUL).
    fn dedupe_names(&mut self) {
        let tensors = &self.out.tensors;
        let keys = &self.name_keys;
        let key = |i: usize| match keys.binary_search_by_key(&i, |r| r.0) {
            Ok(j) => keys[j].1.as_slice(),
            Err(_) => tensors[i].name.as_bytes(),
        };
        for i in crate::dupes::repeated(tensors.len(), crate::dupes::Keep::First, key) {
            let t = &self.out.tensors[i];
            self.out.findings.push(
                Finding::new(
                    rules::DUPLICATE_TENSOR,
                    format!("tensor name at offset {} is used more than once", self.tensor_at[i]),
                )
                .on_tensor(&t.name),
            );
        }
    }

    fn array_items(&mut self) -> Outcome {
        let start = self.pos();
        let frame = self.frames.last_mut().expect("array state has a frame");
        if frame.read == frame.len {
            let frame = self.frames.pop().expect("checked above");
            if frame.bad_items > 0 {
                let (code, what) = match frame.item_type {
                    ValueType::Bool => (rules::BAD_BOOL, "bools that are not 0 or 1"),
                    _ => (rules::INVALID_UTF8, "strings that are not valid UTF-8"),
                };
                self.out.findings.push(Finding::new(
                    code,
                    format!(
                        "array at offset {} holds {} {what} (the first is item {})",
                        frame.start - 12,
                        frame.bad_items,
                        frame.first_bad
                    ),
                ));
            }
            let array = Value::Array(Box::new(Array {
                item_type: frame.item_type,
                len: frame.len,
                items: frame.items,
                tail: frame.tail,
                span: ByteRange::new(frame.start, start),
            }));
            match self.frames.last_mut() {
                Some(parent) => {
                    if parent.items.len() < ARRAY_ITEMS_KEPT {
                        parent.items.push(array);
                    }
                    parent.read += 1;
                }
                None => {
                    self.state = State::KeyValue;
                    let (key, raw, at) = self.pending_key.take().expect("a top-level array has a key");
                    self.push_kv(key, raw, array, at);
                }
            }
            return Outcome::Progress;
        }
        let item_type = frame.item_type;
        if let (Some(size), true) = (item_type.fixed_bytes(), frame.items.len() >= ARRAY_ITEMS_KEPT) {
            // Past the kept items, fixed-size items are skipped unread.
            let skip = (frame.len - frame.read) * size; // checked against the file in array_head
            frame.read = frame.len;
            self.window.consume(start + skip);
            return Outcome::Progress;
        }
        let big = self.out.big_endian;
        let bytes = self.window.bytes();
        if item_type == ValueType::Array {
            let mut r = Reader::new(bytes, big);
            return match self.array_head(&mut r, start) {
                Ok(mut frame) => {
                    self.out.findings.append(&mut frame.findings);
                    self.window.consume(start + 12);
                    self.frames.push(frame);
                    Outcome::Progress
                }
                Err(o) => o,
            };
        }
        // Read as many items as the window holds, in one go.
        let file_len = self.out.file_len;
        let frame = self.frames.last().expect("array state has a frame");
        let mut r = Reader::new(bytes, big);
        let mut done = 0u64;
        let mut keep: Vec<Value> = Vec::new();
        let mut tail: Vec<Value> = Vec::new();
        let kept = frame.items.len();
        let remaining = frame.len - frame.read;
        // Items from here on are the tail (the last ones past the kept head).
        let tail_from = frame.len.saturating_sub(ARRAY_ITEMS_KEPT as u64).max(ARRAY_ITEMS_KEPT as u64);
        let mut outcome = Outcome::Progress;
        let mut used = 0;
        // Items that are not valid UTF-8 or not 0/1, and the first of them (its index).
        let (mut bad, mut first_bad) = (0u64, None);
        while done < remaining {
            let item_start = r.pos();
            let item = if item_type == ValueType::String {
                let left = file_len.saturating_sub(start + item_start + 8);
                match r.string_bytes("string", MAX_STRING_BYTES.min(left)) {
                    Ok(s) => {
                        if std::str::from_utf8(s).is_err() {
                            bad += 1;
                            first_bad = first_bad.or(Some(frame.read + done));
                        }
                        if kept + keep.len() < ARRAY_ITEMS_KEPT {
                            Some(Value::String(String::from_utf8_lossy(s).into_owned()))
                        } else {
                            if frame.read + done >= tail_from {
                                // Tail texts are kept to their first bytes: a vocabulary's are short,
                                // and a hostile file's 64 MiB strings are not held twice over.
                                let kept = &s[..s.len().min(TAIL_TEXT_BYTES)];
                                tail.push(Value::String(String::from_utf8_lossy(kept).into_owned()));
                            }
                            None
                        }
                    }
                    Err(s) => {
                        outcome = match s {
                            Short::Need(n) if done == 0 => Short::Need(n).into(),
                            Short::Need(_) => Outcome::Progress,
                            too_long => short_or_stop(file_len, too_long, start + item_start),
                        };
                        break;
                    }
                }
            } else {
                if kept + keep.len() >= ARRAY_ITEMS_KEPT {
                    break;
                }
                if item_type == ValueType::Bool && bytes.get(item_start as usize).is_some_and(|&b| b > 1) {
                    bad += 1;
                    first_bad = first_bad.or(Some(frame.read + done));
                }
                match r.fixed_value(item_type).map(|v| v.expect("string and array items are read above")) {
                    Ok(v) => Some(v),
                    Err(s) => {
                        if done == 0 {
                            outcome = s.into();
                        }
                        break;
                    }
                }
            };
            keep.extend(item);
            done += 1;
            used = r.pos();
        }
        let frame = self.frames.last_mut().expect("array state has a frame");
        if let Some(first) = first_bad.filter(|_| frame.bad_items == 0) {
            frame.first_bad = first;
        }
        frame.bad_items += bad;
        frame.read += done;
        frame.items.extend(keep);
        frame.tail.extend(tail);
        self.window.consume(start + used);
        if done > 0 {
            Outcome::Progress
        } else {
            outcome
        }
    }

    /// Check `general.alignment` once all key/values are read.
    fn alignment_rule(&mut self) -> Outcome {
        if let Some(v) = self.out.get("general.alignment") {
            let ok = match v {
                Value::U32(a) if a.is_power_of_two() => Some(u64::from(*a)),
                _ => None,
            };
            match ok {
                Some(a) if a < 8 => {
                    self.out.alignment = a;
                    self.out.findings.push(Finding::new(
                        rules::BAD_ALIGNMENT_MINOR,
                        format!(
                            "general.alignment is {a}: the GGUF spec requires a multiple of 8 (llama.cpp accepts \
                             any power of two)"
                        ),
                    ));
                }
                Some(a) => self.out.alignment = a,
                None => self.out.findings.push(Finding::new(
                    rules::BAD_ALIGNMENT,
                    format!(
                        "general.alignment must be a u32 power of two, found {} {v}; using {DEFAULT_ALIGNMENT}",
                        v.value_type().name()
                    ),
                )),
            }
        }
        Outcome::Progress
    }

    fn tensor_info(&mut self) -> Outcome {
        if self.tensors_read == self.out.tensor_count {
            return self.data_section();
        }
        let left = self.left();
        // Where the info starts, and where the reader does (after a name stepped over, its dims).
        let (start, at) = (self.stepped.as_ref().map_or(self.pos(), |s| s.at), self.pos());
        let mut r = Reader::new(self.window.bytes(), self.out.big_endian);
        // Names as long as keys at most: ggml's are under 64 bytes, and each finding on a tensor
        // repeats its name.
        let name = match &self.stepped {
            Some(_) => None,
            None => match r.string_bytes("tensor name", MAX_KEY_BYTES.min(left)) {
                Ok(n) => Some(n),
                Err(Short::TooLong(_, len)) if len <= left.saturating_sub(8) => {
                    return self.step_over_name("tensor name", start)
                }
                Err(s) => return self.short_or_stop(s, start),
            },
        };
        let n_dims = match r.u32() {
            Ok(n) => n,
            Err(s) => return s.into(),
        };
        if n_dims > MAX_READ_DIMS {
            // Far past ggml's limit: no tensor info, and buffering it would take what it claims.
            return Stop(Finding::new(
                rules::TOO_MANY_DIMS,
                format!(
                    "tensor info at offset {start} declares {n_dims} dimensions (ggml allows at most \
                     {MAX_DIMS}); the tensor infos from there on are not read"
                ),
            ))
            .into();
        }
        let dims_bytes = u64::from(n_dims) * 8;
        if dims_bytes + 12 > left.saturating_sub(r.pos()) {
            return Stop(Finding::new(
                rules::TRUNCATED,
                format!("tensor info at offset {start} declares {n_dims} dimensions, more than the file holds"),
            ))
            .into();
        }
        let mut ne = Vec::with_capacity(n_dims.min(MAX_DIMS) as usize);
        for _ in 0..n_dims {
            match r.u64() {
                Ok(d) => ne.push(d),
                Err(s) => return s.into(),
            }
        }
        let (type_id, rel_offset) = match (r.u32(), r.u64()) {
            (Ok(t), Ok(o)) => (t, o),
            (Err(s), _) | (_, Err(s)) => return s.into(),
        };
        let used = r.pos();
        let (name, name_key, name_len) = match name {
            // ggml keeps names as C strings: two names equal up to a NUL are the same name.
            Some(name) => (
                text(name, start, "tensor name", &mut self.out.findings),
                name.split(|&b| b == 0).next().unwrap_or_default().to_vec(),
                name.len() as u64,
            ),
            None => {
                let s = self.stepped.take().expect("a name stepped over");
                (s.text, s.raw, s.len)
            }
        };
        self.window.consume(at + used);
        self.tensors_read += 1;
        let t = self.check_tensor(name, name_key, name_len, ne, n_dims, GgmlType(type_id), rel_offset, start);
        self.out.tensors.push(t);
        Outcome::Progress
    }

    #[allow(clippy::too_many_arguments)]
    fn check_tensor(
        &mut self,
        name: String,
        name_key: Vec<u8>,
        name_len: u64,
        ne: Vec<u64>,
        n_dims: u32,
        ggml_type: GgmlType,
        rel_offset: u64,
        at: u64,
    ) -> TensorInfo {
        let mut findings = Vec::new();
        let mut fault = |code, msg: String| findings.push(Finding::new(code, msg).on_tensor(&name));
        if name_len >= MAX_NAME_BYTES {
            fault(
                rules::NAME_TOO_LONG,
                format!("tensor name at offset {at} is {name_len} bytes; ggml allows at most {}", MAX_NAME_BYTES - 1),
            );
        }
        if name_key != name.as_bytes() {
            self.name_keys.push((self.out.tensors.len(), name_key));
        }
        self.tensor_at.push(at);
        if n_dims > MAX_DIMS {
            fault(rules::TOO_MANY_DIMS, format!("tensor has {n_dims} dimensions; ggml allows at most {MAX_DIMS}"));
        }
        let mut nbytes = None;
        if let Some(d) = ne.iter().position(|&d| d > i64::MAX as u64) {
            fault(rules::NEGATIVE_DIM, format!("dimension {d} is negative as ggml's int64 ({})", ne[d] as i64));
        } else {
            // A zero anywhere makes an empty tensor, however large the other dimensions.
            let elems = if ne.contains(&0) {
                Some(0)
            } else {
                ne.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d).filter(|&e| e <= i64::MAX as u64))
            };
            match (elems, ggml_type.kind()) {
                (None, _) => {
                    fault(rules::ELEM_COUNT_OVERFLOW, format!("element count of shape {ne:?} overflows ggml's int64"))
                }
                (_, None) => fault(
                    rules::UNKNOWN_TYPE,
                    format!("GGML type id {} is not a known type; decoding is disabled", ggml_type.0),
                ),
                (_, Some(super::Kind::Removed)) => fault(
                    rules::REMOVED_TYPE,
                    format!("GGML type {} (id {}) was removed from ggml", ggml_type.name(), ggml_type.0),
                ),
                (Some(elems), Some(super::Kind::Live { block_elems, .. })) => {
                    let row = ne.first().copied().unwrap_or(1);
                    if row % block_elems != 0 {
                        fault(
                            rules::ROW_NOT_BLOCK_MULTIPLE,
                            format!(
                                "ne[0] = {row} is not a multiple of {}'s block size {block_elems}",
                                ggml_type.name()
                            ),
                        );
                    } else {
                        nbytes = ggml_type.nbytes(elems);
                        if nbytes.is_none() {
                            fault(
                                rules::SIZE_OVERFLOW,
                                format!(
                                    "{elems} elements of {} take more than 2^64 bytes; ggml refuses sizes past SIZE_MAX",
                                    ggml_type.name()
                                ),
                            );
                        }
                    }
                }
            }
        }
        self.out.findings.extend(findings);
        TensorInfo { name, ggml_type, ne, rel_offset, nbytes, span: None }
    }

    /// Locate the data section and check each tensor's offset against the running padded size.
    fn data_section(&mut self) -> Outcome {
        let align = self.out.alignment;
        let end = self.pos();
        let Some(data_start) = end.checked_next_multiple_of(align) else {
            return Stop(Finding::new(rules::TRUNCATED, "data section offset overflows")).into();
        };
        self.out.data_start = Some(data_start);
        super::forks::check_spans(&mut self.out);
        let file_len = self.out.file_len;
        let mut findings = Vec::new();
        let mut expected = Some(0u64);
        let mut data_end = data_start;
        // Trailing bytes cannot be told when data runs past the end or the last data has no known size.
        let mut end_known = self.out.tensors.iter().max_by_key(|t| t.rel_offset).is_none_or(|t| t.nbytes.is_some());
        for t in &self.out.tensors {
            let fault = |code, msg: String| Finding::new(code, msg).on_tensor(&t.name);
            if t.rel_offset % align != 0 {
                findings.push(fault(
                    rules::MISALIGNED_OFFSET,
                    format!("data offset {} is not a multiple of the alignment {align}", t.rel_offset),
                ));
            } else if let Some(exp) = expected.filter(|&e| e != t.rel_offset) {
                let (code, how) = if t.rel_offset < exp {
                    (rules::OVERLAPPING_DATA, "overlaps the previous tensor's data, or is out of order")
                } else {
                    (rules::GAP_IN_DATA, "leaves a gap after the previous tensor's data")
                };
                findings.push(fault(
                    code,
                    format!("data offset {} {how}; ggml expects {exp} (the running padded size)", t.rel_offset),
                ));
            }
            let size = t.nbytes.unwrap_or(0);
            let abs_end = data_start.checked_add(t.rel_offset).and_then(|s| s.checked_add(size));
            match abs_end {
                Some(e) if e <= file_len => data_end = data_end.max(e),
                _ => {
                    end_known = false;
                    findings.push(fault(
                        rules::DATA_OUT_OF_BOUNDS,
                        format!(
                            "data at relative offset {} (+{size} bytes) runs past the end of the {file_len}-byte file",
                            t.rel_offset
                        ),
                    ))
                }
            }
            expected =
                t.nbytes.and_then(|n| n.checked_next_multiple_of(align)).and_then(|n| t.rel_offset.checked_add(n));
        }
        if data_start > file_len && !self.out.tensors.is_empty() {
            findings.push(Finding::new(
                rules::TRUNCATED,
                format!("data section starts at {data_start}, past the end of the {file_len}-byte file"),
            ));
        }
        let padded_end = data_end.checked_next_multiple_of(align).unwrap_or(data_end);
        if file_len > padded_end && !self.out.tensors.is_empty() && end_known {
            findings.push(Finding::new(
                rules::TRAILING_BYTES,
                format!("{} bytes after the last tensor's data (ends at {data_end})", file_len - padded_end),
            ));
        }
        self.out.findings.extend(findings);
        self.finish();
        Outcome::Progress
    }
}

impl Decoder for HeaderDecoder {
    type Output = Header;

    fn step(&mut self) -> Step<Header> {
        loop {
            if self.state == State::Done {
                self.cap.finish(&mut self.out.findings);
                return Step::Done(std::mem::take(&mut self.out));
            }
            self.cap.trim(&mut self.out.findings);
            if self.window.end() < self.wait_until {
                return Step::Need(self.need(self.wait_until));
            }
            match self.advance() {
                Outcome::Progress => self.wait_until = 0,
                Outcome::Stop(Stop(f)) => self.stop(f),
                Outcome::Short(Short::Need(n)) => {
                    let until = self.pos().saturating_add(n);
                    if until > self.out.file_len {
                        let what = match self.state {
                            State::Preamble | State::Counts => "the fixed header",
                            State::KeyValue | State::ArrayItems => "a key/value",
                            _ => "a tensor info",
                        };
                        let f = Finding::new(
                            rules::TRUNCATED,
                            format!(
                                "file ends at {} inside {what} that starts at offset {} and needs {n} bytes",
                                self.out.file_len,
                                self.pos()
                            ),
                        );
                        self.stop(f);
                    } else {
                        self.wait_until = until;
                        return Step::Need(self.need(until));
                    }
                }
                Outcome::Short(too_long) => {
                    let at = self.pos();
                    if let Outcome::Stop(Stop(f)) = self.short_or_stop(too_long, at) {
                        self.stop(f);
                    }
                }
            }
        }
    }

    fn feed(&mut self, offset: u64, bytes: &[u8]) -> Result<(), FeedError> {
        self.window.push(offset, bytes)
    }
}

impl HeaderDecoder {
    /// The read that brings the window to `until`, plus read-ahead, within the file.
    fn need(&self, until: u64) -> ByteRange {
        let end = until.max(self.window.end().saturating_add(READ_AHEAD)).min(self.out.file_len);
        ByteRange::new(self.window.end(), end)
    }
}

/// A short read becomes a wait; a length over the limits becomes the finding that stops parsing.
fn short_or_stop(file_len: u64, s: Short, at: u64) -> Outcome {
    match s {
        Short::Need(n) => Short::Need(n).into(),
        Short::TooLong(what, len) => {
            let code = if len > file_len.saturating_sub(at) { rules::TRUNCATED } else { rules::STRING_TOO_LONG };
            Stop(Finding::new(
                code,
                format!(
                    "{what} at offset {at} claims {len} bytes; {} bytes are left in the file and the limit is {}",
                    file_len.saturating_sub(at),
                    if matches!(what, "key" | "tensor name") { MAX_KEY_BYTES } else { MAX_STRING_BYTES }
                ),
            ))
            .into()
        }
    }
}

/// Read one non-array value of type `vt`.
fn scalar(
    r: &mut Reader<'_>,
    vt: ValueType,
    at: u64,
    file_len: u64,
    findings: &mut Vec<Finding>,
) -> Result<Value, Outcome> {
    let v = match vt {
        ValueType::Bool => {
            let b = r.u8()?;
            if b > 1 {
                findings.push(Finding::new(
                    rules::BAD_BOOL,
                    format!("bool at offset {} holds {b}, not 0 or 1", at + r.pos() - 1),
                ));
            }
            Value::Bool(b != 0)
        }
        ValueType::String => {
            let left = file_len.saturating_sub(at + r.pos() + 8);
            let s = match r.string_bytes("string", MAX_STRING_BYTES.min(left)) {
                Ok(s) => s,
                Err(s) => return Err(short_or_stop(file_len, s, at)),
            };
            Value::String(text(s, at, "string", findings))
        }
        ValueType::Array => unreachable!("arrays are read by frames"),
        fixed => r.fixed_value(fixed)?.expect("a fixed-size type"),
    };
    Ok(v)
}

/// Decode UTF-8, reporting (and replacing) invalid sequences.
fn text(bytes: &[u8], at: u64, what: &str, findings: &mut Vec<Finding>) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_owned(),
        Err(_) => {
            findings.push(Finding::new(rules::INVALID_UTF8, format!("{what} at offset {at} is not valid UTF-8")));
            String::from_utf8_lossy(bytes).into_owned()
        }
    }
}
