//! The state machine: states, outcomes, the one pure transition function, and the pure rules that
//! pick outcomes where a decision is needed (error recovery, convergence).
//!
//! Nothing here does I/O or reads a clock. A run, as the machine sees it:
//! 1. IDLE → INIT: a task arrives; INIT checks the environment.
//! 2. INIT → BUILD_SETUP: iteration 0 is the baseline, the unpatched tree.
//! 3. BUILD_SETUP → BUILD_RUN → TEST_SETUP → TEST_RUN → RESULT_COLLECTION → RESULT_ANALYSIS: build
//!    the image, run it on the DUT, parse what it printed into a verdict. A profile with a
//!    `[lint]` table passes through LINT between BUILD_RUN and TEST_SETUP (BUILD_RUN says which
//!    with its outcome: `built` or `built_for_lint`); a candidate with new findings fails there
//!    (LINT_FAILURE) and goes back to analysis like one that broke the build. LINT is re-entered
//!    through BUILD_RUN, so the recovery targets are unchanged.
//! 4. CONVERGENCE_CHECK decides: SUCCESS, FAILURE, run the same image again (TEST_SETUP), or go
//!    round again (CODE_ANALYSIS → PATCH_GENERATION → PATCH_REVIEW → PATCH_APPLY → BUILD_SETUP).
//!    A candidate that fixed the targets goes to COMMIT, where the fix is committed through the
//!    repository's own hooks (→ SUCCESS), or refused by them (COMMIT_FAILURE, → FAILURE).
//! 5. Any working step can fail into ERROR_RECOVERY, which either recovers to the nearest state that
//!    can go on or gives up ([`recovery`]); any non-terminal state can be ABORTED.
//!
//! Repeated runs of one image are judged by [`flaky`]: each test's pass rate with its Wilson 95%
//! interval, and the sequential rule CONVERGENCE_CHECK re-runs a disagreeing image by.

pub mod convergence;
pub mod flaky;
mod graph;
pub mod ledger;
pub mod recovery;
mod state;
mod transition;

pub use graph::{dot, mermaid};
pub use state::{ErrorClass, State};
pub use transition::{edges, next, Edge, IllegalTransition, Outcome, RecoveryTarget};
