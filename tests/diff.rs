//! `tensorscope diff`: two checkpoints compared by header and, on demand, by value; the JSON
//! follows the README's contract and the exit status says whether anything differs.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::Value as Json;

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tensorscope-diff-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A safetensors file of F32 tensors `(name, values)` and `__metadata__` pairs.
fn write_f32(path: &Path, tensors: &[(&str, Vec<f32>)], meta: &[(&str, &str)]) {
    let shaped: Vec<(&str, Vec<u64>, Vec<f32>)> =
        tensors.iter().map(|(n, v)| (*n, vec![v.len() as u64], v.clone())).collect();
    write_shaped(path, &shaped, meta);
}

/// [`write_f32`] with shapes.
fn write_shaped(path: &Path, tensors: &[(&str, Vec<u64>, Vec<f32>)], meta: &[(&str, &str)]) {
    let mut header = serde_json::Map::new();
    let mut at = 0usize;
    for (name, shape, v) in tensors {
        let n = v.len() * 4;
        let entry = serde_json::json!({"dtype": "F32", "shape": shape, "data_offsets": [at, at + n]});
        header.insert((*name).into(), entry);
        at += n;
    }
    let m: serde_json::Map<String, Json> = meta.iter().map(|(k, v)| ((*k).into(), Json::from(*v))).collect();
    header.insert("__metadata__".into(), Json::Object(m));
    let mut bytes = safetensors(&serde_json::to_string(&header).unwrap(), 0);
    for (_, _, v) in tensors {
        bytes.extend(v.iter().flat_map(|x| x.to_le_bytes()));
    }
    std::fs::write(path, bytes).unwrap();
}

fn diff(a: &Path, b: &Path, extra: &[&str]) -> (i32, Json) {
    let mut args = vec!["diff", a.to_str().unwrap(), "--vs", b.to_str().unwrap(), "--json"];
    args.extend_from_slice(extra);
    let out = common::cli().args(&args).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    (out.status.code().unwrap(), serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}")))
}

fn entry<'a>(j: &'a Json, name: &str) -> &'a Json {
    j["tensors"].as_array().unwrap().iter().find(|t| t["name"] == name).unwrap_or_else(|| panic!("{name}"))
}

#[test]
fn a_fine_tune_against_its_base_tensor_by_tensor_and_key_by_key() {
    let dir = temp_dir("finetune");
    let mut rng = Rng(7);
    let mut values = |n: usize| -> Vec<f32> { (0..n).map(|_| (rng.next() % 2001) as f32 / 1000.0 - 1.0).collect() };
    let (embed, attn, gone, norm) = (values(300), values(64), values(16), values(8));
    let base = dir.join("base.safetensors");
    write_f32(
        &base,
        &[("embed", embed.clone()), ("attn", attn.clone()), ("gone", gone), ("norm", norm.clone())],
        &[("format", "pt"), ("note", "base")],
    );
    let mut tuned_attn = attn.clone();
    for (i, v) in tuned_attn.iter_mut().enumerate().filter(|(i, _)| i % 3 == 0) {
        *v += 0.01 * (i as f32 + 1.0);
    }
    let tuned = dir.join("tuned.safetensors");
    write_f32(
        &tuned,
        &[
            ("embed", embed.clone()),
            ("attn", tuned_attn.clone()),
            ("norm", norm[..4].to_vec()),
            ("added", vec![1.0; 4]),
        ],
        &[("format", "pt"), ("note", "tuned"), ("extra", "x")],
    );

    let (code, j) = diff(&base, &tuned, &[]);
    assert_eq!(code, 1, "they differ");
    assert_eq!(j["a"]["format"], "safetensors");
    assert_eq!(j["b"]["files"][0]["size"], std::fs::metadata(&tuned).unwrap().len());
    assert_eq!(entry(&j, "embed")["status"], "same");
    assert_eq!(entry(&j, "embed")["values"]["compared"], 300);
    assert_eq!(entry(&j, "gone")["status"], "only_a");
    assert_eq!(entry(&j, "gone")["b"], Json::Null);
    assert_eq!(entry(&j, "added")["status"], "only_b");
    assert_eq!(entry(&j, "added")["a"], Json::Null);
    // A shape change: no values compared, status from the header.
    let n = entry(&j, "norm");
    assert_eq!((n["status"].as_str(), n.get("values")), (Some("changed"), None));
    assert_eq!(n["a"]["shape"], serde_json::json!([8]));
    // Same header, different values: changed, with the errors numpy would give.
    let a = entry(&j, "attn");
    assert_eq!(a["status"], "changed");
    let (x, y): (Vec<f64>, Vec<f64>) =
        (attn.iter().map(|&v| v.into()).collect(), tuned_attn.iter().map(|&v| v.into()).collect());
    let d2: f64 = x.iter().zip(&y).map(|(p, q)| (p - q).powi(2)).sum();
    let (a2, b2, ab): (f64, f64, f64) =
        (x.iter().map(|p| p * p).sum(), y.iter().map(|q| q * q).sum(), x.iter().zip(&y).map(|(p, q)| p * q).sum());
    let max = x.iter().zip(&y).map(|(p, q)| (p - q).abs()).fold(0.0, f64::max);
    let v = &a["values"];
    assert_eq!(v["compared"], 64);
    assert!((v["nmse"].as_f64().unwrap() - d2 / a2).abs() < 1e-12, "{v}");
    assert!((v["cosine"].as_f64().unwrap() - ab / (a2 * b2).sqrt()).abs() < 1e-12, "{v}");
    assert_eq!(v["max_abs"].as_f64().unwrap(), max);
    assert_eq!(j["summary"], serde_json::json!({"same": 1, "changed": 2, "only_a": 1, "only_b": 1}));
    let keys: Vec<(&str, &str)> = j["metadata"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["key"].as_str().unwrap(), m["status"].as_str().unwrap()))
        .collect();
    assert_eq!(keys, vec![("note", "changed"), ("extra", "only_b")]);
    assert_eq!((j["metadata"][0]["a"].as_str(), j["metadata"][0]["b"].as_str()), (Some("base"), Some("tuned")));

    // Headers only: the value change is not seen.
    let (_, j) = diff(&base, &tuned, &["--values", "none"]);
    assert_eq!(entry(&j, "attn")["status"], "same");
    assert!(entry(&j, "attn").get("values").is_none());

    // A checkpoint against itself: the same, exit 0.
    let (code, j) = diff(&base, &base, &[]);
    assert_eq!((code, j["summary"]["same"].as_u64()), (0, Some(4)));
    assert_eq!(j["metadata"], serde_json::json!([]));
}

#[test]
fn big_tensors_are_sampled_by_default_and_read_whole_on_request() {
    let dir = temp_dir("sample");
    let n = 1_000_000usize;
    let base: Vec<f32> = (0..n).map(|i| (i % 977) as f32).collect();
    let mut other = base.clone();
    other[n / 2 + 1000] += 1.0; // between the sample's windows
    let (a, b) = (dir.join("a.safetensors"), dir.join("b.safetensors"));
    write_f32(&a, &[("w", base)], &[]);
    write_f32(&b, &[("w", other)], &[]);
    let (code, j) = diff(&a, &b, &[]);
    assert_eq!(entry(&j, "w")["values"]["compared"], 64 * 4096);
    assert_eq!((code, entry(&j, "w")["status"].as_str()), (0, Some("same")), "the sample misses the change");
    let (code, j) = diff(&a, &b, &["--values", "all"]);
    let v = &entry(&j, "w")["values"];
    assert_eq!((code, v["compared"].as_u64(), v["max_abs"].as_f64()), (1, Some(n as u64), Some(1.0)));
}

#[test]
fn a_quantized_tensor_is_compared_with_its_float_source() {
    // The same 64 values as F32 in a GGUF and as Q8_0 (d = 0.5, q = i - 32): the values agree.
    let dir = temp_dir("quant");
    let want: Vec<f32> = (0..64).map(|i| (i as f32 - 32.0) * 0.5).collect();
    let mut f = Gguf::header(3, 1, 0);
    f.tensor("w", &[64], 0, 0).pad(32);
    for v in &want {
        f.raw(&v.to_le_bytes());
    }
    let mut q = Gguf::header(3, 1, 0);
    q.tensor("w", &[64], 8, 0).pad(32);
    for block in 0..2 {
        q.raw(&half::f16::from_f32(0.5).to_le_bytes());
        q.raw(&(0..32).map(|i| (block * 32 + i - 32) as i8 as u8).collect::<Vec<u8>>());
    }
    let (a, b) = (dir.join("f32.gguf"), dir.join("q8.gguf"));
    std::fs::write(&a, f.build()).unwrap();
    std::fs::write(&b, q.build()).unwrap();
    let (code, j) = diff(&a, &b, &[]);
    let w = entry(&j, "w");
    assert_eq!((code, w["status"].as_str()), (1, Some("changed")), "the dtype changed");
    assert_eq!((w["a"]["dtype"].as_str(), w["b"]["dtype"].as_str()), (Some("F32"), Some("Q8_0")));
    let v = &w["values"];
    assert_eq!((v["compared"].as_u64(), v["nmse"].as_f64(), v["cosine"].as_f64()), (Some(64), Some(0.0), Some(1.0)));
}

#[test]
fn usage_errors_exit_2() {
    let out = common::cli().args(["diff", "x.safetensors"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = common::cli().args(["diff", "a", "--vs", "b", "--values", "most"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// A llama-style model against its GGUF written by gguf-py as llama.cpp's converter writes it
/// (its names, Q/K rows permuted, F32/F16/Q8_0/Q4_0/Q4_K): every tensor is matched and its errors are
/// numpy's over gguf-py's dequantized values (tests/fixtures/make_diff_fixtures.py).
#[test]
fn a_gguf_is_compared_with_the_safetensors_it_was_converted_from() {
    let dir = fixtures().join("diff");
    let expected: Json = serde_json::from_str(&std::fs::read_to_string(dir.join("expected.json")).unwrap()).unwrap();
    for values in ["all", "sample"] {
        let (code, j) = diff(&dir.join("base.safetensors"), &dir.join("base-mixed.gguf"), &["--values", values]);
        assert_eq!(code, 1);
        assert_eq!(j["summary"]["only_a"], 0, "{values}: every Hugging Face tensor found");
        assert_eq!(j["summary"]["only_b"], 0, "{values}: every GGUF tensor matched");
        for (name, want) in expected.as_object().unwrap() {
            let t = entry(&j, name);
            assert_eq!(t["b_name"], want["gguf"], "{name}");
            let v = &t["values"];
            assert_eq!(v["compared"], want["compared"], "{values} {name}: small tensors are compared whole");
            for k in ["nmse", "cosine", "max_abs"] {
                let (got, want) = (v[k].as_f64().unwrap(), want[k].as_f64().unwrap());
                assert!((got - want).abs() <= 1e-9 * want.abs().max(1e-12), "{name} {k}: {got} vs numpy {want}");
            }
            // Unquantized F32 tensors (the permuted K among them) are the same tensor.
            let same = want["type"] == "F32";
            assert_eq!(t["status"] == "same", same, "{name}: {}", t["status"]);
        }
    }
    // The text output puts the totals side by side, per type.
    let out =
        common::cli().args(["diff", "base.safetensors", "--vs", "base-mixed.gguf"]).current_dir(&dir).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    for q4 in ["Q4_0", "Q4_K"] {
        let line = text.lines().find(|l| l.starts_with(q4)).unwrap_or_else(|| panic!("{text}"));
        assert_eq!(line.split_whitespace().collect::<Vec<_>>(), [q4, "0", "8192", "0", "4608", "-", "4.50"]);
    }
    assert!(text.contains("tensors: 4 same, 8 changed, 0 only in A, 0 only in B"), "{text}");
    // Bytes per layer side by side, with the layer's worst NMSE (gate_proj's, Q4_0).
    let layer0 = text.lines().find(|l| l.starts_with("0 ")).unwrap_or_else(|| panic!("{text}"));
    let gate = expected["model.layers.0.mlp.gate_proj.weight"]["nmse"].as_f64().unwrap();
    assert_eq!(layer0.split_whitespace().collect::<Vec<_>>(), ["0", "110848", "23904", &format!("{gate:.3e}")]);
    // The fine-tune: v_proj changed, lm_head removed, one tensor added, a metadata value changed.
    let (_, j) = diff(&dir.join("base.safetensors"), &dir.join("tuned.safetensors"), &[]);
    assert_eq!(j["summary"], serde_json::json!({"same": 10, "changed": 1, "only_a": 1, "only_b": 1}));
    assert_eq!(entry(&j, "model.layers.0.self_attn.v_proj.weight")["status"], "changed");
    assert_eq!(entry(&j, "lm_head.weight")["status"], "only_a");
    assert_eq!(entry(&j, "model.layers.0.extra.weight")["status"], "only_b");
    assert_eq!(j["metadata"][0]["key"], "note");
}

/// Mixtral-style experts, one Hugging Face tensor each, against the GGUF tensor that stacks them:
/// each expert is compared with its slice.
#[test]
fn experts_are_compared_with_their_slice_of_the_stack() {
    let dir = temp_dir("experts");
    let expert = |e: usize| -> Vec<f32> { (0..4 * 32).map(|i| (e * 1000 + i) as f32).collect() };
    let hf = dir.join("hf.safetensors");
    let name = |e: usize| format!("model.layers.0.block_sparse_moe.experts.{e}.w1.weight");
    let (n0, n1) = (name(0), name(1));
    write_shaped(&hf, &[(&n0, vec![4, 32], expert(0)), (&n1, vec![4, 32], expert(1))], &[]);
    let mut g = Gguf::header(3, 1, 1);
    g.kv_str("general.architecture", "llama");
    g.tensor("blk.0.ffn_gate_exps.weight", &[32, 4, 2], 0, 0).pad(32);
    let mut stacked = expert(0);
    stacked.extend(expert(1));
    stacked[4 * 32 + 5] += 0.5; // expert 1 differs in one element
    for v in &stacked {
        g.raw(&v.to_le_bytes());
    }
    let gguf = dir.join("moe.gguf");
    std::fs::write(&gguf, g.build()).unwrap();
    let (_, j) = diff(&hf, &gguf, &["--values", "all"]);
    let (e0, e1) = (entry(&j, &n0), entry(&j, &n1));
    assert_eq!(
        (e0["b_name"].as_str(), e1["b_name"].as_str()),
        (Some("blk.0.ffn_gate_exps.weight"), Some("blk.0.ffn_gate_exps.weight"))
    );
    assert_eq!((e0["status"].as_str(), e0["values"]["max_abs"].as_f64()), (Some("same"), Some(0.0)));
    assert_eq!((e1["status"].as_str(), e1["values"]["max_abs"].as_f64()), (Some("changed"), Some(0.5)));
    assert_eq!(j["summary"]["only_b"], 0);
    // And the other way round: the stack against its experts.
    let (_, j) = diff(&gguf, &hf, &["--values", "all"]);
    let stack: Vec<&Json> =
        j["tensors"].as_array().unwrap().iter().filter(|t| t["name"] == "blk.0.ffn_gate_exps.weight").collect();
    assert_eq!(stack.len(), 2, "one entry per expert");
    assert_eq!(stack[1]["values"]["max_abs"].as_f64(), Some(0.5));
}

/// Two 500-tensor sets of 4 MB tensors (sparse files): a sampled value diff plans the sample's
/// windows and nothing else — 64 windows of 4,096 values per tensor and side — and reads exactly
/// what it plans (a tenth of the orders run, to keep the debug build quick).
#[test]
fn a_sampled_diff_of_big_sets_reads_only_the_sample() {
    use tensorscope::cli::open_paths;
    use tensorscope::engine::diff::diff as header_diff;
    use tensorscope::engine::diff_values::compare_split;
    use tensorscope::engine::job::split::Split;
    use tensorscope::engine::job::work::{order_job, Reply};
    use tensorscope::engine::job::{self, Job as _, Values};
    let dir = temp_dir("big-sets");
    let (tensors, elems) = (500usize, 1usize << 20);
    let mut header = serde_json::Map::new();
    for i in 0..tensors {
        let at = i * elems * 4;
        header.insert(
            format!("t{i:03}"),
            serde_json::json!({"dtype": "F32", "shape": [elems], "data_offsets": [at, at + elems * 4]}),
        );
    }
    let text = serde_json::to_string(&header).unwrap();
    let paths: Vec<PathBuf> = ["a", "b"].iter().map(|n| dir.join(format!("{n}.safetensors"))).collect();
    for p in &paths {
        let head = safetensors(&text, 0);
        let f = std::fs::File::create(p).unwrap();
        std::io::Write::write_all(&mut &f, &head).unwrap();
        f.set_len((head.len() + tensors * elems * 4) as u64).unwrap(); // sparse zeros
    }
    let (a, _) = open_paths(&paths[..1]).unwrap();
    let (b, _) = open_paths(&paths[1..]).unwrap();
    let d = header_diff(&a, &b);
    let split = compare_split(&d, &a, &b, Values::Sample);
    let orders = split.orders();
    assert_eq!(orders.len(), tensors);
    let files: Vec<std::fs::File> = paths.iter().map(|p| std::fs::File::open(p).unwrap()).collect();
    let lens: Vec<u64> = a.files.iter().chain(&b.files).map(|f| f.size).collect();
    let planned: u64 = orders.iter().map(|o| order_job(o).unwrap().progress().total).sum();
    let sample = (tensors * 2 * 64 * 4096 * 4) as u64;
    assert_eq!(planned, sample, "the sampled windows of {} bytes", lens.iter().sum::<u64>());
    assert_eq!(split.bytes(), sample, "the split knows what its orders read");
    let (mut read, mut replies) = (0u64, Vec::new());
    let run_here = &orders[..tensors / 10];
    for o in run_here {
        let reply = job::run(order_job(o).unwrap(), lens.clone(), |f, r, buf| {
            use std::io::{Read, Seek, SeekFrom};
            read += r.len();
            buf.resize(r.len() as usize, 0);
            let mut file = &files[f];
            file.seek(SeekFrom::Start(r.start)).and_then(|_| file.read_exact(buf)).map_err(|e| e.to_string())
        })
        .unwrap();
        replies.push(reply);
    }
    assert_eq!(read, sample / 10, "exactly what was planned");
    assert!(replies.iter().all(|r| matches!(r, Reply::Compare(v) if v.identical && v.compared == 64 * 4096)));
}

/// Gemma's converter stores its norms as `1 + w`: they compare equal to their Hugging Face
/// source once the one is added back, both ways round; other tensors are untouched.
#[test]
fn gemma_norms_compare_with_the_one_the_converter_adds() {
    let dir = temp_dir("gemma");
    let norm: Vec<f32> = (0..8).map(|i| i as f32 * 0.125 - 0.5).collect();
    let up: Vec<f32> = (0..16).map(|i| i as f32 * 0.01).collect();
    let hf = dir.join("hf.safetensors");
    write_shaped(
        &hf,
        &[
            ("model.layers.0.input_layernorm.weight", vec![8], norm.clone()),
            ("model.layers.0.mlp.up_proj.weight", vec![2, 8], up.clone()),
        ],
        &[],
    );
    let mut g = Gguf::header(3, 2, 1);
    g.kv_str("general.architecture", "gemma2");
    g.tensor("blk.0.attn_norm.weight", &[8], 0, 0).tensor("blk.0.ffn_up.weight", &[8, 2], 0, 32).pad(32);
    for v in norm.iter().map(|v| v + 1.0).chain(up.iter().copied()) {
        g.raw(&v.to_le_bytes());
    }
    let gguf = dir.join("gemma.gguf");
    std::fs::write(&gguf, g.build()).unwrap();
    for (a, b) in [(&hf, &gguf), (&gguf, &hf)] {
        let (_, j) = diff(a, b, &[]);
        for t in j["tensors"].as_array().unwrap() {
            assert_eq!((t["status"].as_str(), t["values"]["max_abs"].as_f64()), (Some("same"), Some(0.0)), "{t}");
        }
        assert_eq!(j["summary"]["same"], 2);
    }
}

/// A vocabulary longer than the items a header keeps: two that differ only past those items are
/// told apart by their bytes; equal ones are not listed.
#[test]
fn long_metadata_arrays_are_compared_by_their_bytes() {
    let dir = temp_dir("arrays");
    let vocab = |last: &str| {
        let n = 5000u64;
        let mut g = Gguf::header(3, 0, 1);
        g.str(b"tokenizer.ggml.tokens").u32(9).u32(8).u64(n);
        for i in 0..n - 1 {
            g.str(format!("tok{i}").as_bytes());
        }
        g.str(last.as_bytes());
        g.build()
    };
    let (a, b, c) = (dir.join("a.gguf"), dir.join("b.gguf"), dir.join("c.gguf"));
    std::fs::write(&a, vocab("end")).unwrap();
    std::fs::write(&b, vocab("end")).unwrap();
    std::fs::write(&c, vocab("END")).unwrap();
    let (code, j) = diff(&a, &b, &["--values", "none"]);
    assert_eq!((code, j["metadata"].as_array().unwrap().len()), (0, 0));
    let (code, j) = diff(&a, &c, &["--values", "none"]);
    assert_eq!(code, 1);
    assert_eq!(j["metadata"][0]["key"], "tokenizer.ggml.tokens");
    assert_eq!(j["metadata"][0]["status"], "changed");
}

/// The Compare tab's table sorts by any column, both ways; tensors without compared values stay
/// last when sorting by a value.
#[test]
fn the_pairs_sort_by_any_column() {
    use tensorscope::engine::diff::{diff as engine_diff, sorted, SortBy};
    use tensorscope::engine::job::ValueDiff;
    let dir = fixtures().join("diff");
    let (a, _) = tensorscope::cli::open_paths(&[dir.join("base.safetensors")]).unwrap();
    let (b, _) = tensorscope::cli::open_paths(&[dir.join("tuned.safetensors")]).unwrap();
    let mut d = engine_diff(&a, &b);
    let name = |p: &tensorscope::engine::diff::TensorPair| {
        p.a.map(|i| a.tensors[i].name.clone()).or_else(|| p.b.map(|i| b.tensors[i].name.clone())).unwrap()
    };
    // Values for three pairs only.
    for (i, nmse) in [(1, 0.5), (3, 0.1), (5, 0.9)] {
        let v = ValueDiff { compared: 8, nmse, cosine: 1.0 - nmse, max_abs: nmse * 2.0, identical: false };
        d.tensors[i].values = Some(v);
    }
    let names = |by, desc| sorted(&d, &a, &b, by, desc, false).into_iter().map(name).collect::<Vec<_>>();
    let file: Vec<String> = d.tensors.iter().map(name).collect();
    assert_eq!(names(SortBy::File, false), file);
    assert_eq!(names(SortBy::File, true), file.iter().rev().cloned().collect::<Vec<_>>());
    let worst = names(SortBy::Nmse, true);
    assert_eq!(worst[..3], [file[5].clone(), file[1].clone(), file[3].clone()]);
    let best_cosine = names(SortBy::Cosine, true);
    assert_eq!(best_cosine[..3], [file[3].clone(), file[1].clone(), file[5].clone()]);
    assert_eq!(
        names(SortBy::Nmse, false)[3..],
        file.iter().enumerate().filter(|(i, _)| ![1, 3, 5].contains(i)).map(|(_, n)| n.clone()).collect::<Vec<_>>(),
        "uncompared last, in file order"
    );
    let mut by_name = file.clone();
    by_name.sort();
    assert_eq!(names(SortBy::Name, false), by_name);
    // Changed only (headers only: v_proj's change shows once values are compared), by status.
    let changed = sorted(&d, &a, &b, SortBy::Status, true, true);
    assert_eq!(changed.iter().map(|p| p.status.name()).collect::<Vec<_>>(), ["only_b", "only_a"]);
}

/// An order to compare two tensors that do not pair up says so, not that a dtype is undecodable.
#[test]
fn a_compare_order_of_mismatched_shapes_names_the_shapes() {
    use tensorscope::engine::job::work::{order_job, Order, TensorRef};
    use tensorscope::engine::job::{Pairing, Values, ValuesError};
    let dir = fixtures().join("diff");
    let (a, _) = tensorscope::cli::open_paths(&[dir.join("base.safetensors")]).unwrap();
    let len = a.files[0].size;
    let r = |name: &str| TensorRef::of(a.tensor(name).unwrap(), len).unwrap();
    let order = Order::Compare {
        a: r("model.embed_tokens.weight"),
        b: r("model.layers.0.self_attn.q_proj.weight"),
        values: Values::All,
        pairing: Pairing::Same,
    };
    match order_job(&order) {
        Err(ValuesError::Shapes(why)) => assert!(why.contains("64") && why.contains("32"), "{why}"),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("mismatched shapes were compared"),
    }
}
