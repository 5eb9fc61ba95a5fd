//! Fault dumps a firmware prints on its own console: Zephyr's fatal error report (the Cortex-M
//! fault lines, the exception stack frame, `>>> ZEPHYR FATAL ERROR`) and the register dumps
//! hand-written fault handlers print (`PC`/`pc:`/`r15/pc:` next to `LR`/`lr:` or `CFSR`). A
//! board whose registers nobody could read still yields a [`FaultSnapshot`] the orchestrator can
//! symbolise, and every harness parser can tell a crash from a hang.
//!
//! Pure text in, values out: it must not symbolise, read files or decide a verdict (each harness
//! decides whether a dump ended its run). It never invents a register: what the dump does not
//! show stays None. The one reconstruction is Zephyr's CFSR and HFSR, which Zephyr prints as one
//! line per status bit set instead of the register values; those lines map back to exactly those
//! bits, and MMARVALID/BFARVALID are set only when Zephyr printed the address.
//!
//! The fwtests fixture's fault handler prints nothing (it spins), so it has no format of its own
//! here; a firmware that prints `PC: 0x... LR: 0x... CFSR: 0x...` in any layout is covered by the
//! generic form.
//!
//! A firmware's own failed assertion stops it as surely as a fault (FreeRTOS's `configASSERT`
//! handler spins, newlib's `assert` aborts, Zephyr and ESP-IDF panic after theirs): its line
//! (FreeRTOS demos' `ASSERT! Line 97, file main.c`, newlib's `assertion "x" failed: file "a.c",
//! line 12`, ESP-IDF's `assert failed: f a.c:12 (x)`, Zephyr's `ASSERTION FAIL [x] @ a.c:12`,
//! glibc's `a.c:12: f: Assertion `x' failed.`) is a dump of its own, or names the cause of the
//! fault dump that follows it.

use super::lines::{clean, strip_log_prefix};
use crate::capture::FaultSnapshot;

/// A dump found in a console, with where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Dump {
    /// Index of its first and last line in the lines searched.
    pub first: usize,
    pub last: usize,
    /// What followed `ZEPHYR FATAL ERROR` (e.g. `0: CPU exception on CPU 0`), when Zephyr itself
    /// declared the error fatal.
    pub fatal_error: Option<String>,
    /// The firmware's failed assertion that came before the dump, or is the dump.
    pub assertion: Option<Assertion>,
    pub snapshot: FaultSnapshot,
}

impl Dump {
    /// The fault it shows; none for a failed assertion alone (see [`Finder::fault`]).
    fn fault(self) -> Option<FaultSnapshot> {
        (!self.assertion_alone()).then_some(self.snapshot)
    }

    /// The dump is a failed assertion's line and nothing more.
    pub(super) fn assertion_alone(&self) -> bool {
        self.assertion
            .as_ref()
            .is_some_and(|a| a.index == self.first && a.index == self.last)
    }
}

/// How many lines before a fault dump an assertion may come and still be named its cause (an
/// assert handler prints its line, then perhaps a backtrace, then faults or panics).
const ASSERTION_REACH: usize = 20;

/// A firmware's failed assertion, as its console printed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Assertion {
    /// Index of its line in the lines searched.
    pub index: usize,
    /// The line, without a logger's prefix.
    pub text: String,
    pub file: Option<String>,
    pub line: Option<u32>,
}

/// The assertion shapes of the module docs; `file` and `line` name the assertion's site.
static ASSERTION: std::sync::LazyLock<Option<regex::Regex>> = std::sync::LazyLock::new(|| {
    regex::Regex::new(
        r#"(?x)
        ASSERT!\ Line\ (?P<l1>\d+),\ file\ (?P<f1>\S+)
        | assertion\ ".*"\ failed:\ file\ "(?P<f2>[^"]+)",\ line\ (?P<l2>\d+)
        | assert\ failed:\ \S+\ (?P<f3>[^\s:]+):(?P<l3>\d+)\ \(
        | ASSERTION\ FAIL\ \[.*\]\ @\ (?:WEST_TOPDIR/)?(?P<f4>[^\s:]+):(?P<l4>\d+)
        | ^(?:\S+:\ )?(?P<f5>[^\s:]+):(?P<l5>\d+):\ \S+:\ Assertion\ `.*'\ failed\.
        "#,
    )
    .ok()
});

/// The firmware assertion `body` (a console line without its logger prefix) reports, if any.
fn assertion(index: usize, body: &str) -> Option<Assertion> {
    let caps = ASSERTION.as_ref()?.captures(body)?;
    let group = |names: [&str; 5]| names.iter().find_map(|n| caps.name(n)).map(|m| m.as_str());
    Some(Assertion {
        index,
        text: body.trim().to_string(),
        file: group(["f1", "f2", "f3", "f4", "f5"]).map(str::to_string),
        line: group(["l1", "l2", "l3", "l4", "l5"]).and_then(|l| l.parse().ok()),
    })
}

/// The first fault dump in `lines` (console lines in order), as a fault snapshot; none for a
/// failed assertion alone, which shows no fault (see [`Finder::fault`]).
pub fn parse(lines: &[&str]) -> Option<FaultSnapshot> {
    find(lines).and_then(Dump::fault)
}

/// The first fault dump in `lines` (see [`Finder`]).
pub(super) fn find(lines: &[&str]) -> Option<Dump> {
    let mut finder = Finder::default();
    for line in lines {
        finder.line(line);
    }
    finder.dump()
}

/// Looks for the first fault dump in console lines fed one at a time, as they arrive. A dump is a
/// run of consecutive dump lines (blank lines allowed) that either holds Zephyr's fatal error
/// line, or shows PC together with LR, CFSR, or a fault name: a lone `pc: 0x...` in a test's
/// output is not a crash. Memory is bounded: one open block, with at most [`RAW_LINES`] of its
/// lines kept as text.
#[derive(Debug, Clone, Default)]
pub(super) struct Finder {
    /// Lines fed so far: the index of the next one.
    index: usize,
    block: Option<Block>,
    found: Option<Dump>,
    /// The last failed assertion before the dump was found.
    assertion: Option<Assertion>,
}

impl Finder {
    /// Reads the next console line; true when it is a firmware's failed assertion (for the
    /// backend's settle window, so also after the first dump was found: a test that survived an
    /// expected fault may assert for good later).
    pub(super) fn line(&mut self, raw: &str) -> bool {
        let index = self.index;
        self.index += 1;
        let body = strip_log_prefix(clean(raw));
        if body.is_empty() {
            return false;
        }
        let found = assertion(index, body);
        let is_assertion = found.is_some();
        if self.found.is_some() {
            return is_assertion;
        }
        // The last assertion before the dump: an earlier one a test expected and survived says
        // nothing of how the run ended.
        if found.is_some() {
            self.assertion = found;
        }
        if let Some(open) = self.block.as_mut() {
            if open.take(index, raw, body) {
                return is_assertion;
            }
            if let Some(done) = self.block.take().filter(Block::qualifies) {
                self.found = Some(done.into_dump());
                return is_assertion;
            }
        }
        // A line that ends one block may open the next.
        let mut fresh = Block::new(index);
        if fresh.take(index, raw, body) {
            self.block = Some(fresh);
        }
        is_assertion
    }

    /// The fault the first dump shows, for the crash report. A failed assertion alone shows none:
    /// the case it stopped names the assertion, and the core's own state (where it spins) is
    /// read at the end like a hang's.
    pub(super) fn fault(&self) -> Option<FaultSnapshot> {
        self.dump().and_then(Dump::fault)
    }

    /// The first dump among the lines fed so far (one still open counts when it qualifies),
    /// with the assertion just before it; else the last failed assertion alone.
    pub(super) fn dump(&self) -> Option<Dump> {
        let dump = self.found.clone().or_else(|| {
            self.block
                .clone()
                .filter(Block::qualifies)
                .map(Block::into_dump)
        });
        match (dump, &self.assertion) {
            (Some(mut dump), Some(assertion))
                if assertion.index <= dump.last
                    && assertion.index + ASSERTION_REACH >= dump.first =>
            {
                dump.assertion = Some(assertion.clone());
                Some(dump)
            }
            (Some(dump), _) => Some(dump),
            (None, Some(assertion)) => Some(Dump {
                first: assertion.index,
                last: assertion.index,
                fatal_error: None,
                assertion: Some(assertion.clone()),
                snapshot: FaultSnapshot {
                    raw: assertion.text.clone(),
                    ..FaultSnapshot::default()
                },
            }),
            (None, None) => None,
        }
    }
}

/// How many of a dump's lines its snapshot keeps as text: a real dump has a few dozen; a console
/// that prints register-like lines for ever must not grow memory with them.
const RAW_LINES: usize = 256;

/// Register values seen in a dump; the first value of each register wins (a later line may be
/// a nested fault's).
#[derive(Debug, Clone, Default)]
struct Block {
    first: usize,
    last: usize,
    lines: usize,
    raw: Vec<String>,
    pc: Option<u32>,
    lr: Option<u32>,
    sp: Option<u32>,
    xpsr: Option<u32>,
    r: [Option<u32>; 5],
    cfsr: Option<u32>,
    hfsr: Option<u32>,
    mmfar: Option<u32>,
    bfar: Option<u32>,
    /// The exception the fault handler names (its first fault header).
    exception: Option<u32>,
    named_fault: bool,
    /// The Zephyr fault header the detail lines below belong to.
    section: Option<u32>,
    zephyr_cfsr: u32,
    zephyr_hfsr: u32,
    fatal_error: Option<String>,
}

impl Block {
    fn new(first: usize) -> Block {
        Block {
            first,
            last: first,
            ..Block::default()
        }
    }

    /// Adds the line when it belongs to a dump; false when it does not.
    fn take(&mut self, index: usize, raw: &str, body: &str) -> bool {
        let mut used = false;
        if let Some(reason) = fatal_error(body) {
            self.fatal_error.get_or_insert(reason);
            used = true;
        }
        if let Some(exception) = zephyr_header(body) {
            self.named_fault = true;
            self.section = exception;
            if self.exception.is_none() {
                self.exception = exception;
            }
            used = true;
        } else if let Some(exception) = fault_word(body) {
            self.named_fault = true;
            if self.exception.is_none() {
                self.exception = Some(exception);
            }
            used = true;
        }
        if let Some((cfsr, hfsr)) = self.section.and_then(|s| zephyr_detail(s, body)) {
            self.zephyr_cfsr |= cfsr;
            self.zephyr_hfsr |= hfsr;
            used = true;
        }
        if self.lines > 0 && is_zephyr_tail(body) {
            used = true;
        }
        let regs = registers(body);
        if !regs.is_empty() || is_fpu_line(body) {
            used = true;
        }
        for (reg, value) in regs {
            self.set(reg, value);
        }
        if used {
            self.last = index;
            self.lines += 1;
            if self.raw.len() < RAW_LINES {
                self.raw.push(clean(raw).to_string());
            }
        }
        used
    }

    fn set(&mut self, reg: Reg, value: u32) {
        let slot = match reg {
            Reg::R(i) => match self.r.get_mut(i) {
                Some(slot) => slot,
                None => return,
            },
            Reg::Pc => &mut self.pc,
            Reg::Lr => &mut self.lr,
            Reg::Sp => &mut self.sp,
            Reg::Xpsr => &mut self.xpsr,
            Reg::Cfsr => &mut self.cfsr,
            Reg::Hfsr => &mut self.hfsr,
            Reg::Mmfar => &mut self.mmfar,
            Reg::Bfar => &mut self.bfar,
            Reg::Other => return,
        };
        slot.get_or_insert(value);
    }

    fn qualifies(&self) -> bool {
        self.fatal_error.is_some()
            || (self.pc.is_some()
                && (self.lr.is_some()
                    || self.cfsr.is_some()
                    || self.named_fault
                    || self.zephyr_cfsr != 0))
    }

    fn into_dump(self) -> Dump {
        let cfsr = self
            .cfsr
            .or((self.zephyr_cfsr != 0).then_some(self.zephyr_cfsr));
        let hfsr = self
            .hfsr
            .or((self.zephyr_hfsr != 0).then_some(self.zephyr_hfsr));
        Dump {
            first: self.first,
            last: self.last,
            fatal_error: self.fatal_error,
            assertion: None,
            snapshot: FaultSnapshot {
                exception: self.exception,
                pc: self.pc,
                lr: self.lr,
                sp: self.sp,
                xpsr: self.xpsr,
                r: self.r,
                cfsr,
                hfsr,
                mmfar: self.mmfar,
                bfar: self.bfar,
                lockup: false,
                raw: self.raw.join("\n"),
                ..FaultSnapshot::default()
            },
        }
    }
}

/// `>>> ZEPHYR FATAL ERROR 0: CPU exception on CPU 0` → `0: CPU exception on CPU 0`.
fn fatal_error(body: &str) -> Option<String> {
    const MARK: &str = "ZEPHYR FATAL ERROR";
    let at = body.find(MARK)?;
    Some(body[at + MARK.len()..].trim().to_string())
}

/// Zephyr's `***** BUS FAULT *****` headers: Some(exception number) when the header names one.
fn zephyr_header(body: &str) -> Option<Option<u32>> {
    let inner = body
        .trim()
        .strip_prefix("*****")?
        .strip_suffix("*****")?
        .trim();
    Some(match inner {
        "HARD FAULT" => Some(3),
        "MPU FAULT" => Some(4),
        "BUS FAULT" => Some(5),
        "USAGE FAULT" => Some(6),
        "SECURE FAULT" => Some(7),
        "Debug monitor exception" => Some(12),
        _ => None,
    })
}

/// A hand-written handler's fault name: `HardFault!`, `*** Bus Fault ***`, `UsageFault: ...`.
fn fault_word(body: &str) -> Option<u32> {
    let squashed: String = body
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '_')
        .flat_map(char::to_lowercase)
        .collect();
    [
        ("hardfault", 3),
        ("memmanage", 4),
        ("busfault", 5),
        ("usagefault", 6),
    ]
    .iter()
    .find(|(word, _)| squashed.contains(word))
    .map(|&(_, n)| n)
}

const HFSR_VECTTBL: u32 = 1 << 1;
const HFSR_FORCED: u32 = 1 << 30;
const HFSR_DEBUGEVT: u32 = 1 << 31;

/// Zephyr's Cortex-M fault lines under each header, and the CFSR/HFSR bit each one reports
/// (ARMv7-M B3.2.15, B3.2.16; STKOF is ARMv8-M). `(header exception, line start, CFSR, HFSR)`.
const ZEPHYR_DETAILS: &[(u32, &str, u32, u32)] = &[
    (3, "Bus fault on vector table read", 0, HFSR_VECTTBL),
    (3, "Debug event", 0, HFSR_DEBUGEVT),
    (3, "Fault escalation", 0, HFSR_FORCED),
    (4, "Stacking error", 1 << 4, 0),
    (4, "Unstacking error", 1 << 3, 0),
    (4, "Data Access Violation", 1 << 1, 0),
    (4, "MMFAR Address", 1 << 7, 0),
    (4, "Instruction Access Violation", 1, 0),
    (4, "Floating-point lazy state preservation error", 1 << 5, 0),
    (5, "Stacking error", 1 << 12, 0),
    (5, "Unstacking error", 1 << 11, 0),
    (5, "Precise data bus error", 1 << 9, 0),
    (5, "BFAR Address", 1 << 15, 0),
    (5, "Imprecise data bus error", 1 << 10, 0),
    (5, "Instruction bus error", 1 << 8, 0),
    (
        5,
        "Floating-point lazy state preservation error",
        1 << 13,
        0,
    ),
    (6, "Stack overflow", 1 << 20, 0),
    (6, "Division by zero", 1 << 25, 0),
    (6, "Unaligned memory access", 1 << 24, 0),
    (6, "No coprocessor instructions", 1 << 19, 0),
    (6, "Illegal load of EXC_RETURN into PC", 1 << 18, 0),
    (6, "Illegal use of the EPSR", 1 << 17, 0),
    (6, "Attempt to execute undefined instruction", 1 << 16, 0),
];

fn zephyr_detail(section: u32, body: &str) -> Option<(u32, u32)> {
    let body = body.trim();
    ZEPHYR_DETAILS
        .iter()
        .find(|(s, start, _, _)| *s == section && body.starts_with(start))
        .map(|&(_, _, cfsr, hfsr)| (cfsr, hfsr))
}

/// Lines Zephyr prints around a dump that carry nothing to keep.
fn is_zephyr_tail(body: &str) -> bool {
    [
        "Current thread:",
        "Halting system",
        "Fault during interrupt handling",
        "Caught system error",
        "Fatal error was",
    ]
    .iter()
    .any(|start| body.trim().starts_with(start))
}

/// Zephyr's floating-point part of the frame: `s[ 0]:  0x00000000  s[ 1]: ...`.
fn is_fpu_line(body: &str) -> bool {
    let body = body.trim();
    (body.starts_with("s[") || body.starts_with("d[")) && body.contains("0x")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reg {
    /// r0-r3, then r12 at index 4 (the stacked frame's order).
    R(usize),
    Pc,
    Lr,
    Sp,
    Xpsr,
    Cfsr,
    Hfsr,
    Mmfar,
    Bfar,
    /// A register a dump shows that the snapshot has no field for (r4-r11, PSP, EXC_RETURN...).
    Other,
}

fn reg_named(name: &str) -> Option<Reg> {
    Some(match name {
        "r0" | "r0/a1" => Reg::R(0),
        "r1" | "r1/a2" => Reg::R(1),
        "r2" | "r2/a3" => Reg::R(2),
        "r3" | "r3/a4" => Reg::R(3),
        "r12" | "r12/ip" | "ip" => Reg::R(4),
        "pc" | "r15" | "r15/pc" => Reg::Pc,
        "lr" | "r14" | "r14/lr" => Reg::Lr,
        "sp" | "r13" | "r13/sp" => Reg::Sp,
        "xpsr" | "psr" => Reg::Xpsr,
        "cfsr" => Reg::Cfsr,
        "hfsr" => Reg::Hfsr,
        "mmfar" | "mmar" => Reg::Mmfar,
        "bfar" => Reg::Bfar,
        "psp" | "msp" | "exc_return" | "fpscr" | "shcsr" | "dfsr" | "afsr" | "mmfsr" | "bfsr"
        | "ufsr" | "sfsr" | "sfar" | "control" | "primask" | "basepri" | "faultmask" => Reg::Other,
        other => {
            let number = other.strip_prefix('r')?;
            let number = number.split_once('/').map_or(number, |(n, _)| n);
            match number.parse::<u32>() {
                Ok(4..=11) => Reg::Other,
                _ => return None,
            }
        }
    })
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'/'
}

/// Every `name: 0x...` (or `name = ...`, `name 0x...`) register value on a line.
fn registers(body: &str) -> Vec<(Reg, u32)> {
    let lower = body.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let starts_name = bytes[i].is_ascii_alphabetic() && (i == 0 || !is_name_byte(bytes[i - 1]));
        if !starts_name {
            i += 1;
            continue;
        }
        let end = i + bytes[i..].iter().take_while(|b| is_name_byte(**b)).count();
        if let Some(reg) = reg_named(&lower[i..end]) {
            if let Some((value, next)) = value_after(&lower, end) {
                found.push((reg, value));
                i = next;
                continue;
            }
        }
        i = end;
    }
    found
}

/// The register value after a name ending at `pos`, and where it ends: `): 0x1f`, ` = 1F00A0B4`,
/// `  0x1f`, ` Address: 0x1f`. A bare hex value needs exactly 8 digits after `:` or `=`.
fn value_after(text: &str, pos: usize) -> Option<(u32, usize)> {
    let mut rest = text.get(pos..)?;
    rest = rest.strip_prefix(')').unwrap_or(rest);
    let before = rest.len();
    rest = rest.trim_start_matches([' ', '\t']);
    let spaced = rest.len() < before;
    if let Some(after) = rest.strip_prefix("address") {
        rest = after.trim_start_matches([' ', '\t']);
    }
    let separated = match rest.strip_prefix([':', '=']) {
        Some(after) => {
            rest = after.trim_start_matches([' ', '\t']);
            true
        }
        None => false,
    };
    if !separated && !spaced {
        return None;
    }
    let (digits, prefixed) = match rest.strip_prefix("0x") {
        Some(digits) => (digits, true),
        None => (rest, false),
    };
    let n = digits.bytes().take_while(u8::is_ascii_hexdigit).count();
    // A bare value (no `0x`) must be a full 8-digit word after `:` or `=`.
    let bare_ok = separated && n == 8;
    if n == 0 || n > 8 || !(prefixed || bare_ok) {
        return None;
    }
    if digits[n..]
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_')
    {
        return None;
    }
    let value = u32::from_str_radix(&digits[..n], 16).ok()?;
    Some((value, text.len() - digits.len() + n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dump(text: &str) -> Option<Dump> {
        let lines: Vec<&str> = text.lines().collect();
        find(&lines)
    }

    /// Zephyr 3.x on a Cortex-M3 with minimal logging: a NULL dereference in a test thread.
    const ZEPHYR_MPU: &str = "\
START - test_null_deref
E: ***** HARD FAULT *****
E:   Fault escalation (see below)
E: ***** MPU FAULT *****
E:   Data Access Violation
E:   MMFAR Address: 0x0
E: r0/a1:  0x00000000  r1/a2:  0x20000a10  r2/a3:  0x00000001
E: r3/a4:  0x00000000 r12/ip:  0x00000010 r14/lr:  0x000004a7
E:  xpsr:  0x61000000
E: Faulting instruction address (r15/pc): 0x000004ae
E: >>> ZEPHYR FATAL ERROR 0: CPU exception on CPU 0
E: Current thread: 0x20000158 (test_null_deref)
E: Halting system
";

    #[test]
    fn zephyr_dump_with_escalation() {
        let d = dump(ZEPHYR_MPU).unwrap();
        assert_eq!((d.first, d.last), (1, 12));
        assert_eq!(d.fatal_error.as_deref(), Some("0: CPU exception on CPU 0"));
        let s = &d.snapshot;
        assert_eq!(s.exception, Some(3));
        assert_eq!(s.pc, Some(0x4ae));
        assert_eq!(s.lr, Some(0x4a7));
        assert_eq!(s.xpsr, Some(0x6100_0000));
        assert_eq!(
            s.r,
            [Some(0), Some(0x2000_0a10), Some(1), Some(0), Some(0x10)]
        );
        // DACCVIOL | MMARVALID, and HFSR.FORCED.
        assert_eq!(s.cfsr, Some((1 << 1) | (1 << 7)));
        assert_eq!(s.hfsr, Some(1 << 30));
        assert_eq!(s.mmfar, Some(0));
        assert_eq!(s.bfar, None);
        assert_eq!(s.sp, None);
        assert!(s.raw.starts_with("E: ***** HARD FAULT *****"));
        assert!(s.raw.ends_with("E: Halting system"));
        assert_eq!(
            parse(&ZEPHYR_MPU.lines().collect::<Vec<_>>()),
            Some(d.snapshot)
        );
    }

    #[test]
    fn zephyr_bus_fault_with_deferred_log_prefixes() {
        let text = "\
[00:00:00.010,000] <err> os: ***** BUS FAULT *****
[00:00:00.010,000] <err> os:   Precise data bus error
[00:00:00.010,000] <err> os:   BFAR Address: 0x50001000
[00:00:00.010,000] <err> os: r0/a1:  0x50001000  r1/a2:  0x00000000  r2/a3:  0x00000000
[00:00:00.010,000] <err> os: r3/a4:  0x00000000 r12/ip:  0x00000000 r14/lr:  0x0000151f
[00:00:00.010,000] <err> os:  xpsr:  0x21000000
[00:00:00.010,000] <err> os: Faulting instruction address (r15/pc): 0x00001524
[00:00:00.010,000] <err> os: >>> ZEPHYR FATAL ERROR 0: CPU exception on CPU 0
";
        let s = dump(text).unwrap().snapshot;
        assert_eq!(s.exception, Some(5));
        assert_eq!(s.cfsr, Some((1 << 9) | (1 << 15)));
        assert_eq!(s.bfar, Some(0x5000_1000));
        assert_eq!(s.pc, Some(0x1524));
        assert_eq!(s.hfsr, None);
    }

    #[test]
    fn zephyr_usage_fault_stacking_and_fpu_lines_stay_in_one_dump() {
        let text = "\
E: ***** USAGE FAULT *****
E:   Division by zero
E: r0/a1:  0x00000007  r1/a2:  0x00000000  r2/a3:  0x00000000
E: r3/a4:  0x00000000 r12/ip:  0x00000000 r14/lr:  0x00000389
E:  xpsr:  0x01000000
E: s[ 0]:  0x00000000  s[ 1]:  0x00000000  s[ 2]:  0x00000000  s[ 3]:  0x00000000
E: fpscr:  0x00000000
E: r4/v1:  0x00000001  r5/v2:  0x00000002  r6/v3:  0x00000003
E: EXC_RETURN: 0xffffffed
E: Faulting instruction address (r15/pc): 0x00000390
";
        let d = dump(text).unwrap();
        assert_eq!((d.first, d.last), (0, 9));
        assert_eq!(d.snapshot.cfsr, Some(1 << 25));
        assert_eq!(d.snapshot.pc, Some(0x390));
        assert_eq!(d.snapshot.lr, Some(0x389));
        assert_eq!(d.fatal_error, None);
    }

    #[test]
    fn a_fatal_error_alone_is_a_dump_without_registers() {
        let d = dump(
            "boot\n>>> ZEPHYR FATAL ERROR 3: Kernel oops on CPU 0\nCurrent thread: 0x1 (main)\n",
        )
        .unwrap();
        assert_eq!((d.first, d.last), (1, 2));
        assert_eq!(d.fatal_error.as_deref(), Some("3: Kernel oops on CPU 0"));
        assert_eq!(d.snapshot.pc, None);
        assert_eq!(d.snapshot.exception, None);
    }

    #[test]
    fn a_firmware_assertion_names_its_site() {
        for (line, file, at) in [
            // FreeRTOS demos' vAssertCalled, after a logger's prefix.
            (
                "[00:00:01.100] ASSERT! Line 97, file tests/test_main.c",
                "tests/test_main.c",
                97,
            ),
            (
                "assertion \"len <= sizeof buf\" failed: file \"src/ring.c\", line 42, function: rb_put",
                "src/ring.c",
                42,
            ),
            (
                "assert failed: xQueueSemaphoreTake queue.c:1709 (( pxQueue ))",
                "queue.c",
                1709,
            ),
            (
                "ASSERTION FAIL [buf != NULL] @ WEST_TOPDIR/app/src/main.c:31",
                "app/src/main.c",
                31,
            ),
            (
                "fw.elf: src/mem.c:88: pool_take: Assertion `n > 0' failed.",
                "src/mem.c",
                88,
            ),
        ] {
            let d = dump(&format!("boot\n{line}\n")).unwrap();
            let a = d.assertion.clone().unwrap();
            assert_eq!((a.file.as_deref(), a.line), (Some(file), Some(at)), "{line}");
            assert_eq!((d.first, d.last, a.index), (1, 1, 1));
            assert!(d.assertion_alone());
            // An assertion alone shows no fault for the crash report.
            assert_eq!(parse(&["boot", line]), None, "{line}");
        }
        // A test framework's own assertion is a test result, not the firmware's.
        for line in [
            "    Assertion failed at WEST_TOPDIR/tests/main.c:42: test_x: (a == b) is false",
            "tests/test_crc.c:21:test_crc:FAIL: Expected 1 Was 2",
            "assert.h included",
        ] {
            assert!(dump(line).is_none(), "{line}");
        }
    }

    /// An assertion a test expected, long before the run ended, is no cause of how it ended.
    #[test]
    fn only_the_last_assertion_near_a_dump_counts() {
        let mut text = String::from("ASSERT! Line 5, file expected.c\n");
        for k in 0..30 {
            text.push_str(&format!("tick {k}\n"));
        }
        text.push_str("ASSERT! Line 9, file real.c\nspinning\n");
        let d = dump(&text).unwrap();
        assert_eq!(d.assertion.unwrap().file.as_deref(), Some("real.c"));

        let mut text = String::from("ASSERT! Line 5, file expected.c\n");
        for k in 0..30 {
            text.push_str(&format!("tick {k}\n"));
        }
        text.push_str(ZEPHYR_MPU);
        let d = dump(&text).unwrap();
        assert_eq!(d.assertion, None);
        assert!(d.fatal_error.is_some());
    }

    #[test]
    fn an_assertion_names_the_cause_of_the_fatal_error_after_it() {
        let text =
            "ASSERTION FAIL [sem->count <= sem->limit] @ WEST_TOPDIR/zephyr/kernel/sem.c:135\n\
                    E: r0/a1:  0x00000004  r1/a2:  0x00000087  r2/a3:  0x00000000\n\
                    E: Faulting instruction address (r15/pc): 0x000022e4\n\
                    E: >>> ZEPHYR FATAL ERROR 4: Kernel panic on CPU 0\n\
                    E: Halting system\n";
        let d = dump(text).unwrap();
        assert_eq!(d.fatal_error.as_deref(), Some("4: Kernel panic on CPU 0"));
        assert_eq!(d.snapshot.pc, Some(0x22e4));
        let a = d.assertion.clone().unwrap();
        assert_eq!((a.index, a.line), (0, Some(135)));
        assert!(!d.assertion_alone());
        assert!(parse(&text.lines().collect::<Vec<_>>()).is_some());
    }

    #[test]
    fn generic_handler_dumps() {
        let text = "\
tests/test_x.c:3:test_a:PASS
HardFault!
R0 = 0x00000000
R1 = 0x20000100
R12 = 0x00000000
LR = 0x08000299
PC = 0x08000300
xPSR = 0x21000000
CFSR = 0x00008200
HFSR = 0x40000000
BFAR = 0xE000EDF8
";
        let d = dump(text).unwrap();
        assert_eq!((d.first, d.last), (1, 10));
        let s = d.snapshot;
        assert_eq!(s.exception, Some(3));
        assert_eq!(s.pc, Some(0x0800_0300));
        assert_eq!(s.lr, Some(0x0800_0299));
        assert_eq!(s.r, [Some(0), Some(0x2000_0100), None, None, Some(0)]);
        assert_eq!(s.cfsr, Some(0x8200));
        assert_eq!(s.hfsr, Some(0x4000_0000));
        assert_eq!(s.bfar, Some(0xE000_EDF8));

        let one_line =
            dump("fault: pc: 0x1a2b lr: 0x1a01 sp: 0x20001ff0 cfsr: 0x00000100").unwrap();
        assert_eq!(one_line.snapshot.pc, Some(0x1a2b));
        assert_eq!(one_line.snapshot.sp, Some(0x2000_1ff0));
        assert_eq!(one_line.snapshot.exception, None);

        let bare = dump("R15=00000064 R14=00000065").unwrap();
        assert_eq!(bare.snapshot.pc, Some(0x64));
        assert_eq!(bare.snapshot.lr, Some(0x65));
    }

    #[test]
    fn things_that_are_not_dumps() {
        for text in [
            "",
            "pc: 0x1234",
            "tests/test_fault.c:9:test_hardfault_logger:PASS",
            "the PC is at 0x100 and LR 12",
            "pc: 0x123456789 lr: 0x10",
            "PC = 12 LR = 14",
            "topc: 0x10 flr: 0x12",
            "HardFault handler installed",
            "counter pc: 0x10\nsomething else\nlr: 0x12",
        ] {
            assert_eq!(dump(text), None, "{text:?}");
        }
    }

    #[test]
    fn the_first_qualifying_dump_wins() {
        let text = "pc: 0x10\nok\nPC: 0x20 LR: 0x22\nok\nPC: 0x30 LR: 0x32\n";
        let d = dump(text).unwrap();
        assert_eq!(d.first, 2);
        assert_eq!(d.snapshot.pc, Some(0x20));
    }

    #[test]
    fn register_values_parse_in_every_layout() {
        assert_eq!(
            registers("r3/a4:  0x00000000 r12/ip:  0x00000010 r14/lr:  0x000004a7"),
            vec![(Reg::R(3), 0), (Reg::R(4), 0x10), (Reg::Lr, 0x4a7)]
        );
        assert_eq!(
            registers("Faulting instruction address (r15/pc): 0x000004ae"),
            vec![(Reg::Pc, 0x4ae)]
        );
        assert_eq!(
            registers("  MMFAR Address: 0x20001000"),
            vec![(Reg::Mmfar, 0x2000_1000)]
        );
        assert_eq!(
            registers("PC 0x1f LR 0x20"),
            vec![(Reg::Pc, 0x1f), (Reg::Lr, 0x20)]
        );
        assert_eq!(
            registers("r10/v7: 0x00000001  r11/v8: 0x00000002    psp:  0x20000ff0"),
            vec![(Reg::Other, 1), (Reg::Other, 2), (Reg::Other, 0x2000_0ff0)]
        );
        assert_eq!(registers("PC = 12"), vec![]);
        assert_eq!(registers("pc: 0xzz"), vec![]);
        assert_eq!(registers("r16: 0x1"), vec![]);
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_text_never_panics(text in "\\PC*") {
            let lines: Vec<&str> = text.lines().collect();
            let _ = find(&lines);
            let _ = registers(&text);
        }
    }
}
