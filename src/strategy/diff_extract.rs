//! Getting a unified diff out of an answer: a model's chat reply, an agent program's output, or a
//! tool call's argument. It finds the diff (a fenced ```diff / ```patch block, an unlabelled fence
//! that starts like a diff, or a bare diff in the text) and checks that it is whole: file headers
//! with `a/` and `b/` paths relative to the repository, at least one hunk, and every hunk holding
//! exactly the lines its header counts, so a truncated answer is refused with a reason.
//!
//! Pure text in, text out: it must not read the repository or try to apply anything (PATCH_REVIEW
//! and PATCH_APPLY do that).

use std::fmt;

/// Why no usable diff came out of a text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DiffError {
    #[error(
        "no diff found (no ```diff block, and no line starting with `diff --git` or `--- a/`)"
    )]
    NoDiff,
    /// The text starts like a diff but is not a well-formed one.
    #[error("line {line} of the diff: {reason}")]
    Malformed { line: usize, reason: String },
    /// A hunk ends before the lines its header counts: the answer was cut off.
    #[error(
        "{file}: hunk `{header}` has {old} of {expected_old} old and {new} of {expected_new} new \
         lines: the diff is truncated"
    )]
    Truncated {
        file: String,
        header: String,
        expected_old: u32,
        expected_new: u32,
        old: u32,
        new: u32,
    },
}

/// A diff that parsed: its text (newline-terminated, nothing after its last hunk) and the files
/// it touches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnifiedDiff {
    pub text: String,
    pub files: Vec<FilePatch>,
}

/// One file's part of a diff. A path is `None` for `/dev/null` (a file added or deleted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePatch {
    pub old_path: Option<String>,
    pub new_path: Option<String>,
    pub hunks: usize,
}

impl fmt::Display for FilePatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self
            .new_path
            .as_deref()
            .or(self.old_path.as_deref())
            .unwrap_or("/dev/null");
        f.write_str(path)
    }
}

/// Finds the diff in `text` and validates it. Fenced blocks come first, in order: the first one
/// that is a diff (labelled `diff` or `patch`, or unlabelled and starting like a diff) and parses
/// wins; when none parses, the first one's error is returned. Without such a block, a bare diff
/// starting at the first `diff --git` or `--- a/` line is taken.
pub fn extract_diff(text: &str) -> Result<UnifiedDiff, DiffError> {
    let mut first_error = None;
    for fence in fences(text) {
        if !fence.looks_like_diff() {
            continue;
        }
        match parse_unified_diff(fence.body) {
            Ok(diff) => return Ok(diff),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    let start = bare_diff_start(text).ok_or(DiffError::NoDiff)?;
    parse_unified_diff(&text[start..])
}

/// Parses `text` as a unified diff from its first line. Text after the last complete hunk that
/// is not part of a diff (an explanation, a closing remark) ends the diff and is dropped.
pub fn parse_unified_diff(text: &str) -> Result<UnifiedDiff, DiffError> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut files: Vec<FilePatch> = Vec::new();
    let mut end = 0usize;
    let mut offset = 0usize;
    let mut i = 0usize;
    // After a complete hunk, lines that look like hunk lines mean the header undercounted.
    let mut after_hunk = false;

    while i < lines.len() {
        let line = strip_eol(lines[i]);
        let number = i + 1;
        if line.starts_with("--- ") && lines.get(i + 1).is_some_and(|n| n.starts_with("+++ ")) {
            let old_path = header_path(&line[4..], "a/", number)?;
            let new_path = header_path(&strip_eol(lines[i + 1])[4..], "b/", number + 1)?;
            if old_path.is_none() && new_path.is_none() {
                return Err(malformed(
                    number,
                    "both sides of the file header are /dev/null",
                ));
            }
            close_file(files.last(), number)?;
            files.push(FilePatch {
                old_path,
                new_path,
                hunks: 0,
            });
            offset += lines[i].len() + lines[i + 1].len();
            i += 2;
            after_hunk = false;
            continue;
        }
        if line.starts_with("@@") {
            let Some(file) = files.last_mut() else {
                return Err(malformed(
                    number,
                    "a hunk before any `---`/`+++` file header",
                ));
            };
            let (old_count, new_count) = hunk_counts(line)
                .ok_or_else(|| malformed(number, format!("`{line}` is not a hunk header")))?;
            offset += lines[i].len();
            i += 1;
            let (mut old, mut new) = (0u32, 0u32);
            while old < old_count || new < new_count {
                let Some(raw) = lines.get(i) else { break };
                let body = strip_eol(raw);
                match body.as_bytes().first() {
                    // An empty line is a blank context line whose leading space was lost.
                    None | Some(b' ') => {
                        old += 1;
                        new += 1;
                    }
                    Some(b'-') => old += 1,
                    Some(b'+') => new += 1,
                    Some(b'\\') => {}
                    Some(_) => break,
                }
                offset += raw.len();
                i += 1;
            }
            if old != old_count || new != new_count {
                return Err(DiffError::Truncated {
                    file: file.to_string(),
                    header: line.to_string(),
                    expected_old: old_count,
                    expected_new: new_count,
                    old,
                    new,
                });
            }
            // "\ No newline at end of file" may follow the last counted line.
            while lines.get(i).is_some_and(|l| l.starts_with('\\')) {
                offset += lines[i].len();
                i += 1;
            }
            file.hunks += 1;
            end = offset;
            after_hunk = true;
            continue;
        }
        if is_git_header(line) {
            offset += lines[i].len();
            i += 1;
            after_hunk = false;
            continue;
        }
        if line.trim().is_empty() && starts_file(&lines[i..]) {
            // Blank lines between two files' sections: skip them, the next file follows.
            offset += lines[i].len();
            i += 1;
            continue;
        }
        if after_hunk && matches!(line.as_bytes().first(), Some(b'+' | b'-' | b' ')) {
            return Err(malformed(
                number,
                "the hunk before this line has more lines than its header counts",
            ));
        }
        if files.is_empty() && end == 0 {
            return Err(malformed(
                number,
                format!("expected a `diff --git` or `---` file header, found `{line}`"),
            ));
        }
        break;
    }

    close_file(files.last(), lines.len() + 1)?;
    if files.is_empty() {
        return Err(DiffError::NoDiff);
    }
    let mut text = text[..end].to_string();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    Ok(UnifiedDiff { text, files })
}

fn malformed(line: usize, reason: impl Into<String>) -> DiffError {
    DiffError::Malformed {
        line,
        reason: reason.into(),
    }
}

fn strip_eol(line: &str) -> &str {
    let line = line.strip_suffix('\n').unwrap_or(line);
    line.strip_suffix('\r').unwrap_or(line)
}

/// A file section must hold at least one hunk: headers alone change nothing `git apply` keeps.
fn close_file(file: Option<&FilePatch>, line: usize) -> Result<(), DiffError> {
    match file {
        Some(f) if f.hunks == 0 => Err(malformed(line, format!("{f}: a file header with no hunk"))),
        Some(_) | None => Ok(()),
    }
}

/// Whether, past blank lines, `lines` go on with a new file's section.
fn starts_file(lines: &[&str]) -> bool {
    let rest: Vec<&str> = lines
        .iter()
        .copied()
        .skip_while(|l| l.trim().is_empty())
        .collect();
    match rest.first() {
        Some(l) if l.starts_with("diff --git ") => true,
        Some(l) => l.starts_with("--- ") && rest.get(1).is_some_and(|n| n.starts_with("+++ ")),
        None => false,
    }
}

/// Git's extended header lines, which may sit between files.
fn is_git_header(line: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "diff --git ",
        "index ",
        "new file mode ",
        "deleted file mode ",
        "old mode ",
        "new mode ",
        "similarity index ",
        "dissimilarity index ",
        "rename from ",
        "rename to ",
        "copy from ",
        "copy to ",
    ];
    PREFIXES.iter().any(|p| line.starts_with(p))
}

/// The path of a `---` or `+++` line: `/dev/null`, or `prefix` followed by a relative path that
/// stays inside the repository. A tab and what follows it (a timestamp) is dropped.
fn header_path(rest: &str, prefix: &str, line: usize) -> Result<Option<String>, DiffError> {
    let raw = rest.split('\t').next().unwrap_or(rest).trim_end();
    let raw = raw
        .strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        .unwrap_or(raw);
    if raw == "/dev/null" {
        return Ok(None);
    }
    let Some(path) = raw.strip_prefix(prefix) else {
        return Err(malformed(
            line,
            format!("`{raw}` does not start with `{prefix}`: paths must be `a/PATH` and `b/PATH`"),
        ));
    };
    let escapes = path.is_empty()
        || path.starts_with('/')
        || path.split('/').any(|c| c == ".." || c.is_empty());
    if escapes {
        return Err(malformed(
            line,
            format!("`{raw}` is not a path relative to the repository root"),
        ));
    }
    Ok(Some(path.to_string()))
}

/// `(old_count, new_count)` of `@@ -l[,n] +l[,n] @@ ...`; an omitted count is 1.
fn hunk_counts(line: &str) -> Option<(u32, u32)> {
    let rest = line.strip_prefix("@@ -")?;
    let (ranges, _) = rest.split_once(" @@")?;
    let (old, new) = ranges.split_once(" +")?;
    Some((range_count(old)?, range_count(new)?))
}

fn range_count(range: &str) -> Option<u32> {
    match range.split_once(',') {
        Some((start, count)) => {
            start.parse::<u32>().ok()?;
            count.parse().ok()
        }
        None => range.parse::<u32>().ok().map(|_| 1),
    }
}

/// A fenced code block: its info string (`diff`, `patch`, `c`, or empty) and its body.
struct Fence<'a> {
    info: &'a str,
    body: &'a str,
}

impl Fence<'_> {
    fn looks_like_diff(&self) -> bool {
        let lang = self.info.split_whitespace().next().unwrap_or("");
        if lang.eq_ignore_ascii_case("diff") || lang.eq_ignore_ascii_case("patch") {
            return true;
        }
        lang.is_empty() && bare_diff_start(self.body) == Some(0)
    }
}

/// The fenced blocks of a Markdown text, in order. A block that is never closed (an answer cut
/// off mid-block) runs to the end of the text.
fn fences(text: &str) -> Vec<Fence<'_>> {
    let mut out = Vec::new();
    let mut open: Option<(char, usize, &str, usize)> = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let content = strip_eol(line);
        let indent = content.len() - content.trim_start_matches(' ').len();
        if indent > 3 {
            continue;
        }
        let trimmed = &content[indent..];
        let Some(ch) = trimmed.chars().next().filter(|c| *c == '`' || *c == '~') else {
            continue;
        };
        let run = trimmed.len() - trimmed.trim_start_matches(ch).len();
        if run < 3 {
            continue;
        }
        match open {
            None => open = Some((ch, run, trimmed[run..].trim(), offset)),
            Some((open_ch, open_run, info, body_start)) => {
                if ch == open_ch && run >= open_run && trimmed[run..].trim().is_empty() {
                    out.push(Fence {
                        info,
                        body: &text[body_start..start],
                    });
                    open = None;
                }
            }
        }
    }
    if let Some((_, _, info, body_start)) = open {
        out.push(Fence {
            info,
            body: &text[body_start..],
        });
    }
    out
}

/// The byte offset of the first line that starts a diff: `diff --git `, or a `--- a/` (or
/// `--- /dev/null`) line followed by a `+++ ` line.
fn bare_diff_start(text: &str) -> Option<usize> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut offset = 0;
    for (i, line) in lines.iter().enumerate() {
        let header = line.starts_with("--- a/") || line.starts_with("--- /dev/null");
        let starts = line.starts_with("diff --git ")
            || (header && lines.get(i + 1).is_some_and(|n| n.starts_with("+++ ")));
        if starts {
            return Some(offset);
        }
        offset += line.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const CRC_FIX: &str = include_str!("../../fixtures/fwtests/patches/04-fixes-crc16.diff");

    #[test]
    fn the_fixture_fix_parses_whole() {
        let d = parse_unified_diff(CRC_FIX).unwrap();
        assert_eq!(d.text, CRC_FIX);
        assert_eq!(
            d.files,
            vec![FilePatch {
                old_path: Some("src/crc.c".into()),
                new_path: Some("src/crc.c".into()),
                hunks: 1
            }]
        );
    }

    #[test]
    fn a_diff_fence_is_found_among_prose() {
        let answer = format!("The seed is wrong.\n\n```diff\n{CRC_FIX}```\n\nThis sets it.\n");
        assert_eq!(extract_diff(&answer).unwrap().text, CRC_FIX);
        let answer = format!("```patch\n{CRC_FIX}```");
        assert_eq!(extract_diff(&answer).unwrap().text, CRC_FIX);
    }

    #[test]
    fn an_unlabelled_fence_counts_only_when_it_starts_like_a_diff() {
        let answer = format!("```\nmake test\n```\n```\n{CRC_FIX}```\n");
        assert_eq!(extract_diff(&answer).unwrap().text, CRC_FIX);
        let answer = "```\nuint16_t crc = 0xFFFFu;\n```\n";
        assert_eq!(extract_diff(answer), Err(DiffError::NoDiff));
    }

    #[test]
    fn the_first_fence_that_parses_wins() {
        let broken = "--- a/src/crc.c\n+++ b/src/crc.c\n@@ -1,3 +1,3 @@\n-x\n";
        let answer = format!("```diff\n{broken}```\nor better:\n```diff\n{CRC_FIX}```\n");
        assert_eq!(extract_diff(&answer).unwrap().text, CRC_FIX);
    }

    #[test]
    fn when_no_fence_parses_the_first_error_is_kept() {
        let answer = "```diff\n--- a/x.c\n+++ b/x.c\n@@ -1,3 +1,3 @@\n-x\n```\n";
        assert!(matches!(
            extract_diff(answer),
            Err(DiffError::Truncated { .. })
        ));
    }

    #[test]
    fn a_bare_diff_is_cut_where_the_prose_resumes() {
        let answer = format!("Here it is:\n{CRC_FIX}\nThat should fix test_crc16.\n");
        assert_eq!(extract_diff(&answer).unwrap().text, CRC_FIX);
    }

    #[test]
    fn a_truncated_hunk_is_refused_with_its_counts() {
        let cut: String = CRC_FIX.lines().take(9).map(|l| format!("{l}\n")).collect();
        let err = extract_diff(&format!("```diff\n{cut}")).unwrap_err();
        assert_eq!(
            err,
            DiffError::Truncated {
                file: "src/crc.c".into(),
                header: "@@ -39,7 +39,7 @@ uint8_t crc8(const uint8_t *data, size_t len)".into(),
                expected_old: 7,
                expected_new: 7,
                old: 4,
                new: 3,
            }
        );
        assert!(err.to_string().contains("truncated"));
    }

    #[test]
    fn a_hunk_longer_than_its_header_is_refused() {
        let diff = "--- a/x.c\n+++ b/x.c\n@@ -1 +1 @@\n-a\n+b\n+c\n";
        let err = parse_unified_diff(diff).unwrap_err();
        assert!(
            err.to_string().contains("more lines than its header"),
            "{err}"
        );
    }

    #[test]
    fn headers_without_hunks_or_without_prefixes_are_refused() {
        let err = parse_unified_diff("--- a/x.c\n+++ b/x.c\n").unwrap_err();
        assert!(err.to_string().contains("no hunk"), "{err}");
        let err = parse_unified_diff("--- x.c\n+++ x.c\n@@ -1 +1 @@\n-a\n+b\n").unwrap_err();
        assert!(err.to_string().contains("`a/PATH`"), "{err}");
        let err =
            parse_unified_diff("--- a/../x.c\n+++ b/../x.c\n@@ -1 +1 @@\n-a\n+b\n").unwrap_err();
        assert!(err.to_string().contains("not a path relative"), "{err}");
    }

    #[test]
    fn git_headers_new_files_and_several_files_parse() {
        let diff = "diff --git a/src/new.c b/src/new.c\nnew file mode 100644\nindex 0000000..1111111\n\
                    --- /dev/null\n+++ b/src/new.c\n@@ -0,0 +1,2 @@\n+int x;\n+int y;\n\
                    diff --git a/src/old.c b/src/old.c\n--- a/src/old.c\t2024-01-01\n+++ b/src/old.c\n\
                    @@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n";
        let d = parse_unified_diff(diff).unwrap();
        assert_eq!(d.text, diff);
        assert_eq!(d.files.len(), 2);
        assert_eq!(d.files[0].old_path, None);
        assert_eq!(d.files[0].new_path.as_deref(), Some("src/new.c"));
        assert_eq!(d.files[1].to_string(), "src/old.c");
    }

    #[test]
    fn blank_lines_between_files_do_not_end_the_diff() {
        let diff = "--- a/x.c\n+++ b/x.c\n@@ -1 +1 @@\n-a\n+b\n\n--- a/y.c\n+++ b/y.c\n@@ -1 +1 @@\n-a\n+b\n";
        assert_eq!(parse_unified_diff(diff).unwrap().files.len(), 2);
    }

    #[test]
    fn a_blank_context_line_that_lost_its_space_still_counts() {
        let diff = "--- a/x.c\n+++ b/x.c\n@@ -1,3 +1,3 @@\n a\n\n-b\n+c\n";
        assert_eq!(parse_unified_diff(diff).unwrap().files[0].hunks, 1);
    }

    #[test]
    fn prose_is_no_diff() {
        assert_eq!(
            extract_diff("I could not find the bug."),
            Err(DiffError::NoDiff)
        );
        assert_eq!(extract_diff(""), Err(DiffError::NoDiff));
    }

    #[test]
    fn an_unclosed_fence_runs_to_the_end() {
        let answer = format!("```diff\n{CRC_FIX}");
        assert_eq!(extract_diff(&answer).unwrap().text, CRC_FIX);
    }
}
