//! One attempt through a debug probe, from attaching to a closed probe. Outline:
//!
//! 1. Open console.log and flash.log; read the ELF's defmt table when the console is RTT; open
//!    the `[serial]` console first when the board has one, so nothing the image prints is lost.
//! 2. On one blocking thread (probe-rs is blocking): open the probe and attach, flash with
//!    progress (into flash.log and `FlashProgress` events), reset and run with HardFault caught.
//!    A failure in these steps is a [`DutError::Flash`] with flash.log's lines.
//! 3. The same thread polls the core and RTT up channel 0: bytes go to the async side, which
//!    turns them into lines (defmt or text), logs, emits and feeds them to the end detector. A
//!    semihosting command-line request is answered with the run's `append` text (the run nonce),
//!    exactly as QEMU answers it.
//! 4. The attempt ends at the verdict (a short grace for the exit code, then the image is left
//!    running and the probe detached), a semihosting exit (its code), a HardFault caught on entry
//!    or a lockup (registers, stacked frame and SCB fault registers read into a
//!    [`FaultSnapshot`], the same evidence as QEMU's), a breakpoint, the timeout (core halted,
//!    PC read for the hang site), cancellation (core halted), or a lost serial console.
//! 5. The probe is closed when the thread ends, on every path.
//!
//! It owns the timing policy and the meaning of a halt; probe calls are `ProbeSession`'s.

use super::console::{self, RttDecoder};
use super::{AttachRequest, CoreState, FlashEvent, Halt, ProbeDriver, ProbeError, ProbeSession};
use crate::capture::log::ConsoleLog;
use crate::capture::nonce::{command_line, NonceGate};
use crate::capture::store::{LineStore, StoreLimits};
use crate::capture::{Capture, ConsoleLine, EndDetector, FaultSnapshot, RunEnd, Stream};
use crate::dut::board::serial::{self, PortEvent, PortSpec};
use crate::dut::cortex_m::{self, conclude, Stop, StopReading, SCB_CFSR};
use crate::dut::session::{admit_line, capture_of, create_log, finish_log};
use crate::dut::{flash_log_path, DutError, Image, RunSpec};
use crate::events::{Event, EventSink, Level};
use crate::process::AbortOnDrop;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::time::{sleep_until, Instant};

/// How often the core and RTT are polled when RTT had nothing new.
const POLL: Duration = Duration::from_millis(10);
/// After the verdict, how long the image gets to exit through semihosting.
const EXIT_GRACE: Duration = Duration::from_millis(300);
/// How long after reset the image gets to set up its RTT control block before a warning.
const RTT_SETUP: Duration = Duration::from_secs(5);
/// The most RTT bytes read in one go.
const RTT_CHUNK: usize = 1024;

/// Where the console comes from while the probe flashes and watches the core.
#[derive(Debug, Clone)]
pub(crate) enum ProbeConsole {
    Rtt,
    Serial { port: PortSpec, reconnect: u32 },
}

/// What the backend knows about the board.
pub(crate) struct ProbeTarget {
    pub describe: String,
    pub request: AttachRequest,
    pub console: ProbeConsole,
}

/// What the probe thread tells the attempt.
enum Msg {
    Note(String),
    Flash(FlashEvent),
    Started,
    Rtt(Vec<u8>),
    Warn(String),
}

/// What the attempt asks the probe thread to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Request {
    /// The harness printed its verdict: wait briefly for an exit, then leave the image running.
    Verdict,
    /// Halt and read where the core is.
    Timeout,
    /// Halt and stop.
    Cancel,
}

/// How the probe thread ended the attempt.
#[derive(Debug)]
enum Ended {
    Exited(i32),
    Faulted(FaultSnapshot),
    Breakpoint(FaultSnapshot),
    TimedOut(Option<FaultSnapshot>),
    AfterVerdict { exit: Option<i32> },
    Cancelled,
}

enum WorkerError {
    Flash(ProbeError),
    Probe(ProbeError),
}

/// Runs one attempt.
pub(crate) async fn run(
    driver: Arc<dyn ProbeDriver>,
    target: ProbeTarget,
    image: &Image,
    run: RunSpec,
    events: &dyn EventSink,
) -> Result<Capture, DutError> {
    let elf = std::path::absolute(&image.elf).unwrap_or_else(|_| image.elf.clone());
    let flash_path = flash_log_path(&run.console_log);
    let log = create_log(&run.console_log).await?;
    let flash_log = create_log(&flash_path).await?;
    let warn = |text: String| {
        events.emit(&Event::Message {
            level: Level::Warning,
            text,
        })
    };

    // 1. The defmt table, and the serial console when there is one.
    let table = match &target.console {
        ProbeConsole::Rtt => match tokio::fs::read(&elf).await {
            Ok(bytes) => console::defmt_table(&bytes).unwrap_or_else(|e| {
                warn(format!(
                    "{} has a .defmt section fwfix cannot read ({e}); RTT is shown as text",
                    elf.display()
                ));
                None
            }),
            Err(source) => {
                let _ = log.finish().await;
                let _ = flash_log.finish().await;
                return Err(DutError::Io {
                    doing: format!("reading {}", elf.display()),
                    source,
                });
            }
        },
        ProbeConsole::Serial { .. } => None,
    };
    let decoder = match &table {
        Some((table, locations)) => RttDecoder::defmt(table, locations.as_ref()),
        None => RttDecoder::text(),
    };
    let launch = Instant::now();
    let (serial_rx, port_rx, reader, shown) = match &target.console {
        ProbeConsole::Rtt => (None, None, None, "RTT".to_string()),
        ProbeConsole::Serial { port, reconnect } => match serial::open(port, false).await {
            Ok(console) => {
                let (line_tx, line_rx) = mpsc::channel(256);
                let (port_tx, port_rx) = mpsc::channel(8);
                let reader = serial::spawn_reader(
                    console.reader,
                    port.clone(),
                    *reconnect,
                    launch,
                    line_tx,
                    port_tx,
                );
                (
                    Some(line_rx),
                    Some(port_rx),
                    Some(reader),
                    serial::describe(&port.port),
                )
            }
            Err(e) => {
                let _ = log.finish().await;
                let _ = flash_log.finish().await;
                return Err(e);
            }
        },
    };

    // 2 and 3 on the probe thread.
    let (msg_tx, msg_rx) = mpsc::unbounded_channel();
    let (stop_tx, stop_rx) = watch::channel(None);
    let plan = Plan {
        request: target.request.clone(),
        elf: elf.clone(),
        rtt: matches!(target.console, ProbeConsole::Rtt),
        append: command_line(run.nonce.as_ref(), run.append.as_deref()),
    };
    let worker = AbortOnDrop(tokio::task::spawn_blocking(move || {
        drive(driver.as_ref(), &plan, &msg_tx, &stop_rx)
    }));

    let mut attempt = Attempt {
        launch,
        log,
        flash_log,
        flash_lines: Vec::new(),
        flash_phase: None,
        store: LineStore::new(StoreLimits::default()),
        events,
        attempt: run.attempt,
        detector: run.detector,
        verdict: false,
        gate: NonceGate::new(run.nonce.clone()),
        decoder,
        stop: stop_tx,
        port_lost: false,
        shown,
        describe: target.describe,
    };
    let ended = attempt
        .watch(worker, msg_rx, serial_rx, port_rx, run.timeout, &run.cancel)
        .await;
    drop(reader);

    // 5. The probe thread has ended, and with it the probe.
    let Attempt {
        log,
        flash_log,
        flash_lines,
        store,
        verdict,
        port_lost,
        gate,
        ..
    } = attempt;
    let flash_done = finish_log(flash_log).await;
    let log_done = finish_log(log).await;
    let (end, fault, stopped_at, exit) = match ended {
        Err(WorkerError::Flash(e)) => {
            return Err(DutError::Flash {
                method: "probe-rs".into(),
                message: e.to_string(),
                log: flash_lines.join("\n"),
            })
        }
        Err(WorkerError::Probe(e)) => return Err(DutError::Probe(e)),
        Ok(ended) => conclude_attempt(ended, verdict, port_lost),
    };
    flash_done?;
    log_done?;
    Ok(capture_of(
        store, launch, end, fault, stopped_at, exit, gate,
    ))
}

type Concluded = (
    RunEnd,
    Option<FaultSnapshot>,
    Option<FaultSnapshot>,
    Option<i32>,
);

/// The attempt's end from how the probe thread ended and what the console showed.
fn conclude_attempt(ended: Ended, verdict: bool, port_lost: bool) -> Concluded {
    match ended {
        Ended::Exited(code) if verdict => (RunEnd::Verdict, None, None, Some(code)),
        Ended::Exited(code) => (RunEnd::Exited { code }, None, None, Some(code)),
        Ended::Faulted(snap) | Ended::Breakpoint(snap) => (RunEnd::Crashed, Some(snap), None, None),
        Ended::TimedOut(at) => (RunEnd::Timeout, None, at, None),
        Ended::AfterVerdict { exit } => (RunEnd::Verdict, None, None, exit),
        Ended::Cancelled if port_lost => (RunEnd::PortLost, None, None, None),
        Ended::Cancelled => (RunEnd::Cancelled, None, None, None),
    }
}

struct Attempt<'a> {
    launch: Instant,
    log: ConsoleLog,
    flash_log: ConsoleLog,
    /// Everything written to flash.log, for a flash error.
    flash_lines: Vec<String>,
    /// The phase being flashed: name, total bytes, bytes done, last percent shown.
    flash_phase: Option<(&'static str, Option<u64>, u64, Option<u8>)>,
    store: LineStore,
    events: &'a dyn EventSink,
    attempt: u32,
    detector: Box<dyn EndDetector>,
    verdict: bool,
    /// Sorts lines into this attempt's and those left from an earlier run.
    gate: NonceGate,
    decoder: RttDecoder<'a>,
    stop: watch::Sender<Option<Request>>,
    port_lost: bool,
    /// The console as messages name it.
    shown: String,
    describe: String,
}

impl Attempt<'_> {
    /// Handles what the probe thread and the console send until the thread ends.
    async fn watch(
        &mut self,
        mut worker: AbortOnDrop<Result<Ended, WorkerError>>,
        mut msgs: mpsc::UnboundedReceiver<Msg>,
        mut serial: Option<mpsc::Receiver<ConsoleLine>>,
        mut ports: Option<mpsc::Receiver<PortEvent>>,
        timeout: Duration,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<Ended, WorkerError> {
        let mut timeout_at: Option<Instant> = None;
        let mut asked: Option<Request> = None;
        let mut msgs_open = true;
        let ended = loop {
            let deadline = timeout_at.unwrap_or_else(|| Instant::now() + timeout);
            tokio::select! {
                biased;
                _ = cancel.cancelled(), if asked != Some(Request::Cancel) => {
                    asked = Some(Request::Cancel);
                    let _ = self.stop.send(Some(Request::Cancel));
                }
                _ = sleep_until(deadline), if timeout_at.is_some() && asked.is_none() => {
                    asked = Some(Request::Timeout);
                    let _ = self.stop.send(Some(Request::Timeout));
                }
                msg = msgs.recv(), if msgs_open => match msg {
                    Some(Msg::Started) => {
                        timeout_at = Some(Instant::now() + timeout);
                        self.events.emit(&Event::BootStarted {
                            target: self.describe.clone(),
                            attempt: self.attempt,
                        });
                    }
                    Some(msg) => self.take_msg(msg).await,
                    // The thread is done: its result is next.
                    None => msgs_open = false,
                },
                line = recv(&mut serial) => match line {
                    Some(line) => self.take(line).await,
                    None => serial = None,
                },
                event = recv(&mut ports) => match event {
                    Some(PortEvent::Gone { why }) => {
                        let text = format!("fwfix: console {} closed ({why})", self.shown);
                        self.host_line(text.clone()).await;
                        if !self.verdict && asked.is_none() {
                            self.warn(text);
                            self.port_lost = true;
                            asked = Some(Request::Cancel);
                            let _ = self.stop.send(Some(Request::Cancel));
                        }
                    }
                    Some(PortEvent::Lost { why }) => {
                        let text = format!("fwfix: console {} lost ({why}); opening it again", self.shown);
                        self.host_line(text).await;
                    }
                    Some(PortEvent::Reopened { n }) => {
                        let text = format!("fwfix: console {} open again (reconnect {n})", self.shown);
                        self.host_line(text).await;
                    }
                    None => ports = None,
                },
                done = &mut worker.0 => {
                    break done.unwrap_or_else(|e| Err(WorkerError::Probe(ProbeError::Core {
                        doing: "running the probe thread".into(),
                        message: e.to_string(),
                    })));
                }
            }
            if self.verdict && asked.is_none() {
                asked = Some(Request::Verdict);
                let _ = self.stop.send(Some(Request::Verdict));
            }
        };
        // What the thread sent last, and a last unterminated line.
        while let Ok(msg) = msgs.try_recv() {
            if !matches!(msg, Msg::Started) {
                self.take_msg(msg).await;
            }
        }
        if let Some(text) = self.decoder.finish() {
            self.uart_line(text).await;
        }
        if let Some(rx) = serial.as_mut() {
            while let Ok(line) = rx.try_recv() {
                self.take(line).await;
            }
        }
        ended
    }

    async fn take_msg(&mut self, msg: Msg) {
        match msg {
            Msg::Note(text) => self.flash_line(format!("fwfix: {text}"), None).await,
            Msg::Warn(text) => {
                self.flash_line(format!("fwfix: {text}"), None).await;
                self.warn(text);
            }
            Msg::Flash(event) => self.flash_event(event).await,
            Msg::Rtt(bytes) => {
                for text in self.decoder.push(&bytes) {
                    self.uart_line(text).await;
                }
            }
            Msg::Started => {}
        }
    }

    /// A flash step: every start, end and message into flash.log and as an event, progress as
    /// an event each time its percentage changes.
    async fn flash_event(&mut self, event: FlashEvent) {
        match event {
            FlashEvent::Started { phase, total } => {
                self.flash_phase = Some((phase, total, 0, None));
                self.flash_line(format!("{phase}: started"), Some((phase, Some(0))))
                    .await;
            }
            FlashEvent::Progress { phase, bytes } => {
                let Some((current, total, done, shown)) = self.flash_phase.as_mut() else {
                    return;
                };
                if *current != phase {
                    return;
                }
                *done += bytes;
                let percent = total
                    .filter(|t| *t > 0)
                    .map(|t| ((*done).min(t) * 100 / t) as u8);
                if percent.is_some() && percent != *shown {
                    *shown = percent;
                    let line = match total {
                        Some(t) => format!("{phase}: {done}/{t} bytes"),
                        None => format!("{phase}: {done} bytes"),
                    };
                    self.events.emit(&Event::FlashProgress {
                        phase: phase.to_string(),
                        percent,
                        line,
                    });
                }
            }
            FlashEvent::Finished { phase } => {
                self.flash_line(format!("{phase}: done"), Some((phase, Some(100))))
                    .await;
            }
            FlashEvent::Failed { phase } => {
                self.flash_line(format!("{phase}: failed"), Some((phase, None)))
                    .await;
            }
            FlashEvent::Message(text) => self.flash_line(text, None).await,
        }
    }

    /// A line for flash.log, and a progress event when it is a step of `phase`.
    async fn flash_line(&mut self, text: String, step: Option<(&str, Option<u8>)>) {
        let line = ConsoleLine {
            t_ms: self.launch.elapsed().as_millis() as u64,
            stream: Stream::Host,
            text: text.clone(),
        };
        self.flash_log.write(&line).await;
        if let Some((phase, percent)) = step {
            self.events.emit(&Event::FlashProgress {
                phase: phase.to_string(),
                percent,
                line: text.clone(),
            });
        }
        self.flash_lines.push(text);
    }

    async fn uart_line(&mut self, text: String) {
        let line = ConsoleLine {
            t_ms: self.launch.elapsed().as_millis() as u64,
            stream: Stream::Uart,
            text,
        };
        self.take(line).await;
    }

    async fn host_line(&mut self, text: String) {
        let line = ConsoleLine {
            t_ms: self.launch.elapsed().as_millis() as u64,
            stream: Stream::Host,
            text,
        };
        self.take(line).await;
    }

    /// One console line: to console.log, to the event sink, to memory, to the detector.
    async fn take(&mut self, line: ConsoleLine) {
        let live = admit_line(&line, &mut self.gate, &self.log, self.events, self.attempt).await;
        if line.stream == Stream::Uart
            && live
            && !self.verdict
            && self.detector.is_final(&line.text)
        {
            self.verdict = true;
        }
        self.store.push(line);
    }

    fn warn(&self, text: String) {
        self.events.emit(&Event::Message {
            level: Level::Warning,
            text,
        });
    }
}

async fn recv<T>(rx: &mut Option<mpsc::Receiver<T>>) -> Option<T> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

/// What the probe thread needs.
struct Plan {
    request: AttachRequest,
    elf: PathBuf,
    /// The console is RTT up channel 0.
    rtt: bool,
    /// The answer to the image's command-line request.
    append: Option<String>,
}

/// The probe thread: 2 to 4. Blocking.
fn drive(
    driver: &dyn ProbeDriver,
    plan: &Plan,
    tx: &mpsc::UnboundedSender<Msg>,
    stop: &watch::Receiver<Option<Request>>,
) -> Result<Ended, WorkerError> {
    let send = |msg: Msg| {
        let _ = tx.send(msg);
    };
    let requested = || *stop.borrow();
    send(Msg::Note(format!(
        "attaching to {} through {}",
        plan.request.chip,
        plan.request
            .selector
            .as_deref()
            .unwrap_or("the only probe connected")
    )));
    let mut session = driver.open(&plan.request).map_err(WorkerError::Probe)?;
    send(Msg::Note(format!(
        "attached through {}; flashing {}",
        session.describe(),
        plan.elf.display()
    )));
    if requested() == Some(Request::Cancel) {
        return Ok(Ended::Cancelled);
    }
    session
        .flash(&plan.elf, &mut |event| send(Msg::Flash(event)))
        .map_err(WorkerError::Flash)?;
    if requested() == Some(Request::Cancel) {
        return Ok(Ended::Cancelled);
    }
    session.reset_and_run().map_err(WorkerError::Flash)?;
    send(Msg::Note("reset; the image runs".into()));
    send(Msg::Started);
    watch_core(session.as_mut(), plan, &send, &requested).map_err(WorkerError::Probe)
}

/// 3 and 4: polls the core and RTT until the attempt's end is decided.
fn watch_core(
    session: &mut dyn ProbeSession,
    plan: &Plan,
    send: &dyn Fn(Msg),
    requested: &dyn Fn() -> Option<Request>,
) -> Result<Ended, ProbeError> {
    let started = std::time::Instant::now();
    let mut rtt_found = false;
    let mut rtt_warned = false;
    let mut verdict_until: Option<std::time::Instant> = None;
    let mut buf = vec![0u8; RTT_CHUNK];
    loop {
        match requested() {
            Some(Request::Cancel) => {
                session.halt()?;
                return Ok(Ended::Cancelled);
            }
            Some(Request::Timeout) => {
                session.halt()?;
                drain_rtt(session, rtt_found, &mut buf, send);
                return Ok(match conclude(&read_core(session)?) {
                    Some(Stop::Faulted(snap)) => Ended::Faulted(snap),
                    Some(Stop::Running(snap)) => Ended::TimedOut(Some(snap)),
                    None => Ended::TimedOut(None),
                });
            }
            Some(Request::Verdict) => {
                let until =
                    *verdict_until.get_or_insert_with(|| std::time::Instant::now() + EXIT_GRACE);
                if std::time::Instant::now() >= until {
                    return Ok(Ended::AfterVerdict { exit: None });
                }
            }
            None => {}
        }
        if plan.rtt && !rtt_found {
            rtt_found = session.rtt_attach()?.is_some();
            if !rtt_found && !rtt_warned && started.elapsed() >= RTT_SETUP {
                rtt_warned = true;
                send(Msg::Warn(format!(
                    "no RTT control block found {} s after reset: does the image set up RTT \
                     (e.g. rtt-target, SEGGER_RTT, defmt-rtt)?",
                    RTT_SETUP.as_secs()
                )));
            }
        }
        let mut got = 0;
        if rtt_found {
            got = session.rtt_read(0, &mut buf)?;
            if got > 0 {
                send(Msg::Rtt(buf[..got].to_vec()));
            }
        }
        match session.status()? {
            CoreState::Running => {}
            CoreState::Halted(Halt::Exit { code }) => {
                drain_rtt(session, rtt_found, &mut buf, send);
                return Ok(match verdict_until {
                    Some(_) => Ended::AfterVerdict { exit: Some(code) },
                    None => Ended::Exited(code),
                });
            }
            CoreState::Halted(Halt::CommandLine) => {
                session.answer_command_line(plan.append.as_deref().unwrap_or(""))?;
                session.resume()?;
                continue;
            }
            CoreState::Halted(Halt::Exception) => {
                drain_rtt(session, rtt_found, &mut buf, send);
                return Ok(Ended::Faulted(fault(session, false)?));
            }
            CoreState::LockedUp => {
                drain_rtt(session, rtt_found, &mut buf, send);
                return Ok(Ended::Faulted(fault(session, true)?));
            }
            CoreState::Halted(halt @ (Halt::Breakpoint | Halt::Request | Halt::Other(_))) => {
                drain_rtt(session, rtt_found, &mut buf, send);
                let reading = read_core(session)?;
                let mut snap = match conclude(&reading) {
                    Some(Stop::Faulted(snap)) => return Ok(Ended::Faulted(snap)),
                    Some(Stop::Running(snap)) => snap,
                    None => FaultSnapshot {
                        raw: reading.raw.clone(),
                        ..FaultSnapshot::default()
                    },
                };
                // Without a debugger to answer it, a breakpoint on a board is a HardFault: the
                // image stopped here.
                snap.raw = format!(
                    "core halted ({halt:?}) outside a fault handler\n{}",
                    snap.raw
                );
                return Ok(Ended::Breakpoint(snap));
            }
        }
        if got == 0 {
            std::thread::sleep(POLL);
        }
    }
}

/// Reads what RTT still holds after the core stopped.
fn drain_rtt(session: &mut dyn ProbeSession, rtt_found: bool, buf: &mut [u8], send: &dyn Fn(Msg)) {
    if !rtt_found {
        return;
    }
    while let Ok(n) = session.rtt_read(0, buf) {
        if n == 0 {
            break;
        }
        send(Msg::Rtt(buf[..n].to_vec()));
    }
}

/// The crash snapshot of a core stopped in a fault handler (or locked up).
fn fault(session: &mut dyn ProbeSession, lockup: bool) -> Result<FaultSnapshot, ProbeError> {
    let reading = read_core(session)?;
    let mut snap = match conclude(&reading) {
        Some(Stop::Faulted(snap)) => snap,
        // A locked-up core's xPSR may not name the fault: it is a crash all the same.
        Some(Stop::Running(snap)) => snap,
        None => FaultSnapshot {
            raw: reading.raw.clone(),
            ..FaultSnapshot::default()
        },
    };
    snap.lockup = lockup;
    if snap.exception.is_none() && !lockup {
        snap.exception = Some(3);
    }
    Ok(snap)
}

/// Registers, SCB fault status and the stack of a halted core, as the gdb and QEMU readers
/// gather them: a few stack words first, more when they hold no trustworthy frame.
fn read_core(session: &mut dyn ProbeSession) -> Result<StopReading, ProbeError> {
    let regs = session.read_registers()?;
    let scb = session.read_words(SCB_CFSR, 5).unwrap_or_default();
    let mut stack = Vec::new();
    if let Some(sp) = regs.sp() {
        stack = session
            .read_words(sp, cortex_m::STACK_WORDS_FIRST)
            .unwrap_or_default();
        let certain = cortex_m::locate_frame(&regs, &stack).is_ok_and(|f| f.is_certain());
        if !certain {
            if let Ok(more) = session.read_words(sp, cortex_m::STACK_WORDS_MORE) {
                stack = more;
            }
        }
    }
    let mut raw = String::from("-- registers (probe-rs) --\n");
    for (i, r) in regs.r.iter().enumerate() {
        if let Some(v) = r {
            let _ = writeln!(raw, "r{i:<2} 0x{v:08x}");
        }
    }
    if let Some(x) = regs.xpsr {
        let _ = writeln!(raw, "xpsr 0x{x:08x}");
    }
    let words = |w: &[u32]| {
        w.iter()
            .map(|v| format!("0x{v:08x}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let _ = writeln!(
        raw,
        "-- SCB (CFSR HFSR DFSR MMFAR BFAR) --\n{}\n-- stack --\n{}",
        words(&scb),
        words(&stack)
    );
    Ok(StopReading {
        regs,
        scb,
        stack,
        raw,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Board, BoardBackend, ConsoleSpec, FlashSpec, HardwareSpec, ProbeSpec};
    use crate::dut::board::BoardDut;
    use crate::dut::cortex_m::CoreRegs;
    use crate::dut::probe::fake::{FakeDriver, FakeEnd, FakeScript};
    use crate::dut::Dut;
    use crate::results::unity::UnityDetector;
    use std::sync::Mutex;
    use tokio_util::sync::CancellationToken;

    #[derive(Default)]
    struct Recorder(Mutex<Vec<Event>>);

    impl EventSink for Recorder {
        fn emit(&self, event: &Event) {
            self.0.lock().unwrap().push(event.clone());
        }
    }

    impl Recorder {
        fn flash(&self) -> Vec<(String, Option<u8>)> {
            self.0
                .lock()
                .unwrap()
                .iter()
                .filter_map(|e| match e {
                    Event::FlashProgress { phase, percent, .. } => Some((phase.clone(), *percent)),
                    _ => None,
                })
                .collect()
        }
    }

    const UNITY_PASS: &str = "tests/test_crc.c:10:test_crc:PASS\n\n\
                              -----------------------\n1 Tests 0 Failures 0 Ignored\nOK\n";

    fn board() -> Board {
        Board {
            name: "nucleo".into(),
            source: PathBuf::from("boards/nucleo.toml"),
            backend: BoardBackend::Hardware(HardwareSpec {
                flash: FlashSpec::ProbeRs(ProbeSpec {
                    chip: "STM32F401RETx".into(),
                    selector: None,
                    protocol: None,
                    speed_khz: None,
                    rtt: true,
                }),
                flash_timeout: Duration::from_secs(5),
                console: ConsoleSpec::Rtt,
                reset_command: None,
            }),
            power: None,
            health: None,
        }
    }

    struct Ran {
        result: Result<Capture, DutError>,
        events: Recorder,
        calls: Vec<String>,
        dir: tempfile::TempDir,
    }

    async fn attempt(script: FakeScript, timeout: Duration, cancel: CancellationToken) -> Ran {
        let driver = Arc::new(FakeDriver::new(script));
        let b = board();
        let BoardBackend::Hardware(spec) = &b.backend else {
            unreachable!()
        };
        let mut dut = BoardDut::with_probes(&b, spec.clone(), driver.clone()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let elf = dir.path().join("fw.elf");
        std::fs::write(&elf, b"not an ELF with defmt").unwrap();
        let events = Recorder::default();
        // The run's nonce reaches the image on its semihosting command line, as on QEMU.
        let spec = RunSpec {
            nonce: Some(crate::capture::nonce::Nonce {
                value: "abc123".into(),
                check: crate::capture::nonce::NonceCheck::Offered,
            }),
            timeout,
            detector: Box::new(UnityDetector::default()),
            console_log: dir.path().join("console.log"),
            append: None,
            cancel,
            attempt: 1,
        };
        let result = dut.run(&Image { elf }, spec, &events).await;
        Ran {
            result,
            events,
            calls: driver.calls(),
            dir,
        }
    }

    fn chunks(text: &str, size: usize) -> Vec<Vec<u8>> {
        text.as_bytes().chunks(size).map(<[u8]>::to_vec).collect()
    }

    fn long() -> Duration {
        Duration::from_secs(30)
    }

    #[tokio::test]
    async fn rtt_output_ends_at_the_verdict_with_the_exit_code_and_progress_in_order() {
        let script = FakeScript {
            rtt: chunks(UNITY_PASS, 7),
            rtt_missing_for: 2,
            asks_command_line: true,
            end: FakeEnd::Exit(0),
            ..FakeScript::default()
        };
        let ran = attempt(script, long(), CancellationToken::new()).await;
        let capture = ran.result.unwrap();
        assert_eq!(capture.end, RunEnd::Verdict);
        assert_eq!(capture.exit_code, Some(0));
        let text: Vec<&str> = capture.uart_lines().collect();
        assert_eq!(text.first(), Some(&"tests/test_crc.c:10:test_crc:PASS"));
        assert_eq!(text.last(), Some(&"OK"));
        // The image's command-line request got the run's nonce, before it ran on.
        let asked = ran.calls.iter().position(|c| c.starts_with("command line"));
        assert_eq!(
            ran.calls[asked.unwrap()],
            "command line \"fwfix-nonce=abc123\""
        );
        assert_eq!(
            ran.calls[..3],
            [
                "open 0483:374b:FAKE0001 STM32F401RETx",
                "flash",
                "reset_and_run"
            ]
        );
        assert_eq!(ran.calls.last().map(String::as_str), Some("close"));
        // Each phase starts at 0 %, climbs, and ends at 100 %, in probe-rs's order.
        let flash = ran.events.flash();
        let phases: Vec<&str> = flash.iter().map(|(p, _)| p.as_str()).collect();
        let mut order = phases.clone();
        order.dedup();
        assert_eq!(order, ["erase", "program", "verify"]);
        for phase in ["erase", "program", "verify"] {
            let percents: Vec<u8> = flash
                .iter()
                .filter(|(p, _)| p == phase)
                .filter_map(|(_, pc)| *pc)
                .collect();
            assert_eq!(percents.first(), Some(&0), "{phase}: {percents:?}");
            assert_eq!(percents.last(), Some(&100), "{phase}: {percents:?}");
            assert!(percents.windows(2).all(|w| w[0] <= w[1]), "{percents:?}");
        }
        let flash_log = std::fs::read_to_string(ran.dir.path().join("flash.log")).unwrap();
        assert!(flash_log.contains("program: done"), "{flash_log}");
        let console = std::fs::read_to_string(ran.dir.path().join("console.log")).unwrap();
        assert!(
            console.contains("1 Tests 0 Failures 0 Ignored"),
            "{console}"
        );
    }

    #[tokio::test]
    async fn a_semihosting_exit_without_a_verdict_carries_its_code() {
        for code in [0, 3] {
            let script = FakeScript {
                rtt: chunks("starting\nno verdict here\n", 5),
                end: FakeEnd::Exit(code),
                ..FakeScript::default()
            };
            let capture = attempt(script, long(), CancellationToken::new())
                .await
                .result
                .unwrap();
            assert_eq!(capture.end, RunEnd::Exited { code });
            assert_eq!(capture.exit_code, Some(code));
            assert_eq!(capture.uart_lines().count(), 2);
        }
    }

    fn fault_regs() -> CoreRegs {
        let mut regs = CoreRegs::default();
        regs.r[13] = Some(0x2000_0100);
        regs.r[14] = Some(0xFFFF_FFF9);
        regs.r[15] = Some(0x0000_0180);
        regs.xpsr = Some(0x0100_0003);
        regs
    }

    #[tokio::test]
    async fn a_hardfault_is_a_crash_with_the_stacked_frame_and_fault_registers() {
        let mut stack = vec![1, 2, 3, 4, 12, 0x0000_0201, 0x0000_0300, 0x0100_0000];
        stack.extend([0u32; 8]);
        let script = FakeScript {
            rtt: chunks("test_sensor: reading\n", 64),
            end: FakeEnd::Fault {
                regs: fault_regs(),
                memory: vec![
                    (0x2000_0100, stack),
                    (SCB_CFSR, vec![0x0000_8200, 0x4000_0000, 0, 0, 0xFFFF_FFF0]),
                ],
            },
            ..FakeScript::default()
        };
        let capture = attempt(script, long(), CancellationToken::new())
            .await
            .result
            .unwrap();
        assert_eq!(capture.end, RunEnd::Crashed);
        let fault = capture.fault.clone().unwrap();
        assert_eq!(fault.exception, Some(3));
        assert_eq!(fault.pc, Some(0x300));
        assert_eq!(fault.lr, Some(0x201));
        assert_eq!(fault.r, [Some(1), Some(2), Some(3), Some(4), Some(12)]);
        assert_eq!(fault.sp, Some(0x2000_0120));
        assert_eq!(fault.cfsr, Some(0x8200));
        assert_eq!(fault.hfsr, Some(0x4000_0000));
        assert_eq!(fault.bfar, Some(0xFFFF_FFF0));
        assert!(fault.raw.contains("HardFault"), "{}", fault.raw);
        assert_eq!(
            capture.uart_lines().collect::<Vec<_>>(),
            ["test_sensor: reading"]
        );
    }

    #[tokio::test]
    async fn a_hang_stops_at_the_timeout_with_the_pc() {
        let mut regs = CoreRegs::default();
        regs.r[13] = Some(0x2000_0200);
        regs.r[14] = Some(0x0000_0123);
        regs.r[15] = Some(0x0000_0456);
        regs.xpsr = Some(0x0100_0000);
        let script = FakeScript {
            rtt: chunks("test_event: waiting\n", 64),
            end: FakeEnd::Hang(regs),
            ..FakeScript::default()
        };
        let ran = attempt(script, Duration::from_millis(200), CancellationToken::new()).await;
        let capture = ran.result.unwrap();
        assert_eq!(capture.end, RunEnd::Timeout);
        assert_eq!(capture.fault, None);
        let at = capture.stopped_at.unwrap();
        assert_eq!(at.pc, Some(0x456));
        assert!(ran.calls.contains(&"halt".to_string()), "{:?}", ran.calls);
        assert_eq!(ran.calls.last().map(String::as_str), Some("close"));
    }

    #[tokio::test]
    async fn a_breakpoint_is_a_crash_where_the_core_stopped() {
        let mut regs = CoreRegs::default();
        regs.r[13] = Some(0x2000_0200);
        regs.r[15] = Some(0x0000_0222);
        regs.xpsr = Some(0x0100_0000);
        let script = FakeScript {
            end: FakeEnd::Breakpoint(regs),
            ..FakeScript::default()
        };
        let capture = attempt(script, long(), CancellationToken::new())
            .await
            .result
            .unwrap();
        assert_eq!(capture.end, RunEnd::Crashed);
        let fault = capture.fault.unwrap();
        assert_eq!(fault.pc, Some(0x222));
        assert!(fault.raw.contains("Breakpoint"), "{}", fault.raw);
    }

    #[tokio::test]
    async fn a_flash_failure_is_a_flash_error_with_the_flash_log() {
        let script = FakeScript {
            flash_error: Some("Error while programming flash: timeout".into()),
            ..FakeScript::default()
        };
        let ran = attempt(script, long(), CancellationToken::new()).await;
        let err = ran.result.unwrap_err();
        let DutError::Flash { method, log, .. } = &err else {
            panic!("{err}");
        };
        assert_eq!(method, "probe-rs");
        assert!(log.contains("program: failed"), "{log}");
        assert!(err.to_string().contains("timeout"), "{err}");
        assert!(!ran.calls.contains(&"reset_and_run".to_string()));
        assert_eq!(ran.calls.last().map(String::as_str), Some("close"));
        let flash_log = std::fs::read_to_string(ran.dir.path().join("flash.log")).unwrap();
        assert!(flash_log.contains("erase: done"), "{flash_log}");
    }

    #[tokio::test]
    async fn a_missing_probe_is_a_probe_error_naming_what_is_connected() {
        let driver = FakeDriver {
            probes: vec![],
            ..FakeDriver::new(FakeScript::default())
        };
        let b = board();
        let BoardBackend::Hardware(spec) = &b.backend else {
            unreachable!()
        };
        let mut dut = BoardDut::with_probes(&b, spec.clone(), Arc::new(driver)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let spec = RunSpec {
            nonce: None,
            timeout: long(),
            detector: Box::new(UnityDetector::default()),
            console_log: dir.path().join("console.log"),
            append: None,
            cancel: CancellationToken::new(),
            attempt: 1,
        };
        let elf = dir.path().join("fw.elf");
        std::fs::write(&elf, b"x").unwrap();
        let err = dut
            .run(&Image { elf }, spec, &Recorder::default())
            .await
            .unwrap_err();
        assert!(
            matches!(err, DutError::Probe(ProbeError::NotFound { .. })),
            "{err}"
        );
        assert!(err.to_string().contains("no debug probe found"), "{err}");
    }

    #[tokio::test]
    async fn cancellation_halts_the_core_and_closes_the_probe() {
        let cancel = CancellationToken::new();
        let script = FakeScript {
            end: FakeEnd::Hang(CoreRegs::default()),
            ..FakeScript::default()
        };
        let trigger = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            trigger.cancel();
        });
        let ran = attempt(script, long(), cancel).await;
        assert_eq!(ran.result.unwrap().end, RunEnd::Cancelled);
        assert!(ran.calls.contains(&"halt".to_string()));
        assert_eq!(ran.calls.last().map(String::as_str), Some("close"));
    }
}
