//! Viewer logic the browser UI needs, kept here so host tests cover it: the flattened rows of
//! a (grouped) tensor table, the visible window of a virtualised list, keyboard movement,
//! `#tensor=NAME` permalinks, element-range input, histogram bar geometry and value labels.

use super::findings::{Finding, Severity};
use super::gguf::Value;
use super::histogram::Bins;
use super::model::MetaValue;
use super::view::Group;

/// One line of the tensor table: a layer heading (index into the groups) or a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Row {
    Group(usize),
    Tensor(usize),
}

/// The table's lines: every group heading followed by its tensors unless it is collapsed.
pub fn flatten(groups: &[Group], collapsed: impl Fn(Option<u64>) -> bool) -> Vec<Row> {
    let mut out = Vec::with_capacity(groups.len() + groups.iter().map(|g| g.rows.len()).sum::<usize>());
    for (gi, g) in groups.iter().enumerate() {
        out.push(Row::Group(gi));
        if !collapsed(g.layer) {
            out.extend(g.rows.iter().map(|&i| Row::Tensor(i)));
        }
    }
    out
}

/// The rows `first..end` of a virtualised list of `total` rows `row_px` high to render for a
/// viewport `view_px` high scrolled to `scroll_px`, with `overscan` extra rows either side.
pub fn visible(total: usize, row_px: f64, scroll_px: f64, view_px: f64, overscan: usize) -> (usize, usize) {
    if total == 0 || row_px <= 0.0 {
        return (0, 0);
    }
    let first = (scroll_px.max(0.0) / row_px).floor() as usize;
    let shown = (view_px.max(0.0) / row_px).ceil() as usize + 1;
    let start = first.saturating_sub(overscan).min(total);
    let end = first.saturating_add(shown).saturating_add(overscan).min(total);
    (start, end.max(start))
}

/// Where a keyboard key moves the cursor in a list of `len` rows showing `page` rows at once.
/// `None` for keys that do not move it.
pub fn move_cursor(cursor: Option<usize>, len: usize, page: usize, key: &str) -> Option<usize> {
    if len == 0 {
        return None;
    }
    let last = len - 1;
    let c = cursor.map(|c| c.min(last));
    Some(match (key, c) {
        ("ArrowDown" | "j", None) | ("Home", _) => 0,
        ("ArrowUp" | "k", None) | ("End", _) => last,
        ("ArrowDown" | "j", Some(c)) => (c + 1).min(last),
        ("ArrowUp" | "k", Some(c)) => c.saturating_sub(1),
        ("PageDown", c) => c.map_or(0, |c| (c + page.max(1)).min(last)),
        ("PageUp", c) => c.map_or(0, |c| c.saturating_sub(page.max(1))),
        _ => return None,
    })
}

/// `#tensor=NAME` for a tensor name (percent-encoded so any name survives the URL).
pub fn permalink(name: &str) -> String {
    format!("#tensor={}", percent_encode(name))
}

/// The tensor name a location hash (`#tensor=NAME`, with or without `#`) points at.
pub fn permalink_tensor(hash: &str) -> Option<String> {
    let h = hash.strip_prefix('#').unwrap_or(hash);
    h.split('&').find_map(|kv| kv.strip_prefix("tensor=")).and_then(percent_decode)
}

/// Percent-encode everything but unreserved URL characters.
pub fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~*".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Decode `%XX` escapes; `None` for a malformed escape or bytes that are not UTF-8.
pub fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// `search` (a URL's query, with or without `?`) with every `key` parameter replaced by one
/// `key=VALUE` per value (percent-encoded), where the first `key` stood or else at the end; the
/// other parameters keep their text and order. Empty when no parameter is left, else with `?`.
pub fn with_query_values(search: &str, key: &str, values: &[String]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut placed = false;
    let ours = values.iter().map(|v| format!("{key}={}", percent_encode(v)));
    for kv in search.trim_start_matches('?').split('&').filter(|kv| !kv.is_empty()) {
        if kv.split('=').next() != Some(key) {
            out.push(kv.to_owned());
        } else if !placed {
            out.extend(ours.clone());
            placed = true;
        }
    }
    if !placed {
        out.extend(ours);
    }
    if out.is_empty() {
        String::new()
    } else {
        format!("?{}", out.join("&"))
    }
}

/// An element range typed as `A:B` (or `A..B`, `A-B`), end exclusive.
pub fn parse_range(s: &str) -> Option<(u64, u64)> {
    let s = s.trim();
    let (a, b) = s.split_once(':').or_else(|| s.split_once("..")).or_else(|| s.split_once('-'))?;
    let (a, b) = (a.trim().replace('_', "").parse().ok()?, b.trim().replace('_', "").parse().ok()?);
    (a < b).then_some((a, b))
}

/// A shape as shown in the table: `[4096, 32000]`, `[]` for a scalar.
pub fn shape_text(shape: &[u64]) -> String {
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    format!("[{}]", dims.join(", "))
}

/// One bar of a histogram chart, in chart units.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bar {
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
    pub count: u64,
}

/// Bars for `bins` in a `width` × `height` box; heights are linear or `log` (log(1 + count)).
/// A non-empty bin is at least one unit high so a lone outlier stays visible.
pub fn bars(bins: &Bins, width: f64, height: f64, log: bool) -> Vec<Bar> {
    let n = bins.counts.len();
    if n == 0 {
        return Vec::new();
    }
    let scale = |c: u64| if log { (c as f64).ln_1p() } else { c as f64 };
    let top = bins.counts.iter().map(|&c| scale(c)).fold(0.0, f64::max);
    let w = width / n as f64;
    bins.counts
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let mut h = if top > 0.0 { scale(c) / top * height } else { 0.0 };
            if c > 0 {
                h = h.max(1.0);
            }
            Bar { x: i as f64 * w, y: height - h, w, h, count: c }
        })
        .collect()
}

/// A number for people: integers as is, others with 4 significant digits.
pub fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        return if v.is_nan() {
            "NaN".into()
        } else if v > 0.0 {
            "+inf".into()
        } else {
            "-inf".into()
        };
    }
    if v == v.trunc() && v.abs() < 1e15 {
        return format!("{v:.0}");
    }
    let a = v.abs();
    if (1e-3..1e6).contains(&a) {
        let digits = (3 - a.log10().floor() as i32).max(0) as usize;
        format!("{v:.digits$}")
    } else {
        format!("{v:.3e}")
    }
}

/// The type label of a metadata value: `string` for safetensors text, `u32`, `array[string]`.
pub fn meta_type(v: &MetaValue) -> String {
    match v {
        MetaValue::Text(_) => "string".into(),
        MetaValue::Gguf(Value::Array(a)) => format!("array[{}]", a.item_type.name()),
        MetaValue::Gguf(v) => v.value_type().name().into(),
    }
}

/// A one-line preview of an array's first `n` items: `["<s>", "</s>", …]`.
pub fn array_preview(items: &[Value], len: u64, n: usize) -> String {
    let shown: Vec<String> = items
        .iter()
        .take(n)
        .map(|v| match v {
            Value::String(s) => format!("{s:?}"),
            other => other.to_string(),
        })
        .collect();
    let more = if len > shown.len() as u64 { ", …" } else { "" };
    format!("[{}{more}]", shown.join(", "))
}

/// Whether a text value is long enough to be shown as a block (chat templates, JSON).
pub fn is_long_text(s: &str) -> bool {
    s.len() > 80 || s.contains('\n')
}

/// Findings counted by severity: (errors, warnings, infos).
pub fn severity_counts(findings: &[Finding]) -> (usize, usize, usize) {
    findings.iter().fold((0, 0, 0), |(e, w, i), f| match f.severity {
        Severity::Error => (e + 1, w, i),
        Severity::Warning => (e, w + 1, i),
        Severity::Info => (e, w, i + 1),
    })
}

/// The name of a severity, as the report spells it.
pub fn severity_name(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "info",
    }
}

/// A file name for a tensor's `.npy` download: the name with path-unfriendly characters replaced.
pub fn npy_file_name(tensor: &str) -> String {
    let clean: String =
        tensor.chars().map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' }).collect();
    format!("{clean}.npy")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_values_are_replaced_in_place_and_the_rest_kept() {
        let urls = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // A new URL replaces both old ones where the first stood; embed and vs keep their text.
        assert_eq!(
            with_query_values("?embed&url=a&vs=x%20y&url=b", "url", &urls(&["https://h/m?x=1&y"])),
            "?embed&url=https%3A%2F%2Fh%2Fm%3Fx%3D1%26y&vs=x%20y"
        );
        // No values: the key goes; nothing left: no `?` at all.
        assert_eq!(with_query_values("?url=a&sample=s", "url", &[]), "?sample=s");
        assert_eq!(with_query_values("?url=a", "url", &[]), "");
        assert_eq!(with_query_values("", "url", &[]), "");
        // A key only prefixing another (`urls`) is not it; new values go at the end.
        assert_eq!(with_query_values("urls=1", "url", &urls(&["a", "b"])), "?urls=1&url=a&url=b");
        // A bare key (no `=`) is replaced too.
        assert_eq!(with_query_values("?sample&embed", "sample", &urls(&["q 1"])), "?sample=q%201&embed");
    }

    fn group(layer: Option<u64>, rows: Vec<usize>) -> Group {
        Group { layer, rows, params: 0, bytes: 0 }
    }

    #[test]
    fn groups_flatten_with_collapsed_ones_closed() {
        let g = vec![group(Some(0), vec![3, 4]), group(None, vec![1])];
        assert_eq!(
            flatten(&g, |_| false),
            vec![Row::Group(0), Row::Tensor(3), Row::Tensor(4), Row::Group(1), Row::Tensor(1)]
        );
        assert_eq!(flatten(&g, |l| l == Some(0)), vec![Row::Group(0), Row::Group(1), Row::Tensor(1)]);
    }

    #[test]
    fn the_visible_window_is_bounded() {
        assert_eq!(visible(0, 28.0, 0.0, 500.0, 5), (0, 0));
        assert_eq!(visible(500_000, 28.0, 0.0, 560.0, 5), (0, 26));
        assert_eq!(visible(500_000, 28.0, 28.0 * 1000.0, 560.0, 5), (995, 1026));
        assert_eq!(visible(10, 28.0, 1e9, 560.0, 5), (10, 10));
    }

    #[test]
    fn keys_move_the_cursor_within_the_list() {
        assert_eq!(move_cursor(None, 10, 5, "ArrowDown"), Some(0));
        assert_eq!(move_cursor(Some(9), 10, 5, "ArrowDown"), Some(9));
        assert_eq!(move_cursor(Some(0), 10, 5, "ArrowUp"), Some(0));
        assert_eq!(move_cursor(Some(2), 10, 5, "PageDown"), Some(7));
        assert_eq!(move_cursor(Some(2), 10, 5, "End"), Some(9));
        assert_eq!(move_cursor(Some(2), 10, 5, "x"), None);
        assert_eq!(move_cursor(Some(2), 0, 5, "Home"), None);
    }

    #[test]
    fn permalinks_round_trip_any_name() {
        for name in ["blk.0.attn_q.weight", "a b/c#d&e=f", "<script>alert(1)</script>", "ü€"] {
            assert_eq!(permalink_tensor(&permalink(name)).as_deref(), Some(name), "{name}");
        }
        assert_eq!(permalink("x y"), "#tensor=x%20y");
        assert_eq!(permalink_tensor("#other=1"), None);
        assert_eq!(permalink_tensor("#tensor=%zz"), None);
    }

    #[test]
    fn ranges_parse() {
        assert_eq!(parse_range("10:20"), Some((10, 20)));
        assert_eq!(parse_range(" 0..1_000 "), Some((0, 1000)));
        assert_eq!(parse_range("5:5"), None);
        assert_eq!(parse_range("x"), None);
    }

    #[test]
    fn bars_fill_the_box_and_keep_outliers_visible() {
        let b = Bins { lo: 0.0, hi: 1.0, counts: vec![1000, 0, 1] };
        let bars = bars(&b, 300.0, 100.0, false);
        assert_eq!(bars.len(), 3);
        assert_eq!((bars[0].x, bars[0].w, bars[0].h, bars[0].y), (0.0, 100.0, 100.0, 0.0));
        assert_eq!(bars[1].h, 0.0);
        assert_eq!(bars[2].h, 1.0);
        let log = super::bars(&b, 300.0, 100.0, true);
        assert!(log[2].h > 5.0);
    }

    #[test]
    fn labels() {
        assert_eq!(shape_text(&[4096, 32000]), "[4096, 32000]");
        assert_eq!(fmt_num(3.0), "3");
        assert_eq!(fmt_num(0.123456), "0.1235");
        assert_eq!(fmt_num(1.5e-7), "1.500e-7");
        assert_eq!(fmt_num(f64::NAN), "NaN");
        assert_eq!(array_preview(&[Value::String("<s>".into()), Value::U8(1)], 5, 8), "[\"<s>\", 1, …]");
        assert_eq!(npy_file_name("blk.0/x y"), "blk.0_x_y.npy");
        assert!(is_long_text("a\nb"));
    }
}
