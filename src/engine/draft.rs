//! Whether a small GGUF model can draft for a larger one in speculative decoding, read from the
//! two headers as llama.cpp checks a pair before it drafts (`common_speculative_are_compatible`):
//! the same tokenizer model (and here the same pre-tokenizer), the same `add_bos`/`add_eos`
//! flags and special-token ids, vocabularies at most 128 tokens apart, and equal token texts —
//! llama.cpp compares every text from id 5 on; the headers keep the first and the last 64 of each
//! vocabulary, so those are compared, at both ends.

use crate::gguf::Value;
use crate::model::Checkpoint;
use crate::tokens::{tokenizer, SPECIAL_ROLES};

/// Vocabulary sizes a draft and its target may differ by (llama.cpp's
/// `SPEC_VOCAB_MAX_SIZE_DIFFERENCE`: a family's small models often pad their vocabulary less).
pub const MAX_VOCAB_DIFFERENCE: u64 = 128;
/// The first token id whose text is compared (llama.cpp's `SPEC_VOCAB_CHECK_START_TOKEN_ID`).
const FIRST_COMPARED: u64 = 5;

/// `Ok` when `draft` can draft for `target`, else the first difference, in words.
pub fn fit(target: &Checkpoint, draft: &Checkpoint) -> Result<(), String> {
    let (Some(t), Some(d)) = (tokenizer(target), tokenizer(draft)) else {
        return Err("no tokenizer in both to compare".into());
    };
    let same = |what: &str, a: Option<&str>, b: Option<&str>| match a == b {
        true => Ok(()),
        false => Err(format!("tokenizer {what} {} vs {}", shown(a), shown(b))),
    };
    same("model", t.model, d.model)?;
    same("pre-tokenizer", t.pre, d.pre)?;
    let (nt, nd) = (t.len(), d.len());
    if nt.abs_diff(nd) > MAX_VOCAB_DIFFERENCE {
        return Err(format!("vocabularies of {nt} and {nd} tokens (more than {MAX_VOCAB_DIFFERENCE} apart)"));
    }
    for flag in ["add_bos_token", "add_eos_token"] {
        let key = format!("tokenizer.ggml.{flag}");
        let (a, b) = (bool_of(target, &key), bool_of(draft, &key));
        if a != b {
            let text = |v: Option<bool>| v.map_or("none".to_owned(), |b| b.to_string());
            return Err(format!("{key} {} vs {}", text(a), text(b)));
        }
    }
    for role in SPECIAL_ROLES {
        let key = format!("tokenizer.ggml.{role}_token_id");
        let id = |cp: &Checkpoint| cp.gguf(&key).and_then(Value::as_u64);
        if let (Some(a), Some(b)) = (id(target), id(draft)) {
            if a != b {
                return Err(format!("{role} token {a} vs {b}"));
            }
        }
    }
    // Texts at the start (both lists' first items) and at the end (the ids both tails hold).
    let differ = |id: u64, a: &Value, b: &Value| {
        let quoted = |v: &Value| v.as_str().map_or("none".to_owned(), |s| format!("{s:?}"));
        (a.as_str() != b.as_str()).then(|| format!("token {id} is {} vs {}", quoted(a), quoted(b)))
    };
    let heads = t.tokens.items.iter().zip(&d.tokens.items);
    for (id, (a, b)) in (0u64..).zip(heads).skip(FIRST_COMPARED as usize) {
        if let Some(why) = differ(id, a, b) {
            return Err(why);
        }
    }
    // A tail's first item is its list's item `len − tail.len()`.
    let first = |len: u64, tail: &[Value]| len.saturating_sub(tail.len() as u64);
    let (t_first, d_first) = (first(nt, &t.tokens.tail), first(nd, &d.tokens.tail));
    for (id, a) in (t_first..).zip(&t.tokens.tail) {
        let b = id.checked_sub(d_first).and_then(|j| d.tokens.tail.get(usize::try_from(j).ok()?));
        if let Some(why) = b.and_then(|b| differ(id, a, b)) {
            return Err(why);
        }
    }
    Ok(())
}

/// A value, or "none".
fn shown(v: Option<&str>) -> &str {
    v.unwrap_or("none")
}

/// A GGUF bool or integer metadata value.
fn bool_of(cp: &Checkpoint, key: &str) -> Option<bool> {
    match cp.gguf(key)? {
        Value::Bool(b) => Some(*b),
        v => v.as_u64().map(|n| n != 0),
    }
}
