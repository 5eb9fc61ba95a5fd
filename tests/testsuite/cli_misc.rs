//! The small commands: `validate`, `doctor`, `graph`, and usage errors.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by panicking

use crate::common::*;
use std::path::Path;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn validate_accepts_every_shipped_board_and_profile() {
    let mut files = Vec::new();
    for dir in ["boards", "profiles"] {
        for entry in std::fs::read_dir(root().join(dir)).unwrap() {
            files.push(entry.unwrap().path());
        }
    }
    let mut args = vec!["validate".to_string()];
    args.extend(files.iter().map(|p| p.display().to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = fwfix(&args, root());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().count(),
        files.len()
    );
}

#[test]
fn validate_names_file_line_and_column_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("profile.toml");
    std::fs::write(
        &bad,
        "name = \"p\"\n[build]\ncommand = \"make\"\nartifact = \"fw.elf\"\n[test]\nharness = \"unity\"\ntimeout_s = \"soon\"\n",
    )
    .unwrap();
    let out = fwfix(&["validate", bad.to_str().unwrap()], dir.path());
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("profile.toml:7:"), "{stderr}");
    assert!(stderr.contains("timeout_s"), "{stderr}");
}

#[test]
fn doctor_finds_the_installed_tools() {
    require_tools();
    let out = fwfix(&["doctor"], root());
    let stdout = String::from_utf8_lossy(&out.stdout);
    for tool in ["qemu-system-arm", "arm-none-eabi-gcc", "git"] {
        let line = stdout
            .lines()
            .find(|l| l.contains(tool))
            .unwrap_or_else(|| panic!("{stdout}"));
        assert!(line.starts_with("ok"), "{line}");
    }
}

#[test]
fn doctor_exits_4_with_the_install_command_when_tools_are_missing() {
    let empty = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fwfix"))
        .arg("doctor")
        .env("PATH", empty.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(
            "apt-get install -y --no-install-recommends qemu-system-arm gcc-arm-none-eabi"
        ),
        "{stdout}"
    );
}

#[test]
fn graph_prints_mermaid_and_dot_from_the_table() {
    let out = fwfix(&["graph"], root());
    assert_eq!(out.status.code(), Some(0));
    let m = String::from_utf8_lossy(&out.stdout);
    assert!(m.starts_with("stateDiagram-v2"));
    assert!(m.contains("CONVERGENCE_CHECK --> SUCCESS"));
    let out = fwfix(&["graph", "--dot"], root());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("digraph fwfix"));
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(fwfix(&["test"], root()).status.code(), Some(2));
    assert_eq!(fwfix(&["no-such-command"], root()).status.code(), Some(2));
    assert_eq!(
        fwfix(
            &["test", "--board", "x", "--profile", "y", "--repeat", "0"],
            root()
        )
        .status
        .code(),
        Some(2)
    );
    assert_eq!(fwfix(&["--help"], root()).status.code(), Some(0));
    // --bad belongs to the revert strategy; anywhere else it would be silently ignored.
    let out = fwfix(
        &[
            "run",
            "--board",
            "x",
            "--profile",
            "y",
            "--strategy",
            "llm",
            "--bad",
            "HEAD~1",
        ],
        root(),
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("--bad goes with --strategy revert"),
        "{}",
        text(&out)
    );
}

#[test]
fn unknown_board_name_lists_where_it_looked() {
    let repo = FixtureRepo::new();
    let out = fwfix(
        &[
            "test",
            "--repo",
            repo.path().to_str().unwrap(),
            "--board",
            "no-such-board",
            "--profile",
            "crc",
        ],
        repo.path(),
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no-such-board"), "{stderr}");
    assert!(
        stderr.contains("qemu-mps2-an385"),
        "lists the available boards: {stderr}"
    );
}
