//! The async driver: runs a sans-IO decoder over a [`Source`] (Blob or HTTP), yielding to the browser.

use std::cell::Cell;
use std::rc::Rc;

use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

use super::source::Source;
use crate::engine::range::ByteRange;
use crate::engine::step::{Decoder, Step, CHUNK_BYTES};

/// Longest stretch of work between yields to the browser, in milliseconds.
pub const SLICE_MS: f64 = 10.0;

/// A cancellation flag shared between the UI and a running job.
#[derive(Clone, Debug, Default)]
pub struct Cancel(Rc<Cell<bool>>);

impl Cancel {
    /// A fresh, not cancelled flag.
    pub fn new() -> Self {
        Cancel::default()
    }
    /// Ask the job to stop at its next chunk.
    pub fn cancel(&self) {
        self.0.set(true);
    }
    /// Whether [`Cancel::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.get()
    }
}

/// Why a drive stopped early.
#[derive(Clone, Debug, PartialEq)]
pub enum DriveError {
    Cancelled,
    Read(String),
    /// The file ends before the bytes the decoder needs (only with `DriveOpts::strict_eof`).
    Truncated {
        needed: u64,
        len: u64,
    },
    Feed(String),
}

impl std::fmt::Display for DriveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DriveError::Cancelled => write!(f, "cancelled"),
            DriveError::Read(e) => write!(f, "read failed: {e}"),
            DriveError::Truncated { needed, len } => {
                write!(f, "the file ends at byte {len} before the data needed (up to byte {needed})")
            }
            DriveError::Feed(e) => write!(f, "{e}"),
        }
    }
}

/// How to read.
#[derive(Clone, Copy, Debug)]
pub struct DriveOpts {
    /// Largest single read the decoder's request is cut to.
    pub chunk: u64,
    /// Read at least this much past a request's start and serve later requests from it
    /// (for sequential scans; 0 for headers and samples, which read ahead themselves).
    pub read_ahead: u64,
    /// Fail with [`DriveError::Truncated`] when a request runs past the end of the file,
    /// instead of feeding the short bytes (header decoders report truncation themselves).
    pub strict_eof: bool,
}

impl Default for DriveOpts {
    fn default() -> Self {
        DriveOpts { chunk: CHUNK_BYTES, read_ahead: 0, strict_eof: false }
    }
}

/// Milliseconds since page load (`performance.now()`).
pub fn now_ms() -> f64 {
    web_sys::window().and_then(|w| w.performance()).map_or_else(js_sys::Date::now, |p| p.now())
}

thread_local! {
    /// One `MessageChannel` for every yield, and the resolvers waiting on it.
    static YIELD: (Option<web_sys::MessageChannel>, std::cell::RefCell<Vec<js_sys::Function>>) = {
        let ch = web_sys::MessageChannel::new().ok();
        if let Some(ch) = &ch {
            let wake = wasm_bindgen::closure::Closure::<dyn FnMut()>::new(|| {
                let waiting = YIELD.with(|y| std::mem::take(&mut *y.1.borrow_mut()));
                for r in waiting {
                    let _ = r.call0(&wasm_bindgen::JsValue::NULL);
                }
            });
            ch.port1().set_onmessage(Some(wake.as_ref().unchecked_ref()));
            wake.forget();
        }
        (ch, std::cell::RefCell::new(Vec::new()))
    };
}

/// Let the browser run (render, handle input) before continuing: a message to ourselves
/// through a `MessageChannel` (a task, like `setTimeout(0)` without its 4 ms clamp).
pub async fn yield_now() {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        YIELD.with(|(ch, waiting)| match ch {
            Some(ch) => {
                waiting.borrow_mut().push(resolve);
                let _ = ch.port2().post_message(&wasm_bindgen::JsValue::NULL);
            }
            None => {
                if let Some(w) = web_sys::window() {
                    let _ = w.set_timeout_with_callback(resolve.unchecked_ref());
                }
            }
        })
    });
    let _ = JsFuture::from(promise).await;
}

/// Yields when more than [`SLICE_MS`] of work ran since the last yield.
pub struct Pacer {
    since: f64,
}

impl Default for Pacer {
    fn default() -> Self {
        Pacer { since: now_ms() }
    }
}

impl Pacer {
    /// Call between units of work.
    pub async fn tick(&mut self) {
        if now_ms() - self.since > SLICE_MS {
            yield_now().await;
            self.since = now_ms();
        }
    }
    /// The browser just ran (an awaited read): start a fresh slice.
    pub fn rested(&mut self) {
        self.since = now_ms();
    }
}

/// Run `decoder` to completion over `src`. `after_feed(decoder, bytes_fed)` runs after every
/// feed (progress, draining a sink); the driver yields to the browser every ~10 ms of work and
/// stops with [`DriveError::Cancelled`] once `cancel` is set.
pub async fn drive<D: Decoder>(
    mut decoder: D,
    src: &Source,
    opts: DriveOpts,
    cancel: &Cancel,
    mut after_feed: impl FnMut(&mut D, u64),
) -> Result<D::Output, DriveError> {
    let chunk = opts.chunk.max(1);
    let mut pacer = Pacer::default();
    let mut fed = 0u64;
    // Bytes read ahead, starting at `ahead_start`.
    let (mut ahead_start, mut ahead) = (0u64, Vec::<u8>::new());
    loop {
        let range = match decoder.step() {
            Step::Done(out) => return Ok(out),
            Step::Need(r) => r,
        };
        if cancel.is_cancelled() {
            return Err(DriveError::Cancelled);
        }
        if opts.strict_eof && range.end > src.len() {
            return Err(DriveError::Truncated { needed: range.end, len: src.len() });
        }
        let ahead_end = ahead_start + ahead.len() as u64;
        let want = ByteRange::at(range.start, range.len().clamp(1, chunk));
        if !(range.start >= ahead_start && range.start < ahead_end) {
            let len = want.len().max(opts.read_ahead);
            let read = ByteRange::at(want.start, len);
            ahead = src.read(read).await.map_err(DriveError::Read)?;
            ahead_start = read.start;
            pacer.rested();
        }
        let from = (want.start - ahead_start) as usize;
        let to = ((want.end - ahead_start) as usize).min(ahead.len()).max(from);
        let bytes = &ahead[from..to];
        fed += bytes.len() as u64;
        decoder.feed(want.start, bytes).map_err(|e| DriveError::Feed(e.to_string()))?;
        if opts.read_ahead == 0 {
            ahead.clear();
        }
        after_feed(&mut decoder, fed);
        pacer.tick().await;
    }
}
