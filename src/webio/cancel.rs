//! A cancellation flag shared between the UI and a running job, and the clock jobs pace
//! themselves by: what the sources, the watchdog and the driver all use.

use std::cell::Cell;
use std::rc::Rc;

/// A cancellation flag shared between the UI and a running job.
#[derive(Clone, Default)]
pub struct Cancel(Rc<CancelState>);

#[derive(Default)]
struct CancelState {
    cancelled: Cell<bool>,
    /// Told once, when cancelled (a worker running part of the job is sent word).
    listeners: std::cell::RefCell<Vec<Box<dyn Fn()>>>,
}

impl std::fmt::Debug for Cancel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Cancel({})", self.is_cancelled())
    }
}

impl Cancel {
    /// A fresh, not cancelled flag.
    pub fn new() -> Self {
        Cancel::default()
    }
    /// Ask the job to stop at its next chunk (a read under way is aborted).
    pub fn cancel(&self) {
        if !self.0.cancelled.replace(true) {
            for tell in std::mem::take(&mut *self.0.listeners.borrow_mut()) {
                tell();
            }
        }
    }
    /// Whether [`Cancel::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.cancelled.get()
    }
    /// Call `tell` when cancelled (at once if already).
    pub fn on_cancel(&self, tell: impl Fn() + 'static) {
        if self.is_cancelled() {
            tell();
        } else {
            self.0.listeners.borrow_mut().push(Box::new(tell));
        }
    }
}

thread_local! {
    /// This page's or worker's `performance`, found once: a worker asked for the page's window
    /// on every call (twice a piece fed), and spent 2-5 ms of a histogram on the failed lookups.
    static CLOCK: Option<web_sys::Performance> = js_sys::Reflect::get(&js_sys::global(), &"performance".into())
        .ok()
        .and_then(|p| wasm_bindgen::JsCast::dyn_into(p).ok());
}

/// Milliseconds on the page's or worker's clock (`performance.now()`, from its start; where
/// there is none, `Date.now()`, from 1970): for differences only.
pub fn now_ms() -> f64 {
    CLOCK.with(|c| c.as_ref().map_or_else(js_sys::Date::now, web_sys::Performance::now))
}
