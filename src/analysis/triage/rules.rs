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
//! diagnostics; then what the firmware itself printed; last the generic evidence (a bare
//! `error:` or `ERROR:` line, a Python exception, a lone timeout), which only a line no rule
//! above knows reaches.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::sync::{LazyLock, Mutex, OnceLock};

use regex::bytes::{Regex, RegexBuilder};
use regex_automata::hybrid::dfa::{Cache as DfaCache, DFA};
use regex_automata::nfa::thompson::{self, WhichCaptures};
use regex_automata::{hybrid, Input};
use rustc_hash::FxHasher;

use super::prefilter::{self, Candidates, Prefilter};
use super::set_patterns;
use super::TriageClass;
use crate::analysis::{Diagnostic, Severity};

/// A condition on a line that a regular expression cannot state, checked after the rule's
/// pattern matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// The pattern decides.
    Pattern,
    /// The line starts with a build tool's progress counter at its last step, `[N/N]`
    /// (ninja's `[160/160] Linking C executable zephyr/zephyr.elf`).
    LastStep,
}

impl Check {
    /// Whether a line the rule's pattern matched holds the condition too.
    pub fn holds(self, segment: &[u8]) -> bool {
        match self {
            Check::Pattern => true,
            Check::LastStep => last_step(segment),
        }
    }
}

/// `[N/M]` at the start of `segment` with N = M > 0.
fn last_step(segment: &[u8]) -> bool {
    let Some(rest) = segment.strip_prefix(b"[") else {
        return false;
    };
    let Some(close) = rest.iter().position(|&b| b == b']') else {
        return false;
    };
    let Some((done, total)) = std::str::from_utf8(&rest[..close])
        .ok()
        .and_then(|counter| counter.split_once('/'))
    else {
        return false;
    };
    matches!(
        (done.parse::<u64>(), total.parse::<u64>()),
        (Ok(done), Ok(total)) if done == total && total > 0
    )
}

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
    /// What the line shows of its evidence.
    pub scope: Scope,
    /// The line's class yields to the log's [`Scope::Context`]: a serial port that cannot be
    /// opened in a flasher's log is the flasher's upload port, so the flash failed.
    pub yields_to_context: bool,
    /// A test case's own pass line: a firmware assert or fault since the case before was one
    /// the test expected (ztest's error-hook tests raise them on purpose).
    pub passes_test_case: bool,
    /// The line reports how the system handled a failure, not the failure itself (Zephyr's
    /// `ZEPHYR FATAL ERROR` after an assert, ESP-IDF's `abort()` a task watchdog called): it
    /// yields to any other line of the log that names the cause (an assert, a fault, a hang).
    pub consequence: bool,
    /// The line starts a later step whose outcome the log must then show (a serial monitor
    /// opening after a flash, an upload after a build): a pass before it is no pass of the log.
    pub starts_step: bool,
    /// A condition on the line that the pattern cannot state.
    pub check: Check,
}

/// How far a rule's line decides by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The line says what failed (or passed).
    Specific,
    /// Something failed, but the line does not say which step: a Python traceback, `make: ***
    /// Error 1`, west's `FATAL ERROR: command exited with status 1`. Counts only when no specific
    /// line explains the log, and then as the class the log's [`Scope::Context`] names, if any.
    Generic,
    /// Like [`Scope::Generic`], but too common to count without a context line (OpenOCD's bare
    /// `Error: ...`).
    GenericInContext,
    /// A step that says only that a command it ran failed (`make: *** Error 1`, `ninja: build
    /// stopped`, west's `FATAL ERROR: command exited with status 1`): the echo of whatever that
    /// command printed. Counts like [`Scope::Generic`], but only when no other line, generic or
    /// not, is evidence of a failure.
    Echo,
    /// Not evidence by itself: names the step the log comes from (a flasher's banner, `west
    /// flash: using runner jlink`). Gives its class to the log's generic failures.
    Context,
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
            scope: Scope::Specific,
            yields_to_context: false,
            passes_test_case: false,
            consequence: false,
            starts_step: false,
            check: Check::Pattern,
        }
    }

    const fn generic(mut self) -> Rule {
        self.scope = Scope::Generic;
        self
    }

    const fn in_context(mut self) -> Rule {
        self.scope = Scope::GenericInContext;
        self
    }

    const fn context(mut self) -> Rule {
        self.scope = Scope::Context;
        self
    }

    const fn echo(mut self) -> Rule {
        self.scope = Scope::Echo;
        self
    }

    const fn yields_to_context(mut self) -> Rule {
        self.yields_to_context = true;
        self
    }

    const fn passes_test_case(mut self) -> Rule {
        self.passes_test_case = true;
        self
    }

    const fn consequence(mut self) -> Rule {
        self.consequence = true;
        self
    }

    const fn starts_step(mut self) -> Rule {
        self.starts_step = true;
        self
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

    const fn check(mut self, check: Check) -> Rule {
        self.check = check;
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

/// GNU make as it names itself in its messages: `make`, `make[2]`, and where it is installed
/// under another name, `gmake`, `mingw32-make`, `make.exe`.
macro_rules! make_name {
    () => {
        r"(?:g|mingw32-)?make(?:\.exe)?(?:\[\d+\])?"
    };
}

/// Whatever a logger, a quoting reply or a terminal puts before a line's own words: quote marks
/// and emoji (`> `, `☠️ `), bracketed levels and tags (`[INFO]`, `[main]`), ISO and clock
/// timestamps. A generic severity word counts after any of them.
macro_rules! prefixed {
    ($rest:literal) => {
        concat!(
            r"^(?:[^A-Za-z0-9\s]+\s*|\[[^\]]{0,40}\]\s*|\d{4}-\d\d-\d\d[T ][\d:.,]+Z?\s+|\d\d:\d\d:\d\d[.,\d]*\s+)*",
            $rest
        )
    };
}

/// The table, in claiming order (see the module comment).
pub static RULES: &[Rule] = &[
    // A compiler's quote of the source under its diagnostic (`  178 |   configASSERT( x );`,
    // `      |   ^~~~`): code, not anything that ran.
    noise("compiler.source_excerpt", "gcc", r"^(?:\s*\d+ |\s+)\| "),
    // Harness results: a test's own line, whatever words its name or message holds.
    re("unity.pass", "unity", Pass, r"(?P<msg>\S*?:\d+:[A-Za-z_]\w*:PASS)(?::.*)?$").weight(1),
    re("unity.fail", "unity", TestFailure, r"(?P<msg>\S*?:\d+[: ][A-Za-z_]\w*:FAIL(?::.*)?)$"),
    re("unity.ignore", "unity", Pass, r"\S*?:\d+:[A-Za-z_]\w*:IGNORE(?::.*)?$").weight(1),
    re("unity.summary_ok", "unity", Pass, r"^\d+ Tests 0 Failures \d+ Ignored$"),
    re("unity.summary_fail", "unity", TestFailure, r"^\d+ Tests [1-9]\d* Failures \d+ Ignored$"),
    re("unity.ok", "unity", Pass, r"^OK$").verdict().follows(UNITY_SUMMARIES),
    // cgreen-runner's summary of a suite (`Completed "tests": 4 passes, 2 skipped, 9 failures
    // in 9ms.`; `, 1 exception` when a test crashed).
    re(
        "cgreen.summary_fail",
        "cgreen",
        TestFailure,
        r#"^(?P<msg>Completed "[^"]*": \d+ pass(?:es)?,(?: \d+ skipped,)? (?:[1-9]\d* failures?\b|\d+ failures?, [1-9]\d* exceptions?\b).*)$"#,
    )
    .verdict(),
    re(
        "cgreen.summary_ok",
        "cgreen",
        Pass,
        r#"^(?P<msg>Completed "[^"]*": [1-9]\d* pass(?:es)?,(?: \d+ skipped,)? 0 failures(?:, 0 exceptions)? in \S+)$"#,
    )
    .verdict(),
    re("unity.verdict_fail", "unity", TestFailure, r"^FAIL$").verdict().follows(UNITY_SUMMARIES),
    // NuttX's fault handlers' panic (`Assertion failed at file:armv7-m/up_hardfault.c`) and its
    // assert (`Assertion failed at file:sched/foo.c line: 12 task: init`): before ztest's
    // line, which starts the same way.
    re(
        "nuttx.fault_panic",
        "nuttx",
        Crash,
        r"(?P<msg>Assertion failed (?:panic\b.*|.*\bat file:\s*\S*(?:fatal|fault|exception|abort|unexpected)\S*\.c.*)|PANIC!!! .*)$",
    ),
    re(
        "nuttx.assert",
        "nuttx",
        Assert,
        r"^(?:\w+: )?(?P<msg>Assertion failed at file:\s*\S+ line: \d+.*)$",
    ),
    re("ztest.assert", "ztest", TestFailure, r"^Assertion failed at (?P<msg>.+)$"),
    re("ztest.summary_fail", "ztest", TestFailure, r"^- FAIL - \[").weight(2),
    re("ztest.fail", "ztest", TestFailure, r"^FAIL - \S+"),
    re("ztest.pass", "ztest", Pass, r"^(?:- )?(?:PASS|SKIP) - \S+")
        .weight(1)
        .passes_test_case(),
    re("ztest.suite_fail", "ztest", TestFailure, r"^(?:SUITE FAIL - |TESTSUITE \S+ failed\.)")
        .weight(2),
    re("ztest.suite_pass", "ztest", Pass, r"^(?:SUITE PASS - |TESTSUITE \S+ succeeded)").weight(2),
    re("ztest.project_failed", "ztest", TestFailure, r"^PROJECT EXECUTION FAILED$").verdict(),
    // OP-TEE's xtest: a failed case (`regression_1018.2 FAILED first error at
    // host/xtest/regression_1000.c:1384`) and its test's closing `regression_1018 FAILED`.
    re(
        "xtest.failed",
        "xtest",
        TestFailure,
        r"^(?:\* )?(?P<msg>[a-z]+_\d+(?:\.\d+)* FAILED(?: first error at \S+:\d+)?)$",
    )
    .weight(2),
    // xtest's failed check (`regression_4000.c:333: ret_orig has an unexpected value: 0x1 =
    // TEEC_ORIGIN_API, expected 0x4 = ...`).
    re(
        "xtest.unexpected_value",
        "xtest",
        TestFailure,
        r"^\S+\.c:\d+: (?P<msg>\S+ has an unexpected value: .*)$",
    )
    .weight(2),
    // xtest's closing tally (`29320 subtests of which 0 failed`, `687 test cases of which 0
    // failed`): the run's verdict.
    re(
        "xtest.summary_failed",
        "xtest",
        TestFailure,
        r"^(?P<msg>\d+ (?:subtests|test cases) of which [1-9]\d* failed)$",
    )
    .verdict(),
    re(
        "xtest.summary_passed",
        "xtest",
        Pass,
        r"^(?P<msg>\d+ (?:subtests|test cases) of which 0 failed)$",
    )
    .weight(2)
    .verdict(),
    // Mbed TLS's self-test closing its run (`[ All tests PASS ]`, `[ 2 tests FAIL ]`).
    re(
        "mbedtls.selftest_passed",
        "mbedtls",
        Pass,
        r"^(?P<msg>\[ All tests PASS \])$",
    )
    .weight(2)
    .verdict(),
    re(
        "mbedtls.selftest_failed",
        "mbedtls",
        TestFailure,
        r"^(?P<msg>\[ [1-9]\d* tests? FAIL \])$",
    )
    .weight(2)
    .verdict(),
    // U-Boot's `mtest` finding a word it read back other than it wrote: the memory test failed.
    re(
        "uboot.mtest_error",
        "u-boot",
        TestFailure,
        r"^(?P<msg>## Error \(read/write\) @ 0x[0-9A-Fa-f]+: expected 0x[0-9A-Fa-f]+, found 0x[0-9A-Fa-f]+.*)$",
    )
    .weight(2),
    // An Xtensa instruction-set simulator's report of a CPU exception in the program under
    // test (`*WARNING* Unhandled user exception: LoadStoreAlignmentCause (0x000130da)`).
    re(
        "xtensa_iss.exception",
        "xtensa-iss",
        Crash,
        r"(?P<msg>Unhandled user exception: \w+Cause\b.*)$",
    )
    .weight(2),
    // Sound Open Firmware's host driver waiting in vain for the DSP firmware's reply (`error:
    // ipc timed out for 0x50020000 size 108`): the firmware stopped answering.
    re(
        "sof.ipc_timeout",
        "sof",
        Hang,
        r"(?P<msg>\bipc (?:tx )?timed out for 0x[0-9A-Fa-f]+\b.*)$",
    )
    .weight(2),
    // TensorFlow Lite Micro's test macros (`expected_output_data[i] (1.89*2^7) near
    // output_data[i] (1.39*2^7) failed at .../conv_test.cc:106`, `x == y failed at f.cc:12 (1
    // vs 2)`).
    re(
        "tflm.expect_near_failed",
        "tflite-micro",
        TestFailure,
        r"^(?P<msg>\S+(?: \([^()]*\))? (?:near|==|!=) \S+(?: \([^()]*\))? failed at \S+:\d+(?: \(-?\w+ vs -?\w+\))?)$",
    )
    .weight(2),
    // The Matter SDK's Python certification tests (`* Test test_TC_SC_7_1 failed for the
    // following reason:` in their starred box).
    re(
        "matter.test_failed",
        "matter",
        TestFailure,
        r"^\* Test (?P<msg>\S+ failed for the following reason:)",
    )
    .weight(2),
    // TF-M's regression tests: `TESTSUITE PASSED!`/`TESTSUITE FAILED!` closing a suite, and the
    // summary's `Test suite 'X' has PASSED`.
    re("tfm.testsuite_failed", "tf-m", TestFailure, r"^(?P<msg>TESTSUITE FAILED!)$").verdict(),
    re("tfm.testsuite_passed", "tf-m", Pass, r"^(?P<msg>TESTSUITE PASSED!)$")
        .weight(2)
        .verdict(),
    re(
        "tfm.suite_failed",
        "tf-m",
        TestFailure,
        r"^(?P<msg>Test suite '.+' has FAILED)$",
    )
    .weight(2),
    // A firmware's self-test report, an item a line (`* Test   Buttons: FAILED (Took 16584ms)
    // ...`).
    re(
        "selftest.item_failed",
        "test",
        TestFailure,
        r"^(?:\*\s*)?Test\s+[\w -]+: (?P<msg>FAILED\b.*)$",
    )
    .weight(2),
    // A test script's numbered tests, after Python logging's `LEVEL:logger:` (`ERROR:root:Test 4
    // failed, expected packet not received`).
    re(
        "script.test_failed",
        "test",
        TestFailure,
        r"^(?:(?:ERROR|WARNING|INFO|CRITICAL):[\w.]+:)?(?P<msg>Test \d+ failed\b.*|Too many failures! Test failed!)$",
    )
    .weight(2),
    // libc-test (musl's, and the RTOS ports of it): `fscanf.c:65: !!(f=writetemp("42")) failed
    // (failed to make temp file)`, a checked expression that did not hold, with its reason.
    re(
        "libc_test.failed",
        "libc-test",
        TestFailure,
        r"^(?P<msg>[\w.-]+\.c:\d+: .+ failed \(.*\))$",
    )
    .weight(2),
    re("ztest.project_ok", "ztest", Pass, r"^PROJECT EXECUTION SUCCESSFUL$").verdict(),
    // Zephyr's older kernel benchmarks close each case with `TEST RESULT: FAILED` (or
    // `SUCCESSFUL`) and its `DETAILS:` line.
    re("zephyr.bench_case_failed", "zephyr", TestFailure, r"^(?P<msg>TEST RESULT: FAILED)\b"),
    re("unity.fixture_fail", "unity", TestFailure, r":\d+:(?P<msg>TEST\([^)]*\):FAIL\b.*)$"),
    // Test runners' summaries: what the runner concluded, whatever the board printed.
    re(
        "twister.summary_pass",
        "twister",
        Pass,
        r"(?P<msg>\d+ of \d+ (?:executed )?test (?:configurations|suites) passed \([\d.]+%\), (?:\d+ built \(not run\), )?0 failed, 0 errored.*)$",
    )
    .verdict(),
    re(
        "twister.summary_fail",
        "twister",
        TestFailure,
        r"(?P<msg>\d+ of \d+ (?:executed )?test (?:configurations|suites) passed \([\d.]+%\), (?:\d+ built \(not run\), )?[1-9]\d* failed.*)$",
    )
    .verdict(),
    re(
        "twister.cases_failed",
        "twister",
        TestFailure,
        r"(?P<msg>\d+ of \d+ executed test cases passed \([\d.]+%\), (?:\d+ \w+, )*[1-9]\d* failed\b.*)$",
    )
    .weight(2),
    re("twister.tests_passed", "twister", Pass, r"^(?P<msg>\d+ of \d+ tests passed\b.*)$").verdict(),
    re(
        "twister.total_failed",
        "twister",
        TestFailure,
        r"(?i)(?P<msg>total complete:\s*\d+/\s*\d+\s+\d+%\s+.*\bfailed:\s*[1-9]\d*.*)$",
    )
    .weight(2),
    re(
        "twister.build_failure",
        "twister",
        BuildError,
        r"\b(?:FAILED|ERROR|error)\s*:?\s*\(?(?P<msg>(?:Cmake )?[Bb]uild failure)\b",
    ),
    re(
        "twister.timeout",
        "twister",
        Hang,
        r"(?P<msg>Timed out while monitoring serial output.*|\brun status: \S+ timeout\b.*|\b(?:FAILED|Skipped):? \(?Timeout\b.*)$",
    ),
    // A test runner's QEMU that ran out of time (StarryOS's `QEMU timed out after 5s`), and
    // checkbox's job that printed nothing for too long (`Output timeout reached! (1800s)`).
    re(
        "runner.qemu_timed_out",
        "runner",
        Hang,
        r"(?P<msg>\bQEMU timed out after \d+\s*s\b.*|Output timeout reached!.*)$",
    ),
    // sanitycheck's and twister's row for a test the board never finished: a hang.
    re(
        "twister.failed_timeout",
        "twister",
        Hang,
        r"\sFAILED\s*:\s*(?P<msg>(?i:timeout)\b.*)$",
    )
    .weight(1),
    // ArduPilot's autotest giving up on a line it expected from the vehicle (`Timed out
    // looking for Received [0-9]+ parameters`): the firmware under test never answered.
    re(
        "autotest.timed_out",
        "autotest",
        Hang,
        r"^(?P<msg>Timed out looking for .+)$",
    )
    .weight(2),
    // A board reporting that it restarted after a fatal error of its firmware (iCub's `DEBUG:
    // tag00 + RESTARTED after FATAL error`, the handler and its kind on the lines after).
    re(
        "firmware.restarted_after_fatal",
        "firmware",
        Crash,
        r"\b(?P<msg>RESTARTED after FATAL error\b.*)$",
    )
    .weight(2),
    // NEORV32's bootloader trapping in the program it started (`ERROR_EXCEPTION 0x00000002
    // 0x00000000 0xf14020f3 0x00000000`: the cause, the PC, the instruction, the value).
    re(
        "neorv32.exception",
        "neorv32",
        Crash,
        r"^(?P<msg>ERROR_EXCEPTION(?: 0x[0-9a-fA-F]+)+)$",
    )
    .weight(2),
    // U-Boot's exception handler on ColdFire and m68k (`*** Unexpected exception ***`, then the
    // vector, PC and registers, and `*** Please Reset Board! ***`).
    re(
        "uboot.unexpected_exception",
        "u-boot",
        Crash,
        r"^\*\*\* (?P<msg>Unexpected exception) \*\*\*$",
    ),
    // pico-sdk's `panic()` (`*** PANIC ***`, its message on the line after).
    re("pico_sdk.panic", "pico-sdk", Crash, r"^\*\*\* (?P<msg>PANIC) \*\*\*$"),
    // A CPU's or a checker's name for a division by zero, alone on its line (`Integer divide by
    // zero`, then where: `at: lfs_dir_compact (lfs.c:1460)`).
    re(
        "cpu.divide_by_zero",
        "cpu",
        Crash,
        r"^(?P<msg>Integer divide by zero)$",
    )
    .weight(2),
    // gdb stopped in cortex-m-rt's handler for an exception nothing else handles
    // (`cortex_m_rt::default_handler::h09ef... (ef=0x20004e00)`, `HardFault`). The crate's
    // name is written with `.` for `_` so that the prefilter keys on the handler's name, not
    // on `cortex_m`, which every Cortex-M build's paths hold.
    re(
        "cortex_m_rt.default_handler",
        "cortex-m-rt",
        Crash,
        r"^(?:#\d+\s+(?:0x[0-9a-fA-F]+ in )?)?(?P<msg>cortex.m.rt::(?:default_handler|DefaultHandler_?|HardFault_?)\b.*)$",
    )
    .weight(2),
    // Unicorn-based emulators and fuzzers stopping on the firmware's own fault, Unicorn's error
    // in brackets (`Emulation stopped ... (UC_ERR_INSN_INVALID)`, an unmapped read, write or
    // fetch); the bare name is a program's source or a hook's note.
    re(
        "unicorn.fault",
        "unicorn",
        Crash,
        r"(?P<msg>.*\(UC_ERR_(?:INSN_INVALID|READ_UNMAPPED|WRITE_UNMAPPED|FETCH_UNMAPPED|READ_PROT|WRITE_PROT|FETCH_PROT|EXCEPTION)\).*)$",
    )
    .weight(2),
    // The seL4 kernel's own assertion and its `fail()`, which halts the kernel (`seL4 called
    // fail at boot_sys.c:722 in function boot_sys, saying "..."`, then `halting...`).
    re(
        "sel4.assertion",
        "sel4",
        Assert,
        r"^(?P<msg>seL4 failed assertion '.*' at \S+:\d+ in function \w+.*)$",
    ),
    re("sel4.fail", "sel4", Crash, r"^(?P<msg>seL4 called fail at \S+:\d+ in function \w+.*)$"),
    // SerenityOS's and WebKit's kernel or library assertion (`ASSERTION FAILED: handler`), before
    // the panic it leads to.
    re("kernel.assertion_failed", "kernel", Assert, r"(?:^|\]: )(?P<msg>ASSERTION FAILED: .+)$"),
    re("twister.failed", "twister", TestFailure, r"\sFAILED\s*:\s*(?P<msg>[^\d\s].*)$").weight(1),
    // Arm's PSA architecture tests' suite report.
    re("psa.none_failed", "psa-arch-tests", Pass, r"^(?P<msg>TOTAL FAILED\s*:\s*0)$").verdict(),
    re(
        "psa.failed",
        "psa-arch-tests",
        TestFailure,
        r"^(?P<msg>TOTAL FAILED\s*:\s*[1-9]\d*)$",
    )
    .verdict(),
    // Newer twister: the status, then its reason without a colon (`FAILED Console Failed`, the
    // harness named), and its debug log's `run status: <test> failed`.
    re(
        "twister.failed_reason",
        "twister",
        TestFailure,
        r"(?:\sFAILED |\brun status: \S+ )(?P<msg>(?:(?:\w+ )?Failed|Exception|Testsuite mismatch|Test suite mismatch)\b.*|failed$)",
    )
    .weight(1),
    // Tasmota's Wi-Fi status lines (`00:00:07 WIF: Connect failed as AP cannot be reached`,
    // then the next access point): the firmware's own retries, no failure of the run.
    noise(
        "tasmota.wifi_status",
        "tasmota",
        r"^(?:\d\d:\d\d:\d\d(?:\.\d+)? )?WIF: (?:Checking connection\.\.\.|Attempting connection\.\.\.|Connect failed (?:as AP cannot be reached|with AP (?:incorrect password|timeout|failure))|Connecting to AP\d? .*\.\.\.|Patch issue \d+|Connected|WifiManager active for \d+ minutes)$",
    ),
    // twister starting the next test instance: what the log shows after it is that test's
    // outcome, not the one before.
    noise(
        "twister.next_step",
        "twister",
        r"^(?:.*\btwister - DEBUG - |DEBUG\s+- )?(?:run test: \S+|Flash command: \[.*)$",
    )
    .starts_step(),
    re(
        "twister.passed",
        "twister",
        Pass,
        r"(?P<msg>\sPASSED \((?:device|qemu|native|\w+ [\d.]+s)\b.*|\brun status: \S+ passed\b.*)$",
    )
    .verdict(),
    // twister's closing list of what went wrong (`1) drivers.timer.system_clock on
    // qemu_rx/r5f562n8 (zephyr/gnu) failed (Timeout)`): each entry a test instance and why.
    re(
        "twister.issue_timeout",
        "twister",
        Hang,
        r"^(?:INFO\s+- )?\d+\) (?P<msg>\S+ on \S+(?: \([^)]*\))? (?:failed|error) \(Timeout\))$",
    )
    .weight(2),
    re(
        "twister.issue_failed",
        "twister",
        TestFailure,
        r"^(?:INFO\s+- )?\d+\) (?P<msg>\S+ on \S+(?: \([^)]*\))? failed \(Failed\))$",
    )
    .weight(2),
    // twister's QEMU handler closing one test instance that passed (`QEMU (2771557) complete
    // (passed) after 2.08 seconds`, newer `complete with passed`): not the run's verdict, which
    // other instances may fail or hang.
    re(
        "twister.qemu_passed",
        "twister",
        Pass,
        r"\b(?P<msg>QEMU \(\d+\) complete (?:\(passed\)|with passed\b).*)$",
    ),
    re(
        "greentea.timeout",
        "greentea",
        Hang,
        r"(?P<msg>\{\{result;timeout\}\}|(?:stopped and )?returned 'TIMEOUT'|test suite '[^']+' \.+ TIMEOUT\b.*|\|\s*TIMEOUT\s*\|)",
    ),
    // OpenHTF's closing line (`Finishing test execution with outcome PASS.`). Its `ERROR`
    // (a phase raised) and `ABORTED` (the operator stopped the run) are no test's verdict.
    re(
        "openhtf.outcome_pass",
        "openhtf",
        Pass,
        r"^(?P<msg>Finishing test execution with outcome PASS\.?)$",
    )
    .verdict(),
    re(
        "openhtf.outcome_fail",
        "openhtf",
        TestFailure,
        r"^(?P<msg>Finishing test execution with outcome FAIL\.?)$",
    )
    .verdict(),
    // A shell-script test runner's row for a script that failed (MicroPython's mpremote tests:
    // `./test_filesystem.sh: FAIL`).
    re("script_tests.fail", "tests", TestFailure, r"^(?P<msg>\S+\.sh: FAIL)$").weight(2),
    // Perl's Test::More (op-test's TAP output): `#   Failed test 'name'`.
    re("tap.failed_test", "tap", TestFailure, r"^#\s+(?P<msg>Failed test '[^']*')$"),
    // CUnit's basic interface listing an assertion that failed (`1. tests/x_test.c:113  -
    // CU_ASSERT_EQUAL(a,b)`), under `Suite S, Test T had failures:`.
    re(
        "cunit.failure",
        "cunit",
        TestFailure,
        r"^\d+\. (?P<msg>\S+\.(?:c|cc|cpp):\d+  - .+)$",
    )
    .weight(2),
    // Genode's depot_autopilot result row (`test-timer    failed   4300.890  timeout 30 sec`).
    re(
        "genode.test_timeout",
        "genode",
        Hang,
        r"\[init -> depot_autopilot\]\s+(?P<msg>[\w.-]+\s+failed\s+[\d.]+\s+timeout \d+ sec)\s*$",
    )
    .weight(2),
    re(
        "genode.test_failed",
        "genode",
        TestFailure,
        r"\[init -> depot_autopilot\]\s+(?P<msg>[\w.-]+\s+failed\s+[\d.]+\s+\S.*)$",
    )
    .weight(2),
    // wolfCrypt's self-test (`RSA      test failed!`, then ` error = -7463`; `passed!` for each
    // algorithm that passed), its names padded to eight characters: a board's `DRAM test
    // failed!` is not it.
    re(
        "wolfcrypt.test_failed",
        "wolfcrypt",
        TestFailure,
        r"^(?P<msg>[\w/-][\w/ -]{7,} test failed!)$",
    )
    .weight(2),
    re(
        "wolfcrypt.test_passed",
        "wolfcrypt",
        Pass,
        r"^(?P<msg>[\w/-][\w/ -]{7,} test passed!)$",
    )
    .weight(1),
    // libmodbus's unit tests (`- modbus_read_registers at special address: FAILED`, `2/2
    // modbus_read_bits: FAILED (nb points -1)`).
    re(
        "libmodbus.test_failed",
        "libmodbus",
        TestFailure,
        r"^(?:\d+/\d+ |[-*] )?(?P<msg>modbus_\w+[^:]*: FAILED\b.*)$",
    )
    .weight(2),
    // riscv-tests' debug suite run by gdbserver.py (`[DebugBreakpoint] exception in 0.26s`): a
    // test that failed or raised; `pass` and `not_applicable` are not failures.
    re(
        "gdbserver_py.test_failed",
        "riscv-tests",
        TestFailure,
        r"^(?P<msg>\[\w+\] (?:fail|exception) in [\d.]+s)$",
    )
    .weight(2),
    // LiteX's BIOS testing the board's memory at boot (`Memtest KO`, MiSoC's `Memtest failed:
    // 8191/532480 words incorrect`).
    re(
        "litex.memtest_failed",
        "litex",
        TestFailure,
        r"^(?P<msg>Memtest KO|Memtest failed: \d+/\d+ words incorrect)$",
    )
    .weight(2),
    // cmockery's failed check: `ERROR: test.c:123 Failure!`.
    re("cmockery.failure", "cmockery", TestFailure, r"^ERROR: (?P<msg>\S+:\d+ Failure!)$"),
    // A testbench's driver that stopped waiting for the firmware's verdict (CEP's `C_ERROR:
    // Time out while waiting for Pass/Fail`).
    re(
        "testbench.verdict_timeout",
        "tests",
        Hang,
        r"\bC_ERROR: (?P<msg>Time out while waiting for Pass/Fail)\b",
    ),
    // Ceedling (Ruby) raising inside itself (`EXCEPTION: ArgumentError ==> wrong number of
    // arguments`): the harness broke, not the build. Only Ruby's own errors: a compiler's
    // failure comes as `EXCEPTION: ShellException ==> ...`.
    re("ceedling.exception", "ceedling", InfraError, r"^EXCEPTION: (?P<msg>\w*Error ==> .+)$"),
    // The older mbed host test protocol: the device ends its run with `{{success}}` or
    // `{{failure}}`, then `{{end}}`.
    re("mbed.host_test_success", "mbed", Pass, r"^\s*(?P<msg>\{\{success\}\})\s*$").verdict(),
    re("mbed.host_test_failure", "mbed", TestFailure, r"^\s*(?P<msg>\{\{failure\}\})\s*$").verdict(),
    re(
        "greentea.sync_failed",
        "greentea",
        InfraError,
        r"(?P<msg>\{\{result;sync_failed\}\}|stopped and returned 'SYNC_FAILED')",
    ),
    // greentea could not read the board's serial port or its disk (`mbedgt: test suite results:
    // 1 IOERR_SERIAL`, its table's `| IOERR_SERIAL |`): the lab failed, not the test.
    re(
        "greentea.ioerr_summary",
        "greentea",
        InfraError,
        r"(?P<msg>mbedgt: test suite results: .*\bIOERR_(?:SERIAL|DISK)\w*.*|\|\s*IOERR_(?:SERIAL|DISK)\w*\s*\|)",
    )
    .weight(2),
    // Robot Framework's console row for a test that failed, its message on the lines under it
    // (a timeout there is why it failed): before greentea's table rows, whose `| FAIL |` it
    // also ends in.
    re(
        "robot.case_fail",
        "robot",
        TestFailure,
        r"^(?P<msg>\S.*?)\s+\| FAIL \|$",
    )
    .weight(2),
    re(
        "greentea.fail",
        "greentea",
        TestFailure,
        r"(?P<msg>mbedgt: test case results: .*\b[1-9]\d* (?:FAIL|ERROR|CRASH)\b.*|mbedgt: test case summary: \d+ pass(?:es)?, [1-9]\d* failures?|\{\{result;failure\}\}|\|\s*FAIL\s*\|)",
    ),
    re(
        "greentea.suite_fail",
        "greentea",
        TestFailure,
        r"(?P<msg>mbedgt: test suite '[^']+' \.+ (?:FAIL|ERROR|CRASH)\b.*)$",
    )
    .verdict(),
    re("greentea.suite_ok", "greentea", Pass, r"(?P<msg>mbedgt: test suite '[^']+' \.+ OK\b.*)$")
        .verdict(),
    // A row of greentea's result table: the result, then the time it took. A table of such
    // rows is the run's result even when the excerpt lost the summary under it.
    re(
        "greentea.table_ok",
        "greentea",
        Pass,
        r"^\|.*\|\s*(?P<msg>OK)\s*\|\s*[\d.]+\s*\|",
    )
    .weight(2),
    re(
        "greentea.no_target",
        "greentea",
        InfraError,
        r"mbedgt: (?P<msg>no (?:platform/target matching tests|matching platforms|devices?) (?:(?:were|was) )?(?:found|detected)\b.*)$",
    )
    .weight(2),
    re(
        "greentea.exit_code",
        "greentea",
        InfraError,
        r"^mbedgt: (?P<msg>exited with code (?:-\d+|[1-9]\d*))\b",
    )
    .weight(1)
    .generic(),
    // mbedgt's line per test binary as it ends (`test 'mbed-drivers-test-rtc' .... FAIL in 1.39
    // sec`).
    re(
        "greentea.test_failed",
        "greentea",
        TestFailure,
        r"(?P<msg>test '[^']+' \.+ FAIL in [\d.]+ sec)$",
    )
    .weight(2),
    // RIOT's compile-and-test report listing each failed application's `test.failed` file.
    re(
        "riot.test_failed_list",
        "riot",
        TestFailure,
        r"^- \[(?P<msg>[^\]]+)\]\(\S+/test\.failed\)(?:\s.*)?$",
    )
    .weight(1),
    re(
        "greentea.pass",
        "greentea",
        Pass,
        r"(?P<msg>\{\{result;success\}\}|<greentea test suite>:\d+::PASS|\|\s*OK\s*\|)",
    )
    .weight(1),
    // ctest, Robot Framework, LAVA, Catch2, CppUTest, cargo test and PlatformIO's test runner:
    // each runner's own summary decides, whatever the board printed above it.
    re(
        "ctest.summary_fail",
        "ctest",
        TestFailure,
        prefixed!(r"(?P<msg>\d+% tests? passed, [1-9]\d* tests? failed out of \d+)"),
    )
    .verdict(),
    re(
        "ctest.summary_pass",
        "ctest",
        Pass,
        prefixed!(r"(?P<msg>100% tests? passed, 0 tests? failed out of [1-9]\d*)"),
    )
    .verdict(),
    re("ctest.failed_list", "ctest", TestFailure, r"^(?P<msg>The following tests FAILED:)$").weight(2),
    // A row of that list (`  5 - tst_ofdm_mod_plain (Failed)`), with or without its header.
    re("ctest.failed_test", "ctest", TestFailure, r"^\s*(?P<msg>\d+ - \S+ \(Failed\))$").weight(1),
    re("ctest.errors", "ctest", TestFailure, r"^(?P<msg>Errors while running CTest)$")
        .weight(1)
        .echo(),
    // Python's unittest: `Ran 12 tests in 0.031s`, then `OK` or `FAILED (failures=1)`.
    re("unittest.ran", "unittest", Pass, r"^(?P<msg>Ran \d+ tests? in [\d.]+s)$").weight(1),
    re("unittest.ok", "unittest", Pass, r"^(?P<msg>OK(?: \((?:skipped|expected failures)=\d+.*\))?)$")
        .verdict()
        .follows(&["unittest.ran"]),
    // unittest's heading for each test that failed or raised (`FAIL: test_x (pkg.Class)`).
    re(
        "unittest.case_failed",
        "unittest",
        TestFailure,
        r"^(?P<msg>(?:FAIL|ERROR): \w+ \([\w.]+\))$",
    )
    .weight(2),
    // CppUnit's, CuTest's and JUnit 3's text runners: `There was 1 failure:`, then each one.
    re(
        "xunit.there_were_failures",
        "xunit",
        TestFailure,
        r"^(?P<msg>There (?:was|were) \d+ (?:failures?|errors?):)$",
    )
    .verdict(),
    re(
        "unittest.failed",
        "unittest",
        TestFailure,
        r"^(?P<msg>FAILED \((?:failures|errors)=\d+.*\))$",
    )
    .verdict(),
    // A script that gave up waiting for the emulator or the board to come up.
    re(
        "script.boot_wait_timeout",
        "script",
        Hang,
        r"(?i)(?P<msg>timed out waiting for (?:qemu|the (?:board|target|device|dut) to (?:boot|come up|start))\b.*)$",
    ),
    re("ctest.timeout", "ctest", Hang, r"(?P<msg>Test +#\d+: \S+ \.*\s*\*\*\*Timeout\b.*)$"),
    re(
        "ctest.passed",
        "ctest",
        Pass,
        r"(?P<msg>Test +#\d+: \S+ \.*\s+Passed\s+[\d.]+ sec)$",
    )
    .weight(1),
    re(
        "ctest.failed",
        "ctest",
        TestFailure,
        r"(?P<msg>Test +#\d+: \S+ \.*\s*(?:(?:Child|Subprocess) aborted)?\*\*\*(?:Failed|Exception)\b.*)$",
    )
    .weight(1),
    // A test script's list with a bracketed status per check (`nonce2key test   [ FAIL ]`).
    re(
        "status_list.failed",
        "tests",
        TestFailure,
        r"^(?P<msg>\S.*?\s+\[ FAIL \]).*$",
    )
    .weight(2),
    // A results table in Markdown (`| board | PASS | **FAIL** |`), as test sweeps post them: a
    // cell that failed is a failed test.
    re(
        "markdown.table_fail",
        "table",
        TestFailure,
        r"^\|.*\|\s*(?P<msg>(?:\*\*|__)?(?:FAIL|FAILED|FAILURE|ERROR)(?:\*\*|__)?)\s*\|",
    )
    .weight(2),
    // Renode's robot runner, one line per test as it ends.
    re(
        "robot.test_failed",
        "robot",
        TestFailure,
        r"^\+{5} (?P<msg>Finished test '[^']+' in [\d.]+ seconds with status (?:failed|FAIL)\b.*)$",
    )
    .weight(2),
    re(
        "robot.test_ok",
        "robot",
        Pass,
        r"^\+{5} (?P<msg>Finished test '[^']+' in [\d.]+ seconds with status OK\b.*)$",
    )
    .weight(1),
    re("robot.timeout", "robot", Hang, r"(?P<msg>Test timeout .+ exceeded\.?)$"),
    // Robot's own setup, or a suite file it cannot read: the harness broke before any test ran,
    // so the FAIL under each test is its echo.
    re(
        "robot.setup_failed",
        "robot",
        InfraError,
        r"^(?P<msg>(?:Parent suite |Suite )?[Ss]etup failed:.*|\[ ERROR \] Error in file .+)$",
    ),
    re("robot.case_pass", "robot", Pass, r"^(?P<msg>\S.*?)\s+\| PASS \|$").weight(1),
    re(
        "robot.summary_fail",
        "robot",
        TestFailure,
        r"^(?P<msg>\d+ (?:critical )?tests?(?: total)?, \d+ passed, [1-9]\d* failed\b.*)$",
    )
    .verdict(),
    re(
        "robot.summary_pass",
        "robot",
        Pass,
        r"^(?P<msg>[1-9]\d* (?:critical )?tests?(?: total)?, \d+ passed, 0 failed\b.*)$",
    )
    .verdict(),
    // Robot's SSH and Telnet libraries with no connection to the device: the lab lost the
    // board, so the FAILs around it are its echo.
    re(
        "robot.no_connection",
        "robot",
        InfraError,
        r"^(?:\d+\) )?(?P<msg>No connection open\.?)$",
    ),
    // Robot's serial and Telnet libraries giving up on the output a test waited for (`No
    // match found for '.cpio.gz' in 5 minutes.`): the device never printed it, a hang.
    re(
        "robot.read_timeout",
        "robot",
        Hang,
        r"^(?P<msg>No match found for '.*' in \d+ (?:minutes?|seconds?)\..*)$",
    ),
    // Mbed's singletest rows (`TargetTest::LPC1768::GCC_ARM::MBED_A1::Basic [TIMEOUT] in 20.02
    // of 10 sec`).
    re(
        "mbed.singletest_timeout",
        "mbed",
        Hang,
        r"^TargetTest::.+? (?P<msg>\[TIMEOUT\] in [\d.]+ of [\d.]+ sec)",
    ),
    re(
        "mbed.singletest_failed",
        "mbed",
        TestFailure,
        r"^TargetTest::.+? (?P<msg>\[(?:FAIL|ERROR)\] in [\d.]+ of [\d.]+ sec)",
    )
    .weight(2),
    // The same results in singletest's closing table (` TIMEOUT | NUCLEO_F746ZG | ARM | MBED_11
    // | Ticker Int | 30.38 | 15 | 0/1 |`).
    re(
        "mbed.singletest_table_timeout",
        "mbed",
        Hang,
        r"^\s*(?P<msg>TIMEOUT \| [\w-]+ \| \w+ \| \w+ \| .*)$",
    ),
    re(
        "mbed.singletest_table_failed",
        "mbed",
        TestFailure,
        r"^\s*(?P<msg>(?:FAIL|ERROR) \| [\w-]+ \| \w+ \| \w+ \| .*)$",
    )
    .weight(2),
    re(
        "mbed.singletest_ok",
        "mbed",
        Pass,
        r"^TargetTest::.+? (?P<msg>\[OK\] in [\d.]+ of [\d.]+ sec)",
    )
    .weight(1),
    // A pytest plugin's closing summary of test cases (Pelion's client tests: `INFO
    // [passed] - dev-client-tests.py::test_01_get_device_id - (0.938s)`): the run's verdict.
    re(
        "pytest.summary_case_failed",
        "pytest",
        TestFailure,
        r"(?P<msg>\[failed\] - \S+\.py::\S+) - \([\d.]+s\)$",
    )
    .weight(2),
    re(
        "pytest.summary_case_passed",
        "pytest",
        Pass,
        r"(?P<msg>\[passed\] - \S+\.py::\S+) - \([\d.]+s\)$",
    )
    .weight(1)
    .verdict(),
    // CmdMessenger's test summary (`Test sets failed: 4`).
    re(
        "test_sets.failed",
        "tests",
        TestFailure,
        r"^(?P<msg>Test sets failed: [1-9]\d*|Some test sets failed!*)$",
    )
    .verdict(),
    // Zephyr's flash shell test finishing (`Erase-Write-Verify test done.`).
    re(
        "zephyr.flash_test_done",
        "zephyr",
        Pass,
        r"^(?P<msg>Erase-Write-Verify test done\.)$",
    )
    .weight(2),
    // A self-test's report as JSON (`"fail_count": 14,`).
    re(
        "json.fail_count",
        "tests",
        TestFailure,
        r#"^"(?P<msg>fail(?:ed|ure)?_count": [1-9]\d*),?$"#,
    )
    .weight(2),
    // pyOCD's functional test table (`rp2040   Cortex Test   Fail   4.056`): a failed row; a
    // `Fail [ignored]` one is a known failure the run does not count.
    re(
        "pyocd.test_table_fail",
        "pyocd",
        TestFailure,
        r"^(?P<msg>\S+\s{2,}\S.*?\s{2,}Fail)\s{2,}[\d.]+\s*$",
    )
    .weight(2),
    // teleprobe (Embassy's hardware test runner) ending a test that ran out of time on the
    // board, whatever its client then reports.
    re(
        "teleprobe.deadline",
        "teleprobe",
        Hang,
        r"^(?:WARN - )?(?P<msg>Deadline exceeded!?)$",
    ),
    // sof-test's closing verdict (`2022-02-10 00:33:03 UTC [INFO] Test Result: PASS!`).
    re(
        "sof_test.result_fail",
        "sof-test",
        TestFailure,
        r"\[(?:REMOTE_)?INFO\] (?P<msg>Test Result: FAIL!?)$",
    )
    .verdict(),
    re(
        "sof_test.result_pass",
        "sof-test",
        Pass,
        r"\[(?:REMOTE_)?INFO\] (?P<msg>Test Result: PASS!?)$",
    )
    .verdict(),
    re(
        "lava.testcase_fail",
        "lava",
        TestFailure,
        r"(?P<msg><LAVA_SIGNAL_TESTCASE TEST_CASE_ID=\S+ RESULT=fail\b[^>]*>|lava-test-case \S+ --result fail\b.*)",
    )
    .weight(2),
    re(
        "lava.testcase_pass",
        "lava",
        Pass,
        r"(?P<msg><LAVA_SIGNAL_TESTCASE TEST_CASE_ID=\S+ RESULT=pass\b[^>]*>|lava-test-case \S+ --result pass\b.*)",
    )
    .weight(1),
    re(
        "catch2.summary_fail",
        "catch2",
        TestFailure,
        r"^(?P<msg>test cases:\s+\d+ \|\s+(?:\d+ passed \|\s+)?[1-9]\d* failed\b.*)$",
    )
    .verdict(),
    re("catch2.summary_pass", "catch2", Pass, r"^(?P<msg>All tests passed \(.*\))$").verdict(),
    re(
        "cpputest.summary_fail",
        "cpputest",
        TestFailure,
        r"^(?P<msg>Errors \([1-9]\d* failures?, \d+ tests?, .*\))$",
    )
    .verdict(),
    // CppUTest's failure line has a compiler diagnostic's `file:line:` shape.
    re(
        "cpputest.failure",
        "cpputest",
        TestFailure,
        r"(?P<msg>\S+:\d+: (?:error: )?Failure in TEST\(.*)$",
    )
    .weight(2),
    re("cpputest.summary_pass", "cpputest", Pass, r"^(?P<msg>OK \(\d+ tests?, \d+ ran, .*\))$")
        .verdict(),
    // Automake's `make check` summary (`# TOTAL: 2`, `# PASS: 1`, ..., `# FAIL: 1`), which
    // the test suites of C libraries built with autotools print.
    re(
        "automake.summary_fail",
        "automake",
        TestFailure,
        r"^# (?P<msg>(?:FAIL|XPASS|ERROR):\s+[1-9]\d*)$",
    )
    .verdict(),
    re("automake.summary_pass", "automake", Pass, r"^# (?P<msg>FAIL:\s+0)$").verdict(),
    // A CI's tally of jobs or tests (RIOT's Murdock: `--- run_test job results (3 failed, 71
    // passed, 74 total):`; Jest-style `Tests: 1 failed, 5 passed, 6 total`).
    re(
        "ci.test_tally_fail",
        "ci",
        TestFailure,
        r"^(?:-+ )?(?:\w*test\w* job results \(|Tests:\s+)(?P<msg>[1-9]\d* failed, \d+ passed, \d+ total)\b",
    )
    .verdict(),
    // embedded-test's runner waiting on a target that never listed its tests: the firmware
    // stopped before its harness ran, so the run hung (cargo's `test failed` after it is echo).
    re(
        "embedded_test.no_response",
        "embedded-test",
        Hang,
        r"^(?:Error: )?(?P<msg>The target did not respond with test list until timeout\.?)$",
    ),
    // cargo test's own closing error: one test target failed, or several with --no-fail-fast.
    re(
        "cargo.test_target_failed",
        "cargo",
        TestFailure,
        r"^error: (?P<msg>test failed, to rerun pass .*|[1-9]\d* targets? failed:)$",
    )
    .weight(2),
    re(
        "cargo.test_failed",
        "cargo",
        TestFailure,
        r"^(?P<msg>test result: FAILED\. \d+ passed; [1-9]\d* failed.*)$",
    )
    .verdict(),
    re("cargo.test_ok", "cargo", Pass, r"^(?P<msg>test result: ok\. \d+ passed; 0 failed.*)$")
        .verdict(),
    // A log record (`ERROR probe_rs::util::rtt: ...`, a Rust module path) that the host tool
    // printed onto a test's line before its outcome: not the outcome, which follows.
    noise(
        "libtest.log_record_in_case",
        "cargo",
        r"^test \S+\s+\.\.\. ERROR [a-z_]\w*(?:::\w+)+:",
    ),
    // libtest's line per test when it fails (`test tests::x ... FAILED`; embedded-test prints
    // `... ERROR` and then the panic that failed it).
    re(
        "libtest.case_failed",
        "cargo",
        TestFailure,
        r"^test (?P<msg>\S+\s+\.\.\. (?:FAILED|ERROR)\b.*)$",
    )
    .weight(2),
    re(
        "platformio.test_fail",
        "platformio",
        TestFailure,
        r"(?P<msg>\d+ test cases: [1-9]\d* failed\b.*)$",
    )
    .verdict(),
    re(
        "platformio.test_pass",
        "platformio",
        Pass,
        r"(?P<msg>\d+ test cases: (?:\d+ skipped, )?\d+ succeeded in .*)$",
    )
    .verdict(),
    // PlatformIO 6 rewrites each test case's line with its status in brackets, and ends with
    // a table of environments and tests (its summary: one row per test).
    re("platformio.case_failed", "platformio", TestFailure, r"^(?P<msg>\S+:\d+:.*?)\s+\[FAILED\]$")
        .weight(2),
    re("platformio.case_passed", "platformio", Pass, r"^(?P<msg>\S+:\d+:.*?)\s+\[PASSED\]$")
        .weight(1),
    // avrdude's read-back mismatch inside a pasted log a forum flattened into one line: it
    // comes before the build's size report, which such a line starts with.
    re(
        "avrdude.mismatch_mid_line",
        "avrdude",
        FlashError,
        r"\bavrdude(?:\.exe)?: (?P<msg>verification error, first mismatch at byte 0x[0-9A-Fa-f]+.*)$",
    ),
    // A build that ends in its tool's own success (`pio run`'s closing line, with or without its
    // rule of `=`, ESP-IDF's `Project
    // build complete.`, Eclipse CDT's `Build Finished`, the Arduino IDE's size report after a
    // compile, `Sketch uses 5432 bytes (2%) of program storage space.`, Mbed CLI's `Image:
    // BUILD/K64F/GCC_ARM/app.bin` under its memory map): nothing failed. Any failure a later
    // line shows ranks above it.
    re(
        "build.succeeded",
        "platformio",
        Pass,
        r#"^(?:\d\d:\d\d:\d\d )?(?P<msg>=+ (?:\[SUCCESS\] Took [\d.]+ seconds|\d+ succeeded in [\d:.]+) =+|\[SUCCESS\] Took [\d.]+ seconds|Project build complete\..*|Build Finished(?:\. 0 errors, \d+ warnings\.)? \(took [^)]*\)|Sketch uses [\d,.]+ bytes \(\d+%\) of program storage space\..*|"[^"]+" - 0 Error\(s\), \d+ Warning\(s\)\.|\[100%\] Built target \S+|Image: \S+\.(?:bin|hex)|Memory Usage on Teensy \S+:|Finished building target: \S+|scons: done building targets\.|Finished: \d+ information, \d+ warnings? and 0 error messages\.|Creating load file for Flash: \S+\s+\[OK\])$"#,
    )
    .weight(2),
    // waf's summary after a build it finished (ArduPilot's `BUILD SUMMARY`, then `Build
    // directory: ...` and each target's sizes): printed only once every target built. The
    // header alone is any script's.
    re("waf.build_summary_header", "waf", Pass, r"^(?P<msg>BUILD SUMMARY)$").weight(1),
    re("waf.build_summary", "waf", Pass, r"^(?P<msg>Build directory: \S+)$")
        .weight(2)
        .follows(&["waf.build_summary_header"]),
    // binutils' `size` row for the linked image (`212320  5560  40868  258748  3f2bc
    // ./obj/main/inav_REVO.elf`): the link finished.
    re(
        "build.size_report",
        "size",
        Pass,
        r"^\s*\d+\s+\d+\s+\d+\s+\d+\s+[0-9a-fA-F]+\s+(?P<msg>\S+\.(?:elf|axf|out))$",
    )
    .weight(2),
    // `pio run`'s closing line (older versions': `[ERROR] Took 1.63 seconds`) and its table of
    // environments: the step failed, not why.
    re(
        "platformio.env_failed",
        "platformio",
        BuildError,
        r"^(?P<msg>=+ \[(?:FAILED|ERROR)\] Took [\d.]+ seconds =+|\[(?:FAILED|ERROR)\] Took [\d.]+ seconds|\S+\s+FAILED\s+\d\d:\d\d:\d\d\.\d+)$",
    )
    .weight(1)
    .echo(),
    re(
        "platformio.table_failed",
        "platformio",
        TestFailure,
        r"^(?P<msg>\S+\s+\S+\s+(?:FAILED|ERRORED))\s+\d\d:\d\d:\d\d\.\d+$",
    )
    .verdict(),
    re(
        "platformio.table_passed",
        "platformio",
        Pass,
        r"^(?P<msg>\S+\s+\S+\s+PASSED)\s+\d\d:\d\d:\d\d\.\d+$",
    )
    .weight(1)
    .verdict(),
    re("ceedling.failed", "ceedling", TestFailure, r"^(?P<msg>FAILED:\s+[1-9]\d*)$").verdict(),
    re("ceedling.passed", "ceedling", Pass, r"^(?P<msg>FAILED:\s+0)$").verdict(),
    re("ceedling.test_failures", "ceedling", TestFailure, r"^(?P<msg>Unit test failures\.)$").verdict(),
    // Its failure right after a test executable the shell could not find: the harness's.
    re(
        "ceedling.missing_executable_failed",
        "ceedling",
        InfraError,
        r"^ERROR: (?P<msg>Test executable \S+ failed\.)$",
    )
    .follows(&["ceedling.executable_missing"]),
    re(
        "ceedling.test_crashed",
        "ceedling",
        Crash,
        prefixed!(
            r"ERROR: (?P<msg>Internal sanity check for test fixture .*|Test executable \S+ (?:failed\.|seems to have crashed\b).*)$"
        ),
    ),
    re("ceedling.no_file", "ceedling", BuildError, r"^ERROR: (?P<msg>Found no file .*)$"),
    re(
        "ceedling.shell_failed",
        "ceedling",
        BuildError,
        r"(?P<msg>ERROR: Shell command failed\.|ShellExecutionException|ERROR: Ceedling Failed)",
    )
    .weight(1)
    .echo(),
    // gtest's summary, and cmocka's in gtest's shape (`[  FAILED  ] group: 1 test(s), listed
    // below:`).
    re(
        "gtest.failed",
        "gtest",
        TestFailure,
        r"^\[\s+FAILED\s+\] (?P<msg>(?:\S+: )?[1-9]\d* tests?\b.*)$",
    )
    .verdict(),
    re("gtest.passed", "gtest", Pass, r"^\[\s+FAILED\s+\] (?P<msg>0 tests\.?)$").verdict(),
    // gtest's count of passed tests; a `[  FAILED  ]` summary, when some failed, comes after it.
    re("gtest.all_passed", "gtest", Pass, r"^\[\s+PASSED\s+\] (?P<msg>[1-9]\d* tests?\.)$").weight(2),
    // cmocka's failed check (`[   LINE   ] --- file.c:42: error: Failure!`, in a compiler
    // diagnostic's shape) and its closing count.
    re(
        "cmocka.failure",
        "cmocka",
        TestFailure,
        r"^\[\s+LINE\s+\] --- (?P<msg>\S.*:\d+: (?:error: )?Failure!)$",
    )
    .weight(2),
    re("cmocka.failed_count", "cmocka", TestFailure, r"^\s*(?P<msg>[1-9]\d* FAILED TEST\(S\))$")
        .verdict(),
    // CMock's failed expectation about calls to a mock (`Function foo.  Called more times than
    // expected.`), as Unity's failure message or alone.
    re(
        "cmock.call_count",
        "cmock",
        TestFailure,
        r"(?P<msg>(?:Function \w+\.\s+)?Called (?:more times|fewer times|less times|earlier|later) than expected\..*)$",
    )
    .weight(2),
    // Catch2's failed assertion: `file:line: FAILED:` (or `file(line): FAILED:`), the
    // expression on the lines below.
    re(
        "catch2.assertion_failed",
        "catch2",
        TestFailure,
        prefixed!(r"(?P<msg>\S+(?::\d+|\(\d+\)): FAILED:)$"),
    )
    .weight(2),
    // ArduinoUnit's and AUnit's failed assertion (`Assertion failed: (a=1) == (b=2), file
    // x.ino, line 12.`, AUnit's `x.ino:12: Assertion failed: (3) == (2).`), a test framework's
    // check rather than the firmware's assert, and their closing summaries (AUnit's `TestRunner
    // summary: 1 passed, 1 failed, 0 skipped, 0 timed out, out of 2 test(s).`, ArduinoUnit's
    // oldest `Tests run: 1 Successful: 1 Failed: 0`).
    re(
        "arduinounit.assertion",
        "arduinounit",
        TestFailure,
        r"^(?:\S+:\d+: )?(?P<msg>Assertion failed: \(.*\) \S+ \(.*\)(?:, file \S+, line \d+)?\.?)$",
    )
    .weight(2),
    // AUnit's summary with tests that timed out and none that failed: the run hung.
    re(
        "aunit.summary_timed_out",
        "aunit",
        Hang,
        r"^(?P<msg>TestRunner summary: \d+ passed, 0 failed, \d+ skipped, [1-9]\d* timed out, out of \d+ test\(s\)\.?)",
    )
    .verdict(),
    re(
        "arduinounit.summary_fail",
        "arduinounit",
        TestFailure,
        r"^(?P<msg>Test summary: \d+ passed, [1-9]\d* failed, and \d+ skipped, out of \d+ test\(s\)\.?|Tests run: \d+ Successful: \d+ Failed: [1-9]\d*|TestRunner summary: \d+ passed, (?:[1-9]\d* failed, \d+ skipped, \d+|\d+ failed, \d+ skipped, [1-9]\d*) timed out, out of \d+ test\(s\)\.?)",
    )
    .verdict(),
    re(
        "arduinounit.summary_pass",
        "arduinounit",
        Pass,
        r"^(?P<msg>Test summary: [1-9]\d* passed, 0 failed, and \d+ skipped, out of \d+ test\(s\)\.?|Tests run: [1-9]\d* Successful: [1-9]\d* Failed: 0|TestRunner summary: [1-9]\d* passed, 0 failed, \d+ skipped, 0 timed out, out of \d+ test\(s\)\.?)",
    )
    .verdict(),
    // AUnit's line per test as it ends (`Test exampleTest2 failed.`).
    re("aunit.test_failed", "aunit", TestFailure, r"^(?P<msg>Test \S+ failed\.)$").weight(2),
    // MicroPython's run-tests: `FAIL  basics/x.py` per test, then `12 tests performed (345
    // individual testcases)` (on a board, just `4 tests performed`), `11 tests passed`, `1
    // tests failed: x`.
    re("micropython.test_failed", "micropython", TestFailure, r"^(?P<msg>FAIL  \S+\.py)$").weight(2),
    // MicroPython's run-multitests: `multi_net/tcp_data.py on instance0|instance1: FAIL`.
    re(
        "micropython.multitest_failed",
        "micropython",
        TestFailure,
        r"^(?P<msg>\S+\.py on \S+: FAIL)$",
    )
    .weight(2),
    // The Test Anything Protocol, as embedded test runners print it: `not ok 2 - spiTxRx`, the
    // failure of one test (a `# TODO` or `# SKIP` one is none).
    noise("tap.not_ok_directive", "tap", r"^not ok \d+\b.*#\s*(?i:TODO|SKIP)\b"),
    re("tap.not_ok", "tap", TestFailure, r"^(?P<msg>not ok \d+\b.*)$").weight(2),
    // The same behind docker compose's service column and a runner's stamps (`client-1  |
    // [2024-07-05T20:50:39.141Z][worker-os]   not ok 7 - ...`).
    re(
        "tap.not_ok_in_service",
        "tap",
        TestFailure,
        r"^\S+\s+\|\s+(?:\[[^\]]*\])*\s*(?P<msg>not ok \d+ - .*)$",
    )
    .weight(2),
    // A result printed as a keyword argument (`UCS7604 leds=1 passed=False bytes=12`).
    re("result.passed_false", "test", TestFailure, r"(?P<msg>.*\bpassed=False\b.*)$").weight(2),
    re(
        "micropython.performed",
        "micropython",
        Pass,
        r"^(?P<msg>\d+ tests performed(?: \(\d+ individual testcases\))?)$",
    )
    .weight(1),
    re("micropython.passed", "micropython", Pass, r"^(?P<msg>[1-9]\d* tests passed)$")
        .verdict()
        .follows(&["micropython.performed"]),
    re("micropython.failed", "micropython", TestFailure, r"^(?P<msg>[1-9]\d* tests? failed: .+)$")
        .verdict(),
    // Mbed TLS's test suites and scripts: a name, a dot leader and the result
    // (`test_suite_ssl ........ PASS`, a case's `...... FAILED` after its own debug output,
    // OpenMV's `Unittest (12-find_line_segments.py).......FAILED` with no blank before the
    // dots), and run-test-suites' closing line.
    re(
        "dot_leader.failed",
        "mbedtls",
        TestFailure,
        r"^(?P<msg>\S.*?(?:\s\.{3,}|[^.\s]\.{5,})\s*[-\d]*(?:FAIL|FAILED))\s*$",
    )
    .weight(2),
    re("dot_leader.passed", "mbedtls", Pass, r"^\S.*?(?:\s\.{3,}|[^.\s]\.{5,})\s*[-\d]*(?P<msg>PASS(?:ED)?)\s*$")
        .weight(1),
    re(
        "mbedtls.suites_failed",
        "mbedtls",
        TestFailure,
        r"^(?P<msg>FAILED \(\d+ suites, \d+ tests run\))$",
    )
    .verdict(),
    re(
        "mbedtls.suites_passed",
        "mbedtls",
        Pass,
        r"^(?P<msg>PASSED \(\d+ suites, \d+ tests run\))$",
    )
    .verdict(),
    // Cooja's test script, stopped by its own timeout before the test said whether it passed.
    re("cooja.timeout", "cooja", Hang, r"^(?P<msg>TEST TIMEOUT)$"),
    // OP-TEE's expect scripts (`make check`) when a test does not finish in time.
    re(
        "optee.check_timeout",
        "op-tee",
        Hang,
        r"^(?P<msg>!!! Timeout\b.*|TIMEOUT - test case too long or hung\?.*)$",
    ),
    // ArduPilot's autotest closing a step (`>>>> PASSED STEP: test.Helicopter at Mon May 29
    // 14:51:13 2023`).
    re("ardupilot.step_passed", "ardupilot", Pass, r"^>>>> (?P<msg>PASSED STEP: \S+).*$").weight(2),
    re("ardupilot.step_failed", "ardupilot", TestFailure, r"^>>>> (?P<msg>FAILED STEP: \S+.*)$"),
    // Mongoose's unit tests (`FAILURE test/unit_test.c:677: ok == 200`).
    re("mongoose.test_failure", "mongoose", TestFailure, r"^FAILURE (?P<msg>\S+\.c:\d+: .+)$"),
    // ArduPilot's autotest catching the exception that ended a test step.
    re(
        "ardupilot.autotest_exception",
        "ardupilot",
        TestFailure,
        r"^AUTOTEST: (?P<msg>Exception caught: .*)$",
    )
    .weight(2),
    re(
        "pytest.summary_fail",
        "pytest",
        TestFailure,
        r"^=+ (?P<msg>(?:\d+ \w+, )*\d+ (?:failed|errors?)\b.*) in [\d.]+s(?: \([^)]*\))? =+$",
    )
    .verdict(),
    re(
        "pytest.summary_pass",
        "pytest",
        Pass,
        r"^=+ (?P<msg>\d+ passed(?:, \d+ (?:skipped|deselected|xfailed|xpassed|warnings?))*) in [\d.]+s(?: \([^)]*\))? =+$",
    )
    .verdict(),
    re("pytest.failures", "pytest", TestFailure, r"^=+ (?P<msg>FAILURES) =+$").weight(2),
    re(
        "pytest.setup_error",
        "pytest",
        InfraError,
        r"^_{3,} (?P<msg>ERROR at (?:setup|teardown) of \S+) _{3,}$",
    ),
    re("pytest.failure_section", "pytest", TestFailure, r"^_{3,} (?P<msg>[\w.:\[\]-]+) _{3,}$")
        .weight(1),
    // A test that failed because its expect timed out: the run hung, whatever pytest counts.
    re(
        "pytest.failed_timeout",
        "pytest",
        Hang,
        r"^(?P<msg>FAILED \S+::\S+ - (?:pexpect\.\w+\.)?TIMEOUT\b.*)$",
    ),
    // pytest's progress row of a test file with a failed test in it (`tests/test_x.py .F.  [ 7%]`):
    // a run cut before its summary has failed all the same.
    re(
        "pytest.progress_failed",
        "pytest",
        TestFailure,
        r"^(?P<msg>\S+\.py [.sxXE]*F[.sxXFE]*)\s+\[\s*\d+%\]$",
    )
    .weight(2),
    re("pytest.failed", "pytest", TestFailure, r"^(?P<msg>FAILED \S+::\S+.*)$").weight(1),
    // pytest's verbose row of a failed test (`test_example/test_example.py::test_hello FAILED
    // [  0%]`): a run cut before its summary has failed all the same.
    re(
        "pytest.verbose_failed",
        "pytest",
        TestFailure,
        r"^(?P<msg>\S+\.py::\S+ FAILED)\s+\[\s*\d+%\]$",
    )
    .weight(2),
    // A serial device that is not there, opened by a harness or a script (pytest-embedded's
    // `E  FileNotFoundError: [Errno 2] No such file or directory: '/dev/ttyUSB100'`): the lab's
    // port, or the flasher's upload port in a flash's log.
    re(
        "serial.missing_device",
        "serial",
        InfraError,
        r#"(?P<msg>\w*Error: \[Errno 2\] No such file or directory: ['"](?:/dev/(?:tty|cu\.|serial/)\S*|COM\d+)['"])$"#,
    )
    .yields_to_context(),
    // GoogleTest's failed check (`controller/test/SensorTests.cpp:147: Failure`).
    re(
        "gtest.failure",
        "gtest",
        TestFailure,
        r"^(?P<msg>\S+\.(?:cpp|cc|cxx|c|hpp|h):\d+: Failure)$",
    )
    .weight(2),
    // greentea's row of a test the host could not talk to (`test 'x' .....  IOERR_SERIAL in
    // 17.09 sec`; older versions leave out the time): the lab's serial link or disk.
    // (`IOERR_COPY`, the image not copied to the board's drive, is a flash's.)
    re(
        "greentea.ioerr",
        "greentea",
        InfraError,
        r"^test '[^']+' \.{3,}\s+(?P<msg>IOERR_(?:SERIAL|DISK)\w*)(?: in [\d.]+ sec)?$",
    )
    .weight(2),
    // A test framework's expect that never saw its prompt (`Prompt 'root@x:~#' not found in
    // 30 seconds.`): the device hung.
    re("expect.prompt_timeout", "robot", Hang, r"^(?P<msg>Prompt '.*' not found in \d+ seconds\.?)$"),
    // A test script's simulator (a Java one, Cooja's) that aborted or faulted: the harness's.
    // (`Killed` is a kill from outside: a timeout's or someone's.)
    re(
        "script.java_killed",
        "sh",
        InfraError,
        r"\b(?P<msg>line \d+:\s+\d+ (?:Aborted|Segmentation fault)\s+(?:\(core dumped\)\s+)?java\b.*)$",
    )
    .weight(2),
    // ArduPilot SITL's own handler for a floating point exception, and dronekit-sitl's report of
    // one that ended the SITL binary.
    re(
        "ardupilot.fpe",
        "ardupilot",
        Crash,
        r"^(?:ERROR: )?(?P<msg>Floating point exception - aborting)$|^ERROR: Floating point exception$",
    ),
    // A test tool's closing result line (`RESULT: watchdog soak PASS (ack, ...)`).
    re("result.pass", "any", Pass, r"\bRESULT: (?P<msg>[^`]*\bPASS\b[^`]*)").weight(2).verdict(),
    // A test script's closing count of its checks (`monitor_test: OK (25 checks, 107s)`).
    re("checks.ok", "any", Pass, r"^(?P<msg>[\w.-]+: OK \(\d+ checks?, [\d.]+s\))$")
        .weight(2)
        .verdict(),
    // go test's package line (`ok  	crypto/md5	0.002s`, `FAIL	crypto/md5	0.1s`).
    re("go_test.ok", "go", Pass, r"^(?P<msg>ok\s+\S+\s+[\d.]+s)$").weight(2).verdict(),
    // A minimal C library's assert (`assert: 'e' failed`, a serial terminal's ␍␊ after it).
    re("libc.assert_quoted", "libc", Assert, prefixed!(r"(?P<msg>assert: '.+' failed)\b")),
    // pytest's rewritten assertion under a failing test (`E       assert 72.02 <= 60`).
    re("pytest.assert_detail", "pytest", TestFailure, r"^E {3,}(?P<msg>assert .+)$").weight(2),
    // A test pytest-timeout stopped (`ERROR tests/x.py::test_y - Failed: Timeout (>600.0s) from
    // pytest-timeout.`): the run hung, whatever pytest counts it as.
    re(
        "pytest.timeout_row",
        "pytest",
        Hang,
        r"^(?:ERROR|FAILED) (?P<msg>\S+::\S+ - Failed: Timeout \(>[\d.]+s\) from pytest-timeout)\.?$",
    ),
    // The exception pytest quotes under a failing test (`E       AssertionError: ...`); the
    // rules above see a pexpect timeout or a serial port's failure in it first.
    re(
        "pytest.exception",
        "pytest",
        TestFailure,
        r"^E {3,}(?P<msg>(?:\w+\.)*\w*(?:Error|Exception)\b.*)$",
    )
    .weight(1),
    // pytest's location line under a traceback whose last frame is a lab tool's or harness's
    // own code (`.../labgrid/target.py:35: OSError`): the exception came from the harness, not
    // from a test's check.
    re(
        "pytest.harness_raised",
        "pytest",
        InfraError,
        r"^(?P<msg>\S*[/\\](?:labgrid|twisterlib|pytest_embedded\w*)[/\\]\S+\.py:\d+: (?:\w+\.)*\w*(?:Error|Exception))$",
    )
    .weight(2),
    re("pytest.timeout", "pytest-timeout", Hang, r"^\++ (?P<msg>Timeout) \++$"),
    re(
        "pexpect.timeout",
        "pexpect",
        Hang,
        r"(?P<msg>pexpect\.\w+\.TIMEOUT\b.*|\bTIMEOUT: Not found [\x22'].*|Timeout in expect script at .*|(?:raise|\w+ =) TIMEOUT\(.*)$",
    ),
    re(
        "nuttx.ostest_fail",
        "nuttx",
        TestFailure,
        r"(?P<msg>ostest_main: Exiting with status -?[1-9]\d*)",
    )
    .verdict(),
    re("nuttx.ostest_pass", "nuttx", Pass, r"(?P<msg>ostest_main: Exiting with status 0)\b").verdict(),
    re("freertos.demo_ok", "freertos", Pass, r"^(?P<msg>OK: No errors\b.*)$").weight(2),
    // The check task of FreeRTOS's full demos prints a status line every few seconds: a pass
    // count and the tick, or the check that failed (`xAre...StillRunning() returned false`),
    // and the register test tasks report their own corruption.
    re("freertos.demo_pass", "freertos", Pass, r"^(?P<msg>PASS : \d+ \(\d+\))\s*$").weight(2),
    re(
        "freertos.demo_check_failed",
        "freertos",
        TestFailure,
        r"^(?P<msg>\w+\(\) returned false : \d+ \(\d+\)).*$",
    ),
    re(
        "freertos.regtest_error",
        "freertos",
        TestFailure,
        r"^(?P<msg>Error in (?:RegTest|reg test)\s*\d*\b.*)$",
    ),
    // RIOT's tests end on `[SUCCESS]` (or a `[FAILED]` line), its unit tests (embUnit) on
    // `OK (42 tests)`.
    re("riot.test_failed", "riot", TestFailure, r"^(?P<msg>\[FAILED\](?:\s.*)?)$").verdict(),
    // embUnit's text outputter (RIOT's unittests) names a failed check as `suite.test (file
    // line) message`.
    re(
        "embunit.failure",
        "embunit",
        TestFailure,
        r"^\W*(?P<msg>[\w-]+\.\w+ \([^()]+\.c \d+\) .+)$",
    ),
    re("riot.test_success", "riot", Pass, r"^(?P<msg>\[SUCCESS\])$").verdict(),
    // RIOT's compile_and_test_for_board failing a board (`ERROR:cc2650-launchpad:Tests failed:
    // 11`); no verdict, so a hang it also reports still decides.
    re(
        "riot.tests_failed",
        "riot",
        TestFailure,
        r"^(?P<msg>ERROR:[\w-]+:Tests failed: [1-9]\d*)$",
    )
    .weight(2),
    // RIOT's compile_and_test_for_board: `INFO:<board>.<app>:Success` once an application
    // built, flashed and passed its test.
    // Its summary names the step the listed applications failed in.
    re(
        "riot.failures_compilation",
        "riot",
        BuildError,
        r"^(?P<msg>Failures during compilation:)$",
    )
    .weight(2),
    re(
        "riot.failures_flash",
        "riot",
        FlashError,
        r"^(?P<msg>Failures during test\.flash:)$",
    )
    .weight(2),
    re(
        "riot.failures_test",
        "riot",
        TestFailure,
        r"^(?P<msg>Failures during test:)$",
    )
    .weight(2),
    re(
        "riot.board_app_success",
        "riot",
        Pass,
        r"^INFO:[\w.-]+\.[\w/.-]+:(?P<msg>Success)$",
    )
    .weight(2),
    // Arm's architecture compliance suites (SBSA, BSA ACS) closing a run with failures.
    re(
        "arm_acs.failed",
        "arm-acs",
        TestFailure,
        r"^\*\*\*\s*(?P<msg>One or more tests have failed\b.*)$",
    )
    .weight(2)
    .verdict(),
    // arduino-lint's closing line when no rule failed at its level.
    re(
        "arduino_lint.passed",
        "arduino-lint",
        Pass,
        r"^(?P<msg>Rules passed: true)$",
    )
    .weight(2)
    .verdict(),
    re("embunit.ok", "embunit", Pass, r"^(?P<msg>OK \(\d+ tests?\))$").verdict(),
    // Any runner's closing words, after every runner above had its turn: `all tests passed!`
    // (defmt-test), `Tests finished successfully :)` and `Some tests failed :(` (Renode's
    // run_tests), `~~~ALL TESTS PASSED~~~` (TensorFlow Lite Micro); anchored at the line's
    // start, so a command line quoting them is not a verdict. Counts (`Tests: 5 passed, 0
    // failed`) may be one suite's or one case's among more, so they are no final verdict.
    re(
        "tests.failed",
        "runner",
        TestFailure,
        r"^(?:(?:ERROR|FAIL)\s+)?\W*(?P<msg>(?i:(?:some|[1-9]\d*) (?:of the )?tests? (?:have )?failed|tests? failed)(?:\s*|\s*[^\s:\w].*|\s+[^\s:].*|\s*:\s*(?:[^0\s]|0\S).*))$",
    )
    .verdict(),
    re(
        "tests.passed",
        "runner",
        Pass,
        r"^(?:INFO\s+)?\W*(?P<msg>(?i:all (?:\d+ )?tests? (?:have )?(?:passed|succeeded)|tests? finished successfully)\b.*)$",
    )
    .verdict(),
    re(
        "tests.counts_failed",
        "runner",
        TestFailure,
        r"(?i)\b(?P<msg>\d+ (?:tests? )?passed\W+[1-9]\d* (?:tests? )?failed\b.*)$",
    )
    .weight(2),
    re(
        "tests.counts_passed",
        "runner",
        Pass,
        r"(?i)\b(?P<msg>[1-9]\d* (?:tests? )?passed\W+0 (?:tests? )?failed\b.*)$",
    )
    .weight(2),
    // Ceedling running a test executable its build did not leave (`sh: 1:
    // build/test/out/test_x.out: not found`): the harness's failure, not a missing tool.
    re(
        "ceedling.executable_missing",
        "ceedling",
        InfraError,
        r"^sh: \d+: (?P<msg>\S*build/test/out/\S+: not found)$",
    ),
    // PlatformIO's native platform without a host compiler (`error: tool 'gcc' not found`).
    re("platformio.tool_not_found", "platformio", ToolMissing, r"^error: (?P<msg>tool '[^']+' not found)$"),
    // Nim on Windows not finding the C compiler it was told to run (`Error: invocation of
    // external compiler program failed. The system cannot find the file specified.`).
    re(
        "nim.compiler_missing",
        "nim",
        ToolMissing,
        r"^Error: (?P<msg>invocation of external compiler program failed\. The system cannot find the file specified\.?)$",
    ),
    // yotta's toolchain check (`ERROR: the arm toolchain program armcc could not be found.`,
    // `ERROR: the arm gcc program arm-none-eabi-gcc could not be found`).
    re(
        "yotta.toolchain_missing",
        "yotta",
        ToolMissing,
        r"^\s*ERROR: (?P<msg>the [\w -]+? program \S+ could not be found\b.*)$",
    ),
    // An Eclipse-based IDE's builder (STM32CubeIDE, MCUXpresso, CCS) that cannot start its
    // build tool (`Cannot run program "make": Launching failed`, `Error: Program "make" not
    // found in PATH`).
    re(
        "eclipse.program_missing",
        "eclipse",
        ToolMissing,
        r#"^(?:Error: )?(?P<msg>Program "[^"]+" not found in PATH|Cannot run program "[^"]+": Launching failed)$"#,
    ),
    // A program that is not installed.
    re(
        "shell.not_found",
        "sh",
        ToolMissing,
        r"^(?:[\w./-]*\b(?:sh|bash|dash|ksh)|[\w./-]+\.sh): (?:line )?(?:\d+: )?(?:[\w./-]+\.sh: )?(?:exec: )?(?P<msg>[^\s:]+: (?:command )?not found)$",
    ),
    // A shell's `command not found` in the user's language (German, French, Spanish, Italian,
    // Portuguese, Russian, Chinese, Japanese), from the shell or from make.
    re(
        "shell.not_found_translated",
        "sh",
        ToolMissing,
        r"^(?:\S*sh: (?:(?:line |Zeile |ligne |línea |riga |linha |строка |行 ?)?\d+: )?|make(?:\[\d+\])?: )(?P<msg>\S+ ?: (?:Kommando nicht gefunden|Befehl nicht gefunden|commande introuvable|orden no encontrada|comando non trovato|comando não encontrado|команда не найдена|未找到命令|命令未找到|コマンドが見つかりません)\.?)$",
    ),
    // Bare, or bash's `line 129: ` left alone when the script's name before it wrapped onto the
    // line above.
    re(
        "shell.bare_not_found",
        "sh",
        ToolMissing,
        r"^(?:line \d+: )?(?P<msg>[\w./+-]+: command not found)$",
    ),
    // zsh running a script a shell function needs that is not there (ESP-IDF's
    // `idf_export_main:33: no such file or directory: .../tools/idf_tools.py`): the tool's
    // install is incomplete.
    re(
        "shell.function_script_missing",
        "zsh",
        ToolMissing,
        r"^\w+:\d+: (?P<msg>no such file or directory: \S.*(?:\.(?:py|sh)|/bin/python[\d.]*))$",
    )
    .weight(2),
    re("shell.zsh_not_found", "zsh", ToolMissing, r"^zsh: (?P<msg>command not found: \S+)$"),
    // Nordic's tools without SEGGER's J-Link software (`CouldNotOpenDLL (0x7) Lowlevel error:
    // JLINKARM_DLL_NOT_FOUND`).
    re(
        "nordic.jlink_dll_missing",
        "nrf-tools",
        ToolMissing,
        r"(?P<msg>\bJLINKARM_DLL_NOT_FOUND\b.*)$",
    ),
    // A build script or an IDE extension that looked for a tool on the PATH and did not find it
    // (`Could not find arm-none-eabi-g++ in PATH, looked in [...] (RuntimeError)`,
    // `qemu-system-xtensa is not in PATH or access is denied`).
    re(
        "script.tool_not_in_path",
        "host",
        ToolMissing,
        r"(?:^|[\s'\x22\x60])(?P<msg>(?:Could not find \S+ in (?:the )?PATH|[\w.+-]+ is not in (?:your |the )?PATH)\b.*)$",
    ),
    // A script that needs a newer interpreter than the one it found (`Cannot use 'python',
    // Python 2.6 or later is required.`).
    re(
        "python.version_required",
        "python",
        ToolMissing,
        r"(?P<msg>\bPython [23](?:\.\d+)* or (?:later|newer|higher) is required\b.*)$",
    ),
    // The dynamic loader cannot start a program whose shared library is not installed
    // (`st-flash: error while loading shared libraries: libstlink.so.1: ...`; macOS's
    // `dyld[3956]: Library not loaded: '/usr/local/opt/libusb/lib/libusb-1.0.0.dylib'`).
    re(
        "loader.missing_library",
        "ld.so",
        ToolMissing,
        r"(?P<msg>error while loading shared libraries: \S+: cannot open shared object file.*|\bdyld(?:\[\d+\])?: Library not loaded: .*)$",
    ),
    // Keil µVision's build cannot start its compiler (`--- Error: failed to execute
    // 'BIN40\ARMcc'`): the toolchain named in the project is not installed there.
    re(
        "keil.tool_missing",
        "keil",
        ToolMissing,
        r"--- (?P<msg>Error: failed to execute '[^']+')",
    ),
    // A shell given a program's absolute path that is not there (a tool moved or uninstalled
    // since a build directory recorded it).
    re(
        "shell.path_not_found",
        "sh",
        ToolMissing,
        r"^(?:/bin/)?(?:ba|da|z)?sh: (?:line \d+: |\d+: )?(?P<msg>/\S+: No such file or directory)$",
    ),
    // A shell given a program of the source tree, by a relative path, that is not there
    // (`/usr/bin/bash: line 1: tools/mkconfig: No such file or directory`): the build was to
    // make it first and did not.
    re(
        "shell.tree_program_missing",
        "sh",
        BuildError,
        r"^(?:/usr)?(?:/bin/)?(?:ba|da|z)?sh: (?:line \d+: |\d+: )?(?P<msg>[\w-][\w.-]*/[\w./-]+: No such file or directory)$",
    ),
    // A recipe's shell command that does not parse (`/bin/sh: -c: line 1: syntax error:
    // unexpected end of file`, after `unexpected EOF while looking for matching`): a quote the
    // makefile or its variables left open, so the build's.
    re(
        "shell.recipe_syntax_error",
        "sh",
        BuildError,
        r"^(?:/usr)?/bin/(?:ba|da)?sh: -c: line \d+: (?P<msg>syntax error: unexpected end of file|unexpected EOF while looking for matching .*)$",
    ),
    // A build system that reports the command it was told to run cannot be found.
    re(
        "tool.command_not_found",
        "tool",
        ToolMissing,
        r"(?i)\b(?P<msg>(?:build |the )?command '[\w.+-]+' not found.*)$",
    ),
    // A build tool that names the compiler it looked for and did not find: Mbed's `make.py`
    // (`Could not find executable for GCC_ARM.`), a runner's `Command '<path>' can't be found`.
    re(
        "tool.executable_not_found",
        "tool",
        ToolMissing,
        r"(?i)^(?:\S+: error: |ERROR: )?(?:\w+: )?(?P<msg>could not find (?:the )?executable for \S+?|command '[^']+' (?:can't|cannot|could not) be found)\.?$",
    ),
    // The compiler driver refusing an option it does not know (a host's flags such as macOS's
    // `-arch arm64` handed to a cross compiler): the build's configuration, not a missing tool.
    re(
        "gcc.unrecognized_option",
        "gcc",
        BuildError,
        r"(?:^|\s)\S*(?:gcc|g\+\+|clang|cc)(?:-[\d.]+)?(?:\.exe)?: (?:fatal )?error: (?P<msg>(?:unrecognized (?:argument in )?(?:command[- ]line )?option|unknown argument:?|unsupported option) .*)$",
    )
    .weight(2),
    // The compiler driver, linking, handed an object or archive that is not there.
    re(
        "gcc.missing_link_input",
        "gcc",
        LinkError,
        r"^\S*(?:gcc|g\+\+|clang|cc)(?:-[\d.]+)?(?:\.exe)?: (?:fatal )?error: (?P<msg>\S+\.(?:o|obj|a|lib): No such file or directory)$",
    ),
    re(
        "make.no_such_program",
        "make",
        ToolMissing,
        concat!(r"^", make_name!(), r": (?P<msg>[^*\s:][^:]*: No such file or directory)$"),
    ),
    // make that found the program a recipe runs but could not execute it (`make[1]:
    // .../bin/xsc: Invalid argument`): a program the build itself made. A toolchain built for
    // another host says `Exec format error`, which stays a missing tool.
    re(
        "make.exec_failed",
        "make",
        BuildError,
        concat!(r"^", make_name!(), r": (?P<msg>[^*\s:][^:]*: Invalid argument)$"),
    )
    .weight(2),
    // A program that runs `python3` by name on a machine without it (`python3: No such file or
    // directory`, as a build recipe's spawn reports it).
    re(
        "python.interpreter_missing",
        "shell",
        ToolMissing,
        r"^(?P<msg>python[\d.]*(?:\.exe)?: No such file or directory)$",
    )
    .weight(2),
    // make's status 127 is the shell's `command not found`; a line that names what the shell
    // could not run says more (a program of the source tree the build never made is a build
    // error), so it counts only when nothing else explains the log.
    re(
        "make.error_127",
        "make",
        ToolMissing,
        concat!(r"^", make_name!(), r": \*\*\* \[.*\] (?:Error|错误|Fehler|Erreur|エラー) 127$"),
    )
    .weight(1)
    .generic(),
    // OE-core's sanity checker naming the host programs it needs.
    // PlatformIO asking for a program it needs to install a package (`Please install Git client`,
    // older versions' ``VCS: `git` client is not installed in your system``).
    re(
        "platformio.install_program",
        "platformio",
        ToolMissing,
        r"(?:UserSideException|VCS): (?P<msg>Please install \S+ client\b.*|.?\w+.? client is not installed\b.*)$",
    ),
    re(
        "bitbake.missing_utilities",
        "bitbake",
        ToolMissing,
        r"(?P<msg>Please install the following missing utilities: .*|\S+ can't be found in PATH\b.*)$",
    ),
    re(
        "gcc.cannot_execute",
        "gcc",
        ToolMissing,
        r"(?P<msg>(?:cannot execute|error trying to exec) '[^']+': execvp: No such file or directory)",
    ),
    // Bazel's process wrapper could not start an action's program (`"execvp(fusesoc, ...)": No
    // such file or directory`).
    re(
        "bazel.execvp_missing",
        "bazel",
        ToolMissing,
        r#"(?P<msg>"execvp\([\w.+-]+, \.\.\.\)": No such file or directory)"#,
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
        r"^(?:(?:ModuleNotFoundError|ImportError): |\S*python[\d.]*(?:\.exe)?: )(?P<msg>No module named '?[\w.]+'?.*)$",
    ),
    // idf.py run outside the environment ESP-IDF's installer set up (`Cannot import module
    // "esp_idf_monitor". This usually means that "idf.py" was not spawned within an ESP-IDF
    // shell environment`): its tools are not installed where it runs.
    re(
        "esp_idf.not_in_environment",
        "esp-idf",
        ToolMissing,
        r#"^(?P<msg>Cannot import module "[\w.]+"\. This usually means that "idf\.py" was not spawned within an ESP-IDF shell environment\b.*)$"#,
    )
    .weight(2),
    // ESP-IDF checks its Python packages before it builds or flashes.
    re(
        "esp_idf.python_requirements",
        "esp-idf",
        ToolMissing,
        r"(?P<msg>(?:The following )?Python requirements? (?:are|is) not satisfied.*)$",
    ),
    // avr-libc's configure finding a compiler for another target than the one it builds for.
    re(
        "configure.wrong_compiler",
        "autoconf",
        BuildError,
        r"^configure: error: (?P<msg>Wrong C compiler found\b.*)$",
    )
    .weight(2),
    // CMake names a program it looked for and did not find `<VAR>-NOTFOUND` (its own `--`
    // status lines say so about optional programs too, and are left alone).
    re(
        "cmake.notfound",
        "cmake",
        ToolMissing,
        r"^(?P<msg>(?:[^-]|-[^-]).*\b[A-Z][A-Z0-9_]*-NOTFOUND\b.*)$",
    ),
    // cargo-binutils without the binutils it wraps (`Failed to execute tool: objcopy`, then `No
    // such file or directory (os error 2)`: the llvm-tools component is not installed).
    re(
        "cargo_binutils.no_tool",
        "cargo-binutils",
        ToolMissing,
        r"^(?P<msg>Failed to execute tool: (?:rust-)?(?:ar|as|cov|lld|nm|objcopy|objdump|profdata|readobj|size|strip))$",
    )
    .weight(2),
    // coreboot's check of its cross toolchain (`toolchain.inc:174: The coreboot toolchain for
    // 'x86_32' architecture was not found.`).
    re(
        "coreboot.no_toolchain",
        "coreboot",
        ToolMissing,
        r"(?P<msg>The coreboot toolchain (?:for '[^']+' architecture|version of \S+ '[^']+') was not found\b.*)$",
    )
    .weight(2),
    re(
        "make.command_not_found",
        "make",
        ToolMissing,
        concat!(r"^", make_name!(), r": (?P<msg>[^*\s:][^:]*: Command not found)$"),
    ),
    re(
        "cmd.not_recognized",
        "cmd",
        ToolMissing,
        r"(?P<msg>'[^']+' (?:is not recognized as an internal or external command|n(?:'|’)est pas reconnu en tant que commande interne|no se reconoce como un comando interno|não é reconhecido como um comando interno))",
    ),
    re(
        "powershell.not_recognized",
        "powershell",
        ToolMissing,
        r"(?P<msg>The term '[^']+' is not recognized as the name of a cmdlet.*|.* is not recognized as an internal or external command.*|.*\bCommandNotFoundException\b.*)$",
    ),
    re("which.no_program", "which", ToolMissing, r"^(?P<msg>which: no \S+ in \(.*)$"),
    // A build script's own message that a program it runs is missing (the Matter SDK's CMake:
    // `The 'gn' command was not found.  Make sure you have GN installed.`).
    re(
        "script.command_not_found",
        "build",
        ToolMissing,
        r#"^\W*(?P<msg>The ['"`]?[\w.+-]+['"`]? (?:command|program|executable|tool) (?:was not|could not be) found\b.*)$"#,
    ),
    // Python given a script that is not there: the tool a build or upload runs is missing
    // (`python3: can't open file '.../tools/prog.py': [Errno 2] No such file or directory`).
    re(
        "python.script_missing",
        "python",
        ToolMissing,
        r"^(?:\S*[/\\])?python[\d.]*(?:\.exe)?: (?P<msg>can't open file .*\[Errno 2\] No such file or directory)$",
    ),
    // A compiler driver that cannot start the program it runs (Windows: `arm-none-eabi-gcc:
    // error: CreateProcess: No such file or directory`).
    re(
        "gcc.createprocess",
        "gcc",
        ToolMissing,
        r"^\S+: error: (?P<msg>CreateProcess: No such file or directory)$",
    ),
    // A build script saying a library or program it needs is not there (`ERROR: libclang not
    // found!`).
    re(
        "script.library_not_found",
        "build",
        ToolMissing,
        r"^(?:ERROR|Error|error|FATAL):\s*(?P<msg>(?:lib[\w.+-]+|[\w.+-]+ (?:executable|program|binary)) (?:was )?not found\b.*)$",
    ),
    // CMake's check of the compiler failed: the configure step stopped, whatever the test
    // compile's own errors say (often undefined references from a toolchain with no libc
    // stubs).
    re(
        "cmake.compiler_check_failed",
        "cmake",
        BuildError,
        r#"^(?P<msg>Compiling the \w+ compiler identification source file \S+ failed\.|.*\bis not able to compile a simple(?: test program\.)?)$"#,
    ),
    // CMake and meson say which program or package they looked for and did not find.
    re(
        "cmake.program_not_found",
        "cmake",
        ToolMissing,
        r"(?P<msg>is not a full path and was not found in the PATH\..*|CMake was unable to find a build program corresponding to .*|^Could not find a package configuration file provided by .*|^Could not find a configuration file for package .*|^Could NOT find \S+ \(missing: .*|No CMAKE_\w+_COMPILER could be found\..*)$",
    ),
    // Zephyr's `cmake/compiler/<toolchain>/generic.cmake` stops when the toolchain's compiler
    // is not installed; CMake's own lookup names the compiler it could not find.
    re(
        "cmake.compiler_not_found",
        "cmake",
        ToolMissing,
        r"(?P<msg>CMake Error at \S*cmake[/\\]compiler[/\\]\S+\.cmake:\d+ \((?:message|find_program)\):?|Could not find CMAKE_\w*COMPILER\b.*|Zephyr was unable to find the toolchain\..*|Nothing found at \w*TOOLCHAIN\w*:.*|The (?:C|CXX|ASM) compiler\b.*\bis not able to compile\b.*|(?:C|C\+\+|CXX|ASM) compiler \S+ not found\b.*)$",
    ),
    re(
        "meson.not_found",
        "meson",
        ToolMissing,
        r"\bmeson\.build:\d+:\d+: ERROR: (?P<msg>Program '[^']+' not found.*|Program or command '?\S+'? not found.*|Unknown (?:compiler|linker)\(s\).*|Dependency \S+ not found.*|(?:C|C\+\+) compiler for .* not found.*)$",
    ),
    // A tool that stops and asks for a program to be installed (PlatformIO's `Error: Please
    // install Git client`).
    re(
        "tool.please_install",
        "tool",
        ToolMissing,
        r"(?i)\berror\b.*?\b(?P<msg>please install (?:the )?\w\S*.*)$",
    ),
    // Go's os/exec could not start a program (TinyGo's flash and build steps, Go tools).
    re(
        "go.exec_not_found",
        "go",
        ToolMissing,
        r#"(?:\bexec: |\bfork/exec )(?P<msg>"[^"]+": (?:executable file not found in (?:\$PATH|%PATH%)|file does not exist).*|\S+: no such file or directory.*)$"#,
    ),
    // Python could not start a program: the name alone, no path, is a lookup in PATH.
    re(
        "python.program_not_found",
        "python",
        ToolMissing,
        r"(?:(?:^|FileNotFoundError: |OSError: |fatal error: )\[?(?:Errno 2\]|WinError 2\]|2) |(?:^|[\s\x60'\x22])(?:[\w.]*Error: )?)(?:No such file or directory|The system cannot find the file specified):? '(?P<msg>[\w+-]+(?:\.exe|\.py)?)'(?:$|[\x60\x22.,;)\s])",
    ),
    // Python 2's subprocess on Windows when the program it starts is not found: CreateProcess's
    // error names no file (an open of a missing file names it).
    re(
        "python.windows_program_not_found",
        "python",
        ToolMissing,
        r"(?P<msg>WindowsError: \[Error 2\] The system cannot find the file specified):?$",
    ),
    // A tool's wrapper checking for a program it runs (ESP-IDF's `'cmake' must be available on
    // the PATH to use idf.py`).
    re(
        "wrapper.program_not_on_path",
        "any",
        ToolMissing,
        r"(?P<msg>'[\w.+-]+' must be available on the PATH\b.*)$",
    ),
    // waf's configure step (ArduPilot's build) when a program it looks for is not on the PATH.
    re(
        "waf.program_not_found",
        "waf",
        ToolMissing,
        r"(?P<msg>Could not find the program \[.+\])$",
    ),
    re(
        "rust.target_missing",
        "rustc",
        ToolMissing,
        r"(?P<msg>error: linker `[^`]+` not found|.*target may not be installed)$",
    ),
    re(
        "west.program_missing",
        "west",
        ToolMissing,
        r"(?P<msg>required program \S+ not found; install it or add its location to PATH)",
    ),
    re(
        "esp_idf.tool_missing",
        "esp-idf",
        ToolMissing,
        r"(?P<msg>tool \S+ has no installed versions\..*|.*doesn't exist! Please run the install script.*)$",
    ),
    re(
        "rustup.not_installed",
        "rustup",
        ToolMissing,
        r"^error: (?P<msg>toolchain '[^']+' is not installed.*|no default toolchain configured.*|component '[^']+' for target '[^']+' is unavailable.*)$",
    ),
    // A build script or runner that could not start a program because it is not there: Rust's
    // `Os { code: 2, kind: NotFound }` or `No such file or directory (os error 2)` after the
    // program's name, Java's `Cannot run program "x": error=2` (`CreateProcess error=2` on
    // Windows).
    re(
        "process.spawn_not_found",
        "host",
        ToolMissing,
        r#"(?P<msg>(?:executing|failed to execute|failed to run|could not execute|error executing) `?[\w./+-]+`?:? .*(?:kind: NotFound|No such file or directory \(os error 2\)).*|Cannot run program "[^"]+"(?: \(in directory "[^"]*"\))?: (?:CreateProcess )?error=2\b.*)"#,
    ),
    // SCons that could not run a program its build needs (`Error in calling:` the command,
    // then `Exception: [Error 2] : No such file or directory`).
    re(
        "scons.no_such_program",
        "scons",
        ToolMissing,
        r"^(?P<msg>Exception: \[Error 2\] : No such file or directory)$",
    )
    .weight(2),
    // Cargo's runner or build step whose program never started (`error: could not execute
    // process `arm-none-eabi-gdb target/...` (never executed)`): it could not be spawned, which
    // is a missing program.
    re(
        "cargo.never_executed",
        "cargo",
        ToolMissing,
        r"^error: (?P<msg>could not execute process `[^`]+` \(never executed\))$",
    )
    .weight(2),
    // GCC told to read a specs file of a C library that is not installed (`nano.specs`, newlib's
    // nano variant, is missing from a bare toolchain).
    re(
        "gcc.specs_missing",
        "gcc",
        ToolMissing,
        r"(?P<msg>\S+: error: (?:nano|nosys|rdimon|pico|picolibc)\.specs: No such.*)$",
    ),
    re("west.not_installed", "west", ToolMissing, r"(?P<msg>\S+ is not installed or cannot be found)"),
    // A script that looked for a program it needs (`Error: Unable to locate sunxi-fel
    // utility.`, `Couldn't find a working QEMU executable`).
    re(
        "script.tool_not_found",
        "sh",
        ToolMissing,
        r"(?i)(?P<msg>\bunable to locate \S+ (?:utility|tool|executable|binary|program)\b.*|\bfind a working [\w.+-]+ (?:executable|binary|compiler|toolchain)\b.*)$",
    ),
    // Any tool's own words, as an error, that a program is not installed (a warning that an
    // optional one is missing is not a failure).
    re(
        "tool.not_installed",
        "any",
        ToolMissing,
        r"^(?:(?:ERROR|Error|error|FATAL ERROR):\s*|(?:[Tt]ool|[Pp]rogram) )(?P<msg>(?:[Tt]ool |[Pp]rogram |[Tt]he (?:program |tool |command )?)?'?[\w./+-]+'? (?:is|was) not installed\b.*)$",
    ),
    // A compiler a toolchain's CMake module looked for and did not find (`No Microchip XC16
    // compiler was found.`), arduino-cli's upload tool that is not installed, GPRbuild's
    // missing archiver or compiler (`gprbuild: unable to locate archive builder
    // "aarch64-linux-gnu-ar"`).
    re(
        "toolchain.not_found",
        "toolchain",
        ToolMissing,
        r#"^(?P<msg>No Microchip \w+ compiler was found\b.*|Upload tool '[^']+' not found\.?|gprbuild: unable to locate (?:archive builder|compiler)\b.*)$"#,
    ),
    // ravedude (avr-hal's runner) that could not run avrdude to read its version.
    re(
        "ravedude.no_avrdude",
        "ravedude",
        ToolMissing,
        r"(?P<msg>Failed reading avrdude version information\b.*)$",
    ),
    // CMake's FindPackageHandleStandardArgs naming what it did not find of a library
    // (`Log4cxx_INCLUDE_DIR (missing: Log4cxx_LIBRARY)`).
    re(
        "cmake.package_parts_missing",
        "cmake",
        ToolMissing,
        r"^(?P<msg>\w+ \(missing: \w+(?: \w+)*\))$",
    ),
    // A script's shell given a program by an absolute path that is not there, in English or
    // Chinese (`没有那个文件或目录`, no such file or directory). (A bare name not there is a
    // file `source` or a redirect wanted, no program.)
    re(
        "script.program_not_found",
        "sh",
        ToolMissing,
        r"^\./[\w.-]+: (?:line |行 ?)\d+: (?P<msg>/\S+: (?:No such file or directory|没有那个文件或目录))$",
    ),
    // Robot Framework's failed check quoting a shell's missing program (`'/bin/sh: 1: sshpass:
    // not found' should be empty.`): the test could not run its tool.
    re(
        "robot.shell_not_found",
        "robot",
        ToolMissing,
        r"^'(?:/bin/)?(?:ba|da)?sh: (?:\d+: )?(?P<msg>[^\s:]+: (?:command )?not found)' should be empty\.?$",
    ),
    // A toolchain's CMake file that did not find the compiler where the toolchain should be
    // (`CMAKE_C_COMPILER is not in kendryte-toolchain dist/bin folder.`).
    re(
        "cmake.compiler_not_in_toolchain",
        "cmake",
        ToolMissing,
        r"(?P<msg>\bCMAKE_(?:C|CXX|ASM)_COMPILER is not in \S+.*)$",
    ),
    // A flasher or build tool named as not installed, in a message quoted anywhere (`Error
    // writing firmware…dfu-util is not installed`).
    re(
        "tool.named_not_installed",
        "any",
        ToolMissing,
        r"(?P<msg>\b(?:dfu-util|avrdude|openocd|esptool(?:\.py)?|st-flash|pyocd|probe-rs|picotool|nrfjprog|JLinkExe|bossac|teensy_loader_cli|arm-none-eabi-gcc) (?:is|was) not installed\b.*)$",
    ),
    // A vendor tool's words that the software it drives is missing (`It seems that JLink
    // software is not installed please download ...`).
    re(
        "tool.software_not_installed",
        "any",
        ToolMissing,
        r"(?P<msg>(?:It seems that )?[\w.+-]+ (?:software|toolchain|tools?) (?:is|are|was|were) not installed\b.*)$",
    ),
    re(
        "gcc.cannot_find_tool",
        "gcc",
        ToolMissing,
        r"fatal error: (?P<msg>cannot find '(?:ld|as|cc1\w*)')",
    ),
    re(
        "cmake.tool_not_found",
        "cmake",
        ToolMissing,
        r"(?P<msg>Compiler '[^']+' not found.*|.*\bcannot be built because \S+ is not found|.*, but \S+ not found(?: there)?)$",
    ),
    re(
        "python.missing_library",
        "python",
        ToolMissing,
        r"FileNotFoundError: \[Errno 2\] No such file or directory: '(?P<msg>[^']+\.(?:so|dll|dylib|exe))'",
    ),
    // Windows make could not start a program (`process_begin: CreateProcess(NULL, avr-gcc ...)
    // failed.`, then `make (e=2): The system cannot find the file specified.`).
    re(
        "make.createprocess_failed",
        "make",
        ToolMissing,
        r"^(?P<msg>process_begin: CreateProcess\(NULL, \S+.*|\S*make(?:\[\d+\])?(?:\.exe)? \(e=2\):.*)$",
    )
    .weight(2),
    // protoc's plugin lookup, Ruby's missing gem.
    re(
        "protoc.plugin_not_found",
        "protoc",
        ToolMissing,
        r"(?P<msg>\S+: program not found or is not executable)",
    ),
    re(
        "ruby.load_error",
        "ruby",
        ToolMissing,
        r"(?P<msg>cannot load such file -- [\w./-]+)",
    ),
    // A script that names the program it did not find and asks for it to be installed or put
    // on the PATH (`Please install it or add '<dir>/bin' to your PATH`).
    re(
        "tool.install_or_path",
        "tool",
        ToolMissing,
        r"(?i)^\W*(?P<msg>please install (?:it|them|\S+)\b.*\b(?:to|in|on) (?:your|the) (?:system )?PATH\b.*)$",
    ),
    // Flashers and debug probes: the image did not get onto the board.
    // esptool retrying its connection: a failure only if it then gives up, which it says.
    noise(
        "esptool.retrying",
        "esptool",
        r"^Couldn't connect\. \[.*\]\. Retrying\.\.\.$",
    ),
    // esp-at's build script wrapping idf.py in esptool's words (`A fatal error occurred: idf.py
    // build failed`): the echo of the build's own failure, no flash.
    re(
        "esp_at.build_failed",
        "esp-at",
        BuildError,
        r"^A fatal error occurred: (?P<msg>idf\.py build failed)$",
    )
    .echo(),
    // esptool's or espsecure's fatal error after a failed ninja step, no other evidence between:
    // the build ran it (to sign an image, extract a key), so the build failed, not a flash.
    re(
        "esptool.fatal_in_build",
        "esptool",
        BuildError,
        r"A fatal error occurred: (?P<msg>.+)$",
    )
    .weight(2)
    .follows(&["ninja.step_failed"]),
    // esptool giving up (`A fatal error occurred: ...`).
    re(
        "esptool.fatal",
        "esptool",
        FlashError,
        r"A (?:fatal|serial exception) error occurred: (?P<msg>.+)$",
    ),
    re(
        "openocd.no_adapter",
        "openocd",
        FlashError,
        r"^Error: (?P<msg>unable to find (?:a matching )?CMSIS-DAP device|open failed|No J-Link device found\.?|Cannot find jlink Interface.*|unable to open (?:ftdi|CMSIS-DAP) device.*|libusb_open\(\) failed with LIBUSB_ERROR_\w+|The specified debug interface was not found.*)$",
    ),
    // OpenOCD cannot find the interface or target script it was told to load: the debugger
    // never started, so nothing reached the board.
    re(
        "openocd.missing_script",
        "openocd",
        FlashError,
        r"^(?:embedded:startup\.tcl:\d+: )?Error: (?P<msg>Can't find \S+\.(?:cfg|tcl))$",
    ),
    // OpenOCD's own error at its debug output level (`-d`): `Error: 160 32 xilinx_bit.c:81
    // xilinx_read_bit_file(): couldn't stat() ...`.
    re(
        "openocd.debug_error",
        "openocd",
        FlashError,
        r"^Error: \d+ \d+ \S+\.c:\d+ \w+\(\): (?P<msg>.+)$",
    )
    .weight(2),
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
        r"^Error: (?P<msg>Error connecting DP: .*|Invalid ACK \(\d+\) in DAP response|JTAG-DP STICKY ERROR|JTAG scan chain interrogation failed.*|double-check your JTAG setup.*|\S+: IR capture error.*|Failed to connect multidrop .*|\S+: Examination failed|Target not examined yet|(?:\[[^\]]+\] )?Could not find MEM-AP.*|ftdi device did not accept all data.*|unable to purge ftdi rx buffers.*|timed out while waiting for target halted)$",
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
    re(
        "openocd.verify",
        "openocd",
        FlashError,
        r"(?P<msg>verify failed in bank at .*|checksum mismatch - attempting binary compare.*)$",
    ),
    re(
        "openocd.lockup",
        "openocd",
        Crash,
        r"(?P<msg>\S+ -- clearing lockup after double fault)$",
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
        r"^(?i:Error):? (?P<msg>The flashing procedure failed for .*|(?i:failed to flash) .*|Connecting to the chip was unsuccessful.*|Failed to attach to .*|An? (?:ARM|RISC-?V|Xtensa) specific error occu?rr?ed.*|An error with the usage of the probe occu?rr?ed.*)$",
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
    // pyOCD's log lines, also where its progress bar left no newline before them.
    re(
        "pyocd.error",
        "pyocd",
        FlashError,
        r"^(?:\[[= ]*\]\s+\d+%)?\d{7} [CE] (?P<msg>.+?)(?: \[\w+\])?$",
    )
    .weight(1),
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
        r"^(?:-\s+)?(?:ERROR: |Error occurred: )?(?P<msg>Cannot connect to target\.?|Could not connect to (?:the )?target(?: device)?\.?|Could not establish a connection to target\.?|Target voltage too low\..*)$",
    ),
    re(
        "jlink.program",
        "jlink",
        FlashError,
        r"(?P<msg>Error while programming flash: .*)$",
    ),
    // J-Link's GDB server giving up before gdb connects (`Failed to get index for device name
    // 'RA6M5'.GDBServer will be closed... Shutting down...`).
    re(
        "jlink.gdbserver_closed",
        "jlink",
        FlashError,
        r"(?P<msg>Failed to get index for device name .*|.*\bGDBServer will be closed\b.*)$",
    ),
    // Segger's stand-alone Flasher and J-Flash: `ERROR: Failed to prepare for programming.`,
    // `Failed to execute RAMCode for RAM check!`, `- ERROR: Erase failed`, `- ERROR: Failed to
    // auto program target`.
    re(
        "jlink.flasher_failed",
        "jlink",
        FlashError,
        r"^(?:-\s+)?(?:ERROR: )?(?P<msg>Failed to prepare for programming\.?|Failed to execute RAMCode\b.*|(?:Erase|Program(?:ming)?|Verif(?:y|ication)) failed\.?|Failed to (?:auto program|program|erase|verify) target\.?)$",
    ),
    // An uploader waiting for its board to appear on a serial port (the Arduino 101's download
    // script: `ERROR: Timed out waiting for Arduino 101 on COM7`).
    re(
        "upload.board_timeout",
        "flasher",
        FlashError,
        r"(?P<msg>Timed out waiting for .+ on (?:COM\d+|/dev/\S+))\s*$",
    ),
    // J-Link's own errors stand out with six asterisks.
    re("jlink.error", "jlink", FlashError, r"^\*{6} Error: (?P<msg>.+)$").weight(2),
    // The J-Link DLL's error as nrfjprog's log quotes it (`JLinkARM.dll OpenEx returned error
    // 'Communication timed out - Can not execute firmware update'.`).
    re(
        "jlink.dll_error",
        "jlink",
        FlashError,
        r"(?P<msg>JLinkARM\.dll \w+ returned error .*)$",
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
    re("esptool.exception", "esptool", FlashError, r"esptool\.FatalError: (?P<msg>.+)$"),
    // esptool refusing its arguments (`esptool write_flash: error: argument <address>
    // <filename>: [Errno 2] No such file or directory: ...`): the upload's command is wrong.
    re(
        "esptool.usage_error",
        "esptool",
        FlashError,
        r"^esptool(?:\.py)?(?: \w+)?: error: (?P<msg>.+)$",
    ),
    // A frozen esptool (Arduino's, PlatformIO's) that died of an exception says so last.
    re(
        "esptool.script_failed",
        "esptool",
        FlashError,
        r"(?P<msg>Failed to execute script '?esptool'?.*)$",
    )
    .weight(2),
    re(
        "esptool.no_reply",
        "esptool",
        FlashError,
        r"(?P<msg>Timed? out waiting for packet header|Invalid head of packet.*|^Failed to connect to (?:ESP\w*|Espressif device): .+)",
    ),
    re(
        "uvision.flash",
        "uvision",
        FlashError,
        r"^Error: (?P<msg>Flash Download failed.*)$",
    ),
    re(
        "arduino.upload_failed",
        "arduino",
        FlashError,
        r"^(?P<msg>An error occurred while uploading the sketch|Une erreur est survenue lors du transfert du croquis|Beim Hochladen des Sketches ist ein Fehler aufgetreten|Problem beim Hochladen auf das Board\..*|Fehlgeschlagenes Hochladen: .+|Failed (?:uploading|programming): .+|Error during Upload: .+)$",
    ),
    re(
        "picotool.no_device",
        "picotool",
        FlashError,
        r"(?P<msg>[Nn]o accessible RP[\w/-]*(?: series)? devices? in BOOTSEL mode (?:was|were) found.*|.*appears to be (?:a |in )?.*BOOTSEL mode, but picotool was unable to connect.*|The RP\w+ device returned an error.*)$",
    ),
    // TinyGo's flash not knowing which port to use.
    re(
        "tinygo.port",
        "tinygo",
        FlashError,
        r"^error: (?P<msg>multiple serial ports available\b.*|unable to locate a serial port\b.*)$",
    ),
    re(
        "platformio.upload",
        "platformio",
        FlashError,
        r"(?P<msg>Please specify `upload_port`.*|\*\*\* \[upload\] .*)$",
    ),
    re(
        "make.flash_target",
        "make",
        FlashError,
        concat!(r"(?P<msg>recipe for target '(?:flash|upload|program)(?:-only)?' failed|", make_name!(), r": \*\*\* \[(?:[^\]]*[: ])?(?:flash|upload|program)(?:-only)?\] (?:Error|错误|Fehler|Erreur|エラー) \d+)"),
    ),
    // OpenOCD's `dump_image` that read the flash back whole: a read-back's success, weighed as
    // a flash's closing line (so, like one, it outweighs a failed command's generic lines).
    re(
        "openocd.dump_done",
        "openocd",
        Pass,
        r"^(?P<msg>dumped \d+ bytes in [\d.]+s\b.*)$",
    )
    .weight(2),
    // probe-run's end of a program that ran to its end (its `(HOST) INFO  success!` only ends
    // the flash; the program's run follows).
    re(
        "probe_run.halted",
        "probe-run",
        Pass,
        r"^\(HOST\) INFO\s+(?P<msg>device halted without error)$",
    )
    .weight(2),
    re(
        "probe_rs.report",
        "probe-rs",
        FlashError,
        r#""error": "(?P<msg>(?:Connecting to the chip was unsuccessful|The flashing procedure failed|Failed to attach)[^"]*|[^"]*[Pp]robe[^"]*)""#,
    ),
    re(
        "pyocd.legacy_error",
        "pyocd",
        FlashError,
        r"^(?:\[[= ]*\]\s+\d+%)?\d{7}:(?:ERROR|CRITICAL):\w+:(?P<msg>.+)$",
    ),
    re(
        "nrfjprog.error",
        "nrfjprog",
        FlashError,
        r"^(?:ERROR|FATAL ERROR): (?P<msg>No debuggers were discovered\.?|There is no debugger connected to the PC\.?|Unable to connect to a debugger\.?|Unable to find a board; is the board connected\?|\[\s*\w+\s*\] - .+|The file specified is not a valid hex file\b.*|invalid family argument\b.*|.*\bNO_EMULATOR_CONNECTED\b.*)$",
    ),
    // nrfjprog's DLL reporting on its own (`An error was reported by NRFJPROG DLL: -13
    // NO_EMULATOR_CONNECTED.`).
    re(
        "nrfjprog.dll_error",
        "nrfjprog",
        FlashError,
        r"^(?P<msg>An error was reported by NRFJPROG DLL: .+)$",
    ),
    // dfu-util before 0.8 printed its errors without its name.
    re(
        "dfu_util.old_error",
        "dfu-util",
        FlashError,
        r"^(?P<msg>Cannot set alt interface \S+|Cannot claim interface\b.*|Cannot open DFU device \S+.*|No DFU capable USB device available\b.*)$",
    ),
    re(
        "dfu_util.error",
        "dfu-util",
        FlashError,
        prefixed!(r"(?:(?:Download|Upload)\s*\[[= ]*\]\s*\d+%\s*\d+ bytes)?dfu-util(?:\.exe)?: (?P<msg>No DFU capable USB device available|Cannot open DFU device.*|Cannot claim interface.*|Cannot set alternate interface.*|Error during (?:download|upload).*|Lost device after RESET\?|More than one DFU capable USB device found!.*|unable to read DFU status after completion.*|\w+ not correctly executed\b.*|(?:Only DfuSe file version|Could not open file|Could not read name|Unsupported|Wrong|No valid DFU|Device has DFU interface, but has no DFU functional descriptor|Cannot|Can't|Error)\b.*)$"),
    ),
    // dfu-util's report of the device's state: at the start it finds a `dfuERROR` the last
    // session left and clears it on its own (`DFU state(10) = dfuERROR, status(10) = Device's
    // firmware is corrupt...`, then `Clearing status`). A failure is dfu-util's own line.
    noise(
        "dfu_util.status",
        "dfu-util",
        r"^(?:DFU state\(\d+\) = \w+(?:-\w+)*, status\(\d+\) = .+|Determining device status: state = \w+, status = \d+|dfuERROR, clearing status)$",
    ),
    // dfu-programmer reading back what it wrote, or refused the write (`Memory write error, use
    // debug for more info.` after `Device is write protected.`).
    re(
        "dfu_programmer.validate_failed",
        "dfu-programmer",
        FlashError,
        r"^(?P<msg>Validating\.\.\.\s+ERROR|Memory did not validate\..*|Memory write error, use debug for more info\.)$",
    ),
    // A flasher that finds no board in its bootloader: the Teensy IDE's `No Teensy boards were
    // found on any USB ports`, dfu-programmer's `no device present`, QMK's `Bootloader not
    // found`.
    re(
        "flash.no_bootloader",
        "flasher",
        FlashError,
        r"(?P<msg>No Teensy boards were found on any USB ports.*|dfu-programmer: no device present\.?|Bootloader not found\b.*)$",
    ),
    // pystlink's starred errors about the flash (`*** Error unlocking FLASH ***`).
    re(
        "pystlink.error",
        "pystlink",
        FlashError,
        r"^\*\*\* (?P<msg>Error (?:\w+ )*(?:FLASH|flash)\b.*) \*\*\*$",
    ),
    // gdb's `compare-sections` after a load: a section on the target differs from the image.
    re(
        "gdb.compare_mismatch",
        "gdb",
        FlashError,
        r"(?P<msg>Section \S+, range 0x[0-9a-f]+ -- 0x[0-9a-f]+: MIS-MATCHED!|warning: One or more sections of the target image does not match)$",
    ),
    // teensy_loader_cli's own errors.
    re(
        "teensy.error",
        "teensy",
        FlashError,
        r"^(?P<msg>error reading intel hex file .*|Warning, HEX parse error line \d+|ihex: parse error line \d+|error writing to Teensy|Unable to open device\b.*|Unable to read \S+)$",
    ),
    // The kernel's log of a USB control transfer a flasher's process (`teensy_loader_c`, its
    // name cut to 15 characters) sent and the device never answered.
    re(
        "usbfs.flasher_control_failed",
        "kernel",
        FlashError,
        r"\busbfs: (?P<msg>USBDEVFS_\w+ failed cmd (?:avrdude|openocd|dfu-util|st-flash|st-util|esptool|pyocd|probe-rs|picotool|JLink\w*|bossac|edbg|nrfjprog|\w*flash\w*|\w*loader\w*|\w*upload\w*)\b.*)$",
    ),
    // usbpicprog's log (its lines run together when pasted): a verify or a write of one of the
    // PIC's areas failed.
    re(
        "usbpicprog.failed",
        "usbpicprog",
        FlashError,
        r"(?P<msg>Verify (?:code|data|config) failed at 0x[0-9A-Fa-f]+\b.*|Error programming (?:code|data|config) memory\b.*)$",
    ),
    // iceprog's and ecpprog's read-back of the SPI flash after writing a bitstream.
    re(
        "iceprog.verify_failed",
        "iceprog",
        FlashError,
        r"(?P<msg>Found difference between flash and file!)",
    ),
    // A serial bootloader that never answered the flasher's sync (avrdude's STK500 without its
    // `avrdude:` prefix, an RP2040 serial flasher's `Error: sync: not synced`, cc2538-bsl's
    // `Timeout waiting for ACK/NACK after 'Synch (0x55 0x55)'`).
    re(
        "flasher.not_in_sync",
        "flasher",
        FlashError,
        r"(?P<msg>^(?:- )?stk500v?2?_\w*getsync\(\)(?: attempt \d+ ?of \d+)?: not in sync\b.*|^Error: sync: not synced\b.*|Timeout waiting for ACK/NACK after '[^']*'.*)$",
    ),
    // Mongoose OS's `mgos flash` starting its flasher on the chip: a bare `Error:` after it is
    // the flash's.
    re("mgos.flasher", "mgos", FlashError, r"^Running flasher @ \d+\.\.\.$").context(),
    // WCH's MounRiver flashing through a WCH-Link (`20:24:14:358 >> Fail to convert data hex file
    // to bin`).
    re(
        "wch.flash_failed",
        "mounriver",
        FlashError,
        r"^\d\d:\d\d:\d\d:\d{3} >> (?P<msg>Fail(?:ed)? to .*)$",
    )
    .weight(2),
    // NXP's blhost with a status other than 0 (`Response status = 10004 (0x2714) No response
    // packet from target device.`).
    re(
        "blhost.status",
        "blhost",
        FlashError,
        r"^(?P<msg>Response status = [1-9]\d* \(0x[0-9A-Fa-f]+\) .*)$",
    )
    .weight(2),
    // TinyFPGA's programmer finding the FPGA's bootloader not running (`Bootloader not active`):
    // nothing was written, whatever the build tool's banner says after it.
    re("tinyfpgab.no_bootloader", "tinyfpgab", FlashError, r"^(?P<msg>Bootloader not active)$")
        .weight(2),
    // Espruino's IDE (`The Firmware update failed: Unexpected response ...`).
    re(
        "espruino.update_failed",
        "espruino",
        FlashError,
        r"(?P<msg>The Firmware update failed\b.*)$",
    )
    .weight(2),
    // Particle's CLI: its system update done (`! System firmware update successfully
    // completed!`), its cloud compile done (`Compile succeeded.`).
    re(
        "particle.update_done",
        "particle",
        Pass,
        r"^!? ?(?P<msg>System firmware update successfully completed!)$",
    )
    .weight(2),
    re("particle.compile_done", "particle", Pass, r"^(?P<msg>Compile succeeded\.)$").weight(2),
    // SWUpdate refusing or failing an image (`[ERROR] : SWUPDATE failed [1] Installation
    // failed !`): the update of the device failed.
    re(
        "swupdate.failed",
        "swupdate",
        FlashError,
        r"(?P<msg>SWUPDATE failed \[\d+\] .*)$",
    )
    .weight(2),
    // megaTinyCore's SerialUPDI programmer (prog.py): its bare Python traceback is the flash's.
    re(
        "serialupdi.banner",
        "serialupdi",
        FlashError,
        r"^UPDI programming for Arduino using a serial adapter$",
    )
    .context(),
    // picotool's usage after a command it does not know: its bare `ERROR:` is the flasher's.
    re(
        "picotool.usage",
        "picotool",
        FlashError,
        r#"^Use "picotool help <cmd>" for more info$"#,
    )
    .context(),
    // J-Link Commander that cannot read the command script a flash runner wrote for it.
    re(
        "jlink.script_missing",
        "jlink",
        FlashError,
        r"^(?P<msg>Could not open script file '[^']*')",
    )
    .weight(2),
    // stcgal waiting for the MCU's bootloader: its serial port's and protocol's errors after
    // it are the flash's.
    re("stcgal.waiting", "stcgal", FlashError, r"^Waiting for MCU, please cycle power:.*$").context(),
    re("stcgal.error", "stcgal", FlashError, r"(?P<msg>(?:Serial port|Protocol) error: .+)$")
        .weight(1)
        .in_context(),
    // lpc21isp: a block the bootloader refused, then its exit.
    re(
        "lpc21isp.failed",
        "lpc21isp",
        FlashError,
        r"(?P<msg>Error on writing block_CRC\b.*|Non-zero download rea?sult: \d+\b.*)$",
    ),
    // A flasher that refuses the device's bootloader (a radio's web flasher: `INCOMPATIBLE
    // BOOTLOADER VERSION`).
    re(
        "flash.incompatible_bootloader",
        "flasher",
        FlashError,
        r"(?i)(?P<msg>incompatible bootloader version\b.*)$",
    ),
    // The shell's report that a flasher it ran died (`zsh: abort (core dumped)  ./sunxi-fel
    // version`): whatever the flasher printed before, the flash failed.
    re(
        "shell.flasher_died",
        "sh",
        FlashError,
        r"^(?:zsh|bash|sh|fish): (?:abort|segmentation fault|bus error|illegal hardware instruction)\s+(?:\(core dumped\)\s+)?(?P<msg>\S*(?:sunxi-fel|avrdude|openocd|dfu-util|st-flash|esptool\S*|pyocd|probe-rs|picotool|stm32flash|bossac|edbg|nrfjprog|JLinkExe|teensy_loader_cli|minipro|iceprog|ecpprog|openFPGALoader|stcgal|mspdebug|flashrom)\b.*)$",
    ),
    // minichlink (ch32fun's WCH-LinkE programmer): a debug-module write the chip refused.
    re(
        "minichlink.fault",
        "minichlink",
        FlashError,
        r"^(?P<msg>Fault writing memory \(DMABSTRACTS = [0-9a-fA-F]+\).*|Fault on Default\w+\b.*)$",
    ),
    // minichlink finding no chip on its programmer (`link error, nothing connected to linker`,
    // then `Could not setup interface.`): the flash never started.
    re(
        "minichlink.no_chip",
        "minichlink",
        FlashError,
        r"^(?P<msg>link error, nothing connected to linker|Could not setup interface\.)$",
    )
    .weight(2),
    // NEORV32's bootloader refusing an image sent over its UART (`Awaiting neorv32_exe.bin...
    // ERROR_SIGNATURE`, `ERROR_SIZE`, `ERROR_CHECKSUM`).
    re(
        "neorv32.upload_error",
        "neorv32",
        FlashError,
        r"^(?P<msg>Awaiting \S+\.\.\. ERROR_\w+)$",
    )
    .weight(2),
    // MPLAB Harmony's bootloader host script (`btl_host.py`): a step the bootloader answered
    // with a failure status (`Error: ... fail (status = 0x54)`).
    re(
        "btl_host.failed",
        "btl_host",
        FlashError,
        r"^Error: (?P<msg>.*\bfail \(status = 0x[0-9a-fA-F]+\))$",
    )
    .weight(2),
    // teensy_loader_cli not knowing the chip it was told to load (`Unknown MCU type
    // "imxrt1062"`, then the ones it supports).
    re(
        "teensy_loader.unknown_mcu",
        "teensy_loader_cli",
        FlashError,
        r#"^(?P<msg>Unknown MCU type "[^"]+")$"#,
    )
    .weight(2),
    // hackrf_spiflash refusing an image built for another board.
    re(
        "hackrf.incompatible",
        "hackrf",
        FlashError,
        r"^(?P<msg>Could not find appropriate platform for board id \d+\b.*)$",
    ),
    // NXP's uuu (mfgtools): its closing count of failed boards, and the failing step of a board
    // in its status line (`2:7      1/ 0 [Failure open usb device               ]`).
    re(
        "uuu.failure",
        "uuu",
        FlashError,
        r"(?P<msg>^Success \d+\s+Failure [1-9]\d*\s*$|\[Failure (?:[^\]]*\S)\s*\]$)",
    ),
    // The BK7231 flash tools' failed write (`Writing sector 65536 failed!`, `Writing file data
    // to chip failed.`).
    re(
        "bk7231.write_failed",
        "bk7231",
        FlashError,
        r"(?P<msg>Writing sector \S+ failed!|Writing file data to chip failed\.?)$",
    ),
    // espota, the ESP OTA uploader (and ESPHome's early copy of it): the device never answered
    // after the upload (`No Result!`).
    re(
        "espota.error",
        "espota",
        FlashError,
        r"(?P<msg>ERROR \[\S*espota\S*\] .+|No Result!)$",
    ),
    // stm32flash's errors opening the port or the device it was given.
    re(
        "stm32flash.error",
        "stm32flash",
        FlashError,
        r#"^(?P<msg>Failed to open port: .+|Cannot handle device ".*"|Error probing interface ".*"|Failed to init device\b.*)$"#,
    ),
    // Black Magic Probe, through gdb: its scan or its attach to the target failed (`Attaching
    // to Remote target failed with: T05`).
    re(
        "bmp.attach_failed",
        "blackmagic",
        FlashError,
        r"^(?P<msg>Attaching to Remote target failed\b.*|(?:SW-DP|JTAG(?: device)?) scan failed!?.*)$",
    ),
    // More flashers not reaching the board or the chip: pyOCD's old flash tool, a probe-run
    // without its RTT block, LPCXpresso's Redlink, HackRF's tools, OpenOCD's `verify_image`
    // listing the bytes that differ.
    re(
        "flasher.no_board",
        "flasher",
        FlashError,
        r"(?P<msg>^No available (?:boards|debug probes) are connected\.?$|^Error: RTT control block not available\b.*|Could not start execution from stop: Ee\(\w+\)\..*|^hackrf_\w+\(\) failed: .+)$",
    ),
    re(
        "openocd.verify_diff",
        "openocd",
        FlashError,
        r"^(?P<msg>diff \d+ address 0x[0-9a-fA-F]+\. Was 0x[0-9a-fA-F]+ instead of 0x[0-9a-fA-F]+)$",
    )
    .weight(2),
    // stlink's success in its own log format (`2021-03-22T19:22:50 INFO common.c: Flash written
    // and verified! jolly good!`), and a flasher's closing `Flash complete.`.
    // avrdude's banner: an upload starts, whose outcome the log must then show (a build's
    // size report before it is no pass of the log).
    re("avrdude.banner", "avrdude", FlashError, r"^avrdude(?:\.exe)?: Version \d+\.\d+")
        .context()
        .starts_step(),
    // st-flash's banner: a flash starts, whose outcome the log must then show.
    re("stlink.banner", "stlink", FlashError, r"^st-flash v?\d+\.\d+\.\d+\S*$")
        .context()
        .starts_step(),
    re(
        "stlink.logged_success",
        "stlink",
        Pass,
        r"^\S+ INFO \w+\.c: (?P<msg>Flash written and verified! jolly good!)",
    )
    .weight(2),
    re("flash.complete", "flasher", Pass, r"^(?P<msg>Flash(?:ing)? complete[d]?[.!]*)$")
        .weight(2)
        .verdict(),
    // Silicon Labs' flash utilities and efm8load: the bootloader refused, or the download
    // counted errors (`Download complete with [ 7 ] errors`; with `[ 0 ]` it passed).
    re(
        "silabs.bootloader_failed",
        "flasher",
        FlashError,
        r"(?P<msg>Bootload(?:er)? (?:Run Command failure|returned failure response)\b.*|Download complete with \[\s*[1-9]\d*\s*\] errors)$",
    ),
    re(
        "efm8load.done",
        "efm8load",
        Pass,
        r"^(?P<msg>Download complete with \[\s*0\s*\] errors)$",
    )
    .weight(2),
    // ExpressLRS's WiFi upload script closing (`** UPLOAD SUCCESS. Flashing in progress.`).
    // A flash or upload the tool called off (ExpressLRS's `Target mismatch, flashing
    // cancelled`).
    re(
        "flash.cancelled",
        "flasher",
        FlashError,
        r"(?i)\b(?P<msg>(?:flashing|uploading|upload|programming) (?:was )?(?:cancell?ed|aborted)\b.*)$",
    )
    .weight(1)
    .generic(),
    re("elrs.upload_success", "expresslrs", Pass, r"^\*\* (?P<msg>UPLOAD SUCCESS)\b.*$").weight(2),
    // Black Magic Probe's scan that found targets: it lists them under this header (a scan
    // that found none says `SW-DP scan failed!` instead).
    re("bmp.scan_found", "blackmagic", Pass, r"^Available Targets:$").weight(2),
    // MPLAB's programmers (PICkit, ICD) and ST-LINK Utility not reaching the chip.
    re(
        "programmer.no_target",
        "flasher",
        FlashError,
        r"^(?P<msg>Failed to get Device ID\b.*|Target device was not found\b.*|Can ?not connect to target!?)$",
    ),
    // nrfutil's DFU over serial and its `device` subcommand.
    re(
        "nrfutil.failed",
        "nrfutil",
        FlashError,
        r"^(?P<msg>Failed to upgrade target\. Error is: .+|Error: One or more [\w-]+ tasks failed\b.*)$",
    ),
    re(
        "bossac.no_device",
        "bossac",
        FlashError,
        r"^(?P<msg>No device found on \S+|SAM-BA operation failed)$",
    ),
    re(
        "avrdude.error",
        "avrdude",
        FlashError,
        r"(?:^>?avrdude(?:\.exe)?(?::| \w+\(\))?|: avrdude(?:\.exe)?:) (?P<msg>.*(?:not responding|can't open device|initialization failed|verification error|not in sync|[Ee]rror|timeout|Invalid device signature).*)$",
    ),
    // mspdebug's read-back after a write (`ERROR: mismatch at b692 (read bf, expected 00)`).
    re(
        "mspdebug.verify_mismatch",
        "mspdebug",
        FlashError,
        r"^(?:ERROR: )?(?P<msg>mismatch at [0-9a-fA-F]+ \(read [0-9a-fA-F]+, expected [0-9a-fA-F]+\))$",
    ),
    // arduinoOTA's upload over the network, refused by the board's updater.
    re(
        "arduino_ota.flash_failed",
        "arduinoOTA",
        FlashError,
        r"^(?P<msg>Error flashing the sketch:.*)$",
    ),
    // A radio's or a small board's serial bootloader refusing the flasher's write command
    // (`Flash command rejected. Aborting.`).
    re(
        "bootloader.command_rejected",
        "flasher",
        FlashError,
        r"^(?P<msg>Flash(?:ing)? command rejected\b.*)$",
    ),
    // gdb and the probe's gdb server disagreeing on the target's registers (`Truncated register 0
    // in remote 'g' packet`): the debug session never started.
    re(
        "gdb.truncated_register",
        "gdb",
        FlashError,
        r"(?P<msg>Truncated register \d+ in remote 'g' packet)",
    )
    .weight(2),
    // More flashers failing: the Arduino IDE's upload port gone (`Board at COM1 is not
    // available`), wch-isp's handshake (`failed set isp key, wrong reply, got 9a (exp 0)`), old
    // dfu-util's download (`dfu_download error -32`, `Error during download`), an FT2232 probe
    // OpenOCD cannot drive, rnodeconf's `An error occurred while writing EEPROM.`,
    // teensy_loader_cli's `Device is in use by "dummy" driver`.
    re(
        "flasher.failed",
        "flasher",
        FlashError,
        r#"(?P<msg>^Board at \S+ is not available\b.*|^failed [\w ]+, wrong reply, got [0-9a-fA-F]+ \(exp [0-9a-fA-F]+\)|\bdfu_download error -?\d+|^Error during download$|couldn\S{1,3}t write MPSSE commands to FT2232.*|\bFT_Write returned: \d+|An error occurred while writing (?:EEPROM|firmware|flash)\b.*|^Device is in use by "[^"]*" driver)$"#,
    ),
    // pystlink's other starred errors (`*** Operation timeout ***`): what failed is the step
    // its command line names.
    re(
        "pystlink.starred_error",
        "pystlink",
        FlashError,
        r"^\*\*\* (?P<msg>[A-Z][\w ]*(?:timeout|error|failed|not found)[\w ]*) \*\*\*$",
    )
    .weight(1)
    .in_context(),
    // MPLAB IPE's and the PICkit's probe reading no device (`Target Device ID (0x0) is an
    // Invalid Device ID. Please check your connections to the Target Device.`), Particle's
    // CLI failing its serial or DFU write (`Error writing firmware...TimeoutError: ...`), and
    // dfu-programmer's debug trace of its failed step (`atmel.c:899: dfu_download failed.`).
    re(
        "flasher.step_reported_failed",
        "flasher",
        FlashError,
        r"^(?P<msg>Target Device ID \(0x[0-9A-Fa-f]+\) is an Invalid Device ID\..*|Error writing firmware\b.*|(?:atmel|dfu|arguments|intel_hex)\.c:\d+: \w+ failed\.?)$",
    ),
    // A flasher's step that reports its own failure (`Writing firmware to Multimodule ...
    // failed!`), the failing twin of `flash.finished`'s `Writing ... OK`.
    re(
        "flash.step_failed",
        "flasher",
        FlashError,
        r"^(?P<msg>(?:Writing|Programming|Verifying|Flashing|Erasing) [^.]*\.{3}\s*(?:failed|error)!?)$",
    ),
    // flashrom's (and flashprog's) read-back that differs from what it wrote (`VERIFY FAILED at
    // 0x00000086!`), and its warning that the chip is left half written; a forum's post may run
    // its lines together. (`ERASE FAILED!` alone is not the end: flashrom then tries another
    // erase function.)
    re(
        "flashrom.verify_failed",
        "flashrom",
        FlashError,
        r"(?:^|\s)(?P<msg>VERIFY FAILED at 0x[0-9A-Fa-f]+!.*|Your flash chip is in an unknown state\..*)$",
    ),
    // uisp's lost programmer, dfu-util's DfuSe write past the flash's last writeable page,
    // Black Magic Probe's scan that found no target, the Artemis SVL bootloader that never
    // answered, ExpressLRS's passthrough that could not reach the receiver.
    re(
        "flasher.no_target",
        "flasher",
        FlashError,
        r"^(?:__main__\.|[_*]?dfu-util(?:\.exe)?: )?(?P<msg>Programmer is not responding\.?|Last page at 0x[0-9A-Fa-f]+ is not writeable.*|(?:SWD|JTAG) scan failed!?|Target failed to enter bootload mode\..*|Failed to enter bootload phase|PassthroughFailed:.*)$",
    ),
    re(
        "stm32cube.error",
        "stm32cubeprogrammer",
        FlashError,
        r"^(?:\d\d:\d\d:\d\d : )?(?:Error: )?(?P<msg>No STM32 target found!?|No debug probe detected\.?|Target device not found.*|ST-LINK error \(DEV_.*|failed to download (?:the )?(?:Segment|file).*|failed to erase memory)$",
    ),
    // STM32CubeProgrammer's own line when a write does not go through (`Downloading 8-bit data
    // failed...`), also after its progress bar.
    re(
        "stm32cube.transfer_failed",
        "stm32cubeprogrammer",
        FlashError,
        r"(?P<msg>(?:Downloading|Uploading) \d+-bit data failed\b.*|Error in STM32CubeProgrammer\b.*)$",
    )
    .weight(2),
    // The last line of a flashing library's Python traceback names the library that raised.
    re(
        "python.flasher_exception",
        "python",
        FlashError,
        prefixed!(
            r"(?:pylink|pynrfjprog|nordicsemi|spsdk|usb\.core|pyocd|esptool)\.\S*?(?P<msg>\w+(?:Error|Exception): .+)$"
        ),
    ),
    re(
        "stflash.bad_target",
        "st-flash",
        FlashError,
        r"(?P<msg>Invalid flash type, please check device declaration|Unknown (?:chip|device) id.*)",
    ),
    re("openocd.no_flash_bank", "openocd", FlashError, r"(?P<msg>no flash bank found for address.*)$"),
    re(
        "west.flash_failed",
        "west",
        FlashError,
        r"(?i)(?P<msg>FATAL ERROR: command exited with status \d+: \S*(?:jlink\w*|nrfjprog|openocd|pyocd|st-flash|esptool\S*|dfu-util|STM32_Programmer_CLI|LinkServer|probe-rs|bossac|nrfutil)\b.*|fatal error: command flash\b.*)$",
    ),
    // west's own clone or fetch that failed: the network or the remote, not the build.
    re(
        "west.git_failed",
        "west",
        InfraError,
        r"^(?P<msg>FATAL ERROR: command exited with status \d+: git (?:clone|fetch|submodule|ls-remote)\b.*)$",
    )
    .generic(),
    // west that cannot read its workspace's manifest: the workspace is broken, not the build.
    re(
        "west.manifest",
        "west",
        InfraError,
        r"^(?:FATAL ERROR|ERROR): (?P<msg>can't load west manifest\b.*|Malformed manifest file\b.*)$",
    ),
    // west's build or flash command that cannot load (`FATAL ERROR: extension command "build"
    // couldn't be run`, older: `extension command build was improperly defined and could not be
    // run`): the step asked for failed before it started.
    re(
        "west.build_unloadable",
        "west",
        BuildError,
        r#"^`?(?:FATAL ERROR|ERROR): (?P<msg>extension command "?build"? (?:was improperly defined and )?could(?: not|n't) be run\b.*)$"#,
    ),
    re(
        "west.flash_unloadable",
        "west",
        FlashError,
        r#"^`?(?:FATAL ERROR|ERROR): (?P<msg>extension command "?(?:flash|debug|debugserver|attach)"? (?:was improperly defined and )?could(?: not|n't) be run\b.*)$"#,
    ),
    // west run outside a workspace (west 1.1 on: `west: unknown command "build"; do you need to
    // run this inside a workspace?`), or whose other extension commands cannot load: the
    // workspace is not set up, whatever command was asked for.
    re(
        "west.no_workspace",
        "west",
        InfraError,
        r#"^(?:FATAL ERROR|ERROR|west(?:: error)?): (?P<msg>no west workspace found\b.*|unknown command "[\w-]+"; (?:do you need to run this inside a workspace\?|workspace \S+ does not define this extension command\b.*)|extension command "?[\w-]+"? (?:was improperly defined and )?could(?: not|n't) be run\b.*|argument <command>: invalid choice: '(?:build|flash|debug|sign|twister|boards)'.*)$"#,
    ),
    // A west command's arguments it refused (`west build: error: argument -p/--pristine: invalid
    // choice: 'none'`): nothing ran, the step asked for failed.
    re("west.build_usage", "west", BuildError, r"^(?P<msg>west build: error: .+)$"),
    re("west.flash_usage", "west", FlashError, r"^(?P<msg>west (?:flash|debug|debugserver): error: .+)$"),
    re(
        "west.update_failed",
        "west",
        InfraError,
        r"(?:^|[\s\x22'`(])ERROR: (?P<msg>(?:update|fetch|checkout) failed for (?:projects?:? \S|multiple projects).*)$",
    )
    .weight(2),
    re(
        "west.command_failed",
        "west",
        BuildError,
        r"^(?P<msg>FATAL ERROR: command exited with status \d+.*)$",
    )
    .echo(),
    // probe-run failing to walk the stack after the program stopped (`(HOST) ERROR error
    // occurred during backtrace creation: An error with the usage of the probe occurred`): the
    // flash and the run were done, and what stopped the program is in the frames above it.
    noise(
        "probe_run.backtrace_error",
        "probe-run",
        r"^\(HOST\) ERROR error occurred during backtrace creation: ",
    ),
    // probe-rs's own errors, wherever its library's message is quoted (a debugger's log line, a
    // VS Code extension's event): the probe could not attach to or talk to the target.
    re(
        "probe_rs.attach_failed",
        "probe-rs",
        FlashError,
        r"(?P<msg>Timeout while attaching to target under reset\b.*|An error with the usage of the probe occu?rr?ed\b.*|Failed to get information for AP\b.*)$",
    ),
    // U-Boot's steps of a boot (`Verifying Checksum ... OK`, `Loading Kernel Image ... OK`): no
    // verdict of anything under test (ahead of the flashers' own `Verifying ... OK`).
    // U-Boot trying its boot sources in turn says what each one lacks; the boot goes on.
    noise(
        "uboot.source_missing",
        "u-boot",
        r"^(?:\*\* (?:Unable to read file \S+|Unrecognized filesystem type|No partition table - \w+ \d+|Invalid partition \d+|Can't read partition table|Bad device \w+ \d+) \*\*|Failed to mount ext2 filesystem\.\.\.)$",
    ),
    noise(
        "uboot.step_ok",
        "u-boot",
        r"^(?:Verifying Checksum|Loading (?:Kernel|Ramdisk|Device Tree) Image|Uncompressing \S+)(?: \.\.\.)? OK$",
    ),
    // A serial monitor opening (ESP-IDF's `--- idf_monitor on COM3 74880 ---`, pyserial's
    // `--- Miniterm on /dev/ttyUSB0  115200,8,N,1 ---`, PlatformIO's `--- Terminal on COM3 |
    // 115200 8-N-1`) and ESPHome starting an upload: the log's outcome is what that step shows
    // next, not the success of the step before. (ESPHome's `Starting log output` after its
    // upload is no such step: the upload's success is the outcome asked for.)
    noise(
        "monitor.opened",
        "monitor",
        r"^(?:--- (?:idf_monitor|esp-idf-monitor(?: \S+)?|Miniterm|Terminal) on \S+.*|INFO Uploading \S+ \(\d+ bytes\))$",
    )
    .starts_step(),
    // esptool starting to write an image: the erase before it was one step of the flash, and
    // the write's own `Hash of data verified.` says how it went.
    noise(
        "esptool.write_started",
        "esptool",
        r"^Compressed \d+ bytes to \d+\.\.\.$",
    )
    .starts_step(),
    // A flasher's own closing success line: the image is on the board. A log that ends there
    // is a pass (nothing failed); anything a later line shows failing ranks above it.
    re(
        "flash.verified",
        "flasher",
        Pass,
        prefixed!(
            r"(?P<msg>\*\* Verified OK \*\*|Hard resetting(?: via RTS pin)?\.{3,}|Staying in bootloader\.|Leaving\.\.\.|svf file programmed successfully for \d+ commands with 0 errors|Flash written and verified! jolly good!|avrdude(?:\.exe)?: \d+ bytes of flash verified|File downloaded successfully|Download done\.|Bytes written: \d+|(?:INFO )?Successfully uploaded program\.|(?:>> )?Micronucleus done\. Thank you!|Download verified successfully|Device programming completed\.|CRC check passed\. Binaries successfully loaded\.|MD5 verified: [0-9a-fA-F]+|Erase/write done\.|The device was asked to reboot back into application mode\.|Image written\.)$"
        ),
    )
    .weight(2),
    // pyOCD's loader summary, probe-rs's closing `Finished in 1.2s` (and its flash algorithm
    // tests' `Finished programming in 33ms`), a step a small flasher reports done (`Writing
    // APROM...OK`, `Writing binary file 1024 bytes at 0x8000... OK`), bossac's full progress bar.
    re(
        "flash.finished",
        "flasher",
        Pass,
        r"(?P<msg>Erased \d+ bytes \(\d+ sectors?\), programmed \d+ bytes \(\d+ pages?\), skipped \d+ bytes.*|^\s*Finished (?:(?:programming|erasing|flashing) )?in [\d.]+(?:m?s| seconds)|^Validating\.\.\.\s+Success|^0x[0-9A-Fa-f]+ bytes written into 0x[0-9A-Fa-f]+ bytes memory \([\d.]+%\)\.|^(?:Writing|Programming|Verifying|Flashing) [^.]*\.{3}\s*OK|^\[=+\] 100% \(\d+/\d+ pages\)|\bVERIFY OK)$",
    )
    .weight(2),
    // OpenOCD's and DfuSe dfu-util's closing success inside a pasted log a forum flattened into
    // one line, and
    // dfu-util's full progress bar, and gdb's summary of a `load` that wrote every section.
    re(
        "flash.done_mid_line",
        "flasher",
        Pass,
        r"(?P<msg>\*\* Verified OK \*\*|Download done\. File downloaded successfully|\[#{10,}\] finished!$|^Transfer rate: \d+ (?:KB|bytes)/sec, \d+ bytes/write\.)",
    )
    .weight(2),
    // More flashers' closing success lines: nrfjprog's progress line `Verify file - Done
    // verifying`, flashrom's `Verifying flash... VERIFIED.`, Black Magic Probe's command-line
    // tool's `Read/Verify succeeded for N bytes`, OpenOCD's `verified N bytes`, stm32flash's
    // last write at 100%, esptool's erase, J-Link's flash download summary, Rockchip's upgrade_tool's `Upgrade firmware ok.`.
    re(
        "flash.closing_line",
        "flasher",
        Pass,
        r"(?P<msg>\|\s*Verify file - Done verifying|^Verifying flash\.\.\. VERIFIED\.|Read/Verify succeeded for \d+ bytes\b.*|^verified \d+ bytes\b.*|^Wrote (?:address|and verified address) 0x[0-9a-fA-F]+ \(100\.00%\) Done\.|Chip erase completed successfully in [\d.]+ ?s|J-Link: Flash download: Total time needed: .*|^Verification OK|\bVerifying\.\.\. OK!.*|^Upgrade firmware ok\.|^Updating application: \d+ of \d+ bytes transferred\.{3}OK|^Programming BIN: \|=+\| 100\.0%.*|^PGM Memory Verification finished successfully\.|^Verifying Flash:\s+\[=+\]\s+100%|\bAll images download done)$",
    )
    .weight(2),
    // teensy_loader_cli: `Programming....` then `Booting` once the image is written.
    re("teensy.programming", "teensy", FlashError, r"^Programming\.*$").context(),
    re("teensy.booting", "teensy", Pass, r"^(?P<msg>Booting)$")
        .weight(2)
        .follows(&["teensy.programming"]),
    // One segment written and checked: no pass by itself, a flash may have more to write.
    re("esptool.segment_verified", "esptool", Pass, r"^(?P<msg>Hash of data verified\.)$").weight(1),
    // A flasher that finds no board to flash (TinyGo's `unable to locate a USB device to be
    // flashed`, uploaders' `could not find a device to flash`).
    re(
        "flash.no_device",
        "flasher",
        FlashError,
        r"(?i)(?P<msg>(?:unable to|cannot|can't|could not|couldn't|failed to) (?:locate|find|detect) (?:a |the |any )?(?:\w+ )?(?:USB )?(?:device|board|target) to (?:be )?(?:flash|program|upload)\w*.*)$",
    ),
    // Bouffalo Lab's blisp (and PineFlash, which runs it) that got no answer from the chip's
    // ROM bootloader.
    re(
        "blisp.no_handshake",
        "blisp",
        FlashError,
        r"^(?:Blisp: )?(?P<msg>Failed to handshake with device\.?|Received no response from chip\.?)$",
    ),
    // esptool-ck, the ESP8266 Arduino core's old uploader (`error: espcomm_open failed`, in a
    // quoted paste too).
    re(
        "esptool_ck.failed",
        "esptool-ck",
        FlashError,
        r#"^"?error: (?P<msg>espcomm_\w+ failed)"?$"#,
    ),
    // AliOS Things' `aos burn` that could not put the board into its bootloader.
    re(
        "aos.burn_failed",
        "aos",
        FlashError,
        r"^\[ScriptPrint\] (?P<msg>(?:reboot|burn|download)\w* fail(?:ed)?\b.*)$",
    ),
    // FlyMcu, the STM32 serial-bootloader flasher, writing in Chinese: `写入出错在0KB` (a
    // write error at 0 KB).
    re("flymcu.write_error", "flymcu", FlashError, r"(?P<msg>写入出错.*)$"),
    // A Chinese flasher's closing success: `烧录完成 (耗时 33.3 秒)` (burning complete).
    re("flasher.done_chinese", "flasher", Pass, r"(?P<msg>烧录(?:完成|成功).*)$").weight(2),
    // The Crazyflie's cfloader putting the radio's target into its bootloader: its traceback
    // is the flash's.
    re("cfloader.reset", "cfloader", FlashError, r"^Reset to bootloader mode\b").context(),
    // The Teensy loader asking for the PROGRAM button: the board never entered its bootloader.
    re(
        "teensy.no_program_mode",
        "teensy",
        FlashError,
        r"(?P<msg>Teensy did not respond to a USB-based request to enter program mode\b.*)$",
    ),
    // ESPHome's upload losing its connection mid-image (`ERROR Error sending data: [Errno 32]
    // Broken pipe`).
    re(
        "esphome.upload_failed",
        "esphome",
        FlashError,
        r"^ERROR (?P<msg>Error sending data: .*)$",
    ),
    // dfu-programmer refusing an image that would overwrite its bootloader (QMK Toolbox then
    // says `Flash complete` all the same).
    re(
        "dfu_programmer.bootloader_overlap",
        "dfu-programmer",
        FlashError,
        r"^(?:> )?(?P<msg>Bootloader and code overlap\.)$",
    ),
    // A flash chip's status register that did not take the value written (bk7231tools'
    // exception: `RuntimeError: Writing Status Register failed: wrote 0x0000, got 0x0001`; a
    // firmware's own flash driver may log the words), an ESC configurator that could not read
    // an ESC through its passthrough, OpenOCD's RISC-V hart that never ran after a reset.
    re(
        "flasher.target_unresponsive",
        "flasher",
        FlashError,
        r"(?P<msg>\bRuntimeError: Writing Status Register failed\b.*|\bFailed (?:reading|writing|flashing) ESC \d+\b.*|\bHart \d+ didn't run coming out of reset\b.*)$",
    ),
    // The Arduino IDE's uploader that could not open the board's port to reset it into its
    // bootloader (`Error touching serial port '/dev/cu.usbmodem1411'.`).
    re(
        "arduino.touch_port_failed",
        "arduino",
        FlashError,
        r"(?P<msg>\bError touching serial port '[^']+'.*)$",
    ),
    // Proxmark3's flasher losing the device mid-write.
    re(
        "proxmark.send_failed",
        "proxmark3",
        FlashError,
        r"^(?P<msg>Sending bytes to proxmark failed)\b",
    ),
    // mspdebug's serial port for the ROM bootloader (`sport_open: System cannot find the file
    // specified.`).
    re("mspdebug.sport_open", "mspdebug", FlashError, r"^(?P<msg>sport_open: .+)$"),
    // mspdebug's FET that did not open, answer or tell the chip (`fet: identify failed`), and TI's
    // MSP430 debug library under it (`tilib: MSP430_Erase: Could not communicate with FET
    // (error = 35)`).
    re(
        "mspdebug.fet_failed",
        "mspdebug",
        FlashError,
        r"^(?P<msg>fet: (?:(?:open|init|identify|reset|final reset|erase command|JTAG configuration|Spy-Bi-Wire configuration) failed|command C_IDENT1 failed|message C_IDENT2 failed|FET returned (?:NAK|error code \d+.*))|tilib: MSP430_\w+: .+\(error = \d+\))$",
    ),
    // dfu-util with two boards in DFU mode and nothing to tell them apart.
    re(
        "dfu_util.many_devices",
        "dfu-util",
        FlashError,
        r"^(?P<msg>More than one DFU capable USB device found!.*)$",
    ),
    // bossac's read-back after writing (`Verify successful`): the flash is done and checked.
    re("bossac.verified", "bossac", Pass, r"^(?P<msg>Verify successful)$").weight(2),
    // bossac, as the Arduino IDE runs it, that found no SAM-BA bootloader on the port.
    re(
        "bossac.no_board",
        "bossac",
        FlashError,
        r"^(?P<msg>Couldn't find a Board on the selected port\..*)$",
    ),
    // OpenOCD's Xtensa debug module: an instruction the probe had the core run failed
    // (`DSR (00000088) indicates DIR instruction generated an overrun!`).
    re(
        "openocd.xtensa_dir_failed",
        "openocd",
        FlashError,
        r"(?P<msg>\bDSR \([0-9A-Fa-f]+\) indicates DIR instruction generated an (?:overrun|exception)!)",
    ),
    // uf2conv, as the Arduino-Pico core runs it, that found no drive to copy the image to.
    re("uf2conv.no_drive", "uf2conv", FlashError, r"^(?P<msg>Unable to build drive list)$"),
    // kflash (Kendryte K210): its ISP handshake names the step of a bare Python error after it.
    re(
        "kflash.isp",
        "kflash",
        FlashError,
        r"^\[INFO\] (?:Trying to Enter the ISP Mode|Greeting Message Detected)",
    )
    .context(),
    // pylink's J-Link flash write that failed, as its exception names it in a traceback.
    re(
        "pylink.flash_exception",
        "pylink",
        FlashError,
        r"(?P<msg>\bJLinkFlashException\b.*)$",
    ),
    // NXP's uuu (mfgtools): a command of its script failed (`1:15>Fail
    // Bulk(W):LIBUSB_ERROR_TIMEOUT`).
    re("uuu.fail", "uuu", FlashError, r"^(?:\d+%)?\d+:\d+>(?P<msg>Fail\b.*)$"),
    // PX4's uploader (px_uploader.py) talking to the board's bootloader.
    re(
        "px4.uploader",
        "px4",
        FlashError,
        r"(?P<msg>timeout waiting for data(?: \(\d+ bytes?\))?|bootloader reports (?:INVALID OPERATION|OPERATION FAILED)\b.*|Bootloader not responding\b.*)$",
    ),
    // DAPLink's ASSERT.TXT: the interface firmware's own assert, `Assert`, then its file.
    re("daplink.assert_header", "daplink", Assert, r"^Assert$").context(),
    re("daplink.assert", "daplink", Assert, r"^File: (?P<msg>\S+\.(?:c|cpp|h))$")
        .follows(&["daplink.assert_header"]),
    // DAPLink's FAIL.TXT, the drag-and-drop programmer's reason the image was not written.
    re(
        "daplink.fail",
        "daplink",
        FlashError,
        r"(?P<msg>The transfer timed out\.|File sent out of order by PC\..*|The interface firmware FAILED to .*|Target might not be programmed correctly\.?)$",
    ),
    // DAPLink's own test runner (test/test_all.py): a failed step of a board's test (`Test:
    // daplink_test: Failure`), a configuration that failed (`APP=... Board=...: Fail`), and its
    // closing `One or more tests have failed`.
    re(
        "daplink.test_failed",
        "daplink",
        TestFailure,
        r"^\s*(?P<msg>Test: [\w .-]+: Failure|APP=\S+ BL=\S+ Board=\S+ Target=\S+: Fail|One or more tests have failed)$",
    ),
    // Nordic's nrfjprog and nrfutil log lines, and a chip whose debug access is locked.
    re("nordic.log_error", "nrfjprog", FlashError, r"^\[error\] \[\s*\w+\s*\] - (?P<msg>.+)$")
        .weight(2),
    // An Arm debug port that does not answer (Simplicity Commander, J-Link): the probe never got
    // to the flash.
    re(
        "arm_debug.port_failed",
        "debug-probe",
        FlashError,
        r"^(?P<msg>(?:DP|AP) (?:write|read) failed\b.*|Could not access Debug challenge interface\b.*)$",
    ),
    // TI's debug server (Code Composer Studio, UniFlash), its lines led by the core's name
    // (`CORTEX_M4_0: Error connecting to the target: (Error -1063 @ 0x0) ...`, `Cortex_M4_0: File
    // Loader: Memory write failed: ...`): the probe could not reach or program the part.
    re(
        "ti_debug.error",
        "ti-debug",
        FlashError,
        r"(?P<msg>Error connecting to the target:.*|\w+: Trouble (?:Writing|Reading) Memory Block at 0x[0-9A-Fa-f]+\b.*|Cannot write to target\.?|File Loader: (?:Memory write|Verification|Data verification) failed\b.*|Flash Programmer: Error\b.*|\(Error -\d+ @ 0x[0-9A-Fa-f]+\).*)$",
    ),
    // NXP's Redlink server (MCUXpresso's probe driver) that cannot take the core.
    re(
        "redlink.cannot_halt",
        "redlink",
        FlashError,
        r"^(?:Error: )?(?P<msg>Failed on chip setup\b.*|Cannot halt processor\.?|Failed on connect: .*|No connection to chip's debug port|Error reported by server \((?:redlinkserv|crt_emu_\w+)(?:\.exe)?\):?|LinkServer has been terminated\b.*)$",
    ),
    // STMicroelectronics' ST-LINK GDB server that finds no probe or no target behind it.
    re(
        "stlink_gdb.init_failed",
        "st-link-gdb-server",
        FlashError,
        r"^(?:Reason: )?(?P<msg>Error in initializing ST-LINK device\.|Target no device found|No device found on target\.)$",
    ),
    // Nordic's nRF Connect Programmer reporting its probe library's error code.
    re(
        "nrf_programmer.error",
        "nrf-connect",
        FlashError,
        r"(?P<msg>Could not fetch memory size of target\b.*|.*\bErrorcode: \w+ \(0x[0-9A-Fa-f]+\).*)$",
    ),
    // An Eclipse-based IDE (STM32CubeIDE, MCUXpresso) whose debug launch failed: what its gdb
    // then says of the connection is the probe's failure.
    re(
        "eclipse.launch_failed",
        "eclipse",
        FlashError,
        r"^Error in final launch sequence:?$",
    )
    .context(),
    // OpenOCD's Tcl trace under a script that failed (`in procedure 'sflash_init' called at
    // file "sflash_write.tcl", line 262`).
    re(
        "openocd.tcl_trace",
        "openocd",
        FlashError,
        r#"^(?P<msg>in procedure '[\w:.-]+'(?: called at file "[^"]+", line \d+)?)\s*$"#,
    )
    .weight(1)
    .generic(),
    // J-Link Commander's `loadfile` that could not write (`Writing target memory failed.`);
    // wch-isp's verify; BK7231's uartprogram that cannot take the bus.
    re(
        "flasher.write_failed",
        "flasher",
        FlashError,
        r"^(?P<msg>Writing target memory failed\.|Fail(?:ed)? to verify chunk @ .*|Cannot get bus\.(?:\s*:.*)?)$",
    ),
    // espota's answer from a device that refused the upload (`15:19:54 [ERROR]: Bad Answer:
    // ERR: ERROR[4]: Not Enough Space`).
    re("espota.bad_answer", "espota", FlashError, r"(?P<msg>Bad Answer: .*)$"),
    // dfu-util's progress bar ending in failure.
    re(
        "dfu_util.download_failed",
        "dfu-util",
        FlashError,
        r"^(?P<msg>(?:Download|Upload)\s*\[[= ]*\]\s*\d+%\s*\d+ bytes failed!?)$",
    ),
    // STM32CubeProgrammer's GUI log (`14:48:45 : Memory Programming ...`): its errors are the
    // flash's.
    re(
        "stm32cube.gui_context",
        "stm32cubeprogrammer",
        FlashError,
        r"^(?:\d\d:\d\d:\d\d\s*)?:?\s*(?:Memory Programming \.\.\.|Opening and parsing file: \S+)$",
    )
    .context(),
    re(
        "stm32cube.gui_error",
        "stm32cubeprogrammer",
        FlashError,
        r"^(?:\d\d:\d\d:\d\d\s*)?:\s*Error: (?P<msg>.+)$",
    )
    .in_context(),
    // The Proxmark3 flasher: a block the bootloader refused, or its closing word after the reset.
    re(
        "proxmark.flash_failed",
        "proxmark3",
        FlashError,
        r"^(?P<msg>Error writing block \d+ of \d+\b.*)$",
    ),
    re("proxmark.resetting", "proxmark3", FlashError, r"^Resetting hardware\.\.\.$").context(),
    re("proxmark.flash_done", "proxmark3", Pass, r"^(?P<msg>All done\.)$")
        .weight(2)
        .follows(&["proxmark.resetting"]),
    // Oxide's Humility flashing a Hubris image.
    re(
        "humility.flash_failed",
        "humility",
        FlashError,
        r"^(?P<msg>humility (?:flash|erase|program) failed\b.*)$",
    ),
    // ESPHome's over-the-air upload that the device stopped answering.
    re(
        "esphome.ota_failed",
        "esphome",
        FlashError,
        r"^(?:ERROR |WARNING )?(?P<msg>No response from the ESP\b.*|Error receiving acknowledge\b.*|OTA v2 method failed\b.*)$",
    ),
    // The Teensy Loader's own log (its clock stamp cut off): the board never rebooted into its
    // bootloader.
    re(
        "teensy.loader_failed",
        "teensy",
        FlashError,
        r"^(?P<msg>reboot error|offline failed, timeout after \d+)$",
    ),
    re(
        "flash.protected",
        "flasher",
        FlashError,
        r"(?i)(?P<msg>.*\b(?:ap-?protection|approtect|readback protection|read-?out protection)\b.*\b(?:enabled|unavailable|active|set)\b.*)$",
    ),
    // west flash handing over to its runner after the build: the flash is a later step, whose
    // outcome the build's success is not.
    re(
        "west.runner_started",
        "west",
        FlashError,
        r"^(?:-- )?(?:west flash: using runner \S+|runners\.\w+: Flashing file: .*)$",
    )
    .context()
    .starts_step(),
    // esptool's banner and its `Connecting....`, the same context, and the start of its run:
    // a build's success before them is no pass of the log.
    re(
        "flash.context_esptool",
        "esptool",
        FlashError,
        r"^(?:(?:DEBUG|INFO)\s+- )?(?:esptool(?:\.py)? v\d.*|Connecting\.{2,}.*)$",
    )
    .context()
    .starts_step(),
    // Lines that say a log comes from a flasher (its banner, its progress, a command line that
    // runs it, after a shell's prompt, a `C:\...>` one or an IDE task's, or none: a Markdown
    // quote's `> ` is cut before the rules read a line): its generic failures are the flash's.
    re(
        "flash.context",
        "flasher",
        FlashError,
        r#"^(?:(?:DEBUG|INFO)\s+- |Info:\s*\S+\.c:\d+ \w+\(\): )?(?:Open On-Chip Debugger \S+.*|Info : auto-selecting first available session transport .*|Info : Listening on port \d+ for (?:gdb|tcl|telnet) connections|\*\* Programming Started \*\*|### Flashing Target ###|(?:-- )?west flash: .*|Using runner: \S+|(?:-- )?runners\.\w+: Flashing file: .*|Flashing Target Device|\(HOST\) INFO\s+flashing program.*|Running `(?:probe-(?:run|rs) |espflash (?:flash |--)).*|Configuring upload protocol\.\.\.|Looking for upload port\.\.\.|Uploading \S+\.(?:bin|hex|elf|uf2|zip)|Flashing (?:"[^"]+"|\S*/\S+)|(?:(?:(?:[\w.~/-]+ )?[$>%#]|\*\s+Executing task:|\S+@\S+:\S*[$#]) |(?:PS )?[A-Za-z]:\\[^>]*> ?)?(?:sudo )?(?:\S*[/\\])?(?:picotool (?:load|flash)|cargo (?:flash|embed|dfu|espflash)|python\S* uartprogram\b|python\S* (?:\S*[/\\])?\w*(?:[Ff]lash|stlink)\w*\.py\b|esptool(?:\.py)? .*write_flash|st-flash .*write|(?:dfu-util|avrdude)(?:\.exe)? -|JLinkExe|nrfjprog .*--program|probe-rs (?:download|run)|pyocd (?:flash|load)|openocd .*program|mcumgr(?:\.exe)? .*\bimage upload)\b.*)$"#,
    )
    .context(),
    // OpenOCD's banner in a vendor's build of it (`GNU MCU Eclipse (Microsemi SoftConsole build)
    // 64-bits Open On-Chip Debugger 0.10.0+dev-...`).
    re(
        "openocd.vendor_banner",
        "openocd",
        FlashError,
        r"^\S.* Open On-Chip Debugger \d\S*.*$",
    )
    .context(),
    // A web flasher's own scripts logging (the Betaflight configurator's `firmware_flasher.js:382
    // File loaded`, its DFU protocol's frames): what fails after is the flash.
    re(
        "js_flasher.context",
        "flasher",
        FlashError,
        r"^(?:\S*(?:firmware_flasher|stm32usbdfu|stm32)\.js:\d+ |\s*at STM32DFU_protocol\.)",
    )
    .context(),
    // A browser extension's API call that failed (`Error in response to usb.getDevices: ...`).
    re(
        "chrome.api_error",
        "browser",
        InfraError,
        r"(?P<msg>Error in response to [\w.]+: .+)$",
    )
    .generic(),
    // TI's MSP430 Flasher's banner (`*    /_   /   MSP430 Flasher v1.3.7   *`).
    // TI's MSP Flasher: its banner (`MSP430 Flasher v1.3`, later `MSP Flasher v1.3.15`) and
    // command line name the step of its bare `ERROR:` lines.
    re(
        "msp430_flasher.banner",
        "msp430-flasher",
        FlashError,
        r"(?:MSP(?:430)? Flasher v\d|^MSP430Flasher(?:\.exe)? -)",
    )
    .context(),
    // MSP Flasher's last words after a failure (`* Driver : closed (Internal error)`); a run that
    // went well closes it with `(No error)`.
    re(
        "msp430_flasher.driver_error",
        "msp430-flasher",
        FlashError,
        r"^\*\s*Driver\s*:\s*closed \((?P<msg>(?:[^N]|N[^o]|No[^ ]|No [^e]|No e[^r]).*)\)$",
    ),
    // No MSP430 debug interface (a FET) found: MSP430 Flasher's and mspdebug's words.
    re(
        "msp430.no_fet",
        "msp430",
        FlashError,
        r"^(?:\* )?(?P<msg>Couldn't find any connected USB FETs!|No unused FET found\.)$",
    ),
    // edbg's first line names the CMSIS-DAP debugger it opened: its bare `Error:` lines are the
    // flash's.
    re("edbg.debugger", "edbg", FlashError, r"^Debugger: .+ CMSIS-DAP\b.*$").context(),
    re(
        "python.flasher_frame",
        "python",
        FlashError,
        r#"^\s*File "(?:.*[/\\])?(?:esptool|pyocd|pyOCD|west_commands[/\\](?:flash|run_common|runners)|pynrfjprog|nrfjprog|nrfutil|nordicsemi|pylink|bossac|tockloader|stm32loader|pyupdi|kflash|flash[-_][\w-]*\.py|[\w-]*(?:_bootloader|flasher|uploader))\b"#,
    )
    .context(),
    // A frame of an SCons build script or of SCons itself (PlatformIO's builder runs on it): a
    // traceback through it is the build's.
    re(
        "python.build_script_frame",
        "python",
        BuildError,
        r#"^\s*File "(?:(?:.*[/\\])?(?:SConscript|SConstruct)(?:\.py)?"|.*[/\\](?:SCons|platformio[/\\]builder)[/\\]).*, line \d+"#,
    )
    .context(),
    // A frame of Python's subprocess starting a program: a traceback through it that ends in
    // `FileNotFoundError` is a program that is not there.
    re(
        "python.spawn_frame",
        "python",
        ToolMissing,
        r#"^>?\s*File "(?:.*[/\\])?subprocess\.py", line \d+, in _execute_child$"#,
    )
    .context(),
    // A frame of ESPHome's configuration and code generation: a traceback through it is the
    // build's.
    re(
        "python.esphome_codegen_frame",
        "python",
        BuildError,
        r#"^\s*File "(?:.*[/\\])?esphome[/\\](?:config|codegen|cpp_generator|cpp_helpers|yaml_util)\.py", line \d+"#,
    )
    .context(),
    // A frame of a test harness's or lab tool's own code: a traceback through it is the
    // harness's failure, not the firmware's.
    re(
        "python.harness_frame",
        "python",
        InfraError,
        r#"^\s*File "(?:\S*[/\\])?(?:labgrid|twisterlib|pytest_embedded\w*|_pytest|pluggy)[/\\]"#,
    )
    .context(),
    // A LAVA job's own action lines: a lab tool's log, so its vague errors are the lab's.
    re(
        "lava.context",
        "lava",
        InfraError,
        r"^(?:\d\d:\d\d:\d\d\.\d+\s+)?(?:start|end): \d+(?:\.\d+)* [\w-]+ \((?:timeout|duration) \d\d:\d\d:\d\d\) \[\w+\]$",
    )
    .context(),
    // A CI job's own trailer says the job's script exited 0, not that the firmware passed: a
    // runner that reports failed tests and exits 0 is followed by it all the same.
    noise(
        "ci.job_succeeded",
        "ci",
        r"^(?:Job succeeded|Finished: SUCCESS|Build succeeded\.?|##\[section\]Finishing: .*)$",
    ),
    // The environment: the host, its disks, its network, its serial ports, QEMU itself.
    noise("qemu.warning", "qemu", qemu!("warning: ")),
    // dfu-util asks a device that has already re-enumerated into its new firmware to reset:
    // the download before it succeeded, so the line is no failure.
    noise(
        "dfu_util.reset_after_download",
        "dfu-util",
        r"^dfu-util(?:\.exe)?: error resetting after download\b",
    ),
    re(
        "qemu.terminated_by_runner",
        "qemu",
        Hang,
        qemu!(r"(?P<msg>terminating on signal \d+ from pid \d+ \((?:timeout|fwfix)\))$"),
    ),
    // Ctrl-C: the user stopped a run that had not failed.
    noise("qemu.interrupted", "qemu", qemu!(r"terminating on signal 2(?:\s|$)")),
    re("qemu.terminated", "qemu", InfraError, qemu!(r"(?P<msg>terminating on signal \d+.*)$"))
        .timeout_explains(),
    re(
        "qemu.outside_ram",
        "qemu",
        Crash,
        qemu!(r"(?P<msg>Trying to execute code outside RAM or ROM.*)$"),
    ),
    re("qemu.start_error", "qemu", InfraError, qemu!(r"(?P<msg>.+)$")),
    // An emulator's own assertion (QEMU's GLib `g_assert`: `ERROR:../hw/core/cpu.c:42:foo:
    // assertion failed: (x)`, after `**` or as `Bail out!`, or quoted in a report): the
    // emulator broke, not the firmware it ran.
    re(
        "emulator.internal_assert",
        "qemu",
        InfraError,
        r#"^["'`]?(?:Bail out! )?ERROR:(?P<msg>\S+\.c:\d+:\w+:\s+(?:assertion failed\b|code should not be reached\b).*)$"#,
    ),
    // The GNU ARM Eclipse (xPack) QEMU's report of a semihosted program's exit status: 0 is the
    // program's own success.
    re("qemu.semihosting_exit_ok", "qemu", Pass, r"^(?P<msg>QEMU exit\(0\))$")
        .weight(2)
        .verdict(),
    // A CPU simulator (usim, a 6809's) stopping on an opcode the firmware should never run.
    re(
        "simulator.invalid_instruction",
        "simulator",
        Crash,
        r"^(?P<msg>invalid instruction\s*: pc = \[[0-9A-Fa-f]+\].*)$",
    ),
    // labgrid's exporter marking a resource it could not start (`marked as broken: start
    // failed`): the lab's.
    re("labgrid.resource_broken", "labgrid", InfraError, r"\bmarked as broken: (?P<msg>.+)$"),
    // Node.js's network errors (`Error: connect ETIMEDOUT 52.216.64.224:443`, `getaddrinfo
    // ENOTFOUND`): a download or a service the lab needs did not answer.
    re(
        "node.network_error",
        "node",
        InfraError,
        r"^(?:\w*Error: )?(?P<msg>(?:connect|getaddrinfo|read) (?:ETIMEDOUT|ECONNREFUSED|ECONNRESET|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EAI_AGAIN)\b.*)$",
    ),
    // A test runner's shell that never showed its prompt (Phoenix-RTOS's `SHELL ERROR:
    // Couldn't find a prompt!`): it timed out waiting for the device.
    re("runner.no_prompt", "runner", Hang, r"^SHELL ERROR: (?P<msg>Couldn't find a prompt!)"),
    // A host tool written in Go (AWS IoT Device Tester) panicking, through its logger
    // (`level=error msg=panic: runtime error: ...`): the harness broke, not the firmware.
    re(
        "host.go_panic_logged",
        "host",
        InfraError,
        r#"\blevel=error msg="?(?P<msg>panic: .+)$"#,
    ),
    // A Python tool's exception message printed bare (`index out of range`): something broke,
    // in the step a context names.
    re("python.bare_index_error", "python", InfraError, r"^(?P<msg>(?:list |string |tuple )?index out of range)$")
        .generic(),
    // A download whose checksum is not the one expected (`Error: Downloaded GCC MD5 doesn't
    // match expected value`): the lab's.
    re(
        "download.checksum_mismatch",
        "host",
        InfraError,
        r"(?P<msg>\bDownloaded [\w.-]+ (?:MD5|SHA\d*) doesn't match expected value\b.*)$",
    ),
    // Python itself failing while it printed a program's exception: the tool broke, and the
    // log says no more of why.
    re("python.excepthook_failed", "python", InfraError, r"^(?P<msg>Error in sys\.excepthook:)$")
        .generic(),
    // QEMU's object model refusing a cast (`esp_cpu.c:81:esp_cpu_riscv_to_cpu: Object 0x... is
    // not an instance of type espressif-riscv-cpu`), which aborts the emulator: its bug.
    re(
        "qemu.object_cast",
        "qemu",
        InfraError,
        r"(?P<msg>Object 0x[0-9A-Fa-f]+ is not an instance of type \S+)",
    )
    .weight(2),
    // Jumpstarter (a lab's board service) failing a driver call or losing its exporter.
    re(
        "jumpstarter.error",
        "jumpstarter",
        InfraError,
        r"^Error: (?P<msg>DriverCall '[^']*' failed with gRPC .*|Connection to exporter lost\b.*)$",
    )
    .weight(2),
    // QEMU's TCG interpreter stopping on an instruction it cannot run (`tci.c:1234: tcg fatal
    // error`): the emulator broke.
    re("qemu.tcg_fatal", "qemu", InfraError, r"^\S+\.c:\d+: (?P<msg>tcg fatal error)$"),
    // The same from an emulator or simulator built on glibc, named in its assert line
    // (`rv32emu: malloc.c:2617: sysmalloc: Assertion `...' failed.`,
    // `emulator-rocketchip-DefaultConfig: ../fesvr/dtm.cc:69: ...: Assertion `n <= ram_words()'
    // failed.`).
    re(
        "emulator.host_assert",
        "emulator",
        InfraError,
        r"^(?:- )?[*`]*(?P<msg>(?:[\w.+-]*(?i:qemu|emulator|simulator)[\w.+-]*|[\w.+-]*(?i:emu)|spike|verilator[\w.+-]*|gem5[\w.+-]*): \S+:\d+: .*Assertion [`'].*' failed\.?)[*`]*$",
    ),
    // The Windows C runtime's assertion report (`Assertion failed!`, then `Program:` and the
    // program's path, on its line or the next): an emulator's path makes the assertion the
    // emulator's own.
    re(
        "emulator.crt_program",
        "emulator",
        InfraError,
        r"^(?:Program:\s*)?\S*(?i:qemu|renode|emulator|simulator)\S*\.exe$",
    )
    .context(),
    re("host.no_space", "host", InfraError, r"(?i)no space left on device"),
    // Arm Trusted Firmware's EL3 exception report (`ERROR:   Unhandled External Abort received
    // on 0x81000000 from EL3`, its `Excepton received on ...`): the firmware faulted.
    re(
        "tf_a.exception",
        "tf-a",
        Crash,
        r"^(?:ERROR:\s+)?(?P<msg>Unhandled (?:External Abort|Exception|Asynchronous Abort) (?:received on 0x[0-9A-Fa-f]+ from|in|at) EL\d.*|Excepti?on received on 0x[0-9A-Fa-f]+, spsr_el3:.*)$",
    ),
    // A frame of a backtrace (gdb's `#0  0x100002c4 in isr_hardfault ()`, probe-run's `0:
    // HardFaultTrampoline` or `0: 0x000015b0 @ HardFaultTrampoline`) in a fault handler, in
    // the default handler an unexpected exception lands in (STM32's startup code aliases it,
    // so gdb names it `WWDG_IRQHandler`), or in ChibiOS's halt (`chSysHalt`, `chDbgPanic3`):
    // the firmware faulted or panicked.
    re(
        "backtrace.fault_handler",
        "gdb",
        Crash,
        r"^(?:#\d+\s+(?:0x[0-9A-Fa-f]+ in )?|\d+: (?:0x[0-9A-Fa-f]+ @ )?)(?P<msg>(?:isr_hardfault|HardFault_Handler|HardFaultTrampoline|MemManage_Handler|BusFault_Handler|UsageFault_Handler|hard_fault_handler\w*|Default_Handler|WWDG_IRQHandler|chSysHalt|chDbgPanic\d*)\b.*)$",
    )
    .weight(2),
    // ser2net (the lab's serial server, labgrid's) refusing its configuration
    // (`<cmdline>:5(column 0): Invalid accepter port name/number ...`).
    re(
        "ser2net.config_error",
        "ser2net",
        InfraError,
        r"^(?P<msg>(?:<cmdline>|\S*ser2net\S*\.ya?ml):\d+\(column \d+\): .*)$",
    ),
    // arduino-cli's download that arrived corrupt or cut: the network's or the mirror's.
    re(
        "arduino_cli.archive_corrupt",
        "arduino-cli",
        InfraError,
        r"(?P<msg>.*\btesting (?:local )?archive (?:integrity|size|checksum)\b.*)$",
    ),
    // A Ruby tool that raised (`...cpp_library.rb:185:in `build': wrong number of arguments
    // (given 3, expected 4) (ArgumentError)`): the tool broke.
    re(
        "ruby.exception",
        "ruby",
        InfraError,
        r"^(?:\S+\.rb:\d+:in )?(?P<msg>`?[\w?!]+': .+ \((?:[A-Z]\w*::)*[A-Z]\w*(?:Error|Exception)\))$",
    )
    .generic(),
    // arduino-cli that cannot read its own packages directory: the installation's, not the
    // sketch's.
    re(
        "arduino_cli.package_manager",
        "arduino-cli",
        InfraError,
        r"^(?P<msg>Error initializing package manager: .*)$",
    ),
    // BitBake's disk space monitor stopping the build.
    re(
        "bitbake.disk_monitor",
        "bitbake",
        InfraError,
        r#"(?P<msg>(?:No new tasks can be executed|Immediately (?:abort|halt)) since the disk space monitor action is "\w+"!?)"#,
    ),
    // A CI runner that was lost or cancelled, a package manager or container that could not
    // get what the job needs.
    re(
        "ci.runner_lost",
        "ci",
        InfraError,
        r"(?P<msg>The runner has received a shutdown signal\..*|##\[error\]The operation was canceled\.|Job failed \(system failure\).*)$",
    ),
    re(
        "ci.step_failed",
        "ci",
        BuildError,
        r"^(?P<msg>##\[error\]Process completed with exit code [1-9]\d*\.?|Error: Process completed with exit code [1-9]\d*\.?|ERROR: Job failed: exit code [1-9]\d*)$",
    )
    .weight(1)
    .echo(),
    re(
        "apt.failed",
        "apt",
        InfraError,
        r"^E: (?P<msg>Unable to locate package .+|Failed to fetch .+|Package '[^']+' has no installation candidate|Could not get lock .+)$",
    ),
    re("docker.daemon", "docker", InfraError, r"(?P<msg>Error response from daemon: .+)$"),
    // Go's network errors (docker, arduino-cli, any Go tool): `dial tcp 1.2.3.4:443: connect:
    // connection refused`, `dial unix /var/run/docker.sock: ...`.
    re(
        "go.dial_failed",
        "go",
        InfraError,
        r"\b(?P<msg>dial (?:tcp[46]?|udp[46]?|unix) \S+: (?:connect: )?(?:connection refused|no such file or directory|i/o timeout|no route to host|network is unreachable|no such host|permission denied|connection reset by peer)\b.*)$",
    )
    .weight(2),
    // arduino-cli could not load its package indexes (a download or an index file).
    re(
        "arduino_cli.init_failed",
        "arduino-cli",
        InfraError,
        r"^(?P<msg>Error initializing instance: .+)$",
    )
    .weight(2),
    re(
        "renode.command_error",
        "renode",
        InfraError,
        r"(?P<msg>There was an error executing command '[^']+'.*)$",
    ),
    re(
        "lava.infrastructure",
        "lava",
        InfraError,
        r#"(?P<msg>InfrastructureError: .+|JobError: .+|"error_(?:type|code)": "(?:Infrastructure|Job|Bug|Configuration)"|\d+ retries out of \d+ failed for \S+)"#,
    ),
    re(
        "lava.action_timeout",
        "lava",
        Hang,
        r"(?P<msg>[a-z][\w-]*-(?:action|monitor|shell|interrupt|retry) timed out after \d+ seconds)",
    ),
    re("host.read_only", "host", InfraError, r"Read-only file system"),
    re(
        "host.out_of_memory",
        "host",
        InfraError,
        r"(?P<msg>Killed signal terminated program \S+|\S+ terminated with signal \d+ \[Killed\]|Cannot allocate memory|out of memory allocating \d+ bytes|virtual memory exhausted.*)",
    ),
    // A Rust flasher's own panic (`thread 'tokio-runtime-worker' (259512563) panicked at
    // .../probe-rs-0.30.0/src/probe/stlink/usb_interface.rs:124:60:`): the flash failed with it.
    re(
        "flasher.tool_panicked",
        "flasher",
        FlashError,
        r"^thread '[^']*'(?: \(\d+\))? panicked at (?P<msg>\S*[/\\](?:probe-rs(?:-tools)?|espflash|cargo-flash|cargo-embed|probe-run)-\d[\w.-]*[/\\].*)$",
    )
    .weight(3),
    // Any other tool's; newer Rust names the thread's id after its name.
    re("host.tool_panicked", "host", InfraError, r"^thread '[^']*'(?: \(\d+\))? panicked at (?P<msg>.+)$")
        .weight(2)
        .yields_to_context(),
    // The terminal's echo of Ctrl-C right before a Python script's traceback: the user stopped
    // a script that was waiting and never got its answer.
    re(
        "user.interrupted_script",
        "python",
        Hang,
        r"^\^C(?P<msg>Traceback \(most recent call last\):)$",
    )
    .weight(1),
    // An interactive shell reporting that the program it ran died of a signal (`zsh: abort
    // tasmotizer.py`): some step failed, the log's context says which.
    re(
        "shell.program_died",
        "sh",
        InfraError,
        r"^(?:zsh|bash|sh): (?P<msg>(?:abort|segmentation fault|bus error|illegal hardware instruction)\s+.*)$",
    )
    .weight(1)
    .generic(),
    // A Java host tool's fatal log line (log4j's layout: Cooja's `FATAL [main] (Cooja.java:1788)
    // - Error when starting plugin`): the tool broke, not the firmware it ran.
    re(
        "java.fatal_log",
        "java",
        InfraError,
        r"^FATAL \[[^\]]+\] \(\w+\.java:\d+\) - (?P<msg>.+)$",
    )
    .weight(2),
    // A build daemon whose connection broke (`error: daemon error: stream error: error decoding
    // response body`): the tool, not the code.
    re(
        "build_daemon.stream_error",
        "host",
        InfraError,
        r"\bdaemon error: (?P<msg>(?:stream error|connection (?:refused|reset|closed)|broken pipe)\b.*)$",
    )
    .weight(2),
    re(
        "python.traceback",
        "python",
        InfraError,
        r"^(?:.*\.{3} \(\d+ ?%\))?(?P<msg>Traceback \(most recent call last\):)$",
    )
    .weight(1)
    .generic(),
    re("python.usage_error", "python", InfraError, r"^\S+\.py: error: (?P<msg>.+)$")
        .weight(1)
        .generic(),
    // Renode's own info lines (`15:48:38.6631 [INFO] ...`) and its monitor's prompt: a log from
    // the emulator, so its unexplained errors are the emulator's.
    re(
        "renode.context",
        "renode",
        InfraError,
        r"^(?:\d\d:\d\d:\d\d\.\d{4} \[INFO\] |\(monitor\) )",
    )
    .context(),
    // CircuitPython's `code.py output:`: what follows is the firmware's own program, so a
    // Python traceback under it is the firmware crashing on the board.
    re(
        "circuitpython.code_output",
        "circuitpython",
        Crash,
        r"^code\.py output:$",
    )
    .context(),
    // The Mono runtime's own crash report (Renode runs on it): the host program broke.
    re(
        "mono.native_crash",
        "dotnet",
        InfraError,
        r"^(?P<msg>Got a SIG\w+ while executing native code\..*)$",
    ),
    // Mono's last word when an exception escapes every handler (Renode runs on it).
    re(
        "mono.unhandled",
        "dotnet",
        InfraError,
        r"(?P<msg>Internal Error: Exception handling process abandoned\.?|\[ERROR\] FATAL UNHANDLED EXCEPTION: .*)$",
    ),
    // The .NET runtime ending the host program (Renode) on an exception it cannot handle.
    re(
        "dotnet.terminated",
        "dotnet",
        InfraError,
        r"^(?P<msg>Process is terminated due to \w+Exception\.?)$",
    ),
    // A .NET exception in the host program's own frames (`   at System.Reflection...`).
    re("dotnet.frame", "dotnet", InfraError, r"^\s*at (?P<msg>System\.[\w.`\[\]+,]+ ?\(.*)$")
        .weight(1)
        .generic(),
    // Renode's monitor answering a command with a file it cannot find.
    re("renode.no_such_file", "renode", InfraError, r"^(?P<msg>No such file \S.*)$")
        .weight(1)
        .in_context(),
    // Gradle's report of the program its task ran (Cooja, a Java tool) dying of a signal
    // (134: SIGABRT, 137: SIGKILL, 139: SIGSEGV): the host program broke.
    re(
        "gradle.process_signal",
        "gradle",
        InfraError,
        r"^>?\s*(?P<msg>Process '.*' finished with non-zero exit value (?:13[4-9]|14[0-3]))$",
    )
    .weight(2),
    // A frame of Renode's own code: the emulator threw, not the firmware.
    re("renode.exception", "renode", InfraError, r"^\s*at (?P<msg>Antmicro\.Renode\.\S+)")
        .weight(1)
        .generic(),
    re(
        "dotnet.stack_trace",
        "renode",
        InfraError,
        r"^(?P<msg>--- End of stack trace from previous location.*)$",
    )
    .weight(1)
    .generic(),
    re(
        "labgrid.timeout",
        "labgrid",
        InfraError,
        r"(?P<msg>Timeout of [\d.]+ seconds exceeded(?: or connection closed by peer)?)",
    )
    .weight(1)
    .generic(),
    re("labgrid.resources", "labgrid", InfraError, r"(?P<msg>Not all resources are available.*)$"),
    re("labgrid.client_error", "labgrid", InfraError, r"^labgrid-client: error: (?P<msg>.+)$"),
    // An OS error of a host connection, as Python words it: the pipe or link to the device or
    // lab broke. Generic, so a flasher's log makes it the flash's.
    re(
        "python.connection_errno",
        "python",
        InfraError,
        r"(?P<msg>\[Errno \d+\] (?:Broken pipe|Connection reset by peer|No route to host|Network is unreachable).*)$",
    )
    .generic(),
    re(
        "pexpect.eof",
        "pexpect",
        InfraError,
        r"(?P<msg>pexpect\.exceptions\.EOF\b.*|Got EOF from port)$",
    )
    .weight(2),
    re(
        "git.network",
        "git",
        InfraError,
        r"^(?:fatal|error): (?P<msg>the remote end hung up unexpectedly|early EOF|RPC failed; .*|index-pack failed|Could not read from remote repository\.?|unable to connect to .*)$",
    )
    .weight(2),
    // git failing to clone a submodule (`fatal: clone of 'git://...' into submodule path '...'
    // failed`, then `Failed to clone 'x' a second time, aborting`): the fetch, not the build.
    re(
        "git.submodule_clone",
        "git",
        InfraError,
        r"^\**(?:[Ff]atal: )?(?P<msg>clone of '[^']+' into submodule path '[^']+' failed|Failed to clone '[^']+' a second time, aborting)\**$",
    )
    .weight(2),
    // git refusing to check out a dependency over files left in its working tree (`error: The
    // following untracked working tree files would be overwritten by checkout:`), as a package
    // manager's update quotes it: the workspace's state, not the code.
    re(
        "git.untracked_overwritten",
        "git",
        InfraError,
        r"\berror: (?P<msg>(?:The following untracked working tree files would be (?:overwritten|removed)|Your local changes to the following files would be overwritten) by [\w -]+):?$",
    )
    .weight(2),
    // A git server refusing a fetch (`fatal: remote error: upload-pack: not our ref ...`, as
    // `west update` shows it): the remote's state, not the code.
    re(
        "git.remote_error",
        "git",
        InfraError,
        r"\bfatal: (?P<msg>remote error: .+)$",
    )
    .weight(2),
    re(
        "pip.no_distribution",
        "pip",
        InfraError,
        r"^\s*(?:ERROR: )?(?P<msg>Could not find a version that satisfies the requirement .*|No matching distribution found for .*)$",
    ),
    re(
        "net.unreachable",
        "host",
        InfraError,
        r"(?P<msg>Could(?: not|n't) resolve host:? \S+.*|Temporary failure in name resolution.*|fatal: unable to access '[^']+'.*|Cannot connect to the Docker daemon.*)$",
    ),
    // curl giving up on a remote fetch (`curl: (60) SSL certificate problem: certificate has
    // expired`; a proxy or host not resolved, an HTTP error, a TLS handshake, a CA file): a
    // download the build or installer needed did not come. Its other codes (a closed pipe, a
    // board's web server not answering) say nothing of the lab.
    re(
        "curl.failed",
        "curl",
        InfraError,
        r"^(?P<msg>curl: \((?:5|6|22|35|60|77)\) .+)$",
    )
    .weight(2),
    // A package, toolchain or SDK that could not be fetched (`ERROR: Toolchain download failed`,
    // Mbed CLI's `[mbed] ERROR: Download failed!`), a registry without the image asked for
    // (docker's `manifest unknown`), a download whose checksum is wrong.
    re(
        "download.not_fetched",
        "host",
        InfraError,
        r"(?i)(?P<msg>\b(?:toolchain|package|sdk|archive|tarball|library)s? download(?:ing)? failed\b.*|^\[mbed\] ERROR: Download failed!?$|\bmanifest unknown\b.*|\bdownload(?:ing|ed)? successful\b.*\bchecksum (?:doesn't|does not|didn't|did not) match\b.*)",
    )
    .weight(2),
    re(
        "platformio.install",
        "platformio",
        InfraError,
        r"(?P<msg>Could not install (?:package )?'[^']+'.*|InvalidJSONFile: Could not load broken JSON: \S*\.piopm\b.*|Could not find the package with '.*|Detected unknown package '.*|HTTPClientError.*|VCSBaseException: .*|Package Mirror: .*|idf_tools\.py installation failed\b.*)$",
    ),
    // BitBake's closing summary when recipes' tasks failed (`Summary: 7 tasks failed:`).
    re(
        "bitbake.tasks_failed",
        "bitbake",
        BuildError,
        r"^(?P<msg>Summary: \d+ tasks? failed:)$",
    ),
    // BitBake's fetcher that could not get a recipe's source: the network or the remote, not
    // the build.
    re(
        "bitbake.fetch_failed",
        "bitbake",
        InfraError,
        r"(?P<msg>(?:\S+ do_fetch: )?(?:Fetcher failure|Bitbake Fetcher Error)\b.*|Function failed: Fetcher failure\b.*)$",
    )
    .weight(2),
    // Go's HTTP client (arduino-cli, Go-based package managers) giving up on a download.
    re(
        "net.client_timeout",
        "host",
        InfraError,
        r"(?P<msg>.*context deadline exceeded \(Client\.Timeout.*)$",
    )
    .weight(2),
    re(
        "esp.brownout",
        "esp-idf",
        InfraError,
        r"(?P<msg>Brownout detector was triggered|\brst:0xf \(BROWNOUT_RST\).*)",
    ),
    // Python's requests/urllib3 giving up on a host (`HTTPSConnectionPool(host='...', port=443):
    // Max retries exceeded`): the network or the server.
    re(
        "python.connection_pool",
        "python",
        InfraError,
        r"(?P<msg>\bHTTPS?ConnectionPool\(host=.*)$",
    )
    .weight(2),
    // A secure connection that could not be made: the network, a proxy or the host's
    // certificates.
    re(
        "host.tls_failed",
        "host",
        InfraError,
        r"(?P<msg>.*(?:\[SSL: CERTIFICATE_VERIFY_FAILED\]|TLS handshake timeout|There was a problem confirming the ssl certificate|unable to get local issuer certificate|self[- ]signed certificate in certificate chain|cannot verify \S+ certificate, issued by\b).*)$",
    )
    .weight(2),
    // A package, toolchain or source archive that cannot be fetched (PlatformIO's installers,
    // package managers): the network or the server, not the code.
    re(
        "download.failed",
        "host",
        InfraError,
        r"(?i)(?P<msg>(?:(?:failed|unable|could not) to download|download(?:ing)? (?:failure|failed|error)|error:? downloading)\b.*(?:https?://|ftp://|urlopen error|ssl|certificate|tls).*)$",
    )
    .weight(2),
    // wget's refused or failed request (`2021-10-01 17:47:03 ERROR 403: Forbidden.`): the
    // server, not the code.
    re(
        "wget.http_error",
        "wget",
        InfraError,
        r"^(?:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d )?(?P<msg>ERROR [45]\d\d: .+)$",
    )
    .weight(2),
    // The shell reporting that a test program died of a signal: the code under test crashed
    // (a host-run unit test, a simulator build), not the environment.
    re(
        "shell.test_crashed",
        "sh",
        Crash,
        r"^(?:\S+: )?(?:line \d+: )?\d+ (?P<msg>(?:Abort trap: 6|Aborted|Segmentation fault|Bus error|Illegal instruction)(?:\s+\(core dumped\))?)\s+\S*test\S*.*$",
    ),
    // The same signal right after a test's own result line: the program running the tests
    // crashed between them.
    re(
        "shell.crashed_between_tests",
        "sh",
        Crash,
        r"^(?P<msg>(?:Segmentation fault|Bus error|Illegal instruction|Aborted)(?: \(core dumped\))?)$",
    )
    .follows(&[
        "ztest.pass",
        "ztest.fail",
        "unity.pass",
        "unity.fail",
        "gtest.passed",
        "gtest.failed",
        "tests.passed",
        "tests.failed",
        "dot_leader.passed",
        "dot_leader.failed",
    ]),
    re(
        "shell.killed",
        "sh",
        InfraError,
        r"^(?:\S+: )?(?:line \d+: )?(?:\d+ (?P<msg>(?:Killed|Segmentation fault|Bus error)(?: \(core dumped\))?)\s.*|(?:Killed|Segmentation fault|Bus error)(?: \(core dumped\))?)$",
    )
    .timeout_explains()
    .yields_to_context(),
    // strace's last line for the program it traced that died of a signal: that program crashed.
    re(
        "strace.killed_by_signal",
        "strace",
        Crash,
        r"^(?P<msg>\+\+\+ killed by SIG(?:SEGV|BUS|ILL|ABRT|FPE|SYS)\b.*\+\+\+)$",
    ),
    // gdb stopping a program, or one of its threads (`Thread 2 "system_tests" received signal
    // SIGSEGV`), that received a fatal signal: the program under the debugger crashed (a
    // simulator build, a host-run test).
    re(
        "gdb.fatal_signal",
        "gdb",
        Crash,
        r#"^(?P<msg>(?:Program|Thread \d+(?:\.\d+)?(?: "[^"]*")?) received signal SIG(?:SEGV|BUS|ILL|FPE|ABRT)\b.*)$"#,
    ),
    // A backtrace through the SDK's `panic()` (pico-sdk's `#1 0x1005d2f2 in panic
    // (fmt=0x100c194c "Out of memory")`): the firmware panicked.
    re("gdb.panic_frame", "gdb", Crash, r"^#\d+\s+0x[0-9a-fA-F]+ in (?P<msg>panic \(.*)$").weight(2),
    // simavr's core stopping the AVR it ran on a bad access.
    re(
        "simavr.crashed",
        "simavr",
        Crash,
        r"(?P<msg>avr_sadly_crashed\b.*|CORE: \*\*\* Invalid (?:read|write) address PC=\S+.*)$",
    ),
    // U-Boot's exception handlers on AArch64 (`"Synchronous Abort" handler, esr 0x96000000`).
    re(
        "uboot.exception",
        "u-boot",
        Crash,
        r#""(?P<msg>(?:Synchronous Abort|SError|Error|IRQ|FIQ)" handler, esr 0x[0-9a-fA-F]+.*)$"#,
    ),
    // ARC Linux's fault reports: a user process's (`potentially unexpected fatal signal 11.`)
    // and the kernel's (`Invalid Read @ 0x00000000 by insn @ rb_erase+0x122/0x3b4`).
    re(
        "linux.arc_fault",
        "linux",
        Crash,
        r"^(?P<msg>Invalid (?:Read|Write) @ 0x[0-9a-fA-F]+ by insn @ \S+|Execute from Non-exec Page|potentially unexpected fatal signal \d+\.?)$",
    ),
    re(
        "gdb.connection",
        "gdb",
        InfraError,
        r"^\S*:\d+: Connection (?:refused|timed out)\.$",
    )
    .yields_to_context(),
    re(
        "gdb.remote_lost",
        "gdb",
        InfraError,
        r"^(?P<msg>Remote connection closed|Remote communication error\..*)$",
    )
    .yields_to_context(),
    re(
        "net.refused",
        "host",
        InfraError,
        r"(?P<msg>ConnectionRefusedError: .*|E connect\(.*\): Connection refused|Unable to connect to remote host: Connection refused|[Cc]ould not connect to \S+: Connection refused.*|failed to connect: Connection refused)",
    ),
    // An IDE's serial monitor (VS Code's Arduino and Serial Monitor extensions) that cannot
    // open its port: a monitor, not an uploader, so the port is the lab's.
    re(
        "ide.monitor_open_failed",
        "ide",
        InfraError,
        r"^\*{4} (?P<msg>Failed to open the serial port \S+) \*{4}$",
    ),
    // Rust's serialport on Windows: the port refused an ioctl (a monitor's USB serial adapter
    // gone or not a serial port).
    re(
        "serialport.bad_command",
        "serialport",
        InfraError,
        r"^Error: (?P<msg>The device does not recognize the command\. \(os error 22\))$",
    )
    .weight(2)
    .yields_to_context(),
    re("serial.open", "pyserial", InfraError, r"(?P<msg>[Cc]ould not (?:open|exclusively lock) (?:serial )?port .*)$")
        .yields_to_context(),
    re(
        "serial.permission",
        "serial",
        InfraError,
        r"(?P<msg>Permission denied:? '?(?:/dev/(?:tty|serial|cu\.)|COM\d)\S*)",
    )
    .yields_to_context(),
    re("serial.busy", "serial", InfraError, r"Device or resource busy").yields_to_context(),
    re(
        "serial.vanished",
        "pyserial",
        InfraError,
        r"(?P<msg>device reports readiness to read but returned no data.*|read failed: \[Errno 5\] Input/output error|Input/output error: '/dev/tty\S*|OSError: \[Errno 5\] Input/output error|SerialException: Attempting to use a port that is not open)",
    )
    .yields_to_context(),
    // Compiler, assembler, make and linker diagnostics.
    re("gcc.internal_error", "gcc", BuildError, r"(?P<msg>internal compiler error: .+)$"),
    // ESP-IDF's build cannot find a component another one requires (`Failed to resolve
    // component 'logic_analyzer' required by component 'main':`).
    re(
        "esp_idf.component_unresolved",
        "esp-idf",
        BuildError,
        r"^(?P<msg>Failed to resolve component '[^']+' required by component '[^']+'.*)$",
    ),
    // TI's linker refusing objects built for another floating-point ABI (`... has a
    // Tag_ABI_VFP_args attribute value of "0" that is different than one previously seen
    // ("1"); combining incompatible files`).
    re(
        "ti.abi_mismatch",
        "ti-linker",
        LinkError,
        r"^(?P<msg>.*; combining incompatible files)$",
    ),
    // objcopy failing to write the image (`arm-none-eabi-objcopy: _build/app.hex 64-bit
    // address 0x4b4fa300026000 out of range for Intel Hex file`), also inside a pasted log a
    // forum flattened into one line.
    re(
        "objcopy.error",
        "objcopy",
        BuildError,
        r"\bobjcopy(?:\.exe)?: ?(?P<msg>\S+(?::| \S+ address 0x[0-9A-Fa-f]+) (?:bad value|out of range for Intel Hex file).*)$",
    ),
    // Go's (and TinyGo's) build refusing a package (`build command-line-arguments: import "":
    // invalid import path`).
    re(
        "go.build_failed",
        "go",
        BuildError,
        r"^build \S+: (?P<msg>(?:import |cannot |invalid |could not ).+)$",
    ),
    // GNU make finding nothing to build where a makefile should be: the build directory was
    // never configured.
    re(
        "make.no_makefile",
        "make",
        BuildError,
        r"\*\*\* (?P<msg>No targets (?:were )?specified and no (?:makefile|make control file) (?:was )?found\..*)$",
    ),
    // Flipper's build tool closing on the targets that failed (`********** FBT ERRORS
    // **********`): the echo of whatever failed under it, like scons' own line.
    re(
        "fbt.errors",
        "fbt",
        BuildError,
        r"^(?P<msg>\*+ FBT ERRORS \*+)$",
    )
    .weight(1)
    .echo(),
    // GNU ld's missing library on a line of its own, its `ld: ` prefix on the line before (a
    // mail client wrapped it).
    re("ld.cannot_find_wrapped", "ld", LinkError, r"^(?P<msg>cannot find -l\S+)$").weight(2),
    // gcc's driver given a source file that is not there (`i686-apple-darwin9-gcc-4.0.1:
    // crc32.c: No such file or directory`), also at the end of a command line a page merged.
    re(
        "gcc.no_input_file",
        "gcc",
        BuildError,
        r"(?:^|\s)(?P<msg>\S*(?:gcc|g\+\+|cc1|clang)(?:-[\d.]+)?: \S+\.(?:c|cc|cpp|cxx|S|s): No such file or directory)$",
    )
    .weight(2),
    re(
        "ld.collect2",
        "ld",
        LinkError,
        r"^(?:collect2(?:\.exe)?: (?:error: )?ld returned \d+ exit status|\S*clang\S*: error: (?:linker|ld\.lld|lld) command failed.*)$",
    )
    .weight(1),
    re(
        "cmake.execute_process",
        "cmake",
        BuildError,
        r"(?P<msg>CMake Error at .*\(execute_process\).*)$",
    )
    .generic(),
    re("cmake.error", "cmake", BuildError, r"(?P<msg>CMake Error(?: at .+|: .+)?)$").weight(2),
    // CMake's own `assert()` helper (Zephyr's `assert(... "msg")` in extensions.cmake) reports
    // under a CMake error: a configure step's check, not the firmware's assert.
    re(
        "cmake.assertion",
        "cmake",
        BuildError,
        r"^\s*(?P<msg>Assertion failed: .+)$",
    )
    .weight(2)
    .follows(&["cmake.error"]),
    re(
        "cmake.unknown_command",
        "cmake",
        BuildError,
        r#"(?P<msg>Unknown CMake command "[^"]+"\.?)"#,
    ),
    re("cmake.incomplete", "cmake", BuildError, r"(?P<msg>Configuring incomplete, errors occurred!)"),
    // NuttX's configure.sh given a board configuration it does not have.
    re(
        "nuttx.no_config",
        "nuttx",
        BuildError,
        r"^(?P<msg>Directory for \S+ does not exist\..*|No configuration directory at \S+.*)$",
    ),
    // PlatformIO reading a broken `platformio.ini`.
    re("platformio.bad_config", "platformio", BuildError, r"(?P<msg>\bInvalidProjectConfError: .+)$"),
    // A per-board build loop's summary (RIOT's compile tests: `Building for pttu .. failed`,
    // `Errors: 1 Warnings: 84`).
    re(
        "build.board_failed",
        "riot",
        BuildError,
        r"^(?P<msg>Building for \S+ \.+ failed|Errors: [1-9]\d* Warnings: \d+)$",
    )
    .weight(2),
    // Silicon Labs' project generator (`slc generate`) refusing a project (`Generation failed:
    // .../rcp-uart-802154.slcp contains parse issues`): nothing was built.
    re("slc.generation_failed", "slc", BuildError, r"^(?P<msg>Generation failed: \S+\.slcp?\b.*)$"),
    // SCons: its own error about a target (`scons: *** [x] TypeError : ...`), or the echo of a
    // command that failed (`scons: *** [x] Error 1`).
    re(
        "scons.command_failed",
        "scons",
        BuildError,
        r#"^(?P<msg>(?:scons: )?\*\*\* \[[^\]]+\] Error -?\d+)"?$"#,
    )
    .weight(1)
    .echo(),
    // SCons' closing list of the targets it failed to build (`Failed building
    // build/f7-firmware-D/toolbox/version.inc.h: Error 1`): a build step failed, whatever tool
    // the step ran.
    re(
        "scons.failed_building",
        "scons",
        BuildError,
        r"^(?P<msg>Failed building \S+: .+)$",
    )
    .weight(1),
    re("scons.error", "scons", BuildError, r"^scons: \*\*\* (?P<msg>.+)$").weight(2),
    // The same without its `scons: ` (PlatformIO's builds): a target and what went wrong.
    re("scons.target_error", "scons", BuildError, r"^\*\*\* (?P<msg>\[[^\]]+\] .+)$").weight(2),
    // nmake: `U1077` is the echo of a command that failed; the others are its own.
    re(
        "nmake.command_failed",
        "nmake",
        BuildError,
        r"^(?P<msg>NMAKE : fatal error U1077: .*)$",
    )
    .weight(1)
    .echo(),
    re("nmake.error", "nmake", BuildError, r"^NMAKE : fatal error (?P<msg>U\d{4}: .*)$").weight(2),
    // mcumgr (or newtmgr) uploading an image over SMP that failed (`Error: ImageUpload
    // unexpected error after 0/90644 bytes`).
    re("mcumgr.upload_failed", "mcumgr", FlashError, r"^Error: (?P<msg>ImageUpload\b.*)$"),
    // Mynewt's newt building a target: its bare `Error:` lines are the build's.
    re("newt.building", "newt", BuildError, r"^Building target targets/\S+$").context(),
    // A newt command on a prompt: its bare `Error:` lines are the build's, or the load's.
    re(
        "newt.build_command",
        "newt",
        BuildError,
        r"^(?:\S*\$ )?newt (?:build|create-image|mfg|pkg|target|test|size)\b.*$",
    )
    .context(),
    re("newt.load_command", "newt", FlashError, r"^(?:\S*\$ )?newt (?:load|run|debug)\b.*$")
        .context(),
    // Eclipse CDT's closing line.
    re(
        "eclipse.build_failed",
        "eclipse",
        BuildError,
        r"^(?:\d\d:\d\d:\d\d )?(?P<msg>Build Failed\. [1-9]\d* errors, \d+ warnings\..*)$",
    )
    .weight(1)
    .echo(),
    // waf (ArduPilot's build): the task that failed, then its closing line, which IDE builds
    // (Flowcode's) end with too.
    re(
        "waf.task_failed",
        "waf",
        BuildError,
        r"^(?P<msg>-> task in '[^']+' failed with exit status \d+.*|Build [Ff]ailed\.?)$",
    )
    .weight(1)
    .echo(),
    re(
        "kconfig.error",
        "kconfig",
        BuildError,
        r"(?P<msg>\S*Kconfig\S*:\d+: (?:syntax error|invalid option|'[^']+' not found \(in '\w*source\b).*|^error: Aborting\b.*)$",
    ),
    // OpenOCD's own configuration scripts failing (`target/efm32s2.cfg:8: Error: Can't find
    // target/swj-dp.tcl`): the flasher could not start, nothing was compiled.
    re(
        "openocd.script_error",
        "openocd",
        FlashError,
        r"^\S+\.(?:cfg|tcl|ocd):\d+: Error: (?P<msg>.+)$",
    ),
    // The same with nothing after `Error:` (a `verify_bank` in a board's script that failed).
    re(
        "openocd.script_error_bare",
        "openocd",
        FlashError,
        r"^(?P<msg>\S+\.(?:cfg|tcl|ocd):\d+: Error:)$",
    ),
    // An assembler error in a link-time-optimisation temporary (`.lto-tmp/cc1.s:193: Error:`):
    // code generated while linking.
    re(
        "lto.assembler_error",
        "ld",
        LinkError,
        r"^\S*(?:\.lto-tmp/|\.ltrans\d*\.)\S*:\d+: Error: (?P<msg>.+)$",
    ),
    // PlatformIO's size check after linking: the image does not fit (a build setting).
    re(
        "platformio.program_too_big",
        "platformio",
        BuildError,
        r"(?P<msg>Error: The program size \(\d+ bytes\) is greater than maximum allowed \(\d+ bytes\))",
    ),
    diag("gcc.error", "gcc", BuildError, "compiler", &[]),
    diag("as.error", "as", BuildError, "assembler", &[]),
    diag("make.no_rule", "make", BuildError, "make", &["no_rule"]),
    // The same from a make that speaks German, French, Spanish or Italian.
    re(
        "make.no_rule_translated",
        "make",
        BuildError,
        concat!(r"^", make_name!(), r": \*\*\* (?P<msg>Keine Regel, um .+ zu erstellen\b.*|Pas de r\S+gle pour fabriquer la cible .*|No hay ninguna regla para construir el objetivo .*|Nessuna regola per generare l'obiettivo .*)$"),
    ),
    // A makefile's own check of a toolchain it downloaded (TensorFlow Lite Micro's `*** Something
    // went wrong with the GCC download: Bad checksum. ...  Stop.`): the download, not the build.
    re(
        "make.download_checksum",
        "make",
        InfraError,
        r"\*\*\* (?P<msg>.*\bdownload: [Bb]ad checksum\b.*)$",
    )
    .weight(2),
    diag("make.makefile", "make", BuildError, "make", &["makefile"]),
    // make's missing rule with its target wrapped onto the next line by a forum or an IDE's
    // console.
    re(
        "make.no_rule_wrapped",
        "make",
        BuildError,
        concat!(r"^", make_name!(), r": \*\*\* (?P<msg>No rule to make target)\s*$"),
    ),
    diag("ld.undefined_reference", "ld", LinkError, "linker", &["undefined_reference"]),
    diag("ld.multiple_definition", "ld", LinkError, "linker", &["multiple_definition"]),
    diag("ld.region_overflow", "ld", LinkError, "linker", &["region_overflow"]),
    // GNU as rejecting an instruction, without its file and line (``Error: lo register
    // required -- `sub ip,#1'``).
    re(
        "as.operand_error",
        "as",
        BuildError,
        r"^Error: (?P<msg>[^\x60]+ -- \x60[^\x60]+')$",
    ),
    // GPRbuild (Ada) that could not process a project file.
    re("gprbuild.failed", "gprbuild", BuildError, r"^(?P<msg>gprbuild: .+ processing failed)$"),
    // colcon (micro-ROS's build scripts) given a package it cannot find in the workspace.
    re(
        "colcon.package_not_found",
        "colcon",
        BuildError,
        r"^(?P<msg>Package '[^']+' specified with --packages-(?:up-to|select) was not found)$",
    ),
    // imgtool (MCUboot's image signer) in a traceback: the build's signing step broke.
    re(
        "imgtool.traceback",
        "imgtool",
        BuildError,
        r#"^File "[^"]*imgtool[^"]*\.py", line \d+"#,
    )
    .context(),
    // SDCC's linker (aslink): `Multiple definition of _handle_get_descriptor`.
    re(
        "aslink.multiple_definition",
        "sdcc",
        LinkError,
        r"^(?P<msg>Multiple definition of \S+)$",
    ),
    // The TinyGo compiler's own goroutine trace after a panic (`github.com/tinygo-org/tinygo/
    // builder.loadProgramSize(...)`): the compiler broke, so the build.
    re(
        "tinygo.compiler_panic",
        "tinygo",
        BuildError,
        r"^(?P<msg>github\.com/tinygo-org/tinygo/(?:builder|compiler|loader|transform|interp)\.\S+)",
    ),
    // Keil's 8051 linker (BL51, LX51): `*** ERROR L103: EXTERNAL ATTRIBUT DO NOT MATCH PUBLIC
    // SYMBOL: ...`.
    re("keil.bl51_error", "keil", LinkError, r"^\*{3} (?P<msg>ERROR L\d+: .+)$"),
    // cortex-m-rt's linker script asserting the memory layout (`ERROR(cortex-m-rt): The .text
    // section must be placed inside the FLASH memory.`), under `rust-lld: error:`.
    re(
        "cortex_m_rt.layout",
        "cortex-m-rt",
        LinkError,
        r"\bERROR\(cortex-m-rt\): (?P<msg>.+)$",
    ),
    diag("ld.missing_library", "ld", LinkError, "linker", &["missing_library"]),
    diag("ld.error", "ld", LinkError, "linker", &[]).weight(2),
    // GNU ld given a file it cannot read as an object or archive (an archive built for another
    // host or architecture: `libx.a: error adding symbols: File format not recognized`).
    re(
        "ld.bad_format",
        "ld",
        LinkError,
        r"(?P<msg>\S+: file format not recognized; treating as linker script|.+: error adding symbols: .+|^\S+\.(?:o|obj|a): file not recognized: (?:[Ff]ile format not recognized|[Ff]ile truncated))$",
    )
    .weight(2),
    // Renesas's optlnk (`E0562310:Undefined external symbol "_x" referenced in "y"`) and TI's
    // linker (`error #10234-D: unresolved symbols remain`, and the same errors as Code Composer
    // Studio's Problems view lists them: `#10010 errors encountered during linking`,
    // `unresolved symbol _x, first referenced in ./y.obj`).
    // IAR's older linker, XLINK (`Error[e104]: Failed to fit all segments ...`), and IAR
    // Embedded Workbench's closing line after a link that failed (ILINK's `Error[Li005]` is
    // `iar.link_error`'s).
    // Microchip's MPLINK (`Error - section '.udata' can not fit the absolute section.`).
    re(
        "mplink.error",
        "mplink",
        LinkError,
        r"^(?P<msg>Error - (?:section '[^']*' .*can not fit\b.*|could not find definition of symbol\b.*|symbol '[^']*' has multiple definitions\b.*))$",
    )
    .weight(2),
    re(
        "iar.xlink_error",
        "iar",
        LinkError,
        r"(?P<msg>Error\[e\d+\]: .+|Error while running Linker)$",
    )
    .weight(2),
    re(
        "vendor.link_error",
        "ld",
        LinkError,
        r"(?P<msg>\b[EF]0562\d{3}\s*:.+|\berror #10\d{3}(?:-D)?: .+|#10010 errors encountered during linking.*|\berrors encountered during linking\b.*|\bprogram will not fit into available memory\b.*|\brun placement fails for object\b.*|\bunresolved symbols remain\b.*|^unresolved symbol \S+, first referenced in .*)$",
    )
    .weight(2),
    // TI's and Green Hills' compilers: `"src/x.c", line 276: error #20: identifier "y" is
    // undefined` (the linker's `#10xxx` errors are claimed above).
    // TI's linker on its command file (`"../lnk_msp430f2274.cmd", line 75: error: run placement
    // fails for object ".stack"`): the same shape as a compiler's, but the file is the link's.
    re(
        "ti.link_command_file",
        "ld",
        LinkError,
        r#"^"[^"]+\.cmd", line \d+: (?P<msg>(?:fatal )?error(?: #\d+(?:-D)?)?:.*)$"#,
    )
    .weight(2),
    re(
        "ti.compile_error",
        "cc",
        BuildError,
        r#"^"[^"]+", line \d+: (?P<msg>(?:fatal )?error(?: #\d+(?:-D)?)?:.*)$"#,
    )
    .weight(2),
    // GNU ld reading a linker script (or an input) it cannot parse (`ld:platform_user_ram.ld:1:
    // syntax error`): the link stopped on its script, not on a source file.
    re(
        "ld.script_syntax",
        "ld",
        LinkError,
        r"(?P<msg>\S*\bld(?:\.exe)?:\S+:\d+: syntax error\b.*)$",
    )
    .weight(3),
    // Apple's linker naming symbols nothing defines (`Undefined symbols for architecture
    // x86_64:`, a host test build's link).
    re(
        "ld64.undefined_symbols",
        "ld64",
        LinkError,
        r"^(?P<msg>Undefined symbols for architecture \S+:)$",
    )
    .weight(2),
    // A linker script that cannot be laid out: the location counter moved backwards, or two
    // output sections overlap.
    re(
        "ld.script_layout",
        "ld",
        LinkError,
        r"(?P<msg>cannot move location counter backwards\b.*|section \S+ (?:LMA|VMA) \[[^\]]+\] overlaps section .*)$",
    )
    .weight(2),
    re(
        "ld.wont_fit",
        "ld",
        LinkError,
        r"(?P<msg>section `[^']+' will not fit in region `[^']+'|region `[^']+' overflowed by \d+ bytes)",
    ),
    // GNU ld's relocation that cannot reach its target (`relocation truncated to fit:
    // R_ARM_THM_CALL against ...`), and SDCC's linker (`?ASlink-Warning-Undefined Global
    // '_x' referenced by module 'y'`, which fails the link, or any `?ASlink-Error-`).
    re(
        "ld.relocation_truncated",
        "ld",
        LinkError,
        r"(?P<msg>relocation truncated to fit: R_\w+ against .+)$",
    )
    .weight(2),
    // SDCC's own compile errors (`src/usb.h:23: error 78: incompatible types`).
    re("sdcc.error", "sdcc", BuildError, r"^\S+\.[ch]:\d+: (?P<msg>error \d+: .+)$"),
    re(
        "sdcc.aslink",
        "sdcc",
        LinkError,
        r"(?P<msg>\?ASlink-(?:Error-.+|Warning-Undefined Global .+))$",
    )
    .weight(2),
    re("ld.error_line", "ld", LinkError, r"\b(?:ld|ld\.lld|rust-lld|lld)(?:\.exe)?: [Ee]rror: (?P<msg>.+)$")
        .weight(2),
    // TinyGo's linker step.
    re("tinygo.link_failed", "tinygo", LinkError, r"^(?:error: )?(?P<msg>failed to link \S+: exit status \d+)$")
        .weight(2),
    re("rustc.link_failed", "rustc", LinkError, r"^error: (?P<msg>linking with `[^`]+` failed.*)$")
        .weight(1),
    re("rustc.error", "rustc", BuildError, r"^error\[E\d{4}\]: (?P<msg>.+)$").weight(2),
    // cargo's build script of a crate that failed (`error: failed to run custom build command
    // for `openthread-sys v0.1.0 (...)``): a C library it builds, or bindings it generates.
    re(
        "cargo.build_script_failed",
        "cargo",
        BuildError,
        r"^error: (?P<msg>failed to run custom build command for `[^`]+`.*)$",
    )
    .weight(2),
    // A preprocessor `#error` line, under the compiler's diagnostic or pasted alone; weight 1, so
    // it decides only when nothing else does.
    re("cc.error_directive", "cc", BuildError, r"^(?P<msg>#\s*error\b.*)$").weight(1),
    re(
        "cargo.could_not_compile",
        "cargo",
        BuildError,
        r"^error: (?P<msg>could not compile `[^`]+`.*)$",
    )
    .weight(1)
    .echo(),
    re(
        "zephyr.devicetree_error",
        "zephyr",
        BuildError,
        r"^(?:-- )?devicetree error: (?P<msg>.+)$",
    ),
    // Arduino's size check after a link that used more RAM than the board has (`Not enough
    // memory; see ... for tips on reducing your footprint.`): the sketch does not fit.
    re(
        "arduino.not_enough_memory",
        "arduino",
        BuildError,
        r"^(?P<msg>Not enough memory; see \S+ for tips on reducing your footprint\.?)$",
    )
    .weight(2),
    // Arduino's closing lines: `exit status 1` is the echo of whichever tool failed (the linker
    // as well as the compiler).
    re(
        "arduino.compile_exit_status",
        "arduino",
        BuildError,
        r"^(?P<msg>Compilation error: exit status \d+)$",
    )
    .weight(1)
    .echo(),
    re(
        "arduino.compile_failed",
        "arduino",
        BuildError,
        r"^(?P<msg>Error compiling for board .+|Compilation error: .+)$",
    )
    .weight(2)
    // The IDE's summary of whatever failed: the compiler's or the linker's own lines above it
    // say which (`undefined reference` makes it a link error).
    .echo(),
    // armlink's numbered errors, `E` and the unrecoverable `U`; uVision's build pane prints
    // them without `Error: `.
    re(
        "armlink.error",
        "armlink",
        LinkError,
        r"(?:(?:Fatal error|Error): |^)(?P<msg>L6\d{3}[EU]: .+|Symbol \S+ multiply defined.*)$",
    ),
    // The other Arm Compiler 5/6 tools' numbered errors, the letter naming the tool: `A` armasm,
    // `C` armcc, `Q` fromelf (`Error: Q0147E: Failed to create Directory ...`, `Fatal error:
    // A3900U: Unrecognized option ...`).
    re(
        "arm_tools.error",
        "armcc",
        BuildError,
        r"(?:^|\s)(?:Fatal error|Error): (?P<msg>[ACQ]\d{4}[EU]: .+)$",
    ),
    re(
        "gcc.fatal_error",
        "gcc",
        BuildError,
        r"(?:^|: )fatal error: (?P<msg>.+: No such file or directory|no input files)$",
    ),
    // armcc, Keil's uVision and IAR write diagnostics gcc's parser does not read.
    re(
        "armcc.error",
        "armcc",
        BuildError,
        r#"^(?:"[^"]+", line \d+|\S+\(\d+\)): (?:[Ff]atal )?[Ee]rror:\s+(?P<msg>#?\w+: .+)$"#,
    ),
    re(
        "iar.link_error",
        "iar",
        LinkError,
        r#"(?:^|\s|")(?:Fatal )?Error\[(?P<msg>L[a-z]\d+\]: .+)$"#,
    ),
    re(
        "iar.error",
        "iar",
        BuildError,
        r"(?:^|\s)(?:Fatal )?Error\[(?P<msg>[A-Z][a-z]\d+\]: .+)$",
    ),
    re(
        "meson.error",
        "meson",
        BuildError,
        r"\bmeson\.build:\d+:\d+: (?P<msg>ERROR: .+)$",
    ),
    // PlatformIO refusing its project file (`UndefinedEnvPlatformError: Please specify platform
    // for 'x' environment`): the build's configuration.
    re(
        "platformio.env_error",
        "platformio",
        BuildError,
        r"^(?:Error: )?(?P<msg>(?:UndefinedEnvPlatformError|NotPlatformIOProjectError|UnknownEnvNamesError|InvalidProjectConfError|UnknownBoard|UnknownPlatform): .+)$",
    ),
    re(
        "platformio.config",
        "platformio",
        BuildError,
        r"^Error: (?P<msg>Unknown (?:board ID|environment names?) .*|BoardConfig: .*)$",
    ),
    // ninja's progress line when its last step is a link (`[160/160] Linking C executable
    // zephyr/zephyr.elf`): every step ran, so the build succeeded unless a later line says
    // otherwise. A last step of another kind (`[650/650] Generating tfm_s_ns_signed.bin`) is
    // often a nested build's (TF-M's inside Zephyr's), with the outer one still to come.
    re(
        "build.last_step",
        "ninja",
        Pass,
        r"^(?P<msg>\[\d+/\d+\] Linking\b.*)$",
    )
    .weight(2)
    .check(Check::LastStep),
    // crosstool-NG stopping in a step: fetching the components' tarballs is the network's,
    // any other step the toolchain build's.
    re(
        "crosstool_ng.fetch_failed",
        "crosstool-ng",
        InfraError,
        r"^(?:\[ERROR\]\s+)?>>\s+(?P<msg>Build failed in step '(?:Retrieving|Downloading|Fetching|Extracting)\b.*)$",
    ),
    re(
        "crosstool_ng.build_failed",
        "crosstool-ng",
        BuildError,
        r"^(?:\[ERROR\]\s+)?>>\s+(?P<msg>Build failed in step .*)$",
    ),
    // pico-sdk's build refusing the installed picotool (`ERROR: This picotool version
    // (2.1.2-develop) is not compatible with SDK versions <=2.1.1 ...`): a tool is there, at a
    // version the build cannot use.
    re(
        "pico_sdk.picotool_version",
        "pico-sdk",
        BuildError,
        r"(?P<msg>This picotool version \(\S+\) is not compatible with .+)$",
    )
    .weight(2),
    // tup's own errors (`tup error: Failed to find directory ID for dir ...`), and its closing
    // count (`*** tup: 1 job failed.`), which only echoes what the job printed.
    re(
        "tup.error",
        "tup",
        BuildError,
        r"^(?P<msg>tup error(?: \[[^\]]*\]:\d+)?: .+)$",
    )
    .weight(2),
    re(
        "tup.jobs_failed",
        "tup",
        BuildError,
        r"^(?P<msg>\*\*\* tup: \d+ jobs? failed\.?)$",
    )
    .weight(1)
    .echo(),
    // zig build's step whose command failed (`zig build-exe app Debug thumb-freestanding-none:
    // error: the following command terminated unexpectedly:`): the echo of what the command
    // printed, which may be a flasher's.
    re(
        "zig.step_failed",
        "zig",
        BuildError,
        r"^(?P<msg>.*error: the following command (?:terminated unexpectedly|failed with exit code \d+|exited with error code \d+|failed with \d+ compilation errors?):)$",
    )
    .weight(1)
    .echo(),
    // pico-sdk's configure step refusing a board for another chip (`PICO_PLATFORM is specified
    // to be 'rp2350', but PICO_BOARD='pico_w' uses 'rp2040' which is incompatible.`).
    re(
        "pico_sdk.platform_mismatch",
        "pico-sdk",
        BuildError,
        r"(?P<msg>PICO_PLATFORM is specified to be '[^']+', but PICO_BOARD='[^']+' uses\b.*)$",
    )
    .weight(3),
    // Bazel's loading and analysis of the build graph failing (`ERROR: Analysis of target
    // '//:hello' failed; build aborted: ...`, `ERROR: app/BUILD:7:1: every rule of type
    // cc_binary implicitly depends upon ...`): the build could not start. Its failed actions
    // (`Linking hello failed`) are left to the compiler's and linker's own lines.
    re(
        "bazel.analysis_failed",
        "bazel",
        BuildError,
        r"^ERROR: (?P<msg>Analysis of target '[^']+' failed; build aborted\b.*|\S+/BUILD(?:\.bazel)?:\d+:\d+: .*\b(?:no such (?:package|target)|every rule of type|is not visible|in \w+ attribute of \w+ rule)\b.*)$",
    )
    .weight(2),
    // Steps that say only that a build step failed, like make's `Error 1`.
    re(
        "ninja.stopped",
        "ninja",
        BuildError,
        r"^(?P<msg>ninja: build stopped: subcommand failed\.)$",
    )
    .weight(1)
    .echo(),
    re(
        "idf_py.failed",
        "idf.py",
        BuildError,
        r"(?P<msg>(?:ninja|cmake) failed with exit code \d+.*)$",
    )
    .weight(1)
    .echo(),
    re(
        "uvision.errors",
        "uvision",
        BuildError,
        r#"(?P<msg>"[^"]+" - [1-9]\d* Error\(s\), \d+ Warning\(s\)\.?)"#,
    )
    .weight(1)
    .generic(),
    re("ninja.error", "ninja", BuildError, r"^(?i:ninja): error: (?P<msg>.+)$"),
    // ninja's failed step whose output is an executable image (`FAILED: zephyr/zephyr_pre0.elf
    // zephyr/zephyr_pre0.map`): the link step, whatever the linker's own lines were.
    // ninja's failed step right after its progress line said the step was a link (`[2/2]
    // Linking C executable nuttx`, then `FAILED: nuttx`): an image with no file extension.
    re(
        "ninja.failed_after_link",
        "ninja",
        LinkError,
        r"^(?P<msg>FAILED: \S+)\s*$",
    )
    .weight(2)
    .follows(&["build.last_step"]),
    re(
        "ninja.link_failed",
        "ninja",
        LinkError,
        r"^(?P<msg>FAILED: \S+\.(?:elf|axf|out)(?: \S+)*)$",
    )
    .weight(1)
    .generic(),
    // ninja's failed step whose output is not an executable image (`FAILED: CMakeFiles/app.dir/
    // main.c.o`, `FAILED: signature_verification_key.bin`, a reporter's `...` after it): a
    // build step failed.
    re(
        "ninja.step_failed",
        "ninja",
        BuildError,
        r"^(?P<msg>FAILED: \S+\.(?:o|obj|a|bin|hex|map|h|c|cpp|ld|img|uf2|dfu))(?:\.{3,})?(?: \S+)*$",
    )
    .weight(1)
    .generic(),
    // gcc's own summary of `-Werror`: the diagnostic above it may have lost its `file:line:`.
    re(
        "gcc.werror",
        "gcc",
        BuildError,
        r"^(?P<msg>cc1\S*: (?:all|some) warnings being treated as errors)$",
    ),
    // A build's own progress lines (`  Building out/x.o`, `[ 42%] Building C object ...`,
    // `Compiling src/main.c`): the log comes from a build, so its unexplained failures (a build
    // script's Python traceback) are the build's.
    re(
        "build.progress",
        "build",
        BuildError,
        r"^(?:\[\s*\d+%\]\s+|\[\d+/\d+\]\s+)?\s*(?:Building (?:C|CXX|ASM) object \S+|Building \S+\.o|Compiling \S+\.(?:c|cc|cpp|cxx|S|s)\b.*)$",
    )
    .context(),
    // make's failure of a target that flashes (`make: *** [../rules.mk:159:
    // awesomesauce.flash] Error 1`, `[program-dfu]`, `[upload]`): the flash's, when no line says
    // more.
    re(
        "make.flash_target_error",
        "make",
        FlashError,
        concat!(r"^(?P<msg>", make_name!(), r": \*\*\* \[(?:[^\]]*[:/ ])?(?:[\w-]+\.)?(?:flash|upload|program|burn)(?:-[\w-]+)?\] (?:Error|错误|Fehler|Erreur|エラー) \d+)$"),
    )
    .weight(1)
    .generic(),
    // TI's XDCtools configuring a TI-RTOS image (`js: "main.cfg", line 125:
    // xdc.services.global.XDCException: xdc.PACKAGE_NOT_FOUND: can't locate the package ...`):
    // the configure step failed.
    re(
        "xdc.exception",
        "xdctools",
        BuildError,
        r"\bxdc\.services\.global\.XDCException: (?P<msg>xdc\.[\w.]+: .+)$",
    ),
    // (GNU make in Chinese, German, French or Japanese says `错误 1`, `Fehler 1`, `Erreur 1`,
    // `エラー 1`; the rules for a flash target and for 127 above read them too.)
    re("make.error", "make", BuildError, concat!(r"^(?P<msg>", make_name!(), r": \*\*\* .*(?:Error|错误|Fehler|Erreur|エラー) \d+)$"))
        .weight(1)
        .echo(),
    // make reporting a command whose failure the makefile ignores (`make[1]: [makefile:139:
    // post-build] Error 1 (ignored)`): a step failed, the build went on.
    re(
        "make.error_ignored",
        "make",
        BuildError,
        concat!(r"^(?P<msg>", make_name!(), r": \[.*\] Error \d+ \(ignored\))$"),
    )
    .weight(1)
    .echo(),
    // make's own fatal error about its inputs (`make: *** /opt/klipper/.config: Is a directory.
    // Stop.`): the build could not start.
    re(
        "make.stop",
        "make",
        BuildError,
        concat!(r"^(?P<msg>", make_name!(), r": \*\*\* [^\[].*\.\s+Stop\.)$"),
    )
    .weight(2),
    // Go's compiler (and TinyGo's): `config.go:34:22: undefined: machine.UART0_TX_PIN`.
    re(
        "go.compile_error",
        "go",
        BuildError,
        r"^(?:\.\.?[\\/])*[\w.\\/-]+\.go:\d+:\d+: (?P<msg>.+)$",
    )
    .weight(2),
    // What the firmware printed, or what the emulator saw it do.
    // Tasmota's file system and settings log at boot (`TFS: File '.drvset003' not found`): a
    // file it has not written yet, not a failure.
    noise(
        "tasmota.fs_log",
        "tasmota",
        r"^\d\d:\d\d:\d\d\.\d{3} (?:TFS|UFS|CFG): ",
    ),
    // gdb stopped in an assert function that was handed the failed check's place
    // (`my_assert_func (file=file@entry=0x1000acbc "...sd_card.c", line=line@entry=789, ...`).
    re(
        "gdb.assert_frame",
        "gdb",
        Assert,
        r"^(?:#\d+\s+(?:0x[0-9A-Fa-f]+ in )?)?(?P<msg>\w*assert\w* \(file=(?:<optimized out>, )?(?:file@entry=)?0x[0-9A-Fa-f]+ .*)$",
    )
    .weight(2),
    // Little Kernel's Cortex-M fault report (`exception frame at 0x20000be8`, then the
    // registers): the firmware faulted.
    re(
        "lk.exception_frame",
        "lk",
        Crash,
        r"(?P<msg>\bexception frame at 0x[0-9A-Fa-f]+.*)$",
    )
    .weight(2),
    // A TinyGo program's own panic on the device (`panic: runtime error at 0x00027c4d: alloc in
    // interrupt`, then `[tinygo: panic at .../adapter_sd.go:74:4]`).
    re(
        "tinygo.runtime_panic",
        "tinygo",
        Crash,
        r"^(?P<msg>panic: runtime error at 0x[0-9A-Fa-f]+: .*|\[tinygo: panic at \S+\])$",
    )
    .weight(2),
    // LMIC's (IBM and MCCI LoRaWAN) failed assert: `FAILURE`, then the line naming its source
    // file and line (`.../src/lmic/radio.c:801`); a backtrace's frame in LMIC ends the same way,
    // so only right after the `FAILURE`.
    re("lmic.failure", "lmic", Assert, r"^FAILURE$").context(),
    re(
        "lmic.assert",
        "lmic",
        Assert,
        r"^(?P<msg>.*[/\\]lmic[/\\]\w+\.c:\d+)$",
    )
    .weight(2)
    .follows(&["lmic.failure"]),
    re(
        "freertos.assert_hook",
        "freertos",
        Assert,
        r"(?P<msg>(?:__assert_func|vPortAssertIfInISR|vAssertCalled)\b.*|RTOS Assert \S+\s+Line \d+.*)$",
    ),
    re("zephyr.assert", "zephyr", Assert, r"ASSERTION FAIL(?:ED)?\s*[\[@]"),
    re("esp_idf.assert", "esp-idf", Assert, r"(?P<msg>assert failed[:!].*)$"),
    // The ESP32 radio controller's own asserts (`assert emi.c 164, param 00000000 00008800`,
    // `ASSERT_PARAM(-218959118 0), in lld_pdu.c at line 1281`): the watchdog panic the stalled
    // controller causes next is their consequence.
    re(
        "esp_bt.controller_assert",
        "esp-idf",
        Assert,
        r"^(?P<msg>assert \S+\.c \d+, param .*|ASSERT_(?:PARAM|ERR|WARN)\(.*\),? in \S+\.c at line \d+.*)$",
    ),
    re(
        "freertos.assert",
        "freertos",
        Assert,
        r"(?P<msg>ASSERT! Line \d+, file \S+.*|configASSERT.*)$",
    ),
    re("crt.assert", "libc", Assert, r"^(?P<msg>Assertion failed!)$").yields_to_context(),
    // CppUnit's report of a failed test: its `Test name: Suite::test` line, then the
    // `assertion failed` of CPPUNIT_ASSERT (a test's check, not the firmware's assert), and its
    // closing tally.
    re(
        "cppunit.test_name",
        "cppunit",
        TestFailure,
        r"^(?P<msg>Test name: \w+::\w+)$",
    )
    .weight(1),
    re(
        "cppunit.assertion",
        "cppunit",
        TestFailure,
        r"^(?P<msg>(?:assertion|equality assertion) failed)$",
    )
    .follows(&["cppunit.test_name"]),
    re(
        "cppunit.failures",
        "cppunit",
        TestFailure,
        r"^(?P<msg>Run: \d+\s+Failure total: [1-9]\d*\s+Failures: \d+\s+Errors: \d+)$",
    )
    .verdict(),
    // A runner's tally of failed tests (modm's `Failed 18 of 2645 tests`, also as the summary
    // of a collapsed block in a GitHub comment).
    re(
        "tests.failed_of",
        "tests",
        TestFailure,
        r"^(?:<summary>)?(?P<msg>Failed [1-9]\d* of \d+ tests?)(?:</summary>)?$",
    )
    .verdict(),
    // Nanos' assert (`assertion gsi >= 0 failed in src/x86_64/hpet.c: timer_config() on line
    // 147; halt`).
    re(
        "nanos.assert",
        "nanos",
        Assert,
        r"^(?P<msg>assertion .+ failed in \S+: \S+ on line \d+.*)$",
    ),
    re(
        "libc.assert",
        "libc",
        Assert,
        r#"(?P<msg>assertion ".*" failed.*|.*Assertion `.*' failed\b.*|(?i:assertion failed).*|assertion `[^`]*` failed.*|[Aa]ssertion '[^']*' failed\b.*)$"#,
    ),
    // cocoOS's assert (`Assert: nTasks < N_TASKS src\os_task.c Line 139`).
    re(
        "cocoos.assert",
        "cocoos",
        Assert,
        r"^Assert: (?P<msg>.+ Line \d+)",
    ),
    // Mbed's error handler reports MBED_ASSERT as an error whose message is the assertion.
    re(
        "mbed.assert",
        "mbed",
        Assert,
        r"^Error Message: (?P<msg>(?i:(?:mbed )?assert(?:at)?ion failed).*)$",
    ),
    re(
        "mbed.fault",
        "mbed",
        Crash,
        r"(?P<msg>\+\+ MbedOS (?:Fault Handler|Error Info) \+\+|FaultType: \w+|Error Message: .+)$",
    ),
    // A core's crash report that names where it stopped (`Modem has crashed, reason 0x10, PC:
    // 0x119f0a`).
    re(
        "firmware.crashed_at_pc",
        "firmware",
        Crash,
        r"(?P<msg>\b\w+ (?:has )?crashed\b.*\bPC\s*[:=]\s*0x[0-9a-fA-F]+.*)$",
    )
    .weight(2),
    re(
        "renode.cpu_abort",
        "renode",
        Crash,
        r"(?P<msg>CPU abort \[PC=[^\]]+\]: .+|PC does not lay in memory.*)$",
    ),
    // OP-TEE's core panic (`E/TC:0 0 Panic at core/arch/arm/mm/core_mmu.c:2114
    // <check_pa_matches_va>`, `Panic 'msg' at file:line <func>`) and a trusted application's:
    // how OP-TEE handles an assertion or an abort, so it yields to a line that names either.
    re(
        "optee.panic",
        "optee",
        Crash,
        r"(?P<msg>Panic (?:'[^']*' )?at \S+:\d+ <\w+>.*|TA panicked with code 0x[0-9a-fA-F]+.*)$",
    )
    .consequence(),
    re("riot.kernel_panic", "riot", Crash, r"(?P<msg>\*\*\* RIOT kernel panic:?.*)$").weight(2),
    re(
        "cpu.abort",
        "firmware",
        Crash,
        r"(?i)(?:^|[\s=])(?P<msg>(?:data|prefetch)[ _-]abort(?:\s*$|[^\w\s].*|\s+(?:at|in|exception|handler)\b.*)|DFSR:\s*0x[0-9a-f]+.*|IFSR:\s*0x[0-9a-f]+.*)$",
    ),
    // The ESP8266's exception dump (`Exception (3):`, after a serial monitor's stamp), and the
    // SDK's `Fatal exception:29 flag:2` as firmware report it as the last restart's reason. A
    // watchdog's reset prints one too: it yields to a cause the log names.
    re(
        "esp8266.exception",
        "esp8266",
        Crash,
        prefixed!(r"(?P<msg>Fatal exception \(?\d+\)?.*|Exception \(\d+\):.*)$"),
    )
    .consequence(),
    // The same exception as the ESP exception decoder prints it (`Exception 29: StoreProhibited:
    // A store referenced a page mapped with an attribute that does not permit stores`).
    re(
        "esp8266.exception_decoded",
        "esp8266",
        Crash,
        r"^(?P<msg>Exception \d+: \w+: .+)$",
    ),
    re(
        "esp8266.restart_reason",
        "esp8266",
        Crash,
        r"\b(?P<msg>Fatal exception:\d+ flag:\d+ \(EXCEPTION\).*)$",
    )
    .consequence(),
    // The ESP8266 Arduino core's stack dump (`>>>stack>>>`): an exception's or a watchdog's,
    // so it yields to the cause the log names.
    re("esp8266.stack_dump", "esp8266", Crash, r"(?P<msg>>>>stack>>>)\s*$")
        .weight(2)
        .consequence(),
    // The reset reason firmware log on the ESP8266 (`ESP.getResetReason()`, `getResetInfo()`):
    // a hardware or software watchdog's reset is a hang, and so is ESPurna's crash record of
    // one (`Reason of restart: 3`, the SDK's `REASON_SOFT_WDT_RST`; 1 is the hardware one's).
    re(
        "esp8266.watchdog_reset_reason",
        "esp8266",
        Hang,
        r"(?i)(?P<msg>(?:reset|reboot|restart) (?:reason|cause)\s*[:=]\s*(?:hardware|software|soft) (?:watchdog|wdt)\b.*|\bFatal exception:\d+ flag:\d+ \((?:SOFT_)?WDT\).*|\bReason of restart: [13]\s*$)",
    )
    .weight(2),
    // Tasmota's status reports the last restart: an exception's is a crash. Its `Status 12`
    // is the stack dump such a restart left (`"StatusSTK":{"Exception":29,"Reason":
    // "Exception",...`, or one field a line).
    re(
        "tasmota.restart_exception",
        "tasmota",
        Crash,
        r#"(?P<msg>"RestartReason":\s*(?:"Exception"|\{\s*"Exception":\s*\d+,\s*"Reason":\s*"Exception").*|"StatusSTK":\{"Exception":\d+,"Reason":"Exception".*|^\s*"Reason":\s*"Exception",?)$"#,
    )
    .weight(2),
    // Tock's kernel panic handler: `Kernel panic at kernel/src/process.rs:517:`, its message on
    // the next line.
    re("tock.kernel_panic", "tock", Crash, prefixed!(r"(?P<msg>Kernel panic at .+:\d+:.*)$")),
    re("tock.fault_status", "tock", Crash, r"^(?P<msg>---\| Fault Status \|---)$").weight(2),
    // An ESP core dump's registers (espcoredump.py): the exception cause by name, the
    // interrupt watchdog's being a hang.
    re(
        "esp_coredump.interrupt_watchdog",
        "esp-idf",
        Hang,
        r"^exccause\s+0x[0-9a-fA-F]+ \((?P<msg>InterruptWDTTim\w*)\)",
    ),
    re(
        "esp_coredump.exccause",
        "esp-idf",
        Crash,
        r"^exccause\s+0x[0-9a-fA-F]+ \((?P<msg>\w+)\)\s*$",
    )
    .weight(2),
    // OpenSBI's report of a trap it could not handle (`sbi_trap_error: hart0: trap handler
    // failed (error -2)`, then the trap's registers).
    re(
        "opensbi.trap_error",
        "opensbi",
        Crash,
        r"^sbi_trap_error: hart\d+: (?P<msg>.*\b(?:failed|mcause=0x[0-9a-fA-F]+)\b.*)$",
    ),
    // Zephyr's exception stack frame on RISC-V (`E:    mepc: 2fc012da`, 16 digits on RV64):
    // the pc of the fault.
    re(
        "zephyr.riscv_esf",
        "zephyr",
        Crash,
        r"^(?:E:|\[[\d:.,]+\]\s*<err>\s*os:)\s+(?P<msg>mepc: (?:[0-9a-f]{8}|[0-9a-f]{16}))\s*$",
    ),
    // A RISC-V firmware's own trap dump: the cause and the faulting pc on one line.
    re(
        "riscv.trap_dump",
        "firmware",
        Crash,
        r"(?i)\b(?P<msg>mcause[\s:=]+(?:0x)?[0-9a-f]+,?\s+mepc[\s:=]+(?:0x)?[0-9a-f]+\b.*)$",
    )
    .weight(2),
    // ESP-IDF's ESP_ERROR_CHECK, an assert on a call's result, and its decoded frame.
    re(
        "esp_idf.error_check",
        "esp-idf",
        Assert,
        r"(?P<msg>ESP_ERROR_CHECK failed: .*|^0x[0-9a-fA-F]{8}: _esp_error_check_failed\w* at .*)$",
    ),
    re("riot.hardfault", "riot", Crash, r"(?i)(?P<msg>context before hard ?fault.*)$"),
    // An ESP32's backtrace with no panic line above it (cut from a forum post): the firmware
    // crashed; after a panic, an assert or a watchdog it is their consequence, and lighter
    // than a panic's own line. (An interrupt watchdog's panic cut above its backtrace reads
    // as a crash: the excerpt no longer says which.)
    re(
        "esp.bare_backtrace",
        "esp-idf",
        Crash,
        r"^(?P<msg>Backtrace: ?0x[0-9a-fA-F]{8}:0x[0-9a-fA-F]{8}\b.*)$",
    )
    .weight(2)
    .consequence(),
    // OPAL firmware (skiboot) stopping itself (`[   73.066841857,0] Aborting!`). Its `CPU 0008
    // Backtrace:` also follows warnings it lives through (a lock spinning too long).
    re(
        "skiboot.abort",
        "skiboot",
        Crash,
        r"^(?P<msg>\[\s*[\d.]+,0\] Aborting!)$",
    ),
    // Hostboot's init service ending the boot (`System shutting down with error status
    // 0x90000289`).
    re(
        "hostboot.shutdown_error",
        "hostboot",
        Crash,
        r"\|(?P<msg>System shutting down with error status 0x[0-9a-fA-F]+)$",
    ),
    // Mbed OS's `new` out of memory: the firmware stops there.
    re("mbed.out_of_memory", "mbed", Crash, r"^(?P<msg>Operator new(?:\[\])? out of memory)$"),
    // Kendryte's K210 SDK trap handler (`core dump: fault load`, then `Cause 0x5, EPC 0x...`).
    re(
        "kendryte.core_dump",
        "kendryte",
        Crash,
        r"^(?P<msg>core dump: (?:fault|illegal|misaligned|breakpoint)\b.*)$",
    ),
    // A Rust panic handler that prints the `PanicInfo` itself (`*** PanicInfo { payload: Any {
    // .. }, message: Some(...), location: ... }`, or `Panicked at PanicInfo {payload: ...`).
    re("rust.panic_info", "firmware", Crash, r"(?P<msg>\bPanicInfo \{ ?payload: .*)$"),
    // nRF5 SDK's hard-fault handler through its logger (`<error> hardfault: HARD FAULT at
    // 0x00012280`), and the nRF Connect SDK's secure firmware's fault (`Platform Exception: SPU
    // Fault`).
    re(
        "nordic.hardfault",
        "nordic",
        Crash,
        r"(?P<msg><error> hardfault: HARD FAULT at 0x[0-9A-Fa-f]+|Platform Exception: \w+ Fault\b)",
    ),
    // RIOT's panic line comes first (`*** RIOT kernel panic:`), its reason on the next line.
    re("riot.failed_assertion", "riot", Assert, prefixed!(r"(?P<msg>FAILED ASSERTION)\.?$")),
    // A firmware's own assert macro reporting itself (`RFCORE_ASSERT(len <= n) failed at line
    // 91 in rfcore_read_fifo()!`).
    // A Nordic radio controller's own assert inside the firmware (`SoftDevice Controller ASSERT:
    // 53, 345`, `MPSL ASSERT: 112, 2134`); the hard fault its handler raises next is its
    // consequence. Mynewt's assert (`Assert @ 0x27a77`), before its fault dump.
    re(
        "nordic.controller_assert",
        "nordic",
        Assert,
        r"(?P<msg>(?:SoftDevice Controller|MPSL) ASSERT: \d+, \d+.*)$",
    ),
    re("mynewt.assert", "mynewt", Assert, r"(?:^|\s)(?P<msg>Assert @ 0x[0-9a-fA-F]+\b.*)$"),
    // CircuitPython's safe mode after a crash of its own core.
    re(
        "circuitpython.core_crash",
        "circuitpython",
        Crash,
        r"(?P<msg>CircuitPython core code crashed hard\..*|Crash into the HardFault_Handler\.?)$",
    )
    .weight(2),
    // CircuitPython's safe-mode reason after the core crashed: the Nordic SoftDevice's own
    // assertion is the cause.
    re(
        "circuitpython.nordic_assert",
        "circuitpython",
        Assert,
        r"^(?P<msg>Nordic (?:system firmware|soft device) (?:failure )?assertion\.?)$",
    ),
    // Espruino's own assert (`ASSERT(!foundPrototype) FAILED AT src/jsparse.c:2690`), before
    // its dump of the interpreter's variables.
    re(
        "espruino.assert",
        "espruino",
        Assert,
        r"(?:^|\s)(?P<msg>ASSERT\(.*\) FAILED AT \S+:\d+)\s*$",
    ),
    re(
        "firmware.assert_macro",
        "firmware",
        Assert,
        r"\b(?P<msg>[A-Z][A-Z0-9_]*ASSERT[A-Z0-9_]*\s*\(.*\)\s+failed\b.*)$",
    ),
    // A RISC-V trap that is a fault; an `Environment call` is how Zephyr raises its own
    // k_oops and k_panic, whose reason is printed elsewhere.
    re(
        "riscv.mcause",
        "firmware",
        Crash,
        r"\bmcause: \d+, (?P<msg>(?:Instruction|Load|Store\S*|AMO) (?:address misaligned|[Aa]ccess fault|page fault)|Illegal instruction)",
    ),
    re(
        "zephyr.fault",
        "zephyr",
        Crash,
        r"(?P<msg>\*{5} (?:MPU|MEMORY MANAGEMENT|BUS|USAGE|HARD|SECURE) FAULT \*{5})",
    ),
    re("zephyr.fatal", "zephyr", Crash, r">>> (?P<msg>ZEPHYR FATAL ERROR \d+: .+)$").consequence(),
    // Zephyr's x86 fault dump: a page fault (`Page fault at address 0xd25ff8 (error code 0x3)`
    // on x86_64, `***** CPU Page Fault (error code 0x00000002)` on ia32) and the access the MMU
    // refused (`Access violation: supervisor thread not allowed to write`).
    re(
        "zephyr.x86_page_fault",
        "zephyr",
        Crash,
        r"(?P<msg>Page fault at address 0x[0-9a-fA-F]+ \(error code 0x[0-9a-fA-F]+\)|\*{5} CPU Page Fault \(error code 0x[0-9a-fA-F]+\)|Access violation: (?:user|supervisor) thread not allowed to (?:read|write|execute)\b)",
    ),
    // An interrupt watchdog is a watchdog like the task watchdog: the code stopped yielding, so
    // the run hung, though ESP-IDF reports it as a panic.
    re(
        "esp_idf.interrupt_watchdog",
        "esp-idf",
        Hang,
        r"(?P<msg>Guru Meditation Error: Core\s*\d*\s+panic'ed \(Interrupt wdt timeout on CPU\s*\d+\).*)$",
    ),
    // A panic that names no cause (the ESP8266 RTOS SDK's `panic'ed (unknown)` after its task
    // watchdog) reports how a failure was handled: the cause before it decides.
    re(
        "esp_idf.guru_unknown",
        "esp-idf",
        Crash,
        r"(?P<msg>Guru Meditation Error: Core\s*\d*\s+panic'ed \(unknown\).*)$",
    )
    .consequence(),
    // NodeMCU's Lua VM: an error no Lua code caught, and the board restarts.
    re(
        "nodemcu.lua_panic",
        "nodemcu",
        Crash,
        r"(?P<msg>PANIC: unprotected error in call to Lua API\b.*)$",
    ),
    // Humility's task listing (`humility tasks`) showing a Hubris task in its fault state.
    re(
        "hubris.task_fault",
        "hubris",
        Crash,
        r"^\s*\d+\s+\w+\s+\d+\s+\d+\s+(?P<msg>FAULT: .*)$",
    ),
    // A double exception, which ESP-IDF's panic handler also takes while it reports another
    // panic (an interrupt watchdog): how a failure was handled, so the cause before it decides.
    re(
        "esp_idf.double_exception",
        "esp-idf",
        Crash,
        r"(?P<msg>Guru Meditation Error: Core\s*\d*\s+panic'ed \(Double exception\).*)$",
    )
    .consequence(),
    re("esp_idf.guru_meditation", "esp-idf", Crash, r"(?P<msg>Guru Meditation Error(?::| of type) .+)$"),
    // An Xtensa core's exception registers without the panic's first line (cut by the page or
    // the serial monitor): a CPU exception, unless a line of the log names what it was (an
    // interrupt watchdog prints the same registers).
    re(
        "xtensa.exception_registers",
        "esp-idf",
        Crash,
        r"(?:^|\s)(?P<msg>EXCCAUSE\s*: 0x[0-9a-fA-F]{8})(?:\s|$)",
    )
    .weight(1)
    .generic(),
    // Zephyr's fault dump on ARC cores (`***** Exception vector: 0x2, cause code: 0x1,
    // parameter 0x0`).
    re(
        "zephyr.arc_exception",
        "zephyr",
        Crash,
        r"\*{5} (?P<msg>Exception vector: 0x[0-9a-fA-F]+, cause code: 0x[0-9a-fA-F]+.*)$",
    ),
    // U-Boot's (and an ARM Linux kernel's) register dump after an exception (`pc : [<01000004>]
    // lr : [<3ff74bc0>]`).
    re(
        "arm.exception_registers",
        "u-boot",
        Crash,
        r"^(?P<msg>pc : \[<[0-9a-fA-F]{8,16}>\]\s+lr : \[<[0-9a-fA-F]{8,16}>\]).*$",
    )
    .weight(2),
    // A firmware's panic handler naming a fault or a safety check (Zig's `panic: reached
    // unreachable code`, `panic: Unhandled exception: HardFault`).
    re(
        "firmware.panic_fault",
        "firmware",
        Crash,
        r"(?i)\bpanic: (?P<msg>(?:unhandled exception:?\s*)?(?:hard ?fault|bus ?fault|usage ?fault|mem\w* ?fault)\b.*|reached unreachable code\b.*|index out of bounds\b.*|integer overflow\b.*|attempt to use null value\b.*)$",
    ),
    // Other firmware borrow the name for their own fault dump (`M0 Guru Meditation`).
    re("firmware.guru_meditation", "firmware", Crash, r"^(?:\w+ )?(?P<msg>Guru Meditation)\b.*$")
        .weight(2),
    // CircuitPython's safe mode after its watchdog fired.
    re(
        "circuitpython.watchdog",
        "circuitpython",
        Hang,
        r"^(?P<msg>Internal watchdog timer expired\.?)$",
    ),
    // littlefs's assert (`lfs.c:1234:assert: head >= 2`), and as Meshtastic reports it (`LFS
    // assert: head >= 2 && ...`).
    re(
        "littlefs.assert",
        "littlefs",
        Assert,
        r"(?P<msg>\blfs\w*\.c:\d+:assert: .+|\bLFS assert: .+)$",
    ),
    // RT-Thread's fault handler naming the thread that faulted.
    re(
        "rt_thread.hard_fault",
        "rt-thread",
        Crash,
        r"(?P<msg>hard fault on (?:thread|handler)\b.*)$",
    ),
    // RepRapFirmware's diagnostics (`M122`) reporting why the board last reset.
    re(
        "reprapfirmware.reset_assert",
        "reprapfirmware",
        Assert,
        r"^Last software reset .*reason: (?P<msg>AssertionFailed\b.*)$",
    ),
    re(
        "reprapfirmware.reset_fault",
        "reprapfirmware",
        Crash,
        r"^Last software reset .*reason: (?P<msg>(?:Hard|Bus|Usage|Mem\w*)Fault\b.*|StackOverflow\b.*)$",
    ),
    // A firmware reporting on boot that the run before it ended in a fault (rusEFI's `Last boot
    // had hard fault type: 3 addr: 0 CSFR: 10000`).
    re(
        "firmware.last_boot_fault",
        "firmware",
        Crash,
        r"(?i)(?P<msg>\blast (?:boot|reset|run) (?:had|was|ended in|caused by) (?:a )?hard ?fault\b.*)$",
    ),
    re("esp_idf.task_watchdog_abort", "esp-idf", Hang, r"task_wdt: (?P<msg>Aborting\.)"),
    re(
        "esp_idf.abort_after_watchdog",
        "esp-idf",
        Hang,
        r"(?P<msg>abort\(\) was called at PC 0x[0-9a-fA-F]+(?: on core \d+)?)",
    )
    .follows(&["esp_idf.task_watchdog", "esp_idf.task_watchdog_abort"]),
    re(
        "esp_idf.abort",
        "esp-idf",
        Crash,
        r"(?P<msg>abort\(\) was called at PC 0x[0-9a-fA-F]+(?: on core \d+)?)",
    )
    .consequence(),
    // A decoded backtrace frame in a watchdog's interrupt handler: the watchdog fired, and
    // whatever aborted did so on its behalf.
    re(
        "esp_idf.watchdog_frame",
        "esp-idf",
        Hang,
        r"^(?:0x[0-9a-fA-F]{8}:|\(inlined by\)) (?P<msg>(?:esp_)?task_wdt_isr\w*|task_wdt_timeout_handling|int_wdt_isr\w*) at ",
    )
    .weight(2),
    re("esp_idf.stack_overflow", "esp-idf", Crash, r"\*\*\*ERROR\*\*\* A stack overflow in task"),
    re("esp_idf.task_watchdog", "esp-idf", Hang, r"(?P<msg>Task watchdog got triggered.*)$"),
    // ESPHome's report of the crash the last boot ended in: its reason decides (a watchdog's is
    // a hang), the banner alone is a crash.
    re(
        "esphome.crash_reason_watchdog",
        "esphome",
        Hang,
        r"\[(?:esp32\.crash|esp8266):\d+\]:\s+(?P<msg>Reason: (?:Task wdt|Interrupt wdt|Soft WDT|Hardware WDT)\b.*)$",
    ),
    re(
        "esphome.crash_detected",
        "esphome",
        Crash,
        r"(?P<msg>\*\*\* CRASH DETECTED ON PREVIOUS BOOT \*\*\*)",
    )
    .weight(2)
    .consequence(),
    // Other RTOSes' task watchdogs (Zephyr's task_wdt: `Task watchdog channel 1 callback`).
    re(
        "rtos.task_watchdog",
        "firmware",
        Hang,
        r"(?i)(?P<msg>\btask watchdog (?:channel \d+ )?(?:callback|expired|timed? ?out|fired)\b.*)$",
    )
    .weight(2),
    // An ESP chip's ROM names a watchdog's reset on the next boot: ESP32's timer-group
    // watchdogs (`TG1WDT_SYS_RESET`; the S3's and C3's ROM says `TG1WDT_SYS_RST`), ESP8266's
    // hardware watchdog (`rst cause:4`, then `wdt reset`); the ESP8266 Arduino core's software
    // watchdog, whose reset it reports before its stack dump; Marlin's ` Watchdog Reset` on boot.
    re(
        "esp.watchdog_reset",
        "esp",
        Hang,
        r"(?P<msg>rst:0x[78] \(TG[01]WDT_SYS_(?:RESET|RST)\).*|\brst cause:\s*4,.*|^wdt reset$|(?:^|\s)Soft WDT reset\s*$|^Watchdog Reset$)",
    )
    .weight(2),
    // Linux's own lockup detectors on an embedded Linux board or under an emulator: a CPU stuck
    // in the kernel, a task blocked for minutes, an RCU stall.
    re(
        "linux.lockup",
        "linux",
        Hang,
        r"(?P<msg>BUG: soft lockup - CPU#\d+ stuck for \d+s!.*|Watchdog detected hard LOCKUP on cpu \d+.*|INFO: task \S+ blocked for more than \d+ seconds\.|rcu: INFO: rcu_\w+ (?:self-)?detected stalls? on CPUs?.*|INFO: rcu_\w+ (?:self-)?detected stalls? on CPUs?.*)$",
    )
    .weight(2),
    // Zephyr's fault dump names the faulting instruction whatever the fault's banner was.
    re(
        "zephyr.faulting_instruction",
        "zephyr",
        Crash,
        r"(?P<msg>Faulting instruction address \(r15/pc\): 0x[0-9a-fA-F]+)",
    )
    .weight(2),
    // A Linux kernel's panic, as a LAVA job's boot shows it.
    re(
        "linux.kernel_panic",
        "linux",
        Crash,
        r"(?P<msg>Kernel panic - not syncing: .+|Unable to handle kernel (?:NULL pointer dereference|paging request) at virtual address .+|Unhandled fault: .+ at 0x[0-9a-fA-F]+|Internal error: Oops\b.*)$",
    ),
    re("qemu.lockup", "qemu", Crash, r"^qemu: fatal: (?P<msg>Lockup.*)$"),
    // QEMU's fatal CPU error, also where the guest's shell prompt left no line break before it
    // (`root@embox:/#qemu: fatal: Trying to execute code outside RAM or ROM at 0xe824834b`).
    re("qemu.fatal", "qemu", Crash, r"(?:^|[#$>]\s*)qemu: fatal: (?P<msg>.+)$"),
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
        r"(?i)^(?:<(?:e|err|error|fatal|crit|critical)\s*>\s*)?(?P<msg>\W*(?:(?:hint|cause|reason|type|exception|fault):\s*)?(?:hard ?fault|mem(?:ory)? ?manage(?:ment)?(?: fault)?|bus ?fault|usage ?fault)(?:_handler)?(?:\s*$|\s*[^\w\s].*|\s+(?:at|in|detected|occurred|exception)\b.*))$",
    ),
    re(
        "cortex_m.fault_status",
        "firmware",
        Crash,
        r"\b(?P<msg>CFSR(?:\s*[:=]\s*(?:0x)?[0-9a-fA-F]{1,8}|\s+0x0*[1-9a-fA-F][0-9a-fA-F]{0,6})\b.*)$",
    ),
    re(
        "freertos.stack_overflow",
        "freertos",
        Crash,
        r"(?i)^\W*(?P<msg>stack overflow (?:in|detected)\b.*)$",
    ),
    // Stack guards' own words: Zephyr's stack sentinel, gcc's stack protector, a firmware's
    // overflow report.
    re(
        "firmware.stack_check",
        "firmware",
        Crash,
        r"(?i)(?P<msg>stack check fail\w*\b.*|stack smashing detected.*|\bstack overflowed\b.*)$",
    ),
    // A panic right after a test's failed line is how that test failed (Rust's asserts panic).
    re("libtest.case_panic", "cargo", TestFailure, r"(?:^|\s)(?P<msg>panicked at .+)$")
        .follows(&["libtest.case_failed"]),
    re("rust.panic", "firmware", Crash, r"(?:^|\s)(?P<msg>panicked at .+)$"),
    // esp-backtrace's panic report on Espressif chips (`!! A panic occured in 'src/main.rs', at
    // line 35, column 5`; its own spelling, and the corrected one).
    re(
        "esp_backtrace.panic",
        "firmware",
        Crash,
        r"^!! (?P<msg>A panic occurr?ed in .+)$",
    ),
    // VESC's report of the last crash (`System crashed, registers:`).
    re(
        "vesc.crash",
        "firmware",
        Crash,
        r"^(?P<msg>System crashed, registers:)$",
    ),
    // probe-run's and probe-rs's own report of a firmware that faulted or panicked, and the
    // backtrace frames they print through the fault handler or the panic machinery.
    re(
        "probe_rs.firmware_fault",
        "probe-rs",
        Crash,
        r"(?P<msg>Firmware exited unexpectedly: Exception\b.*|the program panicked\b.*|CPU halted unexpectedly\.?)$",
    ),
    re(
        "rust.fault_frame",
        "probe-rs",
        Crash,
        r"^(?:\d+: 0x[0-9a-fA-F]+ - |Frame \d+: |#\d+\s+(?:0x[0-9a-fA-F]+ in )?)(?P<msg>\S*(?:HardFault\w*|(?i:hard_fault_handler)|rust_begin_unwind|core::panicking::\w+))\b",
    )
    .weight(2),
    // A traceback's frame as pytest prints it, and the exception that ends a traceback whose
    // first line the excerpt lost: what raised is unknown, like a bare traceback's.
    re("python.pytest_frame", "python", InfraError, r"^(?P<msg>\S+\.py:\d+): in \S+$")
        .weight(1)
        .generic(),
    re(
        "python.exception",
        "python",
        InfraError,
        r"^(?P<msg>(?:[a-z_]\w*\.)*[A-Z]\w*(?:Error|Exception): .+)$",
    )
    .weight(1)
    .generic(),
    // Generic evidence, after every rule that knows the tool: a line that says only that
    // something failed (`error: ...`, `ERROR: ...`, `FATAL: ...`, ninja's `FAILED: ...`) or
    // timed out. It decides only a log no specific line explains, as the step a context line
    // names or else as a build step (the commonest place for a tool that is not known), and
    // the reason says the confidence is low.
    // A firmware's assert in shapes no framework above claimed: `[ASSERT] file.c:716`, `mbed
    // assertation failed: ...`, `ASSERT failed at ...`.
    re(
        "firmware.assert_location",
        "firmware",
        Assert,
        prefixed!(r"(?i:ASSERT(?:ION)?)\]?\s*:?\s*(?P<msg>\S+\.(?:c|cc|cpp|cxx|h|hpp|rs|S):\d+\b.*)$"),
    )
    .weight(2),
    re(
        "firmware.assert_failed",
        "firmware",
        Assert,
        r"(?i)(?:^|[^\w.])(?P<msg>(?:\w+ )?assert(?:ion|ation)? fail(?:ed|ure)?\b.*)$",
    )
    .weight(2),
    // gputils' linker (gplink, under SDCC for PICs) with no room for a section.
    re(
        "gplink.no_memory",
        "gplink",
        LinkError,
        r"^error: (?P<msg>No target memory available for section .*)$",
    ),
    // ChibiOS's build-all scripts' tally per directory (`testhal/NRF51: 8 builds ok, 0 builds
    // failed`).
    re(
        "chibios.builds_ok",
        "chibios",
        Pass,
        r"^(?P<msg>\S+: [1-9]\d* builds ok, 0 builds failed)$",
    ),
    re(
        "chibios.builds_failed",
        "chibios",
        BuildError,
        r"^(?P<msg>\S+: \d+ builds ok, [1-9]\d* builds failed)$",
    ),
    // Contiki-NG's compile test summary.
    re(
        "contiki.examples_failed",
        "contiki-ng",
        BuildError,
        r"^(?P<msg>Number of examples that failed to build: [1-9]\d*)$",
    ),
    // A source-like file's `path:line[:col]` (or `path:line (column N)`) with an error: a
    // devicetree, overlay, Kconfig, linker script, CMake or YAML file the build reads.
    re(
        "build.source_error",
        "build",
        BuildError,
        r"(?P<msg>(?:^|\s)\S*(?:\.(?:dts|dtsi|overlay|conf|ld|lds|cmake|ya?ml|defconfig|toml|mk)|Kconfig[\w.-]*|CMakeLists\.txt)[:(]\s*\d+(?:[:.]\d+)?(?:-\d+(?:\.\d+)?)?(?:\s*\(column \d+\))?\)?:?\s*(?i:(?:fatal )?(?:parse |syntax )?error)\b.*)$",
    )
    .weight(2),
    // AutoPTS's bot (Bluetooth qualification tests) listing the cases that did not pass
    // (`<details><summary>Failed tests (13)</summary>GATT    GATT/SR/GAS/BV-02-C    FAIL<br>...`).
    re(
        "autopts.failed_tests",
        "autopts",
        TestFailure,
        r"^<details><summary>(?P<msg>Failed tests(?: \([1-9]\d*\))?)</summary>",
    ),
    // A generic tally with no failures under at least one pass (twister's DEBUG summary,
    // a CI comment's `Executed: 24` then `Failed: 0`), or one with failures.
    re(
        "summary.passing_count",
        "any",
        Pass,
        r"(?i)^(?:\w+\s+-\s+)?(?P<msg>(?:Passing test (?:suites|cases)|Passed tests?|Passing tests|Tests? passed|Executed(?: test cases)?|Passed)\s*:\s*[1-9]\d*)\s*$",
    )
    .weight(1),
    re(
        "summary.zero_failing",
        "any",
        Pass,
        r"(?i)^(?:\w+\s+-\s+)?(?P<msg>(?:Failing test (?:suites|cases)|Failed tests?|Failing tests|Tests? failed|Failed|Failures)\s*:\s*0)\s*$",
    )
    .follows(&["summary.passing_count"])
    .verdict(),
    // The same tally with failures: `Executed: 24` then `Failed: 4`.
    re(
        "summary.failed_after_count",
        "any",
        TestFailure,
        r"(?i)^(?:\w+\s+-\s+)?(?P<msg>(?:Failed|Failures)\s*:\s*[1-9]\d*)\s*$",
    )
    .follows(&["summary.passing_count"])
    .verdict(),
    // defmt-test's closing line.
    re("defmt_test.passed", "defmt-test", Pass, r"(?:^|\s)(?P<msg>all tests passed!)\s*$").verdict(),
    re(
        "summary.failing_count",
        "any",
        TestFailure,
        r"(?i)^(?:\w+\s+-\s+)?(?P<msg>(?:Failing test (?:suites|cases)|Failed tests|Failing tests|Tests failed)\s*:\s*[1-9]\d*)\s*$",
    )
    .weight(2),
    // st-flash's and st-info's own shapes: a target its chip table does not know, a target it
    // cannot reach.
    re(
        "stlink.unknown_chip",
        "st-flash",
        FlashError,
        r"(?:WARN|ERROR) \S+\.c: (?P<msg>unknown chip id!?.*)$",
    )
    .weight(2),
    // An error from stlink's own logger (`2019-03-24T20:10:32 ERROR common.c: ...`) is the
    // flasher's, whatever it says.
    re(
        "stlink.log_error",
        "st-flash",
        FlashError,
        r"^\s*\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d ERROR \S+\.c: (?P<msg>.+)$",
    )
    .weight(2),
    re(
        "stlink.connect_failed",
        "st-flash",
        FlashError,
        r"^(?P<msg>Failed to connect to target\.?)$",
    )
    .weight(2),
    // pytest's own failure before any test ran: a plugin's traceback, an argument not found.
    re(
        "pytest.internal_error",
        "pytest",
        InfraError,
        r"(?P<msg>INTERNALERROR>\s*(?:Traceback \(most recent call last\):|(?:\w+\.)*\w*(?:Error|Exception): .*))$",
    )
    .weight(2),
    re(
        "pytest.not_found",
        "pytest",
        InfraError,
        r"^ERROR: (?P<msg>(?:file or directory )?not found: .+)$",
    )
    .weight(2),
    // KernelCI's test report mail: a run's results by count.
    re(
        "kernelci.results_failed",
        "kernelci",
        TestFailure,
        r"^\s*Results:\s+(?P<msg>\d+ PASS, [1-9]\d* FAIL, \d+ SKIP)\s*$",
    )
    .weight(2),
    // docker-compose that could not start a service (a LAVA lab's dispatcher whose board device
    // is missing): the lab, not the firmware.
    re(
        "compose.service_failed",
        "docker",
        InfraError,
        r"^ERROR: (?P<msg>for \S+\s+Cannot (?:start|create) service .+|Encountered errors while bringing up the project\.)$",
    )
    .weight(2),
    re(
        "lava.bad_result",
        "lava",
        InfraError,
        r"(?:^|\s)(?P<msg>Bad test result: .+)$",
    )
    .weight(2),
    re(
        "git.repository_not_found",
        "git",
        InfraError,
        r"^(?:fatal|ERROR|remote): (?P<msg>[Rr]epository (?:'[^']*' )?not found\.?.*)$",
    )
    .weight(2),
    // pyOCD's info and debug log lines (`0000912 I Asserting reset prior to connect
    // [coresight_target]`): what it did, not a failure, whatever words they hold. After every
    // rule that knows one of them (pyOCD's closing `Erased ... programmed ...`).
    noise("pyocd.info_line", "pyocd", r"^\d{7} [ID] .+ \[[\w.]+\]$"),
    // A bare error line that names a debug probe, an adapter or the flash: a flashing tool's,
    // whichever it is (OpenOCD's own `Error:` lines without its banner, a vendor tool's).
    re(
        "probe.error",
        "flasher",
        FlashError,
        r"^(?:\*+ )?(?:Error|ERROR)\s*:\s*(?P<msg>.*(?i:debug adapter|adapter|probe|flash|jtag|\bswd\b|\bdap\b|st-?link|j-?link|cmsis-dap|debugger|libusb|usb device|target voltage|target device|cable|\w\.cfg\b).*)$",
    )
    .weight(1)
    .generic(),
    // A line that says flashing, uploading or erasing failed, from a tool no rule knows (an
    // IDE's uploader, a vendor's programmer): the flash's failure, at low confidence.
    re(
        "flash.generic_failed",
        "flasher",
        FlashError,
        r"(?i)^\W*(?P<msg>(?:(?:flash(?:ing)?|upload(?:ing)?|programming|(?:chip |sector |mass )?eras(?:e|ing)|writ(?:e|ing) (?:to )?flash)\b[^.]{0,40}?\b(?:failed|error|unsuccessful|aborted|cancell?ed)|failed (?:uploading|flashing|to (?:flash|program|upload|erase))\b).*)$",
    )
    .weight(1)
    .generic(),
    // Zephyr's build system told a board it does not know (`No board named 'nrf52840dk_nrf52840'
    // found.`, then the boards it does): the build could not be configured.
    re(
        "zephyr.no_board",
        "zephyr",
        BuildError,
        r"\b(?P<msg>No board named '[^']+' found\b.*)$",
    )
    .weight(2),
    // A failure that names the chip, the probe or the programmer (`Failed to init the device.`,
    // `Cannot write to target`, `'' does not match any available port`), from a tool no rule
    // knows: the flash's, at low confidence. The nouns stand as words (not `esp-idf/chip/`),
    // and the vague ones only in a flasher's phrase (`to target`, not a build's `build
    // target`; `the device`, not any `device`).
    re(
        "flash.device_failed",
        "flasher",
        FlashError,
        r#"(?i)^\W*(?:[\w-]+:\s+)?(?P<msg>(?:fail(?:ed|ure|s)?|error|cannot|can ?not|unable to|could not|couldn't)\b[^.]*?[\s'"(](?:(?:to|the|no|a) target|target (?:device|chip|mcu|board|voltage)|(?:the|target|usb|dfu|debug) device|device id|chip|(?:debug|the|no|a) probe|programmer|debugger|st-?link|j-?link|dfu|bootloader|bootsel|mcu|swd|jtag|emulator)(?:[\s.,:;!'")]|$).*|'[^']*' does not match any available port)$"#,
    )
    .weight(1)
    .generic(),
    // A write the tool read back and found wrong (`page 3/64.verification error`,
    // `flash verify failed`), from a programmer no rule knows.
    re(
        "flash.verify_failed",
        "flasher",
        FlashError,
        r"(?i)(?:^|[^\w\s]\s*|\b(?:flash|write|program|programming|page|memory|data)\s+)(?P<msg>verif(?:y|ication) (?:error|failed)\b.*)$",
    )
    .weight(1)
    .generic(),
    // A test report's JSON entry whose value is a failure (`"interrupts":"fail"`, Markdown's bold
    // around it in an issue): a test failed, at low confidence.
    re(
        "json.test_failed",
        "any",
        TestFailure,
        r#"^"(?P<msg>[\w .-]+"\s*:\s*"(?:\*\*)?(?:fail|failed|failure|FAIL|FAILED)(?:\*\*)?)",?$"#,
    )
    .weight(1)
    .generic(),
    // A test's own result line in a shape no runner above claims (`Test case spi_loopback: FAIL`,
    // `TC 12 - FAILED`, Zephyr's older `Test suite x failed.`): a test failed, at low confidence.
    re(
        "generic.test_failed",
        "any",
        TestFailure,
        r"(?i)^\W*(?P<msg>(?:test(?:\s*case|\s*result)?|tc)[\s:#][^\r\n]{0,80}?[\s:=-](?:fail|failed|failure)\b)\W*$",
    )
    .weight(1)
    .generic(),
    re(
        "generic.error",
        "any",
        BuildError,
        prefixed!(r"(?:ERROR|error|FATAL ERROR|FATAL|fatal|Fatal error|FAILED)\s*:\s*(?P<msg>\S.*)$"),
    )
    .weight(1)
    .generic(),
    re(
        "generic.timeout",
        "any",
        Hang,
        r"^(?:\w+ )?(?P<msg>(?i:time ?out|timed out)(?:[.!]*|[:!] .*| (?:after|waiting|while|reached|expired|exceeded)\b.*))$",
    )
    .weight(1)
    .generic(),
    // A failure the tool says it went on from (`Signature verification failed, continuing
    // with unsigned image`, `..., falling back to full calibration`): no evidence, to the
    // rules below or to the learned fallback. (`retrying` is no such line: the retry may fail.)
    noise(
        "any.recovered",
        "any",
        r"(?i)(?:,|\.|\s-)\s*(?:continuing(?: with| anyway)?|falling back to|ignoring|skipping)\b[^.]*\.{0,3}$",
    ),
    // Last, so that every rule above sees its lines first: a bare `Error: ...` is OpenOCD's only
    // in an OpenOCD log.
    re("openocd.error", "openocd", FlashError, r"^Error: (?P<msg>.+)$")
        .weight(1)
        .in_context(),
];

/// A line may hold a compiler or linker diagnostic only if it has one of these; the cheap test
/// keeps [`crate::analysis::parse_build_log`] off the lines that cannot be one.
pub(super) const DIAGNOSTIC_HINT: &str = r"(?i)error|undefined reference|multiple definition|overflowed|will not fit|cannot find|no rule to make|:\d+: \*\*\* |\bld(?:\.\w+)?(?:\.exe)?: ";

/// A line that says something went wrong, in words any tool may use: what the learned fallback
/// reads when no rule explains a log. Not a rule: it claims nothing, and it gives the prefilter
/// no literal, so it is looked for only on the lines the rules' literals already bring to the
/// set.
pub(super) const FAILURE_WORDS: &str = r"(?i)error|fail|fatal|exception|abort|panic|timed out|timeout|cannot|can't|unable|not found|no such|refused|denied|traceback|undefined reference|missing|crash|assert|wdt|watchdog";

/// The table compiled once: every regex rule's pattern (plus the diagnostic hint and the failure
/// words, last) as the search needs it, the literals that tell which of them could match a
/// line, and each rule's own regex for its `msg` group.
///
/// A segment is searched only with the patterns whose literals it holds, each by a lazy DFA of
/// its own. One automaton of every pattern took a third the time on ordinary logs and three
/// times it on logs of varied evidence: its states mix every pattern's partial matches, so a
/// line of new text built new states, where a pattern's own automaton soon holds every state it
/// needs (on the real corpus repeated, 69 MB, one release build: 4.2 s and 278 MB peak RSS
/// before, 1.4 s and 140 MB after; the fixture logs repeated to 268 MB: 1.6 s before, 1.3 s
/// after, a busy machine for both).
///
/// The patterns run over bytes with Unicode classes off: `\w`, `\s` and `.` mean ASCII words,
/// ASCII blanks and any byte. Tool output is ASCII where it matters, and Unicode classes make an
/// automaton blow up on line noise (a serial console at the wrong baud rate), slowing it a
/// hundredfold.
pub(super) struct Compiled {
    /// Each pattern as searched (see [`set_patterns`]), for its lazy DFA.
    hirs: Vec<regex_syntax::hir::Hir>,
    /// Each pattern's lazy DFA, built the first time a segment is a candidate of it.
    searchers: Vec<OnceLock<DFA>>,
    /// Which patterns a segment could match.
    candidates: Candidates,
    /// For each pattern but the hint and the failure words, the rule it is the pattern of:
    /// ascending, so the patterns a line matches give their rules in table order.
    pub pattern_rule: Vec<usize>,
    /// The diagnostic rules, in table order: candidates of every line the hint matches.
    pub diagnostic_rules: Vec<usize>,
    /// For each rule, its own regex, compiled the first time it is needed (see
    /// [`Compiled::regex`]).
    regex: Vec<OnceLock<Regex>>,
    /// The diagnostic hint's index among the patterns.
    pub hint: usize,
    /// [`FAILURE_WORDS`]' index among the patterns.
    pub failure: usize,
    /// The lines some pattern could match, found over a whole buffer at once.
    pub prefilter: Prefilter,
}

/// A pattern's lazy DFA cache, an upper bound (it grows as states are needed, and is cleared
/// and refilled past it). One pattern's states are few: on the real corpus the largest cache
/// stays far below it.
const PATTERN_CACHE_BYTES: usize = 1 << 20;

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
    let mut pattern_rule = Vec::with_capacity(RULES.len());
    let mut diagnostic_rules = Vec::new();
    for (index, rule) in RULES.iter().enumerate() {
        match rule.matcher {
            Matcher::Regex(pattern) => {
                pattern_rule.push(index);
                patterns.push(pattern);
            }
            Matcher::Diagnostic { .. } => diagnostic_rules.push(index),
        }
    }
    let hint = patterns.len();
    patterns.push(DIAGNOSTIC_HINT);
    let failure = patterns.len();
    patterns.push(FAILURE_WORDS);
    #[expect(
        clippy::expect_used,
        reason = "the patterns are constants; the unit tests compile the set"
    )]
    let hirs = patterns
        .iter()
        .map(|p| set_patterns::for_set(p))
        .collect::<Result<Vec<_>, _>>()
        .expect("built-in triage patterns parse");
    let literals = prefilter::literals_of(&patterns);
    Compiled {
        searchers: hirs.iter().map(|_| OnceLock::new()).collect(),
        hirs,
        candidates: Candidates::new(&literals),
        prefilter: Prefilter::new(&literals[..failure]),
        pattern_rule,
        diagnostic_rules,
        regex: RULES.iter().map(|_| OnceLock::new()).collect(),
        hint,
        failure,
    }
});

/// The lazy DFA of one pattern. It never gives up: with no minimum of bytes searched between
/// cache clears set, a search that fills the cache clears it and goes on.
#[expect(
    clippy::expect_used,
    reason = "the patterns are constants; the unit tests build every pattern's automaton"
)]
fn searcher(hir: &regex_syntax::hir::Hir) -> DFA {
    let nfa = thompson::Compiler::new()
        .configure(
            thompson::Config::new()
                .utf8(false)
                .which_captures(WhichCaptures::None),
        )
        .build_from_hir(hir)
        .expect("built-in triage pattern compiles");
    hybrid::dfa::Builder::new()
        .configure(DFA::config().cache_capacity(PATTERN_CACHE_BYTES))
        .build_from_nfa(nfa)
        .expect("a triage pattern's lazy DFA builds")
}

impl Compiled {
    /// Pattern `index`'s lazy DFA.
    fn searcher(&self, index: usize) -> &DFA {
        self.searchers[index].get_or_init(|| searcher(&self.hirs[index]))
    }

    /// How many patterns there are: the rules' regexes, the hint and the failure words.
    pub fn patterns(&self) -> usize {
        self.hirs.len()
    }

    /// Rule `index`'s own regex (None for a diagnostic rule). Only the rules that keep a match
    /// need theirs (for its `msg` group), so each is compiled the first time it does: compiling
    /// all of them took a third of a short log's triage.
    pub fn regex(&self, index: usize) -> Option<&Regex> {
        match RULES.get(index)?.matcher {
            Matcher::Regex(pattern) => {
                Some(self.regex.get(index)?.get_or_init(|| compile(pattern)))
            }
            Matcher::Diagnostic { .. } => None,
        }
    }
}

/// What one thread needs to search the patterns: its own cache for each pattern's lazy DFA
/// (shared, the threads would take turns or rebuild them), and room for a segment's candidates
/// and the patterns it matches.
#[derive(Debug, Clone)]
pub(super) struct SetScratch {
    /// A cache for each pattern, made the first time the pattern searches.
    caches: Vec<Option<DfaCache>>,
    candidates: Vec<u32>,
    matched: Matched,
    /// The segments this thread matched before, and the rules they matched.
    pub memo: Memo,
}

/// Segments already matched, with the rules they matched and whether they hold a failure word.
/// A long log repeats its lines (a status line every second, the same suite's output every
/// run), and looking a segment up costs a hash of its bytes where searching walks each candidate
/// pattern's lazy DFA over them. What a segment matches depends on its bytes alone (the triager's state
/// applies after), so a remembered answer is the search's.
#[derive(Debug, Clone, Default)]
pub(super) struct Memo {
    known: HashMap<Box<[u8]>, Remembered, BuildHasherDefault<FxHasher>>,
    /// What `known` holds, counted as in [`Memo::remember`].
    bytes: usize,
    /// Lookups `known` answered, and segments it took in, since it last started afresh.
    hits: usize,
    taken: usize,
    /// Segments still to pass by without a lookup: a memo that filled up while answering fewer
    /// lookups than it took in is a log of ever new lines, where hashing and keeping each
    /// segment is all cost (a third more CPU on such a log). It tries again after them.
    resting: usize,
}

/// A remembered segment's answer.
#[derive(Debug, Clone)]
pub(super) struct Remembered {
    pub rules: Box<[usize]>,
    pub failing: bool,
}

/// Most bytes a [`Memo`] holds; past it, it forgets everything and starts again (a log of ever
/// new lines gains nothing from it, and keeps its memory flat).
const MEMO_BYTES: usize = 8 << 20;

/// Longest segment remembered: longer lines rarely repeat byte for byte (they carry addresses
/// and counters), and hashing them costs more than it saves.
const MEMO_SEGMENT_BYTES: usize = 256;

/// What an entry costs besides its bytes and rules: the map's slot and the two allocations.
const MEMO_ENTRY_OVERHEAD: usize = 64;

/// Segments a memo that did not pay passes by before it tries again (see [`Memo::resting`]):
/// some tens of megabytes of a log.
const MEMO_REST_SEGMENTS: usize = 1 << 20;

impl Memo {
    /// The answer for `segment`, if it was matched before.
    pub fn get(&mut self, segment: &[u8]) -> Option<&Remembered> {
        if segment.len() > MEMO_SEGMENT_BYTES || self.resting > 0 {
            return None;
        }
        let known = self.known.get(segment);
        self.hits += usize::from(known.is_some());
        known
    }

    /// Remembers the answer for `segment` (a segment [`Memo::get`] did not know).
    pub fn remember(&mut self, segment: &[u8], rules: &[usize], failing: bool) {
        if self.resting > 0 {
            self.resting -= 1;
            return;
        }
        if segment.len() > MEMO_SEGMENT_BYTES {
            return;
        }
        let cost = segment.len() + std::mem::size_of_val(rules) + MEMO_ENTRY_OVERHEAD;
        if self.bytes + cost > MEMO_BYTES {
            if self.hits < self.taken {
                self.resting = MEMO_REST_SEGMENTS;
            }
            self.known.clear();
            self.bytes = 0;
            self.hits = 0;
            self.taken = 0;
            if self.resting > 0 {
                return;
            }
        }
        let answer = Remembered {
            rules: rules.into(),
            failing,
        };
        if self.known.insert(segment.into(), answer).is_none() {
            self.bytes += cost;
            self.taken += 1;
        }
    }

    /// Segments remembered.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.known.len()
    }
}

/// The patterns a segment matches: a bit each.
#[derive(Debug, Clone)]
pub(super) struct Matched {
    words: Vec<u64>,
    len: usize,
}

impl Matched {
    fn new(patterns: usize) -> Matched {
        Matched {
            words: vec![0; patterns.div_ceil(64)],
            len: 0,
        }
    }

    fn clear(&mut self) {
        self.words.fill(0);
        self.len = 0;
    }

    fn insert(&mut self, pattern: usize) {
        if let Some(word) = self.words.get_mut(pattern / 64) {
            let bit = 1 << (pattern % 64);
            if *word & bit == 0 {
                *word |= bit;
                self.len += 1;
            }
        }
    }

    /// How many patterns matched.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn contains(&self, pattern: usize) -> bool {
        self.words
            .get(pattern / 64)
            .is_some_and(|word| word & (1 << (pattern % 64)) != 0)
    }

    /// The patterns that matched, ascending.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(at, &word)| {
            let mut rest = word;
            std::iter::from_fn(move || {
                (rest != 0).then(|| {
                    let bit = rest.trailing_zeros() as usize;
                    rest &= rest - 1;
                    at * 64 + bit
                })
            })
        })
    }
}

/// Scratches no triager holds now, kept warm: a fresh cache starts with no DFA states, and
/// building them again for every log would cost a short log more than reading it.
static SPARE: Mutex<Vec<SetScratch>> = Mutex::new(Vec::new());

/// Most scratches [`SPARE`] keeps (each triager holds one per thread it uses).
const MAX_SPARE: usize = 16;

impl SetScratch {
    /// A warm scratch if one is spare, else a new one.
    pub fn take() -> SetScratch {
        let spare = SPARE.lock().ok().and_then(|mut spare| spare.pop());
        spare.unwrap_or_else(|| {
            let patterns = COMPILED.patterns();
            SetScratch {
                caches: (0..patterns).map(|_| None).collect(),
                candidates: Vec::new(),
                matched: Matched::new(patterns),
                memo: Memo::default(),
            }
        })
    }

    /// Keeps the scratch for the next triager.
    pub fn give_back(self) {
        if let Ok(mut spare) = SPARE.lock() {
            if spare.len() < MAX_SPARE {
                spare.push(self);
            }
        }
    }

    /// The patterns that match somewhere in `haystack`: each candidate its literals give,
    /// searched by its own lazy DFA.
    pub fn matches(&mut self, haystack: &[u8]) -> &Matched {
        self.matched.clear();
        COMPILED.candidates.of(haystack, &mut self.candidates);
        let input = Input::new(haystack).earliest(true);
        for &pattern in &self.candidates {
            let pattern = pattern as usize;
            let dfa = COMPILED.searcher(pattern);
            let Some(cache) = self.caches.get_mut(pattern) else {
                continue;
            };
            let cache = cache.get_or_insert_with(|| dfa.create_cache());
            // The search fails only on a quit byte or by giving up, and neither is configured
            // (see `searcher`).
            if dfa
                .try_search_fwd(cache, &input)
                .is_ok_and(|found| found.is_some())
            {
                self.matched.insert(pattern);
            }
        }
        &self.matched
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn every_pattern_compiles() {
        let compiled = &*COMPILED;
        for (index, rule) in RULES.iter().enumerate() {
            let own = compiled.regex(index).is_some();
            assert_eq!(
                own,
                matches!(rule.matcher, Matcher::Regex(_)),
                "{}",
                rule.id
            );
        }
        assert_eq!(
            compiled.pattern_rule.len() + compiled.diagnostic_rules.len(),
            RULES.len()
        );
        assert_eq!(compiled.pattern_rule.len(), compiled.hint);
        assert_eq!(compiled.hint + 1, compiled.failure);
        assert_eq!(compiled.patterns(), compiled.failure + 1);
        // Each pattern's lazy DFA is built the first time a line is its candidate: every one
        // must build (its cache bound above the automaton's minimum), or that line would panic.
        for index in 0..compiled.patterns() {
            let dfa = compiled.searcher(index);
            assert!(
                dfa.create_cache().memory_usage() <= PATTERN_CACHE_BYTES,
                "{index}"
            );
        }
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

    /// However many new segments it is given, a memo holds at most [`MEMO_BYTES`] of them and
    /// none longer than [`MEMO_SEGMENT_BYTES`]; filled up by segments it was never asked for
    /// again, it rests (neither answers nor keeps) for [`MEMO_REST_SEGMENTS`], then keeps again.
    #[test]
    fn the_memo_stays_bounded_and_rests_on_a_log_of_new_lines() {
        let mut memo = Memo::default();
        let mut most = 0;
        let mut n = 0;
        while memo.resting == 0 {
            let segment = format!("line {n} of a log that never repeats itself");
            assert!(memo.get(segment.as_bytes()).is_none());
            memo.remember(segment.as_bytes(), &[n], n % 2 == 0);
            most = most.max(memo.len());
            assert!(memo.bytes <= MEMO_BYTES, "{} bytes", memo.bytes);
            n += 1;
        }
        assert!(most > 10_000, "{most} entries");
        assert_eq!(memo.len(), 0);
        memo.remember(b"a line", &[1], true);
        assert!(memo.get(b"a line").is_none());
        for _ in 1..MEMO_REST_SEGMENTS {
            memo.remember(b"another line", &[], false);
        }
        assert_eq!(memo.resting, 0);
        memo.remember(b"a line", &[1], true);
        let known = memo.get(b"a line").map(|r| (r.rules.to_vec(), r.failing));
        assert_eq!(known, Some((vec![1], true)));
        let long = vec![b'x'; MEMO_SEGMENT_BYTES + 1];
        memo.remember(&long, &[1], true);
        assert!(memo.get(&long).is_none());
    }

    /// A memo whose segments are asked for again starts afresh when full, without resting.
    #[test]
    fn a_memo_that_pays_never_rests() {
        let mut memo = Memo::default();
        for n in 0..200_000 {
            let segment = format!("line {n} of a log that prints each line twice");
            memo.remember(segment.as_bytes(), &[n], false);
            assert!(memo.get(segment.as_bytes()).is_some());
            assert!(memo.bytes <= MEMO_BYTES, "{} bytes", memo.bytes);
        }
        assert_eq!(memo.resting, 0);
    }
}
