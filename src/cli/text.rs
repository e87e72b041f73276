//! Human-readable tables for the terminal.

use std::io::{self, Write};

use crate::engine::findings::Severity;
use crate::engine::gguf::Value;
use crate::engine::model::{Checkpoint, MetaValue};
use crate::engine::naming::{file_type_name, parse_name};
use crate::engine::summary::summarize;

/// Longest metadata value shown on one line.
const VALUE_CHARS: usize = 100;

/// The `inspect` view: summary, metadata, tensors, findings.
pub fn inspect(cp: &Checkpoint, out: &mut dyn Write) -> io::Result<()> {
    summary(cp, out)?;
    if !cp.metadata.is_empty() {
        writeln!(out, "\nmetadata ({} keys)", cp.metadata.len())?;
        let width = cp.metadata.iter().map(|(k, _)| k.chars().count()).max().unwrap_or(0).min(48);
        for (k, v) in &cp.metadata {
            writeln!(out, "  {k:<width$}  {}", clip(&meta_text(v)))?;
        }
    }
    writeln!(out, "\ntensors ({})", cp.tensors.len())?;
    let width = cp.tensors.iter().map(|t| t.name.chars().count()).max().unwrap_or(0).min(64);
    for t in &cp.tensors {
        let shape = t.shape.iter().map(u64::to_string).collect::<Vec<_>>().join(" x ");
        let file = if cp.files.len() > 1 { format!("  file {}", t.file) } else { String::new() };
        writeln!(
            out,
            "  {:<width$}  {:<8} {:<22} {:>14} B  @ {}{file}",
            t.name,
            t.dtype.name(),
            format!("[{shape}]"),
            t.nbytes,
            t.offset
        )?;
    }
    findings(cp, out)
}

/// The `check` view: files (with digests), scan counts and findings.
pub fn check(cp: &Checkpoint, report: &serde_json::Value, out: &mut dyn Write) -> io::Result<()> {
    for (i, f) in cp.files.iter().enumerate() {
        match report["files"][i]["sha256"].as_str() {
            Some(h) => writeln!(out, "{h}  {}  ({} bytes)", f.path, f.size)?,
            None => writeln!(out, "{}  {} bytes", f.path, f.size)?,
        }
    }
    if let Some(scan) = report["scan"].as_array() {
        let bad = scan.iter().filter(|s| s["nan"].as_u64().unwrap_or(0) + s["inf"].as_u64().unwrap_or(0) > 0).count();
        let values: u64 = scan.iter().filter_map(|s| s["values"].as_u64()).sum();
        writeln!(out, "scanned {} tensors ({values} values): {bad} hold NaN or infinite values", scan.len())?;
    }
    findings(cp, out)
}

fn summary(cp: &Checkpoint, out: &mut dyn Write) -> io::Result<()> {
    let s = summarize(cp);
    writeln!(out, "format   {}", cp.format.name())?;
    for (i, f) in cp.files.iter().enumerate() {
        writeln!(out, "file {i}   {}  ({} bytes)", f.path, f.size)?;
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
                p.base_name,
                p.size_label.as_deref().unwrap_or("-"),
                p.encoding.as_deref().unwrap_or("-")
            )?;
        }
    }
    writeln!(out, "\nby dtype")?;
    for (name, t) in &s.by_dtype {
        let share = if s.all.bytes == 0 { 0.0 } else { 100.0 * t.bytes as f64 / s.all.bytes as f64 };
        writeln!(
            out,
            "  {name:<12} {:>7} tensors {:>16} params {:>16} bytes {share:>6.2}%  {:.3} bpw",
            t.tensors,
            t.params,
            t.bytes,
            t.bits_per_weight()
        )?;
    }
    Ok(())
}

fn findings(cp: &Checkpoint, out: &mut dyn Write) -> io::Result<()> {
    let errors = cp.findings.iter().filter(|f| f.severity == Severity::Error).count();
    writeln!(out, "\nfindings ({}, {errors} errors)", cp.findings.len())?;
    for f in &cp.findings {
        let sev = match f.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        };
        let at = match (f.file, &f.tensor) {
            (Some(i), Some(t)) => format!(" [file {i}, tensor {t}]"),
            (Some(i), None) => format!(" [file {i}]"),
            (None, Some(t)) => format!(" [tensor {t}]"),
            (None, None) => String::new(),
        };
        writeln!(out, "  {sev:<7} {}{at}: {}", f.code, f.message)?;
    }
    if cp.findings.is_empty() {
        writeln!(out, "  none: the headers keep every rule checked")?;
    }
    Ok(())
}

fn meta_text(v: &MetaValue) -> String {
    match v {
        MetaValue::Text(s) => format!("{s:?}"),
        MetaValue::Gguf(v) => value_text(v),
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
pub fn hist(r: &serde_json::Value, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "tensor   {}  ({}, {} elements)",
        r["tensor"].as_str().unwrap_or(""),
        r["dtype"].as_str().unwrap_or(""),
        r["elements"]
    )?;
    writeln!(out, "values   {}   nan {}   inf {}   zero {}", r["count"], r["nan"], r["inf"], r["zero"])?;
    writeln!(out, "min {}   max {}   mean {}   std {}", r["min"], r["max"], r["mean"], r["std"])?;
    let bins: Vec<u64> =
        r["bins"].as_array().map(|b| b.iter().filter_map(|v| v.as_u64()).collect()).unwrap_or_default();
    let (lo, hi) = (r["lo"].as_f64().unwrap_or(0.0), r["hi"].as_f64().unwrap_or(0.0));
    let top = bins.iter().copied().max().unwrap_or(0).max(1);
    let width = (hi - lo) / bins.len().max(1) as f64;
    for (i, &c) in bins.iter().enumerate() {
        let bar = "#".repeat(((c as f64 / top as f64) * 50.0).round() as usize);
        writeln!(out, "  {:>13.6e} {c:>12} {bar}", lo + width * i as f64)?;
    }
    if let Some(s) = r.get("scales") {
        writeln!(out, "\nblock scales")?;
        hist(s, out)?;
    }
    Ok(())
}
