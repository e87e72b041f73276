//! "Export report": downloads the JSON report of DESIGN.md, byte for byte as the CLI prints it.

use leptos::prelude::*;

use super::state::AppState;
use crate::engine::report::Report;
use crate::io::browser;

/// Downloads `tensorscope-report.json` for the open checkpoint.
#[component]
pub fn ExportButton() -> impl IntoView {
    let state = AppState::get();
    let export = move |_| {
        let Some(cp) = state.cp.get_untracked() else { return };
        let text = Report::inspect(&cp).to_text();
        let parts = js_sys::Array::of1(&browser::part(text.as_bytes()));
        let result =
            browser::blob_of(&parts, "application/json").and_then(|b| browser::download(&b, "tensorscope-report.json"));
        if let Err(e) = result {
            state.error.set(Some(format!("export failed: {e}")));
        }
    };
    view! {
        <button data-testid="export-report" disabled=move || state.cp.with(Option::is_none) on:click=export>
            "Export report"
        </button>
    }
}
