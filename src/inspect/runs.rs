//! `fwfix runs`: one line per run of a repository, newest first. A finished run is described by
//! its report.json; a run that is still going, or was killed, only by its trace (and by
//! `run.json` when the fix loop left one). Only reads.

use super::{load_report, read_trace, run_id_of, InspectError, RUN_JSON};
use crate::machine::State;
use crate::report::Status;
use crate::rundir::RUNS_DIR;
use chrono::{DateTime, NaiveDateTime, Utc};
use serde::{Serialize, Serializer};
use std::path::{Path, PathBuf};

/// How a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    /// It wrote its report: the status in it.
    Finished(Status),
    /// No report, and the process named in run.json is alive.
    Running,
    /// No report, and the process named in run.json is gone.
    Killed,
    /// No report and no pid to check.
    RunningOrKilled,
    /// report.json exists but cannot be read.
    Unreadable,
}

impl RunStatus {
    /// The name in `--json` output, e.g. `PASSED` or `RUNNING_OR_KILLED`.
    pub fn name(self) -> &'static str {
        match self {
            RunStatus::Finished(status) => status.name(),
            RunStatus::Running => "RUNNING",
            RunStatus::Killed => "KILLED",
            RunStatus::RunningOrKilled => "RUNNING_OR_KILLED",
            RunStatus::Unreadable => "UNREADABLE",
        }
    }
}

impl Serialize for RunStatus {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// One run, as `fwfix runs` lists it. Fields are `None` when the run did not record them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    pub id: String,
    pub dir: PathBuf,
    /// `test`, `run` or `bisect`.
    pub command: Option<String>,
    pub status: RunStatus,
    /// The final state, or for an unfinished run the last state its trace reached.
    pub state: Option<State>,
    pub iterations: Option<u32>,
    pub started_at: Option<DateTime<Utc>>,
    /// The whole run, or for an unfinished run the time up to its last transition.
    pub duration_ms: Option<u64>,
    pub board: Option<String>,
    pub profile: Option<String>,
    /// The process from run.json, when there is one.
    pub pid: Option<u32>,
    /// Why report.json could not be read.
    pub problem: Option<String>,
}

/// The runs under `<repo>/.fwfix/runs/`, newest first. A repository without runs has none.
pub fn list_runs(repo: &Path) -> Result<Vec<RunSummary>, InspectError> {
    if !repo.is_dir() {
        return Err(InspectError::NoRepo {
            path: repo.to_path_buf(),
        });
    }
    let runs_dir = repo.join(RUNS_DIR);
    let entries = match std::fs::read_dir(&runs_dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(InspectError::Io {
                path: runs_dir,
                source,
            })
        }
    };
    let mut runs: Vec<RunSummary> = entries
        .flatten()
        .filter(|entry| entry.file_type().is_ok_and(|t| t.is_dir()))
        .map(|entry| summarise(&entry.path()))
        .collect();
    sort_newest_first(&mut runs);
    Ok(runs)
}

fn sort_newest_first(runs: &mut [RunSummary]) {
    // Ids start with the time to the second; the recorded start breaks ties within a second.
    runs.sort_by(|a, b| {
        b.started_at
            .cmp(&a.started_at)
            .then_with(|| b.id.cmp(&a.id))
    });
}

/// Describes one run directory from whatever it holds.
fn summarise(dir: &Path) -> RunSummary {
    let id = run_id_of(dir);
    let run_json = read_run_json(dir);
    let mut summary = RunSummary {
        started_at: started_from_id(&id),
        id,
        dir: dir.to_path_buf(),
        command: run_json.text("command"),
        status: RunStatus::RunningOrKilled,
        state: None,
        iterations: None,
        duration_ms: None,
        board: run_json.text("board"),
        profile: run_json.text("profile"),
        pid: run_json.pid(),
        problem: None,
    };
    match load_report(dir) {
        Ok(Some(report)) => {
            summary.command = Some(report.command.name().to_string());
            summary.status = RunStatus::Finished(report.status);
            summary.state = Some(report.final_state);
            summary.iterations = Some(report.iterations);
            summary.started_at = Some(report.started_at);
            summary.duration_ms = Some(report.duration_ms);
            summary.board = non_empty(report.board).or(summary.board);
            summary.profile = non_empty(report.profile).or(summary.profile);
            return summary;
        }
        Ok(None) => {}
        Err(e) => {
            summary.status = RunStatus::Unreadable;
            summary.problem = Some(e.to_string());
        }
    }
    fill_from_trace(&mut summary, dir);
    if summary.status == RunStatus::RunningOrKilled {
        if let Some(pid) = summary.pid {
            summary.status = if process_alive(pid) {
                RunStatus::Running
            } else {
                RunStatus::Killed
            };
        }
    }
    summary
}

/// The start, last state, iterations and elapsed time of a run that has no report.
fn fill_from_trace(summary: &mut RunSummary, dir: &Path) {
    let Ok(entries) = read_trace(dir) else {
        return;
    };
    let lines: Vec<_> = entries
        .into_iter()
        .filter_map(|entry| entry.parsed.ok())
        .collect();
    let (Some(first), Some(last)) = (lines.first(), lines.last()) else {
        return;
    };
    let time = |ts: &str| {
        DateTime::parse_from_rfc3339(ts)
            .ok()
            .map(|t| t.with_timezone(&Utc))
    };
    let (start, end) = (time(&first.ts), time(&last.ts));
    if start.is_some() {
        summary.started_at = start;
    }
    if let (Some(start), Some(end)) = (start, end) {
        summary.duration_ms = u64::try_from((end - start).num_milliseconds()).ok();
    }
    summary.state = Some(last.to);
    summary.iterations = lines.iter().map(|l| l.iteration).max();
}

/// The start time encoded in a run id (`20240501-120000-xxxx`), for runs that recorded nothing.
fn started_from_id(id: &str) -> Option<DateTime<Utc>> {
    let stamp = id.get(..15)?;
    NaiveDateTime::parse_from_str(stamp, "%Y%m%d-%H%M%S")
        .ok()
        .map(|t| t.and_utc())
}

fn non_empty(text: String) -> Option<String> {
    (!text.is_empty()).then_some(text)
}

/// The fields of run.json this listing uses, read leniently: the fix loop owns its format.
struct RunJson(Option<serde_json::Value>);

fn read_run_json(dir: &Path) -> RunJson {
    let value = std::fs::read(dir.join(RUN_JSON))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok());
    RunJson(value)
}

impl RunJson {
    fn text(&self, key: &str) -> Option<String> {
        self.0
            .as_ref()?
            .get(key)?
            .as_str()
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    }

    fn pid(&self) -> Option<u32> {
        let pid = self.0.as_ref()?.get("pid")?.as_u64()?;
        u32::try_from(pid).ok()
    }
}

/// Whether a process with this pid exists (signal 0 checks without sending anything). A pid the
/// system has since reused for another process reads as alive; that is the best a pid can say.
fn process_alive(pid: u32) -> bool {
    use nix::errno::Errno;
    use nix::sys::signal::kill;
    use nix::unistd::Pid;
    // 0 and negative values would address process groups, not one process.
    let Some(raw) = i32::try_from(pid).ok().filter(|p| *p > 0) else {
        return false;
    };
    match kill(Pid::from_raw(raw), None) {
        Ok(()) => true,
        // It exists but belongs to someone else.
        Err(Errno::EPERM) => true,
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(id: &str, started: Option<&str>) -> RunSummary {
        RunSummary {
            id: id.into(),
            dir: PathBuf::from(id),
            command: None,
            status: RunStatus::RunningOrKilled,
            state: None,
            iterations: None,
            started_at: started.map(|s| s.parse().unwrap()),
            duration_ms: None,
            board: None,
            profile: None,
            pid: None,
            problem: None,
        }
    }

    #[test]
    fn newest_first_by_start_then_by_id() {
        let mut runs = vec![
            summary("20240501-120000-ffff", Some("2024-05-01T12:00:00.100Z")),
            summary("20240501-120000-0000", Some("2024-05-01T12:00:00.900Z")),
            summary("junk", None),
            summary("20240501-110000-aaaa", Some("2024-05-01T11:00:00Z")),
        ];
        sort_newest_first(&mut runs);
        let ids: Vec<&str> = runs.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(
            ids,
            vec![
                "20240501-120000-0000",
                "20240501-120000-ffff",
                "20240501-110000-aaaa",
                "junk"
            ]
        );
    }

    #[test]
    fn the_id_carries_a_start_time() {
        assert_eq!(
            started_from_id("20240501-120304-beef"),
            Some("2024-05-01T12:03:04Z".parse().unwrap())
        );
        assert_eq!(started_from_id("mine"), None);
        assert_eq!(started_from_id("2024ä501-120304-beef"), None);
    }

    #[test]
    fn this_process_is_alive_and_nonsense_pids_are_not() {
        assert!(process_alive(std::process::id()));
        assert!(!process_alive(0));
        assert!(!process_alive(u32::MAX));
    }

    #[test]
    fn status_names_are_screaming_snake_case() {
        assert_eq!(RunStatus::Finished(Status::Passed).name(), "PASSED");
        assert_eq!(RunStatus::RunningOrKilled.name(), "RUNNING_OR_KILLED");
        assert_eq!(
            serde_json::to_value(RunStatus::Killed).unwrap(),
            serde_json::json!("KILLED")
        );
    }
}
