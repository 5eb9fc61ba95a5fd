//! The fallback hunk applier, for patches whose context drifted: like GNU patch it looks for each
//! hunk at the stated line, then at the nearest offsets, then with fuzz (up to N leading and
//! trailing context lines ignored). Pure: bytes in, bytes out. It never decides whether fuzz is
//! acceptable; the caller chooses the limit and reports what was used. A hunk whose lines match
//! only when line endings are ignored (an LF patch, as models and agents write them, on a CRLF
//! file from a Windows checkout or a Keil/IAR project) applies with the file's endings: its
//! context keeps the file's bytes and each added line takes the ending of the lines around it.

use super::patch::{Hunk, HunkLine};

/// Where a hunk landed: lines away from where its header said, and context lines ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Placement {
    pub offset: i64,
    pub fuzz: usize,
    /// The hunk matched only with line endings ignored; its added lines were given the file's.
    pub line_endings: bool,
}

/// Applies `hunks` in order to `content`. On failure returns the index of the first hunk that
/// found no place; nothing is partially applied because the result is only returned whole.
pub(crate) fn apply(
    content: &[u8],
    hunks: &[Hunk],
    max_fuzz: usize,
) -> Result<(Vec<u8>, Vec<Placement>), usize> {
    let lines: Vec<&[u8]> = content.split_inclusive(|&b| b == b'\n').collect();
    let mut out = Vec::with_capacity(content.len());
    let mut cursor = 0usize;
    let mut last_offset = 0i64;
    let mut placements = Vec::with_capacity(hunks.len());
    for (index, hunk) in hunks.iter().enumerate() {
        let old = side(hunk, true);
        let new = side(hunk, false);
        let found = [Eol::Exact, Eol::Ignored]
            .into_iter()
            .find_map(|eol| locate(&lines, cursor, hunk, &old, last_offset, max_fuzz, eol))
            .ok_or(index)?;
        for line in &lines[cursor..found.pos] {
            out.extend_from_slice(line);
        }
        let taken = old.len() - found.lead - found.trail;
        let region = &lines[found.pos..found.pos + taken];
        let added = &new[found.lead..new.len() - found.trail];
        // A hunk with no context matches anywhere byte for byte: its added lines still take
        // the file's endings, as they would beside a context line.
        let adapted = if found.eol == Eol::Ignored || old.is_empty() {
            let kept = &hunk.lines[found.lead..hunk.lines.len() - found.trail];
            let before = found.pos.checked_sub(1).map(|i| lines[i]);
            let after = lines.get(found.pos + taken).copied();
            let start = out.len();
            write_with_file_endings(&mut out, kept, region, [before, after], &lines);
            found.eol == Eol::Ignored || out[start..] != added.concat()[..]
        } else {
            for line in added {
                out.extend_from_slice(line);
            }
            false
        };
        cursor = found.pos + taken;
        let stated = stated_index(hunk) as i64 + found.lead as i64;
        let offset = found.pos as i64 - stated;
        last_offset = offset;
        placements.push(Placement {
            offset,
            fuzz: found.fuzz,
            line_endings: adapted,
        });
    }
    for line in &lines[cursor..] {
        out.extend_from_slice(line);
    }
    Ok((out, placements))
}

struct Found {
    pos: usize,
    lead: usize,
    trail: usize,
    fuzz: usize,
    eol: Eol,
}

/// How lines are compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Eol {
    /// Byte for byte.
    Exact,
    /// `\n` and `\r\n` taken as the same ending.
    Ignored,
}

impl Eol {
    fn same(self, a: &[u8], b: &[u8]) -> bool {
        match self {
            Eol::Exact => a == b,
            // `\n` and `\r\n` are one; a last line without any ending stays distinct.
            Eol::Ignored => body(a) == body(b) && ending(a).is_empty() == ending(b).is_empty(),
        }
    }
}

/// A line without its ending.
fn body(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// A line's ending: `\r\n`, `\n`, or none (the last line of a file without a final newline).
fn ending(line: &[u8]) -> &'static [u8] {
    if line.ends_with(b"\r\n") {
        b"\r\n"
    } else if line.ends_with(b"\n") {
        b"\n"
    } else {
        b""
    }
}

/// Writes a hunk's kept lines over the file's `region` it matched with line endings ignored:
/// context lines are the file's own bytes, removed lines go, and an added line gets the ending
/// of the nearest file line before it (in the region, else the line just above it), else the
/// nearest after, else the file's first: a mixed file follows the surrounding lines. An added
/// line the patch leaves without an ending (the file's last) stays without one.
fn write_with_file_endings(
    out: &mut Vec<u8>,
    kept: &[HunkLine],
    region: &[&[u8]],
    [before, after]: [Option<&[u8]>; 2],
    file: &[&[u8]],
) {
    let fallback: &[u8] = file
        .iter()
        .map(|l| ending(l))
        .find(|e| !e.is_empty())
        .unwrap_or(b"\n");
    let mut at = 0usize;
    let mut previous: Option<&[u8]> = before.map(ending).filter(|e| !e.is_empty());
    for line in kept {
        match line {
            HunkLine::Context(_) | HunkLine::Remove(_) => {
                let Some(ours) = region.get(at) else { break };
                if matches!(line, HunkLine::Context(_)) {
                    out.extend_from_slice(ours);
                }
                if !ending(ours).is_empty() {
                    previous = Some(ending(ours));
                }
                at += 1;
            }
            HunkLine::Add(added) => {
                out.extend_from_slice(body(added));
                if !ending(added).is_empty() {
                    let next = region[at.min(region.len())..]
                        .iter()
                        .chain(after.as_ref())
                        .map(|l| ending(l))
                        .find(|e| !e.is_empty());
                    out.extend_from_slice(previous.or(next).unwrap_or(fallback));
                }
            }
        }
    }
}

/// The lines a hunk expects (`old`) or leaves (`new`).
fn side(hunk: &Hunk, old: bool) -> Vec<&[u8]> {
    hunk.lines
        .iter()
        .filter_map(|l| match (l, old) {
            (HunkLine::Context(b), _) => Some(b.as_slice()),
            (HunkLine::Remove(b), true) | (HunkLine::Add(b), false) => Some(b.as_slice()),
            _ => None,
        })
        .collect()
}

/// The 0-based line where the header says the hunk's old lines start (an insertion with no old
/// lines goes after line `old_start`).
fn stated_index(hunk: &Hunk) -> usize {
    if hunk.old_count == 0 {
        hunk.old_start
    } else {
        hunk.old_start.saturating_sub(1)
    }
}

fn locate(
    lines: &[&[u8]],
    cursor: usize,
    hunk: &Hunk,
    old: &[&[u8]],
    last_offset: i64,
    max_fuzz: usize,
    eol: Eol,
) -> Option<Found> {
    let leading = hunk
        .lines
        .iter()
        .take_while(|l| matches!(l, HunkLine::Context(_)))
        .count();
    let trailing = hunk
        .lines
        .iter()
        .rev()
        .take_while(|l| matches!(l, HunkLine::Context(_)))
        .count();
    for fuzz in 0..=max_fuzz {
        let lead = fuzz.min(leading);
        let trail = fuzz.min(trailing);
        if fuzz > 0 && lead == (fuzz - 1).min(leading) && trail == (fuzz - 1).min(trailing) {
            // No more context to ignore than at the previous level.
            break;
        }
        if lead + trail >= old.len() && !old.is_empty() {
            // Fuzz may ignore context, never everything: the hunk would match anywhere.
            break;
        }
        let pattern = &old[lead..old.len() - trail];
        let expected = stated_index(hunk) as i64 + lead as i64 + last_offset;
        if let Some(pos) = nearest_match(lines, cursor, pattern, expected, eol) {
            return Some(Found {
                pos,
                lead,
                trail,
                fuzz,
                eol,
            });
        }
    }
    None
}

/// Looks at `expected`, then one line after, one before, two after, ... within `[cursor, end]`.
fn nearest_match(
    lines: &[&[u8]],
    cursor: usize,
    pattern: &[&[u8]],
    expected: i64,
    eol: Eol,
) -> Option<usize> {
    let last = lines.len().checked_sub(pattern.len())?;
    if cursor > last {
        return None;
    }
    let (lo, hi) = (cursor as i64, last as i64);
    if pattern.is_empty() {
        // Pure insertion without context: only the stated place is meaningful.
        return (lo..=hi).contains(&expected).then_some(expected as usize);
    }
    let matches = |p: i64| {
        lines[p as usize..p as usize + pattern.len()]
            .iter()
            .zip(pattern)
            .all(|(a, b)| eol.same(a, b))
    };
    let mut distance = 0i64;
    loop {
        let after = expected + distance;
        let before = expected - distance;
        if after > hi && before < lo {
            return None;
        }
        if (lo..=hi).contains(&after) && matches(after) {
            return Some(after as usize);
        }
        if distance > 0 && (lo..=hi).contains(&before) && matches(before) {
            return Some(before as usize);
        }
        distance += 1;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::repo::patch::parse;

    fn hunks(diff: &str) -> Vec<Hunk> {
        parse(diff.as_bytes()).unwrap().remove(0).hunks
    }

    const BASE: &str = "one\ntwo\nthree\nfour\nfive\nsix\nseven\n";

    fn patch_three() -> Vec<Hunk> {
        hunks("--- a/f\n+++ b/f\n@@ -2,5 +2,5 @@\n two\n three\n-four\n+FOUR\n five\n six\n")
    }

    #[test]
    fn exact_position() {
        let (out, placed) = apply(BASE.as_bytes(), &patch_three(), 0).unwrap();
        assert_eq!(out, b"one\ntwo\nthree\nFOUR\nfive\nsix\nseven\n");
        assert_eq!(
            placed,
            vec![Placement {
                offset: 0,
                fuzz: 0,
                line_endings: false
            }]
        );
    }

    #[test]
    fn offset_when_lines_were_inserted_above() {
        let content = format!("zero\nzero\nzero\n{BASE}");
        let (out, placed) = apply(content.as_bytes(), &patch_three(), 0).unwrap();
        assert!(String::from_utf8(out)
            .unwrap()
            .contains("three\nFOUR\nfive"));
        assert_eq!(
            placed,
            vec![Placement {
                offset: 3,
                fuzz: 0,
                line_endings: false
            }]
        );
    }

    #[test]
    fn nearest_of_two_candidates_wins() {
        let h = hunks("--- a/f\n+++ b/f\n@@ -5,1 +5,1 @@\n-x\n+y\n");
        // Candidates at lines 2 and 7: line 7 (offset +2) is nearer than line 2 (offset -3).
        let (out, placed) = apply(b"a\nx\nb\nc\nd\ne\nx\n", &h, 0).unwrap();
        assert_eq!(out, b"a\nx\nb\nc\nd\ne\ny\n");
        assert_eq!(placed[0].offset, 2);
    }

    #[test]
    fn fuzz_ignores_drifted_outer_context() {
        let content = "one\nTWO\nthree\nfour\nfive\nSIX\nseven\n";
        assert_eq!(apply(content.as_bytes(), &patch_three(), 0), Err(0));
        let (out, placed) = apply(content.as_bytes(), &patch_three(), 2).unwrap();
        assert_eq!(out, b"one\nTWO\nthree\nFOUR\nfive\nSIX\nseven\n");
        assert_eq!(
            placed,
            vec![Placement {
                offset: 0,
                fuzz: 1,
                line_endings: false
            }]
        );
    }

    #[test]
    fn removed_lines_must_match_exactly() {
        let content = "one\ntwo\nthree\nFOUR?\nfive\nsix\nseven\n";
        assert_eq!(apply(content.as_bytes(), &patch_three(), 2), Err(0));
    }

    #[test]
    fn second_hunk_failure_is_reported_by_index() {
        let h = hunks(concat!(
            "--- a/f\n+++ b/f\n",
            "@@ -1,2 +1,2 @@\n-one\n+ONE\n two\n",
            "@@ -6,2 +6,2 @@\n six\n-nope\n+NOPE\n",
        ));
        assert_eq!(apply(BASE.as_bytes(), &h, 2), Err(1));
    }

    #[test]
    fn later_hunks_keep_the_earlier_offset() {
        let h = hunks(concat!(
            "--- a/f\n+++ b/f\n",
            "@@ -1,2 +1,2 @@\n-one\n+ONE\n two\n",
            "@@ -6,2 +6,2 @@\n six\n-seven\n+SEVEN\n",
        ));
        let content = format!("pre\n{BASE}");
        let (out, placed) = apply(content.as_bytes(), &h, 0).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "pre\nONE\ntwo\nthree\nfour\nfive\nsix\nSEVEN\n"
        );
        assert_eq!(placed[0].offset, 1);
        assert_eq!(placed[1].offset, 1);
    }

    #[test]
    fn new_file_and_missing_final_newline() {
        let h = hunks(
            "--- /dev/null\n+++ b/n\n@@ -0,0 +1,2 @@\n+a\n+b\n\\ No newline at end of file\n",
        );
        let (out, _) = apply(b"", &h, 0).unwrap();
        assert_eq!(out, b"a\nb");
        let h = hunks("--- a/n\n+++ b/n\n@@ -2 +2 @@\n-b\n\\ No newline at end of file\n+b\n");
        let (out, _) = apply(b"a\nb", &h, 0).unwrap();
        assert_eq!(out, b"a\nb\n");
        // With a newline present the "no newline" line does not match.
        assert_eq!(apply(b"a\nb\n", &h, 2), Err(0));
    }

    const CRLF: &str = "one\r\ntwo\r\nthree\r\nfour\r\nfive\r\nsix\r\nseven\r\n";

    #[test]
    fn an_lf_hunk_applies_to_a_crlf_file_with_crlf_endings() {
        let (out, placed) = apply(CRLF.as_bytes(), &patch_three(), 0).unwrap();
        assert_eq!(
            out,
            b"one\r\ntwo\r\nthree\r\nFOUR\r\nfive\r\nsix\r\nseven\r\n"
        );
        assert_eq!(
            placed,
            [Placement {
                offset: 0,
                fuzz: 0,
                line_endings: true
            }]
        );
        // An exact match is not reported as adapted.
        let (_, placed) = apply(BASE.as_bytes(), &patch_three(), 0).unwrap();
        assert!(!placed[0].line_endings);
    }

    #[test]
    fn a_crlf_hunk_applies_to_an_lf_file_with_lf_endings() {
        let h = hunks(
            "--- a/f\n+++ b/f\n@@ -2,3 +2,4 @@\n two\r\n-three\r\n+THREE\r\n+3b\r\n four\r\n",
        );
        let (out, _) = apply(BASE.as_bytes(), &h, 0).unwrap();
        assert_eq!(out, b"one\ntwo\nTHREE\n3b\nfour\nfive\nsix\nseven\n");
    }

    #[test]
    fn added_lines_in_a_mixed_file_follow_the_lines_around_them() {
        let mixed = "one\ntwo\nthree\r\nfour\r\nfive\n";
        // After a CRLF line: CRLF.
        let h = hunks("--- a/f\n+++ b/f\n@@ -3,2 +3,3 @@\n three\n+new\n four\n");
        let (out, _) = apply(mixed.as_bytes(), &h, 0).unwrap();
        assert_eq!(out, b"one\ntwo\nthree\r\nnew\r\nfour\r\nfive\n");
        // At the top of a hunk, after an LF line above it: LF.
        let h = hunks("--- a/f\n+++ b/f\n@@ -3,2 +3,3 @@\n+new\n three\n four\n");
        let (out, _) = apply(mixed.as_bytes(), &h, 0).unwrap();
        assert_eq!(out, b"one\ntwo\nnew\nthree\r\nfour\r\nfive\n");
    }

    #[test]
    fn lines_added_with_no_context_to_a_crlf_file_take_its_endings() {
        // Inserted after line 2, at the top, and at the end: no context line to copy from.
        for (patch, want) in [
            (
                "--- a/f\n+++ b/f\n@@ -2,0 +3 @@\n+new\n",
                "one\r\ntwo\r\nnew\r\nthree\r\n",
            ),
            (
                "--- a/f\n+++ b/f\n@@ -0,0 +1 @@\n+new\n",
                "new\r\none\r\ntwo\r\nthree\r\n",
            ),
            (
                "--- a/f\n+++ b/f\n@@ -3,0 +4 @@\n+new\n",
                "one\r\ntwo\r\nthree\r\nnew\r\n",
            ),
        ] {
            let (out, placed) = apply(b"one\r\ntwo\r\nthree\r\n", &hunks(patch), 0).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), want, "{patch}");
            assert!(placed[0].line_endings, "{patch}");
        }
        // In an LF file nothing is adapted.
        let h = hunks("--- a/f\n+++ b/f\n@@ -2,0 +3 @@\n+new\n");
        let (out, placed) = apply(b"one\ntwo\nthree\n", &h, 0).unwrap();
        assert_eq!(out, b"one\ntwo\nnew\nthree\n");
        assert!(!placed[0].line_endings);
    }

    #[test]
    fn a_crlf_file_that_really_differs_still_fails() {
        let h = hunks("--- a/f\n+++ b/f\n@@ -2,3 +2,3 @@\n two\n-THREE\n+3\n four\n");
        assert_eq!(apply(CRLF.as_bytes(), &h, 2), Err(0));
    }

    #[test]
    fn reversed_patch_detects_already_applied() {
        let patched = "one\ntwo\nthree\nFOUR\nfive\nsix\nseven\n";
        assert_eq!(apply(patched.as_bytes(), &patch_three(), 0), Err(0));
        let reversed: Vec<Hunk> = patch_three().iter().map(Hunk::reversed).collect();
        let (out, _) = apply(patched.as_bytes(), &reversed, 0).unwrap();
        assert_eq!(out, BASE.as_bytes());
    }
}
