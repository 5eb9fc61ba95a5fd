//! Symbolisation of code addresses in a firmware image: function, source file and line.
//!
//! DWARF line information (through `addr2line`) answers first; the ELF symbol table fills in when
//! an image was built without `-g`, or for code with no line info (hand-written assembly). It
//! also lists the image's `test_*` functions, a stand-in for a Unity image's run order.
//!
//! Only live code is named. An address outside every allocated executable (SHF_EXECINSTR)
//! section, such as one in the vector table, names no function. Inside code, the ELF symbol
//! table has the last word: `--gc-sections` drops a function's code but not its DWARF, whose
//! ranges then start at 0 and overlap whatever is linked there, so a DWARF answer whose outermost
//! function is not the symbol covering the address is thrown away, and its line with it unless
//! the line table names the symbol's own file.
//!
//! This module reads the ELF once, in [`Symbolizer::open`]; afterwards every lookup is in memory.
//! It must not run external tools (`addr2line`, `nm`) or guess: an address it cannot place gets a
//! [`Location`] with only its address.
//!
//! A `Symbolizer` holds `addr2line`'s loader, which caches lazily without locks: it is `Send` but
//! not `Sync`. Move it into `spawn_blocking` from async code; do not share it between threads.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use object::{Object, ObjectSection, ObjectSymbol, SectionFlags, SymbolKind};

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

/// An allocated section of the image: where it is loaded and, for code, its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Section {
    start: u64,
    end: u64,
    name: String,
    /// The section's contents when it is executable (SHF_EXECINSTR), else None.
    code: Option<Vec<u8>>,
}

/// Looks up code addresses in one firmware image.
pub struct Symbolizer {
    path: PathBuf,
    loader: addr2line::Loader,
    /// Sorted by start address.
    functions: Vec<FunctionSymbol>,
    /// Allocated sections, in the order the ELF lists them.
    sections: Vec<Section>,
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

        let sections = file
            .sections()
            .filter_map(|section| {
                let SectionFlags::Elf { sh_flags } = section.flags() else {
                    return None;
                };
                let allocated = sh_flags & u64::from(object::elf::SHF_ALLOC) != 0;
                if !allocated || section.size() == 0 {
                    return None;
                }
                let executable = sh_flags & u64::from(object::elf::SHF_EXECINSTR) != 0;
                Some(Section {
                    start: section.address(),
                    end: section.address().saturating_add(section.size()),
                    name: section.name().unwrap_or("?").to_string(),
                    code: executable.then(|| section.data().unwrap_or_default().to_vec()),
                })
            })
            .collect();

        let has_lines = file.section_by_name(".debug_line").is_some();
        let loader = addr2line::Loader::new(elf).map_err(|e| SymbolError::Debug {
            path: elf.to_path_buf(),
            message: e.to_string(),
        })?;
        Ok(Symbolizer {
            path: elf.to_path_buf(),
            loader,
            functions,
            sections,
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
        if names.is_empty() && self.in_code(address) {
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

    /// The image's source file a path printed by the firmware names (`__FILE__` is relative to
    /// wherever the compiler ran: `./../../../../Demo/Common/Minimal/PollQ.c`), as the debug
    /// information names it: the one source file whose path ends with the printed one, its `.`
    /// and `..` steps dropped. None when no source, or more than one, fits.
    pub fn source_named(&self, printed: &str) -> Option<String> {
        let sources: std::collections::BTreeSet<String> =
            self.function_files().into_values().collect();
        source_ending_with(printed, sources.iter().map(String::as_str))
    }

    /// The name of the allocated section holding `address` when it is not code (the vector
    /// table, constants, RAM): a PC there ran off into data. None for code, and for an address
    /// in no section of the image.
    pub fn non_code_section(&self, address: u64) -> Option<&str> {
        let address = code_address(address);
        if self.in_code(address) {
            return None;
        }
        self.sections
            .iter()
            .find(|s| s.start <= address && address < s.end)
            .map(|s| s.name.as_str())
    }

    /// The target of the Thumb-2 `bl` that ends just before `return_address` (e.g. a stacked
    /// LR), read from the image's code; None when the instruction there is no `bl` (a `blx`
    /// through a register, or LR not a return address at all).
    pub fn call_target(&self, return_address: u64) -> Option<u64> {
        let at = code_address(return_address).checked_sub(4)?;
        let bytes = self.code_bytes(at, 4)?;
        let first = u16::from_le_bytes([bytes[0], bytes[1]]);
        let second = u16::from_le_bytes([bytes[2], bytes[3]]);
        decode_bl(first, second, at)
    }

    /// Whether the function symbol covering `caller` holds a `bl` to the function symbol covering
    /// `callee` (decoded at every halfword of its code: a literal pool can only add a false
    /// call, never hide a real one). False when either is in no function.
    pub fn calls(&self, caller: u64, callee: u64) -> bool {
        let (Some(from), Some(to)) = (
            self.symbol_at(code_address(caller)),
            self.symbol_at(code_address(callee)),
        ) else {
            return false;
        };
        let Some(code) = self.code_bytes(from.start, from.size) else {
            return false;
        };
        let halfwords: Vec<u16> = code
            .chunks_exact(2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
            .collect();
        (0u64..)
            .zip(halfwords.windows(2))
            .filter_map(|(i, w)| decode_bl(w[0], w[1], from.start + 2 * i))
            .any(|target| target == to.start)
    }

    /// Whether two code addresses lie in the same function symbol (inlined code counts as the
    /// function it was inlined into). False when either is in none.
    pub fn same_function(&self, a: u64, b: u64) -> bool {
        match (
            self.symbol_at(code_address(a)),
            self.symbol_at(code_address(b)),
        ) {
            (Some(x), Some(y)) => x.start == y.start,
            _ => false,
        }
    }

    /// Whether the instruction just before `return_address` is a call: a `bl`, or a 16-bit
    /// `blx <reg>`. None when the image holds no code there.
    pub fn follows_call(&self, return_address: u64) -> Option<bool> {
        let end = code_address(return_address);
        let blx = self
            .code_bytes(end.checked_sub(2)?, 2)
            .map(|b| is_blx_register(u16::from_le_bytes([b[0], b[1]])))?;
        Some(blx || self.call_target(return_address).is_some())
    }

    /// `len` bytes of code from `address`, when they lie in one executable section.
    fn code_bytes(&self, address: u64, len: u64) -> Option<&[u8]> {
        self.sections.iter().find_map(|s| {
            let code = s.code.as_deref()?;
            let offset = usize::try_from(address.checked_sub(s.start)?).ok()?;
            code.get(offset..offset.checked_add(usize::try_from(len).ok()?)?)
        })
    }

    /// Whether `address` lies in an allocated executable section. An image that lists no
    /// executable section at all (no section headers) is not second-guessed.
    fn in_code(&self, address: u64) -> bool {
        let mut code = self.sections.iter().filter(|s| s.code.is_some()).peekable();
        code.peek().is_none() || code.any(|s| s.start <= address && address < s.end)
    }

    fn lookup(&self, address: u64) -> Location {
        let mut location = Location {
            address: hex(address),
            function: None,
            file: None,
            line: None,
        };
        if !self.in_code(address) {
            return location;
        }
        let symbol = self.symbol_at(address);
        let frames = self.frames(address);
        if self.dwarf_agrees(&frames, symbol) {
            // The first frame is the innermost: the code actually at this address.
            if let Some(frame) = frames.first() {
                location.function.clone_from(&frame.function);
                location.file.clone_from(&frame.file);
                location.line = frame.line;
            }
        }
        if location.file.is_none() {
            if let Some((file, line)) = self.line_of(address) {
                // Without a DWARF function that agrees, a line is only believed when the line
                // table gives the covering symbol's own start the same file: a line sequence of
                // discarded code overlaps live code just as its function's range does.
                let trusted = match symbol {
                    Some(s) => {
                        location.function.is_some()
                            || self.line_of(s.start).is_some_and(|(f, _)| f == file)
                    }
                    None => self.functions.is_empty(),
                };
                if trusted {
                    location.file = Some(file);
                    location.line = line;
                }
            }
        }
        if location.function.is_none() {
            location.function = symbol.map(|s| s.name.clone());
        }
        location
    }

    /// The DWARF frames at `address`, innermost first.
    fn frames(&self, address: u64) -> Vec<Frame> {
        let mut out = Vec::new();
        let Ok(mut frames) = self.loader.find_frames(address) else {
            return out;
        };
        while let Ok(Some(frame)) = frames.next() {
            let (file, line) = match frame.location {
                Some(l) => (l.file.map(source_path), l.line),
                None => (None, None),
            };
            out.push(Frame {
                function: frame
                    .function
                    .as_ref()
                    .and_then(|f| f.demangle().ok())
                    .map(|name| name.into_owned()),
                file,
                line,
            });
        }
        out
    }

    fn line_of(&self, address: u64) -> Option<(String, Option<u32>)> {
        let l = self.loader.find_location(address).ok()??;
        Some((source_path(l.file?), l.line))
    }

    /// Whether DWARF's answer belongs to live code: its outermost function is the ELF symbol
    /// covering the address. An image without a symbol table has nothing to check it against.
    fn dwarf_agrees(&self, frames: &[Frame], symbol: Option<&FunctionSymbol>) -> bool {
        let outermost = frames.iter().rev().find_map(|f| f.function.as_deref());
        match (outermost, symbol) {
            // Aliases (`HardFault_Handler` for `Default_Handler`) share the address: any will do.
            (Some(dwarf), Some(symbol)) => self
                .functions
                .iter()
                .filter(|f| f.start == symbol.start && f.size == symbol.size)
                .any(|f| same_function(&f.name, dwarf)),
            (Some(_), None) => self.functions.is_empty(),
            (None, _) => false,
        }
    }

    fn frame_functions(&self, address: u64) -> Vec<String> {
        if !self.in_code(address) {
            return Vec::new();
        }
        let frames = self.frames(address);
        if !self.dwarf_agrees(&frames, self.symbol_at(address)) {
            return Vec::new();
        }
        frames.into_iter().filter_map(|f| f.function).collect()
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

/// One DWARF frame at an address: a function (inlined or not) and where in it.
struct Frame {
    function: Option<String>,
    file: Option<String>,
    line: Option<u32>,
}

/// Whether a symbol-table name and a DWARF name are the same function. GCC's clones keep the
/// DWARF name but suffix the symbol: `foo.constprop.0`, `foo.isra.0`, `foo.part.0`, and for C++
/// the demangled `foo(int) [clone .constprop.0]`.
fn same_function(symbol: &str, dwarf: &str) -> bool {
    let base = symbol
        .split_once(" [clone ")
        .map_or(symbol, |(base, _)| base);
    let base = if base.contains('(') {
        base
    } else {
        base.split_once('.').map_or(base, |(base, _)| base)
    };
    symbol == dwarf || base == dwarf
}

/// The target of a Thumb-2 `bl` (encoding T1) at `at`, from its two halfwords: `11110 S imm10`
/// then `11 J1 1 J2 imm11`, offset `S:I1:I2:imm10:imm11:0` with `In = !(Jn ^ S)`, from `at + 4`.
fn decode_bl(first: u16, second: u16, at: u64) -> Option<u64> {
    if first & 0xF800 != 0xF000 || second & 0xD000 != 0xD000 {
        return None;
    }
    let s = u32::from(first >> 10) & 1;
    let j1 = u32::from(second >> 13) & 1;
    let j2 = u32::from(second >> 11) & 1;
    let i1 = !(j1 ^ s) & 1;
    let i2 = !(j2 ^ s) & 1;
    let imm10 = u32::from(first) & 0x3FF;
    let imm11 = u32::from(second) & 0x7FF;
    let raw = (s << 24) | (i1 << 23) | (i2 << 22) | (imm10 << 12) | (imm11 << 1);
    // Sign-extend the 25-bit offset.
    let offset = i64::from(((raw << 7) as i32) >> 7);
    u64::try_from(
        i64::try_from(at)
            .ok()?
            .checked_add(4)?
            .checked_add(offset)?,
    )
    .ok()
}

/// `blx <reg>`: `0100 0111 1 Rm 000`.
fn is_blx_register(half: u16) -> bool {
    half & 0xFF87 == 0x4780
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

/// The one path in `sources` that ends with `printed` (whole components, `.` and `..` steps at
/// its start dropped, either separator); None when none or several do.
pub fn source_ending_with<'a>(
    printed: &str,
    sources: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    let parts = |p: &'a str| -> Vec<&'a str> {
        p.split(['/', '\\'])
            .filter(|c| !c.is_empty() && *c != ".")
            .collect()
    };
    let tail: Vec<&str> = printed
        .split(['/', '\\'])
        .filter(|c| !c.is_empty())
        .skip_while(|c| *c == "." || *c == "..")
        .collect();
    if tail.is_empty() || tail.contains(&"..") {
        return None;
    }
    let mut found = sources
        .into_iter()
        .filter(|s| parts(s).ends_with(&tail))
        .map(str::to_string);
    let first = found.next()?;
    found.next().is_none().then_some(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_printed_path_names_the_one_source_that_ends_with_it() {
        let sources = [
            "/fw/FreeRTOS/Demo/Common/Minimal/PollQ.c",
            "/fw/FreeRTOS/Source/tasks.c",
            "/fw/FreeRTOS/Demo/Common/Full/PollQ.c",
        ];
        let named = |p: &str| source_ending_with(p, sources);
        assert_eq!(
            named("./../../../../Demo/Common/Minimal/PollQ.c").as_deref(),
            Some("/fw/FreeRTOS/Demo/Common/Minimal/PollQ.c")
        );
        assert_eq!(
            named("..\\..\\Source\\tasks.c").as_deref(),
            Some("/fw/FreeRTOS/Source/tasks.c")
        );
        // Two fit, none fits, a part of a name is no component, nothing left to match.
        assert_eq!(named("PollQ.c"), None);
        assert_eq!(named("queue.c"), None);
        assert_eq!(named("asks.c"), None);
        assert_eq!(named("./../"), None);
    }

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
    fn bl_targets_decode_forwards_and_backwards() {
        // `f7ff fffe`: the offset -4, a call to itself (what an unrelocated `bl` reads).
        assert_eq!(decode_bl(0xF7FF, 0xFFFE, 0x100), Some(0x100));
        // 0x1000 -> 0x2000: offset 0xffc, S=0, J1=J2=1.
        assert_eq!(decode_bl(0xF000, 0xFFFE, 0x1000), Some(0x2000));
        // 0x2000 -> 0x1000: offset -0x1004.
        assert_eq!(decode_bl(0xF7FE, 0xFFFE, 0x2000), Some(0x1000));
        // The largest reach, +16 MB - 2, needs I1/I2 from J1/J2 and S (S=0, J1=J2=0: I1=I2=1).
        assert_eq!(decode_bl(0xF3FF, 0xD7FF, 0), Some(0x0100_0002));
        // A `b.w` (bit 14 of the second halfword clear) and 16-bit code are no `bl`.
        assert_eq!(decode_bl(0xF000, 0xB800, 0x1000), None);
        assert_eq!(decode_bl(0x4798, 0xBD10, 0x1000), None);
        // A backward call past address 0 is no call.
        assert_eq!(decode_bl(0xF7FE, 0xFFFE, 0x10), None);
    }

    #[test]
    fn blx_through_a_register_is_recognised() {
        assert!(is_blx_register(0x4798)); // blx r3
        assert!(is_blx_register(0x47F0)); // blx lr
        assert!(!is_blx_register(0x4718)); // bx r3
        assert!(!is_blx_register(0xBF00)); // nop
    }

    #[test]
    fn clones_are_the_function_they_were_cloned_from() {
        assert!(same_function("sensor_read", "sensor_read"));
        assert!(same_function("sensor_read.constprop.0", "sensor_read"));
        assert!(same_function("sensor_read.isra.0", "sensor_read"));
        assert!(same_function(
            "drv::poll(int) [clone .part.0]",
            "drv::poll(int)"
        ));
        assert!(!same_function("__sflush_r", "xTraceEventBufferPush"));
        assert!(!same_function("sensor_read", "sensor"));
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
