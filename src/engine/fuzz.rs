//! Entry points shared by the fuzz targets (`tests/fuzz`) and the in-tree smoke tests: any
//! bytes must decode to findings, never a panic, whatever the chunking.

use super::model::FileInfo;
use super::open::{FileDecoder, Parsed};
use super::report::report;
use super::shards::assemble;
use super::step::{Decoder, Step};

/// Decode `data` as the file `name`, in chunks whose sizes the data's first byte chooses,
/// and render the report.
pub fn decode_as(name: &str, data: &[u8]) {
    let chunk = data.first().map_or(1, |&b| 1 + u64::from(b) * 37);
    let parsed = decode(name, data, chunk);
    let _ = report(&assemble(vec![(FileInfo { path: name.into(), size: data.len() as u64 }, parsed)]));
}

/// Cut `data` at its `0xff 0xfe` markers into files named by kind, and assemble them.
pub fn assemble_split(data: &[u8]) {
    const NAMES: [&str; 4] =
        ["a-00001-of-00002.gguf", "model.safetensors.index.json", "a-00002-of-00002.safetensors", "b.gguf"];
    let files: Vec<(FileInfo, Parsed)> = data
        .split(|&b| b == 0xff)
        .zip(NAMES.iter().cycle())
        .take(6)
        .map(|(bytes, name)| (FileInfo { path: (*name).into(), size: bytes.len() as u64 }, decode(name, bytes, 4096)))
        .collect();
    let _ = report(&assemble(files));
}

/// Decode `data[1..]` as blocks of the GGML type (or, past the GGML ids, the safetensors
/// dtype) chosen by `data[0]`, then histogram the values and their scales.
pub fn decode_values(data: &[u8]) {
    use super::decode::{ggml, st_dtypes};
    use super::gguf::GgmlType;
    use super::histogram::Histogram;
    let Some((&which, bytes)) = data.split_first() else { return };
    let st = super::safetensors::Dtype::all();
    let codec = match ggml::codec(GgmlType(u32::from(which))) {
        Some(c) => c,
        None => st_dtypes::codec(st[usize::from(which) % st.len()]),
    };
    let whole = bytes.len() / codec.block_bytes * codec.block_bytes;
    let mut values = vec![0f32; whole / codec.block_bytes * codec.block_elems];
    (codec.decode)(&bytes[..whole], &mut values);
    let mut h = Histogram::default();
    h.add(&values);
    let _ = h.bins(1 + usize::from(which % 64));
    if let Some(scales) = codec.scales {
        let mut out = Vec::new();
        scales(&bytes[..whole], &mut out);
        h.add(&out);
    }
}

fn decode(name: &str, data: &[u8], chunk: u64) -> Parsed {
    let len = data.len() as u64;
    let mut d = FileDecoder::new(name, len);
    loop {
        match d.step() {
            Step::Done(p) => return p,
            Step::Need(r) => {
                assert!(r.start <= len && r.end <= len && r.start < r.end, "need {r} outside a {len}-byte file");
                let end = r.end.min(r.start.saturating_add(chunk));
                d.feed(r.start, &data[r.start as usize..end as usize]).expect("fed where asked");
            }
        }
    }
}
