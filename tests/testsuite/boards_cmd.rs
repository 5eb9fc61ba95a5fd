//! `fwfix boards` and what it guards: board leases between real fwfix processes, and board health.
//! The board is a `backend = "board"` board run by the gdb method, with QEMU standing in for it
//! (gdbstub as the GDB server, UART0 on a TCP socket as ser2net would serve it), so runs on it
//! take the board's lease as runs on real hardware do. A run that must hold the board while the
//! test looks at it blocks in its `[flash] reset_command` until the test creates a file. Each test
//! has a state directory of its own.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers too should stop the test loudly on anything unexpected"
)]

use crate::board_backend::{free_port, Qemu};
use crate::common::{self, FixtureRepo};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

/// A firmware repository, a state directory, and a place for board files.
struct Lab {
    repo: FixtureRepo,
    state: tempfile::TempDir,
    bench: tempfile::TempDir,
}

impl Lab {
    fn new() -> Lab {
        Lab {
            repo: FixtureRepo::new(),
            state: tempfile::Builder::new()
                .prefix("fwfix-state-")
                .tempdir()
                .unwrap(),
            bench: tempfile::Builder::new()
                .prefix("fwfix-bench-")
                .tempdir()
                .unwrap(),
        }
    }

    fn fwfix(&self, args: &[&str]) -> Output {
        common::fwfix_command(args, self.repo.path(), self.state.path())
            .output()
            .unwrap()
    }

    /// Starts fwfix with `--json`; its events arrive on the returned channel.
    fn spawn(&self, args: &[&str]) -> (Child, Receiver<Value>) {
        let mut child = common::fwfix_command(args, self.repo.path(), self.state.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let event = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line}: {e}"));
                if tx.send(event).is_err() {
                    break;
                }
            }
        });
        (child, rx)
    }

    /// A board file named `mps2-an385` (the fixture's profiles build for `{machine}`, a board's
    /// name), whatever its file is called: every file here is the same board to the lease.
    fn board(&self, file: &str, body: &str) -> PathBuf {
        self.board_at(self.bench.path().join(file), body)
    }

    fn board_at(&self, path: PathBuf, body: &str) -> PathBuf {
        std::fs::write(
            &path,
            format!("name = \"mps2-an385\"\nbackend = \"board\"\n{body}"),
        )
        .unwrap();
        path
    }

    /// The board behind a QEMU paused for gdb, with its console on a socket. With `gate`, the
    /// reset before each load waits until that file exists.
    fn gdb_board(&self, file: &str, qemu: (u16, u16), gate: Option<&Path>) -> PathBuf {
        self.gdb_board_at(self.bench.path().join(file), qemu, gate)
    }

    fn gdb_board_at(&self, path: PathBuf, qemu: (u16, u16), gate: Option<&Path>) -> PathBuf {
        let reset = gate
            .map(|g| {
                format!(
                    "reset_command = \"while [ ! -e {} ]; do sleep 0.1; done\"\n",
                    g.display()
                )
            })
            .unwrap_or_default();
        self.board_at(
            path,
            &format!(
                "[flash]\nmethod = \"gdb\"\n{reset}[gdb]\nremote = \"127.0.0.1:{}\"\n\
                 [serial]\nport = \"socket://127.0.0.1:{}\"\n",
                qemu.0, qemu.1
            ),
        )
    }

    fn health(&self) -> Value {
        let text = std::fs::read_to_string(self.state.path().join("boards/mps2-an385.json"))
            .unwrap_or_else(|e| panic!("no health state: {e}"));
        serde_json::from_str(&text).unwrap()
    }

    fn listed(&self) -> Value {
        let out = self.fwfix(&["boards", "list", "--json"]);
        assert_eq!(out.status.code(), Some(0), "{}", common::text(&out));
        common::events(&out)
            .into_iter()
            .find(|row| row["name"] == "mps2-an385")
            .unwrap_or_else(|| panic!("no mps2-an385 row\n{}", common::text(&out)))
    }
}

/// A paused QEMU standing in for the board: (gdb port, console port).
fn qemu_board() -> (Qemu, (u16, u16)) {
    let (gdb, uart) = (free_port(), free_port());
    (Qemu::board(gdb, uart), (gdb, uart))
}

/// Listeners that accept connections (into their backlog) and never answer: enough for a run
/// that will not get past its reset.
fn silent_board() -> (TcpListener, TcpListener, (u16, u16)) {
    let gdb = TcpListener::bind("127.0.0.1:0").unwrap();
    let uart = TcpListener::bind("127.0.0.1:0").unwrap();
    let ports = (
        gdb.local_addr().unwrap().port(),
        uart.local_addr().unwrap().port(),
    );
    (gdb, uart, ports)
}

/// The next event `want` accepts; a generous guard against a hang, not a timing assertion.
fn wait_for(rx: &Receiver<Value>, what: &str, want: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(event) if want(&event) => return event,
            Ok(_) => {}
            Err(e) => panic!("no {what} event: {e}"),
        }
    }
}

fn is(name: &'static str) -> impl Fn(&Value) -> bool {
    move |e| e["event"] == name
}

/// Every event left, once the process has exited.
fn finish(mut child: Child, rx: Receiver<Value>) -> (Option<i32>, Vec<Value>) {
    let status = child.wait().unwrap();
    (status.code(), rx.iter().collect())
}

fn finished_run(events: &[Value]) -> PathBuf {
    let last = events.last().expect("events");
    assert_eq!(last["event"], "finished", "{last}");
    PathBuf::from(last["run_dir"].as_str().unwrap())
}

fn test_args<'a>(board: &'a Path, profile: &'a str) -> Vec<&'a str> {
    vec![
        "test",
        "--board",
        board.to_str().unwrap(),
        "--profile",
        profile,
        "--json",
    ]
}

fn assert_crc_verdict(report: &Value) {
    assert_eq!(report["status"], "FAILED", "{report:#}");
    assert_eq!(
        common::case(report, "test_crc16_known_vector")["status"],
        "FAIL",
        "{report:#}"
    );
}

#[test]
fn a_second_run_on_a_leased_board_waits_then_runs() {
    let lab = Lab::new();
    let (_qemu_a, ports_a) = qemu_board();
    let (_qemu_b, ports_b) = qemu_board();
    let go = lab.bench.path().join("go");
    let board_a = lab.gdb_board("a.toml", ports_a, Some(&go));
    let board_b = lab.gdb_board("b.toml", ports_b, None);

    let (first, first_rx) = lab.spawn(&test_args(&board_a, "crc"));
    let first_id = wait_for(&first_rx, "run_started", is("run_started"))["run_id"].clone();
    wait_for(&first_rx, "lease_acquired", is("lease_acquired"));

    let (second, second_rx) = lab.spawn(&test_args(&board_b, "crc"));
    let waiting = wait_for(&second_rx, "lease_waiting", is("lease_waiting"));
    assert_eq!(waiting["board"], "mps2-an385");
    assert_eq!(waiting["holder"]["run_id"], first_id, "{waiting}");
    assert_eq!(waiting["holder"]["pid"], first.id(), "{waiting}");
    assert_eq!(waiting["holder"]["command"], "test", "{waiting}");

    // The first run goes on past its reset; the second gets the board once it is done.
    std::fs::write(&go, "").unwrap();
    let (first_code, first_events) = finish(first, first_rx);
    assert_eq!(first_code, Some(1), "{first_events:#?}");
    let (second_code, second_events) = finish(second, second_rx);
    assert_eq!(second_code, Some(1), "{second_events:#?}");

    let first_report = common::report(&finished_run(&first_events));
    let second_report = common::report(&finished_run(&second_events));
    assert_crc_verdict(&first_report);
    assert_crc_verdict(&second_report);
    assert_eq!(first_report["lease"]["holder"]["run_id"], first_id);
    assert_eq!(second_report["lease"]["took_over"], Value::Null);
    // The second run held the board only after the first had finished with it.
    let taken: chrono::DateTime<chrono::Utc> =
        serde_json::from_value(second_report["lease"]["holder"]["started_at"].clone()).unwrap();
    let released: chrono::DateTime<chrono::Utc> =
        serde_json::from_value(first_report["finished_at"].clone()).unwrap();
    assert!(taken >= released, "{taken} < {released}");
    assert!(second_report["lease"]["waited_ms"].as_u64().unwrap() > 0);
    assert_eq!(lab.listed()["lease"]["state"], "free");
}

#[test]
fn a_busy_board_fails_after_the_lock_timeout_naming_its_holder_and_is_listed_as_held() {
    let lab = Lab::new();
    let (_gdb, _uart, ports) = silent_board();
    let go = lab.bench.path().join("go");
    // In the repository's boards/, so the listing knows its backend.
    let board = lab.gdb_board_at(
        lab.repo.path().join("boards/mps2-an385.toml"),
        ports,
        Some(&go),
    );

    let (holder, holder_rx) = lab.spawn(&test_args(&board, "math"));
    let holder_id = wait_for(&holder_rx, "run_started", is("run_started"))["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    wait_for(&holder_rx, "lease_acquired", is("lease_acquired"));

    let row = lab.listed();
    assert_eq!(row["backend"], "board", "{row}");
    assert_eq!(row["lease"]["state"], "held", "{row}");
    assert_eq!(
        row["lease"]["holder"]["run_id"],
        holder_id.as_str(),
        "{row}"
    );
    assert_eq!(row["lease"]["holder"]["pid"], holder.id(), "{row}");
    assert_eq!(row["health"]["state"], "unknown", "{row}");
    let text = lab.fwfix(&["boards", "list"]);
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    let line = text
        .lines()
        .find(|l| l.starts_with("mps2-an385 "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("board"), "{line}");
    assert!(line.contains("unknown"), "{line}");
    assert!(
        line.contains(&format!(
            "held by run {holder_id} (fwfix test, pid {}",
            holder.id()
        )),
        "{line}"
    );

    let mut args = test_args(&board, "math");
    args.extend(["--lock-timeout", "0"]);
    let busy = lab.fwfix(&args);
    assert_eq!(busy.status.code(), Some(4), "{}", common::text(&busy));
    let events = common::events(&busy);
    let message = events.last().unwrap()["message"].as_str().unwrap();
    assert!(
        message.contains(&format!(
            "board mps2-an385 is busy: leased by run {holder_id} (fwfix test, pid {}",
            holder.id()
        )),
        "{message}"
    );
    let report = common::report(&common::run_dir(&busy));
    assert_eq!(report["status"], "ERROR");
    assert_eq!(report["error_class"], "TEST_ENV_FAILURE");
    assert_eq!(report["lease"], Value::Null);

    let mut holder = holder;
    holder.kill().unwrap();
    holder.wait().unwrap();
    std::fs::write(&go, "").unwrap();
}

#[test]
fn the_lease_of_a_killed_run_is_taken_over_and_reported() {
    let lab = Lab::new();
    let (_gdb, _uart, silent) = silent_board();
    let go = lab.bench.path().join("go");
    let stuck = lab.gdb_board("stuck.toml", silent, Some(&go));
    let (_qemu, ports) = qemu_board();
    let board = lab.gdb_board("bench.toml", ports, None);

    let (mut killed, killed_rx) = lab.spawn(&test_args(&stuck, "crc"));
    let killed_id = wait_for(&killed_rx, "run_started", is("run_started"))["run_id"].clone();
    wait_for(&killed_rx, "lease_acquired", is("lease_acquired"));
    // SIGKILL, as the OOM killer or a power cut would: no cleanup runs. Its reset command lives
    // on, orphaned, and must not keep the lock.
    killed.kill().unwrap();
    killed.wait().unwrap();
    let row = lab.listed();
    assert_eq!(row["lease"]["state"], "stale", "{row}");
    assert_eq!(row["lease"]["holder"]["run_id"], killed_id, "{row}");

    let mut args = test_args(&board, "crc");
    args.extend(["--lock-timeout", "0"]);
    let next = lab.fwfix(&args);
    std::fs::write(&go, "").unwrap();
    assert_eq!(next.status.code(), Some(1), "{}", common::text(&next));
    let events = common::events(&next);
    let acquired = events
        .iter()
        .find(|e| e["event"] == "lease_acquired")
        .unwrap();
    assert_eq!(acquired["took_over"]["run_id"], killed_id, "{acquired}");
    assert_eq!(acquired["took_over"]["pid"], killed.id(), "{acquired}");
    let report = common::report(&common::run_dir(&next));
    assert_crc_verdict(&report);
    assert_eq!(report["lease"]["took_over"]["run_id"], killed_id);
    let note = format!(
        "taking over the lease of run {}",
        killed_id.as_str().unwrap()
    );
    assert!(
        report["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains(&note)),
        "{:#}",
        report["notes"]
    );
    assert_eq!(lab.listed()["lease"]["state"], "free");
}

#[test]
fn a_failed_health_check_marks_the_board_bad_and_runs_refuse_it_until_cleared() {
    let lab = Lab::new();
    let (_gdb, _uart, (_, uart)) = silent_board();
    let board = lab.board(
        "bench.toml",
        &format!(
            "[flash]\nmethod = \"command\"\ncommand = \"echo 'Error: no probe found' >&2; exit 1\"\n\
             [serial]\nport = \"socket://127.0.0.1:{uart}\"\n[health]\nprofile = \"math\"\n"
        ),
    );
    let board_arg = board.to_str().unwrap();

    let check = lab.fwfix(&["boards", "check", board_arg, "--json"]);
    assert_eq!(check.status.code(), Some(4), "{}", common::text(&check));
    let events = common::events(&check);
    let verdict = events
        .iter()
        .find(|e| e["event"] == "board_health")
        .unwrap_or_else(|| panic!("{}", common::text(&check)));
    assert_eq!(verdict["state"], "bad");
    let check_run = common::run_dir(&check);
    let health = lab.health();
    assert_eq!(health["state"], "bad");
    assert_eq!(
        health["run_id"].as_str().unwrap(),
        check_run.file_name().unwrap().to_str().unwrap()
    );
    let reason = health["reason"].as_str().unwrap();
    assert!(reason.starts_with("FLASH_FAILURE"), "{reason}");
    assert!(reason.contains("no probe found"), "{reason}");
    let row = lab.listed();
    assert_eq!(row["health"]["state"], "bad", "{row}");
    assert_eq!(row["lease"]["state"], "free", "{row}");

    // A run refuses the board before building anything.
    let refused = lab.fwfix(&test_args(&board, "math"));
    assert_eq!(refused.status.code(), Some(4), "{}", common::text(&refused));
    let message = common::events(&refused).last().unwrap()["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        message.contains("board mps2-an385 is bad since"),
        "{message}"
    );
    assert!(message.contains("no probe found"), "{message}");
    // The commands it suggests work as given: the board's file is not NAME.toml in a boards/
    // directory, so `check` is given its path; `set` takes the name health goes by.
    assert!(
        message.contains(&format!("fwfix boards check '{}'", board.display())),
        "{message}"
    );
    assert!(
        message.contains("fwfix boards set mps2-an385 good"),
        "{message}"
    );
    let refused_run = common::run_dir(&refused);
    assert!(!refused_run.join("iter-000/build.log").exists());
    assert_eq!(
        common::report(&refused_run)["error_class"],
        "TEST_ENV_FAILURE"
    );

    // --force runs anyway (and gets as far as the flasher), saying so.
    let mut forced_args = test_args(&board, "math");
    forced_args.push("--force");
    let forced = lab.fwfix(&forced_args);
    assert_eq!(forced.status.code(), Some(4), "{}", common::text(&forced));
    let forced_report = common::report(&common::run_dir(&forced));
    assert_eq!(
        forced_report["error_class"], "FLASH_FAILURE",
        "{forced_report:#}"
    );
    assert!(
        forced_report["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains("although it is bad")),
        "{:#}",
        forced_report["notes"]
    );
    // A normal run's infrastructure error leaves the health alone.
    assert_eq!(lab.health()["run_id"], health["run_id"]);

    // An operator clears it, by the name the refusal gave; runs get to the board again.
    // Maintenance refuses like bad.
    let set = lab.fwfix(&[
        "boards",
        "set",
        "mps2-an385",
        "good",
        "--reason",
        "probe replaced",
    ]);
    assert_eq!(set.status.code(), Some(0), "{}", common::text(&set));
    assert_eq!(lab.health()["state"], "good");
    assert_eq!(lab.health()["reason"], "probe replaced");
    let cleared = lab.fwfix(&test_args(&board, "math"));
    assert_eq!(
        common::report(&common::run_dir(&cleared))["error_class"],
        "FLASH_FAILURE"
    );
    assert_eq!(lab.health()["state"], "good");
    let set = lab.fwfix(&[
        "boards",
        "set",
        board_arg,
        "maintenance",
        "--reason",
        "rewiring",
    ]);
    assert_eq!(set.status.code(), Some(0), "{}", common::text(&set));
    let parked = lab.fwfix(&test_args(&board, "math"));
    assert_eq!(parked.status.code(), Some(4), "{}", common::text(&parked));
    let message = common::events(&parked).last().unwrap()["message"].clone();
    assert!(
        message
            .as_str()
            .unwrap()
            .contains("is in maintenance since"),
        "{message}"
    );
    let text = lab.fwfix(&["boards", "list"]);
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    assert!(text.contains("maintenance"), "{text}");
    assert!(text.contains("rewiring"), "{text}");

    let bad = lab.fwfix(&["boards", "set", board_arg, "unknown"]);
    assert_eq!(bad.status.code(), Some(2), "{}", common::text(&bad));
}

#[test]
fn a_resumed_run_on_a_board_gone_bad_ends_at_once_and_stays_resumable() {
    let lab = Lab::new();
    let (_qemu, ports) = qemu_board();
    let board = lab.gdb_board("bench.toml", ports, None);
    let board_arg = board.to_str().unwrap();
    let queue = common::fixture_queue(&["04-fixes-crc16.diff"]);
    let killed = lab.fwfix(&[
        "run",
        "--json",
        "--board",
        board_arg,
        "--profile",
        "crc",
        "--strategy",
        "queue",
        "--patches",
        queue.path().to_str().unwrap(),
        "--test-kill-at",
        "BUILD_RUN@1",
    ]);
    assert_eq!(killed.status.code(), None, "{}", common::text(&killed));
    let run = std::fs::read_dir(lab.repo.path().join(".fwfix/runs"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let run_arg = run.to_str().unwrap();

    // Someone takes the board out of service before the run is resumed.
    let set = lab.fwfix(&["boards", "set", board_arg, "bad", "--reason", "loose cable"]);
    assert_eq!(set.status.code(), Some(0), "{}", common::text(&set));
    let context = std::fs::read_to_string(run.join("context.json")).unwrap();
    let trace = std::fs::read_to_string(run.join("trace.jsonl")).unwrap();
    let refused = lab.fwfix(&["resume", "--json", run_arg]);
    assert_eq!(refused.status.code(), Some(4), "{}", common::text(&refused));
    let said = common::text(&refused);
    assert!(said.contains("loose cable"), "{said}");
    assert!(said.contains("resume it once the board is free"), "{said}");
    // Not a retry, not a failure: the run is as the kill left it.
    assert_eq!(
        std::fs::read_to_string(run.join("context.json")).unwrap(),
        context
    );
    assert_eq!(
        std::fs::read_to_string(run.join("trace.jsonl")).unwrap(),
        trace
    );

    let set = lab.fwfix(&["boards", "set", board_arg, "good"]);
    assert_eq!(set.status.code(), Some(0), "{}", common::text(&set));
    // The killed run used up its QEMU's one console connection: the board comes back fresh.
    let (_qemu, ports) = qemu_board();
    lab.gdb_board("bench.toml", ports, None);
    let resumed = lab.fwfix(&["resume", "--json", run_arg]);
    assert_eq!(resumed.status.code(), Some(0), "{}", common::text(&resumed));
    assert_eq!(common::report(&run)["status"], "SUCCESS");
    let audit = lab.fwfix(&["audit", run_arg]);
    assert_eq!(audit.status.code(), Some(0), "{}", common::text(&audit));
}

/// Regression: a board file in the repository's boards/ that does not load was listed with `?`
/// and no reason, and `boards check` without a board skipped it silently, so a typo took a board
/// out of the nightly health check without anyone being told.
#[test]
fn a_board_file_that_does_not_load_is_listed_with_its_error_and_fails_the_check_of_all() {
    let lab = Lab::new();
    lab.repo.write(
        "boards/bench.toml",
        "name = \"bench\"\nbackend = \"board\"\n[flash]\nmethod = \"gdb\"\n[gdb]\n\
         remote = \"127.0.0.1:3333\"\nstart = \"bogus\"\n[serial]\nport = \"socket://127.0.0.1:9\"\n",
    );
    let where_ = "boards/bench.toml:7:9";

    let list = lab.fwfix(&["boards", "list"]);
    assert_eq!(list.status.code(), Some(0), "{}", common::text(&list));
    let printed = String::from_utf8_lossy(&list.stdout);
    assert!(printed.contains(where_), "{printed}");
    assert!(printed.contains("unknown start `bogus`"), "{printed}");
    let rows = common::events(&lab.fwfix(&["boards", "list", "--json"]));
    let row = rows.iter().find(|r| r["name"] == "bench").unwrap();
    assert!(row["error"].as_str().unwrap().contains(where_), "{row}");
    let shipped = rows
        .iter()
        .find(|r| r["name"] == "qemu-mps2-an385")
        .unwrap();
    assert!(shipped.get("error").is_none(), "{shipped}");

    let check = lab.fwfix(&["boards", "check"]);
    assert_eq!(check.status.code(), Some(2), "{}", common::text(&check));
    let stderr = String::from_utf8_lossy(&check.stderr);
    assert!(stderr.contains(where_), "{stderr}");
    assert!(!lab.repo.path().join(".fwfix").exists());
}
