//! The approval gate on a real terminal: `ui::TerminalApprover` reads and writes the slave side of a
//! pty, the test answers on the master side as a person at the keyboard would, and `e` runs a
//! real editor through `$EDITOR`. Then the same through the real `fwfix run --approve always`
//! binary with the pty as its terminal, on real builds and QEMU: a no with a reason, an edit, and
//! an edit the path checks refuse. Every wait is bounded, so a gate that hangs fails the test
//! instead of stalling the suite.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by panicking

use crate::common::*;
use fwfix::config::{BuiltinDeny, PolicySpec};
use fwfix::policy::{evaluate, ApprovalRequest, Choice, DecidedBy, Decision, Review, Verdict};
use fwfix::ui::TerminalApprover;
use std::fs::{self, File};
use std::io::{BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Output, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

const FIX: &str = include_str!("../../fixtures/fwtests/patches/04-fixes-crc16.diff");
const PROMPT: &str = "Apply this patch? [y]es / [n]o (with a reason) / [e]dit: ";
const LIMIT: Duration = Duration::from_secs(30);
/// For whole runs: builds and QEMU runs come before and between the questions.
const RUN_LIMIT: Duration = Duration::from_secs(180);

fn spec() -> PolicySpec {
    PolicySpec {
        allow: vec!["src/**".into()],
        deny: vec![],
        max_changed_lines: 60,
        max_changed_files: 5,
        allow_builtin: vec![],
    }
}

/// The master side of a pty, as a person at the keyboard has it: what the program on the slave
/// side showed, and keys to type.
struct Terminal {
    master: Option<File>,
    transcript: Arc<Mutex<Vec<u8>>>,
    /// How far `wait_for` has read: each wait looks past what the one before it found.
    seen: usize,
}

impl Terminal {
    /// A new pty and its slave side. With `drain`, a thread keeps reading what the program shows
    /// (as a terminal would); without it, the test may close the master at once.
    fn open(drain: bool) -> (Terminal, File) {
        let pty = nix::pty::openpty(None, None).expect("openpty");
        let master = File::from(pty.master);
        let transcript = Arc::new(Mutex::new(Vec::new()));
        if drain {
            let mut reader = master.try_clone().unwrap();
            let sink = Arc::clone(&transcript);
            thread::spawn(move || {
                let mut buf = [0u8; 4096];
                // Ends with EIO once every holder of the slave side has closed it.
                while let Ok(n @ 1..) = reader.read(&mut buf) {
                    sink.lock().unwrap().extend_from_slice(&buf[..n]);
                }
            });
        }
        let terminal = Terminal {
            master: Some(master),
            transcript,
            seen: 0,
        };
        (terminal, File::from(pty.slave))
    }

    /// What the terminal showed so far, with the pty's `\r\n` as `\n`.
    fn shown(&self) -> String {
        String::from_utf8_lossy(&self.transcript.lock().unwrap()).replace("\r\n", "\n")
    }

    /// Waits until the terminal shows `needle` after what the last wait found.
    fn wait_for(&mut self, needle: &str) {
        let deadline = Instant::now() + RUN_LIMIT;
        loop {
            let shown = self.shown();
            if let Some(at) = shown.get(self.seen..).and_then(|rest| rest.find(needle)) {
                self.seen += at + needle.len();
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the terminal never showed {needle:?}; it showed:\n{shown}"
            );
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// Types `keys` as a person would.
    fn type_keys(&mut self, keys: &str) {
        let master = self.master.as_mut().expect("master still open");
        master.write_all(keys.as_bytes()).unwrap();
        master.flush().unwrap();
    }

    fn hang_up(&mut self) {
        self.master = None;
    }
}

/// A pty with the approver on its slave side, running on its own thread.
struct Session {
    terminal: Terminal,
    decision: mpsc::Receiver<Result<Decision, String>>,
}

impl std::ops::Deref for Session {
    type Target = Terminal;
    fn deref(&self) -> &Terminal {
        &self.terminal
    }
}

impl std::ops::DerefMut for Session {
    fn deref_mut(&mut self) -> &mut Terminal {
        &mut self.terminal
    }
}

impl Session {
    /// Starts the approver on `diff`; `drain` as for [`Terminal::open`].
    fn start(diff: &str, drain: bool) -> Session {
        Session::start_with_editor(diff, drain, None)
    }

    /// As `start`, with `editor` run for `e` instead of the person's `$EDITOR` (the suite's
    /// threads share one environment, so the tests never change it).
    fn start_with_editor(diff: &str, drain: bool, editor: Option<String>) -> Session {
        let (terminal, slave) = Terminal::open(drain);
        let slave_out = slave.try_clone().unwrap();
        let (tx, rx) = mpsc::channel();
        let diff = diff.to_string();
        thread::spawn(move || {
            let review = evaluate(&diff, &spec());
            let request = ApprovalRequest {
                diff: &diff,
                review: &review,
                iteration: 1,
                origin: "queue: 04-fixes-crc16.diff",
            };
            let mut terminal = TerminalApprover::new(BufReader::new(slave), slave_out, false);
            if let Some(editor) = editor {
                terminal = terminal.with_editor(editor);
            }
            let result = terminal.ask(&request).map_err(|e| e.to_string());
            // The pty's slave closes here, which ends the drain thread.
            drop(terminal);
            let _ = tx.send(result);
        });
        Session {
            terminal,
            decision: rx,
        }
    }

    fn decision(&self) -> Decision {
        match self.decision.recv_timeout(LIMIT) {
            Ok(result) => result.expect("the approver failed"),
            Err(_) => panic!(
                "the approver did not decide within {LIMIT:?}; the terminal showed:\n{}",
                self.shown()
            ),
        }
    }
}

/// The real `fwfix run` with a pty for its terminal — stdin, and stderr where the question is
/// asked — and its `--json` events on a pipe.
struct RunOnTerminal {
    terminal: Terminal,
    child: std::process::Child,
    events: thread::JoinHandle<Vec<u8>>,
    _state: tempfile::TempDir,
}

impl std::ops::Deref for RunOnTerminal {
    type Target = Terminal;
    fn deref(&self) -> &Terminal {
        &self.terminal
    }
}

impl std::ops::DerefMut for RunOnTerminal {
    fn deref_mut(&mut self) -> &mut Terminal {
        &mut self.terminal
    }
}

impl RunOnTerminal {
    /// Starts `fwfix run --json --approve always` on the crc profile with the patch queue
    /// `patches`, and `editor` as the person's `$EDITOR`.
    fn start(repo: &FixtureRepo, patches: &Path, editor: &str) -> RunOnTerminal {
        let state = tempfile::tempdir().unwrap();
        let (terminal, slave) = Terminal::open(true);
        let args = [
            "run",
            "--json",
            "--board",
            "qemu-mps2-an385",
            "--profile",
            "crc",
            "--strategy",
            "queue",
            "--patches",
            patches.to_str().unwrap(),
            "--approve",
            "always",
        ];
        let mut command = fwfix_command(&args, repo.path(), state.path());
        command
            .env("EDITOR", editor)
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave))
            .stdout(Stdio::piped());
        let mut child = command.spawn().unwrap();
        // Only the child holds the slave side now, so the terminal closes when it ends.
        drop(command);
        let mut stdout = child.stdout.take().unwrap();
        let events = thread::spawn(move || {
            let mut out = Vec::new();
            stdout.read_to_end(&mut out).unwrap();
            out
        });
        RunOnTerminal {
            terminal,
            child,
            events,
            _state: state,
        }
    }

    /// Waits for the run to end: its exit status, events, and what the terminal showed.
    fn finish(mut self) -> Output {
        let deadline = Instant::now() + RUN_LIMIT;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!(
                    "fwfix did not finish within {RUN_LIMIT:?}; the terminal showed:\n{}",
                    self.shown()
                );
            }
            thread::sleep(Duration::from_millis(20));
        };
        Output {
            status,
            stdout: self.events.join().unwrap(),
            stderr: self.terminal.shown().into_bytes(),
        }
    }
}

fn human(decision: &Decision) -> bool {
    matches!(&decision.decided_by, DecidedBy::Human { user } if !user.is_empty())
}

#[test]
fn yes_approves_after_showing_the_patch_findings_and_risk() {
    let mut s = Session::start(FIX, true);
    s.wait_for(PROMPT);
    let shown = s.shown();
    assert!(
        shown.contains("fwfix: patch for iteration 1 from queue: 04-fixes-crc16.diff\n"),
        "{shown}"
    );
    assert!(shown.contains("\n-    uint16_t crc = 0x0000u;\n+    uint16_t crc = 0xFFFFu;\n"));
    assert!(shown.contains("Policy: allowed, 0 denials, 0 warnings\n"));
    assert!(shown.contains("Risk: 0.00\n"));
    assert!(!shown.contains('\x1b'), "colour was not allowed");
    s.type_keys("y\n");
    let d = s.decision();
    assert_eq!(d.choice, Choice::Approved);
    assert!(human(&d), "{d:?}");
}

#[test]
fn no_asks_for_the_reason_and_keeps_it() {
    let risky = "--- a/src/uart.c\n+++ b/src/uart.c\n@@ -40,2 +40,2 @@ void USART1_IRQHandler(void)\n {\n-    n++;\n+    n += 2;\n";
    let mut s = Session::start(risky, true);
    s.wait_for(PROMPT);
    assert!(s.shown().contains("interrupt (+0.30)"), "{}", s.shown());
    s.type_keys("n\n");
    s.wait_for("Why not?");
    s.type_keys("it counts every byte twice\n");
    let d = s.decision();
    assert_eq!(
        d.choice,
        Choice::Rejected {
            reason: "it counts every byte twice".into()
        }
    );
    assert!(human(&d));
}

fn editor_script(dir: &Path, name: &str, sed: &str) -> String {
    let path = dir.join(name);
    fs::write(&path, format!("#!/bin/sh\nsed -i '{sed}' \"$1\"\n")).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn edit_runs_editor_on_the_patch_and_returns_it_for_another_review() {
    let tmp = tempfile::tempdir().unwrap();
    let editor = editor_script(tmp.path(), "fix-editor", "s/0xFFFFu/0x1D0Fu/");
    let mut s = Session::start_with_editor(FIX, true, Some(editor.clone()));
    s.wait_for(PROMPT);
    s.type_keys("e\n");
    let d = s.decision();
    let Choice::Edited { diff } = &d.choice else {
        panic!("not edited: {d:?}\n{}", s.shown())
    };
    assert!(human(&d));
    assert!(diff.contains("+    uint16_t crc = 0x1D0Fu;\n"), "{diff}");
    assert!(s
        .shown()
        .contains(&format!("Opening the patch in `{editor}`")));
    // The caller checks what the person wrote like any other patch.
    assert_eq!(evaluate(diff, &spec()).verdict, Verdict::Allow);
}

#[test]
fn an_edit_that_touches_a_test_is_caught_by_the_second_review() {
    let tmp = tempfile::tempdir().unwrap();
    let editor = editor_script(
        tmp.path(),
        "sneaky-editor",
        "s#src/crc.c#tests/test_crc.c#g",
    );
    let mut s = Session::start_with_editor(FIX, true, Some(editor.clone()));
    s.wait_for(PROMPT);
    s.type_keys("e\n");
    let d = s.decision();
    let Choice::Edited { diff } = &d.choice else {
        panic!("not edited: {d:?}\n{}", s.shown())
    };
    let again: Review = evaluate(diff, &spec());
    assert_eq!(again.verdict, Verdict::Deny);
    assert!(again
        .findings
        .iter()
        .any(|f| f.rule == fwfix::policy::builtin_rule(BuiltinDeny::Tests)));
}

#[test]
fn end_of_input_rejects_with_no_answer_instead_of_waiting() {
    let mut s = Session::start(FIX, true);
    s.wait_for(PROMPT);
    // Ctrl-D on an empty line: the terminal's end of input.
    s.type_keys("\x04");
    let d = s.decision();
    assert_eq!(
        d.choice,
        Choice::Rejected {
            reason: "no answer".into()
        }
    );
    assert_eq!(d.decided_by, DecidedBy::Policy, "nobody answered");
}

#[test]
fn a_terminal_that_hangs_up_rejects_with_no_answer() {
    let mut s = Session::start(FIX, false);
    s.hang_up();
    let d = s.decision();
    assert_eq!(
        d.choice,
        Choice::Rejected {
            reason: "no answer".into()
        }
    );
}

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(
        &fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .unwrap()
}

#[test]
fn a_person_says_no_with_a_reason_at_fwfix_runs_prompt_and_the_next_analysis_has_it() {
    let repo = FixtureRepo::new();
    // One round of two: the fix is the smaller diff and is asked about first.
    let q = fixture_queue(&["03-regresses-crc32.diff", "04-fixes-crc16.diff"]);
    let mut run = RunOnTerminal::start(&repo, q.path(), "false");
    run.wait_for("fwfix: patch for iteration 1 from 04-fixes-crc16.diff");
    run.wait_for(PROMPT);
    run.type_keys("n\n");
    run.wait_for("Why not?");
    run.type_keys("XMODEM starts at zero; look at the table instead\n");
    run.wait_for("fwfix: patch for iteration 2 from 03-regresses-crc32.diff");
    run.wait_for(PROMPT);
    run.type_keys("y\n");
    let out = run.finish();
    // The second candidate breaks CRC-32 and nothing is left to try.
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let dir = run_dir(&out);

    let first = read_json(&dir.join("iter-001/review.json"));
    assert_eq!(first["decision"], "rejected", "{first:#}");
    assert_eq!(first["decided_by"]["kind"], "human", "{first:#}");
    assert_eq!(
        first["reason"],
        "XMODEM starts at zero; look at the table instead"
    );
    let hints = &read_json(&dir.join("iter-001/analysis.json"))["hints"];
    assert_eq!(
        hints,
        &serde_json::json!([
            "a reviewer rejected iteration 1's candidate (04-fixes-crc16.diff): XMODEM starts at \
             zero; look at the table instead"
        ])
    );
    let second = read_json(&dir.join("iter-002/review.json"));
    assert_eq!(
        (
            second["decision"].as_str(),
            second["decided_by"]["kind"].as_str()
        ),
        (Some("approved"), Some("human")),
        "{second:#}"
    );
    let lines = trace(&dir);
    let rejected = lines
        .iter()
        .find(|l| l["from"] == "PATCH_REVIEW" && l["iteration"] == 1)
        .unwrap();
    assert_eq!(rejected["to"], "CODE_ANALYSIS", "{rejected}");
    assert!(
        rejected["reason"]
            .as_str()
            .unwrap()
            .contains("(a person): XMODEM starts at zero"),
        "{rejected}"
    );
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
}

#[test]
fn a_persons_edit_at_fwfix_runs_prompt_is_checked_again_and_is_what_gets_applied() {
    let repo = FixtureRepo::new();
    let q = fixture_queue(&["04-fixes-crc16.diff"]);
    let tmp = tempfile::tempdir().unwrap();
    let editor = editor_script(tmp.path(), "fix-editor", "s/0xFFFFu;/0xFFFFU;/");
    let mut run = RunOnTerminal::start(&repo, q.path(), &editor);
    run.wait_for(PROMPT);
    run.type_keys("e\n");
    let out = run.finish();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let dir = run_dir(&out);
    let review = read_json(&dir.join("iter-001/review.json"));
    assert_eq!(
        (
            review["decision"].as_str(),
            review["decided_by"]["kind"].as_str()
        ),
        (Some("edited"), Some("human")),
        "{review:#}"
    );
    // The policy's verdict in the record is the one on the edited patch.
    assert_eq!(review["verdict"], "allow", "{review:#}");
    let patch = fs::read_to_string(dir.join("iter-001/patch.diff")).unwrap();
    assert!(patch.contains("+    uint16_t crc = 0xFFFFU;"), "{patch}");
    let fix = fs::read_to_string(report(&dir)["patch"].as_str().unwrap()).unwrap();
    assert!(fix.contains("+    uint16_t crc = 0xFFFFU;"), "{fix}");
    let approved = trace(&dir)
        .into_iter()
        .find(|l| l["from"] == "PATCH_REVIEW")
        .unwrap();
    assert_eq!(approved["to"], "PATCH_APPLY", "{approved}");
    assert!(
        approved["reason"]
            .as_str()
            .unwrap()
            .ends_with("(edited by a person)"),
        "{approved}"
    );
}

#[test]
fn an_edit_through_a_symlinked_directory_is_refused_in_review_before_it_is_applied() {
    let repo = FixtureRepo::new();
    // `src/alias` leads back into `src`: the policy's globs allow `src/alias/crc.c`, only the
    // check against the real tree sees the symlink.
    std::os::unix::fs::symlink(".", repo.path().join("src/alias")).unwrap();
    repo.git(&["add", "src/alias"]);
    repo.git(&["commit", "-q", "-m", "an alias directory"]);
    let q = fixture_queue(&["04-fixes-crc16.diff"]);
    let tmp = tempfile::tempdir().unwrap();
    let editor = editor_script(tmp.path(), "alias-editor", "s#src/crc.c#src/alias/crc.c#g");
    let edited = FIX.replace("src/crc.c", "src/alias/crc.c");
    let crc_spec = PolicySpec {
        allow: vec!["src/**".into()],
        ..spec()
    };
    assert_eq!(evaluate(&edited, &crc_spec).verdict, Verdict::Allow);

    let mut run = RunOnTerminal::start(&repo, q.path(), &editor);
    run.wait_for(PROMPT);
    run.type_keys("e\n");
    let out = run.finish();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let dir = run_dir(&out);
    let refused = trace(&dir)
        .into_iter()
        .find(|l| l["from"] == "PATCH_REVIEW")
        .unwrap();
    assert_eq!(
        (refused["to"].as_str(), refused["error_class"].as_str()),
        (Some("ERROR_RECOVERY"), Some("POLICY_VIOLATION")),
        "{refused}"
    );
    let review = read_json(&dir.join("iter-001/review.json"));
    assert_eq!(review["decision"], "rejected", "{review:#}");
    assert!(
        review["reason"]
            .as_str()
            .unwrap()
            .contains("goes through the symlink 'src/alias'"),
        "{review:#}"
    );
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
    assert!(!dir.join("iter-001/console.log").exists());
}
