//! What report.html shows beyond report.json: the run's history, read back from its run
//! directory — the trace (for the timeline) and, for each column of the per-test grid, its test
//! results, crash, patch and logs. A column is an attempt of `fwfix test`, an iteration of
//! `fwfix run`, a step of `fwfix bisect`. Reading is forgiving: a file that is missing or cannot
//! be parsed costs only what it would have shown (a run killed mid-way still gets a page).

use super::model::{Command, Report};
use crate::analysis::CrashReport;
use crate::results::{TestCase, TestResults, Verdict};
use crate::rundir::{iteration_name, TraceLine};
use serde::Deserialize;
use std::path::Path;

/// The trace file of a run directory.
const TRACE: &str = "trace.jsonl";

/// One column of the per-test grid.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Column {
    /// `baseline`, `iteration 2`, `attempt 3`, `step 4 1a2b3c4`.
    pub label: String,
    pub verdict: Option<Verdict>,
    pub cases: Vec<TestCase>,
    pub crash: Option<CrashReport>,
    /// The patch tried in this column, relative to the run directory, and where it came from.
    pub patch: Option<String>,
    pub patch_origin: Option<String>,
    /// (what, path relative to the run directory) for each log that exists.
    pub logs: Vec<(String, String)>,
}

/// The run's history for report.html.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct History {
    /// The run's trace, or for a bisect every step's trace in step order, each with the label of
    /// the column it belongs to and the prefix of its paths.
    pub traces: Vec<Trace>,
    pub columns: Vec<Column>,
    /// `fix.patch`, when the run directory has one (report.json names it by its absolute path).
    pub fix_patch: Option<String>,
}

/// One trace file's lines.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Trace {
    /// None: label each line by its iteration (a fix run); Some: one label for the whole trace.
    pub label: Option<String>,
    pub lines: Vec<TraceLine>,
}

/// Reads the history of the run in `run_dir`, whose report is `report`.
pub fn load(run_dir: &Path, report: &Report) -> History {
    match report.command {
        Command::Test => History {
            traces: vec![Trace {
                label: Some("test".into()),
                lines: read_trace(run_dir),
            }],
            columns: attempt_columns(run_dir, ""),
            fix_patch: None,
        },
        Command::Run => {
            let mut columns = iteration_columns(run_dir);
            // The last iteration has no analysis of its own when the loop stopped on it.
            if let Some(last) = columns.last_mut() {
                if last.crash.is_none() {
                    last.crash = report.crash.clone();
                }
            }
            History {
                traces: vec![Trace {
                    label: None,
                    lines: read_trace(run_dir),
                }],
                columns,
                fix_patch: run_dir
                    .join("fix.patch")
                    .is_file()
                    .then(|| "fix.patch".to_string()),
            }
        }
        Command::Bisect => {
            let mut history = History::default();
            for step in &report.steps {
                let short: String = step.commit.chars().take(7).collect();
                let label = format!("step {} {short}", step.step);
                let dir = run_dir.join(&step.run_dir);
                history.traces.push(Trace {
                    label: Some(label.clone()),
                    lines: read_trace(&dir),
                });
                let prefix = format!("{}/", step.run_dir.trim_end_matches('/'));
                let attempts = attempt_columns(&dir, &prefix);
                let mut column = attempts.last().cloned().unwrap_or_default();
                column.label = label;
                column.logs = attempts.into_iter().flat_map(|c| c.logs).collect();
                column.logs.dedup();
                history.columns.push(column);
            }
            history
        }
    }
}

/// The lines of `dir/trace.jsonl` that parse; a torn last line (a killed run) is left out.
fn read_trace(dir: &Path) -> Vec<TraceLine> {
    std::fs::read_to_string(dir.join(TRACE))
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Option<T> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// `console.log` for attempt 1, `console-3.log` for attempt 3: the pipeline's names.
fn attempt_file(stem: &str, ext: &str, attempt: u32) -> String {
    if attempt <= 1 {
        format!("{stem}.{ext}")
    } else {
        format!("{stem}-{attempt}.{ext}")
    }
}

/// The attempts of iteration 0 (a `fwfix test` run), one column each, their paths prefixed by
/// `prefix` (the run's own directory, relative to the report's).
fn attempt_columns(run_dir: &Path, prefix: &str) -> Vec<Column> {
    let iter = iteration_name(0);
    let dir = run_dir.join(&iter);
    let mut columns = Vec::new();
    for attempt in 1.. {
        let results_name = attempt_file("results", "json", attempt);
        let console_name = attempt_file("console", "log", attempt);
        let results: Option<TestResults> = read_json(&dir.join(&results_name));
        let console = dir.join(&console_name).is_file();
        if results.is_none() && !console {
            break;
        }
        let mut logs = Vec::new();
        if attempt == 1 && dir.join("build.log").is_file() {
            logs.push(("build log".into(), format!("{prefix}{iter}/build.log")));
        }
        if console {
            logs.push((
                format!("console of attempt {attempt}"),
                format!("{prefix}{iter}/{console_name}"),
            ));
        }
        columns.push(Column {
            label: format!("attempt {attempt}"),
            verdict: results.as_ref().map(|r| r.verdict),
            cases: results.map(|r| r.cases).unwrap_or_default(),
            logs,
            ..Column::default()
        });
    }
    columns
}

/// Just the crash of analysis.json (the evidence bundle has much more).
#[derive(Deserialize)]
struct AnalysisCrash {
    crash: Option<CrashReport>,
}

/// Just the origin of review.json.
#[derive(Deserialize)]
struct ReviewOrigin {
    origin: Option<String>,
}

/// Each `iter-NNN/` of a fix run, in order, from the baseline to the first missing one.
fn iteration_columns(run_dir: &Path) -> Vec<Column> {
    let mut columns = Vec::new();
    for n in 0.. {
        let iter = iteration_name(n);
        let dir = run_dir.join(&iter);
        if !dir.is_dir() {
            break;
        }
        let mut column = Column {
            label: if n == 0 {
                "baseline".into()
            } else {
                format!("iteration {n}")
            },
            ..Column::default()
        };
        if dir.join("patch.diff").is_file() {
            column.patch = Some(format!("{iter}/patch.diff"));
            column.patch_origin =
                read_json::<ReviewOrigin>(&dir.join("review.json")).and_then(|r| r.origin);
        }
        column.crash = read_json::<AnalysisCrash>(&dir.join("analysis.json")).and_then(|a| a.crash);
        if dir.join("build.log").is_file() {
            column
                .logs
                .push(("build log".into(), format!("{iter}/build.log")));
        }
        for attempt in 1.. {
            let results_name = attempt_file("results", "json", attempt);
            let console_name = attempt_file("console", "log", attempt);
            let console = dir.join(&console_name).is_file();
            let results: Option<TestResults> = read_json(&dir.join(&results_name));
            if results.is_none() && !console {
                break;
            }
            if console {
                column.logs.push((
                    format!("console of attempt {attempt}"),
                    format!("{iter}/{console_name}"),
                ));
            }
            // The grid shows the iteration's last attempt: the one its verdict rests on.
            if let Some(results) = results {
                column.verdict = Some(results.verdict);
                column.cases = results.cases;
            }
        }
        if dir.join("analysis.json").is_file() {
            column
                .logs
                .push(("analysis".into(), format!("{iter}/analysis.json")));
        }
        columns.push(column);
    }
    columns
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::State;
    use crate::report::Status;

    fn write(dir: &Path, rel: &str, text: &str) {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    const RESULTS_FAIL: &str = r#"{"harness":"unity","cases":[{"name":"t1","status":"FAIL","message":"x","file":null,"line":null}],"summary":null,"verdict":"FAIL","notes":[]}"#;
    const RESULTS_PASS: &str = r#"{"harness":"unity","cases":[{"name":"t1","status":"PASS","message":null,"file":null,"line":null}],"summary":null,"verdict":"PASS","notes":[]}"#;

    #[test]
    fn a_fix_run_has_a_column_per_iteration_with_its_patch_crash_and_logs() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        write(d, "trace.jsonl", "{not json\n");
        write(d, "iter-000/build.log", "");
        write(d, "iter-000/console.log", "");
        write(d, "iter-000/results.json", RESULTS_FAIL);
        write(
            d,
            "iter-000/analysis.json",
            r#"{"crash":{"pc":"0x1","lr":null,"cfsr":null,"hfsr":null,"function":"f","file":null,"line":null,"caller":null,"fault_bits":[],"fault_address":null,"exception":"HardFault","lockup":false,"summary":"s"}}"#,
        );
        write(d, "iter-001/patch.diff", "diff");
        write(d, "iter-001/review.json", r#"{"origin":"04-fix.diff"}"#);
        write(d, "iter-001/console.log", "");
        write(d, "iter-001/results.json", RESULTS_FAIL);
        write(d, "iter-001/console-2.log", "");
        write(d, "iter-001/results-2.json", RESULTS_PASS);
        write(d, "fix.patch", "diff");
        let report = crate::report::test_support::report(
            "r",
            Command::Run,
            Status::Success,
            State::Success,
            1,
        );
        let history = load(d, &report);
        assert!(history.traces[0].lines.is_empty());
        assert_eq!(history.fix_patch.as_deref(), Some("fix.patch"));
        let [base, one] = history.columns.as_slice() else {
            panic!("{history:?}");
        };
        assert_eq!(base.label, "baseline");
        assert_eq!(base.verdict, Some(Verdict::Fail));
        assert_eq!(
            base.crash.as_ref().and_then(|c| c.function.as_deref()),
            Some("f")
        );
        assert_eq!(base.patch, None);
        assert_eq!(one.patch.as_deref(), Some("iter-001/patch.diff"));
        assert_eq!(one.patch_origin.as_deref(), Some("04-fix.diff"));
        assert_eq!(one.verdict, Some(Verdict::Pass), "the last attempt counts");
        let logs: Vec<&str> = one.logs.iter().map(|(_, p)| p.as_str()).collect();
        assert_eq!(logs, vec!["iter-001/console.log", "iter-001/console-2.log"]);
    }

    #[test]
    fn a_test_run_has_a_column_per_attempt() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        write(d, "iter-000/build.log", "");
        write(d, "iter-000/console.log", "");
        write(d, "iter-000/results.json", RESULTS_FAIL);
        write(d, "iter-000/console-2.log", "");
        write(d, "iter-000/results-2.json", "garbage");
        let report = crate::report::test_support::report(
            "r",
            Command::Test,
            Status::Failed,
            State::Failure,
            1,
        );
        let history = load(d, &report);
        let labels: Vec<(&str, Option<Verdict>)> = history
            .columns
            .iter()
            .map(|c| (c.label.as_str(), c.verdict))
            .collect();
        assert_eq!(
            labels,
            vec![("attempt 1", Some(Verdict::Fail)), ("attempt 2", None)]
        );
        assert_eq!(history.columns[0].logs.len(), 2);
    }
}
