//! The Compare tab: a second checkpoint (files or URLs) against the open one, tensor by tensor
//! and key by key (the engine's diff), values compared on demand on the worker pool, and the
//! diff's JSON (as `tensorscope diff --json` prints it) for download.

use std::sync::Arc;

use leptos::prelude::*;
use leptos::task::spawn_local;

use super::state::AppState;
use super::ProgressBar;
use crate::engine::diff::{by_layer, diff, sorted, totals, Diff, SortBy};
use crate::engine::diff_report::DiffReport;
use crate::engine::job::Values;
use crate::engine::model::Tensor;
use crate::engine::view::human_bytes;
use crate::io::entries::{from_drop, from_file_list};
use crate::io::values::{compare_values, settle_arrays};
use crate::io::{browser, Cancel};

/// Rows shown at most; the rest are counted (the export holds them all).
const MAX_ROWS: usize = 2000;

/// The diff with its values compared, and the header diff (of one A and B) it was made from.
struct Compared {
    from: Arc<Diff>,
    diff: Diff,
    workers: usize,
}

#[component]
pub fn DiffPanel() -> impl IntoView {
    let state = AppState::get();
    let url_text = RwSignal::new(String::new());
    let changed_only = RwSignal::new(true);
    // The table's sort: a column and whether it runs high to low.
    let sort = RwSignal::new((SortBy::File, false));
    let compared: RwSignal<Option<Arc<Compared>>> = RwSignal::new(None);
    let job: RwSignal<Option<(u64, u64)>> = RwSignal::new(None);
    let cancel = StoredValue::new_local(Cancel::new());
    // A new A or B: the values compared no longer apply.
    Effect::new(move |_| {
        state.cp.track();
        state.vs.track();
        cancel.with_value(Cancel::cancel);
        compared.set(None);
        job.set(None);
    });
    // The header diff, then (a moment later) with long metadata arrays settled by their bytes.
    // Each result is kept with the header diff it was made from and used only while that is
    // the current one: a result for an earlier A and B indexes other tensors.
    let settled: RwSignal<Option<(Arc<Diff>, Arc<Diff>)>> = RwSignal::new(None);
    let settling = StoredValue::new_local(Cancel::new());
    let header = Memo::new(move |_| {
        let (a, b) = (state.cp.get()?, state.vs.get()?);
        Some(Arc::new(diff(&a, &b)))
    });
    Effect::new(move |_| {
        settled.set(None);
        settling.with_value(Cancel::cancel);
        let (Some(a), Some(b), Some(d)) = (state.cp.get(), state.vs.get(), header.get()) else { return };
        let (sa, sb) = (state.sources(), state.vs_sources.get_value());
        let c = Cancel::new();
        settling.set_value(c.clone());
        spawn_local(async move {
            match settle_arrays(&d, &a, &b, &sa, &sb, &c).await {
                _ if c.is_cancelled() => {}
                Ok(s) => settled.set(Some((d, Arc::new(s)))),
                Err(e) => state.error.set(Some(format!("comparing metadata arrays failed: {e}"))),
            }
        });
    });
    let of_current =
        |from: &Arc<Diff>, header: &Option<Arc<Diff>>| header.as_ref().is_some_and(|h| Arc::ptr_eq(from, h));
    let base = move || {
        let h = header.get();
        settled.get().filter(|(from, _)| of_current(from, &h)).map(|(_, s)| s).or(h)
    };
    let compared_now = move || {
        let h = header.get();
        compared.get().filter(|c| of_current(&c.from, &h))
    };
    let current = move || compared_now().map(|c| Arc::new(c.diff.clone())).or_else(base);

    let picked = move |ev: leptos::ev::Event| {
        let input: web_sys::HtmlInputElement = event_target(&ev);
        if let Some(list) = input.files() {
            let inputs = from_file_list(&list);
            let label = match inputs.as_slice() {
                [one] => one.path.clone(),
                many => format!("{} files", many.len()),
            };
            state.open_vs(inputs, Vec::new(), label);
        }
    };
    // A drop on this panel opens B (the page-wide drop would replace A).
    let dropped = move |ev: leptos::ev::DragEvent| {
        ev.prevent_default();
        ev.stop_propagation();
        let Some(dt) = ev.data_transfer() else { return };
        spawn_local(async move {
            match from_drop(&dt).await {
                Ok(inputs) => {
                    let label = match inputs.as_slice() {
                        [one] => one.path.clone(),
                        many => format!("{} files", many.len()),
                    };
                    state.open_vs(inputs, Vec::new(), label);
                }
                Err(e) => state.error.set(Some(format!("could not read what was dropped: {e}"))),
            }
        });
    };
    let open_url = move |_| {
        let urls: Vec<String> = url_text.get_untracked().split_whitespace().map(str::to_owned).collect();
        if !urls.is_empty() {
            let label = urls.join(" ");
            state.open_vs(Vec::new(), urls, label);
        }
    };
    let run = move |values: Values| {
        let (Some(a), Some(b), Some(d)) = (state.cp.get_untracked(), state.vs.get_untracked(), untrack(base)) else {
            return;
        };
        let Some(from) = header.get_untracked() else { return };
        cancel.with_value(Cancel::cancel);
        let c = Cancel::new();
        cancel.set_value(c.clone());
        let (sa, sb) = (state.sources(), state.vs_sources.get_value());
        job.set(Some((0, 1)));
        spawn_local(async move {
            let c2 = c.clone();
            let progress = move |done, total| {
                if !c2.is_cancelled() {
                    job.set(Some((done, total)));
                }
            };
            let r = compare_values(&d, &a, &b, &sa, &sb, values, &c, progress).await;
            if c.is_cancelled() {
                return;
            }
            job.set(None);
            match r {
                Ok((diff, workers)) => compared.set(Some(Arc::new(Compared { from, diff, workers }))),
                Err(e) => state.error.set(Some(format!("comparing values failed: {e}"))),
            }
        });
    };
    let export = move |_| {
        let (Some(a), Some(b), Some(d)) = (state.cp.get_untracked(), state.vs.get_untracked(), current()) else {
            return;
        };
        let text = DiffReport { a: &a, b: &b, diff: &d }.to_text();
        let parts = js_sys::Array::of1(&browser::part(text.as_bytes()));
        let r =
            browser::blob_of(&parts, "application/json").and_then(|b| browser::download(&b, "tensorscope-diff.json"));
        if let Err(e) = r {
            state.error.set(Some(format!("export failed: {e}")));
        }
    };

    let table = move || {
        let (a, b, d) = (state.cp.get()?, state.vs.get()?, current()?);
        let workers = compared_now().map_or(String::new(), |c| c.workers.to_string());
        let [same, changed, only_a, only_b] = d.counts();
        let (by, descending) = sort.get();
        let mut shown = sorted(&d, &a, &b, by, descending, changed_only.get());
        shown.truncate(MAX_ROWS + 1);
        let sides = totals(&a, &b)
            .into_iter()
            .map(|(name, ta, tb)| {
                let bpw = |t: &crate::engine::summary::Totals| {
                    if t.params > 0 {
                        format!("{:.2}", t.bits_per_weight())
                    } else {
                        "—".into()
                    }
                };
                let key = name.clone();
                view! {
                    <tr data-testid="diff-total" data-dtype=key>
                        <td>{name}</td>
                        <td class="num">{ta.params}</td><td class="num">{tb.params}</td>
                        <td class="num">{human_bytes(ta.bytes)}</td><td class="num">{human_bytes(tb.bytes)}</td>
                        <td class="num">{bpw(&ta)}</td><td class="num">{bpw(&tb)}</td>
                    </tr>
                }
            })
            .collect_view();
        let more = shown.len() > MAX_ROWS;
        // A header sorts by its column; again, the other way.
        let head = move |label: &'static str, col: SortBy| {
            let mark = match sort.get() {
                (c, false) if c == col => " ▲",
                (c, true) if c == col => " ▼",
                _ => "",
            };
            let testid = format!("diff-sort-{}", label.split_whitespace().next().unwrap_or(label).to_lowercase());
            view! {
                <th><button class="link" data-testid=testid on:click=move |_| sort.update(|s| {
                    *s = if s.0 == col { (col, !s.1) } else { (col, matches!(col, SortBy::Nmse | SortBy::MaxAbs)) }
                })>{label}{mark}</button></th>
            }
        };
        let side = |t: Option<&Tensor>| t.map_or("—".to_owned(), |t| format!("{} {:?}", t.dtype.name(), t.shape));
        let num = |v: Option<f64>, digits: usize| v.map_or(String::new(), |x| format!("{x:.digits$e}"));
        let rows = shown
            .into_iter()
            .take(MAX_ROWS)
            .map(|p| {
                let (ta, tb) = (p.a.map(|i| &a.tensors[i]), p.b.map(|i| &b.tensors[i]));
                let name = ta.or(tb).map_or(String::new(), |t| t.name.clone());
                let b_name = tb.filter(|_| ta.is_some()).map(|t| t.name.clone()).filter(|n| *n != name);
                let v = p.values.as_ref();
                let key = name.clone();
                view! {
                    <tr data-testid="diff-row" data-name=key data-status=p.status.name()>
                        <td><code>{name}</code>{b_name.map(|n| view! { <br /><code class="muted">{n}</code> })}</td>
                        <td class=format!("status-{}", p.status.name())>{p.status.name()}</td>
                        <td>{side(ta)}</td>
                        <td>{side(tb)}</td>
                        <td class="num" data-testid="diff-nmse">{num(v.map(|v| v.nmse), 3)}</td>
                        <td class="num" data-testid="diff-cosine">{v.map_or(String::new(), |v| format!("{:.6}", v.cosine))}</td>
                        <td class="num">{num(v.map(|v| v.max_abs), 3)}</td>
                    </tr>
                }
            })
            .collect_view();
        let layers = by_layer(&d, &a, &b);
        let chart = layers.iter().any(|l| l.worst_nmse.is_some()).then(|| {
            // Worst NMSE per layer on a log scale, 1e-12 (no bar) to 1 (full height).
            let (w, h) = (12.0, 80.0);
            let bars = layers
                .iter()
                .enumerate()
                .map(|(i, l)| {
                    let v = l.worst_nmse.unwrap_or(0.0);
                    let frac = if v > 0.0 { ((v.log10() + 12.0) / 12.0).clamp(0.0, 1.0) } else { 0.0 };
                    let name = l.layer.map_or("other".to_owned(), |n| format!("layer {n}"));
                    let title = format!("{name}: worst NMSE {v:.3e}");
                    view! {
                        <rect x=format!("{}", i as f64 * w) y=format!("{:.1}", h * (1.0 - frac)) width=format!("{}", w - 2.0)
                            height=format!("{:.1}", h * frac) data-testid="layer-bar"><title>{title}</title></rect>
                    }
                })
                .collect_view();
            view! {
                <h3>"Worst NMSE by layer (log scale)"</h3>
                <svg class="layer-chart" data-testid="layer-chart" width=format!("{}", layers.len() as f64 * w) height=format!("{h}")>{bars}</svg>
            }
        });
        let layer_rows = layers
            .iter()
            .filter(|l| l.layer.is_some())
            .map(|l| {
                let n = l.layer.map_or(String::new(), |n| n.to_string());
                let key = n.clone();
                view! {
                    <tr data-testid="diff-layer" data-layer=key>
                        <td>{n}</td><td class="num">{human_bytes(l.a_bytes)}</td><td class="num">{human_bytes(l.b_bytes)}</td>
                        <td class="num">{l.worst_nmse.map_or(String::new(), |v| format!("{v:.3e}"))}</td>
                    </tr>
                }
            })
            .collect_view();
        let meta = d
            .metadata
            .iter()
            .map(|m| view! { <li data-testid="diff-key" data-status=m.status.name()><code>{m.key.clone()}</code>" "{m.status.name()}</li> })
            .collect_view();
        Some(view! {
            <p data-testid="diff-summary" data-workers=workers>
                {format!("{same} same, {changed} changed, {only_a} only in A, {only_b} only in B; {} metadata keys differ", d.metadata.len())}
            </p>
            <table class="diff" data-testid="diff-totals">
                <thead><tr><th>"Type"</th><th>"Params A"</th><th>"Params B"</th><th>"Bytes A"</th><th>"Bytes B"</th><th>"Bits/weight A"</th><th>"Bits/weight B"</th></tr></thead>
                <tbody>{sides}</tbody>
            </table>
            <table class="diff">
                <thead><tr>{head("Tensor", SortBy::Name)}{head("Status", SortBy::Status)}{head("A", SortBy::Bytes)}<th>"B"</th>
                    {head("NMSE", SortBy::Nmse)}{head("Cosine", SortBy::Cosine)}{head("max |a−b|", SortBy::MaxAbs)}</tr></thead>
                <tbody>{rows}</tbody>
            </table>
            {more.then(|| view! { <p class="muted">{format!("Showing the first {MAX_ROWS}; the export holds every tensor.")}</p> })}
            {chart}
            <h3>"Layers"</h3>
            <table class="diff" data-testid="diff-layers">
                <thead><tr><th>"Layer"</th><th>"Bytes A"</th><th>"Bytes B"</th><th>"Worst NMSE"</th></tr></thead>
                <tbody>{layer_rows}</tbody>
            </table>
            <h3>"Metadata"</h3>
            <ul class="diff-keys">{meta}</ul>
        })
    };

    view! {
        <section class="panel" data-testid="diff-panel"
            on:dragover=|ev: leptos::ev::DragEvent| ev.prevent_default() on:drop=dropped>
            <h2>"Compare with another checkpoint"</h2>
            <p class="muted">"Drop files or a folder here, pick them, or give URLs. Files stay on this computer; URLs are read by header ranges only."</p>
            <div class="row">
                <label>"Files: "<input type="file" multiple data-testid="vs-files" on:change=picked /></label>
                <input type="url" placeholder="https://… (one or more URLs)" data-testid="vs-url"
                    prop:value=move || url_text.get() on:input=move |ev| url_text.set(event_target_value(&ev)) />
                <button data-testid="vs-open" on:click=open_url>"Open URL"</button>
            </div>
            {move || state.vs_loading.get().map(|p| view! {
                <div class="job" data-testid="vs-loading">
                    {format!("Reading B's headers: {} of {} files, {} read", p.files_done, p.files, human_bytes(p.bytes_read))}
                    <ProgressBar done=Signal::derive(move || p.files_done as u64) total=Signal::derive(move || p.files.max(1) as u64) />
                    <button type="button" data-testid="vs-cancel" on:click=move |_| state.cancel_vs()>"Cancel"</button>
                </div>
            })}
            <Show when=move || state.vs.with(Option::is_some)>
                <p>"B: "<span data-testid="vs-source">{move || state.vs_label.get()}</span></p>
                <div class="row">
                    <button data-testid="diff-values" on:click=move |_| run(Values::Sample)>"Compare values (sample)"</button>
                    <button data-testid="diff-values-all" on:click=move |_| run(Values::All)>"Compare all values"</button>
                    <label><input type="checkbox" data-testid="diff-changed-only" prop:checked=move || changed_only.get()
                        on:change=move |ev| changed_only.set(event_target_checked(&ev)) />" changed only"</label>
                    <label><input type="checkbox" data-testid="diff-worst-first" prop:checked=move || sort.get() == (SortBy::Nmse, true)
                        on:change=move |ev| sort.set(if event_target_checked(&ev) { (SortBy::Nmse, true) } else { (SortBy::File, false) }) />" worst NMSE first"</label>
                    <button data-testid="diff-export" on:click=export>"Export diff"</button>
                </div>
                {move || job.get().map(|(d, n)| view! {
                    <div class="job" data-testid="diff-job">
                        <ProgressBar done=Signal::derive(move || d) total=Signal::derive(move || n.max(1)) />
                        <button on:click=move |_| { cancel.with_value(Cancel::cancel); job.set(None); }>"Cancel"</button>
                    </div>
                })}
                {table}
            </Show>
        </section>
    }
}
