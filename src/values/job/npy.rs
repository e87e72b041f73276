//! The `.npy` export job: the `.npy` header, then the tensor's values (float32) or stored bytes
//! (integers, bool, complex), produced chunk by chunk for the driver to write out.

use super::scan::{plan_target, Sink, ValueScan, ValuesError};
use crate::decode::codec_for;
use crate::model::Tensor;
use crate::npy;
use crate::plan::{Plan, Selection};

/// Most bytes of values reordered in memory to export a tensor stored in neither row-major nor
/// column-major order.
pub const MAX_REORDER_BYTES: u64 = 256 << 20;

/// Collects `.npy` bytes; the driver drains them with [`NpySink::take`] as the job goes.
#[derive(Debug, Default)]
pub struct NpySink {
    raw: bool,
    out: Vec<u8>,
    /// The tensor's shape and element strides when its values are gathered whole and written
    /// out in row-major order at the end.
    reorder: Option<Reorder>,
}

#[derive(Debug, Default)]
struct Reorder {
    shape: Vec<u64>,
    strides: Vec<u64>,
    /// Every element in storage order, as written to the file.
    stored: Vec<u8>,
}

impl Reorder {
    /// The elements in row-major order: for each index of the shape, the element its strides
    /// name (a dense permutation, so each is read once).
    fn row_major(&self) -> Vec<u8> {
        let elems: u64 = self.shape.iter().product();
        let width = if elems == 0 { 0 } else { self.stored.len() / elems as usize };
        let mut out = Vec::with_capacity(self.stored.len());
        let mut index = vec![0u64; self.shape.len()];
        let mut at = 0u64; // the storage element of `index`
        for _ in 0..elems {
            let from = at as usize * width;
            out.extend_from_slice(&self.stored[from..from + width]);
            for d in (0..index.len()).rev() {
                index[d] += 1;
                at += self.strides[d];
                if index[d] < self.shape[d] {
                    break;
                }
                at -= self.strides[d] * self.shape[d];
                index[d] = 0;
            }
        }
        out
    }
}

impl NpySink {
    /// The bytes produced since the last call.
    pub fn take(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.out)
    }

    /// Where output bytes go: straight out, or gathered to be reordered at the end.
    fn target(&mut self) -> &mut Vec<u8> {
        match &mut self.reorder {
            Some(r) => &mut r.stored,
            None => &mut self.out,
        }
    }
}

impl Sink for NpySink {
    fn wants_values(&self) -> bool {
        !self.raw
    }
    fn values(&mut self, _first_elem: u64, values: &[f32]) {
        let out = self.target();
        out.reserve(values.len() * 4);
        for v in values {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
    fn raw(&mut self, bytes: &[u8]) {
        self.target().extend_from_slice(bytes);
    }
    fn finish(&mut self) {
        if let Some(r) = self.reorder.take() {
            self.out.extend(r.row_major());
        }
    }
}

/// The `.npy` file of tensor `t`, chunk by chunk: drain `job.sink_mut().take()` after every
/// feed, and the finished sink once at the end.
pub type NpyJob = ValueScan<NpySink>;

/// How a tensor is written as `.npy`.
struct NpyForm {
    plan: Plan,
    descr: &'static str,
    /// Stored bytes written as they are (integers), not decoded to `float32`.
    raw: bool,
    fortran: bool,
    /// Reordered in memory into its shape's order.
    reorder: bool,
}

/// `t`'s `.npy` form, or why it is refused.
fn npy_form(t: &Tensor) -> Result<NpyForm, ValuesError> {
    let (descr, raw) = npy::layout(&t.dtype).ok_or_else(|| ValuesError::Undecodable(t.dtype.name()))?;
    let plan = plan_target(t, &Selection::Whole)?;
    let (fortran, reorder) = match &t.strides {
        None => (false, false),
        Some(s) if npy::column_major(&t.shape, s) => (true, false),
        Some(strides) => {
            let width = if raw { t.dtype.nbytes(1).unwrap_or(0) } else { 4 };
            let bytes = t.elems().and_then(|n| n.checked_mul(width));
            if bytes.is_none_or(|b| b > MAX_REORDER_BYTES) {
                return Err(ValuesError::Order(format!(
                    "its elements are stored in neither row-major nor column-major order (strides {strides:?}); \
                     reordering more than {} MiB in memory for .npy is not done",
                    MAX_REORDER_BYTES >> 20
                )));
            }
            (false, true)
        }
    };
    Ok(NpyForm { plan, descr, raw, fortran, reorder })
}

/// The plan of `t`'s `.npy` export, or why it is refused: the checks of [`npy_job`] without its
/// decoder (the page plans; the workers decode).
pub fn npy_plan(t: &Tensor) -> Result<Plan, ValuesError> {
    Ok(npy_form(t)?.plan)
}

/// The export of `t` as `.npy`; its first output is the `.npy` header. A transposed tensor is
/// written in its shape's order: as stored with `fortran_order` when it is column-major, else
/// reordered in memory up to [`MAX_REORDER_BYTES`].
pub fn npy_job(t: &Tensor) -> Result<NpyJob, ValuesError> {
    let f = npy_form(t)?;
    let codec = codec_for(&t.dtype).ok_or_else(|| ValuesError::Undecodable(t.dtype.name()))?;
    let shape = npy::numpy_shape(t);
    let reorder = f.reorder.then(|| Reorder {
        shape: t.shape.clone(),
        strides: t.strides.clone().unwrap_or_default(),
        stored: Vec::new(),
    });
    let sink = NpySink { raw: f.raw, out: npy::header(f.descr, &shape, f.fortran), reorder };
    Ok(ValueScan::new(f.plan, codec, sink))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_permuted_layout_is_written_in_its_shapes_order() {
        // Shape (2, 3, 4) stored with its first two dimensions swapped: strides (4, 8, 1).
        let (shape, strides) = (vec![2u64, 3, 4], vec![4u64, 8, 1]);
        let stored: Vec<u8> = (0..24).collect();
        let r = Reorder { shape: shape.clone(), strides: strides.clone(), stored };
        let out = r.row_major();
        for (i, &v) in out.iter().enumerate() {
            let (a, b, c) = (i as u64 / 12, i as u64 / 4 % 3, i as u64 % 4);
            assert_eq!(u64::from(v), a * strides[0] + b * strides[1] + c * strides[2], "element {i}");
        }
        // Wider elements move whole.
        let stored: Vec<u8> = (0..24u16).flat_map(|v| v.to_le_bytes()).collect();
        let out = Reorder { shape, strides, stored }.row_major();
        assert_eq!(&out[2..4], &1u16.to_le_bytes(), "element (0, 0, 1) is stored at 1");
        assert_eq!(&out[8..10], &8u16.to_le_bytes(), "element (0, 1, 0) is stored at 8");
    }
}
