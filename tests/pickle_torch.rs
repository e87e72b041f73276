//! Checkpoints the real `torch.save` wrote (tests/fixtures/make_torch_fixtures.py, torch 2.15):
//! every tensor's name, dtype, shape and values as `torch.load` gives them back; the tensor kinds
//! not read are said to be; and hostile containers whose code torch would run are found.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::*;
use serde_json::Value as Json;

fn path(file: &str) -> String {
    fixtures().join("pickle/torch").join(file).to_string_lossy().into_owned()
}

fn check(file: &str) -> (i32, Json) {
    let (code, out, err) = run(&["check", &path(file), "--json"]);
    (code, serde_json::from_str(&out).unwrap_or_else(|e| panic!("{file}: {e}: {err}")))
}

fn codes(r: &Json) -> Vec<String> {
    r["findings"].as_array().unwrap().iter().map(|f| f["code"].as_str().unwrap().to_owned()).collect()
}

/// Our dtype name for torch's, or `None` for the ones not decoded.
fn ours(torch: &str) -> Option<&'static str> {
    Some(match torch.trim_start_matches("torch.") {
        "float32" => "F32",
        "float16" => "F16",
        "bfloat16" => "BF16",
        "float64" => "F64",
        "int8" => "I8",
        "int16" => "I16",
        "int32" => "I32",
        "int64" => "I64",
        "uint8" => "U8",
        "uint16" => "U16",
        "uint32" => "U32",
        "uint64" => "U64",
        "bool" => "BOOL",
        "complex64" => "C64",
        "float8_e4m3fn" => "F8_E4M3",
        "float8_e5m2" => "F8_E5M2",
        "float8_e4m3fnuz" => "F8_E4M3FNUZ",
        "float8_e5m2fnuz" => "F8_E5M2FNUZ",
        "float8_e8m0fnu" => "F8_E8M0",
        _ => return None,
    })
}

/// `a` equals `b` to f32's rounding of a decoded value (integers past 2^24 are rounded).
fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * b.abs().max(1.0)
}

#[test]
fn files_torch_wrote_open_as_torch_loads_them() {
    let want: Json = serde_json::from_str(&std::fs::read_to_string(path("expected.json")).unwrap()).unwrap();
    let mut compared = 0;
    for (file, tensors) in want["files"].as_object().unwrap() {
        let (code, r) = check(file);
        assert_eq!(code, 0, "{file}: {:?}", r["findings"]);
        let got = r["tensors"].as_array().unwrap();
        for (name, w) in tensors.as_object().unwrap() {
            let t = got.iter().find(|t| t["name"] == name.as_str()).unwrap_or_else(|| panic!("{file}: no {name}"));
            assert_eq!(t["shape"], w["shape"], "{file} {name}");
            let torch_dtype = w["dtype"].as_str().unwrap();
            let (code, out, err) = run(&["hist", &path(file), "--tensor", name, "--json"]);
            let Some(dtype) = ours(torch_dtype) else {
                // complex128: listed with its size, its values refused, never misread.
                assert_eq!(code, 2, "{file} {name}: {out}");
                assert!(err.contains("cannot be decoded"), "{err}");
                continue;
            };
            assert_eq!(t["dtype"], dtype, "{file} {name}");
            assert_eq!(code, 0, "{file} {name}: {err}");
            let h: Json = serde_json::from_str(&out).unwrap();
            if dtype == "C64" {
                // complex(b, -b) of the float32 tensor b: |z| = √2·|b|, and the report says so.
                assert_eq!(h["values"], "magnitude", "{file} {name}");
                let b = tensors["float32"]["values"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap().abs());
                let max = b.fold(0.0, f64::max) * std::f64::consts::SQRT_2;
                assert!(close(h["max"].as_f64().unwrap(), max), "{file} {name}: max {} vs {max}", h["max"]);
                continue;
            }
            assert!(h.get("values").is_none(), "{file} {name}: the stored values themselves");
            let values: Vec<f64> = w["values"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
            let min = values.iter().copied().fold(f64::INFINITY, f64::min);
            let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let mean = values.iter().sum::<f64>() / values.len() as f64;
            assert_eq!(h["count"], values.len() as u64, "{file} {name}");
            for (what, v) in [("min", min), ("max", max), ("mean", mean)] {
                assert!(close(h[what].as_f64().unwrap(), v), "{file} {name}: {what} {} vs torch {v}", h[what]);
            }
            compared += 1;
        }
    }
    assert!(compared >= 30, "{compared} tensors compared");
}

#[test]
fn what_is_not_read_is_said_and_nothing_else_is_flagged() {
    let only = |file: &str, want: &[&str]| {
        let (code, r) = check(file);
        assert_eq!(codes(&r), want, "{file}");
        assert_eq!(code, 0, "{file}");
        r
    };
    // UntypedStorage + _rebuild_tensor_v3 dtypes (uint16/32/64, fnuz float8s, e8m0) are read;
    // complex128 is listed with its bytes, not decoded.
    let r = only("dtypes.pt", &["pickle.undecoded_type"]);
    let c128 = r["tensors"].as_array().unwrap().iter().find(|t| t["name"] == "complex128").unwrap();
    assert_eq!(c128["nbytes"], 8 * 16);
    // In the legacy format the storages after a complex128 one are still found.
    let r = only("dtypes-legacy.pt", &["pickle.undecoded_type"]);
    assert!(r["tensors"].as_array().unwrap().iter().all(|t| t["offset"].is_u64()), "{}", r["tensors"]);
    // Tensors with attributes keep their dtype (float8 among them); protocol 1's text LONG magic.
    only("attrs.pt", &[]);
    // torch.load reads it, but not with weights_only: that unpickler runs no protocol 1 text
    // opcode (the magic number is a text LONG).
    let r = only("proto1-legacy.pt", &["pickle.weights_only_rejects"]);
    assert_eq!(r["metadata"]["pickle.container"], "torch legacy");
    assert_eq!(r["weights_only"]["loads"], false);
    assert!(r["weights_only"]["reason"].as_str().unwrap().contains("LONG"), "{}", r["weights_only"]);
    assert_eq!(check("attrs.pt").1["weights_only"], serde_json::json!({"loads": true, "rejected": [], "reason": null}));
    // Quantized and sparse tensors (one with an attribute, so inside _rebuild_from_type_v2):
    // said, not dropped silently.
    let r = only("kinds.pt", &["pickle.tensor_not_read"; 3]);
    let msgs: Vec<&str> = r["findings"].as_array().unwrap().iter().map(|f| f["message"].as_str().unwrap()).collect();
    assert!(msgs[0].contains("'q'") && msgs[0].contains("_rebuild_qtensor"), "{msgs:?}");
    assert!(msgs[1].contains("'sp'") && msgs[1].contains("_rebuild_sparse_tensor"), "{msgs:?}");
    assert!(msgs[2].contains("'qa'") && msgs[2].contains("_rebuild_qtensor"), "{msgs:?}");
    // Two paths flattening to one name.
    only("collide.pt", &["pickle.duplicate_name"]);
    // torch < 0.4's tar: a tensor at an offset into a storage another shares, and one viewing
    // a storage view, each at its own bytes.
    let r = only("tar-legacy.pt", &[]);
    assert_eq!(r["metadata"]["pickle.container"], "torch tar");
    let at = |name: &str| {
        let t = r["tensors"].as_array().unwrap().iter().find(|t| t["name"] == name).unwrap();
        t["offset"].as_u64().unwrap()
    };
    assert_eq!(at("layer.bias"), at("layer.weight") + 4 * 4);
}

#[test]
fn code_torch_would_run_is_found_wherever_the_container_hides_it() {
    for file in [
        "evil-magic-long1.pt",
        "evil-magic-long4.pt",
        "evil-sysinfo.pt",
        "evil-dup-data-pkl.pt",
        "evil-other-pkl.pt",
        "evil-tar-polyglot.pt",
        "evil-tar-storages.pt",
    ] {
        let (code, r) = check(file);
        assert_eq!(code, 1, "{file}: {:?}", r["findings"]);
        let dangerous = import_names(&r, Some("dangerous"));
        assert!(dangerous.iter().any(|d| d.ends_with(".system")), "{file}: {dangerous:?}");
        assert!(codes(&r).contains(&"pickle.dangerous_import".to_owned()), "{file}");
    }
    // The magic number however encoded: the legacy container is recognised.
    let (_, r) = check("evil-magic-long1.pt");
    assert_eq!(r["metadata"]["pickle.container"], "torch legacy");
    // A file that starts with a harmless pickle but is a tar: torch.load reads the tar.
    let (_, r) = check("evil-tar-polyglot.pt");
    assert_eq!(r["metadata"]["pickle.container"], "torch tar");
    let (_, r) = check("evil-dup-data-pkl.pt");
    assert!(codes(&r).contains(&"pickle.bad_zip".to_owned()), "the repeated entry is said");
    // Opened in memory too (the browser's path).
    let bytes = std::fs::read(path("evil-other-pkl.pt")).unwrap();
    let cp = open_one("x.pt", &bytes);
    assert!(common::codes(&cp).contains(&"pickle.dangerous_import"));
    // A data.pkl that cannot be read (its central entry says deflated) skips no other pickle.
    let mut deflated = bytes.clone();
    let name = b"archive/data.pkl";
    let at = deflated.windows(name.len()).rposition(|w| w == name).unwrap() - 46;
    assert_eq!(&deflated[at..at + 4], b"PK\x01\x02", "the central entry");
    deflated[at + 10] = 8;
    let c = common::codes(&open_one("x.pt", &deflated));
    assert!(c.contains(&"pickle.compressed") && c.contains(&"pickle.dangerous_import"), "{c:?}");
}
