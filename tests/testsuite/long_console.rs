//! A run whose harness prints more result lines than fwfix keeps of a console in memory: the real
//! binary builds a small Unity-format image (written here) with arm-none-eabi-gcc and runs it on
//! real QEMU. The harness parses every line as it arrives, so every result reaches the report
//! although the in-memory capture was cut to its head, tail and a bounded middle.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by panicking

use crate::common::*;

/// More results than the capture keeps (its first and last 20,000 lines and 100,000 from the
/// middle).
const CASES: usize = 150_000;

/// Prints `CASES` passing results in Unity's format, its summary and `OK`, and exits 0 (Unity's
/// failure count). The cases are named `case_N`, not `test_*`, so no symbol of the image is taken
/// for a test that was never reported.
const IMAGE: &str = r#"
#include "console.h"
#include "semihosting.h"

static void print(const char *s)
{
    while (*s != '\0') {
        console_putc(*s++);
    }
}

static void print_uint(unsigned value)
{
    char digits[10];
    int n = 0;
    do {
        digits[n++] = (char)('0' + value % 10u);
        value /= 10u;
    } while (value != 0u);
    while (n > 0) {
        console_putc(digits[--n]);
    }
}

int main(void)
{
    for (unsigned i = 0; i < CASES; i++) {
        print("tests/many.c:");
        print_uint(i + 1u);
        print(":case_");
        print_uint(i);
        print(":PASS\n");
    }
    print("\n-----------------------\n");
    print_uint(CASES);
    print(" Tests 0 Failures 0 Ignored\nOK\n");
    semihost_exit(0);
}
"#;

fn profile() -> String {
    format!(
        r#"name = "many"
[build]
command = "mkdir -p build && arm-none-eabi-gcc -mcpu=cortex-m3 -mthumb -nostdlib -ffreestanding -g -O1 -DCASES={CASES}u -Iplatform -T boards/{{machine}}/link.ld -Wl,--gc-sections -o build/many.elf platform/startup.c platform/nonce.c platform/semihosting.c platform/string.c boards/{{machine}}/uart.c tests/many.c"
artifact = "build/many.elf"
[test]
harness = "unity"
timeout_s = 600
"#
    )
}

#[test]
fn every_result_of_a_console_longer_than_the_capture_reaches_the_report() {
    require_tools();
    let repo = FixtureRepo::new();
    repo.write("tests/many.c", IMAGE);
    repo.write("profiles/many.toml", &profile());
    let out = fwfix(
        &[
            "test",
            "--json",
            "--repo",
            repo.path().to_str().unwrap(),
            "--board",
            "qemu-mps2-an385",
            "--profile",
            "many",
        ],
        repo.path(),
    );
    let dir = run_dir(&out);
    let report = report(&dir);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{:#}",
        text(&out),
        report["notes"]
    );
    assert_eq!(report["status"], "PASSED");
    assert_eq!(
        report["attempts"][0]["end"], "verdict",
        "{:#}",
        report["attempts"]
    );
    // The capture kept in memory lost most of the middle; the results did not.
    let notes = report["notes"].to_string();
    assert!(notes.contains("truncated"), "{notes}");
    let cases = report["cases"].as_array().unwrap();
    assert_eq!(cases.len(), CASES);
    assert!(cases.iter().all(|c| c["status"] == "PASS"));
    assert_eq!(cases[CASES / 2]["name"], format!("case_{}", CASES / 2));
    assert_eq!(cases[CASES - 1]["line"], CASES);
    let printed = uart_lines(&dir.join("iter-000/console.log"))
        .iter()
        .filter(|l| l.ends_with(":PASS"))
        .count();
    assert_eq!(printed, CASES);
}
