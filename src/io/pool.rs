//! Running async tasks with a bounded number in flight (remote shard headers: twelve requests
//! asked for, of which browsers send six per host at once), results kept in task order.

use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;

use wasm_bindgen_futures::{spawn_local, JsFuture};

struct State<T> {
    next: usize,
    results: Vec<Option<T>>,
    running: usize,
    done: Option<js_sys::Function>,
}

/// `task(i)` for every `i` in `0..n`, at most `limit` at a time; the outputs in order of `i`.
pub async fn run_all<T, F, Fut>(n: usize, limit: usize, task: F) -> Vec<T>
where
    T: 'static,
    F: Fn(usize) -> Fut + 'static,
    Fut: Future<Output = T> + 'static,
{
    if n == 0 {
        return Vec::new();
    }
    let workers = limit.clamp(1, n);
    let state =
        Rc::new(RefCell::new(State { next: 0, results: (0..n).map(|_| None).collect(), running: workers, done: None }));
    let task = Rc::new(task);
    let finished = js_sys::Promise::new(&mut |resolve, _| state.borrow_mut().done = Some(resolve));
    for _ in 0..workers {
        let (state, task) = (state.clone(), task.clone());
        spawn_local(async move {
            loop {
                let i = {
                    let mut s = state.borrow_mut();
                    let i = s.next;
                    s.next += 1;
                    i
                };
                if i >= n {
                    break;
                }
                let out = task(i).await;
                state.borrow_mut().results[i] = Some(out);
            }
            let mut s = state.borrow_mut();
            s.running -= 1;
            if s.running == 0 {
                if let Some(done) = s.done.take() {
                    let _ = done.call0(&wasm_bindgen::JsValue::NULL);
                }
            }
        });
    }
    let _ = JsFuture::from(finished).await;
    let results = std::mem::take(&mut state.borrow_mut().results);
    results.into_iter().map(|r| r.expect("every task ran")).collect()
}
