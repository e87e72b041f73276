//! A folder of several checkpoints: `repo` lists each quant variant with its size, bits per
//! weight, memory and findings, the companions and what they fit, and the other files;
//! `inspect` and `check` refuse such a folder, naming the models, instead of assembling one
//! broken set.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::Value as Json;

/// A folder of its own under the system's temp directory (tests run at once).
fn temp_dir(name: &str) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("tensorscope-repo-{name}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn kinds(name: &str) -> PathBuf {
    fixtures().join("kinds").join(name)
}

/// A gemma3 model 64 wide (what `kinds/mmproj-fit.gguf` was made for): its token embedding
/// of 256 × 64 values of GGML type `ty`, `general.file_type` `ftype`; with `split`, part `no`
/// of `count` (holding the embedding in part 0 and the norm in part 1).
fn model(ty: u32, ftype: u32, split: Option<(u16, u16)>) -> Vec<u8> {
    let (block_elems, block_bytes) = match ty {
        1 => (1, 2),
        2 => (32, 18),
        8 => (32, 34),
        _ => unreachable!(),
    };
    let embd = 256 * 64 / block_elems * block_bytes;
    let tensors: Vec<(&str, Vec<u64>, u32, usize)> = match split {
        Some((1, _)) => vec![("output_norm.weight", vec![64], 0, 256)],
        Some(_) => vec![("token_embd.weight", vec![64, 256], ty, embd)],
        None => vec![("token_embd.weight", vec![64, 256], ty, embd), ("output_norm.weight", vec![64], 0, 256)],
    };
    let kvs = 3 + if split.is_some() { 3 } else { 0 };
    let mut g = Gguf::header(3, tensors.len() as u64, kvs);
    g.kv_str("general.architecture", "gemma3").kv_u32("gemma3.embedding_length", 64);
    g.kv_u32("general.file_type", ftype);
    if let Some((no, count)) = split {
        g.str(b"split.no").u32(2).raw(&no.to_le_bytes());
        g.str(b"split.count").u32(2).raw(&count.to_le_bytes());
        g.str(b"split.tensors.count").u32(5).raw(&2i32.to_le_bytes());
    }
    let mut at = 0;
    for (name, ne, t, size) in &tensors {
        g.tensor(name, ne, *t, at as u64);
        at += size.next_multiple_of(32);
    }
    g.pad(32).data(at);
    g.build()
}

fn write(dir: &Path, name: &str, bytes: &[u8]) {
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

fn cli(args: &[&str]) -> (i32, String, String) {
    let out = common::cli().args(args).output().unwrap();
    let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
    (out.status.code().unwrap_or(-1), text(out.stdout), text(out.stderr))
}

/// A downloaded GGUF repository: three quants (F16 in two parts), a projector that fits and one
/// that does not, a README.
fn gguf_repo() -> PathBuf {
    let dir = temp_dir("gguf");
    write(&dir, "tiny-Q4_0.gguf", &model(2, 2, None));
    write(&dir, "tiny-Q8_0.gguf", &model(8, 7, None));
    write(&dir, "tiny-F16-00001-of-00002.gguf", &model(1, 1, Some((0, 2))));
    write(&dir, "tiny-F16-00002-of-00002.gguf", &model(1, 1, Some((1, 2))));
    write(&dir, "mmproj-tiny-F16.gguf", &std::fs::read(kinds("mmproj-fit.gguf")).unwrap());
    write(&dir, "mmproj-other.gguf", &std::fs::read(kinds("mmproj-wrong.gguf")).unwrap());
    write(&dir, "README.md", b"# tiny\n");
    dir
}

#[test]
fn a_gguf_repository_lists_each_quant_with_what_it_needs_and_what_fits_it() {
    let dir = gguf_repo();
    let (code, out, err) = cli(&["repo", dir.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{err}");
    let r: Json = serde_json::from_str(&out).unwrap();
    assert_eq!(r["repo"], dir.to_str().unwrap());
    assert_eq!(r["revision"], Json::Null);
    let variants = r["variants"].as_array().unwrap();
    let names: Vec<&str> = variants.iter().map(|v| v["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Q4_0", "Q8_0", "F16"], "smallest first");
    let bytes: Vec<u64> = variants.iter().map(|v| v["bytes"].as_u64().unwrap()).collect();
    assert!(bytes.windows(2).all(|w| w[0] < w[1]), "{bytes:?}");
    let f16 = &variants[2];
    assert_eq!(f16["files"], serde_json::json!(["tiny-F16-00001-of-00002.gguf", "tiny-F16-00002-of-00002.gguf"]));
    assert_eq!(
        f16["bytes"].as_u64().unwrap(),
        ["tiny-F16-00001-of-00002.gguf", "tiny-F16-00002-of-00002.gguf"]
            .iter()
            .map(|f| std::fs::metadata(dir.join(f)).unwrap().len())
            .sum::<u64>()
    );
    for (v, (bpw, ftype)) in variants.iter().zip([(4.5, "MOSTLY_Q4_0"), (8.5, "MOSTLY_Q8_0"), (16.0, "MOSTLY_F16")]) {
        assert_eq!(v["format"], "gguf");
        assert_eq!(v["kind"], "model");
        assert_eq!(v["params"].as_u64(), Some(256 * 64 + 64));
        let want = (256.0 * 64.0 * bpw + 64.0 * 32.0) / (256.0 * 64.0 + 64.0);
        assert!(
            (v["bits_per_weight"].as_f64().unwrap() - want).abs() < 1e-9,
            "{}: {}",
            v["name"],
            v["bits_per_weight"]
        );
        assert_eq!(v["file_type"], ftype);
        assert_eq!(v["estimate"]["architecture"], "gemma3");
        assert_eq!(v["findings"]["errors"], 0, "{}: {err}", v["name"]);
    }
    let companions = r["companions"].as_array().unwrap();
    let by_name =
        |n: &str| companions.iter().find(|c| c["files"][0] == n).unwrap_or_else(|| panic!("{n}: {companions:?}"));
    let fit = by_name("mmproj-tiny-F16.gguf");
    assert_eq!(fit["kind"], "projector");
    assert_eq!(fit["fits"], serde_json::json!(["Q4_0", "Q8_0", "F16"]));
    assert_eq!(by_name("mmproj-other.gguf")["fits"], serde_json::json!([]));
    assert_eq!(r["other_files"], serde_json::json!(["README.md"]));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn inspect_and_check_refuse_a_folder_of_several_models_and_name_them() {
    let dir = gguf_repo();
    for command in ["inspect", "check"] {
        let (code, out, err) = cli(&[command, dir.to_str().unwrap()]);
        assert_eq!(code, 2, "{command}: {out}");
        for part in ["3 separate models", "Q4_0 (tiny-Q4_0.gguf)", "Q8_0 (tiny-Q8_0.gguf)", "tensorscope repo"] {
            assert!(err.contains(part), "{command}: {part} in {err}");
        }
        assert!(err.contains("F16 (tiny-F16-00001-of-00002.gguf, tiny-F16-00002-of-00002.gguf)"), "{err}");
    }
    // One model with its projector is still one checkpoint: the split F16 and the mmproj that fits it.
    let parts = ["tiny-F16-00001-of-00002.gguf", "tiny-F16-00002-of-00002.gguf", "mmproj-tiny-F16.gguf"];
    let paths: Vec<String> = parts.iter().map(|p| dir.join(p).to_string_lossy().into_owned()).collect();
    let mut args = vec!["inspect", "--json"];
    args.extend(paths.iter().map(String::as_str));
    let (code, out, err) = cli(&args);
    assert_eq!(code, 0, "{err}");
    let r: Json = serde_json::from_str(&out).unwrap();
    assert_eq!(r["kind"], "model");
    assert_eq!(r["files"].as_array().unwrap().len(), 3);
    assert!(r["estimate"]["projector_bytes"].as_u64().unwrap() > 0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_safetensors_repository_is_one_set_with_its_configs_and_the_rest_is_listed() {
    let dir = temp_dir("st");
    let shard = |names: &[&str]| {
        let entries: Vec<String> = names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                format!(r#""{n}":{{"dtype":"F16","shape":[8,8],"data_offsets":[{},{}]}}"#, i * 128, i * 128 + 128)
            })
            .collect();
        safetensors(&format!("{{{}}}", entries.join(",")), 128 * names.len())
    };
    write(&dir, "model-00001-of-00002.safetensors", &shard(&["model.embed_tokens.weight", "model.norm.weight"]));
    write(&dir, "model-00002-of-00002.safetensors", &shard(&["lm_head.weight"]));
    let index = r#"{"metadata":{"total_size":384},"weight_map":{"model.embed_tokens.weight":"model-00001-of-00002.safetensors","model.norm.weight":"model-00001-of-00002.safetensors","lm_head.weight":"model-00002-of-00002.safetensors"}}"#;
    write(&dir, "model.safetensors.index.json", index.as_bytes());
    write(&dir, "config.json", br#"{"architectures":["LlamaForCausalLM"],"hidden_size":8}"#);
    write(&dir, "tokenizer.json", br#"{"model":{"type":"BPE"}}"#);
    write(&dir, "onnx/model.onnx", b"\x08\x07onnx bytes");
    write(&dir, ".cache/huggingface/download/model.lock", b"");
    let (code, out, err) = cli(&["repo", dir.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{err}");
    let r: Json = serde_json::from_str(&out).unwrap();
    let variants = r["variants"].as_array().unwrap();
    assert_eq!(variants.len(), 1, "{variants:?}");
    let v = &variants[0];
    assert_eq!(v["name"], "model");
    assert_eq!(v["format"], "safetensors");
    assert_eq!(
        v["files"],
        serde_json::json!([
            "config.json",
            "model-00001-of-00002.safetensors",
            "model-00002-of-00002.safetensors",
            "model.safetensors.index.json"
        ])
    );
    assert_eq!(v["params"], 192);
    assert_eq!(v["bits_per_weight"], 16.0);
    assert_eq!(v["file_type"], Json::Null);
    assert_eq!(v["findings"]["errors"], 0);
    assert_eq!(r["companions"], serde_json::json!([]));
    assert_eq!(
        r["other_files"],
        serde_json::json!(["onnx/model.onnx", "tokenizer.json"]),
        "hidden folders are skipped"
    );
    // The same folder opens as one checkpoint, also with the weights saved twice, as many
    // repositories ship them (a pickle beside the safetensors): the safetensors are read.
    let (code, _, err) = cli(&["inspect", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    std::fs::copy(fixtures().join("pickle").join("torch-zip.pt"), dir.join("pytorch_model.bin")).unwrap();
    let (code, out, err) = cli(&["inspect", dir.to_str().unwrap(), "--json"]);
    assert!(code < 2, "{err}");
    let r: Json = serde_json::from_str(&out).unwrap();
    assert_eq!(r["format"], "safetensors");
    let (code, out, err) = cli(&["repo", dir.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{err}");
    let r: Json = serde_json::from_str(&out).unwrap();
    let formats: Vec<&str> = r["variants"].as_array().unwrap().iter().map(|v| v["format"].as_str().unwrap()).collect();
    assert_eq!(formats.len(), 2, "both saves listed: {formats:?}");
    assert!(formats.contains(&"pickle") && formats.contains(&"safetensors"), "{formats:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn repo_needs_a_folder_and_prints_a_table_without_json() {
    let dir = gguf_repo();
    let (code, out, err) = cli(&["repo", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("variant"), "{out}");
    assert!(lines[1].starts_with("Q4_0") && lines[3].starts_with("F16"), "{out}");
    assert!(out.contains("projector mmproj-tiny-F16") || out.contains("projector "), "{out}");
    assert!(out.contains("other files: README.md"), "{out}");
    let (code, _, err) = cli(&["repo", dir.join("README.md").to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("not a folder"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A BERT encoder 64 wide of 2 layers (llama.cpp keeps no KV cache for it), its token
/// embedding of 256 × 64 values of GGML type `ty` (F16 or Q8_0).
fn encoder(ty: u32) -> Vec<u8> {
    let embd: u64 = if ty == 1 { 256 * 64 * 2 } else { 256 * 64 / 32 * 34 };
    let mut g = Gguf::header(3, 1, 5);
    g.kv_str("general.architecture", "bert").kv_u32("bert.block_count", 2);
    g.kv_u32("bert.embedding_length", 64).kv_u32("bert.attention.head_count", 4);
    g.kv_u32("bert.context_length", 512);
    g.tensor("token_embd.weight", &[64, 256], ty, 0);
    g.pad(32).data(embd as usize);
    g.build()
}

#[test]
fn a_model_that_keeps_no_cache_needs_its_weights_alone_in_the_table() {
    let dir = temp_dir("encoders");
    write(&dir, "enc-Q8_0.gguf", &encoder(8));
    write(&dir, "enc-F16.gguf", &encoder(1));
    let (code, out, err) = cli(&["repo", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    for (line, weights) in out.lines().skip(1).zip([256 * 64 / 32 * 34, 256 * 64 * 2]) {
        let memory = tensorscope::engine::view::human_bytes(weights);
        assert!(line.contains(&format!(" {memory} ")) && !line.contains('@'), "{memory}: {out}");
    }
    let (_, json, _) = cli(&["repo", dir.to_str().unwrap(), "--json"]);
    let r: Json = serde_json::from_str(&json).unwrap();
    for v in r["variants"].as_array().unwrap() {
        assert_eq!((v["estimate"]["layers"].as_u64(), v["estimate"]["kv_layers"].as_u64()), (Some(2), Some(0)));
        assert_eq!(v["estimate"]["kv_cache"], serde_json::json!([]));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A local server that answers like the Hub: the revision API (the commit in `sha` and
/// `X-Repo-Commit`), a tree listing in pages joined by `Link: <…>; rel="next"`, `resolve`
/// redirecting to a file server that honours `Range` (206, `Content-Range`, an ETag).
struct Hub {
    url: String,
    /// Bytes of files served, and requests answered.
    served: std::sync::Arc<std::sync::atomic::AtomicU64>,
    requests: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

const SHA: &str = "0123456789abcdef0123456789abcdef01234567";

fn hub(root: PathBuf) -> Hub {
    use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
    use std::sync::atomic::Ordering;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let served = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let requests = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let (base, s, r) = (url.clone(), served.clone(), requests.clone());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let (root, base, served, requests) = (root.clone(), base.clone(), s.clone(), r.clone());
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                let target = line.split(' ').nth(1).unwrap_or("").to_owned();
                let mut range = None;
                loop {
                    let mut h = String::new();
                    if reader.read_line(&mut h).unwrap() == 0 || h == "\r\n" {
                        break;
                    }
                    if let Some(v) = h.to_ascii_lowercase().strip_prefix("range: bytes=") {
                        let (a, b) = v.trim().split_once('-').unwrap();
                        range = Some((a.parse::<u64>().unwrap(), b.parse::<u64>().unwrap()));
                    }
                }
                requests.fetch_add(1, Ordering::Relaxed);
                let mut files: Vec<String> = walk_files(&root);
                files.sort();
                let respond =
                    |stream: &mut std::net::TcpStream, status: &str, headers: &[(&str, String)], body: &[u8]| {
                        let mut head =
                            format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n", body.len());
                        for (k, v) in headers {
                            head.push_str(&format!("{k}: {v}\r\n"));
                        }
                        head.push_str("\r\n");
                        let _ = stream.write_all(head.as_bytes());
                        let _ = stream.write_all(body);
                    };
                let tree = format!("/api/models/o/n/tree/{SHA}?recursive=true");
                if target == "/api/models/o/n/revision/main" {
                    let body = format!(r#"{{"id":"o/n","sha":"{SHA}"}}"#);
                    respond(&mut stream, "200 OK", &[("X-Repo-Commit", SHA.into())], body.as_bytes());
                } else if target == tree || target == format!("{tree}&cursor=2") {
                    let half = files.len() / 2;
                    let page = if target == tree { &files[..half] } else { &files[half..] };
                    let mut items: Vec<String> = page
                        .iter()
                        .map(|f| {
                            format!(
                                r#"{{"type":"file","path":"{f}","size":{}}}"#,
                                std::fs::metadata(root.join(f)).unwrap().len()
                            )
                        })
                        .collect();
                    items.push(r#"{"type":"directory","path":"sub"}"#.into());
                    let next = (target == tree).then(|| ("Link", format!(r#"<{base}{tree}&cursor=2>; rel="next""#)));
                    respond(
                        &mut stream,
                        "200 OK",
                        &next.into_iter().collect::<Vec<_>>(),
                        format!("[{}]", items.join(",")).as_bytes(),
                    );
                } else if let Some(path) = target.strip_prefix(&format!("/o/n/resolve/{SHA}/")) {
                    let found = files.iter().any(|f| f == path);
                    let headers = [("Location", format!("{base}/cdn/{path}")), ("X-Repo-Commit", SHA.into())];
                    if found {
                        respond(&mut stream, "302 Found", &headers, b"");
                    } else {
                        respond(&mut stream, "404 Not Found", &[], b"");
                    }
                } else if target.starts_with("/cdn/") && target.contains("broken") {
                    // A file the storage cannot serve.
                    respond(&mut stream, "500 Internal Server Error", &[], b"storage is down");
                } else if let (Some(path), Some((a, b))) = (target.strip_prefix("/cdn/"), range) {
                    let mut f = std::fs::File::open(root.join(path)).unwrap();
                    let len = f.metadata().unwrap().len();
                    let b = b.min(len - 1);
                    let mut body = vec![0; (b - a + 1) as usize];
                    f.seek(SeekFrom::Start(a)).unwrap();
                    f.read_exact(&mut body).unwrap();
                    served.fetch_add(body.len() as u64, Ordering::Relaxed);
                    let headers =
                        [("Content-Range", format!("bytes {a}-{b}/{len}")), ("ETag", format!("\"{path}-{len}\""))];
                    respond(&mut stream, "206 Partial Content", &headers, &body);
                } else {
                    respond(&mut stream, "404 Not Found", &[], b"");
                }
            });
        }
    });
    Hub { url, served, requests }
}

/// Every file under `root`, relative, with `/`.
fn walk_files(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(root).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if p.is_dir() {
            out.extend(walk_files(&p).into_iter().map(|f| format!("{name}/{f}")));
        } else {
            out.push(name);
        }
    }
    out
}

fn cli_env(args: &[&str], endpoint: &str) -> (i32, String, String) {
    let out = common::cli().env("HF_ENDPOINT", endpoint).args(args).output().unwrap();
    let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
    (out.status.code().unwrap_or(-1), text(out.stdout), text(out.stderr))
}

#[test]
fn a_hub_repository_is_read_by_its_headers_alone_at_the_commit_the_server_names() {
    let dir = gguf_repo();
    // A big variant (4 GiB of tensor data, sparse on disk): only its header may be read.
    let mut big = model(1, 1, None);
    let at = big.len() as u64;
    write(&dir, "sub/tiny-BF16.gguf", &big);
    let f = std::fs::OpenOptions::new().write(true).open(dir.join("sub/tiny-BF16.gguf")).unwrap();
    f.set_len(at + (4 << 30)).unwrap();
    big.clear();
    let h = hub(dir.clone());
    for source in ["hf://o/n".to_owned(), format!("{}/o/n", h.url), format!("{}/o/n/tree/main", h.url)] {
        let before = h.served.load(std::sync::atomic::Ordering::Relaxed);
        let (code, out, err) = cli_env(&["repo", &source, "--json"], &h.url);
        assert_eq!(code, 0, "{source}: {err}");
        let r: Json = serde_json::from_str(&out).unwrap();
        assert_eq!(r["repo"], "o/n");
        assert_eq!(r["revision"], SHA, "pinned to the commit the server names");
        let names: Vec<&str> = r["variants"].as_array().unwrap().iter().map(|v| v["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["Q4_0", "Q8_0", "F16", "BF16"], "both pages listed; the big one last");
        assert_eq!(r["variants"][3]["files"], serde_json::json!(["sub/tiny-BF16.gguf"]));
        assert!(r["variants"][3]["bytes"].as_u64().unwrap() > 4 << 30);
        let fit = r["companions"].as_array().unwrap().iter().find(|c| c["files"][0] == "mmproj-tiny-F16.gguf").unwrap();
        assert_eq!(fit["fits"], serde_json::json!(["Q4_0", "Q8_0", "F16", "BF16"]));
        assert_eq!(r["other_files"], serde_json::json!(["README.md"]));
        let read = h.served.load(std::sync::atomic::Ordering::Relaxed) - before;
        assert!(read < 4 << 20, "{source}: {read} bytes of files read for headers");
    }
    let (code, out, err) = cli_env(&["repo", "hf://o/n"], &h.url);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("over the network in"), "{out}");
    eprintln!("{}", out.lines().last().unwrap_or_default());
    assert!(h.requests.load(std::sync::atomic::Ordering::Relaxed) > 0);
    // A revision the server does not know, and an address that is not a repository's.
    let (code, _, err) = cli_env(&["repo", "hf://o/n@nope"], &h.url);
    assert_eq!(code, 2);
    assert!(err.contains("no such repository or revision"), "{err}");
    let (code, _, err) = cli_env(&["repo", &format!("{}/o/n/resolve/main/README.md", h.url)], &h.url);
    assert_eq!(code, 2);
    assert!(err.contains("not a model repository's address"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_file_the_hub_cannot_serve_is_listed_and_said_and_the_rest_is_read() {
    let dir = gguf_repo();
    write(&dir, "broken-Q5_0.gguf", &model(8, 8, None));
    let h = hub(dir.clone());
    let (code, out, err) = cli_env(&["repo", "hf://o/n", "--json"], &h.url);
    assert_eq!(code, 1, "{err}");
    let r: Json = serde_json::from_str(&out).unwrap();
    let names: Vec<&str> = r["variants"].as_array().unwrap().iter().map(|v| v["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Q4_0", "Q8_0", "F16"], "every readable variant");
    assert_eq!(r["other_files"], serde_json::json!(["README.md", "broken-Q5_0.gguf"]));
    assert!(err.contains("broken-Q5_0.gguf could not be read") && err.contains("500"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A safetensors model whose attention projections are `q` (out, in) and `v` (out, in), two layers.
fn attention_model(q: [u64; 2], v: [u64; 2]) -> Vec<u8> {
    let mut entries = Vec::new();
    let mut at = 0u64;
    for layer in 0..2 {
        for (name, [o, i]) in [("q_proj", q), ("v_proj", v)] {
            let n = o * i * 2;
            entries.push(format!(
                r#""model.layers.{layer}.self_attn.{name}.weight":{{"dtype":"F16","shape":[{o},{i}],"data_offsets":[{at},{}]}}"#,
                at + n
            ));
            at += n;
        }
    }
    safetensors(&format!("{{{}}}", entries.join(",")), at as usize)
}

#[test]
fn adapters_fit_the_variants_whose_modules_they_match() {
    let dir = temp_dir("adapters");
    // PEFT's adapter (peft wrote it): q_proj 64 → 64 and v_proj 64 → 32 on two layers.
    for f in ["adapter_model.safetensors", "adapter_config.json"] {
        write(&dir, &format!("lora/{f}"), &std::fs::read(kinds("peft").join(f)).unwrap());
    }
    write(&dir, "right/model.safetensors", &attention_model([64, 64], [32, 64]));
    write(&dir, "wrong/model.safetensors", &attention_model([64, 64], [64, 64]));
    // llama.cpp's LoRA (convert_lora_to_gguf wrote it) for the gemma3 model, beside a llama model.
    write(&dir, "gguf/tiny-Q8_0.gguf", &std::fs::read(kinds("model.gguf")).unwrap());
    write(&dir, "gguf/other-Q4_K_M.gguf", &std::fs::read(fixtures().join("gguf_v3_le.gguf")).unwrap());
    write(&dir, "gguf/lora.gguf", &std::fs::read(kinds("lora.gguf")).unwrap());
    let (code, out, err) = cli(&["repo", dir.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{err}");
    let r: Json = serde_json::from_str(&out).unwrap();
    let companion = |file: &str| {
        r["companions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["files"].as_array().unwrap().iter().any(|f| f == file))
            .cloned()
    };
    let peft = companion("lora/adapter_model.safetensors").expect("the PEFT adapter is a companion");
    assert_eq!(peft["kind"], "adapter");
    assert_eq!(peft["files"], serde_json::json!(["lora/adapter_config.json", "lora/adapter_model.safetensors"]));
    assert_eq!(peft["fits"], serde_json::json!(["right/model"]));
    assert_eq!(companion("gguf/lora.gguf").unwrap()["fits"], serde_json::json!(["Q8_0"]));
    // The first difference is named.
    let open = |p: &str| tensorscope::cli::open_paths(&[dir.join(p)]).unwrap().0;
    let (wrong, lora) = (open("wrong"), open("lora"));
    let a = tensorscope::engine::adapter::adapter(&lora).unwrap();
    let why = tensorscope::engine::adapter::check_fit(&wrong, &lora, &a).unwrap().unwrap_err();
    assert!(why.contains("model.layers.0.self_attn.v_proj.weight") && why.contains("[64, 64]"), "{why}");
    let llama = open("gguf/other-Q4_K_M.gguf");
    let gguf_lora = open("gguf/lora.gguf");
    let why = tensorscope::engine::adapter::check_fit(
        &llama,
        &gguf_lora,
        &tensorscope::engine::adapter::adapter(&gguf_lora).unwrap(),
    )
    .unwrap()
    .unwrap_err();
    assert!(why.contains("gemma3") && why.contains("llama"), "{why}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn renamed_parts_of_a_split_set_are_still_one_model() {
    let dir = temp_dir("renamed");
    write(&dir, "f16-part-a.gguf", &model(1, 1, Some((0, 2))));
    write(&dir, "f16-part-b.gguf", &model(1, 1, Some((1, 2))));
    let (code, out, err) = cli(&["inspect", dir.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{err}");
    let r: Json = serde_json::from_str(&out).unwrap();
    assert_eq!(r["files"].as_array().unwrap().len(), 2);
    let (code, out, err) = cli(&["repo", dir.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{err}");
    let r: Json = serde_json::from_str(&out).unwrap();
    assert_eq!(r["variants"].as_array().unwrap().len(), 1, "{r}");
    assert_eq!(r["variants"][0]["files"], serde_json::json!(["f16-part-a.gguf", "f16-part-b.gguf"]));
    assert_eq!(r["variants"][0]["name"], "f16", "named as its file name says");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A llama model `width` wide over a vocabulary of `vocab` tokens: its tokenizer (model `llama`,
/// pre-tokenizer `pre`, BOS 1, EOS `eos`) and a token embedding of F16, so its parameters are
/// `width · vocab` (and a norm of `width`).
fn lm(width: u64, vocab: &[String], pre: &str, eos: u32) -> Vec<u8> {
    let n = vocab.len() as u64;
    let embd = (width * n * 2) as usize;
    let mut g = Gguf::header(3, 2, 7);
    g.kv_str("general.architecture", "llama").kv_u32("llama.embedding_length", width as u32);
    g.kv_str("tokenizer.ggml.model", "llama").kv_str("tokenizer.ggml.pre", pre);
    g.kv_u32("tokenizer.ggml.bos_token_id", 1).kv_u32("tokenizer.ggml.eos_token_id", eos);
    g.str(b"tokenizer.ggml.tokens").u32(9).u32(8).u64(n);
    for t in vocab {
        g.str(t.as_bytes());
    }
    g.tensor("token_embd.weight", &[width, n], 1, 0);
    g.tensor("output_norm.weight", &[width], 0, embd.next_multiple_of(32) as u64);
    g.pad(32).data(embd.next_multiple_of(32) + (width as usize) * 4);
    g.build()
}

/// 200 token texts: the headers keep the first 64 and the last 64.
fn vocab() -> Vec<String> {
    (0..200).map(|i| format!("tok{i}")).collect()
}

#[test]
fn a_small_model_with_the_same_tokenizer_is_a_draft_for_the_larger_ones() {
    let dir = temp_dir("drafts");
    let big = lm(64, &vocab(), "llama-bpe", 2);
    write(&dir, "big-Q8_0.gguf", &big);
    write(&dir, "big-Q4_0.gguf", &big);
    // A sixteenth of the parameters and the same tokenizer: a draft.
    write(&dir, "small-F16.gguf", &lm(4, &vocab(), "llama-bpe", 2));
    // Named a draft, but one text near the end of its vocabulary differs (read from the tail
    // the header keeps), and another whose end-of-sequence token differs.
    let mut late = vocab();
    late[190] = "other".into();
    write(&dir, "late-draft-F16.gguf", &lm(4, &late, "llama-bpe", 2));
    write(&dir, "eos-draft-BF16.gguf", &lm(4, &vocab(), "llama-bpe", 3));
    write(&dir, "pre-draft-Q6_K.gguf", &lm(4, &vocab(), "qwen2", 2));
    // Half the parameters and the same tokenizer: another model to choose, not a draft.
    write(&dir, "half-Q2_K.gguf", &lm(32, &vocab(), "llama-bpe", 2));
    let (code, out, err) = cli(&["repo", dir.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{err}");
    let r: Json = serde_json::from_str(&out).unwrap();
    let names: Vec<&str> = r["variants"].as_array().unwrap().iter().map(|v| v["name"].as_str().unwrap()).collect();
    assert_eq!(names.len(), 3, "{names:?}");
    for n in ["Q8_0", "Q4_0", "Q2_K"] {
        assert!(names.contains(&n), "{names:?}");
    }
    let companion = |file: &str| {
        r["companions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["files"][0] == file)
            .cloned()
            .unwrap_or_else(|| panic!("{file}"))
    };
    let small = companion("small-F16.gguf");
    assert_eq!(small["kind"], "draft");
    let fits: Vec<&str> = small["fits"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
    assert_eq!(fits.len(), 3, "fits every model: {fits:?}");
    for file in ["late-draft-F16.gguf", "eos-draft-BF16.gguf", "pre-draft-Q6_K.gguf"] {
        let c = companion(file);
        assert_eq!((c["kind"].as_str(), c["fits"].as_array().unwrap().len()), (Some("draft"), 0), "{file}");
    }
    // The table names the first difference.
    let (_, table, _) = cli(&["repo", dir.to_str().unwrap()]);
    assert!(table.contains(r#"does not fit Q2_K: token 190 is "tok190" vs "other""#), "{table}");
    assert!(table.contains("does not fit Q2_K: eos token 2 vs 3"), "{table}");
    assert!(table.contains("does not fit Q2_K: tokenizer pre-tokenizer llama-bpe vs qwen2"), "{table}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_adapter_opened_with_a_base_is_checked_against_it_not_taken_for_a_split_part() {
    let dir = temp_dir("adapter-open");
    let lora = kinds("lora.gguf");
    // Its own base (the gemma3 model the LoRA was converted for): no finding at all.
    let (code, out, err) = cli(&["inspect", kinds("model.gguf").to_str().unwrap(), lora.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{err}");
    let r: Json = serde_json::from_str(&out).unwrap();
    assert_eq!(r["findings"], serde_json::json!([]), "{}", r["findings"]);
    // A base without the tensors it changes: an error naming the first.
    write(&dir, "base.gguf", &lm(64, &vocab(), "llama-bpe", 2));
    let base = dir.join("base.gguf");
    let (code, out, _) = cli(&["inspect", base.to_str().unwrap(), lora.to_str().unwrap(), "--json"]);
    assert_eq!(code, 1);
    let r: Json = serde_json::from_str(&out).unwrap();
    let codes: Vec<&str> = r["findings"].as_array().unwrap().iter().map(|f| f["code"].as_str().unwrap()).collect();
    assert_eq!(codes, ["adapter.base_mismatch"], "{}", r["findings"]);
    let message = r["findings"][0]["message"].as_str().unwrap();
    assert!(message.contains("lora.gguf does not fit the model opened with it: the base has no blk.0."), "{message}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn importance_matrices_control_vectors_and_vocab_files_fit_the_model_they_were_made_for() {
    let dir = temp_dir("fits");
    // The gemma3 model 64 wide these were made for (its tokenizer is the vocab file's), and a
    // llama model 32 wide with another tokenizer beside it.
    write(&dir, "kinds-Q8_0.gguf", &std::fs::read(kinds("model.gguf")).unwrap());
    write(&dir, "other-Q4_0.gguf", &lm(32, &vocab(), "llama-bpe", 2));
    for f in ["imatrix.gguf", "control-vector.gguf", "vocab.gguf"] {
        write(&dir, f, &std::fs::read(kinds(f)).unwrap());
    }
    let (code, out, err) = cli(&["repo", dir.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{err}");
    let r: Json = serde_json::from_str(&out).unwrap();
    for (file, kind) in [("imatrix.gguf", "imatrix"), ("control-vector.gguf", "adapter"), ("vocab.gguf", "vocab")] {
        let c = r["companions"].as_array().unwrap().iter().find(|c| c["files"][0] == file).unwrap();
        assert_eq!((c["kind"].as_str(), &c["fits"]), (Some(kind), &serde_json::json!(["Q8_0"])), "{file}");
    }
    let (_, table, _) = cli(&["repo", dir.to_str().unwrap()]);
    for why in [
        "does not fit Q4_0: the importance matrix is for gemma3 models, the model is llama",
        "does not fit Q4_0: direction.1: directions of [64] values, the model is 32 wide",
        "does not fit Q4_0: tokenizer pre-tokenizer llama-bpe vs default",
    ] {
        assert!(table.contains(why), "{why}\n{table}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
