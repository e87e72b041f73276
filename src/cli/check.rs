//! `check --sha256 --scan --expect`: the check job over local files; the report is the engine's,
//! exactly as the browser's Check panel assembles it.

use super::args::Args;
use super::source::run_on;
use crate::engine::check::Expected;
use crate::engine::check_report::parse_expected_text;
use crate::engine::job::{check_job, CheckOutcome};
use crate::engine::model::Checkpoint;

/// The passes asked for and the expected digests: what the report needs.
pub fn run(args: &Args, cp: &Checkpoint) -> Result<(CheckOutcome, Expected), String> {
    let expected = match &args.expect {
        Some(p) => parse_expected_text(&std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?),
        None => Vec::new(),
    };
    if !args.sha256 && !args.scan {
        return Ok((CheckOutcome::default(), expected));
    }
    Ok((run_on(check_job(cp, args.sha256, args.scan), cp)?, expected))
}
