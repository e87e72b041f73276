//! `hist` and `export`: reading a tensor's bytes with positioned reads and decoding them.

use std::io::Write;
use std::path::Path;

use super::args::{Args, Command};
use super::source::FileSource;
use crate::engine::decode::codec_for;
use crate::engine::hist_report::hist_json;
use crate::engine::model::{Checkpoint, Tensor};
use crate::engine::npy::{self, NpySink};
use crate::engine::plan::{plan, Selection};
use crate::engine::scan::{HistogramSink, Scan, Sink};
use crate::engine::step::{Decoder, Step};

/// Run `hist` or `export` on the opened checkpoint.
pub fn run(args: &Args, cp: &Checkpoint, out: &mut dyn Write) -> Result<(), String> {
    let name = args.tensor.as_deref().unwrap_or_default();
    let t = cp.tensor(name).ok_or_else(|| no_such_tensor(cp, name))?;
    let codec =
        codec_for(&t.dtype).ok_or(format!("tensor '{name}' has dtype {}, which cannot be decoded", t.dtype.name()))?;
    let path = Path::new(&cp.files[t.file].path);
    let mut src = FileSource::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    match args.command {
        Command::Hist => {
            let p = plan(t, &codec, &args.selection).map_err(|e| format!("tensor '{name}': {e}"))?;
            let sink = scan(Scan::new(p, codec, HistogramSink::new(args.scales)), &mut src, |_| Ok(()))?;
            let mut report = hist_json(t, &sink.values, args.bins);
            if let Some(scales) = &sink.scales {
                report["scales"] = hist_json(t, scales, args.bins);
            }
            let written = if args.json {
                serde_json::to_writer_pretty(&mut *out, &report).map_err(|e| e.to_string()).map(|_| writeln!(out).ok())
            } else {
                super::text::hist(&report, out).map(|_| None).map_err(|e| e.to_string())
            };
            written.map(|_| ())
        }
        Command::Export => export(args, t, codec, &mut src),
        _ => unreachable!("only hist and export read values"),
    }
}

fn export(
    args: &Args,
    t: &Tensor,
    codec: crate::engine::decode::BlockCodec,
    src: &mut FileSource,
) -> Result<(), String> {
    let (descr, raw) = npy::layout(&t.dtype).ok_or(format!("dtype {} cannot be exported", t.dtype.name()))?;
    let p = plan(t, &codec, &Selection::Whole).map_err(|e| format!("tensor '{}': {e}", t.name))?;
    let out_path = args.npy.as_deref().expect("checked by the argument parser");
    let file = std::fs::File::create(out_path).map_err(|e| format!("{}: {e}", out_path.display()))?;
    let mut file = std::io::BufWriter::new(file);
    let io = |e: std::io::Error| format!("{}: {e}", out_path.display());
    file.write_all(&npy::header(descr, &npy::numpy_shape(t))).map_err(io)?;
    let sink = NpySink { raw, out: Vec::new() };
    scan(Scan::new(p, codec, sink), src, |s: &mut NpySink| file.write_all(&std::mem::take(&mut s.out)).map_err(io))?;
    file.flush().map_err(io)
}

/// Drive a scan over `src`, letting `drain` empty the sink after every piece.
fn scan<S: Sink + Default>(
    mut scan: Scan<S>,
    src: &mut FileSource,
    mut drain: impl FnMut(&mut S) -> Result<(), String>,
) -> Result<S, String> {
    loop {
        match scan.step() {
            Step::Done(mut sink) => {
                drain(&mut sink)?;
                return Ok(sink);
            }
            Step::Need(r) => {
                if r.end > src.len() {
                    return Err(format!("the file ends at {} before the tensor's data (needs {r})", src.len()));
                }
                let bytes = src.read(r).map_err(|e| e.to_string())?;
                scan.feed(r.start, &bytes).map_err(|e| e.to_string())?;
                drain(scan.sink_mut())?;
            }
        }
    }
}

fn no_such_tensor(cp: &Checkpoint, name: &str) -> String {
    let close: Vec<&str> =
        cp.tensors.iter().map(|t| t.name.as_str()).filter(|n| n.contains(name) || name.contains(*n)).take(5).collect();
    if close.is_empty() {
        format!("no tensor named '{name}'")
    } else {
        format!("no tensor named '{name}'; similar: {}", close.join(", "))
    }
}
