//! What an image puts in the target's memory, as one digest: two ELFs with the same digest load
//! the same bytes at the same addresses and start at the same entry point, so a patch whose image
//! digests like the baseline's changes nothing the firmware does (a comment, whitespace, a function
//! the link drops). Pure: bytes in, digest out.
//!
//! The digest covers every allocated section (SHF_ALLOC): its address, size, whether it has
//! contents in the file, and those contents; and the entry point. It ignores what does not reach
//! the target: debug info, symbol and string tables, the build id note, section names and where
//! things sit in the file.

use object::{Object, ObjectSection, SectionFlags, SectionKind};
use sha2::{Digest, Sha256};

/// Why an ELF could not be digested.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DigestError {
    #[error("not an ELF file: {0}")]
    NotElf(String),
    #[error("section {name} cannot be read: {reason}")]
    Section { name: String, reason: String },
}

/// `SHF_ALLOC`: the section occupies memory on the target.
const SHF_ALLOC: u64 = 0x2;
/// GNU ld's build id: differs between otherwise identical links.
const BUILD_ID: &str = ".note.gnu.build-id";

/// The hex SHA-256 of the image's loadable content.
pub fn loadable_digest(elf: &[u8]) -> Result<String, DigestError> {
    let file = object::File::parse(elf).map_err(|e| DigestError::NotElf(e.to_string()))?;
    if file.format() != object::BinaryFormat::Elf {
        return Err(DigestError::NotElf(format!("{:?} file", file.format())));
    }
    let mut sections: Vec<(u64, u64, bool, &[u8])> = Vec::new();
    for section in file.sections() {
        let SectionFlags::Elf { sh_flags } = section.flags() else {
            continue;
        };
        let name = section.name().unwrap_or("?");
        if sh_flags & SHF_ALLOC == 0 || section.size() == 0 || name == BUILD_ID {
            continue;
        }
        let zero_fill = matches!(
            section.kind(),
            SectionKind::UninitializedData | SectionKind::UninitializedTls
        );
        let data = if zero_fill {
            &[][..]
        } else {
            section.data().map_err(|e| DigestError::Section {
                name: name.to_string(),
                reason: e.to_string(),
            })?
        };
        sections.push((section.address(), section.size(), zero_fill, data));
    }
    // File order is layout; memory order is what the target sees.
    sections.sort_by_key(|s| (s.0, s.1));
    let mut hash = Sha256::new();
    hash.update(file.entry().to_le_bytes());
    for (address, size, zero_fill, data) in sections {
        hash.update(address.to_le_bytes());
        hash.update(size.to_le_bytes());
        hash.update([u8::from(zero_fill)]);
        hash.update((data.len() as u64).to_le_bytes());
        hash.update(data);
    }
    Ok(hash.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_not_an_elf_is_an_error_naming_why() {
        let e = loadable_digest(b"not an image").unwrap_err();
        assert!(matches!(e, DigestError::NotElf(_)), "{e}");
    }
}
