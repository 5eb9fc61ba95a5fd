//! Read-only views of runs that already happened (or are still going): find a run by path or id
//! ([`resolve_run`]), replay its trace through the transition function and check its evidence
//! ([`audit`]), list the runs of a repository ([`list_runs`]), lay out its timeline
//! ([`timeline`]), and render its report files again ([`rerender`]). Beside runs, the boards of
//! the host: their health and who holds their lease ([`list_boards`], rendered by
//! [`render_boards`]).
//!
//! Everything here only reads the run directory, except [`rerender`], which rewrites the rendered
//! report files (never `report.json`, never the trace or the evidence). Nothing here runs a
//! build, starts a DUT or touches the repository's git state. Text rendering for `cli/` lives in
//! [`render`]; the library itself never prints.

mod audit;
mod boards;
pub mod render;
mod resolve;
mod runs;
mod show;

pub use audit::{
    audit, check_trace, AuditReport, EvidenceFile, Finding, FindingKind, ReportFacts, BISECT_JSON,
};
pub use boards::{find_board, list_boards, render_boards, BoardStatus, LeaseView};
pub use resolve::resolve_run;
pub use runs::{
    killed_holding_tree, leftover_worktrees, list_runs, unfinished_runs, RunStatus, RunSummary,
    TreeHold,
};
pub use show::{rerender, timeline, Timeline, TimelineEntry};

use crate::machine::State;
use crate::report::{self, Report, ReportError};
use crate::rundir::TraceLine;
use std::path::{Path, PathBuf};

/// The trace file in a run directory.
pub const TRACE_FILE: &str = "trace.jsonl";
/// Who started the run and how (command, request, pid, host, start time). Read leniently.
pub const RUN_JSON: &str = "run.json";
/// The checkpointed run context, rewritten after every transition. Read leniently.
pub const CONTEXT_JSON: &str = "context.json";

/// Why a run could not be found or read.
#[derive(Debug, thiserror::Error)]
pub enum InspectError {
    #[error(
        "no run `{arg}`: {} is not a directory, and no run id starting with `{arg}` is in {}",
        path.display(),
        runs_dir.display()
    )]
    NotFound {
        arg: String,
        /// `arg` taken as a path.
        path: PathBuf,
        /// Where run ids were looked up.
        runs_dir: PathBuf,
    },
    #[error(
        "`{prefix}` matches {} runs in {}: {}; give more of the id",
        matches.len(),
        runs_dir.display(),
        matches.join(", ")
    )]
    Ambiguous {
        prefix: String,
        runs_dir: PathBuf,
        matches: Vec<String>,
    },
    #[error(
        "{} is not a run directory: it holds none of {RUN_JSON}, {TRACE_FILE}, {BISECT_JSON} and report.json",
        path.display()
    )]
    NotARunDir { path: PathBuf },
    #[error("{} is not a directory", path.display())]
    NoRepo { path: PathBuf },
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{} has no report.json: the run is still going or was killed{}",
        run_dir.display(),
        last_state.map(|s| format!(" (its trace stops at {s})")).unwrap_or_default()
    )]
    NoReport {
        run_dir: PathBuf,
        last_state: Option<State>,
    },
    #[error(transparent)]
    Report(#[from] ReportError),
}

/// One physical line of `trace.jsonl`: a transition, or why it is not one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TraceEntry {
    /// 1-based line number in the file.
    pub line: usize,
    pub parsed: Result<TraceLine, String>,
}

/// Splits a trace into lines and parses each on its own, so one bad line (a run killed mid-write,
/// a hand edit) costs that line only.
pub(crate) fn parse_trace(text: &str) -> Vec<TraceEntry> {
    text.lines()
        .enumerate()
        .map(|(index, raw)| TraceEntry {
            line: index + 1,
            parsed: if raw.trim().is_empty() {
                Err("empty line".to_string())
            } else {
                serde_json::from_str::<TraceLine>(raw).map_err(|e| e.to_string())
            },
        })
        .collect()
}

/// Reads `trace.jsonl` of `run_dir`. Invalid UTF-8 becomes replacement characters, so the bad
/// line shows up as a malformed line rather than hiding the whole file.
pub(crate) fn read_trace(run_dir: &Path) -> Result<Vec<TraceEntry>, InspectError> {
    let path = run_dir.join(TRACE_FILE);
    let bytes = std::fs::read(&path).map_err(|source| InspectError::Io { path, source })?;
    Ok(parse_trace(&String::from_utf8_lossy(&bytes)))
}

/// The run's report.json, or `None` when it has not been written (the run is still going, or was
/// killed). A report that exists but cannot be read is an error.
pub(crate) fn load_report(run_dir: &Path) -> Result<Option<Report>, ReportError> {
    match report::load(run_dir) {
        Ok(report) => Ok(Some(report)),
        Err(ReportError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// The name a run directory goes by: its last path component.
pub(crate) fn run_id_of(run_dir: &Path) -> String {
    run_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| run_dir.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_is_numbered_and_parsed_on_its_own() {
        let good = r#"{"seq":1,"ts":"2024-05-01T12:00:00.000Z","from":"IDLE","to":"INIT","outcome":"task_received","reason":"r","iteration":0,"error_class":null,"evidence":[]}"#;
        let text = format!("{good}\nnot json\n\n{good}");
        let entries = parse_trace(&text);
        assert_eq!(entries.len(), 4);
        assert!(entries[0].parsed.is_ok());
        assert_eq!(entries[1].line, 2);
        assert!(entries[1].parsed.is_err());
        assert_eq!(entries[2].parsed, Err("empty line".to_string()));
        let first = entries[0].parsed.as_ref().unwrap();
        assert!(
            first.evidence_sha256.is_empty(),
            "older traces have no hashes"
        );
    }
}
