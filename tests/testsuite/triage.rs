//! `fwfix triage`: the real binary over the recorded logs in `tests/data/triage/`, with and
//! without `--json` and `--timed-out`, and its exit status when a file cannot be read.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by panicking

use crate::common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/triage")
}

/// `expected.tsv`: (file, class, lines, class with --timed-out, lines with --timed-out).
fn manifest() -> Vec<[String; 5]> {
    std::fs::read_to_string(data_dir().join("expected.tsv"))
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let cols: Vec<String> = l.split('\t').map(str::to_string).collect();
            cols.try_into().unwrap()
        })
        .collect()
}

fn json_lines(lines: &str) -> Value {
    if lines == "-" {
        return Value::Array(Vec::new());
    }
    Value::Array(
        lines
            .split(',')
            .map(|n| Value::from(n.parse::<u64>().unwrap()))
            .collect(),
    )
}

fn triage(args: &[&str]) -> std::process::Output {
    let mut all = vec!["triage"];
    all.extend_from_slice(args);
    fwfix(&all, &data_dir())
}

#[test]
fn json_has_one_object_per_file_in_order() {
    let rows = manifest();
    let files: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    for timed_out in [false, true] {
        let mut args = files.clone();
        args.push("--json");
        if timed_out {
            args.push("--timed-out");
        }
        let out = triage(&args);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let objects = events(&out);
        assert_eq!(objects.len(), rows.len(), "{}", text(&out));
        for (row, object) in rows.iter().zip(&objects) {
            let (class, lines) = if timed_out {
                (&row[3], &row[4])
            } else {
                (&row[1], &row[2])
            };
            assert_eq!(object["file"], row[0].as_str());
            assert_eq!(object["class"], class.as_str(), "{}: {object:#}", row[0]);
            assert_eq!(object["lines"], json_lines(lines), "{}: {object:#}", row[0]);
            assert!(!object["reason"].as_str().unwrap().is_empty(), "{object:#}");
        }
    }
}

#[test]
fn json_carries_the_error_class_and_the_matches() {
    let out = triage(&[
        "ld_undefined_reference.log",
        "unity_crash_qemu.log",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let objects = events(&out);
    assert_eq!(objects[0]["class"], "LINK_ERROR");
    assert_eq!(objects[0]["error_class"], "BUILD_FAILURE");
    assert_eq!(
        objects[0]["reason"],
        "/home/dev/fw/src/crc.c:46: undefined reference to `crc16_table_init'"
    );
    let rules: Vec<&str> = objects[0]["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["rule_id"].as_str().unwrap())
        .collect();
    assert_eq!(rules, ["ld.undefined_reference", "ld.collect2"]);
    assert_eq!(objects[1]["class"], "CRASH");
    assert_eq!(objects[1]["error_class"], Value::Null);
}

#[test]
fn text_output_names_class_lines_and_reason_and_quotes_the_lines() {
    let out = triage(&["ld_region_overflow.log", "unity_pass.log"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[0],
        "ld_region_overflow.log: LINK_ERROR (lines 3, 4): build/lm3s6965evb/test_crc.elf section `.text' will not fit in region `FLASH'"
    );
    assert!(lines[1].trim_start().starts_with("3 | "), "{stdout}");
    assert!(
        lines[2].ends_with("ld: region `FLASH' overflowed by 2308 bytes"),
        "{stdout}"
    );
    assert_eq!(
        lines[3],
        "unity_pass.log: PASS (lines 8, 9): 5 Tests 0 Failures 0 Ignored"
    );
    assert!(lines[4].trim_start().starts_with("8 | 5 Tests"), "{stdout}");
    assert!(lines[5].trim_start().starts_with("9 | OK"), "{stdout}");
    assert_eq!(lines.len(), 6, "{stdout}");
}

#[test]
fn timed_out_turns_output_that_just_stops_into_a_hang() {
    let out = triage(&["unity_hang_stdout.log"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("unity_hang_stdout.log: PASS (lines 1, 2, 3): "),
        "{stdout}"
    );
    assert!(stdout.contains("(no final verdict in the log)"), "{stdout}");

    let out = triage(&["--timed-out", "unity_hang_stdout.log", "unity_pass.log"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with(
            "unity_hang_stdout.log: HANG (line 3): the run timed out with no verdict; the output stops at line 3\n"
        ),
        "{stdout}"
    );
    // A log that reached its verdict did not hang, timeout or not.
    assert!(
        stdout.contains("unity_pass.log: PASS (lines 8, 9)"),
        "{stdout}"
    );
}

#[test]
fn a_missing_file_is_named_and_exits_2_after_the_others() {
    let out = triage(&["unity_fail.log", "no-such.log", "unity_pass.log"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("unity_fail.log: TEST_FAILURE"), "{stdout}");
    assert!(stdout.contains("unity_pass.log: PASS"), "{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no-such.log") && stderr.contains("No such file or directory"),
        "{stderr}"
    );

    let out = triage(&["unity_fail.log", "no-such.log", "--json"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let objects = events(&out);
    assert_eq!(objects.len(), 2, "{}", text(&out));
    assert_eq!(objects[0]["class"], "TEST_FAILURE");
    assert_eq!(objects[1]["file"], "no-such.log");
    // The contract's fields are there, with no class: nothing was read.
    assert!(objects[1]["class"].is_null(), "{:#}", objects[1]);
    assert_eq!(objects[1]["lines"], serde_json::json!([]));
    assert!(objects[1]["reason"]
        .as_str()
        .unwrap()
        .contains("No such file"));
    assert!(
        objects[1]["error"]
            .as_str()
            .unwrap()
            .contains("No such file or directory"),
        "{:#}",
        objects[1]
    );
}

#[test]
fn a_directory_is_not_a_readable_log() {
    let out = triage(&["."]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

/// Regression: fwfix's own binary (an ELF, like the firmware image a user may give by mistake)
/// was classified as a FLASH_ERROR quoting binary garbage, with exit 0.
#[test]
fn an_elf_image_is_named_as_no_log_and_exits_2() {
    let elf = env!("CARGO_BIN_EXE_fwfix");
    let out = triage(&["unity_pass.log", elf]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("unity_pass.log: PASS"), "{stdout}");
    assert!(!stdout.contains(elf), "{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("{elf} is an ELF image, not a log")),
        "{stderr}"
    );
}

#[test]
fn help_documents_the_exit_status() {
    let out = triage(&["--help"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("--timed-out"), "{help}");
    assert!(
        help.contains("Exit status: 0 when every file was read"),
        "{help}"
    );
    assert!(help.contains("2 when a file could not be read"), "{help}");
}

#[test]
fn no_file_is_a_usage_error() {
    let out = triage(&[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

#[test]
fn a_fresh_console_log_from_fwfix_test_is_triaged_like_the_recorded_one() {
    // The recorded console.log came from this very fixture; a run made now must read the same
    // class, decided by the fault line fwfix writes when it reads a crash at the handler's entry.
    let repo = FixtureRepo::new();
    let out = fwfix(
        &[
            "test",
            "--repo",
            repo.path().to_str().unwrap(),
            "--board",
            "qemu-mps2-an385",
            "--profile",
            "sensor",
            "--json",
        ],
        repo.path(),
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let console = run_dir(&out).join("iter-000/console.log");
    let out = fwfix(
        &["triage", "--json", console.to_str().unwrap()],
        repo.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let object = &events(&out)[0];
    assert_eq!(object["class"], "CRASH", "{object:#}");
    assert!(
        object["reason"]
            .as_str()
            .unwrap()
            .starts_with("HardFault at pc="),
        "{object:#}"
    );
}
