//! The lint stage end to end, with the real analysers: cppcheck and clang-tidy from Debian's
//! packages and gcc, on the fixture firmware in git repositories in temp dirs, through the real
//! fwfix binary on QEMU. A candidate that fixes the target while adding a finding is rolled back
//! (LINT_FAILURE) and its finding reaches the next candidate as evidence; a round's candidate
//! with a new finding ranks after the clean one; findings that only moved are not new.
#![allow(clippy::unwrap_used, clippy::expect_used)] // panics are how tests fail

use crate::common::*;
use fwfix::analysis::lint::{self, Reader};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// cppcheck's documented one-line template.
const CPPCHECK: &str =
    "cppcheck -q --enable=warning --template='{file}:{line}:{column}: {severity}: {message} [{id}]' src";

/// The fix of the fixture's CRC-16 (its initial register), as a sed expression.
const FIX: &str = "s/uint16_t crc = 0x0000u;/uint16_t crc = 0xFFFFu;/";

/// A profile for the fixture's crc image with a `[lint]` table and `extra` appended, written
/// outside the repository (so it is not part of any snapshot) and returned as a path.
fn profile(dir: &Path, lint: &str, extra: &str) -> String {
    let path = dir.join("crc-lint.toml");
    std::fs::write(
        &path,
        format!(
            r#"name = "crc-lint"
[build]
command = "make BOARD={{machine}} build/{{machine}}/test_crc.elf"
artifact = "build/{{machine}}/test_crc.elf"
[test]
harness = "unity"
timeout_s = 20
[loop]
max_iterations = 3
[policy]
allow = ["src/**"]
[lint]
{lint}
{extra}"#
        ),
    )
    .unwrap();
    path.display().to_string()
}

fn lint_toml(command: &str, format: &str) -> String {
    format!(
        "command = {}\nformat = \"{format}\"\n",
        toml::Value::String(command.to_string())
    )
}

/// The fixture with code that already has a cppcheck finding and a gcc warning, committed: a
/// null pointer dereference and a signed/unsigned comparison, in a function of src/crc.c.
fn repo_with_legacy_findings() -> FixtureRepo {
    let repo = FixtureRepo::new();
    let crc = std::fs::read_to_string(repo.path().join("src/crc.c")).unwrap();
    repo.write(
        "src/crc.c",
        &format!(
            "{crc}
/* Kept for old callers. */
uint8_t crc_legacy_peek(unsigned int n)
{{
    const uint8_t *table = 0;
    int limit = 4;

    if (n < limit) {{
        return *table;
    }}
    return 0;
}}
"
        ),
    );
    repo.git(&["commit", "-q", "-am", "legacy helper"]);
    repo
}

fn step<'a>(lines: &'a [Value], from: &str, to: &str, iteration: u64) -> Option<&'a Value> {
    lines
        .iter()
        .find(|l| l["from"] == from && l["to"] == to && l["iteration"] == iteration)
}

fn audit_passes(dir: &Path, cwd: &Path) {
    let out = fwfix(&["audit", dir.to_str().unwrap()], cwd);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

#[test]
fn a_fix_that_adds_a_cppcheck_finding_is_rolled_back_and_the_clean_fix_converges() {
    require_lint_tools();
    let repo = FixtureRepo::new();
    let scratch = tempfile::tempdir().unwrap();
    // The agent's first answer fixes the CRC and dereferences a null pointer on the way; its
    // second fixes the CRC alone. It keeps what fwfix told it each time.
    let agent = repo.path().join(".git/agent.sh");
    std::fs::write(
        &agent,
        format!(
            r#"set -e
cat > "$FWFIX_ITERATION_DIR/stdin.json"
if [ "$FWFIX_ITERATION" = 1 ]; then
  sed -i 's/    uint16_t crc = 0x0000u;/    uint16_t crc = 0xFFFFu;\n    const uint8_t *first = 0;\n\n    if (len == 0) {{\n        return *first;\n    }}/' src/crc.c
else
  sed -i '{FIX}' src/crc.c
fi
"#
        ),
    )
    .unwrap();
    let profile = profile(
        scratch.path(),
        &lint_toml(CPPCHECK, "cppcheck"),
        &format!(
            "[strategy.command]\nargv = [\"sh\", \"{}\"]\ntimeout_s = 60\n",
            agent.display()
        ),
    );
    let out = fwfix(
        &[
            "run",
            "--json",
            "--board",
            "qemu-mps2-an385",
            "--profile",
            &profile,
            "--strategy",
            "command",
        ],
        repo.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let dir = run_dir(&out);
    let report = report(&dir);
    assert_eq!(report["status"], "SUCCESS", "{report:#}");
    assert_eq!(report["iterations"], 2);

    // The machine: the baseline went through LINT to its test; iteration 1 failed in LINT
    // and went back to analysis without a test run; iteration 2 passed LINT and converged.
    let lines = trace(&dir);
    let baseline = step(&lines, "LINT", "TEST_SETUP", 0).expect("the baseline was linted");
    assert_eq!(baseline["outcome"], "lint_passed");
    assert!(step(&lines, "BUILD_RUN", "LINT", 0).is_some());
    let rejected = step(&lines, "LINT", "ERROR_RECOVERY", 1).expect("iteration 1 failed lint");
    assert_eq!(rejected["error_class"], "LINT_FAILURE", "{rejected:#}");
    let reason = rejected["reason"].as_str().unwrap();
    assert!(reason.contains("nullPointer"), "{reason}");
    assert!(reason.contains("src/crc.c:46"), "{reason}");
    let evidence: Vec<&str> = rejected["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    assert!(evidence.contains(&"iter-001/lint.json"), "{evidence:?}");
    let recovered = step(&lines, "ERROR_RECOVERY", "CODE_ANALYSIS", 1).unwrap();
    assert_eq!(recovered["outcome"], "recovered:CODE_ANALYSIS");
    assert!(
        !lines
            .iter()
            .any(|l| l["to"] == "TEST_RUN" && l["iteration"] == 1),
        "the rejected candidate was never tested: {lines:#?}"
    );
    assert_eq!(
        step(&lines, "LINT", "TEST_SETUP", 2).unwrap()["outcome"],
        "lint_passed"
    );

    // The next analysis got the finding as evidence, with its source, and why the first
    // candidate was not kept.
    let stdin: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("iter-002/stdin.json")).unwrap())
            .unwrap();
    let diagnostics = stdin["evidence"]["diagnostics"].as_array().unwrap();
    let finding = diagnostics
        .iter()
        .find(|d| d["kind"] == "lint:nullPointer")
        .unwrap_or_else(|| panic!("{diagnostics:#?}"));
    assert_eq!(finding["file"], "src/crc.c");
    assert_eq!(finding["line"], 46);
    assert!(
        finding["source"]["text"]
            .as_str()
            .unwrap()
            .contains("return *first;"),
        "{finding:#}"
    );
    let history = stdin["evidence"]["history"].as_array().unwrap();
    assert!(
        history.iter().any(|h| h["outcome"] == "NEW_FINDINGS"),
        "{history:#?}"
    );
    let markdown = stdin["evidence_markdown"].as_str().unwrap();
    assert!(
        markdown.contains("## Lint findings the last candidate added"),
        "{markdown}"
    );
    assert!(
        markdown.contains("Null pointer dereference: first [nullPointer]"),
        "{markdown}"
    );

    // The report: the last lint is clean against the baseline, the fix holds no null pointer.
    assert_eq!(report["lint"]["verdict"], "clean", "{:#}", report["lint"]);
    assert_eq!(report["lint"]["iteration"], 2);
    assert_eq!(report["lint"]["baseline_findings"], 0);
    assert!(report["notes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n.as_str().unwrap().contains("added lint findings")));
    let fix = std::fs::read_to_string(dir.join("fix.patch")).unwrap();
    assert!(!fix.contains("first"), "{fix}");
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains("## Lint"), "{md}");
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("<h2>Lint</h2>"), "{html}");
    // The owner's tree is as it was.
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
    audit_passes(&dir, repo.path());
}

#[test]
fn a_round_ranks_the_candidate_with_a_new_cppcheck_finding_after_the_clean_one() {
    require_lint_tools();
    let repo = FixtureRepo::new();
    let scratch = tempfile::tempdir().unwrap();
    let queue = tempfile::tempdir().unwrap();
    // The smaller diff would rank first; it dereferences a null pointer.
    let dirty = repo.diff_of("src/crc.c", |c| {
        c.replace(
            "    uint16_t crc = 0x0000u;",
            "    uint16_t crc = 0xFFFFu; const uint8_t *none = 0; if (len == 0) { return *none; }",
        )
    });
    let clean = repo.diff_of("src/crc.c", |c| {
        c.replace(
            "    uint16_t crc = 0x0000u;",
            "    /*\n     * CRC-16/CCITT-FALSE starts with all ones.\n     */\n    uint16_t crc = 0xFFFFu;",
        )
    });
    std::fs::write(queue.path().join("01-dirty.diff"), dirty).unwrap();
    std::fs::write(queue.path().join("02-clean.diff"), clean).unwrap();
    // The XML report this time.
    let profile = profile(
        scratch.path(),
        &lint_toml("cppcheck -q --xml src", "cppcheck"),
        "",
    );
    let out = run_queue(repo.path(), &profile, queue.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let dir = run_dir(&out);
    let report = report(&dir);
    assert_eq!(report["status"], "SUCCESS");
    assert_eq!(report["iterations"], 1);

    let by_id = |id: &str| candidate(&dir, 1, id);
    let c1 = by_id("c1");
    assert_eq!(
        (c1["verdict"].as_str(), c1["rank"].as_u64()),
        (Some("ranked"), Some(2)),
        "{c1:#}"
    );
    assert_eq!(c1["checks"]["builds"]["result"], "passed", "{c1:#}");
    assert_eq!(c1["checks"]["lint"]["result"], "failed", "{c1:#}");
    assert_eq!(c1["new_findings"][0]["id"], "nullPointer", "{c1:#}");
    assert_eq!(c1["new_findings"][0]["tool"], "cppcheck");
    assert!(c1["reason"]
        .as_str()
        .unwrap()
        .contains("1 new lint finding(s)"));
    let c2 = by_id("c2");
    assert_eq!(
        (c2["verdict"].as_str(), c2["rank"].as_u64()),
        (Some("ranked"), Some(1)),
        "{c2:#}"
    );
    assert_eq!(c2["checks"]["lint"]["result"], "passed", "{c2:#}");
    assert!(c2.get("new_findings").is_none(), "{c2:#}");

    // The clean one was the one tested; the report lists the other's findings.
    let lines = trace(&dir);
    let review = step(&lines, "PATCH_REVIEW", "PATCH_APPLY", 1).unwrap();
    assert!(
        review["reason"]
            .as_str()
            .unwrap()
            .starts_with("2 candidates: c2 ranked 1st, c1 ranked 2nd"),
        "{review:#}"
    );
    let listed = report["candidates"].as_array().unwrap();
    let c1 = listed.iter().find(|c| c["id"] == "c1").unwrap();
    assert_eq!(c1["new_findings"][0]["id"], "nullPointer", "{c1:#}");
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        md.contains("Lint findings c1 of iteration 1 (01-dirty.diff) adds:"),
        "{md}"
    );
    audit_passes(&dir, repo.path());
}

#[test]
fn a_fix_that_only_moves_existing_findings_is_not_penalised() {
    require_lint_tools();
    let repo = repo_with_legacy_findings();
    let scratch = tempfile::tempdir().unwrap();
    let queue = tempfile::tempdir().unwrap();
    // The fix, with lines inserted above both existing findings.
    let moves = repo.diff_of("src/crc.c", |c| {
        c.replace(
            "    uint16_t crc = 0x0000u;",
            "    /*\n     * CRC-16/CCITT-FALSE starts with all ones.\n     */\n    uint16_t crc = 0xFFFFu;",
        )
    });
    std::fs::write(queue.path().join("01-fix.diff"), moves).unwrap();
    let profile = profile(scratch.path(), &lint_toml(CPPCHECK, "cppcheck"), "");
    let out = run_queue(repo.path(), &profile, queue.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let dir = run_dir(&out);
    let report = report(&dir);
    assert_eq!(report["status"], "SUCCESS");
    assert_eq!(report["iterations"], 1);
    let lint = &report["lint"];
    assert_eq!(lint["verdict"], "clean", "{lint:#}");
    assert_eq!(lint["baseline_findings"], 2, "{lint:#}");
    assert_eq!(lint["findings"], 2, "{lint:#}");
    assert_eq!(lint["new_findings"], serde_json::json!([]));

    // The same two findings, the build's warning among them, three lines further down.
    let read = |path: &str| -> Vec<Value> {
        serde_json::from_str(&std::fs::read_to_string(dir.join(path)).unwrap()).unwrap()
    };
    let (before, after) = (read("iter-000/lint.json"), read("iter-001/lint.json"));
    let find = |list: &[Value], id: &str| -> Value {
        list.iter()
            .find(|f| f["id"] == id)
            .unwrap_or_else(|| panic!("no {id} in {list:#?}"))
            .clone()
    };
    for (id, tool) in [("nullPointer", "cppcheck"), ("-Wsign-compare", "build")] {
        let (b, a) = (find(&before, id), find(&after, id));
        assert_eq!(b["tool"], tool);
        assert_eq!(a["line"].as_u64().unwrap(), b["line"].as_u64().unwrap() + 3);
        assert_eq!(a["text"], b["text"]);
    }
    let lines = trace(&dir);
    assert!(
        step(&lines, "LINT", "TEST_SETUP", 1).is_some(),
        "{lines:#?}"
    );
    assert!(!lines.iter().any(|l| l["error_class"] == "LINT_FAILURE"));
    audit_passes(&dir, repo.path());
}

#[test]
fn a_new_sign_compare_warning_ends_the_run_as_lint_failure_and_old_ones_an_incremental_build_shows_do_not_count(
) {
    require_lint_tools();
    let repo = repo_with_legacy_findings();
    let scratch = tempfile::tempdir().unwrap();
    let queue = tempfile::tempdir().unwrap();
    let warns = repo.diff_of("src/crc.c", |c| {
        c.replace(
            "    uint16_t crc = 0x0000u;",
            "    uint16_t crc = 0xFFFFu;\n    int wanted = 1;\n\n    if (len < wanted) {\n        return crc;\n    }",
        )
    });
    std::fs::write(queue.path().join("01-fix-with-warning.diff"), warns).unwrap();
    // Built before the run: the baseline build compiles nothing and shows no warning, and the
    // candidate's build recompiles src/crc.c, legacy warning and all.
    let built = Command::new("make")
        .args(["BOARD=mps2-an385", "build/mps2-an385/test_crc.elf"])
        .current_dir(repo.path())
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    // The build's warnings alone.
    let profile = profile(scratch.path(), "build_warnings = true\n", "");
    let out = run_queue(repo.path(), &profile, queue.path());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let dir = run_dir(&out);
    let report = report(&dir);
    assert_eq!(report["status"], "FAILURE");
    assert_eq!(report["error_class"], "LINT_FAILURE", "{report:#}");
    let lint = &report["lint"];
    assert_eq!(lint["verdict"], "rejected", "{lint:#}");
    assert_eq!(lint["command"], Value::Null);
    assert_eq!(lint["baseline_findings"], 0, "{lint:#}");
    assert_eq!(lint["findings"], 2, "{lint:#}");
    let new = lint["new_findings"].as_array().unwrap();
    assert_eq!(new.len(), 1, "{new:#?}");
    assert_eq!(new[0]["id"], "-Wsign-compare");
    assert_eq!(new[0]["tool"], "build");
    assert_eq!(new[0]["text"], "if (len < wanted) {");
    let lines = trace(&dir);
    let failed = lines.last().unwrap();
    assert_eq!(failed["to"], "FAILURE");
    assert_eq!(failed["error_class"], "LINT_FAILURE", "{failed:#}");
    assert!(!lines
        .iter()
        .any(|l| l["to"] == "TEST_RUN" && l["iteration"] == 1));
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
    audit_passes(&dir, repo.path());
}

#[test]
fn fwfix_test_reports_clang_tidy_findings_without_judging_them() {
    require_lint_tools();
    let repo = repo_with_legacy_findings();
    let scratch = tempfile::tempdir().unwrap();
    let profile = profile(
        scratch.path(),
        &lint_toml(
            "clang-tidy --quiet --checks=-*,clang-analyzer-core.NullDereference src/crc.c --",
            "clang-tidy",
        ),
        "",
    );
    let out = fwfix(
        &[
            "test",
            "--json",
            "--board",
            "qemu-mps2-an385",
            "--profile",
            &profile,
        ],
        repo.path(),
    );
    // The fixture's crc test fails; the findings change nothing about that.
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let dir = run_dir(&out);
    let report = report(&dir);
    assert_eq!(report["status"], "FAILED");
    let lint = &report["lint"];
    assert_eq!(lint["verdict"], "reported", "{lint:#}");
    assert_eq!(lint["baseline_findings"], Value::Null);
    let findings: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string(dir.join(lint["findings_file"].as_str().unwrap())).unwrap(),
    )
    .unwrap();
    let null = findings
        .iter()
        .find(|f| f["id"] == "clang-analyzer-core.NullDereference")
        .unwrap_or_else(|| panic!("{findings:#?}"));
    assert_eq!(null["file"], "src/crc.c");
    assert_eq!(null["text"], "return *table;");
    let lines = trace(&dir);
    let linted = step(&lines, "LINT", "TEST_SETUP", 0).unwrap();
    assert!(
        linted["reason"]
            .as_str()
            .unwrap()
            .contains("reported only: fwfix test has no baseline"),
        "{linted:#}"
    );
    audit_passes(&dir, repo.path());
}

/// Runs `program args... file` in `dir` and returns what it printed on both streams.
fn output_of(dir: &Path, program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

const HOST_C: &str = "#include <stddef.h>
int sum(const int *v, int n) {
    int s = 0;
    for (unsigned i = 0; i < n; i++) {
        s += v[i];
    }
    return s;
}
int deref(void) {
    int *p = NULL;
    return *p;
}
";

#[test]
fn the_gcc_reader_on_a_real_sign_compare_warning() {
    require_lint_tools();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.c"), HOST_C).unwrap();
    let printed = output_of(
        dir.path(),
        "gcc",
        &["-Wall", "-Wextra", "-c", "a.c", "-o", "/dev/null"],
    );
    let found = lint::read(Reader::Gcc, &printed, dir.path());
    let sign = found
        .iter()
        .find(|f| f.id == "-Wsign-compare")
        .unwrap_or_else(|| panic!("{printed}\n{found:#?}"));
    assert_eq!((sign.file.as_str(), sign.line), ("a.c", Some(4)));
    assert_eq!(sign.severity, "warning");
    assert!(
        sign.message
            .starts_with("comparison of integer expressions of different signedness"),
        "{}",
        sign.message
    );
}

#[test]
fn the_clang_tidy_reader_on_real_clang_tidy_output() {
    require_lint_tools();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a.c");
    std::fs::write(&file, HOST_C).unwrap();
    // clang-tidy names the file as it was given: absolute here, relative in the finding.
    let printed = output_of(
        dir.path(),
        "clang-tidy",
        &[
            "--checks=-*,clang-analyzer-core.NullDereference",
            file.to_str().unwrap(),
            "--",
        ],
    );
    let mut found = lint::read(Reader::ClangTidy, &printed, dir.path());
    assert_eq!(found.len(), 1, "{printed}\n{found:#?}");
    lint::with_source_text(&mut found, &|f| {
        std::fs::read_to_string(dir.path().join(f)).ok()
    });
    let f = &found[0];
    assert_eq!(f.id, "clang-analyzer-core.NullDereference");
    assert_eq!(
        (f.file.as_str(), f.line, f.column),
        ("a.c", Some(11), Some(12))
    );
    assert_eq!(f.text, "return *p;");
}

#[test]
fn new_findings_warn_reports_them_and_lets_the_fix_through() {
    require_lint_tools();
    let repo = FixtureRepo::new();
    let scratch = tempfile::tempdir().unwrap();
    let queue = tempfile::tempdir().unwrap();
    let dirty = repo.diff_of("src/crc.c", |c| {
        c.replace(
            "    uint16_t crc = 0x0000u;",
            "    uint16_t crc = 0xFFFFu; const uint8_t *none = 0; if (len == 0) { return *none; }",
        )
    });
    std::fs::write(queue.path().join("01-dirty.diff"), dirty).unwrap();
    let profile = profile(
        scratch.path(),
        &format!(
            "{}new_findings = \"warn\"\n",
            lint_toml(CPPCHECK, "cppcheck")
        ),
        "",
    );
    let out = run_queue(repo.path(), &profile, queue.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let dir = run_dir(&out);
    let report = report(&dir);
    assert_eq!(report["status"], "SUCCESS");
    assert_eq!(report["lint"]["verdict"], "warned", "{:#}", report["lint"]);
    assert_eq!(report["lint"]["new_findings"][0]["id"], "nullPointer");
    let lines = trace(&dir);
    let linted = step(&lines, "LINT", "TEST_SETUP", 1).unwrap();
    assert!(
        linted["reason"]
            .as_str()
            .unwrap()
            .contains("reported only: new_findings = \"warn\""),
        "{linted:#}"
    );
    // The person watching the run was told.
    assert!(events(&out).iter().any(|e| e["text"]
        .as_str()
        .is_some_and(|t| t.starts_with("new lint finding: src/crc.c:"))));
}

#[test]
fn a_run_killed_in_lint_resumes_there_with_its_candidate_back_in_the_tree() {
    require_lint_tools();
    let repo = FixtureRepo::new();
    let scratch = tempfile::tempdir().unwrap();
    let queue = fixture_queue(&["04-fixes-crc16.diff"]);
    let profile = profile(scratch.path(), &lint_toml(CPPCHECK, "cppcheck"), "");
    let killed = fwfix(
        &[
            "run",
            "--json",
            "--board",
            "qemu-mps2-an385",
            "--profile",
            &profile,
            "--strategy",
            "queue",
            "--patches",
            queue.path().to_str().unwrap(),
            "--test-kill-at",
            "LINT@1",
        ],
        repo.path(),
    );
    assert_eq!(killed.status.code(), None, "{}", text(&killed));
    let dir = std::fs::read_dir(repo.path().join(".fwfix/runs"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let out = fwfix(&["resume", "--json", dir.to_str().unwrap()], repo.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report = report(&dir);
    assert_eq!(report["status"], "SUCCESS");
    assert_eq!(report["lint"]["verdict"], "clean", "{:#}", report["lint"]);
    let lines = trace(&dir);
    assert!(step(&lines, "BUILD_RUN", "LINT", 1).is_some());
    assert!(
        step(&lines, "LINT", "TEST_SETUP", 1).is_some(),
        "{lines:#?}"
    );
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
    audit_passes(&dir, repo.path());
}
