//! Cortex-M fault decoding: what the fault status registers say, which exception was taken, and a
//! [`CrashReport`] a person can act on.
//!
//! Pure: it reads a [`FaultSnapshot`] the DUT backend captured and, when the image's symbols are
//! at hand, asks the [`Symbolizer`] where PC and LR point. It must not read registers, files or
//! consoles itself, and it never guesses a value the backend could not read.
//!
//! Bit positions are those of the ARMv7-M Architecture Reference Manual (B3.2.15 CFSR, B3.2.16
//! HFSR); STKOF is the ARMv8-M addition.

use crate::capture::FaultSnapshot;

use super::symbols::Symbolizer;
use super::{CrashReport, Location};

/// CFSR bits, MemManage (bits 0-7), BusFault (8-15) and UsageFault (16-31) parts in that order.
const CFSR_BITS: [(u32, &str); 20] = [
    (0, "IACCVIOL"),
    (1, "DACCVIOL"),
    (3, "MUNSTKERR"),
    (4, "MSTKERR"),
    (5, "MLSPERR"),
    (7, "MMARVALID"),
    (8, "IBUSERR"),
    (9, "PRECISERR"),
    (10, "IMPRECISERR"),
    (11, "UNSTKERR"),
    (12, "STKERR"),
    (13, "LSPERR"),
    (15, "BFARVALID"),
    (16, "UNDEFINSTR"),
    (17, "INVSTATE"),
    (18, "INVPC"),
    (19, "NOCP"),
    (20, "STKOF"),
    (24, "UNALIGNED"),
    (25, "DIVBYZERO"),
];

const HFSR_BITS: [(u32, &str); 3] = [(1, "VECTTBL"), (30, "FORCED"), (31, "DEBUGEVT")];

const MMARVALID: u32 = 1 << 7;
const BFARVALID: u32 = 1 << 15;

/// Stacked LR values from here up are EXC_RETURN codes, not code addresses.
const EXC_RETURN_MIN: u32 = 0xF000_0000;

fn named_bits(value: u32, table: &[(u32, &'static str)]) -> Vec<&'static str> {
    table
        .iter()
        .filter(|(bit, _)| value & (1 << bit) != 0)
        .map(|(_, name)| *name)
        .collect()
}

/// The names of the CFSR bits set in `cfsr`, MemManage then BusFault then UsageFault.
pub fn cfsr_bits(cfsr: u32) -> Vec<&'static str> {
    named_bits(cfsr, &CFSR_BITS)
}

/// The names of the HFSR bits set in `hfsr`.
pub fn hfsr_bits(hfsr: u32) -> Vec<&'static str> {
    named_bits(hfsr, &HFSR_BITS)
}

/// The exception with number `n` (xPSR's low 9 bits); None in thread mode (0).
pub fn exception_name(n: u32) -> Option<String> {
    let name = match n {
        0 => return None,
        1 => "Reset",
        2 => "NMI",
        3 => "HardFault",
        4 => "MemManage",
        5 => "BusFault",
        6 => "UsageFault",
        7 => "SecureFault",
        11 => "SVCall",
        12 => "DebugMonitor",
        14 => "PendSV",
        15 => "SysTick",
        8..=10 | 13 => return Some(format!("reserved exception {n}")),
        irq => return Some(format!("IRQ{}", irq - 16)),
    };
    Some(name.to_string())
}

/// A 32-bit value the way a debugger prints it: `0x000001a4`.
pub fn hex(value: u32) -> String {
    format!("{value:#010x}")
}

/// The data address that faulted, when the CFSR says MMFAR or BFAR holds it.
pub fn fault_address(snap: &FaultSnapshot) -> Option<u32> {
    let cfsr = snap.cfsr?;
    if cfsr & MMARVALID != 0 {
        if let Some(address) = snap.mmfar {
            return Some(address);
        }
    }
    if cfsr & BFARVALID != 0 {
        return snap.bfar;
    }
    None
}

/// Whether a stacked LR is a return address into code (not an EXC_RETURN value). Zero never
/// is: a call leaves the address after it, so an LR of 0 was written over.
fn is_code_address(lr: u32) -> bool {
    lr != 0 && lr < EXC_RETURN_MIN
}

/// A stacked frame whose PC and LR are both 0 (and xPSR 0 or unread) holds no call or return
/// address at all: the stack it was read from was overwritten (an overflow, a smashed stack),
/// or the frame was never pushed where it was looked for.
fn frame_zeroed(snap: &FaultSnapshot) -> bool {
    snap.pc == Some(0) && snap.lr == Some(0) && snap.xpsr.is_none_or(|x| x == 0)
}

/// The functions at the crash site, innermost first: PC's (with inlined frames), then LR's.
///
/// This is what [`crate::results::ParseContext::site_functions`] wants: a test function on that
/// list is the test that was running.
pub fn site_functions(snap: &FaultSnapshot, symbols: &Symbolizer) -> Vec<String> {
    let mut names = Vec::new();
    if let Some(pc) = snap.pc {
        names.extend(symbols.functions_at(u64::from(pc)));
    }
    if let Some(lr) = snap.lr.filter(|lr| is_code_address(*lr)) {
        names.extend(symbols.functions_at_call_site(u64::from(lr)));
    }
    let mut seen = std::collections::HashSet::new();
    names.retain(|name| seen.insert(name.clone()));
    names
}

const XPSR_THUMB: u32 = 1 << 24;
const CFSR_IMPRECISERR: u32 = 1 << 10;
const HFSR_FORCED: u32 = 1 << 30;

/// A call through a function pointer that could not work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BadCall {
    /// To address 0.
    Null,
    /// To an address with bit 0 clear: the core left Thumb state (INVSTATE).
    NotThumb,
}

impl BadCall {
    fn describe(self, pc: u32) -> String {
        match self {
            BadCall::Null => "called a null function pointer".to_string(),
            BadCall::NotThumb => format!(
                "called a function pointer to {} without the Thumb bit (bit 0 clear: an even \
                 address, data, or a corrupted pointer)",
                hex(pc)
            ),
        }
    }
}

/// A stacked PC of 0, or a stacked xPSR without the Thumb bit, is a call through a bad function
/// pointer: a `blx`/`bx` to 0 or to an even address. The stacked LR is the caller's return
/// address.
fn bad_call(snap: &FaultSnapshot) -> Option<BadCall> {
    let pc = snap.pc?;
    // A stacked LR is the caller's return address; an EXC_RETURN there (QEMU's lockup dump, the
    // live registers) says these are no stacked frame's values.
    if !snap.lr.is_some_and(is_code_address) {
        return None;
    }
    if pc == 0 {
        return Some(BadCall::Null);
    }
    snap.xpsr
        .is_some_and(|x| x & XPSR_THUMB == 0)
        .then_some(BadCall::NotThumb)
}

/// What an EXC_RETURN value in LR says: `EXC_RETURN: the fault interrupted thread mode on the
/// main stack`.
fn exc_return_meaning(lr: u32) -> String {
    let mode = if lr & 0x8 != 0 {
        "thread mode"
    } else {
        "an exception handler"
    };
    let stack = if lr & 0x4 != 0 { "process" } else { "main" };
    format!("EXC_RETURN: the fault interrupted {mode} on the {stack} stack")
}

/// Which configurable fault a FORCED HardFault was escalated from, by the CFSR part that is set.
fn escalated_from(cfsr_names: &[&str]) -> Option<&'static str> {
    let part = |names: &[&str]| cfsr_names.iter().any(|n| names.contains(n));
    if part(&[
        "UNDEFINSTR",
        "INVSTATE",
        "INVPC",
        "NOCP",
        "STKOF",
        "UNALIGNED",
        "DIVBYZERO",
    ]) {
        Some("UsageFault")
    } else if part(&[
        "IBUSERR",
        "PRECISERR",
        "IMPRECISERR",
        "UNSTKERR",
        "STKERR",
        "LSPERR",
    ]) {
        Some("BusFault")
    } else if part(&["IACCVIOL", "DACCVIOL", "MUNSTKERR", "MSTKERR", "MLSPERR"]) {
        Some("MemManage")
    } else {
        None
    }
}

/// What the summary says beyond the fault and its site: escalation, the context the fault
/// interrupted (an RTOS task, an interrupt handler), an imprecise PC, what could not be read,
/// what could not be named.
fn context_clauses(
    snap: &FaultSnapshot,
    cfsr_names: &[&str],
    hfsr_names: &[&str],
    symbols: Option<&Symbolizer>,
    pc_location: Option<&Location>,
) -> Vec<String> {
    let mut out = Vec::new();
    if hfsr_names.contains(&"FORCED") {
        match escalated_from(cfsr_names) {
            Some(from) => out.push(format!("escalated to HardFault from a {from}")),
            None if snap.hfsr.is_some_and(|h| h & HFSR_FORCED != 0) => {
                out.push("escalated to HardFault; CFSR names no sub-fault".to_string())
            }
            None => {}
        }
    }
    if let Some(exc) = snap.exc_return {
        let process_stack = exc & 0x4 != 0;
        let thread = exc & 0x8 != 0;
        if !thread {
            let interrupted = snap.xpsr.map(|x| x & 0x1ff).filter(|&n| n != 0);
            let isr = pc_location
                .and_then(|l| l.function.clone())
                .filter(|_| bad_call(snap).is_none());
            out.push(match (interrupted.and_then(exception_name), isr) {
                (Some(name), Some(f)) => {
                    format!("the fault happened in {name}'s handler context, in {f}")
                }
                (Some(name), None) => {
                    format!("the fault happened in {name}'s handler context")
                }
                (None, _) => "the fault happened inside an exception handler".to_string(),
            });
        } else if process_stack {
            out.push("in thread mode on the process stack (an RTOS task)".to_string());
        }
    }
    if snap.cfsr.is_some_and(|c| c & CFSR_IMPRECISERR != 0) {
        out.push(
            "imprecise bus fault: the write was buffered, so PC is only near the faulting store \
             (look at the stores just before it)"
                .to_string(),
        );
    }
    out.extend(snap.vector_stores.iter().map(|store| {
        let by = symbols
            .map(|s| s.locate(u64::from(store.pc)))
            .and_then(|l| describe(&l))
            .map(|code| format!(" in {code}"))
            .unwrap_or_default();
        let name = exception_name(store.vector).unwrap_or_else(|| "thread".to_string());
        format!(
            "the firmware overwrote the {name} vector of its vector table at {} ({} -> {}) with \
             the store at {}{by}",
            hex(store.table),
            hex(store.old),
            hex(store.new),
            hex(store.pc)
        )
    }));
    if frame_zeroed(snap) {
        out.push(
            "the stacked frame reads PC, LR and xPSR as 0: it looks overwritten (a stack \
             overflow or a smashed stack), not a call through a null pointer, so the faulting \
             code cannot be named from it"
                .to_string(),
        );
    }
    out.extend(snap.notes.iter().cloned());
    match symbols {
        None => out.push(
            "no symbols were read for the image that ran: functions and lines cannot be named"
                .to_string(),
        ),
        Some(s) if !s.has_symbols() => out.push(format!(
            "{} has no symbols (stripped?): functions and lines cannot be named",
            s.path().display()
        )),
        Some(_) => {}
    }
    out
}

/// `sensor_poll (src/sensor.c:42)`, or as much of it as is known.
fn describe(location: &Location) -> Option<String> {
    let function = location.function.as_deref()?;
    Some(match (&location.file, location.line) {
        (Some(file), Some(line)) => format!("{function} ({file}:{line})"),
        (Some(file), None) => format!("{function} ({file})"),
        _ => function.to_string(),
    })
}

/// Decodes and symbolises a crash; every field of the report is filled in from what is known.
pub fn crash_report(snap: &FaultSnapshot, symbols: Option<&Symbolizer>) -> CrashReport {
    let hfsr_names = snap.hfsr.map(hfsr_bits).unwrap_or_default();
    let cfsr_names = snap.cfsr.map(cfsr_bits).unwrap_or_default();
    let fault_bits: Vec<String> = hfsr_names
        .iter()
        .chain(&cfsr_names)
        .map(|s| s.to_string())
        .collect();
    let exception = snap.exception.and_then(exception_name);
    let fault_address = fault_address(snap);

    let pc_location = match (snap.pc, symbols) {
        (Some(pc), Some(symbols)) => Some(symbols.locate(u64::from(pc))),
        _ => None,
    };
    let caller = snap.lr.map(|lr| match symbols {
        Some(symbols) if is_code_address(lr) => symbols.locate_call_site(u64::from(lr)),
        _ => Location {
            address: hex(lr),
            function: None,
            file: None,
            line: None,
        },
    });

    // A bad call whose stacked LR follows a `bl` to a known function was made inside that
    // function by a tail call (`bx`): the caller's line only called the function.
    let tail_callee = match (bad_call(snap), snap.lr, symbols) {
        (Some(_), Some(lr), Some(symbols)) if is_code_address(lr) => symbols
            .call_target(u64::from(lr))
            .map(|target| symbols.locate(target))
            .filter(|l| l.function.is_some()),
        _ => None,
    };
    // LR inside the faulting function itself, not after a call there, is a leftover of an
    // earlier call the function made, not a return address into a caller.
    let lr_leftover = match (&pc_location, &caller, snap.lr, symbols) {
        (Some(pc), Some(caller), Some(lr), Some(symbols)) => {
            pc.function.is_some()
                && pc.function == caller.function
                && symbols.follows_call(u64::from(lr)) == Some(false)
        }
        _ => false,
    };
    // LR inside a function the faulting code itself calls (or inside the faulting function,
    // after a call to some other function): a call the faulting code made has returned (`pop
    // {pc}` leaves LR as it was) and left a return address of its own behind; a task function
    // nobody returns to faults like this after any call. It names where that call made a call,
    // not who called the faulting code: no caller is known. (A tail call keeps LR in the caller
    // of the function that jumped, which the faulting code does not call.)
    let lr_returned = match (snap.pc, snap.lr, &pc_location, symbols) {
        (Some(pc), Some(lr), Some(at), Some(symbols))
            if at.function.is_some() && bad_call(snap).is_none() && is_code_address(lr) =>
        {
            let (pc, lr) = (u64::from(pc), u64::from(lr));
            let into_callee = !symbols.same_function(pc, lr) && symbols.calls(pc, lr);
            let after_other_call = symbols.same_function(pc, lr)
                && symbols
                    .call_target(lr)
                    .is_some_and(|target| !symbols.same_function(target, pc));
            into_callee || after_other_call
        }
        _ => false,
    };
    let caller = caller.filter(|_| !lr_returned);
    let known = Known {
        symbols: symbols.is_some(),
        lr_returned,
        lr_leftover,
        tail_callee: tail_callee.as_ref(),
        pc_not_code: match (snap.pc, symbols) {
            (Some(pc), Some(symbols)) => symbols.non_code_section(u64::from(pc)),
            _ => None,
        },
    };
    let mut summary = summarise(
        snap,
        exception.as_deref(),
        (&hfsr_names, &cfsr_names),
        pc_location.as_ref(),
        caller.as_ref(),
        known,
        fault_address,
    );
    for clause in context_clauses(
        snap,
        &cfsr_names,
        &hfsr_names,
        symbols,
        pc_location.as_ref(),
    ) {
        summary.push_str("; ");
        summary.push_str(&clause);
    }

    // A call through a bad pointer faults at an address in no function (or, for a null
    // pointer, wherever address 0 happens to be): the caller is the code at fault, so it is what
    // `function`, `file` and `line` name.
    let site = if bad_call(snap).is_some() {
        tail_callee.as_ref().or(caller.as_ref())
    } else {
        pc_location
            .as_ref()
            .filter(|l| l.function.is_some())
            .or(caller.as_ref())
    };
    CrashReport {
        pc: snap.pc.map(hex),
        lr: snap.lr.map(hex),
        cfsr: snap.cfsr.map(hex),
        hfsr: snap.hfsr.map(hex),
        function: site.and_then(|l| l.function.clone()),
        file: site.and_then(|l| l.file.clone()),
        line: site.and_then(|l| l.line),
        caller,
        fault_bits,
        fault_address: fault_address.map(hex),
        exception,
        lockup: snap.lockup,
        summary,
    }
}

/// What the image's symbols say besides PC's and LR's locations.
#[derive(Debug, Clone, Copy, Default)]
struct Known<'a> {
    /// Symbols were read for the image: a PC they do not name is in no function.
    symbols: bool,
    /// The non-code section PC is in (`.isr_vector`), when it is in one.
    pc_not_code: Option<&'a str>,
    /// For a bad call: the function the instruction before LR called, which made the bad call.
    tail_callee: Option<&'a Location>,
    /// LR points inside the faulting function, not after a call: no caller is known.
    lr_leftover: bool,
    /// LR was left by a call the faulting code made, which has returned: no caller is known.
    lr_returned: bool,
}

/// One line: `HardFault (FORCED; IACCVIOL) at 0x00000000 called from sensor_poll (src/sensor.c:42)`.
fn summarise(
    snap: &FaultSnapshot,
    exception: Option<&str>,
    (hfsr_names, cfsr_names): (&[&str], &[&str]),
    pc_location: Option<&Location>,
    caller: Option<&Location>,
    known: Known<'_>,
    fault_address: Option<u32>,
) -> String {
    let mut text = String::new();
    if snap.lockup {
        text.push_str("Lockup (fault while handling a fault): ");
    }
    text.push_str(exception.unwrap_or("Fault"));

    // The *VALID bits only say an address register is meaningful; the address itself is shown.
    let groups: Vec<String> = [hfsr_names, cfsr_names]
        .iter()
        .map(|names| {
            names
                .iter()
                .filter(|n| !n.ends_with("VALID"))
                .copied()
                .collect::<Vec<_>>()
                .join(", ")
        })
        .filter(|g| !g.is_empty())
        .collect();
    if !groups.is_empty() {
        text.push_str(&format!(" ({})", groups.join("; ")));
    }

    let pc_described = pc_location.and_then(describe);
    let caller_described = caller.and_then(describe);
    if let (Some(pc), Some(call)) = (snap.pc, bad_call(snap)) {
        let who = match (&caller_described, snap.lr) {
            (Some(from), _) => from.clone(),
            (None, Some(lr)) => format!("the code at LR {}", hex(lr)),
            (None, None) => "unknown code".to_string(),
        };
        match known
            .tail_callee
            .and_then(|callee| Some((callee, describe(callee)?)))
        {
            Some((callee, described)) => {
                let name = callee.function.as_deref().unwrap_or_default();
                text.push_str(&format!(
                    " at {}: {described} {}, probably by a tail call (a jump that leaves no \
                     return address); LR is the return into {who}, after its call to {name}",
                    hex(pc),
                    call.describe(pc)
                ));
            }
            None => text.push_str(&format!(" at {}: {who} {}", hex(pc), call.describe(pc))),
        }
        if let Some(address) = fault_address {
            text.push_str(&format!("; data address {}", hex(address)));
        }
        return text;
    }
    match snap.pc {
        Some(pc) => {
            text.push_str(&format!(" at {}", hex(pc)));
            if let Some(at) = &pc_described {
                text.push_str(&format!(" in {at}"));
            } else if let Some(section) = known.pc_not_code {
                text.push_str(&format!(" (in {section}, not code)"));
            }
        }
        None => text.push_str(" at an unknown PC"),
    }
    match (&caller_described, snap.lr) {
        (_, Some(lr)) if known.lr_returned => text.push_str(&format!(
            " (LR {} was left by a call this code made, which has returned: a leftover, not \
             its caller)",
            hex(lr)
        )),
        (Some(_), Some(lr)) if known.lr_leftover => text.push_str(&format!(
            " (LR {} points inside the same function, not after a call: a leftover, not its \
             caller)",
            hex(lr)
        )),
        (Some(from), _) => {
            let sep = if pc_described.is_some() { "," } else { "" };
            text.push_str(&format!("{sep} called from {from}"));
        }
        (None, Some(lr)) if lr >= EXC_RETURN_MIN => {
            text.push_str(&format!(" (LR {}: {})", hex(lr), exc_return_meaning(lr)));
        }
        (None, Some(lr)) => text.push_str(&format!(" (LR {})", hex(lr))),
        (None, None) => {}
    }
    if let Some(address) = fault_address {
        text.push_str(&format!("; data address {}", hex(address)));
    }
    if known.symbols && snap.pc.is_some() && pc_described.is_none() {
        text.push_str(if caller_described.is_some() {
            "; PC is in no function (a call through a bad pointer?): the caller is where to look"
        } else {
            "; PC is in no function and the caller is unknown"
        });
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_cfsr_bit_has_its_name() {
        let expected = [
            (0x0000_0001, "IACCVIOL"),
            (0x0000_0002, "DACCVIOL"),
            (0x0000_0008, "MUNSTKERR"),
            (0x0000_0010, "MSTKERR"),
            (0x0000_0020, "MLSPERR"),
            (0x0000_0080, "MMARVALID"),
            (0x0000_0100, "IBUSERR"),
            (0x0000_0200, "PRECISERR"),
            (0x0000_0400, "IMPRECISERR"),
            (0x0000_0800, "UNSTKERR"),
            (0x0000_1000, "STKERR"),
            (0x0000_2000, "LSPERR"),
            (0x0000_8000, "BFARVALID"),
            (0x0001_0000, "UNDEFINSTR"),
            (0x0002_0000, "INVSTATE"),
            (0x0004_0000, "INVPC"),
            (0x0008_0000, "NOCP"),
            (0x0010_0000, "STKOF"),
            (0x0100_0000, "UNALIGNED"),
            (0x0200_0000, "DIVBYZERO"),
        ];
        for (value, name) in expected {
            assert_eq!(cfsr_bits(value), vec![name], "{value:#x}");
        }
        assert_eq!(cfsr_bits(0), Vec::<&str>::new());
        // Reserved bits have no name.
        assert_eq!(cfsr_bits(0x0000_4044 | 0xfc00_0000), Vec::<&str>::new());
        assert_eq!(
            cfsr_bits(0x0000_8201 | 0x0200_0000),
            vec!["IACCVIOL", "PRECISERR", "BFARVALID", "DIVBYZERO"]
        );
    }

    #[test]
    fn each_hfsr_bit_has_its_name() {
        assert_eq!(hfsr_bits(0x0000_0002), vec!["VECTTBL"]);
        assert_eq!(hfsr_bits(0x4000_0000), vec!["FORCED"]);
        assert_eq!(hfsr_bits(0x8000_0000), vec!["DEBUGEVT"]);
        assert_eq!(hfsr_bits(0), Vec::<&str>::new());
        assert_eq!(
            hfsr_bits(0xc000_0002),
            vec!["VECTTBL", "FORCED", "DEBUGEVT"]
        );
    }

    #[test]
    fn exception_names() {
        let names: Vec<_> = (0..=16).map(exception_name).collect();
        assert_eq!(names[0], None);
        assert_eq!(names[1].as_deref(), Some("Reset"));
        assert_eq!(names[2].as_deref(), Some("NMI"));
        assert_eq!(names[3].as_deref(), Some("HardFault"));
        assert_eq!(names[4].as_deref(), Some("MemManage"));
        assert_eq!(names[5].as_deref(), Some("BusFault"));
        assert_eq!(names[6].as_deref(), Some("UsageFault"));
        assert_eq!(names[7].as_deref(), Some("SecureFault"));
        assert_eq!(names[8].as_deref(), Some("reserved exception 8"));
        assert_eq!(names[11].as_deref(), Some("SVCall"));
        assert_eq!(names[12].as_deref(), Some("DebugMonitor"));
        assert_eq!(names[14].as_deref(), Some("PendSV"));
        assert_eq!(names[15].as_deref(), Some("SysTick"));
        assert_eq!(names[16].as_deref(), Some("IRQ0"));
        assert_eq!(exception_name(16 + 42).as_deref(), Some("IRQ42"));
    }

    #[test]
    fn a_store_that_overwrote_a_fault_vector_is_in_the_summary() {
        let snap = FaultSnapshot {
            exception: Some(3),
            pc: Some(0),
            lockup: true,
            vector_stores: vec![crate::capture::VectorStore {
                pc: 0xa16,
                table: 0,
                vector: 3,
                old: 0x41,
                new: 0,
            }],
            ..FaultSnapshot::default()
        };
        let report = crash_report(&snap, None);
        assert!(
            report.summary.contains(
                "the firmware overwrote the HardFault vector of its vector table at 0x00000000 \
                 (0x00000041 -> 0x00000000) with the store at 0x00000a16"
            ),
            "{}",
            report.summary
        );
    }

    #[test]
    fn hex_is_zero_padded_to_32_bits() {
        assert_eq!(hex(0x1a4), "0x000001a4");
        assert_eq!(hex(0), "0x00000000");
        assert_eq!(hex(0xffff_fff9), "0xfffffff9");
    }

    #[test]
    fn fault_addresses_only_when_valid() {
        let mut snap = FaultSnapshot {
            cfsr: Some(0x0000_0200),
            bfar: Some(0x4001_0000),
            mmfar: Some(0x2000_0000),
            ..FaultSnapshot::default()
        };
        assert_eq!(fault_address(&snap), None);
        snap.cfsr = Some(0x0000_8200);
        assert_eq!(fault_address(&snap), Some(0x4001_0000));
        snap.cfsr = Some(0x0000_0082);
        assert_eq!(fault_address(&snap), Some(0x2000_0000));
        snap.cfsr = None;
        assert_eq!(fault_address(&snap), None);
    }

    fn forced_iaccviol() -> FaultSnapshot {
        FaultSnapshot {
            exception: Some(3),
            pc: Some(0),
            lr: Some(0x0000_01a5),
            sp: Some(0x2000_0fd8),
            xpsr: Some(0x4000_0000),
            cfsr: Some(0x0000_0001),
            hfsr: Some(0x4000_0000),
            mmfar: Some(0xe000_edf8),
            bfar: Some(0xe000_edf8),
            ..FaultSnapshot::default()
        }
    }

    #[test]
    fn report_without_symbols() {
        let report = crash_report(&forced_iaccviol(), None);
        assert_eq!(report.pc.as_deref(), Some("0x00000000"));
        assert_eq!(report.lr.as_deref(), Some("0x000001a5"));
        assert_eq!(report.cfsr.as_deref(), Some("0x00000001"));
        assert_eq!(report.hfsr.as_deref(), Some("0x40000000"));
        assert_eq!(report.exception.as_deref(), Some("HardFault"));
        assert_eq!(report.fault_bits, vec!["FORCED", "IACCVIOL"]);
        // MMARVALID is clear: MMFAR holds junk and must not be reported.
        assert_eq!(report.fault_address, None);
        assert_eq!(report.function, None);
        assert_eq!(
            report.caller,
            Some(Location {
                address: "0x000001a5".to_string(),
                function: None,
                file: None,
                line: None,
            })
        );
        assert!(!report.lockup);
        assert_eq!(
            report.summary,
            "HardFault (FORCED; IACCVIOL) at 0x00000000: the code at LR 0x000001a5 called a null \
             function pointer; escalated to HardFault from a MemManage; no symbols were \
             read for the image that ran: functions and lines cannot be named"
        );
    }

    #[test]
    fn precise_bus_fault_names_the_data_address() {
        let snap = FaultSnapshot {
            exception: Some(5),
            pc: Some(0x0000_0210),
            lr: Some(0x0000_0301),
            cfsr: Some(0x0000_8200),
            bfar: Some(0x4001_0000),
            ..FaultSnapshot::default()
        };
        let report = crash_report(&snap, None);
        assert_eq!(report.fault_address.as_deref(), Some("0x40010000"));
        assert_eq!(report.fault_bits, vec!["PRECISERR", "BFARVALID"]);
        assert_eq!(
            report.summary,
            "BusFault (PRECISERR) at 0x00000210 (LR 0x00000301); data address 0x40010000; no \
             symbols were read for the image that ran: functions and lines cannot be named"
        );
    }

    #[test]
    fn lockup_and_exc_return_lr() {
        let snap = FaultSnapshot {
            pc: Some(0x0000_0120),
            lr: Some(0xffff_fff9),
            lockup: true,
            ..FaultSnapshot::default()
        };
        let report = crash_report(&snap, None);
        assert!(report.lockup);
        assert_eq!(report.exception, None);
        assert_eq!(report.fault_bits, Vec::<String>::new());
        assert_eq!(
            report.summary,
            "Lockup (fault while handling a fault): Fault at 0x00000120 (LR 0xfffffff9: \
             EXC_RETURN: the fault interrupted thread mode on the main stack); no symbols were \
             read for the image that ran: functions and lines cannot be named"
        );
    }

    #[test]
    fn a_frame_of_zeros_is_an_overwritten_stack_not_a_null_call() {
        let snap = FaultSnapshot {
            exception: Some(3),
            pc: Some(0),
            lr: Some(0),
            xpsr: Some(0),
            hfsr: Some(HFSR_FORCED),
            cfsr: Some(0x0002_0000),
            ..FaultSnapshot::default()
        };
        let report = crash_report(&snap, None);
        assert!(
            !report.summary.contains("null function pointer"),
            "{}",
            report.summary
        );
        assert!(
            report.summary.contains("looks overwritten"),
            "{}",
            report.summary
        );
        assert_eq!(report.function, None);
        // The same PC with a real return address in LR is the null call it looks like.
        let call = FaultSnapshot {
            lr: Some(0x1a5),
            ..snap
        };
        let report = crash_report(&call, None);
        assert!(
            report.summary.contains("called a null function pointer"),
            "{}",
            report.summary
        );
        assert!(
            !report.summary.contains("looks overwritten"),
            "{}",
            report.summary
        );
    }

    #[test]
    fn empty_snapshot_still_reports() {
        let report = crash_report(&FaultSnapshot::default(), None);
        assert_eq!(report.pc, None);
        assert_eq!(report.caller, None);
        assert_eq!(
            report.summary,
            "Fault at an unknown PC; no symbols were read for the image that ran: functions and \
             lines cannot be named"
        );
    }

    #[test]
    fn symbolised_summaries() {
        let caller = Location {
            address: hex(0x1a5),
            function: Some("sensor_poll".to_string()),
            file: Some("src/sensor.c".to_string()),
            line: Some(42),
        };
        let nowhere = Location {
            address: hex(0),
            function: None,
            file: None,
            line: None,
        };
        let snap = forced_iaccviol();
        let bits = (&["FORCED"][..], &["IACCVIOL"][..]);
        assert_eq!(
            summarise(
                &snap,
                Some("HardFault"),
                bits,
                Some(&nowhere),
                Some(&caller),
                Known {
                    symbols: true,
                    pc_not_code: None,
                    tail_callee: None,
                    lr_leftover: false,
                    lr_returned: false
                },
                None
            ),
            "HardFault (FORCED; IACCVIOL) at 0x00000000: sensor_poll (src/sensor.c:42) called a \
             null function pointer"
        );
        assert_eq!(
            summarise(
                &snap,
                Some("HardFault"),
                bits,
                Some(&nowhere),
                Some(&nowhere),
                Known {
                    symbols: true,
                    pc_not_code: None,
                    tail_callee: None,
                    lr_leftover: false,
                    lr_returned: false
                },
                None
            ),
            "HardFault (FORCED; IACCVIOL) at 0x00000000: the code at LR 0x000001a5 called a null \
             function pointer"
        );
        // An erased hook (0xFFFFFFFF: Thumb bit set) faults on the fetch: PC in no function.
        let erased = FaultSnapshot {
            pc: Some(0xffff_fffe),
            xpsr: Some(0x6100_0000),
            ..snap.clone()
        };
        assert_eq!(
            summarise(
                &erased,
                Some("HardFault"),
                bits,
                Some(&nowhere),
                Some(&caller),
                Known {
                    symbols: true,
                    pc_not_code: None,
                    tail_callee: None,
                    lr_leftover: false,
                    lr_returned: false
                },
                None
            ),
            "HardFault (FORCED; IACCVIOL) at 0xfffffffe called from sensor_poll \
             (src/sensor.c:42); PC is in no function (a call through a bad pointer?): the caller \
             is where to look"
        );
        // The instruction before LR is a `bl` to `sensor_calibrated`: it made the null call.
        let callee = Location {
            address: hex(0x92c),
            function: Some("sensor_calibrated".to_string()),
            file: Some("src/sensor.c".to_string()),
            line: Some(52),
        };
        let tail = summarise(
            &snap,
            Some("HardFault"),
            bits,
            Some(&nowhere),
            Some(&caller),
            Known {
                symbols: true,
                pc_not_code: None,
                tail_callee: Some(&callee),
                lr_leftover: false,
                lr_returned: false,
            },
            None,
        );
        assert_eq!(
            tail,
            "HardFault (FORCED; IACCVIOL) at 0x00000000: sensor_calibrated (src/sensor.c:52) \
             called a null function pointer, probably by a tail call (a jump that leaves no \
             return address); LR is the return into sensor_poll (src/sensor.c:42), after its \
             call to sensor_calibrated"
        );
        assert!(
            !tail.contains("sensor_poll (src/sensor.c:42) called"),
            "{tail}"
        );
        // A jump into the vector table: PC is in a data section, so no function is named there.
        let into_data = FaultSnapshot {
            pc: Some(0x20),
            xpsr: Some(0x6100_0000),
            ..snap.clone()
        };
        assert_eq!(
            summarise(
                &into_data,
                Some("HardFault"),
                (&["FORCED"], &["UNDEFINSTR"]),
                Some(&nowhere),
                Some(&caller),
                Known {
                    symbols: true,
                    pc_not_code: Some(".isr_vector"),
                    tail_callee: None,
                    lr_leftover: false,
                    lr_returned: false
                },
                None
            ),
            "HardFault (FORCED; UNDEFINSTR) at 0x00000020 (in .isr_vector, not code) called from \
             sensor_poll (src/sensor.c:42); PC is in no function (a call through a bad pointer?): \
             the caller is where to look"
        );
        let inside = Location {
            function: Some("sensor_read".to_string()),
            line: Some(17),
            ..caller.clone()
        };
        let snap = FaultSnapshot {
            pc: Some(0x1a4),
            xpsr: Some(0x0100_0000),
            ..snap
        };
        let leftover = summarise(
            &snap,
            Some("UsageFault"),
            (&[], &["DIVBYZERO"]),
            Some(&inside),
            Some(&inside),
            Known {
                symbols: true,
                lr_leftover: true,
                lr_returned: false,
                ..Known::default()
            },
            None,
        );
        assert_eq!(
            leftover,
            "UsageFault (DIVBYZERO) at 0x000001a4 in sensor_read (src/sensor.c:17) (LR \
             0x000001a5 points inside the same function, not after a call: a leftover, not its \
             caller)"
        );
        assert_eq!(
            summarise(
                &snap,
                Some("UsageFault"),
                (&[], &["DIVBYZERO"]),
                Some(&inside),
                Some(&caller),
                Known {
                    symbols: true,
                    pc_not_code: None,
                    tail_callee: None,
                    lr_leftover: false,
                    lr_returned: false
                },
                None
            ),
            "UsageFault (DIVBYZERO) at 0x000001a4 in sensor_read (src/sensor.c:17), called from \
             sensor_poll (src/sensor.c:42)"
        );
    }

    #[test]
    fn describe_locations() {
        let mut location = Location {
            address: hex(0x1a4),
            function: Some("sensor_poll".to_string()),
            file: Some("src/sensor.c".to_string()),
            line: Some(42),
        };
        assert_eq!(
            describe(&location).as_deref(),
            Some("sensor_poll (src/sensor.c:42)")
        );
        location.line = None;
        assert_eq!(
            describe(&location).as_deref(),
            Some("sensor_poll (src/sensor.c)")
        );
        location.file = None;
        assert_eq!(describe(&location).as_deref(), Some("sensor_poll"));
        location.function = None;
        assert_eq!(describe(&location), None);
    }

    #[test]
    fn task_isr_imprecise_and_escalation_are_said() {
        let task = FaultSnapshot {
            exception: Some(3),
            pc: Some(0),
            lr: Some(0x1a9),
            xpsr: Some(0x2000_0000),
            cfsr: Some(0x0002_0000),
            hfsr: Some(0x4000_0000),
            exc_return: Some(0xFFFF_FFFD),
            ..FaultSnapshot::default()
        };
        let r = crash_report(&task, None);
        assert!(
            r.summary.contains("called a null function pointer"),
            "{}",
            r.summary
        );
        assert!(
            r.summary
                .contains("escalated to HardFault from a UsageFault"),
            "{}",
            r.summary
        );
        assert!(r.summary.contains("an RTOS task"), "{}", r.summary);

        let isr = FaultSnapshot {
            exception: Some(5),
            pc: Some(0x300),
            lr: Some(0x2a1),
            xpsr: Some(0x0100_0015),
            cfsr: Some(0x0000_0400),
            exc_return: Some(0xFFFF_FFF1),
            ..FaultSnapshot::default()
        };
        let r = crash_report(&isr, None);
        assert!(
            r.summary.contains("in IRQ5's handler context"),
            "{}",
            r.summary
        );
        assert!(r.summary.contains("PC is only near"), "{}", r.summary);

        let unread = FaultSnapshot {
            exception: Some(4),
            notes: vec!["the exception frame at PSP=0x20000ff0 could not be read".into()],
            ..FaultSnapshot::default()
        };
        let r = crash_report(&unread, None);
        assert!(
            r.summary
                .starts_with("MemManage at an unknown PC; the exception frame"),
            "{}",
            r.summary
        );
    }
}
