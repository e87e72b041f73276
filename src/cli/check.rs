//! `check --sha256 --scan --expect`: the check's passes over local files on every core; the
//! outcome and the report are the ones the browser's Check panel gets from the check job.

use super::args::Args;
use crate::engine::check::Expected;
use crate::engine::check_report::parse_expected_text;
use crate::engine::job::CheckOutcome;
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
    Ok((super::parallel::check(cp, args.sha256, args.scan)?, expected))
}
