//! llama.cpp's own test model of every architecture it runs, as its model saver wrote them
//! (tests/fixtures/llama_archs/heads.bin.gz: each file's header, rebuilt here with zeros for its
//! data), and the cache llama.cpp allocates to run each (expected.json, written by
//! make_expected.py with llama-cpp-python). The memory to run agrees with llama.cpp's, or says
//! what it leaves out; and a file llama.cpp wrote is never flagged.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use std::io::Read;

use common::{fixtures, run};
use serde_json::Value as Json;

const MIB: f64 = (1u64 << 20) as f64;

/// Each model's name and its file, rebuilt in `dir`: its header, then zeros up to its size.
fn models(dir: &std::path::Path, expected: &Json) -> Vec<(String, String)> {
    let mut heads = Vec::new();
    let gz = std::fs::File::open(fixtures().join("llama_archs/heads.bin.gz")).unwrap();
    flate2::read::GzDecoder::new(gz).read_to_end(&mut heads).unwrap();
    let mut out = Vec::new();
    for (name, m) in expected["models"].as_object().unwrap() {
        let [start, len] = [0, 1].map(|i| m["head"][i].as_u64().unwrap() as usize);
        let path = dir.join(name);
        std::fs::write(&path, &heads[start..start + len]).unwrap();
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(m["size"].as_u64().unwrap()).unwrap();
        out.push((name.clone(), path.to_str().unwrap().to_owned()));
    }
    out
}

#[test]
fn every_architecture_needs_the_cache_llama_cpp_allocates_or_says_why_not() {
    let expected: Json =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("llama_archs/expected.json")).unwrap()).unwrap();
    let dir = std::env::temp_dir().join(format!("tensorscope-llama-archs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (mut agreed, mut said) = (0, Vec::new());
    for (name, path) in models(&dir, &expected) {
        let (code, out, err) =
            run(&["inspect", &path, "--json", "--context", "256", "--context", "1000", "--context", "4096"]);
        assert_eq!(code, 0, "{name}: {err}");
        let r: Json = serde_json::from_str(&out).unwrap();
        assert_eq!(r["findings"], serde_json::json!([]), "{name}: a file llama.cpp wrote is flagged");
        let e = &r["estimate"];
        let unknown: Vec<&str> = e["unknown"].as_array().unwrap().iter().map(|u| u.as_str().unwrap()).collect();
        let state = e["state_bytes"].as_f64().unwrap() / MIB;
        for (at, want) in expected["models"][&name]["caches"].as_object().unwrap() {
            if want.is_null() {
                continue; // llama.cpp made no context (a quantized cache it cannot hold).
            }
            let (context, ty) = at.split_once('/').unwrap();
            let context: u64 = context.parse().unwrap();
            let ours = e["kv_cache"].as_array().unwrap().iter().find(|k| k["context"] == context && k["type"] == ty);
            let ours = ours.map(|k| k["bytes"].as_f64().unwrap() / MIB);
            // Each size llama.cpp logs is rounded to 0.01 MiB.
            let close = |ours: f64, what: &str| {
                let logged = want[format!("{what}_mib")].as_f64().unwrap();
                let parts = want[if what == "kv" { "kv_caches" } else { "states" }].as_f64().unwrap().max(1.0);
                (ours - logged).abs() <= 0.005 * parts + 1e-9
            };
            if close(ours.unwrap_or(0.0), "kv") && close(state, "state") {
                agreed += 1;
                continue;
            }
            // Where it differs, the estimate says why: a context past the positions the model
            // learned, or a layout it does not follow exactly.
            let why = unknown.iter().find(|u| {
                (ours.is_none() && u.contains("positions are learned")) || u.contains("the KV cache is approximate")
            });
            assert!(
                why.is_some(),
                "{name} at {at}: ours {ours:?} MiB of cache and {state} of state, llama.cpp's {want}; unknown: {unknown:?}"
            );
            said.push(format!("{name} {at}"));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(agreed >= 720, "{agreed} sizes agree; said why for {}: {said:?}", said.len());
    assert!(said.len() <= 40, "{said:?}");
}
