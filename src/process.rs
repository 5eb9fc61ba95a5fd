//! Child processes and tasks that must never outlive fwfix: every child fwfix starts (builds,
//! flashers, gdb, agents, trial builds, QEMU) is spawned here, by [`spawn_group`], in a process
//! group of its own, and a guard kills the whole group when it is dropped (normal exit, error,
//! panic, cancelled future); a task handle aborts its task when dropped. Build commands spawn
//! compilers and make spawns more; killing only `sh` would leave them running. When fwfix is
//! killed outright and no guard can run, the [`guardian`] stops the groups instead. Two
//! exceptions, on purpose: the editor a person reviews a patch in (it must stay in the terminal's
//! foreground group to read the keyboard) and `fwfix doctor`'s one-shot `--version` probes.
//! A child killed at the end of a run can be reaped off the run's path ([`reap_later`]); the
//! command waits for it before exiting ([`settle`]).
//! Also who this process is (host, user) and whether another process is still alive, for the
//! records that name a run's process (run.json, board leases).

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::time::Duration;
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;

pub mod guardian;
pub mod output;

/// Kills a child's process group when dropped, unless disarmed after the child was reaped.
#[derive(Debug)]
pub struct GroupGuard {
    pgid: Option<Pid>,
}

impl GroupGuard {
    /// Guards the group led by `pid`, a child already spawned as a group leader (e.g. with
    /// `process_group(0)`). None guards nothing.
    pub fn for_child(pid: Option<u32>) -> GroupGuard {
        let pgid = pid
            .and_then(|p| i32::try_from(p).ok())
            .filter(|&p| p > 0)
            .map(Pid::from_raw);
        GroupGuard { pgid }
    }

    /// Sends SIGKILL to the whole group now; the guard stays armed for its drop.
    pub fn kill(&self) {
        if let Some(pgid) = self.pgid {
            // ESRCH (already gone) is the expected outcome on most paths.
            let _ = killpg(pgid, Signal::SIGKILL);
        }
    }

    /// Forgets the group: only once its leader was reaped, so a recycled id is never signalled.
    pub fn disarm(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            guardian::forget(pgid);
        }
    }

    /// Sends SIGTERM to the group, waits up to `grace` for the child to exit, then SIGKILLs the
    /// group. Returns once the child is reaped.
    pub async fn terminate(&mut self, child: &mut Child, grace: Duration) {
        if let Some(pgid) = self.pgid {
            let _ = killpg(pgid, Signal::SIGTERM);
            if tokio::time::timeout(grace, child.wait()).await.is_err() {
                let _ = killpg(pgid, Signal::SIGKILL);
                let _ = child.wait().await;
            } else {
                // The leader is gone; anything it left in the group goes too.
                let _ = killpg(pgid, Signal::SIGKILL);
            }
        }
        self.disarm();
    }

    /// Kills whatever is left in the group now (after the leader exited by itself, its children
    /// may still be running).
    pub fn kill_rest(&mut self) {
        if let Some(pgid) = self.pgid {
            let _ = killpg(pgid, Signal::SIGKILL);
        }
        self.disarm();
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill_rest();
    }
}

/// Spawns `command` as the leader of a new process group, announced to the guardian, and returns
/// it with its guard. Every child fwfix starts goes through here.
pub fn spawn_group(command: &mut Command) -> std::io::Result<(Child, GroupGuard)> {
    command.process_group(0).kill_on_drop(true);
    let child = guardian::spawn(command)?;
    let guard = GroupGuard::for_child(child.id());
    Ok((child, guard))
}

/// How long a killed child may take to be reaped before its guard gives up on it.
const REAP_BUDGET: Duration = Duration::from_secs(2);

/// Reaps tasks still under way, for [`settle`].
static REAPING: std::sync::Mutex<Vec<JoinHandle<()>>> = std::sync::Mutex::new(Vec::new());

/// Reaps `child`, already killed or exiting by itself, on a task of its own, then forgets its
/// group and runs `then`: what the child still does in the kernel (a QEMU's teardown of its guest
/// memory takes milliseconds) is left off the caller's path. [`settle`] waits for these before
/// fwfix exits, so none outlives it. A child not reaped within [`REAP_BUDGET`] is left to its
/// guard, which kills the group once more when dropped.
pub fn reap_later(mut child: Child, mut guard: GroupGuard, then: impl FnOnce() + Send + 'static) {
    let task = tokio::spawn(async move {
        if tokio::time::timeout(REAP_BUDGET, child.wait())
            .await
            .is_ok()
        {
            guard.disarm();
        }
        then();
    });
    let mut reaping = REAPING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    reaping.retain(|t| !t.is_finished());
    reaping.push(task);
}

/// Waits until every child given to [`reap_later`] is reaped (or given up on).
pub async fn settle() {
    let tasks = std::mem::take(
        &mut *REAPING
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    for task in tasks {
        let _ = task.await;
    }
}

/// A spawned task that is aborted when its handle is dropped.
#[derive(Debug)]
pub struct AbortOnDrop<T>(pub JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Whether a process with this pid exists on this host (signal 0 checks without sending
/// anything). A pid the system has since reused for another process reads as alive; that is the
/// best a pid can say.
pub fn alive(pid: u32) -> bool {
    use nix::errno::Errno;
    // 0 and negative values would address process groups, not one process.
    let Some(raw) = i32::try_from(pid).ok().filter(|p| *p > 0) else {
        return false;
    };
    match nix::sys::signal::kill(Pid::from_raw(raw), None) {
        Ok(()) => true,
        // It exists but belongs to someone else.
        Err(Errno::EPERM) => true,
        Err(_) => false,
    }
}

/// This host's name, empty when the system will not say.
pub fn host_name() -> String {
    nix::unistd::gethostname()
        .map(|h| h.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The login name of the user running fwfix, or `uid N` when it has none.
pub fn login_name() -> String {
    let uid = nix::unistd::getuid();
    match nix::unistd::User::from_uid(uid) {
        Ok(Some(user)) => user.name,
        _ => format!("uid {uid}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Stdio;

    #[test]
    fn this_process_is_alive_and_nonsense_pids_are_not() {
        assert!(super::alive(std::process::id()));
        assert!(!super::alive(0));
        assert!(!super::alive(u32::MAX));
    }

    fn alive(pid: i32) -> bool {
        nix::sys::signal::kill(Pid::from_raw(pid), None).is_ok()
    }

    #[tokio::test]
    async fn a_guard_for_a_spawned_leader_kills_it_on_drop_unless_disarmed() {
        use std::os::unix::process::ExitStatusExt;
        let mut child = Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        drop(GroupGuard::for_child(child.id()));
        let status = tokio::time::timeout(Duration::from_secs(5), child.wait())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(status.signal(), Some(9));

        let mut child = Command::new("sleep")
            .arg("0.2")
            .process_group(0)
            .spawn()
            .unwrap();
        let mut guard = GroupGuard::for_child(child.id());
        let status = child.wait().await.unwrap();
        guard.disarm();
        drop(guard);
        assert_eq!(status.code(), Some(0));
    }

    #[tokio::test]
    async fn a_killed_child_reaped_later_is_gone_once_settled() {
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        let (child, guard) = spawn_group(&mut cmd).unwrap();
        let pid = i32::try_from(child.id().unwrap()).unwrap();
        guard.kill();
        let (ran, then) = std::sync::mpsc::channel();
        reap_later(child, guard, move || {
            let _ = ran.send(());
        });
        settle().await;
        assert!(then.try_recv().is_ok());
        // Reaped, not a zombie: the id names no process any more.
        assert!(!alive(pid));
    }

    #[tokio::test]
    async fn dropping_the_guard_kills_grandchildren() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let script = format!("sleep 30 & echo $! > {}; wait", pidfile.display());
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(script).stdout(Stdio::null());
        let (child, guard) = spawn_group(&mut cmd).unwrap();
        let mut pid = None;
        for _ in 0..100 {
            if let Ok(text) = std::fs::read_to_string(&pidfile) {
                if let Ok(p) = text.trim().parse::<i32>() {
                    pid = Some(p);
                    break;
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let pid = pid.unwrap();
        assert!(alive(pid));
        drop(guard);
        drop(child);
        for _ in 0..100 {
            if !alive(pid) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("grandchild {pid} survived the guard");
    }
}
