//! Stable codes of the rules a safetensors file can break (the reference `validate()` and more).

pub const TRUNCATED: &str = "safetensors.truncated";
pub const HEADER_TOO_LARGE: &str = "safetensors.header_too_large";
pub const HEADER_PAST_END: &str = "safetensors.header_past_end";
pub const INVALID_UTF8: &str = "safetensors.invalid_utf8";
pub const HEADER_NOT_OBJECT: &str = "safetensors.header_not_object";
pub const INVALID_JSON: &str = "safetensors.invalid_json";
pub const DUPLICATE_KEY: &str = "safetensors.duplicate_key";
pub const METADATA_NOT_STRINGS: &str = "safetensors.metadata_not_strings";
pub const TOO_MUCH_METADATA: &str = "safetensors.too_much_metadata";
pub const BAD_TENSOR_ENTRY: &str = "safetensors.bad_tensor_entry";
pub const UNKNOWN_DTYPE: &str = "safetensors.unknown_dtype";
pub const INVERTED_OFFSETS: &str = "safetensors.inverted_offsets";
pub const GAP_IN_DATA: &str = "safetensors.gap_in_data";
pub const OVERLAPPING_DATA: &str = "safetensors.overlapping_data";
pub const ELEM_COUNT_OVERFLOW: &str = "safetensors.elem_count_overflow";
pub const MISALIGNED_SLICE: &str = "safetensors.misaligned_slice";
pub const SIZE_MISMATCH: &str = "safetensors.size_mismatch";
pub const DATA_OUT_OF_BOUNDS: &str = "safetensors.data_out_of_bounds";
pub const TRAILING_BYTES: &str = "safetensors.trailing_bytes";
pub const BAD_INDEX: &str = "safetensors.bad_index";
pub const INDEX_TOO_LARGE: &str = "safetensors.index_too_large";
pub const LEADING_WHITESPACE: &str = "safetensors.leading_whitespace";
