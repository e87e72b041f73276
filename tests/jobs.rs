//! The job layer and the model it reads: no value is ever read from bytes the header did not
//! locate, declared sizes are never allocated, files are told apart by index, and non-finite
//! floats survive JSON.
#![cfg(not(target_arch = "wasm32"))]

mod common;
#[path = "shared/zero_extremes.rs"]
mod zero_extremes;

use common::*;
use serde_json::Value as Json;
use tensorscope::engine::job::{self, check_job, histogram_job, nonfinite_job, npy_job, ScanOutcome, ValuesError};
use tensorscope::engine::model::Lost;
use tensorscope::engine::plan::Selection;
use tensorscope::engine::report::{report, Report};

/// Run a job over in-memory files.
fn run<J: job::Job>(j: J, files: &[&[u8]]) -> Result<J::Output, job::RunError> {
    let lens = files.iter().map(|f| f.len() as u64).collect();
    job::run(j, lens, |f, r, buf| {
        *buf = files[f][r.start as usize..r.end as usize].to_vec();
        Ok(())
    })
}

/// A GGUF of three F32 tensors whose tensor infos break off inside the third.
fn cut_gguf() -> Vec<u8> {
    let mut g = Gguf::header(3, 3, 0);
    g.tensor("a", &[4], 0, 0).tensor("b", &[4], 0, 32);
    let mut b = g.build();
    b.extend_from_slice(&5u64.to_le_bytes());
    b.extend_from_slice(b"c");
    b
}

#[test]
fn tensors_listed_before_the_header_breaks_off_have_no_location_and_are_never_read() {
    let bytes = cut_gguf();
    let cp = open_one("cut.gguf", &bytes);
    assert!(codes(&cp).contains(&"gguf.truncated"), "{:?}", cp.findings);
    assert_eq!(cp.tensors.len(), 2);
    for t in &cp.tensors {
        assert_eq!(t.offset, None, "{}: no offset is known", t.name);
        assert_eq!(t.data, Err(Lost::NoDataSection));
        assert_eq!(histogram_job(t, &Selection::Whole, false).err(), Some(ValuesError::Lost(Lost::NoDataSection)));
        assert!(npy_job(t).is_err());
    }
    let r = report(&cp);
    assert_eq!(r["tensors"][0]["offset"], Json::Null, "JSON says the offset is unknown, not 0");
    let scan = run(nonfinite_job(&cp), &[&bytes]).unwrap();
    assert_eq!(scan, vec![ScanOutcome::Skipped, ScanOutcome::Skipped]);
}

#[test]
fn declared_sizes_past_the_file_are_never_planned_or_allocated() {
    // 64 TiB declared in a 200-byte file: located nowhere, planned never.
    let h = r#"{"huge":{"dtype":"F32","shape":[17592186044416],"data_offsets":[0,70368744177664]},"small":{"dtype":"F32","shape":[1],"data_offsets":[70368744177664,70368744177668]}}"#;
    let bytes = safetensors(h, 16);
    let cp = open_one("x.safetensors", &bytes);
    let t = cp.tensor("huge").unwrap();
    assert!(matches!(t.data, Err(Lost::PastEnd { .. })), "{:?}", t.data);
    assert!(matches!(histogram_job(t, &Selection::Whole, true), Err(ValuesError::Lost(_))));
    let out = run(check_job(&cp, true, true), &[&bytes]).unwrap();
    assert_eq!(out.scan.unwrap(), vec![ScanOutcome::Skipped, ScanOutcome::Skipped]);
    // A GGUF offset that would wrap around u64 is lost too, not wrapped.
    let mut g = Gguf::header(3, 1, 0);
    g.tensor("w", &[8], 0, u64::MAX - 31).pad(32).data(32);
    let cp = open_one("w.gguf", &g.build());
    assert!(matches!(cp.tensors[0].data, Err(Lost::PastEnd { end: None, .. })), "{:?}", cp.tensors[0].data);
}

#[test]
fn two_files_with_the_same_name_are_read_by_index_never_by_name() {
    let one = safetensors(r#"{"w":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}"#, 4);
    let mut two = one.clone();
    let n = two.len();
    two[n - 4..].copy_from_slice(&[9, 9, 9, 9]);
    let cp = open_all(&[("a/model.safetensors", &one), ("b/model.safetensors", &two)]);
    let digests = run(check_job(&cp, true, false), &[&one, &two]).unwrap().digests.unwrap();
    assert_ne!(digests[0], digests[1]);
    // Each tensor is read from its own file.
    for (i, t) in cp.tensors.iter().enumerate() {
        let files: [&[u8]; 2] = [&one, &two];
        let h = run(histogram_job(t, &Selection::Whole, false).unwrap(), &files).unwrap();
        let want = if cp.files[t.file].given == 0 { 0.0 } else { 9.0 };
        assert_eq!((i, h.values.stats.max), (i, want));
    }
}

#[test]
fn files_are_aligned_with_what_was_given() {
    let a = safetensors(r#"{"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}"#, 1);
    let b = safetensors(r#"{"y":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}"#, 1);
    // Given in reverse name order: the set sorts its shards, and records where each came from.
    let cp =
        open_all(&[("m-00002-of-00002.safetensors", &b), ("notes.txt", b"hi"), ("m-00001-of-00002.safetensors", &a)]);
    let given: Vec<usize> = cp.files.iter().map(|f| f.given).collect();
    assert_eq!(given, vec![2, 0]);
}

#[test]
fn non_finite_floats_are_written_losslessly() {
    let mut g = Gguf::header(3, 0, 2);
    g.str(b"inf").u32(6).raw(&f32::INFINITY.to_le_bytes());
    g.str(b"arr").u32(9).u32(12).u64(4);
    for v in [f64::NEG_INFINITY, f64::NAN, 1.5, f64::INFINITY] {
        g.raw(&v.to_le_bytes());
    }
    let cp = open_one("x.gguf", &g.build());
    let text = Report::inspect(&cp).to_text();
    let r: Json = serde_json::from_str(&text).unwrap();
    assert_eq!(r["metadata"]["inf"], serde_json::json!({"type": "f32", "value": "Infinity"}));
    assert_eq!(r["metadata"]["arr"]["value"], serde_json::json!(["-Infinity", "NaN", 1.5, "Infinity"]));
}

#[test]
fn histograms_of_no_finite_values_have_no_extremes() {
    let h = r#"{"w":{"dtype":"F32","shape":[3],"data_offsets":[0,12]}}"#;
    let mut bytes = safetensors(h, 0);
    for v in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    let cp = open_one("x.safetensors", &bytes);
    let t = &cp.tensors[0];
    let sink = run(histogram_job(t, &Selection::Whole, false).unwrap(), &[&bytes]).unwrap();
    let r: Json =
        serde_json::from_str(&tensorscope::engine::hist_report::HistReport::new(t, &sink.values, 4, None).to_text())
            .unwrap();
    assert_eq!((r["nan"].as_u64(), r["inf"].as_u64(), r["count"].as_u64()), (Some(1), Some(2), Some(3)));
    assert_eq!((r["min"].clone(), r["max"].clone(), r["mean"].clone()), (Json::Null, Json::Null, Json::Null));
}

#[test]
fn a_file_that_shrank_since_it_was_opened_is_an_error_not_short_values() {
    let h = r#"{"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}"#;
    let bytes = safetensors(h, 16);
    let cp = open_one("x.safetensors", &bytes);
    let j = histogram_job(&cp.tensors[0], &Selection::Whole, false).unwrap();
    let short = &bytes[..bytes.len() - 4];
    let lens = vec![bytes.len() as u64];
    let e = job::run(j, lens, |_, r, buf| {
        *buf = short[r.start as usize..(r.end as usize).min(short.len())].to_vec();
        Ok(())
    });
    assert!(matches!(e, Err(job::RunError::ShortRead { .. })), "{e:?}");
}

/// Work orders (what the CLI's threads and the browser's workers run) cross a byte boundary and
/// merge to the sequential results, for every fixture's tensors; broken replies are refused.
#[test]
fn work_orders_round_trip_and_merge_to_the_sequential_result() {
    use tensorscope::engine::hist_report::HistReport;
    use tensorscope::engine::job::split::{check_split, histogram_split, Split};
    use tensorscope::engine::job::work::{order_job, Order, Reply, Takers, TensorRef};
    for name in ["gguf_all_types.gguf", "st_all_numpy_dtypes.safetensors", "gguf_v3_le.gguf"] {
        let bytes = std::fs::read(fixtures().join(name)).unwrap();
        let cp = open_one(name, &bytes);
        let through_bytes = |orders: &[Order]| -> Vec<Reply> {
            orders
                .iter()
                .map(|o| {
                    let o = Order::from_bytes(&o.to_bytes()).expect("an order survives bytes");
                    let reply = run(order_job(&o).unwrap(), &[&bytes]).unwrap();
                    let wire = reply.to_bytes();
                    for cut in [0, wire.len() / 2, wire.len().saturating_sub(1)] {
                        assert!(
                            cut == wire.len() || Reply::from_bytes(&o, &wire[..cut]).is_none(),
                            "{name}: cut at {cut}"
                        );
                    }
                    let mut longer = wire.clone();
                    longer.push(0);
                    assert!(Reply::from_bytes(&o, &longer).is_none(), "{name}: trailing bytes");
                    Reply::from_bytes(&o, &wire).expect("a reply survives bytes")
                })
                .collect()
        };
        let mut histograms = 0;
        for t in &cp.tensors {
            for sel in [Selection::Whole, Selection::Sample { budget_bytes: 4096 }] {
                let Ok(job) = histogram_job(t, &sel, true) else { continue };
                let seq = run(job, &[&bytes]).unwrap();
                for takers in [Takers::Threads(3), Takers::Workers(3)] {
                    let split = histogram_split(&cp, t, &sel, true, takers).unwrap();
                    let replies = through_bytes(split.orders());
                    let joined = split.merge(replies).unwrap();
                    let text = |s: &job::HistogramSink| HistReport::new(t, &s.values, 16, s.scales.as_ref()).to_text();
                    assert_eq!(text(&joined), text(&seq), "{name} {} {takers:?}", t.name);
                }
                histograms += 1;
            }
        }
        assert!(histograms > 0, "{name}");
        for t in &cp.tensors {
            let Ok(job) = npy_job(t) else { continue };
            let mut want = Vec::new();
            let mut sink = job::run_draining(
                job,
                vec![bytes.len() as u64],
                |_, r, buf| {
                    *buf = bytes[r.start as usize..r.end as usize].to_vec();
                    Ok(())
                },
                |j| {
                    want.extend(j.sink_mut().take());
                    Ok(())
                },
            )
            .unwrap();
            want.extend(sink.take());
            let order = Order::Npy { tensor: TensorRef::of(t, bytes.len() as u64).unwrap() };
            let order = Order::from_bytes(&order.to_bytes()).unwrap();
            let mut got = Vec::new();
            let reply = job::run_draining(
                order_job(&order).unwrap(),
                vec![bytes.len() as u64],
                |_, r, buf| {
                    *buf = bytes[r.start as usize..r.end as usize].to_vec();
                    Ok(())
                },
                |j| {
                    got.extend(j.take_output());
                    Ok(())
                },
            )
            .unwrap();
            let Some(Reply::Npy(last)) = Reply::from_bytes(&order, &reply.to_bytes()) else {
                panic!("{name}: an npy reply")
            };
            got.extend(last);
            assert_eq!(got, want, "{name} {}: .npy through an order", t.name);
        }
        for (sha, scan) in [(true, true), (false, true), (true, false)] {
            let seq = run(check_job(&cp, sha, scan), &[&bytes]).unwrap();
            for takers in [Takers::Threads(4), Takers::Workers(4)] {
                let plan = check_split(&cp, sha, scan, takers);
                let replies = through_bytes(plan.orders());
                assert_eq!(plan.merge(replies).unwrap(), seq, "{name} sha {sha} scan {scan} {takers:?}");
            }
        }
    }
}

/// A piece fed whole is read where it lies, one fed in parts from a copy: both give the same
/// histogram, scan and hashes, whatever the reads' sizes; a reused read buffer changes nothing.
#[test]
fn results_do_not_depend_on_how_reads_are_cut_or_which_buffer_they_reuse() {
    use tensorscope::engine::hist_report::HistReport;
    use tensorscope::engine::job::{Poll, ReadOpts, Runner};
    /// Run `j` with reads of at most `chunk` bytes and no read-ahead (0: the default reads).
    fn cut<J: job::Job>(j: J, bytes: &[u8], chunk: u64) -> J::Output {
        let lens = vec![bytes.len() as u64];
        let mut r = match chunk {
            0 => Runner::new(j, lens),
            c => Runner::with_opts(j, lens, ReadOpts { chunk: c, max_read_ahead: 0, max_feed: c / 3 + 1 }),
        };
        loop {
            match r.poll().unwrap() {
                Poll::Read(_, range) => {
                    r.fill(0, range, bytes[range.start as usize..range.end as usize].to_vec()).unwrap()
                }
                Poll::Fed => {}
                Poll::Done(out) => return out,
            }
        }
    }
    for name in ["gguf_all_types.gguf", "st_all_numpy_dtypes.safetensors"] {
        let bytes = std::fs::read(fixtures().join(name)).unwrap();
        let cp = open_one(name, &bytes);
        for t in &cp.tensors {
            let Ok(job) = histogram_job(t, &Selection::Whole, true) else { continue };
            let text = |s: &job::HistogramSink| HistReport::new(t, &s.values, 16, s.scales.as_ref()).to_text();
            let whole = text(&cut(job, &bytes, 0));
            for chunk in [1, 7, 100] {
                let job = histogram_job(t, &Selection::Whole, true).unwrap();
                assert_eq!(text(&cut(job, &bytes, chunk)), whole, "{name} {} in reads of {chunk}", t.name);
            }
        }
        let whole = cut(check_job(&cp, true, true), &bytes, 0);
        assert_eq!(cut(check_job(&cp, true, true), &bytes, 13), whole, "{name}: check");
        // Runs that reuse one buffer: the second run's first read is handed the first's.
        let mut buf = Vec::new();
        let mut handed = Vec::new();
        for _ in 0..2 {
            let out = job::run_reusing(
                check_job(&cp, true, true),
                vec![bytes.len() as u64],
                job::ReadOpts::default(),
                &mut buf,
                |_, r, b| {
                    handed.push(b.capacity());
                    b.clear();
                    b.extend_from_slice(&bytes[r.start as usize..r.end as usize]);
                    Ok(())
                },
                |_| Ok(()),
            )
            .unwrap();
            assert_eq!(out, whole, "{name}: check reusing a buffer");
        }
        assert_eq!(handed[0], 0, "{name}: the first run starts with no buffer");
        assert!(handed[handed.len() / 2] > 0, "{name}: the second run starts with the first's: {handed:?}");
    }
}

/// Every worker gets part of a check's scan, even of a file of one tensor (it used to be one
/// order, read by one thread); the merged outcome is the sequential one.
#[test]
fn one_tensor_is_scanned_by_every_worker() {
    use tensorscope::engine::job::split::{check_split, Split};
    use tensorscope::engine::job::work::{order_job, Takers};
    // An f32 tensor of 24 MiB (24 pieces), one NaN and one infinity in it.
    let n = 6u64 << 20;
    let mut g = Gguf::header(3, 1, 0);
    g.tensor("w", &[n], 0, 0).pad(32);
    let mut bytes = g.build();
    let start = bytes.len();
    bytes.resize(start + n as usize * 4, 0);
    bytes[start + 4 * 1000..start + 4 * 1001].copy_from_slice(&f32::NAN.to_le_bytes());
    bytes[start + 4 * (n as usize - 1)..].copy_from_slice(&f32::INFINITY.to_le_bytes());
    let cp = open_one("one.gguf", &bytes);
    let seq = run(check_job(&cp, false, true), &[&bytes]).unwrap();
    let counted = |s: &ScanOutcome| matches!(s, ScanOutcome::Counted(c) if (c.values, c.nan, c.inf) == (n, 1, 1));
    assert!(counted(&seq.scan.clone().unwrap()[0]), "{seq:?}");
    for takers in [2, 4].into_iter().flat_map(|n| [Takers::Threads(n), Takers::Workers(n)]) {
        let plan = check_split(&cp, false, true, takers);
        assert!(plan.orders().len() >= takers.count(), "{takers:?}, {} orders", plan.orders().len());
        let replies = plan.orders().iter().map(|o| run(order_job(o).unwrap(), &[&bytes]).unwrap()).collect();
        assert_eq!(plan.merge(replies).unwrap(), seq, "{takers:?}");
    }
}

/// Of `−0` and `+0`, the CLI's build keeps the zero extreme seen first ([`zero_extremes`]).
#[test]
fn a_zero_extreme_keeps_the_sign_seen_first() {
    zero_extremes::a_zero_extreme_keeps_the_sign_seen_first();
}
