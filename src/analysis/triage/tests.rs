//! Triage against the recorded logs in `tests/data/triage/` and against the cases that trip up
//! naive log scanners: error words in passing test names, colour codes, CRLF, carriage-return
//! progress bars, huge logs and binary junk.

use super::rules::Check;
use super::*;
use proptest::prelude::*;
use std::collections::{BTreeSet, HashSet};
use std::io::Read as _;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/triage")
}

const PLAIN: TriageContext = TriageContext { timed_out: false };
const TIMED_OUT: TriageContext = TriageContext { timed_out: true };

fn class_named(name: &str) -> TriageClass {
    TriageClass::PRECEDENCE
        .into_iter()
        .find(|c| c.name() == name)
        .unwrap_or_else(|| panic!("unknown class {name}"))
}

fn line_list(text: &str) -> Vec<usize> {
    if text == "-" {
        return Vec::new();
    }
    text.split(',').map(|n| n.parse().unwrap()).collect()
}

/// One row of `expected.tsv`.
struct Expected {
    file: String,
    class: TriageClass,
    lines: Vec<usize>,
    timed_out_class: TriageClass,
    timed_out_lines: Vec<usize>,
}

fn expected() -> Vec<Expected> {
    let manifest = std::fs::read_to_string(data_dir().join("expected.tsv")).unwrap();
    manifest
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let cols: Vec<&str> = l.split('\t').collect();
            assert_eq!(cols.len(), 5, "bad manifest row: {l}");
            Expected {
                file: cols[0].to_string(),
                class: class_named(cols[1]),
                lines: line_list(cols[2]),
                timed_out_class: class_named(cols[3]),
                timed_out_lines: line_list(cols[4]),
            }
        })
        .collect()
}

fn classify_str(text: &str) -> Triage {
    classify(text, &PLAIN)
}

/// The rule that claimed the first matched line of a one-line log.
fn rule_of(line: &str) -> Option<String> {
    classify_str(line)
        .matches
        .first()
        .map(|m| m.rule_id.clone())
}

#[test]
fn every_recorded_log_is_classified_as_expected() {
    for row in expected() {
        let text = std::fs::read_to_string(data_dir().join(&row.file)).unwrap();
        let plain = classify(&text, &PLAIN);
        assert_eq!(
            (plain.class, &plain.lines),
            (row.class, &row.lines),
            "{}: {plain:#?}",
            row.file
        );
        assert!(!plain.reason.is_empty(), "{}", row.file);
        let timed = classify(&text, &TIMED_OUT);
        assert_eq!(
            (timed.class, &timed.lines),
            (row.timed_out_class, &row.timed_out_lines),
            "{} --timed-out: {timed:#?}",
            row.file
        );
        // The streaming reader sees the same lines as the in-memory classifier.
        let streamed = classify_file(&data_dir().join(&row.file), &PLAIN).unwrap();
        assert_eq!(streamed, plain, "{}", row.file);
    }
}

#[test]
fn every_recorded_log_is_in_the_manifest() {
    let listed: BTreeSet<String> = expected().into_iter().map(|e| e.file).collect();
    let present: BTreeSet<String> = std::fs::read_dir(data_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".log"))
        .collect();
    assert_eq!(listed, present);
    let classes: HashSet<TriageClass> = expected().iter().map(|e| e.class).collect();
    for class in TriageClass::PRECEDENCE {
        assert!(classes.contains(&class), "no recorded log shows {class}");
    }
}

/// One line for every rule with a class, and the rule that must claim it.
const SAMPLES: &[(&str, &str)] = &[
    ("tests/test_x.c:7:test_error_counter:PASS", "unity.pass"),
    (
        "tests/test_x.c:9:test_x:FAIL: Expected 1 Was 2",
        "unity.fail",
    ),
    ("tests/test_x.c:9:test_x:IGNORE: later", "unity.ignore"),
    ("3 Tests 0 Failures 0 Ignored ", "unity.summary_ok"),
    ("3 Tests 2 Failures 0 Ignored ", "unity.summary_fail"),
    (
        "Assertion failed at main.c:40: suite_test_x: (1 is false)",
        "ztest.assert",
    ),
    (
        " - FAIL - [suite.test_x] duration = 0.001 seconds",
        "ztest.summary_fail",
    ),
    (" FAIL - test_x in 0.001 seconds", "ztest.fail"),
    (" PASS - test_error_path in 0.001 seconds", "ztest.pass"),
    (
        "SUITE FAIL -  50.00% [suite]: pass = 1, fail = 1",
        "ztest.suite_fail",
    ),
    ("TESTSUITE suite succeeded", "ztest.suite_pass"),
    ("PROJECT EXECUTION FAILED", "ztest.project_failed"),
    ("PROJECT EXECUTION SUCCESSFUL", "ztest.project_ok"),
    (
        "/bin/sh: 1: exec: qemu-system-arm: not found",
        "shell.not_found",
    ),
    (
        "./flash.sh: 6: ./flash.sh: st-flash: not found",
        "shell.not_found",
    ),
    ("zsh: command not found: openocd", "shell.zsh_not_found"),
    (
        "make.py: error: Could not find executable for GCC_ARM.",
        "tool.executable_not_found",
    ),
    ("Could not find executable for ARMC6.", "tool.executable_not_found"),
    (
        "ERROR: run_cmd: Command '/opt/arm/bin/armclang' can't be found",
        "tool.executable_not_found",
    ),
    (
        "make[1]: arm-none-eabi-gcc: No such file or directory",
        "make.no_such_program",
    ),
    (
        "make: *** [Makefile:62: build/x.o] Error 127",
        "make.error_127",
    ),
    (
        "arm-none-eabi-gcc: fatal error: cannot execute 'cc1': execvp: No such file or directory",
        "gcc.cannot_execute",
    ),
    (
        "/usr/bin/env: 'python': No such file or directory",
        "env.no_interpreter",
    ),
    (
        "ModuleNotFoundError: No module named 'serial'",
        "python.no_module",
    ),
    (
        "A fatal error occurred: Failed to connect to ESP32: Timed out",
        "esptool.fatal",
    ),
    (
        "Error: unable to find a matching CMSIS-DAP device",
        "openocd.no_adapter",
    ),
    ("Error: No J-Link device found.", "openocd.no_adapter"),
    (
        "Error: init mode failed (unable to connect to the target)",
        "openocd.init_mode",
    ),
    ("Error: Invalid ACK (7) in DAP response", "openocd.target"),
    ("Error: failed erasing sectors 0 to 1", "openocd.flash"),
    ("** Verify Failed **", "openocd.program"),
    ("** OpenOCD init failed **", "openocd.init_failed"),
    (
        "Error: No connected probes were found.",
        "probe_rs.no_probe",
    ),
    (
        "       Error Failed to open the debug probe.",
        "probe_rs.open_failed",
    ),
    (
        "       Error failed to flash target/app",
        "probe_rs.flash_failed",
    ),
    (
        "    0: Failed to erase flash sector at address 0x08000000.",
        "probe_rs.cause",
    ),
    (
        "0004258 C Probe 0daa9c0d0daa9c0d01 not found [__main__]",
        "pyocd.no_probe",
    ),
    (
        "pyocd.core.exceptions.FlashFailure: flash init timed out",
        "pyocd.exception",
    ),
    (
        "0000490 E No target device available [load_cmd]",
        "pyocd.error",
    ),
    (
        "Connecting to J-Link via USB...FAILED: Cannot connect to J-Link.",
        "jlink.no_probe",
    ),
    ("Cannot connect to target.", "jlink.no_target"),
    (
        "Error while programming flash: Programming failed.",
        "jlink.program",
    ),
    (
        "2017-10-31T12:24:26 WARN src\\usb.c: Couldn't find any ST-Link/V2 devices",
        "stflash.no_stlink",
    ),
    (
        "2019-03-29T00:43:47 ERROR flash_loader.c: flash loader run error",
        "stflash.program",
    ),
    ("stlink_fwrite_flash() == -1", "stflash.write_failed"),
    ("Load failed", "gdb.load_failed"),
    (
        "qemu-system-arm: terminating on signal 15 from pid 812 (timeout)",
        "qemu.terminated_by_runner",
    ),
    (
        "qemu-system-arm: terminating on signal 15",
        "qemu.terminated",
    ),
    (
        "qemu-system-arm: Trying to execute code outside RAM or ROM at 0x00000000",
        "qemu.outside_ram",
    ),
    (
        "qemu-system-arm: -kernel fw.elf: No such file",
        "qemu.start_error",
    ),
    (
        "cc1: fatal error: build/x.d: No space left on device",
        "host.no_space",
    ),
    (
        "touch: cannot touch 'build/x': Read-only file system",
        "host.read_only",
    ),
    (
        "arm-none-eabi-gcc: fatal error: Killed signal terminated program cc1",
        "host.out_of_memory",
    ),
    (
        "thread 'main' panicked at probe-rs/src/probe/cmsisdap/mod.rs:918:16:",
        "host.tool_panicked",
    ),
    ("Segmentation fault (core dumped)", "shell.killed"),
    ("localhost:3333: Connection refused.", "gdb.connection"),
    ("Remote connection closed", "gdb.remote_lost"),
    (
        "ConnectionRefusedError: [Errno 111] Connection refused",
        "net.refused",
    ),
    (
        "could not open port /dev/ttyUSB0: [Errno 2] No such file or directory",
        "serial.open",
    ),
    (
        "picocom: cannot open /dev/ttyACM0: Permission denied: '/dev/ttyACM0'",
        "serial.permission",
    ),
    (
        "minicom: cannot open /dev/ttyUSB0: Device or resource busy",
        "serial.busy",
    ),
    (
        "read failed: [Errno 5] Input/output error",
        "serial.vanished",
    ),
    (
        "src/crc.c:42:20: internal compiler error: Segmentation fault",
        "gcc.internal_error",
    ),
    ("collect2: error: ld returned 1 exit status", "ld.collect2"),
    (
        "src/crc.c:12:5: error: expected ';' before '}' token",
        "gcc.error",
    ),
    (
        "src/startup.s:12: Error: bad instruction `movx r0,#1'",
        "as.error",
    ),
    (
        "make: *** No rule to make target 'build/x.elf'.  Stop.",
        "make.no_rule",
    ),
    (
        "Makefile:18: *** Unknown BOARD 'bench'; choose one of: mps2-an385.  Stop.",
        "make.makefile",
    ),
    (
        "main.c:(.text.main+0x8): undefined reference to `foo'",
        "ld.undefined_reference",
    ),
    (
        "b.c:(.text+0x0): multiple definition of `helper'; a.o:(.text+0x0): first defined here",
        "ld.multiple_definition",
    ),
    (
        "arm-none-eabi-ld: region `RAM' overflowed by 304 bytes",
        "ld.region_overflow",
    ),
    ("arm-none-eabi-ld: cannot find -lfoo", "ld.missing_library"),
    (
        r"    C:\Program Files (x86)\GNU Tools ARM Embedded\9 2019-q4-major\bin\arm-none-eabi-ld.exe: cannot find -lgcc",
        "ld.missing_library",
    ),
    (
        "E: Page fault at address 0xd25ff8 (error code 0x3)",
        "zephyr.x86_page_fault",
    ),
    (
        "***** CPU Page Fault (error code 0x00000002)",
        "zephyr.x86_page_fault",
    ),
    (
        "E: Access violation: user thread not allowed to read",
        "zephyr.x86_page_fault",
    ),
    ("TEST RESULT: FAILED", "zephyr.bench_case_failed"),
    ("TC 12 - FAILED", "generic.test_failed"),
    (
        "INFO    - 2/2 qemu_x86                  tests/subsys/logging/log_syst/logging.log_syst.mipi_syst FAILED Console Failed (qemu 2.096s)",
        "twister.failed_reason",
    ),
    (
        "DEBUG   - run status: qemu_x86/tests/subsys/logging/log_syst/logging.log_syst.mipi_syst failed",
        "twister.failed_reason",
    ),
    (
        "rv32emu: malloc.c:2617: sysmalloc: Assertion `(old_top == initial_top (av) && old_size == 0)' failed.",
        "emulator.host_assert",
    ),
    (
        "emulator-rocketchip-DefaultConfig: ../fesvr/dtm.cc:69: uint32_t dtm_t::run_program(const uint32_t*, size_t, size_t): Assertion `n <= ram_words()' failed.",
        "emulator.host_assert",
    ),
    ("Nordic system firmware failure assertion.", "circuitpython.nordic_assert"),
    ("line 129: kconfig-tweak: command not found", "shell.bare_not_found"),
    (
        r"Error: Q0147E: Failed to create Directory .\BUILD\REALTEK_RTL8195AM\ARM\app.bin\IMAGE2_TABLE: File exists",
        "arm_tools.error",
    ),
    ("Error: A1167E: Invalid line start", "arm_tools.error"),
    (
        "ASSERT(!foundPrototype) FAILED AT src/jsparse.c:2690",
        "espruino.assert",
    ),
    ("  Results:     0 PASS, 1 FAIL, 0 SKIP", "kernelci.results_failed"),
    ("Test case spi_loopback: FAIL", "generic.test_failed"),
    ("  Test: daplink_test: Failure", "daplink.test_failed"),
    (
        "  APP=lpc11u35_blueninja_if BL=<None> Board=BlueNinja Target=BlueNinja: Fail",
        "daplink.test_failed",
    ),
    ("One or more tests have failed", "daplink.test_failed"),
    (
        "../lib/python3.5/site-packages/labgrid/target.py:35: OSError",
        "pytest.harness_raised",
    ),
    (
        "/usr/lib/python3/dist-packages/twisterlib/handlers.py:412: serial.serialutil.SerialException",
        "pytest.harness_raised",
    ),
    (
        "CORTEX_M4_0: Error connecting to the target: (Error -1063 @ 0x0) Device ID is not recognized or is not supported by driver.",
        "ti_debug.error",
    ),
    (
        "Cortex_M4_0: File Loader: Memory write failed: Timed out waiting for target flashloader to execute command.",
        "ti_debug.error",
    ),
    ("Image: BUILD/K64F/GCC_ARM/blinky.bin", "build.succeeded"),
    (
        "arm-none-eabi-ld: cannot open linker script file bad.ld: No such file or directory",
        "ld.error",
    ),
    (
        "ASSERTION FAIL [x > 0] @ WEST_TOPDIR/app/src/main.c:12",
        "zephyr.assert",
    ),
    (
        "/idf/components/freertos/event_groups.c:350 (xEventGroupWaitBits)- assert failed!",
        "esp_idf.assert",
    ),
    (
        "configASSERT( pxQueue ) failed at queue.c:812",
        "freertos.assert",
    ),
    (
        "assertion \"len <= 64\" failed: file \"src/ringbuf.c\", line 42, function: ringbuf_put",
        "libc.assert",
    ),
    (
        "fw: src/ringbuf.c:42: ringbuf_put: Assertion `len <= 64' failed.",
        "libc.assert",
    ),
    (
        "[00:00:02.586,456] <err> os: ***** USAGE FAULT *****",
        "zephyr.fault",
    ),
    (
        ">>> ZEPHYR FATAL ERROR 2: Stack overflow on CPU 0",
        "zephyr.fatal",
    ),
    (
        "Guru Meditation Error: Core  1 panic'ed (InstrFetchProhibited). Exception was unhandled.",
        "esp_idf.guru_meditation",
    ),
    (
        "abort() was called at PC 0x4008554b on core 1",
        "esp_idf.abort",
    ),
    (
        "***ERROR*** A stack overflow in task main has been detected.",
        "esp_idf.stack_overflow",
    ),
    (
        "E (5329) task_wdt: Task watchdog got triggered.",
        "esp_idf.task_watchdog",
    ),
    (
        "qemu: fatal: Lockup: can't escalate 3 to HardFault (current priority -1)",
        "qemu.lockup",
    ),
    (
        "qemu: fatal: Trying to execute code outside RAM or ROM at 0x00000000",
        "qemu.fatal",
    ),
    (
        "Taking exception 4 [Data Abort] on CPU 0",
        "qemu.fault_entry",
    ),
    (
        "...taking pending nonsecure exception 3",
        "qemu.fault_vector",
    ),
    ("[HardFault] at pc=0x0800123c", "cortex_m.fault_banner"),
    ("Bus fault detected!", "cortex_m.fault_banner"),
    ("  CFSR = 0x00008200", "cortex_m.fault_status"),
    ("Stack overflow in task sensor", "freertos.stack_overflow"),
    ("ERROR panicked at src/main.rs:12:5:", "rust.panic"),    (
        "TEST(Game, Gutter)test/game.c:22:TEST(Game, Gutter):FAIL: Expected 1 Was 0",
        "unity.fixture_fail",
    ),
    (
        "INFO    - 5 of 6 test configurations passed (100.00%), 0 failed, 0 errored, 1 skipped with 0 warnings in 47.17 seconds",
        "twister.summary_pass",
    ),
    (
        "INFO    - 3 of 4 executed test configurations passed (75.00%), 1 built (not run), 1 failed, 0 errored",
        "twister.summary_fail",
    ),
    (
        "10 of 10 tests passed with 0 warnings in 78 seconds",
        "twister.tests_passed",
    ),
    (
        "INFO    - Total complete:    1/   1  100%  skipped:    0, failed:    1, error:    0",
        "twister.total_failed",
    ),
    (
        "ERROR   - nucleo_h743zi   app/app.default FAILED: Build failure",
        "twister.build_failure",
    ),
    (
        "DEBUG - Timed out while monitoring serial output on nucleo_l073rz",
        "twister.timeout",
    ),
    (
        "qemu_cortex_a9   tests/shell/shell.history   FAILED : Unknown",
        "twister.failed",
    ),
    (
        "INFO    - 1/1 frdm_k64f   tests/kernel/queue/kernel.queue   PASSED (device)",
        "twister.passed",
    ),
    ("[1552566578.75][HTST][INF] {{result;timeout}}", "greentea.timeout"),
    (
        "mbedgt: mbed-host-test-runner: stopped and returned 'SYNC_FAILED'",
        "greentea.sync_failed",
    ),
    ("mbedgt: test case results: 1 FAIL / 3 OK", "greentea.fail"),
    ("<greentea test suite>:0::PASS", "greentea.pass"),
    ("FAILED:  1", "ceedling.failed"),
    ("FAILED:    0", "ceedling.passed"),
    ("Unit test failures.", "ceedling.test_failures"),
    (
        "ERROR: Internal sanity check for test fixture 'test_x.out' finds that Unity's final test count (2) does not match Ceedling's summation of all test cases (1).",
        "ceedling.test_crashed",
    ),
    (
        "ERROR: Found no file 'sensor.h' in search paths.",
        "ceedling.no_file",
    ),
    ("ERROR: Shell command failed.", "ceedling.shell_failed"),
    ("[  FAILED  ] 2 tests, listed below:", "gtest.failed"),
    ("[  FAILED  ] 0 tests.", "gtest.passed"),
    (
        "============================== 1 failed in 1.66s ==============================",
        "pytest.summary_fail",
    ),
    (
        "========================= 3 passed, 1 skipped in 12.01s =========================",
        "pytest.summary_pass",
    ),
    ("=================== FAILURES ===================", "pytest.failures"),
    (
        "FAILED test_ats.py::test_echo_tcp[COM4] - AssertionError: assert b'' == b'OK'",
        "pytest.failed",
    ),
    ("++++++++++++++++ Timeout ++++++++++++++++", "pytest.timeout"),
    (
        "E   pexpect.exceptions.TIMEOUT: Not found \"ready\"",
        "pexpect.timeout",
    ),
    ("ostest_main: Exiting with status -1", "nuttx.ostest_fail"),
    ("ostest_main: Exiting with status 0", "nuttx.ostest_pass"),
    ("OK: No errors - tick count 10025", "freertos.demo_ok"),
    ("PASS : 5023 (31)", "freertos.demo_pass"),
    (
        "xArePollingQueuesStillRunning() returned false : 5021 (101)",
        "freertos.demo_check_failed",
    ),
    ("Error in RegTest 1 : 0x0000000a", "freertos.regtest_error"),
    (
        "make[1]: arm-none-eabi-gcc: Command not found",
        "make.command_not_found",
    ),
    (
        "'ninja' is not recognized as an internal or external command,",
        "cmd.not_recognized",
    ),
    (
        "FATAL ERROR: JLink.exe is not installed or cannot be found",
        "west.not_installed",
    ),
    (
        "collect2.exe: fatal error: cannot find 'ld'",
        "gcc.cannot_find_tool",
    ),
    (
        "  Compiler 'arm-none-eabi-gcc' not found, you can specify search path with",
        "cmake.tool_not_found",
    ),
    (
        "FileNotFoundError: [Errno 2] No such file or directory: '/opt/SEGGER/JLink/libjlinkarm.so'",
        "python.missing_library",
    ),
    (
        "A fatal error occurred: Timed out waiting for packet header",
        "esptool.fatal",
    ),
    (
        "TRACE +0.116 Timed out waiting for packet header",
        "esptool.no_reply",
    ),
    (
        "esptool.FatalError: Failed to connect to ESP8266: Time out waiting for packet header",
        "esptool.exception",
    ),
    (
        "No accessible RP2040 devices in BOOTSEL mode were found.",
        "picotool.no_device",
    ),
    (
        "Error: Please specify `upload_port` for environment or use global `--upload-port` option.",
        "platformio.upload",
    ),
    ("make: *** [flash] Error 1", "make.flash_target"),
    ("  \"error\": \"Probe not found\"", "probe_rs.report"),
    (
        "  \"error\": \"Connecting to the chip was unsuccessful.\\n\\nCaused by:\"",
        "probe_rs.report",
    ),
    ("Error: An ARM specific error occurred.", "probe_rs.flash_failed"),
    ("cc1: all warnings being treated as errors", "gcc.werror"),
    ("2022-06-12 18:43:04,604 # FAILED ASSERTION.", "riot.failed_assertion"),
    (
        "[00:00:00.002,000] <err> os:  mcause: 1, Instruction Access fault",
        "riscv.mcause",
    ),
    (
        "  at Antmicro.Renode.Peripherals.CPU.TranslationCPU.Pause () [0x0001f] in <65>:0",
        "renode.exception",
    ),
    (
        "Error: Detected unknown package 'atmelavr'",
        "platformio.install",
    ),
    (
        "Guru Meditation Error of type LoadProhibited occurred on core  0. Exception was unhandled.",
        "esp_idf.guru_meditation",
    ),
    ("Error: stm32f1x.cpu -- clearing lockup after double fault", "openocd.lockup"),
    (
        "ninja: error: 'libcoexist.a', needed by 'app.elf', missing and no known rule to make it",
        "ninja.error",
    ),
    (
        "cavstool_client.py: error: unrecognized arguments: --port-log",
        "python.usage_error",
    ),
    (
        "[ EMERG] up_assert: Assertion failed at file:armv8-m/arm_usagefault.c line: 113 task: init",
        "nuttx.fault_panic",
    ),
    (
        "0011426:ERROR:board:link exception during target disconnect:",
        "pyocd.legacy_error",
    ),
    (
        "2019-09-19T14:20:12 WARN common.c: Invalid flash type, please check device declaration",
        "stflash.bad_target",
    ),
    (
        "Warn : no flash bank found for address 0x10000000",
        "openocd.no_flash_bank",
    ),
    (
        "FATAL ERROR: command exited with status 1: /opt/SEGGER/JLink/JLinkExe -nogui 1 -if swd",
        "west.flash_failed",
    ),
    (
        "FATAL ERROR: command exited with status 1: /usr/bin/cmake -B build -GNinja",
        "west.command_failed",
    ),
    ("-- west flash: rebuilding", "flash.context"),
    (
        "  File \"/usr/lib/python3/site-packages/pyocd/board/board.py\", line 96, in uninit",
        "python.flasher_frame",
    ),
    ("Traceback (most recent call last):", "python.traceback"),
    (
        "--- End of stack trace from previous location where exception was thrown ---",
        "dotnet.stack_trace",
    ),
    (
        "step = Step(title='read', status=done, exception=Timeout of 9.97 seconds exceeded or connection closed by peer)",
        "labgrid.timeout",
    ),
    (
        "labgrid-client: error: Not all resources are available: {NetworkSerialPort()}",
        "labgrid.resources",
    ),
    (
        "pexpect.exceptions.EOF: End Of File (EOF). Exception style platform.",
        "pexpect.eof",
    ),
    (
        "Error: Could not install 'toolchain-xtensa32' with version requirements '~1.50200.2'",
        "platformio.install",
    ),
    ("Brownout detector was triggered", "esp.brownout"),
    (
        "/usr/bin/sh: -c: line 2: syntax error: unexpected end of file",
        "shell.recipe_syntax_error",
    ),
    (
        "/bin/sh: -c: line 0: unexpected EOF while looking for matching `\"'",
        "shell.recipe_syntax_error",
    ),
    (
        "@rickkas7 it tells me “Error writing firmware…dfu-util is not installed”",
        "tool.named_not_installed",
    ),
    (
        "No DFU capable USB device available”",
        "dfu_util.old_error",
    ),
    (
        "_dfu-util: Last page at 0x080a14d7 is not writeable",
        "flasher.no_target",
    ),
    (
        "    raise errors.JLinkFlashException(bytes_flashed)",
        "pylink.flash_exception",
    ),
    ("1%1:15>Fail Bulk(W):LIBUSB_ERROR_TIMEOUT", "uuu.fail"),
    (
        "Attaching to Remote target failed with: T05",
        "bmp.attach_failed",
    ),
    ("* /_ / MSP Flasher v1.3.15 *", "msp430_flasher.banner"),
    (
        "avrdude: Version 6.0.1, compiled on Apr 15 2015 at 19:59:58",
        "avrdude.banner",
    ),
    (
        "VERIFY FAILED at 0x00000086! Expected=0x40, Read=0xc0, failed byte count from 0x00000000-0x00ffffff: 0x2",
        "flashrom.verify_failed",
    ),
    (
        "Updating application: 17152 of 17152 bytes transferred...OK",
        "flash.closing_line",
    ),
    ("QEMU exit(0)", "qemu.semihosting_exit_ok"),
    (
        "invalid instruction : pc = [e01e], ir = [0013]",
        "simulator.invalid_instruction",
    ),
    ("Error in sys.excepthook:", "python.excepthook_failed"),
    (
        "make: *** [../rules.mk:159: awesomesauce.flash] Error 1",
        "make.flash_target_error",
    ),
    ("make[2]: *** [program-dfu] Error 74", "make.flash_target_error"),
    (
        "Error: connect ETIMEDOUT 52.216.64.224:443",
        "node.network_error",
    ),
    ("SHELL ERROR: Couldn't find a prompt!", "runner.no_prompt"),
    (
        "  No Microchip XC16 compiler was found.  Please provide the path to an XC16",
        "toolchain.not_found",
    ),
    ("Upload tool 'avrdude' not found.", "toolchain.not_found"),
    (
        r#"gprbuild: unable to locate archive builder "aarch64-linux-gnu-ar""#,
        "toolchain.not_found",
    ),
    (
        "RuntimeError: Writing Status Register failed: wrote 0x0000, got 0x0001",
        "flasher.target_unresponsive",
    ),
    (
        "2026/02/28 13:11:16: Failed reading ESC 1",
        "flasher.target_unresponsive",
    ),
    (
        "Error: Hart 0 didn't run coming out of reset in 1s; dmstatus=0x4303a2",
        "flasher.target_unresponsive",
    ),
    (
        "Caused by: processing.app.SerialException: Error touching serial port '/dev/cu.usbmodem1411'.",
        "arduino.touch_port_failed",
    ),
    (
        "make[1]: *** [/d/sdk/make_scripts_riscv/component_wrapper.mk:313：src/host/gatt.o] 错误 1",
        "make.error",
    ),
    (
        "Une erreur est survenue lors du transfert du croquis",
        "arduino.upload_failed",
    ),
    (
        "    test 'mbed-test-functionpointer' ............................................. IOERR_SERIAL",
        "greentea.ioerr",
    ),
    ("make: *** [flash] 错误 1", "make.flash_target"),
    (
        "make: *** [src/avr/Makefile:34: flash] Fehler 1",
        "make.flash_target",
    ),
    ("make[2]: *** [all] Erreur 2", "make.error"),
    ("make: *** [all] エラー 2", "make.error"),
    ("make: *** [tools/gen] 错误 127", "make.error_127"),
    ("fet: identify failed", "mspdebug.fet_failed"),
    (
        "tilib: MSP430_Erase: Could not communicate with FET (error = 35)",
        "mspdebug.fet_failed",
    ),
    (
        "More than one DFU capable USB device found! Try --list and specify the serial number",
        "dfu_util.many_devices",
    ),
    (
        "Couldn't find a Board on the selected port. Check that you have the correct port selected.",
        "bossac.no_board",
    ),
    (
        "Error: cpu0: esp32_fetch_all_regs (line 227): DSR (00000088) indicates DIR instruction generated an overrun!",
        "openocd.xtensa_dir_failed",
    ),
    (
        "Error: cpu0: xtensa_write_memory (line 761): DSR (8080CC13) indicates DIR instruction generated an exception!",
        "openocd.xtensa_dir_failed",
    ),
    ("avrdude: Yikes!  Invalid device signature.", "avrdude.error"),
    (
        "#   Failed test 'Test IPMI Lock/Unlock Functionality.8'",
        "tap.failed_test",
    ),
    ("ERROR: test.c:123 Failure!", "cmockery.failure"),
    (
        "cep_tb.cpuId[0].driver C_ERROR: Time out while waiting for Pass/Fail",
        "testbench.verdict_timeout",
    ),
    (
        "EXCEPTION: ArgumentError ==> wrong number of arguments (given 2, expected 1)",
        "ceedling.exception",
    ),
    (
        "  Log4cxx_INCLUDE_DIR (missing: Log4cxx_LIBRARY)",
        "cmake.package_parts_missing",
    ),
    (
        "./mkboot: line 145: /opt/tools/mkbootimg_tools/mkbootfs: No such file or directory",
        "script.program_not_found",
    ),
    (
        "./mkboot: 行 101: /opt/mkbootimg_tools/mkbootimg: 没有那个文件或目录",
        "script.program_not_found",
    ),
    (
        "'/bin/sh: 1: sshpass: not found' should be empty.",
        "robot.shell_not_found",
    ),
    (
        "Package 'micro_ros_agent' specified with --packages-up-to was not found",
        "colcon.package_not_found",
    ),
    (
        r#"  File "../../../../scripts/imgtool.py", line 148, in <module>"#,
        "imgtool.traceback",
    ),
    (
        "Multiple definition of _handle_get_descriptor",
        "aslink.multiple_definition",
    ),
    (
        r#"  The C compiler "/usr/bin/arm-none-eabi-gcc" is not able to compile a simple"#,
        "cmake.compiler_check_failed",
    ),
    ("[   73.066841857,0] Aborting!", "skiboot.abort"),
    (
        "  9.38946|System shutting down with error status 0x90000289",
        "hostboot.shutdown_error",
    ),
    ("Operator new[] out of memory", "mbed.out_of_memory"),
    ("(HOST) INFO  device halted without error", "probe_run.halted"),
    (
        "/usr/src/debug/optee-test/3.20.0-r0/git/host/xtest/regression_4000.c:333: ret_orig has an unexpected value: 0x1 = TEEC_ORIGIN_API, expected 0x4 = TEEC_ORIGIN_TRUSTED_APP",
        "xtest.unexpected_value",
    ),
    ("  [ All tests PASS ]", "mbedtls.selftest_passed"),
    ("  [ 2 tests FAIL ]", "mbedtls.selftest_failed"),
    (
        "## Error (read/write) @ 0x81EBF21C: expected 0x0072FC88, found 0x0072FC87)",
        "uboot.mtest_error",
    ),
    (
        "thread 'tokio-runtime-worker' (259512563) panicked at /Users/me/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/probe-rs-0.30.0/src/probe/stlink/usb_interface.rs:124:60:",
        "flasher.tool_panicked",
    ),
    (
        "thread 'main' (4242) panicked at src/main.rs:10:5:",
        "host.tool_panicked",
    ),
    (
        "error: failed to run custom build command for `openthread-sys v0.1.0 (https://github.com/sysgrok/openthread.git?branch=next#df4585e1)`",
        "cargo.build_script_failed",
    ),
    (
        "#error C++ versions less than C++14 are not supported.",
        "cc.error_directive",
    ),
    (
        "Cannot import module \"esp_idf_monitor\". This usually means that \"idf.py\" was not spawned within an ESP-IDF shell environment or the python virtual environment used by \"idf.py\" is corrupted.",
        "esp_idf.not_in_environment",
    ),
    (
        "InvalidJSONFile: Could not load broken JSON: /pio/core/packages/framework-cmsis/.piopm",
        "platformio.install",
    ),
    ("Bootloader not active", "tinyfpgab.no_bootloader"),
    (
        "The Firmware update failed: Unexpected response {\"dir\":1,\"cmd\":3}",
        "espruino.update_failed",
    ),
    (
        "! System firmware update successfully completed!",
        "particle.update_done",
    ),
    ("Compile succeeded.", "particle.compile_done"),
    (
        "../target/riscv/esp_cpu.c:81:esp_cpu_riscv_to_cpu: Object 0x55555672ee20 is not an instance of type espressif-riscv-cpu",
        "qemu.object_cast",
    ),
    (
        "Error: DriverCall 'start' failed with gRPC UNKNOWN: [Errno 98] address already in use",
        "jumpstarter.error",
    ),
    ("Error: Connection to exporter lost", "jumpstarter.error"),
    (
        "panic: runtime error at 0x00027c4d: alloc in interrupt",
        "tinygo.runtime_panic",
    ),
    ("FAILURE", "lmic.failure"),
    (
        "A fatal error occurred: idf.py build failed",
        "esp_at.build_failed",
    ),
    (
        "expected_output_data[i] (1.8984370*2^7) near output_data[i] (1.3906247*2^7) failed at tensorflow/lite/micro/kernels/conv_test.cc:106",
        "tflm.expect_near_failed",
    ),
    (
        "* Test test_TC_SC_7_1 failed for the following reason:",
        "matter.test_failed",
    ),
    ("Verify successful", "bossac.verified"),
    (
        "Beim Hochladen des Sketches ist ein Fehler aufgetreten",
        "arduino.upload_failed",
    ),
    (
        "Thread 2 \"system_tests\" received signal SIGSEGV, Segmentation fault.",
        "gdb.fatal_signal",
    ),
    (
        "p... FAILED at 0x00002005! ERASE FAILED! FAILED! Your flash chip is in an unknown state. Please report this",
        "flashrom.verify_failed",
    ),
    ("error: espcomm_open failed\"", "esptool_ck.failed"),
    (
        "Fatal error: A3900U: Unrecognized option '--target=armv7em-arm-none-eabi'.",
        "arm_tools.error",
    ),
    (
        "UPDI programming for Arduino using a serial adapter",
        "serialupdi.banner",
    ),
    (
        "Use \"picotool help <cmd>\" for more info",
        "picotool.usage",
    ),
    (
        "Could not open script file 'C:\\Users\\me\\AppData\\Local\\Temp\\tmp_r1nnte2.jlink'",
        "jlink.script_missing",
    ),
    (
        "*WARNING* Unhandled user exception: LoadStoreAlignmentCause (0x000130da)( Xtensa ISS )",
        "xtensa_iss.exception",
    ),
    (
        "[   50.992745] sof-audio-pci 0000:00:1f.3: error: ipc timed out for 0x50020000 size 108",
        "sof.ipc_timeout",
    ),
    (
        "/opt/gcc-arm/bin/../arm-none-eabi/bin/ld:platform_user_ram.ld:1: syntax error",
        "ld.script_syntax",
    ),
    ("Undefined symbols for architecture x86_64:", "ld64.undefined_symbols"),
    (
        "L6031U: Could not open scatter description file $(RelLinkerScriptPath): No such file or directory",
        "armlink.error",
    ),
    (
        "[cmake]     arm-none-eabi-gcc-9.2.1: error: unrecognized command line option '-arch'; did you mean '-march='?",
        "gcc.unrecognized_option",
    ),
    (
        "make[1]: ~/moddable/build/bin/lin/debug/xsc: Invalid argument",
        "make.exec_failed",
    ),
    ("    python3: No such file or directory", "python.interpreter_missing"),
    ("Running flasher @ 460800...", "mgos.flasher"),
    (
        "20:24:14:358 >> Fail to convert data hex file to bin",
        "wch.flash_failed",
    ),
    (
        "Response status = 10004 (0x2714) No response packet from target device.",
        "blhost.status",
    ),
    (
        "[ERROR] : SWUPDATE failed [1] Installation failed !",
        "swupdate.failed",
    ),
    (
        "my_assert_func (file=file@entry=0x1000acbc \"sd_card.c\", line=line@entry=789, func=func@entry=0x1000b198 <__func__.2> \"sd_init_card\")",
        "gdb.assert_frame",
    ),
    (
        "mutex tester thread 0x20000888 starting up, will go for busfault: exception frame at 0x20000be8",
        "lk.exception_frame",
    ),
    ("ERROR:cc2650-launchpad:Tests failed: 11", "riot.tests_failed"),
    (
        "- [tests/bloom_bytes](tests/bloom_bytes/test.failed) [hardfaults]",
        "riot.test_failed_list",
    ),
    (
        "      ***One or more tests have failed... ***",
        "arm_acs.failed",
    ),
    ("Rules passed: true", "arduino_lint.passed"),
    ("curl: (6) Couldn't resolve host 'github.com'", "net.unreachable"),
    (
        "Error: The device does not recognize the command. (os error 22)",
        "serialport.bad_command",
    ),
    (
        "Not enough memory; see https://support.arduino.cc/hc/en-us/articles/360013825179 for tips on reducing your footprint.",
        "arduino.not_enough_memory",
    ),
    (
        "configure: error: Wrong C compiler found; check the PATH!",
        "configure.wrong_compiler",
    ),
    (
        "dumped 131072 bytes in 1.149703s (111.333 KiB/s)",
        "openocd.dump_done",
    ),
    (
        "Code: Select allException (0): epc1=0x90001adf epc2=0x00000000 epc3=0x00000000",
        "esp8266.exception",
    ),
    (
        "Finishing test execution with outcome PASS.",
        "openhtf.outcome_pass",
    ),
    (
        "Finishing test execution with outcome FAIL.",
        "openhtf.outcome_fail",
    ),
    ("./test_filesystem.sh: FAIL", "script_tests.fail"),
    ("Sending bytes to proxmark failed          ", "proxmark.send_failed"),
    (
        "sport_open: System cannot find the file specified.",
        "mspdebug.sport_open",
    ),
    ("Unable to build drive list", "uf2conv.no_drive"),
    ("[INFO] Trying to Enter the ISP Mode... ", "kflash.isp"),
    ("[INFO] Greeting Message Detected, Start Downloading ISP ", "kflash.isp"),
    (
        "Verifying Flash:      [==============================]  100%",
        "flash.closing_line",
    ),
    (
        "[2026-07-09 10:51:03.860][I] [/dev/ttyUSB0]All images download done",
        "flash.closing_line",
    ),
    (
        "Error: Failed reading avrdude version information.",
        "ravedude.no_avrdude",
    ),
    ("index out of range", "python.bare_index_error"),
    (
        "Error: Downloaded GCC MD5 doesn't match expected value: ae07 != f3d1",
        "download.checksum_mismatch",
    ),
    (
        "Error: lo register required -- `sub ip,#1'",
        "as.operand_error",
    ),
    (
        r#"gprbuild: "cf_ada_spark.gpr" processing failed"#,
        "gprbuild.failed",
    ),
    (
        "github.com/tinygo-org/tinygo/builder.loadProgramSize({0xc001770fc0, 0xc001b89ce8}, 0xc002d61860)",
        "tinygo.compiler_panic",
    ),
    (
        "Backtrace: 0x400f1501:0x3ffd11e0 0x400f15fb:0x3ffd1200",
        "esp.bare_backtrace",
    ),
    (
        "*** ERROR L103: EXTERNAL ATTRIBUT DO NOT MATCH PUBLIC SYMBOL: ?_PRINTF?BYTE MODULE: C51FPL.LIB (PRINTF)",
        "keil.bl51_error",
    ),
    (
        "2024-04-29T15:14:26 marked as broken: start failed",
        "labgrid.resource_broken",
    ),
    (
        "Teensy did not respond to a USB-based request to enter program mode.",
        "teensy.no_program_mode",
    ),
    (
        "ERROR Error sending data: [Errno 32] Broken pipe",
        "esphome.upload_failed",
    ),
    ("> Bootloader and code overlap.", "dfu_programmer.bootloader_overlap"),
    (
        "Programming BIN: |=============================================| 100.0% 10kiB/s",
        "flash.closing_line",
    ),
    (
        "PGM Memory Verification finished successfully.",
        "flash.closing_line",
    ),
    ("23:06:13 | 烧录完成 (耗时 33.3 秒)", "flasher.done_chinese"),
    ("core dump: fault load", "kendryte.core_dump"),
    (
        "*** PanicInfo { payload: Any { .. }, message: Some(freeing a memory area we don't know of), location: Location { file: \"src/compat/malloc.rs\", line: 94, col: 13 } }",
        "rust.panic_info",
    ),
    (
        "          ERROR(cortex-m-rt): The .text section must be placed inside the FLASH memory.",
        "cortex_m_rt.layout",
    ),
    (
        "  CMAKE_C_COMPILER is not in kendryte-toolchain dist/bin folder.",
        "cmake.compiler_not_in_toolchain",
    ),
    (
        r#"time="2020-10-28T17:02:54+05:30" level=error msg=panic: runtime error: invalid memory address or nil pointer dereference executionId=4f62"#,
        "host.go_panic_logged",
    ),
    (
        "Memory write error, use debug for more info.",
        "dfu_programmer.validate_failed",
    ),
    (
        "test_example/test_example.py::test_hello FAILED                          [  0%]",
        "pytest.verbose_failed",
    ),
    (
        " TIMEOUT | NUCLEO_F746ZG | ARM | MBED_11 | Ticker Int | 30.38 | 15 | 0/1 |",
        "mbed.singletest_table_timeout",
    ),
    (
        " FAIL | K64F | GCC_ARM | MBED_A1 | Basic | 2.11 | 10 | 0/1 |",
        "mbed.singletest_table_failed",
    ),
    (
        "serial.serialutil.SerialException: Attempting to use a port that is not open",
        "serial.vanished",
    ),
    (
        r#"00:17:54 RSL: stat/tasmota_A06CF6/STATUS12 = {"StatusSTK":{"Exception":29,"Reason":"Exception","EPC":["4000df64"]}}"#,
        "tasmota.restart_exception",
    ),
    (r#"    "Reason":"Exception","#, "tasmota.restart_exception"),
    (
        "rst:0xf (BROWNOUT_RST),boot:0x8 (SPI_FAST_FLASH_BOOT)",
        "esp.brownout",
    ),
    (
        "dfu-util: Last page at 0x90061c6f is not writeable",
        "flasher.no_target",
    ),
    (
        "qemu-system-xtensa is not in PATH or access is denied",
        "script.tool_not_in_path",
    ),
    (
        "Cannot use 'python', Python 2.6 or later is required.",
        "python.version_required",
    ),
    (
        "dyld[3956]: Library not loaded: '/usr/local/opt/libusb/lib/libusb-1.0.0.dylib'",
        "loader.missing_library",
    ),
    (
        r#"src/main/tools/process-wrapper-legacy.cc:80: "execvp(fusesoc, ...)": No such file or directory"#,
        "bazel.execvp_missing",
    ),
    ("Upgrade firmware ok.", "flash.closing_line"),
    ("Failed to handshake with device.", "blisp.no_handshake"),
    ("Received no response from chip.", "blisp.no_handshake"),
    ("error: espcomm_open failed", "esptool_ck.failed"),
    ("[ScriptPrint] reboot fail", "aos.burn_failed"),
    ("写入出错在0KB,进度0%,耗时1047毫秒", "flymcu.write_error"),
    (
        "0> <error> hardfault: HARD FAULT at 0x00012280 0> <error> hardfault: R0: 0x00000000",
        "nordic.hardfault",
    ),
    (
        "I: Bootloader chainload address offset: 0x10000 FATAL ERROR: Platform Exception: SPU Fault",
        "nordic.hardfault",
    ),
    (
        "/home/u/qemu-1.6.0/tci.c:1234: tcg fatal error",
        "qemu.tcg_fatal",
    ),
    ("make: *** No rule to make target", "make.no_rule_wrapped"),
    (
        r#"Completed "libmock_messages_tests": 4 passes, 2 skipped, 9 failures in 9ms."#,
        "cgreen.summary_fail",
    ),
    (
        r#"Completed "main": 2 passes, 0 failures, 1 exception in 0ms."#,
        "cgreen.summary_fail",
    ),
    (
        r#"Completed "main": 12 passes, 0 failures, 0 exceptions in 3ms."#,
        "cgreen.summary_ok",
    ),
    (
        "/usr/bin/bash: line 1: tools/mkconfig: No such file or directory",
        "shell.tree_program_missing",
    ),
    (
        "CMake Error at mbed-run-greentea.cmake:11 (execute_process):",
        "cmake.execute_process",
    ),
    (
        "CMake Error at CMakeLists.txt:85 (idf_build_set_property):",
        "cmake.error",
    ),
    ("-- Configuring incomplete, errors occurred!", "cmake.incomplete"),
    (
        "boards/arm/sama5/giant-board/Kconfig:110: syntax error",
        "kconfig.error",
    ),
    (
        "c:/program files (x86)/gnu tools/bin/ld.exe: app.elf section `.bss' will not fit in region `RAM'",
        "ld.wont_fit",
    ),
    (
        "  $arm-none-eabi-ld: Error: unable to disambiguate: -nostartfiles",
        "ld.error_line",
    ),
    (
        "Error: L6218E: Undefined symbol __heap_base (referred from malloc.o).",
        "armlink.error",
    ),
    (
        "fatal error: avr/io.h: No such file or directory",
        "gcc.fatal_error",
    ),
    ("make[5]: *** [Makefile:70: errno] Error 1", "make.error"),
    (
        "up_assert: Assertion failed at file:irq/irq_unexpectedisr.c line: 51 task: Idle Task",
        "nuttx.fault_panic",
    ),
    (
        "[CPU0] dump_assert_info: Assertion failed panic: at file: arch/arm64/src/common/arm64_fatal.c:561",
        "nuttx.fault_panic",
    ),
    (
        "0x40090335: __assert_func at components/newlib/assert.c line 85",
        "freertos.assert_hook",
    ),
    ("++ MbedOS Fault Handler ++", "mbed.fault"),
    (
        "23:39:18.3659 [ERROR] u54_1: CPU abort [PC=0xDB078793]: Trying to execute code outside RAM or ROM",
        "renode.cpu_abort",
    ),
    ("Context before hardfault:", "riot.hardfault"),
    ("E (17446) task_wdt: Aborting.", "esp_idf.task_watchdog_abort"),
    (
        "Error: [rp2040.cpu] Could not find MEM-AP to control the core",
        "openocd.target",
    ),
    ("Error: Target not halted", "openocd.error"),
    (
        "verify failed in bank at 0x20000000 starting at 0x00000000",
        "openocd.verify",
    ),
    (
        "_____________ ERROR at setup of test_shell _____________",
        "pytest.setup_error",
    ),
    (
        "____________ TestSelfTest.test_reassemble ____________",
        "pytest.failure_section",
    ),    // Runners, compilers, configure steps and flashers whose shapes no recorded log showed,
    // as those tools print them.
    ("67% tests passed, 1 tests failed out of 3", "ctest.summary_fail"),
    ("100% tests passed, 0 tests failed out of 12", "ctest.summary_pass"),
    (
        "1/1 Test #1: test_ringbuf .....................***Timeout  10.01 sec",
        "ctest.timeout",
    ),
    (
        " 2/27 Test  #2: qa_signal_generator_cw_c ............***Failed    0.19 sec",
        "ctest.failed",
    ),
    ("Test timeout 10 seconds exceeded.", "robot.timeout"),
    ("1 test, 0 passed, 1 failed", "robot.summary_fail"),
    ("3 tests, 3 passed, 0 failed, 0 skipped", "robot.summary_pass"),
    (
        "<LAVA_SIGNAL_TESTCASE TEST_CASE_ID=uart-echo RESULT=fail>",
        "lava.testcase_fail",
    ),
    (
        "<LAVA_SIGNAL_TESTCASE TEST_CASE_ID=uart-echo RESULT=pass>",
        "lava.testcase_pass",
    ),
    ("test cases: 5 | 4 passed | 1 failed", "catch2.summary_fail"),
    (
        "All tests passed (12 assertions in 3 test cases)",
        "catch2.summary_pass",
    ),
    (
        "Errors (1 failures, 10 tests, 10 ran, 20 checks, 0 ignored, 0 filtered out, 1 ms)",
        "cpputest.summary_fail",
    ),
    (
        "OK (10 tests, 10 ran, 20 checks, 0 ignored, 0 filtered out, 0 ms)",
        "cpputest.summary_pass",
    ),
    (
        "test result: FAILED. 3 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out",
        "cargo.test_failed",
    ),
    (
        "test result: ok. 4 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out",
        "cargo.test_ok",
    ),
    (
        "======= 2 test cases: 1 failed, 1 succeeded in 00:00:02.345 =======",
        "platformio.test_fail",
    ),
    (
        "======= 3 test cases: 3 succeeded in 00:00:01.234 =======",
        "platformio.test_pass",
    ),
    (
        "idf.py : The term 'idf.py' is not recognized as the name of a cmdlet, function, script file, or operable program.",
        "powershell.not_recognized",
    ),
    (
        "which: no arm-none-eabi-gcc in (/usr/local/bin:/usr/bin:/bin)",
        "which.no_program",
    ),
    (
        "  is not a full path and was not found in the PATH.",
        "cmake.program_not_found",
    ),
    (
        "  Could NOT find Python3 (missing: Python3_EXECUTABLE Interpreter)",
        "cmake.program_not_found",
    ),
    (
        "src/meson.build:3:0: ERROR: Program 'dtc' not found or not executable",
        "meson.not_found",
    ),
    (
        "fatal error: 2 No such file or directory: 'nrfjprog'",
        "python.program_not_found",
    ),
    (
        "FileNotFoundError: [WinError 2] The system cannot find the file specified: 'openocd'",
        "python.program_not_found",
    ),
    (
        "error: linker `arm-none-eabi-gcc` not found",
        "rust.target_missing",
    ),
    (
        "  = note: the `thumbv7em-none-eabihf` target may not be installed",
        "rust.target_missing",
    ),
    ("ERROR: No debuggers were discovered.", "nrfjprog.error"),
    (
        "FATAL ERROR: Unable to find a board; is the board connected?",
        "nrfjprog.error",
    ),
    (
        "dfu-util: No DFU capable USB device available",
        "dfu_util.error",
    ),
    ("No device found on /dev/ttyACM0", "bossac.no_device"),
    (
        "avrdude: stk500_recv(): programmer is not responding",
        "avrdude.error",
    ),
    ("Error: No STM32 target found!", "stm32cube.error"),
    (
        "pylink.errors.JLinkException: No emulators found.",
        "python.flasher_exception",
    ),
    (
        "ERROR: No matching distribution found for esptool==4.5",
        "pip.no_distribution",
    ),
    (
        "fatal: unable to access 'https://github.com/zephyrproject-rtos/hal_nordic/': Could not resolve host: github.com",
        "net.unreachable",
    ),
    (
        r#""src\main.c", line 12: Error:  #20: identifier "foo" is undefined"#,
        "armcc.error",
    ),
    (
        r#"src\main.c(12): error:  #20: identifier "foo" is undefined"#,
        "armcc.error",
    ),
    (
        r#"Error[Li005]: no definition for "GPIO_SetDir" [referenced from main.o]"#,
        "iar.link_error",
    ),
    (
        r#"Error[Pe020]: identifier "foo" is undefined"#,
        "iar.error",
    ),
    (
        "meson.build:12:0: ERROR: Include dir include does not exist.",
        "meson.error",
    ),
    ("Error: Unknown board ID 'esp32devv'", "platformio.config"),
    ("ninja: build stopped: subcommand failed.", "ninja.stopped"),
    (
        "ninja failed with exit code 1, output of the command is in the build/log/idf_py_stderr_output_1",
        "idf_py.failed",
    ),
    (
        r#""app.axf" - 1 Error(s), 0 Warning(s)."#,
        "uvision.errors",
    ),
    ("*** RIOT kernel panic:", "riot.kernel_panic"),
    ("data abort", "cpu.abort"),
    ("Fatal exception 28(LoadProhibitedCause):", "esp8266.exception"),
    ("Exception (28):", "esp8266.exception"),
    // Runners' results and summaries the corpus showed later (round 4).
    (
        "mbedgt: test suite 'tests-mbedtls-selftest' ........................ OK in 17.30 sec",
        "greentea.suite_ok",
    ),
    (
        "mbedgt: test suite 'tests-mbed_hal-common_tickers' ................. FAIL in 41.22 sec",
        "greentea.suite_fail",
    ),
    (
        "+++++ Finished test 'bluepill.Should Run All Bluepill Tests' in 10.63 seconds with status failed",
        "robot.test_failed",
    ),
    (
        "+++++ Finished test 'BIOS.BIOS boots' in 2.24 seconds with status OK",
        "robot.test_ok",
    ),
    (
        "test/test_test_dummy/test_main.cpp:7: smoke: CHECK( 42 == 40 + 1 ) is NOT correct!\t[FAILED]",
        "platformio.case_failed",
    ),
    (
        "test/test_calculator/test_main.cpp:30:test_addition\t[PASSED]",
        "platformio.case_passed",
    ),
    (
        "esp32dev       test_interrupt          FAILED    00:00:07.247",
        "platformio.table_failed",
    ),
    (
        "esp32dev       test_core               PASSED    00:00:11.156",
        "platformio.table_passed",
    ),
    ("Some tests failed :( See logs for details!", "tests.failed"),
    ("3 tests failed", "tests.failed"),
    (" INFO  all tests passed!", "tests.passed"),
    ("Tests finished successfully :)", "tests.passed"),
    ("~~~ALL TESTS PASSED~~~", "tests.passed"),
    (
        ">>> 'lp ticker info test': 1 passed, 2 failed",
        "tests.counts_failed",
    ),
    ("Tests: 12 passed, 0 failed, 1 skipped", "tests.counts_passed"),
    // Programs and packages that are not installed.
    ("ImportError: No module named serial", "python.no_module"),
    (
        "/usr/bin/python3: No module named west",
        "python.no_module",
    ),
    (
        "The following Python requirements are not satisfied:",
        "esp_idf.python_requirements",
    ),
    (
        "  No such file or directory: CMAKE_READELF: 'CMAKE_READELF-NOTFOUND'",
        "cmake.notfound",
    ),
    (
        "  Unknown CMake command \"pico_generate_pio_header\".",
        "cmake.unknown_command",
    ),
    // west and git fetching what a workspace needs.
    (
        "FATAL ERROR: command exited with status 128: git clone https://github.com/zephyrproject-rtos/zephyr /home/user/zephyrproject/.west/manifest-tmp",
        "west.git_failed",
    ),
    (
        "ERROR: update failed for projects: libmetal, open-amp",
        "west.update_failed",
    ),
    ("fatal: the remote end hung up unexpectedly", "git.network"),
    (
        "error: RPC failed; curl 56 GnuTLS recv error (-9): Error decoding the received TLS packet.",
        "git.network",
    ),
    // Faults and asserts as Mbed, probe-run and probe-rs report them.
    (
        "Error Message: Mbed assertation failed 0>1",
        "mbed.assert",
    ),
    (
        "Firmware exited unexpectedly: Exception",
        "probe_rs.firmware_fault",
    ),
    ("(HOST) ERROR the program panicked", "probe_rs.firmware_fault"),
    (
        "   1: 0x000002bc - panic_probe::__cortex_m_rt_HardFault",
        "rust.fault_frame",
    ),
    ("    Frame 0: HardFault_ @ 0x08005dba", "rust.fault_frame"),
    (
        "   5: 0x00000656 - rust_begin_unwind",
        "rust.fault_frame",
    ),
    // Generic evidence: a failure without the step that failed.
    (
        "/usr/local/lib/python3.7/dist-packages/labgrid/target.py:425: in activate",
        "python.pytest_frame",
    ),
    (
        "serial.serialutil.SerialTimeoutException: Write timeout",
        "python.exception",
    ),
    ("ERROR: Build directory build is for application /a, not /b", "generic.error"),
    ("FAILED: build/app.o", "ninja.step_failed"),
    ("Check Timeout", "generic.timeout"),
    ("*** Error: No CMSIS-DAP device found", "probe.error"),
    (
        "****** Error: PC of target system has unexpected value after programming.",
        "jlink.error",
    ),
    (
        "A serial exception error occurred: Could not configure port: (5, 'Input/output error')",
        "esptool.fatal",
    ),
    (
        "Error: Debug adapter does not support any transports? Check config file order.",
        "probe.error",
    ),
    ("Error: target voltage may be too low for reliable debugging", "probe.error"),
    (
        "  File \"/usr/lib/python3/dist-packages/labgrid/driver/serialdriver.py\", line 65, in on_activate",
        "python.harness_frame",
    ),
    ("Timed out!", "generic.timeout"),
    ("Timeout waiting for the DUT to boot", "generic.timeout"),
    // More runners' summaries.
    (
        "INFO    - 1 of 1 executed test suites passed (100.00%), 0 built (not run), 0 failed, 0 errored, with no warnings in 51.22 seconds.",
        "twister.summary_pass",
    ),
    (
        "INFO    - 13 of 15 executed test suites passed (86.67%), 0 built (not run), 2 failed, 0 errored, with no warnings in 63.45 seconds.",
        "twister.summary_fail",
    ),
    (
        "INFO    - 1188 of 1190 executed test cases passed (99.83%), 2 failed on 41 out of total 1002 platforms (4.09%)",
        "twister.cases_failed",
    ),
    (
        "INFO    -  3/15 qemu_x86_64   tests/ztest/base/testing.ztest.base.verbose_2   FAILED Failed (qemu 1.457s)",
        "twister.failed_reason",
    ),
    ("The following tests FAILED:", "ctest.failed_list"),
    ("Errors while running CTest", "ctest.errors"),
    ("Ran 12 tests in 0.031s", "unittest.ran"),
    (
        "pyocd.probe.pydapaccess.dap_access_api.DAPAccessIntf.TransferError: No ACK received",
        "python.flasher_exception",
    ),
    (
        "esptool.util.FatalError: Failed to connect to ESP32: No serial data received.",
        "python.flasher_exception",
    ),
    ("Parent suite setup failed:", "robot.setup_failed"),
    (
        "[ ERROR ] Error in file '/home/u/renode/tests/platforms/LiteX/LiteX_Linux_VexRiscv.robot': Replacing variables from setting 'Resource' failed: Variable '${RENODEKEYWORDS}' not found.",
        "robot.setup_failed",
    ),
    (
        "Should Boot                                                           | PASS |",
        "robot.case_pass",
    ),
    (
        "E       AssertionError: assert 'Hello' in 'Guru Meditation Error'",
        "pytest.exception",
    ),
    ("[SUCCESS]", "riot.test_success"),
    (
        "[FAILED] You're not running riotboot",
        "riot.test_failed",
    ),
    ("OK (42 tests)", "embunit.ok"),
    ("FAILED (failures=2, errors=1)", "unittest.failed"),
    (
        "========================== [FAILED] Took 1.23 seconds ==========================",
        "platformio.env_failed",
    ),
    ("uno          FAILED    00:00:01.234", "platformio.env_failed"),
    ("Error compiling for board Arduino Uno.", "arduino.compile_failed"),
    (
        "Compilation error: 'foo' was not declared in this scope",
        "arduino.compile_failed",
    ),
    (
        "Failed uploading: uploading error: exit status 2",
        "arduino.upload_failed",
    ),
    ("An error occurred while uploading the sketch", "arduino.upload_failed"),
    (
        "Error during Upload: uploading error: uploading error: exit status 255",
        "arduino.upload_failed",
    ),
    ("Failed to execute script esptool", "esptool.script_failed"),
    (
        "[12469] Failed to execute script 'esptool' due to unhandled exception!",
        "esptool.script_failed",
    ),
    (
        "Failed to connect to ESP32: No serial data received.",
        "esptool.no_reply",
    ),
    (
        "Error: Flash Download failed  -  Target DLL has been cancelled",
        "uvision.flash",
    ),
    // Programs that are not installed, as rustup, west and ESP-IDF's tools say it.
    ("xtensa-esp32-elf-gcc: command not found", "shell.bare_not_found"),
    ("ERROR: tool xtensa-esp-elf-gdb is not installed", "tool.not_installed"),
    (
        "arm-none-eabi-gcc: error trying to exec 'cc1': execvp: No such file or directory",
        "gcc.cannot_execute",
    ),
    (
        "FATAL ERROR: required program JLinkExe not found; install it or add its location to PATH",
        "west.program_missing",
    ),
    (
        "ERROR: tool xtensa-esp32-elf has no installed versions. Please run 'install.sh' to install it.",
        "esp_idf.tool_missing",
    ),
    (
        "error: toolchain 'nightly-x86_64-unknown-linux-gnu' is not installed",
        "rustup.not_installed",
    ),
    (
        "  Could not find a configuration file for package \"Zephyr-sdk\" that is",
        "cmake.program_not_found",
    ),
    // Rust's compiler and linker, and the devicetree of a Zephyr build.
    ("error[E0425]: cannot find value `x` in this scope", "rustc.error"),
    ("error: linking with `rust-lld` failed: exit status: 1", "rustc.link_failed"),
    ("rust-lld: error: undefined symbol: __pre_init", "ld.error_line"),
    (
        "error: could not compile `app` (bin \"app\") due to 1 previous error",
        "cargo.could_not_compile",
    ),
    (
        "devicetree error: Label 'zephyr_udc0' appears on /soc/usb@40040000 and on /soc/usb@50000000",
        "zephyr.devicetree_error",
    ),
    // Faults, asserts and watchdogs.
    (
        "[00:00:01.234,000] <err> os: Faulting instruction address (r15/pc): 0x0000abcd",
        "zephyr.faulting_instruction",
    ),
    (
        "Kernel panic - not syncing: Attempted to kill init! exitcode=0x0000000b",
        "linux.kernel_panic",
    ),
    (
        "Unable to handle kernel NULL pointer dereference at virtual address 00000000",
        "linux.kernel_panic",
    ),
    ("Error: CPU halted unexpectedly.", "probe_rs.firmware_fault"),
    ("assertion `left == right` failed", "libc.assert"),
    (
        "rst:0x8 (TG1WDT_SYS_RESET),boot:0x13 (SPI_FAST_FLASH_BOOT)",
        "esp.watchdog_reset",
    ),
    ("wdt reset", "esp.watchdog_reset"),
    // CI runners, package managers, containers, Renode and LAVA.
    (
        "The runner has received a shutdown signal. This can happen when the runner service is stopped, or a manually started runner is canceled.",
        "ci.runner_lost",
    ),
    ("##[error]The operation was canceled.", "ci.runner_lost"),
    (
        "ERROR: Job failed (system failure): prepare environment: Error response from daemon",
        "ci.runner_lost",
    ),
    ("##[error]Process completed with exit code 2.", "ci.step_failed"),
    ("ERROR: Job failed: exit code 1", "ci.step_failed"),
    ("E: Unable to locate package gcc-arm-none-eabi", "apt.failed"),
    (
        "docker: Error response from daemon: pull access denied for foo, repository does not exist",
        "docker.daemon",
    ),
    (
        "There was an error executing command 'mach create'",
        "renode.command_error",
    ),
    (
        "InfrastructureError: Unable to power on the device",
        "lava.infrastructure",
    ),
    (
        "- {\"dt\": \"2022-12-02T07:44:02\", \"lvl\": \"results\", \"msg\": {\"case\": \"job\", \"result\": \"fail\", \"error_type\": \"Infrastructure\"}}",
        "lava.infrastructure",
    ),
    ("auto-login-action timed out after 300 seconds", "lava.action_timeout"),
    // Round 5: kinds of lines the generic mechanisms cover, each in its tool's shape.
    (
        "| K64F-GCC_ARM | K64F | tests-mbed_drivers-ticker | OK | 21.8 | default |",
        "greentea.table_ok",
    ),
    (
        "mbedgt: no platform/target matching tests were found!",
        "greentea.no_target",
    ),
    ("mbedgt: exited with code -110", "greentea.exit_code"),
    (
        "/src/tests/test_basic.cpp:20: Failure in TEST(TestConcat, concat_12)",
        "cpputest.failure",
    ),
    (
        "\u{2620}\u{fe0f} ERROR: Test executable `test_lib.out` seems to have crashed -- likely terminating early due to a bad code reference.",
        "ceedling.test_crashed",
    ),
    (
        "INFO:nucleo-f411re.tests/xtimer_usleep:Success",
        "riot.board_app_success",
    ),
    (
        "CMake Error at zephyr/cmake/compiler/clang/generic.cmake:7 (find_program):",
        "cmake.compiler_not_found",
    ),
    (
        "  Could not find CMAKE_C_COMPILER using the following names: clang",
        "cmake.compiler_not_found",
    ),
    (
        "ASSERTION FAIL @ WEST_TOPDIR/zephyr/subsys/bluetooth/host/l2cap.c:704",
        "zephyr.assert",
    ),
    (
        "0x400d4634: task_wdt_isr at /esp-idf/components/esp_common/src/task_wdt.c:182 (discriminator 1)",
        "esp_idf.watchdog_frame",
    ),
    (
        "<1>[    1.813418] Unhandled fault: page domain fault (0x01b) at 0x00000000",
        "linux.kernel_panic",
    ),
    ("Internal error: Oops: 17 [#1] PREEMPT SMP ARM", "linux.kernel_panic"),
    (
        "err = TIMEOUT('Timeout of 1.99 seconds exceeded or connection closed by peer',)",
        "pexpect.timeout",
    ),
    ("[ASSERT] /src/FreeRTOS-Sim/Demo/TimerDemo.c:716", "firmware.assert_location"),
    ("ASSERT: main.c:42 buf != NULL", "firmware.assert_location"),
    (
        "mbed assertation failed: 0 == ret, file: NanostackInterface.cpp, line 213",
        "firmware.assert_failed",
    ),
    (
        "boards/st/stm32c0116_dk/stm32c0116_dk.dts:56 (column 19): parse error: expected number or parenthesized expression",
        "build.source_error",
    ),
    ("Error: app.overlay:12.1-6 syntax error", "build.source_error"),
    (
        "Error: boards/arm/foo/foo.dtsi:21.2-3 syntax error",
        "build.source_error",
    ),
    ("DEBUG   - Passing test suites: 1", "summary.passing_count"),
    ("Executed: 24", "summary.passing_count"),
    ("DEBUG   - Failing test suites: 2", "summary.failing_count"),
    (
        "2020-12-27T11:16:13 WARN common.c: unknown chip id! 0x3748",
        "stlink.unknown_chip",
    ),
    ("Failed to connect to target", "stlink.connect_failed"),
    (
        "2021-03-01T10:00:01 ERROR common.c: Flash memory is write protected",
        "stlink.log_error",
    ),
    ("Failures during compilation:", "riot.failures_compilation"),
    ("Failures during test.flash:", "riot.failures_flash"),
    ("Failures during test:", "riot.failures_test"),
    (
        "[                    ]   0%0002229:CRITICAL:__main__:flash erase sector failure (address 0x00000000; result code 0x67)",
        "pyocd.legacy_error",
    ),
    (
        "[=                   ]   6%0013633 C target was not halted as expected after calling flash algorithm routine (IPSR=3) [__main__]",
        "pyocd.error",
    ),
    (
        "INTERNALERROR> Traceback (most recent call last):",
        "pytest.internal_error",
    ),
    (
        "ERROR: file or directory not found: tests/test_shell.py",
        "pytest.not_found",
    ),
    ("Bad test result: config", "lava.bad_result"),
    (
        "09:25:04.713306  start: 2.3 expect-shell-connection (timeout 00:04:57) [common]",
        "lava.context",
    ),
    (
        "fatal: repository 'https://github.com/foo/bar/' not found",
        "git.repository_not_found",
    ),
    ("remote: Repository not found.", "git.repository_not_found"),
    (
        "[2024-01-05 10:11:12] ERROR: device did not answer",
        "generic.error",
    ),
    ("> FATAL: cannot open image", "generic.error"),
    (
        "Mass erase failed, the device is read-protected",
        "flash.generic_failed",
    ),
    (
        "Flash Download failed  -  Target DLL has been cancelled",
        "flash.generic_failed",
    ),
    (
        "No time left for remaining 2 retries. 1 retries out of 3 failed for depthcharge-retry",
        "lava.infrastructure",
    ),
    (
        "tests-core.test_bitarithm_msb (tests/unittests/tests-core/tests-core-bitarithm.c 42) exp 3 was 4",
        "embunit.failure",
    ),
    ("***** Stack Check Fail! *****", "firmware.stack_check"),
    ("*** stack smashing detected ***: terminated", "firmware.stack_check"),
    (
        "labgrid-client: error: place rpi-3 is not acquired",
        "labgrid.client_error",
    ),
    (
        "OSError: [Errno 104] Connection reset by peer",
        "python.connection_errno",
    ),
    (
        "Error: Please install Git client from https://git-scm.com/downloads",
        "tool.please_install",
    ),
    (
        "    + FullyQualifiedErrorId : CommandNotFoundException",
        "powershell.not_recognized",
    ),
    (
        "meson.build:6:0: ERROR: Unknown linker(s): [['gcc-ar'], ['ar']]",
        "meson.not_found",
    ),    (
        "# FAIL:  1",
        "automake.summary_fail",
    ),
    (
        "# FAIL:  0",
        "automake.summary_pass",
    ),
    (
        "--- run_test job results (3 failed, 71 passed, 74 total):",
        "ci.test_tally_fail",
    ),
    (
        "Guru Meditation Error: Core  0 panic'ed (Interrupt wdt timeout on CPU0).",
        "esp_idf.interrupt_watchdog",
    ),
    (
        "M0 Guru Meditation",
        "firmware.guru_meditation",
    ),
    (
        "Error: Failed to download file https://github.com/platformio/platformio/archive/develop.zip:",
        "download.failed",
    ),
    (
        "Timeout while attaching to target under reset. This can happen if the target is not responding to the reset sequence.",
        "probe_rs.attach_failed",
    ),
    (
        "** Verified OK **",
        "flash.verified",
    ),
    (
        "Hash of data verified.",
        "esptool.segment_verified",
    ),
    (
        "error: failed to flash /tmp/main.hex: exec: \"openocd\": executable file not found in $PATH",
        "go.exec_not_found",
    ),
    (
        "error: unable to locate a USB device to be flashed",
        "flash.no_device",
    ),
    (
        "Unable to connect: HTTPSConnectionPool(host='lava.example.org', port=443): Max retries exceeded",
        "python.connection_pool",
    ),
    (
        "[5.361085] error: panic: Unhandled exception: HardFault",
        "firmware.panic_fault",
    ),
    (
        "15:48:38.6631 [INFO] Loaded monitor commands from: scripts/monitor.py",
        "renode.context",
    ),
    (
        "   at System.RuntimeMethodHandle.InvokeMethod(Object target, Object[] arguments)",
        "dotnet.frame",
    ),
    (
        "No such file renode/LiteX_I2C_Zephyr.cs.",
        "renode.no_such_file",
    ),
    (
        "Process is terminated due to StackOverflowException.",
        "dotnet.terminated",
    ),
    (
        "/bin/sh: /usr/local/Cellar/cmake/3.23.1/bin/cmake: No such file or directory",
        "shell.path_not_found",
    ),
    (
        "Error: build command 'cmake' not found",
        "tool.command_not_found",
    ),
    (
        "timeout waiting for data (4 bytes)",
        "px4.uploader",
    ),
    (
        "The transfer timed out.",
        "daplink.fail",
    ),
    (
        "[error] [ Client] - Encountered error -90: Command erase_file executed for 92 milliseconds with result -90",
        "nordic.log_error",
    ),
    (
        "Can't read memory descriptors, ap-protection is enabled.",
        "flash.protected",
    ),
    (
        "WARNING: Download failure <urlopen error [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed>",
        "host.tls_failed",
    ),
    (
        "Directory for x86_64:nsh_pci_smp does not exist.",
        "nuttx.no_config",
    ),
    (
        "InvalidProjectConfError: Invalid 'platformio.ini' (project configuration file)",
        "platformio.bad_config",
    ),
    (
        "Building for pttu .. failed",
        "build.board_failed",
    ),
    (
        "-> task in 'bin/arducopter' failed with exit status 1 (run with -v to display more information)",
        "waf.task_failed",
    ),
    (
        "RFCORE_ASSERT(len <= RFCORE_XREG_RXFIFOCNT) failed at line 91 in rfcore_read_fifo()!",
        "firmware.assert_macro",
    ),
    (
        "Task watchdog channel 1 callback, thread: control",
        "rtos.task_watchdog",
    ),
    (
        "=================== 1 succeeded in 00:02:10.868 ===================",
        "build.succeeded",
    ),
    (
        "error: failed to link /tmp/tinygo867851047/main: exit status 1",
        "tinygo.link_failed",
    ),
    (
        "ERROR:../hw/core/cpu-common.c:42:cpu_reset: assertion failed: (cpu != NULL)",
        "emulator.internal_assert",
    ),
    ("[  PASSED  ] 12 tests.", "gtest.all_passed"),
    (
        "[   LINE   ] --- ../tests/test_ring.c:88: error: Failure!",
        "cmocka.failure",
    ),
    (" 2 FAILED TEST(S)", "cmocka.failed_count"),
    ("[  FAILED  ] ring_tests: 2 test(s), listed below:", "gtest.failed"),
    (
        "/src/tests/test_codec.cpp:118: FAILED:",
        "catch2.assertion_failed",
    ),
    (
        "Assertion failed: (count=3) == (expected=4), file RingTest.ino, line 31.",
        "arduinounit.assertion",
    ),
    (
        "Test summary: 4 passed, 2 failed, and 0 skipped, out of 6 test(s).",
        "arduinounit.summary_fail",
    ),
    (
        "Test summary: 6 passed, 0 failed, and 1 skipped, out of 7 test(s).",
        "arduinounit.summary_pass",
    ),
    ("FAIL  extmod/uctypes_le.py", "micropython.test_failed"),
    (
        "512 tests performed (14070 individual testcases)",
        "micropython.performed",
    ),
    (
        "2 tests failed: extmod/uctypes_le extmod/vfs_fat_ramdisk",
        "micropython.failed",
    ),
    (
        "AES-128-GCM Encrypt NIST #3 ............................................ FAILED",
        "dot_leader.failed",
    ),
    (
        "test_suite_aes.ecb ................................................ PASS",
        "dot_leader.passed",
    ),
    ("FAILED (3 suites, 9120 tests run)", "mbedtls.suites_failed"),
    ("PASSED (84 suites, 21003 tests run)", "mbedtls.suites_passed"),
    ("TEST TIMEOUT", "cooja.timeout"),
    (
        "AUTOTEST: Exception caught: Traceback (most recent call last):",
        "ardupilot.autotest_exception",
    ),
    (
        "error: test failed, to rerun pass `-p blinky --test gpio`",
        "cargo.test_target_failed",
    ),
    ("error: 3 targets failed:", "cargo.test_target_failed"),
    (
        "0000811 I Erased 8192 bytes (2 sectors), programmed 6144 bytes (6 pages), skipped 2048 bytes (2 pages) at 9.87 kB/s [loader]",
        "flash.finished",
    ),
    ("      Finished in 3.02s", "flash.finished"),
    ("Finished erasing in 12.5ms", "flash.finished"),
    ("Writing LDROM...OK", "flash.finished"),
    ("[==============================] 100% (128/128 pages)", "flash.finished"),
    ("verify..         104090/104090  VERIFY OK", "flash.finished"),
    ("File downloaded successfully", "flash.verified"),
    ("Bytes written: 8192", "flash.verified"),
    ("Hard resetting via RTS pin....", "flash.verified"),
    (
        "[ ######### ] 0.812s | Verify file - Done verifying",
        "flash.closing_line",
    ),
    ("Verifying flash... VERIFIED.", "flash.closing_line"),
    (
        "Read/Verify succeeded for 4096 bytes,   31.250 kiB/s",
        "flash.closing_line",
    ),
    ("verified 20480 bytes in 0.412s (48.543 KiB/s)", "flash.closing_line"),
    ("Wrote address 0x08004000 (100.00%) Done.", "flash.closing_line"),
    (
        "Chip erase completed successfully in 3.2s",
        "flash.closing_line",
    ),
    (
        "Info: J-Link: Flash download: Total time needed: 1.204s (Prepare: 0.100s, Compare: 0.050s, Erase: 0.500s, Program: 0.500s, Verify: 0.030s, Restore: 0.024s)",
        "flash.closing_line",
    ),
    (
        "Download\t[=============            ]  52%        65536 bytesdfu-util: Error during download get_status",
        "dfu_util.error",
    ),
    (
        "Downloading 32-bit data failed...",
        "stm32cube.transfer_failed",
    ),
    (
        "main.c:(.text.main+0x1c): relocation truncated to fit: R_ARM_THM_CALL against symbol `far_away' defined in .ramfunc section in app.o",
        "ld.relocation_truncated",
    ),
    (
        "?ASlink-Warning-Undefined Global '_memcpy' referenced by module 'main'",
        "sdcc.aslink",
    ),
    ("?ASlink-Error-Could not get 12 consecutive bytes in internal RAM for area DSEG.", "sdcc.aslink"),
    ("[001234] [DEBUG] >>>stack>>>", "esp8266.stack_dump"),
    (
        "[12:00:01][I][debug:101]: Reset Reason: Hardware Watchdog",
        "esp8266.watchdog_reset_reason",
    ),
    (
        "Reset info: Fatal exception:4 flag:1 (WDT) epc1:0x40201234 epc2:0x00000000 epc3:0x00000000 excvaddr:0x00000000 depc:0x00000000",
        "esp8266.watchdog_reset_reason",
    ),
    ("[154003] [DEBUG] Reason of restart: 3", "esp8266.watchdog_reset_reason"),
    (
        r#"10:00:00.123 MQT: stat/plug/STATUS1 = {"StatusPRM":{"Baudrate":115200,"RestartReason":{"Exception":3,"Reason":"Exception","EPC":["4000df64","00000000","00000000"]}}}"#,
        "tasmota.restart_exception",
    ),
    (
        "<err> mpsl_init: MPSL ASSERT: 112, 2185",
        "nordic.controller_assert",
    ),
    (
        "[00:00:12.345,678] <err> bt_sdc_hci_driver: SoftDevice Controller ASSERT: 12, 34",
        "nordic.controller_assert",
    ),
    ("000812 Assert @ 0x0002c41e", "mynewt.assert"),
    ("> FAILED ASSERTION.", "riot.failed_assertion"),
    (
        "CircuitPython core code crashed hard. Oops!",
        "circuitpython.core_crash",
    ),
    ("Crash into the HardFault_Handler.", "circuitpython.core_crash"),
    (
        "mbedgt: mbed-host-test-runner: returned 'TIMEOUT'",
        "greentea.timeout",
    ),
    ("{{result;timeout}}", "greentea.timeout"),
    ("{{success}}", "mbed.host_test_success"),
    ("{{failure}}", "mbed.host_test_failure"),
    ("0.000123 INFO  all tests passed!", "defmt_test.passed"),
    (
        "2021-04-02 10:11:12,345 > avrdude: 30720 bytes of flash verified",
        "flash.verified",
    ),
    ("Programming.......", "teensy.programming"),
    (
        "error reading intel hex file \"blink.ino.hex\"",
        "teensy.error",
    ),
    ("Unable to open device (hint: try -w option)", "teensy.error"),
    ("dfu-util: Could not open file firmware.dfu for reading: No such file or directory", "dfu_util.error"),
    ("SW-DP scan failed!", "bmp.attach_failed"),
    ("Available Targets:", "bmp.scan_found"),
    ("E       assert 72.02440977096558 <= 60", "pytest.assert_detail"),
    (
        "ERROR tests/test_msg.py::test_label - Failed: Timeout (>600.0s) from pytest-timeout.",
        "pytest.timeout_row",
    ),
    ("sh: 1: build/test/out/test_lights.out: not found", "ceedling.executable_missing"),
    ("cannot find -lfloat", "ld.cannot_find_wrapped"),
    (
        "TestRunner summary: 0 passed, 0 failed, 0 skipped, 1 timed out, out of 1 test(s).",
        "aunit.summary_timed_out",
    ),
    (
        "client-1  | [2024-07-05T20:50:39.141Z][worker-os]   not ok 7 - Firmware will not load",
        "tap.not_ok_in_service",
    ),
    ("No available boards are connected", "flasher.no_board"),
    ("Error: RTT control block not available", "flasher.no_board"),
    ("hackrf_open() failed: HACKRF_ERROR_NOT_FOUND (-5)", "flasher.no_board"),
    ("diff 115 address 0x0000020b. Was 0x00 instead of 0x4b", "openocd.verify_diff"),
    (
        "2021-03-22T19:22:50 INFO common.c: Flash written and verified! jolly good!",
        "stlink.logged_success",
    ),
    ("Flash complete.", "flash.complete"),
    ("st-flash 1.7.0", "stlink.banner"),
    ("test 'mbed-drivers-test-echo' ......  IOERR_SERIAL in 17.09 sec", "greentea.ioerr"),
    ("Prompt 'root@3mdeb:/home/ubuntu#' not found in 30 seconds.", "expect.prompt_timeout"),
    (
        "./tests/simexec.sh: line 67:  3239 Aborted                 (core dumped) java -jar x",
        "script.java_killed",
    ),
    ("ERROR: Floating point exception - aborting", "ardupilot.fpe"),
    ("- `RESULT: watchdog soak PASS (ack, ping)`", "result.pass"),
    ("ok  \tcrypto/md5\t0.002s", "go_test.ok"),
    ("assert: 'e' failed", "libc.assert_quoted"),
    ("error: tool 'gcc' not found", "platformio.tool_not_found"),
    (
        "  File \"C:\\Python311\\Lib\\subprocess.py\", line 1493, in _execute_child",
        "python.spawn_frame",
    ),
    (
        "  File \"/esphome/esphome/config.py\", line 61, in iter_component_configs",
        "python.esphome_codegen_frame",
    ),
    (
        "Error: invocation of external compiler program failed. The system cannot find the file specified.",
        "nim.compiler_missing",
    ),
    ("i686-apple-darwin9-gcc-4.0.1: crc32.c: No such file or directory", "gcc.no_input_file"),
    ("Target mismatch, flashing cancelled", "flash.cancelled"),
    (
        "UndefinedEnvPlatformError: Please specify platform for 'cubecell' environment",
        "platformio.env_error",
    ),
    ("Exception 29: StoreProhibited: A store referenced a page", "esp8266.exception_decoded"),
    ("EXCVADDR: 0x00000020  EXCCAUSE: 0x0000001c", "xtensa.exception_registers"),
    ("E: ***** Exception vector: 0x2, cause code: 0x1, parameter 0x0", "zephyr.arc_exception"),
    ("pc : [<01000004>]	   lr : [<3ff74bc0>]", "arm.exception_registers"),
    ("flash8051 [ERROR: Bootloader returned failure response.]", "silabs.bootloader_failed"),
    ("Download complete with [ 7 ] errors", "silabs.bootloader_failed"),
    ("Download complete with [ 0 ] errors", "efm8load.done"),
    ("** UPLOAD SUCCESS. Flashing in progress.", "elrs.upload_success"),
    ("Failed to get Device ID", "programmer.no_target"),
    ("Can not connect to target!", "programmer.no_target"),
    ("An error was reported by NRFJPROG DLL: -13 NO_EMULATOR_CONNECTED.", "nrfjprog.dll_error"),
    ("Cannot set alt interface zero", "dfu_util.old_error"),
    ("./tcl/airsense.cfg:42: Error:", "openocd.script_error_bare"),
    (">>>> PASSED STEP: test.Helicopter at Mon May 29 14:51:13 2023", "ardupilot.step_passed"),
    (">>>> FAILED STEP: test.Copter at Mon May 29 14:51:13 2023", "ardupilot.step_failed"),
    ("FAILURE test/unit_test.c:677: ok == 200", "mongoose.test_failure"),
    ("error: multiple serial ports available - use -port flag", "tinygo.port"),
    (
        "GNU MCU Eclipse (Microsemi SoftConsole build) 64-bits Open On-Chip Debugger 0.10.0+dev",
        "openocd.vendor_banner",
    ),
    ("Failed to init the device.", "flash.device_failed"),
    ("'' does not match any available port", "flash.device_failed"),
    (
        "\"../lnk_msp430f5529.cmd\", line 40: error: cannot find file \"rts430x.lib\"",
        "ti.link_command_file",
    ),
    ("Error - section '.udata' can not fit the absolute section. Section", "mplink.error"),
    ("make: *** Keine Regel, um „companion28“ zu erstellen.  Schluss.", "make.no_rule_translated"),
    ("error: run placement fails for object \".stack\", size 0x200", "vendor.link_error"),
    (
        "Failed to upgrade target. Error is: Serial port could not be opened on /dev/ttyUSB0.",
        "nrfutil.failed",
    ),
    ("Error: One or more batch tasks failed:", "nrfutil.failed"),
    (
        "Programming flash page 12...flash verify failed at 0x00003000",
        "flash.verify_failed",
    ),
    (
        "[ERROR] pyocd.core.exceptions.TargetError: Target is locked",
        "python.flasher_exception",
    ),
    (
        "  File \"/usr/local/lib/python3.9/site-packages/stm32flasher.py\", line 88, in write",
        "python.flasher_frame",
    ),
    (
        "12:01:05.118 -> Exception (28):",
        "esp8266.exception",
    ),
    (
        "{\"Info1\":{\"RestartReason\":\"Fatal exception:28 flag:2 (EXCEPTION) epc1:0x40213a1c\"}}",
        "esp8266.restart_reason",
    ),
    (
        "Kernel panic at chips/nrf52/src/crt1.rs:42:",
        "tock.kernel_panic",
    ),
    (
        "exccause       0x45 (InterruptWDTTimoutCPU1)",
        "esp_coredump.interrupt_watchdog",
    ),
    ("exccause       0x1c (LoadProhibitedCause)", "esp_coredump.exccause"),
    (
        "sbi_trap_error: hart1: trap handler failed (error -3)",
        "opensbi.trap_error",
    ),
    (
        "[E] mcause 0x00000007, mepc 0x23004a10, mtval 0x00000000",
        "riscv.trap_dump",
    ),
    (
        "ESP_ERROR_CHECK failed: esp_err_t 0x103 (ESP_ERR_INVALID_STATE) at 0x400d2a4b",
        "esp_idf.error_check",
    ),
    ("Assert", "daplink.assert_header"),
    (
        "Got a SIGSEGV while executing native code. This usually indicates",
        "mono.native_crash",
    ),
    (
        "process_begin: CreateProcess(NULL, arm-none-eabi-gcc -c main.c -o main.o, ...) failed.",
        "make.createprocess_failed",
    ),
    (
        "make (e=2): The system cannot find the file specified.",
        "make.createprocess_failed",
    ),
    (
        "protoc-gen-nanopb: program not found or is not executable",
        "protoc.plugin_not_found",
    ),
    (
        "/usr/lib/ruby/2.7.0/rubygems/core_ext/kernel_require.rb:92:in `require': cannot load such file -- ceedling (LoadError)",
        "ruby.load_error",
    ),
    (
        "Please install it and add its bin directory to your PATH.",
        "tool.install_or_path",
    ),
    (
        "FileNotFoundError: No such file or directory: 'nrfjprog'",
        "python.program_not_found",
    ),
    (
        "Get \"https://registry-1.docker.io/v2/\": dial tcp 54.1.2.3:443: i/o timeout",
        "go.dial_failed",
    ),
    (
        "Error initializing instance: Loading index file: reading package index: EOF",
        "arduino_cli.init_failed",
    ),
    ("\"error_code\": \"Infrastructure\",", "lava.infrastructure"),
    (
        "  Could not find a version that satisfies the requirement esptool>=3 (from versions: )",
        "pip.no_distribution",
    ),
    ("scons: *** [build/firmware.elf] Error 2", "scons.command_failed"),
    (
        "scons: *** Do not know how to make File target `flash' (/src/flash).  Stop.",
        "scons.error",
    ),
    (
        "NMAKE : fatal error U1077: 'cl' : return code '0x2'",
        "nmake.command_failed",
    ),
    (
        "NMAKE : fatal error U1073: don't know how to make 'main.obj'",
        "nmake.error",
    ),
    ("Building target targets/nrf52_blinky", "newt.building"),
    (
        "14:02:11 Build Failed. 2 errors, 0 warnings. (took 3s.12ms)",
        "eclipse.build_failed",
    ),
    (
        "14:02:11 Build Finished. 0 errors, 3 warnings. (took 1s.873ms)",
        "build.succeeded",
    ),
    (
        "libdriver.a: file format not recognized; treating as linker script",
        "ld.bad_format",
    ),
    (
        "E0562310:Undefined external symbol \"_vTaskDelay\" referenced in \"main.obj\"",
        "vendor.link_error",
    ),
    (
        "error #10234-D: unresolved symbols remain",
        "vendor.link_error",
    ),
    ("Compilation error: exit status 1", "arduino.compile_exit_status"),
    ("Finished in 2.871 seconds", "flash.finished"),
    ("Validating...  Success", "flash.finished"),
    (
        "0x3a00 bytes written into 0x7000 bytes memory (51.79%).",
        "flash.finished",
    ),
    ("Validating...  ERROR", "dfu_programmer.validate_failed"),
    (
        "Memory did not validate. Did you erase?",
        "dfu_programmer.validate_failed",
    ),
    ("*** [.pio/build/nodemcu/src/main.cpp.o] Error 1", "scons.command_failed"),
    (
        "exec: \"/opt/arduino/tools/avr-gcc/bin/avr-g++\": file does not exist",
        "go.exec_not_found",
    ),
    (
        "FAILED test_app.py::test_boot[esp32c3] - pexpect.exceptions.TIMEOUT: Not found \"ready\"",
        "pytest.failed_timeout",
    ),
    (
        "Error: The target did not respond with test list until timeout.",
        "embedded_test.no_response",
    ),
    ("12 tests performed", "micropython.performed"),
    (
        "Error: Can't find target/nrf52.cfg",
        "openocd.missing_script",
    ),
    (
        "embedded:startup.tcl:60: Error: Can't find interface/cmsis-dap.cfg",
        "openocd.missing_script",
    ),
    (
        "  File \"/usr/lib/python3/site-packages/tockloader/tab.py\", line 40, in extract_app",
        "python.flasher_frame",
    ),
    (
        "**** Failed to open the serial port /dev/ttyUSB0 ****",
        "ide.monitor_open_failed",
    ),
    (
        "  at System.Linq.Enumerable.ToArray[TSource] (System.Collections.Generic.IEnumerable`1[T] source) [0x00021] in <13c0993ff>:0",
        "dotnet.frame",
    ),
    ("| nrf52840dk | PASS | __FAILED__ | PASS |", "markdown.table_fail"),
    ("assert rwble.c 300, param 00000000 00000000", "esp_bt.controller_assert"),
    (
        "ASSERT_PARAM(-218959118 0), in lld_pdu.c at line 1281",
        "esp_bt.controller_assert",
    ),
    (
        "build/app.elf section `.data' LMA [0000000000003e48,0000000000003f1f] overlaps section `.text' LMA [0000000000000000,0000000000003e5b]",
        "ld.script_layout",
    ),
    (
        "firmware.ld:52 cannot move location counter backwards (from 0000000020001000 to 0000000020000800)",
        "ld.script_layout",
    ),
    ("FAILED: bin/blinky.elf", "ninja.link_failed"),
    ("===DATA_ABORT===", "cpu.abort"),
    ("  DFSR: 0x00000805", "cpu.abort"),
    (
        "[ 42%] Building C object CMakeFiles/app.dir/src/main.c.obj",
        "build.progress",
    ),
    (
        "<err> radio: Network core has crashed, PC: 0x00012abc",
        "firmware.crashed_at_pc",
    ),
    (
        "> Process 'command '/usr/lib/jvm/java-17/bin/java'' finished with non-zero exit value 139",
        "gradle.process_signal",
    ),
    (
        "  thread 'main' panicked at 'executing riscv64-unknown-elf-gcc: Os { code: 2, kind: NotFound, message: \"No such file or directory\" }', build.rs:12:5",
        "process.spawn_not_found",
    ),
    (
        "error: failed to execute `arm-none-eabi-objcopy`: No such file or directory (os error 2)",
        "process.spawn_not_found",
    ),
    (
        "java.io.IOException: Cannot run program \"/opt/tools/avrdude\": error=2, No such file or directory",
        "process.spawn_not_found",
    ),
    (
        "arm-none-eabi-gcc: error: nosys.specs: No such file or directory",
        "gcc.specs_missing",
    ),
    (
        "Error: 215 41 jtag.c:1089 jtag_examine_chain(): JTAG scan chain interrogation failed: all zeroes",
        "openocd.debug_error",
    ),
    ("---| Fault Status |---", "tock.fault_status"),
    (
        "Kernel panic at /home/u/tock/kernel/src/process.rs:517:",
        "tock.kernel_panic",
    ),
    (
        "Guru Meditation Error: Core  0 panic'ed (unknown). Exception was unhandled.",
        "esp_idf.guru_unknown",
    ),
    (
        "/bin/sh: line 1: 4711 Segmentation fault      (core dumped) ./build/test_ring.out",
        "shell.test_crashed",
    ),
    (
        "Error[e46]: Undefined external \"uart_init\" referred in main ( main.r51 )",
        "iar.xlink_error",
    ),
    ("Error while running Linker", "iar.xlink_error"),
    (
        "arduino:avr-gcc@7.3.0 context deadline exceeded (Client.Timeout or context cancellation while reading body)",
        "net.client_timeout",
    ),
    (
        "FATAL ERROR: can't load west manifest: Malformed manifest file: /ws/app/west.yml",
        "west.manifest",
    ),
    (
        "multi_bluetooth/ble_gap_connect.py on ttyACM0|ttyACM1: FAIL",
        "micropython.multitest_failed",
    ),
    ("not ok 4 - i2c_read_register", "tap.not_ok"),
    ("case=spi_loopback passed=False elapsed=0.42", "result.passed_false"),
    (
        "\"src/board.c\", line 88: error #20: identifier \"GPIO_PIN_7\" is undefined",
        "ti.compile_error",
    ),
    (
        "Sketch uses 924 bytes (2%) of program storage space. Maximum is 32256 bytes.",
        "build.succeeded",
    ),
    ("error: no default toolchain configured", "rustup.not_installed"),
    ("- ERROR: Could not establish a connection to target.", "jlink.no_target"),
    (
        "regression_1018.2 FAILED first error at host/xtest/regression_1000.c:1384",
        "xtest.failed",
    ),
    ("regression_1018 FAILED", "xtest.failed"),
    (
        "fscanf.c:65: !!(f=writetemp(\"      42\")) failed (failed to make temp file)",
        "libc_test.failed",
    ),
    (
        "Unittest (12-find_line_segments.py).........................FAILED",
        "dot_leader.failed",
    ),
    (
        "avrdude stk500v2_getsync() error: timeout communicating with programmer",
        "avrdude.error",
    ),
    (
        "\"ERROR:/src/qemu/qom/object.c:363:object_initialize_with_type: assertion failed: (type != NULL)\"",
        "emulator.internal_assert",
    ),
    (
        "E/TC:? 0 User mode data-abort at address 0x0 (translation fault)",
        "cpu.abort",
    ),
    (
        "error: could not execute process `arm-none-eabi-gdb target/thumbv7m-none-eabi/debug/app` (never executed)",
        "cargo.never_executed",
    ),
    (
        "[Error] Infineon.DebuggerExceptions: It seems that JLink software is not installed please download from www.segger.com",
        "tool.software_not_installed",
    ),
    ("ERROR: Failed to prepare for programming.", "jlink.flasher_failed"),
    ("Failed to execute RAMCode for RAM check!", "jlink.flasher_failed"),
    (
        "ERROR: Timed out waiting for Arduino 101 on COM7",
        "upload.board_timeout",
    ),
    ("> picotool load blink.uf2 -f", "flash.context"),
    ("$ st-flash --reset write app.bin 0x8000000", "flash.context"),
    (
        "make: *** /opt/klipper/.config: Is a directory.  Stop.",
        "make.stop",
    ),
    (
        "..\\..\\internal\\config\\config.go:34:22: undefined: machine.UART0_TX_PIN",
        "go.compile_error",
    ),
    (
        "ERROR: cmsis-svd-0.4-r0 do_fetch: Fetcher failure: Unable to find revision f487b5ca in branch master even from upstream",
        "bitbake.fetch_failed",
    ),
    (
        "ERROR: Fetcher failure: Fetch command failed with exit code 4, output:",
        "bitbake.fetch_failed",
    ),
    ("29320 subtests of which 0 failed", "xtest.summary_passed"),
    ("687 test cases of which 3 failed", "xtest.summary_failed"),
    ("TESTSUITE PASSED!", "tfm.testsuite_passed"),
    ("TESTSUITE FAILED!", "tfm.testsuite_failed"),
    (
        "Test suite 'PSA protected storage NS interface tests (TFM_NS_PS_TEST_1XXX)' has FAILED",
        "tfm.suite_failed",
    ),
    (
        "* Test      Buttons: FAILED (Took 16584ms) Time exceeded without input on Left Button.",
        "selftest.item_failed",
    ),
    (
        "ERROR:root:Test 4 failed, expected packet not received (1 failures so far)",
        "script.test_failed",
    ),
    (
        "Exception: [Error 2] : No such file or directory",
        "scons.no_such_program",
    ),
    ("- ERROR: Erase failed", "jlink.flasher_failed"),
    (
        "- ERROR: Failed to auto program target",
        "jlink.flasher_failed",
    ),
    (
        "No Teensy boards were found on any USB ports of your computer.",
        "flash.no_bootloader",
    ),
    ("dfu-programmer: no device present.", "flash.no_bootloader"),
    (
        "Error: Bootloader not found. Trying again in 5s.",
        "flash.no_bootloader",
    ),
    ("*** Error unlocking FLASH ***", "pystlink.error"),
    (
        "Section .text, range 0x80001ac -- 0x800167c: MIS-MATCHED!",
        "gdb.compare_mismatch",
    ),
    (
        "avrdude: stk500v2_ReceiveMessage(): timeout",
        "avrdude.error",
    ),
    (
        "*    /_   /   MSP430 Flasher v1.3.7                          *",
        "msp430_flasher.banner",
    ),
    ("* Couldn't find any connected USB FETs!", "msp430.no_fet"),
    ("No unused FET found.", "msp430.no_fet"),
    (
        "verify..       4096/266307Found difference between flash and file!",
        "iceprog.verify_failed",
    ),
    (
        "stk500_getsync() attempt 10 of 10: not in sync: resp=0xc2",
        "flasher.not_in_sync",
    ),
    ("Error: sync: not synced", "flasher.not_in_sync"),
    ("Waiting for MCU, please cycle power: done", "stcgal.waiting"),
    ("Reset to bootloader mode ...", "cfloader.reset"),
    (
        "Switching to 9600 baud: Serial port error: read timeout",
        "stcgal.error",
    ),
    (
        "ERROR: Timeout waiting for ACK/NACK after 'Synch (0x55 0x55)'",
        "flasher.not_in_sync",
    ),
    (
        "Sector 1: .......................Error on writing block_CRC (1)",
        "lpc21isp.failed",
    ),
    (
        "[8:28:27 PM] INCOMPATIBLE BOOTLOADER VERSION",
        "flash.incompatible_bootloader",
    ),
    (
        "zsh: abort (core dumped)  ./sunxi-fel version",
        "shell.flasher_died",
    ),
    ("$ newt mfg create blinky 1", "newt.build_command"),
    ("$ newt load nrf52_boot", "newt.load_command"),
    ("src/usb.h:23: error 78: incompatible types", "sdcc.error"),
    (
        "#1  0x1005d2f2 in panic (fmt=0x100c194c \"Out of memory\")",
        "gdb.panic_frame",
    ),
    (
        "CORE: *** Invalid read address PC=1cc2 SP=08e4 O=918c Address 859e out of ram (08ff)",
        "simavr.crashed",
    ),
    (
        "\"Synchronous Abort\" handler, esr 0x96000000",
        "uboot.exception",
    ),
    (
        "Invalid Read @ 0x00000000 by insn @ rb_erase+0x122/0x3b4",
        "linux.arc_fault",
    ),
    ("potentially unexpected fatal signal 11.", "linux.arc_fault"),
    (
        "failed: smoke: starry qemu test failed for case `smoke`: QEMU timed out after 5s",
        "runner.qemu_timed_out",
    ),
    ("ERROR: Output timeout reached! (1800s)", "runner.qemu_timed_out"),
    ("  5 - tst_ofdm_mod_plain (Failed)", "ctest.failed_test"),
    ("monitor_test: OK (25 checks, 107s)", "checks.ok"),
    ("Error: Unable to locate sunxi-fel utility.", "script.tool_not_found"),
    (
        "Error: Couldn't find a working QEMU executable",
        "script.tool_not_found",
    ),
    (
        "16/4/2012 13:51:06: Verify code failed at 0x0. Read: 0xFF, Expected: 0x0A",
        "usbpicprog.failed",
    ),
    (
        "Debugger: ATMEL EDBG CMSIS-DAP ATML2127031800008888 02.01.0157 (S)",
        "edbg.debugger",
    ),
    (
        "[  657.946363] usb 1-1: usbfs: USBDEVFS_CONTROL failed cmd teensy_loader_c rqt 33 rq 9 len 1088 ret -110",
        "usbfs.flasher_control_failed",
    ),
    (
        "Fault writing memory (DMABSTRACTS = 08000302) (Execption executing Abstract Command) DMSTATUS: 004c0382",
        "minichlink.fault",
    ),
    (
        "Could not find appropriate platform for board id 5 (unknown).",
        "hackrf.incompatible",
    ),
    (
        "west build: error: argument -p/--pristine: invalid choice: 'none' (choose from 'auto', 'always', 'never')",
        "west.build_usage",
    ),
    (
        "west flash: error: argument -r/--runner: invalid choice: 'stlink'",
        "west.flash_usage",
    ),
    (
        "ERROR: for lab-slave-0  Cannot start service lab-slave-0: linux runtime spec devices: error gathering device information",
        "compose.service_failed",
    ),
    ("\"interrupts\":\"**fail**\"", "json.test_failed"),
    (
        "*** [.pioenvs/nodemcuv2_en/firmware.bin] ./builds/latest_en.bin: No such file or directory",
        "scons.target_error",
    ),
    (
        " *  Executing task: /opt/pico-sdk/picotool/picotool load build/app.elf -fx",
        "flash.context",
    ),
    ("INFO Successfully uploaded program.", "flash.verified"),
    (
        "root@embox:/#qemu: fatal: Trying to execute code outside RAM or ROM at 0xe824834b",
        "qemu.fatal",
    ),
    (
        "make[1]: [makefile:139: post-build] Error 1 (ignored)",
        "make.error_ignored",
    ),
    (
        "\"test\" - 0 Error(s), 0 Warning(s).",
        "build.succeeded",
    ),
    ("[100%] Built target MICROBIT_hex", "build.succeeded"),
    (
        "Program received signal SIGSEGV, Segmentation fault.",
        "gdb.fatal_signal",
    ),
    (
        "E/TC:0 0 Panic at core/arch/arm/mm/core_mmu.c:2114 <check_pa_matches_va>",
        "optee.panic",
    ),
    ("E/TC:0 0 TA panicked with code 0xffff0000", "optee.panic"),
    (
        "  File \"D:\\rt-thread\\components\\external\\cairo\\SConscript\", line 9",
        "python.build_script_frame",
    ),
    (
        "frdm_k64f   tests/kernel/queue/kernel.queue.poll   FAILED: timeout",
        "twister.failed_timeout",
    ),
    ("TOTAL FAILED    : 0", "psa.none_failed"),
    ("TOTAL FAILED    : 3", "psa.failed"),
    ("FAIL: test_chord (tests.test_combos.TestCombo)", "unittest.case_failed"),
    ("ERROR: test_open (tests.test_port.TestPort)", "unittest.case_failed"),
    ("There was 1 failure:", "xunit.there_were_failures"),
    (
        "44/71 Test #44: mbed-platform-error-handling ...................   Passed    6.97 sec",
        "ctest.passed",
    ),
    (
        "/bin/sh: arm-none-eabi-gcc: Kommando nicht gefunden.",
        "shell.not_found_translated",
    ),
    (
        "make[1]: arm-none-eabi-gcc: Befehl nicht gefunden",
        "shell.not_found_translated",
    ),
    (
        "bash: arm-none-eabi-gcc : commande introuvable",
        "shell.not_found_translated",
    ),
    (
        "make[1]: *** [../common/Makefile.common:90: obj/version.o] Fehler 127",
        "make.error_127",
    ),
    (
        "    Please install the following missing utilities: makeinfo,chrpath",
        "bitbake.missing_utilities",
    ),
    (
        "libsdl-native is set to be ASSUME_PROVIDED but sdl-config can't be found in PATH. Please either install it.",
        "bitbake.missing_utilities",
    ),
    (
        r#"FATAL ERROR: no west workspace found from "/workdir"; "west update" requires one."#,
        "west.no_workspace",
    ),
    (
        r#"ERROR: extension command "build" could not be run: could not import /src/zephyr/scripts/west_commands/build.py."#,
        "west.build_unloadable",
    ),
    (
        "west: error: argument <command>: invalid choice: 'build' (choose from 'init', 'update')",
        "west.no_workspace",
    ),
    ("Summary: 7 tasks failed:", "bitbake.tasks_failed"),
    (
        "2020-04-30 08:25:26: Internal Error: Exception handling process abandoned.",
        "mono.unhandled",
    ),
    (
        "[ERROR] FATAL UNHANDLED EXCEPTION: System.Reflection.TargetInvocationException: Exception has been thrown",
        "mono.unhandled",
    ),
    (
        "arm-none-eabi-gcc.exe: error: .build/obj_pro/lib/printf/printf.o: No such file or directory",
        "gcc.missing_link_input",
    ),
    ("DP write failed", "arm_debug.port_failed"),
    (
        "Could not access Debug challenge interface",
        "arm_debug.port_failed",
    ),
    (
        "humility flash failed: Flash loading failed Flash(NoSuitableNvm { start: 134250496 })",
        "humility.flash_failed",
    ),
    ("ERROR No response from the ESP", "esphome.ota_failed"),
    (
        "ERROR Error receiving acknowledge receive OK: timed out",
        "esphome.ota_failed",
    ),
    ("21:42:25: reboot error", "teensy.loader_failed"),
    (
        "21:42:25: offline failed, timeout after 50",
        "teensy.loader_failed",
    ),
    (">> Micronucleus done. Thank you!", "flash.verified"),
    ("+++ killed by SIGSEGV +++", "strace.killed_by_signal"),
    (
        "PANIC: unprotected error in call to Lua API (application.lua:122: bad argument #2 to 'write')",
        "nodemcu.lua_panic",
    ),
    (
        " 6 packrat     0   1 FAULT: reply fault: task id #0/gen0, reason UndefinedOperation",
        "hubris.task_fault",
    ),
    (
        "09:23:14 + echo 'Timed out waiting for QEMU, exiting'",
        "script.boot_wait_timeout",
    ),
    (
        "11:21:53:481 : Error: failed to download Segment[0]",
        "stm32cube.error",
    ),
    (
        "| aarch64-poky-linux-ld.bfd: cannot find libgcc.a: No such file or directory",
        "ld.error",
    ),
    (
        "[IO WorkQueue(2:2)]: ASSERTION FAILED: handler",
        "kernel.assertion_failed",
    ),
    (
        "nonce2key test                          [ FAIL ] x",
        "status_list.failed",
    ),
    (
        "| NRF51_DK-GCC_ARM | NRF51_DK | tests-rtos-mutex | tests-rtos-mutex | 0 | 1 | ERROR  | 32.77 |",
        "markdown.table_fail",
    ),
    (
        "scripts/target/efm32s2.cfg:8: Error: Can't find target/swj-dp.tcl",
        "openocd.script_error",
    ),
    (
        ".lto-tmp/ccWj7t00.s:193: Error: invalid offset, value too big (0x000004CC)",
        "lto.assembler_error",
    ),
    (
        "Error: The program size (123796 bytes) is greater than maximum allowed (64512 bytes)",
        "platformio.program_too_big",
    ),
    (
        r#"ERROR: No new tasks can be executed since the disk space monitor action is "STOPTASKS"!"#,
        "bitbake.disk_monitor",
    ),
    (
        "#5 ERROR: failed to register layer: write /opt/x/libc.a: no space left on device",
        "host.no_space",
    ),
    ("Internal watchdog timer expired.", "circuitpython.watchdog"),
    ("0> hard fault on thread: moto_thr", "rt_thread.hard_fault"),
    (
        "Last software reset at 2021-06-17 21:14, reason: AssertionFailed, none spinning, available RAM 9264, slot 2",
        "reprapfirmware.reset_assert",
    ),
    (
        "Last software reset at 2023-10-29 11:07, reason: HardFault invState, Gcodes spinning, available RAM 4516",
        "reprapfirmware.reset_fault",
    ),
    (
        "Failed on chip setup: Ep(04). Cannot halt processor.",
        "redlink.cannot_halt",
    ),
    ("Cannot halt processor", "redlink.cannot_halt"),
    (
        "Failed on connect: Ee(42). Could not connect to core.",
        "redlink.cannot_halt",
    ),
    ("No connection to chip's debug port", "redlink.cannot_halt"),
    (
        "Error: Error reported by server (redlinkserv.exe):",
        "redlink.cannot_halt",
    ),
    (
        "LinkServer has been terminated and will be restarted.",
        "redlink.cannot_halt",
    ),
    (
        "MSP430: Trouble Writing Memory Block at 0xfffe on Page 0 of Length 0x2: Could not write device memory",
        "ti_debug.error",
    ),
    ("Cannot write to target", "ti_debug.error"),
    (
        "ERROR: invalid family argument, a problem with your device, or nrfjprog may",
        "nrfjprog.error",
    ),
    ("Error in initializing ST-LINK device.", "stlink_gdb.init_failed"),
    ("Reason: No device found on target.", "stlink_gdb.init_failed"),
    (
        "Could not fetch memory size of target devkit: Error: Error occured when get library info. Errorcode: CouldNotOpenDevice (0x4) Lowlevel error: Unknown value (fffffffa)",
        "nrf_programmer.error",
    ),
    ("Error in final launch sequence:", "eclipse.launch_failed"),
    ("Download verified successfully", "flash.verified"),
    ("Device programming completed.", "flash.verified"),
    (
        "[INFO   ] CRC check passed. Binaries successfully loaded.",
        "flash.verified",
    ),
    ("Memory Usage on Teensy 4.1:", "build.succeeded"),
    (
        r#"assertion "heap != NULL && "free() target pointer is outside heap areas"" failed: file "heap_caps.c", line 268, function: heap_caps_free"#,
        "libc.assert",
    ),
    (
        "Writing at 0x0000b400... (9 %)Traceback (most recent call last):",
        "python.traceback",
    ),
    ("Assertion failed!", "crt.assert"),
    (
        "[160/160] Linking C executable zephyr/zephyr.elf",
        "build.last_step",
    ),
    (
        "[193/193] Linking C static library libthreadx.a",
        "build.last_step",
    ),
    ("-- west flash: using runner nrfutil", "west.runner_started"),
    (
        "E           FileNotFoundError: [Errno 2] No such file or directory: '/dev/ttyUSB100'",
        "serial.missing_device",
    ),
    (
        "controller/test/sensor_tests/SensorTests.cpp:147: Failure",
        "gtest.failure",
    ),
    (
        "test_foo.c:75 test_that_fails:FAIL:Function some_mock. Called fewer times than expected",
        "unity.fail",
    ),
    (
        "ERROR:   Unhandled External Abort received on 0x81000000 from EL3",
        "tf_a.exception",
    ),
    (
        "ERROR:   Excepton received on 0x81000000, spsr_el3:620002cd,reason:0 esr_el3:0xbe000411",
        "tf_a.exception",
    ),
    ("#0  0x100002c4 in isr_hardfault ()", "backtrace.fault_handler"),
    ("0: HardFaultTrampoline", "backtrace.fault_handler"),
    ("0: 0x000015b0 @ HardFaultTrampoline", "backtrace.fault_handler"),
    ("2) No connection open", "robot.no_connection"),
    (
        "2023-05-02 10:11:12 UTC [REMOTE_INFO] Test Result: FAIL!",
        "sof_test.result_fail",
    ),
    ("2023-05-02 10:11:12 UTC [INFO] Test Result: PASS!", "sof_test.result_pass"),
    (
        "make flash Info : flash size = 512 KiB ** Programming Finished ** ** Verified OK ** ** Resetting Target **",
        "flash.done_mid_line",
    ),
    ("Starting download: [#########################] finished!", "flash.done_mid_line"),
    ("Transfer rate: 32 KB/sec, 1024 bytes/write.", "flash.done_mid_line"),
    (
        "Sketch uses 924 bytes (2%) of program storage space. avrdude: verification error, first mismatch at byte 0x0000 0x0c != 0xff",
        "avrdude.mismatch_mid_line",
    ),
    (
        "openocd: error while loading shared libraries: libhidapi-hidraw.so.0: cannot open shared object file: No such file or directory",
        "loader.missing_library",
    ),
    (
        "--- Error: failed to execute 'C:\\Keil\\ARM\\ARMCC\\bin\\ArmCC'",
        "keil.tool_missing",
    ),
    ("^CTraceback (most recent call last):", "user.interrupted_script"),
    (
        "[10:02:03][E][esp32.crash:437]:   Reason: Interrupt wdt",
        "esphome.crash_reason_watchdog",
    ),
    (
        "[10:02:03][E][esp32.crash:432]: *** CRASH DETECTED ON PREVIOUS BOOT ***",
        "esphome.crash_detected",
    ),
    ("Timed out looking for Arming checks disabled", "autotest.timed_out"),
    ("ERROR: mismatch at 4400 (read 3f, expected ff)", "mspdebug.verify_mismatch"),
    (
        "Error flashing the sketch:Internal Server Error",
        "arduino_ota.flash_failed",
    ),
    ("Flash command rejected. Aborting.", "bootloader.command_rejected"),
    ("code.py output:", "circuitpython.code_output"),
    ("2024-02-11 09:00:01 ERROR 404: Not Found.", "wget.http_error"),
    (
        "Panic core_esp8266_main.cpp:137 void setup(): Assertion 'ready' failed.",
        "libc.assert",
    ),
    ("Build Failed", "waf.task_failed"),
    ("Assert: len <= MAX_LEN src/queue.c Line 42", "cocoos.assert"),
    ("Tests run: 4 Successful: 4 Failed: 0", "arduinounit.summary_pass"),
    ("Tests run: 4 Successful: 3 Failed: 1", "arduinounit.summary_fail"),
    (
        "FATAL ERROR: command exited with status 27: nrfutil device program --firmware app.hex",
        "west.flash_failed",
    ),
    (
        "clang: error: ld.lld command failed with exit code 1 (use -v to see invocation)",
        "ld.collect2",
    ),
    (
        "make: *** No targets specified and no makefile found.  Stop.",
        "make.no_makefile",
    ),
    ("********** FBT ERRORS **********", "fbt.errors"),
    ("Truncated register 37 in remote 'g' packet", "gdb.truncated_register"),
    (
        "Error: CouldNotOpenDLL (0x7) Lowlevel error: JLINKARM_DLL_NOT_FOUND (ffffff9c)",
        "nordic.jlink_dll_missing",
    ),
    ("Board at /dev/ttyUSB0 is not available", "flasher.failed"),
    ("failed set isp key, wrong reply, got 9a (exp 0)", "flasher.failed"),
    ("Starting download: [dfu_download error -32", "flasher.failed"),
    ("Error during download", "flasher.failed"),
    ("Error:  couldn't write MPSSE commands to FT2232", "flasher.failed"),
    (
        "[10:00:00] An error occurred while writing EEPROM. The contained exception was:",
        "flasher.failed",
    ),
    (r#"Device is in use by "usbhid" driver"#, "flasher.failed"),
    ("*** Operation timeout ***", "pystlink.starred_error"),
    ("python3 tools/flash_board.py --port /dev/ttyACM0", "flash.context"),
    ("board-tools $ python flashSTM32.py", "flash.context"),
    (
        r"PS C:\fw\tools> python pystlink.py flash:erase:verify:app.bin",
        "flash.context",
    ),
    (
        "ERROR:../qemu-7.2/softmmu/cpus.c:500:qemu_mutex_lock_iothread_impl:  assertion failed: (!qemu_mutex_iothread_locked())",
        "emulator.internal_assert",
    ),
    (
        "assertion irq < 16 failed in src/x86_64/apic.c: apic_init() on line 80; halt",
        "nanos.assert",
    ),
    ("System crashed, registers:", "vesc.crash"),
    ("Erase-Write-Verify test done.", "zephyr.flash_test_done"),
    (
        "error: daemon error: connection reset by peer",
        "build_daemon.stream_error",
    ),
    (
        "esptool.py write_flash: error: argument <address> <filename>: [Errno 2] No such file or directory: 'app.bin'",
        "esptool.usage_error",
    ),
    (
        "Failed to resolve component 'sensor_drv' required by component 'main':",
        "esp_idf.component_unresolved",
    ),
    (r#""fail_count": 2,"#, "json.fail_count"),
    (
        "k64f           Flash Test           Fail           12.300",
        "pyocd.test_table_fail",
    ),
    (
        "FATAL [main] (Simulator.java:210) - Could not load simulation",
        "java.fatal_log",
    ),
    (
        "Target Device ID (0x0) is an Invalid Device ID. Please check your connections to the Target Device.",
        "flasher.step_reported_failed",
    ),
    ("Error writing firmware...Timeout", "flasher.step_reported_failed"),
    ("atmel.c:512: atmel_flash failed.", "flasher.step_reported_failed"),
    (
        "dfu-util: unable to read DFU status after completion",
        "dfu_util.error",
    ),
    ("#0  0x08000a3c in Default_Handler ()", "backtrace.fault_handler"),
    (
        ">avrdude: stk500_getsync() attempt 3 of 10: not in sync: resp=0x00",
        "avrdude.error",
    ),
    (
        "Creating load file for Flash: .build/crkbd_rev1_default.hex                [OK]",
        "build.succeeded",
    ),
    (
        "up_assert: Assertion failed at file:sched/sem_wait.c line: 97 task: work",
        "nuttx.assert",
    ),
    (
        "No match found for 'login:' in 30 seconds. Output:",
        "robot.read_timeout",
    ),
    (
        "TargetTest::K64F::GCC_ARM::MBED_A21::Call function before main [TIMEOUT] in 15.03 of 15 sec",
        "mbed.singletest_timeout",
    ),
    (
        "TargetTest::K64F::GCC_ARM::MBED_A9::Serial Echo TX RX [FAIL] in 3.21 of 20 sec",
        "mbed.singletest_failed",
    ),
    (
        "TargetTest::K64F::GCC_ARM::MBED_A1::Basic [OK] in 1.34 of 20 sec",
        "mbed.singletest_ok",
    ),
    (
        "2021-03-02 10:00:01.000      INFO   [failed] - tests.py::test_07_reboot - (12.000s)",
        "pytest.summary_case_failed",
    ),
    (
        "2021-03-02 10:00:01.000      INFO   [passed] - tests.py::test_01_boot - (0.500s)",
        "pytest.summary_case_passed",
    ),
    ("Test sets failed: 1", "test_sets.failed"),
    ("WARN - Deadline exceeded!", "teleprobe.deadline"),
    (
        "Writing firmware to the receiver ... failed!",
        "flash.step_failed",
    ),
    ("SWD scan failed!", "flasher.no_target"),
    (
        "Last page at 0x0803ffff is not writeable",
        "flasher.no_target",
    ),
    ("Error occurred: Could not connect to the target device.", "jlink.no_target"),
    ("Erase/write done.", "flash.verified"),
    (
        "Info: openocd.c:84 main(): Open On-Chip Debugger (2007-01-31 12:00 CET)",
        "flash.context",
    ),
    ("esptool.py v4.5.1", "flash.context_esptool"),
    (
        "!! A panic occurred in 'src/bin/main.rs', at line 42, column 5",
        "esp_backtrace.panic",
    ),
    (
        r#""Error[Li006]: duplicate definitions for "init"; in "a.o", and "b.o""#,
        "iar.link_error",
    ),
    (
        r#""lib/driver.lib<uart.o>" has a Tag_ABI_VFP_args attribute value of "2" that is different than one previously seen ("0"); combining incompatible files"#,
        "ti.abi_mismatch",
    ),
    (
        "arm-none-eabi-objcopy: build/app.hex 64-bit address 0x2000000008000000 out of range for Intel Hex file",
        "objcopy.error",
    ),
    (
        "build github.com/user/blinky: cannot find package \"machine\"",
        "go.build_failed",
    ),
    (
        "fatal: remote error: upload-pack: not our ref 1111111111111111111111111111111111111111",
        "git.remote_error",
    ),
    (
        "tools/build.rb:12:in `check': Could not find avr-gcc in PATH (RuntimeError)",
        "script.tool_not_in_path",
    ),
    ("zsh: segmentation fault  ./flash.sh", "shell.program_died"),
    (
        "[07:00:01.000][E][esp8266:186]:   Reason: Hardware WDT",
        "esphome.crash_reason_watchdog",
    ),
    (
        "Regression-Suite.Boot Menu Works                                  | FAIL |",
        "robot.case_fail",
    ),
    (
        "Error during install: Cannot install tool esp32:esp32-arduino-libs@3.0: testing local archive integrity: testing archive size: fetched archive size differs",
        "arduino_cli.archive_corrupt",
    ),
    (
        "`build_for_test_with_configuration': wrong number of arguments (given 3, expected 4) (ArgumentError)",
        "ruby.exception",
    ),
    (
        "arm-none-eabi-gcc: error: CreateProcess: No such file or directory",
        "gcc.createprocess",
    ),
    ("ERROR: libclang not found!", "script.library_not_found"),
    (
        "error: No target memory available for section \".code\".",
        "gplink.no_memory",
    ),
    (
        "Number of examples that failed to build: 52",
        "contiki.examples_failed",
    ),
    (
        "scripts/nrf52-pi/swd-pi.ocd:13: Error: Can't find target/nrf52.cfg",
        "openocd.script_error",
    ),
    (
        "in procedure 'sflash_init' called at file \"sflash_write.tcl\", line 262",
        "openocd.tcl_trace",
    ),
    ("Writing target memory failed.", "flasher.write_failed"),
    (
        "JLinkARM.dll OpenEx returned error 'Communication timed out - Can not execute firmware update'.",
        "jlink.dll_error",
    ),
    ("Fail to verify chunk @ 0 error: f5 00", "flasher.write_failed"),
    ("Cannot get bus. : |", "flasher.write_failed"),
    (
        "15:19:54 [ERROR]: Bad Answer: ERR: ERROR[4]: Not Enough Space",
        "espota.bad_answer",
    ),
    (
        "Download\t[                         ]   0%            0 bytes failed!",
        "dfu_util.download_failed",
    ),
    (
        "Failed programming: uploading error: exit status 1",
        "arduino.upload_failed",
    ),
    ("14:48:45 : Memory Programming ...", "stm32cube.gui_context"),
    ("  14:48:45 : Error: Parsing fail", "stm32cube.gui_error"),
    (
        "python uartprogram OpenBK7231N_QIO_1.7.1.bin --unprotect -d com5 -w --startaddr 0x0",
        "flash.context",
    ),
    ("scons: done building targets.", "build.succeeded"),
    (
        "Finished: 0 information, 1 warning and 0 error messages.",
        "build.succeeded",
    ),
    (
        "Failed building build/f7-firmware-D/toolbox/version.inc.h: Error 1",
        "scons.failed_building",
    ),
    (
        "<cmdline>:5(column 0): Invalid accepter port name/number 'telnet(rfc2217,mode=server),36099': Invalid data to parameter",
        "ser2net.config_error",
    ),
    ("MD5 verified: 54fc0d58ac78dde34e974051cd70e03b", "flash.verified"),
    ("Finished building target: Project.elf", "build.succeeded"),
    (
        "ERROR: cannot verify developer.arm.com's certificate, issued by 'CN=GlobalSign RSA OV SSL CA 2018':",
        "host.tls_failed",
    ),
    (
        "The 'gn' command was not found.  Make sure you have GN installed.Or have",
        "script.command_not_found",
    ),
    (
        "python3: can't open file '/opt/megaavr/tools/prog.py': [Errno 2] No such file or directory",
        "python.script_missing",
    ),
    (
        "Compiling the C compiler identification source file \"CMakeCCompilerId.c\" failed.",
        "cmake.compiler_check_failed",
    ),
    (
        "[ERROR]  >>  Build failed in step 'Retrieving needed toolchain components' tarballs'",
        "crosstool_ng.fetch_failed",
    ),
    (
        "[ERROR]  >>  Build failed in step 'Installing pass-2 core C gcc compiler'",
        "crosstool_ng.build_failed",
    ),
    (
        "Error initializing package manager: cannot initialize package manager: loading hardware packages",
        "arduino_cli.package_manager",
    ),
    ("Test name: LoggerApiTest::testGetVersion", "cppunit.test_name"),
    (
        "Run: 130   Failure total: 2   Failures: 2   Errors: 0",
        "cppunit.failures",
    ),
    ("<summary>Failed 18 of 2645 tests</summary>", "tests.failed_of"),
    (
        "`Ninja: error: 'src/complete.c', needed by 'obj/complete.o', missing and no known rule to make it",
        "ninja.error",
    ),
    (
        "user@host:~/nrf52-hal$ cargo flash --release --chip nrf52840 --example blinky",
        "flash.context",
    ),
    (
        "    Flashing /home/user/app/target/thumbv7em-none-eabihf/release/examples/blinky",
        "flash.context",
    ),
    (
        "  [cause]: Error: unable to get local issuer certificate",
        "host.tls_failed",
    ),
    (
        r"Program: C:\qemu\qemu-system-arm.exe",
        "emulator.crt_program",
    ),
    ("Error writing block 0 of 1", "proxmark.flash_failed"),
    ("Resetting hardware...", "proxmark.resetting"),
    ("firmware_flasher.js:382 File loaded", "js_flasher.context"),
    (
        "test 'mbed-drivers-test-cstring' ........................ FAIL in 1.39 sec",
        "greentea.test_failed",
    ),
    (
        "- [tests/malloc](tests/malloc/test.failed)",
        "riot.test_failed_list",
    ),
    (
        "avrdude: stk500_getsync(): not in sync: resp=0x00",
        "avrdude.error",
    ),
    (
        "UserSideException: Please install Git client from https://git-scm.com/downloads",
        "platformio.install_program",
    ),
    ("bash: 行 3: dtc: 未找到命令", "shell.not_found_translated"),
    (
        "main.html#progressbar:1 Error in response to usb.getDevices: Error: Invocation of form usb.getDevices(undefined, function) doesn't match",
        "chrome.api_error",
    ),
    ("Error: failed to erase memory", "stm32cube.error"),
    ("Error in STM32CubeProgrammer", "stm32cube.transfer_failed"),
    (
        "ERROR: [ Worker] - Address 0x00100000 does not map to a known memory.",
        "nrfjprog.error",
    ),
    ("ihex: parse error line 8193", "teensy.error"),
    (
        "#10010 errors encountered during linking; \"app.out\" not built",
        "vendor.link_error",
    ),
    (
        "unresolved symbol _compare, first referenced in ./dssver.obj",
        "vendor.link_error",
    ),
    (
        "  (inlined by) task_wdt_isr at /COMPONENT_ESP_SYSTEM_DIR/task_wdt/task_wdt.c:509",
        "esp_idf.watchdog_frame",
    ),
    ("idf_tools.py installation failed", "platformio.install"),
    (
        "EngineState: Last boot had hard fault type: 3 addr: 0 CSFR: 10000",
        "firmware.last_boot_fault",
    ),
    (
        "FAIL:Function func_using_foo_init.  Called more times than expected.",
        "cmock.call_count",
    ),
    (
        "tests/dashboard/test_web_server.py .F                                    [  7%]",
        "pytest.progress_failed",
    ),
    ("TIMEOUT - test case too long or hung? (last test started: regression_1006)", "optee.check_timeout"),
    (
        "test tests::test_huge_buffer ... ERROR ====================== PANIC ======================",
        "libtest.case_failed",
    ),
    (
        "WindowsError: [Error 2] The system cannot find the file specified:",
        "python.windows_program_not_found",
    ),
    (
        "'cmake' must be available on the PATH to use /home/u/esp/esp-idf/tools/idf.py",
        "wrapper.program_not_on_path",
    ),
    (
        "'nmake' n’est pas reconnu en tant que commande interne",
        "cmd.not_recognized",
    ),
    ("Failed to open port: 0483:df11", "stm32flash.error"),
    (
        "C:\\p\\LIBvpx\\libvpx.a: error adding symbols: File format not recognized",
        "ld.bad_format",
    ),
    ("Success 0    Failure 1", "uuu.failure"),
    ("2:7      1/ 0 [Failure open usb device               ]", "uuu.failure"),
    ("Writing sector 65536 failed!", "bk7231.write_failed"),
    ("ERROR [esphomeyaml.espota] No Result!", "espota.error"),
    ("Could not find the program ['arm-none-eabi-ar']", "waf.program_not_found"),
    (
        "kernel: watchdog: BUG: soft lockup - CPU#1 stuck for 45s! [rtcwake:72543]",
        "linux.lockup",
    ),
    ("INFO: task kworker/0:1:42 blocked for more than 120 seconds.", "linux.lockup"),
    ("LFS assert: head >= 2 && head <= lfs->cfg->block_count", "littlefs.assert"),
    ("Test exampleTest2 failed.", "aunit.test_failed"),
    ("AUnitPlatformIO.ino:12: Assertion failed: (3) == (2).", "arduinounit.assertion"),
    (
        "TestRunner summary: 1 passed, 1 failed, 0 skipped, 0 timed out, out of 2 test(s).",
        "arduinounit.summary_fail",
    ),
    (
        "TestRunner summary: 2 passed, 0 failed, 0 skipped, 0 timed out, out of 2 test(s).",
        "arduinounit.summary_pass",
    ),
    (
        "CMake Error: Error required internal CMake variable not set, cmake may not be built correctly.",
        "cmake.error",
    ),
    (
        "Error: VCS: `git` client is not installed in your system",
        "platformio.install_program",
    ),
    ("rst:0x8 (TG1WDT_SYS_RST),boot:0x2a (SPI_FAST_FLASH_BOOT)", "esp.watchdog_reset"),
    (" Watchdog Reset", "esp.watchdog_reset"),
    ("[SUCCESS] Took 57.97 seconds", "build.succeeded"),
    ("[ERROR] Took 1.63 seconds", "platformio.env_failed"),
    (
        "'xtensa-lx106-elf-gcc' não é reconhecido como um comando interno",
        "cmd.not_recognized",
    ),
    ("picotool load blink.uf2 -f", "flash.context"),
    // Round 42.
    (" 1/29 Test  #1: test_parse .......................Child aborted***Exception:   0.15 sec", "ctest.failed"),
    ("INFO    - 3) drivers.timer.system_clock on qemu_rx/r5f562n8 (zephyr/gnu) failed (Timeout)", "twister.issue_timeout"),
    ("INFO    - 1) kernel.common on qemu_x86 (zephyr/gnu) failed (Failed)", "twister.issue_failed"),
    ("DEBUG   - QEMU (2771557) complete (passed) after 2.0869383811950684 seconds", "twister.qemu_passed"),
    ("mbedgt: test suite results: 1 IOERR_SERIAL", "greentea.ioerr_summary"),
    ("1. /home/u/wakaama/tests/tlv_json_lwm2m_data_test.c:113  - CU_ASSERT_EQUAL(original_length,length)", "cunit.failure"),
    ("[init -> depot_autopilot]  test-timer                      failed   4300.890  timeout 30 sec", "genode.test_timeout"),
    ("[init -> depot_autopilot]  test-rtc                        failed   12.5  log", "genode.test_failed"),
    ("curl: (60) SSL certificate problem: certificate has expired", "curl.failed"),
    ("ERROR: Toolchain download failed", "download.not_fetched"),
    ("[mbed] ERROR: Download failed!", "download.not_fetched"),
    ("**manifest unknown**", "download.not_fetched"),
    (">>> Downloading successful, but checksum doesn't match. Calculated: 40069cec", "download.not_fetched"),
    ("ERROR: Analysis of target '//:hello' failed; build aborted: no such package 'tools/arm_compiler'", "bazel.analysis_failed"),
    ("ERROR: /src/fw/BUILD:7:1: every rule of type cc_binary implicitly depends upon the target '//tools:cc', but this target could not be found", "bazel.analysis_failed"),
    ("WARNING No board named 'nrf52840dk_nrf52840' found.", "zephyr.no_board"),
    ("(code 0x04000000, par16 0x0000 par64 0x0b0be50300004e20) -> DEBUG: tag00 + RESTARTED after FATAL error", "firmware.restarted_after_fatal"),
    (" 212320    5560   40868  258748   3f2bc ./obj/main/inav_REVO.elf", "build.size_report"),
    ("The device was asked to reboot back into application mode.", "flash.verified"),
    ("Der Fehler lautet: avrdude: stk500_recv(): programmer is not responding", "avrdude.error"),
    ("stk500_getsync() attempt 1of 10: not in sync: resp=0x00", "flasher.not_in_sync"),
    ("../../fido2/apdu.o: file not recognized: file format not recognized", "ld.bad_format"),
    ("FAILED: CMakeFiles/app.dir/src/main.c.obj", "ninja.step_failed"),
    // Round 43.
    ("RSA      test failed!", "wolfcrypt.test_failed"),
    ("AES      test passed!", "wolfcrypt.test_passed"),
    ("- modbus_read_registers at special address: FAILED", "libmodbus.test_failed"),
    ("[DebugBreakpoint] exception in 0.26s", "gdbserver_py.test_failed"),
    ("BUILD SUMMARY", "waf.build_summary_header"),
    ("link error, nothing connected to linker", "minichlink.no_chip"),
    ("Image written.", "flash.verified"),
    ("Awaiting neorv32_exe.bin... ERROR_SIGNATURE", "neorv32.upload_error"),
    ("Error: ... fail (status = 0x54)", "btl_host.failed"),
    ("*** Unexpected exception ***", "uboot.unexpected_exception"),
    ("*** PANIC ***", "pico_sdk.panic"),
    ("[Error | miralis] Panicked at PanicInfo {payload: Any { .. }, ", "rust.panic_info"),
    ("Integer divide by zero", "cpu.divide_by_zero"),
    ("cortex_m_rt::default_handler::h09ef7fbcd51f80a2 (ef=0x20004e00)", "cortex_m_rt.default_handler"),
    ("[ERROR] Emulation stopped using just the prefix input (10: Invalid instruction (UC_ERR_INSN_INVALID))", "unicorn.fault"),
    ("Failed to execute tool: objcopy", "cargo_binutils.no_tool"),
    ("toolchain.inc:174: The coreboot toolchain for 'x86_32' architecture was not found.", "coreboot.no_toolchain"),
    ("ERROR: This picotool version (2.1.2-develop) is not compatible with SDK versions <=2.1.1 - you must manually build & install picotool version 2.1.1", "pico_sdk.picotool_version"),
    ("tensorflow/lite/micro/tools/make/targets/apollo3evb_makefile.inc:14: *** Something went wrong with the GCC download: Bad checksum. Expected: bc8a, Got: e588.  Stop.", "make.download_checksum"),
    ("fatal: clone of 'git://git.kernel.org/pub/scm/linux/kernel/git/stable/linux-stable.git' into submodule path '/src/linux-stable' failed", "git.submodule_clone"),
    // Round 44.
    ("Memtest KO", "litex.memtest_failed"),
    ("Memtest failed: 8191/532480 words incorrect", "litex.memtest_failed"),
    ("ERROR_EXCEPTION 0x00000002 0x00000000 0xf14020f3 0x00000000", "neorv32.exception"),
    ("tup error: Failed to find directory ID for dir './output/distortos.elf' relative to 1", "tup.error"),
    (" *** tup: 1 job failed.", "tup.jobs_failed"),
    ("Guru Meditation Error: Core  1 panic'ed (Double exception). ", "esp_idf.double_exception"),
    ("zig build-exe STM32F429.minimal Debug thumb-freestanding-none: error: the following command terminated unexpectedly:", "zig.step_failed"),
    ("[cmake]   PICO_PLATFORM is specified to be 'rp2350', but PICO_BOARD='pico_w' uses", "pico_sdk.platform_mismatch"),
    ("idf_export_main:33: no such file or directory: /Users/u/esp/esp-idf/tools/idf_tools.py", "shell.function_script_missing"),
    ("Unknown MCU type \"imxrt1062\"", "teensy_loader.unknown_mcu"),
    ("Running `espflash --monitor target/riscv32imc-esp-espidf/debug/input`", "flash.context"),
    // Round 45.
    (
        "js: \"C:/ti/app/main.cfg\", line 125: xdc.services.global.XDCException: xdc.PACKAGE_NOT_FOUND: can't locate the package 'ti.mw.fatfs' along the path",
        "xdc.exception",
    ),
    ("gmake.exe: *** [package/cfg/main_pem4.xdl] Error 1", "make.error"),
    ("mingw32-make[1]: *** [all] Error 2", "make.error"),
    ("<error > HardFault:", "cortex_m.fault_banner"),
    ("SCB->CFSR   0x01000000", "cortex_m.fault_status"),
    (" ERROR: the arm toolchain program armcc could not be found.", "yotta.toolchain_missing"),
    ("Error: Program \"make\" not found in PATH", "eclipse.program_missing"),
    ("Cannot run program \"make\": Launching failed", "eclipse.program_missing"),
    (
        "Failed to get index for device name 'RA6M5'.GDBServer will be closed... Shutting down...",
        "jlink.gdbserver_closed",
    ),
    ("fet: open failed", "mspdebug.fet_failed"),
    ("fet: FET returned error code 4 (Could not find device or device not supported)", "mspdebug.fet_failed"),
    (
        "* Driver      : closed (Could not find device (or device not supported))",
        "msp430_flasher.driver_error",
    ),
    ("ERROR: the arm gcc program arm-none-eabi-gcc could not be found", "yotta.toolchain_missing"),
    ("E:    mepc: 0000000080001234", "zephyr.riscv_esf"),
    ("[00:00:00.010,000] <err> os:    mepc: 2fc012da", "zephyr.riscv_esf"),
    (
        "error: Your local changes to the following files would be overwritten by checkout:",
        "git.untracked_overwritten",
    ),
    (
        "west: unknown command \"build\"; do you need to run this inside a workspace?",
        "west.no_workspace",
    ),
    ("gmake: *** No rule to make target 'all'.  Stop.", "make.stop"),
    ("* Driver : closed (Internal error)", "msp430_flasher.driver_error"),
    ("E:    mepc: 2fc012da", "zephyr.riscv_esf"),
    (
        "seL4 failed assertion 'cap_get_capType(cap) == cap_frame_cap' at src/object/objecttype.c:412 in function deriveCap",
        "sel4.assertion",
    ),
    (
        "seL4 called fail at boot_sys.c:722 in function boot_sys, saying \"boot_sys failed for some reason :(",
        "sel4.fail",
    ),
    (
        "error: The following untracked working tree files would be overwritten by checkout:",
        "git.untracked_overwritten",
    ),
    ("Error: ImageUpload unexpected error after 0/90644 bytes", "mcumgr.upload_failed"),
    ("testhal/NRF51: 8 builds ok, 0 builds failed", "chibios.builds_ok"),
    ("demos/STM32: 12 builds ok, 2 builds failed", "chibios.builds_failed"),
    (
        "<details><summary>Failed tests (13)</summary>GATT    GATT/SR/GAS/BV-02-C             FAIL<br>",
        "autopts.failed_tests",
    ),
    (
        "Generation failed: /src/build/rcp-uart-802154.slcp contains parse issues",
        "slc.generation_failed",
    ),
    ("FATAL ERROR: extension command \"build\" couldn't be run", "west.build_unloadable"),
    (
        "`ERROR: extension command build was improperly defined and could not be run: could not import`",
        "west.build_unloadable",
    ),
    ("FATAL ERROR: extension command \"flash\" could not be run", "west.flash_unloadable"),
    ("FATAL ERROR: extension command \"sign\" couldn't be run", "west.no_workspace"),
];

/// dfu-util finds the `dfuERROR` a last session left and clears it itself: no failure, so a
/// log cut while it erases says nothing yet.
#[test]
fn a_dfu_error_state_dfu_util_clears_is_no_failure() {
    let log = "Opening DFU capable USB device...\n\
               Device ID 0483:df11\n\
               Determining device status...\n\
               DFU state(10) = dfuERROR, status(10) = Device's firmware is corrupt. It cannot return to run-time (non-DFU) operations\n\
               Clearing status\n\
               Determining device status...\n\
               DFU state(2) = dfuIDLE, status(0) = No error condition is present\n\
               Downloading element to address = 0x08000000, size = 24854\n\
               Erase   \t[                         ]   0%\n";
    let triage = classify_str(log);
    assert_eq!(triage.class, TriageClass::Unknown, "{triage:#?}");
    let failed = format!("{log}dfu-util: Error during download get_status\n");
    assert_eq!(classify_str(&failed).class, TriageClass::FlashError);
}

/// ninja's counter at its last step is a build that ran every step; at any other step, or
/// followed by a failure, it is not.
#[test]
fn a_build_counter_at_its_last_step_is_a_finished_build() {
    let done = "[159/160] Building C object zephyr/main.c.obj\n\
                [160/160] Linking C executable zephyr/zephyr.elf\n";
    assert_eq!(classify_str(done).class, TriageClass::Pass);
    let cut = "[158/160] Building C object zephyr/main.c.obj\n\
               [159/160] Linking C executable zephyr/zephyr_pre.elf\n";
    assert_eq!(classify_str(cut).class, TriageClass::Unknown);
    let nested = "[650/650] Generating tfm_s_ns_signed.bin\n";
    assert_eq!(classify_str(nested).class, TriageClass::Unknown);
    let flashing = format!("{done}-- west flash: using runner nrfutil\n");
    assert_eq!(classify_str(&flashing).class, TriageClass::Unknown);
    let failed =
        format!("{done}FAILED: zephyr/zephyr.elf\nninja: build stopped: subcommand failed.\n");
    assert_ne!(classify_str(&failed).class, TriageClass::Pass);
    assert!(!Check::LastStep.holds(b"[0/0] Linking"));
    assert!(!Check::LastStep.holds(b"[x/1] Linking"));
}

/// esptool's erase is one step of a flash: a log cut after `Compressed ...` has not shown
/// the write's outcome; the hash verified after it has.
#[test]
fn an_erase_before_esptools_write_is_no_pass_of_the_flash() {
    let erased = "Chip erase completed successfully in 7.1s\n";
    assert_eq!(classify_str(erased).class, TriageClass::Pass);
    let writing = format!("{erased}Compressed 1076672 bytes to 618512...\n");
    assert_eq!(classify_str(&writing).class, TriageClass::Unknown);
    let written = format!("{writing}Hash of data verified.\n");
    assert_eq!(classify_str(&written).class, TriageClass::Pass);
}

/// CppUnit's `assertion failed` under a `Test name:` is a test's check failing, not the
/// firmware's assert.
#[test]
fn a_cppunit_assertion_is_a_test_failure() {
    let log = "loggerApi_test.cpp:1315:Assertion\n\
               Test name: LoggerApiTest::testGetVersion\n\
               assertion failed\n\
               - Expression: json.size()\n";
    assert_eq!(classify_str(log).class, TriageClass::TestFailure);
    assert_eq!(
        classify_str("assertion failed\n").class,
        TriageClass::Assert
    );
}

/// U-Boot says what each boot source lacks while it tries the next; Tasmota logs the files it
/// has not written yet. Neither is a failure, and a log of nothing else has no verdict.
#[test]
fn a_boot_loaders_missing_sources_and_tasmotas_missing_files_are_no_failure() {
    let uboot = "Hit any key to stop autoboot:  0 \n\
                 reading uEnv.txt\n\
                 ** Unable to read file uEnv.txt **\n\
                 Failed to mount ext2 filesystem...\n\
                 ** Unrecognized filesystem type **\n\
                 reading boot.scr\n";
    let triage = classify_str(uboot);
    assert_eq!(triage.class, TriageClass::Unknown, "{triage:#?}");
    let tasmota = "00:00:00.271 TFS: File '.drvset003' not found\n\
                   00:00:00.271 CFG: Energy use defaults as file system not ready or file not found\n";
    let triage = classify_str(tasmota);
    assert_eq!(triage.class, TriageClass::Unknown, "{triage:#?}");
}

/// twister's `run test:` starts the next instance: an earlier instance's pass is no verdict
/// on a log that stops before the next one's.
#[test]
fn a_pass_before_twisters_next_test_is_no_verdict_of_the_log() {
    let passed = "DEBUG   - run status: qemu_x86/zephyr/sample.basic passed\n";
    assert_eq!(classify_str(passed).class, TriageClass::Pass);
    let next = format!("{passed}DEBUG   - run test: qemu_x86/zephyr/sample.other\n");
    let triage = classify_str(&next);
    assert_eq!(triage.class, TriageClass::Unknown, "{triage:#?}");
}

/// A flasher that reports a failure no rule names and then verifies the image it wrote
/// retried and got there; a failure after the success still counts.
#[test]
fn a_flash_failure_the_flasher_recovered_from_is_no_failure() {
    let retried = "Error: Failed to download data! If it's a Flash memory, it may be not erased or protected\n\
                   Downloading 8-bit data done successfully\n\
                   Download verified successfully\n";
    let triage = classify_str(retried);
    assert_eq!(triage.class, TriageClass::Pass, "{triage:#?}");
    let after = "Download verified successfully\n\
                 Error: Failed to download data! If it's a Flash memory, it may be not erased or protected\n";
    assert_eq!(classify_str(after).class, TriageClass::FlashError);
}

/// A host tool that panics, or a debugger that loses its server, is the lab's, unless the log
/// shows a flash or a debug launch: then it is that step's failure.
#[test]
fn a_host_panic_or_lost_debug_server_in_a_flash_is_the_flashs() {
    let bare = "thread 'main' panicked at 'assertion failed: `(left == right)`\n";
    assert_eq!(classify_str(bare).class, TriageClass::InfraError);
    let flashing = format!("(HOST) INFO  flashing program (6 pages / 24.00 KiB)\n{bare}");
    assert_eq!(classify_str(&flashing).class, TriageClass::FlashError);
    let lost = "Remote communication error. Target disconnected.: Success.\n";
    assert_eq!(classify_str(lost).class, TriageClass::InfraError);
    let launch = format!("Error in final launch sequence:\nFailed to execute MI command:\n{lost}");
    assert_eq!(classify_str(&launch).class, TriageClass::FlashError);
}

/// The Windows C runtime's `Assertion failed!` is the firmware's or a tool's assertion, and
/// the emulator's own when the `Program:` it names is an emulator.
#[test]
fn a_crt_assertion_in_an_emulator_is_the_emulators() {
    let bare = "Assertion failed!\n\nFile: main.c, Line 12\n";
    assert_eq!(classify_str(bare).class, TriageClass::Assert);
    let emulator = "Assertion failed!\n\nProgram:\n.......qemu-system-arm.exe\n\
                    File: translate-all.c, Line 685\n";
    assert_eq!(classify_str(emulator).class, TriageClass::InfraError);
}

#[test]
fn every_rule_claims_its_sample_line() {
    for (line, rule) in SAMPLES {
        assert_eq!(rule_of(line).as_deref(), Some(*rule), "{line}");
    }
}

/// probe-run that could not finish a backtrace after a HardFault: the probe's error is about the
/// backtrace, not the flash, which was done; the fault is what stopped the program.
#[test]
fn a_backtrace_probe_run_could_not_finish_is_no_flash_failure() {
    let log = "(HOST) INFO  success!\nstack backtrace:\n   0: HardFaultTrampoline\n      <exception entry>\n\
               (HOST) ERROR error occurred during backtrace creation: An error with the usage of the probe occurred\n";
    let triage = classify_str(log);
    assert_eq!(triage.class, TriageClass::Crash, "{triage:?}");
}

/// VS Code's CMake Tools channel prefix is cut like a stamp: ninja's failed step under it is
/// read as it is without it.
#[test]
fn cmake_tools_channel_prefix_is_cut() {
    let log = "[build] FAILED: CMakeFiles/demo.dir/startup.o \n\
               [build] ninja: build stopped: subcommand failed.\n";
    let triage = classify_str(log);
    assert_eq!(triage.class, TriageClass::BuildError, "{triage:?}");
    assert!(
        triage.matches.iter().any(|m| m.rule_id == "ninja.stopped"),
        "{triage:?}"
    );
}

/// st-flash's `Starting verification of write complete` starts the check of what it wrote: as a
/// last line it is no success of the log, though it says `complete`.
#[test]
fn a_step_starting_is_no_success_tail() {
    let log = "Flash written\nStarting verification of write complete\n";
    let triage = classify_str(log);
    assert_eq!(triage.class, TriageClass::Unknown, "{triage:?}");
}

/// LMIC's failed assert names its file right after `FAILURE`; the same file in a backtrace
/// frame is no assert.
#[test]
fn lmics_assert_is_the_file_line_after_its_failure_line() {
    let assert = classify_str(
        "Starting\nFAILURE\n.pio/libdeps/ttgo/MCCI LoRaWAN LMIC library/src/lmic/radio.c:801\n",
    );
    assert_eq!(assert.class, TriageClass::Assert, "{assert:?}");
    assert!(
        assert.matches.iter().any(|m| m.rule_id == "lmic.assert"),
        "{assert:?}"
    );
    let frame =
        classify_str("0x400d1234: os_runloop_once at /lib/arduino-lmic/src/lmic/oslmic.c:121\n");
    assert!(
        frame.matches.iter().all(|m| m.rule_id != "lmic.assert"),
        "{frame:?}"
    );
}

/// A program running tests that dies of a signal between two of them crashed; the same bare
/// signal with no test line before it stays the environment's (a tool the shell ran).
#[test]
fn a_signal_right_after_a_test_line_is_the_tested_program_crashing() {
    let crashed = classify_str("PASS - setTimeout: set delay\nSegmentation fault (core dumped)\n");
    assert_eq!(crashed.class, TriageClass::Crash, "{crashed:?}");
    let bare = classify_str("Building\nSegmentation fault (core dumped)\n");
    assert_eq!(bare.class, TriageClass::InfraError, "{bare:?}");
}

/// Stamps of a serial monitor and of a firmware's own log are cut like any other: the Arduino
/// IDE's (`22:58:57.694 -> `) and Meshtastic's level and unset clock (`ERROR | ??:??:?? 0 `).
#[test]
fn a_serial_monitors_and_a_firmwares_stamps_are_cut() {
    let t =
        classify_str("22:58:57.694 -> Guru Meditation Error: Core  1 panic'ed (LoadProhibited)\n");
    assert_eq!(t.class, TriageClass::Crash, "{t:?}");
    let t =
        classify_str("INFO  | ??:??:?? 0 Init NodeDB\nERROR | ??:??:?? 0 LFS assert: head >= 2\n");
    assert_eq!(t.class, TriageClass::Assert, "{t:?}");
    let t = classify_str("[03:02:52.411]ASSERT_PARAM(1 28), in lld_evt.c at line 2411\n");
    assert_eq!(t.class, TriageClass::Assert, "{t:?}");
}

/// A Markdown quote's `> ` and Nix's quoting of a failed build's last lines (`       > `) are
/// cut before the rules read a line; a quoted command line still names its step.
#[test]
fn a_quoted_line_is_read_as_what_it_quotes() {
    let t = classify_str(
        "error: builder for '/nix/store/x-esphome.drv' failed with exit code 1;\n       last 25 log lines:\n       > =================================== FAILURES ===================================\n",
    );
    assert_eq!(t.class, TriageClass::TestFailure, "{t:?}");
    let t = classify_str(
        "> ./test.out\n> -----------------------\n> 1 Tests 0 Failures 0 Ignored\n> OK\n",
    );
    assert_eq!(t.class, TriageClass::Pass, "{t:?}");
    let t = classify_str("> picotool load blink.uf2 -f\nSegmentation fault (core dumped)\n");
    assert_eq!(t.class, TriageClass::FlashError, "{t:?}");
}

/// A serial terminal that shows line breaks as text (`<\r><\n>`) hides no line's end.
#[test]
fn line_breaks_shown_as_text_are_cut() {
    let t = classify_str(
        "++ MbedOS Fault Handler ++<\\r><\\n>\n<\\r><\\n>\nFaultType: HardFault<\\r><\\n>\n",
    );
    assert_eq!(t.class, TriageClass::Crash, "{t:?}");
}

/// A CI runner's raw log stamps each line with its clock (GitHub Actions', Azure Pipelines'
/// `2024-01-19T11:58:28.3431817Z `); the stamp is cut, pasted with an indent or not.
#[test]
fn a_ci_runners_clock_is_cut_like_any_stamp() {
    for log in [
        "2024-01-19T11:58:28.3431817Z !!! Timeout: Test failed\n",
        " 2024-01-19T11:58:28.3431817Z !!! Timeout: Test failed\n",
    ] {
        let t = classify_str(log);
        assert_eq!(t.class, TriageClass::Hang, "{t:?}");
    }
}

/// A flash's success followed by a serial monitor that opens and shows nothing is no pass: the
/// log stops before the step it was run for. What the monitor shows next decides as ever.
#[test]
fn a_success_before_a_monitor_opens_is_no_verdict_of_the_log() {
    let flashed = "Leaving...\nHard resetting via RTS pin...\n$ make monitor\n--- idf_monitor on COM3 74880 ---\n";
    let t = classify_str(flashed);
    assert_eq!(t.class, TriageClass::Unknown, "{t:?}");
    assert!(t.reason.contains("line 4 started another"), "{t:?}");
    let tested = format!("{flashed}5 Tests 0 Failures 0 Ignored\nOK\n");
    let t = classify_str(&tested);
    assert_eq!(t.class, TriageClass::Pass, "{t:?}");
    let failed = format!("{flashed}Guru Meditation Error: Core  0 panic'ed (LoadProhibited)\n");
    let t = classify_str(&failed);
    assert_eq!(t.class, TriageClass::Crash, "{t:?}");
}

/// Rust's tests fail by panicking: a panic right after a test's failed line is that test's
/// failure; a panic with no test line before it stays a crash.
#[test]
fn a_panic_right_after_a_failed_test_line_is_that_tests_failure() {
    let t = classify_str(
        "running 2 tests\ntest tests::a ... ok\ntest tests::b ... ERROR ====== PANIC ======\n└─ esp_backtrace::panic_handler @ src/lib.rs:25\nERROR panicked at src/lib.rs:367:5:\n",
    );
    assert_eq!(t.class, TriageClass::TestFailure, "{t:?}");
    let t = classify_str("INFO booting\nERROR panicked at src/main.rs:12:5:\n");
    assert_eq!(t.class, TriageClass::Crash, "{t:?}");
}

/// BitBake's and QMK's `| ` quoting is taken off before the rules read a line; a Markdown
/// table's row, which starts so too, keeps its cells.
#[test]
fn a_quoting_bar_is_cut_but_a_table_row_is_not() {
    let quoted =
        classify_str(" | arm-none-eabi-gcc: error: build/x.o: No such file or directory\n");
    assert_eq!(quoted.class, TriageClass::LinkError, "{quoted:?}");
    let table = classify_str("| board | **FAIL** |\n");
    assert_eq!(table.class, TriageClass::TestFailure, "{table:?}");
}

/// A compiler's quote of the source under its error is code, not output: an assert macro in it
/// is no firmware assert.
#[test]
fn a_compilers_source_excerpt_is_not_read_as_what_it_quotes() {
    let t = classify_str(
        "portmacro.h:178:9: error: 'configASSERT' was not declared in this scope\n  178 |         configASSERT( ulLockNum < portRTOS_SPINLOCK_COUNT );\n      |         ^~~~~~~~~~~~\n",
    );
    assert_eq!(t.class, TriageClass::BuildError, "{t:?}");
}

/// The Proxmark3 flasher's `All done.` is its success only right after its reset.
#[test]
fn the_proxmark_flashers_closing_word_follows_its_reset() {
    let done = classify_str("Flashing...\nResetting hardware...\nAll done.\n");
    assert_eq!(done.class, TriageClass::Pass, "{done:?}");
    assert!(
        done.matches
            .iter()
            .any(|m| m.rule_id == "proxmark.flash_done"),
        "{done:?}"
    );
}

/// ninja's failed step right after its last step's `Linking` line is the link, whatever the
/// image is called; the same `FAILED:` line alone says only that a step failed.
#[test]
fn a_failed_step_after_the_last_link_line_is_the_link() {
    let t = classify_str("[2/2] Linking C executable nuttx\nFAILED: nuttx \n");
    assert_eq!(t.class, TriageClass::LinkError, "{t:?}");
    let last = t.matches.last().map(|m| m.rule_id.as_str());
    assert_eq!(last, Some("ninja.failed_after_link"), "{t:?}");
    let bare = classify_str("FAILED: nuttx \n");
    assert_ne!(bare.class, TriageClass::LinkError, "{bare:?}");
}

#[test]
fn every_rule_with_a_class_has_a_sample() {
    let sampled: HashSet<&str> = SAMPLES.iter().map(|s| s.1).collect();
    // Rules that apply only right after another rule's line.
    let in_context = [
        "cppunit.assertion",
        "unity.ok",
        "unity.verdict_fail",
        "unittest.ok",
        "esp_idf.abort_after_watchdog",
        "summary.zero_failing",
        "micropython.passed",
        "teensy.booting",
        "daplink.assert",
        "lmic.assert",
        "summary.failed_after_count",
        "cmake.assertion",
        "shell.crashed_between_tests",
        "proxmark.flash_done",
        "libtest.case_panic",
        "ninja.failed_after_link",
        "ceedling.missing_executable_failed",
        "esptool.fatal_in_build",
        "waf.build_summary",
    ];
    for rule in RULES {
        if rule.class.is_some() && !in_context.contains(&rule.id) {
            assert!(sampled.contains(rule.id), "no sample line for {}", rule.id);
        }
    }
}

#[test]
fn harmless_lines_are_not_evidence() {
    for line in [
        "qemu-system-arm: warning: nic lan9118.0 has no peer",
        "not ok 5 - flash_erase # SKIP no flash on this board",
        "not ok 6 - dma_chain # TODO not written yet",
        "qemu-system-arm: terminating on signal 2",
        "   Verifying Checksum ... OK",
        "   Loading Kernel Image ... OK",
        "Reset: Core did not halt after reset, trying to disable WDT.",
        "Timer with period zero, disabling",
        "Taking exception 16 [Semihosting call] on CPU 0",
        "...taking pending nonsecure exception 15",
        "Info : Listening on port 3333 for gdb connections",
        "-- Could NOT find Doxygen (missing: DOXYGEN_EXECUTABLE)",
        "dfu-util: error resetting after download (LIBUSB_ERROR_NO_DEVICE)",
        "Program dtc found: YES (/usr/bin/dtc)",
        "<err> net_sock: connect failed: Network is unreachable",
        "arm-none-eabi-gcc -c src/error_handler.c -o build/error_handler.o",
        "src/sensor.c:5:14: warning: unused variable 'v' [-Wunused-variable]",
        "2023-10-06T21:01:33 INFO flash_loader.c: Clear CFSR",
        "hard fault handler installed",
        "Killed task 3 after its deadline",
        "OK",
        "FAIL",
        "Error: 3 retries left",
        "nsh: hello: open failed: 2",
        "W (706) cpu_start: failed to load RF calibration data, falling back to full calibration",
        "TRACE +0.001 command op=0x0a data len=4 wait_response=1 timeout=3.000 data=0020f43f",
        "-- ccache: CCACHE_PROGRAM-NOTFOUND",
        "$> test_bluepill_binary.sh gen/bin '~~~ALL TESTS PASSED~~~'",
        "[INFO] Connection timeout set to 5 s",
        "WARNING: ccache is not installed, builds will be slower",
        "DFU state(2) = dfuIDLE, status(0) = No error condition is present",
        "Couldn't connect. [<class 'esptool.FatalError'>; Failed to connect to ESP32: No serial data received.]. Retrying...",
        "Building target targets/blinky_sim",
        "Please report bugs to http://sourceforge.net/p/dfu-util/tickets/",
        "dfu-util: Warning: Invalid DFU suffix signature",
        "Signature verification failed, continuing with unsigned image",
        "Programming...",
        "Assert",
    ] {
        let t = classify_str(line);
        assert_eq!(
            (t.class, t.lines.as_slice()),
            (TriageClass::Unknown, &[][..]),
            "{line}"
        );
        // A generic line may be claimed (so a context could give it a class) but decides
        // nothing on its own.
        let specific: Vec<_> = t
            .matches
            .iter()
            .filter(|m| {
                RULES
                    .iter()
                    .any(|r| r.id == m.rule_id && r.scope == rules::Scope::Specific)
            })
            .collect();
        assert!(specific.is_empty(), "{line}: {specific:?}");
    }
}

#[test]
fn error_words_in_passing_test_names_are_not_errors() {
    let log = "\
tests/test_x.c:10:test_error_counter:PASS
tests/test_x.c:20:test_fail_safe_mode:PASS
tests/test_x.c:30:test_hardfault_handler_is_installed:PASS
tests/test_x.c:40:test_assert_macro_compiles_out:PASS
tests/test_x.c:50:test_no_space_left_on_device_is_reported:PASS
tests/test_x.c:60:test_crash_dump_format:IGNORE: Segmentation fault on the host
 PASS - test_killed_task_is_reaped in 0.001 seconds

-----------------------
6 Tests 0 Failures 1 Ignored 
OK
";
    let t = classify_str(log);
    assert_eq!(t.class, TriageClass::Pass, "{t:#?}");
    assert_eq!(t.lines, vec![10, 11]);
}

#[test]
fn a_failing_test_whose_message_names_a_crash_is_a_test_failure() {
    let t = classify_str("tests/t.c:9:test_fault:FAIL: Expected HardFault, got BusFault\n");
    assert_eq!(t.class, TriageClass::TestFailure);
}

#[test]
fn colour_codes_are_stripped() {
    let t = classify_str(
        "\x1b[32mtests/t.c:1:test_a:PASS\x1b[0m\n\n-----------------------\n\x1b[1m1 Tests 0 Failures 0 Ignored \x1b[0m\n\x1b[32mOK\x1b[0m\n",
    );
    assert_eq!((t.class, t.lines), (TriageClass::Pass, vec![4, 5]));
}

#[test]
fn crlf_logs_read_like_lf_logs() {
    let text = std::fs::read_to_string(data_dir().join("unity_fail.log")).unwrap();
    let lf = classify_str(&text);
    let crlf = classify_str(&text.replace('\n', "\r\n"));
    assert_eq!((crlf.class, &crlf.lines), (lf.class, &lf.lines));
    // A UART that sends CR CR LF.
    let crcrlf = classify_str(&text.replace('\n', "\r\r\n"));
    assert_eq!((crcrlf.class, &crcrlf.lines), (lf.class, &lf.lines));
}

#[test]
fn text_before_a_carriage_return_is_still_read() {
    let t = classify_str(
        "Writing at 0x00010000... (10 %)\rWriting at 0x00014000... (20 %)\r\nA fatal error occurred: Packet content transfer stopped\rdone\n",
    );
    assert_eq!((t.class, t.lines), (TriageClass::FlashError, vec![2]));
}

#[test]
fn console_log_stamps_are_stripped() {
    let t = classify_str(
        "[    0.049] uart  5 Tests 0 Failures 0 Ignored \n[    0.049] host  Taking exception 16 [Semihosting call] on CPU 0\n[    0.049] uart  OK\n",
    );
    assert_eq!((t.class, t.lines), (TriageClass::Pass, vec![1, 3]));
}

#[test]
fn unity_verdict_words_count_only_after_the_summary() {
    let t = classify_str("tests/t.c:1:test_a:PASS\nFAIL\n");
    assert_eq!(
        t.class,
        TriageClass::Unknown,
        "a pass so far, and no verdict"
    );
    assert!(t.reason.contains("but no final verdict"), "{}", t.reason);
}

#[test]
fn precedence_follows_the_documented_order() {
    for pair in TriageClass::PRECEDENCE.windows(2) {
        assert!(pair[0].rank() < pair[1].rank(), "{pair:?}");
    }
    let cases: &[(&str, TriageClass)] = &[
        // A crash after failed tests is a crash.
        (
            "tests/t.c:3:test_a:FAIL: Expected 1 Was 2\nTaking exception 3 [Prefetch Abort] on CPU 0\n",
            TriageClass::Crash,
        ),
        // A passing verdict with a crash after it is a crash.
        (
            "1 Tests 0 Failures 0 Ignored\nOK\nGuru Meditation Error: Core  0 panic'ed (LoadProhibited).\n",
            TriageClass::Crash,
        ),
        // The assert handler's panic is the assertion's consequence.
        (
            "ASSERTION FAIL [p] @ main.c:3\n>>> ZEPHYR FATAL ERROR 4: Kernel panic on CPU 0\n",
            TriageClass::Assert,
        ),
        // make's Error 127 and the failure after it come from the missing program.
        (
            "sh: 1: openocd: not found\n127.0.0.1:3333: Connection refused.\nmake: *** [Makefile:9: flash] Error 127\n",
            TriageClass::ToolMissing,
        ),
        // gdb refused by a server that never found its probe.
        (
            "Error: unable to find a matching CMSIS-DAP device\n127.0.0.1:3333: Connection refused.\n",
            TriageClass::FlashError,
        ),
        // A board that faults resets, and its USB serial port goes with it.
        (
            "*** HardFault ***\nserial.serialutil.SerialException: device reports readiness to read but returned no data (device disconnected or multiple access on port?)\n",
            TriageClass::Crash,
        ),
        // A full disk explains the compiler's failure.
        (
            "src/a.c:1:1: fatal error: error writing to /tmp/cc1.s: No space left on device\n",
            TriageClass::InfraError,
        ),
        ("src/a.c:1:1: error: x\nmain.c:(.text+0x8): undefined reference to `x'\n", TriageClass::BuildError),
    ];
    for (log, class) in cases {
        assert_eq!(classify_str(log).class, *class, "{log}");
    }
}

#[test]
fn a_run_that_reached_its_verdict_did_not_hang() {
    let log = "1 Tests 0 Failures 0 Ignored\nOK\nqemu-system-arm: terminating on signal 15 from pid 9 (timeout)\n";
    for ctx in [PLAIN, TIMED_OUT] {
        let t = classify(log, &ctx);
        assert_eq!(
            (t.class, &t.lines),
            (TriageClass::Pass, &vec![1, 2]),
            "{ctx:?}"
        );
    }
    let killed = "1 Tests 0 Failures 0 Ignored\nOK\nqemu-system-arm: terminating on signal 15 from pid 9 (bash)\n";
    assert_eq!(classify(killed, &TIMED_OUT).class, TriageClass::Pass);
}

#[test]
fn output_that_just_stops_is_a_hang_only_at_a_timeout() {
    let log = "tests/t.c:1:test_a:PASS\ntests/t.c:2:test_b:FAIL: Expected 1 Was 2\n";
    let plain = classify(log, &PLAIN);
    assert_eq!(
        (plain.class, plain.lines),
        (TriageClass::TestFailure, vec![2])
    );
    let timed = classify(log, &TIMED_OUT);
    assert_eq!((timed.class, &timed.lines), (TriageClass::Hang, &vec![2]));
    assert_eq!(
        timed.reason,
        "the run timed out with no verdict; the output stops at line 2"
    );
    let last = timed.matches.last().unwrap();
    assert_eq!(
        (last.rule_id.as_str(), last.line),
        ("timeout.no_verdict", 2)
    );
}

#[test]
fn empty_logs() {
    let t = classify_str("");
    assert_eq!((t.class, t.lines.len()), (TriageClass::Unknown, 0));
    assert_eq!(t.reason, "the log is empty");
    let t = classify("\n\n", &TIMED_OUT);
    assert_eq!((t.class, t.lines.len()), (TriageClass::Hang, 0));
    assert_eq!(t.reason, "the run timed out with no output at all");
    let t = classify_str("compiling...\nlinking...\n");
    assert_eq!(t.class, TriageClass::Unknown, "no evidence is no pass");
    assert!(t.reason.starts_with("no rule matched"), "{}", t.reason);
}

#[test]
fn error_classes_for_the_machine() {
    use ErrorClass as E;
    let expected = [
        (TriageClass::ToolMissing, Some(E::BuildEnvFailure)),
        (TriageClass::FlashError, Some(E::FlashFailure)),
        (TriageClass::Assert, None),
        (TriageClass::Crash, None),
        (TriageClass::InfraError, Some(E::TestEnvFailure)),
        (TriageClass::BuildError, Some(E::BuildFailure)),
        (TriageClass::LinkError, Some(E::BuildFailure)),
        (TriageClass::Hang, None),
        (TriageClass::TestFailure, None),
        (TriageClass::Pass, None),
        (TriageClass::Unknown, None),
    ];
    for (class, error) in expected {
        assert_eq!(class.error_class(), error, "{class}");
    }
    let t = classify_str("main.c:(.text+0x8): undefined reference to `x'\n");
    assert_eq!(t.error_class(), Some(E::BuildFailure));
}

#[test]
fn error_classes_depend_on_the_step_that_failed() {
    use ErrorClass as E;
    let expected = [
        (
            TriageClass::ToolMissing,
            Some(E::BuildEnvFailure),
            Some(E::TestEnvFailure),
        ),
        (
            TriageClass::FlashError,
            Some(E::BuildEnvFailure),
            Some(E::FlashFailure),
        ),
        (TriageClass::Assert, None, None),
        (TriageClass::Crash, None, None),
        (
            TriageClass::InfraError,
            Some(E::BuildEnvFailure),
            Some(E::TestEnvFailure),
        ),
        (
            TriageClass::BuildError,
            Some(E::BuildFailure),
            Some(E::TestEnvFailure),
        ),
        (
            TriageClass::LinkError,
            Some(E::BuildFailure),
            Some(E::TestEnvFailure),
        ),
        (TriageClass::Hang, None, None),
        (TriageClass::TestFailure, None, None),
        (TriageClass::Pass, None, None),
        (TriageClass::Unknown, None, None),
    ];
    for (class, build, test) in expected {
        assert_eq!(
            class.error_class_in(Stage::Build),
            build,
            "{class} in a build"
        );
        assert_eq!(
            class.error_class_in(Stage::Test),
            test,
            "{class} in a test run"
        );
    }
}

#[test]
fn the_verdict_names_the_class_and_the_deciding_line() {
    let t = classify_str(
        "make: entering\nsh: 1: arm-none-eabi-gcc: not found\nmake: *** [x] Error 127\n",
    );
    let verdict = t.verdict_in("build.log");
    assert!(
        verdict.starts_with("TOOL_MISSING at build.log:2: "),
        "{verdict}"
    );
    let log = LogTriage::new("iter-000/build.log", &t);
    assert_eq!((log.class, log.lines), (TriageClass::ToolMissing, vec![2]));
    assert_eq!(
        classify_str("").verdict_in("console.log"),
        "UNKNOWN at console.log: the log is empty"
    );
}

#[test]
fn class_names_round_trip_through_json() {
    for class in TriageClass::PRECEDENCE {
        let json = serde_json::to_string(&class).unwrap();
        assert_eq!(json, format!("\"{}\"", class.name()));
        assert_eq!(serde_json::from_str::<TriageClass>(&json).unwrap(), class);
    }
}

#[test]
fn huge_logs_keep_a_bounded_number_of_matches() {
    let mut log = String::new();
    for i in 0..100_000 {
        log.push_str(&format!(
            "tests/t.c:{i}:test_{i}:PASS\nsome chatter about line {i}\n"
        ));
    }
    log.push_str("Taking exception 3 [Prefetch Abort] on CPU 0\n");
    let t = classify_str(&log);
    assert_eq!((t.class, t.lines), (TriageClass::Crash, vec![200_001]));
    assert!(t.matches.len() <= RULES.len() * MAX_MATCHES_PER_RULE);
}

#[test]
fn overlong_lines_are_cut() {
    let mut log = "x".repeat(3 * MAX_LINE_BYTES);
    log.push_str(" No space left on device\nOK\n");
    let t = classify_str(&log);
    assert_eq!(
        t.class,
        TriageClass::Unknown,
        "the cut-off tail is not read"
    );
    let t = classify_reader(log.as_bytes(), &PLAIN).unwrap();
    assert_eq!(t.class, TriageClass::Unknown);
    let quoted = classify_str(&format!("Error: init mode failed {}", "y".repeat(1000)));
    assert!(quoted.matches[0].text.chars().count() <= MAX_QUOTE_CHARS + 1);
}

#[test]
fn lines_passed_by_count_as_lines_read_one_by_one() {
    let long = "x".repeat(MAX_LINE_BYTES + 5);
    let lines = [
        "a",
        "",
        "b\r",
        "\r",
        "c\r\r",
        "d\re",
        long.as_str(),
        &long[..MAX_LINE_BYTES],
        &long[..MAX_LINE_BYTES - 1],
        &long[3..],
    ];
    for skip in 0..lines.len() {
        let text: Vec<u8> = lines[skip..]
            .iter()
            .chain(&lines[..skip])
            .flat_map(|l| [l.as_bytes(), b"\n"].concat())
            .collect();
        let mut found = Found::default();
        found.pass_by(&text);
        let mut want = Found::default();
        for line in text.split_inclusive(|&b| b == b'\n') {
            let raw = without_cr(&line[..line.len() - 1]);
            want.lines += 1;
            want.seen_bytes += raw.len().min(MAX_LINE_BYTES) as u64;
        }
        assert_eq!(
            (found.lines, found.seen_bytes),
            (want.lines, want.seen_bytes)
        );
    }
}

#[test]
fn binary_junk_is_read_without_trouble() {
    let mut bytes: Vec<u8> = (0..=255u8).cycle().take(100_000).collect();
    bytes.extend_from_slice(
        b"\n\xff\xfe\x00Guru Meditation Error: Core  0 panic'ed (IllegalInstruction).\n",
    );
    let guru = bytes.windows(4).position(|w| w == b"Guru").unwrap();
    let line = bytes[..guru].iter().filter(|&&b| b == b'\n').count() + 1;
    let t = classify_reader(bytes.as_slice(), &PLAIN).unwrap();
    assert_eq!((t.class, t.lines), (TriageClass::Crash, vec![line]));
}

#[test]
fn binary_input_is_unknown_with_a_reason() {
    let random: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    for bytes in [vec![0u8; 100], random] {
        let t = classify_reader(bytes.as_slice(), &PLAIN).unwrap();
        assert_eq!(t.class, TriageClass::Unknown, "{t:#?}");
        assert!(
            t.reason.starts_with("the input is binary, not a log: "),
            "{}",
            t.reason
        );
    }
}

/// Regression: a raw firmware image (`objcopy -O binary`) was a CRASH, on the `printf` format
/// `Stack overflow in %s` its .rodata holds between two 0x0a bytes.
#[test]
fn a_raw_image_is_binary_whatever_strings_it_holds() {
    let mut image = Vec::new();
    for i in 0..2000u32 {
        image.extend_from_slice(&[0x00, 0x20, 0x00, 0x00]);
        image.extend_from_slice(&i.to_le_bytes());
        image.extend_from_slice(&[0x80, 0xb5, 0x00, 0xaf, 0x0a]);
    }
    image.extend_from_slice(b"Stack overflow in %s\r\nGuru Meditation Error: %s\n\0\0\0");
    image.extend(std::iter::repeat_n(0u8, 4096));
    let t = classify_reader(image.as_slice(), &PLAIN).unwrap();
    assert_eq!(t.class, TriageClass::Unknown, "{t:#?}");
    assert!(t.reason.contains("an image or a data file"), "{}", t.reason);
    assert!(t.matches.is_empty());
}

/// A line that is mostly noise is counted, not read: random bytes name nothing, whatever
/// literal they happen to hold, and they made the rule set's search crawl.
#[test]
fn a_noise_line_is_not_evidence() {
    let mut noisy: Vec<u8> = (0..200u32).map(|i| (i * 151 % 256) as u8).collect();
    noisy.retain(|&b| b != b'\n');
    noisy.extend_from_slice(b" error: undefined reference to `main'");
    let mut log = b"boot\n".to_vec();
    log.extend_from_slice(&noisy);
    log.extend_from_slice(b"\nsystem up\n");
    let t = classify_reader(log.as_slice(), &PLAIN).unwrap();
    assert_eq!(t.class, TriageClass::Unknown, "{t:#?}");
    assert!(t.matches.is_empty());
}

/// A host tool's log record printed onto a test's line (`ERROR probe_rs::util::rtt:`) is not
/// the test's outcome: the `ok` after it is, and libtest's summary decides.
#[test]
fn a_log_record_on_a_tests_line_is_not_its_outcome() {
    let log = "running 1 test\n\
               test tests::test_send_receive ... ERROR probe_rs::util::rtt: \n\
               Error reading from RTT: The control block has been corrupted.\n\
               ok\n\n\
               test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n";
    let t = classify_str(log);
    assert_eq!(t.class, TriageClass::Pass, "{t:?}");
    let failed = classify_str("test tests::x ... ERROR\npanicked at src/lib.rs:3:5\n");
    assert_ne!(failed.class, TriageClass::Pass, "{failed:?}");
}

/// Regression: `fwfix triage /dev/zero` never ended (one endless line, read to its end).
#[test]
fn an_endless_binary_input_stops_after_the_sniff() {
    let zeros = io::repeat(0).take(64 * BINARY_SNIFF_BYTES);
    let t = classify_reader(io::BufReader::new(zeros), &PLAIN).unwrap();
    assert_eq!(t.class, TriageClass::Unknown);
    assert!(
        t.reason.contains("100% of the 65536 bytes looked at"),
        "{}",
        t.reason
    );
    // A line longer than the budget is handed over in pieces: reading always moves on.
    let mut reader = io::BufReader::new(io::repeat(b'x').take(100));
    let mut buf = Vec::new();
    assert_eq!(
        read_line_capped(&mut reader, &mut buf, 8, 30).unwrap(),
        Some(30)
    );
    assert_eq!(buf.len(), 8);
}

#[test]
fn reader_and_str_agree_on_line_numbers() {
    let text = "a\r\n\nb\nA fatal error occurred: x\r\nno newline at the end";
    let from_str = classify_str(text);
    let from_reader = classify_reader(text.as_bytes(), &PLAIN).unwrap();
    assert_eq!(from_str, from_reader);
    assert_eq!(from_str.lines, vec![4]);
}

#[test]
fn unreadable_files_are_named() {
    let missing = data_dir().join("no-such.log");
    let err = classify_file(&missing, &PLAIN).unwrap_err();
    assert!(err.to_string().contains("no-such.log"), "{err}");
}

/// Regression: `fwfix triage build/app.elf` classified the image's bytes as a log (a FLASH_ERROR
/// quoting binary garbage, exit 0).
#[test]
fn an_elf_image_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let elf = dir.path().join("test_crc.elf");
    std::fs::write(
        &elf,
        b"\x7fELF\x01\x01\x01\0\0\0esptool.fatal\nError: open failed\n",
    )
    .unwrap();
    let err = classify_file(&elf, &PLAIN).unwrap_err();
    assert!(matches!(err, ReadError::ElfImage { .. }), "{err:?}");
    assert!(
        err.to_string().contains("test_crc.elf is an ELF image"),
        "{err}"
    );
    let log = dir.path().join("build.log");
    std::fs::write(&log, "ELF image written\n").unwrap();
    assert!(classify_file(&log, &PLAIN).is_ok());
}

proptest! {
    #[test]
    fn arbitrary_logs_never_panic(text in "\\PC*", timed_out in any::<bool>()) {
        let t = classify(&text, &TriageContext { timed_out });
        let count = text.lines().count();
        for line in &t.lines {
            prop_assert!(*line >= 1 && *line <= count);
        }
        prop_assert!(t.lines.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
        let t = classify_reader(bytes.as_slice(), &TIMED_OUT).unwrap();
        prop_assert!(!t.reason.is_empty());
    }
}

/// A CI job's success trailer is not a verdict on the firmware: under failed tests it changes
/// nothing, and alone it says nothing.
#[test]
fn a_ci_success_trailer_is_not_a_pass() {
    let failed = "test/test_main.c:12:test_adds:FAIL: Expected 3 Was 4\n\
                  -----------------------\n\
                  1 Tests 1 Failures 0 Ignored\n\
                  FAIL\n\
                  Cleaning up project directory and file based variables\n\
                  Job succeeded\n";
    assert_eq!(classify(failed, &PLAIN).class, TriageClass::TestFailure);
    for trailer in ["Job succeeded\n", "Finished: SUCCESS\n"] {
        let t = classify(trailer, &PLAIN);
        assert_eq!(t.class, TriageClass::Unknown, "{trailer}: {t:#?}");
    }
}

/// Every recorded log, the fixtures and the real public ones, as bytes.
fn every_recorded_log() -> Vec<(PathBuf, Vec<u8>)> {
    let mut logs = Vec::new();
    for dir in [data_dir(), data_dir().join("real")] {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "log") {
                logs.push((path.clone(), std::fs::read(&path).unwrap()));
            }
        }
    }
    logs.sort();
    assert!(logs.len() > 300, "{} logs", logs.len());
    logs
}

/// Whether the rule set matches any part of `raw` as the triager reads it.
fn rule_set_matches(raw: &[u8]) -> bool {
    let cleaned = clean(raw);
    let mut scratch = SetScratch::take();
    // The failure words are no rule's: they give the prefilter nothing (see rules.rs).
    cleaned.split(|&b| b == b'\r').map(trim).any(|segment| {
        !segment.is_empty()
            && scratch
                .matches(segment)
                .iter()
                .any(|p| p != COMPILED.failure)
    })
}

/// Both ways of reading `text` (prefiltered and not) give the same triage.
fn prefiltered_and_plain(text: &[u8], ctx: TriageContext) -> (Triage, Triage) {
    let mut fast = Triager::new(ctx);
    fast.push_text(text);
    let mut plain = Triager::without_prefilter(ctx);
    plain.push_text(text);
    (fast.finish(), plain.finish())
}

#[test]
fn the_prefilter_narrows_the_lines_read() {
    assert!(COMPILED.prefilter.is_effective());
    let ordinary = b"[00:00:00.000,000] <inf> main: sensor ready\n\
                     CC arch/arm/core/cortex_m/fault.c\n\
                     I (312) cpu_start: Starting scheduler on PRO CPU.\n";
    for line in ordinary.split(|&b| b == b'\n') {
        assert!(
            !COMPILED.prefilter.is_candidate(line),
            "{}",
            String::from_utf8_lossy(line)
        );
    }
}

#[test]
fn every_line_the_rule_set_matches_is_a_prefilter_candidate() {
    let mut matched = 0;
    for (path, bytes) in every_recorded_log() {
        for raw in bytes.split(|&b| b == b'\n') {
            if rule_set_matches(raw) {
                matched += 1;
                assert!(
                    COMPILED.prefilter.is_candidate(raw),
                    "{}: {}",
                    path.display(),
                    String::from_utf8_lossy(raw)
                );
            }
        }
    }
    assert!(matched > 500, "{matched} lines matched");
}

/// Each pattern searched alone, among the candidates its literals give, matches each recorded
/// line as each rule's own regex does, and the hint and the failure words as theirs do.
#[test]
fn each_pattern_searched_alone_matches_every_recorded_line_as_its_regex() {
    let failure_words = regex::bytes::RegexBuilder::new(rules::FAILURE_WORDS)
        .unicode(false)
        .build()
        .unwrap();
    let mut scratch = SetScratch::take();
    let mut searched = 0;
    for (path, bytes) in every_recorded_log() {
        for raw in bytes.split(|&b| b == b'\n') {
            let cleaned = clean(without_cr(raw)).into_owned();
            for range in segments(&cleaned) {
                let segment = &cleaned[range];
                let what = || format!("{}: {}", path.display(), String::from_utf8_lossy(segment));
                let hits = scratch.matches(segment);
                assert_eq!(
                    hits.contains(COMPILED.hint),
                    HINT.is_match(segment),
                    "{}",
                    what()
                );
                assert_eq!(
                    hits.contains(COMPILED.failure),
                    failure_words.is_match(segment),
                    "{}",
                    what()
                );
                let mut own = Vec::new();
                rules_of_hits(segment, hits, &mut own);
                assert_eq!(own, reference_rules(segment), "{}", what());
                searched += 1;
            }
        }
    }
    assert!(searched > 10_000, "{searched} segments");
}

/// The memo's answer for a segment, the second time it is met, is what searching the set gives:
/// every segment of every recorded log, met twice, against a scratch that only searches.
#[test]
fn remembered_segments_match_as_searched() {
    let mut remembering = SetScratch::take();
    let mut searching = SetScratch::take();
    for (path, bytes) in every_recorded_log() {
        for raw in bytes.split(|&b| b == b'\n') {
            let cleaned = clean(raw).into_owned();
            for range in segments(&cleaned) {
                let segment = &cleaned[range];
                let mut searched = Vec::new();
                let failing = rules_of_hits(segment, searching.matches(segment), &mut searched);
                for _ in 0..2 {
                    let mut found = Vec::new();
                    let found_failing = matching_rules(segment, &mut remembering, &mut found);
                    assert_eq!(
                        (found, found_failing),
                        (searched.clone(), failing),
                        "{}: {}",
                        path.display(),
                        String::from_utf8_lossy(segment)
                    );
                }
            }
        }
    }
}

#[test]
fn the_prefilter_changes_no_classification_of_a_recorded_log() {
    for (path, bytes) in every_recorded_log() {
        for ctx in [PLAIN, TIMED_OUT] {
            let (fast, plain) = prefiltered_and_plain(&bytes, ctx);
            assert_eq!(fast, plain, "{}", path.display());
        }
    }
}

/// However a log is cut (into the reader's buffers, into pieces, into parts matched on threads
/// of their own), it triages as when read line by line, even with evidence on every cut: a
/// buffer of 97 bytes cuts most evidence lines in two, and parts of one byte cut at every line.
#[test]
fn reading_in_parallel_parts_and_small_buffers_changes_no_classification() {
    for (path, bytes) in every_recorded_log()
        .into_iter()
        .filter(|(path, _)| path.parent() == Some(data_dir().as_path()))
    {
        for ctx in [PLAIN, TIMED_OUT] {
            let mut plain = Triager::without_prefilter(ctx);
            plain.push_text(&bytes);
            let plain = plain.finish();
            for workers in [2, 3] {
                let mut whole = Triager::with_workers(ctx, workers, PUSH_PIECE_BYTES);
                whole.push_text(&bytes);
                assert_eq!(
                    whole.finish(),
                    plain,
                    "{} in {workers} parts",
                    path.display()
                );
                // Pieces of a few lines: each claimed while the next is matched.
                let mut pieces = Triager::with_workers(ctx, workers, 300);
                pieces.push_text(&bytes);
                assert_eq!(
                    pieces.finish(),
                    plain,
                    "{} in {workers} parts of pieces of 300 bytes",
                    path.display()
                );
                for buffer in [97, 4096] {
                    let reader = io::BufReader::with_capacity(buffer, bytes.as_slice());
                    let read =
                        read_into(reader, Triager::with_workers(ctx, workers, 1000)).unwrap();
                    assert_eq!(
                        read,
                        plain,
                        "{} through {buffer} bytes in {workers} parts",
                        path.display()
                    );
                }
            }
        }
    }
}

#[test]
fn a_piece_splits_into_parts_of_whole_lines() {
    let piece = b"aaaa\nbb\ncccccc\nd\n";
    for parts in 1..6 {
        for min in [1, 3, 7, 100] {
            let split = split_lines(piece, parts, min);
            assert!(split.len() <= parts, "{parts} {min}: {split:?}");
            assert_eq!(split.concat(), piece, "{parts} {min}");
            assert!(split.iter().all(|p| p.ends_with(b"\n")), "{split:?}");
        }
    }
    assert_eq!(
        split_lines(piece, 2, 1),
        [&b"aaaa\nbb\n"[..], b"cccccc\nd\n"]
    );
    assert_eq!(split_lines(piece, 2, 100), [&piece[..]]);
}

/// The diagnostic hint on its own, for [`reference_rules`].
static HINT: LazyLock<Regex> = LazyLock::new(|| {
    regex::bytes::RegexBuilder::new(rules::DIAGNOSTIC_HINT)
        .unicode(false)
        .build()
        .unwrap()
});

/// The rules that match `segment` as [`matching_rules`] gives them, found the plain way: each
/// rule's own regex, in table order. The optimised search must give exactly this.
fn reference_rules(segment: &[u8]) -> Vec<usize> {
    let diagnostic = first_error(&String::from_utf8_lossy(segment));
    let mut out = Vec::new();
    for (index, rule) in RULES.iter().enumerate() {
        let hit = match rule.matcher {
            Matcher::Regex(_) => {
                COMPILED.regex(index).is_some_and(|r| r.is_match(segment))
                    && rule.check.holds(segment)
            }
            Matcher::Diagnostic { .. } => {
                HINT.is_match(segment) && diagnostic.as_ref().is_some_and(|d| rule.accepts(d))
            }
        };
        if hit {
            out.push(index);
            if rule.follows.is_empty() {
                break;
            }
        }
    }
    out
}

/// A line cleaned the plain way: the stamp pattern tried on every line.
fn reference_clean(raw: &[u8]) -> Vec<u8> {
    let (ansi, stamp) = &*NOISE;
    let text = ansi.replace_all(raw, &b""[..]).into_owned();
    if let Some(rest) = quoted_by_bar(&text).or_else(|| quoted_by_angle(&text)) {
        return rest.to_vec();
    }
    let end = stamp.find(&text).map_or(0, |m| m.end());
    text[end..].to_vec()
}

/// Checks that `raw` is cleaned and its segments matched as the plain way does.
fn assert_matched_as_reference(raw: &[u8]) {
    let cleaned = clean(raw);
    assert_eq!(
        *cleaned,
        reference_clean(raw),
        "{}",
        String::from_utf8_lossy(raw)
    );
    let mut scratch = SetScratch::take();
    for range in segments(&cleaned) {
        let segment = &cleaned[range];
        let mut found = Vec::new();
        matching_rules(segment, &mut scratch, &mut found);
        assert_eq!(
            found,
            reference_rules(segment),
            "{}",
            String::from_utf8_lossy(segment)
        );
    }
    scratch.give_back();
}

#[test]
fn every_recorded_line_is_matched_as_each_rule_alone_matches_it() {
    for (_, bytes) in every_recorded_log() {
        for raw in bytes.split(|&b| b == b'\n') {
            assert_matched_as_reference(without_cr(raw));
        }
    }
}

#[test]
fn binary_bytes_are_the_documented_ones() {
    for b in 0..=u8::MAX {
        let documented = matches!(
            b,
            0x00..=0x08 | 0x0b | 0x0e..=0x1a | 0x1c..=0x1f | 0x7f | 0xc0 | 0xc1 | 0xf5..=0xff
        );
        assert_eq!(is_binary_byte(b), documented, "{b:#04x}");
    }
    let noise: Vec<u8> = (0..2000u32).map(|i| (i * 37 % 256) as u8).collect();
    let counted = noise.iter().filter(|&&b| is_binary_byte(b)).count() as u64;
    assert_eq!(count_binary(&noise), counted);
}

/// Lines the rule set matches, from the recorded logs: what the property tests mutate.
static MATCHING_LINES: LazyLock<Vec<Vec<u8>>> = LazyLock::new(|| {
    every_recorded_log()
        .into_iter()
        .flat_map(|(_, bytes)| {
            bytes
                .split(|&b| b == b'\n')
                .filter(|raw| rule_set_matches(raw))
                .map(<[u8]>::to_vec)
                .collect::<Vec<_>>()
        })
        .collect()
});

/// One edit of a line: flip the case of a byte, put bytes (an escape sequence, a carriage
/// return, a stamp, noise) in, or take some out.
#[derive(Debug, Clone)]
enum Edit {
    FlipCase(usize),
    Insert(usize, Vec<u8>),
    Delete(usize, usize),
}

fn edit_strategy() -> impl Strategy<Value = Edit> {
    let inserted = prop_oneof![
        Just(b"\x1b[0m".to_vec()),
        Just(b"\x1b[1;31m".to_vec()),
        Just(b"\r".to_vec()),
        Just(b"[    0.035] uart  ".to_vec()),
        Just(b" ".to_vec()),
        proptest::collection::vec(any::<u8>(), 1..4),
    ];
    prop_oneof![
        any::<usize>().prop_map(Edit::FlipCase),
        (any::<usize>(), inserted).prop_map(|(at, bytes)| Edit::Insert(at, bytes)),
        (any::<usize>(), 1..4usize).prop_map(|(at, n)| Edit::Delete(at, n)),
    ]
}

fn apply(line: &mut Vec<u8>, edit: &Edit) {
    let at = |i: usize, len: usize| if len == 0 { 0 } else { i % len };
    match edit {
        Edit::FlipCase(i) => {
            if !line.is_empty() {
                let i = at(*i, line.len());
                line[i] = if line[i].is_ascii_lowercase() {
                    line[i].to_ascii_uppercase()
                } else {
                    line[i].to_ascii_lowercase()
                };
            }
        }
        Edit::Insert(i, bytes) => {
            let i = at(*i, line.len() + 1);
            let bytes: Vec<u8> = bytes.iter().copied().filter(|&b| b != b'\n').collect();
            line.splice(i..i, bytes);
        }
        Edit::Delete(i, n) => {
            if !line.is_empty() {
                let i = at(*i, line.len());
                let end = (i + n).min(line.len());
                line.drain(i..end);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Mutated lines that the rule set still matches stay candidates: completeness does not
    /// rest on the exact lines recorded.
    #[test]
    fn a_mutated_line_the_rule_set_matches_is_a_candidate(
        pick in any::<usize>(),
        edits in proptest::collection::vec(edit_strategy(), 0..6),
    ) {
        let mut line = MATCHING_LINES[pick % MATCHING_LINES.len()].clone();
        for edit in &edits {
            apply(&mut line, edit);
        }
        if rule_set_matches(&line) {
            prop_assert!(
                COMPILED.prefilter.is_candidate(&line),
                "{}", String::from_utf8_lossy(&line)
            );
        }
        assert_matched_as_reference(&line);
    }

    /// A log made of mutated recorded lines and noise triages the same with and without the
    /// prefilter.
    #[test]
    fn the_prefilter_changes_no_classification_of_a_mixed_log(
        picks in proptest::collection::vec((any::<usize>(), edit_strategy()), 1..40),
        timed_out in any::<bool>(),
    ) {
        let mut text = Vec::new();
        for (pick, edit) in &picks {
            let mut line = MATCHING_LINES[pick % MATCHING_LINES.len()].clone();
            apply(&mut line, edit);
            text.extend_from_slice(&line);
            text.extend_from_slice(if pick % 3 == 0 { b"\r\n" } else { b"\nplain text\n\n" });
        }
        let (fast, plain) = prefiltered_and_plain(&text, TriageContext { timed_out });
        prop_assert_eq!(fast, plain);
    }
}

/// The generic tier: a failure line that does not say which step failed decides only a log no
/// specific line explains, and says that its confidence is low.
#[test]
fn a_generic_failure_decides_only_alone_and_says_it_is_unsure() {
    let t = classify_str("Building app\nerror: could not compile `app` due to 2 previous errors\n");
    assert_eq!(
        (t.class, t.lines.as_slice()),
        (TriageClass::BuildError, &[2][..])
    );
    assert!(t.reason.contains("low confidence"), "{}", t.reason);
    // A specific line explains the log: the generic one adds nothing.
    let t = classify_str(
        "src/a.c:3:1: error: expected ';' before '}' token\nerror: could not compile `app`\n",
    );
    assert_eq!(
        (t.class, t.lines.as_slice()),
        (TriageClass::BuildError, &[1][..])
    );
    assert!(!t.reason.contains("low confidence"), "{}", t.reason);
    // A timeout, then the build tool that ran the tests stops: the stop is the timeout's echo.
    let t = classify_str(
        "[ RUN      ] test_message_multi_thread2\nCheck Timeout\nninja: build stopped: subcommand failed.\n",
    );
    assert_eq!((t.class, t.lines.as_slice()), (TriageClass::Hang, &[2][..]));
    // An echo alone still says that a step failed.
    let t = classify_str("ninja: build stopped: subcommand failed.\n");
    assert_eq!(t.class, TriageClass::BuildError);
    assert!(t.reason.contains("low confidence"), "{}", t.reason);
}

#[test]
fn a_failure_anywhere_outranks_a_passing_summary() {
    for log in [
        "INFO  all tests passed!\nERROR: failed to write coverage data\n",
        "Tests finished successfully :)\nFAILED: build/app.elf\n",
    ] {
        assert_ne!(classify_str(log).class, TriageClass::Pass, "{log}");
    }
    // A CI job's success trailer under failed tests is no pass.
    let t = classify_str("Some tests failed :( See logs for details!\nJob succeeded\n");
    assert_eq!(
        (t.class, t.lines.as_slice()),
        (TriageClass::TestFailure, &[1][..])
    );
    // A passing summary alone is a pass.
    let t = classify_str(" INFO  (1/1) running `sign`...\n INFO  all tests passed!\n");
    assert_eq!((t.class, t.lines.as_slice()), (TriageClass::Pass, &[2][..]));
}

#[test]
fn a_runner_timeout_after_a_failed_test_is_the_test_failure() {
    let log = "\
Assertion failed at src/main.c:34: test_clock: (done is false)
FAIL - test_clock in 1.12 seconds
START - test_ipm
Timed out while monitoring serial output on intel_adsp_cavs25
";
    let t = classify_str(log);
    assert_eq!(
        (t.class, t.lines.as_slice()),
        (TriageClass::TestFailure, &[1, 2][..])
    );
    // The timeout first: the run hung before anything failed.
    let t = classify_str("START - test_ipm\nTimed out while monitoring serial output on x\n");
    assert_eq!(t.class, TriageClass::Hang);
    // fwfix's own timeout over a log with no verdict is a hang, failures or not.
    let t = classify(
        "FAIL - test_clock in 1.12 seconds\nSTART - test_ipm\n",
        &TIMED_OUT,
    );
    assert_eq!(t.class, TriageClass::Hang);
}

#[test]
fn a_traceback_is_read_by_the_frames_it_names() {
    // A flasher's frames: its exception is the flash's failure.
    let flasher = "\
Traceback (most recent call last):
  File \"/usr/lib/python3/site-packages/esptool/__init__.py\", line 1064, in main
OSError: [Errno 71] Protocol error
";
    assert_eq!(classify_str(flasher).class, TriageClass::FlashError);
    // A frozen flasher's frames name its module without a directory.
    let frozen = "\
Traceback (most recent call last):
  File \"esptool.py\", line 3969, in <module>
  File \"serial/serialposix.py\", line 438, in _reconfigure_port
termios.error: (22, 'Invalid argument')
";
    assert_eq!(classify_str(frozen).class, TriageClass::FlashError);
    // A lab tool's frames: the harness broke.
    let harness = "\
Traceback (most recent call last):
  File \"/usr/lib/python3/site-packages/labgrid/driver/serialdriver.py\", line 65, in on_activate
OSError: [Errno 71] Protocol error
";
    assert_eq!(classify_str(harness).class, TriageClass::InfraError);
    // The serial port an uploader opens is its upload port: in its log, the flash failed.
    let upload = "\
Uploading .pio/build/nodemcuv2/firmware.bin
esptool.py v3.0
PermissionError: [Errno 13] Permission denied: '/dev/ttyUSB0'
";
    assert_eq!(classify_str(upload).class, TriageClass::FlashError);
    assert_eq!(
        classify_str("PermissionError: [Errno 13] Permission denied: '/dev/ttyUSB0'\n").class,
        TriageClass::InfraError
    );
    // A build's progress lines: a build script's traceback is the build's, and make's
    // `Error 1` after it only its echo.
    let build = "\
  Building out/compile_time_request.o
Traceback (most recent call last):
  File \"./scripts/gen_table.py\", line 12, in <module>
KeyError: 'CONFIG_BOARD'
make: *** [Makefile:40: out/autoconf.o] Error 1
";
    let triage = classify_str(build);
    assert_eq!(triage.class, TriageClass::BuildError);
    assert_eq!(triage.lines, vec![2, 4]);
    // A flasher's frames outrank the build's lines around them: the upload step failed.
    let upload = format!(
        "[100%] Building C object CMakeFiles/app.dir/main.c.obj\n{}",
        "Traceback (most recent call last):\n  File \"/usr/lib/python3/site-packages/tockloader/main.py\", line 593, in main\nKeyError: 'x'\n"
    );
    assert_eq!(classify_str(&upload).class, TriageClass::FlashError);
}

/// A configure step's own `assert()` under CMake's error is the build's, not the firmware's; a
/// panic that names no cause is the consequence of the watchdog before it; a log pasted with its
/// Markdown fence ends at its last real line.
#[test]
fn round_thirteen_readings() {
    let cmake = "CMake Error at cmake/extensions.cmake:1111 (message):\n  Assertion failed: The detected gperf version is unsupported.\n";
    assert_eq!(classify_str(cmake).class, TriageClass::BuildError);
    assert_eq!(
        classify_str("Assertion failed: (len > 0), function put, file ring.c, line 12.\n").class,
        TriageClass::Assert
    );
    let watchdog = "Task watchdog got triggered.\n\nGuru Meditation Error: Core  0 panic'ed (unknown). Exception was unhandled.\n";
    assert_eq!(classify_str(watchdog).class, TriageClass::Hang);
    assert_eq!(
        classify_str(
            "Guru Meditation Error: Core  0 panic'ed (unknown). Exception was unhandled.\n"
        )
        .class,
        TriageClass::Crash
    );
    let fenced = "```\n$ flasher --write app.bin\nWrite complete, image verified\n```\n";
    let triage = classify_str(fenced);
    assert_eq!(triage.class, TriageClass::Pass);
    assert_eq!(triage.lines, vec![3]);
    assert!(is_fence(b"```text") && is_fence(b"~~~") && is_fence(b"````"));
    assert!(!is_fence(b"``` done") && !is_fence(b"`x`"));
}

/// A line quoted as Markdown inline code reads as the tool printed it; a flashing GUI's Python
/// logging prefix is a stamp; a flasher that crashes under its own command line failed the
/// flash, where a bare segfault is the host's.
#[test]
fn round_fourteen_readings() {
    let quoted = "`make: *** /opt/fw/.config: Is a directory.  Stop.`\n";
    assert_eq!(classify_str(quoted).class, TriageClass::BuildError);
    assert_eq!(unquoted(b"`make: x`"), 1..8);
    assert_eq!(unquoted(b"`WARNING: fetch failed"), 1..22);
    assert_eq!(unquoted(b"exit code '1'`"), 0..13);
    assert_eq!(unquoted(b"error: could not compile `app`"), 0..30);
    assert_eq!(unquoted(b"```text"), 0..7);
    let gui = "2024-01-22 17:23:26,864:INFO:         Using Port : COM3\n2024-01-22 17:23:26,864:ERROR:avrdude stk500v2_getsync() error: timeout communicating with programmer\n";
    let triage = classify_str(gui);
    assert_eq!(
        (triage.class, triage.lines),
        (TriageClass::FlashError, vec![2])
    );
    let flasher = "> lsusb | grep Pico\nBus 009 Device 121: ID 2e8a:0009 Raspberry Pi Pico\n> picotool load blink.uf2 -f\nSegmentation fault (core dumped)\n";
    assert_eq!(classify_str(flasher).class, TriageClass::FlashError);
    assert_eq!(
        classify_str("Segmentation fault (core dumped)\n").class,
        TriageClass::InfraError
    );
    let tinygo = "FAIL    app/cmd/app     0.000s\n# app/internal/config\n..\\..\\internal\\config\\config.go:34:22: undefined: machine.UART0_TX_PIN\n";
    assert_eq!(classify_str(tinygo).class, TriageClass::BuildError);
}

/// OP-TEE's panic is how it handles an assertion; U-Boot's boot steps are no verdict; a Python
/// error in an SCons script is the build's; a flasher's banner names the step of its errors.
#[test]
fn round_fifteen_readings() {
    let logs = [
        (
            "E/TA:  assertion 'arg_type != ARG_NONE' failed at svc.c:196 in pre_invoke_syscall()\nE/TC:0 0 \nE/TC:0 0 TA panicked with code 0xffff0000\n",
            TriageClass::Assert,
        ),
        (
            "E/TC:0 0 Panic at core/arch/arm/mm/core_mmu.c:2114 <check_pa_matches_va>\n",
            TriageClass::Crash,
        ),
        (
            "## Booting kernel from Legacy Image at 10800000 ...\n   Verifying Checksum ... OK\n   Loading Kernel Image ... OK\n\nStarting kernel ...\n",
            TriageClass::Unknown,
        ),
        (
            "scons: Reading SConscript files ...\n  File \"bsp/components/SConscript\", line 9\n    print 'x'\nSyntaxError: invalid syntax\n",
            TriageClass::BuildError,
        ),
        (
            "*    /_   /   MSP430 Flasher v1.3.7       *\n* Initializing interface @ ttyACM2...\n# Exit: 19\n# ERROR: Interface Communication error\n",
            TriageClass::FlashError,
        ),
        (
            "INFO Successfully uploaded program.\nINFO Starting log output from 192.168.1.84 using esphome API\n[20:44:50][C][wifi:391]:   Local MAC: 48:E7:29:C0:78:9C\n",
            TriageClass::Pass,
        ),
    ];
    for (log, class) in logs {
        assert_eq!(classify_str(log).class, class, "{log}");
    }
}

/// A radio controller's assert stalls it, and the interrupt watchdog then panics: the assert is
/// the cause, the watchdog its consequence.
#[test]
fn a_controller_assert_beats_the_watchdog_it_trips() {
    let log = "\
E (337393) BLE_INIT: Malloc failed
assert rwble.c 300, param 00000000 00008800
Guru Meditation Error: Core  0 panic'ed (Interrupt wdt timeout on CPU0).
";
    let triage = classify_str(log);
    assert_eq!(triage.class, TriageClass::Assert);
    assert_eq!(triage.lines, vec![2]);
    // Without the assert, the watchdog is a hang as before.
    let watchdog = "Guru Meditation Error: Core  0 panic'ed (Interrupt wdt timeout on CPU0).\n";
    assert_eq!(classify_str(watchdog).class, TriageClass::Hang);
}

/// ztest's error-hook tests raise an assert or a fault on purpose and pass when it comes.
#[test]
fn an_assert_a_test_case_expected_is_no_failure() {
    let log = "\
START - test_catch_assert_in_isr
ASSERTION FAIL [a != ((void *)0)] @ WEST_TOPDIR/zephyr/tests/ztest/error_hook/src/main.c:41
Caught assert failed
PASS - test_catch_assert_in_isr
START - test_catch_z_oops
";
    let t = classify_str(log);
    assert_eq!(t.class, TriageClass::Unknown, "{t:#?}");
    // An assert in a case that then fails, or that no pass line follows, is one.
    let failed = "ASSERTION FAIL [p] @ main.c:3\nFAIL - test_x in 0.1 seconds\nPASS - test_y in 0.1 seconds\n";
    assert_eq!(classify_str(failed).class, TriageClass::Assert);
    let passed_before = "PASS - test_y in 0.1 seconds\nASSERTION FAIL [p] @ main.c:3\n";
    assert_eq!(classify_str(passed_before).class, TriageClass::Assert);
}

#[test]
fn rules_that_read_a_line_only_after_their_header() {
    let t = classify_str("Ran 3 tests in 0.004s\n\nOK\n");
    assert_eq!((t.class, t.lines.as_slice()), (TriageClass::Pass, &[3][..]));
    // `OK` alone is no verdict.
    assert_eq!(classify_str("OK\n").class, TriageClass::Unknown);
    // ctest's list of failed tests, under its summary or alone.
    let t = classify_str(
        "67% tests passed, 1 tests failed out of 3\n\nThe following tests FAILED:\n\t  3 - test_crc (Failed)\nErrors while running CTest\n",
    );
    assert_eq!(
        (t.class, t.lines.as_slice()),
        (TriageClass::TestFailure, &[1][..])
    );
    let t = classify_str("The following tests FAILED:\n\t  3 - test_crc (Failed)\n");
    assert_eq!(
        (t.class, t.lines.as_slice()),
        (TriageClass::TestFailure, &[1][..])
    );
    // A row of the list without its header (an excerpt that cut it off) still says a test
    // failed.
    let t = classify_str("    1 - test_foo (Failed)\n");
    assert_eq!(
        (t.class, t.lines.as_slice()),
        (TriageClass::TestFailure, &[1][..])
    );
    // MicroPython's `N tests passed` only under its `tests performed` line.
    let t = classify_str("88 tests performed (2301 individual testcases)\n88 tests passed\n");
    assert_eq!((t.class, t.lines.as_slice()), (TriageClass::Pass, &[2][..]));
    assert_eq!(
        classify_str("88 tests passed\n").class,
        TriageClass::Unknown
    );
    // teensy_loader_cli's `Booting` once it has programmed.
    let t = classify_str("Found HalfKay Bootloader\nProgramming.........\nBooting\n");
    assert_eq!((t.class, t.lines.as_slice()), (TriageClass::Pass, &[3][..]));
    assert_eq!(classify_str("Booting\n").class, TriageClass::Unknown);
    // DAPLink's ASSERT.TXT: the file under its `Assert` header.
    let t = classify_str(
        "Assert\nFile: ../../../source/daplink/drag-n-drop/vfs_manager.c\nLine: 412\n",
    );
    assert_eq!(
        (t.class, t.lines.as_slice()),
        (TriageClass::Assert, &[2][..])
    );
    assert_eq!(
        classify_str("File: ../source/main.c\n").class,
        TriageClass::Unknown
    );
}

#[test]
fn a_cause_beats_the_fatal_error_that_reports_it() {
    // Zephyr's fatal-error handler runs after an assert: the assert is what failed.
    let t = classify_str(
        "ASSERTION FAIL @ WEST_TOPDIR/zephyr/subsys/bluetooth/host/l2cap.c:704\n\
         os: >>> ZEPHYR FATAL ERROR 4: Kernel panic on CPU 0\n\
         os: Current thread: 0x20001234 (unknown)\n",
    );
    assert_eq!(
        (t.class, t.lines.clone()),
        (TriageClass::Assert, vec![1]),
        "{t:?}"
    );
    // ESP-IDF's abort() called from the task watchdog's interrupt, as its decoded backtrace
    // shows it: the watchdog fired, so the run hung.
    let t = classify_str(
        "abort() was called at PC 0x400d4634 on core 0\n\
         \n\
         0x400d4634: task_wdt_isr at /esp-idf/components/esp_common/src/task_wdt.c:182\n\
         0x40090702: panic_abort at /esp-idf/components/esp_system/panic.c:363\n",
    );
    assert_eq!(t.class, TriageClass::Hang, "{t:?}");
    // With no other cause, the consequence still decides.
    let t = classify_str("E: >>> ZEPHYR FATAL ERROR 0: CPU exception on CPU 0\n");
    assert_eq!(t.class, TriageClass::Crash, "{t:?}");
    // The ESP8266 Arduino core's software watchdog prints an exception dump after it: the
    // watchdog fired, so the run hung.
    let t = classify_str(
        "Soft WDT reset\n\nException (4):\nepc1=0x40201234 epc2=0x00000000 epc3=0x00000000\n",
    );
    assert_eq!(t.class, TriageClass::Hang, "{t:?}");
    let t = classify_str("Exception (29):\nepc1=0x40201234 epc2=0x00000000 epc3=0x00000000\n");
    assert_eq!(t.class, TriageClass::Crash, "{t:?}");
    // ESP_ERROR_CHECK is the assert behind the abort() it calls.
    let t = classify_str(
        "ESP_ERROR_CHECK failed: esp_err_t 0x107 (ESP_ERR_TIMEOUT) at 0x400d1f2c\n\
         abort() was called at PC 0x4008a1b7 on core 0\n",
    );
    assert_eq!(t.class, TriageClass::Assert, "{t:?}");
}

#[test]
fn a_tools_exit_status_echoes_the_step_that_failed() {
    // Arduino's `exit status 1` closes a link failure as well as a compile failure.
    let t = classify_str(
        "c:/tools/arm-none-eabi/bin/ld.exe: region `FLASH' overflowed by 412 bytes\n\
         collect2.exe: error: ld returned 1 exit status\n\
         exit status 1\n\
         \n\
         Compilation error: exit status 1\n",
    );
    assert_eq!(t.class, TriageClass::LinkError, "{t:?}");
    assert_eq!(
        classify_str("Compilation error: exit status 1\n").class,
        TriageClass::BuildError
    );
}

#[test]
fn a_tally_with_passes_and_no_failures_is_a_pass() {
    let twister = "DEBUG   - Total test suites: 1\n\
                   DEBUG   - Executed test cases: 26\n\
                   DEBUG   - Completed test suites: 1\n\
                   DEBUG   - Passing test suites: 1\n\
                   DEBUG   - Failing test suites: 0\n\
                   DEBUG   - Skipped test suites: 0\n";
    assert_eq!(classify_str(twister).class, TriageClass::Pass);
    let failing = twister.replace("Failing test suites: 0", "Failing test suites: 1");
    assert_eq!(classify_str(&failing).class, TriageClass::TestFailure);
    // `Failed: 0` alone, with no pass counted before it, says nothing ran.
    assert_eq!(
        classify_str("Failed: 0\nSkipped: 4\n").class,
        TriageClass::Unknown
    );
    // Passes counted, but the tally cut before its failures: no verdict.
    assert_eq!(classify_str("Executed: 24\n").class, TriageClass::Unknown);
}

#[test]
fn a_severity_word_counts_after_a_log_prefix() {
    for line in [
        "[2024-01-05 10:11:12] ERROR: device did not answer",
        "2024-01-05T10:11:12Z ERROR: device did not answer",
        "> ERROR: device did not answer",
        "[main] FATAL: device did not answer",
    ] {
        let t = classify_str(line);
        assert_eq!(t.class, TriageClass::BuildError, "{line}: {t:?}");
        assert!(t.reason.contains("low confidence"), "{line}: {t:?}");
    }
    // A word in the middle of a sentence is no severity.
    assert_eq!(
        classify_str("the test checks that no ERROR: line is printed").class,
        TriageClass::Unknown
    );
}

#[test]
fn a_lab_tools_vague_error_is_the_labs() {
    let t = classify_str(
        "start: 1.1 download-retry (timeout 00:10:00) [common]\n\
         ERROR: could not fetch the kernel image\n\
         end: 1.1 download-retry (duration 00:00:03) [common]\n",
    );
    assert_eq!(t.class, TriageClass::InfraError, "{t:?}");
    assert!(t.reason.contains("low confidence"), "{t:?}");
}

/// The committed model of the learned fallback is what its trainer makes of the tuning corpus:
/// it cannot drift from the labels, nor be edited by hand.
#[test]
fn the_committed_fallback_model_is_what_the_trainer_makes_of_real() {
    let logs = fallback::read_corpus(&data_dir().join("real")).unwrap();
    let trained = fallback::train_on(&logs).to_tsv();
    assert!(
        trained == fallback::BUILT_IN_TSV,
        "src/analysis/triage/model.tsv is stale: run `cargo run --example triage_model -- write`"
    );
}

/// The fallback never makes a pass, and decides only logs the rules left UNKNOWN or whose class
/// is a generic line's guess; it overrules a guess only at its stricter bar.
#[test]
fn the_fallback_decides_only_what_the_rules_left_unknown_or_guessed_and_never_passes() {
    let logs = fallback::read_corpus(&data_dir().join("real")).unwrap();
    let mut overruled = 0;
    for log in &logs {
        let text =
            std::fs::read(data_dir().join("real").join(format!("{}.log", log.name))).unwrap();
        let triage = classify(&String::from_utf8_lossy(&text), &PLAIN);
        if triage.class != log.rules.class {
            assert!(
                log.rules.class == TriageClass::Unknown || log.evidence.guess,
                "{}",
                log.name
            );
            assert_ne!(triage.class, TriageClass::Pass, "{}", log.name);
            assert_ne!(triage.class, TriageClass::Unknown, "{}", log.name);
            assert!(triage.reason.contains("low confidence"), "{}", log.name);
            if log.rules.class != TriageClass::Unknown {
                overruled += 1;
                let p: f64 = triage
                    .reason
                    .rsplit("p=")
                    .next()
                    .and_then(|p| p.trim_end_matches(')').parse().ok())
                    .unwrap();
                assert!(p >= fallback::GUESS_PROBABILITY - 0.005, "{}", log.name);
            }
        }
    }
    assert!(overruled > 0, "no guess in the corpus was overruled");
}

/// A generic failure line's guess stands unless the model is very sure of another class; a
/// line that names what failed is never overruled.
#[test]
fn the_fallback_overrules_a_generic_guess_only_when_very_sure() {
    // A bare traceback: the model knows no word of it well enough, so the guess stands.
    let guessed = classify_str("Reading config\nTraceback (most recent call last):\n");
    assert!(
        guessed
            .reason
            .ends_with("(low confidence: a generic failure line; no line names what failed)"),
        "{guessed:?}"
    );
    let named = classify_str(
        "foo.c:1:2: error: expected ';' before '}' token\nTraceback (most recent call last):\n",
    );
    assert_eq!(named.class, TriageClass::BuildError, "{named:?}");
    assert!(!named.reason.contains("low confidence"), "{named:?}");
}

/// A tool no rule knows: its own failure line, in words the corpus taught, gets a class.
#[test]
fn a_failure_line_no_rule_knows_is_read_by_its_words() {
    let triage = classify_str("Connecting to target...\nmyflasher: flash write failed: target not responding, upload aborted\n");
    assert_ne!(triage.class, TriageClass::Pass);
    if triage.class != TriageClass::Unknown {
        assert_eq!(triage.lines, [2]);
        assert!(
            triage.reason.contains("low confidence"),
            "{}",
            triage.reason
        );
    }
}

#[test]
fn a_radio_controllers_assert_explains_the_fault_after_it() {
    let log = "<err> bt_sdc_hci_driver: SoftDevice Controller ASSERT: 7, 99\n\
               <err> os: ***** HARD FAULT *****\n\
               <err> os:   Fault escalation (see below)\n";
    let t = classify_str(log);
    assert_eq!(t.class, TriageClass::Assert, "{t:?}");
    assert_eq!(t.lines, vec![1]);
}

#[test]
fn a_tally_with_failures_under_its_count_is_a_test_failure() {
    let t = classify_str("Test summary:\nExecuted: 12\nFailed: 3\nSkipped: 0\n");
    assert_eq!(t.class, TriageClass::TestFailure, "{t:?}");
    // A `Failed: N` line alone says nothing of tests.
    let t = classify_str("Failed: 3\n");
    assert_eq!(t.class, TriageClass::Unknown, "{t:?}");
}

#[test]
fn an_esp8266_stack_dump_yields_to_the_watchdog_that_caused_it() {
    let dump = ">>>stack>>>\nctx: sys\nsp: 3fffed30 end: 3fffffb0 offset: 01a0\n<<<stack<<<\n";
    let t = classify_str(dump);
    assert_eq!(t.class, TriageClass::Crash, "{t:?}");
    let t = classify_str(&format!("Reset reason: Software Watchdog\n{dump}"));
    assert_eq!(t.class, TriageClass::Hang, "{t:?}");
}

#[test]
fn flashers_closing_lines_are_a_pass_and_a_later_failure_is_not() {
    let t = classify_str("Reading old flash chip contents... done.\nErasing and writing flash chip... Erase/write done.\nVerifying flash... VERIFIED.\n");
    assert_eq!(t.class, TriageClass::Pass, "{t:?}");
    let t = classify_str(
        "Wrote address 0x08001000 (100.00%) Done.\nDownloading 8-bit data failed...\n",
    );
    assert_eq!(t.class, TriageClass::FlashError, "{t:?}");
}

/// Regression: a UTF-8 byte-order mark glued to line 1 hid Unity's summary there from its rule;
/// the fallback guessed the class at low confidence instead.
#[test]
fn a_byte_order_mark_hides_nothing_on_line_1() {
    let log = "12 Tests 1 Failures 0 Ignored\nFAIL\n";
    let plain = classify_reader(log.as_bytes(), &PLAIN).unwrap();
    assert!(!plain.reason.contains("low confidence"), "{plain:#?}");
    let marked = format!("\u{feff}{log}");
    assert_eq!(classify_reader(marked.as_bytes(), &PLAIN).unwrap(), plain);
    assert_eq!(classify(&marked, &PLAIN), plain);
}

/// A UART break (NULs while the line is held low) before a board's text is line noise; NULs
/// beside binary bytes, or alone, are not skipped.
#[test]
fn a_uart_break_is_skipped_but_not_nuls_beside_binary_bytes() {
    assert_eq!(uart_break(b"\0\0\0boot: ok"), 3);
    assert_eq!(uart_break(b"boot: ok"), 0);
    assert_eq!(uart_break(b"\0\0\0"), 0);
    assert_eq!(uart_break(b"\0\0\x01\x02ok"), 0);
    let mut log = vec![0u8; 10_000];
    log.extend_from_slice(b"Guru Meditation Error: Core  0 panic'ed (IllegalInstruction).\n");
    let t = classify_reader(log.as_slice(), &PLAIN).unwrap();
    assert_eq!((t.class, t.lines), (TriageClass::Crash, vec![1]));
}

/// A tool's own closing success, in words no rule knows, is a PASS at low confidence when
/// nothing in the log failed; not when a line bore failure words, nor when the success is a
/// step's, a test case's, or nothing done.
#[test]
fn a_closing_success_no_rule_knows_is_a_low_confidence_pass() {
    for log in [
        "$ flashtool -t mcu123 --erase\nErasing chip...\nChip erase complete\n",
        "12:00:01 - program Started\n12:00:03 - program Finished Successfully\n",
        "Writing 0x0000...\nDone flashing file, it took 1200ms\n",
    ] {
        let t = classify(log, &PLAIN);
        assert_eq!(t.class, TriageClass::Pass, "{log}: {t:#?}");
        assert!(t.reason.contains("low confidence"), "{}", t.reason);
        assert_eq!(t.matches[0].rule_id, SUCCESS_TAIL_RULE);
    }
    for log in [
        "link failed, retrying\nDone\n",
        "[3/9] Completed 'bootloader'\n",
        "PASS - test_sem_take_no_wait\n",
        "Finished erasing 9 pages\n",
        "make: Nothing to be done for 'all'.\n",
        "tool exited: exit code 2, done\n",
        "Job succeeded\n",
    ] {
        let t = classify(log, &PLAIN);
        assert_ne!(t.class, TriageClass::Pass, "{log}: {t:#?}");
    }
}

/// Lines that look like a rule's own but are not its evidence, each with the rule it must not
/// reach: what the reviews of rounds 42 and 43 tried on the debug binary.
const LOOK_ALIKES: &[(&str, &str)] = &[
    // Round 45: markup and info-level tags naming a fault, the fault status register's address
    // or a zero value, a tally of nothing built, an empty failed list, mcumgr's timeout on any
    // command, MSP Flasher's clean close.
    (
        "<td>BusFault</td><td>Bus error on instruction fetch</td>",
        "cortex_m.fault_banner",
    ),
    ("<info> BusFault: enabled", "cortex_m.fault_banner"),
    ("#define CFSR 0xE000ED28", "cortex_m.fault_status"),
    ("SCB->CFSR   0x00000000", "cortex_m.fault_status"),
    ("testhal: 0 builds ok, 0 builds failed", "chibios.builds_ok"),
    (
        "<details><summary>Failed tests (0)</summary>",
        "autopts.failed_tests",
    ),
    ("Error: NMP timeout", "mcumgr.upload_failed"),
    (
        "* Driver : closed (No error)",
        "msp430_flasher.driver_error",
    ),
    // Round 42: a closed pipe under curl, a board's web server, a command line naming avrdude,
    // a numbered warning list, a board's own OTA check, a greentea copy failure (the flash's),
    // a Bazel link action, a test's own `FAILED:` line.
    ("curl: (23) Failed writing body (0 != 16384)", "curl.failed"),
    (
        "curl: (7) Failed to connect to 192.168.4.1 port 80",
        "curl.failed",
    ),
    (
        "Executing: avrdude -c usbasp -p m328p -U flash:w:build/error_demo.hex",
        "avrdude.error",
    ),
    (
        "1. src/main.c:42 - warning: unused variable 'x'",
        "cunit.failure",
    ),
    (
        "E (5123) OTA: image download complete but checksum did not match",
        "download.not_fetched",
    ),
    (
        "mbedgt: test suite results: 1 IOERR_COPY",
        "greentea.ioerr_summary",
    ),
    (
        "ERROR: /src/fw/BUILD:7:1: Linking hello failed: (Exit 1)",
        "bazel.analysis_failed",
    ),
    (
        "FAILED: test_crc.c:42 expected 1 got 2",
        "ninja.step_failed",
    ),
    // Round 43: a compiler naming Unicorn's error codes, a hook's note, a board's memory test,
    // an agent's tool call, a script's header.
    (
        "src/emu.c:42:10: warning: 'UC_ERR_FETCH_PROT' is deprecated",
        "unicorn.fault",
    ),
    (
        "hook_mem_invalid: UC_ERR_READ_UNMAPPED at 0x40000000, mapping page and resuming",
        "unicorn.fault",
    ),
    ("DRAM test failed!", "wolfcrypt.test_failed"),
    (
        "Failed to execute tool: run_shell",
        "cargo_binutils.no_tool",
    ),
    ("BUILD SUMMARY", "waf.build_summary"),
];

#[test]
fn no_rule_claims_its_look_alike_lines() {
    for (line, not) in LOOK_ALIKES {
        assert_ne!(rule_of(line).as_deref(), Some(*not), "{line}");
    }
}

/// A script's `BUILD SUMMARY` header over a failed target is no pass: only waf's line after it
/// is.
#[test]
fn a_build_summary_header_over_a_failure_is_no_pass() {
    assert_ne!(
        classify_str("Building fw_b... FAILED\nBUILD SUMMARY\nFailed: 1\n").class,
        TriageClass::Pass
    );
}

/// Round 44's review: a count or a step's echo does not outrank the line that says what failed,
/// and a double exception after an interrupt watchdog is how the hang was handled.
#[test]
fn echoes_and_consequences_of_round_44_give_way_to_their_cause() {
    let tup = "main.c:(.text+0x8): undefined reference to `foo'\n\
               collect2: error: ld returned 1 exit status\n *** tup: 1 job failed.\n";
    assert_eq!(classify_str(tup).class, TriageClass::LinkError);
    let zig = "error: Error: unable to find a matching CMSIS-DAP device\n\
               zig build flash: error: the following command exited with error code 1:\n";
    assert_ne!(classify_str(zig).class, TriageClass::BuildError);
    let wdt = "Guru Meditation Error: Core  1 panic'ed (Interrupt wdt timeout on CPU1).\n\
               Core  1 register dump:\nPC      : 0x601f8000  PS      : 0x3ffc4178\n\
               Guru Meditation Error: Core  1 panic'ed (Double exception).\n";
    assert_eq!(classify_str(wdt).class, TriageClass::Hang);
    let alone = "Guru Meditation Error: Core  1 panic'ed (Double exception).\n";
    assert_eq!(classify_str(alone).class, TriageClass::Crash);
}
