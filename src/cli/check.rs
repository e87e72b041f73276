//! `check --sha256 --scan --expect`: the offline check's value passes over local files.

use std::path::Path;

use serde_json::{json, Value as Json};

use super::args::Args;
use super::source::FileSource;
use crate::engine::check::{compare_digest, non_finite_finding, parse_expected, rules, NonFiniteSink, Sha256File};
use crate::engine::decode::codec_for;
use crate::engine::findings::Finding;
use crate::engine::model::Checkpoint;
use crate::engine::plan::{plan, Selection};
use crate::engine::scan::Scan;
use crate::engine::shards::base_name;
use crate::engine::step::{drive, CHUNK_BYTES};

/// Add digests, scan counts and their findings to `cp`'s report.
pub fn run(args: &Args, cp: &mut Checkpoint, report: &mut Json) -> Result<(), String> {
    if args.sha256 {
        let expected = match &args.expect {
            Some(p) => parse_expected(&std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?),
            None => Vec::new(),
        };
        let mut unnamed = expected.iter().filter(|(n, _)| n.is_none()).map(|(_, h)| h);
        for (i, f) in cp.files.iter().enumerate() {
            let mut src = FileSource::open(Path::new(&f.path)).map_err(|e| format!("{}: {e}", f.path))?;
            let digest = drive(Sha256File::new(src.len()), CHUNK_BYTES, |r| src.read(r)).map_err(|e| e.to_string())?;
            report["files"][i]["sha256"] = json!(digest);
            let named = expected.iter().find(|(n, _)| n.as_deref().map(base_name) == Some(base_name(&f.path)));
            if let Some(want) = named.map(|(_, h)| h).or_else(|| unnamed.next()) {
                cp.findings.push(compare_digest(i, &f.path, &digest, want));
            }
        }
    }
    if args.scan {
        let mut counts = Vec::new();
        for t in &cp.tensors {
            let Some(codec) = codec_for(&t.dtype) else {
                cp.findings.push(
                    Finding::info(rules::NOT_SCANNED, format!("dtype {} cannot be decoded", t.dtype.name()))
                        .on_tensor(&t.name),
                );
                continue;
            };
            let Ok(p) = plan(t, &codec, &Selection::Whole) else {
                continue; // the layout fault is a header finding already
            };
            let path = &cp.files[t.file].path;
            let mut src = FileSource::open(Path::new(path)).map_err(|e| format!("{path}: {e}"))?;
            if t.offset.saturating_add(t.nbytes) > src.len() {
                continue; // truncated: a header finding already
            }
            let s: NonFiniteSink = drive(Scan::new(p, codec, NonFiniteSink::default()), CHUNK_BYTES, |r| src.read(r))
                .map_err(|e| e.to_string())?;
            counts.push(json!({ "tensor": t.name, "file": t.file, "values": s.values, "nan": s.nan, "inf": s.inf }));
            cp.findings.extend(non_finite_finding(&t.name, t.file, &s));
        }
        report["scan"] = Json::Array(counts);
    }
    report["findings"] = serde_json::to_value(&cp.findings).map_err(|e| e.to_string())?;
    Ok(())
}
