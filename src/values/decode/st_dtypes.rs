//! safetensors dtypes as codecs: plain and 8-bit floats, packed 6- and 4-bit floats,
//! integers, booleans and complex numbers.
//!
//! Conventions: F4 packs two values per byte, the first in the low nibble; F6 packs four
//! values in three bytes as a little-endian bit stream (value `i` in bits `6i..6i+6`).
//! C64 decodes to the magnitude `|z|`. Integers wider than 24 bits round to the nearest `f32`.

use super::{f16_le, f32_le, BlockCodec};
use crate::safetensors::Dtype;

/// The codec of safetensors dtype `d` (every dtype has one).
pub fn codec(d: Dtype) -> BlockCodec {
    use Dtype::*;
    match d {
        BOOL => BOOL_,
        U8 => U8_,
        I8 => I8_,
        F8_E5M2 => F8_E5M2_,
        F8_E4M3 => F8_E4M3_,
        F8_E8M0 => F8_E8M0_,
        F8_E4M3FNUZ => F8_E4M3FNUZ_,
        F8_E5M2FNUZ => F8_E5M2FNUZ_,
        I16 => I16_,
        U16 => U16_,
        F16 => super::ggml::F16,
        BF16 => super::ggml::BF16,
        I32 => I32_,
        U32 => U32_,
        F32 => super::ggml::F32,
        F64 => super::ggml::F64,
        I64 => I64_,
        U64 => U64_,
        C64 => C64_,
        F4 => BlockCodec {
            block_elems: 2,
            block_bytes: 1,
            decode: decode_f4,
            scales: None,
            groups: None,
            nonfinite: None,
        },
        F6_E2M3 => BlockCodec {
            block_elems: 4,
            block_bytes: 3,
            decode: decode_f6::<2, 3>,
            scales: None,
            groups: None,
            nonfinite: None,
        },
        F6_E3M2 => BlockCodec {
            block_elems: 4,
            block_bytes: 3,
            decode: decode_f6::<3, 2>,
            scales: None,
            groups: None,
            nonfinite: None,
        },
    }
}

macro_rules! elementwise {
    ($name:ident, $bytes:expr, |$b:ident| $e:expr) => {
        const $name: BlockCodec = BlockCodec {
            block_elems: 1,
            block_bytes: $bytes,
            decode: |src, dst| {
                for ($b, out) in src.chunks_exact($bytes).zip(dst.iter_mut()) {
                    *out = $e;
                }
            },
            scales: None,
            groups: None,
            nonfinite: None,
        };
    };
}

elementwise!(BOOL_, 1, |b| if b[0] != 0 { 1.0 } else { 0.0 });
elementwise!(U8_, 1, |b| f32::from(b[0]));
elementwise!(I8_, 1, |b| f32::from(b[0] as i8));
elementwise!(F8_E5M2_, 1, |b| f16_le(&[0, b[0]]));
elementwise!(F8_E4M3_, 1, |b| f8_e4m3fn(b[0]));
elementwise!(F8_E8M0_, 1, |b| f8_e8m0(b[0]));
elementwise!(F8_E4M3FNUZ_, 1, |b| fnuz::<4, 3, 8>(b[0]));
elementwise!(F8_E5M2FNUZ_, 1, |b| fnuz::<5, 2, 16>(b[0]));
elementwise!(I16_, 2, |b| f32::from(i16::from_le_bytes([b[0], b[1]])));
elementwise!(U16_, 2, |b| f32::from(u16::from_le_bytes([b[0], b[1]])));
elementwise!(I32_, 4, |b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f32);
elementwise!(U32_, 4, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f32);
elementwise!(I64_, 8, |b| i64::from_le_bytes(b.try_into().expect("8 bytes")) as f32);
elementwise!(U64_, 8, |b| u64::from_le_bytes(b.try_into().expect("8 bytes")) as f32);
elementwise!(C64_, 8, |b| f32_le(b).hypot(f32_le(&b[4..])));

/// `±(1 + m/2^MAN) · 2^(e − bias)`, or the subnormal `±m/2^MAN · 2^(1 − bias)`, exactly.
#[inline(always)]
fn minifloat(sign: bool, exp: u32, man: u32, man_bits: u32, bias: i32) -> f32 {
    let scale = |e: i32| f32::from_bits(((e + 127) as u32) << 23);
    let v = if exp == 0 {
        man as f32 * scale(1 - bias - man_bits as i32)
    } else {
        ((1 << man_bits) + man) as f32 * scale(exp as i32 - bias - man_bits as i32)
    };
    if sign {
        -v
    } else {
        v
    }
}

/// OCP FP8 E4M3 ("fn"): bias 7, no infinities, `S.1111.111` is NaN; max 448.
fn f8_e4m3fn(b: u8) -> f32 {
    if b & 0x7f == 0x7f {
        return f32::NAN;
    }
    minifloat(b & 0x80 != 0, u32::from((b >> 3) & 0x0f), u32::from(b & 7), 3, 7)
}

/// The "fnuz" FP8 variants: no infinities, no negative zero, `0x80` is the only NaN.
fn fnuz<const EXP: u32, const MAN: u32, const BIAS: i32>(b: u8) -> f32 {
    if b == 0x80 {
        return f32::NAN;
    }
    let exp = u32::from(b >> MAN) & ((1 << EXP) - 1);
    minifloat(b & 0x80 != 0, exp, u32::from(b) & ((1 << MAN) - 1), MAN, BIAS)
}

/// E8M0 scales: `2^(e − 127)`; 255 is NaN.
fn f8_e8m0(b: u8) -> f32 {
    match b {
        255 => f32::NAN,
        0 => f32::from_bits(0x0040_0000),
        e => f32::from_bits(u32::from(e) << 23),
    }
}

/// FP4 E2M1 values by code.
const E2M1: [f32; 16] = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0];

fn decode_f4(src: &[u8], dst: &mut [f32]) {
    for (&b, out) in src.iter().zip(dst.chunks_exact_mut(2)) {
        out[0] = E2M1[usize::from(b & 0x0f)];
        out[1] = E2M1[usize::from(b >> 4)];
    }
}

/// FP6 with `EXP` exponent and `MAN` mantissa bits (E2M3: bias 1; E3M2: bias 3), no inf/NaN.
fn decode_f6<const EXP: u32, const MAN: u32>(src: &[u8], dst: &mut [f32]) {
    let bias = (1 << (EXP - 1)) - 1;
    for (b, out) in src.chunks_exact(3).zip(dst.chunks_exact_mut(4)) {
        let bits = u32::from(b[0]) | u32::from(b[1]) << 8 | u32::from(b[2]) << 16;
        for (i, o) in out.iter_mut().enumerate() {
            let v = (bits >> (6 * i)) & 0x3f;
            *o = minifloat(v & 0x20 != 0, (v >> MAN) & ((1 << EXP) - 1), v & ((1 << MAN) - 1), MAN, bias);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(d: Dtype, bytes: &[u8]) -> Vec<f32> {
        let c = codec(d);
        let mut out = vec![0.0; bytes.len() / c.block_bytes * c.block_elems];
        (c.decode)(bytes, &mut out);
        out
    }

    #[test]
    fn fp8_variants_follow_their_specs() {
        assert_eq!(
            one(Dtype::F8_E4M3, &[0x7e, 0x01, 0x38, 0xb8, 0x00, 0x80]),
            [448.0, 2f32.powi(-9), 1.0, -1.0, 0.0, -0.0]
        );
        assert!(one(Dtype::F8_E4M3, &[0x7f])[0].is_nan() && one(Dtype::F8_E4M3, &[0xff])[0].is_nan());
        assert_eq!(one(Dtype::F8_E5M2, &[0x7b, 0x7c, 0x3c, 0x01]), [57344.0, f32::INFINITY, 1.0, 2f32.powi(-16)]);
        assert!(one(Dtype::F8_E5M2, &[0x7d])[0].is_nan());
        assert_eq!(one(Dtype::F8_E4M3FNUZ, &[0x7f, 0x40, 0x01, 0x00, 0xc0]), [240.0, 1.0, 2f32.powi(-10), 0.0, -1.0]);
        assert!(one(Dtype::F8_E4M3FNUZ, &[0x80])[0].is_nan());
        assert_eq!(one(Dtype::F8_E5M2FNUZ, &[0x7f, 0x40, 0x01]), [57344.0, 1.0, 2f32.powi(-17)]);
        assert!(one(Dtype::F8_E5M2FNUZ, &[0x80])[0].is_nan());
        assert_eq!(one(Dtype::F8_E8M0, &[127, 128, 0, 254]), [1.0, 2.0, 2f64.powi(-127) as f32, 2f32.powi(127)]);
        assert!(one(Dtype::F8_E8M0, &[255])[0].is_nan());
    }

    #[test]
    fn packed_fp4_and_fp6_unpack_low_bits_first() {
        assert_eq!(one(Dtype::F4, &[0x72, 0x9f]), [1.0, 6.0, -6.0, -0.5]);
        // E2M3: 7.5 (0b0_11_111), 0.125 (0b0_00_001), -1.0 (0b1_01_000), 0
        let vals = [0b011111u32, 0b000001, 0b101000, 0];
        let bits = vals.iter().enumerate().fold(0u32, |acc, (i, v)| acc | v << (6 * i));
        assert_eq!(one(Dtype::F6_E2M3, &bits.to_le_bytes()[..3]), [7.5, 0.125, -1.0, 0.0]);
        // E3M2: 28 (0b0_111_11), 0.0625 (0b0_000_01), -1.0 (0b1_011_00), 0.25 (0b0_001_00)
        let vals = [0b011111u32, 0b000001, 0b101100, 0b000100];
        let bits = vals.iter().enumerate().fold(0u32, |acc, (i, v)| acc | v << (6 * i));
        assert_eq!(one(Dtype::F6_E3M2, &bits.to_le_bytes()[..3]), [28.0, 0.0625, -1.0, 0.25]);
    }

    #[test]
    fn integers_bools_and_complex() {
        assert_eq!(one(Dtype::BOOL, &[0, 1, 7]), [0.0, 1.0, 1.0]);
        assert_eq!(one(Dtype::I16, &(-300i16).to_le_bytes()), [-300.0]);
        assert_eq!(one(Dtype::U64, &u64::MAX.to_le_bytes()), [u64::MAX as f32]);
        let mut c = 3f32.to_le_bytes().to_vec();
        c.extend(4f32.to_le_bytes());
        assert_eq!(one(Dtype::C64, &c), [5.0]);
        for &d in Dtype::all() {
            let c = codec(d);
            assert_eq!(d.nbytes(c.block_elems as u64), Some(c.block_bytes as u64), "{}", d.name());
        }
    }
}
