//! Browser entry point: install the panic hook and mount the viewer.

#[cfg(target_arch = "wasm32")]
fn main() {
    console_error_panic_hook::set_once();
    tensorscope::io::seed_hashes();
    // In a worker (worker.js) there is no page to mount: it calls `worker_main` instead; a page
    // that loads the JS API (tensorscope.mjs) wants the engine, not the viewer.
    if web_sys::window().is_some() && !tensorscope::api::api_only() {
        leptos::mount::mount_to_body(tensorscope::ui::App);
    }
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!("tensorscope-web is the browser build; run `tensorscope` for the command line");
    std::process::exit(2);
}
