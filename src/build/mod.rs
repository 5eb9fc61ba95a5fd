//! Runs the profile's build command: `sh -c` in the build directory, under a timeout, with its
//! output streamed to build.log and to the event sink line by line, and the whole process group
//! killed on timeout, cancellation or drop. Two builds of one tree never run at once (several
//! jobs of one fwfix, or two fwfix processes): a build holds its tree's build lock, so two `make`s
//! never race in one `build/`. Parsing diagnostics out of the log is `analysis`'s job; this module
//! only reports what happened.

pub mod artifact;

use crate::events::{Event, EventSink, Level};
use crate::process::output::{run_to_exit, Ended, Limits};
use crate::process::spawn_group;
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

/// One build to run.
#[derive(Debug, Clone)]
pub struct BuildRequest {
    /// Run with `sh -c`.
    pub command: String,
    /// Absolute directory to run in.
    pub cwd: PathBuf,
    pub timeout: Duration,
    /// Where the combined output goes (created or truncated).
    pub log_path: PathBuf,
    /// Extra environment for the command.
    pub env: Vec<(String, String)>,
    /// The tree's build lock (a file held with an exclusive `flock` while the command runs);
    /// None for a build alone in its tree, such as a trial build in a worktree of its own.
    pub lock: Option<PathBuf>,
}

/// How a build ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BuildEnd {
    /// The command exited with this status (0 is success).
    Exited(i32),
    /// Killed by a signal that fwfix did not send.
    Signalled(i32),
    TimedOut,
    Cancelled,
}

/// The result of a build that ran.
#[derive(Debug, Clone)]
pub struct BuildOutput {
    pub end: BuildEnd,
    pub duration: Duration,
    /// The build log's full text (also in `log_path`).
    pub log: String,
    /// A program the shell or make could not find, e.g. `arm-none-eabi-gcc`.
    pub missing_tool: Option<String>,
    /// The tree's build lock, still held when the request named one: the caller lets it go once
    /// it has said the build finished, so another job's build is never seen to start before this
    /// one is seen to end.
    pub turn: Option<BuildTurn>,
}

/// A tree's build lock, held; it is released when the last clone goes.
#[derive(Clone)]
pub struct BuildTurn {
    _lock: std::sync::Arc<BuildLock>,
}

impl std::fmt::Debug for BuildTurn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BuildTurn")
    }
}

impl BuildOutput {
    pub fn success(&self) -> bool {
        self.end == BuildEnd::Exited(0)
    }
}

/// Errors that stop a build from running at all.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("build directory {} does not exist", path.display())]
    NoSuchDirectory { path: PathBuf },
    #[error("cannot start `sh -c {command}`: {source}")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot take the build lock {}: {source}", path.display())]
    Lock {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write build log {}: {source}", path.display())]
    Log {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The log never holds more than this in memory; the file gets everything.
const MAX_LOG_IN_MEMORY: usize = 8 * 1024 * 1024;
/// Time a build gets to stop on SIGTERM before its group is killed.
const TERM_GRACE: Duration = Duration::from_secs(2);
/// A tree's build lock, relative to its root (`.fwfix/` is kept out of git).
pub const BUILD_LOCK: &str = ".fwfix/build.lock";
/// How often a build waiting for its tree's lock, held by another fwfix process, tries again.
/// Jobs of one fwfix wait on each other without polling (see [`BuildLock`]).
const LOCK_POLL: Duration = Duration::from_millis(20);

/// A tree's build lock held: the in-process turn (jobs of one fwfix queue on it and are woken the
/// moment it is released, where polling the file would cost each waiter up to [`LOCK_POLL`]),
/// then the `flock` that keeps other fwfix processes out.
struct BuildLock {
    _file: Flock<File>,
    _turn: tokio::sync::OwnedMutexGuard<()>,
}

/// The in-process turn of the lock file at `path` (one per path, for the process's lifetime: a
/// handful of trees at most).
fn turn_of(path: &Path) -> std::sync::Arc<tokio::sync::Mutex<()>> {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock};
    static TURNS: OnceLock<Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>> = OnceLock::new();
    let mut turns = TURNS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    turns.entry(path.to_path_buf()).or_default().clone()
}

/// Runs the build. Returns `Ok` whenever the command ran, whatever its status.
pub async fn run(
    req: &BuildRequest,
    cancel: &CancellationToken,
    events: &dyn EventSink,
) -> Result<BuildOutput, BuildError> {
    if !req.cwd.is_dir() {
        return Err(BuildError::NoSuchDirectory {
            path: req.cwd.clone(),
        });
    }
    let log_err = |source| BuildError::Log {
        path: req.log_path.clone(),
        source,
    };
    // Written in place, a line a system call: a local file's write does not wait on the build,
    // where the blocking pool would put a thread start (in a fresh process) before the build and
    // a hand-off after it on the way to the test.
    let log_file = File::create(&req.log_path).map_err(log_err)?;
    let started = Instant::now();
    let turn = match &req.lock {
        Some(path) => match lock_build(path, cancel, events).await? {
            Some(lock) => Some(BuildTurn {
                _lock: std::sync::Arc::new(lock),
            }),
            None => {
                return Ok(BuildOutput {
                    end: BuildEnd::Cancelled,
                    duration: started.elapsed(),
                    log: String::new(),
                    missing_tool: None,
                    turn: None,
                })
            }
        },
        None => None,
    };
    events.emit(&Event::BuildStarted {
        command: req.command.clone(),
    });
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(&req.command)
        .current_dir(&req.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .envs(req.env.iter().map(|(k, v)| (k, v)));
    let (mut child, mut guard) = spawn_group(&mut cmd).map_err(|source| BuildError::Spawn {
        command: req.command.clone(),
        source,
    })?;

    let mut kept = KeptLog {
        file: log_file,
        text: String::new(),
        missing_tool: None,
    };
    let limits = Limits {
        timeout: req.timeout,
        cancel: Some(cancel),
        term_grace: TERM_GRACE,
    };
    let ended = run_to_exit(&mut child, &mut guard, limits, |_, line| {
        let text = String::from_utf8_lossy(line);
        kept.push(text.trim_end_matches(['\n', '\r']).to_string(), events)
    })
    .await
    .map_err(log_err)?;
    let end = match ended {
        Ended::Exited(status) => exit_of(Some(status)),
        Ended::WaitFailed(_) => exit_of(None),
        Ended::TimedOut => BuildEnd::TimedOut,
        Ended::Cancelled => BuildEnd::Cancelled,
    };
    Ok(BuildOutput {
        end,
        duration: started.elapsed(),
        log: kept.text,
        missing_tool: kept.missing_tool,
        turn,
    })
}

/// The build's output as it arrives: all of it in build.log, the first
/// [`MAX_LOG_IN_MEMORY`] bytes in memory, and the first missing program it names.
struct KeptLog {
    file: File,
    text: String,
    missing_tool: Option<String>,
}

impl KeptLog {
    fn push(&mut self, line: String, events: &dyn EventSink) -> std::io::Result<()> {
        self.file.write_all(format!("{line}\n").as_bytes())?;
        if self.missing_tool.is_none() {
            self.missing_tool = missing_tool_in(&line);
        }
        if self.text.len() < MAX_LOG_IN_MEMORY {
            self.text.push_str(&line);
            self.text.push('\n');
        }
        events.emit(&Event::BuildOutput { line });
        Ok(())
    }
}

/// Takes the exclusive build lock at `path`, waiting while another build holds it. None when
/// cancelled while waiting.
async fn lock_build(
    path: &Path,
    cancel: &CancellationToken,
    events: &dyn EventSink,
) -> Result<Option<BuildLock>, BuildError> {
    let lock_err = |source| BuildError::Lock {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(lock_err)?;
    }
    let turn = turn_of(path);
    let mut said = false;
    let turn = match turn.clone().try_lock_owned() {
        Ok(turn) => turn,
        Err(_) => {
            said = true;
            events.emit(&waiting());
            tokio::select! {
                turn = turn.lock_owned() => turn,
                _ = cancel.cancelled() => return Ok(None),
            }
        }
    };
    loop {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(lock_err)?;
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(file) => {
                return Ok(Some(BuildLock {
                    _file: file,
                    _turn: turn,
                }))
            }
            Err((_, Errno::EWOULDBLOCK)) => {}
            Err((_, errno)) => return Err(lock_err(errno.into())),
        }
        if !said {
            said = true;
            events.emit(&waiting());
        }
        tokio::select! {
            _ = tokio::time::sleep(LOCK_POLL) => {}
            _ = cancel.cancelled() => return Ok(None),
        }
    }
}

fn waiting() -> Event {
    Event::Message {
        level: Level::Info,
        text: "waiting for another build of this tree to finish".into(),
    }
}

fn exit_of(status: Option<std::process::ExitStatus>) -> BuildEnd {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Some(s) => match (s.code(), s.signal()) {
            (Some(code), _) => BuildEnd::Exited(code),
            (None, Some(sig)) => BuildEnd::Signalled(sig),
            (None, None) => BuildEnd::Exited(-1),
        },
        None => BuildEnd::Exited(-1),
    }
}

/// Recognises the shell's and make's "program not found" lines and names the program.
fn missing_tool_in(line: &str) -> Option<String> {
    // dash: `sh: 1: arm-none-eabi-gcc: not found`; bash: `bash: line 1: foo: command not found`
    for suffix in [": not found", ": command not found"] {
        if let Some(head) = line.strip_suffix(suffix) {
            return head.rsplit(": ").next().map(str::to_string);
        }
    }
    // make: `make: arm-none-eabi-gcc: No such file or directory` (exec failed for a recipe).
    if let Some(rest) = line.strip_prefix("make: ") {
        if let Some(tool) = rest.strip_suffix(": No such file or directory") {
            if !tool.contains(' ') && !tool.contains('/') {
                return Some(tool.to_string());
            }
        }
    }
    None
}

/// Resolves the build directory: `cwd` relative to the repository root.
pub fn build_dir(repo: &Path, cwd: &Path) -> PathBuf {
    repo.join(cwd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_missing_programs() {
        assert_eq!(
            missing_tool_in("sh: 1: arm-none-eabi-gcc: not found").as_deref(),
            Some("arm-none-eabi-gcc")
        );
        assert_eq!(
            missing_tool_in("bash: line 1: cmake: command not found").as_deref(),
            Some("cmake")
        );
        assert_eq!(
            missing_tool_in("make: arm-none-eabi-gcc: No such file or directory").as_deref(),
            Some("arm-none-eabi-gcc")
        );
        assert_eq!(
            missing_tool_in("src/crc.c:3:10: fatal error: x.h: No such file or directory"),
            None
        );
        assert_eq!(missing_tool_in("test_not_found:PASS"), None);
    }
}
