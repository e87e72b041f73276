//! Browser tests of the Leptos viewer, run in headless Chromium by wasm-bindgen-test-runner:
//! `cargo test --target wasm32-unknown-unknown --test web` (see scripts/test.sh).
#![cfg(target_arch = "wasm32")]

use wasm_bindgen::JsCast;
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

wasm_bindgen_test_configure!(run_in_browser);

/// A fresh `<div>` appended to `<body>`, to mount a component into.
fn host() -> web_sys::HtmlElement {
    let document = leptos::prelude::document();
    let div = document.create_element("div").expect("create div");
    document.body().expect("body").append_child(&div).expect("append div");
    div.unchecked_into()
}

#[wasm_bindgen_test]
fn app_mounts_with_heading_and_tagline() {
    let host = host();
    let handle = leptos::mount::mount_to(host.clone(), tensorscope::ui::App);

    let app = host.query_selector("[data-testid=app]").expect("valid selector").expect("[data-testid=app] is rendered");
    let heading = app.query_selector("h1").unwrap().expect("an <h1>");
    assert_eq!(heading.text_content().as_deref(), Some("Tensorscope"));
    let text = app.text_content().unwrap_or_default();
    assert!(text.contains("safetensors and GGUF"), "app text: {text:?}");

    drop(handle); // unmounts
    assert!(host.query_selector("[data-testid=app]").unwrap().is_none());
}
