//! The approval gate on a real terminal: `TerminalApprover` reads and writes the slave side of a
//! pty, the test answers on the master side as a person at the keyboard would, and `e` runs a
//! real editor through `$EDITOR`. Every wait is bounded, so a gate that hangs fails the test
//! instead of stalling the suite.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by panicking

use fwfix::config::{BuiltinDeny, PolicySpec};
use fwfix::policy::{
    evaluate, ApprovalRequest, Approver, Choice, DecidedBy, Decision, Review, TerminalApprover,
    Verdict,
};
use std::fs::{self, File};
use std::io::{BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

const FIX: &str = include_str!("../../fixtures/fwtests/patches/04-fixes-crc16.diff");
const PROMPT: &str = "Apply this patch? [y]es / [n]o (with a reason) / [e]dit: ";
const LIMIT: Duration = Duration::from_secs(30);

fn spec() -> PolicySpec {
    PolicySpec {
        allow: vec!["src/**".into()],
        deny: vec![],
        max_changed_lines: 60,
        max_changed_files: 5,
        allow_builtin: vec![],
    }
}

/// A pty with the approver on its slave side, running on its own thread.
struct Session {
    master: Option<File>,
    transcript: Arc<Mutex<Vec<u8>>>,
    decision: mpsc::Receiver<Result<Decision, String>>,
}

impl Session {
    /// Starts the approver on `diff`. With `drain`, a thread keeps reading what the approver
    /// shows (as a terminal would); without it, the test may close the master at once.
    fn start(diff: &str, drain: bool) -> Session {
        Session::start_with_editor(diff, drain, None)
    }

    /// As `start`, with `editor` run for `e` instead of the person's `$EDITOR` (the suite's
    /// threads share one environment, so the tests never change it).
    fn start_with_editor(diff: &str, drain: bool, editor: Option<String>) -> Session {
        let pty = nix::pty::openpty(None, None).expect("openpty");
        let master = File::from(pty.master);
        let slave = File::from(pty.slave);
        let slave_out = slave.try_clone().unwrap();
        let transcript = Arc::new(Mutex::new(Vec::new()));
        if drain {
            let mut reader = master.try_clone().unwrap();
            let sink = Arc::clone(&transcript);
            thread::spawn(move || {
                let mut buf = [0u8; 4096];
                // Ends with EIO once the approver's side is closed.
                while let Ok(n @ 1..) = reader.read(&mut buf) {
                    sink.lock().unwrap().extend_from_slice(&buf[..n]);
                }
            });
        }
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
            let mut approver: Box<dyn Approver> = Box::new(terminal);
            let result = approver.ask(&request).map_err(|e| e.to_string());
            // The pty's slave closes here, which ends the drain thread.
            drop(approver);
            let _ = tx.send(result);
        });
        Session {
            master: Some(master),
            transcript,
            decision: rx,
        }
    }

    /// What the terminal showed so far, with the pty's `\r\n` as `\n`.
    fn shown(&self) -> String {
        String::from_utf8_lossy(&self.transcript.lock().unwrap()).replace("\r\n", "\n")
    }

    fn wait_for(&self, needle: &str) {
        let deadline = Instant::now() + LIMIT;
        while !self.shown().contains(needle) {
            assert!(
                Instant::now() < deadline,
                "the terminal never showed {needle:?}; it showed:\n{}",
                self.shown()
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
