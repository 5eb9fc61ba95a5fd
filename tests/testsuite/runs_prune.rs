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
    ctrl_c(&child);
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

/// Hex SHA-256 of a file, read in pieces.
fn digest(path: &Path) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    std::io::copy(&mut std::fs::File::open(path).unwrap(), &mut hasher).unwrap();
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Bytes under `dir`, recursively.
fn size_of(dir: &Path) -> u64 {
    files_under(dir)
        .iter()
        .filter_map(|f| std::fs::symlink_metadata(f).ok())
        .map(|m| m.len())
        .sum()
}

/// Regression: a 200 MB untracked capture went into .git with every snapshot (+191 MiB, 30 s),
/// and stayed there for good.
#[test]
fn a_large_untracked_file_stays_out_of_git_and_comes_back_byte_exact() {
    let repo = FixtureRepo::new();
    // The build damages the capture, so every rollback has to bring it back.
    repo.write(
        "profiles/crc-capture.toml",
        r#"name = "crc-capture"
[build]
command = "make BOARD={machine} build/{machine}/test_crc.elf && printf damaged > capture.bin"
artifact = "build/{machine}/test_crc.elf"
[test]
harness = "unity"
timeout_s = 20
[snapshot]
max_untracked_mb = 16
"#,
    );
    repo.git(&["add", "profiles/crc-capture.toml"]);
    repo.git(&[
        "commit",
        "-q",
        "-m",
        "a profile whose build writes over capture.bin",
    ]);
    let capture = repo.path().join("capture.bin");
    {
        use std::io::Write;
        let mut file = std::io::BufWriter::new(std::fs::File::create(&capture).unwrap());
        let block: Vec<u8> = (0..1u32 << 20).map(|i| (i * 7 + i / 4096) as u8).collect();
        for n in 0..200u8 {
            file.write_all(&[n]).unwrap();
            file.write_all(&block[1..]).unwrap();
        }
    }
    let before = digest(&capture);
    let git_before = size_of(&repo.path().join(".git"));

    // A candidate that changes nothing first, then the fix: one rollback between them.
    let q = fixture_queue(&["04-fixes-crc16.diff"]);
    let fix = std::fs::read_to_string(q.path().join("04-fixes-crc16.diff")).unwrap();
    std::fs::write(
        q.path().join("00-wrong-init.diff"),
        fix.replace("0xFFFFu", "0x1D0Fu"),
    )
    .unwrap();
    let out = fwfix(
        &[
            "run",
            "--json",
            "--board",
            MPS2,
            "--profile",
            "crc-capture",
            "--strategy",
            "queue",
            "--patches",
            q.path().to_str().unwrap(),
        ],
        repo.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(report(&run_dir(&out))["iterations"], 2);
    assert_eq!(digest(&capture), before);
    let grown = size_of(&repo.path().join(".git")) - git_before;
    assert!(grown < 20 << 20, ".git grew by {grown} bytes");
    // The copy kept aside went with the run's snapshots.
    assert!(!run_dir(&out).join("untracked").exists());
    assert_eq!(fwfix_refs(&repo), "");
}
