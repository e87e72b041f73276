//! The offline check's findings and expected digests: what a check adds to the report, the
//! same for the CLI and the browser (both run [`check_job`](super::job::check_job)).

use super::check::{compare_digest, non_finite_finding, parse_expected, rules};
use super::findings::Finding;
use super::job::{CheckOutcome, ScanOutcome};
use super::model::{Checkpoint, FileInfo};
use super::text::base_name;

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
pub fn added_findings(cp: &Checkpoint, out: &CheckOutcome, expected: &[(Option<String>, String)]) -> Vec<Finding> {
    let mut found = Vec::new();
    if let Some(d) = &out.digests {
        for (i, want) in expected_for(&cp.files, expected).iter().enumerate() {
            if let (Some(got), Some(want)) = (d.get(i), want) {
                found.push(compare_digest(i, &cp.files[i].path, got, want));
            }
        }
    }
    for (t, o) in cp.tensors.iter().zip(out.scan.as_deref().unwrap_or_default()) {
        match o {
            ScanOutcome::NotDecodable(dtype) => found
                .push(Finding::new(rules::NOT_SCANNED, format!("dtype {dtype} cannot be decoded")).on_tensor(&t.name)),
            ScanOutcome::Skipped => {}
            ScanOutcome::Counted(s) => found.extend(non_finite_finding(&t.name, t.file, s)),
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hub_style_and_sha256sum_lines_are_read() {
        let h = "a".repeat(64);
        let e = parse_expected_text(&format!("SHA256: {h}\nsha256:{h}\n{h}  x.gguf\n"));
        assert_eq!(e, vec![(None, h.clone()), (None, h.clone()), (Some("x.gguf".into()), h.clone())]);
        let files = vec![FileInfo::new("dir/x.gguf", 1), FileInfo::new("y.gguf", 1), FileInfo::new("z.gguf", 1)];
        assert_eq!(expected_for(&files, &e), vec![Some(h.clone()), Some(h.clone()), Some(h)]);
    }
}
