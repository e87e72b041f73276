//! `io::HttpSource`: byte ranges of a remote file via `fetch` with `Range: bytes=a-b`.
//!
//! Every response must be `206 Partial Content` with a `Content-Range` matching the request
//! (its total is the file size). A `200` (the server ignores Range and sends the whole file) is
//! detected from the status line and the download aborted before the body is read. A failed
//! fetch is told apart as CORS (the server answers an opaque `no-cors` request) or network.
//! Redirects (the Hub's `resolve` URLs) are followed by `fetch` itself.

use std::cell::Cell;
use std::rc::Rc;

use js_sys::Uint8Array;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortController, Headers, RequestInit, RequestMode, Response};

use super::blob::js_error;
use crate::engine::range::ByteRange;
use crate::engine::remote::{check_range_response, RangeError};

/// The first request of a file asks for this many bytes and keeps them: the sniff and small
/// headers are served without a second round trip, while a big header costs at most this much
/// more than its own bytes (16 KiB probes doubled the bytes to open a sharded set).
pub const PROBE_BYTES: u64 = 4 << 10;

/// Counts bytes transferred over a set of sources and tells a listener.
#[derive(Clone, Default)]
pub struct Meter {
    bytes: Rc<Cell<u64>>,
    requests: Rc<Cell<u64>>,
    notify: Option<Rc<dyn Fn(u64, u64)>>,
}

impl std::fmt::Debug for Meter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Meter({} B, {} requests)", self.bytes.get(), self.requests.get())
    }
}

impl Meter {
    /// A meter calling `notify(bytes, requests)` after every response.
    pub fn new(notify: impl Fn(u64, u64) + 'static) -> Self {
        Meter { notify: Some(Rc::new(notify)), ..Meter::default() }
    }
    /// Body bytes received so far.
    pub fn bytes(&self) -> u64 {
        self.bytes.get()
    }
    /// Requests made so far.
    pub fn requests(&self) -> u64 {
        self.requests.get()
    }
    fn add(&self, bytes: u64) {
        self.bytes.set(self.bytes.get() + bytes);
        if let Some(n) = &self.notify {
            n(self.bytes.get(), self.requests.get());
        }
    }
}

/// A remote file read by HTTP range requests.
#[derive(Clone, Debug)]
pub struct HttpSource {
    url: String,
    len: u64,
    head: Rc<Vec<u8>>,
    bytes_read: Rc<Cell<u64>>,
    meter: Meter,
}

impl HttpSource {
    /// Probe `url` with a first range request: learns the size and keeps the first bytes.
    pub async fn open(url: &str, meter: &Meter) -> Result<HttpSource, String> {
        let (total, head) = fetch_range(url, 0, PROBE_BYTES - 1, meter).await?;
        let src = HttpSource {
            url: url.to_owned(),
            len: total,
            bytes_read: Rc::new(Cell::new(head.len() as u64)),
            head: Rc::new(head),
            meter: meter.clone(),
        };
        Ok(src)
    }

    /// The URL read.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The file's size (the total of `Content-Range`).
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the file is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Body bytes transferred for this file so far.
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read.get()
    }

    /// The bytes of `range` clamped to the file.
    pub async fn read(&self, range: ByteRange) -> Result<Vec<u8>, String> {
        let end = range.end.min(self.len);
        if range.start >= end {
            return Ok(Vec::new());
        }
        if end <= self.head.len() as u64 {
            return Ok(self.head[range.start as usize..end as usize].to_vec());
        }
        // Bytes the probe already holds are not fetched again.
        let head_len = self.head.len() as u64;
        let from = range.start.max(head_len.min(end));
        let (_, fetched) = fetch_range(&self.url, from, end - 1, &self.meter).await?;
        self.bytes_read.set(self.bytes_read.get() + fetched.len() as u64);
        let mut bytes =
            if range.start < from { self.head[range.start as usize..from as usize].to_vec() } else { Vec::new() };
        bytes.extend_from_slice(&fetched);
        if bytes.len() as u64 != end - range.start {
            return Err(format!(
                "{}: the server sent {} bytes for a range of {}",
                self.url,
                bytes.len(),
                end - range.start
            ));
        }
        Ok(bytes)
    }
}

/// GET `url` bytes `start..=end`: the file's total size and the bytes (fewer at the end).
async fn fetch_range(url: &str, start: u64, end: u64, meter: &Meter) -> Result<(u64, Vec<u8>), String> {
    let window = web_sys::window().ok_or("no window")?;
    let ctrl = AbortController::new().map_err(js_error)?;
    let headers = Headers::new().map_err(js_error)?;
    headers.set("Range", &format!("bytes={start}-{end}")).map_err(js_error)?;
    let init = RequestInit::new();
    init.set_headers(&headers);
    init.set_signal(Some(&ctrl.signal()));
    meter.requests.set(meter.requests.get() + 1);
    let resp = match JsFuture::from(window.fetch_with_str_and_init(url, &init)).await {
        Ok(r) => r,
        Err(_) => return Err(diagnose(url).await),
    };
    let resp: Response = resp.dyn_into().map_err(js_error)?;
    let content_range = resp.headers().get("content-range").ok().flatten();
    let total = match check_range_response(resp.status(), content_range.as_deref(), start, end) {
        Ok(t) => t,
        Err(e) => {
            // Do not download a whole file nobody asked for.
            ctrl.abort();
            let hint = match (&e, content_range.is_none(), resp.type_() == web_sys::ResponseType::Cors) {
                (RangeError::BadContentRange(_), true, true) => {
                    " (the server does not expose Content-Range to other origins: \
                     Access-Control-Expose-Headers must list it)"
                }
                _ => "",
            };
            return Err(format!("{url}: {e}{hint}"));
        }
    };
    let buf = JsFuture::from(resp.array_buffer().map_err(js_error)?).await.map_err(js_error)?;
    let bytes = Uint8Array::new(&buf).to_vec();
    meter.add(bytes.len() as u64);
    Ok((total, bytes))
}

/// Why a fetch failed: a `no-cors` request reaching the server means CORS blocked the first.
async fn diagnose(url: &str) -> String {
    let Some(window) = web_sys::window() else { return format!("{url}: network error") };
    let Ok(ctrl) = AbortController::new() else { return format!("{url}: network error") };
    let init = RequestInit::new();
    init.set_mode(RequestMode::NoCors);
    init.set_signal(Some(&ctrl.signal()));
    let reached = JsFuture::from(window.fetch_with_str_and_init(url, &init)).await.is_ok();
    ctrl.abort();
    if reached {
        format!(
            "{url}: blocked by CORS: the server answered, but does not let pages from other origins read \
             the file (it must send Access-Control-Allow-Origin and expose Content-Range)"
        )
    } else {
        format!("{url}: network error: the server could not be reached (offline, wrong address, or connection refused)")
    }
}
