//! Validation findings: a rule a file breaks, how bad it is, and where.

use serde::Serialize;

/// How much a finding matters. An `Error` makes `check` exit with status 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

/// A rule a file can break: its stable code and how much breaking it matters, defined once as
/// a constant beside the decoder that checks it. A rule graded by what the break costs (a zip
/// whose directory is unreadable, against one entry of it) is one code at two severities: two
/// constants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    pub code: &'static str,
    pub severity: Severity,
}

impl Rule {
    /// A rule whose break is an error.
    pub const fn error(code: &'static str) -> Rule {
        Rule { code, severity: Severity::Error }
    }

    /// A rule whose break is a warning.
    pub const fn warning(code: &'static str) -> Rule {
        Rule { code, severity: Severity::Warning }
    }

    /// A rule whose break is worth knowing.
    pub const fn info(code: &'static str) -> Rule {
        Rule { code, severity: Severity::Info }
    }
}

/// One broken rule. `code` is stable (tests and scripts match on it); `message` names the
/// rule and the byte offset where that helps.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Finding {
    pub severity: Severity,
    pub code: &'static str,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tensor: Option<String>,
}

impl Finding {
    /// A break of `rule`, said in `message`.
    pub fn new(rule: Rule, message: impl Into<String>) -> Self {
        Finding { severity: rule.severity, code: rule.code, message: message.into(), file: None, tensor: None }
    }

    /// The rule broken, at the severity it was broken at.
    pub fn rule(&self) -> Rule {
        Rule { code: self.code, severity: self.severity }
    }

    /// Whether this finding breaks `rule` (at whatever severity it is graded).
    pub fn breaks(&self, rule: Rule) -> bool {
        self.code == rule.code
    }

    /// The same finding located in file `file`.
    pub fn in_file(mut self, file: usize) -> Self {
        self.file = Some(file);
        self
    }

    /// The same finding about tensor `name`.
    pub fn on_tensor(mut self, name: &str) -> Self {
        self.tensor = Some(name.to_owned());
        self
    }
}

/// Whether any finding is an error.
pub fn has_error(findings: &[Finding]) -> bool {
    findings.iter().any(|f| f.severity == Severity::Error)
}

/// Most findings of one rule listed per file (or per index): the rest are counted in one last
/// finding. A
/// damaged header can break a rule once per entry, millions of times, and each finding takes
/// far more memory than the bytes that broke it.
pub const MAX_PER_RULE: usize = 1000;

/// Keeps a file's findings to [`MAX_PER_RULE`] per rule as a decoder collects them.
#[derive(Clone, Debug, Default)]
pub struct RuleCap {
    /// Per rule: findings dropped, and the worst severity among them.
    dropped: Vec<(&'static str, Severity, u64)>,
    /// Length of the list at which it is next trimmed.
    next_trim: usize,
}

impl RuleCap {
    /// Trim `findings` once it has grown well past the last trim (amortised: every finding is
    /// looked at a bounded number of times). Findings already listed keep their order.
    pub fn trim(&mut self, findings: &mut Vec<Finding>) {
        if findings.len() >= self.next_trim.max(4 * MAX_PER_RULE) {
            self.cut(findings);
            self.next_trim = 2 * findings.len();
        }
    }

    /// Trim `findings` and append, per rule over the cap, a finding saying how many more there were.
    pub fn finish(&mut self, findings: &mut Vec<Finding>) {
        self.cut(findings);
        for (code, severity, n) in self.dropped.drain(..) {
            findings.push(Finding::new(
                Rule { code, severity },
                format!("{n} more findings of this rule are not listed (the first {MAX_PER_RULE} are)"),
            ));
        }
    }

    /// Keep the first [`MAX_PER_RULE`] findings of each rule.
    fn cut(&mut self, findings: &mut Vec<Finding>) {
        let mut kept: Vec<(&'static str, usize)> = Vec::new();
        let dropped = &mut self.dropped;
        findings.retain(|f| {
            let n = match kept.iter_mut().find(|(c, _)| *c == f.code) {
                Some((_, n)) => n,
                None => {
                    kept.push((f.code, 0));
                    &mut kept.last_mut().expect("just pushed").1
                }
            };
            *n += 1;
            if *n <= MAX_PER_RULE {
                return true;
            }
            match dropped.iter_mut().find(|(c, _, _)| *c == f.code) {
                Some((_, s, k)) => {
                    *s = (*s).max(f.severity);
                    *k += 1;
                }
                None => dropped.push((f.code, f.severity, 1)),
            }
            false
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_rule_keeps_its_first_findings_and_counts_the_rest() {
        let mut cap = RuleCap::default();
        let mut list = Vec::new();
        for i in 0..10 * MAX_PER_RULE {
            list.push(Finding::new(Rule::warning("a"), format!("a{i}")));
            if i % 3 == 0 {
                list.push(Finding::new(Rule::error("b"), format!("b{i}")));
            }
            if i == 5 {
                list.push(Finding::new(Rule::info("c"), "once"));
            }
            cap.trim(&mut list);
            assert!(list.len() <= 8 * MAX_PER_RULE + 4, "trimmed as it grows: {}", list.len());
        }
        cap.finish(&mut list);
        let of = |code: &str| list.iter().filter(|f| f.code == code).map(|f| f.message.as_str()).collect::<Vec<_>>();
        let a = of("a");
        assert_eq!(a.len(), MAX_PER_RULE + 1);
        assert_eq!(a[..MAX_PER_RULE], (0..MAX_PER_RULE).map(|i| format!("a{i}")).collect::<Vec<_>>()[..]);
        assert!(a[MAX_PER_RULE].starts_with(&format!("{} more findings", 9 * MAX_PER_RULE)), "{}", a[MAX_PER_RULE]);
        let b = of("b");
        assert_eq!(b.len(), MAX_PER_RULE + 1);
        assert!(b[MAX_PER_RULE].starts_with(&format!("{} more", (10 * MAX_PER_RULE).div_ceil(3) - MAX_PER_RULE)));
        assert_eq!(list.iter().rfind(|f| f.code == "b").unwrap().severity, Severity::Error);
        assert_eq!(of("c"), ["once"]);
        // Listed findings keep their order: c came after a5 and b3.
        let pos = |m: &str| list.iter().position(|f| f.message == m).unwrap();
        assert!(pos("a5") < pos("once") && pos("b3") < pos("once") && pos("once") < pos("a6"));
    }
}
