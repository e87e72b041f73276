//! Decoding stored values to `f32`: every safetensors dtype and every GGML type.
//!
//! Decoders read little-endian bytes from unaligned slices (Blob bytes have no alignment
//! guarantee) and write whole blocks of values. Results equal the reference dequantization
//! bit for bit (gguf-py, which agrees with ggml's C code; ggml's own code for the rest).

/// A decoder compiled again for the widest vectors the CPU has (AVX-512 or AVX2 natively, chosen
/// at run time), as a [`DecodeFn`]: the same `f32` operations in the same order, so the same
/// bits on every CPU. `$plain` is inlined into each copy. (The wasm bundle has vector twins.)
#[cfg(not(target_arch = "wasm32"))]
macro_rules! widest {
    ($plain:path) => {{
        fn widest(src: &[u8], dst: &mut [f32]) {
            #[cfg(target_arch = "x86_64")]
            {
                if std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512bw") {
                    #[target_feature(enable = "avx512f,avx512bw")]
                    unsafe fn avx512(src: &[u8], dst: &mut [f32]) {
                        $plain(src, dst)
                    }
                    // SAFETY: both detected just now.
                    return unsafe { avx512(src, dst) };
                }
                if std::is_x86_feature_detected!("avx2") {
                    #[target_feature(enable = "avx2")]
                    unsafe fn avx2(src: &[u8], dst: &mut [f32]) {
                        $plain(src, dst)
                    }
                    // SAFETY: detected just now.
                    return unsafe { avx2(src, dst) };
                }
            }
            $plain(src, dst)
        }
        widest as $crate::decode::DecodeFn
    }};
}

pub mod by_scale;
pub mod ggml;
pub mod groups;
pub mod iq_tables;
pub mod iquants;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod neon;
pub mod nibbles;
#[cfg(target_arch = "x86_64")]
mod q3k_avx512;
pub mod st_dtypes;
#[cfg(target_arch = "wasm32")]
mod wasm_simd;
#[cfg(target_arch = "x86_64")]
mod x86_simd;

/// Decodes whole blocks into values.
pub type DecodeFn = fn(src: &[u8], dst: &mut [f32]);
/// Appends each block's scale values.
pub type ScalesFn = fn(src: &[u8], out: &mut Vec<f32>);
/// Counts the NaN and the infinite values of `src`'s whole blocks from their bits: `(nan, inf)`.
pub type NonFiniteFn = fn(src: &[u8]) -> (u64, u64);

/// How one GGML block type decodes.
#[derive(Clone, Copy)]
pub struct BlockCodec {
    /// Elements per block.
    pub block_elems: usize,
    /// Bytes per block.
    pub block_bytes: usize,
    /// Decode `src.len() / block_bytes` whole blocks into `dst` (`block_elems` values each).
    pub decode: DecodeFn,
    /// The block's scale values (e.g. `d`; for k-quants the super-block `d`), appended to `out`.
    pub scales: Option<ScalesFn>,
    /// The blocks as groups of counted codes, for types whose groups hold fewer distinct codes
    /// than elements ([`groups`]).
    pub groups: Option<groups::Grouping>,
    /// The non-finite values counted from the stored bits: for floats whose decoding keeps
    /// every value's class (NaN, infinite, finite), from each value's; for block types, from
    /// their scales', decoding only the blocks whose scales may make one ([`nonfinite_blocks`]).
    pub nonfinite: Option<NonFiniteFn>,
}

impl BlockCodec {
    /// `bytes` (whole values) as the `f32`s they hold, where they can be read in place rather
    /// than decoded: IEEE binary32 (the one 4-byte elementwise type whose non-finite values are
    /// counted from bits), on a little-endian target, at an `f32`-aligned address.
    pub fn as_f32s<'a>(&self, bytes: &'a [u8]) -> Option<&'a [f32]> {
        if !cfg!(target_endian = "little") || (self.block_elems, self.block_bytes) != (1, 4) || self.nonfinite.is_none()
        {
            return None;
        }
        // SAFETY: every bit pattern is an f32, and `align_to` hands out only the aligned middle.
        let (head, values, tail) = unsafe { bytes.align_to::<f32>() };
        (head.is_empty() && tail.is_empty()).then_some(values)
    }
}

/// `(nan, inf)` of the `W`-byte little-endian IEEE-style floats of `src`: with the sign masked
/// off, infinity is the all-ones exponent `inf` and a NaN anything above it.
#[inline(always)]
fn count_nonfinite<const W: usize>(src: &[u8], inf: u32, bits: impl Fn(&[u8; W]) -> u32) -> (u64, u64) {
    let (mut nan, mut infinite) = (0u64, 0u64);
    // Counted in u32 a run at a time: the compiler keeps the run's counts in vector lanes.
    for run in src.as_chunks::<W>().0.chunks(1 << 16) {
        let (mut n, mut i) = (0u32, 0u32);
        for v in run {
            let x = bits(v);
            n += u32::from(x > inf);
            i += u32::from(x == inf);
        }
        nan += u64::from(n);
        infinite += u64::from(i);
    }
    (nan, infinite)
}

/// `(nan, inf)` of the values of `src`'s whole blocks of `B` bytes, `E` values each, of a block
/// type whose values are all finite unless `suspect(block)`: a scale that is not finite, or one
/// large enough to overflow, as few blocks have. Only those blocks are decoded (by `decode`, so
/// their values' classes are the decoder's): a scan of the others reads a scale a block, at the
/// speed of memory, not of decoding.
#[inline(always)]
pub(crate) fn nonfinite_blocks<const B: usize, const E: usize>(
    src: &[u8],
    decode: DecodeFn,
    suspect: impl Fn(&[u8; B]) -> bool,
) -> (u64, u64) {
    let (mut nan, mut inf) = (0, 0);
    let mut values = [0f32; E];
    for b in src.as_chunks::<B>().0 {
        if suspect(b) {
            let (n, i) = decoded_nonfinite(decode, b, &mut values);
            nan += n;
            inf += i;
        }
    }
    (nan, inf)
}

/// `(nan, inf)` of `block` decoded into `values`: one copy for every type (a rare block's), not
/// one per type in the workers' bundle.
#[cold]
#[inline(never)]
fn decoded_nonfinite(decode: DecodeFn, block: &[u8], values: &mut [f32]) -> (u64, u64) {
    decode(block, values);
    nonfinite_of(values)
}

/// `(nan, inf)` of decoded `values`: one pass where all are finite (as nearly all are), a second
/// for the NaN only where some are not.
pub fn nonfinite_of(values: &[f32]) -> (u64, u64) {
    let bad = values.iter().filter(|v| !v.is_finite()).count();
    if bad == 0 {
        return (0, 0);
    }
    let nan = values.iter().filter(|v| v.is_nan()).count();
    (nan as u64, (bad - nan) as u64)
}

/// Whether any of the little-endian `f16`s at `b[at..at + 2]`, for each `at` of `ats`, is an
/// infinity or a NaN.
#[inline(always)]
pub(crate) fn f16s_nonfinite(b: &[u8], ats: &[usize]) -> bool {
    ats.iter().any(|&at| u16_at(b, at) & 0x7c00 == 0x7c00)
}

/// [`NonFiniteFn`] of `f32`.
pub fn nonfinite_f32(src: &[u8]) -> (u64, u64) {
    count_nonfinite::<4>(src, 0x7f80_0000, |b| u32::from_le_bytes(*b) & 0x7fff_ffff)
}

/// [`NonFiniteFn`] of `f64`, from its bits (not from the `f32` it is shown as): the high word
/// with the exponent, one bit standing for a non-zero low word (a NaN's payload may lie there).
pub fn nonfinite_f64(src: &[u8]) -> (u64, u64) {
    count_nonfinite::<8>(src, 0x7ff0_0000, |b| {
        let x = u64::from_le_bytes(*b);
        ((x >> 32) as u32 & 0x7fff_ffff) | u32::from(x as u32 != 0)
    })
}

/// [`NonFiniteFn`] of `f16`.
pub fn nonfinite_f16(src: &[u8]) -> (u64, u64) {
    count_nonfinite::<2>(src, 0x7c00, |b| u32::from(u16::from_le_bytes(*b) & 0x7fff))
}

/// [`NonFiniteFn`] of `bf16`.
pub fn nonfinite_bf16(src: &[u8]) -> (u64, u64) {
    count_nonfinite::<2>(src, 0x7f80, |b| u32::from(u16::from_le_bytes(*b) & 0x7fff))
}

/// An `f16` stored little-endian at `b[0..2]`, as `f32`.
#[inline(always)]
pub fn f16_le(b: &[u8]) -> f32 {
    f16_to_f32(u16_at(b, 0))
}

/// The little-endian `u16` at `b[i..i + 2]`.
#[inline(always)]
pub(crate) fn u16_at(b: &[u8], i: usize) -> u16 {
    u16::from_le_bytes([b[i], b[i + 1]])
}

/// `f16` bits as `f32`, exactly as `half` converts them (a NaN keeps its payload, made quiet),
/// inline and with integer operations: `half` checks the CPU and calls out of line at every
/// value (a sixth of Q8_0's decoding), and a float multiply would take a subnormal operand,
/// which costs a microcode assist on Intel cores.
#[inline(always)]
pub fn f16_to_f32(h: u16) -> f32 {
    let (sign, em) = (u32::from(h & 0x8000) << 16, u32::from(h & 0x7fff));
    let bits = if em >= 0x7c00 {
        // Infinity, or a NaN made quiet.
        0x7f80_0000 | u32::from(em > 0x7c00) << 22 | (em & 0x3ff) << 13
    } else if em >= 0x0400 {
        // Normal: the exponent rebiased from 15 to 127.
        (em << 13) + ((127 - 15) << 23)
    } else {
        // Zero or subnormal, `m · 2⁻²⁴`: both factors and the product are normal and exact.
        (em as f32 * f32::from_bits((127 - 24) << 23)).to_bits()
    };
    f32::from_bits(sign | bits)
}

/// A `bf16` stored little-endian at `b[0..2]`, as `f32`.
#[inline]
pub fn bf16_le(b: &[u8]) -> f32 {
    f32::from_bits(u32::from(u16::from_le_bytes([b[0], b[1]])) << 16)
}

/// An `f32` stored little-endian at `b[0..4]`.
#[inline]
pub fn f32_le(b: &[u8]) -> f32 {
    f32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

/// What a histogram of `dtype` counts when it is not the stored values themselves: the
/// magnitude `|z|` of each complex value.
pub fn values_are(dtype: &crate::model::Dtype) -> Option<&'static str> {
    matches!(dtype, crate::model::Dtype::Safetensors(crate::safetensors::Dtype::C64)).then_some("magnitude")
}

/// The blocks of a dtype that has a decoder, `(elements, bytes)` each, known without linking its
/// decoder: the page plans reads with it, and only the workers decode.
pub fn layout(dtype: &crate::model::Dtype) -> Option<(u64, u64)> {
    use crate::model::Dtype;
    match dtype {
        Dtype::Safetensors(d) => {
            let c = st_dtypes::codec(*d);
            Some((c.block_elems as u64, c.block_bytes as u64))
        }
        Dtype::Ggml(t) if ggml::decodable(*t) => t.block(),
        _ => None,
    }
}

/// The codec of a tensor's dtype, when it can be decoded.
pub fn codec_for(dtype: &crate::model::Dtype) -> Option<BlockCodec> {
    use crate::model::Dtype;
    match dtype {
        Dtype::Safetensors(d) => Some(st_dtypes::codec(*d)),
        Dtype::Ggml(t) => ggml::codec(*t),
        Dtype::Unknown(_) => None,
    }
}

/// `n` bytes of a xorshift sequence from `seed` (random block bytes for tests: every kind of
/// `f16` field and scale byte among them).
#[cfg(test)]
pub(crate) fn random_bytes(n: usize, seed: &mut u64) -> Vec<u8> {
    (0..n)
        .map(|_| {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            (*seed >> 24) as u8
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(nan, inf)` of `src` decoded by `codec`.
    fn decoded(codec: &BlockCodec, src: &[u8]) -> (u64, u64) {
        let mut v = vec![0f32; src.len() / codec.block_bytes * codec.block_elems];
        (codec.decode)(src, &mut v);
        let nan = v.iter().filter(|x| x.is_nan()).count() as u64;
        (nan, v.iter().filter(|x| x.is_infinite()).count() as u64)
    }

    /// The page plans with [`layout`] and the workers decode with [`codec_for`]: they agree on
    /// which types decode and on their blocks, for every type id (known or not).
    #[test]
    fn layouts_are_the_codecs_blocks() {
        use crate::model::Dtype;
        let mut dtypes: Vec<Dtype> = (0..256).map(|id| Dtype::Ggml(crate::gguf::GgmlType(id))).collect();
        dtypes.extend(crate::safetensors::Dtype::all().iter().map(|&d| Dtype::Safetensors(d)));
        dtypes.push(Dtype::Unknown("complex128".into()));
        for d in &dtypes {
            let blocks = codec_for(d).map(|c| (c.block_elems as u64, c.block_bytes as u64));
            assert_eq!(layout(d), blocks, "{}", d.name());
        }
        assert!(dtypes.iter().filter(|d| layout(d).is_some()).count() > 50);
    }

    #[test]
    fn f16_converts_every_pattern_as_half_does() {
        for h in 0..=u16::MAX {
            let want = half::f16::from_bits(h).to_f32().to_bits();
            assert_eq!(f16_to_f32(h).to_bits(), want, "{h:#06x}");
        }
    }

    #[test]
    fn only_f32_is_read_in_place_and_then_as_decoded() {
        let mut codecs: Vec<(String, BlockCodec)> =
            crate::gguf::GgmlType::all().filter_map(|t| Some((t.name().to_string(), ggml::codec(t)?))).collect();
        codecs.extend(crate::safetensors::Dtype::all().iter().map(|&d| (format!("{d:?}"), st_dtypes::codec(d))));
        let words: Vec<u32> = vec![0, 1, 0x8000_0000, 0x7f80_0000, 0x7fc0_0001, 0xff80_0000, 0x3f80_0000, 0x1234_5678];
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        for (name, c) in &codecs {
            match c.as_f32s(&bytes) {
                Some(v) => {
                    assert!(name == "F32", "{name} read in place");
                    let mut decoded = vec![0f32; words.len()];
                    (c.decode)(&bytes, &mut decoded);
                    assert_eq!(v.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), words);
                    assert_eq!(decoded.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), words);
                }
                None => assert!(name != "F32" || bytes.as_ptr().align_offset(4) != 0, "F32 decoded"),
            }
        }
        // Unaligned bytes are decoded instead.
        let unaligned = &bytes[1..1 + 4 * 7];
        if unaligned.as_ptr().align_offset(4) != 0 {
            assert!(ggml::F32.as_f32s(unaligned).is_none());
        }
    }

    #[test]
    fn nonfinite_counts_from_bits_equal_the_decoded_values_classes() {
        // Every 16-bit pattern, one at a time and all together.
        for codec in [ggml::F16, ggml::BF16] {
            let count = codec.nonfinite.expect("counted from bits");
            let all: Vec<u8> = (0..=u16::MAX).flat_map(|x| x.to_le_bytes()).collect();
            for one in all.chunks(2) {
                assert_eq!(count(one), decoded(&codec, one), "{one:?}");
            }
            assert_eq!(count(&all), decoded(&codec, &all));
            assert_ne!(count(&all), (0, 0));
        }
        // f32: each exponent's edges and a spread of mantissas, both signs.
        let mut all = Vec::new();
        for exp in 0..=255u32 {
            for man in [0, 1, 2, 0x40_0000, 0x7f_fffe, 0x7f_ffff, 0x12_3456] {
                for sign in [0, 1u32 << 31] {
                    all.extend((sign | exp << 23 | man).to_le_bytes());
                }
            }
        }
        let count = ggml::F32.nonfinite.expect("counted from bits");
        for one in all.chunks(4) {
            assert_eq!(count(one), decoded(&ggml::F32, one), "{one:?}");
        }
        assert_eq!(count(&all), (12, 2));
        // f64 is classed by its own bits: a value past f32's range is finite, shown saturated.
        let f64s =
            [1e300, -1e300, 1e-300, 0.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, f64::MAX, f64::MIN_POSITIVE];
        let mut bytes: Vec<u8> = f64s.iter().flat_map(|v| v.to_le_bytes()).collect();
        bytes.extend(0x7ff0_0000_0000_0001u64.to_le_bytes()); // a NaN whose payload is in the low word
        bytes.extend(0xfff8_0000_0000_0000u64.to_le_bytes());
        let count = ggml::F64.nonfinite.expect("counted from bits");
        assert_eq!(count(&bytes), (3, 2));
        let mut v = vec![0f32; bytes.len() / 8];
        (ggml::F64.decode)(&bytes, &mut v);
        assert_eq!(&v[..4], [f32::MAX, -f32::MAX, 0.0, 0.0]);
        assert_eq!(decoded(&ggml::F64, &bytes), (3, 2), "decoded values keep each class but 1e-300's");
        // Types whose decoding can change a value's class are decoded.
        for codec in [ggml::I16, st_dtypes::codec(crate::safetensors::Dtype::F8_E4M3)] {
            assert!(codec.nonfinite.is_none());
        }
    }

    /// Every block type counted from its scales' bits counts what its decoded values hold, block
    /// by block and all together: over random bytes (scales of every size, the largest with the
    /// largest codes), and over blocks whose every byte is one value (scales of all ones: NaN or,
    /// for MXFP4, the largest power of two).
    #[test]
    fn block_types_nonfinite_counts_from_scales_equal_the_decoded_values_classes() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 24) as u8
        };
        let mut types = 0;
        for t in crate::gguf::GgmlType::all() {
            let Some(codec) = ggml::codec(t).filter(|c| c.block_elems > 1) else { continue };
            let count = codec.nonfinite.unwrap_or_else(|| panic!("{t:?}: block types count from their scales"));
            types += 1;
            let bb = codec.block_bytes;
            let mut bytes: Vec<u8> = (0..bb * 3000).map(|_| next()).collect();
            for (k, fill) in [0x7cu8, 0x7e, 0xfc, 0xff, 0xfd, 0xfa, 0x7b].into_iter().enumerate() {
                bytes[bb * 7 * k..bb * (7 * k + 1)].fill(fill);
            }
            for block in bytes.chunks(bb) {
                assert_eq!(count(block), decoded(&codec, block), "{t:?}: {block:?}");
            }
            let all = count(&bytes);
            assert_eq!(all, decoded(&codec, &bytes), "{t:?}");
            assert!(t.name() == "NVFP4" || all != (0, 0), "{t:?}: some blocks hold a NaN or an infinity");
        }
        assert_eq!(types, 27, "block types");
    }
}
