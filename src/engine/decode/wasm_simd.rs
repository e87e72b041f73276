//! Decoders in explicit 128-bit vectors for the wasm bundle, where its size-optimised build
//! leaves the plain loop scalar and slow: only Q6_K (decode alone 499 -> 889 Mval/s, a 64 MiB
//! histogram on 2 workers 291 -> 330 MB/s). Q8_0 and Q4_K in vectors measured no faster end to
//! end (their plain loops already decode at 1150-1300 Mval/s; the histogram's bucket counts
//! bound them), so they stay plain. Each does its plain twin's `f32` operations on the same
//! operands (exact conversions, then one product), so every value is the same bit for bit;
//! `tests/web.rs` holds them to it.

use core::arch::wasm32::*;

use super::f16_le;

/// Sixteen bytes of `b` from `at`.
#[inline(always)]
fn bytes16<const N: usize>(b: &[u8; N], at: usize) -> v128 {
    assert!(at + 16 <= N);
    // SAFETY: `b[at..at + 16]` is in bounds (just checked; `at` is a constant offset the
    // compiler checks once); `v128_load` reads unaligned.
    unsafe { v128_load(b.as_ptr().add(at).cast()) }
}

/// `out[at..at + 16] = mul · q` for sixteen signed bytes `q`, each converted to `f32` exactly.
#[inline(always)]
fn put16<const N: usize>(out: &mut [f32; N], at: usize, q: v128, mul: v128) {
    assert!(at + 16 <= N);
    let (lo, hi) = (i16x8_extend_low_i8x16(q), i16x8_extend_high_i8x16(q));
    let v = [
        f32x4_convert_i32x4(i32x4_extend_low_i16x8(lo)),
        f32x4_convert_i32x4(i32x4_extend_high_i16x8(lo)),
        f32x4_convert_i32x4(i32x4_extend_low_i16x8(hi)),
        f32x4_convert_i32x4(i32x4_extend_high_i16x8(hi)),
    ];
    let p = out.as_mut_ptr();
    for (k, v) in v.into_iter().enumerate() {
        // SAFETY: `out[at..at + 16]` is in bounds (checked above); `v128_store` writes unaligned.
        unsafe { v128_store(p.add(at + 4 * k).cast(), f32x4_mul(mul, v)) }
    }
}

/// Q6_K: `(d·sc) (q − 32)` per 16 values, as [`super::ggml::q6_k_plain`] (a product, so in
/// either order).
pub fn q6_k(src: &[u8], dst: &mut [f32]) {
    let (low4, two, bias) = (u8x16_splat(0x0f), u8x16_splat(3), i8x16_splat(32));
    for (b, y) in src.as_chunks::<210>().0.iter().zip(dst.as_chunks_mut::<256>().0) {
        let d = f16_le(&b[208..]);
        for half in 0..2 {
            let sc = &b[192 + half * 8..192 + half * 8 + 8];
            for part in 0..2 {
                // Elements 16·part .. 16·part + 16 of each quarter, whose scale is sc[part + 2k].
                let l = part * 16;
                let ql0 = bytes16(b, half * 64 + l);
                let ql1 = bytes16(b, half * 64 + 32 + l);
                let qh = bytes16(b, 128 + half * 32 + l);
                let high = |shift: u32| u8x16_shl(v128_and(u8x16_shr(qh, shift), two), 4);
                let quarters = [
                    v128_or(v128_and(ql0, low4), high(0)),
                    v128_or(v128_and(ql1, low4), high(2)),
                    v128_or(u8x16_shr(ql0, 4), high(4)),
                    v128_or(u8x16_shr(ql1, 4), high(6)),
                ];
                for (k, q) in quarters.into_iter().enumerate() {
                    let s = f32x4_splat(d * f32::from(sc[part + 2 * k] as i8));
                    put16(y, half * 128 + k * 32 + l, i8x16_sub(q, bias), s);
                }
            }
        }
    }
}
