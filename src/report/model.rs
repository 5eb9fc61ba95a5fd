//! The report a run leaves behind: the types serialised to `report.json` and the small pure helpers
//! the writers and the terminal summary share (counts, crash and location text, durations). No I/O.

use crate::analysis::lint::{Finding, Format};
use crate::analysis::{CrashReport, Diagnostic, HandlerSite, Location, Severity};
use crate::bisect::{BisectStep, Confidence};
use crate::capture::nonce::NonceRecord;
use crate::capture::RunEnd;
use crate::dut::lease::LeaseInfo;
use crate::machine::flaky::{self, Call, Interval};
use crate::machine::{ErrorClass, State};
use crate::results::{CaseStatus, TestCase, Verdict, RUN_CASE};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Which command produced the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[derive(schemars::JsonSchema)]
pub enum Command {
    Test,
    Run,
    Bisect,
}

impl Command {
    /// The interface name, e.g. `test`.
    pub fn name(self) -> &'static str {
        match self {
            Command::Test => "test",
            Command::Run => "run",
            Command::Bisect => "bisect",
        }
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How the run ended. `run` and `bisect` end in SUCCESS, FAILURE or ABORTED; `test` ends in
/// PASSED, FAILED or ERROR.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[derive(schemars::JsonSchema)]
pub enum Status {
    Success,
    Failure,
    Aborted,
    Passed,
    Failed,
    Error,
}

impl Status {
    /// The interface name, e.g. `PASSED`.
    pub fn name(self) -> &'static str {
        match self {
            Status::Success => "SUCCESS",
            Status::Failure => "FAILURE",
            Status::Aborted => "ABORTED",
            Status::Passed => "PASSED",
            Status::Failed => "FAILED",
            Status::Error => "ERROR",
        }
    }

    /// True for the statuses that mean "what was asked for happened".
    pub fn is_ok(self) -> bool {
        match self {
            Status::Success | Status::Passed => true,
            Status::Failure | Status::Aborted | Status::Failed | Status::Error => false,
        }
    }

    /// Whether this status belongs to `command` (`test` has its own three).
    pub fn fits(self, command: Command) -> bool {
        let test_status = match self {
            Status::Passed | Status::Failed | Status::Error => true,
            Status::Success | Status::Failure | Status::Aborted => false,
        };
        match command {
            Command::Test => test_status,
            Command::Run | Command::Bisect => !test_status,
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The build step of the last iteration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BuildSummary {
    pub command: String,
    pub success: bool,
    pub duration_ms: u64,
    /// `build.log`, relative to the run directory.
    pub log: String,
    pub diagnostics: Vec<Diagnostic>,
}

impl BuildSummary {
    /// Number of diagnostics with the given severity.
    pub fn count(&self, severity: Severity) -> usize {
        self.diagnostics
            .iter()
            .filter(|d| d.severity == severity)
            .count()
    }

    /// `built in 3.2 s (0 errors, 2 warnings)`: the build's outcome in one phrase.
    pub fn result_text(&self) -> String {
        format!(
            "{} in {} ({}, {})",
            if self.success { "built" } else { "failed" },
            format_duration(self.duration_ms),
            plural(self.count(Severity::Error), "error"),
            plural(self.count(Severity::Warning), "warning")
        )
    }

    /// The first `max` diagnostics as the compiler printed them, and how many more the log has.
    pub fn first_diagnostics(&self, max: usize) -> (Vec<String>, usize) {
        let shown = self
            .diagnostics
            .iter()
            .take(max)
            .map(describe_diagnostic)
            .collect();
        (shown, self.diagnostics.len().saturating_sub(max))
    }
}

/// One boot of the image in the last test run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AttemptSummary {
    /// 1-based.
    pub attempt: u32,
    pub verdict: Verdict,
    /// How the attempt ended, short: `verdict`, `exit 1`, `crash`, `timeout`, `stopped after an assertion (N ms quiet)`, ...
    pub end: String,
    /// The target's own exit code when it exited through semihosting.
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    /// `console.log` of this attempt, relative to the run directory.
    pub console_log: String,
    pub passed: usize,
    pub failed: usize,
    /// The nonce handed to the image and whether it printed it (None when the backend could not
    /// take one): lines before a required nonce were ignored as left from an earlier run.
    #[serde(default)]
    pub nonce: Option<NonceRecord>,
    /// The attempt's crash (PC, LR, fault bits, function, file:line), so every attempt of a
    /// `--repeat` run keeps its own; absent when the attempt did not crash. Filled in for the
    /// report (the run context keeps it beside the summary).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crash: Option<CrashReport>,
}

impl AttemptSummary {
    /// The attempt's facts as the reports' table shows them: number, verdict, how it ended, exit
    /// code (empty without one), duration, passed, failed, where it crashed (empty without a
    /// crash). Each renderer escapes them and adds the console log its own way (a code span, a
    /// link).
    pub fn cells(&self) -> [String; 8] {
        [
            self.attempt.to_string(),
            verdict_name(self.verdict).to_string(),
            self.end.clone(),
            self.exit_code
                .map(|code| code.to_string())
                .unwrap_or_default(),
            format_duration(self.duration_ms),
            self.passed.to_string(),
            self.failed.to_string(),
            self.crash.as_ref().map(crash_headline).unwrap_or_default(),
        ]
    }

    /// The short `end` text for how a capture ended.
    pub fn end_text(end: &RunEnd) -> String {
        match end {
            RunEnd::Verdict => "verdict".to_string(),
            RunEnd::Exited { code } => format!("exit {code}"),
            RunEnd::Crashed => "crash".to_string(),
            RunEnd::Timeout => "timeout".to_string(),
            RunEnd::Stopped { quiet_ms } => {
                format!("stopped after an assertion ({quiet_ms} ms quiet)")
            }
            RunEnd::RunnerDied {
                signal: Some(signal),
                ..
            } => format!("runner killed by signal {signal}"),
            RunEnd::RunnerDied {
                signal: None,
                code: Some(code),
            } => format!("runner died with status {code}"),
            RunEnd::RunnerDied {
                signal: None,
                code: None,
            } => "runner died".to_string(),
            RunEnd::Cancelled => "cancelled".to_string(),
            RunEnd::PortLost => "console port lost".to_string(),
        }
    }

    /// The target's exit code, when the capture ended with one.
    pub fn exit_code_of(end: &RunEnd) -> Option<i32> {
        match end {
            RunEnd::Exited { code } => Some(*code),
            RunEnd::Verdict
            | RunEnd::Crashed
            | RunEnd::Timeout
            | RunEnd::Stopped { .. }
            | RunEnd::RunnerDied { .. }
            | RunEnd::Cancelled
            | RunEnd::PortLost => None,
        }
    }
}

/// The lint stage on the last image it judged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LintSummary {
    pub iteration: u32,
    /// The profile's lint command; None when only the build's warnings are judged.
    pub command: Option<String>,
    pub format: Format,
    /// `lint.log`, relative to the run directory (None without a command).
    pub log: Option<String>,
    /// `lint.json` (every finding on the image), relative to the run directory.
    pub findings_file: String,
    /// How many findings the image has, the build's warnings included.
    pub findings: usize,
    /// How many the unpatched tree had; None when there is nothing to compare with.
    pub baseline_findings: Option<usize>,
    /// The findings the unpatched tree did not have.
    pub new_findings: Vec<Finding>,
    pub verdict: LintVerdict,
}

/// What the lint stage made of an image's findings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LintVerdict {
    /// The unpatched tree's findings, recorded as the baseline.
    Baseline,
    /// No finding the baseline did not have.
    Clean,
    /// New findings: the candidate was rolled back (LINT_FAILURE).
    Rejected,
    /// New findings, reported only (`new_findings = "warn"`).
    Warned,
    /// Nothing to compare with (`fwfix test`, or a baseline that did not build): reported only.
    Reported,
}

impl LintVerdict {
    pub fn words(self) -> &'static str {
        match self {
            LintVerdict::Baseline => "baseline recorded",
            LintVerdict::Clean => "no new findings",
            LintVerdict::Rejected => "new findings: rejected",
            LintVerdict::Warned => "new findings: reported only",
            LintVerdict::Reported => "reported only (no baseline to compare with)",
        }
    }
}

/// One candidate patch of a fix run's round, and what the governor made of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CandidateSummary {
    pub iteration: u32,
    /// `c1`, `c2`, ... within the iteration.
    pub id: String,
    pub origin: String,
    /// `ranked`, `dropped` (or `pending` when the run stopped during its review).
    pub verdict: String,
    /// 1 is tried first; None when dropped.
    pub rank: Option<u32>,
    /// The class of a dropped candidate's failed check.
    pub error_class: Option<ErrorClass>,
    pub changed_lines: usize,
    pub reason: String,
    /// Lint findings its trial build added over the baseline's: it ranks after every clean
    /// candidate that builds.
    #[serde(default)]
    pub new_findings: Vec<Finding>,
}

impl CandidateSummary {
    /// The facts as the reports' table shows them: iteration, id, origin, verdict (with the rank),
    /// changed lines, reason. Each renderer escapes them its own way.
    pub fn cells(&self) -> [String; 6] {
        let verdict = match (self.rank, self.error_class) {
            (Some(rank), _) => format!("{} #{rank}", self.verdict),
            (None, Some(class)) => format!("{} ({class})", self.verdict),
            (None, None) => self.verdict.clone(),
        };
        [
            self.iteration.to_string(),
            self.id.clone(),
            self.origin.clone(),
            verdict,
            self.changed_lines.to_string(),
            self.reason.clone(),
        ]
    }
}

/// How often one test passed over the attempts of a `--repeat` run, with the rate's Wilson 95%
/// interval and the flaky call ([`crate::machine::flaky`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PassCount {
    pub name: String,
    pub passed: u32,
    /// Attempts that reported this test at all.
    pub runs: u32,
    /// `passed / runs` (0 without runs).
    #[serde(default)]
    pub rate: f64,
    /// The Wilson 95% interval of the rate (None without runs, and in reports of older fwfix).
    #[serde(default)]
    pub interval: Option<Interval>,
    /// PASS, FAIL or FLAKY (flaky when the interval excludes both 0 and 1).
    #[serde(default)]
    pub call: Option<Call>,
}

// The rate and the interval's ends come from counts and are never NaN, so equality is total.
impl Eq for PassCount {}

impl PassCount {
    /// The count of a test that passed `passed` of `runs` times, with its rate, interval and call.
    pub fn new(name: impl Into<String>, passed: u32, runs: u32) -> PassCount {
        PassCount {
            name: name.into(),
            passed,
            runs,
            rate: if runs == 0 {
                0.0
            } else {
                f64::from(passed) / f64::from(runs)
            },
            interval: flaky::wilson(passed, runs, flaky::Z95),
            call: flaky::call(passed, runs),
        }
    }

    /// `19/20 passed, 0.95 [0.76, 0.99], FLAKY`.
    pub fn describe(&self) -> String {
        let call = call_name(self.call);
        format!(
            "{}/{} passed, {}, {call}",
            self.passed,
            self.runs,
            flaky::describe(self.passed, self.runs)
        )
    }
}

/// The interface name of a flaky call, e.g. `FLAKY` (`no runs` without one).
pub fn call_name(call: Option<Call>) -> &'static str {
    match call {
        Some(Call::Pass) => "PASS",
        Some(Call::Fail) => "FAIL",
        Some(Call::Flaky) => "FLAKY",
        None => "no runs",
    }
}

/// Per-test pass counts over several attempts, in the order tests were first seen.
pub fn pass_counts<'a>(attempts: impl IntoIterator<Item = &'a [TestCase]>) -> Vec<PassCount> {
    let mut counts: Vec<(String, u32, u32)> = Vec::new();
    for cases in attempts {
        for case in cases {
            let index = match counts.iter().position(|c| c.0 == case.name) {
                Some(index) => index,
                None => {
                    counts.push((case.name.clone(), 0, 0));
                    counts.len() - 1
                }
            };
            let count = &mut counts[index];
            count.2 += 1;
            if case.status == CaseStatus::Pass {
                count.1 += 1;
            }
        }
    }
    counts
        .into_iter()
        .map(|(name, passed, runs)| PassCount::new(name, passed, runs))
        .collect()
}

/// Tokens a model strategy spent: report.json's `tokens`. A response that carried no usage adds
/// nothing to the counts and one to `unknown_responses`, so an unknown is never read as zero.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Tokens {
    pub prompt: u64,
    pub completion: u64,
    pub total: u64,
    /// The run's budget (`[strategy.llm] token_budget`), when one is set.
    pub budget: Option<u64>,
    /// Responses whose usage the endpoint did not report.
    pub unknown_responses: u32,
    /// The same counts per iteration, in order.
    pub per_iteration: Vec<IterationTokens>,
}

/// One iteration's share of [`Tokens`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct IterationTokens {
    pub iteration: u32,
    pub prompt: u64,
    pub completion: u64,
    pub total: u64,
    pub unknown_responses: u32,
}

/// A culprit's revert that later work conflicts with: report.json's `revert_conflict`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RevertConflict {
    /// The culprit (short id) and its subject.
    pub commit: String,
    pub subject: String,
    /// The paths that conflict, sorted.
    pub paths: Vec<String>,
}

/// Everything a run leaves for people and scripts. `report.json` is this struct; the field names
/// are part of the interface. The optional outcome fields (`fixed`, `patch`, `branch`, `culprit`)
/// are written as `null` when absent, never left out, so scripts can rely on the keys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Report {
    /// The fwfix version that wrote the report.
    pub version: String,
    pub run_id: String,
    pub command: Command,
    pub status: Status,
    pub final_state: State,
    /// Patch iterations tried (0 for `test`).
    pub iterations: u32,
    pub error_class: Option<ErrorClass>,
    /// One line: what happened and why.
    pub message: String,
    pub started_at: DateTime<Utc>,
    pub finished_at: DateTime<Utc>,
    pub duration_ms: u64,
    pub repo: String,
    pub board: String,
    pub profile: String,
    /// The board's lease: who held it for this run, how long the run waited, whose lease it took
    /// over. None for a board that needs no lease (QEMU).
    #[serde(default)]
    pub lease: Option<LeaseInfo>,
    #[serde(default)]
    pub verdict: Option<Verdict>,
    /// The cases of the last test run.
    pub cases: Vec<TestCase>,
    pub crash: Option<CrashReport>,
    /// Where a hung image was stuck, when it could be read.
    #[serde(default)]
    pub hang_site: Option<Location>,
    /// The interrupt handler the core was stopped in when it was sampled, when it was in one:
    /// `hang_site` is then the code that handler interrupted.
    #[serde(default)]
    pub hang_handler: Option<HandlerSite>,
    /// An attempt that timed out: what its console did (printed nothing at all, went quiet after
    /// a line, was still printing) and what that suggests.
    #[serde(default)]
    pub console_silence: Option<String>,
    #[serde(default)]
    pub build: Option<BuildSummary>,
    /// The lint stage on the last image it judged (profiles with a `[lint]` table).
    #[serde(default)]
    pub lint: Option<LintSummary>,
    #[serde(default)]
    pub attempts: Vec<AttemptSummary>,
    #[serde(default)]
    pub pass_counts: Vec<PassCount>,
    /// `run`: the target tests that now pass.
    pub fixed: Option<Vec<String>>,
    /// `run`: path of `fix.patch`.
    pub patch: Option<String>,
    /// `run`: the branch holding the fix.
    pub branch: Option<String>,
    /// `run`: set when the fix applies only on top of the owner's uncommitted work (not to HEAD
    /// alone): the files the fix commit takes with that work in them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix_needs_uncommitted: Option<Vec<String>>,
    /// `bisect`: the first bad commit.
    pub culprit: Option<String>,
    /// `bisect`: every commit tested, in order.
    #[serde(default)]
    pub steps: Vec<BisectStep>,
    /// `bisect`: how sure the answer is, in [0, 1] (see [`crate::bisect::confidence`]).
    #[serde(default)]
    pub confidence: Option<Confidence>,
    /// `run`: every candidate patch of every round, with its verdict and why.
    #[serde(default)]
    pub candidates: Vec<CandidateSummary>,
    #[serde(default)]
    pub notes: Vec<String>,
    /// Every power cycle of the board during the run (a hang retried once before it was
    /// trusted), in order.
    #[serde(default)]
    pub power_cycles: Vec<PowerCycle>,
    /// `run` with a model strategy: the tokens it spent.
    #[serde(default)]
    pub tokens: Option<Tokens>,
    /// `run --strategy revert`: the culprit's revert conflicted and was not forced.
    #[serde(default)]
    pub revert_conflict: Option<RevertConflict>,
}

/// One power cycle of the board.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PowerCycle {
    pub iteration: u32,
    /// The attempt run again after it.
    pub attempt: u32,
    /// Why: what the attempt before it did.
    pub reason: String,
    /// The power commands' output, relative to the run directory.
    pub log: String,
}

impl Report {
    /// A report with the required facts set and everything else empty; set the rest as fields.
    pub fn new(
        run_id: impl Into<String>,
        command: Command,
        status: Status,
        final_state: State,
        started_at: DateTime<Utc>,
        finished_at: DateTime<Utc>,
    ) -> Report {
        let duration_ms = (finished_at - started_at)
            .num_milliseconds()
            .try_into()
            .unwrap_or(0);
        Report {
            version: env!("CARGO_PKG_VERSION").to_string(),
            run_id: run_id.into(),
            command,
            status,
            final_state,
            iterations: 0,
            error_class: None,
            message: String::new(),
            started_at,
            finished_at,
            duration_ms,
            repo: String::new(),
            board: String::new(),
            profile: String::new(),
            lease: None,
            verdict: None,
            cases: Vec::new(),
            crash: None,
            hang_site: None,
            hang_handler: None,
            console_silence: None,
            build: None,
            lint: None,
            attempts: Vec::new(),
            pass_counts: Vec::new(),
            fixed: None,
            patch: None,
            branch: None,
            fix_needs_uncommitted: None,
            culprit: None,
            steps: Vec::new(),
            confidence: None,
            candidates: Vec::new(),
            notes: Vec::new(),
            power_cycles: Vec::new(),
            tokens: None,
            revert_conflict: None,
        }
    }

    /// How the cases of the last test run ended.
    pub fn counts(&self) -> CaseCounts {
        CaseCounts::of(&self.cases)
    }
}

/// Cases of one test run, by status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CaseCounts {
    pub passed: usize,
    pub failed: usize,
    pub ignored: usize,
    pub crashed: usize,
    pub hung: usize,
    pub missing: usize,
    /// The run itself crashed or hung where no test could be blamed (the `(run)` case): said,
    /// but no test, so not in [`CaseCounts::total`].
    pub run: Option<CaseStatus>,
}

impl CaseCounts {
    pub fn of(cases: &[TestCase]) -> CaseCounts {
        let mut counts = CaseCounts::default();
        for case in cases {
            if case.name == RUN_CASE {
                counts.run = Some(case.status);
                continue;
            }
            match case.status {
                CaseStatus::Pass => counts.passed += 1,
                CaseStatus::Fail => counts.failed += 1,
                CaseStatus::Ignore => counts.ignored += 1,
                CaseStatus::Crash => counts.crashed += 1,
                CaseStatus::Hang => counts.hung += 1,
                CaseStatus::Missing => counts.missing += 1,
            }
        }
        counts
    }

    pub fn total(&self) -> usize {
        self.passed + self.failed + self.ignored + self.crashed + self.hung + self.missing
    }

    /// `4 passed, 1 failed, 1 crashed` — the zero counts after `passed` are left out.
    pub fn describe(&self) -> String {
        let mut parts = vec![format!("{} passed", self.passed)];
        for (count, word) in [
            (self.failed, "failed"),
            (self.crashed, "crashed"),
            (self.hung, "hung"),
            (self.missing, "missing"),
            (self.ignored, "ignored"),
        ] {
            if count > 0 {
                parts.push(format!("{count} {word}"));
            }
        }
        match self.run {
            Some(CaseStatus::Crash) => parts.push("the run crashed outside any test".into()),
            Some(CaseStatus::Hang) => parts.push("the run hung outside any test".into()),
            Some(_) | None => {}
        }
        parts.join(", ")
    }
}

/// What an interrupted run's cases that never reported say: the run stopped, the firmware
/// did not fail to report. Their status stays MISSING, as the report's contract names it.
pub fn mark_interrupted(cases: &mut [TestCase]) {
    for case in cases
        .iter_mut()
        .filter(|c| c.status == CaseStatus::Missing && c.message.is_none())
    {
        case.message = Some("not run: the run was interrupted".to_string());
    }
}

/// The interface name of a case status, e.g. `PASS`.
pub fn case_status_name(status: CaseStatus) -> &'static str {
    match status {
        CaseStatus::Pass => "PASS",
        CaseStatus::Fail => "FAIL",
        CaseStatus::Ignore => "IGNORE",
        CaseStatus::Crash => "CRASH",
        CaseStatus::Hang => "HANG",
        CaseStatus::Missing => "MISSING",
    }
}

/// The interface name of a verdict, e.g. `ENV_ERROR`.
pub fn verdict_name(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Pass => "PASS",
        Verdict::Fail => "FAIL",
        Verdict::Flaky => "FLAKY",
        Verdict::EnvError => "ENV_ERROR",
        Verdict::Inconclusive => "INCONCLUSIVE",
    }
}

/// `file:line`, `file`, or nothing.
pub fn file_line(file: Option<&str>, line: Option<u32>) -> Option<String> {
    match (file, line) {
        (Some(file), Some(line)) => Some(format!("{file}:{line}")),
        (Some(file), None) => Some(file.to_string()),
        (None, _) => None,
    }
}

/// `crc_update (src/crc.c:17)`, falling back to whatever is known.
fn describe_code(function: Option<&str>, file: Option<&str>, line: Option<u32>) -> Option<String> {
    match (function, file_line(file, line)) {
        (Some(function), Some(place)) => Some(format!("{function} ({place})")),
        (Some(function), None) => Some(function.to_string()),
        (None, Some(place)) => Some(place),
        (None, None) => None,
    }
}

/// A symbolised address in one phrase: `wait_ready (src/uart.c:33) at 0x00000210`.
pub fn describe_location(location: &Location) -> String {
    match describe_code(
        location.function.as_deref(),
        location.file.as_deref(),
        location.line,
    ) {
        Some(code) => format!("{code} at {}", location.address),
        None => location.address.clone(),
    }
}

/// Where a hung image was stuck, in one phrase: the hang site, and the handler the core was
/// stopped in above it when it was in one.
pub fn describe_hang(site: &Location, handler: Option<&HandlerSite>) -> String {
    let mut text = describe_location(site);
    if let Some(h) = handler {
        text.push_str(&format!(
            " (the core was stopped inside {}'s handler, {}, which had interrupted it)",
            h.exception,
            describe_location(&h.location)
        ));
    }
    text
}

/// Where and what the crash was, in one phrase: `HardFault in crc_update (src/crc.c:17)`, or
/// `HardFault at PC 0x00000008` when the address could not be symbolised.
pub fn crash_headline(crash: &CrashReport) -> String {
    let exception = crash.exception.as_deref().unwrap_or("fault");
    match (
        describe_code(crash.function.as_deref(), crash.file.as_deref(), crash.line),
        &crash.pc,
    ) {
        (Some(code), _) => format!("{exception} in {code}"),
        (None, Some(pc)) => format!("{exception} at PC {pc}"),
        (None, None) => format!("{exception} at an unknown location"),
    }
}

/// When the attempts of one image crashed in more than one place, says where each did:
/// `crash sites differ: attempts 1, 3: HardFault in events_post (src/events.c:17); attempt 2:
/// HardFault in sensor_read (src/sensor.c:44)`. A crash that moves between runs of the same image
/// is the mark of a race or of memory corruption; the same site every time says neither. A site
/// is the function, file and line (the PC when nothing could be named); attempts that did not
/// crash are left out. None with fewer than two sites.
pub fn crash_sites_differ(attempts: &[AttemptSummary]) -> Option<String> {
    let mut sites: Vec<(String, Vec<u32>)> = Vec::new();
    for attempt in attempts {
        let Some(crash) = &attempt.crash else {
            continue;
        };
        let site = crash_headline(crash);
        match sites.iter_mut().find(|(s, _)| *s == site) {
            Some((_, numbers)) => numbers.push(attempt.attempt),
            None => sites.push((site, vec![attempt.attempt])),
        }
    }
    if sites.len() < 2 {
        return None;
    }
    let each: Vec<String> = sites
        .iter()
        .map(|(site, numbers)| {
            let list: Vec<String> = numbers.iter().map(u32::to_string).collect();
            let word = if numbers.len() == 1 {
                "attempt"
            } else {
                "attempts"
            };
            format!("{word} {}: {site}", list.join(", "))
        })
        .collect();
    Some(format!("crash sites differ: {}", each.join("; ")))
}

/// The crash as a few lines for people: summary, location, caller, registers and fault bits.
pub fn crash_lines(crash: &CrashReport) -> Vec<String> {
    let mut lines = Vec::new();
    if !crash.summary.is_empty() {
        lines.push(crash.summary.clone());
    }
    lines.push(crash_headline(crash));
    if let Some(caller) = &crash.caller {
        lines.push(format!("called from {}", describe_location(caller)));
    }
    let registers: Vec<String> = [
        ("PC", &crash.pc),
        ("LR", &crash.lr),
        ("CFSR", &crash.cfsr),
        ("HFSR", &crash.hfsr),
    ]
    .into_iter()
    .filter_map(|(name, value)| value.as_ref().map(|v| format!("{name} {v}")))
    .collect();
    if !registers.is_empty() {
        lines.push(registers.join("  "));
    }
    if !crash.fault_bits.is_empty() {
        lines.push(format!("fault bits: {}", crash.fault_bits.join(", ")));
    }
    if let Some(address) = &crash.fault_address {
        lines.push(format!("faulting address {address}"));
    }
    if crash.lockup {
        lines.push("the core locked up (a fault inside the fault handler)".to_string());
    }
    lines
}

/// `1 error`, `2 errors`.
pub fn plural(count: usize, noun: &str) -> String {
    if count == 1 {
        format!("{count} {noun}")
    } else {
        format!("{count} {noun}s")
    }
}

/// `420 ms`, `3.2 s`, `2 min 05 s`.
pub fn format_duration(ms: u64) -> String {
    if ms < 1_000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        format!("{}.{} s", ms / 1_000, (ms % 1_000) / 100)
    } else {
        let seconds = ms / 1_000;
        format!("{} min {:02} s", seconds / 60, seconds % 60)
    }
}

/// A compiler diagnostic as the compiler would print it: `src/crc.c:12:5: error: expected ';'`.
pub fn describe_diagnostic(diagnostic: &Diagnostic) -> String {
    let severity = match diagnostic.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note => "note",
    };
    let place = match (&diagnostic.file, diagnostic.line, diagnostic.column) {
        (Some(file), Some(line), Some(column)) => format!("{file}:{line}:{column}: "),
        (Some(file), Some(line), None) => format!("{file}:{line}: "),
        (Some(file), None, _) => format!("{file}: "),
        (None, _, _) => format!("{}: ", diagnostic.tool),
    };
    format!("{place}{severity}: {}", diagnostic.message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(name: &str, status: CaseStatus) -> TestCase {
        TestCase {
            name: name.to_string(),
            status,
            message: None,
            file: None,
            line: None,
        }
    }

    #[test]
    fn status_fits_its_command() {
        assert!(Status::Passed.fits(Command::Test));
        assert!(Status::Error.fits(Command::Test));
        assert!(!Status::Success.fits(Command::Test));
        assert!(Status::Aborted.fits(Command::Run));
        assert!(Status::Failure.fits(Command::Bisect));
        assert!(!Status::Failed.fits(Command::Run));
    }

    #[test]
    fn pass_counts_follow_first_appearance_and_count_runs() {
        let first = vec![case("a", CaseStatus::Pass), case("b", CaseStatus::Fail)];
        let second = vec![case("b", CaseStatus::Pass), case("a", CaseStatus::Pass)];
        let third = vec![case("a", CaseStatus::Crash), case("c", CaseStatus::Pass)];
        let counts = pass_counts([first.as_slice(), second.as_slice(), third.as_slice()]);
        let got: Vec<(&str, u32, u32)> = counts
            .iter()
            .map(|c| (c.name.as_str(), c.passed, c.runs))
            .collect();
        assert_eq!(got, vec![("a", 2, 3), ("b", 1, 2), ("c", 1, 1)]);
        assert_eq!(counts[1].call, Some(Call::Flaky));
        assert_eq!(counts[2].call, Some(Call::Pass));
        assert_eq!(counts[0].describe(), "2/3 passed, 0.67 [0.21, 0.94], FLAKY");
        let json = serde_json::to_value(&counts[1]).unwrap();
        assert_eq!(json["rate"], 0.5);
        assert_eq!(json["call"], "FLAKY");
        assert!(json["interval"]["low"].as_f64().unwrap() > 0.0);
        // A count from an older fwfix (no rate) still loads.
        let old: PassCount = serde_json::from_str(r#"{"name":"a","passed":1,"runs":1}"#).unwrap();
        assert_eq!(old.interval, None);
    }

    #[test]
    fn counts_describe_leaves_out_zeroes() {
        let cases = vec![
            case("a", CaseStatus::Pass),
            case("b", CaseStatus::Fail),
            case("c", CaseStatus::Crash),
            case("d", CaseStatus::Pass),
        ];
        let counts = CaseCounts::of(&cases);
        assert_eq!(counts.total(), 4);
        assert_eq!(counts.describe(), "2 passed, 1 failed, 1 crashed");
        assert_eq!(CaseCounts::default().describe(), "0 passed");
    }

    /// The `(run)` case is the run's own stop, no test: said, not counted.
    #[test]
    fn the_run_case_is_said_but_not_counted_as_a_test() {
        let cases = vec![
            case("a", CaseStatus::Pass),
            case(RUN_CASE, CaseStatus::Hang),
            case("b", CaseStatus::Missing),
        ];
        let counts = CaseCounts::of(&cases);
        assert_eq!(counts.total(), 2);
        assert_eq!(
            counts.describe(),
            "1 passed, 1 missing, the run hung outside any test"
        );
    }

    #[test]
    fn end_text_is_short_and_plain() {
        assert_eq!(AttemptSummary::end_text(&RunEnd::Verdict), "verdict");
        assert_eq!(
            AttemptSummary::end_text(&RunEnd::Exited { code: 1 }),
            "exit 1"
        );
        assert_eq!(AttemptSummary::end_text(&RunEnd::Crashed), "crash");
        assert_eq!(AttemptSummary::end_text(&RunEnd::Timeout), "timeout");
        assert_eq!(
            AttemptSummary::end_text(&RunEnd::Stopped { quiet_ms: 500 }),
            "stopped after an assertion (500 ms quiet)"
        );
        assert_eq!(
            AttemptSummary::end_text(&RunEnd::PortLost),
            "console port lost"
        );
        assert_eq!(
            AttemptSummary::end_text(&RunEnd::RunnerDied {
                signal: Some(9),
                code: None
            }),
            "runner killed by signal 9"
        );
        assert_eq!(
            AttemptSummary::exit_code_of(&RunEnd::Exited { code: 42 }),
            Some(42)
        );
        assert_eq!(AttemptSummary::exit_code_of(&RunEnd::Timeout), None);
    }

    #[test]
    fn names_match_the_serialised_form() {
        for status in [
            CaseStatus::Pass,
            CaseStatus::Fail,
            CaseStatus::Ignore,
            CaseStatus::Crash,
            CaseStatus::Hang,
            CaseStatus::Missing,
        ] {
            let json = serde_json::to_value(status).unwrap();
            assert_eq!(json, case_status_name(status));
        }
        for verdict in [
            Verdict::Pass,
            Verdict::Fail,
            Verdict::Flaky,
            Verdict::EnvError,
            Verdict::Inconclusive,
        ] {
            let json = serde_json::to_value(verdict).unwrap();
            assert_eq!(json, verdict_name(verdict));
        }
    }

    #[test]
    fn an_interrupted_runs_missing_cases_say_it_was_interrupted() {
        let mut cases = vec![
            crate::report::test_support::case("a", CaseStatus::Pass, None, None),
            crate::report::test_support::case("b", CaseStatus::Missing, None, None),
            crate::report::test_support::case("c", CaseStatus::Missing, Some("own words"), None),
        ];
        mark_interrupted(&mut cases);
        assert_eq!(cases[0].message, None);
        assert_eq!(
            cases[1].message.as_deref(),
            Some("not run: the run was interrupted")
        );
        assert_eq!(cases[2].message.as_deref(), Some("own words"));
    }

    #[test]
    fn plural_counts() {
        assert_eq!(plural(0, "error"), "0 errors");
        assert_eq!(plural(1, "warning"), "1 warning");
        assert_eq!(plural(2, "error"), "2 errors");
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(format_duration(420), "420 ms");
        assert_eq!(format_duration(3_250), "3.2 s");
        assert_eq!(format_duration(125_000), "2 min 05 s");
    }

    #[test]
    fn crash_lines_name_site_registers_and_bits() {
        let crash = CrashReport {
            pc: Some("0x000001a4".into()),
            lr: Some("0x00000151".into()),
            cfsr: Some("0x00008200".into()),
            hfsr: Some("0x40000000".into()),
            function: Some("crc_update".into()),
            file: Some("src/crc.c".into()),
            line: Some(17),
            caller: Some(Location {
                address: "0x00000151".into(),
                function: Some("main".into()),
                file: Some("src/main.c".into()),
                line: Some(40),
            }),
            fault_bits: vec!["PRECISERR".into(), "BFARVALID".into(), "FORCED".into()],
            fault_address: Some("0xdeadbeef".into()),
            exception: Some("HardFault".into()),
            lockup: false,
            summary: "HardFault: precise bus error reading 0xdeadbeef".into(),
        };
        let lines = crash_lines(&crash);
        assert_eq!(
            lines,
            vec![
                "HardFault: precise bus error reading 0xdeadbeef",
                "HardFault in crc_update (src/crc.c:17)",
                "called from main (src/main.c:40) at 0x00000151",
                "PC 0x000001a4  LR 0x00000151  CFSR 0x00008200  HFSR 0x40000000",
                "fault bits: PRECISERR, BFARVALID, FORCED",
                "faulting address 0xdeadbeef",
            ]
        );
    }

    fn attempt_crashing_at(attempt: u32, site: Option<(&str, u32, &str)>) -> AttemptSummary {
        AttemptSummary {
            attempt,
            verdict: Verdict::Fail,
            end: "crash".into(),
            exit_code: None,
            duration_ms: 300,
            console_log: format!("iter-000/console-{attempt}.log"),
            passed: 0,
            failed: 1,
            nonce: None,
            crash: site.map(|(function, line, pc)| CrashReport {
                pc: Some(pc.into()),
                lr: None,
                cfsr: Some("0x00008200".into()),
                hfsr: None,
                function: (!function.is_empty()).then(|| function.to_string()),
                file: (!function.is_empty()).then(|| "src/sensor.c".to_string()),
                line: (!function.is_empty()).then_some(line),
                caller: None,
                fault_bits: vec![],
                fault_address: None,
                exception: Some("HardFault".into()),
                lockup: false,
                summary: String::new(),
            }),
        }
    }

    #[test]
    fn crash_sites_that_move_between_attempts_are_named_with_their_attempts() {
        let read = Some(("sensor_read", 70, "0x00000958"));
        let peek = Some(("sensor_peek", 78, "0x00000968"));
        let attempts = [
            attempt_crashing_at(1, read),
            attempt_crashing_at(2, peek),
            attempt_crashing_at(3, None),
            attempt_crashing_at(4, read),
        ];
        assert_eq!(
            crash_sites_differ(&attempts).as_deref(),
            Some(
                "crash sites differ: attempts 1, 4: HardFault in sensor_read (src/sensor.c:70); \
                 attempt 2: HardFault in sensor_peek (src/sensor.c:78)"
            )
        );
        // The same line every time (another PC on it, an attempt that did not crash) is one
        // site; so is a single crash.
        let same = [
            attempt_crashing_at(1, read),
            attempt_crashing_at(2, Some(("sensor_read", 70, "0x0000095a"))),
            attempt_crashing_at(3, None),
        ];
        assert_eq!(crash_sites_differ(&same), None);
        assert_eq!(crash_sites_differ(&same[..1]), None);
        assert_eq!(crash_sites_differ(&[]), None);
        // Nothing named: the PCs tell the sites apart.
        let unnamed = [
            attempt_crashing_at(1, Some(("", 0, "0x00000958"))),
            attempt_crashing_at(2, Some(("", 0, "0x00000968"))),
        ];
        assert_eq!(
            crash_sites_differ(&unnamed).as_deref(),
            Some(
                "crash sites differ: attempt 1: HardFault at PC 0x00000958; attempt 2: \
                 HardFault at PC 0x00000968"
            )
        );
        // The attempt's crash is in its row of the reports' tables.
        assert_eq!(
            attempts[1].cells()[7],
            "HardFault in sensor_peek (src/sensor.c:78)"
        );
        assert_eq!(attempts[2].cells()[7], "");
    }

    #[test]
    fn unsymbolised_crash_falls_back_to_pc() {
        let crash = CrashReport {
            pc: Some("0x00000008".into()),
            lr: None,
            cfsr: None,
            hfsr: None,
            function: None,
            file: None,
            line: None,
            caller: None,
            fault_bits: vec![],
            fault_address: None,
            exception: None,
            lockup: true,
            summary: String::new(),
        };
        assert_eq!(crash_headline(&crash), "fault at PC 0x00000008");
        let lines = crash_lines(&crash);
        assert_eq!(lines[0], "fault at PC 0x00000008");
        assert!(lines.iter().any(|l| l.contains("locked up")));
    }

    #[test]
    fn diagnostics_print_like_the_compiler() {
        let diagnostic = Diagnostic {
            severity: Severity::Error,
            tool: "compiler".into(),
            kind: "compile".into(),
            file: Some("src/crc.c".into()),
            line: Some(12),
            column: Some(5),
            message: "expected ';'".into(),
            log_line: 3,
        };
        assert_eq!(
            describe_diagnostic(&diagnostic),
            "src/crc.c:12:5: error: expected ';'"
        );
    }

    #[test]
    fn build_and_attempt_facts_every_renderer_shows() {
        let warning = |line| Diagnostic {
            severity: Severity::Warning,
            tool: "compiler".into(),
            kind: "compile".into(),
            file: Some("src/crc.c".into()),
            line: Some(line),
            column: None,
            message: "unused variable".into(),
            log_line: line as usize,
        };
        let build = BuildSummary {
            command: "make".into(),
            success: true,
            duration_ms: 3_200,
            log: "build.log".into(),
            diagnostics: vec![warning(1), warning(2), warning(3)],
        };
        assert_eq!(build.result_text(), "built in 3.2 s (0 errors, 3 warnings)");
        let (shown, more) = build.first_diagnostics(2);
        assert_eq!(
            shown,
            [
                "src/crc.c:1: warning: unused variable",
                "src/crc.c:2: warning: unused variable"
            ]
        );
        assert_eq!(more, 1);
        assert_eq!(build.first_diagnostics(5).1, 0);

        let attempt = AttemptSummary {
            attempt: 2,
            verdict: Verdict::Fail,
            end: "exit 1".into(),
            exit_code: Some(1),
            duration_ms: 420,
            console_log: "attempt-2/console.log".into(),
            passed: 3,
            failed: 1,
            nonce: None,
            crash: None,
        };
        assert_eq!(
            attempt.cells(),
            [
                "2",
                verdict_name(Verdict::Fail),
                "exit 1",
                "1",
                "420 ms",
                "3",
                "1",
                ""
            ]
        );
    }
}
