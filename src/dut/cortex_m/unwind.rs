//! Unwinding a core stopped inside an exception handler to the code the handler interrupted. A
//! hung image sampled at the timeout is often stopped in a periodic interrupt (a timer, SysTick)
//! that happened to run at that moment; the hang is in the thread code under it. The handler's
//! exception frame is on the stack EXC_RETURN names (bit 2: the process stack, PSP, for thread
//! code on it, else the main stack, MSP); EXC_RETURN is in LR while the handler has not called
//! anything, else saved on the MSP by its prologue, right below the frame. A frame that interrupted
//! another handler (bit 3 clear) is unwound again, up to [`NESTING_MAX`] levels. Each frame found
//! is checked before it is believed: its xPSR has the Thumb bit, its PC is halfword-aligned and
//! its exception number agrees with what EXC_RETURN says it returns to.
//!
//! Pure: the reader hands in the registers and the words it read at MSP and PSP; nothing here
//! talks to a core.

use super::{exception_name, is_exc_return, CoreRegs};
use crate::capture::HandlerStop;

/// Nested handlers followed at most before giving up.
pub const NESTING_MAX: usize = 8;
/// Words to read at PSP: an FPU-extended frame (r0-r3, r12, LR, PC, xPSR, s0-s15, FPSCR, a
/// reserved word).
pub const PSP_WORDS: usize = 26;
/// Words to read at MSP for a core stopped in a handler: the handler's pushes and locals, then
/// its frame, for a few nested levels.
pub const MSP_WORDS: usize = 128;
/// How many words to try reading at a handler's SP, most first: [`MSP_WORDS`], then up to the
/// next 1 KB and 256-byte boundaries, since the main stack usually starts at the very end of RAM
/// and a read past it fails whole.
pub fn msp_reads(sp: u32) -> [usize; 3] {
    let to = |align: u64| {
        let sp = u64::from(sp);
        let end = (sp / align + 1) * align;
        usize::try_from((end - sp) / 4).unwrap_or(0).min(MSP_WORDS)
    };
    [MSP_WORDS, to(1024), to(256)]
}

/// How far above a handler's SP (in words) its saved EXC_RETURN is looked for.
const SCAN_WORDS: u32 = 64;
/// Words a leaf handler that keeps EXC_RETURN in LR may have pushed above its frame.
const LEAF_PUSH_WORDS: u32 = 8;

const XPSR_THUMB: u32 = 0x0100_0000;
const XPSR_RESERVED: u32 = 0x00F0_0000;
/// Stacked xPSR bit 9: the core added a word to align the frame to 8 bytes.
const XPSR_REALIGNED: u32 = 0x200;

/// Words read from a stack, from `sp` upwards.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StackWords {
    pub sp: u32,
    pub words: Vec<u32>,
}

impl StackWords {
    fn words_at(&self, addr: u32, n: usize) -> Option<&[u32]> {
        let offset = addr.checked_sub(self.sp)?;
        if offset % 4 != 0 {
            return None;
        }
        let k = usize::try_from(offset / 4).ok()?;
        self.words.get(k..k.checked_add(n)?)
    }
}

/// The thread code under the handlers a core was stopped in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unwound {
    /// The handlers, the one the core was stopped in first, each with its PC.
    pub handlers: Vec<HandlerStop>,
    /// The interrupted thread code's registers from its frame: r0-r3, r12, LR, PC, xPSR, and SP
    /// (above the frame).
    pub thread: CoreRegs,
    /// How each frame was found, for the snapshot's raw text.
    pub note: String,
}

/// Unwinds a core stopped in handler mode to the thread code it interrupted. `msp` are the words
/// read at the live SP (the MSP in handler mode); `psp` those read at the PSP, when it was read.
/// Err says why no trustworthy frame was found.
pub fn unwind(
    regs: &CoreRegs,
    msp: &StackWords,
    psp: Option<&StackWords>,
) -> Result<Unwound, String> {
    let mut cur = regs.clone();
    let mut handlers = Vec::new();
    let mut note = String::new();
    for _ in 0..NESTING_MAX {
        let (Some(exception), Some(pc)) = (cur.exception(), cur.pc()) else {
            return Err("xPSR or PC was not read".into());
        };
        if exception == 0 {
            return Ok(Unwound {
                handlers,
                thread: cur,
                note,
            });
        }
        handlers.push(HandlerStop { exception, pc });
        let found = find_frame(&cur, exception, msp, psp)
            .map_err(|why| format!("{note}{} at 0x{pc:08x}: {why}", exception_name(exception)))?;
        note.push_str(&found.note);
        note.push('\n');
        cur = found.interrupted;
    }
    Err(format!(
        "{note}more than {NESTING_MAX} nested handlers: the stack words are not frames"
    ))
}

struct Found {
    interrupted: CoreRegs,
    note: String,
}

/// The frame of the handler `cur` is in: EXC_RETURN in LR first, then each EXC_RETURN saved
/// above SP, nearest first; the first whose frame checks out.
fn find_frame(
    cur: &CoreRegs,
    exception: u32,
    msp: &StackWords,
    psp: Option<&StackWords>,
) -> Result<Found, String> {
    let sp = cur.sp().ok_or("SP was not read")?;
    let mut rejected = Vec::new();
    if let Some(lr) = cur.lr().filter(|&lr| is_exc_return(lr)) {
        if lr & 0x4 != 0 {
            match try_psp(lr, exception, psp, "in LR") {
                Ok(found) => return Ok(found),
                Err(why) => rejected.push(why),
            }
        } else {
            for k in 0..=LEAF_PUSH_WORDS {
                let at = sp.wrapping_add(4 * k);
                if let Ok(found) = try_frame(lr, exception, msp, at, "MSP", "in LR") {
                    return Ok(found);
                }
            }
            rejected.push(format!(
                "EXC_RETURN 0x{lr:08x} in LR names the MSP, but no frame checks out within {} \
                 words above SP=0x{sp:08x}",
                LEAF_PUSH_WORDS
            ));
        }
    }
    for k in 0..SCAN_WORDS {
        let slot = sp.wrapping_add(4 * k);
        let Some(&[exc]) = msp.words_at(slot, 1) else {
            break;
        };
        if !is_exc_return(exc) {
            continue;
        }
        let how = format!("saved at 0x{slot:08x}");
        let tried = if exc & 0x4 != 0 {
            try_psp(exc, exception, psp, &how)
        } else {
            try_frame(exc, exception, msp, slot.wrapping_add(4), "MSP", &how)
        };
        match tried {
            Ok(found) => return Ok(found),
            Err(why) => rejected.push(why),
        }
    }
    if rejected.is_empty() {
        rejected.push(format!(
            "LR is no EXC_RETURN and none is saved within {SCAN_WORDS} words above \
             SP=0x{sp:08x}"
        ));
    }
    Err(rejected.join("; "))
}

fn try_psp(exc: u32, exception: u32, psp: Option<&StackWords>, how: &str) -> Result<Found, String> {
    let psp = psp.ok_or_else(|| {
        format!("EXC_RETURN 0x{exc:08x} ({how}) names the PSP, which could not be read")
    })?;
    try_frame(exc, exception, psp, psp.sp, "PSP", how)
}

/// The frame at `at` on `stack` for EXC_RETURN `exc`, if it checks out.
fn try_frame(
    exc: u32,
    exception: u32,
    stack: &StackWords,
    at: u32,
    name: &str,
    how: &str,
) -> Result<Found, String> {
    let Some(w) = stack.words_at(at, 8) else {
        return Err(format!(
            "EXC_RETURN 0x{exc:08x} ({how}) puts the frame at {name}=0x{at:08x}, which was not \
             read"
        ));
    };
    let (pc, xpsr) = (w[6], w[7]);
    let stacked_exception = xpsr & 0x1ff;
    let to_thread = exc & 0x8 != 0;
    let checks = xpsr & XPSR_THUMB != 0
        && xpsr & XPSR_RESERVED == 0
        && pc & 1 == 0
        && (stacked_exception == 0) == to_thread
        && stacked_exception != exception;
    if !checks {
        return Err(format!(
            "the words at {name}=0x{at:08x} (EXC_RETURN 0x{exc:08x} {how}) are no frame: \
             pc=0x{pc:08x} xpsr=0x{xpsr:08x}"
        ));
    }
    // Bit 4 clear: an FPU-extended frame (s0-s15, FPSCR and a reserved word follow).
    let size = if exc & 0x10 == 0 { 104 } else { 32 };
    let realign = if xpsr & XPSR_REALIGNED != 0 { 4 } else { 0 };
    let mut interrupted = CoreRegs::default();
    interrupted.r[..4].copy_from_slice(&[Some(w[0]), Some(w[1]), Some(w[2]), Some(w[3])]);
    interrupted.r[12] = Some(w[4]);
    interrupted.r[13] = Some(at.wrapping_add(size + realign));
    interrupted.r[14] = Some(w[5]);
    interrupted.r[15] = Some(pc);
    interrupted.xpsr = Some(xpsr);
    Ok(Found {
        interrupted,
        note: format!(
            "{} frame at {name}=0x{at:08x} (EXC_RETURN 0x{exc:08x} {how}): it interrupted \
             {} at pc=0x{pc:08x}",
            exception_name(exception),
            if to_thread {
                "thread code".to_string()
            } else {
                format!("{}'s handler", exception_name(stacked_exception))
            }
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSP_TOP: u32 = 0x2000_ff00;
    const TASK_PC: u32 = 0x0000_0456;
    const HANDLER_PC: u32 = 0x0000_0210;

    fn regs(sp: u32, lr: u32, pc: u32, xpsr: u32) -> CoreRegs {
        let mut r = CoreRegs::default();
        for (i, v) in r.r.iter_mut().enumerate() {
            *v = Some(i as u32);
        }
        r.r[13] = Some(sp);
        r.r[14] = Some(lr);
        r.r[15] = Some(pc);
        r.xpsr = Some(xpsr);
        r
    }

    fn frame(pc: u32, xpsr: u32) -> Vec<u32> {
        vec![10, 11, 12, 13, 14, 0x0000_0301, pc, xpsr]
    }

    #[test]
    fn a_handler_at_its_entry_with_the_frame_on_the_psp_unwinds_to_the_task() {
        let psp = StackWords {
            sp: 0x2000_1000,
            words: frame(TASK_PC, 0x6100_0000),
        };
        let live = regs(MSP_TOP, 0xFFFF_FFFD, HANDLER_PC, 0x0100_0010);
        let msp = StackWords {
            sp: MSP_TOP,
            words: vec![0; 8],
        };
        let u = unwind(&live, &msp, Some(&psp)).unwrap();
        assert_eq!(
            u.handlers,
            vec![HandlerStop {
                exception: 16,
                pc: HANDLER_PC
            }]
        );
        assert_eq!(u.thread.pc(), Some(TASK_PC));
        assert_eq!(u.thread.lr(), Some(0x301));
        assert_eq!(u.thread.sp(), Some(0x2000_1020));
        assert_eq!(u.thread.exception(), Some(0));
        assert!(u.note.contains("PSP=0x20001000"), "{}", u.note);
    }

    #[test]
    fn a_handler_that_called_a_function_is_unwound_through_its_saved_exc_return() {
        // The handler pushed {r4, lr} and called a function: LR is a return address, EXC_RETURN
        // sits at SP+4, the frame on the MSP right above it.
        let sp = MSP_TOP - 40;
        let mut words = vec![0x1234, 0xFFFF_FFF9];
        words.extend(frame(TASK_PC, 0x0100_0000));
        let msp = StackWords { sp, words };
        let live = regs(sp, 0x0000_0221, 0x0000_0300, 0x0100_0010);
        let u = unwind(&live, &msp, None).unwrap();
        assert_eq!(u.thread.pc(), Some(TASK_PC));
        assert_eq!(u.thread.sp(), Some(sp + 8 + 32));
    }

    #[test]
    fn a_realigned_frame_leaves_its_padding_word_above() {
        let psp = StackWords {
            sp: 0x2000_1004,
            words: frame(TASK_PC, 0x0100_0200),
        };
        let live = regs(MSP_TOP, 0xFFFF_FFFD, HANDLER_PC, 0x0000_000f);
        let msp = StackWords::default();
        let u = unwind(&live, &msp, Some(&psp)).unwrap();
        assert_eq!(u.thread.sp(), Some(0x2000_1004 + 32 + 4));
    }

    #[test]
    fn nested_handlers_are_unwound_to_the_thread_code_under_both() {
        // SysTick (15) interrupted IRQ0 (16), which interrupted a task on the PSP. SysTick keeps
        // EXC_RETURN 0xFFFFFFF1 in LR, its frame at SP; IRQ0 saved 0xFFFFFFFD above its frame.
        let sp = MSP_TOP - 64;
        let mut words = frame(HANDLER_PC + 6, 0x0100_0010);
        words.extend([0x55, 0xFFFF_FFFD]);
        let msp = StackWords { sp, words };
        let psp = StackWords {
            sp: 0x2000_2000,
            words: frame(TASK_PC, 0x0100_0000),
        };
        let live = regs(sp, 0xFFFF_FFF1, 0x0000_0500, 0x0100_000f);
        let u = unwind(&live, &msp, Some(&psp)).unwrap();
        let exceptions: Vec<u32> = u.handlers.iter().map(|h| h.exception).collect();
        assert_eq!(exceptions, vec![15, 16]);
        assert_eq!(u.handlers[1].pc, HANDLER_PC + 6);
        assert_eq!(u.thread.pc(), Some(TASK_PC));
    }

    #[test]
    fn an_fpu_extended_frame_is_stepped_over_whole() {
        // EXC_RETURN 0xFFFFFFE1: an FPU-extended frame (26 words) on the MSP that interrupted
        // another handler; that one's 0xFFFFFFF9 frame follows it.
        let sp = MSP_TOP - 256;
        let mut words = frame(HANDLER_PC, 0x0100_0011);
        words.extend([0; 18]);
        words.extend([0x77, 0xFFFF_FFF9]);
        words.extend(frame(TASK_PC, 0x0100_0000));
        let msp = StackWords { sp, words };
        let live = regs(sp, 0xFFFF_FFE1, 0x0000_0500, 0x0100_000f);
        let u = unwind(&live, &msp, None).unwrap();
        assert_eq!(u.handlers.len(), 2);
        assert_eq!(u.thread.pc(), Some(TASK_PC));
        assert_eq!(u.thread.sp(), Some(sp + 104 + 8 + 32));
    }

    #[test]
    fn a_psp_that_could_not_be_read_is_said() {
        let live = regs(MSP_TOP, 0xFFFF_FFFD, HANDLER_PC, 0x0100_0010);
        let msp = StackWords {
            sp: MSP_TOP,
            words: vec![0; 8],
        };
        let why = unwind(&live, &msp, None).unwrap_err();
        assert!(
            why.contains("names the PSP, which could not be read"),
            "{why}"
        );
        // A PSP pointing where nothing was read (a bad SP) is not guessed at either.
        let psp = StackWords {
            sp: 0xDEAD_BEE0,
            words: Vec::new(),
        };
        let why = unwind(&live, &msp, Some(&psp)).unwrap_err();
        assert!(why.contains("which was not read"), "{why}");
    }

    #[test]
    fn words_that_are_no_frame_are_not_believed() {
        // EXC_RETURN in LR says thread code, but the words at PSP carry a handler's exception
        // number and no Thumb bit: garbage.
        let psp = StackWords {
            sp: 0x2000_1000,
            words: frame(TASK_PC, 0x0000_0010),
        };
        let live = regs(MSP_TOP, 0xFFFF_FFFD, HANDLER_PC, 0x0100_0010);
        let why = unwind(&live, &StackWords::default(), Some(&psp)).unwrap_err();
        assert!(why.contains("are no frame"), "{why}");
    }

    #[test]
    fn the_main_stack_is_read_up_to_the_end_of_ram() {
        // Four pushes below the end of a 64 KB RAM.
        assert_eq!(msp_reads(0x2001_0000 - 16), [MSP_WORDS, 4, 4]);
        assert_eq!(msp_reads(0x2000_ff00 - 8), [MSP_WORDS, 66, 2]);
    }

    #[test]
    fn thread_mode_needs_no_unwinding() {
        let live = regs(MSP_TOP, 0x301, TASK_PC, 0x0100_0000);
        let u = unwind(&live, &StackWords::default(), None).unwrap();
        assert!(u.handlers.is_empty());
        assert_eq!(u.thread, live);
    }
}
