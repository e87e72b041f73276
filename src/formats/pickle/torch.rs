//! Tensors in a pickle tree, as torch's rebuild functions describe them: the storage (a
//! persistent id naming its key, element type and size), the storage offset, the shape and the
//! strides. Nested dicts (`state_dict`, `model`, modules' `_parameters`) flatten to dotted names.

use crate::hash::{HashMap, HashSet};

use super::machine::{CallKind, Id, Node, Tree};
use crate::safetensors::Dtype;

/// Deepest nesting followed when naming tensors.
const MAX_DEPTH: usize = 64;
/// Most tensors listed from one pickle.
pub const MAX_TENSORS: usize = 1 << 20;
/// Longest key kept as part of a tensor's name (longer keys are cut).
const MAX_NAME_PART: usize = 256;

/// The storage a tensor views.
#[derive(Clone, Debug, PartialEq)]
pub struct Storage {
    /// The key: `data/<key>` in a torch zip, a position in the legacy list.
    pub key: String,
    pub dtype: Option<Dtype>,
    /// The storage type as named (`FloatStorage`), for messages.
    pub type_name: String,
    /// Elements the persistent id declares.
    pub numel: Option<u64>,
    /// The device it was saved from (`cpu`, `cuda:0`).
    pub location: String,
    /// Bytes the pickle holds itself (a numpy array pickled inline), when it does; the key then
    /// names no stored storage.
    pub inline: Option<Inline>,
}

/// A numpy array's bytes inside the pickle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inline {
    /// Raw (`BINBYTES`, protocol 3 and later): read in place.
    Raw(super::Located),
    /// As latin-1 text (protocol 2's `_codecs.encode(…, 'latin1')`): not where the bytes are,
    /// so not read.
    Text,
    /// Big-endian, which is not decoded.
    BigEndian,
}

/// One tensor as the pickle describes it.
#[derive(Clone, Debug, PartialEq)]
pub struct PickledTensor {
    pub name: String,
    pub storage: Storage,
    /// Element offset into the storage.
    pub storage_offset: u64,
    pub shape: Vec<u64>,
    pub strides: Vec<u64>,
}

/// How a view's strides lay its elements out in its storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Row-major for the shape (dimensions of size 1 ignored).
    RowMajor,
    /// Every element once, in one span, in another dimension order (a transposed weight).
    Permuted,
    /// Strides that skip or repeat elements.
    Strided,
}

impl PickledTensor {
    /// How the strides lay the elements out: dense when, taken from the smallest stride up, each
    /// is the product of the sizes of the dimensions before it (dimensions of size 1 ignored).
    pub fn layout(&self) -> Layout {
        if self.shape.len() != self.strides.len() {
            return Layout::Strided;
        }
        if self.shape.contains(&0) {
            return Layout::RowMajor; // no element to read
        }
        let mut dims: Vec<(u64, u64, usize)> = (self.shape.iter().zip(&self.strides).enumerate())
            .filter(|(_, (&d, _))| d != 1)
            .map(|(i, (&d, &s))| (s, d, i))
            .collect();
        // Innermost first; of two equal strides (only possible when not dense), the later dim.
        dims.sort_by_key(|&(s, _, i)| (s, std::cmp::Reverse(i)));
        let mut expect = 1u64;
        for &(s, d, _) in &dims {
            if s != expect {
                return Layout::Strided;
            }
            expect = expect.saturating_mul(d);
        }
        if dims.windows(2).all(|w| w[0].2 > w[1].2) {
            Layout::RowMajor
        } else {
            Layout::Permuted
        }
    }
}

/// The element type of a torch storage type (`FloatStorage` → F32).
pub fn storage_dtype(name: &str) -> Option<Dtype> {
    Some(match name {
        "FloatStorage" => Dtype::F32,
        "DoubleStorage" => Dtype::F64,
        "HalfStorage" => Dtype::F16,
        "BFloat16Storage" => Dtype::BF16,
        "LongStorage" => Dtype::I64,
        "IntStorage" => Dtype::I32,
        "ShortStorage" => Dtype::I16,
        "CharStorage" => Dtype::I8,
        "ByteStorage" => Dtype::U8,
        "BoolStorage" => Dtype::BOOL,
        "ComplexFloatStorage" => Dtype::C64,
        "Float8_e4m3fnStorage" => Dtype::F8_E4M3,
        "Float8_e5m2Storage" => Dtype::F8_E5M2,
        _ => return None,
    })
}

/// Bytes per element of a torch storage type, as the legacy format counts a storage's size:
/// an `UntypedStorage` in bytes, the typed ones (quantized and complex128 included, which are
/// not decoded) in their elements.
pub fn storage_width(name: &str) -> Option<u64> {
    match name {
        "UntypedStorage" | "QInt8Storage" | "QUInt8Storage" | "QUInt4x2Storage" | "QUInt2x4Storage" => Some(1),
        "QInt32Storage" => Some(4),
        "ComplexDoubleStorage" | "torch.complex128" => Some(16),
        _ => storage_dtype(name).and_then(|d| d.nbytes(1)),
    }
}

/// The element type a `torch.<dtype>` global names (`_rebuild_tensor_v3`'s dtype argument).
fn torch_dtype(name: &str) -> Option<Dtype> {
    Some(match name {
        "float32" | "float" => Dtype::F32,
        "float64" | "double" => Dtype::F64,
        "float16" | "half" => Dtype::F16,
        "bfloat16" => Dtype::BF16,
        "int64" | "long" => Dtype::I64,
        "int32" | "int" => Dtype::I32,
        "int16" | "short" => Dtype::I16,
        "int8" => Dtype::I8,
        "uint8" => Dtype::U8,
        "bool" => Dtype::BOOL,
        "complex64" => Dtype::C64,
        "float8_e4m3fn" => Dtype::F8_E4M3,
        "float8_e5m2" => Dtype::F8_E5M2,
        "float8_e4m3fnuz" => Dtype::F8_E4M3FNUZ,
        "float8_e5m2fnuz" => Dtype::F8_E5M2FNUZ,
        "float8_e8m0fnu" => Dtype::F8_E8M0,
        "uint16" => Dtype::U16,
        "uint32" => Dtype::U32,
        "uint64" => Dtype::U64,
        _ => return None,
    })
}

/// What the pickle's tree holds: the tensors read, and the tensors of kinds not read
/// (quantized, sparse, nested, meta), each as its name and the rebuild function that makes it.
#[derive(Default)]
pub struct Found {
    pub tensors: Vec<PickledTensor>,
    pub not_read: Vec<(String, String)>,
}

/// Every tensor under `tree.root`, named by its path.
pub fn tensors(tree: &Tree) -> Vec<PickledTensor> {
    found(tree).tensors
}

/// [`tensors`], and the tensors of kinds not read.
pub fn found(tree: &Tree) -> Found {
    found_in(tree, &HashMap::default())
}

/// [`found`], where a persistent id can also name a tensor by its key (a torch tar archive's
/// object pickle does: `by_key` holds its tensor records, each still unnamed).
pub fn found_in(tree: &Tree, by_key: &HashMap<String, PickledTensor>) -> Found {
    let mut w = Walk { tree, by_key, seen: HashSet::default(), out: Found::default() };
    if let Some(root) = tree.root {
        w.walk(root, String::new(), 0);
    }
    w.out
}

/// The rebuild function of a torch tensor kind that is not read, when `id` calls one (directly,
/// or inside `_rebuild_from_type_v2`, as a tensor with Python attributes is pickled).
fn other_tensor_kind(tree: &Tree, id: Id) -> Option<&str> {
    let Node::Call { func, args, .. } = tree.get(id)? else { return None };
    match tree.global(*func)? {
        ("torch._utils", f) if f.starts_with("_rebuild_") => Some(f),
        ("torch._tensor", "_rebuild_from_type_v2") => match tree.global(*tree.items(*args)?.first()?)? {
            ("torch._utils", f) if f.starts_with("_rebuild_") => Some(f),
            _ => None,
        },
        _ => None,
    }
}

fn join(prefix: &str, part: &str) -> String {
    if prefix.is_empty() {
        part.to_owned()
    } else {
        format!("{prefix}.{part}")
    }
}

/// The `(key, value)` pairs a dict or OrderedDict call is given as its argument (as Python 2
/// pickled an OrderedDict): a list of two-item lists or tuples.
fn dict_argument(tree: &Tree, func: Id, args: Id) -> Option<Vec<(Id, Id)>> {
    if !matches!(tree.global(func)?, ("collections", "OrderedDict") | ("builtins" | "__builtin__", "dict")) {
        return None;
    }
    let pairs = tree.items(*tree.items(args)?.first()?)?;
    pairs.iter().map(|&p| tree.items(p).and_then(|kv| Some((*kv.first()?, *kv.get(1)?)))).collect()
}

/// A key as a name part: a string (its first [`MAX_NAME_PART`] bytes), an integer, or `?`.
fn key_text(tree: &Tree, id: Id) -> String {
    match tree.get(id) {
        Some(Node::Str(s)) => {
            let mut end = s.len().min(MAX_NAME_PART);
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            s[..end].to_owned()
        }
        Some(Node::Int(v)) => v.to_string(),
        _ => "?".to_owned(),
    }
}

/// A walk through a tree, naming the tensors it finds.
struct Walk<'a> {
    tree: &'a Tree,
    /// Tensors a persistent id can name by key.
    by_key: &'a HashMap<String, PickledTensor>,
    seen: HashSet<Id>,
    out: Found,
}

impl Walk<'_> {
    fn walk(&mut self, id: Id, name: String, depth: usize) {
        let tree = self.tree;
        let listed = self.out.tensors.len() + self.out.not_read.len();
        if depth > MAX_DEPTH || listed >= MAX_TENSORS || !self.seen.insert(id) {
            return;
        }
        if let Some(t) = self.tensor(id, &name, 0) {
            self.out.tensors.push(t);
            return;
        }
        if let Some(f) = other_tensor_kind(tree, id) {
            self.out.not_read.push((name, f.to_owned()));
            return;
        }
        // A value already walked is skipped before its name is built (a million keys can name
        // one value).
        let named = |k: Id| join(&name, &key_text(tree, k));
        let numbered = |i: usize| join(&name, &i.to_string());
        match tree.get(id) {
            Some(Node::Dict(items)) => {
                for (k, v) in items {
                    if !self.seen.contains(v) {
                        self.walk(*v, named(*k), depth + 1);
                    }
                }
            }
            Some(Node::List(items)) | Some(Node::Tuple(items)) => {
                for (i, v) in items.iter().enumerate() {
                    if !self.seen.contains(v) {
                        self.walk(*v, numbered(i), depth + 1);
                    }
                }
            }
            Some(Node::Call { func, args, items, appended, state, .. }) => {
                // Python 2's OrderedDict pickled its items as its argument: `[[key, value], …]`.
                if let Some(pairs) = dict_argument(tree, *func, *args) {
                    for (k, v) in pairs {
                        if !self.seen.contains(&v) {
                            self.walk(v, named(k), depth + 1);
                        }
                    }
                }
                for (k, v) in items {
                    if !self.seen.contains(v) {
                        self.walk(*v, named(*k), depth + 1);
                    }
                }
                for (i, v) in appended.iter().enumerate() {
                    if !self.seen.contains(v) {
                        self.walk(*v, numbered(i), depth + 1);
                    }
                }
                if let Some(s) = state {
                    // A module's __dict__: its parameters, buffers and submodules are its own names.
                    self.walk_state(*s, &name, depth + 1);
                }
            }
            _ => {}
        }
    }

    /// A BUILD state: `_parameters`, `_buffers` and `_modules` add no name part.
    fn walk_state(&mut self, id: Id, name: &str, depth: usize) {
        let tree = self.tree;
        match tree.get(id) {
            Some(Node::Dict(items)) => {
                for (k, v) in items {
                    let key = key_text(tree, *k);
                    let next = if matches!(key.as_str(), "_parameters" | "_buffers" | "_modules") {
                        name.to_owned()
                    } else {
                        join(name, &key)
                    };
                    self.walk(*v, next, depth + 1);
                }
            }
            _ => self.walk(id, name.to_owned(), depth),
        }
    }

    /// The tensor node `id` rebuilds, when it is one of torch's rebuild calls or a persistent
    /// id naming a tensor by key.
    fn tensor(&self, id: Id, name: &str, depth: usize) -> Option<PickledTensor> {
        let tree = self.tree;
        if depth > 4 {
            return None;
        }
        if let Node::Persistent(pid) = tree.get(id)? {
            let t = self.by_key.get(&super::tar_records::key(tree, *pid)?)?;
            return Some(PickledTensor { name: name.to_owned(), ..t.clone() });
        }
        let Node::Call { kind, func, args, state, .. } = tree.get(id)? else { return None };
        let (module, fname) = tree.global(*func)?;
        if matches!((module, fname), ("numpy.core.multiarray" | "numpy._core.multiarray", "_reconstruct")) {
            return numpy_array(tree, (*state)?, name);
        }
        let args = tree.items(*args)?;
        match (module, fname, kind) {
            ("torch._utils", "_rebuild_tensor" | "_rebuild_tensor_v2" | "_rebuild_tensor_v3", _) => {
                rebuilt(tree, fname, args, name)
            }
            ("torch._utils", "_rebuild_parameter" | "_rebuild_parameter_with_state", _)
            | ("torch.nn.parameter", "Parameter", CallKind::Reduce | CallKind::NewObj) => {
                self.tensor(*args.first()?, name, depth + 1)
            }
            ("torch._tensor", "_rebuild_from_type_v2", _) => {
                // (func, type, args, state): the tensor is func(*args).
                let inner_func = *args.first()?;
                let inner_args = *args.get(2)?;
                let (m, f) = tree.global(inner_func)?;
                if m != "torch._utils" || !f.starts_with("_rebuild_tensor") {
                    return None;
                }
                rebuilt(tree, f, tree.items(inner_args)?, name)
            }
            _ => None,
        }
    }
}

/// The tensor `_rebuild_tensor{,_v2,_v3}(storage, offset, shape, strides, …)` builds; v3's
/// seventh argument is the dtype the storage's bytes are viewed as.
fn rebuilt(tree: &Tree, fname: &str, args: &[Id], name: &str) -> Option<PickledTensor> {
    let mut storage = storage(tree, *args.first()?)?;
    let offset = u64::try_from(tree.int(*args.get(1)?)?).ok()?;
    let shape = ints(tree, *args.get(2)?)?;
    let strides = ints(tree, *args.get(3)?)?;
    if fname == "_rebuild_tensor_v3" {
        if let Some((_, n)) = args.get(6).and_then(|&d| tree.global(d)) {
            storage.dtype = torch_dtype(n);
            if storage.dtype.is_none() {
                // An element type not decoded (complex128): named as torch names it.
                storage.type_name = format!("torch.{n}");
            }
        }
    }
    Some(PickledTensor { name: name.to_owned(), storage, storage_offset: offset, shape, strides })
}

/// A shape or strides: a tuple or list of integers, or a call over one (torch.Size((…)) pickles
/// as a reduce of torch.Size over a tuple), a few calls deep at most (a list a call was appended
/// to can hold that call: no cycle is followed).
fn ints(tree: &Tree, mut id: Id) -> Option<Vec<u64>> {
    for _ in 0..4 {
        match tree.get(id)? {
            Node::Tuple(v) | Node::List(v) => {
                return v.iter().map(|&i| tree.int(i).and_then(|v| u64::try_from(v).ok())).collect()
            }
            Node::Call { args, .. } => id = *tree.items(*args)?.first()?,
            _ => return None,
        }
    }
    None
}

/// The storage a persistent id names: `('storage', type, key, location, numel[, view])`.
fn storage(tree: &Tree, id: Id) -> Option<Storage> {
    let Node::Persistent(pid) = tree.get(id)? else { return None };
    let items = tree.items(*pid)?;
    if tree.str(*items.first()?)? != "storage" {
        return None;
    }
    let type_name = match tree.get(*items.get(1)?)? {
        Node::Global { name, .. } => name.clone(),
        Node::Str(s) => s.clone(),
        _ => return None,
    };
    let key = key_text(tree, *items.get(2)?);
    let location = items.get(3).and_then(|&l| tree.str(l)).unwrap_or("?").to_owned();
    let numel = items.get(4).and_then(|&n| tree.int(n)).and_then(|n| u64::try_from(n).ok());
    Some(Storage { key, dtype: storage_dtype(&type_name), type_name, numel, location, inline: None })
}

/// The element type of a numpy `descr` (`f4`, `<i8`, `|b1`) in byte order `order`, and whether
/// it is stored big-endian.
fn numpy_dtype(descr: &str, order: &str) -> Option<(Dtype, bool)> {
    let (prefix, code) = match descr.as_bytes().first()? {
        b'<' | b'>' | b'|' | b'=' => descr.split_at(1),
        _ => (order, descr),
    };
    let d = match code {
        "f2" => Dtype::F16,
        "f4" => Dtype::F32,
        "f8" => Dtype::F64,
        "i1" => Dtype::I8,
        "i2" => Dtype::I16,
        "i4" => Dtype::I32,
        "i8" => Dtype::I64,
        "u1" => Dtype::U8,
        "u2" => Dtype::U16,
        "u4" => Dtype::U32,
        "u8" => Dtype::U64,
        "b1" => Dtype::BOOL,
        "c8" => Dtype::C64,
        _ => return None,
    };
    Some((d, prefix == ">" && d.nbytes(1) != Some(1)))
}

/// The array `numpy.core.multiarray._reconstruct(ndarray, (0,), b'b')` builds once its BUILD
/// state `([version,] shape, dtype, is_fortran, data)` is set: its dtype (a `numpy.dtype` call
/// over its `descr`, its state giving the byte order), its shape and its bytes, which lie in the
/// pickle when they are raw (`BINBYTES`).
fn numpy_array(tree: &Tree, state: Id, name: &str) -> Option<PickledTensor> {
    let items = tree.items(state)?;
    let items = if items.len() == 5 { &items[1..] } else { items };
    let [shape, dtype, fortran, data] = items else { return None };
    let shape = ints(tree, *shape)?;
    let Node::Call { args, state: dtype_state, .. } = tree.get(*dtype)? else { return None };
    let descr = tree.str(*tree.items(*args)?.first()?)?;
    let order = dtype_state.and_then(|s| tree.items(s)?.get(1).and_then(|&o| tree.str(o))).unwrap_or("|");
    let (dtype, big_endian) = numpy_dtype(descr, order)?;
    let numel = shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d))?;
    let (key, inline) = match tree.get(*data)? {
        _ if big_endian => ("numpy".to_owned(), Inline::BigEndian),
        Node::Bytes { at, len, .. } => (format!("numpy@{at}"), Inline::Raw(super::Located { start: *at, len: *len })),
        _ => ("numpy".to_owned(), Inline::Text),
    };
    // Dense strides, the first dimension varying fastest when the array is in Fortran order.
    let fortran = matches!(tree.get(*fortran)?, Node::Bool(true)) && shape.len() > 1;
    let mut strides = vec![0u64; shape.len()];
    let mut acc = 1u64;
    for d in 0..shape.len() {
        let d = if fortran { d } else { shape.len() - 1 - d };
        strides[d] = acc;
        acc = acc.saturating_mul(shape[d]);
    }
    let storage = Storage {
        key,
        dtype: Some(dtype),
        type_name: format!("numpy {descr}"),
        numel: Some(numel),
        location: "numpy".into(),
        inline: Some(inline),
    };
    Some(PickledTensor { name: name.to_owned(), storage, storage_offset: 0, shape, strides })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(shape: &[u64], strides: &[u64]) -> PickledTensor {
        let storage = Storage {
            key: "0".into(),
            dtype: Some(Dtype::F32),
            type_name: "FloatStorage".into(),
            numel: None,
            location: "cpu".into(),
            inline: None,
        };
        PickledTensor { name: "t".into(), storage, storage_offset: 0, shape: shape.into(), strides: strides.into() }
    }

    #[test]
    fn views_are_row_major_permuted_or_strided() {
        assert_eq!(view(&[2, 3], &[3, 1]).layout(), Layout::RowMajor);
        assert_eq!(view(&[2, 1, 3], &[3, 7, 1]).layout(), Layout::RowMajor, "a dimension of 1 has any stride");
        assert_eq!(view(&[], &[]).layout(), Layout::RowMajor);
        assert_eq!(view(&[32, 3, 3, 3], &[1, 32, 96, 288]).layout(), Layout::Permuted, "column-major");
        assert_eq!(view(&[2, 3, 4], &[4, 8, 1]).layout(), Layout::Permuted, "the first two dims swapped");
        assert_eq!(view(&[2, 3], &[6, 2]).layout(), Layout::Strided, "every other element");
        assert_eq!(view(&[2, 3], &[0, 1]).layout(), Layout::Strided, "a broadcast repeats elements");
        assert_eq!(view(&[2, 2], &[1, 1]).layout(), Layout::Strided, "overlapping");
        assert_eq!(view(&[2, 3], &[3]).layout(), Layout::Strided, "strides that do not match the shape");
    }
}
