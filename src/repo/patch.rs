//! Parsing unified diffs (git-style and plain) into files and hunks. Pure: it reads bytes and never
//! looks at the file system. Path safety lives in `paths`, applying hunks in `hunks`; this module
//! must not decide whether a patch is acceptable, only what it says.

use super::error::RepoError;

/// One line of a hunk. The bytes include the line's `\n` unless the patch said
/// `\ No newline at end of file` after it, so comparing with a file's lines is exact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HunkLine {
    Context(Vec<u8>),
    Remove(Vec<u8>),
    Add(Vec<u8>),
}

impl HunkLine {
    fn bytes_mut(&mut self) -> &mut Vec<u8> {
        match self {
            HunkLine::Context(b) | HunkLine::Remove(b) | HunkLine::Add(b) => b,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hunk {
    /// `@@ -12,7 +12,8 @@` as it should be named in errors and reports.
    pub header: String,
    /// What follows the second `@@`: git's name for the enclosing function, or empty.
    pub heading: String,
    pub old_start: usize,
    pub old_count: usize,
    pub new_start: usize,
    pub new_count: usize,
    pub lines: Vec<HunkLine>,
}

impl Hunk {
    /// The same change undone: used to tell an already-applied patch from a stale one.
    pub fn reversed(&self) -> Hunk {
        Hunk {
            header: format!(
                "@@ -{},{} +{},{} @@",
                self.new_start, self.new_count, self.old_start, self.old_count
            ),
            heading: self.heading.clone(),
            old_start: self.new_start,
            old_count: self.new_count,
            new_start: self.old_start,
            new_count: self.old_count,
            lines: self
                .lines
                .iter()
                .map(|l| match l {
                    HunkLine::Context(b) => HunkLine::Context(b.clone()),
                    HunkLine::Remove(b) => HunkLine::Add(b.clone()),
                    HunkLine::Add(b) => HunkLine::Remove(b.clone()),
                })
                .collect(),
        }
    }
}

/// What a patch does to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    Added,
    Deleted,
    Modified,
    Renamed,
    Copied,
}

/// One file's section of a patch. Paths are raw bytes with the `a/` / `b/` prefix removed; `None`
/// stands for `/dev/null`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FilePatch {
    pub old_path: Option<Vec<u8>>,
    pub new_path: Option<Vec<u8>>,
    pub old_mode: Option<u32>,
    pub new_mode: Option<u32>,
    pub kind: ChangeKind,
    pub binary: bool,
    pub hunks: Vec<Hunk>,
}

impl FilePatch {
    pub fn added_lines(&self) -> usize {
        self.count(|l| matches!(l, HunkLine::Add(_)))
    }

    pub fn removed_lines(&self) -> usize {
        self.count(|l| matches!(l, HunkLine::Remove(_)))
    }

    fn count(&self, f: impl Fn(&HunkLine) -> bool) -> usize {
        self.hunks
            .iter()
            .map(|h| h.lines.iter().filter(|l| f(l)).count())
            .sum()
    }

    /// The patch that undoes this one.
    pub fn reversed(&self) -> FilePatch {
        FilePatch {
            old_path: self.new_path.clone(),
            new_path: self.old_path.clone(),
            old_mode: self.new_mode,
            new_mode: self.old_mode,
            kind: match self.kind {
                ChangeKind::Added => ChangeKind::Deleted,
                ChangeKind::Deleted => ChangeKind::Added,
                other => other,
            },
            binary: self.binary,
            hunks: self.hunks.iter().map(Hunk::reversed).collect(),
        }
    }
}

/// Header facts gathered for one file before its hunks.
#[derive(Default)]
struct Header {
    /// A `diff --git` section; a plain diff's differing names are not a rename.
    git: bool,
    git_old: Option<Vec<u8>>,
    git_new: Option<Vec<u8>>,
    minus: Option<Option<Vec<u8>>>,
    plus: Option<Option<Vec<u8>>>,
    rename_from: Option<Vec<u8>>,
    rename_to: Option<Vec<u8>>,
    copy_from: Option<Vec<u8>>,
    copy_to: Option<Vec<u8>>,
    old_mode: Option<u32>,
    new_mode: Option<u32>,
    new_file: bool,
    deleted_file: bool,
    binary: bool,
}

impl Header {
    /// The file as errors name it: the new side, else the old, as far as the header has read.
    fn name(&self) -> String {
        let path = [&self.plus, &self.minus]
            .into_iter()
            .flatten()
            .flatten()
            .next()
            .or(self.git_new.as_ref())
            .or(self.git_old.as_ref());
        path.map_or_else(
            || "/dev/null".to_string(),
            |p| String::from_utf8_lossy(p).into_owned(),
        )
    }
}

/// Parses every file section of `diff`. Text before the first file header (a commit message, a
/// diffstat) is skipped, as `git apply` does.
pub(crate) fn parse(diff: &[u8]) -> Result<Vec<FilePatch>, RepoError> {
    let lines: Vec<&[u8]> = diff.split_inclusive(|&b| b == b'\n').collect();
    let mut files = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if line.starts_with(b"diff --git ") {
            let (file, next) = parse_git_section(&lines, i)?;
            files.push(file);
            i = next;
        } else if let Some(file) = plain_binary(lines[i]) {
            files.push(file);
            i += 1;
        } else if is_plain_header(&lines, i) {
            let mut header = Header::default();
            let next = parse_minus_plus(&lines, i, &mut header)?;
            let (hunks, next) = parse_hunks(&lines, next, &header.name())?;
            files.push(finish(header, hunks, i)?);
            i = next;
        } else {
            i += 1;
        }
    }
    if files.is_empty() {
        return Err(RepoError::EmptyPatch);
    }
    Ok(files)
}

/// A diff at the start of a text, as a model or an agent writes one: its files, and how many bytes
/// of the text it takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LeadingDiff {
    pub files: Vec<FilePatch>,
    pub len: usize,
}

/// Parses the unified diff `text` starts with, stricter than [`parse`] because it checks what
/// someone generated rather than what git wrote: the first line must start a file section, every
/// `---`/`+++` path must be `a/PATH` / `b/PATH` (or `/dev/null`) relative to the repository, and
/// a hunk followed by more hunk lines than its header counts is an error. The diff ends before
/// the first other line after a complete hunk (an explanation after the patch); blank lines
/// between two files' sections are part of it.
pub(crate) fn parse_leading(text: &[u8]) -> Result<LeadingDiff, RepoError> {
    let lines: Vec<&[u8]> = text.split_inclusive(|&b| b == b'\n').collect();
    let offset = |i: usize| lines[..i].iter().map(|l| l.len()).sum::<usize>();
    let mut files = Vec::new();
    let (mut i, mut len) = (0, 0);
    while i < lines.len() {
        let line = trim_eol(lines[i]);
        let section = if line.starts_with(b"diff --git ") {
            Some(parse_git_section(&lines, i)?)
        } else if is_plain_header(&lines, i) {
            let mut header = Header::default();
            let next = parse_minus_plus(&lines, i, &mut header)?;
            let (hunks, next) = parse_hunks(&lines, next, &header.name())?;
            Some((finish(header, hunks, i)?, next))
        } else {
            None
        };
        if let Some((file, next)) = section {
            check_generated_headers(&lines[i..next], i)?;
            files.push(file);
            i = next;
            len = offset(i);
            continue;
        }
        let between_files = line.is_empty() && starts_file(&lines[i..]);
        if between_files || (!files.is_empty() && is_git_extended_header(line)) {
            i += 1;
            continue;
        }
        if files.is_empty() {
            return Err(parse_err(
                i,
                format!(
                    "expected a `diff --git` or `---` file header, found `{}`",
                    String::from_utf8_lossy(line)
                ),
            ));
        }
        if matches!(line.first(), Some(b'+' | b'-' | b' ')) {
            return Err(parse_err(
                i,
                "the hunk before this line has more lines than its header counts",
            ));
        }
        break;
    }
    if files.is_empty() {
        return Err(RepoError::EmptyPatch);
    }
    Ok(LeadingDiff { files, len })
}

/// Whether, past blank lines, `lines` go on with a new file's section.
fn starts_file(lines: &[&[u8]]) -> bool {
    let rest: Vec<&[u8]> = lines
        .iter()
        .copied()
        .skip_while(|l| trim_eol(l).is_empty())
        .collect();
    rest.first().is_some_and(|l| l.starts_with(b"diff --git ")) || is_plain_header(&rest, 0)
}

/// Git's extended header lines, which may sit between files.
fn is_git_extended_header(line: &[u8]) -> bool {
    const PREFIXES: &[&[u8]] = &[
        b"index ",
        b"new file mode ",
        b"deleted file mode ",
        b"old mode ",
        b"new mode ",
        b"similarity index ",
        b"dissimilarity index ",
        b"rename from ",
        b"rename to ",
        b"copy from ",
        b"copy to ",
    ];
    PREFIXES.iter().any(|p| line.starts_with(p))
}

/// The `---`/`+++` lines of one file section (before its first hunk) name `a/PATH` and `b/PATH`
/// relative to the repository, or `/dev/null`. `first` is the section's index in the text.
fn check_generated_headers(section: &[&[u8]], first: usize) -> Result<(), RepoError> {
    let headers = section.iter().take_while(|l| !l.starts_with(b"@@ "));
    for (n, line) in headers.enumerate() {
        let checked = if let Some(rest) = line.strip_prefix(b"--- ") {
            Some((rest, "a/"))
        } else {
            line.strip_prefix(b"+++ ").map(|rest| (rest, "b/"))
        };
        if let Some((rest, prefix)) = checked {
            generated_path(&String::from_utf8_lossy(trim_eol(rest)), prefix, first + n)?;
        }
    }
    Ok(())
}

/// A generated header path: `/dev/null`, or `prefix` and a path that stays inside the
/// repository. A tab and what follows it (a timestamp) is dropped.
fn generated_path(rest: &str, prefix: &str, line: usize) -> Result<(), RepoError> {
    let raw = rest.split('\t').next().unwrap_or(rest).trim_end();
    let raw = raw
        .strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        .unwrap_or(raw);
    if raw == "/dev/null" {
        return Ok(());
    }
    let Some(path) = raw.strip_prefix(prefix) else {
        return Err(parse_err(
            line,
            format!("`{raw}` does not start with `{prefix}`: paths must be `a/PATH` and `b/PATH`"),
        ));
    };
    let escapes = path.is_empty()
        || path.starts_with('/')
        || path.split('/').any(|c| c == ".." || c.is_empty());
    if escapes {
        return Err(parse_err(
            line,
            format!("`{raw}` is not a path relative to the repository root"),
        ));
    }
    Ok(())
}

fn is_plain_header(lines: &[&[u8]], i: usize) -> bool {
    lines[i].starts_with(b"--- ") && lines.get(i + 1).is_some_and(|l| l.starts_with(b"+++ "))
}

/// `diff -u` says `Binary files A and B differ` and nothing else for a binary file: keep it as a
/// file section so a binary change is never silently dropped from the patch.
fn plain_binary(line: &[u8]) -> Option<FilePatch> {
    let rest = trim_eol(line)
        .strip_prefix(b"Binary files ")?
        .strip_suffix(b" differ")?;
    let at = rest.windows(5).position(|w| w == b" and ")?;
    let side = |raw: &[u8]| (raw != b"/dev/null").then(|| strip_prefix(raw.to_vec()));
    let (old, new) = (side(&rest[..at]), side(&rest[at + 5..]));
    let kind = match (&old, &new) {
        (None, Some(_)) => ChangeKind::Added,
        (Some(_), None) => ChangeKind::Deleted,
        (Some(_), Some(_)) => ChangeKind::Modified,
        (None, None) => return None,
    };
    // As for a text diff, a plain diff names the file it patches on the new side.
    let old = match (&old, &new) {
        (Some(_), Some(n)) => Some(n.clone()),
        _ => old,
    };
    Some(FilePatch {
        old_path: old,
        new_path: new,
        old_mode: None,
        new_mode: None,
        kind,
        binary: true,
        hunks: Vec::new(),
    })
}

fn parse_git_section(lines: &[&[u8]], start: usize) -> Result<(FilePatch, usize), RepoError> {
    let mut header = Header {
        git: true,
        ..Header::default()
    };
    let first = trim_eol(&lines[start][b"diff --git ".len()..]);
    if let Some((old, new)) = split_git_paths(first) {
        header.git_old = Some(strip_prefix(old));
        header.git_new = Some(strip_prefix(new));
    }
    let mut i = start + 1;
    while i < lines.len() {
        let line = trim_eol(lines[i]);
        if line.starts_with(b"diff --git ") || line.starts_with(b"@@ ") {
            break;
        }
        if is_plain_header(lines, i) {
            i = parse_minus_plus(lines, i, &mut header)?;
            break;
        }
        if let Some(rest) = line.strip_prefix(b"old mode ") {
            header.old_mode = Some(parse_mode(rest, i)?);
        } else if let Some(rest) = line.strip_prefix(b"new mode ") {
            header.new_mode = Some(parse_mode(rest, i)?);
        } else if let Some(rest) = line.strip_prefix(b"deleted file mode ") {
            header.deleted_file = true;
            header.old_mode = Some(parse_mode(rest, i)?);
        } else if let Some(rest) = line.strip_prefix(b"new file mode ") {
            header.new_file = true;
            header.new_mode = Some(parse_mode(rest, i)?);
        } else if let Some(rest) = line.strip_prefix(b"rename from ") {
            header.rename_from = Some(unquote(rest, i)?);
        } else if let Some(rest) = line.strip_prefix(b"rename to ") {
            header.rename_to = Some(unquote(rest, i)?);
        } else if let Some(rest) = line.strip_prefix(b"copy from ") {
            header.copy_from = Some(unquote(rest, i)?);
        } else if let Some(rest) = line.strip_prefix(b"copy to ") {
            header.copy_to = Some(unquote(rest, i)?);
        } else if line.starts_with(b"Binary files ") || line == b"GIT binary patch" {
            header.binary = true;
            // The binary payload runs to the next file; libgit2 applies it, we only need paths.
            i += 1;
            while i < lines.len() && !lines[i].starts_with(b"diff --git ") {
                i += 1;
            }
            break;
        }
        i += 1;
    }
    let (hunks, next) = parse_hunks(lines, i, &header.name())?;
    Ok((finish(header, hunks, start)?, next))
}

/// Reads a `---` / `+++` pair starting at `i`; returns the index after it.
fn parse_minus_plus(lines: &[&[u8]], i: usize, header: &mut Header) -> Result<usize, RepoError> {
    let minus = header_path(&lines[i][4..], i)?;
    let plus = header_path(&lines[i + 1][4..], i + 1)?;
    header.minus = Some(minus);
    header.plus = Some(plus);
    Ok(i + 2)
}

/// A `---`/`+++` path: quoted or not, a tab ends it (diff's timestamp), `/dev/null` is none.
fn header_path(raw: &[u8], line: usize) -> Result<Option<Vec<u8>>, RepoError> {
    let raw = trim_eol(raw);
    let path = if raw.first() == Some(&b'"') {
        unquote(raw, line)?
    } else {
        let end = raw.iter().position(|&b| b == b'\t').unwrap_or(raw.len());
        trim_trailing_spaces(&raw[..end]).to_vec()
    };
    if path == b"/dev/null" {
        return Ok(None);
    }
    Ok(Some(strip_prefix(path)))
}

/// The hunks from line `i` on, for the file named `file` (in errors).
fn parse_hunks(lines: &[&[u8]], mut i: usize, file: &str) -> Result<(Vec<Hunk>, usize), RepoError> {
    let mut hunks = Vec::new();
    while i < lines.len() && lines[i].starts_with(b"@@ ") {
        let header_line = lines[i];
        let (mut hunk, body) = parse_hunk_header(header_line, i)?;
        let (old_count, new_count) = (hunk.old_count, hunk.new_count);
        let (mut old_left, mut new_left) = (old_count, new_count);
        let truncated =
            |old_left: usize, new_left: usize, ended_at: Option<usize>| RepoError::TruncatedHunk {
                file: file.to_string(),
                header: String::from_utf8_lossy(trim_eol(header_line)).into_owned(),
                expected_old: old_count,
                expected_new: new_count,
                old: old_count - old_left,
                new: new_count - new_left,
                ended_at,
            };
        i = body;
        while old_left > 0 || new_left > 0 {
            let Some(line) = lines.get(i) else {
                return Err(truncated(old_left, new_left, None));
            };
            let (kind, text) = match line.first() {
                Some(b' ') => (b' ', &line[1..]),
                Some(b'-') => (b'-', &line[1..]),
                Some(b'+') => (b'+', &line[1..]),
                Some(b'\\') => {
                    strip_last_newline(&mut hunk, i)?;
                    i += 1;
                    continue;
                }
                // An empty line inside a hunk is a context line whose space was eaten by an
                // editor or a mail client; GNU patch accepts it the same way.
                Some(b'\n') | Some(b'\r') if trim_eol(line).is_empty() => (b' ', *line),
                _ => return Err(truncated(old_left, new_left, Some(i + 1))),
            };
            let text = text.to_vec();
            match kind {
                b' ' if old_left > 0 && new_left > 0 => {
                    old_left -= 1;
                    new_left -= 1;
                    hunk.lines.push(HunkLine::Context(text));
                }
                b'-' if old_left > 0 => {
                    old_left -= 1;
                    hunk.lines.push(HunkLine::Remove(text));
                }
                b'+' if new_left > 0 => {
                    new_left -= 1;
                    hunk.lines.push(HunkLine::Add(text));
                }
                _ => {
                    return Err(parse_err(
                        i,
                        format!("hunk {} has more lines than its header says", hunk.header),
                    ))
                }
            }
            i += 1;
        }
        if lines.get(i).is_some_and(|l| l.starts_with(b"\\")) {
            strip_last_newline(&mut hunk, i)?;
            i += 1;
        }
        hunks.push(hunk);
    }
    Ok((hunks, i))
}

fn strip_last_newline(hunk: &mut Hunk, line: usize) -> Result<(), RepoError> {
    let Some(last) = hunk.lines.last_mut() else {
        return Err(parse_err(
            line,
            "'\\ No newline at end of file' before any line",
        ));
    };
    let bytes = last.bytes_mut();
    if bytes.last() == Some(&b'\n') {
        bytes.pop();
    }
    Ok(())
}

fn parse_hunk_header(line: &[u8], i: usize) -> Result<(Hunk, usize), RepoError> {
    let text = std::str::from_utf8(trim_eol(line))
        .map_err(|_| parse_err(i, "hunk header is not valid UTF-8"))?;
    let bad = || parse_err(i, format!("bad hunk header '{text}'"));
    let rest = text.strip_prefix("@@ -").ok_or_else(bad)?;
    let end = rest.find(" @@").ok_or_else(bad)?;
    let heading = rest[end + 3..].trim().to_string();
    let (old, new) = rest[..end].split_once(" +").ok_or_else(bad)?;
    let range = |s: &str| -> Option<(usize, usize)> {
        match s.split_once(',') {
            Some((start, count)) => Some((start.parse().ok()?, count.parse().ok()?)),
            None => Some((s.parse().ok()?, 1)),
        }
    };
    let (old_start, old_count) = range(old).ok_or_else(bad)?;
    let (new_start, new_count) = range(new).ok_or_else(bad)?;
    Ok((
        Hunk {
            header: format!(
                "@@ -{},{} +{},{} @@",
                old_start, old_count, new_start, new_count
            ),
            heading,
            old_start,
            old_count,
            new_start,
            new_count,
            lines: Vec::new(),
        },
        i + 1,
    ))
}

fn finish(h: Header, hunks: Vec<Hunk>, line: usize) -> Result<FilePatch, RepoError> {
    let (old_path, new_path, kind) = if let (Some(from), Some(to)) = (&h.rename_from, &h.rename_to)
    {
        (Some(from.clone()), Some(to.clone()), ChangeKind::Renamed)
    } else if let (Some(from), Some(to)) = (&h.copy_from, &h.copy_to) {
        (Some(from.clone()), Some(to.clone()), ChangeKind::Copied)
    } else {
        let old = match &h.minus {
            Some(p) => p.clone(),
            None if h.new_file => None,
            None => h.git_old.clone(),
        };
        let new = match &h.plus {
            Some(p) => p.clone(),
            None if h.deleted_file => None,
            None => h.git_new.clone(),
        };
        let (old, new) = if h.new_file {
            (None, new)
        } else if h.deleted_file {
            (old, None)
        } else {
            (old, new)
        };
        // `diff -u crc.c.orig crc.c` patches crc.c: only git diffs express renames.
        let (old, new) = match (old, new) {
            (Some(o), Some(n)) if !h.git && o != n => (Some(n.clone()), Some(n)),
            other => other,
        };
        let kind = match (&old, &new) {
            (None, Some(_)) => ChangeKind::Added,
            (Some(_), None) => ChangeKind::Deleted,
            (Some(o), Some(n)) if o != n => ChangeKind::Renamed,
            (Some(_), Some(_)) => ChangeKind::Modified,
            (None, None) => {
                return Err(parse_err(line, "a file section names no path"));
            }
        };
        (old, new, kind)
    };
    if hunks.is_empty() && !h.binary && h.old_mode == h.new_mode && kind == ChangeKind::Modified {
        return Err(parse_err(line, "a file section has no hunk"));
    }
    Ok(FilePatch {
        old_path,
        new_path,
        old_mode: h.old_mode,
        new_mode: h.new_mode,
        kind,
        binary: h.binary,
        hunks,
    })
}

/// Splits the paths of a `diff --git` line. Quoted paths are unambiguous; unquoted ones may hold
/// spaces, so prefer the split where both sides name the same file (the common case).
fn split_git_paths(rest: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    if rest.first() == Some(&b'"') {
        let (old, after) = take_quoted(rest)?;
        let after = after.strip_prefix(b" ")?;
        let new = if after.first() == Some(&b'"') {
            take_quoted(after)?.0
        } else {
            after.to_vec()
        };
        return Some((old, new));
    }
    let candidates: Vec<usize> = rest
        .windows(3)
        .enumerate()
        .filter(|(_, w)| *w == b" b/")
        .map(|(i, _)| i)
        .collect();
    for &at in &candidates {
        let (old, new) = (&rest[..at], &rest[at + 1..]);
        if old.len() >= 2 && old[2..] == new[2..] {
            return Some((old.to_vec(), new.to_vec()));
        }
    }
    if let Some(&at) = candidates.first() {
        return Some((rest[..at].to_vec(), rest[at + 1..].to_vec()));
    }
    if let Some(q) = rest.iter().position(|&b| b == b'"') {
        let old = rest[..q].strip_suffix(b" ")?;
        return Some((old.to_vec(), take_quoted(&rest[q..])?.0));
    }
    let at = rest.iter().position(|&b| b == b' ')?;
    Some((rest[..at].to_vec(), rest[at + 1..].to_vec()))
}

fn strip_prefix(path: Vec<u8>) -> Vec<u8> {
    if path.starts_with(b"a/") || path.starts_with(b"b/") {
        path[2..].to_vec()
    } else {
        path
    }
}

fn unquote(raw: &[u8], line: usize) -> Result<Vec<u8>, RepoError> {
    let raw = trim_eol(raw);
    if raw.first() != Some(&b'"') {
        return Ok(raw.to_vec());
    }
    match take_quoted(raw) {
        Some((path, [])) => Ok(path),
        _ => Err(parse_err(line, "bad quoted path")),
    }
}

/// Decodes a C-style quoted path as git writes it (`"a/caf\303\251.c"`); returns the rest.
fn take_quoted(raw: &[u8]) -> Option<(Vec<u8>, &[u8])> {
    let mut out = Vec::new();
    let mut i = 1;
    while i < raw.len() {
        match raw[i] {
            b'"' => return Some((out, &raw[i + 1..])),
            b'\\' => {
                let c = *raw.get(i + 1)?;
                i += 2;
                match c {
                    b'n' => out.push(b'\n'),
                    b't' => out.push(b'\t'),
                    b'r' => out.push(b'\r'),
                    b'a' => out.push(0x07),
                    b'b' => out.push(0x08),
                    b'f' => out.push(0x0c),
                    b'v' => out.push(0x0b),
                    b'0'..=b'7' => {
                        let digits = raw.get(i - 1..i + 2)?;
                        let mut v: u32 = 0;
                        for &d in digits {
                            if !(b'0'..=b'7').contains(&d) {
                                return None;
                            }
                            v = v * 8 + u32::from(d - b'0');
                        }
                        out.push(u8::try_from(v).ok()?);
                        i += 2;
                    }
                    other => out.push(other),
                }
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    None
}

fn parse_mode(raw: &[u8], line: usize) -> Result<u32, RepoError> {
    std::str::from_utf8(trim_eol(raw))
        .ok()
        .and_then(|s| u32::from_str_radix(s.trim(), 8).ok())
        .ok_or_else(|| parse_err(line, "bad file mode"))
}

fn trim_eol(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

fn trim_trailing_spaces(s: &[u8]) -> &[u8] {
    let end = s.iter().rposition(|&b| b != b' ').map_or(0, |p| p + 1);
    &s[..end]
}

/// Lines are counted from 1 in messages, as an editor shows them.
fn parse_err(index: usize, reason: impl Into<String>) -> RepoError {
    RepoError::PatchParse {
        line: index + 1,
        reason: reason.into(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn one(diff: &str) -> FilePatch {
        let mut files = parse(diff.as_bytes()).unwrap();
        assert_eq!(files.len(), 1);
        files.remove(0)
    }

    #[test]
    fn git_modify() {
        let f = one(concat!(
            "diff --git a/src/main.c b/src/main.c\n",
            "index 83db48f..bf269f4 100644\n",
            "--- a/src/main.c\n",
            "+++ b/src/main.c\n",
            "@@ -1,3 +1,3 @@\n",
            " a\n",
            "-b\n",
            "+B\n",
            " c\n",
        ));
        assert_eq!(f.kind, ChangeKind::Modified);
        assert_eq!(f.old_path.as_deref(), Some(&b"src/main.c"[..]));
        assert_eq!(f.new_path.as_deref(), Some(&b"src/main.c"[..]));
        assert_eq!(f.hunks.len(), 1);
        assert_eq!(f.hunks[0].header, "@@ -1,3 +1,3 @@");
        assert_eq!(
            f.hunks[0].lines,
            vec![
                HunkLine::Context(b"a\n".to_vec()),
                HunkLine::Remove(b"b\n".to_vec()),
                HunkLine::Add(b"B\n".to_vec()),
                HunkLine::Context(b"c\n".to_vec()),
            ]
        );
        assert_eq!((f.added_lines(), f.removed_lines()), (1, 1));
    }

    #[test]
    fn plain_diff_with_preamble_and_timestamps() {
        let f = one(concat!(
            "Fix the CRC table.\n",
            "---\n",
            " crc.c | 2 +-\n",
            "--- crc.c.orig\t2024-01-01 10:00:00\n",
            "+++ crc.c\t2024-01-01 10:00:01\n",
            "@@ -2 +2 @@\n",
            "-x\n",
            "+y\n",
        ));
        assert_eq!(f.kind, ChangeKind::Modified);
        assert_eq!(f.old_path.as_deref(), Some(&b"crc.c"[..]));
        assert_eq!(f.new_path.as_deref(), Some(&b"crc.c"[..]));
        assert_eq!(f.hunks[0].old_count, 1);
    }

    #[test]
    fn new_and_deleted_files() {
        let files = parse(
            concat!(
                "diff --git a/new.c b/new.c\n",
                "new file mode 100755\n",
                "index 0000000..1111111\n",
                "--- /dev/null\n",
                "+++ b/new.c\n",
                "@@ -0,0 +1,2 @@\n",
                "+one\n",
                "+two\n",
                "diff --git a/old.c b/old.c\n",
                "deleted file mode 100644\n",
                "--- a/old.c\n",
                "+++ /dev/null\n",
                "@@ -1 +0,0 @@\n",
                "-gone\n",
                "diff --git a/empty b/empty\n",
                "new file mode 100644\n",
                "index 0000000..e69de29\n",
            )
            .as_bytes(),
        )
        .unwrap();
        assert_eq!(files.len(), 3);
        assert_eq!(files[0].kind, ChangeKind::Added);
        assert_eq!(files[0].old_path, None);
        assert_eq!(files[0].new_mode, Some(0o100755));
        assert_eq!(files[1].kind, ChangeKind::Deleted);
        assert_eq!(files[1].new_path, None);
        assert_eq!(files[2].kind, ChangeKind::Added);
        assert_eq!(files[2].new_path.as_deref(), Some(&b"empty"[..]));
        assert!(files[2].hunks.is_empty());
    }

    #[test]
    fn rename_and_mode_change() {
        let files = parse(
            concat!(
                "diff --git a/a b/c d\n",
                "similarity index 100%\n",
                "rename from a\n",
                "rename to c d\n",
                "diff --git a/run.sh b/run.sh\n",
                "old mode 100644\n",
                "new mode 100755\n",
            )
            .as_bytes(),
        )
        .unwrap();
        assert_eq!(files[0].kind, ChangeKind::Renamed);
        assert_eq!(files[0].new_path.as_deref(), Some(&b"c d"[..]));
        assert_eq!(files[1].kind, ChangeKind::Modified);
        assert_eq!(files[1].new_mode, Some(0o100755));
    }

    #[test]
    fn no_newline_markers() {
        let f = one(concat!(
            "--- a/f\n",
            "+++ b/f\n",
            "@@ -1 +1 @@\n",
            "-old\n",
            "\\ No newline at end of file\n",
            "+new\n",
            "\\ No newline at end of file\n",
        ));
        assert_eq!(
            f.hunks[0].lines,
            vec![
                HunkLine::Remove(b"old".to_vec()),
                HunkLine::Add(b"new".to_vec())
            ]
        );
    }

    #[test]
    fn quoted_paths_are_decoded() {
        let f = one(concat!(
            "diff --git \"a/caf\\303\\251.c\" \"b/caf\\303\\251.c\"\n",
            "--- \"a/caf\\303\\251.c\"\n",
            "+++ \"b/caf\\303\\251.c\"\n",
            "@@ -1 +1 @@\n",
            "-a\n",
            "+b\n",
        ));
        assert_eq!(f.new_path.as_deref(), Some("café.c".as_bytes()));
    }

    #[test]
    fn git_line_with_spaces_picks_matching_halves() {
        let (old, new) = split_git_paths(b"a/x b/y b/x b/y").unwrap();
        assert_eq!(old, b"a/x b/y");
        assert_eq!(new, b"b/x b/y");
    }

    #[test]
    fn empty_line_counts_as_context() {
        let f = one("--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n\n-b\n+c\n");
        assert_eq!(f.hunks[0].lines[1], HunkLine::Context(b"\n".to_vec()));
    }

    #[test]
    fn a_leading_diff_ends_where_the_prose_resumes_and_checks_its_headers() {
        let diff = "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n";
        let got = parse_leading(format!("{diff}\nThat is all.\n").as_bytes()).unwrap();
        assert_eq!((got.files.len(), got.len), (1, diff.len()));
        let err = parse_leading(b"--- f\n+++ f\n@@ -1 +1 @@\n-a\n+b\n").unwrap_err();
        assert!(err.to_string().contains("`a/PATH`"), "{err}");
        let err = parse_leading(format!("{diff}+c\n").as_bytes()).unwrap_err();
        assert!(
            err.to_string().contains("more lines than its header"),
            "{err}"
        );
        let err = parse_leading(format!("Here:\n{diff}").as_bytes()).unwrap_err();
        assert!(err.to_string().contains("expected a `diff --git`"), "{err}");
        match parse_leading(b"--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n").unwrap_err() {
            RepoError::TruncatedHunk {
                file,
                old,
                new,
                ended_at,
                ..
            } => assert_eq!((file.as_str(), old, new, ended_at), ("f", 1, 1, None)),
            other => panic!("{other}"),
        }
    }

    #[test]
    fn truncated_and_garbage_are_errors() {
        let err = parse(b"--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n").unwrap_err();
        assert!(err.to_string().contains("truncated"), "{err}");
        let err = parse(b"--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\nzzz\n").unwrap_err();
        assert!(err.to_string().contains("ends early"), "{err}");
        assert!(matches!(
            parse(b"hello\nworld\n"),
            Err(RepoError::EmptyPatch)
        ));
        assert!(parse(b"--- a/f\n+++ b/f\n@@ -x +1 @@\n").is_err());
    }

    #[test]
    fn hunk_heading_is_kept() {
        let f = one("--- a/f\n+++ b/f\n@@ -3 +3 @@ void USART1_IRQHandler(void)\n-a\n+b\n");
        assert_eq!(f.hunks[0].heading, "void USART1_IRQHandler(void)");
        assert_eq!(
            f.hunks[0].reversed().heading,
            "void USART1_IRQHandler(void)"
        );
        assert_eq!(
            one("--- a/f\n+++ b/f\n@@ -3 +3 @@\n-a\n+b\n").hunks[0].heading,
            ""
        );
    }

    #[test]
    fn plain_binary_files_are_kept() {
        let files = parse(
            concat!(
                "Binary files a/fw.bin and b/fw.bin differ\n",
                "Binary files /dev/null and b/logo.png differ\n",
                "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n",
            )
            .as_bytes(),
        )
        .unwrap();
        assert_eq!(files.len(), 3);
        assert!(files[0].binary);
        assert_eq!(files[0].kind, ChangeKind::Modified);
        assert_eq!(files[0].new_path.as_deref(), Some(&b"fw.bin"[..]));
        assert_eq!(files[1].kind, ChangeKind::Added);
        assert_eq!(files[1].old_path, None);
        assert!(!files[2].binary);
    }

    #[test]
    fn reversal_swaps_sides() {
        let f = one("--- a/f\n+++ b/f\n@@ -1,2 +1,3 @@\n a\n+b\n c\n");
        let r = f.reversed();
        assert_eq!(r.hunks[0].header, "@@ -1,3 +1,2 @@");
        assert_eq!(r.hunks[0].lines[1], HunkLine::Remove(b"b\n".to_vec()));
        let added = one("--- /dev/null\n+++ b/n\n@@ -0,0 +1 @@\n+x\n");
        assert_eq!(added.reversed().kind, ChangeKind::Deleted);
    }
}
