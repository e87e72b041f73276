//! Reading a metadata array's items on demand, from the byte span its header recorded.

use super::reader::{Reader, Short};
use super::value::{Array, Value, ValueType};
use crate::range::ByteRange;
use crate::step::{Decoder, FeedError, Step, Window};

/// Bytes read ahead while walking string items.
const READ_AHEAD: u64 = 256 << 10;

/// Reads items `first..first + count` of an array of scalars or strings, or (with
/// [`ArrayItemsDecoder::matching`]) searches every item for a text and keeps the first matches.
/// String items are variable-length, so reaching item `first` walks the ones before it
/// (reading, not keeping). Memory holds a read chunk and the items kept, whatever the array's length.
pub struct ArrayItemsDecoder {
    item_type: ValueType,
    big_endian: bool,
    span: ByteRange,
    /// Index of the item at the window's base.
    index: u64,
    first: u64,
    end: u64,
    window: Window,
    items: Vec<Value>,
    /// With a search: the text sought, the most matches kept, their indices, and how many matched.
    query: Option<String>,
    limit: usize,
    found_at: Vec<u64>,
    matched: u64,
}

/// What an items read or search found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ArrayPage {
    /// Items kept, with their indices in the array.
    pub items: Vec<(u64, Value)>,
    /// Items that matched the search (all items read, without one).
    pub matched: u64,
}

impl ArrayItemsDecoder {
    /// Items `first..first + count` of `array` (clamped to its length), from a file whose
    /// numbers are big-endian when `big_endian`. Nested arrays yield no items.
    pub fn new(array: &Array, big_endian: bool, first: u64, count: u64) -> Self {
        let end = first.saturating_add(count).min(array.len);
        let first = first.min(end);
        let mut d = ArrayItemsDecoder {
            item_type: array.item_type,
            big_endian,
            span: array.span,
            index: 0,
            first,
            end,
            window: Window::new(array.span.start),
            items: Vec::new(),
            query: None,
            limit: usize::MAX,
            found_at: Vec::new(),
            matched: 0,
        };
        if let Some(size) = array.item_type.fixed_bytes() {
            let start = array.span.start.saturating_add(first.saturating_mul(size));
            d.window = Window::new(start.min(array.span.end));
            d.index = first;
        }
        if array.item_type == ValueType::Array {
            d.end = d.first;
        }
        d
    }

    /// Search all items (from `first`) for `query` (a case-insensitive substring, or a glob with
    /// `*` and `?`, as in the tensor search), keeping the first `limit` matches.
    pub fn matching(mut self, query: &str, limit: usize) -> Self {
        self.query = Some(query.to_owned());
        self.limit = limit;
        self
    }

    fn read_item(&self, r: &mut Reader<'_>) -> Result<Value, Short> {
        if let Some(v) = r.fixed_value(self.item_type)? {
            return Ok(v);
        }
        Ok(match self.item_type {
            ValueType::String => {
                let left = self.span.end.saturating_sub(self.window.base() + r.pos() + 8);
                let keep = self.index >= self.first;
                let s = r.string_bytes("string", left)?;
                Value::String(if keep { String::from_utf8_lossy(s).into_owned() } else { String::new() })
            }
            _ => unreachable!("nested arrays yield no items; fixed-size items are read above"),
        })
    }
}

impl Decoder for ArrayItemsDecoder {
    type Output = ArrayPage;

    fn step(&mut self) -> Step<ArrayPage> {
        loop {
            if self.index >= self.end {
                let items = std::mem::take(&mut self.items);
                let at: Vec<u64> = if self.query.is_some() {
                    std::mem::take(&mut self.found_at)
                } else {
                    (self.first..self.first + items.len() as u64).collect()
                };
                let matched = if self.query.is_some() { self.matched } else { items.len() as u64 };
                return Step::Done(ArrayPage { items: at.into_iter().zip(items).collect(), matched });
            }
            let mut r = Reader::new(self.window.bytes(), self.big_endian);
            let mut used = 0;
            let mut short = None;
            while self.index < self.end {
                match self.read_item(&mut r) {
                    Ok(v) => {
                        if self.index >= self.first {
                            match &self.query {
                                None => self.items.push(v),
                                Some(q) => {
                                    let text = match &v {
                                        Value::String(s) => std::borrow::Cow::Borrowed(s.as_str()),
                                        other => std::borrow::Cow::Owned(other.to_string()),
                                    };
                                    if crate::text::matches(q, &text) {
                                        self.matched += 1;
                                        if self.items.len() < self.limit {
                                            self.items.push(v);
                                            self.found_at.push(self.index);
                                        }
                                    }
                                }
                            }
                        }
                        self.index += 1;
                        used = r.pos();
                    }
                    Err(s) => {
                        short = Some(s);
                        break;
                    }
                }
            }
            let base = self.window.base();
            self.window.consume(base + used);
            match short {
                None => {}
                Some(Short::Need(n)) => {
                    let until = self.window.base().saturating_add(n.saturating_sub(used));
                    if until > self.span.end {
                        self.end = self.index; // the span ends mid-item: stop with what was read
                        continue;
                    }
                    let ahead = self.window.end().saturating_add(READ_AHEAD);
                    return Step::Need(ByteRange::new(self.window.end(), until.max(ahead).min(self.span.end)));
                }
                Some(Short::TooLong(..)) => self.end = self.index,
            }
        }
    }

    fn feed(&mut self, offset: u64, bytes: &[u8]) -> Result<(), FeedError> {
        self.window.push(offset, bytes)
    }
}
