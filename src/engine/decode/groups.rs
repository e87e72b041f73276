//! Block types as groups of stored codes: within a group every value is `a · table[code] + b`,
//! computed in `f32` in that order, so a histogram can count codes per group and convert each
//! distinct value once ([`crate::codes::add_groups`]) instead of decoding every element.
//!
//! Each format's `a` and `b` are the scale and offset its decoder uses, and its decoder's `f32`
//! operations are exactly `a · t + b`: a product and, where the decoder has no offset, `b = −0`
//! (adding −0 changes no value, not even the sign of a zero). So a value found by code equals the
//! decoded value bit for bit; `tests::groups_agree_with_the_decoders` holds every format to it.

use super::f16_le;
use super::iq_tables::KVALUES_IQ4NL;

/// The offset of formats whose decoder adds none: `x + (−0.0) == x` for every `x`.
const NO_OFFSET: f32 = -0.0;

/// A group of a block's values: per code, how many elements hold it.
#[derive(Clone, Copy, Debug)]
pub struct Group {
    pub a: f32,
    pub b: f32,
    pub table: &'static [f32; 16],
    pub counts: [u16; 16],
}

/// Appends the groups of `src`'s whole blocks to `out` (see [`super::BlockCodec::groups`]).
pub type GroupsFn = fn(src: &[u8], out: &mut Vec<Group>);

/// `i` for code `i`: unsigned 1- to 4-bit quants.
static UNSIGNED: [f32; 16] = [0., 1., 2., 3., 4., 5., 6., 7., 8., 9., 10., 11., 12., 13., 14., 15.];
/// `i − 8`: Q4_0.
static MINUS_8: [f32; 16] = [-8., -7., -6., -5., -4., -3., -2., -1., 0., 1., 2., 3., 4., 5., 6., 7.];
/// `i − 1` for codes 0..4: the ternary and Q2_0 codes.
static MINUS_1: [f32; 16] = [-1., 0., 1., 2., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0.];
/// Q1_0's sign bit: code 0 is `−1`, code 1 is `+1`.
static SIGN: [f32; 16] = [-1., 1., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0.];
/// Q3_K: code `low | hbit << 2` is `low − 4` without the high bit and `low` with it.
static Q3: [f32; 16] = [-4., -3., -2., -1., 0., 1., 2., 3., 0., 0., 0., 0., 0., 0., 0., 0.];
/// E2M1 values doubled (the scales carry the ½), as the FP4 decoders use them.
static FP4: [f32; 16] = [0., 1., 2., 3., 4., 6., 8., 12., 0., -1., -2., -3., -4., -6., -8., -12.];
/// The IQ4_NL / IQ4_XS levels.
static IQ4: [f32; 16] = {
    let mut t = [0f32; 16];
    let mut i = 0;
    while i < 16 {
        t[i] = KVALUES_IQ4NL[i] as f32;
        i += 1;
    }
    t
};

/// One group: the codes `codes` yields, counted.
#[inline(always)]
fn group(out: &mut Vec<Group>, a: f32, b: f32, table: &'static [f32; 16], codes: impl Iterator<Item = u8>) {
    let mut counts = [0u16; 16];
    for c in codes {
        counts[usize::from(c & 15)] += 1;
    }
    out.push(Group { a, b, table, counts });
}

/// The counts of the low and high nibbles of `q`'s even and odd bytes: `[even low, even high,
/// odd low, odd high]`. Even and odd bytes count apart, so runs of one code do not wait on one
/// counter.
#[inline(always)]
fn count_nibbles(q: &[u8]) -> [[u16; 16]; 4] {
    let mut c = [[0u16; 16]; 4];
    for pair in q.chunks_exact(2) {
        c[0][usize::from(pair[0] & 15)] += 1;
        c[1][usize::from(pair[0] >> 4)] += 1;
        c[2][usize::from(pair[1] & 15)] += 1;
        c[3][usize::from(pair[1] >> 4)] += 1;
    }
    c
}

/// A group of the low nibbles of `q` and one of the high nibbles, with scales `(a1, b1)`, `(a2, b2)`.
#[inline(always)]
fn nibble_groups(out: &mut Vec<Group>, q: &[u8], t: &'static [f32; 16], (a1, b1): (f32, f32), (a2, b2): (f32, f32)) {
    let c = count_nibbles(q);
    let (mut lo, mut hi) = ([0u16; 16], [0u16; 16]);
    for i in 0..16 {
        lo[i] = c[0][i] + c[2][i];
        hi[i] = c[1][i] + c[3][i];
    }
    out.push(Group { a: a1, b: b1, table: t, counts: lo });
    out.push(Group { a: a2, b: b2, table: t, counts: hi });
}

/// One group of both nibbles of every byte of `q`, all with scale `a` and offset `b`.
#[inline(always)]
fn nibbles_group(out: &mut Vec<Group>, q: &[u8], t: &'static [f32; 16], a: f32, b: f32) {
    let c = count_nibbles(q);
    let mut counts = [0u16; 16];
    for i in 0..16 {
        counts[i] = (c[0][i] + c[1][i]) + (c[2][i] + c[3][i]);
    }
    out.push(Group { a, b, table: t, counts });
}

/// Blocks of an `f16` scale and 16 bytes of nibbles (Q4_0, IQ4_NL): one group each, on `table`.
#[inline(always)]
fn f16_and_nibbles(src: &[u8], out: &mut Vec<Group>, table: &'static [f32; 16]) {
    for b in src.as_chunks::<18>().0 {
        nibbles_group(out, &b[2..], table, f16_le(b), NO_OFFSET);
    }
}

pub(super) fn q4_0(src: &[u8], out: &mut Vec<Group>) {
    f16_and_nibbles(src, out, &MINUS_8);
}

pub(super) fn q4_1(src: &[u8], out: &mut Vec<Group>) {
    for b in src.as_chunks::<20>().0 {
        let (d, m) = (f16_le(b), f16_le(&b[2..]));
        nibbles_group(out, &b[4..], &UNSIGNED, d, m);
    }
}

pub(super) fn q2_k(src: &[u8], out: &mut Vec<Group>) {
    for b in src.as_chunks::<84>().0 {
        let (sc, qs) = (&b[..16], &b[16..80]);
        let (d, min) = (f16_le(&b[80..]), f16_le(&b[82..]));
        let mut is = 0;
        for half in 0..2 {
            let q = &qs[half * 32..half * 32 + 32];
            for shift in [0u32, 2, 4, 6] {
                for part in 0..2 {
                    let s = sc[is];
                    is += 1;
                    let (dl, ml) = (d * (s & 0x0f) as f32, min * (s >> 4) as f32);
                    let codes = q[part * 16..part * 16 + 16].iter().map(|&x| (x >> shift) & 3);
                    group(out, dl, -ml, &UNSIGNED, codes);
                }
            }
        }
    }
}

pub(super) fn q3_k(src: &[u8], out: &mut Vec<Group>) {
    for b in src.as_chunks::<110>().0 {
        let (hm, qs) = (&b[..32], &b[32..96]);
        let sc = super::ggml::q3k_scales(&b[96..108]);
        let d = f16_le(&b[108..]);
        let mut is = 0;
        let mut m = 1u8;
        for half in 0..2 {
            let q = &qs[half * 32..half * 32 + 32];
            for shift in [0u32, 2, 4, 6] {
                for part in 0..2 {
                    let dl = d * (i32::from(sc[is]) - 32) as f32;
                    is += 1;
                    let ks = part * 16..part * 16 + 16;
                    let codes = ks.map(|k| ((q[k] >> shift) & 3) | if hm[k] & m != 0 { 4 } else { 0 });
                    group(out, dl, NO_OFFSET, &Q3, codes);
                }
                m <<= 1;
            }
        }
    }
}

pub(super) fn q4_k(src: &[u8], out: &mut Vec<Group>) {
    for b in src.as_chunks::<144>().0 {
        let (d, min) = (f16_le(b), f16_le(&b[2..]));
        let (sc, qs) = (&b[4..16], &b[16..144]);
        for chunk in 0..4 {
            let (s1, m1) = super::ggml::scale_min_k4(2 * chunk, sc);
            let (s2, m2) = super::ggml::scale_min_k4(2 * chunk + 1, sc);
            let first = (d * s1 as f32, -(min * m1 as f32));
            let second = (d * s2 as f32, -(min * m2 as f32));
            nibble_groups(out, &qs[chunk * 32..chunk * 32 + 32], &UNSIGNED, first, second);
        }
    }
}

pub(super) fn tq1_0(src: &[u8], out: &mut Vec<Group>) {
    use super::ggml::trit;
    for b in src.as_chunks::<54>().0 {
        let (qs, qh, d) = (&b[..48], &b[48..52], f16_le(&b[52..]));
        let five = (0..5).flat_map(|n| qs.iter().map(move |&q| trit(q, n) as u8));
        let four = (0..4).flat_map(|n| qh.iter().map(move |&q| trit(q, n) as u8));
        group(out, d, NO_OFFSET, &MINUS_1, five.chain(four));
    }
}

pub(super) fn tq2_0(src: &[u8], out: &mut Vec<Group>) {
    for b in src.as_chunks::<66>().0 {
        let d = f16_le(&b[64..]);
        let codes = b[..64].iter().flat_map(|&q| [q & 3, (q >> 2) & 3, (q >> 4) & 3, q >> 6]);
        group(out, d, NO_OFFSET, &MINUS_1, codes);
    }
}

pub(super) fn mxfp4(src: &[u8], out: &mut Vec<Group>) {
    for b in src.as_chunks::<17>().0 {
        let d = super::ggml::e8m0_half(b[0]);
        nibbles_group(out, &b[1..], &FP4, d, NO_OFFSET);
    }
}

pub(super) fn nvfp4(src: &[u8], out: &mut Vec<Group>) {
    for b in src.as_chunks::<36>().0 {
        for s in 0..4 {
            let d = super::ggml::ue4m3_half(b[s]);
            let qs = &b[4 + s * 8..4 + s * 8 + 8];
            group(out, d, NO_OFFSET, &FP4, qs.iter().flat_map(|&q| [q & 15, q >> 4]));
        }
    }
}

pub(super) fn q1_0(src: &[u8], out: &mut Vec<Group>) {
    for b in src.as_chunks::<18>().0 {
        let d = f16_le(b);
        group(out, d, NO_OFFSET, &SIGN, b[2..].iter().flat_map(|&q| (0..8).map(move |j| (q >> j) & 1)));
    }
}

pub(super) fn q2_0(src: &[u8], out: &mut Vec<Group>) {
    for b in src.as_chunks::<18>().0 {
        let d = f16_le(b);
        let codes = b[2..].iter().flat_map(|&q| [q & 3, (q >> 2) & 3, (q >> 4) & 3, q >> 6]);
        group(out, d, NO_OFFSET, &MINUS_1, codes);
    }
}

pub(super) fn iq4_nl(src: &[u8], out: &mut Vec<Group>) {
    f16_and_nibbles(src, out, &IQ4);
}

pub(super) fn iq4_xs(src: &[u8], out: &mut Vec<Group>) {
    for b in src.as_chunks::<136>().0 {
        let d = f16_le(b);
        let scales_h = u16::from_le_bytes([b[2], b[3]]);
        let (scales_l, qs) = (&b[4..8], &b[8..]);
        for (ib, q) in qs.chunks_exact(16).enumerate() {
            let high = (scales_h >> (2 * ib) & 3) as u8;
            let scale = (scales_l[ib / 2] >> (4 * (ib % 2)) & 0xF) | high << 4;
            let dl = d * f32::from(i16::from(scale) - 32);
            nibbles_group(out, q, &IQ4, dl, NO_OFFSET);
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::decode::{ggml, iquants};

    /// The bits of `v`, every NaN as one (a NaN's sign and payload mean nothing to a histogram).
    fn bits(v: f32) -> u32 {
        if v.is_nan() {
            f32::NAN.to_bits()
        } else {
            v.to_bits()
        }
    }

    /// Every group value, repeated by its count, sorted by bits: the multiset of a block's values.
    fn multiset(groups: &[Group]) -> Vec<u32> {
        let mut out: Vec<u32> = groups
            .iter()
            .flat_map(|g| {
                (0..16).flat_map(move |c| std::iter::repeat_n(bits(g.a * g.table[c] + g.b), g.counts[c] as usize))
            })
            .collect();
        out.sort_unstable();
        out
    }

    /// Every codec that has groups.
    pub(crate) const GROUPED: [crate::decode::BlockCodec; 13] = [
        ggml::Q4_0,
        ggml::Q4_1,
        ggml::Q2_K,
        ggml::Q3_K,
        ggml::Q4_K,
        ggml::TQ1_0,
        ggml::TQ2_0,
        ggml::MXFP4,
        ggml::NVFP4,
        ggml::Q1_0,
        ggml::Q2_0,
        iquants::IQ4_NL,
        iquants::IQ4_XS,
    ];

    #[test]
    fn groups_agree_with_the_decoders() {
        let codecs = GROUPED;
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for codec in codecs {
            let groups_fn = codec.groups.expect("a grouped type");
            for round in 0..200 {
                let blocks = 3;
                let mut bytes: Vec<u8> = (0..codec.block_bytes * blocks)
                    .map(|_| {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        (seed >> 24) as u8
                    })
                    .collect();
                // Keep most f16 scales ordinary (and some random: infinities, NaNs, subnormals).
                if round % 4 != 0 {
                    for b in bytes.iter_mut().skip(1).step_by(2) {
                        *b &= 0x3b;
                    }
                }
                let mut values = vec![0f32; codec.block_elems * blocks];
                (codec.decode)(&bytes, &mut values);
                let mut decoded: Vec<u32> = values.iter().map(|&v| bits(v)).collect();
                decoded.sort_unstable();
                let mut groups = Vec::new();
                groups_fn(&bytes, &mut groups);
                let n: usize = groups.iter().flat_map(|g| g.counts).map(usize::from).sum();
                assert_eq!(n, values.len());
                assert_eq!(multiset(&groups), decoded, "{} bytes per block, round {round}", codec.block_bytes);
            }
        }
        for plain in [ggml::Q8_0, ggml::Q6_K, ggml::Q5_K, ggml::F16, iquants::IQ2_XXS] {
            assert!(plain.groups.is_none());
        }
    }
}
