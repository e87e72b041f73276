//! Sharded safetensors sets (with and without an index), GGUF split sets, and folders holding
//! other files.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::*;
use tensorscope::engine::model::Format;
use tensorscope::engine::naming::rules as naming;
use tensorscope::engine::shards::rules;

fn shard(names: &[&str]) -> Vec<u8> {
    let entries: Vec<String> = names
        .iter()
        .enumerate()
        .map(|(i, n)| format!(r#""{n}":{{"dtype":"F32","shape":[2],"data_offsets":[{},{}]}}"#, i * 8, i * 8 + 8))
        .collect();
    safetensors(&format!("{{{}}}", entries.join(",")), names.len() * 8)
}

fn index(total: u64, map: &[(&str, &str)]) -> Vec<u8> {
    let m: Vec<String> = map.iter().map(|(t, f)| format!(r#""{t}":"{f}""#)).collect();
    format!(r#"{{"metadata":{{"total_size":{total}}},"weight_map":{{{}}}}}"#, m.join(",")).into_bytes()
}

const S1: &str = "model-00001-of-00002.safetensors";
const S2: &str = "model-00002-of-00002.safetensors";
const IDX: &str = "model.safetensors.index.json";

#[test]
fn a_complete_indexed_set_has_no_findings() {
    let (a, b) = (shard(&["x", "y"]), shard(&["z"]));
    let i = index(24, &[("x", S1), ("y", S1), ("z", S2)]);
    let cp = open_all(&[(S2, &b), (IDX, &i), (S1, &a)]);
    assert!(cp.findings.is_empty(), "{:?}", cp.findings);
    assert_eq!(cp.files[0].path, S1);
    assert_eq!(cp.tensor("z").unwrap().file, 1);
}

#[test]
fn a_missing_shard_is_reported() {
    let a = shard(&["x", "y"]);
    let i = index(24, &[("x", S1), ("y", S1), ("z", S2)]);
    let cp = open_all(&[(S1, &a), (IDX, &i)]);
    assert_eq!(codes(&cp), vec![rules::MISSING_SHARD.code]);
    assert!(cp.findings[0].message.contains(S2));
}

#[test]
fn tensors_in_the_wrong_shard_missing_or_unindexed_are_reported() {
    let (a, b) = (shard(&["x", "z"]), shard(&["w"]));
    let i = index(24, &[("x", S1), ("y", S1), ("z", S2)]);
    let cp = open_all(&[(S1, &a), (S2, &b), (IDX, &i)]);
    let c = codes(&cp);
    for code in [rules::WRONG_SHARD.code, rules::MISSING_TENSOR.code, rules::UNINDEXED_TENSOR.code] {
        assert!(c.contains(&code), "{code} in {c:?}");
    }
}

#[test]
fn an_entry_naming_a_missing_shard_still_indexes_its_tensor() {
    // The index puts "z" in the second shard, which was not given; "z" sits in the first one.
    let a = shard(&["x", "z"]);
    let i = index(16, &[("x", S1), ("z", S2)]);
    let cp = open_all(&[(S1, &a), (IDX, &i)]);
    assert_eq!(codes(&cp), vec![rules::MISSING_SHARD.code], "z is listed, so not unindexed");
}

#[test]
fn a_second_index_is_ignored_with_a_warning() {
    let (a, b) = (shard(&["x"]), shard(&["z"]));
    let good = index(16, &[("x", S1), ("z", S2)]);
    let other = index(16, &[("x", S2), ("z", S1)]);
    let cp = open_all(&[(S1, &a), (S2, &b), (IDX, &good), ("other.safetensors.index.json", &other)]);
    let c = codes(&cp);
    assert_eq!(c.iter().filter(|&&c| c == rules::EXTRA_INDEX.code).count(), 1, "{c:?}");
    assert!(!c.contains(&rules::WRONG_SHARD.code), "the first index given is the one checked: {c:?}");
    let extra = cp.findings.iter().find(|f| f.breaks(rules::EXTRA_INDEX)).unwrap();
    assert!(extra.message.starts_with("other.safetensors.index.json"), "{}", extra.message);
}

#[test]
fn a_wrong_total_size_is_reported() {
    let (a, b) = (shard(&["x"]), shard(&["z"]));
    let i = index(999, &[("x", S1), ("z", S2)]);
    let cp = open_all(&[(S1, &a), (S2, &b), (IDX, &i)]);
    assert_eq!(codes(&cp), vec![rules::TOTAL_SIZE_MISMATCH.code]);
}

#[test]
fn a_name_the_index_repeats_maps_where_its_last_entry_says() {
    let (a, b) = (shard(&["x"]), shard(&["z"]));
    // As Python's json reads it: "x" is in S1, and S2 is named only for "z".
    let i = index(16, &[("x", S2), ("x", S1), ("z", S2)]);
    let cp = open_all(&[(S1, &a), (S2, &b), (IDX, &i)]);
    assert_eq!(codes(&cp), vec!["safetensors.duplicate_key"], "{:?}", cp.findings);
    assert!(cp.findings[0].message.contains("'x'"));
    // The other way round the last entry is wrong, and said to be.
    let i = index(16, &[("x", S1), ("x", S2), ("z", S2)]);
    let c = codes(&open_all(&[(S1, &a), (S2, &b), (IDX, &i)]));
    assert!(c.contains(&rules::WRONG_SHARD.code), "{c:?}");
    // A repeated weight_map: the last one is the map, a shard only the first named is not missing.
    let i = format!(r#"{{"weight_map":{{"x":"gone.safetensors"}},"weight_map":{{"x":"{S1}","z":"{S2}"}}}}"#);
    let cp = open_all(&[(S1, &a), (S2, &b), (IDX, i.as_bytes())]);
    assert_eq!(codes(&cp), vec!["safetensors.duplicate_key"], "{:?}", cp.findings);
    // total_size of the wrong type is a warning, as a wrong value is: loaders do not read it.
    let i = format!(r#"{{"metadata":{{"total_size":"16"}},"weight_map":{{"x":"{S1}","z":"{S2}"}}}}"#);
    let cp = open_all(&[(S1, &a), (S2, &b), (IDX, i.as_bytes())]);
    assert_eq!(codes(&cp), vec!["safetensors.bad_index"]);
    assert_eq!(cp.findings[0].severity, tensorscope::engine::findings::Severity::Warning);
}

#[test]
fn a_bad_index_is_reported() {
    let a = shard(&["x"]);
    let cp = open_all(&[(S1, &a), (IDX, b"{not json")]);
    assert!(codes(&cp).contains(&"safetensors.bad_index"));
}

#[test]
fn shards_without_an_index_must_all_be_there() {
    let (a, b) = (shard(&["x"]), shard(&["y"]));
    assert!(open_all(&[(S1, &a), (S2, &b)]).findings.is_empty());
    let cp = open_all(&[(S2, &b)]);
    assert_eq!(codes(&cp), vec![rules::MISSING_SHARD.code]);
    assert!(cp.findings[0].message.contains("00001"));
}

#[test]
fn a_tensor_in_two_shards_is_reported() {
    let (a, b) = (shard(&["x"]), shard(&["x"]));
    let cp = open_all(&[(S1, &a), (S2, &b)]);
    assert_eq!(codes(&cp), vec![rules::DUPLICATE_TENSOR.code]);
    // An index that places it in the second copy's shard is not also wrong.
    let i = index(16, &[("x", S2)]);
    let cp = open_all(&[(S1, &a), (S2, &b), (IDX, &i)]);
    assert_eq!(codes(&cp), vec![rules::DUPLICATE_TENSOR.code], "{:?}", cp.findings);
}

#[test]
fn a_pickle_beside_weights_is_not_opened_and_other_files_are_ignored() {
    let a = shard(&["x"]);
    let cp = open_all(&[
        ("model.safetensors", &a),
        ("pytorch_model.bin", b"PK\x03\x04\x14\0\0\0\0\0\0\0\0\0\0\0"),
        ("config.json", b"{\"hidden_size\": 8}"),
        ("generation_config.json", b"{\"max_length\": "),
        ("README.md", b"# a model"),
    ]);
    assert_eq!(cp.format, Format::Safetensors);
    // Configs that could not be read are said once the weights' folders are known.
    assert_eq!(codes(&cp), vec![rules::IGNORED_FILE.code, "config.not_json", rules::PICKLE_NOT_LOADED.code]);
    assert!(cp.findings[1].message.contains("generation_config.json"), "{:?}", cp.findings[1]);
    let pickle = &cp.findings[2];
    assert!(pickle.message.contains("pytorch_model.bin") && pickle.message.contains("safetensors"), "{pickle:?}");
    // The config is read and kept; a broken one is a finding, not a failure.
    assert_eq!(cp.config("config.json"), Some(&serde_json::json!({"hidden_size": 8})));
    assert_eq!(cp.configs.len(), 1);
    // On its own a pickle is opened, without running it: one cut short is a finding.
    let cp = open_all(&[("old.pt", b"\x80\x02}q\0(X\x01\0\0\0aq")]);
    assert_eq!(cp.format, Format::Pickle);
    assert_eq!(codes(&cp), vec!["pickle.stopped"]);
}

fn split(no: u16, count: u16, total: i32, tensors: &[&str]) -> Vec<u8> {
    let mut g = Gguf::header(3, tensors.len() as u64, 3);
    g.str(b"split.no").u32(2).raw(&no.to_le_bytes());
    g.str(b"split.count").u32(2).raw(&count.to_le_bytes());
    g.str(b"split.tensors.count").u32(5).raw(&total.to_le_bytes());
    for (i, t) in tensors.iter().enumerate() {
        g.tensor(t, &[8], 0, i as u64 * 32);
    }
    g.pad(32).data(32 * tensors.len());
    g.build()
}

#[test]
fn gguf_split_sets_are_checked() {
    let (a, b, c) = (split(0, 3, 4, &["a", "b"]), split(1, 3, 4, &["c"]), split(2, 3, 4, &["d"]));
    let cp = open_all(&[("m-00003-of-00003.gguf", &c), ("m-00001-of-00003.gguf", &a), ("m-00002-of-00003.gguf", &b)]);
    assert!(cp.findings.is_empty(), "{:?}", cp.findings);
    assert_eq!(cp.tensors.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["a", "b", "c", "d"]);

    let cp = open_all(&[("m-00001-of-00003.gguf", &a), ("m-00003-of-00003.gguf", &c)]);
    assert_eq!(codes(&cp), vec![rules::MISSING_SHARD.code]);

    let wrong = split(1, 3, 9, &["c"]);
    let cp = open_all(&[("1.gguf", &a), ("2.gguf", &wrong), ("3.gguf", &c)]);
    assert_eq!(codes(&cp), vec![rules::SPLIT_MISMATCH.code]);

    let other = split(1, 2, 4, &["c"]);
    let cp = open_all(&[("1.gguf", &a), ("2.gguf", &other)]);
    assert_eq!(codes(&cp), vec![rules::SPLIT_MISMATCH.code]);

    let dup = split(0, 3, 4, &["c"]);
    let cp = open_all(&[("1.gguf", &a), ("2.gguf", &dup), ("3.gguf", &c)]);
    assert!(codes(&cp).contains(&rules::SPLIT_MISMATCH.code));
}

#[test]
fn mixed_formats_are_reported() {
    let a = shard(&["x"]);
    let g = split(0, 1, 1, &["t"]);
    let cp = open_all(&[("a.safetensors", &a), ("b.safetensors", &a), ("c.gguf", &g)]);
    assert_eq!(cp.format, Format::Safetensors);
    assert!(codes(&cp).contains(&rules::MIXED_FORMATS.code));
}

/// A GGUF of `q` elements in `qtype` and `f` elements in F32, with `general.file_type` `ft`.
fn mix(qtype: u32, q: u64, ft: u32) -> Vec<u8> {
    let mut g = Gguf::header(3, 2, 1);
    g.kv_u32("general.file_type", ft);
    let qbytes = tensorscope::engine::gguf::GgmlType(qtype).nbytes(q).unwrap();
    g.tensor("blk.0.ffn_up.weight", &[q], qtype, 0);
    g.tensor("output_norm.weight", &[256], 0, qbytes.next_multiple_of(32));
    g.pad(32).data(qbytes.next_multiple_of(32) as usize + 1024);
    g.build()
}

#[test]
fn file_name_and_file_type_are_compared_with_the_contents() {
    // 20: IQ4_NL; general.file_type 25 = MOSTLY_IQ4_NL
    let f = mix(20, 4096, 25);
    assert!(open_one("Model-7B-IQ4_NL.gguf", &f).findings.iter().all(|x| x.code != naming::NAME_TYPE_MISMATCH.code));
    let cp = open_one("Model-Q2_K.gguf", &f);
    assert_eq!(codes(&cp), vec![naming::NAME_TYPE_MISMATCH.code]);
    assert!(cp.findings[0].message.contains("IQ4_NL"), "{}", cp.findings[0].message);
    // file_type 15 = MOSTLY_Q4_K_M over IQ4_NL tensors
    let cp = open_one("model.gguf", &mix(20, 4096, 15));
    assert_eq!(codes(&cp), vec![naming::FILE_TYPE_MISMATCH.code]);
    // Q4_K_M: mostly Q4_K, the label fits
    assert!(open_one("m-Q4_K_M.gguf", &mix(12, 4096, 15)).findings.is_empty());
    // a size label far from the parameter count
    let cp = open_one("Model-70B-IQ4_NL.gguf", &f);
    assert_eq!(codes(&cp), vec![naming::NAME_SIZE_MISMATCH.code]);
}

#[test]
fn viewer_rows_filter_sort_and_group() {
    use tensorscope::engine::view::{group_by_layer, rows, Column};
    let mut g = Gguf::header(3, 4, 0);
    g.tensor("blk.10.ffn_up.weight", &[32], 0, 0);
    g.tensor("blk.2.ffn_up.weight", &[64], 0, 128);
    g.tensor("token_embd.weight", &[8], 0, 384);
    g.tensor("blk.2.attn_v.weight", &[16], 0, 416);
    g.pad(32).data(512);
    let cp = open_one("m.gguf", &g.build());
    let names = |r: &[usize]| r.iter().map(|&i| cp.tensors[i].name.clone()).collect::<Vec<_>>();
    assert_eq!(names(&rows(&cp, "blk.*.ffn*", Column::Name, false)), ["blk.2.ffn_up.weight", "blk.10.ffn_up.weight"]);
    assert_eq!(names(&rows(&cp, "", Column::Params, true))[0], "blk.2.ffn_up.weight");
    assert_eq!(names(&rows(&cp, "", Column::Params, false))[0], "token_embd.weight");
    assert_eq!(names(&rows(&cp, "WEIGHT", Column::Dtype, true)).len(), 4, "search ignores ASCII case");
    assert_eq!(rows(&cp, "", Column::Index, false), [0, 1, 2, 3], "file order");
    assert_eq!(rows(&cp, "", Column::Index, true), [3, 2, 1, 0]);
    assert_eq!(rows(&cp, "ffn", Column::Index, true), [1, 0]);
    let groups = group_by_layer(&cp, &rows(&cp, "", Column::Index, false));
    assert_eq!(groups.iter().map(|g| g.layer).collect::<Vec<_>>(), [Some(2), Some(10), None]);
    assert_eq!((groups[0].params, groups[0].bytes), (80, 320));
}

#[test]
fn metadata_remembers_its_file_and_files_their_byte_order() {
    let (a, b) = (split(0, 2, 2, &["a"]), split(1, 2, 2, &["b"]));
    let mut be = Gguf::header_be(3, 0, 1);
    be.kv_u32("x", 1);
    let cp = open_all(&[("m-00001-of-00002.gguf", &a), ("m-00002-of-00002.gguf", &b)]);
    assert_eq!(cp.meta_file.len(), cp.metadata.len());
    assert!(cp.meta_file.iter().all(|&f| f == 0), "the first file holds every key");
    assert_eq!(cp.big_endian, [false, false]);
    assert_eq!(open_one("be.gguf", &be.build()).big_endian, [true]);
}

/// Counts a file states about itself are checked against the tensors, never shown as fact.
#[test]
fn self_reported_parameter_counts_are_checked() {
    // The index's metadata.total_parameters: three F32 tensors of 2 hold 6 parameters.
    let (a, b) = (shard(&["x", "y"]), shard(&["z"]));
    let claim = |n: u64| {
        format!(
            r#"{{"metadata":{{"total_size":24,"total_parameters":{n}}},"weight_map":{{"x":"{S1}","y":"{S1}","z":"{S2}"}}}}"#
        )
        .into_bytes()
    };
    assert!(open_all(&[(S1, &a), (S2, &b), (IDX, &claim(6))]).findings.is_empty());
    let cp = open_all(&[(S1, &a), (S2, &b), (IDX, &claim(7000))]);
    assert_eq!(codes(&cp), vec![rules::PARAMETER_COUNT_MISMATCH.code]);
    assert!(
        cp.findings[0].message.contains("total_parameters 7000 but the tensors hold 6"),
        "{}",
        cp.findings[0].message
    );
    // A set missing a shard is not compared (the missing shard is the finding).
    assert_eq!(codes(&open_all(&[(S1, &a), (IDX, &claim(7000))])), vec![rules::MISSING_SHARD.code]);
    // GGUF: general.size_label against the tensors (4096 + 256 parameters).
    let label = |l: &str| {
        let mut g = Gguf::header(3, 1, 1);
        g.kv_str("general.size_label", l);
        g.tensor("blk.0.ffn_up.weight", &[4352], 0, 0);
        g.pad(32).data(4352 * 4);
        open_one("model.gguf", &g.build())
    };
    assert!(label("4.4K").findings.is_empty());
    let cp = label("70B");
    assert_eq!(codes(&cp), vec![naming::SIZE_LABEL_MISMATCH.code]);
    assert!(cp.findings[0].message.contains("says 70B parameters but the tensors hold 4352"));
}

#[test]
fn an_index_naming_thousands_of_absent_tensors_lists_the_first_thousand() {
    let a = shard(&["x"]);
    let names: Vec<String> = (0..5000).map(|i| format!("gone.{i}")).collect();
    let mut map: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), S1)).collect();
    map.push(("x", S1));
    let idx = index(8, &map);
    let cp = open_all(&[(S1, &a), (IDX, &idx)]);
    let max = tensorscope::engine::findings::MAX_PER_RULE;
    let missing: Vec<_> = cp.findings.iter().filter(|f| f.breaks(rules::MISSING_TENSOR)).collect();
    assert_eq!(missing.len(), max + 1);
    assert_eq!(missing[0].tensor.as_deref(), Some("gone.0"));
    assert!(missing[max].message.starts_with(&format!("{} more findings", 5000 - max)), "{}", missing[max].message);
    assert_eq!(cp.tensors.len(), 1);
}

/// A raw pickle of a state dict holding F32 tensors `names` of 4 elements (storages not included:
/// their data is lost, their names are what a set is checked by).
fn pickle_shard(names: &[&str]) -> Vec<u8> {
    let text = |s: &str| {
        let mut v = vec![b'X'];
        v.extend_from_slice(&(s.len() as u32).to_le_bytes());
        v.extend_from_slice(s.as_bytes());
        v
    };
    let mut p = b"\x80\x02}(".to_vec();
    for (i, n) in names.iter().enumerate() {
        p.extend(text(n));
        p.extend_from_slice(b"ctorch._utils\n_rebuild_tensor_v2\n((");
        p.extend(text("storage"));
        p.extend_from_slice(b"ctorch\nFloatStorage\n");
        p.extend(text(&i.to_string()));
        p.extend(text("cpu"));
        p.extend_from_slice(b"K\x04tQK\x00K\x04\x85K\x01\x85\x89ccollections\nOrderedDict\n)RtR");
    }
    p.extend_from_slice(b"u.");
    p
}

const P1: &str = "pytorch_model-00001-of-00002.bin";
const P2: &str = "pytorch_model-00002-of-00002.bin";
const PIDX: &str = "pytorch_model.bin.index.json";

#[test]
fn a_pickle_set_is_checked_against_its_index() {
    let (a, b) = (pickle_shard(&["x", "y"]), pickle_shard(&["z"]));
    let i = index(24, &[("x", P1), ("y", P1), ("z", P2)]);
    let cp = open_all(&[(P1, &a), (P2, &b), (PIDX, &i)]);
    assert_eq!(cp.format, Format::Pickle);
    assert_eq!(cp.tensors.len(), 3);
    let c = codes(&cp);
    for code in
        [rules::MISSING_TENSOR.code, rules::MISSING_SHARD.code, rules::WRONG_SHARD.code, rules::UNINDEXED_TENSOR.code]
    {
        assert!(!c.contains(&code), "{code} in {c:?}");
    }

    // A shard not given, a tensor in the wrong shard, one the index does not list.
    let i = index(24, &[("x", P2), ("z", P2), ("w", "pytorch_model-00003-of-00003.bin")]);
    let cp = open_all(&[(P1, &a), (P2, &b), (PIDX, &i)]);
    let c = codes(&cp);
    for code in [rules::WRONG_SHARD.code, rules::MISSING_SHARD.code, rules::UNINDEXED_TENSOR.code] {
        assert!(c.contains(&code), "{code} in {c:?}");
    }
    let missing = cp.findings.iter().find(|f| f.breaks(rules::MISSING_SHARD)).unwrap();
    assert!(missing.message.contains("pytorch_model-00003-of-00003.bin"), "{}", missing.message);
}

#[test]
fn a_pickle_index_alone_or_shards_without_one_show_what_is_missing() {
    let i = index(24, &[("x", P1), ("z", P2)]);
    let cp = open_all(&[(PIDX, &i)]);
    assert_eq!(cp.format, Format::Pickle);
    assert_eq!(cp.findings.iter().filter(|f| f.breaks(rules::MISSING_SHARD)).count(), 2, "{:?}", codes(&cp));

    let a = pickle_shard(&["x"]);
    let cp = open_all(&[(P1, &a)]);
    assert!(codes(&cp).contains(&rules::MISSING_SHARD.code), "{:?}", codes(&cp));
}

#[test]
fn next_to_safetensors_shards_a_pickle_index_is_ignored_and_theirs_is_used() {
    let (a, b) = (shard(&["x"]), shard(&["z"]));
    let st = index(16, &[("x", S1), ("z", S2)]);
    let pt = index(16, &[("x", P1), ("z", P2)]);
    let cp = open_all(&[(S1, &a), (S2, &b), (IDX, &st), (PIDX, &pt)]);
    assert_eq!(cp.format, Format::Safetensors);
    let c = codes(&cp);
    assert!(!c.contains(&rules::MISSING_SHARD.code) && !c.contains(&rules::WRONG_SHARD.code), "{c:?}");
    let ignored = cp.findings.iter().find(|f| f.message.contains(PIDX)).expect("the pickle index is named");
    assert_eq!(ignored.rule(), rules::IGNORED_FILE);
}
