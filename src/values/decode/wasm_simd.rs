//! Decoders in explicit 128-bit vectors for the wasm bundle, where its size-optimised build
//! leaves the plain loop scalar and slow: the K-quants (Q2_K to Q6_K), the legacy formats
//! (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1), the 4-bit ones with a scale per 16 or 32 values
//! (MXFP4, NVFP4, IQ4_NL, IQ4_XS), the ternary TQ1_0 and TQ2_0, and F16: decode alone 2-5x faster than
//! plain at opt-level "z"; the IQ1/IQ2/IQ3 grid steps (`put8_signed`, `put8_iq1`) 10-25x. Each
//! does its plain twin's `f32` operations on the same operands (exact conversions, then one
//! product and, where the format has an offset, one sum or difference), so every value is the
//! same bit for bit; `tests/web.rs` holds them to it.

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
    // Written out, not `array::map`: at "z" its closure is a call per vector.
    let [a, b, c, d] = floats16(q);
    put(out, at, [f32x4_mul(mul, a), f32x4_mul(mul, b), f32x4_mul(mul, c), f32x4_mul(mul, d)]);
}

/// `out[at..at + 16] = mul · q − sub` for sixteen signed bytes `q`, each converted exactly.
#[inline(always)]
fn put16_less<const N: usize>(out: &mut [f32; N], at: usize, q: v128, mul: v128, sub: v128) {
    let [a, b, c, d] = floats16(q);
    let f = |v| f32x4_sub(f32x4_mul(mul, v), sub);
    put(out, at, [f(a), f(b), f(c), f(d)]);
}

/// `out[at..at + 16] = q · mul + add` for sixteen signed bytes `q`, each converted exactly.
#[inline(always)]
fn put16_plus<const N: usize>(out: &mut [f32; N], at: usize, q: v128, mul: v128, add: v128) {
    let [a, b, c, d] = floats16(q);
    let f = |v| f32x4_add(f32x4_mul(v, mul), add);
    put(out, at, [f(a), f(b), f(c), f(d)]);
}

/// Sixteen signed bytes as four vectors of `f32` (exact).
#[inline(always)]
fn floats16(q: v128) -> [v128; 4] {
    let (lo, hi) = (i16x8_extend_low_i8x16(q), i16x8_extend_high_i8x16(q));
    [
        f32x4_convert_i32x4(i32x4_extend_low_i16x8(lo)),
        f32x4_convert_i32x4(i32x4_extend_high_i16x8(lo)),
        f32x4_convert_i32x4(i32x4_extend_low_i16x8(hi)),
        f32x4_convert_i32x4(i32x4_extend_high_i16x8(hi)),
    ]
}

/// `y = db · g · ±1` for the eight unsigned bytes `g` of `grid` (little-endian), the sign bit
/// flipped where bit `j` of `signs` is set: the IQ2/IQ3 step of `iquants::put_signed`.
#[inline(always)]
pub(super) fn put8_signed(y: &mut [f32; 8], db: f32, grid: u64, signs: u8) {
    let q = u16x8_extend_low_u8x16(u64x2(grid, 0));
    let m = f32x4_splat(db);
    let s = u32x4_splat(u32::from(signs));
    let flip = |bits: v128| v128_and(u32x4_ne(v128_and(s, bits), u32x4_splat(0)), u32x4_splat(0x8000_0000));
    let lo = v128_xor(f32x4_mul(m, f32x4_convert_u32x4(u32x4_extend_low_u16x8(q))), flip(u32x4(1, 2, 4, 8)));
    let hi = v128_xor(f32x4_mul(m, f32x4_convert_u32x4(u32x4_extend_high_u16x8(q))), flip(u32x4(16, 32, 64, 128)));
    put8(y, lo, hi);
}

/// `y = dl · (g + delta)` for the eight signed bytes `g` of `row` (little-endian): the IQ1 step
/// of `iquants::put_iq1`.
#[inline(always)]
pub(super) fn put8_iq1(y: &mut [f32; 8], dl: f32, delta: f32, row: u64) {
    let q = i16x8_extend_low_i8x16(u64x2(row, 0));
    let (m, add) = (f32x4_splat(dl), f32x4_splat(delta));
    let f = |v: v128| f32x4_mul(m, f32x4_add(f32x4_convert_i32x4(v), add));
    put8(y, f(i32x4_extend_low_i16x8(q)), f(i32x4_extend_high_i16x8(q)));
}

/// `y = [lo, hi]`.
#[inline(always)]
fn put8(y: &mut [f32; 8], lo: v128, hi: v128) {
    let p = y.as_mut_ptr();
    // SAFETY: `y` holds 8 floats, two vectors; `v128_store` writes unaligned.
    unsafe {
        v128_store(p.cast(), lo);
        v128_store(p.add(4).cast(), hi);
    }
}

/// `out[at..at + 16] = v`.
#[inline(always)]
fn put<const N: usize>(out: &mut [f32; N], at: usize, v: [v128; 4]) {
    assert!(at + 16 <= N);
    let p = out.as_mut_ptr();
    // SAFETY: `out[at..at + 16]` is in bounds (checked above); `v128_store` writes unaligned.
    unsafe {
        v128_store(p.add(at).cast(), v[0]);
        v128_store(p.add(at + 4).cast(), v[1]);
        v128_store(p.add(at + 8).cast(), v[2]);
        v128_store(p.add(at + 12).cast(), v[3]);
    }
}

/// The 32 values of the 16 bytes of nibbles at `b[from..]`, to `out[at..at + 32]`: the low
/// nibbles first, then the high ones, code `c` becoming `mul · levels[c]` (the levels, small
/// integers, looked up sixteen at a time and converted exactly).
#[inline(always)]
fn nibbles32<const B: usize, const N: usize>(
    b: &[u8; B],
    from: usize,
    out: &mut [f32; N],
    at: usize,
    levels: v128,
    mul: v128,
) {
    let q = bytes16(b, from);
    put16(out, at, i8x16_swizzle(levels, v128_and(q, u8x16_splat(0x0f))), mul);
    put16(out, at + 16, i8x16_swizzle(levels, u8x16_shr(q, 4)), mul);
}

/// Sixteen small integer levels as one vector, for [`nibbles32`].
fn levels(t: [i8; 16]) -> v128 {
    i8x16(t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[9], t[10], t[11], t[12], t[13], t[14], t[15])
}

/// Q4_0: `(q − 8) · d` per 32 values, as [`super::ggml::q4_0_plain`] (a product, so in either
/// order).
pub fn q4_0(src: &[u8], dst: &mut [f32]) {
    let minus_8 = levels(core::array::from_fn(|i| i as i8 - 8));
    for (b, y) in src.as_chunks::<18>().0.iter().zip(dst.as_chunks_mut::<32>().0) {
        nibbles32(b, 2, y, 0, minus_8, f32x4_splat(f16_le(b)));
    }
}

/// MXFP4: `fp4 · 2^(e − 127)` per 32 values, as [`super::ggml::mxfp4_plain`].
pub fn mxfp4(src: &[u8], dst: &mut [f32]) {
    let fp4 = levels(super::ggml::FP4_DOUBLED);
    for (b, y) in src.as_chunks::<17>().0.iter().zip(dst.as_chunks_mut::<32>().0) {
        nibbles32(b, 1, y, 0, fp4, f32x4_splat(super::ggml::e8m0_half(b[0])));
    }
}

/// NVFP4: `fp4 · d` per 16 values, `d` an unsigned E4M3 scale, as [`super::ggml::nvfp4_plain`]
/// (a product, so in either order).
pub fn nvfp4(src: &[u8], dst: &mut [f32]) {
    let (fp4, low4) = (levels(super::ggml::FP4_DOUBLED), u8x16_splat(0x0f));
    for (b, y) in src.as_chunks::<36>().0.iter().zip(dst.as_chunks_mut::<64>().0) {
        for pair in 0..2 {
            // Sub-blocks 2·pair and 2·pair + 1: eight bytes each, low nibbles first.
            let q = bytes16(b, 4 + 16 * pair);
            let (lo, hi) = (v128_and(q, low4), u8x16_shr(q, 4));
            let first = i8x16_shuffle::<0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23>(lo, hi);
            let second = i8x16_shuffle::<8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31>(lo, hi);
            for (k, codes) in [first, second].into_iter().enumerate() {
                let s = 2 * pair + k;
                put16(y, 16 * s, i8x16_swizzle(fp4, codes), f32x4_splat(super::ggml::ue4m3_half(b[s])));
            }
        }
    }
}

/// IQ4_NL: `d · level` per 32 values, as [`super::iquants::iq4_nl_plain`].
pub fn iq4_nl(src: &[u8], dst: &mut [f32]) {
    let iq4 = levels(super::iq_tables::KVALUES_IQ4NL);
    for (b, y) in src.as_chunks::<18>().0.iter().zip(dst.as_chunks_mut::<32>().0) {
        nibbles32(b, 2, y, 0, iq4, f32x4_splat(f16_le(b)));
    }
}

/// IQ4_XS: `d · (scale − 32) · level` per 32 values, as [`super::iquants::iq4_xs_plain`].
pub fn iq4_xs(src: &[u8], dst: &mut [f32]) {
    let iq4 = levels(super::iq_tables::KVALUES_IQ4NL);
    for (b, y) in src.as_chunks::<136>().0.iter().zip(dst.as_chunks_mut::<256>().0) {
        let d = f16_le(b);
        for ib in 0..8 {
            let dl = super::iquants::iq4_xs_scale(b, d, ib);
            nibbles32(b, 8 + 16 * ib, y, 32 * ib, iq4, f32x4_splat(dl));
        }
    }
}

/// Q8_0: `q · d` per 32 values, as [`super::ggml::q8_0_plain`] (a product, so in either order).
pub fn q8_0(src: &[u8], dst: &mut [f32]) {
    q8::<34, 2>(src, dst)
}

/// Q8_1: as Q8_0 with a sum after `d`, as [`super::ggml::q8_1_plain`].
pub fn q8_1(src: &[u8], dst: &mut [f32]) {
    q8::<36, 4>(src, dst)
}

/// F16 to `f32`, as [`super::ggml::f16_plain`] converts (exact; a NaN quietened, its payload
/// kept), eight values at a time.
pub fn f16(src: &[u8], dst: &mut [f32]) {
    let (groups, outs) = (src.as_chunks::<16>().0, dst.as_chunks_mut::<8>().0);
    let whole = groups.len().min(outs.len());
    for (b, y) in groups.iter().zip(outs.iter_mut()) {
        let h = bytes16(b, 0);
        put8(y, f16x4(u32x4_extend_low_u16x8(h)), f16x4(u32x4_extend_high_u16x8(h)));
    }
    for (b, out) in src[16 * whole..].chunks_exact(2).zip(dst[8 * whole..].iter_mut()) {
        *out = f16_le(b);
    }
}

/// Four f16 bit patterns (one per 32-bit lane) as `f32`: exponent and mantissa moved into
/// place and scaled by 2¹¹² (exact for normals and subnormals alike); infinities and NaNs get
/// the all-ones exponent, a NaN its quiet bit; then the sign.
#[inline(always)]
fn f16x4(x: v128) -> v128 {
    let em = v128_and(x, u32x4_splat(0x7fff));
    let sign = i32x4_shl(v128_and(x, u32x4_splat(0x8000)), 16);
    let moved = i32x4_shl(em, 13);
    let scaled = f32x4_mul(moved, f32x4_splat(f32::from_bits(0x7780_0000)));
    let nan_bit = v128_and(u32x4_gt(em, u32x4_splat(0x7c00)), u32x4_splat(0x0040_0000));
    let special = v128_or(v128_or(moved, u32x4_splat(0x7f80_0000)), nan_bit);
    v128_or(v128_bitselect(special, scaled, u32x4_ge(em, u32x4_splat(0x7c00))), sign)
}

/// TQ2_0: 2-bit ternary `(q − 1) · d`, as [`super::ggml::tq2_0_plain`].
pub fn tq2_0(src: &[u8], dst: &mut [f32]) {
    let (three, one) = (u8x16_splat(3), i8x16_splat(1));
    for (b, y) in src.as_chunks::<66>().0.iter().zip(dst.as_chunks_mut::<256>().0) {
        let d = f32x4_splat(f16_le(&b[64..]));
        for half in 0..2 {
            let (q0, q1) = (bytes16(b, 32 * half), bytes16(b, 32 * half + 16));
            for l in 0..4u32 {
                let at = half * 128 + l as usize * 32;
                put16(y, at, i8x16_sub(v128_and(u8x16_shr(q0, 2 * l), three), one), d);
                put16(y, at + 16, i8x16_sub(v128_and(u8x16_shr(q1, 2 * l), three), one), d);
            }
        }
    }
}

/// TQ1_0: five trits per `qs` byte, four per `qh` byte, `(t − 1) · d`, as
/// [`super::ggml::tq1_0_plain`].
pub fn tq1_0(src: &[u8], dst: &mut [f32]) {
    const POW3: [i16; 5] = [1, 3, 9, 27, 81];
    for (b, y) in src.as_chunks::<54>().0.iter().zip(dst.as_chunks_mut::<256>().0) {
        let d = f16_le(&b[52..]);
        let dv = f32x4_splat(d);
        let (q0, q1, q2) = (bytes16(b, 0), bytes16(b, 16), bytes16(b, 32));
        for (n, &pow) in POW3.iter().enumerate() {
            put16(y, 32 * n, trits16(q0, pow), dv);
            put16(y, 32 * n + 16, trits16(q1, pow), dv);
            put16(y, 160 + 16 * n, trits16(q2, pow), dv);
        }
        for n in 0..4 {
            for (i, &q) in b[48..52].iter().enumerate() {
                y[240 + 4 * n + i] = (super::ggml::trit(q, n) - 1) as f32 * d;
            }
        }
    }
}

/// The trit that multiplier `pow` (3ⁿ) selects from each of sixteen base-3 packed bytes, less
/// one, as sixteen signed bytes: ggml's `((q·3ⁿ mod 256)·3) >> 8 − 1`.
#[inline(always)]
fn trits16(q: v128, pow: i16) -> v128 {
    let (lo, hi) = (trits8(u16x8_extend_low_u8x16(q), pow), trits8(u16x8_extend_high_u8x16(q), pow));
    i8x16_sub(u8x16_narrow_i16x8(lo, hi), i8x16_splat(1))
}

/// [`trits16`] on eight bytes widened to 16 bits.
#[inline(always)]
fn trits8(q: v128, pow: i16) -> v128 {
    let m = v128_and(i16x8_mul(q, i16x8_splat(pow)), i16x8_splat(0xff));
    u16x8_shr(i16x8_mul(m, i16x8_splat(3)), 8)
}

/// Blocks of `BYTES` led by an f16 `d`, their 32 `i8` quants at byte `QS`: `q · d`.
#[inline(always)]
fn q8<const BYTES: usize, const QS: usize>(src: &[u8], dst: &mut [f32]) {
    for (b, y) in src.as_chunks::<BYTES>().0.iter().zip(dst.as_chunks_mut::<32>().0) {
        let d = f32x4_splat(f16_le(b));
        put16(y, 0, bytes16(b, QS), d);
        put16(y, 16, bytes16(b, QS + 16), d);
    }
}

/// Q4_1: `q · d + m` per 32 values, as [`super::ggml::q4_1_plain`].
pub fn q4_1(src: &[u8], dst: &mut [f32]) {
    let low4 = u8x16_splat(0x0f);
    for (b, y) in src.as_chunks::<20>().0.iter().zip(dst.as_chunks_mut::<32>().0) {
        let (d, m) = (f32x4_splat(f16_le(b)), f32x4_splat(f16_le(&b[2..])));
        let q = bytes16(b, 4);
        put16_plus(y, 0, v128_and(q, low4), d, m);
        put16_plus(y, 16, u8x16_shr(q, 4), d, m);
    }
}

/// The fifth bits of a Q5 block's elements `0..16` and `16..32`, worth 16 each, from its
/// little-endian 32-bit `qh` at `b[at..at + 4]`: bit `j` of `qh` belongs to element `j`.
#[inline(always)]
fn q5_high<const B: usize>(b: &[u8; B], at: usize) -> (v128, v128) {
    let qh = u32x4_splat(u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]));
    // Lane j of the first vector holds qh's byte j / 8, of the second byte 2 + j / 8.
    let low = u8x16_swizzle(qh, u8x16(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1));
    let high = u8x16_swizzle(qh, u8x16(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
    let bit = u8x16(1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128);
    let sixteen = u8x16_splat(16);
    let set = |v: v128| v128_and(v128_not(i8x16_eq(v128_and(v, bit), u8x16_splat(0))), sixteen);
    (set(low), set(high))
}

/// Q5_0: `(q − 16) · d` per 32 values, `q` a nibble and a fifth bit, as
/// [`super::ggml::q5_0_plain`] (a product, so in either order).
pub fn q5_0(src: &[u8], dst: &mut [f32]) {
    let (low4, sixteen) = (u8x16_splat(0x0f), i8x16_splat(16));
    for (b, y) in src.as_chunks::<22>().0.iter().zip(dst.as_chunks_mut::<32>().0) {
        let d = f32x4_splat(f16_le(b));
        let (h0, h1) = q5_high(b, 2);
        let q = bytes16(b, 6);
        put16(y, 0, i8x16_sub(v128_or(v128_and(q, low4), h0), sixteen), d);
        put16(y, 16, i8x16_sub(v128_or(u8x16_shr(q, 4), h1), sixteen), d);
    }
}

/// Q5_1: `q · d + m` per 32 values, `q` a nibble and a fifth bit, as [`super::ggml::q5_1_plain`].
pub fn q5_1(src: &[u8], dst: &mut [f32]) {
    let low4 = u8x16_splat(0x0f);
    for (b, y) in src.as_chunks::<24>().0.iter().zip(dst.as_chunks_mut::<32>().0) {
        let (d, m) = (f32x4_splat(f16_le(b)), f32x4_splat(f16_le(&b[2..])));
        let (h0, h1) = q5_high(b, 4);
        let q = bytes16(b, 8);
        put16_plus(y, 0, v128_or(v128_and(q, low4), h0), d, m);
        put16_plus(y, 16, v128_or(u8x16_shr(q, 4), h1), d, m);
    }
}

/// Q4_K: `(d·sc) q − dmin·m` per 32 values, as [`super::ggml::q4_k_plain`].
pub fn q4_k(src: &[u8], dst: &mut [f32]) {
    let low4 = u8x16_splat(0x0f);
    for (b, y) in src.as_chunks::<144>().0.iter().zip(dst.as_chunks_mut::<256>().0) {
        let (d, min) = (f16_le(b), f16_le(&b[2..]));
        let sc = &b[4..16];
        for chunk in 0..4 {
            let [(d1, m1), (d2, m2)] = super::ggml::k_chunk_scales(d, min, sc, chunk);
            let (d1, m1, d2, m2) = (f32x4_splat(d1), f32x4_splat(m1), f32x4_splat(d2), f32x4_splat(m2));
            for part in 0..2 {
                let q = bytes16(b, 16 + chunk * 32 + part * 16);
                put16_less(y, chunk * 64 + part * 16, v128_and(q, low4), d1, m1);
                put16_less(y, chunk * 64 + 32 + part * 16, u8x16_shr(q, 4), d2, m2);
            }
        }
    }
}

/// Q2_K: `(d·sc) q − dmin·m` per 16 values, `q` two bits, as [`super::ggml::q2_k_plain`].
pub fn q2_k(src: &[u8], dst: &mut [f32]) {
    let three = u8x16_splat(3);
    for (b, y) in src.as_chunks::<84>().0.iter().zip(dst.as_chunks_mut::<256>().0) {
        let (d, min) = (f16_le(&b[80..]), f16_le(&b[82..]));
        let mut is = 0;
        for half in 0..2 {
            for (j, shift) in [0u32, 2, 4, 6].into_iter().enumerate() {
                for part in 0..2 {
                    let s = b[is];
                    is += 1;
                    let (dl, ml) = (f32x4_splat(d * (s & 0x0f) as f32), f32x4_splat(min * (s >> 4) as f32));
                    let q = v128_and(u8x16_shr(bytes16(b, 16 + half * 32 + part * 16), shift), three);
                    put16_less(y, half * 128 + j * 32 + part * 16, q, dl, ml);
                }
            }
        }
    }
}

/// Q3_K: `(d·(sc − 32)) q` per 16 values, `q` two low bits less 4 where the high-mask bit is
/// clear, as [`super::ggml::q3_k_plain`] (a product, so in either order).
pub fn q3_k(src: &[u8], dst: &mut [f32]) {
    let (three, four) = (u8x16_splat(3), u8x16_splat(4));
    for (b, y) in src.as_chunks::<110>().0.iter().zip(dst.as_chunks_mut::<256>().0) {
        let sc = super::ggml::q3k_scales(&b[96..108]);
        let d = f16_le(&b[108..]);
        let mut is = 0;
        let mut m = 1u8;
        for half in 0..2 {
            for (j, shift) in [0u32, 2, 4, 6].into_iter().enumerate() {
                for part in 0..2 {
                    let dl = f32x4_splat(d * (i32::from(sc[is]) - 32) as f32);
                    is += 1;
                    let low = v128_and(u8x16_shr(bytes16(b, 32 + half * 32 + part * 16), shift), three);
                    let clear = i8x16_eq(v128_and(bytes16(b, part * 16), u8x16_splat(m)), u8x16_splat(0));
                    put16(y, half * 128 + j * 32 + part * 16, i8x16_sub(low, v128_and(clear, four)), dl);
                }
                m <<= 1;
            }
        }
    }
}

/// Q5_K: `(d·sc) q − dmin·m` per 32 values, `q` a nibble and a high bit, as
/// [`super::ggml::q5_k_plain`].
pub fn q5_k(src: &[u8], dst: &mut [f32]) {
    let (low4, one) = (u8x16_splat(0x0f), u8x16_splat(1));
    for (b, y) in src.as_chunks::<176>().0.iter().zip(dst.as_chunks_mut::<256>().0) {
        let (d, min) = (f16_le(b), f16_le(&b[2..]));
        let sc = &b[4..16];
        for chunk in 0..4 {
            let [(d1, m1), (d2, m2)] = super::ggml::k_chunk_scales(d, min, sc, chunk);
            let (d1, m1, d2, m2) = (f32x4_splat(d1), f32x4_splat(m1), f32x4_splat(d2), f32x4_splat(m2));
            let shift = 2 * chunk as u32;
            for part in 0..2 {
                let q = bytes16(b, 48 + chunk * 32 + part * 16);
                let qh = bytes16(b, 16 + part * 16);
                // The high bit, worth 16: bit 2·chunk of qh for the low nibbles, the next one
                // for the high nibbles.
                let h1 = u8x16_shl(v128_and(u8x16_shr(qh, shift), one), 4);
                let h2 = u8x16_shl(v128_and(u8x16_shr(qh, shift + 1), one), 4);
                put16_less(y, chunk * 64 + part * 16, v128_or(v128_and(q, low4), h1), d1, m1);
                put16_less(y, chunk * 64 + 32 + part * 16, v128_or(u8x16_shr(q, 4), h2), d2, m2);
            }
        }
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
