//! Exporting a tensor as a numpy `.npy` file: float32 for float and quantized types, the
//! stored type for integers, booleans and complex numbers, in numpy shape order.

use super::gguf::GgmlType;
use super::model::{Dtype, Tensor};
use super::safetensors::Dtype as St;

/// How a tensor is written: the numpy `descr`, and whether its bytes are copied as stored
/// (`raw`) or decoded to little-endian `f32`.
pub fn layout(dtype: &Dtype) -> Option<(&'static str, bool)> {
    let raw = |d| Some((d, true));
    match dtype {
        Dtype::Safetensors(d) => match d {
            St::BOOL => raw("|b1"),
            St::U8 => raw("|u1"),
            St::I8 => raw("|i1"),
            St::I16 => raw("<i2"),
            St::U16 => raw("<u2"),
            St::I32 => raw("<i4"),
            St::U32 => raw("<u4"),
            St::I64 => raw("<i8"),
            St::U64 => raw("<u8"),
            St::C64 => raw("<c8"),
            _ => Some(("<f4", false)),
        },
        Dtype::Ggml(t) => match *t {
            GgmlType(24) => raw("|i1"),
            GgmlType(25) => raw("<i2"),
            GgmlType(26) => raw("<i4"),
            GgmlType(27) => raw("<i8"),
            t => t.block().map(|_| ("<f4", false)),
        },
        Dtype::Unknown(_) => None,
    }
}

/// The tensor's shape in numpy order (GGUF `ne` is innermost first, so it is reversed).
pub fn numpy_shape(t: &Tensor) -> Vec<u64> {
    match t.dtype {
        Dtype::Ggml(_) => t.shape.iter().rev().copied().collect(),
        _ => t.shape.clone(),
    }
}

/// Whether `strides` lay `shape` out column-major (Fortran order: the first dimension varies
/// fastest), dimensions of size 1 ignored.
pub fn column_major(shape: &[u64], strides: &[u64]) -> bool {
    let mut expect = 1u64;
    for (&d, &s) in shape.iter().zip(strides) {
        if d != 1 && s != expect {
            return false;
        }
        expect = expect.saturating_mul(d);
    }
    shape.len() == strides.len()
}

/// A `.npy` version 1.0 (or 2.0 for long headers) header, padded to 64 bytes; `fortran` when
/// the data that follows is in column-major order.
pub fn header(descr: &str, shape: &[u64], fortran: bool) -> Vec<u8> {
    let dims = match shape {
        [] => String::new(),
        [one] => format!("{one},"),
        many => many.iter().map(u64::to_string).collect::<Vec<_>>().join(", "),
    };
    let order = if fortran { "True" } else { "False" };
    let mut dict = format!("{{'descr': '{descr}', 'fortran_order': {order}, 'shape': ({dims}), }}");
    let v1 = 10 + dict.len() < u16::MAX as usize;
    let prefix = if v1 { 10 } else { 12 };
    while (prefix + dict.len() + 1) % 64 != 0 {
        dict.push(' ');
    }
    dict.push('\n');
    let mut out = b"\x93NUMPY".to_vec();
    if v1 {
        out.extend([1, 0]);
        out.extend((dict.len() as u16).to_le_bytes());
    } else {
        out.extend([2, 0]);
        out.extend((dict.len() as u32).to_le_bytes());
    }
    out.extend(dict.as_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_aligned_and_readable() {
        let h = header("<f4", &[2, 3], false);
        assert_eq!(h.len() % 64, 0);
        assert!(std::str::from_utf8(&h[10..])
            .unwrap()
            .starts_with("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"));
        assert!(String::from_utf8_lossy(&header("|b1", &[5], false)).contains("(5,)"));
        assert!(String::from_utf8_lossy(&header("<f4", &[], false)).contains("'shape': ()"));
        assert_eq!(*h.last().unwrap(), b'\n');
        assert!(String::from_utf8_lossy(&header("<f4", &[2, 3], true)).contains("'fortran_order': True"));
    }

    #[test]
    fn column_major_strides_are_told_from_other_orders() {
        assert!(column_major(&[32, 3, 3, 3], &[1, 32, 96, 288]));
        assert!(column_major(&[4, 1, 5], &[1, 99, 4]));
        assert!(!column_major(&[32, 3, 3, 3], &[27, 9, 3, 1]));
        assert!(!column_major(&[2, 3, 4], &[3, 1, 6]));
        assert!(column_major(&[7], &[1]));
    }
}
