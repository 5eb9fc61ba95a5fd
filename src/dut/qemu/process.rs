//! The QEMU process and what must die with it: the command line's process settings (own process
//! group, null stdin, killed on drop), a guard that kills the whole group on every exit path
//! (including a panic or the run's future being dropped), a private scratch directory, and the
//! reaping of QEMUs a fwfix killed with SIGKILL left running ([`reap_orphans`]). It does not
//! interpret anything QEMU prints.

use crate::dut::DutError;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::process::Command;

/// A command for `program` that cannot outlive fwfix's handle on it and cannot read fwfix's
/// terminal: stdin is null, it leads its own process group (so a terminal's Ctrl+C reaches fwfix,
/// which then stops it, rather than killing it behind fwfix's back), and dropping the child kills
/// it. A program given as a relative path is resolved here, because the child may run elsewhere.
pub fn command(program: &str) -> Command {
    let resolved = if program.contains('/') {
        std::path::absolute(program).unwrap_or_else(|_| PathBuf::from(program))
    } else {
        PathBuf::from(program)
    };
    let mut cmd = Command::new(resolved);
    cmd.stdin(Stdio::null()).process_group(0).kill_on_drop(true);
    cmd
}

/// The install hint for a missing emulator.
pub fn install_hint(program: &str) -> String {
    let name = Path::new(program)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(program);
    match name {
        "qemu-system-arm" => "install it with `sudo apt-get install qemu-system-arm`".into(),
        _ => format!(
            "install QEMU so that `{name}` is on PATH, or set `[qemu] binary` in the board file \
             to its full path"
        ),
    }
}

/// Maps a spawn error to the DUT error a user can act on.
pub fn spawn_error(program: &str, error: io::Error) -> DutError {
    match error.kind() {
        io::ErrorKind::NotFound => DutError::ToolMissing {
            program: program.to_string(),
            hint: install_hint(program),
        },
        io::ErrorKind::PermissionDenied => DutError::StartFailed {
            program: program.to_string(),
            message: format!("permission denied ({error}); is it an executable file?"),
        },
        _ => DutError::StartFailed {
            program: program.to_string(),
            message: error.to_string(),
        },
    }
}

/// Scratch directories are `<tmp>/fwfix-qemu-<fwfix pid>-...`: the pid says whose QEMU it is.
const SCRATCH_PREFIX: &str = "fwfix-qemu-";
/// The QMP sockets in a scratch directory are `qmp-<n>.sock`, one a QEMU: the next attempt's
/// QEMU may start while this one's runs.
const QMP_PREFIX: &str = "qmp";
const QMP_SUFFIX: &str = ".sock";
/// Where a QEMU's gdbstub connects to fwfix: `gdb-<n>.sock`, removed once connected.
const GDB_PREFIX: &str = "gdb";

/// [`reap_orphans`], the first time this process starts a QEMU: a fwfix killed with SIGKILL
/// leaves its QEMU to the guardian, and only when that could not stop it either does one wait
/// here, for the next fwfix; scanning the temporary directory before every attempt of a long
/// `--repeat` would find nothing new.
pub async fn reap_orphans_once() -> Vec<PathBuf> {
    static DONE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if DONE.swap(true, Ordering::Relaxed) {
        return Vec::new();
    }
    reap_orphans().await
}

/// Stops the QEMUs that a fwfix killed with SIGKILL left running, and removes their scratch
/// directories. Only a SIGKILL leaves one: every other way fwfix ends runs its group guard. Such a
/// QEMU (in a process group of its own, out of reach of whoever killed fwfix) runs on forever if
/// its image hangs, but its scratch directory, named after the dead fwfix's pid, still holds its
/// QMP socket: `quit` through it stops exactly that QEMU. A directory whose fwfix is alive, or
/// that belongs to another user (mode 0700), is left alone, and so is one whose QEMU may run but
/// did not answer. Returns the directories whose QEMU was told to quit.
pub async fn reap_orphans() -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return Vec::new();
    };
    let mut reaped = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(owner) = name
            .to_str()
            .and_then(|n| n.strip_prefix(SCRATCH_PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if crate::process::alive(owner) {
            continue;
        }
        let dir = entry.path();
        let sockets: Vec<PathBuf> = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| is_qmp_socket(p))
            .collect();
        let mut stopped = false;
        let mut unreachable = false;
        for socket in &sockets {
            match quit(socket).await {
                Some(quit) => stopped |= quit,
                None => unreachable = true,
            }
        }
        // A QEMU that may still run keeps the one way to reach it.
        if unreachable {
            continue;
        }
        if std::fs::remove_dir_all(&dir).is_ok() && stopped {
            reaped.push(dir);
        }
    }
    reaped
}

/// Whether `path` is a QMP socket of a scratch directory (the name fwfix gives them).
fn is_qmp_socket(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with(QMP_PREFIX) && n.ends_with(QMP_SUFFIX))
}

/// Tells the QEMU listening on `socket` to quit: Some(true) when one was told, Some(false) when
/// nobody listens there (its QEMU is gone too), None when one may run but did not answer.
async fn quit(socket: &Path) -> Option<bool> {
    let wait = std::time::Duration::from_secs(2);
    match super::qmp::QmpClient::connect(socket, Duration::ZERO, wait).await {
        Ok(mut qmp) => {
            // QEMU may close the connection before it answers `quit`.
            let _ = qmp.execute("quit", None).await;
            Some(true)
        }
        Err(super::qmp::QmpError::Connect { source, .. })
            if matches!(
                source.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused
            ) =>
        {
            Some(false)
        }
        Err(_) => None,
    }
}

/// A private directory (mode 0700) for one attempt's QMP socket and for anything QEMU might leave
/// in its working directory (a core file after a lockup abort). Removed when dropped (by the
/// guardian, when fwfix runs one).
#[derive(Debug)]
pub struct ScratchDir {
    path: PathBuf,
}

impl ScratchDir {
    pub fn create() -> io::Result<Self> {
        use std::os::unix::fs::DirBuilderExt;
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        // The system temp dir rather than the run directory: a unix socket path must stay under
        // about 100 bytes, and run directories can be deep.
        let base = std::env::temp_dir();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let mut last = None;
        for _ in 0..16 {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let path = base.join(format!(
                "{SCRATCH_PREFIX}{}-{nanos:x}-{n}",
                std::process::id()
            ));
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => return Ok(Self { path }),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::other("no free scratch directory name")))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A QMP socket path no QEMU of this directory was given yet.
    pub fn next_qmp_socket(&self) -> PathBuf {
        self.next_socket(QMP_PREFIX)
    }

    /// A path for fwfix's end of a QEMU's gdbstub that no QEMU of this directory was given yet.
    pub fn next_gdb_socket(&self) -> PathBuf {
        self.next_socket(GDB_PREFIX)
    }

    fn next_socket(&self, prefix: &str) -> PathBuf {
        static SOCKETS: AtomicU64 = AtomicU64::new(0);
        let n = SOCKETS.fetch_add(1, Ordering::Relaxed);
        self.path.join(format!("{prefix}-{n}{QMP_SUFFIX}"))
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        // The guardian removes it when there is one: at the end of a run this is on the way to
        // the result, and removing a directory can sleep for milliseconds.
        if !crate::process::guardian::remove_later(&self.path) {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints() {
        assert!(install_hint("qemu-system-arm").contains("apt-get install qemu-system-arm"));
        assert!(install_hint("/opt/q/bin/qemu-system-arm").contains("apt-get"));
        let other = install_hint("qemu-system-riscv32");
        assert!(other.contains("qemu-system-riscv32") && !other.contains("apt-get"));
    }

    #[test]
    fn spawn_errors_map_to_dut_errors() {
        let e = spawn_error("qemu-x", io::Error::from(io::ErrorKind::NotFound));
        assert!(matches!(e, DutError::ToolMissing { ref program, .. } if program == "qemu-x"));
        let e = spawn_error("qemu-x", io::Error::from(io::ErrorKind::PermissionDenied));
        assert!(matches!(e, DutError::StartFailed { .. }));
    }

    #[test]
    fn scratch_dir_is_private_and_removed() {
        use std::os::unix::fs::PermissionsExt;
        let dir = ScratchDir::create().unwrap();
        let path = dir.path().to_path_buf();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        std::fs::write(path.join("core"), b"x").unwrap();
        drop(dir);
        assert!(!path.exists());
    }
}
