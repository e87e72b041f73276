//! One model, whatever its format and however many files it spans.

use super::config::ConfigFile;
use super::findings::Finding;
use super::gguf::{GgmlType, Value};
use super::range::ByteRange;
use super::safetensors::Dtype as StDtype;
use std::sync::OnceLock;

pub use super::step::MAX_METADATA_ENTRIES;

/// The checkpoint format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Safetensors,
    Gguf,
    /// PyTorch pickle checkpoints (`.bin`, `.pt`, `.pth`, `.ckpt`), read without running them.
    Pickle,
}

impl Format {
    /// The name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Format::Safetensors => "safetensors",
            Format::Gguf => "gguf",
            Format::Pickle => "pickle",
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

/// One file of the checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileInfo {
    pub path: String,
    pub size: u64,
    /// Position of this file in the list given to [`Assembling`](super::shards::Assembling): byte
    /// sources are aligned with [`Checkpoint::files`] through it, never by name.
    pub given: usize,
}

impl FileInfo {
    /// A file called `path` of `size` bytes (its position is set when the set is assembled).
    pub fn new(path: impl Into<String>, size: u64) -> Self {
        FileInfo { path: path.into(), size, given: 0 }
    }
}

/// Where a tensor's data lies: a range inside its file whose length is exactly what the dtype
/// and shape take. Only [`Extent::check`] makes one, so every extent is valid by construction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    range: ByteRange,
    elems: u64,
}

impl Extent {
    /// The extent of `len` bytes at absolute `offset` holding `shape` of `dtype`, in a file of
    /// `file_len` bytes; or why the data cannot be located.
    pub fn check(dtype: &Dtype, shape: &[u64], offset: u64, len: u64, file_len: u64) -> Result<Extent, Lost> {
        let elems = shape.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d)).ok_or(Lost::NoSize)?;
        let needed = dtype.nbytes(elems).ok_or(Lost::NoSize)?;
        if needed != len {
            return Err(Lost::SizeMismatch { declared: len, needed });
        }
        match offset.checked_add(len) {
            Some(end) if end <= file_len => Ok(Extent { range: ByteRange::new(offset, end), elems }),
            end => Err(Lost::PastEnd { end, file_len }),
        }
    }

    /// The absolute byte range of the data in its file.
    pub fn range(&self) -> ByteRange {
        self.range
    }

    /// Elements stored in the range.
    pub fn elems(&self) -> u64 {
        self.elems
    }
}

/// Why a tensor's data cannot be located (a finding names the rule and where); such a tensor
/// is listed but offers no decoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lost {
    /// The header breaks off before its data section begins, so no offset is known.
    NoDataSection,
    /// The type defines no byte size for this shape (unknown or removed type, a row that is not
    /// a whole number of blocks, an element count that overflows).
    NoSize,
    /// The header's byte span differs from what the dtype and shape take.
    SizeMismatch { declared: u64, needed: u64 },
    /// The data would end past the end of the file (`None`: the end overflows `u64`).
    PastEnd { end: Option<u64>, file_len: u64 },
    /// The header's data offsets end before they begin.
    Inverted,
    /// A pickle's tensor views a storage the file does not hold.
    NoStorage,
    /// A numpy array whose bytes the pickle holds as latin-1 text (protocol 2), not in place.
    InlineText,
    /// A pickle's tensor's strides skip or repeat elements of its storage.
    Strided,
    /// The values are stored big-endian, which the decoders do not read.
    BigEndian,
}

impl std::fmt::Display for Lost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Lost::NoDataSection => {
                write!(f, "the header breaks off before its data section, so where the data lies is unknown")
            }
            Lost::NoSize => write!(f, "its type defines no byte size for this shape"),
            Lost::SizeMismatch { declared, needed } => {
                write!(f, "the header gives it {declared} bytes but its dtype and shape take {needed}")
            }
            Lost::PastEnd { end: Some(end), file_len } => {
                write!(f, "its data would end at byte {end}, past the end of the {file_len}-byte file")
            }
            Lost::PastEnd { end: None, .. } => write!(f, "its data would end past byte 2^64"),
            Lost::Inverted => write!(f, "its data offsets end before they begin"),
            Lost::NoStorage => write!(f, "the storage it views is not in the file"),
            Lost::InlineText => write!(
                f,
                "it is a numpy array whose bytes the pickle holds as latin-1 text (protocol 2), which is not decoded"
            ),
            Lost::Strided => write!(f, "its strides skip or repeat elements, so its values are not read"),
            Lost::BigEndian => write!(f, "it is stored big-endian, which is not decoded"),
        }
    }
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
    /// The absolute offset the header declares, when one is known (shown, never read from).
    pub offset: Option<u64>,
    /// Bytes the header declares (0 when the type defines no size).
    pub nbytes: u64,
    /// Where the data lies, validated once when the set was assembled; the only way to read it.
    pub data: Result<Extent, Lost>,
    /// Element strides, when the data holds every element of the shape densely but not in
    /// row-major order (a transposed pickle view): values are stored in the strides' order,
    /// which order-blind work (statistics, histograms, scans) reads as it is. `None`: the
    /// shape's own order.
    pub strides: Option<Vec<u64>>,
}

impl Tensor {
    /// Whether the elements are stored in the shape's own order.
    pub fn row_major(&self) -> bool {
        self.strides.is_none()
    }

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
    pub tensors: Tensors,
    /// The Hugging Face config files given with the weights, by file name.
    pub configs: Vec<ConfigFile>,
    /// Every import a pickle checkpoint's files would make, with the file it is in.
    pub imports: Vec<(usize, super::pickle::Import)>,
    /// Whether `torch.load(weights_only=True)` loads every file of a pickle checkpoint.
    pub weights_only: Option<super::pickle::weights_only::WeightsOnly>,
    pub findings: Vec<Finding>,
}

impl Checkpoint {
    /// A checkpoint of no files.
    pub fn empty(format: Format) -> Self {
        Checkpoint {
            format,
            files: vec![],
            metadata: vec![],
            meta_file: vec![],
            big_endian: vec![],
            tensors: Tensors::default(),
            configs: vec![],
            imports: vec![],
            weights_only: None,
            findings: vec![],
        }
    }

    /// The metadata value stored under `key`.
    pub fn meta(&self, key: &str) -> Option<&MetaValue> {
        self.metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The GGUF value stored under `key` (`None` for another format's text metadata).
    pub fn gguf(&self, key: &str) -> Option<&Value> {
        match self.meta(key)? {
            MetaValue::Gguf(v) => Some(v),
            MetaValue::Text(_) => None,
        }
    }

    /// The config file called `name` (`config.json`, ...), when one was given.
    pub fn config(&self, name: &str) -> Option<&serde_json::Value> {
        self.configs.iter().find(|c| c.base_name() == name).map(|c| &c.json)
    }

    /// The tensor called `name` (the first, when a broken set holds it twice).
    pub fn tensor(&self, name: &str) -> Option<&Tensor> {
        self.tensors.named(name)
    }

    /// The index of the tensor called `name` (the first, when a broken set holds it twice).
    pub fn tensor_index(&self, name: &str) -> Option<usize> {
        self.tensors.index_of(name)
    }

    /// This checkpoint and `other` (opened apart) as if opened together: `other`'s files after
    /// this one's, its metadata, tensors and configs with them. Findings are not carried: the
    /// inspections that judge a pair run over the result.
    pub fn joined(&self, other: &Checkpoint) -> Checkpoint {
        let offset = self.files.len();
        let mut both = Checkpoint { findings: Vec::new(), ..self.clone() };
        both.files.extend(other.files.iter().cloned());
        both.big_endian.extend(&other.big_endian);
        both.metadata.extend(other.metadata.iter().cloned());
        both.meta_file.extend(other.meta_file.iter().map(|f| f + offset));
        both.configs.extend(other.configs.iter().cloned());
        both.tensors.extend(other.tensors.iter().cloned().map(|mut t| {
            t.file += offset;
            t
        }));
        both
    }
}

/// A checkpoint's tensors in file order, found by name in O(log n) through an index built by
/// the first lookup: 8 bytes a tensor, nothing for a checkpoint nobody looks up in. Any change
/// to the list (everything that takes it mutably) drops the index, so it is never stale.
#[derive(Clone, Default)]
pub struct Tensors {
    list: Vec<Tensor>,
    /// Indices into `list` sorted by name, equal names in file order.
    by_name: OnceLock<Vec<usize>>,
}

impl Tensors {
    /// The index of the first tensor called `name`.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        let list = &self.list;
        let order = self.by_name.get_or_init(|| {
            let mut order: Vec<usize> = (0..list.len()).collect();
            order.sort_by(|&a, &b| list[a].name.cmp(&list[b].name)); // stable: ties stay in file order
            order
        });
        let at = order.partition_point(|&i| list[i].name.as_str() < name);
        order.get(at).copied().filter(|&i| list[i].name == name)
    }

    /// The first tensor called `name`.
    pub fn named(&self, name: &str) -> Option<&Tensor> {
        self.index_of(name).map(|i| &self.list[i])
    }

    /// The tensors, in file order.
    pub fn into_vec(self) -> Vec<Tensor> {
        self.list
    }
}

impl std::ops::Deref for Tensors {
    type Target = Vec<Tensor>;
    fn deref(&self) -> &Vec<Tensor> {
        &self.list
    }
}

impl std::ops::DerefMut for Tensors {
    fn deref_mut(&mut self) -> &mut Vec<Tensor> {
        self.by_name.take();
        &mut self.list
    }
}

impl From<Vec<Tensor>> for Tensors {
    fn from(list: Vec<Tensor>) -> Self {
        Tensors { list, by_name: OnceLock::new() }
    }
}

impl FromIterator<Tensor> for Tensors {
    fn from_iter<I: IntoIterator<Item = Tensor>>(iter: I) -> Self {
        Vec::from_iter(iter).into()
    }
}

impl<'a> IntoIterator for &'a Tensors {
    type Item = &'a Tensor;
    type IntoIter = std::slice::Iter<'a, Tensor>;
    fn into_iter(self) -> Self::IntoIter {
        self.list.iter()
    }
}

impl PartialEq for Tensors {
    fn eq(&self, other: &Self) -> bool {
        self.list == other.list
    }
}

impl std::fmt::Debug for Tensors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.list.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::safetensors::Dtype as St;

    fn tensor(name: &str) -> Tensor {
        let dtype = Dtype::Safetensors(St::F32);
        Tensor {
            name: name.into(),
            dtype,
            shape: vec![1],
            file: 0,
            offset: None,
            nbytes: 4,
            data: Err(Lost::NoStorage),
            strides: None,
        }
    }

    #[test]
    fn tensors_are_found_by_name_the_first_of_equal_names() {
        let names = ["b", "a", "c", "a", "aa", ""];
        let list: Tensors = names.iter().map(|n| tensor(n)).collect();
        for (i, n) in names.iter().enumerate() {
            let first = names.iter().position(|m| m == n).unwrap();
            assert_eq!(list.index_of(n), Some(first), "{n:?} at {i}");
        }
        assert_eq!(list.index_of("ab"), None);
        assert_eq!(list.index_of("d"), None);
        assert_eq!(Tensors::default().index_of("a"), None);
    }

    #[test]
    fn a_change_to_the_list_drops_the_index() {
        let mut list: Tensors = ["x", "y"].iter().map(|n| tensor(n)).collect();
        assert_eq!(list.index_of("z"), None);
        list.push(tensor("z"));
        assert_eq!(list.index_of("z"), Some(2));
        list[0].name = "w".into();
        assert_eq!(list.index_of("x"), None);
        assert_eq!(list.named("w").map(|t| t.nbytes), Some(4));
        let mut cp = Checkpoint::empty(Format::Safetensors);
        cp.tensors = list.clone();
        assert_eq!(cp.tensor_index("y"), Some(1));
        assert_eq!(cp.tensors, list, "equal lists compare equal whether or not either is indexed");
    }
}
