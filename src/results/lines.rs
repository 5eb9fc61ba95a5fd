//! What every parser does to a console line before reading it: strip line endings and stray
//! control bytes, recognise fwfix's own nonce line, and peel off the prefix a logging subsystem
//! puts in front of what the firmware printed.
//!
//! Pure string handling: it must not decide what a line means; that is each harness's job.

/// The first line fwfix asks the image to print; it identifies the attempt, not a result.
pub(super) const NONCE_PREFIX: &str = "fwfix-nonce:";

/// Strips line endings, surrounding blanks and the odd control byte a UART emits at reset.
pub(super) fn clean(line: &str) -> &str {
    line.trim_matches(|c: char| c.is_whitespace() || c.is_control())
}

/// Whether `line` (cleaned) is fwfix's nonce line rather than firmware output.
pub(super) fn is_nonce(line: &str) -> bool {
    line.starts_with(NONCE_PREFIX)
}

/// What the firmware printed, without the prefix of Zephyr's logging subsystem: the deferred or
/// immediate form `[00:00:00.012,000] <err> os: ` and the minimal form `E: `. Lines without such a
/// prefix come back unchanged (but trimmed at the start).
pub(super) fn strip_log_prefix(line: &str) -> &str {
    let mut rest = line.trim_start();
    if rest.starts_with('[') {
        if let Some(end) = rest.find("] ") {
            rest = rest[end + 2..].trim_start();
        }
    }
    if rest.starts_with('<') {
        if let Some(end) = rest.find("> ") {
            let after = &rest[end + 2..];
            // `<err> os: text`: the module name is one word followed by `: `.
            rest = match after.split_once(": ") {
                Some((module, text)) if is_module_name(module) => text,
                _ => after,
            };
        }
    } else if let Some(text) = ["E: ", "W: ", "I: ", "D: "]
        .iter()
        .find_map(|level| rest.strip_prefix(level))
    {
        rest = text;
    }
    rest
}

fn is_module_name(word: &str) -> bool {
    !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_strips_endings_and_control_bytes() {
        assert_eq!(clean("\u{0}OK\r\n"), "OK");
        assert_eq!(clean("  PASS - test_a \r"), "PASS - test_a");
    }

    #[test]
    fn nonce_lines_are_recognised() {
        assert!(is_nonce("fwfix-nonce: 8f3a"));
        assert!(!is_nonce("nonce: 8f3a"));
    }

    #[test]
    fn log_prefixes_are_removed() {
        assert_eq!(
            strip_log_prefix("[00:00:00.012,000] <err> os: r0/a1:  0x00000000"),
            "r0/a1:  0x00000000"
        );
        assert_eq!(
            strip_log_prefix("<err> os: >>> ZEPHYR FATAL ERROR 0: CPU exception on CPU 0"),
            ">>> ZEPHYR FATAL ERROR 0: CPU exception on CPU 0"
        );
        assert_eq!(
            strip_log_prefix("E: ***** BUS FAULT *****"),
            "***** BUS FAULT *****"
        );
        assert_eq!(
            strip_log_prefix("E:   Precise data bus error"),
            "  Precise data bus error"
        );
        assert_eq!(
            strip_log_prefix("  Precise data bus error"),
            "Precise data bus error"
        );
        assert_eq!(strip_log_prefix("[tick] done"), "done");
        assert_eq!(
            strip_log_prefix("<wrn> a message: with colon"),
            "a message: with colon"
        );
        assert_eq!(strip_log_prefix("PASS - test_a"), "PASS - test_a");
    }
}
