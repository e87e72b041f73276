//! Stable codes of the rules a GGUF file can break.

pub const BAD_MAGIC: &str = "gguf.bad_magic";
pub const UNSUPPORTED_VERSION: &str = "gguf.unsupported_version";
pub const COUNT_EXCEEDS_FILE: &str = "gguf.count_exceeds_file";
pub const TRUNCATED: &str = "gguf.truncated";
pub const STRING_TOO_LONG: &str = "gguf.string_too_long";
pub const INVALID_UTF8: &str = "gguf.invalid_utf8";
pub const BAD_VALUE_TYPE: &str = "gguf.bad_value_type";
pub const BAD_BOOL: &str = "gguf.bad_bool";
pub const ARRAY_TOO_DEEP: &str = "gguf.array_too_deep";
pub const DUPLICATE_KEY: &str = "gguf.duplicate_key";
pub const BAD_ALIGNMENT: &str = "gguf.bad_alignment";
pub const NAME_TOO_LONG: &str = "gguf.name_too_long";
pub const DUPLICATE_TENSOR: &str = "gguf.duplicate_tensor";
pub const TOO_MANY_DIMS: &str = "gguf.too_many_dims";
pub const NEGATIVE_DIM: &str = "gguf.negative_dim";
pub const ELEM_COUNT_OVERFLOW: &str = "gguf.elem_count_overflow";
pub const UNKNOWN_TYPE: &str = "gguf.unknown_type";
pub const REMOVED_TYPE: &str = "gguf.removed_type";
pub const ROW_NOT_BLOCK_MULTIPLE: &str = "gguf.row_not_block_multiple";
pub const MISALIGNED_OFFSET: &str = "gguf.misaligned_offset";
pub const OVERLAPPING_DATA: &str = "gguf.overlapping_data";
pub const GAP_IN_DATA: &str = "gguf.gap_in_data";
pub const DATA_OUT_OF_BOUNDS: &str = "gguf.data_out_of_bounds";
pub const TRAILING_BYTES: &str = "gguf.trailing_bytes";
