//! A GGUF array value: length and first items; expands on demand to every item (read from the
//! file when the header kept only the first ones), searchable (tokenizer tokens).

use std::sync::Arc;

use leptos::prelude::*;
use leptos::task::spawn_local;

use super::search_box::SearchBox;
use super::state::AppState;
use crate::engine::gguf::{Array, Value};
use crate::engine::viewer::array_preview;
use crate::io::values::array_items;
use crate::io::Cancel;

/// Items shown at once in an expanded array.
const SHOWN: usize = 200;

/// One array: a preview line, and a searchable item list when expanded.
#[component]
pub fn MetaArray(
    array: Array,
    /// The file the array was read from.
    file: usize,
) -> impl IntoView {
    let state = AppState::get();
    let open = RwSignal::new(false);
    let items: RwSignal<Option<Arc<Vec<Value>>>> = RwSignal::new(None);
    let error = RwSignal::new(None::<String>);
    let query = RwSignal::new(String::new());
    let preview = format!("{} items: {}", array.len, array_preview(&array.items, array.len, 8));
    let array = Arc::new(array);
    let expand = {
        let array = array.clone();
        move |_| {
            open.update(|o| *o = !*o);
            if items.with_untracked(Option::is_some) {
                return;
            }
            if array.items.len() as u64 >= array.len {
                items.set(Some(Arc::new(array.items.clone())));
                return;
            }
            // Read from the file holding the key, in that file's byte order.
            let src = state.sources();
            let big_endian = state.cp.with_untracked(|cp| cp.as_ref().and_then(|c| c.big_endian.get(file).copied()));
            let big_endian = big_endian.unwrap_or(false);
            let array = array.clone();
            spawn_local(async move {
                match array_items(&array, &src, file, big_endian, 0, array.len, &Cancel::new()).await {
                    Ok(v) => items.set(Some(Arc::new(v))),
                    Err(e) => error.set(Some(e.to_string())),
                }
            });
        }
    };
    let list = move || {
        let all = items.get()?;
        let q = query.get().to_lowercase();
        let mut matched = 0usize;
        let mut shown = Vec::new();
        for (i, v) in all.iter().enumerate() {
            let text = v.to_string();
            if q.is_empty() || text.to_lowercase().contains(&q) {
                matched += 1;
                if shown.len() < SHOWN {
                    shown.push((i, text));
                }
            }
        }
        let note = if matched > shown.len() {
            format!("{matched} matching items, showing the first {}", shown.len())
        } else {
            format!("{matched} matching items")
        };
        Some(view! {
            <p class="muted" data-testid="array-count">{note}</p>
            <ol class="items" data-testid="array-items">
                {shown
                    .into_iter()
                    .map(|(i, t)| view! { <li><span class="muted idx">{i}</span><code>{t}</code></li> })
                    .collect_view()}
            </ol>
        })
    };
    view! {
        <div class="array" data-testid="meta-array">
            <span data-testid="meta-text">{preview}</span>
            " "
            <button class="link" data-testid="array-expand" on:click=expand>
                {move || if open.get() { "Hide items" } else { "Show items" }}
            </button>
            <Show when=move || open.get()>
                <div class="array-items">
                    <SearchBox value=query placeholder="Search items" testid="array-search" />
                    {move || error.get().map(|e| view! { <p class="sev-error">{e}</p> })}
                    {list}
                </div>
            </Show>
        </div>
    }
}
