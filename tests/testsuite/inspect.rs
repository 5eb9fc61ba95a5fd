//! `fwfix audit`, `runs`, `show` and `report` against real runs: the real binary runs `fwfix test`
//! on the fixture firmware (arm-none-eabi-gcc, QEMU), then the tests read, tamper with and
//! re-render the run directories it left.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by panicking

use crate::common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

const MPS2: &str = "qemu-mps2-an385";

/// Runs `fwfix test` with `profile` on the fixture and returns its run directory.
fn test_run(repo: &FixtureRepo, profile: &str, expected_exit: i32) -> PathBuf {
    let out = fwfix(
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
    );
    assert_eq!(out.status.code(), Some(expected_exit), "{}", text(&out));
    run_dir(&out)
}

/// A repository with one passing run.
fn passing_run() -> (FixtureRepo, PathBuf) {
    let repo = FixtureRepo::new();
    let dir = test_run(&repo, "ringbuf", 0);
    (repo, dir)
}

fn id_of(run_dir: &Path) -> String {
    run_dir.file_name().unwrap().to_string_lossy().into_owned()
}

fn inspect(args: &[&str], repo: &FixtureRepo) -> Output {
    fwfix(args, repo.path())
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn audit(repo: &FixtureRepo, run_dir: &Path) -> Output {
    inspect(&["audit", run_dir.to_str().unwrap()], repo)
}

/// Audits a run that must fail the audit; returns what it printed.
fn failed_audit(repo: &FixtureRepo, run_dir: &Path) -> String {
    let out = audit(repo, run_dir);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    stdout(&out)
}

fn write_trace(run_dir: &Path, lines: &[Value]) {
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(run_dir.join("trace.jsonl"), text).unwrap();
}

/// The 1-based trace line that names `evidence` first.
fn line_naming(lines: &[Value], evidence: &str) -> usize {
    lines
        .iter()
        .position(|l| {
            l["evidence"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e == evidence)
        })
        .unwrap_or_else(|| panic!("no line names {evidence}"))
        + 1
}

#[test]
fn audit_passes_on_a_passing_run_and_a_failing_run() {
    let repo = FixtureRepo::new();
    let passed = test_run(&repo, "ringbuf", 0);
    let failed = test_run(&repo, "crc", 1);
    for dir in [&passed, &failed] {
        let out = audit(&repo, dir);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        assert!(
            stdout(&out).starts_with("audit OK: 9 steps"),
            "{}",
            text(&out)
        );

        let out = inspect(&["audit", "--json", dir.to_str().unwrap()], &repo);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let result: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
        assert_eq!(result["ok"], true);
        assert_eq!(result["steps"], 9);
        assert_eq!(result["findings"], serde_json::json!([]));
    }
}

#[test]
fn audit_names_an_illegal_step_with_its_line() {
    let (repo, dir) = passing_run();
    let mut lines = trace(&dir);
    let built = lines.iter().position(|l| l["outcome"] == "built").unwrap();
    lines[built]["to"] = "SUCCESS".into();
    write_trace(&dir, &lines);
    let printed = failed_audit(&repo, &dir);
    assert!(
        printed.contains(&format!(
            "trace.jsonl:{}: illegal transition BUILD_RUN -> SUCCESS (outcome built)\n",
            built + 1
        )),
        "{printed}"
    );

    let out = inspect(&["audit", "--json", dir.to_str().unwrap()], &repo);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let result: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(result["ok"], false);
    assert_eq!(result["findings"][0]["kind"], "illegal_transition");
    assert_eq!(result["findings"][0]["line"], built + 1);
}

#[test]
fn audit_finds_a_deleted_evidence_file() {
    let (repo, dir) = passing_run();
    let line = line_naming(&trace(&dir), "iter-000/console.log");
    std::fs::remove_file(dir.join("iter-000/console.log")).unwrap();
    let printed = failed_audit(&repo, &dir);
    assert!(
        printed.contains(&format!(
            "trace.jsonl:{line}: evidence iter-000/console.log is missing\n"
        )),
        "{printed}"
    );
}

#[test]
fn audit_finds_evidence_modified_after_the_fact() {
    let (repo, dir) = passing_run();
    let line = line_naming(&trace(&dir), "iter-000/build.log");
    let log = dir.join("iter-000/build.log");
    let mut contents = std::fs::read_to_string(&log).unwrap();
    contents.push_str("a line nobody built\n");
    std::fs::write(&log, contents).unwrap();
    let printed = failed_audit(&repo, &dir);
    assert!(
        printed.contains(&format!(
            "trace.jsonl:{line}: evidence iter-000/build.log changed after it was recorded"
        )),
        "{printed}"
    );
}

#[test]
fn audit_finds_a_seq_gap() {
    let (repo, dir) = passing_run();
    let mut lines = trace(&dir);
    lines.remove(4);
    write_trace(&dir, &lines);
    let printed = failed_audit(&repo, &dir);
    assert!(
        printed.contains("trace.jsonl:5: seq 6 follows seq 4 (expected 5)\n"),
        "{printed}"
    );
}

#[test]
fn audit_reports_a_garbage_line_by_number_without_panicking() {
    let (repo, dir) = passing_run();
    let trace = dir.join("trace.jsonl");
    let original = std::fs::read_to_string(&trace).unwrap();
    let mut lines: Vec<&str> = original.lines().collect();
    lines[2] = "{\"seq\":3,\"ts\":\"2024-05-01T12:00:00Z\",\"from\":";
    std::fs::write(&trace, lines.join("\n") + "\n\u{1}\u{ff}garbage\n").unwrap();
    let out = audit(&repo, &dir);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
    let printed = stdout(&out);
    assert!(
        printed.contains("trace.jsonl:3: not a trace line:"),
        "{printed}"
    );
    assert!(
        printed.contains(&format!(
            "trace.jsonl:{}: not a trace line:",
            lines.len() + 1
        )),
        "{printed}"
    );
}

#[test]
fn audit_calls_a_run_without_report_that_stopped_midway_incomplete() {
    let (repo, dir) = passing_run();
    let lines = trace(&dir);
    write_trace(&dir, &lines[..5]);
    std::fs::remove_file(dir.join("report.json")).unwrap();
    let printed = failed_audit(&repo, &dir);
    assert!(
        printed.contains("trace.jsonl: incomplete: the trace stops at TEST_RUN"),
        "{printed}"
    );
}

#[test]
fn runs_are_resolved_by_id_prefix_and_ambiguity_lists_the_matches() {
    let repo = FixtureRepo::new();
    let first = test_run(&repo, "ringbuf", 0);
    let id = id_of(&first);
    let repo_arg = repo.path().to_str().unwrap();

    // From anywhere, with --repo; a unique prefix is enough.
    let elsewhere = tempfile::tempdir().unwrap();
    let out = fwfix(&["audit", &id[..17], "--repo", repo_arg], elsewhere.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(stdout(&out).contains(&id), "{}", text(&out));

    // A second run in the same second would share the first 15 characters; make a sibling whose
    // id shares a prefix with the real one for certain.
    let twin = first.with_file_name(format!("{id}-copy"));
    std::fs::create_dir(&twin).unwrap();
    std::fs::copy(first.join("trace.jsonl"), twin.join("trace.jsonl")).unwrap();
    let out = inspect(&["audit", &id[..17]], &repo);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{id}, {id}-copy")),
        "ambiguity must list the matches: {err}"
    );
    // The exact id still names one run.
    let out = inspect(&["show", &id], &repo);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));

    let out = inspect(&["audit", "19990101"], &repo);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(".fwfix/runs"),
        "must say where it looked: {err}"
    );
}

#[test]
fn runs_lists_both_runs_newest_first() {
    let repo = FixtureRepo::new();
    let older = test_run(&repo, "ringbuf", 0);
    let newer = test_run(&repo, "crc", 1);
    let (older, newer) = (id_of(&older), id_of(&newer));

    let out = inspect(&["runs"], &repo);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let printed = stdout(&out);
    let lines: Vec<&str> = printed.lines().collect();
    assert_eq!(lines.len(), 3, "{printed}");
    assert!(lines[0].starts_with("ID "), "{printed}");
    assert!(lines[1].starts_with(&newer), "{printed}");
    assert!(lines[1].contains(" FAILED "), "{printed}");
    assert!(lines[1].contains("qemu-mps2-an385 / crc"), "{printed}");
    assert!(lines[2].starts_with(&older), "{printed}");
    assert!(lines[2].contains(" PASSED "), "{printed}");

    let out = inspect(&["runs", "--json"], &repo);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let runs: Vec<Value> = events(&out);
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["id"], newer.as_str());
    assert_eq!(runs[0]["status"], "FAILED");
    assert_eq!(runs[0]["command"], "test");
    assert_eq!(runs[0]["profile"], "crc");
    assert_eq!(runs[1]["id"], older.as_str());
    assert_eq!(runs[1]["status"], "PASSED");

    let out = inspect(&["runs", "--json", "--limit", "1"], &repo);
    let runs = events(&out);
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["id"], newer.as_str());

    // A run killed before it wrote its report shows how far it got; its process is gone.
    let newer_dir = repo.path().join(".fwfix/runs").join(&newer);
    std::fs::remove_file(newer_dir.join("report.json")).unwrap();
    write_trace(&newer_dir, &trace(&newer_dir)[..5]);
    let out = inspect(&["runs"], &repo);
    let printed = stdout(&out);
    assert!(printed.contains("killed at TEST_RUN"), "{printed}");
    let runs = events(&inspect(&["runs", "--json"], &repo));
    assert_eq!(runs[0]["status"], "KILLED");
    assert_eq!(runs[0]["state"], "TEST_RUN");
    assert_eq!(runs[0]["profile"], "crc");

    // Without a recorded process nobody can tell whether it still runs.
    for file in ["run.json", "context.json"] {
        let _ = std::fs::remove_file(newer_dir.join(file));
    }
    let printed = stdout(&inspect(&["runs"], &repo));
    assert!(
        printed.contains("running or killed at TEST_RUN"),
        "{printed}"
    );
}

#[test]
fn runs_in_a_repository_without_runs_is_empty_and_a_missing_repository_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = fwfix(&["runs", "--json"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(stdout(&out), "");
    let out = fwfix(&["runs"], dir.path());
    assert!(stdout(&out).starts_with("no runs in "), "{}", text(&out));

    let missing = dir.path().join("nope");
    let out = fwfix(&["runs", "--repo", missing.to_str().unwrap()], dir.path());
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

/// Regression: `fwfix resume garbage`, with `garbage` a directory of the current one that holds
/// no run (and no run id starting so), said "garbage is not a directory".
#[test]
fn a_bare_word_naming_a_directory_that_holds_no_run_is_named_as_such() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("garbage")).unwrap();
    std::fs::write(dir.path().join("garbage/context.json"), "junk").unwrap();
    for command in ["resume", "audit", "show"] {
        let out = fwfix(&[command, "garbage"], dir.path());
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("garbage is not a run directory"),
            "{}",
            text(&out)
        );
        assert!(!stderr.contains("not a directory,"), "{}", text(&out));
    }
}

#[test]
fn show_prints_the_states_in_order_then_the_summary() {
    let repo = FixtureRepo::new();
    let dir = test_run(&repo, "crc", 1);
    let out = inspect(&["show", &id_of(&dir)], &repo);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let printed = stdout(&out);
    let steps = [
        "IDLE -> INIT",
        "INIT -> BUILD_SETUP",
        "BUILD_SETUP -> BUILD_RUN",
        "BUILD_RUN -> TEST_SETUP",
        "TEST_SETUP -> TEST_RUN",
        "TEST_RUN -> RESULT_COLLECTION",
        "RESULT_COLLECTION -> RESULT_ANALYSIS",
        "RESULT_ANALYSIS -> CONVERGENCE_CHECK",
        "CONVERGENCE_CHECK -> FAILURE",
        "test_crc16_known_vector",
        "FAILED 4 passed, 1 failed",
    ];
    let mut from = 0;
    for step in steps {
        let at = printed[from..]
            .find(step)
            .unwrap_or_else(|| panic!("`{step}` missing or out of order in\n{printed}"));
        from += at + step.len();
    }
    assert!(printed.contains(" +00:00.000  #1 "), "{printed}");
    assert!(
        printed.contains("evidence: iter-000/build.log"),
        "{printed}"
    );
    assert!(!printed.contains('\x1b'), "NO_COLOR is set: {printed}");

    let out = inspect(&["show", "--color", "always", &id_of(&dir)], &repo);
    assert!(stdout(&out).contains("\x1b[31m"), "{}", text(&out));

    let out = inspect(&["show", "--json", &id_of(&dir)], &repo);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let shown: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    let entries = shown["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 9);
    assert_eq!(entries[0]["from"], "IDLE");
    assert_eq!(entries[0]["offset_ms"], 0);
    assert_eq!(entries[8]["to"], "FAILURE");
    assert_eq!(shown["report"]["status"], "FAILED");
}

#[test]
fn report_regenerates_the_rendered_files_and_leaves_report_json_alone() {
    let repo = FixtureRepo::new();
    let dir = test_run(&repo, "crc", 1);
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("test_crc16_known_vector"), "{html}");
    let json_before = std::fs::read(dir.join("report.json")).unwrap();
    for file in ["report.md", "junit.xml", "report.html"] {
        std::fs::remove_file(dir.join(file)).unwrap();
    }

    let out = inspect(&["report", &id_of(&dir)], &repo);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    for file in ["report.md", "junit.xml", "report.html"] {
        assert!(dir.join(file).is_file(), "{file} not written");
        assert!(stdout(&out).contains(file), "{}", text(&out));
    }
    assert_eq!(std::fs::read(dir.join("report.json")).unwrap(), json_before);
    assert_eq!(
        std::fs::read_to_string(dir.join("report.html")).unwrap(),
        html
    );
    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    assert!(junit.contains("test_crc16_known_vector"), "{junit}");
    // The audit still passes: re-rendering touches no evidence.
    assert_eq!(audit(&repo, &dir).status.code(), Some(0));
}

#[test]
fn report_of_a_killed_run_says_there_is_no_report_and_exits_1() {
    let (repo, dir) = passing_run();
    write_trace(&dir, &trace(&dir)[..6]);
    std::fs::remove_file(dir.join("report.json")).unwrap();
    let out = inspect(&["report", dir.to_str().unwrap()], &repo);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("has no report.json"), "{err}");
    assert!(err.contains("RESULT_COLLECTION"), "{err}");

    // show still lays out what happened.
    let out = inspect(&["show", dir.to_str().unwrap()], &repo);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        stdout(&out).contains("no report.json: the run is still going or was killed"),
        "{}",
        text(&out)
    );
}
