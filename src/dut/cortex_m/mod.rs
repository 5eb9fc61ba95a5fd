//! What every Cortex-M crash looks like, whoever read it: the core registers, the EXC_RETURN
//! values, the stacked exception frame and how to find it above a handler's own pushes, the SCB
//! fault status registers, the exception names, and what a stopped core's reading means (a crash
//! with its stacked frame, or where a running core was). Pure functions over numbers: the QEMU
//! monitor, a gdb session and a probe-rs session each read the core their own way into these
//! types and share the frame-finding and the conclusion here, and the walk over a memory dump's
//! lines once each has its own line pattern.

pub mod unwind;

use self::unwind::{unwind, StackWords};
use crate::capture::FaultSnapshot;
use regex::Regex;
use std::fmt::Write as _;

/// SCB fault status registers, read in one go from CFSR: CFSR, HFSR, DFSR, MMFAR, BFAR.
pub const SCB_CFSR: u32 = 0xE000_ED28;
/// Words first read from the stack at SP: a frame and a few registers the handler pushed. Kept
/// small because a read past the end of RAM shows up in QEMU's guest-error log.
pub const STACK_WORDS_FIRST: usize = 16;
/// Words read when the first read showed no trustworthy frame.
pub const STACK_WORDS_MORE: usize = 40;
/// How far above SP (in words) a stacked frame is looked for when SP does not point at it.
const SCAN_WORDS: usize = 32;

const XPSR_THUMB: u32 = 0x0100_0000;
/// xPSR bits 23:20 are reserved (zero) on every Cortex-M: a word with any of them set is not a
/// stacked xPSR.
const XPSR_RESERVED: u32 = 0x00F0_0000;

/// The core registers r0-r15 and xPSR, each None when the reader did not get it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CoreRegs {
    pub r: [Option<u32>; 16],
    pub xpsr: Option<u32>,
}

impl CoreRegs {
    /// Puts these registers into `snap` as the faulting code's: exception, PC, LR, SP, xPSR
    /// and the argument registers r0-r3 and r12.
    pub fn fill(&self, snap: &mut FaultSnapshot) {
        snap.exception = self.exception();
        snap.pc = self.pc();
        snap.lr = self.lr();
        snap.sp = self.sp();
        snap.xpsr = self.xpsr;
        snap.r = [self.r[0], self.r[1], self.r[2], self.r[3], self.r[12]];
    }

    pub fn sp(&self) -> Option<u32> {
        self.r[13]
    }
    pub fn lr(&self) -> Option<u32> {
        self.r[14]
    }
    pub fn pc(&self) -> Option<u32> {
        self.r[15]
    }
    /// The active exception number (xPSR bits 8:0; 0 in thread mode).
    pub fn exception(&self) -> Option<u32> {
        self.xpsr.map(|x| x & 0x1ff)
    }
    pub fn is_empty(&self) -> bool {
        self.r.iter().all(Option::is_none) && self.xpsr.is_none()
    }
}

/// Whether a word is an EXC_RETURN value: the v7-M ones (0xFFFFFFE1/E9/ED/F1/F9/FD) or a v8-M
/// one (prefix 0xFF, bit 7 set, bit 1 clear, DCRS bit 5 set).
pub fn is_exc_return(v: u32) -> bool {
    const V7M: [u32; 6] = [
        0xFFFF_FFE1,
        0xFFFF_FFE9,
        0xFFFF_FFED,
        0xFFFF_FFF1,
        0xFFFF_FFF9,
        0xFFFF_FFFD,
    ];
    V7M.contains(&v) || (v & 0xFFFF_FFA2) == 0xFFFF_FFA0
}

/// EXC_RETURN bit 2: the frame was pushed on the process stack.
fn uses_psp(exc_return: u32) -> bool {
    exc_return & 0x4 != 0
}

fn plausible_xpsr(v: u32) -> bool {
    v & XPSR_THUMB != 0 && v & XPSR_RESERVED == 0
}

/// How a stacked frame was found, most trustworthy first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameFound {
    /// At the SP EXC_RETURN names, read at the handler's first instruction: certain.
    AtEntry,
    /// At SP, with EXC_RETURN still in LR.
    AtSp,
    /// Right above the EXC_RETURN the handler pushed.
    AboveExcReturn,
    /// Above a pushed EXC_RETURN, but its xPSR has no Thumb bit.
    WithoutThumbBit,
    /// No EXC_RETURN anywhere: the first plausible frame.
    Guessed,
}

/// Where the stacked exception frame was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackedFrame {
    pub addr: u32,
    /// r0, r1, r2, r3, r12, lr, pc, xpsr.
    pub words: [u32; 8],
    pub found: FrameFound,
    /// How it was found, for the snapshot's raw text.
    pub note: String,
}

impl StackedFrame {
    fn at(words: &[u32], k: usize, sp: u32, found: FrameFound, note: String) -> Option<Self> {
        let frame: [u32; 8] = words.get(k..k + 8)?.try_into().ok()?;
        Some(Self {
            addr: sp.wrapping_add(4 * k as u32),
            words: frame,
            found,
            note,
        })
    }

    /// Found by an EXC_RETURN and a valid xPSR: no need to read more of the stack.
    pub fn is_certain(&self) -> bool {
        matches!(
            self.found,
            FrameFound::AtEntry | FrameFound::AtSp | FrameFound::AboveExcReturn
        )
    }

    /// The SP of the code that faulted: above the frame, plus the alignment word the core added
    /// when stacked xPSR bit 9 says so.
    pub fn caller_sp(&self) -> u32 {
        let realign = if self.words[7] & 0x200 != 0 { 4 } else { 0 };
        self.addr.wrapping_add(32 + realign)
    }
}

/// Finds the exception frame a handler stopped in: at SP when LR still holds EXC_RETURN and the
/// frame validates (stacked xPSR has the Thumb bit, reserved bits clear); otherwise above the
/// EXC_RETURN the handler pushed, and as a last resort at the first plausible frame. `stack` are
/// the words read from SP upwards. Err explains why no frame could be trusted.
pub fn locate_frame(regs: &CoreRegs, stack: &[u32]) -> Result<StackedFrame, String> {
    let (Some(sp), Some(lr)) = (regs.sp(), regs.lr()) else {
        return Err("SP or LR missing from the register dump".into());
    };
    let mut tried = String::new();
    if is_exc_return(lr) {
        if uses_psp(lr) {
            return Err(format!(
                "LR=0x{lr:08x} (EXC_RETURN) says the frame is on the process stack (PSP), which \
                 was not read"
            ));
        }
        if let Some(frame) = StackedFrame::at(stack, 0, sp, FrameFound::AtSp, String::new()) {
            if plausible_xpsr(frame.words[7]) {
                return Ok(StackedFrame {
                    note: format!(
                        "frame at SP=0x{sp:08x} (LR=0x{lr:08x} is EXC_RETURN, main stack)"
                    ),
                    ..frame
                });
            }
            tried = format!(
                "LR=0x{lr:08x} is EXC_RETURN but the word at SP+28 (0x{:08x}) is no stacked \
                 xPSR; ",
                frame.words[7]
            );
        }
    } else {
        tried = format!("LR=0x{lr:08x} is not EXC_RETURN (the handler called a function); ");
    }

    let scan = stack.len().saturating_sub(8).min(SCAN_WORDS);
    let anchors: Vec<usize> = (0..scan).filter(|&k| is_exc_return(stack[k])).collect();
    for &k in &anchors {
        if uses_psp(stack[k]) {
            return Err(format!(
                "{tried}the handler saved EXC_RETURN 0x{:08x} at SP+{}: the frame is on the \
                 process stack (PSP), which was not read",
                stack[k],
                4 * k
            ));
        }
        if stack.get(k + 8).copied().is_some_and(plausible_xpsr) {
            let note = format!(
                "{tried}frame found above the EXC_RETURN 0x{:08x} the handler saved at SP+{}",
                stack[k],
                4 * k
            );
            if let Some(frame) =
                StackedFrame::at(stack, k + 1, sp, FrameFound::AboveExcReturn, note)
            {
                return Ok(frame);
            }
        }
    }
    let xpsr_without_thumb =
        |k: &&usize| stack.get(**k + 8).is_some_and(|x| x & XPSR_RESERVED == 0);
    if let Some(&k) = anchors.iter().find(xpsr_without_thumb) {
        let note = format!(
            "{tried}frame taken above the EXC_RETURN 0x{:08x} the handler saved at SP+{}; its \
             stacked xPSR has no Thumb bit (the code branched to an address with bit 0 clear)",
            stack[k],
            4 * k
        );
        if let Some(frame) = StackedFrame::at(stack, k + 1, sp, FrameFound::WithoutThumbBit, note) {
            return Ok(frame);
        }
    }
    for k in 0..scan {
        if plausible_xpsr(stack[k + 7]) && stack[k + 6] & 1 == 0 {
            let note = format!(
                "{tried}no saved EXC_RETURN found; guessed the first plausible frame at SP+{}",
                4 * k
            );
            if let Some(frame) = StackedFrame::at(stack, k, sp, FrameFound::Guessed, note) {
                return Ok(frame);
            }
        }
    }
    Err(format!(
        "{tried}no plausible exception frame in the {} words above SP=0x{sp:08x}",
        stack.len()
    ))
}

/// Exception numbers whose handler entry fwfix watches: NMI, HardFault, MemManage, BusFault,
/// UsageFault, SecureFault.
pub const WATCHED_VECTORS: std::ops::RangeInclusive<u32> = 2..=7;
/// Entries of the vector table read: the initial SP and the 15 system exceptions.
pub const SYSTEM_VECTORS: usize = 16;

/// Whether the core can fetch instructions at `addr`, by the architecture's default memory map
/// (ARMv7-M and ARMv8-M alike): the Code (0x00000000-0x1FFFFFFF), SRAM (0x20000000-0x3FFFFFFF)
/// and external RAM (0x60000000-0x9FFFFFFF) regions; peripheral, device and system space are
/// execute-never, and a handler there faults on its first fetch.
pub fn executable(addr: u32) -> bool {
    addr < 0x4000_0000 || (0x6000_0000..0xA000_0000).contains(&addr)
}

/// Whether a vector table at `addr` lies in RAM the firmware writes at run time. The SRAM and
/// external RAM regions are; the Code region (0x00000000-0x1FFFFFFF) holds flash on most parts
/// (lm3s6965evb: a store there is ignored), but RAM on some (`code_ram`: QEMU's MPS2 machines
/// have SSRAM at 0, so a store through a null pointer lands in the low vector table and sticks).
/// A writable table can change under the core after the watcher read it; one in flash is fixed.
pub fn writable_table(addr: u32, code_ram: bool) -> bool {
    if addr < 0x2000_0000 {
        code_ram
    } else {
        executable(addr)
    }
}

/// The byte offset and length of the watched vectors' words in a vector table.
pub fn watched_words() -> (u32, u32) {
    let (first, last) = (*WATCHED_VECTORS.start(), *WATCHED_VECTORS.end());
    (first * 4, (last - first + 1) * 4)
}

/// Where to stop the core the moment it takes a fault: each distinct handler entry of the watched
/// vectors, with the vectors that lead there, and what could not be watched and why.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FaultHandlers {
    /// Entry address (Thumb bit clear) and the watched vectors that use it.
    pub entries: Vec<(u32, Vec<u32>)>,
    /// The watched vectors that name no handler the core can run (0, no Thumb bit, outside
    /// executable memory): `entries` holds where the core lands through them, where it stops
    /// with the fault's frame stacked, one instruction before it locks up.
    pub dead_ends: Vec<u32>,
    /// Plain statements: vectors with no handler, entries shared with other exceptions.
    pub notes: Vec<String>,
    /// The reset handler's entry (Thumb bit clear): a fault that lands there restarts the image,
    /// so nothing after the fault is worth waiting for.
    pub reset: Option<u32>,
}

impl FaultHandlers {
    /// The watched vectors whose handler starts at `addr`.
    pub fn vectors_at(&self, addr: u32) -> Option<&[u32]> {
        self.entries
            .iter()
            .find(|(a, _)| *a == addr & !1)
            .map(|(_, v)| v.as_slice())
    }
}

/// Reads the fault handlers' entries out of a vector table's first words (initial SP, reset,
/// NMI, HardFault, ...). A vector that is 0, has no Thumb bit or points outside executable
/// memory names no handler: a fault through it locks the core up (QEMU says so on stderr, and
/// aborts), and the notes say it. Where the core lands through it (the entry with bit 0 clear) is
/// watched all the same, as a dead end: the exception entry is done there (frame stacked, LR the
/// EXC_RETURN) and the lockup comes only with its first instruction. A vector
/// that points at the reset handler is watched too: a fault that restarts the image is still a
/// fault, and the reset at boot (thread mode) is told apart by the exception number.
pub fn fault_handlers(table: &[u32]) -> FaultHandlers {
    let reset = table.get(1).copied();
    let mut out = FaultHandlers {
        reset: reset.map(|r| r & !1),
        ..FaultHandlers::default()
    };
    let mut missing = Vec::new();
    let mut dead = Vec::new();
    for n in WATCHED_VECTORS {
        let Some(&entry) = table.get(n as usize) else {
            out.notes.push(format!(
                "the vector table was read only up to entry {}: {} is not watched",
                table.len(),
                exception_name(n)
            ));
            continue;
        };
        let name = exception_name(n);
        if entry == 0 {
            // SecureFault exists only with the Security Extension: an empty entry is normal.
            if n != 7 {
                missing.push(name);
                dead.push((0, n));
            }
            continue;
        }
        if entry & 1 == 0 {
            out.notes.push(format!(
                "the {name} vector 0x{entry:08x} has no Thumb bit: taking it faults again and \
                 locks the core up"
            ));
            dead.push((entry, n));
            continue;
        }
        if !executable(entry & !1) {
            out.notes.push(format!(
                "the {name} vector 0x{entry:08x} points outside executable memory: taking it \
                 faults again and locks the core up"
            ));
            dead.push((entry & !1, n));
            continue;
        }
        if Some(entry) == reset {
            out.notes.push(format!(
                "the {name} vector points at the reset handler: a fault there restarts the image"
            ));
        }
        let addr = entry & !1;
        match out.entries.iter_mut().find(|(a, _)| *a == addr) {
            Some((_, vectors)) => vectors.push(n),
            None => out.entries.push((addr, vec![n])),
        }
    }
    if !missing.is_empty() {
        out.notes.push(format!(
            "the vector table has no {} handler (the entry is 0): a fault there locks the core \
             up instead of entering a handler",
            missing.join(", ")
        ));
    }
    for (addr, vectors) in &out.entries {
        let others: Vec<String> = (8..table.len().min(SYSTEM_VECTORS) as u32)
            .filter(|&k| table[k as usize] & !1 == *addr && table[k as usize] != 0)
            .map(exception_name)
            .collect();
        if !others.is_empty() {
            out.notes.push(format!(
                "the handler at 0x{addr:08x} ({}) also serves {}: entries from those are let \
                 through",
                vectors
                    .iter()
                    .map(|&n| exception_name(n))
                    .collect::<Vec<_>>()
                    .join(", "),
                others.join(", ")
            ));
        }
    }
    for (addr, n) in dead {
        out.dead_ends.push(n);
        match out.entries.iter_mut().find(|(a, _)| *a == addr) {
            Some((_, vectors)) => vectors.push(n),
            None => out.entries.push((addr, vec![n])),
        }
    }
    out
}

/// `b .` (Thumb `b.n` to itself), `b.w .`, and `wfi` followed by a branch back to it: a core at
/// such an instruction stays there. `code` holds the 6 bytes from PC - 2.
pub fn spins_at(code: &[u8]) -> bool {
    let half = |i: usize| code.get(i..i + 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    const B_SELF: u16 = 0xE7FE;
    const B_BACK_ONE: u16 = 0xE7FD;
    const WFI: u16 = 0xBF30;
    let (prev, at, next) = (half(0), half(2), half(4));
    at == Some(B_SELF)
        || (at == Some(0xF7FF) && next == Some(0xBFFE))
        || (at == Some(WFI) && next == Some(B_BACK_ONE))
        || (at == Some(B_BACK_ONE) && prev == Some(WFI))
}

/// Which stack an exception frame went to, from EXC_RETURN bit 2.
pub fn frame_stack_name(exc_return: u32) -> &'static str {
    if uses_psp(exc_return) {
        "PSP"
    } else {
        "MSP"
    }
}

/// EXC_RETURN bit 3: the exception interrupted thread mode (else another handler).
pub fn returns_to_thread(exc_return: u32) -> bool {
    exc_return & 0x8 != 0
}

/// What was read at the first instruction of a fault handler, where LR still holds the
/// EXC_RETURN the core wrote and the frame sits exactly at the SP it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryReading {
    /// The live registers at the handler's first instruction.
    pub regs: CoreRegs,
    /// The SP of the stack EXC_RETURN names (MSP is r13 in handler mode; PSP read separately),
    /// or why it could not be read.
    pub frame_sp: Result<u32, String>,
    /// The 8 frame words at `frame_sp`, or why they could not be read.
    pub frame: Result<[u32; 8], String>,
    /// CFSR, HFSR, DFSR, MMFAR, BFAR (empty when the read failed).
    pub scb: Vec<u32>,
    /// What was read, in a debugger's words, for the snapshot's raw text.
    pub raw: String,
    /// Set when the vector taken names no handler (a dead end of [`FaultHandlers`]): what the
    /// reader knows of it (the vector table's own statements), for the snapshot's notes. The
    /// core was stopped where its next instruction locks it up.
    pub dead_end: Option<Vec<String>>,
}

/// The crash snapshot of a core stopped at a fault handler's entry. Nothing is guessed: a frame
/// that could not be read leaves PC and LR empty and the notes say why.
pub fn snapshot_at_entry(reading: &EntryReading) -> FaultSnapshot {
    let regs = &reading.regs;
    let exception = regs.exception();
    let mut snap = FaultSnapshot {
        exception,
        exc_return: regs.lr().filter(|&lr| is_exc_return(lr)),
        ..FaultSnapshot::default()
    };
    apply_scb(&mut snap, &reading.scb);
    let mut raw = String::new();
    if let Some(n) = exception {
        let _ = writeln!(
            raw,
            "core stopped at the entry of {} (exception {n})",
            exception_name(n)
        );
    }
    let stacking_failed = snap
        .cfsr
        .is_some_and(|c| c & (CFSR_MSTKERR | CFSR_STKERR) != 0);
    match (snap.exc_return, &reading.frame_sp, &reading.frame) {
        (None, _, _) => snap.notes.push(format!(
            "LR at the handler's entry is {} rather than an EXC_RETURN value: the frame cannot be \
             located",
            regs.lr()
                .map_or("unknown".to_string(), |lr| format!("0x{lr:08x}"))
        )),
        (Some(exc), Err(why), _) => snap.notes.push(format!(
            "the exception frame is on the {} but it could not be read: {why}",
            frame_stack_name(exc)
        )),
        (Some(exc), Ok(sp), Err(why)) => {
            snap.sp = Some(*sp);
            snap.notes.push(format!(
                "the exception frame at {}=0x{sp:08x} could not be read ({why}){}",
                frame_stack_name(exc),
                if stacking_failed {
                    ": the core could not stack it either (a stack overflow into a guard region \
                     or unmapped memory), so PC and LR are unknown"
                } else {
                    ""
                }
            ));
        }
        (Some(exc), Ok(sp), Ok(words)) if stacking_failed => {
            snap.sp = Some(*sp);
            snap.notes.push(format!(
                "the core failed to stack the exception frame (stacking fault on the {} at \
                 0x{sp:08x}: a stack overflow into a guard region or unmapped memory); the words \
                 there are not a frame, so PC and LR are unknown (they read lr=0x{:08x} \
                 pc=0x{:08x})",
                frame_stack_name(exc),
                words[5],
                words[6]
            ));
        }
        (Some(exc), Ok(sp), Ok(words)) => {
            let frame = StackedFrame {
                addr: *sp,
                words: *words,
                found: FrameFound::AtEntry,
                note: format!(
                    "frame at {}=0x{sp:08x} (EXC_RETURN 0x{exc:08x} in LR at the handler's entry)",
                    frame_stack_name(exc)
                ),
            };
            apply_frame(&mut snap, &frame);
            let _ = writeln!(raw, "stacked frame at 0x{:08x}: {}", frame.addr, frame.note);
        }
    }
    if let Some(statements) = &reading.dead_end {
        snap.lockup = true;
        snap.notes.push(format!(
            "no fault handler ran: the core was stopped at 0x{:08x}, where the {} vector sends it \
             and where its next instruction locks it up",
            regs.pc().unwrap_or_default(),
            exception.map_or("taken".to_string(), exception_name)
        ));
        snap.notes.extend(statements.iter().cloned());
    }
    for note in &snap.notes {
        let _ = writeln!(raw, "{note}");
    }
    if reading.scb.len() < 5 {
        let _ = writeln!(raw, "the SCB fault status registers could not be read");
    }
    raw.push_str(&reading.raw);
    snap.raw = raw;
    snap
}

/// The one console.log line that records a fault read at its handler's entry, in the words log
/// triage knows: `HardFault at pc=0x... lr=0x... xpsr=0x... CFSR=0x... HFSR=0x..., frame on the
/// PSP (read by fwfix at the handler's entry)`.
pub fn fault_line(snap: &FaultSnapshot) -> String {
    let hex = |v: Option<u32>| v.map_or("?".to_string(), |v| format!("0x{v:08x}"));
    let mut line = format!(
        "{} at pc={} lr={} xpsr={} CFSR={} HFSR={}",
        snap.exception.map_or("Fault".to_string(), exception_name),
        hex(snap.pc),
        hex(snap.lr),
        hex(snap.xpsr),
        hex(snap.cfsr),
        hex(snap.hfsr)
    );
    if let Some(exc) = snap.exc_return {
        let _ = write!(line, ", frame on the {}", frame_stack_name(exc));
    }
    line.push_str(" (read by fwfix at the handler's entry)");
    for note in &snap.notes {
        let _ = write!(line, "; {note}");
    }
    line
}

const CFSR_MSTKERR: u32 = 1 << 4;
const CFSR_STKERR: u32 = 1 << 12;

/// The name of a Cortex-M exception number.
pub fn exception_name(n: u32) -> String {
    match n {
        0 => "Thread".into(),
        1 => "Reset".into(),
        2 => "NMI".into(),
        3 => "HardFault".into(),
        4 => "MemManage".into(),
        5 => "BusFault".into(),
        6 => "UsageFault".into(),
        7 => "SecureFault".into(),
        11 => "SVCall".into(),
        12 => "DebugMonitor".into(),
        14 => "PendSV".into(),
        15 => "SysTick".into(),
        n if n >= 16 => format!("IRQ{}", n - 16),
        n => format!("exception {n}"),
    }
}

/// Fills a snapshot's PC, LR, xPSR, r0-r3, r12 from a stacked frame, and its SP with the SP of the
/// code that faulted.
pub fn apply_frame(snap: &mut FaultSnapshot, frame: &StackedFrame) {
    let w = frame.words;
    snap.r = [Some(w[0]), Some(w[1]), Some(w[2]), Some(w[3]), Some(w[4])];
    snap.lr = Some(w[5]);
    snap.pc = Some(w[6]);
    snap.xpsr = Some(w[7]);
    snap.sp = Some(frame.caller_sp());
}

/// Fills a snapshot's fault status from the five SCB words read at [`SCB_CFSR`] (CFSR, HFSR,
/// DFSR, MMFAR, BFAR). False, leaving the snapshot alone, when fewer than five were read.
pub fn apply_scb(snap: &mut FaultSnapshot, words: &[u32]) -> bool {
    let [cfsr, hfsr, _dfsr, mmfar, bfar] = match words.get(..5) {
        Some(&[a, b, c, d, e]) => [a, b, c, d, e],
        _ => return false,
    };
    snap.cfsr = Some(cfsr);
    snap.hfsr = Some(hfsr);
    // MMFAR and BFAR only hold an address while CFSR says it is valid.
    snap.mmfar = (cfsr & (1 << 7) != 0).then_some(mmfar);
    snap.bfar = (cfsr & (1 << 15) != 0).then_some(bfar);
    true
}

/// What a debugger read from a stopped core.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StopReading {
    pub regs: CoreRegs,
    /// CFSR, HFSR, DFSR, MMFAR, BFAR (fewer when the read failed).
    pub scb: Vec<u32>,
    /// Words from SP upwards.
    pub stack: Vec<u32>,
    /// The process stack, read when the core was stopped in handler mode and the reader can
    /// get the PSP: its words from the PSP upwards, for unwinding to the code the handler
    /// interrupted.
    pub psp: Option<StackWords>,
    /// The debugger's text (or a rendering of what it read), for the snapshot's raw field.
    pub raw: String,
}

/// What the stopped core was doing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// In a fault handler (exception 3 to 7): the crash, with the stacked frame.
    Faulted(FaultSnapshot),
    /// Anywhere else: where it was (live registers).
    Running(FaultSnapshot),
}

/// Turns a reading into a crash or a stopped-at snapshot; None when no PC was read.
pub fn conclude(reading: &StopReading) -> Option<Stop> {
    let regs = &reading.regs;
    let pc = regs.pc()?;
    let exception = regs.exception();
    if !exception.is_some_and(|n| (3..=7).contains(&n)) {
        return Some(Stop::Running(stopped_at(reading, pc)));
    }
    let mut snap = FaultSnapshot {
        exception,
        ..FaultSnapshot::default()
    };
    let mut raw = String::new();
    if let Some(n) = exception {
        let _ = writeln!(raw, "core stopped in {} (exception {n})", exception_name(n));
    }
    match locate_frame(regs, &reading.stack) {
        Ok(frame) => {
            apply_frame(&mut snap, &frame);
            let _ = writeln!(raw, "stacked frame at 0x{:08x}: {}", frame.addr, frame.note);
        }
        Err(why) => {
            let _ = writeln!(
                raw,
                "no stacked frame: {why}; PC/LR left empty (the live ones are the handler's)"
            );
        }
    }
    if !apply_scb(&mut snap, &reading.scb) {
        let _ = writeln!(raw, "the SCB fault status registers could not be read");
    }
    raw.push_str(&reading.raw);
    snap.raw = raw;
    Some(Stop::Faulted(snap))
}

/// Where a core stopped outside a fault handler was. Stopped in another handler (a timer
/// interrupt that happened to run), it is unwound to the thread code it interrupted, which is
/// where a hung image is stuck; the handlers are kept beside it. When no frame can be trusted the
/// live registers stay, and a note says why.
fn stopped_at(reading: &StopReading, pc: u32) -> FaultSnapshot {
    let regs = &reading.regs;
    let mut snap = FaultSnapshot {
        exception: regs.exception(),
        pc: Some(pc),
        lr: regs.lr(),
        sp: regs.sp(),
        xpsr: regs.xpsr,
        r: [regs.r[0], regs.r[1], regs.r[2], regs.r[3], regs.r[12]],
        raw: reading.raw.clone(),
        ..FaultSnapshot::default()
    };
    let (Some(exception), Some(sp)) = (regs.exception().filter(|&n| n != 0), regs.sp()) else {
        return snap;
    };
    let msp = StackWords {
        sp,
        words: reading.stack.clone(),
    };
    match unwind(regs, &msp, reading.psp.as_ref()) {
        Ok(u) => {
            u.thread.fill(&mut snap);
            snap.handlers = u.handlers;
            snap.raw = format!(
                "core stopped in {} at 0x{pc:08x}, unwound to the code it interrupted:\n{}{}",
                exception_name(exception),
                u.note,
                snap.raw
            );
        }
        Err(why) => snap.notes.push(format!(
            "the core was stopped in {}'s handler and could not be unwound to the code it \
             interrupted: {why}",
            exception_name(exception)
        )),
    }
    snap
}

/// The words of a memory dump, as long as their addresses run on from `start`. `line_re` matches
/// one line of the dump with its address (hex, no `0x`) in group 1 and its words (`0x...`,
/// whitespace separated) in group 2; lines it does not match are passed over.
pub fn contiguous_words<'a>(
    lines: impl IntoIterator<Item = &'a str>,
    line_re: &Regex,
    start: u32,
) -> Vec<u32> {
    let mut words = Vec::new();
    let mut expected = u64::from(start);
    for line in lines {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exc_return_values() {
        for v in [
            0xFFFF_FFF9,
            0xFFFF_FFF1,
            0xFFFF_FFFD,
            0xFFFF_FFE9,
            0xFFFF_FFBC,
        ] {
            assert!(is_exc_return(v), "{v:08x}");
        }
        for v in [
            0xFFFF_FFFF,
            0x0000_0065,
            0xFFFF_FFF0 & 0x7FFF_FFFF,
            0xFFFF_FF02,
        ] {
            assert!(!is_exc_return(v), "{v:08x}");
        }
    }

    #[test]
    fn frame_at_sp_when_lr_is_exc_return() {
        let mut regs = CoreRegs::default();
        regs.r[13] = Some(0x2000_0100);
        regs.r[14] = Some(0xFFFF_FFF9);
        let stack = [1, 2, 3, 4, 12, 0x0000_0201, 0x0000_0300, 0x0100_0000, 0, 0];
        let frame = locate_frame(&regs, &stack).unwrap();
        assert_eq!(frame.addr, 0x2000_0100);
        assert_eq!(frame.words[6], 0x300);
        assert_eq!(frame.caller_sp(), 0x2000_0120);
        assert!(frame.note.contains("frame at SP"));
        assert_eq!(frame.found, FrameFound::AtSp);
        assert!(frame.is_certain());
    }

    #[test]
    fn frame_on_psp_is_reported_not_guessed() {
        let mut regs = CoreRegs::default();
        regs.r[13] = Some(0x2000_0100);
        regs.r[14] = Some(0xFFFF_FFFD);
        let err = locate_frame(&regs, &[0; 16]).unwrap_err();
        assert!(err.contains("PSP"), "{err}");
    }

    #[test]
    fn frame_above_pushed_registers() {
        let mut regs = CoreRegs::default();
        regs.r[13] = Some(0x2000_0100);
        regs.r[14] = Some(0x0000_0065);
        // push {r4, r7, lr}, then the hardware frame with a valid xPSR.
        let stack = [
            7,
            9,
            0xFFFF_FFF9,
            10,
            11,
            12,
            13,
            14,
            0x0000_0401,
            0x0000_0500,
            0x2100_0000,
            0,
        ];
        let frame = locate_frame(&regs, &stack).unwrap();
        assert_eq!(frame.addr, 0x2000_010c);
        assert_eq!(frame.words[6], 0x500);
        assert!(frame.note.contains("SP+8"), "{}", frame.note);
    }

    #[test]
    fn guessed_frame_when_nothing_is_anchored() {
        let mut regs = CoreRegs::default();
        regs.r[13] = Some(0x100);
        regs.r[14] = Some(0x41);
        let stack = [5, 0, 1, 2, 3, 12, 0x71, 0x80, 0x0100_0000, 0];
        let frame = locate_frame(&regs, &stack).unwrap();
        assert_eq!(frame.addr, 0x104);
        assert!(frame.note.contains("guessed"));
        assert_eq!(frame.found, FrameFound::Guessed);
        assert!(locate_frame(&regs, &[0; 12]).is_err());
    }

    #[test]
    fn exception_names() {
        assert_eq!(exception_name(3), "HardFault");
        assert_eq!(exception_name(0), "Thread");
        assert_eq!(exception_name(21), "IRQ5");
    }

    #[test]
    fn scb_words_fill_the_fault_status() {
        let mut snap = FaultSnapshot::default();
        assert!(!apply_scb(&mut snap, &[1, 2]));
        assert_eq!(snap.cfsr, None);
        assert!(apply_scb(&mut snap, &[1 << 15, 0x4000_0000, 0, 0x10, 0x20]));
        assert_eq!(snap.cfsr, Some(1 << 15));
        assert_eq!(snap.hfsr, Some(0x4000_0000));
        assert_eq!(snap.mmfar, None);
        assert_eq!(snap.bfar, Some(0x20));
    }

    #[test]
    fn fault_handlers_come_from_the_vector_table() {
        // fwtests: one Default_Handler (0x29d) for every fault and for SVC, PendSV, SysTick.
        let mut table = [0u32; 16];
        table[0] = 0x2040_0000;
        table[1] = 0x2a1;
        for n in [2, 3, 4, 5, 6, 11, 12, 14, 15] {
            table[n] = 0x29d;
        }
        let h = fault_handlers(&table);
        assert_eq!(h.entries, vec![(0x29c, vec![2, 3, 4, 5, 6])]);
        assert_eq!(h.vectors_at(0x29d), Some(&[2, 3, 4, 5, 6][..]));
        assert_eq!(h.vectors_at(0x2a0), None);
        assert_eq!(h.notes.len(), 1, "{:?}", h.notes);
        assert!(h.notes[0].contains("also serves SVCall, DebugMonitor, PendSV, SysTick"));

        // Distinct handlers, one vector empty, one without its Thumb bit, one at reset.
        let table = [0x2001_0000, 0x101, 0x101, 0x201, 0, 0x300, 0x401, 0];
        let h = fault_handlers(&table);
        // The empty and the even vector are dead ends, watched where the core lands.
        assert_eq!(
            h.entries,
            vec![
                (0x100, vec![2]),
                (0x200, vec![3]),
                (0x400, vec![6]),
                (0, vec![4]),
                (0x300, vec![5])
            ]
        );
        assert_eq!(h.dead_ends, vec![4, 5]);
        let notes = h.notes.join("\n");
        assert!(
            notes.contains("NMI vector points at the reset handler"),
            "{notes}"
        );
        assert!(
            notes.contains("no MemManage handler (the entry is 0)"),
            "{notes}"
        );
        assert!(
            notes.contains("BusFault vector 0x00000300 has no Thumb bit"),
            "{notes}"
        );
        assert!(!notes.contains("SecureFault"), "{notes}");

        // A handler in peripheral space: the core cannot fetch there.
        let h = fault_handlers(&[0x2001_0000, 0x101, 0x101, 0x4000_0001, 0x101, 0x101, 0x101]);
        assert_eq!(
            h.entries,
            vec![(0x100, vec![2, 4, 5, 6]), (0x4000_0000, vec![3])]
        );
        assert_eq!(h.dead_ends, vec![3]);
        assert!(
            h.notes
                .iter()
                .any(|n| n
                    .contains("the HardFault vector 0x40000001 points outside executable memory")),
            "{:?}",
            h.notes
        );

        // No fault handlers at all: nothing to stop at, and every vector says why.
        let h = fault_handlers(&[0x2001_0000, 0x101, 0, 0, 0, 0, 0, 0]);
        assert_eq!(h.entries, vec![(0, vec![2, 3, 4, 5, 6])]);
        assert_eq!(h.dead_ends, vec![2, 3, 4, 5, 6]);
        assert_eq!(h.notes.len(), 1, "{:?}", h.notes);
        assert!(h.notes[0].starts_with(
            "the vector table has no NMI, HardFault, MemManage, BusFault, UsageFault"
        ));
        assert!(fault_handlers(&[0x2001_0000]).notes[0].contains("only up to entry 1"));
    }

    #[test]
    fn the_memory_map_says_where_code_runs_and_tables_change() {
        for addr in [0, 0x29c, 0x1fff_fffe, 0x2000_0100, 0x6000_0000, 0x9fff_fffe] {
            assert!(executable(addr), "{addr:08x}");
        }
        for addr in [
            0x4000_4000,
            0x5fff_fffe,
            0xa000_0000,
            0xe000_ed08,
            0xffff_fffe,
        ] {
            assert!(!executable(addr), "{addr:08x}");
        }
        // The image's linked table in flash (Code region) stays; RAM tables can change.
        assert!(!writable_table(0, false));
        assert!(!writable_table(0x0001_0000, false));
        assert!(writable_table(0, true));
        assert!(writable_table(0x0001_0000, true));
        for code_ram in [false, true] {
            assert!(writable_table(0x2000_0100, code_ram));
            assert!(writable_table(0x6000_0000, code_ram));
            assert!(!writable_table(0xe000_0000, code_ram));
        }
        // NMI..SecureFault: entries 2-7, bytes 8-31.
        assert_eq!(watched_words(), (8, 24));
    }

    #[test]
    fn spinning_code_is_recognised() {
        let le =
            |halves: [u16; 3]| -> Vec<u8> { halves.iter().flat_map(|h| h.to_le_bytes()).collect() };
        assert!(spins_at(&le([0, 0xE7FE, 0])));
        assert!(spins_at(&le([0, 0xF7FF, 0xBFFE])));
        assert!(spins_at(&le([0, 0xBF30, 0xE7FD])));
        assert!(spins_at(&le([0xBF30, 0xE7FD, 0])));
        assert!(!spins_at(&le([0, 0xB508, 0x4B02])));
        assert!(!spins_at(&[]));
    }

    fn entry(
        lr: u32,
        frame_sp: Result<u32, String>,
        frame: Result<[u32; 8], String>,
    ) -> EntryReading {
        let mut regs = CoreRegs::default();
        regs.r[13] = Some(0x2000_ffe0);
        regs.r[14] = Some(lr);
        regs.r[15] = Some(0x29c);
        regs.xpsr = Some(0x0100_0003);
        EntryReading {
            regs,
            frame_sp,
            frame,
            scb: vec![0x0002_0000, 0x4000_0000, 0, 0, 0],
            raw: "-- registers --\n".into(),
            dead_end: None,
        }
    }

    #[test]
    fn entry_frame_on_the_process_stack_with_a_null_call() {
        // A task called a null pointer: PC 0, xPSR without the Thumb bit, LR the caller.
        let words = [1, 2, 3, 4, 12, 0x1a9, 0, 0x2000_0000];
        let snap = snapshot_at_entry(&entry(0xFFFF_FFFD, Ok(0x2000_0400), Ok(words)));
        assert_eq!(snap.pc, Some(0));
        assert_eq!(snap.lr, Some(0x1a9));
        assert_eq!(snap.xpsr, Some(0x2000_0000));
        assert_eq!(snap.sp, Some(0x2000_0420));
        assert_eq!(snap.exc_return, Some(0xFFFF_FFFD));
        assert_eq!(snap.cfsr, Some(0x0002_0000));
        assert_eq!(snap.exception, Some(3));
        assert!(snap.notes.is_empty(), "{:?}", snap.notes);
        assert!(snap.raw.contains("frame at PSP=0x20000400"), "{}", snap.raw);
        assert!(fault_line(&snap).contains("frame on the PSP"));
        assert!(!snap.lockup);
    }

    #[test]
    fn entry_at_a_dead_end_keeps_the_frame_and_says_no_handler_ran() {
        // The HardFault vector is 0: the core was stopped at 0 with the frame stacked.
        let words = [1, 2, 3, 4, 12, 0x1a9, 0, 0x2000_0000];
        let mut reading = entry(0xFFFF_FFFD, Ok(0x2000_0400), Ok(words));
        reading.regs.r[15] = Some(0);
        let table_says = "the vector table has no HardFault handler (the entry is 0)".to_string();
        reading.dead_end = Some(vec![table_says.clone()]);
        let snap = snapshot_at_entry(&reading);
        assert_eq!((snap.pc, snap.lr), (Some(0), Some(0x1a9)));
        assert!(snap.lockup);
        assert!(
            snap.notes[0].starts_with(
                "no fault handler ran: the core was stopped at 0x00000000, where the HardFault \
                 vector sends it"
            ),
            "{:?}",
            snap.notes
        );
        assert_eq!(snap.notes[1], table_says);
        assert!(snap.raw.contains(&table_says), "{}", snap.raw);
    }

    #[test]
    fn entry_frame_that_cannot_be_read_is_said_not_guessed() {
        let snap = snapshot_at_entry(&entry(
            0xFFFF_FFFD,
            Err("the PSP could not be read: E01".into()),
            Err("the PSP could not be read: E01".into()),
        ));
        assert_eq!((snap.pc, snap.lr), (None, None));
        assert!(
            snap.notes[0].contains("on the PSP but it could not be read"),
            "{:?}",
            snap.notes
        );

        let snap = snapshot_at_entry(&entry(0xFFFF_FFF9, Ok(0x2001_0000), Err("E14".into())));
        assert_eq!(snap.pc, None);
        assert_eq!(snap.sp, Some(0x2001_0000));
        assert!(snap.notes[0].contains("MSP=0x20010000 could not be read (E14)"));

        // A stacking fault: the words at SP are no frame, whatever they read.
        let mut reading = entry(0xFFFF_FFFD, Ok(0x2000_0ff0), Ok([0; 8]));
        reading.scb = vec![0x0000_0091, 0x4000_0000, 0, 0x2000_0fec, 0];
        let snap = snapshot_at_entry(&reading);
        assert_eq!(snap.pc, None);
        assert!(
            snap.notes[0].contains("failed to stack"),
            "{:?}",
            snap.notes
        );
        assert!(snap.notes[0].contains("guard region"), "{:?}", snap.notes);
        assert_eq!(snap.mmfar, Some(0x2000_0fec));

        // No EXC_RETURN in LR: nothing to locate the frame with.
        let snap = snapshot_at_entry(&entry(0x1a9, Ok(0), Ok([0; 8])));
        assert_eq!(snap.pc, None);
        assert!(snap.notes[0].contains("rather than an EXC_RETURN"));
    }
}
