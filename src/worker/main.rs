//! The workers' wasm: `worker.js` loads it and calls [`worker::worker_main`]. It holds the jobs,
//! codecs, kernels and hashing, and neither the viewer nor its framework; the page's wasm holds
//! no `worker_main`. Built for speed (the `worker` profile), apart from the page's, which is
//! built for size.

#[cfg(target_arch = "wasm32")]
mod worker;

#[cfg(target_arch = "wasm32")]
fn main() {
    console_error_panic_hook::set_once();
    tensorscope_webio::seed_hashes();
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!("tensorscope-worker is the browser workers' build; run `tensorscope` for the command line");
    std::process::exit(2);
}
