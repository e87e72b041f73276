//! Opening local paths (files or model folders) as one checkpoint.

use std::io;
use std::path::PathBuf;

use super::source::run_job;
use crate::engine::inspections::assemble;
use crate::engine::job::headers_job;
use crate::engine::model::{Checkpoint, FileInfo};

/// The files named by `paths`: files as given, folders by their direct children, sorted.
pub fn expand(paths: &[PathBuf]) -> io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut children: Vec<PathBuf> =
                std::fs::read_dir(p)?.map(|e| e.map(|e| e.path())).collect::<io::Result<_>>()?;
            children.retain(|c| c.is_file());
            children.sort();
            out.extend(children);
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

/// Read the headers of every file and assemble them into one checkpoint.
/// Returns the checkpoint and the header bytes read.
pub fn open_paths(paths: &[PathBuf]) -> io::Result<(Checkpoint, u64)> {
    let files: Vec<FileInfo> = expand(paths)?
        .iter()
        .map(|p| Ok(FileInfo::new(p.to_string_lossy(), std::fs::metadata(p)?.len())))
        .collect::<io::Result<_>>()?;
    let names: Vec<String> = files.iter().map(|f| f.path.clone()).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let lens = files.iter().map(|f| f.size).collect();
    let mut read = 0u64;
    let parsed = run_job(headers_job(files), &names, lens, |j| {
        read = j.bytes_fed();
        Ok(())
    })
    .map_err(io::Error::other)?;
    Ok((assemble(parsed), read))
}
