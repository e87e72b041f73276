//! The inspections run over an assembled checkpoint, after the sets are checked: what a GGUF's
//! file type and name say against its tensors, a projector's or an adapter's fit to its model,
//! and its chat templates. Every way of opening files comes through here.

use crate::findings::Finding;
use crate::model::{Checkpoint, FileInfo, Format};
use crate::open::Parsed;
use crate::shards::Assembling;

/// The findings of every inspection of `cp`.
pub fn findings(cp: &Checkpoint) -> Vec<Finding> {
    let mut out = Vec::new();
    if cp.format == Format::Gguf {
        out.extend(crate::naming::check(cp));
        out.extend(crate::projector::fit(cp));
    }
    out.extend(crate::adapter::fit_findings(cp));
    out.extend(crate::template::findings(cp));
    out
}

/// One checkpoint from the files given, inspected (see [`crate::shards::assemble`]).
pub fn assemble(given: Vec<(FileInfo, Parsed)>) -> Checkpoint {
    finish(Assembling::new(given))
}

/// The checkpoint an assembly in pieces gives, inspected.
pub fn finish(assembling: Assembling) -> Checkpoint {
    let mut cp = assembling.finish();
    let found = findings(&cp);
    cp.findings.extend(found);
    cp
}
