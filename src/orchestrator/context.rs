//! The run context: everything a run must remember across a crash, checkpointed atomically to
//! `context.json` after every transition. `fwfix resume` rebuilds a run from it alone.
//!
//! The decision bookkeeping is `machine::ledger::Ledger`; this adds what only the orchestrator
//! needs to carry on: the options the run was started with, the repository snapshots, the targets,
//! the history of iterations, and the records the report is made from.
//!
//! The attempts on the current image are kept in a file of their own (`attempts-N.jsonl`, one
//! attempt a line, only ever appended to) that the context names with its committed length, so
//! a checkpoint writes only the attempts since the last one instead of every earlier attempt
//! again (with `--repeat 20` the context would otherwise be rewritten ~100 times while growing
//! to ~40 KB). A line past the committed length (a run killed between the append and the
//! checkpoint) is cut off before the next append. Contexts written before held the attempts
//! inline (`attempts`) and are still read.

use crate::analysis::{CrashReport, HandlerSite, Location};
use crate::capture::Capture;
use crate::governor::{CandidateRecord, Verdict};
use crate::inspect::CONTEXT_JSON;
use crate::machine::convergence::{IterationVerdict, Judgement, Targets};
use crate::machine::ledger::{Ledger, Limits};
use crate::machine::{ErrorClass, State};
use crate::repo::Snapshot;
use crate::report::{AttemptSummary, BuildSummary, Command, PowerCycle};
use crate::results::TestResults;
use crate::rundir::{self, TraceLine};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Version of the context file's layout; a resume refuses a context it does not know.
pub const CONTEXT_FORMAT: u32 = 1;

/// Which patch strategy a fix run uses, as given on the command line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StrategyChoice {
    Queue {
        patches: PathBuf,
    },
    /// Bisect between `good` and `bad` (refs as given; `fwfix run` stores the commit ids they
    /// resolved to) and propose the culprit's revert.
    Revert {
        good: String,
        bad: String,
    },
    /// An OpenAI-compatible endpoint, configured by the profile's `[strategy.llm]` and the
    /// FWFIX_LLM_* environment.
    Llm,
    /// An external agent program, from the profile's `[strategy.command]`.
    Command,
}

/// What the run was asked to do: enough to rebuild it on resume.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunRequest {
    /// The owner's repository (canonical path).
    pub repo: PathBuf,
    pub board: String,
    pub profile: String,
    /// `fwfix test --repeat`.
    pub repeat: u32,
    pub strategy: Option<StrategyChoice>,
    pub worktree: bool,
    /// The last known-good commit (`fwfix run --good`, resolved to its id): the files changed
    /// since it are evidence, and the code in them is suspect.
    #[serde(default)]
    pub good: Option<String>,
}

/// One iteration as the report and the next analysis see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IterationRecord {
    pub iteration: u32,
    /// Where the candidate came from (a file name, a model).
    pub origin: String,
    /// The candidate's diff, relative to the run directory.
    pub patch: String,
    pub verdict: IterationVerdict,
    pub reason: String,
    pub error_class: Option<ErrorClass>,
    pub judgement: Option<Judgement>,
}

/// A ranked candidate waiting for an iteration of its own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolEntry {
    pub origin: String,
    /// Its diff, relative to the run directory.
    pub diff: String,
    /// Where it was ranked, e.g. `c3 of iteration 1, ranked 2nd`.
    pub ranked: String,
}

/// The build as the report shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildRecord {
    pub summary: BuildSummary,
    pub artifact: PathBuf,
}

/// One attempt's results as the report shows them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttemptRecord {
    pub summary: AttemptSummary,
    pub results: TestResults,
    pub crash: Option<CrashReport>,
    pub hang_site: Option<Location>,
    /// The handler the core was stopped in above the hang site.
    #[serde(default)]
    pub hang_handler: Option<HandlerSite>,
    /// What the console did before a timeout (nothing at all, quiet since a line, still
    /// printing), with what that suggests.
    #[serde(default)]
    pub console_silence: Option<String>,
}

/// The fix a converged run produced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FixRecord {
    /// `fwfix/<run-id>`; None when the repository's commit hooks refused the fix.
    pub branch: Option<String>,
    pub commit: Option<String>,
    /// `fix.patch`, relative to the run directory.
    pub patch: String,
    pub fixed: Vec<String>,
    /// Set when the fix applies only on top of the owner's uncommitted work: the files the fix
    /// commit takes with that work in them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs_uncommitted: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunContext {
    pub format: u32,
    pub run_id: String,
    pub command: Command,
    pub request: RunRequest,
    pub pid: u32,
    pub host: String,
    pub started_at: DateTime<Utc>,
    /// Where builds run and patches apply: the repository, or the run's linked worktree.
    pub work_dir: PathBuf,
    /// The linked worktree, when `--worktree` was given.
    pub worktree: Option<PathBuf>,
    /// The state the run is in (the one whose handler runs next).
    pub state: State,
    /// The last transition, also the last line of trace.jsonl once written.
    pub last_line: Option<TraceLine>,
    pub ledger: Ledger,
    pub limits: Limits,
    /// Whether the unpatched tree has been measured in this (possibly resumed) run.
    pub baseline_done: bool,
    /// The owner's tree before the first patch, in the work tree's repository.
    pub base: Option<Snapshot>,
    /// A candidate may be in the work tree (set before applying, cleared by rollback).
    pub patch_applied: bool,
    pub targets: Option<Targets>,
    pub history: Vec<IterationRecord>,
    /// The current iteration's candidate: origin and diff path relative to the run directory.
    pub candidate: Option<(String, String)>,
    /// Reviewed candidates of an earlier round that survived its ranking, best first: tried by
    /// the next iterations before the strategy is asked again.
    #[serde(default)]
    pub pool: Vec<PoolEntry>,
    /// Every candidate of every round with its checks and verdict (candidates.json, the report).
    #[serde(default)]
    pub candidates: Vec<CandidateRecord>,
    /// The loadable-content digest of the unpatched tree's image: a candidate whose image
    /// digests the same is a no-op patch.
    #[serde(default)]
    pub baseline_image: Option<String>,
    /// The unpatched tree's lint findings: what a candidate's findings are compared with. None
    /// until the baseline was linted (and for good when it did not build).
    #[serde(default)]
    pub lint_baseline: Option<Vec<crate::analysis::lint::Finding>>,
    /// The lint stage on the last image it judged.
    #[serde(default)]
    pub lint: Option<crate::report::LintSummary>,
    /// What the run set aside or found about the owner's work on its way (a tree that changed
    /// while it was stopped, a fix that needs uncommitted work): kept for the report's notes.
    #[serde(default)]
    pub notes: Vec<String>,
    /// The run's agent works in linked worktrees of its own (several candidates are asked of
    /// it) and never edits the work tree: a kill in PATCH_GENERATION leaves that tree alone.
    #[serde(default)]
    pub agent_workspaces: bool,
    pub strategy_state: serde_json::Value,
    /// Hints a person added with `fwfix resume --hint`.
    pub hints: Vec<String>,
    pub build: Option<BuildRecord>,
    /// Attempts on the current image; on disk in [`RunContext::attempts_log`] (inline in
    /// contexts written before it existed, which are still read).
    #[serde(default, skip_serializing)]
    pub attempts: Vec<AttemptRecord>,
    /// Where [`RunContext::attempts`] is kept; None while no attempt of the current image was
    /// checkpointed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts_log: Option<AttemptsLog>,
    /// How many attempt files the run started: the next one's number.
    #[serde(default)]
    pub attempt_files: u32,
    pub final_reason: String,
    pub final_class: Option<ErrorClass>,
    pub fix: Option<FixRecord>,
    /// The board's power across attempts.
    #[serde(default)]
    pub power: PowerState,
    /// How many times the run was started over after it stopped (ABORTED, or FAILURE resumed
    /// with more iterations): each start-over measures the unpatched tree again, in a
    /// directory of its own (`iter-NNN/remeasure-K/`).
    #[serde(default)]
    pub restarts: u32,
    /// The last attempt's capture, from TEST_RUN until RESULT_ANALYSIS has read it: a run killed
    /// in between analyses what was captured instead of running the attempt again (which would
    /// write over the console.log the trace names).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capture: Option<Capture>,
}

/// The file the current image's attempts are appended to, as far as a checkpoint committed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttemptsLog {
    /// Its name in the run directory.
    pub file: String,
    /// Attempts (lines) committed.
    pub count: usize,
    /// Bytes committed: anything after them is an append no checkpoint took.
    pub bytes: u64,
}

/// What the run did to the board's power, and what it must do next.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PowerState {
    /// `[power] on` has run in this run.
    pub switched_on: bool,
    /// The attempt hung: TEST_SETUP power-cycles the board before it is run again; why.
    pub cycle_pending: Option<String>,
    /// The attempt under way is the run after a power cycle: a hang now is trusted.
    pub retrying: bool,
    pub cycles: Vec<PowerCycle>,
}

impl RunContext {
    /// Appends the attempts since the last checkpoint to their file, then writes `context.json`
    /// atomically (naming what the file now holds).
    pub fn checkpoint(
        &mut self,
        run_dir: &Path,
        durability: rundir::Durability,
    ) -> std::io::Result<()> {
        self.log_attempts(run_dir, durability)?;
        let bytes = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        rundir::rewrite_atomic_as(&run_dir.join(CONTEXT_JSON), &bytes, durability)
    }

    /// A new image: its attempts start from none, in a file of their own.
    pub fn new_image(&mut self) {
        self.attempts.clear();
        self.attempts_log = None;
    }

    fn log_attempts(
        &mut self,
        run_dir: &Path,
        durability: rundir::Durability,
    ) -> std::io::Result<()> {
        use std::io::Write as _;
        let (file, count, bytes) = match &self.attempts_log {
            Some(log) if log.count == self.attempts.len() => return Ok(()),
            Some(log) if log.count < self.attempts.len() => {
                (log.file.clone(), log.count, log.bytes)
            }
            // None, or fewer attempts than logged (cannot happen but by a new image): a new file.
            _ if self.attempts.is_empty() => {
                self.attempts_log = None;
                return Ok(());
            }
            _ => {
                self.attempt_files += 1;
                (format!("attempts-{}.jsonl", self.attempt_files), 0, 0)
            }
        };
        let mut lines = Vec::new();
        for attempt in &self.attempts[count..] {
            serde_json::to_writer(&mut lines, attempt).map_err(std::io::Error::other)?;
            lines.push(b'\n');
        }
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(run_dir.join(&file))?;
        // What no checkpoint committed (a run killed after its append) goes first.
        f.set_len(bytes)?;
        f.write_all(&lines)?;
        durability.sync(&f)?;
        if count == 0 {
            durability.sync_dir(run_dir);
        }
        self.attempts_log = Some(AttemptsLog {
            file,
            count: self.attempts.len(),
            bytes: bytes + lines.len() as u64,
        });
        Ok(())
    }

    /// The committed attempts of `log`, read from its file.
    fn read_attempts(run_dir: &Path, log: &AttemptsLog) -> Result<Vec<AttemptRecord>, String> {
        let path = run_dir.join(&log.file);
        let text =
            std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let committed = usize::try_from(log.bytes)
            .ok()
            .and_then(|n| text.get(..n))
            .ok_or_else(|| format!("{} is shorter than its context says", path.display()))?;
        let attempts = committed
            .split(|b| *b == b'\n')
            .filter(|line| !line.is_empty())
            .enumerate()
            .map(|(i, line)| {
                serde_json::from_slice(line)
                    .map_err(|e| format!("{}:{}: {e}", path.display(), i + 1))
            })
            .collect::<Result<Vec<AttemptRecord>, String>>()?;
        if attempts.len() != log.count {
            return Err(format!(
                "{} holds {} attempts where its context says {}",
                path.display(),
                attempts.len(),
                log.count
            ));
        }
        Ok(attempts)
    }

    /// Removes what checkpointing left beside `context.json` once the run's last checkpoint is
    /// written.
    pub fn checkpoints_done(run_dir: &Path) {
        rundir::remove_spare(&run_dir.join(CONTEXT_JSON));
    }

    /// Reads `context.json`.
    pub fn load(run_dir: &Path) -> Result<RunContext, String> {
        let path = run_dir.join(CONTEXT_JSON);
        let command = rundir::run_record(run_dir).and_then(|r| r.command);
        if !path.exists() && command.as_deref() == Some(Command::Bisect.name()) {
            return Err(format!(
                "{} is a bisect: a bisect keeps no context to resume from; run fwfix bisect \
                 again (it removes the worktree a killed bisect left)",
                run_dir.display()
            ));
        }
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let mut ctx: RunContext = serde_json::from_str(&text)
            .map_err(|e| format!("{}:{}:{}: {e}", path.display(), e.line(), e.column()))?;
        if let Some(log) = &ctx.attempts_log {
            ctx.attempts = Self::read_attempts(run_dir, log)?;
        }
        if ctx.format != CONTEXT_FORMAT {
            return Err(format!(
                "{} has format {}, this fwfix reads format {CONTEXT_FORMAT}",
                path.display(),
                ctx.format
            ));
        }
        Ok(ctx)
    }

    /// A stopped run starts over (IDLE after ABORTED, or after FAILURE given more iterations):
    /// the unpatched tree is measured again, and the work the stop cut short is done again
    /// rather than counted as spent — whatever stopped the run, as a run killed outright
    /// re-runs the step it was in. A candidate that had no verdict yet goes back to the front of
    /// the pool; a round that was not reviewed yet becomes the next iteration's round (see
    /// [`RunContext::carried_round`]); the iteration they were in is recorded as INTERRUPTED
    /// and counts against no limit. Doing it twice changes nothing more.
    pub fn restart(&mut self) {
        // A run killed before its first transition has nothing to do again.
        if self.last_line.is_none() {
            return;
        }
        self.baseline_done = false;
        self.restarts += 1;
        self.capture = None;
        let n = self.ledger.iteration;
        if n == 0 {
            return;
        }
        let candidate = self.candidate.take();
        let round: Vec<&CandidateRecord> = self
            .candidates
            .iter()
            .filter(|c| c.iteration == n && c.verdict == Verdict::Pending)
            .collect();
        let recorded = self.history.iter().any(|r| r.iteration == n);
        if candidate.is_none() && round.is_empty() && recorded {
            return;
        }
        let origin = match (&candidate, round.as_slice()) {
            (Some((origin, _)), _) => origin.clone(),
            (None, []) => "no candidate yet".to_string(),
            (None, round) => round
                .iter()
                .map(|c| c.origin.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        };
        let reason = match (&candidate, round.is_empty()) {
            (Some(_), _) => format!("stopped before its verdict; tried again after iteration {n}"),
            (None, false) => format!(
                "stopped while its round was reviewed; reviewed again in iteration {}",
                n + 1
            ),
            (None, true) => "stopped while its candidates were generated".to_string(),
        };
        for c in self
            .candidates
            .iter_mut()
            .filter(|c| c.iteration == n && c.verdict == Verdict::Pending)
        {
            c.iteration = n + 1;
        }
        self.history.push(IterationRecord {
            iteration: n,
            origin,
            patch: candidate
                .as_ref()
                .map(|(_, diff)| diff.clone())
                .unwrap_or_default(),
            verdict: IterationVerdict::Interrupted,
            reason,
            error_class: None,
            judgement: None,
        });
        if let Some((origin, diff)) = candidate {
            self.pool.insert(
                0,
                PoolEntry {
                    origin,
                    diff,
                    ranked: format!("iteration {n}'s candidate, cut short before its verdict"),
                },
            );
        }
        self.ledger.cut_short();
    }

    /// The round of the current iteration that an earlier iteration's stop left unreviewed
    /// (moved here by [`RunContext::restart`]): reviewed now instead of asking the strategy.
    pub fn carried_round(&self) -> Vec<&CandidateRecord> {
        let n = self.ledger.iteration;
        self.candidates
            .iter()
            .filter(|c| c.iteration == n && c.verdict == Verdict::Pending)
            .collect()
    }

    /// The diff (relative to the run directory) that may be in the work tree: the current
    /// candidate's, or, once its iteration was judged but before CODE_ANALYSIS rolled it back,
    /// the last one this iteration applied. None when no candidate may be in the tree.
    pub fn applied_patch(&self) -> Option<&str> {
        if !self.patch_applied {
            return None;
        }
        match &self.candidate {
            Some((_, patch)) => Some(patch),
            None => self
                .history
                .iter()
                .rev()
                .find(|r| r.iteration == self.ledger.iteration && !r.patch.is_empty())
                .map(|r| r.patch.as_str()),
        }
    }

    /// Whether candidates already in hand wait for an iteration: a pooled one, or a round
    /// [`RunContext::restart`] carried over to the next iteration.
    pub fn candidates_waiting(&self) -> bool {
        let n = self.ledger.iteration;
        !self.pool.is_empty()
            || self
                .candidates
                .iter()
                .any(|c| c.iteration > n && c.verdict == Verdict::Pending)
    }

    /// The best partial patch so far: most targets fixed, nothing regressed.
    pub fn best_partial(&self) -> Option<&IterationRecord> {
        self.history
            .iter()
            .filter(|r| r.verdict == IterationVerdict::Partial)
            .max_by_key(|r| r.judgement.as_ref().map(|j| j.fixed.len()).unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::governor::Checks;
    use crate::machine::Outcome;

    fn stopped_in_iteration(n: u32) -> RunContext {
        let mut ledger = Ledger::default();
        for _ in 0..n {
            ledger.begin_iteration();
        }
        RunContext {
            format: CONTEXT_FORMAT,
            run_id: "r".into(),
            command: Command::Run,
            request: RunRequest {
                repo: PathBuf::from("repo"),
                board: "b".into(),
                profile: "p".into(),
                repeat: 1,
                strategy: Some(StrategyChoice::Command),
                worktree: false,
                good: None,
            },
            pid: 1,
            host: "h".into(),
            started_at: DateTime::<Utc>::default(),
            work_dir: PathBuf::from("repo"),
            worktree: None,
            state: State::Aborted,
            last_line: Some(TraceLine {
                seq: 9,
                ts: String::new(),
                from: State::BuildRun,
                to: State::Aborted,
                outcome: Outcome::Abort,
                reason: "interrupted".into(),
                iteration: n,
                error_class: None,
                evidence: Vec::new(),
                evidence_sha256: Vec::new(),
            }),
            ledger,
            limits: Limits {
                max_iterations: 3,
                no_progress_limit: 3,
                confirm_runs: 1,
                flaky_reruns: 2,
            },
            baseline_done: true,
            base: None,
            patch_applied: false,
            targets: None,
            history: Vec::new(),
            candidate: None,
            pool: Vec::new(),
            candidates: Vec::new(),
            baseline_image: None,
            lint_baseline: None,
            lint: None,
            notes: Vec::new(),
            agent_workspaces: false,
            strategy_state: serde_json::Value::Null,
            hints: Vec::new(),
            build: None,
            attempts: Vec::new(),
            attempts_log: None,
            attempt_files: 0,
            final_reason: String::new(),
            final_class: None,
            fix: None,
            power: PowerState::default(),
            restarts: 0,
            capture: None,
        }
    }

    fn attempt(n: u32) -> AttemptRecord {
        use crate::results::Verdict as Run;
        AttemptRecord {
            summary: AttemptSummary {
                attempt: n,
                verdict: Run::Pass,
                end: "verdict".into(),
                exit_code: Some(0),
                duration_ms: 20,
                console_log: format!("iter-000/console-{n}.log"),
                passed: 5,
                failed: 0,
                nonce: None,
                crash: None,
            },
            results: TestResults {
                harness: "unity".into(),
                cases: Vec::new(),
                summary: None,
                verdict: Run::Pass,
                notes: Vec::new(),
            },
            crash: None,
            hang_site: None,
            hang_handler: None,
            console_silence: None,
        }
    }

    fn numbers(ctx: &RunContext) -> Vec<u32> {
        ctx.attempts.iter().map(|a| a.summary.attempt).collect()
    }

    #[test]
    fn attempts_are_appended_to_a_file_of_their_own_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let mut ctx = stopped_in_iteration(0);
        let cached = rundir::Durability::Cached;
        ctx.checkpoint(dir.path(), cached).unwrap();
        assert_eq!(ctx.attempts_log, None);
        for n in 1..=3 {
            ctx.attempts.push(attempt(n));
            ctx.checkpoint(dir.path(), cached).unwrap();
            // A checkpoint with nothing new appends nothing.
            ctx.checkpoint(dir.path(), cached).unwrap();
        }
        let text = std::fs::read_to_string(dir.path().join(CONTEXT_JSON)).unwrap();
        assert!(
            !text.contains("console-2.log"),
            "attempts stay out of context.json"
        );
        let file = dir.path().join("attempts-1.jsonl");
        assert_eq!(std::fs::read_to_string(&file).unwrap().lines().count(), 3);
        let loaded = RunContext::load(dir.path()).unwrap();
        assert_eq!(numbers(&loaded), [1, 2, 3]);

        // A new image starts a file of its own; the old one is no longer read.
        let mut ctx = loaded;
        ctx.new_image();
        ctx.checkpoint(dir.path(), cached).unwrap();
        assert!(RunContext::load(dir.path()).unwrap().attempts.is_empty());
        ctx.attempts.push(attempt(1));
        ctx.checkpoint(dir.path(), cached).unwrap();
        assert_eq!(ctx.attempts_log.as_ref().unwrap().file, "attempts-2.jsonl");
        assert_eq!(numbers(&RunContext::load(dir.path()).unwrap()), [1]);
    }

    #[test]
    fn an_append_no_checkpoint_committed_is_ignored_then_cut_off() {
        let dir = tempfile::tempdir().unwrap();
        let cached = rundir::Durability::Cached;
        let mut ctx = stopped_in_iteration(0);
        ctx.attempts.push(attempt(1));
        ctx.checkpoint(dir.path(), cached).unwrap();
        // Killed halfway through the next attempt's append: a torn line after the committed one.
        let file = dir.path().join("attempts-1.jsonl");
        let mut torn = std::fs::read(&file).unwrap();
        torn.extend_from_slice(br#"{"summary":{"attempt":2,"verd"#);
        std::fs::write(&file, torn).unwrap();
        let mut resumed = RunContext::load(dir.path()).unwrap();
        assert_eq!(numbers(&resumed), [1]);
        resumed.attempts.push(attempt(2));
        resumed.checkpoint(dir.path(), cached).unwrap();
        assert_eq!(numbers(&RunContext::load(dir.path()).unwrap()), [1, 2]);
    }

    #[test]
    fn a_context_with_its_attempts_inline_still_loads_and_moves_them_out() {
        let dir = tempfile::tempdir().unwrap();
        let mut ctx = stopped_in_iteration(0);
        ctx.attempts = vec![attempt(1), attempt(2)];
        // As fwfix wrote contexts before the attempts had a file.
        let mut old = serde_json::to_value(&ctx).unwrap();
        old["attempts"] = serde_json::to_value(&ctx.attempts).unwrap();
        std::fs::write(
            dir.path().join(CONTEXT_JSON),
            serde_json::to_vec_pretty(&old).unwrap(),
        )
        .unwrap();
        let mut loaded = RunContext::load(dir.path()).unwrap();
        assert_eq!(numbers(&loaded), [1, 2]);
        loaded.attempts.push(attempt(3));
        loaded
            .checkpoint(dir.path(), rundir::Durability::Cached)
            .unwrap();
        assert_eq!(numbers(&RunContext::load(dir.path()).unwrap()), [1, 2, 3]);
    }

    #[test]
    fn a_file_shorter_than_its_context_says_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let mut ctx = stopped_in_iteration(0);
        ctx.attempts.push(attempt(1));
        ctx.checkpoint(dir.path(), rundir::Durability::Cached)
            .unwrap();
        std::fs::write(dir.path().join("attempts-1.jsonl"), b"").unwrap();
        let error = RunContext::load(dir.path()).unwrap_err();
        assert!(error.contains("shorter than its context says"), "{error}");
    }

    fn pending(iteration: u32, id: &str) -> CandidateRecord {
        CandidateRecord {
            iteration,
            id: id.into(),
            origin: format!("{id}.diff"),
            diff: format!("iter-00{iteration}/candidates/{id}.diff"),
            changed_lines: 2,
            checks: Checks::pending(),
            verdict: Verdict::Pending,
            reason: String::new(),
            build_log: None,
            new_findings: Vec::new(),
        }
    }

    #[test]
    fn a_candidate_cut_short_goes_first_and_its_iteration_counts_against_no_limit() {
        let mut ctx = stopped_in_iteration(2);
        ctx.candidate = Some(("fix.diff".into(), "iter-002/patch.diff".into()));
        ctx.pool.push(PoolEntry {
            origin: "other.diff".into(),
            diff: "iter-001/candidates/c2.diff".into(),
            ranked: "c2 of iteration 1, ranked 2nd".into(),
        });
        ctx.restart();
        assert!(!ctx.baseline_done);
        assert_eq!(ctx.restarts, 1);
        assert_eq!(ctx.candidate, None);
        let first = &ctx.pool[0];
        assert_eq!(
            (first.origin.as_str(), first.diff.as_str()),
            ("fix.diff", "iter-002/patch.diff")
        );
        assert_eq!(ctx.pool.len(), 2);
        assert_eq!(ctx.ledger.tried(), 1);
        let record = ctx.history.last().unwrap();
        assert_eq!(
            (record.iteration, record.verdict),
            (2, IterationVerdict::Interrupted)
        );
        // Starting over again (killed before the next checkpoint, say) cuts nothing more short.
        ctx.restart();
        assert_eq!(
            (ctx.pool.len(), ctx.ledger.tried(), ctx.history.len()),
            (2, 1, 1)
        );
    }

    #[test]
    fn a_round_cut_short_in_review_becomes_the_next_iterations_round() {
        let mut ctx = stopped_in_iteration(1);
        ctx.candidates = vec![pending(1, "c1"), pending(1, "c2")];
        ctx.restart();
        assert!(
            ctx.carried_round().is_empty(),
            "not before the next iteration begins"
        );
        assert!(ctx.candidates_waiting());
        ctx.ledger.begin_iteration();
        let carried: Vec<&str> = ctx.carried_round().iter().map(|c| c.id.as_str()).collect();
        assert_eq!(carried, ["c1", "c2"]);
        assert_eq!(ctx.ledger.tried(), 1);
    }

    #[test]
    fn a_finished_iteration_and_a_run_that_never_started_have_nothing_to_redo() {
        let mut ctx = stopped_in_iteration(1);
        ctx.history.push(IterationRecord {
            iteration: 1,
            origin: "wrong.diff".into(),
            patch: "iter-001/patch.diff".into(),
            verdict: IterationVerdict::NoProgress,
            reason: "no progress".into(),
            error_class: None,
            judgement: None,
        });
        ctx.restart();
        assert_eq!((ctx.ledger.tried(), ctx.history.len()), (1, 1));
        assert!(ctx.pool.is_empty());

        let mut fresh = stopped_in_iteration(0);
        fresh.last_line = None;
        fresh.baseline_done = false;
        fresh.restart();
        assert_eq!(fresh.restarts, 0);
    }
}
