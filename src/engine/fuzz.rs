//! Entry points shared by the fuzz targets (`tests/fuzz`) and the in-tree smoke tests: any
//! bytes must decode to findings, never a panic, whatever the chunking.

use super::gguf::GgmlType;
use super::inspections::assemble;
use super::job;
use super::model::{Dtype, Extent, FileInfo};
use super::open::{FileDecoder, Parsed};
use super::plan::{plan, Selection};
use super::report::report;
use super::safetensors::Dtype as St;
use super::step::{Decoder, Step};

/// Decode `data` as the file `name`, in chunks whose sizes the data's first byte chooses,
/// and render the report.
pub fn decode_as(name: &str, data: &[u8]) {
    let chunk = data.first().map_or(1, |&b| 1 + u64::from(b) * 37);
    let parsed = decode(name, data, chunk);
    let _ = report(&assemble(vec![(FileInfo::new(name, data.len() as u64), parsed)]));
}

/// Run `data` through the pickle machine and the tensor finder, then open it as a pickle
/// checkpoint (a torch zip when it starts like one, else a pickle stream) and assemble it:
/// bounded, never a panic or a hang.
pub fn pickle(data: &[u8]) {
    let tree = super::pickle::machine::run(data, 0);
    let _ = super::pickle::torch::tensors(&tree);
    let chunk = data.first().map_or(1, |&b| 1 + u64::from(b) * 37);
    let parsed = decode("x.pt", data, chunk);
    let _ = assemble(vec![(FileInfo::new("x.pt", data.len() as u64), parsed)]);
}

/// Render `data` (as UTF-8, lossily) as a chat template for the sample conversation: a result
/// or an error, bounded by the renderer's fuel and output limit, never a panic; and the
/// `generation` tags' rewrite keeps every line where it was.
#[cfg(feature = "render")]
pub fn chat_template(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let rewritten = super::template_generation::with_generation_tags_rewritten(&text);
    assert_eq!(rewritten.lines().count(), text.lines().count(), "a line moved");
    let _ = super::template_render::render_sample(&text, "<bos>", "<eos>");
}

/// Cut `data` at its `0xff 0xfe` markers into files named by kind, and assemble them.
pub fn assemble_split(data: &[u8]) {
    const NAMES: [&str; 4] =
        ["a-00001-of-00002.gguf", "model.safetensors.index.json", "a-00002-of-00002.safetensors", "b.gguf"];
    let files: Vec<(FileInfo, Parsed)> = data
        .split(|&b| b == 0xff)
        .zip(NAMES.iter().cycle())
        .take(6)
        .map(|(bytes, name)| (FileInfo::new(*name, bytes.len() as u64), decode(name, bytes, 4096)))
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
    // A block type's NaN and infinities counted from its scales are those its values hold.
    if let Some(count) = codec.nonfinite.filter(|_| codec.block_elems > 1) {
        let nan = values.iter().filter(|v| v.is_nan()).count() as u64;
        let inf = values.iter().filter(|v| v.is_infinite()).count() as u64;
        assert_eq!(count(&bytes[..whole]), (nan, inf), "type {which}: non-finite values from the scales");
    }
    let mut h = Histogram::default();
    h.add(&values);
    let bins = 1 + usize::from(which % 64);
    let _ = h.bins(bins);
    let counts = |s: &super::stats::Stats| (s.count, s.finite, s.nan, s.pos_inf, s.neg_inf, s.zero, s.min, s.max);
    // The sink a histogram order fills (codes counted by group or by value where the type has
    // them, else values binned with their statistics in one pass) bins and counts exactly as
    // the decoded values do.
    {
        use super::job::{HistogramSink, Sink};
        let mut sink = HistogramSink::new(&codec, false);
        if sink.wants_values() {
            sink.values(0, &values);
        } else {
            sink.raw(&bytes[..whole]);
        }
        sink.piece_done();
        sink.finish();
        let (a, b) = (&sink.values.stats, &h.stats);
        assert_eq!(counts(a), counts(b), "type {which}: the sink's counts and extremes");
        assert_eq!(sink.values.bins(bins), h.bins(bins), "type {which}: the sink's bins");
    }
    // Groups merged by scale (which the sink does only for pieces of 256 KiB and more) bin and
    // count as the decoded values do, whatever their scales: zeros, subnormals, NaN.
    {
        use super::decode::groups::Grouping;
        // Added in two calls, so a slot's items span them.
        let mut m = Histogram::default();
        let merged = match codec.groups {
            Some(Grouping::ByScale { merged, .. }) => {
                merged_in_two(merged, &bytes[..whole], codec.block_bytes, &mut m);
                true
            }
            Some(Grouping::ByScalePairs { merged, .. }) => {
                merged_in_two(merged, &bytes[..whole], codec.block_bytes, &mut m);
                true
            }
            _ => false,
        };
        if merged {
            m.end_piece();
            assert_eq!(counts(&m.stats), counts(&h.stats), "type {which}: merged counts and extremes");
            assert_eq!(m.bins(bins), h.bins(bins), "type {which}: merged bins");
        }
    }
    if let Some(scales) = codec.scales {
        let mut out = Vec::new();
        scales(&bytes[..whole], &mut out);
        h.add(&out);
    }
}

/// `merged`'s groups of `bytes` (whole blocks of `block_bytes`), merged in two calls so that a
/// slot's items span them, counted into `h`.
fn merged_in_two<const H: usize>(
    merged: super::decode::groups::MergedFn<H>,
    bytes: &[u8],
    block_bytes: usize,
    h: &mut super::histogram::Histogram,
) {
    let half = bytes.len() / block_bytes / 2 * block_bytes;
    let mut merger = super::by_scale::ByScale::<H>::default();
    merged(&bytes[..half], &mut merger);
    merged(&bytes[half..], &mut merger);
    merger.count_with(|groups| super::codes::add_groups(h, groups));
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

/// The dtype chosen by `which`: a GGML type id, or past them a safetensors dtype.
fn dtype_of(which: u8) -> Dtype {
    let st = St::all();
    match GgmlType(u32::from(which)).block() {
        Some(_) => Dtype::Ggml(GgmlType(u32::from(which))),
        None => Dtype::Safetensors(st[usize::from(which) % st.len()]),
    }
}

/// A selection chosen by two bytes and a little-endian u64.
fn selection_of(kind: u8, a: u64, b: u64) -> Selection {
    match kind % 3 {
        0 => Selection::Whole,
        1 => Selection::Elements { start: a.min(b), end: a.max(b) },
        _ => Selection::Sample { budget_bytes: a | 1 },
    }
}

fn u64_at(data: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    for (i, x) in data.iter().skip(at).take(8).enumerate() {
        b[i] = *x;
    }
    u64::from_le_bytes(b)
}

/// Plan any selection over any extent (dtype, shape, offset and file size from `data`) and
/// check every promise a plan makes: pieces inside the extent, block-aligned, in order, and
/// covering exactly the elements the plan states. Pieces are computed, never stored.
pub fn plan_pieces(data: &[u8]) {
    if data.len() < 4 {
        return;
    }
    let dtype = dtype_of(data[0]);
    let Some(codec) = super::decode::codec_for(&dtype) else { return };
    let shape: Vec<u64> = (0..usize::from(data[1] % 4)).map(|i| u64_at(data, 3 + 8 * i) >> (data[2] % 64)).collect();
    let (offset, file_len) = (u64_at(data, 35) >> 8, u64::MAX - u64::from(data[3]));
    let Some(len) = shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d)).and_then(|e| dtype.nbytes(e)) else { return };
    let Ok(extent) = Extent::check(&dtype, &shape, offset, len, file_len) else { return };
    let sel = selection_of(data[2], u64_at(data, 43) % (extent.elems() + 2), u64_at(data, 51) % (extent.elems() + 2));
    let Ok(p) = plan(3, &extent, (codec.block_elems as u64, codec.block_bytes as u64), &sel) else { return };
    let (range, bb) = (extent.range(), codec.block_bytes as u64);
    let check = |i: u64, prev_end: u64| {
        let x = p.piece(i).expect("pieces below the count exist");
        assert!(x.bytes.start >= range.start && x.bytes.end <= range.end, "piece {i} outside the extent");
        assert!(x.bytes.start >= prev_end && !x.bytes.is_empty(), "pieces overlap or are empty");
        assert_eq!((x.bytes.start - range.start) % bb, 0);
        assert_eq!(x.bytes.len() % bb, 0);
        assert!(x.skip + x.keep <= x.bytes.len() / bb * codec.block_elems as u64);
        x
    };
    assert!(p.piece(p.pieces).is_none());
    if p.pieces <= 4096 {
        let (mut end, mut kept) = (0, 0);
        for i in 0..p.pieces {
            let x = check(i, end);
            end = x.bytes.end;
            kept += x.keep;
        }
        assert_eq!(kept, p.elems, "pieces keep the elements the plan states");
    } else {
        check(0, 0);
        check(p.pieces - 1, 0);
        check(p.pieces / 2, 0);
    }
}

/// A one-tensor file of the dtype `data[0]` chooses holding `data[4..]` (cut to whole blocks),
/// followed by a second tiny tensor: GGUF for GGML types, safetensors otherwise.
fn synth_file(data: &[u8]) -> Option<(String, Vec<u8>)> {
    let dtype = dtype_of(*data.first()?);
    let payload = data.get(4..)?;
    let codec = super::decode::codec_for(&dtype)?;
    let blocks = payload.len() / codec.block_bytes;
    let elems = (blocks * codec.block_elems) as u64;
    let len = blocks * codec.block_bytes;
    match dtype {
        Dtype::Ggml(t) => {
            let mut h = Vec::new();
            let s = |h: &mut Vec<u8>, v: &str| {
                h.extend((v.len() as u64).to_le_bytes());
                h.extend(v.as_bytes());
            };
            h.extend(b"GGUF");
            h.extend(3u32.to_le_bytes());
            h.extend(2u64.to_le_bytes());
            h.extend(0u64.to_le_bytes());
            for (name, ne, ty, off) in [("a", elems, t.0, 0u64), ("b", 1, 0, (len as u64).next_multiple_of(32))] {
                s(&mut h, name);
                h.extend(1u32.to_le_bytes());
                h.extend(ne.to_le_bytes());
                h.extend(ty.to_le_bytes());
                h.extend(off.to_le_bytes());
            }
            h.resize(h.len().next_multiple_of(32), 0);
            h.extend(&payload[..len]);
            h.resize(h.len().next_multiple_of(32), 0);
            h.extend(1.5f32.to_le_bytes());
            Some(("x.gguf".into(), h))
        }
        Dtype::Safetensors(d) => {
            let json = format!(
                r#"{{"a":{{"dtype":"{}","shape":[{elems}],"data_offsets":[0,{len}]}},"b":{{"dtype":"F32","shape":[1],"data_offsets":[{len},{}]}}}}"#,
                d.name(),
                len + 4
            );
            let mut f = (json.len() as u64).to_le_bytes().to_vec();
            f.extend(json.as_bytes());
            f.extend(&payload[..len]);
            f.extend(1.5f32.to_le_bytes());
            Some(("x.safetensors".into(), f))
        }
        Dtype::Unknown(_) => None,
    }
}

/// Open a synthesized file through the open job, then run the job `which` picks (histogram,
/// `.npy` export, or the check: SHA-256 and NaN/Inf scan) over it through the read planner,
/// with the selection `data[1..4]` picks. Results must agree with the plan.
pub fn run_job(which: u8, data: &[u8]) {
    let Some((name, file)) = synth_file(data) else { return };
    let lens = vec![file.len() as u64];
    let read = |_: usize, r: super::range::ByteRange, buf: &mut Vec<u8>| {
        *buf = file[r.start as usize..r.end as usize].to_vec();
        Ok(())
    };
    let parsed = job::run(job::headers_job(vec![FileInfo::new(name, file.len() as u64)]), lens.clone(), read);
    let cp = crate::inspections::assemble(parsed.expect("opens"));
    assert_eq!(cp.tensors.len(), 2, "{:?}", cp.findings);
    let t = &cp.tensors[0];
    let elems = t.elems().unwrap_or(0);
    let sel = selection_of(data[1], u64::from(data[2]) * 97 % (elems + 2), u64::from(data[3]) * 389 % (elems + 2));
    match which % 3 {
        0 => {
            let Ok(j) = job::histogram_job(t, &sel, data[1] & 1 == 1) else { return };
            let want = j.plan().elems;
            let out = job::run(j, lens, read).expect("reads within the file");
            assert_eq!(out.values.stats.count, want);
            let _ = out.values.bins(1 + usize::from(data[2] % 64));
        }
        1 => {
            let Ok(j) = job::npy_job(t) else { return };
            let mut bytes = 0usize;
            let drain = |j: &mut job::NpyJob| {
                bytes += j.sink_mut().take().len();
                Ok(())
            };
            let mut sink = job::run_draining(j, lens, read, drain).expect("reads within the file");
            bytes += sink.take().len();
            assert!(bytes as u64 >= elems, "{bytes} bytes for {elems} elements");
        }
        _ => {
            let out = job::run(job::check_job(&cp, true, true), lens, read).expect("reads within the file");
            assert_eq!(out.digests.map(|d| d.len()), Some(1));
            let scan = out.scan.expect("scanned");
            assert_eq!(scan.len(), 2);
            let _ = report(&cp);
            let _ = super::report::Report::check(&cp, &job::CheckOutcome { digests: None, scan: Some(scan) }, &[])
                .to_text();
        }
    }
}
