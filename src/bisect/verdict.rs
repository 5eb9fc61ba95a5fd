//! What one bisect step decided: the runs of a commit counted ([`Tally`]), the majority rule that
//! turns them into GOOD, BAD, SKIP or ERROR ([`judge`]), the step as report.json records it
//! ([`BisectStep`]), and how sure a whole search is ([`confidence`]). Pure; no I/O.

use serde::{Deserialize, Serialize};
use std::fmt;

/// What a step decided about its commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[derive(schemars::JsonSchema)]
pub enum StepVerdict {
    /// The tests pass (on a majority of the runs).
    Good,
    /// The tests fail (on a majority of the runs).
    Bad,
    /// The commit cannot be judged: it does not build, or its runs split evenly. Like `git bisect
    /// run`'s exit 125, the search goes on around it.
    Skip,
    /// The environment failed (QEMU would not start, a tool crashed): says nothing about the
    /// commit, which is tried again.
    Error,
}

impl StepVerdict {
    /// The interface name, e.g. `GOOD`.
    pub fn name(self) -> &'static str {
        match self {
            StepVerdict::Good => "GOOD",
            StepVerdict::Bad => "BAD",
            StepVerdict::Skip => "SKIP",
            StepVerdict::Error => "ERROR",
        }
    }
}

impl fmt::Display for StepVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a commit was tested.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[derive(schemars::JsonSchema)]
pub enum StepRole {
    /// The good ref, which must pass before anything else is believed.
    GoodCheck,
    /// The bad ref, which must fail.
    BadCheck,
    /// A commit the search picked.
    Probe,
    /// The culprit or its first parent tested again because a step on it was not unanimous.
    Verify,
}

/// The runs of one step, counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    /// Runs whose tests all passed.
    pub passed: u32,
    /// Runs with a failing, crashing or hanging test.
    pub failed: u32,
    /// Runs the environment spoiled, or whose output could not be read.
    pub undecided: u32,
}

impl Tally {
    /// No run disagreed with another, and every run counted.
    pub fn is_unanimous(&self) -> bool {
        self.undecided == 0 && (self.passed == 0 || self.failed == 0)
    }

    /// The share of the counted runs that agree with the larger side, in [0.5, 1]; 1 with no
    /// counted runs (nothing disagreed).
    pub fn agreement(&self) -> f64 {
        let counted = self.passed + self.failed;
        if counted == 0 {
            return 1.0;
        }
        f64::from(self.passed.max(self.failed)) / f64::from(counted)
    }
}

/// A verdict and the words that explain it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judged {
    pub verdict: StepVerdict,
    pub reason: String,
}

/// The majority rule for a step that built and ran: GOOD when more than half of the `runs` asked
/// for passed, BAD when more than half failed. Without a majority, ERROR when the environment
/// spoiled runs (trying again may settle it), SKIP when passes and failures split evenly.
pub fn judge(tally: Tally, runs: u32) -> Judged {
    let runs = runs.max(1);
    let Tally {
        passed,
        failed,
        undecided,
    } = tally;
    let of = |n: u32| {
        if runs == 1 {
            String::new()
        } else {
            format!(" on {n} of {runs} runs")
        }
    };
    if passed * 2 > runs {
        let reason = if failed == 0 {
            format!("the tests pass{}", of(passed))
        } else {
            format!("the tests pass{} (flaky: {failed} failed)", of(passed))
        };
        return Judged {
            verdict: StepVerdict::Good,
            reason,
        };
    }
    if failed * 2 > runs {
        let reason = if passed == 0 {
            format!("the tests fail{}", of(failed))
        } else {
            format!("the tests fail{} (flaky: {passed} passed)", of(failed))
        };
        return Judged {
            verdict: StepVerdict::Bad,
            reason,
        };
    }
    if undecided > 0 {
        return Judged {
            verdict: StepVerdict::Error,
            reason: format!(
                "no majority: {undecided} of {runs} runs failed in the environment \
                 ({passed} passed, {failed} failed)"
            ),
        };
    }
    Judged {
        verdict: StepVerdict::Skip,
        reason: format!("no majority: {passed} passed, {failed} failed"),
    }
}

/// One tested commit, as report.json lists it under `steps`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BisectStep {
    /// 1-based, in the order the steps ran.
    pub step: u32,
    pub role: StepRole,
    /// The full commit id.
    pub commit: String,
    /// The first line of its message.
    pub subject: String,
    pub verdict: StepVerdict,
    /// Runs asked for (`--runs`).
    pub runs: u32,
    pub passed: u32,
    pub failed: u32,
    pub duration_ms: u64,
    /// The step's own run directory (a full `fwfix test` run), relative to the bisect's.
    pub run_dir: String,
    pub reason: String,
    /// Every counted run agreed.
    pub unanimous: bool,
}

/// How sure an answer is, in [0, 1]. Never NaN, so it can be compared exactly.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize, Deserialize)]
#[serde(try_from = "f64", into = "f64")]
#[derive(schemars::JsonSchema)]
pub struct Confidence(f64);

impl Eq for Confidence {}

impl Confidence {
    pub const NONE: Confidence = Confidence(0.0);
    pub const FULL: Confidence = Confidence(1.0);

    /// Clamps to [0, 1] and rounds to three decimals (as people read it); NaN becomes 0.
    pub fn new(value: f64) -> Confidence {
        if value.is_nan() {
            return Confidence::NONE;
        }
        Confidence((value.clamp(0.0, 1.0) * 1000.0).round() / 1000.0)
    }

    pub fn value(self) -> f64 {
        self.0
    }
}

impl TryFrom<f64> for Confidence {
    type Error = String;

    fn try_from(value: f64) -> Result<Confidence, String> {
        if (0.0..=1.0).contains(&value) {
            Ok(Confidence(value))
        } else {
            Err(format!("confidence {value} is not in [0, 1]"))
        }
    }
}

impl From<Confidence> for f64 {
    fn from(c: Confidence) -> f64 {
        c.0
    }
}

impl fmt::Display for Confidence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.2}", self.0)
    }
}

/// How sure the answer of a search is: 0 without a verified culprit; otherwise the lowest
/// agreement among the steps that decided something (GOOD or BAD), where a step's agreement is
/// the share of its counted runs that sided with its majority. Every step unanimous and the
/// culprit verified gives 1.0; one step that passed 2 runs of 3 gives 0.67.
pub fn confidence(steps: &[BisectStep], verified: bool) -> Confidence {
    if !verified {
        return Confidence::NONE;
    }
    let lowest = steps
        .iter()
        .filter(|s| matches!(s.verdict, StepVerdict::Good | StepVerdict::Bad))
        .map(|s| {
            Tally {
                passed: s.passed,
                failed: s.failed,
                undecided: 0,
            }
            .agreement()
        })
        .fold(1.0_f64, f64::min);
    Confidence::new(lowest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(passed: u32, failed: u32, undecided: u32) -> Tally {
        Tally {
            passed,
            failed,
            undecided,
        }
    }

    fn step(verdict: StepVerdict, passed: u32, failed: u32) -> BisectStep {
        BisectStep {
            step: 1,
            role: StepRole::Probe,
            commit: "c".into(),
            subject: "s".into(),
            verdict,
            runs: passed + failed,
            passed,
            failed,
            duration_ms: 0,
            run_dir: "steps/01-c".into(),
            reason: String::new(),
            unanimous: passed == 0 || failed == 0,
        }
    }

    #[test]
    fn the_majority_of_the_runs_asked_for_decides() {
        assert_eq!(judge(tally(1, 0, 0), 1).verdict, StepVerdict::Good);
        assert_eq!(judge(tally(0, 1, 0), 1).verdict, StepVerdict::Bad);
        assert_eq!(judge(tally(2, 1, 0), 3).verdict, StepVerdict::Good);
        assert_eq!(judge(tally(1, 2, 0), 3).verdict, StepVerdict::Bad);
        assert_eq!(judge(tally(2, 0, 1), 3).verdict, StepVerdict::Good);
        let flaky = judge(tally(2, 1, 0), 3);
        assert_eq!(
            flaky.reason,
            "the tests pass on 2 of 3 runs (flaky: 1 failed)"
        );
        assert_eq!(judge(tally(0, 1, 0), 1).reason, "the tests fail");
    }

    #[test]
    fn without_a_majority_an_environment_failure_is_an_error_and_a_tie_a_skip() {
        let e = judge(tally(1, 1, 1), 3);
        assert_eq!(e.verdict, StepVerdict::Error);
        assert!(
            e.reason.contains("1 of 3 runs failed in the environment"),
            "{}",
            e.reason
        );
        assert_eq!(judge(tally(0, 0, 1), 1).verdict, StepVerdict::Error);
        let tie = judge(tally(1, 1, 0), 2);
        assert_eq!(tie.verdict, StepVerdict::Skip);
        assert_eq!(tie.reason, "no majority: 1 passed, 1 failed");
    }

    #[test]
    fn unanimity_and_agreement() {
        assert!(tally(3, 0, 0).is_unanimous());
        assert!(!tally(2, 1, 0).is_unanimous());
        assert!(!tally(2, 0, 1).is_unanimous());
        assert_eq!(tally(0, 0, 0).agreement(), 1.0);
        assert!((tally(2, 1, 0).agreement() - 2.0 / 3.0).abs() < 1e-9);
    }

    #[test]
    fn confidence_is_the_weakest_deciding_step_and_zero_unverified() {
        let unanimous = [
            step(StepVerdict::Good, 3, 0),
            step(StepVerdict::Bad, 0, 3),
            step(StepVerdict::Skip, 0, 0),
        ];
        assert_eq!(confidence(&unanimous, true), Confidence::FULL);
        assert_eq!(confidence(&unanimous, false), Confidence::NONE);
        let flaky = [
            step(StepVerdict::Good, 3, 0),
            step(StepVerdict::Good, 2, 1),
            step(StepVerdict::Bad, 1, 4),
        ];
        assert_eq!(confidence(&flaky, true).value(), 0.667);
        // A skipped step's runs decide nothing and do not lower it.
        let skipped = [step(StepVerdict::Good, 1, 0), step(StepVerdict::Skip, 1, 1)];
        assert_eq!(confidence(&skipped, true), Confidence::FULL);
    }

    #[test]
    fn confidence_stays_in_range_and_round_trips() {
        assert_eq!(Confidence::new(f64::NAN), Confidence::NONE);
        assert_eq!(Confidence::new(7.0), Confidence::FULL);
        assert_eq!(Confidence::new(-1.0), Confidence::NONE);
        let json = serde_json::to_string(&Confidence::new(2.0 / 3.0)).unwrap();
        assert_eq!(json, "0.667");
        let back: Confidence = serde_json::from_str(&json).unwrap();
        assert_eq!(back.value(), 0.667);
        assert!(serde_json::from_str::<Confidence>("1.5").is_err());
        assert_eq!(Confidence::new(2.0 / 3.0).to_string(), "0.67");
    }

    #[test]
    fn verdicts_serialise_by_their_interface_names() {
        let s = step(StepVerdict::Skip, 0, 0);
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["verdict"], "SKIP");
        assert_eq!(json["role"], "PROBE");
        assert_eq!(StepVerdict::Error.to_string(), "ERROR");
        let g = serde_json::to_value(StepRole::GoodCheck).unwrap();
        assert_eq!(g, "GOOD_CHECK");
    }
}
