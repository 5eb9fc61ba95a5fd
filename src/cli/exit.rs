//! The exit-code table: the one place a command's outcome becomes a process exit status.

use crate::inspect::InspectError;
use crate::machine::{ErrorClass, State};
use crate::orchestrator::{Finished, OrchestratorError, PairEnd, PairOutcome};
use crate::report::ReportError;
use std::process::ExitCode;

/// fwfix's exit statuses (DESIGN.md "Exit codes").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// The loop converged, or every test passed.
    Success = 0,
    /// Not converged, or tests failed.
    Failed = 1,
    /// Usage or configuration error.
    Usage = 2,
    /// Aborted by a signal or the deadline.
    Aborted = 3,
    /// Infrastructure error: toolchain, QEMU, board or probe unavailable.
    Infrastructure = 4,
}

impl Exit {
    /// The exit status of a run that reached a terminal state.
    pub fn of_run(final_state: State, error_class: Option<ErrorClass>) -> Exit {
        match final_state {
            State::Success => Exit::Success,
            State::Aborted => Exit::Aborted,
            State::Failure => match error_class {
                Some(ErrorClass::ConfigError) => Exit::Usage,
                Some(class) if class.is_infrastructure() => Exit::Infrastructure,
                _ => Exit::Failed,
            },
            // A run never ends elsewhere; if it did, it did not succeed.
            State::Idle
            | State::Init
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
            | State::ConvergenceCheck
            | State::Commit
            | State::ErrorRecovery => Exit::Infrastructure,
        }
    }

    pub fn of_finished(f: &Finished) -> Exit {
        Exit::of_run(f.final_state, f.error_class)
    }

    /// The exit status of several pairs tested at once: the most serious pair's, a pair that
    /// never started (the run was interrupted first) counting as aborted, one sim-first skipped
    /// as nothing of its own.
    pub fn of_pairs(pairs: &[PairOutcome]) -> Exit {
        Exit::worst(pairs.iter().map(|p| match &p.end {
            PairEnd::Ran(Ok(f)) => Exit::of_finished(f),
            PairEnd::Ran(Err(e)) => Exit::of_error(e),
            // Held back because its profile failed in simulation: that failure speaks for it.
            PairEnd::Skipped { .. } => Exit::Success,
            PairEnd::NotStarted => Exit::Aborted,
        }))
    }

    pub fn of_error(e: &OrchestratorError) -> Exit {
        match e {
            OrchestratorError::Config(_) | OrchestratorError::Usage(_) => Exit::Usage,
            OrchestratorError::RunDir { .. }
            | OrchestratorError::Internal(_)
            | OrchestratorError::Board(_) => Exit::Infrastructure,
            OrchestratorError::Interrupted(_) => Exit::Aborted,
        }
    }

    /// The exit status of a command that inspects a run (`audit`, `show`, `report`) and could not.
    pub fn of_inspect(e: &InspectError) -> Exit {
        match e {
            InspectError::NotFound { .. }
            | InspectError::Ambiguous { .. }
            | InspectError::NotARunDir { .. }
            | InspectError::NoRepo { .. } => Exit::Usage,
            // The run exists but left no readable report: it did not finish as asked.
            InspectError::NoReport { .. } | InspectError::Report(ReportError::Parse { .. }) => {
                Exit::Failed
            }
            InspectError::Io { .. } | InspectError::Report(_) => Exit::Infrastructure,
        }
    }

    /// The exit status of `fwfix boards` when the board's health state cannot be read or
    /// written: the host's state directory is part of the infrastructure.
    pub fn of_health(_e: &crate::dut::health::HealthError) -> Exit {
        Exit::Infrastructure
    }

    /// The status of a command that did several things (`fwfix boards check` of every board): the
    /// most serious one's.
    pub fn worst(exits: impl IntoIterator<Item = Exit>) -> Exit {
        let rank = |e: Exit| match e {
            Exit::Success => 0,
            Exit::Failed => 1,
            Exit::Usage => 2,
            Exit::Infrastructure => 3,
            Exit::Aborted => 4,
        };
        exits
            .into_iter()
            .max_by_key(|e| rank(*e))
            .unwrap_or(Exit::Success)
    }

    pub fn code(self) -> i32 {
        self as i32
    }
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> ExitCode {
        ExitCode::from(e as u8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn infrastructure_failures_are_never_test_failures() {
        assert_eq!(Exit::of_run(State::Success, None), Exit::Success);
        assert_eq!(Exit::of_run(State::Failure, None), Exit::Failed);
        assert_eq!(
            Exit::of_run(State::Failure, Some(ErrorClass::BuildFailure)),
            Exit::Failed
        );
        assert_eq!(
            Exit::of_run(State::Failure, Some(ErrorClass::TestEnvFailure)),
            Exit::Infrastructure
        );
        assert_eq!(Exit::of_run(State::Aborted, None), Exit::Aborted);
        assert_eq!(
            Exit::of_run(State::Failure, Some(ErrorClass::ConfigError)),
            Exit::Usage
        );
    }

    #[test]
    fn no_usable_candidate_is_not_converged_and_a_broken_model_is_infrastructure() {
        assert_eq!(
            Exit::of_run(State::Failure, Some(ErrorClass::NoCandidate)),
            Exit::Failed
        );
        assert_eq!(
            Exit::of_run(State::Failure, Some(ErrorClass::ModelFailure)),
            Exit::Infrastructure
        );
    }

    #[test]
    fn several_checks_exit_with_the_most_serious_outcome() {
        assert_eq!(Exit::worst([]), Exit::Success);
        assert_eq!(Exit::worst([Exit::Success, Exit::Failed]), Exit::Failed);
        assert_eq!(
            Exit::worst([Exit::Infrastructure, Exit::Failed, Exit::Success]),
            Exit::Infrastructure
        );
    }
}
