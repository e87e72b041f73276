//! The CLI's `check --sha256 --scan --json` and `hist --json` of every fixture, kept in
//! `tests/fixtures/drivers.json`: the browser test (`tests/web.rs`) runs the same jobs through
//! the browser's driver and must print the same bytes. `BLESS=1 cargo test --test drivers`
//! rewrites the file after a deliberate change.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use serde_json::{Map, Value as Json};

/// The fixture sets, as paths relative to `tests/fixtures` (the browser opens them by these names).
pub const SETS: &[&[&str]] = &[
    &["gguf_v3_le.gguf"],
    &["gguf_v3_be.gguf"],
    &["gguf_all_types.gguf"],
    &["gguf_alignment_64.gguf"],
    &["gguf_nested_array.gguf"],
    &["st_all_numpy_dtypes.safetensors"],
    &["st_exotic_dtypes.safetensors"],
    &[
        "sharded/model-00001-of-00002.safetensors",
        "sharded/model-00002-of-00002.safetensors",
        "sharded/model.safetensors.index.json",
    ],
    &["split/model-00001-of-00003.gguf", "split/model-00002-of-00003.gguf", "split/model-00003-of-00003.gguf"],
    &["quant_st/nvfp4/model.safetensors", "quant_st/nvfp4/config.json", "quant_st/nvfp4/hf_quant_config.json"],
    &["quant_st/fp8-block/model.safetensors", "quant_st/fp8-block/config.json"],
];

fn cli(args: &[&str]) -> (i32, String) {
    let out = common::cli().current_dir(common::fixtures()).args(args).output().unwrap();
    (out.status.code().unwrap(), String::from_utf8(out.stdout).unwrap())
}

/// `{set: {"check": text, "hist": {tensor: text}}}` for every set, as the CLI prints them.
fn outputs() -> Json {
    let mut all = Map::new();
    for set in SETS {
        let mut args = vec!["check"];
        args.extend_from_slice(set);
        args.extend(["--sha256", "--scan", "--json"]);
        let (code, check) = cli(&args);
        assert!(code <= 1, "{set:?}");
        let report: Json = serde_json::from_str(&check).unwrap();
        let mut hist = Map::new();
        for t in report["tensors"].as_array().unwrap() {
            let name = t["name"].as_str().unwrap();
            let mut args = vec!["hist"];
            args.extend_from_slice(set);
            args.extend(["--tensor", name, "--bins", "16", "--scales", "--json"]);
            let (code, text) = cli(&args);
            if code == 0 {
                hist.insert(name.to_owned(), Json::String(text));
            }
        }
        let mut entry = Map::new();
        entry.insert("check".into(), Json::String(check));
        entry.insert("hist".into(), Json::Object(hist));
        all.insert(set.join(" "), Json::Object(entry));
    }
    Json::Object(all)
}

#[test]
fn cli_outputs_are_the_ones_the_browser_must_match() {
    let path = common::fixtures().join("drivers.json");
    let got = outputs();
    if std::env::var_os("BLESS").is_some() {
        std::fs::write(&path, serde_json::to_string_pretty(&got).unwrap() + "\n").unwrap();
    }
    let want: Json = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    for (set, entry) in got.as_object().unwrap() {
        assert_eq!(entry["check"], want[set]["check"], "{set}: check");
        assert_eq!(entry["hist"], want[set]["hist"], "{set}: hist");
    }
    assert_eq!(got.as_object().unwrap().len(), want.as_object().unwrap().len());
    let hists: usize = got.as_object().unwrap().values().map(|e| e["hist"].as_object().unwrap().len()).sum();
    assert!(hists > 100, "every decodable tensor of every fixture: {hists}");
}
