//! What the MCP tools answer, with the JSON Schemas the server publishes for them: a finished
//! run's outcome (`test`, `run`, `bisect`, `boards check`), a log's triage, and the error of a
//! call that could not run — the exit-code class and message the CLI would print.

use crate::cli::Exit;
use crate::orchestrator::Finished;
use schemars::JsonSchema;
use serde::Serialize;

/// The exit-code class of a CLI exit status, as a word.
pub fn exit_class(exit: Exit) -> &'static str {
    match exit {
        Exit::Success => "success",
        Exit::Failed => "failed",
        Exit::Usage => "usage",
        Exit::Aborted => "aborted",
        Exit::Infrastructure => "infrastructure",
    }
}

/// A run that reached its end (whatever the verdict): what `fwfix test`, `run` and `bisect`
/// would exit with and what their report.json says.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RunOutcome {
    /// SUCCESS, FAILURE or ABORTED.
    pub status: String,
    /// The exit status `fwfix` would end with: 0 success, 1 tests failed / not converged,
    /// 2 usage or configuration, 3 aborted, 4 infrastructure.
    pub exit_code: i32,
    /// The exit status as a word: success, failed, usage, aborted, infrastructure.
    pub exit_class: String,
    /// The state machine's final state.
    pub final_state: String,
    /// PASS, FAIL, FLAKY, ENV_ERROR or INCONCLUSIVE; null when nothing was tested.
    pub verdict: Option<String>,
    /// One line: what happened and why.
    pub message: String,
    /// The machine's error class when the run failed for a reason other than its tests.
    pub error_class: Option<String>,
    /// The run directory: report.json, report.md, trace.jsonl, logs (also MCP resources).
    pub run_dir: String,
    /// The resource URI of the run's report.json.
    pub report_uri: String,
    /// The cases of the last test run.
    pub cases: Vec<CaseOutcome>,
    /// The crash, symbolised on the image that ran (fault, function, file:line), when there was
    /// one: report.json's `crash`.
    pub crash: Option<serde_json::Value>,
    /// `run`: the target tests that now pass.
    pub fixed: Option<Vec<String>>,
    /// `run`: the path of fix.patch.
    pub patch: Option<String>,
    /// `run`: the branch holding the fix.
    pub branch: Option<String>,
    /// `bisect`: the first bad commit.
    pub culprit: Option<String>,
    /// Patch iterations tried (0 for `test`).
    pub iterations: u32,
}

/// One test case as the harness reported it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CaseOutcome {
    pub name: String,
    /// PASS, FAIL, IGNORE, ...
    pub status: String,
    pub message: Option<String>,
    pub file: Option<String>,
    pub line: Option<u32>,
}

impl RunOutcome {
    pub fn of(finished: &Finished) -> RunOutcome {
        let exit = Exit::of_finished(finished);
        let report = &finished.report;
        RunOutcome {
            status: report.status.name().to_string(),
            exit_code: exit.code(),
            exit_class: exit_class(exit).to_string(),
            final_state: finished.final_state.name().to_string(),
            verdict: report.verdict.as_ref().map(word),
            message: report.message.clone(),
            error_class: finished.error_class.as_ref().map(word),
            run_dir: finished.run_dir.display().to_string(),
            report_uri: super::resources::uri_of(&finished.run_dir, crate::report::REPORT_JSON),
            cases: report
                .cases
                .iter()
                .map(|c| CaseOutcome {
                    name: c.name.clone(),
                    status: word(&c.status),
                    message: c.message.clone(),
                    file: c.file.clone(),
                    line: c.line,
                })
                .collect(),
            crash: report
                .crash
                .as_ref()
                .and_then(|c| serde_json::to_value(c).ok()),
            fixed: report.fixed.clone(),
            patch: report.patch.clone(),
            branch: report.branch.clone(),
            culprit: report.culprit.clone(),
            iterations: report.iterations,
        }
    }
}

/// A log's class and the lines that decided it (`fwfix triage --json`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TriageOutcome {
    /// The file classified, or `<text>` for inline text.
    pub file: String,
    /// TOOL_MISSING, FLASH_ERROR, ASSERT, CRASH, INFRA_ERROR, BUILD_ERROR, LINK_ERROR, HANG,
    /// TEST_FAILURE or PASS.
    pub class: String,
    /// 1-based lines that decided the class, ascending.
    pub lines: Vec<usize>,
    /// One sentence a person reads first: the deciding line's message.
    pub reason: String,
    /// The state machine's error class for this log; null when it shows a test result.
    pub error_class: Option<String>,
    /// Every line a rule claimed, in log order.
    pub matches: Vec<TriageMatch>,
}

/// One line a triage rule claimed.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TriageMatch {
    pub rule_id: String,
    pub class: String,
    pub line: usize,
    pub text: String,
}

impl TriageOutcome {
    pub fn of(file: String, triage: &crate::analysis::triage::Triage) -> TriageOutcome {
        TriageOutcome {
            file,
            class: triage.class.name().to_string(),
            lines: triage.lines.clone(),
            reason: triage.reason.clone(),
            error_class: triage.error_class().as_ref().map(word),
            matches: triage
                .matches
                .iter()
                .map(|m| TriageMatch {
                    rule_id: m.rule_id.clone(),
                    class: m.class.name().to_string(),
                    line: m.line,
                    text: m.text.clone(),
                })
                .collect(),
        }
    }
}

/// A call that could not do what it was asked: the exit-code class and message the CLI prints.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ErrorOutcome {
    /// The exit status `fwfix` would end with (2 usage or configuration, 3 aborted,
    /// 4 infrastructure, 1 failed).
    pub exit_code: i32,
    /// The exit status as a word.
    pub exit_class: String,
    /// What the CLI prints after `error: `.
    pub message: String,
}

impl ErrorOutcome {
    pub fn new(exit: Exit, message: impl Into<String>) -> ErrorOutcome {
        ErrorOutcome {
            exit_code: exit.code(),
            exit_class: exit_class(exit).to_string(),
            message: message.into(),
        }
    }
}

/// The serialised name of a unit enum value (`FAIL`, `BUILD_FAILURE`), whatever its type.
fn word<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(e) => format!("<{e}>"),
    }
}
