//! A request's idle timer: it aborts the request once the server has sent nothing for
//! [`IDLE_MS`], so a server that stalls ends the request with an error instead of hanging it.

use std::cell::Cell;
use std::rc::Rc;

use js_sys::{Function, Reflect};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::AbortController;

/// Milliseconds a request may go without a byte.
pub const IDLE_MS: i32 = 20_000;

/// Aborts its controller once [`IDLE_MS`] pass without a [`Watchdog::pet`]; stops when dropped.
pub struct Watchdog {
    fired: Rc<Cell<bool>>,
    timer: Cell<Option<JsValue>>,
    on_timeout: Closure<dyn FnMut()>,
}

impl Watchdog {
    /// A watchdog over `ctrl`, started.
    pub fn new(ctrl: &AbortController) -> Watchdog {
        let fired = Rc::new(Cell::new(false));
        let (ctrl, flag) = (ctrl.clone(), fired.clone());
        let on_timeout = Closure::<dyn FnMut()>::new(move || {
            flag.set(true);
            ctrl.abort();
        });
        let dog = Watchdog { fired, timer: Cell::new(None), on_timeout };
        dog.pet();
        dog
    }

    /// Bytes came: the idle time starts again.
    pub fn pet(&self) {
        self.stop();
        let timer = global_fn("setTimeout")
            .and_then(|f| f.call2(&js_sys::global(), self.on_timeout.as_ref(), &JsValue::from(IDLE_MS)).ok());
        self.timer.set(timer);
    }

    /// Whether the request was aborted for want of bytes.
    pub fn fired(&self) -> bool {
        self.fired.get()
    }

    fn stop(&self) {
        if let (Some(id), Some(clear)) = (self.timer.take(), global_fn("clearTimeout")) {
            let _ = clear.call1(&js_sys::global(), &id);
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `name` of the global scope (a window's or a worker's).
fn global_fn(name: &str) -> Option<Function> {
    Reflect::get(&js_sys::global(), &name.into()).ok()?.dyn_into().ok()
}
