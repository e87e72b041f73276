//! Summary: format, files, totals, bits per weight, the dtype / quant mix, file type, findings.

use leptos::prelude::*;

use super::state::{AppState, Tab};
use crate::engine::model::Format;
use crate::engine::naming::{file_type_name, parse_name};
use crate::engine::text::base_name;
use crate::engine::view::{human_bytes, human_count};
use crate::engine::viewer::severity_counts;

/// The summary of the open checkpoint.
#[component]
pub fn SummaryView() -> impl IntoView {
    let state = AppState::get();
    move || {
        let cp = state.cp.get()?;
        let digest = state.digest.get_untracked()?;
        let (s, kind, kind_detail) = (&digest.summary, digest.kind, digest.kind_detail.clone());
        let is_adapter = kind == crate::engine::kind::Kind::Adapter;
        let (errors, warnings, infos) = severity_counts(&cp.findings);
        let total_bytes = s.all.bytes.max(1) as f64;
        let file_type = (cp.format == Format::Gguf).then(|| {
            let id = cp.meta("general.file_type").and_then(|v| match v {
                crate::engine::model::MetaValue::Gguf(v) => v.as_u64(),
                _ => None,
            });
            match id {
                Some(id) => format!("{id} ({})", file_type_name(id).unwrap_or("unknown")),
                None => "not set".to_owned(),
            }
        });
        let name_reading = (cp.format == Format::Gguf).then(|| cp.files.first()).flatten().map(|f| {
            let p = parse_name(base_name(&f.path));
            let mut parts = vec![format!("base name “{}”", p.base_name)];
            if let Some(l) = p.size_label {
                parts.push(format!("size {l}"));
            }
            if let Some(e) = p.encoding {
                parts.push(format!("encoding {e}"));
            }
            if let Some((k, n)) = p.shard {
                parts.push(format!("shard {k} of {n}"));
            }
            parts.join(", ")
        });
        let files = cp
            .files
            .iter()
            .map(|f| {
                view! {
                    <li>
                        <code>{f.path.clone()}</code>
                        " "
                        <span class="muted">{human_bytes(f.size)}</span>
                    </li>
                }
            })
            .collect_view();
        let bars = s
            .quant_mix
            .iter()
            .map(|(name, t)| {
                let pct = t.bytes as f64 / total_bytes * 100.0;
                view! {
                    <div class="bar-row" data-testid="dtype-row">
                        <span class="bar-label"><code>{name.clone()}</code></span>
                        <span class="bar-track">
                            <span class="bar-fill" style:width=format!("{pct:.2}%")></span>
                        </span>
                        <span class="num">{format!("{} tensors", t.tensors)}</span>
                        <span class="num">{human_count(t.params)}</span>
                        <span class="num">{human_bytes(t.bytes)}</span>
                        <span class="num">{format!("{:.2} bpw", t.bits_per_weight())}</span>
                    </div>
                }
            })
            .collect_view();
        Some(view! {
            <section class="panel" data-testid="summary">
                <dl class="facts">
                    <dt>"Kind"</dt>
                    <dd data-testid="summary-kind" data-kind=kind.name()>
                        <strong>{kind.name()}</strong>
                        {(!kind_detail.is_empty()).then(|| format!(": {kind_detail}"))}
                    </dd>
                    <dt>"Format"</dt>
                    <dd data-testid="summary-format">{cp.format.name()}</dd>
                    <dt>"Files"</dt>
                    <dd data-testid="summary-files">{cp.files.len()}</dd>
                    <dt>"Tensors"</dt>
                    <dd data-testid="summary-tensors">{s.all.tensors}</dd>
                    <dt>"Parameters"</dt>
                    <dd data-testid="summary-params" title=s.all.params.to_string()>{human_count(s.all.params)}</dd>
                    <dt>"Bytes"</dt>
                    <dd data-testid="summary-bytes" title=s.all.bytes.to_string()>{human_bytes(s.all.bytes)}</dd>
                    <dt>"Bits per weight"</dt>
                    <dd data-testid="summary-bpw">{format!("{:.3}", s.all.bits_per_weight())}</dd>
                    {(s.overhead_bytes > 0).then(|| view! {
                        <dt>"Quantization overhead"</dt>
                        <dd data-testid="summary-overhead" title=s.overhead_bytes.to_string()>
                            {format!("{} of scales, zero points and indexes", human_bytes(s.overhead_bytes))}
                        </dd>
                    })}
                    {file_type.map(|ft| view! {
                        <dt>"general.file_type"</dt>
                        <dd data-testid="summary-file-type">{ft}</dd>
                    })}
                    {name_reading.map(|n| view! {
                        <dt>"File name reads as"</dt>
                        <dd data-testid="summary-name">{n}</dd>
                    })}
                    <dt>"Findings"</dt>
                    <dd data-testid="summary-findings">
                        <button class="link" on:click=move |_| state.tab.set(Tab::Findings)>
                            <span class="sev-error">{format!("{errors} errors")}</span>
                            ", "
                            <span class="sev-warning">{format!("{warnings} warnings")}</span>
                            ", "
                            <span class="sev-info">{format!("{infos} notes")}</span>
                        </button>
                    </dd>
                </dl>
                <h2>"Bytes by type (quant mix)"</h2>
                <div class="bars" data-testid="dtype-chart">{bars}</div>
                {is_adapter.then(|| view! { <super::AdapterView cp=cp.clone() /> })}
                <super::ImportsView cp=cp.clone() />
                <super::EstimateView cp=cp.clone() digest=digest.clone() />
                <h2>"Files"</h2>
                <ul class="files">{files}</ul>
            </section>
        })
    }
}
