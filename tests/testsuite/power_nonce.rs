//! Board power control and the run nonce, end to end through `fwfix test`. QEMU stands in for
//! the board as in `board_backend` (its gdbstub is the GDB server, its UART a TCP console); the
//! `[power]` commands are real shell scripts that record how they were called; a real TCP relay
//! plays a console server that still holds an earlier run's output. Every test fails loudly when
//! qemu-system-arm, arm-none-eabi-gcc, gdb-multiarch, socat or make is missing.

use crate::board_backend::{free_port, processes_mentioning, Qemu};
use crate::common::require_tools;
use crate::common::{case, fwfix, report, run_dir, text, FixtureRepo};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};

/// A scratch directory outside the repository for board files, profiles and power scripts.
struct Bench {
    dir: tempfile::TempDir,
}

impl Bench {
    fn new() -> Bench {
        Bench {
            dir: tempfile::Builder::new()
                .prefix("fwfix-power-")
                .tempdir()
                .unwrap(),
        }
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    /// A power script that appends its arguments and `FWFIX_BOARD` to `power-calls.txt`.
    fn power_script(&self) -> PathBuf {
        let record = self.dir.path().join("power-calls.txt");
        self.write(
            "power.sh",
            &format!(
                "echo \"$* board=$FWFIX_BOARD\" >> '{}'\necho \"relay: $1 done\"\n",
                record.display()
            ),
        )
    }

    /// The power scripts' calls, one line each.
    fn power_calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join("power-calls.txt"))
            .unwrap_or_default()
            .lines()
            .map(String::from)
            .collect()
    }
}

/// A board named after the QEMU machine (the fixture's profiles build for `{machine}`), loaded
/// through QEMU's gdbstub, console on a TCP socket, with the extra tables given.
fn board_file(bench: &Bench, gdb: u16, console: u16, extra: &str) -> PathBuf {
    bench.write(
        "board.toml",
        &format!(
            "name = \"mps2-an385\"\nbackend = \"board\"\n[flash]\nmethod = \"gdb\"\n\
             [gdb]\nremote = \"127.0.0.1:{gdb}\"\n\
             [serial]\nport = \"socket://127.0.0.1:{console}\"\n{extra}"
        ),
    )
}

/// The fixture's hanging image with a short timeout.
fn hang_profile(bench: &Bench) -> PathBuf {
    bench.write(
        "hang.toml",
        "name = \"hang\"\n[build]\ncommand = \"make BOARD={machine} build/{machine}/test_event.elf\"\n\
         artifact = \"build/{machine}/test_event.elf\"\n[test]\nharness = \"unity\"\ntimeout_s = 2\n",
    )
}

fn fwfix_test(repo: &FixtureRepo, board: &Path, profile: &Path) -> std::process::Output {
    fwfix(
        &[
            "test",
            "--repo",
            repo.path().to_str().unwrap(),
            "--board",
            board.to_str().unwrap(),
            "--profile",
            profile.to_str().unwrap(),
            "--json",
        ],
        repo.path(),
    )
}

fn trace(run: &Path) -> Vec<Value> {
    std::fs::read_to_string(run.join("trace.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn edges(trace: &[Value], from: &str, to: &str) -> Vec<Value> {
    trace
        .iter()
        .filter(|t| t["from"] == from && t["to"] == to)
        .cloned()
        .collect()
}

fn has_evidence(line: &Value, path: &str) -> bool {
    line["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e.as_str() == Some(path))
}

fn power_board(bench: &Bench, gdb: u16, console: u16, power: &str) -> PathBuf {
    board_file(bench, gdb, console, &format!("[power]\n{power}"))
}

#[test]
fn a_hung_board_is_switched_off_and_on_once_then_its_hang_is_trusted() {
    let repo = FixtureRepo::new();
    require_tools();
    let bench = Bench::new();
    let script = bench.power_script();
    let (gdb, uart) = (free_port(), free_port());
    let qemu = Qemu::board(gdb, uart);
    let s = script.display();
    let board = power_board(
        &bench,
        gdb,
        uart,
        &format!("on = \"sh {s} on {{board}}\"\noff = \"sh {s} off {{board}}\"\noff_s = 0.2\n"),
    );
    let out = fwfix_test(&repo, &board, &hang_profile(&bench));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(
        bench.power_calls(),
        vec![
            "on mps2-an385 board=mps2-an385",
            "off mps2-an385 board=mps2-an385",
            "on mps2-an385 board=mps2-an385",
        ]
    );

    let run = run_dir(&out);
    let report = report(&run);
    assert_eq!(report["status"], "FAILED", "{report:#}");
    assert_eq!(case(&report, "test_event_wait_for_tick")["status"], "HANG");
    let cycles = report["power_cycles"].as_array().unwrap();
    assert_eq!(cycles.len(), 1, "{report:#}");
    assert_eq!(cycles[0]["attempt"], 1);
    assert_eq!(cycles[0]["log"], "iter-000/power.log");
    assert!(cycles[0]["reason"]
        .as_str()
        .unwrap()
        .contains("power-cycling once before trusting the hang"));

    let trace = trace(&run);
    let hung = edges(&trace, "TEST_RUN", "ERROR_RECOVERY");
    assert_eq!(hung.len(), 1, "{trace:#?}");
    assert_eq!(hung[0]["error_class"], "TEST_ENV_FAILURE");
    assert_eq!(
        hung[0]["reason"],
        "the board hung; power-cycling once before trusting the hang"
    );
    assert!(has_evidence(&hung[0], "iter-000/console-hung.log"));
    assert_eq!(edges(&trace, "ERROR_RECOVERY", "TEST_SETUP").len(), 1);
    let setups = edges(&trace, "TEST_SETUP", "TEST_RUN");
    assert_eq!(setups.len(), 2, "{trace:#?}");
    assert!(has_evidence(&setups[0], "iter-000/power-on.log"));
    assert!(has_evidence(&setups[1], "iter-000/power.log"));
    assert_eq!(edges(&trace, "TEST_RUN", "RESULT_COLLECTION").len(), 1);

    let power_log = std::fs::read_to_string(run.join("iter-000/power.log")).unwrap();
    assert!(power_log.contains("relay: off done"), "{power_log}");
    assert!(power_log.contains("[power] off_s"), "{power_log}");
    let hung_console = std::fs::read_to_string(run.join("iter-000/console-hung.log")).unwrap();
    assert!(hung_console.contains("test_event"), "{hung_console}");

    let audit = fwfix(&["audit", run.to_str().unwrap()], repo.path());
    assert_eq!(audit.status.code(), Some(0), "{}", text(&audit));
    drop(qemu);
    assert!(!processes_mentioning(&run.display().to_string())
        .iter()
        .any(|p| p.contains("gdb")));
}

#[test]
fn a_cycle_command_is_preferred_and_retry_on_hang_false_trusts_the_first_hang() {
    let repo = FixtureRepo::new();
    require_tools();
    let bench = Bench::new();
    let script = bench.power_script();
    let (gdb, uart) = (free_port(), free_port());
    let _qemu = Qemu::board(gdb, uart);
    let s = script.display();
    let commands = format!(
        "on = \"sh {s} on {{board}}\"\noff = \"sh {s} off {{board}}\"\ncycle = \"sh {s} cycle {{board}}\"\n"
    );
    let profile = hang_profile(&bench);

    let board = power_board(&bench, gdb, uart, &commands);
    let out = fwfix_test(&repo, &board, &profile);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(
        bench.power_calls(),
        vec![
            "on mps2-an385 board=mps2-an385",
            "cycle mps2-an385 board=mps2-an385",
        ]
    );

    std::fs::remove_file(bench.dir.path().join("power-calls.txt")).unwrap();
    let board = power_board(
        &bench,
        gdb,
        uart,
        &format!("{commands}retry_on_hang = false\n"),
    );
    let out = fwfix_test(&repo, &board, &profile);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(bench.power_calls(), vec!["on mps2-an385 board=mps2-an385"]);
    let run = run_dir(&out);
    let report = report(&run);
    assert_eq!(report["power_cycles"], serde_json::json!([]));
    assert_eq!(case(&report, "test_event_wait_for_tick")["status"], "HANG");
    assert!(edges(&trace(&run), "TEST_RUN", "ERROR_RECOVERY").is_empty());
}

#[test]
fn a_failing_power_command_is_an_infrastructure_error_with_its_output() {
    let repo = FixtureRepo::new();
    require_tools();
    let bench = Bench::new();
    let (gdb, uart) = (free_port(), free_port());
    let _qemu = Qemu::board(gdb, uart);
    let board = power_board(
        &bench,
        gdb,
        uart,
        "on = \"echo 'PDU outlet 4: no answer' >&2; exit 2\"\n",
    );
    let out = fwfix_test(&repo, &board, &hang_profile(&bench));
    assert_eq!(out.status.code(), Some(4), "{}", text(&out));
    let run = run_dir(&out);
    let report = report(&run);
    assert_eq!(report["error_class"], "TEST_ENV_FAILURE", "{report:#}");
    assert!(
        report["message"]
            .as_str()
            .unwrap()
            .contains("PDU outlet 4: no answer"),
        "{report:#}"
    );
    let log = std::fs::read_to_string(run.join("iter-000/power-on.log")).unwrap();
    assert!(log.contains("PDU outlet 4: no answer"), "{log}");
}

#[test]
fn a_qemu_run_prints_its_nonce_first_and_the_report_records_it() {
    let repo = FixtureRepo::new();
    require_tools();
    let out = fwfix(
        &[
            "test",
            "--repo",
            repo.path().to_str().unwrap(),
            "--board",
            "qemu-mps2-an385",
            "--profile",
            "crc",
            "--json",
        ],
        repo.path(),
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let run = run_dir(&out);
    let report = report(&run);
    let nonce = &report["attempts"][0]["nonce"];
    assert_eq!(nonce["check"], "offered", "{report:#}");
    assert_eq!(nonce["seen"], true);
    assert_eq!(nonce["stale_lines"], 0);
    let value = nonce["value"].as_str().unwrap();
    assert_eq!(value.len(), 16);
    let console = std::fs::read_to_string(run.join("iter-000/console.log")).unwrap();
    let first_uart = console.lines().find(|l| l.contains("] uart  ")).unwrap();
    assert!(
        first_uart.ends_with(&format!("uart  fwfix-nonce: {value}")),
        "{console}"
    );
}

/// What "an earlier run" left on a console server: a complete, passing transcript.
const STALE_PASS: &str = "tests/test_crc.c:11:test_crc8_known_vector:PASS\r\n\
tests/test_crc.c:23:test_crc16_known_vector:PASS\r\n\
\r\n\
-----------------------\r\n\
2 Tests 0 Failures 0 Ignored \r\n\
OK\r\n";

/// A console server that still holds an earlier run's output: each client first gets `stale`,
/// then is joined both ways to QEMU's UART on `uart`.
fn stale_console(uart: u16) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let mut client = client;
            if client.write_all(STALE_PASS.as_bytes()).is_err() {
                continue;
            }
            let Ok(board) = TcpStream::connect(("127.0.0.1", uart)) else {
                continue;
            };
            let (mut from_client, mut to_board) =
                (client.try_clone().unwrap(), board.try_clone().unwrap());
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut from_client, &mut to_board);
                let _ = to_board.shutdown(Shutdown::Both);
            });
            let (mut from_board, mut to_client) = (board, client);
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = from_board.read(&mut buf) {
                    if n == 0 || to_client.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
                let _ = to_client.shutdown(Shutdown::Both);
            });
        }
    });
    port
}

#[test]
fn stale_passing_output_on_a_serial_console_never_passes_a_failing_image() {
    let repo = FixtureRepo::new();
    require_tools();
    let bench = Bench::new();
    let (gdb, uart) = (free_port(), free_port());
    let _qemu = Qemu::board(gdb, uart);
    let console = stale_console(uart);
    let board = board_file(&bench, gdb, console, "nonce = true\n");
    let profile = bench.write(
        "crc-uart.toml",
        "name = \"crc-uart\"\n[build]\n\
         command = \"make NONCE=uart BOARD={machine} build/{machine}-nonce-uart/test_crc.elf\"\n\
         artifact = \"build/{machine}-nonce-uart/test_crc.elf\"\n[test]\nharness = \"unity\"\ntimeout_s = 20\n",
    );
    let out = fwfix_test(&repo, &board, &profile);
    let run = run_dir(&out);
    let console = std::fs::read_to_string(run.join("iter-000/console.log")).unwrap();
    assert_eq!(out.status.code(), Some(1), "{}\n{console}", text(&out));
    let report = report(&run);
    assert_eq!(report["status"], "FAILED", "{report:#}");
    assert_eq!(case(&report, "test_crc16_known_vector")["status"], "FAIL");
    let nonce = &report["attempts"][0]["nonce"];
    assert_eq!(nonce["check"], "required", "{report:#}");
    assert_eq!(nonce["seen"], true);
    assert_eq!(nonce["stale_lines"], 6);
    let value = nonce["value"].as_str().unwrap();
    assert!(console.contains("] stale OK"), "{console}");
    assert!(
        console.contains(&format!(
            "] host  fwfix: sent fwfix-nonce={value} to the console"
        )),
        "{console}"
    );
    let live = console
        .find(&format!("] uart  fwfix-nonce: {value}"))
        .unwrap_or_else(|| panic!("{console}"));
    assert!(console[..live].contains("stale tests/test_crc.c:23:test_crc16_known_vector:PASS"));
    assert!(console[live..].contains("test_crc16_known_vector:FAIL"));
}

#[test]
fn a_required_nonce_that_never_comes_is_an_infrastructure_error_not_a_pass() {
    let repo = FixtureRepo::new();
    require_tools();
    let bench = Bench::new();
    let (gdb, uart) = (free_port(), free_port());
    let _qemu = Qemu::board(gdb, uart);
    let console = stale_console(uart);
    // The image is not built to read a nonce: it never prints one. It exits at its end, and
    // QEMU with it, so there is no retry to give.
    let board = board_file(&bench, gdb, console, "nonce = true\n");
    let profile = bench.write(
        "math.toml",
        "name = \"math\"\n[build]\ncommand = \"make BOARD={machine} build/{machine}/test_math.elf\"\n\
         artifact = \"build/{machine}/test_math.elf\"\n[test]\nharness = \"unity\"\ntimeout_s = 20\n\
         [recovery]\ntest_env_failure = 0\n",
    );
    let out = fwfix_test(&repo, &board, &profile);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out));
    let report = report(&run_dir(&out));
    assert_eq!(report["status"], "ERROR", "{report:#}");
    assert_eq!(report["error_class"], "TEST_ENV_FAILURE");
    assert!(
        report["message"]
            .as_str()
            .unwrap()
            .contains("never printed this run's nonce"),
        "{report:#}"
    );
}
