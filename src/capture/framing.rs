//! Line framing: turns the raw bytes a console delivers, in whatever chunks they arrive, into text
//! lines. Owns the rules for line ends (`\n`, `\r\n`), over-long lines (split at a cap) and bytes
//! that are not UTF-8 (replaced, never an error). It does no I/O and knows nothing of timestamps.

/// The default cap on one line, in bytes. Firmware that never prints a newline (a binary dump, a
/// runaway loop) must not grow one line without bound.
pub const DEFAULT_LINE_CAP: usize = 4096;

/// Splits a byte stream into lines. Feed it chunks with [`LineSplitter::push`] and call
/// [`LineSplitter::finish`] at end of stream to get a last line that had no newline.
#[derive(Debug)]
pub struct LineSplitter {
    pending: Vec<u8>,
    cap: usize,
}

impl LineSplitter {
    /// `cap` is the longest line kept whole (at least 4 bytes so a UTF-8 character always fits).
    pub fn new(cap: usize) -> Self {
        Self {
            pending: Vec::new(),
            cap: cap.max(4),
        }
    }

    /// Adds a chunk and returns the lines it completed, in order.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<String> {
        let mut lines = Vec::new();
        for &byte in chunk {
            if byte == b'\n' {
                lines.push(decode(&self.pending));
                self.pending.clear();
                continue;
            }
            self.pending.push(byte);
            if self.pending.len() > self.cap {
                let cut = char_boundary(&self.pending, self.cap);
                let rest = self.pending.split_off(cut);
                lines.push(decode(&self.pending));
                self.pending = rest;
            }
        }
        lines
    }

    /// Ends the stream: the last line if it had no newline (an empty tail yields nothing).
    pub fn finish(&mut self) -> Option<String> {
        if self.pending.is_empty() {
            return None;
        }
        let line = decode(&self.pending);
        self.pending.clear();
        Some(line)
    }
}

impl Default for LineSplitter {
    fn default() -> Self {
        Self::new(DEFAULT_LINE_CAP)
    }
}

/// Decodes one line lossily and drops the carriage returns around it, so `\r\n` endings and the
/// `\n\r` some firmware prints both give clean text.
fn decode(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .trim_matches('\r')
        .to_string()
}

/// The largest cut at or below `at` that does not split a UTF-8 character; `at` itself when the
/// bytes there are not UTF-8 anyway.
fn char_boundary(bytes: &[u8], at: usize) -> usize {
    let is_continuation = |b: u8| b & 0b1100_0000 == 0b1000_0000;
    (at.saturating_sub(3)..=at)
        .rev()
        .find(|&i| i < bytes.len() && !is_continuation(bytes[i]))
        .filter(|&i| i > 0)
        .unwrap_or(at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn split_all(chunks: &[&[u8]], cap: usize) -> Vec<String> {
        let mut s = LineSplitter::new(cap);
        let mut out = Vec::new();
        for c in chunks {
            out.extend(s.push(c));
        }
        out.extend(s.finish());
        out
    }

    #[test]
    fn splits_on_newline_and_strips_crlf() {
        assert_eq!(
            split_all(&[b"a\r\nb\nc\r\n"], 100),
            vec!["a".to_string(), "b".into(), "c".into()]
        );
    }

    #[test]
    fn crlf_split_across_chunks() {
        assert_eq!(
            split_all(&[b"abc\r", b"\ndef\n\r", b"ghi\n"], 100),
            vec!["abc".to_string(), "def".into(), "ghi".into()]
        );
    }

    #[test]
    fn last_line_without_newline_is_kept() {
        assert_eq!(
            split_all(&[b"one\ntwo"], 100),
            vec!["one".to_string(), "two".into()]
        );
        let mut s = LineSplitter::new(100);
        assert!(s.push(b"x\n").len() == 1);
        assert_eq!(s.finish(), None);
    }

    #[test]
    fn empty_lines_are_lines() {
        assert_eq!(
            split_all(&[b"\n\nz\n"], 100),
            vec![String::new(), String::new(), "z".into()]
        );
    }

    #[test]
    fn long_line_is_split_at_cap() {
        let long = vec![b'x'; 25];
        let lines = split_all(&[&long, b"\n"], 10);
        assert_eq!(lines, vec!["x".repeat(10), "x".repeat(10), "x".repeat(5)]);
    }

    #[test]
    fn long_line_split_keeps_characters_whole() {
        // "é" is two bytes: a cap of 5 would cut the third one in half.
        let text = "ééééé\n";
        let lines = split_all(&[text.as_bytes()], 5);
        assert_eq!(lines, vec!["éé".to_string(), "éé".into(), "é".into()]);
    }

    #[test]
    fn invalid_utf8_is_replaced() {
        let lines = split_all(&[b"ok \xff\xfe end\n"], 100);
        assert_eq!(lines, vec!["ok \u{fffd}\u{fffd} end".to_string()]);
    }

    proptest! {
        #[test]
        fn chunking_does_not_change_lines(text in "[a-z\r\n]{0,200}", cuts in proptest::collection::vec(0usize..200, 0..8)) {
            let bytes = text.as_bytes();
            let whole = split_all(&[bytes], 16);
            let mut points: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
            points.sort_unstable();
            let mut chunks: Vec<&[u8]> = Vec::new();
            let mut start = 0;
            for p in points {
                chunks.push(&bytes[start..p]);
                start = p;
            }
            chunks.push(&bytes[start..]);
            prop_assert_eq!(split_all(&chunks, 16), whole);
        }

        #[test]
        fn no_line_exceeds_cap(bytes in proptest::collection::vec(any::<u8>(), 0..500)) {
            for line in split_all(&[&bytes], 8) {
                // Lossy decoding may widen a bad byte to 3 bytes of U+FFFD.
                prop_assert!(line.chars().count() <= 8);
            }
        }
    }
}
