//! ERROR_RECOVERY's rules: for each error class, where a run can go on from and how many times.
//!
//! Pure: the orchestrator passes in what failed, where, and how often this class has been retried;
//! [`decide`] answers with the outcome to feed the transition function. Infrastructure failures
//! retry the step; failures caused by a patch go back to analysis when the run is patching, and end
//! the run when it is not (`fwfix test` has nothing to go back to).

use super::state::{ErrorClass, State};
use super::transition::{Outcome, RecoveryTarget};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Retry budgets per error class.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budgets {
    budgets: BTreeMap<ErrorClass, u32>,
}

impl Default for Budgets {
    /// Three retries for every class except UNHANDLED, which is a bug and never retried.
    fn default() -> Self {
        let budgets = ErrorClass::ALL
            .iter()
            .map(|c| (*c, if *c == ErrorClass::Unhandled { 0 } else { 3 }))
            .collect();
        Budgets { budgets }
    }
}

impl Budgets {
    /// Overrides one class's budget.
    pub fn set(&mut self, class: ErrorClass, retries: u32) {
        self.budgets.insert(class, retries);
    }

    pub fn get(&self, class: ErrorClass) -> u32 {
        self.budgets.get(&class).copied().unwrap_or(0)
    }
}

/// What ERROR_RECOVERY knows about the failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failure {
    pub class: ErrorClass,
    /// The state whose step failed.
    pub failed_in: State,
    /// How many times this class has already been recovered from in this run.
    pub retries_used: u32,
    /// True when the run can generate patches (`fwfix run`), false for `fwfix test`.
    pub patching: bool,
    /// Whether another candidate can be tried (the strategy has more, iterations are left).
    pub candidates_left: bool,
}

/// The decision, with the reason that goes into the trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub outcome: Outcome,
    pub reason: String,
}

/// Decides how to recover from `failure` within `budgets`.
pub fn decide(failure: Failure, budgets: &Budgets) -> Decision {
    let class = failure.class;
    let Some(target) = target(failure) else {
        return Decision {
            outcome: Outcome::Unrecoverable,
            reason: format!(
                "{class} in {} cannot be recovered from{}",
                failure.failed_in,
                // A patch would not mend the configuration either.
                if failure.patching || class == ErrorClass::ConfigError {
                    ""
                } else {
                    " without patching"
                }
            ),
        };
    };
    if target == RecoveryTarget::CodeAnalysis && !failure.candidates_left {
        return Decision {
            outcome: Outcome::Unrecoverable,
            reason: format!(
                "{class} in {}, and no candidate is left to try",
                failure.failed_in
            ),
        };
    }
    let budget = budgets.get(class);
    if failure.retries_used >= budget {
        return Decision {
            outcome: Outcome::Unrecoverable,
            reason: format!("{class}: retry budget of {budget} spent"),
        };
    }
    Decision {
        outcome: Outcome::Recovered(target),
        reason: format!(
            "{class} in {}: retry {} of {budget} from {}",
            failure.failed_in,
            failure.retries_used + 1,
            target.state()
        ),
    }
}

/// The nearest state that can go on after `failure`, or None when nothing can.
fn target(failure: Failure) -> Option<RecoveryTarget> {
    use RecoveryTarget as T;
    // INIT checks the environment before anything runs: every later step depends on it, so
    // there is nothing nearer to go on from.
    if failure.failed_in == State::Init {
        return None;
    }
    let patch_fault = if failure.patching {
        Some(T::CodeAnalysis)
    } else {
        None
    };
    let by_class = match failure.class {
        // The code does not build: only a (new) patch can help.
        ErrorClass::BuildFailure
        | ErrorClass::ModelFailure
        | ErrorClass::NoCandidate
        | ErrorClass::PolicyViolation
        | ErrorClass::PatchApplyFailure
        | ErrorClass::LintFailure => patch_fault,
        ErrorClass::BuildEnvFailure => Some(T::BuildRun),
        ErrorClass::TestEnvFailure | ErrorClass::FlashFailure => Some(T::TestSetup),
        // A missing image means building again; missing console output means running again.
        ErrorClass::ArtifactMissing => match failure.failed_in {
            State::BuildRun | State::Lint | State::TestSetup => Some(T::BuildRun),
            State::TestRun | State::ResultCollection | State::ResultAnalysis => Some(T::TestSetup),
            other => step_target(other, failure.patching),
        },
        ErrorClass::Timeout => step_target(failure.failed_in, failure.patching),
        // The fix converged; only the repository's hooks refused it. Another candidate would
        // meet the same hooks, and the person decides about the hooks' verdict.
        ErrorClass::CommitFailure | ErrorClass::Unhandled => None,
        // Only the person can change the configuration.
        ErrorClass::ConfigError => None,
    };
    // Never recover forward past the step that failed: that would skip work (a patch never
    // generated, a build never run) and could replay the same image forever.
    match (by_class, pipeline_position(failure.failed_in)) {
        (Some(target), Some(failed_at))
            if pipeline_position(target.state()).is_some_and(|t| t > failed_at) =>
        {
            step_target(failure.failed_in, failure.patching)
        }
        (target, _) => target,
    }
}

/// Where a state sits in the pipeline of one iteration, for "before" and "after".
fn pipeline_position(state: State) -> Option<u8> {
    match state {
        State::CodeAnalysis => Some(0),
        State::PatchGeneration => Some(1),
        State::PatchReview => Some(2),
        State::PatchApply => Some(3),
        State::BuildSetup => Some(4),
        State::BuildRun => Some(5),
        State::Lint => Some(6),
        State::TestSetup => Some(7),
        State::TestRun => Some(8),
        State::ResultCollection => Some(9),
        State::ResultAnalysis => Some(10),
        State::Idle
        | State::Init
        | State::ConvergenceCheck
        | State::Commit
        | State::ErrorRecovery
        | State::Success
        | State::Failure
        | State::Aborted => None,
    }
}

/// Retrying a state's step: where to re-enter the pipeline for it.
fn step_target(state: State, patching: bool) -> Option<RecoveryTarget> {
    use RecoveryTarget as T;
    match state {
        State::CodeAnalysis | State::PatchGeneration | State::PatchReview | State::PatchApply => {
            if patching {
                Some(T::CodeAnalysis)
            } else {
                None
            }
        }
        // The lint stage is re-entered through the build, which it judges.
        State::BuildSetup | State::BuildRun | State::Lint => Some(T::BuildRun),
        State::TestSetup | State::TestRun => Some(T::TestSetup),
        State::ResultCollection | State::ResultAnalysis => Some(T::ResultCollection),
        State::Idle
        | State::Init
        | State::ConvergenceCheck
        | State::Commit
        | State::ErrorRecovery
        | State::Success
        | State::Failure
        | State::Aborted => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(class: ErrorClass, failed_in: State, retries_used: u32, patching: bool) -> Failure {
        Failure {
            class,
            failed_in,
            retries_used,
            patching,
            candidates_left: true,
        }
    }

    #[test]
    fn a_failed_last_candidate_ends_the_run() {
        let mut f = failure(ErrorClass::PatchApplyFailure, State::PatchApply, 0, true);
        f.candidates_left = false;
        let d = decide(f, &Budgets::default());
        assert_eq!(d.outcome, Outcome::Unrecoverable);
        assert!(d.reason.contains("no candidate is left"), "{}", d.reason);
        // An environment failure is retried whatever the candidates.
        let mut f = failure(ErrorClass::TestEnvFailure, State::TestRun, 0, true);
        f.candidates_left = false;
        assert!(matches!(
            decide(f, &Budgets::default()).outcome,
            Outcome::Recovered(_)
        ));
    }

    #[test]
    fn a_patch_that_breaks_the_build_goes_back_to_analysis() {
        let d = decide(
            failure(ErrorClass::BuildFailure, State::BuildRun, 0, true),
            &Budgets::default(),
        );
        assert_eq!(d.outcome, Outcome::Recovered(RecoveryTarget::CodeAnalysis));
    }

    #[test]
    fn a_configuration_error_ends_the_run_patching_or_not() {
        for patching in [false, true] {
            let d = decide(
                failure(ErrorClass::ConfigError, State::BuildRun, 0, patching),
                &Budgets::default(),
            );
            assert_eq!(d.outcome, Outcome::Unrecoverable);
            assert!(!d.reason.contains("without patching"), "{}", d.reason);
        }
    }

    #[test]
    fn a_build_failure_without_patching_ends_the_run() {
        let d = decide(
            failure(ErrorClass::BuildFailure, State::BuildRun, 0, false),
            &Budgets::default(),
        );
        assert_eq!(d.outcome, Outcome::Unrecoverable);
        assert!(d.reason.contains("without patching"), "{}", d.reason);
    }

    #[test]
    fn new_lint_findings_go_back_to_analysis_and_a_broken_lint_step_rebuilds() {
        let b = Budgets::default();
        let d = decide(failure(ErrorClass::LintFailure, State::Lint, 0, true), &b);
        assert_eq!(d.outcome, Outcome::Recovered(RecoveryTarget::CodeAnalysis));
        assert_eq!(
            d.reason,
            "LINT_FAILURE in LINT: retry 1 of 3 from CODE_ANALYSIS"
        );
        let d = decide(failure(ErrorClass::LintFailure, State::Lint, 0, false), &b);
        assert_eq!(d.outcome, Outcome::Unrecoverable);
        // LINT is re-entered through the build it judges.
        for (class, patching) in [
            (ErrorClass::Timeout, false),
            (ErrorClass::BuildEnvFailure, true),
            (ErrorClass::ArtifactMissing, true),
        ] {
            let d = decide(failure(class, State::Lint, 0, patching), &b);
            assert_eq!(
                d.outcome,
                Outcome::Recovered(RecoveryTarget::BuildRun),
                "{class}"
            );
        }
        let d = decide(failure(ErrorClass::LintFailure, State::Lint, 3, true), &b);
        assert_eq!(d.reason, "LINT_FAILURE: retry budget of 3 spent");
    }

    #[test]
    fn environment_failures_retry_their_step() {
        let b = Budgets::default();
        let cases = [
            (
                ErrorClass::BuildEnvFailure,
                State::BuildRun,
                RecoveryTarget::BuildRun,
            ),
            (
                ErrorClass::TestEnvFailure,
                State::TestRun,
                RecoveryTarget::TestSetup,
            ),
            (
                ErrorClass::FlashFailure,
                State::TestSetup,
                RecoveryTarget::TestSetup,
            ),
            (
                ErrorClass::Timeout,
                State::BuildRun,
                RecoveryTarget::BuildRun,
            ),
            (
                ErrorClass::Timeout,
                State::TestRun,
                RecoveryTarget::TestSetup,
            ),
            (
                ErrorClass::Timeout,
                State::ResultAnalysis,
                RecoveryTarget::ResultCollection,
            ),
            (
                ErrorClass::ArtifactMissing,
                State::TestSetup,
                RecoveryTarget::BuildRun,
            ),
            (
                ErrorClass::ArtifactMissing,
                State::ResultCollection,
                RecoveryTarget::TestSetup,
            ),
        ];
        for (class, state, want) in cases {
            for patching in [false, true] {
                let d = decide(failure(class, state, 0, patching), &b);
                assert_eq!(d.outcome, Outcome::Recovered(want), "{class} in {state}");
            }
        }
    }

    #[test]
    fn recovery_never_jumps_forward_past_the_failed_step() {
        let b = Budgets::default();
        let d = decide(
            failure(ErrorClass::BuildEnvFailure, State::CodeAnalysis, 0, true),
            &b,
        );
        assert_eq!(d.outcome, Outcome::Recovered(RecoveryTarget::CodeAnalysis));
        let d = decide(
            failure(ErrorClass::TestEnvFailure, State::BuildSetup, 0, true),
            &b,
        );
        assert_eq!(d.outcome, Outcome::Recovered(RecoveryTarget::BuildRun));
        let d = decide(
            failure(ErrorClass::TestEnvFailure, State::PatchApply, 0, false),
            &b,
        );
        assert_eq!(d.outcome, Outcome::Unrecoverable);
    }

    #[test]
    fn budget_is_spent_after_the_configured_retries() {
        let mut b = Budgets::default();
        b.set(ErrorClass::TestEnvFailure, 2);
        let f = |n| failure(ErrorClass::TestEnvFailure, State::TestRun, n, false);
        assert!(matches!(decide(f(0), &b).outcome, Outcome::Recovered(_)));
        assert!(matches!(decide(f(1), &b).outcome, Outcome::Recovered(_)));
        let d = decide(f(2), &b);
        assert_eq!(d.outcome, Outcome::Unrecoverable);
        assert_eq!(d.reason, "TEST_ENV_FAILURE: retry budget of 2 spent");
    }

    #[test]
    fn unhandled_is_never_retried_and_init_failures_end_the_run() {
        let b = Budgets::default();
        for patching in [false, true] {
            let d = decide(
                failure(ErrorClass::Unhandled, State::TestRun, 0, patching),
                &b,
            );
            assert_eq!(d.outcome, Outcome::Unrecoverable);
            let d = decide(failure(ErrorClass::Timeout, State::Init, 0, patching), &b);
            assert_eq!(d.outcome, Outcome::Unrecoverable);
        }
    }

    #[test]
    fn a_fix_the_commit_hooks_refuse_ends_the_run() {
        for retries_used in [0, 1] {
            let d = decide(
                failure(ErrorClass::CommitFailure, State::Commit, retries_used, true),
                &Budgets::default(),
            );
            assert_eq!(d.outcome, Outcome::Unrecoverable);
            assert_eq!(
                d.reason,
                "COMMIT_FAILURE in COMMIT cannot be recovered from"
            );
        }
        assert!(!ErrorClass::CommitFailure.is_infrastructure());
    }

    #[test]
    fn every_recovery_target_is_a_legal_edge() {
        let b = Budgets::default();
        for class in ErrorClass::ALL {
            for state in State::ALL {
                for patching in [false, true] {
                    let d = decide(failure(class, state, 0, patching), &b);
                    assert!(super::super::next(State::ErrorRecovery, d.outcome).is_ok());
                }
            }
        }
    }
}
