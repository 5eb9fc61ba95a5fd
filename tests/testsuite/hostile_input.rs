//! Hostile input gets a clear, bounded answer from the real binary: a FIFO or a device where a
//! board, profile, patch or log file was meant is refused (never opened and waited on), a file or
//! a value past its cap is refused at file:line:col without being repeated into the output, a
//! firmware's terminal escapes are shown rather than acted on, and a `.fwfix` in the way gets
//! the same answer whichever level of it is.
#![allow(clippy::unwrap_used, clippy::expect_used)] // panics are how tests fail

use crate::common::*;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

/// Runs fwfix and insists that it ends by itself. A fwfix still running after a while is sent
/// SIGTERM, as a person would (it must answer that too), and the test fails either way.
fn bounded(args: &[&str], cwd: &Path) -> Output {
    let state = tempfile::tempdir().unwrap();
    let mut child = fwfix_command(args, cwd, state.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    for _ in 0..1200 {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
    for _ in 0..200 {
        if child.try_wait().unwrap().is_some() {
            panic!("fwfix {args:?} did not end by itself (it did on SIGTERM)");
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    panic!("fwfix {args:?} did not end by itself, nor on SIGTERM");
}

fn fifo(path: &Path) {
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::S_IRWXU).unwrap();
}

fn runs_in(repo: &Path) -> usize {
    std::fs::read_dir(repo.join(".fwfix/runs")).map_or(0, |d| d.count())
}

#[test]
fn a_fifo_or_a_device_as_board_profile_or_patch_is_refused_by_name_and_as_a_log_ends() {
    let repo = FixtureRepo::new();
    let scratch = tempfile::tempdir().unwrap();
    let board = scratch.path().join("board.toml");
    fifo(&board);
    let board = board.to_str().unwrap();
    let out = bounded(&["test", "--board", board, "--profile", "crc"], repo.path());
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains(&format!(
            "{board} is a FIFO (named pipe), not a regular file"
        )),
        "{}",
        text(&out)
    );

    let out = bounded(
        &[
            "test",
            "--board",
            "qemu-mps2-an385",
            "--profile",
            "/dev/zero",
        ],
        repo.path(),
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("/dev/zero is a character device, not a regular file"),
        "{}",
        text(&out)
    );

    let out = bounded(&["validate", board], repo.path());
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("is a FIFO"), "{}", text(&out));

    // A FIFO among the queued patches: refused before the run starts, not skipped.
    let queue = fixture_queue(&["04-fixes-crc16.diff"]);
    let patch = queue.path().join("05-more.diff");
    fifo(&patch);
    let out = bounded(
        &[
            "run",
            "--board",
            "qemu-mps2-an385",
            "--profile",
            "crc",
            "--strategy",
            "queue",
            "--patches",
            queue.path().to_str().unwrap(),
        ],
        repo.path(),
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains(&format!(
            "{} is a FIFO (named pipe), not a regular file",
            patch.display()
        )),
        "{}",
        text(&out)
    );
    assert_eq!(runs_in(repo.path()), 0);

    // A log that never ends, and a FIFO nobody writes to: triage reads streams (a pipe is a
    // log too), so both end, as binary and as a FIFO nothing was written to.
    let out = bounded(&["triage", "/dev/zero", board], repo.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("the input is binary, not a log")
            && text(&out).contains("no program had this FIFO open for writing"),
        "{}",
        text(&out)
    );
}

#[test]
fn an_oversized_file_or_value_is_refused_at_file_line_col_without_repeating_it() {
    let repo = FixtureRepo::new();
    let scratch = tempfile::tempdir().unwrap();
    let shipped = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("boards/qemu-mps2-an385.toml"),
    )
    .unwrap();
    // The shipped board with its name, first, replaced.
    let named = |name: &str| -> String {
        let rest: Vec<&str> = shipped.lines().filter(|l| !l.starts_with("name")).collect();
        format!("name = \"{name}\"\n{}\n", rest.join("\n"))
    };
    // A name of 10 MB makes the file itself too large; one of 20 kB is a value too long.
    for (length, at, says) in [
        (10_000_000, ":1:1048577:", "goes on past 1048576 bytes"),
        (20_000, ":1:8:", "the value is 20000 bytes long"),
    ] {
        let board = scratch.path().join(format!("board-{length}.toml"));
        std::fs::write(&board, named(&"x".repeat(length))).unwrap();
        let out = bounded(
            &[
                "test",
                "--board",
                board.to_str().unwrap(),
                "--profile",
                "crc",
            ],
            repo.path(),
        );
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        let said = text(&out);
        assert!(said.len() < 2_000, "{} bytes of output", said.len());
        assert!(
            said.contains(&format!("{}{at}", board.display())) && said.contains(says),
            "{said}"
        );
        assert_eq!(runs_in(repo.path()), 0, "a report was written");
    }
    // So is a name on the command line longer than any path.
    let long = "y".repeat(100_000);
    let out = bounded(&["test", "--board", &long, "--profile", "crc"], repo.path());
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let said = text(&out);
    assert!(said.len() < 2_000, "{} bytes of output", said.len());
    assert!(
        said.contains("the board given is 100000 bytes long"),
        "{said}"
    );
}

#[test]
fn firmware_terminal_escapes_are_shown_not_acted_on_by_the_terminal_and_report_md() {
    let repo = FixtureRepo::new();
    let test = repo.path().join("tests/test_crc.c");
    let source = std::fs::read_to_string(&test).unwrap();
    // A result line, raw on the console (Unity's own output escapes such bytes), whose message
    // clears the screen, retitles the terminal, and overwrites its own line.
    let hostile = source.replace(
        "    TEST_IGNORE_MESSAGE(\"CRC-16/XMODEM is not provided yet\");",
        "    const char *raw = \"tests/test_crc.c:1:test_hostile:FAIL: \\x1b[2J\\x1b]0;pwned\\x07 later\\rsooner\\n\";\n    while (*raw) console_putc(*raw++);\n    TEST_IGNORE_MESSAGE(\"CRC-16/XMODEM is not provided yet\");",
    ).replace("#include \"unity.h\"", "#include \"unity.h\"\n#include \"console.h\"");
    assert_ne!(hostile, source);
    std::fs::write(&test, hostile).unwrap();
    let out = bounded(
        &[
            "test",
            "--verbose",
            "--board",
            "qemu-mps2-an385",
            "--profile",
            "crc",
        ],
        repo.path(),
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    for (what, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        let shown = String::from_utf8_lossy(bytes);
        assert!(
            !shown.contains(['\x1b', '\x07', '\r']),
            "{what} passes escapes on: {shown:?}"
        );
    }
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("␛[2J␛]0;pwned␇ later␍sooner"),
        "{}",
        text(&out)
    );
    let runs: Vec<_> = std::fs::read_dir(repo.path().join(".fwfix/runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let md = std::fs::read_to_string(runs[0].join("report.md")).unwrap();
    assert!(!md.contains(['\x1b', '\x07', '\r']), "{md:?}");
    assert!(md.contains("␛[2J␛]0;pwned␇ later␍sooner"), "{md}");
}

#[test]
fn a_file_where_fwfix_keeps_its_runs_is_exit_2_naming_it_at_every_depth() {
    let repo = FixtureRepo::new();
    for blocked in [".fwfix", ".fwfix/runs"] {
        let _ = std::fs::remove_dir_all(repo.path().join(".fwfix"));
        let _ = std::fs::remove_file(repo.path().join(".fwfix"));
        let path = repo.write(blocked, "not a directory\n");
        let named = format!(
            "{} is a file, not a directory",
            path.canonicalize().unwrap().display()
        );
        let out = bounded(
            &["test", "--board", "qemu-mps2-an385", "--profile", "crc"],
            repo.path(),
        );
        assert_eq!(out.status.code(), Some(2), "{blocked}: {}", text(&out));
        assert!(text(&out).contains(&named), "{blocked}: {}", text(&out));
        let out = bounded(&["runs"], repo.path());
        assert_eq!(out.status.code(), Some(2), "{blocked}: {}", text(&out));
        assert!(
            text(&out).contains(&format!("{blocked} is a file, not a directory")),
            "{blocked}: {}",
            text(&out)
        );
    }
}
