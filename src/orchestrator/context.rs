//! The run context: everything a run must remember across a crash, checkpointed atomically to
//! `context.json` after every transition. `fwfix resume` rebuilds a run from it alone.
//!
//! The decision bookkeeping is `machine::ledger::Ledger`; this adds what only the orchestrator
//! needs to carry on: the options the run was started with, the repository snapshots, the targets,
//! the history of iterations, and the records the report is made from.

use crate::analysis::{CrashReport, Location};
use crate::governor::CandidateRecord;
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
}

/// The fix a converged run produced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FixRecord {
    pub branch: String,
    pub commit: String,
    /// `fix.patch`, relative to the run directory.
    pub patch: String,
    pub fixed: Vec<String>,
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
    pub strategy_state: serde_json::Value,
    /// Hints a person added with `fwfix resume --hint`.
    pub hints: Vec<String>,
    pub build: Option<BuildRecord>,
    /// Attempts on the current image.
    pub attempts: Vec<AttemptRecord>,
    pub final_reason: String,
    pub final_class: Option<ErrorClass>,
    pub fix: Option<FixRecord>,
    /// The board's power across attempts.
    #[serde(default)]
    pub power: PowerState,
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
    /// Writes `context.json` atomically.
    pub fn checkpoint(&self, run_dir: &Path) -> std::io::Result<()> {
        let bytes = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        rundir::write_atomic(&run_dir.join("context.json"), &bytes)
    }

    /// Reads `context.json`.
    pub fn load(run_dir: &Path) -> Result<RunContext, String> {
        let path = run_dir.join("context.json");
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
        let ctx: RunContext = serde_json::from_str(&text)
            .map_err(|e| format!("{}:{}:{}: {e}", path.display(), e.line(), e.column()))?;
        if ctx.format != CONTEXT_FORMAT {
            return Err(format!(
                "{} has format {}, this fwfix reads format {CONTEXT_FORMAT}",
                path.display(),
                ctx.format
            ));
        }
        Ok(ctx)
    }

    /// The best partial patch so far: most targets fixed, nothing regressed.
    pub fn best_partial(&self) -> Option<&IterationRecord> {
        self.history
            .iter()
            .filter(|r| r.verdict == IterationVerdict::Partial)
            .max_by_key(|r| r.judgement.as_ref().map(|j| j.fixed.len()).unwrap_or(0))
    }
}
