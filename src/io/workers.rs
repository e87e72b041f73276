//! A pool of Web Workers that run the engine's work orders (`engine::job::work`) on other cores:
//! the page never decodes or hashes. Each worker runs the workers' own wasm (`worker.js` loads
//! `tensorscope-worker.js`, built for speed from `src/worker/`, served next to the viewer) and reads its own slices of the files: a `File` is structured-cloneable,
//! a remote file travels as its pinned URL. Orders go out in turn, up to `ORDERS_PER_WORKER`
//! to a worker at a time; replies come back as bytes and are merged in order, so results equal
//! the sequential job's to the bit. Where workers cannot start, [`Pool::on_page`] loads the
//! workers' wasm on the page itself (`inpage.js`) and hands it the same messages: the page's own
//! wasm holds no decoder.
//!
//! Messages: page → worker `{id, order, sources}` (the order as bytes, `Order::to_bytes`) and `{cancel: id}`;
//! worker → page `{id, progress: [done, total]}` and `{id, part}` (streamed output), then `{id, reply, read, requests}` (bytes
//! read per file, requests made) or
//! `{id, error, cancelled}`.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

use js_sys::{Array, Function, Promise, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::{future_to_promise, JsFuture};
use web_sys::{MessageEvent, Worker, WorkerOptions, WorkerType};

use super::driver::Cancel;
use super::source::Source;
use super::transfer::{get, object, source_to_js};
use crate::engine::job::work::{Order, Reply};
use crate::engine::job::RunError;

/// Workers at most, whatever `navigator.hardwareConcurrency` says: each holds its own wasm memory.
const MAX_WORKERS: usize = 4;

/// Orders a worker runs at once. Each order's next Blob read is under way while it decodes
/// (`driver::run`); a second order hides the gap between one order's end and the next's first
/// read. 64 MiB on 2 workers, click to result, MB/s with 1 / 2 / 4 orders each: Q4_K 264 / 284 /
/// 265, Q8_0 389 / 421 / 402, F32 526 / 590 / 423. Each order holds two reads (8 MiB at most each).
const ORDERS_PER_WORKER: usize = 2;

/// A running order's progress callback.
type OnProgress = Rc<dyn Fn(u64, u64)>;

/// Where streamed output goes (`.npy` parts), in order.
pub type OnPart = Rc<dyn Fn(Uint8Array)>;

/// An order posted and not yet answered.
struct Pending {
    resolve: Function,
    progress: OnProgress,
    part: Option<OnPart>,
}

/// Where the pool's messages go: a worker, or the workers' wasm on the page (its
/// `serve_on_page`, and the callback its answers go to).
#[derive(Clone)]
enum Port {
    Worker(Worker),
    Page { serve: Function, answer: Function },
}

impl Port {
    fn post(&self, msg: &JsValue) -> Result<(), JsValue> {
        match self {
            Port::Worker(w) => w.post_message(msg),
            Port::Page { serve, answer } => serve.call2(&JsValue::NULL, msg, answer).map(|_| ()),
        }
    }
}

/// The page's workers.
pub struct Pool {
    workers: Vec<Port>,
    pending: Rc<RefCell<HashMap<u32, Pending>>>,
    next_id: Cell<u32>,
    /// Set when a worker fails to start (no script, no wasm): the pool is not used again.
    broken: Rc<Cell<bool>>,
}

thread_local! {
    static POOL: RefCell<Option<Option<Rc<Pool>>>> = const { RefCell::new(None) };
    /// The workers' wasm on the page, once loaded (or failed to).
    static ON_PAGE: RefCell<Option<Promise>> = const { RefCell::new(None) };
}

impl Pool {
    /// The page's pool, started on first use; `None` where workers cannot run (no `Worker`, not
    /// a page, or a worker that failed to start).
    pub fn get() -> Option<Rc<Pool>> {
        let pool = POOL.with(|p| p.borrow_mut().get_or_insert_with(Pool::start).clone())?;
        (!pool.broken.get()).then_some(pool)
    }

    /// Workers in the pool (0: the page itself).
    pub fn size(&self) -> usize {
        self.workers.iter().filter(|p| matches!(p, Port::Worker(_))).count()
    }

    /// A pool of one that runs the workers' wasm on the page, for where workers cannot start:
    /// `inpage.js` (beside `worker.js`) loads it on first use. `None` when it cannot load.
    pub async fn on_page() -> Option<Rc<Pool>> {
        let loaded = ON_PAGE.with(|p| p.borrow_mut().get_or_insert_with(load_on_page).clone());
        let serve: Function = JsFuture::from(loaded).await.ok()?.dyn_into().ok()?;
        let pending: Rc<RefCell<HashMap<u32, Pending>>> = Rc::default();
        let pend = pending.clone();
        let answer = Closure::<dyn FnMut(JsValue)>::new(move |msg: JsValue| answer(&pend, &msg));
        let answer: Function = answer.into_js_value().unchecked_into();
        let port = Port::Page { serve, answer };
        Some(Rc::new(Pool { workers: vec![port], pending, next_id: Cell::new(1), broken: Rc::default() }))
    }

    fn start() -> Option<Rc<Pool>> {
        let window = web_sys::window()?;
        let cores = window.navigator().hardware_concurrency() as usize;
        let n = cores.clamp(1, MAX_WORKERS);
        let opts = WorkerOptions::new();
        opts.set_type(WorkerType::Module);
        let pending: Rc<RefCell<HashMap<u32, Pending>>> = Rc::default();
        let broken: Rc<Cell<bool>> = Rc::default();
        let mut workers = Vec::with_capacity(n);
        for _ in 0..n {
            let w = Worker::new_with_options(&worker_url(), &opts).ok()?;
            let pend = pending.clone();
            let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |e: MessageEvent| answer(&pend, &e.data()));
            w.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
            on_message.forget();
            let (pend, gone) = (pending.clone(), broken.clone());
            let on_error = Closure::<dyn FnMut(web_sys::Event)>::new(move |_| {
                // A worker that cannot start fails every order waiting: they rerun on the page.
                gone.set(true);
                for (_, p) in pend.borrow_mut().drain() {
                    let _ = p.resolve.call1(&JsValue::NULL, &JsValue::from_str("worker failed"));
                }
            });
            w.set_onerror(Some(on_error.as_ref().unchecked_ref()));
            on_error.forget();
            workers.push(Port::Worker(w));
        }
        Some(Rc::new(Pool { workers, pending, next_id: Cell::new(1), broken }))
    }

    /// Run `orders` over `sources` on the workers; their replies in order. `progress(done,
    /// total)` sums the orders' bytes; once `cancel` is set, running orders are told to stop.
    /// Output orders stream (`.npy`) goes to `on_part` as it comes, in order only for a single
    /// order. `Err(None)` when the workers failed (run the job on the page instead).
    pub async fn run(
        self: &Rc<Self>,
        orders: Vec<Order>,
        sources: &[Source],
        cancel: &Cancel,
        progress: impl Fn(u64, u64) + 'static,
        on_part: Option<OnPart>,
    ) -> Result<Vec<Reply>, Option<RunError>> {
        let n = orders.len();
        let orders = Rc::new(orders);
        let sources_js: Array = sources.iter().map(source_to_js).collect();
        let state = Rc::new(RunState {
            next: Cell::new(0),
            replies: RefCell::new((0..n).map(|_| None).collect()),
            done: RefCell::new(vec![(0, 0); n]),
            error: RefCell::new(None),
            progress: Box::new(progress),
            on_part,
        });
        // Lane `k` runs on worker `k % workers`: the first orders spread over every worker.
        let lanes: Array = (0..(self.workers.len() * ORDERS_PER_WORKER).min(n))
            .map(|lane| {
                let (pool, orders, state) = (self.clone(), orders.clone(), state.clone());
                let (sources_js, cancel, sources) = (sources_js.clone(), cancel.clone(), sources.to_vec());
                future_to_promise(async move {
                    pool.lane(lane, &orders, &sources_js, &sources, &cancel, &state).await;
                    Ok(JsValue::UNDEFINED)
                })
            })
            .map(JsValue::from)
            .collect();
        let _ = JsFuture::from(Promise::all(&lanes)).await;
        if let Some(e) = state.error.borrow_mut().take() {
            return Err(e);
        }
        if cancel.is_cancelled() {
            return Err(Some(RunError::Cancelled));
        }
        let replies: Option<Vec<Reply>> = state.replies.borrow_mut().drain(..).collect();
        replies.ok_or(Some(RunError::Read("a worker's reply is missing".into())))
    }

    /// One lane of worker `lane % workers` taking orders in turn until none are left, one fails,
    /// or the run is cancelled.
    async fn lane(
        &self,
        lane: usize,
        orders: &[Order],
        sources_js: &Array,
        sources: &[Source],
        cancel: &Cancel,
        s: &Rc<RunState>,
    ) {
        let w = lane % self.workers.len();
        loop {
            let i = s.next.get();
            if i >= orders.len() || s.error.borrow().is_some() || cancel.is_cancelled() {
                return;
            }
            s.next.set(i + 1);
            let id = self.next_id.get();
            self.next_id.set(id.wrapping_add(1));
            // The worker hears of a cancel at once (it aborts a read under way), not at its
            // next progress message: a stalled read sends none.
            let worker = self.workers[w].clone();
            cancel.on_cancel(move || {
                let _ = worker.post(&object(&[("cancel", JsValue::from(id))]));
            });
            let state = s.clone();
            let on_progress = Rc::new(move |done, total| {
                state.done.borrow_mut()[i] = (done, total);
                let (d, t) = state.done.borrow().iter().fold((0, 0), |(a, b), &(d, t)| (a + d, b + t));
                (state.progress)(d, t);
            });
            let answered = Promise::new(&mut |resolve, _| {
                let part = s.on_part.clone();
                self.pending.borrow_mut().insert(id, Pending { resolve, progress: on_progress.clone(), part });
            });
            let msg = object(&[
                ("id", JsValue::from(id)),
                ("order", Uint8Array::from(orders[i].to_bytes().as_slice()).into()),
                ("sources", sources_js.into()),
            ]);
            if self.workers[w].post(&msg).is_err() {
                self.pending.borrow_mut().remove(&id);
                *s.error.borrow_mut() = Some(None);
                return;
            }
            let answer = JsFuture::from(answered).await.unwrap_or(JsValue::NULL);
            match read_answer(&orders[i], &answer, sources) {
                Ok(reply) => s.replies.borrow_mut()[i] = Some(reply),
                Err(e) => {
                    let mut error = s.error.borrow_mut();
                    if error.is_none() {
                        *error = Some(e);
                    }
                    return;
                }
            }
        }
    }
}

/// What the lanes of one run share.
struct RunState {
    next: Cell<usize>,
    replies: RefCell<Vec<Option<Reply>>>,
    /// Per order, its last (done, total).
    done: RefCell<Vec<(u64, u64)>>,
    /// The first failure: `None` inside for workers that failed (rerun on the page).
    error: RefCell<Option<Option<RunError>>>,
    progress: Box<dyn Fn(u64, u64)>,
    on_part: Option<OnPart>,
}

/// A worker's message to the page: progress goes to its order's callback, a final answer
/// resolves its order.
fn answer(pending: &Rc<RefCell<HashMap<u32, Pending>>>, msg: &JsValue) {
    let Some(id) = get(msg, "id").as_f64().map(|v| v as u32) else { return };
    if let Ok(part) = get(msg, "part").dyn_into::<Uint8Array>() {
        let cb = pending.borrow().get(&id).and_then(|p| p.part.clone());
        if let Some(cb) = cb {
            cb(part);
        }
        return;
    }
    let progress = get(msg, "progress");
    if progress.is_object() {
        let p: Array = progress.unchecked_into();
        let (done, total) = (p.get(0).as_f64().unwrap_or(0.0) as u64, p.get(1).as_f64().unwrap_or(0.0) as u64);
        let cb = pending.borrow().get(&id).map(|p| p.progress.clone());
        if let Some(cb) = cb {
            cb(done, total);
        }
        return;
    }
    if let Some(p) = pending.borrow_mut().remove(&id) {
        let _ = p.resolve.call1(&JsValue::NULL, msg);
    }
}

/// The reply in a worker's final answer, with the bytes it read counted on the page's sources.
fn read_answer(order: &Order, answer: &JsValue, sources: &[Source]) -> Result<Reply, Option<RunError>> {
    if !answer.is_object() {
        return Err(None); // the worker failed
    }
    if let Some(e) = get(answer, "error").as_string() {
        if get(answer, "cancelled").as_bool() == Some(true) {
            return Err(Some(RunError::Cancelled));
        }
        return Err(Some(RunError::Read(e)));
    }
    let read = get(answer, "read");
    // The set's sources share one meter: the worker's requests count once.
    let mut requests = get(answer, "requests").as_f64().unwrap_or(0.0) as u64;
    if read.is_object() {
        let read: Array = read.unchecked_into();
        for (i, s) in sources.iter().enumerate() {
            let bytes = read.get(i as u32).as_f64().unwrap_or(0.0) as u64;
            match s {
                Source::Blob(b) => b.count_elsewhere(bytes),
                Source::Http(h) => h.count_elsewhere(bytes, std::mem::take(&mut requests)),
            }
        }
    }
    let bytes: Uint8Array = get(answer, "reply").dyn_into().map_err(|_| Some(RunError::Read("no reply".into())))?;
    Reply::from_bytes(order, &bytes.to_vec())
        .ok_or_else(|| Some(RunError::Read("a worker's reply is malformed".into())))
}

/// `worker.js` beside the wasm: relative to the page, or to the JS API module when a page loads
/// the engine from elsewhere (`tensorscope.mjs` sets `__tensorscopeBase`).
fn worker_url() -> String {
    beside("worker.js")
}

/// The URL of `file`, served beside the engine's files.
fn beside(file: &str) -> String {
    js_sys::Reflect::get(&js_sys::global(), &JsValue::from_str("__tensorscopeBase"))
        .ok()
        .and_then(|b| b.as_string())
        .map_or_else(|| file.to_owned(), |base| format!("{base}{file}"))
}

/// Load `inpage.js` as a module script: the promise of the workers' `serve_on_page` it
/// announces, rejected when the script cannot load.
fn load_on_page() -> Promise {
    Promise::new(&mut |resolve, reject| {
        let (Some(window), Some(head)) =
            (web_sys::window(), web_sys::window().and_then(|w| w.document()).and_then(|d| d.head()))
        else {
            let _ = reject.call1(&JsValue::NULL, &JsValue::from_str("not a page"));
            return;
        };
        let on_ready = Closure::<dyn FnMut(JsValue)>::new(move |e: JsValue| {
            let _ = resolve.call1(&JsValue::NULL, &get(&e, "detail"));
        });
        let _ = window.add_event_listener_with_callback("tensorscope-inpage", on_ready.as_ref().unchecked_ref());
        on_ready.forget();
        let Ok(script) = head.owner_document().map_or(Err(JsValue::NULL), |d| d.create_element("script")) else {
            let _ = reject.call1(&JsValue::NULL, &JsValue::from_str("no script element"));
            return;
        };
        let failed = reject.clone();
        let on_error = Closure::<dyn FnMut(JsValue)>::new(move |_| {
            let _ = failed.call1(&JsValue::NULL, &JsValue::from_str("inpage.js did not load"));
        });
        let _ = script.add_event_listener_with_callback("error", on_error.as_ref().unchecked_ref());
        on_error.forget();
        let _ = script.set_attribute("type", "module");
        let _ = script.set_attribute("src", &beside("inpage.js"));
        let _ = head.append_child(&script);
    })
}
