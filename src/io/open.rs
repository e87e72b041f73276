//! Opening dropped or picked files, or URLs, as one checkpoint, through the engine's open job.
//! The sources returned are aligned with the checkpoint's files, by index.

use std::cell::RefCell;
use std::collections::HashSet;
use std::rc::Rc;

use super::driver::{run, yield_now, Cancel, MAIN_THREAD_TENSORS};
use super::entries::Input;
use super::http::{HttpSource, Meter};
use super::source::Source;
use super::BlobSource;
use crate::engine::config::{companions, ConfigRead};
use crate::engine::job::{headers_job, OnFile, RunError};
use crate::engine::model::{Checkpoint, FileInfo};
use crate::engine::open::{FileDecoder, Parsed};
use crate::engine::remote::{at_commit, beside, check_url, unreadable_shard, url_file_name};
use crate::engine::shard_probe::{Expect, ShardProbes, MAX_PROBE_BYTES, PROBE_BYTES};
use crate::engine::shards::Assembling;
use crate::engine::sniff::{sniff, FileKind};
use crate::engine::variants::{group, separate_models, variants, Variant};

/// How far opening has come.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct OpenProgress {
    pub files_done: usize,
    pub files: usize,
    pub bytes_read: u64,
}

/// [`crate::engine::inspections::assemble`] in tasks of its own, a piece of the tensors per task,
/// apart from the last header read before it and the first render after it; not at all once
/// cancelled.
async fn assemble_apart(parsed: Vec<(FileInfo, Parsed)>, cancel: &Cancel) -> Result<Checkpoint, RunError> {
    let mut assembling = Assembling::new(parsed);
    loop {
        yield_now().await;
        if cancel.is_cancelled() {
            return Err(RunError::Cancelled);
        }
        if assembling.step(MAIN_THREAD_TENSORS) {
            break;
        }
    }
    yield_now().await;
    if cancel.is_cancelled() {
        return Err(RunError::Cancelled);
    }
    let cp = crate::engine::inspections::finish(assembling);
    yield_now().await;
    Ok(cp)
}

/// `sources` in the order of `cp`'s files.
fn aligned(cp: &Checkpoint, sources: &[Source]) -> Vec<Source> {
    cp.files.iter().map(|f| sources[f.given].clone()).collect()
}

/// A finding for each remote file whose server shows no validator (`Pin::unpinned`).
fn note_unpinned(cp: &mut Checkpoint, sources: &[Source]) {
    for (i, s) in sources.iter().enumerate() {
        if let Source::Http(h) = s {
            cp.findings.extend(h.spec().1.unpinned().map(|f| f.in_file(i)));
        }
    }
}

/// Read the headers of every input and assemble one checkpoint. Inputs are sorted by path
/// first, as the CLI sorts a folder's children.
pub async fn open_inputs(
    inputs: &mut [Input],
    cancel: &Cancel,
    progress: impl FnMut(OpenProgress),
) -> Result<(Checkpoint, Vec<Source>), RunError> {
    crate::engine::sort::sort_by(inputs, |a, b| a.path.cmp(&b.path));
    let files: Vec<(String, Source)> =
        inputs.iter().map(|i| (i.path.clone(), BlobSource::new(i.blob.clone()).into())).collect();
    open_sources(&files, cancel, progress).await
}

/// The headers of `inputs` (sorted by path, as [`open_inputs`] sorts them), not assembled.
pub async fn read_inputs(inputs: &mut [Input], cancel: &Cancel) -> Result<Vec<(FileInfo, Parsed)>, RunError> {
    crate::engine::sort::sort_by(inputs, |a, b| a.path.cmp(&b.path));
    let files: Vec<(String, Source)> =
        inputs.iter().map(|i| (i.path.clone(), BlobSource::new(i.blob.clone()).into())).collect();
    Ok(read_headers(&files, cancel, |_| {}).await?.0)
}

/// Read the headers of `files` (path, source), in the order given, into one checkpoint.
pub async fn open_sources(
    files: &[(String, Source)],
    cancel: &Cancel,
    progress: impl FnMut(OpenProgress),
) -> Result<(Checkpoint, Vec<Source>), RunError> {
    let (parsed, sources) = read_headers(files, cancel, progress).await?;
    one(parsed, &sources, cancel).await
}

/// The headers of `files` (path, source), in the order given, and their sources.
async fn read_headers(
    files: &[(String, Source)],
    cancel: &Cancel,
    mut progress: impl FnMut(OpenProgress),
) -> Result<(Vec<(FileInfo, Parsed)>, Vec<Source>), RunError> {
    let infos = files.iter().map(|(p, s)| FileInfo::new(p.clone(), s.len())).collect();
    let sources: Vec<Source> = files.iter().map(|(_, s)| s.clone()).collect();
    let total = files.len();
    progress(OpenProgress { files: total, ..OpenProgress::default() });
    let parsed = run(headers_job(infos), &sources, cancel, |j| {
        let (done, files) = j.files_done();
        progress(OpenProgress { files_done: done, files, bytes_read: j.bytes_fed() });
    })
    .await?;
    let bytes_read = sources.iter().map(Source::bytes_read).sum();
    progress(OpenProgress { files_done: total, files: total, bytes_read });
    Ok((parsed, sources))
}

/// The one checkpoint of `parsed` (read from `sources`), with its sources aligned.
async fn one(
    parsed: Vec<(FileInfo, Parsed)>,
    sources: &[Source],
    cancel: &Cancel,
) -> Result<(Checkpoint, Vec<Source>), RunError> {
    let mut cp = assemble_apart(parsed, cancel).await?;
    let sources = aligned(&cp, sources);
    note_unpinned(&mut cp, &sources);
    Ok((cp, sources))
}

/// What files opened as: one checkpoint with its sources, or several separate models (a folder
/// of quant variants): each checkpoint of the folder with its files' names and sources, and the
/// other files' names.
pub enum OpenedAs {
    One(Checkpoint, Vec<Source>),
    Variants(Vec<Variant>, Vec<Vec<(String, Source)>>, Vec<String>),
}

/// [`open_sources`], unless the files hold several separate models: then each checkpoint among
/// them ([`crate::engine::variants`]), to choose from.
pub async fn open_grouped(
    files: &[(String, Source)],
    cancel: &Cancel,
    progress: impl FnMut(OpenProgress),
) -> Result<OpenedAs, RunError> {
    let (parsed, sources) = read_headers(files, cancel, progress).await?;
    opened_as(parsed, sources, cancel).await
}

/// What files read as `parsed` from `sources` (aligned with them) open as: their one
/// checkpoint, or, when they hold several separate models, each checkpoint among them with its
/// files' names and sources, and the other files' names.
pub async fn opened_as(
    parsed: Vec<(FileInfo, Parsed)>,
    sources: Vec<Source>,
    cancel: &Cancel,
) -> Result<OpenedAs, RunError> {
    let grouping = group(&parsed);
    if grouping.groups.len() > 1 {
        let all = variants(parsed.clone(), &grouping);
        if separate_models(&all).len() > 1 {
            let file = |i: usize| (parsed[i].0.path.clone(), sources[i].clone());
            let group_files = grouping.groups.iter().map(|g| g.files.iter().map(|&i| file(i)).collect()).collect();
            let other = grouping.other.iter().map(|&i| parsed[i].0.path.clone()).collect();
            return Ok(OpenedAs::Variants(all, group_files, other));
        }
    }
    let (cp, sources) = one(parsed, &sources, cancel).await?;
    Ok(OpenedAs::One(cp, sources))
}

/// Remote files read at once. Browsers open six connections per host over HTTP/1.1 and queue
/// the rest, so with twice as many asked for, a request waits in the browser whenever a
/// connection frees: a 500-shard open took a tenth less time than with six (HTTP/2 servers
/// get twelve streams).
pub const PARALLEL_REQUESTS: usize = 12;

/// One remote file's header, read: its name, URL, source and what it holds.
type Opened = (String, String, Source, Parsed);

/// Probe and parse each of `files` (name, URL), [`PARALLEL_REQUESTS`] at a time, the first
/// request of each as long as `probes` tells, and teach `probes` every header read; the
/// results in the order of `files`.
async fn open_remote(
    files: Vec<(String, String)>,
    probes: ShardProbes,
    meter: &Meter,
    cancel: &Cancel,
) -> Vec<Result<Opened, RunError>> {
    let files = Rc::new(files);
    let probes = Rc::new(RefCell::new(probes));
    let (meter, cancel) = (meter.clone(), cancel.clone());
    let task_files = files.clone();
    super::pool::run_all(files.len(), PARALLEL_REQUESTS, move |i| {
        let (files, probes, meter, cancel) = (task_files.clone(), probes.clone(), meter.clone(), cancel.clone());
        async move {
            if cancel.is_cancelled() {
                return Err(RunError::Cancelled);
            }
            let (name, url) = files[i].clone();
            let probe = probes.borrow().probe(i);
            let http = match HttpSource::open(&url, &meter, probe, &cancel).await {
                Ok(http) => http,
                Err(_) if cancel.is_cancelled() => return Err(RunError::Cancelled),
                Err(e) => return Err(RunError::Read(e)),
            };
            let decoder = OnFile { file: 0, decoder: FileDecoder::new(&name, http.len()) };
            let parsed = run(decoder, &[http.clone().into()], &cancel, |_| {}).await?;
            let src: Source = http.without_head().into();
            if let Parsed::Safetensors(h) = &parsed {
                probes.borrow_mut().learn(i, h.data_start());
            }
            Ok((name, url, src, parsed))
        }
    })
    .await
}

/// Every result of [`open_remote`], or its first error.
fn all_opened(results: Vec<Result<Opened, RunError>>) -> Result<Vec<Opened>, RunError> {
    results.into_iter().collect()
}

/// Remote files read: each file's headers and source, and the files that could not be read
/// (each with why), which stand among them as empty other files.
pub type RemoteFiles = (Vec<(FileInfo, Parsed)>, Vec<Source>, Vec<(String, String)>);

/// The headers of remote files `given` (name, URL), [`PARALLEL_REQUESTS`] at a time (an
/// index's first request sized to hold it whole), with their sources: a repository's files,
/// each read where it is, none brought in by another. One file that cannot be read does not
/// stop the others.
pub async fn open_remote_files(
    given: Vec<(String, String)>,
    meter: &Meter,
    cancel: &Cancel,
    mut progress: impl FnMut(OpenProgress),
) -> Result<RemoteFiles, RunError> {
    let expect = given
        .iter()
        .map(|(name, _)| Expect::Bytes(if sniff(name, b"") == FileKind::Index { MAX_PROBE_BYTES } else { PROBE_BYTES }))
        .collect();
    let total = given.len();
    progress(OpenProgress { files: total, ..OpenProgress::default() });
    let names: Vec<String> = given.iter().map(|(name, _)| name.clone()).collect();
    let results = open_remote(given, ShardProbes::new(expect), meter, cancel).await;
    progress(OpenProgress { files_done: total, files: total, bytes_read: meter.bytes() });
    let (mut parsed, mut sources, mut unreadable) = (Vec::new(), Vec::new(), Vec::new());
    for (name, r) in names.into_iter().zip(results) {
        let (info, p, src) = match r {
            Ok((name, _, src, p)) => (FileInfo::new(name, src.len()), p, src),
            Err(RunError::Read(why)) => {
                let empty = web_sys::Blob::new().map_err(|_| RunError::Read("no Blob here".into()))?;
                unreadable.push((name.clone(), why));
                (FileInfo::new(name, 0), Parsed::Other, BlobSource::new(empty).into())
            }
            Err(e) => return Err(e),
        };
        parsed.push((info, p));
        sources.push(src);
    }
    Ok((parsed, sources, unreadable))
}

/// Open remote files by URL (`hf://` shorthands expanded; only `http:`/`https:` accepted). A
/// `model.safetensors.index.json` brings in every shard it names, resolved relative to the
/// index's URL (shard URLs are checked the same way; one whose name was given by URL is not
/// read again). An index, or a file of safetensors or a pickle, brings the configs and chat
/// template beside it ([`companions`]; each optional: one the server does not have is absent,
/// one whose name was given by URL is not asked for, and files given from several folders bring
/// none, as configs are known by their names alone; a GGUF carries its own facts). Headers are
/// read [`PARALLEL_REQUESTS`] at a time, each shard's in one request sized from the names the
/// index gives it, and only header ranges are fetched; `meter` counts the bytes transferred.
/// Files are named by the last part of their URL (shards: as the index names them).
pub async fn open_urls(
    urls: &[String],
    meter: &Meter,
    cancel: &Cancel,
    mut progress: impl FnMut(OpenProgress),
) -> Result<(Checkpoint, Vec<Source>), RunError> {
    let mut given = Vec::new();
    let mut expect = Vec::new();
    let mut seen = HashSet::new();
    for u in urls {
        let u = check_url(u.trim()).map_err(|e| RunError::Read(e.to_string()))?;
        if seen.insert(u.clone()) {
            // An index is read whole: most come in their first request.
            let name = url_file_name(&u).to_owned();
            let index = sniff(&name, b"") == FileKind::Index;
            expect.push(Expect::Bytes(if index { MAX_PROBE_BYTES } else { PROBE_BYTES }));
            given.push((name, u));
        }
    }
    let given_names: HashSet<String> = given.iter().map(|(name, _)| name.clone()).collect();
    progress(OpenProgress { files: given.len(), ..OpenProgress::default() });
    let mut opened = all_opened(open_remote(given, ShardProbes::new(expect), meter, cancel).await)?;
    // Shards named by the indexes given, each once and none given by URL, then the configs
    // beside the indexes and files of weights.
    let mut more = Vec::new();
    let mut expect = Vec::new();
    let mut wanted = Vec::new();
    let mut folders = HashSet::new();
    for (name, url, src, parsed) in &opened {
        if !matches!(parsed, Parsed::Index(_) | Parsed::Safetensors(_) | Parsed::Pickle(_)) {
            continue;
        }
        // On the Hub, the shards and configs at the commit the file was read at (a branch may
        // move on while 500 shards open).
        let commit = if let Source::Http(h) = src { h.commit() } else { None };
        let url = &commit.and_then(|c| at_commit(url, c)).unwrap_or_else(|| url.clone());
        if let Parsed::Index(ix) = parsed {
            for (shard, guess) in ix.shards().zip(Expect::shards_of(ix)) {
                let u = beside(url, shard)
                    .map_err(|e| e.to_string())
                    .and_then(|u| check_url(&u).map_err(|e| e.to_string()))
                    .map_err(|e| RunError::Read(format!("{name}: {e}")))?;
                // A shard given by URL too (a branch's, where the index's are at its commit)
                // is not read twice.
                if !given_names.contains(url_file_name(&u)) && seen.insert(u.clone()) {
                    more.push((shard.to_owned(), u));
                    expect.push(guess);
                }
            }
        }
        folders.extend(beside(url, "config.json").ok());
        for &config in companions(name).iter().filter(|&&c| !given_names.contains(c)) {
            wanted.extend(beside(url, config).ok().and_then(|u| check_url(&u).ok()).map(|u| (config.to_owned(), u)));
        }
    }
    // Configs are named by their file names alone: those of files given from several folders
    // would be taken for one another's, so then none is asked for.
    let configs: Vec<(String, String)> = match folders.len() {
        1 => wanted.into_iter().filter(|(_, u)| seen.insert(u.clone())).collect(),
        _ => Vec::new(),
    };
    let shards = more.len();
    let total = opened.len() + shards;
    progress(OpenProgress { files_done: opened.len(), files: total, bytes_read: meter.bytes() });
    expect.extend(configs.iter().map(|_| Expect::Bytes(PROBE_BYTES)));
    let shard_names: Vec<String> = more.iter().map(|(name, _)| name.clone()).collect();
    more.extend(configs);
    let mut read = open_remote(more, ShardProbes::new(expect), meter, cancel).await.into_iter();
    // A shard that cannot be read (a 404, most often) is left out and named in a finding, as a
    // local set's missing shard is: the rest of the set still opens. Only when no file of
    // weights is left is there nothing to show, and the open fails with the first error.
    let mut unreadable = Vec::new();
    for (name, result) in shard_names.into_iter().zip(read.by_ref().take(shards)) {
        match result {
            Ok(o) => opened.push(o),
            Err(RunError::Cancelled) => return Err(RunError::Cancelled),
            Err(e) => unreadable.push((name, e)),
        }
    }
    let weights = |p: &Parsed| !matches!(p, Parsed::Index(_) | Parsed::Config(_) | Parsed::Other);
    if !unreadable.is_empty() && !opened.iter().any(|(_, _, _, p)| weights(p)) {
        return Err(unreadable.swap_remove(0).1);
    }
    // A config is optional: one that cannot be fetched (most often a 404), or a page the server
    // answered in its place, is simply absent.
    for config in read {
        match config {
            Ok((_, _, _, Parsed::Config(ConfigRead::Page))) => {}
            Ok(c) => opened.push(c),
            Err(RunError::Cancelled) => return Err(RunError::Cancelled),
            Err(_) => {}
        }
    }
    progress(OpenProgress { files_done: total, files: total, bytes_read: meter.bytes() });
    let (parsed, sources): (Vec<_>, Vec<_>) =
        opened.into_iter().map(|(name, _, src, p)| ((FileInfo::new(name, src.len()), p), src)).unzip();
    let mut cp = assemble_apart(parsed, cancel).await?;
    let sources = aligned(&cp, &sources);
    note_unpinned(&mut cp, &sources);
    cp.findings.extend(unreadable.iter().map(|(name, e)| unreadable_shard(name, &e.to_string())));
    Ok((cp, sources))
}
