//! The handlers every run shares: INIT, the build, the test run, result collection and analysis,
//! CONVERGENCE_CHECK and ERROR_RECOVERY. Fix-only handlers are in `fix.rs`.

use super::context::{AttemptRecord, BuildRecord, IterationRecord};
use super::job::{Job, Step};
use crate::analysis::diagnostics::BuildDirs;
use crate::analysis::symbols::Symbolizer;
use crate::analysis::triage::{self, Stage, TriageContext};
use crate::analysis::{fault, silence, HandlerSite, Severity};
use crate::build::{self, BuildEnd, BuildRequest};
use crate::capture::{Capture, ConsoleLine, RunEnd, Stream};
use crate::dut::power::PowerAction;
use crate::dut::{self, cortex_m, DutError, Image, RunSpec};
use crate::events::{Event, Level};
use crate::machine::convergence::{self, AttemptVerdict, IterationVerdict, Targets};
use crate::machine::{ErrorClass, Outcome, State};
use crate::report::{self, AttemptSummary, BuildSummary, PowerCycle};
use crate::results::{crash_dump, CaseStatus, LiveParse, ParseContext, TestResults, Verdict};
use crate::rundir;
use std::path::{Path, PathBuf};

impl Job<'_> {
    pub(super) async fn init(&mut self) -> Step {
        // `fwfix test` may have opened it already, to start the emulator early.
        let mut dut = match self.dut.take().map_or_else(|| dut::open(&self.board), Ok) {
            Ok(dut) => dut,
            Err(e) => return dut_error(&e),
        };
        if let Err(e) = dut.check().await {
            return dut_error(&e);
        }
        let what = dut.describe();
        self.dut = Some(dut);
        if self.patching() {
            if let Err(step) = self.prepare_work_tree() {
                return step;
            }
        }
        Step::ok(
            Outcome::ContextReady,
            format!("{what} ready; the unpatched tree is measured first"),
        )
    }

    /// Snapshots the owner's tree (once per run) and, with `--worktree`, makes the linked
    /// worktree the loop runs in.
    fn prepare_work_tree(&mut self) -> Result<(), Step> {
        let owner = self
            .open_repo(&self.ctx.request.repo)
            .map_err(|e| Step::error(ErrorClass::Unhandled, e.to_string()))?;
        if self.ctx.request.worktree && self.ctx.worktree.is_none() {
            let owner_base = owner
                .snapshot(&self.ctx.run_id, "owner")
                .map_err(|e| Step::error(ErrorClass::Unhandled, e.to_string()))?;
            let path = self
                .run_dir
                .path()
                .join(format!("fwfix-{}", self.ctx.run_id));
            owner
                .add_worktree(&path, &owner_base)
                .map_err(|e| Step::error(ErrorClass::Unhandled, e.to_string()))?;
            self.ctx.worktree = Some(path.clone());
            self.ctx.work_dir = path;
        }
        let repo = if self.ctx.work_dir == self.ctx.request.repo {
            owner
        } else {
            self.open_repo(&self.ctx.work_dir)
                .map_err(|e| Step::error(ErrorClass::Unhandled, e.to_string()))?
        };
        if self.ctx.base.is_none() {
            let base = repo
                .snapshot(&self.ctx.run_id, "base")
                .map_err(|e| Step::error(ErrorClass::Unhandled, e.to_string()))?;
            self.ctx.base = Some(base);
        }
        self.repo = Some(repo);
        Ok(())
    }

    pub(super) fn build_setup(&mut self) -> Step {
        let dir = self.ctx.work_dir.join(&self.build.cwd);
        if !dir.is_dir() {
            return Step::error(
                ErrorClass::BuildEnvFailure,
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

    pub(super) async fn build_run(&mut self) -> Step {
        let iter_dir = match self.measure_dir() {
            Ok(d) => d,
            Err(step) => return step,
        };
        let log_path = iter_dir.join("build.log");
        let artifact = self.ctx.work_dir.join(&self.build.artifact);
        if let Some(dut) = self.dut.as_mut() {
            // The target's own start (QEMU's) overlaps the build.
            dut.prepare(&artifact).await;
        }
        let req = BuildRequest {
            command: self.build.command.clone(),
            cwd: self.ctx.work_dir.join(&self.build.cwd),
            timeout: self.build.timeout,
            log_path: log_path.clone(),
            env: vec![("FWFIX_BOARD".into(), self.board.name.clone())],
            lock: Some(self.ctx.work_dir.join(build::BUILD_LOCK)),
        };
        let mut out = match build::run(&req, &self.cancel, self.events).await {
            Ok(out) => out,
            Err(e) => return Step::error(ErrorClass::BuildEnvFailure, e.to_string()),
        };
        let diagnostics = crate::analysis::diagnostics::parse_build_log_in(
            &out.log,
            &build_dirs(&self.ctx.work_dir, &req.cwd),
        );
        let count = |sev| diagnostics.iter().filter(|d| d.severity == sev).count();
        let (errors, warnings) = (count(Severity::Error), count(Severity::Warning));
        self.events.emit(&Event::BuildFinished {
            success: out.success(),
            duration_ms: out.duration.as_millis() as u64,
            errors,
            warnings,
            interrupted: out.end == BuildEnd::Cancelled,
        });
        // The next build of the tree may start now that this one is said to have ended.
        drop(out.turn.take());
        let first_error = diagnostics
            .iter()
            .find(|d| d.severity == Severity::Error)
            .map(|d| format!(": {}", report::describe_diagnostic(d)))
            .unwrap_or_default();
        self.ctx.build = Some(BuildRecord {
            summary: BuildSummary {
                command: self.build.command.clone(),
                success: out.success(),
                duration_ms: out.duration.as_millis() as u64,
                log: self.run_dir.relative(&log_path),
                diagnostics,
            },
            artifact: artifact.clone(),
        });
        let step =
            match out.end {
                BuildEnd::Exited(0) if artifact.is_file() => {
                    if let Some(step) = self.not_an_image(&artifact) {
                        return step.with_evidence(log_path);
                    }
                    self.symbolizer = Symbolizer::open(&artifact).ok();
                    self.note_baseline_image(&artifact);
                    if let Some(no_op) = self.no_op_image(&artifact) {
                        return no_op.with_evidence(log_path);
                    }
                    // A new image: its attempts start now.
                    self.ctx.new_image();
                    let (outcome, next) = match self.profile.lint {
                        Some(_) => (Outcome::BuiltForLint, "; lint next"),
                        None => (Outcome::Built, ""),
                    };
                    Step::ok(
                        outcome,
                        format!("built {}{next}", self.build.artifact.display()),
                    )
                }
                BuildEnd::Exited(0) => Step::error(
                    ErrorClass::ArtifactMissing,
                    format!(
                        "the build succeeded but did not produce {} (artifact in {})",
                        self.build.artifact.display(),
                        self.profile.source.display()
                    ),
                ),
                BuildEnd::Exited(code) => {
                    // The log's triage decides whether the code or the environment broke the build.
                    let triage = triage::classify(&out.log, &TriageContext::default());
                    let triaged = triage.class.error_class_in(Stage::Build);
                    let verdict = format!("; triage: {}", triage.verdict_in("build.log"));
                    match (&out.missing_tool, triaged) {
                        (Some(tool), _) => {
                            Step::error(
                                ErrorClass::BuildEnvFailure,
                                format!(
                            "the build needs `{tool}`, which is not installed (exit {code}){}",
                            if triaged.is_some() { verdict.as_str() } else { "" }
                        ),
                            )
                        }
                        (None, Some(class)) => Step::error(
                            class,
                            format!(
                                "build failed (exit {code}, {}){first_error}{verdict}",
                                report::plural(errors, "error")
                            ),
                        ),
                        (None, None) => Step::error(
                            ErrorClass::BuildFailure,
                            format!(
                                "build failed (exit {code}, {}){first_error}",
                                report::plural(errors, "error")
                            ),
                        ),
                    }
                }
                BuildEnd::Signalled(sig) => Step::error(
                    ErrorClass::BuildEnvFailure,
                    format!("the build was killed by signal {sig}"),
                ),
                BuildEnd::TimedOut => Step::error(
                    ErrorClass::Timeout,
                    format!(
                        "the build did not finish within {} s",
                        self.build.timeout.as_secs()
                    ),
                ),
                BuildEnd::Cancelled => Step::ok(Outcome::Abort, "build interrupted"),
            };
        step.with_evidence(log_path)
    }

    /// A configuration error when the artifact the build made is not an ELF image: nothing
    /// boots, symbolizes or flashes it, and building again would make the same.
    fn not_an_image(&self, artifact: &Path) -> Option<Step> {
        let what = match build::artifact::not_elf(artifact) {
            Ok(what) => what?,
            Err(e) => {
                return Some(Step::error(
                    ErrorClass::ArtifactMissing,
                    format!("cannot read {}: {e}", artifact.display()),
                ))
            }
        };
        Some(Step::error(
            ErrorClass::ConfigError,
            format!(
                "{} is {what}, not an ELF image: [build] artifact in {} must name the ELF the \
                 build links (fwfix makes the .bin or .hex a flasher needs from it)",
                artifact.display(),
                self.profile.source.display()
            ),
        ))
    }

    pub(super) async fn test_setup(&mut self) -> Step {
        let Some(record) = &self.ctx.build else {
            return Step::error(ErrorClass::ArtifactMissing, "no image has been built");
        };
        if !record.artifact.is_file() {
            return Step::error(
                ErrorClass::ArtifactMissing,
                format!("image {} is missing", record.artifact.display()),
            );
        }
        if self.symbolizer.is_none() {
            self.symbolizer = Symbolizer::open(&record.artifact).ok();
        }
        if self.dut.is_none() {
            // A resumed run opens its DUT here.
            match dut::open(&self.board) {
                Ok(d) => self.dut = Some(d),
                Err(e) => return dut_error(&e),
            }
        }
        let describe = self.dut.as_ref().map(|d| d.describe()).unwrap_or_default();
        let attempt = self.ctx.attempts.len() as u32 + 1;
        let powered = match self.power_up(attempt).await {
            Ok(powered) => powered,
            Err(step) => return step,
        };
        let ready = Step::ok(
            Outcome::DutReady,
            format!("{describe} ready for attempt {attempt}"),
        );
        match powered {
            Some((how, log)) => Step {
                reason: format!("{}: {how}", ready.reason),
                ..ready
            }
            .with_evidence(log),
            None => ready,
        }
    }

    /// Switches the board on before the run's first attempt, and power-cycles it before an
    /// attempt that hung is run again. Returns what was done and its log, if anything was.
    async fn power_up(&mut self, attempt: u32) -> Result<Option<(String, PathBuf)>, Step> {
        let Some(power) = self.dut.as_ref().and_then(|d| d.power().cloned()) else {
            return Ok(None);
        };
        let (action, log) = match &self.ctx.power.cycle_pending {
            Some(_) => {
                let console = self.attempt_file(attempt, "console", "log")?;
                (PowerAction::Cycle, dut::power::power_log_path(&console))
            }
            None if !self.ctx.power.switched_on => {
                (PowerAction::On, self.measure_dir()?.join("power-on.log"))
            }
            None => return Ok(None),
        };
        let ran = power.run(action, &log, &self.cancel).await.map_err(|e| {
            let step = dut_error(&e);
            if log.is_file() {
                step.with_evidence(log.clone())
            } else {
                step
            }
        })?;
        self.ctx.power.switched_on = true;
        if !ran {
            return Ok(None);
        }
        let done = match action {
            PowerAction::On => "board switched on".to_string(),
            PowerAction::Cycle => {
                let reason = self.ctx.power.cycle_pending.take().unwrap_or_default();
                self.ctx.power.retrying = true;
                self.ctx.power.cycles.push(PowerCycle {
                    iteration: self.ctx.ledger.iteration,
                    attempt,
                    reason,
                    log: self.run_dir.relative(&log),
                });
                format!("board power-cycled; attempt {attempt} runs again")
            }
        };
        self.events.emit(&Event::Message {
            level: Level::Info,
            text: format!("{done} ({})", self.run_dir.relative(&log)),
        });
        Ok(Some((done, log)))
    }

    /// Whether an attempt that hung gets one power cycle and a second run before its hang is
    /// trusted: the board can be power-cycled and asks for it, this attempt is not already that
    /// second run, and TEST_ENV_FAILURE's retry budget has room for it.
    fn power_retry_allowed(&self) -> bool {
        let can = self
            .dut
            .as_ref()
            .and_then(|d| d.power())
            .is_some_and(|p| p.spec().retry_on_hang && p.spec().can_cycle());
        let class = ErrorClass::TestEnvFailure;
        let used = self.ctx.ledger.retries.get(&class).copied().unwrap_or(0);
        can && !self.ctx.power.retrying && used < self.budgets.get(class)
    }

    pub(super) async fn test_run(&mut self) -> Step {
        let attempt = self.ctx.attempts.len() as u32 + 1;
        let step = self.run_attempt(attempt).await;
        if matches!(step.outcome, Outcome::Error(_)) {
            // ERROR_RECOVERY may run this attempt again, writing its logs afresh: the failed
            // try's logs stay as the trace names them.
            self.set_aside(step, attempt, "failed")
        } else {
            step
        }
    }

    /// Renames the attempt's console and flash logs that `step` names as evidence to names of
    /// their own (`console-hung.log`, `console-failed.log`, then `console-failed-2.log`; for
    /// attempt 2, `console-2-failed.log`, ...),
    /// and names those instead (in the reason too, which may quote a triaged line of one), so
    /// that running the attempt again overwrites no traced file.
    fn set_aside(&self, mut step: Step, attempt: u32, label: &str) -> Step {
        let Ok(console) = self.attempt_file(attempt, "console", "log") else {
            return step;
        };
        let logs = [dut::flash_log_path(&console), console];
        for path in step.evidence.iter_mut() {
            if !logs.contains(path) || !path.is_file() {
                continue;
            }
            let stem = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let kept = (1..)
                .map(|n| match n {
                    1 => path.with_file_name(format!("{stem}-{label}.log")),
                    n => path.with_file_name(format!("{stem}-{label}-{n}.log")),
                })
                .find(|p| !p.exists());
            let Some(kept) = kept else { continue };
            if std::fs::rename(&*path, &kept).is_ok() {
                let name = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned());
                if let (Some(old), Some(new)) = (name(path), name(&kept)) {
                    step.reason = step.reason.replace(&old, &new);
                }
                *path = kept;
            }
        }
        step
    }

    /// One try of attempt `attempt`: flash or boot, capture, and say how the run ended.
    async fn run_attempt(&mut self, attempt: u32) -> Step {
        let console = match self.attempt_file(attempt, "console", "log") {
            Ok(p) => p,
            Err(step) => return step,
        };
        let retry_allowed = self.power_retry_allowed();
        let (Some(dut), Some(record)) = (self.dut.as_mut(), &self.ctx.build) else {
            return Step::error(ErrorClass::TestEnvFailure, "no DUT or image");
        };
        let nonce = dut.next_nonce();
        let live = LiveParse::new(self.parser.stream(), nonce.as_ref());
        let spec = RunSpec {
            timeout: self.profile.test.timeout,
            detector: live.detector(),
            console_log: console.clone(),
            append: None,
            nonce,
            cancel: self.cancel.clone(),
            attempt,
            prepare_next: attempt < self.ctx.request.repeat,
        };
        let image = Image {
            elf: record.artifact.clone(),
        };
        let flash_log = dut::flash_log_path(&console);
        let capture = match dut.run(&image, spec, self.events).await {
            Ok(c) => c,
            Err(e) => {
                if !flash_log.is_file() {
                    return triaged(dut_error(&e), &console).with_evidence(console);
                }
                return triaged(dut_error(&e), &flash_log)
                    .with_evidence(console)
                    .with_evidence(flash_log);
            }
        };
        let describe = dut.describe();
        if let Some(stale) = capture
            .nonce
            .as_ref()
            .map(|n| n.stale_lines)
            .filter(|n| *n > 0)
        {
            self.events.emit(&Event::Message {
                level: Level::Info,
                text: format!(
                    "{}: ignored, left on the console by an earlier run (marked stale in {})",
                    report::plural(stale as usize, "line"),
                    self.run_dir.relative(&console)
                ),
            });
        }
        let hung = match capture.end {
            RunEnd::Timeout => Some("the board hung"),
            RunEnd::PortLost => Some("the board stopped answering (its console was lost)"),
            RunEnd::Verdict
            | RunEnd::Exited { .. }
            | RunEnd::Crashed
            | RunEnd::Stopped { .. }
            | RunEnd::RunnerDied { .. }
            | RunEnd::Cancelled => None,
        };
        if let (Some(what), true) = (hung, retry_allowed) {
            let reason = format!("{what}; power-cycling once before trusting the hang");
            self.ctx.power.cycle_pending = Some(reason.clone());
            let step = [console, flash_log]
                .into_iter()
                .filter(|log| log.is_file())
                .fold(
                    Step::error(ErrorClass::TestEnvFailure, reason),
                    Step::with_evidence,
                );
            return self.set_aside(step, attempt, "hung");
        }
        let untrusted = capture.nonce.as_ref().filter(|n| n.untrusted());
        if let (Some(nonce), false) = (untrusted, capture.end == RunEnd::Cancelled) {
            return Step::error(
                ErrorClass::TestEnvFailure,
                format!(
                    "{describe}: the image never printed this run's nonce ({}); its output \
                     cannot be trusted ({} before the end, kept in console.log as stale)",
                    nonce.value,
                    report::plural(nonce.stale_lines as usize, "console line")
                ),
            )
            .with_evidence(console);
        }
        let step = match capture.end {
            RunEnd::Cancelled => Step::ok(Outcome::Abort, "test run interrupted"),
            RunEnd::PortLost => Step::error(
                ErrorClass::TestEnvFailure,
                format!("{describe}: the console port was lost before the run finished"),
            ),
            RunEnd::RunnerDied { signal, code } => Step::error(
                ErrorClass::TestEnvFailure,
                format!(
                    "{describe} died during the run ({})",
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
            RunEnd::Stopped { quiet_ms } => Step::ok(
                Outcome::RunFinished,
                format!(
                    "the image printed a failed assertion and then nothing for {quiet_ms} ms: it \
                     stopped there"
                ),
            ),
            RunEnd::Timeout => Step::ok(
                Outcome::RunFinished,
                format!(
                    "no verdict within {} s: the image hangs",
                    self.profile.test.timeout.as_secs()
                ),
            ),
        };
        // A runner that broke names why in its own words on the console (QEMU's stderr).
        let step = triaged(step, &console);
        self.ctx.capture = Some(capture);
        self.live = Some(live);
        let step = step.with_evidence(console);
        if flash_log.is_file() {
            step.with_evidence(flash_log)
        } else {
            step
        }
    }

    /// The results of the attempt `capture` came from: its streamed parse finished, or, when
    /// there is none (a resumed run), the capture parsed.
    pub(super) fn results_of(&self, capture: &Capture, ctx: &ParseContext) -> TestResults {
        match &self.live {
            Some(live) => live.finish(capture, ctx),
            None => self.parser.parse(capture, ctx),
        }
    }

    pub(super) fn collect(&mut self) -> Step {
        let attempt = self.ctx.attempts.len() as u32 + 1;
        let console = match self.attempt_file(attempt, "console", "log") {
            Ok(p) => p,
            Err(step) => return step,
        };
        if self.ctx.capture.is_none() || !console.is_file() {
            return Step::error(
                ErrorClass::ArtifactMissing,
                format!("console log {} is missing", console.display()),
            );
        }
        Step::ok(Outcome::Collected, "console captured").with_evidence(console)
    }

    pub(super) fn analyse(&mut self) -> Step {
        let attempt = self.ctx.attempts.len() as u32 + 1;
        let Some(mut capture) = self.ctx.capture.take() else {
            return Step::error(ErrorClass::ArtifactMissing, "no capture to analyse");
        };
        // A resumed run reads the image's symbols again.
        if let (None, Some(build)) = (&self.symbolizer, &self.ctx.build) {
            self.symbolizer = Symbolizer::open(&build.artifact).ok();
        }
        // A DUT that could not read the core (a board without a probe) may still have printed a
        // fault dump on its console: symbolise that instead.
        let from_console = capture.fault.is_none();
        if from_console {
            capture.fault = match &self.live {
                Some(live) => live.fault_dump(),
                None => crash_dump::parse(&capture.uart_lines().collect::<Vec<_>>()),
            };
        }
        let sym = self.symbolizer.as_ref();
        let root = self.ctx.work_dir.clone();
        let mut crash = capture.fault.as_ref().map(|snap| {
            let mut c = fault::crash_report(snap, sym);
            relative_to(&root, &mut c.file);
            if let Some(caller) = &mut c.caller {
                relative_to(&root, &mut caller.file);
            }
            c.summary = c.summary.replace(&format!("{}/", root.display()), "");
            c
        });
        let locate = |pc: u32| {
            sym.map(|sym| {
                let mut loc = sym.locate(u64::from(pc));
                relative_to(&root, &mut loc.file);
                loc
            })
        };
        let hang_site = capture
            .stopped_at
            .as_ref()
            .and_then(|snap| snap.pc)
            .and_then(locate);
        // Stopped in an interrupt handler and unwound: the hang site is the code under it; the
        // handler is named beside it.
        let hang_handler = capture
            .stopped_at
            .as_ref()
            .and_then(|snap| snap.handlers.first())
            .and_then(|h| {
                Some(HandlerSite {
                    exception: cortex_m::exception_name(h.exception),
                    location: locate(h.pc)?,
                })
            });
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
        let mut results = self.results_of(&capture, &ctx);
        // A location the firmware printed (`__FILE__`, relative to where the compiler ran) is
        // named as the tree names it, when the image has exactly one source it can be.
        if let Some(sym) = sym {
            for case in &mut results.cases {
                let printed = case.file.clone().filter(|f| !root.join(f).is_file());
                if let Some(source) = printed.and_then(|f| sym.source_named(&f)) {
                    case.file = Some(source);
                    relative_to(&root, &mut case.file);
                }
            }
        }
        // Finished: the next attempt streams into a parse of its own.
        self.live = None;
        let timeout = self.profile.test.timeout;
        let host: Vec<&ConsoleLine> = capture
            .lines
            .iter()
            .filter(|l| l.stream == Stream::Host)
            .collect();
        if let Some(note) =
            silence::exited_without_output(capture.uart().count(), capture.end, &host)
        {
            results.notes.push(note);
        }
        // A timeout: what the console did until then says where to look.
        let silence = (capture.end == RunEnd::Timeout).then(|| {
            let core_at = hang_site
                .as_ref()
                .map(|site| report::describe_hang(site, hang_handler.as_ref()));
            silence::console_silence(
                capture.uart(),
                silence::Facts {
                    timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
                    faults_watched: capture.faults_watched,
                    core_at: core_at.as_deref(),
                    host: &host,
                },
            )
        });
        // A console still printing at the timeout was not stuck: where the core was is only a
        // sample, said in the silence statement, not a hang site.
        let hang_site = hang_site.filter(|_| !silence.as_ref().is_some_and(|s| s.still_printing));
        let hang_handler = hang_handler.filter(|_| hang_site.is_some());
        // A dump the harness did not take for a crash (a test printed one, then passed) is output.
        if from_console && !results.cases.iter().any(|c| c.status == CaseStatus::Crash) {
            crash = None;
        }
        // The case the crash or hang is attributed to carries where it happened.
        for case in &mut results.cases {
            match case.status {
                CaseStatus::Crash => {
                    if let Some(c) = &crash {
                        case.message = Some(c.summary.clone());
                    }
                }
                CaseStatus::Hang => {
                    let mut message = format!("no verdict within {} s", timeout.as_secs());
                    if let Some(silence) = &silence {
                        message = format!("{message}: {}", silence.headline);
                    }
                    if let Some(loc) = &hang_site {
                        message = format!(
                            "{message}; stuck in {}",
                            report::describe_hang(loc, hang_handler.as_ref())
                        );
                    }
                    if silence.is_some() || hang_site.is_some() {
                        case.message = Some(message);
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
        let end = AttemptSummary::end_text(&capture.end);
        self.events.emit(&Event::AttemptFinished {
            attempt,
            verdict: results.verdict,
            passed,
            failed,
            duration_ms: capture.duration_ms,
            end: end.clone(),
        });
        let results_path = match self.attempt_file(attempt, "results", "json") {
            Ok(p) => p,
            Err(step) => return step,
        };
        let written = serde_json::to_vec_pretty(&results)
            .map_err(std::io::Error::other)
            .and_then(|bytes| rundir::write_atomic_as(&results_path, &bytes, self.durability()));
        if let Err(e) = written {
            return Step::error(
                ErrorClass::ArtifactMissing,
                format!("cannot write {}: {e}", results_path.display()),
            );
        }
        let console = self
            .attempt_file(attempt, "console", "log")
            .unwrap_or_default();
        let verdict = results.verdict;
        self.ctx.attempts.push(AttemptRecord {
            summary: AttemptSummary {
                attempt,
                verdict,
                end,
                exit_code: capture.exit_code,
                duration_ms: capture.duration_ms,
                console_log: self.run_dir.relative(&console),
                passed,
                failed,
                nonce: capture.nonce.clone(),
                crash: None,
            },
            results,
            crash,
            hang_site,
            hang_handler,
            console_silence: silence.map(|s| s.statement),
        });
        self.ctx.ledger.verdict_reached();
        // The next attempt (a repeat, the next iteration) gets its own power-cycle retry.
        self.ctx.power.retrying = false;
        Step::ok(
            Outcome::Decided,
            format!(
                "attempt {attempt}: {} ({passed} passed, {failed} failed)",
                report::verdict_name(verdict)
            ),
        )
        .with_evidence(results_path)
    }

    pub(super) fn converge(&mut self) -> Step {
        if !self.patching() {
            let verdicts: Vec<AttemptVerdict> = self
                .ctx
                .attempts
                .iter()
                .map(|a| attempt_verdict(a.results.verdict))
                .collect();
            let d = convergence::test_mode(&verdicts, self.ctx.request.repeat);
            return Step::ok(d.outcome, d.reason);
        }
        let Some(last) = self.ctx.attempts.last() else {
            return Step::ok(Outcome::GiveUp, "no test results to judge");
        };
        let results = passing(&last.results);
        let baseline = !self.ctx.baseline_done;
        if baseline {
            let named = self.profile.goal.fail_to_pass.clone();
            let targets = match &self.ctx.targets {
                Some(t) if t.build_was_broken => Targets::from_baseline(&results, &named),
                Some(t) => t.clone(),
                None => Targets::from_baseline(&results, &named),
            };
            self.ctx.targets = Some(targets);
        }
        let Some(targets) = &self.ctx.targets else {
            return Step::ok(Outcome::GiveUp, "no targets");
        };
        let judgement = targets.judge(&results);
        let candidates_left = self.candidates_left();
        let d = self.ctx.ledger.converge(
            baseline,
            judgement.clone(),
            &self.ctx.limits,
            candidates_left,
        );
        if baseline && d.verdict.is_some() {
            self.ctx.baseline_done = true;
        }
        if let (false, Some(verdict)) = (baseline, d.verdict) {
            self.close_iteration(verdict, &d.decision.reason, None, Some(judgement));
        }
        let reason = self.with_stop_reason(d.decision.outcome, d.decision.reason);
        Step::ok(d.decision.outcome, reason)
    }

    /// A run that ends because its strategy has nothing more says why, when the strategy can
    /// tell (a spent token budget).
    fn with_stop_reason(&self, outcome: Outcome, reason: String) -> String {
        match (outcome, self.strategy.as_ref().and_then(|s| s.stopped())) {
            (Outcome::GiveUp | Outcome::Unrecoverable, Some(why)) if !reason.contains(&why) => {
                format!("{reason}: {why}")
            }
            _ => reason,
        }
    }

    pub(super) fn recover(&mut self) -> Step {
        let failure = self.ctx.ledger.failure.clone();
        let patching = self.patching();
        // A baseline that does not build makes the build itself the thing to fix.
        if let Some(f) = &failure {
            if patching && !self.ctx.baseline_done && f.class == ErrorClass::BuildFailure {
                self.ctx.baseline_done = true;
                self.ctx.targets = Some(Targets::broken_build(&self.profile.goal.fail_to_pass));
            }
        }
        let candidates_left = self.candidates_left();
        let d = self
            .ctx
            .ledger
            .recover(&self.budgets, patching, candidates_left);
        if let Some(f) = failure {
            let verdict = match f.class {
                ErrorClass::PatchApplyFailure => Some(IterationVerdict::DidNotApply),
                ErrorClass::BuildFailure => Some(IterationVerdict::BrokeBuild),
                ErrorClass::PolicyViolation => Some(IterationVerdict::PolicyDenied),
                ErrorClass::LintFailure => Some(IterationVerdict::NewFindings),
                // With a candidate in hand, only its no-op image ends in NO_CANDIDATE.
                ErrorClass::NoCandidate => Some(IterationVerdict::NoProgress),
                _ => None,
            };
            if let (true, Some(verdict)) = (self.ctx.candidate.is_some(), verdict) {
                self.close_iteration(verdict, &f.message, Some(f.class), None);
            } else if matches!(f.class, ErrorClass::ModelFailure | ErrorClass::NoCandidate)
                && f.state == State::PatchGeneration
            {
                // Nothing usable came back (an answer without a diff, an agent that failed):
                // the next analysis says so, so a model learns why its answer was not taken.
                self.ctx.history.push(IterationRecord {
                    iteration: self.ctx.ledger.iteration,
                    origin: self
                        .strategy
                        .as_ref()
                        .map_or("strategy", |s| s.name())
                        .into(),
                    patch: String::new(),
                    verdict: IterationVerdict::NoProgress,
                    reason: f.message.clone(),
                    error_class: Some(f.class),
                    judgement: None,
                });
            }
        }
        let reason = self.with_stop_reason(d.outcome, d.reason);
        Step::ok(d.outcome, reason)
    }

    /// Records how the current iteration ended and forgets its candidate.
    pub(super) fn close_iteration(
        &mut self,
        verdict: IterationVerdict,
        reason: &str,
        error_class: Option<ErrorClass>,
        judgement: Option<convergence::Judgement>,
    ) {
        let Some((origin, patch)) = self.ctx.candidate.clone() else {
            return;
        };
        if verdict != IterationVerdict::Fixed {
            self.ctx.candidate = None;
        }
        self.ctx.history.push(IterationRecord {
            iteration: self.ctx.ledger.iteration,
            origin,
            patch,
            verdict,
            reason: reason.to_string(),
            error_class,
            judgement,
        });
    }

    /// `iter-NNN/` for the current iteration.
    pub(super) fn iteration_dir(&self) -> Result<PathBuf, Step> {
        self.run_dir
            .iteration(self.ctx.ledger.iteration)
            .map_err(|e| Step::error(ErrorClass::ArtifactMissing, format!("run directory: {e}")))
    }

    /// Where the current image's build and test files go: the iteration's directory, or, while
    /// a run that was started over measures the unpatched tree again, a directory of its own
    /// inside it (`iter-NNN/remeasure-K/`), so the files the trace already names stay as they
    /// were recorded.
    pub(super) fn measure_dir(&self) -> Result<PathBuf, Step> {
        let dir = self.iteration_dir()?;
        if self.ctx.baseline_done || self.ctx.restarts == 0 {
            return Ok(dir);
        }
        let dir = dir.join(format!("remeasure-{}", self.ctx.restarts));
        std::fs::create_dir_all(&dir).map_err(|e| {
            Step::error(
                ErrorClass::ArtifactMissing,
                format!("cannot create {}: {e}", dir.display()),
            )
        })?;
        Ok(dir)
    }

    /// `console.log` for attempt 1, `console-2.log` for attempt 2, ...
    fn attempt_file(&self, attempt: u32, stem: &str, ext: &str) -> Result<PathBuf, Step> {
        let dir = self.measure_dir()?;
        Ok(if attempt <= 1 {
            dir.join(format!("{stem}.{ext}"))
        } else {
            dir.join(format!("{stem}-{attempt}.{ext}"))
        })
    }
}

/// Each case as passed or not; IGNORE counts as passing (it neither fixes nor breaks anything).
fn passing(results: &TestResults) -> Vec<(String, bool)> {
    results
        .cases
        .iter()
        .map(|c| {
            (
                c.name.clone(),
                matches!(c.status, CaseStatus::Pass | CaseStatus::Ignore),
            )
        })
        .collect()
}

fn attempt_verdict(v: Verdict) -> AttemptVerdict {
    match v {
        Verdict::Pass => AttemptVerdict::Pass,
        Verdict::Fail | Verdict::Flaky => AttemptVerdict::Fail,
        Verdict::Inconclusive => AttemptVerdict::Inconclusive,
        Verdict::EnvError => AttemptVerdict::EnvError,
    }
}

/// Where a build of the tree at `root` that ran in `cwd` ran, as its log's paths are resolved:
/// the directories as the file system names them, since make prints those in `Entering
/// directory` whatever symlink led to them.
pub(super) fn build_dirs(root: &Path, cwd: &Path) -> BuildDirs {
    let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    BuildDirs {
        root: real(root),
        cwd: real(cwd),
    }
}

/// Makes a source path from the ELF's debug info relative to the work tree, as people read it.
pub(super) fn relative_to(root: &Path, file: &mut Option<String>) {
    if let Some(f) = file {
        if let Ok(rel) = Path::new(f.as_str()).strip_prefix(root) {
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
    Step::error(class, e.to_string())
}

/// A failed flash or test run whose log is at hand (flash.log, console.log): the log's triage
/// names the class when it shows an error of its own — a flasher's error text is a
/// FLASH_FAILURE even when the backend saw only a dead process, QEMU's own complaint an
/// INFRA_ERROR — and its deciding line goes into the reason. A step that is not an error, a log
/// that cannot be read or one that shows only test results (a crash, a hang) leaves the step
/// as it is.
fn triaged(step: Step, log: &Path) -> Step {
    if !matches!(step.outcome, Outcome::Error(_)) {
        return step;
    }
    let Ok(triage) = triage::classify_file(log, &TriageContext::default()) else {
        return step;
    };
    let Some(class) = triage.class.error_class_in(Stage::Test) else {
        return step;
    };
    let name = log
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Step {
        outcome: Outcome::Error(class),
        reason: format!("{}; triage: {}", step.reason, triage.verdict_in(&name)),
        ..step
    }
}

fn count(results: &TestResults, status: CaseStatus) -> usize {
    results.cases.iter().filter(|c| c.status == status).count()
}
