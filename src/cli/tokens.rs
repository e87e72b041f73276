//! `tokens`: the vocabulary a GGUF file carries, by id, by text, or whole.

use std::io::Write;

use super::args::Args;
use super::source::run_on;
use super::text::escape;
use crate::engine::model::Checkpoint;
use crate::engine::tokens::{self, details_job, find_job, join, join_found, page_job, specials, visible, Token};

/// Tokens read per page when listing the whole vocabulary.
const PAGE: u64 = 4096;

/// Run `tokens` on the opened checkpoint.
pub fn run(args: &Args, cp: &Checkpoint, out: &mut dyn Write) -> Result<(), String> {
    super::buffered(out, |buf| build(args, cp, buf))
}

fn build(args: &Args, cp: &Checkpoint, out: &mut Vec<u8>) -> Result<(), String> {
    let t = tokens::tokenizer(cp).ok_or("no tokenizer here: the file has no tokenizer.ggml.tokens list")?;
    let io = |e: std::io::Error| e.to_string();
    let list: Vec<Token> = if let Some(q) = &args.find {
        let found = run_on(find_job(&t, q, args.limit.unwrap_or(usize::MAX)), cp)?;
        let found = found.into_iter().next().unwrap_or_default();
        let ids: Vec<u64> = found.items.iter().map(|(id, _)| *id).collect();
        let details = run_on(details_job(&t, &ids), cp)?;
        join_found(&t, &found, &details)
    } else if !args.ids.is_empty() {
        let mut list = Vec::new();
        for &id in &args.ids {
            if id >= t.len() {
                return Err(format!("token id {id} is past the vocabulary of {} tokens", t.len()));
            }
            list.extend(join(&t, &run_on(page_job(&t, id, 1), cp)?));
        }
        list
    } else {
        if !args.json {
            header(cp, &t, out)?;
        }
        let mut list = Vec::new();
        let mut first = 0;
        while first < t.len() {
            list.extend(join(&t, &run_on(page_job(&t, first, PAGE), cp)?));
            first += PAGE;
        }
        list
    };
    if args.json {
        let mut text = serde_json::to_string_pretty(&list).map_err(|e| e.to_string())?;
        text.push('\n');
        return out.write_all(text.as_bytes()).map_err(io);
    }
    for tok in &list {
        writeln!(
            out,
            "{:>8}  {:<12} {:>10}  {}",
            tok.id,
            tok.kind,
            format!("{:.4}", tok.score),
            escape(&visible(&tok.text))
        )
        .map_err(io)?;
    }
    if args.find.is_some() {
        writeln!(out, "{} tokens match", list.len()).map_err(io)?;
    }
    Ok(())
}

/// Model, pre-tokenizer, counts and the special tokens resolved to their text.
fn header(cp: &Checkpoint, t: &tokens::Tokenizer, out: &mut Vec<u8>) -> Result<(), String> {
    let io = |e: std::io::Error| e.to_string();
    writeln!(
        out,
        "tokenizer {} (pre-tokenizer {}), {} tokens, {} merges",
        escape(t.model.unwrap_or("?")),
        escape(t.pre.unwrap_or("none")),
        t.len(),
        t.merges.map_or(0, |m| m.len)
    )
    .map_err(io)?;
    for s in specials(cp, t.len()) {
        let text = if s.in_vocab {
            join(t, &run_on(page_job(t, s.id, 1), cp)?).first().map(|tok| visible(&tok.text)).unwrap_or_default()
        } else {
            "(not in the vocabulary)".to_owned()
        };
        writeln!(out, "  {:<10} {:>8}  {}", s.role, s.id, escape(&text)).map_err(io)?;
    }
    Ok(())
}
