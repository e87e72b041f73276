//! `io::HttpSource`: byte ranges of a remote file via `fetch` with `Range: bytes=a-b`.
//!
//! Every response must be `206 Partial Content` with a `Content-Range` matching the request
//! (its total is the file size). A `200` (the server ignores Range and sends the whole file) is
//! detected from the status line and the download aborted before the body is read. A failed
//! fetch is told apart as CORS (the server answers an opaque `no-cors` request) or network.
//! Redirects (the Hub's `resolve` URLs) are followed by `fetch` itself; the file is then pinned
//! (its final URL, size and validators) and every later response is checked against the pin.
//! No request carries a header beyond `Range` (CORS-safelisted), so none costs a preflight.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use js_sys::Uint8Array;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortController, Headers, ReadableStreamDefaultReader, RequestInit, RequestMode, Response};

use super::blob::js_error;
use super::cancel::Cancel;
use super::watchdog::{Bark, Watchdog, IDLE_MS};
use tensorscope_values::range::ByteRange;
use tensorscope_values::remote::{check_range_response, Pin, RangeError, RangeHeaders};

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

/// A remote file read by HTTP range requests, pinned at first contact (see [`Pin`]).
#[derive(Clone, Debug)]
pub struct HttpSource {
    /// The URL as given (re-resolved when a pinned redirect target expires).
    url: String,
    pin: Rc<RefCell<Pin>>,
    head: Rc<Vec<u8>>,
    bytes_read: Rc<Cell<u64>>,
    meter: Meter,
    /// The Hub's `X-Repo-Commit` of the first response, when the server shows one.
    commit: Option<String>,
}

impl HttpSource {
    /// Probe `url` with a first range request of `probe` bytes (sized by
    /// [`tensorscope_values::shard_probe`]): learns the size, the URL after redirects and the
    /// validators, and keeps the bytes. `cancel` aborts the request.
    pub async fn open(url: &str, meter: &Meter, probe: u64, cancel: &Cancel) -> Result<HttpSource, String> {
        let got = fetch_range(url, 0, probe.max(1) - 1, None, meter, Some(cancel)).await?;
        Ok(HttpSource {
            url: url.to_owned(),
            pin: Rc::new(RefCell::new(got.pin)),
            bytes_read: Rc::new(Cell::new(got.bytes.len() as u64)),
            head: Rc::new(got.bytes),
            meter: meter.clone(),
            commit: got.commit,
        })
    }

    /// The commit the server says the file is at (the Hub's `X-Repo-Commit`), if it shows one.
    pub fn commit(&self) -> Option<&str> {
        self.commit.as_deref()
    }

    /// A source over a file already pinned elsewhere (by the page, for a worker): no probe.
    pub fn pinned(url: &str, pin: Pin, meter: &Meter) -> HttpSource {
        HttpSource {
            url: url.to_owned(),
            pin: Rc::new(RefCell::new(pin)),
            bytes_read: Rc::default(),
            head: Rc::default(),
            meter: meter.clone(),
            commit: None,
        }
    }

    /// This source without the first request's bytes (once its header is parsed: a set of
    /// 500 shards would otherwise hold 500 probes).
    pub fn without_head(&self) -> HttpSource {
        HttpSource { head: Rc::default(), ..self.clone() }
    }

    /// The URL as given and the pin: what [`HttpSource::pinned`] takes.
    pub fn spec(&self) -> (String, Pin) {
        (self.url.clone(), self.pin.borrow().clone())
    }

    /// Count bytes and requests that a worker transferred for this file.
    pub fn count_elsewhere(&self, bytes: u64, requests: u64) {
        self.bytes_read.set(self.bytes_read.get() + bytes);
        self.meter.requests.set(self.meter.requests.get() + requests);
        self.meter.add(bytes);
    }

    /// The URL read (after redirects).
    pub fn url(&self) -> String {
        self.pin.borrow().url.clone()
    }

    /// The file's size (the total of `Content-Range` at first contact).
    pub fn len(&self) -> u64 {
        self.pin.borrow().total
    }

    /// Whether the file is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Body bytes transferred for this file so far.
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read.get()
    }

    /// The bytes of `range` clamped to the file; a request under way is aborted once `cancel` is.
    pub async fn read(&self, range: ByteRange, cancel: &Cancel) -> Result<Vec<u8>, String> {
        let end = range.end.min(self.len());
        if range.start >= end {
            return Ok(Vec::new());
        }
        let head_len = self.head.len() as u64;
        if end <= head_len {
            // Both below the probe's length, which is a usize.
            return Ok(self.head[range.start as usize..end as usize].to_vec());
        }
        // Bytes the probe already holds are not fetched again.
        let from = range.start.max(head_len);
        let fetched = self.fetch_pinned(from, end - 1, cancel).await?;
        self.bytes_read.set(self.bytes_read.get() + fetched.len() as u64);
        let mut bytes =
            if range.start < from { self.head[range.start as usize..from as usize].to_vec() } else { Vec::new() };
        bytes.extend_from_slice(&fetched);
        Ok(bytes)
    }

    /// Bytes `start..=end` of the pinned file, from the pinned URL; a pinned redirect target
    /// that has expired is resolved again from the URL given, and must still be the same file.
    async fn fetch_pinned(&self, start: u64, end: u64, cancel: &Cancel) -> Result<Vec<u8>, String> {
        let pin = self.pin.borrow().clone();
        let err = match fetch_range(&pin.url, start, end, Some(&pin), &self.meter, Some(cancel)).await {
            Ok(got) => return Ok(got.bytes),
            Err(e) => e,
        };
        if pin.url != self.url && err.contains("answered HTTP 4") {
            let again = fetch_range(&self.url, start, end, Some(&pin), &self.meter, Some(cancel)).await?;
            self.pin.borrow_mut().url = again.pin.url;
            return Ok(again.bytes);
        }
        Err(err)
    }
}

/// What one range request brought: the file as the response describes it, and the bytes.
struct Fetched {
    pin: Pin,
    bytes: Vec<u8>,
    commit: Option<String>,
}

/// GET `url` bytes `start..=end` (judged against `pin` when given). The body is read as a
/// stream and never past the bytes asked for.
async fn fetch_range(
    url: &str,
    start: u64,
    end: u64,
    pinned: Option<&Pin>,
    meter: &Meter,
    cancel: Option<&Cancel>,
) -> Result<Fetched, String> {
    let ctrl = AbortController::new().map_err(js_error)?;
    let headers = Headers::new().map_err(js_error)?;
    headers.set("Range", &format!("bytes={start}-{end}")).map_err(js_error)?;
    let init = RequestInit::new();
    init.set_headers(&headers);
    init.set_signal(Some(&ctrl.signal()));
    // Past the browser's HTTP cache: storing every partial response cost about a tenth of a
    // shard set's open, and a pinned file's ranges are read once.
    init.set_cache(web_sys::RequestCache::NoStore);
    meter.requests.set(meter.requests.get() + 1);
    let dog = Watchdog::new(&ctrl, cancel);
    let resp = answer(url, &init, &dog).await?;
    let h = resp.headers();
    let get = |name: &str| h.get(name).ok().flatten();
    let (content_range, etag, last_modified) = (get("content-range"), get("etag"), get("last-modified"));
    let seen = RangeHeaders {
        content_range: content_range.as_deref(),
        etag: etag.as_deref(),
        last_modified: last_modified.as_deref(),
    };
    let total = match check_range_response(resp.status(), &seen, start, end, pinned) {
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
    // The Content-Range was checked to start at `start` and end at `end` or the file's end.
    let want = end.min(total - 1) - start + 1;
    let bytes = read_body(&resp, want, &dog).await.map_err(|e| format!("{url}: {e}"))?;
    meter.add(bytes.len() as u64);
    let final_url = resp.url();
    let pin = Pin { url: if final_url.is_empty() { url.to_owned() } else { final_url }, total, etag, last_modified };
    Ok(Fetched { pin, bytes, commit: get("x-repo-commit") })
}

/// A GET of `url`'s whole text (an API answer): its status, text and `Link` header (which the
/// server must expose to other origins for pagination to be seen).
pub async fn get_text(url: &str, meter: &Meter, cancel: &Cancel) -> Result<(u16, String, Option<String>), String> {
    let ctrl = AbortController::new().map_err(js_error)?;
    let init = RequestInit::new();
    init.set_signal(Some(&ctrl.signal()));
    meter.requests.set(meter.requests.get() + 1);
    let dog = Watchdog::new(&ctrl, Some(cancel));
    let resp = answer(url, &init, &dog).await?;
    let link = resp.headers().get("link").ok().flatten();
    let text = JsFuture::from(resp.text().map_err(js_error)?).await.map_err(js_error)?;
    let text = text.as_string().unwrap_or_default();
    meter.add(text.len() as u64);
    Ok((resp.status(), text, link))
}

/// The response to `fetch(url, init)`, or why none came: no answer for [`IDLE_MS`], a cancel,
/// CORS or the network (told apart by [`diagnose`]).
async fn answer(url: &str, init: &RequestInit, dog: &Watchdog) -> Result<Response, String> {
    let resp = match JsFuture::from(fetch(url, init)?).await {
        Ok(r) => r,
        Err(_) => match dog.barked() {
            Some(Bark::Idle) => return Err(format!("{url}: no answer in {} s", IDLE_MS / 1000.0)),
            Some(Bark::Cancelled) => return Err(format!("{url}: cancelled")),
            None => return Err(diagnose(url).await),
        },
    };
    dog.pet();
    resp.dyn_into().map_err(js_error)
}

/// `fetch(url, init)` from the page or from a worker.
fn fetch(url: &str, init: &RequestInit) -> Result<js_sys::Promise, String> {
    if let Some(w) = web_sys::window() {
        return Ok(w.fetch_with_str_and_init(url, init));
    }
    let scope: web_sys::WorkerGlobalScope = js_sys::global().dyn_into().map_err(|_| "no fetch here".to_owned())?;
    Ok(scope.fetch_with_str_and_init(url, init))
}

/// Exactly `want` bytes of a response body, read chunk by chunk: a server that sends more
/// than the range it confirmed is refused before the excess is buffered; once the bytes are in,
/// the rest of the response is not waited for; a body that stops for [`IDLE_MS`] is an error.
async fn read_body(resp: &Response, want: u64, dog: &Watchdog) -> Result<Vec<u8>, String> {
    let body = resp.body().ok_or("the response has no body")?;
    let reader: ReadableStreamDefaultReader = body.get_reader().unchecked_into();
    let cap = usize::try_from(want).map_err(|_| "range too large".to_owned())?;
    let mut out = Vec::with_capacity(cap);
    while (out.len() as u64) < want {
        let chunk = match JsFuture::from(reader.read()).await {
            Ok(c) => c,
            Err(e) => {
                return Err(match dog.barked() {
                    Some(Bark::Idle) => {
                        format!(
                            "the server sent {} of {want} bytes, then nothing for {} s",
                            out.len(),
                            IDLE_MS / 1000.0
                        )
                    }
                    Some(Bark::Cancelled) => "cancelled".to_owned(),
                    None => js_error(e),
                })
            }
        };
        dog.pet();
        let done = js_sys::Reflect::get(&chunk, &"done".into()).ok().and_then(|d| d.as_bool()).unwrap_or(true);
        if done {
            break;
        }
        let value: Uint8Array = js_sys::Reflect::get(&chunk, &"value".into()).map_err(js_error)?.unchecked_into();
        if out.len() as u64 + u64::from(value.length()) > want {
            let _ = reader.cancel();
            return Err(format!("the server sent more than the {want} bytes of the range it confirmed"));
        }
        let at = out.len();
        out.resize(at + value.length() as usize, 0);
        value.copy_to(&mut out[at..]);
    }
    let _ = reader.cancel();
    if out.len() as u64 != want {
        return Err(format!("the server sent {} bytes for a range of {want}", out.len()));
    }
    Ok(out)
}

/// Why a fetch failed: a `no-cors` request reaching the server means CORS blocked the first.
async fn diagnose(url: &str) -> String {
    let Ok(ctrl) = AbortController::new() else { return format!("{url}: network error") };
    let init = RequestInit::new();
    init.set_mode(RequestMode::NoCors);
    init.set_signal(Some(&ctrl.signal()));
    let Ok(request) = fetch(url, &init) else { return format!("{url}: network error") };
    let reached = JsFuture::from(request).await.is_ok();
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
