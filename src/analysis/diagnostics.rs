//! Compiler, assembler and linker diagnostics from a build log.
//!
//! Reads what gcc, clang, GNU as and GNU ld print (plus make's "no rule" error and the errors a
//! makefile stops on: `$(error ...)`, `missing separator`) and turns each
//! diagnostic into a [`Diagnostic`] with the 1-based build.log line it came from. It owns the
//! knowledge of those formats and nothing else: it is pure, never runs a tool, and never decides
//! what a build failure means for the run (triage and the machine do that).
//!
//! Lines that only frame a diagnostic are skipped on purpose: gcc's `In function 'x':` and
//! `In file included from`, its source excerpt and caret lines, ld's `in function `x':` (kept as
//! context for the undefined references under it), and the summaries `collect2: error: ld returned
//! 1 exit status`, `cc1: all warnings being treated as errors` and `make: *** [...] Error 2`, which
//! repeat what the diagnostics above them already said.
//!
//! A compiler names a file relative to the directory it ran in, which is rarely the repository's
//! root (`make -C Demo/build/gcc` prints `./../../Common/x.c`). Given [`BuildDirs`],
//! [`parse_build_log_in`] follows make's `Entering directory`/`Leaving directory` lines as a
//! stack and names every file in the repository relative to its root; a file outside it (a
//! system header, an SDK elsewhere) is named by its absolute path and never looks like the
//! repository's own. The directories come in as data: nothing here touches the file system.

use std::path::{Component, Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;

use super::{Diagnostic, Severity};

const COMPILER: &str = "compiler";
const ASSEMBLER: &str = "assembler";
const LINKER: &str = "linker";
const MAKE: &str = "make";

struct Patterns {
    /// Colour and hyperlink escapes a tool prints when it believes it talks to a terminal.
    ansi: Regex,
    /// gcc's source excerpt (`    6 |     return v;`) and caret (`      |     ^~~`) lines.
    excerpt: Regex,
    /// `file:line[:col]: error|warning|note|fatal error: message`.
    compiler: Regex,
    /// GNU as: `file:line: Error: message`.
    assembler: Regex,
    /// `arm-none-eabi-gcc: error: ...`, `cc1: fatal error: ...`: no file of their own.
    driver: Regex,
    /// The linker's own name leading a line: `/usr/.../bin/ld: `, `arm-none-eabi-ld: `, `ld.lld: `.
    linker_prefix: Regex,
    /// `obj.o: in function `main':` (ld) or `file.c: In function 'f':` (gcc).
    in_function: Regex,
    undefined_reference: Regex,
    multiple_definition: Regex,
    region_overflow: Regex,
    section_overflow: Regex,
    missing_library: Regex,
    lld_undefined: Regex,
    make_no_rule: Regex,
    /// `Makefile:18: *** message.  Stop.`: a makefile's `$(error)` or a syntax error in it.
    make_makefile: Regex,
    /// Summary lines that repeat what the diagnostics already said.
    summary: Regex,
    /// `make[2]: Entering directory '/w/fw/build'` and its `Leaving` twin (older makes open the
    /// quote with a backtick).
    make_directory: Regex,
}

#[expect(
    clippy::expect_used,
    reason = "the patterns are constants; every one is exercised by the unit tests"
)]
fn regex(pattern: &str) -> Regex {
    Regex::new(pattern).expect("built-in diagnostic pattern compiles")
}

static PATTERNS: LazyLock<Patterns> = LazyLock::new(|| Patterns {
    ansi: regex(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"),
    excerpt: regex(r"^\s*\d*\s+\|"),
    compiler: regex(
        r"^(?P<file>.+?):(?P<line>\d+):(?:(?P<col>\d+):)? (?P<sev>fatal error|error|warning|note): (?P<msg>.*)$",
    ),
    assembler: regex(r"^(?P<file>.+?):(?P<line>\d+): (?P<sev>Error|Warning): (?P<msg>.*)$"),
    driver: regex(
        r"^(?P<prog>\S*?(?:gcc|g\+\+|cc1|cc1plus|clang|clang\+\+|c\+\+|cpp|lto1|as)(?:-\d+(?:\.\d+)*)?(?:\.exe)?): (?P<sev>fatal error|error|warning): (?P<msg>.*)$",
    ),
    linker_prefix: regex(
        r"^(?:[A-Za-z]:\\[^:]*\\|\S*[/\\])?(?:[\w.-]+-)?ld(?:\.bfd|\.gold|\.lld)?(?:\.exe)?: (?P<rest>.*)$",
    ),
    in_function: regex(r"^(?P<obj>.*): [Ii]n function [`'‘](?P<func>.+)['’]:$"),
    undefined_reference: regex(r"^(?:(?P<loc>.+?): )?(?P<msg>undefined reference to .+)$"),
    multiple_definition: regex(r"^(?:(?P<loc>.+?): )?(?P<msg>multiple definition of .+)$"),
    region_overflow: regex(r"^(?P<msg>region [`'‘].+['’] overflowed by \d+ bytes?)$"),
    section_overflow: regex(r"^(?P<msg>.*section [`'‘].+['’] will not fit in region .+)$"),
    missing_library: regex(r"^(?P<msg>cannot find -l\S+?)(?::.*)?$"),
    lld_undefined: regex(r"^error: (?P<msg>undefined symbol: .+)$"),
    make_no_rule: regex(r"^make(?:\[\d+\])?: \*\*\* (?P<msg>No rule to make target .+)$"),
    make_makefile: regex(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+): \*\*\* (?P<msg>.+)$"),
    summary: regex(
        r"^(?:collect2(?:\.exe)?: error: ld returned|\S*clang\S*: error: linker command failed|cc1\S*: (?:all|some) warnings being treated as errors|make(?:\[\d+\])?: \*\*\* \[|ninja: build stopped)",
    ),
    make_directory: regex(
        r"^\S*make(?:\[\d+\])?: (?P<dir>Entering|Leaving) directory [`'‘](?P<path>.+)['’]$",
    ),
});

/// Where a build ran: what the relative paths in its log are relative to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildDirs {
    /// The repository's work tree, absolute.
    pub root: PathBuf,
    /// The directory the build command ran in, absolute.
    pub cwd: PathBuf,
}

impl BuildDirs {
    /// `file` as the repository names it: relative to the root when it lies inside, with `.` and
    /// `..` steps gone; otherwise its absolute path (`dir` is where the tool that printed it ran).
    /// A Windows path is left as printed: it cannot be resolved here.
    fn resolve(&self, dir: &Path, file: &str) -> String {
        if is_windows_absolute(file) {
            return file.to_string();
        }
        let absolute = normalise(&dir.join(file));
        match absolute.strip_prefix(normalise(&self.root)) {
            Ok(inside) if inside.as_os_str().is_empty() => file.to_string(),
            Ok(inside) => slash_separated(inside),
            // Outside the tree: an absolute path as printed stays byte for byte.
            Err(_) if Path::new(file).is_absolute() => file.to_string(),
            Err(_) => absolute.display().to_string(),
        }
    }
}

/// Whether a path a diagnostic names lies in the repository: what [`parse_build_log_in`]
/// resolved is then relative and never climbs out with `..`.
pub fn in_tree(file: &str) -> bool {
    let path = Path::new(file);
    !is_windows_absolute(file)
        && path
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

fn is_windows_absolute(file: &str) -> bool {
    let b = file.as_bytes();
    b.len() > 2 && b[0].is_ascii_alphabetic() && b[1] == b':' && matches!(b[2], b'\\' | b'/')
}

/// `path` without `.` steps and with each `..` taking the step before it, without asking the
/// file system (the build's tree may be gone by the time its log is read).
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                // `/..` is `/`; a relative path keeps a `..` it cannot take back.
                if !out.pop() && !out.has_root() {
                    out.push("..");
                }
            }
            c => out.push(c),
        }
    }
    out
}

fn slash_separated(path: &Path) -> String {
    let parts: Vec<_> = path
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect();
    parts.join("/")
}

/// The directory make is in at each line of a log: a stack of `Entering directory` lines, each
/// taken back by its `Leaving directory`, on top of the build command's own directory.
struct MakeDirs<'a> {
    dirs: &'a BuildDirs,
    stack: Vec<PathBuf>,
}

impl MakeDirs<'_> {
    fn current(&self) -> &Path {
        self.stack.last().unwrap_or(&self.dirs.cwd)
    }

    /// Follows a make directory line; false for any other line.
    fn follow(&mut self, p: &Patterns, line: &str) -> bool {
        let Some(c) = p.make_directory.captures(line) else {
            return false;
        };
        let path = normalise(&self.current().join(capture(&c, "path").unwrap_or_default()));
        if capture(&c, "dir") == Some("Entering") {
            self.stack.push(path);
        } else if let Some(at) = self.stack.iter().rposition(|d| *d == path) {
            // Leaving a directory also leaves any a lost `Leaving` line never closed.
            self.stack.truncate(at);
        }
        true
    }
}

/// Words one of which every line that gives a diagnostic holds: a severity, make's `***`, ld's
/// two unlabelled messages, or the linker's name (`ld: `, `ld.bfd: `, ...), before which ld
/// prints everything else.
const DIAGNOSTIC_WORDS: [&str; 10] = [
    "error",
    "Error",
    "warning",
    "Warning",
    "note: ",
    "***",
    "undefined reference",
    "multiple definition",
    "ld:",
    "ld.",
];

/// Whether any line of `text` can give a diagnostic. A log with none of [`DIAGNOSTIC_WORDS`]
/// (a build with nothing to do prints one line) is not parsed, and the patterns are not even
/// compiled: a millisecond or two of a core, at every test run. Escape sequences are removed
/// before the patterns match, and could split a word, so a log with any is parsed.
fn may_hold_diagnostics(text: &str) -> bool {
    text.contains('\x1b') || DIAGNOSTIC_WORDS.iter().any(|word| text.contains(word))
}

/// The diagnostics in a build log, in the order they appear, with files named as printed.
pub fn parse_build_log(text: &str) -> Vec<Diagnostic> {
    parse(text, None)
}

/// The diagnostics in the log of a build that ran in `dirs`, with every file named as the
/// repository names it (see [`BuildDirs`]).
pub fn parse_build_log_in(text: &str, dirs: &BuildDirs) -> Vec<Diagnostic> {
    parse(text, Some(dirs))
}

fn parse(text: &str, dirs: Option<&BuildDirs>) -> Vec<Diagnostic> {
    if !may_hold_diagnostics(text) {
        return Vec::new();
    }
    parse_lines(text, dirs)
}

/// [`parse`] line by line, every line through the patterns.
fn parse_lines(text: &str, dirs: Option<&BuildDirs>) -> Vec<Diagnostic> {
    let p = &*PATTERNS;
    let mut make = dirs.map(|dirs| MakeDirs {
        dirs,
        stack: Vec::new(),
    });
    let mut out = Vec::new();
    // The function ld named in its last `in function` line: the references under it are from it.
    let mut ld_function: Option<String> = None;
    for (index, raw) in text.lines().enumerate() {
        let log_line = index + 1;
        let stripped = p.ansi.replace_all(raw, "");
        let line = stripped.trim_end();
        if line.trim().is_empty() || p.excerpt.is_match(line) || p.summary.is_match(line) {
            ld_function = None;
            continue;
        }
        if make.as_mut().is_some_and(|m| m.follow(p, line)) {
            continue;
        }
        let resolved = |mut d: Diagnostic| {
            if let (Some(m), Some(file)) = (&make, &d.file) {
                d.file = Some(m.dirs.resolve(m.current(), file));
            }
            d
        };
        let (from_linker, body) = match p.linker_prefix.captures(line) {
            Some(c) => (true, c.name("rest").map_or("", |m| m.as_str())),
            None => (false, line),
        };
        if let Some(c) = p.in_function.captures(body) {
            ld_function = c.name("func").map(|m| m.as_str().to_string());
            continue;
        }
        if !from_linker {
            if let Some(d) = compiler_diagnostic(p, line, log_line) {
                ld_function = None;
                out.push(resolved(d));
                continue;
            }
        }
        if let Some(d) = linker_diagnostic(p, body, from_linker, ld_function.as_deref(), log_line) {
            out.push(resolved(d));
            continue;
        }
        // Anything else ends an ld message group (its `in function` context no longer applies).
        ld_function = None;
    }
    out
}

fn severity(word: &str) -> Severity {
    match word {
        "warning" | "Warning" => Severity::Warning,
        "note" => Severity::Note,
        _ => Severity::Error,
    }
}

fn capture<'t>(c: &regex::Captures<'t>, name: &str) -> Option<&'t str> {
    c.name(name).map(|m| m.as_str())
}

fn number(c: &regex::Captures<'_>, name: &str) -> Option<u32> {
    capture(c, name).and_then(|s| s.parse().ok())
}

fn diagnostic(
    severity: Severity,
    tool: &str,
    kind: &str,
    message: &str,
    log_line: usize,
) -> Diagnostic {
    Diagnostic {
        severity,
        tool: tool.to_string(),
        kind: kind.to_string(),
        file: None,
        line: None,
        column: None,
        message: message.to_string(),
        log_line,
    }
}

fn compiler_diagnostic(p: &Patterns, line: &str, log_line: usize) -> Option<Diagnostic> {
    if let Some(c) = p.compiler.captures(line) {
        return Some(Diagnostic {
            file: capture(&c, "file").map(str::to_string),
            line: number(&c, "line"),
            column: number(&c, "col"),
            ..diagnostic(
                severity(capture(&c, "sev")?),
                COMPILER,
                "compile",
                capture(&c, "msg")?,
                log_line,
            )
        });
    }
    if let Some(c) = p.assembler.captures(line) {
        return Some(Diagnostic {
            file: capture(&c, "file").map(str::to_string),
            line: number(&c, "line"),
            ..diagnostic(
                severity(capture(&c, "sev")?),
                ASSEMBLER,
                "assemble",
                capture(&c, "msg")?,
                log_line,
            )
        });
    }
    if let Some(c) = p.make_no_rule.captures(line) {
        return Some(diagnostic(
            Severity::Error,
            MAKE,
            "no_rule",
            capture(&c, "msg")?,
            log_line,
        ));
    }
    if let Some(c) = p.make_makefile.captures(line) {
        return Some(Diagnostic {
            file: capture(&c, "file").map(str::to_string),
            line: number(&c, "line"),
            ..diagnostic(
                Severity::Error,
                MAKE,
                "makefile",
                capture(&c, "msg")?,
                log_line,
            )
        });
    }
    if let Some(c) = p.driver.captures(line) {
        let program = capture(&c, "prog")?;
        let tool = if program == "as" || program.ends_with("-as") {
            ASSEMBLER
        } else {
            COMPILER
        };
        return Some(diagnostic(
            severity(capture(&c, "sev")?),
            tool,
            "driver",
            &format!("{program}: {}", capture(&c, "msg")?),
            log_line,
        ));
    }
    None
}

/// Where ld says a reference came from: `file.c:42`, `file.c:(.text.f+0x8)` or `obj.o:(.data+0x0)`.
fn split_linker_location(location: &str) -> (Option<String>, Option<u32>) {
    if let Some((file, line)) = location.rsplit_once(':') {
        if let Ok(line) = line.parse() {
            return (Some(file.to_string()), Some(line));
        }
        if line.starts_with('(') {
            return (Some(file.to_string()), None);
        }
    }
    (Some(location.to_string()), None)
}

fn linker_diagnostic(
    p: &Patterns,
    body: &str,
    from_linker: bool,
    function: Option<&str>,
    log_line: usize,
) -> Option<Diagnostic> {
    let located = |c: &regex::Captures<'_>, kind: &str, message: String| {
        let (file, line) = capture(c, "loc").map_or((None, None), split_linker_location);
        Diagnostic {
            file,
            line,
            ..diagnostic(Severity::Error, LINKER, kind, &message, log_line)
        }
    };
    if let Some(c) = p.undefined_reference.captures(body) {
        let message = capture(&c, "msg")?;
        let message = match function {
            Some(f) => format!("{message} (in function `{f}')"),
            None => message.to_string(),
        };
        return Some(located(&c, "undefined_reference", message));
    }
    if let Some(c) = p.multiple_definition.captures(body) {
        return Some(located(
            &c,
            "multiple_definition",
            capture(&c, "msg")?.to_string(),
        ));
    }
    // The remaining forms only ever come with the linker's name in front.
    if !from_linker {
        return None;
    }
    let simple = [
        (&p.region_overflow, "region_overflow"),
        (&p.section_overflow, "region_overflow"),
        (&p.missing_library, "missing_library"),
        (&p.lld_undefined, "undefined_reference"),
    ];
    for (pattern, kind) in simple {
        if let Some(c) = pattern.captures(body) {
            return Some(diagnostic(
                Severity::Error,
                LINKER,
                kind,
                capture(&c, "msg")?,
                log_line,
            ));
        }
    }
    let (severity, message) = if let Some(rest) = body.strip_prefix("warning: ") {
        (Severity::Warning, rest)
    } else if let Some(rest) = body.strip_prefix("note: ") {
        (Severity::Note, rest)
    } else if let Some(rest) = body.strip_prefix("error: ") {
        (Severity::Error, rest)
    } else if body.starts_with("skipping incompatible") {
        (Severity::Warning, body)
    } else {
        // ld prints its errors without a label: `cannot open linker script file x.ld: ...`.
        (Severity::Error, body)
    };
    Some(diagnostic(severity, LINKER, "linker", message, log_line))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Recorded from arm-none-eabi-gcc 12.2.1 with `-Wall` on a file with a missing `;`, an
    /// undeclared identifier and unused variables, built through make.
    const GCC_COMPILE: &str = "\
mkdir -p build
arm-none-eabi-gcc -mcpu=cortex-m3 -mthumb -Wall -c src/sensor.c -o build/sensor.o
src/sensor.c: In function 'sensor_read':
src/sensor.c:6:5: error: expected ',' or ';' before 'return'
    6 |     return v;
      |     ^~~~~~
src/sensor.c:5:14: warning: unused variable 'v' [-Wunused-variable]
    5 |     uint32_t v = x
      |              ^
src/sensor.c: In function 'other':
src/sensor.c:8:26: error: 'undeclared_thing' undeclared (first use in this function)
    8 | int other(void) { return undeclared_thing + 1; }
      |                          ^~~~~~~~~~~~~~~~
src/sensor.c:8:26: note: each undeclared identifier is reported only once for each function it appears in
make: *** [Makefile:3: build/sensor.o] Error 1
";

    fn one(text: &str) -> Diagnostic {
        let mut all = parse_build_log(text);
        assert_eq!(all.len(), 1, "{all:#?}");
        all.remove(0)
    }

    #[test]
    fn gcc_errors_warnings_and_notes() {
        let d = parse_build_log(GCC_COMPILE);
        let summary: Vec<_> = d
            .iter()
            .map(|d| (d.severity, d.line, d.column, d.log_line))
            .collect();
        assert_eq!(
            summary,
            vec![
                (Severity::Error, Some(6), Some(5), 4),
                (Severity::Warning, Some(5), Some(14), 7),
                (Severity::Error, Some(8), Some(26), 11),
                (Severity::Note, Some(8), Some(26), 14),
            ]
        );
        assert!(d
            .iter()
            .all(|d| d.tool == "compiler" && d.kind == "compile"));
        assert!(d.iter().all(|d| d.file.as_deref() == Some("src/sensor.c")));
        assert_eq!(d[0].message, "expected ',' or ';' before 'return'");
        assert_eq!(d[1].message, "unused variable 'v' [-Wunused-variable]");
    }

    #[test]
    fn gcc_fatal_error_and_include_context() {
        let text = "\
In file included from src/main.c:1:
src/board.h: In function 'g':
src/board.h:1:22: error: 'y' undeclared (first use in this function)
src/main.c:1:10: fatal error: nothere.h: No such file or directory
    1 | #include \"nothere.h\"
      |          ^~~~~~~~~~~
compilation terminated.
";
        let d = parse_build_log(text);
        assert_eq!(d.len(), 2, "{d:#?}");
        assert_eq!(d[0].file.as_deref(), Some("src/board.h"));
        assert_eq!(d[1].severity, Severity::Error);
        assert_eq!(d[1].message, "nothere.h: No such file or directory");
        assert_eq!(d[1].log_line, 4);
    }

    #[test]
    fn compiler_diagnostic_without_column_and_windows_paths() {
        let d = one("src/crc.c:12: error: expected ';' before '}' token");
        assert_eq!((d.line, d.column), (Some(12), None));

        let d = one(r"C:\fw\src\crc.c:12:5: warning: unused variable 'x'");
        assert_eq!(d.file.as_deref(), Some(r"C:\fw\src\crc.c"));
        assert_eq!((d.line, d.column), (Some(12), Some(5)));
    }

    #[test]
    fn clang_output_and_colour_escapes() {
        let d = one(
            "\x1b[1msrc/crc.c:3:12: \x1b[0;1;31merror: \x1b[0m\x1b[1muse of undeclared identifier 'y'\x1b[0m",
        );
        assert_eq!(d.message, "use of undeclared identifier 'y'");
        assert_eq!(d.file.as_deref(), Some("src/crc.c"));
        assert!(parse_build_log(
            "clang: error: linker command failed with exit code 1 (use -v to see invocation)"
        )
        .is_empty());
    }

    #[test]
    fn driver_errors_have_no_file() {
        let d = one("arm-none-eabi-gcc: error: unrecognized command-line option '-mfoo'");
        assert_eq!((d.tool.as_str(), d.kind.as_str()), ("compiler", "driver"));
        assert_eq!(d.file, None);
        assert_eq!(
            d.message,
            "arm-none-eabi-gcc: unrecognized command-line option '-mfoo'"
        );

        let d = one("cc1: fatal error: src/nosuch.c: No such file or directory");
        assert_eq!(d.severity, Severity::Error);
        assert_eq!(d.kind, "driver");
    }

    #[test]
    fn assembler_errors() {
        let text = "\
src/startup.s: Assembler messages:
src/startup.s:12: Error: bad instruction `movx r0,#1'
src/startup.s:20: Warning: end of file not at end of a line; newline inserted
";
        let d = parse_build_log(text);
        assert_eq!(d.len(), 2);
        assert_eq!(
            (d[0].tool.as_str(), d[0].kind.as_str()),
            ("assembler", "assemble")
        );
        assert_eq!(d[0].line, Some(12));
        assert_eq!(d[1].severity, Severity::Warning);
    }

    /// Recorded from arm-none-eabi-gcc 12.2.1 linking `main` against a missing `foo` and `bar`.
    const LD_UNDEFINED: &str = "\
/usr/lib/gcc/arm-none-eabi/12.2.1/../../../arm-none-eabi/bin/ld: build/obj/src/main.o: in function `main':
undef.c:(.text+0x4): undefined reference to `foo'
/usr/lib/gcc/arm-none-eabi/12.2.1/../../../arm-none-eabi/bin/ld: undef.c:(.text+0x14): undefined reference to `bar'
collect2: error: ld returned 1 exit status
";

    #[test]
    fn undefined_references() {
        let d = parse_build_log(LD_UNDEFINED);
        assert_eq!(d.len(), 2, "{d:#?}");
        for (d, symbol, log_line) in [(&d[0], "foo", 2), (&d[1], "bar", 3)] {
            assert_eq!(d.tool, "linker");
            assert_eq!(d.kind, "undefined_reference");
            assert_eq!(d.severity, Severity::Error);
            assert_eq!(d.file.as_deref(), Some("undef.c"));
            assert_eq!(d.line, None);
            assert_eq!(
                d.message,
                format!("undefined reference to `{symbol}' (in function `main')")
            );
            assert_eq!(d.log_line, log_line);
        }
    }

    #[test]
    fn undefined_reference_with_debug_line_and_section() {
        // With -g, ld names the source line; with -ffunction-sections, the section.
        let text = "\
/usr/lib/gcc/arm-none-eabi/12.2.1/../../../arm-none-eabi/bin/ld: build/obj/src/undef.o: in function `main':
src/undef.c:3: undefined reference to `foo'
/usr/lib/gcc/arm-none-eabi/12.2.1/../../../arm-none-eabi/bin/ld: src/undef.c:(.text.main+0x14): undefined reference to `bar'
/usr/lib/gcc/arm-none-eabi/12.2.1/../../../arm-none-eabi/bin/ld: build/obj/src/drv.o:(.ARM.exidx+0x0): undefined reference to `__aeabi_unwind_cpp_pr0'
collect2: error: ld returned 1 exit status
";
        let d = parse_build_log(text);
        assert_eq!(d.len(), 3);
        assert_eq!(
            (d[0].file.as_deref(), d[0].line),
            (Some("src/undef.c"), Some(3))
        );
        assert_eq!(
            (d[1].file.as_deref(), d[1].line),
            (Some("src/undef.c"), None)
        );
        assert_eq!(d[2].file.as_deref(), Some("build/obj/src/drv.o"));
    }

    #[test]
    fn in_function_context_ends_with_the_group() {
        let text = format!("{LD_UNDEFINED}make: *** [Makefile:9: fw.elf] Error 1\nld: x.c:(.text+0x2): undefined reference to `baz'\n");
        let d = parse_build_log(&text);
        assert_eq!(d.len(), 3);
        assert_eq!(d[2].message, "undefined reference to `baz'");
    }

    #[test]
    fn region_overflow() {
        // Recorded from a 64-byte FLASH and 16-byte RAM linker script.
        let text = "\
/usr/lib/gcc/arm-none-eabi/12.2.1/../../../arm-none-eabi/bin/ld: big.elf section `.data' will not fit in region `RAM'
/usr/lib/gcc/arm-none-eabi/12.2.1/../../../arm-none-eabi/bin/ld: region `FLASH' overflowed by 228 bytes
/usr/lib/gcc/arm-none-eabi/12.2.1/../../../arm-none-eabi/bin/ld: region `RAM' overflowed by 304 bytes
collect2: error: ld returned 1 exit status
";
        let d = parse_build_log(text);
        assert_eq!(d.len(), 3, "{d:#?}");
        assert!(d
            .iter()
            .all(|d| d.kind == "region_overflow" && d.file.is_none()));
        assert_eq!(
            d[0].message,
            "big.elf section `.data' will not fit in region `RAM'"
        );
        assert_eq!(d[1].message, "region `FLASH' overflowed by 228 bytes");
        assert_eq!(d[2].log_line, 3);
    }

    #[test]
    fn multiple_definition() {
        let text = "\
/usr/lib/gcc/arm-none-eabi/12.2.1/../../../arm-none-eabi/bin/ld: build/obj/src/b.o:(.data+0x0): multiple definition of `x'; build/obj/src/a.o:(.data+0x0): first defined here
/usr/lib/gcc/arm-none-eabi/12.2.1/../../../arm-none-eabi/bin/ld: build/obj/src/b.o: in function `helper':
b.c:(.text+0x0): multiple definition of `helper'; build/obj/src/a.o:a.c:(.text+0x0): first defined here
collect2: error: ld returned 1 exit status
";
        let d = parse_build_log(text);
        assert_eq!(d.len(), 2, "{d:#?}");
        assert!(d.iter().all(|d| d.kind == "multiple_definition"));
        assert_eq!(
            d[0].message,
            "multiple definition of `x'; build/obj/src/a.o:(.data+0x0): first defined here"
        );
        assert_eq!(d[1].file.as_deref(), Some("b.c"));
        assert_eq!(d[1].log_line, 3);
    }

    #[test]
    fn missing_library() {
        let d = one("/usr/lib/gcc/arm-none-eabi/12.2.1/../../../arm-none-eabi/bin/ld: cannot find -lfoo: No such file or directory\ncollect2: error: ld returned 1 exit status");
        assert_eq!(d.kind, "missing_library");
        assert_eq!(d.message, "cannot find -lfoo");
        assert_eq!(
            one("arm-none-eabi-ld: cannot find -lm").message,
            "cannot find -lm"
        );
        // Windows installs the toolchain under a directory with spaces in its name.
        assert_eq!(
            one(r"C:\Program Files (x86)\GNU Tools ARM Embedded\9 2019-q4-major\bin\arm-none-eabi-ld.exe: cannot find -lgcc").message,
            "cannot find -lgcc"
        );
    }

    #[test]
    fn other_linker_messages() {
        let d = one("/usr/lib/gcc/arm-none-eabi/12.2.1/../../../arm-none-eabi/bin/ld: warning: cannot find entry symbol _start; defaulting to 00008000");
        assert_eq!((d.severity, d.kind.as_str()), (Severity::Warning, "linker"));
        assert_eq!(
            d.message,
            "cannot find entry symbol _start; defaulting to 00008000"
        );

        let d = one(
            "arm-none-eabi-ld: cannot open linker script file bad.ld: No such file or directory",
        );
        assert_eq!((d.severity, d.kind.as_str()), (Severity::Error, "linker"));

        let d = one("ld.lld: error: undefined symbol: foo");
        assert_eq!(d.kind, "undefined_reference");
        assert_eq!(d.message, "undefined symbol: foo");
    }

    #[test]
    fn summaries_and_noise_are_not_diagnostics() {
        let text = "\
make: *** [Makefile:3: build/fw.elf] Error 2
make[1]: *** [sub.mk:7: all] Error 1
collect2: error: ld returned 1 exit status
cc1: all warnings being treated as errors
cc1: some warnings being treated as errors
ninja: build stopped: subcommand failed.
compilation terminated.
build: done
arm-none-eabi-gcc -c src/error_handler.c -o build/error_handler.o
   12 | int error: 1;
src/main.c: In function 'main':
";
        assert_eq!(parse_build_log(text), vec![]);
    }

    #[test]
    fn make_without_a_rule() {
        let d = one("make: *** No rule to make target 'build/test_crc.elf'.  Stop.");
        assert_eq!((d.tool.as_str(), d.kind.as_str()), ("make", "no_rule"));
        assert_eq!(
            d.message,
            "No rule to make target 'build/test_crc.elf'.  Stop."
        );
    }

    /// Regression: a build stopped by the makefile itself (`$(error)` on an unknown BOARD) was
    /// "build failed (exit 2, 0 errors)" with no line to show.
    #[test]
    fn a_makefile_that_stops_names_itself_and_its_line() {
        let d = one("Makefile:18: *** Unknown BOARD 'bench'; choose one of: mps2-an385.  Stop.");
        assert_eq!((d.tool.as_str(), d.kind.as_str()), ("make", "makefile"));
        assert_eq!((d.file.as_deref(), d.line), (Some("Makefile"), Some(18)));
        assert_eq!(
            d.message,
            "Unknown BOARD 'bench'; choose one of: mps2-an385.  Stop."
        );
        let d = one("boards/x.mk:3: *** missing separator.  Stop.");
        assert_eq!((d.file.as_deref(), d.line), (Some("boards/x.mk"), Some(3)));
        assert_eq!(
            parse_build_log("make: *** [Makefile:3: build/x.o] Error 1\n"),
            vec![]
        );
    }

    #[test]
    fn crlf_log_lines() {
        let d = parse_build_log(&GCC_COMPILE.replace('\n', "\r\n"));
        assert_eq!(d.len(), 4);
        assert_eq!(d[0].message, "expected ',' or ';' before 'return'");
    }

    fn dirs(cwd: &str) -> BuildDirs {
        BuildDirs {
            root: PathBuf::from("/w/repo"),
            cwd: PathBuf::from(cwd),
        }
    }

    fn files_in(text: &str, dirs: &BuildDirs) -> Vec<String> {
        parse_build_log_in(text, dirs)
            .into_iter()
            .map(|d| d.file.unwrap_or_default())
            .collect()
    }

    /// Regression: FreeRTOS's demo, built with `make -C FreeRTOS/Demo/CORTEX_MPS2_QEMU_IAR_GCC/build/gcc`,
    /// named its broken file `./../../../../Demo/Common/Minimal/PollQ.c`, a path outside the
    /// repository as fwfix read it, so no source was attached and the suspect was out of reach.
    #[test]
    fn make_entering_directory_resolves_paths_to_the_repository() {
        let text = "\
make: Entering directory '/w/repo/FreeRTOS/Demo/CORTEX_MPS2_QEMU_IAR_GCC/build/gcc'
./../../../../Demo/Common/Minimal/PollQ.c:263:1: error: expected identifier or '(' at end of input
make: *** [Makefile:90: output/PollQ.o] Error 1
make: Leaving directory '/w/repo/FreeRTOS/Demo/CORTEX_MPS2_QEMU_IAR_GCC/build/gcc'
";
        let d = parse_build_log_in(text, &dirs("/w/repo"));
        assert_eq!(d.len(), 1, "{d:#?}");
        assert_eq!(
            d[0].file.as_deref(),
            Some("FreeRTOS/Demo/Common/Minimal/PollQ.c")
        );
        assert_eq!((d[0].line, d[0].log_line), (Some(263), 2));
    }

    #[test]
    fn without_make_lines_paths_are_relative_to_the_build_directory() {
        let text = "../../src/crc.c:3:1: error: x\n./main.c:1:1: warning: y\n";
        assert_eq!(
            files_in(text, &dirs("/w/repo/fw/build")),
            vec!["src/crc.c", "fw/build/main.c"]
        );
        // The build at the root: a plain path stays as it was, `./` goes.
        assert_eq!(
            files_in("./src/a.c:1:1: error: x\n", &dirs("/w/repo")),
            vec!["src/a.c"]
        );
    }

    #[test]
    fn nested_makes_push_and_pop_their_directories() {
        let text = "\
make: Entering directory '/w/repo/build'
make[1]: Entering directory `/w/repo/lib/net'
ip.c:1:1: error: in lib
make[2]: Entering directory '/w/repo/lib/net/drv'
../ip.h:2:1: error: in lib header
make[2]: Leaving directory '/w/repo/lib/net/drv'
tcp.c:3:1: error: back in lib
make[1]: Leaving directory `/w/repo/lib/net'
../app/main.c:4:1: error: back in build
make: Leaving directory '/w/repo/build'
src/x.c:5:1: error: back at the command's directory
";
        assert_eq!(
            files_in(text, &dirs("/w/repo")),
            vec![
                "lib/net/ip.c",
                "lib/net/ip.h",
                "lib/net/tcp.c",
                "app/main.c",
                "src/x.c"
            ]
        );
    }

    #[test]
    fn leaving_an_outer_directory_also_leaves_an_unclosed_inner_one() {
        let text = "\
make: Entering directory '/w/repo/a'
make[1]: Entering directory '/w/repo/a/b'
make: Leaving directory '/w/repo/a'
make: Leaving directory '/w/repo/never/entered'
c.c:1:1: error: x
";
        assert_eq!(files_in(text, &dirs("/w/repo/top")), vec!["top/c.c"]);
    }

    #[test]
    fn absolute_paths_inside_the_repository_become_relative() {
        let text = "/w/repo/src/./crc.c:7:2: error: x\n/w/repo/lib/../src/y.c:1:1: warning: w\n";
        assert_eq!(
            files_in(text, &dirs("/w/repo/build")),
            vec!["src/crc.c", "src/y.c"]
        );
    }

    #[test]
    fn paths_outside_the_repository_are_kept_and_never_in_tree() {
        let text = "\
/usr/lib/arm-none-eabi/include/stdio.h:10:1: warning: from a system header
make: Entering directory '/opt/sdk/drivers'
uart.c:3:1: error: in an SDK outside the tree
make: Leaving directory '/opt/sdk/drivers'
../../../other/x.c:1:1: error: climbs out of the repository
/w/repository-next-door/y.c:1:1: error: shares a prefix, not a directory
";
        let files = files_in(text, &dirs("/w/repo/fw/build"));
        assert_eq!(
            files,
            vec![
                "/usr/lib/arm-none-eabi/include/stdio.h",
                "/opt/sdk/drivers/uart.c",
                "/w/other/x.c",
                "/w/repository-next-door/y.c"
            ]
        );
        assert!(files.iter().all(|f| !in_tree(f)));
    }

    #[test]
    fn linker_and_makefile_locations_are_resolved_too() {
        let text = "\
make[1]: Entering directory '/w/repo/fw'
Makefile:18: *** Unknown BOARD.  Stop.
/usr/bin/ld: build/main.o: in function `main':
src/main.c:3: undefined reference to `foo'
";
        assert_eq!(
            files_in(text, &dirs("/w/repo")),
            vec!["fw/Makefile", "fw/src/main.c"]
        );
    }

    #[test]
    fn in_tree_is_a_relative_path_that_stays_in() {
        assert!(in_tree("src/crc.c"));
        assert!(in_tree("./src/crc.c"));
        assert!(!in_tree("../src/crc.c"));
        assert!(!in_tree("./../../Demo/x.c"));
        assert!(!in_tree("/usr/include/stdio.h"));
        assert!(!in_tree(r"C:\fw\src\crc.c"));
    }

    #[test]
    fn windows_paths_are_left_as_printed() {
        assert_eq!(
            files_in(r"C:\fw\src\crc.c:12:5: warning: w", &dirs("/w/repo")),
            vec![r"C:\fw\src\crc.c"]
        );
    }

    #[test]
    fn make_directory_lines_are_not_diagnostics() {
        let text = "make: Entering directory '/w/repo/x'\nmake: Leaving directory '/w/repo/x'\n";
        assert_eq!(parse_build_log(text), vec![]);
        assert_eq!(parse_build_log_in(text, &dirs("/w/repo")), vec![]);
    }

    #[test]
    fn a_log_with_no_diagnostic_word_is_not_parsed_and_the_recorded_ones_are() {
        assert!(!may_hold_diagnostics(
            "make: 'build/mps2-an385/test_ringbuf.elf' is up to date.\n"
        ));
        assert!(may_hold_diagnostics(GCC_COMPILE));
        assert!(may_hold_diagnostics(
            "arm-none-eabi-ld: cannot open linker script file x\n"
        ));
        assert!(may_hold_diagnostics(
            "\x1b[1mmain.c:3:1: \x1b[31merr\x1b[0mor: x\n"
        ));
    }

    proptest! {
        // Lines made of the patterns' own pieces: whatever gives a diagnostic holds a word the
        // shortcut looks for.
        #[test]
        fn every_line_that_gives_a_diagnostic_holds_a_diagnostic_word(
            pieces in proptest::collection::vec(proptest::sample::select(vec![
                "src/a.c", ":", "12", ": ", " ", "fatal ", "error", "Error", "warning", "Warning",
                "note", "arm-none-eabi-", "ld", ".bfd", ".lld", "gcc", "as", "make", "[2]", "***",
                "No rule to make target", "undefined reference to `f'", "multiple definition of",
                "region `FLASH' overflowed by 4 bytes", "section `.text' will not fit in region",
                "cannot find -lm", "undefined symbol: f", "In function `f':", "skipping",
                "(.text+0x8)", "'x'", "\n",
            ]), 0..12)
        ) {
            let text = pieces.concat();
            let words = DIAGNOSTIC_WORDS.iter().any(|word| text.contains(word));
            if !words {
                prop_assert!(parse_lines(&text, None).is_empty(), "{text:?}");
            }
        }

        #[test]
        fn arbitrary_logs_never_panic(text in "\\PC*") {
            for d in parse_build_log(&text) {
                prop_assert!(d.log_line >= 1);
            }
            for d in parse_build_log_in(&text, &dirs("/w/repo/b")) {
                prop_assert!(d.log_line >= 1);
            }
        }
    }
}
