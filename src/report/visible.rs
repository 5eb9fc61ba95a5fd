//! Text from outside fwfix (a firmware's console, a compiler, an agent) made safe to show: a
//! control character is shown as what it is instead of acting. `ESC[2J` would clear a person's
//! terminal, an OSC sequence retitle it, a bare `\r` overwrite the line before it. The one
//! function every rendering uses: the terminal (`ui/`), report.md and report.html.

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
}
