//! One check for both builds (`tests/jobs.rs` natively, `tests/web.rs` in the bundle): of `−0`
//! and `+0`, a histogram's extreme is the zero seen first, through lanes, runs, batches and
//! merges. In wasm `f32::min` is a call to `fminf`, which chose otherwise on a tie: the CLI and
//! the browser printed different signs.

use tensorscope::engine::histogram::Histogram;

/// Panics unless every placement of the two zeros keeps the first one's sign.
pub fn a_zero_extreme_keeps_the_sign_seen_first() {
    for (first, second) in [(-0.0f32, 0.0f32), (0.0, -0.0)] {
        for (fill, at) in [(1.0f32, [5, 200]), (-1.0, [130, 131]), (1.0, [3, 299])] {
            let mut values = vec![fill; 300];
            (values[at[0]], values[at[1]]) = (first, second);
            let mut h = Histogram::default();
            for batch in values.chunks(150) {
                h.add_to_piece(batch);
                h.end_piece();
            }
            let zero = if fill > 0.0 { h.stats.min } else { h.stats.max };
            assert_eq!(zero.to_bits(), f64::from(first).to_bits(), "{first} then {second}, at {at:?}");
        }
    }
}
