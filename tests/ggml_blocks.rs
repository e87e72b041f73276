//! Every GGML block type as ggml itself writes it: `tests/fixtures/ggml_blocks/<TYPE>.gguf` holds
//! 4 rows of 4096 weight-like values quantized by ggml's own quantizers, and `expected.json` the
//! statistics of ggml's own dequantization of them (gguf-py's, to the bit, where it decodes the
//! type); both written by `tests/fixtures/make_ggml_blocks.py`. The histogram (counted by group
//! and code, or decoded), the export and the NaN/Inf scan must give ggml's values.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use serde_json::Value as Json;

#[test]
fn every_block_type_reads_as_ggml_dequantizes_it() {
    let dir = common::fixtures().join("ggml_blocks");
    let expected: Json = serde_json::from_str(&std::fs::read_to_string(dir.join("expected.json")).unwrap()).unwrap();
    let types = expected.as_object().unwrap();
    assert_eq!(types.len(), 26, "every block type ggml quantizes");
    for (name, want) in types {
        let path = dir.join(format!("{name}.gguf"));
        let path = path.to_str().unwrap();
        let (code, out, err) = common::run(&["hist", path, "--tensor", "w", "--json", "--bins", "16"]);
        assert_eq!(code, 0, "{name}: {err}");
        let h: Json = serde_json::from_str(&out).unwrap();
        assert_eq!(h["dtype"], name.as_str());
        for k in ["count", "nan", "inf", "zero"] {
            assert_eq!(h[k], want[k], "{name}: {k}");
        }
        for k in ["min", "max"] {
            // Both are f32 values: equal to the bit.
            assert_eq!(h[k].as_f64().map(|v| v as f32), want[k].as_f64().map(|v| v as f32), "{name}: {k}");
        }
        // Sums round relative to the values' size. Decoded values are summed in f32 runs (about
        // 1e-9 of it measured here); counted by group, in f64 per table entry, they agree with
        // numpy's f64 to its last digits.
        let grouped = [
            "Q1_0", "Q2_0", "Q2_K", "Q3_K", "TQ1_0", "TQ2_0", "IQ1_S", "IQ1_M", "Q4_0", "Q4_1", "Q4_K", "IQ4_NL",
            "IQ4_XS", "MXFP4", "NVFP4",
        ];
        let tolerance = if grouped.contains(&name.as_str()) { 1e-15 } else { 1e-7 };
        let scale = want["min"].as_f64().unwrap().abs().max(want["max"].as_f64().unwrap().abs());
        for k in ["mean", "std"] {
            let (a, b) = (h[k].as_f64().unwrap(), want[k].as_f64().unwrap());
            assert!((a - b).abs() <= tolerance * scale, "{name}: {k} {a} vs {b}");
        }
        let binned: u64 = h["bins"].as_array().unwrap().iter().map(|c| c.as_u64().unwrap()).sum();
        assert_eq!(binned, want["count"].as_u64().unwrap(), "{name}: every value binned");
        let (_, values) = common::exported_f32(path, "w");
        let first: Vec<u32> =
            want["first"].as_array().unwrap().iter().map(|v| (v.as_f64().unwrap() as f32).to_bits()).collect();
        let ours: Vec<u32> = values[..first.len()].iter().map(|v| v.to_bits()).collect();
        assert_eq!(ours, first, "{name}: first values, exported");
        assert_eq!(values.len() as u64, want["count"].as_u64().unwrap(), "{name}: exported count");
        // The scan counts the values and their NaN and infinities (from the blocks' scales) as
        // ggml's dequantization holds them.
        let (code, out, err) = common::run(&["check", path, "--scan", "--json"]);
        assert!(code == 0 || code == 1, "{name}: {err}");
        let scan = &serde_json::from_str::<Json>(&out).unwrap()["scan"][0];
        for (k, w) in [("values", "count"), ("nan", "nan"), ("inf", "inf")] {
            assert_eq!(scan[k], want[w], "{name}: scanned {k}");
        }
    }
}
