//! What a flasher needs from the ELF besides the ELF: where the vector table is (so a debugger
//! can start the image the way the core's reset would), and the image as a flat `.bin` or an
//! Intel `.hex` for flash commands that take those. Pure functions over the ELF's bytes; the
//! backend reads the file and writes the results.

use object::elf::PT_LOAD;
use object::read::elf::{ElfFile32, FileHeader, ProgramHeader};
use object::{Endianness, Object, ObjectSection};

/// Section names the usual Cortex-M startup files and runtimes put the vector table in.
const VECTOR_SECTIONS: &[&str] = &[".isr_vector", ".vectors", ".vector_table", ".intvecs"];
/// A flat binary spanning more than this is almost certainly a RAM segment far from flash (an
/// objcopy of it would be just as wrong): refuse rather than write gigabytes.
const MAX_BIN_SPAN: u64 = 64 << 20;
/// Bytes per Intel HEX data record, as objcopy writes them.
const HEX_RECORD: usize = 16;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ImageError {
    #[error("not a 32-bit ELF file: {0}")]
    NotElf(String),
    #[error("the ELF has no loadable segment with contents")]
    Empty,
    #[error(
        "its loadable segments span 0x{low:08x}..0x{high:08x} ({} MiB): a flat .bin would be \
         mostly padding; give the flasher {{hex}} or {{elf}} instead",
        (high - low) >> 20
    )]
    TooSparse { low: u64, high: u64 },
}

/// One loadable segment at its load (physical) address: what ends up in the target's memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    pub addr: u32,
    pub data: Vec<u8>,
}

/// The loadable contents of an ELF, sorted by address.
pub fn segments(elf: &[u8]) -> Result<Vec<Segment>, ImageError> {
    let file =
        ElfFile32::<Endianness>::parse(elf).map_err(|e| ImageError::NotElf(e.to_string()))?;
    let endian = file.endian();
    let headers = file
        .elf_header()
        .program_headers(endian, elf)
        .map_err(|e| ImageError::NotElf(e.to_string()))?;
    let mut out = Vec::new();
    for ph in headers {
        if ph.p_type(endian) != PT_LOAD || ph.p_filesz(endian) == 0 {
            continue;
        }
        let data = ph
            .data(endian, elf)
            .map_err(|_| ImageError::NotElf("a segment lies outside the file".into()))?;
        out.push(Segment {
            addr: ph.p_paddr(endian),
            data: data.to_vec(),
        });
    }
    if out.is_empty() {
        return Err(ImageError::Empty);
    }
    out.sort_by_key(|s| s.addr);
    Ok(out)
}

/// Whether the image can make a semihosting call: some loaded halfword is `bkpt 0xab` (Thumb). An
/// image without one can never exit by semihosting, so waiting for its exit code is pointless. A
/// data word that happens to look like one only costs that wait.
pub fn may_semihost(segments: &[Segment]) -> bool {
    const BKPT_AB: [u8; 2] = [0xab, 0xbe];
    segments.iter().any(|s| {
        let skip = usize::from(s.addr % 2 != 0);
        s.data
            .get(skip..)
            .is_some_and(|d| d.chunks_exact(2).any(|h| h == BKPT_AB))
    })
}

/// The 32-bit little-endian word the image puts at `addr`, if it puts one there.
fn word_at(segments: &[Segment], addr: u32) -> Option<u32> {
    segments.iter().find_map(|s| {
        let offset = usize::try_from(addr.checked_sub(s.addr)?).ok()?;
        let bytes: [u8; 4] = s.data.get(offset..offset + 4)?.try_into().ok()?;
        Some(u32::from_le_bytes(bytes))
    })
}

/// Where the vector table is and what it says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VectorTable {
    pub base: u32,
    pub initial_sp: u32,
    /// The reset vector (Thumb bit included).
    pub reset: u32,
    /// How the base was found, for flash.log.
    pub found_by: String,
}

/// Finds the vector table: a section with a vector-table name, else the start of the section
/// holding the entry point, else the lowest loaded address. A candidate whose reset vector is
/// the entry point wins; without that confirmation, the first candidate with two words is used
/// and `found_by` says it is unconfirmed.
pub fn vector_table(elf: &[u8]) -> Result<VectorTable, ImageError> {
    let file =
        ElfFile32::<Endianness>::parse(elf).map_err(|e| ImageError::NotElf(e.to_string()))?;
    let loaded = segments(elf)?;
    let entry = u32::try_from(file.entry()).unwrap_or(0);

    let mut candidates: Vec<(u32, String)> = Vec::new();
    for name in VECTOR_SECTIONS {
        if let Some(section) = file.section_by_name(name) {
            if let Ok(addr) = u32::try_from(section.address()) {
                candidates.push((addr, format!("section {name}")));
            }
        }
    }
    let entry_section = file.sections().find(|s| {
        let (start, size) = (s.address(), s.size());
        size > 0 && (start..start + size).contains(&u64::from(entry))
    });
    if let Some(section) = entry_section {
        if let Ok(addr) = u32::try_from(section.address()) {
            let name = section.name().unwrap_or("?");
            candidates.push((
                addr,
                format!("start of {name}, which holds the entry point"),
            ));
        }
    }
    if let Some(lowest) = loaded.first() {
        candidates.push((lowest.addr, "lowest loaded address".to_string()));
    }

    let read = |base: u32| {
        Some((
            word_at(&loaded, base)?,
            word_at(&loaded, base.checked_add(4)?)?,
        ))
    };
    let confirmed = candidates.iter().find_map(|(base, how)| {
        let (sp, reset) = read(*base)?;
        (reset & !1 == entry & !1 && reset & 1 == 1).then(|| VectorTable {
            base: *base,
            initial_sp: sp,
            reset,
            found_by: format!("{how}; its reset vector is the entry point"),
        })
    });
    if let Some(table) = confirmed {
        return Ok(table);
    }
    candidates
        .iter()
        .find_map(|(base, how)| {
            let (sp, reset) = read(*base)?;
            Some(VectorTable {
                base: *base,
                initial_sp: sp,
                reset,
                found_by: format!(
                    "{how}; unconfirmed: its reset vector 0x{reset:08x} is not the entry point \
                     0x{entry:08x}"
                ),
            })
        })
        .ok_or(ImageError::Empty)
}

/// The image as a flat binary from its lowest loaded address, gaps filled with 0xFF (erased
/// flash), as `objcopy -O binary` writes it.
pub fn flat_binary(segments: &[Segment]) -> Result<Vec<u8>, ImageError> {
    let low = segments.iter().map(|s| u64::from(s.addr)).min();
    let high = segments
        .iter()
        .map(|s| u64::from(s.addr) + s.data.len() as u64)
        .max();
    let (Some(low), Some(high)) = (low, high) else {
        return Err(ImageError::Empty);
    };
    if high - low > MAX_BIN_SPAN {
        return Err(ImageError::TooSparse { low, high });
    }
    let mut out = vec![0xFF; usize::try_from(high - low).unwrap_or(0)];
    for s in segments {
        let start = usize::try_from(u64::from(s.addr) - low).unwrap_or(0);
        out[start..start + s.data.len()].copy_from_slice(&s.data);
    }
    Ok(out)
}

/// The image as Intel HEX: extended linear address records (type 04) whenever the upper 16 bits
/// change, 16-byte data records (00), the entry point (05), the end record (01).
pub fn intel_hex(segments: &[Segment], entry: Option<u32>) -> String {
    let mut out = String::new();
    let mut upper: Option<u16> = None;
    for s in segments {
        let mut offset = 0usize;
        while offset < s.data.len() {
            let addr = s.addr.wrapping_add(offset as u32);
            let high = (addr >> 16) as u16;
            if upper != Some(high) {
                record(&mut out, 0x04, 0, &high.to_be_bytes());
                upper = Some(high);
            }
            // A record never crosses a 64 KiB boundary: its address is 16 bits.
            let to_boundary = 0x1_0000 - (addr & 0xFFFF) as usize;
            let len = HEX_RECORD.min(s.data.len() - offset).min(to_boundary);
            record(
                &mut out,
                0x00,
                (addr & 0xFFFF) as u16,
                &s.data[offset..offset + len],
            );
            offset += len;
        }
    }
    if let Some(entry) = entry {
        record(&mut out, 0x05, 0, &entry.to_be_bytes());
    }
    record(&mut out, 0x01, 0, &[]);
    out
}

fn record(out: &mut String, kind: u8, addr: u16, data: &[u8]) {
    use std::fmt::Write as _;
    let [hi, lo] = addr.to_be_bytes();
    let mut sum = (data.len() as u8)
        .wrapping_add(hi)
        .wrapping_add(lo)
        .wrapping_add(kind);
    let _ = write!(out, ":{:02X}{addr:04X}{kind:02X}", data.len());
    for b in data {
        sum = sum.wrapping_add(*b);
        let _ = write!(out, "{b:02X}");
    }
    let _ = writeln!(out, "{:02X}", sum.wrapping_neg());
}

/// The ELF's entry point, for the hex file's start record.
pub fn entry_point(elf: &[u8]) -> Option<u32> {
    let file = ElfFile32::<Endianness>::parse(elf).ok()?;
    u32::try_from(file.entry()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(addr: u32, data: &[u8]) -> Segment {
        Segment {
            addr,
            data: data.to_vec(),
        }
    }

    #[test]
    fn hex_records_have_the_right_checksums() {
        let hex = intel_hex(&[seg(0x0000_0000, &[1, 2, 3, 4])], None);
        assert_eq!(hex, ":020000040000FA\n:0400000001020304F2\n:00000001FF\n");
    }

    #[test]
    fn hex_switches_the_upper_address_and_never_crosses_64k() {
        let data: Vec<u8> = (0..20).collect();
        let hex = intel_hex(&[seg(0x0800_FFF8, &data)], Some(0x0800_0195));
        let lines: Vec<&str> = hex.lines().collect();
        assert_eq!(lines[0], ":020000040800F2");
        assert!(lines[1].starts_with(":08FFF800"), "{}", lines[1]);
        assert_eq!(lines[2], ":020000040801F1");
        assert!(lines[3].starts_with(":0C000000"), "{}", lines[3]);
        assert_eq!(lines[4], ":040000050800019559");
        assert_eq!(lines[5], ":00000001FF");
    }

    #[test]
    fn flat_binary_pads_gaps_with_erased_flash() {
        let bin = flat_binary(&[seg(0x100, &[1, 2]), seg(0x104, &[3])]).unwrap();
        assert_eq!(bin, vec![1, 2, 0xFF, 0xFF, 3]);
        let far = flat_binary(&[seg(0, &[1]), seg(0x2000_0000, &[2])]).unwrap_err();
        assert!(matches!(far, ImageError::TooSparse { .. }));
        assert!(far.to_string().contains("{hex}"));
        assert_eq!(flat_binary(&[]), Err(ImageError::Empty));
    }

    #[test]
    fn words_are_read_across_segments() {
        let s = [
            seg(0x0, &[0, 0, 1, 0x20, 0x95, 0x02, 0, 0]),
            seg(0x10, &[7]),
        ];
        assert_eq!(word_at(&s, 0), Some(0x2001_0000));
        assert_eq!(word_at(&s, 4), Some(0x295));
        assert_eq!(word_at(&s, 6), None);
        assert_eq!(word_at(&s, 0x10), None);
    }

    #[test]
    fn garbage_is_not_an_elf() {
        assert!(matches!(
            vector_table(b"not an elf"),
            Err(ImageError::NotElf(_))
        ));
    }

    #[test]
    fn semihosting_calls_are_found_in_the_loaded_code() {
        let seg = |addr, data: &[u8]| Segment {
            addr,
            data: data.to_vec(),
        };
        assert!(may_semihost(&[seg(0, &[0x00, 0xbf, 0xab, 0xbe])]));
        // Only on halfword boundaries of the address space.
        assert!(!may_semihost(&[seg(0, &[0x00, 0xab, 0xbe, 0x00])]));
        assert!(may_semihost(&[seg(1, &[0x00, 0xab, 0xbe])]));
        assert!(!may_semihost(&[seg(0, &[0xfe, 0xe7])]));
    }
}
