//! The viewer's digest (summary, kind, logical parameters, the estimate's inputs) is the same
//! whichever pieces it is gathered in, and the same as each of its parts computed on its own.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::*;
use tensorscope::cli::open_paths;
use tensorscope::engine::describe::describe;
use tensorscope::engine::digest::{digest, Digesting};
use tensorscope::engine::estimate::{estimate, estimate_from, Inputs};
use tensorscope::engine::kind::kind;
use tensorscope::engine::model::Checkpoint;
use tensorscope::engine::st_quant::logical_params;
use tensorscope::engine::summary::summarize;

/// Plain and quantized safetensors (with their configs), sets with an index, GGUF models,
/// projectors and adapters, and a pickle.
fn checkpoints() -> Vec<(String, Checkpoint)> {
    let f = fixtures();
    let sets: Vec<Vec<std::path::PathBuf>> = vec![
        vec![f.join("st_all_numpy_dtypes.safetensors")],
        vec![f.join("gguf_all_types.gguf")],
        vec![f.join("sharded")],
        vec![f.join("quant_st/gptq")],
        vec![f.join("quant_st/awq")],
        vec![f.join("quant_st/bnb-nf4")],
        vec![f.join("quant_st/fp8-block")],
        vec![f.join("quant_st/mxfp4")],
        vec![f.join("quant_st/nvfp4")],
        vec![f.join("kinds/model.gguf"), f.join("kinds/mmproj-fit.gguf")],
        vec![f.join("kinds/lora.gguf")],
        vec![f.join("kinds/peft")],
        vec![f.join("kinds/kohya.safetensors")],
        vec![f.join("pickle/torch-zip.pt")],
    ];
    sets.into_iter()
        .map(|paths| {
            let label = paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" + ");
            let cp = open_paths(&paths).unwrap_or_else(|e| panic!("{label}: {e}")).0;
            (label, cp)
        })
        .collect()
}

#[test]
fn the_digest_does_not_depend_on_its_pieces() {
    for (label, cp) in checkpoints() {
        assert!(!cp.tensors.is_empty(), "{label} holds tensors");
        let whole = digest(&cp);
        for piece in [1, 2, 3, 7, 1000] {
            let mut d = Digesting::new(&cp);
            let mut steps = 1;
            while !d.step(piece) {
                steps += 1;
            }
            assert_eq!(steps, cp.tensors.len().div_ceil(piece).max(1), "{label}: pieces of {piece}");
            assert_eq!(d.finish(), whole, "{label}: pieces of {piece}");
        }
        // Finishing early takes in the rest.
        let mut d = Digesting::new(&cp);
        d.step(1);
        assert_eq!(d.finish(), whole, "{label}: finished after one piece");
    }
}

#[test]
fn the_digest_agrees_with_each_part_on_its_own() {
    let mut quantized = 0;
    for (label, cp) in checkpoints() {
        let d = digest(&cp);
        assert_eq!(d.summary, summarize(&cp), "{label}");
        assert_eq!(*d.params, logical_params(&cp), "{label}");
        assert_eq!(d.kind, kind(&cp), "{label}");
        assert_eq!(d.kind_detail, describe(&cp, d.kind), "{label}");
        assert_eq!(d.estimate, Inputs::of(&cp), "{label}");
        assert_eq!(estimate_from(&d.estimate, d.kind, &[]), estimate(&cp), "{label}");
        if d.summary.overhead_bytes > 0 {
            quantized += 1;
            let elems: u64 = cp.tensors.iter().map(|t| t.elems().unwrap_or(0)).sum();
            assert_ne!(d.summary.all.params, elems, "{label}: packed weights count what they hold");
        }
    }
    assert!(quantized >= 5, "the quantized fixtures have overhead tensors ({quantized})");
}
