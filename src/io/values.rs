//! Reading a tensor's values: the browser twin of `cli::values` (histograms and `.npy`).

use super::browser;
use super::driver::{drive, Cancel, DriveError, DriveOpts};
use super::source::Source;
use crate::engine::decode::codec_for;
use crate::engine::gguf::{Array, ArrayItemsDecoder, Value};
use crate::engine::model::Tensor;
use crate::engine::npy::{self, NpySink};
use crate::engine::plan::{plan, Selection};
use crate::engine::scan::{HistogramSink, Scan};

/// Sequential scans read this much at once and feed it piece by piece.
pub const SCAN_READ_AHEAD: u64 = 8 << 20;

/// Why values could not be read.
#[derive(Clone, Debug, PartialEq)]
pub enum ValuesError {
    /// The dtype has no decoder, or the tensor's layout does not fit it.
    Undecodable(String),
    Drive(DriveError),
}

impl std::fmt::Display for ValuesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ValuesError::Undecodable(m) => write!(f, "{m}"),
            ValuesError::Drive(e) => write!(f, "{e}"),
        }
    }
}

impl From<DriveError> for ValuesError {
    fn from(e: DriveError) -> Self {
        ValuesError::Drive(e)
    }
}

fn opts(sel: &Selection) -> DriveOpts {
    let read_ahead = if matches!(sel, Selection::Sample { .. }) { 0 } else { SCAN_READ_AHEAD };
    DriveOpts { read_ahead, strict_eof: true, ..DriveOpts::default() }
}

/// Histogram (and, for block-quantized types, the block-scale histogram when `scales`) of the
/// selected values of `t`. `progress(done, total)` is in bytes of the plan.
pub async fn histogram(
    t: &Tensor,
    src: &Source,
    sel: &Selection,
    scales: bool,
    cancel: &Cancel,
    mut progress: impl FnMut(u64, u64),
) -> Result<HistogramSink, ValuesError> {
    let codec = codec_for(&t.dtype)
        .ok_or_else(|| ValuesError::Undecodable(format!("dtype {} cannot be decoded", t.dtype.name())))?;
    let want_scales = scales && codec.scales.is_some();
    let p = plan(t, &codec, sel).map_err(|e| ValuesError::Undecodable(e.to_string()))?;
    let total = p.bytes;
    progress(0, total);
    let scan = Scan::new(p, codec, HistogramSink::new(want_scales));
    let sink = drive(scan, src, opts(sel), cancel, |s, _| {
        let (done, total) = s.progress();
        progress(done, total);
    })
    .await?;
    progress(total, total);
    Ok(sink)
}

/// The whole tensor as a `.npy` Blob (float32 for float and quantized types).
pub async fn npy_blob(
    t: &Tensor,
    src: &Source,
    cancel: &Cancel,
    mut progress: impl FnMut(u64, u64),
) -> Result<web_sys::Blob, ValuesError> {
    let codec = codec_for(&t.dtype)
        .ok_or_else(|| ValuesError::Undecodable(format!("dtype {} cannot be decoded", t.dtype.name())))?;
    let (descr, raw) = npy::layout(&t.dtype)
        .ok_or_else(|| ValuesError::Undecodable(format!("dtype {} cannot be exported", t.dtype.name())))?;
    let p = plan(t, &codec, &Selection::Whole).map_err(|e| ValuesError::Undecodable(e.to_string()))?;
    let parts = js_sys::Array::new();
    parts.push(&browser::part(&npy::header(descr, &npy::numpy_shape(t))));
    let scan = Scan::new(p, codec, NpySink { raw, out: Vec::new() });
    let mut sink = drive(scan, src, opts(&Selection::Whole), cancel, |s, _| {
        let out = &mut s.sink_mut().out;
        if !out.is_empty() {
            parts.push(&browser::part(out));
            out.clear();
        }
        let (done, total) = s.progress();
        progress(done, total);
    })
    .await?;
    if !sink.out.is_empty() {
        parts.push(&browser::part(&std::mem::take(&mut sink.out)));
    }
    browser::blob_of(&parts, "application/octet-stream").map_err(|e| ValuesError::Drive(DriveError::Read(e)))
}

/// Items `first..first + count` of a metadata array, read from the file holding it (`src`,
/// big-endian when `big_endian`: see `Checkpoint::meta_file` and `Checkpoint::big_endian`).
pub async fn array_items(
    array: &Array,
    src: &Source,
    big_endian: bool,
    first: u64,
    count: u64,
    cancel: &Cancel,
) -> Result<Vec<Value>, DriveError> {
    let d = ArrayItemsDecoder::new(array, big_endian, first, count);
    drive(d, src, DriveOpts::default(), cancel, |_, _| {}).await
}
