//! The probe-rs implementation of the driver traits: list probes, open one by selector, attach
//! by chip name (plainly or under reset, as [`super::attach`] decides), flash an ELF with progress, run, halt,
//! read the core, answer a semihosting command-line request, and RTT. Every call blocks; the
//! session calls them from one blocking thread. It maps probe-rs errors to [`ProbeError`]s that
//! say what to do, and decides nothing about the run.

use super::{
    AttachRequest, CoreState, FlashEvent, Halt, ProbeDriver, ProbeError, ProbeInfo, ProbeSession,
};
use crate::dut::cortex_m::CoreRegs;
use probe_rs::flashing::{
    download_file_with_options, DownloadOptions, ElfLoader, ElfOptions, FileDownloadError,
    FlashProgress, ProgressEvent, ProgressOperation,
};
use probe_rs::probe::list::Lister;
use probe_rs::probe::{DebugProbeError, DebugProbeInfo, WireProtocol};
use probe_rs::rtt::Rtt;
use probe_rs::semihosting::{GetCommandLineRequest, SemihostingCommand};
use probe_rs::{
    BreakpointCause, Core, CoreStatus, Error, HaltReason, MemoryInterface, Permissions, RegisterId,
    Session, VectorCatchCondition,
};
use std::path::Path;
use std::time::Duration;

/// How long a halt or a reset-and-halt may take.
const HALT_TIMEOUT: Duration = Duration::from_millis(500);
/// xPSR's register number in probe-rs's Cortex-M register file.
const XPSR: u16 = 16;
/// The PSP's selector in DCRSR (ARMv7-M and ARMv8-M alike).
const PSP: u16 = 18;

/// probe-rs's probes.
pub struct RealDriver;

impl ProbeDriver for RealDriver {
    fn list(&self) -> Vec<ProbeInfo> {
        Lister::new().list_all().iter().map(info).collect()
    }

    fn open(&self, request: &AttachRequest) -> Result<Box<dyn ProbeSession>, ProbeError> {
        let connected = Lister::new().list_all();
        let infos: Vec<ProbeInfo> = connected.iter().map(info).collect();
        let chosen = &connected[super::select(&infos, request.selector.as_deref())?];
        let name = info(chosen).selector();
        let open_error = |e: DebugProbeError| ProbeError::Open {
            probe: name.clone(),
            message: e.to_string(),
        };
        let open = || -> Result<probe_rs::probe::Probe, ProbeError> {
            let mut probe = chosen.open().map_err(open_error)?;
            if let Some(protocol) = &request.protocol {
                let protocol: WireProtocol =
                    protocol.parse().map_err(|message| ProbeError::Open {
                        probe: name.clone(),
                        message,
                    })?;
                probe.select_protocol(protocol).map_err(open_error)?;
            }
            if let Some(khz) = request.speed_khz {
                probe.set_speed(khz).map_err(open_error)?;
            }
            Ok(probe)
        };
        let refused = |e: Error| match e {
            Error::ChipNotFound(e) => ProbeError::ChipUnknown {
                chip: request.chip.clone(),
                message: e.to_string(),
            },
            e => ProbeError::Attach {
                chip: request.chip.clone(),
                probe: name.clone(),
                message: e.to_string(),
            },
        };
        let chip = request.chip.as_str();
        let session = super::attach(
            request,
            || {
                open()?
                    .attach(chip, Permissions::default())
                    .map_err(refused)
            },
            || {
                open()?
                    .attach_under_reset(chip, Permissions::default())
                    .map_err(refused)
            },
        )?;
        Ok(Box::new(RealSession {
            session,
            name,
            rtt: None,
            command_line: None,
        }))
    }
}

fn info(p: &DebugProbeInfo) -> ProbeInfo {
    // The probe family is only shown in the info's display text: `NAME -- VID:PID:SN (FAMILY)`.
    let shown = p.to_string();
    let kind = shown
        .rsplit_once('(')
        .and_then(|(_, rest)| rest.strip_suffix(')'))
        .unwrap_or_default()
        .to_string();
    ProbeInfo {
        identifier: p.identifier.clone(),
        vendor_id: p.vendor_id,
        product_id: p.product_id,
        serial: p.serial_number.clone().filter(|s| !s.is_empty()),
        kind,
    }
}

struct RealSession {
    session: Session,
    name: String,
    rtt: Option<Rtt>,
    /// The pending SYS_GET_CMDLINE request, until it is answered.
    command_line: Option<GetCommandLineRequest>,
}

impl RealSession {
    fn core(&mut self, doing: &str) -> Result<Core<'_>, ProbeError> {
        self.session.core(0).map_err(|e| core_error(doing, e))
    }
}

fn core_error(doing: &str, e: impl std::fmt::Display) -> ProbeError {
    ProbeError::Core {
        doing: doing.to_string(),
        message: e.to_string(),
    }
}

fn phase(op: ProgressOperation) -> &'static str {
    match op {
        ProgressOperation::Fill => "fill",
        ProgressOperation::Erase => "erase",
        ProgressOperation::Program => "program",
        ProgressOperation::Verify => "verify",
    }
}

impl ProbeSession for RealSession {
    fn describe(&self) -> String {
        self.name.clone()
    }

    fn flash(
        &mut self,
        elf: &Path,
        progress: &mut dyn FnMut(FlashEvent),
    ) -> Result<(), ProbeError> {
        let mut totals = Vec::new();
        let mut options = DownloadOptions::default();
        options.verify = true;
        options.progress = FlashProgress::new(|event| match event {
            ProgressEvent::AddProgressBar { operation, total } => totals.push((operation, total)),
            ProgressEvent::Started(op) => {
                let total = totals
                    .iter()
                    .find(|(o, _)| phase(*o) == phase(op))
                    .and_then(|(_, t)| *t);
                progress(FlashEvent::Started {
                    phase: phase(op),
                    total,
                });
            }
            ProgressEvent::Progress {
                operation, size, ..
            } => progress(FlashEvent::Progress {
                phase: phase(operation),
                bytes: size,
            }),
            ProgressEvent::Finished(op) => progress(FlashEvent::Finished { phase: phase(op) }),
            ProgressEvent::Failed(op) => progress(FlashEvent::Failed { phase: phase(op) }),
            ProgressEvent::DiagnosticMessage { message } => progress(FlashEvent::Message(message)),
            ProgressEvent::FlashLayoutReady { .. } => {}
        });
        download_file_with_options(
            &mut self.session,
            elf,
            ElfLoader(ElfOptions::default()),
            options,
        )
        .map_err(|e: FileDownloadError| ProbeError::Flash {
            message: e.to_string(),
        })
    }

    fn reset_and_run(&mut self) -> Result<(), ProbeError> {
        self.rtt = None;
        self.command_line = None;
        let mut core = self.core("reset")?;
        core.reset_and_halt(HALT_TIMEOUT)
            .map_err(|e| core_error("reset", e))?;
        core.enable_vector_catch(VectorCatchCondition::HardFault)
            .map_err(|e| core_error("catching HardFault", e))?;
        core.run().map_err(|e| core_error("starting the core", e))
    }

    fn status(&mut self) -> Result<CoreState, ProbeError> {
        let status = self
            .core("reading the core status")?
            .status()
            .map_err(|e| core_error("reading the core status", e))?;
        Ok(match status {
            CoreStatus::Running | CoreStatus::Sleeping | CoreStatus::Unknown => CoreState::Running,
            CoreStatus::LockedUp => CoreState::LockedUp,
            CoreStatus::Halted(reason) => CoreState::Halted(match reason {
                HaltReason::Breakpoint(BreakpointCause::Semihosting(command)) => match command {
                    SemihostingCommand::ExitSuccess => Halt::Exit { code: 0 },
                    SemihostingCommand::ExitError(details) => Halt::Exit {
                        code: details
                            .exit_status
                            .map(|s| s as i32)
                            .unwrap_or(details.reason as i32),
                    },
                    SemihostingCommand::GetCommandLine(request) => {
                        self.command_line = Some(request);
                        Halt::CommandLine
                    }
                    other => Halt::Other(format!("semihosting request {other:?}")),
                },
                HaltReason::Breakpoint(_) => Halt::Breakpoint,
                HaltReason::Exception => Halt::Exception,
                HaltReason::Request => Halt::Request,
                other => Halt::Other(format!("{other:?}")),
            }),
        })
    }

    fn halt(&mut self) -> Result<(), ProbeError> {
        self.core("halting the core")?
            .halt(HALT_TIMEOUT)
            .map(|_| ())
            .map_err(|e| core_error("halting the core", e))
    }

    fn resume(&mut self) -> Result<(), ProbeError> {
        self.core("resuming the core")?
            .run()
            .map_err(|e| core_error("resuming the core", e))
    }

    fn answer_command_line(&mut self, text: &str) -> Result<(), ProbeError> {
        let Some(request) = self.command_line.take() else {
            return Err(ProbeError::Core {
                doing: "answering SYS_GET_CMDLINE".into(),
                message: "the core did not ask for its command line".into(),
            });
        };
        let mut core = self.core("answering SYS_GET_CMDLINE")?;
        request
            .write_command_line_to_target(core.inner_mut().as_mut(), text)
            .map_err(|e| core_error("answering SYS_GET_CMDLINE", e))
    }

    fn read_registers(&mut self) -> Result<CoreRegs, ProbeError> {
        let mut core = self.core("reading registers")?;
        let mut regs = CoreRegs::default();
        for (i, slot) in regs.r.iter_mut().enumerate() {
            *slot = core.read_core_reg::<u32>(RegisterId(i as u16)).ok();
        }
        regs.xpsr = core.read_core_reg::<u32>(RegisterId(XPSR)).ok();
        Ok(regs)
    }

    fn read_psp(&mut self) -> Result<u32, ProbeError> {
        let mut core = self.core("reading the PSP")?;
        core.read_core_reg::<u32>(RegisterId(PSP))
            .map_err(|e| core_error("reading the PSP", e))
    }

    fn read_words(&mut self, address: u32, count: usize) -> Result<Vec<u32>, ProbeError> {
        let doing = format!("reading {count} words at 0x{address:08x}");
        let mut core = self.core(&doing)?;
        let mut words = vec![0u32; count];
        core.read_32(u64::from(address), &mut words)
            .map_err(|e| core_error(&doing, e))?;
        Ok(words)
    }

    fn rtt_attach(&mut self) -> Result<Option<usize>, ProbeError> {
        let mut core = self.core("looking for the RTT control block")?;
        // Not set up yet by the image's startup code: the caller tries again.
        let Ok(mut rtt) = Rtt::attach(&mut core) else {
            return Ok(None);
        };
        drop(core);
        let ups = rtt.up_channels().len();
        self.rtt = Some(rtt);
        Ok(Some(ups))
    }

    fn rtt_read(&mut self, channel: usize, buf: &mut [u8]) -> Result<usize, ProbeError> {
        let mut core = self
            .session
            .core(0)
            .map_err(|e| core_error("reading RTT", e))?;
        let Some(up) = self.rtt.as_mut().and_then(|r| r.up_channel(channel)) else {
            return Ok(0);
        };
        up.read(&mut core, buf)
            .map_err(|e| core_error("reading RTT", e))
    }

    fn rtt_write(&mut self, channel: usize, bytes: &[u8]) -> Result<usize, ProbeError> {
        let mut core = self
            .session
            .core(0)
            .map_err(|e| core_error("writing RTT", e))?;
        let Some(down) = self.rtt.as_mut().and_then(|r| r.down_channel(channel)) else {
            return Err(ProbeError::Core {
                doing: "writing RTT".into(),
                message: format!("the image has no RTT down channel {channel}"),
            });
        };
        down.write(&mut core, bytes)
            .map_err(|e| core_error("writing RTT", e))
    }
}
