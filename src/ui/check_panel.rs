//! "Check": every structural finding, SHA-256 of each file, an optional NaN/Inf scan of every
//! tensor (each with progress, bytes/s and cancel), expected hashes compared per file, and the
//! report exported as the JSON `tensorscope check --sha256 --scan --json` prints.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;

use leptos::prelude::*;
use leptos::task::spawn_local;

use super::state::AppState;
use crate::engine::check_report::{added_findings, expected_for, parse_expected_text};
use crate::engine::job::{CheckOutcome, ScanOutcome};
use crate::engine::report::Report;
use crate::engine::view::human_bytes;
use crate::engine::viewer::severity_name;
use crate::io::driver::now_ms;
use crate::io::values::check;
use crate::io::{browser, Cancel};

/// A running pass: what, bytes done of total, when it started.
#[derive(Clone, Debug, PartialEq)]
struct Pass {
    what: String,
    done: u64,
    total: u64,
    started: f64,
}

/// What the last run produced.
#[derive(Clone, Debug, Default, PartialEq)]
struct Outcome {
    check: CheckOutcome,
    bytes: u64,
    ms: f64,
    /// Workers that read it (0: the page itself).
    workers: usize,
}

/// Builds plain DOM under a parent: every string goes in as a text node (never parsed as HTML),
/// which costs far less bundle than a reactive view per row of a static table.
struct Dom(web_sys::Document);

impl Dom {
    /// Append `<tag attrs…>text</tag>` to `parent` and return it.
    fn add(&self, parent: &web_sys::Node, tag: &str, attrs: &[(&str, &str)], text: &str) -> web_sys::Element {
        let e = self.0.create_element(tag).expect("create element");
        for (k, v) in attrs {
            let _ = e.set_attribute(k, v);
        }
        if !text.is_empty() {
            e.set_text_content(Some(text));
        }
        let _ = parent.append_child(&e);
        e
    }
}

fn rate(bytes: u64, ms: f64) -> String {
    format!("{}/s", human_bytes((bytes as f64 / (ms.max(1.0) / 1000.0)) as u64))
}

/// The check panel of the open checkpoint.
#[component]
pub fn CheckPanel() -> impl IntoView {
    let state = AppState::get();
    let do_sha = RwSignal::new(true);
    let do_scan = RwSignal::new(false);
    let expected_text = RwSignal::new(String::new());
    let job: RwSignal<Option<Pass>> = RwSignal::new(None);
    let outcome: RwSignal<Option<Arc<Outcome>>> = RwSignal::new(None);
    let error = RwSignal::new(None::<String>);
    let cancel = StoredValue::new_local(Cancel::new());
    // A new checkpoint clears the last run.
    Effect::new(move |_| {
        state.cp.track();
        outcome.set(None);
        job.set(None);
    });

    let start = move |_| {
        let Some(cp) = state.cp.get_untracked() else { return };
        cancel.with_value(Cancel::cancel);
        let c = Cancel::new();
        cancel.set_value(c.clone());
        error.set(None);
        outcome.set(None);
        let (sha, scan) = (do_sha.get_untracked(), do_scan.get_untracked());
        let sources = state.sources();
        if sources.len() != cp.files.len() {
            error.set(Some("a file of this checkpoint is not open".into()));
            return;
        }
        let started = now_ms();
        job.set(Some(Pass { what: "starting".into(), done: 0, total: 0, started }));
        // The check's bytes: its first progress report says them.
        let total = Rc::new(Cell::new(0u64));
        spawn_local(async move {
            let mut last = 0.0;
            let seen = total.clone();
            let (files, tensors) = (cp.files.len(), cp.tensors.len());
            let c2 = c.clone();
            let passes = match (sha, scan) {
                (true, true) => format!("SHA-256 of {files} files and NaN/Inf scan of {tensors} tensors"),
                (true, false) => format!("SHA-256 of {files} files"),
                _ => format!("NaN/Inf scan of {tensors} tensors"),
            };
            let result = check(&cp, &sources, sha, scan, &c, move |done, total| {
                seen.set(total);
                let now = now_ms();
                if now - last > 100.0 && !c2.is_cancelled() {
                    last = now;
                    job.set(Some(Pass { what: passes.clone(), done, total, started }));
                }
            })
            .await;
            if c.is_cancelled() {
                job.set(None);
                error.set(Some("check cancelled".into()));
                return;
            }
            job.set(None);
            match result {
                Ok((check, workers)) => {
                    outcome.set(Some(Arc::new(Outcome { check, bytes: total.get(), ms: now_ms() - started, workers })))
                }
                Err(e) => error.set(Some(format!("check failed: {e}"))),
            }
        });
    };

    let expected = Memo::new(move |_| parse_expected_text(&expected_text.get()));
    let export = move |_| {
        let (Some(cp), Some(o)) = (state.cp.get_untracked(), outcome.get_untracked()) else { return };
        let text = Report::check(&cp, &o.check, &expected.get_untracked()).to_text();
        let parts = js_sys::Array::of1(&browser::part(text.as_bytes()));
        let r =
            browser::blob_of(&parts, "application/json").and_then(|b| browser::download(&b, "tensorscope-check.json"));
        if let Err(e) = r {
            error.set(Some(format!("export failed: {e}")));
        }
    };
    let dropped = move |ev: leptos::ev::DragEvent| {
        ev.prevent_default();
        // A file of hashes dropped here is read as text, not opened as a checkpoint by the page.
        ev.stop_propagation();
        let Some(f) = ev.data_transfer().and_then(|d| d.files()).and_then(|l| l.get(0)) else { return };
        spawn_local(async move {
            match browser::blob_text(&f).await {
                Ok(t) => expected_text.set(t),
                Err(e) => error.set(Some(format!("could not read {}: {e}", f.name()))),
            }
        });
    };

    // The results are plain DOM rebuilt on change, strings set as text (see `Dom`).
    let results_ref = NodeRef::<leptos::html::Div>::new();
    Effect::new(move |_| {
        let Some(host) = results_ref.get() else { return };
        host.set_text_content(None);
        let Some(cp) = state.cp.get() else { return };
        let o = outcome.get();
        let expected = expected.get();
        let want = expected_for(&cp.files, &expected);
        let dom = Dom(document());
        let table = dom.add(&host, "table", &[("class", "check-files")], "");
        let head = dom.add(&dom.add(&table, "thead", &[], ""), "tr", &[], "");
        for th in ["File", "Size", "SHA-256", "Expected"] {
            dom.add(&head, "th", &[], th);
        }
        let body = dom.add(&table, "tbody", &[], "");
        for (i, f) in cp.files.iter().enumerate() {
            let got = o.as_ref().and_then(|o| o.check.digests.as_ref()).and_then(|d| d.get(i).cloned());
            let (status, class) = match (&got, &want[i]) {
                (Some(g), Some(w)) if g.eq_ignore_ascii_case(w) => ("match", "sev-info"),
                (Some(_), Some(_)) => ("mismatch", "sev-error"),
                (None, Some(_)) => ("expected hash given", "muted"),
                _ => ("", "muted"),
            };
            let tr = dom.add(&body, "tr", &[("data-testid", "check-file"), ("data-name", &f.path)], "");
            dom.add(&dom.add(&tr, "td", &[], ""), "code", &[], &f.path);
            dom.add(&tr, "td", &[("class", "num")], &human_bytes(f.size));
            let sha = dom.add(&tr, "td", &[], "");
            dom.add(&sha, "code", &[("class", "hash"), ("data-testid", "check-sha")], got.as_deref().unwrap_or(""));
            dom.add(&tr, "td", &[("class", class), ("data-testid", "check-status")], status);
        }
        let Some(o) = o else { return };
        let (bytes, ms) = (o.bytes.to_string(), format!("{:.1}", o.ms));
        let done = format!("Done: {} in {:.2} s ({})", human_bytes(o.bytes), o.ms / 1000.0, rate(o.bytes, o.ms));
        let workers = o.workers.to_string();
        let attrs = [
            ("class", "muted"),
            ("data-testid", "check-done"),
            ("data-bytes", &bytes),
            ("data-ms", &ms),
            ("data-workers", &workers),
        ];
        dom.add(&host, "p", &attrs, &done);
        if let Some(s) = &o.check.scan {
            let counted: Vec<_> = s
                .iter()
                .zip(&cp.tensors)
                .filter_map(|(o, t)| match o {
                    ScanOutcome::Counted(c) => Some((t, c)),
                    _ => None,
                })
                .collect();
            let bad: Vec<_> = counted.iter().filter(|(_, c)| c.nan + c.inf > 0).collect();
            let values: u64 = counted.iter().map(|(_, c)| c.values).sum();
            let line = format!(
                "{} tensors scanned ({values} values): {} hold NaN or infinite values",
                counted.len(),
                bad.len()
            );
            dom.add(&host, "p", &[("data-testid", "scan-summary")], &line);
            let ul = dom.add(&host, "ul", &[], "");
            for (t, c) in bad {
                let li = dom.add(
                    &ul,
                    "li",
                    &[("class", "sev-warning"), ("data-testid", "scan-bad"), ("data-name", &t.name)],
                    "",
                );
                dom.add(&li, "code", &[], &t.name);
                let _ = li.append_with_str_1(&format!(": {} NaN, {} inf of {}", c.nan, c.inf, c.values));
            }
        }
        let added = added_findings(&cp, &o.check, &expected);
        dom.add(&host, "h3", &[], &format!("Findings ({})", cp.findings.len() + added.len()));
        let ul = dom.add(&host, "ul", &[("class", "check-findings")], "");
        for f in cp.findings.iter().chain(&added) {
            let sev = severity_name(f.severity);
            let class = format!("sev-{sev}");
            let li =
                dom.add(&ul, "li", &[("class", &class), ("data-testid", "check-finding"), ("data-severity", sev)], "");
            dom.add(&li, "code", &[("data-testid", "check-code")], f.code);
            let _ = li.append_with_str_1(&format!(" {}", f.message));
        }
    });
    let job_line = move || {
        job.get().map(|j| {
            let pct = (j.done.min(j.total) as f64 / j.total.max(1) as f64 * 100.0).round();
            let rate = format!("{} of {}, {}", human_bytes(j.done), human_bytes(j.total), rate(j.done, now_ms() - j.started));
            view! {
                <span data-testid="check-what">{j.what}</span>" "
                <span class="progress" data-testid="progress"><progress max="100" value=pct></progress>{format!(" {pct}%")}</span>" "
                <span class="muted" data-testid="check-rate">{rate}</span>
            }
        })
    };

    view! {
        <section class="panel" data-testid="check">
            <p class="muted">
                "Checks the open files on this machine: structural findings, SHA-256 of every file and, "
                "optionally, every value of every tensor for NaN or infinity. Nothing is uploaded."
            </p>
            <div class="check-options">
                <label><input type="checkbox" data-testid="check-sha256" prop:checked=move || do_sha.get()
                    on:change=move |ev| do_sha.set(event_target_checked(&ev)) />" SHA-256 of each file"</label>
                <label><input type="checkbox" data-testid="check-scan" prop:checked=move || do_scan.get()
                    on:change=move |ev| do_scan.set(event_target_checked(&ev)) />" Scan every tensor for NaN/Inf"</label>
                <button data-testid="check-run" disabled=move || job.with(Option::is_some) on:click=start>"Run check"</button>
                <button data-testid="check-export" disabled=move || outcome.with(Option::is_none) on:click=export>
                    "Export check report"
                </button>
            </div>
            <label class="expected">
                "Expected SHA-256 (paste sha256sum output or the hash the Hub lists, or drop a file):"
                <textarea
                    data-testid="expected-input"
                    rows="3"
                    placeholder="e3b0c442…  model.safetensors"
                    prop:value=move || expected_text.get()
                    on:input=move |ev| expected_text.set(event_target_value(&ev))
                    on:dragover=|ev: leptos::ev::DragEvent| ev.prevent_default()
                    on:drop=dropped
                ></textarea>
            </label>
            <div class="job" data-testid="check-job" hidden=move || job.with(Option::is_none)>
                {job_line}
                <button data-testid="check-cancel" on:click=move |_| cancel.with_value(Cancel::cancel)>"Cancel"</button>
            </div>
            <Show when=move || error.with(Option::is_some)>
                <p class="sev-error" data-testid="check-error" role="alert">{move || error.get()}</p>
            </Show>
            <div node_ref=results_ref></div>
        </section>
    }
}
