//! The guardian: one small process per fwfix that stops fwfix's children when fwfix dies, however
//! it dies — SIGKILL, the OOM killer, a power-cut of the terminal — when none of fwfix's own
//! cleanup can run.
//!
//! Why a guardian, and not the usual tools:
//! - `PR_SET_PDEATHSIG` fires when the *thread* that forked exits, not the process; tokio's
//!   blocking-pool threads exit after a while idle, which would kill a build mid-way. And it
//!   reaches only the direct child (`sh`), not `make` and the compilers in its process group.
//! - A subreaper adopts orphans only while it runs: when fwfix itself is killed, nothing of it is
//!   left to act.
//!
//! How: fwfix forks itself (nothing else to install) into a process group of its own (a
//! terminal's Ctrl+C does not reach it) that holds one end of a socket pair. The fork is taken
//! when the command knows it will start children and fwfix is still one thread, which is when
//! a copy of it is sound to go on running; it costs a fraction of a millisecond, where loading
//! the binary again costs milliseconds of a core. The forked guardian closes every descriptor
//! it inherited but its end, as an exec would have: a lock or pipe it kept open would outlive
//! fwfix. A process that already runs threads (a test harness, say) re-executes itself as
//! `fwfix __guardian` instead, with that end as its stdin. Only fwfix holds the other end
//! (close-on-exec, so no child inherits it): when fwfix ends, by whatever means, the kernel
//! closes it and the guardian reads EOF. Every child fwfix starts announces its own process group on that socket (`+<pgid>`) between fork and
//! exec, so no child ever runs unannounced; fwfix says `-<pgid>` once the group is done with. On
//! EOF the guardian sends SIGTERM to every group still announced, gives them [`GRACE`] to stop
//! (make removes half-written targets), SIGKILLs what is left, and exits. It is spawned on a
//! thread of its own, as early as the command knows it will start children ([`prestart`]), and
//! the first child waits until it exists: its exec costs that command nothing.
//!
//! A group id is only signalled while it can still be the announced group: the guardian notes the
//! leader's start time when it is announced, and skips a group whose leader id now belongs to
//! another process (a group id is never reused while the group has members).
//!
//! Limits: a process that leaves its group (`setsid`, a tool that daemonises) is out of reach; if
//! the guardian cannot be started, children still die on every way fwfix ends except SIGKILL.

use nix::sys::signal::{killpg, Signal};
use nix::sys::socket::{send, MsgFlags};
use nix::unistd::Pid;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The hidden first argument that makes the fwfix binary serve as a guardian.
pub const ARG: &str = "__guardian";
/// How long announced groups get to stop on SIGTERM once fwfix is gone.
pub const GRACE: Duration = Duration::from_secs(2);

/// Whether this executable serves as a guardian when re-executed (the fwfix binary does; a test
/// harness linking the library does not, and then runs without one).
static ENABLED: AtomicBool = AtomicBool::new(false);
/// fwfix's end of the socket, once the guardian runs; None when it could not be started.
static SOCKET: OnceLock<Option<UnixStream>> = OnceLock::new();

/// Declares that this executable, run with [`ARG`], serves as a guardian ([`serve`]).
pub fn enable() {
    ENABLED.store(true, Ordering::Relaxed);
}

/// The guardian's socket, starting the guardian on first use.
fn socket() -> Option<&'static UnixStream> {
    if !ENABLED.load(Ordering::Relaxed) {
        return None;
    }
    SOCKET.get_or_init(start).as_ref()
}

/// Starts the guardian now, without waiting for it: a command that will start children calls
/// this first thing, so the guardian's exec (a millisecond or two) overlaps the command's setup
/// instead of delaying its first child.
pub fn prestart() {
    let _ = socket();
}

/// The thread that spawns the guardian, until a child is about to start (see [`ready`]).
static SPAWNING: Mutex<Option<std::thread::JoinHandle<()>>> = Mutex::new(None);

/// Makes the socket pair and spawns the guardian on a thread of its own: what fwfix sends before
/// the guardian runs waits in the socket's buffer.
#[allow(unsafe_code)]
fn start() -> Option<UnixStream> {
    use std::os::unix::process::CommandExt;
    let (ours, theirs) = UnixStream::pair().ok()?;
    if single_threaded() {
        // SAFETY: with one thread, the child is a whole copy of a consistent process (no lock is
        // held by a thread it lacks), so it may allocate and run Rust code as any process does.
        match unsafe { nix::unistd::fork() } {
            Ok(nix::unistd::ForkResult::Child) => {
                // fwfix's end must close when fwfix ends: the guardian keeps no copy of it.
                drop(ours);
                guard(theirs)
            }
            Ok(nix::unistd::ForkResult::Parent { .. }) => return Some(ours),
            // Left to the re-executed guardian below.
            Err(_) => {}
        }
    }
    let spawn = move || {
        // A guardian that cannot start leaves `theirs` closed: announcements then go nowhere,
        // and children still die on every way fwfix ends except SIGKILL.
        let _ = std::process::Command::new("/proc/self/exe")
            .arg(ARG)
            .stdin(Stdio::from(OwnedFd::from(theirs)))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Not a mount point it keeps busy, and not in fwfix's process group.
            .current_dir("/")
            .process_group(0)
            .spawn();
    };
    match std::thread::Builder::new()
        .name("fwfix-guardian-spawn".into())
        .spawn(spawn)
    {
        Ok(handle) => {
            if let Ok(mut slot) = SPAWNING.lock() {
                *slot = Some(handle);
            }
        }
        Err(_) => return None,
    }
    Some(ours)
}

/// Closes every descriptor above stderr but `keep`: what fwfix had open when it forked (a tree
/// lock, a run directory's files, a child's pipe) must not live on in the guardian.
fn close_inherited(keep: RawFd) {
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
        return;
    };
    // Collected first: the directory's own descriptor is among the entries while it is read.
    let fds: Vec<RawFd> = entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    for fd in fds.into_iter().filter(|&fd| fd > 2 && fd != keep) {
        let _ = nix::unistd::close(fd);
    }
}

/// Whether this process runs a single thread, so that a fork of it may go on as a process.
fn single_threaded() -> bool {
    std::fs::read_dir("/proc/self/task").is_ok_and(|tasks| tasks.count() == 1)
}

/// The forked guardian's life: out of fwfix's group and working directory (not a mount point it
/// keeps busy), off the terminal and fwfix's pipes, serving `input` until fwfix is gone.
fn guard(input: UnixStream) -> ! {
    let _ = nix::unistd::setpgid(Pid::from_raw(0), Pid::from_raw(0));
    let _ = std::env::set_current_dir("/");
    if let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        let _ = nix::unistd::dup2_stdin(&null);
        let _ = nix::unistd::dup2_stdout(&null);
        let _ = nix::unistd::dup2_stderr(&null);
    }
    close_inherited(input.as_raw_fd());
    serve(input);
    std::process::exit(0)
}

/// Waits until the guardian process exists, so that no child of fwfix runs before it: a fwfix
/// killed right after starting a child still has a guardian to stop it.
fn ready() {
    let handle = SPAWNING.lock().ok().and_then(|mut slot| slot.take());
    if let Some(handle) = handle {
        let _ = handle.join();
    }
}

/// Makes `command`'s child announce its process group to the guardian before it runs anything,
/// and keep `inherit` (a descriptor of fwfix's, close-on-exec) open across its exec under the same
/// number. The child must lead its own group (`process_group(0)`).
pub fn prepare_exec(command: &mut tokio::process::Command, inherit: Option<RawFd>) {
    let guardian = socket().map(|socket| {
        ready();
        socket.as_raw_fd()
    });
    if guardian.is_some() || inherit.is_some() {
        in_child(command, guardian, inherit);
    }
}

/// The one place fwfix runs code between fork and exec.
#[allow(unsafe_code)]
fn in_child(
    command: &mut tokio::process::Command,
    guardian: Option<RawFd>,
    inherit: Option<RawFd>,
) {
    use nix::fcntl::{fcntl, FcntlArg, FdFlag};
    // SAFETY: the closure runs in the forked child, where only async-signal-safe calls are
    // allowed: getpid, send and fcntl are plain system calls, and the message is built on the
    // stack without allocating. MSG_NOSIGNAL: a guardian that died must not kill the child with
    // SIGPIPE; MSG_DONTWAIT: it must not block it either.
    unsafe {
        command.pre_exec(move || {
            if let Some(fd) = guardian {
                let mut buf = [0u8; MESSAGE_LEN];
                let len = message(b'+', nix::unistd::getpid().as_raw(), &mut buf);
                let _ = send(
                    fd,
                    &buf[..len],
                    MsgFlags::MSG_NOSIGNAL | MsgFlags::MSG_DONTWAIT,
                );
            }
            if let Some(fd) = inherit {
                let fd = std::os::fd::BorrowedFd::borrow_raw(fd);
                fcntl(fd, FcntlArg::F_SETFD(FdFlag::empty()))?;
            }
            Ok(())
        });
    }
}

/// Tells the guardian that the group led by `pgid` is done with (its leader was reaped and the
/// rest killed).
pub fn forget(pgid: Pid) {
    if let Some(socket) = socket() {
        let mut buf = [0u8; MESSAGE_LEN];
        let len = message(b'-', pgid.as_raw(), &mut buf);
        let _ = send(
            socket.as_raw_fd(),
            &buf[..len],
            MsgFlags::MSG_NOSIGNAL | MsgFlags::MSG_DONTWAIT,
        );
    }
}

/// A sign, at most 10 digits, a newline.
const MESSAGE_LEN: usize = 12;

/// Writes `<sign><pid>\n` into `buf` without allocating; returns its length.
fn message(sign: u8, pid: i32, buf: &mut [u8; MESSAGE_LEN]) -> usize {
    let mut digits = [0u8; 10];
    let mut n = pid.unsigned_abs();
    let mut count = 0;
    loop {
        digits[count] = b'0' + (n % 10) as u8;
        count += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    buf[0] = sign;
    for i in 0..count {
        buf[1 + i] = digits[count - 1 - i];
    }
    buf[1 + count] = b'\n';
    count + 2
}

/// The guardian's whole life: keeps the announced groups until `input` ends, then stops them.
pub fn serve(input: impl Read) {
    let mut groups: HashMap<i32, Option<u64>> = HashMap::new();
    for line in BufReader::new(input).split(b'\n') {
        let Ok(line) = line else { break };
        let Some((sign, pgid)) = parse(&line) else {
            continue;
        };
        if sign == b'+' {
            groups.insert(pgid, start_time(pgid));
        } else {
            groups.remove(&pgid);
        }
    }
    let targets: Vec<Pid> = groups
        .into_iter()
        .filter(|&(pgid, started)| still_ours(started, start_time(pgid)))
        .map(|(pgid, _)| Pid::from_raw(pgid))
        .collect();
    stop(&targets);
}

fn parse(line: &[u8]) -> Option<(u8, i32)> {
    let (&sign, digits) = line.split_first()?;
    if sign != b'+' && sign != b'-' {
        return None;
    }
    let pgid: i32 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    // 0, 1 and negative ids would address fwfix's own group, init, or everything.
    (pgid > 1).then_some((sign, pgid))
}

/// Whether a group may still be the one announced, from its leader's start time then and now.
fn still_ours(announced: Option<u64>, now: Option<u64>) -> bool {
    match (announced, now) {
        // The leader is gone: what is left of its group, if anything, is still the same group.
        (_, None) => true,
        (Some(then), Some(now)) => then == now,
        // The leader was already gone when announced, so this is another process.
        (None, Some(_)) => false,
    }
}

/// SIGTERM to every group, up to [`GRACE`] for them to go, then SIGKILL.
fn stop(groups: &[Pid]) {
    for &pgid in groups {
        let _ = killpg(pgid, Signal::SIGTERM);
    }
    let deadline = Instant::now() + GRACE;
    while Instant::now() < deadline && groups.iter().any(|&pgid| killpg(pgid, None).is_ok()) {
        std::thread::sleep(Duration::from_millis(50));
    }
    for &pgid in groups {
        let _ = killpg(pgid, Signal::SIGKILL);
    }
}

/// A process's start time (clock ticks since boot), field 22 of /proc/<pid>/stat.
fn start_time(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: count from its closing one.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_a_sign_the_id_and_a_newline() {
        let mut buf = [0u8; MESSAGE_LEN];
        let len = message(b'+', 4_194_304, &mut buf);
        assert_eq!(&buf[..len], b"+4194304\n");
        let len = message(b'-', i32::MAX, &mut buf);
        assert_eq!(&buf[..len], b"-2147483647\n");
        assert_eq!(parse(b"+4194304"), Some((b'+', 4_194_304)));
        assert_eq!(parse(b"-2147483647"), Some((b'-', i32::MAX)));
        for bad in [&b"+1"[..], b"+0", b"+-5", b"x12", b"+", b"", b"+12 "] {
            assert_eq!(parse(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn a_group_is_signalled_only_while_its_leader_id_is_not_another_process() {
        assert!(still_ours(Some(7), Some(7)));
        assert!(still_ours(Some(7), None));
        assert!(still_ours(None, None));
        assert!(!still_ours(Some(7), Some(8)));
        assert!(!still_ours(None, Some(8)));
        let me = i32::try_from(std::process::id()).unwrap();
        assert!(start_time(me).is_some());
    }

    #[test]
    fn at_end_of_input_announced_groups_are_stopped_and_forgotten_ones_are_not() {
        use std::os::unix::process::CommandExt;
        let spawn = || {
            std::process::Command::new("sleep")
                .arg("30")
                .process_group(0)
                .spawn()
                .unwrap()
        };
        let (mut announced, mut forgotten) = (spawn(), spawn());
        let input = format!("+{a}\n+{f}\n-{f}\n", a = announced.id(), f = forgotten.id());
        serve(input.as_bytes());
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(announced.wait().unwrap().signal(), Some(15));
        assert_eq!(forgotten.try_wait().unwrap(), None);
        forgotten.kill().unwrap();
        forgotten.wait().unwrap();
    }
}
