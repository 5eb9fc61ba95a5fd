//! Reading a Cortex-M fault out of QEMU's text: the `-d int` exception log (to see a fault the
//! moment it happens), the monitor's `info registers` and `xp` output, QEMU's lockup register
//! dump. Pure functions over text; finding the stacked frame in what was read is `cortex_m`'s, the
//! QEMU session does the I/O and decides what to do with what this module finds.

use crate::capture::FaultSnapshot;
use crate::dut::cortex_m::{apply_frame, apply_scb, exception_name, locate_frame, CoreRegs};
use regex::Regex;
use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::OnceLock;

/// Fault log lines kept for the snapshot's raw text.
const MAX_LOG_LINES: usize = 60;
/// Guest error lines remembered while waiting for the fault they may cause.
const GUEST_ERRORS_KEPT: usize = 4;

fn re(cell: &'static OnceLock<Option<Regex>>, pattern: &str) -> Option<&'static Regex> {
    cell.get_or_init(|| Regex::new(pattern).ok()).as_ref()
}

/// QEMU's text forms of the core registers (`info registers`, the lockup dump).
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

/// Parses the monitor's `xp /Nwx ADDR` output (`00000000e000ed28: 0x00000001 0x...`) into the
/// words it shows, as long as their addresses are contiguous from `start`.
pub fn parse_words(text: &str, start: u32) -> Vec<u32> {
    static LINE: OnceLock<Option<Regex>> = OnceLock::new();
    let mut words = Vec::new();
    let Some(line_re) = re(&LINE, r"^\s*([0-9a-fA-F]+):((?:\s+0x[0-9a-fA-F]+)+)\s*$") else {
        return words;
    };
    let mut expected = u64::from(start);
    for line in text.lines() {
        let Some(c) = line_re.captures(line) else {
            continue;
        };
        if u64::from_str_radix(&c[1], 16).ok() != Some(expected) {
            break;
        }
        for w in c[2].split_whitespace() {
            match u32::from_str_radix(w.trim_start_matches("0x"), 16) {
                Ok(v) => words.push(v),
                Err(_) => return words,
            }
            expected += 4;
        }
    }
    words
}

/// CFSR bit of a fault name as QEMU logs it (`CFSR.IACCVIOL`, `BFSR.STKERR`, `UFSR.UNALIGNED`).
fn cfsr_bit(name: &str) -> Option<u32> {
    let bit = match name {
        "IACCVIOL" => 0,
        "DACCVIOL" => 1,
        "MUNSTKERR" => 3,
        "MSTKERR" => 4,
        "MLSPERR" => 5,
        "MMARVALID" => 7,
        "IBUSERR" => 8,
        "PRECISERR" => 9,
        "IMPRECISERR" => 10,
        "UNSTKERR" => 11,
        "STKERR" => 12,
        "LSPERR" => 13,
        "BFARVALID" => 15,
        "UNDEFINSTR" => 16,
        "INVSTATE" => 17,
        "INVPC" => 18,
        "NOCP" => 19,
        "STKOF" => 20,
        "UNALIGNED" => 24,
        "DIVBYZERO" => 25,
        _ => return None,
    };
    Some(1 << bit)
}

/// What a line of QEMU's stderr means to the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alarm {
    /// The core entered a fault handler (vector 3..=7): the first such entry of the attempt.
    Fault { vector: u32 },
    /// QEMU hit a lockup (a fault it cannot escalate) and is about to abort.
    Lockup,
}

/// Watches QEMU's stderr (`-d int,guest_errors`) line by line and remembers what the fault log
/// said: the fault bits, the fault address registers, the lockup register dump. Exception 16
/// entries (semihosting calls) and interrupts are ordinary traffic, not faults.
#[derive(Debug, Default)]
pub struct FaultWatcher {
    /// Lines of the exception block being read (`Taking exception ...` and its `...` lines).
    block: Vec<String>,
    block_is_semihosting: bool,
    /// The `...` lines after a fault entry belong to it (vector load, new PC).
    in_fault_entry: bool,
    /// The last guest errors (`Invalid write at addr ...`): they explain the fault that follows.
    guest_errors: VecDeque<String>,
    fault_vector: Option<u32>,
    log: Vec<String>,
    cfsr: u32,
    mmfar: Option<u32>,
    bfar: Option<u32>,
    lockup: bool,
    lockup_regs: CoreRegs,
    guest_ran: bool,
    terminated_by: Option<i32>,
}

impl FaultWatcher {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one stderr line; returns an alarm the first time a fault, and the first time a
    /// lockup, shows up.
    pub fn feed(&mut self, line: &str) -> Option<Alarm> {
        static TAKING: OnceLock<Option<Regex>> = OnceLock::new();
        static PENDING: OnceLock<Option<Regex>> = OnceLock::new();
        static SIGNAL: OnceLock<Option<Regex>> = OnceLock::new();

        if self.lockup {
            // Everything after the lockup line is QEMU's register dump.
            self.lockup_regs.absorb(line);
            self.keep(line);
            return None;
        }
        if line.starts_with("qemu: fatal: Lockup") {
            self.lockup = true;
            self.guest_ran = true;
            self.keep_block();
            self.keep(line);
            return Some(Alarm::Lockup);
        }
        if let Some(c) = re(&SIGNAL, r"terminating on signal (\d+)").and_then(|r| r.captures(line))
        {
            self.terminated_by = c[1].parse().ok();
            return None;
        }
        if let Some(c) = re(&TAKING, r"^Taking exception (\d+) ").and_then(|r| r.captures(line)) {
            self.guest_ran = true;
            self.block.clear();
            self.in_fault_entry = false;
            self.block_is_semihosting = &c[1] == "16";
            self.block.push(line.to_string());
            return None;
        }
        if !line.starts_with("...") {
            self.in_fault_entry = false;
            if line.starts_with("Invalid ") {
                if self.guest_errors.len() == GUEST_ERRORS_KEPT {
                    self.guest_errors.pop_front();
                }
                self.guest_errors.push_back(line.to_string());
            }
            return None;
        }
        if self.block_is_semihosting {
            return None;
        }
        self.absorb_fault_status(line);
        if self.in_fault_entry {
            self.keep(line);
            return None;
        }
        self.block.push(line.to_string());
        let vector = re(
            &PENDING,
            r"^\.\.\.taking pending (?:non)?secure exception (\d+)",
        )
        .and_then(|r| r.captures(line))
        .and_then(|c| c[1].parse::<u32>().ok());
        match vector {
            Some(v @ 3..=7) => {
                self.keep_block();
                self.in_fault_entry = true;
                if self.fault_vector.is_none() {
                    self.fault_vector = Some(v);
                    return Some(Alarm::Fault { vector: v });
                }
                None
            }
            Some(_) => {
                // An interrupt or SVC: ordinary traffic, not kept.
                self.block.clear();
                None
            }
            None => None,
        }
    }

    fn absorb_fault_status(&mut self, line: &str) {
        static BITS: OnceLock<Option<Regex>> = OnceLock::new();
        static FAR: OnceLock<Option<Regex>> = OnceLock::new();
        if let Some(bits) = re(&BITS, r"\b(?:CFSR|MMFSR|BFSR|UFSR)\.([A-Z]+)") {
            for c in bits.captures_iter(line) {
                self.cfsr |= cfsr_bit(&c[1]).unwrap_or(0);
            }
        }
        if let Some(far) = re(&FAR, r"\b(MMFAR|BFAR) 0x([0-9a-fA-F]+)") {
            for c in far.captures_iter(line) {
                let value = u32::from_str_radix(&c[2], 16).ok();
                if &c[1] == "MMFAR" {
                    self.mmfar = value;
                } else {
                    self.bfar = value;
                }
            }
        }
    }

    /// Moves the guest errors and the current exception block into the fault log.
    fn keep_block(&mut self) {
        let errors = std::mem::take(&mut self.guest_errors);
        let block = std::mem::take(&mut self.block);
        if self.block_is_semihosting {
            return;
        }
        for line in errors.iter().chain(block.iter()) {
            self.keep(line);
        }
    }

    fn keep(&mut self, line: &str) {
        if self.log.len() < MAX_LOG_LINES {
            self.log.push(line.to_string());
        }
    }

    pub fn fault_vector(&self) -> Option<u32> {
        self.fault_vector
    }
    pub fn lockup(&self) -> bool {
        self.lockup
    }
    /// Whether the log shows the guest executing (any exception taken), as opposed to QEMU
    /// refusing to start.
    pub fn guest_ran(&self) -> bool {
        self.guest_ran
    }
    /// The signal QEMU said it was terminated by (`terminating on signal 15 from pid ...`).
    pub fn terminated_by(&self) -> Option<i32> {
        self.terminated_by
    }
    /// The fault bits the log named, as a CFSR value (None when it named none).
    pub fn cfsr(&self) -> Option<u32> {
        (self.cfsr != 0).then_some(self.cfsr)
    }

    /// The fault log lines, one per line.
    pub fn log_text(&self) -> String {
        self.log.join("\n")
    }

    /// A snapshot from the log alone: the lockup register dump when there was one, plus the fault
    /// bits and addresses the log named. `why` says why nothing better was available.
    pub fn snapshot_from_log(&self, why: &str) -> FaultSnapshot {
        let mut snap = FaultSnapshot {
            exception: self.fault_vector,
            cfsr: self.cfsr(),
            mmfar: self.mmfar,
            bfar: self.bfar,
            lockup: self.lockup,
            ..FaultSnapshot::default()
        };
        let mut raw = String::new();
        if self.lockup && !self.lockup_regs.is_empty() {
            let regs = &self.lockup_regs;
            snap.exception = regs.exception().or(snap.exception);
            snap.pc = regs.pc();
            snap.lr = regs.lr();
            snap.sp = regs.sp();
            snap.xpsr = regs.xpsr;
            snap.r = [regs.r[0], regs.r[1], regs.r[2], regs.r[3], regs.r[12]];
            raw.push_str(
                "values from QEMU's lockup register dump (the core's state when the fault \
                 handler itself faulted)",
            );
        } else {
            raw.push_str("only the -d int fault log was available");
        }
        let _ = write!(raw, "; {why}\n-- fault log --\n{}", self.log_text());
        snap.raw = raw;
        snap
    }
}

/// What the monitor returned while the core was stopped in its fault handler.
#[derive(Debug, Clone, Default)]
pub struct MonitorReading {
    /// `info registers`.
    pub registers: String,
    /// `xp /Nwx SP` and the words parsed from it.
    pub stack: Option<(String, Vec<u32>)>,
    /// `xp /5wx 0xe000ed28`: CFSR, HFSR, DFSR, MMFAR, BFAR.
    pub scb: Option<(String, Vec<u32>)>,
    /// A step that failed after the registers were read.
    pub problem: Option<String>,
}

/// Builds the crash snapshot from what the monitor read, falling back on the log for the fault
/// status when the SCB read failed.
pub fn snapshot_from_monitor(reading: &MonitorReading, log: &FaultWatcher) -> FaultSnapshot {
    let regs = CoreRegs::parse(&reading.registers);
    let mut snap = FaultSnapshot {
        exception: regs.exception(),
        lockup: log.lockup(),
        ..FaultSnapshot::default()
    };
    let mut raw = String::new();
    if let Some(n) = snap.exception {
        let _ = writeln!(raw, "core stopped in {} (exception {n})", exception_name(n));
    }
    match reading.stack.as_ref().map(|(_, w)| locate_frame(&regs, w)) {
        Some(Ok(frame)) => {
            apply_frame(&mut snap, &frame);
            let _ = writeln!(raw, "stacked frame at 0x{:08x}: {}", frame.addr, frame.note);
        }
        Some(Err(why)) => {
            let _ = writeln!(
                raw,
                "no stacked frame: {why}; PC/LR left empty (the live ones are the handler's)"
            );
        }
        None => {
            let _ = writeln!(raw, "the stack could not be read; PC/LR left empty");
        }
    }
    let scb_read = reading
        .scb
        .as_ref()
        .is_some_and(|(_, w)| apply_scb(&mut snap, w));
    if !scb_read {
        snap.cfsr = log.cfsr();
        snap.mmfar = log.mmfar;
        snap.bfar = log.bfar;
        let _ = writeln!(raw, "fault status from the -d int log (SCB not read)");
    }
    if let Some(problem) = &reading.problem {
        let _ = writeln!(raw, "monitor problem: {problem}");
    }
    let _ = write!(
        raw,
        "-- info registers --\n{}",
        reading.registers.trim_end()
    );
    if let Some((text, _)) = &reading.stack {
        let _ = write!(raw, "\n-- stack --\n{}", text.trim_end());
    }
    if let Some((text, _)) = &reading.scb {
        let _ = write!(
            raw,
            "\n-- SCB (CFSR HFSR DFSR MMFAR BFAR) --\n{}",
            text.trim_end()
        );
    }
    let _ = write!(raw, "\n-- fault log --\n{}", log.log_text());
    snap.raw = raw.replace("\r\n", "\n");
    snap
}

/// Where the core was when a hang was stopped: the live registers.
pub fn snapshot_from_registers(text: &str) -> Option<FaultSnapshot> {
    let regs = CoreRegs::parse(text);
    let pc = regs.pc()?;
    Some(FaultSnapshot {
        exception: regs.exception(),
        pc: Some(pc),
        lr: regs.lr(),
        sp: regs.sp(),
        xpsr: regs.xpsr,
        r: [regs.r[0], regs.r[1], regs.r[2], regs.r[3], regs.r[12]],
        raw: text.replace("\r\n", "\n").trim().to_string(),
        ..FaultSnapshot::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dut::cortex_m::FrameFound;

    // Recorded from qemu-system-arm 7.2 on mps2-an385: a call through a bad function pointer,
    // handled by a HardFault handler that pushes {r3, lr}, prints, and spins.
    const INFO_REGISTERS: &str = "\r\nCPU#0\r\nR00=000000ab R01=00000000 R02=40004000 R03=00000000\r\nR04=00000000 R05=00000000 R06=00000000 R07=00000000\r\nR08=00000000 R09=00000000 R10=00000000 R11=00000000\r\nR12=00000000 R13=2000ffd0 R14=00000065 R15=00000064\r\nXPSR=61000003 -ZC- T handler\r\nFPSCR: 00000000\r\n";
    const XP_STACK: &str = "000000002000ffd0: 0xfffffff0 0xfffffff9 0x000000db 0x00000000\r\n000000002000ffe0: 0x40004000 0xfffffff0 0x00000000 0x00000093\r\n000000002000fff0: 0xfffffff0 0x60000000 0x00000000 0xffffffff\r\n0000000020010000: 0x00000000 0x00000000 0x00000000 0x00000000\r\n";
    const FAULT_LOG: &str = "Loaded reset SP 0x0 PC 0x0 from vector table
Loaded reset SP 0x20010000 PC 0x6d from vector table
Taking exception 16 [Semihosting call] on CPU 0
...handling as semihosting call 0x4
semihost hello
Taking exception 3 [Prefetch Abort] on CPU 0
...at fault address 0xfffffff0
...with CFSR.IACCVIOL
...taking pending nonsecure exception 3
...loading from element 3 of non-secure vector table at 0xc
...loaded new PC 0x5d";
    const LOCKUP_LOG: &str = "Taking exception 3 [Prefetch Abort] on CPU 0
...at fault address 0x303a783a
...really UsageFault with UFSR.UNALIGNED
Invalid write at addr 0x746F6F50, size 4, region '(null)', reason: rejected
...BusFault with BFSR.STKERR
...taking pending nonsecure exception 3
...loading from element 3 of non-secure vector table at 0xc
...loaded new PC 0x3a746f6f
Invalid read at addr 0x3A746F6E, size 2, region '(null)', reason: rejected
Taking exception 3 [Prefetch Abort] on CPU 0
...at fault address 0x3a746f6e
...with CFSR.IBUSERR
qemu: fatal: Lockup: can't escalate 3 to HardFault (current priority -1)

R00=00000000 R01=00000000 R02=00000000 R03=00000000
R04=00000000 R05=00000000 R06=00000000 R07=00000000
R08=00000000 R09=00000000 R10=00000000 R11=00000000
R12=00000000 R13=746f6f50 R14=fffffff9 R15=3a746f6e
XPSR=41000003 -Z-- T handler
FPSCR: 00000000";

    fn feed_all(w: &mut FaultWatcher, text: &str) -> Vec<Alarm> {
        text.lines().filter_map(|l| w.feed(l)).collect()
    }

    #[test]
    fn parses_info_registers() {
        let regs = CoreRegs::parse(INFO_REGISTERS);
        assert_eq!(regs.sp(), Some(0x2000_ffd0));
        assert_eq!(regs.lr(), Some(0x65));
        assert_eq!(regs.pc(), Some(0x64));
        assert_eq!(regs.xpsr, Some(0x6100_0003));
        assert_eq!(regs.exception(), Some(3));
        assert_eq!(regs.r[2], Some(0x4000_4000));
    }

    #[test]
    fn parses_xp_words_and_stops_at_a_gap() {
        let words = parse_words(XP_STACK, 0x2000_ffd0);
        assert_eq!(words.len(), 16);
        assert_eq!(words[1], 0xffff_fff9);
        assert!(parse_words(XP_STACK, 0x1000).is_empty());
        let gap = "00001000: 0x00000001 0x00000002\n00002000: 0x00000003\n";
        assert_eq!(parse_words(gap, 0x1000), vec![1, 2]);
        assert!(parse_words("Cannot access memory\n", 0).is_empty());
    }

    #[test]
    fn recorded_crash_frame_without_thumb_bit_is_found_and_explained() {
        let regs = CoreRegs::parse(INFO_REGISTERS);
        let stack = parse_words(XP_STACK, 0x2000_ffd0);
        let frame = locate_frame(&regs, &stack).unwrap();
        assert_eq!(frame.addr, 0x2000_ffd8);
        assert_eq!(frame.words[6], 0xffff_fff0); // PC: the bad function pointer
        assert_eq!(frame.words[5], 0x93); // LR: the caller
        assert!(frame.note.contains("no Thumb bit"), "{}", frame.note);
        assert_eq!(frame.found, FrameFound::WithoutThumbBit);
        assert!(!frame.is_certain());
    }

    #[test]
    fn watcher_ignores_semihosting_and_interrupts() {
        let mut w = FaultWatcher::new();
        let log = "Taking exception 16 [Semihosting call] on CPU 0
...handling as semihosting call 0x20
Taking exception 5 [IRQ] on CPU 0
...taking pending nonsecure exception 15
Exception return: magic PC fffffff9 previous exception 15";
        assert!(feed_all(&mut w, log).is_empty());
        assert!(w.guest_ran());
        assert_eq!(w.cfsr(), None);
        assert!(w.log_text().is_empty());
    }

    #[test]
    fn watcher_sees_a_fault_once() {
        let mut w = FaultWatcher::new();
        assert_eq!(
            feed_all(&mut w, FAULT_LOG),
            vec![Alarm::Fault { vector: 3 }]
        );
        assert_eq!(w.cfsr(), Some(1));
        assert!(w.log_text().contains("IACCVIOL"));
        assert!(!w.log_text().contains("semihosting"));
        assert!(feed_all(&mut w, FAULT_LOG).is_empty());
    }

    #[test]
    fn watcher_parses_lockup_dump() {
        let mut w = FaultWatcher::new();
        assert_eq!(
            feed_all(&mut w, LOCKUP_LOG),
            vec![Alarm::Fault { vector: 3 }, Alarm::Lockup]
        );
        assert!(w.lockup());
        let cfsr = w.cfsr().unwrap();
        assert_eq!(cfsr, (1 << 24) | (1 << 12) | (1 << 8));
        let snap = w.snapshot_from_log("QEMU aborted");
        assert!(snap.lockup);
        assert_eq!(snap.pc, Some(0x3a74_6f6e));
        assert_eq!(snap.lr, Some(0xffff_fff9));
        assert_eq!(snap.exception, Some(3));
        assert!(snap.raw.contains("lockup register dump"));
        assert!(snap.raw.contains("QEMU aborted"));
    }

    #[test]
    fn watcher_reads_fault_addresses() {
        let mut w = FaultWatcher::new();
        let log = "Invalid write at addr 0x30000000, size 4, region '(null)', reason: rejected
Taking exception 4 [Data Abort] on CPU 0
...at fault address 0x30000000
...with CFSR.PRECISERR and BFAR 0x30000000
...taking pending nonsecure exception 3";
        assert_eq!(feed_all(&mut w, log), vec![Alarm::Fault { vector: 3 }]);
        assert_eq!(w.cfsr(), Some(1 << 9));
        let snap = w.snapshot_from_log("no monitor");
        assert_eq!(snap.bfar, Some(0x3000_0000));
        assert!(snap.raw.contains("only the -d int fault log"));
    }

    #[test]
    fn watcher_notes_termination_signal() {
        let mut w = FaultWatcher::new();
        w.feed("qemu-system-arm: terminating on signal 15 from pid 8169 (timeout)");
        assert_eq!(w.terminated_by(), Some(15));
    }

    #[test]
    fn monitor_snapshot_from_recorded_crash() {
        let mut w = FaultWatcher::new();
        feed_all(&mut w, FAULT_LOG);
        let reading = MonitorReading {
            registers: INFO_REGISTERS.into(),
            stack: Some((XP_STACK.into(), parse_words(XP_STACK, 0x2000_ffd0))),
            scb: Some((
                "00000000e000ed28: 0x00000001 0x40000000 0x00000000 0x00000000\r\n00000000e000ed38: 0x00000000\r\n".into(),
                vec![1, 0x4000_0000, 0, 0, 0],
            )),
            problem: None,
        };
        let snap = snapshot_from_monitor(&reading, &w);
        assert_eq!(snap.exception, Some(3));
        assert_eq!(snap.pc, Some(0xffff_fff0));
        assert_eq!(snap.lr, Some(0x93));
        assert_eq!(snap.sp, Some(0x2000_fff8));
        assert_eq!(snap.cfsr, Some(1));
        assert_eq!(snap.hfsr, Some(0x4000_0000));
        assert_eq!(snap.mmfar, None);
        assert_eq!(snap.bfar, None);
        assert!(!snap.lockup);
        assert!(snap.raw.contains("IACCVIOL"));
        assert!(snap
            .raw
            .starts_with("core stopped in HardFault (exception 3)"));
        assert!(!snap.raw.contains('\r'));
    }

    #[test]
    fn monitor_snapshot_falls_back_on_the_log_for_fault_status() {
        let mut w = FaultWatcher::new();
        feed_all(&mut w, FAULT_LOG);
        let reading = MonitorReading {
            registers: INFO_REGISTERS.into(),
            stack: None,
            scb: None,
            problem: Some("xp timed out".into()),
        };
        let snap = snapshot_from_monitor(&reading, &w);
        assert_eq!(snap.cfsr, Some(1));
        assert_eq!(snap.pc, None);
        assert!(snap.raw.contains("xp timed out"));
        assert!(snap.raw.contains("-d int log"));
    }

    #[test]
    fn hang_snapshot_uses_live_registers() {
        let snap = snapshot_from_registers(INFO_REGISTERS).unwrap();
        assert_eq!(snap.pc, Some(0x64));
        assert_eq!(snap.sp, Some(0x2000_ffd0));
        assert_eq!(snap.exception, Some(3));
        assert!(snapshot_from_registers("garbage").is_none());
    }
}
