//! Culprit finding, the I/O side: `fwfix bisect`, and the culprit finder behind the `revert`
//! strategy. A step is a `fwfix test` of one commit, run by the same engine in a worktree of the
//! bisect's own; `bisect::Bisector` decides which commit comes next.
//!
//! A bisect, step by step:
//! 1. Resolve the good and bad refs and the first-parent line between them (an unknown ref is a
//!    usage error naming it), then the board and profile, once for every step.
//! 2. Create the run directory and a linked worktree in it at the bad commit. The owner's HEAD,
//!    index and working tree are never touched: every checkout happens in that worktree, which
//!    keeps its build outputs from step to step so builds stay incremental.
//! 3. Test the good ref (it must pass) and the bad ref (it must fail); otherwise stop and say so.
//! 4. Probe the commit the search names until it has nothing left: a commit that does not build is
//!    SKIP, a step the environment spoiled is tried again (never counted as bad), and `--runs N`
//!    decides each step by majority.
//! 5. Verify the culprit (it fails, its first parent passes), testing either again when its step
//!    was not unanimous; or report the range of candidates skipped commits leave.
//! 6. Remove the worktree and write report.json (with every step and a confidence), report.md and
//!    junit.xml. Each step's own run directory stays under `steps/`.

use super::error::OrchestratorError;
use super::job::{self, canonical_repo, Finished, StepOptions};
use super::worktree::Worktree;
use crate::bisect::{
    confidence, judge, Answer, BisectStep, Bisector, StepRole, StepVerdict, Tally,
};
use crate::config::{self, Board, Profile};
use crate::events::{Event, EventSink, Level};
use crate::machine::{ErrorClass, State};
use crate::repo::{CommitInfo, Repo};
use crate::report::{self, Command, Report, Status};
use crate::results::Verdict;
use crate::rundir::{self, RunDir};
use crate::strategy::revert::{Culprit, CulpritFinder};
use crate::strategy::StrategyError;
use chrono::{DateTime, Utc};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;
use tokio_util::sync::CancellationToken;

/// How many more times a step the environment spoiled is tried before the bisect stops as an
/// infrastructure error (the engine has already retried inside the step, within the profile's
/// `[recovery]` budgets).
const INFRA_RETRIES: u32 = 2;

/// Options of `fwfix bisect`.
#[derive(Debug, Clone)]
pub struct BisectOptions {
    pub repo: PathBuf,
    /// A board file path or name.
    pub board: String,
    /// A profile file path or name.
    pub profile: String,
    /// A ref whose tests pass.
    pub good: String,
    /// A ref whose tests fail (`HEAD` by default on the command line).
    pub bad: String,
    /// Runs of each step's test; the majority decides.
    pub runs: u32,
    /// The board's lease and health gate, held for every step.
    pub access: super::board::BoardAccess,
}

/// `fwfix bisect`: finds the first commit on the first-parent line from `good` to `bad` whose
/// tests fail.
pub async fn bisect(
    opts: BisectOptions,
    events: &dyn EventSink,
    cancel: CancellationToken,
) -> Result<Finished, OrchestratorError> {
    let repo = canonical_repo(&opts.repo)?;
    remove_dead_bisects_worktrees(&repo);
    let line = resolve_range(&repo, &opts.good, &opts.bad)?;
    let board = config::resolve_board(&opts.board, &repo)?;
    let profile = config::resolve_profile(&opts.profile, &repo)?;
    let runs = opts.runs.max(1);
    let started = Utc::now();
    let run_dir = RunDir::create(&repo, started).map_err(|source| OrchestratorError::RunDir {
        path: repo.join(rundir::RUNS_DIR),
        source,
    })?;
    if let Err(e) = crate::repo::ensure_excluded(&repo, "/.fwfix/") {
        events.emit(&Event::Message {
            level: Level::Warning,
            text: format!("could not add .fwfix/ to .git/info/exclude: {e}"),
        });
    }
    let run_json = serde_json::json!({
        "run_id": run_dir.id(),
        "command": Command::Bisect.name(),
        "request": {
            "repo": repo, "board": opts.board, "profile": opts.profile,
            "good": opts.good, "bad": opts.bad, "runs": runs,
        },
        "pid": std::process::id(),
        "host": crate::process::host_name(),
        "started_at": started,
        "fwfix_version": env!("CARGO_PKG_VERSION"),
    });
    serde_json::to_vec_pretty(&run_json)
        .map_err(std::io::Error::other)
        .and_then(|b| rundir::write_atomic(&run_dir.path().join("run.json"), &b))
        .map_err(|source| OrchestratorError::RunDir {
            path: run_dir.path().to_path_buf(),
            source,
        })?;
    events.emit(&Event::RunStarted {
        run_id: run_dir.id().to_string(),
        command: Command::Bisect.name().to_string(),
        run_dir: run_dir.path().display().to_string(),
        repo: repo.display().to_string(),
    });
    let setup = EngineFinder {
        owner: repo,
        board_arg: opts.board,
        profile_arg: opts.profile,
        board,
        profile,
        runs,
        events,
    };
    let mut engine = setup.engine(run_dir.path(), run_dir.id(), cancel.clone());
    // The board is the bisect's from its first step to its report.
    let claim = super::board::claim(
        &engine.board,
        &opts.access,
        run_dir.id(),
        Command::Bisect.name(),
        &cancel,
        events,
    )
    .await;
    let (outcome, claim) = match claim {
        Ok(claim) => (engine.run(&line, &opts.good, &opts.bad).await, claim),
        Err(e) => (
            Outcome {
                end: if cancel.is_cancelled() {
                    End::Aborted
                } else {
                    End::Infrastructure(ErrorClass::TestEnvFailure)
                },
                message: e.to_string(),
                notes: Vec::new(),
                shown: None,
            },
            super::board::Claim::default(),
        ),
    };
    let mut report = engine.report(&outcome, run_dir.id(), started);
    report.lease = claim.lease.as_ref().map(|l| l.info().clone());
    report.notes.extend(claim.notes);
    report::write(run_dir.path(), &report, rundir::Durability::Synced).map_err(|e| {
        OrchestratorError::RunDir {
            path: run_dir.path().to_path_buf(),
            source: std::io::Error::other(e.to_string()),
        }
    })?;
    Ok(Finished {
        command: Command::Bisect,
        final_state: report.final_state,
        error_class: report.error_class,
        run_dir: run_dir.path().to_path_buf(),
        report,
    })
}

/// The first-parent line from `good` to `bad`, oldest first. An unknown ref, or a good commit
/// that is not on the bad one's mainline, is a usage error naming it.
pub(super) fn resolve_range(
    repo: &Path,
    good: &str,
    bad: &str,
) -> Result<Vec<CommitInfo>, OrchestratorError> {
    let usage = |e: crate::repo::RepoError| OrchestratorError::Usage(e.to_string());
    let owner = Repo::open(repo).map_err(usage)?;
    let good_commit = owner
        .resolve_commit(good)
        .map_err(|e| OrchestratorError::Usage(format!("--good: {e}")))?;
    let bad_commit = owner
        .resolve_commit(bad)
        .map_err(|e| OrchestratorError::Usage(format!("--bad: {e}")))?;
    if good_commit.id == bad_commit.id {
        return Err(OrchestratorError::Usage(format!(
            "--good {good} and --bad {bad} are the same commit {}",
            good_commit.short()
        )));
    }
    owner
        .first_parent_range(&good_commit.id, &bad_commit.id)
        .map_err(usage)
}

/// What every bisect step is built and tested with; as the `revert` strategy's culprit finder, the
/// same bisect `fwfix bisect` runs, recorded under the fix run's iteration directory.
pub(super) struct EngineFinder<'a> {
    /// The owner's repository, whose history is searched.
    pub owner: PathBuf,
    pub board_arg: String,
    pub profile_arg: String,
    pub board: Board,
    pub profile: Profile,
    pub runs: u32,
    pub events: &'a dyn EventSink,
}

impl<'a> EngineFinder<'a> {
    /// A bisect recorded in `dir`, its worktree named after `tag`.
    fn engine(&self, dir: &Path, tag: &str, cancel: CancellationToken) -> Engine<'a> {
        Engine {
            owner: self.owner.clone(),
            board_arg: self.board_arg.clone(),
            profile_arg: self.profile_arg.clone(),
            board: self.board.clone(),
            profile: self.profile.clone(),
            runs: self.runs,
            dir: dir.to_path_buf(),
            tag: tag.to_string(),
            events: self.events,
            cancel,
            steps: Vec::new(),
            reports: HashMap::new(),
            worktree: None,
        }
    }
}

#[async_trait::async_trait]
impl CulpritFinder for EngineFinder<'_> {
    async fn find(
        &mut self,
        good: &str,
        bad: &str,
        records: &Path,
        cancel: &CancellationToken,
    ) -> Result<Culprit, StrategyError> {
        let line = resolve_range(&self.owner, good, bad)
            .map_err(|e| StrategyError::Failed(e.to_string()))?;
        remove_stale_worktrees(&self.owner, records);
        // A resumed run that was interrupted mid-bisect starts a fresh one beside the old.
        let mut dir = records.join("bisect");
        let mut n = 1;
        while dir.exists() {
            n += 1;
            dir = records.join(format!("bisect-{n}"));
        }
        let bisect_dir = RunDir::create_at(&dir)
            .map_err(|e| StrategyError::Failed(format!("{}: {e}", dir.display())))?;
        // `<run-id>-iter-001-bisect`: unique among the repository's worktrees.
        let name = |p: &Path| {
            p.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        let run_id = records.parent().map(name).unwrap_or_default();
        let tag = format!("{run_id}-{}-{}", name(records), bisect_dir.id());
        let started = Utc::now();
        let mut engine = self.engine(&dir, &tag, cancel.clone());
        let outcome = engine.run(&line, good, bad).await;
        let report = engine.report(&outcome, &tag, started);
        if let Err(e) = report::write(&dir, &report, rundir::Durability::Synced) {
            self.events.emit(&Event::Message {
                level: Level::Warning,
                text: format!("could not write the bisect's report: {e}"),
            });
        }
        match outcome.end {
            End::Culprit(commit) => Ok(Culprit {
                commit,
                confidence: report.confidence.map(|c| c.value()).unwrap_or(0.0),
                record: dir,
            }),
            End::Aborted => Err(StrategyError::Cancelled),
            // A range without a culprit leaves nothing to revert; a bisect that could not run
            // is the environment's failure.
            End::NoCulprit => Err(StrategyError::Exhausted(format!(
                "bisect ({}): {}",
                dir.display(),
                outcome.message
            ))),
            End::Infrastructure(_) => Err(StrategyError::Failed(format!(
                "bisect ({}): {}",
                dir.display(),
                outcome.message
            ))),
        }
    }
}

/// Removes the worktrees of earlier bisects under `records` that were killed before they could
/// clean up (`kill -9`, a power cut), so a resumed fix run leaves none behind.
fn remove_stale_worktrees(owner: &Path, records: &Path) {
    let Ok(bisects) = std::fs::read_dir(records) else {
        return;
    };
    let Ok(repo) = Repo::open(owner) else { return };
    for bisect in bisects.flatten() {
        if bisect.file_name().to_string_lossy().starts_with("bisect") {
            remove_worktrees_in(&repo, &bisect.path());
        }
    }
}

/// Removes the bisect worktrees (`worktree-*`) directly under `dir`.
fn remove_worktrees_in(repo: &Repo, dir: &Path) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if entry.file_name().to_string_lossy().starts_with("worktree-") {
            // Not ours, or already gone: nothing to do.
            let _ = repo.remove_worktree(&entry.path());
        }
    }
}

/// Removes the worktrees of this repository's `fwfix bisect` runs whose process is gone from
/// this host (`kill -9`, a power cut): git keeps them registered, and nothing else would. A pid
/// the system has reused reads as alive, and its worktree stays: the safe side.
fn remove_dead_bisects_worktrees(owner: &Path) {
    let Ok(runs) = std::fs::read_dir(owner.join(rundir::RUNS_DIR)) else {
        return;
    };
    let Ok(repo) = Repo::open(owner) else { return };
    let host = crate::process::host_name();
    for run in runs.flatten() {
        let Some(record) = rundir::run_record(&run.path()) else {
            continue;
        };
        let dead = record.command.as_deref() == Some(Command::Bisect.name())
            && record.host.as_deref() == Some(host.as_str())
            && record.pid.is_some_and(|p| !crate::process::alive(p));
        if dead {
            remove_worktrees_in(&repo, &run.path());
        }
    }
}

/// How a search ended.
#[derive(Debug, Clone, PartialEq, Eq)]
enum End {
    /// The first bad commit, verified.
    Culprit(CommitInfo),
    /// No verified culprit; the message says why.
    NoCulprit,
    /// The environment kept failing.
    Infrastructure(ErrorClass),
    Aborted,
}

#[derive(Debug, Clone)]
struct Outcome {
    end: End,
    message: String,
    notes: Vec<String>,
    /// The commit whose latest step the report's cases come from.
    shown: Option<String>,
}

impl Outcome {
    fn no_culprit(message: String, shown: &CommitInfo) -> Outcome {
        Outcome {
            end: End::NoCulprit,
            message,
            notes: Vec::new(),
            shown: Some(shown.id.clone()),
        }
    }
}

/// Why a search stopped before it had an answer.
enum Stop {
    Infrastructure(ErrorClass, String),
    Aborted(String),
}

/// One bisect in progress.
struct Engine<'a> {
    owner: PathBuf,
    board_arg: String,
    profile_arg: String,
    board: Board,
    profile: Profile,
    runs: u32,
    /// The bisect's run directory.
    dir: PathBuf,
    /// Unique among this repository's bisects: names the worktree.
    tag: String,
    events: &'a dyn EventSink,
    cancel: CancellationToken,
    steps: Vec<BisectStep>,
    /// The latest step report of each commit tested.
    reports: HashMap<String, Report>,
    worktree: Option<Worktree>,
}

impl Engine<'_> {
    /// Searches `line` and always removes the worktree afterwards.
    async fn run(&mut self, line: &[CommitInfo], good_ref: &str, bad_ref: &str) -> Outcome {
        let outcome = match self.search(line, good_ref, bad_ref).await {
            Ok(outcome) => outcome,
            Err(Stop::Infrastructure(class, message)) => Outcome {
                end: End::Infrastructure(class),
                message,
                notes: Vec::new(),
                shown: self.steps.last().map(|s| s.commit.clone()),
            },
            Err(Stop::Aborted(message)) => Outcome {
                end: End::Aborted,
                message,
                notes: Vec::new(),
                shown: None,
            },
        };
        if let Some(wt) = self.worktree.take() {
            if let Err(e) = wt.remove() {
                self.events.emit(&Event::Message {
                    level: Level::Warning,
                    text: format!("could not remove the bisect worktree: {e}"),
                });
            }
        }
        outcome
    }

    async fn search(
        &mut self,
        line: &[CommitInfo],
        good_ref: &str,
        bad_ref: &str,
    ) -> Result<Outcome, Stop> {
        let (Some(good), Some(bad)) = (line.first(), line.last()) else {
            return Err(Stop::Infrastructure(
                ErrorClass::Unhandled,
                "no commits to search".to_string(),
            ));
        };
        self.open_worktree(bad)?;

        let verdict = self.probe(good, StepRole::GoodCheck).await?;
        if verdict != StepVerdict::Good {
            return Ok(Outcome::no_culprit(
                format!(
                    "good ref `{good_ref}` ({} {}) is not good: {}: {}",
                    good.short(),
                    good.subject,
                    verdict,
                    self.last_reason()
                ),
                good,
            ));
        }
        let verdict = self.probe(bad, StepRole::BadCheck).await?;
        if verdict != StepVerdict::Bad {
            return Ok(Outcome::no_culprit(
                format!(
                    "bad ref `{bad_ref}` ({} {}) is not bad: {}: {}",
                    bad.short(),
                    bad.subject,
                    verdict,
                    self.last_reason()
                ),
                bad,
            ));
        }

        let mut search = Bisector::new(line.len())
            .map_err(|e| Stop::Infrastructure(ErrorClass::Unhandled, e.to_string()))?;
        while let Some(i) = search.next_probe() {
            let commit = &line[i];
            let verdict = self.probe(commit, StepRole::Probe).await?;
            if let Err(e) = search.record(i, verdict) {
                return Ok(Outcome::no_culprit(
                    format!(
                        "the results contradict each other at {} ({e}): the tests may be too \
                         flaky for --runs {}",
                        commit.short(),
                        self.runs
                    ),
                    commit,
                ));
            }
        }
        match search.answer() {
            Some(Answer::Culprit(i)) if i > 0 => self.verify(&line[i - 1], &line[i]).await,
            Some(Answer::Ambiguous { first, last }) => {
                let candidates = &line[first..=last];
                let mut notes = vec![format!(
                    "candidates (oldest first): {}",
                    candidates
                        .iter()
                        .map(|c| format!("{} {}", c.short(), c.subject))
                        .collect::<Vec<_>>()
                        .join("; ")
                )];
                notes.push(format!(
                    "last good: {} {}",
                    line[first - 1].short(),
                    line[first - 1].subject
                ));
                Ok(Outcome {
                    end: End::NoCulprit,
                    message: format!(
                        "the first bad commit is one of {} commits from {} to {}: the skipped \
                         ones could not be tested, so fwfix does not guess",
                        candidates.len(),
                        line[first].short(),
                        line[last].short()
                    ),
                    notes,
                    shown: Some(line[last].id.clone()),
                })
            }
            Some(Answer::Culprit(_)) | None => Err(Stop::Infrastructure(
                ErrorClass::Unhandled,
                "the search ended without an answer".to_string(),
            )),
        }
    }

    /// The culprit stands when it fails and its first parent passes. A commit whose step was
    /// unanimous is settled; one that was not is tested again and must give the same verdict.
    async fn verify(&mut self, parent: &CommitInfo, culprit: &CommitInfo) -> Result<Outcome, Stop> {
        for (commit, expected) in [(parent, StepVerdict::Good), (culprit, StepVerdict::Bad)] {
            let settled = self
                .steps
                .iter()
                .rev()
                .find(|s| {
                    s.commit == commit.id
                        && matches!(s.verdict, StepVerdict::Good | StepVerdict::Bad)
                })
                .is_some_and(|s| s.unanimous && s.verdict == expected);
            if settled {
                continue;
            }
            let verdict = self.probe(commit, StepRole::Verify).await?;
            if verdict != expected {
                return Ok(Outcome::no_culprit(
                    format!(
                        "culprit {} could not be verified: {} {} was {expected}, tested again it \
                         is {verdict} ({}); the tests are too flaky for --runs {}",
                        culprit.short(),
                        if commit.id == culprit.id {
                            "the culprit"
                        } else {
                            "its first parent"
                        },
                        commit.short(),
                        self.last_reason(),
                        self.runs
                    ),
                    culprit,
                ));
            }
        }
        let skipped = self
            .steps
            .iter()
            .filter(|s| s.verdict == StepVerdict::Skip)
            .count();
        Ok(Outcome {
            end: End::Culprit(culprit.clone()),
            message: format!(
                "culprit {} \"{}\": it fails and its first parent {} passes ({}, {} skipped)",
                culprit.short(),
                culprit.subject,
                parent.short(),
                report::plural(self.steps.len(), "step"),
                skipped
            ),
            notes: Vec::new(),
            shown: Some(culprit.id.clone()),
        })
    }

    /// Tests `commit`, again when the environment spoiled the step, up to [`INFRA_RETRIES`]
    /// more times.
    async fn probe(&mut self, commit: &CommitInfo, role: StepRole) -> Result<StepVerdict, Stop> {
        let mut tries = 0;
        loop {
            let (verdict, class) = self.test_commit(commit, role).await?;
            if verdict != StepVerdict::Error {
                return Ok(verdict);
            }
            if tries == INFRA_RETRIES {
                return Err(Stop::Infrastructure(
                    class.unwrap_or(ErrorClass::Unhandled),
                    format!(
                        "{} could not be tested in {} tries: {}",
                        commit.short(),
                        tries + 1,
                        self.last_reason()
                    ),
                ));
            }
            tries += 1;
            self.events.emit(&Event::Message {
                level: Level::Warning,
                text: format!(
                    "bisect: the environment failed on {}; testing it again ({tries} of \
                     {INFRA_RETRIES})",
                    commit.short()
                ),
            });
        }
    }

    /// One step: check `commit` out in the worktree and run `fwfix test` on it.
    async fn test_commit(
        &mut self,
        commit: &CommitInfo,
        role: StepRole,
    ) -> Result<(StepVerdict, Option<ErrorClass>), Stop> {
        if self.cancel.is_cancelled() {
            return Err(Stop::Aborted("interrupted (Ctrl+C or SIGTERM)".to_string()));
        }
        let Some(wt) = &self.worktree else {
            return Err(Stop::Infrastructure(
                ErrorClass::Unhandled,
                "no worktree".to_string(),
            ));
        };
        wt.repo.checkout_detached(&commit.id).map_err(|e| {
            Stop::Infrastructure(
                ErrorClass::Unhandled,
                format!("checking out {}: {e}", commit.short()),
            )
        })?;
        let n = self.steps.len() + 1;
        let rel = format!("steps/{n:02}-{}", commit.short());
        self.events.emit(&Event::Message {
            level: Level::Info,
            text: format!(
                "bisect step {n} ({}): {} {}",
                role_name(role),
                commit.short(),
                commit.subject
            ),
        });
        let opts = StepOptions {
            work_dir: wt.path.clone(),
            run_dir: self.dir.join(&rel),
            board_arg: self.board_arg.clone(),
            profile_arg: self.profile_arg.clone(),
            board: self.board.clone(),
            profile: self.profile.clone(),
            repeat: self.runs,
        };
        let started = Instant::now();
        let finished = job::test_step(opts, self.events, self.cancel.clone())
            .await
            .map_err(|e| {
                Stop::Infrastructure(
                    ErrorClass::Unhandled,
                    format!("step {n} ({}): {e}", commit.short()),
                )
            })?;
        if finished.final_state == State::Aborted {
            return Err(Stop::Aborted(finished.report.message.clone()));
        }
        let (judged, tally, class) = classify(&finished, self.runs);
        let step = BisectStep {
            step: n as u32,
            role,
            commit: commit.id.clone(),
            subject: commit.subject.clone(),
            verdict: judged.verdict,
            runs: self.runs,
            passed: tally.passed,
            failed: tally.failed,
            duration_ms: started.elapsed().as_millis() as u64,
            run_dir: rel,
            reason: judged.reason,
            unanimous: tally.is_unanimous(),
        };
        self.events.emit(&Event::Message {
            level: Level::Info,
            text: format!(
                "bisect step {n}: {} is {}: {}",
                commit.short(),
                step.verdict,
                step.reason
            ),
        });
        self.steps.push(step);
        self.reports.insert(commit.id.clone(), finished.report);
        self.checkpoint();
        Ok((judged.verdict, class))
    }

    fn open_worktree(&mut self, at: &CommitInfo) -> Result<(), Stop> {
        let infra = |what: &str, e: crate::repo::RepoError| {
            Stop::Infrastructure(ErrorClass::Unhandled, format!("{what}: {e}"))
        };
        let owner = Repo::open(&self.owner).map_err(|e| infra("opening the repository", e))?;
        let path = self.dir.join(format!("worktree-{}", self.tag));
        let repo = owner
            .add_worktree_at(&path, &at.id)
            .map_err(|e| infra("creating the bisect worktree", e))?;
        self.worktree = Some(Worktree {
            owner: self.owner.clone(),
            path,
            repo,
            removed: false,
        });
        Ok(())
    }

    /// The reason of the latest step.
    fn last_reason(&self) -> String {
        self.steps
            .last()
            .map(|s| s.reason.clone())
            .unwrap_or_default()
    }

    /// `bisect.json`: the steps so far, rewritten after each one, so a bisect that is killed
    /// still says what it learnt.
    fn checkpoint(&self) {
        let progress = serde_json::json!({ "steps": self.steps });
        let written = serde_json::to_vec_pretty(&progress)
            .map_err(std::io::Error::other)
            .and_then(|b| rundir::write_atomic(&self.dir.join("bisect.json"), &b));
        if let Err(e) = written {
            self.events.emit(&Event::Message {
                level: Level::Warning,
                text: format!("could not write bisect.json: {e}"),
            });
        }
    }

    fn report(&self, outcome: &Outcome, run_id: &str, started: DateTime<Utc>) -> Report {
        let (status, state, class) = match &outcome.end {
            End::Culprit(_) => (Status::Success, State::Success, None),
            End::NoCulprit => (Status::Failure, State::Failure, None),
            End::Infrastructure(class) => (Status::Failure, State::Failure, Some(*class)),
            End::Aborted => (Status::Aborted, State::Aborted, None),
        };
        let mut report = Report::new(run_id, Command::Bisect, status, state, started, Utc::now());
        report.error_class = class;
        report.message = outcome.message.clone();
        report.repo = self.owner.display().to_string();
        report.board = self.board.name.clone();
        report.profile = self.profile.name.clone();
        let verified = matches!(outcome.end, End::Culprit(_));
        report.culprit = match &outcome.end {
            End::Culprit(c) => Some(c.id.clone()),
            End::NoCulprit | End::Infrastructure(_) | End::Aborted => None,
        };
        report.confidence = Some(confidence(&self.steps, verified));
        report.steps = self.steps.clone();
        let shown = outcome.shown.as_ref().and_then(|id| {
            let step = self.steps.iter().rev().find(|s| &s.commit == id)?;
            Some((step, self.reports.get(id)?))
        });
        if let Some((step, shown)) = shown {
            // The cases of the step the message is about; its file paths made relative to the
            // bisect's run directory.
            let prefix = |p: &str| format!("{}/{p}", step.run_dir);
            report.verdict = shown.verdict;
            report.cases = shown.cases.clone();
            report.crash = shown.crash.clone();
            report.hang_site = shown.hang_site.clone();
            report.hang_handler = shown.hang_handler.clone();
            report.console_silence = shown.console_silence.clone();
            report.pass_counts = shown.pass_counts.clone();
            report.build = shown.build.clone().map(|mut b| {
                b.log = prefix(&b.log);
                b
            });
            report.attempts = shown
                .attempts
                .iter()
                .cloned()
                .map(|mut a| {
                    a.console_log = prefix(&a.console_log);
                    a
                })
                .collect();
        }
        for s in &self.steps {
            report.notes.push(format!(
                "step {} ({}) {} \"{}\": {}, {} ({})",
                s.step,
                role_name(s.role),
                s.commit.get(..7).unwrap_or(&s.commit),
                s.subject,
                s.verdict,
                s.reason,
                s.run_dir
            ));
        }
        report.notes.extend(outcome.notes.iter().cloned());
        report
    }
}

fn role_name(role: StepRole) -> &'static str {
    match role {
        StepRole::GoodCheck => "good ref",
        StepRole::BadCheck => "bad ref",
        StepRole::Probe => "probe",
        StepRole::Verify => "verify",
    }
}

/// A step's verdict from how its `fwfix test` ended: a commit that does not build is SKIP, an
/// infrastructure failure ERROR, and otherwise the majority of its attempts decides.
fn classify(f: &Finished, runs: u32) -> (crate::bisect::Judged, Tally, Option<ErrorClass>) {
    let judged = |verdict, reason: String| crate::bisect::Judged { verdict, reason };
    match f.error_class {
        Some(ErrorClass::BuildFailure) => {
            // The compiler's first error says it best; the run's message when there is none.
            let first_error = f.report.build.as_ref().and_then(|b| {
                b.diagnostics
                    .iter()
                    .find(|d| d.severity == crate::analysis::Severity::Error)
            });
            let why = match first_error {
                Some(d) => report::describe_diagnostic(d),
                None => f.report.message.clone(),
            };
            return (
                judged(StepVerdict::Skip, format!("does not build: {why}")),
                Tally::default(),
                None,
            );
        }
        Some(class) => {
            return (
                judged(StepVerdict::Error, format!("{class}: {}", f.report.message)),
                Tally::default(),
                Some(class),
            )
        }
        None => {}
    }
    let mut tally = Tally::default();
    for attempt in &f.report.attempts {
        match attempt.verdict {
            Verdict::Pass => tally.passed += 1,
            Verdict::Fail | Verdict::Flaky => tally.failed += 1,
            Verdict::EnvError | Verdict::Inconclusive => tally.undecided += 1,
        }
    }
    let j = judge(tally, runs);
    let class = (j.verdict == StepVerdict::Error).then_some(ErrorClass::TestEnvFailure);
    (j, tally, class)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::AttemptSummary;

    fn finished(error_class: Option<ErrorClass>, verdicts: &[Verdict], message: &str) -> Finished {
        let mut report = Report::new(
            "r",
            Command::Test,
            Status::Failed,
            State::Failure,
            Utc::now(),
            Utc::now(),
        );
        report.message = message.into();
        report.attempts = verdicts
            .iter()
            .enumerate()
            .map(|(i, v)| AttemptSummary {
                attempt: i as u32 + 1,
                verdict: *v,
                end: "verdict".into(),
                exit_code: None,
                duration_ms: 1,
                console_log: "iter-000/console.log".into(),
                passed: 0,
                failed: 0,
                nonce: None,
                crash: None,
            })
            .collect();
        Finished {
            command: Command::Test,
            final_state: State::Failure,
            error_class,
            run_dir: PathBuf::new(),
            report,
        }
    }

    #[test]
    fn a_commit_that_does_not_build_is_skipped() {
        let f = finished(Some(ErrorClass::BuildFailure), &[], "build failed (exit 2)");
        let (j, tally, class) = classify(&f, 3);
        assert_eq!(j.verdict, StepVerdict::Skip);
        assert_eq!(j.reason, "does not build: build failed (exit 2)");
        assert_eq!(tally, Tally::default());
        assert_eq!(class, None);
    }

    #[test]
    fn an_infrastructure_failure_is_an_error_never_bad() {
        let f = finished(
            Some(ErrorClass::TestEnvFailure),
            &[Verdict::Fail],
            "qemu died",
        );
        let (j, _, class) = classify(&f, 1);
        assert_eq!(j.verdict, StepVerdict::Error);
        assert_eq!(class, Some(ErrorClass::TestEnvFailure));
        let spoiled = finished(None, &[Verdict::EnvError, Verdict::Pass, Verdict::Fail], "");
        let (j, tally, class) = classify(&spoiled, 3);
        assert_eq!(j.verdict, StepVerdict::Error);
        assert_eq!(tally.undecided, 1);
        assert_eq!(class, Some(ErrorClass::TestEnvFailure));
    }

    #[test]
    fn attempts_are_counted_and_the_majority_decides() {
        let f = finished(
            None,
            &[Verdict::Pass, Verdict::Fail, Verdict::Pass],
            "flaky",
        );
        let (j, tally, _) = classify(&f, 3);
        assert_eq!(j.verdict, StepVerdict::Good);
        assert_eq!((tally.passed, tally.failed), (2, 1));
        assert!(!tally.is_unanimous());
        let f = finished(None, &[Verdict::Fail, Verdict::Fail, Verdict::Flaky], "");
        assert_eq!(classify(&f, 3).0.verdict, StepVerdict::Bad);
    }
}
