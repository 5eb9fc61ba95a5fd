//! A target reached through a USB debug probe with probe-rs: the project's own driver traits
//! ([`ProbeDriver`] finds and opens probes, [`ProbeSession`] is one attached target), the
//! probe-rs implementation (`real`), a full in-memory one for tests (`fake`), the console decoder
//! for RTT bytes (`console`: defmt frames or text), and one attempt (`session`).
//!
//! Why our own traits: probe-rs's own test probe cannot flash, reset or read RTT, and every path
//! of an attempt (flash failure, semihosting exit, HardFault, hang) must be testable on a machine
//! with no probe. The traits are blocking, like probe-rs; the session calls them from one
//! blocking thread. Nothing here prints or decides how a run ends.

pub mod console;
pub mod fake;
pub mod real;
pub(crate) mod session;

use crate::dut::cortex_m::CoreRegs;
use serde::Serialize;
use std::fmt::Write as _;
use std::path::Path;

/// A debug probe connected to this host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProbeInfo {
    /// The probe's name, e.g. `STLink V2-1`.
    pub identifier: String,
    pub vendor_id: u16,
    pub product_id: u16,
    pub serial: Option<String>,
    /// The probe family, e.g. `ST-LINK`, `CMSIS-DAP`, `J-Link`.
    pub kind: String,
}

impl ProbeInfo {
    /// The `[probe] selector` that picks exactly this probe: `VID:PID[:SERIAL]`.
    pub fn selector(&self) -> String {
        let mut s = format!("{:04x}:{:04x}", self.vendor_id, self.product_id);
        if let Some(serial) = &self.serial {
            let _ = write!(s, ":{serial}");
        }
        s
    }
}

/// What to attach to, from the board file's `[probe]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttachRequest {
    pub chip: String,
    /// `VID:PID[:SERIAL]`; None takes the only probe connected.
    pub selector: Option<String>,
    /// `swd` or `jtag`.
    pub protocol: Option<String>,
    pub speed_khz: Option<u32>,
    /// Attach while the target is held in reset, without a plain attach first.
    pub under_reset: bool,
}

/// One step of flashing, in the order probe-rs reports them: each operation (`erase`,
/// `program`, `verify`, `fill`) starts, makes progress, and finishes or fails.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlashEvent {
    Started {
        phase: &'static str,
        total: Option<u64>,
    },
    Progress {
        phase: &'static str,
        bytes: u64,
    },
    Finished {
        phase: &'static str,
    },
    Failed {
        phase: &'static str,
    },
    /// A message from the flash algorithm.
    Message(String),
}

/// Why a halted core stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Halt {
    /// The image exited through semihosting, with its exit status.
    Exit { code: i32 },
    /// The image asked for its command line (semihosting SYS_GET_CMDLINE) and waits for it.
    CommandLine,
    /// A fault exception caught on entry (vector catch).
    Exception,
    /// A breakpoint instruction or a hardware breakpoint, not a semihosting call.
    Breakpoint,
    /// The debugger asked it to stop.
    Request,
    /// Anything else, as probe-rs names it.
    Other(String),
}

/// What the core is doing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CoreState {
    Running,
    Halted(Halt),
    /// A fault inside the fault handler: the core stopped for good.
    LockedUp,
}

/// What a blocking probe operation failed with. Each variant says what to do about it.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ProbeError {
    #[error("{}", not_found(selector.as_deref(), connected))]
    NotFound {
        selector: Option<String>,
        connected: Vec<ProbeInfo>,
    },
    #[error(
        "several debug probes are connected ({}); set [probe] selector in the board file to one \
         of them",
        connected.iter().map(ProbeInfo::selector).collect::<Vec<_>>().join(", ")
    )]
    Ambiguous { connected: Vec<ProbeInfo> },
    #[error(
        "cannot open debug probe {probe}: {message}. If another program holds it (probe-rs, \
         OpenOCD, an IDE's debugger, another fwfix run), close it; if it is a permission problem, \
         install probe-rs's udev rules (69-probe-rs.rules in /etc/udev/rules.d, then \
         `sudo udevadm control --reload && sudo udevadm trigger`) and make sure you are in the \
         plugdev group"
    )]
    Open { probe: String, message: String },
    #[error(
        "chip {chip:?} ([probe] chip) is not known to probe-rs: {message}; `probe-rs chip list` \
         shows the names it knows"
    )]
    ChipUnknown { chip: String, message: String },
    #[error(
        "cannot attach to {chip} through {probe}, not even with the target held in reset: \
         {message}. Check the wiring and the target's power; [probe] protocol and speed_khz may \
         help"
    )]
    Attach {
        chip: String,
        probe: String,
        message: String,
    },
    #[error("{message}")]
    Flash { message: String },
    #[error("debug probe: {doing} failed: {message}")]
    Core { doing: String, message: String },
}

fn not_found(selector: Option<&str>, connected: &[ProbeInfo]) -> String {
    let wanted = match selector {
        Some(s) => format!("no debug probe matches [probe] selector {s}"),
        None => "no debug probe found".to_string(),
    };
    if connected.is_empty() {
        return format!(
            "{wanted}, and none is connected: is it plugged in? `fwfix boards probes` lists the \
             probes this host sees"
        );
    }
    let list: Vec<String> = connected
        .iter()
        .map(|p| format!("{} ({})", p.selector(), p.identifier))
        .collect();
    format!("{wanted}; connected: {}", list.join(", "))
}

/// Finds and opens debug probes.
pub trait ProbeDriver: Send + Sync {
    /// The probes connected now.
    fn list(&self) -> Vec<ProbeInfo>;

    /// Opens the probe `request` selects and attaches to its chip as [`attach`] decides.
    fn open(&self, request: &AttachRequest) -> Result<Box<dyn ProbeSession>, ProbeError>;
}

/// One attached target. Dropping it closes the probe and leaves the core as it is.
pub trait ProbeSession: Send {
    /// The probe, for messages.
    fn describe(&self) -> String;

    /// Writes the ELF's loadable sections to flash, reporting each step.
    fn flash(&mut self, elf: &Path, progress: &mut dyn FnMut(FlashEvent))
        -> Result<(), ProbeError>;

    /// Resets the core and lets it run from its reset vector, halting on a HardFault's entry.
    fn reset_and_run(&mut self) -> Result<(), ProbeError>;

    fn status(&mut self) -> Result<CoreState, ProbeError>;

    fn halt(&mut self) -> Result<(), ProbeError>;

    /// Lets a halted core go on.
    fn resume(&mut self) -> Result<(), ProbeError>;

    /// Answers a [`Halt::CommandLine`] with `text` (the core stays halted).
    fn answer_command_line(&mut self, text: &str) -> Result<(), ProbeError>;

    /// r0-r15 and xPSR of the halted core.
    fn read_registers(&mut self) -> Result<CoreRegs, ProbeError>;

    /// The process stack pointer of the halted core: where a task's exception frame is when the
    /// core was stopped in a handler that interrupted it.
    fn read_psp(&mut self) -> Result<u32, ProbeError>;

    fn read_words(&mut self, address: u32, count: usize) -> Result<Vec<u32>, ProbeError>;

    /// Looks for the image's RTT control block; the number of up channels when found.
    fn rtt_attach(&mut self) -> Result<Option<usize>, ProbeError>;

    /// Reads what the image wrote to up channel `channel` since the last read.
    fn rtt_read(&mut self, channel: usize, buf: &mut [u8]) -> Result<usize, ProbeError>;

    /// Writes to down channel `channel` (the hook for handing the image a line after reset, as
    /// the run nonce); the number of bytes the channel took.
    fn rtt_write(&mut self, channel: usize, bytes: &[u8]) -> Result<usize, ProbeError>;
}

/// Attaches the way `request` asks: under reset straight away when it says so; otherwise a
/// plain attach first and, when the core refuses it, under reset, since a firmware that takes
/// over the debug pins or sleeps deeply only lets a debugger in while it is held in reset. An
/// unknown chip or a probe that cannot be opened is not retried. Each closure attaches one way
/// and reports a refusal as [`ProbeError::Attach`].
pub fn attach<S>(
    request: &AttachRequest,
    plain: impl FnOnce() -> Result<S, ProbeError>,
    under_reset: impl FnOnce() -> Result<S, ProbeError>,
) -> Result<S, ProbeError> {
    if request.under_reset {
        return under_reset();
    }
    match plain() {
        Err(ProbeError::Attach { .. }) => under_reset(),
        done => done,
    }
}

/// Which of the `connected` probes `selector` (`VID:PID[:SERIAL]`) picks; without a selector,
/// the only one connected.
pub fn select(connected: &[ProbeInfo], selector: Option<&str>) -> Result<usize, ProbeError> {
    let not_found = || ProbeError::NotFound {
        selector: selector.map(str::to_string),
        connected: connected.to_vec(),
    };
    match selector {
        Some(wanted) => {
            let wanted = wanted.to_ascii_lowercase();
            connected
                .iter()
                .position(|p| {
                    let full = p.selector().to_ascii_lowercase();
                    // VID:PID alone picks the first probe of that model.
                    full == wanted || full.starts_with(&format!("{wanted}:"))
                })
                .ok_or_else(not_found)
        }
        None => match connected.len() {
            0 => Err(not_found()),
            1 => Ok(0),
            _ => Err(ProbeError::Ambiguous {
                connected: connected.to_vec(),
            }),
        },
    }
}

/// The debug probes connected to this host, through probe-rs.
pub fn list_probes() -> Vec<ProbeInfo> {
    real::RealDriver.list()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(serial: Option<&str>) -> ProbeInfo {
        ProbeInfo {
            identifier: "STLink V2-1".into(),
            vendor_id: 0x0483,
            product_id: 0x374b,
            serial: serial.map(str::to_string),
            kind: "ST-LINK".into(),
        }
    }

    #[test]
    fn a_selector_names_one_probe() {
        assert_eq!(probe(None).selector(), "0483:374b");
        assert_eq!(probe(Some("066DFF")).selector(), "0483:374b:066DFF");
    }

    #[test]
    fn probe_not_found_lists_what_is_connected() {
        let none = ProbeError::NotFound {
            selector: None,
            connected: vec![],
        };
        assert!(none.to_string().contains("fwfix boards probes"), "{none}");
        let other = ProbeError::NotFound {
            selector: Some("1366:0105".into()),
            connected: vec![probe(Some("066DFF"))],
        };
        let text = other.to_string();
        assert!(
            text.contains("no debug probe matches [probe] selector 1366:0105")
                && text.contains("0483:374b:066DFF (STLink V2-1)"),
            "{text}"
        );
    }

    #[test]
    fn a_selector_picks_by_model_or_serial() {
        let two = [probe(Some("AAA")), probe(Some("BBB"))];
        assert_eq!(select(&two, Some("0483:374B:BBB")).unwrap(), 1);
        assert_eq!(select(&two, Some("0483:374b")).unwrap(), 0);
        assert!(matches!(
            select(&two, None),
            Err(ProbeError::Ambiguous { .. })
        ));
        assert!(matches!(
            select(&two, Some("1366:0105")),
            Err(ProbeError::NotFound { .. })
        ));
        assert!(matches!(
            select(&[], None),
            Err(ProbeError::NotFound { .. })
        ));
    }

    #[test]
    fn errors_say_what_to_do() {
        let busy = ProbeError::Open {
            probe: "0483:374b".into(),
            message: "device busy".into(),
        };
        assert!(busy.to_string().contains("69-probe-rs.rules"));
        assert!(busy.to_string().contains("plugdev"));
        let chip = ProbeError::ChipUnknown {
            chip: "STM32F9".into(),
            message: "no such chip".into(),
        };
        assert!(chip.to_string().contains("\"STM32F9\""));
        assert!(chip.to_string().contains("probe-rs chip list"));
    }
}
