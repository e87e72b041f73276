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
mod variants_view;

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
pub use variants_view::VariantsView;

use state::{AppState, Tab, SAMPLES};

/// The tensor panel's width when first dragged: 40% of the window.
fn default_detail_width() -> f64 {
    web_sys::window().and_then(|w| w.inner_width().ok()).and_then(|v| v.as_f64()).unwrap_or(1400.0) * 0.4
}

/// A panel width between 320 px and 70% of the window.
fn clamp_detail_width(w: f64) -> f64 {
    let vw = web_sys::window().and_then(|w| w.inner_width().ok()).and_then(|v| v.as_f64()).unwrap_or(1400.0);
    w.clamp(320.0, (vw * 0.7).max(320.0))
}

/// The root component of the viewer: opens the URLs of `?url=` (repeatable), or else a built-in
/// sample (`?sample=NAME`, the first by default), on load.
#[component]
pub fn App() -> impl IntoView {
    // `?sample=NAME` links to another built-in sample (by label or file name).
    let chosen = crate::io::browser::query_values("sample");
    let sample = chosen
        .first()
        .and_then(|n| SAMPLES.iter().find(|s| s.label == n || s.files.first() == Some(&n.as_str())))
        .copied()
        .unwrap_or(SAMPLES[0]);
    view! { <Viewer sample=sample urls=crate::io::browser::query_values("url") /> }
}

/// The viewer; opens `urls` on load, else `sample` (a file in `www/samples/`) when given.
#[component]
pub fn Viewer(#[prop(optional)] sample: Option<state::Sample>, #[prop(optional)] urls: Vec<String>) -> impl IntoView {
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
    // The tensor panel's width on wide screens, dragged by its handle (None: the stylesheet's).
    let detail_width = RwSignal::new(None::<f64>);
    let resizing = RwSignal::new(false);
    let move_listener = window_event_listener(leptos::ev::pointermove, move |ev| {
        if resizing.get_untracked() {
            let vw = web_sys::window().and_then(|w| w.inner_width().ok()).and_then(|v| v.as_f64()).unwrap_or(1400.0);
            detail_width.set(Some(clamp_detail_width(vw - f64::from(ev.client_x()) - 16.0)));
        }
    });
    let up_listener = window_event_listener(leptos::ev::pointerup, move |_| resizing.set(false));
    on_cleanup(move || {
        move_listener.remove();
        up_listener.remove();
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
        <main data-testid="app" class:embed=state.embed class:wide=move || state.selected.with(Option::is_some)>
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
                    " "
                    <button type="button" data-testid="open-cancel" on:click=move |_| state.cancel_open()>"Cancel"</button>
                </div>
            </Show>
            <Show when=move || state.error.with(Option::is_some)>
                <p class="panel sev-error" data-testid="error" role="alert">{move || state.error.get()}</p>
            </Show>
            {move || {
                let v = state.variants.get()?;
                (!has_cp() && state.loading.with(Option::is_none)).then(|| view! { <VariantsView v=v /> })
            }}
            <Show when=has_cp>
                <p class="source">
                    {move || state.variants.with(Option::is_some).then(|| view! {
                        <button type="button" class="link" data-testid="variants-back"
                            on:click=move |_| state.back_to_variants()>"← all variants"</button>
                        " "
                    })}
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
                <div class="workspace" class:has-detail=move || state.selected.with(Option::is_some)
                    style:--detail-width=move || detail_width.get().map(|w| format!("{w}px"))>
                <div class="workspace-main">
                {move || match state.tab.get() {
                    Tab::Summary => view! { <SummaryView /> }.into_any(),
                    Tab::Tensors => view! { <TensorTable /> }.into_any(),
                    Tab::Metadata => view! { <MetadataView /> }.into_any(),
                    Tab::Tokenizer => view! { <TokenizerView /> }.into_any(),
                    Tab::Findings => view! { <FindingsView /> }.into_any(),
                    Tab::Check => view! { <CheckPanel /> }.into_any(),
                    Tab::Diff => view! { <DiffPanel /> }.into_any(),
                }}
                </div>
                <Show when=move || state.selected.with(Option::is_some)>
                    <div class="resize-handle" data-testid="detail-resize" role="separator" aria-orientation="vertical"
                        aria-label="Resize the tensor panel" tabindex="0" aria-valuemin="320"
                        aria-valuenow=move || detail_width.get().unwrap_or_else(default_detail_width).round().to_string()
                        on:pointerdown=move |ev: leptos::ev::PointerEvent| {
                            ev.prevent_default();
                            resizing.set(true);
                        }
                        on:keydown=move |ev: leptos::ev::KeyboardEvent| {
                            let step = match ev.key().as_str() { "ArrowLeft" => 32.0, "ArrowRight" => -32.0, _ => return };
                            let w = detail_width.get_untracked().unwrap_or_else(default_detail_width);
                            detail_width.set(Some(clamp_detail_width(w + step)));
                        }></div>
                    <TensorDetail />
                </Show>
                </div>
            </Show>
        </main>
    }
}
