//! The viewer's logic, kept platform-free so host tests cover it: tensor search (substring or
//! glob), sorting, grouping by layer, and number formatting.

use std::cmp::Ordering;

use super::model::{Checkpoint, Tensor};
use super::sort::order_by;
use super::text::matches;

/// The layer number in names like `blk.12.attn_q.weight` or `model.layers.3.mlp.up_proj.weight`.
pub fn layer_of(name: &str) -> Option<u64> {
    let mut parts = name.split('.');
    let mut prev = parts.next()?;
    for part in parts {
        if matches!(prev, "blk" | "layers" | "h" | "layer" | "block" | "blocks") {
            if let Ok(n) = part.parse() {
                return Some(n);
            }
        }
        prev = part;
    }
    None
}

/// A column of the tensor table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Column {
    /// File order.
    Index,
    Name,
    Dtype,
    Shape,
    Params,
    Bytes,
    Offset,
    File,
}

/// Indices of `cp`'s tensors matching `pattern`, sorted by `column` (ascending unless `desc`);
/// ties keep file order.
pub fn rows(cp: &Checkpoint, pattern: &str, column: Column, desc: bool) -> Vec<usize> {
    filter(cp, &sorted(cp, column, desc), pattern)
}

/// The indices of `order` whose tensors match `pattern`, in `order`'s order. Sorting once and
/// filtering per keystroke keeps search fast on 500k tensors.
pub fn filter(cp: &Checkpoint, order: &[usize], pattern: &str) -> Vec<usize> {
    order.iter().copied().filter(|&i| matches(pattern, &cp.tensors[i].name)).collect()
}

/// Every tensor name lowercased (ASCII) into one buffer, for a case-insensitive substring
/// search of all names in one SIMD pass instead of a search per name.
#[derive(Clone, Debug, Default)]
pub struct NameIndex {
    text: Vec<u8>,
    /// Where each name starts in `text`, and the end.
    starts: Vec<usize>,
}

/// Separates names in [`NameIndex::text`]; a pattern holding it is searched name by name.
const SEPARATOR: u8 = 0;

impl NameIndex {
    /// The index of `cp`'s names.
    pub fn new(cp: &Checkpoint) -> Self {
        let mut ix = NameIndex::for_names(cp);
        ix.extend(&cp.tensors);
        ix
    }

    /// An index with room for `cp`'s names and none in it yet: [`NameIndex::extend`] adds them
    /// part by part (the viewer builds it between frames).
    pub fn for_names(cp: &Checkpoint) -> Self {
        let len = cp.tensors.iter().map(|t| t.name.len() + 1).sum();
        let mut starts = Vec::with_capacity(cp.tensors.len() + 1);
        starts.push(0);
        NameIndex { text: Vec::with_capacity(len), starts }
    }

    /// Add the names of `tensors`, the checkpoint's next ones in order.
    pub fn extend(&mut self, tensors: &[Tensor]) {
        let from = self.text.len();
        for t in tensors {
            self.text.extend_from_slice(t.name.as_bytes());
            self.text.push(SEPARATOR);
            self.starts.push(self.text.len());
        }
        self.text[from..].make_ascii_lowercase();
    }

    /// How many names it holds.
    pub fn len(&self) -> usize {
        self.starts.len().saturating_sub(1)
    }

    /// Whether it holds no names.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether each tensor's name contains `pattern` (ASCII case ignored), or `None` when the
    /// pattern is one this index does not answer (globs, non-ASCII, the separator).
    pub fn contains(&self, pattern: &str) -> Option<Vec<bool>> {
        if pattern.contains(['*', '?']) || !pattern.is_ascii() || pattern.as_bytes().contains(&SEPARATOR) {
            return None;
        }
        let n = self.starts.len().saturating_sub(1);
        if pattern.is_empty() {
            return Some(vec![true; n]);
        }
        let needle = pattern.to_ascii_lowercase();
        let mut hit = vec![false; n];
        let mut name = 0;
        let mut from = 0;
        let finder = memchr::memmem::Finder::new(needle.as_bytes());
        while let Some(at) = finder.find(&self.text[from..]) {
            let at = from + at;
            // The name holding `at` (matches come in order), then on past its end.
            while self.starts[name + 1] <= at {
                name += 1;
            }
            hit[name] = true;
            from = self.starts[name + 1];
        }
        Some(hit)
    }
}

/// Rows of a narrowed search below this are filtered one by one; above it, the index scans
/// every name at once.
pub const NARROW_ROWS: usize = 50_000;

/// The rows of `order` matching `pattern`: from `narrowed` (the rows of a search this one
/// narrows) name by name when they are few, else through `index`.
pub fn search(
    cp: &Checkpoint,
    index: &NameIndex,
    order: &[usize],
    narrowed: Option<&[usize]>,
    pattern: &str,
) -> Vec<usize> {
    if let Some(rows) = narrowed.filter(|r| r.len() < NARROW_ROWS) {
        return filter(cp, rows, pattern);
    }
    match index.contains(pattern) {
        Some(hit) => order.iter().copied().filter(|&i| hit.get(i).copied().unwrap_or(false)).collect(),
        None => filter(cp, narrowed.unwrap_or(order), pattern),
    }
}

/// Whether every name matching `new` also matches `old`, so the rows of `old` can be filtered
/// instead of all rows (typing narrows a search: each keystroke then costs the matches so far).
pub fn narrows(old: &str, new: &str) -> bool {
    let plain = |p: &str| !p.contains(['*', '?']) && p.is_ascii();
    plain(old) && plain(new) && new.to_ascii_lowercase().contains(&old.to_ascii_lowercase())
}

/// Every tensor's index, sorted by `column` (ascending unless `desc`); ties keep file order.
pub fn sorted(cp: &Checkpoint, column: Column, desc: bool) -> Vec<usize> {
    let n = cp.tensors.len();
    if column == Column::Index {
        let mut idx: Vec<usize> = (0..n).collect();
        if desc {
            idx.reverse();
        }
        return idx;
    }
    // Ties keep file order whichever the direction: the order is stable and only the key flips.
    let dir = |o: Ordering| if desc { o.reverse() } else { o };
    // Derived keys are computed once, not once per comparison.
    if column == Column::Dtype {
        let names: Vec<String> = cp.tensors.iter().map(|t| t.dtype.name()).collect();
        return order_by(n, &mut |a, b| dir(names[a].cmp(&names[b])));
    }
    if column == Column::Params {
        let params = crate::st_quant::logical_params(cp);
        return order_by(n, &mut |a, b| dir(params[a].cmp(&params[b])));
    }
    order_by(n, &mut |a, b| {
        let (x, y) = (&cp.tensors[a], &cp.tensors[b]);
        dir(match column {
            Column::Name => natural(&x.name, &y.name),
            Column::Shape => x.shape.cmp(&y.shape),
            Column::Index | Column::Dtype | Column::Params => unreachable!("ordered above"),
            Column::Bytes => x.nbytes.cmp(&y.nbytes),
            Column::Offset => (x.file, x.offset).cmp(&(y.file, y.offset)),
            Column::File => x.file.cmp(&y.file),
        })
    })
}

/// Compare names with embedded numbers by value: `blk.2` before `blk.10`.
pub fn natural(a: &str, b: &str) -> Ordering {
    let (mut x, mut y) = (a.as_bytes(), b.as_bytes());
    loop {
        match (x.first(), y.first()) {
            (None, None) => return Ordering::Equal,
            (None, _) => return Ordering::Less,
            (_, None) => return Ordering::Greater,
            (Some(c), Some(d)) if c.is_ascii_digit() && d.is_ascii_digit() => {
                let n = x.iter().take_while(|c| c.is_ascii_digit()).count();
                let m = y.iter().take_while(|c| c.is_ascii_digit()).count();
                let (p, q) = (trim_zeros(&x[..n]), trim_zeros(&y[..m]));
                let o = p.len().cmp(&q.len()).then(p.cmp(q));
                if o != Ordering::Equal {
                    return o;
                }
                x = &x[n..];
                y = &y[m..];
            }
            (Some(c), Some(d)) => {
                if c != d {
                    return c.cmp(d);
                }
                x = &x[1..];
                y = &y[1..];
            }
        }
    }
}

fn trim_zeros(d: &[u8]) -> &[u8] {
    let z = d.iter().take_while(|&&c| c == b'0').count();
    &d[z.min(d.len().saturating_sub(1))..]
}

/// Tensors of one layer (or of none), with their totals.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    /// `None` for tensors outside any layer (embeddings, output head, norms).
    pub layer: Option<u64>,
    pub rows: Vec<usize>,
    pub params: u64,
    pub bytes: u64,
}

/// `rows` grouped by layer: layers in numeric order, then the tensors of no layer.
pub fn group_by_layer(cp: &Checkpoint, rows: &[usize]) -> Vec<Group> {
    let params = crate::st_quant::logical_params(cp);
    let mut groups: Vec<Group> = Vec::new();
    let mut at: crate::hash::HashMap<Option<u64>, usize> = crate::hash::HashMap::default();
    for &i in rows {
        let t = &cp.tensors[i];
        let layer = layer_of(&t.name);
        let g = *at.entry(layer).or_insert_with(|| {
            groups.push(Group { layer, rows: Vec::new(), params: 0, bytes: 0 });
            groups.len() - 1
        });
        let g = &mut groups[g];
        g.rows.push(i);
        g.params = g.params.saturating_add(params[i]);
        g.bytes = g.bytes.saturating_add(t.nbytes);
    }
    crate::sort::sort_by_key(&mut groups, |g| (g.layer.is_none(), g.layer));
    groups
}

/// `1.5 GB`-style byte counts (powers of 1000, as model cards give them).
pub fn human_bytes(n: u64) -> String {
    human(n as f64, &["B", "kB", "MB", "GB", "TB", "PB"])
}

/// `7.24B`-style parameter counts.
pub fn human_count(n: u64) -> String {
    human(n as f64, &["", "K", "M", "B", "T", "Q"])
}

fn human(mut v: f64, units: &[&str]) -> String {
    let mut u = 0;
    while v >= 1000.0 && u + 1 < units.len() {
        v /= 1000.0;
        u += 1;
    }
    let sep = if units[0].is_empty() { "" } else { " " };
    if u == 0 {
        format!("{v:.0}{sep}{}", units[0])
    } else {
        format!("{v:.2}{sep}{}", units[u])
    }
}

#[cfg(test)]
mod index_tests {
    use super::*;
    use crate::model::{Dtype, Format, Lost, Tensor};

    fn checkpoint(names: &[&str]) -> Checkpoint {
        let t = |name: &str| Tensor {
            name: name.into(),
            dtype: Dtype::Unknown("x".into()),
            shape: vec![1],
            file: 0,
            offset: None,
            nbytes: 0,
            data: Err(Lost::NoSize),
            strides: None,
        };
        Checkpoint { tensors: names.iter().map(|n| t(n)).collect(), ..Checkpoint::empty(Format::Safetensors) }
    }

    #[test]
    fn the_index_answers_as_the_name_by_name_search() {
        let names = ["model.Layers.0.Q_PROJ.weight", "ab", "cd", "abcd", "", "x\0y", "lm_head.weight", "ÄÖ.weight"];
        let cp = checkpoint(&names);
        let index = NameIndex::new(&cp);
        let order: Vec<usize> = (0..names.len()).collect();
        for p in
            ["", "a", "AB", "bc", "cd", "layers.0.q", "WEIGHT", "d", "abcd", "abcde", "x", "ö", "*.weight", "a?", "\0"]
        {
            let want = filter(&cp, &order, p);
            assert_eq!(search(&cp, &index, &order, None, p), want, "{p:?}");
            // Through the narrowing path too.
            assert_eq!(search(&cp, &index, &order, Some(&order), p), want, "{p:?}");
        }
        // A pattern spanning two names does not match either.
        assert_eq!(index.contains("bc").unwrap(), [false, false, false, true, false, false, false, false]);
        assert_eq!(index.contains("*"), None, "globs go name by name");
        // In a sorted order, the order is kept.
        let rev: Vec<usize> = order.iter().rev().copied().collect();
        assert_eq!(search(&cp, &index, &rev, None, "weight"), [7, 6, 0]);
    }

    #[test]
    fn an_index_built_part_by_part_is_the_whole_one() {
        let names: Vec<String> = (0..1000).map(|i| format!("Blk.{i}.FFN_{}.weight", i % 7)).collect();
        let cp = checkpoint(&names.iter().map(String::as_str).collect::<Vec<_>>());
        let whole = NameIndex::new(&cp);
        for part in [1, 7, 999, 1000] {
            let mut ix = NameIndex::for_names(&cp);
            for chunk in cp.tensors.chunks(part) {
                ix.extend(chunk);
            }
            assert_eq!((ix.text.as_slice(), ix.starts.as_slice()), (whole.text.as_slice(), whole.starts.as_slice()));
            assert_eq!(ix.len(), 1000);
            assert_eq!(ix.contains("ffn_3.w"), whole.contains("FFN_3.W"));
        }
        assert!(NameIndex::for_names(&cp).is_empty());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_is_substring_or_glob() {
        assert!(matches("", "anything"));
        assert!(matches("ATTN", "blk.0.attn_q.weight"));
        assert!(matches("blk.*.attn_v*", "blk.12.attn_v.weight"));
        assert!(!matches("blk.*.attn_v*", "blk.12.attn_q.weight"));
        assert!(matches("blk.?.ffn*", "blk.3.ffn_up.weight"));
        assert!(!matches("blk.?.ffn*", "blk.31.ffn_up.weight"));
        assert!(!matches("*a*a*a*a*a*b", &"a".repeat(5000)));
    }

    #[test]
    fn narrowing_holds_only_when_every_match_of_the_new_pattern_matches_the_old() {
        assert!(narrows("", "a"));
        assert!(narrows("att", "ATTN_q"));
        assert!(!narrows("attn", "att"));
        assert!(!narrows("blk.*", "blk.*.ffn"));
        assert!(!narrows("ü", "üb"));
        let names = ["blk.0.attn_q.weight", "blk.0.ffn_up.weight", "output.weight"];
        for (old, new) in [("", "b"), ("b", "bl"), ("attn", "attn_q"), ("W", "WEIGHT")] {
            assert!(narrows(old, new));
            for n in names {
                assert!(!matches(new, n) || matches(old, n), "{old} -> {new} on {n}");
            }
        }
    }

    #[test]
    fn layers_sort_and_format() {
        assert_eq!(layer_of("blk.12.attn_q.weight"), Some(12));
        assert_eq!(layer_of("model.layers.3.mlp.up_proj.weight"), Some(3));
        assert_eq!(layer_of("transformer.h.7.attn.c_attn.weight"), Some(7));
        assert_eq!(layer_of("token_embd.weight"), None);
        assert_eq!(natural("blk.2.x", "blk.10.x"), Ordering::Less);
        assert_eq!(natural("a07", "a7"), Ordering::Equal);
        assert_eq!(human_bytes(1_500_000_000), "1.50 GB");
        assert_eq!(human_bytes(999), "999 B");
        assert_eq!(human_count(7_241_732_096), "7.24B");
    }
}
