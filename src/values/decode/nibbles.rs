//! Counting 4-bit codes: how many of each of the sixteen codes a group of 32 holds, for the
//! three layouts 4-bit formats store their groups in ([`Counter`]).
//!
//! With AVX-512 a group's sixteen counts come from its four bit planes at once: one vector holds
//! sixteen candidate masks (a plane or its complement per code bit) and a vector population count
//! gives every count. The planes come from a GFNI 8x8 bit transpose of each 8 code bytes, and
//! byte shuffles that gather them. In the workers' wasm (`simd128`) the planes come from byte
//! masks of the codes shifted, and four codes' masks are ANDed and counted per vector. With AVX2
//! each code is one compare, a byte mask and a population count; with NEON (aarch64) one compare
//! a code, and pairwise adds that sum each code's hits into one lane of one vector. Elsewhere
//! codes are counted one by one.

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
    /// A block's 32 five-bit codes (Q5_0), as the counts of codes `0..16` and of `16..32`: code
    /// `j`'s low four bits are the low nibble of `qs[j]` (`j < 16`) or the high nibble of
    /// `qs[j − 16]`, its fifth bit is bit `j` of `qh`.
    fn fives(qs: &[u8; 16], qh: u32) -> [Counts; 2];
    /// Four `f16` scales or offsets as `f32`, exactly as [`super::f16_to_f32`] converts them
    /// (in one vector instruction where the CPU has one: in integer operations, two blocks'
    /// scales took a tenth of Q4_1's histogram).
    #[inline(always)]
    fn f16s(h: [u16; 4]) -> [f32; 4] {
        h.map(super::f16_to_f32)
    }
}

/// Code `j` of [`Counter::fives`]' block.
#[inline(always)]
fn five(qs: &[u8; 16], qh: u32, j: usize) -> usize {
    let nibble = if j < 16 { qs[j] & 15 } else { qs[j - 16] >> 4 };
    usize::from(nibble) | ((qh >> j) as usize & 1) << 4
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
    #[inline(always)]
    fn fives(qs: &[u8; 16], qh: u32) -> [Counts; 2] {
        let mut n = [[0u16; 16]; 2];
        for j in 0..32 {
            let c = five(qs, qh, j);
            n[c / 16][c % 16] += 1;
        }
        n
    }
}

#[cfg(target_arch = "x86_64")]
pub(super) use x86::transpose_512;
#[cfg(target_arch = "x86_64")]
pub use x86::{Avx2, Avx512};

#[cfg(target_arch = "x86_64")]
mod x86 {
    use core::arch::x86_64::*;

    use super::{Counter, Counts};

    /// Compares, byte masks and population counts in AVX2: only where `avx2` and `popcnt` run.
    pub struct Avx2;

    /// The fifth bits of [`Counter::fives`]' 32 codes as bytes: byte `j` is 16 where bit `j` of
    /// `qh` is set, else 0 (to add to the nibbles).
    #[inline(always)]
    fn fifth_bits(qh: u32) -> [u8; 32] {
        std::array::from_fn(|j| ((qh >> j) as u8 & 1) << 4)
    }

    /// Counts of the codes `0..16` among the 32 bytes of `v` (each below 16).
    #[inline(always)]
    unsafe fn count32(v: __m256i) -> Counts {
        // SAFETY: the caller runs with AVX2 and POPCNT.
        unsafe { count32_from(v, 0) }
    }

    /// Counts of the codes `first..first + 16` among the 32 bytes of `v`.
    #[inline(always)]
    unsafe fn count32_from(v: __m256i, first: u8) -> Counts {
        let mut n = [0u16; 16];
        for (c, n) in n.iter_mut().enumerate() {
            let code = _mm256_set1_epi8((first + c as u8) as i8);
            // SAFETY (both): the caller runs with AVX2 and POPCNT.
            let hits = unsafe { _mm256_movemask_epi8(_mm256_cmpeq_epi8(v, code)) };
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
        #[inline(always)]
        fn fives(qs: &[u8; 16], qh: u32) -> [Counts; 2] {
            let high = fifth_bits(qh);
            // SAFETY: as above; loads of 16 and 32 bytes in bounds.
            unsafe {
                let v = _mm_loadu_si128(qs.as_ptr().cast());
                let low = _mm_set1_epi8(15);
                let nibbles = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16::<4>(v), low), _mm_and_si128(v, low));
                let codes = _mm256_or_si256(nibbles, _mm256_loadu_si256(high.as_ptr().cast()));
                [count32_from(codes, 0), count32_from(codes, 16)]
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
                && std::is_x86_feature_detected!("avx512vbmi")
                && std::is_x86_feature_detected!("gfni")
                && std::is_x86_feature_detected!("f16c")
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

    /// The 8x8 bit transpose of every 8 bytes of `v` (GFNI): with the bytes reversed, byte `b`
    /// of each 8 becomes bit `b` of those 8 bytes, bit `i` coming from byte `i`.
    ///
    /// # Safety
    /// The CPU must have AVX-512F, BW and GFNI.
    #[inline(always)]
    pub(in crate::decode) unsafe fn transpose_512(v: __m512i) -> __m512i {
        // SAFETY: the caller runs with AVX-512F, BW and GFNI.
        unsafe {
            let reverse = _mm512_set4_epi32(0x0809_0a0b, 0x0c0d_0e0f, 0x0001_0203, 0x0405_0607);
            _mm512_gf2p8affine_epi64_epi8::<0>(
                _mm512_set1_epi64(0x8040_2010_0804_0201u64 as i64),
                _mm512_shuffle_epi8(v, reverse),
            )
        }
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
        // SAFETY: the caller runs with AVX-512F, BW, VPOPCNTDQ and GFNI.
        unsafe {
            // The bit planes by an 8x8 bit transpose per 8 bytes, as `fives` takes them (with
            // mask registers, 8 tests and 8 moves to vectors, they took 1.1x as long).
            let reverse = _mm256_setr_epi8(
                7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10,
                9, 8,
            );
            let t = _mm256_gf2p8affine_epi64_epi8::<0>(
                _mm256_set1_epi64x(0x8040_2010_0804_0201u64 as i64),
                _mm256_shuffle_epi8(v, reverse),
            );
            // Per group, dword `b` is plane `b` of its 32 nibbles (in some order).
            let by_plane = _mm256_setr_epi8(
                0, 8, 4, 12, 1, 9, 5, 13, 2, 10, 6, 14, 3, 11, 7, 15, 0, 8, 4, 12, 1, 9, 5, 13, 2, 10, 6, 14, 3, 11, 7,
                15,
            );
            // Word `b`: the first group's plane `b`, then the second's.
            let planes = _mm256_permutevar8x32_epi32(
                _mm256_shuffle_epi8(t, by_plane),
                _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7),
            );
            count_planes(std::mem::transmute::<__m256i, [u64; 4]>(planes))
        }
    }

    /// `FLIP16[b]`: lane `c` (code `c` of sixteen) is all ones where bit `b` of `c` is clear.
    static FLIP16: [[i32; 16]; 4] = {
        let mut t = [[0; 16]; 4];
        let mut b = 0;
        while b < 4 {
            let mut c = 0;
            while c < 16 {
                t[b][c] = if (c >> b) & 1 == 0 { -1 } else { 0 };
                c += 1;
            }
            b += 1;
        }
        t
    };

    impl Counter for Avx512 {
        #[inline(always)]
        fn split(qs: &[u8; 128]) -> [Counts; 8] {
            let mut out = [[0; 16]; 8];
            for h in 0..2 {
                // SAFETY: `Avx512` is used only where it was detected.
                unsafe {
                    // The bit planes of 64 bytes by a bit transpose per 8 bytes, then word `b`
                    // gathers byte `b` of the eight: bits 0..32 are bit `b` of bytes 0..32, bits
                    // 32..64 of bytes 32..64.
                    let t = transpose_512(load64(qs, 64 * h));
                    let gather = _mm512_set_epi64(
                        0x3f37_2f27_1f17_0f07,
                        0x3e36_2e26_1e16_0e06,
                        0x3d35_2d25_1d15_0d05,
                        0x3c34_2c24_1c14_0c04,
                        0x3b33_2b23_1b13_0b03,
                        0x3a32_2a22_1a12_0a02,
                        0x3931_2921_1911_0901,
                        0x3830_2820_1810_0800,
                    );
                    let words: [u64; 8] = std::mem::transmute(_mm512_permutexvar_epi8(gather, t));
                    // Bytes 0..32 are sub-blocks 4h (low) and 4h + 1 (high), bytes 32..64
                    // sub-blocks 4h + 2 and 4h + 3.
                    let [a, b] = count_planes([words[0], words[1], words[2], words[3]]);
                    let [c, d] = count_planes([words[4], words[5], words[6], words[7]]);
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
        #[inline(always)]
        fn f16s(h: [u16; 4]) -> [f32; 4] {
            // SAFETY: `Avx512` is used only where it was detected (F16C among it); `vcvtph2ps`
            // converts every `f16` exactly, a NaN made quiet with its payload kept, as
            // `f16_to_f32` does.
            unsafe {
                let h = _mm_cvtsi64_si128(u64::from_le_bytes(std::mem::transmute::<[u16; 4], [u8; 8]>(h)) as i64);
                std::mem::transmute::<__m128, [f32; 4]>(_mm_cvtph_ps(h))
            }
        }
        #[inline(always)]
        fn fives(qs: &[u8; 16], qh: u32) -> [Counts; 2] {
            // SAFETY (the block): `Avx512` is used only where it was detected; a load of 16
            // bytes in bounds, a store of 64 bytes into 32 u16s.
            unsafe {
                // The bit planes of the nibbles, by an 8x8 bit transpose per 8 bytes (GFNI):
                // with the bytes reversed, byte `j` of a word becomes bit `j` of its 8 bytes.
                let reversed = _mm_shuffle_epi8(
                    _mm_loadu_si128(qs.as_ptr().cast()),
                    _mm_setr_epi8(7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8),
                );
                let t = _mm_gf2p8affine_epi64_epi8::<0>(_mm_set1_epi64x(0x8040_2010_0804_0201u64 as i64), reversed);
                // Plane `b` of elements 0..8, 8..16 (low nibbles), 16..24, 24..32 (high ones).
                let planes = _mm_shuffle_epi8(t, _mm_setr_epi8(0, 8, 4, 12, 1, 9, 5, 13, 2, 10, 6, 14, 3, 11, 7, 15));
                let planes: [u32; 4] = std::mem::transmute(planes);
                // Lane `c` keeps the elements whose low four bits are `c`: the AND over the
                // four planes, each complemented where bit `b` of `c` is clear.
                let mut hits = _mm512_set1_epi32(-1);
                for (b, &plane) in planes.iter().enumerate() {
                    let flip = _mm512_loadu_si512(FLIP16[b].as_ptr().cast());
                    hits = _mm512_ternarylogic_epi32::<0x60>(hits, _mm512_set1_epi32(plane as i32), flip);
                }
                let fifth = _mm512_set1_epi32(qh as i32);
                let (low, high) = (_mm512_andnot_si512(fifth, hits), _mm512_and_si512(fifth, hits));
                // Each count in the low word of its lane: the low words of both, in order.
                let even = _mm512_set_epi16(
                    62, 60, 58, 56, 54, 52, 50, 48, 46, 44, 42, 40, 38, 36, 34, 32, 30, 28, 26, 24, 22, 20, 18, 16, 14,
                    12, 10, 8, 6, 4, 2, 0,
                );
                let counts = _mm512_permutex2var_epi16(_mm512_popcnt_epi32(low), even, _mm512_popcnt_epi32(high));
                let mut out = [[0u16; 16]; 2];
                _mm512_storeu_si512(out.as_mut_ptr().cast(), counts);
                out
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

    /// Byte masks and population counts in `simd128` (the workers' wasm has it).
    pub struct Simd128;

    /// Bit `bit` of each of the 16 bytes of `v`, as a mask: byte `i`'s in bit `i`.
    #[inline(always)]
    fn plane(v: v128, bit: u32) -> u32 {
        u32::from(i8x16_bitmask(i8x16_shl(v, 7 - bit)))
    }

    /// The bit planes of 32 four-bit codes: those in bits `at..at + 4` of the bytes of `a`, then
    /// those in bits `bt..bt + 4` of the bytes of `b` (plane `k` holds bit `k` of every code).
    #[inline(always)]
    fn planes(a: v128, at: u32, b: v128, bt: u32) -> [u32; 4] {
        std::array::from_fn(|k| plane(a, at + k as u32) | plane(b, bt + k as u32) << 16)
    }

    /// Lane `j` of vector `k` marks the codes of `planes` that are `4k + j`: the AND over the
    /// four planes, each complemented where the code's bit is clear. Planes 0 and 1 vary by
    /// lane, planes 2 and 3 by vector.
    #[inline(always)]
    fn hits(planes: [u32; 4]) -> [v128; 4] {
        let bit0 = v128_xor(u32x4_splat(planes[0]), i32x4(-1, 0, -1, 0));
        let bit1 = v128_xor(u32x4_splat(planes[1]), i32x4(-1, -1, 0, 0));
        let by_lane = v128_and(bit0, bit1);
        std::array::from_fn(|k| {
            let p2 = if k & 1 == 0 { !planes[2] } else { planes[2] };
            let p3 = if k & 2 == 0 { !planes[3] } else { planes[3] };
            v128_and(by_lane, u32x4_splat(p2 & p3))
        })
    }

    /// The bits set in each 32-bit lane of `m`.
    #[inline(always)]
    fn ones(m: v128) -> v128 {
        i32x4_extadd_pairwise_u16x8(i16x8_extadd_pairwise_u8x16(i8x16_popcnt(m)))
    }

    /// Sixteen counts, four a vector, as `u16`s.
    #[inline(always)]
    fn narrowed(counts: [v128; 4]) -> Counts {
        let (first, second) = (i16x8_narrow_i32x4(counts[0], counts[1]), i16x8_narrow_i32x4(counts[2], counts[3]));
        let mut out = [0u16; 16];
        // SAFETY: two stores of 16 bytes into 16 u16s.
        unsafe {
            v128_store(out.as_mut_ptr().cast(), first);
            v128_store(out.as_mut_ptr().add(8).cast(), second);
        }
        out
    }

    /// Counts of the codes `0..16` among 32 codes, from their bit planes: per code, the AND of
    /// the planes, then a population count, four codes a vector. (A compare, a byte mask and a
    /// population count per code and 32 codes took twice as long.)
    #[inline(always)]
    fn count(planes: [u32; 4]) -> Counts {
        narrowed(hits(planes).map(ones))
    }

    /// Sixteen bytes of `b` from `at`.
    #[inline(always)]
    fn load(b: &[u8], at: usize) -> v128 {
        assert!(at + 16 <= b.len());
        // SAFETY: in bounds (just checked); `v128_load` reads unaligned.
        unsafe { v128_load(b.as_ptr().add(at).cast()) }
    }

    /// Both nibbles of 16 bytes: the low ones, then the high ones.
    #[inline(always)]
    fn joint16(v: v128) -> Counts {
        count(planes(v, 0, v, 4))
    }

    impl Counter for Simd128 {
        #[inline(always)]
        fn split(qs: &[u8; 128]) -> [Counts; 8] {
            let mut out = [[0; 16]; 8];
            for c in 0..4 {
                let (a, b) = (load(qs, 32 * c), load(qs, 32 * c + 16));
                out[2 * c] = count(planes(a, 0, b, 0));
                out[2 * c + 1] = count(planes(a, 4, b, 4));
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
        #[inline(always)]
        fn fives(qs: &[u8; 16], qh: u32) -> [Counts; 2] {
            // Elements 0..16 are the low nibbles, 16..32 the high ones; bit `i` of `qh` is
            // element `i`'s fifth bit.
            let v = load(qs, 0);
            let hits = hits(planes(v, 0, v, 4));
            let fifth = u32x4_splat(qh);
            [narrowed(hits.map(|h| ones(v128_andnot(h, fifth)))), narrowed(hits.map(|h| ones(v128_and(h, fifth))))]
        }
    }
}

#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
pub use neon::Neon;

#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod neon {
    use core::arch::aarch64::*;

    use super::{Counter, Counts};

    /// Compares and pairwise adds in NEON (every aarch64 CPU has it): a code's hits are summed
    /// across the lanes of its compare, and sixteen codes' sums end in one vector.
    pub struct Neon;

    /// Counts of the codes `first..first + 16` among the 32 bytes of `a` and `b`.
    #[inline(always)]
    fn count(a: uint8x16_t, b: uint8x16_t, first: u8) -> Counts {
        // SAFETY: NEON instructions, which every aarch64 CPU runs (the module's `cfg`); the
        // stores write 16 u16s into `n`.
        unsafe {
            // Lane `i` of `hits[c]` is −1 (0xff) per hit of code `first + c` in lane `i` of `a`
            // and of `b`: its lanes sum, wrapping, to minus the code's count (at most 32).
            let hits: [uint8x16_t; 16] = std::array::from_fn(|c| {
                let code = vdupq_n_u8(first + c as u8);
                vaddq_u8(vceqq_u8(a, code), vceqq_u8(b, code))
            });
            // Pairwise adds halve the lanes a code takes: after four rounds lane `c` is code
            // `first + c`'s sum.
            let l1: [uint8x16_t; 8] = std::array::from_fn(|i| vpaddq_u8(hits[2 * i], hits[2 * i + 1]));
            let l2: [uint8x16_t; 4] = std::array::from_fn(|i| vpaddq_u8(l1[2 * i], l1[2 * i + 1]));
            let l3: [uint8x16_t; 2] = std::array::from_fn(|i| vpaddq_u8(l2[2 * i], l2[2 * i + 1]));
            let counts = vsubq_u8(vdupq_n_u8(0), vpaddq_u8(l3[0], l3[1]));
            let mut n = [0u16; 16];
            vst1q_u16(n.as_mut_ptr(), vmovl_u8(vget_low_u8(counts)));
            vst1q_u16(n.as_mut_ptr().add(8), vmovl_high_u8(counts));
            n
        }
    }

    /// Sixteen bytes of `b` from `at`.
    #[inline(always)]
    fn load(b: &[u8], at: usize) -> uint8x16_t {
        assert!(at + 16 <= b.len());
        // SAFETY: in bounds (just checked); `vld1q_u8` reads unaligned.
        unsafe { vld1q_u8(b.as_ptr().add(at)) }
    }

    /// The low and the high nibbles of `v`.
    #[inline(always)]
    fn nibbles(v: uint8x16_t) -> (uint8x16_t, uint8x16_t) {
        // SAFETY: NEON (the module's `cfg`).
        unsafe { (vandq_u8(v, vdupq_n_u8(15)), vshrq_n_u8::<4>(v)) }
    }

    /// Both nibbles of 16 bytes.
    #[inline(always)]
    fn joint16(v: uint8x16_t) -> Counts {
        let (lo, hi) = nibbles(v);
        count(lo, hi, 0)
    }

    impl Counter for Neon {
        #[inline(always)]
        fn split(qs: &[u8; 128]) -> [Counts; 8] {
            let mut out = [[0; 16]; 8];
            for c in 0..4 {
                let ((a_lo, a_hi), (b_lo, b_hi)) = (nibbles(load(qs, 32 * c)), nibbles(load(qs, 32 * c + 16)));
                out[2 * c] = count(a_lo, b_lo, 0);
                out[2 * c + 1] = count(a_hi, b_hi, 0);
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
        #[inline(always)]
        fn fives(qs: &[u8; 16], qh: u32) -> [Counts; 2] {
            let (lo, hi) = nibbles(load(qs, 0));
            // SAFETY: NEON (the module's `cfg`).
            let (first, second) = unsafe {
                // Byte `j` of `spread(k)` is byte `2k + j / 8` of `qh`; the test against
                // `1 << j % 8` picks bit `16k + j`, the fifth bit of code `16k + j`.
                let qh = vreinterpretq_u8_u32(vdupq_n_u32(qh));
                let bit: [u8; 16] = std::array::from_fn(|j| 1 << (j % 8));
                let spread = |k: u8| {
                    let at: [u8; 16] = std::array::from_fn(|j| 2 * k + (j / 8) as u8);
                    let set = vtstq_u8(vqtbl1q_u8(qh, vld1q_u8(at.as_ptr())), vld1q_u8(bit.as_ptr()));
                    vandq_u8(set, vdupq_n_u8(16))
                };
                (vorrq_u8(lo, spread(0)), vorrq_u8(hi, spread(1)))
            };
            [count(first, second, 0), count(first, second, 16)]
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
        #[allow(unused_mut)] // counted on x86-64, wasm32 and aarch64 only
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
            let qh = u32::from_le_bytes(qs[60..64].try_into().unwrap());
            let want = (Plain::split(&qs), Plain::joint(&qs), Plain::pair(p, q), Plain::fives(p, qh));
            for counts in want.0.iter().chain(&want.1).chain(&want.2) {
                assert_eq!(counts.iter().map(|&n| u32::from(n)).sum::<u32>(), 32);
            }
            assert_eq!(want.3.concat().iter().map(|&n| u32::from(n)).sum::<u32>(), 32);
            #[cfg(target_arch = "x86_64")]
            {
                if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("popcnt") {
                    assert_eq!((Avx2::split(&qs), Avx2::joint(&qs), Avx2::pair(p, q), Avx2::fives(p, qh)), want);
                    checked += 1;
                }
                if Avx512::detected() {
                    assert_eq!(
                        (Avx512::split(&qs), Avx512::joint(&qs), Avx512::pair(p, q), Avx512::fives(p, qh)),
                        want
                    );
                    checked += 1;
                }
            }
            #[cfg(target_arch = "wasm32")]
            {
                assert_eq!(
                    (Simd128::split(&qs), Simd128::joint(&qs), Simd128::pair(p, q), Simd128::fives(p, qh)),
                    want
                );
                checked += 1;
            }
            #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
            {
                assert_eq!((Neon::split(&qs), Neon::joint(&qs), Neon::pair(p, q), Neon::fives(p, qh)), want);
                checked += 1;
            }
        }
        eprintln!("vector counters checked {checked} times");
    }

    /// Every counter converts every `f16` as `f16_to_f32` does, to the bit (NaNs' payloads too).
    #[test]
    fn f16s_convert_every_half_as_f16_to_f32() {
        let each = |f16s: fn([u16; 4]) -> [f32; 4]| {
            for h in (0..=u16::MAX).step_by(4) {
                let got = f16s([h, h + 1, h + 2, h + 3]).map(f32::to_bits);
                let want = [h, h + 1, h + 2, h + 3].map(|h| super::super::f16_to_f32(h).to_bits());
                assert_eq!(got, want, "f16 bits {h:#06x}..");
            }
        };
        each(Plain::f16s);
        #[cfg(target_arch = "x86_64")]
        if Avx512::detected() {
            each(Avx512::f16s);
        }
        #[cfg(target_arch = "wasm32")]
        each(Simd128::f16s);
    }
}
