//! One attempt on an acquired place:
//!
//! 1. Flash: the board's `[flash] command` with `{elf}`/`{bin}`/`{hex}` and the place's resource
//!    values expanded, run with `sh -c` under its timeout; its output goes to flash.log.
//! 2. Power: off, then on, through the place (`labgrid-client power`), when it has a power port,
//!    so the image starts from reset; the calls go to power.log.
//! 3. Console: the place's NetworkSerialPort (raw TCP, or RFC 2217 through `rfc2217`), opened once the board is on (a console
//!    on the board itself appears only then), tried for [`CONSOLE_WINDOW`].
//! 4. Capture as the other backends do, until the verdict, the timeout, cancellation or the
//!    console going away, while a watch connects to the coordinator every [`WATCH_EVERY`]: a
//!    coordinator gone mid-run ends the attempt as an infrastructure error, with console.log as
//!    far as it got.
//! 5. Power off (the target is left stopped), close the logs.

use super::client;
use super::place::Acquired;
use crate::capture::nonce::NonceGate;
use crate::capture::settle::Settle;
use crate::capture::store::{LineStore, StoreLimits};
use crate::capture::{Capture, ConsoleLine, LineRead, RunEnd, Stream};
use crate::config::{LabgridFlash, SerialLine, SerialPort, SerialReset};
use crate::dut::board::flash;
use crate::dut::board::serial::{self, PortEvent, PortSpec};
use crate::dut::power::power_log_path;
use crate::dut::session::{admit_line, capture_of, create_log, finish_log};
use crate::dut::{flash_log_path, DutError, Image, RunSpec};
use crate::events::{Event, EventSink};
use crate::process::output::{self, Limits, Stopped, TOOL_OUTPUT_MAX};
use crate::process::spawn_group;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use tokio::process::Command;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How long the console may take to appear after power-on.
pub(super) const CONSOLE_WINDOW: Duration = Duration::from_secs(10);
/// How often the coordinator is looked at during the capture.
const WATCH_EVERY: Duration = Duration::from_secs(1);
/// How long a connection to the coordinator may take before it counts as gone.
const WATCH_CONNECT: Duration = Duration::from_secs(2);

pub(super) async fn run(
    place: &Acquired,
    flash_spec: Option<&LabgridFlash>,
    image: &Image,
    spec: RunSpec,
    events: &dyn EventSink,
) -> Result<Capture, DutError> {
    let console = place.resources().serial().map_err(DutError::Other)?;
    let rfc2217 = match console.protocol.as_str() {
        "raw" => false,
        "rfc2217" => true,
        other => {
            return Err(DutError::Unsupported {
                board: place.place().to_string(),
                backend: format!(
                    "labgrid (its NetworkSerialPort speaks `{other}`; fwfix reads `raw` and \
                     `rfc2217` consoles)"
                ),
            })
        }
    };
    let elf = std::path::absolute(&image.elf).unwrap_or_else(|_| image.elf.clone());
    if let Some(f) = flash_spec {
        flash_image(
            place,
            f,
            &elf,
            &flash_log_path(&spec.console_log),
            &spec.cancel,
        )
        .await?;
    }
    let power_log = power_log_path(&spec.console_log);
    if place.resources().has_power() {
        power(place, &["off", "on"], &power_log, &spec.cancel).await?;
    }
    let port = PortSpec {
        port: SerialPort::Socket {
            host: console.host.clone(),
            port: console.port,
        },
        baud: console.speed,
        line: SerialLine::default(),
        reset: SerialReset::None,
    };
    let opened = open_console(&port, rfc2217, &spec.cancel).await;
    let result = match opened {
        Ok(Some(c)) => capture(place, c, port, spec, events).await.map(Some),
        Ok(None) => Ok(None),
        Err(e) => Err(e),
    };
    if place.resources().has_power() {
        let never = CancellationToken::new();
        let _ = place
            .client()
            .call(Some(place.place()), &["power", "off"], &never)
            .await;
    }
    match result? {
        Some(capture) => Ok(capture),
        None => Err(DutError::Other(
            "interrupted before the console opened".into(),
        )),
    }
}

/// The console, tried until it answers, the window passes, or the run is cancelled; an RFC 2217
/// one is negotiated and read through `rfc2217`.
async fn open_console(
    port: &PortSpec,
    rfc2217: bool,
    cancel: &CancellationToken,
) -> Result<Option<serial::Console>, DutError> {
    let until = Instant::now() + CONSOLE_WINDOW;
    loop {
        let opened = if rfc2217 {
            open_rfc2217(port).await
        } else {
            serial::open(port, false).await
        };
        match opened {
            Ok(c) => return Ok(Some(c)),
            Err(e) if Instant::now() >= until => return Err(e),
            Err(_) => {}
        }
        tokio::select! {
            _ = cancel.cancelled() => return Ok(None),
            _ = tokio::time::sleep(Duration::from_millis(100)) => {}
        }
    }
}

async fn open_rfc2217(port: &PortSpec) -> Result<serial::Console, DutError> {
    let shown = port.port.to_string();
    let SerialPort::Socket { host, port: tcp } = &port.port else {
        return Err(DutError::Other(format!("{shown} is not a TCP console")));
    };
    let stream = match tokio::time::timeout(
        WATCH_CONNECT,
        tokio::net::TcpStream::connect((host.as_str(), *tcp)),
    )
    .await
    {
        Ok(Ok(stream)) => stream,
        Ok(Err(e)) => return Err(unreachable_console(&shown, e.to_string())),
        Err(_) => return Err(unreachable_console(&shown, "no connection".into())),
    };
    Ok(serial::Console {
        reader: super::rfc2217::open(stream, port.baud, &shown).await?,
        writer: Box::new(tokio::io::sink()),
        control: None,
    })
}

fn unreachable_console(address: &str, message: String) -> DutError {
    DutError::Unreachable {
        what: "the place's console (RFC 2217)".into(),
        address: address.to_string(),
        message,
        fix: "is ser2net (or the exporter's serial server) running for this place?".into(),
    }
}

async fn flash_image(
    place: &Acquired,
    spec: &LabgridFlash,
    elf: &Path,
    log: &Path,
    cancel: &CancellationToken,
) -> Result<(), DutError> {
    let dir = log.parent().unwrap_or(Path::new("."));
    let artifacts = flash::prepare(
        elf,
        dir,
        flash::uses(&spec.command, "bin"),
        flash::uses(&spec.command, "hex"),
    )
    .await?;
    let command = flash::expand(
        &spec.command,
        elf,
        artifacts.bin.as_deref(),
        artifacts.hex.as_deref(),
    );
    let values = place.resources().placeholders();
    let quoted: Vec<(String, String)> = values
        .iter()
        .map(|(k, v)| (k.clone(), flash::shell_quote(v)))
        .collect();
    let pairs: Vec<(&str, &str)> = quoted
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let command = crate::config::placeholder::expand(&command, &pairs);
    let fail = |message: String, log: String| DutError::Flash {
        method: "command".into(),
        message,
        log,
    };
    if let Some((_, name)) = crate::config::placeholder::find(&command).first() {
        let known: Vec<String> = values.iter().map(|(k, _)| format!("{{{k}}}")).collect();
        return Err(fail(
            format!(
                "the flash command uses {{{name}}}, which place {} does not have (it has {{elf}}, \
                 {{bin}}, {{hex}}, {})",
                place.place(),
                known.join(", ")
            ),
            String::new(),
        ));
    }
    let mut sh = Command::new("sh");
    sh.arg("-c")
        .arg(format!("exec 2>&1\n{command}"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let (mut child, mut guard) = spawn_group(&mut sh).map_err(|e| DutError::StartFailed {
        program: "sh".into(),
        message: e.to_string(),
    })?;
    let limits = Limits {
        timeout: spec.timeout,
        cancel: Some(cancel),
        term_grace: Duration::ZERO,
    };
    let captured = output::capture(&mut child, &mut guard, limits, TOOL_OUTPUT_MAX).await;
    let (text, failed) = match captured.into_output() {
        Err(Stopped::Cancelled) => (String::new(), Some("interrupted".to_string())),
        Err(Stopped::TimedOut) => (
            String::new(),
            Some(format!(
                "did not finish within {} s ([flash] timeout_s)",
                spec.timeout.as_secs()
            )),
        ),
        Err(Stopped::WaitFailed(e)) => (String::new(), Some(e.to_string())),
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            let failed = (!out.status.success()).then(|| format!("exited with {}", out.status));
            (text, failed)
        }
    };
    let record = format!("$ {command}\n{text}");
    crate::rundir::write_atomic(log, record.as_bytes()).map_err(|source| DutError::Io {
        doing: format!("writing {}", log.display()),
        source,
    })?;
    match failed {
        Some(message) => Err(fail(message, text)),
        None => Ok(()),
    }
}

/// `labgrid-client power ACTION` for each action in turn, logged to `log`.
async fn power(
    place: &Acquired,
    actions: &[&str],
    log: &Path,
    cancel: &CancellationToken,
) -> Result<(), DutError> {
    let mut text = String::new();
    let mut result = Ok(());
    for action in actions {
        let argv = place.client().argv(Some(place.place()), &["power", action]);
        text.push_str(&format!("$ {} {}\n", client::PROGRAM, argv.join(" ")));
        let started = Instant::now();
        match place
            .client()
            .call(Some(place.place()), &["power", action], cancel)
            .await
        {
            Ok(out) => {
                text.push_str(&out.stdout);
                text.push_str(&format!(
                    "fwfix: done in {:.2} s\n",
                    started.elapsed().as_secs_f64()
                ));
            }
            Err(e) => {
                let (command, message) = match e {
                    Ok(r) => (r.invocation, r.message),
                    Err(e) => (format!("labgrid-client power {action}"), e.to_string()),
                };
                text.push_str(&format!("fwfix: failed: {message}\n"));
                result = Err(DutError::Power {
                    board: place.place().to_string(),
                    action: action.to_string(),
                    command,
                    message,
                    log: String::new(),
                });
                break;
            }
        }
    }
    crate::rundir::write_atomic(log, text.as_bytes()).map_err(|source| DutError::Io {
        doing: format!("writing {}", log.display()),
        source,
    })?;
    result
}

/// Step 4: the capture, or the coordinator's going away as an error once console.log is
/// written.
async fn capture(
    place: &Acquired,
    console: serial::Console,
    port: PortSpec,
    spec: RunSpec,
    events: &dyn EventSink,
) -> Result<Capture, DutError> {
    let log = create_log(&spec.console_log).await?;
    let launch = Instant::now();
    let (line_tx, mut lines) = mpsc::channel::<ConsoleLine>(256);
    let (port_tx, mut port_rx) = mpsc::channel(8);
    let shown = port.port.to_string();
    let _writer = console.writer;
    let _reader = serial::spawn_reader(console.reader, port, 0, launch, line_tx, port_tx);
    events.emit(&Event::BootStarted {
        target: format!("labgrid place {}", place.place()),
        attempt: spec.attempt,
    });
    let mut detector = spec.detector;
    let mut gate = NonceGate::new(None);
    let mut store = LineStore::new(StoreLimits::default());
    let timer = tokio::time::sleep(spec.timeout);
    tokio::pin!(timer);
    let mut watch = tokio::time::interval(WATCH_EVERY);
    let coordinator = place.coordinator_address();
    let mut gone: Option<String> = None;
    let mut after_assertion = Settle::default();
    let end = loop {
        let settle_at = after_assertion.deadline().map(|d| launch + d);
        tokio::select! {
            line = lines.recv() => match line {
                Some(line) => {
                    let live = admit_line(&line, &mut gate, &log, events, spec.attempt).await;
                    let read = if live && line.stream == Stream::Uart {
                        detector.read_line(&line.text)
                    } else {
                        LineRead::default()
                    };
                    if live && line.stream == Stream::Uart {
                        after_assertion.line(read, launch.elapsed());
                    }
                    store.push_read(line, read.keep);
                    if read.verdict {
                        break RunEnd::Verdict;
                    }
                }
                None => break RunEnd::PortLost,
            },
            event = port_rx.recv() => {
                if let Some(PortEvent::Gone { why }) = event {
                    log.write(&ConsoleLine {
                        t_ms: launch.elapsed().as_millis() as u64,
                        stream: Stream::Host,
                        text: format!("fwfix: console {shown} closed: {why}"),
                    })
                    .await;
                    break RunEnd::PortLost;
                }
            }
            _ = &mut timer => break RunEnd::Timeout,
            // The console settled after a failed assertion.
            _ = tokio::time::sleep_until(settle_at.unwrap_or(launch)), if settle_at.is_some() => {
                if let Some(stopped) = after_assertion.end(launch.elapsed()) {
                    break stopped;
                }
            }
            _ = spec.cancel.cancelled() => break RunEnd::Cancelled,
            _ = watch.tick() => {
                if let Err(why) = reachable(&coordinator).await {
                    gone = Some(why);
                    break RunEnd::PortLost;
                }
            }
        }
    };
    if let Some(why) = gone {
        log.write(&ConsoleLine {
            t_ms: launch.elapsed().as_millis() as u64,
            stream: Stream::Host,
            text: format!("fwfix: the labgrid coordinator at {coordinator} went away: {why}"),
        })
        .await;
        finish_log(log).await?;
        return Err(DutError::Unreachable {
            what: "the labgrid coordinator".into(),
            address: coordinator,
            message: format!("it went away mid-run ({why}); console.log keeps what the board printed until then"),
            fix: "restart labgrid-coordinator; `fwfix boards reclaim` frees what this run could not release".into(),
        });
    }
    finish_log(log).await?;
    Ok(capture_of(store, launch, end, None, None, None, gate))
}

async fn reachable(address: &str) -> Result<(), String> {
    match tokio::time::timeout(WATCH_CONNECT, tokio::net::TcpStream::connect(address)).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!(
            "no connection within {} s",
            WATCH_CONNECT.as_secs()
        )),
    }
}
