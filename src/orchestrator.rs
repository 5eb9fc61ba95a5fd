//! Drives the state machine: runs each state's handler, records every transition, and does the
//! I/O the machine asks for. The only module that sees config, build, DUT, results, analysis,
//! report and repo together.
//!
//! A `fwfix test` run, step by step:
//! 1. Resolve the board and profile (a bad file is a configuration error before anything runs),
//!    pick the harness parser, create `.fwfix/runs/<run-id>/` and keep it out of git.
//! 2. IDLE → INIT: open the DUT backend and check it can work (QEMU binary, machine name).
//! 3. BUILD_SETUP → BUILD_RUN: run the profile's build command; its log is evidence.
//! 4. TEST_SETUP → TEST_RUN: boot the image, capture the console until the verdict, an exit, a
//!    crash, the test timeout or Ctrl+C.
//! 5. RESULT_COLLECTION → RESULT_ANALYSIS: symbolise a crash or hang on the ELF just built, parse
//!    the console into cases, write results.json.
//! 6. CONVERGENCE_CHECK: run the same image again for `--repeat`, then SUCCESS when every attempt
//!    passed, FAILURE otherwise.
//! 7. ERROR_RECOVERY: retry the failed step within its class's budget, or FAILURE.
//! 8. Whatever the ending, write report.json, report.md and junit.xml.
//!
//! Every transition is appended to trace.jsonl (fsync'd) and emitted as an event before the next
//! handler starts.

use crate::analysis::symbols::Symbolizer;
use crate::analysis::{fault, CrashReport, Location};
use crate::build::{self, BuildEnd, BuildRequest};
use crate::capture::{Capture, RunEnd};
use crate::config::{self, Board, BuildSpec, ConfigError, Profile};
use crate::dut::{self, Dut, DutError, Image, RunSpec};
use crate::events::{Event, EventSink, Level};
use crate::machine::convergence::{self, AttemptVerdict};
use crate::machine::recovery::{self, Budgets, Decision};
use crate::machine::{self, ErrorClass, Outcome, State};
use crate::report::{self, AttemptSummary, BuildSummary, Command, Report, Status};
use crate::results::{self, CaseStatus, HarnessParser, ParseContext, TestResults, Verdict};
use crate::rundir::{self, RunDir, TraceLine, TraceWriter};
use chrono::{DateTime, Utc};
use std::collections::BTreeMap;
use std::path::PathBuf;
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

/// Errors that stop a command before its state machine starts.
#[derive(Debug, thiserror::Error)]
pub enum OrchestratorError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("{0}")]
    Usage(String),
    #[error("cannot write the run directory {}: {source}", path.display())]
    RunDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("internal error: {0}")]
    Internal(String),
}

/// `fwfix test`: build the image once and run it `repeat` times.
pub async fn test(
    opts: TestOptions,
    events: &dyn EventSink,
    cancel: CancellationToken,
) -> Result<Finished, OrchestratorError> {
    let repo = std::fs::canonicalize(&opts.repo).map_err(|e| {
        OrchestratorError::Usage(format!(
            "repository directory {} cannot be used: {e}",
            opts.repo.display()
        ))
    })?;
    if !repo.is_dir() {
        return Err(OrchestratorError::Usage(format!(
            "--repo {} is not a directory",
            opts.repo.display()
        )));
    }
    let board = config::resolve_board(&opts.board, &repo)?;
    let profile = config::resolve_profile(&opts.profile, &repo)?;
    let build = profile.build_for(&board);
    let parser = results::parser_for(profile.test.harness)
        .map_err(|e| OrchestratorError::Usage(format!("{}: {e}", profile.source.display())))?;

    let started = Utc::now();
    let run_dir = RunDir::create(&repo, started).map_err(|source| OrchestratorError::RunDir {
        path: repo.join(rundir::RUNS_DIR),
        source,
    })?;
    let io_err = |source| OrchestratorError::RunDir {
        path: run_dir.path().to_path_buf(),
        source,
    };
    // A repository that is not under git simply gets no exclude entry.
    if let Err(e) = crate::repo::ensure_excluded(&repo, "/.fwfix/") {
        events.emit(&Event::Message {
            level: Level::Warning,
            text: format!("could not add .fwfix/ to .git/info/exclude: {e}"),
        });
    }
    let iter_dir = run_dir.iteration(0).map_err(io_err)?;
    let trace = TraceWriter::create(&run_dir).map_err(io_err)?;
    events.emit(&Event::RunStarted {
        run_id: run_dir.id().to_string(),
        command: Command::Test.name().to_string(),
        run_dir: run_dir.path().display().to_string(),
        repo: repo.display().to_string(),
    });

    let mut job = TestJob {
        repo,
        board,
        profile,
        build,
        parser,
        run_dir,
        iter_dir,
        trace,
        events,
        cancel,
        repeat: opts.repeat.max(1),
        started,
        dut: None,
        build_record: None,
        symbolizer: None,
        last_capture: None,
        attempts: Vec::new(),
        retries: BTreeMap::new(),
        budgets: Budgets::default(),
        failure: None,
        final_reason: String::new(),
        final_class: None,
        seq: 0,
    };
    let final_state = job.drive().await?;
    let report = job.report(final_state);
    report::write(job.run_dir.path(), &report).map_err(|e| OrchestratorError::RunDir {
        path: job.run_dir.path().to_path_buf(),
        source: std::io::Error::other(e.to_string()),
    })?;
    Ok(Finished {
        command: Command::Test,
        final_state,
        error_class: job.final_class,
        run_dir: job.run_dir.path().to_path_buf(),
        report,
    })
}

/// What a handler decided, with the reason and evidence that go into the trace.
struct Step {
    outcome: Outcome,
    reason: String,
    evidence: Vec<PathBuf>,
}

impl Step {
    fn ok(outcome: Outcome, reason: impl Into<String>) -> Step {
        Step {
            outcome,
            reason: reason.into(),
            evidence: Vec::new(),
        }
    }

    fn with_evidence(mut self, path: PathBuf) -> Step {
        self.evidence.push(path);
        self
    }
}

/// The build as the report shows it.
struct BuildRecord {
    summary: BuildSummary,
    artifact: PathBuf,
}

/// One attempt's results as the report shows them.
struct AttemptRecord {
    summary: AttemptSummary,
    results: TestResults,
    crash: Option<CrashReport>,
    hang_site: Option<Location>,
}

/// A failure waiting for ERROR_RECOVERY.
struct PendingFailure {
    class: ErrorClass,
    state: State,
    message: String,
}

struct TestJob<'a> {
    repo: PathBuf,
    board: Board,
    profile: Profile,
    build: BuildSpec,
    parser: Box<dyn HarnessParser>,
    run_dir: RunDir,
    iter_dir: PathBuf,
    trace: TraceWriter,
    events: &'a dyn EventSink,
    cancel: CancellationToken,
    repeat: u32,
    started: DateTime<Utc>,
    dut: Option<Box<dyn Dut>>,
    build_record: Option<BuildRecord>,
    symbolizer: Option<Symbolizer>,
    last_capture: Option<Capture>,
    attempts: Vec<AttemptRecord>,
    retries: BTreeMap<ErrorClass, u32>,
    budgets: Budgets,
    failure: Option<PendingFailure>,
    final_reason: String,
    final_class: Option<ErrorClass>,
    seq: u64,
}

impl TestJob<'_> {
    /// Runs the machine from IDLE to a terminal state.
    async fn drive(&mut self) -> Result<State, OrchestratorError> {
        let mut state = State::Idle;
        let mut step = Step::ok(Outcome::TaskReceived, "fwfix test");
        loop {
            if self.cancel.is_cancelled()
                && step.outcome != Outcome::Abort
                && machine::next(state, Outcome::Abort).is_ok()
            {
                step = Step::ok(Outcome::Abort, "aborted by signal");
            }
            let to = machine::next(state, step.outcome)
                .map_err(|e| OrchestratorError::Internal(e.to_string()))?;
            self.record(state, to, &step)?;
            state = to;
            if state.is_terminal() {
                self.final_reason = step.reason;
                return Ok(state);
            }
            step = self.handle(state).await;
            if let Outcome::Error(class) = step.outcome {
                self.failure = Some(PendingFailure {
                    class,
                    state,
                    message: step.reason.clone(),
                });
            }
        }
    }

    /// Appends the transition to the trace (before the next handler starts) and emits it.
    fn record(&mut self, from: State, to: State, step: &Step) -> Result<(), OrchestratorError> {
        let error_class = match step.outcome {
            Outcome::Error(class) => Some(class),
            Outcome::Unrecoverable => self.failure.as_ref().map(|f| f.class),
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
        let line = TraceLine {
            seq: 0,
            ts: String::new(),
            from,
            to,
            outcome: step.outcome,
            reason: step.reason.clone(),
            iteration: 0,
            error_class,
            evidence,
            evidence_sha256: hashes,
        };
        let line =
            self.trace
                .append(line, Utc::now())
                .map_err(|source| OrchestratorError::RunDir {
                    path: self.run_dir.path().join("trace.jsonl"),
                    source,
                })?;
        self.seq = line.seq;
        self.events.emit(&Event::Transition {
            seq: line.seq,
            from,
            to,
            reason: line.reason,
            iteration: 0,
            error_class,
        });
        if to == State::Failure {
            self.final_class = error_class;
        }
        Ok(())
    }

    async fn handle(&mut self, state: State) -> Step {
        match state {
            State::Init => self.init().await,
            State::BuildSetup => self.build_setup(),
            State::BuildRun => self.build_run().await,
            State::TestSetup => self.test_setup().await,
            State::TestRun => self.test_run().await,
            State::ResultCollection => self.collect(),
            State::ResultAnalysis => self.analyse(),
            State::ConvergenceCheck => self.converge(),
            State::ErrorRecovery => self.recover(),
            // `fwfix test` never patches; the machine cannot reach these from its path.
            State::Idle
            | State::CodeAnalysis
            | State::PatchGeneration
            | State::PatchReview
            | State::PatchApply
            | State::Success
            | State::Failure
            | State::Aborted => Step::ok(
                Outcome::Error(ErrorClass::Unhandled),
                format!("{state} has no handler in fwfix test"),
            ),
        }
    }

    async fn init(&mut self) -> Step {
        let mut dut = match dut::open(&self.board) {
            Ok(dut) => dut,
            Err(e) => return dut_error(&e),
        };
        if let Err(e) = dut.check().await {
            return dut_error(&e);
        }
        let what = dut.describe();
        self.dut = Some(dut);
        Step::ok(
            Outcome::ContextReady,
            format!("{what} ready; iteration 0 is the baseline"),
        )
    }

    fn build_setup(&mut self) -> Step {
        let dir = self.repo.join(&self.build.cwd);
        if !dir.is_dir() {
            return Step::ok(
                Outcome::Error(ErrorClass::BuildEnvFailure),
                format!(
                    "build directory {} ({} in {}) does not exist",
                    dir.display(),
                    self.build.cwd.display(),
                    self.profile.source.display()
                ),
            );
        }
        Step::ok(Outcome::BuildReady, format!("build in {}", dir.display()))
    }

    async fn build_run(&mut self) -> Step {
        let log_path = self.iter_dir.join("build.log");
        let req = BuildRequest {
            command: self.build.command.clone(),
            cwd: self.repo.join(&self.build.cwd),
            timeout: self.build.timeout,
            log_path: log_path.clone(),
            env: vec![("FWFIX_BOARD".into(), self.board.name.clone())],
        };
        let out = match build::run(&req, &self.cancel, self.events).await {
            Ok(out) => out,
            Err(e) => {
                return Step::ok(Outcome::Error(ErrorClass::BuildEnvFailure), e.to_string());
            }
        };
        let diagnostics = crate::analysis::diagnostics::parse_build_log(&out.log);
        let errors = diagnostics
            .iter()
            .filter(|d| d.severity == crate::analysis::Severity::Error)
            .count();
        let warnings = diagnostics
            .iter()
            .filter(|d| d.severity == crate::analysis::Severity::Warning)
            .count();
        self.events.emit(&Event::BuildFinished {
            success: out.success(),
            duration_ms: out.duration.as_millis() as u64,
            errors,
            warnings,
        });
        let artifact = self.repo.join(&self.build.artifact);
        let first_error = diagnostics
            .iter()
            .find(|d| d.severity == crate::analysis::Severity::Error)
            .map(|d| match (&d.file, d.line) {
                (Some(f), Some(l)) => format!(": {f}:{l}: {}", d.message),
                _ => format!(": {}", d.message),
            })
            .unwrap_or_default();
        self.build_record = Some(BuildRecord {
            summary: BuildSummary {
                command: self.build.command.clone(),
                success: out.success(),
                duration_ms: out.duration.as_millis() as u64,
                log: self.run_dir.relative(&log_path),
                diagnostics,
            },
            artifact: artifact.clone(),
        });
        let step = match out.end {
            BuildEnd::Exited(0) => {
                if artifact.is_file() {
                    self.symbolizer = Symbolizer::open(&artifact).ok();
                    Step::ok(
                        Outcome::Built,
                        format!("built {}", self.build.artifact.display()),
                    )
                } else {
                    Step::ok(
                        Outcome::Error(ErrorClass::ArtifactMissing),
                        format!(
                            "the build succeeded but did not produce {} (artifact in {})",
                            self.build.artifact.display(),
                            self.profile.source.display()
                        ),
                    )
                }
            }
            BuildEnd::Exited(code) => match &out.missing_tool {
                Some(tool) => Step::ok(
                    Outcome::Error(ErrorClass::BuildEnvFailure),
                    format!("the build needs `{tool}`, which is not installed (exit {code})"),
                ),
                None => Step::ok(
                    Outcome::Error(ErrorClass::BuildFailure),
                    format!(
                        "build failed (exit {code}, {errors} error{}){first_error}",
                        if errors == 1 { "" } else { "s" }
                    ),
                ),
            },
            BuildEnd::Signalled(sig) => Step::ok(
                Outcome::Error(ErrorClass::BuildEnvFailure),
                format!("the build was killed by signal {sig}"),
            ),
            BuildEnd::TimedOut => Step::ok(
                Outcome::Error(ErrorClass::Timeout),
                format!(
                    "the build did not finish within {} s",
                    self.build.timeout.as_secs()
                ),
            ),
            BuildEnd::Cancelled => Step::ok(Outcome::Abort, "build interrupted"),
        };
        step.with_evidence(log_path)
    }

    async fn test_setup(&mut self) -> Step {
        let Some(record) = &self.build_record else {
            return Step::ok(
                Outcome::Error(ErrorClass::ArtifactMissing),
                "no image has been built",
            );
        };
        if !record.artifact.is_file() {
            return Step::ok(
                Outcome::Error(ErrorClass::ArtifactMissing),
                format!("image {} is missing", record.artifact.display()),
            );
        }
        let Some(dut) = &self.dut else {
            return Step::ok(Outcome::Error(ErrorClass::TestEnvFailure), "no DUT is open");
        };
        Step::ok(
            Outcome::DutReady,
            format!(
                "{} ready for attempt {} of {}",
                dut.describe(),
                self.attempts.len() + 1,
                self.repeat
            ),
        )
    }

    async fn test_run(&mut self) -> Step {
        let attempt = self.attempts.len() as u32 + 1;
        let console = self.attempt_file(attempt, "console", "log");
        let (Some(dut), Some(record)) = (self.dut.as_mut(), &self.build_record) else {
            return Step::ok(
                Outcome::Error(ErrorClass::TestEnvFailure),
                "no DUT or image",
            );
        };
        let spec = RunSpec {
            timeout: self.profile.test.timeout,
            detector: self.parser.detector(),
            console_log: console.clone(),
            append: None,
            cancel: self.cancel.clone(),
            attempt,
        };
        let image = Image {
            elf: record.artifact.clone(),
        };
        let flash_log = dut::flash_log_path(&console);
        let capture = match dut.run(&image, spec, self.events).await {
            Ok(c) => c,
            Err(e) => {
                let step = dut_error(&e).with_evidence(console);
                return if flash_log.is_file() {
                    step.with_evidence(flash_log)
                } else {
                    step
                };
            }
        };
        let step = match capture.end {
            RunEnd::Cancelled => Step::ok(Outcome::Abort, "test run interrupted"),
            RunEnd::PortLost => Step::ok(
                Outcome::Error(ErrorClass::TestEnvFailure),
                format!(
                    "{}: the console port was lost before the run finished",
                    dut.describe()
                ),
            ),
            RunEnd::RunnerDied { signal, code } => Step::ok(
                Outcome::Error(ErrorClass::TestEnvFailure),
                format!(
                    "{} died during the run ({})",
                    dut.describe(),
                    match (signal, code) {
                        (Some(s), _) => format!("signal {s}"),
                        (None, Some(c)) => format!("exit {c}"),
                        (None, None) => "no status".to_string(),
                    }
                ),
            ),
            RunEnd::Verdict => Step::ok(Outcome::RunFinished, "the harness printed its verdict"),
            RunEnd::Exited { code } => Step::ok(
                Outcome::RunFinished,
                format!("the image exited with {code}"),
            ),
            RunEnd::Crashed => Step::ok(Outcome::RunFinished, "the image crashed"),
            RunEnd::Timeout => Step::ok(
                Outcome::RunFinished,
                format!(
                    "no verdict within {} s: the image hangs",
                    self.profile.test.timeout.as_secs()
                ),
            ),
        };
        self.last_capture = Some(capture);
        let step = step.with_evidence(console);
        if flash_log.is_file() {
            step.with_evidence(flash_log)
        } else {
            step
        }
    }

    fn collect(&mut self) -> Step {
        let attempt = self.attempts.len() as u32 + 1;
        let console = self.attempt_file(attempt, "console", "log");
        if self.last_capture.is_none() || !console.is_file() {
            return Step::ok(
                Outcome::Error(ErrorClass::ArtifactMissing),
                format!("console log {} is missing", console.display()),
            );
        }
        Step::ok(Outcome::Collected, "console captured").with_evidence(console)
    }

    fn analyse(&mut self) -> Step {
        let attempt = self.attempts.len() as u32 + 1;
        let Some(capture) = self.last_capture.take() else {
            return Step::ok(
                Outcome::Error(ErrorClass::ArtifactMissing),
                "no capture to analyse",
            );
        };
        let sym = self.symbolizer.as_ref();
        let root = self.repo.as_path();
        let crash = capture.fault.as_ref().map(|snap| {
            let mut c = fault::crash_report(snap, sym);
            relative_to(root, &mut c.file);
            if let Some(caller) = &mut c.caller {
                relative_to(root, &mut caller.file);
            }
            c.summary = c.summary.replace(&format!("{}/", root.display()), "");
            c
        });
        let hang_site = match (&capture.stopped_at, sym) {
            (Some(snap), Some(sym)) => snap.pc.map(|pc| {
                let mut loc = sym.locate(u64::from(pc));
                relative_to(root, &mut loc.file);
                loc
            }),
            _ => None,
        };
        let mut site_functions = Vec::new();
        if let Some(sym) = sym {
            for snap in [&capture.fault, &capture.stopped_at].into_iter().flatten() {
                site_functions.extend(fault::site_functions(snap, sym));
            }
        }
        let ctx = ParseContext {
            expected: sym.map(|s| s.test_functions()).unwrap_or_default(),
            site_functions,
        };
        let mut results = self.parser.parse(&capture, &ctx);
        // The case the crash or hang is attributed to carries where it happened.
        for case in &mut results.cases {
            match case.status {
                CaseStatus::Crash => {
                    if let Some(c) = &crash {
                        case.message = Some(c.summary.clone());
                    }
                }
                CaseStatus::Hang => {
                    if let Some(loc) = &hang_site {
                        case.message = Some(format!(
                            "no verdict within {} s; stuck in {}",
                            self.profile.test.timeout.as_secs(),
                            report::describe_location(loc)
                        ));
                    }
                }
                CaseStatus::Pass | CaseStatus::Fail | CaseStatus::Ignore | CaseStatus::Missing => {}
            }
        }
        for case in &results.cases {
            self.events.emit(&Event::CaseResult {
                attempt,
                name: case.name.clone(),
                status: case.status,
            });
        }
        let passed = count(&results, CaseStatus::Pass);
        let failed = results.cases.len() - passed - count(&results, CaseStatus::Ignore);
        self.events.emit(&Event::AttemptFinished {
            attempt,
            verdict: results.verdict,
            passed,
            failed,
            duration_ms: capture.duration_ms,
            end: AttemptSummary::end_text(&capture.end),
        });
        let results_path = self.attempt_file(attempt, "results", "json");
        let written = serde_json::to_vec_pretty(&results)
            .map_err(std::io::Error::other)
            .and_then(|bytes| rundir::write_atomic(&results_path, &bytes));
        if let Err(e) = written {
            return Step::ok(
                Outcome::Error(ErrorClass::ArtifactMissing),
                format!("cannot write {}: {e}", results_path.display()),
            );
        }
        let console = self.attempt_file(attempt, "console", "log");
        let verdict = results.verdict;
        self.attempts.push(AttemptRecord {
            summary: AttemptSummary {
                attempt,
                verdict,
                end: AttemptSummary::end_text(&capture.end),
                exit_code: capture.exit_code,
                duration_ms: capture.duration_ms,
                console_log: self.run_dir.relative(&console),
                passed,
                failed,
            },
            results,
            crash,
            hang_site,
        });
        Step::ok(
            Outcome::Decided,
            format!(
                "attempt {attempt}: {} ({passed} passed, {failed} failed)",
                report::verdict_name(verdict)
            ),
        )
        .with_evidence(results_path)
    }

    fn converge(&mut self) -> Step {
        let verdicts: Vec<AttemptVerdict> = self
            .attempts
            .iter()
            .map(|a| match a.results.verdict {
                Verdict::Pass => AttemptVerdict::Pass,
                Verdict::Fail | Verdict::Flaky => AttemptVerdict::Fail,
                Verdict::Inconclusive => AttemptVerdict::Inconclusive,
                Verdict::EnvError => AttemptVerdict::EnvError,
            })
            .collect();
        let Decision { outcome, reason } = convergence::test_mode(&verdicts, self.repeat);
        Step::ok(outcome, reason)
    }

    fn recover(&mut self) -> Step {
        let Some(failure) = &self.failure else {
            return Step::ok(Outcome::Unrecoverable, "no failure recorded");
        };
        let used = self.retries.get(&failure.class).copied().unwrap_or(0);
        let decision = recovery::decide(
            recovery::Failure {
                class: failure.class,
                failed_in: failure.state,
                retries_used: used,
                patching: false,
            },
            &self.budgets,
        );
        if let Outcome::Recovered(_) = decision.outcome {
            self.retries.insert(failure.class, used + 1);
            return Step::ok(decision.outcome, decision.reason);
        }
        // The run ends here: its reason is the failure itself, with why it was not retried.
        Step::ok(
            decision.outcome,
            format!("{} ({})", failure.message, decision.reason),
        )
    }

    /// `console.log` for attempt 1, `console-2.log` for attempt 2, ...
    fn attempt_file(&self, attempt: u32, stem: &str, ext: &str) -> PathBuf {
        if attempt <= 1 {
            self.iter_dir.join(format!("{stem}.{ext}"))
        } else {
            self.iter_dir.join(format!("{stem}-{attempt}.{ext}"))
        }
    }

    fn report(&self, final_state: State) -> Report {
        let status = match final_state {
            State::Success => Status::Passed,
            State::Failure if self.final_class.is_some_and(|c| c.is_infrastructure()) => {
                Status::Error
            }
            State::Failure => Status::Failed,
            _ => Status::Error,
        };
        let mut report = Report::new(
            self.run_dir.id(),
            Command::Test,
            status,
            final_state,
            self.started,
            Utc::now(),
        );
        report.error_class = self.final_class;
        report.message = self.final_reason.clone();
        report.repo = self.repo.display().to_string();
        report.board = self.board.name.clone();
        report.profile = self.profile.name.clone();
        report.build = self.build_record.as_ref().map(|b| b.summary.clone());
        report.attempts = self.attempts.iter().map(|a| a.summary.clone()).collect();
        if self.attempts.len() > 1 {
            report.pass_counts =
                report::pass_counts(self.attempts.iter().map(|a| a.results.cases.as_slice()));
        }
        if let Some(last) = self.attempts.last() {
            report.verdict = Some(last.results.verdict);
            report.cases = last.results.cases.clone();
            report.crash = last.crash.clone();
            report.hang_site = last.hang_site.clone();
            report.notes = last.results.notes.clone();
        }
        report
    }
}

/// Makes a source path from the ELF's debug info relative to the repository, as people read it.
fn relative_to(root: &std::path::Path, file: &mut Option<String>) {
    if let Some(f) = file {
        if let Ok(rel) = std::path::Path::new(f.as_str()).strip_prefix(root) {
            *f = rel.display().to_string();
        }
    }
}

/// A DUT error as a step: the environment failed, never the firmware. A failed flash is its own
/// class, so it is retried as a flash and reported as FLASH_FAILURE.
fn dut_error(e: &DutError) -> Step {
    let class = match e {
        DutError::Flash { .. } => ErrorClass::FlashFailure,
        _ => ErrorClass::TestEnvFailure,
    };
    Step::ok(Outcome::Error(class), e.to_string())
}

fn count(results: &TestResults, status: CaseStatus) -> usize {
    results.cases.iter().filter(|c| c.status == status).count()
}
