//! Quantized safetensors checkpoints, one per scheme, packed by their documented layouts
//! (tests/fixtures/make_quant_st_fixtures.py): logical parameters, overhead and the quant mix.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use std::path::PathBuf;

use serde_json::Value as Json;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/quant_st")
}

fn inspect(scheme: &str) -> Json {
    let out = common::cli().args(["inspect", &dir().join(scheme).to_string_lossy(), "--json"]).output().unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{scheme}: {e}"))
}

#[test]
fn every_scheme_counts_logical_weights_and_shows_its_overhead() {
    let expected: Json = serde_json::from_str(&std::fs::read_to_string(dir().join("expected.json")).unwrap()).unwrap();
    let schemes = expected.as_object().unwrap();
    assert_eq!(schemes.len(), 7);
    for (scheme, want) in schemes {
        let r = inspect(scheme);
        let s = &r["summary"];
        assert_eq!(s["params"], want["params"], "{scheme}: logical parameters");
        assert_eq!(s["overhead_bytes"], want["overhead_bytes"], "{scheme}: overhead");
        let label = want["label"].as_str().unwrap();
        let mix = &s["quant_mix"][label];
        assert!(mix.is_object(), "{scheme}: {label} in the mix: {}", s["quant_mix"]);
        // The scheme's bytes include its overhead; its parameters none of it.
        let bytes: u64 = s["by_dtype"].as_object().unwrap().values().map(|d| d["bytes"].as_u64().unwrap()).sum();
        assert_eq!(bytes, s["bytes"].as_u64().unwrap());
        let plain: u64 = s["quant_mix"]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(k, _)| *k != label)
            .map(|(_, v)| v["params"].as_u64().unwrap())
            .sum();
        assert_eq!(mix["params"].as_u64().unwrap() + plain, want["params"].as_u64().unwrap(), "{scheme}");
        let bpw = s["bits_per_weight"].as_f64().unwrap();
        let true_bpw = s["bytes"].as_f64().unwrap() * 8.0 / want["params"].as_f64().unwrap();
        assert!((bpw - true_bpw).abs() < 1e-9, "{scheme}: {bpw} vs {true_bpw}");
    }
}

#[test]
fn the_config_says_what_the_scheme_is() {
    let r = inspect("gptq");
    // 4 bits + f16 scales and 4-bit zeros per 32 inputs + a 32-bit g_idx per input over 64 outputs.
    let gptq = &r["summary"]["quant_mix"]["GPTQ 4-bit (group 32)"];
    assert_eq!(gptq["params"], 128 * 64);
    let bpw = gptq["bytes"].as_f64().unwrap() * 8.0 / gptq["params"].as_f64().unwrap();
    assert_eq!(bpw, 4.0 + 16.0 / 32.0 + 4.0 / 32.0 + 32.0 / 64.0);
}

fn hist(path: &std::path::Path, tensor: &str, threads: &str) -> (Option<i32>, String, String) {
    let out = common::cli()
        .args(["hist", &path.to_string_lossy(), "--tensor", tensor, "--json"])
        .env("TENSORSCOPE_THREADS", threads)
        .output()
        .unwrap();
    (out.status.code(), String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
}

/// FP8 with block scales, NVFP4 with both its scales and MXFP4 with its E8M0 scales: the
/// histogram is of the dequantized values numpy computes, on one thread or several.
#[test]
fn scaled_weights_are_histogrammed_dequantized() {
    let expected: Json = serde_json::from_str(&std::fs::read_to_string(dir().join("expected.json")).unwrap()).unwrap();
    for scheme in ["fp8-block", "nvfp4", "mxfp4"] {
        let want = &expected[scheme];
        let tensor = want["tensor"].as_str().unwrap();
        let (code, out, err) = hist(&dir().join(scheme), tensor, "1");
        assert_eq!(code, Some(0), "{scheme}: {err}");
        let got: Json = serde_json::from_str(&out).unwrap();
        let v = &want["values"];
        assert_eq!(got["count"], v["count"], "{scheme}");
        for k in ["min", "max"] {
            assert_eq!(got[k].as_f64(), v[k].as_f64(), "{scheme} {k}: exact");
        }
        let (mean, want_mean) = (got["mean"].as_f64().unwrap(), v["mean"].as_f64().unwrap());
        assert!((mean - want_mean).abs() <= 1e-6 * v["max"].as_f64().unwrap(), "{scheme}: mean {mean} vs {want_mean}");
        assert_eq!(hist(&dir().join(scheme), tensor, "3").1, out, "{scheme}: the same on three threads");
    }
    // A scheme whose packing is known but whose values are not decoded says so.
    let (code, _, err) = hist(&dir().join("gptq"), "model.layers.0.mlp.down_proj.qweight", "1");
    assert_eq!(code, Some(2));
    assert!(err.contains("GPTQ 4-bit (group 32) weights are packed integers"), "{err}");
    // Their scales are ordinary tensors.
    assert_eq!(hist(&dir().join("gptq"), "model.layers.0.mlp.down_proj.scales", "1").0, Some(0));
}

/// llama.cpp's NVFP4 GGUF keeps the per-tensor scale in a sibling `….scale` tensor: the values
/// shown are the blocks' times that scale.
#[test]
fn gguf_nvfp4_values_include_their_scale_tensor() {
    let blocks = 4u64; // 256 NVFP4 values: 4 blocks of 36 bytes
    let mut block_bytes = Vec::new();
    for b in 0..blocks {
        block_bytes.extend([0x38u8, 0x40, 0x30, 0x3c]); // four UE4M3 sub-block scales
        block_bytes.extend((0..32u8).map(|i| i.wrapping_mul(7).wrapping_add(b as u8 * 13)));
    }
    let gguf = |scale: Option<f32>| {
        let mut g = common::Gguf::header(3, if scale.is_some() { 2 } else { 1 }, 0);
        g.tensor("blk.0.ffn_down.weight", &[256], 40, 0);
        if scale.is_some() {
            g.tensor("blk.0.ffn_down.scale", &[1], 0, 160);
        }
        g.pad(32);
        let mut bytes = g.build();
        bytes.extend(&block_bytes);
        bytes.resize(bytes.len() + 160 - block_bytes.len(), 0);
        if let Some(s) = scale {
            bytes.extend(s.to_le_bytes());
        }
        bytes
    };
    let tmp = std::env::temp_dir().join(format!("tensorscope-nvfp4-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let (plain, scaled) = (tmp.join("plain.gguf"), tmp.join("scaled.gguf"));
    std::fs::write(&plain, gguf(None)).unwrap();
    std::fs::write(&scaled, gguf(Some(0.25))).unwrap();
    let stats = |p: &std::path::Path| -> Json {
        let (code, out, err) = hist(p, "blk.0.ffn_down.weight", "1");
        assert_eq!(code, Some(0), "{err}");
        serde_json::from_str(&out).unwrap()
    };
    let (a, b) = (stats(&plain), stats(&scaled));
    assert_eq!(a["count"], 256);
    assert_eq!(b["count"], 256);
    for k in ["min", "max", "mean"] {
        let (x, y) = (a[k].as_f64().unwrap(), b[k].as_f64().unwrap());
        assert!((y - x * 0.25).abs() <= 1e-9 * x.abs().max(1.0), "{k}: {y} is not {x} × 0.25");
    }
    assert_ne!(a["min"], b["min"]);
    let _ = std::fs::remove_dir_all(&tmp);
}
