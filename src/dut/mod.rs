//! Devices under test behind one trait: QEMU (`qemu/`) and real boards (`board/`: flashed through a
//! GDB server, a flasher command, or a debug probe with probe-rs in `probe/`, which has its own
//! driver trait and a fake) and labgrid places (`labgrid/`, the place acquired by the command). The orchestrator
//! opens a backend with [`open`] and only ever talks to `dyn Dut`. This module owns the trait, the
//! factory and the DUT error type; it runs nothing itself. A board's host-wide state lives beside
//! it: who holds it (`lease`), whether it is fit to run (`health`), and its power (`power`).

pub mod board;
pub mod boards_state;
pub mod cortex_m;
pub mod health;
pub mod labgrid;
pub mod lease;
pub mod power;
pub mod probe;
pub mod qemu;
pub mod rsp;
mod session;

use crate::capture::nonce::{Nonce, NonceCheck};
use crate::capture::{Capture, EndDetector};
use crate::config::{Board, BoardBackend};
use crate::events::EventSink;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The image to run.
#[derive(Debug, Clone)]
pub struct Image {
    pub elf: PathBuf,
}

/// What one attempt needs besides the image.
pub struct RunSpec {
    /// The test timeout: no final verdict by then is a hang.
    pub timeout: Duration,
    /// Ends the attempt the moment the harness prints its final verdict. It is the harness's
    /// streaming parse: every live UART line goes to it, also after the verdict.
    pub detector: Box<dyn EndDetector>,
    /// Where the timestamped console goes (created or truncated).
    pub console_log: PathBuf,
    /// Text handed to the image (QEMU: its semihosting command line, read by SYS_GET_CMDLINE).
    pub append: Option<String>,
    /// This attempt's nonce, when the backend can hand one out ([`Dut::nonce_check`],
    /// [`Dut::next_nonce`]): QEMU puts it first on the semihosting command line, a board writes it
    /// to its console after reset.
    pub nonce: Option<Nonce>,
    /// Cancelled on Ctrl+C, SIGTERM or the run's deadline: the backend stops the target at once.
    pub cancel: CancellationToken,
    /// Attempt number, for events.
    pub attempt: u32,
    /// Another attempt of the same image follows: the backend may get it ready (see
    /// [`Dut::prepare`]) as soon as this one has stopped the target.
    pub prepare_next: bool,
}

/// Errors of the DUT layer: the environment failed, not the firmware.
#[derive(Debug, thiserror::Error)]
pub enum DutError {
    #[error("{program} not found: {hint}")]
    ToolMissing { program: String, hint: String },
    #[error("{program} failed to start: {message}")]
    StartFailed { program: String, message: String },
    #[error("{program} rejected its arguments: {message}")]
    BadArguments { program: String, message: String },
    #[error("I/O error while {doing}: {source}")]
    Io {
        doing: String,
        #[source]
        source: std::io::Error,
    },
    #[error("board {board}: the {backend} backend is not supported yet")]
    Unsupported { board: String, backend: String },
    /// The image could not be put on the target (or started through the flasher): a
    /// FLASH_FAILURE, never a test failure. `log` is the flasher's output (also in flash.log).
    #[error("flashing with {method} failed: {message}{}", output_tail(log))]
    Flash {
        method: String,
        message: String,
        log: String,
    },
    /// `port` as configured; `device` what it resolves to (a `/dev/serial/by-id/` link's target).
    #[error(
        "serial port {port} is busy: another program holds it open (a terminal such as minicom or \
         screen, ModemManager, another fwfix run); find it with `fuser -v {device}` and close it"
    )]
    PortBusy { port: String, device: String },
    #[error(
        "permission denied opening serial port {port}: add yourself to the group that owns \
         {device} (usually dialout: `sudo usermod -aG dialout $USER`, then log out and in again \
         so the new group applies); `ls -l {device}` shows the group"
    )]
    PortPermission { port: String, device: String },
    #[error(
        "no such serial device {port} ({detail}): is the board plugged in and powered? \
         `ls -l /dev/serial/by-id/` lists the adapters connected now"
    )]
    NoSuchPort { port: String, detail: String },
    /// A network service the backend needs (a GDB server, a terminal server) did not answer.
    #[error("cannot reach {what} at {address}: {message}; {fix}")]
    Unreachable {
        what: String,
        address: String,
        message: String,
        fix: String,
    },
    /// A `[power]` command failed or overran: the board's state is unknown. `log` is what the
    /// command printed (also in power.log).
    #[error(
        "power {action} of board {board} failed: `{command}` {message}{}",
        output_tail(log)
    )]
    Power {
        board: String,
        action: String,
        command: String,
        message: String,
        log: String,
    },
    /// The debug probe could not be found, opened or attached, or the core could not be
    /// watched (not flashing: that is [`DutError::Flash`]).
    #[error(transparent)]
    Probe(#[from] probe::ProbeError),
    #[error("{0}")]
    Other(String),
}

/// Lines of a flasher's (or a power command's) output a [`DutError::Flash`] (or
/// [`DutError::Power`]) message repeats; the whole is in flash.log (power.log).
const FLASH_TAIL_LINES: usize = 20;

fn output_tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return String::new();
    }
    let tail = &lines[lines.len().saturating_sub(FLASH_TAIL_LINES)..];
    format!("\n{}", tail.join("\n"))
}

/// Where a backend that flashes keeps the flasher's output for an attempt: next to its console
/// log, `console.log` → `flash.log`, `console-2.log` → `flash-2.log`.
pub fn flash_log_path(console_log: &Path) -> PathBuf {
    let name = console_log
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let flash = match name.strip_prefix("console") {
        Some(rest) => format!("flash{rest}"),
        None => format!("{name}.flash.log"),
    };
    console_log.with_file_name(flash)
}

/// Opens the backend a board file asks for.
pub fn open(board: &Board) -> Result<Box<dyn Dut>, DutError> {
    match &board.backend {
        BoardBackend::Qemu(spec) => Ok(Box::new(
            qemu::QemuDut::new(&board.name, spec.clone())
                .with_cache(crate::config::host::cache_dir()),
        )),
        BoardBackend::Hardware(spec) => Ok(Box::new(board::BoardDut::new(board, spec.clone())?)),
        BoardBackend::Labgrid(spec) => Ok(Box::new(labgrid::LabgridDut::new(board, spec.clone())?)),
    }
}

/// A device under test. Blocking-free: backends own their processes and ports and stop them on
/// every exit path (including being dropped).
#[async_trait::async_trait]
pub trait Dut: Send {
    /// A short description for messages, e.g. `qemu mps2-an385`.
    fn describe(&self) -> String;

    /// Checks the backend can work at all (binary present, machine known) before any build time is
    /// spent on it.
    async fn check(&mut self) -> Result<(), DutError>;

    /// Boots or flashes the image, captures the console until the verdict, an exit, a crash, the
    /// timeout or cancellation, and leaves the target stopped.
    async fn run(
        &mut self,
        image: &Image,
        spec: RunSpec,
        events: &dyn EventSink,
    ) -> Result<Capture, DutError>;

    /// The target's power switch (`[power]`), where the backend has one.
    fn power(&self) -> Option<&power::Power> {
        None
    }

    /// How this backend can hand an attempt a nonce (see `capture::nonce`), or None when it
    /// cannot; [`RunSpec::nonce`] is then left empty.
    fn nonce_check(&self) -> Option<NonceCheck> {
        None
    }

    /// Gets the target of the next attempt ready while fwfix does other work (the build), for
    /// the image that will be at `elf`. QEMU starts paused with no image and is given it through
    /// its gdbstub when the attempt runs. Nothing by default; failing here costs nothing, the
    /// attempt then starts the target itself and says what went wrong.
    async fn prepare(&mut self, _elf: &std::path::Path) {}

    /// The nonce for the next attempt's [`RunSpec::nonce`]: the one a prepared target was
    /// already given, else a fresh one.
    fn next_nonce(&mut self) -> Option<Nonce> {
        self.nonce_check().map(Nonce::fresh)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{
        ConsoleSpec, FlashSpec, GdbSpec, GdbStart, HardwareSpec, LabgridSpec, QemuSpec,
    };
    use std::path::PathBuf;

    fn board(backend: BoardBackend) -> Board {
        Board {
            name: "b1".into(),
            source: PathBuf::from("boards/b1.toml"),
            backend,
            power: None,
            health: None,
        }
    }

    #[test]
    fn opens_qemu() {
        let dut = open(&board(BoardBackend::Qemu(QemuSpec {
            binary: "qemu-system-arm".into(),
            machine: "mps2-an385".into(),
            cpu: None,
            extra_args: vec![],
        })))
        .unwrap();
        assert_eq!(dut.describe(), "qemu mps2-an385");
    }

    #[test]
    fn opens_a_board_and_refuses_what_is_not_supported_yet() {
        let hw = |console| {
            BoardBackend::Hardware(HardwareSpec {
                flash: FlashSpec::Gdb(GdbSpec {
                    remote: "127.0.0.1:3333".into(),
                    gdb: "gdb-multiarch".into(),
                    init: vec![],
                    start: GdbStart::VectorTable,
                }),
                console,
                flash_timeout: std::time::Duration::from_secs(60),
                reset_command: None,
            })
        };
        let serial = ConsoleSpec::Serial {
            port: crate::config::SerialPort::Device("/dev/ttyACM0".into()),
            baud: 115_200,
            line: crate::config::SerialLine::default(),
            reset: crate::config::SerialReset::None,
            reconnect: 0,
            nonce: false,
        };
        let dut = open(&board(hw(serial))).unwrap();
        assert!(dut.describe().starts_with("board b1 (gdb 127.0.0.1:3333"));
        let lg = BoardBackend::Labgrid(LabgridSpec {
            place: Some("p".into()),
            tags: vec![],
            coordinator: None,
            flash: None,
        });
        let unheld = open(&board(lg)).err().unwrap();
        assert!(
            unheld.to_string().contains("no labgrid place is acquired"),
            "{unheld}"
        );
        let rtt = hw(ConsoleSpec::Rtt {
            channels: None,
            nonce: false,
        });
        let err = open(&board(rtt)).err().unwrap();
        assert!(
            matches!(err, DutError::Unsupported { ref backend, .. } if backend.starts_with("board")),
            "{err}"
        );
        assert!(err.to_string().contains("not supported yet"));
    }

    #[test]
    fn flash_log_sits_next_to_the_console_log() {
        let p = |s: &str| flash_log_path(Path::new(s));
        assert_eq!(
            p("run/iter-000/console.log"),
            Path::new("run/iter-000/flash.log")
        );
        assert_eq!(
            p("run/iter-000/console-2.log"),
            Path::new("run/iter-000/flash-2.log")
        );
        assert_eq!(p("out/uart.txt"), Path::new("out/uart.txt.flash.log"));
    }

    #[test]
    fn flash_errors_repeat_the_end_of_the_output() {
        let log: String = (1..=30).map(|i| format!("line {i}\n")).collect();
        let e = DutError::Flash {
            method: "command".into(),
            message: "exited with exit status: 1".into(),
            log,
        };
        let text = e.to_string();
        assert!(text.starts_with("flashing with command failed: exited with exit status: 1\n"));
        assert!(
            text.contains("line 30") && text.contains("line 11") && !text.contains("line 10\n")
        );
        let quiet = DutError::Flash {
            method: "gdb".into(),
            message: "m".into(),
            log: String::new(),
        };
        assert_eq!(quiet.to_string(), "flashing with gdb failed: m");
    }
}
