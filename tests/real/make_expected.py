#!/usr/bin/env python3
"""Reference readings of the real-file corpus, made with other people's readers.

    python3 tests/real/make_expected.py CACHE_DIR [--manifest PATH] > tests/real/expected.json

CACHE_DIR holds files/<id>/<file> for every entry of tests/real/manifest.json (its "files"
list: {"id", "file", "format": "gguf"|"safetensors"|"pickle"|"chat_template"}). Needs the pinned packages of
requirements.txt beside this script; never imports torch and never runs code from a file.

Output: one JSON object keyed by file id (keys sorted; lists keep file order):
  format, tensors [{name, dtype, shape, offset, nbytes, strides}], params, values
  {name: {count, nan, inf, min, max, mean, first}}; pickles also: container, globals,
  picklescan {infected, dangerous}, weights_only {loads, rejected, reason}; GGUF also: metadata
  [[key, type, value]], and with a vocabulary tokenizer {tokens, types, scores, sha256} and
  templates {name: {rendered} or {error}}; a chat template (a .jinja file): template {rendered}
  or {error}, and conversation, the same for tests/real/conversation.json (tools, a tool call,
  a tool reply), each rendered with bos_token "<bos>" and eos_token "<eos>".
A file that cannot be read gives {"format", "error"} and a line on stderr.

Conventions:
- GGUF (gguf.GGUFReader): dtype = GGML type name, shape = ggml ne order (innermost first),
  offset = absolute, nbytes = tensor.n_bytes; values = gguf.quants.dequantize, in storage order.
- safetensors: header order; dtype and shape as in the header; offset = 8 + header length +
  data_offsets[0]. Values via safe_open(framework="numpy"); BF16/F8 decoded here from the bytes.
- GGUF metadata: gguf-py's fields in file order, its own GGUF.* entries left out; types as the
  viewer's JSON names them; a string over 256 characters as {sha256, chars}; an array as
  {item_type, len, head: its first 16 items}. tokenizer.sha256: over one line per token (its
  text, then its type's name and its score's float32 bytes in hex where the file lists them,
  tab-separated). templates: each chat template rendered by jinja2 with transformers' settings
  (tests/fixtures/make_kind_fixtures.py's render) for the sample conversation, bos_token and
  eos_token the file's own.
- Pickles: a stub unpickler (find_class imports nothing). Torch zip (data.pkl, storages under
  <prefix>/data/<key>), TorchScript zip (also constants.pkl, storages under constants/<key>,
  tensors named CONSTANTS.c<i>), legacy (5 pickles, then each storage of the key list as an
  int64 LE element count + bytes), else a plain pickle (no tensors). Names: dict keys, list
  and tuple indexes and object attributes joined by "."; a BUILD state's _parameters, _buffers
  and _modules add no part (state_dict names); an object already walked is not listed again.
  strides: null when row-major (dims of size 1 ignored, or no element), else the strides.
  offset: absolute byte offset of the first element (storage start + storage_offset*itemsize).
  globals: "module.name" exactly as the pickles spell them (no Python 2 renaming).
- weights_only emulates torch.load(weights_only=True) (torch/_weights_only_unpickler.py):
  rejected = globals (renamed by torch's IMPORT_MAPPING/NAME_MAPPING) of the pickles torch.load
  unpickles (legacy: all 5; zip: data.pkl) not in its allowlist; reason = "TorchScript archive",
  else the first opcode it does not implement, else "invalid magic number" for a plain pickle.
- values: all tensors if the file has <= 50, else the first tensor of each dtype. Elements are
  decoded to float32; count/nan/inf over all of them; min/max/mean in float64 over the finite
  ones (null when none); first = up to 8 values in row-major order (ggml order for GGUF), a
  non-finite one written as the string "NaN", "inf" or "-inf".
"""
import collections
import functools
import hashlib
import io
import json
import math
import os
import pickle
import pickletools
import struct
import sys
import tarfile
import zipfile

import numpy as np

# ---------------------------------------------------------------- element decoding

NP = {"F64": "f8", "F32": "f4", "F16": "f2", "I64": "i8", "I32": "i4", "I16": "i2", "I8": "i1",
      "U64": "u8", "U32": "u4", "U16": "u2", "U8": "u1", "BOOL": "?", "BF16": "u2",
      "F8_E4M3": "u1", "F8_E5M2": "u1", "F8_E4M3FNUZ": "u1", "F8_E5M2FNUZ": "u1", "F8_E8M0": "u1"}
ITEMSIZE = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1,
            "U64": 8, "U32": 4, "U16": 2, "U8": 1, "BOOL": 1, "C64": 8, "C128": 16,
            "F8_E4M3": 1, "F8_E5M2": 1, "F8_E4M3FNUZ": 1, "F8_E5M2FNUZ": 1, "F8_E8M0": 1}


def _f8_table(ebits, mbits, bias, is_nan):
    """float32 value of each byte of an 8-bit minifloat without infinities."""
    t = np.zeros(256, np.float32)
    for b in range(256):
        e, m = (b >> mbits) & ((1 << ebits) - 1), b & ((1 << mbits) - 1)
        v = m / 2 ** mbits * 2.0 ** (1 - bias) if e == 0 else (1 + m / 2 ** mbits) * 2.0 ** (e - bias)
        t[b] = math.nan if is_nan(b) else (-v if b >> 7 else v)
    return t


F8 = {"F8_E4M3": _f8_table(4, 3, 7, lambda b: b & 0x7F == 0x7F),
      "F8_E4M3FNUZ": _f8_table(4, 3, 8, lambda b: b == 0x80),
      "F8_E5M2FNUZ": _f8_table(5, 2, 16, lambda b: b == 0x80),
      "F8_E8M0": np.array([2.0 ** (b - 127) for b in range(255)] + [math.nan], np.float32)}


def to_f32(a, dtype):
    """float32 values of an array of raw elements (`NP[dtype]`), or None when not decodable."""
    if dtype == "BF16":
        return (a.astype(np.uint32) << 16).view(np.float32)
    if dtype == "F8_E5M2":
        return (a.astype(np.uint16) << 8).view(np.float16).astype(np.float32)
    if dtype in F8:
        return F8[dtype][a]
    if dtype in NP:
        return a.astype(np.float32)
    return None


def num(v):
    v = float(v)
    if math.isnan(v):
        return "NaN"
    return v if math.isfinite(v) else ("inf" if v > 0 else "-inf")


def stats(f32):
    """Statistics of float32 values (any shape; `first` in their C order)."""
    x = np.ascontiguousarray(f32, dtype=np.float32).reshape(-1)
    d = x.astype(np.float64)
    finite = d[np.isfinite(d)]
    n = int(finite.size)
    return {"count": int(d.size), "nan": int(np.isnan(d).sum()), "inf": int(np.isinf(d).sum()),
            "min": float(finite.min()) if n else None, "max": float(finite.max()) if n else None,
            "mean": float(finite.sum() / n) if n else None, "first": [num(v) for v in x[:8]]}


def pick(tensors):
    """Names whose values are given: all of <= 50 tensors, else the first of each dtype."""
    if len(tensors) <= 50:
        return list(dict.fromkeys(t["name"] for t in tensors))  # a repeated name: its first tensor
    first = {}
    for t in tensors:
        first.setdefault(t["dtype"], t["name"])
    return list(first.values())


# ---------------------------------------------------------------- GGUF


def read_gguf(path):
    import gguf
    from gguf.quants import dequantize
    r = gguf.GGUFReader(path)
    tensors, data = [], {}
    for t in r.tensors:
        tensors.append({"name": t.name, "dtype": t.tensor_type.name, "shape": [int(d) for d in t.shape],
                        "offset": int(t.data_offset), "nbytes": int(t.n_bytes), "strides": None})
        data[t.name] = t
    values = {}
    for name in pick(tensors):
        t = data[name]
        try:
            plain = t.data.dtype != np.uint8  # F16, F32, F64, I8..I64 (dequantize takes no integers)
            values[name] = stats(t.data.astype(np.float32) if plain else dequantize(t.data, t.tensor_type))
        except NotImplementedError as e:
            print(f"{path}: {name}: {e}", file=sys.stderr)
    out = {"tensors": tensors, "values": values, "metadata": gguf_metadata(r)}
    if "tokenizer.ggml.tokens" in r.fields:
        out["tokenizer"] = gguf_tokenizer(r)
        out["templates"] = gguf_templates(r)
    return out


# gguf-py's value types, by the names the viewer's JSON gives them.
GGUF_TYPES = {"UINT8": "u8", "INT8": "i8", "UINT16": "u16", "INT16": "i16", "UINT32": "u32", "INT32": "i32",
              "UINT64": "u64", "INT64": "i64", "FLOAT32": "f32", "FLOAT64": "f64", "BOOL": "bool",
              "STRING": "string", "ARRAY": "array"}
LONG_TEXT = 256  # longer strings are given as their sha256 and length


def gguf_item(field, part, kind):
    """One metadata value (a scalar, or an array's item) as JSON."""
    if kind == "STRING":
        text = bytes(field.parts[part]).decode("utf-8", errors="replace")
        if len(text) > LONG_TEXT:
            return {"sha256": hashlib.sha256(text.encode()).hexdigest(), "chars": len(text)}
        return text
    v = field.parts[part][0]
    if kind == "BOOL":
        return bool(v)
    return num(v) if kind.startswith("FLOAT") else int(v)


def gguf_metadata(r):
    """Every key-value pair in file order: [key, type, value]; an array as {item_type, len,
    head: its first 16 items} (the viewer's JSON holds the first 64)."""
    out = []
    for key, field in r.fields.items():
        if key.startswith("GGUF."):  # gguf-py's own entries: the header's version and counts
            continue
        kinds = [t.name for t in field.types]
        if kinds[0] != "ARRAY":
            out.append([key, GGUF_TYPES[kinds[0]], gguf_item(field, field.data[0], kinds[0])])
        elif len(kinds) == 2:
            head = [gguf_item(field, i, kinds[1]) for i in field.data[:16]]
            out.append([key, "array", {"item_type": GGUF_TYPES[kinds[1]], "len": len(field.data), "head": head}])
        else:  # an array of arrays: its length
            out.append([key, "array", {"item_type": "array", "len": len(field.data), "head": None}])
    return out


TOKEN_TYPES = ["undefined", "normal", "unknown", "control", "user_defined", "unused", "byte"]


def gguf_tokenizer(r):
    """The vocabulary: its size and a sha256 over every token, one line each: its text, then its
    type's name (when the file lists types) and its score's float32 bits in hex (when it lists
    scores), tab-separated."""
    f = r.fields
    texts = [bytes(f["tokenizer.ggml.tokens"].parts[i]).decode("utf-8", errors="replace")
             for i in f["tokenizer.ggml.tokens"].data]
    cols = [texts]
    if "tokenizer.ggml.token_type" in f:
        t = f["tokenizer.ggml.token_type"]
        cols.append([TOKEN_TYPES[v] if 0 <= v < len(TOKEN_TYPES) else str(v)
                     for v in (int(t.parts[i][0]) for i in t.data)])
    if "tokenizer.ggml.scores" in f:
        sc = f["tokenizer.ggml.scores"]
        cols.append([struct.pack("<f", sc.parts[i][0]).hex() for i in sc.data])
    h = hashlib.sha256()
    for row in zip(*cols):
        h.update(("\t".join(row) + "\n").encode())
    return {"tokens": len(texts), "types": "tokenizer.ggml.token_type" in f,
            "scores": "tokenizer.ggml.scores" in f, "sha256": h.hexdigest()}


def gguf_templates(r):
    """Each chat template rendered by jinja2 as transformers renders it, for the sample
    conversation, with the file's own BOS and EOS texts: {name: {"rendered": text} or
    {"error": jinja2's words}}."""
    f = r.fields
    tokens = f["tokenizer.ggml.tokens"]

    def special(role):
        key = f"tokenizer.ggml.{role}_token_id"
        if key not in f:
            return ""
        i = int(f[key].parts[f[key].data[0]][0])
        return bytes(tokens.parts[tokens.data[i]]).decode("utf-8", errors="replace") if i < len(tokens.data) else ""

    out = {}
    for key, field in f.items():
        if key == "tokenizer.chat_template" or (key.startswith("tokenizer.chat_template.")):
            name = "default" if key == "tokenizer.chat_template" else key.split(".", 2)[2]
            text = bytes(field.parts[field.data[0]]).decode("utf-8", errors="replace")
            out[name] = render_template(text, special("bos"), special("eos"))
    return out


HERE = os.path.dirname(os.path.abspath(__file__))


@functools.cache
def conversation():
    """tests/real/conversation.json, read once."""
    with open(os.path.join(HERE, "conversation.json")) as f:
        return json.load(f)


def render_template(text, bos, eos, conversation=None):
    """{rendered: jinja2's rendering with transformers' settings, for the sample conversation or
    `conversation`} or {error: jinja2's words}."""
    fixtures = os.path.join(HERE, "..", "fixtures")
    if fixtures not in sys.path:
        sys.path.insert(0, fixtures)
    from make_kind_fixtures import render

    try:
        return {"rendered": render(text, bos, eos, conversation)}
    except Exception as e:  # noqa: BLE001 - the template's own failure is the reading
        return {"error": f"{type(e).__name__}: {e}"}


# ---------------------------------------------------------------- safetensors


def read_safetensors(path):
    from safetensors import safe_open
    with open(path, "rb") as f:
        (hlen,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(hlen), object_pairs_hook=collections.OrderedDict)
    base = 8 + hlen
    tensors = []
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        tensors.append({"name": name, "dtype": e["dtype"], "shape": list(e["shape"]),
                        "offset": base + b, "nbytes": end - b, "strides": None})
    values = {}
    with safe_open(path, framework="numpy") as st, open(path, "rb") as raw:
        for name in pick(tensors):
            t = next(t for t in tensors if t["name"] == name)
            if t["dtype"] == "BF16" or t["dtype"].startswith("F8_"):
                raw.seek(t["offset"])
                a = np.frombuffer(raw.read(t["nbytes"]), "<" + NP[t["dtype"]]).reshape(t["shape"])
                values[name] = stats(to_f32(a, t["dtype"]))
            elif t["dtype"] in NP:
                values[name] = stats(to_f32(st.get_tensor(name), t["dtype"]))
    return {"tensors": tensors, "values": values}


# ---------------------------------------------------------------- pickles: stub unpickler

STORAGE_DTYPE = {"FloatStorage": "F32", "HalfStorage": "F16", "BFloat16Storage": "BF16",
                 "DoubleStorage": "F64", "LongStorage": "I64", "IntStorage": "I32",
                 "ShortStorage": "I16", "CharStorage": "I8", "ByteStorage": "U8",
                 "BoolStorage": "BOOL", "ComplexFloatStorage": "C64", "ComplexDoubleStorage": "C128",
                 "UntypedStorage": "U8"}
TORCH_DTYPE = {"float32": "F32", "float": "F32", "float64": "F64", "double": "F64", "float16": "F16",
               "half": "F16", "bfloat16": "BF16", "int64": "I64", "long": "I64", "int32": "I32",
               "int": "I32", "int16": "I16", "short": "I16", "int8": "I8", "uint8": "U8", "bool": "BOOL",
               "complex64": "C64", "complex128": "C128", "float8_e4m3fn": "F8_E4M3",
               "float8_e5m2": "F8_E5M2", "float8_e4m3fnuz": "F8_E4M3FNUZ",
               "float8_e5m2fnuz": "F8_E5M2FNUZ", "float8_e8m0fnu": "F8_E8M0",
               "uint16": "U16", "uint32": "U32", "uint64": "U64"}


class Obj:
    """An instance of a class the pickle names: its arguments, items, appends and state."""
    _path = "?"

    def __new__(cls, *args, **kw):
        o = object.__new__(cls)
        o.args, o.items, o.appended, o.state = args, [], [], None
        return o

    def __init__(self, *args, **kw): pass
    def __setstate__(self, state): self.state = state
    def __setitem__(self, k, v): self.items.append((k, v))
    def append(self, v): self.appended.append(v)
    def extend(self, vs): self.appended.extend(vs)


def width(type_name):
    """Bytes per element of a storage type, as the legacy format counts its size."""
    q = {"QInt8Storage": 1, "QUInt8Storage": 1, "QUInt4x2Storage": 1, "QUInt2x4Storage": 1, "QInt32Storage": 4}
    return q[type_name] if type_name in q else ITEMSIZE[STORAGE_DTYPE[type_name]]


class Storage:
    """A persistent id ('storage', type, key, location, numel[, legacy view (key, offset, size)])."""
    def __init__(self, pid):
        self.type_name = getattr(pid[1], "_path", str(pid[1])).rsplit(".", 1)[-1]
        self.key, self.view = str(pid[2]), pid[5] if len(pid) > 5 else None
        self.dtype = STORAGE_DTYPE.get(self.type_name)


class TensorRef:
    def __init__(self, storage, offset, size, stride, dtype=None):
        self.storage, self.offset = storage, int(offset)
        self.shape, self.stride = [int(d) for d in size], [int(s) for s in stride]
        self.dtype = dtype or storage.dtype

    def __setstate__(self, state): pass


def _rebuild(storage, offset, size, stride, *rest, dtype=None):
    if not isinstance(storage, Storage):  # not a storage: not a tensor this script reads
        return Obj(storage, offset, size, stride, *rest)
    return TensorRef(storage, offset, size, stride, dtype)


def _rebuild_v3(storage, offset, size, stride, requires_grad=None, hooks=None, dtype=None, *rest):
    name = getattr(dtype, "_path", "").rsplit(".", 1)[-1]
    return _rebuild(storage, offset, size, stride, dtype=TORCH_DTYPE.get(name, "torch." + name))


class Parameter:  # torch.nn.Parameter(data) as NEWOBJ or REDUCE: the tensor itself
    def __new__(cls, data=None, *rest):
        return data


KNOWN = {("collections", "OrderedDict"): collections.OrderedDict, ("torch", "Size"): tuple,
         ("builtins", "dict"): dict, ("__builtin__", "dict"): dict,
         ("torch._utils", "_rebuild_tensor"): _rebuild, ("torch._utils", "_rebuild_tensor_v2"): _rebuild,
         ("torch._utils", "_rebuild_tensor_v3"): _rebuild_v3,
         ("torch._utils", "_rebuild_parameter"): lambda data, *rest: data,
         ("torch._utils", "_rebuild_parameter_with_state"): lambda data, *rest: data,
         ("torch._tensor", "_rebuild_from_type_v2"): lambda func, typ, args, state=None: func(*args),
         ("torch.nn.parameter", "Parameter"): Parameter}


class StubUnpickler(pickle.Unpickler):
    def __init__(self, data):
        super().__init__(io.BytesIO(data), encoding="utf-8")
        self.globals, self.storages, self._stubs = [], [], {}

    def find_class(self, module, name):
        self.globals.append((module, name))
        if (module, name) in KNOWN:
            return KNOWN[(module, name)]
        path = f"{module}.{name}"
        if path not in self._stubs:
            self._stubs[path] = type(name, (Obj,), {"_path": path})
        return self._stubs[path]

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) >= 3 and pid[0] == "storage"):
            return Obj(pid)
        self.storages.append(Storage(pid))
        return self.storages[-1]


def walk(root, prefix=""):
    """(name, TensorRef) in walk order, named as a state_dict would name them."""
    out, seen = [], set()
    join = lambda a, b: f"{a}.{b}" if a else b

    def key(k):
        return str(k) if isinstance(k, (str, int)) and not isinstance(k, bool) else "?"

    def go(v, name, depth, state=False):
        if depth > 64 or (isinstance(v, (dict, list, tuple, Obj, TensorRef)) and id(v) in seen):
            return
        seen.add(id(v))
        if isinstance(v, TensorRef):
            out.append((name, v))
        elif isinstance(v, dict):  # a BUILD state's _parameters, _buffers, _modules add no part
            for k, x in v.items():
                skip = state and key(k) in ("_parameters", "_buffers", "_modules")
                go(x, name if skip else join(name, key(k)), depth + 1)
        elif isinstance(v, (list, tuple)):
            for i, x in enumerate(v):
                go(x, join(name, str(i)), depth + 1)
        elif isinstance(v, Obj):
            for k, x in v.items:
                go(x, join(name, key(k)), depth + 1)
            for i, x in enumerate(v.appended):
                go(x, join(name, str(i)), depth + 1)
            if v.state is not None:
                go(v.state, name, depth + 1, state=True)

    go(root, prefix, 0)
    return out


# ---------------------------------------------------------------- torch.load(weights_only=True)

IMPLEMENTED = set("GLOBAL NEWOBJ REDUCE BUILD APPEND APPENDS SETITEM SETITEMS MARK TUPLE TUPLE1 TUPLE2 "
                  "TUPLE3 NONE NEWFALSE NEWTRUE EMPTY_TUPLE EMPTY_LIST EMPTY_DICT EMPTY_SET BININT "
                  "BININT1 BININT2 BINFLOAT BINUNICODE SHORT_BINSTRING BINPERSID BINGET LONG_BINGET "
                  "BINPUT LONG_BINPUT LONG1 PROTO STOP".split())
TORCH_IMPORT_MAPPING = {"__builtin__": "builtins", "copy_reg": "copyreg", "Queue": "queue", "repr": "reprlib",
                        "_abcoll": "collections.abc", "UserDict": "collections", "UserList": "collections",
                        "UserString": "collections", "whichdb": "dbm", "StringIO": "io", "cStringIO": "io"}
TORCH_NAME_MAPPING = {tuple(a.rsplit(".", 1)): tuple(b.rsplit(".", 1)) for a, b in (m.split("=") for m in (
    "__builtin__.xrange=builtins.range __builtin__.reduce=functools.reduce __builtin__.intern=sys.intern "
    "__builtin__.unichr=builtins.chr __builtin__.unicode=builtins.str __builtin__.long=builtins.int "
    "itertools.izip=builtins.zip itertools.imap=builtins.map itertools.ifilter=builtins.filter "
    "itertools.ifilterfalse=itertools.filterfalse itertools.izip_longest=itertools.zip_longest "
    "UserDict.IterableUserDict=collections.UserDict UserList.UserList=collections.UserList "
    "UserString.UserString=collections.UserString __builtin__.basestring=builtins.str "
    "exceptions.StandardError=builtins.Exception UserDict.UserDict=collections.UserDict").split())}


def _allowed():
    a = {"collections.OrderedDict", "collections.Counter", "torch.nn.parameter.Parameter",
         "torch.serialization._get_layout", "torch.Size", "torch.Tensor", "torch.device", "_codecs.encode",
         "builtins.bytearray", "builtins.set", "builtins.complex", "torch._tensor._rebuild_from_type_v2"}
    dtypes = ("float64 float32 float16 int64 int32 int16 int8 uint8 bool bfloat16 complex128 complex64 qint8 "
              "quint8 qint32 quint4x2 quint2x4 float8_e5m2 float8_e4m3fn float8_e5m2fnuz float8_e4m3fnuz "
              "float8_e8m0fnu float4_e2m1fn_x2 bits8 bits16 bits1x8 bits2x4 bits4x2 complex32 uint16 uint32 "
              "uint64").split() + [f"uint{i}" for i in range(1, 8)] + [f"int{i}" for i in range(1, 8)]
    a |= {"torch." + d for d in dtypes}
    scalars = "Byte Char Double Float Int Long Short Half Bool BFloat16".split()
    for mod in ("torch", "torch.cuda", "torch.sparse", "torch.cuda.sparse"):
        a |= {f"{mod}.{s}Tensor" for s in scalars if not (s == "Bool" and "sparse" in mod)}
    legacy = "Double Float Long Int Short Char Byte Half Bool BFloat16 ComplexDouble ComplexFloat".split()
    a |= {f"torch.{s}Storage" for s in legacy + "QUInt8 QInt8 QInt32 QUInt4x2 QUInt2x4".split()}
    a |= {f"torch.cuda.{s}Storage" for s in legacy}
    a |= {"torch.storage.UntypedStorage", "torch.storage.TypedStorage"}
    a |= {"torch." + q for q in "per_tensor_affine per_tensor_symmetric per_channel_affine "
          "per_channel_symmetric per_channel_affine_float_qparams".split()}
    a |= {"torch._utils." + f for f in "_rebuild_parameter _rebuild_parameter_with_state _rebuild_qtensor "
          "_rebuild_tensor _rebuild_tensor_v2 _rebuild_tensor_v3 _rebuild_sparse_tensor "
          "_rebuild_meta_tensor_no_storage _rebuild_wrapper_subclass _rebuild_device_tensor_from_numpy "
          "_rebuild_device_tensor_from_cpu_tensor".split()}
    return a


ALLOWED = _allowed()


def unsupported_opcode(data):
    """The first opcode of a pickle that the weights-only unpickler does not implement."""
    try:
        return next((op.name for op, _, _ in pickletools.genops(data) if op.name not in IMPLEMENTED), None)
    except ValueError:
        return "unknown opcode"


def weights_only(pickles, globals_, before=None, after=None):
    """torch.load(weights_only=True)'s verdict: `before` fails it before any pickle is read,
    `after` once they all were."""
    rejected = set()
    # torch.load refuses `before` (a TorchScript archive) without unpickling anything.
    for module, name in [] if before else globals_:
        if (module, name) in TORCH_NAME_MAPPING:
            module, name = TORCH_NAME_MAPPING[(module, name)]
        elif module in TORCH_IMPORT_MAPPING:
            module = TORCH_IMPORT_MAPPING[module]
        if f"{module}.{name}" not in ALLOWED:
            rejected.add(f"{module}.{name}")
    reason = before or next(filter(None, map(unsupported_opcode, pickles)), None) or after
    return {"loads": not rejected and reason is None, "rejected": sorted(rejected), "reason": reason}


# ---------------------------------------------------------------- pickles: containers


def unpickle(data, quiet=False):
    u = StubUnpickler(data)
    try:
        return u.load(), u
    except Exception:
        if not quiet:
            raise
        return None, u


def tensor_row(name, t, start):
    """The tensor's entry; `start` is its storage's absolute offset."""
    size = ITEMSIZE.get(t.dtype)
    numel = math.prod(t.shape)
    row_major = numel == 0 or len(t.shape) == len(t.stride) and all(
        s == math.prod(t.shape[i + 1:]) for i, (d, s) in enumerate(zip(t.shape, t.stride)) if d != 1)
    return {"name": name, "dtype": t.dtype, "shape": t.shape, "strides": None if row_major else t.stride,
            "offset": None if size is None else start + t.offset * size, "nbytes": None if size is None else numel * size}


def read_pickle(path):
    with open(path, "rb") as f:
        raw = f.read()
    if zipfile.is_zipfile(path):
        return read_torch_zip(path, raw)
    if tarfile.is_tarfile(path):
        raise ValueError("a torch < 0.4 tar archive: not read by this script")
    # Legacy: 5 pickles, the first the magic number.
    b, spans = io.BytesIO(raw), []
    while len(spans) < 5 and (not spans or unpickle(spans[0], quiet=True)[0] == 0x1950A86A20F9469CFC6C):
        start = b.tell()
        try:
            b.seek([p for _, _, p in pickletools.genops(b)][-1] + 1)
        except Exception:
            break
        spans.append(raw[start:b.tell()])
    if len(spans) < 5:
        obj, u = unpickle(spans[0] if spans else raw)
        return {"container": "pickle", "tensors": [], "values": {}, "globals": u.globals,
                "weights_only": weights_only(spans[:1], u.globals, after="invalid magic number")}
    results = [unpickle(s) for s in spans]
    gl = [g for _, u in results for g in u.globals]
    sys_info, (root, u), keys = results[2][0], results[3], results[4][0]
    big = isinstance(sys_info, dict) and sys_info.get("little_endian") is False
    byteorder = ">" if big else "<"
    types = {s.key: s for s in u.storages}
    pos, where = b.tell(), {}
    for k in keys:
        (n,) = struct.unpack(byteorder + "q", raw[pos:pos + 8])
        w = width(types[str(k)].type_name)
        where[str(k)] = (pos + 8, n * w)
        pos += 8 + n * w
    tensors, sources = [], {}
    for name, t in walk(root):
        start, avail = where[t.storage.key]
        if t.storage.view is not None:
            vw = width(t.storage.type_name)
            start, avail = start + t.storage.view[1] * vw, t.storage.view[2] * vw
        tensors.append(tensor_row(name, t, start))
        sources.setdefault(name, (t, lambda s=start, n=avail: raw[s:s + n]))
    return finish("torch legacy", tensors, sources, byteorder, gl, weights_only(spans, gl))


def read_torch_zip(path, raw):
    z = zipfile.ZipFile(path)
    names = z.namelist()
    data_pkl = min((n for n in names if n.split("/")[-1] == "data.pkl"), key=len)
    prefix = data_pkl[: -len("data.pkl")]
    bo = z.read(prefix + "byteorder").decode().strip() if prefix + "byteorder" in names else "little"
    byteorder = "<" if bo == "little" else ">"
    script = prefix + "constants.pkl" in names

    def start(rec):  # the entry's data: after its local header, name and extra field
        h = z.getinfo(rec).header_offset
        return h + 30 + sum(struct.unpack("<HH", raw[h + 26:h + 30]))

    tensors, sources, gl = [], {}, []
    pk = z.read(data_pkl)
    root, u = unpickle(pk)
    gl += u.globals
    found = [(n, t, "data/") for n, t in walk(root)]
    if script:
        consts, uc = unpickle(z.read(prefix + "constants.pkl"))
        gl += uc.globals
        for i, c in enumerate(consts if isinstance(consts, (tuple, list)) else ()):
            found += [(n, t, "constants/") for n, t in walk(c, f"CONSTANTS.c{i}")]
    for name, t, sub in found:
        rec = prefix + sub + t.storage.key
        tensors.append(tensor_row(name, t, start(rec)))
        sources.setdefault(name, (t, lambda rec=rec: z.read(rec)))
    wo = weights_only([pk], u.globals, before="TorchScript archive" if script else None)
    return finish("torchscript" if script else "torch zip", tensors, sources, byteorder, gl, wo)


def finish(container, tensors, sources, byteorder, gl, wo):
    values = {}
    for name in pick(tensors):
        t, blob = sources[name]
        if t.dtype not in NP:
            continue
        a = np.frombuffer(blob(), byteorder + NP[t.dtype])
        numel = math.prod(t.shape)
        last = t.offset + sum((d - 1) * s for d, s in zip(t.shape, t.stride))
        if numel and (t.offset < 0 or last >= a.size or min(t.stride, default=0) < 0):
            print(f"{name}: view past its storage ({a.size} elements)", file=sys.stderr)
            continue
        v = np.lib.stride_tricks.as_strided(a[t.offset:] if numel else a[:0], t.shape,
                                            [s * a.itemsize for s in t.stride]) if numel else a[:0]
        values[name] = stats(to_f32(np.ascontiguousarray(v), t.dtype))
    return {"container": container, "tensors": tensors, "values": values,
            "globals": gl, "weights_only": wo}


def picklescan_verdict(path):
    from picklescan.scanner import SafetyLevel, scan_file_path
    r = scan_file_path(path)
    dangerous = sorted({f"{g.module}.{g.name}" for g in r.globals if g.safety == SafetyLevel.Dangerous})
    return {"infected": r.infected_files > 0, "dangerous": dangerous}


# ---------------------------------------------------------------- main


def read(path, fmt):
    if fmt == "gguf":
        out = read_gguf(path)
    elif fmt == "safetensors":
        out = read_safetensors(path)
    elif fmt == "chat_template":
        with open(path, encoding="utf-8") as f:
            text = f.read()
        out = {"tensors": [], "values": {}, "template": render_template(text, "<bos>", "<eos>"),
               "conversation": render_template(text, "<bos>", "<eos>", conversation())}
    elif fmt == "pickle":
        out = read_pickle(path)
        out["globals"] = sorted({f"{m}.{n}" for m, n in out["globals"]})
        out["picklescan"] = picklescan_verdict(path)
    else:
        raise ValueError(f"unknown format {fmt!r}")
    out["format"] = fmt
    out["params"] = sum(math.prod(t["shape"]) for t in out["tensors"])
    return out


def main(argv):
    args = argv[1:]
    manifest = os.path.join(os.path.dirname(os.path.abspath(__file__)), "manifest.json")
    if "--manifest" in args:
        i = args.index("--manifest")
        manifest = args[i + 1]
        del args[i:i + 2]
    if len(args) != 1:
        sys.exit(__doc__.split("\n\n")[1])
    with open(manifest) as f:
        files = json.load(f)["files"]
    result = {}
    for e in files:
        path = os.path.join(args[0], "files", e["id"], e["file"])
        try:
            result[e["id"]] = read(path, e["format"])
        except Exception as ex:  # noqa: BLE001 - reported, and the other files still read
            print(f"{e['id']}: {path}: {type(ex).__name__}: {ex}", file=sys.stderr)
            result[e["id"]] = {"format": e["format"], "error": f"{type(ex).__name__}: {ex}"}
    json.dump(result, sys.stdout, indent=1, sort_keys=True, allow_nan=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv)
