//! `fwfix show` and `fwfix report`: a run's timeline (every transition with its offset from the
//! start, reason, error class and evidence) next to its report, and rendering the report files
//! again from report.json. The timeline only reads; [`rerender`] writes the rendered files only.

use super::{
    load_report, read_trace, run_id_of, InspectError, BISECT_JSON, CONTEXT_JSON, RUN_JSON,
    TRACE_FILE,
};
use crate::report::{self, Report};
use crate::rundir::TraceLine;
use chrono::DateTime;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// A run laid out for reading.
#[derive(Debug, Clone, Serialize)]
pub struct Timeline {
    pub run_id: String,
    pub run_dir: PathBuf,
    /// The first transition's time, as recorded.
    pub started: Option<String>,
    pub entries: Vec<TimelineEntry>,
    /// Why trace.jsonl could not be read at all.
    pub trace_problem: Option<String>,
    /// A bisect's own directory: no trace of its own, its steps are runs (report.json lists them).
    pub bisect: bool,
    /// report.json; `None` while the run is still going, after it was killed, or when the file
    /// cannot be read (then `report_problem` says why).
    pub report: Option<Box<Report>>,
    pub report_problem: Option<String>,
    /// run.json of the fix loop, when present.
    pub run_json: Option<serde_json::Value>,
    /// The fix loop's checkpointed context, when present.
    pub context_json: Option<serde_json::Value>,
}

/// One line of the trace.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TimelineEntry {
    Transition {
        /// 1-based line of trace.jsonl.
        line: usize,
        /// Milliseconds since the first transition, when both times can be read.
        offset_ms: Option<i64>,
        #[serde(flatten)]
        transition: TraceLine,
    },
    Unreadable {
        line: usize,
        problem: String,
    },
}

/// The timeline of the run in `run_dir`.
pub fn timeline(run_dir: &Path) -> Result<Timeline, InspectError> {
    let (report, report_problem) = match load_report(run_dir) {
        Ok(report) => (report.map(Box::new), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let bisect = !run_dir.join(TRACE_FILE).exists() && run_dir.join(BISECT_JSON).is_file();
    let (entries, trace_problem) = match read_trace(run_dir) {
        Ok(entries) => (entries, None),
        Err(_) if bisect => (Vec::new(), None),
        Err(e) => {
            // A run killed before its first transition has only run.json: shown as such.
            if report.is_none() && report_problem.is_none() && !run_dir.join(RUN_JSON).is_file() {
                return Err(InspectError::NotARunDir {
                    path: run_dir.to_path_buf(),
                });
            }
            (Vec::new(), Some(e.to_string()))
        }
    };
    let lines: Vec<(usize, Result<TraceLine, String>)> =
        entries.into_iter().map(|e| (e.line, e.parsed)).collect();
    let started = lines
        .iter()
        .find_map(|(_, parsed)| parsed.as_ref().ok())
        .map(|t| t.ts.clone());
    let start = started
        .as_deref()
        .and_then(|ts| DateTime::parse_from_rfc3339(ts).ok());
    let entries = lines
        .into_iter()
        .map(|(line, parsed)| match parsed {
            Ok(transition) => TimelineEntry::Transition {
                line,
                offset_ms: start.and_then(|start| {
                    DateTime::parse_from_rfc3339(&transition.ts)
                        .ok()
                        .map(|t| (t - start).num_milliseconds())
                }),
                transition,
            },
            Err(problem) => TimelineEntry::Unreadable { line, problem },
        })
        .collect();
    Ok(Timeline {
        run_id: run_id_of(run_dir),
        run_dir: run_dir.to_path_buf(),
        started,
        entries,
        trace_problem,
        bisect,
        report,
        report_problem,
        run_json: read_json(&run_dir.join(RUN_JSON)),
        context_json: read_json(&run_dir.join(CONTEXT_JSON)),
    })
}

impl Timeline {
    /// The state the trace reached last.
    pub fn last_state(&self) -> Option<crate::machine::State> {
        self.entries.iter().rev().find_map(|entry| match entry {
            TimelineEntry::Transition { transition, .. } => Some(transition.to),
            TimelineEntry::Unreadable { .. } => None,
        })
    }
}

/// A JSON file the fix loop may leave; one that cannot be parsed is shown as its text.
fn read_json(path: &Path) -> Option<serde_json::Value> {
    let bytes = std::fs::read(path).ok()?;
    Some(serde_json::from_slice(&bytes).unwrap_or_else(|_| {
        serde_json::Value::String(String::from_utf8_lossy(&bytes).into_owned())
    }))
}

/// Renders report.md, junit.xml and report.html again from the run's report.json (after an
/// upgrade of fwfix, say) and returns the files written. report.json itself is left as it is.
pub fn rerender(run_dir: &Path) -> Result<Vec<PathBuf>, InspectError> {
    let report = match load_report(run_dir)? {
        Some(report) => report,
        None => {
            let last_state = read_trace(run_dir).ok().and_then(|entries| {
                entries
                    .into_iter()
                    .rev()
                    .find_map(|entry| entry.parsed.ok().map(|t| t.to))
            });
            if last_state.is_none() && !run_dir.join(TRACE_FILE).is_file() {
                return Err(InspectError::NotARunDir {
                    path: run_dir.to_path_buf(),
                });
            }
            return Err(InspectError::NoReport {
                run_dir: run_dir.to_path_buf(),
                last_state,
            });
        }
    };
    Ok(report::write_renderings(
        run_dir,
        &report,
        crate::rundir::Durability::Synced,
    )?)
}
