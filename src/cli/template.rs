//! `template`: every chat template, with line numbers, its risky constructs, and its rendering
//! of a sample conversation (or of one given).

use std::io::Write;

use serde::Serialize;

use super::args::Args;
use super::source::run_on;
use super::text::escape;
use crate::engine::model::Checkpoint;
use crate::engine::template::{scan, templates, Hit};
use crate::engine::template_render::{render_conversation, render_sample};
use crate::engine::tokens::{self, join, page_job, specials};
use crate::engine::viewer::severity_name;

#[derive(Serialize)]
struct HitJson<'a> {
    code: &'a str,
    line: usize,
    construct: &'a str,
}

#[derive(Serialize)]
struct TemplateJson<'a> {
    name: &'a str,
    source: &'a str,
    text: &'a str,
    findings: Vec<HitJson<'a>>,
    rendered: Option<&'a str>,
    error: Option<&'a str>,
}

/// Run `template` on the opened checkpoint; an error when it holds no template (or none named so).
pub fn run(args: &Args, cp: &Checkpoint, out: &mut dyn Write) -> Result<(), String> {
    super::buffered(out, |buf| build(args, cp, buf))
}

fn build(args: &Args, cp: &Checkpoint, out: &mut Vec<u8>) -> Result<(), String> {
    let all: Vec<_> = templates(cp).into_iter().filter(|t| args.name.as_deref().is_none_or(|n| n == t.name)).collect();
    if all.is_empty() {
        return Err(match &args.name {
            Some(n) => format!("no chat template named '{}'", escape(n)),
            None => "no chat template here (tokenizer.chat_template, chat_template.jinja, chat_template.json, tokenizer_config.json)".into(),
        });
    }
    let (bos, eos) = (special_text(cp, "bos")?, special_text(cp, "eos")?);
    let conversation = args.conversation.as_deref().map(read_conversation).transpose()?;
    let render = |text: &str| match &conversation {
        Some(c) => render_conversation(text, c, &bos, &eos),
        None => render_sample(text, &bos, &eos),
    };
    let done: Vec<(Vec<Hit>, Result<String, String>)> = all.iter().map(|t| (scan(&t.text), render(&t.text))).collect();
    let io = |e: std::io::Error| e.to_string();
    if args.json {
        let list: Vec<TemplateJson> = all
            .iter()
            .zip(&done)
            .map(|(t, (hits, r))| TemplateJson {
                name: &t.name,
                source: &t.source,
                text: &t.text,
                findings: hits
                    .iter()
                    .map(|h| HitJson { code: h.rule.code, line: h.line, construct: &h.construct })
                    .collect(),
                rendered: r.as_ref().ok().map(String::as_str),
                error: r.as_ref().err().map(String::as_str),
            })
            .collect();
        let mut text = serde_json::to_string_pretty(&list).map_err(|e| e.to_string())?;
        text.push('\n');
        return out.write_all(text.as_bytes()).map_err(io);
    }
    for (t, (hits, r)) in all.iter().zip(&done) {
        let lines: Vec<&str> = t.text.split('\n').collect();
        writeln!(out, "chat template '{}' ({}), {} lines", escape(&t.name), escape(&t.source), lines.len())
            .map_err(io)?;
        let width = lines.len().to_string().len();
        for (i, l) in lines.iter().enumerate() {
            writeln!(out, "  {:>width$} | {}", i + 1, escape(l)).map_err(io)?;
        }
        for h in hits {
            let severity = severity_name(h.rule.severity);
            writeln!(out, "  {severity:<7}  {}  line {}: {}", h.rule.code, h.line, escape(&h.construct)).map_err(io)?;
        }
        match r {
            Ok(text) => {
                writeln!(out, "rendered for the sample conversation:").map_err(io)?;
                for l in text.split('\n') {
                    writeln!(out, "  | {}", escape(l)).map_err(io)?;
                }
            }
            Err(e) => writeln!(out, "render error: {}", escape(e)).map_err(io)?,
        }
        writeln!(out).map_err(io)?;
    }
    Ok(())
}

/// Largest conversation file read.
const MAX_CONVERSATION_BYTES: u64 = 16 << 20;

/// The conversation in the JSON file at `path`: an object or a list, read within a bound.
fn read_conversation(path: &std::path::Path) -> Result<serde_json::Value, String> {
    let shown = path.display();
    let len = std::fs::metadata(path).map_err(|e| format!("{shown}: {e}"))?.len();
    if len > MAX_CONVERSATION_BYTES {
        return Err(format!("{shown}: {len} bytes, over the {MAX_CONVERSATION_BYTES}-byte limit for a conversation"));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("{shown}: {e}"))?;
    match serde_json::from_str(&text) {
        Ok(v @ (serde_json::Value::Object(_) | serde_json::Value::Array(_))) => Ok(v),
        Ok(_) => {
            Err(format!("{shown}: a conversation is a JSON object of the template's variables, or a list of messages"))
        }
        Err(e) => Err(format!("{shown}: not JSON: {e}")),
    }
}

/// The text of special token `role` (`bos`, `eos`): from the GGUF vocabulary, else from
/// `tokenizer_config.json` (a string or `{"content": …}`); empty when neither names it.
fn special_text(cp: &Checkpoint, role: &str) -> Result<String, String> {
    if let Some(t) = tokens::tokenizer(cp) {
        if let Some(s) = specials(cp, t.len()).into_iter().find(|s| s.role == role && s.in_vocab) {
            return Ok(join(&t, &run_on(page_job(&t, s.id, 1), cp)?).pop().map(|tok| tok.text).unwrap_or_default());
        }
    }
    let v = cp.config("tokenizer_config.json").and_then(|c| c.get(format!("{role}_token")));
    Ok(match v {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(o) => o.get("content").and_then(|c| c.as_str()).unwrap_or_default().to_owned(),
        None => String::new(),
    })
}
