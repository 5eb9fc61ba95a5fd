//! gdb as the flasher and as the window into a stopped core: the command file fwfix hands to
//! `gdb -batch` (connect, init commands, load, start the image from its vector table or by a
//! monitor reset, continue,
//! and once interrupted read the registers, the SCB fault status and the stack), and the reading
//! of what gdb prints back (markers, the image's exit, a lost connection, registers, memory).
//! Pure text in, text out: the session runs gdb and decides what the answers mean for the run.
//!
//! Why gdb stays attached while the image runs: semihosting (the image's exit code, and on real
//! hardware any semihosting call at all) only works with a debugger attached, and an attached
//! gdb can stop the core on the spot at a timeout. A command file, not `-ex` arguments, because
//! gdb stops a command file at the first error: a failed `load` never reaches `continue`.

use super::image::VectorTable;
use crate::config::GdbStart;
use crate::dut::cortex_m::unwind::{StackWords, PSP_WORDS};
use crate::dut::cortex_m::{self, CoreRegs, SCB_CFSR};
pub use crate::dut::cortex_m::{conclude, Stop, StopReading};
use regex::Regex;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::OnceLock;

/// Printed once the image is loaded and about to run.
pub const STARTED: &str = "@@fwfix:started@@";
/// Printed when `continue` returns: the core stopped (or the image exited).
pub const STOPPED: &str = "@@fwfix:stopped@@";
const SCB_MARK: &str = "@@fwfix:scb@@";
const STACK_MARK: &str = "@@fwfix:stack@@";
const PSP_MARK: &str = "@@fwfix:psp@@";
/// The most stack words read after a stop (as many as the QEMU backend reads at most).
const STACK_WORDS: usize = cortex_m::STACK_WORDS_MORE;
/// Fewer words than a stacked frame are not worth reading.
const STACK_WORDS_MIN: usize = 8;

/// The command file for one attempt. The vector table also bounds the stack read after a stop.
pub fn script(remote: &str, init: &[String], start: &GdbStart, vectors: &VectorTable) -> String {
    let mut s = String::new();
    // No pager, no questions, no line wrapping: gdb talks to a pipe.
    s.push_str("set pagination off\nset confirm off\nset width 0\nset height 0\n");
    // fwfix checked the server answers before the build; a refused connection now is an error
    // to report at once, not one to retry for gdb's 15 s.
    s.push_str("set tcp auto-retry off\n");
    let _ = writeln!(s, "target remote {remote}");
    for command in init {
        let _ = writeln!(s, "{command}");
    }
    s.push_str("load\n");
    match start {
        // What the core's reset does: SP and PC from the vector table (found by `image`).
        GdbStart::VectorTable => {
            let _ = writeln!(
                s,
                "set $sp = *(unsigned int *)0x{:08x}\nset $pc = *(unsigned int *)0x{:08x}",
                vectors.base,
                vectors.base.wrapping_add(4)
            );
        }
        // gdb does not know a monitor command changed the registers: without the flush it
        // keeps the ones it read before the reset.
        GdbStart::MonitorReset { command } => {
            let _ = writeln!(s, "{command}\nmaintenance flush register-cache");
        }
    }
    let _ = writeln!(s, "echo {STARTED}\\n\ncontinue\necho {STOPPED}\\n");
    s.push_str("info registers\n");
    let _ = writeln!(s, "echo {SCB_MARK}\\n\nx/5wx 0x{SCB_CFSR:08x}");
    // Read the stack up to its top (the initial SP), at most STACK_WORDS words: a read past the
    // end of RAM would be an error and end the command file.
    let _ = writeln!(
        s,
        "echo {STACK_MARK}\\n\n\
         set $fwfix_words = ((unsigned int)0x{:08x} - (unsigned int)$sp) / 4\n\
         if $fwfix_words > {STACK_WORDS}\n  set $fwfix_words = {STACK_WORDS}\nend\n\
         if $fwfix_words < {STACK_WORDS_MIN}\n  set $fwfix_words = {STACK_WORDS_MIN}\nend\n\
         eval \"x/%dwx $sp\", $fwfix_words",
        vectors.initial_sp
    );
    // The PSP and the frame above it: a core stopped in a handler is unwound through them to
    // the task it interrupted. Last, as a failed read ends the command file; a server that
    // describes no PSP is skipped.
    let _ = writeln!(
        s,
        "echo {PSP_MARK}\\n\n\
         if !$_isvoid($psp)\n  p/x $psp\n  x/{PSP_WORDS}wx $psp\nend"
    );
    // Leave the core halted where it is: a detach would let it run on.
    s.push_str("disconnect\n");
    s
}

/// gdb's arguments for `script` on `elf`.
pub fn args(script: &Path, elf: &Path) -> Vec<OsString> {
    let mut args: Vec<OsString> = ["-q", "-batch", "-nx", "-return-child-result", "-x"]
        .iter()
        .map(OsString::from)
        .collect();
    args.push(script.as_os_str().to_owned());
    args.push(elf.as_os_str().to_owned());
    args
}

fn re(cell: &'static OnceLock<Option<Regex>>, pattern: &str) -> Option<&'static Regex> {
    cell.get_or_init(|| Regex::new(pattern).ok()).as_ref()
}

/// What one line of gdb's output means to the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Said {
    Started,
    Stopped,
    /// The image exited (semihosting), with its exit code.
    Exited(i32),
    /// The GDB server went away.
    ConnectionLost,
    Other,
}

pub fn classify(line: &str) -> Said {
    static EXITED: OnceLock<Option<Regex>> = OnceLock::new();
    let line = line.trim();
    if line == STARTED {
        return Said::Started;
    }
    if line == STOPPED {
        return Said::Stopped;
    }
    if let Some(c) = re(
        &EXITED,
        r"^\[Inferior \d+ \(.*\) exited (?:normally|with code ([0-7]+))\]$",
    )
    .and_then(|r| r.captures(line))
    {
        // gdb prints the exit code in octal.
        return match c.get(1) {
            None => Said::Exited(0),
            Some(code) => i32::from_str_radix(code.as_str(), 8)
                .map(Said::Exited)
                .unwrap_or(Said::Other),
        };
    }
    if line.starts_with("Remote connection closed")
        || line.starts_with("Remote communication error")
    {
        return Said::ConnectionLost;
    }
    Said::Other
}

/// Parses the lines gdb printed after [`STOPPED`].
pub fn read_stop(lines: &[String]) -> StopReading {
    let mut section = "registers";
    let (mut registers, mut scb, mut stack, mut psp) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for line in lines {
        match line.trim() {
            SCB_MARK => section = "scb",
            STACK_MARK => section = "stack",
            PSP_MARK => section = "psp",
            _ => match section {
                "registers" => registers.push(line.as_str()),
                "scb" => scb.push(line.as_str()),
                "stack" => stack.push(line.as_str()),
                _ => psp.push(line.as_str()),
            },
        }
    }
    let regs = parse_registers(&registers.join("\n"));
    // Without an SP there is no stack to trust the words of.
    let stack_words = match regs.sp() {
        Some(sp) => parse_memory(&stack, sp),
        None => Vec::new(),
    };
    StopReading {
        regs,
        scb: parse_memory(&scb, SCB_CFSR),
        stack: stack_words,
        psp: process_stack(&psp),
        raw: format!(
            "-- info registers --\n{}\n-- SCB (CFSR HFSR DFSR MMFAR BFAR) --\n{}\n-- stack --\n{}",
            registers.join("\n").trim_end(),
            scb.join("\n").trim_end(),
            stack.join("\n").trim_end()
        ),
    }
}

/// `p/x $psp` (`$1 = 0x20001000`) and the words `x` read there.
fn process_stack(lines: &[&str]) -> Option<StackWords> {
    let value = lines
        .iter()
        .find_map(|l| l.trim().strip_prefix('$')?.split_once(" = 0x"))?;
    let sp = u32::from_str_radix(value.1.trim(), 16).ok()?;
    Some(StackWords {
        sp,
        words: parse_memory(lines, sp),
    })
}

/// `info registers`: `r0  0x20000000  536870912` … `sp`, `lr`, `pc`, `xpsr` (OpenOCD spells it
/// `xPSR`).
pub fn parse_registers(text: &str) -> CoreRegs {
    static LINE: OnceLock<Option<Regex>> = OnceLock::new();
    let mut regs = CoreRegs::default();
    let Some(line_re) = re(&LINE, r"^\s*([A-Za-z][A-Za-z0-9]*)\s+0x([0-9a-fA-F]+)\b") else {
        return regs;
    };
    for line in text.lines() {
        let Some(c) = line_re.captures(line) else {
            continue;
        };
        let Ok(value) = u32::from_str_radix(&c[2], 16) else {
            continue;
        };
        let name = c[1].to_ascii_lowercase();
        let index = match name.as_str() {
            "sp" => Some(13),
            "lr" => Some(14),
            "pc" => Some(15),
            "xpsr" => {
                regs.xpsr = Some(value);
                None
            }
            other => other
                .strip_prefix('r')
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|&n| n < 16),
        };
        if let Some(i) = index {
            regs.r[i] = Some(value);
        }
    }
    regs
}

/// `x/Nwx ADDR` output (`0x2000ffd0 <sym+8>:\t0x00000001\t0x...`): the words, as long as their
/// addresses run on from `start`.
pub fn parse_memory(lines: &[&str], start: u32) -> Vec<u32> {
    static LINE: OnceLock<Option<Regex>> = OnceLock::new();
    let Some(line_re) = re(
        &LINE,
        r"^\s*0x([0-9a-fA-F]+)(?:\s+<[^>]*>)?:((?:\s+0x[0-9a-fA-F]+)+)\s*$",
    ) else {
        return Vec::new();
    };
    cortex_m::contiguous_words(lines.iter().copied(), line_re, start)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Recorded from gdb-multiarch 13.1 against qemu-system-arm 7.2's gdbstub: the fwtests
    // sensor image spinning in its HardFault handler after a call through 0xFFFFFFFF.
    const HARDFAULT: &str = "r0             0xffff9e57          -25001
r1             0x800               2048
r2             0xffffcf90          -12400
r3             0xffffffff          -1
r4             0x20000000          536870912
r5             0x203fffac          541065132
r6             0x0                 0
r7             0x203fffc0          541065152
r8             0x0                 0
r9             0x0                 0
r10            0x0                 0
r11            0x0                 0
r12            0x0                 0
sp             0x203fff68          0x203fff68
lr             0xfffffff9          -7
pc             0x29c               0x29c <Default_Handler>
xpsr           0x21000003          553648131
@@fwfix:scb@@
0xe000ed28:\t0x00000001\t0x40000000\t0x00000000\t0x00000000
0xe000ed38:\t0x00000000
@@fwfix:stack@@
0x203fff68:\t0xffff9e57\t0x00000800\t0xffffcf90\t0xffffffff
0x203fff78:\t0x00000000\t0x00000299\t0xfffffffe\t0x21000000";

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_string).collect()
    }

    /// Each of `needles` appears in `s`, in this order.
    fn assert_in_order(s: &str, needles: &[&str]) {
        let mut at = 0;
        for needle in needles {
            let found = s[at..]
                .find(needle)
                .unwrap_or_else(|| panic!("`{needle}` missing or out of order in:\n{s}"));
            at += found + needle.len();
        }
    }

    fn vectors() -> VectorTable {
        VectorTable {
            base: 0x0800_0000,
            initial_sp: 0x2002_0000,
            reset: 0x0800_0195,
            found_by: "section .isr_vector".into(),
        }
    }

    #[test]
    fn script_loads_starts_from_the_vector_table_and_reads_a_stop() {
        let s = script(
            "127.0.0.1:3333",
            &["monitor reset halt".into()],
            &GdbStart::VectorTable,
            &vectors(),
        );
        let order = [
            "target remote 127.0.0.1:3333",
            "monitor reset halt",
            "load",
            "set $sp = *(unsigned int *)0x08000000",
            "set $pc = *(unsigned int *)0x08000004",
            "echo @@fwfix:started@@\\n",
            "continue",
            "echo @@fwfix:stopped@@\\n",
            "info registers",
            "x/5wx 0xe000ed28",
            "set $fwfix_words = ((unsigned int)0x20020000 - (unsigned int)$sp) / 4",
            "eval \"x/%dwx $sp\", $fwfix_words",
            "disconnect",
        ];
        assert_in_order(&s, &order);
    }

    #[test]
    fn script_starts_by_a_monitor_reset_after_load() {
        let start = GdbStart::MonitorReset {
            command: "monitor reset halt".into(),
        };
        let s = script("127.0.0.1:3333", &[], &start, &vectors());
        let order = [
            "target remote 127.0.0.1:3333",
            "load",
            "monitor reset halt",
            "maintenance flush register-cache",
            "echo @@fwfix:started@@\\n",
            "continue",
        ];
        assert_in_order(&s, &order);
        assert!(!s.contains("set $pc"), "{s}");
        // The stack read after a stop is still bounded by the image's initial SP.
        assert!(s.contains("0x20020000"), "{s}");
    }

    #[test]
    fn gdb_arguments() {
        let a = args(Path::new("run/flash.gdb"), Path::new("fw.elf"));
        assert_eq!(
            a,
            [
                "-q",
                "-batch",
                "-nx",
                "-return-child-result",
                "-x",
                "run/flash.gdb",
                "fw.elf"
            ]
            .map(OsString::from)
        );
    }

    #[test]
    fn classifies_markers_exits_and_lost_connections() {
        assert_eq!(classify(STARTED), Said::Started);
        assert_eq!(classify("@@fwfix:stopped@@ "), Said::Stopped);
        assert_eq!(
            classify("[Inferior 1 (process 1) exited normally]"),
            Said::Exited(0)
        );
        assert_eq!(
            classify("[Inferior 1 (process 1) exited with code 01]"),
            Said::Exited(1)
        );
        // Octal: 052 is 42.
        assert_eq!(
            classify("[Inferior 1 (process 1) exited with code 052]"),
            Said::Exited(42)
        );
        assert_eq!(classify("Remote connection closed"), Said::ConnectionLost);
        assert_eq!(
            classify("Loading section .text, size 0x900 lma 0x0"),
            Said::Other
        );
    }

    #[test]
    fn reads_a_recorded_hardfault() {
        let reading = read_stop(&lines(HARDFAULT));
        assert_eq!(reading.regs.sp(), Some(0x203f_ff68));
        assert_eq!(reading.regs.pc(), Some(0x29c));
        assert_eq!(reading.regs.xpsr, Some(0x2100_0003));
        assert_eq!(reading.regs.r[12], Some(0));
        assert_eq!(reading.scb, vec![1, 0x4000_0000, 0, 0, 0]);
        assert_eq!(reading.stack.len(), 8);
        let Some(Stop::Faulted(snap)) = conclude(&reading) else {
            panic!("not a fault: {reading:?}");
        };
        assert_eq!(snap.exception, Some(3));
        assert_eq!(snap.pc, Some(0xffff_fffe));
        assert_eq!(snap.lr, Some(0x299));
        assert_eq!(snap.sp, Some(0x203f_ff88));
        assert_eq!(snap.cfsr, Some(1));
        assert_eq!(snap.hfsr, Some(0x4000_0000));
        assert!(snap
            .raw
            .starts_with("core stopped in HardFault (exception 3)"));
        assert!(snap.raw.contains("frame at SP=0x203fff68"), "{}", snap.raw);
    }

    #[test]
    fn a_core_in_thread_mode_is_running_not_faulted() {
        let text =
            "r0 0x1 1\nsp 0x20000ff0 0x20000ff0\nlr 0x105 261\npc 0x1a2 0x1a2 <event_wait+6>\n\
                    xPSR 0x61000000 1627389952\n@@fwfix:scb@@\n@@fwfix:stack@@\n";
        let reading = read_stop(&lines(text));
        let Some(Stop::Running(snap)) = conclude(&reading) else {
            panic!("not running: {reading:?}");
        };
        assert_eq!(snap.pc, Some(0x1a2));
        assert_eq!(snap.exception, Some(0));
        assert_eq!(snap.xpsr, Some(0x6100_0000));
        assert!(conclude(&read_stop(&lines("The program has no registers now."))).is_none());
    }

    #[test]
    fn memory_lines_with_symbols_and_gaps() {
        let text = [
            "0x20000000 <buf>:\t0x00000001\t0x00000002",
            "0x20000008 <buf+8>:\t0x00000003",
            "0x20000100:\t0x00000009",
        ];
        assert_eq!(parse_memory(&text, 0x2000_0000), vec![1, 2, 3]);
        assert!(parse_memory(&text, 0x1000).is_empty());
        assert!(parse_memory(&["Cannot access memory at address 0x20400000"], 0).is_empty());
    }

    #[test]
    fn a_fault_without_a_readable_stack_keeps_the_fault_status() {
        let text = "sp 0x20000ff0 0\nlr 0xfffffffd 0\npc 0x100 0\nxpsr 0x01000004 0\n\
                    @@fwfix:scb@@\n0xe000ed28:\t0x00008200\t0x0\t0x0\t0x0\n0xe000ed38:\t0x30000000\n";
        let Some(Stop::Faulted(snap)) = conclude(&read_stop(&lines(text))) else {
            panic!("not a fault");
        };
        assert_eq!(snap.exception, Some(4));
        assert_eq!(snap.pc, None);
        assert_eq!(snap.bfar, Some(0x3000_0000));
        assert!(snap.raw.contains("process stack"), "{}", snap.raw);
    }
}
