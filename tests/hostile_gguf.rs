//! Hostile and damaged GGUF headers: each rule broken becomes a finding naming it, nothing
//! panics or allocates what the file merely claims, and what could be read is still shown.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::*;
use tensorscope::engine::findings::{Rule, Severity};
use tensorscope::engine::gguf::{rules, Value};
use tensorscope::engine::model::{Dtype, MetaValue};
use tensorscope::engine::open::Parsed;

fn header(bytes: &[u8]) -> tensorscope::engine::gguf::Header {
    match parse("x.gguf", bytes, 1 << 20) {
        Parsed::Gguf(h) => h,
        other => panic!("not GGUF: {other:?}"),
    }
}

/// Opens `bytes` and checks that they break `rule`, at its severity.
fn has(bytes: &[u8], rule: Rule) -> tensorscope::engine::model::Checkpoint {
    let cp = open_one("x.gguf", bytes);
    assert!(cp.findings.iter().any(|f| f.rule() == rule), "expected {rule:?}, got {:?}", cp.findings);
    cp
}

/// A valid file: one key, `tensors` F32 tensors of 8 elements each, padded to 32.
fn valid(tensors: usize) -> Gguf {
    let mut g = Gguf::header(3, tensors as u64, 1);
    g.kv_str("general.architecture", "llama");
    for i in 0..tensors {
        g.tensor(&format!("t{i}"), &[8], 0, (i * 32) as u64);
    }
    g.pad(32).data(32 * tensors);
    g
}

#[test]
fn a_valid_file_has_no_findings() {
    let cp = open_one("x.gguf", &valid(3).build());
    assert!(cp.findings.is_empty(), "{:?}", cp.findings);
    assert_eq!(cp.tensors.len(), 3);
    assert_eq!(cp.tensors[1].offset, Some(header(&valid(3).build()).data_start.unwrap() + 32));
}

#[test]
fn wrong_magic_is_reported() {
    let mut b = valid(1).build();
    b[..4].copy_from_slice(b"GGUX");
    has(&b, rules::BAD_MAGIC);
}

#[test]
fn version_1_is_recognised_and_other_versions_rejected() {
    let mut b = valid(1).build();
    b[4..8].copy_from_slice(&1u32.to_le_bytes());
    let cp = has(&b, rules::UNSUPPORTED_VERSION);
    assert!(cp.findings[0].message.contains("version 1"));
    b[4..8].copy_from_slice(&4u32.to_le_bytes());
    has(&b, rules::UNSUPPORTED_VERSION);
    b[4..8].copy_from_slice(&2u32.to_le_bytes());
    assert!(open_one("x.gguf", &b).findings.is_empty(), "v2 has v3's layout");
}

#[test]
fn big_endian_files_are_read() {
    let mut g = Gguf::header_be(3, 1, 1);
    g.kv_u32("general.alignment", 32).tensor("w", &[32, 2], 0, 0).pad(32).data(256);
    let h = header(&g.build());
    assert!(h.big_endian);
    assert_eq!(h.version, 3);
    assert_eq!(h.get("general.alignment"), Some(&Value::U32(32)));
    assert_eq!(h.tensors[0].ne, vec![32, 2]);
    let codes: Vec<&str> = h.findings.iter().map(|f| f.code).collect();
    assert_eq!(
        codes,
        [rules::BIG_ENDIAN.code],
        "read, with a warning that llama.cpp refuses it on little-endian machines"
    );
    assert_eq!(h.findings[0].severity, tensorscope::engine::findings::Severity::Warning);
    // The decoders read little-endian only: the values are not offered rather than read wrong.
    let cp = open_one("x.gguf", &g.build());
    assert_eq!(cp.tensors[0].data, Err(tensorscope::engine::model::Lost::BigEndian));
}

#[test]
fn counts_the_file_cannot_hold_are_refused_before_allocating() {
    let mut g = Gguf::header(3, u64::MAX, u64::MAX);
    g.data(64);
    has(&g.build(), rules::COUNT_EXCEEDS_FILE);
    let mut g = Gguf::header(3, 1_000_000, 0);
    g.data(100);
    has(&g.build(), rules::COUNT_EXCEEDS_FILE);
}

#[test]
fn huge_string_and_array_lengths_are_refused() {
    let mut g = Gguf::header(3, 0, 1);
    g.str(b"k").u32(8).u64(u64::MAX - 3).data(16);
    let cp = has(&g.build(), rules::TRUNCATED);
    assert!(cp.findings[0].message.contains("offset 24"), "{}", cp.findings[0].message);

    let mut g = Gguf::header(3, 0, 1);
    g.str(b"k").u32(9).u32(8).u64(1 << 60).data(64);
    has(&g.build(), rules::COUNT_EXCEEDS_FILE);

    let mut g = Gguf::header(3, 0, 1);
    g.u64(u64::MAX).data(64);
    has(&g.build(), rules::TRUNCATED);
}

#[test]
fn string_values_over_the_limit_are_stepped_over_and_the_rest_is_read() {
    use tensorscope::engine::range::ByteRange;
    use tensorscope::engine::step::{Decoder, Step};
    let n = tensorscope::engine::gguf::MAX_STRING_BYTES + 1;
    let mut g = Gguf::header(3, 1, 3);
    g.kv_u32("a", 1).str(b"tokenizer.huggingface.json").u32(8).u64(n);
    let mut b = g.build();
    let string_at = b.len() as u64;
    b.resize(b.len() + n as usize, b'a');
    let mut tail = Gguf::default();
    tail.kv_u32("c", 2).tensor("w", &[8], 0, 0);
    b.extend_from_slice(&tail.build());
    b.resize(b.len().next_multiple_of(32) + 32, 0);

    let cp = open_one("x.gguf", &b);
    assert_eq!(codes(&cp), [rules::STRING_NOT_KEPT.code], "{:?}", cp.findings);
    assert_eq!(cp.findings[0].severity, Severity::Warning);
    assert!(cp.findings[0].message.contains(&format!("offset {} is a {n}-byte string", string_at - 8)));
    assert_eq!(cp.meta("tokenizer.huggingface.json"), Some(&MetaValue::Gguf(Value::String(String::new()))));
    assert_eq!(cp.meta("c"), Some(&MetaValue::Gguf(Value::U32(2))));
    assert_eq!(cp.tensors.len(), 1);
    assert!(cp.tensors[0].data.is_ok(), "{:?}", cp.tensors[0].data);

    // The string's bytes are not read: only the header around it.
    let mut d = tensorscope::engine::open::FileDecoder::new("x.gguf", b.len() as u64);
    let mut read = 0u64;
    while let Step::Need(r) = d.step() {
        let r: ByteRange = r;
        read += r.len();
        d.feed(r.start, &b[r.start as usize..r.end as usize]).unwrap();
    }
    assert!(read < 1 << 20, "read {read} bytes");

    // Cut anywhere around the length, it parses the same.
    for cut in string_at - 12..string_at + 2 {
        let Parsed::Gguf(h) = parse_cut("x.gguf", &b, &[cut]) else { panic!() };
        assert_eq!(h.tensors.len(), 1, "cut at {cut}");
    }
}

#[test]
fn keys_and_tensor_names_over_the_limit_are_stepped_over_and_the_rest_is_read() {
    let n = tensorscope::engine::gguf::MAX_KEY_BYTES as usize + 1;
    // A one-byte character, then two-byte ones: the 1024 bytes kept end inside one.
    let long = |c: char| format!("{c}{}", "é".repeat(n / 2));
    let (key, name) = (long('k'), long('t'));
    let mut g = Gguf::header(3, 2, 3);
    g.kv_u32("a", 1);
    g.str(key.as_bytes()).u32(9).u32(4).u64(3).u32(7).u32(8).u32(9);
    g.kv_u32("c", 2);
    g.tensor("w", &[8], 0, 0).tensor(&name, &[8], 0, 32).pad(32).data(64);
    let b = g.build();
    let cp = open_one("x.gguf", &b);
    let mut got = codes(&cp);
    got.sort_unstable();
    assert_eq!(
        got,
        [rules::NAME_NOT_KEPT.code, rules::NAME_NOT_KEPT.code, rules::NAME_TOO_LONG.code],
        "{:?}",
        cp.findings
    );
    let said = |what: &str| cp.findings.iter().any(|f| f.message.contains(what));
    assert!(said(&format!("key at offset 41 is {} bytes", key.len())), "{:?}", cp.findings);
    // The array after the long key is read, and so is everything after it.
    let (k, v) = &cp.metadata[1];
    assert!(k.starts_with("kéé") && k.ends_with('…') && k.len() < 1100, "{k}");
    assert!(matches!(v, MetaValue::Gguf(Value::Array(..))), "{v:?}");
    assert_eq!(cp.meta("c"), Some(&MetaValue::Gguf(Value::U32(2))));
    assert_eq!(cp.tensors.len(), 2);
    assert!(cp.tensors[1].name.starts_with("téé") && cp.tensors[1].name.ends_with('…'));
    assert_eq!(cp.tensors[1].offset, Some(cp.tensors[0].offset.unwrap() + 32));
    assert!(cp.tensors.iter().all(|t| t.data.is_ok()));
    // Cut anywhere around the long key and name, it parses the same.
    let name_at = b.windows(8).position(|w| w == "téééééé".as_bytes()[..8].as_ref()).unwrap() as u64;
    for cut in (30..60).chain(name_at - 10..name_at + 10).chain([41 + 8 + 1024, 41 + 8 + 1025]) {
        let Parsed::Gguf(h) = parse_cut("x.gguf", &b, &[cut]) else { panic!() };
        assert_eq!((h.metadata.len(), h.tensors.len()), (3, 2), "cut at {cut}");
        assert_eq!(h.tensors[1].name, cp.tensors[1].name, "cut at {cut}");
    }
    // A name longer than what is left of the file still stops the parse.
    let mut g = Gguf::header(3, 0, 1);
    g.u64(n as u64).data(100);
    has(&g.build(), rules::TRUNCATED);
}

#[test]
fn unknown_value_types_stop_parsing_but_keep_what_was_read() {
    let mut g = Gguf::header(3, 0, 3);
    g.kv_u32("a", 1).str(b"b").u32(13).u32(0).kv_u32("c", 2).data(8);
    let cp = has(&g.build(), rules::BAD_VALUE_TYPE);
    assert_eq!(cp.metadata.len(), 1);
    assert_eq!(cp.meta("a"), Some(&MetaValue::Gguf(Value::U32(1))));

    let mut g = Gguf::header(3, 0, 1);
    g.str(b"arr").u32(9).u32(77).u64(1).data(8);
    has(&g.build(), rules::BAD_VALUE_TYPE);
}

#[test]
fn arrays_nested_too_deep_are_refused() {
    let mut g = Gguf::header(3, 0, 1);
    g.str(b"deep").u32(9);
    for _ in 0..20 {
        g.u32(9).u64(1);
    }
    g.u32(4).u64(0).data(8);
    has(&g.build(), rules::ARRAY_TOO_DEEP);
}

#[test]
fn nested_arrays_are_read_and_flagged_as_refused_by_llama_cpp() {
    let mut g = Gguf::header(3, 0, 1);
    g.str(b"n").u32(9).u32(9).u64(2);
    g.u32(4).u64(2).u32(1).u32(2);
    g.u32(8).u64(1).str(b"x");
    let h = header(&g.build());
    let codes: Vec<&str> = h.findings.iter().map(|f| f.code).collect();
    assert_eq!(codes, [rules::NESTED_ARRAY.code]);
    let Some(Value::Array(a)) = h.get("n") else { panic!() };
    assert_eq!(a.len, 2);
    let Value::Array(inner) = &a.items[1] else { panic!() };
    assert_eq!(inner.items, vec![Value::String("x".into())]);
}

#[test]
fn big_arrays_keep_length_first_items_and_span() {
    let mut g = Gguf::header(3, 0, 2);
    g.str(b"tokens").u32(9).u32(8).u64(1000);
    let start = g.bytes.len() as u64;
    for i in 0..1000 {
        g.str(format!("tok{i}").as_bytes());
    }
    let end = g.bytes.len() as u64;
    g.str(b"scores").u32(9).u32(6).u64(100_000);
    g.data(400_000);
    let h = header(&g.build());
    assert!(h.findings.is_empty(), "{:?}", h.findings);
    let Some(Value::Array(a)) = h.get("tokens") else { panic!() };
    assert_eq!((a.len, a.items.len(), a.span.start, a.span.end), (1000, 64, start, end));
    assert_eq!(a.items[63], Value::String("tok63".into()));
    let Some(Value::Array(s)) = h.get("scores") else { panic!() };
    assert_eq!((s.len, s.items.len()), (100_000, 64));
    // A string array also keeps its last 64 items (a vocabulary's end); others keep none.
    let texts = |v: &[Value]| v.iter().map(|x| x.as_str().unwrap().to_owned()).collect::<Vec<_>>();
    assert_eq!(texts(&a.tail), (936..1000).map(|i| format!("tok{i}")).collect::<Vec<_>>());
    assert!(s.tail.is_empty());
}

#[test]
fn string_array_tails_are_the_items_past_the_head_each_kept_to_its_first_4_kib() {
    for (len, tail) in [(64u64, 0..0), (65, 64..65), (100, 64..100), (128, 64..128), (129, 65..129)] {
        let mut g = Gguf::header(3, 0, 1);
        g.str(b"tokens").u32(9).u32(8).u64(len);
        for i in 0..len {
            // The last one long: 64 KiB, of which the tail keeps 4 KiB.
            let text = if i + 1 == len { "x".repeat(64 << 10) } else { format!("tok{i}") };
            g.str(text.as_bytes());
        }
        let h = header(&g.build());
        let Some(Value::Array(a)) = h.get("tokens") else { panic!() };
        assert_eq!(a.items.len() as u64, len.min(64), "{len}");
        let ids: Vec<u64> = tail.clone().collect();
        assert_eq!(a.tail.len(), ids.len(), "{len}");
        for (v, id) in a.tail.iter().zip(ids) {
            let want = if id + 1 == len { "x".repeat(4 << 10) } else { format!("tok{id}") };
            assert_eq!(v.as_str(), Some(want.as_str()), "{len}: item {id}");
        }
    }
}

#[test]
fn duplicate_keys_are_reported_and_the_first_kept() {
    let mut g = Gguf::header(3, 0, 2);
    g.kv_u32("k", 1).kv_u32("k", 2);
    let cp = has(&g.build(), rules::DUPLICATE_KEY);
    assert_eq!(cp.meta("k"), Some(&MetaValue::Gguf(Value::U32(1))));
}

#[test]
fn bad_alignment_is_reported() {
    for bad in [0u32, 3, 48] {
        let mut g = Gguf::header(3, 0, 1);
        g.kv_u32("general.alignment", bad);
        let cp = has(&g.build(), rules::BAD_ALIGNMENT);
        assert_eq!(cp.findings[0].severity, Severity::Error);
    }
    // A power of two under 8: llama.cpp takes it, the spec does not.
    let mut g = Gguf::header(3, 1, 1);
    g.kv_u32("general.alignment", 4).tensor("t", &[1], 0, 0).pad(4).data(4);
    let cp = has(&g.build(), rules::BAD_ALIGNMENT_MINOR);
    assert_eq!(cp.findings[0].severity, Severity::Warning);
    assert!(cp.tensors[0].data.is_ok());
    let mut g = Gguf::header(3, 0, 1);
    g.str(b"general.alignment").u32(10).u64(64);
    let cp = has(&g.build(), rules::BAD_ALIGNMENT);
    assert!(cp.findings[0].message.contains("found u64 64;"), "{}", cp.findings[0].message);
}

#[test]
fn custom_alignment_places_the_data() {
    let mut g = Gguf::header(3, 2, 1);
    g.kv_u32("general.alignment", 256).tensor("a", &[8], 0, 0).tensor("b", &[8], 0, 256);
    g.pad(256).data(512);
    let h = header(&g.build());
    assert!(h.findings.is_empty(), "{:?}", h.findings);
    assert_eq!(h.data_start.unwrap() % 256, 0);
}

#[test]
fn tensor_info_rules_of_ggml() {
    let name64 = "n".repeat(64);
    let cases: [(Rule, &str, &[u64], u32, u64); 8] = [
        (rules::NAME_TOO_LONG, &name64, &[8], 0, 0),
        (rules::TOO_MANY_DIMS, "t", &[1, 1, 1, 1, 8], 0, 0),
        (rules::NEGATIVE_DIM, "t", &[8, u64::MAX], 0, 0),
        (rules::ELEM_COUNT_OVERFLOW, "t", &[1 << 32, 1 << 32], 0, 0),
        (rules::REMOVED_TYPE, "t", &[32], 4, 0),
        (rules::ROW_NOT_BLOCK_MULTIPLE, "t", &[100, 2], 12, 0),
        (rules::MISALIGNED_OFFSET, "t", &[8], 0, 4),
        (rules::GAP_IN_DATA, "t", &[8], 0, 32),
    ];
    for (code, name, ne, ggml_type, offset) in cases {
        let mut g = Gguf::header(3, 1, 0);
        g.tensor(name, ne, ggml_type, offset);
        g.pad(32).data(128);
        let cp = has(&g.build(), code);
        let f = cp.findings.iter().find(|f| f.breaks(code)).unwrap();
        assert_eq!((f.severity, f.tensor.as_deref().is_some()), (Severity::Error, true), "{code:?}");
        assert_eq!(cp.tensors.len(), 1, "{code:?}: the tensor is still listed");
    }
}

#[test]
fn duplicate_and_overlapping_tensors_are_reported() {
    let mut g = Gguf::header(3, 2, 0);
    g.tensor("t", &[8], 0, 0).tensor("t", &[8], 0, 32).pad(32).data(64);
    has(&g.build(), rules::DUPLICATE_TENSOR);
    let mut g = Gguf::header(3, 2, 0);
    g.tensor("a", &[16], 0, 0).tensor("b", &[8], 0, 32).pad(32).data(96);
    has(&g.build(), rules::OVERLAPPING_DATA);
}

#[test]
fn unknown_type_ids_are_shown_not_fatal() {
    let mut g = Gguf::header(3, 2, 0);
    g.tensor("odd", &[8], 99, 0).tensor("next", &[8], 0, 32).pad(32).data(64);
    let cp = has(&g.build(), rules::UNKNOWN_TYPE);
    assert_eq!(cp.tensors[0].dtype, Dtype::Ggml(tensorscope::engine::gguf::GgmlType(99)));
    assert_eq!(cp.tensors[0].dtype.name(), "type 99");
    assert_eq!(cp.tensors[1].name, "next");
    assert_eq!(codes(&cp), vec![rules::UNKNOWN_TYPE.code], "the next offset is not blamed");
}

#[test]
fn data_past_the_end_and_trailing_bytes_are_reported() {
    let mut b = valid(2).build();
    b.truncate(b.len() - 10);
    let cp = has(&b, rules::DATA_OUT_OF_BOUNDS);
    assert_eq!(cp.findings[0].tensor.as_deref(), Some("t1"));
    let mut b = valid(2).build();
    b.extend_from_slice(&[0; 100]);
    let cp = has(&b, rules::TRAILING_BYTES);
    assert_eq!(cp.findings[0].severity, Severity::Warning);
}

#[test]
fn a_truncated_header_still_shows_what_was_read() {
    let full = valid(3).build();
    let cut = 24 + 8 + 20 + 4 + 8 + 5 + (8 + 2 + 4 + 8 + 4 + 8) + 10;
    let cp = has(&full[..cut], rules::TRUNCATED);
    assert_eq!(cp.metadata.len(), 1);
    assert_eq!(cp.tensors.len(), 1);
    for n in 0..full.len() {
        let cp = open_one("x.gguf", &full[..n]);
        assert!(!cp.findings.is_empty(), "a file cut at {n} bytes has findings");
    }
}

#[test]
fn invalid_utf8_and_odd_bools_are_reported() {
    let mut g = Gguf::header(3, 0, 2);
    g.str(b"s").u32(8).str(b"\xff\xfe").str(b"b").u32(7).raw(&[2]);
    let cp = open_one("x.gguf", &g.build());
    assert_eq!(codes(&cp), vec![rules::INVALID_UTF8.code, rules::BAD_BOOL.code]);
    assert_eq!(cp.meta("s"), Some(&MetaValue::Gguf(Value::String("\u{fffd}\u{fffd}".into()))));

    // In arrays too, once per array, with the first offender; items past those kept count.
    let mut g = Gguf::header(3, 0, 2);
    g.str(b"tokens").u32(9).u32(8).u64(100);
    for i in 0..100 {
        g.str(if i == 7 || i == 90 { b"\xc3" } else { b"ok" });
    }
    g.str(b"flags").u32(9).u32(7).u64(3).raw(&[0, 1, 9]);
    let cp = open_one("x.gguf", &g.build());
    assert_eq!(codes(&cp), vec![rules::INVALID_UTF8.code, rules::BAD_BOOL.code], "{:?}", cp.findings);
    assert_eq!(
        cp.findings[0].message,
        "array at offset 42 holds 2 strings that are not valid UTF-8 (the first is item 7)"
    );
    assert!(cp.findings[1].message.ends_with("holds 1 bools that are not 0 or 1 (the first is item 2)"));
}

#[test]
fn a_repeated_array_key_is_reported_at_its_start() {
    let mut g = Gguf::header(3, 0, 2);
    g.str(b"k").u32(9).u32(4).u64(2).u32(1).u32(2);
    let second = g.bytes.len();
    g.str(b"k").u32(9).u32(4).u64(1).u32(3);
    let cp = has(&g.build(), rules::DUPLICATE_KEY);
    assert!(cp.findings[0].message.contains(&format!("at offset {second} ")), "{}", cp.findings[0].message);
}

#[test]
fn the_full_list_of_a_big_array_is_readable_on_demand() {
    use tensorscope::engine::gguf::ArrayItemsDecoder;
    use tensorscope::engine::step::drive;
    for big in [false, true] {
        let mut g = if big { Gguf::header_be(3, 0, 2) } else { Gguf::header(3, 0, 2) };
        g.str(b"tokens").u32(9).u32(8).u64(1000);
        for i in 0..1000 {
            g.str(format!("tok{i}").as_bytes());
        }
        g.str(b"ids").u32(9).u32(4).u64(500);
        for i in 0..500u32 {
            g.u32(i * 3);
        }
        let bytes = g.build();
        let h = header(&bytes);
        let read = |key: &str, first: u64, count: u64, chunk: u64| {
            let Some(Value::Array(a)) = h.get(key) else { panic!() };
            let d = ArrayItemsDecoder::new(a, big, first, count);
            let page = drive(d, chunk, |r| Ok::<_, ()>(bytes[r.start as usize..r.end as usize].to_vec())).unwrap();
            assert!(page.items.iter().enumerate().all(|(i, (at, _))| *at == first + i as u64));
            page.items.into_iter().map(|(_, v)| v).collect::<Vec<_>>()
        };
        let all = read("tokens", 0, u64::MAX, 1 << 20);
        assert_eq!(all.len(), 1000);
        assert_eq!(all[999], Value::String("tok999".into()));
        for chunk in [1, 7, 4096] {
            let some = read("tokens", 500, 3, chunk);
            assert_eq!(some, ["tok500", "tok501", "tok502"].map(|s| Value::String(s.into())));
            assert_eq!(read("ids", 498, 10, chunk), vec![Value::U32(1494), Value::U32(1497)]);
            // A search walks every item and keeps the first matches, with their indices.
            let Some(Value::Array(a)) = h.get("tokens") else { panic!() };
            let d = ArrayItemsDecoder::new(a, big, 0, a.len).matching("TOK99", 3);
            let page = drive(d, chunk, |r| Ok::<_, ()>(bytes[r.start as usize..r.end as usize].to_vec())).unwrap();
            assert_eq!(page.matched, 11, "tok99 and tok990..tok999");
            let at: Vec<u64> = page.items.iter().map(|(i, _)| *i).collect();
            assert_eq!(at, vec![99, 990, 991]);
        }
        assert!(read("tokens", 2000, 5, 64).is_empty());
    }
}

#[test]
fn empty_keys_are_errors() {
    let mut g = Gguf::header(3, 0, 2);
    g.kv_u32("", 7).kv_u32("b", 1);
    let cp = has(&g.build(), rules::EMPTY_KEY);
    assert_eq!(cp.meta("b"), Some(&MetaValue::Gguf(Value::U32(1))), "the rest is still read");
}

#[test]
fn tensor_sizes_that_overflow_are_errors() {
    // 2^62 F32 elements: 2^64 bytes. ggml refuses sizes past SIZE_MAX.
    let mut g = Gguf::header(3, 1, 0);
    g.tensor("t", &[1 << 62], 0, 0).pad(32);
    let cp = has(&g.build(), rules::SIZE_OVERFLOW);
    assert!(cp.tensors[0].data.is_err());
}

#[test]
fn empty_tensors_with_huge_other_dimensions_are_fine() {
    // [2^62, 4, 0] has no elements: ggml accepts it.
    let mut g = Gguf::header(3, 1, 0);
    g.tensor("t", &[1 << 62, 4, 0], 0, 0).pad(32);
    let cp = open_one("x.gguf", &g.build());
    assert!(!codes(&cp).contains(&rules::ELEM_COUNT_OVERFLOW.code), "{:?}", cp.findings);
    assert_eq!(cp.tensors[0].nbytes, 0);
}

#[test]
fn tensor_names_are_compared_as_ggml_does_up_to_a_nul() {
    let mut g = Gguf::header(3, 2, 0);
    g.tensor("a\0x", &[8], 0, 0).tensor("a\0y", &[8], 0, 32).pad(32).data(64);
    has(&g.build(), rules::DUPLICATE_TENSOR);
    // Keys are compared byte for byte: two different invalid-UTF-8 keys are two keys.
    let mut g = Gguf::header(3, 0, 2);
    g.str(b"\xff").u32(4).u32(0).str(b"\xfe").u32(4).u32(0);
    let cp = open_one("x.gguf", &g.build());
    assert!(!codes(&cp).contains(&rules::DUPLICATE_KEY.code), "{:?}", cp.findings);
}

/// Parse `bytes` as the start of a file of `claimed` bytes (zeros after `bytes`, as a sparse
/// file reads), failing once more than `budget` bytes were read.
fn parse_claimed(bytes: &[u8], claimed: u64, budget: u64) -> tensorscope::engine::gguf::Header {
    use tensorscope::engine::open::FileDecoder;
    use tensorscope::engine::step::drive;
    let mut read = 0u64;
    let parsed = drive(FileDecoder::new("x.gguf", claimed), 1 << 16, |r| {
        read += r.len();
        if read > budget {
            return Err(format!("read {read} bytes, over the budget of {budget}"));
        }
        let mut out = vec![0u8; r.len() as usize];
        for (i, b) in out.iter_mut().enumerate() {
            *b = bytes.get(r.start as usize + i).copied().unwrap_or(0);
        }
        Ok(out)
    })
    .unwrap();
    match parsed {
        Parsed::Gguf(h) => h,
        other => panic!("not GGUF: {other:?}"),
    }
}

#[test]
fn a_dimension_count_far_past_ggmls_stops_the_tensor_infos_without_buffering_them() {
    // A 40 GB file whose second tensor info claims 2^32 - 1 dimensions (34 GB of them).
    let mut g = Gguf::header(3, 3, 0);
    g.tensor("first", &[8], 0, 0);
    g.str(b"second").u32(u32::MAX);
    let h = parse_claimed(&g.build(), 40 << 30, 1 << 20);
    assert_eq!(h.tensors.len(), 1, "the tensor before it is kept");
    assert_eq!(h.tensors[0].name, "first");
    let f = h.findings.iter().find(|f| f.breaks(rules::TOO_MANY_DIMS)).expect("a finding names the rule");
    assert!(f.message.contains("4294967295 dimensions") && f.message.contains("offset"), "{}", f.message);
}

#[test]
fn counts_a_big_file_could_hold_reserve_no_more_than_a_real_header_needs() {
    // 100 million tensor infos fit the 4 GB this file claims (24 bytes each at least), not
    // memory: what is reserved up front stays small, and the one real info is read.
    let mut b = Gguf::header(3, 100_000_000, 100_000_000).build();
    // The first key/value is damaged at once, so parsing stops there.
    b.extend_from_slice(&1u64.to_le_bytes());
    b.extend_from_slice(b"k");
    b.extend_from_slice(&999u32.to_le_bytes());
    let h = parse_claimed(&b, 4 << 30, 1 << 20);
    assert!(h.tensors.capacity() <= 1 << 16, "reserved {} tensor infos", h.tensors.capacity());
    assert!(h.metadata.capacity() <= 1 << 16, "reserved {} key/values", h.metadata.capacity());
    assert!(!h.findings.is_empty());
}

#[test]
fn a_rule_broken_once_per_entry_lists_its_first_thousand_findings_and_counts_the_rest() {
    // 20,000 empty keys: each is an empty key and a repeat of the first.
    let mut g = Gguf::header(3, 0, 20_000);
    for i in 0..20_000 {
        g.kv_u32("", i);
    }
    let cp = has(&g.build(), rules::EMPTY_KEY);
    let max = tensorscope::engine::findings::MAX_PER_RULE;
    for (code, more) in [(rules::EMPTY_KEY.code, 20_000 - max), (rules::DUPLICATE_KEY.code, 19_999 - max)] {
        let of: Vec<_> = cp.findings.iter().filter(|f| f.code == code).collect();
        assert_eq!(of.len(), max + 1, "{code}");
        assert!(of[max].message.starts_with(&format!("{more} more findings")), "{}", of[max].message);
        assert!(of.iter().all(|f| f.severity == Severity::Error));
    }
}

#[test]
fn key_values_past_the_cap_are_counted_not_kept_except_the_alignment() {
    let n = tensorscope::engine::model::MAX_METADATA_ENTRIES + 5000;
    let mut g = Gguf::header(3, 1, n as u64 + 1);
    for i in 0..n {
        g.kv_u32(&format!("k{i}"), 1);
    }
    g.kv_u32("general.alignment", 256).tensor("a", &[8], 0, 0).pad(256).data(256);
    let h = header(&g.build());
    assert_eq!(h.metadata.len(), tensorscope::engine::model::MAX_METADATA_ENTRIES + 1);
    assert_eq!(h.get("general.alignment"), Some(&Value::U32(256)), "the key that places the data is kept");
    assert_eq!(h.data_start.unwrap() % 256, 0);
    let f = h.findings.iter().find(|f| f.breaks(rules::TOO_MANY_KEYS)).expect("counted");
    assert!(f.message.starts_with("5000 more key/values"), "{}", f.message);
    assert_eq!(h.findings.len(), 1, "{:?}", h.findings);
}
