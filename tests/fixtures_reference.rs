//! The engine against what the reference Python packages report for files they wrote
//! (`tests/fixtures/make_fixtures.py`), and the same result under every chunking.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::*;
use serde_json::Value as Json;
use tensorscope::engine::findings::Severity;
use tensorscope::engine::gguf::{Value, ValueType};
use tensorscope::engine::open::Parsed;
use tensorscope::engine::report::report;

fn expected(rel: &str) -> Json {
    let text = std::fs::read_to_string(fixtures().join(format!("{rel}.expected.json"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn read(rel: &str) -> Vec<u8> {
    std::fs::read(fixtures().join(rel)).unwrap()
}

/// Compare report tensors with the reference's, field by field.
fn assert_tensors(report: &Json, want: &Json, file_idx: Option<u64>) {
    let got: Vec<&Json> =
        report["tensors"].as_array().unwrap().iter().filter(|t| file_idx.is_none_or(|i| t["file"] == i)).collect();
    let want = want["tensors"].as_array().unwrap();
    assert_eq!(got.len(), want.len());
    let mut got: Vec<_> = got.into_iter().collect();
    got.sort_by_key(|t| t["offset"].as_u64());
    let mut want: Vec<_> = want.iter().collect();
    want.sort_by_key(|t| t["offset"].as_u64());
    for (g, w) in got.iter().zip(want) {
        for field in ["name", "dtype", "shape", "offset"] {
            assert_eq!(g[field], w[field], "{field} of {}", w["name"]);
        }
        if w["dtype"] == "Q8_1" {
            // gguf-py sizes Q8_1 blocks at 40 bytes; ggml's block_q8_1 is 36 (two f16 + 32 int8).
            let blocks = w["n_elements"].as_u64().unwrap() / 32;
            assert_eq!(g["nbytes"], blocks * 36, "nbytes of {}", w["name"]);
        } else {
            assert_eq!(g["nbytes"], w["nbytes"], "nbytes of {}", w["name"]);
        }
    }
}

const GGUF_FIXTURES: &[&str] =
    &["gguf_v3_le.gguf", "gguf_all_types.gguf", "gguf_v3_be.gguf", "gguf_alignment_64.gguf", "gguf_nested_array.gguf"];

#[test]
fn gguf_fixtures_match_gguf_py() {
    for name in GGUF_FIXTURES {
        let bytes = read(name);
        let want = expected(name);
        let Parsed::Gguf(h) = parse(name, &bytes, 4096) else { panic!("{name} not read as GGUF") };
        assert_eq!(u64::from(h.version), want["version"].as_u64().unwrap(), "{name}");
        assert_eq!(h.big_endian, want["endianness"] == "big", "{name}");
        assert_eq!(h.alignment, want["alignment"].as_u64().unwrap(), "{name}");
        assert_eq!(h.data_start, want["data_offset"].as_u64(), "{name}");
        assert_eq!(h.tensor_count, want["tensor_count"].as_u64().unwrap());
        assert_eq!(h.kv_count, want["kv_count"].as_u64().unwrap());
        let keys: Vec<&str> = h.metadata.iter().map(|(k, _)| k.as_str()).collect();
        let want_keys: Vec<&str> =
            want["metadata_keys"].as_array().unwrap().iter().map(|k| k.as_str().unwrap()).collect();
        assert_eq!(keys, want_keys, "{name}: metadata keys in file order");

        let cp = open_one(name, &bytes);
        let r = report(&cp);
        assert_eq!(r["format"], "gguf");
        assert_eq!(r["metadata"], want["metadata"], "{name}: typed metadata values");
        assert_tensors(&r, &want, None);
        // gguf-py writes nested arrays, which llama.cpp refuses: the only errors allowed here.
        let errors: Vec<&str> = cp.findings.iter().filter(|f| f.severity == Severity::Error).map(|f| f.code).collect();
        assert!(errors.iter().all(|&c| c == "gguf.nested_array"), "{name}: {:?}", cp.findings);
        let nested = h.metadata.iter().filter(|(_, v)| matches!(v, Value::Array(a) if a.item_type == ValueType::Array));
        assert_eq!(errors.len(), nested.count(), "{name}: one finding per nested array");
    }
}

#[test]
fn safetensors_fixtures_match_the_safetensors_package() {
    for name in ["st_all_numpy_dtypes.safetensors", "st_exotic_dtypes.safetensors"] {
        let bytes = read(name);
        let want = expected(name);
        let cp = open_one(name, &bytes);
        assert!(cp.findings.is_empty(), "{name}: {:?}", cp.findings);
        let r = report(&cp);
        assert_eq!(r["format"], "safetensors");
        assert_eq!(r["metadata"], want["metadata"], "{name}");
        assert_tensors(&r, &want, None);
        let Parsed::Safetensors(h) = parse(name, &bytes, 7) else { panic!() };
        assert_eq!(h.data_start(), want["data_start"].as_u64().unwrap());
    }
}

#[test]
fn sharded_safetensors_set_opens_as_one_model() {
    let names =
        ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "model.safetensors.index.json"];
    let files: Vec<(String, Vec<u8>)> = names.iter().map(|n| (n.to_string(), read(&format!("sharded/{n}")))).collect();
    // Given in reverse order: the set is sorted by shard name.
    let refs: Vec<(&str, &[u8])> = files.iter().rev().map(|(n, b)| (n.as_str(), b.as_slice())).collect();
    let cp = open_all(&refs);
    assert!(cp.findings.is_empty(), "{:?}", cp.findings);
    let r = report(&cp);
    for (i, shard) in names[..2].iter().enumerate() {
        assert_tensors(&r, &expected(&format!("sharded/{shard}")), Some(i as u64));
    }
    let index = expected("sharded/model.safetensors.index.json");
    assert_eq!(r["summary"]["bytes"], index["total_size"]);
    assert_eq!(r["summary"]["tensors"], index["tensor_count"]);
}

#[test]
fn gguf_split_set_opens_as_one_model() {
    let names = ["model-00003-of-00003.gguf", "model-00001-of-00003.gguf", "model-00002-of-00003.gguf"];
    let files: Vec<(String, Vec<u8>)> = names.iter().map(|n| (n.to_string(), read(&format!("split/{n}")))).collect();
    let refs: Vec<(&str, &[u8])> = files.iter().map(|(n, b)| (n.as_str(), b.as_slice())).collect();
    let cp = open_all(&refs);
    assert!(cp.findings.is_empty(), "{:?}", cp.findings);
    let r = report(&cp);
    for i in 0..3 {
        let want = expected(&format!("split/model-0000{}-of-00003.gguf", i + 1));
        assert!(r["files"][i]["path"].as_str().unwrap().ends_with(&format!("0000{}-of-00003.gguf", i + 1)));
        assert_tensors(&r, &want, Some(i as u64));
    }
    assert_eq!(r["metadata"]["split.count"], serde_json::json!({"type": "u16", "value": 3}));
}

/// Every fixture gives the same result whatever the chunking: chunks of 1, 7, 4096, irregular
/// cuts, and every single split point.
#[test]
fn any_chunking_gives_the_same_result() {
    let mut all: Vec<String> = GGUF_FIXTURES.iter().map(|s| s.to_string()).collect();
    all.extend(["st_all_numpy_dtypes.safetensors", "st_exotic_dtypes.safetensors"].map(String::from));
    all.extend(["sharded/model.safetensors.index.json", "split/model-00001-of-00003.gguf"].map(String::from));
    for name in &all {
        let bytes = read(name);
        let whole = parse(name, &bytes, u64::MAX);
        for chunk in [1, 7, 4096] {
            assert_eq!(parse(name, &bytes, chunk), whole, "{name} in chunks of {chunk}");
        }
        let irregular: Vec<u64> = (0..bytes.len() as u64)
            .scan(0u64, |at, i| {
                *at += 1 + (i * 7919) % 613;
                Some(*at)
            })
            .collect();
        assert_eq!(parse_cut(name, &bytes, &irregular), whole, "{name} in irregular chunks");
        for k in 1..bytes.len() as u64 {
            assert_eq!(parse_cut(name, &bytes, &[k]), whole, "{name} split at {k}");
        }
    }
}
