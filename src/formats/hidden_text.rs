//! Characters that reorder or hide text: what a file's text holds that its reader cannot see.
//! Templates are scanned for them ([`crate::template`]); the viewer and the terminal show each
//! as its `\u{…}` escape wherever text from a file is shown.

/// Whether `c` hides or reorders what a reader sees: the bidirectional controls (Trojan Source),
/// zero-width and invisible format characters, and the tag and variation-selector-supplement
/// blocks, which carry text no reader sees but a model reads. The zero-width joiners (U+200C,
/// U+200D), part of emoji and of several scripts, are not counted.
pub fn is_hidden(c: char) -> bool {
    matches!(
        c as u32,
        0x00AD
            | 0x061C
            | 0x180E
            | 0x200B
            | 0x200E
            | 0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x2064
            | 0x2066..=0x2069
            | 0xFEFF
            | 0xE0000..=0xE007F
            | 0xE0100..=0xE01EF
    )
}

/// `text` with every hidden character ([`is_hidden`]) written as its `\u{…}` escape, for display.
pub fn reveal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if is_hidden(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_characters_are_shown_as_escapes_and_ordinary_text_is_kept() {
        assert_eq!(reveal("a\u{202e}b\u{e0041}\u{2066}"), "a\\u{202e}b\\u{e0041}\\u{2066}");
        // Emoji joiners, the variation selector of emoji, accents and CJK are ordinary text.
        let clean = "👩\u{200d}💻 ❤\u{fe0f} naïve 日本語 \u{200c} tab\there";
        assert_eq!(reveal(clean), clean);
        for c in ['\u{202a}', '\u{202e}', '\u{2066}', '\u{2069}', '\u{200b}', '\u{feff}', '\u{e0001}', '\u{e01ef}'] {
            assert!(is_hidden(c), "{c:?}");
        }
        for c in ['a', ' ', '\u{200c}', '\u{200d}', '\u{fe0f}', '\u{e0080}', '\u{e01f0}'] {
            assert!(!is_hidden(c), "{c:?}");
        }
    }
}
