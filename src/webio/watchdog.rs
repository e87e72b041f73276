//! A request's watchdog: it aborts the request once the server has sent nothing for
//! [`IDLE_MS`] (a stalled server ends the request with an error instead of hanging it), or as
//! soon as the job that asked for it is cancelled.

use std::cell::Cell;
use std::rc::Rc;

use js_sys::{Function, Reflect};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::AbortController;

use super::cancel::{now_ms, Cancel};

/// Milliseconds a request may go without a byte.
pub const IDLE_MS: f64 = 20_000.0;
/// How often the watchdog looks.
const TICK_MS: i32 = 200;

/// Why a watchdog aborted its request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bark {
    Idle,
    Cancelled,
}

/// Watches one request; stops when dropped.
pub struct Watchdog {
    last: Rc<Cell<f64>>,
    barked: Rc<Cell<Option<Bark>>>,
    timer: Option<JsValue>,
    _tick: Closure<dyn FnMut()>,
}

impl Watchdog {
    /// A watchdog over `ctrl`, for a job cancelled through `cancel` (if any), started.
    pub fn new(ctrl: &AbortController, cancel: Option<&Cancel>) -> Watchdog {
        let (last, barked) = (Rc::new(Cell::new(now_ms())), Rc::new(Cell::new(None)));
        let (ctrl, cancel, seen, bark) = (ctrl.clone(), cancel.cloned(), last.clone(), barked.clone());
        let tick = Closure::<dyn FnMut()>::new(move || {
            let why = if cancel.as_ref().is_some_and(Cancel::is_cancelled) {
                Some(Bark::Cancelled)
            } else if now_ms() - seen.get() > IDLE_MS {
                Some(Bark::Idle)
            } else {
                None
            };
            if why.is_some() && bark.get().is_none() {
                bark.set(why);
                ctrl.abort();
            }
        });
        let timer = global_fn("setInterval")
            .and_then(|f| f.call2(&js_sys::global(), tick.as_ref(), &JsValue::from(TICK_MS)).ok());
        Watchdog { last, barked, timer, _tick: tick }
    }

    /// Bytes came: the idle time starts again.
    pub fn pet(&self) {
        self.last.set(now_ms());
    }

    /// Why the request was aborted, if the watchdog aborted it.
    pub fn barked(&self) -> Option<Bark> {
        self.barked.get()
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        if let (Some(id), Some(clear)) = (self.timer.take(), global_fn("clearInterval")) {
            let _ = clear.call1(&js_sys::global(), &id);
        }
    }
}

/// `name` of the global scope (a window's or a worker's).
fn global_fn(name: &str) -> Option<Function> {
    Reflect::get(&js_sys::global(), &name.into()).ok()?.dyn_into().ok()
}
