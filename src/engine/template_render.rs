//! Rendering a chat template for a sample conversation, as transformers renders one
//! (`trim_blocks`, `lstrip_blocks`, loop controls, `raise_exception`, its `tojson` and
//! `generation` blocks, Python's string methods), with a Rust Jinja engine that cannot reach any
//! interpreter: an injected template renders as text or fails, and runs nothing. Fuel bounds
//! the work, so `range(10**12)` stops with an error instead of hanging.

use minijinja::syntax::SyntaxConfig;
use minijinja::value::{Kwargs, Rest, Serde, ValueKind};
use minijinja::{AutoEscape, Environment, Error, ErrorKind, Value};
use serde_json::json;

use super::template_generation::with_generation_tags_rewritten;
use super::template_json::{dumps, Dumps};

/// Most template instructions one render may run.
const FUEL: u64 = 5_000_000;
/// Longest rendering kept.
const MAX_OUTPUT: usize = 1 << 20;

/// The sample conversation: a system prompt and two user turns around an assistant reply.
pub fn sample_messages() -> serde_json::Value {
    json!([
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Hi."},
        {"role": "user", "content": "Name a colour."},
    ])
}

/// `template` rendered for [`sample_messages`] with a generation prompt, `bos_token` and
/// `eos_token` as given; or the error, as the engine words it (never a panic).
pub fn render_sample(template: &str, bos_token: &str, eos_token: &str) -> Result<String, String> {
    let sample = json!({"messages": sample_messages(), "add_generation_prompt": true});
    render_conversation(template, &sample, bos_token, eos_token)
}

/// `template` rendered for `conversation`, the template's variables as
/// `apply_chat_template(**conversation)` passes them: `messages`, `tools` and `documents` (none
/// when not given), `add_generation_prompt` (false when not given), and any others as they are;
/// `bos_token` and `eos_token` as given unless the conversation names them. A list is the
/// messages alone.
pub fn render_conversation(
    template: &str,
    conversation: &serde_json::Value,
    bos_token: &str,
    eos_token: &str,
) -> Result<String, String> {
    let mut ctx = json!({
        "messages": [],
        "tools": null,
        "documents": null,
        "add_generation_prompt": false,
        "bos_token": bos_token,
        "eos_token": eos_token,
    });
    match conversation {
        serde_json::Value::Array(_) => ctx["messages"] = conversation.clone(),
        serde_json::Value::Object(vars) => {
            for (k, v) in vars {
                ctx[k] = v.clone();
            }
        }
        _ => return Err("a conversation is a JSON object of the template's variables, or a list of messages".into()),
    }
    // The engine recurses over nested values (printing, `tojson`, dropping them), and fuel
    // bounds how deep a template can nest one, not the stack that takes: render on a thread
    // whose stack holds the deepest value the fuel allows (reserved, touched only as used).
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .stack_size(RENDER_STACK_BYTES)
            .spawn_scoped(s, || render(template, ctx))
            .map_err(|e| format!("cannot start the renderer: {e}"))?
            .join()
            .map_err(|_| "the renderer failed".to_owned())?
    })
}

/// Stack of the rendering thread.
const RENDER_STACK_BYTES: usize = 1 << 30;

fn render(template: &str, ctx: serde_json::Value) -> Result<String, String> {
    let mut env = Environment::new();
    let syntax = SyntaxConfig::builder().trim_blocks(true).lstrip_blocks(true).build().map_err(|e| e.to_string())?;
    env.set_syntax(syntax);
    env.set_auto_escape_callback(|_| AutoEscape::None);
    env.set_fuel(Some(FUEL));
    env.set_recursion_limit(100);
    env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
    env.add_function("raise_exception", |msg: String| -> Result<Value, Error> {
        Err(Error::new(ErrorKind::InvalidOperation, format!("raise_exception: {msg}")))
    });
    env.add_function("strftime_now", |fmt: String| -> String { fixed_date(&fmt) });
    // Python's `iter(x)`: `none` is not iterable (a template given no tools tests `tools is
    // iterable` before taking its length); an undefined value is, as jinja2's Undefined is.
    env.add_test("iterable", |v: &Value| v.kind() != ValueKind::None && v.try_iter().is_ok());
    env.add_filter("tojson", |v: Value, args: Rest<Value>, kwargs: Kwargs| -> Result<String, Error> {
        let how = dumps_args(&args, &kwargs)?;
        let json: serde_json::Value =
            serde_json::to_value(&v).map_err(|e| Error::new(ErrorKind::InvalidOperation, e.to_string()))?;
        dumps(&json, &how, MAX_OUTPUT).map_err(|_| {
            Error::new(ErrorKind::InvalidOperation, format!("tojson: the text is over the {MAX_OUTPUT}-byte limit"))
        })
    });
    let template = with_generation_tags_rewritten(template);
    let out = env.render_str(&template, Value::from(Serde(ctx))).map_err(|e| describe(&e))?;
    if out.len() > MAX_OUTPUT {
        return Err(format!("the rendering is {} bytes, over the {MAX_OUTPUT}-byte limit", out.len()));
    }
    Ok(out)
}

/// The error with its line, and the cause chain.
fn describe(e: &Error) -> String {
    let mut text = match e.line() {
        Some(l) => format!("line {l}: {}", e.detail().unwrap_or(&e.kind().to_string())),
        None => e.detail().map_or_else(|| e.kind().to_string(), str::to_owned),
    };
    if e.kind() == ErrorKind::OutOfFuel {
        text.push_str(" (the template ran too long)");
    }
    text
}

/// The `json.dumps` arguments of a `tojson` call, as transformers' filter takes them: by position
/// (`ensure_ascii`, `indent`, `separators`, `sort_keys`) or by name; Python's errors for more,
/// repeated or unknown ones.
fn dumps_args(args: &[Value], kwargs: &Kwargs) -> Result<Dumps, Error> {
    const NAMES: [&str; 4] = ["ensure_ascii", "indent", "separators", "sort_keys"];
    let bad = |msg: String| Error::new(ErrorKind::InvalidOperation, msg);
    if args.len() > NAMES.len() {
        return Err(bad(format!("tojson() takes at most {} arguments ({} given)", NAMES.len() + 1, args.len() + 1)));
    }
    let mut given: [Option<Value>; 4] = Default::default();
    for (i, name) in NAMES.iter().enumerate() {
        let named: Option<Value> = kwargs.get(name)?;
        given[i] = match (args.get(i), named) {
            (Some(_), Some(_)) => return Err(bad(format!("tojson() got multiple values for argument '{name}'"))),
            (Some(v), None) => Some(v.clone()),
            (None, v) => v,
        };
    }
    kwargs.assert_all_used()?;
    let [ensure_ascii, indent, separators, sort_keys] = given;
    let indent = match indent {
        None => None,
        Some(v) if v.kind() == ValueKind::Bool => Some(if v.is_true() { " " } else { "" }.to_owned()),
        Some(v) => match (v.as_i64(), v.as_str()) {
            (Some(n), _) => Some(" ".repeat(usize::try_from(n).unwrap_or(0).min(64))),
            (_, Some(s)) => Some(s.to_owned()),
            _ => return Err(bad(format!("tojson(): indent must be an integer or a string, not {}", v.kind()))),
        },
    };
    let mut how = Dumps::new(indent);
    how.ensure_ascii = ensure_ascii.is_some_and(|v| v.is_true());
    how.sort_keys = sort_keys.is_some_and(|v| v.is_true());
    if let Some(v) = separators {
        let pair: Vec<Value> = v.try_iter().map(|items| items.collect()).unwrap_or_default();
        match (pair.first().and_then(Value::as_str), pair.get(1).and_then(Value::as_str), pair.len()) {
            (Some(item), Some(key), 2) => how.separators = (item.to_owned(), key.to_owned()),
            _ => return Err(bad("tojson(): separators must be a pair of strings".into())),
        }
    }
    Ok(how)
}

/// `strftime` of a fixed day (26 July 2024, 00:00), so a rendering is the same every day.
fn fixed_date(fmt: &str) -> String {
    fmt.replace("%d", "26")
        .replace("%m", "07")
        .replace("%Y", "2024")
        .replace("%y", "24")
        .replace("%B", "July")
        .replace("%b", "Jul")
        .replace("%A", "Friday")
        .replace("%a", "Fri")
        .replace("%H", "00")
        .replace("%M", "00")
        .replace("%S", "00")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_with_transformers_settings() {
        let t = "{% for m in messages %}\n{{ m.role | upper }}: {{ m.content.strip() }}\n{% endfor %}";
        assert_eq!(
            render_sample(t, "", "").unwrap(),
            "SYSTEM: You are terse.\nUSER: Hello\nASSISTANT: Hi.\nUSER: Name a colour.\n"
        );
        assert_eq!(render_sample("{{ {'a': [1, 'é']} | tojson }}", "", "").unwrap(), "{\"a\": [1, \"é\"]}");
    }

    // Each expected text is jinja2's rendering with transformers' `tojson` and its `generation`
    // extension.
    #[test]
    fn tojson_takes_transformers_arguments() {
        let cases = [
            ("{{ {'b': 'é', 'a': 1.0} | tojson(true) }}", "{\"b\": \"\\u00e9\", \"a\": 1.0}"),
            ("{{ {'b': 'é', 'a': 1.0} | tojson(indent=2, sort_keys=true) }}", "{\n  \"a\": 1.0,\n  \"b\": \"é\"\n}"),
            ("{{ [1, 2] | tojson(separators=(',', ':')) }}", "[1,2]"),
            ("{{ [1] | tojson(indent='\\t') }}", "[\n\t1\n]"),
            ("{{ [0.00001, 1e16] | tojson }}", "[1e-05, 1e+16]"),
        ];
        for (t, want) in cases {
            assert_eq!(render_sample(t, "", "").unwrap(), want, "{t}");
        }
        let e = render_sample("{{ 1 | tojson(indent=2, bogus=1) }}", "", "").unwrap_err();
        assert!(e.contains("bogus"), "{e}");
        let e = render_sample("{{ 1 | tojson(true, ensure_ascii=true) }}", "", "").unwrap_err();
        assert!(e.contains("multiple values for argument 'ensure_ascii'"), "{e}");
        let e = render_sample("{{ range(100) | list | tojson(indent='x' * 100000) }}", "", "").unwrap_err();
        assert!(e.contains("limit"), "{e}");
    }

    #[test]
    fn iterable_is_pythons() {
        let t = "{% if none is iterable %}x{% endif %}{% if [] is iterable %}y{% endif %}\
                 {% if nothing is iterable %}z{% endif %}{% if 'ab' is iterable %}w{% endif %}\
                 {% if 1 is iterable %}v{% endif %}{% if {} is iterable %}u{% endif %}";
        assert_eq!(render_sample(t, "", "").unwrap(), "yzwu");
    }

    #[test]
    fn without_tools_the_sample_passes_none_as_transformers_does() {
        // Llama 3.1's template adds a tool preamble for any `tools` that is not none, even empty.
        let t = "{% if tools is not none %}TOOLS {% endif %}{{ tools | tojson }} {{ documents | tojson }}";
        assert_eq!(render_sample(t, "", "").unwrap(), "null null");
    }

    #[test]
    fn generation_blocks_render_their_body() {
        let t = "{% for m in messages %}\n  {%- generation -%}\n  {{ m.role }};\n  {%- endgeneration %}\n{% endfor %}";
        assert_eq!(render_sample(t, "", "").unwrap(), "system;user;assistant;user;");
    }

    #[test]
    fn errors_are_returned_not_thrown() {
        let e = render_sample("x\n{{ raise_exception('roles must alternate') }}", "", "").unwrap_err();
        assert!(e.contains("roles must alternate") && e.contains("line 2"), "{e}");
        assert!(render_sample("{% for %}", "", "").is_err());
        let e = render_sample("{% for i in range(100000000) %}{{ i }}{% endfor %}", "", "").unwrap_err();
        assert!(e.contains("too long") || e.contains("range"), "{e}");
        let e = render_sample("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "", "").unwrap_err();
        assert!(!e.is_empty());
    }

    #[test]
    fn values_nested_as_deep_as_the_fuel_allows_render_without_overflowing_the_stack() {
        // Each step wraps the last value in a list, `depth` deep; then printed (or not) and
        // dropped, all by recursion in the engine.
        let nest = |outer: u32| {
            format!(
                "{{% set ns = namespace(x=0) %}}{{% for i in range({outer}) %}}{{% for j in range(1000) %}}\
                 {{% set ns.x = [ns.x] %}}{{% endfor %}}{{% endfor %}}"
            )
        };
        let deep = nest(100);
        let out = render_sample(&format!("{deep}{{{{ ns.x | tojson }}}}"), "", "").unwrap();
        assert_eq!(out, format!("{}0{}", "[".repeat(100_000), "]".repeat(100_000)));
        assert_eq!(render_sample(&format!("{deep}{{{{ ns.x | length }}}}"), "", "").unwrap(), "1");
        assert_eq!(render_sample(&format!("{deep}{{{{ ns.x }}}}"), "", "").unwrap().len(), 200_001);
        // As deep as the fuel goes: out of fuel, the value dropped.
        let e = render_sample(&nest(100_000), "", "").unwrap_err();
        assert!(e.contains("too long"), "{e}");
    }

    #[test]
    fn an_injection_runs_nothing() {
        let evil = "{{ cycler.__init__.__globals__.os.popen('id').read() }}";
        // Either it fails or it renders as text; no interpreter is reachable.
        if let Ok(out) = render_sample(evil, "", "") {
            assert!(!out.contains("uid="), "{out}");
        }
    }
}
