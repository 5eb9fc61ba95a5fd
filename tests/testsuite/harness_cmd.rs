//! `fwfix test` end to end with the ztest and regex harnesses: the real binary builds firmware
//! with arm-none-eabi-gcc, runs it on real QEMU, and the tests read the run directory it leaves.
//! The regex profiles run the fixture's Unity images; the ztest image is a small program written
//! here that prints ztest's console format and then idles the way Zephyr does after its final
//! word, so only the harness's end detector can end the run early.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by panicking

use crate::common::*;

const MPS2: &str = "qemu-mps2-an385";

fn test_cmd(repo: &FixtureRepo, profile: &str) -> std::process::Output {
    fwfix(
        &[
            "test",
            "--json",
            "--repo",
            repo.path().to_str().unwrap(),
            "--board",
            MPS2,
            "--profile",
            profile,
        ],
        repo.path(),
    )
}

fn statuses(report: &serde_json::Value) -> Vec<(String, String)> {
    report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                c["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected
        .iter()
        .map(|(n, s)| (n.to_string(), s.to_string()))
        .collect()
}

/// A Unity fixture image under the regex harness.
fn regex_profile(name: &str, image: &str, regex: &str) -> String {
    format!(
        r#"name = "{name}"
[build]
command = "make BOARD={{machine}} build/{{machine}}/test_{image}.elf"
artifact = "build/{{machine}}/test_{image}.elf"
[test]
harness = "regex"
timeout_s = 20
[test.regex]
{regex}
"#
    )
}

#[test]
fn regex_patterns_in_order_pass_and_end_the_run_at_the_last_one() {
    let repo = FixtureRepo::new();
    repo.write(
        "profiles/ringbuf-regex.toml",
        &regex_profile(
            "ringbuf-regex",
            "ringbuf",
            r#"patterns = ["test_ringbuf_\\w+:PASS", "^[0-9]+ Tests 0 Failures"]
fail_patterns = [":FAIL"]"#,
        ),
    );
    let out = test_cmd(&repo, "ringbuf-regex");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report = report(&run_dir(&out));
    assert_eq!(report["status"], "PASSED");
    assert_eq!(
        statuses(&report),
        pairs(&[
            ("test_ringbuf_\\w+:PASS", "PASS"),
            ("^[0-9]+ Tests 0 Failures", "PASS"),
            ("ringbuf-regex", "PASS"),
        ])
    );
    // The summary line completes the patterns: the detector ends the run before the image's
    // own `OK` line and exit.
    assert_eq!(report["attempts"][0]["end"], "verdict", "{report:#}");
}

#[test]
fn regex_fail_pattern_fails_the_run_with_the_line() {
    let repo = FixtureRepo::new();
    repo.write(
        "profiles/crc-regex.toml",
        &regex_profile(
            "crc-regex",
            "crc",
            r#"type = "one_line"
patterns = ["^OK$"]
fail_patterns = [":FAIL:"]
case_name = "crc console""#,
        ),
    );
    let out = test_cmd(&repo, "crc-regex");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let report = report(&run_dir(&out));
    assert_eq!(report["status"], "FAILED");
    assert_eq!(statuses(&report), pairs(&[("crc console", "FAIL")]));
    // The fail line itself is the message; which pattern matched where is a note.
    let message = case(&report, "crc console")["message"].as_str().unwrap();
    assert_eq!(
        message,
        "tests/test_crc.c:23:test_crc16_known_vector:FAIL: Expected 0x29B1 Was 0x31C3"
    );
    let notes = report["notes"].to_string();
    assert!(notes.contains("`:FAIL:` matched line "), "{notes}");
    assert_eq!(report["attempts"][0]["end"], "verdict", "{report:#}");
}

#[test]
fn regex_run_that_crashes_carries_the_crash_on_its_run_case() {
    let repo = FixtureRepo::new();
    repo.write(
        "profiles/sensor-regex.toml",
        &regex_profile("sensor-regex", "sensor", r#"patterns = ["^OK$"]"#),
    );
    let out = test_cmd(&repo, "sensor-regex");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let report = report(&run_dir(&out));
    assert_eq!(
        statuses(&report),
        pairs(&[("^OK$", "MISSING"), ("sensor-regex", "CRASH")])
    );
    assert!(report["crash"].is_object(), "{report:#}");
    assert!(qemu_processes_mentioning(repo.path()).is_empty());
}

#[test]
fn invalid_regex_is_a_configuration_error_naming_line_and_column() {
    let repo = FixtureRepo::new();
    repo.write(
        "profiles/broken.toml",
        &regex_profile("broken", "ringbuf", r#"patterns = ["Tests", "tick [0-9"]"#),
    );
    let out = test_cmd(&repo, "broken");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    // With --json the error is the `finished` event's message.
    assert!(
        text(&out).contains(
            "broken.toml:9:28: invalid value for `patterns` in [test.regex]: `tick [0-9` is not \
             a valid regex: unclosed character class"
        ),
        "{}",
        text(&out)
    );
}

/// Prints ztest's Zephyr 3.x console format, then idles forever like Zephyr after its final
/// word. Built with `-DCRASH`, the second test calls through a bad pointer first; with `-DDUMP`
/// it prints a fault handler's register dump instead and spins, as a board would.
const ZTEST_IMAGE: &str = r#"
#include <stdint.h>

#include "console.h"

static void print(const char *s)
{
    while (*s != '\0') {
        console_putc(*s++);
    }
}

#ifdef DUMP
static void print_hex(uint32_t value)
{
    print("0x");
    for (int shift = 28; shift >= 0; shift -= 4) {
        console_putc("0123456789abcdef"[(value >> shift) & 0xFu]);
    }
}

__attribute__((noinline, used)) void sensor_poll(void)
{
}

static void print_fault_dump(void)
{
    print("HardFault!\n  PC   = ");
    print_hex((uint32_t)(uintptr_t)&sensor_poll & ~1u);
    print("\n  LR   = ");
    print_hex((uint32_t)(uintptr_t)&print_fault_dump);
    print("\n  CFSR = 0x00000100\n");
    for (;;) {
    }
}
#endif

#ifdef CRASH
static void call_bad_hook(void)
{
    void (*volatile hook)(void) = (void (*)(void))0xFFFFFFFFu;
    hook();
}
#endif

int main(void)
{
    print("*** Booting Zephyr OS build v3.5.0 ***\n");
    print("Running TESTSUITE demo\n");
    print("===================================================================\n");
    print("START - test_ok\n");
    print(" PASS - test_ok in 0.001 seconds\n");
    print("===================================================================\n");
#ifdef CRASH
    print("START - test_bad_hook\n");
    call_bad_hook();
#endif
#ifdef DUMP
    print("START - test_dump\n");
    print_fault_dump();
#endif
    print("START - test_assert\n\n");
    print("    Assertion failed at tests/ztest_demo.c:42: demo_test_assert: (1 == 2 is false)\n");
    print("values differ\n\n");
    print(" FAIL - test_assert in 0.001 seconds\n");
    print("===================================================================\n");
    print("TESTSUITE demo failed.\n\n");
    print("------ TESTSUITE SUMMARY START ------\n\n");
    print("SUITE FAIL -  50.00% [demo]: pass = 1, fail = 1, skip = 0, total = 2 duration = 0.002 seconds\n");
    print(" - PASS - [demo.test_ok] duration = 0.001 seconds\n");
    print(" - FAIL - [demo.test_assert] duration = 0.001 seconds\n\n");
    print("------ TESTSUITE SUMMARY END ------\n\n");
    print("===================================================================\n");
    print("PROJECT EXECUTION FAILED\n");
    for (;;) {
    }
}
"#;

fn ztest_profile(name: &str, defines: &str, timeout_s: u32) -> String {
    format!(
        r#"name = "{name}"
[build]
command = "mkdir -p build && arm-none-eabi-gcc -mcpu=cortex-m3 -mthumb -nostdlib -ffreestanding -g -O1 {defines} -Iplatform -T boards/{{machine}}/link.ld -Wl,--gc-sections -o build/{name}.elf platform/startup.c platform/nonce.c platform/semihosting.c platform/string.c boards/{{machine}}/uart.c tests/ztest_demo.c"
artifact = "build/{name}.elf"
[test]
harness = "ztest"
timeout_s = {timeout_s}
"#
    )
}

#[test]
fn ztest_failure_ends_at_the_final_word_with_the_assertion() {
    let repo = FixtureRepo::new();
    repo.write("tests/ztest_demo.c", ZTEST_IMAGE);
    repo.write("profiles/zdemo.toml", &ztest_profile("zdemo", "", 20));
    let out = test_cmd(&repo, "zdemo");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let report = report(&run_dir(&out));
    assert_eq!(report["status"], "FAILED");
    assert_eq!(
        statuses(&report),
        pairs(&[("demo.test_ok", "PASS"), ("demo.test_assert", "FAIL")])
    );
    let failed = case(&report, "demo.test_assert");
    assert_eq!(failed["file"], "tests/ztest_demo.c");
    assert_eq!(failed["line"], 42);
    assert_eq!(failed["message"], "(1 == 2 is false): values differ");
    // The image never exits: `PROJECT EXECUTION FAILED` ended the run, not the 20 s timeout.
    let attempt = &report["attempts"][0];
    assert_eq!(attempt["end"], "verdict", "{report:#}");
    assert!(
        attempt["duration_ms"].as_u64().unwrap() < 10_000,
        "{attempt:#}"
    );
    assert!(qemu_processes_mentioning(repo.path()).is_empty());
}

#[test]
fn ztest_crash_is_blamed_on_the_test_that_started() {
    let repo = FixtureRepo::new();
    repo.write("tests/ztest_demo.c", ZTEST_IMAGE);
    repo.write(
        "profiles/zcrash.toml",
        &ztest_profile("zcrash", "-DCRASH", 20),
    );
    let out = test_cmd(&repo, "zcrash");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let report = report(&run_dir(&out));
    assert_eq!(
        statuses(&report),
        pairs(&[("demo.test_ok", "PASS"), ("demo.test_bad_hook", "CRASH")])
    );
    let crash = &report["crash"];
    assert!(crash.is_object(), "{report:#}");
    assert_eq!(crash["pc"], "0xfffffffe", "{crash:#}");
    assert!(
        report["attempts"][0]["duration_ms"].as_u64().unwrap() < 10_000,
        "{report:#}"
    );
    assert!(qemu_processes_mentioning(repo.path()).is_empty());
}

#[test]
fn a_fault_dump_on_the_console_is_a_crash_symbolised_from_the_dump() {
    // The image prints a register dump and spins without faulting: QEMU sees no exception, so
    // the run times out with no fault snapshot, and the dump is all there is.
    let repo = FixtureRepo::new();
    repo.write("tests/ztest_demo.c", ZTEST_IMAGE);
    repo.write("profiles/zdump.toml", &ztest_profile("zdump", "-DDUMP", 2));
    let out = test_cmd(&repo, "zdump");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let report = report(&run_dir(&out));
    assert_eq!(
        statuses(&report),
        pairs(&[("demo.test_ok", "PASS"), ("demo.test_dump", "CRASH")])
    );
    assert_eq!(report["attempts"][0]["end"], "timeout", "{report:#}");
    let crash = &report["crash"];
    assert_eq!(crash["function"], "sensor_poll", "{crash:#}");
    assert_eq!(crash["cfsr"], "0x00000100", "{crash:#}");
    assert!(qemu_processes_mentioning(repo.path()).is_empty());
}
