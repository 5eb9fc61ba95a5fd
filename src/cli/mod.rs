//! The command line: clap definitions, one file per subcommand, and the exit-code table.
//!
//! Commands turn their arguments into the library's options, call one library function, and hand
//! the result to `ui` to render. No run logic lives here.

mod audit;
mod bisect;
mod boards;
mod completions;
mod doctor;
mod exit;
mod graph;
mod matrix;
mod mcp;
mod report;
mod resume;
mod run;
mod runs;
mod show;
mod test;
mod triage;
mod validate;

pub use exit::Exit;

use crate::process::guardian;
use crate::ui::{ColorChoice, UiOptions};
use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// fwfix: build firmware, run it on QEMU or a board, capture, parse, report — and fix it.
#[derive(Debug, Parser)]
#[command(name = "fwfix", version, about, max_term_width = 100)]
struct Cli {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

/// Flags every command takes.
#[derive(Debug, Clone, clap::Args)]
pub struct GlobalArgs {
    /// Write one JSON event per line to stdout instead of progress and a summary.
    #[arg(long, global = true)]
    pub json: bool,
    /// No progress display; only warnings, errors and the final summary.
    #[arg(long, short, global = true)]
    pub quiet: bool,
    /// Show the target's console lines as they arrive.
    #[arg(long, short, global = true)]
    pub verbose: bool,
    /// When to colour output (NO_COLOR is respected with `auto`).
    #[arg(long, value_enum, default_value = "auto", global = true)]
    pub color: ColorChoice,
}

impl GlobalArgs {
    pub fn ui_options(&self) -> UiOptions {
        UiOptions {
            quiet: self.quiet,
            verbose: self.verbose,
            color: self.color,
        }
    }
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Build the firmware and run its tests once on a board (no patching).
    Test(test::Args),
    /// The fix loop: reproduce the failure, try candidate patches, build, test, until fixed.
    Run(run::Args),
    /// Carry on with a run that was killed, aborted, or ended in FAILURE.
    Resume(resume::Args),
    /// Find the first commit between a good and a bad one whose tests fail.
    Bisect(bisect::Args),
    /// Test every board × profile pair of a manifest (nightly lab CI): --jobs in parallel,
    /// sim-first, infrastructure retries, --shard K/N, one junit.xml.
    Matrix(matrix::Args),
    /// The boards of this host: list them with their health and lease, check their health, set
    /// it (maintenance), or list the debug probes connected.
    Boards(boards::Args),
    /// Check board and profile files without running anything.
    Validate(validate::Args),
    /// Check the host tools fwfix needs and say how to install what is missing.
    Doctor(doctor::Args),
    /// Print the state machine as a Mermaid (or Graphviz) diagram.
    Graph(graph::Args),
    /// Replay a run's trace through the state machine and check its evidence files.
    Audit(audit::Args),
    /// List the runs of a repository, newest first; `runs prune` removes finished ones.
    Runs(runs::Args),
    /// Show a run's timeline: every transition with its time, reason and evidence.
    Show(show::Args),
    /// Render report.md, junit.xml and report.html again from a run's report.json.
    Report(report::Args),
    /// Serve fwfix's tools to a coding agent over the Model Context Protocol on stdin/stdout
    /// (test, run, bisect, triage, runs, show, audit, report, boards, doctor, validate).
    Mcp(mcp::Args),
    /// Print a shell completion script: bash, zsh, fish or powershell.
    Completions(completions::Args),
    /// Print fwfix's man page (roff).
    Man(completions::ManArgs),
    /// Classify logs: build error, link error, missing tool, flash error, infrastructure, crash,
    /// assertion, test failure, hang or pass, with the lines that decided it.
    Triage(triage::Args),
}

/// Parses the command line, runs the command, and maps the outcome to an exit code.
pub fn main() -> ExitCode {
    if std::env::args_os().nth(1).as_deref() == Some(std::ffi::OsStr::new(guardian::ARG)) {
        guardian::serve_stdin();
        return Exit::Success.into();
    }
    guardian::enable();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // clap prints help and version to stdout and usage errors to stderr.
            let _ = e.print();
            return if e.use_stderr() {
                Exit::Usage.into()
            } else {
                Exit::Success.into()
            };
        }
    };
    if matches!(
        cli.command,
        Command::Test(_)
            | Command::Run(_)
            | Command::Resume(_)
            | Command::Bisect(_)
            | Command::Matrix(_)
    ) {
        guardian::prestart();
    }
    let exit = match cli.command {
        Command::Test(args) => test::run(args, &cli.global),
        Command::Run(args) => run::run(args, &cli.global),
        Command::Resume(args) => resume::run(args, &cli.global),
        Command::Bisect(args) => bisect::run(args, &cli.global),
        Command::Matrix(args) => matrix::run(args, &cli.global),
        Command::Boards(args) => boards::run(args, &cli.global),
        Command::Validate(args) => validate::run(args, &cli.global),
        Command::Doctor(args) => doctor::run(args, &cli.global),
        Command::Graph(args) => graph::run(args),
        Command::Audit(args) => audit::run(args, &cli.global),
        Command::Runs(args) => runs::run(args, &cli.global),
        Command::Show(args) => show::run(args, &cli.global),
        Command::Report(args) => report::run(args, &cli.global),
        Command::Triage(args) => triage::run(args, &cli.global),
        Command::Mcp(args) => mcp::run(args),
        Command::Completions(args) => completions::run(args),
        Command::Man(args) => completions::man(args, &cli.global),
    };
    exit.into()
}

/// Where board leases and health are kept, shared by every fwfix on the host.
#[derive(Debug, Clone, clap::Args)]
pub struct StateArgs {
    /// The host-wide state directory for board leases and health. Default:
    /// $XDG_STATE_HOME/fwfix, else ~/.local/state/fwfix. A lab shares one between its users
    /// (a group-writable directory).
    #[arg(long, env = "FWFIX_STATE_DIR", value_name = "DIR")]
    state_dir: Option<std::path::PathBuf>,
}

impl StateArgs {
    /// The directory given, or the XDG default.
    pub fn dir(&self) -> Result<std::path::PathBuf, String> {
        match &self.state_dir {
            Some(dir) => Ok(dir.clone()),
            None => crate::config::host::state_dir(),
        }
    }
}

/// How a command that uses a board shares it: the flags `test`, `run`, `resume` and `bisect` take.
#[derive(Debug, Clone, clap::Args)]
pub struct BoardArgs {
    /// How long to wait for a hardware board another run holds, e.g. `30s`, `5m`, `2h`; `0` does
    /// not wait. Then the command exits 4 naming the holder.
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_wait)]
    lock_timeout: std::time::Duration,
    /// Run on a board even though its health is bad or maintenance (a warning and a note in the
    /// report say so).
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    state: StateArgs,
}

impl BoardArgs {
    /// The library's view of these flags; a usage error when there is no state directory.
    pub fn access(&self, global: &GlobalArgs) -> Result<crate::orchestrator::BoardAccess, Exit> {
        let state_dir = self
            .state
            .dir()
            .map_err(|e| fail_early(global, Exit::Usage, &e))?;
        Ok(crate::orchestrator::BoardAccess {
            state_dir,
            lock_timeout: self.lock_timeout,
            gate: if self.force {
                crate::orchestrator::HealthGate::Force
            } else {
                crate::orchestrator::HealthGate::Enforce
            },
        })
    }
}

/// Parses a wait such as `--lock-timeout`: a duration as [`parse_duration`] takes it, or `0`.
pub(crate) fn parse_wait(text: &str) -> Result<std::time::Duration, String> {
    match text.trim() {
        "0" | "0s" | "0m" | "0h" => Ok(std::time::Duration::ZERO),
        _ => parse_duration(text),
    }
}

/// The runtime for commands that do I/O, with Ctrl+C and SIGTERM wired to `cancel`. It runs on
/// the command's own thread: a run is one state machine waiting on its children, and worker
/// threads only added their starts and cross-thread wake-ups (about 2.5 ms of CPU a one-test
/// run); `--jobs N` gives each job a thread and runtime of its own, and blocking work goes to
/// tokio's blocking pool as before.
pub(crate) fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

/// Cancels `cancel` on the first Ctrl+C or SIGTERM. Later signals are ignored on purpose: the run
/// is already stopping its children and writing its report, and must not be cut off half-way.
fn cancel_on_signals(cancel: tokio_util::sync::CancellationToken) {
    let signalled = signal_received();
    tokio::spawn(async move {
        signalled.await;
        cancel.cancel();
    });
}

/// Registers for Ctrl+C and SIGTERM at once, and returns a future that ends on the first of
/// them. Registering before the future is polled matters: on the command's own thread a spawned
/// task first runs when the run first waits, and a signal before that would kill fwfix outright,
/// mid-step, with no report and its worktree left behind.
pub(crate) fn signal_received() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{signal, SignalKind};
    let interrupt = signal(SignalKind::interrupt());
    let terminate = signal(SignalKind::terminate());
    async move {
        match (interrupt, terminate) {
            (Ok(mut interrupt), Ok(mut terminate)) => {
                tokio::select! {
                    _ = interrupt.recv() => {}
                    _ = terminate.recv() => {}
                }
            }
            (Ok(mut only), Err(_)) | (Err(_), Ok(mut only)) => {
                only.recv().await;
            }
            // Nothing to wait for: the run goes on as if no signal ever came.
            (Err(_), Err(_)) => std::future::pending().await,
        }
    }
}

/// A future borrowing the event sink for its lifetime.
pub(crate) type SinkFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + 'a>>;

/// What a command that runs the engine returns: the future of its finished run.
pub(crate) type RunFuture<'a> =
    SinkFuture<'a, Result<crate::orchestrator::Finished, crate::orchestrator::OrchestratorError>>;

/// Runs an engine command: a runtime, the event sink, Ctrl+C and SIGTERM wired to cancellation,
/// then the final event or summary and the exit code.
pub(crate) fn execute(
    global: &GlobalArgs,
    body: impl for<'a> FnOnce(
        &'a dyn crate::events::EventSink,
        tokio_util::sync::CancellationToken,
    ) -> RunFuture<'a>,
) -> Exit {
    match drive(global, body) {
        Ok((result, sink, engine)) => {
            let exit = finish(result, sink, global);
            engine.close();
            exit
        }
        Err(exit) => exit,
    }
}

/// [`execute`] for several pairs tested at once: each pair's end is an event of its own, then
/// one final event or summary for them all.
pub(crate) fn execute_many(
    global: &GlobalArgs,
    body: impl for<'a> FnOnce(
        &'a dyn crate::events::EventSink,
        tokio_util::sync::CancellationToken,
    ) -> SinkFuture<
        'a,
        Result<Vec<crate::orchestrator::PairOutcome>, crate::orchestrator::OrchestratorError>,
    >,
) -> Exit {
    let (result, sink, engine) = match drive(global, body) {
        Ok(done) => done,
        Err(exit) => return exit,
    };
    let exit = match result {
        Ok(pairs) => finish_pairs(&pairs, sink, global, None),
        Err(e) => {
            drop(sink);
            fail_early(global, Exit::of_error(&e), &e.to_string())
        }
    };
    engine.close();
    exit
}

/// The status word of several pairs' exit code, for the final event and a matrix report.
pub(crate) fn pairs_status(exit: Exit) -> &'static str {
    match exit {
        Exit::Success => "PASSED",
        Exit::Failed => "FAILED",
        Exit::Aborted => "ABORTED",
        Exit::Usage | Exit::Infrastructure => "ERROR",
    }
}

/// Ends a command that tested several pairs: a `finished` event per pair, one for them all
/// (naming `dir`, a matrix's directory, when there is one), the summary, the exit code.
pub(crate) fn finish_pairs(
    pairs: &[crate::orchestrator::PairOutcome],
    sink: Box<dyn crate::events::EventSink>,
    global: &GlobalArgs,
    dir: Option<&std::path::Path>,
) -> Exit {
    use crate::events::Event;
    use crate::orchestrator::PairEnd;
    for pair in pairs {
        let (exit, run_dir, error_class, message) = match &pair.end {
            PairEnd::Ran(Ok(f)) => (
                Exit::of_finished(f),
                Some(f.run_dir.display().to_string()),
                f.error_class,
                f.report.message.clone(),
            ),
            PairEnd::Ran(Err(e)) => (Exit::of_error(e), None, None, e.to_string()),
            PairEnd::Skipped { reason } => (Exit::Success, None, None, reason.clone()),
            PairEnd::NotStarted => (
                Exit::Aborted,
                None,
                None,
                "not started: the run was interrupted".to_string(),
            ),
        };
        sink.emit_job(
            &pair.job,
            &Event::Finished {
                status: pair.status().to_string(),
                exit_code: exit.code(),
                run_dir,
                error_class,
                message: Some(message),
            },
        );
    }
    let exit = Exit::of_pairs(pairs);
    let count = |status: &str| pairs.iter().filter(|p| p.status() == status).count();
    sink.emit(&Event::Finished {
        status: pairs_status(exit).to_string(),
        exit_code: exit.code(),
        run_dir: dir.map(|d| d.display().to_string()),
        error_class: None,
        message: Some(format!(
            "{} tested: {} passed, {} failed, {} with errors, {} skipped, {} not run",
            crate::report::plural(pairs.len(), "pair"),
            count("PASSED"),
            count("FAILED"),
            count("ERROR"),
            count("SKIPPED"),
            count("NOT RUN")
        )),
    });
    drop(sink);
    if !global.json {
        let rows: Vec<crate::ui::PairRow<'_>> = pairs
            .iter()
            .map(|p| crate::ui::PairRow {
                job: &p.job,
                status: p.status(),
                report: p.finished().map(|f| (&f.report, f.run_dir.as_path())),
                error: match &p.end {
                    PairEnd::Ran(Err(e)) => Some(e.to_string()),
                    PairEnd::Skipped { reason } => Some(reason.clone()),
                    PairEnd::Ran(Ok(_)) | PairEnd::NotStarted => None,
                },
            })
            .collect();
        crate::ui::print_pairs_summary(&rows, global.ui_options().color);
        if let Some(dir) = dir {
            print_out(&format!("matrix: {}\n", dir.display()));
        }
    }
    exit
}

/// What an engine command's future returned, its sink, and its runtime.
type Driven<T> = (T, Box<dyn crate::events::EventSink>, Engine);

/// The runtime of an engine command, kept until the command's summary is out: a child killed at
/// the end of the run may still be being reaped ([`crate::process::reap_later`]).
pub(crate) struct Engine(tokio::runtime::Runtime);

impl Engine {
    /// Waits for the children still being reaped, then stops the runtime.
    pub(crate) fn close(self) {
        self.0.block_on(crate::process::settle());
        // A question left unanswered on the terminal must not keep fwfix from exiting.
        self.0
            .shutdown_timeout(std::time::Duration::from_millis(200));
    }
}

pub(crate) fn drive<T>(
    global: &GlobalArgs,
    body: impl for<'a> FnOnce(
        &'a dyn crate::events::EventSink,
        tokio_util::sync::CancellationToken,
    ) -> SinkFuture<'a, T>,
) -> Result<Driven<T>, Exit> {
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => return Err(fail_early(global, Exit::Infrastructure, &e.to_string())),
    };
    let sink = sink(global);
    let cancel = tokio_util::sync::CancellationToken::new();
    let result = rt.block_on(async {
        cancel_on_signals(cancel.clone());
        body(sink.as_ref(), cancel).await
    });
    Ok((result, sink, Engine(rt)))
}

/// The event sink for `global`: JSON lines, or the terminal display.
fn sink(global: &GlobalArgs) -> Box<dyn crate::events::EventSink> {
    if global.json {
        Box::new(crate::ui::JsonSink::stdout())
    } else {
        Box::new(crate::ui::TerminalSink::new(global.ui_options()))
    }
}

/// Ends a command that ran (or failed to start): the final event or summary, and the exit code.
fn finish(
    result: Result<crate::orchestrator::Finished, crate::orchestrator::OrchestratorError>,
    sink: Box<dyn crate::events::EventSink>,
    global: &GlobalArgs,
) -> Exit {
    use crate::events::Event;
    match result {
        Ok(finished) => {
            let exit = Exit::of_finished(&finished);
            sink.emit(&Event::Finished {
                status: finished.report.status.name().to_string(),
                exit_code: exit.code(),
                run_dir: Some(finished.run_dir.display().to_string()),
                error_class: finished.error_class,
                message: Some(finished.report.message.clone()),
            });
            // Dropping the terminal sink clears its progress line before the summary.
            drop(sink);
            if !global.json {
                crate::ui::print_summary(
                    &finished.report,
                    &finished.run_dir,
                    global.ui_options().color,
                );
            }
            exit
        }
        Err(e) => {
            let exit = Exit::of_error(&e);
            drop(sink);
            fail_early(global, exit, &e.to_string())
        }
    }
}

/// Reports an error that stopped a command before it produced a run.
pub(crate) fn fail_early(global: &GlobalArgs, exit: Exit, message: &str) -> Exit {
    use std::io::Write;
    if global.json {
        let line = serde_json::json!({
            "event": "finished", "status": "ERROR", "exit_code": exit.code(),
            "run_dir": null, "error_class": null, "message": message,
        });
        let _ = writeln!(std::io::stdout().lock(), "{line}");
    } else {
        // An error may quote what a file or a firmware said: shown, not acted on.
        let _ = writeln!(
            std::io::stderr().lock(),
            "error: {}",
            crate::report::visible(message)
        );
    }
    exit
}

/// Writes a command's output to stdout. A closed stdout (piped into `head`) is not an error worth
/// reporting: the command's exit status still says how it went.
pub(crate) fn print_out(text: &str) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let _ = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush());
}

/// Parses `90s`, `30m`, `2h`, `7d`, or plain seconds.
pub(crate) fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let text = text.trim();
    let (number, unit) = text
        .find(|c: char| !c.is_ascii_digit())
        .map(|i| text.split_at(i))
        .unwrap_or((text, "s"));
    let n: u64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration like 90s, 30m or 2h"))?;
    let secs = match unit {
        "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        "d" => n * 86_400,
        _ => return Err(format!("`{text}`: unit must be s, m, h or d")),
    };
    if secs == 0 {
        return Err("the duration must be more than 0".to_string());
    }
    Ok(std::time::Duration::from_secs(secs))
}

/// Parses a state name such as `BUILD_RUN`.
pub(crate) fn parse_state(text: &str) -> Result<crate::machine::State, String> {
    crate::machine::State::ALL
        .into_iter()
        .find(|s| s.name().eq_ignore_ascii_case(text))
        .ok_or_else(|| format!("`{text}` is not a state"))
}

/// Parses `--approve never|risky|always`.
pub(crate) fn parse_approve(text: &str) -> Result<crate::policy::ApproveMode, String> {
    text.parse()
        .map_err(|e: crate::policy::UnknownApproveMode| e.to_string())
}

/// The approval mode: as given, or risky when a person is at a terminal and never otherwise.
pub(crate) fn approve_mode(
    given: Option<crate::policy::ApproveMode>,
) -> crate::policy::ApproveMode {
    use std::io::IsTerminal;
    given.unwrap_or_else(|| {
        crate::policy::ApproveMode::default_for(
            std::io::stdin().is_terminal() && std::io::stderr().is_terminal(),
        )
    })
}

/// Who asks for approval in `run` and `resume`: the person at this terminal, in the colours the
/// global options allow.
pub(crate) fn console_approver(global: &GlobalArgs) -> std::sync::Arc<dyn crate::policy::Approver> {
    std::sync::Arc::new(crate::ui::Console::new(global.color.for_stderr()))
}

/// Parses the test hook `STATE[@ITERATION]`, e.g. `BUILD_RUN@1`.
pub(crate) fn parse_kill_at(text: &str) -> Result<crate::orchestrator::KillAt, String> {
    let (state, iteration) = match text.split_once('@') {
        Some((s, i)) => (
            s,
            Some(
                i.parse()
                    .map_err(|_| format!("`{i}` is not an iteration number"))?,
            ),
        ),
        None => (text, None),
    };
    Ok(crate::orchestrator::KillAt {
        state: parse_state(state)?,
        iteration,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_states_parse() {
        assert_eq!(parse_duration("90s").unwrap().as_secs(), 90);
        assert_eq!(parse_duration("30m").unwrap().as_secs(), 1800);
        assert_eq!(parse_duration("2h").unwrap().as_secs(), 7200);
        assert_eq!(parse_duration("45").unwrap().as_secs(), 45);
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("soon").is_err());
        assert_eq!(parse_duration("7d").unwrap().as_secs(), 7 * 86_400);
        assert!(parse_duration("5w").is_err());
        assert_eq!(
            parse_state("build_run").unwrap(),
            crate::machine::State::BuildRun
        );
        assert!(parse_state("NOPE").is_err());
    }

    #[test]
    fn a_wait_may_be_zero() {
        assert_eq!(parse_wait("0").unwrap(), std::time::Duration::ZERO);
        assert_eq!(parse_wait("0s").unwrap(), std::time::Duration::ZERO);
        assert_eq!(parse_wait("30s").unwrap().as_secs(), 30);
        assert_eq!(parse_wait("5m").unwrap().as_secs(), 300);
        assert!(parse_wait("-1").is_err());
        assert!(parse_wait("soon").is_err());
    }
}
