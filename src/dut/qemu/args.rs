//! QEMU's command line and what its exit means: the argv for one attempt, the machine and CPU
//! lists of `-machine help` / `-cpu help`, QEMU refusing to start (which argument, and QEMU's own
//! words), and the classification of a process exit. Pure functions; no process is run here.

use crate::config::QemuSpec;
use crate::dut::DutError;
use std::ffi::OsString;
use std::path::Path;

/// The argv (without the program) for one attempt. UART0 goes to stdout; guest errors
/// (`-d guest_errors`: accesses to unmapped memory, not every exception like `-d int`) and
/// semihosting text go to stderr. The core starts paused (`-S`) until fwfix has set its fault
/// breakpoints through the gdbstub; the QMP socket (only used to stop a QEMU whose fwfix was
/// killed) waits for no client.
pub fn qemu_args(spec: &QemuSpec, boot: &Boot<'_>, sockets: &Sockets) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec!["-M".into(), spec.machine.clone().into()];
    if let Some(cpu) = &spec.cpu {
        args.push("-cpu".into());
        args.push(cpu.into());
    }
    for a in [
        "-display",
        "none",
        "-monitor",
        "none",
        "-serial",
        "stdio",
        "-semihosting-config",
    ] {
        args.push(a.into());
    }
    args.push(semihosting_config(boot));
    for a in ["-d", "guest_errors", "-S", "-chardev"] {
        args.push(a.into());
    }
    // The gdbstub connects to fwfix's socket as QEMU starts: nothing of fwfix's is inherited.
    let mut gdb = OsString::from(format!("socket,id={GDB_CHARDEV},path="));
    gdb.push(&sockets.gdb);
    args.push(gdb);
    args.push("-gdb".into());
    args.push(format!("chardev:{GDB_CHARDEV}").into());
    args.push("-qmp".into());
    args.push(unix_server(&sockets.qmp));
    if let Boot::Kernel { kernel, append } = boot {
        args.push("-kernel".into());
        args.push(kernel.into());
        if let Some(append) = append {
            args.push("-append".into());
            args.push(append.into());
        }
    }
    args.extend(spec.extra_args.iter().map(OsString::from));
    args
}

/// Whether `machine` has RAM, not flash, at address 0, where an image's vector table sits until
/// VTOR moves it: QEMU's MPS2 FPGA images (hw/arm/mps2.c maps its SSRAM there, writable). A store
/// through a null pointer then rewrites the low vector table instead of faulting or being
/// ignored, so its fault vectors are watched like a RAM table's. Measured on mps2-an385; the
/// other boards fwfix knows (lm3s6965evb: flash, a store is ignored) are taken as flash.
pub fn code_region_is_ram(machine: &str) -> bool {
    matches!(
        machine,
        "mps2-an385" | "mps2-an386" | "mps2-an500" | "mps2-an511"
    )
}

/// How the image gets into the emulator.
#[derive(Debug, Clone, Copy)]
pub enum Boot<'a> {
    /// QEMU loads `kernel` as it starts (`-kernel`); `append` is the semihosting command line.
    Kernel {
        kernel: &'a Path,
        append: Option<&'a str>,
    },
    /// QEMU starts with no image (it may not be built yet) and fwfix writes it through the
    /// gdbstub. `-append` needs `-kernel`, so the semihosting command line is given as QEMU would
    /// have made it from the two: `kernel` as its first word, then the words of `append`.
    Gdbstub {
        kernel: &'a Path,
        append: Option<&'a str>,
    },
}

/// `-semihosting-config`'s value; a `Boot::Gdbstub` command line word by word (`arg=`, commas
/// doubled as QEMU's option syntax wants).
fn semihosting_config(boot: &Boot<'_>) -> OsString {
    let mut value = OsString::from("enable=on,target=native");
    if let Boot::Gdbstub { kernel, append } = boot {
        let kernel = kernel.as_os_str().to_string_lossy();
        let words =
            std::iter::once(kernel.as_ref()).chain(append.iter().flat_map(|a| a.split(' ')));
        for word in words.filter(|w| !w.is_empty()) {
            value.push(",arg=");
            value.push(word.replace(',', ",,"));
        }
    }
    value
}

/// The chardev QEMU's gdbstub runs on.
const GDB_CHARDEV: &str = "fwfix-gdb";

/// The attempt's sockets in the scratch directory: the one fwfix listens on for the gdbstub
/// (QEMU connects to it) and QEMU's QMP socket.
#[derive(Debug, Clone)]
pub struct Sockets {
    pub gdb: std::path::PathBuf,
    pub qmp: std::path::PathBuf,
}

fn unix_server(path: &Path) -> OsString {
    let mut arg = OsString::from("unix:");
    arg.push(path);
    arg.push(",server=on,wait=off");
    arg
}

/// The error for a board whose `extra_args` take the gdbstub or the paused start away from fwfix.
pub fn gdbstub_conflict(spec: &QemuSpec, board: &str) -> Option<DutError> {
    let option = conflicting_option(spec)?;
    Some(DutError::BadArguments {
        program: spec.binary.clone(),
        message: format!(
            "{option} in board {board}'s extra_args: fwfix starts QEMU paused and uses its one \
             gdbstub to stop the core at a fault; remove {option} (to debug by hand, run QEMU \
             yourself)"
        ),
    })
}

/// An option in the board's `extra_args` that would take the gdbstub or the paused start away from
/// fwfix (`-s`, `-gdb`, `-S`): QEMU has one gdbstub, and fwfix needs it to watch for faults.
pub fn conflicting_option(spec: &QemuSpec) -> Option<&str> {
    spec.extra_args
        .iter()
        .map(String::as_str)
        .find(|a| matches!(*a, "-s" | "-S" | "-gdb" | "--gdb") || a.starts_with("-gdb="))
}

/// Machine names from `-machine help` (the first word of each line after the header).
pub fn parse_machine_list(text: &str) -> Vec<String> {
    parse_list(text, "Supported machines are:")
}

/// CPU names from `-cpu help`.
pub fn parse_cpu_list(text: &str) -> Vec<String> {
    parse_list(text, "Available CPUs:")
}

fn parse_list(text: &str, header: &str) -> Vec<String> {
    text.lines()
        .skip_while(|l| !l.trim_start().starts_with(header))
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

/// How a QEMU process ended, as the OS reported it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExitInfo {
    pub code: Option<i32>,
    pub signal: Option<i32>,
}

/// What fwfix makes of QEMU ending by itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExitClass {
    /// QEMU refused to start: its arguments, the kernel file, the machine.
    StartFailure,
    /// A signal from outside (not fwfix, not a lockup): the runner broke.
    RunnerDied {
        signal: Option<i32>,
        code: Option<i32>,
    },
    /// The lockup abort or a fault the firmware exited from: a crash.
    Crashed,
    /// The firmware exited after the harness printed its verdict.
    Verdict { code: i32 },
    /// The firmware exited.
    Exited { code: i32 },
}

/// What the session knew when QEMU ended by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExitContext {
    pub exit: ExitInfo,
    /// QEMU said `terminating on signal N` (it exits 0 after SIGTERM/SIGINT/SIGHUP).
    pub terminated_by: Option<i32>,
    pub lockup: bool,
    /// The core was stopped at a fault handler's entry.
    pub fault_seen: bool,
    pub verdict_seen: bool,
    pub uart_seen: bool,
    /// The core was let run (fwfix reached the gdbstub and continued it).
    pub guest_ran: bool,
    /// stderr has a `<program>: ...` error line.
    pub qemu_complained: bool,
}

pub fn classify_exit(ctx: &ExitContext) -> ExitClass {
    if ctx.lockup {
        return ExitClass::Crashed;
    }
    let Some(code) = ctx.exit.code else {
        return ExitClass::RunnerDied {
            signal: ctx.exit.signal,
            code: None,
        };
    };
    if let Some(signal) = ctx.terminated_by {
        return ExitClass::RunnerDied {
            signal: Some(signal),
            code: Some(code),
        };
    }
    if code != 0 && !ctx.uart_seen && !ctx.guest_ran && ctx.qemu_complained {
        return ExitClass::StartFailure;
    }
    if ctx.fault_seen {
        return ExitClass::Crashed;
    }
    if ctx.verdict_seen {
        return ExitClass::Verdict { code };
    }
    ExitClass::Exited { code }
}

/// The name QEMU prefixes its own error lines with: the file name it was started as.
pub fn program_prefix(program: &str) -> String {
    let name = Path::new(program)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(program);
    format!("{name}: ")
}

/// Whether a stderr line is part of QEMU's `-d int,guest_errors` log rather than a message.
fn is_debug_log(line: &str) -> bool {
    line.starts_with("Invalid ")
        || line.starts_with("Timer with period zero")
        || line.trim().is_empty()
}

/// The error for QEMU refusing to start, naming the argument it refused and quoting QEMU.
pub fn start_failure(program: &str, spec: &QemuSpec, kernel: &Path, stderr: &[String]) -> DutError {
    let prefix = program_prefix(program);
    let messages: Vec<&str> = stderr
        .iter()
        .map(String::as_str)
        .filter(|l| !is_debug_log(l))
        .map(|l| l.strip_prefix(prefix.as_str()).unwrap_or(l))
        .collect();
    let said = if messages.is_empty() {
        "it exited without saying why".to_string()
    } else {
        messages.join("; ")
    };
    let program_s = program.to_string();
    if said.contains("unsupported machine type") {
        return DutError::BadArguments {
            program: program_s,
            message: format!(
                "-M {}: machine '{}' is not supported ({said}); `{program} -machine help` lists \
                 the machines it knows",
                spec.machine, spec.machine
            ),
        };
    }
    if said.contains("CPU model") || said.contains("only be used with CPU") {
        let cpu = spec.cpu.as_deref().unwrap_or("(default)");
        return DutError::BadArguments {
            program: program_s,
            message: format!(
                "-cpu {cpu}: not usable with machine {} ({said})",
                spec.machine
            ),
        };
    }
    if said.contains("Could not load kernel") {
        return DutError::StartFailed {
            program: program_s,
            message: format!("-kernel {}: {said}", kernel.display()),
        };
    }
    if let Some(option) = messages.iter().find_map(|m| refused_option(m)) {
        return DutError::BadArguments {
            program: program_s,
            message: format!("{option}: {said}"),
        };
    }
    DutError::StartFailed {
        program: program_s,
        message: said,
    }
}

/// `-bogus: invalid option` names the option QEMU refused.
fn refused_option(message: &str) -> Option<&str> {
    let (option, _) = message.split_once(": ")?;
    (option.starts_with('-') && !option.contains(' ')).then_some(option)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn spec() -> QemuSpec {
        QemuSpec {
            binary: "qemu-system-arm".into(),
            machine: "mps2-an385".into(),
            cpu: None,
            extra_args: vec![],
        }
    }

    fn sockets() -> Sockets {
        Sockets {
            gdb: "/tmp/x/gdb.sock".into(),
            qmp: "/tmp/x/qmp.sock".into(),
        }
    }

    fn strings(args: &[OsString]) -> Vec<String> {
        args.iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn argv_has_every_flag_in_order() {
        let mut s = spec();
        s.cpu = Some("cortex-m3".into());
        s.extra_args = vec!["-icount".into(), "shift=0".into()];
        let boot = Boot::Kernel {
            kernel: Path::new("/fw/test.elf"),
            append: Some("seed=7"),
        };
        let args = qemu_args(&s, &boot, &sockets());
        assert_eq!(
            strings(&args).join(" "),
            "-M mps2-an385 -cpu cortex-m3 -display none -monitor none -serial stdio \
             -semihosting-config enable=on,target=native -d guest_errors -S \
             -chardev socket,id=fwfix-gdb,path=/tmp/x/gdb.sock -gdb chardev:fwfix-gdb \
             -qmp unix:/tmp/x/qmp.sock,server=on,wait=off -kernel /fw/test.elf -append seed=7 \
             -icount shift=0"
        );
    }

    #[test]
    fn argv_without_optional_parts() {
        let boot = Boot::Kernel {
            kernel: Path::new("a.elf"),
            append: None,
        };
        let args = strings(&qemu_args(&spec(), &boot, &sockets()));
        assert!(!args.contains(&"-cpu".to_string()));
        assert!(!args.contains(&"-append".to_string()));
        assert_eq!(args.last().map(String::as_str), Some("a.elf"));
    }

    #[test]
    fn an_image_loaded_later_has_its_command_line_in_the_semihosting_config() {
        let boot = Boot::Gdbstub {
            kernel: Path::new("/fw/a,b.elf"),
            append: Some("fwfix-nonce=00ff seed=7"),
        };
        let args = strings(&qemu_args(&spec(), &boot, &sockets()));
        assert!(!args.contains(&"-kernel".to_string()));
        assert!(!args.contains(&"-append".to_string()));
        assert!(args.contains(
            &"enable=on,target=native,arg=/fw/a,,b.elf,arg=fwfix-nonce=00ff,arg=seed=7".to_string()
        ));
        let bare = Boot::Gdbstub {
            kernel: Path::new("/fw/a.elf"),
            append: None,
        };
        let args = strings(&qemu_args(&spec(), &bare, &sockets()));
        assert!(args.contains(&"enable=on,target=native,arg=/fw/a.elf".to_string()));
    }

    #[test]
    fn a_gdbstub_in_extra_args_is_a_conflict() {
        assert_eq!(conflicting_option(&spec()), None);
        for arg in ["-s", "-gdb", "-S"] {
            let mut s = spec();
            s.extra_args = vec!["-icount".into(), "shift=0".into(), arg.into()];
            assert_eq!(conflicting_option(&s), Some(arg));
        }
    }

    #[test]
    fn machine_and_cpu_lists() {
        let machines = "Supported machines are:\nakita                Sharp SL-C1000 (Akita) PDA (PXA270)\nlm3s6965evb          Stellaris LM3S6965EVB (Cortex-M3)\nvirt                 QEMU 7.2 ARM Virtual Machine (alias of virt-7.2)\n";
        assert_eq!(
            parse_machine_list(machines),
            vec!["akita", "lm3s6965evb", "virt"]
        );
        let cpus = "Available CPUs:\n  arm1026\n  cortex-m3\n";
        assert_eq!(parse_cpu_list(cpus), vec!["arm1026", "cortex-m3"]);
        assert!(parse_machine_list("garbage").is_empty());
    }

    fn stderr(lines: &[&str]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn unsupported_machine_names_the_machine() {
        let mut s = spec();
        s.machine = "nosuch".into();
        let e = start_failure(
            "qemu-system-arm",
            &s,
            Path::new("a.elf"),
            &stderr(&[
                "qemu-system-arm: unsupported machine type",
                "Use -machine help to list supported machines",
            ]),
        );
        let text = e.to_string();
        assert!(matches!(e, DutError::BadArguments { .. }), "{text}");
        assert!(text.contains("-M nosuch"), "{text}");
        assert!(text.contains("unsupported machine type"), "{text}");
    }

    #[test]
    fn missing_kernel_names_the_file() {
        let e = start_failure(
            "/usr/bin/qemu-system-arm",
            &spec(),
            &PathBuf::from("/x/nothere.elf"),
            &stderr(&[
                "Invalid read at addr 0x0, size 4, region '(null)', reason: rejected",
                "/x/nothere.elf: No such file or directory",
                "qemu-system-arm: Could not load kernel '/x/nothere.elf'",
            ]),
        );
        let text = e.to_string();
        assert!(matches!(e, DutError::StartFailed { .. }), "{text}");
        assert!(text.contains("-kernel /x/nothere.elf"), "{text}");
        assert!(text.contains("No such file"), "{text}");
        assert!(!text.contains("Invalid read"), "{text}");
    }

    #[test]
    fn bad_cpu_and_bad_option() {
        let mut s = spec();
        s.cpu = Some("cortex-a9".into());
        let e = start_failure(
            "qemu-system-arm",
            &s,
            Path::new("a.elf"),
            &stderr(&["qemu-system-arm: This board can only be used with CPU cortex-m3-arm-cpu"]),
        );
        assert!(e.to_string().contains("-cpu cortex-a9"), "{e}");
        let e = start_failure(
            "qemu-system-arm",
            &spec(),
            Path::new("a.elf"),
            &stderr(&["qemu-system-arm: -bogus: invalid option"]),
        );
        assert!(matches!(e, DutError::BadArguments { .. }));
        assert!(
            e.to_string().contains("-bogus: -bogus: invalid option"),
            "{e}"
        );
        let e = start_failure("qemu-system-arm", &spec(), Path::new("a.elf"), &[]);
        assert!(matches!(e, DutError::StartFailed { .. }));
        assert!(e.to_string().contains("without saying why"));
    }

    fn ctx(code: Option<i32>, signal: Option<i32>) -> ExitContext {
        ExitContext {
            exit: ExitInfo { code, signal },
            terminated_by: None,
            lockup: false,
            fault_seen: false,
            verdict_seen: false,
            uart_seen: true,
            guest_ran: true,
            qemu_complained: false,
        }
    }

    #[test]
    fn exit_classification() {
        assert_eq!(
            classify_exit(&ctx(Some(0), None)),
            ExitClass::Exited { code: 0 }
        );
        assert_eq!(
            classify_exit(&ExitContext {
                verdict_seen: true,
                ..ctx(Some(1), None)
            }),
            ExitClass::Verdict { code: 1 }
        );
        assert_eq!(
            classify_exit(&ExitContext {
                lockup: true,
                ..ctx(None, Some(6))
            }),
            ExitClass::Crashed
        );
        assert_eq!(
            classify_exit(&ctx(None, Some(6))),
            ExitClass::RunnerDied {
                signal: Some(6),
                code: None
            }
        );
        assert_eq!(
            classify_exit(&ExitContext {
                terminated_by: Some(15),
                ..ctx(Some(0), None)
            }),
            ExitClass::RunnerDied {
                signal: Some(15),
                code: Some(0)
            }
        );
        assert_eq!(
            classify_exit(&ExitContext {
                fault_seen: true,
                ..ctx(Some(1), None)
            }),
            ExitClass::Crashed
        );
        let refused = ExitContext {
            uart_seen: false,
            guest_ran: false,
            qemu_complained: true,
            ..ctx(Some(1), None)
        };
        assert_eq!(classify_exit(&refused), ExitClass::StartFailure);
        // A firmware that exits 1 before printing anything still ran.
        assert_eq!(
            classify_exit(&ExitContext {
                guest_ran: true,
                ..refused
            }),
            ExitClass::Exited { code: 1 }
        );
    }
}
