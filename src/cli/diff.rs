//! `diff`: two checkpoints (each a file or a set) compared, headers and, for tensors both hold
//! in the same shape, values (a sample by default), pairs compared on every core.

use std::io::Write;

use super::parallel::run_split;
use crate::engine::diff::{by_layer, diff, totals, Diff, Status};
use crate::engine::diff_report::DiffReport;
use crate::engine::diff_values::{array_split, compare_split};
use crate::engine::job::Values;
use crate::engine::model::Checkpoint;

/// The diff of `a` and `b`, values compared as `values` says (`None`: not at all), the pairs'
/// value orders on every core. Tensors that cannot be compared (a shape change, an undecodable
/// dtype) keep their header status.
pub fn compare(a: &Checkpoint, b: &Checkpoint, values: Option<Values>) -> Result<Diff, String> {
    let paths: Vec<&str> = a.files.iter().chain(&b.files).map(|f| f.path.as_str()).collect();
    let lens: Vec<u64> = a.files.iter().chain(&b.files).map(|f| f.size).collect();
    // Long metadata arrays whose kept items agree: their bytes settle it.
    let d = run_split(array_split(&diff(a, b), a, b), &paths, &lens, "metadata arrays")?;
    let Some(values) = values else { return Ok(d) };
    run_split(compare_split(&d, a, b, values), &paths, &lens, "comparing values")
}

/// Print the diff (JSON or text); `Ok(true)` when the two are the same.
pub fn write(a: &Checkpoint, b: &Checkpoint, d: &Diff, json: bool, out: &mut dyn Write) -> std::io::Result<bool> {
    if json {
        out.write_all(DiffReport { a, b, diff: d }.to_text().as_bytes())?;
        return Ok(d.is_same());
    }
    let esc = super::text::escape;
    let [same, changed, only_a, only_b] = d.counts();
    writeln!(
        out,
        "{:<10} {:>14} {:>14} {:>16} {:>16} {:>7} {:>7}",
        "dtype", "params A", "params B", "bytes A", "bytes B", "bpw A", "bpw B"
    )?;
    for (name, ta, tb) in totals(a, b) {
        let bpw = |t: &crate::engine::summary::Totals| {
            if t.params > 0 {
                format!("{:.2}", t.bits_per_weight())
            } else {
                "-".into()
            }
        };
        writeln!(
            out,
            "{:<10} {:>14} {:>14} {:>16} {:>16} {:>7} {:>7}",
            esc(&name),
            ta.params,
            tb.params,
            ta.bytes,
            tb.bytes,
            bpw(&ta),
            bpw(&tb)
        )?;
    }
    let layers = by_layer(d, a, b);
    if layers.iter().any(|l| l.layer.is_some()) {
        writeln!(out, "{:<10} {:>16} {:>16} {:>12}", "layer", "bytes A", "bytes B", "worst NMSE")?;
        for l in &layers {
            let name = l.layer.map_or("other".to_owned(), |n| n.to_string());
            let worst = l.worst_nmse.map_or("-".to_owned(), |w| format!("{w:.3e}"));
            writeln!(out, "{name:<10} {:>16} {:>16} {worst:>12}", l.a_bytes, l.b_bytes)?;
        }
    }
    writeln!(out, "tensors: {same} same, {changed} changed, {only_a} only in A, {only_b} only in B")?;
    for p in d.tensors.iter().filter(|p| p.status != Status::Same) {
        let (ta, tb) = (p.a.map(|i| &a.tensors[i]), p.b.map(|i| &b.tensors[i]));
        let name = ta.or(tb).map_or(String::new(), |t| esc(&t.name).to_string());
        let side = |t: Option<&crate::engine::model::Tensor>| {
            t.map_or("-".to_owned(), |t| format!("{} {:?}", t.dtype.name(), t.shape))
        };
        write!(out, "  {:<8} {name}  {} -> {}", p.status.name(), side(ta), side(tb))?;
        if let Some(v) = &p.values {
            write!(
                out,
                "  nmse {:.3e} cosine {:.6} max|a-b| {:.3e} ({} values)",
                v.nmse, v.cosine, v.max_abs, v.compared
            )?;
        }
        writeln!(out)?;
    }
    writeln!(out, "metadata: {} keys differ", d.metadata.len())?;
    for m in &d.metadata {
        writeln!(out, "  {:<8} {}", m.status.name(), esc(&m.key))?;
    }
    Ok(d.is_same())
}
