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
    // A drop anywhere on the page opens what was dropped: without this, a drop outside the zone
    // makes the browser navigate away to the raw file.
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
    let on_over = window_event_listener(leptos::ev::dragover, |ev| ev.prevent_default());
    let on_drop = window_event_listener(leptos::ev::drop, dropped);
    on_cleanup(move || {
        on_over.remove();
        on_drop.remove();
    });
    let url_text = RwSignal::new(String::new());
    let open_url = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let urls: Vec<String> = url_text.get_untracked().split_whitespace().map(str::to_owned).collect();
        state.open_urls(urls);
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
            on:drop=move |_| over.set(false)
        >
            <p>
                "Drop a checkpoint anywhere on this page — a file, several shards or a whole model folder. "
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
                                {s.label}
                            </button>
                        }
                    })
                    .collect_view()}
            </div>
            <form class="url-form" data-testid="url-form" on:submit=open_url>
                <input
                    type="text"
                    data-testid="url-input"
                    placeholder="https://…/model.safetensors, …/model.safetensors.index.json or hf://owner/repo/file.gguf"
                    aria-label="Checkpoint URL"
                    prop:value=move || url_text.get()
                    on:input=move |ev| url_text.set(event_target_value(&ev))
                />
                <button type="submit" data-testid="url-open">"Open URL"</button>
            </form>
        </section>
    }
}
