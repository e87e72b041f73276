//! A progress bar for `done` of `total` units.

use leptos::prelude::*;

/// `<progress>` with a percentage label.
#[component]
pub fn ProgressBar(#[prop(into)] done: Signal<u64>, #[prop(into)] total: Signal<u64>) -> impl IntoView {
    let pct = move || {
        let t = total.get().max(1);
        (done.get().min(t) as f64 / t as f64 * 100.0).round()
    };
    view! {
        <span class="progress" data-testid="progress">
            <progress max="100" value=move || pct().to_string()></progress>
            <span class="muted">{move || format!(" {}%", pct())}</span>
        </span>
    }
}
