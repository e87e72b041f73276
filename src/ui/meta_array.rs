//! A GGUF array value: length and first items; expands to pages of items read from the file on
//! demand (a 150k-token vocabulary is never held whole), and searches every item by streaming
//! through it, keeping only the first matches.

use std::sync::Arc;

use leptos::prelude::*;
use leptos::task::spawn_local;

use super::search_box::SearchBox;
use super::state::AppState;
use crate::engine::gguf::{Array, ArrayPage};
use crate::engine::viewer::array_preview;
use crate::io::values::array_items;
use crate::io::Cancel;

/// Items shown at once: a page, or the first matches of a search.
const PAGE: u64 = 200;

/// One array: a preview line, and a paged, searchable item list when expanded.
#[component]
pub fn MetaArray(
    array: Array,
    /// The file the array was read from.
    file: usize,
) -> impl IntoView {
    let state = AppState::get();
    let open = RwSignal::new(false);
    let first = RwSignal::new(0u64);
    let page: RwSignal<Option<Arc<ArrayPage>>> = RwSignal::new(None);
    let error = RwSignal::new(None::<String>);
    let query = RwSignal::new(String::new());
    let cancel = StoredValue::new_local(Cancel::new());
    let preview = format!("{} items: {}", array.len, array_preview(&array.items, array.len, 8));
    let len = array.len;
    let array = Arc::new(array);
    // Load the page (or search) asked for whenever it changes while the list is open.
    Effect::new(move |_| {
        if !open.get() {
            return;
        }
        let (from, q) = (first.get(), query.get());
        cancel.with_value(Cancel::cancel);
        let c = Cancel::new();
        cancel.set_value(c.clone());
        let big_endian =
            state.cp.with_untracked(|cp| cp.as_ref().and_then(|cp| cp.big_endian.get(file).copied())).unwrap_or(false);
        let (src, array) = (state.sources(), array.clone());
        spawn_local(async move {
            let q = q.trim();
            let query = (!q.is_empty()).then_some(q);
            let r = array_items(&array, &src, file, big_endian, from, PAGE, query, &c).await;
            if c.is_cancelled() {
                return;
            }
            match r {
                Ok(p) => {
                    error.set(None);
                    page.set(Some(Arc::new(p)));
                }
                Err(e) => error.set(Some(e.to_string())),
            }
        });
    });
    on_cleanup(move || cancel.with_value(Cancel::cancel));
    let searching = move || !query.with(|q| q.trim().is_empty());
    let list = move || {
        let p = page.get()?;
        let note = if searching() {
            let shown = p.items.len() as u64;
            if p.matched > shown {
                format!("{} matching items, showing the first {shown}", p.matched)
            } else {
                format!("{} matching items", p.matched)
            }
        } else {
            let from = first.get();
            format!("items {}–{} of {len}", from, from + p.items.len() as u64)
        };
        Some(view! {
            <p class="muted" data-testid="array-count">{note}</p>
            <ol class="items" data-testid="array-items">
                {p.items
                    .iter()
                    .map(|(i, v)| view! { <li><span class="muted idx">{*i}</span><code>{v.to_string()}</code></li> })
                    .collect_view()}
            </ol>
        })
    };
    let pager = move || {
        (!searching() && len > PAGE).then(|| {
            view! {
                <div class="pager">
                    <button data-testid="array-prev" disabled=move || first.get() == 0
                        on:click=move |_| first.update(|f| *f = f.saturating_sub(PAGE))>"Previous"</button>
                    <button data-testid="array-next" disabled=move || first.get() + PAGE >= len
                        on:click=move |_| first.update(|f| *f += PAGE)>"Next"</button>
                </div>
            }
        })
    };
    view! {
        <div class="array" data-testid="meta-array">
            <span data-testid="meta-text">{preview}</span>
            " "
            <button class="link" data-testid="array-expand" on:click=move |_| open.update(|o| *o = !*o)>
                {move || if open.get() { "Hide items" } else { "Show items" }}
            </button>
            <Show when=move || open.get()>
                <div class="array-items">
                    <SearchBox value=query placeholder="Search items" testid="array-search" />
                    {move || error.get().map(|e| view! { <p class="sev-error">{e}</p> })}
                    {pager}
                    {list}
                </div>
            </Show>
        </div>
    }
}
