//! Opening dropped or picked files, or URLs, as one checkpoint: the browser twin of `cli::open`.

use super::blob::BlobSource;
use super::driver::{drive, Cancel, DriveError, DriveOpts};
use super::entries::Input;
use super::http::{HttpSource, Meter};
use super::source::Source;
use crate::engine::model::{Checkpoint, FileInfo};
use crate::engine::open::{FileDecoder, Parsed};
use crate::engine::remote::{expand_url, join_url, url_file_name};
use crate::engine::shards::assemble;

/// How far opening has come.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct OpenProgress {
    pub files_done: usize,
    pub files: usize,
    pub bytes_read: u64,
}

/// Read the headers of every input and assemble one checkpoint. Inputs are sorted by path
/// first, as the CLI sorts a folder's children.
pub async fn open_inputs(
    inputs: &mut [Input],
    cancel: &Cancel,
    progress: impl FnMut(OpenProgress),
) -> Result<Checkpoint, DriveError> {
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
) -> Result<Checkpoint, DriveError> {
    let mut parsed = Vec::with_capacity(files.len());
    let mut p = OpenProgress { files: files.len(), ..OpenProgress::default() };
    progress(p);
    for (path, src) in files {
        let (out, read) = parse(path, src, cancel, p, &mut progress).await?;
        p.files_done += 1;
        p.bytes_read += read;
        progress(p);
        parsed.push((FileInfo { path: path.clone(), size: src.len() }, out));
    }
    Ok(assemble(parsed))
}

async fn parse(
    path: &str,
    src: &Source,
    cancel: &Cancel,
    p: OpenProgress,
    // `dyn`: one copy of the header drive for every caller.
    progress: &mut dyn FnMut(OpenProgress),
) -> Result<(Parsed, u64), DriveError> {
    let before = src.bytes_read();
    let out = drive(FileDecoder::new(path, src.len()), src, DriveOpts::default(), cancel, |_, fed| {
        progress(OpenProgress { bytes_read: p.bytes_read + fed, ..p });
    })
    .await?;
    Ok((out, src.bytes_read() - before))
}

/// Open remote files by URL (`hf://` shorthands expanded). A `model.safetensors.index.json`
/// brings in every shard it names, resolved relative to the index's URL. Only header ranges
/// are fetched; `meter` counts the bytes transferred. Files are named by the last part of
/// their URL (shards: as the index names them) and sorted by name, as local files are.
pub async fn open_urls(
    urls: &[String],
    meter: &Meter,
    cancel: &Cancel,
    mut progress: impl FnMut(OpenProgress),
) -> Result<(Checkpoint, Vec<(String, Source)>), DriveError> {
    let mut queue: Vec<(String, String)> = Vec::new();
    for u in urls {
        let u = expand_url(u.trim());
        if !u.is_empty() && !queue.iter().any(|(_, q)| *q == u) {
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
            return Err(DriveError::Cancelled);
        }
        let (name, url) = queue[next].clone();
        next += 1;
        let src: Source = HttpSource::open(&url, meter).await.map_err(DriveError::Read)?.into();
        let (out, _) = parse(&name, &src, cancel, p, &mut progress).await?;
        if let Parsed::Index(ix) = &out {
            for (_, shard) in &ix.weight_map {
                let u = join_url(&url, shard);
                if !queue.iter().any(|(_, q)| *q == u) {
                    queue.push((shard.clone(), u));
                }
            }
        }
        p.files = queue.len();
        p.files_done += 1;
        p.bytes_read = meter.bytes();
        progress(p);
        parsed.push((FileInfo { path: name.clone(), size: src.len() }, out));
        sources.push((name, src));
    }
    let mut order: Vec<usize> = (0..parsed.len()).collect();
    order.sort_by(|&a, &b| parsed[a].0.path.cmp(&parsed[b].0.path));
    let mut slots: Vec<Option<_>> = parsed.into_iter().map(Some).collect();
    let parsed = order.iter().filter_map(|&i| slots[i].take()).collect();
    let mut src_slots: Vec<Option<_>> = sources.into_iter().map(Some).collect();
    let sources = order.iter().filter_map(|&i| src_slots[i].take()).collect();
    Ok((assemble(parsed), sources))
}
