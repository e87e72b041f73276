//! Findings: every rule broken, its severity, code, message, file and tensor.

use leptos::prelude::*;

use super::state::AppState;
use crate::engine::hidden_text::reveal;
use crate::engine::text::base_name;
use crate::engine::viewer::severity_name;

/// The findings of the open checkpoint, tensors linked to their detail.
#[component]
pub fn FindingsView() -> impl IntoView {
    let state = AppState::get();
    move || {
        let cp = state.cp.get()?;
        if cp.findings.is_empty() {
            return Some(
                view! { <p class="panel" data-testid="findings-empty">"No findings: every rule holds."</p> }.into_any(),
            );
        }
        let rows = cp
            .findings
            .iter()
            .map(|f| {
                let sev = severity_name(f.severity);
                let file = f.file.and_then(|i| cp.files.get(i)).map(|fi| base_name(&fi.path).to_owned());
                let tensor = f.tensor.clone().map(|t| {
                    let name = t.clone();
                    let exists = cp.tensor(&t).is_some();
                    view! {
                        <button class="link" data-testid="finding-tensor" disabled=!exists
                            on:click=move |_| state.select(Some(name.clone()))>
                            {t}
                        </button>
                    }
                });
                view! {
                    <tr data-testid="finding" data-severity=sev>
                        <td class=format!("sev-{sev}")>{sev}</td>
                        <td><code data-testid="finding-code">{f.code}</code></td>
                        <td data-testid="finding-message">{reveal(&f.message)}</td>
                        <td>{file}</td>
                        <td>{tensor}</td>
                    </tr>
                }
            })
            .collect_view();
        Some(
            view! {
                <table data-testid="findings">
                    <thead>
                        <tr><th>"Severity"</th><th>"Rule"</th><th>"Message"</th><th>"File"</th><th>"Tensor"</th></tr>
                    </thead>
                    <tbody>{rows}</tbody>
                </table>
            }
            .into_any(),
        )
    }
}
