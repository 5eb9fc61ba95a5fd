//! The board and profile files shipped with fwfix, embedded in the binary so they work wherever
//! it is installed. The list must name every file in the crate's `boards/` and `profiles/`; a
//! test checks that. It must not parse them: `lookup` does, like any other file.

use super::error::ConfigKind;
use std::path::PathBuf;

/// One embedded file.
#[derive(Debug)]
pub struct ShippedFile {
    pub kind: ConfigKind,
    /// The lookup name: the file name without `.toml`.
    pub name: &'static str,
    pub text: &'static str,
}

impl ShippedFile {
    /// How the file is named in messages and in `Board::source` / `Profile::source`, e.g.
    /// `<shipped>/boards/qemu-mps2-an385.toml`.
    pub fn source(&self) -> PathBuf {
        shipped_source(self.kind, self.name)
    }
}

/// Where a shipped file called `name` is (or would be), for messages.
pub fn shipped_source(kind: ConfigKind, name: &str) -> PathBuf {
    PathBuf::from(format!("<shipped>/{}/{name}.toml", kind.dir()))
}

macro_rules! shipped {
    ($kind:expr, $dir:literal, $name:literal) => {
        ShippedFile {
            kind: $kind,
            name: $name,
            text: include_str!(concat!("../../", $dir, "/", $name, ".toml")),
        }
    };
}

const FILES: &[ShippedFile] = &[
    shipped!(ConfigKind::Board, "boards", "qemu-mps2-an385"),
    shipped!(ConfigKind::Board, "boards", "qemu-lm3s6965evb"),
    shipped!(ConfigKind::Profile, "profiles", "crc"),
    shipped!(ConfigKind::Profile, "profiles", "ringbuf"),
    shipped!(ConfigKind::Profile, "profiles", "sensor"),
    shipped!(ConfigKind::Profile, "profiles", "event"),
    shipped!(ConfigKind::Profile, "profiles", "math"),
];

/// Every shipped file, boards first.
pub fn shipped_files() -> &'static [ShippedFile] {
    FILES
}

/// The shipped files of one kind.
pub fn shipped(kind: ConfigKind) -> impl Iterator<Item = &'static ShippedFile> {
    FILES.iter().filter(move |f| f.kind == kind)
}

/// The shipped file of `kind` called `name`.
pub fn find_shipped(kind: ConfigKind, name: &str) -> Option<&'static ShippedFile> {
    shipped(kind).find(|f| f.name == name)
}
