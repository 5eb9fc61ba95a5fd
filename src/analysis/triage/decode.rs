//! What text encoding a log to triage is in, and UTF-16 read as UTF-8.
//!
//! Triage reads bytes as UTF-8 (invalid sequences are line noise). Two encodings of real logs
//! are not: a UTF-8 byte-order mark glued to line 1 (Windows editors, some IDE consoles) hides a
//! summary there from the rules anchored at a line's start, and UTF-16 (what PowerShell's `>`
//! writes, and some IDE consoles save) has a NUL in every other byte, so it read as binary.
//! [`sniff`] tells them from the first bytes; [`Utf16`] transcodes a UTF-16 stream to UTF-8 as
//! it is read, so the reader's bounds and line numbers hold unchanged.

use std::io::{self, Read};

/// The UTF-8 byte-order mark.
pub const UTF8_BOM: &[u8] = b"\xef\xbb\xbf";

/// Bytes [`sniff`] looks at for UTF-16 without a byte-order mark.
const SNIFF_BYTES: usize = 512;

/// Code units that must be seen before UTF-16 without a mark is believed.
const MIN_UNITS: usize = 8;

/// Share of code units, in percent, that must look like ASCII in UTF-16 (one NUL byte, one text
/// byte) for a stream without a mark to be read as UTF-16.
const ASCII_UNIT_PERCENT: usize = 90;

/// The byte order of UTF-16 code units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endian {
    Little,
    Big,
}

/// How a log's bytes are to be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// UTF-8 (or ASCII, or line noise): read as it is, after `skip` bytes of byte-order mark.
    Utf8 { skip: usize },
    /// UTF-16 in the given order, after `skip` bytes of byte-order mark.
    Utf16 { endian: Endian, skip: usize },
}

/// The encoding of a log that starts with `head`: a byte-order mark decides; without one, text
/// whose code units are nearly all ASCII in UTF-16 (a NUL beside each printable byte) is UTF-16.
/// A run of NULs (a UART break, zero padding) is not: its text bytes are NULs too.
pub fn sniff(head: &[u8]) -> Encoding {
    if head.starts_with(UTF8_BOM) {
        return Encoding::Utf8 {
            skip: UTF8_BOM.len(),
        };
    }
    if head.starts_with(b"\xff\xfe") {
        return Encoding::Utf16 {
            endian: Endian::Little,
            skip: 2,
        };
    }
    if head.starts_with(b"\xfe\xff") {
        return Encoding::Utf16 {
            endian: Endian::Big,
            skip: 2,
        };
    }
    let units: Vec<[u8; 2]> = head[..head.len().min(SNIFF_BYTES)]
        .chunks_exact(2)
        .map(|pair| [pair[0], pair[1]])
        .collect();
    if units.len() >= MIN_UNITS {
        let ascii =
            |text: u8| text.is_ascii_graphic() || matches!(text, b' ' | b'\t' | b'\r' | b'\n');
        let share = |is_unit: &dyn Fn(&[u8; 2]) -> bool| {
            units.iter().filter(|u| is_unit(u)).count() * 100 / units.len()
        };
        if share(&|u| u[1] == 0 && ascii(u[0])) >= ASCII_UNIT_PERCENT {
            return Encoding::Utf16 {
                endian: Endian::Little,
                skip: 0,
            };
        }
        if share(&|u| u[0] == 0 && ascii(u[1])) >= ASCII_UNIT_PERCENT {
            return Encoding::Utf16 {
                endian: Endian::Big,
                skip: 0,
            };
        }
    }
    Encoding::Utf8 { skip: 0 }
}

/// Bytes read from the inner stream at a time.
const CHUNK_BYTES: usize = 64 * 1024;

/// A UTF-16 stream read as UTF-8. An unpaired surrogate becomes U+FFFD, as does an odd byte at
/// the very end.
#[derive(Debug)]
pub struct Utf16<R> {
    inner: R,
    endian: Endian,
    /// Bytes read but not yet decoded: an odd byte, or half a surrogate pair.
    raw: Vec<u8>,
    /// Decoded UTF-8 not yet handed out, from `at` on.
    out: Vec<u8>,
    at: usize,
    eof: bool,
}

impl<R: Read> Utf16<R> {
    pub fn new(inner: R, endian: Endian) -> Utf16<R> {
        Utf16 {
            inner,
            endian,
            raw: Vec::new(),
            out: Vec::new(),
            at: 0,
            eof: false,
        }
    }

    /// Reads a chunk and decodes what of it is whole; false at the end of the stream.
    fn refill(&mut self) -> io::Result<bool> {
        let mut chunk = vec![0u8; CHUNK_BYTES];
        let n = loop {
            match self.inner.read(&mut chunk) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        };
        self.out.clear();
        self.at = 0;
        if n == 0 {
            self.eof = true;
            let units = self.units(self.raw.len());
            let text: String = char::decode_utf16(units)
                .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
                .collect();
            self.out.extend_from_slice(text.as_bytes());
            if self.raw.len() % 2 == 1 {
                self.out.extend_from_slice("\u{fffd}".as_bytes());
            }
            self.raw.clear();
            return Ok(!self.out.is_empty());
        }
        self.raw.extend_from_slice(&chunk[..n]);
        let mut whole = self.raw.len() & !1;
        // A high surrogate at the end waits for its pair.
        if whole >= 2 {
            let last = self.unit(whole - 2);
            if (0xd800..0xdc00).contains(&last) {
                whole -= 2;
            }
        }
        let text: String = char::decode_utf16(self.units(whole))
            .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
            .collect();
        self.out.extend_from_slice(text.as_bytes());
        self.raw.drain(..whole);
        Ok(true)
    }

    fn unit(&self, at: usize) -> u16 {
        let pair = [self.raw[at], self.raw[at + 1]];
        match self.endian {
            Endian::Little => u16::from_le_bytes(pair),
            Endian::Big => u16::from_be_bytes(pair),
        }
    }

    /// The code units in the first `bytes` of `raw` (an odd last byte left out).
    fn units(&self, bytes: usize) -> Vec<u16> {
        (0..bytes / 2).map(|i| self.unit(2 * i)).collect()
    }
}

impl<R: Read> Read for Utf16<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at == self.out.len() {
            if self.eof || !self.refill()? {
                return Ok(0);
            }
        }
        let n = buf.len().min(self.out.len() - self.at);
        buf[..n].copy_from_slice(&self.out[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utf16(text: &str, endian: Endian, bom: bool) -> Vec<u8> {
        let mut bytes = Vec::new();
        if bom {
            bytes.extend(match endian {
                Endian::Little => [0xff, 0xfe],
                Endian::Big => [0xfe, 0xff],
            });
        }
        for unit in text.encode_utf16() {
            bytes.extend(match endian {
                Endian::Little => unit.to_le_bytes(),
                Endian::Big => unit.to_be_bytes(),
            });
        }
        bytes
    }

    fn decoded(bytes: &[u8], endian: Endian) -> String {
        let mut text = String::new();
        Utf16::new(bytes, endian).read_to_string(&mut text).unwrap();
        text
    }

    #[test]
    fn a_byte_order_mark_decides() {
        let text = "PS> west build\r\nFATAL ERROR: command exited with status 1\r\n";
        for endian in [Endian::Little, Endian::Big] {
            let bytes = utf16(text, endian, true);
            assert_eq!(sniff(&bytes), Encoding::Utf16 { endian, skip: 2 });
            assert_eq!(decoded(&bytes[2..], endian), text);
        }
        assert_eq!(sniff(b"\xef\xbb\xbfok\n"), Encoding::Utf8 { skip: 3 });
    }

    #[test]
    fn utf16_without_a_mark_is_told_by_its_nuls() {
        let text = "Tests run: 12, Failures: 0\n";
        for endian in [Endian::Little, Endian::Big] {
            let bytes = utf16(text, endian, false);
            assert_eq!(sniff(&bytes), Encoding::Utf16 { endian, skip: 0 });
        }
    }

    #[test]
    fn nul_runs_binary_and_short_inputs_stay_utf8() {
        let mut break_then_text = vec![0u8; 10_000];
        break_then_text.extend_from_slice(b"boot: ok\n");
        let random: Vec<u8> = (0..4096u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let mut image = Vec::new();
        for i in 0..200u32 {
            image.extend_from_slice(&[0x00, 0x20, 0x00, 0x00]);
            image.extend_from_slice(&i.to_le_bytes());
        }
        for bytes in [
            break_then_text,
            random,
            image,
            b"plain text\n".to_vec(),
            b"a\0b\0".to_vec(),
        ] {
            assert_eq!(sniff(&bytes), Encoding::Utf8 { skip: 0 });
        }
    }

    #[test]
    fn pairs_split_across_reads_and_broken_units_are_decoded() {
        let text = "ok \u{1F600} done ✓\n";
        let bytes = utf16(text, Endian::Little, false);
        // One byte at a time: every code unit and the surrogate pair cross reads.
        struct Trickle<'a>(&'a [u8]);
        impl Read for Trickle<'_> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let Some((&first, rest)) = self.0.split_first() else {
                    return Ok(0);
                };
                buf[0] = first;
                self.0 = rest;
                Ok(1)
            }
        }
        let mut out = String::new();
        Utf16::new(Trickle(&bytes), Endian::Little)
            .read_to_string(&mut out)
            .unwrap();
        assert_eq!(out, text);
        // A lone high surrogate and an odd last byte.
        assert_eq!(
            decoded(&[0x3d, 0xd8, b'a', 0, b'b'], Endian::Little),
            "\u{fffd}a\u{fffd}"
        );
    }
}
