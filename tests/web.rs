//! Browser tests of the I/O layer and the Leptos components, run in headless Chromium by
//! wasm-bindgen-test-runner: `cargo test --target wasm32-unknown-unknown --test web`.
#![cfg(target_arch = "wasm32")]

use leptos::prelude::*;
use tensorscope::engine::histogram::Bins;
use tensorscope::engine::job::split::{histogram_split, npy_split, Split};
use tensorscope::engine::job::work::{order_job, Reply, Takers};
use tensorscope::engine::job::HistogramSink;
use tensorscope::engine::model::{Checkpoint, Format};
use tensorscope::engine::plan::Selection;
use tensorscope::engine::range::ByteRange;
use tensorscope::io::entries::Input;
use tensorscope::io::open::open_inputs;
use tensorscope::io::values::array_items;
use tensorscope::io::{BlobSource, Cancel, RunError, Source};
use wasm_bindgen::JsCast;
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

wasm_bindgen_test_configure!(run_in_browser);

#[path = "shared/zero_extremes.rs"]
mod zero_extremes;

const GGUF: &[u8] = include_bytes!("fixtures/gguf_v3_le.gguf");
const ALL_TYPES: &[u8] = include_bytes!("fixtures/gguf_all_types.gguf");
const ST: &[u8] = include_bytes!("fixtures/st_all_numpy_dtypes.safetensors");
const Q4K_NPY: &[u8] = include_bytes!("fixtures/values/gguf_all_types.gguf__t.Q4_K.npy");

fn blob(bytes: &[u8]) -> web_sys::Blob {
    let parts = js_sys::Array::of1(&js_sys::Uint8Array::from(bytes));
    web_sys::Blob::new_with_u8_array_sequence(&parts).expect("blob")
}

/// The replies to a split's orders run by the browser's driver one after the other, as a worker
/// runs them (their bytes read back as the page reads a worker's), merged.
async fn run_here<S: Split>(split: S, sources: &[Source]) -> S::Output {
    let mut replies = Vec::new();
    for o in split.orders() {
        let reply = tensorscope::io::run(order_job(o).unwrap(), sources, &Cancel::new(), |_| {}).await.unwrap();
        replies.push(Reply::from_bytes(o, &reply.to_bytes()).expect("a reply survives bytes"));
    }
    split.merge(replies).expect("replies answer their orders")
}

/// The whole-tensor histogram of `t` (and its block scales) through the browser's driver.
async fn histogram_here(cp: &Checkpoint, t: &tensorscope::engine::model::Tensor, sources: &[Source]) -> HistogramSink {
    run_here(histogram_split(cp, t, &Selection::Whole, true, Takers::Workers(3)).unwrap(), sources).await
}

async fn open(name: &str, bytes: &[u8]) -> (Checkpoint, Vec<Source>) {
    let mut inputs = vec![Input { path: name.into(), blob: blob(bytes) }];
    open_inputs(&mut inputs, &Cancel::new(), |_| {}).await.expect("opens")
}

/// A fresh `<div>` appended to `<body>`, to mount a component into.
fn host() -> web_sys::HtmlElement {
    let document = leptos::prelude::document();
    let div = document.create_element("div").expect("create div");
    document.body().expect("body").append_child(&div).expect("append div");
    div.unchecked_into()
}

/// In the browser std's `RandomState` keys are the same in every page: the engine's maps are
/// keyed from the page's own randomness instead, a new key each time it is seeded.
#[wasm_bindgen_test]
fn hash_maps_are_keyed_by_the_pages_randomness() {
    use std::hash::BuildHasher;
    let hash = || tensorscope::engine::hash::Seeded::default().hash_one("blk.0.attn_q.weight");
    tensorscope::io::seed_hashes();
    let one = hash();
    assert_eq!(hash(), one, "one key until seeded again");
    tensorscope::io::seed_hashes();
    assert_ne!(hash(), one);
}

#[wasm_bindgen_test]
async fn blob_source_reads_ranges_and_clamps_at_the_end() {
    let src = BlobSource::new(blob(b"0123456789"));
    assert_eq!(src.len(), 10);
    assert_eq!(src.read(ByteRange::new(2, 5)).await.unwrap(), b"234");
    assert_eq!(src.read(ByteRange::new(8, 20)).await.unwrap(), b"89");
    assert!(src.read(ByteRange::new(10, 20)).await.unwrap().is_empty());
    assert_eq!(src.bytes_read(), 5);
}

#[wasm_bindgen_test]
fn what_is_left_of_a_file_past_4_gib_is_not_cut_to_32_bits() {
    use tensorscope::engine::job::{Job, JobStep, Sha256Job};
    // Here usize is 32-bit: (4 GiB + 100) as usize would be 100.
    let mut job = Sha256Job::new(vec![(0, (4u64 << 30) + 100)]);
    assert!(matches!(job.step(), JobStep::Need(_)));
    job.feed(0, 0, &vec![0u8; 1 << 20]).unwrap();
    assert_eq!(job.progress().done, 1 << 20);
}

#[wasm_bindgen_test]
async fn files_open_through_the_driver_like_the_cli() {
    let (cp, _) = open("gguf_v3_le.gguf", GGUF).await;
    assert_eq!((cp.format, cp.tensors.len()), (Format::Gguf, 37));
    let (cp, _) = open("st_all_numpy_dtypes.safetensors", ST).await;
    assert_eq!((cp.format, cp.tensors.len()), (Format::Safetensors, 13));
}

#[wasm_bindgen_test]
async fn opening_reports_progress_and_can_be_cancelled() {
    let mut seen = Vec::new();
    let mut inputs = vec![
        Input { path: "a.gguf".into(), blob: blob(GGUF) },
        Input { path: "notes.txt".into(), blob: blob(b"hello") },
    ];
    let (cp, sources) = open_inputs(&mut inputs, &Cancel::new(), |p| seen.push(p)).await.unwrap();
    assert_eq!(sources.len(), cp.files.len(), "sources are aligned with the checkpoint's files");
    assert_eq!(seen.last().map(|p| (p.files_done, p.files)), Some((2, 2)));
    assert!(cp.findings.iter().any(|f| f.code == "set.ignored_file"));
    let cancel = Cancel::new();
    cancel.cancel();
    let mut inputs = vec![Input { path: "a.gguf".into(), blob: blob(GGUF) }];
    assert_eq!(open_inputs(&mut inputs, &cancel, |_| {}).await.err(), Some(RunError::Cancelled));
}

#[wasm_bindgen_test]
async fn histograms_and_npy_match_the_engine() {
    let (cp, src) = open("gguf_all_types.gguf", ALL_TYPES).await;
    let t = cp.tensor("t.Q4_K").unwrap();
    assert_eq!(histogram_split(&cp, t, &Selection::Whole, true, Takers::Workers(3)).unwrap().bytes(), t.nbytes);
    let sink = histogram_here(&cp, t, &src).await;
    assert_eq!(sink.values.stats.count, t.elems().unwrap());
    assert!(sink.scales.is_some_and(|s| s.stats.count > 0));
    // The .npy streams out in parts as it is decoded; the last part is the reply.
    let split = npy_split(t, src[t.file].len()).unwrap();
    let mut npy = Vec::new();
    let order = &split.orders()[0];
    let reply = tensorscope::io::run(order_job(order).unwrap(), &src, &Cancel::new(), |j| npy.extend(j.take_output()))
        .await
        .unwrap();
    let Reply::Npy(last) = reply else { panic!("not an .npy reply") };
    npy.extend(last);
    assert_eq!(npy, Q4K_NPY);
}

/// A whole-tensor histogram of many reads through the browser's driver, whose next Blob read
/// starts early, equals the engine's own run over the same bytes, and reads each byte once.
#[wasm_bindgen_test]
async fn a_scan_of_many_reads_with_reads_started_early_equals_the_engine() {
    use tensorscope::engine::hist_report::HistReport;
    use tensorscope::engine::job::{histogram_job, run};
    let elems = 5_000_003u64; // 20 MB of F32, not a whole number of reads
    let header = format!(r#"{{"w":{{"dtype":"F32","shape":[{elems}],"data_offsets":[0,{}]}}}}"#, elems * 4);
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(header.as_bytes());
    let data_at = file.len() as u64;
    for i in 0..elems {
        let v = (i.wrapping_mul(2_654_435_761) % 1_000_003) as f32 - 500_000.0 + (i as f32) * 1e-3;
        file.extend_from_slice(&v.to_le_bytes());
    }
    let (cp, sources) = open("w.safetensors", &file).await;
    let t = cp.tensor("w").unwrap();
    let read_before = sources[0].bytes_read();
    let job = histogram_job(t, &Selection::Whole, false).unwrap();
    let got = tensorscope::io::run(job, &sources, &Cancel::new(), |_| {}).await.unwrap();
    assert_eq!(sources[0].bytes_read() - read_before, file.len() as u64 - data_at, "each byte of the tensor once");
    let want = run(histogram_job(t, &Selection::Whole, false).unwrap(), vec![file.len() as u64], |_, r, buf| {
        buf.clear();
        buf.extend_from_slice(&file[r.start as usize..r.end as usize]);
        Ok(())
    })
    .unwrap();
    assert_eq!(got.values.stats.count, elems);
    let text = |s: &tensorscope::engine::job::HistogramSink| HistReport::new(t, &s.values, 64, None).to_text();
    assert_eq!(text(&got), text(&want));
}

/// The bundle's vector decoder gives exactly its plain twin's values, on random blocks (any
/// scale bits: NaN, infinities and subnormals among them).
#[wasm_bindgen_test]
fn vector_decoders_equal_the_plain_ones_bit_for_bit() {
    use tensorscope::engine::decode::ggml::*;
    use tensorscope::engine::decode::iquants::{iq4_nl_plain, iq4_xs_plain, IQ4_NL, IQ4_XS};
    use tensorscope::engine::decode::DecodeFn;
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let bytes: Vec<u8> = (0..210 * 144 * 4)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    let cases: [(&str, _, DecodeFn); 18] = [
        ("F16", F16, f16_plain),
        ("TQ1_0", TQ1_0, tq1_0_plain),
        ("TQ2_0", TQ2_0, tq2_0_plain),
        ("Q6_K", Q6_K, q6_k_plain),
        ("NVFP4", NVFP4, nvfp4_plain),
        ("Q4_1", Q4_1, q4_1_plain),
        ("Q5_0", Q5_0, q5_0_plain),
        ("Q5_1", Q5_1, q5_1_plain),
        ("Q8_1", Q8_1, q8_1_plain),
        ("Q2_K", Q2_K, q2_k_plain),
        ("Q3_K", Q3_K, q3_k_plain),
        ("Q5_K", Q5_K, q5_k_plain),
        ("Q8_0", Q8_0, q8_0_plain),
        ("Q4_K", Q4_K, q4_k_plain),
        ("Q4_0", Q4_0, q4_0_plain),
        ("MXFP4", MXFP4, mxfp4_plain),
        ("IQ4_NL", IQ4_NL, iq4_nl_plain),
        ("IQ4_XS", IQ4_XS, iq4_xs_plain),
    ];
    for (name, codec, plain) in cases {
        let blocks = bytes.len() / codec.block_bytes;
        let src = &bytes[..blocks * codec.block_bytes];
        let (mut got, mut want) = (vec![0f32; blocks * codec.block_elems], vec![1f32; blocks * codec.block_elems]);
        (codec.decode)(src, &mut got);
        plain(src, &mut want);
        let mut nan = 0;
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            nan += usize::from(w.is_nan());
            assert!(g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()), "{name} value {i}: {g} vs {w}");
        }
        assert!(nan < got.len() / 2, "{name}: mostly numbers");
    }
}

/// The bundle's `simd128` nibble counters give the plain counts, on random and on narrow codes
/// (the histograms of Q4_0, Q4_1, Q4_K, Q5_0, IQ4_NL, IQ4_XS and MXFP4 count codes with them).
#[wasm_bindgen_test]
fn nibble_counters_in_the_bundle_equal_the_plain_counts() {
    use tensorscope::engine::decode::nibbles::{Counter, Plain, Simd128};
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for round in 0..500 {
        let mut qs = [0u8; 128];
        for q in &mut qs {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *q = if round % 3 == 0 { (x >> 40) as u8 & 0x33 } else { (x >> 40) as u8 };
        }
        let (p, q): (&[u8; 16], &[u8; 16]) = (qs[..16].try_into().unwrap(), qs[40..56].try_into().unwrap());
        assert_eq!(Simd128::split(&qs), Plain::split(&qs), "round {round}");
        assert_eq!(Simd128::joint(&qs), Plain::joint(&qs), "round {round}");
        assert_eq!(Simd128::pair(p, q), Plain::pair(p, q), "round {round}");
        let qh = u32::from_le_bytes(qs[60..64].try_into().unwrap());
        assert_eq!(Simd128::fives(p, qh), Plain::fives(p, qh), "round {round}");
    }
}

/// Blocks merged by their scales' bits as the bundle counts them (Q4_0, IQ4_NL, Q5_0, with its
/// `simd128` counters) hold the same values as the same blocks taken apart as groups, in two
/// calls so that slots span them.
#[wasm_bindgen_test]
fn blocks_merged_by_scale_in_the_bundle_hold_their_groups_values() {
    use tensorscope::engine::by_scale::ByScale;
    use tensorscope::engine::codes::add_groups_portable;
    use tensorscope::engine::decode::ggml::codec;
    use tensorscope::engine::decode::groups::{Grouping, GroupsFn, MergedFn};
    use tensorscope::engine::gguf::GgmlType;
    use tensorscope::engine::histogram::Histogram;
    fn both<const H: usize>(merged: MergedFn<H>, groups: GroupsFn, bytes: &[u8], block_bytes: usize) -> [Histogram; 2] {
        let half = bytes.len() / block_bytes / 2 * block_bytes;
        let mut by_scale = ByScale::<H>::default();
        merged(&bytes[..half], &mut by_scale);
        merged(&bytes[half..], &mut by_scale);
        let (mut m, mut g) = (Histogram::default(), Histogram::default());
        by_scale.count_with(|groups| add_groups_portable(&mut m, groups));
        let mut taken = Vec::new();
        groups(bytes, &mut taken);
        add_groups_portable(&mut g, &taken);
        m.end_piece();
        g.end_piece();
        [m, g]
    }
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut types = 0;
    for c in GgmlType::all().filter_map(codec) {
        // Blocks drawn from a few, so that scales repeat.
        let few: Vec<u8> = (0..c.block_bytes * 40)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 40) as u8 & if i % 2 == 1 { 0x3b } else { 0xff }
            })
            .collect();
        let bytes: Vec<u8> =
            (0..12_001).flat_map(|i| few[(i * 7 % 40) * c.block_bytes..][..c.block_bytes].to_vec()).collect();
        let [merged, groups] = match c.groups {
            Some(Grouping::ByScale { merged, groups }) => both(merged, groups, &bytes, c.block_bytes),
            Some(Grouping::ByScalePairs { merged, groups }) => both(merged, groups, &bytes, c.block_bytes),
            _ => continue,
        };
        types += 1;
        let (a, b) = (&merged.stats, &groups.stats);
        let what = format!("{} bytes a block", c.block_bytes);
        assert_eq!(
            (a.count, a.nan, a.zero, a.finite, a.min, a.max),
            (b.count, b.nan, b.zero, b.finite, b.min, b.max),
            "{what}"
        );
        assert!((a.mean - b.mean).abs() <= 1e-9 * b.std().max(b.mean.abs()), "{what}");
        assert_eq!(merged.bins(97), groups.bins(97), "{what}");
    }
    assert_eq!(types, 8);
}

/// The bundle's `simd128` group kernel gives the portable kernel's buckets and statistics to the
/// bit, for every grouped type, on tame and on random scales (infinite, NaN, huge: the groups
/// taken value by value).
#[wasm_bindgen_test]
fn group_kernel_in_the_bundle_equals_the_portable_one_bit_for_bit() {
    use tensorscope::engine::codes::{add_groups, add_groups_portable};
    use tensorscope::engine::decode::ggml::codec;
    use tensorscope::engine::decode::groups::{Entries, Grouping, Scale};
    use tensorscope::engine::gguf::GgmlType;
    use tensorscope::engine::histogram::Histogram;
    /// `bytes` taken apart by `entries_of`, counted by the bundle's kernel and the portable one.
    fn both_kernels<S: Scale>(entries_of: impl Fn(&[u8], &mut Vec<Entries<S>>), bytes: &[u8]) -> [Histogram; 2] {
        let mut groups = Vec::new();
        entries_of(bytes, &mut groups);
        let (mut vector, mut portable) = (Histogram::default(), Histogram::default());
        add_groups(&mut vector, &groups);
        add_groups_portable(&mut portable, &groups);
        vector.end_piece();
        portable.end_piece();
        [vector, portable]
    }
    let grouped: Vec<_> = GgmlType::all().filter_map(codec).filter(|c| c.groups.is_some()).collect();
    assert!(grouped.len() >= 10, "{} grouped types", grouped.len());
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for c in grouped {
        for (blocks, tame) in [(1, true), (300, true), (300, false)] {
            let mut bytes: Vec<u8> = (0..c.block_bytes * blocks)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    (x >> 40) as u8
                })
                .collect();
            if tame {
                for b in bytes.iter_mut().skip(1).step_by(2) {
                    *b &= 0x3b;
                }
            }
            let [vector, portable] = match c.groups.unwrap() {
                Grouping::Groups(f) | Grouping::ByScaleByte(f) => both_kernels(f, &bytes),
                Grouping::ByScale { groups, .. } | Grouping::ByScalePairs { groups, .. } => {
                    both_kernels(groups, &bytes)
                }
                Grouping::Quads(f) => both_kernels(f, &bytes),
            };
            let bits = |h: &Histogram| {
                let s = &h.stats;
                (s.count, s.nan, s.zero, s.finite, [s.min, s.max, s.mean, s.m2].map(f64::to_bits))
            };
            let what = format!("{} bytes a block, {blocks} blocks, tame {tame}", c.block_bytes);
            assert_eq!(bits(&vector), bits(&portable), "{what}");
            assert_eq!(vector.bins(97), portable.bins(97), "{what}");
        }
    }
}

/// The bundle keeps the zero extreme seen first, as the CLI does ([`zero_extremes`]).
#[wasm_bindgen_test]
fn a_zero_extreme_keeps_the_sign_seen_first_in_the_bundle() {
    zero_extremes::a_zero_extreme_keeps_the_sign_seen_first();
}

/// Every GGML block type as ggml's own quantizers write it (`tests/ggml_blocks.rs` holds the CLI
/// to the same): the browser's whole-tensor histogram gives ggml's dequantized values' counts
/// and extremes exactly, and their mean and spread as closely as the CLI.
#[wasm_bindgen_test]
async fn every_block_type_in_the_browser_reads_as_ggml_dequantizes_it() {
    const FILES: &[(&str, &[u8])] = &[
        ("IQ1_M", include_bytes!("fixtures/ggml_blocks/IQ1_M.gguf")),
        ("IQ1_S", include_bytes!("fixtures/ggml_blocks/IQ1_S.gguf")),
        ("IQ2_S", include_bytes!("fixtures/ggml_blocks/IQ2_S.gguf")),
        ("IQ2_XS", include_bytes!("fixtures/ggml_blocks/IQ2_XS.gguf")),
        ("IQ2_XXS", include_bytes!("fixtures/ggml_blocks/IQ2_XXS.gguf")),
        ("IQ3_S", include_bytes!("fixtures/ggml_blocks/IQ3_S.gguf")),
        ("IQ3_XXS", include_bytes!("fixtures/ggml_blocks/IQ3_XXS.gguf")),
        ("IQ4_NL", include_bytes!("fixtures/ggml_blocks/IQ4_NL.gguf")),
        ("IQ4_XS", include_bytes!("fixtures/ggml_blocks/IQ4_XS.gguf")),
        ("MXFP4", include_bytes!("fixtures/ggml_blocks/MXFP4.gguf")),
        ("NVFP4", include_bytes!("fixtures/ggml_blocks/NVFP4.gguf")),
        ("Q1_0", include_bytes!("fixtures/ggml_blocks/Q1_0.gguf")),
        ("Q2_0", include_bytes!("fixtures/ggml_blocks/Q2_0.gguf")),
        ("Q2_K", include_bytes!("fixtures/ggml_blocks/Q2_K.gguf")),
        ("Q3_K", include_bytes!("fixtures/ggml_blocks/Q3_K.gguf")),
        ("Q4_0", include_bytes!("fixtures/ggml_blocks/Q4_0.gguf")),
        ("Q4_1", include_bytes!("fixtures/ggml_blocks/Q4_1.gguf")),
        ("Q4_K", include_bytes!("fixtures/ggml_blocks/Q4_K.gguf")),
        ("Q5_0", include_bytes!("fixtures/ggml_blocks/Q5_0.gguf")),
        ("Q5_1", include_bytes!("fixtures/ggml_blocks/Q5_1.gguf")),
        ("Q5_K", include_bytes!("fixtures/ggml_blocks/Q5_K.gguf")),
        ("Q6_K", include_bytes!("fixtures/ggml_blocks/Q6_K.gguf")),
        ("Q8_0", include_bytes!("fixtures/ggml_blocks/Q8_0.gguf")),
        ("Q8_K", include_bytes!("fixtures/ggml_blocks/Q8_K.gguf")),
        ("TQ1_0", include_bytes!("fixtures/ggml_blocks/TQ1_0.gguf")),
        ("TQ2_0", include_bytes!("fixtures/ggml_blocks/TQ2_0.gguf")),
    ];
    let expected: serde_json::Value = serde_json::from_str(include_str!("fixtures/ggml_blocks/expected.json")).unwrap();
    assert_eq!(FILES.len(), expected.as_object().unwrap().len());
    for (name, bytes) in FILES {
        let want = &expected[*name];
        let (cp, sources) = open(&format!("{name}.gguf"), bytes).await;
        let sink = histogram_here(&cp, cp.tensor("w").unwrap(), &sources).await;
        let s = &sink.values.stats;
        let count = |k: &str| want[k].as_u64().unwrap();
        assert_eq!(
            (s.count, s.nan, s.pos_inf + s.neg_inf, s.zero),
            (count("count"), count("nan"), count("inf"), count("zero")),
            "{name}"
        );
        let f32_of = |k: &str| want[k].as_f64().unwrap() as f32;
        assert_eq!(
            ((s.min as f32).to_bits(), (s.max as f32).to_bits()),
            (f32_of("min").to_bits(), f32_of("max").to_bits()),
            "{name}"
        );
        let scale = want["min"].as_f64().unwrap().abs().max(want["max"].as_f64().unwrap().abs());
        for (ours, k) in [(s.mean, "mean"), (s.std(), "std")] {
            let theirs = want[k].as_f64().unwrap();
            assert!((ours - theirs).abs() <= 1e-7 * scale, "{name}: {k} {ours} vs {theirs}");
        }
    }
}

/// The bundle's F16 decoder gives its plain twin's bits for every one of the 65,536 patterns
/// (NaN payloads included), whole groups of eight and the tail alike.
#[wasm_bindgen_test]
fn f16_in_the_bundle_equals_the_plain_conversion_for_every_pattern() {
    use tensorscope::engine::decode::ggml::{f16_plain, F16};
    let bytes: Vec<u8> = (0..=u16::MAX).flat_map(|h| h.to_le_bytes()).collect();
    for src in [&bytes[..], &bytes[2..2 + 2 * 13]] {
        let (mut got, mut want) = (vec![0f32; src.len() / 2], vec![1f32; src.len() / 2]);
        (F16.decode)(src, &mut got);
        f16_plain(src, &mut want);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g.to_bits(), w.to_bits(), "value {i}: {g} vs {w}");
        }
    }
}

/// The bundle's i-quant decoders (vector steps for IQ1/IQ2/IQ3) give gguf-py's values bit for bit.
#[wasm_bindgen_test]
fn iquant_decoders_in_the_bundle_equal_gguf_py_bit_for_bit() {
    use tensorscope::engine::decode::iquants::*;
    macro_rules! vectors {
        ($name:literal) => {
            (
                $name,
                &include_bytes!(concat!("fixtures/quant/", $name, ".blocks"))[..],
                &include_bytes!(concat!("fixtures/quant/", $name, ".f32"))[..],
            )
        };
    }
    let cases = [
        (vectors!("IQ1_S"), IQ1_S),
        (vectors!("IQ1_M"), IQ1_M),
        (vectors!("IQ2_XXS"), IQ2_XXS),
        (vectors!("IQ2_XS"), IQ2_XS),
        (vectors!("IQ2_S"), IQ2_S),
        (vectors!("IQ3_XXS"), IQ3_XXS),
        (vectors!("IQ3_S"), IQ3_S),
    ];
    for ((name, blocks, want), codec) in cases {
        let want: Vec<f32> = want.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
        assert_eq!(want.len(), blocks.len() / codec.block_bytes * codec.block_elems, "{name}");
        let mut got = vec![0f32; want.len()];
        (codec.decode)(blocks, &mut got);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()), "{name} value {i}: {g} vs {w}");
        }
    }
}

#[wasm_bindgen_test]
async fn array_items_past_the_kept_ones_are_read_on_demand() {
    let (cp, src) = open("gguf_v3_le.gguf", GGUF).await;
    let Some(tensorscope::engine::model::MetaValue::Gguf(tensorscope::engine::gguf::Value::Array(a))) =
        cp.meta("tokenizer.ggml.tokens")
    else {
        panic!("tokens are an array")
    };
    let page = array_items(a, &src, 0, false, 0, a.len, None, &Cancel::new()).await.unwrap();
    let items: Vec<_> = page.items.into_iter().map(|(_, v)| v).collect();
    assert_eq!(items.len() as u64, a.len);
    assert_eq!(items[..a.items.len()], a.items[..]);
    let found = array_items(a, &src, 0, false, 0, 5, Some("the"), &Cancel::new()).await.unwrap();
    assert!(found.matched >= 1 && found.items.iter().all(|(_, v)| v.to_string().to_lowercase().contains("the")));
}

#[wasm_bindgen_test]
fn viewer_mounts_with_heading_tagline_and_drop_zone() {
    let host = host();
    let handle = leptos::mount::mount_to(host.clone(), || view! { <tensorscope::ui::Viewer /> });
    let app = host.query_selector("[data-testid=app]").unwrap().expect("[data-testid=app] is rendered");
    assert_eq!(app.query_selector("h1").unwrap().unwrap().text_content().as_deref(), Some("Tensorscope"));
    assert!(app.query_selector("[data-testid=drop-zone]").unwrap().is_some());
    assert!(app.query_selector("[data-testid=file-input]").unwrap().is_some());
    drop(handle);
    assert!(host.query_selector("[data-testid=app]").unwrap().is_none());
}

#[wasm_bindgen_test]
fn histogram_chart_draws_one_bar_per_bin_and_text_stays_text() {
    let host = host();
    let bins = Bins { lo: -1.0, hi: 1.0, counts: vec![1, 5, 0, 2] };
    let handle = leptos::mount::mount_to(host.clone(), move || {
        view! {
            <tensorscope::ui::HistogramChart bins=bins.clone() log=false testid="h" />
            <tensorscope::ui::ProgressBar done=3u64 total=4u64 />
        }
    });
    let svg = host.query_selector("[data-testid=h] svg").unwrap().expect("an <svg>");
    assert_eq!(svg.child_element_count(), 4);
    assert!(host.text_content().unwrap().contains("75%"));
    drop(handle);
}

/// Every fixture, by the path the CLI was given (see `tests/drivers.rs`).
const FIXTURE_FILES: &[(&str, &[u8])] = &[
    ("gguf_v3_le.gguf", include_bytes!("fixtures/gguf_v3_le.gguf")),
    ("gguf_v3_be.gguf", include_bytes!("fixtures/gguf_v3_be.gguf")),
    ("gguf_all_types.gguf", include_bytes!("fixtures/gguf_all_types.gguf")),
    ("gguf_alignment_64.gguf", include_bytes!("fixtures/gguf_alignment_64.gguf")),
    ("gguf_nested_array.gguf", include_bytes!("fixtures/gguf_nested_array.gguf")),
    ("st_all_numpy_dtypes.safetensors", include_bytes!("fixtures/st_all_numpy_dtypes.safetensors")),
    ("st_exotic_dtypes.safetensors", include_bytes!("fixtures/st_exotic_dtypes.safetensors")),
    ("sharded/model-00001-of-00002.safetensors", include_bytes!("fixtures/sharded/model-00001-of-00002.safetensors")),
    ("sharded/model-00002-of-00002.safetensors", include_bytes!("fixtures/sharded/model-00002-of-00002.safetensors")),
    ("sharded/model.safetensors.index.json", include_bytes!("fixtures/sharded/model.safetensors.index.json")),
    ("split/model-00001-of-00003.gguf", include_bytes!("fixtures/split/model-00001-of-00003.gguf")),
    ("split/model-00002-of-00003.gguf", include_bytes!("fixtures/split/model-00002-of-00003.gguf")),
    ("split/model-00003-of-00003.gguf", include_bytes!("fixtures/split/model-00003-of-00003.gguf")),
    ("quant_st/nvfp4/model.safetensors", include_bytes!("fixtures/quant_st/nvfp4/model.safetensors")),
    ("quant_st/nvfp4/config.json", include_bytes!("fixtures/quant_st/nvfp4/config.json")),
    ("quant_st/nvfp4/hf_quant_config.json", include_bytes!("fixtures/quant_st/nvfp4/hf_quant_config.json")),
    ("quant_st/fp8-block/model.safetensors", include_bytes!("fixtures/quant_st/fp8-block/model.safetensors")),
    ("quant_st/fp8-block/config.json", include_bytes!("fixtures/quant_st/fp8-block/config.json")),
];

/// The browser's driver gives the CLI's `check` and `hist` output byte for byte, on every fixture.
#[wasm_bindgen_test]
async fn check_and_hist_in_the_browser_equal_the_cli_on_every_fixture() {
    use tensorscope::engine::hist_report::HistReport;
    use tensorscope::engine::job::check_job;
    use tensorscope::engine::report::Report;
    let want: serde_json::Value = serde_json::from_str(include_str!("fixtures/drivers.json")).unwrap();
    let mut hists = 0;
    for (set, entry) in want.as_object().unwrap() {
        let mut inputs: Vec<Input> = set
            .split(' ')
            .map(|name| {
                let bytes = FIXTURE_FILES.iter().find(|(n, _)| n == &name).expect("fixture bytes").1;
                Input { path: name.into(), blob: blob(bytes) }
            })
            .collect();
        let (cp, sources) = open_inputs(&mut inputs, &Cancel::new(), |_| {}).await.unwrap();
        let outcome = tensorscope::io::run(check_job(&cp, true, true), &sources, &Cancel::new(), |_| {}).await.unwrap();
        assert_eq!(Report::check(&cp, &outcome, &[]).to_text(), entry["check"].as_str().unwrap(), "{set}: check");
        for (name, text) in entry["hist"].as_object().unwrap() {
            let t = cp.tensor(name).unwrap();
            let sink = histogram_here(&cp, t, &sources).await;
            let got = HistReport::new(t, &sink.values, 16, sink.scales.as_ref()).to_text();
            assert_eq!(got, text.as_str().unwrap(), "{set}: hist {name}");
            hists += 1;
        }
    }
    assert!(hists > 100, "{hists}");
}
