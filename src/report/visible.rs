//! Text from outside fwfix (a firmware's console, a compiler, an agent) made safe to show: a
//! control character is shown as what it is instead of acting. `ESC[2J` would clear a person's
//! terminal, an OSC sequence retitle it, a bare `\r` overwrite the line before it. The one
//! function every rendering uses: the terminal (`ui/`), report.md and report.html (whose markup
//! escaping, [`escape_html`], lives here too so the page and its SVG share it).

use std::borrow::Cow;

/// The character shown in place of `c`, when `c` must not be printed as it is: C0 controls and
/// DEL as their Unicode control pictures (`␛`, `␍`, `␀`), C1 controls and the bidirectional
/// overrides (which reorder what a person reads) as U+FFFD. Tab and newline print as they are.
pub fn visible_char(c: char) -> Option<char> {
    match c {
        '\t' | '\n' => None,
        '\u{0}'..='\u{1f}' => char::from_u32(0x2400 + c as u32),
        '\u{7f}' => Some('\u{2421}'),
        '\u{80}'..='\u{9f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => Some('\u{fffd}'),
        _ => None,
    }
}

/// `text` with every character [`visible_char`] replaces replaced; borrowed when there is none.
pub fn visible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| visible_char(c).is_some()) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(text.chars().map(|c| visible_char(c).unwrap_or(c)).collect())
}

/// Text safe in HTML content and in quoted attribute values (report.html, its SVG). Control
/// characters other than tab and newline (a console can print anything) show as what they are
/// ([`visible_char`]) instead of vanishing.
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(visible_char(c).unwrap_or(c)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_show_as_pictures_and_plain_text_is_untouched() {
        assert_eq!(visible("\x1b[2Jcleared"), "␛[2Jcleared");
        assert_eq!(visible("\x1b]0;owned\x07title"), "␛]0;owned␇title");
        assert_eq!(visible("100%\rdone"), "100%␍done");
        assert_eq!(visible("nul\0 del\x7f"), "nul␀ del␡");
        assert_eq!(
            visible("csi\u{9b}2J rlo\u{202e}x"),
            "csi\u{fffd}2J rlo\u{fffd}x"
        );
        assert!(matches!(
            visible("a\tb\nc é ✔"),
            Cow::Borrowed("a\tb\nc é ✔")
        ));
    }

    #[test]
    fn escape_neutralises_markup_quotes_and_control_characters() {
        assert_eq!(
            escape_html("<a href=\"x\" title='y'>&amp;</a>"),
            "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;amp;&lt;/a&gt;"
        );
        assert_eq!(escape_html("line 1\nline\t2"), "line 1\nline\t2");
        assert_eq!(escape_html("\u{1b}[31mred\u{0}"), "\u{241B}[31mred\u{2400}");
        assert_eq!(escape_html("crc16 → 0x29B1 ✓"), "crc16 → 0x29B1 ✓");
    }
}
