//! The multi-candidate governor's decisions: which of one round's candidate patches are worth a
//! test run, in which order, and why the others are dropped before any test time is spent. Pure:
//! the orchestrator runs the checks (policy, a trial apply and build in a worktree, the image
//! digest of [`image`]) and records their results in [`Checks`]; [`rank`] turns them into
//! verdicts. Nothing here touches a repository, runs a build or reads the clock.
//!
//! A candidate is dropped at the first check it fails, in this order: policy, applies cleanly,
//! builds, changes the image (an image that loads the same bytes as the baseline's is a no-op
//! patch). The survivors are ranked by how much is known to be good about them (built, lint
//! clean, image changed) and then by the smallest diff, ties kept in the order the strategy
//! proposed them. Lint findings the baseline did not have do not drop a candidate — the loop's
//! LINT stage judges it if it is ever tried — but it ranks after every clean one that builds.

pub mod image;

use crate::analysis::lint::Finding;
use crate::machine::ErrorClass;
use serde::{Deserialize, Serialize};

/// One check's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum Check {
    Passed,
    Failed {
        reason: String,
    },
    /// Not run (a single candidate is not trial-built) or inconclusive (the build environment
    /// failed, there is no baseline image): the loop's own steps will tell.
    Unknown {
        reason: String,
    },
}

impl Check {
    pub fn unknown(reason: impl Into<String>) -> Check {
        Check::Unknown {
            reason: reason.into(),
        }
    }

    pub fn failed(reason: impl Into<String>) -> Check {
        Check::Failed {
            reason: reason.into(),
        }
    }
}

/// What the governor found out about one candidate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checks {
    /// The profile's `[policy]` and the repository's path checks.
    pub policy: Check,
    /// Applies on the rollback point (in a worktree of its own).
    pub applies: Check,
    /// The profile's build succeeds with it.
    pub builds: Check,
    /// Passed: the image differs from the baseline's; Failed: it loads the same bytes.
    pub image: Check,
    /// Passed: no lint finding the baseline did not have; Failed: new findings (they demote
    /// the candidate, they do not drop it); Unknown: no `[lint]`, or not built.
    #[serde(default = "not_checked")]
    pub lint: Check,
}

fn not_checked() -> Check {
    Check::unknown("not checked")
}

impl Checks {
    /// Nothing checked yet.
    pub fn pending() -> Checks {
        Checks {
            policy: not_checked(),
            applies: not_checked(),
            builds: not_checked(),
            image: not_checked(),
            lint: not_checked(),
        }
    }
}

/// The check a dropped candidate failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// The strategy could not make this candidate (its agent failed) while it made others.
    Generation,
    /// The strategy handed over an empty patch.
    Empty,
    Policy,
    Apply,
    Build,
    Image,
}

impl Stage {
    /// The error class an iteration ends with when this is the most telling drop of its round.
    pub fn error_class(self) -> ErrorClass {
        match self {
            Stage::Policy => ErrorClass::PolicyViolation,
            Stage::Apply => ErrorClass::PatchApplyFailure,
            Stage::Build => ErrorClass::BuildFailure,
            // The agent could not be run to the end: infrastructure.
            Stage::Generation => ErrorClass::ModelFailure,
            // A patch that changes nothing is as good as no patch: no usable candidate.
            Stage::Empty | Stage::Image => ErrorClass::NoCandidate,
        }
    }

    /// How telling a drop is when a whole round is dropped: a policy violation says the most
    /// (the strategy must change course), then the check that got furthest with real feedback.
    /// An agent that answered (if only with nothing) says more than one that failed: a round
    /// is an infrastructure failure only when no agent answered at all.
    fn weight(self) -> u8 {
        match self {
            Stage::Policy => 5,
            Stage::Build => 4,
            Stage::Apply => 3,
            Stage::Image => 2,
            Stage::Empty => 1,
            Stage::Generation => 0,
        }
    }
}

/// Where a candidate stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// Generated, not reviewed yet.
    Pending,
    /// Worth a test run; 1 is tried first.
    Ranked {
        rank: u32,
    },
    Dropped {
        stage: Stage,
        class: ErrorClass,
    },
}

/// One candidate of one round, as `candidates.json`, the run context and the report keep it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CandidateRecord {
    pub iteration: u32,
    /// `c1`, `c2`, ... in the order the strategy proposed them.
    pub id: String,
    /// Where it came from (a file name, a model's answer).
    pub origin: String,
    /// The diff, relative to the run directory.
    pub diff: String,
    /// Lines added plus removed.
    pub changed_lines: usize,
    pub checks: Checks,
    #[serde(flatten)]
    pub verdict: Verdict,
    /// Why it was ranked where it is, or dropped.
    pub reason: String,
    /// The trial build's log, relative to the run directory.
    pub build_log: Option<String>,
    /// Lint findings the trial build's tree has and the baseline had not.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub new_findings: Vec<Finding>,
}

/// How a survivor ranks, lowest first: build not known to pass, new lint findings, image not
/// known to change, changed lines, the strategy's order.
type RankKey = (u8, u8, u8, usize, usize);

/// Decides every pending candidate of `round`: dropped at its first failed check, or ranked.
/// Candidates already decided (dropped as empty when generated) keep their verdict.
pub fn rank(round: &mut [CandidateRecord]) {
    let mut survivors: Vec<(usize, RankKey)> = Vec::new();
    for (index, c) in round.iter_mut().enumerate() {
        if c.verdict != Verdict::Pending {
            continue;
        }
        let failed = [
            (Stage::Policy, &c.checks.policy),
            (Stage::Apply, &c.checks.applies),
            (Stage::Build, &c.checks.builds),
            (Stage::Image, &c.checks.image),
        ]
        .into_iter()
        .find_map(|(stage, check)| match check {
            Check::Failed { reason } => Some((stage, reason.clone())),
            Check::Passed | Check::Unknown { .. } => None,
        });
        match failed {
            Some((stage, reason)) => {
                c.reason = drop_reason(stage, &reason);
                c.verdict = Verdict::Dropped {
                    stage,
                    class: stage.error_class(),
                };
            }
            None => {
                let unknown = |check: &Check| u8::from(check != &Check::Passed);
                let findings = u8::from(matches!(c.checks.lint, Check::Failed { .. }));
                let key = (
                    unknown(&c.checks.builds),
                    findings,
                    unknown(&c.checks.image),
                    c.changed_lines,
                    index,
                );
                survivors.push((index, key));
            }
        }
    }
    survivors.sort_by_key(|s| s.1);
    for (position, (index, _)) in survivors.into_iter().enumerate() {
        let rank = position as u32 + 1;
        let c = &mut round[index];
        c.verdict = Verdict::Ranked { rank };
        c.reason = ranked_reason(rank, c);
    }
}

/// Marks a candidate the strategy handed over empty.
pub fn drop_empty(c: &mut CandidateRecord) {
    c.verdict = Verdict::Dropped {
        stage: Stage::Empty,
        class: Stage::Empty.error_class(),
    };
    c.reason = drop_reason(Stage::Empty, "the patch is empty");
}

/// Marks a candidate the strategy could not make, with the strategy's reason.
pub fn drop_failed(c: &mut CandidateRecord, reason: &str) {
    c.verdict = Verdict::Dropped {
        stage: Stage::Generation,
        class: Stage::Generation.error_class(),
    };
    c.reason = drop_reason(Stage::Generation, reason);
}

/// Marks a candidate the loop itself applied and built (a single candidate is not trial-built)
/// whose image loads the same bytes as the baseline's: dropped as a no-op, as a trial build
/// would have dropped it.
pub fn drop_no_op(c: &mut CandidateRecord, detail: &str) {
    c.checks.applies = Check::Passed;
    c.checks.builds = Check::Passed;
    c.checks.image = Check::failed(detail);
    c.verdict = Verdict::Dropped {
        stage: Stage::Image,
        class: Stage::Image.error_class(),
    };
    c.reason = drop_reason(Stage::Image, detail);
}

fn drop_reason(stage: Stage, detail: &str) -> String {
    let what = match stage {
        Stage::Generation => "not generated",
        Stage::Empty => "empty patch",
        Stage::Policy => "POLICY_VIOLATION",
        Stage::Apply => "does not apply",
        Stage::Build => "does not build",
        Stage::Image => "no-op image",
    };
    format!("dropped ({what}): {}", first_line(detail))
}

fn ranked_reason(rank: u32, c: &CandidateRecord) -> String {
    let mut known = Vec::new();
    match &c.checks.builds {
        Check::Passed => known.push("builds".to_string()),
        Check::Unknown { reason } => known.push(format!("build not tried ({reason})")),
        Check::Failed { .. } => {}
    }
    match &c.checks.lint {
        Check::Passed => known.push("lint clean".to_string()),
        Check::Failed { .. } => known.push(format!("{} new lint finding(s)", c.new_findings.len())),
        Check::Unknown { .. } => {}
    }
    match &c.checks.image {
        Check::Passed => known.push("image changed".to_string()),
        Check::Unknown { reason } if c.checks.builds == Check::Passed => {
            known.push(format!("image not compared ({reason})"))
        }
        Check::Unknown { .. } | Check::Failed { .. } => {}
    }
    known.push(format!("{} changed line(s)", c.changed_lines));
    format!("ranked {}: {}", ordinal(rank), known.join(", "))
}

/// The error class a round ends with when every candidate was dropped: POLICY_VIOLATION when
/// any was denied, else the drop that got furthest. None when a candidate survived.
pub fn round_failure(round: &[CandidateRecord]) -> Option<ErrorClass> {
    let mut worst: Option<Stage> = None;
    for c in round {
        match c.verdict {
            Verdict::Ranked { .. } | Verdict::Pending => return None,
            Verdict::Dropped { stage, .. } => {
                if worst.is_none_or(|w| stage.weight() > w.weight()) {
                    worst = Some(stage);
                }
            }
        }
    }
    worst.map(Stage::error_class)
}

/// The ranked candidates, best first.
pub fn ranked(round: &[CandidateRecord]) -> Vec<&CandidateRecord> {
    let mut out: Vec<(u32, &CandidateRecord)> = round
        .iter()
        .filter_map(|c| match c.verdict {
            Verdict::Ranked { rank } => Some((rank, c)),
            Verdict::Pending | Verdict::Dropped { .. } => None,
        })
        .collect();
    out.sort_by_key(|r| r.0);
    out.into_iter().map(|r| r.1).collect()
}

/// One line for the trace: "3 candidates: c2 ranked 1st, c1 dropped (POLICY_VIOLATION: ...),
/// c3 dropped (no-op image)". Ranked candidates first, in rank order, then the dropped ones.
pub fn summary(round: &[CandidateRecord]) -> String {
    let mut parts: Vec<String> = ranked(round)
        .iter()
        .map(|c| match c.verdict {
            Verdict::Ranked { rank } => format!("{} ranked {}", c.id, ordinal(rank)),
            Verdict::Pending | Verdict::Dropped { .. } => String::new(),
        })
        .collect();
    for c in round {
        if let Verdict::Dropped { stage, class } = c.verdict {
            let why = match stage {
                Stage::Empty => "empty patch".to_string(),
                Stage::Image => "no-op image".to_string(),
                Stage::Generation | Stage::Policy | Stage::Apply | Stage::Build => {
                    let detail = c.reason.split_once("): ").map_or("", |(_, d)| d);
                    format!("{class}: {}", shorten(detail, 80))
                }
            };
            parts.push(format!("{} dropped ({why})", c.id));
        }
    }
    format!(
        "{} candidate{}: {}",
        round.len(),
        if round.len() == 1 { "" } else { "s" },
        parts.join(", ")
    )
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("").trim()
}

fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let cut: String = text.chars().take(max.saturating_sub(1)).collect();
    format!("{cut}…")
}

/// 1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, 21st.
pub fn ordinal(n: u32) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(id: &str, lines: usize, checks: [Check; 4]) -> CandidateRecord {
        let [policy, applies, builds, image] = checks;
        let lint = Check::unknown("no [lint]");
        CandidateRecord {
            iteration: 1,
            id: id.into(),
            origin: format!("{id}.diff"),
            diff: format!("iter-001/candidates/{id}.diff"),
            changed_lines: lines,
            checks: Checks {
                policy,
                applies,
                builds,
                image,
                lint,
            },
            verdict: Verdict::Pending,
            reason: String::new(),
            build_log: None,
            new_findings: Vec::new(),
        }
    }

    fn ok() -> Check {
        Check::Passed
    }

    fn no(reason: &str) -> Check {
        Check::failed(reason)
    }

    fn unknown() -> Check {
        Check::unknown("single candidate")
    }

    #[test]
    fn drops_a_no_op_and_a_policy_violation_and_ranks_the_rest_by_diff_size() {
        let mut round = vec![
            candidate(
                "c1",
                1,
                [ok(), ok(), ok(), no("same bytes as the baseline")],
            ),
            candidate("c2", 2, [no("changes tests/test_crc.c"), ok(), ok(), ok()]),
            candidate("c3", 9, [ok(), ok(), ok(), ok()]),
            candidate("c4", 2, [ok(), ok(), ok(), ok()]),
            candidate("c5", 2, [ok(), ok(), no("crc.c:3: error"), unknown()]),
            candidate("c6", 2, [ok(), no("hunk 1 failed"), unknown(), unknown()]),
        ];
        rank(&mut round);
        let verdicts: Vec<Verdict> = round.iter().map(|c| c.verdict).collect();
        assert_eq!(
            verdicts,
            [
                Verdict::Dropped {
                    stage: Stage::Image,
                    class: ErrorClass::NoCandidate
                },
                Verdict::Dropped {
                    stage: Stage::Policy,
                    class: ErrorClass::PolicyViolation
                },
                Verdict::Ranked { rank: 2 },
                Verdict::Ranked { rank: 1 },
                Verdict::Dropped {
                    stage: Stage::Build,
                    class: ErrorClass::BuildFailure
                },
                Verdict::Dropped {
                    stage: Stage::Apply,
                    class: ErrorClass::PatchApplyFailure
                },
            ]
        );
        assert_eq!(
            ranked(&round)
                .iter()
                .map(|c| c.id.as_str())
                .collect::<Vec<_>>(),
            ["c4", "c3"]
        );
        assert_eq!(
            round[0].reason,
            "dropped (no-op image): same bytes as the baseline"
        );
        assert_eq!(
            round[3].reason,
            "ranked 1st: builds, image changed, 2 changed line(s)"
        );
        assert_eq!(round_failure(&round), None);
        let line = summary(&round);
        assert!(
            line.starts_with("6 candidates: c4 ranked 1st, c3 ranked 2nd, c1 dropped (no-op image), c2 dropped (POLICY_VIOLATION: changes tests/test_crc.c)"),
            "{line}"
        );
    }

    #[test]
    fn the_first_failed_check_decides_the_drop() {
        let mut round = vec![candidate(
            "c1",
            3,
            [no("denied"), no("does not apply"), no("x"), no("y")],
        )];
        rank(&mut round);
        assert!(matches!(
            round[0].verdict,
            Verdict::Dropped {
                stage: Stage::Policy,
                ..
            }
        ));
    }

    #[test]
    fn what_is_known_to_work_ranks_before_what_is_not_known() {
        let mut round = vec![
            candidate("c1", 1, [ok(), ok(), unknown(), unknown()]),
            candidate("c2", 1, [ok(), ok(), ok(), unknown()]),
            candidate("c3", 5, [ok(), ok(), ok(), ok()]),
            candidate("c4", 1, [ok(), ok(), ok(), ok()]),
        ];
        rank(&mut round);
        assert_eq!(
            ranked(&round)
                .iter()
                .map(|c| c.id.as_str())
                .collect::<Vec<_>>(),
            ["c4", "c3", "c2", "c1"]
        );
        assert!(
            round[0].reason.contains("build not tried"),
            "{}",
            round[0].reason
        );
    }

    #[test]
    fn a_round_with_nothing_left_fails_with_its_most_telling_class() {
        let mut round = vec![
            candidate("c1", 1, [ok(), no("hunk failed"), unknown(), unknown()]),
            candidate("c2", 1, [ok(), ok(), no("error"), unknown()]),
        ];
        rank(&mut round);
        assert_eq!(round_failure(&round), Some(ErrorClass::BuildFailure));
        round.push(candidate("c3", 1, [no("weakens a test"), ok(), ok(), ok()]));
        rank(&mut round);
        assert_eq!(round_failure(&round), Some(ErrorClass::PolicyViolation));

        let mut empty = vec![candidate("c1", 0, [ok(), ok(), ok(), ok()])];
        drop_empty(&mut empty[0]);
        rank(&mut empty);
        assert_eq!(round_failure(&empty), Some(ErrorClass::NoCandidate));
        assert_eq!(summary(&empty), "1 candidate: c1 dropped (empty patch)");

        let mut failed = vec![
            candidate("c1", 0, [ok(), ok(), ok(), ok()]),
            candidate("c2", 3, [ok(), ok(), ok(), ok()]),
        ];
        drop_failed(
            &mut failed[0],
            "`agent #1` exited with exit status: 3: no idea",
        );
        rank(&mut failed);
        assert_eq!(round_failure(&failed), None);
        // Agents that all failed are the infrastructure's failure; one that answered with
        // nothing beside them makes the round a round without a candidate.
        let mut broken = vec![
            candidate("c1", 0, [ok(), ok(), ok(), ok()]),
            candidate("c2", 0, [ok(), ok(), ok(), ok()]),
        ];
        drop_failed(&mut broken[0], "`agent #1` exited with exit status: 3");
        drop_failed(&mut broken[1], "`agent #2` exited with exit status: 3");
        assert_eq!(round_failure(&broken), Some(ErrorClass::ModelFailure));
        drop_empty(&mut broken[1]);
        assert_eq!(round_failure(&broken), Some(ErrorClass::NoCandidate));
        assert_eq!(
            summary(&failed),
            "2 candidates: c2 ranked 1st, c1 dropped (MODEL_FAILURE: `agent #1` exited with exit \
             status: 3: no idea)"
        );
    }

    #[test]
    fn records_keep_their_verdict_through_json() {
        let mut round = vec![candidate("c1", 2, [ok(), ok(), ok(), no("same")])];
        rank(&mut round);
        let json = serde_json::to_value(&round[0]).unwrap();
        assert_eq!(json["verdict"], "dropped");
        assert_eq!(json["stage"], "image");
        assert_eq!(json["class"], "NO_CANDIDATE");
        assert_eq!(json["checks"]["image"]["result"], "failed");
        let back: CandidateRecord = serde_json::from_value(json).unwrap();
        assert_eq!(back, round[0]);
    }

    #[test]
    fn a_single_candidate_built_by_the_loop_can_still_be_dropped_as_a_no_op() {
        let mut round = vec![candidate("c1", 1, [ok(), unknown(), unknown(), unknown()])];
        rank(&mut round);
        assert_eq!(round[0].verdict, Verdict::Ranked { rank: 1 });
        drop_no_op(&mut round[0], "loads the same bytes");
        assert_eq!(
            round[0].verdict,
            Verdict::Dropped {
                stage: Stage::Image,
                class: ErrorClass::NoCandidate
            }
        );
        assert_eq!(round[0].checks.builds, Check::Passed);
        assert_eq!(round_failure(&round), Some(ErrorClass::NoCandidate));
        assert_eq!(summary(&round), "1 candidate: c1 dropped (no-op image)");
    }

    #[test]
    fn new_lint_findings_rank_after_every_clean_candidate_that_builds() {
        let finding = Finding {
            tool: "cppcheck".into(),
            file: "src/crc.c".into(),
            line: Some(12),
            column: Some(5),
            severity: "error".into(),
            id: "nullPointer".into(),
            message: "Null pointer dereference: p".into(),
            text: "return *p;".into(),
        };
        let mut dirty = candidate("c1", 1, [ok(), ok(), ok(), ok()]);
        dirty.checks.lint = no("1 new finding");
        dirty.new_findings = vec![finding];
        let mut clean = candidate("c2", 9, [ok(), ok(), ok(), no("same bytes")]);
        clean.checks.lint = ok();
        let mut clean_changed = candidate("c3", 20, [ok(), ok(), ok(), ok()]);
        clean_changed.checks.lint = ok();
        let unbuilt = candidate("c4", 1, [ok(), ok(), unknown(), unknown()]);
        let mut round = vec![dirty, clean, clean_changed, unbuilt];
        rank(&mut round);
        // c2 is a no-op and dropped; c3 is clean and builds; c1 builds with a new finding; c4
        // was not built at all.
        let order: Vec<&str> = ranked(&round).iter().map(|c| c.id.as_str()).collect();
        assert_eq!(order, ["c3", "c1", "c4"]);
        assert_eq!(
            round[0].reason,
            "ranked 2nd: builds, 1 new lint finding(s), image changed, 1 changed line(s)"
        );
        assert!(
            round[2].reason.contains("lint clean"),
            "{}",
            round[2].reason
        );
        let json = serde_json::to_value(&round[0]).unwrap();
        assert_eq!(json["new_findings"][0]["id"], "nullPointer");
        assert_eq!(json["checks"]["lint"]["result"], "failed");
        // A record written before the lint check existed still reads.
        let mut old = serde_json::to_value(&round[2]).unwrap();
        old["checks"].as_object_mut().unwrap().remove("lint");
        let back: CandidateRecord = serde_json::from_value(old).unwrap();
        assert_eq!(back.checks.lint, Check::unknown("not checked"));
    }

    #[test]
    fn ordinals() {
        let got: Vec<String> = [1, 2, 3, 4, 11, 12, 13, 21, 22, 101]
            .into_iter()
            .map(ordinal)
            .collect();
        assert_eq!(
            got,
            ["1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st"]
        );
    }
}
