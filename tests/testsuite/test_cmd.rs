//! `fwfix test` end to end: the real binary builds the fixture firmware with arm-none-eabi-gcc,
//! runs it on real QEMU, and the tests read the run directory it leaves.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by panicking

use crate::common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn test_cmd(
    repo: &FixtureRepo,
    board: &str,
    profile: &str,
    extra: &[&str],
) -> std::process::Output {
    let mut args = vec![
        "test",
        "--json",
        "--repo",
        repo.path().to_str().unwrap(),
        "--board",
        board,
        "--profile",
        profile,
    ];
    args.extend_from_slice(extra);
    fwfix(&args, repo.path())
}

const MPS2: &str = "qemu-mps2-an385";
const LM3S: &str = "qemu-lm3s6965evb";

#[test]
fn passing_image_exits_0_with_every_case_in_junit() {
    let repo = FixtureRepo::new();
    let out = test_cmd(&repo, MPS2, "ringbuf", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let dir = run_dir(&out);
    let report = report(&dir);
    assert_eq!(report["status"], "PASSED");
    assert_eq!(report["command"], "test");
    assert_eq!(report["final_state"], "SUCCESS");
    assert_eq!(report["iterations"], 0);
    assert!(report["error_class"].is_null());
    assert!(report["crash"].is_null());
    let cases = report["cases"].as_array().unwrap();
    assert!(cases.len() >= 3, "{cases:#?}");
    assert!(cases.iter().all(|c| c["status"] == "PASS"));
    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    for c in cases {
        let name = c["name"].as_str().unwrap();
        assert!(
            junit.contains(&format!("name=\"{name}\"")),
            "{name} missing in\n{junit}"
        );
    }
    for f in [
        "report.md",
        "report.html",
        "trace.jsonl",
        "iter-000/build.log",
        "iter-000/console.log",
        "iter-000/results.json",
    ] {
        assert!(dir.join(f).is_file(), "{f} missing");
    }
    // The build's output, every line as the build printed it (the events carry the same lines).
    let build_log = std::fs::read_to_string(dir.join("iter-000/build.log")).unwrap();
    let printed: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"] == "build_output")
        .map(|e| format!("{}\n", e["line"].as_str().unwrap()))
        .collect();
    assert!(!printed.is_empty(), "{}", text(&out));
    assert_eq!(build_log, printed.concat());
    // Nothing is left beside the records once the run is over.
    let spares: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(spares.is_empty(), "{spares:?}");
    // The run directory is kept out of git through .git/info/exclude, never the user's
    // .gitignore, and the user's tree is untouched.
    let exclude = std::fs::read_to_string(repo.path().join(".git/info/exclude")).unwrap();
    assert!(exclude.contains(".fwfix/"), "{exclude}");
    let gitignore = std::fs::read_to_string(repo.path().join(".gitignore")).unwrap();
    assert!(!gitignore.contains("fwfix"), "{gitignore}");
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
    // The run ended at the gdbstub's report of the exit; QEMU was still reaped before fwfix
    // exited.
    assert!(qemu_pids_mentioning(repo.path()).is_empty());
}

/// A function named like a test that Unity never runs (a task entry) is not a missing test when
/// Unity's own summary adds up.
#[test]
fn a_test_named_function_unity_never_ran_does_not_fail_a_complete_run() {
    let repo = FixtureRepo::new();
    let source = std::fs::read_to_string(repo.path().join("tests/test_ringbuf.c")).unwrap();
    repo.write(
        "tests/test_ringbuf.c",
        &format!(
            "{source}\n/* An RTOS task entry: named like a test, never run by Unity. */\n\
             __attribute__((used)) void test_task(void *arg)\n{{\n    (void)arg;\n}}\n"
        ),
    );
    let out = test_cmd(&repo, MPS2, "ringbuf", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report = report(&run_dir(&out));
    assert_eq!(report["status"], "PASSED", "{report:#}");
    let cases = report["cases"].as_array().unwrap();
    assert!(cases.iter().all(|c| c["status"] == "PASS"), "{cases:#?}");
    assert!(cases.iter().all(|c| c["name"] != "test_task"), "{cases:#?}");
}

/// Another task's log line between Unity's summary and its `OK` does not hide the verdict.
#[test]
fn a_log_line_between_the_summary_and_ok_still_passes() {
    let repo = FixtureRepo::new();
    let unity = std::fs::read_to_string(repo.path().join("harness/unity.c")).unwrap();
    let end = "    print(str_ignored);\n    print_eol();\n";
    assert!(unity.contains(end));
    let logged = format!("{end}    print(\"[net] link up\");\n    print_eol();\n");
    repo.write("harness/unity.c", &unity.replace(end, &logged));
    let out = test_cmd(&repo, MPS2, "ringbuf", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report = report(&run_dir(&out));
    assert_eq!(report["status"], "PASSED", "{report:#}");
}

#[test]
fn failing_assertion_exits_1_with_file_line_and_message() {
    let repo = FixtureRepo::new();
    let out = test_cmd(&repo, MPS2, "crc", &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let report = report(&run_dir(&out));
    assert_eq!(report["status"], "FAILED");
    let failed: Vec<_> = report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "FAIL")
        .collect();
    assert_eq!(failed.len(), 1, "{:#}", report["cases"]);
    let case = failed[0];
    assert_eq!(case["name"], "test_crc16_known_vector");
    assert_eq!(case["file"], "tests/test_crc.c");
    // The line is the assertion's own line in the test source.
    let line = case["line"].as_u64().unwrap() as usize;
    let source = std::fs::read_to_string(repo.path().join("tests/test_crc.c")).unwrap();
    let at = source.lines().nth(line - 1).unwrap();
    assert!(at.contains("TEST_ASSERT"), "line {line} is `{at}`");
    let message = case["message"].as_str().unwrap();
    assert!(message.starts_with("Expected 0x29B1"), "{message}");
    let junit = std::fs::read_to_string(run_dir(&out).join("junit.xml")).unwrap();
    assert!(junit.contains("<failure"), "{junit}");
}

#[test]
fn spinning_hardfault_is_a_crash_named_by_function_long_before_the_timeout() {
    let repo = FixtureRepo::new();
    let out = test_cmd(&repo, MPS2, "sensor", &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let dir = run_dir(&out);
    let report = report(&dir);
    let crash = &report["crash"];
    assert!(crash.is_object(), "{report:#}");
    for field in ["pc", "lr", "cfsr", "function", "file", "line"] {
        assert!(
            crash.get(field).is_some(),
            "crash.{field} missing: {crash:#}"
        );
    }
    assert!(crash["cfsr"].as_str().unwrap().starts_with("0x"));
    let summary = crash["summary"].as_str().unwrap();
    assert!(summary.contains("sensor"), "{summary}");
    let crashed: Vec<_> = report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "CRASH")
        .collect();
    assert_eq!(crashed.len(), 1, "{:#}", report["cases"]);
    // Detected when it happened, not at the 20 s test timeout.
    let attempt_ms = report["attempts"][0]["duration_ms"].as_u64().unwrap();
    assert!(attempt_ms < 10_000, "crash took {attempt_ms} ms to report");
    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    assert!(junit.contains("<error"), "{junit}");
    assert!(qemu_processes_mentioning(repo.path()).is_empty());
}

#[test]
fn hang_is_reported_at_the_timeout_and_no_qemu_is_left() {
    let repo = FixtureRepo::new();
    repo.write(
        "profiles/event-fast.toml",
        r#"name = "event-fast"
[build]
command = "make BOARD={machine} build/{machine}/test_event.elf"
artifact = "build/{machine}/test_event.elf"
[test]
harness = "unity"
timeout_s = 2
"#,
    );
    let out = test_cmd(&repo, MPS2, "event-fast", &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let report = report(&run_dir(&out));
    let hung: Vec<_> = report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "HANG")
        .collect();
    assert_eq!(hung.len(), 1, "{:#}", report["cases"]);
    assert_eq!(report["attempts"][0]["end"], "timeout");
    assert!(report["hang_site"]["function"].is_string(), "{report:#}");
    assert!(qemu_processes_mentioning(repo.path()).is_empty());
}

#[test]
fn a_runner_killed_mid_run_is_retried_with_qemus_own_words_as_the_triaged_reason() {
    let repo = FixtureRepo::new();
    // The event image hangs: QEMU is still running when it is killed.
    repo.write(
        "profiles/event-fast.toml",
        r#"name = "event-fast"
[build]
command = "make BOARD={machine} build/{machine}/test_event.elf"
artifact = "build/{machine}/test_event.elf"
[test]
harness = "unity"
timeout_s = 2
"#,
    );
    // Terminates the first QEMU of the run from outside, as an operator or the OOM killer would;
    // the retry's QEMU is left alone. Once the attempt has begun (its console.log exists): the
    // QEMU started during the build waits paused until then.
    let needle = repo.path().to_path_buf();
    let killer = std::thread::spawn(move || {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        let attempt_begun = || {
            std::fs::read_dir(needle.join(".fwfix/runs"))
                .into_iter()
                .flatten()
                .flatten()
                .any(|run| run.path().join("iter-000/console.log").exists())
        };
        while std::time::Instant::now() < deadline {
            if let Some((pid, _)) = qemu_pids_mentioning(&needle)
                .first()
                .filter(|_| attempt_begun())
            {
                std::thread::sleep(std::time::Duration::from_millis(300));
                let pid = nix::unistd::Pid::from_raw(*pid);
                return nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).is_ok();
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        false
    });
    let out = test_cmd(&repo, MPS2, "event-fast", &[]);
    assert!(killer.join().unwrap(), "the test never found QEMU");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let dir = run_dir(&out);
    let lines = trace(&dir);
    let died = lines
        .iter()
        .find(|l| l["from"] == "TEST_RUN" && l["to"] == "ERROR_RECOVERY")
        .unwrap_or_else(|| panic!("{lines:#?}"));
    assert_eq!(died["error_class"], "TEST_ENV_FAILURE", "{died}");
    let reason = died["reason"].as_str().unwrap();
    assert!(
        reason.contains("died during the run (signal 15)")
            && reason.contains("; triage: INFRA_ERROR at console-failed.log:")
            && reason.contains("terminating on signal 15 from pid"),
        "{reason}"
    );
    // Retried: the second attempt ran to its hang.
    assert_eq!(
        report(&dir)["attempts"][0]["end"],
        "timeout",
        "{}",
        text(&out)
    );
    // The killed try's console is kept as the trace names it; the retry wrote its own.
    assert_eq!(died["evidence"][0], "iter-000/console-failed.log", "{died}");
    let killed = std::fs::read_to_string(dir.join("iter-000/console-failed.log")).unwrap();
    assert!(killed.contains("terminating on signal 15"), "{killed}");
    let retried = std::fs::read_to_string(dir.join("iter-000/console.log")).unwrap();
    assert!(!retried.contains("terminating on signal 15"), "{retried}");
    let audit = fwfix(&["audit", dir.to_str().unwrap()], repo.path());
    assert_eq!(audit.status.code(), Some(0), "{}", text(&audit));
    assert!(qemu_processes_mentioning(repo.path()).is_empty());
}

#[test]
fn build_break_exits_1_with_the_diagnostic_in_the_report() {
    let repo = FixtureRepo::new();
    repo.apply_fixture_patch("02-breaks-build.diff");
    let out = test_cmd(&repo, MPS2, "crc", &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let report = report(&run_dir(&out));
    assert_eq!(report["error_class"], "BUILD_FAILURE");
    let diags = report["build"]["diagnostics"].as_array().unwrap();
    let err = diags
        .iter()
        .find(|d| d["severity"] == "error")
        .unwrap_or_else(|| panic!("{diags:#?}"));
    assert_eq!(err["file"], "src/crc.c");
    assert!(err["line"].as_u64().unwrap() > 0);
}

#[test]
fn malformed_board_file_exits_2_naming_line_and_column() {
    let repo = FixtureRepo::new();
    let bad = repo.write(
        "boards/bad.toml",
        "name = \"bad\"\nbackend = \"qemu\"\n[qemu]\nmachin = \"mps2-an385\"\n",
    );
    let out = fwfix(
        &[
            "test",
            "--repo",
            repo.path().to_str().unwrap(),
            "--board",
            bad.to_str().unwrap(),
            "--profile",
            "crc",
        ],
        repo.path(),
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("bad.toml:4:1"), "{stderr}");
    assert!(stderr.contains("machin"), "{stderr}");
    // Nothing ran, so no run directory was made.
    assert!(!repo.path().join(".fwfix").exists());
}

#[test]
fn missing_qemu_binary_exits_4_with_a_hint() {
    let repo = FixtureRepo::new();
    let board = repo.write(
        "boards/noqemu.toml",
        "name = \"noqemu\"\nbackend = \"qemu\"\n[qemu]\nbinary = \"qemu-system-fwfix-missing\"\nmachine = \"mps2-an385\"\n",
    );
    let out = test_cmd(&repo, board.to_str().unwrap(), "ringbuf", &[]);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out));
    let events = events(&out);
    let last = events.last().unwrap();
    assert_eq!(last["status"], "ERROR");
    assert_eq!(last["error_class"], "TEST_ENV_FAILURE");
    assert!(
        last["message"]
            .as_str()
            .unwrap()
            .contains("qemu-system-fwfix-missing"),
        "{last}"
    );
}

#[test]
fn lm3s6965evb_runs_the_same_fixtures() {
    let repo = FixtureRepo::new();
    let out = test_cmd(&repo, LM3S, "ringbuf", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = test_cmd(&repo, LM3S, "crc", &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let report = report(&run_dir(&out));
    assert_eq!(case(&report, "test_crc16_known_vector")["status"], "FAIL");
    assert_eq!(report["board"], LM3S);
}

#[test]
fn repeat_reports_per_test_pass_counts() {
    let repo = FixtureRepo::new();
    let out = test_cmd(&repo, MPS2, "crc", &["--repeat", "3"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let dir = run_dir(&out);
    let report = report(&dir);
    assert_eq!(report["attempts"].as_array().unwrap().len(), 3);
    let counts = report["pass_counts"].as_array().unwrap();
    let crc16 = counts
        .iter()
        .find(|c| c["name"] == "test_crc16_known_vector")
        .unwrap();
    assert_eq!(
        (crc16["passed"].as_u64(), crc16["runs"].as_u64()),
        (Some(0), Some(3))
    );
    assert!(dir.join("iter-000/console-3.log").is_file());
}

#[test]
fn json_events_follow_the_state_machine_and_end_with_finished() {
    let repo = FixtureRepo::new();
    let out = test_cmd(&repo, MPS2, "math", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let events = events(&out);
    let states: Vec<String> = events
        .iter()
        .filter(|e| e["event"] == "transition")
        .map(|e| e["to"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        states,
        [
            "INIT",
            "BUILD_SETUP",
            "BUILD_RUN",
            "TEST_SETUP",
            "TEST_RUN",
            "RESULT_COLLECTION",
            "RESULT_ANALYSIS",
            "CONVERGENCE_CHECK",
            "SUCCESS"
        ]
    );
    let last = events.last().unwrap();
    assert_eq!(last["event"], "finished");
    assert_eq!(last["status"], "PASSED");
    assert_eq!(last["exit_code"], 0);
    let trace = std::fs::read_to_string(run_dir(&out).join("trace.jsonl")).unwrap();
    assert_eq!(trace.lines().count(), states.len());
}

#[test]
fn test_without_a_terminal_prints_a_summary_and_no_progress_codes() {
    let repo = FixtureRepo::new();
    let out = fwfix(
        &[
            "test",
            "--repo",
            repo.path().to_str().unwrap(),
            "--board",
            MPS2,
            "--profile",
            "crc",
        ],
        repo.path(),
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("test_crc16_known_vector"), "{stdout}");
    assert!(!stdout.contains('\x1b') && !String::from_utf8_lossy(&out.stderr).contains('\x1b'));
}

#[test]
fn a_tree_another_run_patches_is_refused_and_the_emulator_started_for_it_is_stopped() {
    let repo = FixtureRepo::new();
    let _held = fwfix::repo::lock_tree(
        repo.path(),
        "fwfix run, pid 1 on host lab",
        fwfix::repo::TreeUse::Patch,
    )
    .unwrap();
    let out = test_cmd(&repo, MPS2, "ringbuf", &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("fwfix run, pid 1 on host lab"),
        "{}",
        text(&out)
    );
    // The emulator `fwfix test` starts before it takes the tree (its start overlaps the rest of
    // the setup) goes with the refusal.
    assert!(qemu_pids_mentioning(repo.path()).is_empty());
    let runs = std::fs::read_dir(repo.path().join(".fwfix/runs"));
    assert!(runs.map_or(true, |mut r| r.next().is_none()));
}

#[test]
fn repo_that_does_not_exist_is_a_usage_error() {
    let out = fwfix(
        &[
            "test",
            "--repo",
            "/nonexistent/fwfix",
            "--board",
            MPS2,
            "--profile",
            "crc",
        ],
        Path::new("."),
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

/// fwfix started in `cwd` with its JSON events piped, and a reader of them line by line.
fn spawn_with_events(
    args: &[&str],
    cwd: &Path,
) -> (
    std::process::Child,
    std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
) {
    use std::io::BufRead;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_fwfix"))
        .args(args)
        .current_dir(cwd)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    (child, lines)
}

/// Waits for the first JSON event of the given kind on a running fwfix's stdout.
fn wait_for_event(lines: &mut impl Iterator<Item = std::io::Result<String>>, kind: &str) {
    for line in lines.by_ref() {
        let line = line.unwrap();
        if line.contains(&format!("\"event\":\"{kind}\"")) {
            return;
        }
    }
    panic!("fwfix ended before a {kind} event");
}

const SLOW_BUILD: &str = r#"name = "slow"
[build]
command = "sleep 60 & echo $! >> sleepers.pid; wait"
artifact = "build/never.elf"
timeout_s = 1
[test]
harness = "unity"
[recovery]
timeout = 1
"#;

#[test]
fn build_timeout_kills_the_whole_build_and_is_an_infrastructure_error() {
    let repo = FixtureRepo::new();
    repo.write("profiles/slow.toml", SLOW_BUILD);
    let out = test_cmd(&repo, MPS2, "slow", &[]);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out));
    let report = report(&run_dir(&out));
    assert_eq!(report["error_class"], "TIMEOUT");
    assert_eq!(report["status"], "ERROR");
    let trace = std::fs::read_to_string(run_dir(&out).join("trace.jsonl")).unwrap();
    // One retry from the profile's [recovery] budget, then the run stops.
    assert_eq!(trace.matches("\"to\":\"BUILD_RUN\"").count(), 2, "{trace}");
    let sleepers = pids_in(&repo.path().join("sleepers.pid"));
    assert_eq!(sleepers.len(), 2);
    for pid in sleepers {
        assert!(!alive(pid), "build child {pid} outlived the timeout");
    }
}

/// Regression: a build that left a process running in the background (holding the output pipes
/// open) was taken as hanging until that process ended: a finished build reported TIMEOUT.
#[test]
fn a_build_ends_with_its_shell_and_what_it_left_running_is_killed() {
    let repo = FixtureRepo::new();
    repo.write(
        "profiles/background.toml",
        r#"name = "background"
[build]
command = "make BOARD=mps2-an385 build/mps2-an385/test_ringbuf.elf && echo built-it; sleep 300 & echo $! >> sleepers.pid"
artifact = "build/mps2-an385/test_ringbuf.elf"
timeout_s = 120
[test]
harness = "unity"
timeout_s = 20
"#,
    );
    let out = test_cmd(&repo, MPS2, "background", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let dir = run_dir(&out);
    assert_eq!(report(&dir)["status"], "PASSED");
    let log = std::fs::read_to_string(dir.join("iter-000/build.log")).unwrap();
    assert!(log.contains("built-it"), "{log}");
    let sleepers = pids_in(&repo.path().join("sleepers.pid"));
    assert_eq!(sleepers.len(), 1);
    for pid in sleepers {
        assert!(!alive(pid), "background process {pid} outlived the build");
    }
}

/// Regression: an artifact that is not an ELF image was booted all the same (QEMU loads a file
/// it cannot parse as raw bytes) and its crash taken for a test failure.
#[test]
fn an_artifact_that_is_not_an_elf_is_a_configuration_error_naming_it() {
    let repo = FixtureRepo::new();
    repo.write(
        "profiles/hex.toml",
        r#"name = "hex"
[build]
command = "make BOARD=mps2-an385 build/mps2-an385/test_ringbuf.elf && arm-none-eabi-objcopy -O ihex build/mps2-an385/test_ringbuf.elf build/mps2-an385/test_ringbuf.hex"
artifact = "build/mps2-an385/test_ringbuf.hex"
[test]
harness = "unity"
timeout_s = 20
"#,
    );
    let out = test_cmd(&repo, MPS2, "hex", &[]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains("build/mps2-an385/test_ringbuf.hex is an Intel HEX file"),
        "{said}"
    );
    let dir = run_dir(&out);
    assert_eq!(report(&dir)["error_class"], "CONFIG_ERROR");
    let trace = std::fs::read_to_string(dir.join("trace.jsonl")).unwrap();
    // Not retried, and never booted.
    assert_eq!(trace.matches("\"to\":\"BUILD_RUN\"").count(), 1, "{trace}");
    assert!(!trace.contains("\"to\":\"TEST_RUN\""), "{trace}");
}

#[test]
fn ctrl_c_during_the_build_exits_3_and_kills_the_build() {
    let repo = FixtureRepo::new();
    repo.write(
        "profiles/slow.toml",
        &SLOW_BUILD.replace("timeout_s = 1", "timeout_s = 60"),
    );
    let (mut child, mut lines) = spawn_with_events(
        &["test", "--json", "--board", MPS2, "--profile", "slow"],
        repo.path(),
    );
    wait_for_event(&mut lines, "build_started");
    std::thread::sleep(std::time::Duration::from_millis(200));
    ctrl_c(&child);
    let rest: Vec<String> = lines.map(|l| l.unwrap()).collect();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(3), "{rest:?}");
    let last: serde_json::Value = serde_json::from_str(rest.last().unwrap()).unwrap();
    assert_eq!(last["event"], "finished");
    let report = report(Path::new(last["run_dir"].as_str().unwrap()));
    assert_eq!(report["final_state"], "ABORTED");
    for pid in pids_in(&repo.path().join("sleepers.pid")) {
        assert!(!alive(pid), "build child {pid} outlived Ctrl+C");
    }
}

/// Regression: a Ctrl+C in the first moments of a run killed fwfix outright, mid-step, with no
/// report: the handler was only registered once the run first waited on something.
#[test]
fn ctrl_c_at_the_first_event_still_aborts_with_exit_3_and_a_report() {
    let repo = FixtureRepo::new();
    let (mut child, mut lines) = spawn_with_events(
        &["test", "--json", "--board", MPS2, "--profile", "event"],
        repo.path(),
    );
    let first = lines.next().unwrap().unwrap();
    ctrl_c(&child);
    let rest: Vec<String> = lines.map(|l| l.unwrap()).collect();
    assert_eq!(child.wait().unwrap().code(), Some(3), "{first}\n{rest:#?}");
    let last: serde_json::Value = serde_json::from_str(rest.last().unwrap()).unwrap();
    let report = report(Path::new(last["run_dir"].as_str().unwrap()));
    assert_eq!(report["final_state"], "ABORTED");
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
}

#[test]
fn ctrl_c_while_the_image_runs_exits_3_and_leaves_no_qemu() {
    let repo = FixtureRepo::new();
    let (mut child, mut lines) = spawn_with_events(
        &["test", "--json", "--board", MPS2, "--profile", "event"],
        repo.path(),
    );
    wait_for_event(&mut lines, "boot_started");
    std::thread::sleep(std::time::Duration::from_millis(500));
    ctrl_c(&child);
    let rest: Vec<String> = lines.map(|l| l.unwrap()).collect();
    assert_eq!(child.wait().unwrap().code(), Some(3), "{rest:?}");
    assert!(qemu_processes_mentioning(repo.path()).is_empty());
}

/// Regression: a fwfix killed with SIGKILL while a hanging image ran left its QEMU running
/// forever (QEMU has a process group of its own, so whoever killed fwfix cannot reach it). The
/// next fwfix that starts a QEMU stops it through its QMP socket.
#[test]
fn a_qemu_left_by_a_fwfix_killed_with_sigkill_is_stopped_by_the_next_run() {
    let repo = FixtureRepo::new();
    let (mut child, mut lines) = spawn_with_events(
        &["test", "--json", "--board", MPS2, "--profile", "event"],
        repo.path(),
    );
    wait_for_event(&mut lines, "boot_started");
    let mut orphans = Vec::new();
    for _ in 0..100 {
        orphans = qemu_pids_mentioning(repo.path());
        if !orphans.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(orphans.len(), 1, "{orphans:?}");
    child.kill().unwrap();
    child.wait().unwrap();

    // Any fwfix on the host that starts a QEMU reaps it (another test's may come first, so the
    // warning is not asserted here).
    let out = test_cmd(&repo, MPS2, "crc", &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    for _ in 0..100 {
        if qemu_pids_mentioning(repo.path()).is_empty() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("the orphan QEMU is still running: {orphans:?}");
}

#[test]
fn a_state_that_overruns_its_timeout_is_a_timeout_naming_the_state() {
    let repo = FixtureRepo::new();
    repo.write(
        "profiles/stuck.toml",
        &SLOW_BUILD
            .replace("timeout_s = 1", "timeout_s = 300")
            .replace(
                "[recovery]\ntimeout = 1",
                "[recovery]\ntimeout = 0\n[timeouts]\nbuild_run = 1",
            ),
    );
    let out = test_cmd(&repo, MPS2, "stuck", &[]);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out));
    let report = report(&run_dir(&out));
    assert_eq!(report["error_class"], "TIMEOUT");
    assert!(
        report["message"]
            .as_str()
            .unwrap()
            .contains("BUILD_RUN did not finish within 1 s"),
        "{report:#}"
    );
    for pid in pids_in(&repo.path().join("sleepers.pid")) {
        assert!(!alive(pid), "build child {pid} outlived the state timeout");
    }
}

/// A profile whose build command prints `line` to stderr and exits with `code`.
fn failing_build_profile(repo: &FixtureRepo, name: &str, line: &str, code: u8) {
    repo.write(
        &format!("profiles/{name}.toml"),
        &format!(
            "name = \"{name}\"\n[build]\ncommand = \"echo make: entering >&2; echo '{line}' >&2; exit {code}\"\nartifact = \"build/never.elf\"\n[test]\nharness = \"unity\"\n[recovery]\nbuild_env_failure = 1\n"
        ),
    );
}

/// The trace lines leaving BUILD_RUN for ERROR_RECOVERY.
fn build_failures(run_dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(run_dir.join("trace.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|l| l["from"] == "BUILD_RUN" && l["to"] == "ERROR_RECOVERY")
        .collect()
}

#[test]
fn a_build_without_its_compiler_is_an_environment_failure_decided_by_triage() {
    let repo = FixtureRepo::new();
    failing_build_profile(
        &repo,
        "nogcc",
        "sh: 1: arm-none-eabi-gcc: command not found",
        127,
    );
    let out = test_cmd(&repo, MPS2, "nogcc", &[]);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out));
    let dir = run_dir(&out);
    assert_eq!(report(&dir)["error_class"], "BUILD_ENV_FAILURE");
    let failures = build_failures(&dir);
    assert_eq!(
        failures.len(),
        2,
        "one retry, then the run stops: {failures:#?}"
    );
    let reason = failures[0]["reason"].as_str().unwrap();
    assert_eq!(failures[0]["error_class"], "BUILD_ENV_FAILURE");
    assert!(
        reason.contains("triage: TOOL_MISSING at build.log:2"),
        "{reason}"
    );
}

#[test]
fn a_build_that_runs_out_of_disk_is_retried_as_the_environment_not_blamed_on_the_code() {
    let repo = FixtureRepo::new();
    failing_build_profile(
        &repo,
        "diskfull",
        "cc1: fatal error: cannot write build/crc.o: No space left on device",
        2,
    );
    let out = test_cmd(&repo, MPS2, "diskfull", &[]);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out));
    let dir = run_dir(&out);
    assert_eq!(report(&dir)["error_class"], "BUILD_ENV_FAILURE");
    let failures = build_failures(&dir);
    let reason = failures[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("triage: INFRA_ERROR at build.log:2"),
        "{reason}"
    );
}

#[test]
fn an_interrupted_test_run_reports_the_cases_it_printed_before_the_interrupt() {
    use std::io::BufRead;
    let repo = FixtureRepo::new();
    // The event image passes its first tests, then hangs: interrupted while it hangs.
    repo.write(
        "profiles/event-slow.toml",
        r#"name = "event-slow"
[build]
command = "make BOARD={machine} build/{machine}/test_event.elf"
artifact = "build/{machine}/test_event.elf"
[test]
harness = "unity"
timeout_s = 60
"#,
    );
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_fwfix"))
        .args(["test", "--json", "--board", MPS2, "--profile", "event-slow"])
        .current_dir(repo.path())
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        let passed = line.contains("\"event\":\"console_line\"") && line.contains(":PASS");
        seen.push(line);
        if passed {
            break;
        }
    }
    ctrl_c(&child);
    seen.extend(lines.map(|l| l.unwrap()));
    assert_eq!(child.wait().unwrap().code(), Some(3), "{seen:#?}");
    let last: serde_json::Value = serde_json::from_str(seen.last().unwrap()).unwrap();
    let report = report(Path::new(last["run_dir"].as_str().unwrap()));
    assert_eq!(report["final_state"], "ABORTED", "{report:#}");
    let cases = report["cases"].as_array().unwrap();
    let first = cases
        .iter()
        .find(|c| c["name"] == "test_event_starts_with_nothing_pending")
        .unwrap_or_else(|| panic!("{report:#}"));
    assert_eq!(first["status"], "PASS", "{report:#}");
    assert!(qemu_processes_mentioning(repo.path()).is_empty());
}

/// `fwfix test` over several boards and profiles with `--jobs 2`, as JSON events.
fn test_pairs(repo: &FixtureRepo, boards: &[&str], profiles: &[&str]) -> std::process::Output {
    let mut args = vec!["test", "--json", "--jobs", "2", "--repo"];
    args.push(repo.path().to_str().unwrap());
    for b in boards {
        args.extend(["--board", b]);
    }
    for p in profiles {
        args.extend(["--profile", p]);
    }
    fwfix(&args, repo.path())
}

#[test]
fn jobs_test_every_pair_in_a_run_of_its_own_with_one_exit_code() {
    let repo = FixtureRepo::new();
    let out = test_pairs(&repo, &[MPS2, LM3S], &["crc", "ringbuf"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let events = events(&out);
    let last = events.last().unwrap();
    assert_eq!(last["event"], "finished");
    assert_eq!(last["status"], "FAILED");
    assert!(last.get("job").is_none(), "{last}");
    // Every other event names its pair; each pair ends with its own finished event.
    assert!(events[..events.len() - 1]
        .iter()
        .all(|e| e["job"].is_string()));
    let mut dirs = std::collections::BTreeSet::new();
    for (board, machine) in [(MPS2, "mps2-an385"), (LM3S, "lm3s6965evb")] {
        for (profile, status) in [("crc", "FAILED"), ("ringbuf", "PASSED")] {
            let job = format!("{board}/{profile}");
            let fin: Vec<_> = events
                .iter()
                .filter(|e| e["job"] == job.as_str() && e["event"] == "finished")
                .collect();
            assert_eq!(fin.len(), 1, "{job}: {}", text(&out));
            assert_eq!(fin[0]["status"], status, "{job}");
            let dir = PathBuf::from(fin[0]["run_dir"].as_str().unwrap());
            let report = report(&dir);
            assert_eq!(report["board"], board);
            assert_eq!(report["profile"], profile);
            // Each pair's console holds its own image's output and nothing of another's.
            let console = std::fs::read_to_string(dir.join("iter-000/console.log")).unwrap();
            let other = if profile == "crc" { "ringbuf" } else { "crc" };
            assert!(console.contains(&format!("test_{profile}")), "{console}");
            assert!(!console.contains(&format!("test_{other}")), "{console}");
            let build = std::fs::read_to_string(dir.join("iter-000/build.log")).unwrap();
            let other_machine = if machine == "mps2-an385" {
                "lm3s6965evb"
            } else {
                "mps2-an385"
            };
            assert!(!build.contains(other_machine), "{build}");
            dirs.insert(dir);
        }
    }
    assert_eq!(dirs.len(), 4);
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
}

#[test]
fn jobs_boot_side_by_side_while_builds_of_the_tree_take_turns() {
    let repo = FixtureRepo::new();
    // The hanging image under a 3 s timeout: two such runs overlap whenever two run at once.
    repo.write(
        "hang.toml",
        "name = \"hang\"\n[build]\ncommand = \"make BOARD={machine} build/{machine}/test_event.elf\"\n\
         artifact = \"build/{machine}/test_event.elf\"\n[test]\nharness = \"unity\"\ntimeout_s = 3\n",
    );
    // Both images built beforehand: each pair's build is then a make that does nothing, over
    // well before the other pair's run ends, however loaded the machine — the runs overlap.
    for machine in ["mps2-an385", "lm3s6965evb"] {
        let made = std::process::Command::new("make")
            .arg(format!("BOARD={machine}"))
            .arg(format!("build/{machine}/test_event.elf"))
            .current_dir(repo.path())
            .output()
            .unwrap();
        assert!(
            made.status.success(),
            "{}",
            String::from_utf8_lossy(&made.stderr)
        );
    }
    let out = test_pairs(&repo, &[MPS2, LM3S], &["hang.toml"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let events = events(&out);
    let job_of = |e: &Value| e["job"].as_str().unwrap_or("").to_string();
    // Builds: between one pair's build start and its finish, no other pair's build starts.
    let mut building: Option<String> = None;
    let mut testing = std::collections::BTreeSet::new();
    let mut overlapped = false;
    for e in &events {
        match (e["event"].as_str(), e["to"].as_str(), e["from"].as_str()) {
            (Some("build_started"), _, _) => {
                assert!(
                    building.is_none(),
                    "two builds at once: {building:?} and {e}"
                );
                building = Some(job_of(e));
            }
            (Some("build_finished"), _, _) => {
                assert_eq!(building.take(), Some(job_of(e)));
            }
            (Some("transition"), Some("TEST_RUN"), _) => {
                testing.insert(job_of(e));
                overlapped |= testing.len() == 2;
            }
            (Some("transition"), _, Some("TEST_RUN")) => {
                testing.remove(&job_of(e));
            }
            _ => {}
        }
    }
    assert!(
        overlapped,
        "the two pairs never ran at once: {}",
        text(&out)
    );
    for board in [MPS2, LM3S] {
        let job = format!("{board}/hang");
        let fin = events
            .iter()
            .find(|e| e["job"] == job.as_str() && e["event"] == "finished")
            .unwrap();
        let report = report(Path::new(fin["run_dir"].as_str().unwrap()));
        assert!(
            report["cases"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["status"] == "HANG"),
            "{report:#}"
        );
    }
}

#[test]
fn jobs_refuse_a_bad_profile_or_a_pair_given_twice_before_anything_runs() {
    let repo = FixtureRepo::new();
    repo.write("bad.toml", "name = \"bad\"\n[build]\ncommand = 3\n");
    let out = test_pairs(&repo, &[MPS2], &["crc", "bad.toml"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("bad.toml"), "{}", text(&out));
    assert!(
        !repo.path().join(".fwfix/runs").exists()
            || files_under(&repo.path().join(".fwfix/runs")).is_empty()
    );

    let out = test_pairs(&repo, &[MPS2, MPS2], &["crc"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("given twice"), "{}", text(&out));
}

#[test]
fn what_a_qemu_binary_supports_is_asked_once_per_binary() {
    let repo = FixtureRepo::new();
    let cache = tempfile::tempdir().unwrap();
    // A QEMU that records every call and then is the real one.
    let calls = repo.path().join("qemu-calls.log");
    let wrapper = repo.write(
        "tools/qemu-system-arm",
        &format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\nexec qemu-system-arm \"$@\"\n",
            calls.display()
        ),
    );
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    repo.write(
        "wrapped.toml",
        &format!(
            "name = \"wrapped\"\nbackend = \"qemu\"\n[qemu]\nbinary = \"{}\"\nmachine = \"mps2-an385\"\ncpu = \"cortex-m3\"\n",
            wrapper.display()
        ),
    );
    let run = || {
        let out = fwfix_command(
            &[
                "test",
                "--json",
                "--repo",
                repo.path().to_str().unwrap(),
                "--board",
                "wrapped.toml",
                "--profile",
                "ringbuf",
            ],
            repo.path(),
            cache.path(),
        )
        .env("XDG_CACHE_HOME", cache.path())
        .output()
        .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    };
    let help_calls = || {
        std::fs::read_to_string(&calls)
            .unwrap()
            .lines()
            .filter(|l| l.ends_with(" help"))
            .count()
    };
    run();
    assert_eq!(help_calls(), 2, "-machine help and -cpu help once each");
    run();
    assert_eq!(help_calls(), 2, "the second run asks nothing");
    // Another binary at the same path (an upgrade) is asked again.
    let upgraded = std::fs::read_to_string(&wrapper).unwrap() + "# upgraded\n";
    std::fs::write(&wrapper, upgraded).unwrap();
    run();
    assert_eq!(help_calls(), 4);
}

/// The fixture's really flaky image (its verdict follows the random run nonce, about half the
/// runs fail) run 24 times: the flaky test gets its rate, its Wilson interval clear of 0 and 1 and
/// the FLAKY call, the steady one PASS with an interval touching 1; junit.xml marks the flaky one
/// as Surefire does. (Every one of 24 runs agreeing by chance: 1 in 8 million.)
#[test]
fn a_really_flaky_test_repeated_gets_a_rate_an_interval_and_the_flaky_call() {
    let repo = FixtureRepo::new();
    repo.write(
        "profiles/flaky.toml",
        "name = \"flaky\"\n[build]\ncommand = \"make BOARD={machine} build/{machine}/test_flaky.elf\"\n\
         artifact = \"build/{machine}/test_flaky.elf\"\n[test]\nharness = \"unity\"\ntimeout_s = 20\n",
    );
    let out = test_cmd(&repo, "qemu-mps2-an385", "flaky", &["--repeat", "24"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let dir = run_dir(&out);
    let report = report(&dir);
    assert_eq!(report["attempts"].as_array().unwrap().len(), 24);
    // The image passed on some attempts and failed on others: its verdict is FLAKY, not the
    // last attempt's.
    assert_eq!(report["verdict"], "FLAKY", "{report:#}");
    let count = |name: &str| {
        report["pass_counts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no pass count for {name}: {report:#}"))
            .clone()
    };
    let flaky = count("test_flaky_depends_on_the_run");
    assert_eq!(flaky["call"], "FLAKY", "{flaky}");
    let (low, high) = (
        flaky["interval"]["low"].as_f64().unwrap(),
        flaky["interval"]["high"].as_f64().unwrap(),
    );
    let rate = flaky["rate"].as_f64().unwrap();
    assert!(
        0.0 < low && low < rate && rate < high && high < 1.0,
        "{flaky}"
    );
    let steady = count("test_flaky_always_passes");
    assert_eq!(steady["call"], "PASS");
    assert_eq!(steady["interval"]["high"], 1.0);
    assert!(steady["interval"]["low"].as_f64().unwrap() > 0.75);
    assert!(
        report["message"]
            .as_str()
            .unwrap()
            .contains("flaky: passed on"),
        "{report:#}"
    );

    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    let case = &junit[junit
        .find("name=\"test_flaky_depends_on_the_run\"")
        .unwrap()..];
    let case = &case[..case.find("</testcase>").unwrap()];
    let failed_runs = 24 - flaky["passed"].as_u64().unwrap() as usize;
    assert_eq!(case.matches("<flakyFailure").count(), failed_runs, "{case}");
    assert!(!case.contains("<failure"), "{case}");
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("<h2>Tests by attempt</h2>"));
    assert!(html.contains("<span class=\"badge s-ignore\">FLAKY</span>"));
}

/// Regression: a build stopped by Ctrl+C was reported as "build failed: 0 errors".
#[test]
fn a_build_interrupted_by_ctrl_c_is_reported_as_interrupted() {
    use std::io::BufRead as _;
    let repo = FixtureRepo::new();
    repo.write(
        "profiles/interruptible.toml",
        r#"name = "interruptible"
[build]
command = "touch started.marker; sleep 60"
artifact = "build/never.elf"
timeout_s = 120
[test]
harness = "unity"
timeout_s = 20
"#,
    );
    let state = tempfile::tempdir().unwrap();
    let mut child = fwfix_command(
        &[
            "test",
            "--json",
            "--board",
            MPS2,
            "--profile",
            "interruptible",
        ],
        repo.path(),
        state.path(),
    )
    .stdout(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    let marker = repo.path().join("started.marker");
    for _ in 0..400 {
        if marker.is_file() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    assert!(marker.is_file(), "the build never started");
    ctrl_c(&child);
    let lines: Vec<Value> = std::io::BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map(|l| serde_json::from_str(&l.unwrap()).unwrap())
        .collect();
    assert_eq!(child.wait().unwrap().code(), Some(3), "{lines:#?}");
    let finished = lines
        .iter()
        .find(|e| e["event"] == "build_finished")
        .unwrap_or_else(|| panic!("no build_finished: {lines:#?}"));
    assert_eq!(finished["interrupted"], true, "{finished}");
    assert_eq!(finished["success"], false, "{finished}");
}

/// An image built for the other board runs to its semihosting exit on this one with nothing on
/// the console (its UART is at an address this machine does not read): the report says so and
/// where to look, rather than only that no Unity output came.
#[test]
fn an_image_for_another_board_that_exits_without_output_is_named_as_such() {
    let repo = FixtureRepo::new();
    repo.write(
        "profiles/other-board.toml",
        "name = \"other-board\"\n[build]\n\
         command = \"make BOARD=lm3s6965evb build/lm3s6965evb/test_math.elf\"\n\
         artifact = \"build/lm3s6965evb/test_math.elf\"\n[test]\nharness = \"unity\"\ntimeout_s = 20\n",
    );
    let out = fwfix(
        &[
            "test",
            "--json",
            "--board",
            MPS2,
            "--profile",
            "other-board",
        ],
        repo.path(),
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let report = report(&run_dir(&out));
    assert_eq!(report["verdict"], "INCONCLUSIVE");
    let notes = report["notes"].to_string();
    assert!(
        notes.contains(
            "nothing came on the console at all, yet the image ran to its exit (code 0): it \
             prints where this board does not read"
        ),
        "{notes}"
    );
    assert!(
        notes.contains("an image built for another board"),
        "{notes}"
    );
}
