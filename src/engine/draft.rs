//! Whether a small GGUF model can draft for a larger one in speculative decoding, read from the
//! two headers as llama.cpp checks a pair before it drafts (`common_speculative_are_compatible`):
//! the same tokenizer model (and here the same pre-tokenizer), the same `add_bos`/`add_eos`
//! flags and special-token ids, vocabularies at most 128 tokens apart, and equal token texts —
//! llama.cpp compares every text from id 5 on; the headers keep the first and the last 64 of each
//! vocabulary, so those are compared, at both ends.

use crate::gguf::Value;
use crate::model::{Checkpoint, MetaValue};
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
            return Err(format!("{key} {} vs {}", shown(a.map(bool_text)), shown(b.map(bool_text))));
        }
    }
    for role in SPECIAL_ROLES {
        let key = format!("tokenizer.ggml.{role}_token_id");
        if let (Some(a), Some(b)) = (u64_of(target, &key), u64_of(draft, &key)) {
            if a != b {
                return Err(format!("{role} token {a} vs {b}"));
            }
        }
    }
    // Texts at the start (both lists' first items) and at the end (the ids both tails hold).
    let text = |v: &Value| v.as_str().map(str::to_owned);
    let head = |items: &[Value]| items.iter().map(text).collect::<Vec<_>>();
    for (id, (a, b)) in head(&t.tokens.items).into_iter().zip(head(&d.tokens.items)).enumerate() {
        if id as u64 >= FIRST_COMPARED && a != b {
            return Err(token_difference(id as u64, a, b));
        }
    }
    let (dt, dd) = (tail(&t.tokens.tail, nt), tail(&d.tokens.tail, nd));
    for (id, a) in &dt {
        if let Some((_, b)) = dd.iter().find(|(j, _)| j == id) {
            if a != b {
                return Err(token_difference(*id, a.clone(), b.clone()));
            }
        }
    }
    Ok(())
}

/// The texts of a vocabulary's tail `items` of a list of `len`, each with its id.
fn tail(items: &[Value], len: u64) -> Vec<(u64, Option<String>)> {
    let first = len.saturating_sub(items.len() as u64);
    items.iter().enumerate().map(|(i, v)| (first + i as u64, v.as_str().map(str::to_owned))).collect()
}

/// Token `id`'s two texts, as a difference.
fn token_difference(id: u64, a: Option<String>, b: Option<String>) -> String {
    format!(
        "token {id} is {} vs {}",
        shown(a.as_deref().map(|s| format!("{s:?}")).as_deref()),
        shown(b.as_deref().map(|s| format!("{s:?}")).as_deref())
    )
}

/// A value, or "none".
fn shown(v: Option<&str>) -> &str {
    v.unwrap_or("none")
}

fn bool_text(b: bool) -> &'static str {
    if b {
        "true"
    } else {
        "false"
    }
}

/// A GGUF bool or integer metadata value.
fn bool_of(cp: &Checkpoint, key: &str) -> Option<bool> {
    match cp.meta(key)? {
        MetaValue::Gguf(Value::Bool(b)) => Some(*b),
        MetaValue::Gguf(v) => v.as_u64().map(|n| n != 0),
        MetaValue::Text(_) => None,
    }
}

/// A GGUF integer metadata value.
fn u64_of(cp: &Checkpoint, key: &str) -> Option<u64> {
    match cp.meta(key)? {
        MetaValue::Gguf(v) => v.as_u64(),
        MetaValue::Text(_) => None,
    }
}
