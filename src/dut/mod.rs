//! Devices under test behind one trait: QEMU (`qemu/`), real boards and labgrid places later, and a
//! fake. The orchestrator opens a backend with [`open`] and only ever talks to `dyn Dut`. This
//! module owns the trait, the factory and the DUT error type; it runs nothing itself.

pub mod cortex_m;
pub mod qemu;

use crate::capture::{Capture, EndDetector};
use crate::config::{Board, BoardBackend};
use crate::events::EventSink;
use std::path::PathBuf;
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
    /// Ends the attempt the moment the harness prints its final verdict.
    pub detector: Box<dyn EndDetector>,
    /// Where the timestamped console goes (created or truncated).
    pub console_log: PathBuf,
    /// Text handed to the image (QEMU: `-append`, read by semihosting SYS_GET_CMDLINE).
    pub append: Option<String>,
    /// Cancelled on Ctrl+C, SIGTERM or the run's deadline: the backend stops the target at once.
    pub cancel: CancellationToken,
    /// Attempt number, for events.
    pub attempt: u32,
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
    #[error("{0}")]
    Other(String),
}

/// Opens the backend a board file asks for.
pub fn open(board: &Board) -> Result<Box<dyn Dut>, DutError> {
    let backend = match &board.backend {
        BoardBackend::Qemu(spec) => {
            return Ok(Box::new(qemu::QemuDut::new(&board.name, spec.clone())));
        }
        BoardBackend::Hardware(_) => "board",
        BoardBackend::Labgrid(_) => "labgrid",
    };
    Err(DutError::Unsupported {
        board: board.name.clone(),
        backend: backend.to_string(),
    })
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

    /// Power-cycles the target, where the backend can.
    async fn power_cycle(&mut self) -> Option<Result<(), DutError>> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ConsoleSpec, FlashSpec, GdbSpec, HardwareSpec, LabgridSpec, QemuSpec};
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
    fn other_backends_are_not_supported_yet() {
        let hw = BoardBackend::Hardware(HardwareSpec {
            flash: FlashSpec::Gdb(GdbSpec {
                remote: "127.0.0.1:3333".into(),
                gdb: "gdb-multiarch".into(),
                init: vec![],
            }),
            console: ConsoleSpec::Rtt,
            flash_timeout: std::time::Duration::from_secs(60),
            reset_command: None,
        });
        let lg = BoardBackend::Labgrid(LabgridSpec {
            place: None,
            tags: vec![],
        });
        for (backend, name) in [(hw, "board"), (lg, "labgrid")] {
            let err = open(&board(backend)).err().unwrap();
            assert!(
                matches!(err, DutError::Unsupported { ref backend, .. } if backend == name),
                "{err}"
            );
            assert!(err.to_string().contains("not supported yet"));
        }
    }
}
