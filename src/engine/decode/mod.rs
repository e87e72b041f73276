//! Decoding stored values to `f32`: every safetensors dtype and every GGML type.
//!
//! Decoders read little-endian bytes from unaligned slices (Blob bytes have no alignment
//! guarantee) and write whole blocks of values. Results equal the reference dequantization
//! bit for bit (gguf-py, which agrees with ggml's C code; ggml's own code for the rest).

pub mod ggml;
pub mod groups;
pub mod iq_tables;
pub mod iquants;
pub mod st_dtypes;

/// Decodes whole blocks into values.
pub type DecodeFn = fn(src: &[u8], dst: &mut [f32]);
/// Appends each block's scale values.
pub type ScalesFn = fn(src: &[u8], out: &mut Vec<f32>);

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
    pub groups: Option<groups::GroupsFn>,
}

/// An `f16` stored little-endian at `b[0..2]`, as `f32`.
#[inline]
pub fn f16_le(b: &[u8]) -> f32 {
    half::f16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f32()
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

/// The codec of a tensor's dtype, when it can be decoded.
pub fn codec_for(dtype: &crate::model::Dtype) -> Option<BlockCodec> {
    use crate::model::Dtype;
    match dtype {
        Dtype::Safetensors(d) => Some(st_dtypes::codec(*d)),
        Dtype::Ggml(t) => ggml::codec(*t),
        Dtype::Unknown(_) => None,
    }
}
