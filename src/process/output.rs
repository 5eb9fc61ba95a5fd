//! A user command's output, read until the command ends: every command fwfix runs and reads
//! (builds, flash and power commands, hooks, patch agents, probes) ends when its process exits,
//! not when its pipes close. A process it left running in the background (`make; sleep 300 &`)
//! holds the pipes open for as long as it lives; waiting for their end would wait out the
//! command's timeout. Once the process exited, what is left in its group is killed and the output
//! already written is still read for [`DRAIN_GRACE`] (a process that left the group may keep the
//! pipes open yet). This module does not interpret the output.

use super::{AbortOnDrop, GroupGuard};
use std::process::ExitStatus;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::Child;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// How long the output a command's processes already wrote is still read once it exited.
pub const DRAIN_GRACE: Duration = Duration::from_secs(1);

/// Which of the child's pipes a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pipe {
    Stdout,
    Stderr,
}

/// How a command run to its end ended.
#[derive(Debug)]
pub enum Ended {
    /// The process exited by itself (any status).
    Exited(ExitStatus),
    /// It outlived its time limit and was stopped.
    TimedOut,
    /// The run was cancelled and the command stopped.
    Cancelled,
    /// It could not be waited for; it was stopped.
    WaitFailed(std::io::Error),
}

/// Why a command did not exit by itself.
#[derive(Debug)]
pub enum Stopped {
    TimedOut,
    Cancelled,
    WaitFailed(std::io::Error),
}

/// How to stop a command: its time limit, the run's cancellation, and how long it gets after
/// SIGTERM before its group is killed.
#[derive(Debug, Clone, Copy)]
pub struct Limits<'a> {
    pub timeout: Duration,
    pub cancel: Option<&'a CancellationToken>,
    pub term_grace: Duration,
}

/// Reads `child`'s piped stdout and stderr (those it has) as lines, each with its line ending
/// as written, handing each to `on_line` in the order they arrived, until the child exits, its
/// time runs out or the run is cancelled; then its group goes and the rest of its output is read
/// for [`DRAIN_GRACE`]. An error from `on_line` stops the reading and is returned (the command is
/// still stopped: the guard kills its group).
pub async fn run_to_exit<E>(
    child: &mut Child,
    guard: &mut GroupGuard,
    limits: Limits<'_>,
    mut on_line: impl FnMut(Pipe, &[u8]) -> Result<(), E>,
) -> Result<Ended, E> {
    // Both pipes feed one channel so the lines keep the order they arrived in.
    let (tx, mut rx) = mpsc::channel::<(Pipe, Vec<u8>)>(256);
    let _readers: Vec<AbortOnDrop<()>> = [
        child
            .stdout
            .take()
            .map(|out| tokio::spawn(forward_lines(out, Pipe::Stdout, tx.clone()))),
        child
            .stderr
            .take()
            .map(|err| tokio::spawn(forward_lines(err, Pipe::Stderr, tx.clone()))),
    ]
    .into_iter()
    .flatten()
    .map(AbortOnDrop)
    .collect();
    drop(tx);

    let never = CancellationToken::new();
    let cancel = limits.cancel.unwrap_or(&never);
    let deadline = tokio::time::sleep(limits.timeout);
    tokio::pin!(deadline);
    let mut open = true;
    let ended = loop {
        tokio::select! {
            line = rx.recv(), if open => match line {
                Some((pipe, line)) => on_line(pipe, &line)?,
                None => open = false,
            },
            status = child.wait() => break match status {
                Ok(status) => Ended::Exited(status),
                Err(e) => Ended::WaitFailed(e),
            },
            _ = &mut deadline => break Ended::TimedOut,
            _ = cancel.cancelled() => break Ended::Cancelled,
        }
    };
    match ended {
        Ended::Exited(_) => guard.kill_rest(),
        _ => guard.terminate(child, limits.term_grace).await,
    }
    // The group is gone, which closes the pipes it held: what is already in them is read.
    let drain = tokio::time::sleep(DRAIN_GRACE);
    tokio::pin!(drain);
    while open {
        tokio::select! {
            line = rx.recv() => match line {
                Some((pipe, line)) => on_line(pipe, &line)?,
                None => open = false,
            },
            _ = &mut drain => break,
        }
    }
    Ok(ended)
}

/// A command's output, captured up to a size.
#[derive(Debug)]
pub struct Captured {
    pub ended: Ended,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl Captured {
    /// As a std `Output` when the command exited by itself; why it was stopped otherwise.
    pub fn into_output(self) -> Result<std::process::Output, Stopped> {
        match self.ended {
            Ended::Exited(status) => Ok(std::process::Output {
                status,
                stdout: self.stdout,
                stderr: self.stderr,
            }),
            Ended::TimedOut => Err(Stopped::TimedOut),
            Ended::Cancelled => Err(Stopped::Cancelled),
            Ended::WaitFailed(e) => Err(Stopped::WaitFailed(e)),
        }
    }

    /// The exit status when the command exited by itself.
    pub fn status(&self) -> Option<ExitStatus> {
        match self.ended {
            Ended::Exited(status) => Some(status),
            _ => None,
        }
    }
}

/// What a helper tool (a probe, a power or labgrid command) may print and still be kept whole.
pub const TOOL_OUTPUT_MAX: usize = 1 << 20;

/// [`run_to_exit`], keeping the first `cap` bytes of each pipe (the rest is read and dropped).
pub async fn capture(
    child: &mut Child,
    guard: &mut GroupGuard,
    limits: Limits<'_>,
    cap: usize,
) -> Captured {
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    let ended = run_to_exit(child, guard, limits, |pipe, line| {
        let kept = match pipe {
            Pipe::Stdout => &mut stdout,
            Pipe::Stderr => &mut stderr,
        };
        let room = cap.saturating_sub(kept.len()).min(line.len());
        kept.extend_from_slice(&line[..room]);
        Ok::<(), std::convert::Infallible>(())
    })
    .await;
    let ended = match ended {
        Ok(ended) => ended,
        Err(never) => match never {},
    };
    Captured {
        ended,
        stdout,
        stderr,
    }
}

async fn forward_lines(
    stream: impl AsyncRead + Unpin,
    pipe: Pipe,
    tx: mpsc::Sender<(Pipe, Vec<u8>)>,
) {
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = Vec::new();
        match reader.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                if tx.send((pipe, line)).await.is_err() {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::process::spawn_group;
    use std::process::Stdio;
    use tokio::process::Command;

    fn sh(script: &str) -> Command {
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(script)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    /// The process id a test command wrote into `file`.
    pub(crate) fn pid_in(file: &std::path::Path) -> u32 {
        std::fs::read_to_string(file)
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    /// Whether `pid` is gone within a few seconds. A killed process not yet reaped by whoever
    /// adopted it is a zombie: gone all the same.
    pub(crate) async fn gone_soon(pid: u32) -> bool {
        for _ in 0..300 {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            if stat.is_empty() || stat.contains(") Z ") {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        false
    }

    const LIMITS: Limits<'static> = Limits {
        timeout: Duration::from_secs(60),
        cancel: None,
        term_grace: Duration::from_secs(2),
    };

    /// Regression: a command that left a process in the background was read until that process
    /// closed the pipes, i.e. until the command's timeout.
    #[tokio::test]
    async fn a_command_ends_with_its_process_and_what_it_left_is_killed() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("left.pid");
        let mut cmd = sh(&format!(
            "echo out; echo err >&2; sleep 300 & echo $! > '{}'; printf 'crlf\\r\\n'",
            pid_file.display()
        ));
        let (mut child, mut guard) = spawn_group(&mut cmd).unwrap();
        let captured = tokio::time::timeout(
            Duration::from_secs(50),
            capture(&mut child, &mut guard, LIMITS, 1 << 20),
        )
        .await
        .expect("the command's leftover held it up");
        assert!(captured.status().is_some_and(|s| s.success()));
        assert_eq!(captured.stdout, b"out\ncrlf\r\n");
        assert_eq!(captured.stderr, b"err\n");
        let pid = pid_in(&pid_file);
        assert!(
            gone_soon(pid).await,
            "the background process {pid} outlived its command"
        );
    }

    #[tokio::test]
    async fn a_command_past_its_timeout_is_stopped_with_its_output_kept() {
        let mut cmd = sh("echo started; exec sleep 300");
        let (mut child, mut guard) = spawn_group(&mut cmd).unwrap();
        let limits = Limits {
            timeout: Duration::from_millis(300),
            ..LIMITS
        };
        let captured = capture(&mut child, &mut guard, limits, 1 << 20).await;
        assert!(matches!(captured.ended, Ended::TimedOut));
        assert_eq!(captured.stdout, b"started\n");
    }

    #[tokio::test]
    async fn output_past_the_cap_is_dropped() {
        let mut cmd = sh("echo 0123456789");
        let (mut child, mut guard) = spawn_group(&mut cmd).unwrap();
        let captured = capture(&mut child, &mut guard, LIMITS, 4).await;
        assert_eq!(captured.stdout, b"0123");
    }
}
