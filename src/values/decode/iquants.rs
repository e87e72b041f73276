//! Decoders for ggml's i-quants: IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ4_NL
//! and IQ4_XS.
//!
//! Each block is an `f16` scale `d` (IQ1_M spreads it over its sub-scale words), small per-group
//! scales, and indices into the codebooks of [`super::iq_tables`]. Values are computed with the
//! same `f32` operations in the same order as ggml's `dequantize_row_iq*` (and gguf-py), so the
//! results match bit for bit: e.g. IQ2 is `(d * (0.5 + s) * 0.25) * grid * ±1`, never
//! `d * (…)` regrouped.

use super::iq_tables::{
    IQ1S_GRID, IQ2S_GRID, IQ2XS_GRID, IQ2XXS_GRID, IQ3S_GRID, IQ3XXS_GRID, KSIGNS_IQ2XS, KVALUES_IQ4NL,
};
use super::{f16_le, f16s_nonfinite, u16_at, BlockCodec};

/// Elements in a super-block (ggml's `QK_K`).
const QK_K: usize = 256;
/// Elements in an IQ4_NL block (ggml's `QK4_NL`).
const QK4_NL: usize = 32;
/// The offset IQ1_S / IQ1_M add to every grid value before scaling (`IQ1S_DELTA`).
pub(super) const IQ1_DELTA: f32 = 0.125;

pub(super) const IQ1_S_BYTES: usize = 50;
pub(super) const IQ1_M_BYTES: usize = 56;
const IQ2_XXS_BYTES: usize = 66;
const IQ2_XS_BYTES: usize = 74;
const IQ2_S_BYTES: usize = 82;
const IQ3_XXS_BYTES: usize = 98;
const IQ3_S_BYTES: usize = 110;
const IQ4_NL_BYTES: usize = 18;
pub(super) const IQ4_XS_BYTES: usize = 136;

/// IQ1_S (type 19): 1.5625 bits per weight.
pub const IQ1_S: BlockCodec = BlockCodec {
    block_elems: QK_K,
    block_bytes: IQ1_S_BYTES,
    #[cfg(not(target_arch = "wasm32"))]
    decode: widest!(iq1_s_plain),
    #[cfg(target_arch = "wasm32")]
    decode: iq1_s_plain,
    scales: Some(leading_f16_scales::<IQ1_S_BYTES>),
    groups: Some(super::groups::Grouping::Groups(super::groups::iq1_s)),
    nonfinite: Some(iq1_s_nonfinite),
};

/// [`IQ1_S`]'s non-finite values: where its `f16` scale is finite, so are its values.
fn iq1_s_nonfinite(src: &[u8]) -> (u64, u64) {
    super::nonfinite_blocks::<IQ1_S_BYTES, QK_K>(src, IQ1_S.decode, |b| f16s_nonfinite(b, &[0]))
}

/// IQ1_M (type 29): 1.75 bits per weight; `d` is assembled from the top nibbles of the scales.
pub const IQ1_M: BlockCodec = BlockCodec {
    block_elems: QK_K,
    block_bytes: IQ1_M_BYTES,
    #[cfg(not(target_arch = "wasm32"))]
    decode: widest!(iq1_m_plain),
    #[cfg(target_arch = "wasm32")]
    decode: iq1_m_plain,
    scales: Some(|src, out| out.extend(src.as_chunks::<IQ1_M_BYTES>().0.iter().map(iq1_m_scale))),
    groups: Some(super::groups::Grouping::Quads(super::groups::iq1_m)),
    nonfinite: Some(iq1_m_nonfinite),
};

/// [`IQ1_M`]'s non-finite values: where its `f16` scale is finite, so are its values.
fn iq1_m_nonfinite(src: &[u8]) -> (u64, u64) {
    super::nonfinite_blocks::<IQ1_M_BYTES, QK_K>(src, IQ1_M.decode, |b| !iq1_m_scale(b).is_finite())
}

/// IQ2_XXS (type 16): 2.0625 bits per weight.
pub const IQ2_XXS: BlockCodec = BlockCodec {
    block_elems: QK_K,
    block_bytes: IQ2_XXS_BYTES,
    #[cfg(not(target_arch = "wasm32"))]
    decode: widest!(iq2_xxs_plain),
    #[cfg(target_arch = "wasm32")]
    decode: iq2_xxs_plain,
    scales: Some(leading_f16_scales::<IQ2_XXS_BYTES>),
    groups: None,
    nonfinite: Some(iq2_xxs_nonfinite),
};

/// [`IQ2_XXS`]'s non-finite values: where its `f16` scale is finite, so are its values.
fn iq2_xxs_nonfinite(src: &[u8]) -> (u64, u64) {
    super::nonfinite_blocks::<IQ2_XXS_BYTES, QK_K>(src, IQ2_XXS.decode, |b| f16s_nonfinite(b, &[0]))
}

/// IQ2_XS (type 17): 2.3125 bits per weight.
pub const IQ2_XS: BlockCodec = BlockCodec {
    block_elems: QK_K,
    block_bytes: IQ2_XS_BYTES,
    #[cfg(not(target_arch = "wasm32"))]
    decode: widest!(iq2_xs_plain),
    #[cfg(target_arch = "wasm32")]
    decode: iq2_xs_plain,
    scales: Some(leading_f16_scales::<IQ2_XS_BYTES>),
    groups: None,
    nonfinite: Some(iq2_xs_nonfinite),
};

/// [`IQ2_XS`]'s non-finite values: where its `f16` scale is finite, so are its values.
fn iq2_xs_nonfinite(src: &[u8]) -> (u64, u64) {
    super::nonfinite_blocks::<IQ2_XS_BYTES, QK_K>(src, IQ2_XS.decode, |b| f16s_nonfinite(b, &[0]))
}

/// IQ2_S (type 22): 2.5625 bits per weight.
pub const IQ2_S: BlockCodec = BlockCodec {
    block_elems: QK_K,
    block_bytes: IQ2_S_BYTES,
    #[cfg(not(target_arch = "wasm32"))]
    decode: widest!(iq2_s_plain),
    #[cfg(target_arch = "wasm32")]
    decode: iq2_s_plain,
    scales: Some(leading_f16_scales::<IQ2_S_BYTES>),
    groups: None,
    nonfinite: Some(iq2_s_nonfinite),
};

/// [`IQ2_S`]'s non-finite values: where its `f16` scale is finite, so are its values.
fn iq2_s_nonfinite(src: &[u8]) -> (u64, u64) {
    super::nonfinite_blocks::<IQ2_S_BYTES, QK_K>(src, IQ2_S.decode, |b| f16s_nonfinite(b, &[0]))
}

/// IQ3_XXS (type 18): 3.0625 bits per weight.
pub const IQ3_XXS: BlockCodec = BlockCodec {
    block_elems: QK_K,
    block_bytes: IQ3_XXS_BYTES,
    #[cfg(not(target_arch = "wasm32"))]
    decode: widest!(iq3_xxs_plain),
    #[cfg(target_arch = "wasm32")]
    decode: iq3_xxs_plain,
    scales: Some(leading_f16_scales::<IQ3_XXS_BYTES>),
    groups: None,
    nonfinite: Some(iq3_xxs_nonfinite),
};

/// [`IQ3_XXS`]'s non-finite values: where its `f16` scale is finite, so are its values.
fn iq3_xxs_nonfinite(src: &[u8]) -> (u64, u64) {
    super::nonfinite_blocks::<IQ3_XXS_BYTES, QK_K>(src, IQ3_XXS.decode, |b| f16s_nonfinite(b, &[0]))
}

/// IQ3_S (type 21): 3.4375 bits per weight.
pub const IQ3_S: BlockCodec = BlockCodec {
    block_elems: QK_K,
    block_bytes: IQ3_S_BYTES,
    #[cfg(not(target_arch = "wasm32"))]
    decode: widest!(iq3_s_plain),
    #[cfg(target_arch = "wasm32")]
    decode: iq3_s_plain,
    scales: Some(leading_f16_scales::<IQ3_S_BYTES>),
    groups: None,
    nonfinite: Some(iq3_s_nonfinite),
};

/// [`IQ3_S`]'s non-finite values: where its `f16` scale is finite, so are its values.
fn iq3_s_nonfinite(src: &[u8]) -> (u64, u64) {
    super::nonfinite_blocks::<IQ3_S_BYTES, QK_K>(src, IQ3_S.decode, |b| f16s_nonfinite(b, &[0]))
}

/// IQ4_NL (type 20): 32 values on the non-linear 4-bit grid with one `f16` scale.
pub const IQ4_NL: BlockCodec = BlockCodec {
    block_elems: QK4_NL,
    block_bytes: IQ4_NL_BYTES,
    #[cfg(not(any(target_arch = "wasm32", all(target_arch = "aarch64", target_feature = "neon"))))]
    decode: widest!(iq4_nl_plain),
    #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
    decode: super::neon::iq4_nl,
    #[cfg(target_arch = "wasm32")]
    decode: super::wasm_simd::iq4_nl,
    scales: Some(leading_f16_scales::<IQ4_NL_BYTES>),
    groups: Some(super::groups::Grouping::ByScale {
        merged: super::groups::iq4_nl,
        groups: super::groups::iq4_nl_groups,
    }),
    nonfinite: Some(iq4_nl_nonfinite),
};

/// [`IQ4_NL`]'s non-finite values: where its `f16` scale is finite, so are its values.
fn iq4_nl_nonfinite(src: &[u8]) -> (u64, u64) {
    super::nonfinite_blocks::<IQ4_NL_BYTES, QK4_NL>(src, IQ4_NL.decode, |b| f16s_nonfinite(b, &[0]))
}

/// IQ4_XS (type 23): IQ4_NL's grid in super-blocks with 6-bit sub-block scales.
pub const IQ4_XS: BlockCodec = BlockCodec {
    block_elems: QK_K,
    block_bytes: IQ4_XS_BYTES,
    #[cfg(not(any(target_arch = "wasm32", all(target_arch = "aarch64", target_feature = "neon"))))]
    decode: widest!(iq4_xs_plain),
    #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
    decode: super::neon::iq4_xs,
    #[cfg(target_arch = "wasm32")]
    decode: super::wasm_simd::iq4_xs,
    scales: Some(leading_f16_scales::<IQ4_XS_BYTES>),
    groups: Some(super::groups::Grouping::Groups(super::groups::iq4_xs)),
    nonfinite: Some(iq4_xs_nonfinite),
};

/// [`IQ4_XS`]'s non-finite values: where its `f16` scale is finite, so are its values.
fn iq4_xs_nonfinite(src: &[u8]) -> (u64, u64) {
    super::nonfinite_blocks::<IQ4_XS_BYTES, QK_K>(src, IQ4_XS.decode, |b| f16s_nonfinite(b, &[0]))
}

/// The portable decoder `$name` of blocks decoded by `$block`, compiled again for the widest
/// vectors natively ([`widest!`]).
macro_rules! plain {
    ($($name:ident = $block:ident),* $(,)?) => {$(
        #[inline(always)]
        fn $name(src: &[u8], dst: &mut [f32]) {
            each_block(src, dst, $block)
        }
    )*};
}

plain!(
    iq1_s_plain = iq1_s_block,
    iq1_m_plain = iq1_m_block,
    iq2_xxs_plain = iq2_xxs_block,
    iq2_xs_plain = iq2_xs_block,
    iq2_s_plain = iq2_s_block,
    iq3_xxs_plain = iq3_xxs_block,
    iq3_s_plain = iq3_s_block,
);

/// [`IQ4_NL`]'s decoder, portable (the wasm bundle runs its vector twin).
#[inline(always)]
pub fn iq4_nl_plain(src: &[u8], dst: &mut [f32]) {
    each_block(src, dst, iq4_nl_block)
}

/// [`IQ4_XS`]'s decoder, portable (the wasm bundle runs its vector twin).
#[inline(always)]
pub fn iq4_xs_plain(src: &[u8], dst: &mut [f32]) {
    each_block(src, dst, iq4_xs_block)
}

/// Run `block` over every whole block of `src` and its `E` outputs in `dst`. A trailing partial
/// block or missing output space is skipped, never a panic.
#[inline(always)]
fn each_block<const B: usize, const E: usize>(src: &[u8], dst: &mut [f32], block: fn(&[u8; B], &mut [f32; E])) {
    for (b, y) in src.as_chunks::<B>().0.iter().zip(dst.as_chunks_mut::<E>().0) {
        block(b, y);
    }
}

/// Append the `f16` `d` stored in the first two bytes of every block.
fn leading_f16_scales<const B: usize>(src: &[u8], out: &mut Vec<f32>) {
    out.extend(src.as_chunks::<B>().0.iter().map(|b| f16_le(b)));
}

#[inline(always)]
fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

/// `y[j] = db * grid[j] * ±1` for the eight unsigned bytes of `grid` (little-endian), negative
/// where bit `j` of `signs` is set: the shared IQ2/IQ3 step (negating is exactly the product by
/// −1). The wasm bundle runs its vector twin.
#[inline(always)]
fn put_signed(y: &mut [f32; 8], db: f32, grid: u64, signs: u8) {
    #[cfg(target_arch = "wasm32")]
    super::wasm_simd::put8_signed(y, db, grid, signs);
    #[cfg(not(target_arch = "wasm32"))]
    for (j, (y, g)) in y.iter_mut().zip(grid.to_le_bytes()).enumerate() {
        let v = db * f32::from(g);
        *y = if signs >> j & 1 == 1 { -v } else { v };
    }
}

/// `y[j] = dl * (grid[j] + delta)` for a row of the signed IQ1 grid.
/// (The wasm bundle runs its vector twin.)
#[inline(always)]
fn put_iq1(y: &mut [f32; 8], dl: f32, delta: f32, row: u64) {
    #[cfg(target_arch = "wasm32")]
    super::wasm_simd::put8_iq1(y, dl, delta, row);
    #[cfg(not(target_arch = "wasm32"))]
    for (y, g) in y.iter_mut().zip(row.to_le_bytes()) {
        *y = dl * (f32::from(g as i8) + delta);
    }
}

/// Two 4-value IQ3 grid rows side by side as one row of 8.
#[inline(always)]
fn iq3_pair(grid: &[u32], a: usize, b: usize) -> u64 {
    u64::from(grid[a]) | u64::from(grid[b]) << 32
}

/// The 4-bit scale of 16-value group `k` (0..16) from bytes holding two nibbles each, low first.
#[inline(always)]
fn nibble(scales: &[u8], k: usize) -> u8 {
    scales[k / 2] >> (4 * (k % 2)) & 0xF
}

/// IQ2_XXS: `d`, then per 32 values two u32: four 8-bit grid indices, and four 7-bit sign
/// indices with a 4-bit scale on top. `db = d * (0.5 + scale) * 0.25`.
#[inline(always)]
fn iq2_xxs_block(b: &[u8; IQ2_XXS_BYTES], y: &mut [f32; QK_K]) {
    let d = f16_le(b);
    for (q, y) in b[2..].chunks_exact(8).zip(y.as_chunks_mut::<32>().0.iter_mut()) {
        let aux = u32_at(q, 4);
        let db = d * (0.5 + (aux >> 28) as f32) * 0.25;
        for (l, y) in y.as_chunks_mut::<8>().0.iter_mut().enumerate() {
            let signs = KSIGNS_IQ2XS[(aux >> (7 * l) & 0x7F) as usize];
            put_signed(y, db, IQ2XXS_GRID[usize::from(q[l])], signs);
        }
    }
}

/// IQ2_XS: `d`, 32 u16 (9-bit grid index, 7-bit sign index), 16 4-bit scales (one per 16 values).
#[inline(always)]
fn iq2_xs_block(b: &[u8; IQ2_XS_BYTES], y: &mut [f32; QK_K]) {
    let d = f16_le(b);
    let (qs, scales) = (&b[2..66], &b[66..74]);
    for (k, y) in y.as_chunks_mut::<8>().0.iter_mut().enumerate() {
        let q = u16_at(qs, 2 * k);
        let db = d * (0.5 + f32::from(nibble(scales, k / 2))) * 0.25;
        put_signed(y, db, IQ2XS_GRID[usize::from(q & 0x1FF)], KSIGNS_IQ2XS[usize::from(q >> 9)]);
    }
}

/// IQ2_S: `d`, 32 low index bytes, 32 sign bytes, 8 bytes of 2-bit high index parts, 16 4-bit
/// scales (one per 16 values).
#[inline(always)]
fn iq2_s_block(b: &[u8; IQ2_S_BYTES], y: &mut [f32; QK_K]) {
    let d = f16_le(b);
    let (qs, signs, qh, scales) = (&b[2..34], &b[34..66], &b[66..74], &b[74..82]);
    for (k, y) in y.as_chunks_mut::<8>().0.iter_mut().enumerate() {
        let db = d * (0.5 + f32::from(nibble(scales, k / 2))) * 0.25;
        let index = usize::from(qs[k]) | usize::from(qh[k / 4] >> (2 * (k % 4)) & 3) << 8;
        put_signed(y, db, IQ2S_GRID[index], signs[k]);
    }
}

/// IQ3_XXS: `d`, 64 grid indices (4 values each), then per 32 values a u32 of four 7-bit sign
/// indices with a 4-bit scale on top. `db = d * (0.5 + scale) * 0.5`.
#[inline(always)]
fn iq3_xxs_block(b: &[u8; IQ3_XXS_BYTES], y: &mut [f32; QK_K]) {
    let d = f16_le(b);
    let (qs, scales_and_signs) = (&b[2..66], &b[66..98]);
    for ((q, s), y) in
        qs.chunks_exact(8).zip(scales_and_signs.chunks_exact(4)).zip(y.as_chunks_mut::<32>().0.iter_mut())
    {
        let aux = u32_at(s, 0);
        let db = d * (0.5 + (aux >> 28) as f32) * 0.5;
        for (l, y) in y.as_chunks_mut::<8>().0.iter_mut().enumerate() {
            let signs = KSIGNS_IQ2XS[(aux >> (7 * l) & 0x7F) as usize];
            let grid = iq3_pair(&IQ3XXS_GRID, usize::from(q[2 * l]), usize::from(q[2 * l + 1]));
            put_signed(y, db, grid, signs);
        }
    }
}

/// IQ3_S: `d`, 64 low index bytes, 64 high index bits, 256 sign bits, 8 4-bit scales (one per 32
/// values). `db = d * (1 + 2 * scale)`.
// Not inlined: compiled for AVX-512 inside its decoder it measured 0.8x as fast.
fn iq3_s_block(b: &[u8; IQ3_S_BYTES], y: &mut [f32; QK_K]) {
    let d = f16_le(b);
    let (qs, qh, signs, scales) = (&b[2..66], &b[66..74], &b[74..106], &b[106..110]);
    let index = |i: usize| usize::from(qs[i]) | usize::from(qh[i / 8] >> (i % 8) & 1) << 8;
    for (ib, y) in y.as_chunks_mut::<32>().0.iter_mut().enumerate() {
        let db = d * f32::from(1 + 2 * nibble(scales, ib));
        for (l, y) in y.as_chunks_mut::<8>().0.iter_mut().enumerate() {
            let k = 4 * ib + l;
            put_signed(y, db, iq3_pair(&IQ3S_GRID, index(2 * k), index(2 * k + 1)), signs[k]);
        }
    }
}

/// IQ1_S: `d`, 32 low index bytes, then per 32 values a u16: four 3-bit high index parts, a 3-bit
/// scale and the sign of the delta. `dl = d * (2 * scale + 1)`, `y = dl * (grid ± 0.125)`.
#[inline(always)]
fn iq1_s_block(b: &[u8; IQ1_S_BYTES], y: &mut [f32; QK_K]) {
    let d = f16_le(b);
    let (qs, qh) = (&b[2..34], &b[34..50]);
    for (ib, y) in y.as_chunks_mut::<32>().0.iter_mut().enumerate() {
        let h = u16_at(qh, 2 * ib);
        let dl = d * f32::from(2 * (h >> 12 & 7) + 1);
        let delta = if h & 0x8000 != 0 { -IQ1_DELTA } else { IQ1_DELTA };
        for (l, y) in y.as_chunks_mut::<8>().0.iter_mut().enumerate() {
            let index = usize::from(qs[4 * ib + l]) | usize::from(h >> (3 * l) & 7) << 8;
            put_iq1(y, dl, delta, IQ1S_GRID[index]);
        }
    }
}

/// IQ1_M's `d`: an `f16` whose four nibbles are the top nibbles of the four u16 scale words.
pub(super) fn iq1_m_scale(b: &[u8; IQ1_M_BYTES]) -> f32 {
    let sc = |k: usize| u16_at(b, 48 + 2 * k);
    let bits = sc(0) >> 12 | (sc(1) >> 8 & 0x00F0) | (sc(2) >> 4 & 0x0F00) | (sc(3) & 0xF000);
    f16_le(&bits.to_le_bytes())
}

/// IQ1_M: 32 low index bytes, 32 nibbles (3-bit high index part, delta sign), four u16 of 3-bit
/// scales (one per 16 values) whose top nibbles form `d`. `y = d * (2 * scale + 1) * (grid ± 0.125)`.
#[inline(always)]
fn iq1_m_block(b: &[u8; IQ1_M_BYTES], y: &mut [f32; QK_K]) {
    let d = iq1_m_scale(b);
    let (qs, qh) = (&b[0..32], &b[32..48]);
    for (k, y) in y.as_chunks_mut::<8>().0.iter_mut().enumerate() {
        let s = k / 2;
        let scale = u16_at(b, 48 + 2 * (s / 4)) >> (3 * (s % 4)) & 7;
        let dl = d * f32::from(2 * scale + 1);
        let h = qh[k / 2] >> (4 * (k % 2));
        let delta = if h & 0x08 != 0 { -IQ1_DELTA } else { IQ1_DELTA };
        put_iq1(y, dl, delta, IQ1S_GRID[usize::from(qs[k]) | usize::from(h & 7) << 8]);
    }
}

/// The IQ4_NL level for a 4-bit code.
fn iq4_level(code: u8) -> f32 {
    f32::from(KVALUES_IQ4NL[usize::from(code & 0xF)])
}

/// The 32 values of 16 bytes of IQ4 codes at scale `d`: low nibbles to `lo`, high to `hi`. Each
/// of the 16 levels is scaled once (`d · level`, the same product as value by value) and the
/// values looked up.
#[inline(always)]
fn iq4_values(d: f32, q: &[u8], lo: &mut [f32], hi: &mut [f32]) {
    let scaled: [f32; 16] = std::array::from_fn(|i| d * iq4_level(i as u8));
    for ((&q, lo), hi) in q.iter().zip(lo).zip(hi) {
        *lo = scaled[usize::from(q & 0xF)];
        *hi = scaled[usize::from(q >> 4)];
    }
}

/// IQ4_NL: `d`, 16 bytes; value `j` is the low nibble of byte `j`, value `j + 16` the high one.
fn iq4_nl_block(b: &[u8; IQ4_NL_BYTES], y: &mut [f32; QK4_NL]) {
    let (lo, hi) = y.split_at_mut(QK4_NL / 2);
    iq4_values(f16_le(b), &b[2..], lo, hi);
}

/// IQ4_XS: `d`, a u16 of 2-bit high scale parts, 4 bytes of 4-bit low scale parts, then per 32
/// values 16 bytes laid out like IQ4_NL. `dl = d * (scale - 32)`.
fn iq4_xs_block(b: &[u8; IQ4_XS_BYTES], y: &mut [f32; QK_K]) {
    let d = f16_le(b);
    for (ib, (q, y)) in b[8..].chunks_exact(16).zip(y.as_chunks_mut::<32>().0.iter_mut()).enumerate() {
        let (lo, hi) = y.split_at_mut(16);
        iq4_values(iq4_xs_scale(b, d, ib), q, lo, hi);
    }
}

/// `dl = d · (scale − 32)` of sub-block `ib` (0..8) of IQ4_XS block `b`: its 6-bit scale is a
/// nibble of `scales_l` (bytes 4..8) and two bits of the u16 `scales_h` (bytes 2..4).
#[inline(always)]
pub(super) fn iq4_xs_scale(b: &[u8; IQ4_XS_BYTES], d: f32, ib: usize) -> f32 {
    let high = (u16_at(b, 2) >> (2 * ib) & 3) as u8;
    let scale = nibble(&b[4..8], ib) | high << 4;
    d * f32::from(i16::from(scale) - 32)
}
