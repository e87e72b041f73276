//! Counting 4-bit codes: how many of each of the sixteen codes a group of 32 holds, for the
//! three layouts 4-bit formats store their groups in ([`Counter`]).
//!
//! With AVX-512 a group's sixteen counts come from its four bit planes at once: one vector holds
//! sixteen candidate masks (a plane or its complement per code bit) and a vector population count
//! gives every count. With AVX2 (or `simd128` in the workers' wasm) each code is one compare, a
//! byte mask and a population count. Elsewhere codes are counted one by one.

/// Elements of each code, `0..16`.
pub type Counts = [u16; 16];

/// Counts the groups of the three layouts.
pub trait Counter {
    /// A K-quant's 128 code bytes: sub-block `2c` is the low nibbles of bytes `32c..32c + 32`,
    /// sub-block `2c + 1` their high nibbles (Q4_K).
    fn split(qs: &[u8; 128]) -> [Counts; 8];
    /// Eight groups of 16 bytes, each group both nibbles of its bytes (IQ4_XS).
    fn joint(qs: &[u8; 128]) -> [Counts; 8];
    /// Two groups of 16 bytes from two blocks (Q4_0, Q4_1, IQ4_NL, MXFP4).
    fn pair(p: &[u8; 16], q: &[u8; 16]) -> [Counts; 2];
}

/// Counts of the low and of the high nibbles of `qs`.
#[inline(always)]
fn split_one(qs: &[u8]) -> (Counts, Counts) {
    let (mut lo, mut hi) = ([0u16; 16], [0u16; 16]);
    for &q in qs {
        lo[usize::from(q & 15)] += 1;
        hi[usize::from(q >> 4)] += 1;
    }
    (lo, hi)
}

/// Counts of all the nibbles of `qs`.
#[inline(always)]
fn joint_one(qs: &[u8]) -> Counts {
    let mut n = [0u16; 16];
    for &q in qs {
        n[usize::from(q & 15)] += 1;
        n[usize::from(q >> 4)] += 1;
    }
    n
}

/// One code at a time.
pub struct Plain;

impl Counter for Plain {
    #[inline(always)]
    fn split(qs: &[u8; 128]) -> [Counts; 8] {
        let mut out = [[0; 16]; 8];
        for (c, chunk) in qs.as_chunks::<32>().0.iter().enumerate() {
            (out[2 * c], out[2 * c + 1]) = split_one(chunk);
        }
        out
    }
    #[inline(always)]
    fn joint(qs: &[u8; 128]) -> [Counts; 8] {
        std::array::from_fn(|g| joint_one(&qs[16 * g..16 * g + 16]))
    }
    #[inline(always)]
    fn pair(p: &[u8; 16], q: &[u8; 16]) -> [Counts; 2] {
        [joint_one(p), joint_one(q)]
    }
}

#[cfg(target_arch = "x86_64")]
pub use x86::{Avx2, Avx512};

#[cfg(target_arch = "x86_64")]
mod x86 {
    use core::arch::x86_64::*;

    use super::{Counter, Counts};

    /// Compares, byte masks and population counts in AVX2: only where `avx2` and `popcnt` run.
    pub struct Avx2;

    /// Counts of the codes `0..16` among the 32 bytes of `v` (each below 16).
    #[inline(always)]
    unsafe fn count32(v: __m256i) -> Counts {
        let mut n = [0u16; 16];
        for (c, n) in n.iter_mut().enumerate() {
            // SAFETY (all three): the caller runs with AVX2 and POPCNT.
            let hits = unsafe { _mm256_movemask_epi8(_mm256_cmpeq_epi8(v, _mm256_set1_epi8(c as i8))) };
            *n = hits.count_ones() as u16;
        }
        n
    }

    /// 32 bytes of `b` from `at`.
    #[inline(always)]
    unsafe fn load32(b: &[u8], at: usize) -> __m256i {
        assert!(at + 32 <= b.len());
        // SAFETY: in bounds (just checked), read unaligned; AVX is the caller's.
        unsafe { _mm256_loadu_si256(b.as_ptr().add(at).cast()) }
    }

    /// Both nibbles of 32 bytes as the codes of two groups of 16 bytes each: `(first, second)`.
    #[inline(always)]
    unsafe fn joint2(v: __m256i) -> [Counts; 2] {
        // SAFETY: the caller runs with AVX2 and POPCNT.
        unsafe {
            let low = _mm256_set1_epi8(15);
            let (lo, hi) = (_mm256_and_si256(v, low), _mm256_and_si256(_mm256_srli_epi16::<4>(v), low));
            // Lanes: the first group's low and high nibbles, then the second's.
            [count32(_mm256_permute2x128_si256::<0x20>(lo, hi)), count32(_mm256_permute2x128_si256::<0x31>(lo, hi))]
        }
    }

    impl Counter for Avx2 {
        #[inline(always)]
        fn split(qs: &[u8; 128]) -> [Counts; 8] {
            let mut out = [[0; 16]; 8];
            for c in 0..4 {
                // SAFETY: `Avx2` is used only where AVX2 and POPCNT were detected.
                unsafe {
                    let v = load32(qs, 32 * c);
                    let low = _mm256_set1_epi8(15);
                    out[2 * c] = count32(_mm256_and_si256(v, low));
                    out[2 * c + 1] = count32(_mm256_and_si256(_mm256_srli_epi16::<4>(v), low));
                }
            }
            out
        }
        #[inline(always)]
        fn joint(qs: &[u8; 128]) -> [Counts; 8] {
            let mut out = [[0; 16]; 8];
            for c in 0..4 {
                // SAFETY: as above.
                [out[2 * c], out[2 * c + 1]] = unsafe { joint2(load32(qs, 32 * c)) };
            }
            out
        }
        #[inline(always)]
        fn pair(p: &[u8; 16], q: &[u8; 16]) -> [Counts; 2] {
            // SAFETY: as above; both loads are of 16 bytes in bounds.
            unsafe {
                let (p, q) = (_mm_loadu_si128(p.as_ptr().cast()), _mm_loadu_si128(q.as_ptr().cast()));
                joint2(_mm256_set_m128i(q, p))
            }
        }
    }

    /// Bit planes and vector population counts in AVX-512: only where [`Avx512::detected`].
    pub struct Avx512;

    impl Avx512 {
        /// Whether this CPU runs [`Avx512`].
        pub fn detected() -> bool {
            std::is_x86_feature_detected!("avx512f")
                && std::is_x86_feature_detected!("avx512bw")
                && std::is_x86_feature_detected!("avx512vpopcntdq")
        }
    }

    /// `FLIP[h][b]`: dword lanes `2k` and `2k + 1` stand for code `8h + k`; a lane is all ones
    /// where that code's bit `b` is clear (the plane is complemented there), else zero.
    static FLIP: [[[i32; 16]; 4]; 2] = {
        let mut t = [[[0; 16]; 4]; 2];
        let mut h = 0;
        while h < 2 {
            let mut b = 0;
            while b < 4 {
                let mut lane = 0;
                while lane < 16 {
                    let code = 8 * h + lane / 2;
                    t[h][b][lane] = if (code >> b) & 1 == 0 { -1 } else { 0 };
                    lane += 1;
                }
                b += 1;
            }
            h += 1;
        }
        t
    };

    /// The counts of two groups of 32 codes from their bit planes: bit `i` of `planes[b]` is bit
    /// `b` of the first group's code `i` (`i < 32`) or of the second's code `i − 32`.
    #[inline(always)]
    unsafe fn count_planes(planes: [u64; 4]) -> [Counts; 2] {
        // SAFETY (the block): the caller runs with AVX-512F, BW and VPOPCNTDQ; loads are of the
        // static tables, stores of 32 bytes into 16 u16s.
        unsafe {
            let mut halves = [_mm512_setzero_si512(); 2];
            for (h, half) in halves.iter_mut().enumerate() {
                let mut hits = _mm512_set1_epi32(-1);
                for (b, &plane) in planes.iter().enumerate() {
                    let flip = _mm512_loadu_si512(FLIP[h][b].as_ptr().cast());
                    // hits & (plane ^ flip)
                    hits = _mm512_ternarylogic_epi32::<0x60>(hits, _mm512_set1_epi64(plane as i64), flip);
                }
                *half = _mm512_popcnt_epi32(hits);
            }
            let even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
            let odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
            let mut out = [[0u16; 16]; 2];
            for (idx, out) in [even, odd].into_iter().zip(&mut out) {
                let counts = _mm512_cvtepi32_epi16(_mm512_permutex2var_epi32(halves[0], idx, halves[1]));
                _mm256_storeu_si256(out.as_mut_ptr().cast(), counts);
            }
            out
        }
    }

    /// The planes of the bits `bit << b` (`b` in `0..4`) of the 64 bytes of `z`.
    #[inline(always)]
    unsafe fn planes(z: __m512i, bits: [__m512i; 4]) -> [u64; 4] {
        // SAFETY: the caller runs with AVX-512BW.
        bits.map(|m| unsafe { _mm512_test_epi8_mask(z, m) })
    }

    /// 64 bytes of `b` from `at`.
    #[inline(always)]
    unsafe fn load64(b: &[u8], at: usize) -> __m512i {
        assert!(at + 64 <= b.len());
        // SAFETY: in bounds (just checked), read unaligned; AVX-512F is the caller's.
        unsafe { _mm512_loadu_si512(b.as_ptr().add(at).cast()) }
    }

    /// Both nibbles of the two 16-byte groups in `v`, `[first, second]`.
    #[inline(always)]
    unsafe fn joint2_512(v: __m256i) -> [Counts; 2] {
        // SAFETY: the caller runs with AVX-512F, BW and VPOPCNTDQ.
        unsafe {
            // Lanes: first, first, second, second; tested for low nibble bits, then high.
            let z = _mm512_castsi256_si512(v);
            let z = _mm512_shuffle_i64x2::<0x50>(z, z);
            let bit = |b: i32| {
                let (lo, hi) = (_mm_set1_epi8(1 << b), _mm_set1_epi8((16i32 << b) as i8));
                _mm512_inserti64x4::<1>(_mm512_castsi256_si512(_mm256_set_m128i(hi, lo)), _mm256_set_m128i(hi, lo))
            };
            count_planes(planes(z, [bit(0), bit(1), bit(2), bit(3)]))
        }
    }

    impl Counter for Avx512 {
        #[inline(always)]
        fn split(qs: &[u8; 128]) -> [Counts; 8] {
            let mut out = [[0; 16]; 8];
            for h in 0..2 {
                // SAFETY: `Avx512` is used only where it was detected.
                unsafe {
                    let z = load64(qs, 64 * h);
                    let bit = |m: i32| _mm512_set1_epi8(m as i8);
                    // Bytes 0..32 are sub-blocks 4h (low) and 4h + 1 (high), bytes 32..64
                    // sub-blocks 4h + 2 and 4h + 3.
                    let [a, b] = count_planes(planes(z, [bit(1), bit(2), bit(4), bit(8)]));
                    let [c, d] = count_planes(planes(z, [bit(16), bit(32), bit(64), bit(128)]));
                    [out[4 * h], out[4 * h + 2], out[4 * h + 1], out[4 * h + 3]] = [a, b, c, d];
                }
            }
            out
        }
        #[inline(always)]
        fn joint(qs: &[u8; 128]) -> [Counts; 8] {
            let mut out = [[0; 16]; 8];
            for c in 0..4 {
                // SAFETY: as above; 32 bytes in bounds, read unaligned.
                [out[2 * c], out[2 * c + 1]] =
                    unsafe { joint2_512(_mm256_loadu_si256(qs[32 * c..32 * c + 32].as_ptr().cast())) };
            }
            out
        }
        #[inline(always)]
        fn pair(p: &[u8; 16], q: &[u8; 16]) -> [Counts; 2] {
            // SAFETY: as above; both loads are of 16 bytes in bounds.
            unsafe {
                let (p, q) = (_mm_loadu_si128(p.as_ptr().cast()), _mm_loadu_si128(q.as_ptr().cast()));
                joint2_512(_mm256_set_m128i(q, p))
            }
        }
    }
}

#[cfg(target_arch = "wasm32")]
pub use simd128::Simd128;

#[cfg(target_arch = "wasm32")]
mod simd128 {
    use core::arch::wasm32::*;

    use super::{Counter, Counts};

    /// Compares, byte masks and population counts in `simd128` (the workers' wasm has it).
    pub struct Simd128;

    /// Counts of the codes `0..16` among the 32 bytes of `a` and `b` (each below 16).
    #[inline(always)]
    fn count(a: v128, b: v128) -> Counts {
        let mut n = [0u16; 16];
        for (c, n) in n.iter_mut().enumerate() {
            let code = u8x16_splat(c as u8);
            let hits = u32::from(i8x16_bitmask(i8x16_eq(a, code))) | u32::from(i8x16_bitmask(i8x16_eq(b, code))) << 16;
            *n = hits.count_ones() as u16;
        }
        n
    }

    /// Sixteen bytes of `b` from `at`.
    #[inline(always)]
    fn load(b: &[u8], at: usize) -> v128 {
        assert!(at + 16 <= b.len());
        // SAFETY: in bounds (just checked); `v128_load` reads unaligned.
        unsafe { v128_load(b.as_ptr().add(at).cast()) }
    }

    /// Both nibbles of 16 bytes.
    #[inline(always)]
    fn joint16(v: v128) -> Counts {
        count(v128_and(v, u8x16_splat(15)), u8x16_shr(v, 4))
    }

    impl Counter for Simd128 {
        #[inline(always)]
        fn split(qs: &[u8; 128]) -> [Counts; 8] {
            let mut out = [[0; 16]; 8];
            let low = u8x16_splat(15);
            for c in 0..4 {
                let (a, b) = (load(qs, 32 * c), load(qs, 32 * c + 16));
                out[2 * c] = count(v128_and(a, low), v128_and(b, low));
                out[2 * c + 1] = count(u8x16_shr(a, 4), u8x16_shr(b, 4));
            }
            out
        }
        #[inline(always)]
        fn joint(qs: &[u8; 128]) -> [Counts; 8] {
            std::array::from_fn(|g| joint16(load(qs, 16 * g)))
        }
        #[inline(always)]
        fn pair(p: &[u8; 16], q: &[u8; 16]) -> [Counts; 2] {
            [joint16(load(p, 0)), joint16(load(q, 0))]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every counter available here agrees with [`Plain`] on random and on narrow code bytes.
    #[test]
    fn vector_counts_equal_plain_counts() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut checked = 0;
        for round in 0..2000 {
            let mut qs = [0u8; 128];
            for q in &mut qs {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                // Some rounds use few codes, as real groups often do.
                *q = if round % 3 == 0 { (seed >> 40) as u8 & 0x33 } else { (seed >> 40) as u8 };
            }
            let (p, q): (&[u8; 16], &[u8; 16]) = (qs[..16].try_into().unwrap(), qs[40..56].try_into().unwrap());
            let want = (Plain::split(&qs), Plain::joint(&qs), Plain::pair(p, q));
            for counts in want.0.iter().chain(&want.1).chain(&want.2) {
                assert_eq!(counts.iter().map(|&n| u32::from(n)).sum::<u32>(), 32);
            }
            #[cfg(target_arch = "x86_64")]
            {
                if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("popcnt") {
                    assert_eq!((Avx2::split(&qs), Avx2::joint(&qs), Avx2::pair(p, q)), want);
                    checked += 1;
                }
                if Avx512::detected() {
                    assert_eq!((Avx512::split(&qs), Avx512::joint(&qs), Avx512::pair(p, q)), want);
                    checked += 1;
                }
            }
            #[cfg(target_arch = "wasm32")]
            {
                assert_eq!((Simd128::split(&qs), Simd128::joint(&qs), Simd128::pair(p, q)), want);
                checked += 1;
            }
        }
        eprintln!("vector counters checked {checked} times");
    }
}
