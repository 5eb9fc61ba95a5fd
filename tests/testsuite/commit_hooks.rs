//! The COMMIT stage end to end: a real fix run of the fixture firmware (real builds, real QEMU,
//! the `queue` strategy) whose converged fix meets the repository's own git hooks, real shell
//! scripts in `.git/hooks` or `core.hooksPath`, run by the real fwfix binary.
#![allow(clippy::unwrap_used, clippy::expect_used)] // panics are how tests fail

use crate::common::*;
use crate::run_cmd::{make_owner_work, owner_state, MPS2};
use serde_json::Value;
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

/// Writes an executable hook script.
fn hook(dir: &Path, name: &str, body: &str) {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The shipped `crc` profile with `extra` appended, written outside the repository.
fn crc_profile(dir: &Path, extra: &str) -> PathBuf {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles/crc.toml");
    let path = dir.join("crc-commit.toml");
    let text = std::fs::read_to_string(shipped).unwrap();
    std::fs::write(&path, format!("{text}\n{extra}")).unwrap();
    path
}

/// Runs `fwfix run` with the queue in `patches`, without `--json` (so stderr carries what a
/// person sees), with `HOOK_SEEN` naming a directory the hooks may write what they saw into.
fn run(repo: &FixtureRepo, patches: &Path, profile: &Path, seen: &Path) -> Output {
    run_with(repo, patches, profile, seen, &[])
}

fn run_with(
    repo: &FixtureRepo,
    patches: &Path,
    profile: &Path,
    seen: &Path,
    extra: &[&str],
) -> Output {
    let state = tempfile::tempdir().unwrap();
    let mut args = vec![
        "run",
        "--repo",
        repo.path().to_str().unwrap(),
        "--board",
        MPS2,
        "--profile",
        profile.to_str().unwrap(),
        "--strategy",
        "queue",
        "--patches",
        patches.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    fwfix_command(&args, repo.path(), state.path())
        .env("HOOK_SEEN", seen)
        .output()
        .unwrap()
}

/// The one run directory of the repository.
fn only_run_dir(repo: &FixtureRepo) -> PathBuf {
    let runs: Vec<PathBuf> = std::fs::read_dir(repo.path().join(".fwfix/runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    runs[0].clone()
}

/// The (from, to) pairs of the trace.
fn edges(dir: &Path) -> Vec<(String, String)> {
    trace(dir)
        .iter()
        .map(|l| {
            (
                l["from"].as_str().unwrap().to_string(),
                l["to"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn line_into<'a>(lines: &'a [Value], from: &str, to: &str) -> &'a Value {
    lines
        .iter()
        .find(|l| l["from"] == from && l["to"] == to)
        .unwrap_or_else(|| panic!("no {from} -> {to} in {lines:#?}"))
}

/// The run refused its commit: exit 1 and a COMMIT_FAILURE report. Gives the run directory,
/// the report and its message.
fn refused_commit(repo: &FixtureRepo, out: &Output) -> (PathBuf, Value, String) {
    assert_eq!(out.status.code(), Some(1), "{}", text(out));
    let dir = only_run_dir(repo);
    let report = report(&dir);
    assert_eq!(report["error_class"], "COMMIT_FAILURE");
    let message = report["message"].as_str().unwrap().to_string();
    (dir, report, message)
}

/// No branch of fwfix's, and the owner's tree, index, HEAD and branch as they were.
fn nothing_committed(repo: &FixtureRepo, before: &BTreeMap<String, String>) {
    assert_eq!(repo.git(&["branch", "--list", "fwfix/*"]), "");
    assert_eq!(owner_state(repo), *before);
}

fn audit_passes(repo: &FixtureRepo, dir: &Path) {
    let audit = fwfix(&["audit", dir.to_str().unwrap()], repo.path());
    assert_eq!(audit.status.code(), Some(0), "{}", text(&audit));
}

/// The fixture's CRC-16 fix in a queue of its own; `trailing` adds a comment line ending in
/// spaces to it.
fn fix_queue(repo: &FixtureRepo, trailing: bool) -> tempfile::TempDir {
    let q = tempfile::tempdir().unwrap();
    let diff = if trailing {
        repo.apply_fixture_patch("04-fixes-crc16.diff");
        let fixed = std::fs::read_to_string(repo.path().join("src/crc.c")).unwrap();
        repo.git(&["checkout", "--", "src/crc.c"]);
        repo.diff_of("src/crc.c", |_| {
            format!("{fixed}/* CRC-16/CCITT-FALSE starts from 0xFFFF */   \n")
        })
    } else {
        crc_fix()
    };
    std::fs::write(q.path().join("01-fix.diff"), diff).unwrap();
    q
}

#[test]
fn a_pre_commit_hook_that_rejects_trailing_whitespace_ends_the_run_in_commit_failure() {
    let repo = FixtureRepo::new();
    hook(
        &repo.path().join(".git/hooks"),
        "pre-commit",
        "git diff --cached --check || { echo 'pre-commit: trailing whitespace, commit refused'; exit 1; }\n",
    );
    let q = fix_queue(&repo, true);
    make_owner_work(&repo);
    let before = owner_state(&repo);
    let scratch = tempfile::tempdir().unwrap();
    let profile = crc_profile(scratch.path(), "");
    let out = run(&repo, q.path(), &profile, scratch.path());
    let (dir, report, message) = refused_commit(&repo, &out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("pre-commit hook exited with status 1")
            && stderr.contains("src/crc.c:")
            && stderr.contains("trailing whitespace, commit refused"),
        "{}",
        text(&out)
    );

    assert_eq!(report["status"], "FAILURE");
    assert_eq!(report["branch"], Value::Null);
    assert!(
        message.contains("the pre-commit hook refused the fix")
            && message.contains("trailing whitespace."),
        "{message}"
    );
    // The fix is kept, byte for byte the candidate that converged.
    let patch = PathBuf::from(report["patch"].as_str().unwrap());
    assert_eq!(patch, dir.join("fix.patch"));
    assert_eq!(
        std::fs::read_to_string(&patch).unwrap(),
        std::fs::read_to_string(q.path().join("01-fix.diff")).unwrap()
    );
    assert_eq!(
        report["fixed"],
        serde_json::json!(["test_crc16_known_vector"])
    );
    let log = std::fs::read_to_string(dir.join("commit/pre-commit.log")).unwrap();
    assert!(log.contains("trailing whitespace."), "{log}");
    // The index the hook was given goes; nothing of the commit is left half made.
    assert!(!dir.join("commit/index").exists());

    let lines = trace(&dir);
    let refused = line_into(&lines, "COMMIT", "ERROR_RECOVERY");
    assert_eq!(refused["error_class"], "COMMIT_FAILURE");
    assert!(edges(&dir).ends_with(&[
        ("CONVERGENCE_CHECK".into(), "COMMIT".into()),
        ("COMMIT".into(), "ERROR_RECOVERY".into()),
        ("ERROR_RECOVERY".into(), "FAILURE".into()),
    ]));
    audit_passes(&repo, &dir);

    // No half-made commit.
    nothing_committed(&repo, &before);
}

#[test]
fn hooks_from_core_hooks_path_see_the_fix_staged_and_fwfixs_message_which_they_may_edit() {
    let repo = FixtureRepo::new();
    // The team's hooks live in the repository; core.hooksPath (relative: from the work tree's
    // top) makes git ignore .git/hooks, whose pre-commit would refuse everything.
    hook(
        &repo.path().join("ci/hooks"),
        "pre-commit",
        "git diff --cached --name-only > \"$HOOK_SEEN/staged\"\n\
         pwd > \"$HOOK_SEEN/pwd\"\n",
    );
    hook(
        &repo.path().join("ci/hooks"),
        "commit-msg",
        "cp \"$1\" \"$HOOK_SEEN/message\"\n\
         grep -q '^Fwfix-Run: ' \"$1\" || { echo 'commit-msg: no ticket id'; exit 1; }\n\
         printf 'Ticket: FW-42\\n' >> \"$1\"\n",
    );
    repo.git(&["add", "ci"]);
    repo.git(&["commit", "-q", "-m", "team hooks"]);
    repo.git(&["config", "core.hooksPath", "ci/hooks"]);
    hook(&repo.path().join(".git/hooks"), "pre-commit", "exit 1\n");
    let q = fix_queue(&repo, false);
    let scratch = tempfile::tempdir().unwrap();
    let profile = crc_profile(scratch.path(), "");
    let out = run(&repo, q.path(), &profile, scratch.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let dir = only_run_dir(&repo);
    let report = report(&dir);
    let run_id = report["run_id"].as_str().unwrap();
    let branch = report["branch"].as_str().unwrap();
    assert_eq!(branch, format!("fwfix/{run_id}"));

    // pre-commit ran in the work tree's top, with the fix (and only it) staged.
    let seen = |name: &str| std::fs::read_to_string(scratch.path().join(name)).unwrap();
    assert_eq!(seen("staged"), "src/crc.c\n");
    assert_eq!(
        Path::new(seen("pwd").trim()).canonicalize().unwrap(),
        repo.path().canonicalize().unwrap()
    );
    // commit-msg saw fwfix's message, and the commit has the message it left.
    let saw = seen("message");
    assert!(
        saw.starts_with("fwfix: make test_crc16_known_vector pass\n\n")
            && saw.contains("Before the fix:\n  test_crc16_known_vector FAIL at ")
            && saw.contains("Candidate: 01-fix.diff, tried in iteration 1")
            && saw.ends_with(&format!("Fwfix-Run: {run_id}\nFwfix-Iteration: 1\n")),
        "{saw}"
    );
    let committed = repo.git(&["log", "-1", "--format=%B", branch]);
    assert_eq!(
        committed.trim_end(),
        format!("{saw}Ticket: FW-42").trim_end()
    );

    let lines = trace(&dir);
    let committed = line_into(&lines, "COMMIT", "SUCCESS");
    let reason = committed["reason"].as_str().unwrap();
    assert!(
        reason.contains(branch) && reason.ends_with("pre-commit and commit-msg passed"),
        "{reason}"
    );
    audit_passes(&repo, &dir);
    let graph = fwfix(&["graph"], repo.path());
    let graph = String::from_utf8_lossy(&graph.stdout);
    assert!(
        graph.contains("CONVERGENCE_CHECK --> COMMIT: fixed")
            && graph.contains("COMMIT --> SUCCESS: committed"),
        "{graph}"
    );
}

#[test]
fn a_worktree_run_runs_the_main_repositorys_hooks_in_its_linked_worktree() {
    let repo = FixtureRepo::new();
    hook(
        &repo.path().join(".git/hooks"),
        "pre-commit",
        "pwd > \"$HOOK_SEEN/pwd\"\n\
         echo \"$GIT_DIR\" > \"$HOOK_SEEN/git_dir\"\n\
         git diff --cached --name-only > \"$HOOK_SEEN/staged\"\n",
    );
    make_owner_work(&repo);
    let before = owner_state(&repo);
    let q = fix_queue(&repo, false);
    let scratch = tempfile::tempdir().unwrap();
    let profile = crc_profile(scratch.path(), "");
    let out = run_with(&repo, q.path(), &profile, scratch.path(), &["--worktree"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let seen = |name: &str| std::fs::read_to_string(scratch.path().join(name)).unwrap();
    // The hook ran in the run's linked worktree (gone by now), as git runs it there: from the
    // common hooks directory, with the worktree's own git directory.
    let dir = only_run_dir(&repo);
    let report = report(&dir);
    let pwd = seen("pwd");
    let worktree = format!("fwfix-{}", report["run_id"].as_str().unwrap());
    assert!(Path::new(pwd.trim()).ends_with(&worktree), "{pwd}");
    assert!(
        seen("git_dir").contains("/worktrees/"),
        "{}",
        seen("git_dir")
    );
    assert_eq!(seen("staged"), "src/crc.c\n");
    let branch = report["branch"].as_str().unwrap();
    assert_eq!(
        repo.git(&["rev-parse", &format!("{branch}^")]),
        before["head"]
    );
    assert_eq!(owner_state(&repo), before);
}

#[test]
fn a_pre_commit_hook_that_reformats_the_fix_refuses_it_with_the_files_it_changed() {
    let repo = FixtureRepo::new();
    // A formatter hook that rewrites the staged file and stages its rewrite, as many teams' do.
    hook(
        &repo.path().join(".git/hooks"),
        "pre-commit",
        "sed -i 's/0xFFFFu/0xffffu/' src/crc.c && git add src/crc.c\n\
         echo 'formatted src/crc.c'\n",
    );
    let q = fix_queue(&repo, false);
    make_owner_work(&repo);
    let before = owner_state(&repo);
    let scratch = tempfile::tempdir().unwrap();
    let profile = crc_profile(scratch.path(), "");
    let out = run(&repo, q.path(), &profile, scratch.path());
    let (_, _, message) = refused_commit(&repo, &out);
    assert!(
        message.contains(
            "it changed src/crc.c (modified), the index (fwfix commits only the fix it tested)"
        ) && message.contains("formatted src/crc.c"),
        "{message}"
    );
    // The hook's rewrite went with the rollback.
    nothing_committed(&repo, &before);
}

#[test]
fn a_hook_that_hangs_is_killed_with_its_children_at_its_timeout() {
    let repo = FixtureRepo::new();
    hook(
        &repo.path().join(".git/hooks"),
        "pre-commit",
        "echo 'checking the whole history...'\n\
         sleep 300 &\n\
         echo $! > \"$HOOK_SEEN/child\"\n\
         wait\n",
    );
    let q = fix_queue(&repo, false);
    let before = owner_state(&repo);
    let scratch = tempfile::tempdir().unwrap();
    let profile = crc_profile(scratch.path(), "[commit]\ntimeout_s = 2\n");
    let out = run(&repo, q.path(), &profile, scratch.path());
    let (dir, _, message) = refused_commit(&repo, &out);
    assert!(
        message.contains("did not finish within 2 s ([commit] timeout_s) and was killed")
            && message.contains("checking the whole history..."),
        "{message}"
    );
    // The hook's own child went with it.
    let child = std::fs::read_to_string(scratch.path().join("child")).unwrap();
    let proc = PathBuf::from(format!("/proc/{}", child.trim()));
    let gone = (0..50).any(|_| {
        let alive = std::fs::read_to_string(proc.join("stat")).is_ok_and(|s| !s.contains(") Z "));
        if alive {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        !alive
    });
    assert!(gone, "the hook's child {} outlived it", child.trim());
    nothing_committed(&repo, &before);
    assert!(dir.join("fix.patch").is_file());
}

/// Regression: a hook that left a process in the background (holding its output pipe) was
/// waited on until its timeout; it ends when the hook exits, and what it left is killed.
#[test]
fn a_hook_that_leaves_a_process_running_ends_when_it_exits() {
    let repo = FixtureRepo::new();
    hook(
        &repo.path().join(".git/hooks"),
        "pre-commit",
        "echo 'starting the index daemon'\n\
         sleep 300 &\n\
         echo $! > \"$HOOK_SEEN/child\"\n\
         exit 0\n",
    );
    let q = fix_queue(&repo, false);
    let scratch = tempfile::tempdir().unwrap();
    let profile = crc_profile(scratch.path(), "[commit]\ntimeout_s = 60\n");
    let out = run(&repo, q.path(), &profile, scratch.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_ne!(repo.git(&["branch", "--list", "fwfix/*"]), "");
    let child = pids_in(&scratch.path().join("child"));
    assert_eq!(child.len(), 1);
    assert!(
        gone_soon(child[0]),
        "the hook's child {} outlived it",
        child[0]
    );
}

#[test]
fn commit_hooks_false_commits_without_running_them() {
    let repo = FixtureRepo::new();
    hook(
        &repo.path().join(".git/hooks"),
        "pre-commit",
        "touch \"$HOOK_SEEN/ran\"\nexit 1\n",
    );
    let q = fix_queue(&repo, false);
    let scratch = tempfile::tempdir().unwrap();
    let profile = crc_profile(scratch.path(), "[commit]\nhooks = false\n");
    let out = run(&repo, q.path(), &profile, scratch.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(!scratch.path().join("ran").exists());
    let dir = only_run_dir(&repo);
    let report = report(&dir);
    let branch = report["branch"].as_str().unwrap();
    let message = repo.git(&["log", "-1", "--format=%B", branch]);
    assert!(message.starts_with("fwfix: make test_crc16_known_vector pass"));
    let lines = trace(&dir);
    let reason = line_into(&lines, "COMMIT", "SUCCESS")["reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        reason.ends_with("hooks skipped ([commit] hooks = false)"),
        "{reason}"
    );
}
