//! Metadata: `__metadata__` strings or every GGUF key with its type; long text shown in full.

use leptos::prelude::*;

use super::search_box::SearchBox;
use super::state::AppState;
use super::MetaArray;
use crate::engine::gguf::Value;
use crate::engine::hidden_text::reveal;
use crate::engine::model::MetaValue;
use crate::engine::viewer::{is_long_text, meta_type};

/// Text shown as a block when long or multi-line, inline otherwise; always as text.
#[component]
fn MetaText(text: String) -> impl IntoView {
    if is_long_text(&text) {
        view! { <pre class="longtext" data-testid="meta-text">{reveal(&text)}</pre> }.into_any()
    } else {
        view! { <span data-testid="meta-text">{reveal(&text)}</span> }.into_any()
    }
}

/// Every metadata key of the open checkpoint, filterable by key.
#[component]
pub fn MetadataView() -> impl IntoView {
    let state = AppState::get();
    let filter = RwSignal::new(String::new());
    let rows = move || {
        let cp = state.cp.get()?;
        let f = filter.get().to_lowercase();
        let rows = cp
            .metadata
            .iter()
            .enumerate()
            .filter(|(_, (k, _))| f.is_empty() || k.to_lowercase().contains(&f))
            .map(|(i, (k, v))| {
                let file = cp.meta_file.get(i).copied().unwrap_or(0);
                let value = match v {
                    MetaValue::Text(s) => view! { <MetaText text=s.clone() /> }.into_any(),
                    MetaValue::Gguf(Value::Array(a)) => {
                        view! { <MetaArray array=(**a).clone() file=file /> }.into_any()
                    }
                    MetaValue::Gguf(Value::String(s)) => view! { <MetaText text=s.clone() /> }.into_any(),
                    MetaValue::Gguf(v) => view! { <span data-testid="meta-text">{v.to_string()}</span> }.into_any(),
                };
                view! {
                    <tr data-testid="meta-row">
                        <td><code data-testid="meta-key">{reveal(k)}</code></td>
                        <td class="muted" data-testid="meta-type">{meta_type(v)}</td>
                        <td class="meta-value">{value}</td>
                    </tr>
                }
            })
            .collect_view();
        Some(rows)
    };
    view! {
        <section data-testid="metadata">
            <SearchBox value=filter placeholder="Filter keys" testid="meta-filter" />
            <table>
                <thead><tr><th>"Key"</th><th>"Type"</th><th>"Value"</th></tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </section>
    }
}
