//! transformers' one tag of its own in chat templates: `{% generation %}` … `{% endgeneration %}`
//! marks the assistant's text (for training masks) and renders its body as is. The Jinja engine
//! has no custom tags, so each is rewritten as a tag that does the same, `{% if true %}` and
//! `{% endif %}`, with the tag's whitespace control kept and every line where it was.

/// `template` with its `generation` and `endgeneration` tags rewritten; text, comments,
/// expressions, string literals and `raw` blocks untouched.
pub fn with_generation_tags_rewritten(template: &str) -> std::borrow::Cow<'_, str> {
    if !template.contains("generation") {
        return template.into();
    }
    let mut out = String::with_capacity(template.len() + 16);
    let mut rest = template;
    while let Some(at) = rest.find('{') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let end = match rest.as_bytes().get(1) {
            Some(b'{') => delimited_end(rest, "}}"),
            Some(b'#') => rest.find("#}").map(|i| i + 2),
            Some(b'%') => {
                let (tag, end) = tag_at(rest);
                match tag {
                    Some("generation") => {
                        out.push_str(&rest[..end].replacen("generation", "if true", 1));
                        rest = &rest[end..];
                        continue;
                    }
                    Some("endgeneration") => {
                        out.push_str(&rest[..end].replacen("endgeneration", "endif", 1));
                        rest = &rest[end..];
                        continue;
                    }
                    Some("raw") => raw_block_end(rest, end),
                    _ => Some(end),
                }
            }
            _ => Some(1),
        };
        // An unclosed block: the rest is left for the engine to report.
        let end = end.unwrap_or(rest.len());
        out.push_str(&rest[..end]);
        rest = &rest[end..];
    }
    out.push_str(rest);
    out.into()
}

/// The tag name of the `{% … %}` block `s` starts with, and the block's length (all of `s`
/// when it is not closed).
fn tag_at(s: &str) -> (Option<&str>, usize) {
    let Some(end) = delimited_end(s, "%}") else { return (None, s.len()) };
    let inner = s[2..end - 2].trim_start_matches(['-', '+']).trim_start();
    let name_len = inner.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(inner.len());
    // The tag alone: `{% generation %}`, not `{% generation x %}`.
    let alone = inner[name_len..].trim_end_matches(['-', '+']).trim().is_empty();
    (alone.then_some(&inner[..name_len]), end)
}

/// Where the block that `s` opens ends: after the first `close` outside a string literal.
fn delimited_end(s: &str, close: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    let mut i = 2;
    let mut quote = None;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(_) if b == b'\\' => i += 1,
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None if b == b'\'' || b == b'"' => quote = Some(b),
            None if bytes[i..].starts_with(close.as_bytes()) => return Some(i + close.len()),
            None => {}
        }
        i += 1;
    }
    None
}

/// Where the `raw` block whose opening tag ends at `open_end` ends: after its `endraw` tag.
fn raw_block_end(s: &str, open_end: usize) -> Option<usize> {
    let mut from = open_end;
    while let Some(at) = s[from..].find("{%") {
        let start = from + at;
        let (tag, len) = tag_at(&s[start..]);
        if tag == Some("endraw") {
            return Some(start + len);
        }
        from = start + 2;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_tags_become_a_block_that_renders_its_body() {
        let t = "{%- generation -%}\n{{ m }}\n{% endgeneration %}";
        assert_eq!(with_generation_tags_rewritten(t), "{%- if true -%}\n{{ m }}\n{% endif %}");
        assert_eq!(with_generation_tags_rewritten("{%generation%}x{%+ endgeneration +%}"), "{%if true%}x{%+ endif +%}");
    }

    #[test]
    fn only_tags_are_rewritten() {
        for t in [
            "generation {{ '{% generation %}' }} {# {% generation %} #}",
            "{% raw %}{% generation %}{% endraw %}",
            "{% set generation = 1 %}{{ generation }}",
            "{% if generation %}{% endif %}",
            "{% generation",
            "{{ \"{% endgeneration %}\\\"\" }}",
        ] {
            assert_eq!(with_generation_tags_rewritten(t), t);
        }
        assert_eq!(
            with_generation_tags_rewritten("{% raw %}{% generation %}{% endraw %}{% generation %}"),
            "{% raw %}{% generation %}{% endraw %}{% if true %}"
        );
    }
}
