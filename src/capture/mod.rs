//! Console capture: timestamped lines from a DUT, how the attempt ended, and the fault state of the
//! core when it crashed. Backends fill these in; parsers and analysis read them.
//!
//! The pieces every backend shares live here too: [`framing`] turns bytes into lines, [`store`]
//! keeps a bounded part of them in memory (host lines never pushing out UART lines), [`noise`]
//! limits floods of host lines, [`log`] writes console.log, [`pump`] reads a byte stream into
//! lines, [`nonce`] tells this attempt's lines from stale ones, [`settle`] says when a firmware that
//! printed a failed assertion has gone quiet for good. None of them knows
//! which backend the bytes came from or what they mean.

pub mod framing;
pub mod log;
pub mod noise;
pub mod nonce;
pub mod pump;
pub mod settle;
pub mod store;

use serde::{Deserialize, Serialize};

/// Where a console line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(schemars::JsonSchema)]
pub enum Stream {
    /// The target's UART (or RTT) console: what the firmware printed.
    Uart,
    /// The emulator's or flasher's own diagnostics (QEMU's stderr, semihosting text).
    Host,
}

/// A host line from QEMU's `-d guest_errors` log (an access to memory the machine does not map)
/// rather than firmware text or a QEMU message.
pub fn is_guest_error(line: &str) -> bool {
    line.starts_with("Invalid read at addr")
        || line.starts_with("Invalid write at addr")
        || line.starts_with("Invalid access at addr")
}

/// One line of console output, with the time since the attempt started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsoleLine {
    pub t_ms: u64,
    pub stream: Stream,
    pub text: String,
}

/// How an attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RunEnd {
    /// The harness printed its final verdict.
    Verdict,
    /// The target exited by itself (semihosting exit), with its exit code.
    Exited { code: i32 },
    /// The core faulted; see [`Capture::fault`].
    Crashed,
    /// Nothing final arrived before the test timeout: a hang.
    Timeout,
    /// The firmware printed a failed assertion it may not come back from, then the console went
    /// quiet (see [`settle`]): it stopped there, a crash at the assertion's site rather than a
    /// hang. `quiet_ms` is how long the console had been silent when the attempt ended (less than
    /// the quiet period when the firmware printed on until the window's cap).
    Stopped { quiet_ms: u64 },
    /// The runner itself died (e.g. QEMU killed by a signal): not a test result.
    RunnerDied {
        signal: Option<i32>,
        code: Option<i32>,
    },
    /// The attempt was cancelled (Ctrl+C, deadline).
    Cancelled,
    /// The console went away before anything final arrived (a USB serial adapter unplugged or
    /// reset, a terminal server dropping the connection) and could not be opened again: not a
    /// test result. What was captured until then is kept.
    PortLost,
}

/// Core registers and fault status registers read when the target crashed. Any value the backend
/// could not read is None.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultSnapshot {
    /// The exception number in xPSR's low bits (3 = HardFault).
    pub exception: Option<u32>,
    /// PC and LR from the stacked exception frame: where the fault happened. (In
    /// [`Capture::stopped_at`] they are the live registers instead.)
    pub pc: Option<u32>,
    pub lr: Option<u32>,
    /// The faulting code's SP: just above the stacked frame (live SP in `stopped_at`).
    pub sp: Option<u32>,
    pub xpsr: Option<u32>,
    /// Stacked r0-r3 and r12.
    pub r: [Option<u32>; 5],
    pub cfsr: Option<u32>,
    pub hfsr: Option<u32>,
    pub mmfar: Option<u32>,
    pub bfar: Option<u32>,
    /// A lockup (fault inside the fault handler) rather than a handled fault.
    pub lockup: bool,
    /// The EXC_RETURN value the core put in LR on entering the fault handler, when it was read
    /// there: bit 2 says which stack holds the frame (PSP: an RTOS task), bit 3 whether the fault
    /// interrupted thread mode or another handler.
    #[serde(default)]
    pub exc_return: Option<u32>,
    /// What could not be read or trusted, and why (a frame that could not be read, a vector
    /// table without fault handlers), in words a person can act on.
    #[serde(default)]
    pub notes: Vec<String>,
    /// A core stopped in handler mode and unwound: the handlers it was in, the one it was stopped
    /// in first. PC, LR, SP and xPSR are then those of the thread code they interrupted.
    #[serde(default)]
    pub handlers: Vec<HandlerStop>,
    /// Stores the firmware made into the fault vectors of its vector table before the crash, in
    /// order: the fault may have gone through what one of them left there.
    #[serde(default)]
    pub vector_stores: Vec<VectorStore>,
    /// The emulator's or debugger's raw text the values came from.
    pub raw: String,
}

/// A store into a fault vector of the table the core uses (a RAM table, or the low table where
/// the machine has RAM at address 0): which instruction wrote what over what.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct VectorStore {
    /// The store instruction.
    pub pc: u32,
    /// Where the vector table starts.
    pub table: u32,
    /// The exception number of the vector written (3 = HardFault).
    pub vector: u32,
    pub old: u32,
    pub new: u32,
}

/// An exception handler a stopped core was in, and where in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandlerStop {
    /// The exception number (15 = SysTick, 16 and up = external interrupts).
    pub exception: u32,
    pub pc: u32,
}

/// Everything captured from one attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capture {
    pub lines: Vec<ConsoleLine>,
    pub end: RunEnd,
    pub fault: Option<FaultSnapshot>,
    pub duration_ms: u64,
    /// Lines were dropped to keep memory bounded (the full text is still in console.log).
    pub truncated: bool,
    /// The target's own exit status when it exited (semihosting exit), also after a verdict or a
    /// crash if it exited within the grace period.
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// Where the core was when the attempt timed out (live PC, LR, SP, xPSR, not a stacked
    /// frame), so a hang can be located.
    #[serde(default)]
    pub stopped_at: Option<FaultSnapshot>,
    /// The attempt's nonce and whether the image printed it (None when the backend could not
    /// hand one out).
    #[serde(default)]
    pub nonce: Option<nonce::NonceRecord>,
    /// The backend watched the core for faults while the image ran (breakpoints on its fault
    /// handlers, a probe's vector catch): an attempt that did not end `Crashed` did not fault
    /// where it could see. False when nothing watched, so a fault cannot be ruled out.
    #[serde(default)]
    pub faults_watched: bool,
}

impl Capture {
    /// The firmware's own console text of this attempt (UART lines only): lines before a
    /// required nonce are left over from an earlier run and are not part of it.
    pub fn uart_lines(&self) -> impl Iterator<Item = &str> {
        self.uart().map(|l| l.text.as_str())
    }

    /// [`Capture::uart_lines`] with their times.
    pub fn uart(&self) -> impl Iterator<Item = &ConsoleLine> {
        let from = nonce::live_from(&self.lines, self.nonce.as_ref());
        self.lines[from..]
            .iter()
            .filter(|l| l.stream == Stream::Uart)
    }
}

/// Watches console lines as they arrive and says when the harness has printed its final verdict,
/// so an attempt can end at once instead of at process exit. It is the harness's streaming parse
/// (`results::HarnessStream`): it reads the whole live console as it arrives, however long.
pub trait EndDetector: Send {
    /// Called for each live UART line in order (never a stale one, see [`nonce`]), also after it
    /// said the verdict was final, until the attempt ends: what the harness made of it, from one
    /// classification of the line.
    fn read_line(&mut self, line: &str) -> LineRead;
}

/// What a harness made of one live UART line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LineRead {
    /// The verdict is final: the attempt can end.
    pub verdict: bool,
    /// The harness reads this line (a result, a summary, a pattern's match): it is kept in memory
    /// even from the middle of a console too long to keep whole (see [`store`]), as evidence for
    /// the report. The results never depend on it: the harness read every line as it came.
    pub keep: bool,
    /// The line is a failed assertion the firmware may not come back from (see
    /// `results::crash_dump`): the backend ends the attempt once the console settles after it.
    pub settle: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// serde_json's `arbitrary_precision` (turned on for the whole build by defmt-decoder) breaks
    /// numbers inside internally tagged enums in some serde versions: a saved capture must still
    /// read back.
    #[test]
    fn run_ends_with_numbers_read_back_from_json() {
        for end in [
            RunEnd::Exited { code: 3 },
            RunEnd::Stopped { quiet_ms: 500 },
            RunEnd::RunnerDied {
                signal: Some(9),
                code: None,
            },
        ] {
            let text = serde_json::to_string(&end).unwrap();
            assert_eq!(
                serde_json::from_str::<RunEnd>(&text).unwrap(),
                end,
                "{text}"
            );
        }
    }
}
