//! The Leptos viewer. Components only: logic lives in the engine.

use leptos::prelude::*;

/// The root component of the viewer.
#[component]
pub fn App() -> impl IntoView {
    view! {
        <main data-testid="app">
            <h1>"Tensorscope"</h1>
            <p data-testid="tagline">"Look inside safetensors and GGUF checkpoints without loading them."</p>
        </main>
    }
}
