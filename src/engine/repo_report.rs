//! `repo --json`: every checkpoint of a folder or a repository side by side, read from their
//! headers: per variant its size, bits per weight, memory to run and findings; per companion
//! what it is and which variants it fits; the other files by name.

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

use crate::estimate::estimate;
use crate::findings::Severity;
use crate::model::MetaValue;
use crate::naming::file_type_name;
use crate::report::EstimateJson;
use crate::summary::summarize;
use crate::variants::{fits, Variant};

/// The repository report: its source, the revision read (when pinned), its checkpoints and the
/// other files.
pub struct RepoReport<'a> {
    pub repo: &'a str,
    pub revision: Option<&'a str>,
    pub variants: &'a [Variant],
    pub other_files: &'a [String],
}

impl RepoReport<'_> {
    /// The report as pretty JSON text.
    pub fn to_text(&self) -> String {
        let mut out = serde_json::to_string_pretty(self).unwrap_or_default();
        out.push('\n');
        out
    }
}

impl Serialize for RepoReport<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (mut models, others): (Vec<&Variant>, Vec<&Variant>) = self.variants.iter().partition(|v| v.is_choice());
        models.sort_by_key(|v| v.bytes());
        let mut m = s.serialize_map(Some(5))?;
        m.serialize_entry("repo", self.repo)?;
        m.serialize_entry("revision", &self.revision)?;
        m.serialize_entry("variants", &Seq(models.iter().map(|v| VariantJson(v)).collect()))?;
        let companions = others.iter().map(|c| CompanionJson { c, models: &models }).collect();
        m.serialize_entry("companions", &Seq(companions))?;
        m.serialize_entry("other_files", self.other_files)?;
        m.end()
    }
}

struct Seq<T>(Vec<T>);

impl<T: Serialize> Serialize for Seq<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(&self.0)
    }
}

struct VariantJson<'a>(&'a Variant);

impl Serialize for VariantJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let v = self.0;
        let cp = &v.cp;
        let all = summarize(cp).all;
        let file_type = match cp.meta("general.file_type") {
            Some(MetaValue::Gguf(t)) => t.as_u64().and_then(file_type_name),
            _ => None,
        };
        let count = |sev| cp.findings.iter().filter(|f| f.severity == sev).count() as u64;
        let mut m = s.serialize_map(Some(10))?;
        m.serialize_entry("name", &v.name)?;
        m.serialize_entry("format", cp.format.name())?;
        m.serialize_entry("kind", v.kind.name())?;
        m.serialize_entry("files", &Seq(v.files.iter().map(|f| f.path.as_str()).collect()))?;
        m.serialize_entry("bytes", &v.bytes())?;
        m.serialize_entry("params", &all.params)?;
        m.serialize_entry("bits_per_weight", &all.bits_per_weight())?;
        m.serialize_entry("file_type", &file_type)?;
        m.serialize_entry("estimate", &EstimateJson(&estimate(cp)))?;
        m.serialize_entry("findings", &Counts { errors: count(Severity::Error), warnings: count(Severity::Warning) })?;
        m.end()
    }
}

#[derive(Serialize)]
struct Counts {
    errors: u64,
    warnings: u64,
}

struct CompanionJson<'a> {
    c: &'a Variant,
    models: &'a [&'a Variant],
}

impl Serialize for CompanionJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let c = self.c;
        let fits: Vec<&str> =
            self.models.iter().filter(|m| matches!(fits(m, c), Some(Ok(())))).map(|m| m.name.as_str()).collect();
        let mut m = s.serialize_map(Some(5))?;
        m.serialize_entry("name", &c.name)?;
        m.serialize_entry("kind", c.role())?;
        m.serialize_entry("files", &Seq(c.files.iter().map(|f| f.path.as_str()).collect()))?;
        m.serialize_entry("bytes", &c.bytes())?;
        m.serialize_entry("fits", &fits)?;
        m.end()
    }
}
