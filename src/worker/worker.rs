//! Inside a worker of the page's pool: `worker.js` loads this wasm and calls
//! [`worker_main`], which runs each order posted by the page with the same driver the page uses
//! and posts back progress and the reply's bytes. Where workers cannot start, `inpage.js` loads
//! this wasm on the page itself and hands each message to [`serve_on_page`]: the same orders,
//! answered through a callback.

use std::cell::RefCell;
use std::collections::HashMap;

use js_sys::{Array, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{DedicatedWorkerGlobalScope, MessageEvent};

use tensorscope_values::job::work::{order_job, Order};
use tensorscope_values::job::{Job as _, RunError};
use tensorscope_webio::driver::{now_ms, run, Cancel};
use tensorscope_webio::http::Meter;
use tensorscope_webio::source::Source;
use tensorscope_webio::transfer::{get, object, source_from_js};

/// Milliseconds between progress messages.
const PROGRESS_MS: f64 = 100.0;

thread_local! {
    /// The cancel flag of each order running here, by id.
    static RUNNING: RefCell<HashMap<u32, Cancel>> = RefCell::new(HashMap::new());
}

/// Start serving orders: `early` holds the messages that arrived while the wasm loaded.
#[wasm_bindgen]
pub fn worker_main(early: Array) {
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new(|e: MessageEvent| handle(e.data(), Outlet::Worker));
    scope().set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    on_message.forget();
    for e in early.iter() {
        handle(get(&e, "data"), Outlet::Worker);
    }
}

/// Serve one message of the page's pool on the page itself: what a worker would post back goes
/// to `answer`.
#[wasm_bindgen]
pub fn serve_on_page(msg: JsValue, answer: js_sys::Function) {
    handle(msg, Outlet::Page(answer));
}

fn scope() -> DedicatedWorkerGlobalScope {
    js_sys::global().unchecked_into()
}

/// Where the answers to an order go.
#[derive(Clone)]
enum Outlet {
    /// Posted to the page that runs this worker.
    Worker,
    /// Handed to the page's callback (this wasm runs on the page).
    Page(js_sys::Function),
}

impl Outlet {
    fn post(&self, msg: &JsValue, transfer: Option<&JsValue>) {
        let _ = match (self, transfer) {
            (Outlet::Worker, Some(t)) => scope().post_message_with_transfer(msg, &Array::of1(t)),
            (Outlet::Worker, None) => scope().post_message(msg),
            (Outlet::Page(answer), _) => answer.call1(&JsValue::NULL, msg).map(|_| ()),
        };
    }
}

fn handle(msg: JsValue, out: Outlet) {
    if let Some(id) = get(&msg, "cancel").as_f64() {
        RUNNING.with(|r| r.borrow().get(&(id as u32)).map(Cancel::cancel));
        return;
    }
    let Some(id) = get(&msg, "id").as_f64().map(|v| v as u32) else { return };
    wasm_bindgen_futures::spawn_local(async move {
        let meter = Meter::default();
        let answer = match serve(id, &msg, &meter, &out).await {
            Ok((reply, sources)) => {
                let bytes = Uint8Array::from(reply.as_slice());
                let read: Array = sources.iter().map(|s| JsValue::from(s.bytes_read() as f64)).collect();
                let fields = [
                    ("id", JsValue::from(id)),
                    ("reply", bytes.clone().into()),
                    ("read", read.into()),
                    ("requests", JsValue::from(meter.requests() as f64)),
                ];
                out.post(&object(&fields), Some(&bytes.buffer()));
                return;
            }
            Err(e) => e,
        };
        let cancelled = answer == RunError::Cancelled;
        let fields = [
            ("id", JsValue::from(id)),
            ("error", JsValue::from_str(&answer.to_string())),
            ("cancelled", JsValue::from(cancelled)),
        ];
        out.post(&object(&fields), None);
    });
}

/// Run the order in `msg`: its reply's bytes, and the sources it read.
async fn serve(id: u32, msg: &JsValue, meter: &Meter, out: &Outlet) -> Result<(Vec<u8>, Vec<Source>), RunError> {
    let bad = |what: &str| RunError::Read(format!("the page sent {what}"));
    let order = get(msg, "order")
        .dyn_into::<Uint8Array>()
        .ok()
        .and_then(|b| Order::from_bytes(&b.to_vec()))
        .ok_or_else(|| bad("no order"))?;
    let sources_js: Array = get(msg, "sources").dyn_into().map_err(|_| bad("no sources"))?;
    let sources =
        sources_js.iter().map(|s| source_from_js(&s, meter)).collect::<Result<Vec<_>, _>>().map_err(RunError::Read)?;
    let job = order_job(&order).map_err(|e| RunError::Read(e.to_string()))?;
    let cancel = Cancel::new();
    RUNNING.with(|r| r.borrow_mut().insert(id, cancel.clone()));
    let mut last = 0.0;
    let result = run(job, &sources, &cancel, |j| {
        let output = j.take_output();
        if !output.is_empty() {
            let part = Uint8Array::from(output.as_slice());
            out.post(&object(&[("id", JsValue::from(id)), ("part", part.clone().into())]), Some(&part.buffer()));
        }
        let now = now_ms();
        if now - last > PROGRESS_MS {
            last = now;
            let p = j.progress();
            let progress = Array::of2(&JsValue::from(p.done as f64), &JsValue::from(p.total as f64));
            out.post(&object(&[("id", JsValue::from(id)), ("progress", progress.into())]), None);
        }
    })
    .await;
    RUNNING.with(|r| r.borrow_mut().remove(&id));
    Ok((result?.to_bytes(), sources))
}
