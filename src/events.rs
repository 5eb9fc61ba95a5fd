//! The events the library emits while it works. Only `ui/` renders them: as progress on a
//! terminal, or as one JSON object per line with `--json`.

use crate::capture::Stream;
use crate::dut::boards_state::Holder;
use crate::dut::health::Health;
use crate::machine::{ErrorClass, State};
use crate::results::{CaseStatus, Verdict};
use serde::Serialize;

/// Something that happened, in the order it happened.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[derive(schemars::JsonSchema)]
pub enum Event {
    RunStarted {
        run_id: String,
        command: String,
        run_dir: String,
        repo: String,
    },
    Transition {
        seq: u64,
        from: State,
        to: State,
        reason: String,
        iteration: u32,
        error_class: Option<ErrorClass>,
    },
    BuildStarted {
        command: String,
    },
    BuildOutput {
        line: String,
    },
    BuildFinished {
        success: bool,
        duration_ms: u64,
        errors: usize,
        warnings: usize,
        /// The run was interrupted (Ctrl+C, SIGTERM, abort) while it built: the build was
        /// stopped, it did not fail.
        interrupted: bool,
    },
    BootStarted {
        target: String,
        attempt: u32,
    },
    /// A flasher's progress, one per line of its output: `phase` is `connect`, `erase`,
    /// `program`, `verify`, `reset` or `run` as far as the line tells, `percent` when it shows
    /// one.
    FlashProgress {
        phase: String,
        percent: Option<u8>,
        line: String,
    },
    ConsoleLine {
        attempt: u32,
        t_ms: u64,
        stream: Stream,
        text: String,
    },
    CaseResult {
        attempt: u32,
        name: String,
        status: CaseStatus,
    },
    AttemptFinished {
        attempt: u32,
        verdict: Verdict,
        passed: usize,
        failed: usize,
        duration_ms: u64,
        end: String,
    },
    /// COMMIT: one of the repository's own commit hooks (`pre-commit`, `commit-msg`) starts on
    /// the fix.
    HookStarted {
        hook: String,
        path: String,
    },
    /// The hook ended: `passed` only when it exited 0 and changed no file; `ending` says how it
    /// ended, `output` is what it printed (its last lines).
    HookFinished {
        hook: String,
        passed: bool,
        ending: String,
        duration_ms: u64,
        output: String,
    },
    /// The board is leased by another run; this one waits (up to `timeout_s`). Emitted again
    /// when the holder changes. `holder` is None when its record cannot be read.
    LeaseWaiting {
        board: String,
        holder: Option<Holder>,
        timeout_s: u64,
    },
    /// The board's lease is this run's; `took_over` names a killed holder whose lease it took.
    LeaseAcquired {
        board: String,
        waited_ms: u64,
        took_over: Option<Holder>,
    },
    /// A health check (or an operator) set the board's health.
    BoardHealth {
        board: String,
        state: Health,
        reason: String,
    },
    Message {
        level: Level,
        text: String,
    },
    /// A person is asked something on the terminal (the approval prompt): nothing may be drawn
    /// over it until [`Event::InputDone`].
    InputWanted {
        what: String,
    },
    /// The person answered, or the question was abandoned.
    InputDone,
    Finished {
        status: String,
        exit_code: i32,
        run_dir: Option<String>,
        error_class: Option<ErrorClass>,
        message: Option<String>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[derive(schemars::JsonSchema)]
pub enum Level {
    Info,
    Warning,
    Error,
}

/// Receives events. Implementations must be cheap: they are called from the hot capture path.
pub trait EventSink: Send + Sync {
    fn emit(&self, event: &Event);

    /// An event of one of several jobs running at once (`fwfix test --jobs N` over several
    /// boards or profiles), named by `job`. Sinks that show jobs apart override it; the default
    /// forgets the name.
    fn emit_job(&self, job: &str, event: &Event) {
        let _ = job;
        self.emit(event);
    }
}

/// The sink one job of several emits into: every event reaches `inner` with the job's name.
pub struct JobSink<'a> {
    pub inner: &'a dyn EventSink,
    pub job: String,
}

impl EventSink for JobSink<'_> {
    fn emit(&self, event: &Event) {
        self.inner.emit_job(&self.job, event);
    }
}

/// Drops every event (for tests and for library users that do not care).
pub struct NullSink;

impl EventSink for NullSink {
    fn emit(&self, _event: &Event) {}
}
