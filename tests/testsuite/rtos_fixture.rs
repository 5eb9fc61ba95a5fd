//! The RTOS fixture (fixtures/rtos) end to end through the `fwfix` binary on both QEMU machines:
//! firmware that never exits, decided by the regex harness at its first status line; a regression
//! in its git history found by `fwfix bisect` and undone by `fwfix run --strategy revert`; and each
//! crash variant under `fwfix test`, whose report.json must name the function and file:line the
//! fixture marks `/* FAULT-LINE: <variant> */` (found by scanning its sources, so the tests follow
//! them when lines move). Real builds, real QEMU; a verdict comes a second after boot, and the
//! attempt ends there instead of at the test timeout.
#![allow(clippy::unwrap_used, clippy::expect_used)] // panics are how tests fail

use crate::common::*;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

const MPS2: &str = "qemu-mps2-an385";
const LM3S: &str = "qemu-lm3s6965evb";

fn test_cmd(repo: &Path, board: &str, profile: &str) -> Output {
    fwfix(
        &[
            "test",
            "--json",
            "--repo",
            repo.to_str().unwrap(),
            "--board",
            board,
            "--profile",
            profile,
        ],
        repo,
    )
}

/// The firmware's status lines in the run's only attempt.
fn status_lines(run_dir: &Path) -> Vec<String> {
    uart_lines(&run_dir.join("iter-000/console.log"))
        .into_iter()
        .filter(|l| l.starts_with("status: "))
        .collect()
}

fn the_first_status_line_decides(board: &str) {
    let repo = FixtureRepo::rtos();
    let scratch = tempfile::tempdir().unwrap();

    let out = test_cmd(repo.path(), board, "rtos");
    assert_eq!(out.status.code(), Some(0), "{board}: {}", text(&out));
    let dir = run_dir(&out);
    let report = report(&dir);
    assert_eq!(report["status"], "PASSED");
    assert_eq!(case(&report, "self_check")["status"], "PASS");
    // Ended by the harness at the first OK line, not by the timeout.
    assert_eq!(report["attempts"][0]["end"], "verdict", "{report:#}");
    assert_eq!(
        status_lines(&dir).first().map(String::as_str),
        Some("status: OK ticks=1000")
    );

    let regress = rtos_variant_profile(scratch.path(), "regress");
    let out = test_cmd(repo.path(), board, regress.to_str().unwrap());
    assert_eq!(out.status.code(), Some(1), "{board}: {}", text(&out));
    let dir = run_dir(&out);
    let report = crate::common::report(&dir);
    assert_eq!(report["status"], "FAILED");
    let self_check = case(&report, "self_check");
    assert_eq!(self_check["status"], "FAIL");
    // The ERROR line itself is the message, though no pass pattern ever matched.
    let message = self_check["message"].as_str().unwrap();
    assert!(
        message.starts_with("status: ERROR queue: expected item ")
            && message.ends_with(" ticks=1000"),
        "{message}"
    );
    assert_eq!(report["attempts"][0]["end"], "verdict", "{report:#}");
    assert_eq!(
        status_lines(&dir).first().map(String::as_str),
        Some(message)
    );
    assert!(qemu_processes_mentioning(repo.path()).is_empty());
}

#[test]
fn the_first_status_line_decides_and_ends_the_attempt_on_mps2_an385() {
    the_first_status_line_decides(MPS2);
}

#[test]
fn the_first_status_line_decides_and_ends_the_attempt_on_lm3s6965evb() {
    the_first_status_line_decides(LM3S);
}

/// The history: the fixture as shipped (good), harmless work, the culprit (the queue's room check
/// made `<=`, so a full queue overwrites its oldest item), and more harmless work up to HEAD.
const LEN: usize = 8;
const CULPRIT: usize = 4;

fn commit(repo: &FixtureRepo, message: &str) -> String {
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", message]);
    repo.git(&["rev-parse", "HEAD"]).trim().to_string()
}

fn edit(repo: &FixtureRepo, rel: &str, edit: impl Fn(&str) -> String) {
    let old = std::fs::read_to_string(repo.path().join(rel)).unwrap();
    let new = edit(&old);
    assert_ne!(new, old, "the edit changed nothing in {rel}");
    repo.write(rel, &new);
}

fn history() -> (FixtureRepo, Vec<String>) {
    let repo = FixtureRepo::rtos();
    let mut line = vec![repo.git(&["rev-parse", "HEAD"]).trim().to_string()];
    for i in 1..LEN {
        let id = if i == CULPRIT {
            edit(&repo, "src/queue.c", |text| {
                text.replace(
                    "return q->count < QUEUE_LEN;",
                    "return q->count <= QUEUE_LEN;",
                )
            });
            commit(&repo, "queue: let a full queue take its last slot")
        } else if i % 2 == 0 {
            edit(&repo, "src/watchdog.c", |text| {
                format!("{text}/* reviewed {i} */\n")
            });
            commit(&repo, &format!("watchdog: review {i}"))
        } else {
            edit(&repo, "README.md", |text| format!("{text}\n- change {i}\n"));
            commit(&repo, &format!("docs: change {i}"))
        };
        line.push(id);
    }
    (repo, line)
}

fn bisect_and_revert(board: &str) {
    let (repo, line) = history();

    let out = fwfix(
        &[
            "bisect",
            "--json",
            "--repo",
            repo.path().to_str().unwrap(),
            "--board",
            board,
            "--profile",
            "rtos",
            "--good",
            &line[0],
        ],
        repo.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{board}: {}", text(&out));
    let report = report(&run_dir(&out));
    assert_eq!(report["status"], "SUCCESS");
    assert_eq!(report["culprit"], line[CULPRIT], "{:#}", report["steps"]);
    // The culprit's cases: its first status line, the ERROR one.
    let self_check = case(&report, "self_check");
    assert_eq!(self_check["status"], "FAIL");
    assert!(self_check["message"]
        .as_str()
        .unwrap()
        .starts_with("status: ERROR queue: "));
    for step in report["steps"].as_array().unwrap() {
        assert!(
            step["verdict"] == "GOOD" || step["verdict"] == "BAD",
            "{board}: {step:#}"
        );
    }

    let out = fwfix(
        &[
            "run",
            "--json",
            "--repo",
            repo.path().to_str().unwrap(),
            "--board",
            board,
            "--profile",
            "rtos",
            "--strategy",
            "revert",
            "--good",
            &line[0],
        ],
        repo.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{board}: {}", text(&out));
    let report = crate::common::report(&run_dir(&out));
    assert_eq!(report["status"], "SUCCESS");
    assert_eq!(report["fixed"], serde_json::json!(["self_check"]));
    let fix = std::fs::read_to_string(report["patch"].as_str().unwrap()).unwrap();
    assert!(
        fix.contains("-    return q->count <= QUEUE_LEN;\n+    return q->count < QUEUE_LEN;"),
        "{fix}"
    );
    let branch = report["branch"].as_str().unwrap();
    assert_eq!(
        repo.git(&["rev-parse", &format!("{branch}^")]).trim(),
        line[LEN - 1]
    );
    assert!(qemu_processes_mentioning(repo.path()).is_empty());
}

#[test]
fn a_regression_in_the_rtos_history_is_bisected_and_reverted_on_mps2_an385() {
    bisect_and_revert(MPS2);
}

#[test]
fn a_regression_in_the_rtos_history_is_bisected_and_reverted_on_lm3s6965evb() {
    bisect_and_revert(LM3S);
}

// Crashes: in a task, frame on its PSP (a null function pointer called, an unmapped read, an
// undefined instruction, a stack overflow into an MPU guard); inside the SysTick interrupt, frame
// on the main stack at the top of RAM; and with no fault handlers at all (a lockup). Every fault
// handler is a `for (;;)` that pushes nothing and prints nothing.

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
    marked_line("FAULT-LINE", variant)
}

/// The line the fixture's sources mark `/* <kind>: <name> */`: (file, 1-based line).
fn marked_line(kind: &str, name: &str) -> (String, u64) {
    let marker = format!("{kind}: {name} ");
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
    let out = test_cmd(repo, board, profile.to_str().unwrap());
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
/// to go and the core would lock up (QEMU aborts) at the first instruction there. fwfix stops it
/// at that instruction with the frame stacked: the report says lockup and still names the line.
#[test]
fn a_vector_table_without_fault_handlers_is_a_lockup_that_names_no_wrong_function() {
    let repo = FixtureRepo::rtos();
    let scratch = tempfile::tempdir().unwrap();
    let profile = rtos_variant_profile(scratch.path(), "no_fault_handlers");
    for board in [MPS2, LM3S] {
        let out = test_cmd(repo.path(), board, profile.to_str().unwrap());
        assert_eq!(out.status.code(), Some(1), "{board}: {}", text(&out));
        let report = report(&run_dir(&out));
        assert_eq!(case(&report, "self_check")["status"], "CRASH");
        let crash = &report["crash"];
        assert_eq!(crash["lockup"], true, "{board}: {crash:#}");
        let (file, line) = fault_line("null_call");
        assert!(
            crash["function"] == "events_post"
                && crash["file"] == file.as_str()
                && crash["line"] == line,
            "{board}: {crash:#}"
        );
    }
    assert!(qemu_processes_mentioning(repo.path()).is_empty());
}

/// A profile for `variant` whose test times out after 3 s, with `edit` applied to its text.
fn short_profile(scratch: &Path, variant: &str, edit: impl Fn(String) -> String) -> String {
    let path = rtos_variant_profile(scratch, variant);
    let text = std::fs::read_to_string(&path).unwrap();
    let short = edit(text.replace("timeout_s = 15", "timeout_s = 3"));
    assert!(short.contains("timeout_s = 3"), "{short}");
    std::fs::write(&path, short).unwrap();
    path.to_str().unwrap().to_string()
}

/// The hung case's message, and the report's and the terminal's word on the console.
fn silence_of(out: &Output) -> (String, String) {
    assert_eq!(out.status.code(), Some(1), "{}", text(out));
    let report = report(&run_dir(out));
    assert_eq!(report["attempts"][0]["end"], "timeout", "{report:#}");
    let case = case(&report, "self_check");
    assert_eq!(case["status"], "HANG", "{report:#}");
    let statement = report["console_silence"].as_str().unwrap().to_string();
    let md = std::fs::read_to_string(run_dir(out).join("report.md")).unwrap();
    assert!(
        md.contains(&format!("## Console\n\n**At the timeout:** {statement}.")),
        "{md}"
    );
    (case["message"].as_str().unwrap().to_string(), statement)
}

/// Firmware that printed nothing at all (its console on UART1, which QEMU connects to nothing)
/// is told apart from firmware that printed its banner and went quiet (a task stalled with
/// interrupts masked), and from firmware still printing lines the profile never matches: each
/// report says what the console did, for how long, and that nothing faulted.
#[test]
fn a_console_silent_quiet_or_unmatched_until_the_timeout_is_explained() {
    let repo = FixtureRepo::rtos();
    let scratch = tempfile::tempdir().unwrap();

    let wrong_uart = short_profile(scratch.path(), "wrong_uart", |t| t);
    for board in [MPS2, LM3S] {
        let out = test_cmd(repo.path(), board, &wrong_uart);
        let (message, statement) = silence_of(&out);
        let what = format!("{board}: {message}\n{statement}");
        assert!(
            message
                .starts_with("no verdict within 3 s: the firmware printed nothing on its console"),
            "{what}"
        );
        assert!(
            statement.starts_with("the firmware printed nothing on its console in 3.0 s"),
            "{what}"
        );
        assert!(statement.contains("it did not fault"), "{what}");
        assert!(statement.contains("which UART"), "{what}");
        assert!(statement.contains("the core was running in "), "{what}");
    }

    let stall = short_profile(scratch.path(), "stall", |t| t);
    let out = test_cmd(repo.path(), MPS2, &stall);
    let (message, statement) = silence_of(&out);
    let what = format!("{message}\n{statement}");
    assert!(
        message.starts_with("no verdict within 3 s: the console went quiet ")
            && message.contains("after `rtos: mps2-an385, variant stall,"),
        "{what}"
    );
    assert!(
        message.contains("; stuck in wait_sensor_ready (src/main.c:"),
        "{what}"
    );
    assert!(
        statement.starts_with("the console went quiet: its last line came at 0."),
        "{what}"
    );
    assert!(statement.contains("it did not fault"), "{what}");

    // The ok image with a pattern it never prints: still printing at the timeout.
    let unmatched = short_profile(scratch.path(), "ok", |t| {
        t.replace("\"^status: OK \"", "\"^PASS : \"")
    });
    let out = test_cmd(repo.path(), MPS2, &unmatched);
    let (message, statement) = silence_of(&out);
    let what = format!("{message}\n{statement}");
    assert!(
        message.starts_with("no verdict within 3 s: the console was still printing ("),
        "{what}"
    );
    assert!(statement.contains("check the profile's patterns"), "{what}");
    assert!(qemu_processes_mentioning(repo.path()).is_empty());
}

/// A long real run: the `flood` variant prints some 35,000 trace lines between two status lines
/// (fewer on a loaded machine: QEMU's clock is the host's), so its second status line lies in the
/// middle of a console too long to keep whole in memory (the first and last 20,000 lines are). An
/// ordered multi-line profile needs that line and a later one: the harness reads every line as it
/// arrives, so both are read and the run passes; console.log has every line.
#[test]
fn a_flooded_console_keeps_the_lines_the_harness_reads() {
    let repo = FixtureRepo::rtos();
    let scratch = tempfile::tempdir().unwrap();
    let profile = rtos_variant_profile(scratch.path(), "flood");
    let shipped = std::fs::read_to_string(&profile).unwrap();
    let ordered = shipped
        .replace("timeout_s = 15", "timeout_s = 60")
        .replace(
            "type = \"one_line\"",
            "type = \"multi_line\"\nordered = true",
        )
        .replace(
            "patterns = [\"^status: OK \"]",
            "patterns = [\"^status: OK ticks=2000$\", \"^status: OK ticks=4000$\"]",
        );
    assert!(ordered.contains("ticks=4000"), "{ordered}");
    std::fs::write(&profile, ordered).unwrap();

    let out = test_cmd(repo.path(), MPS2, profile.to_str().unwrap());
    let dir = run_dir(&out);
    let report = report(&dir);
    let uart = uart_lines(&dir.join("iter-000/console.log"));
    let first = uart
        .iter()
        .position(|l| l == "status: OK ticks=2000")
        .unwrap();
    // The line the profile needs first is past the 20,000 lines kept at the head, and more than
    // 20,000 follow it: it was in the middle.
    assert!(first > 20_000, "{first}");
    assert!(uart.len() - first > 20_000, "{} lines", uart.len());
    assert_eq!(out.status.code(), Some(0), "{}\n{report:#}", text(&out));
    assert_eq!(report["attempts"][0]["end"], "verdict", "{report:#}");
}

/// The line the fixture marks `/* HANG-LINE: <variant> */`: its file (relative to the fixture)
/// and line number.
fn hang_line(variant: &str) -> (String, u64) {
    let marker = format!("HANG-LINE: {variant} ");
    let src = rtos_fixture_dir().join("src");
    for path in files_under(&src) {
        let body = std::fs::read_to_string(&path).unwrap();
        if let Some(i) = body.lines().position(|l| l.contains(&marker)) {
            let rel = path.strip_prefix(rtos_fixture_dir()).unwrap();
            return (rel.to_str().unwrap().to_string(), i as u64 + 1);
        }
    }
    panic!("no {marker} in the fixture");
}

/// Regression: a task that suspended the scheduler and busy-loops starves the status task while
/// SysTick keeps firing, and its tick hook takes half of every tick: a stop at the timeout lands
/// in that interrupt about half the time. The hang site is the busy loop's function and line on
/// every run (the interrupt is unwound through its frame on the task's PSP); a run stopped in the
/// interrupt names it beside the site.
fn a_task_starving_the_printer_is_the_hang_site_under_an_interrupt(board: &str) {
    let repo = FixtureRepo::rtos();
    let scratch = tempfile::tempdir().unwrap();
    let profile = short_profile(scratch.path(), "starve", |t| t);
    let (file, line) = hang_line("starve");
    for run in 0..4 {
        let out = test_cmd(repo.path(), board, &profile);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        let report = report(&run_dir(&out));
        assert_eq!(report["attempts"][0]["end"], "timeout", "{report:#}");
        let site = &report["hang_site"];
        assert!(
            site["function"] == "await_conversion"
                && site["file"] == file.as_str()
                && site["line"] == line,
            "{board}, run {run}: {report:#}"
        );
        let handler = &report["hang_handler"];
        let message = case(&report, "self_check")["message"]
            .as_str()
            .unwrap()
            .to_string();
        if handler.is_null() {
            assert!(!message.contains("stopped inside"), "{message}");
        } else {
            assert_eq!(handler["exception"], "SysTick", "{report:#}");
            assert!(
                message.contains("(the core was stopped inside SysTick's handler, "),
                "{message}"
            );
        }
    }
    assert!(qemu_processes_mentioning(repo.path()).is_empty());
}

#[test]
fn a_task_starving_the_printer_is_the_hang_site_under_an_interrupt_on_mps2_an385() {
    a_task_starving_the_printer_is_the_hang_site_under_an_interrupt(MPS2);
}

#[test]
fn a_task_starving_the_printer_is_the_hang_site_under_an_interrupt_on_lm3s6965evb() {
    a_task_starving_the_printer_is_the_hang_site_under_an_interrupt(LM3S);
}

/// `fwfix test --repeat` keeps every attempt's crash. The race variant's tick hook overwrites the
/// sensor's data pointer with an unmapped address, and the first task to read through it faults:
/// the producer on odd attempts, the logger on even ones (keyed on the `fwfix-attempt=N` fwfix
/// puts on the semihosting command line, as timing decides a real race). Each attempt's row in
/// report.json has its own crash, attempts-1.jsonl keeps them, and the report says the crash
/// sites differ, naming both.
fn a_crash_that_moves_between_attempts_is_kept_per_attempt(board: &str) {
    let repo = FixtureRepo::rtos();
    let scratch = tempfile::tempdir().unwrap();
    let profile = rtos_variant_profile(scratch.path(), "race");
    let out = fwfix(
        &[
            "test",
            "--json",
            "--repeat",
            "4",
            "--board",
            board,
            "--profile",
            profile.to_str().unwrap(),
        ],
        repo.path(),
    );
    assert_eq!(out.status.code(), Some(1), "{board}: {}", text(&out));
    let dir = run_dir(&out);
    let report = report(&dir);
    let producer = marked_line("RACE-LINE", "producer");
    let logger = marked_line("RACE-LINE", "logger");
    let attempts = report["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 4, "{report:#}");
    for attempt in attempts {
        let n = attempt["attempt"].as_u64().unwrap();
        let (function, (file, line)) = if n % 2 == 1 {
            ("sensor_read", &producer)
        } else {
            ("sensor_peek", &logger)
        };
        let crash = &attempt["crash"];
        assert_eq!(
            (
                crash["function"].as_str(),
                crash["file"].as_str(),
                crash["line"].as_u64()
            ),
            (Some(function), Some(file.as_str()), Some(*line)),
            "{board}: attempt {n}: {crash:#}"
        );
        assert!(
            crash["pc"].is_string() && crash["lr"].is_string() && crash["cfsr"].is_string(),
            "{board}: attempt {n}: {crash:#}"
        );
    }
    // The top-level crash is still the last attempt's.
    assert_eq!(report["crash"]["function"], "sensor_peek");
    let site =
        |function: &str, (file, line): &(String, u64)| format!("in {function} ({file}:{line})");
    let message = report["message"].as_str().unwrap();
    let differ = message
        .split_once("crash sites differ: ")
        .map(|(_, rest)| rest)
        .unwrap_or_else(|| panic!("{board}: {message}"));
    assert!(
        differ.starts_with("attempts 1, 3: ")
            && differ.contains(&site("sensor_read", &producer))
            && differ.contains("; attempts 2, 4: ")
            && differ.contains(&site("sensor_peek", &logger)),
        "{board}: {message}"
    );
    assert!(report["notes"][0]
        .as_str()
        .is_some_and(|n| n.starts_with("crash sites differ: ")));
    // The run directory's attempts file has the four, each with its crash.
    let lines = std::fs::read_to_string(dir.join("attempts-1.jsonl")).unwrap();
    let functions: Vec<String> = lines
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["crash"]["function"].as_str().unwrap_or("").to_string()
        })
        .collect();
    assert_eq!(
        functions,
        ["sensor_read", "sensor_peek", "sensor_read", "sensor_peek"]
    );
    assert!(qemu_processes_mentioning(repo.path()).is_empty());
}

#[test]
fn a_crash_that_moves_between_attempts_is_kept_per_attempt_on_mps2_an385() {
    a_crash_that_moves_between_attempts_is_kept_per_attempt(MPS2);
}

#[test]
fn a_crash_that_moves_between_attempts_is_kept_per_attempt_on_lm3s6965evb() {
    a_crash_that_moves_between_attempts_is_kept_per_attempt(LM3S);
}

/// A regex profile whose fail pattern captures `(?P<file>...)` and `(?P<line>...)`: the `regress`
/// image's status line names the check that failed (`... got 13 at src/pipeline.c:76
/// ticks=1000`), and that is the failing case's file and line in report.json, as Unity's and
/// ztest's parsers give theirs.
fn regress_profile_with_location(dir: &Path) -> std::path::PathBuf {
    let path = rtos_variant_profile(dir, "regress");
    let shipped = std::fs::read_to_string(&path).unwrap();
    let located = shipped.replace(
        r#"fail_patterns = ["^status: ERROR "]"#,
        r#"fail_patterns = ['^status: ERROR .* at (?P<file>[^ :]+):(?P<line>[0-9]+) ticks=']"#,
    );
    assert_ne!(
        located, shipped,
        "profiles/rtos.toml no longer has that fail pattern"
    );
    std::fs::write(&path, located).unwrap();
    path
}

#[test]
fn a_fail_pattern_that_captures_file_and_line_locates_the_failing_case() {
    let repo = FixtureRepo::rtos();
    let scratch = tempfile::tempdir().unwrap();
    let profile = regress_profile_with_location(scratch.path());
    let (file, line) = marked_line("CHECK-LINE", "queue");
    for board in [MPS2, LM3S] {
        let out = test_cmd(repo.path(), board, profile.to_str().unwrap());
        assert_eq!(out.status.code(), Some(1), "{board}: {}", text(&out));
        let dir = run_dir(&out);
        let report = report(&dir);
        let self_check = case(&report, "self_check");
        assert_eq!(self_check["status"], "FAIL", "{board}: {self_check:#}");
        assert_eq!(self_check["file"], file.as_str(), "{board}: {self_check:#}");
        assert_eq!(self_check["line"], line, "{board}: {self_check:#}");
        let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
        assert!(
            junit.contains(&format!("{file}:{line}")),
            "{board}: {junit}"
        );
    }

    // fwfix run: the evidence names the function around that line a suspect, with the line,
    // before the queue's candidate (the room check put back) fixes the image.
    let fix = repo.diff_of("src/queue.c", |text| {
        text.replace(
            "return q->count <= QUEUE_LEN;",
            "return q->count < QUEUE_LEN;",
        )
    });
    let queue = tempfile::tempdir().unwrap();
    std::fs::write(queue.path().join("01-room.diff"), fix).unwrap();
    let out = run_queue(repo.path(), profile.to_str().unwrap(), queue.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let dir = run_dir(&out);
    let analysis: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("iter-000/analysis.json")).unwrap())
            .unwrap();
    let failing = &analysis["failing"][0];
    assert_eq!(failing["file"], file.as_str(), "{failing:#}");
    assert_eq!(failing["line"], line, "{failing:#}");
    assert!(
        failing["source"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("CHECK-LINE: queue")),
        "{failing:#}"
    );
    let suspect = analysis["suspects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "consumer_task")
        .unwrap_or_else(|| panic!("{:#}", analysis["suspects"]));
    assert_eq!(suspect["file"], file.as_str());
    assert_eq!(suspect["line"], line);
    assert_eq!(
        suspect["reasons"][0],
        format!("self_check failed there ({file}:{line})")
    );
    assert!(qemu_processes_mentioning(repo.path()).is_empty());
}

/// A store through a null pointer to a struct's field at offset 12 (the vector_clobber variant's
/// `stats->misses = 0`) lands at 0x0000000C, the HardFault vector. On mps2-an385 address 0 is
/// RAM: the vector becomes 0, and the call through a null pointer that follows escalates to a
/// HardFault with no handler, a lockup. fwfix watches the low table's fault vectors there, stops
/// at the store, follows the table, reads the fault where the empty vector sends the core, and
/// the report names both the faulting line and the store that emptied the vector. On lm3s6965evb
/// the low table is flash (ROM to QEMU): the store is ignored and the same call is an ordinary
/// HardFault in the image's handler.
#[test]
fn a_store_into_the_low_vector_table_is_caught_and_named_on_mps2_an385() {
    let repo = FixtureRepo::rtos();
    let scratch = tempfile::tempdir().unwrap();
    let profile = rtos_variant_profile(scratch.path(), "vector_clobber");
    let (call_file, call_line) = fault_line("null_call");
    let (store_file, store_line) = marked_line("CLOBBER-LINE", "vector_clobber");

    let out = test_cmd(repo.path(), MPS2, profile.to_str().unwrap());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let report = report(&run_dir(&out));
    let crash = &report["crash"];
    assert_eq!(case(&report, "self_check")["status"], "CRASH");
    assert_eq!(crash["lockup"], true, "{crash:#}");
    assert_eq!(
        (
            crash["function"].as_str(),
            crash["file"].as_str(),
            crash["line"].as_u64()
        ),
        (
            Some("events_post"),
            Some(call_file.as_str()),
            Some(call_line)
        ),
        "{crash:#}"
    );
    let summary = crash["summary"].as_str().unwrap();
    assert!(
        summary.contains(
            "the firmware overwrote the HardFault vector of its vector table at 0x00000000 (0x"
        ) && summary.contains(" -> 0x00000000) with the store at 0x")
            && summary.contains(&format!(" in reset_sink_stats ({store_file}:{store_line})")),
        "{summary}"
    );
    // Said as it happened, too.
    let warned = events(&out).into_iter().any(|e| {
        e["event"] == "message"
            && e["level"] == "warning"
            && e["text"].as_str().is_some_and(|t| {
                t.contains("overwrote the HardFault vector of the vector table at 0x00000000")
            })
    });
    assert!(warned, "{}", text(&out));

    let out = test_cmd(repo.path(), LM3S, profile.to_str().unwrap());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let report = crate::common::report(&run_dir(&out));
    let crash = &report["crash"];
    assert_eq!(crash["lockup"], false, "{crash:#}");
    assert_eq!(crash["function"], "events_post", "{crash:#}");
    assert_eq!(crash["line"], call_line, "{crash:#}");
    assert!(
        !crash["summary"].as_str().unwrap().contains("overwrote"),
        "{crash:#}"
    );
    assert!(qemu_processes_mentioning(repo.path()).is_empty());
}

/// Firmware in a subdirectory of its repository, built there: `__FILE__` in its status line is
/// relative to where the compiler ran (`src/pipeline.c`, not the tree's `fw/src/pipeline.c`).
/// The failing case is located as the tree names the file, found among the image's sources.
#[test]
fn a_failure_location_printed_relative_to_the_build_directory_is_named_as_the_tree_names_it() {
    let repo = FixtureRepo::rtos();
    std::fs::create_dir(repo.path().join("fw")).unwrap();
    repo.git(&[
        "mv",
        "Makefile",
        "README.md",
        "boards",
        "profiles",
        "src",
        "fw/",
    ]);
    repo.git(&["commit", "-q", "-m", "firmware in fw/"]);
    let scratch = tempfile::tempdir().unwrap();
    let profile = regress_profile_with_location(scratch.path());
    let in_fw = std::fs::read_to_string(&profile).unwrap().replace(
        "artifact = \"build/",
        "cwd = \"fw\"\nartifact = \"fw/build/",
    );
    std::fs::write(&profile, in_fw).unwrap();
    let (file, line) = marked_line("CHECK-LINE", "queue");
    let out = test_cmd(repo.path(), MPS2, profile.to_str().unwrap());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let report = report(&run_dir(&out));
    let self_check = case(&report, "self_check");
    assert!(
        self_check["message"]
            .as_str()
            .is_some_and(|m| m.contains(&format!(" at {file}:{line} "))),
        "{self_check:#}"
    );
    assert_eq!(self_check["file"], format!("fw/{file}"), "{self_check:#}");
    assert_eq!(self_check["line"], line, "{self_check:#}");
}

/// FreeRTOS's `configASSERT` failing in a task: the firmware prints `ASSERT! Line N, file F` and
/// spins with interrupts masked. With a 60 s test timeout the attempt still ends a moment after
/// the line, as stopped (not a hang, not a verdict), and the report names the assertion's site.
#[test]
fn a_firmware_assertion_then_silence_ends_the_attempt_long_before_the_timeout() {
    let repo = FixtureRepo::rtos();
    let scratch = tempfile::tempdir().unwrap();
    let path = rtos_variant_profile(scratch.path(), "assert");
    let profile = std::fs::read_to_string(&path)
        .unwrap()
        .replace("timeout_s = 15", "timeout_s = 60");
    assert!(profile.contains("timeout_s = 60"), "{profile}");
    std::fs::write(&path, profile).unwrap();

    let started = std::time::Instant::now();
    let out = test_cmd(repo.path(), MPS2, path.to_str().unwrap());
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    // A generous bound (the build is in it): it did not wait for the 60 s timeout.
    assert!(
        took < Duration::from_secs(20),
        "took {took:?}: {}",
        text(&out)
    );

    let report = report(&run_dir(&out));
    let end = report["attempts"][0]["end"].as_str().unwrap();
    assert!(
        end.starts_with("stopped after an assertion ("),
        "{report:#}"
    );
    // A failed assertion alone shows no fault: the case names its site.
    let case = case(&report, "self_check");
    assert_eq!(case["status"], "CRASH", "{report:#}");
    let (file, line) = marked_line("ASSERT-LINE", "assert");
    assert_eq!(case["file"].as_str(), Some(file.as_str()), "{case:#}");
    assert_eq!(case["line"].as_u64(), Some(line), "{case:#}");
    assert!(
        case["message"]
            .as_str()
            .is_some_and(|m| m.ends_with(&format!(": ASSERT! Line {line}, file {file}"))),
        "{case:#}"
    );
    assert!(qemu_processes_mentioning(repo.path()).is_empty());
}
