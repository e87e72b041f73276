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
