//! `ConfigError` and the pieces every configuration error carries: the file, the line and column
//! (from a byte offset into the text), and the key at fault. It must not decide what is valid:
//! that is `schema`'s and `resolve`'s job.

use std::fmt;
use std::path::{Path, PathBuf};

/// Board file or profile file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigKind {
    Board,
    Profile,
}

impl ConfigKind {
    /// The directory such files live in, in a repository and among the shipped ones.
    pub fn dir(self) -> &'static str {
        match self {
            ConfigKind::Board => "boards",
            ConfigKind::Profile => "profiles",
        }
    }
}

impl fmt::Display for ConfigKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ConfigKind::Board => "board",
            ConfigKind::Profile => "profile",
        })
    }
}

/// A place in a configuration file. Line and column are 1-based; the column counts characters,
/// as editors do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub file: PathBuf,
    pub line: usize,
    pub column: usize,
}

impl Location {
    /// The location of byte `offset` of `text`. An offset past the end, or inside a multi-byte
    /// character, is moved back to the nearest character boundary.
    pub fn at(file: &Path, text: &str, offset: usize) -> Self {
        let mut end = offset.min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let before = &text[..end];
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        Location {
            file: file.to_path_buf(),
            line: before.matches('\n').count() + 1,
            column: before[line_start..].chars().count() + 1,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file.display(), self.line, self.column)
    }
}

/// A key: the tables leading to it, then its own name. Displayed dotted (`qemu.machine`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KeyPath(Vec<String>);

impl KeyPath {
    pub fn new<S: AsRef<str>>(parts: &[S]) -> Self {
        KeyPath(parts.iter().map(|p| p.as_ref().to_string()).collect())
    }

    /// This path with `part` appended.
    pub fn child(&self, part: &str) -> Self {
        let mut parts = self.0.clone();
        parts.push(part.to_string());
        KeyPath(parts)
    }

    pub fn parts(&self) -> &[String] {
        &self.0
    }

    /// The key's own name (empty for the document itself).
    pub fn leaf(&self) -> &str {
        self.0.last().map_or("", String::as_str)
    }

    /// Where the key sits, for messages: `in [qemu]`, `in [strategy.llm]` or `at the top level`.
    pub fn place(&self) -> String {
        match self.0.split_last() {
            Some((_, tables)) if !tables.is_empty() => format!("in [{}]", tables.join(".")),
            Some(_) | None => "at the top level".to_string(),
        }
    }
}

impl fmt::Display for KeyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.join("."))
    }
}

/// Everything that can be wrong with a board or profile file, or with finding one. Every error
/// about a file's content names the file, line, column and key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{}: cannot read: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is {kind}, not a regular file: give a board or profile file", path.display())]
    NotRegular { path: PathBuf, kind: &'static str },
    /// The file goes on past `cap` bytes; `at` is where.
    #[error("{at}: the file goes on past {cap} bytes, more than any board or profile file needs")]
    TooLarge { at: Location, cap: u64 },
    #[error("{}: cannot list the directory: {source}", dir.display())]
    ListDir {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{at}: TOML syntax error: {message}")]
    Syntax { at: Location, message: String },
    #[error(
        "{at}: unknown key `{}` {} (expected one of: {})",
        key.leaf(),
        key.place(),
        expected.join(", ")
    )]
    UnknownKey {
        at: Location,
        key: KeyPath,
        expected: Vec<String>,
    },
    #[error("{at}: missing key `{}` {}: {why}", key.leaf(), key.place())]
    MissingKey {
        at: Location,
        key: KeyPath,
        why: String,
    },
    #[error("{at}: invalid value for `{}` {}: {reason}", key.leaf(), key.place())]
    InvalidValue {
        at: Location,
        key: KeyPath,
        reason: String,
    },
    /// A value TOML accepted but the file's shape does not, where no single key is at fault.
    #[error("{at}: {message}")]
    Invalid { at: Location, message: String },
    #[error("{at}: table [{key}] is not allowed here: {reason}")]
    TableNotAllowed {
        at: Location,
        key: KeyPath,
        reason: String,
    },
    #[error(
        "{at}: cannot tell whether this is a board or a profile: a board has `backend`, a \
         profile has [build] (or put the file in a `boards/` or `profiles/` directory)"
    )]
    UnknownKind { at: Location },
    /// A `--board`/`--profile` argument longer than any path: not quoted back.
    #[error("the {kind} given is {len} bytes long; a {kind} name or path is at most {cap}")]
    NameTooLong {
        kind: ConfigKind,
        len: usize,
        cap: usize,
    },
    #[error(
        "{kind} `{name}` not found (looked for {}; available: {})",
        searched.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "),
        if available.is_empty() { "none".to_string() } else { available.join(", ") }
    )]
    NotFound {
        kind: ConfigKind,
        name: String,
        searched: Vec<PathBuf>,
        available: Vec<String>,
    },
    /// A setting that may come from the profile or the environment, given by neither.
    #[error("{setting} is not set: {hint}")]
    Unset { setting: String, hint: String },
    /// An environment variable fwfix reads holds a value it cannot use. `reason` never quotes a
    /// secret.
    #[error("environment variable {variable}: {reason}")]
    Environment { variable: String, reason: String },
}

impl ConfigError {
    /// Where in a file the error is, when it is about a file's content.
    pub fn location(&self) -> Option<&Location> {
        match self {
            ConfigError::Syntax { at, .. }
            | ConfigError::UnknownKey { at, .. }
            | ConfigError::MissingKey { at, .. }
            | ConfigError::InvalidValue { at, .. }
            | ConfigError::Invalid { at, .. }
            | ConfigError::TableNotAllowed { at, .. }
            | ConfigError::UnknownKind { at }
            | ConfigError::TooLarge { at, .. } => Some(at),
            ConfigError::Read { .. }
            | ConfigError::NotRegular { .. }
            | ConfigError::ListDir { .. }
            | ConfigError::NotFound { .. }
            | ConfigError::NameTooLong { .. }
            | ConfigError::Unset { .. }
            | ConfigError::Environment { .. } => None,
        }
    }

    /// `(line, column)`, 1-based, when the error is about a file's content.
    pub fn line_col(&self) -> Option<(usize, usize)> {
        self.location().map(|at| (at.line, at.column))
    }

    /// The key at fault, when there is one.
    pub fn key(&self) -> Option<&KeyPath> {
        match self {
            ConfigError::UnknownKey { key, .. }
            | ConfigError::MissingKey { key, .. }
            | ConfigError::InvalidValue { key, .. }
            | ConfigError::TableNotAllowed { key, .. } => Some(key),
            ConfigError::Read { .. }
            | ConfigError::NotRegular { .. }
            | ConfigError::TooLarge { .. }
            | ConfigError::ListDir { .. }
            | ConfigError::Syntax { .. }
            | ConfigError::Invalid { .. }
            | ConfigError::UnknownKind { .. }
            | ConfigError::NotFound { .. }
            | ConfigError::NameTooLong { .. }
            | ConfigError::Unset { .. }
            | ConfigError::Environment { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn location_counts_lines_and_characters() {
        let text = "a = 1\nbé = 2\n";
        let file = Path::new("x.toml");
        assert_eq!(Location::at(file, text, 0).to_string(), "x.toml:1:1");
        assert_eq!(Location::at(file, text, 6).to_string(), "x.toml:2:1");
        // `=` on line 2 is byte 10 but character 4.
        assert_eq!(Location::at(file, text, 10).column, 4);
    }

    #[test]
    fn location_survives_offsets_past_the_end_or_inside_a_character() {
        let text = "é";
        let file = Path::new("x.toml");
        assert_eq!(Location::at(file, text, 1).column, 1);
        assert_eq!(Location::at(file, text, 99).column, 2);
    }

    #[test]
    fn key_path_places() {
        assert_eq!(KeyPath::new(&["name"]).place(), "at the top level");
        assert_eq!(KeyPath::new(&["qemu", "machine"]).place(), "in [qemu]");
        assert_eq!(
            KeyPath::new(&["strategy", "llm", "model"]).place(),
            "in [strategy.llm]"
        );
        assert_eq!(KeyPath::new(&["serial", "baud"]).to_string(), "serial.baud");
    }
}
