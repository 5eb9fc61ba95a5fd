//! The states of a run and the error classes that ERROR_RECOVERY deals with. Their names are part
//! of the interface: they appear in traces, reports and `fwfix graph`.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A state of the run's state machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[derive(schemars::JsonSchema)]
pub enum State {
    Idle,
    Init,
    CodeAnalysis,
    PatchGeneration,
    PatchReview,
    PatchApply,
    BuildSetup,
    BuildRun,
    // Judges the built image's source: findings the baseline did not have reject a candidate.
    Lint,
    TestSetup,
    TestRun,
    ResultCollection,
    ResultAnalysis,
    ConvergenceCheck,
    /// The converged fix is committed on `fwfix/<run-id>`, through the repository's own hooks.
    Commit,
    ErrorRecovery,
    Success,
    Failure,
    Aborted,
}

impl State {
    /// Every state, in the order DESIGN.md lists them.
    pub const ALL: [State; 19] = [
        State::Idle,
        State::Init,
        State::CodeAnalysis,
        State::PatchGeneration,
        State::PatchReview,
        State::PatchApply,
        State::BuildSetup,
        State::BuildRun,
        State::Lint,
        State::TestSetup,
        State::TestRun,
        State::ResultCollection,
        State::ResultAnalysis,
        State::ConvergenceCheck,
        State::Commit,
        State::ErrorRecovery,
        State::Success,
        State::Failure,
        State::Aborted,
    ];

    /// The interface name, e.g. `BUILD_RUN`.
    pub fn name(self) -> &'static str {
        match self {
            State::Idle => "IDLE",
            State::Init => "INIT",
            State::CodeAnalysis => "CODE_ANALYSIS",
            State::PatchGeneration => "PATCH_GENERATION",
            State::PatchReview => "PATCH_REVIEW",
            State::PatchApply => "PATCH_APPLY",
            State::BuildSetup => "BUILD_SETUP",
            State::BuildRun => "BUILD_RUN",
            State::Lint => "LINT",
            State::TestSetup => "TEST_SETUP",
            State::TestRun => "TEST_RUN",
            State::ResultCollection => "RESULT_COLLECTION",
            State::ResultAnalysis => "RESULT_ANALYSIS",
            State::ConvergenceCheck => "CONVERGENCE_CHECK",
            State::Commit => "COMMIT",
            State::ErrorRecovery => "ERROR_RECOVERY",
            State::Success => "SUCCESS",
            State::Failure => "FAILURE",
            State::Aborted => "ABORTED",
        }
    }

    /// SUCCESS, FAILURE and ABORTED end a run.
    pub fn is_terminal(self) -> bool {
        match self {
            State::Success | State::Failure | State::Aborted => true,
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
            | State::ErrorRecovery => false,
        }
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a step could not go on. Each class has a retry budget and a recovery target; the
/// infrastructure classes never count as a test failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[derive(schemars::JsonSchema)]
pub enum ErrorClass {
    /// The build failed because of the code (a patch, or the baseline itself).
    BuildFailure,
    /// The build failed because of the environment (tool crashed, toolchain missing).
    BuildEnvFailure,
    TestEnvFailure,
    FlashFailure,
    Timeout,
    ArtifactMissing,
    /// The model endpoint or agent could not be reached, timed out or crashed: infrastructure.
    ModelFailure,
    /// What came back holds no usable patch: no diff, an empty or no-op patch, a queue or round
    /// exhausted, every candidate rejected. The loop has not converged; nothing is broken.
    NoCandidate,
    PolicyViolation,
    PatchApplyFailure,
    /// The candidate adds warnings or static-analysis findings the baseline did not have.
    LintFailure,
    /// The repository's own commit hooks refused the fix (failed, timed out, or edited files):
    /// the fix is kept in fix.patch, without a branch. Not retried, not infrastructure.
    CommitFailure,
    /// The configuration names something fwfix cannot use, found only once the run got to it
    /// (a build artifact that is not an ELF image). Not retried; exit 2 like any configuration
    /// error.
    ConfigError,
    Unhandled,
}

impl ErrorClass {
    pub const ALL: [ErrorClass; 14] = [
        ErrorClass::BuildFailure,
        ErrorClass::BuildEnvFailure,
        ErrorClass::TestEnvFailure,
        ErrorClass::FlashFailure,
        ErrorClass::Timeout,
        ErrorClass::ArtifactMissing,
        ErrorClass::ModelFailure,
        ErrorClass::NoCandidate,
        ErrorClass::PolicyViolation,
        ErrorClass::PatchApplyFailure,
        ErrorClass::LintFailure,
        ErrorClass::CommitFailure,
        ErrorClass::ConfigError,
        ErrorClass::Unhandled,
    ];

    /// Infrastructure classes: the environment failed, not the firmware or the patch. A run that
    /// ends on one of them is an infrastructure error, never a test failure.
    pub fn is_infrastructure(self) -> bool {
        match self {
            ErrorClass::BuildEnvFailure
            | ErrorClass::TestEnvFailure
            | ErrorClass::FlashFailure
            | ErrorClass::Timeout
            | ErrorClass::ArtifactMissing
            | ErrorClass::ModelFailure
            | ErrorClass::Unhandled => true,
            ErrorClass::BuildFailure
            | ErrorClass::NoCandidate
            | ErrorClass::PolicyViolation
            | ErrorClass::PatchApplyFailure
            | ErrorClass::LintFailure => false,
            ErrorClass::CommitFailure | ErrorClass::ConfigError => false,
        }
    }

    /// The lower-case key used in profile tables, e.g. `build_failure`.
    pub fn key(self) -> &'static str {
        match self {
            ErrorClass::BuildFailure => "build_failure",
            ErrorClass::BuildEnvFailure => "build_env_failure",
            ErrorClass::TestEnvFailure => "test_env_failure",
            ErrorClass::FlashFailure => "flash_failure",
            ErrorClass::Timeout => "timeout",
            ErrorClass::ArtifactMissing => "artifact_missing",
            ErrorClass::ModelFailure => "model_failure",
            ErrorClass::NoCandidate => "no_candidate",
            ErrorClass::PolicyViolation => "policy_violation",
            ErrorClass::PatchApplyFailure => "patch_apply_failure",
            ErrorClass::LintFailure => "lint_failure",
            ErrorClass::CommitFailure => "commit_failure",
            ErrorClass::ConfigError => "config_error",
            ErrorClass::Unhandled => "unhandled",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ErrorClass::BuildFailure => "BUILD_FAILURE",
            ErrorClass::BuildEnvFailure => "BUILD_ENV_FAILURE",
            ErrorClass::TestEnvFailure => "TEST_ENV_FAILURE",
            ErrorClass::FlashFailure => "FLASH_FAILURE",
            ErrorClass::Timeout => "TIMEOUT",
            ErrorClass::ArtifactMissing => "ARTIFACT_MISSING",
            ErrorClass::ModelFailure => "MODEL_FAILURE",
            ErrorClass::NoCandidate => "NO_CANDIDATE",
            ErrorClass::PolicyViolation => "POLICY_VIOLATION",
            ErrorClass::PatchApplyFailure => "PATCH_APPLY_FAILURE",
            ErrorClass::LintFailure => "LINT_FAILURE",
            ErrorClass::CommitFailure => "COMMIT_FAILURE",
            ErrorClass::ConfigError => "CONFIG_ERROR",
            ErrorClass::Unhandled => "UNHANDLED",
        }
    }
}

impl fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
