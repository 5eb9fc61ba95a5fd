//! CONVERGENCE_CHECK's rules: given the verdicts so far, stop, run again, or go round again.
//!
//! Pure. `fwfix test` has no patches to try: it runs the image `repeat` times and succeeds only
//! when every attempt passed. A fix run re-runs an image whose runs disagree until the sequential
//! rule of [`super::flaky`] decides which way it leans, at most [`MAX_FLAKY_RERUNS`] more times.

use super::flaky::{self, Sequential};
use super::recovery::Decision;
use super::transition::Outcome;

/// The most extra runs of one image whose runs disagree (the sequential rule usually stops
/// sooner: 7 fixes in 8 runs, or 1 in 8, decide it).
pub const MAX_FLAKY_RERUNS: u32 = 8;

/// A verdict as convergence sees it (the result model's verdict, without depending on it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptVerdict {
    Pass,
    Fail,
    Inconclusive,
    EnvError,
}

/// `fwfix test`: run `repeat` attempts of the same image, then pass only if all passed.
pub fn test_mode(verdicts: &[AttemptVerdict], repeat: u32) -> Decision {
    let done = verdicts.len();
    let want = repeat.max(1) as usize;
    if done < want {
        return Decision {
            outcome: Outcome::Rerun,
            reason: format!("attempt {} of {want}", done + 1),
        };
    }
    let passed = verdicts
        .iter()
        .filter(|v| **v == AttemptVerdict::Pass)
        .count();
    if passed == done {
        let reason = if done == 1 {
            "every test passed".to_string()
        } else {
            format!("every test passed on all {done} attempts")
        };
        return Decision {
            outcome: Outcome::Converged,
            reason,
        };
    }
    let reason = if done == 1 {
        match verdicts[0] {
            AttemptVerdict::Inconclusive => "the results are inconclusive".to_string(),
            AttemptVerdict::EnvError => "the environment failed the attempt".to_string(),
            AttemptVerdict::Fail | AttemptVerdict::Pass => "tests failed".to_string(),
        }
    } else if passed > 0 {
        format!(
            "flaky: passed on {passed} of {done} attempts, rate {}",
            flaky::describe(passed as u32, done as u32)
        )
    } else {
        format!("tests failed on all {done} attempts")
    };
    Decision {
        outcome: Outcome::GiveUp,
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use AttemptVerdict::*;

    #[test]
    fn runs_until_repeat_attempts_are_done() {
        assert_eq!(test_mode(&[], 1).outcome, Outcome::Rerun);
        assert_eq!(test_mode(&[Pass], 3).outcome, Outcome::Rerun);
        assert_eq!(test_mode(&[Pass, Fail], 3).reason, "attempt 3 of 3");
    }

    #[test]
    fn passes_only_when_every_attempt_passed() {
        assert_eq!(test_mode(&[Pass], 1).outcome, Outcome::Converged);
        assert_eq!(
            test_mode(&[Pass, Pass, Pass], 3).outcome,
            Outcome::Converged
        );
        let d = test_mode(&[Pass, Fail, Pass], 3);
        assert_eq!(d.outcome, Outcome::GiveUp);
        assert_eq!(
            d.reason,
            "flaky: passed on 2 of 3 attempts, rate 0.67 [0.21, 0.94]"
        );
        assert_eq!(test_mode(&[Fail], 1).reason, "tests failed");
        assert_eq!(
            test_mode(&[Inconclusive], 1).reason,
            "the results are inconclusive"
        );
    }
}

/// The tests a fix must satisfy, taken from the baseline run (SWE-bench's FAIL_TO_PASS and
/// PASS_TO_PASS).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Targets {
    /// Must pass after the fix (failing at baseline, or named by the profile).
    pub fail_to_pass: std::collections::BTreeSet<String>,
    /// Passed at baseline and must still pass.
    pub pass_to_pass: std::collections::BTreeSet<String>,
    /// The baseline did not build, so nothing ran: every test that runs must pass.
    pub build_was_broken: bool,
}

impl Targets {
    /// Targets from the baseline's results (`name → passed`). `named` (the profile's
    /// `fail_to_pass`) wins over the baseline's failing set when it is not empty.
    pub fn from_baseline(results: &[(String, bool)], named: &[String]) -> Targets {
        let failing = results.iter().filter(|(_, p)| !p).map(|(n, _)| n.clone());
        let fail_to_pass = if named.is_empty() {
            failing.collect()
        } else {
            named.iter().cloned().collect()
        };
        let pass_to_pass = results
            .iter()
            .filter(|(n, p)| *p && !named.contains(n))
            .map(|(n, _)| n.clone())
            .collect();
        Targets {
            fail_to_pass,
            pass_to_pass,
            build_was_broken: false,
        }
    }

    /// Targets when the baseline did not build.
    pub fn broken_build(named: &[String]) -> Targets {
        Targets {
            fail_to_pass: named.iter().cloned().collect(),
            pass_to_pass: Default::default(),
            build_was_broken: true,
        }
    }

    /// Measures one attempt's results (`name → passed`) against the targets.
    pub fn judge(&self, results: &[(String, bool)]) -> Judgement {
        let passed = |name: &str| results.iter().any(|(n, p)| n == name && *p);
        let mut j = Judgement::default();
        if self.build_was_broken && self.fail_to_pass.is_empty() {
            for (name, p) in results {
                if *p {
                    j.fixed.push(name.clone());
                } else {
                    j.still_failing.push(name.clone());
                }
            }
            return j;
        }
        for name in &self.fail_to_pass {
            if passed(name) {
                j.fixed.push(name.clone());
            } else {
                j.still_failing.push(name.clone());
            }
        }
        for name in &self.pass_to_pass {
            if !passed(name) {
                j.regressed.push(name.clone());
            }
        }
        j
    }
}

/// One attempt measured against the targets.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Judgement {
    /// Targets that pass now.
    pub fixed: Vec<String>,
    /// Targets that still do not pass.
    pub still_failing: Vec<String>,
    /// Tests that passed at baseline and do not pass now.
    pub regressed: Vec<String>,
}

impl Judgement {
    pub fn is_fix(&self) -> bool {
        self.still_failing.is_empty() && self.regressed.is_empty()
    }
}

/// What CONVERGENCE_CHECK knows in a fix run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixInput<'a> {
    /// The unpatched tree is being measured (iteration 0, or a resumed run re-checking it).
    pub baseline: bool,
    /// Iterations that count against the limit (those a stop cut short do not).
    pub iteration: u32,
    pub max_iterations: u32,
    /// The latest attempt on the current image.
    pub judgement: &'a Judgement,
    /// Judgements of the earlier attempts on the same image (confirmation and flaky re-runs).
    pub earlier_on_image: &'a [Judgement],
    pub confirm_runs: u32,
    /// Extra runs allowed on one image when its verdicts disagree.
    pub flaky_reruns: u32,
    /// Iterations in a row that did not shrink the failing set, before this one.
    pub no_progress: u32,
    pub no_progress_limit: u32,
    /// The fewest targets still failing after any earlier iteration (None before the first).
    pub best_still_failing: Option<usize>,
    /// Whether the strategy can propose another candidate.
    pub candidates_left: bool,
}

/// CONVERGENCE_CHECK's decision in a fix run, with what it means for the iteration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixDecision {
    pub decision: Decision,
    /// How the iteration ended, when it ended (None while the same image runs again).
    pub verdict: Option<IterationVerdict>,
    /// The no-progress count after this decision.
    pub no_progress: u32,
}

/// How one iteration (one patch, or the baseline) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum IterationVerdict {
    /// The baseline reproduced failures to fix.
    Reproduced,
    /// The baseline had nothing failing.
    NothingToFix,
    Fixed,
    /// Fixed some targets, broke nothing.
    Partial,
    /// Fixed targets but broke a test that passed at baseline.
    Regressed,
    NoProgress,
    /// The same image gave different verdicts and re-runs did not settle it.
    Flaky,
    DidNotApply,
    BrokeBuild,
    /// Built, but added lint findings the baseline did not have (LINT_FAILURE).
    NewFindings,
    PolicyDenied,
    Rejected,
    /// A stop (an abort, a crash, an infrastructure failure) cut the iteration short before its
    /// verdict; its candidate or round was tried again in a later iteration.
    Interrupted,
}

impl IterationVerdict {
    /// The verdict in plain words, for people (report notes, the terminal); report.json and
    /// the evidence carry the contract name (`BROKE_BUILD`).
    pub fn words(self) -> &'static str {
        match self {
            IterationVerdict::Reproduced => "reproduced",
            IterationVerdict::NothingToFix => "nothing to fix",
            IterationVerdict::Fixed => "fixed",
            IterationVerdict::Partial => "partial fix",
            IterationVerdict::Regressed => "regressed",
            IterationVerdict::NoProgress => "no progress",
            IterationVerdict::Flaky => "flaky",
            IterationVerdict::DidNotApply => "did not apply",
            IterationVerdict::BrokeBuild => "broke the build",
            IterationVerdict::NewFindings => "added lint findings",
            IterationVerdict::PolicyDenied => "denied by policy",
            IterationVerdict::Rejected => "rejected by a person",
            IterationVerdict::Interrupted => "interrupted",
        }
    }
}

/// `fwfix run`: decides whether the loop converged, needs another run of the same image, goes
/// round again, or stops.
pub fn fix_mode(input: &FixInput<'_>) -> FixDecision {
    let j = input.judgement;
    let decide = |outcome, reason: String, verdict, no_progress| FixDecision {
        decision: Decision { outcome, reason },
        verdict,
        no_progress,
    };
    if input.baseline {
        return if j.still_failing.is_empty() {
            decide(
                Outcome::Converged,
                "nothing to fix: every target passes at baseline".into(),
                Some(IterationVerdict::NothingToFix),
                0,
            )
        } else {
            decide(
                Outcome::NextIteration,
                format!(
                    "baseline reproduces {}: {}",
                    plural(j.still_failing.len(), "failing target"),
                    j.still_failing.join(", ")
                ),
                Some(IterationVerdict::Reproduced),
                0,
            )
        };
    }
    let runs_on_image = input.earlier_on_image.len() as u32 + 1;
    let fixes_on_image = input
        .earlier_on_image
        .iter()
        .chain(std::iter::once(j))
        .filter(|e| e.is_fix())
        .count() as u32;
    let disagrees = input
        .earlier_on_image
        .iter()
        .any(|e| e.is_fix() != j.is_fix());
    // Runs of one image that disagree: run it again until the Wilson interval of its fix rate
    // leaves one half (it clearly fixes more often than not, or less), or the cap is reached.
    let max_runs = input.confirm_runs.max(1) + input.flaky_reruns;
    let settled = flaky::sequential(fixes_on_image, runs_on_image, 0.5, max_runs);
    if disagrees && settled == Sequential::Continue {
        return decide(
            Outcome::Rerun,
            format!(
                "flaky: fixed on {fixes_on_image} of {runs_on_image} runs of the same image, rate {}; run {} of at most {max_runs}",
                flaky::describe(fixes_on_image, runs_on_image),
                runs_on_image + 1
            ),
            None,
            input.no_progress,
        );
    }
    if disagrees {
        // Decided (or out of runs): flaky either way, said with which way it leans.
    } else if j.is_fix() {
        if runs_on_image < input.confirm_runs {
            return decide(
                Outcome::Rerun,
                format!(
                    "confirmation run {} of {}",
                    runs_on_image + 1,
                    input.confirm_runs
                ),
                None,
                input.no_progress,
            );
        }
        return decide(
            Outcome::Fixed,
            format!(
                "fixed {} and nothing regressed{}",
                j.fixed.join(", "),
                if input.confirm_runs > 1 {
                    format!(" on {} consecutive runs", input.confirm_runs)
                } else {
                    String::new()
                }
            ),
            Some(IterationVerdict::Fixed),
            0,
        );
    }
    // Not a fix. Say why, then decide whether another iteration can happen.
    let (verdict, why) = if disagrees {
        let lean = match settled {
            Sequential::Above => "fixes more often than not",
            Sequential::Below => "fails more often than not",
            Sequential::Continue | Sequential::Undecided => "undecided",
        };
        (
            IterationVerdict::Flaky,
            format!(
                "flaky: fixed on {fixes_on_image} of {runs_on_image} runs of the same image, rate {} ({lean})",
                flaky::describe(fixes_on_image, runs_on_image)
            ),
        )
    } else if !j.regressed.is_empty() {
        (
            IterationVerdict::Regressed,
            format!("regression: {} broke", j.regressed.join(", ")),
        )
    } else if input
        .best_still_failing
        .is_none_or(|best| j.still_failing.len() < best)
        && !j.fixed.is_empty()
    {
        (
            IterationVerdict::Partial,
            format!(
                "partial: fixed {}, still failing {}",
                j.fixed.join(", "),
                j.still_failing.join(", ")
            ),
        )
    } else {
        (
            IterationVerdict::NoProgress,
            format!("no progress: still failing {}", j.still_failing.join(", ")),
        )
    };
    let no_progress = if verdict == IterationVerdict::Partial {
        0
    } else {
        input.no_progress + 1
    };
    let stop = if input.iteration >= input.max_iterations {
        Some(format!("max iterations ({}) reached", input.max_iterations))
    } else if no_progress >= input.no_progress_limit {
        Some(format!("no progress for {no_progress} iterations"))
    } else if !input.candidates_left {
        Some("no more candidates".to_string())
    } else {
        None
    };
    match stop {
        Some(stop) => decide(
            Outcome::GiveUp,
            format!("{why}; {stop}"),
            Some(verdict),
            no_progress,
        ),
        None => decide(Outcome::NextIteration, why, Some(verdict), no_progress),
    }
}

fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

#[cfg(test)]
mod fix_tests {
    use super::*;

    fn results(pairs: &[(&str, bool)]) -> Vec<(String, bool)> {
        pairs.iter().map(|(n, p)| (n.to_string(), *p)).collect()
    }

    fn baseline() -> Targets {
        Targets::from_baseline(
            &results(&[("crc8", true), ("crc16", false), ("crc32", true)]),
            &[],
        )
    }

    fn input<'a>(iteration: u32, j: &'a Judgement, earlier: &'a [Judgement]) -> FixInput<'a> {
        FixInput {
            baseline: iteration == 0,
            iteration,
            max_iterations: 10,
            judgement: j,
            earlier_on_image: earlier,
            confirm_runs: 1,
            flaky_reruns: 2,
            no_progress: 0,
            no_progress_limit: 3,
            best_still_failing: None,
            candidates_left: true,
        }
    }

    #[test]
    fn targets_come_from_the_baseline_or_the_profile() {
        let t = baseline();
        assert_eq!(t.fail_to_pass.iter().collect::<Vec<_>>(), ["crc16"]);
        assert_eq!(t.pass_to_pass.len(), 2);
        let named =
            Targets::from_baseline(&results(&[("a", false), ("b", false)]), &["a".to_string()]);
        assert_eq!(named.fail_to_pass.iter().collect::<Vec<_>>(), ["a"]);
        assert!(named.pass_to_pass.is_empty());
    }

    #[test]
    fn baseline_with_failures_goes_round_and_without_is_done() {
        let t = baseline();
        let j = t.judge(&results(&[
            ("crc8", true),
            ("crc16", false),
            ("crc32", true),
        ]));
        let d = fix_mode(&input(0, &j, &[]));
        assert_eq!(d.decision.outcome, Outcome::NextIteration);
        assert_eq!(d.verdict, Some(IterationVerdict::Reproduced));
        let all = Targets::from_baseline(&results(&[("a", true)]), &[]);
        let j = all.judge(&results(&[("a", true)]));
        assert_eq!(
            fix_mode(&input(0, &j, &[])).decision.outcome,
            Outcome::Converged
        );
    }

    #[test]
    fn a_fix_that_regresses_is_not_converged() {
        let t = baseline();
        let j = t.judge(&results(&[
            ("crc8", true),
            ("crc16", true),
            ("crc32", false),
        ]));
        assert_eq!(j.regressed, ["crc32"]);
        let d = fix_mode(&input(3, &j, &[]));
        assert_eq!(d.decision.outcome, Outcome::NextIteration);
        assert_eq!(d.verdict, Some(IterationVerdict::Regressed));
        assert_eq!(d.decision.reason, "regression: crc32 broke");
    }

    #[test]
    fn a_fix_converges_after_its_confirmation_runs() {
        let t = baseline();
        let j = t.judge(&results(&[
            ("crc8", true),
            ("crc16", true),
            ("crc32", true),
        ]));
        let mut i = input(4, &j, &[]);
        i.confirm_runs = 2;
        assert_eq!(fix_mode(&i).decision.outcome, Outcome::Rerun);
        let earlier = [j.clone()];
        i.earlier_on_image = &earlier;
        let d = fix_mode(&i);
        assert_eq!(d.decision.outcome, Outcome::Fixed);
        assert_eq!(d.verdict, Some(IterationVerdict::Fixed));
    }

    #[test]
    fn disagreeing_runs_of_one_image_rerun_until_the_sequential_rule_decides() {
        let t = baseline();
        let good = t.judge(&results(&[
            ("crc8", true),
            ("crc16", true),
            ("crc32", true),
        ]));
        let bad = t.judge(&results(&[
            ("crc8", true),
            ("crc16", false),
            ("crc32", true),
        ]));
        let earlier = [good.clone()];
        let mut i = input(2, &bad, &earlier);
        i.confirm_runs = 2;
        i.flaky_reruns = MAX_FLAKY_RERUNS;
        let d = fix_mode(&i);
        assert_eq!(d.decision.outcome, Outcome::Rerun);
        assert_eq!(
            d.decision.reason,
            "flaky: fixed on 1 of 2 runs of the same image, rate 0.50 [0.09, 0.91]; run 3 of at most 10"
        );
        // One failure among fixes: decided after 8 runs (7 of 8, [0.53, 0.98]), not at the cap.
        let mut seven = vec![good.clone(); 5];
        seven.push(bad.clone());
        i.earlier_on_image = &seven[..];
        i.judgement = &good;
        assert_eq!(fix_mode(&i).decision.outcome, Outcome::Rerun, "7 runs");
        let mut eight = seven.clone();
        eight.push(good.clone());
        i.earlier_on_image = &eight;
        let d = fix_mode(&i);
        assert_eq!(d.verdict, Some(IterationVerdict::Flaky));
        assert_eq!(d.decision.outcome, Outcome::NextIteration);
        assert!(
            d.decision.reason.contains("fixes more often than not"),
            "{}",
            d.decision.reason
        );
        // Evenly split: runs up to the cap, then undecided.
        i.flaky_reruns = 2;
        let split = [good.clone(), bad.clone(), good.clone()];
        i.earlier_on_image = &split;
        i.judgement = &bad;
        let d = fix_mode(&i);
        assert_eq!(d.verdict, Some(IterationVerdict::Flaky));
        assert!(
            d.decision.reason.contains("(undecided)"),
            "{}",
            d.decision.reason
        );
    }

    #[test]
    fn stops_on_no_progress_max_iterations_or_no_candidates() {
        let t = baseline();
        let j = t.judge(&results(&[
            ("crc8", true),
            ("crc16", false),
            ("crc32", true),
        ]));
        let mut i = input(2, &j, &[]);
        i.no_progress = 2;
        let d = fix_mode(&i);
        assert_eq!(d.decision.outcome, Outcome::GiveUp);
        assert!(
            d.decision.reason.ends_with("no progress for 3 iterations"),
            "{}",
            d.decision.reason
        );
        let mut i = input(10, &j, &[]);
        i.max_iterations = 10;
        assert!(fix_mode(&i)
            .decision
            .reason
            .ends_with("max iterations (10) reached"));
        let mut i = input(1, &j, &[]);
        i.candidates_left = false;
        assert!(fix_mode(&i).decision.reason.ends_with("no more candidates"));
    }

    #[test]
    fn partial_progress_resets_the_no_progress_count() {
        let t = Targets::from_baseline(&results(&[("a", false), ("b", false)]), &[]);
        let j = t.judge(&results(&[("a", true), ("b", false)]));
        let mut i = input(1, &j, &[]);
        i.no_progress = 2;
        let d = fix_mode(&i);
        assert_eq!(d.verdict, Some(IterationVerdict::Partial));
        assert_eq!(d.no_progress, 0);
        assert_eq!(d.decision.outcome, Outcome::NextIteration);
    }

    #[test]
    fn after_a_broken_baseline_build_every_test_that_runs_must_pass() {
        let t = Targets::broken_build(&[]);
        let j = t.judge(&results(&[("a", true), ("b", true)]));
        assert!(j.is_fix());
        let j = t.judge(&results(&[("a", true), ("b", false)]));
        assert_eq!(j.still_failing, ["b"]);
    }
}
