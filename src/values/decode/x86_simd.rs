//! Native x86 twins of decoders whose table lookups the compiler leaves scalar: the same `f32`
//! operations as the portable decoders, so the same bits (`tests` holds them to it).

use core::arch::x86_64::*;

use super::ggml::{nvfp4_plain, ue4m3_half, FP4_DOUBLED};

/// NVFP4 ([`nvfp4_plain`]) with AVX2 where the CPU has it: each sixteen codes' levels looked up
/// by one byte shuffle.
pub fn nvfp4(src: &[u8], dst: &mut [f32]) {
    if is_x86_feature_detected!("avx2") {
        // SAFETY: detected just now.
        unsafe { nvfp4_avx2(src, dst) }
    } else {
        nvfp4_plain(src, dst)
    }
}

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

    #[test]
    fn nvfp4_equals_the_plain_decoder_bit_for_bit() {
        // Every scale byte in every slot, codes from a generator, and a partial last block.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut bytes = Vec::new();
        for block in 0..256 * 4 {
            let mut b = [0u8; 36];
            for x in &mut b {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                *x = (seed >> 24) as u8;
            }
            b[block % 4] = (block / 4) as u8;
            bytes.extend(b);
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
