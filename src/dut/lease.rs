//! Board leases: one run at a time on a hardware board, across every fwfix on the host.
//!
//! A lease is an advisory exclusive `flock` on `<state>/boards/<board>.lock`; once it is held, the
//! file's content is the holder's record (run id, pid, host, user, command, start time) as JSON, so
//! whoever waits can say who they wait for. The lock dies with the process that holds it, so a
//! killed run never leaves a board locked: the next run takes the lock and, finding the dead
//! holder's record still in the file, reports the takeover. A clean release empties the file
//! before unlocking. The file is opened close-on-exec (as Rust opens every file), so QEMU, a
//! flasher or gdb started during the run never keep the lock alive after fwfix is gone.
//!
//! QEMU boards need no lease: each run starts its own QEMU. The orchestrator decides who takes a
//! lease and for how long; this module only takes, describes and releases it.

use super::boards_state::{boards_dir, Holder};
use crate::events::{Event, EventSink};
use chrono::Utc;
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{Seek, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// The first pause between two tries; it doubles up to [`MAX_POLL`].
const FIRST_POLL: Duration = Duration::from_millis(100);
const MAX_POLL: Duration = Duration::from_secs(2);

/// How a lease was taken, for the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LeaseInfo {
    pub board: String,
    pub holder: Holder,
    /// How long the run waited for the board.
    pub waited_ms: u64,
    /// The holder a killed run left behind, whose lease this one took over.
    pub took_over: Option<Holder>,
}

impl LeaseInfo {
    /// One line for the report's notes.
    pub fn note(&self) -> String {
        let waited = if self.waited_ms == 0 {
            "without waiting".to_string()
        } else {
            format!("after waiting {} ms", self.waited_ms)
        };
        match &self.took_over {
            Some(old) => format!(
                "leased board {} {waited}, taking over the lease of {}, whose process is gone",
                self.board,
                old.describe()
            ),
            None => format!("leased board {} {waited}", self.board),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    #[error("cannot use the lease file {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "board {board} is busy: leased by {}; gave up after {} (--lock-timeout {})",
        holder.as_ref().map(|h| h.describe()).unwrap_or_else(|| "a holder whose record cannot be read".to_string()),
        if waited.as_secs() == 0 { "not waiting".to_string() } else { format!("waiting {} s", waited.as_secs()) },
        humantime(*timeout)
    )]
    Timeout {
        board: String,
        // Boxed: the error travels through every Result of the claim.
        holder: Option<Box<Holder>>,
        waited: Duration,
        timeout: Duration,
    },
    #[error("stopped waiting for board {board}'s lease: cancelled")]
    Cancelled { board: String },
}

/// A held lease. Dropping it releases the board (on every exit path: error, abort, panic).
#[derive(Debug)]
pub struct Lease {
    file: Flock<File>,
    info: LeaseInfo,
}

impl Lease {
    pub fn info(&self) -> &LeaseInfo {
        &self.info
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        // An empty file says "released cleanly"; a record left in a free lock file means its
        // holder was killed. Unlocking follows when the Flock drops.
        let _ = self.file.set_len(0);
    }
}

/// What a board's lease file says right now (for `fwfix boards list`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseState {
    Free,
    /// Held; the holder is None when its record cannot be read (being written).
    Held(Option<Holder>),
    /// Free, but a killed holder's record is still in the file: the next run takes it over.
    Stale(Holder),
}

/// Where `board`'s lease is kept.
pub fn lock_path(state_dir: &Path, board: &str) -> PathBuf {
    boards_dir(state_dir).join(format!("{board}.lock"))
}

/// Takes `board`'s lease for `me`, waiting up to `timeout` (zero: one try) while another run
/// holds it, and saying whom it waits for. Cancelling `cancel` stops the wait at once.
pub async fn acquire(
    state_dir: &Path,
    board: &str,
    me: Holder,
    timeout: Duration,
    cancel: &CancellationToken,
    events: &dyn EventSink,
) -> Result<Lease, LeaseError> {
    let path = lock_path(state_dir, board);
    let io = |source| LeaseError::Io {
        path: path.clone(),
        source,
    };
    std::fs::create_dir_all(boards_dir(state_dir)).map_err(io)?;
    // Group-writable, so that users sharing a lab's state directory can all take the lease.
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o664)
        .open(&path)
        .map_err(io)?;
    let started = Instant::now();
    let deadline = started + timeout;
    let mut pause = FIRST_POLL;
    let mut announced: Option<Option<Holder>> = None;
    loop {
        file = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(locked) => return take(locked, board, me, started.elapsed(), events, &path),
            Err((file, Errno::EWOULDBLOCK)) => file,
            Err((_, errno)) => return Err(io(errno.into())),
        };
        let holder = read_holder(&path);
        let now = Instant::now();
        if now >= deadline {
            return Err(LeaseError::Timeout {
                board: board.to_string(),
                holder: holder.map(Box::new),
                waited: started.elapsed(),
                timeout,
            });
        }
        // Said again only when someone else got the board in between.
        if announced.as_ref() != Some(&holder) {
            events.emit(&Event::LeaseWaiting {
                board: board.to_string(),
                holder: holder.clone(),
                timeout_s: timeout.as_secs(),
            });
            announced = Some(holder);
        }
        tokio::select! {
            _ = cancel.cancelled() => {
                return Err(LeaseError::Cancelled { board: board.to_string() });
            }
            _ = tokio::time::sleep(pause.min(deadline - now)) => {}
        }
        pause = (pause * 2).min(MAX_POLL);
    }
}

/// Writes `me` into the freshly locked file, noting a killed holder's record found there.
fn take(
    mut file: Flock<File>,
    board: &str,
    me: Holder,
    waited: Duration,
    events: &dyn EventSink,
    path: &Path,
) -> Result<Lease, LeaseError> {
    let took_over = read_holder(path);
    // The record says since when the board is this run's, not since when it asked.
    let me = Holder {
        started_at: Utc::now(),
        ..me
    };
    let record = serde_json::to_vec_pretty(&me).map_err(|e| LeaseError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::other(e),
    })?;
    file.set_len(0)
        .and_then(|()| file.rewind())
        .and_then(|()| file.write_all(&record))
        .and_then(|()| file.sync_data())
        .map_err(|source| LeaseError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    let info = LeaseInfo {
        board: board.to_string(),
        holder: me,
        waited_ms: u64::try_from(waited.as_millis()).unwrap_or(u64::MAX),
        took_over,
    };
    events.emit(&Event::LeaseAcquired {
        board: info.board.clone(),
        waited_ms: info.waited_ms,
        took_over: info.took_over.clone(),
    });
    Ok(Lease { file, info })
}

/// Looks at `board`'s lease without taking it.
pub fn probe(state_dir: &Path, board: &str) -> Result<LeaseState, LeaseError> {
    let path = lock_path(state_dir, board);
    let file = match File::open(&path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(LeaseState::Free),
        Err(source) => return Err(LeaseError::Io { path, source }),
    };
    // A shared lock is granted only when nobody holds the exclusive one; it is dropped at once.
    match Flock::lock(file, FlockArg::LockSharedNonblock) {
        Ok(_free) => Ok(match read_holder(&path) {
            Some(old) => LeaseState::Stale(old),
            None => LeaseState::Free,
        }),
        Err((_, Errno::EWOULDBLOCK)) => Ok(LeaseState::Held(read_holder(&path))),
        Err((_, errno)) => Err(LeaseError::Io {
            path,
            source: errno.into(),
        }),
    }
}

/// The record in a lease file; None when it is empty (released) or unreadable.
fn read_holder(path: &Path) -> Option<Holder> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

/// `90s`, `5m`, `2h`, `0`: the way `--lock-timeout` takes it.
fn humantime(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0 => "0".to_string(),
        s if s % 3600 == 0 => format!("{}h", s / 3600),
        s if s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::NullSink;

    fn holder(run: &str) -> Holder {
        Holder {
            run_id: run.into(),
            pid: 4242,
            host: "lab1".into(),
            user: "ci".into(),
            command: "test".into(),
            started_at: "2024-05-01T12:03:04Z".parse().unwrap(),
        }
    }

    #[test]
    fn a_holder_record_says_who_where_and_since_when() {
        let h = holder("20240501-120304-beef");
        assert_eq!(
            h.describe(),
            "run 20240501-120304-beef (fwfix test, pid 4242 on host lab1, user ci, since \
             2024-05-01T12:03:04Z)"
        );
        let json = serde_json::to_value(&h).unwrap();
        for key in ["run_id", "pid", "host", "user", "command", "started_at"] {
            assert!(json.get(key).is_some(), "{key} in {json}");
        }
        // Another host's process cannot be looked at, so it is never called gone.
        assert!(!h.known_gone());
    }

    #[test]
    fn the_timeout_error_names_the_holder_and_the_limit() {
        let e = LeaseError::Timeout {
            board: "nucleo".into(),
            holder: Some(Box::new(holder("r1"))),
            waited: Duration::from_secs(30),
            timeout: Duration::from_secs(30),
        }
        .to_string();
        assert!(
            e.starts_with("board nucleo is busy: leased by run r1"),
            "{e}"
        );
        assert!(e.contains("pid 4242"), "{e}");
        assert!(e.contains("waiting 30 s (--lock-timeout 30s)"), "{e}");
        let e = LeaseError::Timeout {
            board: "nucleo".into(),
            holder: None,
            waited: Duration::ZERO,
            timeout: Duration::ZERO,
        }
        .to_string();
        assert!(
            e.contains("cannot be read; gave up after not waiting (--lock-timeout 0)"),
            "{e}"
        );
        assert_eq!(humantime(Duration::from_secs(600)), "10m");
        assert_eq!(humantime(Duration::from_secs(7200)), "2h");
        assert_eq!(humantime(Duration::from_secs(90)), "90s");
    }

    #[test]
    fn the_note_tells_a_takeover_from_a_plain_lease() {
        let mut info = LeaseInfo {
            board: "nucleo".into(),
            holder: holder("r2"),
            waited_ms: 0,
            took_over: None,
        };
        assert_eq!(info.note(), "leased board nucleo without waiting");
        info.waited_ms = 1500;
        info.took_over = Some(holder("r1"));
        let note = info.note();
        assert!(
            note.starts_with(
                "leased board nucleo after waiting 1500 ms, taking over the lease of run r1"
            ),
            "{note}"
        );
        assert!(note.ends_with("whose process is gone"), "{note}");
    }

    // The lock itself, between open file descriptions of this one process: flock treats each open
    // of the file as its own lock holder, as it does two processes.
    #[tokio::test]
    async fn a_held_lease_is_busy_and_a_released_one_is_free_and_empty() {
        let dir = tempfile::tempdir().unwrap();
        let cancel = CancellationToken::new();
        assert_eq!(probe(dir.path(), "b").unwrap(), LeaseState::Free);
        let first = acquire(
            dir.path(),
            "b",
            holder("r1"),
            Duration::ZERO,
            &cancel,
            &NullSink,
        )
        .await
        .unwrap();
        assert_eq!(first.info().took_over, None);
        // The record says since when the lease is held, not since when it was asked for.
        match probe(dir.path(), "b").unwrap() {
            LeaseState::Held(Some(h)) => {
                assert_eq!(h.run_id, "r1");
                assert!(h.started_at > holder("r1").started_at);
            }
            other => panic!("{other:?}"),
        }
        let busy = acquire(
            dir.path(),
            "b",
            holder("r2"),
            Duration::ZERO,
            &cancel,
            &NullSink,
        )
        .await
        .unwrap_err();
        assert!(
            matches!(&busy, LeaseError::Timeout { holder: Some(h), .. } if h.run_id == "r1"),
            "{busy}"
        );
        drop(first);
        assert_eq!(probe(dir.path(), "b").unwrap(), LeaseState::Free);
        assert_eq!(std::fs::read(lock_path(dir.path(), "b")).unwrap(), b"");
        // A record left in a free file is a killed holder's: the next lease takes it over.
        std::fs::write(
            lock_path(dir.path(), "b"),
            serde_json::to_vec(&holder("dead")).unwrap(),
        )
        .unwrap();
        assert_eq!(
            probe(dir.path(), "b").unwrap(),
            LeaseState::Stale(holder("dead"))
        );
        let next = acquire(
            dir.path(),
            "b",
            holder("r3"),
            Duration::ZERO,
            &cancel,
            &NullSink,
        )
        .await
        .unwrap();
        assert_eq!(next.info().took_over, Some(holder("dead")));
    }

    #[tokio::test]
    async fn cancelling_ends_the_wait_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let cancel = CancellationToken::new();
        let _held = acquire(
            dir.path(),
            "b",
            holder("r1"),
            Duration::ZERO,
            &cancel,
            &NullSink,
        )
        .await
        .unwrap();
        cancel.cancel();
        let e = acquire(
            dir.path(),
            "b",
            holder("r2"),
            Duration::from_secs(3600),
            &cancel,
            &NullSink,
        )
        .await
        .unwrap_err();
        assert!(matches!(e, LeaseError::Cancelled { .. }), "{e}");
    }
}
