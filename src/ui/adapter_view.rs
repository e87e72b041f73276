//! An adapter's modules (rank, alpha and its source, scale, widths), its base model and target
//! modules, and the training record kohya-ss leaves in the metadata (tags, settings, datasets).

use std::sync::Arc;

use leptos::prelude::*;
use leptos::task::spawn_local;

use super::state::AppState;
use crate::engine::adapter::{adapter, fmt_num, scalars_job, Adapter, Alpha};
use crate::engine::model::Checkpoint;
use crate::engine::training::training;
use crate::io::{run, Cancel};

/// Most modules and tags listed.
const SHOWN: usize = 500;

/// The adapter panel of `cp` (nothing when it holds no adapter).
#[component]
pub fn AdapterView(cp: Arc<Checkpoint>) -> impl IntoView {
    let state = AppState::get();
    let Some(first) = adapter(&cp) else { return ().into_any() };
    let read: RwSignal<Arc<Adapter>> = RwSignal::new(Arc::new(first.clone()));
    let wanted = first.alpha_tensors();
    if !wanted.is_empty() {
        let (cp, src) = (cp.clone(), state.sources());
        spawn_local(async move {
            if let Ok(values) = run(scalars_job(&cp, &wanted), &src, &Cancel::new(), |_| {}).await {
                read.set(Arc::new(first.with_alphas(&cp, &values)));
            }
        });
    }
    let t = training(&cp);
    let modules = move || {
        let a = read.get();
        a.modules
            .iter()
            .take(SHOWN)
            .map(|m| {
                let num = |v: Option<u64>| v.map_or("?".to_owned(), |v| v.to_string());
                let (alpha, from) = match &m.alpha {
                    Alpha::Stated(v, from) => (fmt_num(*v), from.clone()),
                    Alpha::Default(v) => (fmt_num(*v), "default".to_owned()),
                    Alpha::InTensor(_) => ("…".to_owned(), "reading".to_owned()),
                };
                let scale = match (m.alpha.value(), m.rank) {
                    (Some(al), Some(r)) if r > 0 => format!("{:.4}", al / r as f64),
                    _ => "?".to_owned(),
                };
                view! {
                    <tr data-testid="adapter-module">
                        <td><code>{m.name.clone()}</code></td>
                        <td class="num" data-testid="module-rank">{num(m.rank)}</td>
                        <td class="num" data-testid="module-alpha" title=from>{alpha}</td>
                        <td class="num">{scale}</td>
                        <td class="num">{format!("{} → {}", num(m.in_features), num(m.out_features))}</td>
                    </tr>
                }
            })
            .collect_view()
    };
    let about = move || read.with(|a| a.describe());
    let targets = first_targets(&read);
    let tags = (!t.tags.is_empty()).then(|| {
        let items = t
            .tags
            .iter()
            .take(SHOWN)
            .map(|(tag, n)| view! { <li><code>{tag.clone()}</code>" "<span class="muted num">{*n}</span></li> })
            .collect_view();
        view! { <h3>"Training tags"</h3><ul class="tags" data-testid="adapter-tags">{items}</ul> }
    });
    let settings = (!t.settings.is_empty() || !t.modelspec.is_empty()).then(|| {
        let items = t
            .settings
            .iter()
            .chain(&t.modelspec)
            .map(|(k, v)| view! { <dt><code>{k.clone()}</code></dt><dd>{v.clone()}</dd> })
            .collect_view();
        view! { <h3>"Training settings"</h3><dl class="facts" data-testid="adapter-settings">{items}</dl> }
    });
    let documents = t
        .documents
        .iter()
        .map(|(k, v)| {
            view! {
                <details data-testid="adapter-document">
                    <summary><code>{k.clone()}</code></summary>
                    <pre class="code">{v.clone()}</pre>
                </details>
            }
        })
        .collect_view();
    view! {
        <h2>"Adapter"</h2>
        <p data-testid="adapter-about">{about}</p>
        <p class="muted" data-testid="adapter-targets">{targets}</p>
        <table class="modules" data-testid="adapter-modules">
            <thead><tr><th>"Module"</th><th>"Rank"</th><th>"Alpha"</th><th>"Scale"</th><th>"In → out"</th></tr></thead>
            <tbody>{modules}</tbody>
        </table>
        {tags}
        {settings}
        {documents}
    }
    .into_any()
}

fn first_targets(a: &RwSignal<Arc<Adapter>>) -> String {
    a.with_untracked(|a| {
        if a.target_modules.is_empty() {
            String::new()
        } else {
            format!("Target modules: {}", a.target_modules.join(", "))
        }
    })
}
