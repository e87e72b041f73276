//! Opening dropped or picked files, or URLs, as one checkpoint, through the engine's open job.
//! The sources returned are aligned with the checkpoint's files, by index.

use std::collections::HashSet;

use super::driver::{run, Cancel};
use super::entries::Input;
use super::http::{HttpSource, Meter, PROBE_BYTES};
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
    let bytes_read = sources.iter().map(Source::bytes_read).sum();
    progress(OpenProgress { files_done: total, files: total, bytes_read });
    let sources = aligned(&cp, &sources);
    Ok((cp, sources))
}

/// Remote files read at once: browsers allow about six connections per host.
pub const PARALLEL_REQUESTS: usize = 6;

/// One remote file's header, read: its name, URL, source and what it holds.
type Opened = (String, String, Source, Parsed);

/// Largest first request of a shard whose header size is predicted from another shard's.
const MAX_PROBE_BYTES: u64 = 8 << 20;

/// Probe and parse each of `files` (name, URL), [`PARALLEL_REQUESTS`] at a time, in order; the
/// first request of each asks for `probe` bytes.
async fn open_remote(
    files: Vec<(String, String)>,
    probe: u64,
    meter: &Meter,
    cancel: &Cancel,
) -> Result<Vec<Opened>, RunError> {
    let files = std::rc::Rc::new(files);
    let (meter, cancel) = (meter.clone(), cancel.clone());
    let task_files = files.clone();
    let results = super::pool::run_all(files.len(), PARALLEL_REQUESTS, move |i| {
        let (files, meter, cancel) = (task_files.clone(), meter.clone(), cancel.clone());
        async move {
            if cancel.is_cancelled() {
                return Err(RunError::Cancelled);
            }
            let (name, url) = files[i].clone();
            let src: Source = HttpSource::open_with(&url, &meter, probe).await.map_err(RunError::Read)?.into();
            let decoder = OnFile { file: 0, decoder: FileDecoder::new(&name, src.len()) };
            let parsed = run(decoder, std::slice::from_ref(&src), &cancel, |_| {}).await?;
            Ok((name, url, src, parsed))
        }
    })
    .await;
    results.into_iter().collect()
}

/// Open remote files by URL (`hf://` shorthands expanded; only `http:`/`https:` accepted). A
/// `model.safetensors.index.json` brings in every shard it names, resolved relative to the
/// index's URL (shard URLs are checked the same way). Headers are read [`PARALLEL_REQUESTS`] at
/// a time and only header ranges are fetched; `meter` counts the bytes transferred. Files are
/// named by the last part of their URL (shards: as the index names them).
pub async fn open_urls(
    urls: &[String],
    meter: &Meter,
    cancel: &Cancel,
    mut progress: impl FnMut(OpenProgress),
) -> Result<(Checkpoint, Vec<Source>), RunError> {
    let mut given: Vec<(String, String)> = Vec::new();
    let mut seen = HashSet::new();
    for u in urls {
        let u = check_url(u.trim()).map_err(|e| RunError::Read(e.to_string()))?;
        if seen.insert(u.clone()) {
            given.push((url_file_name(&u).to_owned(), u));
        }
    }
    progress(OpenProgress { files: given.len(), ..OpenProgress::default() });
    let mut opened = open_remote(given, PROBE_BYTES, meter, cancel).await?;
    // Shards named by the indexes given, each once, and the config.json beside each index.
    let mut shards = Vec::new();
    let mut configs = Vec::new();
    for (name, url, _, parsed) in &opened {
        if let Parsed::Index(ix) = parsed {
            if let Ok(u) = check_url(&join_url(url, "config.json")) {
                if seen.insert(u.clone()) {
                    configs.push(("config.json".to_owned(), u));
                }
            }
            for shard in ix.shards() {
                let u = check_url(&join_url(url, shard)).map_err(|e| RunError::Read(format!("{name}: {e}")))?;
                if seen.insert(u.clone()) {
                    shards.push((shard.to_owned(), u));
                }
            }
        }
    }
    let total = opened.len() + shards.len();
    progress(OpenProgress { files_done: opened.len(), files: total, bytes_read: meter.bytes() });
    // The first shard alone, to learn the size of a header; then the rest with first requests
    // that size and a quarter more, so each header comes in one round trip.
    let rest = if shards.is_empty() { Vec::new() } else { shards.split_off(1) };
    let first = open_remote(shards, PROBE_BYTES, meter, cancel).await?;
    let probe = match first.first().map(|f| &f.3) {
        Some(Parsed::Safetensors(h)) => (h.data_start().saturating_add(h.header_len / 4)).next_multiple_of(4096),
        _ => PROBE_BYTES,
    };
    opened.extend(first);
    opened.extend(open_remote(rest, probe.clamp(PROBE_BYTES, MAX_PROBE_BYTES), meter, cancel).await?);
    // A config is optional: one that cannot be fetched (most often a 404) is simply absent.
    for config in configs {
        match open_remote(vec![config], PROBE_BYTES, meter, cancel).await {
            Ok(c) => opened.extend(c),
            Err(RunError::Cancelled) => return Err(RunError::Cancelled),
            Err(_) => {}
        }
    }
    progress(OpenProgress { files_done: total, files: total, bytes_read: meter.bytes() });
    let (parsed, sources): (Vec<_>, Vec<_>) =
        opened.into_iter().map(|(name, _, src, p)| ((FileInfo::new(name, src.len()), p), src)).unzip();
    let cp = assemble(parsed);
    let sources = aligned(&cp, &sources);
    Ok((cp, sources))
}
