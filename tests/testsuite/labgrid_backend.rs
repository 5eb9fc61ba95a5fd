//! The labgrid backend against a real labgrid 26.0.1 coordinator and exporter on 127.0.0.1 (see
//! `common::labgrid`): QEMU is the board behind the place, started and stopped by the place's
//! power port, its UART the place's NetworkSerialPort.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by panicking

use crate::common::labgrid::{path_with_venv, Farm, Killed};
use crate::common::*;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

fn fwfix_on(farm: &Farm, repo: &FixtureRepo, state: &Path, profile: &str) -> Command {
    fwfix_with(
        farm,
        &format!("place = \"{}\"", farm.place),
        repo,
        state,
        profile,
    )
}

fn fwfix_with(farm: &Farm, how: &str, repo: &FixtureRepo, state: &Path, profile: &str) -> Command {
    let board = farm.board_file(how);
    let mut command = fwfix_command(
        &[
            "test",
            "--json",
            "--repo",
            repo.path().to_str().unwrap(),
            "--board",
            board.to_str().unwrap(),
            "--profile",
            profile,
        ],
        repo.path(),
        state,
    );
    command
        .env("PATH", path_with_venv())
        .env_remove("LG_COORDINATOR");
    command
}

fn records(state: &Path) -> usize {
    std::fs::read_dir(state.join("labgrid"))
        .map(|d| d.count())
        .unwrap_or(0)
}

type Events = std::io::Lines<BufReader<std::process::ChildStdout>>;

/// Starts fwfix and waits for the first console line it reports; returns the child, what it
/// printed so far, and the rest of its events to come.
fn until_console(mut command: Command) -> (Killed, Vec<String>, Events) {
    let mut child = Killed(command.stdout(Stdio::piped()).spawn().unwrap());
    let mut lines = BufReader::new(child.0.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        let console = line.contains("\"console_line\"");
        seen.push(line);
        if console {
            return (child, seen, lines);
        }
    }
    panic!("fwfix printed no console line: {seen:#?}");
}

#[test]
fn fwfix_test_runs_through_the_place_and_gives_it_back() {
    let farm = Farm::start("sim-1");
    let repo = FixtureRepo::new();
    let state = tempfile::tempdir().unwrap();
    let out = fwfix_on(&farm, &repo, state.path(), "ringbuf")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let dir = run_dir(&out);
    let report = report(&dir);
    assert_eq!(report["status"], "PASSED");
    let cases = report["cases"].as_array().unwrap();
    assert!(cases.len() >= 3 && cases.iter().all(|c| c["status"] == "PASS"));
    assert!(
        std::fs::read_to_string(dir.join("iter-000/flash.log"))
            .unwrap()
            .contains("cp "),
        "the flash command ran"
    );
    assert!(
        farm.image.is_file(),
        "the image was flashed where the switch reads it"
    );
    let notes = report["notes"].to_string();
    assert!(
        notes.contains("acquired labgrid place sim-1 as "),
        "{notes}"
    );
    let power = std::fs::read_to_string(dir.join("iter-000/power.log")).unwrap();
    assert!(
        power.contains("power on"),
        "powered through labgrid: {power}"
    );
    assert!(farm.place_is_free(), "the place was released");
    assert_eq!(records(state.path()), 0, "the record went with the release");
}

#[test]
fn a_place_reserved_by_tags_is_acquired_and_the_reservation_cancelled() {
    let farm = Farm::start("sim-5");
    let repo = FixtureRepo::new();
    let state = tempfile::tempdir().unwrap();
    let out = fwfix_with(
        &farm,
        "tags = [\"board=sim\"]",
        &repo,
        state.path(),
        "ringbuf",
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("reservation"), "{}", text(&out));
    assert!(farm.place_is_free());
    let left = farm.client(&["reservations"]);
    assert!(
        String::from_utf8_lossy(&left.stdout).trim().is_empty(),
        "{}",
        text(&left)
    );
}

#[test]
fn a_second_run_waits_for_the_place_then_runs() {
    let farm = Farm::start("sim-2");
    let repo = FixtureRepo::new();
    let state = tempfile::tempdir().unwrap();
    let (mut first, _, rest) = until_console(fwfix_on(&farm, &repo, state.path(), "ringbuf"));
    let second = fwfix_on(&farm, &repo, state.path(), "ringbuf")
        .output()
        .unwrap();
    assert!(rest.count() > 0);
    assert!(first.0.wait().unwrap().success());
    assert_eq!(second.status.code(), Some(0), "{}", text(&second));
    let said = text(&second);
    assert!(
        said.contains("is acquired by") && said.contains("run "),
        "the wait names the fwfix run holding the place: {said}"
    );
    assert!(farm.place_is_free());
}

#[test]
fn a_run_killed_with_sigkill_leaves_the_place_and_reclaim_frees_it() {
    let farm = Farm::start("sim-3");
    let repo = FixtureRepo::new();
    let state = tempfile::tempdir().unwrap();
    let (mut run, _, _rest) = until_console(fwfix_on(&farm, &repo, state.path(), "event"));
    // A run still alive is left alone.
    let mut early = fwfix_command(&["boards", "reclaim"], repo.path(), state.path());
    let out = early.env("PATH", path_with_venv()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("in use"), "{}", text(&out));
    run.0.kill().unwrap();
    run.0.wait().unwrap();
    assert!(
        !farm.place_is_free(),
        "labgrid's acquire outlives a dead client"
    );
    assert_eq!(records(state.path()), 1);
    let mut reclaim = fwfix_command(&["boards", "reclaim"], repo.path(), state.path());
    let out = reclaim.env("PATH", path_with_venv()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("place sim-3") && text(&out).contains("released"));
    assert!(farm.place_is_free());
    assert_eq!(records(state.path()), 0);
}

#[test]
fn the_coordinator_going_away_mid_run_is_infrastructure_with_the_console_kept() {
    let mut farm = Farm::start("sim-4");
    let repo = FixtureRepo::new();
    let state = tempfile::tempdir().unwrap();
    let (mut run, mut seen, rest) = until_console(fwfix_on(&farm, &repo, state.path(), "event"));
    farm.kill_coordinator();
    seen.extend(rest.map_while(Result::ok));
    let status = run.0.wait().unwrap();
    assert_eq!(status.code(), Some(4), "{seen:#?}");
    let last: serde_json::Value = serde_json::from_str(seen.last().unwrap()).unwrap();
    let dir = std::path::PathBuf::from(last["run_dir"].as_str().unwrap());
    let console = std::fs::read_to_string(dir.join("iter-000/console-failed.log"))
        .unwrap_or_else(|e| panic!("{e}: {:#?}", files_under(&dir)));
    assert!(console.contains("coordinator"), "{console}");
    assert!(
        console.lines().count() >= 2,
        "what the board printed is kept: {console}"
    );
    // The place could not be given back without its coordinator: the record stays for
    // `fwfix boards reclaim`.
    assert_eq!(records(state.path()), 1);
}

#[test]
fn a_matrix_runs_the_place_only_for_profiles_that_passed_in_simulation() {
    let farm = Farm::start("sim-6");
    let repo = FixtureRepo::new();
    let state = tempfile::tempdir().unwrap();
    let board = farm.board_file(&format!("place = \"{}\"", farm.place));
    repo.write(
        "nightly.toml",
        &format!(
            "boards = [\"qemu-mps2-an385\", \"qemu-lm3s6965evb\", \"{}\"]\nprofiles = [\"crc\", \
             \"ringbuf\"]\n",
            board.display()
        ),
    );
    let mut command = fwfix_command(
        &[
            "matrix",
            "nightly.toml",
            "--json",
            "--jobs",
            "2",
            "--repo",
            repo.path().to_str().unwrap(),
        ],
        repo.path(),
        state.path(),
    );
    let out = command
        .env("PATH", path_with_venv())
        .env_remove("LG_COORDINATOR")
        .output()
        .unwrap();
    // crc fails on QEMU (the fixture's bug): the most serious outcome is a test failure.
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let dir = run_dir(&out);
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    let pair = |board: &str, profile: &str| {
        report["pairs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["board"] == board && p["profile"] == profile)
            .unwrap_or_else(|| panic!("no pair {board}/{profile} in {report:#}"))
            .clone()
    };
    assert_eq!(pair("qemu-mps2-an385", "crc")["status"], "FAILED");
    let skipped = pair("mps2-an385", "crc");
    assert_eq!(skipped["status"], "SKIPPED", "{skipped:#}");
    assert_eq!(skipped["tries"], 0);
    assert_eq!(pair("mps2-an385", "ringbuf")["status"], "PASSED");
    assert!(farm.place_is_free());
    assert_eq!(records(state.path()), 0);
}

/// ser2net (as labgrid's exporter serves a USB serial adapter) in RFC 2217 mode on one end of a
/// socat pty pair: fwfix sets the line's speed through COM-PORT-OPTION and reads what is written
/// at the other end, with ser2net's telnet commands taken out.
#[tokio::test]
async fn an_rfc2217_console_served_by_ser2net_is_set_up_and_read() {
    use tokio::io::AsyncReadExt;
    require_tools();
    assert!(
        Command::new("ser2net").arg("-v").output().is_ok(),
        "ser2net is missing: scripts/prerequisites.sh installs it"
    );
    let dir = tempfile::tempdir().unwrap();
    let (dev, host) = (dir.path().join("dev"), dir.path().join("host"));
    let _socat = Killed(
        Command::new("socat")
            .arg(format!("pty,raw,echo=0,link={}", dev.display()))
            .arg(format!("pty,raw,echo=0,link={}", host.display()))
            .spawn()
            .unwrap(),
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = dir.path().join("ser2net.yaml");
    std::fs::write(
        &config,
        format!(
            "connection: &con0\n  accepter: telnet(rfc2217),tcp,127.0.0.1,{port}\n  connector: \
             serialdev,{},9600n81,local\n",
            dev.display()
        ),
    )
    .unwrap();
    let _ser2net = Killed(
        Command::new("ser2net")
            .arg("-d")
            .arg("-c")
            .arg(&config)
            .arg("-P")
            .arg(dir.path().join("pid"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let stream = loop {
        if let Ok(s) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await {
            break s;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    let shown = format!("127.0.0.1:{port}");
    let mut reader = fwfix::dut::labgrid::rfc2217::open(stream, 57_600, &shown)
        .await
        .unwrap();
    // ser2net opens the device on the connection and applies the speed fwfix asked for.
    let speed = || {
        let out = Command::new("stty")
            .arg("-F")
            .arg(&dev)
            .arg("speed")
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while speed() != "57600" {
        assert!(
            std::time::Instant::now() < until,
            "the speed is {}",
            speed()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    std::fs::write(&host, b"hello \xff over rfc2217\r\n").unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 256];
    while !got.ends_with(b"\r\n") {
        let n = tokio::time::timeout(std::time::Duration::from_secs(10), reader.read(&mut buf))
            .await
            .expect("the line arrives")
            .unwrap();
        assert!(n > 0, "the console closed after {got:?}");
        got.extend_from_slice(&buf[..n]);
    }
    assert_eq!(got, b"hello \xff over rfc2217\r\n");
}

#[test]
fn a_busy_place_ends_as_infrastructure_at_the_deadline_and_ctrl_c_stops_the_wait() {
    let farm = Farm::start("sim-7");
    let repo = FixtureRepo::new();
    let state = tempfile::tempdir().unwrap();
    let held = farm.client_on_place(&["acquire"]);
    assert!(held.status.success(), "{}", text(&held));

    let mut late = fwfix_on(&farm, &repo, state.path(), "ringbuf");
    let out = late.args(["--lock-timeout", "2s"]).output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", text(&out));
    let said = text(&out);
    assert!(said.contains("acquired by test-host/test-user"), "{said}");
    assert!(said.contains("--lock-timeout"), "{said}");
    assert_eq!(
        records(state.path()),
        0,
        "nothing acquired, nothing recorded"
    );

    let mut waiting = fwfix_on(&farm, &repo, state.path(), "ringbuf");
    waiting
        .args(["--lock-timeout", "5m"])
        .stdout(Stdio::piped());
    let mut child = Killed(waiting.spawn().unwrap());
    let lines = BufReader::new(child.0.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    for line in lines.map_while(Result::ok) {
        let waits = line.contains("is acquired by");
        seen.push(line);
        if waits {
            let pid = nix::unistd::Pid::from_raw(child.0.id() as i32);
            nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
        }
    }
    let status = child.0.wait().unwrap();
    assert_eq!(status.code(), Some(3), "{seen:#?}");
    assert_eq!(records(state.path()), 0);
    assert!(farm.client_on_place(&["release"]).status.success());
}
