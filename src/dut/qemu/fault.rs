//! Reading what QEMU itself says on stderr about the guest: a lockup (`qemu: fatal: Lockup`, a
//! fault it cannot escalate) with the register dump that follows it, the guest errors of
//! `-d guest_errors` (an access to unmapped memory, which explains the fault after it), and QEMU
//! being told to terminate. Faults themselves are stopped at their handler's entry through the
//! gdbstub (`gdbstub`), not read from a log. Pure functions over text; the session does the I/O.

use crate::capture::{is_guest_error, FaultSnapshot};
use crate::dut::cortex_m::CoreRegs;
use regex::Regex;
use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::OnceLock;

/// Lines kept for the snapshot's raw text: the lockup line and QEMU's register dump.
const MAX_LOG_LINES: usize = 60;
/// Guest error lines remembered: they explain the fault that follows.
const GUEST_ERRORS_KEPT: usize = 4;

fn re(cell: &'static OnceLock<Option<Regex>>, pattern: &str) -> Option<&'static Regex> {
    cell.get_or_init(|| Regex::new(pattern).ok()).as_ref()
}

/// QEMU's text form of the core registers (the lockup dump, `info registers`).
impl CoreRegs {
    /// Reads `Rnn=xxxxxxxx` and `XPSR=xxxxxxxx` fields out of any text, keeping earlier values
    /// for registers the text does not mention.
    pub fn absorb(&mut self, text: &str) {
        static REG: OnceLock<Option<Regex>> = OnceLock::new();
        static XPSR: OnceLock<Option<Regex>> = OnceLock::new();
        if let Some(reg) = re(&REG, r"\bR(\d\d)=([0-9a-fA-F]{8})\b") {
            for c in reg.captures_iter(text) {
                let index = c[1].parse::<usize>().ok().filter(|&i| i < 16);
                if let (Some(i), Ok(v)) = (index, u32::from_str_radix(&c[2], 16)) {
                    self.r[i] = Some(v);
                }
            }
        }
        if let Some(xpsr) = re(&XPSR, r"\bXPSR=([0-9a-fA-F]{8})\b") {
            if let Some(c) = xpsr.captures(text) {
                self.xpsr = u32::from_str_radix(&c[1], 16).ok();
            }
        }
    }

    pub fn parse(text: &str) -> Self {
        let mut regs = Self::default();
        regs.absorb(text);
        regs
    }
}

/// Watches QEMU's stderr line by line for what the gdbstub cannot tell: a lockup (QEMU aborts
/// on it), the guest errors that came before, a termination signal.
#[derive(Debug, Default)]
pub struct StderrWatcher {
    guest_errors: VecDeque<String>,
    log: Vec<String>,
    lockup: bool,
    lockup_regs: CoreRegs,
    terminated_by: Option<i32>,
}

impl StderrWatcher {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one stderr line; true the first time a lockup shows up.
    pub fn feed(&mut self, line: &str) -> bool {
        static SIGNAL: OnceLock<Option<Regex>> = OnceLock::new();
        if self.lockup {
            // Everything after the lockup line is QEMU's register dump.
            self.lockup_regs.absorb(line);
            self.keep(line);
            return false;
        }
        if line.starts_with("qemu: fatal: Lockup") {
            self.lockup = true;
            let errors = std::mem::take(&mut self.guest_errors);
            for e in &errors {
                self.keep(e);
            }
            self.keep(line);
            return true;
        }
        if let Some(c) = re(&SIGNAL, r"terminating on signal (\d+)").and_then(|r| r.captures(line))
        {
            self.terminated_by = c[1].parse().ok();
            return false;
        }
        if is_guest_error(line) {
            if self.guest_errors.len() == GUEST_ERRORS_KEPT {
                self.guest_errors.pop_front();
            }
            self.guest_errors.push_back(line.to_string());
        }
        false
    }

    fn keep(&mut self, line: &str) {
        if self.log.len() < MAX_LOG_LINES {
            self.log.push(line.to_string());
        }
    }

    pub fn lockup(&self) -> bool {
        self.lockup
    }
    /// The signal QEMU said it was terminated by (`terminating on signal 15 from pid ...`).
    pub fn terminated_by(&self) -> Option<i32> {
        self.terminated_by
    }
    /// The last guest errors QEMU reported, oldest first.
    pub fn guest_errors(&self) -> impl Iterator<Item = &str> {
        self.guest_errors.iter().map(String::as_str)
    }

    /// The lockup lines (with the guest errors before it and QEMU's dump), one per line.
    pub fn log_text(&self) -> String {
        self.log.join("\n")
    }

    /// A snapshot from QEMU's lockup register dump: the core's state when the fault handler
    /// itself faulted (or a fault found no handler). `why` says why nothing better was read.
    pub fn snapshot_from_log(&self, why: &str) -> FaultSnapshot {
        let mut snap = FaultSnapshot {
            lockup: self.lockup,
            ..FaultSnapshot::default()
        };
        let mut raw = String::new();
        if self.lockup && !self.lockup_regs.is_empty() {
            self.lockup_regs.fill(&mut snap);
            raw.push_str(
                "values from QEMU's lockup register dump (the core's state when it could not \
                 escalate the fault: PC is where the last fault happened)",
            );
            snap.notes.push(
                "the core locked up: the values are QEMU's register dump at the lockup, not a \
                 stacked frame"
                    .into(),
            );
        } else {
            raw.push_str("no register values: QEMU's stderr held no lockup dump");
        }
        let _ = write!(raw, "; {why}\n-- QEMU's stderr --\n{}", self.log_text());
        snap.raw = raw;
        snap
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Recorded from qemu-system-arm 7.2 on mps2-an385: a fault handler that itself jumps to a
    // bad address.
    const LOCKUP_LOG: &str = "semihost hello
Invalid write at addr 0x746F6F50, size 4, region '(null)', reason: rejected
Invalid read at addr 0x3A746F6E, size 2, region '(null)', reason: rejected
qemu: fatal: Lockup: can't escalate 3 to HardFault (current priority -1)

R00=00000000 R01=00000000 R02=00000000 R03=00000000
R04=00000000 R05=00000000 R06=00000000 R07=00000000
R08=00000000 R09=00000000 R10=00000000 R11=00000000
R12=00000000 R13=746f6f50 R14=fffffff9 R15=3a746f6e
XPSR=41000003 -Z-- T handler
FPSCR: 00000000";

    #[test]
    fn parses_register_dumps() {
        let regs = CoreRegs::parse(LOCKUP_LOG);
        assert_eq!(regs.sp(), Some(0x746f_6f50));
        assert_eq!(regs.lr(), Some(0xffff_fff9));
        assert_eq!(regs.pc(), Some(0x3a74_6f6e));
        assert_eq!(regs.exception(), Some(3));
        assert!(CoreRegs::parse("garbage").is_empty());
    }

    #[test]
    fn lockup_is_seen_once_with_its_dump_and_the_errors_before() {
        let mut w = StderrWatcher::new();
        let alarms: Vec<bool> = LOCKUP_LOG.lines().map(|l| w.feed(l)).collect();
        assert_eq!(alarms.iter().filter(|a| **a).count(), 1);
        assert!(w.lockup());
        let snap = w.snapshot_from_log("QEMU aborted");
        assert!(snap.lockup);
        assert_eq!(snap.pc, Some(0x3a74_6f6e));
        assert_eq!(snap.lr, Some(0xffff_fff9));
        assert_eq!(snap.exception, Some(3));
        assert!(
            snap.raw.contains("Invalid write at addr 0x746F6F50"),
            "{}",
            snap.raw
        );
        assert!(snap.raw.contains("QEMU aborted"));
        assert!(snap.notes[0].contains("locked up"));
    }

    #[test]
    fn guest_errors_and_termination() {
        let mut w = StderrWatcher::new();
        for i in 0..10 {
            w.feed(&format!(
                "Invalid read at addr 0x{i:X}, size 4, region '(null)', reason: rejected"
            ));
        }
        w.feed("semihosting text");
        assert_eq!(w.guest_errors().count(), GUEST_ERRORS_KEPT);
        assert!(!w.lockup());
        w.feed("qemu-system-arm: terminating on signal 15 from pid 1234 (bash)");
        assert_eq!(w.terminated_by(), Some(15));
        let snap = w.snapshot_from_log("no lockup");
        assert_eq!(snap.pc, None);
        assert!(snap.raw.contains("no lockup dump"));
    }
}
