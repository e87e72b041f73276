//! NEON twins (aarch64) of the decoders whose table lookups the compiler leaves scalar there:
//! the 4-bit types whose codes index a table of levels (MXFP4, NVFP4, IQ4_NL, IQ4_XS). Sixteen
//! levels are looked up at once (`tbl`), converted exactly, and multiplied by the block's scale:
//! the portable decoders' one product on the same operands, so the same bits (`tests` holds them
//! to it). The other decoders vectorise as written.

use core::arch::aarch64::*;

use super::f16_le;
use super::ggml::{e8m0_half, ue4m3_half, FP4_DOUBLED};
use super::iq_tables::KVALUES_IQ4NL;
use super::iquants::iq4_xs_scale;

/// `out[at..at + 16] = mul · levels[codes]` for sixteen codes below 16, each level (a small
/// integer) converted to `f32` exactly.
#[inline(always)]
fn put16<const N: usize>(out: &mut [f32; N], at: usize, levels: int8x16_t, codes: uint8x16_t, mul: f32) {
    assert!(at + 16 <= N);
    // SAFETY: NEON (the module's `cfg`); the stores write `out[at..at + 16]`, in bounds (checked
    // above), unaligned.
    unsafe {
        let q = vqtbl1q_s8(levels, codes);
        let (lo, hi) = (vmovl_s8(vget_low_s8(q)), vmovl_high_s8(q));
        let v = [vmovl_s16(vget_low_s16(lo)), vmovl_high_s16(lo), vmovl_s16(vget_low_s16(hi)), vmovl_high_s16(hi)];
        let p = out.as_mut_ptr().add(at);
        for (k, v) in v.into_iter().enumerate() {
            vst1q_f32(p.add(4 * k), vmulq_n_f32(vcvtq_f32_s32(v), mul));
        }
    }
}

/// The 32 values of the 16 bytes of nibbles at `b[from..]`, to `out[at..at + 32]`: the low
/// nibbles first, then the high ones, code `c` becoming `mul · levels[c]`.
#[inline(always)]
fn nibbles32<const B: usize, const N: usize>(
    b: &[u8; B],
    from: usize,
    out: &mut [f32; N],
    at: usize,
    levels: int8x16_t,
    mul: f32,
) {
    assert!(from + 16 <= B);
    // SAFETY: NEON; `b[from..from + 16]` is in bounds (checked above), read unaligned.
    let (lo, hi) = unsafe {
        let q = vld1q_u8(b.as_ptr().add(from));
        (vandq_u8(q, vdupq_n_u8(0x0f)), vshrq_n_u8::<4>(q))
    };
    put16(out, at, levels, lo, mul);
    put16(out, at + 16, levels, hi, mul);
}

/// Sixteen levels as one vector.
#[inline(always)]
fn levels(t: &[i8; 16]) -> int8x16_t {
    // SAFETY: NEON; a load of the table's 16 bytes.
    unsafe { vld1q_s8(t.as_ptr()) }
}

/// MXFP4: `fp4 · 2^(e − 127)` per 32 values, as [`super::ggml::mxfp4_plain`].
pub fn mxfp4(src: &[u8], dst: &mut [f32]) {
    let fp4 = levels(&FP4_DOUBLED);
    for (b, y) in src.as_chunks::<17>().0.iter().zip(dst.as_chunks_mut::<32>().0) {
        nibbles32(b, 1, y, 0, fp4, e8m0_half(b[0]));
    }
}

/// NVFP4: `fp4 · d` per 16 values, `d` an unsigned E4M3 scale, as [`super::ggml::nvfp4_plain`].
pub fn nvfp4(src: &[u8], dst: &mut [f32]) {
    let fp4 = levels(&FP4_DOUBLED);
    for (b, y) in src.as_chunks::<36>().0.iter().zip(dst.as_chunks_mut::<64>().0) {
        for pair in 0..2 {
            // Sub-blocks 2·pair and 2·pair + 1: eight bytes each, low nibbles first.
            // SAFETY: NEON; `b[4 + 16·pair..][..16]` is in a 36-byte block, read unaligned.
            let (first, second) = unsafe {
                let q = vld1q_u8(b.as_ptr().add(4 + 16 * pair));
                let (lo, hi) = (vandq_u8(q, vdupq_n_u8(0x0f)), vshrq_n_u8::<4>(q));
                let (lo, hi) = (vreinterpretq_u64_u8(lo), vreinterpretq_u64_u8(hi));
                (vreinterpretq_u8_u64(vzip1q_u64(lo, hi)), vreinterpretq_u8_u64(vzip2q_u64(lo, hi)))
            };
            for (k, codes) in [first, second].into_iter().enumerate() {
                let s = 2 * pair + k;
                put16(y, 16 * s, fp4, codes, ue4m3_half(b[s]));
            }
        }
    }
}

/// IQ4_NL: `d · level` per 32 values, as [`super::iquants::iq4_nl_plain`].
pub fn iq4_nl(src: &[u8], dst: &mut [f32]) {
    let iq4 = levels(&KVALUES_IQ4NL);
    for (b, y) in src.as_chunks::<18>().0.iter().zip(dst.as_chunks_mut::<32>().0) {
        nibbles32(b, 2, y, 0, iq4, f16_le(b));
    }
}

/// IQ4_XS: `d · (scale − 32) · level` per 32 values, as [`super::iquants::iq4_xs_plain`].
pub fn iq4_xs(src: &[u8], dst: &mut [f32]) {
    let iq4 = levels(&KVALUES_IQ4NL);
    for (b, y) in src.as_chunks::<136>().0.iter().zip(dst.as_chunks_mut::<256>().0) {
        let d = f16_le(b);
        for ib in 0..8 {
            nibbles32(b, 8 + 16 * ib, y, 32 * ib, iq4, iq4_xs_scale(b, d, ib));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::random_bytes;
    use crate::decode::{ggml, iquants};

    #[test]
    fn table_decoders_equal_the_plain_ones_bit_for_bit() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        type Decode = fn(&[u8], &mut [f32]);
        let cases: [(&str, usize, usize, Decode, Decode); 4] = [
            ("MXFP4", 17, 32, mxfp4, ggml::mxfp4_plain),
            ("NVFP4", 36, 64, nvfp4, ggml::nvfp4_plain),
            ("IQ4_NL", 18, 32, iq4_nl, iquants::iq4_nl_plain),
            ("IQ4_XS", 136, 256, iq4_xs, iquants::iq4_xs_plain),
        ];
        for (name, block, elems, fast, plain) in cases {
            // Whole blocks and a partial one, which neither decodes.
            let mut bytes = random_bytes(block * 1024 + block / 2, &mut seed);
            // Every value of a block's first byte (an MXFP4 or NVFP4 scale, an f16's low byte).
            for (i, b) in bytes.chunks_mut(block).enumerate() {
                b[0] = i as u8;
            }
            let n = bytes.len() / block * elems;
            let (mut want, mut got) = (vec![f32::NAN; n], vec![f32::NAN; n]);
            plain(&bytes, &mut want);
            fast(&bytes, &mut got);
            // Bits equal, or both NaN (a NaN scale's product: which NaN is the CPU's).
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()), "{name} value {i}: {g} vs {w}");
            }
            assert!(want.iter().any(|&v| v != 0.0 && v.is_finite()), "{name}");
        }
    }

    /// The codecs decode with these on arm64.
    #[test]
    fn the_codecs_run_the_neon_decoders() {
        let ours: [crate::decode::DecodeFn; 4] = [mxfp4, nvfp4, iq4_nl, iq4_xs];
        let codecs = [ggml::MXFP4, ggml::NVFP4, iquants::IQ4_NL, iquants::IQ4_XS];
        for (ours, codec) in ours.into_iter().zip(codecs) {
            assert!(std::ptr::fn_addr_eq(codec.decode, ours));
        }
    }
}
