//! A short, deterministic run of the fuzz targets' bodies (`tests/fuzz` runs them under
//! libFuzzer): mutated fixtures and random bytes, in random chunkings, never panic.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::Rng;
use tensorscope::engine::fuzz::{assemble_split, decode_as, decode_values, pickle, plan_pieces, run_job};

fn mutate(rng: &mut Rng, base: &[u8]) -> Vec<u8> {
    let mut b = base.to_vec();
    for _ in 0..1 + rng.below(6) {
        if b.is_empty() {
            break;
        }
        let at = rng.below(b.len());
        match rng.below(5) {
            0 => b[at] ^= 1 << rng.below(8),
            1 => b[at] = [0, 0xff, 0x7f, 0x80, b'{', b'"'][rng.below(6)],
            2 => b.truncate(at),
            3 => {
                let end = (at + 8).min(b.len());
                b[at..end].fill(0xff);
            }
            _ => {
                let extra: Vec<u8> = (0..rng.below(16)).map(|_| rng.next() as u8).collect();
                b.splice(at..at, extra);
            }
        }
    }
    b
}

#[test]
fn fuzz_targets_survive_mutated_fixtures_and_random_bytes() {
    let dir = common::fixtures();
    let seeds = [
        ("x.gguf", "gguf_v3_le.gguf"),
        ("x.gguf", "gguf_v3_be.gguf"),
        ("x.gguf", "gguf_nested_array.gguf"),
        ("x.safetensors", "st_all_numpy_dtypes.safetensors"),
        ("model.safetensors.index.json", "sharded/model.safetensors.index.json"),
    ];
    let mut rng = Rng(0x1234_5678_9abc_def1);
    for (name, file) in seeds {
        let base = std::fs::read(dir.join(file)).unwrap();
        for _ in 0..800 {
            let mut m = mutate(&mut rng, &base);
            m.insert(0, rng.next() as u8); // the chunk-size byte
            decode_as(name, &m[1..]);
            decode_as(name, &m);
        }
    }
    for _ in 0..2000 {
        let len = rng.below(300);
        let mut b: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        if rng.below(2) == 0 && b.len() >= 4 {
            b[..4].copy_from_slice(b"GGUF");
        }
        decode_as("x.gguf", &b);
        decode_as("x.safetensors", &b);
        assemble_split(&b);
    }
    for file in
        ["torch-zip.pt", "legacy.pt", "plain.pkl", "evil-hidden.pt", "numpy/arrays-p4.pkl", "numpy/arrays-p2.pkl"]
    {
        let base = std::fs::read(dir.join("pickle").join(file)).unwrap();
        for _ in 0..400 {
            pickle(&mutate(&mut rng, &base));
        }
    }
    for which in 0..=255u8 {
        for len in [0usize, 1, 17, 300, 1200] {
            let mut b: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            b.insert(0, which);
            decode_values(&b);
        }
    }
}

#[test]
fn the_planner_and_every_job_survive_random_inputs() {
    let mut rng = Rng(0x0bad_cafe_dead_beef);
    for which in 0..=255u8 {
        for len in [4usize, 40, 64, 600, 3000] {
            let mut b: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            b[0] = which;
            plan_pieces(&b);
            for job in 0..3 {
                run_job(job, &b);
            }
        }
    }
}

/// Inputs the fuzzers once crashed on, named `<target>-<what broke>`.
#[test]
fn past_fuzzer_findings_stay_fixed() {
    let dir = common::fixtures().join("fuzz_regressions");
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        match file.split('-').next().unwrap() {
            "gguf_header" => decode_as("x.gguf", &data),
            "safetensors_header" => decode_as("x.safetensors", &data),
            "safetensors_index" => decode_as("model.safetensors.index.json", &data),
            "file_set" => assemble_split(&data),
            "decode_values" => decode_values(&data),
            "plan_pieces" => plan_pieces(&data),
            "job_histogram" => run_job(0, &data),
            "job_npy" => run_job(1, &data),
            "job_check" => run_job(2, &data),
            "pickle" => pickle(&data),
            other => panic!("unknown target {other} for {file}"),
        }
    }
}
