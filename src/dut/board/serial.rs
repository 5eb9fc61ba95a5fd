//! The board's console: a serial device opened with tokio-serial at the configured baud and
//! framing, or a TCP socket (ser2net, a terminal server, QEMU's `-serial tcp:`). It owns opening
//! (and turning an open that failed into what the user must do), the modem-line reset pulse, the
//! reader task that pumps the console into lines and opens a vanished port again, and writing the
//! run nonce's line to it. It does not decide what a lost port means for the attempt: the session
//! does.

use crate::capture::nonce::Nonce;
use crate::capture::pump::pump;
use crate::capture::{ConsoleLine, Stream};
use crate::config::{FlowControl, Parity, SerialLine, SerialPort, SerialReset};
use crate::dut::DutError;
use crate::process::AbortOnDrop;
use std::io;
use std::path::Path;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::time::{sleep, timeout, Instant};
use tokio_serial::SerialPortBuilderExt;

/// How long a TCP console may take to accept the connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// After a port vanished, how long each reopening attempt keeps trying: a USB adapter that
/// re-enumerates after a board reset is back within a second or two.
const REOPEN_WINDOW: Duration = Duration::from_secs(3);
const REOPEN_EVERY: Duration = Duration::from_millis(100);
/// Linux's errno for an I/O error: what reading a pty or a USB serial device gives once the
/// other end is gone.
const EIO: i32 = 5;

/// How to open the console, again if need be.
#[derive(Debug, Clone, PartialEq)]
pub struct PortSpec {
    pub port: SerialPort,
    pub baud: u32,
    pub line: SerialLine,
    /// The reset pulse the board wants: the modem lines are then opened too.
    pub reset: SerialReset,
}

/// The byte stream of an open console.
pub type Reader = Box<dyn AsyncRead + Send + Unpin>;
/// The way back to the target: its console's receive line.
pub type Writer = Box<dyn AsyncWrite + Send + Unpin>;

/// An open console.
pub struct Console {
    pub reader: Reader,
    pub writer: Writer,
    /// The device's modem lines, for a reset pulse (None for a socket).
    pub control: Option<ModemLines>,
}

/// A second handle on a serial device, for its modem lines while the reader owns the stream.
pub struct ModemLines(Box<dyn tokio_serial::SerialPort>);

/// The port as messages name it: a symlink (`/dev/serial/by-id/...`) with what it points to.
pub fn describe(port: &SerialPort) -> String {
    match port {
        SerialPort::Device(path) => match std::fs::canonicalize(path) {
            Ok(real) if real != *path => format!("{} (-> {})", path.display(), real.display()),
            _ => path.display().to_string(),
        },
        SerialPort::Socket { .. } => port.to_string(),
    }
}

/// Writes the run nonce's line to the console for the freshly reset image to read; `shown`
/// names the console in the error.
pub async fn send_nonce(writer: &mut Writer, nonce: &Nonce, shown: &str) -> Result<(), DutError> {
    let line = nonce.console_line();
    let sent = async {
        writer.write_all(line.as_bytes()).await?;
        writer.flush().await
    };
    sent.await.map_err(|source| DutError::Io {
        doing: format!("writing the run nonce to the console {shown}"),
        source,
    })
}

/// Opens the console; with `modem`, also a handle on the device's modem lines for
/// [`PortSpec::reset`].
pub async fn open(spec: &PortSpec, modem: bool) -> Result<Console, DutError> {
    match &spec.port {
        SerialPort::Device(path) => open_device(path, spec, modem),
        SerialPort::Socket { host, port } => {
            let address = spec.port.to_string();
            let stream =
                match timeout(CONNECT_TIMEOUT, TcpStream::connect((host.as_str(), *port))).await {
                    Ok(Ok(stream)) => stream,
                    Ok(Err(e)) => return Err(unreachable(&address, &e.to_string())),
                    Err(_) => {
                        return Err(unreachable(
                            &address,
                            &format!("no connection within {} s", CONNECT_TIMEOUT.as_secs()),
                        ))
                    }
                };
            let (reader, writer) = stream.into_split();
            Ok(Console {
                reader: Box::new(reader),
                writer: Box::new(writer),
                control: None,
            })
        }
    }
}

fn unreachable(address: &str, message: &str) -> DutError {
    DutError::Unreachable {
        what: "the console".into(),
        address: address.to_string(),
        message: message.to_string(),
        fix: "is the terminal server (ser2net, a console server) running, and is [serial] port \
              right?"
            .into(),
    }
}

fn open_device(path: &Path, spec: &PortSpec, modem: bool) -> Result<Console, DutError> {
    let shown = path.display().to_string();
    let device = std::fs::canonicalize(path)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| shown.clone());
    if let Err(e) = std::fs::metadata(path) {
        let detail = match std::fs::symlink_metadata(path) {
            Ok(_) => format!("a link to {}, which does not exist", link_target(path)),
            Err(_) => e.to_string(),
        };
        return Err(DutError::NoSuchPort {
            port: shown,
            detail,
        });
    }
    let line = spec.line;
    let builder = tokio_serial::new(shown.clone(), spec.baud)
        .data_bits(match line.data_bits {
            5 => tokio_serial::DataBits::Five,
            6 => tokio_serial::DataBits::Six,
            7 => tokio_serial::DataBits::Seven,
            _ => tokio_serial::DataBits::Eight,
        })
        .parity(match line.parity {
            Parity::None => tokio_serial::Parity::None,
            Parity::Odd => tokio_serial::Parity::Odd,
            Parity::Even => tokio_serial::Parity::Even,
        })
        .stop_bits(match line.stop_bits {
            2 => tokio_serial::StopBits::Two,
            _ => tokio_serial::StopBits::One,
        })
        .flow_control(match line.flow_control {
            FlowControl::None => tokio_serial::FlowControl::None,
            FlowControl::Software => tokio_serial::FlowControl::Software,
            FlowControl::Hardware => tokio_serial::FlowControl::Hardware,
        });
    let failed = |e: tokio_serial::Error| open_error(&shown, &device, &e.kind, &e.description);
    // Opened exclusively first, so a port another program holds is reported as busy.
    let mut stream = builder.clone().open_native_async().map_err(failed)?;
    let mut control = None;
    if modem && spec.reset != SerialReset::None {
        // The reader owns the stream, and a tokio handle cannot be cloned: a second handle for
        // the modem lines needs the lock shared between the two.
        stream.set_exclusive(false).map_err(failed)?;
        let lines = builder.exclusive(false).open().map_err(failed)?;
        control = Some(ModemLines(lines));
    }
    let (reader, writer) = tokio::io::split(stream);
    Ok(Console {
        reader: Box::new(reader),
        writer: Box::new(writer),
        control,
    })
}

fn link_target(path: &Path) -> String {
    std::fs::read_link(path)
        .map(|t| t.display().to_string())
        .unwrap_or_else(|_| "?".into())
}

/// Maps a failed open to the error that says what to do. `port` is the path as configured,
/// `device` what it resolves to.
pub fn open_error(
    port: &str,
    device: &str,
    kind: &tokio_serial::ErrorKind,
    description: &str,
) -> DutError {
    use tokio_serial::ErrorKind as K;
    let lower = description.to_ascii_lowercase();
    let (port, device) = (port.to_string(), device.to_string());
    match kind {
        // serialport reports EBUSY (someone holds TIOCEXCL) and a held exclusive lock as
        // NoDevice.
        K::NoDevice => DutError::PortBusy { port, device },
        K::Io(io::ErrorKind::PermissionDenied) => DutError::PortPermission { port, device },
        K::Io(io::ErrorKind::NotFound) => DutError::NoSuchPort {
            port,
            detail: description.to_string(),
        },
        _ if lower.contains("busy") => DutError::PortBusy { port, device },
        _ if lower.contains("permission denied") => DutError::PortPermission { port, device },
        // ENODEV and ENXIO: the node exists but no device answers behind it.
        _ if lower.contains("no such device") => DutError::NoSuchPort {
            port,
            detail: description.to_string(),
        },
        _ => DutError::Io {
            doing: format!("opening serial port {port}"),
            source: io::Error::other(description.to_string()),
        },
    }
}

/// A modem line wired to the target's reset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line {
    Dtr,
    Rts,
}

impl Line {
    fn name(self) -> &'static str {
        match self {
            Line::Dtr => "DTR",
            Line::Rts => "RTS",
        }
    }
}

/// Setting a port's modem lines. `asserted` is the line's logical state, as serialport's
/// `write_data_terminal_ready(true)` asserts DTR (TIOCMBIS): an adapter's DTR#/RTS# pins are
/// active low, so an asserted line drives its pin low — and holds a target whose nRESET is wired
/// to it in reset.
pub trait ModemControl: Send {
    fn set(&mut self, line: Line, asserted: bool) -> tokio_serial::Result<()>;
}

impl ModemControl for ModemLines {
    fn set(&mut self, line: Line, asserted: bool) -> tokio_serial::Result<()> {
        match line {
            Line::Dtr => self.0.write_data_terminal_ready(asserted),
            Line::Rts => self.0.write_request_to_send(asserted),
        }
    }
}

/// Pulses the reset line as esptool does: asserted (the target held in reset) for the pulse, then
/// released, so the target runs from its first instruction. Opening a port asserts DTR and RTS
/// on Linux; the release is what lets a target wired to one of them run at all.
pub async fn pulse(
    lines: &mut dyn ModemControl,
    reset: SerialReset,
    port: &str,
) -> Result<(), DutError> {
    let (pulse, line) = match reset {
        SerialReset::None => return Ok(()),
        SerialReset::Dtr { pulse } => (pulse, Line::Dtr),
        SerialReset::Rts { pulse } => (pulse, Line::Rts),
    };
    let fail = |e: tokio_serial::Error| DutError::Io {
        doing: format!("pulsing {} on {port} to reset the target", line.name()),
        source: io::Error::other(e.description),
    };
    lines.set(line, true).map_err(fail)?;
    sleep(pulse).await;
    lines.set(line, false).map_err(fail)
}

/// What happened to the port while the reader ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PortEvent {
    /// The port went away; it is being opened again.
    Lost { why: String },
    /// Opened again (the `n`th time in this attempt).
    Reopened { n: u32 },
    /// Gone for good: no reconnects left, or reopening failed.
    Gone { why: String },
}

/// Starts the task that owns the console stream: it pumps lines to `lines` (stamped from `launch`),
/// and when the port ends opens it again up to `reconnects` times, telling `events` each time.
pub fn spawn_reader(
    reader: Reader,
    spec: PortSpec,
    reconnects: u32,
    launch: Instant,
    lines: mpsc::Sender<ConsoleLine>,
    events: mpsc::Sender<PortEvent>,
) -> AbortOnDrop<()> {
    AbortOnDrop(tokio::spawn(async move {
        let mut reader = reader;
        let mut n = 0;
        loop {
            let why = ended_because(pump(reader, Stream::Uart, launch, lines.clone()).await);
            if lines.is_closed() {
                return;
            }
            if n == reconnects {
                let _ = events.send(PortEvent::Gone { why }).await;
                return;
            }
            n += 1;
            let _ = events.send(PortEvent::Lost { why: why.clone() }).await;
            match reopen(&spec).await {
                Ok(console) => {
                    reader = console.reader;
                    let _ = events.send(PortEvent::Reopened { n }).await;
                }
                Err(e) => {
                    let why = format!("{why}; opening it again failed: {e}");
                    let _ = events.send(PortEvent::Gone { why }).await;
                    return;
                }
            }
        }
    }))
}

/// Why a console stream ended, in words.
fn ended_because(result: io::Result<()>) -> String {
    match result {
        Ok(()) => "end of stream".to_string(),
        Err(e) if e.raw_os_error() == Some(EIO) => {
            "I/O error (EIO): the device went away".to_string()
        }
        Err(e) => format!("read error: {e}"),
    }
}

async fn reopen(spec: &PortSpec) -> Result<Console, DutError> {
    let deadline = Instant::now() + REOPEN_WINDOW;
    loop {
        match open(spec, false).await {
            Ok(console) => return Ok(console),
            Err(e) if Instant::now() >= deadline => return Err(e),
            Err(_) => sleep(REOPEN_EVERY).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio_serial::ErrorKind as K;

    #[test]
    fn busy_ports_say_how_to_find_the_holder() {
        let e = open_error(
            "/dev/serial/by-id/usb-x",
            "/dev/ttyACM0",
            &K::NoDevice,
            "Unable to acquire exclusive lock on serial port",
        );
        assert!(matches!(e, DutError::PortBusy { .. }));
        let text = e.to_string();
        assert!(text.contains("/dev/serial/by-id/usb-x is busy"), "{text}");
        assert!(text.contains("fuser -v /dev/ttyACM0"), "{text}");
        let e = open_error(
            "/dev/ttyUSB0",
            "/dev/ttyUSB0",
            &K::Unknown,
            "Device or resource busy",
        );
        assert!(matches!(e, DutError::PortBusy { .. }));
    }

    // fwfix's test suite runs as root in CI, and root opens any device node whatever its mode:
    // the permission case cannot be produced for real there, so its mapping is checked here.
    #[test]
    fn permission_denied_says_how_to_join_the_group() {
        let e = open_error(
            "/dev/ttyACM0",
            "/dev/ttyACM0",
            &K::Io(io::ErrorKind::PermissionDenied),
            "Permission denied",
        );
        assert!(matches!(e, DutError::PortPermission { .. }));
        let text = e.to_string();
        assert!(text.contains("sudo usermod -aG dialout $USER"), "{text}");
        assert!(text.contains("log out and in again"), "{text}");
        assert!(text.contains("ls -l /dev/ttyACM0"), "{text}");
    }

    #[test]
    fn missing_devices_say_to_plug_the_board_in() {
        for (kind, text) in [
            (K::Io(io::ErrorKind::NotFound), "No such file or directory"),
            (K::Unknown, "No such device or address"),
        ] {
            let e = open_error("/dev/ttyACM3", "/dev/ttyACM3", &kind, text);
            assert!(matches!(e, DutError::NoSuchPort { .. }), "{e}");
            assert!(e.to_string().contains("/dev/serial/by-id/"), "{e}");
        }
        let other = open_error("/dev/x", "/dev/x", &K::InvalidInput, "bad baud");
        assert!(matches!(other, DutError::Io { .. }));
    }

    #[test]
    fn stream_endings_in_words() {
        assert_eq!(ended_because(Ok(())), "end of stream");
        let eio = ended_because(Err(io::Error::from_raw_os_error(EIO)));
        assert!(eio.contains("EIO"), "{eio}");
        let other = ended_because(Err(io::Error::from(io::ErrorKind::ConnectionReset)));
        assert!(other.starts_with("read error"), "{other}");
    }

    /// Modem lines that record what was set and when, and can fail from the `fail_at`th call.
    struct Recorded {
        sets: Vec<(Line, bool, std::time::Instant)>,
        fail_at: Option<usize>,
    }

    impl ModemControl for Recorded {
        fn set(&mut self, line: Line, asserted: bool) -> tokio_serial::Result<()> {
            if self.fail_at == Some(self.sets.len()) {
                return Err(tokio_serial::Error::new(K::NoDevice, "device disconnected"));
            }
            self.sets.push((line, asserted, std::time::Instant::now()));
            Ok(())
        }
    }

    fn recorded(fail_at: Option<usize>) -> Recorded {
        Recorded {
            sets: Vec::new(),
            fail_at,
        }
    }

    // Regression: the pulse released the line first and ended with it asserted, which left a
    // target wired to it held in reset.
    #[tokio::test]
    async fn reset_pulse_asserts_holds_then_releases_the_line() {
        let pulse_for = Duration::from_millis(30);
        for (reset, line) in [
            (SerialReset::Dtr { pulse: pulse_for }, Line::Dtr),
            (SerialReset::Rts { pulse: pulse_for }, Line::Rts),
        ] {
            let mut lines = recorded(None);
            pulse(&mut lines, reset, "/dev/ttyUSB0").await.unwrap();
            let sequence: Vec<(Line, bool)> = lines.sets.iter().map(|(l, a, _)| (*l, *a)).collect();
            assert_eq!(sequence, [(line, true), (line, false)], "{reset:?}");
            let held = lines.sets[1].2 - lines.sets[0].2;
            assert!(held >= pulse_for, "held for {held:?} only");
        }
        let mut lines = recorded(None);
        pulse(&mut lines, SerialReset::None, "/dev/ttyUSB0")
            .await
            .unwrap();
        assert!(lines.sets.is_empty());
    }

    #[tokio::test]
    async fn a_failed_reset_pulse_names_the_line_and_port() {
        let reset = SerialReset::Rts {
            pulse: Duration::from_millis(1),
        };
        for fail_at in [0, 1] {
            let mut lines = recorded(Some(fail_at));
            let e = pulse(&mut lines, reset, "/dev/ttyACM0").await.unwrap_err();
            let text = e.to_string();
            assert!(text.contains("pulsing RTS on /dev/ttyACM0"), "{text}");
        }
    }

    #[test]
    fn missing_device_and_dangling_link() {
        let dir = tempfile::tempdir().unwrap();
        let spec = |path: &Path| PortSpec {
            port: SerialPort::Device(path.to_path_buf()),
            baud: 115_200,
            line: SerialLine::default(),
            reset: SerialReset::None,
        };
        let missing = dir.path().join("ttyNONE");
        let e = open_device(&missing, &spec(&missing), false).err().unwrap();
        assert!(matches!(e, DutError::NoSuchPort { .. }), "{e}");
        let link = dir.path().join("usb-board-if00");
        std::os::unix::fs::symlink(&missing, &link).unwrap();
        let e = open_device(&link, &spec(&link), false).err().unwrap();
        assert!(e.to_string().contains("which does not exist"), "{e}");
    }
}
