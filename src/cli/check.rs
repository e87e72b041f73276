//! `check --sha256 --scan --expect`: the offline check's passes over local files; the report is
//! assembled by the engine exactly as the browser's Check panel assembles it.

use std::path::Path;

use serde_json::Value as Json;

use super::args::Args;
use super::source::FileSource;
use crate::engine::check::Sha256File;
use crate::engine::check_report::{added_findings, check_report, parse_expected_text, scan_plan, ScanOutcome};
use crate::engine::model::Checkpoint;
use crate::engine::scan::Scan;
use crate::engine::step::{drive, CHUNK_BYTES};

/// Run the passes asked for, replace `report` with the check report, and add the findings to `cp`.
pub fn run(args: &Args, cp: &mut Checkpoint, report: &mut Json) -> Result<(), String> {
    if !args.sha256 && !args.scan {
        return Ok(());
    }
    let expected = match &args.expect {
        Some(p) => parse_expected_text(&std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?),
        None => Vec::new(),
    };
    let open = |path: &str| FileSource::open(Path::new(path)).map_err(|e| format!("{path}: {e}"));
    let mut digests = None;
    if args.sha256 {
        let mut all = Vec::new();
        for f in &cp.files {
            let mut src = open(&f.path)?;
            all.push(drive(Sha256File::new(src.len()), CHUNK_BYTES, |r| src.read(r)).map_err(|e| e.to_string())?);
        }
        digests = Some(all);
    }
    let mut scan = None;
    if args.scan {
        let mut all = Vec::new();
        for t in &cp.tensors {
            let mut src = open(&cp.files[t.file].path)?;
            all.push(match scan_plan(t, src.len()) {
                Ok((plan, codec)) => ScanOutcome::Counted(
                    drive(Scan::new(plan, codec, Default::default()), CHUNK_BYTES, |r| src.read(r))
                        .map_err(|e| e.to_string())?,
                ),
                Err(outcome) => outcome,
            });
        }
        scan = Some(all);
    }
    *report = check_report(cp, digests.as_deref(), &expected, scan.as_deref());
    let added = added_findings(cp, digests.as_deref(), &expected, scan.as_deref());
    cp.findings.extend(added);
    Ok(())
}
