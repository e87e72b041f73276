//! The Leptos viewer. Components only, one per file: logic lives in the engine.

mod adapter_view;
mod check_panel;
mod copy_button;
mod diff_panel;
mod drop_zone;
mod estimate;
mod export_button;
mod findings;
mod histogram_chart;
mod imports_view;
mod meta_array;
mod metadata;
mod progress_bar;
mod search_box;
pub mod state;
mod summary;
mod tensor_detail;
mod tensor_table;
mod theme_toggle;
mod tokenizer_view;

use leptos::prelude::*;

pub use adapter_view::AdapterView;
pub use check_panel::CheckPanel;
pub use copy_button::CopyButton;
pub use diff_panel::DiffPanel;
pub use drop_zone::DropZone;
pub use estimate::EstimateView;
pub use export_button::ExportButton;
pub use findings::FindingsView;
pub use histogram_chart::HistogramChart;
pub use imports_view::ImportsView;
pub use meta_array::MetaArray;
pub use metadata::MetadataView;
pub use progress_bar::ProgressBar;
pub use summary::SummaryView;
pub use tensor_detail::TensorDetail;
pub use tensor_table::TensorTable;
pub use theme_toggle::ThemeToggle;
pub use tokenizer_view::TokenizerView;

use state::{AppState, Tab, SAMPLES};

/// The root component of the viewer: opens the URLs of `?url=` (repeatable), or else the first
/// built-in sample, on load.
#[component]
pub fn App() -> impl IntoView {
    view! { <Viewer sample=SAMPLES[0] urls=crate::io::browser::query_values("url") /> }
}

/// The viewer; opens `urls` on load, else `sample` (a file in `www/samples/`) when given.
#[component]
pub fn Viewer(#[prop(optional)] sample: Option<&'static str>, #[prop(optional)] urls: Vec<String>) -> impl IntoView {
    let state = AppState::new();
    provide_context(state);
    // `?vs=URL` (repeatable): the checkpoint to compare with, on the Compare tab.
    let vs = crate::io::browser::query_values("vs");
    if !vs.is_empty() && !state.embed {
        let label = vs.join(" ");
        state.open_vs(Vec::new(), vs, label);
        state.tab.set(Tab::Diff);
    }
    if !urls.is_empty() {
        state.open_urls(urls);
    } else if let Some(name) = sample.filter(|_| !state.embed) {
        state.open_sample(name);
    }
    // A checkpoint with no tokenizer has no Tokenizer tab: leave it for the summary.
    Effect::new(move |_| {
        let none = state.cp.with(|cp| cp.as_ref().is_some_and(|cp| !tokenizer_view::has_tokenizer(cp)));
        if none && state.tab.get_untracked() == Tab::Tokenizer {
            state.tab.set(Tab::Summary);
        }
    });
    let hash_listener = window_event_listener(leptos::ev::hashchange, move |_| state.follow_hash());
    on_cleanup(move || hash_listener.remove());
    let has_cp = move || state.cp.with(Option::is_some);
    let tabs: &'static [Tab] = if state.embed { &Tab::EMBED } else { &Tab::ALL };
    let full_link = move || {
        let l = web_sys::window().map(|w| w.location());
        let href = l.and_then(|l| Some(format!("{}{}", l.pathname().ok()?, l.search().ok()?))).unwrap_or_default();
        href.replacen("?embed&", "?", 1).replacen("?embed", "", 1)
    };
    view! {
        <main data-testid="app" class:embed=state.embed>
            <Show when=move || state.embed>
                <header class="embed-top">
                    <strong>"Tensorscope"</strong>
                    <a data-testid="open-full" href=full_link target="_blank" rel="noopener">"Open in full viewer ↗"</a>
                </header>
            </Show>
            <Show when=move || !state.embed>
            <header class="top">
                <div>
                    <h1>"Tensorscope"</h1>
                    <p data-testid="tagline">"Look inside safetensors and GGUF checkpoints without loading them."</p>
                </div>
                <div class="top-actions">
                    <ExportButton />
                    <ThemeToggle />
                </div>
            </header>
            <DropZone />
            </Show>
            <Show when=move || state.loading.with(Option::is_some)>
                <div class="panel" data-testid="loading">
                    {move || {
                        let p = state.loading.get().unwrap_or_default();
                        format!(
                            "Reading headers: {} of {} files, {} read",
                            p.files_done,
                            p.files,
                            crate::engine::view::human_bytes(p.bytes_read),
                        )
                    }}
                    <ProgressBar done=Signal::derive(move || state.loading.get().map_or(0, |p| p.files_done as u64))
                        total=Signal::derive(move || state.loading.get().map_or(1, |p| p.files as u64)) />
                </div>
            </Show>
            <Show when=move || state.error.with(Option::is_some)>
                <p class="panel sev-error" data-testid="error" role="alert">{move || state.error.get()}</p>
            </Show>
            <Show when=has_cp>
                <p class="source">
                    <span data-testid="source">{move || state.label.get()}</span>
                    {move || state.transferred.get().map(|(bytes, requests)| view! {
                        " "
                        <span class="muted" data-testid="transferred" data-bytes=bytes.to_string()
                            data-requests=requests.to_string()>
                            {format!("· {} transferred in {requests} requests", crate::engine::view::human_bytes(bytes))}
                        </span>
                    })}
                </p>
                <nav class="tabs" role="tablist">
                    {move || tabs
                        .iter()
                        .copied()
                        .filter(|&t| {
                            t != Tab::Tokenizer
                                || state.cp.with(|cp| cp.as_ref().is_some_and(|cp| tokenizer_view::has_tokenizer(cp)))
                        })
                        .map(|t| {
                            view! {
                                <button
                                    role="tab"
                                    data-testid=format!("tab-{}", t.id())
                                    class:active=move || state.tab.get() == t
                                    aria-selected=move || (state.tab.get() == t).to_string()
                                    on:click=move |_| state.tab.set(t)
                                >
                                    {t.label()}
                                    {(t == Tab::Findings)
                                        .then(|| {
                                            view! {
                                                <span class="badge" data-testid="findings-badge">
                                                    {move || state.cp.with(|cp| cp.as_ref().map_or(0, |c| c.findings.len()))}
                                                </span>
                                            }
                                        })}
                                </button>
                            }
                        })
                        .collect_view()}
                </nav>
                {move || match state.tab.get() {
                    Tab::Summary => view! { <SummaryView /> }.into_any(),
                    Tab::Tensors => view! { <TensorTable /> }.into_any(),
                    Tab::Metadata => view! { <MetadataView /> }.into_any(),
                    Tab::Tokenizer => view! { <TokenizerView /> }.into_any(),
                    Tab::Findings => view! { <FindingsView /> }.into_any(),
                    Tab::Check => view! { <CheckPanel /> }.into_any(),
                    Tab::Diff => view! { <DiffPanel /> }.into_any(),
                }}
                <Show when=move || state.selected.with(Option::is_some)>
                    <TensorDetail />
                </Show>
            </Show>
        </main>
    }
}
