//! Opening local paths (files or model folders) as one checkpoint.

use std::io;
use std::path::{Path, PathBuf};

use super::source::FileSource;
use crate::engine::model::{Checkpoint, FileInfo};
use crate::engine::open::FileDecoder;
use crate::engine::shards::assemble;
use crate::engine::step::{drive, CHUNK_BYTES};

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
/// Returns the checkpoint and the bytes read.
pub fn open_paths(paths: &[PathBuf]) -> io::Result<(Checkpoint, u64)> {
    let mut parsed = Vec::new();
    let mut total_read = 0;
    for path in expand(paths)? {
        let (info, p, read) = open_file(&path)?;
        total_read += read;
        parsed.push((info, p));
    }
    Ok((assemble(parsed), total_read))
}

fn open_file(path: &Path) -> io::Result<(FileInfo, crate::engine::open::Parsed, u64)> {
    let mut src = FileSource::open(path)?;
    let name = path.to_string_lossy().into_owned();
    let decoder = FileDecoder::new(&name, src.len());
    let parsed = drive(decoder, CHUNK_BYTES, |r| src.read(r))?;
    Ok((FileInfo { path: name, size: src.len() }, parsed, src.bytes_read))
}
