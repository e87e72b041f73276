//! A button that copies a text (a tensor name) to the clipboard.

use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::io::browser;

/// "Copy" for `text`; shows "Copied" for a moment after success.
#[component]
pub fn CopyButton(#[prop(into)] text: Signal<String>, #[prop(default = "Copy")] label: &'static str) -> impl IntoView {
    let copied = RwSignal::new(false);
    let click = move |ev: leptos::ev::MouseEvent| {
        ev.stop_propagation();
        let t = text.get_untracked();
        spawn_local(async move {
            let ok = browser::copy_text(&t).await;
            copied.set(ok);
        });
    };
    view! {
        <button class="copy" data-testid="copy" title="Copy to the clipboard" on:click=click>
            {move || if copied.get() { "Copied" } else { label }}
        </button>
    }
}
