//! The Variants view: files that hold several separate models (a downloaded repository's quant
//! variants) side by side, each with its bytes, bits per weight, parameters and the memory it
//! needs at a context and KV cache type the user picks, against a device memory the user
//! enters; the companions with the variants they fit. A row opens its variant.

use std::sync::Arc;

use leptos::prelude::*;

use super::state::{AppState, Variants};
use crate::engine::estimate::{estimate_at, CacheType};
use crate::engine::summary::summarize;
use crate::engine::variants::{fits, Variant};
use crate::engine::view::{human_bytes, human_count};

/// One variant's facts that do not depend on what the user picks.
struct Row {
    index: usize,
    name: String,
    format: &'static str,
    bytes: u64,
    params: u64,
    bits: f64,
    errors: usize,
}

/// The Variants view of `v`.
/// A companion as the view lists it.
struct Companion {
    name: String,
    role: &'static str,
    files: String,
    /// The variants it fits; `None` where that is not checked.
    fits: Option<Vec<String>>,
    /// For each variant it does not fit, the first difference.
    misses: Vec<String>,
}

#[component]
pub fn VariantsView(v: Arc<Variants>) -> impl IntoView {
    let state = AppState::get();
    let context = RwSignal::new(4096u64);
    let cache = RwSignal::new(CacheType::F16);
    // Device memory in GB (10⁹ bytes); empty: not compared.
    let device = RwSignal::new(String::new());
    let mut models: Vec<(usize, &Variant)> = v.all.iter().enumerate().filter(|(_, x)| x.is_choice()).collect();
    models.sort_by_key(|(_, x)| x.bytes());
    let rows: Vec<Row> = models
        .iter()
        .map(|(i, x)| {
            let all = summarize(&x.cp).all;
            let errors =
                x.cp.findings.iter().filter(|f| f.severity == crate::engine::findings::Severity::Error).count();
            Row {
                index: *i,
                name: x.name.clone(),
                format: x.cp.format.name(),
                bytes: x.bytes(),
                params: all.params,
                bits: all.bits_per_weight(),
                errors,
            }
        })
        .collect();
    let companions: Vec<Companion> = v
        .all
        .iter()
        .filter(|x| !x.is_choice())
        .map(|c| {
            // Per model it is checked for: whether it fits (None: not checked for this kind).
            let checked: Vec<(String, Result<(), String>)> =
                models.iter().filter_map(|(_, m)| Some((m.name.clone(), fits(m, c)?))).collect();
            let misses: Vec<String> = checked
                .iter()
                .filter_map(|(n, r)| r.as_ref().err().map(|why| format!("does not fit {n}: {why}")))
                .collect();
            let fits =
                (!checked.is_empty()).then(|| checked.into_iter().filter(|(_, r)| r.is_ok()).map(|(n, _)| n).collect());
            let files: Vec<&str> = c.files.iter().map(|f| f.path.as_str()).collect();
            Companion { name: c.name.clone(), role: c.role(), files: files.join(", "), fits, misses }
        })
        .collect();
    let all = v.clone();
    // The memory a variant needs at the context picked; `Err(most)` when it cannot run that
    // many tokens (its positions are learned).
    let memory = move |index: usize| -> Result<Option<u64>, u64> {
        let (ctx, kind) = (context.get(), cache.get());
        let e = estimate_at(&all.all[index].cp, &[ctx]);
        match e.runs_at_most.filter(|&most| ctx > most) {
            Some(most) => Err(most),
            None => Ok(e.total_at(ctx, kind)),
        }
    };
    let verdict = move |bytes: Result<Option<u64>, u64>| {
        let limit = device.get().trim().parse::<f64>().ok().filter(|g| *g > 0.0)?;
        Some(match bytes {
            Ok(Some(b)) if (b as f64) <= limit * 1e9 => ("fits", "sev-info"),
            Ok(Some(_)) => ("does not fit", "sev-error"),
            Ok(None) => ("not known", "muted"),
            Err(_) => ("context too long", "sev-error"),
        })
    };
    let body = rows
        .into_iter()
        .map(|r| {
            let index = r.index;
            let (shown, judged) = (memory.clone(), memory.clone());
            view! {
                <tr data-testid="variant-row" data-name=r.name.clone() class="clickable"
                    on:click=move |_| state.open_variant(index)>
                    <td><button type="button" class="link" data-testid="variant-open">{r.name.clone()}</button></td>
                    <td>{r.format}</td>
                    <td class="num" data-testid="variant-bytes">{human_bytes(r.bytes)}</td>
                    <td class="num">{format!("{:.2}", r.bits)}</td>
                    <td class="num">{human_count(r.params)}</td>
                    <td class="num" data-testid="variant-memory">
                        {move || match shown(index) {
                            Ok(bytes) => bytes.map_or_else(|| "-".into(), human_bytes),
                            Err(most) => format!("runs at most {most} tokens"),
                        }}
                    </td>
                    <td data-testid="variant-fits">
                        {move || verdict(judged(index)).map(|(text, class)| view! { <span class=class>{text}</span> })}
                    </td>
                    <td class="num">{(r.errors > 0).then(|| format!("{} errors", r.errors))}</td>
                </tr>
            }
        })
        .collect_view();
    let companions = (!companions.is_empty()).then(|| {
        let items = companions
            .into_iter()
            .map(|c| {
                let fits = match c.fits {
                    Some(f) if f.is_empty() => "fits no variant here".to_owned(),
                    Some(f) => format!("fits {}", f.join(", ")),
                    None => String::new(),
                };
                // The first difference from a variant it does not fit (all of them on hover).
                let miss = c.misses.first().map(|first| {
                    let more = c.misses.len() - 1;
                    let text = if more > 0 { format!("{first} (and {more} more)") } else { first.clone() };
                    view! { <br /><span class="muted" data-testid="companion-mismatch" title=c.misses.join("\n")>{text}</span> }
                });
                let (name, kind, files) = (c.name, c.role, c.files);
                let label = name.clone();
                view! {
                    <li data-testid="companion" data-name=name>
                        <strong>{label}</strong>" "<span class="muted">{format!("{kind} · {files}")}</span>" "
                        <span data-testid="companion-fits">{fits}</span>
                        {miss}
                    </li>
                }
            })
            .collect_view();
        view! { <h3>"Companions"</h3><ul class="companions">{items}</ul> }
    });
    let other = (!v.other.is_empty()).then(|| {
        view! { <p class="muted" data-testid="other-files">{format!("Other files: {}", v.other.join(", "))}</p> }
    });
    let unreadable = (!v.unreadable.is_empty()).then(|| {
        let said: Vec<String> = v.unreadable.iter().map(|(path, why)| format!("{path} ({why})")).collect();
        view! { <p class="sev-warning" data-testid="unreadable-files">{format!("Could not be read: {}", said.join("; "))}</p> }
    });
    let set_context = move |ev| {
        if let Ok(c) = event_target_value(&ev).trim().parse::<u64>() {
            if (1..=1u64 << 32).contains(&c) {
                context.set(c);
            }
        }
    };
    let set_cache = move |ev| {
        let name = event_target_value(&ev);
        if let Some(t) = CacheType::ALL.iter().find(|t| t.name() == name) {
            cache.set(*t);
        }
    };
    view! {
        <section class="panel variants" data-testid="variants">
            <h2>{format!("{} separate models in {}", models.len(), v.label)}</h2>
            <p class="muted">"Each row is one checkpoint, read from its headers; open one to see every tensor."</p>
            <div class="row variant-picks">
                <label>"Context "
                    <input type="number" min="1" data-testid="variants-context" prop:value=move || context.get().to_string()
                        on:change=set_context />
                </label>
                <label>"KV cache "
                    <select data-testid="variants-cache" on:change=set_cache>
                        {CacheType::ALL.iter().map(|t| view! { <option value=t.name()>{t.name()}</option> }).collect_view()}
                    </select>
                </label>
                <label>"Device memory (GB) "
                    <input type="number" min="0" step="any" data-testid="variants-device" prop:value=move || device.get()
                        on:input=move |ev| device.set(event_target_value(&ev)) />
                </label>
            </div>
            <div class="table-scroll">
                <table class="variants-table">
                    <thead><tr>
                        <th>"Variant"</th><th>"Format"</th><th>"Bytes"</th><th>"Bits/weight"</th>
                        <th>"Parameters"</th><th>"Memory to run"</th><th>"Device"</th><th></th>
                    </tr></thead>
                    <tbody>{body}</tbody>
                </table>
            </div>
            {companions}
            {other}
            {unreadable}
        </section>
    }
}
