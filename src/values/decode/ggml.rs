//! GGML block types other than the i-quants: plain floats and integers, the legacy quants,
//! the k-quants, the ternary quants, MXFP4/NVFP4 and the 1-/2-bit Q1_0/Q2_0.
//!
//! Each decoder follows ggml's `dequantize_row_*` (and gguf-py's numpy port of it) operation
//! for operation, so results agree bit for bit.

use super::{bf16_le, f16_le, f16s_nonfinite, f32_le, groups, iquants, nonfinite_blocks, BlockCodec};
use crate::gguf::GgmlType;

/// Whether [`codec`] decodes `t` (without naming its decoder).
pub fn decodable(t: GgmlType) -> bool {
    matches!(t.0, 0..=3 | 6..=30 | 34 | 35 | 39..=42)
}

/// The codec of GGML type `t`, when Tensorscope can decode it.
pub fn codec(t: GgmlType) -> Option<BlockCodec> {
    Some(match t.0 {
        0 => F32,
        1 => F16,
        2 => Q4_0,
        3 => Q4_1,
        6 => Q5_0,
        7 => Q5_1,
        8 => Q8_0,
        9 => Q8_1,
        10 => Q2_K,
        11 => Q3_K,
        12 => Q4_K,
        13 => Q5_K,
        14 => Q6_K,
        15 => Q8_K,
        16 => iquants::IQ2_XXS,
        17 => iquants::IQ2_XS,
        18 => iquants::IQ3_XXS,
        19 => iquants::IQ1_S,
        20 => iquants::IQ4_NL,
        21 => iquants::IQ3_S,
        22 => iquants::IQ2_S,
        23 => iquants::IQ4_XS,
        24 => I8,
        25 => I16,
        26 => I32,
        27 => I64,
        28 => F64,
        29 => iquants::IQ1_M,
        30 => BF16,
        34 => TQ1_0,
        35 => TQ2_0,
        39 => MXFP4,
        40 => NVFP4,
        41 => Q1_0,
        42 => Q2_0,
        _ => return None,
    })
}

/// Decode fixed-size blocks: `body` for each of `src`'s blocks of `BYTES` bytes, as `b`, and its
/// `ELEMS` values, as `y`. A macro, not a function taking a closure: the body is then part of
/// the decoder, compiled again in each of its instruction sets' copies ([`widest`]).
macro_rules! blocks {
    ($src:expr, $dst:expr, $bytes:expr, $elems:expr, |$b:ident, $y:ident| $body:block) => {
        for (block, out) in $src.chunks_exact($bytes).zip($dst.chunks_exact_mut($elems)) {
            let $b: &[u8; $bytes] = block.try_into().expect("whole block");
            let $y: &mut [f32; $elems] = out.try_into().expect("whole block");
            $body
        }
    };
}

/// The f16 at `b[at..at + 2]` of each block, for block types led by one scale.
fn scales_f16_at<const BYTES: usize, const AT: usize>(src: &[u8], out: &mut Vec<f32>) {
    out.extend(src.chunks_exact(BYTES).map(|b| f16_le(&b[AT..])));
}

macro_rules! scalar_codec {
    ($name:ident, $bytes:expr, |$b:ident| $e:expr, $doc:expr) => {
        scalar_codec!($name, $bytes, |$b| $e, $doc, None);
    };
    ($name:ident, $bytes:expr, |$b:ident| $e:expr, $doc:expr, $nonfinite:expr) => {
        #[doc = $doc]
        pub const $name: BlockCodec = BlockCodec {
            block_elems: 1,
            block_bytes: $bytes,
            decode: |src, dst| {
                for ($b, out) in src.chunks_exact($bytes).zip(dst.iter_mut()) {
                    *out = $e;
                }
            },
            scales: None,
            groups: None,
            nonfinite: $nonfinite,
        };
    };
}

scalar_codec!(F32, 4, |b| f32_le(b), "IEEE binary32.", Some(super::nonfinite_f32));
/// IEEE binary16.
pub const F16: BlockCodec = BlockCodec {
    block_elems: 1,
    block_bytes: 2,
    #[cfg(not(target_arch = "wasm32"))]
    decode: widest!(f16_plain),
    #[cfg(target_arch = "wasm32")]
    decode: super::wasm_simd::f16,
    scales: None,
    groups: None,
    nonfinite: Some(super::nonfinite_f16),
};

/// [`F16`]'s decoder, portable (the wasm bundle runs its vector twin).
#[inline(always)]
pub fn f16_plain(src: &[u8], dst: &mut [f32]) {
    for (b, out) in src.chunks_exact(2).zip(dst.iter_mut()) {
        *out = f16_le(b);
    }
}
scalar_codec!(BF16, 2, |b| bf16_le(b), "bfloat16.", Some(super::nonfinite_bf16));
scalar_codec!(
    F64,
    8,
    |b| f64_to_f32(f64::from_le_bytes(b.try_into().expect("8 bytes"))),
    "IEEE binary64, rounded to f32 (finite values beyond its range saturate, never become infinite).",
    Some(super::nonfinite_f64)
);

/// `v` rounded to `f32`, a finite `v` past `f32`'s range kept finite at `±f32::MAX`.
fn f64_to_f32(v: f64) -> f32 {
    if v.is_finite() {
        v.clamp(-f64::from(f32::MAX), f64::from(f32::MAX)) as f32
    } else {
        v as f32
    }
}
scalar_codec!(I8, 1, |b| f32::from(b[0] as i8), "Signed 8-bit integers.");
scalar_codec!(I16, 2, |b| f32::from(i16::from_le_bytes([b[0], b[1]])), "Signed 16-bit integers.");
scalar_codec!(I32, 4, |b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f32, "Signed 32-bit integers.");
scalar_codec!(I64, 8, |b| i64::from_le_bytes(b.try_into().expect("8 bytes")) as f32, "Signed 64-bit integers.");

/// `d: f16, qs: [u8; 16]`: `(q - 8) * d`, low nibbles first half, high nibbles second.
pub const Q4_0: BlockCodec = BlockCodec {
    block_elems: 32,
    block_bytes: 18,
    #[cfg(target_arch = "x86_64")]
    decode: super::x86_simd::q4_0,
    #[cfg(not(any(target_arch = "x86_64", target_arch = "wasm32")))]
    decode: q4_0_plain,
    #[cfg(target_arch = "wasm32")]
    decode: super::wasm_simd::q4_0,
    scales: Some(scales_f16_at::<18, 0>),
    groups: Some(groups::Grouping::ByScale { merged: groups::q4_0, groups: groups::q4_0_groups }),
    nonfinite: Some(q4_0_nonfinite),
};

/// [`Q4_0`]'s non-finite values: where its `f16` scales are finite, so are its values.
fn q4_0_nonfinite(src: &[u8]) -> (u64, u64) {
    nonfinite_blocks::<18, 32>(src, Q4_0.decode, |b| f16s_nonfinite(b, &[0]))
}

/// [`Q4_0`]'s decoder, portable (x86 and the wasm bundle run vector twins).
#[inline(always)]
pub fn q4_0_plain(src: &[u8], dst: &mut [f32]) {
    blocks!(src, dst, 18, 32, |b, y| {
        let d = f16_le(b);
        for j in 0..16 {
            y[j] = ((b[2 + j] & 0x0f) as i32 - 8) as f32 * d;
            y[j + 16] = ((b[2 + j] >> 4) as i32 - 8) as f32 * d;
        }
    })
}

/// `d, m: f16, qs: [u8; 16]`: `q * d + m`.
pub const Q4_1: BlockCodec = BlockCodec {
    block_elems: 32,
    block_bytes: 20,
    #[cfg(target_arch = "x86_64")]
    decode: super::x86_simd::q4_1,
    #[cfg(not(any(target_arch = "x86_64", target_arch = "wasm32")))]
    decode: q4_1_plain,
    #[cfg(target_arch = "wasm32")]
    decode: super::wasm_simd::q4_1,
    scales: Some(scales_f16_at::<20, 0>),
    groups: Some(groups::Grouping::Groups(groups::q4_1)),
    nonfinite: Some(q4_1_nonfinite),
};

/// [`Q4_1`]'s non-finite values: where its `f16` scales are finite, so are its values.
fn q4_1_nonfinite(src: &[u8]) -> (u64, u64) {
    nonfinite_blocks::<20, 32>(src, Q4_1.decode, |b| f16s_nonfinite(b, &[0, 2]))
}

/// [`Q4_1`]'s decoder, portable (x86 and the wasm bundle run vector twins).
#[inline(always)]
pub fn q4_1_plain(src: &[u8], dst: &mut [f32]) {
    blocks!(src, dst, 20, 32, |b, y| {
        let (d, m) = (f16_le(b), f16_le(&b[2..]));
        for j in 0..16 {
            y[j] = (b[4 + j] & 0x0f) as f32 * d + m;
            y[j + 16] = (b[4 + j] >> 4) as f32 * d + m;
        }
    })
}

/// The fifth bits of Q5 element `j` and `j + 16`, from the 32-bit `qh`.
#[inline(always)]
fn q5_high(qh: u32, j: usize) -> (u8, u8) {
    ((((qh >> j) << 4) & 0x10) as u8, ((qh >> (j + 12)) & 0x10) as u8)
}

/// `d: f16, qh: u32, qs: [u8; 16]`: 5-bit `(q - 16) * d`.
pub const Q5_0: BlockCodec = BlockCodec {
    block_elems: 32,
    block_bytes: 22,
    #[cfg(not(target_arch = "wasm32"))]
    decode: widest!(q5_0_plain),
    #[cfg(target_arch = "wasm32")]
    decode: super::wasm_simd::q5_0,
    scales: Some(scales_f16_at::<22, 0>),
    groups: Some(groups::Grouping::ByScalePairs { merged: groups::q5_0, groups: groups::q5_0_groups }),
    nonfinite: Some(q5_0_nonfinite),
};

/// [`Q5_0`]'s non-finite values: where its `f16` scales are finite, so are its values.
fn q5_0_nonfinite(src: &[u8]) -> (u64, u64) {
    nonfinite_blocks::<22, 32>(src, Q5_0.decode, |b| f16s_nonfinite(b, &[0]))
}

/// [`Q5_0`]'s decoder, portable (the wasm bundle runs its vector twin).
#[inline(always)]
pub fn q5_0_plain(src: &[u8], dst: &mut [f32]) {
    blocks!(src, dst, 22, 32, |b, y| {
        let d = f16_le(b);
        let qh = u32::from_le_bytes([b[2], b[3], b[4], b[5]]);
        for j in 0..16 {
            let (h0, h1) = q5_high(qh, j);
            y[j] = (((b[6 + j] & 0x0f) | h0) as i32 - 16) as f32 * d;
            y[j + 16] = (((b[6 + j] >> 4) | h1) as i32 - 16) as f32 * d;
        }
    })
}

/// `d, m: f16, qh: u32, qs: [u8; 16]`: 5-bit `q * d + m`.
pub const Q5_1: BlockCodec = BlockCodec {
    block_elems: 32,
    block_bytes: 24,
    #[cfg(not(target_arch = "wasm32"))]
    decode: widest!(q5_1_plain),
    #[cfg(target_arch = "wasm32")]
    decode: super::wasm_simd::q5_1,
    scales: Some(scales_f16_at::<24, 0>),
    groups: None,
    nonfinite: Some(q5_1_nonfinite),
};

/// [`Q5_1`]'s non-finite values: where its `f16` scales are finite, so are its values.
fn q5_1_nonfinite(src: &[u8]) -> (u64, u64) {
    nonfinite_blocks::<24, 32>(src, Q5_1.decode, |b| f16s_nonfinite(b, &[0, 2]))
}

/// [`Q5_1`]'s decoder, portable (the wasm bundle runs its vector twin).
#[inline(always)]
pub fn q5_1_plain(src: &[u8], dst: &mut [f32]) {
    blocks!(src, dst, 24, 32, |b, y| {
        let (d, m) = (f16_le(b), f16_le(&b[2..]));
        let qh = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
        for j in 0..16 {
            let (h0, h1) = q5_high(qh, j);
            y[j] = ((b[8 + j] & 0x0f) | h0) as f32 * d + m;
            y[j + 16] = ((b[8 + j] >> 4) | h1) as f32 * d + m;
        }
    })
}

/// Q8_0 and Q8_1: an f16 `d` leads each block, the 32 `i8` quants start at byte `QS`: `q * d`.
#[inline(always)]
fn decode_q8<const BYTES: usize, const QS: usize>(src: &[u8], dst: &mut [f32]) {
    blocks!(src, dst, BYTES, 32, |b, y| {
        let d = f16_le(b);
        for j in 0..32 {
            y[j] = f32::from(b[QS + j] as i8) * d;
        }
    })
}

/// [`Q8_0`]'s decoder, portable (the wasm bundle runs its vector twin).
#[inline(always)]
pub fn q8_0_plain(src: &[u8], dst: &mut [f32]) {
    decode_q8::<34, 2>(src, dst)
}

/// [`Q8_1`]'s decoder, portable (the wasm bundle runs its vector twin).
#[inline(always)]
pub fn q8_1_plain(src: &[u8], dst: &mut [f32]) {
    decode_q8::<36, 4>(src, dst)
}

/// `d: f16, qs: [i8; 32]`: `q * d`.
pub const Q8_0: BlockCodec = BlockCodec {
    block_elems: 32,
    block_bytes: 34,
    #[cfg(not(target_arch = "wasm32"))]
    decode: widest!(q8_0_plain),
    #[cfg(target_arch = "wasm32")]
    decode: super::wasm_simd::q8_0,
    scales: Some(scales_f16_at::<34, 0>),
    groups: None,
    nonfinite: Some(q8_0_nonfinite),
};

/// [`Q8_0`]'s non-finite values: where its `f16` scales are finite, so are its values.
fn q8_0_nonfinite(src: &[u8]) -> (u64, u64) {
    nonfinite_blocks::<34, 32>(src, Q8_0.decode, |b| f16s_nonfinite(b, &[0]))
}

/// `d, s: f16, qs: [i8; 32]` (`s = d * Σq`, ggml's activation format): `q * d`.
pub const Q8_1: BlockCodec = BlockCodec {
    block_elems: 32,
    block_bytes: 36,
    #[cfg(not(target_arch = "wasm32"))]
    decode: widest!(q8_1_plain),
    #[cfg(target_arch = "wasm32")]
    decode: super::wasm_simd::q8_1,
    scales: Some(scales_f16_at::<36, 0>),
    groups: None,
    nonfinite: Some(q8_1_nonfinite),
};

/// [`Q8_1`]'s non-finite values: where its `f16` scales are finite, so are its values.
fn q8_1_nonfinite(src: &[u8]) -> (u64, u64) {
    nonfinite_blocks::<36, 32>(src, Q8_1.decode, |b| f16s_nonfinite(b, &[0, 2]))
}

/// `scales: [u8; 16], qs: [u8; 64], d, dmin: f16`: 2-bit `(d·sc) q − dmin·m` per 16 values.
pub const Q2_K: BlockCodec = BlockCodec {
    block_elems: 256,
    block_bytes: 84,
    #[cfg(not(target_arch = "wasm32"))]
    decode: widest!(q2_k_plain),
    #[cfg(target_arch = "wasm32")]
    decode: super::wasm_simd::q2_k,
    scales: Some(scales_f16_at::<84, 80>),
    groups: Some(groups::Grouping::Quads(groups::q2_k)),
    nonfinite: Some(q2_k_nonfinite),
};

/// [`Q2_K`]'s non-finite values: where its `f16` scales are finite, so are its values.
fn q2_k_nonfinite(src: &[u8]) -> (u64, u64) {
    nonfinite_blocks::<84, 256>(src, Q2_K.decode, |b| f16s_nonfinite(b, &[80, 82]))
}

/// [`Q2_K`]'s decoder, portable (the wasm bundle runs its vector twin).
#[inline(always)]
pub fn q2_k_plain(src: &[u8], dst: &mut [f32]) {
    blocks!(src, dst, 84, 256, |b, y| {
        let (sc, qs) = (&b[..16], &b[16..80]);
        let (d, min) = (f16_le(&b[80..]), f16_le(&b[82..]));
        let mut is = 0;
        for half in 0..2 {
            let q = &qs[half * 32..half * 32 + 32];
            for (j, shift) in [0u32, 2, 4, 6].into_iter().enumerate() {
                for part in 0..2 {
                    let s = sc[is];
                    is += 1;
                    let (dl, ml) = (d * (s & 0x0f) as f32, min * (s >> 4) as f32);
                    let base = half * 128 + j * 32 + part * 16;
                    for l in 0..16 {
                        y[base + l] = dl * ((q[part * 16 + l] >> shift) & 3) as f32 - ml;
                    }
                }
            }
        }
    })
}

/// The sixteen signed 6-bit scales of a Q3_K block, unpacked from 12 bytes.
pub(super) fn q3k_scales(raw: &[u8]) -> [i8; 16] {
    let word = |i: usize| u32::from_le_bytes([raw[4 * i], raw[4 * i + 1], raw[4 * i + 2], raw[4 * i + 3]]);
    let (a0, a1, tmp) = (word(0), word(1), word(2));
    const LOW4: u32 = 0x0f0f_0f0f;
    const LOW2: u32 = 0x0303_0303;
    let aux = [
        (a0 & LOW4) | ((tmp & LOW2) << 4),
        (a1 & LOW4) | (((tmp >> 2) & LOW2) << 4),
        ((a0 >> 4) & LOW4) | (((tmp >> 4) & LOW2) << 4),
        ((a1 >> 4) & LOW4) | (((tmp >> 6) & LOW2) << 4),
    ];
    let mut out = [0i8; 16];
    for (i, a) in aux.iter().enumerate() {
        for (k, byte) in a.to_le_bytes().into_iter().enumerate() {
            out[4 * i + k] = byte as i8;
        }
    }
    out
}

/// `hmask: [u8; 32], qs: [u8; 64], scales: [u8; 12], d: f16`: 3-bit `(d·(sc−32)) q`.
pub const Q3_K: BlockCodec = BlockCodec {
    block_elems: 256,
    block_bytes: 110,
    #[cfg(not(target_arch = "wasm32"))]
    decode: widest!(q3_k_plain),
    #[cfg(target_arch = "wasm32")]
    decode: super::wasm_simd::q3_k,
    scales: Some(scales_f16_at::<110, 108>),
    groups: Some(groups::Grouping::Quads(groups::q3_k)),
    nonfinite: Some(q3_k_nonfinite),
};

/// [`Q3_K`]'s non-finite values: where its `f16` scales are finite, so are its values.
fn q3_k_nonfinite(src: &[u8]) -> (u64, u64) {
    nonfinite_blocks::<110, 256>(src, Q3_K.decode, |b| f16s_nonfinite(b, &[108]))
}

/// [`Q3_K`]'s decoder, portable (the wasm bundle runs its vector twin).
#[inline(always)]
pub fn q3_k_plain(src: &[u8], dst: &mut [f32]) {
    blocks!(src, dst, 110, 256, |b, y| {
        let (hm, qs) = (&b[..32], &b[32..96]);
        let sc = q3k_scales(&b[96..108]);
        let d = f16_le(&b[108..]);
        let mut is = 0;
        let mut m = 1u8;
        for half in 0..2 {
            let q = &qs[half * 32..half * 32 + 32];
            for (j, shift) in [0u32, 2, 4, 6].into_iter().enumerate() {
                for part in 0..2 {
                    let dl = d * (i32::from(sc[is]) - 32) as f32;
                    is += 1;
                    let base = half * 128 + j * 32 + part * 16;
                    for l in 0..16 {
                        let k = part * 16 + l;
                        let low = ((q[k] >> shift) & 3) as i32;
                        let high = if hm[k] & m != 0 { 0 } else { 4 };
                        y[base + l] = dl * (low - high) as f32;
                    }
                }
                m <<= 1;
            }
        }
    })
}

/// `(d·sc, dmin·m)` of sub-blocks `2·chunk` and `2·chunk + 1` of a Q4_K or Q5_K block (`sc`: its
/// 12 packed scale bytes): their values are `d·sc · q − dmin·m`.
#[inline(always)]
pub(super) fn k_chunk_scales(d: f32, min: f32, sc: &[u8], chunk: usize) -> [(f32, f32); 2] {
    let (s1, m1) = scale_min_k4(2 * chunk, sc);
    let (s2, m2) = scale_min_k4(2 * chunk + 1, sc);
    [(d * s1 as f32, min * m1 as f32), (d * s2 as f32, min * m2 as f32)]
}

/// Scale and min `j` (6 bits each) of the 12 packed bytes of Q4_K and Q5_K.
#[inline(always)]
fn scale_min_k4(j: usize, q: &[u8]) -> (u8, u8) {
    if j < 4 {
        (q[j] & 63, q[j + 4] & 63)
    } else {
        ((q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4), (q[j + 4] >> 4) | ((q[j] >> 6) << 4))
    }
}

/// `d, dmin: f16, scales: [u8; 12], qs: [u8; 128]`: 4-bit `(d·sc) q − dmin·m` per 32 values.
pub const Q4_K: BlockCodec = BlockCodec {
    block_elems: 256,
    block_bytes: 144,
    #[cfg(not(target_arch = "wasm32"))]
    decode: widest!(q4_k_plain),
    #[cfg(target_arch = "wasm32")]
    decode: super::wasm_simd::q4_k,
    scales: Some(scales_f16_at::<144, 0>),
    groups: Some(groups::Grouping::Groups(groups::q4_k)),
    nonfinite: Some(q4_k_nonfinite),
};

/// [`Q4_K`]'s non-finite values: where its `f16` scales are finite, so are its values.
fn q4_k_nonfinite(src: &[u8]) -> (u64, u64) {
    nonfinite_blocks::<144, 256>(src, Q4_K.decode, |b| f16s_nonfinite(b, &[0, 2]))
}

/// [`Q4_K`]'s decoder, portable (the wasm bundle runs its vector twin).
#[inline(always)]
pub fn q4_k_plain(src: &[u8], dst: &mut [f32]) {
    blocks!(src, dst, 144, 256, |b, y| {
        let (d, min) = (f16_le(b), f16_le(&b[2..]));
        let (sc, qs) = (&b[4..16], &b[16..144]);
        for chunk in 0..4 {
            let q = &qs[chunk * 32..chunk * 32 + 32];
            let [(d1, m1), (d2, m2)] = k_chunk_scales(d, min, sc, chunk);
            let out = &mut y[chunk * 64..chunk * 64 + 64];
            for l in 0..32 {
                out[l] = d1 * (q[l] & 0x0f) as f32 - m1;
                out[l + 32] = d2 * (q[l] >> 4) as f32 - m2;
            }
        }
    })
}

/// `d, dmin: f16, scales: [u8; 12], qh: [u8; 32], qs: [u8; 128]`: 5-bit `(d·sc) q − dmin·m`.
pub const Q5_K: BlockCodec = BlockCodec {
    block_elems: 256,
    block_bytes: 176,
    #[cfg(not(target_arch = "wasm32"))]
    decode: widest!(q5_k_plain),
    #[cfg(target_arch = "wasm32")]
    decode: super::wasm_simd::q5_k,
    scales: Some(scales_f16_at::<176, 0>),
    groups: None,
    nonfinite: Some(q5_k_nonfinite),
};

/// [`Q5_K`]'s non-finite values: where its `f16` scales are finite, so are its values.
fn q5_k_nonfinite(src: &[u8]) -> (u64, u64) {
    nonfinite_blocks::<176, 256>(src, Q5_K.decode, |b| f16s_nonfinite(b, &[0, 2]))
}

/// [`Q5_K`]'s decoder, portable (the wasm bundle runs its vector twin).
#[inline(always)]
pub fn q5_k_plain(src: &[u8], dst: &mut [f32]) {
    blocks!(src, dst, 176, 256, |b, y| {
        let (d, min) = (f16_le(b), f16_le(&b[2..]));
        let (sc, qh, qs) = (&b[4..16], &b[16..48], &b[48..176]);
        for chunk in 0..4 {
            let q = &qs[chunk * 32..chunk * 32 + 32];
            let (u1, u2) = (1u8 << (2 * chunk), 2u8 << (2 * chunk));
            let [(d1, m1), (d2, m2)] = k_chunk_scales(d, min, sc, chunk);
            let out = &mut y[chunk * 64..chunk * 64 + 64];
            for l in 0..32 {
                let h1 = if qh[l] & u1 != 0 { 16 } else { 0 };
                let h2 = if qh[l] & u2 != 0 { 16 } else { 0 };
                out[l] = d1 * ((q[l] & 0x0f) + h1) as f32 - m1;
                out[l + 32] = d2 * ((q[l] >> 4) + h2) as f32 - m2;
            }
        }
    })
}

/// `ql: [u8; 128], qh: [u8; 64], scales: [i8; 16], d: f16`: 6-bit `(d·sc) (q − 32)`.
pub const Q6_K: BlockCodec = BlockCodec {
    block_elems: 256,
    block_bytes: 210,
    #[cfg(not(target_arch = "wasm32"))]
    decode: widest!(q6_k_plain),
    #[cfg(target_arch = "wasm32")]
    decode: super::wasm_simd::q6_k,
    scales: Some(scales_f16_at::<210, 208>),
    groups: None,
    nonfinite: Some(q6_k_nonfinite),
};

/// [`Q6_K`]'s non-finite values: where its `f16` scales are finite, so are its values.
fn q6_k_nonfinite(src: &[u8]) -> (u64, u64) {
    nonfinite_blocks::<210, 256>(src, Q6_K.decode, |b| f16s_nonfinite(b, &[208]))
}

/// [`Q6_K`]'s decoder, portable (the wasm bundle runs its vector twin).
#[inline(always)]
pub fn q6_k_plain(src: &[u8], dst: &mut [f32]) {
    blocks!(src, dst, 210, 256, |b, y| {
        let d = f16_le(&b[208..]);
        for half in 0..2 {
            let ql = &b[half * 64..half * 64 + 64];
            let qh = &b[128 + half * 32..128 + half * 32 + 32];
            let sc = &b[192 + half * 8..192 + half * 8 + 8];
            let out = &mut y[half * 128..half * 128 + 128];
            for l in 0..32 {
                let is = l / 16;
                let q1 = ((ql[l] & 0x0f) | ((qh[l] & 3) << 4)) as i32 - 32;
                let q2 = ((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) as i32 - 32;
                let q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) as i32 - 32;
                let q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) as i32 - 32;
                let s = |k: usize| d * f32::from(sc[is + k] as i8);
                out[l] = s(0) * q1 as f32;
                out[l + 32] = s(2) * q2 as f32;
                out[l + 64] = s(4) * q3 as f32;
                out[l + 96] = s(6) * q4 as f32;
            }
        }
    })
}

/// `d: f32, qs: [i8; 256], bsums: [i16; 16]` (ggml's activation format): `d * q`.
pub const Q8_K: BlockCodec = BlockCodec {
    block_elems: 256,
    block_bytes: 292,
    decode: |src, dst| {
        blocks!(src, dst, 292, 256, |b, y| {
            let d = f32_le(b);
            for j in 0..256 {
                y[j] = d * f32::from(b[4 + j] as i8);
            }
        })
    },
    scales: Some(|src, out| out.extend(src.chunks_exact(292).map(f32_le))),
    groups: None,
    nonfinite: Some(q8_k_nonfinite),
};

/// [`Q8_K`]'s non-finite values: its `f32` scale times a code of at most 128 in magnitude
/// overflows only past 2^120, so a scale from 2^113 up (or not finite) is decoded.
fn q8_k_nonfinite(src: &[u8]) -> (u64, u64) {
    nonfinite_blocks::<292, 256>(src, Q8_K.decode, |b| {
        u32::from_le_bytes([b[0], b[1], b[2], b[3]]) & 0x7fff_ffff >= 0x7800_0000
    })
}

/// Ternary digit `n` (0..5) of a base-3 packed byte, as ggml extracts it: `((q·3ⁿ mod 256)·3) >> 8`.
#[inline(always)]
pub(super) const fn trit(q: u8, n: usize) -> i32 {
    const POW3: [u8; 6] = [1, 3, 9, 27, 81, 243];
    ((q.wrapping_mul(POW3[n]) as u16 * 3) >> 8) as i32
}

/// `qs: [u8; 48], qh: [u8; 4], d: f16`: ternary `(t − 1) * d`, five trits per `qs` byte and
/// four per `qh` byte.
pub const TQ1_0: BlockCodec = BlockCodec {
    block_elems: 256,
    block_bytes: 54,
    #[cfg(not(target_arch = "wasm32"))]
    decode: widest!(tq1_0_plain),
    #[cfg(target_arch = "wasm32")]
    decode: super::wasm_simd::tq1_0,
    scales: Some(scales_f16_at::<54, 52>),
    groups: Some(groups::Grouping::ByScale { merged: groups::tq1_0, groups: groups::tq1_0_groups }),
    nonfinite: Some(tq1_0_nonfinite),
};

/// [`TQ1_0`]'s non-finite values: where its `f16` scales are finite, so are its values.
fn tq1_0_nonfinite(src: &[u8]) -> (u64, u64) {
    nonfinite_blocks::<54, 256>(src, TQ1_0.decode, |b| f16s_nonfinite(b, &[52]))
}

/// `qs: [u8; 64], d: f16`: 2-bit ternary `(q − 1) * d`.
pub const TQ2_0: BlockCodec = BlockCodec {
    block_elems: 256,
    block_bytes: 66,
    #[cfg(not(target_arch = "wasm32"))]
    decode: widest!(tq2_0_plain),
    #[cfg(target_arch = "wasm32")]
    decode: super::wasm_simd::tq2_0,
    scales: Some(scales_f16_at::<66, 64>),
    groups: Some(groups::Grouping::ByScale { merged: groups::tq2_0, groups: groups::tq2_0_groups }),
    nonfinite: Some(tq2_0_nonfinite),
};

/// [`TQ2_0`]'s non-finite values: where its `f16` scales are finite, so are its values.
fn tq2_0_nonfinite(src: &[u8]) -> (u64, u64) {
    nonfinite_blocks::<66, 256>(src, TQ2_0.decode, |b| f16s_nonfinite(b, &[64]))
}

/// [`TQ1_0`]'s decoder, portable (the wasm bundle runs its vector twin).
#[inline(always)]
pub fn tq1_0_plain(src: &[u8], dst: &mut [f32]) {
    blocks!(src, dst, 54, 256, |b, y| {
        let (qs, qh, d) = (&b[..48], &b[48..52], f16_le(&b[52..]));
        let mut k = 0;
        for (start, width) in [(0, 32), (32, 16)] {
            for n in 0..5 {
                for m in 0..width {
                    y[k] = (trit(qs[start + m], n) - 1) as f32 * d;
                    k += 1;
                }
            }
        }
        for n in 0..4 {
            for &q in qh {
                y[k] = (trit(q, n) - 1) as f32 * d;
                k += 1;
            }
        }
    })
}

/// [`TQ2_0`]'s decoder, portable (the wasm bundle runs its vector twin).
#[inline(always)]
pub fn tq2_0_plain(src: &[u8], dst: &mut [f32]) {
    blocks!(src, dst, 66, 256, |b, y| {
        let d = f16_le(&b[64..]);
        for half in 0..2 {
            for l in 0..4 {
                for m in 0..32 {
                    let q = (b[half * 32 + m] >> (2 * l)) & 3;
                    y[half * 128 + l * 32 + m] = (q as i32 - 1) as f32 * d;
                }
            }
        }
    })
}

/// E2M1 values, doubled (ggml's `kvalues_mxfp4`); the scales carry the factor ½.
pub(super) const FP4_DOUBLED: [i8; 16] = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12];

/// Half of an E8M0 scale `2^(e − 127)`, as ggml computes it (no NaN for 255).
#[inline(always)]
pub(super) fn e8m0_half(e: u8) -> f32 {
    f32::from_bits(if e < 2 { 0x0020_0000 << e } else { u32::from(e - 1) << 23 })
}

/// `e: u8 (E8M0), qs: [u8; 16]`: `fp4 · 2^(e − 127)`.
pub const MXFP4: BlockCodec = BlockCodec {
    block_elems: 32,
    block_bytes: 17,
    #[cfg(not(any(target_arch = "wasm32", all(target_arch = "aarch64", target_feature = "neon"))))]
    decode: widest!(mxfp4_plain),
    #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
    decode: super::neon::mxfp4,
    #[cfg(target_arch = "wasm32")]
    decode: super::wasm_simd::mxfp4,
    scales: Some(|src, out| out.extend(src.chunks_exact(17).map(|b| 2.0 * e8m0_half(b[0])))),
    groups: Some(groups::Grouping::ByScale { merged: groups::mxfp4, groups: groups::mxfp4_groups }),
    nonfinite: Some(mxfp4_nonfinite),
};

/// [`MXFP4`]'s non-finite values: half its scale times a doubled E2M1 value of at most 12
/// overflows only from `e = 253`, so scales from 250 up are decoded.
fn mxfp4_nonfinite(src: &[u8]) -> (u64, u64) {
    nonfinite_blocks::<17, 32>(src, MXFP4.decode, |b| b[0] >= 250)
}

/// [`MXFP4`]'s decoder, portable (the wasm bundle runs its vector twin).
#[inline(always)]
pub fn mxfp4_plain(src: &[u8], dst: &mut [f32]) {
    blocks!(src, dst, 17, 32, |b, y| {
        // Each of the 16 codes scaled once, then looked up.
        let d = e8m0_half(b[0]);
        let scaled: [f32; 16] = std::array::from_fn(|i| f32::from(FP4_DOUBLED[i]) * d);
        for j in 0..16 {
            y[j] = scaled[(b[1 + j] & 0x0f) as usize];
            y[j + 16] = scaled[(b[1 + j] >> 4) as usize];
        }
    })
}

/// Half of an unsigned E4M3 scale, as ggml computes it (bit 7 ignored, but 0x7f, not 0xff, reads
/// as 0): a table lookup (ggml's formula, with a `powi` call per scale, took a twelfth of NVFP4's
/// time).
#[inline(always)]
pub(super) fn ue4m3_half(x: u8) -> f32 {
    UE4M3_HALF[usize::from(x)]
}

/// [`ue4m3_half`] of every byte: `man · 2⁻¹⁰` for exponent 0, else `(1 + man/8) · 2^(exp − 8)`;
/// each exact in `f32`.
static UE4M3_HALF: [f32; 256] = {
    let mut t = [0f32; 256];
    let mut x = 1;
    while x < 256 {
        let (exp, man) = ((x >> 3 & 0x0f) as u32, (x & 7) as u32);
        t[x] = if x == 0x7f {
            0.0
        } else if exp == 0 {
            // man · 2⁻¹⁰, a product of exact factors.
            man as f32 * f32::from_bits((127 - 10) << 23)
        } else {
            f32::from_bits((exp + 127 - 8) << 23 | man << 20)
        };
        x += 1;
    }
    t
};

/// `d: [u8; 4] (UE4M3, one per 16 values), qs: [u8; 32]`: `fp4 · d`.
pub const NVFP4: BlockCodec = BlockCodec {
    block_elems: 64,
    block_bytes: 36,
    #[cfg(target_arch = "x86_64")]
    decode: super::x86_simd::nvfp4,
    #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
    decode: super::neon::nvfp4,
    #[cfg(not(any(
        target_arch = "x86_64",
        target_arch = "wasm32",
        all(target_arch = "aarch64", target_feature = "neon")
    )))]
    decode: nvfp4_plain,
    #[cfg(target_arch = "wasm32")]
    decode: super::wasm_simd::nvfp4,
    scales: Some(|src, out| {
        for b in src.chunks_exact(36) {
            out.extend(b[..4].iter().map(|&x| 2.0 * ue4m3_half(x)));
        }
    }),
    groups: Some(groups::Grouping::ByScaleByte(groups::nvfp4)),
    nonfinite: Some(nvfp4_nonfinite),
};

/// [`NVFP4`]'s non-finite values: none, whatever its bytes (ggml reads every UE4M3 scale byte as
/// a finite value, 0x7f as 0 and none past 480, times a value of at most 6).
fn nvfp4_nonfinite(_: &[u8]) -> (u64, u64) {
    (0, 0)
}

/// [`NVFP4`]'s decoder, portable (x86 and the wasm bundle run vector twins).
#[inline(always)]
pub fn nvfp4_plain(src: &[u8], dst: &mut [f32]) {
    blocks!(src, dst, 36, 64, |b, y| {
        for s in 0..4 {
            let d = ue4m3_half(b[s]);
            let qs = &b[4 + s * 8..4 + s * 8 + 8];
            for j in 0..8 {
                y[s * 16 + j] = f32::from(FP4_DOUBLED[(qs[j] & 0x0f) as usize]) * d;
                y[s * 16 + j + 8] = f32::from(FP4_DOUBLED[(qs[j] >> 4) as usize]) * d;
            }
        }
    })
}

/// `d: f16, qs: [u8; 16]`: one sign bit per value, `±d`.
pub const Q1_0: BlockCodec = BlockCodec {
    block_elems: 128,
    block_bytes: 18,
    decode: |src, dst| {
        blocks!(src, dst, 18, 128, |b, y| {
            let d = f16_le(b);
            for j in 0..128 {
                y[j] = if (b[2 + j / 8] >> (j % 8)) & 1 != 0 { d } else { -d };
            }
        })
    },
    scales: Some(scales_f16_at::<18, 0>),
    groups: Some(groups::Grouping::ByScale { merged: groups::q1_0, groups: groups::q1_0_groups }),
    nonfinite: Some(q1_0_nonfinite),
};

/// [`Q1_0`]'s non-finite values: where its `f16` scales are finite, so are its values.
fn q1_0_nonfinite(src: &[u8]) -> (u64, u64) {
    nonfinite_blocks::<18, 128>(src, Q1_0.decode, |b| f16s_nonfinite(b, &[0]))
}

/// `d: f16, qs: [u8; 16]`: 2-bit codes, `(q − 1) * d`.
pub const Q2_0: BlockCodec = BlockCodec {
    block_elems: 64,
    block_bytes: 18,
    decode: |src, dst| {
        blocks!(src, dst, 18, 64, |b, y| {
            let d = f16_le(b);
            for j in 0..64 {
                let q = (b[2 + j / 4] >> (2 * (j % 4))) & 3;
                y[j] = (q as i32 - 1) as f32 * d;
            }
        })
    },
    scales: Some(scales_f16_at::<18, 0>),
    groups: Some(groups::Grouping::ByScale { merged: groups::q2_0, groups: groups::q2_0_groups }),
    nonfinite: Some(q2_0_nonfinite),
};

/// [`Q2_0`]'s non-finite values: where its `f16` scales are finite, so are its values.
fn q2_0_nonfinite(src: &[u8]) -> (u64, u64) {
    nonfinite_blocks::<18, 64>(src, Q2_0.decode, |b| f16s_nonfinite(b, &[0]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gguf::Kind;

    #[test]
    fn codecs_agree_with_the_type_table() {
        for t in GgmlType::all() {
            match (t.kind(), codec(t)) {
                (Some(Kind::Live { block_elems, block_bytes }), Some(c)) => {
                    assert_eq!(
                        (c.block_elems as u64, c.block_bytes as u64),
                        (block_elems, block_bytes),
                        "{}",
                        t.name()
                    );
                }
                (Some(Kind::Removed), None) => {}
                (k, c) => panic!("{}: kind {k:?}, codec {}", t.name(), c.is_some()),
            }
        }
    }

    fn decode(c: BlockCodec, b: &[u8]) -> Vec<f32> {
        let mut y = vec![0f32; b.len() / c.block_bytes * c.block_elems];
        (c.decode)(b, &mut y);
        y
    }

    /// Vectors computed by hand from ggml's block definitions, for the types gguf-py cannot
    /// dequantize.
    #[test]
    fn activation_and_binary_types_follow_ggml() {
        let mut b = vec![0x00, 0x40, 0x00, 0x3c]; // d = 2, s = 1
        b.extend((0..32).map(|i| (i as i8 - 16) as u8));
        let y = decode(Q8_1, &b);
        assert_eq!((y[0], y[16], y[31]), (-32.0, 0.0, 30.0));

        let mut b = 0.5f32.to_le_bytes().to_vec();
        b.extend((0..256).map(|i| (i as u8).wrapping_sub(128)));
        b.extend([0u8; 32]);
        let y = decode(Q8_K, &b);
        assert_eq!((y[0], y[128], y[255]), (-64.0, 0.0, 63.5));

        let mut b = vec![0x00, 0x3c]; // d = 1
        b.extend([0b0000_0101u8; 16]);
        let y = decode(Q1_0, &b);
        assert_eq!(&y[..4], &[1.0, -1.0, 1.0, -1.0]);
        assert_eq!(y.len(), 128);

        let mut b = vec![0x00, 0x40]; // d = 2
        b.extend([0b11_10_01_00u8; 16]);
        let y = decode(Q2_0, &b);
        assert_eq!(&y[..4], &[-2.0, 0.0, 2.0, 4.0]);
        assert_eq!(y.len(), 64);
    }

    #[test]
    fn fp4_scales_follow_ggml_conventions() {
        assert_eq!(e8m0_half(127), 0.5);
        assert_eq!(e8m0_half(0), 2f64.powi(-128) as f32);
        assert_eq!(e8m0_half(255), 2f32.powi(127));
        assert_eq!(ue4m3_half(0x38), 0.5); // exp 7, man 0 → 1.0, halved
        assert_eq!(ue4m3_half(0x7f), 0.0);
        assert_eq!(ue4m3_half(0xff), 240.0, "only 0x7f reads as 0");
        assert_eq!(ue4m3_half(0x80), 0.0);
        assert_eq!(ue4m3_half(0x01), 2f32.powi(-10));
        // Every code, against ggml's formula.
        for x in 0..=255u8 {
            let (exp, man) = (i32::from((x >> 3) & 0x0f), f32::from(x & 7));
            let raw = match x {
                0 | 0x7f => 0.0,
                _ if exp == 0 => man * 2f32.powi(-9),
                _ => (1.0 + man / 8.0) * 2f32.powi(exp - 7),
            };
            assert_eq!(ue4m3_half(x).to_bits(), (raw * 0.5).to_bits(), "{x:#04x}");
        }
    }
}
