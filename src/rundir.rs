//! The run directory `.fwfix/runs/<run-id>/`: run ids, the per-iteration layout, atomic file
//! writes, and the append-only trace. Everything a run leaves on disk goes through here, so a run
//! killed at any point leaves whole files behind, never half-written ones.

use crate::machine::{ErrorClass, Outcome, State};
use chrono::{DateTime, SecondsFormat, Utc};
use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Where runs live, relative to the repository root.
pub const RUNS_DIR: &str = ".fwfix/runs";
/// In a run directory: the copies of the large untracked files its snapshots keep aside.
pub const UNTRACKED_DIR: &str = "untracked";
/// Where a resume puts a torn last line of `trace.jsonl` (a process or the power cut off
/// mid-write), one per line, so the lines appended after it stay whole and the trace audits.
pub const TORN_TRACE_FILE: &str = "trace.torn";

/// Why `.fwfix` or `.fwfix/runs` of `repo` cannot hold runs: the first of them that exists and
/// is not a directory. None when both are directories or not there yet (created when needed).
/// Every command that keeps runs asks this first, so the answer (exit 2, naming the path) is
/// the same whichever of the two is in the way.
pub fn runs_dir_blocked(repo: &Path) -> Option<String> {
    let fwfix = repo.join(".fwfix");
    for path in [fwfix.clone(), repo.join(RUNS_DIR)] {
        match std::fs::metadata(&path) {
            Ok(meta) if meta.is_dir() => {}
            Ok(meta) => {
                return Some(format!(
                    "{} is {}, not a directory: fwfix keeps its runs and locks in {}; move it \
                     out of the way",
                    path.display(),
                    crate::input::non_regular_kind(&meta).unwrap_or("a file"),
                    fwfix.display()
                ))
            }
            // Not there yet; anything else (no permission) is for the create to say.
            Err(_) => return None,
        }
    }
    None
}

/// A run's directory.
#[derive(Debug, Clone)]
pub struct RunDir {
    id: String,
    root: PathBuf,
}

impl RunDir {
    /// Creates a fresh run directory under `<repo>/.fwfix/runs/`.
    pub fn create(repo: &Path, now: DateTime<Utc>) -> io::Result<RunDir> {
        RunDir::create_under(&repo.join(RUNS_DIR), now)
    }

    /// Creates a directory with a fresh id under `runs` (made if missing): a run's, or a
    /// matrix's under `.fwfix/matrix/`.
    pub fn create_under(runs: &Path, now: DateTime<Utc>) -> io::Result<RunDir> {
        let runs = runs.to_path_buf();
        std::fs::create_dir_all(&runs)?;
        // The id is second-resolution time plus a short suffix; retry on the rare collision.
        for salt in 0..100u32 {
            let id = run_id(now, salt);
            let root = runs.join(&id);
            match std::fs::create_dir(&root) {
                Ok(()) => return Ok(RunDir { id, root }),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("no free run id under {}", runs.display()),
        ))
    }

    /// Creates a run directory at `path` (parents included; `path` itself must not exist) for a
    /// run that is one step of another, such as a bisect's `steps/03-1a2b3c4/`. Its id is the
    /// directory's name.
    pub fn create_at(path: &Path) -> io::Result<RunDir> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::create_dir(path)?;
        let id = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(RunDir {
            id,
            root: path.to_path_buf(),
        })
    }

    /// Opens an existing run directory (for `fwfix resume`).
    pub fn open(root: &Path) -> io::Result<RunDir> {
        let id = root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| {
                io::Error::other(format!("{} is not a run directory", root.display()))
            })?;
        if !root.join("trace.jsonl").is_file() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{} has no trace.jsonl: not a run directory", root.display()),
            ));
        }
        Ok(RunDir {
            id,
            root: root.to_path_buf(),
        })
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn path(&self) -> &Path {
        &self.root
    }

    /// `iter-NNN/`, created on first use. Iteration 0 is the baseline.
    pub fn iteration(&self, n: u32) -> io::Result<PathBuf> {
        let dir = self.root.join(iteration_name(n));
        std::fs::create_dir_all(&dir)?;
        Ok(dir)
    }

    /// A path inside the run directory as the trace and report name it (relative, `/`-separated).
    pub fn relative(&self, path: &Path) -> String {
        path.strip_prefix(&self.root)
            .unwrap_or(path)
            .to_string_lossy()
            .replace('\\', "/")
    }
}

/// What a run's `run.json`, written first, says of the process that runs it. Every field is
/// optional: it is read from runs of any age.
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct RunRecord {
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub pid: Option<u32>,
    #[serde(default)]
    pub host: Option<String>,
}

/// The `run.json` of the run in `dir`, if it has a readable one.
pub fn run_record(dir: &Path) -> Option<RunRecord> {
    let text = std::fs::read_to_string(dir.join("run.json")).ok()?;
    serde_json::from_str(&text).ok()
}

/// `iter-000`, `iter-001`, ...
pub fn iteration_name(n: u32) -> String {
    format!("iter-{n:03}")
}

fn run_id(now: DateTime<Utc>, salt: u32) -> String {
    let nanos = now.timestamp_subsec_nanos();
    let mix = (nanos ^ std::process::id().rotate_left(16)).wrapping_add(salt.wrapping_mul(0x9e37));
    format!("{}-{:04x}", now.format("%Y%m%d-%H%M%S"), mix & 0xffff)
}

/// Whether a run's records are forced to disk as they are written.
///
/// Either way a file is replaced whole (a temporary file, then a rename), so a killed process
/// leaves the old or the new contents and the page cache keeps them. Syncing only adds what
/// survives a power cut or a kernel crash, and it costs a disk flush per file, more than a whole
/// QEMU test on a busy disk. A run that patches the tree syncs: its checkpoint is what restores
/// the person's work. A run that only builds and tests (it never writes the tree) does not: a
/// power cut can lose the record of the test that was running, nothing else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    Synced,
    Cached,
}

impl Durability {
    /// Flushes `file` to disk when synced.
    pub fn sync(self, file: &File) -> io::Result<()> {
        match self {
            Durability::Synced => file.sync_all(),
            Durability::Cached => Ok(()),
        }
    }

    /// Flushes the directory `dir` (a rename in it) to disk when synced; best effort.
    pub fn sync_dir(self, dir: &Path) {
        if self == Durability::Synced {
            if let Ok(d) = File::open(dir) {
                let _ = d.sync_all();
            }
        }
    }
}

/// A suffix for a temporary file's name no other write of this process (another job's thread
/// writing the same file at the same moment, say) nor another process uses: the process id and
/// a count.
pub fn temp_suffix() -> String {
    static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{}-{n}", std::process::id())
}

/// Writes a file so that readers only ever see the old or the new contents: a temporary file in
/// the same directory, fsync, rename, fsync of the directory.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_as(path, bytes, Durability::Synced)
}

/// [`write_atomic`], synced to disk or not as `durability` says.
pub fn write_atomic_as(path: &Path, bytes: &[u8], durability: Durability) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}", temp_suffix()));
    {
        let mut f = File::create(&tmp)?;
        f.write_all(bytes)?;
        durability.sync(&f)?;
    }
    std::fs::rename(&tmp, path)?;
    durability.sync_dir(dir);
    Ok(())
}

/// [`write_atomic_as`] for a record rewritten at every step of a run (the context, at every
/// transition): the new contents go into a spare file beside it, `.<name>.prev`, which is then
/// swapped with the record in one `renameat2(RENAME_EXCHANGE)`. Readers see the old or the new
/// contents, as with a rename, but no file is made or removed per write, and ext4 does not flush
/// the new contents to disk as it does for a file renamed over another (a few milliseconds each
/// on a busy disk, nine times a test run). The spare, holding the contents before, goes with
/// [`remove_spare`]. Where the exchange is not supported, or the record does not exist yet, the
/// spare is renamed over it.
pub fn rewrite_atomic_as(path: &Path, bytes: &[u8], durability: Durability) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let spare = spare_path(path);
    {
        use std::os::unix::fs::FileExt;
        // Written over in place and cut to length, never emptied first: ext4 flushes a file
        // truncated to zero when it is closed, and one renamed over another, which costs
        // milliseconds on a busy disk (measured: 4 ms against 9 µs for this way).
        let f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(&spare)?;
        f.write_all_at(bytes, 0)?;
        f.set_len(bytes.len() as u64)?;
        durability.sync(&f)?;
    }
    if !exchange(&spare, path) {
        std::fs::rename(&spare, path)?;
    }
    durability.sync_dir(dir);
    Ok(())
}

/// Removes the spare [`rewrite_atomic_as`] keeps beside `path`, once the record is final.
pub fn remove_spare(path: &Path) {
    let _ = std::fs::remove_file(spare_path(path));
}

fn spare_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.prev"))
}

/// Swaps two existing files atomically; false when the system or the file system cannot.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn exchange(a: &Path, b: &Path) -> bool {
    use nix::fcntl::{renameat2, RenameFlags, AT_FDCWD};
    renameat2(AT_FDCWD, a, AT_FDCWD, b, RenameFlags::RENAME_EXCHANGE).is_ok()
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn exchange(_: &Path, _: &Path) -> bool {
    false
}

/// One line of `trace.jsonl`: a transition of the state machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceLine {
    pub seq: u64,
    /// RFC 3339 with milliseconds.
    pub ts: String,
    pub from: State,
    pub to: State,
    /// What the handler of `from` reported; `next(from, outcome)` must give `to`.
    pub outcome: Outcome,
    pub reason: String,
    pub iteration: u32,
    pub error_class: Option<ErrorClass>,
    /// Paths relative to the run directory.
    pub evidence: Vec<String>,
    /// SHA-256 of each evidence file when it was recorded, in the same order.
    #[serde(default)]
    pub evidence_sha256: Vec<String>,
}

/// Appends transitions to `trace.jsonl`, each written (and fsync'd, when the run's records are
/// [`Durability::Synced`]) before the next step starts.
///
/// The writer holds an exclusive `flock` on the trace for as long as it lives: it is what says a
/// process carries the run on, so a second process (`fwfix resume` of a run that is still going)
/// cannot drive the same run and repository at once. The kernel drops the lock when the process
/// dies, however it dies, so a killed run can always be resumed.
#[derive(Debug)]
pub struct TraceWriter {
    file: Flock<File>,
    next_seq: u64,
    durability: Durability,
}

impl TraceWriter {
    /// Opens the run's trace for appending and locks it; `last_seq` is the last line already in
    /// it (0 for a new run). A trace another process holds is an error of kind
    /// [`io::ErrorKind::WouldBlock`].
    pub fn open(
        run_dir: &RunDir,
        last_seq: u64,
        durability: Durability,
    ) -> io::Result<TraceWriter> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(run_dir.path().join("trace.jsonl"))?;
        let file = Flock::lock(file, FlockArg::LockExclusiveNonblock)
            .map_err(|(_, errno)| io::Error::from(errno))?;
        Ok(TraceWriter {
            file,
            next_seq: last_seq + 1,
            durability,
        })
    }

    /// Takes a torn last line (a process killed, or the power cut, mid-write) out of the trace
    /// before anything is appended to it: the bytes after the last newline go to
    /// [`TORN_TRACE_FILE`] and the trace is cut back to its last whole line. A last line that
    /// lacks only its newline gets it. Returns how many bytes were set aside.
    pub fn set_aside_torn_tail(&mut self, run_dir: &RunDir) -> io::Result<usize> {
        let bytes = std::fs::read(run_dir.path().join("trace.jsonl"))?;
        let whole = bytes
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |newline| newline + 1);
        let tail = &bytes[whole..];
        if tail.is_empty() {
            return Ok(0);
        }
        if serde_json::from_slice::<TraceLine>(tail).is_ok() {
            self.file.write_all(b"\n")?;
            self.file.sync_data()?;
            return Ok(0);
        }
        let mut torn = OpenOptions::new()
            .create(true)
            .append(true)
            .open(run_dir.path().join(TORN_TRACE_FILE))?;
        torn.write_all(tail)?;
        torn.write_all(b"\n")?;
        torn.sync_data()?;
        self.file.set_len(whole as u64)?;
        self.file.sync_data()?;
        Ok(tail.len())
    }

    /// Stamps a line with the next sequence number and the time, without writing it (the run
    /// context is checkpointed with it first, so a crash between the two loses nothing).
    pub fn stamp(&self, mut line: TraceLine, now: DateTime<Utc>) -> TraceLine {
        line.seq = self.next_seq;
        line.ts = now.to_rfc3339_opts(SecondsFormat::Millis, true);
        line
    }

    /// Appends a stamped line (one `write`, so a killed process leaves whole lines) and fsyncs it
    /// when synced.
    pub fn write(&mut self, line: &TraceLine) -> io::Result<()> {
        let mut text = serde_json::to_string(line).map_err(io::Error::other)?;
        text.push('\n');
        self.file.write_all(text.as_bytes())?;
        if self.durability == Durability::Synced {
            self.file.sync_data()?;
        }
        self.next_seq = line.seq + 1;
        Ok(())
    }
}

/// Whether another process holds the run's trace: it carries the run on now (see
/// [`TraceWriter`]). Takes the lock for a moment when nobody has it.
pub fn trace_held(run_dir: &Path) -> bool {
    let Ok(file) = File::open(run_dir.join("trace.jsonl")) else {
        return false;
    };
    matches!(
        Flock::lock(file, FlockArg::LockExclusiveNonblock),
        Err((_, nix::errno::Errno::EWOULDBLOCK))
    )
}

/// The last line of a run's trace, if any (for reconciling a resumed run with its checkpoint).
pub fn last_trace_line(run_dir: &RunDir) -> io::Result<Option<TraceLine>> {
    let text = std::fs::read_to_string(run_dir.path().join("trace.jsonl"))?;
    Ok(text
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str::<TraceLine>(l).ok()))
}

/// Hex SHA-256 of a file's contents.
pub fn sha256_file(path: &Path) -> io::Result<String> {
    use sha2::{Digest, Sha256};
    let bytes = std::fs::read(path)?;
    let digest = Sha256::digest(&bytes);
    Ok(digest.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_torn_last_line_is_set_aside_and_the_trace_stays_whole() {
        let repo = tempfile::tempdir().unwrap();
        let dir = RunDir::create(repo.path(), Utc::now()).unwrap();
        let trace = dir.path().join("trace.jsonl");
        std::fs::write(&trace, "{\"seq\":1}\n{\"seq\":2,\"fr").unwrap();
        let mut writer = TraceWriter::open(&dir, 1, Durability::Synced).unwrap();
        assert_eq!(writer.set_aside_torn_tail(&dir).unwrap(), 12);
        assert_eq!(std::fs::read_to_string(&trace).unwrap(), "{\"seq\":1}\n");
        assert_eq!(
            std::fs::read_to_string(dir.path().join(TORN_TRACE_FILE)).unwrap(),
            "{\"seq\":2,\"fr\n"
        );
        // A whole trace is left alone.
        assert_eq!(writer.set_aside_torn_tail(&dir).unwrap(), 0);
        assert_eq!(std::fs::read_to_string(&trace).unwrap(), "{\"seq\":1}\n");
    }

    #[test]
    fn run_ids_sort_by_time_and_never_collide() {
        let repo = tempfile::tempdir().unwrap();
        let now = Utc::now();
        let a = RunDir::create(repo.path(), now).unwrap();
        let b = RunDir::create(repo.path(), now).unwrap();
        assert_ne!(a.id(), b.id());
        assert!(a.id().starts_with(&now.format("%Y%m%d-%H%M%S").to_string()));
        assert!(a.path().is_dir() && b.path().is_dir());
    }

    #[test]
    fn a_step_run_directory_is_made_where_asked_and_only_once() {
        let parent = tempfile::tempdir().unwrap();
        let path = parent.path().join("steps").join("03-1a2b3c4");
        let dir = RunDir::create_at(&path).unwrap();
        assert_eq!(dir.id(), "03-1a2b3c4");
        assert!(path.is_dir());
        assert!(RunDir::create_at(&path).is_err());
    }

    #[test]
    fn trace_lines_are_numbered_and_parse_back() {
        let repo = tempfile::tempdir().unwrap();
        let dir = RunDir::create(repo.path(), Utc::now()).unwrap();
        let mut w = TraceWriter::open(&dir, 0, Durability::Synced).unwrap();
        let line = TraceLine {
            seq: 0,
            ts: String::new(),
            from: State::Idle,
            to: State::Init,
            outcome: Outcome::TaskReceived,
            reason: "task received".into(),
            iteration: 0,
            error_class: None,
            evidence: vec![],
            evidence_sha256: vec![],
        };
        let first = w.stamp(line.clone(), Utc::now());
        w.write(&first).unwrap();
        let second = w.stamp(line, Utc::now());
        w.write(&second).unwrap();
        assert_eq!(last_trace_line(&dir).unwrap().unwrap().seq, 2);
        let text = std::fs::read_to_string(dir.path().join("trace.jsonl")).unwrap();
        let lines: Vec<TraceLine> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.iter().map(|l| l.seq).collect::<Vec<_>>(), vec![1, 2]);
        assert!(text.contains("\"from\":\"IDLE\",\"to\":\"INIT\",\"outcome\":\"task_received\""));
        assert!(text.contains("\"error_class\":null"));
    }

    #[test]
    fn atomic_write_replaces_whole_file() {
        for durability in [Durability::Synced, Durability::Cached] {
            let dir = tempfile::tempdir().unwrap();
            let p = dir.path().join("report.json");
            write_atomic_as(&p, b"old", durability).unwrap();
            write_atomic_as(&p, b"new contents", durability).unwrap();
            assert_eq!(std::fs::read(&p).unwrap(), b"new contents");
            let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
            assert_eq!(leftovers.len(), 1);
        }
    }
}
