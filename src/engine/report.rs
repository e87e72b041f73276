//! The JSON reports shared by the CLI's `--json` and the viewer's exports, as serde structs
//! serialized straight to the output (no JSON tree is built: a 500k-tensor report streams).
//!
//! Non-finite floats, which JSON numbers cannot hold, are written as the strings `"NaN"`,
//! `"Infinity"` and `"-Infinity"` (as protobuf's JSON mapping does), in metadata and
//! statistics alike.

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::Value as Json;

use super::estimate::{estimate, Estimate};
use super::findings::Finding;
use super::gguf::Value;
use super::job::{CheckOutcome, ScanOutcome};
use super::model::{Checkpoint, MetaValue, Tensor};
use super::summary::{summarize, Summary};

pub use super::json_float::Float;

/// The report of `tensorscope inspect --json` (and, with a check's outcome, of `check --json`),
/// as `DESIGN.md` specifies it.
pub struct Report<'a> {
    cp: &'a Checkpoint,
    summary: Summary,
    estimate: Estimate,
    digests: Option<&'a [String]>,
    scan: Option<&'a [ScanOutcome]>,
    /// Findings after the header's (a check's digest and scan findings).
    added: Vec<Finding>,
}

impl<'a> Report<'a> {
    /// The inspect report of `cp`.
    pub fn inspect(cp: &'a Checkpoint) -> Self {
        Report { cp, summary: summarize(cp), estimate: estimate(cp), digests: None, scan: None, added: Vec::new() }
    }

    /// The check report: `files[i].sha256` when digests were taken, `scan` when tensors were
    /// scanned, and the findings these add (digest comparisons with `expected`, non-finite values).
    pub fn check(cp: &'a Checkpoint, out: &'a CheckOutcome, expected: &[(Option<String>, String)]) -> Self {
        let added = super::check_report::added_findings(cp, out, expected);
        Report { digests: out.digests.as_deref(), scan: out.scan.as_deref(), added, ..Report::inspect(cp) }
    }

    /// The same report with the memory estimate also at `contexts`.
    pub fn with_contexts(mut self, contexts: &[u64]) -> Self {
        if !contexts.is_empty() {
            self.estimate = super::estimate::estimate_at(self.cp, contexts);
        }
        self
    }

    /// The checkpoint reported on.
    pub fn checkpoint(&self) -> &'a Checkpoint {
        self.cp
    }

    /// Every finding: the header's, then the added ones.
    pub fn findings(&self) -> impl Iterator<Item = &Finding> + Clone {
        self.cp.findings.iter().chain(&self.added)
    }

    /// Pretty JSON and a newline, as the CLI prints it.
    pub fn to_text(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }
}

/// Serializes an iterator as a JSON array, without collecting it.
struct Seq<I>(std::cell::Cell<Option<I>>);

impl<I: Iterator<Item = T>, T: Serialize> Serialize for Seq<I> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let items = self.0.take().into_iter().flatten();
        let mut seq = s.serialize_seq(None)?;
        for i in items {
            seq.serialize_element(&i)?;
        }
        seq.end()
    }
}

fn seq<I: Iterator<Item = T>, T: Serialize>(i: I) -> Seq<I> {
    Seq(std::cell::Cell::new(Some(i)))
}

#[derive(Serialize)]
struct FileJson<'a> {
    path: &'a str,
    size: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    sha256: Option<&'a str>,
}

#[derive(Serialize)]
struct TensorJson<'a> {
    name: &'a str,
    dtype: String,
    shape: &'a [u64],
    file: usize,
    /// `null` when the header breaks off before the data section (no offset is known).
    offset: Option<u64>,
    nbytes: u64,
    /// Element strides, only for a tensor stored in another order than its shape's (a
    /// transposed pickle view).
    #[serde(skip_serializing_if = "Option::is_none")]
    strides: Option<&'a [u64]>,
}

impl<'a> From<&'a Tensor> for TensorJson<'a> {
    fn from(t: &'a Tensor) -> Self {
        TensorJson {
            name: &t.name,
            dtype: t.dtype.name(),
            shape: &t.shape,
            file: t.file,
            offset: t.offset,
            nbytes: t.nbytes,
            strides: t.strides.as_deref(),
        }
    }
}

#[derive(Serialize)]
struct Totals {
    tensors: u64,
    params: u64,
    bytes: u64,
}

#[derive(Serialize)]
struct ImportJson<'a> {
    file: usize,
    module: &'a str,
    name: &'a str,
    at: u64,
    verdict: &'static str,
}

#[derive(Serialize)]
struct ScanJson<'a> {
    tensor: &'a str,
    file: usize,
    values: u64,
    nan: u64,
    inf: u64,
}

struct Meta<'a>(&'a [(String, MetaValue)]);

impl Serialize for Meta<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.0 {
            match v {
                MetaValue::Text(t) => m.serialize_entry(k, t)?,
                MetaValue::Gguf(v) => m.serialize_entry(k, &Typed(v))?,
            }
        }
        m.end()
    }
}

struct SummaryJson<'a>(&'a Summary);

impl<'a> Serialize for SummaryJson<'a> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let a = &self.0.all;
        let mut m = s.serialize_map(Some(7))?;
        m.serialize_entry("tensors", &a.tensors)?;
        m.serialize_entry("params", &a.params)?;
        m.serialize_entry("bytes", &a.bytes)?;
        m.serialize_entry("bits_per_weight", &Float(a.bits_per_weight()))?;
        let totals = |list: &'a [(String, crate::summary::Totals)]| -> Vec<(&'a String, Totals)> {
            list.iter().map(|(n, t)| (n, Totals { tensors: t.tensors, params: t.params, bytes: t.bytes })).collect()
        };
        m.serialize_entry("by_dtype", &MapOf(&totals(&self.0.by_dtype)))?;
        m.serialize_entry("quant_mix", &MapOf(&totals(&self.0.quant_mix)))?;
        m.serialize_entry("overhead_bytes", &self.0.overhead_bytes)?;
        m.end()
    }
}

/// An estimate as `inspect --json` writes it (also each variant's in `repo --json`).
pub(crate) struct EstimateJson<'a>(pub(crate) &'a Estimate);

#[derive(Serialize)]
struct KvJson {
    context: u64,
    #[serde(rename = "type")]
    cache: &'static str,
    bytes: u64,
    total_bytes: u64,
}

impl Serialize for EstimateJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let e = self.0;
        let mut m = s.serialize_map(Some(11))?;
        m.serialize_entry("source", &e.source.map(|s| s.name()))?;
        m.serialize_entry("architecture", &e.architecture)?;
        m.serialize_entry("context_length", &e.context)?;
        m.serialize_entry("layers", &e.layers)?;
        m.serialize_entry("kv_layers", &e.kv_layers)?;
        m.serialize_entry("weights_bytes", &e.weights_bytes)?;
        m.serialize_entry("projector_bytes", &e.projector_bytes)?;
        let kv = e.kv_cache.iter().map(|k| KvJson {
            context: k.context,
            cache: k.cache.name(),
            bytes: k.bytes,
            total_bytes: e.total(k),
        });
        m.serialize_entry("kv_cache", &seq(kv))?;
        m.serialize_entry("state_bytes", &e.state_bytes)?;
        m.serialize_entry("unknown", &e.unknown)?;
        m.end()
    }
}

struct MapOf<'a, K, V>(&'a [(K, V)]);

impl<K: Serialize, V: Serialize> Serialize for MapOf<'_, K, V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl Serialize for Report<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let cp = self.cp;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("format", cp.format.name())?;
        m.serialize_entry("kind", super::kind::kind(cp).name())?;
        let files = cp.files.iter().enumerate().map(|(i, f)| FileJson {
            path: &f.path,
            size: f.size,
            sha256: self.digests.and_then(|d| d.get(i)).map(String::as_str),
        });
        m.serialize_entry("files", &seq(files))?;
        m.serialize_entry("metadata", &Meta(&cp.metadata))?;
        m.serialize_entry("tensors", &seq(cp.tensors.iter().map(TensorJson::from)))?;
        m.serialize_entry("summary", &SummaryJson(&self.summary))?;
        m.serialize_entry("estimate", &EstimateJson(&self.estimate))?;
        m.serialize_entry("findings", &seq(self.findings()))?;
        if cp.format == super::model::Format::Pickle {
            let imports = cp.imports.iter().map(|(file, i)| ImportJson {
                file: *file,
                module: &i.module,
                name: &i.name,
                at: i.at,
                verdict: match i.verdict {
                    super::pickle::safety::Verdict::Expected => "expected",
                    super::pickle::safety::Verdict::Unknown => "unknown",
                    super::pickle::safety::Verdict::Dangerous => "dangerous",
                },
            });
            m.serialize_entry("imports", &seq(imports))?;
            m.serialize_entry("weights_only", &cp.weights_only)?;
        }
        if let Some(scan) = self.scan {
            let counted = cp.tensors.iter().zip(scan).filter_map(|(t, o)| match o {
                ScanOutcome::Counted(c) => {
                    Some(ScanJson { tensor: &t.name, file: t.file, values: c.values, nan: c.nan, inf: c.inf })
                }
                _ => None,
            });
            m.serialize_entry("scan", &seq(counted))?;
        }
        m.end()
    }
}

/// `{"type": t, "value": v}`, or for arrays `{"type":"array","item_type":t,"len":N,"value":[...]}`
/// (the first items; nested arrays as objects of the same form).
pub struct Typed<'a>(pub &'a Value);

impl Serialize for Typed<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Array(a) => {
                let mut m = s.serialize_map(Some(4))?;
                m.serialize_entry("type", "array")?;
                m.serialize_entry("item_type", a.item_type.name())?;
                m.serialize_entry("len", &a.len)?;
                m.serialize_entry("value", &seq(a.items.iter().map(Plain)))?;
                m.end()
            }
            other => {
                let mut m = s.serialize_map(Some(2))?;
                m.serialize_entry("type", other.value_type().name())?;
                m.serialize_entry("value", &Plain(other))?;
                m.end()
            }
        }
    }
}

/// A value as a bare JSON value (arrays as [`Typed`] objects).
struct Plain<'a>(&'a Value);

impl Serialize for Plain<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match *self.0 {
            Value::U8(x) => s.serialize_u8(x),
            Value::I8(x) => s.serialize_i8(x),
            Value::U16(x) => s.serialize_u16(x),
            Value::I16(x) => s.serialize_i16(x),
            Value::U32(x) => s.serialize_u32(x),
            Value::I32(x) => s.serialize_i32(x),
            Value::U64(x) => s.serialize_u64(x),
            Value::I64(x) => s.serialize_i64(x),
            Value::F32(x) => Float(f64::from(x)).serialize(s),
            Value::F64(x) => Float(x).serialize(s),
            Value::Bool(x) => s.serialize_bool(x),
            Value::String(ref t) => s.serialize_str(t),
            Value::Array(_) => Typed(self.0).serialize(s),
        }
    }
}

/// The inspect report as a JSON tree (for tests and small reports; the CLI streams instead).
pub fn report(cp: &Checkpoint) -> Json {
    serde_json::to_value(Report::inspect(cp)).unwrap_or_default()
}
