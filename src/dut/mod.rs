//! Devices under test behind one trait: QEMU (`qemu/`), real boards and labgrid places later, and a
//! fake. The orchestrator opens a backend with [`open`] and only ever talks to `dyn Dut`.

pub mod qemu;

use crate::capture::{Capture, EndDetector};
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
    #[error("{0}")]
    Other(String),
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
