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
    /// An error-level finding.
    pub fn error(code: &'static str, message: impl Into<String>) -> Self {
        Finding::new(Severity::Error, code, message)
    }

    /// A warning-level finding.
    pub fn warning(code: &'static str, message: impl Into<String>) -> Self {
        Finding::new(Severity::Warning, code, message)
    }

    /// An informational finding.
    pub fn info(code: &'static str, message: impl Into<String>) -> Self {
        Finding::new(Severity::Info, code, message)
    }

    fn new(severity: Severity, code: &'static str, message: impl Into<String>) -> Self {
        Finding { severity, code, message: message.into(), file: None, tensor: None }
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
