//! safetensors: a JSON header and one flat little-endian data buffer.

mod dtype;
mod header;
mod index;
pub mod rules;

pub use dtype::Dtype;
pub use header::{Header, HeaderDecoder, TensorEntry, MAX_HEADER_BYTES};
pub use index::{parse as parse_index, Index, IndexDecoder, MAX_INDEX_BYTES};
