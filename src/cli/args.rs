//! Command-line arguments, parsed by clap: `--help` for every command, `--version`, errors that
//! name the bad argument. The parsed form ([`Args`]) is what the commands read.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

use crate::engine::job::Values;
use crate::engine::plan::Selection;

/// A subcommand.
#[derive(Debug, PartialEq, Clone, Copy)]
pub enum Command {
    Inspect,
    Check,
    Repo,
    Hist,
    Export,
    Diff,
    Tokens,
    Template,
}

/// A parsed command line.
#[derive(Debug, PartialEq)]
pub struct Args {
    pub command: Command,
    pub paths: Vec<PathBuf>,
    pub json: bool,
    /// No progress bars (they are also off when stderr is not a terminal, and with `--json`).
    pub quiet: bool,
    pub tensor: Option<String>,
    pub bins: usize,
    pub selection: Selection,
    pub scales: bool,
    pub npy: Option<PathBuf>,
    /// `check`: hash every file, scan every tensor, compare with expected digests.
    pub sha256: bool,
    pub scan: bool,
    pub expect: Option<PathBuf>,
    /// `diff`: the paths of B (after `--vs`), and which values to compare (`None`: none).
    pub vs: Vec<PathBuf>,
    pub values: Option<Values>,
    /// `inspect`/`check`: context lengths to estimate the KV cache at, besides the defaults.
    pub contexts: Vec<u64>,
    /// `tokens`: the ids to show, the text to search for, and the most matches kept.
    pub ids: Vec<u64>,
    pub find: Option<String>,
    pub limit: Option<usize>,
    /// `template`: only the template of this name.
    pub name: Option<String>,
    /// `template`: the conversation to render for, instead of the sample.
    pub conversation: Option<PathBuf>,
}

/// Most bins a histogram may have.
const MAX_BINS: usize = 1 << 20;

/// Look inside safetensors, GGUF and PyTorch checkpoints without loading them.
///
/// Reads only the headers (and, when asked, the values) with positioned reads; never runs the
/// code a pickle names. Several paths, or a folder, open as one sharded set; a folder of
/// several checkpoints (quant variants, a repository) is shown by `repo`.
/// Exit status: 0 no error-level finding, 1 an error-level finding, 2 usage or I/O error.
#[derive(Parser, Debug)]
#[command(name = "tensorscope", version, about, long_about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Sub,
}

/// Options every command takes.
#[derive(clap::Args, Debug)]
struct Common {
    /// Checkpoint files or folders (shards of one model open together).
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// Print the JSON report instead of tables.
    #[arg(long)]
    json: bool,
    /// No progress bars.
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Subcommand, Debug)]
enum Sub {
    /// Tensors, metadata, summary, memory to run it and findings.
    Inspect {
        #[command(flatten)]
        common: Common,
        /// Also estimate the KV cache at this context (like 8192 or 128K); repeatable.
        #[arg(long = "context", value_name = "TOKENS", value_parser = parse_context)]
        contexts: Vec<u64>,
    },
    /// Findings (exit 1 when any is an error); with --sha256 and --scan, every byte is read.
    Check {
        #[command(flatten)]
        common: Common,
        /// Hash every file (SHA-256, files in parallel).
        #[arg(long)]
        sha256: bool,
        /// Count NaN and infinite values in every tensor.
        #[arg(long)]
        scan: bool,
        /// Compare the digests with this sha256sum output (implies --sha256).
        #[arg(long, value_name = "SUMS")]
        expect: Option<PathBuf>,
        /// Also estimate the KV cache at this context; repeatable.
        #[arg(long = "context", value_name = "TOKENS", value_parser = parse_context)]
        contexts: Vec<u64>,
    },
    /// Value statistics and a histogram of one tensor (the whole tensor by default).
    Hist {
        #[command(flatten)]
        common: Common,
        /// The tensor's name.
        #[arg(long, required = true)]
        tensor: String,
        /// Number of bins.
        #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=MAX_BINS as u64))]
        bins: u64,
        /// Only elements A to B (A < B), in numpy order; a packed 4-bit weight (MXFP4 `_blocks`, NVFP4) counts its unpacked values.
        #[arg(long, value_name = "A:B", value_parser = parse_elements, conflicts_with = "sample")]
        elements: Option<(u64, u64)>,
        /// Read about this many bytes of whole blocks spread over the tensor (like 4M).
        #[arg(long, value_name = "BYTES", value_parser = parse_sample)]
        sample: Option<u64>,
        /// Add the distribution of block scales (quantized types).
        #[arg(long)]
        scales: bool,
    },
    /// The decoded tensor as numpy .npy (float32, or the stored integer type).
    Export {
        /// Checkpoint files or folders.
        #[arg(required = true, value_name = "PATH")]
        paths: Vec<PathBuf>,
        /// The tensor's name.
        #[arg(long, required = true)]
        tensor: String,
        /// Where to write the .npy file.
        #[arg(long, required = true, value_name = "OUT")]
        npy: PathBuf,
        /// No progress bars.
        #[arg(long, short)]
        quiet: bool,
    },
    /// What differs between two checkpoints (exit 1 when anything does).
    Diff {
        #[command(flatten)]
        common: Common,
        /// The checkpoint to compare with.
        #[arg(long, required = true, num_args = 1.., value_name = "PATH")]
        vs: Vec<PathBuf>,
        /// Which values to compare.
        #[arg(long, value_enum, default_value_t = ValuesArg::Sample)]
        values: ValuesArg,
    },
    /// The vocabulary of a GGUF file: id, text, type and score.
    Tokens {
        #[command(flatten)]
        common: Common,
        /// Show the token with this id; repeatable.
        #[arg(long = "id", value_name = "N", conflicts_with = "find")]
        ids: Vec<u64>,
        /// Tokens whose text contains TEXT (case-insensitive), or match it as a glob.
        #[arg(long, value_name = "TEXT")]
        find: Option<String>,
        /// Most matches shown.
        #[arg(long, value_name = "N", requires = "find", value_parser = clap::value_parser!(u64).range(1..))]
        limit: Option<u64>,
    },
    /// Every checkpoint of a folder side by side: each quant variant's size, bits per weight,
    /// memory to run and findings, the companions (projectors, adapters, …) and what they fit.
    Repo {
        /// The folder (read with its subfolders).
        #[arg(value_name = "SOURCE")]
        source: PathBuf,
        /// Print the JSON report instead of tables.
        #[arg(long)]
        json: bool,
        /// No progress bars.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Chat templates with line numbers, their risky constructs, and a sample rendering.
    Template {
        #[command(flatten)]
        common: Common,
        /// Only the template of this name (`default`, `tool_use`, …).
        #[arg(long)]
        name: Option<String>,
        /// Render for this conversation instead of the sample: a JSON file holding the template's
        /// variables as `apply_chat_template` passes them (`messages`, `tools`, `documents`,
        /// `add_generation_prompt`, …), or a list of messages.
        #[arg(long, value_name = "FILE")]
        conversation: Option<PathBuf>,
    },
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum ValuesArg {
    None,
    Sample,
    All,
}

/// Why parsing stopped: a usage error, or `--help` / `--version` text to print (exit 0).
#[derive(Debug, PartialEq)]
pub enum ArgsError {
    Usage(String),
    Info(String),
}

impl std::fmt::Display for ArgsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ArgsError::Usage(s) | ArgsError::Info(s) => f.write_str(s.trim_end()),
        }
    }
}

/// Parse `args` (without the program name).
pub fn parse_args(args: &[String]) -> Result<Args, ArgsError> {
    let cli =
        Cli::try_parse_from(std::iter::once("tensorscope".to_owned()).chain(args.iter().cloned())).map_err(|e| {
            use clap::error::ErrorKind::*;
            match e.kind() {
                DisplayHelp | DisplayVersion => ArgsError::Info(e.render().to_string()),
                _ => ArgsError::Usage(e.render().to_string()),
            }
        })?;
    let mut a = Args {
        command: Command::Inspect,
        paths: Vec::new(),
        json: false,
        quiet: false,
        tensor: None,
        bins: 64,
        selection: Selection::Whole,
        scales: false,
        npy: None,
        sha256: false,
        scan: false,
        expect: None,
        vs: Vec::new(),
        values: Some(Values::Sample),
        contexts: Vec::new(),
        ids: Vec::new(),
        find: None,
        limit: None,
        name: None,
        conversation: None,
    };
    let common = |a: &mut Args, c: Common| {
        a.paths = c.paths;
        a.json = c.json;
        a.quiet = c.quiet;
    };
    match cli.command {
        Sub::Inspect { common: c, contexts } => {
            common(&mut a, c);
            a.contexts = contexts;
        }
        Sub::Check { common: c, sha256, scan, expect, contexts } => {
            common(&mut a, c);
            a.command = Command::Check;
            a.sha256 = sha256 || expect.is_some();
            a.scan = scan;
            a.expect = expect;
            a.contexts = contexts;
        }
        Sub::Hist { common: c, tensor, bins, elements, sample, scales } => {
            common(&mut a, c);
            a.command = Command::Hist;
            a.tensor = Some(tensor);
            a.bins = bins as usize;
            a.scales = scales;
            a.selection = match (elements, sample) {
                (Some((start, end)), _) => Selection::Elements { start, end },
                (None, Some(budget_bytes)) => Selection::Sample { budget_bytes },
                (None, None) => Selection::Whole,
            };
        }
        Sub::Export { paths, tensor, npy, quiet } => {
            a.command = Command::Export;
            a.paths = paths;
            a.tensor = Some(tensor);
            a.npy = Some(npy);
            a.quiet = quiet;
        }
        Sub::Diff { common: c, vs, values } => {
            common(&mut a, c);
            a.command = Command::Diff;
            a.vs = vs;
            a.values = match values {
                ValuesArg::None => None,
                ValuesArg::Sample => Some(Values::Sample),
                ValuesArg::All => Some(Values::All),
            };
        }
        Sub::Tokens { common: c, ids, find, limit } => {
            common(&mut a, c);
            a.command = Command::Tokens;
            a.ids = ids;
            a.find = find;
            a.limit = limit.map(|l| usize::try_from(l).unwrap_or(usize::MAX));
        }
        Sub::Repo { source, json, quiet } => {
            a.command = Command::Repo;
            a.paths = vec![source];
            a.json = json;
            a.quiet = quiet;
        }
        Sub::Template { common: c, name, conversation } => {
            common(&mut a, c);
            a.command = Command::Template;
            a.name = name;
            a.conversation = conversation;
        }
    }
    Ok(a)
}

/// `4096`, `64K`, `4M`, `1G` (binary multiples).
fn parse_bytes(s: &str) -> Option<u64> {
    let (num, mult) = match s.char_indices().last()? {
        (i, 'K' | 'k') => (&s[..i], 1 << 10),
        (i, 'M' | 'm') => (&s[..i], 1 << 20),
        (i, 'G' | 'g') => (&s[..i], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<u64>().ok()?.checked_mul(mult)
}

fn parse_context(s: &str) -> Result<u64, String> {
    parse_bytes(s).filter(|c| (1..=1 << 32).contains(c)).ok_or(format!("a token count (like 8192 or 128K), not '{s}'"))
}

fn parse_sample(s: &str) -> Result<u64, String> {
    parse_bytes(s).filter(|&b| b > 0).ok_or(format!("a byte count (like 4M), not '{s}'"))
}

fn parse_elements(s: &str) -> Result<(u64, u64), String> {
    s.split_once(':')
        .and_then(|(a, b)| Some((a.parse::<u64>().ok()?, b.parse::<u64>().ok()?)))
        .filter(|(a, b)| a < b)
        .ok_or(format!("A:B with A < B, not '{s}'"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn usage_errors_are_reported_and_name_the_argument() {
        for (bad, names) in [
            ("", "Usage"),
            ("inspect", "<PATH>"),
            ("frobnicate x", "frobnicate"),
            ("inspect x --bogus", "--bogus"),
            ("hist x", "--tensor"),
            ("hist x --tensor", "--tensor"),
            ("hist x --tensor t --bins 0", "--bins"),
            ("hist x --tensor t --elements 5:5", "--elements"),
            ("hist x --tensor t --elements 1:9 --sample 4M", "--sample"),
            ("hist x --tensor t --sample lots", "--sample"),
            ("export x --tensor t", "--npy"),
            ("inspect x --npy y", "--npy"),
            ("diff a", "--vs"),
            ("diff a --vs", "--vs"),
            ("diff a --vs b --values some", "some"),
            ("inspect a --vs b", "--vs"),
            ("tokens m --id x", "--id"),
            ("tokens m --id 1 --find a", "--find"),
            ("tokens m --find a --limit 0", "--limit"),
            ("inspect m --find a", "--find"),
            ("inspect m --context 0", "--context"),
            ("hist m --tensor w --context 8", "--context"),
        ] {
            match parse_args(&args(bad)) {
                Err(ArgsError::Usage(e)) => assert!(e.contains(names), "{bad}: {e}"),
                other => panic!("{bad}: {other:?}"),
            }
        }
    }

    #[test]
    fn help_and_version_are_information() {
        for s in ["--help", "hist --help", "tokens -h", "--version", "inspect --version"] {
            assert!(matches!(parse_args(&args(s)), Err(ArgsError::Info(_))), "{s}");
        }
        let Err(ArgsError::Info(h)) = parse_args(&args("hist --help")) else { panic!() };
        assert!(h.contains("--elements") && h.contains("--bins"), "{h}");
        let Err(ArgsError::Info(v)) = parse_args(&args("--version")) else { panic!() };
        assert!(v.contains(env!("CARGO_PKG_VERSION")), "{v}");
    }

    #[test]
    fn options_are_read() {
        let a = parse_args(&args("check a b --json -- --json")).unwrap();
        assert_eq!(a.paths, vec![PathBuf::from("a"), PathBuf::from("b"), PathBuf::from("--json")]);
        assert!(a.json);
        let a = parse_args(&args("hist m --tensor w --bins 10 --sample 64K --json --scales")).unwrap();
        assert_eq!((a.bins, a.selection, a.scales), (10, Selection::Sample { budget_bytes: 65536 }, true));
        let a = parse_args(&args("hist m --tensor w --elements 3:9")).unwrap();
        assert_eq!(a.selection, Selection::Elements { start: 3, end: 9 });
        let a = parse_args(&args("check m --scan --expect sums.txt -q")).unwrap();
        assert!(a.scan && a.sha256 && a.expect.is_some() && a.quiet);
        let a = parse_args(&args("export m --tensor w --npy out.npy")).unwrap();
        assert_eq!(a.npy, Some(PathBuf::from("out.npy")));
        let a = parse_args(&args("inspect m --context 128K --context 1000")).unwrap();
        assert_eq!(a.contexts, [131072, 1000]);
        let a = parse_args(&args("diff a1 a2 --vs b1 b2 --values all --json")).unwrap();
        assert_eq!(
            (a.paths.len(), a.vs, a.values, a.json),
            (2, vec![PathBuf::from("b1"), PathBuf::from("b2")], Some(Values::All), true)
        );
        assert_eq!(parse_args(&args("diff a --vs b --values none")).unwrap().values, None);
        assert_eq!(parse_args(&args("diff a --vs b")).unwrap().values, Some(Values::Sample));
        let a = parse_args(&args("tokens m --id 3 --id 7 --json")).unwrap();
        assert_eq!((a.command, a.ids, a.json), (Command::Tokens, vec![3, 7], true));
        let a = parse_args(&args("tokens m --find hello --limit 5")).unwrap();
        assert_eq!((a.find.as_deref(), a.limit), (Some("hello"), Some(5)));
        assert_eq!(parse_args(&args("template m --name tool_use")).unwrap().name.as_deref(), Some("tool_use"));
        let with = parse_args(&args("template m --conversation c.json")).unwrap();
        assert_eq!(with.conversation.as_deref(), Some(std::path::Path::new("c.json")));
    }
}
