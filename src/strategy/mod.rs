//! Patch strategies: turn evidence into candidate patches (unified diffs). Every candidate, from
//! whichever strategy, goes through the same PATCH_REVIEW gate; a strategy never touches the
//! repository's history and never applies anything itself.

pub mod command;
pub mod diff_extract;
pub mod llm;
pub mod queue;
pub mod revert;

use crate::machine::ErrorClass;
use crate::report::{RevertConflict, Tokens};
use std::path::PathBuf;
use tokio_util::sync::CancellationToken;

/// What a strategy is asked for one iteration.
#[derive(Debug, Clone)]
pub struct PatchRequest {
    /// The iteration the candidates are for (1 is the first patch).
    pub iteration: u32,
    /// One line: what must become true, e.g. "make test_crc16_known_vector pass without
    /// breaking the 4 tests that pass now".
    pub task: String,
    /// The evidence bundle (analysis.json's contents).
    pub evidence: serde_json::Value,
    /// The same evidence rendered for a person or a model.
    pub evidence_markdown: String,
    /// The working tree the patch is for (the repository, or the run's worktree).
    pub work_dir: PathBuf,
    /// This iteration's directory in the run directory, for the strategy's own records
    /// (prompt.md, response.json, ...).
    pub iteration_dir: PathBuf,
    /// How many candidates to produce at most.
    pub candidates: u32,
    /// For a strategy that edits the tree and is asked for several candidates: one work tree
    /// per candidate (linked worktrees off the rollback point), so that agents can work side by
    /// side without seeing each other's edits. The answer then holds one candidate per
    /// workspace, in this order. Empty: one candidate, made in `work_dir`.
    pub workspaces: Vec<PathBuf>,
}

/// One candidate patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// Where it came from, for traces and reports: a file name, `model gpt-x #2`, ...
    pub origin: String,
    /// A unified diff with `a/` and `b/` prefixes, paths relative to the working tree; empty
    /// from a tree-editing strategy when the edits are in the tree.
    pub diff: String,
    /// Why this one of several candidates could not be made (its agent failed) while others
    /// were: the round goes on without it, and the reason is recorded.
    pub failed: Option<String>,
}

impl Candidate {
    pub fn new(origin: impl Into<String>, diff: impl Into<String>) -> Candidate {
        Candidate {
            origin: origin.into(),
            diff: diff.into(),
            failed: None,
        }
    }
}

/// Why a strategy produced nothing usable. [`StrategyError::error_class`] says which error class
/// each is.
#[derive(Debug, thiserror::Error)]
pub enum StrategyError {
    /// The candidate exists but cannot be made to apply: its changes conflict with the tree (a
    /// revert that later work conflicts with). Reported, never forced.
    #[error("reverting {commit} ({subject}) conflicts with later changes in {}; fwfix does not force a revert", paths.join(", "))]
    Conflict {
        /// The commit whose revert conflicts (short id).
        commit: String,
        subject: String,
        paths: Vec<String>,
    },
    /// Nothing left to propose (a queue ran out): not a failure of the model, the end.
    #[error("no more candidates: {0}")]
    Exhausted(String),
    /// The model or agent answered with something that is not a usable patch; `raw` is kept.
    #[error("unusable answer: {reason}")]
    Unusable { reason: String, raw: String },
    /// The endpoint or program failed (connect, HTTP status, timeout, exit status).
    #[error("{0}")]
    Failed(String),
    #[error("cancelled")]
    Cancelled,
}

impl StrategyError {
    /// The machine's error class: a conflicting candidate is a patch that does not apply
    /// (PATCH_APPLY_FAILURE); an answer with no usable patch in it, or nothing left to propose, is
    /// NO_CANDIDATE (not converged); an endpoint or agent that failed is MODEL_FAILURE
    /// (infrastructure).
    pub fn error_class(&self) -> ErrorClass {
        match self {
            StrategyError::Conflict { .. } => ErrorClass::PatchApplyFailure,
            StrategyError::Exhausted(_) | StrategyError::Unusable { .. } => ErrorClass::NoCandidate,
            StrategyError::Failed(_) | StrategyError::Cancelled => ErrorClass::ModelFailure,
        }
    }
}

/// What a strategy adds to report.json beyond the loop's own records.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StrategyFacts {
    /// Token usage of a model strategy.
    pub tokens: Option<Tokens>,
    /// A culprit's revert that conflicts with later work.
    pub revert_conflict: Option<RevertConflict>,
}

/// A source of candidate patches.
#[async_trait::async_trait]
pub trait Strategy: Send {
    /// `queue`, `llm`, `command`, `revert`.
    fn name(&self) -> &'static str;

    /// Whether another call to [`Strategy::candidates`] could produce anything. A queue that
    /// has handed out its last file says false; a model always says true.
    fn has_more(&self) -> bool;

    /// Whether the strategy may edit the working tree instead of returning a diff; the loop then
    /// takes the edits as the candidate and restores the tree.
    fn edits_tree(&self) -> bool {
        false
    }

    /// Produces up to `req.candidates` candidate patches.
    async fn candidates(
        &mut self,
        req: &PatchRequest,
        cancel: &CancellationToken,
    ) -> Result<Vec<Candidate>, StrategyError>;

    /// The strategy's position, checkpointed with the run so a resumed run goes on from it.
    fn save(&self) -> serde_json::Value {
        serde_json::Value::Null
    }

    /// Restores what [`Strategy::save`] returned.
    fn load(&mut self, _saved: &serde_json::Value) {}

    /// Why [`Strategy::has_more`] says false, when there is more to say than "no more
    /// candidates" (a spent token budget).
    fn stopped(&self) -> Option<String> {
        None
    }

    /// What the report shows of this strategy (nothing by default).
    fn facts(&self) -> StrategyFacts {
        StrategyFacts::default()
    }
}
