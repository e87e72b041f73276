//! Tensor detail: facts, a value histogram (SVG) and statistics over the whole tensor, an
//! element range or a sample; block scales for quantized types; progress, cancel, `.npy`.

use std::sync::Arc;

use leptos::prelude::*;
use leptos::task::spawn_local;

use super::state::AppState;
use super::{CopyButton, HistogramChart, ProgressBar};
use crate::engine::decode::layout;
use crate::engine::hidden_text::reveal;
use crate::engine::histogram::Histogram;
use crate::engine::plan::{Selection, DEFAULT_SAMPLE_BYTES};
use crate::engine::st_quant::scaled_values;
use crate::engine::text::base_name;
use crate::engine::view::{human_bytes, human_count};
use crate::engine::viewer::{fmt_num, npy_file_name, parse_range, permalink, shape_text};
use crate::io::values::{histogram, npy_blob};
use crate::io::{browser, Cancel};

/// Bins of the value and scale histograms.
const BINS: usize = 64;

/// A finished histogram job.
struct HistResult {
    values: Histogram,
    scales: Option<Histogram>,
    what: String,
    /// Workers that decoded it (0: the page itself).
    workers: usize,
}

/// How much of the tensor to read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Sample,
    Whole,
    Range,
}

/// The detail panel of the selected tensor.
#[component]
pub fn TensorDetail() -> impl IntoView {
    let state = AppState::get();
    let mode = RwSignal::new(Mode::Sample);
    let range_text = RwSignal::new(String::from("0:1000"));
    let log = RwSignal::new(false);
    let result: RwSignal<Option<Arc<HistResult>>> = RwSignal::new(None);
    let job: RwSignal<Option<(&'static str, u64, u64)>> = RwSignal::new(None);
    let error = RwSignal::new(None::<String>);
    let cancel = StoredValue::new_local(Cancel::new());

    let tensor = move || {
        let name = state.selected.get()?;
        state.cp.with(|cp| cp.as_ref().and_then(|cp| cp.tensor(&name).cloned()))
    };

    let start = move |kind: &'static str| {
        let Some(name) = state.selected.get_untracked() else { return };
        let Some(t) = state.cp.with_untracked(|cp| cp.as_ref().and_then(|cp| cp.tensor(&name).cloned())) else {
            return;
        };
        cancel.with_value(Cancel::cancel);
        let c = Cancel::new();
        cancel.set_value(c.clone());
        error.set(None);
        let src = state.sources();
        if let Err(lost) = &t.data {
            error.set(Some(format!("the values of this tensor cannot be read: {lost}")));
            return;
        }
        if kind == "npy" {
            job.set(Some(("npy", 0, 1)));
            spawn_local(async move {
                let c2 = c.clone();
                let r = npy_blob(&t, &src, &c, move |d, n| {
                    if !c2.is_cancelled() {
                        job.set(Some(("npy", d, n)))
                    }
                })
                .await;
                if c.is_cancelled() {
                    return;
                }
                job.set(None);
                match r.map_err(|e| e.to_string()).and_then(|b| browser::download(&b, &npy_file_name(&t.name))) {
                    Ok(()) => {}
                    Err(e) => error.set(Some(e)),
                }
            });
            return;
        }
        let sel = match mode.get_untracked() {
            Mode::Sample => Selection::Sample { budget_bytes: DEFAULT_SAMPLE_BYTES },
            Mode::Whole => Selection::Whole,
            Mode::Range => match parse_range(&range_text.get_untracked()) {
                Some((start, end)) => Selection::Elements { start, end },
                None => {
                    error.set(Some("element range: write A:B with A < B".into()));
                    return;
                }
            },
        };
        let Some(cp) = state.cp.get_untracked() else { return };
        let mut what = match &sel {
            Selection::Sample { .. } if DEFAULT_SAMPLE_BYTES < t.nbytes => {
                format!("a sample of {} spread over the tensor", human_bytes(DEFAULT_SAMPLE_BYTES))
            }
            Selection::Elements { start, end } => format!("elements {start}:{end}"),
            _ => "the whole tensor".to_owned(),
        };
        if let Some(Ok(s)) = cp.tensor_index(&t.name).and_then(|i| scaled_values(&cp, i)) {
            what = format!("{what}, dequantized ({})", s.scheme);
        }
        if let Some(v) = crate::engine::decode::values_are(&t.dtype) {
            what = format!("{what}, each value's {v}");
        }
        result.set(None);
        job.set(Some(("hist", 0, 1)));
        spawn_local(async move {
            let c2 = c.clone();
            let r = histogram(&cp, &t, &src, &sel, true, &c, move |d, n| {
                if !c2.is_cancelled() {
                    job.set(Some(("hist", d, n)))
                }
            })
            .await;
            if c.is_cancelled() {
                return;
            }
            job.set(None);
            match r {
                Ok((sink, workers)) => {
                    result.set(Some(Arc::new(HistResult { values: sink.values, scales: sink.scales, what, workers })))
                }
                Err(e) => error.set(Some(e.to_string())),
            }
        });
    };

    // A new tensor: histogram of a sample at once (cheap: a few MB at most), when it can be read.
    Effect::new(move |_| {
        let Some(name) = state.selected.get() else { return };
        let readable = state.cp.with_untracked(|cp| {
            cp.as_ref().and_then(|cp| cp.tensor(&name)).is_some_and(|t| t.data.is_ok() && layout(&t.dtype).is_some())
        });
        result.set(None);
        if readable {
            mode.set(Mode::Sample);
            start("hist");
        }
    });
    on_cleanup(move || cancel.with_value(Cancel::cancel));

    let stop = move |_| {
        cancel.with_value(Cancel::cancel);
        job.set(None);
        error.set(Some("cancelled".into()));
    };

    let facts = move || {
        let t = tensor()?;
        let file =
            state.cp.with(|cp| cp.as_ref().and_then(|cp| cp.files.get(t.file)).map(|f| base_name(&f.path).to_owned()));
        let decodable = layout(&t.dtype).is_some();
        // Logical: the weights a packed tensor holds, none for scales.
        let index = state.cp.with(|cp| cp.as_ref()?.tensor_index(&t.name));
        let params = state.digest.with(|d| d.as_ref()?.params.get(index?).copied());
        let lost = t.data.as_ref().err().map(|l| l.to_string());
        let offset = match t.offset {
            Some(o) => o.to_string(),
            None => "unknown".to_owned(),
        };
        let name = t.name.clone();
        Some(view! {
            <div class="detail-head">
                <h2 data-testid="detail-name">{reveal(&t.name)}</h2>
                <CopyButton text=name.clone() label="Copy name" />
                <a href=permalink(&name) data-testid="permalink">"Permalink"</a>
                <button data-testid="detail-close" on:click=move |_| state.select(None)>"Close"</button>
            </div>
            <dl class="facts">
                <dt>"Type"</dt><dd data-testid="detail-dtype">{t.dtype.name()}</dd>
                <dt>"Shape"</dt><dd data-testid="detail-shape">{shape_text(&t.shape)}</dd>
                <dt>"Parameters"</dt><dd data-testid="detail-params">{params.map(human_count).unwrap_or_default()}</dd>
                <dt>"Bytes"</dt><dd>{format!("{} ({})", human_bytes(t.nbytes), t.nbytes)}</dd>
                <dt>"Offset"</dt><dd data-testid="detail-offset">{offset}</dd>
                <dt>"File"</dt><dd>{file}</dd>
                {t.strides.as_ref().map(|s| view! {
                    <dt>"Strides"</dt>
                    <dd data-testid="detail-strides">{format!("{s:?}: stored in another order than its shape's (a transposed view)")}</dd>
                })}
            </dl>
            {(!decodable).then(|| view! {
                <p class="sev-warning" data-testid="undecodable">"Values of this type cannot be decoded."</p>
            })}
            {lost.map(|l| view! {
                <p class="sev-error" data-testid="data-lost">{format!("Its values are not read: {l}.")}</p>
            })}
        })
    };

    let stats = move || {
        let r = result.get()?;
        let s = &r.values.stats;
        let rows = [
            ("count", s.count.to_string()),
            ("finite", s.finite.to_string()),
            ("NaN", s.nan.to_string()),
            ("+inf / -inf", format!("{} / {}", s.pos_inf, s.neg_inf)),
            ("zeros", s.zero.to_string()),
            ("min", if s.finite > 0 { fmt_num(s.min) } else { "-".into() }),
            ("max", if s.finite > 0 { fmt_num(s.max) } else { "-".into() }),
            ("mean", if s.finite > 0 { fmt_num(s.mean) } else { "-".into() }),
            ("std", if s.finite > 0 { fmt_num(s.std()) } else { "-".into() }),
        ];
        let scales = r.scales.as_ref().filter(|h| h.stats.count > 0).map(|h| {
            view! {
                <h3>"Block scales"</h3>
                <p class="muted">{format!("{} blocks, min {}, max {}, mean {}", h.stats.count, fmt_num(h.stats.min), fmt_num(h.stats.max), fmt_num(h.stats.mean))}</p>
                <HistogramChart bins=h.bins(BINS) log=log testid="scales-histogram" />
            }
        });
        Some(view! {
            <p class="muted" data-testid="hist-what" data-workers=r.workers.to_string()>{format!("Values of {}", r.what)}</p>
            <HistogramChart bins=r.values.bins(BINS) log=log testid="histogram" />
            <dl class="facts stats" data-testid="stats">
                {rows.into_iter().map(|(k, v)| view! { <dt>{k}</dt><dd data-testid=format!("stat-{}", k.replace([' ', '/', '+', '-'], ""))>{v}</dd> }).collect_view()}
            </dl>
            {scales}
        })
    };

    view! {
        <section class="panel detail" data-testid="tensor-detail">
            {facts}
            <div class="controls">
                <label><input type="radio" name="sel" data-testid="sel-sample" prop:checked=move || mode.get() == Mode::Sample on:change=move |_| mode.set(Mode::Sample) />" Sample"</label>
                <label><input type="radio" name="sel" data-testid="sel-whole" prop:checked=move || mode.get() == Mode::Whole on:change=move |_| mode.set(Mode::Whole) />" Whole tensor"</label>
                <label><input type="radio" name="sel" data-testid="sel-range" prop:checked=move || mode.get() == Mode::Range on:change=move |_| mode.set(Mode::Range) />" Elements"</label>
                <input type="text" size="14" aria-label="Elements A:B" data-testid="range-input" prop:value=move || range_text.get()
                    on:input=move |ev| { range_text.set(event_target_value(&ev)); mode.set(Mode::Range); } />
                <button data-testid="run-hist" on:click=move |_| start("hist")>"Histogram"</button>
                <label><input type="checkbox" data-testid="log-scale" prop:checked=move || log.get() on:change=move |ev| log.set(event_target_checked(&ev)) />" log"</label>
                <button data-testid="download-npy" on:click=move |_| start("npy")>"Download .npy"</button>
            </div>
            <Show when=move || job.with(Option::is_some)>
                <div class="job" data-testid="job">
                    <span>{move || if job.get().is_some_and(|j| j.0 == "npy") { "Decoding for .npy " } else { "Decoding " }}</span>
                    <ProgressBar done=Signal::derive(move || job.get().map_or(0, |j| j.1)) total=Signal::derive(move || job.get().map_or(1, |j| j.2)) />
                    <button data-testid="cancel" on:click=stop>"Cancel"</button>
                </div>
            </Show>
            {move || error.get().map(|e| view! { <p class="sev-error" data-testid="detail-error">{e}</p> })}
            {stats}
        </section>
    }
}
