//! Block types as groups of stored codes: within a group every value is `a · table[code] + b`,
//! computed in `f32` in that order, so a histogram can count codes per group and convert each
//! distinct value once ([`crate::codes::add_groups`]) instead of decoding every element.
//!
//! Each format's `a` and `b` are the scale and offset its decoder uses, and its decoder's `f32`
//! operations are exactly `a · t + b`: a product and, where the decoder has no offset, `b = −0`
//! (adding −0 changes no value, not even the sign of a zero). So a value found by code equals the
//! decoded value bit for bit; `tests::groups_agree_with_the_decoders` holds every format to it.
//!
//! Only formats with few codes over many elements have groups (Q1_0, Q2_0, TQ2_0): there a group
//! of 128 or 256 elements costs two to four bucket counts. Sixteen codes over 16 or 32 elements
//! (Q4_K, IQ4_XS, MXFP4, …) measured 1.3–2× slower counted than decoded, since counting the
//! codes costs as much as binning the values; those are decoded.

use super::f16_le;

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

/// `i − 1` for codes 0..4: the ternary and Q2_0 codes.
static MINUS_1: [f32; 16] = [-1., 0., 1., 2., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0.];
/// Q1_0's sign bit: code 0 is `−1`, code 1 is `+1`.
static SIGN: [f32; 16] = [-1., 1., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0.];

/// One group: the codes `codes` yields, counted.
#[inline(always)]
fn group(out: &mut Vec<Group>, a: f32, b: f32, table: &'static [f32; 16], codes: impl Iterator<Item = u8>) {
    let mut counts = [0u16; 16];
    for c in codes {
        counts[usize::from(c & 15)] += 1;
    }
    out.push(Group { a, b, table, counts });
}

pub(super) fn tq2_0(src: &[u8], out: &mut Vec<Group>) {
    for b in src.as_chunks::<66>().0 {
        let d = f16_le(&b[64..]);
        let codes = b[..64].iter().flat_map(|&q| [q & 3, (q >> 2) & 3, (q >> 4) & 3, q >> 6]);
        group(out, d, NO_OFFSET, &MINUS_1, codes);
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
    pub(crate) const GROUPED: [crate::decode::BlockCodec; 3] = [ggml::TQ2_0, ggml::Q1_0, ggml::Q2_0];

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
        for plain in [ggml::Q8_0, ggml::Q4_K, ggml::MXFP4, ggml::F16, iquants::IQ4_XS, iquants::IQ2_XXS] {
            assert!(plain.groups.is_none());
        }
    }
}
