//! Crashes inside a running RTOS, end to end on both QEMU machines: each crash variant of the RTOS
//! fixture (fixtures/rtos) under `fwfix test`, whose report must name the function and the
//! file:line that faulted. The fixture marks each faulting line `/* FAULT-LINE: <variant> */`;
//! the tests find it there, so they follow the sources when lines move.
//!
//! The faults: in a task, frame on its PSP (a null function pointer called, an unmapped read, an
//! undefined instruction, a stack overflow into an MPU guard), and inside the SysTick interrupt,
//! frame on the main stack at the top of RAM. Every fault handler is a `for (;;)` that pushes
//! nothing and prints nothing. And a vector table with no fault handlers at all, where the first
//! fault locks the core up and QEMU aborts.
#![allow(clippy::unwrap_used, clippy::expect_used)] // panics are how tests fail

use crate::common::*;
use std::path::Path;

const MPS2: &str = "qemu-mps2-an385";
const LM3S: &str = "qemu-lm3s6965evb";

/// Each crash variant and the function whose line faulted (for `null_call`, the caller of the null
/// function pointer: the line of the call).
const VARIANTS: [(&str, &str); 5] = [
    ("null_call", "events_post"),
    ("bad_read", "sensor_read"),
    ("undef", "checksum_add"),
    ("stack_overflow", "record_history"),
    ("isr_fault", "watchdog_kick"),
];

/// Where the fixture's sources mark the line `variant` faults on: (file, 1-based line).
fn fault_line(variant: &str) -> (String, u64) {
    let marker = format!("FAULT-LINE: {variant} ");
    let src = rtos_fixture_dir().join("src");
    let mut found = Vec::new();
    for path in files_under(&src) {
        let text = std::fs::read_to_string(&path).unwrap();
        for (i, line) in text.lines().enumerate() {
            if line.contains(&marker) {
                let rel = path.strip_prefix(rtos_fixture_dir()).unwrap();
                found.push((rel.to_string_lossy().into_owned(), i as u64 + 1));
            }
        }
    }
    assert_eq!(found.len(), 1, "`{marker}` marks {found:?}");
    found.remove(0)
}

/// Runs one variant and returns what is wrong with its report, if anything.
fn check_variant(
    repo: &Path,
    scratch: &Path,
    board: &str,
    variant: &str,
    function: &str,
) -> Vec<String> {
    let profile = rtos_variant_profile(scratch, variant);
    let out = fwfix(
        &[
            "test",
            "--json",
            "--repo",
            repo.to_str().unwrap(),
            "--board",
            board,
            "--profile",
            profile.to_str().unwrap(),
        ],
        repo,
    );
    if out.status.code() != Some(1) {
        return vec![format!("{variant}: expected exit 1: {}", text(&out))];
    }
    let report = report(&run_dir(&out));
    let crash = &report["crash"];
    let (file, line) = fault_line(variant);
    let mut wrong = Vec::new();
    if case(&report, "self_check")["status"] != "CRASH" {
        wrong.push(format!(
            "{variant}: self_check is {:#}",
            case(&report, "self_check")
        ));
    }
    if report["attempts"][0]["end"] != "crash" {
        wrong.push(format!(
            "{variant}: the attempt ended by {}",
            report["attempts"][0]["end"]
        ));
    }
    let got = (
        crash["function"].as_str(),
        crash["file"].as_str(),
        crash["line"].as_u64(),
    );
    if got != (Some(function), Some(file.as_str()), Some(line)) {
        wrong.push(format!(
            "{variant}: expected {function} at {file}:{line}, the report says {crash:#}"
        ));
    }
    wrong
}

fn crash_variants_name_their_line(board: &str) {
    let repo = FixtureRepo::rtos();
    let scratch = tempfile::tempdir().unwrap();
    let wrong: Vec<String> = VARIANTS
        .iter()
        .flat_map(|(variant, function)| {
            check_variant(repo.path(), scratch.path(), board, variant, function)
        })
        .collect();
    assert!(wrong.is_empty(), "{board}:\n{}", wrong.join("\n"));
    assert!(qemu_processes_mentioning(repo.path()).is_empty());
}

#[test]
fn each_rtos_crash_is_reported_at_its_function_and_line_on_mps2_an385() {
    crash_variants_name_their_line(MPS2);
}

#[test]
fn each_rtos_crash_is_reported_at_its_function_and_line_on_lm3s6965evb() {
    crash_variants_name_their_line(LM3S);
}

/// The null call again, but the vector table's fault entries are empty: the HardFault has nowhere
/// to go, the core locks up and QEMU aborts with the frame unread. The report says lockup, and
/// names no function rather than a wrong one.
#[test]
fn a_vector_table_without_fault_handlers_is_a_lockup_that_names_no_wrong_function() {
    let repo = FixtureRepo::rtos();
    let scratch = tempfile::tempdir().unwrap();
    let profile = rtos_variant_profile(scratch.path(), "no_fault_handlers");
    for board in [MPS2, LM3S] {
        let out = fwfix(
            &[
                "test",
                "--json",
                "--repo",
                repo.path().to_str().unwrap(),
                "--board",
                board,
                "--profile",
                profile.to_str().unwrap(),
            ],
            repo.path(),
        );
        assert_eq!(out.status.code(), Some(1), "{board}: {}", text(&out));
        let report = report(&run_dir(&out));
        assert_eq!(case(&report, "self_check")["status"], "CRASH");
        let crash = &report["crash"];
        assert_eq!(crash["lockup"], true, "{board}: {crash:#}");
        let (file, line) = fault_line("null_call");
        assert!(
            crash["function"].is_null()
                || (crash["function"] == "events_post"
                    && crash["file"] == file.as_str()
                    && crash["line"] == line),
            "{board}: {crash:#}"
        );
    }
    assert!(qemu_processes_mentioning(repo.path()).is_empty());
}
