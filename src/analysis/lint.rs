//! Lint findings: what a profile's `[lint]` command (and the build's own warnings) report about
//! the source, and which of them a candidate added.
//!
//! Pure. The readers turn a tool's output into [`Finding`]s: `gcc` (compiler warnings,
//! `file:line:col: warning: text [-Wflag]`, read by the build-log parser of [`super::diagnostics`]),
//! `cppcheck` (its `--template` lines and its `--xml` report), `clang-tidy` (`file:line:col:
//! warning: text [check-name]`) and a profile's own regex with named groups. Paths come out
//! relative to the tree that was linted, so the baseline's findings and a candidate's (linted in
//! another worktree) compare. [`with_source_text`] records the text of each finding's line, and
//! [`new_findings`] keeps what the baseline did not have: findings are matched by file, rule id
//! and that text, as a multiset — a finding that only moved (lines inserted above it) is not new,
//! a second identical one is. The build's own warnings need one more rule ([`answerable`]): a
//! compiler only warns about the files it compiles, and an incremental baseline build may have
//! compiled none, so a build warning is new only on a line the candidate's patch added.

use super::diagnostics::{parse_build_log, parse_build_log_in, BuildDirs};
use super::{Diagnostic, Severity};
use regex::Regex;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::LazyLock;

/// How a lint command's output is read (`[lint] format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    Gcc,
    Cppcheck,
    ClangTidy,
    Regex,
}

impl Format {
    pub const NAMES: &'static [&'static str] = &["gcc", "cppcheck", "clang-tidy", "regex"];

    pub fn name(self) -> &'static str {
        match self {
            Format::Gcc => "gcc",
            Format::Cppcheck => "cppcheck",
            Format::ClangTidy => "clang-tidy",
            Format::Regex => "regex",
        }
    }

    pub fn from_name(name: &str) -> Option<Format> {
        [
            Format::Gcc,
            Format::Cppcheck,
            Format::ClangTidy,
            Format::Regex,
        ]
        .into_iter()
        .find(|f| f.name() == name)
    }
}

/// The reader for one command's output; `Regex` carries the profile's pattern.
#[derive(Debug, Clone, Copy)]
pub enum Reader<'a> {
    Gcc,
    Cppcheck,
    ClangTidy,
    Regex(&'a Regex),
}

/// Who reported a finding when it came from the build log rather than the lint command.
pub const BUILD_TOOL: &str = "build";

/// One finding, e.g. cppcheck's `nullPointer` at `src/crc.c:12`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Finding {
    /// `build` (the build's own warnings) or the lint format: `gcc`, `cppcheck`, `clang-tidy`,
    /// `regex`.
    pub tool: String,
    /// Relative to the tree that was linted.
    pub file: String,
    pub line: Option<u32>,
    pub column: Option<u32>,
    /// As the tool says it: `warning`, `error`, `style`, ...
    pub severity: String,
    /// The rule: `-Wsign-compare`, `nullPointer`, `bugprone-branch-clone`; the severity when the
    /// tool names none.
    pub id: String,
    pub message: String,
    /// The text of the finding's source line, whitespace collapsed: how a finding is recognised
    /// when lines above it moved. Empty when the file could not be read.
    #[serde(default)]
    pub text: String,
}

impl Finding {
    /// `src/crc.c:12: nullPointer: Null pointer dereference: p`.
    pub fn describe(&self) -> String {
        let at = match self.line {
            Some(line) => format!("{}:{line}", self.file),
            None => self.file.clone(),
        };
        format!("{at}: {}: {}", self.id, self.message)
    }

    /// As a build diagnostic, so the evidence bundle shows its source like a compiler's.
    pub fn as_diagnostic(&self) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            tool: self.tool.clone(),
            kind: format!("lint:{}", self.id),
            file: Some(self.file.clone()),
            line: self.line,
            column: self.column,
            message: format!("{} [{}]", self.message, self.id),
            log_line: 0,
        }
    }

    /// What identifies a finding across trees: file, rule and the line's text (the message
    /// when the text is unknown).
    fn key(&self) -> (&str, &str, &str) {
        let what = if self.text.is_empty() {
            self.message.as_str()
        } else {
            self.text.as_str()
        };
        (self.file.as_str(), self.id.as_str(), what)
    }
}

struct Patterns {
    /// Colour escapes a tool prints when it believes it talks to a terminal.
    ansi: Regex,
    /// `file:line[:col]: severity: message [id]`: cppcheck's documented template, clang-tidy.
    located: Regex,
    /// gcc's trailing `[-Wsign-compare]` (or `[-Werror=sign-compare]`).
    gcc_flag: Regex,
    /// One attribute of an XML start tag.
    attribute: Regex,
}

#[expect(
    clippy::expect_used,
    reason = "the patterns are constants; every one is exercised by the unit tests"
)]
fn regex(pattern: &str) -> Regex {
    Regex::new(pattern).expect("built-in lint pattern compiles")
}

static PATTERNS: LazyLock<Patterns> = LazyLock::new(|| Patterns {
    ansi: regex(r"\x1b\[[0-9;?]*[A-Za-z]"),
    located: regex(
        r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?:(?P<col>\d+):)? (?P<sev>[a-z][a-z ]*): (?P<msg>.*?)(?: \[(?P<id>[^\]\s]+)\])?$",
    ),
    gcc_flag: regex(r"\s\[(?P<flag>-W[^\]\s]+)\]$"),
    attribute: regex(r#"(?P<name>[A-Za-z_][\w.-]*)="(?P<value>[^"]*)""#),
});

/// Reads `output` with `reader`; `root` is the directory the tool ran in, which absolute paths
/// are made relative to.
pub fn read(reader: Reader<'_>, output: &str, root: &Path) -> Vec<Finding> {
    let mut found = match reader {
        Reader::Gcc => gcc(parse_build_log(output), Format::Gcc.name()),
        Reader::Cppcheck if output.contains("<results") => cppcheck_xml(output),
        Reader::Cppcheck => located(output, Format::Cppcheck.name()),
        Reader::ClangTidy => located(output, Format::ClangTidy.name()),
        Reader::Regex(pattern) => by_regex(output, pattern),
    };
    for f in &mut found {
        f.file = relative(&f.file, root);
    }
    found
}

/// The warnings in a build log (the build's own findings), as the `gcc` reader sees them, their
/// files named as the repository names them (the build may have run anywhere in it).
pub fn build_warnings(log: &str, dirs: &BuildDirs) -> Vec<Finding> {
    gcc(parse_build_log_in(log, dirs), BUILD_TOOL)
        .into_iter()
        .filter(|f| f.severity == "warning")
        .collect()
}

/// Compiler diagnostics with a file: warnings and errors; notes only explain them.
fn gcc(diagnostics: Vec<Diagnostic>, tool: &str) -> Vec<Finding> {
    let p = &*PATTERNS;
    diagnostics
        .into_iter()
        .filter(|d| d.tool == "compiler" && d.severity != Severity::Note)
        .filter_map(|d| {
            let file = d.file?;
            let severity = match d.severity {
                Severity::Error => "error",
                Severity::Warning | Severity::Note => "warning",
            };
            let (message, id) = match p.gcc_flag.captures(&d.message) {
                Some(c) => {
                    let whole = c.get(0).map_or(0, |m| m.start());
                    (
                        d.message[..whole].to_string(),
                        c.name("flag").map_or("", |m| m.as_str()).to_string(),
                    )
                }
                None => (d.message.clone(), severity.to_string()),
            };
            Some(Finding {
                tool: tool.to_string(),
                file,
                line: d.line,
                column: d.column,
                severity: severity.to_string(),
                id,
                message,
                text: String::new(),
            })
        })
        .collect()
}

/// `file:line:col: severity: message [id]` lines; notes, cppcheck's `information` lines and
/// lines about no file (`nofile:0:0:`) are not findings.
fn located(output: &str, tool: &str) -> Vec<Finding> {
    let p = &*PATTERNS;
    output
        .lines()
        .filter_map(|raw| {
            let line = p.ansi.replace_all(raw, "");
            let c = p.located.captures(line.trim_end())?;
            let severity = c.name("sev")?.as_str();
            let file = c.name("file")?.as_str();
            let number: u32 = c.name("line")?.as_str().parse().ok()?;
            if matches!(severity, "note" | "information") || file == "nofile" || number == 0 {
                return None;
            }
            Some(Finding {
                tool: tool.to_string(),
                file: file.to_string(),
                line: Some(number),
                column: c.name("col").and_then(|m| m.as_str().parse().ok()),
                severity: severity.to_string(),
                id: c.name("id").map_or(severity, |m| m.as_str()).to_string(),
                message: c.name("msg")?.as_str().to_string(),
                text: String::new(),
            })
        })
        .collect()
}

/// cppcheck's `--xml` (version 2) report: each `<error>` with its first `<location>`. Errors
/// without a location (a missing system include, a summary) are not about a line of the tree.
fn cppcheck_xml(output: &str) -> Vec<Finding> {
    let p = &*PATTERNS;
    let attrs = |tag: &str| -> BTreeMap<String, String> {
        p.attribute
            .captures_iter(tag)
            .filter_map(|c| {
                Some((
                    c.name("name")?.as_str().into(),
                    unescape(c.name("value")?.as_str()),
                ))
            })
            .collect()
    };
    let mut out = Vec::new();
    let mut current: Option<(BTreeMap<String, String>, bool)> = None;
    for line in output.lines() {
        let tag = line.trim();
        if tag.starts_with("<error ") {
            current = Some((attrs(tag), false));
            // A self-closed error has no location.
            if tag.ends_with("/>") {
                current = None;
            }
        } else if tag.starts_with("<location ") {
            let Some((error, taken)) = &mut current else {
                continue;
            };
            if *taken {
                continue;
            }
            *taken = true;
            let location = attrs(tag);
            let (Some(file), Some(id)) = (location.get("file"), error.get("id")) else {
                continue;
            };
            let severity = error.get("severity").cloned().unwrap_or_default();
            if severity == "information" {
                continue;
            }
            out.push(Finding {
                tool: Format::Cppcheck.name().to_string(),
                file: file.clone(),
                line: location.get("line").and_then(|l| l.parse().ok()),
                column: location.get("column").and_then(|c| c.parse().ok()),
                severity,
                id: id.clone(),
                message: error.get("msg").cloned().unwrap_or_default(),
                text: String::new(),
            });
        } else if tag.starts_with("</error>") {
            current = None;
        }
    }
    out
}

fn unescape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let Some(end) = rest.find(';') else { break };
        let entity = &rest[1..end];
        let ch = match entity {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            e if e.starts_with("#x") => u32::from_str_radix(&e[2..], 16)
                .ok()
                .and_then(char::from_u32),
            e if e.starts_with('#') => e[1..].parse().ok().and_then(char::from_u32),
            _ => None,
        };
        match ch {
            Some(c) => {
                out.push(c);
                rest = &rest[end + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// A profile's own pattern, one line at a time: `file` and `message` are required groups (the
/// configuration checks that), `line`, `column`, `id` and `severity` optional; with no `id`, the
/// message is the rule.
fn by_regex(output: &str, pattern: &Regex) -> Vec<Finding> {
    let p = &*PATTERNS;
    output
        .lines()
        .filter_map(|raw| {
            let line = p.ansi.replace_all(raw, "");
            let c = pattern.captures(line.trim_end())?;
            let text = |name: &str| c.name(name).map(|m| m.as_str().to_string());
            let message = text("message")?;
            Some(Finding {
                tool: Format::Regex.name().to_string(),
                file: text("file").filter(|f| !f.is_empty())?,
                line: text("line").and_then(|l| l.parse().ok()),
                column: text("column").and_then(|l| l.parse().ok()),
                severity: text("severity").unwrap_or_else(|| "warning".to_string()),
                id: text("id").unwrap_or_else(|| message.clone()),
                message,
                text: String::new(),
            })
        })
        .collect()
}

/// `file` relative to `root` when it lies under it; `./src/a.c` as `src/a.c`.
fn relative(file: &str, root: &Path) -> String {
    let path = Path::new(file);
    let path = path.strip_prefix(root).unwrap_or(path);
    let text = path.to_string_lossy();
    text.strip_prefix("./").unwrap_or(&text).to_string()
}

/// Records the text of each finding's line; `read` returns a file's content by its path as the
/// finding names it, or None.
pub fn with_source_text(findings: &mut [Finding], read: &dyn Fn(&str) -> Option<String>) {
    let mut files: BTreeMap<String, Option<String>> = BTreeMap::new();
    for f in findings.iter_mut() {
        let Some(line) = f.line.filter(|l| *l > 0) else {
            continue;
        };
        let content = files.entry(f.file.clone()).or_insert_with(|| read(&f.file));
        if let Some(text) = content
            .as_deref()
            .and_then(|c| c.lines().nth(line as usize - 1))
        {
            f.text = normalise_line(text);
        }
    }
}

/// Collapses a source line's whitespace, as [`Finding::text`] holds it.
pub fn normalise_line(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The new findings a candidate answers for: every one from the lint command, and a build
/// warning only when its line is one the candidate's patch added (`added`: file → the added
/// lines, normalised). A warning the baseline build did not show because it compiled nothing
/// (an up-to-date incremental build) is not the candidate's doing when the candidate did not
/// write that line; a warning a header change causes in an untouched file goes unseen.
pub fn answerable(new: Vec<Finding>, added: &BTreeMap<String, BTreeSet<String>>) -> Vec<Finding> {
    new.into_iter()
        .filter(|f| {
            f.tool != BUILD_TOOL
                || added
                    .get(&f.file)
                    .is_some_and(|lines| !f.text.is_empty() && lines.contains(&f.text))
        })
        .collect()
}

/// The findings of `current` the baseline does not account for, in `current`'s order. Each
/// baseline finding accounts for one current finding with the same file, rule and line text.
pub fn new_findings(baseline: &[Finding], current: &[Finding]) -> Vec<Finding> {
    let mut known: BTreeMap<(&str, &str, &str), usize> = BTreeMap::new();
    for f in baseline {
        *known.entry(f.key()).or_default() += 1;
    }
    current
        .iter()
        .filter(|f| match known.get_mut(&f.key()) {
            Some(n) if *n > 0 => {
                *n -= 1;
                false
            }
            Some(_) | None => true,
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: &str = "/home/dev/fw";

    fn root() -> &'static Path {
        Path::new(ROOT)
    }

    /// What `gcc -Wall -Wextra -c a.c` (GCC 12) printed.
    const GCC: &str = "\
a.c: In function ‘sum’:
a.c:4:28: warning: comparison of integer expressions of different signedness: ‘unsigned int’ and ‘int’ [-Wsign-compare]
    4 |     for (unsigned i = 0; i < n; i++) {
      |                            ^
a.c: In function ‘arr’:
a.c:16:13: warning: ‘a’ is used uninitialized [-Wuninitialized]
   16 |     return a[0];
      |            ~^~~
a.c:14:9: note: ‘a’ declared here
   14 |     int a[4];
      |         ^
";

    #[test]
    fn gcc_warnings_keep_their_flag_as_the_rule() {
        let found = read(Reader::Gcc, GCC, root());
        assert_eq!(found.len(), 2, "{found:#?}");
        assert_eq!(found[0].file, "a.c");
        assert_eq!((found[0].line, found[0].column), (Some(4), Some(28)));
        assert_eq!(found[0].id, "-Wsign-compare");
        assert_eq!(found[0].severity, "warning");
        assert_eq!(
            found[0].message,
            "comparison of integer expressions of different signedness: ‘unsigned int’ and ‘int’"
        );
        assert_eq!(found[1].id, "-Wuninitialized");
        assert_eq!(found[1].tool, "gcc");
    }

    #[test]
    fn build_warnings_are_the_warnings_of_a_build_log() {
        let log = format!(
            "arm-none-eabi-gcc -c src/crc.c\n{GCC}src/main.c:3:1: error: expected ';' before '}}' token\n"
        );
        let found = build_warnings(&log, &dirs(root()));
        assert_eq!(found.len(), 2);
        assert!(found.iter().all(|f| f.tool == BUILD_TOOL));
    }

    fn dirs(root: &Path) -> BuildDirs {
        BuildDirs {
            root: root.to_path_buf(),
            cwd: root.join("build/gcc"),
        }
    }

    #[test]
    fn build_warnings_are_named_from_the_repository_root() {
        let log = format!(
            "make: Entering directory '{}'\n../../src/a.c:4:28: warning: x [-Wsign-compare]\n",
            root().join("build/gcc").display()
        );
        let found = build_warnings(&log, &dirs(root()));
        assert_eq!(found[0].file, "src/a.c");
    }

    #[test]
    fn absolute_paths_become_relative_to_the_linted_tree() {
        let out = "/home/dev/fw/src/a.c:4:28: warning: x [-Wsign-compare]\n./src/b.c:1:1: warning: y [-Wunused]\n";
        let found = read(Reader::Gcc, out, root());
        assert_eq!(found[0].file, "src/a.c");
        assert_eq!(found[1].file, "src/b.c");
    }

    /// `cppcheck -q --enable=all --template='{file}:{line}:{column}: {severity}: {message}
    /// [{id}]'` (cppcheck 2.10; its `information` line from a file with a missing include), then
    /// `--template=gcc`, whose excerpt and notes follow each line.
    #[test]
    fn cppcheck_template_lines() {
        let out = "\
a.c:15:6: error: Array 'a[4]' accessed at index 4, which is out of bounds. [arrayIndexOutOfBounds]
a.c:11:13: error: Null pointer dereference: p [nullPointer]
nofile:0:0: information: Cppcheck cannot find all the include files (use --check-config for details) [missingInclude]
";
        let found = read(Reader::Cppcheck, out, root());
        assert_eq!(found.len(), 2);
        assert_eq!(found[1].id, "nullPointer");
        assert_eq!(found[1].severity, "error");
        assert_eq!(found[1].message, "Null pointer dereference: p");
        assert_eq!((found[1].line, found[1].column), (Some(11), Some(13)));

        let gcc_template = "\
Checking a.c ...
a.c:15:6: warning: Array 'a[4]' accessed at index 4, which is out of bounds. [arrayIndexOutOfBounds]
    a[4] = 1;
     ^
a.c:11:13: warning: Null pointer dereference: p [nullPointer]
    return *p;
            ^
a.c:10:14: note: Assignment 'p=NULL', assigned value is 0
    int *p = NULL;
             ^
";
        let found = read(Reader::Cppcheck, gcc_template, root());
        let ids: Vec<&str> = found.iter().map(|f| f.id.as_str()).collect();
        assert_eq!(ids, ["arrayIndexOutOfBounds", "nullPointer"]);
    }

    /// `cppcheck -q --xml a.c` (cppcheck 2.10), with a location-less error added as cppcheck
    /// prints it for a missing system include.
    #[test]
    fn cppcheck_xml_report() {
        let out = r#"<?xml version="1.0" encoding="UTF-8"?>
<results version="2">
    <cppcheck version="2.10"/>
    <errors>
        <error id="arrayIndexOutOfBounds" severity="error" msg="Array &apos;a[4]&apos; accessed at index 4, which is out of bounds." verbose="Array &apos;a[4]&apos; accessed at index 4, which is out of bounds." cwe="788" file0="a.c">
            <location file="a.c" line="15" column="6" info="Array index out of bounds"/>
        </error>
        <error id="nullPointer" severity="error" msg="Null pointer dereference: p" verbose="Null pointer dereference: p" cwe="476" file0="a.c">
            <location file="a.c" line="11" column="13" info="Null pointer dereference"/>
            <location file="a.c" line="10" column="14" info="Assignment &apos;p=NULL&apos;, assigned value is 0"/>
            <symbol>p</symbol>
        </error>
        <error id="missingIncludeSystem" severity="information" msg="Include file: &lt;stdio.h&gt; not found." verbose="x"/>
    </errors>
</results>
"#;
        let found = read(Reader::Cppcheck, out, root());
        assert_eq!(found.len(), 2, "{found:#?}");
        assert_eq!(
            found[0].message,
            "Array 'a[4]' accessed at index 4, which is out of bounds."
        );
        assert_eq!(found[1].id, "nullPointer");
        assert_eq!((found[1].line, found[1].column), (Some(11), Some(13)));
        assert_eq!(unescape("&lt;a&gt; &#65;&#x42; & x"), "<a> AB & x");
    }

    /// `clang-tidy --checks='-*,clang-analyzer-*' a.c --` (LLVM 14): absolute paths, notes
    /// with excerpts, and a summary on stderr.
    #[test]
    fn clang_tidy_output() {
        let out = "\
15 warnings generated.
/home/dev/fw/a.c:11:12: warning: Dereference of null pointer (loaded from variable 'p') [clang-analyzer-core.NullDereference]
    return *p;
           ^~
/home/dev/fw/a.c:10:5: note: 'p' initialized to a null pointer value
    int *p = NULL;
    ^~~~~~
/home/dev/fw/a.c:16:5: warning: Undefined or garbage value returned to caller [clang-analyzer-core.uninitialized.UndefReturn]
    return a[0];
    ^      ~~~~
Suppressed 13 warnings (12 in non-user code, 1 with check filters).
Use -header-filter=.* to display errors from all non-system headers.
";
        let found = read(Reader::ClangTidy, out, root());
        assert_eq!(found.len(), 2, "{found:#?}");
        assert_eq!(found[0].file, "a.c");
        assert_eq!(found[0].id, "clang-analyzer-core.NullDereference");
        assert_eq!(
            found[0].message,
            "Dereference of null pointer (loaded from variable 'p')"
        );
        assert_eq!(found[1].id, "clang-analyzer-core.uninitialized.UndefReturn");
    }

    #[test]
    fn a_regex_with_named_groups() {
        let pattern = Regex::new(
            r"^(?P<file>[^ ]+) line (?P<line>\d+) \((?P<id>R[\d.]+)\): (?P<message>.*)$",
        )
        .unwrap();
        let out = "MISRA report\nsrc/crc.c line 12 (R10.4): operands of different type\n";
        let found = read(Reader::Regex(&pattern), out, root());
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].id, "R10.4");
        assert_eq!(found[0].line, Some(12));
        assert_eq!(found[0].message, "operands of different type");
        let no_id = Regex::new(r"^(?P<file>\S+): (?P<message>.*)$").unwrap();
        let found = read(Reader::Regex(&no_id), "src/a.c: too long\n", root());
        assert_eq!(found[0].id, "too long");
    }

    fn finding(file: &str, line: u32, id: &str) -> Finding {
        Finding {
            tool: "cppcheck".into(),
            file: file.into(),
            line: Some(line),
            column: None,
            severity: "error".into(),
            id: id.into(),
            message: format!("{id} here"),
            text: String::new(),
        }
    }

    #[test]
    fn findings_that_only_moved_are_not_new_and_a_second_identical_one_is() {
        let before = "int f(int *p) {\n    return *p;\n}\n";
        let after = "/* a comment */\n\nint f(int *p) {\n    return  *p;\n    return *p;\n}\n";
        let mut baseline = vec![finding("src/a.c", 2, "nullPointer")];
        with_source_text(&mut baseline, &|_| Some(before.to_string()));
        assert_eq!(baseline[0].text, "return *p;");
        let mut current = vec![
            finding("src/a.c", 4, "nullPointer"),
            finding("src/a.c", 5, "nullPointer"),
        ];
        with_source_text(&mut current, &|_| Some(after.to_string()));
        let new = new_findings(&baseline, &current);
        assert_eq!(new.len(), 1);
        assert_eq!(new[0].line, Some(5));
        // Another rule on the same line, or the same rule in another file, is new.
        let other = vec![
            Finding {
                id: "uninitvar".into(),
                ..baseline[0].clone()
            },
            Finding {
                file: "src/b.c".into(),
                ..baseline[0].clone()
            },
        ];
        assert_eq!(new_findings(&baseline, &other).len(), 2);
        assert!(new_findings(&current, &baseline).is_empty());
    }

    #[test]
    fn a_build_warning_is_the_candidates_only_on_a_line_it_added() {
        let warning = |text: &str| Finding {
            tool: BUILD_TOOL.into(),
            text: text.into(),
            id: "-Wsign-compare".into(),
            ..finding("src/a.c", 4, "x")
        };
        let lint = Finding {
            text: "return *p;".into(),
            ..finding("src/a.c", 9, "nullPointer")
        };
        let added: BTreeMap<String, BTreeSet<String>> = [(
            "src/a.c".to_string(),
            [normalise_line("    if (u  < n) {")].into_iter().collect(),
        )]
        .into_iter()
        .collect();
        let kept = answerable(
            vec![
                warning("if (u < n) {"),
                warning("for (i = 0; i < n; i++) {"),
                lint.clone(),
            ],
            &added,
        );
        assert_eq!(kept.len(), 2);
        assert_eq!(kept[0].text, "if (u < n) {");
        assert_eq!(kept[1], lint);
        assert!(answerable(vec![warning("")], &added).is_empty());
    }

    #[test]
    fn an_unreadable_file_matches_by_message() {
        let mut a = vec![finding("gone.c", 3, "x")];
        with_source_text(&mut a, &|_| None);
        assert_eq!(a[0].text, "");
        let b = vec![finding("gone.c", 9, "x")];
        assert!(new_findings(&a, &b).is_empty());
        assert_eq!(a[0].describe(), "gone.c:3: x: x here");
        assert_eq!(a[0].as_diagnostic().message, "x here [x]");
    }

    #[test]
    fn format_names_round_trip() {
        for name in Format::NAMES {
            assert_eq!(Format::from_name(name).map(Format::name), Some(*name));
        }
        assert_eq!(Format::from_name("pylint"), None);
    }
}
