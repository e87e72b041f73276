//! Memory to run: weights, the KV cache per context and cache type, recurrent state, and what
//! the config files say.

use leptos::prelude::*;

use crate::engine::config::highlights;
use crate::engine::digest::Digest;
use crate::engine::estimate::{estimate_from, CacheType};
use crate::engine::model::Checkpoint;
use crate::engine::view::human_bytes;

/// The estimate for `cp` (whose digest is `digest`), as a table with a row per context length.
#[component]
pub fn EstimateView(cp: std::sync::Arc<Checkpoint>, digest: std::sync::Arc<Digest>) -> impl IntoView {
    // Context lengths the user added, besides the defaults.
    let chosen = RwSignal::new(Vec::<u64>::new());
    let input = RwSignal::new(String::new());
    let add = move || {
        if let Ok(c) = input.get_untracked().trim().parse::<u64>() {
            if (1..=1 << 32).contains(&c) {
                chosen.update(|v| v.push(c));
            }
        }
    };
    let picker = view! {
        <div class="row">
            <label>"Another context: "
                <input type="number" min="1" data-testid="context-input" prop:value=move || input.get()
                    on:input=move |ev| input.set(event_target_value(&ev))
                    on:keydown=move |ev| if ev.key() == "Enter" { add() } />
            </label>
            <button data-testid="context-add" on:click=move |_| add()>"Estimate"</button>
        </div>
    };
    // A task of its own, after the summary has rendered.
    let ready = RwSignal::new(false);
    leptos::task::spawn_local(async move {
        crate::io::driver::yield_now().await;
        ready.set(true);
    });
    let table = move || ready.get().then(|| estimate_table(&cp, &digest, &chosen.get()));
    view! { {table} {picker} }
}

fn estimate_table(cp: &Checkpoint, digest: &Digest, chosen: &[u64]) -> impl IntoView {
    let e = estimate_from(&digest.estimate, digest.kind, chosen);
    let config = highlights(&cp.configs)
        .into_iter()
        .map(|(label, text)| {
            view! {
                <dt>{label}</dt>
                <dd data-testid="config-fact">{text}</dd>
            }
        })
        .collect_view();
    let mut contexts: Vec<u64> = e.kv_cache.iter().map(|k| k.context).collect();
    crate::engine::sort::sort(&mut contexts);
    contexts.dedup();
    let heads = CacheType::ALL
        .iter()
        .map(|c| view! { <th class="num">{format!("{} cache", c.name())}</th><th class="num">"total"</th> })
        .collect_view();
    let rows = contexts
        .into_iter()
        .map(|ctx| {
            let own = e.context == Some(ctx);
            let cells = CacheType::ALL
                .iter()
                .map(|&c| match e.kv_cache.iter().find(|k| k.context == ctx && k.cache == c) {
                    Some(k) => view! {
                        <td class="num" data-testid="kv-bytes" data-type=c.name() title=k.bytes.to_string()>{human_bytes(k.bytes)}</td>
                        <td class="num" data-testid="kv-total" data-type=c.name() title=e.total(k).to_string()>{human_bytes(e.total(k))}</td>
                    }
                    .into_any(),
                    None => view! { <td class="num">"–"</td><td class="num">"–"</td> }.into_any(),
                })
                .collect_view();
            view! {
                <tr data-testid="kv-row" data-context=ctx.to_string()>
                    <td class="num">{ctx.to_string()}{own.then_some(" (trained)")}</td>
                    {cells}
                </tr>
            }
        })
        .collect_view();
    let about = [
        e.architecture.clone(),
        e.source.map(|s| format!("from {}", s.name())),
        (e.layers > 0).then(|| format!("{} layers, {} with a KV cache", e.layers, e.kv_layers)),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(" · ");
    let unknown =
        e.unknown.iter().map(|u| view! { <li data-testid="estimate-unknown">{u.clone()}</li> }).collect_view();
    let has_kv = !e.kv_cache.is_empty();
    view! {
        <h2>"Memory to run"</h2>
        <div data-testid="estimate">
            <p class="muted" data-testid="estimate-about">{about}</p>
            <dl class="facts">
                <dt>"Weights"</dt>
                <dd data-testid="estimate-weights" title=e.weights_bytes.to_string()>{human_bytes(e.weights_bytes)}</dd>
                {(e.projector_bytes > 0).then(|| view! {
                    <dt>"Projector"</dt>
                    <dd data-testid="estimate-projector" title=e.projector_bytes.to_string()>{human_bytes(e.projector_bytes)}</dd>
                })}
                {(e.state_bytes > 0).then(|| view! {
                    <dt>"Recurrent state"</dt>
                    <dd data-testid="estimate-state" title=e.state_bytes.to_string()>{human_bytes(e.state_bytes)}</dd>
                })}
                {config}
            </dl>
            {has_kv.then(|| view! {
                <div class="table-scroll">
                    <table class="estimate" data-testid="kv-table">
                        <thead><tr><th class="num">"context"</th>{heads}</tr></thead>
                        <tbody>{rows}</tbody>
                    </table>
                </div>
            })}
            <ul class="muted">{unknown}</ul>
            <p class="muted">"One sequence, as llama.cpp sizes its cache; compute buffers are not counted."</p>
        </div>
    }
}
