//! `repo`: every checkpoint of a folder (with its subfolders) side by side, read from headers.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::hub;
use super::open::read_headers;
use super::text::escape;
use crate::engine::estimate::estimate;
use crate::engine::hub::{parse_repo, DEFAULT_ENDPOINT};
use crate::engine::model::FileInfo;
use crate::engine::repo_report::RepoReport;
use crate::engine::summary::summarize;
use crate::engine::variants::{fits, repository};
use crate::engine::view::{human_bytes, human_count};

/// Folders deeper than this under the source are not read.
const MAX_DEPTH: usize = 8;

/// Run `repo` on `source`, a folder or a Hub repository (`hf://OWNER/NAME[@REV]` or its web
/// address; the endpoint from `HF_ENDPOINT`): the report as JSON or a table. Files that could
/// not be read are listed among the other files and returned, each with why.
pub fn run(source: &Path, json: bool, out: &mut dyn Write) -> Result<Vec<(String, String)>, String> {
    let text = source.to_string_lossy();
    let endpoint = std::env::var("HF_ENDPOINT").ok().filter(|e| !e.is_empty());
    let endpoint = endpoint.as_deref().unwrap_or(DEFAULT_ENDPOINT);
    let mut carried = None;
    let mut unreadable = Vec::new();
    let (repo, revision, parsed) = match parse_repo(&text, endpoint) {
        Some(r) => {
            let read = hub::read(&r, endpoint)?;
            carried = Some((read.bytes, read.requests));
            unreadable = read.unreadable;
            (r.id(), Some(read.commit), read.parsed)
        }
        None if text.starts_with("hf://") || text.starts_with("http://") || text.starts_with("https://") => {
            return Err(format!(
                "{text}: not a model repository's address (hf://OWNER/NAME[@REV] or {endpoint}/OWNER/NAME)"
            ));
        }
        None => {
            let found = walk(source).map_err(|e| format!("{}: {e}", source.display()))?;
            let files: Vec<FileInfo> = found.iter().map(|(rel, _, size)| FileInfo::new(rel.clone(), *size)).collect();
            let paths: Vec<String> = found.iter().map(|(_, p, _)| p.to_string_lossy().into_owned()).collect();
            let (parsed, _) = read_headers(files, &paths).map_err(|e| e.to_string())?;
            (text.into_owned(), None, parsed)
        }
    };
    let (all, other) = repository(parsed);
    let report = RepoReport { repo: &repo, revision: revision.as_deref(), variants: &all, other_files: &other };
    super::buffered(out, |buf| {
        if json {
            buf.extend_from_slice(report.to_text().as_bytes());
            return Ok(());
        }
        table(&report, buf).map_err(|e| e.to_string())?;
        if let Some((bytes, requests)) = carried {
            let _ = writeln!(buf, "read {} over the network in {requests} requests", human_bytes(bytes));
        }
        Ok(())
    })?;
    Ok(unreadable)
}

/// The variants (smallest first), then the companions and the other files.
fn table(r: &RepoReport, out: &mut dyn Write) -> io::Result<()> {
    let mut models: Vec<_> = r.variants.iter().filter(|v| v.is_choice()).collect();
    models.sort_by_key(|v| v.bytes());
    writeln!(
        out,
        "{:<24} {:<12} {:>10} {:>9} {:>6} {:>14}  files",
        "variant", "format", "bytes", "params", "bpw", "memory"
    )?;
    for v in &models {
        let all = summarize(&v.cp).all;
        let e = estimate(&v.cp);
        let memory = match e.kv_cache.first() {
            Some(kv) => Some(format!("{} @{}", human_bytes(e.total(kv)), kv.context)),
            None => e.total_without_cache().map(human_bytes),
        };
        writeln!(
            out,
            "{:<24} {:<12} {:>10} {:>9} {:>6.2} {:>14}  {}",
            escape(&v.name),
            v.cp.format.name(),
            human_bytes(v.bytes()),
            human_count(all.params),
            all.bits_per_weight(),
            memory.unwrap_or_else(|| "-".into()),
            v.files.iter().map(|f| escape(&f.path).into_owned()).collect::<Vec<_>>().join(", ")
        )?;
    }
    for c in r.variants.iter().filter(|v| !v.is_choice()) {
        let files: Vec<String> = c.files.iter().map(|f| escape(&f.path).into_owned()).collect();
        writeln!(out, "{} {}: {}", c.role(), escape(&c.name), files.join(", "))?;
        // What it fits, and for the rest the first difference.
        for m in &models {
            match fits(m, c) {
                Some(Ok(())) => writeln!(out, "  fits {}", escape(&m.name))?,
                Some(Err(why)) => writeln!(out, "  does not fit {}: {}", escape(&m.name), escape(&why))?,
                None => {}
            }
        }
    }
    if !r.other_files.is_empty() {
        let other: Vec<String> = r.other_files.iter().map(|f| escape(f).into_owned()).collect();
        writeln!(out, "other files: {}", other.join(", "))?;
    }
    Ok(())
}

/// Every file under `root` (hidden folders such as `.git` and `.cache` left out), sorted by
/// path: its path relative to `root` (with `/`), its path, its size.
fn walk(root: &Path) -> io::Result<Vec<(String, PathBuf, u64)>> {
    if !root.is_dir() {
        return Err(io::Error::other("not a folder"));
    }
    let mut out = Vec::new();
    let mut todo = vec![(root.to_path_buf(), String::new(), 0usize)];
    while let Some((dir, rel, depth)) = todo.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            let rel = format!("{rel}{name}");
            let meta = std::fs::metadata(&path)?;
            if meta.is_dir() {
                if !name.starts_with('.') && depth < MAX_DEPTH {
                    todo.push((path, format!("{rel}/"), depth + 1));
                }
            } else if meta.is_file() {
                out.push((rel, path, meta.len()));
            }
        }
    }
    out.sort();
    Ok(out)
}
