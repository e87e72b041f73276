//! GGUF: llama.cpp's single-file format.

mod array_items;
pub mod forks;
mod ggml_type;
mod header;
mod reader;
pub mod rules;
mod value;

pub use array_items::{ArrayItemsDecoder, ArrayPage};
pub use ggml_type::{GgmlType, Kind, TYPE_COUNT};
pub use header::{
    Header, HeaderDecoder, TensorInfo, DEFAULT_ALIGNMENT, MAX_ARRAY_DEPTH, MAX_DIMS, MAX_KEY_BYTES, MAX_NAME_BYTES,
    MAX_STRING_BYTES,
};
pub use value::{Array, Value, ValueType, ARRAY_ITEMS_KEPT};
