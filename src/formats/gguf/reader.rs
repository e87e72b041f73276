//! A bounds-checked reader over buffered GGUF bytes, in either byte order.

use super::value::{Value, ValueType};

/// Why an item could not be read from the buffered bytes.
#[derive(Debug, PartialEq)]
pub enum Short {
    /// The item needs this many bytes from its start; feed more and try again.
    Need(u64),
    /// The item claims more bytes than the format allows (or the file holds): `what`, `len`.
    TooLong(&'static str, u64),
}

/// Reads numbers and strings from `bytes`, which start at an item boundary.
pub struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    big_endian: bool,
}

macro_rules! read_num {
    ($name:ident, $t:ty) => {
        pub fn $name(&mut self) -> Result<$t, Short> {
            let raw = self.take(std::mem::size_of::<$t>() as u64)?;
            let arr = raw.try_into().expect("take returns the requested length");
            Ok(if self.big_endian { <$t>::from_be_bytes(arr) } else { <$t>::from_le_bytes(arr) })
        }
    };
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8], big_endian: bool) -> Self {
        Reader { bytes, pos: 0, big_endian }
    }

    /// Bytes consumed so far.
    pub fn pos(&self) -> u64 {
        self.pos as u64
    }

    /// The next `n` bytes.
    pub fn take(&mut self, n: u64) -> Result<&'a [u8], Short> {
        let need = self.pos as u64 + n;
        if need > self.bytes.len() as u64 {
            return Err(Short::Need(need));
        }
        let start = self.pos;
        self.pos += n as usize;
        Ok(&self.bytes[start..self.pos])
    }

    read_num!(u8, u8);
    read_num!(i8, i8);
    read_num!(u16, u16);
    read_num!(i16, i16);
    read_num!(u32, u32);
    read_num!(i32, i32);
    read_num!(u64, u64);
    read_num!(i64, i64);
    read_num!(f32, f32);
    read_num!(f64, f64);

    /// A fixed-size value of type `vt`, or `None` for strings and arrays (read by the caller).
    pub fn fixed_value(&mut self, vt: ValueType) -> Result<Option<Value>, Short> {
        Ok(Some(match vt {
            ValueType::U8 => Value::U8(self.u8()?),
            ValueType::I8 => Value::I8(self.i8()?),
            ValueType::U16 => Value::U16(self.u16()?),
            ValueType::I16 => Value::I16(self.i16()?),
            ValueType::U32 => Value::U32(self.u32()?),
            ValueType::I32 => Value::I32(self.i32()?),
            ValueType::F32 => Value::F32(self.f32()?),
            ValueType::U64 => Value::U64(self.u64()?),
            ValueType::I64 => Value::I64(self.i64()?),
            ValueType::F64 => Value::F64(self.f64()?),
            ValueType::Bool => Value::Bool(self.u8()? != 0),
            ValueType::String | ValueType::Array => return Ok(None),
        }))
    }

    /// A `u64`-length-prefixed string's bytes, refusing lengths over `max`.
    pub fn string_bytes(&mut self, what: &'static str, max: u64) -> Result<&'a [u8], Short> {
        let len = self.u64()?;
        if len > max {
            return Err(Short::TooLong(what, len));
        }
        self.take(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_byte_orders_and_reports_what_is_missing() {
        let mut r = Reader::new(&[0, 0, 0, 3, 1], true);
        assert_eq!(r.u32(), Ok(3));
        assert_eq!(r.u16(), Err(Short::Need(6)));
        let mut r = Reader::new(&[3, 0, 0, 0, 0, 0, 0, 0, b'a'], false);
        assert_eq!(r.string_bytes("key", 2), Err(Short::TooLong("key", 3)));
    }
}
