//! Block types as groups of stored codes: within a group every value is `a · table[code] + b`,
//! computed in `f32` in that order, so a histogram can count codes per group and convert each
//! distinct value once ([`crate::codes::add_groups`]) instead of decoding every element.
//!
//! Each format's `a` and `b` are the scale and offset its decoder uses, and its decoder's `f32`
//! operations are exactly `a · t + b`: a product and, where the decoder has no offset, `b = −0`
//! (adding −0 changes no value, not even the sign of a zero). So a value found by code equals the
//! decoded value bit for bit; `tests::groups_agree_with_the_decoders` holds every format to it.
//!
//! Formats with few codes over many elements have groups: Q1_0, Q2_0, TQ1_0 and TQ2_0 (two to
//! four codes over 64 to 256 elements, counted with population counts or, for TQ1_0's trits, a
//! table per byte), IQ1_S (three grid values per 32 elements, counted per grid row by table),
//! and the 4-bit ones with a scale per 32 elements (Q4_0, Q4_1, Q4_K, IQ4_NL, IQ4_XS, MXFP4),
//! whose codes are counted in vectors ([`super::nibbles`]), as are Q5_0's 32 five-bit codes, two
//! groups of sixteen under one scale ([`Grouping::ByScalePairs`]). Types with a scale per 16 or 8
//! elements have quads ([`Quad`]), four sub-blocks' few codes as one set of sixteen entries: Q2_K
//! (four codes per 16 elements), Q3_K (eight per 16, two quads by the high-mask bit) and IQ1_M
//! (three grid values per 8). Codes are never counted one by one: a run of equal codes then waits
//! on one counter (TQ2_0 ran at a third of ggml's speed so), and sixteen codes over 32 elements
//! cost as much as binning the values.
//!
//! Where a block has one scale and no offset (Q1_0, Q2_0, TQ1_0, TQ2_0, Q4_0, Q5_0, IQ4_NL,
//! MXFP4), a piece's blocks are merged by their scale's stored bits as they are counted
//! ([`Grouping::ByScale`], [`Grouping::ByScalePairs`], [`super::by_scale`]).
//! NVFP4's one-byte scales over 16 elements leave few enough (scale, code)
//! pairs to count each element's pair in a small table, a piece at a time
//! ([`Grouping::ByScaleByte`]). (Q5_1 and Q8_0 are decoded: Q5_1's scale and offset are distinct per
//! block, and as two groups a block, unmerged, it measured 0.67x; Q8_0's 256 codes per 32
//! elements would cost a count each.)

use super::by_scale::{ByScale, ScaleOf, AHEAD};
use super::nibbles::{self, Counter};
use super::{f16_le, f16_to_f32, ggml, iquants, u16_at};

/// The offset of formats whose decoder adds none: `x + (−0.0) == x` for every `x`.
const NO_OFFSET: f32 = -0.0;

/// A scale or an offset of a set of [`Entries`]: one for all sixteen, or four (entry `i` taking
/// the `i % 4`th).
pub trait Scale: Copy {
    /// The four, one repeated where there is one.
    fn four(self) -> [f32; 4];
}

impl Scale for f32 {
    #[inline(always)]
    fn four(self) -> [f32; 4] {
        [self; 4]
    }
}

impl Scale for [f32; 4] {
    #[inline(always)]
    fn four(self) -> [f32; 4] {
        self
    }
}

/// What [`crate::codes::add_groups`] counts: sixteen entries, each a value and how many of a
/// block's elements hold it. Entry `i` is worth `a[i % 4] · table[i] + b[i % 4]` (see
/// [`Scale`]), computed in `f32` in that order.
#[derive(Clone, Copy, Debug)]
pub struct Entries<S> {
    pub a: S,
    pub b: S,
    pub table: &'static [f32; 16],
    pub counts: [u16; 16],
}

impl<S: Scale> Entries<S> {
    /// Entry `i`'s value.
    #[inline(always)]
    pub fn value(&self, i: usize) -> f32 {
        self.a.four()[i % 4] * self.table[i] + self.b.four()[i % 4]
    }
}

/// A group of a block's values under one scale and offset: per code, how many elements hold it.
pub type Group = Entries<f32>;

impl Group {
    /// A group of scale `a` and offset `b`.
    #[inline(always)]
    pub fn new(a: f32, b: f32, table: &'static [f32; 16], counts: [u16; 16]) -> Group {
        Group { a, b, table, counts }
    }
}

/// Four sub-blocks of up to four codes each, for types whose scales cover 16 values or fewer
/// (Q2_K, IQ1_M): entry `i` is code `i / 4` of sub-block `i % 4`. Kept apart from [`Group`]
/// so that groups of one scale stay small (as quads, the 4-bit types measured 0.82-0.90x).
pub type Quad = Entries<[f32; 4]>;

/// Appends the groups of `src`'s whole blocks to `out` (see [`super::BlockCodec::groups`]).
pub type GroupsFn = fn(src: &[u8], out: &mut Vec<Group>);
/// Merges the blocks of `src` into `out` by their `f16` scale's bits as they are counted: a
/// block of one scale and no offset is `H` groups, one per table of the type (Q4_0 and IQ4_NL
/// have one; Q5_0 two, its codes `0..16` and `16..32`).
pub type MergedFn<const H: usize> = fn(src: &[u8], out: &mut ByScale<H>);
/// Appends the quads of `src`'s whole blocks to `out`.
pub type QuadsFn = fn(src: &[u8], out: &mut Vec<Quad>);

/// How a block type's blocks are taken apart into entries.
#[derive(Clone, Copy, Debug)]
pub enum Grouping {
    Groups(GroupsFn),
    /// Blocks of one group under one scale (an `f16` or an `E8M0` byte) and no offset: a piece
    /// holds few distinct scales, so the blocks are merged by their scale's stored bits as they
    /// are counted ([`super::by_scale`]). (Blocks of two scales, or a scale and an offset, have
    /// too many distinct keys: Q4_1, Q4_K, IQ4_XS and IQ1_S ran at 0.4-0.5x so.)
    ByScale {
        merged: MergedFn<1>,
        /// The same blocks as groups, for pieces too small to merge (a sample's).
        groups: GroupsFn,
    },
    /// As [`Grouping::ByScale`] for blocks of two groups under one scale (Q5_0's 32 codes of
    /// five bits, halves `0..16` and `16..32`).
    ByScalePairs {
        merged: MergedFn<2>,
        /// The same blocks as groups, two a block.
        groups: GroupsFn,
    },
    Quads(QuadsFn),
    /// Groups of a whole piece, one per one-byte scale counted (NVFP4): the function counts its
    /// input's values by (scale byte, code) itself, so it is called once a piece, not a batch
    /// at a time.
    ByScaleByte(GroupsFn),
}

/// `i − 1` for codes 0..4: the ternary and Q2_0 codes.
///
/// In this table and [`SIGN`], the entries past the codes that occur (their counts always zero)
/// hold distinct values: every entry's count is added to its value's bucket, and twelve adds
/// to one bucket back to back wait on each other (such groups took 3x as long).
static MINUS_1: [[f32; 16]; 1] = [widen(&[-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14])];
/// Q1_0's sign bit: code 0 is `−1`, code 1 is `+1`.
static SIGN: [[f32; 16]; 1] = [widen(&[-1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15])];
/// The codes as they are: Q4_K and Q4_1.
static IDENTITY: [f32; 16] = widen(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]);
/// `q − 8`: Q4_0.
pub static MINUS_8: [[f32; 16]; 1] = [widen(&[-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7])];
/// `q − 16` for codes `0..16` and `16..32`: Q5_0's halves.
pub static MINUS_16: [[f32; 16]; 2] = [
    widen(&[-16, -15, -14, -13, -12, -11, -10, -9, -8, -7, -6, -5, -4, -3, -2, -1]),
    widen(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]),
];
/// IQ4_NL's and IQ4_XS's levels.
pub static IQ4: [[f32; 16]; 1] = [widen(&super::iq_tables::KVALUES_IQ4NL)];
/// MXFP4's doubled E2M1 values.
static FP4: [[f32; 16]; 1] = [widen(&ggml::FP4_DOUBLED)];

/// A table of small integers as `f32` (each exact).
const fn widen(t: &[i8; 16]) -> [f32; 16] {
    let mut out = [0f32; 16];
    let mut i = 0;
    while i < 16 {
        out[i] = t[i] as f32;
        i += 1;
    }
    out
}

/// Counts of the 2-bit codes packed four to a byte in `words` (little-endian), from population
/// counts of each code's bit pattern: `[0, 1, 2, 3]`.
#[inline(always)]
fn count2(words: &[[u8; 8]]) -> [u16; 4] {
    const LOW: u64 = 0x5555_5555_5555_5555;
    let (mut n1, mut n2, mut n3) = (0, 0, 0);
    for w in words {
        let w = u64::from_le_bytes(*w);
        let (lo, hi) = (w & LOW, (w >> 1) & LOW);
        n1 += (lo & !hi).count_ones();
        n2 += (hi & !lo).count_ones();
        n3 += (lo & hi).count_ones();
    }
    let all = 32 * words.len() as u32;
    [all - n1 - n2 - n3, n1, n2, n3].map(|n| n as u16)
}

/// Four counts as the first of a group's sixteen.
#[inline(always)]
fn counts4(c: [u16; 4]) -> [u16; 16] {
    let mut out = [0; 16];
    out[..4].copy_from_slice(&c);
    out
}

/// A group function over 1- or 2-bit codes counted with population counts, compiled with
/// `popcnt` where the CPU has it.
macro_rules! popcount_groups {
    ($(#[$doc:meta])* $name:ident = $with:ident) => {
        popcount_groups!($(#[$doc])* $name = $with, Vec<Group>);
    };
    ($(#[$doc:meta])* $name:ident = $with:ident, $out:ty) => {
        $(#[$doc])*
        pub(super) fn $name(src: &[u8], out: &mut $out) {
            #[cfg(target_arch = "x86_64")]
            if std::is_x86_feature_detected!("popcnt") {
                #[target_feature(enable = "popcnt")]
                unsafe fn popcnt(src: &[u8], out: &mut $out) {
                    $with(src, out)
                }
                // SAFETY: detected just now.
                return unsafe { popcnt(src, out) };
            }
            $with(src, out)
        }
    };
}

/// Code `i / 4` for entry `i`: Q2_K's quads.
static QUAD_CODES: [f32; 16] = widen(&[0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3]);

/// Counts of the four 2-bit fields of 16 bytes, as a quad's: entry `4c + j` is how many bytes
/// hold code `c` at bits `2j..2j + 2`.
#[inline(always)]
fn count_fields(bytes: &[u8; 16]) -> [u16; 16] {
    const LOW: u64 = 0x5555_5555_5555_5555;
    const FIELD0: u64 = 0x0101_0101_0101_0101;
    let mut n = [[0u32; 4]; 4];
    for w in bytes.as_chunks::<8>().0 {
        let w = u64::from_le_bytes(*w);
        let (lo, hi) = (w & LOW, (w >> 1) & LOW);
        let planes = [lo & !hi, hi & !lo, lo & hi];
        for (plane, n) in planes.into_iter().zip(&mut n[1..]) {
            for (j, n) in n.iter_mut().enumerate() {
                *n += (plane & FIELD0 << (2 * j)).count_ones();
            }
        }
    }
    let mut counts = [0u16; 16];
    for j in 0..4 {
        n[0][j] = 16 - n[1][j] - n[2][j] - n[3][j];
        for c in 0..4 {
            counts[4 * c + j] = n[c][j] as u16;
        }
    }
    counts
}

popcount_groups!(
    /// Q2_K: `d·(sc & 15)·q − dmin·(sc >> 4)` per 16 values of 2-bit codes. A quad is the four
    /// sub-blocks that share 16 code bytes (one 2-bit field each): each sub-block's four codes
    /// are values of their own, and as groups of 16 values, one scale each, Q2_K measured 0.83x
    /// its decoded path.
    q2_k = q2_k_with,
    Vec<Quad>
);
#[inline(always)]
fn q2_k_with(src: &[u8], out: &mut Vec<Quad>) {
    for b in src.as_chunks::<84>().0 {
        let (sc, qs) = (&b[..16], &b[16..80]);
        let (d, min) = (f16_le(&b[80..]), f16_le(&b[82..]));
        // Bytes `16q..16q + 16` of `qs` (q = 2·half + part) hold, at bits 2j, sub-block
        // 8·half + 2j + part of the decoder's order.
        for (q, bytes) in qs.as_chunks::<16>().0.iter().enumerate() {
            let (mut a, mut o) = ([0f32; 4], [0f32; 4]);
            for j in 0..4 {
                let s = sc[8 * (q / 2) + 2 * j + q % 2];
                // The decoder's `dl · q − ml`, as `dl · q + (−ml)`: the same rounding.
                a[j] = d * f32::from(s & 0x0f);
                o[j] = -(min * f32::from(s >> 4));
            }
            out.push(Quad { a, b: o, table: &QUAD_CODES, counts: count_fields(bytes) });
        }
    }
}

/// Code `i / 4 − 4` for entry `i`: Q3_K's quads of codes whose high-mask bit is clear.
static QUAD_CODES_MINUS_4: [f32; 16] = widen(&[-4, -4, -4, -4, -3, -3, -3, -3, -2, -2, -2, -2, -1, -1, -1, -1]);

/// [`count_fields`] split by a bit per field: of the codes at bits `2j..2j + 2` of `bytes`, those
/// whose byte in `mask` has bit `first + j` set, and those where it is clear (entries `4c + j`).
#[inline(always)]
fn count_fields_split(bytes: &[u8; 16], mask: &[u8; 16], first: u32) -> ([u16; 16], [u16; 16]) {
    const LOW: u64 = 0x5555_5555_5555_5555;
    const FIELD0: u64 = 0x0101_0101_0101_0101;
    let all = count_fields(bytes);
    let mut set = [0u32; 16];
    for (w, m) in bytes.as_chunks::<8>().0.iter().zip(mask.as_chunks::<8>().0) {
        let (w, m) = (u64::from_le_bytes(*w), u64::from_le_bytes(*m));
        let (lo, hi) = (w & LOW, (w >> 1) & LOW);
        let planes = [LOW & !(lo | hi), lo & !hi, hi & !lo, lo & hi];
        for j in 0..4 {
            // Each byte's mask bit for field j, moved to the field's low bit.
            let bit = ((m >> (first + j)) & FIELD0) << (2 * j);
            for (c, plane) in planes.iter().enumerate() {
                set[4 * c + j as usize] += (plane & bit).count_ones();
            }
        }
    }
    let set = set.map(|n| n as u16);
    (set, std::array::from_fn(|i| all[i] - set[i]))
}

/// Q3_K: `(d·(sc − 32))·q` per 16 values, `q` the two low bits less 4 where the value's
/// high-mask bit is clear. As Q2_K, 16 code bytes hold four sub-blocks; their codes with the mask
/// bit set (`q` 0..4) are one quad, those with it clear (`q` −4..0) another: 32 entries per 64
/// values, against a bucket per value decoded.
pub(super) fn q3_k(src: &[u8], out: &mut Vec<Quad>) {
    #[cfg(target_arch = "x86_64")]
    if super::q3k_avx512::detected() {
        #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512bitalg,gfni")]
        unsafe fn avx512(src: &[u8], out: &mut Vec<Quad>) {
            // SAFETY: the CPU has what `counts` needs (this function's features).
            q3_k_with(src, out, |b| unsafe { super::q3k_avx512::counts(b) })
        }
        // SAFETY: detected just now.
        return unsafe { avx512(src, out) };
    }
    q3_k_popcount(src, out)
}

popcount_groups!(
    /// [`q3_k`] with scalar population counts.
    q3_k_popcount = q3_k_scalar,
    Vec<Quad>
);
#[inline(always)]
fn q3_k_scalar(src: &[u8], out: &mut Vec<Quad>) {
    q3_k_with(src, out, |b| {
        let (hm, qs) = (&b[..32], &b[32..96]);
        std::array::from_fn(|q| {
            let (half, part) = (q / 2, q % 2);
            let bytes = qs[16 * q..16 * q + 16].try_into().expect("16 code bytes");
            let mask = hm[16 * part..16 * part + 16].try_into().expect("16 mask bytes");
            let (set, clear) = count_fields_split(bytes, mask, 4 * half as u32);
            [clear, set]
        })
    })
}

/// [`q3_k`]'s quads, each block's counts taken by `counts` (`[clear, set]` per 16 code bytes,
/// as [`count_fields_split`]).
#[inline(always)]
fn q3_k_with(src: &[u8], out: &mut Vec<Quad>, counts: impl Fn(&[u8; 110]) -> [[[u16; 16]; 2]; 4]) {
    for b in src.as_chunks::<110>().0 {
        let sc = ggml::q3k_scales(&b[96..108]);
        let d = f16_le(&b[108..]);
        // As Q2_K's: bytes `16q..16q + 16` of the codes (q = 2·half + part) hold sub-block
        // 8·half + 2j + part at bits 2j; its mask bits are bit 4·half + j of mask bytes
        // `16·part..16·part + 16`.
        for (q, [clear, set]) in counts(b).into_iter().enumerate() {
            let (half, part) = (q / 2, q % 2);
            // The decoder's `d · (sc − 32)`, each sub-block's scale.
            let a = std::array::from_fn(|j| d * (i32::from(sc[8 * half + 2 * j + part]) - 32) as f32);
            out.push(Quad { a, b: [NO_OFFSET; 4], table: &QUAD_CODES, counts: set });
            out.push(Quad { a, b: [NO_OFFSET; 4], table: &QUAD_CODES_MINUS_4, counts: clear });
        }
    }
}

/// Blocks of `B` bytes, one group each of `tables` under the `f16` scale stored at byte `AT`,
/// as `counts` counts them: merged by the scale's bits. (`counts` is a function pointer, a
/// constant once this is inlined, so its `#[inline(always)]` body is inlined too: taken as an
/// `impl Fn`, TQ1_0's was called through its `Fn` shim, its counts handed back through memory,
/// and the histogram took 1.3x as long.)
#[inline(always)]
fn merged_blocks<const B: usize, const AT: usize>(
    src: &[u8],
    out: &mut ByScale<1>,
    tables: &'static [[f32; 16]; 1],
    counts: fn(&[u8; B]) -> [u16; 16],
) {
    let kind = out.begin(tables, f16_to_f32);
    let blocks = src.as_chunks::<B>().0;
    for (n, b) in blocks.iter().enumerate() {
        if let Some(ahead) = blocks.get(n + AHEAD) {
            out.prefetch(usize::from(u16_at(ahead, AT)));
        }
        out.merge(usize::from(u16_at(b, AT)), [counts(b)], kind);
    }
}

/// Blocks of `B` bytes, one group each of `tables` under the `f16` scale stored at byte `AT`,
/// as `counts` counts them: as groups.
#[inline(always)]
fn blocks_as_groups<const B: usize, const AT: usize>(
    src: &[u8],
    out: &mut Vec<Group>,
    tables: &'static [[f32; 16]; 1],
    counts: fn(&[u8; B]) -> [u16; 16],
) {
    for b in src.as_chunks::<B>().0 {
        out.push(Group::new(f16_le(&b[AT..]), NO_OFFSET, &tables[0], counts(b)));
    }
}

/// TQ2_0's counts of its 256 codes of 2 bits.
#[inline(always)]
fn tq2_0_counts(b: &[u8; 66]) -> [u16; 16] {
    counts4(count2(b[..64].as_chunks::<8>().0))
}
popcount_groups!(
    /// TQ2_0: `(q − 1) · d`, 256 codes of 2 bits.
    tq2_0 = tq2_0_merged,
    ByScale<1>
);
#[inline(always)]
fn tq2_0_merged(src: &[u8], out: &mut ByScale<1>) {
    merged_blocks::<66, 64>(src, out, &MINUS_1, tq2_0_counts)
}
popcount_groups!(
    /// TQ2_0's blocks as groups.
    tq2_0_groups = tq2_0_as_groups
);
#[inline(always)]
fn tq2_0_as_groups(src: &[u8], out: &mut Vec<Group>) {
    blocks_as_groups::<66, 64>(src, out, &MINUS_1, tq2_0_counts)
}

/// Q2_0's counts of its 64 codes of 2 bits.
#[inline(always)]
fn q2_0_counts(b: &[u8; 18]) -> [u16; 16] {
    counts4(count2(b[2..].as_chunks::<8>().0))
}
popcount_groups!(
    /// Q2_0: `(q − 1) · d`, 64 codes of 2 bits.
    q2_0 = q2_0_merged,
    ByScale<1>
);
#[inline(always)]
fn q2_0_merged(src: &[u8], out: &mut ByScale<1>) {
    merged_blocks::<18, 0>(src, out, &MINUS_1, q2_0_counts)
}
popcount_groups!(
    /// Q2_0's blocks as groups.
    q2_0_groups = q2_0_as_groups
);
#[inline(always)]
fn q2_0_as_groups(src: &[u8], out: &mut Vec<Group>) {
    blocks_as_groups::<18, 0>(src, out, &MINUS_1, q2_0_counts)
}

/// Q1_0's counts of its 128 sign bits.
#[inline(always)]
fn q1_0_counts(b: &[u8; 18]) -> [u16; 16] {
    let ones: u32 = b[2..].as_chunks::<8>().0.iter().map(|w| u64::from_le_bytes(*w).count_ones()).sum();
    counts4([128 - ones as u16, ones as u16, 0, 0])
}
popcount_groups!(
    /// Q1_0: `±d`, 128 sign bits.
    q1_0 = q1_0_merged,
    ByScale<1>
);
#[inline(always)]
fn q1_0_merged(src: &[u8], out: &mut ByScale<1>) {
    merged_blocks::<18, 0>(src, out, &SIGN, q1_0_counts)
}
popcount_groups!(
    /// Q1_0's blocks as groups.
    q1_0_groups = q1_0_as_groups
);
#[inline(always)]
fn q1_0_as_groups(src: &[u8], out: &mut Vec<Group>) {
    blocks_as_groups::<18, 0>(src, out, &SIGN, q1_0_counts)
}

/// Per byte of TQ1_0's `qs` (`N` = 5 trits) or `qh` (4): how many of its trits are 0, 1 and 2,
/// in 16-bit fields of a `u64` (a block's 256 trits then sum without carries).
const fn trit_counts<const N: usize>() -> [u64; 256] {
    let mut t = [0u64; 256];
    let mut q = 0;
    while q < 256 {
        let mut n = 0;
        while n < N {
            t[q] += 1 << (16 * ggml::trit(q as u8, n));
            n += 1;
        }
        q += 1;
    }
    t
}
static TRITS_OF_QS: [u64; 256] = trit_counts::<5>();
static TRITS_OF_QH: [u64; 256] = trit_counts::<4>();

/// TQ1_0's counts of its 256 trits, packed five (`qs`) or four (`qh`) to a byte.
#[inline(always)]
fn tq1_0_counts(b: &[u8; 54]) -> [u16; 16] {
    let qs: u64 = b[..48].iter().map(|&q| TRITS_OF_QS[usize::from(q)]).sum();
    let qh: u64 = b[48..52].iter().map(|&q| TRITS_OF_QH[usize::from(q)]).sum();
    let all = qs + qh;
    counts4([all as u16, (all >> 16) as u16, (all >> 32) as u16, 0])
}

/// TQ1_0: `(t − 1) · d`, 256 trits.
pub(super) fn tq1_0(src: &[u8], out: &mut ByScale<1>) {
    merged_blocks::<54, 52>(src, out, &MINUS_1, tq1_0_counts)
}

/// TQ1_0's blocks as groups.
pub(super) fn tq1_0_groups(src: &[u8], out: &mut Vec<Group>) {
    blocks_as_groups::<54, 52>(src, out, &MINUS_1, tq1_0_counts)
}

/// IQ1_S's levels: a grid value (−1, 0 or 1, as code 0, 1, 2) plus the sub-block's delta, as its
/// decoder adds them; distinct values past them.
const fn iq1_levels(delta: f32) -> [f32; 16] {
    let mut t = [0f32; 16];
    let mut i = 0;
    while i < 16 {
        t[i] = (i as f32 - 1.0) + delta;
        i += 1;
    }
    t
}
static IQ1_PLUS: [f32; 16] = iq1_levels(iquants::IQ1_DELTA);
static IQ1_MINUS: [f32; 16] = iq1_levels(-iquants::IQ1_DELTA);

/// Per IQ1_S grid row: how many of its eight values are −1, 0 and 1, in bytes 0, 1 and 2.
static IQ1S_ROW_COUNTS: [u32; 2048] = {
    let mut t = [0u32; 2048];
    let mut i = 0;
    while i < 2048 {
        let row = super::iq_tables::IQ1S_GRID[i].to_le_bytes();
        let mut j = 0;
        while j < 8 {
            let g = row[j] as i8;
            assert!(g >= -1 && g <= 1, "IQ1_S grid values are -1, 0 or 1");
            t[i] += 1 << (8 * (g + 1));
            j += 1;
        }
        i += 1;
    }
    t
};

/// IQ1_S: per 32 values `dl · (grid ± δ)`, the grid rows' values counted by table.
pub(super) fn iq1_s(src: &[u8], out: &mut Vec<Group>) {
    for b in src.as_chunks::<{ iquants::IQ1_S_BYTES }>().0 {
        let d = f16_le(b);
        let (qs, qh) = (&b[2..34], &b[34..50]);
        for ib in 0..8 {
            let h = u16::from_le_bytes([qh[2 * ib], qh[2 * ib + 1]]);
            let a = d * f32::from(2 * (h >> 12 & 7) + 1);
            let table = if h & 0x8000 != 0 { &IQ1_MINUS } else { &IQ1_PLUS };
            let rows: u32 =
                (0..4).map(|l| IQ1S_ROW_COUNTS[usize::from(qs[4 * ib + l]) | usize::from(h >> (3 * l) & 7) << 8]).sum();
            let counts = counts4([rows as u8, (rows >> 8) as u8, (rows >> 16) as u8, 0].map(u16::from));
            out.push(Group::new(a, NO_OFFSET, table, counts));
        }
    }
}

/// IQ1_M's quad tables: entry `4c + j` is grid value `c − 1` (distinct values past 1) plus the
/// delta of the quad's eight-value group `j`, negative where bit `j` of the table's index is set.
static IQ1M_TABLES: [[f32; 16]; 16] = {
    let mut t = [[0f32; 16]; 16];
    let mut m = 0;
    while m < 16 {
        let mut i = 0;
        while i < 16 {
            let delta = if m >> (i % 4) & 1 != 0 { -iquants::IQ1_DELTA } else { iquants::IQ1_DELTA };
            t[m][i] = ((i / 4) as f32 - 1.0) + delta;
            i += 1;
        }
        m += 1;
    }
    t
};

/// IQ1_M: `dl · (grid ± δ)` with a scale per 16 values and a delta per 8, four groups of eight
/// values a quad (entry `4c + j`: grid value `c − 1` of group `j`), the grid rows' values counted
/// by table.
pub(super) fn iq1_m(src: &[u8], out: &mut Vec<Quad>) {
    for b in src.as_chunks::<{ iquants::IQ1_M_BYTES }>().0 {
        let d = iquants::iq1_m_scale(b);
        let (qs, qh) = (&b[0..32], &b[32..48]);
        // Quad `q` holds eight-value groups `4q..4q + 4`: two 16-value sub-blocks, whose 3-bit
        // scales are bits `6(q % 2)..` of the u16 at `48 + 2(q / 2)` (one read for both: the
        // decoder's per-sub-block reading, called twice here, measured 0.97x).
        for q in 0..8 {
            let scales = u16::from_le_bytes([b[48 + 2 * (q / 2)], b[49 + 2 * (q / 2)]]) >> (6 * (q % 2));
            let dl = [scales & 7, scales >> 3 & 7].map(|s| d * f32::from(2 * s + 1));
            let (mut signs, mut counts) = (0, [0u16; 16]);
            for j in 0..4 {
                let k = 4 * q + j;
                let h = qh[k / 2] >> (4 * (k % 2));
                signs |= usize::from(h >> 3 & 1) << j;
                let row = IQ1S_ROW_COUNTS[usize::from(qs[k]) | usize::from(h & 7) << 8];
                for c in 0..3 {
                    counts[4 * c + j] = (row >> (8 * c) & 0xff) as u16;
                }
            }
            let a = [dl[0], dl[0], dl[1], dl[1]];
            out.push(Quad { a, b: [NO_OFFSET; 4], table: &IQ1M_TABLES[signs], counts });
        }
    }
}

/// A group function over 4-bit codes, `$with::<C>(src, out)`, run with the fastest nibble
/// [`Counter`] the CPU has.
macro_rules! nibble_groups {
    ($(#[$doc:meta])* $name:ident = $with:ident) => {
        nibble_groups!($(#[$doc])* $name = $with, Vec<Group>);
    };
    ($(#[$doc:meta])* $name:ident = $with:ident, $out:ty) => {
        $(#[$doc])*
        pub(super) fn $name(src: &[u8], out: &mut $out) {
            #[cfg(target_arch = "x86_64")]
            {
                if nibbles::Avx512::detected() {
                    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512vpopcntdq,gfni,f16c")]
                    unsafe fn avx512(src: &[u8], out: &mut $out) {
                        $with::<nibbles::Avx512>(src, out)
                    }
                    // SAFETY: detected just now.
                    return unsafe { avx512(src, out) };
                }
                if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("popcnt") {
                    #[target_feature(enable = "avx2,popcnt")]
                    unsafe fn avx2(src: &[u8], out: &mut $out) {
                        $with::<nibbles::Avx2>(src, out)
                    }
                    // SAFETY: both detected just now.
                    return unsafe { avx2(src, out) };
                }
            }
            #[cfg(target_arch = "wasm32")]
            return $with::<nibbles::Simd128>(src, out);
            #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
            return $with::<nibbles::Neon>(src, out);
            #[cfg(not(any(target_arch = "wasm32", all(target_arch = "aarch64", target_feature = "neon"))))]
            $with::<nibbles::Plain>(src, out)
        }
    };
}

nibble_groups!(
    /// Q4_K: per 32 values `(d·sc) q − dmin·m`, as its decoder computes them.
    q4_k = q4_k_with
);
#[inline(always)]
fn q4_k_with<C: Counter>(src: &[u8], out: &mut Vec<Group>) {
    for b in src.as_chunks::<144>().0 {
        let (d, min) = (f16_le(b), f16_le(&b[2..]));
        let counts = C::split(b[16..].try_into().expect("128 code bytes"));
        for chunk in 0..4 {
            let [(d1, m1), (d2, m2)] = ggml::k_chunk_scales(d, min, &b[4..16], chunk);
            out.push(Group::new(d1, -m1, &IDENTITY, counts[2 * chunk]));
            out.push(Group::new(d2, -m2, &IDENTITY, counts[2 * chunk + 1]));
        }
    }
}

nibble_groups!(
    /// IQ4_XS: `d · (scale − 32) · level` per 32 values.
    iq4_xs = iq4_xs_with
);
#[inline(always)]
fn iq4_xs_with<C: Counter>(src: &[u8], out: &mut Vec<Group>) {
    for b in src.as_chunks::<{ iquants::IQ4_XS_BYTES }>().0 {
        let d = f16_le(b);
        let counts = C::joint(b[8..].try_into().expect("128 code bytes"));
        for (ib, counts) in counts.into_iter().enumerate() {
            out.push(Group::new(iquants::iq4_xs_scale(b, d, ib), NO_OFFSET, &IQ4[0], counts));
        }
    }
}

/// Blocks of `B` bytes whose 16 code bytes start at `AT`, counted two blocks at a time: each
/// block's values are `a · table[code] + b`, `(a, b) = scale(block)`.
#[inline(always)]
fn pairs<C: Counter, const B: usize, const AT: usize>(
    src: &[u8],
    out: &mut Vec<Group>,
    table: &'static [f32; 16],
    scales: impl Fn(&[u8; B], &[u8; B]) -> [f32; 4],
) {
    let codes = |b: &[u8; B]| -> [u8; 16] { b[AT..AT + 16].try_into().expect("16 code bytes") };
    let (blocks, _) = src.as_chunks::<B>();
    let (twos, rest) = blocks.as_chunks::<2>();
    for [p, q] in twos {
        // The counts go straight into the groups: built by a closure, they went through memory
        // (Q4_1 took 1.6x as long).
        let [cp, cq] = C::pair(&codes(p), &codes(q));
        let [pa, pb, qa, qb] = scales(p, q);
        out.push(Group::new(pa, pb, table, cp));
        out.push(Group::new(qa, qb, table, cq));
    }
    for b in rest {
        let [a, o, ..] = scales(b, b);
        out.push(Group::new(a, o, table, C::pair(&codes(b), &codes(b))[0]));
    }
}

/// Blocks of `B` bytes whose 16 code bytes of `tables` start at `AT`, counted two at a time and
/// merged by their scale's stored bits, which `key` takes from a block (standing for scale
/// `scale_of(key)`): Q4_0, IQ4_NL, MXFP4.
#[inline(always)]
fn merged_singles<C: Counter, const B: usize, const AT: usize>(
    src: &[u8],
    out: &mut ByScale<1>,
    tables: &'static [[f32; 16]; 1],
    scale_of: ScaleOf,
    key: impl Fn(&[u8; B]) -> u16,
) {
    let codes = |b: &[u8; B]| -> [u8; 16] { b[AT..AT + 16].try_into().expect("16 code bytes") };
    let scale = |b: &[u8; B]| usize::from(key(b));
    let tables = out.begin(tables, scale_of);
    let (blocks, _) = src.as_chunks::<B>();
    let (twos, rest) = blocks.as_chunks::<2>();
    for (n, [p, q]) in twos.iter().enumerate() {
        if let Some([a, b]) = twos.get(n + AHEAD / 2) {
            out.prefetch(scale(a));
            out.prefetch(scale(b));
        }
        let [cp, cq] = C::pair(&codes(p), &codes(q));
        out.merge(scale(p), [cp], tables);
        out.merge(scale(q), [cq], tables);
    }
    for b in rest {
        out.merge(scale(b), [C::pair(&codes(b), &codes(b))[0]], tables);
    }
}

nibble_groups!(
    /// Q4_0: `(q − 8) · d`, of [`MINUS_8`].
    q4_0 = q4_0_merged,
    ByScale<1>
);
#[inline(always)]
fn q4_0_merged<C: Counter>(src: &[u8], out: &mut ByScale<1>) {
    merged_singles::<C, 18, 2>(src, out, &MINUS_8, f16_to_f32, |b| u16_at(b, 0))
}
nibble_groups!(
    /// Q4_0's blocks as groups.
    q4_0_groups = q4_0_groups_with
);
#[inline(always)]
fn q4_0_groups_with<C: Counter>(src: &[u8], out: &mut Vec<Group>) {
    pairs::<C, 18, 2>(src, out, &MINUS_8[0], |p, q| C::f16s([u16_at(p, 0), NO_OFFSET_F16, u16_at(q, 0), NO_OFFSET_F16]))
}

/// [`NO_OFFSET`] as `f16` bits.
const NO_OFFSET_F16: u16 = 0x8000;

nibble_groups!(
    /// Q4_1: `q · d + m`.
    q4_1 = q4_1_with
);
#[inline(always)]
fn q4_1_with<C: Counter>(src: &[u8], out: &mut Vec<Group>) {
    pairs::<C, 20, 4>(src, out, &IDENTITY, |p, q| C::f16s([u16_at(p, 0), u16_at(p, 2), u16_at(q, 0), u16_at(q, 2)]))
}

nibble_groups!(
    /// Q5_0: `(q − 16) · d`, 32 codes of five bits as a pair of groups of [`MINUS_16`], merged
    /// by their scale's bits.
    q5_0 = q5_0_merged,
    ByScale<2>
);
#[inline(always)]
fn q5_0_merged<C: Counter>(src: &[u8], out: &mut ByScale<2>) {
    let tables = out.begin(&MINUS_16, f16_to_f32);
    let blocks = src.as_chunks::<22>().0;
    for (n, b) in blocks.iter().enumerate() {
        if let Some(ahead) = blocks.get(n + AHEAD) {
            out.prefetch(usize::from(u16_at(ahead, 0)));
        }
        out.merge(usize::from(u16_at(b, 0)), q5_0_counts::<C>(b), tables);
    }
}
nibble_groups!(
    /// Q5_0's blocks as groups, two a block.
    q5_0_groups = q5_0_groups_with
);
#[inline(always)]
fn q5_0_groups_with<C: Counter>(src: &[u8], out: &mut Vec<Group>) {
    out.reserve(src.len() / 22 * 2);
    for b in src.as_chunks::<22>().0 {
        let d = f16_le(b);
        for (table, counts) in MINUS_16.iter().zip(q5_0_counts::<C>(b)) {
            out.push(Group::new(d, NO_OFFSET, table, counts));
        }
    }
}
/// A Q5_0 block's counts of codes `0..16` and `16..32`.
#[inline(always)]
fn q5_0_counts<C: Counter>(b: &[u8; 22]) -> [[u16; 16]; 2] {
    let qh = u32::from_le_bytes([b[2], b[3], b[4], b[5]]);
    C::fives(b[6..].try_into().expect("16 code bytes"), qh)
}

nibble_groups!(
    /// IQ4_NL: `d · level`, of [`IQ4`].
    iq4_nl = iq4_nl_merged,
    ByScale<1>
);
#[inline(always)]
fn iq4_nl_merged<C: Counter>(src: &[u8], out: &mut ByScale<1>) {
    merged_singles::<C, 18, 2>(src, out, &IQ4, f16_to_f32, |b| u16_at(b, 0))
}
nibble_groups!(
    /// IQ4_NL's blocks as groups.
    iq4_nl_groups = iq4_nl_groups_with
);
#[inline(always)]
fn iq4_nl_groups_with<C: Counter>(src: &[u8], out: &mut Vec<Group>) {
    pairs::<C, 18, 2>(src, out, &IQ4[0], |p, q| C::f16s([u16_at(p, 0), NO_OFFSET_F16, u16_at(q, 0), NO_OFFSET_F16]))
}

nibble_groups!(
    /// MXFP4: `fp4 · 2^(e − 127)`, the doubled values times half the scale, merged by the
    /// scale's byte.
    mxfp4 = mxfp4_merged,
    ByScale<1>
);
#[inline(always)]
fn mxfp4_merged<C: Counter>(src: &[u8], out: &mut ByScale<1>) {
    merged_singles::<C, 17, 1>(src, out, &FP4, e8m0_half_of, |b| u16::from(b[0]))
}
/// Half the scale an `E8M0` byte (a key below 256) stands for.
fn e8m0_half_of(key: u16) -> f32 {
    ggml::e8m0_half(key as u8)
}
nibble_groups!(
    /// MXFP4's blocks as groups.
    mxfp4_groups = mxfp4_as_groups
);
#[inline(always)]
fn mxfp4_as_groups<C: Counter>(src: &[u8], out: &mut Vec<Group>) {
    pairs::<C, 17, 1>(src, out, &FP4[0], |p, q| [ggml::e8m0_half(p[0]), NO_OFFSET, ggml::e8m0_half(q[0]), NO_OFFSET])
}

/// NVFP4: `fp4 · d` per 16 values, `d` an unsigned E4M3 scale byte. A block's values take at
/// most 4,096 (scale byte, code) pairs, so each value's pair is counted in a table the core keeps
/// in its cache, and every scale counted becomes a group (several where a count passes
/// `u16::MAX`): no decoding, and the statistics of a call's values come from a few hundred groups.
/// (Counted by scale as sixteen codes a sub-block and merged, as the other 4-bit types are, the
/// merges of sub-blocks of one scale, back to back, waited on each other.)
///
/// The table is the call's: a call is a piece of a tensor, and each call counts afresh.
pub(super) fn nvfp4(src: &[u8], out: &mut Vec<Group>) {
    /// Blocks counted before the table is emptied: no count can pass `u32::MAX`.
    const PASS_BLOCKS: usize = 1 << 24;
    // Two tables, for the low and the high nibbles: equal pairs in a row (common: few codes
    // over sixteen values) then wait on each other half as often (1.1x measured in C).
    let [mut lo, mut hi] = [[[0u32; 16]; 256]; 2];
    for pass in src.as_chunks::<36>().0.chunks(PASS_BLOCKS) {
        for b in pass {
            for s in 0..4 {
                let (lo, hi) = (&mut lo[usize::from(b[s])], &mut hi[usize::from(b[s])]);
                let codes = u64::from_le_bytes(b[4 + 8 * s..12 + 8 * s].try_into().expect("8 code bytes"));
                for j in 0..8 {
                    lo[(codes >> (8 * j)) as usize & 15] += 1;
                    hi[(codes >> (8 * j + 4)) as usize & 15] += 1;
                }
            }
        }
        for (scale, (lo, hi)) in lo.iter_mut().zip(hi.iter_mut()).enumerate() {
            let mut counts: [u32; 16] =
                std::array::from_fn(|c| std::mem::take(&mut lo[c]) + std::mem::take(&mut hi[c]));
            let d = ggml::ue4m3_half(scale as u8);
            while counts.iter().any(|&c| c != 0) {
                let part = counts.map(|c| c.min(u32::from(u16::MAX)) as u16);
                for (c, p) in counts.iter_mut().zip(part) {
                    *c -= u32::from(p);
                }
                out.push(Group::new(d, NO_OFFSET, &FP4[0], part));
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::decode::random_bytes;

    /// The bits of `v`, every NaN as one (a NaN's sign and payload mean nothing to a histogram).
    fn bits(v: f32) -> u32 {
        if v.is_nan() {
            f32::NAN.to_bits()
        } else {
            v.to_bits()
        }
    }

    /// Every entry's value, repeated by its count, sorted by bits: the multiset of a block's
    /// values.
    fn multiset<S: Scale>(groups: &[Entries<S>]) -> Vec<u32> {
        let mut out: Vec<u32> = groups
            .iter()
            .flat_map(|g| (0..16).flat_map(move |c| std::iter::repeat_n(bits(g.value(c)), g.counts[c] as usize)))
            .collect();
        out.sort_unstable();
        out
    }

    /// The elements `groups_of` counts in `bytes`, and their values' multiset.
    fn entries_of<S: Scale>(groups_of: fn(&[u8], &mut Vec<Entries<S>>), bytes: &[u8]) -> (usize, Vec<u32>) {
        let mut groups = Vec::new();
        groups_of(bytes, &mut groups);
        (groups.iter().flat_map(|g| g.counts).map(usize::from).sum(), multiset(&groups))
    }

    /// NVFP4's pairs counted past `u16::MAX` (a piece of one scale and mostly one code) come
    /// as several groups of that scale, which hold every value; and a piece's scales each give
    /// groups of their own, whatever the bytes.
    #[test]
    fn nvfp4_counts_past_a_group_s_are_split_into_groups() {
        let mut bytes = Vec::new();
        for i in 0..1100u32 {
            let mut block = [0u8; 36];
            block[..4].copy_from_slice(&[0x38, 0x38, 0x38, if i == 7 { 0x41 } else { 0x38 }]);
            block[4] = 0x51;
            bytes.extend_from_slice(&block);
        }
        let mut groups = Vec::new();
        nvfp4(&bytes, &mut groups);
        // Under scale 0x38, code 0 is 68,184 of 1,100 blocks' 64 codes (each block also has a
        // 1 and a 5, and one sub-block has scale 0x41).
        let scale = |g: &Group| g.a.to_bits();
        let of_38: Vec<&Group> = groups.iter().filter(|g| scale(g) == ggml::ue4m3_half(0x38).to_bits()).collect();
        assert_eq!(of_38.len(), 2, "68,184 counts of one pair need two groups");
        assert!(of_38.iter().all(|g| g.counts[0] > 0));
        assert_eq!(groups.len(), 3);
        let mut values = vec![0f32; 1100 * 64];
        (ggml::NVFP4.decode)(&bytes, &mut values);
        let mut decoded: Vec<u32> = values.iter().map(|&v| bits(v)).collect();
        decoded.sort_unstable();
        assert_eq!(multiset(&groups), decoded);
    }

    /// Q3_K's counts in vectors (where the CPU has them) are the scalar counts, block by block,
    /// on random codes and masks; and either gives the decoder's values.
    #[test]
    fn q3_k_counts_in_vectors_equal_the_scalar_counts() {
        let bytes = random_bytes(110 * 64, &mut 0x9e37_79b9_7f4a_7c15);
        let (mut scalar, mut chosen) = (Vec::new(), Vec::new());
        q3_k_popcount(&bytes, &mut scalar);
        q3_k(&bytes, &mut chosen);
        assert_eq!(scalar.len(), 8 * 64);
        for (i, (s, c)) in scalar.iter().zip(&chosen).enumerate() {
            assert_eq!((s.counts, s.a.map(f32::to_bits)), (c.counts, c.a.map(f32::to_bits)), "quad {i}");
        }
        for (i, pair) in scalar.chunks(2).enumerate() {
            let n: u32 = pair.iter().flat_map(|q| q.counts).map(u32::from).sum();
            assert_eq!(n, 64, "16 code bytes' quads {i} hold their 64 values");
        }
        let mut values = vec![0f32; 256 * 64];
        (ggml::Q3_K.decode)(&bytes, &mut values);
        let mut decoded: Vec<u32> = values.iter().map(|&v| bits(v)).collect();
        decoded.sort_unstable();
        assert_eq!(multiset(&scalar), decoded);
    }

    /// The elements `merged` counts in `bytes`, merged by their scales' bits, and their values'
    /// multiset: the same as the type's `groups` give.
    fn merged_as_groups<const H: usize>(merged: MergedFn<H>, groups: GroupsFn, bytes: &[u8]) -> (usize, Vec<u32>) {
        let mut by_scale = ByScale::<H>::default();
        merged(bytes, &mut by_scale);
        let mut out = Vec::new();
        by_scale.count_with(|g| out.extend_from_slice(g));
        let got = (out.iter().flat_map(|g| g.counts).map(usize::from).sum(), multiset(&out));
        assert_eq!(entries_of(groups, bytes), got, "merged and as groups");
        got
    }

    /// Every codec that has groups.
    pub(crate) const GROUPED: [crate::decode::BlockCodec; 16] = [
        ggml::Q2_K,
        ggml::Q3_K,
        iquants::IQ1_M,
        iquants::IQ1_S,
        ggml::TQ1_0,
        ggml::TQ2_0,
        ggml::Q1_0,
        ggml::Q2_0,
        ggml::Q4_0,
        ggml::Q4_1,
        ggml::Q4_K,
        ggml::Q5_0,
        ggml::MXFP4,
        ggml::NVFP4,
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
                let mut bytes = random_bytes(codec.block_bytes * blocks, &mut seed);
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
                let (n, got) = match groups_fn {
                    Grouping::Groups(f) | Grouping::ByScaleByte(f) => entries_of(f, &bytes),
                    Grouping::ByScale { merged, groups } => merged_as_groups(merged, groups, &bytes),
                    Grouping::ByScalePairs { merged, groups } => merged_as_groups(merged, groups, &bytes),
                    Grouping::Quads(f) => entries_of(f, &bytes),
                };
                assert_eq!(n, values.len());
                assert_eq!(got, decoded, "{} bytes per block, round {round}", codec.block_bytes);
            }
        }
        for plain in [ggml::Q8_0, ggml::Q6_K, ggml::Q5_K, ggml::F16, iquants::IQ2_XXS] {
            assert!(plain.groups.is_none());
        }
    }
}
