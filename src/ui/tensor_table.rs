//! The tensor table: search (substring or glob), sort by any column, group by layer with
//! per-layer totals, keyboard navigation, and virtualised rows (smooth at 500k tensors).

use std::collections::HashSet;
use std::sync::Arc;

use leptos::prelude::*;

use super::search_box::SearchBox;
use super::state::{AppState, Shared};
use super::CopyButton;
use crate::engine::hidden_text::reveal;
use crate::engine::text::base_name;
use crate::engine::view::{
    group_by_layer, human_bytes, human_count, narrows, search, sorted, Column, Group, NameIndex,
};

/// A search and what it found: the pattern, the order it filtered, the rows kept.
type LastSearch = (String, Shared<Vec<usize>>, Shared<Vec<usize>>);
use crate::engine::viewer::{flatten, move_cursor, shape_text, visible, Row};

/// Names added to the search index per frame: a few milliseconds of work.
const INDEX_PART: usize = 50_000;

/// Height of one row in pixels (the CSS uses the same).
const ROW_PX: f64 = 28.0;
/// Rows rendered beyond the viewport on each side.
const OVERSCAN: usize = 8;

const COLUMNS: [(Column, &str, &str); 7] = [
    (Column::Name, "Name", "name"),
    (Column::Dtype, "Type", "dtype"),
    (Column::Shape, "Shape", "shape"),
    (Column::Params, "Parameters", "params"),
    (Column::Bytes, "Bytes", "bytes"),
    (Column::Offset, "Offset", "offset"),
    (Column::File, "File", "file"),
];

/// The table of the open checkpoint's tensors.
#[component]
pub fn TensorTable() -> impl IntoView {
    let state = AppState::get();
    let query = RwSignal::new(String::new());
    let sort = RwSignal::new((Column::Index, false));
    let grouped = RwSignal::new(false);
    let collapsed = RwSignal::new(HashSet::<Option<u64>>::new());
    let scroll = RwSignal::new(0.0f64);
    let view_px = RwSignal::new(560.0f64);
    let cursor = RwSignal::new(None::<usize>);
    let scroller = NodeRef::<leptos::html::Div>::new();

    // Sorted once per column change; filtered per keystroke.
    let order = Memo::new(move |_| {
        let (col, desc) = sort.get();
        state.cp.with(|cp| Shared(Arc::new(cp.as_ref().map(|cp| sorted(cp, col, desc)).unwrap_or_default())))
    });
    // The last search: typing that narrows it filters its rows, not all of them.
    let last: StoredValue<Option<LastSearch>> = StoredValue::new(None);
    // Logical parameters per tensor (a packed quantized weight holds more than its elements).
    let params =
        Memo::new(move |_| state.digest.with(|d| Shared(d.as_ref().map_or_else(Arc::default, |d| d.params.clone()))));
    // Every name lowercased in one buffer: built part by part between frames once the table
    // shows (a search before it is ready builds it at once).
    let built = RwSignal::new(None::<Shared<Option<NameIndex>>>);
    Effect::new(move |_| {
        built.set(None);
        let Some(cp) = state.cp.get() else { return };
        leptos::task::spawn_local(async move {
            let current = || state.cp.with_untracked(|now| now.as_ref().is_some_and(|now| Arc::ptr_eq(now, &cp)));
            // Not in the task that renders the table: allocating the index takes ~10 ms at 500k.
            crate::io::driver::yield_now().await;
            if !current() {
                return;
            }
            let mut ix = NameIndex::for_names(&cp);
            for part in cp.tensors.chunks(INDEX_PART) {
                crate::io::driver::yield_now().await;
                if !current() {
                    return;
                }
                ix.extend(part);
            }
            built.set(Some(Shared(Arc::new(Some(ix)))));
        });
    });
    let index = Memo::new(move |_| {
        built.get().unwrap_or_else(|| state.cp.with(|cp| Shared(Arc::new(cp.as_ref().map(|cp| NameIndex::new(cp))))))
    });
    let filtered = Memo::new(move |_| {
        let q = query.get().trim().to_owned();
        let order = order.get();
        if q.is_empty() {
            last.set_value(Some((q, order.clone(), order.clone())));
            return order;
        }
        let from = last.with_value(|l| match l {
            Some((lq, lorder, lrows)) if *lorder == order && narrows(lq, &q) => Some(lrows.clone()),
            _ => None,
        });
        let index = index.get();
        let rows = state.cp.with(|cp| {
            let found = match (cp.as_ref(), index.as_ref()) {
                (Some(cp), Some(ix)) => search(cp, ix, &order, from.as_ref().map(|f| f.as_slice()), &q),
                _ => Vec::new(),
            };
            Shared(Arc::new(found))
        });
        last.set_value(Some((q, order, rows.clone())));
        rows
    });
    let groups = Memo::new(move |_| {
        let rows = filtered.get();
        let g: Vec<Group> = if grouped.get() {
            state.cp.with(|cp| cp.as_ref().map(|cp| group_by_layer(cp, &rows)).unwrap_or_default())
        } else {
            Vec::new()
        };
        Shared(Arc::new(g))
    });
    let flat = Memo::new(move |_| {
        let rows: Vec<Row> = if grouped.get() {
            let closed = collapsed.get();
            flatten(&groups.get(), |l| closed.contains(&l))
        } else {
            filtered.get().iter().map(|&i| Row::Tensor(i)).collect()
        };
        Shared(Arc::new(rows))
    });
    // The viewport's height, now and after every resize.
    let measure = move || {
        // In a frame callback, after the table may have closed: no element then.
        if let Some(el) = scroller.try_get_untracked().flatten() {
            view_px.set(el.client_height() as f64);
        }
    };
    // Measured in the next frame, not in the task that renders the table: reading the height
    // forces a layout of the page, 20-30 ms at 500k tensors.
    Effect::new(move |_| {
        if scroller.get().is_some() {
            request_animation_frame(measure);
        }
    });
    let resize = window_event_listener(leptos::ev::resize, move |_| measure());
    on_cleanup(move || resize.remove());
    // A new list starts at the top.
    Effect::new(move |_| {
        flat.track();
        cursor.set(None);
    });

    let window = move || {
        let flat = flat.get();
        let (a, b) = visible(flat.len(), ROW_PX, scroll.get(), view_px.get(), OVERSCAN);
        (a, flat[a..b].iter().enumerate().map(|(k, &r)| (a + k, r)).collect::<Vec<_>>())
    };

    let scroll_to = move |pos: usize| {
        let Some(el) = scroller.try_get_untracked().flatten() else { return };
        let top = pos as f64 * ROW_PX;
        let h = el.client_height() as f64;
        let cur = el.scroll_top() as f64;
        if top < cur {
            el.set_scroll_top(top as i32);
        } else if top + ROW_PX > cur + h {
            el.set_scroll_top((top + ROW_PX - h) as i32);
        }
    };

    let activate = move |row: Row| match row {
        Row::Tensor(i) => {
            let name = state.cp.with_untracked(|cp| cp.as_ref().map(|cp| cp.tensors[i].name.clone()));
            state.select(name);
        }
        Row::Group(g) => {
            if let Some(layer) = groups.with_untracked(|gs| gs.get(g).map(|g| g.layer)) {
                collapsed.update(|c| {
                    if !c.remove(&layer) {
                        c.insert(layer);
                    }
                });
            }
        }
    };

    // Follow the selection (a permalink, a finding's link) to its row.
    Effect::new(move |_| {
        let Some(name) = state.selected.get() else { return };
        let pos = state.cp.with_untracked(|cp| {
            let cp = cp.as_ref()?;
            flat.with_untracked(|f| f.iter().position(|r| matches!(r, Row::Tensor(i) if cp.tensors[*i].name == name)))
        });
        if let Some(p) = pos {
            cursor.set(Some(p));
            request_animation_frame(move || scroll_to(p));
        }
    });

    let keydown = move |ev: leptos::ev::KeyboardEvent| {
        let key = ev.key();
        let len = flat.with_untracked(|f| f.len());
        if key == "Enter" || key == " " {
            if let Some(row) = cursor.get_untracked().and_then(|c| flat.with_untracked(|f| f.get(c).copied())) {
                ev.prevent_default();
                activate(row);
            }
            return;
        }
        let page = (view_px.get_untracked() / ROW_PX).floor().max(1.0) as usize;
        if let Some(c) = move_cursor(cursor.get_untracked(), len, page, &key) {
            ev.prevent_default();
            cursor.set(Some(c));
            scroll_to(c);
        }
    };

    let header = COLUMNS
        .into_iter()
        .map(|(col, label, id)| {
            let click = move |_| {
                sort.update(|s| {
                    *s = if s.0 == col {
                        if s.1 {
                            (Column::Index, false)
                        } else {
                            (col, true)
                        }
                    } else {
                        (col, false)
                    }
                })
            };
            let mark = move || match sort.get() {
                (c, false) if c == col => " ▲",
                (c, true) if c == col => " ▼",
                _ => "",
            };
            let aria = move || match sort.get() {
                (c, false) if c == col => "ascending",
                (c, true) if c == col => "descending",
                _ => "none",
            };
            view! {
                <button class=format!("th col-{id}") role="columnheader" aria-sort=aria data-testid=format!("sort-{id}") on:click=click>
                    {label}
                    {mark}
                </button>
            }
        })
        .collect_view();

    let render_row = move |(pos, row): (usize, Row)| {
        let is_cursor = move || cursor.get() == Some(pos);
        let click = move |_| {
            cursor.set(Some(pos));
            activate(row);
        };
        match row {
            Row::Group(g) => {
                let (layer, n, params, bytes) = groups.with_untracked(|gs| {
                    let g = &gs[g];
                    (g.layer, g.rows.len(), g.params, g.bytes)
                });
                let closed = move || collapsed.with(|c| c.contains(&layer));
                let title = match layer {
                    Some(l) => format!("Layer {l}"),
                    None => "Not in a layer".to_owned(),
                };
                view! {
                    <div class="tr group" role="row" data-testid="group-row" class:cursor=is_cursor on:click=click>
                        <span class="col-name" role="gridcell">
                            {move || if closed() { "▸ " } else { "▾ " }}
                            <span data-testid="group-title">{title}</span>
                            <span class="muted">{format!("  {n} tensors")}</span>
                        </span>
                        <span class="col-dtype" role="gridcell"></span>
                        <span class="col-shape" role="gridcell"></span>
                        <span class="col-params num" role="gridcell" data-testid="group-params">{human_count(params)}</span>
                        <span class="col-bytes num" role="gridcell" data-testid="group-bytes">{human_bytes(bytes)}</span>
                        <span class="col-offset" role="gridcell"></span>
                        <span class="col-file" role="gridcell"></span>
                    </div>
                }
                .into_any()
            }
            Row::Tensor(i) => {
                let cp = state.cp.get_untracked().expect("rows exist only with a checkpoint");
                let t = &cp.tensors[i];
                let name = t.name.clone();
                let is_sel = {
                    let name = name.clone();
                    move || state.selected.with(|s| s.as_deref() == Some(name.as_str()))
                };
                let file = cp.files.get(t.file).map(|f| base_name(&f.path).to_owned()).unwrap_or_default();
                view! {
                    <div
                        class="tr"
                        role="row"
                        data-testid="tensor-row"
                        data-name=name.clone()
                        class:cursor=is_cursor
                        class:selected=is_sel
                        on:click=click
                    >
                        <span class="col-name" role="gridcell" data-testid="cell-name">
                            <span class="name">{reveal(&name)}</span>
                            <CopyButton text=name.clone() label="copy" />
                        </span>
                        <span class="col-dtype" role="gridcell" data-testid="cell-dtype">{t.dtype.name()}</span>
                        <span class="col-shape" role="gridcell">{shape_text(&t.shape)}</span>
                        <span class="col-params num" role="gridcell" data-testid="cell-params">{params.with_untracked(|p| p.get(i).copied()).map(human_count).unwrap_or_default()}</span>
                        <span class="col-bytes num" role="gridcell" data-testid="cell-bytes">{human_bytes(t.nbytes)}</span>
                        <span class="col-offset num" role="gridcell">{t.offset}</span>
                        <span class="col-file" role="gridcell" title=file.clone()>{t.file}</span>
                    </div>
                }
                .into_any()
            }
        }
    };

    view! {
        <section data-testid="tensor-table">
            <div class="table-tools">
                <SearchBox value=query placeholder="Search names: attn or blk.*.attn_v*" testid="table-search" />
                <label>
                    <input type="checkbox" data-testid="group-toggle" prop:checked=move || grouped.get()
                        on:change=move |ev| grouped.set(event_target_checked(&ev)) />
                    " Group by layer"
                </label>
                <span class="muted" data-testid="table-count">
                    {move || {
                        let total = state.cp.with(|cp| cp.as_ref().map_or(0, |c| c.tensors.len()));
                        format!("{} of {} tensors", filtered.with(|f| f.len()), total)
                    }}
                </span>
            </div>
            <div class="grid" role="grid" aria-label="Tensors" aria-rowcount=move || flat.with(|f| f.len() + 1)>
                <div role="rowgroup"><div class="tr thead" role="row">{header}</div></div>
                <div
                    class="tbody"
                    style:height=move || format!("min({}px, calc(100vh - 15rem))", (flat.with(|f| f.len()) as f64 * ROW_PX).max(ROW_PX))
                    role="rowgroup"
                    tabindex="0"
                    data-testid="table-body"
                    aria-label="Tensor rows: arrow keys move, Enter opens"
                    node_ref=scroller
                    on:scroll=move |_| {
                        if let Some(el) = scroller.get_untracked() {
                            scroll.set(el.scroll_top() as f64);
                            view_px.set(el.client_height() as f64);
                        }
                    }
                    on:keydown=keydown
                >
                    <div class="spacer" style:height=move || format!("{}px", flat.with(|f| f.len()) as f64 * ROW_PX)>
                        <div class="rows" style:transform=move || format!("translateY({}px)", window().0 as f64 * ROW_PX)>
                            // Rows are keyed by place within one checkpoint: another checkpoint
                            // builds them anew (the same key there is another tensor).
                            {move || {
                                state.cp.track();
                                view! { <For each=move || window().1 key=|(pos, row)| (*pos, *row) children=render_row /> }
                            }}
                        </div>
                    </div>
                </div>
            </div>
        </section>
    }
}
