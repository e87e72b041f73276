//! Human-readable tables for the terminal.

use std::borrow::Cow;
use std::io::{self, Write};

use crate::engine::adapter::{fmt_num, Adapter, Alpha};
use crate::engine::estimate::CacheType;
use crate::engine::findings::{Finding, Severity};
use crate::engine::gguf::Value;
use crate::engine::hist_report::HistReport;
use crate::engine::job::{CheckOutcome, ScanOutcome};
use crate::engine::model::{Checkpoint, MetaValue};
use crate::engine::naming::{file_type_name, parse_name};
use crate::engine::report::Report;
use crate::engine::summary::summarize;
use crate::engine::view::human_bytes;

/// Text from a file made safe for a terminal: control characters (C0, DEL, C1) and the hidden
/// characters that reorder or hide text ([`crate::engine::hidden_text::is_hidden`]: bidirectional
/// controls, zero-width and tag characters) are written as `\u{…}` escapes, so a tensor name or
/// metadata value cannot move the cursor, recolour the screen or change what is shown.
pub fn escape(s: &str) -> Cow<'_, str> {
    let bad = |c: char| c.is_control() || crate::engine::hidden_text::is_hidden(c);
    if !s.chars().any(bad) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(s.chars().map(|c| if bad(c) { c.escape_unicode().to_string() } else { c.to_string() }).collect())
}

/// Longest metadata value shown on one line.
const VALUE_CHARS: usize = 100;

/// The `inspect` view: summary, metadata, tensors, findings.
pub fn inspect(cp: &Checkpoint, contexts: &[u64], adapter: Option<&Adapter>, out: &mut dyn Write) -> io::Result<()> {
    summary(cp, contexts, adapter, out)?;
    if let Some(a) = adapter.filter(|a| !a.modules.is_empty()) {
        adapter_modules(a, out)?;
    }
    if !cp.metadata.is_empty() {
        writeln!(out, "\nmetadata ({} keys)", cp.metadata.len())?;
        let width = cp.metadata.iter().map(|(k, _)| k.chars().count()).max().unwrap_or(0).min(48);
        for (k, v) in &cp.metadata {
            writeln!(out, "  {:<width$}  {}", escape(k), clip(&meta_text(v)))?;
        }
    }
    writeln!(out, "\ntensors ({})", cp.tensors.len())?;
    let width = cp.tensors.iter().map(|t| t.name.chars().count()).max().unwrap_or(0).min(64);
    for t in &cp.tensors {
        let shape = t.shape.iter().map(u64::to_string).collect::<Vec<_>>().join(" x ");
        let file = if cp.files.len() > 1 { format!("  file {}", t.file) } else { String::new() };
        let at = match (&t.data, t.offset) {
            (Ok(_), Some(o)) => o.to_string(),
            (_, Some(o)) => format!("{o} (not readable)"),
            (_, None) => "unknown".to_owned(),
        };
        writeln!(
            out,
            "  {:<width$}  {:<8} {:<22} {:>14} B  @ {at}{file}",
            escape(&t.name),
            escape(&t.dtype.name()),
            format!("[{shape}]"),
            t.nbytes,
        )?;
    }
    findings(cp.findings.iter(), out)
}

/// The adapter's modules: rank, alpha (and where it is stated), scale, widths.
fn adapter_modules(a: &Adapter, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "\nadapted modules ({}), targets: {}", a.modules.len(), escape(&a.target_modules.join(", ")))?;
    let width = a.modules.iter().map(|m| m.name.chars().count()).max().unwrap_or(0).min(64);
    for m in &a.modules {
        let num = |v: Option<u64>| v.map_or("?".to_owned(), |v| v.to_string());
        let (alpha, from) = match &m.alpha {
            Alpha::Stated(v, from) => (fmt_num(*v), escape(from).into_owned()),
            Alpha::Default(v) => (fmt_num(*v), "default".to_owned()),
            Alpha::InTensor(_) => ("?".to_owned(), "unread".to_owned()),
        };
        let scale = match (m.alpha.value(), m.rank) {
            (Some(al), Some(r)) if r > 0 => format!("{:.4}", al / r as f64),
            _ => "?".to_owned(),
        };
        writeln!(
            out,
            "  {:<width$}  rank {:>4}  alpha {:>6} ({from})  scale {scale}  {} -> {}",
            escape(&m.name),
            num(m.rank),
            alpha,
            num(m.in_features),
            num(m.out_features),
        )?;
    }
    Ok(())
}

/// The `check` view: files (with digests), scan counts and findings.
pub fn check(report: &Report<'_>, outcome: &CheckOutcome, out: &mut dyn Write) -> io::Result<()> {
    let cp = report.checkpoint();
    for (i, f) in cp.files.iter().enumerate() {
        match outcome.digests.as_ref().and_then(|d| d.get(i)) {
            Some(h) => writeln!(out, "{h}  {}  ({} bytes)", escape(&f.path), f.size)?,
            None => writeln!(out, "{}  {} bytes", escape(&f.path), f.size)?,
        }
    }
    if let Some(scan) = &outcome.scan {
        let counted: Vec<_> = scan
            .iter()
            .filter_map(|o| match o {
                ScanOutcome::Counted(c) => Some(c),
                _ => None,
            })
            .collect();
        let bad = counted.iter().filter(|c| c.nan + c.inf > 0).count();
        let values: u64 = counted.iter().map(|c| c.values).sum();
        writeln!(out, "scanned {} tensors ({values} values): {bad} hold NaN or infinite values", counted.len())?;
    }
    findings(report.findings(), out)
}

fn summary(cp: &Checkpoint, contexts: &[u64], adapter: Option<&Adapter>, out: &mut dyn Write) -> io::Result<()> {
    let s = summarize(cp);
    let kind = crate::engine::kind::kind(cp);
    let detail = match (kind, adapter) {
        (crate::engine::kind::Kind::Adapter, Some(a)) => a.describe(),
        _ => crate::engine::describe::describe(cp, kind),
    };
    match detail.is_empty() {
        true => writeln!(out, "kind     {}", kind.name())?,
        false => writeln!(out, "kind     {}: {}", kind.name(), escape(&detail))?,
    }
    writeln!(out, "format   {}", cp.format.name())?;
    for (i, f) in cp.files.iter().enumerate() {
        writeln!(out, "file {i}   {}  ({} bytes)", escape(&f.path), f.size)?;
    }
    writeln!(
        out,
        "tensors  {}   params {}   bytes {}   bits/weight {:.3}",
        s.all.tensors,
        s.all.params,
        s.all.bytes,
        s.all.bits_per_weight()
    )?;
    if let Some(MetaValue::Gguf(v)) = cp.meta("general.file_type") {
        let id = v.as_u64();
        let name = id.and_then(file_type_name).unwrap_or("unknown");
        writeln!(out, "file_type {} ({name})", id.map_or("?".into(), |i| i.to_string()))?;
    }
    if let (crate::engine::model::Format::Gguf, Some(f)) = (cp.format, cp.files.first()) {
        let p = parse_name(&f.path);
        if p.encoding.is_some() || p.size_label.is_some() {
            writeln!(
                out,
                "name     base '{}'  size {}  encoding {}",
                escape(&p.base_name),
                escape(p.size_label.as_deref().unwrap_or("-")),
                escape(p.encoding.as_deref().unwrap_or("-"))
            )?;
        }
    }
    estimate(cp, contexts, out)?;
    let mut groups = vec![("by dtype", &s.by_dtype)];
    if s.quant_mix != s.by_dtype {
        groups.push(("quant mix (scales, zeros and indexes with their weights)", &s.quant_mix));
    }
    for (title, list) in groups {
        group(title, list, s.all.bytes, out)?;
    }
    if s.overhead_bytes > 0 {
        writeln!(out, "  overhead (scales, zero points, indexes): {} bytes", s.overhead_bytes)?;
    }
    Ok(())
}

fn group(
    title: &str,
    list: &[(String, crate::engine::summary::Totals)],
    all: u64,
    out: &mut dyn Write,
) -> io::Result<()> {
    writeln!(out, "\n{title}")?;
    for (name, t) in list {
        let share = if all == 0 { 0.0 } else { 100.0 * t.bytes as f64 / all as f64 };
        writeln!(
            out,
            "  {:<12} {:>7} tensors {:>16} params {:>16} bytes {share:>6.2}%  {:.3} bpw",
            escape(name),
            t.tensors,
            t.params,
            t.bytes,
            t.bits_per_weight()
        )?;
    }
    Ok(())
}

/// The memory to run it: weights, the KV cache per context and cache type, recurrent state.
fn estimate(cp: &Checkpoint, contexts: &[u64], out: &mut dyn Write) -> io::Result<()> {
    let e = crate::engine::estimate::estimate_at(cp, contexts);
    let mut about = vec![];
    if let Some(a) = &e.architecture {
        about.push(escape(a).into_owned());
    }
    if let Some(s) = e.source {
        about.push(format!("from {}", s.name()));
    }
    let mut facts = vec![];
    if e.layers > 0 {
        facts.push(format!("{} layers, {} with a KV cache", e.layers, e.kv_layers));
    }
    if let Some(c) = e.context {
        facts.push(format!("trained context {c}"));
    }
    let head = [about.join(", "), facts.join(", ")].into_iter().filter(|s| !s.is_empty()).collect::<Vec<_>>();
    let head = head.join("; ");
    let head = if head.is_empty() { String::new() } else { format!("{head}; ") };
    writeln!(out, "\nmemory to run ({head}one sequence, compute buffers not counted)")?;
    writeln!(out, "  weights {}", human_bytes(e.weights_bytes))?;
    if e.projector_bytes > 0 {
        writeln!(out, "  projector {}", human_bytes(e.projector_bytes))?;
    }
    let mut contexts: Vec<u64> = e.kv_cache.iter().map(|k| k.context).collect();
    contexts.sort_unstable();
    contexts.dedup();
    if !contexts.is_empty() {
        let mut line = format!("  {:<9}", "context");
        for c in CacheType::ALL {
            line.push_str(&format!(" {:>12} {:>12}", format!("{} cache", c.name()), "total"));
        }
        writeln!(out, "{line}")?;
    }
    for c in contexts {
        let mut line = format!("  {c:<9}");
        for t in CacheType::ALL {
            match e.kv_cache.iter().find(|k| k.context == c && k.cache == t) {
                Some(k) => line.push_str(&format!(" {:>12} {:>12}", human_bytes(k.bytes), human_bytes(e.total(k)))),
                None => line.push_str(&format!(" {:>12} {:>12}", "-", "-")),
            }
        }
        writeln!(out, "{line}")?;
    }
    if e.state_bytes > 0 {
        writeln!(out, "  recurrent state {}", human_bytes(e.state_bytes))?;
    }
    for u in &e.unknown {
        writeln!(out, "  not estimated: {}", escape(u))?;
    }
    Ok(())
}

fn findings<'a>(all: impl Iterator<Item = &'a Finding> + Clone, out: &mut dyn Write) -> io::Result<()> {
    let errors = all.clone().filter(|f| f.severity == Severity::Error).count();
    let n = all.clone().count();
    writeln!(out, "\nfindings ({n}, {errors} errors)")?;
    for f in all {
        let sev = match f.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        };
        let at = match (f.file, &f.tensor) {
            (Some(i), Some(t)) => format!(" [file {i}, tensor {}]", escape(t)),
            (Some(i), None) => format!(" [file {i}]"),
            (None, Some(t)) => format!(" [tensor {}]", escape(t)),
            (None, None) => String::new(),
        };
        writeln!(out, "  {sev:<7} {}{at}: {}", f.code, escape(&f.message))?;
    }
    if n == 0 {
        writeln!(out, "  none: the headers keep every rule checked")?;
    }
    Ok(())
}

fn meta_text(v: &MetaValue) -> String {
    match v {
        MetaValue::Text(s) => escape(&format!("{s:?}")).into_owned(),
        MetaValue::Gguf(v) => escape(&value_text(v)).into_owned(),
    }
}

fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        Value::Array(a) => {
            let items: Vec<String> = a.items.iter().take(8).map(value_text).collect();
            let more = if a.len > items.len() as u64 { ", …" } else { "" };
            format!("[{}; {}] [{}{more}]", a.item_type.name(), a.len, items.join(", "))
        }
        other => format!("{} {other}", other.value_type().name()),
    }
}

fn clip(s: &str) -> String {
    match s.char_indices().nth(VALUE_CHARS) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

/// The `hist` view: statistics and a bar per bin.
pub fn hist(r: &HistReport, out: &mut dyn Write) -> io::Result<()> {
    let num = |v: Option<crate::engine::report::Float>| v.map_or("-".to_owned(), |f| f.0.to_string());
    let of = r.values.map(|v| format!("; histogram of each value's {v}")).unwrap_or_default();
    writeln!(out, "tensor   {}  ({}, {} elements{of})", escape(&r.tensor), escape(&r.dtype), r.elements)?;
    writeln!(out, "values   {}   nan {}   inf {}   zero {}", r.count, r.nan, r.inf, r.zero)?;
    writeln!(out, "min {}   max {}   mean {}   std {}", num(r.min), num(r.max), num(r.mean), num(r.std))?;
    let (lo, hi) = (r.lo.0, r.hi.0);
    let top = r.bins.iter().copied().max().unwrap_or(0).max(1);
    let width = (hi - lo) / r.bins.len().max(1) as f64;
    for (i, &c) in r.bins.iter().enumerate() {
        let bar = "#".repeat(((c as f64 / top as f64) * 50.0).round() as usize);
        writeln!(out, "  {:>13.6e} {c:>12} {bar}", lo + width * i as f64)?;
    }
    if let Some(s) = &r.scales {
        writeln!(out, "\nblock scales")?;
        hist(s, out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_from_files_are_escaped() {
        assert_eq!(escape("blk.0.attn_q.weight"), "blk.0.attn_q.weight");
        assert_eq!(escape("a\x1b[2Jb"), "a\\u{1b}[2Jb");
        assert_eq!(escape("x\ny\r\u{7f}\u{9b}"), "x\\u{a}y\\u{d}\\u{7f}\\u{9b}");
        assert_eq!(escape("evil\u{202e}txt.exe"), "evil\\u{202e}txt.exe");
        assert_eq!(escape("a\u{200b}b\u{e0041}\u{200d}"), "a\\u{200b}b\\u{e0041}\u{200d}");
        assert_eq!(escape("ünïcode ok"), "ünïcode ok");
    }
}
