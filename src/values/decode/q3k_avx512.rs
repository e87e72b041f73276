//! Q3_K's code counts in AVX-512: a block's sixteen sub-blocks, eight codes each, from bit
//! planes and 16-bit population counts (the scalar counts took as long as the bucket per value
//! they save).

use core::arch::x86_64::*;

use super::nibbles::transpose_512 as transpose;

/// Whether this CPU runs [`counts`]: AVX-512 F, BW, VBMI (byte permutes), BITALG (16-bit
/// population counts) and GFNI (the bit transpose).
pub fn detected() -> bool {
    std::is_x86_feature_detected!("avx512f")
        && std::is_x86_feature_detected!("avx512bw")
        && std::is_x86_feature_detected!("avx512vbmi")
        && std::is_x86_feature_detected!("avx512bitalg")
        && std::is_x86_feature_detected!("gfni")
}

/// Bytes `2L, 2L + 1` of the planes of `q`'s sixteen code bytes for 16-bit lane
/// `L = 16h + 4c + j`: bytes `[16q + k, 16q + 8 + k]` of the code bytes' transpose, `k` being `2j`
/// (the low bit of field `j`) or `2j + 1` (its high bit); and for the mask planes, bytes
/// `[m, m + 8]` of the mask bytes' transpose, `m = 16·(q % 2) + 4·(q / 2) + j`.
static PLANE_INDEX: [[[u8; 64]; 3]; 4] = {
    let mut t = [[[0; 64]; 3]; 4];
    let mut q = 0;
    while q < 4 {
        let mut lane = 0;
        while lane < 32 {
            let j = lane % 4;
            let firsts = [16 * q + 2 * j, 16 * q + 2 * j + 1, 16 * (q % 2) + 4 * (q / 2) + j];
            let mut p = 0;
            while p < 3 {
                t[q][p][2 * lane] = firsts[p] as u8;
                t[q][p][2 * lane + 1] = (firsts[p] + 8) as u8;
                p += 1;
            }
            lane += 1;
        }
        q += 1;
    }
    t
};

/// `FLIP[p][L]`: all ones where lane `L = 16h + 4c + j` wants plane `p` clear (bit 0 of `c`,
/// bit 1 of `c`, the mask bit `h`), so that `plane ^ flip` is set where the code matches.
static FLIP: [[u16; 32]; 3] = {
    let mut t = [[0; 32]; 3];
    let mut lane = 0;
    while lane < 32 {
        let (h, c) = (lane / 16, (lane % 16) / 4);
        let bits = [c & 1, c >> 1, h];
        let mut p = 0;
        while p < 3 {
            t[p][lane] = if bits[p] == 0 { 0xffff } else { 0 };
            p += 1;
        }
        lane += 1;
    }
    t
};

/// A Q3_K block's counts, as its four pairs of quads: for each 16 code bytes `q`, entry
/// `4c + j` of `[clear, set]` counts the values of field `j` with low bits `c` and the mask bit
/// clear or set.
///
/// # Safety
/// The CPU must have what [`detected`] asks for.
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512bitalg,gfni")]
pub unsafe fn counts(block: &[u8; 110]) -> [[[u16; 16]; 2]; 4] {
    let mut out = [[[0u16; 16]; 2]; 4];
    // SAFETY (the block): AVX-512F, BW, VBMI, BITALG and GFNI are this function's; loads of 64
    // code bytes and 32 mask bytes and of the static tables, stores of 64 bytes into 32 u16s.
    unsafe {
        let planes = transpose(_mm512_loadu_si512(block[32..96].as_ptr().cast()));
        let masks = transpose(_mm512_zextsi256_si512(_mm256_loadu_si256(block[..32].as_ptr().cast())));
        let flip = FLIP.map(|f| _mm512_loadu_si512(f.as_ptr().cast()));
        for (q, out) in out.iter_mut().enumerate() {
            let index = PLANE_INDEX[q].map(|i| _mm512_loadu_si512(i.as_ptr().cast()));
            let low = _mm512_permutexvar_epi8(index[0], planes);
            let high = _mm512_permutexvar_epi8(index[1], planes);
            let mask = _mm512_permutexvar_epi8(index[2], masks);
            // (low ^ flip0) & (high ^ flip1) & (mask ^ flip2)
            let hits = _mm512_ternarylogic_epi32::<0x60>(
                _mm512_ternarylogic_epi32::<0x60>(_mm512_xor_si512(low, flip[0]), high, flip[1]),
                mask,
                flip[2],
            );
            _mm512_storeu_si512(out.as_mut_ptr().cast(), _mm512_popcnt_epi16(hits));
        }
    }
    out
}
