//! The native `tensorscope` command line: the engine's results as tables or JSON.

mod args;
mod check;
mod diff;
mod hub;
mod open;
mod parallel;
mod placement;
mod progress;
mod repo;
mod source;
mod template;
mod text;
mod tokens;
mod values;

use std::io::Write;

pub use args::{parse_args, Args, ArgsError, Command};
pub use open::{expand, open_paths};
pub use source::{run_on, FileSource};

use crate::engine::findings::Severity;
use crate::engine::report::Report;

/// Run the command line; returns the process exit status.
pub fn run(args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let args = match parse_args(args) {
        Ok(a) => a,
        Err(ArgsError::Info(text)) => {
            let _ = writeln!(out, "{}", text.trim_end());
            return 0;
        }
        Err(ArgsError::Usage(e)) => {
            let _ = writeln!(err, "{}", e.trim_end());
            return 2;
        }
    };
    progress::enable(args.json, args.quiet);
    if args.command == Command::Repo {
        return match repo::run(&args.paths[0], args.json, out) {
            Ok(unreadable) if unreadable.is_empty() => 0,
            Ok(unreadable) => {
                for (path, why) in unreadable {
                    let _ =
                        writeln!(err, "tensorscope: {path} could not be read ({why}); listed among the other files");
                }
                1
            }
            Err(e) => {
                let _ = writeln!(err, "tensorscope: {e}");
                2
            }
        };
    }
    let cp = match open_paths(&args.paths) {
        Ok((cp, _)) => cp,
        Err(e) => {
            let _ = writeln!(err, "tensorscope: {e}");
            return 2;
        }
    };
    if args.command == Command::Diff {
        let b = match open_paths(&args.vs) {
            Ok((b, _)) => b,
            Err(e) => {
                let _ = writeln!(err, "tensorscope: {e}");
                return 2;
            }
        };
        let written = diff::compare(&cp, &b, args.values)
            .and_then(|d| diff::write(&cp, &b, &d, args.json, out).map_err(|e| e.to_string()));
        return match written {
            Ok(same) => i32::from(!same),
            Err(e) => {
                let _ = writeln!(err, "tensorscope: {e}");
                2
            }
        };
    }
    let other = match args.command {
        Command::Hist | Command::Export => Some(values::run(&args, &cp, out)),
        Command::Tokens => Some(tokens::run(&args, &cp, out)),
        Command::Template => Some(template::run(&args, &cp, out)),
        _ => None,
    };
    if let Some(result) = other {
        return match result {
            Ok(()) => 0,
            Err(e) => {
                let _ = writeln!(err, "tensorscope: {e}");
                2
            }
        };
    }
    let (outcome, expected) = match args.command {
        Command::Check => match check::run(&args, &cp) {
            Ok(o) => o,
            Err(e) => {
                let _ = writeln!(err, "tensorscope: {e}");
                return 2;
            }
        },
        _ => Default::default(),
    };
    let report = Report::check(&cp, &outcome, &expected).with_contexts(&args.contexts);
    let written = match (args.command, args.json) {
        (Command::Inspect | Command::Check, true) => {
            let mut w = std::io::BufWriter::new(&mut *out);
            serde_json::to_writer_pretty(&mut w, &report)
                .map_err(std::io::Error::from)
                .and_then(|_| writeln!(w))
                .and_then(|_| w.flush())
        }
        (Command::Inspect, false) => text::inspect(&cp, &args.contexts, read_adapter(&cp).as_ref(), out),
        (Command::Check, false) => text::check(&report, &outcome, out),
        (Command::Hist | Command::Export | Command::Diff | Command::Tokens | Command::Template | Command::Repo, _) => {
            unreachable!("handled above")
        }
    };
    if let Err(e) = written {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            let _ = writeln!(err, "tensorscope: {e}");
            return 2;
        }
    }
    let failed = report.findings().any(|f| f.severity == Severity::Error);
    i32::from(failed)
}

/// The adapter in `cp` with the alphas its tensors hold read (kohya's per-module `.alpha`).
fn read_adapter(cp: &crate::engine::model::Checkpoint) -> Option<crate::engine::adapter::Adapter> {
    let a = crate::engine::adapter::adapter(cp)?;
    let wanted = a.alpha_tensors();
    if wanted.is_empty() {
        return Some(a);
    }
    let values = source::run_on(crate::engine::adapter::scalars_job(cp, &wanted), cp).unwrap_or_default();
    Some(a.with_alphas(cp, &values))
}

/// Build the output whole, then write it, so a closed pipe (`| head`) ends it quietly.
fn buffered(out: &mut dyn Write, build: impl FnOnce(&mut Vec<u8>) -> Result<(), String>) -> Result<(), String> {
    let mut buf = Vec::new();
    build(&mut buf)?;
    match out.write_all(&buf) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.to_string()),
        _ => Ok(()),
    }
}
