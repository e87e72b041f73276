//! Floats in JSON, which has no NaN or infinity: one lossless form for every report.

use serde::{Serialize, Serializer};

/// A float as JSON: a number when finite, else `"NaN"`, `"Infinity"` or `"-Infinity"`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Float(pub f64);

impl Serialize for Float {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let v = self.0;
        if v.is_finite() {
            s.serialize_f64(v)
        } else if v.is_nan() {
            s.serialize_str("NaN")
        } else if v > 0.0 {
            s.serialize_str("Infinity")
        } else {
            s.serialize_str("-Infinity")
        }
    }
}
