//! `hist` and `export`: the histogram and `.npy` jobs over local files.

use std::io::Write;

use super::args::{Args, Command};
use super::source::run_on_draining;
use crate::engine::hist_report::HistReport;
use crate::engine::job::npy_job;
use crate::engine::model::{Checkpoint, Tensor};

/// Run `hist` or `export` on the opened checkpoint.
pub fn run(args: &Args, cp: &Checkpoint, out: &mut dyn Write) -> Result<(), String> {
    let name = args.tensor.as_deref().unwrap_or_default();
    let t = cp.tensor(name).ok_or_else(|| no_such_tensor(cp, name))?;
    match args.command {
        Command::Hist => {
            let sink = super::parallel::histogram(cp, t, &args.selection, args.scales)?;
            let report = HistReport::new(t, &sink.values, args.bins, sink.scales.as_ref());
            let written =
                if args.json { out.write_all(report.to_text().as_bytes()) } else { super::text::hist(&report, out) };
            written.map_err(|e| e.to_string())
        }
        Command::Export => export(args, cp, t),
        _ => unreachable!("only hist and export read values"),
    }
}

fn export(args: &Args, cp: &Checkpoint, t: &Tensor) -> Result<(), String> {
    let job = npy_job(t).map_err(|e| format!("tensor '{}': {e}", t.name))?;
    let out_path = args.npy.as_deref().expect("checked by the argument parser");
    let io = |e: std::io::Error| format!("{}: {e}", out_path.display());
    let mut file = std::io::BufWriter::new(std::fs::File::create(out_path).map_err(io)?);
    let bar = super::progress::Bar::new(crate::engine::job::Job::progress(&job).total, "exporting");
    let mut last = 0;
    let mut sink = run_on_draining(job, cp, |j| {
        let done = crate::engine::job::Job::progress(j).done;
        bar.add(done.saturating_sub(last));
        last = done;
        file.write_all(&j.sink_mut().take()).map_err(io)
    })?;
    file.write_all(&sink.take()).map_err(io)?;
    file.flush().map_err(io)
}

fn no_such_tensor(cp: &Checkpoint, name: &str) -> String {
    let close: Vec<&str> =
        cp.tensors.iter().map(|t| t.name.as_str()).filter(|n| n.contains(name) || name.contains(*n)).take(5).collect();
    if close.is_empty() {
        format!("no tensor named '{}'", super::text::escape(name))
    } else {
        let close: Vec<String> = close.iter().map(|n| super::text::escape(n).into_owned()).collect();
        format!("no tensor named '{}'; similar: {}", super::text::escape(name), close.join(", "))
    }
}
