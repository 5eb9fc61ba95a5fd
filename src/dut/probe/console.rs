//! RTT bytes as console lines: defmt frames decoded with the image's own format table when the
//! ELF carries a `.defmt` section, plain text split into lines otherwise. It knows nothing about
//! probes or where the bytes came from.

use crate::capture::framing::LineSplitter;
use defmt_decoder::{DecodeError, Locations, StreamDecoder, Table};

/// The defmt table of an ELF: None when the image does not use defmt. Err says why a `.defmt`
/// section could not be read (the console then falls back to text).
pub fn defmt_table(elf: &[u8]) -> Result<Option<(Table, Option<Locations>)>, String> {
    let Some(table) = Table::parse(elf).map_err(|e| e.to_string())? else {
        return Ok(None);
    };
    // Locations need debug info; an image without it still decodes.
    let locations = table.get_locations(elf).ok().filter(|l| !l.is_empty());
    Ok(Some((table, locations)))
}

/// Turns the bytes of one RTT up channel into lines.
pub enum RttDecoder<'t> {
    Text(LineSplitter),
    Defmt {
        stream: Box<dyn StreamDecoder + Send + Sync + 't>,
        locations: Option<&'t Locations>,
        /// A malformed frame was seen: raw defmt cannot find the next frame boundary.
        broken: bool,
    },
}

impl<'t> RttDecoder<'t> {
    pub fn text() -> Self {
        RttDecoder::Text(LineSplitter::default())
    }

    pub fn defmt(table: &'t Table, locations: Option<&'t Locations>) -> Self {
        RttDecoder::Defmt {
            stream: table.new_stream_decoder(),
            locations,
            broken: false,
        }
    }

    /// The lines complete with `bytes`.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        match self {
            RttDecoder::Text(splitter) => splitter.push(bytes),
            RttDecoder::Defmt {
                stream,
                locations,
                broken,
            } => {
                if *broken {
                    return Vec::new();
                }
                stream.received(bytes);
                let mut lines = Vec::new();
                loop {
                    match stream.decode() {
                        Ok(frame) => {
                            let mut line = match frame.level() {
                                Some(level) => format!(
                                    "{} {}",
                                    level.as_str().to_ascii_uppercase(),
                                    frame.display_message()
                                ),
                                // println!: the image's own text, as a harness prints it.
                                None => frame.display_message().to_string(),
                            };
                            if let Some(loc) = locations.and_then(|l| l.get(&frame.index())) {
                                line.push_str(&format!(" ({}:{})", loc.file.display(), loc.line));
                            }
                            lines.push(line);
                        }
                        Err(DecodeError::UnexpectedEof) => break,
                        Err(DecodeError::Malformed) => {
                            *broken = true;
                            lines.push(
                                "fwfix: malformed defmt frame; the rest of the RTT output cannot \
                                 be decoded (does the ELF match the image on the target?)"
                                    .to_string(),
                            );
                            break;
                        }
                    }
                }
                lines
            }
        }
    }

    /// A last unterminated text line.
    pub fn finish(&mut self) -> Option<String> {
        match self {
            RttDecoder::Text(splitter) => splitter.finish(),
            RttDecoder::Defmt { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny ARM ELF made with arm-none-eabi-as from `tests/data/defmt/defmt.s`: a `.defmt`
    /// section with two format strings (index 0 `crc ok {=u8}` at info level, index 1
    /// `FAIL: {=str}` at error level), defmt version 4, raw encoding. No defmt-using Rust
    /// toolchain is installed here, so the table is hand-made; the framing is defmt-decoder's.
    const ELF: &[u8] = include_bytes!("../../../tests/data/defmt/defmt.elf");

    /// The ELF on the heap: the ELF reader wants its headers aligned, which an included byte
    /// array is not guaranteed to be (a file read into a Vec, as the session does, is).
    fn elf() -> Vec<u8> {
        ELF.to_vec()
    }

    #[test]
    fn an_image_without_defmt_is_text() {
        let text = b"\x7fELF not really";
        assert!(defmt_table(text).is_err() || matches!(defmt_table(text), Ok(None)));
        let mut d = RttDecoder::text();
        assert_eq!(d.push(b"a\r\nb"), vec!["a".to_string()]);
        assert_eq!(d.finish().as_deref(), Some("b"));
    }

    #[test]
    fn defmt_frames_split_anywhere_become_lines() {
        let elf = elf();
        let (table, locations) = defmt_table(&elf).unwrap().unwrap();
        let mut d = RttDecoder::defmt(&table, locations.as_ref());
        // index 0 with one u8; index 1 with a str: u32 length, then the bytes.
        let mut bytes = vec![0, 0, 7];
        bytes.extend([1, 0, 3, 0, 0, 0]);
        bytes.extend(b"crc");
        let (first, second) = bytes.split_at(5);
        assert_eq!(d.push(first), vec!["INFO crc ok 7".to_string()]);
        assert_eq!(d.push(second), vec!["ERROR FAIL: crc".to_string()]);
        assert_eq!(d.finish(), None);
    }

    #[test]
    fn a_malformed_frame_stops_decoding_with_a_note() {
        let elf = elf();
        let (table, _) = defmt_table(&elf).unwrap().unwrap();
        let mut d = RttDecoder::defmt(&table, None);
        let lines = d.push(&[9, 9, 9]);
        assert_eq!(lines.len(), 1);
        assert!(lines[0].contains("malformed defmt frame"), "{lines:?}");
        assert!(d.push(&[0, 0, 1]).is_empty());
    }
}
