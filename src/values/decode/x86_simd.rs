//! Native x86 twins of decoders whose table lookups the compiler leaves scalar: the same `f32`
//! operations as the portable decoders, so the same bits (`tests` holds them to it).

use core::arch::x86_64::*;

use super::f16_le;
use super::ggml::{nvfp4_plain, q4_0_plain, q4_1_plain, ue4m3_half, FP4_DOUBLED};

/// Runs `$avx2` where the CPU has AVX2, else the portable `$plain`.
macro_rules! with_avx2 {
    ($(#[$doc:meta])* $name:ident = $avx2:ident or $plain:ident) => {
        $(#[$doc])*
        pub fn $name(src: &[u8], dst: &mut [f32]) {
            if is_x86_feature_detected!("avx2") {
                // SAFETY: detected just now.
                unsafe { $avx2(src, dst) }
            } else {
                $plain(src, dst)
            }
        }
    };
}

with_avx2!(
    /// Q4_0 ([`q4_0_plain`]): with the scale converted inline, the compiler vectorised the
    /// portable decoder across blocks, which took twice as long as this.
    q4_0 = q4_0_avx2 or q4_0_plain
);
with_avx2!(
    /// Q4_1 ([`q4_1_plain`]), as [`q4_0`].
    q4_1 = q4_1_avx2 or q4_1_plain
);

/// The levels of 16 code bytes' nibbles looked up in `levels` (16 `i8`s), as `f32`: values
/// `0..16` are the low nibbles, `16..32` the high ones.
#[target_feature(enable = "avx2")]
#[inline]
fn nibble_levels(levels: __m128i, q: __m128i) -> [__m256; 4] {
    let low4 = _mm_set1_epi8(0x0f);
    let (lo, hi) = (_mm_and_si128(q, low4), _mm_and_si128(_mm_srli_epi16::<4>(q), low4));
    let (lo, hi) = (_mm_shuffle_epi8(levels, lo), _mm_shuffle_epi8(levels, hi));
    [widen(lo), widen(_mm_srli_si128::<8>(lo)), widen(hi), widen(_mm_srli_si128::<8>(hi))]
}

/// Eight `i8`s, the low half of `v`, as `f32`.
#[target_feature(enable = "avx2")]
#[inline]
fn widen(v: __m128i) -> __m256 {
    _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v))
}

/// Store `v` (32 values) to `y`.
#[target_feature(enable = "avx2")]
#[inline]
fn store32(y: &mut [f32; 32], v: [__m256; 4]) {
    for (k, v) in v.into_iter().enumerate() {
        // SAFETY: values `8k..8k + 8` of 32.
        unsafe { _mm256_storeu_ps(y.as_mut_ptr().add(8 * k), v) };
    }
}

/// `(q − 8) · d` per 32 values.
#[target_feature(enable = "avx2")]
fn q4_0_avx2(src: &[u8], dst: &mut [f32]) {
    let levels = _mm_setr_epi8(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7);
    for (b, y) in src.as_chunks::<18>().0.iter().zip(dst.as_chunks_mut::<32>().0) {
        let d = _mm256_set1_ps(f16_le(b));
        // SAFETY: bytes 2..18 of the block.
        let q = unsafe { _mm_loadu_si128(b.as_ptr().add(2).cast()) };
        let mut v = nibble_levels(levels, q);
        for v in &mut v {
            *v = _mm256_mul_ps(*v, d);
        }
        store32(y, v);
    }
}

/// `q · d + m` per 32 values.
#[target_feature(enable = "avx2")]
fn q4_1_avx2(src: &[u8], dst: &mut [f32]) {
    let levels = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (b, y) in src.as_chunks::<20>().0.iter().zip(dst.as_chunks_mut::<32>().0) {
        let (d, m) = (_mm256_set1_ps(f16_le(b)), _mm256_set1_ps(f16_le(&b[2..])));
        // SAFETY: bytes 4..20 of the block.
        let q = unsafe { _mm_loadu_si128(b.as_ptr().add(4).cast()) };
        let mut v = nibble_levels(levels, q);
        for v in &mut v {
            *v = _mm256_add_ps(_mm256_mul_ps(*v, d), m);
        }
        store32(y, v);
    }
}

with_avx2!(
    /// NVFP4 ([`nvfp4_plain`]): each sixteen codes' levels looked up by one byte shuffle.
    nvfp4 = nvfp4_avx2 or nvfp4_plain
);

#[target_feature(enable = "avx2")]
fn nvfp4_avx2(src: &[u8], dst: &mut [f32]) {
    // SAFETY: a 16-byte load from a 16-byte array.
    let levels = unsafe { _mm_loadu_si128(FP4_DOUBLED.as_ptr().cast()) };
    let low4 = _mm_set1_epi8(0x0f);
    for (b, y) in src.as_chunks::<36>().0.iter().zip(dst.as_chunks_mut::<64>().0) {
        for s in 0..4 {
            let d = _mm256_set1_ps(ue4m3_half(b[s]));
            // SAFETY: sub-block `s`'s eight code bytes, `b[4 + 8s..12 + 8s]`, are in the block.
            let q = unsafe { _mm_loadl_epi64(b.as_ptr().add(4 + 8 * s).cast()) };
            // Low nibbles are values 0..8 of the sub-block, high nibbles 8..16.
            let codes = _mm_unpacklo_epi64(_mm_and_si128(q, low4), _mm_and_si128(_mm_srli_epi16::<4>(q), low4));
            let v = _mm_shuffle_epi8(levels, codes);
            let first = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v));
            let second = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128::<8>(v)));
            // SAFETY: values `16s..16s + 16` are in the block's 64.
            unsafe {
                _mm256_storeu_ps(y.as_mut_ptr().add(16 * s), _mm256_mul_ps(first, d));
                _mm256_storeu_ps(y.as_mut_ptr().add(16 * s + 8), _mm256_mul_ps(second, d));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::random_bytes;

    #[test]
    fn q4_decoders_equal_the_plain_ones_bit_for_bit() {
        assert!(is_x86_feature_detected!("avx2"), "this test wants the AVX2 kernels");
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        type Decode = fn(&[u8], &mut [f32]);
        let cases: [(&str, usize, Decode, Decode); 2] =
            [("Q4_0", 18, q4_0, q4_0_plain), ("Q4_1", 20, q4_1, q4_1_plain)];
        for (name, block, fast, plain) in cases {
            // Whole blocks and a partial one, which neither decodes.
            let bytes = random_bytes(block * 777 + block / 2, &mut seed);
            let n = bytes.len() / block * 32;
            let (mut want, mut got) = (vec![f32::NAN; n], vec![f32::NAN; n]);
            plain(&bytes, &mut want);
            fast(&bytes, &mut got);
            // Bits equal, or both NaN: which of two NaN operands a sum keeps is the compiler's.
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()), "{name} value {i}: {g} vs {w}");
            }
            assert!(want.iter().any(|v| v.is_nan()) && want.iter().any(|&v| v != 0.0 && v.is_finite()), "{name}");
        }
    }

    #[test]
    fn nvfp4_equals_the_plain_decoder_bit_for_bit() {
        // Every scale byte in every slot, codes from a generator, and a partial last block.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut bytes = random_bytes(36 * 256 * 4, &mut seed);
        for (block, b) in bytes.chunks_mut(36).enumerate() {
            b[block % 4] = (block / 4) as u8;
        }
        bytes.extend([7u8; 20]);
        let blocks = bytes.len() / 36;
        let (mut want, mut got) = (vec![f32::NAN; blocks * 64], vec![f32::NAN; blocks * 64]);
        nvfp4_plain(&bytes, &mut want);
        nvfp4(&bytes, &mut got);
        assert!(is_x86_feature_detected!("avx2"), "this test wants the AVX2 kernel");
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got), bits(&want));
        assert!(want.iter().any(|&v| v != 0.0) && want.iter().all(|v| v.is_finite()));
    }
}
