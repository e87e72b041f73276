//! The safety report of a pickle checkpoint: every import its pickles would make, where, and
//! the verdict (expected for a checkpoint, unknown, or dangerous). Nothing was imported or run.

use std::sync::Arc;

use leptos::prelude::*;

use crate::engine::model::Checkpoint;
use crate::engine::pickle::safety::Verdict;

/// The imports table of `cp` (nothing for checkpoints that are not pickles).
#[component]
pub fn ImportsView(cp: Arc<Checkpoint>) -> impl IntoView {
    if cp.format != crate::engine::model::Format::Pickle {
        return ().into_any();
    }
    let dangerous = cp.imports.iter().filter(|(_, i)| i.verdict == Verdict::Dangerous).count();
    let unknown = cp.imports.iter().filter(|(_, i)| i.verdict == Verdict::Unknown).count();
    let verdict = match (dangerous, unknown) {
        (0, 0) => "Only what torch checkpoints use: rebuilding tensors and storages.".to_owned(),
        (0, n) => format!("{n} imports a checkpoint does not need: loading this file runs their code."),
        (n, _) => format!("{n} dangerous imports: loading this file with torch.load or pickle would run them."),
    };
    let alarming = dangerous > 0;
    let torchscript = matches!(
        cp.meta("pickle.container"),
        Some(crate::engine::model::MetaValue::Text(c)) if c == "torchscript"
    );
    let torchscript = torchscript.then(|| {
        view! {
            <p class="sev-warning" data-testid="torchscript">
                "A TorchScript archive: torch.jit.load (which torch.load hands it to) compiles and runs the \
                 TorchScript code under its code/ folder. Its classes (__torch__.…) are that code, not Python imports."
            </p>
        }
    });
    let weights_only = cp.weights_only.as_ref().map(|w| {
        let class = if w.loads { "sev-info" } else { "sev-warning" };
        view! { <p data-testid="weights-only" data-loads=w.loads.to_string() class=class>{format!("{}.", w.sentence())}</p> }
    });
    let rows = cp
        .imports
        .iter()
        .map(|(file, i)| {
            let (label, class) = match i.verdict {
                Verdict::Expected => ("expected", "sev-info"),
                Verdict::Unknown => ("unknown", "sev-warning"),
                Verdict::Dangerous => ("dangerous", "sev-error"),
            };
            view! {
                <tr data-testid="import-row" data-verdict=label>
                    <td><code>{format!("{}.{}", i.module, i.name)}</code></td>
                    <td class=class>{label}</td>
                    <td class="num">{format!("byte {}", i.at)}</td>
                    <td class="num">{format!("file {file}")}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <h2>"Safety: what loading it would import"</h2>
        <p data-testid="imports-verdict" class:sev-error=alarming>
            {verdict}
            " Tensorscope read the pickle without importing or running anything."
        </p>
        {torchscript}
        {weights_only}
        <table class="modules" data-testid="imports">
            <thead><tr><th>"Import"</th><th>"Verdict"</th><th>"Where"</th><th>"File"</th></tr></thead>
            <tbody>{rows}</tbody>
        </table>
    }
    .into_any()
}
