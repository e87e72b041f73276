//! What a file is: kinds, projector fit, adapters, tokenizers, chat templates and fork types,
//! against the fixtures gguf-py, safetensors and jinja2 wrote (tests/fixtures/make_kind_fixtures.py).
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::*;
use serde_json::Value as Json;
use tensorscope::cli::open_paths;
use tensorscope::engine::adapter::{adapter, scalars_job, Alpha, Flavour};
use tensorscope::engine::kind::{kind, Kind};
use tensorscope::engine::model::{Checkpoint, Lost};
use tensorscope::engine::training::training;

fn path(rel: &str) -> String {
    fixtures().join("kinds").join(rel).to_string_lossy().into_owned()
}

fn open(rels: &[&str]) -> Checkpoint {
    let paths: Vec<std::path::PathBuf> = rels.iter().map(|r| path(r).into()).collect();
    open_paths(&paths).unwrap().0
}

fn expected() -> Json {
    serde_json::from_str(&std::fs::read_to_string(path("expected.json")).unwrap()).unwrap()
}

#[test]
fn every_fixture_has_its_kind_in_the_json() {
    for (file, want) in [
        ("model.gguf", "model"),
        ("mmproj-fit.gguf", "projector"),
        ("mmproj-wrong.gguf", "projector"),
        ("lora.gguf", "adapter"),
        ("control-vector.gguf", "adapter"),
        ("imatrix.gguf", "imatrix"),
        ("vocab.gguf", "vocab"),
        ("peft", "adapter"),
        ("kohya.safetensors", "adapter"),
    ] {
        let (_, out, err) = run(&["inspect", &path(file), "--json"]);
        let r: Json = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{file}: {e} {err}"));
        assert_eq!(r["kind"], want, "{file}");
        let keys: Vec<&str> = r.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(&keys[..2], ["format", "kind"], "{file}");
    }
    // A model opened with its projector is a model, and the projector does not count as weights.
    let (_, out, _) = run(&["inspect", &path("model.gguf"), &path("mmproj-fit.gguf"), "--json"]);
    let r: Json = serde_json::from_str(&out).unwrap();
    assert_eq!(r["kind"], "model");
    assert_eq!(r["metadata"]["general.architecture"]["value"], "gemma3", "the model's keys win over the projector's");
    assert!(r["estimate"]["projector_bytes"].as_u64().unwrap() > 0);
}

#[test]
fn a_projector_that_fits_its_model_gives_no_finding_and_one_that_does_not_says_why() {
    let fit = open(&["mmproj-fit.gguf", "model.gguf"]);
    assert_eq!(kind(&fit), Kind::Model);
    let found = codes(&fit);
    assert!(!found.iter().any(|c| c.starts_with("projector.") || *c == "set.not_a_split_set"), "{found:?}");

    let wrong = open(&["model.gguf", "mmproj-wrong.gguf"]);
    let width = wrong.findings.iter().find(|f| f.code == "projector.width_mismatch").expect("a width finding");
    assert!(width.message.contains("48-wide") && width.message.contains("mm.2.weight"), "{}", width.message);
    assert!(width.message.contains("gemma3.embedding_length makes 64"), "{}", width.message);
    assert_eq!(width.file, Some(1));
    let family = wrong.findings.iter().find(|f| f.code == "projector.family_mismatch").expect("a family finding");
    assert!(family.message.contains("qwen2vl_merger") && family.message.contains("gemma3"), "{}", family.message);
    // Alone, a projector is just a projector: nothing to fit against.
    assert!(!codes(&open(&["mmproj-wrong.gguf"])).iter().any(|c| c.starts_with("projector.")));
}

#[test]
fn adapters_give_rank_and_alpha_per_module() {
    let cp = open(&["lora.gguf"]);
    let a = adapter(&cp).unwrap();
    assert_eq!(a.flavour, Flavour::GgufLora);
    assert_eq!(a.ranks(), [8]);
    assert_eq!(a.base_model.as_deref(), Some("Kinds Fixture 1B"));
    let up = a.modules.iter().find(|m| m.name == "blk.0.ffn_up.weight").unwrap();
    assert_eq!((up.in_features, up.out_features), (Some(64), Some(128)));
    assert_eq!(up.alpha, Alpha::Stated(16.0, "adapter.lora.alpha".into()));

    let cp = open(&["peft"]);
    let a = adapter(&cp).unwrap();
    assert_eq!(a.flavour, Flavour::Peft);
    assert_eq!(a.target_modules, ["q_proj", "v_proj"]);
    assert_eq!(a.base_model.as_deref(), Some("example/kinds-fixture-1b"));
    let v = a.modules.iter().find(|m| m.name == "model.layers.1.self_attn.v_proj").unwrap();
    assert_eq!((v.rank, v.in_features, v.out_features), (Some(4), Some(64), Some(32)));
    assert_eq!(v.alpha.value(), Some(16.0));
    assert_eq!(a.modules.len(), 4);

    // kohya: alphas live in tensors, read by a job (2.0 for the unet module, 1.0 for the text encoder).
    let cp = open(&["kohya.safetensors"]);
    let a = adapter(&cp).unwrap();
    assert_eq!(a.flavour, Flavour::Kohya);
    assert_eq!(a.ranks(), [4]);
    let wanted = a.alpha_tensors();
    assert_eq!(wanted.len(), 2);
    let values = tensorscope::cli::run_on(scalars_job(&cp, &wanted), &cp).unwrap();
    let a = a.with_alphas(&cp, &values);
    let unet = a.modules.iter().find(|m| m.name.starts_with("lora_unet")).unwrap();
    assert_eq!(unet.alpha.value(), Some(2.0));
    let te = a.modules.iter().find(|m| m.name.starts_with("lora_te")).unwrap();
    assert_eq!(te.alpha.value(), Some(1.0));
    let t = training(&cp);
    assert_eq!(t.tags[0], ("subject".to_owned(), 12));
    assert!(t.settings.iter().any(|(k, v)| k == "ss_learning_rate" && v == "0.0001"));
    assert!(t.documents.iter().any(|(k, v)| k == "ss_dataset_dirs" && v.contains("\"n_repeats\": 10")));
    // The CLI shows the alphas read.
    let (_, text, _) = run(&["inspect", &path("kohya.safetensors")]);
    assert!(text.contains("alpha 1/2"), "{text}");
    assert!(text.contains("lora_unet_mid_block_attentions_0_proj_in"), "{text}");
}

#[test]
fn tokens_match_gguf_py_by_id_by_text_and_whole() {
    let want = expected();
    let all = want["tokens"].as_array().unwrap();
    let (code, out, err) = run(&["tokens", &path("model.gguf"), "--json"]);
    assert_eq!(code, 0, "{err}");
    let got: Json = serde_json::from_str(&out).unwrap();
    assert_eq!(got.as_array().unwrap(), all);
    let (_, out, _) = run(&["tokens", &path("model.gguf"), "--id", "12", "--id", "18", "--json"]);
    let got: Json = serde_json::from_str(&out).unwrap();
    assert_eq!(got, Json::Array(vec![all[12].clone(), all[18].clone()]));
    let (_, out, _) = run(&["tokens", &path("model.gguf"), "--find", "hello", "--json"]);
    let ids: Vec<u64> = serde_json::from_str::<Json>(&out)
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_u64().unwrap())
        .collect();
    let expect: Vec<u64> = all
        .iter()
        .filter(|t| t["text"].as_str().unwrap().to_lowercase().contains("hello"))
        .map(|t| t["id"].as_u64().unwrap())
        .collect();
    assert_eq!(ids, expect);
    assert_eq!(ids.len(), 3);
    // The text view resolves the special tokens and makes invisible characters visible.
    let (_, text, _) = run(&["tokens", &path("model.gguf")]);
    assert!(text.contains("6 merges"), "{text}");
    assert!(text.lines().any(|l| l.contains("bos") && l.trim_end().ends_with("<bos>")), "{text}");
    assert!(text.contains("\\u{200b}") && text.contains("\\n"), "{text}");
    // Past the end, and a file without a tokenizer: errors, not panics.
    assert_eq!(run(&["tokens", &path("model.gguf"), "--id", "40"]).0, 2);
    assert_eq!(run(&["tokens", &path("lora.gguf")]).0, 2);
}

#[test]
fn templates_render_as_jinja2_renders_them() {
    let want = expected();
    let (code, out, err) = run(&["template", &path("model.gguf"), "--json"]);
    assert_eq!(code, 0, "{err}");
    let got: Json = serde_json::from_str(&out).unwrap();
    let list = got.as_array().unwrap();
    assert_eq!(list.len(), 2);
    for t in list {
        let name = t["name"].as_str().unwrap();
        assert_eq!(t["rendered"], want["rendered"][name], "template {name}");
        assert_eq!(t["findings"], Json::Array(vec![]));
    }
    let (_, out, _) = run(&["template", &path("model.gguf"), "--name", "tool_use"]);
    assert!(out.contains("  1 | {% for m in messages %}"), "{out}");
    assert!(out.contains("HELLO"), "{out}");
}

#[test]
fn an_injected_template_is_an_error_finding_with_its_line() {
    let (code, out, _) = run(&["check", &path("evil-template.gguf"), "--json"]);
    assert_eq!(code, 1, "an error-level finding fails the check");
    let r: Json = serde_json::from_str(&out).unwrap();
    let found: Vec<&str> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"].as_str().unwrap().starts_with("template."))
        .map(|f| f["message"].as_str().unwrap())
        .collect();
    assert!(found.iter().any(|m| m.contains("line 2") && m.contains("__globals__")), "{found:?}");
    assert!(found.iter().any(|m| m.contains(".popen(")), "{found:?}");
    // Rendering it runs nothing: the sandboxed engine reports an error or plain text.
    let (code, out, _) = run(&["template", &path("evil-template.gguf"), "--json"]);
    assert_eq!(code, 0);
    let t = &serde_json::from_str::<Json>(&out).unwrap()[0];
    assert!(t["rendered"].is_null() || !t["rendered"].as_str().unwrap().contains("uid="));
    assert_eq!(t["findings"][0]["line"], 2);
}

/// A GGUF of two tensors: `first` of type `id` and shape `ne`, whose data span is `span` bytes
/// (the second tensor, F32 [8], starts there).
fn two_tensors(id: u32, ne: &[u64], span: u64, extra_kv: Option<(&str, u32)>) -> Vec<u8> {
    let mut g = Gguf::header(3, 2, 1 + u64::from(extra_kv.is_some()));
    g.kv_str("general.architecture", "llama");
    if let Some((k, v)) = extra_kv {
        g.kv_u32(k, v);
    }
    g.tensor("blk.0.attn_q.weight", ne, id, 0).tensor("blk.0.attn_norm.weight", &[8], 0, span);
    g.pad(32).data(span as usize + 32);
    g.build()
}

#[test]
fn fork_types_are_named_by_their_span_and_never_decoded() {
    // PrismML's PQ2_0: 128 elements in 34 bytes; [256, 4] takes 272 bytes (padded to 288).
    let cp = open_one("bonsai.gguf", &two_tensors(142, &[256, 4], 288, None));
    let f = cp.findings.iter().find(|f| f.code == "gguf.fork_type").expect("a fork-type finding");
    assert!(f.message.contains("PQ2_0") && f.message.contains("PrismML"), "{}", f.message);
    assert!(f.message.contains("upstream llama.cpp cannot load it"), "{}", f.message);
    assert!(!codes(&cp).contains(&"gguf.unknown_type"), "named, so not unknown: {:?}", codes(&cp));
    assert_eq!(cp.tensors[0].nbytes, 272, "its bytes count in the summary");
    assert!(cp.tensors[0].data.is_err(), "a fork type is never decoded");
    assert_eq!(cp.tensors[0].dtype.name(), "type 142");

    // The same id in ik_llama.cpp's layout (IQ2_TN: 256 elements in 64 bytes + 4 per row).
    let f = cp.findings.iter().find(|f| f.code == "gguf.fork_type").unwrap();
    assert!(f.message.contains("retired IQ2_TN takes the same bytes"), "{}", f.message);
    let cp = open_one("ik.gguf", &two_tensors(142, &[512, 8], 8 * (2 * 64 + 4), None));
    let f = cp.findings.iter().find(|f| f.code == "gguf.fork_type").unwrap();
    assert!(f.message.contains("IQ2_TN") && f.message.contains("ik_llama.cpp"), "{}", f.message);

    // A span that fits neither layout: said, not guessed.
    let cp = open_one("odd.gguf", &two_tensors(142, &[256, 4], 1024, None));
    let f = cp.findings.iter().find(|f| f.code == "gguf.span_mismatch").expect("a span finding");
    assert!(f.message.contains("fits none of them") && f.message.contains("PQ2_0"), "{}", f.message);
    assert!(codes(&cp).contains(&"gguf.unknown_type"));

    // An upstream type whose span is shorter than the type needs (bitnet.cpp's TL2 under id 39,
    // MXFP4 upstream): refused, with the other meaning named.
    let cp = open_one("tl2.gguf", &two_tensors(39, &[256, 4], 128, None));
    let f = cp.findings.iter().find(|f| f.code == "gguf.span_mismatch").expect("a span finding");
    assert!(f.message.contains("MXFP4") && f.message.contains("TL2"), "{}", f.message);
    assert!(cp.tensors[0].data.is_err(), "not decoded as MXFP4");
    assert!(cp.tensors[1].data.is_ok(), "the next tensor is still readable");

    // An id upstream used and removed (Q4_0_4_4, 32 elements in 18 bytes) is named, and stays an
    // error: upstream llama.cpp cannot load the file today.
    let cp = open_one("q4044.gguf", &two_tensors(31, &[64, 4], 160, None));
    let f = cp.findings.iter().find(|f| f.code == "gguf.fork_type").expect("a fork-type finding");
    assert!(f.message.contains("Q4_0_4_4 of llama.cpp of July to December 2024"), "{}", f.message);
    let removed = cp.findings.iter().find(|f| f.code == "gguf.removed_type").expect("still removed");
    assert_eq!(removed.severity, tensorscope::engine::findings::Severity::Error);

    // Rotated weights are said to be rotated.
    let cp = open_one("rot.gguf", &two_tensors(0, &[8, 4], 128, Some(("prism.hadamard.version", 1))));
    let f = cp.findings.iter().find(|f| f.code == "gguf.rotated_weights").expect("a rotation finding");
    assert!(f.message.contains("rotated"), "{}", f.message);
}

#[test]
fn a_short_last_tensor_is_one_past_the_end_finding_not_three() {
    let mut g = Gguf::header(3, 1, 1);
    g.kv_str("general.architecture", "llama");
    g.tensor("blk.0.attn_q.weight", &[64, 1], 8, 0);
    g.pad(32).data(40);
    let cp = open_one("short.gguf", &g.build());
    assert_eq!(codes(&cp), ["gguf.data_out_of_bounds"], "{:?}", cp.findings);
    assert_eq!(cp.tensors[0].data, Err(Lost::PastEnd { end: Some(196), file_len: 168 }));

    // An unknown type's data is not trailing bytes: its size is unknown, not zero.
    let mut g = Gguf::header(3, 1, 1);
    g.kv_str("general.architecture", "llama");
    g.tensor("blk.0.attn_q.weight", &[64, 1], 99, 0);
    g.pad(32).data(64);
    assert_eq!(codes(&open_one("unknown.gguf", &g.build())), ["gguf.unknown_type"]);
}
