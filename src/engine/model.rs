//! One model, whatever its format and however many files it spans.

use super::findings::Finding;
use super::gguf::{GgmlType, Value};
use super::safetensors::Dtype as StDtype;

/// The checkpoint format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Safetensors,
    Gguf,
}

impl Format {
    /// The name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Format::Safetensors => "safetensors",
            Format::Gguf => "gguf",
        }
    }
}

/// A tensor's element type, in its own format's terms.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dtype {
    Safetensors(StDtype),
    /// A GGML type id; ids outside ggml's table are kept and shown as `type N`.
    Ggml(GgmlType),
    /// A safetensors dtype string the spec does not define.
    Unknown(String),
}

impl Dtype {
    /// The spec spelling: `"BF16"`, `"Q4_K"`, `"type 99"`, or the unknown string as written.
    pub fn name(&self) -> String {
        match self {
            Dtype::Safetensors(d) => d.name().to_owned(),
            Dtype::Ggml(t) => t.name(),
            Dtype::Unknown(s) => s.clone(),
        }
    }

    /// Bytes that `elems` elements take, when the type defines it.
    pub fn nbytes(&self, elems: u64) -> Option<u64> {
        match self {
            Dtype::Safetensors(d) => d.nbytes(elems),
            Dtype::Ggml(t) => t.nbytes(elems),
            Dtype::Unknown(_) => None,
        }
    }
}

/// One file of the checkpoint, as given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileInfo {
    pub path: String,
    pub size: u64,
}

/// A tensor as the header describes it.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    pub name: String,
    pub dtype: Dtype,
    /// As stored: safetensors row-major; GGUF in ggml `ne` order (innermost first).
    pub shape: Vec<u64>,
    /// Index into [`Checkpoint::files`].
    pub file: usize,
    /// Absolute byte offset of the tensor's first byte in its file.
    pub offset: u64,
    pub nbytes: u64,
}

impl Tensor {
    /// Number of elements, or `None` when the product of the shape overflows `u64`.
    pub fn elems(&self) -> Option<u64> {
        self.shape.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d))
    }
}

/// A metadata value: safetensors `__metadata__` strings, or typed GGUF values.
#[derive(Clone, Debug, PartialEq)]
pub enum MetaValue {
    Text(String),
    Gguf(Value),
}

/// Everything read from the headers of one checkpoint (one file or a sharded set).
#[derive(Clone, Debug, PartialEq)]
pub struct Checkpoint {
    pub format: Format,
    pub files: Vec<FileInfo>,
    /// Keys in file order (for a set: the first file's keys, then keys only later files hold).
    pub metadata: Vec<(String, MetaValue)>,
    /// For each metadata entry, the index of the file it was read from.
    pub meta_file: Vec<usize>,
    /// For each file, whether its numbers are big-endian (only GGUF files can be).
    pub big_endian: Vec<bool>,
    /// Tensors in file order, file by file.
    pub tensors: Vec<Tensor>,
    pub findings: Vec<Finding>,
}

impl Checkpoint {
    /// The metadata value stored under `key`.
    pub fn meta(&self, key: &str) -> Option<&MetaValue> {
        self.metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The tensor called `name`.
    pub fn tensor(&self, name: &str) -> Option<&Tensor> {
        self.tensors.iter().find(|t| t.name == name)
    }
}
