//! The JSON report shared by the CLI's `--json` and the viewer's "export report".

use serde_json::{json, Map, Value as Json};

use super::gguf::Value;
use super::model::{Checkpoint, MetaValue};
use super::summary::summarize;

/// The report of `tensorscope inspect --json`, as `DESIGN.md` specifies it.
pub fn report(cp: &Checkpoint) -> Json {
    let s = summarize(cp);
    let by_dtype: Map<String, Json> = s
        .by_dtype
        .iter()
        .map(|(name, t)| (name.clone(), json!({ "tensors": t.tensors, "params": t.params, "bytes": t.bytes })))
        .collect();
    json!({
        "format": cp.format.name(),
        "files": cp.files.iter().map(|f| json!({ "path": f.path, "size": f.size })).collect::<Vec<_>>(),
        "metadata": cp.metadata.iter().map(|(k, v)| (k.clone(), meta_json(v))).collect::<Map<_, _>>(),
        "tensors": cp.tensors.iter().map(|t| json!({
            "name": t.name,
            "dtype": t.dtype.name(),
            "shape": t.shape,
            "file": t.file,
            "offset": t.offset,
            "nbytes": t.nbytes,
        })).collect::<Vec<_>>(),
        "summary": {
            "tensors": s.all.tensors,
            "params": s.all.params,
            "bytes": s.all.bytes,
            "bits_per_weight": s.all.bits_per_weight(),
            "by_dtype": by_dtype,
        },
        "findings": cp.findings,
    })
}

fn meta_json(v: &MetaValue) -> Json {
    match v {
        MetaValue::Text(s) => Json::String(s.clone()),
        MetaValue::Gguf(v) => gguf_json(v),
    }
}

/// `{"type": t, "value": v}`, or for arrays `{"type":"array","item_type":t,"len":N,"value":[...]}`.
pub fn gguf_json(v: &Value) -> Json {
    match v {
        Value::Array(a) => json!({
            "type": "array",
            "item_type": a.item_type.name(),
            "len": a.len,
            "value": a.items.iter().map(|i| match i {
                Value::Array(_) => gguf_json(i),
                other => plain(other),
            }).collect::<Vec<_>>(),
        }),
        other => json!({ "type": other.value_type().name(), "value": plain(other) }),
    }
}

/// A non-array value as a bare JSON value; non-finite floats become `null`.
fn plain(v: &Value) -> Json {
    match *v {
        Value::U8(x) => x.into(),
        Value::I8(x) => x.into(),
        Value::U16(x) => x.into(),
        Value::I16(x) => x.into(),
        Value::U32(x) => x.into(),
        Value::I32(x) => x.into(),
        Value::U64(x) => x.into(),
        Value::I64(x) => x.into(),
        Value::F32(x) => f64::from(x).into(),
        Value::F64(x) => x.into(),
        Value::Bool(x) => x.into(),
        Value::String(ref s) => s.as_str().into(),
        Value::Array(_) => gguf_json(v),
    }
}
