//! `fwfix runs prune`: removes what finished runs keep in a repository — the run directory, its
//! linked worktree, its rollback points `refs/fwfix/<run-id>/*` (which hold the owner's files,
//! untracked ones included) — and the rollback points of runs whose directory is gone.
//!
//! A run that may still be going (its process alive, or on another host) is never touched. A run
//! that can still be resumed (ABORTED, FAILURE, killed) is kept unless asked (`--resumable`): once
//! pruned it cannot be resumed. `--dry-run` only says what would go.

use super::error::OrchestratorError;
use crate::inspect::{self, RunStatus, RunSummary};
use crate::repo::Repo;
use crate::report::Status;
use chrono::{DateTime, Utc};
use serde::Serialize;
use std::path::PathBuf;
use std::time::Duration;

/// What `fwfix runs prune` was asked.
#[derive(Debug, Clone)]
pub struct PruneOptions {
    pub repo: PathBuf,
    /// Only runs started longer ago than this.
    pub older_than: Option<Duration>,
    /// Also prune runs that could still be resumed.
    pub resumable: bool,
    /// Say what would be pruned; remove nothing.
    pub dry_run: bool,
}

/// One run (or a run's leftover refs) and what pruning did with it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PruneEntry {
    pub id: String,
    /// The run's status (`SUCCESS`, `ABORTED`, `KILLED`, ...), or `REFS_ONLY` for rollback
    /// points whose run directory is gone.
    pub status: String,
    pub pruned: bool,
    /// Why it was kept, or what was (or would be) removed.
    pub reason: String,
    /// The refs removed (or that would be).
    pub refs: Vec<String>,
}

/// Prunes the runs of `opts.repo` (see the module doc), oldest first.
pub fn prune(
    opts: &PruneOptions,
    now: DateTime<Utc>,
) -> Result<Vec<PruneEntry>, OrchestratorError> {
    let repo = super::job::canonical_repo(&opts.repo)?;
    let mut runs =
        inspect::list_runs(&repo).map_err(|e| OrchestratorError::Usage(e.to_string()))?;
    runs.reverse();
    // A repository that is not under git has runs (fwfix test) but no refs.
    let git = Repo::open(&repo).ok();
    let mut snapshot_runs = match &git {
        Some(git) => git
            .snapshot_runs()
            .map_err(|e| OrchestratorError::Internal(e.to_string()))?,
        None => Vec::new(),
    };
    let mut entries = Vec::new();
    for run in &runs {
        snapshot_runs.retain(|id| *id != run.id);
        let refs = match &git {
            Some(git) => git
                .snapshot_refs(&run.id)
                .map_err(|e| OrchestratorError::Internal(e.to_string()))?,
            None => Vec::new(),
        };
        let status = run.status.name().to_string();
        if let Some(kept) = keep(run, opts, now) {
            entries.push(PruneEntry {
                id: run.id.clone(),
                status,
                pruned: false,
                reason: kept,
                refs: Vec::new(),
            });
            continue;
        }
        if !opts.dry_run {
            remove_run(git.as_ref(), run)?;
        }
        entries.push(PruneEntry {
            id: run.id.clone(),
            status,
            pruned: true,
            reason: format!("run directory {}", run.dir.display()),
            refs,
        });
    }
    // Rollback points of runs whose directory was removed by hand: nothing can resume them.
    if let Some(git) = &git {
        for id in snapshot_runs {
            let refs = git
                .snapshot_refs(&id)
                .map_err(|e| OrchestratorError::Internal(e.to_string()))?;
            if !opts.dry_run {
                git.remove_snapshots(&id)
                    .map_err(|e| OrchestratorError::Internal(e.to_string()))?;
            }
            entries.push(PruneEntry {
                id,
                status: "REFS_ONLY".to_string(),
                pruned: true,
                reason: "rollback points of a run whose directory is gone".to_string(),
                refs,
            });
        }
    }
    Ok(entries)
}

/// Why `run` is kept, or None when it goes.
fn keep(run: &RunSummary, opts: &PruneOptions, now: DateTime<Utc>) -> Option<String> {
    if crate::rundir::trace_held(&run.dir) {
        return Some("still running (a process holds its trace)".to_string());
    }
    match run.status {
        RunStatus::Running => return Some("still running".to_string()),
        RunStatus::RunningOrKilled => {
            return Some("may still be running (on another host, or no process recorded)".into())
        }
        RunStatus::Unreadable => {
            return Some(format!(
                "its report cannot be read: {}",
                run.problem.as_deref().unwrap_or("unknown")
            ))
        }
        RunStatus::Killed | RunStatus::Finished(_) => {}
    }
    if let Some(limit) = opts.older_than {
        let age = run
            .started_at
            .and_then(|t| (now - t).to_std().ok())
            .unwrap_or_default();
        if age < limit {
            return Some(format!("younger than {}", human(limit)));
        }
    }
    if resumable(run) && !opts.resumable {
        return Some(format!(
            "can still be resumed (fwfix resume {}); --resumable prunes it too",
            run.id
        ));
    }
    None
}

/// Whether `fwfix resume` could carry the run on: a fix run that was killed, aborted, or ended
/// in FAILURE (`--more-iterations`), or any run killed before its report.
fn resumable(run: &RunSummary) -> bool {
    match run.status {
        RunStatus::Killed => run.command.as_deref() != Some("bisect"),
        RunStatus::Finished(status) => match status {
            Status::Aborted | Status::Failure => run.command.as_deref() == Some("run"),
            Status::Success | Status::Passed | Status::Failed | Status::Error => false,
        },
        RunStatus::Running | RunStatus::RunningOrKilled | RunStatus::Unreadable => false,
    }
}

/// Removes a run's linked worktree, rollback points and directory. The directory goes last: a
/// prune interrupted half-way leaves a run `fwfix runs prune` finds again.
fn remove_run(git: Option<&Repo>, run: &RunSummary) -> Result<(), OrchestratorError> {
    let internal = |e: crate::repo::RepoError| OrchestratorError::Internal(e.to_string());
    if let Some(git) = git {
        for worktree in inspect::leftover_worktrees(&run.dir) {
            git.remove_worktree(&worktree).map_err(internal)?;
        }
        git.remove_snapshots(&run.id).map_err(internal)?;
    }
    std::fs::remove_dir_all(&run.dir).map_err(|source| OrchestratorError::RunDir {
        path: run.dir.clone(),
        source,
    })
}

fn human(d: Duration) -> String {
    let secs = d.as_secs();
    match secs {
        s if s % 86_400 == 0 => format!("{}d", s / 86_400),
        s if s % 3_600 == 0 => format!("{}h", s / 3_600),
        s if s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(status: RunStatus, command: &str, age_days: i64, now: DateTime<Utc>) -> RunSummary {
        RunSummary {
            id: "r".into(),
            dir: PathBuf::from("r"),
            command: Some(command.into()),
            status,
            state: None,
            iterations: None,
            started_at: Some(now - chrono::Duration::days(age_days)),
            duration_ms: None,
            board: None,
            profile: None,
            pid: None,
            problem: None,
        }
    }

    #[test]
    fn live_and_resumable_runs_are_kept_unless_asked_and_young_ones_by_age() {
        let now = Utc::now();
        let opts = |resumable, older_than| PruneOptions {
            repo: PathBuf::from("."),
            older_than,
            resumable,
            dry_run: true,
        };
        let week = Some(Duration::from_secs(7 * 86_400));
        let done = run(RunStatus::Finished(Status::Success), "run", 10, now);
        assert_eq!(keep(&done, &opts(false, week), now), None);
        let young = run(RunStatus::Finished(Status::Passed), "test", 1, now);
        assert_eq!(
            keep(&young, &opts(false, week), now).as_deref(),
            Some("younger than 7d")
        );
        for status in [
            RunStatus::Finished(Status::Aborted),
            RunStatus::Finished(Status::Failure),
            RunStatus::Killed,
        ] {
            let r = run(status, "run", 10, now);
            assert!(
                keep(&r, &opts(false, None), now).is_some_and(|why| why.contains("fwfix resume r"))
            );
            assert_eq!(keep(&r, &opts(true, None), now), None);
        }
        let failed_test = run(RunStatus::Finished(Status::Failed), "test", 10, now);
        assert_eq!(keep(&failed_test, &opts(false, None), now), None);
        for live in [RunStatus::Running, RunStatus::RunningOrKilled] {
            assert!(keep(&run(live, "run", 10, now), &opts(true, None), now).is_some());
        }
    }
}
