//! Board power control: the `[power]` commands of a board file (uhubctl, a PDU's CLI, a relay
//! script), run with `sh -c` with `{board}` expanded, each in its own process group under
//! `[power] timeout_s`. A cycle is the `cycle` command, or `off`, a pause of `[power] off_s`, then
//! `on`. What every command printed, and how it ended, goes to a power log next to the console
//! log as evidence; a command that fails or overruns is a [`DutError::Power`] carrying that
//! output. Deciding when to power-cycle is the orchestrator's business, not this module's.

use super::DutError;
use crate::config::{placeholder, PowerSpec};
use crate::process::output::{self, Limits, Stopped, TOOL_OUTPUT_MAX};
use crate::process::spawn_group;
use crate::rundir;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::process::Command;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// What to do to the board's power.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PowerAction {
    /// Switch it on (before the first attempt of a run).
    On,
    /// Switch it off and on again.
    Cycle,
}

impl PowerAction {
    pub fn name(self) -> &'static str {
        match self {
            PowerAction::On => "on",
            PowerAction::Cycle => "cycle",
        }
    }
}

/// A board's power switch.
#[derive(Debug, Clone)]
pub struct Power {
    board: String,
    spec: PowerSpec,
}

/// Where the power commands of an attempt log their output: next to its console log,
/// `console.log` → `power.log`, `console-2.log` → `power-2.log`.
pub fn power_log_path(console_log: &Path) -> PathBuf {
    let name = console_log
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let power = match name.strip_prefix("console") {
        Some(rest) => format!("power{rest}"),
        None => format!("{name}.power.log"),
    };
    console_log.with_file_name(power)
}

impl Power {
    /// `board` is the board's name (safe to expand into a shell command: see `config::Board`).
    pub fn new(board: &str, spec: PowerSpec) -> Power {
        Power {
            board: board.to_string(),
            spec,
        }
    }

    pub fn spec(&self) -> &PowerSpec {
        &self.spec
    }

    /// The commands `action` runs, in order, with the pause to keep after each, expanded. Empty
    /// when the board file has nothing for it.
    pub fn plan(&self, action: PowerAction) -> Vec<(String, Duration)> {
        let expand = |c: &String| placeholder::expand(c, &[("board", self.board.as_str())]);
        let s = &self.spec;
        match action {
            PowerAction::On => s.on.iter().map(|c| (expand(c), Duration::ZERO)).collect(),
            PowerAction::Cycle => match (&s.cycle, &s.off, &s.on) {
                (Some(cycle), _, _) => vec![(expand(cycle), Duration::ZERO)],
                (None, Some(off), Some(on)) => {
                    vec![(expand(off), s.off_pause), (expand(on), Duration::ZERO)]
                }
                (None, _, _) => Vec::new(),
            },
        }
    }

    /// Carries out `action`, writing `log` (created or truncated) whatever happens. Ok(false) when
    /// the board file has no command for it.
    pub async fn run(
        &self,
        action: PowerAction,
        log: &Path,
        cancel: &CancellationToken,
    ) -> Result<bool, DutError> {
        let plan = self.plan(action);
        if plan.is_empty() {
            return Ok(false);
        }
        let mut text = format!("fwfix: power {} of board {}\n", action.name(), self.board);
        let mut result = Ok(true);
        for (command, pause) in &plan {
            text.push_str(&format!("$ {command}\n"));
            let outcome = self.one(command, cancel).await;
            text.push_str(&outcome.output);
            if !outcome.output.is_empty() && !outcome.output.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&format!("fwfix: {}\n", outcome.ending));
            if let Some(message) = outcome.failed {
                result = Err(DutError::Power {
                    board: self.board.clone(),
                    action: action.name().to_string(),
                    command: command.clone(),
                    message,
                    log: outcome.output,
                });
                break;
            }
            if !pause.is_zero() {
                text.push_str(&format!(
                    "fwfix: waiting {:.1} s with the board off ([power] off_s)\n",
                    pause.as_secs_f64()
                ));
                tokio::select! {
                    _ = tokio::time::sleep(*pause) => {}
                    _ = cancel.cancelled() => {
                        text.push_str("fwfix: interrupted\n");
                        result = Err(self.interrupted(action, command));
                        break;
                    }
                }
            }
        }
        rundir::write_atomic(log, text.as_bytes()).map_err(|source| DutError::Io {
            doing: format!("writing {}", log.display()),
            source,
        })?;
        result
    }

    fn interrupted(&self, action: PowerAction, command: &str) -> DutError {
        DutError::Power {
            board: self.board.clone(),
            action: action.name().to_string(),
            command: command.to_string(),
            message: "interrupted".into(),
            log: String::new(),
        }
    }

    /// Runs one command to its end, its timeout, or cancellation.
    async fn one(&self, command: &str, cancel: &CancellationToken) -> Outcome {
        let started = Instant::now();
        // One pipe for both streams, so the log keeps their order.
        let mut sh = Command::new("sh");
        sh.arg("-c")
            .arg(format!("exec 2>&1\n{command}"))
            .env("FWFIX_BOARD", &self.board)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let (mut child, mut guard) = match spawn_group(&mut sh) {
            Ok(spawned) => spawned,
            Err(e) => {
                return Outcome {
                    output: String::new(),
                    ending: format!("could not start sh: {e}"),
                    failed: Some(format!("could not start sh: {e}")),
                }
            }
        };
        let limit = self.spec.timeout;
        let limits = Limits {
            timeout: limit,
            cancel: Some(cancel),
            term_grace: Duration::ZERO,
        };
        let captured = output::capture(&mut child, &mut guard, limits, TOOL_OUTPUT_MAX).await;
        let took = format!("{:.2} s", started.elapsed().as_secs_f64());
        match captured.into_output() {
            Err(Stopped::Cancelled) => Outcome {
                output: String::new(),
                ending: format!("interrupted after {took}"),
                failed: Some("interrupted".into()),
            },
            Err(Stopped::TimedOut) => {
                let why = format!(
                    "did not finish within {} s ([power] timeout_s)",
                    limit.as_secs_f64()
                );
                Outcome {
                    output: String::new(),
                    ending: why.clone(),
                    failed: Some(why),
                }
            }
            Err(Stopped::WaitFailed(e)) => Outcome {
                output: String::new(),
                ending: format!("could not be waited for: {e}"),
                failed: Some(format!("could not be waited for: {e}")),
            },
            Ok(out) => {
                let output = String::from_utf8_lossy(&out.stdout).into_owned();
                let ending = format!("{} after {took}", out.status);
                let failed = (!out.status.success()).then(|| format!("exited with {}", out.status));
                Outcome {
                    output,
                    ending,
                    failed,
                }
            }
        }
    }
}

/// How one power command went.
struct Outcome {
    output: String,
    /// For the log: how it ended and how long it took.
    ending: String,
    /// Why it counts as failed.
    failed: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(on: Option<&str>, off: Option<&str>, cycle: Option<&str>) -> PowerSpec {
        PowerSpec {
            on: on.map(String::from),
            off: off.map(String::from),
            cycle: cycle.map(String::from),
            off_pause: Duration::from_millis(10),
            timeout: Duration::from_secs(5),
            retry_on_hang: true,
        }
    }

    #[test]
    fn a_cycle_is_the_cycle_command_or_off_then_on() {
        let p = Power::new(
            "bench-1",
            spec(Some("on {board}"), Some("off {board}"), None),
        );
        assert_eq!(
            p.plan(PowerAction::Cycle),
            vec![
                ("off bench-1".to_string(), Duration::from_millis(10)),
                ("on bench-1".to_string(), Duration::ZERO)
            ]
        );
        assert_eq!(
            p.plan(PowerAction::On),
            vec![("on bench-1".to_string(), Duration::ZERO)]
        );
        let p = Power::new(
            "b",
            spec(Some("on"), Some("off"), Some("cycle {board} ${HOME}")),
        );
        assert_eq!(
            p.plan(PowerAction::Cycle),
            vec![("cycle b ${HOME}".to_string(), Duration::ZERO)]
        );
        let p = Power::new("b", spec(Some("on"), None, None));
        assert!(p.plan(PowerAction::Cycle).is_empty());
    }

    #[test]
    fn power_log_sits_next_to_the_console_log() {
        assert_eq!(
            power_log_path(Path::new("r/iter-000/console-2.log")),
            Path::new("r/iter-000/power-2.log")
        );
        assert_eq!(
            power_log_path(Path::new("r/iter-000/console.log")),
            Path::new("r/iter-000/power.log")
        );
    }

    #[tokio::test]
    async fn commands_run_in_order_and_their_output_is_logged() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("power.log");
        let p = Power::new(
            "b1",
            spec(
                Some("echo on $FWFIX_BOARD"),
                Some("echo off {board}; echo warn >&2"),
                None,
            ),
        );
        let ran = p
            .run(PowerAction::Cycle, &log, &CancellationToken::new())
            .await
            .unwrap();
        assert!(ran);
        let text = std::fs::read_to_string(&log).unwrap();
        let off = text.find("$ echo off b1").unwrap();
        let on = text.find("$ echo on $FWFIX_BOARD").unwrap();
        assert!(off < on, "{text}");
        assert!(text.contains("off b1\nwarn\n"), "{text}");
        assert!(text.contains("on b1\n"), "{text}");
        assert!(text.contains("off_s"), "{text}");
        let nothing = Power::new("b1", spec(None, Some("off"), None));
        assert!(!nothing
            .run(PowerAction::On, &log, &CancellationToken::new())
            .await
            .unwrap());
    }

    #[tokio::test]
    async fn a_failing_command_stops_the_cycle_with_its_output() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("power.log");
        let p = Power::new(
            "b1",
            spec(
                Some("echo must-not-run"),
                Some("echo relay stuck >&2; exit 3"),
                None,
            ),
        );
        let e = p
            .run(PowerAction::Cycle, &log, &CancellationToken::new())
            .await
            .unwrap_err();
        assert!(matches!(e, DutError::Power { .. }), "{e}");
        let msg = e.to_string();
        assert!(
            msg.contains("relay stuck") && msg.contains("exit status: 3"),
            "{msg}"
        );
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(!text.contains("$ echo must-not-run"), "{text}");
        assert!(text.contains("relay stuck"), "{text}");
    }

    /// Regression: a power command that left a process in the background (holding its output
    /// pipe) was read until that process ended, i.e. until its timeout.
    #[tokio::test]
    async fn a_command_that_leaves_a_process_running_ends_when_it_exits() {
        use crate::process::output::tests::{gone_soon, pid_in};
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("power.log");
        let pid_file = dir.path().join("left.pid");
        let on = format!(
            "echo relay on; sleep 300 & echo $! > '{}'",
            pid_file.display()
        );
        let mut s = spec(Some(&on), None, None);
        s.timeout = Duration::from_secs(60);
        let ran = tokio::time::timeout(
            Duration::from_secs(50),
            Power::new("b1", s).run(PowerAction::On, &log, &CancellationToken::new()),
        )
        .await
        .expect("the command's leftover held it up")
        .unwrap();
        assert!(ran);
        assert!(std::fs::read_to_string(&log).unwrap().contains("relay on"));
        let pid = pid_in(&pid_file);
        assert!(
            gone_soon(pid).await,
            "the power command's child {pid} outlived it"
        );
    }

    #[tokio::test]
    async fn a_stuck_command_is_killed_at_its_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("power.log");
        let mut s = spec(None, None, Some("sleep 30"));
        s.timeout = Duration::from_millis(200);
        let e = Power::new("b1", s)
            .run(PowerAction::Cycle, &log, &CancellationToken::new())
            .await
            .unwrap_err();
        assert!(e.to_string().contains("[power] timeout_s"), "{e}");
    }
}
