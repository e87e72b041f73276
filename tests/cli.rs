//! The `tensorscope` command line: the JSON contract, exit statuses, and bounded reads.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use std::process::Command;

use common::*;
use serde_json::Value as Json;
use tensorscope::cli::open_paths;
use tensorscope::engine::step::CHUNK_BYTES;

fn fixture(rel: &str) -> String {
    fixtures().join(rel).to_string_lossy().into_owned()
}

fn keys(v: &Json) -> Vec<&str> {
    v.as_object().unwrap().keys().map(String::as_str).collect()
}

/// A folder's config.json is read and sizes the cache; each entry's total adds the weights.
#[test]
fn the_estimate_comes_from_the_config_next_to_the_weights() {
    let dir = temp_dir("estimate");
    std::fs::copy(fixture("st_all_numpy_dtypes.safetensors"), dir.join("model.safetensors")).unwrap();
    let config = r#"{"model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096,
        "num_attention_heads": 32, "num_key_value_heads": 8, "max_position_embeddings": 8192}"#;
    std::fs::write(dir.join("config.json"), config).unwrap();
    let (code, out, _) = run(&["inspect", &dir.to_string_lossy(), "--json"]);
    assert_eq!(code, 0, "{out}");
    let r: Json = serde_json::from_str(&out).unwrap();
    let e = &r["estimate"];
    assert_eq!((e["source"].as_str(), e["architecture"].as_str()), (Some("config.json"), Some("llama")));
    assert_eq!((e["context_length"].as_u64(), e["layers"].as_u64()), (Some(8192), Some(32)));
    let kv = e["kv_cache"].as_array().unwrap();
    let f16_8k = kv.iter().find(|k| k["context"] == 8192 && k["type"] == "f16").unwrap();
    assert_eq!(f16_8k["bytes"], 1u64 << 30);
    let weights = e["weights_bytes"].as_u64().unwrap();
    assert_eq!(f16_8k["total_bytes"].as_u64(), Some(weights + (1 << 30)));
    assert_eq!(kv.len(), 9, "4096, 8192 and 32768, each in f16, q8_0 and q4_0");
    assert!(!r["findings"].as_array().unwrap().iter().any(|f| f["message"].as_str().unwrap().contains("config.json")));
    // A context of the user's choosing is estimated too, besides the defaults.
    let (_, out, _) = run(&["inspect", &dir.to_string_lossy(), "--json", "--context", "128K"]);
    let r: Json = serde_json::from_str(&out).unwrap();
    let at: Vec<&Json> =
        r["estimate"]["kv_cache"].as_array().unwrap().iter().filter(|k| k["context"] == 131072).collect();
    assert_eq!(at.len(), 3);
    assert_eq!(at[0]["bytes"], 16u64 << 30, "f16 at 128K: 16 GiB");
    // The text view says the same.
    let (_, text, _) = run(&["inspect", &dir.to_string_lossy()]);
    assert!(text.contains("memory to run (llama, from config.json"), "{text}");
    assert!(text.contains("1.07 GB"), "{text}");
}

#[test]
fn inspect_json_follows_the_contract() {
    // The GGUF fixture holds nested arrays, which llama.cpp refuses: an error finding, status 1.
    for (file, status) in [("gguf_v3_le.gguf", 1), ("st_all_numpy_dtypes.safetensors", 0)] {
        let (code, out, _) = run(&["inspect", &fixture(file), "--json"]);
        assert_eq!(code, status);
        let r: Json = serde_json::from_str(&out).unwrap();
        assert_eq!(keys(&r), ["format", "kind", "files", "metadata", "tensors", "summary", "estimate", "findings"]);
        assert_eq!(r["kind"], "model");
        assert_eq!(
            keys(&r["estimate"]),
            [
                "source",
                "architecture",
                "context_length",
                "layers",
                "kv_layers",
                "weights_bytes",
                "projector_bytes",
                "kv_cache",
                "state_bytes",
                "unknown"
            ]
        );
        assert_eq!(r["estimate"]["weights_bytes"], r["summary"]["bytes"]);
        assert_eq!(keys(&r["files"][0]), ["path", "size"]);
        assert_eq!(r["files"][0]["size"], std::fs::metadata(fixture(file)).unwrap().len());
        assert_eq!(keys(&r["tensors"][0]), ["name", "dtype", "shape", "file", "offset", "nbytes"]);
        assert_eq!(
            keys(&r["summary"]),
            ["tensors", "params", "bytes", "bits_per_weight", "by_dtype", "quant_mix", "overhead_bytes"]
        );
        assert_eq!(r["summary"]["quant_mix"], r["summary"]["by_dtype"], "unquantized: the mix is the dtypes");
        let by: u64 =
            r["summary"]["by_dtype"].as_object().unwrap().values().map(|d| d["bytes"].as_u64().unwrap()).sum();
        assert_eq!(by, r["summary"]["bytes"].as_u64().unwrap());
        let tensors = r["tensors"].as_array().unwrap().len() as u64;
        assert_eq!(r["summary"]["tensors"], tensors);
    }
    let (_, out, _) = run(&["inspect", &fixture("gguf_v3_le.gguf"), "--json"]);
    let r: Json = serde_json::from_str(&out).unwrap();
    assert_eq!(r["metadata"]["general.architecture"], serde_json::json!({"type": "string", "value": "llama"}));
    let tokens = &r["metadata"]["tokenizer.ggml.tokens"];
    assert_eq!(keys(tokens), ["type", "item_type", "len", "value"]);
    assert_eq!((tokens["len"].as_u64(), tokens["value"].as_array().unwrap().len()), (Some(100), 64));
}

#[test]
fn exit_status_follows_the_findings() {
    let dir = temp_dir("exit");
    let bad = dir.join("bad.safetensors");
    std::fs::write(&bad, safetensors(r#"{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,8]}}"#, 8)).unwrap();
    let (code, out, _) = run(&["check", bad.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(out.contains("safetensors.size_mismatch"), "{out}");
    let (code, out, _) = run(&["check", bad.to_str().unwrap(), "--json"]);
    assert_eq!(code, 1);
    let r: Json = serde_json::from_str(&out).unwrap();
    assert_eq!(keys(&r["findings"][0]), ["severity", "code", "message", "file", "tensor"]);
    assert_eq!(r["findings"][0]["severity"], "error");

    assert_eq!(run(&["check", &fixture("gguf_alignment_64.gguf")]).0, 0);
    assert_eq!(run(&["inspect", &fixture("st_exotic_dtypes.safetensors")]).0, 0);
    assert_eq!(run(&[]).0, 2);
    assert_eq!(run(&["inspect"]).0, 2);
    assert_eq!(run(&["inspect", "x", "--nope"]).0, 2);
    assert_eq!(run(&["explode", "x"]).0, 2);
    let (code, _, err) = run(&["inspect", "/no/such/file.gguf"]);
    assert_eq!(code, 2);
    assert!(err.contains("tensorscope:"));
}

#[test]
fn folders_and_several_paths_open_as_one_set() {
    let (code, out, _) = run(&["inspect", &fixture("split"), "--json"]);
    assert_eq!(code, 0);
    let r: Json = serde_json::from_str(&out).unwrap();
    assert_eq!(r["files"].as_array().unwrap().len(), 3);
    let s1 = fixture("sharded/model-00001-of-00002.safetensors");
    let s2 = fixture("sharded/model-00002-of-00002.safetensors");
    let (code, out, _) = run(&["inspect", &s2, &s1]);
    assert_eq!(code, 0);
    assert!(out.contains("model.embed_tokens.weight") && out.contains("lm_head.weight"), "{out}");
    let (code, out, _) = run(&["check", &s2]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("set.missing_shard"));
}

#[test]
fn human_output_shows_summary_metadata_and_tensors() {
    let (code, out, _) = run(&["inspect", &fixture("gguf_v3_le.gguf")]);
    assert_eq!(code, 1, "nested arrays: llama.cpp refuses them");
    for needle in
        ["format   gguf", "MOSTLY_Q4_K_M", "tokenizer.chat_template", "blk.0.attn_q.weight", "IQ4_XS", "[string; 100]"]
    {
        assert!(out.contains(needle), "{needle} missing from:\n{out}");
    }
}

/// A sparse 100 GiB file opens by reading its header plus at most one chunk.
#[test]
fn huge_sparse_files_open_with_bounded_reads() {
    let dir = temp_dir("sparse");
    let gib = 1u64 << 30;

    let mut g = Gguf::header(3, 2, 1);
    g.kv_str("general.architecture", "llama");
    g.tensor("big", &[50 * gib], 0, 0).tensor("bigger", &[25 * gib, 2], 1, 200 * gib);
    g.pad(32);
    let header = g.build();
    let path = dir.join("huge.gguf");
    std::fs::write(&path, &header).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(header.len() as u64 + 300 * gib).unwrap();
    let (cp, read) = open_paths(&[path]).unwrap();
    assert!(cp.findings.is_empty(), "{:?}", cp.findings);
    assert_eq!(cp.tensors[1].offset, Some(header.len() as u64 + 200 * gib));
    assert!(read <= header.len() as u64 + 64 * 1024, "read {read} bytes");

    let h = r#"{"w":{"dtype":"BF16","shape":[1000000,50000],"data_offsets":[0,100000000000]}}"#;
    let path = dir.join("huge.safetensors");
    std::fs::write(&path, safetensors(h, 0)).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(8 + h.len() as u64 + 100_000_000_000).unwrap();
    let (cp, read) = open_paths(&[path]).unwrap();
    assert!(cp.findings.is_empty(), "{:?}", cp.findings);
    assert!(read <= 8 + h.len() as u64 + CHUNK_BYTES, "read {read} bytes");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn check_hashes_scans_and_compares_digests() {
    let dir = temp_dir("check");
    let h = r#"{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"b":{"dtype":"BF16","shape":[2],"data_offsets":[16,20]}}"#;
    let mut bytes = safetensors(h, 0);
    for v in [1.0f32, f32::NAN, f32::INFINITY, -2.0] {
        bytes.extend(v.to_le_bytes());
    }
    bytes.extend([0x80, 0x3f, 0xc0, 0x7f]); // bf16 1.0, NaN
    let path = dir.join("m.safetensors");
    std::fs::write(&path, &bytes).unwrap();
    let p = path.to_str().unwrap();

    let (code, out, _) = run(&["check", p, "--sha256", "--scan", "--json"]);
    assert_eq!(code, 0, "NaN values are a warning, not an error");
    let r: Json = serde_json::from_str(&out).unwrap();
    let digest = r["files"][0]["sha256"].as_str().unwrap().to_owned();
    assert_eq!(digest.len(), 64);
    assert_eq!(r["scan"][0], serde_json::json!({"tensor": "a", "file": 0, "values": 4, "nan": 1, "inf": 1}));
    assert_eq!((r["scan"][1]["nan"].as_u64(), r["scan"][1]["inf"].as_u64()), (Some(1), Some(0)));
    let codes: Vec<&str> = r["findings"].as_array().unwrap().iter().map(|f| f["code"].as_str().unwrap()).collect();
    assert_eq!(codes, ["check.non_finite_values", "check.non_finite_values"]);

    let abc = dir.join("abc.safetensors");
    std::fs::write(&abc, b"abc").unwrap();
    let (_, out, _) = run(&["check", abc.to_str().unwrap(), "--sha256", "--json"]);
    let r: Json = serde_json::from_str(&out).unwrap();
    assert_eq!(r["files"][0]["sha256"], "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");

    let sums = dir.join("SHA256SUMS");
    std::fs::write(&sums, format!("{digest}  m.safetensors\n")).unwrap();
    let (code, out, _) = run(&["check", p, "--expect", sums.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("check.sha256_match"), "{out}");
    std::fs::write(&sums, format!("{}  m.safetensors\n", "0".repeat(64))).unwrap();
    let (code, out, _) = run(&["check", p, "--expect", sums.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(out.contains("check.sha256_mismatch"), "{out}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn text_from_a_file_cannot_drive_the_terminal() {
    let dir = temp_dir("escape");
    let path = dir.join("evil.safetensors");
    let h = "{\"__metadata__\":{\"note\":\"\\u001b[2J\\u202egpj.exe\"},\"a\\u001b]0;pwned\\u0007\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}";
    std::fs::write(&path, safetensors(h, 1)).unwrap();
    let (code, out, _) = run(&["inspect", path.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(!out.contains('\u{1b}') && !out.contains('\u{7}') && !out.contains('\u{202e}'), "{out:?}");
    assert!(out.contains("a\\u{1b}]0;pwned\\u{7}"), "{out}");
}

#[test]
fn values_of_a_tensor_whose_location_was_lost_are_refused_with_the_reason() {
    let dir = temp_dir("lost");
    let path = dir.join("cut.gguf");
    let mut g = Gguf::header(3, 3, 0);
    g.tensor("a", &[4], 0, 0).tensor("b", &[4], 0, 32);
    let mut b = g.build();
    b.extend_from_slice(&5u64.to_le_bytes());
    std::fs::write(&path, b).unwrap();
    let (code, _, err) = run(&["hist", path.to_str().unwrap(), "--tensor", "a", "--json"]);
    assert_eq!(code, 2);
    assert!(err.contains("breaks off before its data section"), "{err}");
    let (_, out, _) = run(&["inspect", path.to_str().unwrap(), "--json"]);
    let r: Json = serde_json::from_str(&out).unwrap();
    assert_eq!(r["tensors"][0]["offset"], Json::Null);
}

/// Pieces read on several threads merge exactly: the same bytes as one thread, and as the
/// sequential job the browser runs.
#[test]
fn threads_give_the_sequential_result_to_the_bit() {
    use tensorscope::engine::hist_report::HistReport;
    use tensorscope::engine::job::{histogram_job, run};
    use tensorscope::engine::plan::Selection;
    let dir = temp_dir("threads");
    let path = dir.join("w.safetensors");
    let n = 6_000_000usize; // 24 MB: two dozen 1 MiB pieces
    let h = format!("{{\"w\":{{\"dtype\":\"F32\",\"shape\":[{n}],\"data_offsets\":[0,{}]}}}}", n * 4);
    let mut bytes = safetensors(&h, 0);
    let mut rng = Rng(99);
    for i in 0..n {
        let v = if i % 100_003 == 7 { f32::NAN } else { 1e4 + (rng.next() % 10_000) as f32 * 1e-3 };
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    std::fs::write(&path, &bytes).unwrap();
    let p = path.to_str().unwrap();
    let with = |threads: &str, args: &[&str]| {
        let out = common::cli().env("TENSORSCOPE_THREADS", threads).args(args).output();
        String::from_utf8(out.unwrap().stdout).unwrap()
    };
    let hist = ["hist", p, "--tensor", "w", "--bins", "32", "--json"];
    let one = with("1", &hist);
    assert_eq!(with("3", &hist), one);
    let (cp, _) = open_paths(std::slice::from_ref(&path)).unwrap();
    let t = &cp.tensors[0];
    let sink = run(histogram_job(t, &Selection::Whole, false).unwrap(), vec![bytes.len() as u64], |_, r, buf| {
        *buf = bytes[r.start as usize..r.end as usize].to_vec();
        Ok(())
    })
    .unwrap();
    assert_eq!(HistReport::new(t, &sink.values, 32, None).to_text(), one, "the browser's sequential job");
    let check = ["check", p, "--sha256", "--scan", "--json"];
    assert_eq!(with("3", &check), with("1", &check));

    // Block types counted by group join as exactly: Q4_K (12) and IQ4_XS (23), 5 MB each.
    for (ggml_type, block_bytes) in [(12u32, 144usize), (23, 136)] {
        let blocks = 36_000usize;
        let mut g = Gguf::header(3, 1, 0);
        g.tensor("w", &[256 * blocks as u64], ggml_type, 0).pad(32);
        for _ in 0..blocks * block_bytes / 2 {
            let r = rng.next();
            g.raw(&[r as u8, (r >> 8) as u8 & 0x3b]);
        }
        let path = dir.join(format!("w{ggml_type}.gguf"));
        std::fs::write(&path, g.build()).unwrap();
        let p = path.to_str().unwrap();
        let hist = ["hist", p, "--tensor", "w", "--bins", "32", "--json"];
        let one = with("1", &hist);
        assert!(one.contains("\"count\": 9216000"), "{one}");
        assert_eq!(with("3", &hist), one, "type {ggml_type}");
    }
}

/// Progress bars show on a terminal (here a pseudo-terminal made by `script`), never in a pipe
/// or with `--json`, and the output is otherwise the same.
#[test]
fn progress_bars_show_on_a_terminal_only() {
    let dir = temp_dir("progress");
    let file = dir.join("big.safetensors");
    let header = br#"{"w":{"dtype":"F32","shape":[18874368],"data_offsets":[0,75497472]}}"#;
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header);
    std::fs::write(&file, &bytes).unwrap();
    std::fs::OpenOptions::new().write(true).open(&file).unwrap().set_len(bytes.len() as u64 + 75_497_472).unwrap();
    let f = file.to_string_lossy().into_owned();
    let (code, _, err) = run(&["check", &f, "--sha256"]);
    assert_eq!((code, err.as_str()), (0, ""), "no bar in a pipe");
    let in_pty = |extra: &str| {
        let cmd = format!("{} check {f} --sha256 {extra}", env!("CARGO_BIN_EXE_tensorscope"));
        let out = Command::new("script").args(["-qec", &cmd, "/dev/null"]).stdin(std::process::Stdio::null()).output();
        String::from_utf8_lossy(&out.expect("script (util-linux) runs a pseudo-terminal").stdout).into_owned()
    };
    let shown = in_pty("");
    assert!(shown.contains("hashing") && shown.contains("72.00 MiB"), "{shown}");
    assert!(!in_pty("--json").contains("hashing"));
    assert!(!in_pty("--quiet").contains("hashing"));
}

/// A template's hidden characters are a warning on its line, and the terminal shows them escaped.
#[test]
fn hidden_characters_in_a_chat_template_are_a_warning_shown_escaped() {
    let dir = temp_dir("hidden-template");
    std::fs::copy(fixture("st_all_numpy_dtypes.safetensors"), dir.join("model.safetensors")).unwrap();
    let config = serde_json::json!({ "chat_template": "{{ bos_token }}\nsay \u{202e}olleh{{ x }}" });
    std::fs::write(dir.join("tokenizer_config.json"), config.to_string()).unwrap();
    let (code, out, _) = run(&["template", dir.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(out.contains("say \\u{202e}olleh{{ x }}") && !out.contains('\u{202e}'), "{out}");
    assert!(out.contains("  warning  template.hidden_characters  line 2: U+202E"), "{out}");
    let (_, out, _) = run(&["check", dir.to_str().unwrap(), "--json"]);
    let report: Json = serde_json::from_str(&out).unwrap();
    let found = report["findings"].as_array().unwrap();
    let hidden: Vec<&Json> = found.iter().filter(|f| f["code"] == "template.hidden_characters").collect();
    assert_eq!(hidden.len(), 1, "{found:?}");
    assert_eq!(hidden[0]["severity"], "warning");
}

/// A model folder as transformers saves it now: the default template in `chat_template.jinja`,
/// named ones in `additional_chat_templates/`, the special tokens in `tokenizer_config.json`.
/// Every template is found, checked and rendered; an injected one in the named folder is caught,
/// and the stale default in `tokenizer_config.json` is said to be shadowed.
#[test]
fn chat_template_files_of_a_model_folder_are_found_checked_and_rendered() {
    let dir = temp_dir("template-files");
    std::fs::copy(fixture("st_all_numpy_dtypes.safetensors"), dir.join("model.safetensors")).unwrap();
    // An older default left beside the new file.
    let config = r#"{"bos_token": "<s>", "eos_token": "</s>", "chat_template": "{{ 'old' }}"}"#;
    std::fs::write(dir.join("tokenizer_config.json"), config).unwrap();
    std::fs::write(dir.join("chat_template.jinja"), "{{ bos_token }}{% for m in messages %}{{ m.role }};{% endfor %}")
        .unwrap();
    std::fs::create_dir_all(dir.join("additional_chat_templates")).unwrap();
    std::fs::write(dir.join("additional_chat_templates/tool_use.jinja"), "{{ cycler.__init__.__globals__ }}").unwrap();
    let (code, out, err) = run(&["template", dir.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{err}");
    let templates: Json = serde_json::from_str(&out).unwrap();
    let names: Vec<&str> = templates.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["default", "tool_use", "default"]);
    assert!(templates[2]["source"].as_str().unwrap().ends_with("tokenizer_config.json"), "{templates}");
    assert!(templates[0]["source"].as_str().unwrap().ends_with("chat_template.jinja"), "{templates}");
    assert_eq!(templates[0]["rendered"], "<s>system;user;assistant;user;");
    assert!(templates[1]["source"].as_str().unwrap().ends_with("additional_chat_templates/tool_use.jinja"));
    assert!(templates[1]["findings"].as_array().unwrap().iter().any(|f| f["code"] == "template.dunder"), "{templates}");
    // Inspected, the folder's files are all used: none ignored, the injection an error.
    let (code, out, _) = run(&["check", dir.to_str().unwrap(), "--json"]);
    assert_eq!(code, 1);
    let report: Json = serde_json::from_str(&out).unwrap();
    let codes: Vec<&str> = report["findings"].as_array().unwrap().iter().map(|f| f["code"].as_str().unwrap()).collect();
    assert!(codes.contains(&"template.dunder") && !codes.contains(&"set.ignored_file"), "{codes:?}");
    assert!(codes.contains(&"template.shadowed"), "{codes:?}");
}

/// A config in another folder than the weights' is not the model's: a sentence-transformers
/// model keeps its pooling layer's `config.json` in `1_Pooling/`. Given with the model's own
/// (first, even), it is listed as ignored and the estimate reads the model's.
#[test]
fn a_config_beside_no_weights_is_ignored_not_read_as_the_models() {
    let dir = temp_dir("config-apart");
    std::fs::copy(fixture("st_all_numpy_dtypes.safetensors"), dir.join("model.safetensors")).unwrap();
    let model = r#"{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 3,
        "hidden_size": 64, "num_attention_heads": 4, "max_position_embeddings": 2048}"#;
    std::fs::write(dir.join("config.json"), model).unwrap();
    std::fs::create_dir_all(dir.join("1_Pooling")).unwrap();
    let pooling = dir.join("1_Pooling/config.json");
    std::fs::write(&pooling, r#"{"word_embedding_dimension": 64, "pooling_mode_mean_tokens": true}"#).unwrap();
    let paths = [pooling.clone(), dir.join("model.safetensors"), dir.join("config.json")];
    let args: Vec<&str> = ["inspect", "--json"].into_iter().chain(paths.iter().map(|p| p.to_str().unwrap())).collect();
    let (code, out, err) = run(&args);
    assert_eq!(code, 0, "{err}");
    let r: Json = serde_json::from_str(&out).unwrap();
    assert_eq!((&r["estimate"]["architecture"], &r["estimate"]["layers"]), (&Json::from("llama"), &Json::from(3)));
    let ignored: Vec<&str> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "set.ignored_file")
        .map(|f| f["message"].as_str().unwrap())
        .collect();
    assert_eq!(ignored, [format!("{} is in a folder below the weights' and was ignored", pooling.display())]);
    // With no weights there is no checkpoint, and no config is set aside for being apart.
    let (code, out, _) =
        run(&["inspect", "--json", pooling.to_str().unwrap(), dir.join("config.json").to_str().unwrap()]);
    assert_eq!(code, 1);
    let r: Json = serde_json::from_str(&out).unwrap();
    let codes: Vec<&str> = r["findings"].as_array().unwrap().iter().map(|f| f["code"].as_str().unwrap()).collect();
    assert_eq!(codes, ["set.no_checkpoint"]);
}

/// A config that is an HTML page (saved from a web page's address) is said so, not read.
#[test]
fn a_config_that_is_a_web_page_is_said_so() {
    let dir = temp_dir("config-page");
    std::fs::copy(fixture("st_all_numpy_dtypes.safetensors"), dir.join("model.safetensors")).unwrap();
    std::fs::write(dir.join("config.json"), "\n<!DOCTYPE html>\n<html lang=\"en\"><head><title>config.json</title>")
        .unwrap();
    let (code, out, err) = run(&["inspect", dir.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{err}");
    let r: Json = serde_json::from_str(&out).unwrap();
    let said: Vec<&Json> =
        r["findings"].as_array().unwrap().iter().filter(|f| f["code"] == "config.not_json").collect();
    assert_eq!(said.len(), 1, "{r}");
    assert!(said[0]["message"]
        .as_str()
        .unwrap()
        .ends_with("config.json is an HTML page, not the file (saved from a web page's address?), and was not used"));
    assert!(r["estimate"]["source"].is_null(), "{r}");
}

/// `template --conversation`: the template's variables from a file, or a list of messages; a
/// file that is neither is a usage error.
#[test]
fn a_template_renders_a_conversation_given_in_a_file() {
    let dir = temp_dir("conversation");
    std::fs::copy(fixture("st_all_numpy_dtypes.safetensors"), dir.join("model.safetensors")).unwrap();
    let template = "{% for m in messages %}{{ m.role }}:{{ m.content }};{% endfor %}\
                    {% if tools is not none %}{{ tools | tojson }}{% endif %}{% if add_generation_prompt %}>{% endif %}";
    std::fs::write(dir.join("chat_template.jinja"), template).unwrap();
    let render = |conversation: &str| {
        let file = dir.join("conversation.json");
        std::fs::write(&file, conversation).unwrap();
        let d = dir.to_str().unwrap().to_owned();
        run(&["template", &d, "--json", "--conversation", file.to_str().unwrap()])
    };
    let (code, out, err) = render(r#"[{"role": "user", "content": "hi"}]"#);
    assert_eq!(code, 0, "{err}");
    let t: Json = serde_json::from_str(&out).unwrap();
    // As apply_chat_template(messages): no tools, no generation prompt.
    assert_eq!(t[0]["rendered"], "user:hi;");
    let with_tools =
        r#"{"messages": [{"role": "user", "content": "hi"}], "tools": [{"name": "f"}], "add_generation_prompt": true}"#;
    let (_, out, _) = render(with_tools);
    let t: Json = serde_json::from_str(&out).unwrap();
    assert_eq!(t[0]["rendered"], "user:hi;[{\"name\": \"f\"}]>");
    for bad in ["\"hello\"", "{not json", "42"] {
        let (code, _, err) = render(bad);
        assert_eq!(code, 2, "{bad}: {err}");
        assert!(err.contains("conversation.json"), "{err}");
    }
}
