//! Where checkpoints come in: drop files or folders, pick files or a folder, or open a sample.

use leptos::prelude::*;
use leptos::task::spawn_local;
use wasm_bindgen::JsCast;

use super::state::{AppState, SAMPLES};
use crate::io::entries::{from_drop, from_file_list};

fn label(n: usize, first: &str) -> String {
    if n == 1 {
        first.to_owned()
    } else {
        format!("{n} files")
    }
}

/// The drop zone, the file and folder pickers and the sample buttons.
#[component]
pub fn DropZone() -> impl IntoView {
    let state = AppState::get();
    let over = RwSignal::new(false);
    let picked = move |ev: leptos::ev::Event| {
        let Some(input) = ev.target().and_then(|t| t.dyn_into::<web_sys::HtmlInputElement>().ok()) else { return };
        if let Some(files) = input.files() {
            let inputs = from_file_list(&files);
            let l = label(inputs.len(), inputs.first().map_or("", |i| i.path.as_str()));
            state.open(inputs, l);
        }
        input.set_value("");
    };
    let dropped = move |ev: leptos::ev::DragEvent| {
        ev.prevent_default();
        over.set(false);
        let Some(dt) = ev.data_transfer() else { return };
        spawn_local(async move {
            match from_drop(&dt).await {
                Ok(inputs) => {
                    let l = label(inputs.len(), inputs.first().map_or("", |i| i.path.as_str()));
                    state.open(inputs, l)
                }
                Err(e) => state.error.set(Some(format!("could not read what was dropped: {e}"))),
            }
        });
    };
    view! {
        <section
            class="drop"
            class:over=move || over.get()
            data-testid="drop-zone"
            on:dragover=move |ev: leptos::ev::DragEvent| {
                ev.prevent_default();
                over.set(true);
            }
            on:dragleave=move |_| over.set(false)
            on:drop=dropped
        >
            <p>
                "Drop a checkpoint here — a file, several shards or a whole model folder. "
                "Only headers are read; nothing is uploaded."
            </p>
            <div class="pickers">
                <label class="button">
                    "Open files…"
                    <input type="file" multiple data-testid="file-input" class="visually-hidden" on:change=picked />
                </label>
                <label class="button">
                    "Open a folder…"
                    <input
                        type="file"
                        multiple
                        prop:webkitdirectory=true
                        data-testid="folder-input"
                        class="visually-hidden"
                        on:change=picked
                    />
                </label>
                <span class="muted">"Samples:"</span>
                {SAMPLES
                    .into_iter()
                    .map(|s| {
                        view! {
                            <button class="link" data-testid="sample" on:click=move |_| state.open_sample(s)>
                                {s}
                            </button>
                        }
                    })
                    .collect_view()}
            </div>
        </section>
    }
}
