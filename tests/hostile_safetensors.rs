//! Hostile and damaged safetensors headers: each rule of the reference `validate()` becomes a
//! finding naming it, and the rest of the file is still shown.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::*;
use tensorscope::engine::findings::{Rule, Severity};
use tensorscope::engine::model::{Dtype, MetaValue};
use tensorscope::engine::safetensors::{rules, Dtype as St};

/// Opens `bytes` and checks that they break `rule`, at its severity.
fn has(bytes: &[u8], rule: Rule) -> tensorscope::engine::model::Checkpoint {
    let cp = open_one("x.safetensors", bytes);
    assert!(cp.findings.iter().any(|f| f.rule() == rule), "expected {rule:?}, got {:?}", cp.findings);
    cp
}

#[test]
fn a_valid_file_with_every_dtype_has_no_findings() {
    let mut entries = Vec::new();
    let mut at = 0u64;
    for d in St::all() {
        let n = d.nbytes(8).unwrap();
        entries.push(format!(
            r#""t.{}":{{"dtype":"{}","shape":[2,4],"data_offsets":[{at},{}]}}"#,
            d.name(),
            d.name(),
            at + n
        ));
        at += n;
    }
    let header = format!(r#"{{"__metadata__":{{"format":"pt"}},{}}}"#, entries.join(","));
    let cp = open_one("x.safetensors", &safetensors(&header, at as usize));
    assert!(cp.findings.is_empty(), "{:?}", cp.findings);
    assert_eq!(cp.tensors.len(), 22);
    assert_eq!(cp.meta("format"), Some(&MetaValue::Text("pt".into())));
    assert_eq!(cp.tensor("t.F4").unwrap().nbytes, 4);
    assert_eq!(cp.tensor("t.F6_E3M2").unwrap().nbytes, 6);
}

#[test]
fn header_padding_with_spaces_is_allowed_and_empty_headers_are_valid() {
    let cp =
        open_one("x.safetensors", &safetensors(r#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}      "#, 4));
    assert!(cp.findings.is_empty(), "{:?}", cp.findings);
    assert!(open_one("x.safetensors", &safetensors("{}", 0)).findings.is_empty());
}

#[test]
fn header_length_rules() {
    has(&[1, 2, 3], rules::TRUNCATED);
    let mut b = (200_000_000u64).to_le_bytes().to_vec();
    b.extend_from_slice(b"{}");
    has(&b, rules::HEADER_TOO_LARGE);
    let mut b = (50u64).to_le_bytes().to_vec();
    b.extend_from_slice(b"{}");
    has(&b, rules::HEADER_PAST_END);
}

#[test]
fn header_text_rules() {
    let mut b = safetensors("{\"a?\":1}", 0);
    b[11] = 0xff;
    has(&b, rules::INVALID_UTF8);
    // The reference accepts JSON whitespace before the object (a warning here); NUL is not JSON.
    let cp = has(&safetensors("\t\n {}\r ", 0), rules::LEADING_WHITESPACE);
    assert!(!tensorscope::engine::findings::has_error(&cp.findings), "{:?}", cp.findings);
    has(&safetensors("\0{}", 0), rules::HEADER_NOT_OBJECT);
    has(&safetensors("{}\0\0", 0), rules::INVALID_JSON);
    has(&safetensors("[1,2]", 0), rules::HEADER_NOT_OBJECT);
    let cp = has(&safetensors("{\"a\": {\"dtype\": ", 0), rules::INVALID_JSON);
    assert!(cp.findings[0].message.contains("byte"), "{}", cp.findings[0].message);
}

#[test]
fn duplicate_keys_are_reported() {
    // As in the reference, the last entry of a repeated name is the one used.
    let h =
        r#"{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}"#;
    let cp = has(&safetensors(h, 1), rules::DUPLICATE_KEY_MINOR);
    assert_eq!(cp.tensors.len(), 1);
    assert_eq!(cp.tensors[0].shape, vec![1]);
    assert!(!tensorscope::engine::findings::has_error(&cp.findings), "{:?}", cp.findings);
    let h = r#"{"__metadata__":{"a":"1"},"__metadata__":{"a":"2"}}"#;
    let cp = has(&safetensors(h, 0), rules::DUPLICATE_KEY);
    assert!(tensorscope::engine::findings::has_error(&cp.findings));
}

#[test]
fn element_counts_whose_bits_overflow_are_overflows() {
    // The reference's own ValidationOverflow case.
    let h = r#"{"test":{"dtype":"I32","shape":[2,9223372036854775807],"data_offsets":[0,16]}}"#;
    has(&safetensors(h, 16), rules::ELEM_COUNT_OVERFLOW);
}

#[test]
fn metadata_must_hold_strings() {
    let h = r#"{"__metadata__":{"n":1,"s":"x"}}"#;
    let cp = has(&safetensors(h, 0), rules::METADATA_NOT_STRINGS);
    assert_eq!(cp.meta("s"), Some(&MetaValue::Text("x".into())));
    has(&safetensors(r#"{"__metadata__":[1]}"#, 0), rules::METADATA_NOT_STRINGS);
    assert!(open_one("x.safetensors", &safetensors(r#"{"__metadata__":null}"#, 0)).findings.is_empty());
}

#[test]
fn malformed_entries_are_reported_and_the_rest_shown() {
    let h = r#"{"bad":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]},"good":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}"#;
    let cp = has(&safetensors(h, 4), rules::BAD_TENSOR_ENTRY);
    assert_eq!(cp.findings[0].tensor.as_deref(), Some("bad"));
    assert_eq!(cp.tensors.len(), 1);
    has(&safetensors(r#"{"x":{"dtype":"F32","shape":[1],"data_offsets":[0]}}"#, 4), rules::BAD_TENSOR_ENTRY);
    has(&safetensors(r#"{"x":7}"#, 0), rules::BAD_TENSOR_ENTRY);
    has(&safetensors(r#"{"x":{"shape":[1],"data_offsets":[0,4]}}"#, 4), rules::BAD_TENSOR_ENTRY);
    has(
        &safetensors(r#"{"x":{"dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4]}}"#, 4),
        rules::BAD_TENSOR_ENTRY,
    );
}

/// Unknown fields are read as the reference reads them (as JSON values): kept out of the tensor,
/// but a number out of range or nesting past the reference's depth limit makes the file invalid.
#[test]
fn unknown_entry_fields_are_judged_as_the_reference_judges_them() {
    let entry = |extra: &str| format!(r#"{{"a":{{"dtype":"U8","shape":[4],"x":{extra},"data_offsets":[0,4]}}}}"#);
    let fine = open_one("x.safetensors", &safetensors(&entry(r#"{"note":[1,2.5,"s",null]}"#), 4));
    assert!(fine.findings.is_empty(), "{:?}", fine.findings);
    assert_eq!(fine.tensors[0].shape, [4]);
    for big in ["1e400", "-1e400", "1e309"] {
        has(&safetensors(&entry(big), 4), rules::INVALID_JSON);
    }
    let nested = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    assert!(open_one("x.safetensors", &safetensors(&entry(&nested(125)), 4)).findings.is_empty());
    has(&safetensors(&entry(&nested(126)), 4), rules::BAD_TENSOR_ENTRY);
    has(&safetensors(&entry(&nested(100_000)), 4), rules::INVALID_JSON);
    // The reference's derived entry struct also reads its three fields from an array, in order.
    let cp = open_one("x.safetensors", &safetensors(r#"{"a":["U8",[4],[0,4]]}"#, 4));
    assert!(cp.findings.is_empty(), "{:?}", cp.findings);
    assert_eq!(cp.tensors[0].shape, [4]);
    has(&safetensors(r#"{"a":["U8",[4]]}"#, 4), rules::BAD_TENSOR_ENTRY);
    // And a dtype as serde's other spelling of a unit variant, a map of its name to null.
    let cp =
        open_one("x.safetensors", &safetensors(r#"{"a":{"dtype":{"U8":null},"shape":[4],"data_offsets":[0,4]}}"#, 4));
    assert!(cp.findings.is_empty(), "{:?}", cp.findings);
    assert_eq!(cp.tensors[0].dtype.name(), "U8");
    for bad in [r#"{"U8":1}"#, r#"{}"#, r#"{"U8":null,"F32":null}"#, "7"] {
        let h = format!(r#"{{"a":{{"dtype":{bad},"shape":[4],"data_offsets":[0,4]}}}}"#);
        has(&safetensors(&h, 4), rules::BAD_TENSOR_ENTRY);
    }
    has(&safetensors(r#"{"a":["U8",[4],[0,4],1]}"#, 4), rules::BAD_TENSOR_ENTRY);
}

#[test]
fn unknown_dtypes_are_shown_not_fatal() {
    let h =
        r#"{"x":{"dtype":"F12","shape":[2],"data_offsets":[0,3]},"y":{"dtype":"U8","shape":[1],"data_offsets":[3,4]}}"#;
    let cp = has(&safetensors(h, 4), rules::UNKNOWN_DTYPE);
    assert_eq!(cp.tensor("x").unwrap().dtype, Dtype::Unknown("F12".into()));
    assert_eq!(cp.tensors.len(), 2);
}

#[test]
fn offset_rules_of_validate() {
    let t = |name: &str, dtype: &str, shape: &str, b: u64, e: u64| {
        format!(r#""{name}":{{"dtype":"{dtype}","shape":{shape},"data_offsets":[{b},{e}]}}"#)
    };
    let cases = [
        (vec![t("a", "U8", "[4]", 4, 8)], 8, rules::GAP_IN_DATA),
        (vec![t("a", "U8", "[4]", 0, 4), t("b", "U8", "[4]", 2, 6)], 6, rules::OVERLAPPING_DATA),
        (vec![t("a", "U8", "[4]", 4, 0)], 4, rules::INVERTED_OFFSETS),
        (vec![t("a", "F32", "[4]", 0, 8)], 8, rules::SIZE_MISMATCH),
        (vec![t("a", "F4", "[3]", 0, 2)], 2, rules::MISALIGNED_SLICE),
        (vec![t("a", "F6_E2M3", "[2]", 0, 2)], 2, rules::MISALIGNED_SLICE),
        (vec![t("a", "U8", "[4294967296,4294967296]", 0, 8)], 8, rules::ELEM_COUNT_OVERFLOW),
        (vec![t("a", "U8", "[4]", 0, 4)], 10, rules::TRAILING_BYTES),
        (vec![t("a", "U8", "[4]", 0, 4)], 2, rules::TRUNCATED),
        (vec![t("a", "U8", "[4]", 0, 4)], 2, rules::DATA_OUT_OF_BOUNDS),
    ];
    for (entries, data, code) in cases {
        let h = format!("{{{}}}", entries.join(","));
        let cp = has(&safetensors(&h, data), code);
        assert!(cp.findings.iter().all(|f| f.severity == Severity::Error));
        assert!(!cp.tensors.is_empty(), "{code:?}: tensors still shown");
    }
}

#[test]
fn entries_out_of_order_in_the_header_are_fine() {
    let h =
        r#"{"b":{"dtype":"U8","shape":[2],"data_offsets":[2,4]},"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}"#;
    let cp = open_one("x.safetensors", &safetensors(h, 4));
    assert!(cp.findings.is_empty(), "{:?}", cp.findings);
    assert_eq!(cp.tensors[0].name, "b", "header order is kept");
}

#[test]
fn bytes_after_the_header_are_never_read_as_its_json() {
    // The first read takes more than the header (the file kind is sniffed first): the data's
    // bytes must not be parsed as JSON, however JSON-like they are.
    let mut b = safetensors(r#"{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}"#, 0);
    b.extend_from_slice(br#"}, x"#);
    let cp = open_one("x.safetensors", &b);
    assert!(cp.findings.is_empty(), "{:?}", cp.findings);
    assert_eq!(cp.tensors.len(), 1);
    // Found by fuzzing: a 1-byte header "{" before data that starts a string.
    let mut b = 1u64.to_le_bytes().to_vec();
    b.extend_from_slice(b"{\"_d-\xba__");
    tensorscope::engine::fuzz::decode_as("x.safetensors", &b);
    let cp = open_one("x.safetensors", &b);
    assert!(codes(&cp).contains(&rules::INVALID_JSON.code), "{:?}", cp.findings);
}

#[test]
fn a_rule_broken_once_per_entry_lists_its_first_thousand_findings_and_counts_the_rest() {
    let entries: Vec<String> = (0..30_000).map(|i| format!(r#""x{i}":7"#)).collect();
    let h = format!("{{{},\"ok\":{{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}}}", entries.join(","));
    let cp = has(&safetensors(&h, 4), rules::BAD_TENSOR_ENTRY);
    let max = tensorscope::engine::findings::MAX_PER_RULE;
    let bad: Vec<_> = cp.findings.iter().filter(|f| f.breaks(rules::BAD_TENSOR_ENTRY)).collect();
    assert_eq!(bad.len(), max + 1);
    assert_eq!(bad[0].tensor.as_deref(), Some("x0"), "the first ones are listed");
    assert!(bad[max].message.starts_with(&format!("{} more findings", 30_000 - max)), "{}", bad[max].message);
    assert_eq!(cp.tensors.len(), 1, "the good entry is still shown");
}

#[test]
fn metadata_is_read_entry_by_entry_its_first_entries_kept() {
    let n = tensorscope::engine::model::MAX_METADATA_ENTRIES + 300;
    let entries: Vec<String> = (0..n).map(|i| format!(r#""m{i}":"v""#)).collect();
    let h = format!(
        r#"{{"__metadata__":{{"format":"pt","x":7,"format":"np",{}}},"t":{{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}}}"#,
        entries.join(",")
    );
    let cp = has(&safetensors(&h, 4), rules::TOO_MUCH_METADATA);
    assert_eq!(cp.meta("format"), Some(&MetaValue::Text("np".into())), "a repeated key keeps its last value");
    assert_eq!(cp.metadata[0].0, "format", "and its first place");
    assert_eq!(cp.meta("x"), Some(&MetaValue::Text("7".into())));
    assert_eq!(cp.metadata.len(), tensorscope::engine::model::MAX_METADATA_ENTRIES);
    let f = cp.findings.iter().find(|f| f.breaks(rules::TOO_MUCH_METADATA)).unwrap();
    assert!(f.message.contains("302 more entries"), "{}", f.message);
    assert!(codes(&cp).contains(&rules::METADATA_NOT_STRINGS.code));
    assert_eq!(cp.tensors.len(), 1);
}
