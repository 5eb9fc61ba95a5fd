//! Getting a unified diff out of an answer: a model's chat reply, an agent program's output, or a
//! tool call's argument. It finds the diff (a fenced ```diff / ```patch block, an unlabelled fence
//! that starts like a diff, or a bare diff in the text) and has the repository's patch parser
//! (`repo::patch`) check that it is whole: file headers with `a/` and `b/` paths relative to the
//! repository, at least one hunk, and every hunk holding exactly the lines its header counts, so a
//! truncated answer is refused with a reason.
//!
//! Pure text in, text out: it must not read the repository or try to apply anything (PATCH_REVIEW
//! and PATCH_APPLY do that).

use crate::repo::patch;
use crate::repo::RepoError;
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

/// Parses `text` as a unified diff from its first line, with the repository's patch parser (see
/// [`patch::parse_leading`] for what it checks). Text after the last complete hunk that is not
/// part of a diff (an explanation, a closing remark) ends the diff and is dropped.
pub fn parse_unified_diff(text: &str) -> Result<UnifiedDiff, DiffError> {
    let leading = patch::parse_leading(text.as_bytes()).map_err(diff_error)?;
    let path = |p: &Option<Vec<u8>>| p.as_ref().map(|p| String::from_utf8_lossy(p).into_owned());
    let files = leading
        .files
        .iter()
        .map(|f| FilePatch {
            old_path: path(&f.old_path),
            new_path: path(&f.new_path),
            hunks: f.hunks.len(),
        })
        .collect();
    // The parser stops on a line boundary, so the cut is at a character boundary too.
    let mut text = text.get(..leading.len).unwrap_or(text).to_string();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    Ok(UnifiedDiff { text, files })
}

/// The parser's refusal as this module reports it.
fn diff_error(e: RepoError) -> DiffError {
    let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    match e {
        RepoError::EmptyPatch => DiffError::NoDiff,
        RepoError::TruncatedHunk {
            file,
            header,
            expected_old,
            expected_new,
            old,
            new,
            ended_at: _,
        } => DiffError::Truncated {
            file,
            header,
            expected_old: count(expected_old),
            expected_new: count(expected_new),
            old: count(old),
            new: count(new),
        },
        RepoError::PatchParse { line, reason } => DiffError::Malformed { line, reason },
        other => DiffError::Malformed {
            line: 0,
            reason: other.to_string(),
        },
    }
}

fn strip_eol(line: &str) -> &str {
    let line = line.strip_suffix('\n').unwrap_or(line);
    line.strip_suffix('\r').unwrap_or(line)
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
