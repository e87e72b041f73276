//! Stable codes of the rules a safetensors file can break (the reference `validate()` and more).

use crate::findings::Rule;

pub const TRUNCATED: Rule = Rule::error("safetensors.truncated");
pub const HEADER_TOO_LARGE: Rule = Rule::error("safetensors.header_too_large");
pub const HEADER_PAST_END: Rule = Rule::error("safetensors.header_past_end");
pub const INVALID_UTF8: Rule = Rule::error("safetensors.invalid_utf8");
pub const HEADER_NOT_OBJECT: Rule = Rule::error("safetensors.header_not_object");
pub const INVALID_JSON: Rule = Rule::error("safetensors.invalid_json");
pub const DUPLICATE_KEY: Rule = Rule::error("safetensors.duplicate_key");
/// The same rule broken in a way the reader works around.
pub const DUPLICATE_KEY_MINOR: Rule = Rule::warning("safetensors.duplicate_key");
pub const METADATA_NOT_STRINGS: Rule = Rule::error("safetensors.metadata_not_strings");
pub const TOO_MUCH_METADATA: Rule = Rule::warning("safetensors.too_much_metadata");
pub const BAD_TENSOR_ENTRY: Rule = Rule::error("safetensors.bad_tensor_entry");
pub const UNKNOWN_DTYPE: Rule = Rule::error("safetensors.unknown_dtype");
pub const INVERTED_OFFSETS: Rule = Rule::error("safetensors.inverted_offsets");
pub const GAP_IN_DATA: Rule = Rule::error("safetensors.gap_in_data");
pub const OVERLAPPING_DATA: Rule = Rule::error("safetensors.overlapping_data");
pub const ELEM_COUNT_OVERFLOW: Rule = Rule::error("safetensors.elem_count_overflow");
pub const MISALIGNED_SLICE: Rule = Rule::error("safetensors.misaligned_slice");
pub const SIZE_MISMATCH: Rule = Rule::error("safetensors.size_mismatch");
pub const DATA_OUT_OF_BOUNDS: Rule = Rule::error("safetensors.data_out_of_bounds");
pub const TRAILING_BYTES: Rule = Rule::error("safetensors.trailing_bytes");
pub const BAD_INDEX: Rule = Rule::error("safetensors.bad_index");
/// The same rule broken in a way the reader works around.
pub const BAD_INDEX_MINOR: Rule = Rule::warning("safetensors.bad_index");
pub const INDEX_TOO_LARGE: Rule = Rule::error("safetensors.index_too_large");
pub const LEADING_WHITESPACE: Rule = Rule::warning("safetensors.leading_whitespace");
