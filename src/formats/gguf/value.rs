//! GGUF metadata values: the 13 value types, with big arrays kept as length + first items.

use crate::range::ByteRange;

/// The value type ids of a GGUF key/value pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueType {
    U8,
    I8,
    U16,
    I16,
    U32,
    I32,
    F32,
    Bool,
    String,
    Array,
    U64,
    I64,
    F64,
}

impl ValueType {
    /// The type with id `id`, or `None` for an id the spec does not define.
    pub fn from_id(id: u32) -> Option<ValueType> {
        use ValueType::*;
        Some(match id {
            0 => U8,
            1 => I8,
            2 => U16,
            3 => I16,
            4 => U32,
            5 => I32,
            6 => F32,
            7 => Bool,
            8 => String,
            9 => Array,
            10 => U64,
            11 => I64,
            12 => F64,
            _ => return None,
        })
    }

    /// The name used in reports (`"u32"`, `"string"`, `"array"`).
    pub fn name(self) -> &'static str {
        use ValueType::*;
        match self {
            U8 => "u8",
            I8 => "i8",
            U16 => "u16",
            I16 => "i16",
            U32 => "u32",
            I32 => "i32",
            F32 => "f32",
            Bool => "bool",
            String => "string",
            Array => "array",
            U64 => "u64",
            I64 => "i64",
            F64 => "f64",
        }
    }

    /// Encoded size of a fixed-size value, `None` for strings and arrays.
    pub fn fixed_bytes(self) -> Option<u64> {
        use ValueType::*;
        match self {
            U8 | I8 | Bool => Some(1),
            U16 | I16 => Some(2),
            U32 | I32 | F32 => Some(4),
            U64 | I64 | F64 => Some(8),
            String | Array => None,
        }
    }
}

/// A decoded metadata value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    /// The stored byte; anything but 0 or 1 is reported as a finding.
    Bool(bool),
    /// UTF-8 text (invalid sequences replaced, and reported).
    String(String),
    /// Boxed: arrays are rare and big, scalars common and small (a `Value` stays 32 bytes).
    Array(Box<Array>),
    U64(u64),
    I64(i64),
    F64(f64),
}

impl Value {
    /// The value's type.
    pub fn value_type(&self) -> ValueType {
        match self {
            Value::U8(_) => ValueType::U8,
            Value::I8(_) => ValueType::I8,
            Value::U16(_) => ValueType::U16,
            Value::I16(_) => ValueType::I16,
            Value::U32(_) => ValueType::U32,
            Value::I32(_) => ValueType::I32,
            Value::F32(_) => ValueType::F32,
            Value::Bool(_) => ValueType::Bool,
            Value::String(_) => ValueType::String,
            Value::Array(_) => ValueType::Array,
            Value::U64(_) => ValueType::U64,
            Value::I64(_) => ValueType::I64,
            Value::F64(_) => ValueType::F64,
        }
    }

    /// The value as an unsigned integer, for any integer type holding a non-negative value.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::U8(v) => Some(v.into()),
            Value::U16(v) => Some(v.into()),
            Value::U32(v) => Some(v.into()),
            Value::U64(v) => Some(v),
            Value::I8(v) => u64::try_from(v).ok(),
            Value::I16(v) => u64::try_from(v).ok(),
            Value::I32(v) => u64::try_from(v).ok(),
            Value::I64(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    /// The text of a string value.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }
}

/// The value as people read it, without its type: `32`, `llama` (strings as they are),
/// `array[string] of 152064`.
impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::U8(v) => v.fmt(f),
            Value::I8(v) => v.fmt(f),
            Value::U16(v) => v.fmt(f),
            Value::I16(v) => v.fmt(f),
            Value::U32(v) => v.fmt(f),
            Value::I32(v) => v.fmt(f),
            Value::F32(v) => v.fmt(f),
            Value::Bool(v) => v.fmt(f),
            Value::String(v) => f.write_str(v),
            Value::Array(a) => write!(f, "array[{}] of {}", a.item_type.name(), a.len),
            Value::U64(v) => v.fmt(f),
            Value::I64(v) => v.fmt(f),
            Value::F64(v) => v.fmt(f),
        }
    }
}

/// Items of an array kept in memory; the rest are counted and can be read on demand.
pub const ARRAY_ITEMS_KEPT: usize = 64;

/// An array value: its length, its first items and where all of it lies in the file.
#[derive(Clone, Debug, PartialEq)]
pub struct Array {
    pub item_type: ValueType,
    pub len: u64,
    /// The first `min(len, ARRAY_ITEMS_KEPT)` items.
    pub items: Vec<Value>,
    /// For an array of strings, its last items past those: the last
    /// `min(len − items.len(), ARRAY_ITEMS_KEPT)` (a vocabulary's end, read on the way past it),
    /// each to its first `TAIL_TEXT_BYTES`; empty for other arrays.
    pub tail: Vec<Value>,
    /// The items' bytes (after the type and count), for reading the full list on demand.
    pub span: ByteRange,
}
