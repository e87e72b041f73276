//! Opening local paths (files or model folders) as one checkpoint.

use std::io;
use std::path::PathBuf;

use super::source::run_job;
use crate::engine::config::{is_template_file, TEMPLATE_DIR};
use crate::engine::inspections::assemble;
use crate::engine::job::headers_job;
use crate::engine::model::{Checkpoint, FileInfo};
use crate::engine::open::Parsed;
use crate::engine::text::base_name;
use crate::engine::variants::{group, separate_models, variants};

/// The files named by `paths`: files as given, folders by their direct children (and the named
/// chat templates of their `additional_chat_templates` folder), sorted.
pub fn expand(paths: &[PathBuf]) -> io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut children = files_in(p)?;
            let templates = p.join(TEMPLATE_DIR);
            if templates.is_dir() {
                children.extend(files_in(&templates)?.into_iter().filter(|f| is_template_file(&f.to_string_lossy())));
            }
            children.sort();
            out.extend(children);
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

/// The files directly in folder `dir`.
fn files_in(dir: &std::path::Path) -> io::Result<Vec<PathBuf>> {
    let mut children: Vec<PathBuf> = std::fs::read_dir(dir)?.map(|e| e.map(|e| e.path())).collect::<io::Result<_>>()?;
    children.retain(|c| c.is_file());
    Ok(children)
}

/// Read the headers of every file and assemble them into one checkpoint.
/// Returns the checkpoint and the header bytes read. Files that hold several independent
/// checkpoints (quant variants of a model, two unrelated models) are refused, naming them.
pub fn open_paths(paths: &[PathBuf]) -> io::Result<(Checkpoint, u64)> {
    let files: Vec<FileInfo> = expand(paths)?
        .iter()
        .map(|p| Ok(FileInfo::new(p.to_string_lossy(), std::fs::metadata(p)?.len())))
        .collect::<io::Result<_>>()?;
    let paths: Vec<String> = files.iter().map(|f| f.path.clone()).collect();
    let (parsed, read) = read_headers(files, &paths)?;
    one_checkpoint(&parsed)?;
    Ok((assemble(parsed), read))
}

/// The headers of `files`, read from `paths` (aligned with them); with the bytes read.
pub fn read_headers(files: Vec<FileInfo>, paths: &[String]) -> io::Result<(Vec<(FileInfo, Parsed)>, u64)> {
    let names: Vec<&str> = paths.iter().map(String::as_str).collect();
    let lens = files.iter().map(|f| f.size).collect();
    let mut read = 0u64;
    let parsed = run_job(headers_job(files), &names, lens, |j| {
        read = j.bytes_fed();
        Ok(())
    })
    .map_err(io::Error::other)?;
    Ok((parsed, read))
}

/// An error naming the models among `parsed` when there is more than one.
fn one_checkpoint(parsed: &[(FileInfo, Parsed)]) -> io::Result<()> {
    let grouping = group(parsed);
    if grouping.groups.len() < 2 {
        return Ok(());
    }
    let all = variants(parsed.to_vec(), &grouping);
    let models: Vec<String> = separate_models(&all)
        .into_iter()
        .map(|i| &all[i])
        .map(|v| {
            let files: Vec<&str> = v.cp.files.iter().map(|f| base_name(&f.path)).collect();
            format!("{} ({})", v.name, files.join(", "))
        })
        .collect();
    if models.len() < 2 {
        return Ok(());
    }
    Err(io::Error::other(format!(
        "these files hold {} separate models, not one: {}; open one of them, or see them side by side with \
         `tensorscope repo FOLDER`",
        models.len(),
        models.join("; ")
    )))
}
