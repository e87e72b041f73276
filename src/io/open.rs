//! Opening dropped or picked files, or URLs, as one checkpoint, through the engine's open job.
//! The sources returned are aligned with the checkpoint's files, by index.

use std::collections::HashSet;

use super::driver::{run, Cancel};
use super::entries::Input;
use super::http::{HttpSource, Meter};
use super::source::Source;
use super::BlobSource;
use crate::engine::job::{open_job, OnFile, RunError};
use crate::engine::model::{Checkpoint, FileInfo};
use crate::engine::open::{FileDecoder, Parsed};
use crate::engine::remote::{check_url, join_url, url_file_name};
use crate::engine::shards::assemble;

/// How far opening has come.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct OpenProgress {
    pub files_done: usize,
    pub files: usize,
    pub bytes_read: u64,
}

/// `sources` in the order of `cp`'s files.
fn aligned(cp: &Checkpoint, sources: &[Source]) -> Vec<Source> {
    cp.files.iter().map(|f| sources[f.given].clone()).collect()
}

/// Read the headers of every input and assemble one checkpoint. Inputs are sorted by path
/// first, as the CLI sorts a folder's children.
pub async fn open_inputs(
    inputs: &mut [Input],
    cancel: &Cancel,
    progress: impl FnMut(OpenProgress),
) -> Result<(Checkpoint, Vec<Source>), RunError> {
    inputs.sort_by(|a, b| a.path.cmp(&b.path));
    let files: Vec<(String, Source)> =
        inputs.iter().map(|i| (i.path.clone(), BlobSource::new(i.blob.clone()).into())).collect();
    open_sources(&files, cancel, progress).await
}

/// Read the headers of `files` (path, source), in the order given, into one checkpoint.
pub async fn open_sources(
    files: &[(String, Source)],
    cancel: &Cancel,
    mut progress: impl FnMut(OpenProgress),
) -> Result<(Checkpoint, Vec<Source>), RunError> {
    let infos = files.iter().map(|(p, s)| FileInfo::new(p.clone(), s.len())).collect();
    let sources: Vec<Source> = files.iter().map(|(_, s)| s.clone()).collect();
    let total = files.len();
    progress(OpenProgress { files: total, ..OpenProgress::default() });
    let cp = run(open_job(infos), &sources, cancel, |j| {
        let (done, files) = j.files_done();
        progress(OpenProgress { files_done: done, files, bytes_read: j.bytes_fed() });
    })
    .await?;
    progress(OpenProgress { files_done: total, files: total, bytes_read: 0 });
    let sources = aligned(&cp, &sources);
    Ok((cp, sources))
}

/// Open remote files by URL (`hf://` shorthands expanded; only `http:`/`https:` accepted). A
/// `model.safetensors.index.json` brings in every shard it names, resolved relative to the
/// index's URL (shard URLs are checked the same way). Only header ranges are fetched; `meter`
/// counts the bytes transferred. Files are named by the last part of their URL (shards: as the
/// index names them).
pub async fn open_urls(
    urls: &[String],
    meter: &Meter,
    cancel: &Cancel,
    mut progress: impl FnMut(OpenProgress),
) -> Result<(Checkpoint, Vec<Source>), RunError> {
    let mut queue: Vec<(String, String)> = Vec::new();
    let mut seen = HashSet::new();
    for u in urls {
        let u = check_url(u.trim()).map_err(|e| RunError::Read(e.to_string()))?;
        if seen.insert(u.clone()) {
            queue.push((url_file_name(&u).to_owned(), u));
        }
    }
    let mut parsed = Vec::new();
    let mut sources = Vec::new();
    let mut p = OpenProgress { files: queue.len(), ..OpenProgress::default() };
    progress(p);
    let mut next = 0;
    while next < queue.len() {
        if cancel.is_cancelled() {
            return Err(RunError::Cancelled);
        }
        let (name, url) = queue[next].clone();
        next += 1;
        let src: Source = HttpSource::open(&url, meter).await.map_err(RunError::Read)?.into();
        let decoder = OnFile { file: 0, decoder: FileDecoder::new(&name, src.len()) };
        let out = run(decoder, std::slice::from_ref(&src), cancel, |_| {}).await?;
        if let Parsed::Index(ix) = &out {
            for shard in ix.shards() {
                let u = check_url(&join_url(&url, shard)).map_err(|e| RunError::Read(format!("{name}: {e}")))?;
                if seen.insert(u.clone()) {
                    queue.push((shard.to_owned(), u));
                }
            }
        }
        p.files = queue.len();
        p.files_done += 1;
        p.bytes_read = meter.bytes();
        progress(p);
        parsed.push((FileInfo::new(name, src.len()), out));
        sources.push(src);
    }
    let cp = assemble(parsed);
    let sources = aligned(&cp, &sources);
    Ok((cp, sources))
}
