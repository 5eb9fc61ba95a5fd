//! The transition table: every legal edge of the run's state machine, as one exhaustive match.
//!
//! Handlers return an [`Outcome`]; only [`next`] picks the next state. Anything the match does not
//! list is an [`IllegalTransition`], never a silent fallback. [`edges`] enumerates the table by
//! asking [`next`] about every (state, outcome) pair, so `fwfix graph` and `fwfix audit` can never
//! drift from the function the orchestrator uses.

use super::state::{ErrorClass, State};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Where ERROR_RECOVERY may send a run: the nearest state that can go on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RecoveryTarget {
    CodeAnalysis,
    BuildRun,
    TestSetup,
    ResultCollection,
}

impl RecoveryTarget {
    pub const ALL: [RecoveryTarget; 4] = [
        RecoveryTarget::CodeAnalysis,
        RecoveryTarget::BuildRun,
        RecoveryTarget::TestSetup,
        RecoveryTarget::ResultCollection,
    ];

    pub fn state(self) -> State {
        match self {
            RecoveryTarget::CodeAnalysis => State::CodeAnalysis,
            RecoveryTarget::BuildRun => State::BuildRun,
            RecoveryTarget::TestSetup => State::TestSetup,
            RecoveryTarget::ResultCollection => State::ResultCollection,
        }
    }
}

/// What a state's handler reports. Each variant names one kind of edge of the table.
///
/// Serialised as its [`Outcome::code`], e.g. `"built"` or `"error:BUILD_FAILURE"`, so a trace
/// line reads plainly and replays exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum Outcome {
    /// IDLE: a task arrived.
    TaskReceived,
    /// INIT: context ready; go and reproduce the failure (iteration 0 is the baseline).
    ContextReady,
    /// CODE_ANALYSIS: evidence and a plan exist.
    EvidenceReady,
    /// PATCH_GENERATION: at least one candidate patch exists.
    CandidatesReady,
    /// PATCH_REVIEW: policy allows and, where required, a person approved.
    Approved,
    /// PATCH_REVIEW: a person rejected the patch; the reason becomes evidence.
    Rejected,
    /// PATCH_APPLY: applied on top of a fresh rollback point.
    Applied,
    /// BUILD_SETUP: toolchain and build configuration ready.
    BuildReady,
    /// BUILD_RUN: the image was built (the profile has no `[lint]`: the test is next).
    Built,
    /// BUILD_RUN: the image was built and the profile has a `[lint]`: the lint stage is next.
    BuiltForLint,
    /// LINT: no new findings (or they are only reported: `new_findings = "warn"`).
    LintPassed,
    /// TEST_SETUP: the DUT is ready.
    DutReady,
    /// TEST_RUN: the attempt finished (pass, fail, crash and hang are all results).
    RunFinished,
    /// RESULT_COLLECTION: results normalised.
    Collected,
    /// RESULT_ANALYSIS: a verdict was reached.
    Decided,
    /// CONVERGENCE_CHECK: targets pass on every confirmation run, nothing regressed, and there
    /// is nothing to commit (`fwfix test`, a baseline with nothing to fix).
    Converged,
    /// CONVERGENCE_CHECK: a candidate fixed the targets on every confirmation run and broke
    /// nothing; commit it.
    Fixed,
    /// COMMIT: the fix is committed on its branch.
    Committed,
    /// CONVERGENCE_CHECK: not yet; roll back and try the next iteration.
    NextIteration,
    /// CONVERGENCE_CHECK: run the same image again (unclear verdict, confirmation, repeat).
    Rerun,
    /// CONVERGENCE_CHECK: stop without success (iteration budget, no progress, tests failed).
    GiveUp,
    /// Any working state: the step could not go on.
    Error(ErrorClass),
    /// ERROR_RECOVERY: recovered to the given state.
    Recovered(RecoveryTarget),
    /// ERROR_RECOVERY: unrecoverable, or the class's retry budget is spent.
    Unrecoverable,
    /// Any non-terminal state: Ctrl+C, SIGTERM, deadline, abort requested.
    Abort,
    /// A terminal state was finalised (queue mode goes back to IDLE).
    Finalised,
}

impl Outcome {
    /// Every outcome, with every error class and recovery target spelled out.
    pub fn all() -> Vec<Outcome> {
        let mut all = vec![
            Outcome::TaskReceived,
            Outcome::ContextReady,
            Outcome::EvidenceReady,
            Outcome::CandidatesReady,
            Outcome::Approved,
            Outcome::Rejected,
            Outcome::Applied,
            Outcome::BuildReady,
            Outcome::Built,
            Outcome::BuiltForLint,
            Outcome::LintPassed,
            Outcome::DutReady,
            Outcome::RunFinished,
            Outcome::Collected,
            Outcome::Decided,
            Outcome::Converged,
            Outcome::Fixed,
            Outcome::Committed,
            Outcome::NextIteration,
            Outcome::Rerun,
            Outcome::GiveUp,
            Outcome::Unrecoverable,
            Outcome::Abort,
            Outcome::Finalised,
        ];
        all.extend(ErrorClass::ALL.iter().map(|c| Outcome::Error(*c)));
        all.extend(RecoveryTarget::ALL.iter().map(|t| Outcome::Recovered(*t)));
        all
    }

    /// A short label for diagrams and messages, e.g. `error` or `recovered:BUILD_RUN`.
    pub fn label(&self) -> String {
        match self {
            Outcome::TaskReceived => "task received".into(),
            Outcome::ContextReady => "context ready".into(),
            Outcome::EvidenceReady => "evidence ready".into(),
            Outcome::CandidatesReady => "candidates ready".into(),
            Outcome::Approved => "approved".into(),
            Outcome::Rejected => "rejected by a person".into(),
            Outcome::Applied => "applied".into(),
            Outcome::BuildReady => "build ready".into(),
            Outcome::Built => "built".into(),
            Outcome::BuiltForLint => "built, lint next".into(),
            Outcome::LintPassed => "no new findings".into(),
            Outcome::DutReady => "DUT ready".into(),
            Outcome::RunFinished => "run finished".into(),
            Outcome::Collected => "collected".into(),
            Outcome::Decided => "decided".into(),
            Outcome::Converged => "converged".into(),
            Outcome::Fixed => "fixed".into(),
            Outcome::Committed => "committed".into(),
            Outcome::NextIteration => "next iteration".into(),
            Outcome::Rerun => "run again".into(),
            Outcome::GiveUp => "give up".into(),
            Outcome::Error(class) => format!("error {class}"),
            Outcome::Recovered(target) => format!("recovered to {}", target.state()),
            Outcome::Unrecoverable => "unrecoverable".into(),
            Outcome::Abort => "abort".into(),
            Outcome::Finalised => "finalised".into(),
        }
    }
}

impl Outcome {
    /// The stable code used in traces: snake case, with the class or target after a colon.
    pub fn code(&self) -> String {
        match self {
            Outcome::Error(class) => format!("error:{class}"),
            Outcome::Recovered(target) => format!("recovered:{}", target.state()),
            other => other.simple_code().to_string(),
        }
    }

    fn simple_code(&self) -> &'static str {
        match self {
            Outcome::TaskReceived => "task_received",
            Outcome::ContextReady => "context_ready",
            Outcome::EvidenceReady => "evidence_ready",
            Outcome::CandidatesReady => "candidates_ready",
            Outcome::Approved => "approved",
            Outcome::Rejected => "rejected",
            Outcome::Applied => "applied",
            Outcome::BuildReady => "build_ready",
            Outcome::Built => "built",
            Outcome::BuiltForLint => "built_for_lint",
            Outcome::LintPassed => "lint_passed",
            Outcome::DutReady => "dut_ready",
            Outcome::RunFinished => "run_finished",
            Outcome::Collected => "collected",
            Outcome::Decided => "decided",
            Outcome::Converged => "converged",
            Outcome::Fixed => "fixed",
            Outcome::Committed => "committed",
            Outcome::NextIteration => "next_iteration",
            Outcome::Rerun => "rerun",
            Outcome::GiveUp => "give_up",
            Outcome::Error(_) => "error",
            Outcome::Recovered(_) => "recovered",
            Outcome::Unrecoverable => "unrecoverable",
            Outcome::Abort => "abort",
            Outcome::Finalised => "finalised",
        }
    }
}

impl From<Outcome> for String {
    fn from(o: Outcome) -> String {
        o.code()
    }
}

impl TryFrom<String> for Outcome {
    type Error = String;

    fn try_from(code: String) -> Result<Outcome, String> {
        Outcome::all()
            .into_iter()
            .find(|o| o.code() == code)
            .ok_or_else(|| format!("unknown outcome `{code}`"))
    }
}

/// A (state, outcome) pair the table does not allow.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("illegal transition: {from} cannot handle outcome `{}`", outcome.label())]
pub struct IllegalTransition {
    pub from: State,
    pub outcome: Outcome,
}

/// The transition function: pure, total over its input, and the only place a next state is chosen.
///
/// The outer match is over the outcome and each row names the one state it may come from, so a
/// new outcome cannot be added without deciding its edges; [`may_fail`] and [`State::is_terminal`]
/// match every state, so a new state cannot be added without deciding whether it can fail or abort.
pub fn next(from: State, outcome: Outcome) -> Result<State, IllegalTransition> {
    use Outcome as O;
    use State as S;
    let when = |allowed: bool, to: State| {
        if allowed {
            Ok(to)
        } else {
            Err(IllegalTransition { from, outcome })
        }
    };
    let edge = |allowed_from: State, to: State| when(from == allowed_from, to);
    match outcome {
        O::TaskReceived => edge(S::Idle, S::Init),
        O::ContextReady => edge(S::Init, S::BuildSetup),
        O::EvidenceReady => edge(S::CodeAnalysis, S::PatchGeneration),
        O::CandidatesReady => edge(S::PatchGeneration, S::PatchReview),
        O::Approved => edge(S::PatchReview, S::PatchApply),
        O::Rejected => edge(S::PatchReview, S::CodeAnalysis),
        O::Applied => edge(S::PatchApply, S::BuildSetup),
        O::BuildReady => edge(S::BuildSetup, S::BuildRun),
        O::Built => edge(S::BuildRun, S::TestSetup),
        O::BuiltForLint => edge(S::BuildRun, S::Lint),
        O::LintPassed => edge(S::Lint, S::TestSetup),
        O::DutReady => edge(S::TestSetup, S::TestRun),
        O::RunFinished => edge(S::TestRun, S::ResultCollection),
        O::Collected => edge(S::ResultCollection, S::ResultAnalysis),
        O::Decided => edge(S::ResultAnalysis, S::ConvergenceCheck),
        O::Converged => edge(S::ConvergenceCheck, S::Success),
        O::Fixed => edge(S::ConvergenceCheck, S::Commit),
        O::Committed => edge(S::Commit, S::Success),
        O::NextIteration => edge(S::ConvergenceCheck, S::CodeAnalysis),
        O::Rerun => edge(S::ConvergenceCheck, S::TestSetup),
        O::GiveUp => edge(S::ConvergenceCheck, S::Failure),
        O::Error(_) => when(may_fail(from), S::ErrorRecovery),
        O::Recovered(target) => edge(S::ErrorRecovery, target.state()),
        O::Unrecoverable => edge(S::ErrorRecovery, S::Failure),
        O::Abort => when(!from.is_terminal() && from != S::Idle, S::Aborted),
        O::Finalised => when(from.is_terminal(), S::Idle),
    }
}

/// States whose step can fail into ERROR_RECOVERY. CONVERGENCE_CHECK only decides, and
/// ERROR_RECOVERY itself gives up rather than failing again. COMMIT fails when a hook refuses.
fn may_fail(state: State) -> bool {
    match state {
        State::Init
        | State::CodeAnalysis
        | State::PatchGeneration
        | State::PatchReview
        | State::PatchApply
        | State::BuildSetup
        | State::BuildRun
        | State::Lint
        | State::TestSetup
        | State::TestRun
        | State::ResultCollection
        | State::ResultAnalysis
        | State::Commit => true,
        State::Idle
        | State::ConvergenceCheck
        | State::ErrorRecovery
        | State::Success
        | State::Failure
        | State::Aborted => false,
    }
}

/// One legal edge, for diagrams and audits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    pub from: State,
    pub to: State,
    /// Outcomes that take this edge (all error classes fold into one).
    pub label: String,
}

/// Every legal edge, found by asking [`next`] about every (state, outcome) pair. Error classes
/// and recovery targets are folded so each (from, to) pair appears once.
pub fn edges() -> Vec<Edge> {
    let mut edges: Vec<Edge> = Vec::new();
    for from in State::ALL {
        for outcome in Outcome::all() {
            let Ok(to) = next(from, outcome) else {
                continue;
            };
            let label = match outcome {
                Outcome::Error(_) => "error".to_string(),
                Outcome::Recovered(_) => "recovered".to_string(),
                other => other.label(),
            };
            if !edges.iter().any(|e| e.from == from && e.to == to) {
                edges.push(Edge { from, to, label });
            }
        }
    }
    edges
}

impl fmt::Display for Edge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} -> {} ({})", self.from, self.to, self.label)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use State as S;

    /// DESIGN.md's table, written out by hand: the function must allow exactly these pairs.
    fn design_table() -> Vec<(State, State)> {
        let working_with_errors = [
            S::Init,
            S::CodeAnalysis,
            S::PatchGeneration,
            S::PatchReview,
            S::PatchApply,
            S::BuildSetup,
            S::BuildRun,
            S::Lint,
            S::TestSetup,
            S::TestRun,
            S::ResultCollection,
            S::ResultAnalysis,
            S::Commit,
        ];
        let mut t = vec![
            (S::Idle, S::Init),
            (S::Init, S::BuildSetup),
            (S::CodeAnalysis, S::PatchGeneration),
            (S::PatchGeneration, S::PatchReview),
            (S::PatchReview, S::PatchApply),
            (S::PatchReview, S::CodeAnalysis),
            (S::PatchApply, S::BuildSetup),
            (S::BuildSetup, S::BuildRun),
            (S::BuildRun, S::TestSetup),
            (S::BuildRun, S::Lint),
            (S::Lint, S::TestSetup),
            (S::TestSetup, S::TestRun),
            (S::TestRun, S::ResultCollection),
            (S::ResultCollection, S::ResultAnalysis),
            (S::ResultAnalysis, S::ConvergenceCheck),
            (S::ConvergenceCheck, S::Success),
            (S::ConvergenceCheck, S::Commit),
            (S::Commit, S::Success),
            (S::ConvergenceCheck, S::CodeAnalysis),
            (S::ConvergenceCheck, S::TestSetup),
            (S::ConvergenceCheck, S::Failure),
            (S::ErrorRecovery, S::CodeAnalysis),
            (S::ErrorRecovery, S::BuildRun),
            (S::ErrorRecovery, S::TestSetup),
            (S::ErrorRecovery, S::ResultCollection),
            (S::ErrorRecovery, S::Failure),
            (S::Success, S::Idle),
            (S::Failure, S::Idle),
            (S::Aborted, S::Idle),
        ];
        t.extend(working_with_errors.iter().map(|s| (*s, S::ErrorRecovery)));
        for s in State::ALL {
            if !s.is_terminal() && s != S::Idle {
                t.push((s, S::Aborted));
            }
        }
        t
    }

    #[test]
    fn edges_match_the_design_table_exactly() {
        let mut got: Vec<(State, State)> = edges().iter().map(|e| (e.from, e.to)).collect();
        let mut want = design_table();
        got.sort();
        want.sort();
        assert_eq!(got, want);
    }

    #[test]
    fn every_legal_pair_is_reachable_and_every_other_pair_is_refused() {
        let table = design_table();
        for from in State::ALL {
            for outcome in Outcome::all() {
                match next(from, outcome) {
                    Ok(to) => assert!(table.contains(&(from, to)), "{from} -> {to} not in DESIGN"),
                    Err(e) => assert_eq!(e, IllegalTransition { from, outcome }),
                }
            }
        }
    }

    #[test]
    fn terminal_states_only_finalise() {
        for s in [S::Success, S::Failure, S::Aborted] {
            assert_eq!(next(s, Outcome::Finalised), Ok(S::Idle));
            assert!(next(s, Outcome::Abort).is_err());
            assert!(next(s, Outcome::Error(ErrorClass::Timeout)).is_err());
        }
    }

    #[test]
    fn idle_cannot_be_aborted_or_fail() {
        assert!(next(S::Idle, Outcome::Abort).is_err());
        assert!(next(S::Idle, Outcome::Error(ErrorClass::Unhandled)).is_err());
    }

    #[test]
    fn convergence_check_cannot_error() {
        assert!(next(S::ConvergenceCheck, Outcome::Error(ErrorClass::Timeout)).is_err());
    }

    #[test]
    fn recovery_goes_where_the_target_says() {
        for t in RecoveryTarget::ALL {
            assert_eq!(next(S::ErrorRecovery, Outcome::Recovered(t)), Ok(t.state()));
        }
    }

    #[test]
    fn outcome_codes_are_unique_and_round_trip() {
        let all = Outcome::all();
        for o in &all {
            let json = serde_json::to_string(o).unwrap();
            assert_eq!(
                &serde_json::from_str::<Outcome>(&json).unwrap(),
                o,
                "{json}"
            );
        }
        let mut codes: Vec<String> = all.iter().map(Outcome::code).collect();
        codes.sort();
        codes.dedup();
        assert_eq!(codes.len(), all.len());
        assert_eq!(
            Outcome::Error(ErrorClass::BuildFailure).code(),
            "error:BUILD_FAILURE"
        );
        assert!(serde_json::from_str::<Outcome>("\"bogus\"").is_err());
    }

    #[test]
    fn illegal_transition_message_names_state_and_outcome() {
        let e = next(S::BuildRun, Outcome::Converged).unwrap_err();
        assert_eq!(
            e.to_string(),
            "illegal transition: BUILD_RUN cannot handle outcome `converged`"
        );
    }
}
