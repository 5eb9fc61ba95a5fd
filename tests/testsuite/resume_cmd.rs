//! `fwfix resume` end to end: real fix runs on the fixture firmware (real git repositories,
//! builds and QEMU) stopped by a signal, the deadline or SIGKILL, then resumed. Every resumed
//! run must finish what the stop cut short, leave the owner's work alone, and pass `fwfix audit`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // panics are how tests fail

use crate::common::*;
use crate::run_cmd::{
    make_owner_work, owner_state, signal_and_check_the_tree, slow_when_patched,
    start_slow_patched_build, start_slow_run, MPS2,
};
use nix::sys::signal::Signal;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;

/// `fwfix resume --json RUN` with the slow profile's builds made fast.
fn resume(repo: &FixtureRepo, run_dir: &Path, extra: &[&str]) -> Output {
    let state = tempfile::tempdir().unwrap();
    let mut args = vec!["resume", "--json", run_dir.to_str().unwrap()];
    args.extend_from_slice(extra);
    fwfix_command(&args, repo.path(), state.path())
        .env("FWFIX_TEST_FAST_BUILD", "1")
        .output()
        .unwrap()
}

/// `fwfix audit` passes on the run.
fn audited(repo: &FixtureRepo, run_dir: &Path) {
    let audit = fwfix(&["audit", run_dir.to_str().unwrap()], repo.path());
    assert_eq!(audit.status.code(), Some(0), "{}", text(&audit));
}

/// The resumed run converged on the fix, passes its audit, and the owner's tree is as it was
/// before the first run (but for the slow build's pid file).
fn converged_with_the_tree_intact(
    repo: &FixtureRepo,
    run_dir: &Path,
    resumed: &Output,
    before: &BTreeMap<String, String>,
) -> Value {
    assert_eq!(resumed.status.code(), Some(0), "{}", text(resumed));
    let report = report(run_dir);
    assert_eq!(report["status"], "SUCCESS", "{report:#}");
    assert_eq!(
        report["fixed"],
        serde_json::json!(["test_crc16_known_vector"])
    );
    audited(repo, run_dir);
    let mut after = owner_state(repo);
    after.remove("sleepers.pid");
    assert_eq!(&after, before);
    report
}

/// The trace line that entered ABORTED, and the state it left.
fn aborted_from(run_dir: &Path) -> String {
    let lines = trace(run_dir);
    let aborted = lines
        .iter()
        .find(|l| l["to"] == "ABORTED")
        .unwrap_or_else(|| panic!("{lines:#?}"));
    aborted["from"].as_str().unwrap().to_string()
}

/// Regression: a run stopped while the governor trial-built its round counted the round as
/// spent; resumed, it asked the queue again ("no more candidates") and never tested the fix.
#[test]
fn a_round_interrupted_in_review_is_reviewed_again_on_resume() {
    let repo = FixtureRepo::new();
    let q = slow_when_patched(&repo);
    std::fs::copy(
        fixture_dir().join("patches/03-regresses-crc32.diff"),
        q.join("03-regresses-crc32.diff"),
    )
    .unwrap();
    make_owner_work(&repo);
    let before = owner_state(&repo);
    // Two candidates: both are trial-built, and the fix's trial build is slow.
    let (child, run_dir, lines) = start_slow_run(&repo, &q, "PATCH_REVIEW");
    signal_and_check_the_tree(child, lines, &repo, &before, Signal::SIGINT);
    assert_eq!(aborted_from(&run_dir), "PATCH_REVIEW");

    let resumed = resume(&repo, &run_dir, &[]);
    let report = converged_with_the_tree_intact(&repo, &run_dir, &resumed, &before);
    // Iteration 1 was cut short; iteration 2 reviewed the same round instead of asking the
    // queue, and counted against no limit.
    let lines = trace(&run_dir);
    let generated = lines
        .iter()
        .find(|l| l["from"] == "PATCH_GENERATION" && l["iteration"] == 2)
        .unwrap_or_else(|| panic!("{lines:#?}"));
    assert_eq!(generated["to"], "PATCH_REVIEW", "{generated}");
    assert!(
        generated["reason"]
            .as_str()
            .unwrap()
            .contains("a stop left unreviewed"),
        "{generated}"
    );
    let reviewed: Vec<&Value> = report["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["iteration"] == 2)
        .collect();
    assert_eq!(reviewed.len(), 2, "{report:#}");
    assert!(
        reviewed.iter().all(|c| c["verdict"] == "ranked"),
        "{report:#}"
    );
    let notes = report["notes"].to_string();
    assert!(notes.contains("iteration 1 ("), "{notes}");
    assert!(notes.contains("interrupted"), "{notes}");
}

/// Regression: a run stopped while its candidate (the fix) was being built went on, resumed,
/// to the next candidate, and the fix was never tested.
#[test]
fn a_candidate_interrupted_by_sigterm_is_tried_again_on_resume() {
    let repo = FixtureRepo::new();
    let q = slow_when_patched(&repo);
    make_owner_work(&repo);
    let before = owner_state(&repo);
    let (child, run_dir, lines) = start_slow_patched_build(&repo, &q);
    signal_and_check_the_tree(child, lines, &repo, &before, Signal::SIGTERM);
    assert_eq!(aborted_from(&run_dir), "BUILD_RUN");

    let resumed = resume(&repo, &run_dir, &[]);
    converged_with_the_tree_intact(&repo, &run_dir, &resumed, &before);
    // The fix was tried again as iteration 2: the same patch, now built and tested.
    let slow_fix = std::fs::read_to_string(q.join("01-slow-fix.diff")).unwrap();
    let tried = std::fs::read_to_string(run_dir.join("iter-002/patch.diff")).unwrap();
    assert_eq!(tried, slow_fix);
    assert!(run_dir.join("iter-002/console.log").is_file());
}

/// Whatever state the deadline stops the run in, the resumed run does that work again.
#[test]
fn a_run_stopped_by_its_deadline_finishes_its_work_on_resume() {
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
            "6s",
        ],
        repo.path(),
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let run_dir = run_dir(&out);
    audited(&repo, &run_dir);

    let resumed = resume(&repo, &run_dir, &[]);
    converged_with_the_tree_intact(&repo, &run_dir, &resumed, &before);
}

/// A person's work after the run stopped: an edit of a file the candidate also changes, and a
/// new file, staged. Returns what it must stay, byte for byte.
fn work_after_the_stop(repo: &FixtureRepo) -> BTreeMap<String, String> {
    let crc = repo.path().join("src/crc.c");
    let edited = std::fs::read_to_string(&crc).unwrap() + "/* my own idea */\n";
    std::fs::write(&crc, edited).unwrap();
    repo.write("src/extra.h", "#define EXTRA 1\n");
    repo.git(&["add", "src/extra.h"]);
    let mut state = owner_state(repo);
    state.insert(
        "src/extra.h".into(),
        std::fs::read_to_string(repo.path().join("src/extra.h")).unwrap(),
    );
    state
}

/// `fwfix resume` refuses with exit 2, naming the changed files and what to do, with nothing
/// touched: neither the tree nor the run's records.
fn refused_with_nothing_touched(
    repo: &FixtureRepo,
    run_dir: &Path,
    mine: &BTreeMap<String, String>,
) {
    let trace_before = std::fs::read(run_dir.join("trace.jsonl")).unwrap();
    let context_before = std::fs::read(run_dir.join("context.json")).unwrap();
    let refused = resume(repo, run_dir, &[]);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    let said = text(&refused);
    for named in [
        "src/crc.c (modified)",
        "src/extra.h (new)",
        "src/extra.h (staged)",
        "git stash push --include-untracked -- 'src/crc.c' 'src/extra.h'",
    ] {
        assert!(said.contains(named), "{named}: {said}");
    }
    let mut after = owner_state(repo);
    after.insert(
        "src/extra.h".into(),
        std::fs::read_to_string(repo.path().join("src/extra.h")).unwrap(),
    );
    assert_eq!(&after, mine);
    assert_eq!(
        std::fs::read(run_dir.join("trace.jsonl")).unwrap(),
        trace_before
    );
    assert_eq!(
        std::fs::read(run_dir.join("context.json")).unwrap(),
        context_before
    );
}

/// Following the advice: set the work aside, resume to the end, take it back.
fn set_aside_resume_and_take_back(
    repo: &FixtureRepo,
    run_dir: &Path,
    mine: &BTreeMap<String, String>,
) {
    repo.git(&[
        "stash",
        "push",
        "-q",
        "--include-untracked",
        "--",
        "src/crc.c",
        "src/extra.h",
    ]);
    let resumed = resume(repo, run_dir, &[]);
    assert_eq!(resumed.status.code(), Some(0), "{}", text(&resumed));
    assert_eq!(report(run_dir)["status"], "SUCCESS");
    audited(repo, run_dir);
    repo.git(&["stash", "pop", "-q"]);
    let mut after = owner_state(repo);
    after.insert(
        "src/extra.h".into(),
        std::fs::read_to_string(repo.path().join("src/extra.h")).unwrap(),
    );
    assert_eq!(&after, mine);
}

/// Regression: aborted, then edited and a file staged, `fwfix resume` restored the run's
/// snapshot over the edits and the staged file, which were in no ref.
#[test]
fn resume_after_an_abort_never_writes_over_work_done_since() {
    let repo = FixtureRepo::new();
    let q = slow_when_patched(&repo);
    make_owner_work(&repo);
    let before = owner_state(&repo);
    let (child, run_dir, lines) = start_slow_patched_build(&repo, &q);
    signal_and_check_the_tree(child, lines, &repo, &before, Signal::SIGINT);
    let mine = work_after_the_stop(&repo);
    refused_with_nothing_touched(&repo, &run_dir, &mine);
    set_aside_resume_and_take_back(&repo, &run_dir, &mine);
}

/// A run killed outright with its candidate in the tree cannot tell the person's edit on top of
/// the candidate from its own: resumed, it sets the whole tree aside under a ref of the run,
/// restores the owner's work, converges, and says how to take the set-aside tree back.
#[test]
fn resume_after_a_kill_sets_work_done_since_aside_and_carries_on() {
    let repo = FixtureRepo::new();
    make_owner_work(&repo);
    let before = owner_state(&repo);
    let q = fixture_queue(&["04-fixes-crc16.diff"]);
    let killed = fwfix(
        &[
            "run",
            "--json",
            "--board",
            MPS2,
            "--profile",
            "crc",
            "--strategy",
            "queue",
            "--patches",
            q.path().to_str().unwrap(),
            "--test-kill-at",
            "TEST_SETUP@1",
        ],
        repo.path(),
    );
    assert_eq!(killed.status.code(), None, "{}", text(&killed));
    let run_dir = std::fs::read_dir(repo.path().join(".fwfix/runs"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    work_after_the_stop(&repo);
    let left_crc = std::fs::read_to_string(repo.path().join("src/crc.c")).unwrap();
    let resumed = resume(&repo, &run_dir, &[]);
    converged_with_the_tree_intact(&repo, &run_dir, &resumed, &before);
    let run = run_dir.file_name().unwrap().to_str().unwrap();
    let left = format!("refs/fwfix/{run}/left-1");
    let take_back = format!("git diff-tree -r -p --binary --no-commit-id {left} | git apply");
    assert!(
        events(&resumed).iter().any(|e| e["event"] == "message"
            && e["text"].as_str().unwrap().contains(&take_back)
            && e["text"].as_str().unwrap().contains("src/crc.c (modified)")),
        "{}",
        text(&resumed)
    );
    let notes = report(&run_dir)["notes"].to_string();
    assert!(
        notes.contains(&take_back) && notes.contains("killed with a candidate applied"),
        "{notes}"
    );
    // The set-aside tree outlives the run's rollback points, and the command brings it back.
    assert_eq!(
        repo.git(&[
            "for-each-ref",
            "--format=%(refname)",
            &format!("refs/fwfix/{run}/")
        ]),
        format!("{left}\n")
    );
    let back = sh(&take_back, repo.path());
    assert!(back.status.success(), "{}", text(&back));
    assert_eq!(
        std::fs::read_to_string(repo.path().join("src/crc.c")).unwrap(),
        left_crc
    );
    assert_eq!(
        std::fs::read_to_string(repo.path().join("src/extra.h")).unwrap(),
        "#define EXTRA 1\n"
    );
}
