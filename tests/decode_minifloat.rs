//! Every code of the 8-, 6- and 4-bit float dtypes decodes as ml_dtypes decodes it
//! (`tests/fixtures/minifloat/make_tables.py`).
#![cfg(not(target_arch = "wasm32"))]

mod common;

use tensorscope::engine::decode::st_dtypes::codec;
use tensorscope::engine::safetensors::Dtype;

fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

#[test]
fn every_code_matches_ml_dtypes() {
    for name in ["F8_E4M3", "F8_E5M2", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "F8_E8M0", "F6_E2M3", "F6_E3M2", "F4"] {
        let dtype = Dtype::from_name(name).unwrap();
        let bytes = std::fs::read(common::fixtures().join(format!("minifloat/{name}.f32"))).unwrap();
        let want: Vec<f32> = bytes.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
        let codes: Vec<u32> = (0..want.len() as u32).collect();
        let packed: Vec<u8> = match dtype.bits() {
            8 => codes.iter().map(|&c| c as u8).collect(),
            4 => codes.chunks(2).map(|p| (p[0] | p[1] << 4) as u8).collect(),
            6 => codes
                .chunks(4)
                .flat_map(|q| {
                    let bits = q[0] | q[1] << 6 | q[2] << 12 | q[3] << 18;
                    bits.to_le_bytes()[..3].to_vec()
                })
                .collect(),
            _ => unreachable!(),
        };
        let c = codec(dtype);
        let mut got = vec![0f32; want.len()];
        (c.decode)(&packed, &mut got);
        for (code, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(same(*g, *w), "{name} code {code:#x}: got {g:e}, ml_dtypes says {w:e}");
        }
    }
}
