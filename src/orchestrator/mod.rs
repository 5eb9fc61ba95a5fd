//! Drives the state machine: runs each state's handler, records every transition, and does the
//! I/O the machine asks for. The only module that sees config, build, DUT, results, analysis,
//! report, repo and strategy together. `fwfix test`, `fwfix run` and `fwfix resume` are one engine:
//! a test run is a fix run without patches.
//!
//! A run, step by step:
//! 1. Resolve the board and profile (a bad file is a configuration error before anything runs),
//!    pick the harness parser, create `.fwfix/runs/<run-id>/` and keep it out of git.
//! 2. IDLE → INIT: open the DUT backend and check it; for a fix run, open the repository,
//!    snapshot HEAD, index and working tree under `refs/fwfix/<run-id>/base` (and with
//!    `--worktree`, make a linked worktree so the owner's checkout is never touched).
//! 3. BUILD_SETUP → BUILD_RUN → (LINT) → TEST_SETUP → TEST_RUN → RESULT_COLLECTION →
//!    RESULT_ANALYSIS: build, judge the tree's lint findings against the baseline's when the
//!    profile has a `[lint]` (`lint.rs`), boot, capture, symbolise a crash or hang, parse the
//!    console into cases.
//! 4. CONVERGENCE_CHECK: iteration 0 is the baseline — it fixes the targets (FAIL_TO_PASS,
//!    PASS_TO_PASS). Then SUCCESS, run the same image again, go round again, or FAILURE.
//! 5. CODE_ANALYSIS → PATCH_GENERATION → PATCH_REVIEW → PATCH_APPLY: gather evidence (from the
//!    tree the last image was built from), roll the last candidate back, take the next ranked
//!    candidate or ask the strategy for a round, check and rank a fresh round (`trials.rs`:
//!    policy, trial apply and build, no-op image), put the best through the approval gate, apply
//!    it on a fresh rollback point; BUILD_RUN drops a single candidate's no-op image.
//! 6. ERROR_RECOVERY: retry the failed step within its class's budget, back to analysis for a
//!    candidate's fault, or FAILURE.
//! 7. COMMIT (a fix run whose candidate converged, `commit.rs`): write fix.patch, then commit the
//!    fix on `fwfix/<run-id>` through the repository's own `pre-commit` and `commit-msg` hooks;
//!    a hook that refuses it ends the run in COMMIT_FAILURE, with no commit and no branch.
//! 8. Finalise: always restore the owner's tree exactly and write report.json, report.md,
//!    junit.xml.
//!
//! A command that uses a hardware board holds its lease from its first step until its report is
//! written, and refuses a board that is bad or in maintenance before building (`board.rs`).
//!
//! Every transition is checkpointed to context.json and then appended to trace.jsonl (fsync'd)
//! before the next handler starts, so a run killed at any point can be resumed. A run that was
//! stopped (ABORTED, or FAILURE given more iterations) starts over through IDLE, where
//! `RunContext::restart` puts the work the stop cut short back in line; `fwfix resume` first
//! refuses a tree someone changed since the stop, rather than restore over it.
//!
//! `fwfix runs prune` (`prune.rs`) removes what finished runs keep: their directory, worktree
//! and snapshot refs.
//!
//! `fwfix test` over several boards or profiles (`matrix.rs`) runs one test job per pair, `--jobs`
//! at a time, each its own run.
//!
//! `fwfix bisect` (`bisect.rs`) is a driver above the engine: each of its steps is a `fwfix test`
//! of one commit in a worktree of its own, with its run directory under the bisect's. The
//! `revert` strategy runs the same bisect from inside a fix run's PATCH_GENERATION.
//!
//! Layers, each using only those below it: `error.rs`, `context.rs`, `board.rs` (claiming a
//! board) and `worktree.rs`; `job.rs`, the engine (with its handlers in `pipeline.rs`,
//! `fix.rs` and `trials.rs`), and `fwfix test` and `fwfix boards check` over it; `bisect.rs`,
//! whose steps are engine runs; `command.rs`, `fwfix run` and `fwfix resume`, which give the
//! engine its strategy — the `revert` strategy's bisect included, so the engine never reaches up
//! to bisect; `matrix.rs` and `prune.rs`.

mod bisect;
mod board;
mod command;
mod commit;
mod context;
mod error;
mod fix;
mod job;
mod lint;
mod matrix;
mod pipeline;
mod prune;
mod trials;
mod worktree;

pub use bisect::{bisect, BisectOptions};
pub use board::{boards_to_check, BoardAccess, HealthGate};
pub use command::{resume, run};
pub use context::{RunContext, StrategyChoice};
pub use error::OrchestratorError;
pub use job::{
    check_board, test, CheckOptions, Finished, KillAt, ResumeOptions, RunOptions, TestOptions,
};
pub use matrix::{
    matrix, run_pairs, test_many, MatrixOptions, MatrixRun, PairEnd, PairOutcome, PairSpec,
    Schedule, Shard, TestManyOptions, MATRIX_DIR,
};
pub use prune::{prune, PruneEntry, PruneOptions};
