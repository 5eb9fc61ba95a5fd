//! `fwfix runs prune` on real runs of the fixture firmware (real git repositories, builds and
//! QEMU): what finished runs keep goes, runs still going or resumable stay unless asked.
#![allow(clippy::unwrap_used, clippy::expect_used)] // panics are how tests fail

use crate::common::*;
use crate::run_cmd::{slow_when_patched, start_slow_patched_build, MPS2};
use std::path::{Path, PathBuf};

fn queue_run(repo: &FixtureRepo, patch: &str, exit: i32) -> PathBuf {
    let q = fixture_queue(&[patch]);
    let out = fwfix(
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
        ],
        repo.path(),
    );
    assert_eq!(out.status.code(), Some(exit), "{}", text(&out));
    run_dir(&out)
}

fn prune(repo: &FixtureRepo, extra: &[&str]) -> String {
    let mut args = vec!["runs", "prune"];
    args.extend_from_slice(extra);
    let out = fwfix(&args, repo.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn id(dir: &Path) -> String {
    dir.file_name().unwrap().to_string_lossy().into_owned()
}

fn fwfix_refs(repo: &FixtureRepo) -> String {
    repo.git(&["for-each-ref", "--format=%(refname)", "refs/fwfix/"])
}

#[test]
fn prune_removes_finished_runs_and_keeps_live_and_resumable_ones_unless_asked() {
    let repo = FixtureRepo::new();
    let converged = queue_run(&repo, "04-fixes-crc16.diff", 0);
    let failed = queue_run(&repo, "03-regresses-crc32.diff", 1);
    assert!(fwfix_refs(&repo).contains(&format!("refs/fwfix/{}/base", id(&failed))));
    // Snapshots of a run whose directory someone removed by hand.
    repo.git(&["update-ref", "refs/fwfix/20240101-000000-dead/base", "HEAD"]);

    let listed = prune(&repo, &["--dry-run"]);
    assert!(
        listed.contains(&format!("would prune {} (SUCCESS)", id(&converged))),
        "{listed}"
    );
    assert!(
        listed.contains(&format!("kept {} (FAILURE)", id(&failed))),
        "{listed}"
    );
    assert!(
        listed.contains(&format!("fwfix resume {}", id(&failed))),
        "{listed}"
    );
    assert!(
        listed.contains("would prune 20240101-000000-dead (REFS_ONLY)"),
        "{listed}"
    );
    assert!(converged.is_dir() && failed.is_dir());
    assert!(fwfix_refs(&repo).contains("20240101-000000-dead"));

    // A run still going is never touched, even when resumable runs are asked for.
    let q = slow_when_patched(&repo);
    let (mut child, live, lines) = start_slow_patched_build(&repo, &q);
    let young = prune(&repo, &["--resumable", "--older-than", "1h"]);
    assert!(
        young.contains(&format!("kept {} (FAILURE): younger than 1h", id(&failed))),
        "{young}"
    );
    let pruned = prune(&repo, &["--resumable"]);
    assert!(
        pruned.contains(&format!("kept {} (", id(&live))),
        "{pruned}"
    );
    assert!(pruned.contains("still running"), "{pruned}");
    assert!(
        pruned.contains(&format!("pruned {} (SUCCESS)", id(&converged))),
        "{pruned}"
    );
    assert!(
        pruned.contains(&format!("pruned {} (FAILURE)", id(&failed))),
        "{pruned}"
    );
    assert!(!converged.exists() && !failed.exists() && live.is_dir());
    assert!(!fwfix_refs(&repo).contains("20240101-000000-dead"));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    drop(lines);
    assert_eq!(child.wait().unwrap().code(), Some(3));

    let kept = prune(&repo, &[]);
    assert!(
        kept.contains(&format!("kept {} (ABORTED)", id(&live))),
        "{kept}"
    );
    let pruned = prune(&repo, &["--resumable"]);
    assert!(
        pruned.contains(&format!("pruned {} (ABORTED)", id(&live))),
        "{pruned}"
    );
    assert!(!live.exists());
    assert_eq!(fwfix_refs(&repo), "");
    assert_eq!(prune(&repo, &[]), "no runs to prune\n");
}
