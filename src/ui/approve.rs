//! The approval prompt on a terminal: shows a person the patch, the policy's findings and the
//! risk reasons, and asks `y`/`n`/`e`. [`Console`] is the [`Approver`] `fwfix run` and `fwfix
//! resume` give the orchestrator: it asks on this process's terminal, or rejects through
//! [`NonInteractive`] when there is none. It talks over any `BufRead` + `Write` pair (the process's terminal, or a
//! pty in tests) and runs the person's editor for `e`. It must never wait on input that cannot
//! come: end of input, or a terminal that hung up, is a rejection with "no answer". What it shows
//! comes from a patch nobody has vetted yet, so control characters are made visible rather than
//! sent to the terminal, where they could hide lines.

use crate::policy::{
    ApprovalError, ApprovalRequest, Approver, Choice, DecidedBy, Decision, Finding, NonInteractive,
    Severity, Verdict,
};
use std::fs::{self, File, OpenOptions};
use std::future::Future;
use std::io::{self, BufRead, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

const PROMPT: &str = "Apply this patch? [y]es / [n]o (with a reason) / [e]dit: ";
/// Garbage answers in a row before giving up: a stuck input must not loop for ever.
const MAX_INVALID_ANSWERS: u32 = 5;
const NO_ANSWER: &str = "no answer";

const BOLD: &str = "\x1b[1m";
const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const YELLOW: &str = "\x1b[33m";
const CYAN: &str = "\x1b[36m";
const RESET: &str = "\x1b[0m";

/// Asks a person on a terminal.
pub struct TerminalApprover<R, W> {
    input: R,
    output: W,
    color: bool,
    user: String,
    editor: Option<String>,
}

impl<R: BufRead, W: Write> TerminalApprover<R, W> {
    /// `color`: whether the output may carry ANSI colours (the caller knows about `NO_COLOR` and
    /// whether `output` is a terminal). The person is the login user of this process.
    pub fn new(input: R, output: W, color: bool) -> Self {
        TerminalApprover {
            input,
            output,
            color,
            user: crate::process::login_name(),
            editor: None,
        }
    }

    /// Records decisions as made by `user` instead of the login user.
    pub fn with_user(mut self, user: impl Into<String>) -> Self {
        self.user = user.into();
        self
    }

    /// Runs `command` (through `sh -c`, the patch file appended) for `e`, instead of `$EDITOR`.
    pub fn with_editor(mut self, command: impl Into<String>) -> Self {
        self.editor = Some(command.into());
        self
    }

    fn converse(&mut self, request: &ApprovalRequest<'_>) -> Result<Decision, ApprovalError> {
        let shown = render(request, self.color);
        self.write(&shown)?;
        let mut invalid = 0;
        loop {
            self.write(PROMPT)?;
            let Some(answer) = self.read_line()? else {
                return Ok(Decision::rejected_by_policy(NO_ANSWER));
            };
            match answer.trim().to_ascii_lowercase().as_str() {
                "y" | "yes" => return Ok(self.decided(Choice::Approved)),
                "n" | "no" => {
                    self.write("Why not? (this goes back to the analysis): ")?;
                    let reason = self
                        .read_line()?
                        .map(|r| r.trim().to_string())
                        .filter(|r| !r.is_empty())
                        .unwrap_or_else(|| "no reason given".to_string());
                    return Ok(self.decided(Choice::Rejected { reason }));
                }
                "e" | "edit" => match self.edit(request.diff)? {
                    Edited::Changed(diff) => return Ok(self.decided(Choice::Edited { diff })),
                    Edited::Unchanged => self.write("The patch is unchanged.\n")?,
                    Edited::Empty => {
                        self.write("The edited patch is empty; answer n to reject it.\n")?;
                    }
                    Edited::NotText => {
                        self.write("The edited patch is not UTF-8 text; nothing changed.\n")?;
                    }
                    Edited::EditorFailed(status) => {
                        self.write(&format!("The editor {status}; nothing changed.\n"))?;
                    }
                },
                _ => {
                    invalid += 1;
                    if invalid >= MAX_INVALID_ANSWERS {
                        return Ok(Decision::rejected_by_policy(NO_ANSWER));
                    }
                    self.write("Please answer y, n or e.\n")?;
                }
            }
        }
    }

    fn decided(&self, choice: Choice) -> Decision {
        Decision {
            choice,
            decided_by: DecidedBy::Human {
                user: self.user.clone(),
            },
        }
    }

    fn write(&mut self, text: &str) -> Result<(), ApprovalError> {
        self.output
            .write_all(text.as_bytes())
            .and_then(|()| self.output.flush())
            .map_err(|source| ApprovalError::Terminal {
                op: "write",
                source,
            })
    }

    /// One line of input without its line end; `None` at end of input.
    fn read_line(&mut self) -> Result<Option<String>, ApprovalError> {
        let mut buf = Vec::new();
        match self.input.read_until(b'\n', &mut buf) {
            Ok(0) => Ok(None),
            Ok(_) => Ok(Some(String::from_utf8_lossy(&buf).into_owned())),
            Err(source) => Err(ApprovalError::Terminal { op: "read", source }),
        }
    }

    fn edit(&mut self, diff: &str) -> Result<Edited, ApprovalError> {
        let file = PatchFile::create(diff)?;
        let command = self
            .editor
            .clone()
            .unwrap_or_else(crate::config::host::editor);
        self.write(&format!(
            "Opening the patch in `{command}`; save and quit to continue.\n"
        ))?;
        // As git does: the editor setting is a shell snippet (`code --wait`), the file its
        // argument, so no quoting of the path is needed.
        let status = Command::new("sh")
            .arg("-c")
            .arg(format!("{command} \"$@\""))
            .arg(&command)
            .arg(file.path())
            .status()
            .map_err(|source| ApprovalError::Editor {
                command: command.clone(),
                source,
            })?;
        if !status.success() {
            return Ok(Edited::EditorFailed(status.to_string()));
        }
        let bytes = fs::read(file.path()).map_err(|source| ApprovalError::PatchFile {
            op: "read back",
            path: file.path().to_path_buf(),
            source,
        })?;
        let Ok(edited) = String::from_utf8(bytes) else {
            return Ok(Edited::NotText);
        };
        Ok(if edited.trim().is_empty() {
            Edited::Empty
        } else if edited == diff {
            Edited::Unchanged
        } else {
            Edited::Changed(edited)
        })
    }
}

impl<R: BufRead, W: Write> TerminalApprover<R, W> {
    /// Shows the request and waits for the person's answer (blocking).
    pub fn ask(&mut self, request: &ApprovalRequest<'_>) -> Result<Decision, ApprovalError> {
        match self.converse(request) {
            Err(ApprovalError::Terminal { source, .. }) if hung_up(&source) => {
                Ok(Decision::rejected_by_policy(NO_ANSWER))
            }
            other => other,
        }
    }
}

/// Asks on this process's terminal (stdin, with the prompt on stderr) on a blocking thread, or
/// rejects as [`NonInteractive`] when stdin is not a terminal.
#[derive(Debug, Clone, Copy)]
pub struct Console {
    color: bool,
}

impl Console {
    /// `color`: whether the prompt may carry ANSI colours on stderr.
    pub fn new(color: bool) -> Console {
        Console { color }
    }
}

impl Approver for Console {
    fn ask<'a>(
        &'a self,
        request: ApprovalRequest<'a>,
    ) -> Pin<Box<dyn Future<Output = Result<Decision, ApprovalError>> + Send + 'a>> {
        let (diff, review, origin) = (
            request.diff.to_string(),
            request.review.clone(),
            request.origin.to_string(),
        );
        let (iteration, color) = (request.iteration, self.color);
        Box::pin(async move {
            let asking = tokio::task::spawn_blocking(move || {
                use std::io::IsTerminal;
                if !std::io::stdin().is_terminal() {
                    return Ok(NonInteractive.decision());
                }
                let request = ApprovalRequest {
                    diff: &diff,
                    review: &review,
                    iteration,
                    origin: &origin,
                };
                TerminalApprover::new(std::io::stdin().lock(), std::io::stderr(), color)
                    .ask(&request)
            });
            asking.await.map_err(|e| ApprovalError::Terminal {
                op: "ask",
                source: io::Error::other(e),
            })?
        })
    }
}

/// A terminal that went away (the pty's other side closed, the ssh session dropped) reads and
/// writes EIO: nobody is there to answer.
fn hung_up(e: &io::Error) -> bool {
    e.raw_os_error() == Some(nix::errno::Errno::EIO as i32) || e.kind() == io::ErrorKind::BrokenPipe
}

enum Edited {
    Changed(String),
    Unchanged,
    Empty,
    NotText,
    EditorFailed(String),
}

/// The patch in a private temporary file for the editor; removed when dropped.
struct PatchFile {
    path: PathBuf,
}

impl PatchFile {
    fn create(diff: &str) -> Result<PatchFile, ApprovalError> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir();
        let pid = std::process::id();
        let mut last = None;
        for _ in 0..100 {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let path = dir.join(format!("fwfix-review-{pid}-{n}.diff"));
            let opened = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path);
            match opened {
                Ok(file) => return Self::fill(file, path, diff),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some((path, e)),
                Err(source) => {
                    return Err(ApprovalError::PatchFile {
                        op: "create",
                        path,
                        source,
                    })
                }
            }
        }
        let (path, source) = last.unwrap_or_else(|| {
            (
                dir.join("fwfix-review.diff"),
                io::Error::from(io::ErrorKind::AlreadyExists),
            )
        });
        Err(ApprovalError::PatchFile {
            op: "create",
            path,
            source,
        })
    }

    fn fill(mut file: File, path: PathBuf, diff: &str) -> Result<PatchFile, ApprovalError> {
        let patch = PatchFile { path };
        file.write_all(diff.as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(|source| ApprovalError::PatchFile {
                op: "write",
                path: patch.path.clone(),
                source,
            })?;
        Ok(patch)
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for PatchFile {
    fn drop(&mut self) {
        // Best effort: a leftover file in the temp directory harms nobody.
        let _ = fs::remove_file(&self.path);
    }
}

/// Everything shown before the question.
fn render(request: &ApprovalRequest<'_>, color: bool) -> String {
    let paint = |code: &str, text: &str| {
        if color {
            format!("{code}{text}{RESET}")
        } else {
            text.to_string()
        }
    };
    let review = request.review;
    let mut out = String::new();
    out.push_str(&paint(
        BOLD,
        &format!(
            "fwfix: patch for iteration {} from {}",
            request.iteration,
            visible(request.origin)
        ),
    ));
    out.push('\n');
    let s = review.stats;
    out.push_str(&format!(
        "{} file{}, +{} -{}\n\n",
        s.files,
        if s.files == 1 { "" } else { "s" },
        s.added,
        s.removed
    ));
    for line in request.diff.lines() {
        let shown = visible(line);
        let code =
            if line.starts_with("+++ ") || line.starts_with("--- ") || line.starts_with("diff ") {
                Some(BOLD)
            } else if line.starts_with("@@") {
                Some(CYAN)
            } else if line.starts_with('+') {
                Some(GREEN)
            } else if line.starts_with('-') {
                Some(RED)
            } else {
                None
            };
        match code {
            Some(code) => out.push_str(&paint(code, &shown)),
            None => out.push_str(&shown),
        }
        out.push('\n');
    }
    out.push('\n');
    let denials = review.denials().count();
    let warnings = review.findings.len() - denials;
    let verdict = match review.verdict {
        Verdict::Allow => "allowed",
        Verdict::Deny => "denied",
    };
    out.push_str(&format!(
        "Policy: {verdict}, {denials} denial{}, {warnings} warning{}\n",
        if denials == 1 { "" } else { "s" },
        if warnings == 1 { "" } else { "s" },
    ));
    for f in &review.findings {
        out.push_str(&finding_line(f, &paint));
    }
    out.push_str(&format!("Risk: {:.2}\n", review.risk.score));
    for reason in &review.risk.reasons {
        out.push_str(&format!("  - {}\n", visible(reason)));
    }
    out
}

fn finding_line(f: &Finding, paint: &dyn Fn(&str, &str) -> String) -> String {
    let severity = match f.severity {
        Severity::Deny => paint(RED, "deny"),
        Severity::Warn => paint(YELLOW, "warn"),
    };
    let place = match (&f.path, f.line) {
        (Some(p), Some(l)) => format!(" {}:{l}", visible(p)),
        (Some(p), None) => format!(" {}", visible(p)),
        _ => String::new(),
    };
    format!("  {severity} {}{place}: {}\n", f.rule, visible(&f.message))
}

/// Text from the patch as it may be shown on a terminal: control characters in caret notation
/// (`^[`), C1 controls and the invisible or direction-changing characters as `<U+202E>`.
fn visible(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let code = u32::from(c);
        match c {
            '\t' => out.push(c),
            _ if code < 0x20 => {
                out.push('^');
                out.push(char::from(b'@' + code as u8));
            }
            '\u{7f}' => out.push_str("^?"),
            '\u{80}'..='\u{9f}'
            | '\u{200b}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}'
            | '\u{061c}'
            | '\u{feff}' => out.push_str(&format!("<U+{code:04X}>")),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::policy::testing::*;
    use crate::policy::{evaluate, Review};

    fn request<'a>(diff: &'a str, review: &'a Review) -> ApprovalRequest<'a> {
        ApprovalRequest {
            diff,
            review,
            iteration: 2,
            origin: "queue: 04-fixes-crc16.diff",
        }
    }

    fn run(input: &str, diff: &str) -> (Decision, String) {
        let review = evaluate(diff, &spec());
        let mut out = Vec::new();
        let mut a = TerminalApprover::new(input.as_bytes(), &mut out, false).with_user("ada");
        let d = a.ask(&request(diff, &review)).unwrap();
        (d, String::from_utf8(out).unwrap())
    }

    const FIX: &str = include_str!("../../fixtures/fwtests/patches/04-fixes-crc16.diff");

    #[test]
    fn shows_diff_findings_and_risk_then_asks() {
        let d = diff("src/uart.c", &["    x = 1;"], &["    __disable_irq();"]);
        let (decision, out) = run("y\n", &d);
        assert_eq!(decision.choice, Choice::Approved);
        assert_eq!(decision.decided_by, DecidedBy::Human { user: "ada".into() });
        assert!(out.starts_with("fwfix: patch for iteration 2 from queue: 04-fixes-crc16.diff\n"));
        assert!(out.contains("1 file, +1 -1\n"));
        assert!(out.contains("\n+    __disable_irq();\n"));
        assert!(out.contains("Policy: allowed, 0 denials, 0 warnings\n"));
        assert!(out.contains("Risk: 0.25\n  - critical_section (+0.25)"));
        assert!(out.ends_with(PROMPT));
        assert!(!out.contains('\x1b'), "no colour when not allowed");
    }

    #[test]
    fn colour_only_when_allowed() {
        let review = evaluate(FIX, &spec());
        let coloured = render(&request(FIX, &review), true);
        assert!(coloured.contains(&format!("{GREEN}+    uint16_t crc = 0xFFFFu;{RESET}")));
        assert!(coloured.contains(&format!("{RED}-    uint16_t crc = 0x0000u;{RESET}")));
        assert!(coloured.contains(CYAN));
    }

    #[test]
    fn answers_no_with_reason_and_garbage() {
        let (d, out) = run("maybe\nN\nbreaks the CRC-32 test\n", FIX);
        assert_eq!(
            d.choice,
            Choice::Rejected {
                reason: "breaks the CRC-32 test".into()
            }
        );
        assert!(out.contains("Please answer y, n or e."));
        let (d, _) = run("no\n\n", FIX);
        assert_eq!(
            d.choice,
            Choice::Rejected {
                reason: "no reason given".into()
            }
        );
    }

    #[test]
    fn end_of_input_is_no_answer() {
        for input in ["", "what\n", "n"] {
            let (d, _) = run(input, FIX);
            assert!(matches!(d.choice, Choice::Rejected { .. }), "{input:?}");
        }
        let (d, _) = run("", FIX);
        assert_eq!(d, Decision::rejected_by_policy("no answer"));
        let (d, _) = run("x\nx\nx\nx\nx\nx\ny\n", FIX);
        assert_eq!(
            d,
            Decision::rejected_by_policy("no answer"),
            "gives up on garbage"
        );
    }

    #[test]
    fn edit_runs_the_editor_and_reads_the_patch_back() {
        let review = evaluate(FIX, &spec());
        let mut out = Vec::new();
        let mut a = TerminalApprover::new(&b"e\n"[..], &mut out, false)
            .with_editor("sed -i 's/0xFFFFu/0xFFFEu/'");
        let d = a.ask(&request(FIX, &review)).unwrap();
        let Choice::Edited { diff } = d.choice else {
            panic!("{d:?}")
        };
        assert!(diff.contains("+    uint16_t crc = 0xFFFEu;"));

        let mut out = Vec::new();
        let mut a = TerminalApprover::new(&b"e\ne\ny\n"[..], &mut out, false).with_editor("true");
        let d = a.ask(&request(FIX, &review)).unwrap();
        assert_eq!(d.choice, Choice::Approved);
        let mut a =
            TerminalApprover::new(&b"e\nn\nno\n"[..], Vec::new(), false).with_editor("false");
        let d = a.ask(&request(FIX, &review)).unwrap();
        assert!(matches!(d.choice, Choice::Rejected { .. }));
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.matches("The patch is unchanged.").count(), 2);
    }

    #[test]
    fn a_truncated_file_from_the_editor_is_not_a_patch() {
        let review = evaluate(FIX, &spec());
        let mut out = Vec::new();
        let mut a = TerminalApprover::new(&b"e\nn\nempty\n"[..], &mut out, false)
            .with_editor("truncate -s 0");
        let d = a.ask(&request(FIX, &review)).unwrap();
        assert!(matches!(d.choice, Choice::Rejected { .. }));
        assert!(String::from_utf8(out).unwrap().contains("is empty"));
    }

    #[test]
    fn control_characters_from_the_patch_are_made_visible() {
        assert_eq!(visible("a\x1b[2Kb\tc\r"), "a^[[2Kb\tc^M");
        assert_eq!(visible("x\u{202e}y\u{7f}"), "x<U+202E>y^?");
        assert_eq!(visible("naïve ü"), "naïve ü");
        let d = diff("src/a.c", &["a;"], &["b; /* \x1b[1A\x1b[2K hidden */"]);
        let (_, out) = run("y\n", &d);
        assert!(!out.contains('\x1b'), "{out:?}");
        assert!(out.contains("^[[1A"));
    }
}
