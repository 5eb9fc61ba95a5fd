//! One QEMU attempt from launch to a stopped process. Outline:
//!
//! 1. Open console.log and a scratch directory. Take the QEMU started ahead for this attempt
//!    ([`Warm`]: paused, no image, the nonce on its semihosting command line), or spawn one paused
//!    with the image (`-kernel`, the nonce first on its `-append` command line); either way its
//!    gdbstub connects to a socket fwfix listens on and it runs in its own process group
//!    behind a guard that kills the group on every exit path. With another attempt to follow,
//!    start that one's QEMU now, so its start overlaps this run. Start the stdout/stderr pumps
//!    and the gdbstub watcher on that socket, which writes the image into a QEMU started
//!    without it, sets a breakpoint on every fault handler's entry and lets the core run.
//! 2. Capture: every UART line is logged, emitted as an event, kept (bounded) and fed to the
//!    harness's end detector; every stderr line is read for a lockup and passes a noise filter
//!    before it is logged; the watcher's reports are taken as they come, until the first of:
//!    verdict, exit, fault, lockup, timeout, cancellation.
//! 3. Finish that ending: a short grace for the exit code after a verdict; after a fault, none
//!    when the handler only spins, else until it settles, exits or the grace ends; the stopped
//!    core's registers at a timeout.
//! 4. Kill the group, reap QEMU, drain the pipes, close console.log, build the [`Capture`]. When
//!    the gdbstub reported the image's exit (its `W` packet), QEMU has written everything it will
//!    write but is still tearing down (3-11 ms measured on a loaded host, before its pipes close
//!    and it can be reaped): the pipes are read for what they hold, without waiting for their
//!    end, and QEMU is killed and reaped off the result's path ([`crate::process::reap_later`]).
//!
//! It owns the timing policy; the gdbstub conversation is in `gdbstub`, QEMU's own words in
//! `fault` and `args`, process plumbing in `process`.

use super::args::{self, Boot, ExitClass, ExitContext, ExitInfo, Sockets};
use super::fault::StderrWatcher;
use super::gdbstub::{self, Command, Report, Watch};
use super::process::{self, ScratchDir};
use crate::capture::log::ConsoleLog;
use crate::capture::noise::HostFilter;
use crate::capture::nonce::{self, NonceGate};
use crate::capture::pump::pump_until;
use crate::capture::settle::Settle;
use crate::capture::store::{LineStore, StoreLimits};
use crate::capture::{
    Capture, ConsoleLine, EndDetector, FaultSnapshot, LineRead, RunEnd, Stream, VectorStore,
};
use crate::config::QemuSpec;
use crate::dut::board::image;
use crate::dut::cortex_m::{self, snapshot_at_entry, Stop, StopReading};
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
use tokio::sync::{mpsc, oneshot};
use tokio::time::{sleep, sleep_until, timeout, Instant};
use tokio_util::sync::CancellationToken;

/// After the verdict, how long QEMU gets to exit by semihosting so its exit code is recorded;
/// after a fault whose handler does not just spin, how long it may go on (printing a dump,
/// exiting) before the run ends.
const EXIT_GRACE: Duration = Duration::from_millis(300);
/// How long QEMU's gdbstub may take to give its first answer after launch: QEMU reads its socket
/// within milliseconds, but a host loaded with parallel builds can hold it up.
const GDB_PATIENCE: Duration = Duration::from_secs(10);
/// The registers of a hung core.
const HANG_READ_BUDGET: Duration = Duration::from_millis(1500);
/// After QEMU's exit (or our kill), how long the pipes may take to deliver what is left.
const DRAIN_BUDGET: Duration = Duration::from_secs(2);
/// After a lockup line, how long to wait for QEMU to finish printing its dump and abort.
const LOCKUP_WAIT: Duration = Duration::from_millis(700);
/// When the gdbstub failed, how long QEMU gets to show it refused to start.
const START_WAIT: Duration = Duration::from_millis(300);
/// stderr lines kept to explain a start failure.
const STDERR_HEAD: usize = 64;
/// A unix socket path must fit in `sun_path` (108 bytes with the terminator).
const MAX_SOCKET_PATH: usize = 100;

/// A QEMU started paused with no image, ahead of its attempt (while the image is built, or while
/// the attempt before runs): the attempt writes the image through the gdbstub instead of waiting
/// for QEMU's own start, which is most of a short test's time. It fits an attempt that runs
/// the same image path with the same command line; dropping it kills it and waits until it is
/// gone.
#[derive(Debug)]
pub struct Warm {
    /// Taken by the attempt that uses it; still here when it is dropped unused.
    launched: Option<Launched>,
    kernel: std::path::PathBuf,
    /// The semihosting command line it was given.
    append: Option<String>,
    /// The nonce in that command line, for the attempt that takes it.
    pub nonce: Option<nonce::Nonce>,
}

impl Warm {
    /// Starts a paused QEMU for attempt `attempt` of the image at `elf` (absolute, or made so)
    /// with `nonce` and the attempt's number as its command line.
    pub(super) fn start(
        spec: &QemuSpec,
        elf: &std::path::Path,
        nonce: Option<nonce::Nonce>,
        attempt: u32,
        scratch: &mut Option<ScratchDir>,
    ) -> Result<Warm, DutError> {
        let kernel = std::path::absolute(elf).unwrap_or_else(|_| elf.to_path_buf());
        let append = nonce::command_line(nonce.as_ref(), Some(attempt), None);
        let boot = Boot::Gdbstub {
            kernel: &kernel,
            append: append.as_deref(),
        };
        let launched = launch(spec, scratch, &boot)?;
        Ok(Warm {
            launched: Some(launched),
            kernel,
            append,
            nonce,
        })
    }

    /// Whether it was started for this image path and command line, and still runs.
    fn fits(&mut self, kernel: &std::path::Path, append: Option<&str>) -> bool {
        self.kernel == kernel
            && self.append.as_deref() == append
            && self
                .launched
                .as_mut()
                .is_some_and(|l| matches!(l.child.try_wait(), Ok(None)))
    }
}

/// How long dropping an unused [`Warm`] waits for its killed QEMU to be gone.
const WARM_REAP: Duration = Duration::from_secs(2);

impl Drop for Warm {
    /// Kills the unused QEMU and reaps it before returning: fwfix may exit right after (a
    /// refused tree, the last attempt), and a SIGKILLed process lingers for milliseconds,
    /// longer on a loaded machine, so a kill alone could outlive fwfix. The wait is bounded;
    /// the guardian stops a QEMU that is still there when fwfix exits.
    fn drop(&mut self) {
        let Some(launched) = &mut self.launched else {
            return;
        };
        launched.killer.kill();
        let deadline = Instant::now() + WARM_REAP;
        while matches!(launched.child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// A QEMU just spawned: the process, the guard of its group, the socket its gdbstub connects to.
#[derive(Debug)]
struct Launched {
    child: Child,
    killer: crate::process::GroupGuard,
    gdb: gdbstub::Listener,
    /// Its QMP socket, removed once it is gone (a killed QEMU leaves it).
    qmp: std::path::PathBuf,
}

/// Spawns QEMU paused, in its own process group, its gdbstub connecting to a socket fwfix
/// listens on.
///
/// QEMU connects (rather than inheriting one end of a socket pair) so that nothing of fwfix's
/// has to be inheritable while it spawns: a descriptor made inheritable for one child reaches
/// every child spawned meanwhile, so such spawns had to run one at a time, and with `--jobs` one
/// job's spawn of QEMU or `make` waited for another's (milliseconds on a loaded host, where a
/// spawned child waits for a core before its exec).
fn launch(
    spec: &QemuSpec,
    scratch: &mut Option<ScratchDir>,
    boot: &Boot<'_>,
) -> Result<Launched, DutError> {
    let program = spec.binary.as_str();
    let scratch = match scratch {
        Some(dir) => dir,
        None => scratch.insert(ScratchDir::create().map_err(|source| DutError::Io {
            doing: "creating a scratch directory for QEMU".into(),
            source,
        })?),
    };
    let sockets = Sockets {
        gdb: scratch.next_gdb_socket(),
        qmp: scratch.next_qmp_socket(),
    };
    for path in [&sockets.gdb, &sockets.qmp] {
        if path.as_os_str().len() > MAX_SOCKET_PATH {
            return Err(DutError::Other(format!(
                "the socket path {} is too long for a unix socket; use a shorter temporary \
                 directory",
                path.display()
            )));
        }
    }
    // Listening before QEMU exists: its connection waits in the backlog until the watcher
    // accepts it.
    let gdb = gdbstub::Listener::bind(&sockets.gdb).map_err(|source| DutError::Io {
        doing: "making the socket for QEMU's gdbstub".into(),
        source,
    })?;
    let mut command = process::command(program);
    command
        .args(args::qemu_args(spec, boot, &sockets))
        // Anything QEMU leaves in its working directory (a core file) goes away with the scratch,
        // when the DUT does.
        .current_dir(scratch.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let (child, killer) =
        crate::process::spawn_group(&mut command).map_err(|e| process::spawn_error(program, e))?;
    Ok(Launched {
        child,
        killer,
        gdb,
        qmp: sockets.qmp,
    })
}

/// Runs one attempt. `pid` receives QEMU's process id as soon as it exists. `scratch` is the
/// DUT's scratch directory, made on its first attempt and kept for the next ones (each QEMU has a
/// QMP socket of its own there). `warm` is the QEMU started ahead for this
/// attempt, taken when it fits; with `run.prepare_next`, the next attempt's is left there once
/// this one's QEMU is stopped.
#[allow(clippy::too_many_arguments)]
pub(super) async fn run(
    spec: &QemuSpec,
    target: &str,
    image: &Image,
    run: RunSpec,
    events: &dyn EventSink,
    pid: &mut Option<u32>,
    scratch: &mut Option<ScratchDir>,
    warm: &mut Option<Warm>,
) -> Result<Capture, DutError> {
    let program = spec.binary.as_str();
    let kernel = std::path::absolute(&image.elf).unwrap_or_else(|_| image.elf.clone());
    for dir in process::reap_orphans_once().await {
        events.emit(&Event::Message {
            level: Level::Warning,
            text: format!(
                "stopped a QEMU that a killed fwfix left running (its scratch directory was {})",
                dir.display()
            ),
        });
    }
    // Read in place: a small file, and a trip to the blocking pool would delay the launch.
    let segments = std::fs::read(&kernel)
        .ok()
        .and_then(|elf| image::segments(&elf).ok());
    // An image with no semihosting call cannot exit: no grace for an exit code after its verdict.
    let may_exit = segments.as_deref().is_none_or(image::may_semihost);
    let log = create_log(&run.console_log).await?;
    let append = nonce::command_line(run.nonce.as_ref(), Some(run.attempt), run.append.as_deref());

    let launch_at = Instant::now();
    // A QEMU started ahead is given the image through its gdbstub; an image that is no ELF
    // (QEMU's -kernel also takes a flat binary) is left to QEMU.
    let ahead = warm
        .take()
        .filter(|_| segments.is_some())
        .and_then(|mut w| {
            w.fits(&kernel, append.as_deref())
                .then(|| w.launched.take())
                .flatten()
        });
    let (launched, load) = match ahead {
        Some(launched) => (launched, segments),
        None => {
            let boot = Boot::Kernel {
                kernel: &kernel,
                append: append.as_deref(),
            };
            (launch(spec, scratch, &boot)?, None)
        }
    };
    let Launched {
        mut child,
        mut killer,
        gdb,
        qmp,
    } = launched;
    let launch = launch_at;
    if run.prepare_next {
        // The next attempt's QEMU starts while this one runs. One that cannot start now is
        // started (and its failure said) by the next attempt.
        let nonce = run.nonce.as_ref().map(|n| nonce::Nonce::fresh(n.check));
        *warm = Warm::start(spec, &image.elf, nonce, run.attempt + 1, scratch).ok();
    }
    *pid = child.id();
    events.emit(&Event::BootStarted {
        target: target.to_string(),
        attempt: run.attempt,
    });

    let (tx, rx) = mpsc::channel(256);
    let mut pumps = Vec::new();
    let mut pipes_done = Vec::new();
    if let Some(out) = child.stdout.take() {
        let (done, fired) = oneshot::channel();
        pipes_done.push(done);
        pumps.push(AbortOnDrop(tokio::spawn(pump_until(
            out,
            Stream::Uart,
            launch,
            tx.clone(),
            fired,
        ))));
    }
    if let Some(err) = child.stderr.take() {
        let (done, fired) = oneshot::channel();
        pipes_done.push(done);
        pumps.push(AbortOnDrop(tokio::spawn(pump_until(
            err,
            Stream::Host,
            launch,
            tx,
            fired,
        ))));
    }
    let watch = gdbstub::spawn(
        gdb,
        GDB_PATIENCE,
        load,
        args::code_region_is_ram(&spec.machine),
    );

    let mut session = Session {
        launch,
        may_exit,
        child,
        rx,
        rx_open: true,
        pipes_done,
        status: None,
        exit_reported: false,
        wait_error: None,
        cancel: run.cancel.clone(),
        log,
        store: LineStore::new(StoreLimits::default()),
        events,
        attempt: run.attempt,
        detector: run.detector,
        gate: NonceGate::new(run.nonce),
        stderr: StderrWatcher::new(),
        noise: HostFilter::new(),
        watch,
        reports_open: true,
        armed: false,
        vector_notes: Vec::new(),
        vector_stores: Vec::new(),
        misfits: Vec::new(),
        watch_failed: None,
        fault: None,
        fault_seen: false,
        settled: false,
        after_assertion: Settle::default(),
        verdict: false,
        lockup_alarm: false,
        uart_seen: false,
        stderr_head: Vec::new(),
        program_prefix: args::program_prefix(program),
    };
    let ending = session.capture(launch + run.timeout).await;

    // 4. Stop everything, whatever happened above.
    let exited_by_itself = session.status.is_some();
    killer.kill();
    let tearing_down = session.exit_reported;
    if !tearing_down {
        session.reap().await;
        if session.exited() {
            killer.disarm();
            let _ = std::fs::remove_file(&qmp);
        }
    }
    session.drain().await;
    for mut pump in pumps {
        if let Ok(Ok(Err(e))) = timeout(DRAIN_BUDGET, &mut pump.0).await {
            session.warn(format!("reading QEMU's output failed: {e}"));
        }
    }
    session.flush_noise().await;
    let exit = session.status.map(|s| exit_info(&s));
    let (end, mut fault, stopped_at) = match session.conclude(ending, exit) {
        Ok(concluded) => concluded,
        Err(not_run) => {
            // QEMU's own words stay in console.log as well as in the error.
            let _ = session.log.finish().await;
            return Err(match not_run {
                NotRun::Refused => {
                    args::start_failure(program, spec, &kernel, &session.stderr_head)
                }
                NotRun::Unwatched(why) => DutError::StartFailed {
                    program: program.to_string(),
                    message: format!(
                        "fwfix could not reach QEMU's gdbstub to watch the core for faults: {why}"
                    ),
                },
            });
        }
    };
    if let Some(snapshot) = fault.as_mut() {
        snapshot.notes.extend(session.misfits.iter().cloned());
    }
    // The firmware's exit status: only when QEMU exited by itself, and not when it was told to.
    let exit_code = match end {
        RunEnd::RunnerDied { .. } => None,
        _ if exited_by_itself => exit.and_then(|e| e.code),
        _ => None,
    };

    let Session {
        log,
        store,
        gate,
        armed,
        child,
        ..
    } = session;
    if tearing_down {
        // Killed above, and what it wrote is read: its teardown (3-11 ms on a loaded host)
        // need not delay the result.
        crate::process::reap_later(child, killer, move || {
            let _ = std::fs::remove_file(&qmp);
        });
    }
    finish_log(log).await?;
    let mut capture = capture_of(store, launch, end, fault, stopped_at, exit_code, gate);
    // Breakpoints on the fault handlers, and QEMU's own word on a lockup.
    capture.faults_watched = armed;
    Ok(capture)
}

fn exit_info(status: &ExitStatus) -> ExitInfo {
    ExitInfo {
        code: status.code(),
        signal: status.signal(),
    }
}

/// How an attempt ended: the end, the crash snapshot, where a hung core was.
type Concluded = (RunEnd, Option<FaultSnapshot>, Option<FaultSnapshot>);

/// Why an attempt has no result: the firmware never ran.
enum NotRun {
    /// QEMU refused to start (its arguments, the kernel, the machine).
    Refused,
    /// The gdbstub never answered, so the paused core was never let run.
    Unwatched(String),
}

/// How the capture phase ended, with what that ending needs.
enum Ending {
    Verdict,
    /// QEMU ended by itself: classified from its exit status once the pipes are drained.
    Exited,
    Crashed(FaultSnapshot),
    Timeout(Option<FaultSnapshot>),
    /// The console settled after a failed assertion (with where the core then was).
    Stopped {
        quiet_ms: u64,
        at: Option<FaultSnapshot>,
    },
    Cancelled,
    /// The gdbstub could not be reached, so the paused core never ran.
    WatchFailed(String),
}

/// What one round of waiting produced.
enum Step<T> {
    Done(T),
    Line,
    Exited,
    Cancelled,
}

struct Session<'a> {
    launch: Instant,
    /// The image has a semihosting call, so it may exit with a code worth waiting for.
    may_exit: bool,
    child: Child,
    rx: mpsc::Receiver<ConsoleLine>,
    rx_open: bool,
    /// Fired to have the pumps read what the pipes hold and end, without waiting for their EOF.
    pipes_done: Vec<oneshot::Sender<()>>,
    /// QEMU's exit status: its own, or the one its gdbstub reported (`exit_reported`).
    status: Option<ExitStatus>,
    /// The gdbstub reported the image's exit: QEMU wrote all it will write, and is tearing down
    /// but may not be reaped yet.
    exit_reported: bool,
    wait_error: Option<std::io::Error>,
    cancel: CancellationToken,
    log: ConsoleLog,
    store: LineStore,
    events: &'a dyn EventSink,
    attempt: u32,
    detector: Box<dyn EndDetector>,
    gate: NonceGate,
    stderr: StderrWatcher,
    noise: HostFilter,
    watch: Watch,
    reports_open: bool,
    /// The watcher set its breakpoints and let the core run.
    armed: bool,
    /// What the vector table left unwatched, for a crash the breakpoints could not see.
    vector_notes: Vec<String>,
    /// The firmware's stores into the watched fault vectors, for the crash.
    vector_stores: Vec<VectorStore>,
    /// Why the image does not fit the machine: said with every crash.
    misfits: Vec<String>,
    /// The watcher failed before the core ran.
    watch_failed: Option<String>,
    /// The crash read at a fault handler's entry, until the ending takes it.
    fault: Option<FaultSnapshot>,
    fault_seen: bool,
    /// The fault handler only spins: nothing more will come.
    settled: bool,
    /// The quiet window after a failed assertion on the console.
    after_assertion: Settle,
    verdict: bool,
    lockup_alarm: bool,
    uart_seen: bool,
    stderr_head: Vec<String>,
    /// QEMU's own error lines start with this (`qemu-system-arm: `).
    program_prefix: String,
}

impl Session<'_> {
    /// 2 and 3: captures until the attempt's ending is decided and finished.
    async fn capture(&mut self, timeout_at: Instant) -> Ending {
        let mut timer = pin!(sleep_until(timeout_at));
        loop {
            // Woken by the timeout or by the end of a settle window, whichever comes first.
            let settle_at = self.after_assertion.deadline().map(|d| self.launch + d);
            timer
                .as_mut()
                .reset(settle_at.map_or(timeout_at, |at| at.min(timeout_at)));
            match self.step(&mut timer).await {
                Step::Cancelled => return Ending::Cancelled,
                Step::Done(()) => {
                    if let Some(RunEnd::Stopped { quiet_ms }) =
                        self.after_assertion.end(self.launch.elapsed())
                    {
                        return self.at_stop(quiet_ms).await;
                    }
                    if Instant::now() >= timeout_at {
                        return self.at_timeout().await;
                    }
                }
                Step::Exited => {
                    self.drain().await;
                    return Ending::Exited;
                }
                Step::Line => {}
            }
            if let Some(snapshot) = self.fault.take() {
                if !self.settled {
                    self.keep_capturing(EXIT_GRACE, true).await;
                }
                return Ending::Crashed(snapshot);
            }
            if self.lockup_alarm {
                return Ending::Crashed(self.await_lockup().await);
            }
            if let Some(why) = self.watch_failed.take() {
                // A QEMU that refused to start is gone in a moment; one that runs without
                // its watcher would sit paused until the timeout.
                self.keep_capturing(START_WAIT, false).await;
                if self.exited() {
                    return Ending::Exited;
                }
                return Ending::WatchFailed(why);
            }
            if self.verdict {
                self.grace().await;
                return Ending::Verdict;
            }
        }
    }

    /// Waits for one of: a line or a watcher report (handled), QEMU's exit, cancellation, or
    /// `fut`. `fut` (a timer or a reading) is polled before the lines, so a firmware flooding its
    /// console cannot starve the timeout.
    async fn step<F: Future + Unpin>(&mut self, fut: &mut F) -> Step<F::Output> {
        tokio::select! {
            biased;
            _ = self.cancel.cancelled() => Step::Cancelled,
            out = fut => Step::Done(out),
            report = self.watch.reports.recv(), if self.reports_open => {
                match report {
                    // The gdbstub's `W` packet, sent by the same QEMU thread after every byte
                    // the image wrote (QEMU's UARTs and semihosting write synchronously): all
                    // of its output is in the pipes now, and the status is the one QEMU exits
                    // with.
                    Some(Report::Exited(code)) if !self.exited() => {
                        self.status = Some(ExitStatus::from_raw(i32::from(code) << 8));
                        self.exit_reported = true;
                        return Step::Exited;
                    }
                    Some(report) => self.on_report(report).await,
                    None => self.reports_open = false,
                }
                Step::Line
            }
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

    async fn on_report(&mut self, report: Report) {
        match report {
            Report::Armed(handlers) => {
                self.armed = true;
                self.vector_notes = handlers.notes;
            }
            Report::Fault { reading, spinning } => {
                let mut snapshot = snapshot_at_entry(&reading);
                let errors: Vec<&str> = self.stderr.guest_errors().collect();
                if !errors.is_empty() {
                    snapshot
                        .raw
                        .push_str("\n-- QEMU's guest errors before the fault --\n");
                    snapshot.raw.push_str(&errors.join("\n"));
                }
                let t_ms = self.launch.elapsed().as_millis() as u64;
                self.keep_host(ConsoleLine {
                    t_ms,
                    stream: Stream::Host,
                    text: cortex_m::fault_line(&snapshot),
                })
                .await;
                self.fault = Some(snapshot);
                self.fault_seen = true;
                self.settled = spinning;
            }
            Report::Moved { table, handlers } => {
                // Where a vector with no handler sends the core is watched too, but is no
                // handler.
                let watched: Vec<String> = handlers
                    .entries
                    .iter()
                    .filter(|(_, vectors)| vectors.iter().any(|n| !handlers.dead_ends.contains(n)))
                    .map(|(addr, _)| format!("0x{addr:08x}"))
                    .collect();
                self.events.emit(&Event::Message {
                    level: Level::Info,
                    text: format!(
                        "the firmware moved its vector table to 0x{table:08x} (VTOR) {} ms after \
                         launch: fault handlers watched there{}",
                        self.launch.elapsed().as_millis(),
                        if watched.is_empty() {
                            " (none: it has no fault handler)".to_string()
                        } else {
                            format!(" at {}", watched.join(", "))
                        }
                    ),
                });
                self.vector_notes = handlers.notes;
            }
            // A copy into the RAM table, a handler installed there, a stray store: said as it
            // happens, kept for the crash, and what the notes say of the vectors (an empty or
            // invalid entry) is what a lockup report needs.
            Report::Rewritten { stores, handlers } => {
                for store in &stores {
                    let (level, what) = if handlers.dead_ends.contains(&store.vector) {
                        (Level::Warning, "which names no handler the core can run")
                    } else {
                        (Level::Info, "a handler")
                    };
                    self.events.emit(&Event::Message {
                        level,
                        text: format!(
                            "the store at 0x{:08x} overwrote the {} vector of the vector table \
                             at 0x{:08x}: 0x{:08x} -> 0x{:08x}, {what}",
                            store.pc,
                            cortex_m::exception_name(store.vector),
                            store.table,
                            store.old,
                            store.new
                        ),
                    });
                }
                self.vector_stores.extend(stores);
                self.vector_notes = handlers.notes;
            }
            Report::Settled => self.settled = true,
            // QEMU had already been reaped.
            Report::Exited(_) => {}
            Report::Note(text) => self.warn(text),
            Report::Misfit(text) => {
                self.warn(text.clone());
                self.misfits.push(text);
            }
            Report::Lost(why) => {
                if !self.armed {
                    self.watch_failed = Some(why);
                }
                self.reports_open = false;
            }
        }
    }

    /// One line: to console.log, to the event sink, to memory, to the detector (UART) or the
    /// stderr watcher and the noise filter (host).
    async fn take(&mut self, line: ConsoleLine) {
        match line.stream {
            Stream::Uart => {
                let live =
                    admit_line(&line, &mut self.gate, &self.log, self.events, self.attempt).await;
                self.uart_seen = true;
                // Also after the verdict: the detector is the harness's parse.
                let read = if live {
                    self.detector.read_line(&line.text)
                } else {
                    LineRead::default()
                };
                self.verdict |= read.verdict;
                if live {
                    self.after_assertion.line(read, self.launch.elapsed());
                }
                self.store.push_read(line, read.keep);
            }
            Stream::Host => {
                if self.stderr_head.len() < STDERR_HEAD {
                    self.stderr_head.push(line.text.clone());
                }
                if self.stderr.feed(&line.text) {
                    self.lockup_alarm = true;
                }
                for text in self.noise.admit(&line.text, line.t_ms) {
                    self.keep_host(ConsoleLine {
                        text,
                        ..line.clone()
                    })
                    .await;
                }
            }
        }
    }

    async fn keep_host(&mut self, line: ConsoleLine) {
        admit_line(&line, &mut self.gate, &self.log, self.events, self.attempt).await;
        self.store.push(line);
    }

    /// The counts of host lines the noise filter left out at the end, into console.log.
    async fn flush_noise(&mut self) {
        let t_ms = self.launch.elapsed().as_millis() as u64;
        for text in self.noise.finish() {
            self.keep_host(ConsoleLine {
                t_ms,
                stream: Stream::Host,
                text,
            })
            .await;
        }
    }

    /// Lets QEMU run for [`EXIT_GRACE`] so a semihosting exit (and its code) can arrive, when the
    /// image can exit at all.
    async fn grace(&mut self) {
        if self.may_exit {
            self.keep_capturing(EXIT_GRACE, false).await;
        }
    }

    /// Goes on capturing for `pause`, or until QEMU exits (its output then drained), the attempt
    /// is cancelled or, with `until_settled`, the fault handler settles in a loop.
    async fn keep_capturing(&mut self, pause: Duration, until_settled: bool) {
        let mut timer = pin!(sleep(pause));
        loop {
            match self.step(&mut timer).await {
                Step::Line if until_settled && self.settled => return,
                Step::Line => {}
                Step::Exited => return self.drain().await,
                Step::Done(()) | Step::Cancelled => return,
            }
        }
    }

    /// QEMU announced a lockup and is aborting: wait for it and read its register dump.
    async fn await_lockup(&mut self) -> FaultSnapshot {
        self.keep_capturing(LOCKUP_WAIT, false).await;
        let mut snap = self
            .stderr
            .snapshot_from_log("QEMU aborted on the lockup; no fault handler entry was stopped at");
        snap.notes.extend(self.vector_notes.iter().cloned());
        snap
    }

    /// The timeout: stop the core and read where it is, so a hang can be located. A core found
    /// in a fault handler crashed where the breakpoints could not see it.
    async fn at_timeout(&mut self) -> Ending {
        self.halt_and_read("hung").await
    }

    /// Stops the core and reads where it is; `what` says, in the warning when that cannot be
    /// read, what the firmware did there (`hung`, `stopped after its assertion`).
    async fn halt_and_read(&mut self, what: &str) -> Ending {
        if !self.armed {
            // The core was never let run: no hang of the firmware's.
            return Ending::WatchFailed(format!(
                "its gdbstub had not answered when the test timeout ran out ({} ms after launch)",
                self.launch.elapsed().as_millis()
            ));
        }
        if !self.reports_open {
            self.warn(format!(
                "could not read where the firmware {what}: the gdbstub is gone"
            ));
            return Ending::Timeout(None);
        }
        let (tx, rx) = oneshot::channel();
        if self.watch.commands.send(Command::Halt(tx)).await.is_err() {
            self.warn(format!(
                "could not read where the firmware {what}: the gdbstub is gone"
            ));
            return Ending::Timeout(None);
        }
        let mut reading = pin!(timeout(HANG_READ_BUDGET, rx));
        loop {
            match self.step(&mut reading).await {
                Step::Line => {}
                Step::Done(Ok(Ok(Ok(stop)))) => return self.stopped(&stop),
                Step::Done(Ok(Ok(Err(why)))) => {
                    self.warn(format!("could not read where the firmware {what}: {why}"));
                    return Ending::Timeout(None);
                }
                Step::Done(Ok(Err(_))) => {
                    self.warn(format!(
                        "could not read where the firmware {what}: the gdbstub is gone"
                    ));
                    return Ending::Timeout(None);
                }
                Step::Done(Err(_)) => {
                    self.warn(format!(
                        "could not read where the firmware {what}: no gdbstub answer within {} ms",
                        HANG_READ_BUDGET.as_millis()
                    ));
                    return Ending::Timeout(None);
                }
                Step::Exited | Step::Cancelled => return Ending::Timeout(None),
            }
        }
    }

    /// The console settled after a failed assertion: read where the core is, as at the timeout
    /// (a core found in a fault handler crashed there after all).
    async fn at_stop(&mut self, quiet_ms: u64) -> Ending {
        match self.halt_and_read("stopped after its assertion").await {
            Ending::Timeout(at) => Ending::Stopped { quiet_ms, at },
            other => other,
        }
    }

    fn stopped(&mut self, stop: &StopReading) -> Ending {
        match cortex_m::conclude(stop) {
            Some(Stop::Faulted(mut snap)) => {
                snap.notes.push(
                    "the core was found in a fault handler at the timeout: the fault was not \
                     stopped at a handler's entry, so the frame was searched for on the stack"
                        .into(),
                );
                snap.notes.extend(self.vector_notes.iter().cloned());
                self.fault_seen = true;
                Ending::Crashed(snap)
            }
            Some(Stop::Running(snap)) => Ending::Timeout(Some(snap)),
            None => Ending::Timeout(None),
        }
    }

    /// Reads every line still in the pipes, within a budget. QEMU has exited, reported its exit or
    /// been killed: what the pipes hold now is all there is, so the pumps read it without waiting
    /// for QEMU to close them.
    async fn drain(&mut self) {
        for done in self.pipes_done.drain(..) {
            let _ = done.send(());
        }
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

    /// The attempt's end with its fault and stopped-at snapshots, or why the firmware never ran.
    fn conclude(&self, ending: Ending, exit: Option<ExitInfo>) -> Result<Concluded, NotRun> {
        Ok(match ending {
            Ending::Verdict => (RunEnd::Verdict, None, None),
            Ending::Cancelled => (RunEnd::Cancelled, None, None),
            Ending::WatchFailed(why) => return Err(NotRun::Unwatched(why)),
            Ending::Timeout(snapshot) => (RunEnd::Timeout, None, snapshot),
            Ending::Stopped { quiet_ms, at } => (RunEnd::Stopped { quiet_ms }, None, at),
            Ending::Crashed(mut snapshot) => {
                snapshot.vector_stores.clone_from(&self.vector_stores);
                if self.stderr.lockup() && !snapshot.lockup {
                    snapshot.lockup = true;
                    snapshot.notes.push(
                        "the fault handler then faulted itself and the core locked up".into(),
                    );
                    snapshot
                        .raw
                        .push_str("\n-- the fault handler then locked up --\n");
                    snapshot.raw.push_str(&self.stderr.log_text());
                }
                (RunEnd::Crashed, Some(snapshot), None)
            }
            Ending::Exited => match self.classify(exit) {
                ExitClass::StartFailure => return Err(NotRun::Refused),
                ExitClass::RunnerDied { signal, code } => {
                    (RunEnd::RunnerDied { signal, code }, None, None)
                }
                ExitClass::Crashed => {
                    let mut snap = self
                        .stderr
                        .snapshot_from_log("QEMU ended before the fault could be read");
                    snap.notes.extend(self.vector_notes.iter().cloned());
                    snap.vector_stores.clone_from(&self.vector_stores);
                    (RunEnd::Crashed, Some(snap), None)
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
            terminated_by: self.stderr.terminated_by(),
            lockup: self.stderr.lockup(),
            fault_seen: self.fault_seen,
            verdict_seen: self.verdict,
            uart_seen: self.uart_seen,
            guest_ran: self.armed,
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
