//! The matrix manifest of `fwfix matrix`: which boards and profiles to cross, which pairs to leave
//! out, and how the pairs run. Raw TOML with spans, then a validated [`Manifest`] whose every
//! entry remembers where it was written, so a board that does not load or an exclusion that
//! matches nothing is reported at the manifest's file:line:col. Loading the boards and profiles
//! themselves is the caller's (through `lookup`), as for `--board` and `--profile`.
//!
//! ```toml
//! boards = ["qemu-mps2-an385", "qemu-lm3s6965evb", "boards/bench-nucleo.toml"]
//! profiles = ["crc", "ringbuf"]
//! repeat = 1        # attempts per pair
//! retries = 1       # further runs of a pair that ended on an infrastructure error
//! sim_first = true  # a hardware pair runs only when its profile passed on a QEMU board
//!
//! [[exclude]]
//! board = "qemu-lm3s6965evb"
//! profile = "crc"
//! reason = "no CRC unit on this part"
//! ```

use super::error::{ConfigError, KeyPath, Location};
use super::parse::{self, Source};
use super::raw::{Node, Str, StrList};
use serde::Deserialize;
use serde_spanned::Spanned;
use std::path::{Path, PathBuf};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawManifest {
    boards: Option<StrList>,
    profiles: Option<StrList>,
    repeat: Option<Spanned<i64>>,
    retries: Option<Spanned<i64>>,
    sim_first: Option<Spanned<bool>>,
    exclude: Option<Vec<Spanned<RawExclude>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExclude {
    board: Option<Str>,
    profile: Option<Str>,
    reason: Option<Str>,
}

const V: Node = Node::Value;
/// `[[exclude]]` entries are checked by serde (an array of tables is one value to the schema).
const SCHEMA: &[(&str, Node)] = &[
    ("boards", V),
    ("profiles", V),
    ("repeat", V),
    ("retries", V),
    ("sim_first", V),
    ("exclude", V),
];

/// More attempts or retries than this is a typo, not a plan.
const MAX_REPEAT: i64 = 1000;
const MAX_RETRIES: i64 = 10;

/// A board or profile as the manifest names it: a name (looked up like `--board NAME`) or a
/// path, made absolute against the manifest's directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestEntry {
    pub arg: String,
    pub at: Location,
}

/// A pair (or every pair of a board, or of a profile) to leave out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exclusion {
    pub board: Option<String>,
    pub profile: Option<String>,
    pub reason: Option<String>,
    pub at: Location,
}

impl Exclusion {
    /// Whether it leaves out the pair of this board and profile, each known by the name in its
    /// file or by the entry that named it.
    pub fn matches(&self, board: [&str; 2], profile: [&str; 2]) -> bool {
        let hit = |want: &Option<String>, names: [&str; 2]| {
            want.as_deref().is_none_or(|w| names.contains(&w))
        };
        hit(&self.board, board) && hit(&self.profile, profile)
    }
}

/// A validated manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    pub source: PathBuf,
    pub boards: Vec<ManifestEntry>,
    pub profiles: Vec<ManifestEntry>,
    pub repeat: u32,
    pub retries: u32,
    pub sim_first: bool,
    pub exclude: Vec<Exclusion>,
}

/// Parses and validates the text of a manifest; `source` is its path (relative entries are
/// taken from its directory).
pub fn parse_manifest(text: &str, source: &Path) -> Result<Manifest, ConfigError> {
    let src = Source { file: source, text };
    let raw: RawManifest = parse::raw(&src, SCHEMA)?;
    let dir = source.parent().unwrap_or(Path::new("."));
    let list = |value: Option<StrList>, key: &str| -> Result<Vec<ManifestEntry>, ConfigError> {
        let key_path = KeyPath::new(&[key]);
        let Some(list) = value else {
            return Err(ConfigError::MissingKey {
                at: src.at(0),
                key: key_path,
                why: format!("a matrix names its {key} (a list of names or paths)"),
            });
        };
        if list.get_ref().is_empty() {
            return Err(ConfigError::InvalidValue {
                at: src.at(list.span().start),
                key: key_path,
                reason: "the list is empty".into(),
            });
        }
        let mut entries: Vec<ManifestEntry> = Vec::new();
        for item in list.into_inner() {
            let at = src.at(item.span().start);
            let text = item.into_inner();
            let arg = if text.contains('/') || text.ends_with(".toml") {
                dir.join(&text).display().to_string()
            } else {
                text.clone()
            };
            if text.trim().is_empty() || entries.iter().any(|e| e.arg == arg) {
                return Err(ConfigError::InvalidValue {
                    at,
                    key: key_path,
                    reason: format!("`{text}` is empty or named twice"),
                });
            }
            entries.push(ManifestEntry { arg, at });
        }
        Ok(entries)
    };
    let count = |value: Option<Spanned<i64>>, key: &str, default: i64, max: i64| {
        let Some(value) = value else {
            return Ok(default);
        };
        let n = *value.get_ref();
        if !(0..=max).contains(&n) || (key == "repeat" && n == 0) {
            return Err(ConfigError::InvalidValue {
                at: src.at(value.span().start),
                key: KeyPath::new(&[key]),
                reason: format!("{n} is out of range (at most {max})"),
            });
        }
        Ok(n)
    };
    let mut exclude = Vec::new();
    for item in raw.exclude.unwrap_or_default() {
        let at = src.at(item.span().start);
        let e = item.into_inner();
        if e.board.is_none() && e.profile.is_none() {
            return Err(ConfigError::Invalid {
                at,
                message: "an [[exclude]] names a board, a profile, or both".into(),
            });
        }
        exclude.push(Exclusion {
            board: e.board.map(Spanned::into_inner),
            profile: e.profile.map(Spanned::into_inner),
            reason: e.reason.map(Spanned::into_inner),
            at,
        });
    }
    Ok(Manifest {
        source: source.to_path_buf(),
        boards: list(raw.boards, "boards")?,
        profiles: list(raw.profiles, "profiles")?,
        repeat: u32::try_from(count(raw.repeat, "repeat", 1, MAX_REPEAT)?).unwrap_or(1),
        retries: u32::try_from(count(raw.retries, "retries", 1, MAX_RETRIES)?).unwrap_or(1),
        sim_first: raw.sim_first.is_none_or(Spanned::into_inner),
        exclude,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Manifest, String> {
        parse_manifest(text, Path::new("ci/nightly.toml")).map_err(|e| e.to_string())
    }

    #[test]
    fn a_full_manifest_with_defaults_and_paths_from_its_directory() {
        let m = parse(
            "boards = [\"qemu-mps2-an385\", \"boards/nucleo.toml\"]\nprofiles = [\"crc\"]\n\
             [[exclude]]\nboard = \"qemu-mps2-an385\"\nreason = \"flaky\"\n",
        )
        .unwrap();
        assert_eq!(m.boards[0].arg, "qemu-mps2-an385");
        assert_eq!(m.boards[1].arg, "ci/boards/nucleo.toml");
        assert_eq!(m.boards[1].at.line, 1);
        assert_eq!((m.repeat, m.retries, m.sim_first), (1, 1, true));
        assert_eq!(m.exclude.len(), 1);
        assert!(m.exclude[0].matches(["qemu-mps2-an385", "x"], ["crc", "crc"]));
        assert!(!m.exclude[0].matches(["other", "other"], ["crc", "crc"]));
        assert_eq!(m.exclude[0].at.line, 3);
    }

    #[test]
    fn mistakes_are_named_at_their_place() {
        let e = parse("profiles = [\"crc\"]\n").unwrap_err();
        assert!(e.contains("missing key `boards`"), "{e}");
        let e = parse("boards = []\nprofiles = [\"crc\"]\n").unwrap_err();
        assert!(
            e.starts_with("ci/nightly.toml:1:10") && e.contains("empty"),
            "{e}"
        );
        let e = parse("boards = [\"a\", \"a\"]\nprofiles = [\"crc\"]\n").unwrap_err();
        assert!(
            e.starts_with("ci/nightly.toml:1:16") && e.contains("twice"),
            "{e}"
        );
        let e = parse("boards = [\"a\"]\nprofiles = [\"crc\"]\nretries = 99\n").unwrap_err();
        assert!(e.starts_with("ci/nightly.toml:3:11"), "{e}");
        let e = parse("boards = [\"a\"]\nprofiles = [\"crc\"]\nrepeat = 0\n").unwrap_err();
        assert!(e.contains("repeat"), "{e}");
        let e = parse("boards = [\"a\"]\nprofiles = [\"c\"]\n[[exclude]]\nreason = \"x\"\n")
            .unwrap_err();
        assert!(
            e.starts_with("ci/nightly.toml:3:1") && e.contains("names a board"),
            "{e}"
        );
        let e =
            parse("boards = [\"a\"]\nprofiles = [\"c\"]\n[[exclude]]\nbord = \"a\"\n").unwrap_err();
        assert!(
            e.starts_with("ci/nightly.toml:4:") && e.contains("bord"),
            "{e}"
        );
        let e = parse("boards = [\"a\"]\nprofiles = [\"c\"]\njobs = 3\n").unwrap_err();
        assert!(
            e.starts_with("ci/nightly.toml:3:1") && e.contains("unknown key `jobs`"),
            "{e}"
        );
    }
}
