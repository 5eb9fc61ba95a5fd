//! Finding, reading and loading board and profile files: a path, or a name looked up in the
//! repository's `boards/` / `profiles/` and then among the files shipped with fwfix; listing
//! what is available; and `validate_file` for `fwfix validate`. The only file I/O of `config/`.

use super::error::{ConfigError, ConfigKind, Location};
use super::model::{Board, Profile};
use super::parse::{self, Source};
use super::raw;
use super::resolve;
use super::shipped::{find_shipped, shipped, shipped_source, ShippedFile};
use crate::input::InputError;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Parses and validates the text of a board file; `source` is the name errors report.
pub fn parse_board(text: &str, source: &Path) -> Result<Board, ConfigError> {
    let src = Source { file: source, text };
    resolve::board(src, parse::raw(&src, raw::BOARD)?)
}

/// Parses and validates the text of a profile file; `source` is the name errors report.
pub fn parse_profile(text: &str, source: &Path) -> Result<Profile, ConfigError> {
    let src = Source { file: source, text };
    resolve::profile(src, parse::raw(&src, raw::PROFILE)?)
}

/// Reads and validates the board file at `path`.
pub fn load_board(path: &Path) -> Result<Board, ConfigError> {
    parse_board(&read(path)?, path)
}

/// Reads and validates the profile file at `path`.
pub fn load_profile(path: &Path) -> Result<Profile, ConfigError> {
    parse_profile(&read(path)?, path)
}

/// Reads and validates the matrix manifest at `path`.
pub fn load_manifest(path: &Path) -> Result<super::Manifest, ConfigError> {
    super::manifest::parse_manifest(&read(path)?, path)
}

/// The board `--board ARG` names: a file path (an existing file, or anything with a `/` or
/// ending in `.toml`; relative to the current directory), or a name looked up in
/// `<repo>/boards/NAME.toml`, then among the boards shipped with fwfix.
pub fn resolve_board(arg: &str, repo: &Path) -> Result<Board, ConfigError> {
    match locate(ConfigKind::Board, arg, repo)? {
        Located::File(path) => load_board(&path),
        Located::Shipped(file) => parse_board(file.text, &file.source()),
    }
}

/// The profile `--profile ARG` names: a file path (as for [`resolve_board`]), or a name looked
/// up in `<repo>/profiles/NAME.toml`, then among the profiles shipped with fwfix.
pub fn resolve_profile(arg: &str, repo: &Path) -> Result<Profile, ConfigError> {
    match locate(ConfigKind::Profile, arg, repo)? {
        Located::File(path) => load_profile(&path),
        Located::Shipped(file) => parse_profile(file.text, &file.source()),
    }
}

/// A validated file of either kind.
// Made once per file `fwfix validate` checks: the size difference between the two costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Validated {
    Board(Board),
    Profile(Profile),
}

/// Reads and fully validates a board or profile file without running anything. The kind comes
/// from the directory (`boards/`, `profiles/`), else from the content: a `backend` key makes a
/// board, a `[build]` table a profile.
pub fn validate_file(path: &Path) -> Result<Validated, ConfigError> {
    let text = read(path)?;
    let kind = match kind_from_dir(path) {
        Some(kind) => kind,
        None => kind_from_content(&Source {
            file: path,
            text: &text,
        })?,
    };
    match kind {
        ConfigKind::Board => parse_board(&text, path).map(Validated::Board),
        ConfigKind::Profile => parse_profile(&text, path).map(Validated::Profile),
    }
}

/// Where a listed file comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The repository's `boards/` or `profiles/`.
    Repo,
    /// Embedded in fwfix.
    Shipped,
}

/// One file in a listing, loaded (or not: a broken file is listed with its error).
#[derive(Debug)]
pub struct Listed<T> {
    /// The name `--board` / `--profile` takes to select it.
    pub name: String,
    pub source: PathBuf,
    pub origin: Origin,
    /// A repository file of the same name wins over this shipped one.
    pub shadowed: bool,
    pub loaded: Result<T, ConfigError>,
}

/// The boards shipped with fwfix.
pub fn list_shipped_boards() -> Vec<Listed<Board>> {
    list(ConfigKind::Board, None, parse_board).unwrap_or_default()
}

/// The boards `--board NAME` can select in `repo`: the repository's first, then the shipped
/// ones, in name order.
pub fn list_boards(repo: &Path) -> Result<Vec<Listed<Board>>, ConfigError> {
    list(ConfigKind::Board, Some(repo), parse_board)
}

/// The profiles shipped with fwfix.
pub fn list_shipped_profiles() -> Vec<Listed<Profile>> {
    list(ConfigKind::Profile, None, parse_profile).unwrap_or_default()
}

/// The profiles `--profile NAME` can select in `repo`: the repository's first, then the shipped
/// ones, in name order.
pub fn list_profiles(repo: &Path) -> Result<Vec<Listed<Profile>>, ConfigError> {
    list(ConfigKind::Profile, Some(repo), parse_profile)
}

enum Located {
    File(PathBuf),
    Shipped(&'static ShippedFile),
}

/// Longer than any path the system takes (PATH_MAX).
const MAX_ARG_BYTES: usize = 4096;

fn locate(kind: ConfigKind, arg: &str, repo: &Path) -> Result<Located, ConfigError> {
    if arg.len() > MAX_ARG_BYTES {
        return Err(ConfigError::NameTooLong {
            kind,
            len: arg.len(),
            cap: MAX_ARG_BYTES,
        });
    }
    let as_path = Path::new(arg);
    // Only an existing *file* counts as a path: a firmware repository often has a directory
    // named like a profile (`crc/`), and that must not hide the profile.
    if as_path.is_file() || arg.contains('/') || arg.ends_with(".toml") {
        return Ok(Located::File(as_path.to_path_buf()));
    }
    let in_repo = repo.join(kind.dir()).join(format!("{arg}.toml"));
    // Anything at that path (even a dangling link) is the user's choice: load it and report
    // what is wrong rather than silently falling back to a shipped file.
    if fs::symlink_metadata(&in_repo).is_ok() {
        return Ok(Located::File(in_repo));
    }
    if let Some(file) = find_shipped(kind, arg) {
        return Ok(Located::Shipped(file));
    }
    let mut available: Vec<String> = repo_files(kind, repo)
        .unwrap_or_default()
        .into_iter()
        .map(|(name, _)| name)
        .chain(shipped(kind).map(|f| f.name.to_string()))
        .collect();
    available.sort();
    available.dedup();
    Err(ConfigError::NotFound {
        kind,
        name: arg.to_string(),
        searched: vec![in_repo, shipped_source(kind, arg)],
        available,
    })
}

fn list<T>(
    kind: ConfigKind,
    repo: Option<&Path>,
    parse: fn(&str, &Path) -> Result<T, ConfigError>,
) -> Result<Vec<Listed<T>>, ConfigError> {
    let mut listed = Vec::new();
    let mut repo_names = Vec::new();
    if let Some(repo) = repo {
        for (name, path) in repo_files(kind, repo)? {
            let loaded = read(&path).and_then(|text| parse(&text, &path));
            repo_names.push(name.clone());
            listed.push(Listed {
                name,
                source: path,
                origin: Origin::Repo,
                shadowed: false,
                loaded,
            });
        }
    }
    let mut shipped_files: Vec<_> = shipped(kind).collect();
    shipped_files.sort_by_key(|f| f.name);
    for file in shipped_files {
        let source = file.source();
        listed.push(Listed {
            name: file.name.to_string(),
            shadowed: repo_names.iter().any(|n| n == file.name),
            origin: Origin::Shipped,
            loaded: parse(file.text, &source),
            source,
        });
    }
    Ok(listed)
}

/// `NAME.toml` files in `<repo>/boards` (or `profiles`), by name. No such directory: none.
fn repo_files(kind: ConfigKind, repo: &Path) -> Result<Vec<(String, PathBuf)>, ConfigError> {
    let dir = repo.join(kind.dir());
    let list_error = |source| ConfigError::ListDir {
        dir: dir.clone(),
        source,
    };
    let entries = match fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(list_error(e)),
    };
    let mut files = Vec::new();
    for entry in entries {
        let path = entry.map_err(list_error)?.path();
        let is_toml = path.extension().is_some_and(|ext| ext == "toml") && !path.is_dir();
        match path.file_stem().and_then(|s| s.to_str()) {
            Some(stem) if is_toml => files.push((stem.to_string(), path.clone())),
            Some(_) | None => {}
        }
    }
    files.sort();
    Ok(files)
}

/// A board or profile file is a few kilobytes; anything past this is not one.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// The text of a board or profile file: a regular file, at most [`MAX_FILE_BYTES`].
fn read(path: &Path) -> Result<String, ConfigError> {
    crate::input::read_regular_text(path, MAX_FILE_BYTES).map_err(|e| match e {
        InputError::Io { path, source } => ConfigError::Read { path, source },
        InputError::NotRegular { path, kind } => ConfigError::NotRegular { path, kind },
        InputError::TooLarge { path, cap, head } => {
            let text = String::from_utf8_lossy(&head);
            ConfigError::TooLarge {
                at: Location::at(&path, &text, text.len()),
                cap,
            }
        }
    })
}

fn kind_from_dir(path: &Path) -> Option<ConfigKind> {
    let dir = path.parent()?.file_name()?;
    if dir == ConfigKind::Board.dir() {
        Some(ConfigKind::Board)
    } else if dir == ConfigKind::Profile.dir() {
        Some(ConfigKind::Profile)
    } else {
        None
    }
}

fn kind_from_content(src: &Source<'_>) -> Result<ConfigKind, ConfigError> {
    let doc = parse::document(src)?;
    let has = |wanted: &str| doc.get_ref().iter().any(|(key, _)| key.get_ref() == wanted);
    if has("backend") {
        Ok(ConfigKind::Board)
    } else if has("build") {
        Ok(ConfigKind::Profile)
    } else {
        Err(ConfigError::UnknownKind {
            at: Location::at(src.file, src.text, 0),
        })
    }
}
