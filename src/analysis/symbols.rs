//! Symbolisation of code addresses in a firmware image: function, source file and line.
//!
//! DWARF line information (through `addr2line`) answers first; the ELF symbol table fills in when
//! an image was built without `-g`, or for code with no line info (hand-written assembly). It
//! also lists the image's `test_*` functions, a stand-in for a Unity image's run order.
//!
//! This module reads the ELF once, in [`Symbolizer::open`]; afterwards every lookup is in memory.
//! It must not run external tools (`addr2line`, `nm`) or guess: an address it cannot place gets a
//! [`Location`] with only its address.
//!
//! A `Symbolizer` holds `addr2line`'s loader, which caches lazily without locks: it is `Send` but
//! not `Sync`. Move it into `spawn_blocking` from async code; do not share it between threads.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use object::{Object, ObjectSymbol, SymbolKind};

use super::Location;

/// Why an image could not be opened for symbolisation.
#[derive(Debug, thiserror::Error)]
pub enum SymbolError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not an ELF image fwfix can read: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("cannot load debug information from {path}: {message}")]
    Debug { path: PathBuf, message: String },
}

/// A function in the ELF symbol table.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FunctionSymbol {
    /// Without the Thumb bit.
    start: u64,
    size: u64,
    name: String,
}

/// Looks up code addresses in one firmware image.
pub struct Symbolizer {
    path: PathBuf,
    loader: addr2line::Loader,
    /// Sorted by start address.
    functions: Vec<FunctionSymbol>,
    /// The image has DWARF line information.
    has_lines: bool,
}

impl std::fmt::Debug for Symbolizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Symbolizer")
            .field("path", &self.path)
            .field("functions", &self.functions.len())
            .finish_non_exhaustive()
    }
}

/// Code addresses on Arm carry the Thumb state in bit 0; instructions start on even addresses.
fn code_address(address: u64) -> u64 {
    address & !1
}

fn demangle(name: &str) -> String {
    addr2line::demangle_auto(name.into(), None).into_owned()
}

fn hex(address: u64) -> String {
    format!("{address:#010x}")
}

impl Symbolizer {
    /// Reads the image's symbol table and debug information.
    pub fn open(elf: &Path) -> Result<Symbolizer, SymbolError> {
        let data = std::fs::read(elf).map_err(|source| SymbolError::Read {
            path: elf.to_path_buf(),
            source,
        })?;
        let file = object::File::parse(&*data).map_err(|e| SymbolError::Parse {
            path: elf.to_path_buf(),
            message: e.to_string(),
        })?;
        let mut functions: Vec<FunctionSymbol> = file
            .symbols()
            .filter(|s| s.kind() == SymbolKind::Text && s.is_definition())
            .filter_map(|s| {
                let name = s.name().ok()?;
                // `$t`/`$a`/`$d` are Arm mapping symbols, not functions.
                if name.is_empty() || name.starts_with('$') {
                    return None;
                }
                Some(FunctionSymbol {
                    start: code_address(s.address()),
                    size: s.size(),
                    name: demangle(name),
                })
            })
            .collect();
        functions.sort_by(|a, b| a.start.cmp(&b.start).then_with(|| a.name.cmp(&b.name)));
        functions.dedup_by(|a, b| a.start == b.start && a.name == b.name);

        let has_lines = file.section_by_name(".debug_line").is_some();
        let loader = addr2line::Loader::new(elf).map_err(|e| SymbolError::Debug {
            path: elf.to_path_buf(),
            message: e.to_string(),
        })?;
        Ok(Symbolizer {
            path: elf.to_path_buf(),
            loader,
            functions,
            has_lines,
        })
    }

    /// Whether the image has anything to name code with: function symbols or line information.
    /// A stripped image has neither.
    pub fn has_symbols(&self) -> bool {
        !self.functions.is_empty() || self.has_lines
    }

    /// The image this symbolizer reads.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The function, file and line of a code address (the Thumb bit is ignored).
    pub fn locate(&self, address: u64) -> Location {
        let mut location = self.lookup(code_address(address));
        location.address = hex(address);
        location
    }

    /// Where the call that returns to `return_address` (e.g. a stacked LR) was made.
    ///
    /// A return address points after the call instruction, which may already be the next source
    /// line, so the lookup is made 2 bytes back: inside the call (`bl` is 4 bytes, `blx` 2).
    pub fn locate_call_site(&self, return_address: u64) -> Location {
        let mut location = self.lookup(code_address(return_address).saturating_sub(2));
        location.address = hex(return_address);
        location
    }

    /// The functions at a code address, innermost (inlined) first; empty when nothing is there.
    pub fn functions_at(&self, address: u64) -> Vec<String> {
        let address = code_address(address);
        let mut names = self.frame_functions(address);
        if names.is_empty() {
            names.extend(self.symbol_at(address).map(|s| s.name.clone()));
        }
        names
    }

    /// [`Self::functions_at`] for the call that returns to `return_address`.
    pub fn functions_at_call_site(&self, return_address: u64) -> Vec<String> {
        self.functions_at(code_address(return_address).saturating_sub(2))
    }

    /// Function symbols named `test_*`, by address: the order a Unity runner usually calls them
    /// in, as test files define them in the order they are run.
    pub fn test_functions(&self) -> Vec<String> {
        self.function_names(|name| name.starts_with("test_"))
    }

    /// Every function symbol's name, by address, once each.
    pub fn function_names(&self, keep: impl Fn(&str) -> bool) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for f in &self.functions {
            if keep(&f.name) && !names.contains(&f.name) {
                names.push(f.name.clone());
            }
        }
        names
    }

    /// The source file each function symbol is defined in, as the debug information names it
    /// (functions without line information are left out).
    pub fn function_files(&self) -> BTreeMap<String, String> {
        self.functions
            .iter()
            .filter_map(|f| Some((f.name.clone(), self.lookup(f.start).file?)))
            .collect()
    }

    fn lookup(&self, address: u64) -> Location {
        let mut location = Location {
            address: hex(address),
            function: None,
            file: None,
            line: None,
        };
        if let Ok(mut frames) = self.loader.find_frames(address) {
            // The first frame is the innermost: the code actually at this address.
            if let Ok(Some(frame)) = frames.next() {
                location.function = frame
                    .function
                    .as_ref()
                    .and_then(|f| f.demangle().ok())
                    .map(|name| name.into_owned());
                if let Some(l) = frame.location {
                    location.file = l.file.map(source_path);
                    location.line = l.line;
                }
            }
        }
        if location.file.is_none() {
            if let Ok(Some(l)) = self.loader.find_location(address) {
                location.file = l.file.map(source_path);
                location.line = l.line;
            }
        }
        if location.function.is_none() {
            location.function = self.symbol_at(address).map(|s| s.name.clone());
        }
        location
    }

    fn frame_functions(&self, address: u64) -> Vec<String> {
        let mut names = Vec::new();
        let Ok(mut frames) = self.loader.find_frames(address) else {
            return names;
        };
        while let Ok(Some(frame)) = frames.next() {
            if let Some(name) = frame.function.as_ref().and_then(|f| f.demangle().ok()) {
                names.push(name.into_owned());
            }
        }
        names
    }

    /// The function symbol covering `address`. A symbol without a size (hand-written assembly)
    /// covers up to the next symbol.
    fn symbol_at(&self, address: u64) -> Option<&FunctionSymbol> {
        let after = self.functions.partition_point(|f| f.start <= address);
        let candidates = &self.functions[..after];
        candidates
            .iter()
            .rev()
            .find(|f| address < f.start.saturating_add(f.size))
            .or_else(|| {
                let last = candidates.last()?;
                let next_start = self.functions.get(after).map_or(u64::MAX, |f| f.start);
                (last.size == 0 && address < next_start).then_some(last)
            })
    }
}

/// A source path as the debug information names it, with its `.` and `..` steps taken out:
/// a Makefile in `build/gcc` that compiles `../../../../Source/tasks.c` gives
/// `<dir>/build/gcc/./../../../../Source/tasks.c`, which people (and the work-tree prefix fwfix
/// strips) know as `<root>/Source/tasks.c`. Lexical only: the file need not exist here.
fn source_path(file: &str) -> String {
    use std::path::Component;
    let mut out: Vec<Component<'_>> = Vec::new();
    for part in Path::new(file).components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => match out.last() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                // `/..` is `/`; a relative path keeps the `..` it cannot take out.
                Some(Component::RootDir | Component::Prefix(_)) => {}
                Some(Component::ParentDir | Component::CurDir) | None => out.push(part),
            },
            Component::Normal(_) | Component::RootDir | Component::Prefix(_) => out.push(part),
        }
    }
    out.iter().collect::<PathBuf>().display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn can_move_to_a_blocking_thread() {
        fn assert_send<T: Send>() {}
        assert_send::<Symbolizer>();
    }

    #[test]
    fn source_paths_lose_their_dot_and_dot_dot_steps() {
        assert_eq!(
            source_path("/w/FreeRTOS/Demo/P/build/gcc/./../../../../Source/tasks.c"),
            "/w/FreeRTOS/Source/tasks.c"
        );
        assert_eq!(source_path("src/./crc.c"), "src/crc.c");
        assert_eq!(source_path("../lib/x.c"), "../lib/x.c");
        assert_eq!(source_path("a/../../x.c"), "../x.c");
        assert_eq!(source_path("/../x.c"), "/x.c");
        assert_eq!(source_path("src/crc.c"), "src/crc.c");
    }

    #[test]
    fn thumb_bit_is_stripped() {
        assert_eq!(code_address(0x1a5), 0x1a4);
        assert_eq!(code_address(0x1a4), 0x1a4);
    }

    #[test]
    fn missing_file_is_a_read_error() {
        let err = Symbolizer::open(Path::new("no/such/image.elf")).unwrap_err();
        assert!(matches!(err, SymbolError::Read { .. }), "{err:?}");
        assert!(err.to_string().contains("no/such/image.elf"));
    }

    #[test]
    fn text_is_a_parse_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notes.txt");
        std::fs::write(&path, "not an image").unwrap();
        let err = Symbolizer::open(&path).unwrap_err();
        assert!(matches!(err, SymbolError::Parse { .. }), "{err:?}");
    }
}
