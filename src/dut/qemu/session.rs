//! One QEMU attempt from launch to a stopped process. Outline:
//!
//! 1. Open console.log and a scratch directory, spawn QEMU (the nonce first on its `-append`
//!    command line) in its own process group behind a guard that kills the group on every exit
//!    path, start the stdout/stderr pumps and the QMP connection.
//! 2. Capture: every line is logged, emitted as an event, kept (bounded), and fed to the harness's
//!    end detector (UART) or the fault watcher (stderr), until the first of: verdict, exit, fault,
//!    lockup, timeout, cancellation.
//! 3. Finish that ending: a short grace for the exit code after a verdict; a monitor snapshot
//!    (stop, registers, stack, SCB) after a fault; the stopped core's registers at a timeout.
//! 4. Kill the group, reap QEMU, drain the pipes, close console.log, build the [`Capture`].
//!
//! It owns the timing policy; parsing is in `fault` and `args`, process plumbing in `process`.

use super::args::{self, ExitClass, ExitContext, ExitInfo};
use super::fault::{self, Alarm, FaultWatcher, MonitorReading};
use super::process::{self, ScratchDir};
use super::qmp::{QmpClient, QmpError};
use crate::capture::log::ConsoleLog;
use crate::capture::nonce::{self, NonceGate};
use crate::capture::pump::pump;
use crate::capture::store::{LineStore, StoreLimits};
use crate::capture::{Capture, ConsoleLine, EndDetector, FaultSnapshot, RunEnd, Stream};
use crate::config::QemuSpec;
use crate::dut::cortex_m::{self, CoreRegs, SCB_CFSR};
use crate::dut::session::{admit_line, capture_of, create_log, finish_log};
use crate::dut::{DutError, Image, RunSpec};
use crate::events::{Event, EventSink, Level};
use crate::process::AbortOnDrop;
use std::future::Future;
use std::os::unix::process::ExitStatusExt;
use std::pin::pin;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;
use tokio::process::Child;
use tokio::sync::mpsc;
use tokio::time::{sleep, sleep_until, timeout, Instant};
use tokio_util::sync::CancellationToken;

/// After the verdict (or a crash snapshot), how long QEMU gets to exit by semihosting so its exit
/// code is recorded.
const EXIT_GRACE: Duration = Duration::from_millis(300);
/// How long fwfix keeps trying to connect to QMP after launch.
const QMP_PATIENCE: Duration = Duration::from_secs(2);
/// The limit on each QMP request.
const QMP_STEP: Duration = Duration::from_millis(400);
/// The whole monitor snapshot of a crash, connection wait included: the crash must be reported
/// within about a second.
const CRASH_READ_BUDGET: Duration = Duration::from_millis(900);
/// The registers of a hung core.
const HANG_READ_BUDGET: Duration = Duration::from_millis(1500);
/// After QEMU's exit (or our kill), how long the pipes may take to deliver what is left.
const DRAIN_BUDGET: Duration = Duration::from_secs(2);
/// After a failed snapshot, how long to wait for QEMU to finish aborting on a lockup.
const LOCKUP_WAIT: Duration = Duration::from_millis(700);
/// stderr lines kept to explain a start failure.
const STDERR_HEAD: usize = 64;
/// A unix socket path must fit in `sun_path` (108 bytes with the terminator).
const MAX_SOCKET_PATH: usize = 100;

/// Runs one attempt. `pid` receives QEMU's process id as soon as it exists.
pub(super) async fn run(
    spec: &QemuSpec,
    target: &str,
    image: &Image,
    run: RunSpec,
    events: &dyn EventSink,
    pid: &mut Option<u32>,
) -> Result<Capture, DutError> {
    let program = spec.binary.as_str();
    let kernel = std::path::absolute(&image.elf).unwrap_or_else(|_| image.elf.clone());
    for dir in process::reap_orphans().await {
        events.emit(&Event::Message {
            level: Level::Warning,
            text: format!(
                "stopped a QEMU that a killed fwfix left running (its scratch directory was {})",
                dir.display()
            ),
        });
    }
    let scratch = ScratchDir::create().map_err(|source| DutError::Io {
        doing: "creating a scratch directory for QEMU".into(),
        source,
    })?;
    let qmp_socket = scratch.path().join(process::QMP_SOCKET);
    if qmp_socket.as_os_str().len() > MAX_SOCKET_PATH {
        return Err(DutError::Other(format!(
            "the QMP socket path {} is too long for a unix socket; use a shorter temporary \
             directory",
            qmp_socket.display()
        )));
    }
    let log = create_log(&run.console_log).await?;
    let append = nonce::command_line(run.nonce.as_ref(), run.append.as_deref());

    let launch = Instant::now();
    let mut command = process::command(program);
    command
        .args(args::qemu_args(
            spec,
            &kernel,
            &qmp_socket,
            append.as_deref(),
        ))
        // Anything QEMU leaves in its working directory (a core file) goes away with the scratch.
        .current_dir(scratch.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let (mut child, mut killer) =
        crate::process::spawn_group(&mut command).map_err(|e| process::spawn_error(program, e))?;
    *pid = child.id();
    events.emit(&Event::BootStarted {
        target: target.to_string(),
        attempt: run.attempt,
    });

    let (tx, rx) = mpsc::channel(256);
    let mut pumps = Vec::new();
    if let Some(out) = child.stdout.take() {
        pumps.push(AbortOnDrop(tokio::spawn(pump(
            out,
            Stream::Uart,
            launch,
            tx.clone(),
        ))));
    }
    if let Some(err) = child.stderr.take() {
        pumps.push(AbortOnDrop(tokio::spawn(pump(
            err,
            Stream::Host,
            launch,
            tx,
        ))));
    }
    let qmp = AbortOnDrop(tokio::spawn(async move {
        QmpClient::connect(&qmp_socket, QMP_PATIENCE, QMP_STEP).await
    }));

    let mut session = Session {
        child,
        rx,
        rx_open: true,
        status: None,
        wait_error: None,
        cancel: run.cancel.clone(),
        log,
        store: LineStore::new(StoreLimits::default()),
        events,
        attempt: run.attempt,
        detector: run.detector,
        gate: NonceGate::new(run.nonce),
        watcher: FaultWatcher::new(),
        verdict: false,
        alarm: None,
        uart_seen: false,
        stderr_head: Vec::new(),
        program_prefix: args::program_prefix(program),
        qmp: Some(qmp),
    };
    let ending = session.capture(launch + run.timeout).await;

    // 4. Stop everything, whatever happened above.
    let exited_by_itself = session.status.is_some();
    killer.kill();
    session.reap().await;
    if session.status.is_some() || session.wait_error.is_some() {
        killer.disarm();
    }
    session.drain().await;
    for mut pump in pumps {
        if let Ok(Ok(Err(e))) = timeout(DRAIN_BUDGET, &mut pump.0).await {
            session.warn(format!("reading QEMU's output failed: {e}"));
        }
    }
    let exit = session.status.map(|s| exit_info(&s));
    let Some((end, fault, stopped_at)) = session.conclude(ending, exit) else {
        // QEMU's own words stay in console.log as well as in the error.
        let _ = session.log.finish().await;
        return Err(args::start_failure(
            program,
            spec,
            &kernel,
            &session.stderr_head,
        ));
    };
    // The firmware's exit status: only when QEMU exited by itself, and not when it was told to.
    let exit_code = match end {
        RunEnd::RunnerDied { .. } => None,
        _ if exited_by_itself => exit.and_then(|e| e.code),
        _ => None,
    };

    let Session {
        log, store, gate, ..
    } = session;
    finish_log(log).await?;
    Ok(capture_of(
        store, launch, end, fault, stopped_at, exit_code, gate,
    ))
}

fn exit_info(status: &ExitStatus) -> ExitInfo {
    ExitInfo {
        code: status.code(),
        signal: status.signal(),
    }
}

/// How an attempt ended: the end, the crash snapshot, where a hung core was.
type Concluded = (RunEnd, Option<FaultSnapshot>, Option<FaultSnapshot>);

/// How the capture phase ended, with what that ending needs.
enum Ending {
    Verdict,
    /// QEMU ended by itself: classified from its exit status once the pipes are drained.
    Exited,
    Crashed(FaultSnapshot),
    Timeout(Option<FaultSnapshot>),
    Cancelled,
}

/// What one round of waiting produced.
enum Step<T> {
    Done(T),
    Line,
    Exited,
    Cancelled,
}

struct Session<'a> {
    child: Child,
    rx: mpsc::Receiver<ConsoleLine>,
    rx_open: bool,
    status: Option<ExitStatus>,
    wait_error: Option<std::io::Error>,
    cancel: CancellationToken,
    log: ConsoleLog,
    store: LineStore,
    events: &'a dyn EventSink,
    attempt: u32,
    detector: Box<dyn EndDetector>,
    gate: NonceGate,
    watcher: FaultWatcher,
    verdict: bool,
    alarm: Option<Alarm>,
    uart_seen: bool,
    stderr_head: Vec<String>,
    /// QEMU's own error lines start with this (`qemu-system-arm: `).
    program_prefix: String,
    qmp: Option<AbortOnDrop<Result<QmpClient, QmpError>>>,
}

impl Session<'_> {
    /// 2 and 3: captures until the attempt's ending is decided and finished.
    async fn capture(&mut self, timeout_at: Instant) -> Ending {
        let mut timer = pin!(sleep_until(timeout_at));
        loop {
            match self.step(&mut timer).await {
                Step::Cancelled => return Ending::Cancelled,
                Step::Done(()) => return Ending::Timeout(self.read_stopped_core().await),
                Step::Exited => {
                    self.drain().await;
                    return Ending::Exited;
                }
                Step::Line => {}
            }
            match self.alarm.take() {
                Some(Alarm::Fault { .. }) => return Ending::Crashed(self.read_fault().await),
                Some(Alarm::Lockup) => return Ending::Crashed(self.await_lockup().await),
                None => {}
            }
            if self.verdict {
                self.grace().await;
                return Ending::Verdict;
            }
        }
    }

    /// Waits for one of: a line (handled), QEMU's exit, cancellation, or `fut`. `fut` (a timer or
    /// a snapshot) is polled before the lines, so a firmware flooding its console cannot starve
    /// the timeout.
    async fn step<F: Future + Unpin>(&mut self, fut: &mut F) -> Step<F::Output> {
        tokio::select! {
            biased;
            _ = self.cancel.cancelled() => Step::Cancelled,
            out = fut => Step::Done(out),
            line = self.rx.recv(), if self.rx_open => {
                match line {
                    Some(line) => self.take(line).await,
                    None => self.rx_open = false,
                }
                Step::Line
            }
            status = self.child.wait(), if !self.exited() => {
                match status {
                    Ok(status) => self.status = Some(status),
                    Err(e) => self.wait_error = Some(e),
                }
                Step::Exited
            }
        }
    }

    fn exited(&self) -> bool {
        self.status.is_some() || self.wait_error.is_some()
    }

    /// One line: to console.log, to the event sink, to memory, to the detector or the watcher.
    async fn take(&mut self, line: ConsoleLine) {
        let live = admit_line(&line, &mut self.gate, &self.log, self.events, self.attempt).await;
        match line.stream {
            Stream::Uart => {
                self.uart_seen = true;
                if live && !self.verdict && self.detector.is_final(&line.text) {
                    self.verdict = true;
                }
            }
            Stream::Host => {
                if self.stderr_head.len() < STDERR_HEAD {
                    self.stderr_head.push(line.text.clone());
                }
                if let Some(alarm) = self.watcher.feed(&line.text) {
                    self.alarm = Some(alarm);
                }
            }
        }
        self.store.push(line);
    }

    /// Lets QEMU run for [`EXIT_GRACE`] so a semihosting exit (and its code) can arrive.
    async fn grace(&mut self) {
        self.keep_capturing(EXIT_GRACE).await;
    }

    /// Goes on capturing for `pause`, or until QEMU exits (its output then drained) or the
    /// attempt is cancelled.
    async fn keep_capturing(&mut self, pause: Duration) {
        let mut timer = pin!(sleep(pause));
        loop {
            match self.step(&mut timer).await {
                Step::Line => {}
                Step::Exited => return self.drain().await,
                Step::Done(()) | Step::Cancelled => return,
            }
        }
    }

    /// The fault just happened: stop the core over QMP and read where it faulted, while still
    /// capturing (a lockup may end QEMU meanwhile). Then let the handler run for the grace, so
    /// whatever it prints, and a semihosting exit, are captured too.
    async fn read_fault(&mut self) -> FaultSnapshot {
        let qmp = self.qmp.take();
        let mut reading = pin!(timeout(CRASH_READ_BUDGET, monitor_reading(qmp)));
        let result = loop {
            match self.step(&mut reading).await {
                Step::Line => {}
                Step::Done(Ok(result)) => break result,
                Step::Done(Err(_)) => {
                    break Err(format!(
                        "no monitor answer within {} ms",
                        CRASH_READ_BUDGET.as_millis()
                    ))
                }
                Step::Exited => {
                    self.drain().await;
                    return self
                        .watcher
                        .snapshot_from_log("QEMU ended before its monitor could be read");
                }
                Step::Cancelled => {
                    return self
                        .watcher
                        .snapshot_from_log("the attempt was cancelled before the monitor answered")
                }
            }
        };
        match result {
            Ok(reading) => {
                let snapshot = fault::snapshot_from_monitor(&reading, &self.watcher);
                self.grace().await;
                snapshot
            }
            Err(why) => {
                self.warn(format!("could not read the crashed core over QMP: {why}"));
                // A lockup abort is the usual reason: give QEMU a moment to print its dump.
                self.keep_capturing(LOCKUP_WAIT).await;
                self.watcher
                    .snapshot_from_log(&format!("the monitor could not be read: {why}"))
            }
        }
    }

    /// QEMU announced a lockup and is aborting: wait for it and read its register dump.
    async fn await_lockup(&mut self) -> FaultSnapshot {
        self.keep_capturing(LOCKUP_WAIT).await;
        self.watcher
            .snapshot_from_log("QEMU aborted on the lockup; its monitor was not read")
    }

    /// The timeout: stop the core and read where it is, so a hang can be located.
    async fn read_stopped_core(&mut self) -> Option<FaultSnapshot> {
        let qmp = self.qmp.take();
        let mut reading = pin!(timeout(HANG_READ_BUDGET, stopped_registers(qmp)));
        loop {
            match self.step(&mut reading).await {
                Step::Line => {}
                Step::Done(Ok(Ok(text))) => {
                    let snapshot = fault::snapshot_from_registers(&text);
                    if snapshot.is_none() {
                        self.warn(format!(
                            "the monitor's register dump could not be parsed: {}",
                            text.trim()
                        ));
                    }
                    return snapshot;
                }
                Step::Done(Ok(Err(why))) => {
                    self.warn(format!("could not read where the firmware hung: {why}"));
                    return None;
                }
                Step::Done(Err(_)) => {
                    self.warn(format!(
                        "could not read where the firmware hung: no monitor answer within {} ms",
                        HANG_READ_BUDGET.as_millis()
                    ));
                    return None;
                }
                Step::Exited | Step::Cancelled => return None,
            }
        }
    }

    /// Reads every line still in the pipes (they close once QEMU is gone), within a budget.
    async fn drain(&mut self) {
        let deadline = Instant::now() + DRAIN_BUDGET;
        while self.rx_open {
            match timeout_at_instant(deadline, self.rx.recv()).await {
                Some(Some(line)) => self.take(line).await,
                Some(None) => self.rx_open = false,
                None => break,
            }
        }
    }

    /// Waits for the killed (or exited) QEMU to be reaped.
    async fn reap(&mut self) {
        if self.exited() {
            return;
        }
        match timeout(DRAIN_BUDGET, self.child.wait()).await {
            Ok(Ok(status)) => self.status = Some(status),
            Ok(Err(e)) => self.wait_error = Some(e),
            Err(_) => self.warn("QEMU did not go away after SIGKILL".into()),
        }
    }

    /// The attempt's end with its fault and stopped-at snapshots; None when QEMU refused to start.
    fn conclude(&self, ending: Ending, exit: Option<ExitInfo>) -> Option<Concluded> {
        Some(match ending {
            Ending::Verdict => (RunEnd::Verdict, None, None),
            Ending::Cancelled => (RunEnd::Cancelled, None, None),
            Ending::Timeout(snapshot) => (RunEnd::Timeout, None, snapshot),
            Ending::Crashed(mut snapshot) => {
                if self.watcher.lockup() && !snapshot.lockup {
                    snapshot.lockup = true;
                    snapshot
                        .raw
                        .push_str("\n-- the fault handler then locked up --\n");
                    snapshot.raw.push_str(&self.watcher.log_text());
                }
                (RunEnd::Crashed, Some(snapshot), None)
            }
            Ending::Exited => match self.classify(exit) {
                ExitClass::StartFailure => return None,
                ExitClass::RunnerDied { signal, code } => {
                    (RunEnd::RunnerDied { signal, code }, None, None)
                }
                ExitClass::Crashed => {
                    let why = "QEMU ended before its monitor could be read";
                    (
                        RunEnd::Crashed,
                        Some(self.watcher.snapshot_from_log(why)),
                        None,
                    )
                }
                ExitClass::Verdict { .. } => (RunEnd::Verdict, None, None),
                ExitClass::Exited { code } => (RunEnd::Exited { code }, None, None),
            },
        })
    }

    fn classify(&self, exit: Option<ExitInfo>) -> ExitClass {
        let qemu_complained = self
            .stderr_head
            .iter()
            .any(|l| l.starts_with(&self.program_prefix));
        args::classify_exit(&ExitContext {
            exit: exit.unwrap_or(ExitInfo {
                code: None,
                signal: None,
            }),
            terminated_by: self.watcher.terminated_by(),
            lockup: self.watcher.lockup(),
            fault_seen: self.watcher.fault_vector().is_some(),
            verdict_seen: self.verdict,
            uart_seen: self.uart_seen,
            guest_ran: self.watcher.guest_ran(),
            qemu_complained,
        })
    }

    fn warn(&self, text: String) {
        self.events.emit(&Event::Message {
            level: Level::Warning,
            text,
        });
    }
}

async fn timeout_at_instant<F: Future>(deadline: Instant, fut: F) -> Option<F::Output> {
    tokio::time::timeout_at(deadline, fut).await.ok()
}

/// Waits for the QMP connection made at launch.
async fn connected(
    qmp: Option<AbortOnDrop<Result<QmpClient, QmpError>>>,
) -> Result<QmpClient, String> {
    let Some(mut handle) = qmp else {
        return Err("the QMP connection was already used".into());
    };
    match (&mut handle.0).await {
        Ok(Ok(client)) => Ok(client),
        Ok(Err(e)) => Err(e.to_string()),
        Err(e) => Err(format!("the QMP task failed: {e}")),
    }
}

/// stop, info registers, the stack at SP, the SCB fault registers, then cont.
async fn monitor_reading(
    qmp: Option<AbortOnDrop<Result<QmpClient, QmpError>>>,
) -> Result<MonitorReading, String> {
    let mut client = connected(qmp).await?;
    client
        .execute("stop", None)
        .await
        .map_err(|e| e.to_string())?;
    let registers = client
        .hmp("info registers")
        .await
        .map_err(|e| e.to_string())?;
    let mut reading = MonitorReading {
        registers,
        ..MonitorReading::default()
    };
    let mut problems = Vec::new();
    let regs = CoreRegs::parse(&reading.registers);
    if let Some(sp) = regs.sp() {
        // A short read first; more only when it shows no certain frame.
        for words in [cortex_m::STACK_WORDS_FIRST, cortex_m::STACK_WORDS_MORE] {
            match client.hmp(&format!("xp /{words}wx 0x{sp:08x}")).await {
                Ok(text) => {
                    let parsed = fault::parse_words(&text, sp);
                    let certain = cortex_m::locate_frame(&regs, &parsed)
                        .is_ok_and(|frame| frame.is_certain());
                    reading.stack = Some((text, parsed));
                    if certain {
                        break;
                    }
                }
                Err(e) => {
                    problems.push(e.to_string());
                    break;
                }
            }
        }
    }
    match client.hmp(&format!("xp /5wx 0x{SCB_CFSR:08x}")).await {
        Ok(text) => {
            let words = fault::parse_words(&text, SCB_CFSR);
            reading.scb = Some((text, words));
        }
        Err(e) => problems.push(e.to_string()),
    }
    if let Err(e) = client.execute("cont", None).await {
        problems.push(e.to_string());
    }
    if !problems.is_empty() {
        reading.problem = Some(problems.join("; "));
    }
    Ok(reading)
}

/// stop, then info registers: where a hung core is.
async fn stopped_registers(
    qmp: Option<AbortOnDrop<Result<QmpClient, QmpError>>>,
) -> Result<String, String> {
    let mut client = connected(qmp).await?;
    client
        .execute("stop", None)
        .await
        .map_err(|e| e.to_string())?;
    client
        .hmp("info registers")
        .await
        .map_err(|e| e.to_string())
}
