//! The fallback hunk applier, for patches whose context drifted: like GNU patch it looks for each
//! hunk at the stated line, then at the nearest offsets, then with fuzz (up to N leading and
//! trailing context lines ignored). Pure: bytes in, bytes out. It never decides whether fuzz is
//! acceptable; the caller chooses the limit and reports what was used.

use super::patch::{Hunk, HunkLine};

/// Where a hunk landed: lines away from where its header said, and context lines ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Placement {
    pub offset: i64,
    pub fuzz: usize,
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
        let found = locate(&lines, cursor, hunk, &old, last_offset, max_fuzz).ok_or(index)?;
        for line in &lines[cursor..found.pos] {
            out.extend_from_slice(line);
        }
        for line in &new[found.lead..new.len() - found.trail] {
            out.extend_from_slice(line);
        }
        cursor = found.pos + (old.len() - found.lead - found.trail);
        let stated = stated_index(hunk) as i64 + found.lead as i64;
        let offset = found.pos as i64 - stated;
        last_offset = offset;
        placements.push(Placement {
            offset,
            fuzz: found.fuzz,
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
        if let Some(pos) = nearest_match(lines, cursor, pattern, expected) {
            return Some(Found {
                pos,
                lead,
                trail,
                fuzz,
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
    let matches = |p: i64| lines[p as usize..p as usize + pattern.len()] == *pattern;
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
        assert_eq!(placed, vec![Placement { offset: 0, fuzz: 0 }]);
    }

    #[test]
    fn offset_when_lines_were_inserted_above() {
        let content = format!("zero\nzero\nzero\n{BASE}");
        let (out, placed) = apply(content.as_bytes(), &patch_three(), 0).unwrap();
        assert!(String::from_utf8(out)
            .unwrap()
            .contains("three\nFOUR\nfive"));
        assert_eq!(placed, vec![Placement { offset: 3, fuzz: 0 }]);
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
        assert_eq!(placed, vec![Placement { offset: 0, fuzz: 1 }]);
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

    #[test]
    fn reversed_patch_detects_already_applied() {
        let patched = "one\ntwo\nthree\nFOUR\nfive\nsix\nseven\n";
        assert_eq!(apply(patched.as_bytes(), &patch_three(), 0), Err(0));
        let reversed: Vec<Hunk> = patch_three().iter().map(Hunk::reversed).collect();
        let (out, _) = apply(patched.as_bytes(), &reversed, 0).unwrap();
        assert_eq!(out, BASE.as_bytes());
    }
}
