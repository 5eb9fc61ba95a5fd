//! The result model every harness parser produces, whatever the firmware printed.

use serde::{Deserialize, Serialize};

/// How one test case ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[derive(schemars::JsonSchema)]
pub enum CaseStatus {
    Pass,
    Fail,
    Ignore,
    /// The image crashed while this case was running.
    Crash,
    /// The image stopped making progress while this case was running.
    Hang,
    /// The case was expected (announced, or counted by the summary) but never reported.
    Missing,
}

/// The case that takes a crash or hang nobody can blame on a test: the run's own, not a test,
/// so counts of tests leave it out.
pub const RUN_CASE: &str = "(run)";

/// One test case as the harness reported it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TestCase {
    pub name: String,
    pub status: CaseStatus,
    pub message: Option<String>,
    pub file: Option<String>,
    pub line: Option<u32>,
}

/// The harness's own summary line, e.g. Unity's `5 Tests 1 Failures 0 Ignored`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    pub tests: u32,
    pub failures: u32,
    pub ignored: u32,
    /// The final word after the summary: `OK` is true, `FAIL` false, absent None.
    pub ok: Option<bool>,
}

/// What an attempt's results mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[derive(schemars::JsonSchema)]
pub enum Verdict {
    Pass,
    Fail,
    /// The same image gave different verdicts on different attempts.
    Flaky,
    /// The environment, not the firmware, decided the outcome.
    EnvError,
    /// The output cannot be trusted (e.g. the summary disagrees with the case lines).
    Inconclusive,
}

/// The parsed results of one attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestResults {
    /// Harness name, e.g. `unity`.
    pub harness: String,
    pub cases: Vec<TestCase>,
    pub summary: Option<Summary>,
    pub verdict: Verdict,
    /// Why the verdict is what it is, in plain words (one entry per reason).
    pub notes: Vec<String>,
}
