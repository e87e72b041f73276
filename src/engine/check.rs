//! The offline check's rules: NaN/Inf findings, and expected digests compared with the SHA-256
//! of each file (the passes themselves are [`job::check_job`](super::job::check_job)).

use super::findings::Finding;
use super::job::NonFiniteSink;

/// Stable codes of the check's rules.
pub mod rules {
    use crate::findings::Rule;

    pub const NON_FINITE: Rule = Rule::warning("check.non_finite_values");
    pub const HASH_MISMATCH: Rule = Rule::error("check.sha256_mismatch");
    pub const HASH_MATCH: Rule = Rule::info("check.sha256_match");
    pub const NOT_SCANNED: Rule = Rule::info("check.not_scanned");
}

/// The finding for a tensor holding NaN or infinite values, if it does.
pub fn non_finite_finding(tensor: &str, file: usize, s: &NonFiniteSink) -> Option<Finding> {
    (s.nan + s.inf > 0).then(|| {
        Finding::new(rules::NON_FINITE, format!("{} NaN and {} infinite values among {}", s.nan, s.inf, s.values))
            .in_file(file)
            .on_tensor(tensor)
    })
}

/// Expected digests: `(file name or None, lowercase hex)` per line given.
pub type Expected = Vec<(Option<String>, String)>;

/// Expected digests from `sha256sum` output (`<hex>  <name>` or `<hex> *<name>`) or bare hex
/// lines (matched to files in order): `(file name or None, lowercase hex)`.
pub fn parse_expected(text: &str) -> Expected {
    text.lines()
        .filter_map(|line| {
            let line = line.trim();
            let (hex, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
            let hex = hex.to_ascii_lowercase();
            if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            let name = rest.trim().trim_start_matches('*');
            Some(((!name.is_empty()).then(|| name.to_owned()), hex))
        })
        .collect()
}

/// The finding comparing file `file` (called `path`) with an expected digest.
pub fn compare_digest(file: usize, path: &str, got: &str, want: &str) -> Finding {
    if got.eq_ignore_ascii_case(want) {
        Finding::new(rules::HASH_MATCH, format!("{path}: SHA-256 matches the expected {want}")).in_file(file)
    } else {
        Finding::new(rules::HASH_MISMATCH, format!("{path}: SHA-256 is {got}, expected {want}")).in_file(file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_digests_are_read_from_sha256sum_output() {
        let a = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        let text = format!("{a}  model-00001-of-00002.safetensors\n{}  *b.gguf\nnot a hash\n{a}\n", a.to_uppercase());
        let e = parse_expected(&text);
        assert_eq!(e.len(), 3);
        assert_eq!(e[0], (Some("model-00001-of-00002.safetensors".into()), a.into()));
        assert_eq!(e[1].0.as_deref(), Some("b.gguf"));
        assert_eq!(e[2].0, None);
        assert_eq!(compare_digest(0, "x", a, &a.to_uppercase()).rule(), rules::HASH_MATCH);
        assert_eq!(compare_digest(0, "x", a, &"0".repeat(64)).rule(), rules::HASH_MISMATCH);
    }
}
