//! The browser's driver of engine jobs: the engine's read planner decides every read; this only
//! fetches the bytes (Blob slices or HTTP ranges), yields to the browser, reports progress and
//! honours a [`Cancel`].

use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

use super::blob::BlobRead;
pub use super::cancel::{now_ms, Cancel};
use super::source::Source;
use tensorscope_values::job::{Job, Poll, ReadOpts, RunError, Runner};
use tensorscope_values::range::ByteRange;

/// Longest stretch of work between yields to the browser, in milliseconds.
pub const SLICE_MS: f64 = 10.0;

/// Largest read over HTTP: each read is a request and a round trip (a 60 MB index is read in
/// five, its 8 MiB probe and four more, not sixty).
pub const REMOTE_CHUNK_BYTES: u64 = 16 << 20;

/// Largest piece of a read fed at once on the page's main thread, where a fed piece is parsed
/// in one step: 256 KiB of a safetensors header in about 15 ms, 1 MiB in 50. (Workers take
/// whole reads.)
pub const MAIN_THREAD_FEED_BYTES: u64 = 256 << 10;

/// Tensors a pass over a whole checkpoint (assembling it, digesting it) takes in per task on
/// the main thread: at 500k tensors a whole pass takes about 80-100 ms in the size-optimised
/// build, so a piece takes about 10.
pub const MAIN_THREAD_TENSORS: usize = 50_000;

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

/// Run `job` over `sources` (indexed as the job indexes its files). `after_feed(job)` runs after
/// every feed (progress, draining output); the driver yields to the browser every ~10 ms of work
/// and stops with [`RunError::Cancelled`] once `cancel` is set. A sequential job's next Blob read
/// is started before the work on the last one ([`Runner::next_read`]), so reading and decoding
/// overlap.
pub async fn run<J: Job>(
    job: J,
    sources: &[Source],
    cancel: &Cancel,
    mut after_feed: impl FnMut(&mut J),
) -> Result<J::Output, RunError> {
    let lens = sources.iter().map(Source::len).collect();
    let mut opts = ReadOpts::default();
    if sources.iter().any(Source::is_remote) {
        opts.chunk = REMOTE_CHUNK_BYTES;
    }
    if web_sys::window().is_some() {
        opts.max_feed = MAIN_THREAD_FEED_BYTES;
    }
    let mut runner = Runner::with_opts(job, lens, opts);
    // Reset by yields only: a read served from memory (an HTTP probe's bytes) is no break.
    let mut since = now_ms();
    let mut early: Option<(usize, ByteRange, BlobRead)> = None;
    loop {
        if cancel.is_cancelled() {
            return Err(RunError::Cancelled);
        }
        match runner.poll()? {
            Poll::Done(out) => return Ok(out),
            Poll::Read(file, range) => {
                let src = sources.get(file).ok_or(RunError::NoSuchFile(file))?;
                let (range, bytes) = match early.take() {
                    Some((f, r, read)) if f == file && r.start == range.start => (r, read.bytes().await),
                    _ => (range, src.read(range, cancel).await),
                };
                if cancel.is_cancelled() {
                    return Err(RunError::Cancelled);
                }
                runner.fill(file, range, bytes.map_err(RunError::Read)?)?;
                // The next read of a sequential job starts now, under the work on these bytes.
                early = runner.next_read().and_then(|(f, r)| Some((f, r, sources.get(f)?.begin(r)?)));
            }
            Poll::Fed => {
                after_feed(runner.job_mut());
                if now_ms() - since > SLICE_MS {
                    yield_now().await;
                    since = now_ms();
                }
            }
        }
    }
}
