//! The safety report: every import a pickle would make, judged. What torch checkpoints
//! legitimately use is fine; anything else is a warning (loading it runs code we cannot vouch
//! for); modules and builtins known to run programs, open files or reach the network are errors.
//! The dangerous list follows the published blocklists of pickle scanners (picklescan's among
//! them), so a file those call dangerous is an error here too.

/// How an import is judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    /// Used by torch checkpoints: rebuilding tensors, storages, ordered dicts, numpy arrays.
    Expected,
    /// Not something a checkpoint needs: loading it runs code of unknown effect.
    Unknown,
    /// Known to run programs, evaluate code, open files or reach the network.
    Dangerous,
}

/// `(module, names)`: every name of the module when `names` is empty.
type Rule = (&'static str, &'static [&'static str]);

/// What torch, numpy and Lightning checkpoints import to rebuild their contents.
const EXPECTED: &[Rule] = &[
    ("collections", &["OrderedDict", "defaultdict"]),
    // The rebuild functions only: `_import_dotted_name` and the rest would hand out any object.
    ("torch._utils", REBUILDS),
    // TorchScript's typed lists and dicts (`build_intlist`, `restore_type_tag`).
    ("torch.jit._pickle", &[]),
    ("torch._tensor", &["_rebuild_from_type_v2"]),
    ("torch.serialization", &["_get_layout"]),
    ("torch.nn.parameter", &["Parameter"]),
    ("torch.storage", &["UntypedStorage", "TypedStorage"]),
    (
        "torch",
        &[
            "Size",
            "Tensor",
            "device",
            "dtype",
            "uint16",
            "uint32",
            "uint64",
            "float8_e4m3fnuz",
            "float8_e5m2fnuz",
            "float8_e8m0fnu",
            "strided",
            "sparse_coo",
            "sparse_csr",
            "sparse_csc",
            "sparse_bsr",
            "sparse_bsc",
            "per_tensor_affine",
            "per_channel_affine",
            "per_tensor_symmetric",
            "per_channel_symmetric",
            "per_channel_affine_float_qparams",
            "float16",
            "float32",
            "float64",
            "bfloat16",
            "half",
            "float",
            "double",
            "int8",
            "int16",
            "int32",
            "int64",
            "uint8",
            "bool",
            "complex64",
            "complex128",
            "float8_e4m3fn",
            "float8_e5m2",
            "LongStorage",
            "FloatStorage",
            "HalfStorage",
            "DoubleStorage",
            "BFloat16Storage",
            "BoolStorage",
            "CharStorage",
            "ShortStorage",
            "IntStorage",
            "ByteStorage",
            "ComplexFloatStorage",
            "ComplexDoubleStorage",
            "QUInt2x4Storage",
            "QUInt4x2Storage",
            "QInt32Storage",
            "QInt8Storage",
            "QUInt8Storage",
            "Float8_e4m3fnStorage",
            "Float8_e5m2Storage",
        ],
    ),
    // torch < 0.4's tensor and storage types, as its tar archives name them.
    ("torch", LEGACY_TYPES),
    ("torch.cuda", LEGACY_TYPES),
    ("numpy", &["dtype", "ndarray"]),
    ("numpy.core.multiarray", &["_reconstruct", "scalar"]),
    ("numpy._core.multiarray", &["_reconstruct", "scalar"]),
    ("_codecs", &["encode"]),
    ("builtins", &["set", "frozenset", "slice", "complex", "bytearray", "float", "int", "list", "dict", "tuple"]),
    ("argparse", &["Namespace"]),
];

/// `torch._utils`' rebuild functions, as torch's own saving writes them.
const REBUILDS: &[&str] = &[
    "_rebuild_tensor",
    "_rebuild_tensor_v2",
    "_rebuild_tensor_v3",
    "_rebuild_parameter",
    "_rebuild_parameter_with_state",
    "_rebuild_qtensor",
    "_rebuild_sparse_tensor",
    "_rebuild_sparse_csr_tensor",
    "_rebuild_nested_tensor",
    "_rebuild_meta_tensor_no_storage",
    "_rebuild_wrapper_subclass",
    "_rebuild_device_tensor_from_numpy",
    "_rebuild_device_tensor_from_cpu_tensor",
    "_rebuild_xla_tensor",
    "_rebuild_mtia_tensor",
];

/// The typed tensor and storage classes of torch < 0.4 (`torch.FloatTensor`,
/// `torch.cuda.FloatStorage`).
const LEGACY_TYPES: &[&str] = &[
    "FloatTensor",
    "DoubleTensor",
    "HalfTensor",
    "LongTensor",
    "IntTensor",
    "ShortTensor",
    "CharTensor",
    "ByteTensor",
    "FloatStorage",
    "DoubleStorage",
    "HalfStorage",
    "LongStorage",
    "IntStorage",
    "ShortStorage",
    "CharStorage",
    "ByteStorage",
];

/// Modules (every name, and their submodules) that run programs or reach outside.
const DANGEROUS_MODULES: &[&str] = &[
    "os",
    "nt",
    "posix",
    "subprocess",
    "sys",
    "socket",
    "shutil",
    "runpy",
    "webbrowser",
    "httplib",
    "requests.api",
    "aiohttp",
    "asyncio",
    "bdb",
    "pdb",
    "pickle",
    "_pickle",
    "pip",
    "pty",
    "pydoc",
    "venv",
    "ctypes",
    "commands",
    "cProfile",
    "profile",
    "timeit",
    "ssl",
    "urllib.request",
    "uuid",
    "test",
    "numpy.f2py",
    "numpy.testing._private.utils",
    "distutils.file_util",
    "_osx_support",
    "_aix_support",
    "_pyrepl",
    "multiprocessing",
    "importlib",
    "marshal",
    "code",
    "telnetlib",
    "ftplib",
    "smtplib",
    "http.client",
    // Fetches a repository and runs its hubconf.py.
    "torch.hub",
];

/// Single names that run code, whatever else their module holds.
const DANGEROUS_NAMES: &[Rule] = &[
    (
        "builtins",
        &[
            "eval",
            "exec",
            "compile",
            "getattr",
            "setattr",
            "delattr",
            "apply",
            "open",
            "breakpoint",
            "__import__",
            "input",
            "globals",
            "locals",
            "vars",
        ],
    ),
    // Python 2's names are judged as Python 3 reads them (`__builtin__.eval` is `builtins.eval`):
    // only what has no Python 3 name is listed under its own.
    ("__builtin__", &["execfile"]),
    ("types", &["CodeType", "FunctionType"]),
    ("functools", &["partial", "reduce"]),
    ("operator", &["attrgetter", "itemgetter", "methodcaller"]),
    ("_operator", &["attrgetter", "itemgetter", "methodcaller"]),
    ("logging", &["FileHandler"]),
    ("_io", &["FileIO", "open"]),
    ("io", &["FileIO", "open"]),
    ("pkgutil", &["resolve_name"]),
    (
        "cloudpickle.cloudpickle",
        &["_builtin_type", "_make_function", "_function_setstate", "_make_cell", "_make_empty_cell", "subimport"],
    ),
    ("torch.serialization", &["load"]),
    ("torch._inductor.codecache", &["compile_file"]),
    ("torch.storage", &["_load_from_bytes"]),
    ("torch.jit.unsupported_tensor_ops", &["execWrapper"]),
    ("torch.utils.collect_env", &["run"]),
    ("torch._dynamo.guards", &["GuardBuilder.get"]),
    ("torch.fx.experimental.symbolic_shapes", &["ShapeEnv.evaluate_guards_expression"]),
    ("torch.utils._config_module", &["ConfigModule.load_config"]),
    ("torch.utils.data.datapipes.utils.decoder", &["basichandlers"]),
    ("torch.utils.bottleneck.__main__", &["run_cprofile", "run_autograd_prof"]),
    ("doctest", &["debug_script"]),
    ("ensurepip", &["_run_pip"]),
    ("imaplib", &["IMAP4_stream"]),
    ("trace", &["Trace.run", "Trace.runctx"]),
    ("code", &["InteractiveInterpreter.runcode"]),
    ("idlelib.pyshell", &["ModifiedInterpreter.runcode", "ModifiedInterpreter.runcommand"]),
    ("idlelib.run", &["Executive.runcode"]),
    ("lib2to3.pgen2.grammar", &["Grammar.loads"]),
];

fn listed(rules: &[Rule], module: &str, name: &str) -> bool {
    rules.iter().any(|(m, names)| *m == module && (names.is_empty() || names.contains(&name)))
}

/// The verdict on importing `module.name`, spelled as the pickle spells it or as Python 3 reads
/// it (`__builtin__.long` is `builtins.int`): dangerous under either name.
pub fn judge(module: &str, name: &str) -> Verdict {
    let (m3, n3) = super::weights_only::py3_name(module, name);
    let dangerous = |module: &str, name: &str| {
        let in_dangerous_module = DANGEROUS_MODULES
            .iter()
            .any(|m| module == *m || module.strip_prefix(m).is_some_and(|rest| rest.starts_with('.')));
        in_dangerous_module || listed(DANGEROUS_NAMES, module, name)
    };
    if dangerous(module, name) || dangerous(m3, n3) {
        return Verdict::Dangerous;
    }
    if listed(EXPECTED, m3, n3) {
        return Verdict::Expected;
    }
    Verdict::Unknown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts() {
        assert_eq!(judge("torch._utils", "_rebuild_tensor_v2"), Verdict::Expected);
        assert_eq!(judge("torch._utils", "_import_dotted_name"), Verdict::Unknown, "hands out any object");
        assert_eq!(judge("collections", "OrderedDict"), Verdict::Expected);
        assert_eq!(judge("torch", "BFloat16Storage"), Verdict::Expected);
        assert_eq!(judge("posix", "system"), Verdict::Dangerous);
        assert_eq!(judge("os.path", "join"), Verdict::Dangerous, "submodules of a dangerous module");
        assert_eq!(judge("osx", "x"), Verdict::Unknown, "a prefix is not a parent module");
        assert_eq!(judge("builtins", "exec"), Verdict::Dangerous);
        assert_eq!(judge("builtins", "set"), Verdict::Expected);
        assert_eq!(judge("__builtin__", "long"), Verdict::Expected, "Python 3 reads it as builtins.int");
        assert_eq!(judge("torch.hub", "load"), Verdict::Dangerous, "fetches code and runs it");
        for name in ["eval", "exec", "getattr", "open", "__import__", "apply", "execfile"] {
            assert_eq!(judge("__builtin__", name), Verdict::Dangerous, "__builtin__.{name}");
        }
        assert_eq!(judge("__builtin__", "reduce"), Verdict::Dangerous, "functools.reduce");
        assert_eq!(judge("torch.nn.modules.linear", "Linear"), Verdict::Unknown);
        assert_eq!(judge("__main__", "MyModel"), Verdict::Unknown);
    }
}
