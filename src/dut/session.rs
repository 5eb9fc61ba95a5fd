//! What the DUT backends (QEMU, a real board, a board behind a debug probe) do the same way around
//! an attempt: create and finish console logs with errors that name the file, log and announce
//! each console line as live or stale, turn the captured lines into a [`Capture`], and run a short
//! probe of a tool (`--version`, `-machine help`) under a time limit.
//!
//! It must not drive an attempt or decide how it ended: each backend's capture loop does that.

use super::DutError;
use crate::capture::log::ConsoleLog;
use crate::capture::nonce::NonceGate;
use crate::capture::store::LineStore;
use crate::capture::{Capture, ConsoleLine, FaultSnapshot, RunEnd};
use crate::events::{Event, EventSink};
use crate::process::output::{self, Limits, Stopped, TOOL_OUTPUT_MAX};
use crate::process::GroupGuard;
use std::path::Path;
use std::process::Output;
use std::time::Duration;
use tokio::process::Child;
use tokio::time::Instant;

/// Creates a console or flash log.
pub(crate) async fn create_log(path: &Path) -> Result<ConsoleLog, DutError> {
    ConsoleLog::create(path)
        .await
        .map_err(|source| DutError::Io {
            doing: format!("creating {}", path.display()),
            source,
        })
}

/// Sorts a console line into this attempt's output or output left from an earlier run, writes it
/// to console.log marked accordingly and announces it; returns whether it is live, which is all
/// the end detector may read.
pub(crate) async fn admit_line(
    line: &ConsoleLine,
    gate: &mut NonceGate,
    log: &ConsoleLog,
    events: &dyn EventSink,
    attempt: u32,
) -> bool {
    let live = gate.admit(line);
    log.write_as(line, live).await;
    events.emit(&Event::ConsoleLine {
        attempt,
        t_ms: line.t_ms,
        stream: line.stream,
        text: line.text.clone(),
    });
    live
}

/// How finishing the log at `path` went, as a DUT error naming the file.
pub(crate) fn log_written(path: &Path, done: std::io::Result<()>) -> Result<(), DutError> {
    done.map_err(|source| DutError::Io {
        doing: format!("writing {}", path.display()),
        source,
    })
}

/// Flushes a log and says which file could not be written.
pub(crate) async fn finish_log(log: ConsoleLog) -> Result<(), DutError> {
    let path = log.path().to_path_buf();
    log_written(&path, log.finish().await)
}

/// The capture of an attempt launched at `launch`, from the lines it kept and how it ended.
pub(crate) fn capture_of(
    store: LineStore,
    launch: Instant,
    end: RunEnd,
    fault: Option<FaultSnapshot>,
    stopped_at: Option<FaultSnapshot>,
    exit_code: Option<i32>,
    nonce: NonceGate,
) -> Capture {
    let (lines, truncated) = store.into_lines();
    Capture {
        lines,
        end,
        fault,
        duration_ms: launch.elapsed().as_millis() as u64,
        truncated,
        exit_code,
        stopped_at,
        nonce: nonce.finish(),
        faults_watched: false,
    }
}

/// Waits up to `limit` for a probe `child` (spawned by `spawn_group` with piped stderr) to exit
/// and returns its output when it succeeded. `invocation` is the command line as a user would
/// type it, for messages.
pub(crate) async fn probe_output(
    (mut child, mut guard): (Child, GroupGuard),
    program: &str,
    invocation: &str,
    limit: Duration,
) -> Result<Output, DutError> {
    let limits = Limits {
        timeout: limit,
        cancel: None,
        term_grace: Duration::ZERO,
    };
    let output = output::capture(&mut child, &mut guard, limits, TOOL_OUTPUT_MAX)
        .await
        .into_output()
        .map_err(|ended| match ended {
            Stopped::WaitFailed(source) => DutError::Io {
                doing: format!("running `{invocation}`"),
                source,
            },
            _ => DutError::StartFailed {
                program: program.to_string(),
                message: format!("`{invocation}` did not finish within {} s", limit.as_secs()),
            },
        })?;
    if !output.status.success() {
        return Err(DutError::StartFailed {
            program: program.to_string(),
            message: format!(
                "`{invocation}` failed ({}): {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ),
        });
    }
    Ok(output)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Stdio;
    use tokio::process::Command;

    fn spawn(script: &str) -> (Child, GroupGuard) {
        let mut command = Command::new("sh");
        command
            .args(["-c", script])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        crate::process::spawn_group(&mut command).unwrap()
    }

    #[tokio::test]
    async fn a_probe_returns_its_output_or_says_why_not() {
        let output = probe_output(spawn("echo fine"), "sh", "sh fine", Duration::from_secs(5))
            .await
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&output.stdout), "fine\n");

        let failed = probe_output(
            spawn("echo broken >&2; exit 3"),
            "sh",
            "sh broken",
            Duration::from_secs(5),
        )
        .await;
        assert!(matches!(
            failed,
            Err(DutError::StartFailed { ref message, .. })
                if message.starts_with("`sh broken` failed") && message.ends_with(": broken")
        ));

        let slow = probe_output(
            spawn("sleep 5"),
            "sh",
            "sh slow",
            Duration::from_millis(100),
        )
        .await;
        assert!(matches!(
            slow,
            Err(DutError::StartFailed { ref message, .. }) if message.contains("did not finish")
        ));
    }
}
