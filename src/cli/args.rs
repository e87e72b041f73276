//! Command-line arguments.

use std::path::PathBuf;

use crate::engine::job::Values;
use crate::engine::plan::Selection;

/// A subcommand.
#[derive(Debug, PartialEq, Clone, Copy)]
pub enum Command {
    Inspect,
    Check,
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
}

/// Most bins a histogram may have.
const MAX_BINS: usize = 1 << 20;

/// Parse `args` (without the program name).
pub fn parse_args(args: &[String]) -> Result<Args, String> {
    let (cmd, rest) = args.split_first().ok_or("missing command")?;
    let command = match cmd.as_str() {
        "inspect" => Command::Inspect,
        "check" => Command::Check,
        "hist" => Command::Hist,
        "export" => Command::Export,
        "diff" => Command::Diff,
        "tokens" => Command::Tokens,
        "template" => Command::Template,
        other => return Err(format!("unknown command '{other}'")),
    };
    let mut a = Args {
        command,
        paths: Vec::new(),
        json: false,
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
    };
    let mut in_vs = false;
    let (mut elements, mut sample) = (None, None);
    let mut it = rest.iter();
    let mut only_paths = false;
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().cloned().ok_or(format!("{name} needs a value"));
        let takes = |cmds: &[Command]| cmds.contains(&command);
        match arg.as_str() {
            _ if only_paths && in_vs => a.vs.push(PathBuf::from(arg)),
            _ if only_paths => a.paths.push(PathBuf::from(arg)),
            "--" => only_paths = true,
            "--json" if command != Command::Export => a.json = true,
            "--tensor" if takes(&[Command::Hist, Command::Export]) => a.tensor = Some(value("--tensor")?),
            "--bins" if takes(&[Command::Hist]) => {
                let v = value("--bins")?;
                a.bins = v
                    .parse()
                    .ok()
                    .filter(|b| (1..=MAX_BINS).contains(b))
                    .ok_or(format!("--bins takes 1 to {MAX_BINS}, not '{v}'"))?;
            }
            "--elements" if takes(&[Command::Hist]) => {
                let v = value("--elements")?;
                let parsed =
                    v.split_once(':').and_then(|(s, e)| Some((s.parse::<u64>().ok()?, e.parse::<u64>().ok()?)));
                elements =
                    Some(parsed.filter(|(s, e)| s < e).ok_or(format!("--elements takes A:B with A < B, not '{v}'"))?);
            }
            "--sample" if takes(&[Command::Hist]) => {
                let v = value("--sample")?;
                sample = Some(
                    parse_bytes(&v)
                        .filter(|&b| b > 0)
                        .ok_or(format!("--sample takes a byte count (like 4M), not '{v}'"))?,
                );
            }
            "--scales" if takes(&[Command::Hist]) => a.scales = true,
            "--npy" if takes(&[Command::Export]) => a.npy = Some(PathBuf::from(value("--npy")?)),
            "--sha256" if takes(&[Command::Check]) => a.sha256 = true,
            "--scan" if takes(&[Command::Check]) => a.scan = true,
            "--expect" if takes(&[Command::Check]) => {
                a.expect = Some(PathBuf::from(value("--expect")?));
                a.sha256 = true;
            }
            "--context" if takes(&[Command::Inspect, Command::Check]) => {
                let v = value("--context")?;
                let c = parse_bytes(&v)
                    .filter(|c| (1..=1 << 32).contains(c))
                    .ok_or(format!("--context takes a token count (like 8192 or 128K), not '{v}'"))?;
                a.contexts.push(c);
            }
            "--id" if takes(&[Command::Tokens]) => {
                let v = value("--id")?;
                a.ids.push(v.parse().map_err(|_| format!("--id takes a token id, not '{v}'"))?);
            }
            "--find" if takes(&[Command::Tokens]) => a.find = Some(value("--find")?),
            "--limit" if takes(&[Command::Tokens]) => {
                let v = value("--limit")?;
                a.limit = Some(v.parse().ok().filter(|&n| n > 0).ok_or(format!("--limit takes a count, not '{v}'"))?);
            }
            "--name" if takes(&[Command::Template]) => a.name = Some(value("--name")?),
            "--vs" if takes(&[Command::Diff]) => in_vs = true,
            "--values" if takes(&[Command::Diff]) => {
                a.values = match value("--values")?.as_str() {
                    "none" => None,
                    "sample" => Some(Values::Sample),
                    "all" => Some(Values::All),
                    v => return Err(format!("--values takes none, sample or all, not '{v}'")),
                }
            }
            flag if flag.starts_with("--") => return Err(format!("unknown option '{flag}' for {cmd}")),
            path if in_vs => a.vs.push(PathBuf::from(path)),
            path => a.paths.push(PathBuf::from(path)),
        }
    }
    if a.paths.is_empty() {
        return Err("no PATH given".into());
    }
    if command == Command::Diff && a.vs.is_empty() {
        return Err("diff needs --vs PATH... (the checkpoint to compare with)".into());
    }
    a.selection = match (elements, sample) {
        (Some(_), Some(_)) => return Err("--elements and --sample exclude each other".into()),
        (Some((start, end)), None) => Selection::Elements { start, end },
        (None, Some(budget_bytes)) => Selection::Sample { budget_bytes },
        (None, None) => Selection::Whole,
    };
    if matches!(command, Command::Hist | Command::Export) && a.tensor.is_none() {
        return Err(format!("{cmd} needs --tensor NAME"));
    }
    if command == Command::Tokens && !a.ids.is_empty() && a.find.is_some() {
        return Err("--id and --find exclude each other".into());
    }
    if command == Command::Export && a.npy.is_none() {
        return Err("export needs --npy OUT".into());
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

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn usage_errors_are_reported() {
        for bad in [
            "",
            "inspect",
            "frobnicate x",
            "inspect x --bogus",
            "hist x",
            "hist x --tensor",
            "hist x --tensor t --bins 0",
            "hist x --tensor t --elements 5:5",
            "hist x --tensor t --elements 1:9 --sample 4M",
            "hist x --tensor t --sample lots",
            "export x --tensor t",
            "inspect x --npy y",
            "diff a",
            "diff a --vs",
            "diff a --vs b --values some",
            "inspect a --vs b",
            "tokens m --id x",
            "tokens m --id 1 --find a",
            "tokens m --limit 0",
            "inspect m --find a",
        ] {
            assert!(parse_args(&args(bad)).is_err(), "{bad}");
        }
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
        let a = parse_args(&args("check m --scan --expect sums.txt")).unwrap();
        assert!(a.scan && a.sha256 && a.expect.is_some());
        let a = parse_args(&args("export m --tensor w --npy out.npy")).unwrap();
        assert_eq!(a.npy, Some(PathBuf::from("out.npy")));
        let a = parse_args(&args("inspect m --context 128K --context 1000")).unwrap();
        assert_eq!(a.contexts, [131072, 1000]);
        assert!(parse_args(&args("inspect m --context 0")).is_err());
        assert!(parse_args(&args("hist m --tensor w --context 8")).is_err());
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
    }
}
