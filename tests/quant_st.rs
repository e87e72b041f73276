//! Quantized safetensors checkpoints, one per scheme, packed by their documented layouts
//! (tests/fixtures/make_quant_st_fixtures.py): logical parameters, overhead and the quant mix.
#![cfg(not(target_arch = "wasm32"))]

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value as Json;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/quant_st")
}

fn inspect(scheme: &str) -> Json {
    let out = Command::new(env!("CARGO_BIN_EXE_tensorscope"))
        .args(["inspect", &dir().join(scheme).to_string_lossy(), "--json"])
        .output()
        .unwrap();
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
