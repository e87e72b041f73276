//! PyTorch pickle checkpoints, opened without running them (tests/fixtures/make_pickle_fixtures.py
//! writes torch's formats byte for byte): tensors and their values against numpy, every import
//! against picklescan's verdict, and hostile pickles that stop with a finding.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use std::collections::BTreeSet;

use common::*;
use serde_json::Value as Json;
use tensorscope::engine::model::Lost;
use tensorscope::engine::pickle::machine;

fn path(rel: &str) -> String {
    fixtures().join("pickle").join(rel).to_string_lossy().into_owned()
}

fn expected() -> Json {
    serde_json::from_str(&std::fs::read_to_string(path("expected.json")).unwrap()).unwrap()
}

fn inspect(file: &str) -> (i32, Json) {
    let (code, out, err) = run(&["check", &path(file), "--json"]);
    (code, serde_json::from_str(&out).unwrap_or_else(|e| panic!("{file}: {e}: {err}")))
}

const NUMPY_DTYPES: [(&str, &str); 4] =
    [("float32", "F32"), ("float16", "F16"), ("bfloat16", "BF16"), ("int64", "I64")];

/// A (4, 3) view with strides (1, 4) is column-major: its `.npy` says so and holds the values
/// as stored, which numpy reads back in the shape's order; an element range of it is refused.
fn transposed_exports_in_its_shapes_order(file: &str, name: &str, values: &[f64]) {
    let (header, stored) = exported_f32(file, name);
    assert!(header.contains("'fortran_order': True") && header.contains("(4, 3)"), "{header}");
    let (rows, cols) = (4, 3);
    for i in 0..rows {
        for j in 0..cols {
            assert_eq!(stored[i + j * rows], values[i * cols + j] as f32, "element ({i}, {j})");
        }
    }
    let (code, _, err) = run(&["hist", file, "--tensor", name, "--elements", "0:2", "--json"]);
    assert_eq!(code, 2, "an element range of a transposed view is not one span");
    assert!(err.contains("stored in another order"), "{err}");
}

#[test]
fn torch_zip_and_legacy_tensors_hold_numpys_values() {
    let want = expected();
    for file in ["torch-zip.pt", "legacy.pt"] {
        let (code, r) = inspect(file);
        assert_eq!(code, 0, "{file}: {:?}", r["findings"]);
        assert_eq!(r["format"], "pickle");
        let tensors = r["tensors"].as_array().unwrap();
        let names: Vec<&str> = tensors.iter().map(|t| t["name"].as_str().unwrap()).collect();
        let want_names: Vec<&str> = want[file].as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(names, want_names, "{file}: names flatten as the dicts nest");
        for t in tensors {
            let name = t["name"].as_str().unwrap();
            let w = &want[file][name];
            let np = w["dtype"].as_str().unwrap();
            let dtype = NUMPY_DTYPES.iter().find(|(n, _)| *n == np).unwrap().1;
            assert_eq!(t["dtype"], dtype, "{file} {name}");
            assert_eq!(t["shape"], w["shape"], "{file} {name}");
            let values: Vec<f64> = w["values"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
            let (code, out, err) = run(&["hist", &path(file), "--tensor", name, "--json"]);
            assert_eq!(code, 0, "{file} {name}: {err}");
            if name.ends_with("transposed") {
                transposed_exports_in_its_shapes_order(&path(file), name, &values);
            }
            let h: Json = serde_json::from_str(&out).unwrap();
            let min = values.iter().copied().fold(f64::INFINITY, f64::min);
            let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let mean = values.iter().sum::<f64>() / values.len() as f64;
            assert_eq!(h["count"], values.len() as u64, "{file} {name}");
            assert_eq!(h["min"].as_f64().unwrap(), min, "{file} {name}");
            assert_eq!(h["max"].as_f64().unwrap(), max, "{file} {name}");
            assert!((h["mean"].as_f64().unwrap() - mean).abs() <= 1e-6 * mean.abs().max(1.0), "{file} {name}");
        }
    }
    // A view at an offset into a shared storage reads from that offset.
    let (_, r) = inspect("torch-zip.pt");
    let find = |n: &str| r["tensors"].as_array().unwrap().iter().find(|t| t["name"] == n).unwrap().clone();
    let norm = find("state_dict.model.norm.weight");
    let transposed = find("state_dict.model.norm.transposed");
    assert_eq!(norm["offset"].as_u64().unwrap(), transposed["offset"].as_u64().unwrap() + 16);
    let codes: Vec<&str> = r["findings"].as_array().unwrap().iter().map(|f| f["code"].as_str().unwrap()).collect();
    assert!(codes.is_empty(), "a transposed view is read, not refused: {codes:?}");
    assert_eq!(transposed["strides"], serde_json::json!([1, 4]), "stored in another order, and said so");
    assert!(norm.get("strides").is_none(), "row-major views say nothing of strides");
}

#[test]
fn the_safety_verdict_agrees_with_picklescan() {
    let want = expected();
    for (file, verdict) in want["picklescan"].as_object().unwrap() {
        let (code, r) = inspect(file);
        let dangerous = import_names(&r, Some("dangerous"));
        let theirs: BTreeSet<String> =
            verdict["dangerous"].as_array().unwrap().iter().map(|g| g.as_str().unwrap().to_owned()).collect();
        assert_eq!(dangerous, theirs, "{file}");
        let all = import_names(&r, None);
        let their_all: BTreeSet<String> =
            verdict["globals"].as_array().unwrap().iter().map(|g| g.as_str().unwrap().to_owned()).collect();
        assert_eq!(all, their_all, "{file}: every import is listed");
        let infected = verdict["infected"].as_bool().unwrap();
        assert_eq!(code == 1, infected, "{file}: check fails exactly when picklescan finds it dangerous");
        let errors =
            r["findings"].as_array().unwrap().iter().filter(|f| f["code"] == "pickle.dangerous_import").count();
        assert_eq!(errors, theirs.len(), "{file}: one error per dangerous import");
    }
    // The hidden reduce sits among real tensors, which are still listed and readable.
    let (_, r) = inspect("evil-hidden.pt");
    assert_eq!(r["tensors"].as_array().unwrap().len(), 6);
    let f = r["findings"].as_array().unwrap().iter().find(|f| f["code"] == "pickle.dangerous_import").unwrap().clone();
    assert!(f["message"].as_str().unwrap().contains("commands.Popen"), "{f}");
}

#[test]
fn hostile_containers_and_truncations_end_in_findings() {
    let good = std::fs::read(path("torch-zip.pt")).unwrap();
    // Every truncation of the zip: no panic; a finding, and never a tensor read past the end.
    for cut in (0..good.len()).step_by(7) {
        let cp = open_one("x.pt", &good[..cut]);
        for t in &cp.tensors {
            if let Ok(e) = &t.data {
                assert!(e.range().end <= cut as u64);
            }
        }
        assert!(cut > good.len() - 22 || !cp.findings.is_empty() || cp.tensors.is_empty(), "cut {cut}");
    }
    let cp = open_one("x.pt", &good[..good.len() - 1]);
    assert!(codes(&cp).contains(&"pickle.bad_zip"), "{:?}", codes(&cp));
    // Storages the zip lacks: the tensors are listed without data.
    let mut renamed = good.clone();
    let at = renamed.windows(14).rposition(|w| w == b"archive/data/0").unwrap();
    renamed[at + 13] = b'9';
    let cp = open_one("x.pt", &renamed);
    assert!(codes(&cp).contains(&"pickle.missing_storage"));
    let embed = cp.tensors.iter().find(|t| t.name.ends_with("embed_tokens.weight")).unwrap();
    assert_eq!(embed.data, Err(Lost::NoStorage));
    // A byteorder entry that claims 1000 bytes is not read (it says "little" or "big"); the rest is.
    let mut long_order = good.clone();
    let name = b"archive/byteorder";
    let at = long_order.windows(name.len()).rposition(|w| w == name).unwrap() - 46; // its central entry
    long_order[at + 20..at + 24].copy_from_slice(&1000u32.to_le_bytes());
    let cp = open_one("x.pt", &long_order);
    let f = cp.findings.iter().find(|f| f.message.contains("byteorder is 1000 bytes")).expect("a finding");
    assert_eq!(f.severity, tensorscope::engine::findings::Severity::Warning);
    assert_eq!(cp.tensors.iter().filter(|t| t.data.is_ok()).count(), 7);
    // A legacy file cut inside its storages: the storages before the cut are still found.
    let legacy = std::fs::read(path("legacy.pt")).unwrap();
    let cp = open_one("x.pt", &legacy[..legacy.len() - 30]);
    assert!(codes(&cp).iter().any(|c| c.starts_with("pickle.")), "{:?}", codes(&cp));
    assert!(cp.tensors.iter().any(|t| t.data.is_ok()));
    // Raw hostile pickles, named as checkpoints.
    for (bytes, code) in [
        (&b"\x80\x02h\x07."[..], "pickle.stopped"),
        (b"\x80\x02]q\x00(K\x01K\x02", "pickle.stopped"),
        (b"\x80\x02\xff", "pickle.stopped"),
    ] {
        let cp = open_one("x.bin", bytes);
        assert!(codes(&cp).contains(&code), "{bytes:?}: {:?}", codes(&cp));
    }
}

#[test]
fn a_pickle_beside_safetensors_is_not_opened() {
    let st = std::fs::read(fixtures().join("st_all_numpy_dtypes.safetensors")).unwrap();
    let pt = std::fs::read(path("evil-reduce.pt")).unwrap();
    let cp = open_all(&[("model.safetensors", &st), ("pytorch_model.bin", &pt)]);
    assert_eq!(cp.format.name(), "safetensors");
    assert!(codes(&cp).contains(&"set.pickle_not_loaded"));
    assert!(!codes(&cp).contains(&"pickle.dangerous_import"));
}

#[test]
fn the_machine_never_hangs_on_floods() {
    // A memo flood of a million PUTs, and MARK/POP_MARK pairs: linear, bounded.
    let mut p = vec![0x80, 2, b']'];
    for i in 0..1_000_000u32 {
        p.push(b'r');
        p.extend_from_slice(&i.to_le_bytes());
    }
    p.extend(std::iter::repeat_n([b'(', b'1'], 1_000_000).flatten());
    p.push(b'.');
    let t = machine::run(&p, 0);
    assert!(t.stopped.is_none(), "{:?}", t.stopped);
    assert_eq!(t.nodes.len(), 1);
}

/// A torch zip whose storage lies past 4 GiB (a sparse file): its local header offset and the
/// central directory's are only in the ZIP64 records, as torch writes them for 13 GB checkpoints.
#[test]
fn a_storage_past_4_gib_is_found_through_zip64() {
    use std::io::{Seek, SeekFrom, Write};
    fn string(s: &str) -> Vec<u8> {
        let mut v = vec![b'X'];
        v.extend_from_slice(&(s.len() as u32).to_le_bytes());
        v.extend_from_slice(s.as_bytes());
        v
    }
    let mut pkl = b"\x80\x02}".to_vec();
    pkl.extend(string("w"));
    pkl.extend_from_slice(b"ctorch._utils\n_rebuild_tensor_v2\n((");
    pkl.extend(string("storage"));
    pkl.extend_from_slice(b"ctorch\nFloatStorage\n");
    pkl.extend(string("0"));
    pkl.extend(string("cpu"));
    pkl.extend_from_slice(b"K\x04tQK\x00K\x04\x85K\x01\x85\x89ccollections\nOrderedDict\n)RtRs.");
    let values = [1.5f32, -2.0, 3.25, 0.125];
    let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let local = |name: &str, len: usize| {
        let mut h = b"PK\x03\x04".to_vec();
        h.extend_from_slice(&[0; 10]);
        h.extend_from_slice(&[0; 4]); // crc, not checked
        h.extend_from_slice(&(len as u32).to_le_bytes());
        h.extend_from_slice(&(len as u32).to_le_bytes());
        h.extend_from_slice(&(name.len() as u16).to_le_bytes());
        h.extend_from_slice(&0u16.to_le_bytes());
        h.extend_from_slice(name.as_bytes());
        h
    };
    let central = |name: &str, len: usize, offset: u64| {
        let zip64 = offset >= u32::MAX as u64;
        let mut c = b"PK\x01\x02".to_vec();
        c.extend_from_slice(&[0; 12]);
        c.extend_from_slice(&[0; 4]);
        c.extend_from_slice(&(len as u32).to_le_bytes());
        c.extend_from_slice(&(len as u32).to_le_bytes());
        c.extend_from_slice(&(name.len() as u16).to_le_bytes());
        c.extend_from_slice(&(if zip64 { 12u16 } else { 0 }).to_le_bytes());
        c.extend_from_slice(&[0; 10]); // comment length, disk, attributes
        c.extend_from_slice(&(if zip64 { u32::MAX } else { offset as u32 }).to_le_bytes());
        c.extend_from_slice(name.as_bytes());
        if zip64 {
            c.extend_from_slice(&1u16.to_le_bytes());
            c.extend_from_slice(&8u16.to_le_bytes());
            c.extend_from_slice(&offset.to_le_bytes());
        }
        c
    };
    let far: u64 = 5 << 30;
    let mut head = local("archive/data.pkl", pkl.len());
    head.extend_from_slice(&pkl);
    let mut tail = local("archive/data/0", data.len());
    tail.extend_from_slice(&data);
    let dir_at = far + tail.len() as u64;
    let mut dir = central("archive/data.pkl", pkl.len(), 0);
    dir.extend(central("archive/data/0", data.len(), far));
    let z64_at = dir_at + dir.len() as u64;
    let mut end = b"PK\x06\x06".to_vec();
    end.extend_from_slice(&44u64.to_le_bytes());
    end.extend_from_slice(&[0; 12]);
    end.extend_from_slice(&2u64.to_le_bytes());
    end.extend_from_slice(&2u64.to_le_bytes());
    end.extend_from_slice(&(dir.len() as u64).to_le_bytes());
    end.extend_from_slice(&dir_at.to_le_bytes());
    end.extend_from_slice(b"PK\x06\x07\0\0\0\0");
    end.extend_from_slice(&z64_at.to_le_bytes());
    end.extend_from_slice(&1u32.to_le_bytes());
    end.extend_from_slice(b"PK\x05\x06\0\0\0\0\x02\0\x02\0");
    end.extend_from_slice(&(dir.len() as u32).to_le_bytes());
    end.extend_from_slice(&u32::MAX.to_le_bytes());
    end.extend_from_slice(&0u16.to_le_bytes());

    let file = std::env::temp_dir().join(format!("tensorscope-zip64-{}.pt", std::process::id()));
    let mut f = std::fs::File::create(&file).unwrap();
    f.write_all(&head).unwrap();
    f.seek(SeekFrom::Start(far)).unwrap();
    f.write_all(&tail).unwrap();
    f.write_all(&dir).unwrap();
    f.write_all(&end).unwrap();
    drop(f);
    let p = file.to_string_lossy().into_owned();
    let (code, out, err) = run(&["inspect", &p, "--json"]);
    assert_eq!(code, 0, "{err} {out}");
    let r: Json = serde_json::from_str(&out).unwrap();
    assert_eq!(r["tensors"][0]["name"], "w");
    assert_eq!(r["tensors"][0]["offset"], far + 30 + "archive/data/0".len() as u64);
    let (code, out, err) = run(&["hist", &p, "--tensor", "w", "--json"]);
    assert_eq!(code, 0, "{err}");
    let h: Json = serde_json::from_str(&out).unwrap();
    assert_eq!((h["min"].as_f64(), h["max"].as_f64(), h["count"].as_u64()), (Some(-2.0), Some(3.25), Some(4)));
    std::fs::remove_file(&file).unwrap();
}

/// Pickle text opcodes: `X` short unicode of `s`.
fn unicode(s: &[u8]) -> Vec<u8> {
    let mut v = vec![b'X'];
    v.extend_from_slice(&(s.len() as u32).to_le_bytes());
    v.extend_from_slice(s);
    v
}

#[test]
fn a_shape_that_holds_its_own_call_is_not_followed_forever() {
    // L = []; S = list(L); L.append(S); _rebuild_tensor_v2(storage, 0, S, S): the shape is a
    // call over a list holding that call (a cycle; following it overflowed the stack).
    let mut p = vec![0x80, 2, b']', b'q', 0];
    p.extend_from_slice(b"cbuiltins\nlist\n");
    p.extend_from_slice(&[b'h', 0, b'R', b'q', 1, b'a', b'0']);
    p.extend_from_slice(b"ctorch._utils\n_rebuild_tensor_v2\n");
    p.extend_from_slice(b"((");
    for s in [&b"storage"[..], b"FloatStorage", b"0", b"cpu"] {
        p.extend(unicode(s));
    }
    p.extend_from_slice(&[b'K', 1, b't', b'Q', b'K', 0, b'h', 1, b'h', 1, b't', b'R', b'.']);
    let t = machine::run(&p, 0);
    assert!(t.stopped.is_none(), "{:?}", t.stopped);
    assert!(tensorscope::engine::pickle::torch::tensors(&t).is_empty(), "no shape, no tensor");
}

#[test]
fn long_names_reused_through_the_memo_are_refused_or_cut_not_copied_each_time() {
    // A 1 MiB string memoised once, then named by 4,000 STACK_GLOBALs (8 GB of copies before).
    let big = vec![b'a'; 1 << 20];
    let mut p = vec![0x80, 4];
    p.extend(unicode(&big));
    p.extend_from_slice(&[b'q', 0]);
    for _ in 0..4000 {
        p.extend_from_slice(&[b'h', 0, b'h', 0, 0x93, b'0']);
    }
    p.push(b'.');
    let t = machine::run(&p, 0);
    let stop = t.stopped.as_ref().expect("a global's name that long stops the machine");
    assert!(stop.why.contains("over the limit of 1024"), "{stop:?}");
    assert!(t.globals().next().is_none(), "no global kept with such a name");

    // A dict of 500k items whose keys are all that string, the last a tensor: its name is the
    // key cut short (each item's name was the whole key, copied: half a terabyte).
    let mut p = vec![0x80, 4];
    p.extend(unicode(&big));
    p.extend_from_slice(&[b'q', 0, b'}', b'(']);
    for _ in 0..500_000 {
        p.extend_from_slice(&[b'h', 0, b'N']);
    }
    p.extend_from_slice(&[b'h', 0]);
    p.extend_from_slice(b"ctorch._utils\n_rebuild_tensor_v2\n((");
    for s in [&b"storage"[..], b"FloatStorage", b"0", b"cpu"] {
        p.extend(unicode(s));
    }
    p.extend_from_slice(b"K\x01tQK\x00(K\x01t(K\x01ttRu.");
    let t = machine::run(&p, 0);
    assert!(t.stopped.is_none(), "{:?}", t.stopped);
    let tensors = tensorscope::engine::pickle::torch::tensors(&t);
    assert_eq!(tensors.len(), 1);
    assert!(tensors[0].name.len() <= 256 && tensors[0].name.bytes().all(|b| b == b'a'), "{}", tensors[0].name.len());
    assert_eq!(tensors[0].shape, [1]);
}

/// A zip is recognised by its bytes: torch's archive whatever its name (`.jit`, none), and a
/// zip without a `data.pkl` (numpy's `.npz`, a dataset) named otherwise is another file.
#[test]
fn a_zip_is_a_torch_archive_by_its_bytes_whatever_its_name() {
    use tensorscope::engine::open::Parsed;
    let good = std::fs::read(path("torch-zip.pt")).unwrap();
    for name in ["weights", "model.jit", "exported.ckpt"] {
        assert!(matches!(parse(name, &good, 1 << 20), Parsed::Pickle(p) if p.tensors.len() == 7), "{name}");
    }
    let mut other = good.clone();
    let name = b"archive/data.pkl";
    let at: Vec<usize> = (0..other.len() - name.len()).filter(|&i| &other[i..i + name.len()] == name).collect();
    assert_eq!(at.len(), 2, "the local and the central entry");
    for i in at {
        other[i + 11] = b'x'; // archive/datx.pkl
    }
    assert!(matches!(parse("arrays.npz", &other, 1 << 20), Parsed::Other));
    match parse("x.pt", &other, 1 << 20) {
        Parsed::Pickle(p) => assert!(p.findings.iter().any(|f| f.code == "pickle.no_data_pkl")),
        _ => panic!("named as a checkpoint, it is judged as one"),
    }
}

/// numpy arrays pickled inline (Python's own pickle and numpy wrote the fixtures): listed with
/// their dtype and shape; read in place when their bytes are raw (protocol 3+), Fortran order as
/// a transposed view; said not read when protocol 2 holds them as latin-1 text, or big-endian.
#[test]
fn numpy_arrays_pickled_inline_are_tensors() {
    let want: Json = serde_json::from_str(&std::fs::read_to_string(path("numpy/expected.json")).unwrap()).unwrap();
    let dtype = |d: &str| match d {
        "<f4" | ">f4" => "F32",
        "<f2" => "F16",
        "<i8" => "I64",
        "|b1" => "BOOL",
        _ => panic!("{d}"),
    };
    let (_, r) = inspect("numpy/arrays-p4.pkl");
    let names: Vec<&str> = r["tensors"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["weights.w", "weights.b", "fortran", "mask", "big"]);
    for t in r["tensors"].as_array().unwrap() {
        let name = t["name"].as_str().unwrap();
        let w = &want[name];
        assert_eq!(t["dtype"], dtype(w["dtype"].as_str().unwrap()), "{name}");
        assert_eq!(t["shape"], w["shape"], "{name}");
        assert_eq!(t.get("strides").is_some(), w["fortran"].as_bool().unwrap(), "{name}");
        let (code, out, err) = run(&["hist", &path("numpy/arrays-p4.pkl"), "--tensor", name, "--json"]);
        if name == "big" {
            assert_eq!(code, 2, "a big-endian array is not decoded");
            assert!(err.contains("big-endian"), "{err}");
            continue;
        }
        assert_eq!(code, 0, "{name}: {err}");
        let h: Json = serde_json::from_str(&out).unwrap();
        let values: Vec<f64> = w["values"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
        assert_eq!(h["count"], values.len() as u64, "{name}");
        assert_eq!(h["min"].as_f64().unwrap(), values.iter().copied().fold(f64::INFINITY, f64::min), "{name}");
        assert_eq!(h["max"].as_f64().unwrap(), values.iter().copied().fold(f64::NEG_INFINITY, f64::max), "{name}");
    }
    let (_, r) = inspect("numpy/arrays-p2.pkl");
    assert_eq!(r["tensors"].as_array().unwrap().len(), 5, "protocol 2 lists them too");
    let (code, _, err) = run(&["hist", &path("numpy/arrays-p2.pkl"), "--tensor", "weights.w", "--json"]);
    assert_eq!(code, 2);
    assert!(err.contains("latin-1 text"), "{err}");
    assert!(r["weights_only"]["rejected"]
        .as_array()
        .unwrap()
        .iter()
        .any(|g| g == "numpy._core.multiarray._reconstruct"));
}

/// torch.load reads only torch.save's formats: a plain pickle stops at its magic number, with
/// weights_only or without.
#[test]
fn a_plain_pickle_is_not_one_torch_load_reads() {
    let (_, r) = inspect("plain.pkl");
    assert_eq!(r["weights_only"]["loads"], false);
    assert!(r["weights_only"]["reason"].as_str().unwrap().contains("magic number"), "{}", r["weights_only"]);
    let (_, r) = inspect("legacy.pt");
    assert_eq!(r["weights_only"], serde_json::json!({"loads": true, "rejected": [], "reason": null}));
}
