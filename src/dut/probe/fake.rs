//! A full in-memory implementation of the probe traits, for tests. It stands in for a USB debug
//! probe and the target behind it, which cannot exist on a machine without one: a script says
//! what the "target" does (RTT output in chunks, a semihosting command-line request, then an
//! exit code, a HardFault with its registers and memory, a breakpoint, or running forever) and
//! what goes wrong (no probe, a plain attach refused, flash failure). Attaching follows
//! [`super::attach`], as the probe-rs driver does. Every call is recorded so tests can
//! check the order of operations and that the probe was closed.

use super::{
    AttachRequest, CoreState, FlashEvent, Halt, ProbeDriver, ProbeError, ProbeInfo, ProbeSession,
};
use crate::dut::cortex_m::CoreRegs;
use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

/// How the scripted image ends once its RTT output is out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FakeEnd {
    /// Semihosting exit with this status.
    Exit(i32),
    /// A HardFault caught on entry: these registers, and this memory (stack, SCB).
    Fault {
        regs: CoreRegs,
        memory: Vec<(u32, Vec<u32>)>,
    },
    /// A breakpoint instruction, with the core's registers.
    Breakpoint(CoreRegs),
    /// Runs forever; halted, it shows these registers.
    Hang(CoreRegs),
}

/// What the fake target does.
#[derive(Debug, Clone)]
pub struct FakeScript {
    pub open_error: Option<ProbeError>,
    /// The core refuses a plain attach (a firmware that took over the debug pins); attaching
    /// under reset works.
    pub attach_refused: bool,
    /// Flashing fails in the program phase with this message.
    pub flash_error: Option<String>,
    pub image_bytes: u64,
    /// RTT attach attempts that find no control block yet.
    pub rtt_missing_for: usize,
    /// How many up channels the image's control block has.
    pub up_channels: usize,
    /// The image's RTT output in the order it writes it: (up channel, chunk), one chunk per
    /// read of that channel.
    pub rtt: Vec<(usize, Vec<u8>)>,
    /// The image has RTT down channel 0.
    pub down_channel: bool,
    /// The image waits for a `fwfix-nonce=<hex>` line on down channel 0, prints
    /// `fwfix-nonce: <hex>` on up channel 0, then the rest of its output.
    pub echoes_nonce: bool,
    /// The image asks for its command line before printing anything.
    pub asks_command_line: bool,
    /// The PSP the halted core shows; None: reading it fails.
    pub psp: Option<u32>,
    pub end: FakeEnd,
}

impl Default for FakeScript {
    fn default() -> Self {
        FakeScript {
            open_error: None,
            attach_refused: false,
            flash_error: None,
            image_bytes: 4096,
            rtt_missing_for: 0,
            up_channels: 1,
            rtt: Vec::new(),
            down_channel: true,
            echoes_nonce: false,
            asks_command_line: false,
            psp: None,
            end: FakeEnd::Exit(0),
        }
    }
}

/// The record of calls, shared with the test.
pub type Calls = Arc<Mutex<Vec<String>>>;

fn record(calls: &Calls) -> MutexGuard<'_, Vec<String>> {
    calls.lock().unwrap_or_else(|p| p.into_inner())
}

/// Probes that are "connected", and the script every opened session follows.
pub struct FakeDriver {
    pub probes: Vec<ProbeInfo>,
    pub script: FakeScript,
    pub calls: Calls,
}

impl FakeDriver {
    /// One ST-LINK-like probe with serial `FAKE0001`.
    pub fn new(script: FakeScript) -> Self {
        FakeDriver {
            probes: vec![ProbeInfo {
                identifier: "Fake STLink".into(),
                vendor_id: 0x0483,
                product_id: 0x374b,
                serial: Some("FAKE0001".into()),
                kind: "ST-LINK".into(),
            }],
            script,
            calls: Calls::default(),
        }
    }

    pub fn calls(&self) -> Vec<String> {
        record(&self.calls).clone()
    }
}

impl ProbeDriver for FakeDriver {
    fn list(&self) -> Vec<ProbeInfo> {
        self.probes.clone()
    }

    fn open(&self, request: &AttachRequest) -> Result<Box<dyn ProbeSession>, ProbeError> {
        let probe = self.probes[super::select(&self.probes, request.selector.as_deref())?].clone();
        if let Some(e) = &self.script.open_error {
            return Err(e.clone());
        }
        record(&self.calls).push(format!("open {} {}", probe.selector(), request.chip));
        super::attach(
            request,
            || {
                record(&self.calls).push("attach".into());
                match self.script.attach_refused {
                    true => Err(ProbeError::Attach {
                        chip: request.chip.clone(),
                        probe: probe.selector(),
                        message: "the core does not answer".into(),
                    }),
                    false => Ok(()),
                }
            },
            || {
                record(&self.calls).push("attach under reset".into());
                Ok(())
            },
        )?;
        let memory = match &self.script.end {
            FakeEnd::Fault { memory, .. } => memory
                .iter()
                .flat_map(|(base, words)| {
                    words
                        .iter()
                        .enumerate()
                        .map(move |(i, w)| (base + 4 * i as u32, *w))
                })
                .collect(),
            _ => HashMap::new(),
        };
        Ok(Box::new(FakeSession {
            name: probe.selector(),
            script: self.script.clone(),
            calls: self.calls.clone(),
            memory,
            rtt: VecDeque::new(),
            down: Vec::new(),
            awaits_nonce: false,
            rtt_attempts: 0,
            rtt_found: false,
            running: false,
            asked: false,
            halted_by_request: false,
        }))
    }
}

struct FakeSession {
    name: String,
    script: FakeScript,
    calls: Calls,
    memory: HashMap<u32, u32>,
    rtt: VecDeque<(usize, Vec<u8>)>,
    /// Down channel 0's bytes not yet making a whole line.
    down: Vec<u8>,
    /// The image waits for its nonce before it prints.
    awaits_nonce: bool,
    rtt_attempts: usize,
    rtt_found: bool,
    running: bool,
    /// The command-line request is pending.
    asked: bool,
    halted_by_request: bool,
}

impl FakeSession {
    fn note(&self, text: String) {
        record(&self.calls).push(text);
    }

    fn regs(&self) -> CoreRegs {
        match &self.script.end {
            FakeEnd::Fault { regs, .. } | FakeEnd::Breakpoint(regs) | FakeEnd::Hang(regs) => {
                regs.clone()
            }
            FakeEnd::Exit(_) => CoreRegs::default(),
        }
    }
}

impl Drop for FakeSession {
    fn drop(&mut self) {
        self.note("close".into());
    }
}

impl ProbeSession for FakeSession {
    fn describe(&self) -> String {
        self.name.clone()
    }

    fn flash(
        &mut self,
        _elf: &Path,
        progress: &mut dyn FnMut(FlashEvent),
    ) -> Result<(), ProbeError> {
        self.note("flash".into());
        let total = self.script.image_bytes;
        for phase in ["erase", "program", "verify"] {
            progress(FlashEvent::Started {
                phase,
                total: Some(total),
            });
            for _ in 0..4 {
                progress(FlashEvent::Progress {
                    phase,
                    bytes: total / 4,
                });
            }
            if phase == "program" {
                if let Some(message) = &self.script.flash_error {
                    progress(FlashEvent::Failed { phase });
                    return Err(ProbeError::Flash {
                        message: message.clone(),
                    });
                }
            }
            progress(FlashEvent::Finished { phase });
        }
        Ok(())
    }

    fn reset_and_run(&mut self) -> Result<(), ProbeError> {
        self.note("reset_and_run".into());
        self.rtt = self.script.rtt.iter().cloned().collect();
        self.running = true;
        self.asked = self.script.asks_command_line;
        self.awaits_nonce = self.script.echoes_nonce;
        self.halted_by_request = false;
        Ok(())
    }

    fn status(&mut self) -> Result<CoreState, ProbeError> {
        if self.halted_by_request {
            return Ok(CoreState::Halted(Halt::Request));
        }
        if self.asked {
            return Ok(CoreState::Halted(Halt::CommandLine));
        }
        if !self.running || !self.rtt.is_empty() {
            return Ok(CoreState::Running);
        }
        Ok(match &self.script.end {
            FakeEnd::Exit(code) => CoreState::Halted(Halt::Exit { code: *code }),
            FakeEnd::Fault { .. } => CoreState::Halted(Halt::Exception),
            FakeEnd::Breakpoint(_) => CoreState::Halted(Halt::Breakpoint),
            FakeEnd::Hang(_) => CoreState::Running,
        })
    }

    fn halt(&mut self) -> Result<(), ProbeError> {
        self.note("halt".into());
        self.halted_by_request = true;
        Ok(())
    }

    fn resume(&mut self) -> Result<(), ProbeError> {
        self.note("resume".into());
        self.halted_by_request = false;
        Ok(())
    }

    fn answer_command_line(&mut self, text: &str) -> Result<(), ProbeError> {
        self.note(format!("command line {text:?}"));
        self.asked = false;
        Ok(())
    }

    fn read_registers(&mut self) -> Result<CoreRegs, ProbeError> {
        Ok(self.regs())
    }

    fn read_psp(&mut self) -> Result<u32, ProbeError> {
        self.script.psp.ok_or(ProbeError::Core {
            doing: "reading the PSP".into(),
            message: "the fake core has no PSP".into(),
        })
    }

    fn read_words(&mut self, address: u32, count: usize) -> Result<Vec<u32>, ProbeError> {
        (0..count as u32)
            .map(|i| {
                let at = address + 4 * i;
                self.memory.get(&at).copied().ok_or(ProbeError::Core {
                    doing: format!("reading 0x{at:08x}"),
                    message: "no memory there".into(),
                })
            })
            .collect()
    }

    fn rtt_attach(&mut self) -> Result<Option<usize>, ProbeError> {
        self.rtt_attempts += 1;
        self.rtt_found = self.rtt_attempts > self.script.rtt_missing_for;
        Ok(self.rtt_found.then_some(self.script.up_channels))
    }

    /// The next chunk when it is `channel`'s: the image's output comes out in the order written.
    fn rtt_read(&mut self, channel: usize, buf: &mut [u8]) -> Result<usize, ProbeError> {
        if !self.rtt_found || self.asked || self.awaits_nonce || self.halted_by_request {
            return Ok(0);
        }
        if self.rtt.front().is_none_or(|(c, _)| *c != channel) {
            return Ok(0);
        }
        let Some((_, chunk)) = self.rtt.pop_front() else {
            return Ok(0);
        };
        let n = chunk.len().min(buf.len());
        buf[..n].copy_from_slice(&chunk[..n]);
        if n < chunk.len() {
            self.rtt.push_front((channel, chunk[n..].to_vec()));
        }
        Ok(n)
    }

    /// Takes at most 16 bytes a call, the size of SEGGER RTT's default down buffer; each whole
    /// line is recorded.
    fn rtt_write(&mut self, channel: usize, bytes: &[u8]) -> Result<usize, ProbeError> {
        if channel != 0 || !self.script.down_channel {
            return Err(ProbeError::Core {
                doing: "writing RTT".into(),
                message: format!("the image has no RTT down channel {channel}"),
            });
        }
        let n = bytes.len().min(16);
        self.down.extend_from_slice(&bytes[..n]);
        while let Some(end) = self.down.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.down.drain(..=end).collect();
            let text = String::from_utf8_lossy(&line[..end]).into_owned();
            self.note(format!("rtt down 0: {text}"));
            if let Some(value) = text.strip_prefix(crate::capture::nonce::ARG_PREFIX) {
                if self.awaits_nonce {
                    let echo = format!("{}{value}\n", crate::capture::nonce::LINE_PREFIX);
                    self.rtt.push_front((0, echo.into_bytes()));
                    self.awaits_nonce = false;
                }
            }
        }
        Ok(n)
    }
}
