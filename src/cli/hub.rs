//! `repo` over a Hugging Face Hub (or a Hub-compatible endpoint): the revision pinned to the
//! commit the server names, every file listed through the API (following `Link` pagination),
//! then each checkpoint's headers read by `Range` at that commit, several files at once. Only
//! headers cross the network.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use ureq::ResponseExt;

use super::parallel::map_units;
use crate::engine::hub::{resolve_url, Listing, RepoRef};
use crate::engine::job::{headers_job, run_reusing, ReadOpts};
use crate::engine::model::FileInfo;
use crate::engine::open::Parsed;
use crate::engine::range::ByteRange;
use crate::engine::remote::{check_range_response, Pin, RangeHeaders};

/// Files read at once.
const PARALLEL_FILES: usize = 8;
/// Reads of a remote header: 256 KiB a request (a safetensors header and most GGUF headers in
/// one), at most 4 MiB ahead for a big GGUF vocabulary.
const REMOTE_READS: ReadOpts = ReadOpts { chunk: 256 << 10, max_read_ahead: 4 << 20, max_feed: u64::MAX };

/// A repository read: the commit, its files' headers, and what crossed the network.
pub struct Read {
    pub commit: String,
    /// Every file listed; one that could not be read stands as an other file.
    pub parsed: Vec<(FileInfo, Parsed)>,
    /// The files that could not be read, with why.
    pub unreadable: Vec<(String, String)>,
    pub bytes: u64,
    pub requests: u64,
}

/// What the network carried.
#[derive(Default)]
struct Meter {
    bytes: AtomicU64,
    requests: AtomicU64,
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(120)))
        .user_agent(concat!("tensorscope/", env!("CARGO_PKG_VERSION")))
        .build()
        .into()
}

/// Read `repo` on `endpoint`: pin the revision, list the files, read every file's headers.
pub fn read(repo: &RepoRef, endpoint: &str) -> Result<Read, String> {
    let agent = agent();
    let meter = Meter::default();
    let mut listing = Listing::new(repo, endpoint);
    while let Some(url) = listing.next_url() {
        meter.requests.fetch_add(1, Ordering::Relaxed);
        let mut resp = agent.get(&url).call().map_err(|e| format!("{url}: {e}"))?;
        let link = resp.headers().get("link").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let status = resp.status().as_u16();
        let text = resp.body_mut().with_config().limit(64 << 20).read_to_string().map_err(|e| format!("{url}: {e}"))?;
        meter.bytes.fetch_add(text.len() as u64, Ordering::Relaxed);
        listing.answer(status, &text, link.as_deref())?;
    }
    let (commit, files) = listing.finish();
    // One file that cannot be read (a server error, a file changed under the commit) does not
    // stop the others: it is listed among the other files, and said.
    let results = map_units(files.len(), PARALLEL_FILES, |i| {
        let f = &files[i];
        let url = resolve_url(endpoint, repo, &commit, &f.path);
        let info = FileInfo::new(f.path.clone(), f.size);
        let mut remote = Remote { agent: &agent, url, pin: None, meter: &meter };
        let mut spare = Vec::new();
        let read = |_: usize, range: ByteRange, buf: &mut Vec<u8>| remote.read(range, buf);
        let out =
            run_reusing(headers_job(vec![info.clone()]), vec![f.size], REMOTE_READS, &mut spare, read, |_| Ok(()));
        Ok(match out.map(|mut o| o.pop()) {
            Ok(Some(parsed)) => Ok(parsed),
            Ok(None) => Err((info, "not read".to_owned())),
            Err(e) => Err((info, e.to_string())),
        })
    })?;
    let mut unreadable = Vec::new();
    let parsed = results
        .into_iter()
        .map(|r| {
            r.unwrap_or_else(|(info, why)| {
                unreadable.push((info.path.clone(), why));
                (info, Parsed::Other)
            })
        })
        .collect();
    let (bytes, requests) = (meter.bytes.load(Ordering::Relaxed), meter.requests.load(Ordering::Relaxed));
    Ok(Read { commit, parsed, unreadable, bytes, requests })
}

/// One remote file, read by `Range` requests: the first response pins it (its address after
/// redirects, size and validators), every later one must match.
struct Remote<'a> {
    agent: &'a ureq::Agent,
    url: String,
    pin: Option<Pin>,
    meter: &'a Meter,
}

impl Remote<'_> {
    fn read(&mut self, range: ByteRange, buf: &mut Vec<u8>) -> Result<(), String> {
        buf.clear();
        if range.is_empty() {
            return Ok(());
        }
        let url = self.pin.as_ref().map_or(self.url.as_str(), |p| p.url.as_str()).to_owned();
        let last = range.end - 1;
        self.meter.requests.fetch_add(1, Ordering::Relaxed);
        let mut resp = self
            .agent
            .get(&url)
            .header("Range", format!("bytes={}-{last}", range.start))
            .call()
            .map_err(|e| format!("{url}: {e}"))?;
        let header = |name: &str| resp.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let (content_range, etag, last_modified) = (header("content-range"), header("etag"), header("last-modified"));
        let headers = RangeHeaders {
            content_range: content_range.as_deref(),
            etag: etag.as_deref(),
            last_modified: last_modified.as_deref(),
        };
        // A whole-file answer is refused before its body is read.
        let total = check_range_response(resp.status().as_u16(), &headers, range.start, last, self.pin.as_ref())
            .map_err(|e| format!("{}: {e}", self.url))?;
        let want = range.len().min(total - range.start);
        let limit = want.saturating_add(1);
        let body = resp.body_mut().with_config().limit(limit).read_to_vec().map_err(|e| format!("{url}: {e}"))?;
        if body.len() as u64 != want {
            return Err(format!("{url}: {} bytes came for a range of {want}", body.len()));
        }
        self.meter.bytes.fetch_add(want, Ordering::Relaxed);
        if self.pin.is_none() {
            let url = resp.get_uri().to_string();
            self.pin = Some(Pin { url, total, etag, last_modified });
        }
        *buf = body;
        Ok(())
    }
}
