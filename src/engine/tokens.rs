//! The tokenizer a GGUF file carries (`tokenizer.ggml.*`): tokens by id with their text, type
//! and score, the special tokens, the merges. The lists are read from the file a page at a time
//! ([`page_job`]) or searched ([`find_job`]); a 256k vocabulary is never held whole.

use serde::Serialize;

use super::gguf::{Array, ArrayItemsDecoder, ArrayPage, Value, ValueType};
use super::job::{Job, JobStep, Need};
use super::json_float::Float;
use super::model::{Checkpoint, MetaValue};
use super::step::{Decoder, FeedError, Step};

/// llama.cpp's token types (`llama_token_type`), by number.
pub const TOKEN_TYPES: [&str; 7] = ["undefined", "normal", "unknown", "control", "user_defined", "unused", "byte"];

/// The special-token keys (`tokenizer.ggml.<role>_token_id`), as llama.cpp reads them.
pub const SPECIAL_ROLES: [&str; 15] = [
    "bos",
    "eos",
    "eot",
    "eom",
    "unknown",
    "seperator",
    "padding",
    "mask",
    "cls",
    "fim_pre",
    "fim_suf",
    "fim_mid",
    "fim_pad",
    "fim_rep",
    "fim_sep",
];

/// A checkpoint's tokenizer: which model and pre-tokenizer, and where its lists lie.
#[derive(Clone, Debug)]
pub struct Tokenizer<'a> {
    /// `tokenizer.ggml.model` (`llama`, `gpt2`, `bert`, …).
    pub model: Option<&'a str>,
    /// `tokenizer.ggml.pre` (`llama-bpe`, `qwen2`, …).
    pub pre: Option<&'a str>,
    /// The file holding the lists, and whether its numbers are big-endian.
    pub file: usize,
    pub big_endian: bool,
    pub tokens: &'a Array,
    pub types: Option<&'a Array>,
    pub scores: Option<&'a Array>,
    pub merges: Option<&'a Array>,
}

impl Tokenizer<'_> {
    /// Number of tokens.
    pub fn len(&self) -> u64 {
        self.tokens.len
    }

    /// Whether the vocabulary is empty.
    pub fn is_empty(&self) -> bool {
        self.tokens.len == 0
    }
}

/// The tokenizer of `cp`, when it holds a token list (`tokenizer.ggml.tokens`, an array of strings).
pub fn tokenizer<'a>(cp: &'a Checkpoint) -> Option<Tokenizer<'a>> {
    let entry = |key: &str| {
        cp.metadata.iter().zip(&cp.meta_file).find(|((k, _), _)| k == key).and_then(|((_, v), &f)| match v {
            MetaValue::Gguf(v) => Some((v, f)),
            MetaValue::Text(_) => None,
        })
    };
    let array = |key: &str, item: ValueType, file: usize| match entry(key) {
        Some((Value::Array(a), f)) if a.item_type == item && f == file => Some(&**a),
        _ => None,
    };
    let (tokens, file) = match entry("tokenizer.ggml.tokens")? {
        (Value::Array(a), f) if a.item_type == ValueType::String => (&**a, f),
        _ => return None,
    };
    let n = tokens.len;
    let same_len = |a: Option<&'a Array>| a.filter(|a| a.len == n);
    Some(Tokenizer {
        model: entry("tokenizer.ggml.model").and_then(|(v, _)| v.as_str()),
        pre: entry("tokenizer.ggml.pre").and_then(|(v, _)| v.as_str()),
        file,
        big_endian: cp.big_endian.get(file).copied().unwrap_or(false),
        tokens,
        types: same_len(array("tokenizer.ggml.token_type", ValueType::I32, file)),
        scores: same_len(array("tokenizer.ggml.scores", ValueType::F32, file)),
        merges: array("tokenizer.ggml.merges", ValueType::String, file),
    })
}

/// A special token: its role (`bos`, …) and id, and whether the id lies in the vocabulary.
#[derive(Clone, Debug, PartialEq)]
pub struct Special {
    pub role: &'static str,
    pub id: u64,
    pub in_vocab: bool,
}

/// The special tokens `cp` names, in llama.cpp's order.
pub fn specials(cp: &Checkpoint, vocab_len: u64) -> Vec<Special> {
    SPECIAL_ROLES
        .iter()
        .filter_map(|&role| {
            let id = cp.meta(&format!("tokenizer.ggml.{role}_token_id")).and_then(|v| match v {
                MetaValue::Gguf(v) => v.as_u64(),
                MetaValue::Text(_) => None,
            })?;
            Some(Special { role, id, in_vocab: id < vocab_len })
        })
        .collect()
}

/// One token as `tensorscope tokens --json` prints it.
#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    pub id: u64,
    pub text: String,
    /// One of [`TOKEN_TYPES`], or `type N` for a number outside them.
    pub kind: String,
    /// 0 when the file has no scores (as llama.cpp takes it).
    pub score: f64,
}

impl Serialize for Token {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(4))?;
        m.serialize_entry("id", &self.id)?;
        m.serialize_entry("text", &self.text)?;
        m.serialize_entry("type", &self.kind)?;
        m.serialize_entry("score", &Float(self.score))?;
        m.end()
    }
}

/// The name of token type number `n`.
pub fn type_name(n: i64) -> String {
    usize::try_from(n).ok().and_then(|i| TOKEN_TYPES.get(i)).map_or_else(|| format!("type {n}"), |s| (*s).to_owned())
}

/// A token's text with what cannot be seen made visible: control characters, spaces that are
/// not U+0020, zero-width and direction marks as `\n`, `\t`, `\u{200b}`; everything else as it is.
pub fn visible(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() || is_invisible(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

fn is_invisible(c: char) -> bool {
    matches!(c as u32, 0xA0 | 0xAD | 0x180E | 0x2000..=0x200F | 0x2028..=0x202F | 0x205F..=0x206F | 0x3000 | 0xFEFF)
}

/// Reads pages of several arrays of one file, one after another.
pub struct PagesJob {
    file: usize,
    parts: Vec<ArrayItemsDecoder>,
    done: Vec<ArrayPage>,
}

impl Job for PagesJob {
    type Output = Vec<ArrayPage>;

    fn step(&mut self) -> JobStep<Vec<ArrayPage>> {
        while let Some(d) = self.parts.first_mut() {
            match d.step() {
                Step::Need(range) => return JobStep::Need(Need { file: self.file, range }),
                Step::Done(page) => {
                    self.done.push(page);
                    self.parts.remove(0);
                }
            }
        }
        JobStep::Done(std::mem::take(&mut self.done))
    }

    fn feed(&mut self, file: usize, offset: u64, bytes: &[u8]) -> Result<(), FeedError> {
        match self.parts.first_mut() {
            Some(d) if file == self.file => d.feed(offset, bytes),
            _ => Err(FeedError { expected: offset, got: offset }),
        }
    }
}

/// The job reading tokens `first..first + count`: texts, then types and scores where present;
/// [`join`] makes the tokens of its pages.
pub fn page_job(t: &Tokenizer, first: u64, count: u64) -> PagesJob {
    let mut parts = vec![ArrayItemsDecoder::new(t.tokens, t.big_endian, first, count)];
    parts.extend(t.types.iter().map(|a| ArrayItemsDecoder::new(a, t.big_endian, first, count)));
    parts.extend(t.scores.iter().map(|a| ArrayItemsDecoder::new(a, t.big_endian, first, count)));
    PagesJob { file: t.file, parts, done: Vec::new() }
}

/// The job searching every token's text for `query` (as the tensor search matches: a
/// case-insensitive substring, or a glob), keeping the first `limit`; its one page holds the ids.
pub fn find_job(t: &Tokenizer, query: &str, limit: usize) -> PagesJob {
    let d = ArrayItemsDecoder::new(t.tokens, t.big_endian, 0, t.tokens.len).matching(query, limit);
    PagesJob { file: t.file, parts: vec![d], done: Vec::new() }
}

/// The job reading the types and scores of tokens `ids` (each a one-item page), for the texts a
/// search found; [`join_found`] puts them together.
pub fn details_job(t: &Tokenizer, ids: &[u64]) -> PagesJob {
    let mut parts = Vec::new();
    for &id in ids {
        parts.extend(t.types.iter().map(|a| ArrayItemsDecoder::new(a, t.big_endian, id, 1)));
        parts.extend(t.scores.iter().map(|a| ArrayItemsDecoder::new(a, t.big_endian, id, 1)));
    }
    PagesJob { file: t.file, parts, done: Vec::new() }
}

/// The tokens of a [`page_job`]'s pages.
pub fn join(t: &Tokenizer, pages: &[ArrayPage]) -> Vec<Token> {
    let Some((texts, rest)) = pages.split_first() else { return vec![] };
    let (types, scores) = split_details(t, rest);
    texts
        .items
        .iter()
        .enumerate()
        .map(|(i, (id, v))| token(*id, v, types.and_then(|p| p.items.get(i)), scores.and_then(|p| p.items.get(i))))
        .collect()
}

/// The tokens a [`find_job`] found, with the [`details_job`] pages read for their ids.
pub fn join_found(t: &Tokenizer, found: &ArrayPage, details: &[ArrayPage]) -> Vec<Token> {
    let per = usize::from(t.types.is_some()) + usize::from(t.scores.is_some());
    found
        .items
        .iter()
        .enumerate()
        .map(|(i, (id, v))| {
            let mine = details.get(i * per..(i + 1) * per).unwrap_or(&[]);
            let (types, scores) = split_details(t, mine);
            token(*id, v, types.and_then(|p| p.items.first()), scores.and_then(|p| p.items.first()))
        })
        .collect()
}

fn split_details<'p>(t: &Tokenizer, pages: &'p [ArrayPage]) -> (Option<&'p ArrayPage>, Option<&'p ArrayPage>) {
    let types = t.types.and(pages.first());
    let scores = t.scores.and(pages.get(usize::from(t.types.is_some())));
    (types, scores)
}

fn token(id: u64, text: &Value, ty: Option<&(u64, Value)>, score: Option<&(u64, Value)>) -> Token {
    let kind = match ty.map(|(_, v)| v) {
        Some(Value::I32(n)) => type_name((*n).into()),
        _ => type_name(1),
    };
    let score = match score.map(|(_, v)| v) {
        Some(Value::F32(s)) => f64::from(*s),
        _ => 0.0,
    };
    Token { id, text: text.as_str().unwrap_or_default().to_owned(), kind, score }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invisible_characters_are_shown() {
        assert_eq!(visible("a\nb\tc"), "a\\nb\\tc");
        assert_eq!(visible("x\u{200b}y\u{a0}"), "x\\u{200b}y\\u{a0}");
        assert_eq!(visible("\u{0}"), "\\u{0}");
        assert_eq!(visible("Ġhello ▁wörld"), "Ġhello ▁wörld");
        assert_eq!(visible("\\n"), "\\\\n", "a literal backslash-n differs from a newline");
    }

    #[test]
    fn type_names() {
        assert_eq!(type_name(3), "control");
        assert_eq!(type_name(6), "byte");
        assert_eq!(type_name(-1), "type -1");
        assert_eq!(type_name(9), "type 9");
    }
}
