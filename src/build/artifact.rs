//! What a build's artifact is: fwfix boots, symbolizes and flashes ELF images only (the `.bin`
//! and `.hex` a flasher asks for are made from the ELF). An artifact that is something else is a
//! configuration error, named for what it is, before any target is given it.

use std::io::Read as _;
use std::path::Path;

const ELF_MAGIC: &[u8] = b"\x7fELF";
/// Enough of the file to tell the formats apart.
const SNIFF: u64 = 512;

/// What the file at `path` is when it is not an ELF image (e.g. "an Intel HEX file"); None for
/// an ELF image.
pub fn not_elf(path: &Path) -> std::io::Result<Option<&'static str>> {
    let mut head = Vec::new();
    std::fs::File::open(path)?
        .take(SNIFF)
        .read_to_end(&mut head)?;
    Ok(describe(&head))
}

/// What `head`, the start of a file, is when it is not an ELF image.
fn describe(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(ELF_MAGIC) {
        return None;
    }
    let first_line = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let hex_digits = |line: &[u8]| {
        line.iter()
            .filter(|&&b| b != b'\r')
            .all(u8::is_ascii_hexdigit)
    };
    Some(match head {
        [] => "an empty file",
        [b':', _, ..] if hex_digits(&first_line[1..]) => "an Intel HEX file",
        [b'S', b'0'..=b'9', ..] if hex_digits(&first_line[1..]) => "a Motorola S-record file",
        _ if std::str::from_utf8(head).is_ok_and(|text| {
            text.chars()
                .all(|c| !c.is_control() || c.is_ascii_whitespace())
        }) =>
        {
            "a text file"
        }
        _ => "a raw binary (not an ELF image)",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tells_elf_from_what_else_a_build_leaves() {
        assert_eq!(describe(b"\x7fELF\x01\x01\x01\0\0\0"), None);
        assert_eq!(
            describe(b":020000040800F2\r\n:10000000000002200D0100080F0100081101000891\r\n"),
            Some("an Intel HEX file")
        );
        assert_eq!(
            describe(b"S00F000068656C6C6F202020202000003C\nS11F00007C0802A6"),
            Some("a Motorola S-record file")
        );
        assert_eq!(describe(b"not firmware\n"), Some("a text file"));
        assert_eq!(describe(b""), Some("an empty file"));
        assert_eq!(
            describe(b"\x00\x00\x02\x20\x0d\x01\x00\x08"),
            Some("a raw binary (not an ELF image)")
        );
    }

    #[test]
    fn reads_only_the_start_of_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fw.hex");
        std::fs::write(&path, ":020000040800F2\n".repeat(10_000)).unwrap();
        assert_eq!(not_elf(&path).unwrap(), Some("an Intel HEX file"));
        assert!(not_elf(&dir.path().join("missing")).is_err());
    }
}
