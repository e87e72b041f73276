//! Whether `torch.load(weights_only=True)`, the default since torch 2.6, would load a pickle:
//! the globals its unpickler allows (`_get_allowed_globals` in torch/_weights_only_unpickler.py),
//! so the file's other imports can be named with the `add_safe_globals` line that lets them in.

use serde::Serialize;

/// Modules torch never allows, whatever a user allowlists.
const BLOCKED_MODULES: &[&str] = &["sys", "os", "posix", "nt"];

/// Globals torch allows by their full path.
const ALLOWED: &[&str] = &[
    "collections.OrderedDict",
    "collections.Counter",
    "torch.nn.parameter.Parameter",
    "torch.serialization._get_layout",
    "torch.Size",
    "torch.Tensor",
    "torch.device",
    "_codecs.encode",
    "builtins.bytearray",
    "builtins.set",
    "builtins.complex",
    "torch._tensor._rebuild_from_type_v2",
    "torch.storage.UntypedStorage",
    "torch.storage.TypedStorage",
    "torch.per_tensor_affine",
    "torch.per_tensor_symmetric",
    "torch.per_channel_affine",
    "torch.per_channel_symmetric",
    "torch.per_channel_affine_float_qparams",
];

/// `torch._utils`' rebuild functions torch allows.
const REBUILDS: &[&str] = &[
    "_rebuild_parameter",
    "_rebuild_parameter_with_state",
    "_rebuild_qtensor",
    "_rebuild_tensor",
    "_rebuild_tensor_v2",
    "_rebuild_tensor_v3",
    "_rebuild_sparse_tensor",
    "_rebuild_meta_tensor_no_storage",
    "_rebuild_wrapper_subclass",
    "_rebuild_device_tensor_from_numpy",
    "_rebuild_device_tensor_from_cpu_tensor",
];

/// torch's dtypes by the name `str(dtype)` gives (`torch.float32`, never an alias).
const DTYPES: &[&str] = &[
    "float32",
    "float64",
    "float16",
    "bfloat16",
    "complex32",
    "complex64",
    "complex128",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "bool",
    "qint8",
    "quint8",
    "qint32",
    "quint4x2",
    "quint2x4",
    "float8_e4m3fn",
    "float8_e5m2",
    "float8_e4m3fnuz",
    "float8_e5m2fnuz",
    "float8_e8m0fnu",
    "float4_e2m1fn_x2",
    "bits1x8",
    "bits2x4",
    "bits4x2",
    "bits8",
    "bits16",
    "uint1",
    "uint2",
    "uint3",
    "uint4",
    "uint5",
    "uint6",
    "uint7",
    "int1",
    "int2",
    "int3",
    "int4",
    "int5",
    "int6",
    "int7",
];

/// The element types of torch's legacy tensor classes (`torch.FloatTensor`,
/// `torch.cuda.sparse.LongTensor`; no sparse `Bool`).
const TENSOR_ELEMENTS: &[&str] =
    &["Float", "Double", "Half", "BFloat16", "Long", "Int", "Short", "Char", "Byte", "Bool"];
/// The element types of its storage classes (`torch.HalfStorage`, `torch.cuda.HalfStorage`);
/// the quantized ones only under `torch`.
const STORAGE_ELEMENTS: &[&str] = &[
    "Float",
    "Double",
    "Half",
    "BFloat16",
    "Long",
    "Int",
    "Short",
    "Char",
    "Byte",
    "Bool",
    "ComplexFloat",
    "ComplexDouble",
];
const QUANTIZED_STORAGES: &[&str] = &["QUInt8", "QInt8", "QInt32", "QUInt4x2", "QUInt2x4"];

/// The Python 3 names torch gives Python 2 globals before judging them (`IMPORT_MAPPING` and
/// `NAME_MAPPING` in torch/_utils.py, a part of pickle's own).
const PY2_MODULES: &[(&str, &str)] = &[
    ("__builtin__", "builtins"),
    ("copy_reg", "copyreg"),
    ("Queue", "queue"),
    ("repr", "reprlib"),
    ("_abcoll", "collections.abc"),
    ("UserDict", "collections"),
    ("UserList", "collections"),
    ("UserString", "collections"),
    ("whichdb", "dbm"),
    ("StringIO", "io"),
    ("cStringIO", "io"),
];
/// A global as `(module, name)`.
type Global = (&'static str, &'static str);
const PY2_NAMES: &[(Global, Global)] = &[
    (("__builtin__", "xrange"), ("builtins", "range")),
    (("__builtin__", "reduce"), ("functools", "reduce")),
    (("__builtin__", "intern"), ("sys", "intern")),
    (("__builtin__", "unichr"), ("builtins", "chr")),
    (("__builtin__", "unicode"), ("builtins", "str")),
    (("__builtin__", "long"), ("builtins", "int")),
    (("__builtin__", "basestring"), ("builtins", "str")),
    (("itertools", "izip"), ("builtins", "zip")),
    (("itertools", "imap"), ("builtins", "map")),
    (("itertools", "ifilter"), ("builtins", "filter")),
    (("itertools", "ifilterfalse"), ("itertools", "filterfalse")),
    (("itertools", "izip_longest"), ("itertools", "zip_longest")),
    (("UserDict", "IterableUserDict"), ("collections", "UserDict")),
    (("UserDict", "UserDict"), ("collections", "UserDict")),
    (("UserList", "UserList"), ("collections", "UserList")),
    (("UserString", "UserString"), ("collections", "UserString")),
    (("exceptions", "StandardError"), ("builtins", "Exception")),
];

/// `module.name` as torch names it: a Python 2 global by its Python 3 name.
pub fn py3_name<'a>(module: &'a str, name: &'a str) -> (&'a str, &'a str) {
    if let Some((_, to)) = PY2_NAMES.iter().find(|(from, _)| *from == (module, name)) {
        return *to;
    }
    match PY2_MODULES.iter().find(|(from, _)| *from == module) {
        Some((_, to)) => (to, name),
        None => (module, name),
    }
}

/// Whether the weights-only unpickler allows `module.name` (a Python 3 name: see [`py3_name`]).
pub fn allowed(module: &str, name: &str) -> bool {
    if BLOCKED_MODULES.contains(&module) {
        return false;
    }
    let full = format!("{module}.{name}");
    if ALLOWED.contains(&full.as_str()) {
        return true;
    }
    match module {
        "torch._utils" => REBUILDS.contains(&name),
        "torch" if DTYPES.contains(&name) => true,
        "torch" | "torch.cuda" | "torch.sparse" | "torch.cuda.sparse" => {
            let sparse = module.ends_with("sparse");
            let tensor =
                name.strip_suffix("Tensor").is_some_and(|e| TENSOR_ELEMENTS.contains(&e) && !(sparse && e == "Bool"));
            let storage = name
                .strip_suffix("Storage")
                .is_some_and(|e| STORAGE_ELEMENTS.contains(&e) || module == "torch" && QUANTIZED_STORAGES.contains(&e));
            tensor || storage && !sparse
        }
        _ => false,
    }
}

/// What `torch.load(weights_only=True)` makes of a pickle checkpoint.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct WeightsOnly {
    /// Whether it loads: nothing rejected and no reason it cannot.
    pub loads: bool,
    /// `module.name` of every global it imports that the allowlist does not hold, sorted.
    pub rejected: Vec<String>,
    /// Why it cannot load whatever is allowlisted (a TorchScript archive, an opcode the
    /// unpickler does not run).
    pub reason: Option<String>,
}

impl WeightsOnly {
    /// The judgement of globals `imports` (as `(module, name)`, as the pickle spells them) and a
    /// reason, if any; the rejected are named as torch names them.
    pub fn of<'a>(imports: impl Iterator<Item = (&'a str, &'a str)>, reason: Option<String>) -> WeightsOnly {
        let mut rejected: Vec<String> = imports
            .map(|(m, n)| py3_name(m, n))
            .filter(|(m, n)| !allowed(m, n))
            .map(|(m, n)| format!("{m}.{n}"))
            .collect();
        rejected.sort();
        rejected.dedup();
        WeightsOnly { loads: rejected.is_empty() && reason.is_none(), rejected, reason }
    }

    /// One sentence on what `torch.load(weights_only=True)` does with it, with the
    /// `add_safe_globals` line when globals are what it refuses.
    pub fn sentence(&self) -> String {
        const LOAD: &str = "torch.load(weights_only=True), torch's default since 2.6,";
        match (&self.reason, self.rejected.as_slice()) {
            (Some(why), _) => format!("{LOAD} cannot load it: {why}"),
            (None, []) => format!("{LOAD} loads it"),
            (None, names) => format!(
                "{LOAD} refuses it (\"Unsupported global\"): it imports {}, outside torch's weights-only \
                 allowlist; if you trust them: torch.serialization.add_safe_globals([{}])",
                names.join(", "),
                names.join(", ")
            ),
        }
    }

    /// Several files' judgements as one: it loads when every file does.
    pub fn merge(all: impl Iterator<Item = WeightsOnly>) -> WeightsOnly {
        let mut out = WeightsOnly { loads: true, ..WeightsOnly::default() };
        for w in all {
            out.loads &= w.loads;
            out.rejected.extend(w.rejected);
            out.reason = out.reason.or(w.reason);
        }
        out.rejected.sort();
        out.rejected.dedup();
        out
    }
}

/// The name of a pickle opcode the weights-only unpickler refuses, for messages.
pub fn opcode_name(op: u8) -> &'static str {
    match op {
        0x95 => "FRAME",
        0x94 => "MEMOIZE",
        0x93 => "STACK_GLOBAL",
        0x8c => "SHORT_BINUNICODE",
        0x8d => "BINUNICODE8",
        0x8e => "BINBYTES8",
        0x8b => "LONG4",
        0x90 => "ADDITEMS",
        0x91 => "FROZENSET",
        0x92 => "NEWOBJ_EX",
        b'B' => "BINBYTES",
        b'C' => "SHORT_BINBYTES",
        b'T' => "BINSTRING",
        b'S' => "STRING",
        b'V' => "UNICODE",
        b'I' => "INT",
        b'L' => "LONG",
        b'F' => "FLOAT",
        b'd' => "DICT",
        b'l' => "LIST",
        b'i' => "INST",
        b'o' => "OBJ",
        b'p' => "PUT",
        b'g' => "GET",
        b'P' => "PERSID",
        b'0' => "POP",
        b'1' => "POP_MARK",
        b'2' => "DUP",
        0x82..=0x84 => "EXT",
        _ => "an opcode",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_allowlist_is_torchs() {
        for (m, n) in [
            ("torch._utils", "_rebuild_tensor_v2"),
            ("torch._utils", "_rebuild_tensor"),
            ("collections", "OrderedDict"),
            ("torch", "FloatStorage"),
            ("torch.cuda", "HalfStorage"),
            ("torch", "QInt8Storage"),
            ("torch", "bfloat16"),
            ("torch", "Size"),
            ("torch.storage", "UntypedStorage"),
            ("torch.nn.parameter", "Parameter"),
        ] {
            assert!(allowed(m, n), "{m}.{n}");
        }
        for (m, n) in [
            ("torch._utils", "_import_dotted_name"),
            ("torch", "float"),
            ("torch.hub", "load"),
            ("numpy.core.multiarray", "_reconstruct"),
            ("collections", "defaultdict"),
            ("builtins", "getattr"),
            ("argparse", "Namespace"),
            ("torch.sparse", "FloatStorage"),
            ("torch.cuda", "QInt8Storage"),
            ("torch", "ComplexFloatTensor"),
            ("os", "system"),
        ] {
            assert!(!allowed(m, n), "{m}.{n}");
        }
    }

    #[test]
    fn a_file_loads_when_nothing_is_rejected_and_nothing_stops_it() {
        let w =
            WeightsOnly::of([("torch._utils", "_rebuild_tensor_v2"), ("collections", "OrderedDict")].into_iter(), None);
        assert!(w.loads && w.rejected.is_empty());
        let w = WeightsOnly::of([("numpy", "dtype"), ("numpy", "dtype"), ("argparse", "Namespace")].into_iter(), None);
        assert_eq!((w.loads, w.rejected), (false, vec!["argparse.Namespace".to_owned(), "numpy.dtype".to_owned()]));
        let w = WeightsOnly::of([("__builtin__", "set"), ("__builtin__", "long")].into_iter(), None);
        assert_eq!(w.rejected, ["builtins.int"], "Python 2 names are judged and named by their Python 3 names");
        let w = WeightsOnly::of(std::iter::empty(), Some("a TorchScript archive".into()));
        assert!(!w.loads);
        let all = WeightsOnly::merge([WeightsOnly::of(std::iter::empty(), None), w].into_iter());
        assert!(!all.loads && all.reason.is_some());
    }
}
