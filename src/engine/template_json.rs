//! The `tojson` filter as transformers binds it for chat templates: Python's
//! `json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)`, its
//! arguments taken by position in that order or by name, its text as Python writes it.

use serde_json::Value as Json;

/// How [`dumps`] writes: `json.dumps`' arguments.
#[derive(Clone, Debug, PartialEq)]
pub struct Dumps {
    /// Non-ASCII characters as `\uXXXX` escapes.
    pub ensure_ascii: bool,
    /// Each item on its own line, nested levels indented by this text; `None`: one line.
    pub indent: Option<String>,
    /// Between items, and between a key and its value.
    pub separators: (String, String),
    /// Object keys in sorted order, not insertion order.
    pub sort_keys: bool,
}

impl Dumps {
    /// `json.dumps`' defaults as transformers binds them, with `indent` (`", "` between items
    /// on one line, `","` at line ends when indented, `": "` after keys).
    pub fn new(indent: Option<String>) -> Dumps {
        let item = if indent.is_some() { "," } else { ", " };
        Dumps { ensure_ascii: false, indent, separators: (item.into(), ": ".into()), sort_keys: false }
    }
}

/// A text past the length it was allowed.
#[derive(Debug, PartialEq)]
pub struct TooLong;

/// `v` as `json.dumps(v, …)` writes it under `how`; [`TooLong`] once it passes `max_len` bytes
/// (a long indent repeats on every line of every level).
pub fn dumps(v: &Json, how: &Dumps, max_len: usize) -> Result<String, TooLong> {
    let mut out = String::new();
    write_value(&mut out, v, how, 0, max_len)?;
    Ok(out)
}

fn write_value(out: &mut String, v: &Json, how: &Dumps, depth: usize, max_len: usize) -> Result<(), TooLong> {
    match v {
        Json::Null => out.push_str("null"),
        Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Json::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => out.push_str(&i.to_string()),
            (_, Some(u), _) => out.push_str(&u.to_string()),
            (_, _, Some(f)) => out.push_str(&python_float(f)),
            _ => out.push_str(&n.to_string()),
        },
        Json::String(s) => write_string(out, s, how.ensure_ascii),
        Json::Array(items) => {
            return write_items(out, ('[', ']'), items.iter().map(|v| (None, v)), items.len(), how, (depth, max_len));
        }
        Json::Object(map) => {
            let mut entries: Vec<(&String, &Json)> = map.iter().collect();
            if how.sort_keys {
                entries.sort_by(|a, b| a.0.cmp(b.0));
            }
            let n = entries.len();
            let items = entries.into_iter().map(|(k, v)| (Some(k), v));
            return write_items(out, ('{', '}'), items, n, how, (depth, max_len));
        }
    }
    if out.len() > max_len {
        return Err(TooLong);
    }
    Ok(())
}

/// An array's or object's items between `brackets`: on one line, or one a line when indented.
fn write_items<'a>(
    out: &mut String,
    brackets: (char, char),
    items: impl Iterator<Item = (Option<&'a String>, &'a Json)>,
    n: usize,
    how: &Dumps,
    (depth, max_len): (usize, usize),
) -> Result<(), TooLong> {
    out.push(brackets.0);
    if n == 0 {
        out.push(brackets.1);
        return Ok(());
    }
    // A line's indent is checked against the limit before it is written: a long indent at a
    // deep level would otherwise be written whole first.
    let newline = |out: &mut String, depth: usize| {
        if let Some(indent) = &how.indent {
            let grown = indent.len().checked_mul(depth).and_then(|n| n.checked_add(out.len() + 1));
            if grown.is_none_or(|n| n > max_len) {
                return Err(TooLong);
            }
            out.push('\n');
            for _ in 0..depth {
                out.push_str(indent);
            }
        }
        Ok(())
    };
    for (i, (key, v)) in items.enumerate() {
        if i > 0 {
            out.push_str(&how.separators.0);
        }
        newline(out, depth + 1)?;
        if let Some(key) = key {
            write_string(out, key, how.ensure_ascii);
            out.push_str(&how.separators.1);
        }
        write_value(out, v, how, depth + 1, max_len)?;
    }
    newline(out, depth)?;
    out.push(brackets.1);
    if out.len() > max_len {
        return Err(TooLong);
    }
    Ok(())
}

/// A JSON string as Python escapes it: `\"`, `\\`, `\n`, `\r`, `\t`, `\b`, `\f`, other control
/// characters as `\u00XX`, and with `ensure_ascii` every non-ASCII character as `\uXXXX`
/// (a surrogate pair past the first plane).
fn write_string(out: &mut String, s: &str, ensure_ascii: bool) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (ensure_ascii && !c.is_ascii()) => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `repr(f)` as Python writes a float: the shortest digits that read back as `f`, positional
/// from 1e-4 up to 1e16 (always with a fraction: `1.0`), else with an exponent of at least two
/// digits (`1e-05`, `1.5e+16`); `NaN`, `Infinity`, `-Infinity` as `json.dumps` writes them.
fn python_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity".into() } else { "-Infinity".into() };
    }
    // Rust's `{:e}` gives the same shortest digits: `d[.ddd]e[-]x`.
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').expect("`{:e}` writes an exponent");
    let exp: i32 = exp.parse().expect("`{:e}` writes a decimal exponent");
    if (-4..16).contains(&exp) {
        let s = format!("{f}");
        return if s.contains('.') { s } else { format!("{s}.0") };
    }
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp.unsigned_abs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn dumps(v: &Json, how: &Dumps) -> String {
        super::dumps(v, how, usize::MAX).unwrap()
    }

    fn with(f: impl FnOnce(&mut Dumps)) -> Dumps {
        let mut how = Dumps::new(None);
        f(&mut how);
        how
    }

    // Each expected text is what Python 3.11's json.dumps wrote for the same value and arguments.
    #[test]
    fn writes_as_python_json_dumps() {
        let v = json!({"b": [1, -2, 2.5, true, null], "a": {"é": "x\"\n\u{1}"}, "c": []});
        assert_eq!(
            dumps(&v, &Dumps::new(None)),
            r#"{"b": [1, -2, 2.5, true, null], "a": {"é": "x\"\n\u0001"}, "c": []}"#
        );
        assert_eq!(
            dumps(&v, &with(|h| h.ensure_ascii = true)),
            r#"{"b": [1, -2, 2.5, true, null], "a": {"\u00e9": "x\"\n\u0001"}, "c": []}"#
        );
        assert_eq!(
            dumps(&v, &with(|h| h.sort_keys = true)),
            r#"{"a": {"é": "x\"\n\u0001"}, "b": [1, -2, 2.5, true, null], "c": []}"#
        );
        assert_eq!(
            dumps(&v, &with(|h| h.separators = (",".into(), ":".into()))),
            r#"{"b":[1,-2,2.5,true,null],"a":{"é":"x\"\n\u0001"},"c":[]}"#
        );
        assert_eq!(
            dumps(&v, &Dumps::new(Some("  ".into()))),
            "{\n  \"b\": [\n    1,\n    -2,\n    2.5,\n    true,\n    null\n  ],\n  \"a\": {\n    \"é\": \"x\\\"\\n\\u0001\"\n  },\n  \"c\": []\n}"
        );
        assert_eq!(dumps(&json!({"k": [1]}), &Dumps::new(Some(String::new()))), "{\n\"k\": [\n1\n]\n}");
        assert_eq!(dumps(&json!("😀"), &with(|h| h.ensure_ascii = true)), r#""\ud83d\ude00""#);
    }

    #[test]
    fn a_text_past_its_limit_stops_there() {
        let v = json!([[1, 2], [3, [4, 5]]]);
        let full = dumps(&v, &Dumps::new(Some("    ".into())));
        assert_eq!(super::dumps(&v, &Dumps::new(Some("    ".into())), full.len()).unwrap(), full);
        assert_eq!(super::dumps(&v, &Dumps::new(Some("    ".into())), full.len() - 1), Err(TooLong));
        let wide = Dumps::new(Some("x".repeat(1 << 20)));
        assert_eq!(super::dumps(&json!(vec![vec![0; 64]; 64]), &wide, 1 << 24), Err(TooLong));
        // A deep value under a long indent stops at the limit too.
        let deep = (0..40).fold(json!(0), |v, _| json!([v]));
        assert_eq!(super::dumps(&deep, &wide, 1 << 24), Err(TooLong));
    }

    #[test]
    fn floats_as_python_reprs_them() {
        let cases = [
            (1.0, "1.0"),
            (0.1, "0.1"),
            (-2.5, "-2.5"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (1.5e16, "1.5e+16"),
            (1e16, "1e+16"),
            (123456789012345.6, "123456789012345.6"),
            (1e100, "1e+100"),
            (5e-324, "5e-324"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
        ];
        for (f, want) in cases {
            assert_eq!(python_float(f), want, "{f:e}");
        }
        assert_eq!(python_float(f64::NAN), "NaN");
        assert_eq!(python_float(f64::NEG_INFINITY), "-Infinity");
    }
}
