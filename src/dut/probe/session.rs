//! One attempt through a debug probe, from attaching to a closed probe. Outline:
//!
//! 1. Open console.log and flash.log; read the ELF's defmt table when the console is RTT; open
//!    the `[serial]` console first when the board has one, so nothing the image prints is lost.
//! 2. On one blocking thread (probe-rs is blocking): open the probe and attach (plainly or under
//!    reset), flash with progress (into flash.log and `FlashProgress` events), reset and run with
//!    HardFault caught. A failure in these steps is a [`DutError::Flash`] with flash.log's lines.
//! 3. The same thread polls the core and the RTT up channels (every one the image has, or
//!    `[probe] rtt_channels`): bytes go to the async side, which turns them into lines (channel
//!    0 defmt or text, the others text shown as `rtt<N>: `), logs, emits and feeds them to the
//!    end detector. A semihosting command-line request is answered with the run's `append` text
//!    (the run nonce), exactly as QEMU answers it. When the image reads its nonce from the
//!    console, its line goes to RTT down channel 0 once the control block is found, or to the
//!    `[serial]` console once the image runs.
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
use crate::capture::nonce::{command_line, Nonce, NonceGate};
use crate::capture::settle::Settle;
use crate::capture::store::{LineStore, StoreLimits};
use crate::capture::{Capture, ConsoleLine, EndDetector, FaultSnapshot, LineRead, RunEnd, Stream};
use crate::dut::board::serial::{self, PortEvent, PortSpec, Writer};
use crate::dut::cortex_m::unwind::{self, StackWords};
use crate::dut::cortex_m::{self, conclude, Stop, StopReading, SCB_CFSR};
use crate::dut::session::{admit_line, capture_of, create_log, finish_log};
use crate::dut::{flash_log_path, DutError, Image, RunSpec};
use crate::events::{Event, EventSink, Level};
use crate::process::AbortOnDrop;
use std::collections::BTreeMap;
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
    /// These up channels (None: every one the image has).
    Rtt {
        channels: Option<Vec<usize>>,
    },
    Serial {
        port: PortSpec,
        reconnect: u32,
    },
}

/// What the backend knows about the board.
pub(crate) struct ProbeTarget {
    pub describe: String,
    pub request: AttachRequest,
    pub console: ProbeConsole,
    /// The image reads the run nonce's line from its console after reset.
    pub send_nonce: bool,
}

/// What the probe thread tells the attempt.
enum Msg {
    Note(String),
    Flash(FlashEvent),
    Started,
    /// Bytes from an RTT up channel.
    Rtt {
        channel: usize,
        bytes: Vec<u8>,
    },
    /// A line of fwfix's own for console.log.
    Host(String),
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
        ProbeConsole::Rtt { .. } => match tokio::fs::read(&elf).await {
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
    // defmt-rtt writes on up channel 0; any other channel is text.
    let decoder = match &table {
        Some((table, locations)) => RttDecoder::defmt(table, locations.as_ref()),
        None => RttDecoder::text(),
    };
    let launch = Instant::now();
    let (serial_rx, port_rx, reader, writer, shown) = match &target.console {
        ProbeConsole::Rtt { .. } => (None, None, None, None, "RTT".to_string()),
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
                // Kept open all along: closing it would end a socket console's connection.
                (
                    Some(line_rx),
                    Some(port_rx),
                    Some(reader),
                    Some(console.writer),
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
    let nonce = run.nonce.clone().filter(|_| target.send_nonce);
    let (rtt, serial_nonce) = match &target.console {
        ProbeConsole::Rtt { channels } => (
            Some(RttPlan {
                channels: channels.clone(),
                nonce,
            }),
            None,
        ),
        ProbeConsole::Serial { .. } => (None, nonce),
    };
    let plan = Plan {
        request: target.request.clone(),
        elf: elf.clone(),
        rtt,
        append: command_line(run.nonce.as_ref(), Some(run.attempt), run.append.as_deref()),
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
        after_assertion: Settle::default(),
        stopped: None,
        gate: NonceGate::new(run.nonce.clone()),
        decoders: BTreeMap::from([(0, decoder)]),
        stop: stop_tx,
        port_lost: false,
        writer,
        nonce: serial_nonce,
        failed: None,
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
        stopped,
        port_lost,
        gate,
        failed,
        ..
    } = attempt;
    let flash_done = finish_log(flash_log).await;
    let log_done = finish_log(log).await;
    if let Some(e) = failed {
        return Err(e);
    }
    let (end, fault, stopped_at, exit) = match ended {
        Err(WorkerError::Flash(e)) => {
            return Err(DutError::Flash {
                method: "probe-rs".into(),
                message: e.to_string(),
                log: flash_lines.join("\n"),
            })
        }
        Err(WorkerError::Probe(e)) => return Err(DutError::Probe(e)),
        Ok(ended) => conclude_attempt(ended, verdict, port_lost, stopped),
    };
    flash_done?;
    log_done?;
    let mut capture = capture_of(store, launch, end, fault, stopped_at, exit, gate);
    // The core ran with HardFault vector catch on (reset_and_run fails without it).
    capture.faults_watched = true;
    Ok(capture)
}

type Concluded = (
    RunEnd,
    Option<FaultSnapshot>,
    Option<FaultSnapshot>,
    Option<i32>,
);

/// The attempt's end from how the probe thread ended and what the console showed (`stopped`: a
/// settle window ran out and asked for the stop).
fn conclude_attempt(
    ended: Ended,
    verdict: bool,
    port_lost: bool,
    stopped: Option<RunEnd>,
) -> Concluded {
    match ended {
        Ended::Exited(code) if verdict => (RunEnd::Verdict, None, None, Some(code)),
        Ended::Exited(code) => (RunEnd::Exited { code }, None, None, Some(code)),
        Ended::Faulted(snap) | Ended::Breakpoint(snap) => (RunEnd::Crashed, Some(snap), None, None),
        // A running core read at the window's end: the firmware stopped at its assertion.
        Ended::TimedOut(at) => (stopped.unwrap_or(RunEnd::Timeout), None, at, None),
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
    /// The quiet window after a failed assertion on the console.
    after_assertion: Settle,
    /// The window ran out and the core was asked to stop: how the attempt ends if the probe
    /// thread then reads a running core (it would say timed out).
    stopped: Option<RunEnd>,
    /// Sorts lines into this attempt's and those left from an earlier run.
    gate: NonceGate,
    /// Each RTT up channel's decoder, made as its first bytes come.
    decoders: BTreeMap<usize, RttDecoder<'a>>,
    stop: watch::Sender<Option<Request>>,
    port_lost: bool,
    /// The `[serial]` console's way back to the target.
    writer: Option<Writer>,
    /// The nonce to write to the `[serial]` console once the image runs.
    nonce: Option<Nonce>,
    /// What ended the attempt on this side (the nonce could not be written).
    failed: Option<DutError>,
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
            let settle_at = self.after_assertion.deadline().map(|d| self.launch + d);
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
                // The console settled after a failed assertion: the core is stopped and read as
                // at a timeout.
                _ = sleep_until(settle_at.unwrap_or(deadline)), if settle_at.is_some() && asked.is_none() => {
                    if let Some(end) = self.after_assertion.end(self.launch.elapsed()) {
                        self.stopped = Some(end);
                        asked = Some(Request::Timeout);
                        let _ = self.stop.send(Some(Request::Timeout));
                    }
                }
                msg = msgs.recv(), if msgs_open => match msg {
                    Some(Msg::Started) => {
                        timeout_at = Some(Instant::now() + timeout);
                        self.events.emit(&Event::BootStarted {
                            target: self.describe.clone(),
                            attempt: self.attempt,
                        });
                        if let Err(e) = self.send_nonce().await {
                            self.failed = Some(e);
                            asked = Some(Request::Cancel);
                            let _ = self.stop.send(Some(Request::Cancel));
                        }
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
        let rest: Vec<(usize, String)> = self
            .decoders
            .iter_mut()
            .filter_map(|(channel, d)| d.finish().map(|text| (*channel, text)))
            .collect();
        for (channel, text) in rest {
            self.rtt_line(channel, text).await;
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
            Msg::Rtt { channel, bytes } => {
                let decoder = self
                    .decoders
                    .entry(channel)
                    .or_insert_with(RttDecoder::text);
                for text in decoder.push(&bytes) {
                    self.rtt_line(channel, text).await;
                }
            }
            Msg::Host(text) => self.host_line(text).await,
            Msg::Started => {}
        }
    }

    /// Writes the run nonce's line to the `[serial]` console, when the image reads it there.
    async fn send_nonce(&mut self) -> Result<(), DutError> {
        let (Some(writer), Some(nonce)) = (self.writer.as_mut(), self.nonce.take()) else {
            return Ok(());
        };
        serial::send_nonce(writer, &nonce, &self.shown).await?;
        self.host_line(format!("fwfix: sent {} to the console", nonce.arg()))
            .await;
        Ok(())
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

    /// A line from RTT up channel `channel`; those from channels other than 0 say which.
    async fn rtt_line(&mut self, channel: usize, text: String) {
        let text = match channel {
            0 => text,
            n => format!("rtt{n}: {text}"),
        };
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
    /// The console, when it is RTT.
    rtt: Option<RttPlan>,
    /// The answer to the image's command-line request.
    append: Option<String>,
}

/// What to do with RTT.
struct RttPlan {
    /// The up channels to read (None: every one the image has).
    channels: Option<Vec<usize>>,
    /// The nonce whose line goes to down channel 0 once the control block is found.
    nonce: Option<Nonce>,
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
    let mut rtt = RttReader::new(plan.rtt.as_ref());
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
                rtt.drain(session, &mut buf, send);
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
        rtt.attach(session, started.elapsed(), send)?;
        rtt.write_nonce(session, send);
        let got = rtt.read(session, &mut buf, send)?;
        match session.status()? {
            CoreState::Running => {}
            CoreState::Halted(Halt::Exit { code }) => {
                rtt.drain(session, &mut buf, send);
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
                rtt.drain(session, &mut buf, send);
                return Ok(Ended::Faulted(fault(session, false)?));
            }
            CoreState::LockedUp => {
                rtt.drain(session, &mut buf, send);
                return Ok(Ended::Faulted(fault(session, true)?));
            }
            CoreState::Halted(halt @ (Halt::Breakpoint | Halt::Request | Halt::Other(_))) => {
                rtt.drain(session, &mut buf, send);
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

/// The RTT side of the probe thread: finding the control block, the nonce's line on down
/// channel 0, and reading the up channels.
struct RttReader<'p> {
    plan: Option<&'p RttPlan>,
    /// The up channels read, once the control block is found.
    channels: Option<Vec<usize>>,
    warned: bool,
    /// What is left of the nonce's line to write, and the nonce it hands over.
    nonce: Option<(Vec<u8>, &'p Nonce)>,
}

impl<'p> RttReader<'p> {
    fn new(plan: Option<&'p RttPlan>) -> Self {
        let nonce = plan
            .and_then(|p| p.nonce.as_ref())
            .map(|n| (n.console_line().into_bytes(), n));
        RttReader {
            plan,
            channels: None,
            warned: false,
            nonce,
        }
    }

    /// Looks for the control block until it is found; says so once when the image is slow to
    /// set it up, and names any `[probe] rtt_channels` the image does not have.
    fn attach(
        &mut self,
        session: &mut dyn ProbeSession,
        since_reset: Duration,
        send: &dyn Fn(Msg),
    ) -> Result<(), ProbeError> {
        let Some(plan) = self.plan.filter(|_| self.channels.is_none()) else {
            return Ok(());
        };
        let Some(ups) = session.rtt_attach()? else {
            if !self.warned && since_reset >= RTT_SETUP {
                self.warned = true;
                send(Msg::Warn(format!(
                    "no RTT control block found {} s after reset: does the image set up RTT \
                     (e.g. rtt-target, SEGGER_RTT, defmt-rtt)?",
                    RTT_SETUP.as_secs()
                )));
            }
            return Ok(());
        };
        let channels = match &plan.channels {
            None => (0..ups).collect(),
            Some(wanted) => {
                let (have, missing): (Vec<usize>, Vec<usize>) =
                    wanted.iter().partition(|c| **c < ups);
                if !missing.is_empty() {
                    let list: Vec<String> = missing.iter().map(usize::to_string).collect();
                    send(Msg::Warn(format!(
                        "[probe] rtt_channels names up channel {}, which the image does not \
                         have (it has {ups})",
                        list.join(", ")
                    )));
                }
                have
            }
        };
        self.channels = Some(channels);
        Ok(())
    }

    /// Hands the image the nonce's line on down channel 0, as much as the channel takes each
    /// time; a channel that cannot take it is a warning, and the attempt is then untrusted
    /// because the image never prints the nonce.
    fn write_nonce(&mut self, session: &mut dyn ProbeSession, send: &dyn Fn(Msg)) {
        let Some((rest, nonce)) = self.nonce.as_mut().filter(|_| self.channels.is_some()) else {
            return;
        };
        match session.rtt_write(0, rest) {
            Ok(n) => {
                rest.drain(..n.min(rest.len()));
                if rest.is_empty() {
                    send(Msg::Host(format!(
                        "fwfix: sent {} to RTT down channel 0",
                        nonce.arg()
                    )));
                    self.nonce = None;
                }
            }
            Err(e) => {
                send(Msg::Warn(format!(
                    "cannot hand the image its nonce on RTT down channel 0 ({e}); [probe] nonce \
                     = true needs an image that reads it there"
                )));
                self.nonce = None;
            }
        }
    }

    /// One read of each up channel; the number of bytes read.
    fn read(
        &mut self,
        session: &mut dyn ProbeSession,
        buf: &mut [u8],
        send: &dyn Fn(Msg),
    ) -> Result<usize, ProbeError> {
        let mut total = 0;
        for &channel in self.channels.iter().flatten() {
            let n = session.rtt_read(channel, buf)?;
            if n > 0 {
                send(Msg::Rtt {
                    channel,
                    bytes: buf[..n].to_vec(),
                });
            }
            total += n;
        }
        Ok(total)
    }

    /// Reads what the up channels still hold after the core stopped.
    fn drain(&mut self, session: &mut dyn ProbeSession, buf: &mut [u8], send: &dyn Fn(Msg)) {
        for &channel in self.channels.iter().flatten() {
            while let Ok(n) = session.rtt_read(channel, buf) {
                if n == 0 {
                    break;
                }
                send(Msg::Rtt {
                    channel,
                    bytes: buf[..n].to_vec(),
                });
            }
        }
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
    // Stopped in a handler that is no fault's: the code it interrupted is found through the
    // stacks (see `dut::cortex_m::unwind`).
    let in_handler = regs
        .exception()
        .is_some_and(|n| n != 0 && !(3..=7).contains(&n));
    let mut psp = None;
    if in_handler {
        if let Some(sp) = regs.sp() {
            if let Some(more) = unwind::msp_reads(sp)
                .into_iter()
                .find_map(|n| session.read_words(sp, n).ok())
            {
                stack = more;
            }
        }
        psp = session.read_psp().ok().map(|sp| StackWords {
            sp,
            words: session
                .read_words(sp, unwind::PSP_WORDS)
                .or_else(|_| session.read_words(sp, 8))
                .unwrap_or_default(),
        });
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
        psp,
        raw,
    })
}

/// A USB debug probe and the target behind it are the one thing that cannot exist on a test
/// machine: these attempts run through the fake driver (`fake.rs`), with real files, a real
/// ELF for defmt and a real TCP socket for a `[serial]` console.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::nonce::NonceCheck;
    use crate::config::{Board, BoardBackend, ConsoleSpec, FlashSpec, HardwareSpec, ProbeSpec};
    use crate::dut::board::BoardDut;
    use crate::dut::cortex_m::CoreRegs;
    use crate::dut::probe::fake::{FakeDriver, FakeEnd, FakeScript};
    use crate::dut::Dut;
    use crate::results::unity::UnityStream;
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

    fn board(console: ConsoleSpec, connect_under_reset: bool) -> Board {
        Board {
            name: "nucleo".into(),
            source: PathBuf::from("boards/nucleo.toml"),
            backend: BoardBackend::Hardware(HardwareSpec {
                flash: FlashSpec::ProbeRs(ProbeSpec {
                    chip: "STM32F401RETx".into(),
                    selector: None,
                    protocol: None,
                    speed_khz: None,
                    connect_under_reset,
                }),
                flash_timeout: Duration::from_secs(5),
                console,
                reset_command: None,
            }),
            power: None,
            health: None,
        }
    }

    fn rtt(channels: Option<Vec<usize>>, nonce: bool) -> ConsoleSpec {
        ConsoleSpec::Rtt { channels, nonce }
    }

    fn nonce(check: NonceCheck) -> Nonce {
        Nonce {
            value: "abc123".into(),
            check,
        }
    }

    struct Ran {
        result: Result<Capture, DutError>,
        events: Recorder,
        calls: Vec<String>,
        dir: tempfile::TempDir,
    }

    impl Ran {
        fn console_log(&self) -> String {
            std::fs::read_to_string(self.dir.path().join("console.log")).unwrap()
        }

        fn warnings(&self) -> Vec<String> {
            self.events
                .0
                .lock()
                .unwrap()
                .iter()
                .filter_map(|e| match e {
                    Event::Message {
                        level: Level::Warning,
                        text,
                    } => Some(text.clone()),
                    _ => None,
                })
                .collect()
        }
    }

    /// One attempt of `board` through `driver`, flashing `elf`'s bytes.
    async fn run_on(
        board: &Board,
        driver: FakeDriver,
        elf: &[u8],
        nonce: Option<Nonce>,
        timeout: Duration,
        cancel: CancellationToken,
    ) -> Ran {
        let driver = Arc::new(driver);
        let BoardBackend::Hardware(spec) = &board.backend else {
            unreachable!()
        };
        let mut dut = BoardDut::with_probes(board, spec.clone(), driver.clone()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fw.elf");
        std::fs::write(&path, elf).unwrap();
        let events = Recorder::default();
        let spec = RunSpec {
            nonce,
            timeout,
            detector: Box::new(UnityStream::default()),
            console_log: dir.path().join("console.log"),
            append: None,
            cancel,
            attempt: 1,
            prepare_next: false,
        };
        let result = dut.run(&Image { elf: path }, spec, &events).await;
        Ran {
            result,
            events,
            calls: driver.calls(),
            dir,
        }
    }

    /// An attempt on an RTT board with every up channel read. The run's nonce is offered: it
    /// reaches the image on its semihosting command line, as on QEMU.
    async fn attempt(script: FakeScript, timeout: Duration, cancel: CancellationToken) -> Ran {
        run_on(
            &board(rtt(None, false), false),
            FakeDriver::new(script),
            b"not an ELF with defmt",
            Some(nonce(NonceCheck::Offered)),
            timeout,
            cancel,
        )
        .await
    }

    /// `text` on up channel `channel`, in chunks of `size` bytes.
    fn on(channel: usize, text: &str, size: usize) -> Vec<(usize, Vec<u8>)> {
        text.as_bytes()
            .chunks(size)
            .map(|c| (channel, c.to_vec()))
            .collect()
    }

    fn chunks(text: &str, size: usize) -> Vec<(usize, Vec<u8>)> {
        on(0, text, size)
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
        // The image's command-line request got the run's nonce and attempt, before it ran on.
        let asked = ran.calls.iter().position(|c| c.starts_with("command line"));
        assert_eq!(
            ran.calls[asked.unwrap()],
            "command line \"fwfix-nonce=abc123 fwfix-attempt=1\""
        );
        assert_eq!(
            ran.calls[..4],
            [
                "open 0483:374b:FAKE0001 STM32F401RETx",
                "attach",
                "flash",
                "reset_and_run"
            ]
        );
        // An offered nonce is not written to the image's RTT input.
        assert!(!ran.calls.iter().any(|c| c.starts_with("rtt down")));
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
        let ran = run_on(
            &board(rtt(None, false), false),
            driver,
            b"x",
            None,
            long(),
            CancellationToken::new(),
        )
        .await;
        let err = ran.result.unwrap_err();
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

    #[tokio::test]
    async fn attach_is_plain_then_under_reset_or_under_reset_at_once_when_asked() {
        let attaches = |ran: &Ran| -> Vec<String> {
            ran.calls
                .iter()
                .filter(|c| c.starts_with("attach"))
                .cloned()
                .collect()
        };
        let refused = FakeScript {
            attach_refused: true,
            ..FakeScript::default()
        };
        let ran = attempt(refused.clone(), long(), CancellationToken::new()).await;
        ran.result.as_ref().unwrap();
        assert_eq!(attaches(&ran), ["attach", "attach under reset"]);

        // `[probe] connect_under_reset = true`: no plain attach is tried first.
        let ran = run_on(
            &board(rtt(None, false), true),
            FakeDriver::new(refused),
            b"x",
            None,
            long(),
            CancellationToken::new(),
        )
        .await;
        ran.result.as_ref().unwrap();
        assert_eq!(attaches(&ran), ["attach under reset"]);

        let ran = attempt(FakeScript::default(), long(), CancellationToken::new()).await;
        assert_eq!(attaches(&ran), ["attach"]);
    }

    #[tokio::test]
    async fn an_rtt_nonce_goes_to_down_channel_0_and_the_image_echoes_it_first() {
        let script = FakeScript {
            rtt: chunks(UNITY_PASS, 9),
            echoes_nonce: true,
            end: FakeEnd::Hang(CoreRegs::default()),
            ..FakeScript::default()
        };
        let ran = run_on(
            &board(rtt(None, true), false),
            FakeDriver::new(script),
            b"x",
            Some(nonce(NonceCheck::Required)),
            long(),
            CancellationToken::new(),
        )
        .await;
        let capture = ran.result.as_ref().unwrap();
        assert_eq!(capture.end, RunEnd::Verdict);
        // The line went down whole (the fake takes 16 bytes a call) after the reset.
        let reset = ran.calls.iter().position(|c| c == "reset_and_run").unwrap();
        let sent = ran
            .calls
            .iter()
            .position(|c| c == "rtt down 0: fwfix-nonce=abc123")
            .unwrap();
        assert!(reset < sent, "{:?}", ran.calls);
        let record = capture.nonce.clone().unwrap();
        assert!(record.seen && !record.untrusted(), "{record:?}");
        assert_eq!(record.stale_lines, 0);
        let first = capture.lines.iter().find(|l| l.stream == Stream::Uart);
        assert_eq!(first.unwrap().text, "fwfix-nonce: abc123");
        assert_eq!(
            capture.uart_lines().next(),
            Some("tests/test_crc.c:10:test_crc:PASS")
        );
        assert!(
            ran.console_log()
                .contains("fwfix: sent fwfix-nonce=abc123 to RTT down channel 0"),
            "{}",
            ran.console_log()
        );
    }

    #[tokio::test]
    async fn an_image_without_an_rtt_down_channel_never_gets_the_nonce_and_is_untrusted() {
        let script = FakeScript {
            rtt: chunks(UNITY_PASS, 64),
            down_channel: false,
            end: FakeEnd::Exit(0),
            ..FakeScript::default()
        };
        let ran = run_on(
            &board(rtt(None, true), false),
            FakeDriver::new(script),
            b"x",
            Some(nonce(NonceCheck::Required)),
            long(),
            CancellationToken::new(),
        )
        .await;
        let capture = ran.result.as_ref().unwrap();
        assert!(capture.nonce.as_ref().unwrap().untrusted());
        // Output that cannot be tied to this run never reaches the end detector.
        assert_eq!(capture.end, RunEnd::Exited { code: 0 });
        let warnings = ran.warnings();
        assert!(
            warnings
                .iter()
                .any(|w| w.contains("no RTT down channel 0") && w.contains("[probe] nonce")),
            "{warnings:?}"
        );
    }

    #[tokio::test]
    async fn every_rtt_up_channel_is_read_and_the_others_are_marked_with_their_number() {
        let mut output = on(1, "boot: clocks up\n", 64);
        output.extend(chunks("tests/test_crc.c:10:test_crc:PASS\n", 64));
        output.extend(on(2, "adc 1", 64));
        output.extend(on(1, "sensor ready\n", 64));
        output.extend(chunks(
            "\n-----------------------\n1 Tests 0 Failures 0 Ignored\nOK\n",
            64,
        ));
        let script = FakeScript {
            up_channels: 3,
            rtt: output,
            end: FakeEnd::Exit(0),
            ..FakeScript::default()
        };
        let ran = attempt(script, long(), CancellationToken::new()).await;
        let capture = ran.result.unwrap();
        assert_eq!(capture.end, RunEnd::Verdict);
        let lines: Vec<&str> = capture.uart_lines().collect();
        assert_eq!(
            lines,
            [
                "rtt1: boot: clocks up",
                "tests/test_crc.c:10:test_crc:PASS",
                "rtt1: sensor ready",
                "",
                "-----------------------",
                "1 Tests 0 Failures 0 Ignored",
                "OK",
                // A last unterminated line is kept at the end.
                "rtt2: adc 1",
            ]
        );
    }

    #[tokio::test]
    async fn rtt_channels_chooses_the_channels_read_and_names_those_missing() {
        let mut output = on(1, "sensor 1\n", 64);
        output.extend(chunks("channel 0 is not read\n", 64));
        let script = FakeScript {
            up_channels: 2,
            rtt: output,
            end: FakeEnd::Hang(CoreRegs::default()),
            ..FakeScript::default()
        };
        let ran = run_on(
            &board(rtt(Some(vec![1, 4]), false), false),
            FakeDriver::new(script),
            b"x",
            None,
            Duration::from_millis(300),
            CancellationToken::new(),
        )
        .await;
        let capture = ran.result.as_ref().unwrap();
        assert_eq!(capture.end, RunEnd::Timeout);
        assert_eq!(capture.uart_lines().collect::<Vec<_>>(), ["rtt1: sensor 1"]);
        let warnings = ran.warnings();
        assert!(
            warnings.iter().any(|w| w
                == "[probe] rtt_channels names up channel 4, which the image does not have (it \
                    has 2)"),
            "{warnings:?}"
        );
    }

    /// The defmt table comes from the flashed ELF (`tests/data/defmt/defmt.elf`, see
    /// `console`'s tests for its two format strings); only up channel 0 is decoded as defmt.
    #[tokio::test]
    async fn defmt_frames_on_channel_0_are_decoded_with_the_elfs_table_through_an_attempt() {
        let mut frames = vec![0, 0, 7];
        frames.extend([1, 0, 3, 0, 0, 0]);
        frames.extend(b"crc");
        let mut output: Vec<(usize, Vec<u8>)> = frames.chunks(4).map(|c| (0, c.to_vec())).collect();
        output.extend(on(1, "text beside defmt\n", 64));
        let script = FakeScript {
            up_channels: 2,
            rtt: output,
            end: FakeEnd::Exit(1),
            ..FakeScript::default()
        };
        let ran = run_on(
            &board(rtt(None, false), false),
            FakeDriver::new(script),
            include_bytes!("../../../tests/data/defmt/defmt.elf"),
            None,
            long(),
            CancellationToken::new(),
        )
        .await;
        let capture = ran.result.unwrap();
        assert_eq!(capture.end, RunEnd::Exited { code: 1 });
        assert_eq!(
            capture.uart_lines().collect::<Vec<_>>(),
            [
                "INFO crc ok 7",
                "ERROR FAIL: crc",
                "rtt1: text beside defmt"
            ]
        );
    }

    /// A probe-rs board whose console is `[serial]`: a real TCP socket console (as
    /// `socket://HOST:PORT`) with the fake standing in for the probe. The console holds a verdict
    /// left from an earlier run; the image reads the nonce line, echoes it and prints its own.
    #[tokio::test]
    async fn a_serial_console_gets_the_nonce_after_reset_and_earlier_output_is_stale() {
        use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            let (read, mut write) = stream.into_split();
            write.write_all(b"OK\n").await.unwrap();
            let mut read = BufReader::new(read);
            let mut asked = String::new();
            read.read_line(&mut asked).await.unwrap();
            let value = asked.trim_end().strip_prefix("fwfix-nonce=").unwrap_or("");
            let reply = format!("fwfix-nonce: {value}\n{UNITY_PASS}");
            write.write_all(reply.as_bytes()).await.unwrap();
            // Held open until fwfix lets go of the console.
            let mut rest = Vec::new();
            let _ = read.read_to_end(&mut rest).await;
            asked
        });
        let console = ConsoleSpec::Serial {
            port: crate::config::SerialPort::Socket {
                host: "127.0.0.1".into(),
                port,
            },
            baud: 115_200,
            line: crate::config::SerialLine::default(),
            reset: crate::config::SerialReset::None,
            reconnect: 0,
            nonce: true,
        };
        let script = FakeScript {
            end: FakeEnd::Hang(CoreRegs::default()),
            ..FakeScript::default()
        };
        let ran = run_on(
            &board(console, false),
            FakeDriver::new(script),
            b"x",
            Some(nonce(NonceCheck::Required)),
            long(),
            CancellationToken::new(),
        )
        .await;
        let capture = ran.result.as_ref().unwrap();
        assert_eq!(server.await.unwrap(), "fwfix-nonce=abc123\n");
        assert_eq!(capture.end, RunEnd::Verdict);
        let record = capture.nonce.clone().unwrap();
        assert!(record.seen, "{record:?}");
        assert_eq!(record.stale_lines, 1);
        let lines: Vec<&str> = capture.uart_lines().collect();
        assert_eq!(lines.first(), Some(&"tests/test_crc.c:10:test_crc:PASS"));
        assert_eq!(lines.last(), Some(&"OK"));
        let log = ran.console_log();
        assert!(
            log.contains("fwfix: sent fwfix-nonce=abc123 to the console"),
            "{log}"
        );
        // No RTT is looked for when the console is serial.
        assert!(!ran.calls.iter().any(|c| c.starts_with("rtt")));
    }

    /// The listing `fwfix boards probes` shows and the selector a board names, through the fake
    /// driver: the check before a run picks the probe the same way the attach does.
    #[tokio::test]
    async fn the_selector_picks_one_of_several_probes_for_the_check_and_the_attach() {
        let mut driver = FakeDriver::new(FakeScript::default());
        let mut second = driver.probes[0].clone();
        second.serial = Some("FAKE0002".into());
        driver.probes.push(second);
        let selectors: Vec<String> = driver.list().iter().map(|p| p.selector()).collect();
        assert_eq!(selectors, ["0483:374b:FAKE0001", "0483:374b:FAKE0002"]);
        let with_selector = |selector: Option<&str>| {
            let mut b = board(rtt(None, false), false);
            if let BoardBackend::Hardware(HardwareSpec {
                flash: FlashSpec::ProbeRs(probe),
                ..
            }) = &mut b.backend
            {
                probe.selector = selector.map(str::to_string);
            }
            b
        };
        let check = |b: &Board, driver: FakeDriver| {
            let BoardBackend::Hardware(spec) = &b.backend else {
                unreachable!()
            };
            let mut dut = BoardDut::with_probes(b, spec.clone(), Arc::new(driver)).unwrap();
            async move { dut.check().await }
        };
        let fresh = || FakeDriver {
            probes: driver.probes.clone(),
            ..FakeDriver::new(FakeScript::default())
        };

        let chosen = with_selector(Some("0483:374B:fake0002"));
        check(&chosen, fresh()).await.unwrap();
        let ran = run_on(
            &chosen,
            fresh(),
            b"x",
            None,
            long(),
            CancellationToken::new(),
        )
        .await;
        assert_eq!(ran.calls[0], "open 0483:374b:FAKE0002 STM32F401RETx");

        let err = check(&with_selector(None), fresh()).await.unwrap_err();
        assert!(
            matches!(err, DutError::Probe(ProbeError::Ambiguous { .. })),
            "{err}"
        );
        assert!(err.to_string().contains("0483:374b:FAKE0002"), "{err}");
        let err = check(&with_selector(Some("1366:0105")), fresh())
            .await
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("connected: 0483:374b:FAKE0001 (Fake STLink), 0483:374b:FAKE0002"),
            "{err}"
        );
    }
}
