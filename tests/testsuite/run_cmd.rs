//! `fwfix run` end to end: the fix loop on the fixture firmware in real git repositories, real
//! builds and real QEMU, driven by the `queue` strategy so every run is deterministic.
#![allow(clippy::unwrap_used, clippy::expect_used)] // panics are how tests fail

use crate::common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub(crate) const MPS2: &str = "qemu-mps2-an385";

fn run_cmd(repo: &FixtureRepo, patches: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "run",
        "--json",
        "--repo",
        repo.path().to_str().unwrap(),
        "--board",
        MPS2,
        "--profile",
        "crc",
        "--strategy",
        "queue",
        "--patches",
        patches.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    fwfix(&args, repo.path())
}

/// The owner's work in progress: a modified tracked file, a staged change that was modified
/// again, and an untracked file — none of them in files the candidates touch.
pub(crate) fn make_owner_work(repo: &FixtureRepo) {
    repo.write("README.md", "my local notes about this firmware\n");
    repo.write(
        "src/ringbuf.c",
        &(std::fs::read_to_string(repo.path().join("src/ringbuf.c")).unwrap() + "/* staged */\n"),
    );
    repo.git(&["add", "src/ringbuf.c"]);
    repo.write(
        "src/ringbuf.c",
        &(std::fs::read_to_string(repo.path().join("src/ringbuf.c")).unwrap()
            + "/* then edited */\n"),
    );
    repo.write("notes/todo.txt", "untracked idea\n");
}

/// Everything about the owner's tree that must survive a run, byte for byte.
pub(crate) fn owner_state(repo: &FixtureRepo) -> BTreeMap<String, String> {
    let mut state = BTreeMap::new();
    for f in ["README.md", "src/ringbuf.c", "notes/todo.txt", "src/crc.c"] {
        state.insert(
            f.to_string(),
            std::fs::read_to_string(repo.path().join(f)).unwrap_or_default(),
        );
    }
    state.insert(
        "status".into(),
        repo.git(&["status", "--porcelain", "--untracked-files=all"]),
    );
    state.insert("staged".into(), repo.git(&["diff", "--cached"]));
    state.insert("unstaged".into(), repo.git(&["diff"]));
    state.insert("head".into(), repo.git(&["rev-parse", "HEAD"]));
    state.insert("branch".into(), repo.git(&["symbolic-ref", "HEAD"]));
    state
}

#[test]
fn queue_of_four_drops_two_in_review_and_converges_on_the_smaller_fix_in_iteration_1() {
    let repo = FixtureRepo::new();
    make_owner_work(&repo);
    let before = owner_state(&repo);
    let q = fixture_queue(&[
        "01-does-not-apply.diff",
        "02-breaks-build.diff",
        "03-regresses-crc32.diff",
        "04-fixes-crc16.diff",
    ]);
    let out = run_cmd(&repo, q.path(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let dir = run_dir(&out);
    let report = report(&dir);
    assert_eq!(report["status"], "SUCCESS");
    assert_eq!(report["command"], "run");
    assert_eq!(report["iterations"], 1);
    assert_eq!(
        report["fixed"],
        serde_json::json!(["test_crc16_known_vector"])
    );
    let branch = report["branch"].as_str().unwrap().to_string();
    assert!(branch.starts_with("fwfix/"));
    assert!(Path::new(report["patch"].as_str().unwrap()).is_file());

    // The whole queue is iteration 1's round: the candidate that does not apply and the one
    // that does not build are dropped in review, each classified; of the two that build, the
    // smaller diff (the fix) is tried first, and the other is never tested.
    let verdicts: Vec<(String, String)> = report["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["origin"].as_str().unwrap().to_string(),
                match c["rank"].as_u64() {
                    Some(rank) => format!("ranked {rank}"),
                    None => c["error_class"].as_str().unwrap().to_string(),
                },
            )
        })
        .collect();
    assert_eq!(
        verdicts,
        [
            (
                "01-does-not-apply.diff".into(),
                "PATCH_APPLY_FAILURE".into()
            ),
            ("02-breaks-build.diff".into(), "BUILD_FAILURE".into()),
            ("03-regresses-crc32.diff".into(), "ranked 2".into()),
            ("04-fixes-crc16.diff".into(), "ranked 1".into()),
        ]
    );
    let lines = trace(&dir);
    assert!(
        !lines.iter().any(|l| l["to"] == "ERROR_RECOVERY"),
        "{lines:#?}"
    );
    let review = lines.iter().find(|l| l["from"] == "PATCH_REVIEW").unwrap();
    let reason = review["reason"].as_str().unwrap();
    assert!(
        reason.starts_with(
            "4 candidates: c4 ranked 1st, c3 ranked 2nd, c1 dropped (PATCH_APPLY_FAILURE"
        ) && reason.contains("c2 dropped (BUILD_FAILURE"),
        "{reason}"
    );
    assert_eq!(lines.last().unwrap()["to"], "SUCCESS");
    let audit = fwfix(&["audit", dir.to_str().unwrap()], repo.path());
    assert_eq!(audit.status.code(), Some(0), "{}", text(&audit));

    // The fix is on its branch, parented on the HEAD the run started from; the owner's tree
    // ends exactly as it started.
    let parent = repo.git(&["rev-parse", &format!("{branch}^")]);
    assert_eq!(parent, before["head"]);
    let fixed_crc = repo.git(&["show", &format!("{branch}:src/crc.c")]);
    assert_ne!(fixed_crc, before["src/crc.c"]);
    let message = repo.git(&["log", "-1", "--format=%B", &branch]);
    assert!(
        message.contains("test_crc16_known_vector")
            && message.contains(report["run_id"].as_str().unwrap()),
        "{message}"
    );
    assert_eq!(owner_state(&repo), before);
    // A converged run cannot be resumed: its snapshots (the owner's files) are gone from .git.
    assert_eq!(repo.git(&["for-each-ref", "refs/fwfix/"]), "");
}

/// A fix that applies only on top of the owner's uncommitted work is committed with that work
/// in the files it touches: the owner is told, in an event, the report (its notes and
/// `fix_needs_uncommitted`), the summary and the commit.
#[test]
fn a_fix_that_needs_uncommitted_work_says_so() {
    let repo = FixtureRepo::new();
    repo.write("src/mine.h", "#define MINE 1\n");
    let q = tempfile::tempdir().unwrap();
    std::fs::write(
        q.path().join("fix.diff"),
        crc_fix()
            + "diff --git a/src/mine.h b/src/mine.h\n--- a/src/mine.h\n+++ b/src/mine.h\n\
               @@ -1 +1 @@\n-#define MINE 1\n+#define MINE 2\n",
    )
    .unwrap();
    let out = run_cmd(&repo, q.path(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let dir = run_dir(&out);
    let report = report(&dir);
    let told = "the fix applied only on top of your uncommitted changes";
    assert!(report["notes"].to_string().contains(told), "{report:#}");
    assert!(
        events(&out).iter().any(|e| e["event"] == "message"
            && e["text"].as_str().unwrap().contains(told)
            && e["text"].as_str().unwrap().contains("src/mine.h")),
        "{}",
        text(&out)
    );
    let branch = report["branch"].as_str().unwrap();
    let message = repo.git(&["log", "-1", "--format=%B", branch]);
    assert!(
        message.contains("applied only on top of uncommitted changes"),
        "{message}"
    );
    // And the summary a person reads at the end.
    // Only the file that holds uncommitted work: src/crc.c is as committed.
    assert_eq!(
        report["fix_needs_uncommitted"],
        serde_json::json!(["src/mine.h"]),
        "{report:#}"
    );
    let show = fwfix(&["show", dir.to_str().unwrap()], repo.path());
    let summary = String::from_utf8_lossy(&show.stdout);
    assert!(
        summary.contains("note: the fix needs your uncommitted work in ")
            && summary.contains("src/mine.h"),
        "{}",
        text(&show)
    );
}

#[test]
fn a_passing_baseline_is_success_with_nothing_to_fix() {
    let repo = FixtureRepo::new();
    let q = fixture_queue(&["04-fixes-crc16.diff"]);
    let out = fwfix(
        &[
            "run",
            "--json",
            "--board",
            MPS2,
            "--profile",
            "ringbuf",
            "--strategy",
            "queue",
            "--patches",
            q.path().to_str().unwrap(),
        ],
        repo.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report = report(&run_dir(&out));
    assert_eq!(report["iterations"], 0);
    assert!(report["branch"].is_null() && report["patch"].is_null());
    assert!(report["message"]
        .as_str()
        .unwrap()
        .contains("nothing to fix"));
}

#[test]
fn unsafe_patches_are_refused_with_nothing_touched() {
    let repo = FixtureRepo::new();
    make_owner_work(&repo);
    let before = owner_state(&repo);
    let q = tempfile::tempdir().unwrap();
    let evil = [
        ("01-dotdot.diff", "../outside.txt"),
        ("02-git.diff", ".git/hooks/pre-commit"),
        ("03-absolute.diff", "/tmp/fwfix-absolute-target"),
    ];
    for (name, target) in evil {
        let (a, b) = if target.starts_with('/') {
            (target.to_string(), target.to_string())
        } else {
            (format!("a/{target}"), format!("b/{target}"))
        };
        std::fs::write(
            q.path().join(name),
            format!("--- {a}\n+++ {b}\n@@ -0,0 +1 @@\n+owned\n")
                .replace(&format!("--- {a}"), "--- /dev/null"),
        )
        .unwrap();
    }
    let out = run_cmd(&repo, q.path(), &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let lines = trace(&run_dir(&out));
    let refused: Vec<&Value> = lines
        .iter()
        .filter(|l| l["to"] == "ERROR_RECOVERY")
        .collect();
    // One round of three, every one refused: the iteration fails as a policy violation.
    assert_eq!(refused.len(), 1, "{lines:#?}");
    assert_eq!(refused[0]["from"], "PATCH_REVIEW", "{}", refused[0]);
    assert_eq!(
        refused[0]["error_class"], "POLICY_VIOLATION",
        "{}",
        refused[0]
    );
    let report = report(&run_dir(&out));
    let classes: Vec<&str> = report["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["error_class"].as_str().unwrap())
        .collect();
    assert_eq!(classes, ["POLICY_VIOLATION"; 3]);
    assert!(!repo.path().join("../outside.txt").exists());
    assert!(!Path::new("/tmp/fwfix-absolute-target").exists());
    assert!(!repo.path().join(".git/hooks/pre-commit").exists());
    assert_eq!(owner_state(&repo), before);
}

/// A profile whose build is slow only when the candidate asks for it, so a signal can be sent
/// while a patched build runs — unless FWFIX_TEST_FAST_BUILD is set, as for a resumed run.
pub(crate) fn slow_when_patched(repo: &FixtureRepo) -> PathBuf {
    repo.write(
        "profiles/crc-slow.toml",
        r#"name = "crc-slow"
[build]
command = "make BOARD={machine} build/{machine}/test_crc.elf && if grep -q SLOW_BUILD src/crc.c && [ -z \"$FWFIX_TEST_FAST_BUILD\" ]; then sleep 60 & echo $! >> sleepers.pid; wait; fi"
artifact = "build/{machine}/test_crc.elf"
[test]
harness = "unity"
timeout_s = 20
"#,
    );
    repo.git(&["add", "profiles/crc-slow.toml"]);
    repo.git(&["commit", "-q", "-m", "slow profile"]);
    let fix = std::fs::read_to_string(fixture_dir().join("patches/04-fixes-crc16.diff")).unwrap();
    // The same fix, plus a marker comment the slow profile looks for.
    let slow = fix.replace(
        "\n+    uint16_t crc = 0xFFFFu;",
        "\n+    /* SLOW_BUILD */\n+    uint16_t crc = 0xFFFFu;",
    );
    let slow = fix_hunk_counts(&slow);
    // Inside .git: out of the tree's view, and removed with the repository's temp dir.
    let q = repo.path().join(".git/slow-queue");
    std::fs::create_dir_all(&q).unwrap();
    std::fs::write(q.join("01-slow-fix.diff"), slow).unwrap();
    q
}

/// Interrupts the run `start_slow_patched_build` started: it must exit 3 with the owner's tree
/// as it was before the run (but for the slow build's own pid file).
fn interrupt_and_check_the_tree(
    child: std::process::Child,
    lines: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
    repo: &FixtureRepo,
    before: &BTreeMap<String, String>,
) {
    signal_and_check_the_tree(child, lines, repo, before, nix::sys::signal::Signal::SIGINT);
}

/// As [`interrupt_and_check_the_tree`], with `signal` (SIGINT or SIGTERM).
pub(crate) fn signal_and_check_the_tree(
    mut child: std::process::Child,
    lines: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
    repo: &FixtureRepo,
    before: &BTreeMap<String, String>,
    signal: nix::sys::signal::Signal,
) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), signal).unwrap();
    let rest: Vec<String> = lines.map(|l| l.unwrap()).collect();
    assert_eq!(child.wait().unwrap().code(), Some(3), "{rest:#?}");
    let mut after = owner_state(repo);
    after.remove("sleepers.pid");
    assert_eq!(&after, before);
}

/// Recomputes the `+` line count of a single-hunk diff after a line was added.
fn fix_hunk_counts(diff: &str) -> String {
    let mut out = String::new();
    for line in diff.lines() {
        if let Some(rest) = line.strip_prefix("@@ -") {
            let (old, rest) = rest.split_once(" +").unwrap();
            let (new, tail) = rest.split_once(" @@").unwrap();
            let (start, count) = new.split_once(',').unwrap();
            let count: u32 = count.parse().unwrap();
            out.push_str(&format!("@@ -{old} +{start},{} @@{tail}\n", count + 1));
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

fn spawn_fwfix(args: &[&str], cwd: &Path) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_fwfix"))
        .args(args)
        .current_dir(cwd)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The fwfix process, its run directory, and the rest of its event stream.
pub(crate) type RunningFwfix = (
    std::process::Child,
    PathBuf,
    std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
);

/// Starts `fwfix run --json` on the slow queue and returns once the patched build is running
/// (its sleeper has written its pid), with the run directory and the rest of the event stream.
pub(crate) fn start_slow_patched_build(repo: &FixtureRepo, q: &Path) -> RunningFwfix {
    start_slow_run(repo, q, "BUILD_RUN")
}

/// As [`start_slow_patched_build`], returning once the run has entered `state` in iteration 1
/// (and, for BUILD_RUN, the slow build is running).
pub(crate) fn start_slow_run(repo: &FixtureRepo, q: &Path, state: &str) -> RunningFwfix {
    let mut child = spawn_fwfix(
        &[
            "run",
            "--json",
            "--board",
            MPS2,
            "--profile",
            "crc-slow",
            "--strategy",
            "queue",
            "--patches",
            q.to_str().unwrap(),
        ],
        repo.path(),
    );
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let sleepers = repo.path().join("sleepers.pid");
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        seen.push(line.clone());
        if line.contains("\"event\":\"transition\"")
            && line.contains(&format!("\"to\":\"{state}\""))
            && line.contains("\"iteration\":1")
        {
            break;
        }
    }
    for _ in 0..200 {
        if state != "BUILD_RUN" {
            break;
        }
        if sleepers.is_file() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(
        state != "BUILD_RUN" || sleepers.is_file(),
        "the patched build never started: {seen:#?}"
    );
    let started: Value = seen
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["event"] == "run_started")
        .unwrap_or_else(|| panic!("no run_started event: {seen:#?}"));
    let run_dir = PathBuf::from(started["run_dir"].as_str().unwrap());
    (child, run_dir, lines)
}

#[test]
fn sigint_during_a_patched_build_exits_3_with_the_tree_restored() {
    let repo = FixtureRepo::new();
    let q = slow_when_patched(&repo);
    make_owner_work(&repo);
    let before = owner_state(&repo);
    let (mut child, _, lines) = start_slow_patched_build(&repo, &q);
    ctrl_c(&child);
    let rest: Vec<String> = lines.map(|l| l.unwrap()).collect();
    assert_eq!(child.wait().unwrap().code(), Some(3), "{rest:#?}");
    let last: Value = serde_json::from_str(rest.last().unwrap()).unwrap();
    assert_eq!(last["status"], "ABORTED");
    // The sleeper's pid file is the build's own output: untracked, created after the snapshot,
    // so rollback removes it like any file the run created.
    let mut after = owner_state(&repo);
    after.remove("sleepers.pid");
    assert_eq!(after, before);
    assert!(!repo.path().join("sleepers.pid").exists());
}

/// Regression: a second `fwfix run` on a checkout a first one was patching snapshotted the first
/// one's candidate as the owner's work and put it back at its end, leaving it in the tree.
#[test]
fn a_second_run_on_a_checkout_being_patched_is_refused_until_the_first_ends() {
    let repo = FixtureRepo::new();
    let q = slow_when_patched(&repo);
    make_owner_work(&repo);
    let before = owner_state(&repo);
    let (child, first_dir, lines) = start_slow_patched_build(&repo, &q);
    let runs = || {
        std::fs::read_dir(first_dir.parent().unwrap())
            .unwrap()
            .count()
    };
    let runs_before = runs();
    let fix = fixture_queue(&["04-fixes-crc16.diff"]);

    let second = run_cmd(&repo, fix.path(), &[]);
    assert_eq!(second.status.code(), Some(2), "{}", text(&second));
    let printed = text(&second);
    assert!(
        printed.contains("another fwfix process is using this working tree"),
        "{printed}"
    );
    assert!(
        printed.contains(&format!("fwfix run, pid {}", child.id())),
        "{printed}"
    );
    // Nor does anything else of fwfix read the candidate as if it were the owner's code: a
    // plain test would build it, a --worktree run would snapshot it as the owner's work.
    let tested = fwfix(
        &["test", "--board", "qemu-mps2-an385", "--profile", "crc"],
        repo.path(),
    );
    assert_eq!(tested.status.code(), Some(2), "{}", text(&tested));
    assert!(
        text(&tested).contains(&format!("fwfix run, pid {}", child.id())),
        "{}",
        text(&tested)
    );
    let elsewhere = run_cmd(&repo, fix.path(), &["--worktree"]);
    assert_eq!(elsewhere.status.code(), Some(2), "{}", text(&elsewhere));
    assert_eq!(runs(), runs_before, "a refused run created a run directory");

    interrupt_and_check_the_tree(child, lines, &repo, &before);

    // Once the first has ended, the checkout is free again.
    let third = run_cmd(&repo, fix.path(), &[]);
    assert_eq!(third.status.code(), Some(0), "{}", text(&third));
}

/// Regression: `fwfix resume` of a run that was still going drove the same run directory and
/// repository as the process running it, both at once.
#[test]
fn resuming_a_run_that_is_still_going_is_refused_and_touches_nothing() {
    let repo = FixtureRepo::new();
    let q = slow_when_patched(&repo);
    make_owner_work(&repo);
    let before = owner_state(&repo);
    let (child, run_dir, lines) = start_slow_patched_build(&repo, &q);
    let trace_before = std::fs::read(run_dir.join("trace.jsonl")).unwrap();
    let patched = std::fs::read_to_string(repo.path().join("src/crc.c")).unwrap();

    let resumed = fwfix(&["resume", run_dir.to_str().unwrap()], repo.path());
    assert_eq!(resumed.status.code(), Some(2), "{}", text(&resumed));
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    assert!(stderr.contains("is still going"), "{stderr}");
    assert!(stderr.contains(&format!("pid {}", child.id())), "{stderr}");
    assert_eq!(
        std::fs::read(run_dir.join("trace.jsonl")).unwrap(),
        trace_before
    );
    assert_eq!(
        std::fs::read_to_string(repo.path().join("src/crc.c")).unwrap(),
        patched
    );

    interrupt_and_check_the_tree(child, lines, &repo, &before);
}

#[test]
fn killed_at_any_state_then_resumed_finishes_with_the_tree_restored() {
    // Iteration 1's round ranks a candidate that changes the image but fixes nothing first; the
    // fix, pooled, is iteration 2's: between them the run passes through every working state,
    // both kinds of review (a fresh round, a pooled candidate), COMMIT, and SUCCESS before it is
    // finalised. (A transition into PATCH_GENERATION carries the iteration before it.)
    let states = [
        "INIT",
        "BUILD_SETUP@0",
        "BUILD_RUN@0",
        "CONVERGENCE_CHECK@0",
        "CODE_ANALYSIS@0",
        "PATCH_GENERATION@0",
        "PATCH_REVIEW@1",
        "PATCH_APPLY@1",
        "CONVERGENCE_CHECK@1",
        "CODE_ANALYSIS@1",
        "PATCH_GENERATION@1",
        "PATCH_REVIEW@2",
        "PATCH_APPLY@2",
        "BUILD_SETUP@2",
        "BUILD_RUN@2",
        "TEST_SETUP@2",
        "TEST_RUN@2",
        "RESULT_COLLECTION@2",
        "RESULT_ANALYSIS@2",
        "CONVERGENCE_CHECK@2",
        "COMMIT@2",
        "SUCCESS",
    ];
    std::thread::scope(|scope| {
        for state in states {
            scope.spawn(move || kill_then_resume(state, Queue::NoProgressThenFix, "SUCCESS"));
        }
        // A round whose only candidate is dropped fails in ERROR_RECOVERY, also when resumed.
        scope.spawn(|| kill_then_resume("ERROR_RECOVERY@1", Queue::DoesNotApply, "FAILURE"));
    });
}

/// The queues `kill_then_resume` runs.
#[derive(Clone, Copy)]
enum Queue {
    NoProgressThenFix,
    DoesNotApply,
}

fn kill_then_resume(kill_at: &str, queue_kind: Queue, status: &str) {
    let repo = FixtureRepo::new();
    make_owner_work(&repo);
    let before = owner_state(&repo);
    let q = match queue_kind {
        Queue::DoesNotApply => fixture_queue(&["01-does-not-apply.diff"]),
        Queue::NoProgressThenFix => {
            let q = fixture_queue(&["04-fixes-crc16.diff"]);
            // Another wrong initial value: as small as the fix, and first in name order.
            let fix = std::fs::read_to_string(q.path().join("04-fixes-crc16.diff")).unwrap();
            std::fs::write(
                q.path().join("00-wrong-init.diff"),
                fix.replace("0xFFFFu", "0x1D0Fu"),
            )
            .unwrap();
            q
        }
    };
    let out = run_cmd(&repo, q.path(), &["--test-kill-at", kill_at]);
    assert_eq!(
        out.status.code(),
        None,
        "{kill_at}: fwfix was not killed\n{}",
        text(&out)
    );
    let runs = repo.path().join(".fwfix/runs");
    let run = std::fs::read_dir(&runs)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let resumed = fwfix(&["resume", "--json", run.to_str().unwrap()], repo.path());
    let report = report(&run);
    assert_eq!(report["status"], status, "{kill_at}: {}", text(&resumed));
    if status == "SUCCESS" {
        assert_eq!(resumed.status.code(), Some(0), "{kill_at}");
        assert_eq!(
            report["fixed"],
            serde_json::json!(["test_crc16_known_vector"]),
            "{kill_at}"
        );
    }
    assert_eq!(
        owner_state(&repo),
        before,
        "{kill_at}: the tree differs after resume"
    );
    let audit = fwfix(&["audit", run.to_str().unwrap()], repo.path());
    assert_eq!(audit.status.code(), Some(0), "{kill_at}: {}", text(&audit));
    // The trace reads as one legal run: each step starts where the last one ended.
    let lines = trace(&run);
    for pair in lines.windows(2) {
        assert_eq!(pair[0]["to"], pair[1]["from"], "{kill_at}: {pair:#?}");
        assert_eq!(
            pair[0]["seq"].as_u64().unwrap() + 1,
            pair[1]["seq"].as_u64().unwrap()
        );
    }
}

#[test]
fn worktree_runs_leave_the_checkout_untouched() {
    let repo = FixtureRepo::new();
    make_owner_work(&repo);
    let before = owner_state(&repo);
    let q = fixture_queue(&["04-fixes-crc16.diff"]);
    let out = run_cmd(&repo, q.path(), &["--worktree"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report = report(&run_dir(&out));
    assert_eq!(report["status"], "SUCCESS");
    // Nothing was built in the owner's checkout.
    assert!(!repo.path().join("build").exists());
    assert_eq!(owner_state(&repo), before);
    let branch = report["branch"].as_str().unwrap();
    assert_eq!(
        repo.git(&["rev-parse", &format!("{branch}^")]),
        before["head"]
    );
    // The worktree is gone and git no longer lists it.
    assert_eq!(repo.git(&["worktree", "list"]).lines().count(), 1);
}

#[test]
fn a_failed_run_resumed_with_more_iterations_and_a_hint_converges() {
    let repo = FixtureRepo::new();
    let q = fixture_queue(&["03-regresses-crc32.diff"]);
    let out = run_cmd(&repo, q.path(), &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let dir = run_dir(&out);
    let report1 = report(&dir);
    assert_eq!(report1["status"], "FAILURE");
    assert!(
        report1["message"]
            .as_str()
            .unwrap()
            .contains("no more candidates"),
        "{report1:#}"
    );
    // A failed run can still be resumed with more iterations: its snapshots stay until then.
    assert!(repo
        .git(&["for-each-ref", "--format=%(refname)", "refs/fwfix/"])
        .contains("/base\n"));
    // A person adds a candidate and a hint, and gives the run more iterations.
    std::fs::copy(
        fixture_dir().join("patches/04-fixes-crc16.diff"),
        q.path().join("04-fixes-crc16.diff"),
    )
    .unwrap();
    let again = fwfix(
        &[
            "resume",
            "--json",
            dir.to_str().unwrap(),
            "--more-iterations",
            "2",
            "--hint",
            "crc16 uses the wrong initial value",
        ],
        repo.path(),
    );
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    let report2 = report(&dir);
    assert_eq!(report2["status"], "SUCCESS");
    assert_eq!(report2["iterations"], 2);
    let analysis = std::fs::read_to_string(dir.join("iter-001/analysis.json")).unwrap();
    assert!(
        analysis.contains("crc16 uses the wrong initial value"),
        "{analysis}"
    );
    let analysis: serde_json::Value = serde_json::from_str(&analysis).unwrap();
    let console = analysis["logs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["file"] == "iter-001/remeasure-1/console.log")
        .unwrap_or_else(|| panic!("{analysis:#}"));
    assert_eq!(console["class"], "TEST_FAILURE", "{console}");
    // Regression: the unpatched tree measured again overwrote iteration 1's console.log and
    // results.json, and the audit found evidence changed after it was recorded.
    let audit = fwfix(&["audit", dir.to_str().unwrap()], repo.path());
    assert_eq!(audit.status.code(), Some(0), "{}", text(&audit));
    assert_eq!(repo.git(&["for-each-ref", "refs/fwfix/"]), "");
    // Resuming a finished run is refused.
    let third = fwfix(&["resume", dir.to_str().unwrap()], repo.path());
    assert_eq!(third.status.code(), Some(2), "{}", text(&third));
}

#[test]
fn run_refuses_a_directory_that_is_not_a_git_repository() {
    let dir = tempfile::tempdir().unwrap();
    let q = fixture_queue(&["04-fixes-crc16.diff"]);
    let out = fwfix(
        &[
            "run",
            "--repo",
            dir.path().to_str().unwrap(),
            "--board",
            MPS2,
            "--profile",
            "crc",
            "--strategy",
            "queue",
            "--patches",
            q.path().to_str().unwrap(),
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(!dir.path().join(".fwfix").exists());
}

/// Regression: a repository with no commit yet, or with unresolved conflicts left by a
/// `git stash pop`, got a run directory and exit 4 (infrastructure) from INIT; it is the user's
/// repository state, refused before anything is created, like a merge in progress.
#[test]
fn run_refuses_an_unborn_head_or_a_conflicted_index_before_creating_anything() {
    let q = fixture_queue(&["04-fixes-crc16.diff"]);
    let unborn = tempfile::tempdir().unwrap();
    let git = |dir: &Path, args: &[&str]| {
        let ok = Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(ok.status.success(), "git {args:?}");
    };
    git(unborn.path(), &["init", "-q"]);
    std::fs::write(unborn.path().join("a.c"), "int a;\n").unwrap();

    let conflicted = FixtureRepo::new();
    let sensor = std::fs::read_to_string(conflicted.path().join("src/sensor.c")).unwrap();
    conflicted.write("src/sensor.c", &format!("{sensor}/* stashed */\n"));
    conflicted.git(&["stash", "-q"]);
    conflicted.write("src/sensor.c", &format!("{sensor}/* committed */\n"));
    conflicted.git(&["commit", "-qam", "ours"]);
    let popped = Command::new("git")
        .args(["stash", "pop"])
        .current_dir(conflicted.path())
        .output()
        .unwrap();
    assert!(!popped.status.success(), "the stash pop should conflict");

    for (dir, expected) in [
        (unborn.path(), "HEAD has no commit yet"),
        (conflicted.path(), "unresolved conflicts"),
    ] {
        let before = Command::new("git")
            .args(["status", "--porcelain"])
            .current_dir(dir)
            .output()
            .unwrap()
            .stdout;
        let out = fwfix(
            &[
                "run",
                "--board",
                MPS2,
                "--profile",
                "crc",
                "--strategy",
                "queue",
                "--patches",
                q.path().to_str().unwrap(),
            ],
            dir,
        );
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(expected),
            "{}",
            text(&out)
        );
        assert!(!dir.join(".fwfix").exists(), "{}", text(&out));
        let after = Command::new("git")
            .args(["status", "--porcelain"])
            .current_dir(dir)
            .output()
            .unwrap()
            .stdout;
        assert_eq!(before, after);
    }
}

#[test]
fn the_deadline_aborts_the_run_with_exit_3_and_the_tree_restored() {
    let repo = FixtureRepo::new();
    let q = slow_when_patched(&repo);
    make_owner_work(&repo);
    let before = owner_state(&repo);
    let out = fwfix(
        &[
            "run",
            "--json",
            "--board",
            MPS2,
            "--profile",
            "crc-slow",
            "--strategy",
            "queue",
            "--patches",
            q.to_str().unwrap(),
            "--deadline",
            "4s",
        ],
        repo.path(),
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let report = report(&run_dir(&out));
    assert_eq!(report["status"], "ABORTED");
    assert!(
        report["message"].as_str().unwrap().contains("deadline"),
        "{report:#}"
    );
    let mut after = owner_state(&repo);
    after.remove("sleepers.pid");
    assert_eq!(after, before);
}

#[test]
fn a_baseline_that_does_not_build_makes_the_build_the_thing_to_fix() {
    let repo = FixtureRepo::new();
    repo.apply_fixture_patch("02-breaks-build.diff");
    repo.git(&["commit", "-q", "-am", "a change that breaks the build"]);
    // The candidate that repairs it: the breaking change undone, and the fixture's CRC-16 bug
    // fixed with it (every test that runs must pass when the baseline did not build).
    let q = tempfile::tempdir().unwrap();
    let breaking = fixture_dir().join("patches/02-breaks-build.diff");
    repo.git(&["apply", "-R", breaking.to_str().unwrap()]);
    repo.apply_fixture_patch("04-fixes-crc16.diff");
    std::fs::write(q.path().join("01-fix-build.diff"), repo.git(&["diff"])).unwrap();
    repo.git(&["checkout", "-q", "--", "."]);
    let out = run_cmd(&repo, q.path(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let dir = run_dir(&out);
    let report = report(&dir);
    assert_eq!(report["status"], "SUCCESS");
    assert_eq!(report["iterations"], 1);
    let lines = trace(&dir);
    // Iteration 0's build failure went to analysis, not to a build retry.
    let recovered = lines
        .iter()
        .find(|l| l["from"] == "ERROR_RECOVERY" && l["iteration"] == 0)
        .unwrap();
    assert_eq!(recovered["to"], "CODE_ANALYSIS", "{recovered}");
    let analysis = std::fs::read_to_string(dir.join("iter-000/analysis.json")).unwrap();
    assert!(
        analysis.contains("CRC16_CCITT_INIT"),
        "the diagnostics are evidence: {analysis}"
    );
    // Each log of the iteration is triaged in the evidence, with the lines that decided it.
    let analysis: serde_json::Value = serde_json::from_str(&analysis).unwrap();
    let build_log = analysis["logs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["file"] == "iter-000/build.log")
        .unwrap_or_else(|| panic!("{analysis:#}"));
    assert_eq!(build_log["class"], "BUILD_ERROR", "{build_log}");
    assert!(!build_log["lines"].as_array().unwrap().is_empty());
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
    // The fix commit quotes the compiler's error it repaired.
    let message = repo.git(&[
        "log",
        "-1",
        "--format=%B",
        report["branch"].as_str().unwrap(),
    ]);
    assert!(
        message.contains("\nBefore the fix:\n  build error: ")
            && message.contains("CRC16_CCITT_INIT"),
        "{message}"
    );
}

/// History with a regression: a commit where CRC-16 works (returned), the commit that breaks it,
/// then unrelated work on top.
fn regressed_history(repo: &FixtureRepo) -> String {
    repo.apply_fixture_patch("04-fixes-crc16.diff");
    repo.git(&["commit", "-q", "-am", "crc: CRC-16 works"]);
    let good = repo.git(&["rev-parse", "HEAD"]).trim().to_string();
    let fix = fixture_dir().join("patches/04-fixes-crc16.diff");
    repo.git(&["apply", "-R", fix.to_str().unwrap()]);
    repo.git(&["commit", "-q", "-am", "crc: a faster CRC-16 (breaks it)"]);
    repo.write("docs/notes.md", "unrelated work\n");
    repo.git(&["add", "docs/notes.md"]);
    repo.git(&["commit", "-q", "-m", "docs: notes"]);
    good
}

#[test]
fn the_known_good_commit_puts_the_files_changed_since_it_in_the_evidence() {
    let repo = FixtureRepo::new();
    let good = regressed_history(&repo);
    // The owner's uncommitted edit counts as changed too.
    repo.write("notes/todo.txt", "untracked idea\n");
    let q = fixture_queue(&["04-fixes-crc16.diff"]);
    let out = run_cmd(&repo, q.path(), &["--good", &good[..10]]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let dir = run_dir(&out);
    let context: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("context.json")).unwrap()).unwrap();
    assert_eq!(context["request"]["good"], good.as_str(), "stored resolved");
    let analysis: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("iter-000/analysis.json")).unwrap())
            .unwrap();
    assert_eq!(
        analysis["changed_files"],
        serde_json::json!(["docs/notes.md", "notes/todo.txt", "src/crc.c"])
    );
    let top = &analysis["suspects"][0];
    assert_eq!(top["name"], "crc16_ccitt", "{analysis:#}");
    assert!(
        top["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r == "defined in src/crc.c, changed since the last known-good commit"),
        "{top}"
    );
}

#[test]
fn an_unknown_known_good_commit_is_a_usage_error_naming_it() {
    let repo = FixtureRepo::new();
    let q = fixture_queue(&["04-fixes-crc16.diff"]);
    let out = run_cmd(&repo, q.path(), &["--good", "no-such-tag"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("no-such-tag"), "{}", text(&out));
    assert!(!repo.path().join(".fwfix").exists());
}

#[test]
fn the_approval_question_is_bracketed_by_input_events_for_the_progress_display() {
    let repo = FixtureRepo::new();
    let q = fixture_queue(&["04-fixes-crc16.diff"]);
    // No terminal: nobody is waited for, but the question is still announced and closed, which
    // is what takes the terminal's spinner down around a real prompt.
    let out = run_cmd(&repo, q.path(), &["--approve", "always"]);
    let events = events(&out);
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["event"].as_str()).collect();
    let wanted = kinds
        .iter()
        .position(|k| *k == "input_wanted")
        .unwrap_or_else(|| panic!("{kinds:?}"));
    assert_eq!(kinds.get(wanted + 1), Some(&"input_done"), "{kinds:?}");
    assert!(
        events[wanted]["what"]
            .as_str()
            .unwrap()
            .contains("04-fixes-crc16.diff"),
        "{}",
        events[wanted]
    );
}

/// The excerpt in `source` around `file`:`line`, whose marked line must contain `marked`.
fn excerpt_around<'a>(source: &'a Value, file: &str, line: u64, marked: &str) -> &'a Value {
    let excerpt = source
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["file"] == file && e["line"] == line)
        .unwrap_or_else(|| panic!("no excerpt around {file}:{line} in {source:#}"));
    let text = excerpt["text"].as_str().unwrap();
    let at = text
        .lines()
        .find(|l| l.starts_with('>'))
        .unwrap_or_else(|| panic!("no marked line in {text}"));
    assert!(
        at.starts_with(&format!(">{line:5} |")) && at.contains(marked),
        "{text}"
    );
    excerpt
}

#[test]
fn a_crashing_candidate_is_rolled_back_and_the_next_analysis_has_its_diff_and_crash_site() {
    let repo = FixtureRepo::new();
    // Two candidates of the same size, tried in name order: the first refuses an erased
    // calibration page by trapping (a crash inside the driver, called from the test), the
    // second skips it (the fix).
    let q = tempfile::tempdir().unwrap();
    let guard = "    if (cal->magic != SENSOR_CAL_MAGIC) {\n";
    let traps = repo.diff_of("src/sensor.c", |c| {
        c.replacen(
            "{\n    s->read_reg = read_reg;",
            &format!("{{\n{guard}        __builtin_trap();\n    }}\n    s->read_reg = read_reg;"),
            1,
        )
    });
    let fix = repo.diff_of("src/sensor.c", |c| {
        c.replacen(
            "{\n    millidegrees += cal->offset_millidegrees;",
            &format!(
                "{{\n{guard}        return millidegrees;\n    }}\n    millidegrees += cal->offset_millidegrees;"
            ),
            1,
        )
    });
    std::fs::write(q.path().join("01-traps-on-erased-page.diff"), &traps).unwrap();
    std::fs::write(q.path().join("02-skips-erased-page.diff"), &fix).unwrap();
    let out = fwfix(
        &[
            "run",
            "--json",
            "--board",
            MPS2,
            "--profile",
            "sensor",
            "--strategy",
            "queue",
            "--patches",
            q.path().to_str().unwrap(),
        ],
        repo.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let dir = run_dir(&out);
    let report = report(&dir);
    assert_eq!(report["status"], "SUCCESS", "{report:#}");
    assert_eq!(report["iterations"], 2, "{report:#}");
    let read = |path: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(dir.join(path)).unwrap()).unwrap()
    };

    // The baseline's crash: a call through the erased page's hook. PC is in no function, so the
    // caller (LR) is the crash site, shown once, at the call.
    let baseline = read("iter-000/analysis.json");
    let crash = &baseline["crash"];
    assert_eq!(crash["pc"], "0xfffffffe", "{crash:#}");
    assert_eq!(
        (
            crash["function"].as_str(),
            crash["caller"]["function"].as_str()
        ),
        (Some("calibrate"), Some("calibrate")),
        "{crash:#}"
    );
    let hook = crash["caller"]["line"].as_u64().unwrap();
    excerpt_around(
        &baseline["crash_source"],
        "src/sensor.c",
        hook,
        "cal->correct(millidegrees)",
    );
    assert_eq!(baseline["suspects"][0]["name"], "calibrate", "{baseline:#}");

    // What iteration 2 was given: iteration 1's candidate, what became of it and why it was
    // rolled back ...
    let analysis = read("iter-001/analysis.json");
    assert_eq!(analysis["iteration"], 2);
    let earlier = &analysis["history"][0];
    assert_eq!(earlier["iteration"], 1, "{analysis:#}");
    assert_eq!(earlier["origin"], "01-traps-on-erased-page.diff");
    assert_eq!(earlier["diff"].as_str(), Some(traps.as_str()));
    assert_eq!(earlier["outcome"], "NO_PROGRESS", "{earlier:#}");
    assert!(
        earlier["reason"]
            .as_str()
            .unwrap()
            .starts_with("no progress: still failing"),
        "{earlier:#}"
    );
    // ... and its own crash, symbolised on iteration 1's image: PC in the driver, LR in the
    // test that called it, each with the candidate's source around it.
    let crash = &analysis["crash"];
    assert_eq!(
        crash["fault_bits"],
        serde_json::json!(["FORCED", "UNDEFINSTR"])
    );
    assert_eq!(crash["function"], "sensor_init", "{crash:#}");
    assert_eq!(crash["file"], "src/sensor.c");
    let caller = &crash["caller"];
    assert_eq!(
        caller["function"], "test_sensor_uncalibrated_unit_uses_raw_reading",
        "{crash:#}"
    );
    assert_eq!(caller["file"], "tests/test_sensor.c");
    let source = &analysis["crash_source"];
    assert_eq!(source.as_array().unwrap().len(), 2, "{source:#}");
    excerpt_around(
        source,
        "src/sensor.c",
        crash["line"].as_u64().unwrap(),
        "__builtin_trap();",
    );
    excerpt_around(
        source,
        "tests/test_sensor.c",
        caller["line"].as_u64().unwrap(),
        "sensor_init(&sensor, fake_read_reg, &erased_page);",
    );
    let suspects: Vec<&str> = analysis["suspects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(suspects[0], "sensor_init", "{suspects:?}");
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
}

/// Regression: the terminal said an iteration was rolled back, not why; the report's notes
/// showed Rust's names for verdicts ("Regressed:", "DidNotApply:").
#[test]
fn a_rolled_back_iteration_says_why_in_plain_words() {
    let repo = FixtureRepo::new();
    let q = fixture_queue(&["04-fixes-crc16.diff"]);
    // As small as the fix and first in name order: tried first, and breaks CRC-32.
    let breaks = repo.diff_of("src/crc.c", |s| s.replace("0x04C11DB7u", "0x04C11DB6u"));
    std::fs::write(q.path().join("00-breaks-crc32.diff"), breaks).unwrap();
    let out = run_cmd(&repo, q.path(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let rolled_back = events(&out)
        .into_iter()
        .filter_map(|e| e["text"].as_str().map(str::to_string))
        .find(|t| t.starts_with("rolled back iteration 1"))
        .unwrap_or_else(|| panic!("{}", text(&out)));
    assert!(
        rolled_back.contains("00-breaks-crc32.diff: regression: test_crc32_known_vector"),
        "{rolled_back}"
    );
    let notes = report(&run_dir(&out))["notes"].to_string();
    assert!(
        notes.contains("iteration 1 (00-breaks-crc32.diff): regressed: regression:"),
        "{notes}"
    );
    assert!(
        notes.contains("iteration 2 (04-fixes-crc16.diff): fixed:"),
        "{notes}"
    );
}

/// A checkout where git writes the C sources with CRLF (`core.autocrlf=true` and `eol=crlf`,
/// as a vendor's Windows-born tree has them): the model's LF patch applies in the run's tree,
/// the fix converges, the fix branch holds only the fix's lines (not every line's ending), and
/// the owner's tree keeps its bytes, an LF line saved among CRLF ones included.
#[test]
fn a_run_in_a_crlf_checkout_converges_with_an_lf_patch_and_leaves_the_owners_bytes() {
    let repo = FixtureRepo::new();
    repo.git(&["config", "core.autocrlf", "true"]);
    repo.write(
        ".gitattributes",
        "* text=auto eol=lf\n*.c text eol=crlf\n*.h text eol=crlf\n",
    );
    repo.git(&["add", ".gitattributes"]);
    repo.git(&["commit", "-q", "-m", "sources are checked out with CRLF"]);
    repo.git(&["rm", "-q", "-r", "--cached", "."]);
    repo.git(&["reset", "-q", "--hard"]);
    // As in a checkout made long before the run: files older than the index are not racily
    // clean, so only their size can tell that their bytes are not their blobs'.
    let long_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(600);
    for file in repo.git(&["ls-files"]).lines() {
        let f = std::fs::File::options()
            .write(true)
            .open(repo.path().join(file))
            .unwrap();
        f.set_modified(long_ago).unwrap();
    }
    repo.git(&["update-index", "-q", "--refresh"]);
    let crc = std::fs::read(repo.path().join("src/crc.c")).unwrap();
    assert!(
        crc.windows(2).any(|w| w == b"\r\n"),
        "checked out with CRLF"
    );
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
    make_owner_work(&repo);
    let before = owner_state(&repo);
    let ringbuf_before = std::fs::read(repo.path().join("src/ringbuf.c")).unwrap();

    let q = fixture_queue(&["04-fixes-crc16.diff"]);
    let out = run_cmd(&repo, q.path(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report = report(&run_dir(&out));
    assert_eq!(report["status"], "SUCCESS");
    let branch = report["branch"].as_str().unwrap();
    let stat = repo.git(&["diff", "--numstat", &format!("{branch}~1"), branch]);
    let changed: Vec<&str> = stat.lines().collect();
    assert_eq!(changed.len(), 1, "{stat}");
    let counts: Vec<u32> = changed[0]
        .split_whitespace()
        .take(2)
        .map(|n| n.parse().unwrap())
        .collect();
    assert!(
        counts.iter().sum::<u32>() < 20,
        "the fix branch rewrote line endings: {stat}"
    );
    assert_eq!(owner_state(&repo), before);
    assert_eq!(
        std::fs::read(repo.path().join("src/ringbuf.c")).unwrap(),
        ringbuf_before
    );
}
