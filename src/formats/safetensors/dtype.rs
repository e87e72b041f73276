//! The safetensors dtypes, in the reference implementation's order, with their bit widths.

/// A safetensors dtype.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[allow(non_camel_case_types)]
pub enum Dtype {
    BOOL,
    F4,
    F6_E2M3,
    F6_E3M2,
    U8,
    I8,
    F8_E5M2,
    F8_E4M3,
    F8_E8M0,
    F8_E4M3FNUZ,
    F8_E5M2FNUZ,
    I16,
    U16,
    F16,
    BF16,
    I32,
    U32,
    F32,
    C64,
    F64,
    I64,
    U64,
}

use Dtype::*;

const ALL: [Dtype; 22] = [
    BOOL,
    F4,
    F6_E2M3,
    F6_E3M2,
    U8,
    I8,
    F8_E5M2,
    F8_E4M3,
    F8_E8M0,
    F8_E4M3FNUZ,
    F8_E5M2FNUZ,
    I16,
    U16,
    F16,
    BF16,
    I32,
    U32,
    F32,
    C64,
    F64,
    I64,
    U64,
];

impl Dtype {
    /// Every dtype, in the reference implementation's order.
    pub fn all() -> &'static [Dtype] {
        &ALL
    }

    /// The spec spelling, as in the header (`"F8_E4M3"`).
    pub fn name(self) -> &'static str {
        match self {
            BOOL => "BOOL",
            F4 => "F4",
            F6_E2M3 => "F6_E2M3",
            F6_E3M2 => "F6_E3M2",
            U8 => "U8",
            I8 => "I8",
            F8_E5M2 => "F8_E5M2",
            F8_E4M3 => "F8_E4M3",
            F8_E8M0 => "F8_E8M0",
            F8_E4M3FNUZ => "F8_E4M3FNUZ",
            F8_E5M2FNUZ => "F8_E5M2FNUZ",
            I16 => "I16",
            U16 => "U16",
            F16 => "F16",
            BF16 => "BF16",
            I32 => "I32",
            U32 => "U32",
            F32 => "F32",
            C64 => "C64",
            F64 => "F64",
            I64 => "I64",
            U64 => "U64",
        }
    }

    /// The dtype spelled `name` exactly (header spellings are case-sensitive).
    pub fn from_name(name: &str) -> Option<Dtype> {
        ALL.iter().copied().find(|d| d.name() == name)
    }

    /// Bits per element; sub-byte types pack several elements per byte.
    pub fn bits(self) -> u64 {
        match self {
            F4 => 4,
            F6_E2M3 | F6_E3M2 => 6,
            BOOL | U8 | I8 | F8_E5M2 | F8_E4M3 | F8_E8M0 | F8_E4M3FNUZ | F8_E5M2FNUZ => 8,
            I16 | U16 | F16 | BF16 => 16,
            I32 | U32 | F32 => 32,
            C64 | F64 | I64 | U64 => 64,
        }
    }

    /// Bytes that `elems` elements take, or `None` when that is not a whole number of bytes or
    /// overflows.
    pub fn nbytes(self, elems: u64) -> Option<u64> {
        let bits = elems.checked_mul(self.bits())?;
        (bits % 8 == 0).then_some(bits / 8)
    }

    /// Whether the dtype holds floating-point (or complex) values.
    pub fn is_float(self) -> bool {
        !matches!(self, BOOL | U8 | I8 | I16 | U16 | I32 | U32 | I64 | U64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_sub_byte_sizes_are_exact() {
        for &d in Dtype::all() {
            assert_eq!(Dtype::from_name(d.name()), Some(d));
        }
        assert_eq!(Dtype::from_name("f32"), None);
        assert_eq!(F4.nbytes(3), None);
        assert_eq!(F4.nbytes(4), Some(2));
        assert_eq!(F6_E2M3.nbytes(4), Some(3));
        assert_eq!(F6_E2M3.nbytes(2), None);
        assert_eq!(U64.nbytes(u64::MAX), None);
    }
}
