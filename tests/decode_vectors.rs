//! GGML block decoders against gguf-py's `dequantize`, bit for bit.
//!
//! `tests/fixtures/quant/<TYPE>.blocks` holds raw blocks and `<TYPE>.f32` what gguf-py 0.19.0
//! dequantizes them to (little-endian f32); both are written by
//! `tests/fixtures/quant/make_vectors.py`. A decoded value matches when its bits are equal, or
//! when both values are NaN (NaN payloads and signs are not compared).
#![cfg(not(target_arch = "wasm32"))]

use std::fs;
use std::path::{Path, PathBuf};

use tensorscope::engine::decode::{ggml, iquants, BlockCodec};
use tensorscope::engine::gguf::GgmlType;

/// Written to the output before decoding, so a value the decoder skips shows up as a mismatch.
const UNWRITTEN: f32 = -1.234_567e-30;

fn vector_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/quant")
}

/// Names of the types that have vectors, sorted.
fn vector_types() -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(vector_dir())
        .expect("tests/fixtures/quant exists")
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "blocks"))
        .map(|p| p.file_stem().expect("file stem").to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// Decode `<name>.blocks` with `codec` and compare with `<name>.f32`.
fn check(name: &str, codec: &BlockCodec) -> Result<(), String> {
    let dir = vector_dir();
    let blocks = fs::read(dir.join(format!("{name}.blocks"))).map_err(|e| format!("{name}.blocks: {e}"))?;
    let raw = fs::read(dir.join(format!("{name}.f32"))).map_err(|e| format!("{name}.f32: {e}"))?;
    let expected: Vec<f32> = raw.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();

    if let Some((elems, bytes)) = GgmlType::from_name(name).and_then(GgmlType::block) {
        if (elems, bytes) != (codec.block_elems as u64, codec.block_bytes as u64) {
            return Err(format!(
                "{name}: codec says {}/{} elements/bytes, the type table {elems}/{bytes}",
                codec.block_elems, codec.block_bytes
            ));
        }
    }
    if blocks.len() % codec.block_bytes != 0 {
        return Err(format!("{name}: {} bytes is not whole {}-byte blocks", blocks.len(), codec.block_bytes));
    }
    let n = blocks.len() / codec.block_bytes;
    if expected.len() != n * codec.block_elems {
        return Err(format!("{name}: {} expected values for {n} blocks", expected.len()));
    }

    let mut out = vec![UNWRITTEN; expected.len()];
    (codec.decode)(&blocks, &mut out);
    let bad: Vec<usize> = (0..out.len()).filter(|&i| !same(out[i], expected[i])).collect();
    if !bad.is_empty() {
        let shown: Vec<String> = bad
            .iter()
            .take(6)
            .map(|&i| {
                format!(
                    "[block {} value {}] got {:e} ({:#010x}), want {:e} ({:#010x})",
                    i / codec.block_elems,
                    i % codec.block_elems,
                    out[i],
                    out[i].to_bits(),
                    expected[i],
                    expected[i].to_bits()
                )
            })
            .collect();
        return Err(format!("{name}: {} of {} values differ; {}", bad.len(), out.len(), shown.join("; ")));
    }

    if let Some(scales) = codec.scales {
        let mut s = Vec::new();
        scales(&blocks, &mut s);
        if s.is_empty() || s.len() % n != 0 {
            return Err(format!("{name}: scales gave {} values for {n} blocks", s.len()));
        }
    }
    Ok(())
}

/// The i-quant codecs of `tensorscope::engine::decode::iquants`, by type name.
fn iquant_codecs() -> [(&'static str, BlockCodec); 9] {
    [
        ("IQ1_S", iquants::IQ1_S),
        ("IQ1_M", iquants::IQ1_M),
        ("IQ2_XXS", iquants::IQ2_XXS),
        ("IQ2_XS", iquants::IQ2_XS),
        ("IQ2_S", iquants::IQ2_S),
        ("IQ3_XXS", iquants::IQ3_XXS),
        ("IQ3_S", iquants::IQ3_S),
        ("IQ4_NL", iquants::IQ4_NL),
        ("IQ4_XS", iquants::IQ4_XS),
    ]
}

/// Every type with vectors must have a codec, and the codec must reproduce the vectors.
#[test]
fn every_vector_file_decodes_bit_exactly() {
    let names = vector_types();
    assert!(names.len() >= 26, "expected vectors for at least 26 types, found {names:?}");
    let (mut passed, mut missing, mut failed) = (Vec::new(), Vec::new(), Vec::new());
    for name in &names {
        let Some(t) = GgmlType::from_name(name) else {
            failed.push(format!("{name}: not a GGML type name"));
            continue;
        };
        match ggml::codec(t) {
            None => missing.push(name.clone()),
            Some(codec) => match check(name, &codec) {
                Ok(()) => passed.push(name.clone()),
                Err(e) => failed.push(e),
            },
        }
    }
    assert!(
        missing.is_empty() && failed.is_empty(),
        "no codec for: {missing:?}\nfailures:\n  {}\npassed: {passed:?}",
        failed.join("\n  ")
    );
}

#[test]
fn iquants_match_gguf_py() {
    let failed: Vec<String> = iquant_codecs().iter().filter_map(|(name, codec)| check(name, codec).err()).collect();
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// IQ1_M has no plain `d`: its f16 bits are the top nibbles of the four u16 scale words.
#[test]
fn iq1_m_scale_is_assembled_from_scale_words() {
    let mut block = [0u8; 56];
    let d: u16 = 0x3C00; // 1.0
    for k in 0..4 {
        block[48 + 2 * k + 1] = (((d >> (4 * k)) & 0xF) << 4) as u8;
    }
    let mut scales = Vec::new();
    (iquants::IQ1_M.scales.expect("IQ1_M has scales"))(&block, &mut scales);
    assert_eq!(scales, [1.0]);
    // Sub-scales 0 (dl = d), grid row 0 (all -1), delta +0.125.
    let mut out = [0.0f32; 256];
    (iquants::IQ1_M.decode)(&block, &mut out);
    assert!(out.iter().all(|&v| v == -0.875), "{:?}", &out[..8]);
}

/// Deterministic pseudo-random bytes (SplitMix64).
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// Random, all-zero and all-one blocks decode without panicking; a batch decodes the same as
/// its blocks one at a time; every output value is written; a trailing partial block and short
/// output space are ignored, not a panic.
#[test]
fn iquants_never_panic_on_arbitrary_blocks() {
    let mut rng = SplitMix(0x7E45_0125_C09E);
    for (name, codec) in iquant_codecs() {
        let (bb, be) = (codec.block_bytes, codec.block_elems);
        for round in 0..64 {
            let n = 1 + round % 8;
            let src = match round {
                0 => vec![0u8; n * bb],
                1 => vec![0xFF; n * bb],
                _ => rng.bytes(n * bb),
            };
            let mut batch = vec![UNWRITTEN; n * be];
            (codec.decode)(&src, &mut batch);
            for (i, (block, want)) in src.chunks_exact(bb).zip(batch.chunks_exact(be)).enumerate() {
                let mut one = vec![0.0f32; be];
                (codec.decode)(block, &mut one);
                assert!(one.iter().zip(want).all(|(&a, &b)| same(a, b)), "{name}: block {i} alone differs");
                assert!(!want.contains(&UNWRITTEN), "{name}: block {i} left a value unwritten");
            }
            if let Some(scales) = codec.scales {
                let mut s = Vec::new();
                scales(&src, &mut s);
                assert_eq!(s.len(), n, "{name}: one scale per block");
            }

            let mut partial = src.clone();
            partial.extend(rng.bytes(bb - 1));
            let mut out = vec![0.0f32; n * be];
            (codec.decode)(&partial, &mut out);
            let mut short = vec![0.0f32; (n - 1) * be + be / 2];
            (codec.decode)(&src, &mut short);
            (codec.decode)(&[], &mut []);
        }
    }
}
