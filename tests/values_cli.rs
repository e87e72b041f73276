//! `hist` and `export` against the reference packages: numpy statistics and histograms of
//! gguf-py's dequantization (and of the values safetensors loads), and their `.npy` files
//! byte for byte (`tests/fixtures/values/make_expected.py`).
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::run;
use serde_json::Value as Json;

fn expected() -> Vec<Json> {
    let text = std::fs::read_to_string(common::fixtures().join("values/expected.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn hist_matches_numpy_over_the_reference_values() {
    for want in expected() {
        let file = common::fixtures().join(want["file"].as_str().unwrap());
        let name = want["tensor"].as_str().unwrap();
        let (code, out, err) = run(&["hist", file.to_str().unwrap(), "--tensor", name, "--bins", "16", "--json"]);
        assert_eq!(code, 0, "{name}: {err}");
        let got: Json = serde_json::from_str(&out).unwrap();
        for key in ["tensor", "dtype", "elements", "count", "nan", "inf", "zero", "min", "max", "lo", "hi"] {
            assert_eq!(got[key], want[key], "{name}: {key}");
        }
        // Moments are summed in f32 runs carried in f64: about 1e-7 of the spread.
        let spread = want["std"].as_f64().unwrap() + want["mean"].as_f64().unwrap().abs();
        for key in ["mean", "std"] {
            let (g, w) = (got[key].as_f64().unwrap(), want[key].as_f64().unwrap());
            assert!((g - w).abs() <= 1e-6 * spread.max(f64::MIN_POSITIVE), "{name}: {key} {g} vs {w}");
        }
        let (g, w) = (got["bins"].as_array().unwrap(), want["bins"].as_array().unwrap());
        assert_eq!(g.len(), 16);
        let total: u64 = w.iter().map(|c| c.as_u64().unwrap()).sum();
        assert_eq!(g.iter().map(|c| c.as_u64().unwrap()).sum::<u64>(), total, "{name}: bins hold every finite value");
        // Bin edges are exact to one fine bucket (the values sharing their top 16 bits): only
        // values whose bucket straddles an edge may land in the neighbouring bin.
        let values = npy_values(&format!("values/{}__{name}.npy", want["file"].as_str().unwrap()));
        let (lo, hi) = (want["lo"].as_f64().unwrap(), want["hi"].as_f64().unwrap());
        let edges: Vec<f64> = (1..16).map(|i| lo + (hi - lo) * i as f64 / 16.0).collect();
        let near_edge = values
            .iter()
            .filter(|v| v.is_finite())
            .filter(|&&v| {
                let key = (v as f32).to_bits() & 0xffff_0000;
                let (a, b) = (f64::from(f32::from_bits(key)), f64::from(f32::from_bits(key | 0xffff)));
                edges.iter().any(|&e| e >= a.min(b) && e <= a.max(b))
            })
            .count() as u64;
        let moved: u64 = g.iter().zip(w).map(|(a, b)| a.as_u64().unwrap().abs_diff(b.as_u64().unwrap())).sum();
        assert!(moved <= 2 * near_edge, "{name}: {g:?} vs numpy {w:?} ({near_edge} values near an edge)");
    }
}

/// The values of a fixture `.npy` (little-endian numeric or bool), as `f64`.
fn npy_values(rel: &str) -> Vec<f64> {
    let b = std::fs::read(common::fixtures().join(rel)).unwrap();
    let header_len = u16::from_le_bytes([b[8], b[9]]) as usize;
    let header = String::from_utf8_lossy(&b[10..10 + header_len]).into_owned();
    let data = &b[10 + header_len..];
    let descr = header.split("'descr': '").nth(1).unwrap().split('\'').next().unwrap().to_owned();
    let width = descr[2..].parse::<usize>().unwrap();
    data.chunks_exact(width)
        .map(|c| match descr.as_str() {
            "<f4" => f64::from(f32::from_le_bytes(c.try_into().unwrap())),
            "<f8" => f64::from_le_bytes(c.try_into().unwrap()),
            "|b1" | "|u1" => f64::from(c[0]),
            "|i1" => f64::from(c[0] as i8),
            "<i2" => f64::from(i16::from_le_bytes(c.try_into().unwrap())),
            "<u2" => f64::from(u16::from_le_bytes(c.try_into().unwrap())),
            "<i4" => f64::from(i32::from_le_bytes(c.try_into().unwrap())),
            "<u4" => f64::from(u32::from_le_bytes(c.try_into().unwrap())),
            "<i8" => i64::from_le_bytes(c.try_into().unwrap()) as f64,
            "<u8" => u64::from_le_bytes(c.try_into().unwrap()) as f64,
            other => panic!("descr {other}"),
        })
        .collect()
}

#[test]
fn export_writes_the_reference_npy() {
    let dir = std::env::temp_dir().join(format!("tensorscope-export-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for want in expected() {
        let file_name = want["file"].as_str().unwrap();
        let name = want["tensor"].as_str().unwrap();
        let file = common::fixtures().join(file_name);
        let out = dir.join(format!("{name}.npy"));
        let (code, _, err) = run(&["export", file.to_str().unwrap(), "--tensor", name, "--npy", out.to_str().unwrap()]);
        assert_eq!(code, 0, "{name}: {err}");
        let got = std::fs::read(&out).unwrap();
        let reference = std::fs::read(common::fixtures().join(format!("values/{file_name}__{name}.npy"))).unwrap();
        assert!(got == reference, "{name}: .npy differs from numpy's ({} vs {} bytes)", got.len(), reference.len());
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn hist_selections_and_errors() {
    let file = common::fixtures().join("gguf_all_types.gguf");
    let f = file.to_str().unwrap();
    let (code, out, _) = run(&["hist", f, "--tensor", "t.Q4_K", "--elements", "100:300", "--json"]);
    assert_eq!(code, 0);
    let r: Json = serde_json::from_str(&out).unwrap();
    assert_eq!((r["count"].as_u64(), r["elements"].as_u64()), (Some(200), Some(512)));
    let (code, out, _) = run(&["hist", f, "--tensor", "t.Q4_K", "--sample", "144", "--json"]);
    assert_eq!(code, 0);
    let r: Json = serde_json::from_str(&out).unwrap();
    assert_eq!(r["count"].as_u64(), Some(256), "one block of a two-block tensor");
    let (code, out, _) = run(&["hist", f, "--tensor", "t.Q4_K", "--scales", "--json"]);
    assert_eq!(code, 0);
    let r: Json = serde_json::from_str(&out).unwrap();
    assert_eq!(r["scales"]["count"].as_u64(), Some(2), "one scale per Q4_K block");
    let (code, _, err) = run(&["hist", f, "--tensor", "t.Q4_", "--json"]);
    assert_eq!(code, 2);
    assert!(err.contains("similar: t.Q4_0, t.Q4_1, t.Q4_K"), "{err}");
    let (code, _, err) = run(&["hist", f, "--tensor", "t.Q4_K", "--elements", "0:9999"]);
    assert_eq!(code, 2);
    assert!(err.contains("not within"), "{err}");
    let (code, out, _) = run(&["hist", f, "--tensor", "t.Q8_0"]);
    assert_eq!(code, 0);
    assert!(out.contains("values   128") && out.contains('#'), "{out}");
}
