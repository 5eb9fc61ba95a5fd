//! The triage rule table: which log lines mean what, written as data.
//!
//! Each [`Rule`] names one kind of line a real tool prints (gcc, GNU ld, make, a shell, QEMU,
//! OpenOCD, probe-rs, pyOCD, J-Link, st-flash, esptool, pyserial, gdb, Zephyr, ESP-IDF, FreeRTOS,
//! Unity, a Cortex-M fault handler), the class it is evidence of, and how strongly it decides.
//! Compiler and linker lines are recognised by [`crate::analysis::parse_build_log`] rather than by
//! patterns of their own, so the two never disagree about what a diagnostic is. This file owns
//! the patterns and nothing else: it reads no log and makes no decision (the parent module does).
//!
//! Order matters: a line belongs to the first rule in the table that matches it. Harness result
//! lines come first because a test's name or message may contain any word (`test_error_counter`,
//! `Expected HardFault`); then environment and flasher lines, whose own text can look like a
//! compiler diagnostic (`embedded:startup.tcl:1516: Error: ** Programming Failed **`); then the
//! diagnostics; then what the firmware itself printed.

use std::sync::LazyLock;

use regex::bytes::{Regex, RegexBuilder, RegexSet, RegexSetBuilder};

use super::TriageClass;
use crate::analysis::{Diagnostic, Severity};

/// How a rule recognises its lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Matcher {
    /// A regular expression over the cleaned line (colour codes, console.log stamps and
    /// surrounding blanks removed). A group named `msg` picks the part quoted as the reason.
    Regex(&'static str),
    /// An error-severity [`Diagnostic`] from `tool`, of one of `kinds` (any kind when empty).
    Diagnostic {
        tool: &'static str,
        kinds: &'static [&'static str],
    },
}

/// One kind of log line and what it is evidence of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    /// Stable name, `source.what` (`ld.undefined_reference`); appears in triage output.
    pub id: &'static str,
    /// The tool or framework that prints the line.
    pub source: &'static str,
    /// The class the line is evidence of; `None` for a known harmless line, which the rule
    /// claims only so that no rule below it misreads it.
    pub class: Option<TriageClass>,
    pub matcher: Matcher,
    /// 1 supports a class, 2 is strong evidence, 3 decides it: the deciding lines of a log are
    /// the heaviest lines of the winning class.
    pub weight: u8,
    /// The harness's final verdict: a run that printed it finished, so it did not hang.
    pub verdict: bool,
    /// When non-empty, the rule applies only right after a line claimed by one of these rules
    /// (Unity's `OK` means something only after its summary line).
    pub follows: &'static [&'static str],
    /// A process was killed from outside. When the run is known to have timed out, that kill
    /// was the timeout's doing and the line is evidence of a hang instead.
    pub timeout_explains: bool,
}

impl Rule {
    const fn new(
        id: &'static str,
        source: &'static str,
        class: Option<TriageClass>,
        matcher: Matcher,
    ) -> Rule {
        Rule {
            id,
            source,
            class,
            matcher,
            weight: 3,
            verdict: false,
            follows: &[],
            timeout_explains: false,
        }
    }

    const fn weight(mut self, weight: u8) -> Rule {
        self.weight = weight;
        self
    }

    const fn verdict(mut self) -> Rule {
        self.verdict = true;
        self
    }

    const fn follows(mut self, rules: &'static [&'static str]) -> Rule {
        self.follows = rules;
        self
    }

    const fn timeout_explains(mut self) -> Rule {
        self.timeout_explains = true;
        self
    }

    /// Whether an error diagnostic is one of this rule's.
    pub fn accepts(&self, diagnostic: &Diagnostic) -> bool {
        match self.matcher {
            Matcher::Diagnostic { tool, kinds } => {
                diagnostic.severity == Severity::Error
                    && diagnostic.tool == tool
                    && (kinds.is_empty() || kinds.contains(&diagnostic.kind.as_str()))
            }
            Matcher::Regex(_) => false,
        }
    }
}

const fn re(
    id: &'static str,
    source: &'static str,
    class: TriageClass,
    pattern: &'static str,
) -> Rule {
    Rule::new(id, source, Some(class), Matcher::Regex(pattern))
}

const fn noise(id: &'static str, source: &'static str, pattern: &'static str) -> Rule {
    Rule::new(id, source, None, Matcher::Regex(pattern))
}

const fn diag(
    id: &'static str,
    source: &'static str,
    class: TriageClass,
    tool: &'static str,
    kinds: &'static [&'static str],
) -> Rule {
    Rule::new(id, source, Some(class), Matcher::Diagnostic { tool, kinds })
}

use TriageClass::{
    Assert, BuildError, Crash, FlashError, Hang, InfraError, LinkError, Pass, TestFailure,
    ToolMissing,
};

const UNITY_SUMMARIES: &[&str] = &["unity.summary_ok", "unity.summary_fail"];

/// QEMU prefixes its own messages with its program name; with `-nographic` they may follow the
/// monitor prompt `(qemu) ` on the same line.
macro_rules! qemu {
    ($rest:literal) => {
        concat!(r"(?:^|[\s)])qemu-system-[\w.-]+: ", $rest)
    };
}

/// The table, in claiming order (see the module comment).
pub static RULES: &[Rule] = &[
    // Harness results: a test's own line, whatever words its name or message holds.
    re("unity.pass", "unity", Pass, r"(?P<msg>\S*?:\d+:[A-Za-z_]\w*:PASS)(?::.*)?$").weight(1),
    re("unity.fail", "unity", TestFailure, r"(?P<msg>\S*?:\d+:[A-Za-z_]\w*:FAIL(?::.*)?)$"),
    re("unity.ignore", "unity", Pass, r"\S*?:\d+:[A-Za-z_]\w*:IGNORE(?::.*)?$").weight(1),
    re("unity.summary_ok", "unity", Pass, r"^\d+ Tests 0 Failures \d+ Ignored$"),
    re("unity.summary_fail", "unity", TestFailure, r"^\d+ Tests [1-9]\d* Failures \d+ Ignored$"),
    re("unity.ok", "unity", Pass, r"^OK$").verdict().follows(UNITY_SUMMARIES),
    re("unity.verdict_fail", "unity", TestFailure, r"^FAIL$").verdict().follows(UNITY_SUMMARIES),
    re("ztest.assert", "ztest", TestFailure, r"^Assertion failed at (?P<msg>.+)$"),
    re("ztest.summary_fail", "ztest", TestFailure, r"^- FAIL - \[").weight(2),
    re("ztest.fail", "ztest", TestFailure, r"^FAIL - \S+"),
    re("ztest.pass", "ztest", Pass, r"^(?:- )?(?:PASS|SKIP) - \S+").weight(1),
    re("ztest.suite_fail", "ztest", TestFailure, r"^(?:SUITE FAIL - |TESTSUITE \S+ failed\.)")
        .weight(2),
    re("ztest.suite_pass", "ztest", Pass, r"^(?:SUITE PASS - |TESTSUITE \S+ succeeded)").weight(1),
    re("ztest.project_failed", "ztest", TestFailure, r"^PROJECT EXECUTION FAILED$").verdict(),
    re("ztest.project_ok", "ztest", Pass, r"^PROJECT EXECUTION SUCCESSFUL$").verdict(),
    // A program that is not installed.
    re(
        "shell.not_found",
        "sh",
        ToolMissing,
        r"^(?:[\w./-]*\b(?:sh|bash|dash|ksh)|[\w./-]+\.sh): (?:line )?(?:\d+: )?(?:[\w./-]+\.sh: )?(?:exec: )?(?P<msg>[^\s:]+: (?:command )?not found)$",
    ),
    re("shell.zsh_not_found", "zsh", ToolMissing, r"^zsh: (?P<msg>command not found: \S+)$"),
    re(
        "make.no_such_program",
        "make",
        ToolMissing,
        r"^make(?:\[\d+\])?: (?P<msg>[^*\s:][^:]*: No such file or directory)$",
    ),
    re("make.error_127", "make", ToolMissing, r"^make(?:\[\d+\])?: \*\*\* \[.*\] Error 127$")
        .weight(1),
    re(
        "gcc.cannot_execute",
        "gcc",
        ToolMissing,
        r"(?P<msg>cannot execute '[^']+': execvp: No such file or directory)",
    ),
    re(
        "env.no_interpreter",
        "env",
        ToolMissing,
        r"^(?:/usr)?/bin/env: (?P<msg>(?u:['‘][^'’]+['’]): No such file or directory)$",
    ),
    re(
        "python.no_module",
        "python",
        ToolMissing,
        r"^ModuleNotFoundError: (?P<msg>No module named '[^']+')",
    ),
    // Flashers and debug probes: the image did not get onto the board.
    re("esptool.fatal", "esptool", FlashError, r"A fatal error occurred: (?P<msg>.+)$"),
    re(
        "openocd.no_adapter",
        "openocd",
        FlashError,
        r"^Error: (?P<msg>unable to find (?:a matching )?CMSIS-DAP device|open failed|No J-Link device found|Cannot find jlink Interface.*|unable to open (?:ftdi|CMSIS-DAP) device.*|libusb_open\(\) failed with LIBUSB_ERROR_\w+|The specified debug interface was not found.*)$",
    ),
    re(
        "openocd.init_mode",
        "openocd",
        FlashError,
        r"^Error: (?P<msg>init mode failed.*)$",
    ),
    re(
        "openocd.target",
        "openocd",
        FlashError,
        r"^Error: (?P<msg>Error connecting DP: .*|Invalid ACK \(\d+\) in DAP response|JTAG-DP STICKY ERROR|JTAG scan chain interrogation failed.*|double-check your JTAG setup.*|\S+: IR capture error.*|Failed to connect multidrop .*|\S+: Examination failed|Target not examined yet)$",
    )
    .weight(2),
    re(
        "openocd.flash",
        "openocd",
        FlashError,
        r"^Error: (?P<msg>stm32\w* device (?:is )?protected|failed erasing sectors .*|error writing to flash at address .*|flash write failed.*|failed to erase sectors .*|timed out while waiting for target halted)$",
    )
    .weight(2),
    re(
        "openocd.program",
        "openocd",
        FlashError,
        r"\*\* (?P<msg>Programming Failed|Verify Failed|Unable to reset target) \*\*",
    ),
    re("openocd.init_failed", "openocd", FlashError, r"^\*\* OpenOCD init failed \*\*$").weight(1),
    re(
        "probe_rs.no_probe",
        "probe-rs",
        FlashError,
        r"^Error:? (?P<msg>No connected probes were found\.?|no probe was found.*|No supported probe was found.*|Probe not found.*|Probe could not be found.*)$",
    ),
    re(
        "probe_rs.open_failed",
        "probe-rs",
        FlashError,
        r"^Error:? (?P<msg>Failed to open (?:the debug )?probe.*)$",
    ),
    re(
        "probe_rs.flash_failed",
        "probe-rs",
        FlashError,
        r"^(?i:Error):? (?P<msg>The flashing procedure failed for .*|(?i:failed to flash) .*|Connecting to the chip was unsuccessful.*|Failed to attach to .*)$",
    ),
    re(
        "probe_rs.cause",
        "probe-rs",
        FlashError,
        r"^\d+: (?P<msg>Failed to (?:erase|program|write) (?:flash|sector|page).*|Error while flashing)$",
    )
    .weight(1),
    re(
        "pyocd.no_probe",
        "pyocd",
        FlashError,
        r"^(?:\d{7} [CE] )?(?P<msg>No connected debug probes|No available debug probes are connected|Probe \S+ not found)(?: \[\w+\])?$",
    ),
    re(
        "pyocd.exception",
        "pyocd",
        FlashError,
        r"^pyocd\.core\.exceptions\.(?P<msg>\w+: .+)$",
    ),
    re("pyocd.error", "pyocd", FlashError, r"^\d{7} [CE] (?P<msg>.+?)(?: \[\w+\])?$").weight(1),
    re(
        "jlink.no_probe",
        "jlink",
        FlashError,
        r"(?P<msg>Connecting to J-Link via (?:USB|IP)\.\.\.FAILED.*|Cannot connect to J-Link.*|Could not open J-Link connection.*|Connecting to J-Link failed.*)$",
    ),
    re(
        "jlink.no_target",
        "jlink",
        FlashError,
        r"^(?:ERROR: )?(?P<msg>Cannot connect to target\.?|Could not connect to target\.?)$",
    ),
    re(
        "jlink.program",
        "jlink",
        FlashError,
        r"(?P<msg>Error while programming flash: .*)$",
    ),
    re(
        "stflash.no_stlink",
        "st-flash",
        FlashError,
        r"(?P<msg>Couldn't find any ST-Link(?:/V2)? devices|Found 0 stlink programmers|Failed to enter SWD mode)",
    ),
    re(
        "stflash.program",
        "st-flash",
        FlashError,
        r"(?:ERROR|WARN) \S+\.c: (?P<msg>Flash programming error.*|flash loader run error|Flash write failed.*|Verification of flash failed.*)$",
    ),
    re(
        "stflash.write_failed",
        "st-flash",
        FlashError,
        r"^(?:.*ERROR \S+\.c: )?(?P<msg>stlink_fwrite_flash\(\) == -1|stlink_flash_loader_run\(.*\) failed!.*)$",
    )
    .weight(2),
    re(
        "gdb.load_failed",
        "gdb",
        FlashError,
        r"^(?P<msg>Load failed|Error erasing flash with vFlashErase packet|Error writing data to flash)$",
    ),
    // The environment: the host, its disks, its network, its serial ports, QEMU itself.
    noise("qemu.warning", "qemu", qemu!("warning: ")),
    re(
        "qemu.terminated_by_runner",
        "qemu",
        Hang,
        qemu!(r"(?P<msg>terminating on signal \d+ from pid \d+ \((?:timeout|fwfix)\))$"),
    ),
    re("qemu.terminated", "qemu", InfraError, qemu!(r"(?P<msg>terminating on signal \d+.*)$"))
        .timeout_explains(),
    re(
        "qemu.outside_ram",
        "qemu",
        Crash,
        qemu!(r"(?P<msg>Trying to execute code outside RAM or ROM.*)$"),
    ),
    re("qemu.start_error", "qemu", InfraError, qemu!(r"(?P<msg>.+)$")),
    re("host.no_space", "host", InfraError, r"No space left on device"),
    re("host.read_only", "host", InfraError, r"Read-only file system"),
    re(
        "host.out_of_memory",
        "host",
        InfraError,
        r"(?P<msg>Killed signal terminated program \S+|\S+ terminated with signal \d+ \[Killed\]|Cannot allocate memory|out of memory allocating \d+ bytes|virtual memory exhausted.*)",
    ),
    re("host.tool_panicked", "host", InfraError, r"^thread '[^']*' panicked at (?P<msg>.+)$")
        .weight(2),
    re(
        "shell.killed",
        "sh",
        InfraError,
        r"^(?:\S+: )?(?:line \d+: )?(?:\d+ (?P<msg>(?:Killed|Segmentation fault|Bus error)(?: \(core dumped\))?)\s.*|(?:Killed|Segmentation fault|Bus error)(?: \(core dumped\))?)$",
    )
    .timeout_explains(),
    re(
        "gdb.connection",
        "gdb",
        InfraError,
        r"^\S*:\d+: Connection (?:refused|timed out)\.$",
    ),
    re(
        "gdb.remote_lost",
        "gdb",
        InfraError,
        r"^(?P<msg>Remote connection closed|Remote communication error\..*)$",
    ),
    re(
        "net.refused",
        "host",
        InfraError,
        r"(?P<msg>ConnectionRefusedError: .*|E connect\(.*\): Connection refused|Unable to connect to remote host: Connection refused|[Cc]ould not connect to \S+: Connection refused.*)",
    ),
    re("serial.open", "pyserial", InfraError, r"(?P<msg>[Cc]ould not (?:open|exclusively lock) port .*)$"),
    re(
        "serial.permission",
        "serial",
        InfraError,
        r"(?P<msg>Permission denied:? '?(?:/dev/(?:tty|serial|cu\.)|COM\d)\S*)",
    ),
    re("serial.busy", "serial", InfraError, r"Device or resource busy"),
    re(
        "serial.vanished",
        "pyserial",
        InfraError,
        r"(?P<msg>device reports readiness to read but returned no data.*|read failed: \[Errno 5\] Input/output error|Input/output error: '/dev/tty\S*)",
    ),
    // Compiler, assembler, make and linker diagnostics.
    re("gcc.internal_error", "gcc", BuildError, r"(?P<msg>internal compiler error: .+)$"),
    re(
        "ld.collect2",
        "ld",
        LinkError,
        r"^(?:collect2(?:\.exe)?: error: ld returned \d+ exit status|\S*clang\S*: error: linker command failed.*)$",
    )
    .weight(1),
    diag("gcc.error", "gcc", BuildError, "compiler", &[]),
    diag("as.error", "as", BuildError, "assembler", &[]),
    diag("make.no_rule", "make", BuildError, "make", &["no_rule"]),
    diag("make.makefile", "make", BuildError, "make", &["makefile"]),
    diag("ld.undefined_reference", "ld", LinkError, "linker", &["undefined_reference"]),
    diag("ld.multiple_definition", "ld", LinkError, "linker", &["multiple_definition"]),
    diag("ld.region_overflow", "ld", LinkError, "linker", &["region_overflow"]),
    diag("ld.missing_library", "ld", LinkError, "linker", &["missing_library"]),
    diag("ld.error", "ld", LinkError, "linker", &[]).weight(2),
    // What the firmware printed, or what the emulator saw it do.
    re("zephyr.assert", "zephyr", Assert, r"ASSERTION FAIL \["),
    re("esp_idf.assert", "esp-idf", Assert, r"(?P<msg>assert failed[:!].*)$"),
    re(
        "freertos.assert",
        "freertos",
        Assert,
        r"(?P<msg>ASSERT! Line \d+, file \S+.*|configASSERT.*)$",
    ),
    re(
        "libc.assert",
        "libc",
        Assert,
        r#"(?P<msg>assertion "[^"]*" failed.*|.*Assertion `.*' failed\.?|(?i:assertion failed).*)$"#,
    ),
    re(
        "zephyr.fault",
        "zephyr",
        Crash,
        r"(?P<msg>\*{5} (?:MPU|MEMORY MANAGEMENT|BUS|USAGE|HARD|SECURE) FAULT \*{5})",
    ),
    re("zephyr.fatal", "zephyr", Crash, r">>> (?P<msg>ZEPHYR FATAL ERROR \d+: .+)$"),
    re("esp_idf.guru_meditation", "esp-idf", Crash, r"(?P<msg>Guru Meditation Error: .+)$"),
    re(
        "esp_idf.abort",
        "esp-idf",
        Crash,
        r"(?P<msg>abort\(\) was called at PC 0x[0-9a-fA-F]+(?: on core \d+)?)",
    ),
    re("esp_idf.stack_overflow", "esp-idf", Crash, r"\*\*\*ERROR\*\*\* A stack overflow in task"),
    re("esp_idf.task_watchdog", "esp-idf", Hang, r"(?P<msg>Task watchdog got triggered.*)$"),
    re("qemu.lockup", "qemu", Crash, r"^qemu: fatal: (?P<msg>Lockup.*)$"),
    re("qemu.fatal", "qemu", Crash, r"^qemu: fatal: (?P<msg>.+)$"),
    re(
        "qemu.fault_entry",
        "qemu",
        Crash,
        r"^(?P<msg>Taking exception (?:1|3|4|1[7-9]|2[23]) \[[^\]]+\].*)$",
    )
    .weight(2),
    re(
        "qemu.fault_vector",
        "qemu",
        Crash,
        r"^(?P<msg>\.\.\.taking pending (?:non)?secure exception [3-6])$",
    )
    .weight(2),
    re(
        "cortex_m.fault_banner",
        "firmware",
        Crash,
        r"(?i)^(?P<msg>\W*(?:hard ?fault|mem(?:ory)? ?manage(?:ment)?(?: fault)?|bus ?fault|usage ?fault)(?:_handler)?(?:\s*$|\s*[^\w\s].*|\s+(?:at|in|detected|occurred|exception)\b.*))$",
    ),
    re(
        "cortex_m.fault_status",
        "firmware",
        Crash,
        r"\b(?P<msg>CFSR\s*[:=]\s*(?:0x)?[0-9a-fA-F]{1,8}\b.*)$",
    ),
    re(
        "freertos.stack_overflow",
        "freertos",
        Crash,
        r"(?i)^\W*(?P<msg>stack overflow (?:in|detected)\b.*)$",
    ),
    re("rust.panic", "firmware", Crash, r"(?:^|\s)(?P<msg>panicked at .+)$"),
];

/// A line may hold a compiler or linker diagnostic only if it has one of these; the cheap test
/// keeps [`crate::analysis::parse_build_log`] off the lines that cannot be one.
const DIAGNOSTIC_HINT: &str = r"(?i)error|undefined reference|multiple definition|overflowed|will not fit|cannot find|no rule to make|:\d+: \*\*\* |\bld(?:\.\w+)?(?:\.exe)?: ";

/// The table compiled once: one set over every regex rule (plus the diagnostic hint, last) to
/// find the candidates of a line in one pass, and each rule's own regex for its `msg` group.
///
/// The patterns run over bytes with Unicode classes off: `\w`, `\s` and `.` mean ASCII words,
/// ASCII blanks and any byte. Tool output is ASCII where it matters, and Unicode classes make the
/// set's automaton blow up on line noise (a serial console at the wrong baud rate), slowing it
/// a hundredfold.
pub(super) struct Compiled {
    pub set: RegexSet,
    /// For each rule, its index in `set` (None for diagnostic rules).
    pub set_index: Vec<Option<usize>>,
    /// For each rule, its compiled regex (None for diagnostic rules).
    pub regex: Vec<Option<Regex>>,
    /// The diagnostic hint's index in `set`.
    pub hint: usize,
}

#[expect(
    clippy::expect_used,
    reason = "the patterns are constants; the unit tests compile every one of them"
)]
fn compile(pattern: &str) -> Regex {
    RegexBuilder::new(pattern)
        .unicode(false)
        .build()
        .expect("built-in triage pattern compiles")
}

pub(super) static COMPILED: LazyLock<Compiled> = LazyLock::new(|| {
    let mut patterns = Vec::new();
    let mut set_index = Vec::with_capacity(RULES.len());
    let mut regex = Vec::with_capacity(RULES.len());
    for rule in RULES {
        match rule.matcher {
            Matcher::Regex(pattern) => {
                set_index.push(Some(patterns.len()));
                patterns.push(pattern);
                regex.push(Some(compile(pattern)));
            }
            Matcher::Diagnostic { .. } => {
                set_index.push(None);
                regex.push(None);
            }
        }
    }
    let hint = patterns.len();
    patterns.push(DIAGNOSTIC_HINT);
    #[expect(
        clippy::expect_used,
        reason = "the patterns are constants; the unit tests compile the set"
    )]
    let set = RegexSetBuilder::new(&patterns)
        .unicode(false)
        .build()
        .expect("built-in triage patterns compile as a set");
    Compiled {
        set,
        set_index,
        regex,
        hint,
    }
});

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn every_pattern_compiles() {
        let compiled = &*COMPILED;
        assert_eq!(compiled.set_index.len(), RULES.len());
        assert_eq!(compiled.set.len(), compiled.hint + 1);
    }

    #[test]
    fn rule_ids_are_unique_and_named_source_dot_what() {
        let mut seen = HashSet::new();
        for rule in RULES {
            assert!(seen.insert(rule.id), "duplicate rule id {}", rule.id);
            let (source, what) = rule.id.split_once('.').unwrap_or(("", ""));
            assert!(!source.is_empty() && !what.is_empty(), "{}", rule.id);
            assert!((1..=3).contains(&rule.weight), "{}", rule.id);
        }
    }

    #[test]
    fn follows_names_existing_rules() {
        let ids: HashSet<_> = RULES.iter().map(|r| r.id).collect();
        for rule in RULES {
            for id in rule.follows {
                assert!(ids.contains(id), "{} follows unknown rule {id}", rule.id);
            }
        }
    }

    #[test]
    fn every_class_but_unknown_has_rules() {
        for class in TriageClass::PRECEDENCE {
            if class == TriageClass::Unknown {
                // UNKNOWN is what no rule's evidence gives.
                assert!(RULES.iter().all(|r| r.class != Some(class)));
                continue;
            }
            assert!(
                RULES.iter().any(|r| r.class == Some(class)),
                "no rule for {class}"
            );
        }
    }
}
