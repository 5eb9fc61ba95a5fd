//! One run of the engine: the entry points (`test`, `run`, `resume`), the drive loop, how a
//! transition is recorded, per-state timeouts, and finalisation (fix branch, rollback, report).

use super::board::{check_verdict, claim, BoardAccess, ClaimError, HealthGate};
use super::context::{RunContext, RunRequest, StrategyChoice, CONTEXT_FORMAT};
use super::error::OrchestratorError;
use crate::analysis::symbols::Symbolizer;
use crate::config::{self, Board, BuildSpec, Profile};
use crate::dut::health::{self, HealthRecord};
use crate::dut::Dut;
use crate::events::{Event, EventSink, Level};
use crate::machine::ledger::{Ledger, Limits};
use crate::machine::recovery::Budgets;
use crate::machine::{self, ErrorClass, Outcome, State};
use crate::policy::ApproveMode;
use crate::repo::Repo;
use crate::report::{self, AttemptSummary, Command, Report, Status};
use crate::results::{self, HarnessParser};
use crate::rundir::{self, RunDir, TraceLine, TraceWriter};
use crate::strategy::Strategy;
use chrono::Utc;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Options of `fwfix test`.
#[derive(Debug, Clone)]
pub struct TestOptions {
    pub repo: PathBuf,
    /// A board file path or name.
    pub board: String,
    /// A profile file path or name.
    pub profile: String,
    /// How many times to run the same image.
    pub repeat: u32,
    /// The board's lease and health gate.
    pub access: BoardAccess,
}

/// Options of `fwfix run`.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub repo: PathBuf,
    pub board: String,
    pub profile: String,
    pub strategy: StrategyChoice,
    /// Overrides the profile's `[loop] max_iterations`.
    pub max_iterations: Option<u32>,
    /// Run the loop in a linked worktree under the run directory.
    pub worktree: bool,
    /// The last known-good commit, as the user named it.
    pub good: Option<String>,
    /// Stop the whole run (ABORTED) after this long.
    pub deadline: Option<Duration>,
    /// When a person must approve a candidate before it is applied.
    pub approve: ApproveMode,
    /// Who asks that person (the terminal, an MCP client); None: nobody can be asked, so a
    /// candidate that needs a person is rejected.
    pub approver: Option<std::sync::Arc<dyn crate::policy::Approver>>,
    /// Test hook: SIGKILL this process right after entering the named state.
    pub kill_at: Option<KillAt>,
    pub access: BoardAccess,
}

/// A test hook: where a run kills itself (SIGKILL, as a power cut would), to test resume.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KillAt {
    pub state: State,
    /// Only in this iteration (any iteration when None).
    pub iteration: Option<u32>,
}

/// Options of `fwfix resume`.
#[derive(Debug, Clone)]
pub struct ResumeOptions {
    /// The run directory.
    pub run_dir: PathBuf,
    /// For a run that ended in FAILURE: try this many more iterations.
    pub more_iterations: Option<u32>,
    /// A person's hint, added to the evidence.
    pub hint: Option<String>,
    pub deadline: Option<Duration>,
    pub approve: ApproveMode,
    /// As [`RunOptions::approver`].
    pub approver: Option<std::sync::Arc<dyn crate::policy::Approver>>,
    pub kill_at: Option<KillAt>,
    pub access: BoardAccess,
}

/// A `fwfix test` run that is one step of a bigger command (a bisect's probe of one commit): the
/// tree to test, where its run directory goes, and the configuration resolved once for all steps
/// (so every commit is built and tested the same way, whatever its own `boards/` and `profiles/`
/// hold).
#[derive(Debug, Clone)]
pub(super) struct StepOptions {
    /// The tree to build and test, e.g. a bisect worktree checked out at the commit under test.
    pub work_dir: PathBuf,
    /// The run directory to create (it must not exist), e.g. `<bisect run>/steps/03-1a2b3c4`.
    pub run_dir: PathBuf,
    /// The board and profile as the user named them, for run.json.
    pub board_arg: String,
    pub profile_arg: String,
    pub board: Board,
    pub profile: Profile,
    pub repeat: u32,
}

/// How a command that got as far as running ended.
#[derive(Debug, Clone)]
pub struct Finished {
    pub command: Command,
    pub final_state: State,
    pub error_class: Option<ErrorClass>,
    pub run_dir: PathBuf,
    pub report: Report,
}

/// `fwfix test`: build the image once and run it `repeat` times.
pub async fn test(
    opts: TestOptions,
    events: &dyn EventSink,
    cancel: CancellationToken,
) -> Result<Finished, OrchestratorError> {
    let request = RunRequest {
        repo: canonical_repo(&opts.repo)?,
        board: opts.board,
        profile: opts.profile,
        repeat: opts.repeat.max(1),
        strategy: None,
        worktree: false,
        good: None,
    };
    let config = load_config(&request)?;
    let early = start_emulator(&request.repo, &config).await;
    let tree_lock = lock_owner_tree(&request, "fwfix test", None, events)?;
    let mut job = Job::start(
        Command::Test,
        request,
        config,
        (None, 1),
        Placement::Runs,
        None,
        events,
        cancel,
    )?;
    job.tree_lock = tree_lock;
    job.access = Some(opts.access);
    job.dut = early;
    job.drive(State::Idle, Step::ok(Outcome::TaskReceived, "fwfix test"))
        .await
}

/// An emulated board's DUT with its first attempt's emulator already starting (paused, no
/// image), for a test of the tree at `work_dir`. QEMU's own start is most of a short test's
/// time; started before the lock, the run directory and INIT, it overlaps them as well as the
/// build. Nothing for a hardware or labgrid board: those are touched only once claimed. INIT
/// still checks the DUT; one that fails the check is dropped, and its emulator with it.
async fn start_emulator(
    work_dir: &Path,
    (board, profile): &(Board, Profile),
) -> Option<Box<dyn Dut>> {
    if !matches!(board.backend, config::BoardBackend::Qemu(_)) {
        return None;
    }
    let mut dut = crate::dut::open(board).ok()?;
    let artifact = work_dir.join(&profile.build_for(board).artifact);
    dut.prepare(&artifact).await;
    Some(dut)
}

/// Options of `fwfix boards check BOARD`.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    pub repo: PathBuf,
    /// A board file path or name; its `[health] profile` is the check.
    pub board: String,
    pub state_dir: PathBuf,
    pub lock_timeout: Duration,
}

/// `fwfix boards check BOARD`: runs the board's `[health]` profile as `fwfix test` does, under
/// the board's lease and whatever its current health, and records the verdict as its health.
pub async fn check_board(
    opts: CheckOptions,
    events: &dyn EventSink,
    cancel: CancellationToken,
) -> Result<Finished, OrchestratorError> {
    let repo = canonical_repo(&opts.repo)?;
    let board = crate::config::resolve_board(&opts.board, &repo)?;
    let Some(spec) = &board.health else {
        return Err(OrchestratorError::Usage(format!(
            "board {} ({}) has no [health] table naming the profile that checks it",
            board.name,
            board.source.display()
        )));
    };
    let options = TestOptions {
        repo,
        board: opts.board.clone(),
        profile: spec.profile.clone(),
        repeat: 1,
        access: BoardAccess {
            state_dir: opts.state_dir,
            lock_timeout: opts.lock_timeout,
            gate: HealthGate::Check,
        },
    };
    test(options, events, cancel).await
}

/// One step of a bisect: `fwfix test` of `opts.work_dir`, recorded in `opts.run_dir`.
pub(super) async fn test_step(
    opts: StepOptions,
    events: &dyn EventSink,
    cancel: CancellationToken,
) -> Result<Finished, OrchestratorError> {
    let request = RunRequest {
        repo: opts.work_dir,
        board: opts.board_arg,
        profile: opts.profile_arg,
        repeat: opts.repeat.max(1),
        strategy: None,
        worktree: false,
        good: None,
    };
    let mut job = Job::start(
        Command::Test,
        request,
        (opts.board, opts.profile),
        (None, 1),
        Placement::At(opts.run_dir),
        None,
        events,
        cancel,
    )?;
    job.drive(State::Idle, Step::ok(Outcome::TaskReceived, "bisect step"))
        .await
}

/// The owner's checkout for the whole job: patched in place (exclusive), or only read — built
/// by `fwfix test`, snapshotted by a `--worktree` run (shared). A run killed while it held the
/// checkout for patching (`resuming` excepted) left its changes in it, which nothing may take for
/// the owner's work: the job is refused, naming the run that puts the owner's tree back.
pub(super) fn lock_owner_tree(
    request: &RunRequest,
    command: &str,
    resuming: Option<&str>,
    events: &dyn EventSink,
) -> Result<Option<crate::repo::TreeLock>, OrchestratorError> {
    let usage = if request.worktree || request.strategy.is_none() {
        crate::repo::TreeUse::Read
    } else {
        crate::repo::TreeUse::Patch
    };
    let holder = format!(
        "{command}, pid {} on host {}, since {}",
        std::process::id(),
        crate::process::host_name(),
        Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    );
    let lock = crate::repo::lock_tree(&request.repo, &holder, usage)
        .map_err(|e| OrchestratorError::Usage(e.to_string()))?;
    // With the tree locked, no live run can be mid-way: a run that holds it was killed.
    let unfinished = crate::inspect::unfinished_runs(&request.repo).unwrap_or_default();
    if let Some((killed, hold)) = crate::inspect::killed_holding_tree(&unfinished)
        .filter(|(run, _)| Some(run.id.as_str()) != resuming)
    {
        return Err(OrchestratorError::Usage(killed_run_message(
            &request.repo,
            &killed.id,
            hold,
        )));
    }
    // Killed runs that held none of the checkout may still have left worktrees of their own.
    for run in &unfinished {
        let left = crate::inspect::leftover_worktrees(&run.dir);
        if run.status != crate::inspect::RunStatus::Killed
            || Some(run.id.as_str()) == resuming
            || left.is_empty()
        {
            continue;
        }
        let paths: Vec<String> = left.iter().map(|p| p.display().to_string()).collect();
        events.emit(&Event::Message {
            level: Level::Warning,
            text: format!(
                "run {} was killed and left {} worktree(s) of its own, which hold none of your \
                 work: {}; `fwfix resume {}` carries the run on, `fwfix runs prune --resumable` \
                 removes them with the run",
                run.id,
                left.len(),
                paths.join(", "),
                run.id
            ),
        });
    }
    Ok(Some(lock))
}

/// Why a checkout a killed run held cannot be used, and the ways out.
fn killed_run_message(repo: &Path, id: &str, hold: crate::inspect::TreeHold) -> String {
    let repo = repo.display();
    match hold {
        crate::inspect::TreeHold::Candidate => format!(
            "run {id} was killed with one of its candidate patches applied to {repo}: the tree \
             holds that patch, not your work. `fwfix resume {id}` carries the run on (Ctrl+C \
             during it puts your own tree back); `fwfix runs prune --resumable` forgets the run \
             and its snapshot, and leaves the tree as it is"
        ),
        crate::inspect::TreeHold::AgentEdits => format!(
            "run {id} was killed while its agent edited {repo}: the tree may hold the agent's \
             edits, not only your work. `fwfix resume {id}` sets aside whatever differs from \
             the run's snapshot of your tree (refs/fwfix/{id}/base) under \
             refs/fwfix/{id}/left-N, restores that snapshot and carries the run on; \
             `fwfix runs prune --resumable` forgets the run and its snapshot, and leaves the \
             tree as it is"
        ),
    }
}

pub(super) fn canonical_repo(repo: &Path) -> Result<PathBuf, OrchestratorError> {
    let canonical = std::fs::canonicalize(repo).map_err(|e| {
        OrchestratorError::Usage(format!(
            "repository directory {} cannot be used: {e}",
            repo.display()
        ))
    })?;
    if !canonical.is_dir() {
        return Err(OrchestratorError::Usage(format!(
            "--repo {} is not a directory",
            repo.display()
        )));
    }
    if let Some(why) = crate::rundir::runs_dir_blocked(&canonical) {
        return Err(OrchestratorError::Usage(why));
    }
    Ok(canonical)
}

/// Where a job's run directory goes.
pub(super) enum Placement {
    /// A new `<repo>/.fwfix/runs/<run-id>/`.
    Runs,
    /// Exactly this directory, inside another run's (a bisect step).
    At(PathBuf),
}

/// What a handler decided, with the reason and evidence that go into the trace.
pub(super) struct Step {
    pub outcome: Outcome,
    pub reason: String,
    pub evidence: Vec<PathBuf>,
}

impl Step {
    pub fn ok(outcome: Outcome, reason: impl Into<String>) -> Step {
        Step {
            outcome,
            reason: reason.into(),
            evidence: Vec::new(),
        }
    }

    pub fn error(class: ErrorClass, reason: impl Into<String>) -> Step {
        Step::ok(Outcome::Error(class), reason)
    }

    pub fn with_evidence(mut self, path: PathBuf) -> Step {
        self.evidence.push(path);
        self
    }
}

/// One run in progress.
/// A run's patch strategy (None for `fwfix test`) and how many candidates to ask it for. The
/// engine is given it: the revert strategy's bisect steps are engine runs themselves.
pub(super) type PickedStrategy<'a> = (Option<Box<dyn Strategy + 'a>>, u32);

pub(super) struct Job<'a> {
    pub ctx: RunContext,
    pub run_dir: RunDir,
    pub(super) trace: TraceWriter,
    pub events: &'a dyn EventSink,
    pub cancel: CancellationToken,
    pub board: Board,
    pub profile: Profile,
    pub build: BuildSpec,
    pub parser: Box<dyn HarnessParser>,
    /// The parse the last attempt's console was streamed into, beside `ctx.capture` until
    /// RESULT_ANALYSIS finishes it (a resumed run has none, and parses the capture).
    pub(super) live: Option<results::LiveParse>,
    pub budgets: Budgets,
    pub dut: Option<Box<dyn Dut>>,
    /// The work tree's repository (fix runs).
    pub repo: Option<Repo>,
    pub strategy: Option<Box<dyn Strategy + 'a>>,
    /// How many candidates to ask the strategy for per iteration.
    pub candidates_wanted: u32,
    pub symbolizer: Option<Symbolizer>,
    pub(super) kill_at: Option<KillAt>,
    /// When PATCH_REVIEW asks a person.
    pub approve: ApproveMode,
    /// Who asks them; None: nobody can be asked.
    pub approver: Option<std::sync::Arc<dyn crate::policy::Approver>>,
    pub(super) deadline_hit: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// How the job uses its board; None for a step of a command that holds the board itself.
    pub access: Option<BoardAccess>,
    /// Whether the board was claimed (leased when it needs it, health gate passed).
    pub board_claimed: bool,
    /// The board's lease, released when the job is dropped (after its report is written).
    pub lease: Option<crate::dut::lease::Lease>,
    /// The labgrid place acquired for a labgrid board, released when the job is dropped.
    pub place: Option<std::sync::Arc<crate::dut::labgrid::place::Acquired>>,
    /// What claiming the board did, for the report.
    pub board_notes: Vec<String>,
    /// The owner's working-tree lock (exclusive for a run that patches the checkout, shared for
    /// `fwfix test` and a `--worktree` run), held until the job is dropped, after the tree is
    /// restored.
    pub(super) tree_lock: Option<crate::repo::TreeLock>,
}

impl<'a> Job<'a> {
    /// Resolves the configuration, creates the run directory and the context.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn start(
        command: Command,
        request: RunRequest,
        (board, profile): (Board, Profile),
        strategy: PickedStrategy<'a>,
        placement: Placement,
        max_iterations: Option<u32>,
        events: &'a dyn EventSink,
        cancel: CancellationToken,
    ) -> Result<Job<'a>, OrchestratorError> {
        // Everything that can be refused (the strategy too) is checked before the run directory
        // exists.
        let durability = durability_of(&strategy.0);
        let started = Utc::now();
        let run_dir = match placement {
            Placement::Runs => {
                let run_dir = RunDir::create(&request.repo, started).map_err(|source| {
                    OrchestratorError::RunDir {
                        path: request.repo.join(rundir::RUNS_DIR),
                        source,
                    }
                })?;
                // A repository that is not under git simply gets no exclude entry.
                if let Err(e) = crate::repo::ensure_excluded(&request.repo, "/.fwfix/") {
                    events.emit(&Event::Message {
                        level: Level::Warning,
                        text: format!("could not add .fwfix/ to .git/info/exclude: {e}"),
                    });
                }
                run_dir
            }
            // Inside another run's directory, which is already kept out of git.
            Placement::At(path) => {
                RunDir::create_at(&path).map_err(|source| OrchestratorError::RunDir {
                    path: path.clone(),
                    source,
                })?
            }
        };
        let limits = Limits {
            max_iterations: max_iterations.unwrap_or(profile.limits.max_iterations),
            no_progress_limit: profile.limits.no_progress_limit,
            confirm_runs: profile.goal.confirm_runs,
            flaky_reruns: machine::convergence::MAX_FLAKY_RERUNS,
        };
        let ctx = RunContext {
            format: CONTEXT_FORMAT,
            run_id: run_dir.id().to_string(),
            command,
            work_dir: request.repo.clone(),
            request,
            pid: std::process::id(),
            host: crate::process::host_name(),
            started_at: started,
            worktree: None,
            state: State::Idle,
            last_line: None,
            ledger: Ledger::default(),
            limits,
            baseline_done: false,
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
            power: Default::default(),
            restarts: 0,
            capture: None,
        };
        let io = |source| OrchestratorError::RunDir {
            path: run_dir.path().to_path_buf(),
            source,
        };
        // Who started the run and how: read by `fwfix runs` and by people, never rewritten.
        let run_json = serde_json::json!({
            "run_id": ctx.run_id,
            "command": command.name(),
            "request": ctx.request,
            "pid": ctx.pid,
            "host": ctx.host,
            "started_at": ctx.started_at,
            "fwfix_version": env!("CARGO_PKG_VERSION"),
        });
        let bytes = serde_json::to_vec_pretty(&run_json).map_err(std::io::Error::other);
        bytes
            .and_then(|b| rundir::write_atomic_as(&run_dir.path().join("run.json"), &b, durability))
            .map_err(io)?;
        let trace = TraceWriter::open(&run_dir, 0, durability).map_err(io)?;
        events.emit(&Event::RunStarted {
            run_id: run_dir.id().to_string(),
            command: command.name().to_string(),
            run_dir: run_dir.path().display().to_string(),
            repo: ctx.request.repo.display().to_string(),
        });
        Job::assemble(
            ctx, run_dir, trace, board, profile, strategy, events, cancel,
        )
    }

    /// Rebuilds a job from a checkpointed context.
    pub(super) fn reopen(
        mut ctx: RunContext,
        run_dir: RunDir,
        (board, profile): (Board, Profile),
        strategy: PickedStrategy<'a>,
        events: &'a dyn EventSink,
        cancel: CancellationToken,
    ) -> Result<Job<'a>, OrchestratorError> {
        let last_seq = rundir::last_trace_line(&run_dir)
            .map_err(|source| OrchestratorError::RunDir {
                path: run_dir.path().to_path_buf(),
                source,
            })?
            .map(|l| l.seq)
            .unwrap_or(0);
        let mut trace = TraceWriter::open(&run_dir, last_seq, durability_of(&strategy.0)).map_err(
            |source| {
                if source.kind() == std::io::ErrorKind::WouldBlock {
                    OrchestratorError::Usage(format!(
                    "run {} is still going: another fwfix process carries it on (last recorded: \
                     pid {} on host {}); stop it or let it finish before resuming",
                    ctx.run_id, ctx.pid, ctx.host
                ))
                } else {
                    OrchestratorError::RunDir {
                        path: run_dir.path().to_path_buf(),
                        source,
                    }
                }
            },
        )?;
        let torn =
            trace
                .set_aside_torn_tail(&run_dir)
                .map_err(|source| OrchestratorError::RunDir {
                    path: run_dir.path().join("trace.jsonl"),
                    source,
                })?;
        if torn > 0 {
            let note = format!(
                "trace.jsonl ended in a line cut short when run {} stopped ({torn} bytes, \
                 recorded as torn): set aside in {} so the trace stays whole",
                ctx.run_id,
                rundir::TORN_TRACE_FILE
            );
            events.emit(&Event::Message {
                level: Level::Warning,
                text: note.clone(),
            });
            ctx.notes.push(note);
        }
        // The context is written before the trace line: a crash between the two leaves the
        // line in the context only, and it is appended now.
        if let Some(line) = &ctx.last_line {
            if line.seq > last_seq {
                trace
                    .write(line)
                    .map_err(|source| OrchestratorError::RunDir {
                        path: run_dir.path().join("trace.jsonl"),
                        source,
                    })?;
            }
        }
        events.emit(&Event::RunStarted {
            run_id: run_dir.id().to_string(),
            command: ctx.command.name().to_string(),
            run_dir: run_dir.path().display().to_string(),
            repo: ctx.request.repo.display().to_string(),
        });
        Job::assemble(
            ctx, run_dir, trace, board, profile, strategy, events, cancel,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn assemble(
        ctx: RunContext,
        run_dir: RunDir,
        trace: TraceWriter,
        board: Board,
        profile: Profile,
        (strategy, candidates_wanted): PickedStrategy<'a>,
        events: &'a dyn EventSink,
        cancel: CancellationToken,
    ) -> Result<Job<'a>, OrchestratorError> {
        let build = profile.build_for(&board);
        let parser = results::parser_for(&profile.test.harness);
        let mut ctx = ctx;
        ctx.agent_workspaces =
            strategy.as_ref().is_some_and(|s| s.edits_tree()) && candidates_wanted > 1;
        let mut budgets = Budgets::default();
        for (class, retries) in &profile.recovery {
            budgets.set(*class, *retries);
        }
        Ok(Job {
            ctx,
            run_dir,
            trace,
            events,
            cancel,
            board,
            profile,
            build,
            parser,
            live: None,
            budgets,
            dut: None,
            repo: None,
            strategy,
            candidates_wanted,
            symbolizer: None,
            kill_at: None,
            approve: ApproveMode::Never,
            approver: None,
            deadline_hit: Default::default(),
            access: None,
            board_claimed: false,
            lease: None,
            place: None,
            board_notes: Vec::new(),
            tree_lock: None,
        })
    }

    /// Cancels the run when `deadline` passes, remembering that the deadline (not a signal) did.
    pub(super) fn arm_deadline(&mut self, deadline: Option<Duration>) {
        let Some(deadline) = deadline else { return };
        let cancel = self.cancel.clone();
        let hit = self.deadline_hit.clone();
        tokio::spawn(async move {
            tokio::time::sleep(deadline).await;
            hit.store(true, std::sync::atomic::Ordering::SeqCst);
            cancel.cancel();
        });
    }

    /// Whether this run patches (a fix run) or only tests.
    pub fn patching(&self) -> bool {
        self.strategy.is_some()
    }

    /// How the run's records are written: synced to disk when the run patches the tree.
    pub fn durability(&self) -> rundir::Durability {
        durability_of(&self.strategy)
    }

    /// Whether another candidate can be tried.
    pub fn candidates_left(&self) -> bool {
        (self.ctx.candidates_waiting() || self.strategy.as_ref().is_some_and(|s| s.has_more()))
            && self.ctx.ledger.iterations_left(&self.ctx.limits)
    }

    /// Runs the machine from `from`, first taking the transition `step` describes.
    pub(super) async fn drive(
        &mut self,
        from: State,
        step: Step,
    ) -> Result<Finished, OrchestratorError> {
        let mut state = from;
        let mut step = step;
        loop {
            if self.cancel.is_cancelled() && machine::next(state, Outcome::Abort).is_ok() {
                // Say why the run stopped (signal or deadline), and what it was doing.
                step = match step.outcome {
                    Outcome::Abort => Step::ok(
                        Outcome::Abort,
                        format!("{}: {}", self.abort_reason(), step.reason),
                    ),
                    _ => Step::ok(Outcome::Abort, self.abort_reason()),
                };
            }
            let to = machine::next(state, step.outcome)
                .map_err(|e| OrchestratorError::Internal(e.to_string()))?;
            self.record(state, to, &step)?;
            state = to;
            if state.is_terminal() {
                self.ctx.final_reason = step.reason;
                return self.finalise(state).await;
            }
            step = self.run_handler(state).await;
            if let Outcome::Error(class) = step.outcome {
                self.ctx.ledger.fail(class, state, step.reason.clone());
            }
        }
    }

    /// Runs the machine from `state` without a transition first (a resumed run re-runs the
    /// handler of the state it was in).
    pub(super) async fn drive_from(&mut self, state: State) -> Result<Finished, OrchestratorError> {
        if state.is_terminal() {
            return self.finalise(state).await;
        }
        let step = self.run_handler(state).await;
        if let Outcome::Error(class) = step.outcome {
            self.ctx.ledger.fail(class, state, step.reason.clone());
        }
        self.drive(state, step).await
    }

    fn abort_reason(&self) -> String {
        if self.deadline_hit.load(std::sync::atomic::Ordering::SeqCst) {
            "the run's deadline passed".to_string()
        } else {
            "interrupted (Ctrl+C or SIGTERM)".to_string()
        }
    }

    /// Runs a state's handler under the state's timeout.
    async fn run_handler(&mut self, state: State) -> Step {
        // Outside the state's timeout: waiting for the board has its own (--lock-timeout).
        if let Err(step) = self.claim_board(state).await {
            return step;
        }
        let limit = self.state_timeout(state);
        match tokio::time::timeout(limit, self.handle(state)).await {
            Ok(step) => step,
            Err(_) => Step::error(
                ErrorClass::Timeout,
                format!("{state} did not finish within {} s", limit.as_secs()),
            ),
        }
    }

    /// The state's timeout: the profile's `[timeouts]`, or a default with room for the step's
    /// own timeout (the build's and the test's are enforced inside their steps).
    fn state_timeout(&self, state: State) -> Duration {
        if let Some(t) = self.profile.timeouts.get(&state) {
            return *t;
        }
        let margin = Duration::from_secs(60);
        match state {
            State::BuildRun => self.build.timeout + margin,
            State::Lint => {
                self.profile
                    .lint
                    .as_ref()
                    .map_or(Duration::from_secs(300), |l| l.timeout)
                    + margin
            }
            State::TestRun => self.profile.test.timeout + margin + self.flash_timeout(),
            State::TestSetup => Duration::from_secs(120) + self.flash_timeout(),
            // A person may be reading the patch.
            State::PatchReview => Duration::from_secs(3600),
            // The revert strategy bisects first: many builds and test runs, each under its
            // own timeout.
            State::PatchGeneration
                if matches!(
                    self.ctx.request.strategy,
                    Some(StrategyChoice::Revert { .. })
                ) =>
            {
                Duration::from_secs(12 * 3600)
            }
            // The agents run side by side, each under the agent's timeout.
            State::PatchGeneration
                if matches!(self.ctx.request.strategy, Some(StrategyChoice::Command)) =>
            {
                let agent = self.profile.strategy.command.as_ref().map(|c| c.timeout);
                agent.unwrap_or_default().max(Duration::from_secs(840)) + margin
            }
            // Waves of requests, each retried under its own timeouts and waits.
            State::PatchGeneration
                if matches!(self.ctx.request.strategy, Some(StrategyChoice::Llm)) =>
            {
                crate::strategy::llm::longest_call(self.profile.strategy.llm.as_ref()) + margin
            }
            State::PatchGeneration => Duration::from_secs(900),
            State::Idle
            | State::Init
            | State::CodeAnalysis
            | State::PatchApply
            | State::BuildSetup
            | State::ResultCollection
            | State::ResultAnalysis
            | State::ConvergenceCheck
            | State::ErrorRecovery
            | State::Success
            | State::Failure
            | State::Aborted => Duration::from_secs(300),
            // Two hooks, each under its own timeout, and the commit itself.
            State::Commit => self.profile.commit.timeout * 2 + margin,
        }
    }

    fn flash_timeout(&self) -> Duration {
        match &self.board.backend {
            config::BoardBackend::Hardware(hw) => hw.flash_timeout,
            config::BoardBackend::Labgrid(lg) => {
                lg.flash.as_ref().map_or(Duration::ZERO, |f| f.timeout)
                    + crate::dut::labgrid::ATTEMPT_OVERHEAD
            }
            config::BoardBackend::Qemu(_) => Duration::ZERO,
        }
    }

    async fn handle(&mut self, state: State) -> Step {
        match state {
            State::Init => self.init().await,
            State::CodeAnalysis => self.code_analysis(),
            State::PatchGeneration => self.patch_generation().await,
            State::PatchReview => self.patch_review().await,
            State::PatchApply => self.patch_apply(),
            State::BuildSetup => self.build_setup(),
            State::BuildRun => self.build_run().await,
            State::Lint => self.lint().await,
            State::TestSetup => self.test_setup().await,
            State::TestRun => self.test_run().await,
            State::ResultCollection => self.collect(),
            State::ResultAnalysis => self.analyse(),
            State::ConvergenceCheck => self.converge(),
            State::Commit => self.commit().await,
            State::ErrorRecovery => self.recover(),
            // A stopped run comes back through IDLE and starts over from INIT, with the work
            // the stop cut short to do again.
            State::Idle => {
                self.ctx.restart();
                Step::ok(Outcome::TaskReceived, "the run goes on")
            }
            State::Success | State::Failure | State::Aborted => {
                Step::error(ErrorClass::Unhandled, format!("{state} has no handler"))
            }
        }
    }

    /// Checkpoints the context with the transition, appends it to the trace, and emits it.
    fn record(&mut self, from: State, to: State, step: &Step) -> Result<(), OrchestratorError> {
        let error_class = match step.outcome {
            Outcome::Error(class) => Some(class),
            Outcome::Unrecoverable => self.ctx.ledger.failure.as_ref().map(|f| f.class),
            _ => None,
        };
        let mut evidence = Vec::new();
        let mut hashes = Vec::new();
        for path in &step.evidence {
            if let Ok(hash) = rundir::sha256_file(path) {
                evidence.push(self.run_dir.relative(path));
                hashes.push(hash);
            }
        }
        let line = self.trace.stamp(
            TraceLine {
                seq: 0,
                ts: String::new(),
                from,
                to,
                outcome: step.outcome,
                reason: step.reason.clone(),
                iteration: self.ctx.ledger.iteration,
                error_class,
                evidence,
                evidence_sha256: hashes,
            },
            Utc::now(),
        );
        self.ctx.state = to;
        self.ctx.last_line = Some(line.clone());
        if to == State::Failure {
            self.ctx.final_class = error_class;
        }
        if let Some(s) = &self.strategy {
            self.ctx.strategy_state = s.save();
        }
        let io = |source| OrchestratorError::RunDir {
            path: self.run_dir.path().to_path_buf(),
            source,
        };
        self.ctx
            .checkpoint(self.run_dir.path(), self.durability())
            .map_err(io)?;
        self.trace.write(&line).map_err(io)?;
        self.events.emit(&Event::Transition {
            seq: line.seq,
            from,
            to,
            reason: line.reason,
            iteration: line.iteration,
            error_class,
        });
        let kill = self.kill_at.is_some_and(|k| {
            k.state == to && k.iteration.is_none_or(|i| i == self.ctx.ledger.iteration)
        });
        if kill {
            // Test hook: die as a power cut would, right after the checkpoint.
            let _ =
                nix::sys::signal::kill(nix::unistd::getpid(), nix::sys::signal::Signal::SIGKILL);
        }
        Ok(())
    }

    /// After a terminal state: the fix branch, the owner's tree restored, the report.
    async fn finalise(&mut self, state: State) -> Result<Finished, OrchestratorError> {
        if self.patching() {
            if let Err(e) = self.restore_owner_tree() {
                return Err(OrchestratorError::Internal(format!(
                    "restoring the repository failed: {e}; the snapshot is under refs/fwfix/{}/base",
                    self.ctx.run_id
                )));
            }
            if state == State::Success {
                self.remove_worktree();
                // A converged run cannot be resumed: its snapshots go (the fix is on its branch).
                self.remove_snapshots();
            }
        }
        // The context records the finished run (resume refuses it; `fwfix runs` lists it).
        self.ctx
            .checkpoint(self.run_dir.path(), self.durability())
            .map_err(|source| OrchestratorError::RunDir {
                path: self.run_dir.path().to_path_buf(),
                source,
            })?;
        let mut report = self.report(state);
        self.record_check(&mut report);
        let written = report::write(self.run_dir.path(), &report, self.durability());
        // After the reports, on this thread: a thread of its own for it can be started
        // milliseconds late on a loaded host, and the run's end would wait for it.
        RunContext::checkpoints_done(self.run_dir.path());
        written.map_err(|e| OrchestratorError::RunDir {
            path: self.run_dir.path().to_path_buf(),
            source: std::io::Error::other(e.to_string()),
        })?;
        Ok(Finished {
            command: self.ctx.command,
            final_state: state,
            error_class: self.ctx.final_class,
            run_dir: self.run_dir.path().to_path_buf(),
            report,
        })
    }

    fn report(&self, final_state: State) -> Report {
        let ctx = &self.ctx;
        let infra = ctx.final_class.is_some_and(|c| c.is_infrastructure());
        let status = match (ctx.command, final_state) {
            (Command::Test, State::Success) => Status::Passed,
            (Command::Test, State::Failure) if infra => Status::Error,
            (Command::Test, State::Failure) => Status::Failed,
            (Command::Test, _) => Status::Error,
            (_, State::Success) => Status::Success,
            (_, State::Aborted) => Status::Aborted,
            (_, _) => Status::Failure,
        };
        let mut report = Report::new(
            ctx.run_id.clone(),
            ctx.command,
            status,
            final_state,
            ctx.started_at,
            Utc::now(),
        );
        report.iterations = ctx.ledger.iteration;
        report.error_class = ctx.final_class;
        report.message = ctx.final_reason.clone();
        report.repo = ctx.request.repo.display().to_string();
        report.board = self.board.name.clone();
        report.profile = self.profile.name.clone();
        report.lease = self.lease.as_ref().map(|l| l.info().clone());
        report.build = ctx.build.as_ref().map(|b| b.summary.clone());
        report.lint = ctx.lint.clone();
        report.attempts = ctx
            .attempts
            .iter()
            .map(|a| AttemptSummary {
                crash: a.crash.clone(),
                ..a.summary.clone()
            })
            .collect();
        report.power_cycles = ctx.power.cycles.clone();
        if ctx.attempts.len() > 1 {
            report.pass_counts =
                report::pass_counts(ctx.attempts.iter().map(|a| a.results.cases.as_slice()));
        }
        if let Some(last) = ctx.attempts.last() {
            report.verdict = Some(last.results.verdict);
            report.cases = last.results.cases.clone();
            report.crash = last.crash.clone();
            report.hang_site = last.hang_site.clone();
            report.hang_handler = last.hang_handler.clone();
            report.console_silence = last.console_silence.clone();
            report.notes = last.results.notes.clone();
        }
        // Attempts of one image that passed and failed: the image's verdict is flaky, whatever
        // the last attempt said.
        let seen = |v: results::Verdict| ctx.attempts.iter().any(|a| a.results.verdict == v);
        if seen(results::Verdict::Pass) && seen(results::Verdict::Fail) {
            report.verdict = Some(results::Verdict::Flaky);
        }
        // An attempt interrupted mid-run: what it printed so far is the last test run's cases.
        if let (State::Aborted, Some(capture)) = (final_state, &ctx.capture) {
            let partial = self.results_of(capture, &crate::results::ParseContext::default());
            report.verdict = Some(partial.verdict);
            report.cases = partial.cases;
            report::mark_interrupted(&mut report.cases);
            report.notes = partial.notes;
            // Those were an earlier attempt's; this one was not analysed.
            report.crash = None;
            report.hang_site = None;
            report.hang_handler = None;
            report.console_silence = None;
        }
        report.notes.extend(self.board_notes.iter().cloned());
        report.notes.extend(ctx.notes.iter().cloned());
        // Attempts of one image that crashed in different places: said first, not left for
        // someone to spot in the attempts' rows.
        if let Some(differ) = report::crash_sites_differ(&report.attempts) {
            report.message = format!("{}; {differ}", report.message);
            report.notes.insert(0, differ);
        }
        if ctx.command == Command::Run {
            report.fixed = Some(match &ctx.fix {
                Some(f) => f.fixed.clone(),
                None => ctx
                    .best_partial()
                    .and_then(|b| b.judgement.as_ref())
                    .map(|j| j.fixed.clone())
                    .unwrap_or_default(),
            });
            report.patch = ctx
                .fix
                .as_ref()
                .map(|f| self.run_dir.path().join(&f.patch).display().to_string());
            report.branch = ctx.fix.as_ref().and_then(|f| f.branch.clone());
            report.fix_needs_uncommitted =
                ctx.fix.as_ref().and_then(|f| f.needs_uncommitted.clone());
            report.candidates = ctx.candidates.iter().map(candidate_summary).collect();
            for r in &ctx.history {
                report.notes.push(format!(
                    "iteration {} ({}): {}: {}",
                    r.iteration,
                    r.origin,
                    r.verdict.words(),
                    r.reason
                ));
            }
            if let Some(s) = &self.strategy {
                let facts = s.facts();
                report.tokens = facts.tokens;
                report.revert_conflict = facts.revert_conflict;
            }
            if ctx.fix.is_none() {
                if let Some(best) = ctx.best_partial() {
                    report.notes.push(format!(
                        "best partial patch: iteration {} ({}), {}",
                        best.iteration, best.origin, best.patch
                    ));
                }
            }
        }
        report
    }

    /// The repository at `path` (the work tree, or the owner's checkout), its snapshots keeping
    /// untracked files over the profile's `[snapshot] max_untracked_mb` aside in the run
    /// directory instead of in git objects.
    pub(super) fn open_repo(&self, path: &Path) -> Result<Repo, crate::repo::RepoError> {
        let mut repo = Repo::open(path)?;
        repo.keep_large_files_aside(crate::repo::LargeFiles {
            above_bytes: self.profile.snapshot.max_untracked_bytes,
            store: self.run_dir.path().join(rundir::UNTRACKED_DIR),
        });
        Ok(repo)
    }

    /// Reconciling restores the tree the run left, and that must never write over anything:
    /// whatever changed in it since the run stopped is dealt with first. A run killed while it
    /// held the tree (its agent editing it in place, or a candidate applied) cannot tell its
    /// own leftovers from anyone's edits, so the whole tree as it is goes into a snapshot
    /// `refs/fwfix/<run-id>/left-<n>` (untracked files included) which outlives the run, and
    /// the event and the report name it with the command that brings it back. A run that had
    /// put the owner's tree back before it stopped refuses instead (exit 2, nothing touched),
    /// naming the files: every change is the person's. So does a moved HEAD.
    fn set_aside_edits_since_stop(
        &mut self,
        repo: &Repo,
        base: &crate::repo::Snapshot,
    ) -> Result<(), OrchestratorError> {
        let candidate = self
            .ctx
            .applied_patch()
            .and_then(|patch| std::fs::read(self.run_dir.path().join(patch)).ok());
        let run = self.ctx.run_id.clone();
        let dir = self.ctx.work_dir.display().to_string();
        let edits = match repo.edits_since(base, candidate.as_deref()) {
            Ok(edits) => edits,
            Err(crate::repo::RepoError::HeadMoved {
                expected, found, ..
            }) => {
                return Err(OrchestratorError::Usage(format!(
                    "HEAD in {dir} moved since run {run} stopped (it was {expected}, it is \
                     {found}); fwfix will not restore the run's tree over new commits: check out \
                     {expected} again to resume it, or start a new run"
                )))
            }
            Err(e) => {
                return Err(OrchestratorError::Internal(format!(
                    "cannot compare {dir} with the tree run {run} left: {e}"
                )))
            }
        };
        if edits.is_empty() {
            return Ok(());
        }
        let listed: Vec<String> = edits.iter().map(ToString::to_string).collect();
        let agent = self.ctx.state == State::PatchGeneration
            && !self.ctx.agent_workspaces
            && self.strategy.as_ref().is_some_and(|s| s.edits_tree());
        let why = match (agent, self.ctx.patch_applied) {
            (true, _) => "the run was killed while its agent edited the tree",
            (false, true) => "the run was killed with a candidate applied",
            (false, false) => {
                let paths: BTreeSet<String> = edits
                    .iter()
                    .map(|e| crate::dut::board::flash::shell_quote(&e.path))
                    .collect();
                return Err(OrchestratorError::Usage(format!(
                    "{dir} changed since run {run} stopped: {}. fwfix will not write over work \
                     done since. Keep it and start a new run from this tree; or set it aside \
                     (git stash push --include-untracked -- {}), run fwfix resume {run} again, \
                     and take it back when the run has ended (git stash pop)",
                    listed.join(", "),
                    paths.into_iter().collect::<Vec<_>>().join(" ")
                )));
            }
        };
        let internal = |e: crate::repo::RepoError| {
            OrchestratorError::Internal(format!(
                "cannot set aside what changed in {dir} since run {run} stopped: {e}"
            ))
        };
        let taken = repo.set_aside_refs(&run).map_err(internal)?.len();
        let label = format!("left-{}", taken + 1);
        // Its parent is the run's snapshot, so it holds exactly what changed since; large
        // untracked files that changed go into git objects too: the run directory that keeps
        // the others aside goes with `fwfix runs prune`, and this tree must not.
        let message = format!(
            "fwfix: tree set aside when run {run} was resumed\n\n{why}; it differed from the \
             run's snapshot {} in:\n{}\n",
            base.refname,
            listed
                .iter()
                .map(|l| format!("  {l}"))
                .collect::<Vec<_>>()
                .join("\n")
        );
        let left = repo.set_aside(base, &label, &message).map_err(internal)?;
        let note = format!(
            "{dir} differed from the run's snapshot of your work when run {run} was resumed \
             ({why}): {}. That tree was set aside as {left} before your work was restored; \
             `{}` brings those changes back",
            listed.join(", "),
            crate::repo::set_aside_command(&left)
        );
        self.events.emit(&Event::Message {
            level: Level::Warning,
            text: note.clone(),
        });
        self.ctx.notes.push(note);
        Ok(())
    }

    /// Puts a resumed run's repository back in line with its checkpoint: the owner's tree as
    /// snapshotted, plus the current candidate when the checkpoint says it was applied.
    pub(super) fn reconcile(&mut self) -> Result<(), OrchestratorError> {
        if self.ctx.request.strategy.is_none() {
            return Ok(());
        }
        let repo = self
            .open_repo(&self.ctx.work_dir)
            .map_err(|e| OrchestratorError::Usage(format!("cannot reopen the work tree: {e}")))?;
        if let Some(base) = self.ctx.base.clone() {
            self.set_aside_edits_since_stop(&repo, &base)?;
            repo.restore(&base).map_err(|e| {
                OrchestratorError::Internal(format!("rolling back to the checkpoint failed: {e}"))
            })?;
            self.events.emit(&Event::Message {
                level: Level::Info,
                text: format!("restored the tree to refs/fwfix/{}/base", self.ctx.run_id),
            });
        }
        let reapply = self.ctx.patch_applied
            && matches!(
                self.ctx.state,
                State::BuildSetup
                    | State::BuildRun
                    | State::Lint
                    | State::TestSetup
                    | State::TestRun
                    | State::ResultCollection
                    | State::ResultAnalysis
                    | State::ConvergenceCheck
                    | State::Commit
            );
        if reapply {
            if let Some((_, patch)) = &self.ctx.candidate {
                let diff = std::fs::read(self.run_dir.path().join(patch)).map_err(|source| {
                    OrchestratorError::RunDir {
                        path: self.run_dir.path().join(patch),
                        source,
                    }
                })?;
                repo.apply_patch(&diff).map_err(|e| {
                    OrchestratorError::Internal(format!("re-applying {patch} failed: {e}"))
                })?;
            }
        } else {
            self.ctx.patch_applied = false;
        }
        self.repo = Some(repo);
        Ok(())
    }
}

impl Job<'_> {
    /// Claims the board before the first step that runs, unless it is claimed already or the
    /// job runs under a command that holds it (a bisect step). IDLE and ERROR_RECOVERY have no
    /// error outcome, so the next working state claims it.
    pub(super) async fn claim_board(&mut self, state: State) -> Result<(), Step> {
        if matches!(state, State::Idle | State::ErrorRecovery) {
            return Ok(());
        }
        self.claim_board_now()
            .await
            .map_err(|e| Step::error(ErrorClass::TestEnvFailure, e.to_string()))
    }

    /// Claims the board unless it is claimed already or the job runs under a command that
    /// holds it. `fwfix resume` claims it before going on, so that a busy or refused board
    /// ends the resume at once and leaves the run as it was, to be resumed again.
    pub(super) async fn claim_board_now(&mut self) -> Result<(), ClaimError> {
        if self.board_claimed {
            return Ok(());
        }
        let Some(access) = self.access.clone() else {
            return Ok(());
        };
        let command = match access.gate {
            HealthGate::Check => "boards check",
            HealthGate::Enforce | HealthGate::Force => self.ctx.command.name(),
        };
        match claim(
            &self.board,
            &access,
            &self.ctx.run_id,
            command,
            &self.cancel,
            self.events,
        )
        .await
        {
            Ok(claim) => {
                self.board_claimed = true;
                self.lease = claim.lease;
                self.place = claim.place;
                self.board_notes.extend(claim.notes);
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// For a health check that got hold of its board: records the verdict as the board's health
    /// (still under the lease, so the next run sees it) and notes it in the report.
    pub(super) fn record_check(&mut self, report: &mut Report) {
        let checking = self
            .access
            .as_ref()
            .is_some_and(|a| a.gate == HealthGate::Check);
        if !checking || !self.board_claimed {
            return;
        }
        let Some((state, reason)) = check_verdict(report) else {
            return;
        };
        let record = HealthRecord {
            board: self.board.name.clone(),
            state,
            reason: reason.clone(),
            checked_at: Utc::now(),
            run_id: Some(self.ctx.run_id.clone()),
            by: crate::process::login_name(),
        };
        let Some(access) = &self.access else { return };
        match health::store(&access.state_dir, &record) {
            Ok(()) => {
                report
                    .notes
                    .push(format!("board {} marked {state}: {reason}", record.board));
                self.events.emit(&Event::BoardHealth {
                    board: record.board,
                    state,
                    reason,
                });
            }
            Err(e) => {
                let text = format!("the health check's verdict could not be recorded: {e}");
                self.events.emit(&Event::Message {
                    level: Level::Error,
                    text: text.clone(),
                });
                report.notes.push(text);
            }
        }
    }
}

/// How the records of a run with `strategy` are written: a run that patches the tree syncs them,
/// since its checkpoint is what gives the person's tree back after a crash; a test run does not
/// (see [`rundir::Durability`]).
fn durability_of(strategy: &Option<Box<dyn Strategy + '_>>) -> rundir::Durability {
    match strategy {
        Some(_) => rundir::Durability::Synced,
        None => rundir::Durability::Cached,
    }
}

/// A candidate as report.json lists it.
fn candidate_summary(c: &crate::governor::CandidateRecord) -> report::CandidateSummary {
    use crate::governor::Verdict;
    let (verdict, rank, error_class) = match c.verdict {
        Verdict::Pending => ("pending", None, None),
        Verdict::Ranked { rank } => ("ranked", Some(rank), None),
        Verdict::Dropped { class, .. } => ("dropped", None, Some(class)),
    };
    report::CandidateSummary {
        iteration: c.iteration,
        id: c.id.clone(),
        origin: c.origin.clone(),
        verdict: verdict.to_string(),
        rank,
        error_class,
        changed_lines: c.changed_lines,
        reason: c.reason.clone(),
        new_findings: c.new_findings.clone(),
    }
}

pub(super) fn load_config(request: &RunRequest) -> Result<(Board, Profile), OrchestratorError> {
    let board = config::resolve_board(&request.board, &request.repo)?;
    let profile = config::resolve_profile(&request.profile, &request.repo)?;
    Ok((board, profile))
}
