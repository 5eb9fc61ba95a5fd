//! Progress for a person at a terminal: one spinner line on stderr showing the current state and
//! what it is doing (the last build line, which attempt is booting, tests seen so far, elapsed
//! time), with finished steps printed as lines above it (`✔ build 3.2 s`). It must stay out of
//! the way: when stdout or stderr is not a terminal, or with `quiet`, it draws nothing and prints
//! only warnings and errors as plain lines on stderr; while a person is being asked something
//! (the approval prompt) the spinner is taken down and lines are printed plainly, so the prompt is
//! never drawn over. It never decides anything about the run.

use super::{paint, Paint, UiOptions};
use crate::capture::Stream;
use crate::events::{Event, EventSink, Level};
use crate::machine::State;
use crate::report::{format_duration, plural, verdict_name, visible};
use crate::results::{CaseStatus, Verdict};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::{self, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// How often the spinner redraws on its own (so elapsed time moves while nothing happens).
const TICK: Duration = Duration::from_millis(120);

/// Renders events on the terminal.
pub struct TerminalSink {
    opts: UiOptions,
    /// Colour on stderr.
    color: bool,
    /// The spinner; None in plain mode.
    bar: Option<ProgressBar>,
    progress: Mutex<Progress>,
    /// The progress of each of several jobs running at once, by job name.
    jobs: Mutex<BTreeMap<String, Progress>>,
    /// Where plain-mode lines go (stderr, or a buffer in tests).
    plain: Mutex<Box<dyn Write + Send>>,
    /// A person is answering a prompt: the spinner is down until they are done.
    paused: AtomicBool,
}

impl TerminalSink {
    /// A sink for this process's terminal.
    pub fn new(opts: UiOptions) -> TerminalSink {
        let interactive = !opts.quiet && io::stderr().is_terminal() && io::stdout().is_terminal();
        let color = opts.color.for_stderr();
        let bar = interactive.then(|| {
            // indicatif colours its template through `console`; make it follow our choice.
            console::set_colors_enabled_stderr(color);
            ProgressDrawTarget::stderr()
        });
        TerminalSink::build(opts, color, bar, Box::new(io::stderr()))
    }

    fn build(
        opts: UiOptions,
        color: bool,
        target: Option<ProgressDrawTarget>,
        plain: Box<dyn Write + Send>,
    ) -> TerminalSink {
        let bar = target.map(|target| {
            let bar = ProgressBar::with_draw_target(None, target);
            bar.set_style(spinner_style(color));
            bar.set_prefix("fwfix");
            bar.enable_steady_tick(TICK);
            bar
        });
        TerminalSink {
            opts,
            color,
            bar,
            progress: Mutex::new(Progress::default()),
            jobs: Mutex::new(BTreeMap::new()),
            plain: Mutex::new(plain),
            paused: AtomicBool::new(false),
        }
    }

    /// Takes the spinner down (cleared, no ticking) while a person answers a prompt.
    fn pause(&self) {
        if let (Some(bar), false) = (&self.bar, self.paused.swap(true, Ordering::SeqCst)) {
            bar.disable_steady_tick();
            bar.finish_and_clear();
        }
    }

    /// Puts the spinner back after the prompt, its elapsed time carried on.
    fn resume(&self) {
        if let (Some(bar), true) = (&self.bar, self.paused.swap(false, Ordering::SeqCst)) {
            let elapsed = bar.elapsed();
            bar.reset();
            bar.set_elapsed(elapsed);
            bar.set_message(self.progress().status_text());
            bar.enable_steady_tick(TICK);
        }
    }

    fn progress(&self) -> MutexGuard<'_, Progress> {
        self.progress
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Shows a notice: above the spinner when there is one, else as a plain line on stderr if
    /// plain mode shows that kind at all.
    fn notice(&self, notice: Notice) {
        let paused = self.paused.load(Ordering::SeqCst);
        match &self.bar {
            Some(bar) if !paused => bar.println(notice.render(self.color)),
            Some(_) | None => {
                if paused || notice.kind.shown_plain(self.opts) {
                    let mut out = self
                        .plain
                        .lock()
                        .unwrap_or_else(|poisoned| poisoned.into_inner());
                    // Nothing useful can be done when stderr itself is gone.
                    let _ =
                        writeln!(out, "{}", notice.render(self.color)).and_then(|()| out.flush());
                }
            }
        }
    }
}

impl Drop for TerminalSink {
    /// A command that fails before `Finished` must not leave a half-drawn spinner behind.
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl EventSink for TerminalSink {
    fn emit(&self, event: &Event) {
        match event {
            Event::InputWanted { .. } => self.pause(),
            Event::InputDone => self.resume(),
            _ => {}
        }
        let notices = {
            let mut progress = self.progress();
            let notices = progress.apply(event, self.opts.verbose);
            if let (Some(bar), false) = (&self.bar, self.paused.load(Ordering::SeqCst)) {
                if let Some(state) = progress.state {
                    bar.set_prefix(state.name());
                }
                bar.set_message(visible(&progress.status_text()).into_owned());
            }
            notices
        };
        for notice in notices {
            self.notice(notice);
        }
        if let (Event::Finished { .. }, Some(bar)) = (event, &self.bar) {
            bar.finish_and_clear();
        }
    }

    /// One job of several: its lines carry its name, and the spinner lists the jobs still going
    /// with their states.
    fn emit_job(&self, job: &str, event: &Event) {
        let notices = {
            let mut jobs = self
                .jobs
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            let notices = jobs
                .entry(job.to_string())
                .or_default()
                .apply(event, self.opts.verbose);
            if let Some(bar) = &self.bar {
                let going: Vec<String> = jobs
                    .iter()
                    .filter_map(|(name, p)| {
                        p.state
                            .filter(|s| !s.is_terminal())
                            .map(|s| format!("{name} {}", s.name()))
                    })
                    .collect();
                bar.set_prefix(plural(going.len(), "job"));
                bar.set_message(going.join(" · "));
            }
            notices
        };
        for notice in notices {
            self.notice(Notice {
                text: format!("[{job}] {}", notice.text),
                ..notice
            });
        }
    }
}

fn spinner_style(color: bool) -> ProgressStyle {
    let template = if color {
        "{spinner:.cyan} {prefix:.bold} {wide_msg} {elapsed:.dim}"
    } else {
        "{spinner} {prefix} {wide_msg} {elapsed}"
    };
    ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_spinner())
}

/// What the spinner shows, updated from events. Pure: no I/O.
#[derive(Debug, Default)]
struct Progress {
    state: Option<State>,
    /// The last reason a transition gave, for states with nothing better to show.
    reason: String,
    build_command: String,
    build_line: String,
    /// `boot qemu mps2-an385 (attempt 2)`.
    boot: Option<String>,
    /// `flash program [#####     ] 50%`, while a flasher reports percentages.
    flash: Option<String>,
    passed: usize,
    failed: usize,
    ignored: usize,
    /// `pre-commit hook`, while one runs.
    hook: Option<String>,
}

impl Progress {
    /// Takes in one event; returns the lines to print for it.
    fn apply(&mut self, event: &Event, verbose: bool) -> Vec<Notice> {
        match event {
            Event::RunStarted {
                run_id,
                command,
                run_dir,
                ..
            } => vec![Notice::new(
                NoticeKind::Info,
                format!("fwfix {command}: run {run_id} in {run_dir}"),
            )],
            Event::Transition {
                from,
                to,
                reason,
                error_class,
                ..
            } => {
                self.state = Some(*to);
                self.reason = reason.clone();
                match (to, error_class) {
                    (State::ErrorRecovery, Some(class)) => vec![Notice::new(
                        NoticeKind::Note,
                        format!("{from}: {reason} [{class}]"),
                    )],
                    (State::ErrorRecovery, None) => {
                        vec![Notice::new(NoticeKind::Note, format!("{from}: {reason}"))]
                    }
                    _ => Vec::new(),
                }
            }
            Event::BuildStarted { command } => {
                self.build_command = command.clone();
                self.build_line.clear();
                Vec::new()
            }
            Event::BuildOutput { line } => {
                if !line.trim().is_empty() {
                    self.build_line = line.trim_end().to_string();
                }
                Vec::new()
            }
            Event::BuildFinished {
                success,
                duration_ms,
                errors,
                warnings,
                interrupted,
            } => {
                let took = format_duration(*duration_ms);
                let notice = match (success, warnings) {
                    // Stopped by the person or the run, not broken: no error count to give.
                    _ if *interrupted => {
                        Notice::new(NoticeKind::Note, format!("build interrupted ({took})"))
                    }
                    (true, 0) => Notice::new(NoticeKind::Done, format!("build {took}")),
                    (true, _) => Notice::new(
                        NoticeKind::Done,
                        format!("build {took}, {}", plural(*warnings, "warning")),
                    ),
                    (false, _) => Notice::new(
                        NoticeKind::Failed,
                        format!("build failed: {} ({took})", plural(*errors, "error")),
                    ),
                };
                vec![notice]
            }
            Event::BootStarted { target, attempt } => {
                self.boot = Some(format!("boot {target} (attempt {attempt})"));
                self.flash = None;
                self.passed = 0;
                self.failed = 0;
                self.ignored = 0;
                Vec::new()
            }
            Event::FlashProgress {
                phase,
                percent,
                line,
            } => {
                if let Some(percent) = percent {
                    // Flashing comes before the image boots: a previous attempt's boot is over.
                    self.boot = None;
                    self.flash = Some(flash_bar(phase, *percent));
                }
                if !verbose {
                    return Vec::new();
                }
                vec![Notice::new(
                    NoticeKind::Console,
                    format!("│ [flash] {line}"),
                )]
            }
            Event::ConsoleLine { stream, text, .. } => {
                if !verbose {
                    return Vec::new();
                }
                let text = match stream {
                    Stream::Uart => format!("│ {text}"),
                    Stream::Host => format!("│ [host] {text}"),
                };
                vec![Notice::new(NoticeKind::Console, text)]
            }
            Event::CaseResult { status, .. } => {
                match status {
                    CaseStatus::Pass => self.passed += 1,
                    CaseStatus::Ignore => self.ignored += 1,
                    CaseStatus::Fail
                    | CaseStatus::Crash
                    | CaseStatus::Hang
                    | CaseStatus::Missing => self.failed += 1,
                }
                Vec::new()
            }
            Event::AttemptFinished {
                attempt,
                verdict,
                passed,
                failed,
                duration_ms,
                end,
            } => {
                let kind = match verdict {
                    Verdict::Pass => NoticeKind::Done,
                    Verdict::Fail | Verdict::Flaky | Verdict::EnvError | Verdict::Inconclusive => {
                        NoticeKind::Failed
                    }
                };
                vec![Notice::new(
                    kind,
                    format!(
                        "attempt {attempt}: {}, {passed} passed, {failed} failed ({end}, {})",
                        verdict_name(*verdict),
                        format_duration(*duration_ms)
                    ),
                )]
            }
            Event::HookStarted { hook, .. } => {
                self.hook = Some(format!("{hook} hook"));
                Vec::new()
            }
            Event::HookFinished {
                hook,
                passed,
                ending,
                duration_ms,
                output,
            } => {
                self.hook = None;
                let took = format_duration(*duration_ms);
                if *passed {
                    return vec![Notice::new(
                        NoticeKind::Done,
                        format!("{hook} hook ({took})"),
                    )];
                }
                // The hook's own words say what to fix: shown whatever the verbosity, on stderr.
                let mut text = format!("{hook} hook {ending} ({took})");
                for line in output.lines() {
                    text.push_str("\n  │ ");
                    text.push_str(line);
                }
                vec![Notice::new(NoticeKind::Error, text)]
            }
            Event::LeaseWaiting {
                board,
                holder,
                timeout_s,
            } => {
                let who = holder
                    .as_ref()
                    .map(|h| h.describe())
                    .unwrap_or_else(|| "another run".to_string());
                // Shown in plain mode too: a CI log must say why the job stands still.
                vec![Notice::new(
                    NoticeKind::Warning,
                    format!("waiting for board {board}: leased by {who} (up to {timeout_s} s)"),
                )]
            }
            Event::LeaseAcquired {
                board, took_over, ..
            } => match took_over {
                Some(old) => vec![Notice::new(
                    NoticeKind::Warning,
                    format!(
                        "took over the lease of board {board} from {}, whose process is gone",
                        old.describe()
                    ),
                )],
                None => Vec::new(),
            },
            Event::BoardHealth {
                board,
                state,
                reason,
            } => {
                let kind = if state.refuses_runs() {
                    NoticeKind::Failed
                } else {
                    NoticeKind::Done
                };
                vec![Notice::new(
                    kind,
                    format!("board {board} is {state}: {reason}"),
                )]
            }
            Event::Message { level, text } => {
                let kind = match level {
                    Level::Info => NoticeKind::Info,
                    Level::Warning => NoticeKind::Warning,
                    Level::Error => NoticeKind::Error,
                };
                vec![Notice::new(kind, text.clone())]
            }
            Event::InputWanted { .. } | Event::InputDone | Event::Finished { .. } => Vec::new(),
        }
    }

    /// The spinner's text for the current state.
    fn status_text(&self) -> String {
        let Some(state) = self.state else {
            return String::new();
        };
        match state {
            State::BuildSetup | State::BuildRun => {
                if self.build_line.is_empty() {
                    self.build_command.clone()
                } else {
                    self.build_line.clone()
                }
            }
            State::TestSetup | State::TestRun | State::ResultCollection | State::ResultAnalysis => {
                let mut text = self
                    .boot
                    .clone()
                    .or_else(|| self.flash.clone())
                    .unwrap_or_else(|| self.reason.clone());
                if self.passed + self.failed + self.ignored > 0 {
                    text.push_str(&format!(
                        " · {} passed, {} failed",
                        self.passed, self.failed
                    ));
                    if self.ignored > 0 {
                        text.push_str(&format!(", {} ignored", self.ignored));
                    }
                }
                text
            }
            State::Commit => self.hook.clone().unwrap_or_else(|| self.reason.clone()),
            State::Idle
            | State::Init
            | State::CodeAnalysis
            | State::PatchGeneration
            | State::PatchReview
            | State::PatchApply
            | State::Lint
            | State::ConvergenceCheck
            | State::ErrorRecovery
            | State::Success
            | State::Failure
            | State::Aborted => self.reason.clone(),
        }
    }
}

/// A line printed above the spinner (or, for some kinds, on its own in plain mode).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Notice {
    kind: NoticeKind,
    text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NoticeKind {
    /// A step finished well: `✔`.
    Done,
    /// A step finished badly: `✘`.
    Failed,
    /// Something a person watching wants to know (recovering from an error): `!`.
    Note,
    Info,
    Warning,
    Error,
    /// A console line under `--verbose`.
    Console,
}

impl NoticeKind {
    /// Plain mode shows warnings and errors, and console lines when asked for them.
    fn shown_plain(self, opts: UiOptions) -> bool {
        match self {
            NoticeKind::Warning | NoticeKind::Error => true,
            NoticeKind::Console => opts.verbose && !opts.quiet,
            NoticeKind::Done | NoticeKind::Failed | NoticeKind::Note | NoticeKind::Info => false,
        }
    }
}

impl Notice {
    /// A notice; whatever in `text` came from outside (a console line, a compiler's, a reason
    /// quoting them) shows its control characters instead of acting on the terminal.
    fn new(kind: NoticeKind, text: String) -> Notice {
        let text = match visible(&text) {
            Cow::Borrowed(_) => text,
            Cow::Owned(shown) => shown,
        };
        Notice { kind, text }
    }

    fn render(&self, color: bool) -> String {
        let text = &self.text;
        match self.kind {
            NoticeKind::Done => format!("{} {text}", paint("✔", Paint::Green, color)),
            NoticeKind::Failed => format!("{} {text}", paint("✘", Paint::Red, color)),
            NoticeKind::Note => format!("{} {text}", paint("!", Paint::Yellow, color)),
            NoticeKind::Info => paint(text, Paint::Dim, color),
            NoticeKind::Warning => format!("{} {text}", paint("warning:", Paint::Yellow, color)),
            NoticeKind::Error => format!("{} {text}", paint("error:", Paint::Red, color)),
            NoticeKind::Console => paint(text, Paint::Dim, color),
        }
    }
}

/// Only for tests that need a sink with a chosen colour and output, whatever the terminal.
/// A flash phase's progress as a bar: `flash program [#####     ] 50%`.
fn flash_bar(phase: &str, percent: u8) -> String {
    const WIDTH: usize = 20;
    let filled = usize::from(percent.min(100)) * WIDTH / 100;
    format!(
        "flash {phase} [{}{}] {percent}%",
        "#".repeat(filled),
        " ".repeat(WIDTH - filled)
    )
}

#[cfg(test)]
impl TerminalSink {
    fn for_test(
        opts: UiOptions,
        target: Option<ProgressDrawTarget>,
        plain: Box<dyn Write + Send>,
    ) -> TerminalSink {
        let color = matches!(opts.color, super::ColorChoice::Always);
        TerminalSink::build(opts, color, target, plain)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::ErrorClass;
    use indicatif::TermLike;
    use std::sync::Arc;

    /// Records what indicatif draws, as a terminal would receive it.
    #[derive(Debug, Clone, Default)]
    struct Screen(Arc<Mutex<String>>);

    impl TermLike for Screen {
        fn width(&self) -> u16 {
            80
        }
        fn move_cursor_up(&self, _n: usize) -> io::Result<()> {
            Ok(())
        }
        fn move_cursor_down(&self, _n: usize) -> io::Result<()> {
            Ok(())
        }
        fn move_cursor_right(&self, _n: usize) -> io::Result<()> {
            Ok(())
        }
        fn move_cursor_left(&self, _n: usize) -> io::Result<()> {
            Ok(())
        }
        fn write_line(&self, s: &str) -> io::Result<()> {
            let mut screen = self.0.lock().unwrap();
            screen.push_str(s);
            screen.push('\n');
            Ok(())
        }
        fn write_str(&self, s: &str) -> io::Result<()> {
            self.0.lock().unwrap().push_str(s);
            Ok(())
        }
        fn clear_line(&self) -> io::Result<()> {
            Ok(())
        }
        fn flush(&self) -> io::Result<()> {
            Ok(())
        }
    }

    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl Write for Buffer {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Buffer {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    fn transition(from: State, to: State, reason: &str) -> Event {
        Event::Transition {
            seq: 0,
            from,
            to,
            reason: reason.into(),
            iteration: 0,
            error_class: None,
        }
    }

    fn a_test_run() -> Vec<Event> {
        vec![
            Event::RunStarted {
                run_id: "r1".into(),
                command: "test".into(),
                run_dir: ".fwfix/runs/r1".into(),
                repo: ".".into(),
            },
            transition(State::BuildSetup, State::BuildRun, "toolchain ready"),
            Event::BuildStarted {
                command: "make".into(),
            },
            Event::BuildOutput {
                line: "arm-none-eabi-gcc -c src/crc.c".into(),
            },
            Event::BuildFinished {
                success: true,
                duration_ms: 3_200,
                errors: 0,
                warnings: 0,
                interrupted: false,
            },
            transition(State::TestSetup, State::TestRun, "QEMU started"),
            Event::BootStarted {
                target: "qemu mps2-an385".into(),
                attempt: 1,
            },
            Event::ConsoleLine {
                attempt: 1,
                t_ms: 30,
                stream: Stream::Uart,
                text: "test_crc.c:12:test_crc_basic:PASS".into(),
            },
            Event::CaseResult {
                attempt: 1,
                name: "test_crc_basic".into(),
                status: CaseStatus::Pass,
            },
            Event::Message {
                level: Level::Warning,
                text: "the harness summary disagrees with the case lines".into(),
            },
            Event::AttemptFinished {
                attempt: 1,
                verdict: Verdict::Fail,
                passed: 1,
                failed: 1,
                duration_ms: 40,
                end: "exit 1".into(),
            },
            Event::Finished {
                status: "FAILED".into(),
                exit_code: 1,
                run_dir: Some(".fwfix/runs/r1".into()),
                error_class: None,
                message: None,
            },
        ]
    }

    #[test]
    fn spinner_text_follows_the_phase() {
        let mut progress = Progress::default();
        progress.apply(&transition(State::Init, State::BuildRun, "ready"), false);
        progress.apply(
            &Event::BuildStarted {
                command: "make all".into(),
            },
            false,
        );
        assert_eq!(progress.status_text(), "make all");
        progress.apply(
            &Event::BuildOutput {
                line: "CC src/crc.c  ".into(),
            },
            false,
        );
        progress.apply(&Event::BuildOutput { line: "  ".into() }, false);
        assert_eq!(progress.status_text(), "CC src/crc.c");

        progress.apply(
            &transition(State::TestSetup, State::TestRun, "booted"),
            false,
        );
        progress.apply(
            &Event::FlashProgress {
                phase: "program".into(),
                percent: Some(50),
                line: "program: 2048/4096 bytes".into(),
            },
            false,
        );
        assert_eq!(
            progress.status_text(),
            "flash program [##########          ] 50%"
        );
        progress.apply(
            &Event::BootStarted {
                target: "qemu mps2-an385".into(),
                attempt: 2,
            },
            false,
        );
        assert_eq!(progress.status_text(), "boot qemu mps2-an385 (attempt 2)");
        for status in [
            CaseStatus::Pass,
            CaseStatus::Pass,
            CaseStatus::Crash,
            CaseStatus::Ignore,
        ] {
            progress.apply(
                &Event::CaseResult {
                    attempt: 2,
                    name: "t".into(),
                    status,
                },
                false,
            );
        }
        assert_eq!(
            progress.status_text(),
            "boot qemu mps2-an385 (attempt 2) · 2 passed, 1 failed, 1 ignored"
        );
        progress.apply(
            &transition(State::TestRun, State::CodeAnalysis, "analysing the failure"),
            false,
        );
        assert_eq!(progress.status_text(), "analysing the failure");
    }

    #[test]
    fn a_refusing_commit_hook_is_an_error_with_its_output_and_shows_while_it_runs() {
        let mut progress = Progress::default();
        progress.apply(
            &transition(State::ConvergenceCheck, State::Commit, "fixed test_a"),
            false,
        );
        progress.apply(
            &Event::HookStarted {
                hook: "pre-commit".into(),
                path: ".git/hooks/pre-commit".into(),
            },
            false,
        );
        assert_eq!(progress.status_text(), "pre-commit hook");
        let refused = progress.apply(
            &Event::HookFinished {
                hook: "pre-commit".into(),
                passed: false,
                ending: "exited with status 1".into(),
                duration_ms: 40,
                output: "src/crc.c:68: trailing whitespace.\n+/* x */   ".into(),
            },
            false,
        );
        assert_eq!(refused.len(), 1);
        assert!(refused[0].kind.shown_plain(UiOptions::default()));
        assert_eq!(
            refused[0].render(false),
            "error: pre-commit hook exited with status 1 (40 ms)\n  │ src/crc.c:68: trailing \
             whitespace.\n  │ +/* x */   "
        );
        assert_eq!(progress.status_text(), "fixed test_a");
    }

    #[test]
    fn finished_steps_become_tick_and_cross_lines() {
        let mut progress = Progress::default();
        let done = progress.apply(
            &Event::BuildFinished {
                success: true,
                duration_ms: 3_200,
                errors: 0,
                warnings: 0,
                interrupted: false,
            },
            false,
        );
        assert_eq!(done[0].render(false), "✔ build 3.2 s");
        let failed = progress.apply(
            &Event::BuildFinished {
                success: false,
                duration_ms: 900,
                errors: 2,
                warnings: 1,
                interrupted: false,
            },
            false,
        );
        assert_eq!(failed[0].render(false), "✘ build failed: 2 errors (900 ms)");
        assert_eq!(
            failed[0].render(true),
            "\x1b[31m✘\x1b[0m build failed: 2 errors (900 ms)"
        );
        // Regression: a build stopped by Ctrl+C read as "build failed: 0 errors".
        let stopped = progress.apply(
            &Event::BuildFinished {
                success: false,
                duration_ms: 900,
                errors: 0,
                warnings: 0,
                interrupted: true,
            },
            false,
        );
        assert_eq!(stopped[0].render(false), "! build interrupted (900 ms)");
        let recovery = progress.apply(
            &Event::Transition {
                seq: 9,
                from: State::TestRun,
                to: State::ErrorRecovery,
                reason: "QEMU killed by signal 9".into(),
                iteration: 0,
                error_class: Some(ErrorClass::TestEnvFailure),
            },
            false,
        );
        assert_eq!(
            recovery[0].render(false),
            "! TEST_RUN: QEMU killed by signal 9 [TEST_ENV_FAILURE]"
        );
    }

    #[test]
    fn plain_mode_prints_only_warnings_and_errors() {
        let out = Buffer::default();
        let sink = TerminalSink::for_test(UiOptions::default(), None, Box::new(out.clone()));
        for event in a_test_run() {
            sink.emit(&event);
        }
        sink.emit(&Event::Message {
            level: Level::Error,
            text: "QEMU is not installed".into(),
        });
        assert_eq!(
            out.text(),
            "warning: the harness summary disagrees with the case lines\n\
             error: QEMU is not installed\n"
        );
    }

    #[test]
    fn plain_verbose_shows_console_lines_but_quiet_wins() {
        let out = Buffer::default();
        let verbose = UiOptions {
            verbose: true,
            ..UiOptions::default()
        };
        let sink = TerminalSink::for_test(verbose, None, Box::new(out.clone()));
        for event in a_test_run() {
            sink.emit(&event);
        }
        assert!(
            out.text()
                .starts_with("│ test_crc.c:12:test_crc_basic:PASS\n"),
            "{}",
            out.text()
        );

        let out = Buffer::default();
        let quiet = UiOptions {
            verbose: true,
            quiet: true,
            ..UiOptions::default()
        };
        let sink = TerminalSink::for_test(quiet, None, Box::new(out.clone()));
        for event in a_test_run() {
            sink.emit(&event);
        }
        assert!(!out.text().contains('│'), "{}", out.text());
    }

    #[test]
    fn interactive_mode_draws_steps_above_the_spinner_without_colour_when_off() {
        let screen = Screen::default();
        let plain = Buffer::default();
        let sink = TerminalSink::for_test(
            UiOptions::default(),
            Some(ProgressDrawTarget::term_like(Box::new(screen.clone()))),
            Box::new(plain.clone()),
        );
        for event in a_test_run() {
            sink.emit(&event);
        }
        let drawn = screen.0.lock().unwrap().clone();
        assert!(drawn.contains("✔ build 3.2 s"), "{drawn}");
        assert!(
            drawn.contains("✘ attempt 1: FAIL, 1 passed, 1 failed (exit 1, 40 ms)"),
            "{drawn}"
        );
        assert!(
            drawn.contains("warning: the harness summary disagrees"),
            "{drawn}"
        );
        assert!(
            !drawn.contains("│ test_crc.c"),
            "console lines only with --verbose: {drawn}"
        );
        assert!(!drawn.contains('\x1b'), "{drawn}");
        assert!(plain.text().is_empty(), "nothing bypasses the spinner");
        assert!(sink.bar.as_ref().is_some_and(ProgressBar::is_finished));
    }

    #[test]
    fn the_spinner_is_taken_down_while_a_person_answers_a_prompt() {
        let screen = Screen::default();
        let plain = Buffer::default();
        let sink = TerminalSink::for_test(
            UiOptions::default(),
            Some(ProgressDrawTarget::term_like(Box::new(screen.clone()))),
            Box::new(plain.clone()),
        );
        let bar = sink.bar.clone().unwrap();
        sink.emit(&transition(State::PatchGeneration, State::PatchReview, "r"));
        sink.emit(&Event::InputWanted {
            what: "approve iteration 1's candidate".into(),
        });
        assert!(bar.is_finished(), "the spinner is down during the prompt");
        let drawn_before = screen.0.lock().unwrap().clone();
        sink.emit(&Event::Message {
            level: Level::Info,
            text: "a line while the prompt is up".into(),
        });
        assert_eq!(
            *screen.0.lock().unwrap(),
            drawn_before,
            "nothing is drawn over the prompt"
        );
        assert!(plain.text().contains("a line while the prompt is up"));
        sink.emit(&Event::InputDone);
        assert!(!bar.is_finished(), "the spinner is back after the answer");
        sink.emit(&transition(
            State::PatchReview,
            State::PatchApply,
            "approved",
        ));
        assert_eq!(bar.prefix(), "PATCH_APPLY");
    }
}
