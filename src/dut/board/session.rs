//! One board attempt, from opening the console to a halted target and a closed port. Outline:
//!
//! 1. Open the console — first, so nothing the image prints is lost — then console.log and
//!    flash.log, and start the console's reader task.
//! 2. Reset and flash, capturing the console all along. gdb method: the reset (modem-line pulse,
//!    `[flash] reset_command`) comes first, then gdb connects, runs `[gdb] init`, loads, starts
//!    the image from its vector table or by `[gdb] reset`, and stays attached. Command method: `.bin`/`.hex` made if
//!    asked for, the flash command, then the reset. A flasher that fails or overruns
//!    `flash_timeout` is a [`DutError::Flash`] with its output.
//! 3. With a nonce (`[serial] nonce`), write `fwfix-nonce=<hex>` to the console once the image
//!    runs. Capture exactly as the QEMU backend does: every line logged (stale ones marked),
//!    emitted, kept (bounded) and, when live, fed to the end detector, until the verdict, the
//!    image's exit (gdb reports it), a port lost for good, the timeout, or cancellation.
//! 4. Finish that ending: a short grace for the exit code after a verdict; at the timeout, gdb
//!    interrupts the core and reads its registers, the SCB fault status and the stack, so a core
//!    spinning in a fault handler is a crash and anything else a hang located by its PC.
//! 5. Leave the target halted (gdb interrupts it and disconnects), stop every process, close the
//!    port and the logs, build the [`Capture`].
//!
//! It owns the timing policy; gdb's text is `gdb`'s, the console's opening `serial`'s, the
//! flasher's preparation `flash`'s.

use super::gdb::{self, Said, Stop};
use super::serial::{self, Console, ModemLines, PortEvent, PortSpec, Writer};
use super::{flash, image};
use crate::capture::log::ConsoleLog;
use crate::capture::nonce::{Nonce, NonceGate};
use crate::capture::pump::pump;
use crate::capture::settle::{self, Settle};
use crate::capture::store::{LineStore, StoreLimits};
use crate::capture::{Capture, ConsoleLine, EndDetector, FaultSnapshot, LineRead, RunEnd, Stream};
use crate::config::{FlashSpec, GdbSpec, GdbStart, HardwareSpec, SerialReset};
use crate::dut::session::{admit_line, capture_of, create_log, log_written};
use crate::dut::{flash_log_path, DutError, Image, RunSpec};
use crate::events::{Event, EventSink, Level};
use crate::process::{spawn_group, AbortOnDrop, GroupGuard};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;
use tokio::process::{Child, Command};
use tokio::sync::mpsc;
use tokio::time::{sleep, sleep_until, Instant};
use tokio_util::sync::CancellationToken;

/// After the verdict, how long gdb gets to report the image's exit.
const EXIT_GRACE: Duration = Duration::from_millis(300);
/// After the console closed before any verdict, how long gdb gets to report an exit: an emulator
/// closes its console when the image exits, and on a busy host gdb's report can lag.
const LOST_PORT_GRACE: Duration = Duration::from_secs(2);
/// At the timeout, how long gdb gets to stop the core and print what it read.
const STOP_READ_BUDGET: Duration = Duration::from_secs(5);
/// At the end, how long gdb gets to halt the core and disconnect before it is killed.
const DETACH_BUDGET: Duration = Duration::from_secs(3);
/// SIGTERM to SIGKILL, for flash and reset commands that overran.
const TERM_GRACE: Duration = Duration::from_millis(500);
/// How long the pipes and the console may take to deliver what is left at the end.
const DRAIN_BUDGET: Duration = Duration::from_millis(500);
/// After the image exited, how long the console must stay quiet before the attempt ends.
const CONSOLE_SETTLE: Duration = Duration::from_millis(30);
/// Flasher output lines kept for the error message (all of it is in flash.log).
const TOOL_LINES_KEPT: usize = 200;

/// What the backend knows about the board.
pub(super) struct Target<'a> {
    pub describe: &'a str,
    pub spec: &'a HardwareSpec,
    pub port: PortSpec,
    pub reconnect: u32,
}

/// Runs one attempt.
pub(super) async fn run(
    target: Target<'_>,
    image: &Image,
    run: RunSpec,
    events: &dyn EventSink,
) -> Result<Capture, DutError> {
    let elf = std::path::absolute(&image.elf).unwrap_or_else(|_| image.elf.clone());
    let flash_path = flash_log_path(&run.console_log);

    // 1. The console first. Its logs only once it is open: a retry whose console cannot be opened
    // (a port still gone, still busy) must not empty the logs an earlier try of this attempt left
    // as evidence of what the board printed before it went away.
    let shown = serial::describe(&target.port.port);
    let console = serial::open(&target.port, true).await?;
    let log = create_log(&run.console_log).await?;
    let flash_log = create_log(&flash_path).await?;
    let launch = Instant::now();
    let Console {
        reader,
        writer,
        control,
    } = console;
    let (line_tx, console_rx) = mpsc::channel(256);
    let (port_tx, port_rx) = mpsc::channel(8);
    let reader = serial::spawn_reader(
        reader,
        target.port.clone(),
        target.reconnect,
        launch,
        line_tx,
        port_tx,
    );

    let mut session = Session {
        launch,
        cancel: run.cancel.clone(),
        log,
        flash_log,
        store: LineStore::new(StoreLimits::default()),
        events,
        attempt: run.attempt,
        detector: run.detector,
        writer,
        gate: NonceGate::new(run.nonce.clone()),
        verdict: false,
        after_assertion: Settle::default(),
        console_rx,
        console_open: true,
        port_rx,
        port_open: true,
        port_gone: false,
        shown,
        tool: None,
        tool_rx: None,
        tool_lines: VecDeque::new(),
        after_stop: None,
        started: false,
        image_exit: None,
        reader: Some(reader),
    };
    let result = session
        .attempt(
            &target,
            &elf,
            control,
            (run.timeout, run.nonce.as_ref()),
            &flash_path,
        )
        .await;

    // 5. Stop everything, whatever happened above.
    session.halt_and_stop().await;
    session.reader = None;
    session.drain_console().await;
    let Session {
        log,
        flash_log,
        store,
        image_exit,
        gate,
        verdict,
        ..
    } = session;
    let flash_done = flash_log.finish().await;
    let log_path = log.path().to_path_buf();
    let log_done = log.finish().await;
    let (end, fault, stopped_at) = result?;
    // On a loaded machine the verdict line the image printed just before it exited can reach
    // the reader only after gdb has said so: a verdict in the last drain is still the verdict.
    let end = match end {
        RunEnd::Exited { .. } if verdict => RunEnd::Verdict,
        end => end,
    };
    log_written(&flash_path, flash_done)?;
    log_written(&log_path, log_done)?;
    Ok(capture_of(
        store, launch, end, fault, stopped_at, image_exit, gate,
    ))
}

/// How an attempt ended: the end, the crash snapshot, where a hung core was.
type Concluded = (RunEnd, Option<FaultSnapshot>, Option<FaultSnapshot>);

/// What one round of waiting produced.
enum Step<T> {
    Done(T),
    /// A line or a port event was handled.
    Line,
    /// gdb said something that matters.
    Said(Said),
    ToolExited,
    PortGone,
    Cancelled,
}

/// How a flasher or reset command ended, when it did not fail.
enum ToolEnd {
    Finished,
    Cancelled,
}

/// A flasher, reset command or gdb, with its output pumped into `rx`.
struct Tool {
    /// What it is, for messages: `gdb-multiarch`, `the flash command`.
    name: String,
    method: &'static str,
    child: Child,
    guard: GroupGuard,
    status: Option<io::Result<ExitStatus>>,
    _pumps: Vec<AbortOnDrop<io::Result<()>>>,
}

struct Session<'a> {
    launch: Instant,
    cancel: CancellationToken,
    log: ConsoleLog,
    flash_log: ConsoleLog,
    store: LineStore,
    events: &'a dyn EventSink,
    attempt: u32,
    detector: Box<dyn EndDetector>,
    /// The console's way back to the target, kept open all along: closing it would end a
    /// socket console's connection.
    writer: Writer,
    gate: NonceGate,
    verdict: bool,
    /// The quiet window after a failed assertion on the console.
    after_assertion: Settle,
    console_rx: mpsc::Receiver<ConsoleLine>,
    console_open: bool,
    port_rx: mpsc::Receiver<PortEvent>,
    port_open: bool,
    /// The console ended for good (after any reconnects).
    port_gone: bool,
    /// The port as messages name it.
    shown: String,
    tool: Option<Tool>,
    /// The running tool's output, until its pipes close.
    tool_rx: Option<mpsc::Receiver<ConsoleLine>>,
    /// The latest flasher lines, for an error message.
    tool_lines: VecDeque<String>,
    /// gdb's lines after the stop marker, once it printed one.
    after_stop: Option<Vec<String>>,
    /// The image is running (gdb said so, or the command flash and reset are done).
    started: bool,
    image_exit: Option<i32>,
    reader: Option<AbortOnDrop<()>>,
}

impl Session<'_> {
    /// 2 to 4, with the timeout and the nonce to write once the image runs.
    async fn attempt(
        &mut self,
        target: &Target<'_>,
        elf: &Path,
        mut modem: Option<ModemLines>,
        (timeout, nonce): (Duration, Option<&Nonce>),
        flash_path: &Path,
    ) -> Result<Concluded, DutError> {
        let spec = target.spec;
        match &spec.flash {
            FlashSpec::Gdb(gdb) => {
                match self.reset(target, modem.as_mut()).await? {
                    ToolEnd::Finished => {}
                    other => return Ok(self.interrupted(other)),
                }
                let started = self
                    .start_with_gdb(gdb, elf, spec.flash_timeout, flash_path)
                    .await?;
                if !matches!(started, ToolEnd::Finished) {
                    return Ok(self.interrupted(started));
                }
            }
            FlashSpec::Command { command } => {
                let dir = flash_path.parent().unwrap_or(Path::new("."));
                match self
                    .flash_with_command(command, elf, dir, spec.flash_timeout)
                    .await?
                {
                    ToolEnd::Finished => {}
                    other => return Ok(self.interrupted(other)),
                }
                let reset = self.reset(target, modem.as_mut()).await?;
                if !matches!(reset, ToolEnd::Finished) {
                    return Ok(self.interrupted(reset));
                }
                self.started = true;
            }
            FlashSpec::ProbeRs(_) => {
                return Err(DutError::Unsupported {
                    board: target.describe.to_string(),
                    backend: "probe-rs flash method".into(),
                })
            }
        }
        self.events.emit(&Event::BootStarted {
            target: target.describe.to_string(),
            attempt: self.attempt,
        });
        if let Some(nonce) = nonce {
            self.send_nonce(nonce).await?;
        }
        Ok(self.capture(Instant::now() + timeout).await)
    }

    /// Writes `fwfix-nonce=<value>` to the console for the freshly reset image to read and
    /// print first; console.log notes it, so the line the image echoes can be checked by eye.
    async fn send_nonce(&mut self, nonce: &Nonce) -> Result<(), DutError> {
        serial::send_nonce(&mut self.writer, nonce, &self.shown).await?;
        let note = ConsoleLine {
            t_ms: self.launch.elapsed().as_millis() as u64,
            stream: Stream::Host,
            text: format!("fwfix: sent {} to the console", nonce.arg()),
        };
        self.take(note).await;
        Ok(())
    }

    /// The end of an attempt cancelled before the image ran.
    fn interrupted(&self, how: ToolEnd) -> Concluded {
        match how {
            ToolEnd::Cancelled => (RunEnd::Cancelled, None, None),
            // Not called for a finished tool; were it, the capture would go on from here.
            ToolEnd::Finished => (RunEnd::Verdict, None, None),
        }
    }

    /// The modem-line pulse and the reset command, whichever the board has.
    async fn reset(
        &mut self,
        target: &Target<'_>,
        modem: Option<&mut ModemLines>,
    ) -> Result<ToolEnd, DutError> {
        if let (Some(modem), SerialReset::Dtr { .. } | SerialReset::Rts { .. }) =
            (modem, target.port.reset)
        {
            self.flash_note(format!(
                "reset: pulsing {:?} on {}",
                target.port.reset, self.shown
            ))
            .await;
            serial::pulse(modem, target.port.reset, &self.shown).await?;
        }
        let Some(command) = &target.spec.reset_command else {
            return Ok(ToolEnd::Finished);
        };
        let mut sh = Command::new("sh");
        sh.arg("-c").arg(command);
        self.flash_note(format!("$ {command}")).await;
        self.spawn("the reset command", "reset_command", sh)?;
        self.finish_tool(target.spec.flash_timeout).await
    }

    async fn flash_with_command(
        &mut self,
        command: &str,
        elf: &Path,
        dir: &Path,
        limit: Duration,
    ) -> Result<ToolEnd, DutError> {
        let artifacts = flash::prepare(
            elf,
            dir,
            flash::uses(command, "bin"),
            flash::uses(command, "hex"),
        )
        .await?;
        if artifacts.bin.is_some() || artifacts.hex.is_some() {
            self.flash_note(format!("image.bin/.hex {}", artifacts.how))
                .await;
        }
        let line = flash::expand(
            command,
            elf,
            artifacts.bin.as_deref(),
            artifacts.hex.as_deref(),
        );
        self.flash_note(format!("$ {line}")).await;
        let mut sh = Command::new("sh");
        sh.arg("-c").arg(&line);
        self.spawn("the flash command", "command", sh)?;
        self.finish_tool(limit).await
    }

    /// Writes the command file, starts gdb, and waits until the image runs.
    async fn start_with_gdb(
        &mut self,
        spec: &GdbSpec,
        elf: &Path,
        limit: Duration,
        flash_path: &Path,
    ) -> Result<ToolEnd, DutError> {
        let bytes = tokio::fs::read(elf).await.map_err(|source| DutError::Io {
            doing: format!("reading {}", elf.display()),
            source,
        })?;
        let vectors = image::vector_table(&bytes).map_err(|e| DutError::Flash {
            method: "gdb".into(),
            message: format!("cannot start {}: {e}", elf.display()),
            log: String::new(),
        })?;
        let script_path = flash_path.with_extension("gdb");
        tokio::fs::write(
            &script_path,
            gdb::script(&spec.remote, &spec.init, &spec.start, &vectors),
        )
        .await
        .map_err(|source| DutError::Io {
            doing: format!("writing {}", script_path.display()),
            source,
        })?;
        self.flash_note(format!(
            "vector table at 0x{:08x} ({}): initial SP 0x{:08x}, reset 0x{:08x}",
            vectors.base, vectors.found_by, vectors.initial_sp, vectors.reset
        ))
        .await;
        if let GdbStart::MonitorReset { command } = &spec.start {
            self.flash_note(format!("started by `{command}` after load"))
                .await;
        }
        let args = gdb::args(&script_path, elf);
        self.flash_note(format!(
            "$ {} {}",
            spec.gdb,
            args.iter()
                .map(|a| a.to_string_lossy())
                .collect::<Vec<_>>()
                .join(" ")
        ))
        .await;
        let mut command = Command::new(resolve(&spec.gdb));
        command.args(&args);
        self.spawn(&spec.gdb, "gdb", command)?;

        let mut timer = pin!(sleep(limit));
        loop {
            match self.step(&mut timer).await {
                // A port lost meanwhile is the capture's to handle, once the image runs.
                Step::Line | Step::PortGone | Step::Said(Said::Other | Said::Stopped) => {}
                Step::Said(Said::Started) => return Ok(ToolEnd::Finished),
                Step::Said(Said::Exited(_) | Said::ConnectionLost) | Step::ToolExited => {
                    self.wait_tool_exit(DRAIN_BUDGET).await;
                    return Err(self.tool_failed("could not load and start the image"));
                }
                Step::Done(()) => {
                    return Err(self.tool_failed(&format!(
                        "did not load and start the image within {} s ([flash] timeout_s)",
                        limit.as_secs_f64()
                    )))
                }
                Step::Cancelled => return Ok(ToolEnd::Cancelled),
            }
        }
    }

    /// Waits for a flash or reset command to end within `limit`.
    async fn finish_tool(&mut self, limit: Duration) -> Result<ToolEnd, DutError> {
        let mut timer = pin!(sleep(limit));
        loop {
            match self.step(&mut timer).await {
                Step::Line | Step::Said(_) | Step::PortGone => {}
                Step::ToolExited => break,
                Step::Done(()) => {
                    return Err(self.tool_failed(&format!(
                        "did not finish within {} s ([flash] timeout_s)",
                        limit.as_secs_f64()
                    )))
                }
                Step::Cancelled => return Ok(ToolEnd::Cancelled),
            }
        }
        self.drain_tool().await;
        let status = self.tool.as_ref().and_then(|t| t.status.as_ref());
        match status {
            Some(Ok(status)) if status.success() => {
                self.tool = None;
                Ok(ToolEnd::Finished)
            }
            Some(Ok(status)) => Err(self.tool_failed(&format!("exited with {status}"))),
            Some(Err(e)) => Err(self.tool_failed(&format!("could not be waited for: {e}"))),
            None => Err(self.tool_failed("ended without a status")),
        }
    }

    /// 3 and 4: captures until the attempt's ending is decided and finished.
    async fn capture(&mut self, timeout_at: Instant) -> Concluded {
        let mut timer = pin!(sleep_until(timeout_at));
        loop {
            // The verdict, or the end of the console, may have come while the flasher was still
            // finishing.
            if self.verdict {
                self.grace(EXIT_GRACE).await;
                return (RunEnd::Verdict, None, None);
            }
            if self.port_gone {
                // The image may have just exited (closing an emulator's console with it): give
                // gdb a moment to say so.
                self.grace(LOST_PORT_GRACE).await;
                return match (self.verdict, self.image_exit) {
                    (true, _) => (RunEnd::Verdict, None, None),
                    (false, Some(code)) => (RunEnd::Exited { code }, None, None),
                    (false, None) => (RunEnd::PortLost, None, None),
                };
            }
            // Woken by the timeout or by the end of a settle window, whichever comes first.
            let settle_at = self.after_assertion.deadline().map(|d| self.launch + d);
            timer
                .as_mut()
                .reset(settle_at.map_or(timeout_at, |at| at.min(timeout_at)));
            match self.step(&mut timer).await {
                Step::Cancelled => return (RunEnd::Cancelled, None, None),
                Step::Done(()) => {
                    if let Some(stopped) = self.after_assertion.end(self.launch.elapsed()) {
                        // Where the core spins, read as at a timeout.
                        let (read, fault, at) = self.timed_out().await;
                        return (settle::stopped_unless(read, stopped), fault, at);
                    }
                    if Instant::now() >= timeout_at {
                        return self.timed_out().await;
                    }
                }
                Step::Said(Said::Exited(code)) => {
                    self.image_exit = Some(code);
                    self.drain_console().await;
                    let end = if self.verdict {
                        RunEnd::Verdict
                    } else {
                        RunEnd::Exited { code }
                    };
                    return (end, None, None);
                }
                Step::Said(Said::ConnectionLost) | Step::ToolExited => {
                    if self.verdict {
                        return (RunEnd::Verdict, None, None);
                    }
                    self.wait_tool_exit(DRAIN_BUDGET).await;
                    if let Some(code) = self.image_exit {
                        return (RunEnd::Exited { code }, None, None);
                    }
                    self.warn(format!(
                        "gdb lost the target before the run finished: {}",
                        self.tool_tail(3)
                    ));
                    let (signal, code) = self.tool_exit_status();
                    return (RunEnd::RunnerDied { signal, code }, None, None);
                }
                Step::Line | Step::Said(_) | Step::PortGone => {}
            }
        }
    }

    /// Lets gdb report an exit (and its code) for `grace`.
    async fn grace(&mut self, grace: Duration) {
        if self.tool.is_none() || self.image_exit.is_some() {
            return;
        }
        let mut timer = pin!(sleep(grace));
        loop {
            match self.step(&mut timer).await {
                Step::Said(Said::Exited(code)) => {
                    self.image_exit = Some(code);
                    self.drain_console().await;
                    return;
                }
                Step::Line | Step::Said(_) | Step::PortGone => {}
                Step::ToolExited => {
                    // Its last lines (the exit among them) may still be in the pipe.
                    self.drain_tool().await;
                    return;
                }
                Step::Done(()) | Step::Cancelled => return,
            }
        }
    }

    /// The timeout: with gdb attached, stop the core and read it; a core in a fault handler is a
    /// crash, anything else a hang.
    async fn timed_out(&mut self) -> Concluded {
        if !self.interrupt_gdb() {
            return (RunEnd::Timeout, None, None);
        }
        let mut budget = pin!(sleep(STOP_READ_BUDGET));
        loop {
            match self.step(&mut budget).await {
                Step::Said(Said::Exited(code)) => {
                    self.image_exit = Some(code);
                    return (RunEnd::Exited { code }, None, None);
                }
                Step::ToolExited | Step::Said(Said::ConnectionLost) => {
                    self.drain_tool().await;
                    break;
                }
                Step::Line | Step::Said(_) | Step::PortGone => {}
                Step::Done(()) => {
                    self.warn(format!(
                        "gdb did not report the stopped core within {} s",
                        STOP_READ_BUDGET.as_secs()
                    ));
                    break;
                }
                Step::Cancelled => return (RunEnd::Cancelled, None, None),
            }
        }
        let lines = self.after_stop.take().unwrap_or_default();
        match gdb::conclude(&gdb::read_stop(&lines)) {
            Some(Stop::Faulted(snapshot)) => (RunEnd::Crashed, Some(snapshot), None),
            Some(Stop::Running(snapshot)) => (RunEnd::Timeout, None, Some(snapshot)),
            None => {
                self.warn(format!(
                    "could not read where the firmware hung: {}",
                    self.tool_tail(3)
                ));
                (RunEnd::Timeout, None, None)
            }
        }
    }

    /// Sends gdb the interrupt a user's Ctrl+C would: it stops the core and goes on with its
    /// command file. False when no gdb runs the image.
    fn interrupt_gdb(&self) -> bool {
        let Some(tool) = &self.tool else {
            return false;
        };
        if tool.method != "gdb" || !self.started || tool.status.is_some() {
            return false;
        }
        let pid = tool.child.id().and_then(|p| i32::try_from(p).ok());
        pid.is_some_and(|pid| kill(Pid::from_raw(pid), Signal::SIGINT).is_ok())
    }

    /// 5: an attached gdb halts the core and disconnects; anything else still running is
    /// terminated.
    async fn halt_and_stop(&mut self) {
        if self.interrupt_gdb() {
            // Even after a cancellation the core is halted before gdb goes: a fresh token lets
            // the short wait for that happen.
            let cancel = std::mem::replace(&mut self.cancel, CancellationToken::new());
            self.wait_tool_exit(DETACH_BUDGET).await;
            self.cancel = cancel;
        }
        if let Some(tool) = self.tool.as_mut() {
            if tool.status.is_none() {
                tool.guard.terminate(&mut tool.child, TERM_GRACE).await;
            } else {
                tool.guard.kill_rest();
            }
        }
        self.drain_tool().await;
        self.tool = None;
    }

    /// Keeps reading (console and tool) until the tool exits or `budget` runs out.
    async fn wait_tool_exit(&mut self, budget: Duration) {
        let mut timer = pin!(sleep(budget));
        loop {
            match self.step(&mut timer).await {
                Step::ToolExited | Step::Done(()) | Step::Cancelled => break,
                Step::Said(Said::Exited(code)) => self.image_exit = Some(code),
                Step::Line | Step::Said(_) | Step::PortGone => {}
            }
        }
        self.drain_tool().await;
    }

    /// Waits for one of: a tool line, the tool's exit, a console line, a port event,
    /// cancellation, or `fut`. `fut` is polled first, so a flooding console cannot starve a
    /// timer; gdb's few lines come before the console's, so its start marker is not held up by
    /// what the image it started prints.
    async fn step<F: Future + Unpin>(&mut self, fut: &mut F) -> Step<F::Output> {
        tokio::select! {
            biased;
            _ = self.cancel.cancelled() => Step::Cancelled,
            out = fut => Step::Done(out),
            line = tool_line(&mut self.tool_rx) => match line {
                Some(line) => match self.take_tool(line).await {
                    Some(said) => Step::Said(said),
                    None => Step::Line,
                },
                None => {
                    self.tool_rx = None;
                    Step::Line
                }
            },
            status = tool_exit(&mut self.tool) => {
                if let Some(tool) = self.tool.as_mut() {
                    tool.status = Some(status);
                    // The tool ends with its process: what it left running in its group (holding
                    // its pipes open) goes now, as for every command fwfix runs.
                    tool.guard.kill_rest();
                }
                Step::ToolExited
            }
            event = self.port_rx.recv(), if self.port_open => match event {
                Some(event) => self.port_event(event).await,
                None => {
                    self.port_open = false;
                    Step::Line
                }
            },
            line = self.console_rx.recv(), if self.console_open => {
                match line {
                    Some(line) => self.take(line).await,
                    None => self.console_open = false,
                }
                Step::Line
            }
        }
    }

    /// One console line: to console.log, to the event sink, to memory, to the detector.
    async fn take(&mut self, line: ConsoleLine) {
        let live = admit_line(&line, &mut self.gate, &self.log, self.events, self.attempt).await;
        // Every live UART line is read, also after the verdict: the detector is the harness's
        // parse.
        let read = if line.stream == Stream::Uart && live {
            self.detector.read_line(&line.text)
        } else {
            LineRead::default()
        };
        self.verdict |= read.verdict;
        if live && line.stream == Stream::Uart {
            self.after_assertion.line(read, self.launch.elapsed());
        }
        self.store.push_read(line, read.keep);
    }

    /// A line of the flasher's or gdb's output: to flash.log, as progress while flashing, and
    /// what gdb says.
    async fn take_tool(&mut self, line: ConsoleLine) -> Option<Said> {
        self.flash_log.write(&line).await;
        if self.tool_lines.len() == TOOL_LINES_KEPT {
            self.tool_lines.pop_front();
        }
        self.tool_lines.push_back(line.text.clone());
        if let Some(after) = self.after_stop.as_mut() {
            after.push(line.text.clone());
        }
        if !self.started {
            let (phase, percent) = flash::progress(&line.text);
            self.events.emit(&Event::FlashProgress {
                phase: phase.to_string(),
                percent,
                line: line.text.clone(),
            });
        }
        let is_gdb = self.tool.as_ref().is_some_and(|t| t.method == "gdb");
        if !is_gdb {
            return None;
        }
        match gdb::classify(&line.text) {
            Said::Stopped => {
                self.after_stop = Some(Vec::new());
                Some(Said::Stopped)
            }
            Said::Started => {
                self.started = true;
                Some(Said::Started)
            }
            Said::Other => None,
            said => Some(said),
        }
    }

    async fn port_event<T>(&mut self, event: PortEvent) -> Step<T> {
        let text = match &event {
            PortEvent::Lost { why } => {
                format!(
                    "fwfix: console {} lost ({why}); opening it again",
                    self.shown
                )
            }
            PortEvent::Reopened { n } => {
                format!("fwfix: console {} open again (reconnect {n})", self.shown)
            }
            PortEvent::Gone { why } => format!("fwfix: console {} closed ({why})", self.shown),
        };
        let note = ConsoleLine {
            t_ms: self.launch.elapsed().as_millis() as u64,
            stream: Stream::Host,
            text: text.clone(),
        };
        self.take(note).await;
        match event {
            PortEvent::Gone { .. } => {
                // Lines the reader sent before it ended are already queued: take them first.
                self.drain_console().await;
                if !self.verdict {
                    self.warn(text);
                }
                self.port_gone = true;
                Step::PortGone
            }
            PortEvent::Lost { .. } => {
                if !self.verdict {
                    self.warn(text);
                }
                Step::Line
            }
            PortEvent::Reopened { .. } => Step::Line,
        }
    }

    /// Takes every console line already queued, and what the reader still delivers within a
    /// short budget: until it was stopped and is done, or, while it still runs (the image
    /// exited), until the console has been quiet for [`CONSOLE_SETTLE`]. A verdict line the
    /// image printed just before it exited may still be on its way through the reader on a
    /// loaded machine.
    async fn drain_console(&mut self) {
        let deadline = Instant::now() + DRAIN_BUDGET;
        let mut quiet_since = Instant::now();
        while self.console_open {
            match self.console_rx.try_recv() {
                Ok(line) => {
                    self.take(line).await;
                    quiet_since = Instant::now();
                }
                Err(mpsc::error::TryRecvError::Disconnected) => self.console_open = false,
                Err(mpsc::error::TryRecvError::Empty) => {
                    let now = Instant::now();
                    let settled =
                        self.reader.is_some() && now.duration_since(quiet_since) >= CONSOLE_SETTLE;
                    if settled || now >= deadline {
                        break;
                    }
                    sleep(Duration::from_millis(5)).await;
                }
            }
        }
    }

    /// Takes the tool's remaining output (its pipes close once its group is gone).
    async fn drain_tool(&mut self) {
        let deadline = Instant::now() + crate::process::output::DRAIN_GRACE;
        while let Some(rx) = self.tool_rx.as_mut() {
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some(line)) => {
                    if let Some(Said::Exited(code)) = self.take_tool(line).await {
                        self.image_exit = Some(code);
                    }
                }
                Ok(None) => self.tool_rx = None,
                Err(_) => return,
            }
        }
    }

    fn spawn(
        &mut self,
        name: &str,
        method: &'static str,
        mut command: Command,
    ) -> Result<(), DutError> {
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let (mut child, guard) = spawn_group(&mut command).map_err(|e| spawn_error(name, e))?;
        let (tx, rx) = mpsc::channel(256);
        let mut pumps = Vec::new();
        if let Some(out) = child.stdout.take() {
            pumps.push(AbortOnDrop(tokio::spawn(pump(
                out,
                Stream::Host,
                self.launch,
                tx.clone(),
            ))));
        }
        if let Some(err) = child.stderr.take() {
            pumps.push(AbortOnDrop(tokio::spawn(pump(
                err,
                Stream::Host,
                self.launch,
                tx,
            ))));
        }
        self.tool = Some(Tool {
            name: name.to_string(),
            method,
            child,
            guard,
            status: None,
            _pumps: pumps,
        });
        self.tool_rx = Some(rx);
        Ok(())
    }

    /// The flash error for the current tool, with its output.
    fn tool_failed(&self, message: &str) -> DutError {
        let (name, method) = self
            .tool
            .as_ref()
            .map(|t| (t.name.as_str(), t.method))
            .unwrap_or(("the flasher", "command"));
        DutError::Flash {
            method: method.to_string(),
            message: format!("{name}: {message}"),
            log: self
                .tool_lines
                .iter()
                .cloned()
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }

    fn tool_tail(&self, n: usize) -> String {
        let tail: Vec<&str> = self
            .tool_lines
            .iter()
            .rev()
            .filter(|l| !l.trim().is_empty() && !l.starts_with("@@fwfix:"))
            .take(n)
            .map(String::as_str)
            .collect();
        tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
    }

    fn tool_exit_status(&self) -> (Option<i32>, Option<i32>) {
        match self.tool.as_ref().and_then(|t| t.status.as_ref()) {
            Some(Ok(status)) => (status.signal(), status.code()),
            _ => (None, None),
        }
    }

    /// A line for flash.log only: what fwfix did, between the flasher's own lines.
    async fn flash_note(&mut self, text: String) {
        let line = ConsoleLine {
            t_ms: self.launch.elapsed().as_millis() as u64,
            stream: Stream::Host,
            text: format!("fwfix: {text}"),
        };
        self.flash_log.write(&line).await;
    }

    fn warn(&self, text: String) {
        self.events.emit(&Event::Message {
            level: Level::Warning,
            text,
        });
    }
}

/// The next line of the tool's output; pending forever when there is none to wait for.
async fn tool_line(rx: &mut Option<mpsc::Receiver<ConsoleLine>>) -> Option<ConsoleLine> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

/// The tool's exit; pending forever when no tool runs.
async fn tool_exit(tool: &mut Option<Tool>) -> io::Result<ExitStatus> {
    match tool {
        Some(tool) if tool.status.is_none() => tool.child.wait().await,
        _ => std::future::pending().await,
    }
}

/// A program given as a relative path is resolved here, like the QEMU backend does.
fn resolve(program: &str) -> PathBuf {
    if program.contains('/') {
        std::path::absolute(program).unwrap_or_else(|_| PathBuf::from(program))
    } else {
        PathBuf::from(program)
    }
}

/// Maps a spawn error to the DUT error a user can act on.
pub(super) fn spawn_error(program: &str, error: io::Error) -> DutError {
    match error.kind() {
        io::ErrorKind::NotFound if program.contains("gdb") => DutError::ToolMissing {
            program: program.to_string(),
            hint: "install it with `sudo apt-get install gdb-multiarch`, or set [gdb] gdb in the \
                   board file to the gdb of your Arm toolchain"
                .into(),
        },
        io::ErrorKind::NotFound => DutError::ToolMissing {
            program: program.to_string(),
            hint: "install it, or fix the command in the board file".into(),
        },
        _ => DutError::StartFailed {
            program: program.to_string(),
            message: error.to_string(),
        },
    }
}
