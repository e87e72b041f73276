//! Chat templates: every one a checkpoint carries (GGUF `tokenizer.chat_template[.NAME]`,
//! transformers' `chat_template.jinja` and `additional_chat_templates/NAME.jinja`, a processor's
//! `chat_template.json`, `tokenizer_config.json`'s `chat_template`), and a scan for the constructs of template
//! injection. Templates are Jinja code that some runtimes render with too little sandboxing; a
//! chat template never needs Python's internals, so reaching for them is an error finding.

use serde_json::Value as Json;

use super::config::{ConfigFile, TEMPLATE_FILE};
use super::findings::{Finding, Rule, Severity};
use super::hidden_text::is_hidden;
use super::model::{Checkpoint, MetaValue};

/// Stable codes of the rules a chat template can break.
pub mod rules {
    use crate::findings::Rule;

    /// A `__dunder__` name or attribute (`__class__`, `__globals__`, …), or one in a string.
    pub const DUNDER: Rule = Rule::error("template.dunder");
    /// An attribute whose name starts with `_` (`self._TemplateReference__context`).
    pub const PRIVATE_ATTRIBUTE: Rule = Rule::error("template.private_attribute");
    /// A module or builtin that runs code or touches the system (`os`, `subprocess`, `eval`, …).
    pub const DANGEROUS_NAME: Rule = Rule::error("template.dangerous_name");
    /// A string spelling `_` by an escape (`\x5f`), the way filters are smuggled past checks.
    pub const OBFUSCATED: Rule = Rule::error("template.obfuscated");
    /// Characters that reorder or hide text ([`crate::hidden_text::is_hidden`]), anywhere in the
    /// template.
    pub const HIDDEN_CHARACTERS: Rule = Rule::warning("template.hidden_characters");
    /// A template whose name an earlier one has, with other text: runtimes reading different
    /// files render different prompts.
    pub const SHADOWED: Rule = Rule::info("template.shadowed");
}

/// One chat template: its name (`default` for the main one), where it was read, and its text.
#[derive(Clone, Debug, PartialEq)]
pub struct Template {
    pub name: String,
    /// The metadata key or config file it came from.
    pub source: String,
    pub text: String,
}

/// Every chat template of `cp`: the GGUF keys in file order; then, as transformers looks for
/// them, the template files (`chat_template.jinja`, the default, and each
/// `additional_chat_templates/NAME.jinja`), a processor's `chat_template.json` and
/// `tokenizer_config.json`'s `chat_template`. A template the same as one listed before (name and
/// text) is not listed again.
pub fn templates(cp: &Checkpoint) -> Vec<Template> {
    let mut out = Vec::new();
    for (key, value) in &cp.metadata {
        let name = match key.strip_prefix("tokenizer.chat_template") {
            Some("") => "default",
            Some(rest) => match rest.strip_prefix('.') {
                Some(n) if !n.is_empty() => n,
                _ => continue,
            },
            None => continue,
        };
        let text = match value {
            MetaValue::Gguf(v) => v.as_str(),
            MetaValue::Text(t) => Some(t.as_str()),
        };
        if let Some(text) = text {
            out.push(Template { name: name.to_owned(), source: key.clone(), text: text.to_owned() });
        }
    }
    // Template files hold their text as a JSON string: the default one first, then the named.
    let files: Vec<(&str, &ConfigFile, &String)> = cp
        .configs
        .iter()
        .filter_map(|c| match (&c.json, c.base_name()) {
            (Json::String(text), TEMPLATE_FILE) => Some(("default", c, text)),
            (Json::String(text), base) => Some((base.strip_suffix(".jinja")?, c, text)),
            _ => None,
        })
        .collect();
    for (name, c, text) in files.iter().filter(|f| f.0 == "default").chain(files.iter().filter(|f| f.0 != "default")) {
        push_new(&mut out, Template { name: (*name).to_owned(), source: c.path.clone(), text: (*text).clone() });
    }
    for c in cp.configs.iter().filter(|c| c.base_name() == "chat_template.json") {
        if let Some(Json::String(t)) = c.json.get("chat_template") {
            push_new(&mut out, Template { name: "default".into(), source: c.path.clone(), text: t.clone() });
        }
    }
    for c in cp.configs.iter().filter(|c| c.base_name() == "tokenizer_config.json") {
        match c.json.get("chat_template") {
            Some(Json::String(t)) => {
                push_new(&mut out, Template { name: "default".into(), source: c.path.clone(), text: t.clone() })
            }
            Some(Json::Array(list)) => {
                for item in list {
                    if let (Some(n), Some(t)) =
                        (item.get("name").and_then(Json::as_str), item.get("template").and_then(Json::as_str))
                    {
                        push_new(&mut out, Template { name: n.to_owned(), source: c.path.clone(), text: t.to_owned() });
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// `t` added to `list` unless a template of the same name and text is there already.
fn push_new(list: &mut Vec<Template>, t: Template) {
    if !list.iter().any(|have| have.name == t.name && have.text == t.text) {
        list.push(t);
    }
}

/// Modules and builtins a template has no business naming.
const DANGEROUS_NAMES: &[&str] = &[
    "os",
    "sys",
    "subprocess",
    "builtins",
    "importlib",
    "posix",
    "nt",
    "pty",
    "socket",
    "shutil",
    "runpy",
    "pickle",
    "eval",
    "exec",
    "compile",
    "getattr",
    "setattr",
    "delattr",
    "globals",
    "locals",
    "vars",
    "breakpoint",
];

/// Attributes that run programs, whatever object they hang from.
const DANGEROUS_ATTRIBUTES: &[&str] = &[
    "popen",
    "Popen",
    "system",
    "spawn",
    "spawnv",
    "execv",
    "check_output",
    "check_call",
    "load_module",
    "import_module",
];

/// One risky construct: the rule, what was written, and its line (1-based).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hit {
    pub rule: Rule,
    pub construct: String,
    pub line: usize,
}

/// Most risky constructs listed per template: a damaged or hostile one can hold millions.
pub const MAX_HITS: usize = 1000;

/// The risky constructs in `text`: inside Jinja tags (`{{ }}`, `{% %}`) names, attributes and
/// string literals (the first [`MAX_HITS`]); then, anywhere, each line holding hidden characters
/// ([`is_hidden`]; the first [`MAX_HITS`] such lines).
pub fn scan(text: &str) -> Vec<Hit> {
    let mut hits = scan_tags(text);
    // Counted apart, so a template full of risky constructs cannot crowd its hidden text out.
    let mut hidden_lines = 0;
    for (i, line) in text.split('\n').enumerate() {
        if hidden_lines >= MAX_HITS {
            break;
        }
        let mut hidden = line.chars().filter(|&c| is_hidden(c));
        let Some(first) = hidden.next() else { continue };
        let more = hidden.count();
        let construct = match more {
            0 => format!("U+{:04X}", first as u32),
            n => format!("U+{:04X} and {n} more", first as u32),
        };
        hits.push(Hit { rule: rules::HIDDEN_CHARACTERS, construct, line: i + 1 });
        hidden_lines += 1;
    }
    hits
}

/// The risky constructs inside `text`'s Jinja tags (the first [`MAX_HITS`]).
fn scan_tags(text: &str) -> Vec<Hit> {
    let b = text.as_bytes();
    let mut hits = Vec::new();
    let (mut i, mut line) = (0usize, 1usize);
    let mut in_tag = false;
    // The last significant token: an identifier after `.` is an attribute.
    let mut after_dot = false;
    while i < b.len() && hits.len() < MAX_HITS {
        let c = b[i];
        if c == b'\n' {
            line += 1;
            i += 1;
            continue;
        }
        if !in_tag {
            if c == b'{' && matches!(b.get(i + 1), Some(b'{' | b'%')) {
                in_tag = true;
                after_dot = false;
                i += 2;
            } else if c == b'{' && b.get(i + 1) == Some(&b'#') {
                // A comment: skip to its end, counting lines.
                let end = find(b, i + 2, b"#}").map_or(b.len(), |e| e + 2);
                line += b[i..end].iter().filter(|&&x| x == b'\n').count();
                i = end;
            } else {
                i += 1;
            }
            continue;
        }
        match c {
            b'}' | b'%' if b.get(i + 1) == Some(&b'}') => {
                in_tag = false;
                i += 2;
            }
            b'\'' | b'"' => {
                let start = i + 1;
                let mut j = start;
                while j < b.len() && b[j] != c {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                let lit = &text[start..j.min(b.len())];
                check_literal(lit, line, &mut hits);
                line += lit.matches('\n').count();
                i = j + 1;
                after_dot = false;
            }
            c if c == b'_' || c.is_ascii_alphabetic() => {
                let start = i;
                while i < b.len() && (b[i] == b'_' || b[i].is_ascii_alphanumeric()) {
                    i += 1;
                }
                let word = &text[start..i];
                let next = b[i..].iter().copied().find(|x| !x.is_ascii_whitespace());
                check_word(word, after_dot, next, line, &mut hits);
                after_dot = false;
            }
            b'.' => {
                after_dot = true;
                i += 1;
            }
            c if c.is_ascii_whitespace() => i += 1,
            _ => {
                after_dot = false;
                i += 1;
            }
        }
    }
    hits
}

fn find(b: &[u8], from: usize, pat: &[u8]) -> Option<usize> {
    b.get(from..)?.windows(pat.len()).position(|w| w == pat).map(|p| p + from)
}

fn check_word(word: &str, attribute: bool, next: Option<u8>, line: usize, hits: &mut Vec<Hit>) {
    let hit = |rule, construct: String| Hit { rule, construct, line };
    if word.starts_with("__") {
        let word = short(word);
        hits.push(hit(rules::DUNDER, if attribute { format!(".{word}") } else { word }));
    } else if attribute && word.starts_with('_') {
        hits.push(hit(rules::PRIVATE_ATTRIBUTE, format!(".{}", short(word))));
    } else if attribute && DANGEROUS_ATTRIBUTES.contains(&word) && next == Some(b'(') {
        hits.push(hit(rules::DANGEROUS_NAME, format!(".{word}(")));
    } else if !attribute && DANGEROUS_NAMES.contains(&word) && matches!(next, Some(b'.' | b'(' | b'[')) {
        hits.push(hit(rules::DANGEROUS_NAME, format!("{word}{}", next.map(char::from).unwrap_or_default())));
    }
}

fn check_literal(lit: &str, line: usize, hits: &mut Vec<Hit>) {
    let lower = lit.to_ascii_lowercase();
    if ["\\x5f", "\\u005f", "\\137", "\\n{low line}"].iter().any(|e| lower.contains(e)) {
        hits.push(Hit { rule: rules::OBFUSCATED, construct: format!("'{}'", short(lit)), line });
    } else if let Some(p) = lit.find("__") {
        if lit[p + 2..].starts_with(|c: char| c.is_ascii_alphabetic()) {
            hits.push(Hit { rule: rules::DUNDER, construct: format!("'{}'", short(lit)), line });
        }
    }
}

/// The findings on every template of `cp` (one per construct and line), and on each that an
/// earlier one of its name shadows.
pub fn findings(cp: &Checkpoint) -> Vec<Finding> {
    let mut out = Vec::new();
    let all = templates(cp);
    for (i, t) in all.iter().enumerate() {
        if let Some(first) = all[..i].iter().find(|e| e.name == t.name) {
            out.push(Finding::new(
                rules::SHADOWED,
                format!(
                    "chat template '{}' ({}) differs from the one of that name in {}, which is read first: \
                     transformers renders that one, a tool reading only {} renders this one",
                    t.name,
                    t.source,
                    first.source,
                    crate::text::base_name(&t.source)
                ),
            ));
        }
    }
    for t in all {
        for h in scan(&t.text) {
            if h.rule.severity == Severity::Warning {
                out.push(Finding::new(
                    h.rule,
                    format!(
                        "chat template '{}' ({}) line {}: hidden characters ({}) reorder or hide what a reader \
                         sees; the model reads text the template does not show",
                        t.name, t.source, h.line, h.construct
                    ),
                ));
                continue;
            }
            let why = match h.rule {
                rules::DUNDER => "reaches for Python's internals, which a chat template never needs",
                rules::PRIVATE_ATTRIBUTE => "reaches for a private attribute of the template engine",
                rules::OBFUSCATED => "spells an underscore by an escape, as injections do to slip past filters",
                _ => "names code that runs programs or touches the system",
            };
            out.push(Finding::new(
                h.rule,
                format!(
                    "chat template '{}' ({}) line {}: `{}` {why}; rendering it may run code (template injection)",
                    t.name,
                    t.source,
                    h.line,
                    short(&h.construct)
                ),
            ));
        }
    }
    out
}

/// At most 60 characters of a construct, for a message.
fn short(s: &str) -> String {
    match s.char_indices().nth(60) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codes(text: &str) -> Vec<(Rule, String, usize)> {
        scan(text).into_iter().map(|h| (h.rule, h.construct, h.line)).collect()
    }

    #[test]
    fn real_templates_are_clean() {
        let chatml = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] \
                      + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}\
                      {% endif %}";
        assert_eq!(codes(chatml), []);
        let llama3 = "{% set loop_messages = messages %}{% for message in loop_messages %}\
                      {% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ \
                      message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + \
                      content %}{% endif %}{{ content }}{% endfor %}{% if message.role == 'system' %}{% endif %}\
                      {{ raise_exception('bad') if false }}{%- set ns = namespace(found=false) -%}";
        assert_eq!(codes(llama3), []);
        assert_eq!(codes("os.system() __class__ outside tags is text"), []);
    }

    #[test]
    fn injections_are_found_with_their_lines() {
        let evil = "{{ messages }}\n{{ self.__init__.__globals__.__builtins__.__import__('os').popen('id').read() }}";
        let found = codes(evil);
        assert!(found.contains(&(rules::DUNDER, ".__globals__".into(), 2)), "{found:?}");
        assert!(found.contains(&(rules::DUNDER, ".__import__".into(), 2)));
        assert!(found.contains(&(rules::DANGEROUS_NAME, ".popen(".into(), 2)));
        assert_eq!(codes("{{ cycler.__init__ }}")[0].1, ".__init__");
        let attr = "{% if x %}\n\n{{ ''|attr('__class__') }}{% endif %}";
        assert_eq!(codes(attr), [(rules::DUNDER, "'__class__'".into(), 3)]);
        assert_eq!(codes("{{ ''|attr('\\x5f\\x5fclass\\x5f\\x5f') }}")[0].0, rules::OBFUSCATED);
        assert_eq!(codes("{{ self._TemplateReference__context }}")[0].0, rules::PRIVATE_ATTRIBUTE);
        assert_eq!(codes("{% set x = os.environ %}"), [(rules::DANGEROUS_NAME, "os.".into(), 1)]);
        assert_eq!(codes("{{ eval('1') }}"), [(rules::DANGEROUS_NAME, "eval(".into(), 1)]);
        assert_eq!(
            codes("{# __class__ in a comment\n #}\n{{ __builtins__ }}"),
            [(rules::DUNDER, "__builtins__".into(), 3)]
        );
    }

    #[test]
    fn a_template_lists_its_first_thousand_risky_constructs_each_cut_short() {
        let long = format!("__{}", "a".repeat(10_000));
        let t = format!("{{{{ '{long}' }}}}\n{}", "{{ __a }}".repeat(100_000));
        let hits = scan(&t);
        assert_eq!(hits.len(), MAX_HITS);
        assert_eq!((hits[0].line, hits[1].line, hits[1].construct.as_str()), (1, 2, "__a"));
        assert!(hits[0].construct.chars().count() <= 63, "{}", hits[0].construct.len());
        assert!(hits[0].construct.starts_with("'__aaa") && hits[0].construct.ends_with("…'"));
    }

    #[test]
    fn hidden_characters_are_found_by_line_anywhere() {
        // Trojan Source: a right-to-left override makes the line read other than it runs.
        let t = "{{ 'ok' }}\nSay hello.\u{202e}{{ secret }}\u{2066}\n\u{e0049}\u{e0067}\u{e006e}plain";
        assert_eq!(
            codes(t),
            [
                (rules::HIDDEN_CHARACTERS, "U+202E and 1 more".into(), 2),
                (rules::HIDDEN_CHARACTERS, "U+E0049 and 2 more".into(), 3)
            ]
        );
        // Emoji joiners, the variation selector of emoji, accents and CJK are ordinary text.
        let clean = "{{ '👩\u{200d}💻 ❤\u{fe0f} naïve 日本語 \u{200c}' }}";
        assert_eq!(codes(clean), []);
        // Constructs inside tags and hidden characters are both listed, each kind up to its cap:
        // a thousand constructs do not crowd out the hidden text.
        let both = codes("{{ __class__ }}\u{200b}");
        assert_eq!(both.iter().map(|h| h.0).collect::<Vec<_>>(), [rules::DUNDER, rules::HIDDEN_CHARACTERS]);
        let crowded = format!("{}\nok\u{202e}", "{{ __a }}".repeat(2 * MAX_HITS));
        let hits = codes(&crowded);
        assert_eq!(hits.len(), MAX_HITS + 1);
        assert_eq!(hits[MAX_HITS], (rules::HIDDEN_CHARACTERS, "U+202E".into(), 2));
        let many = "\u{200b}\n".repeat(2 * MAX_HITS);
        assert_eq!(codes(&many).len(), MAX_HITS);
    }

    #[test]
    fn hidden_characters_are_a_warning_naming_the_template_and_line() {
        let mut cp = Checkpoint::empty(crate::model::Format::Gguf);
        cp.metadata.push(("tokenizer.chat_template".into(), MetaValue::Text("{{ messages }}\n\u{202e}txet".into())));
        let f = findings(&cp);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].rule(), rules::HIDDEN_CHARACTERS);
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(
            f[0].message.contains("'default' (tokenizer.chat_template) line 2: hidden characters (U+202E)"),
            "{}",
            f[0].message
        );
    }

    #[test]
    fn templates_come_from_every_file_transformers_reads_each_listed_once() {
        use crate::config::ConfigFile;
        use serde_json::json;
        let mut cp = Checkpoint::empty(crate::model::Format::Safetensors);
        let config = |path: &str, json: Json| ConfigFile { path: path.into(), json };
        cp.configs = vec![
            config("m/additional_chat_templates/tool_use.jinja", json!("TOOLS")),
            config("m/chat_template.jinja", json!("NEW")),
            config("m/chat_template.json", json!({"chat_template": "PROCESSOR"})),
            config("m/config.json", json!({"chat_template": "NOT A TEMPLATE FILE"})),
            // The same default again (a repo saved by an older transformers keeps both), and an
            // older one that differs.
            config(
                "m/tokenizer_config.json",
                json!({"chat_template": [{"name": "default", "template": "NEW"},
                {"name": "tool_use", "template": "OLD TOOLS"}]}),
            ),
        ];
        let got: Vec<(String, String, String)> =
            templates(&cp).into_iter().map(|t| (t.name, t.source, t.text)).collect();
        let want = [
            ("default", "m/chat_template.jinja", "NEW"),
            ("tool_use", "m/additional_chat_templates/tool_use.jinja", "TOOLS"),
            ("default", "m/chat_template.json", "PROCESSOR"),
            ("tool_use", "m/tokenizer_config.json", "OLD TOOLS"),
        ];
        assert_eq!(got, want.map(|(n, s, t)| (n.to_owned(), s.to_owned(), t.to_owned())));
        // The shadowed ones are said, the same default listed once is not.
        let shadowed: Vec<String> =
            findings(&cp).into_iter().filter(|f| f.code == rules::SHADOWED.code).map(|f| f.message).collect();
        assert_eq!(shadowed.len(), 2, "{shadowed:?}");
        assert!(shadowed[0].starts_with("chat template 'default' (m/chat_template.json) differs from the one of that name in m/chat_template.jinja"), "{shadowed:?}");
        assert!(
            shadowed[1].contains("'tool_use' (m/tokenizer_config.json)")
                && shadowed[1].contains("only tokenizer_config.json")
        );
    }

    #[test]
    fn hostile_text_never_panics() {
        for t in ["{{", "{{ '", "{{ \"\\", "{%", "{#", "{{ a.", "{{ é.__x__ }}", "{{ 'é\\"] {
            let _ = scan(t);
        }
    }
}
