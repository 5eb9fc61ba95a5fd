//! Patch policy: the rules a candidate patch must pass before it may touch the user's repository,
//! the risk score that says how carefully a person should look at it, and the approval gate that
//! asks them. The fix loop calls it in PATCH_REVIEW:
//!
//! 1. [`evaluate`] checks the diff against the profile's `[policy]` and returns a [`Review`]:
//!    a verdict, every finding with the stable id of the rule that made it, the risk score with its
//!    reasons, and the size of the patch. It is pure: text in, review out, no I/O, no clock.
//! 2. A denied patch is never put to a person: it is a POLICY_VIOLATION, and
//!    [`Decision::by_policy`] records why.
//! 3. [`needs_human`] decides from the `--approve` mode and the review whether to ask;
//!    the [`Approver`] the orchestrator was given asks (a person on the terminal through `ui`,
//!    an agent's user through `mcp`, [`NonInteractive`] without anyone).
//!    An edited patch comes back as text: the caller evaluates it again.
//! 4. The caller writes a [`ReviewRecord`] as `review.json` in the iteration's directory.
//!
//! Rules are data ([`RULES`], [`builtin_globs`], [`risk::CATEGORIES`]); the patch model is the
//! repository's (`repo::patch`), never a second parser. Nothing here does I/O, prints, or decides
//! what the loop does next.

mod approval;
mod assertions;
mod clike;
pub mod risk;
mod rules;

pub use approval::{
    needs_human, ApprovalError, ApprovalRequest, ApproveMode, Approver, Choice, DecidedBy,
    Decision, DecisionKind, NonInteractive, ReviewRecord, UnknownApproveMode,
    DEFAULT_RISK_THRESHOLD,
};
pub use risk::Risk;
pub use rules::{builtin_globs, builtin_rule, Rule, RULES};

use crate::config::PolicySpec;
use crate::repo::patch::{self, FilePatch, HunkLine};
use crate::repo::RepoError;
use serde::{Deserialize, Deserializer, Serialize};

/// Whether the patch may go on to PATCH_APPLY.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Allow,
    Deny,
}

/// A `Deny` finding makes the verdict `Deny`; a `Warn` finding is shown and makes `--approve
/// risky` ask a person.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Deny,
    Warn,
}

/// A rule's stable id, one of [`RULES`] (e.g. `path.deny.builtin.tests`). Named so that serde
/// reads it back through the rule table instead of borrowing from the input.
pub type RuleId = &'static str;

/// One thing a rule found in the patch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    #[serde(deserialize_with = "known_rule")]
    pub rule: RuleId,
    pub severity: Severity,
    /// The repository-relative path the finding is about.
    pub path: Option<String>,
    /// The line in that file: in the patched file for an added line, in the original for a
    /// removed one.
    pub line: Option<u32>,
    pub message: String,
}

/// How big the patch is. Changed lines are added plus removed, as a diffstat counts them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    pub files: usize,
    pub added: usize,
    pub removed: usize,
}

/// What the policy says about one patch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Review {
    pub verdict: Verdict,
    pub findings: Vec<Finding>,
    pub risk: Risk,
    pub stats: Stats,
}

impl Review {
    /// The findings that deny the patch.
    pub fn denials(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|f| f.severity == Severity::Deny)
    }

    pub fn has_warnings(&self) -> bool {
        self.findings.iter().any(|f| f.severity == Severity::Warn)
    }
}

/// Checks `diff` (a unified diff, git-style or plain) against `spec`. Every rule runs, so the
/// review lists everything wrong with the patch at once, not only the first problem.
pub fn evaluate(diff: &str, spec: &PolicySpec) -> Review {
    let files = match patch::parse(diff.as_bytes()) {
        Ok(files) => files,
        Err(e) => return unparseable(&e),
    };
    let views: Vec<FileView> = files.iter().map(FileView::new).collect();
    let stats = Stats {
        files: files.len(),
        added: files.iter().map(FilePatch::added_lines).sum(),
        removed: files.iter().map(FilePatch::removed_lines).sum(),
    };
    let mut findings = Vec::new();
    rules::check_paths(&views, spec, &mut findings);
    rules::check_size(&stats, spec, &mut findings);
    rules::check_files(&views, &mut findings);
    assertions::check(&views, &mut findings);
    let findings = assertions::cap_per_file(findings);
    let risk = risk::score(&views, &stats);
    let verdict = if findings.iter().any(|f| f.severity == Severity::Deny) {
        Verdict::Deny
    } else {
        Verdict::Allow
    };
    Review {
        verdict,
        findings,
        risk,
        stats,
    }
}

fn unparseable(e: &RepoError) -> Review {
    let (rule, message) = match e {
        RepoError::EmptyPatch => ("patch.empty", "the patch changes no file".to_string()),
        other => ("patch.parse", format!("the patch cannot be read: {other}")),
    };
    Review {
        verdict: Verdict::Deny,
        findings: vec![Finding {
            rule,
            severity: Severity::Deny,
            path: None,
            line: None,
            message,
        }],
        risk: Risk::default(),
        stats: Stats::default(),
    }
}

/// `review.json` written by one fwfix may be read by a later one: rule ids map back to the
/// table's static strings, and an id this version does not know is an error, not a guess.
fn known_rule<'de, D: Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
    let id = String::deserialize(d)?;
    rules::rule_id(&id)
        .ok_or_else(|| serde::de::Error::custom(format!("unknown policy rule `{id}`")))
}

/// One line of a hunk as the rules see it: text without its newline, with its line number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LineKind {
    Context,
    Added,
    Removed,
}

#[derive(Debug, Clone)]
pub(crate) struct DiffLine {
    pub kind: LineKind,
    pub text: String,
    /// In the patched file for added and context lines, in the original for removed ones.
    pub line: u32,
}

/// A token of one side of a hunk, with the index of its line in the hunk.
pub(crate) struct SideTok {
    pub tok: clike::Tok,
    pub line: usize,
}

/// The tokens of one side of a hunk: `Removed` reads the original (context and removed lines),
/// `Added` the result. Lexing the side in order keeps block comments straight.
pub(crate) fn side(lines: &[DiffLine], changed: LineKind) -> Vec<SideTok> {
    let mut out = Vec::new();
    let mut in_comment = false;
    for (i, l) in lines.iter().enumerate() {
        if l.kind == LineKind::Context || l.kind == changed {
            for tok in clike::lex(&l.text, &mut in_comment) {
                out.push(SideTok { tok, line: i });
            }
        }
    }
    out
}

#[derive(Debug, Clone)]
pub(crate) struct HunkView {
    /// Git's name for the enclosing function, or empty.
    pub heading: String,
    pub lines: Vec<DiffLine>,
}

/// One file of the patch with text paths and numbered lines.
#[derive(Debug, Clone)]
pub(crate) struct FileView<'p> {
    /// The path the patch leaves (the original one for a deleted file).
    pub path: String,
    /// Every path the file section names: both sides of a rename or copy.
    pub paths: Vec<String>,
    pub patch: &'p FilePatch,
    pub hunks: Vec<HunkView>,
}

impl<'p> FileView<'p> {
    fn new(patch: &'p FilePatch) -> FileView<'p> {
        let text =
            |p: &Option<Vec<u8>>| p.as_ref().map(|b| String::from_utf8_lossy(b).into_owned());
        let (old, new) = (text(&patch.old_path), text(&patch.new_path));
        let mut paths: Vec<String> = old.iter().chain(new.iter()).cloned().collect();
        paths.dedup();
        let path = new.or(old).unwrap_or_default();
        let hunks = patch
            .hunks
            .iter()
            .map(|h| {
                let (mut old_no, mut new_no) = (h.old_start, h.new_start);
                let number = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
                let lines = h
                    .lines
                    .iter()
                    .map(|l| {
                        let (kind, bytes, line) = match l {
                            HunkLine::Context(b) => {
                                old_no += 1;
                                new_no += 1;
                                (LineKind::Context, b, new_no - 1)
                            }
                            HunkLine::Add(b) => {
                                new_no += 1;
                                (LineKind::Added, b, new_no - 1)
                            }
                            HunkLine::Remove(b) => {
                                old_no += 1;
                                (LineKind::Removed, b, old_no - 1)
                            }
                        };
                        let text = String::from_utf8_lossy(bytes);
                        DiffLine {
                            kind,
                            text: text.trim_end_matches(['\n', '\r']).to_string(),
                            line: number(line),
                        }
                    })
                    .collect();
                HunkView {
                    heading: h.heading.clone(),
                    lines,
                }
            })
            .collect();
        FileView {
            path,
            paths,
            patch,
            hunks,
        }
    }
}

#[cfg(test)]
pub(crate) mod testing {
    use crate::config::PolicySpec;

    /// A profile policy like the shipped default: `src/**`, 60 lines, 5 files.
    pub fn spec() -> PolicySpec {
        PolicySpec {
            allow: vec!["src/**".into()],
            deny: vec![],
            max_changed_lines: 60,
            max_changed_files: 5,
            allow_builtin: vec![],
        }
    }

    /// A one-hunk git diff of `path` that replaces `old` lines with `new` ones.
    pub fn diff(path: &str, old: &[&str], new: &[&str]) -> String {
        let mut out = format!(
            "diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -10,{} +10,{} @@ void f(void)\n",
            old.len() + 1,
            new.len() + 1
        );
        out.push_str(" {\n");
        for l in old {
            out.push_str(&format!("-{l}\n"));
        }
        for l in new {
            out.push_str(&format!("+{l}\n"));
        }
        out
    }

    pub fn rules_of(review: &super::Review) -> Vec<&'static str> {
        review.findings.iter().map(|f| f.rule).collect()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::testing::*;
    use super::*;

    #[test]
    fn a_small_source_fix_is_allowed() {
        let r = evaluate(
            include_str!("../../fixtures/fwtests/patches/04-fixes-crc16.diff"),
            &spec(),
        );
        assert_eq!(r.verdict, Verdict::Allow, "{:?}", r.findings);
        assert!(r.findings.is_empty());
        assert_eq!(
            r.stats,
            Stats {
                files: 1,
                added: 1,
                removed: 1
            }
        );
        assert_eq!(r.risk.score, 0.0);
    }

    #[test]
    fn fixture_patches_in_src_are_allowed_and_plain() {
        for d in [
            include_str!("../../fixtures/fwtests/patches/01-does-not-apply.diff"),
            include_str!("../../fixtures/fwtests/patches/02-breaks-build.diff"),
            include_str!("../../fixtures/fwtests/patches/03-regresses-crc32.diff"),
        ] {
            let r = evaluate(d, &spec());
            assert_eq!(r.verdict, Verdict::Allow, "{:?}", r.findings);
            assert_eq!(r.risk, Risk::default());
        }
    }

    #[test]
    fn garbage_and_empty_patches_are_denied() {
        let r = evaluate("--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n", &spec());
        assert_eq!(r.verdict, Verdict::Deny);
        assert_eq!(rules_of(&r), vec!["patch.parse"]);
        assert!(r.findings[0].message.contains("truncated"));
        let r = evaluate("just some words\n", &spec());
        assert_eq!(rules_of(&r), vec!["patch.empty"]);
    }

    #[test]
    fn every_rule_runs_and_line_numbers_follow_the_hunk() {
        let d = diff(
            "tests/test_crc.c",
            &["    TEST_ASSERT_EQUAL_HEX16(0x29B1, crc16(in, 9));"],
            &["    TEST_ASSERT_EQUAL_HEX16(0x0000, crc16(in, 9));"],
        );
        let r = evaluate(&d, &spec());
        assert_eq!(r.verdict, Verdict::Deny);
        let rules = rules_of(&r);
        assert!(rules.contains(&"path.allow"), "{rules:?}");
        assert!(rules.contains(&"path.deny.builtin.tests"), "{rules:?}");
        assert!(rules.contains(&"test.expected_changed"), "{rules:?}");
        let f = r
            .findings
            .iter()
            .find(|f| f.rule == "test.expected_changed")
            .unwrap();
        assert_eq!(f.path.as_deref(), Some("tests/test_crc.c"));
        assert_eq!(f.line, Some(11));
    }

    #[test]
    fn review_round_trips_through_json() {
        let d = diff("vendor/x.c", &["a;"], &["b;"]);
        let r = evaluate(&d, &spec());
        let json = serde_json::to_string(&r).unwrap();
        assert!(
            json.contains("\"rule\":\"path.deny.builtin.vendor\""),
            "{json}"
        );
        let back: Review = serde_json::from_str(&json).unwrap();
        assert_eq!(back, r);
        let bad = json.replace("path.deny.builtin.vendor", "no.such.rule");
        let err = serde_json::from_str::<Review>(&bad).unwrap_err();
        assert!(err.to_string().contains("unknown policy rule"), "{err}");
    }
}
