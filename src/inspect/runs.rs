//! `fwfix runs`: one line per run of a repository, newest first. A finished run is described by
//! its report.json; a run that is still going, or was killed, only by its trace (and by
//! `run.json` when the fix loop left one). Only reads.

use super::{load_report, read_trace, run_id_of, InspectError, CONTEXT_JSON, RUN_JSON};
use crate::machine::State;
use crate::report::Status;
use crate::report::REPORT_JSON;
use crate::rundir::RUNS_DIR;
use chrono::{DateTime, NaiveDateTime, Utc};
use serde::{Serialize, Serializer};
use std::path::{Path, PathBuf};

/// How a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    /// It wrote its report: the status in it.
    Finished(Status),
    /// No report, and the process recorded for the run (context.json, run.json) is alive.
    Running,
    /// No report, and the process recorded for the run is gone.
    Killed,
    /// No report, and no pid of this host to check.
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
    /// The process driving the run, as context.json or run.json recorded it.
    pub pid: Option<u32>,
    /// Why report.json could not be read.
    pub problem: Option<String>,
}

/// The runs under `<repo>/.fwfix/runs/`, newest first. A repository without runs has none.
pub fn list_runs(repo: &Path) -> Result<Vec<RunSummary>, InspectError> {
    runs_where(repo, |_| true)
}

/// The runs under `<repo>/.fwfix/runs/` that wrote no report (still going, or killed), newest
/// first. A finished run is told by its report.json being there, without reading anything: a
/// lab's repository collects thousands of runs, and every run's start asks this (reading each
/// run's records took a one-test run from 77 to 155 ms after 571 runs).
pub fn unfinished_runs(repo: &Path) -> Result<Vec<RunSummary>, InspectError> {
    runs_where(repo, |dir| {
        std::fs::symlink_metadata(dir.join(REPORT_JSON)).is_err()
    })
}

/// The runs whose directory `keep` accepts, described and sorted newest first.
fn runs_where(repo: &Path, keep: impl Fn(&Path) -> bool) -> Result<Vec<RunSummary>, InspectError> {
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
        .map(|entry| entry.path())
        .filter(|dir| keep(dir))
        .map(|dir| summarise(&dir))
        .collect();
    sort_newest_first(&mut runs);
    Ok(runs)
}

/// Why the checkout of a killed run may hold something that is not its owner's work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TreeHold {
    /// One of the run's candidate patches was applied.
    Candidate,
    /// The run's agent (`--strategy command`) was editing the tree.
    AgentEdits,
}

/// The newest `fwfix run` among `runs` (newest first, as [`unfinished_runs`] gives them) that was
/// killed while it held the repository's own checkout (not a worktree of its own) for patching:
/// with one of its candidates applied, or while its agent edited the tree. Until that run is
/// resumed, the checkout may hold the run's changes rather than only its owner's work, and
/// nothing should build, test or snapshot it as such.
pub fn killed_holding_tree(runs: &[RunSummary]) -> Option<(&RunSummary, TreeHold)> {
    runs.iter().find_map(|run| {
        if run.status != RunStatus::Killed || run.command.as_deref() != Some("run") {
            return None;
        }
        let recorded = Recorded::read(&run.dir);
        if !recorded
            .field(&["worktree"])
            .is_none_or(serde_json::Value::is_null)
        {
            return None;
        }
        let hold = recorded.tree_hold()?;
        Some((run, hold))
    })
}

/// The linked worktrees a run left under its directory (`--worktree`, a killed bisect), and
/// under its iterations' `candidates/` (the agents' workspaces and trial builds of a killed
/// round).
pub fn leftover_worktrees(dir: &Path) -> Vec<PathBuf> {
    let entries = |dir: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .collect()
    };
    let rounds = entries(dir)
        .into_iter()
        .flat_map(|iteration| entries(&iteration.join("candidates")));
    entries(dir)
        .into_iter()
        .chain(rounds)
        .filter(|p| p.join(".git").is_file())
        .collect()
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
    let recorded = Recorded::read(dir);
    let mut summary = RunSummary {
        started_at: recorded.started_at().or_else(|| started_from_id(&id)),
        id,
        dir: dir.to_path_buf(),
        command: recorded.text(&["command"]),
        status: RunStatus::RunningOrKilled,
        state: None,
        iterations: None,
        duration_ms: None,
        board: recorded.text(&["request", "board"]),
        profile: recorded.text(&["request", "profile"]),
        pid: recorded.pid(),
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
        summary.status = recorded.process_status();
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

/// What the fix loop recorded about a run: `context.json` (rewritten after every transition, so
/// it names the process driving the run now) before `run.json` (who started it). Read leniently:
/// the fix loop owns both formats, and a field that is not there is simply unknown.
struct Recorded {
    context: Option<serde_json::Value>,
    run: Option<serde_json::Value>,
}

impl Recorded {
    fn read(dir: &Path) -> Recorded {
        let read = |name: &str| {
            std::fs::read(dir.join(name))
                .ok()
                .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        };
        Recorded {
            context: read(CONTEXT_JSON),
            run: read(RUN_JSON),
        }
    }

    fn field(&self, path: &[&str]) -> Option<&serde_json::Value> {
        [&self.context, &self.run].into_iter().find_map(|value| {
            path.iter()
                .try_fold(value.as_ref()?, |value, key| value.get(key))
        })
    }

    fn text(&self, path: &[&str]) -> Option<String> {
        self.field(path)?
            .as_str()
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    }

    fn pid(&self) -> Option<u32> {
        u32::try_from(self.field(&["pid"])?.as_u64()?).ok()
    }

    fn started_at(&self) -> Option<DateTime<Utc>> {
        DateTime::parse_from_rfc3339(&self.text(&["started_at"])?)
            .ok()
            .map(|t| t.with_timezone(&Utc))
    }

    /// What the run had in its checkout when it last checkpointed, if anything.
    fn tree_hold(&self) -> Option<TreeHold> {
        if self.field(&["patch_applied"]) == Some(&serde_json::Value::Bool(true)) {
            return Some(TreeHold::Candidate);
        }
        // An agent edits the tree in place from PATCH_GENERATION's start until the loop takes
        // its edits out, all before that state's next checkpoint — unless it works in
        // worktrees of its own.
        let agent = self.text(&["request", "strategy", "kind"]).as_deref() == Some("command")
            && self.field(&["agent_workspaces"]) != Some(&serde_json::Value::Bool(true));
        (agent && self.text(&["state"]).as_deref() == Some("PATCH_GENERATION"))
            .then_some(TreeHold::AgentEdits)
    }

    /// Whether the recorded process still runs. A pid says nothing about another host's
    /// processes, and nothing at all when none was recorded.
    fn process_status(&self) -> RunStatus {
        let Some(pid) = self.pid() else {
            return RunStatus::RunningOrKilled;
        };
        if let Some(host) = self.text(&["host"]) {
            if host != crate::process::host_name() {
                return RunStatus::RunningOrKilled;
            }
        }
        if crate::process::alive(pid) {
            RunStatus::Running
        } else {
            RunStatus::Killed
        }
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

    fn here() -> String {
        nix::unistd::gethostname()
            .unwrap()
            .to_string_lossy()
            .into_owned()
    }

    fn recorded(run: serde_json::Value, context: Option<serde_json::Value>) -> Recorded {
        Recorded {
            context,
            run: Some(run),
        }
    }

    #[test]
    fn the_recorded_process_decides_between_running_and_killed() {
        let me = std::process::id();
        let alive = recorded(serde_json::json!({"pid": me, "host": here()}), None);
        assert_eq!(alive.process_status(), RunStatus::Running);

        let mut child = std::process::Command::new("true").spawn().unwrap();
        let gone = child.id();
        child.wait().unwrap();
        let dead = recorded(serde_json::json!({"pid": gone, "host": here()}), None);
        assert_eq!(dead.process_status(), RunStatus::Killed);

        // context.json names the process driving the run now; it wins over run.json.
        let resumed = recorded(
            serde_json::json!({"pid": gone}),
            Some(serde_json::json!({"pid": me})),
        );
        assert_eq!(resumed.process_status(), RunStatus::Running);

        let elsewhere = recorded(serde_json::json!({"pid": me, "host": "another-host"}), None);
        assert_eq!(elsewhere.process_status(), RunStatus::RunningOrKilled);
        let unknown = recorded(serde_json::json!({"command": "run"}), None);
        assert_eq!(unknown.process_status(), RunStatus::RunningOrKilled);
    }

    #[test]
    fn only_an_agent_editing_the_checkout_in_place_holds_it() {
        let context = |state: &str, workspaces: bool, applied: bool| {
            recorded(
                serde_json::json!({}),
                Some(serde_json::json!({
                    "request": {"strategy": {"kind": "command"}},
                    "state": state,
                    "agent_workspaces": workspaces,
                    "patch_applied": applied,
                })),
            )
        };
        let hold = |state, workspaces, applied| context(state, workspaces, applied).tree_hold();
        assert_eq!(
            hold("PATCH_GENERATION", false, false),
            Some(TreeHold::AgentEdits)
        );
        assert_eq!(hold("PATCH_GENERATION", true, false), None);
        assert_eq!(hold("CODE_ANALYSIS", false, false), None);
        assert_eq!(hold("BUILD_RUN", true, true), Some(TreeHold::Candidate));
    }

    #[test]
    fn recorded_fields_are_read_leniently() {
        let run = recorded(
            serde_json::json!({
                "command": "run",
                "request": {"board": "qemu-mps2-an385", "profile": ""},
                "started_at": "2024-05-01T12:00:00.250Z",
                "pid": -3,
            }),
            Some(serde_json::json!("not an object")),
        );
        assert_eq!(run.text(&["command"]).as_deref(), Some("run"));
        assert_eq!(
            run.text(&["request", "board"]).as_deref(),
            Some("qemu-mps2-an385")
        );
        assert_eq!(run.text(&["request", "profile"]), None);
        assert_eq!(run.text(&["request", "board", "deeper"]), None);
        assert_eq!(run.pid(), None);
        assert_eq!(
            run.started_at(),
            Some("2024-05-01T12:00:00.250Z".parse().unwrap())
        );
    }

    #[test]
    fn a_run_with_a_report_is_finished_without_reading_it() {
        let repo = tempfile::tempdir().unwrap();
        let runs = repo.path().join(RUNS_DIR);
        let finished = runs.join("20240501-120000-aaaa");
        let killed = runs.join("20240501-110000-bbbb");
        std::fs::create_dir_all(&finished).unwrap();
        std::fs::create_dir_all(&killed).unwrap();
        // Unreadable: listing all runs says so; asking for unfinished ones never opens it.
        std::fs::write(finished.join(REPORT_JSON), "{").unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let gone = child.id();
        child.wait().unwrap();
        let context = serde_json::json!({"command": "run", "pid": gone, "host": here()});
        std::fs::write(killed.join(CONTEXT_JSON), context.to_string()).unwrap();

        let unfinished = unfinished_runs(repo.path()).unwrap();
        let ids: Vec<&str> = unfinished.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, vec!["20240501-110000-bbbb"]);
        assert_eq!(unfinished[0].status, RunStatus::Killed);
        let all = list_runs(repo.path()).unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].status, RunStatus::Unreadable);
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
