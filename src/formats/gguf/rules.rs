//! Stable codes of the rules a GGUF file can break.

use crate::findings::Rule;

pub const BAD_MAGIC: Rule = Rule::error("gguf.bad_magic");
pub const UNSUPPORTED_VERSION: Rule = Rule::error("gguf.unsupported_version");
pub const COUNT_EXCEEDS_FILE: Rule = Rule::error("gguf.count_exceeds_file");
pub const TRUNCATED: Rule = Rule::error("gguf.truncated");
pub const STRING_TOO_LONG: Rule = Rule::error("gguf.string_too_long");
pub const STRING_NOT_KEPT: Rule = Rule::warning("gguf.string_not_kept");
pub const NAME_NOT_KEPT: Rule = Rule::warning("gguf.name_not_kept");
pub const INVALID_UTF8: Rule = Rule::warning("gguf.invalid_utf8");
pub const BAD_VALUE_TYPE: Rule = Rule::error("gguf.bad_value_type");
pub const BAD_BOOL: Rule = Rule::warning("gguf.bad_bool");
pub const ARRAY_TOO_DEEP: Rule = Rule::error("gguf.array_too_deep");
pub const DUPLICATE_KEY: Rule = Rule::error("gguf.duplicate_key");
pub const BAD_ALIGNMENT: Rule = Rule::error("gguf.bad_alignment");
/// The same rule broken in a way the reader works around.
pub const BAD_ALIGNMENT_MINOR: Rule = Rule::warning("gguf.bad_alignment");
pub const NAME_TOO_LONG: Rule = Rule::error("gguf.name_too_long");
pub const DUPLICATE_TENSOR: Rule = Rule::error("gguf.duplicate_tensor");
pub const TOO_MANY_DIMS: Rule = Rule::error("gguf.too_many_dims");
pub const NEGATIVE_DIM: Rule = Rule::error("gguf.negative_dim");
pub const ELEM_COUNT_OVERFLOW: Rule = Rule::error("gguf.elem_count_overflow");
pub const UNKNOWN_TYPE: Rule = Rule::error("gguf.unknown_type");
pub const REMOVED_TYPE: Rule = Rule::error("gguf.removed_type");
pub const ROW_NOT_BLOCK_MULTIPLE: Rule = Rule::error("gguf.row_not_block_multiple");
pub const MISALIGNED_OFFSET: Rule = Rule::error("gguf.misaligned_offset");
pub const OVERLAPPING_DATA: Rule = Rule::error("gguf.overlapping_data");
pub const GAP_IN_DATA: Rule = Rule::error("gguf.gap_in_data");
pub const DATA_OUT_OF_BOUNDS: Rule = Rule::error("gguf.data_out_of_bounds");
pub const TRAILING_BYTES: Rule = Rule::warning("gguf.trailing_bytes");
pub const SIZE_OVERFLOW: Rule = Rule::error("gguf.size_overflow");
pub const EMPTY_KEY: Rule = Rule::error("gguf.empty_key");
pub const TOO_MANY_KEYS: Rule = Rule::warning("gguf.too_many_keys");
pub const NESTED_ARRAY: Rule = Rule::error("gguf.nested_array");
pub const ARRAY_TOO_LONG: Rule = Rule::error("gguf.array_too_long");
pub const BIG_ENDIAN: Rule = Rule::warning("gguf.big_endian");
