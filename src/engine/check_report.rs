//! The offline check's report, assembled from digests and scan counts computed elsewhere (the
//! browser drives the passes itself): the same JSON as `tensorscope check --sha256 --scan --json`.

use serde_json::{json, Value as Json};

use super::check::{compare_digest, non_finite_finding, parse_expected, rules, NonFiniteSink};
use super::decode::{codec_for, BlockCodec};
use super::findings::Finding;
use super::model::{Checkpoint, FileInfo, Tensor};
use super::plan::{plan, Plan, Selection};
use super::report::report;
use super::shards::base_name;

/// What the NaN/Inf scan did with one tensor.
#[derive(Clone, Debug, PartialEq)]
pub enum ScanOutcome {
    /// Its dtype has no decoder (an info finding).
    NotDecodable(String),
    /// Its layout or extent is faulty: a header finding already; nothing to add.
    Skipped,
    Counted(NonFiniteSink),
}

/// How to scan tensor `t` of a file of `file_len` bytes, or why it is not scanned.
pub fn scan_plan(t: &Tensor, file_len: u64) -> Result<(Plan, BlockCodec), ScanOutcome> {
    let codec = codec_for(&t.dtype).ok_or_else(|| ScanOutcome::NotDecodable(t.dtype.name()))?;
    let p = plan(t, &codec, &Selection::Whole).map_err(|_| ScanOutcome::Skipped)?;
    if t.offset.saturating_add(t.nbytes) > file_len {
        return Err(ScanOutcome::Skipped);
    }
    Ok((p, codec))
}

/// Expected digests pasted by a user: `sha256sum` output, bare hex lines, or lines as the Hub
/// shows them (`SHA256: <hex>`, `sha256:<hex>`).
pub fn parse_expected_text(text: &str) -> Vec<(Option<String>, String)> {
    let cleaned: String = text
        .lines()
        .map(|l| {
            let t = l.trim();
            let lower = t.to_ascii_lowercase();
            match lower.strip_prefix("sha256") {
                Some(rest) if rest.starts_with(':') => t[7..].trim(),
                _ => t,
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    parse_expected(&cleaned)
}

/// The expected digest of each file: one named for the file (by file name), else the next
/// unnamed one, as the CLI's `--expect` assigns them.
pub fn expected_for(files: &[FileInfo], expected: &[(Option<String>, String)]) -> Vec<Option<String>> {
    let mut unnamed = expected.iter().filter(|(n, _)| n.is_none()).map(|(_, h)| h);
    files
        .iter()
        .map(|f| {
            let named = expected.iter().find(|(n, _)| n.as_deref().map(base_name) == Some(base_name(&f.path)));
            named.map(|(_, h)| h).or_else(|| unnamed.next()).cloned()
        })
        .collect()
}

/// The findings the check adds: digest comparisons per file in file order, then the scan's
/// findings in tensor order.
pub fn added_findings(
    cp: &Checkpoint,
    digests: Option<&[String]>,
    expected: &[(Option<String>, String)],
    scan: Option<&[ScanOutcome]>,
) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(d) = digests {
        for (i, want) in expected_for(&cp.files, expected).iter().enumerate() {
            if let (Some(got), Some(want)) = (d.get(i), want) {
                out.push(compare_digest(i, &cp.files[i].path, got, want));
            }
        }
    }
    for (t, o) in cp.tensors.iter().zip(scan.unwrap_or_default()) {
        match o {
            ScanOutcome::NotDecodable(dtype) => out
                .push(Finding::info(rules::NOT_SCANNED, format!("dtype {dtype} cannot be decoded")).on_tensor(&t.name)),
            ScanOutcome::Skipped => {}
            ScanOutcome::Counted(s) => out.extend(non_finite_finding(&t.name, t.file, s)),
        }
    }
    out
}

/// The report of `tensorscope check --json` with `--sha256` when `digests` is given (one per
/// file), `--scan` when `scan` is (one outcome per tensor), `--expect` when `expected` is not empty.
pub fn check_report(
    cp: &Checkpoint,
    digests: Option<&[String]>,
    expected: &[(Option<String>, String)],
    scan: Option<&[ScanOutcome]>,
) -> Json {
    let mut r = report(cp);
    if let Some(d) = digests {
        for (i, h) in d.iter().enumerate() {
            r["files"][i]["sha256"] = json!(h);
        }
    }
    if let Some(s) = scan {
        let counts = cp
            .tensors
            .iter()
            .zip(s)
            .filter_map(|(t, o)| match o {
                ScanOutcome::Counted(c) => {
                    Some(json!({ "tensor": t.name, "file": t.file, "values": c.values, "nan": c.nan, "inf": c.inf }))
                }
                _ => None,
            })
            .collect();
        r["scan"] = Json::Array(counts);
    }
    let mut findings = cp.findings.clone();
    findings.extend(added_findings(cp, digests, expected, scan));
    r["findings"] = serde_json::to_value(&findings).unwrap_or_default();
    r
}

/// The report as the CLI prints it: pretty JSON and a newline.
pub fn check_report_text(
    cp: &Checkpoint,
    digests: Option<&[String]>,
    expected: &[(Option<String>, String)],
    scan: Option<&[ScanOutcome]>,
) -> String {
    let mut text = serde_json::to_string_pretty(&check_report(cp, digests, expected, scan)).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use crate::engine::check::Sha256File;
    use crate::engine::scan::Scan;
    use crate::engine::step::{drive, CHUNK_BYTES};
    use std::path::PathBuf;

    fn fixture(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
    }

    /// The browser's way (digests and scan driven outside, report assembled here) gives the
    /// CLI's bytes exactly.
    #[test]
    fn report_matches_the_cli_byte_for_byte() {
        for names in [vec!["gguf_all_types.gguf"], vec!["st_all_numpy_dtypes.safetensors"], vec!["gguf_v3_be.gguf"]] {
            let paths: Vec<PathBuf> = names.iter().map(|n| fixture(n)).collect();
            let data: Vec<Vec<u8>> = paths.iter().map(|p| std::fs::read(p).unwrap()).collect();
            let d0 = drive(Sha256File::new(data[0].len() as u64), CHUNK_BYTES, |r| {
                Ok::<_, ()>(data[0][r.start as usize..r.end as usize].to_vec())
            })
            .unwrap();
            let sums = std::env::temp_dir().join(format!("ts-check-report-{}.sums", std::process::id()));
            std::fs::write(&sums, format!("{d0}  {}\n", names[0])).unwrap();
            for expect in [false, true] {
                let mut args: Vec<String> = vec!["check".into()];
                args.extend(paths.iter().map(|p| p.display().to_string()));
                args.extend(["--sha256".into(), "--scan".into(), "--json".into()]);
                if expect {
                    args.extend(["--expect".into(), sums.display().to_string()]);
                }
                let (mut out, mut err) = (Vec::new(), Vec::new());
                crate::cli::run(&args, &mut out, &mut err);
                let cli = String::from_utf8(out).unwrap();

                let (cp, _) = crate::cli::open_paths(&paths).unwrap();
                let digests: Vec<String> = data
                    .iter()
                    .map(|d| {
                        drive(Sha256File::new(d.len() as u64), CHUNK_BYTES, |r| {
                            Ok::<_, ()>(d[r.start as usize..r.end as usize].to_vec())
                        })
                        .unwrap()
                    })
                    .collect();
                let scan: Vec<ScanOutcome> = cp
                    .tensors
                    .iter()
                    .map(|t| {
                        let d = &data[t.file];
                        match scan_plan(t, d.len() as u64) {
                            Err(o) => o,
                            Ok((p, codec)) => ScanOutcome::Counted(
                                drive(Scan::new(p, codec, NonFiniteSink::default()), CHUNK_BYTES, |r| {
                                    let end = (r.end as usize).min(d.len());
                                    Ok::<_, ()>(d[(r.start as usize).min(end)..end].to_vec())
                                })
                                .unwrap(),
                            ),
                        }
                    })
                    .collect();
                let expected =
                    if expect { parse_expected_text(&std::fs::read_to_string(&sums).unwrap()) } else { vec![] };
                let ours = check_report_text(&cp, Some(&digests), &expected, Some(&scan));
                assert_eq!(ours, cli, "{names:?} expect={expect}");
            }
            let _ = std::fs::remove_file(&sums);
        }
    }

    #[test]
    fn hub_style_and_sha256sum_lines_are_read() {
        let h = "a".repeat(64);
        let e = parse_expected_text(&format!("SHA256: {h}\nsha256:{h}\n{h}  x.gguf\n"));
        assert_eq!(e, vec![(None, h.clone()), (None, h.clone()), (Some("x.gguf".into()), h.clone())]);
        let files = vec![
            FileInfo { path: "dir/x.gguf".into(), size: 1 },
            FileInfo { path: "y.gguf".into(), size: 1 },
            FileInfo { path: "z.gguf".into(), size: 1 },
        ];
        assert_eq!(expected_for(&files, &e), vec![Some(h.clone()), Some(h.clone()), Some(h)]);
    }
}
