//! An SVG histogram of a value distribution.

use leptos::prelude::*;

use crate::engine::histogram::Bins;
use crate::engine::viewer::{bars, fmt_num};

const W: f64 = 600.0;
const H: f64 = 160.0;

/// Bars of `bins`, linear or log heights, with the range below.
#[component]
pub fn HistogramChart(bins: Bins, #[prop(into)] log: Signal<bool>, testid: &'static str) -> impl IntoView {
    let (lo, hi) = (bins.lo, bins.hi);
    let rects = move || {
        bars(&bins, W, H, log.get())
            .into_iter()
            .map(|b| {
                view! {
                    <rect x=b.x y=b.y width=(b.w - 0.5).max(0.5) height=b.h>
                        <title>{b.count.to_string()}</title>
                    </rect>
                }
            })
            .collect_view()
    };
    view! {
        <figure class="hist" data-testid=testid>
            <svg viewBox=format!("0 0 {W} {H}") preserveAspectRatio="none" role="img" aria-label="histogram">
                {rects}
            </svg>
            <figcaption class="axis">
                <span>{fmt_num(lo)}</span>
                <span>{fmt_num(hi)}</span>
            </figcaption>
        </figure>
    }
}
