//! The native `tensorscope` command line: the engine's results as tables or JSON.

mod open;
mod source;
mod text;

use std::io::Write;
use std::path::PathBuf;

pub use open::{expand, open_paths};
pub use source::FileSource;

use crate::engine::findings::has_error;
use crate::engine::report::report;

const USAGE: &str = "\
usage: tensorscope <command> PATH... [options]

Reads only the headers of safetensors and GGUF checkpoints; never runs pickle code.
Several paths (or a folder) are opened as one sharded set.

commands:
  inspect PATH... [--json]   tensors, metadata, summary and findings
  check PATH... [--json]     findings only (exit 1 when any is an error)

exit status: 0 no error-level finding, 1 an error-level finding, 2 usage or I/O error";

/// A parsed command line.
#[derive(Debug, PartialEq)]
pub struct Args {
    pub command: Command,
    pub paths: Vec<PathBuf>,
    pub json: bool,
}

#[derive(Debug, PartialEq, Clone, Copy)]
pub enum Command {
    Inspect,
    Check,
}

/// Parse `args` (without the program name).
pub fn parse_args(args: &[String]) -> Result<Args, String> {
    let (cmd, rest) = args.split_first().ok_or("missing command")?;
    let command = match cmd.as_str() {
        "inspect" => Command::Inspect,
        "check" => Command::Check,
        other => return Err(format!("unknown command '{other}'")),
    };
    let mut parsed = Args { command, paths: Vec::new(), json: false };
    let mut only_paths = false;
    for a in rest {
        match a.as_str() {
            "--" if !only_paths => only_paths = true,
            "--json" if !only_paths => parsed.json = true,
            flag if flag.starts_with("--") && !only_paths => return Err(format!("unknown option '{flag}'")),
            path => parsed.paths.push(PathBuf::from(path)),
        }
    }
    if parsed.paths.is_empty() {
        return Err("no PATH given".into());
    }
    Ok(parsed)
}

/// Run the command line; returns the process exit status.
pub fn run(args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    if matches!(args.first().map(String::as_str), Some("-h" | "--help" | "help")) {
        let _ = writeln!(out, "{USAGE}");
        return 0;
    }
    let args = match parse_args(args) {
        Ok(a) => a,
        Err(e) => {
            let _ = writeln!(err, "tensorscope: {e}\n\n{USAGE}");
            return 2;
        }
    };
    let cp = match open_paths(&args.paths) {
        Ok((cp, _)) => cp,
        Err(e) => {
            let _ = writeln!(err, "tensorscope: {e}");
            return 2;
        }
    };
    let written = match (args.command, args.json) {
        (Command::Inspect | Command::Check, true) => serde_json::to_writer_pretty(&mut *out, &report(&cp))
            .map_err(std::io::Error::from)
            .and_then(|_| writeln!(out)),
        (Command::Inspect, false) => text::inspect(&cp, out),
        (Command::Check, false) => text::check(&cp, out),
    };
    if let Err(e) = written {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            let _ = writeln!(err, "tensorscope: {e}");
            return 2;
        }
    }
    i32::from(has_error(&cp.findings))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn usage_errors_are_reported() {
        assert!(parse_args(&args("")).is_err());
        assert!(parse_args(&args("inspect")).is_err());
        assert!(parse_args(&args("frobnicate x")).is_err());
        assert!(parse_args(&args("inspect x --bogus")).is_err());
        let a = parse_args(&args("check a b --json -- --json")).unwrap();
        assert_eq!(a.paths, vec![PathBuf::from("a"), PathBuf::from("b"), PathBuf::from("--json")]);
        assert!(a.json);
    }
}
