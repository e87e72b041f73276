//! The Tokenizer tab: the tokenizer named, its special tokens resolved to their text, a
//! virtualised token table (only the rows in view are read from the file) with lookup by id or
//! by text, and every chat template as code with line numbers and its risky constructs.

use std::sync::Arc;

use leptos::prelude::*;
use leptos::task::spawn_local;

use super::search_box::SearchBox;
use super::state::AppState;
use crate::engine::hidden_text::reveal;
use crate::engine::model::Checkpoint;
use crate::engine::template::{scan, templates};
use crate::engine::tokens::{details_job, find_job, join, join_found, page_job, specials, tokenizer, visible, Token};
use crate::engine::viewer::severity_name;
use crate::io::{run, Cancel};

/// Height of one token row, in CSS pixels.
const ROW_PX: u64 = 24;
/// Rows read around the ones in view.
const WINDOW: u64 = 60;
/// Most search matches shown.
const FOUND: usize = 500;

/// The Tokenizer tab of the open checkpoint.
#[component]
pub fn TokenizerView() -> impl IntoView {
    let state = AppState::get();
    move || {
        let cp = state.cp.get()?;
        Some(view! {
            <section class="panel" data-testid="tokenizer">
                <TokenPanel cp=cp.clone() />
                <TemplatesView cp=cp />
            </section>
        })
    }
}

/// Whether the tab has anything to show: a token list or a chat template.
pub fn has_tokenizer(cp: &Checkpoint) -> bool {
    tokenizer(cp).is_some() || !templates(cp).is_empty()
}

#[component]
fn TokenPanel(cp: Arc<Checkpoint>) -> impl IntoView {
    let state = AppState::get();
    let Some(t) = tokenizer(&cp) else {
        return view! { <p class="muted" data-testid="no-tokens">"No token list in this checkpoint."</p> }.into_any();
    };
    let len = t.len();
    let facts = format!(
        "{} tokenizer, pre-tokenizer {}, {} tokens, {} merges",
        t.model.unwrap_or("unnamed"),
        t.pre.unwrap_or("none"),
        len,
        t.merges.map_or(0, |m| m.len)
    );
    let merges = t.merges.cloned().map(|m| (m, t.file));
    let special_list = specials(&cp, len);
    let special_text: RwSignal<Vec<Option<String>>> = RwSignal::new(vec![None; special_list.len()]);
    let rows: RwSignal<Arc<Vec<Token>>> = RwSignal::new(Arc::new(Vec::new()));
    let found: RwSignal<Option<Arc<Vec<Token>>>> = RwSignal::new(None);
    let error = RwSignal::new(None::<String>);
    let top = RwSignal::new(0u64);
    let query = RwSignal::new(String::new());
    let picked = RwSignal::new(None::<u64>);
    let cancel = StoredValue::new_local(Cancel::new());
    let scroller = NodeRef::<leptos::html::Div>::new();
    // The special tokens' texts, once.
    {
        let (cp, ids) = (cp.clone(), special_list.iter().map(|s| (s.id, s.in_vocab)).collect::<Vec<_>>());
        let src = state.sources();
        spawn_local(async move {
            let Some(t) = tokenizer(&cp) else { return };
            let mut texts = Vec::new();
            for (id, ok) in ids {
                let text = if ok {
                    run(page_job(&t, id, 1), &src, &Cancel::new(), |_| {})
                        .await
                        .ok()
                        .and_then(|p| join(&t, &p).pop())
                        .map(|tok| visible(&tok.text))
                } else {
                    Some("(not in the vocabulary)".into())
                };
                texts.push(text);
            }
            special_text.set(texts);
        });
    }
    // The rows around the view, or the matches of a text search.
    let cp_rows = cp.clone();
    Effect::new(move |_| {
        let (from, q) = (top.get(), query.get());
        cancel.with_value(Cancel::cancel);
        let c = Cancel::new();
        cancel.set_value(c.clone());
        let (cp, src) = (cp_rows.clone(), state.sources());
        let q = q.trim().to_owned();
        let id = q.trim_start_matches('#').parse::<u64>().ok();
        if let Some(id) = id.filter(|_| !q.is_empty()) {
            found.set(None);
            picked.set(Some(id));
            if let Some(el) = scroller.get_untracked() {
                let px = (id.min(len) * ROW_PX).saturating_sub(4 * ROW_PX);
                el.set_scroll_top(i32::try_from(px).unwrap_or(i32::MAX));
            }
        }
        spawn_local(async move {
            let Some(t) = tokenizer(&cp) else { return };
            let r = if q.is_empty() || id.is_some() {
                found.set(None);
                let first = from.saturating_sub(WINDOW / 3);
                run(page_job(&t, first, WINDOW), &src, &c, |_| {}).await.map(|p| {
                    rows.set(Arc::new(join(&t, &p)));
                })
            } else {
                match run(find_job(&t, &q, FOUND), &src, &c, |_| {}).await {
                    Ok(pages) => {
                        let page = pages.into_iter().next().unwrap_or_default();
                        let ids: Vec<u64> = page.items.iter().map(|(i, _)| *i).collect();
                        run(details_job(&t, &ids), &src, &c, |_| {}).await.map(|details| {
                            found.set(Some(Arc::new(join_found(&t, &page, &details))));
                        })
                    }
                    Err(e) => Err(e),
                }
            };
            if c.is_cancelled() {
                return;
            }
            error.set(r.err().map(|e| e.to_string()));
        });
    });
    on_cleanup(move || cancel.with_value(Cancel::cancel));
    let row = move |tok: &Token, top_px: Option<u64>| {
        let style = top_px.map(|p| format!("top:{p}px")).unwrap_or_default();
        let id = tok.id;
        view! {
            <div class="token-row" class:picked=move || picked.get() == Some(id) style=style
                data-testid="token-row" data-id=id.to_string()>
                <span class="num idx">{id}</span>
                <code class="token-text">{visible(&tok.text)}</code>
                <span class="muted">{tok.kind.clone()}</span>
                <span class="num">{format!("{:.4}", tok.score)}</span>
            </div>
        }
    };
    let specials_view = special_list
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let (role, id) = (s.role, s.id);
            view! {
                <dt>{role}</dt>
                <dd data-testid=format!("special-{role}")>
                    <span class="num">{id}</span>
                    " "
                    <code>{move || special_text.with(|t| t.get(i).cloned().flatten().unwrap_or_default())}</code>
                </dd>
            }
        })
        .collect_view();
    view! {
        <h2>"Tokenizer"</h2>
        <p data-testid="tokenizer-facts">{facts}</p>
        <dl class="facts" data-testid="specials">{specials_view}</dl>
        {merges.map(|(array, file)| view! {
            <h3>"Merges"</h3>
            <super::MetaArray array=array file=file />
        })}
        <h3>"Tokens"</h3>
        <label class="search-label">
            "Look a token up by id or by text "
            <SearchBox value=query placeholder="id (e.g. 128000) or text" testid="token-search" />
        </label>
        {move || error.get().map(|e| view! { <p class="sev-error" role="alert">{e}</p> })}
        {move || match found.get() {
            Some(list) => view! {
                <p class="muted" data-testid="token-found-count">{format!("{} tokens match", list.len())}</p>
                <div class="token-found" data-testid="token-found">
                    {list.iter().map(|t| row(t, None)).collect_view()}
                </div>
            }
            .into_any(),
            None => view! {
                <div class="token-scroll" node_ref=scroller data-testid="token-scroll" tabindex="0" role="region"
                    aria-label="Tokens by id"
                    on:scroll=move |_| {
                        if let Some(el) = scroller.get_untracked() {
                            top.set(el.scroll_top().max(0) as u64 / ROW_PX);
                        }
                    }>
                    <div class="token-space" style=format!("height:{}px", len.saturating_mul(ROW_PX))>
                        {move || rows.get().iter().map(|t| row(t, Some(t.id * ROW_PX))).collect_view()}
                    </div>
                </div>
            }
            .into_any(),
        }}
    }
    .into_any()
}

/// Every chat template as numbered lines of text (hidden characters shown as escapes), with the
/// constructs of template injection.
#[component]
fn TemplatesView(cp: Arc<Checkpoint>) -> impl IntoView {
    let list = templates(&cp);
    if list.is_empty() {
        return view! { <p class="muted">"No chat template."</p> }.into_any();
    }
    let items = list
        .into_iter()
        .map(|t| {
            let hits = scan(&t.text)
                .into_iter()
                .map(|h| {
                    let class = format!("sev-{}", severity_name(h.rule.severity));
                    view! {
                        <li class=class data-testid="template-finding">
                            {format!("{} line {}: {}", h.rule.code, h.line, h.construct)}
                        </li>
                    }
                })
                .collect_view();
            let lines = t
                .text
                .split('\n')
                .enumerate()
                .map(|(i, l)| view! { <span class="code-line"><span class="ln">{i + 1}</span>{reveal(l)}</span> })
                .collect_view();
            view! {
                <div class="template" data-testid="template" data-name=t.name.clone()>
                    <h3>{format!("{} ", t.name)}<span class="muted">{t.source.clone()}</span></h3>
                    <ul class="findings">{hits}</ul>
                    <pre class="code" data-testid="template-code">{lines}</pre>
                </div>
            }
        })
        .collect_view();
    view! {
        <h2>"Chat templates"</h2>
        <p class="muted">"Shown as text, never run."</p>
        {items}
    }
    .into_any()
}
