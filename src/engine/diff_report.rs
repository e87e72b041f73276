//! The diff of two checkpoints as the JSON contract describes it (README, `tensorscope diff
//! --json`): both sides' files, every tensor with its status and, when compared, how far its
//! values are apart, the metadata keys that differ, and the counts.

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

use super::diff::Diff;
use super::model::{Checkpoint, MetaValue, Tensor};
use super::report::{Float, Typed};

/// The diff of `a` and `b`, ready to serialise.
pub struct DiffReport<'a> {
    pub a: &'a Checkpoint,
    pub b: &'a Checkpoint,
    pub diff: &'a Diff,
}

impl DiffReport<'_> {
    /// The report as pretty-printed JSON text, with a final newline.
    pub fn to_text(&self) -> String {
        serde_json::to_string_pretty(self).expect("reports serialise") + "\n"
    }
}

struct Side<'a>(&'a Checkpoint);

impl Serialize for Side<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct File<'a> {
            path: &'a str,
            size: u64,
        }
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("format", self.0.format.name())?;
        let files: Vec<File> = self.0.files.iter().map(|f| File { path: &f.path, size: f.size }).collect();
        m.serialize_entry("files", &files)?;
        m.end()
    }
}

struct TensorSide<'a>(&'a Tensor);

impl Serialize for TensorSide<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("dtype", &self.0.dtype.name())?;
        m.serialize_entry("shape", &self.0.shape)?;
        m.serialize_entry("nbytes", &self.0.nbytes)?;
        m.end()
    }
}

struct MetaSide<'a>(&'a MetaValue);

impl Serialize for MetaSide<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            MetaValue::Text(t) => s.serialize_str(t),
            MetaValue::Gguf(v) => Typed(v).serialize(s),
        }
    }
}

impl Serialize for DiffReport<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (a, b) = (self.a, self.b);
        let mut m = s.serialize_map(Some(5))?;
        m.serialize_entry("a", &Side(a))?;
        m.serialize_entry("b", &Side(b))?;
        let tensors: Vec<TensorEntry> = self.diff.tensors.iter().map(|p| TensorEntry { a, b, p }).collect();
        m.serialize_entry("tensors", &tensors)?;
        let metadata: Vec<MetaEntry> = self.diff.metadata.iter().map(|p| MetaEntry { a, b, p }).collect();
        m.serialize_entry("metadata", &metadata)?;
        let [same, changed, only_a, only_b] = self.diff.counts();
        let mut counts = serde_json::Map::new();
        for (k, v) in [("same", same), ("changed", changed), ("only_a", only_a), ("only_b", only_b)] {
            counts.insert(k.into(), v.into());
        }
        m.serialize_entry("summary", &counts)?;
        m.end()
    }
}

struct TensorEntry<'a> {
    a: &'a Checkpoint,
    b: &'a Checkpoint,
    p: &'a super::diff::TensorPair,
}

impl Serialize for TensorEntry<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let ta = self.p.a.map(|i| &self.a.tensors[i]);
        let tb = self.p.b.map(|i| &self.b.tensors[i]);
        let mut m = s.serialize_map(None)?;
        let name = ta.or(tb).map_or("", |t| t.name.as_str());
        m.serialize_entry("name", name)?;
        m.serialize_entry("b_name", &tb.map(|t| t.name.as_str()))?;
        m.serialize_entry("status", self.p.status.name())?;
        m.serialize_entry("a", &ta.map(TensorSide))?;
        m.serialize_entry("b", &tb.map(TensorSide))?;
        if let Some(v) = &self.p.values {
            let mut vm = serde_json::Map::new();
            vm.insert("compared".into(), v.compared.into());
            for (k, x) in [("nmse", v.nmse), ("cosine", v.cosine), ("max_abs", v.max_abs)] {
                vm.insert(k.into(), serde_json::to_value(Float(x)).unwrap_or_default());
            }
            m.serialize_entry("values", &vm)?;
        }
        m.end()
    }
}

struct MetaEntry<'a> {
    a: &'a Checkpoint,
    b: &'a Checkpoint,
    p: &'a super::diff::MetaPair,
}

impl Serialize for MetaEntry<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(4))?;
        m.serialize_entry("key", &self.p.key)?;
        m.serialize_entry("status", self.p.status.name())?;
        m.serialize_entry("a", &self.p.a.map(|i| MetaSide(&self.a.metadata[i].1)))?;
        m.serialize_entry("b", &self.p.b.map(|i| MetaSide(&self.b.metadata[i].1)))?;
        m.end()
    }
}
