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
//! closes it and the guardian reads EOF. fwfix announces each child's process group on that
//! socket (`+<pgid>`) right after spawning it, and says `-<pgid>` once the group is done with. On
//! EOF the guardian sends SIGTERM to every group still announced, gives them [`GRACE`] to stop
//! (make removes half-written targets), SIGKILLs what is left, and exits. It is spawned on a
//! thread of its own, as early as the command knows it will start children ([`prestart`]), and
//! the first child waits until it exists: its exec costs that command nothing.
//!
//! The announcement comes from fwfix, not from the child between fork and exec: code there forces
//! a fork of the whole 35 MB process, where a child with nothing to run before its exec is
//! started by `posix_spawn` (a vfork: no page tables copied, no copy-on-write faults for fwfix
//! afterwards). That leaves a window, from the spawn to the announcement, in which fwfix can die
//! with a child running that the guardian was not told of: a vforked child waits for a core
//! before its exec, and fwfix's thread with it, so on a loaded host the window is long (0.2 to
//! 38 ms measured, 2 cores at load 7–8). It is closed by a marker: before the guardian starts, fwfix opens
//! one end of a pipe (nothing is ever written to it) that every child inherits across its exec,
//! and tells the guardian its inode (`=<inode>`). fwfix says `?` before each spawn and `!` after
//! one that failed; an announcement ends a spawn too. If fwfix dies with a spawn under way, the
//! guardian also stops every process that holds the marker (a child before its exec holds it as
//! well, from its fork on): fwfix's children and everything they started, including what left
//! their groups (which is otherwise out of reach, see below).
//!
//! No descriptor of fwfix's is made inheritable for one child only (a QEMU's gdbstub connects to
//! fwfix instead of inheriting a socket): such a descriptor would reach every child spawned at the
//! same moment, so spawns would have to run one at a time, and they run side by side.
//!
//! fwfix also leaves it directories to remove (`r<path>`: QEMU's scratch directory at the end of
//! a run), which it does at once, while fwfix goes on to its results: removing a directory can
//! sleep for milliseconds.
//!
//! A group id is only signalled while it can still be the announced group: the guardian notes the
//! leader's start time when it is announced, and skips a group whose leader id now belongs to
//! another process (a group id is never reused while the group has members).
//!
//! Limits: a process that leaves its group (`setsid`, a tool that daemonises) is out of reach
//! unless fwfix died mid-spawn; every child keeps the marker open (an empty pipe's read end with
//! no writer, which nothing reads); if the guardian cannot be started, children still die on every
//! way fwfix ends except SIGKILL.

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
    // Queued before the guardian exists: the first thing it reads.
    if let Some(inode) = open_marker() {
        say(&ours, format!("={inode}\n").as_bytes());
    }
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

/// The marker every child inherits, open for as long as fwfix runs.
static MARKER: OnceLock<OwnedFd> = OnceLock::new();

/// Opens the marker: the read end of a pipe whose write end is closed at once, inherited across
/// exec. Returns its inode, by which the guardian finds its holders.
fn open_marker() -> Option<u64> {
    use nix::fcntl::{fcntl, FcntlArg, FdFlag, OFlag};
    let (read, write) = nix::unistd::pipe2(OFlag::O_CLOEXEC).ok()?;
    drop(write);
    fcntl(&read, FcntlArg::F_SETFD(FdFlag::empty())).ok()?;
    let inode = nix::sys::stat::fstat(&read).ok()?.st_ino;
    MARKER.set(read).ok()?;
    Some(inode)
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

/// Spawns `command`, which must lead its own group (`process_group(0)`), and announces the
/// child's group to the guardian.
pub fn spawn(command: &mut tokio::process::Command) -> std::io::Result<tokio::process::Child> {
    let guardian = socket().inspect(|_| ready());
    if let Some(socket) = guardian {
        say(socket, b"?\n");
    }
    let spawned = command.spawn();
    if let Some(socket) = guardian {
        match spawned.as_ref().ok().and_then(|child| child.id()) {
            Some(pid) => say(socket, format!("+{pid}\n").as_bytes()),
            None => say(socket, b"!\n"),
        }
    }
    spawned
}

/// Sends `bytes` to the guardian without blocking and without SIGPIPE if it is gone.
fn say(socket: &UnixStream, bytes: &[u8]) {
    let _ = send(
        socket.as_raw_fd(),
        bytes,
        MsgFlags::MSG_NOSIGNAL | MsgFlags::MSG_DONTWAIT,
    );
}

/// Tells the guardian that the group led by `pgid` is done with (its leader was reaped and the
/// rest killed).
pub fn forget(pgid: Pid) {
    if let Some(socket) = socket() {
        say(socket, format!("-{pgid}\n").as_bytes());
    }
}

/// Leaves the removal of `dir` (a scratch directory nothing uses any more) to the guardian, so
/// that fwfix need not wait for it: removing a directory sleeps for milliseconds on some
/// filesystems (4 ms on ext4 on the benchmark machine), at the very end of a test run. False when
/// there is no guardian to do it (the caller removes it then).
pub fn remove_later(dir: &std::path::Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Some(socket) = socket() else {
        return false;
    };
    let path = dir.as_os_str().as_bytes();
    if path.contains(&b'\n') {
        return false;
    }
    let mut line = Vec::with_capacity(path.len() + 2);
    line.push(b'r');
    line.extend_from_slice(path);
    line.push(b'\n');
    // A guardian that is gone (or a full buffer) leaves it to the caller.
    send(
        socket.as_raw_fd(),
        &line,
        MsgFlags::MSG_NOSIGNAL | MsgFlags::MSG_DONTWAIT,
    )
    .is_ok_and(|sent| sent == line.len())
}

/// The re-executed guardian's life, on its stdin: the marker it inherited (it is no child of
/// fwfix's to stop) and anything else fwfix had open are closed first.
pub fn serve_stdin() {
    close_inherited(0);
    serve(std::io::stdin());
}

/// What fwfix tells its guardian, a line each.
#[derive(Debug, PartialEq, Eq)]
enum Message {
    /// `+<pgid>`: a child leads this group (and its spawn is over).
    Announce(i32),
    /// `-<pgid>`: the group is done with.
    Forget(i32),
    /// `=<inode>`: the marker every child holds.
    Marker(u64),
    /// `?`: a spawn begins.
    Spawning,
    /// `!`: a spawn failed.
    Failed,
    /// `r<path>`: a directory to remove (now: fwfix goes on without waiting for it).
    Remove(std::path::PathBuf),
}

/// The guardian's whole life: keeps the announced groups until `input` ends, then stops them, and
/// every holder of the marker too when a spawn was under way.
pub fn serve(input: impl Read) {
    let mut groups: HashMap<i32, Option<u64>> = HashMap::new();
    let mut marker = None;
    let mut spawning = 0u32;
    for line in BufReader::new(input).split(b'\n') {
        let Ok(line) = line else { break };
        match parse(&line) {
            Some(Message::Announce(pgid)) => {
                groups.insert(pgid, start_time(pgid));
                spawning = spawning.saturating_sub(1);
            }
            Some(Message::Forget(pgid)) => {
                groups.remove(&pgid);
            }
            Some(Message::Marker(inode)) => marker = Some(inode),
            Some(Message::Spawning) => spawning += 1,
            Some(Message::Failed) => spawning = spawning.saturating_sub(1),
            Some(Message::Remove(dir)) => {
                let _ = std::fs::remove_dir_all(dir);
            }
            None => {}
        }
    }
    let mut targets: Vec<Target> = groups
        .into_iter()
        .filter(|&(pgid, started)| still_ours(started, start_time(pgid)))
        .map(|(pgid, _)| Target::Group(Pid::from_raw(pgid)))
        .collect();
    if let Some(inode) = marker.filter(|_| spawning > 0) {
        targets.extend(holders(inode));
    }
    stop(&targets);
}

fn parse(line: &[u8]) -> Option<Message> {
    use std::os::unix::ffi::OsStrExt;
    let (&sign, rest) = line.split_first()?;
    if sign == b'r' {
        // Only an absolute path: a relative one would be taken from the guardian's `/`.
        let dir = std::path::Path::new(std::ffi::OsStr::from_bytes(rest));
        return dir
            .is_absolute()
            .then(|| Message::Remove(dir.to_path_buf()));
    }
    let text = std::str::from_utf8(rest).ok()?;
    match sign {
        b'+' | b'-' => {
            let pgid: i32 = text.parse().ok()?;
            // 0, 1 and negative ids would address fwfix's own group, init, or everything.
            (pgid > 1).then_some(if sign == b'+' {
                Message::Announce(pgid)
            } else {
                Message::Forget(pgid)
            })
        }
        b'=' => text.parse().ok().map(Message::Marker),
        b'?' if text.is_empty() => Some(Message::Spawning),
        b'!' if text.is_empty() => Some(Message::Failed),
        _ => None,
    }
}

/// What the guardian stops: a group, or a process that leads none (a child before its
/// `setpgid`, still in fwfix's group, which must not be signalled whole).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Group(Pid),
    Process(Pid),
}

impl Target {
    /// Sends `signal` (None: checks that it still exists).
    fn signal(self, signal: Option<Signal>) -> bool {
        match self {
            Target::Group(pgid) => killpg(pgid, signal).is_ok(),
            Target::Process(pid) => nix::sys::signal::kill(pid, signal).is_ok(),
        }
    }
}

/// Every process (this one aside) that holds the pipe with this inode open: a group it leads,
/// or itself.
fn holders(inode: u64) -> Vec<Target> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let link = format!("pipe:[{inode}]");
    let me = std::process::id();
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != me && holds(pid, &link))
        .filter_map(|pid| {
            let pid = i32::try_from(pid).ok()?;
            Some(if group_of(pid)? == pid {
                Target::Group(Pid::from_raw(pid))
            } else {
                Target::Process(Pid::from_raw(pid))
            })
        })
        .collect()
}

/// Whether `pid` has a descriptor whose link reads `link`.
fn holds(pid: u32, link: &str) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.filter_map(Result::ok)
        .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| target.as_os_str() == link))
}

/// A process's group, field 5 of /proc/<pid>/stat.
fn group_of(pid: i32) -> Option<i32> {
    stat_field(pid, 2)
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

/// SIGTERM to every target, up to [`GRACE`] for them to go, then SIGKILL.
fn stop(targets: &[Target]) {
    for &target in targets {
        target.signal(Some(Signal::SIGTERM));
    }
    let deadline = Instant::now() + GRACE;
    while Instant::now() < deadline && targets.iter().any(|&target| target.signal(None)) {
        std::thread::sleep(Duration::from_millis(50));
    }
    for &target in targets {
        target.signal(Some(Signal::SIGKILL));
    }
}

/// A process's start time (clock ticks since boot), field 22 of /proc/<pid>/stat.
fn start_time(pid: i32) -> Option<u64> {
    stat_field(pid, 19)
}

/// Field `n + 3` of /proc/<pid>/stat (`n` counted from the field after the command name).
fn stat_field<T: std::str::FromStr>(pid: i32, n: usize) -> Option<T> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: count from its closing one.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(n)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_a_sign_and_an_id_or_a_sign_alone() {
        assert_eq!(parse(b"+4194304"), Some(Message::Announce(4_194_304)));
        assert_eq!(parse(b"-2147483647"), Some(Message::Forget(i32::MAX)));
        assert_eq!(
            parse(b"=18446744073709551615"),
            Some(Message::Marker(u64::MAX))
        );
        assert_eq!(parse(b"?"), Some(Message::Spawning));
        assert_eq!(parse(b"!"), Some(Message::Failed));
        assert_eq!(
            parse(b"r/tmp/fwfix-qemu-1"),
            Some(Message::Remove("/tmp/fwfix-qemu-1".into()))
        );
        for bad in [
            &b"+1"[..],
            b"+0",
            b"+-5",
            b"x12",
            b"+",
            b"",
            b"+12 ",
            b"?1",
            b"!!",
            b"=",
            b"=-3",
            b"r",
            b"rtmp/x",
        ] {
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

    /// fwfix died between a spawn and its announcement: the child (here in a group of its own,
    /// and a grandchild in that group) is found by the marker it inherited, and stopped; a
    /// process without the marker is not.
    #[test]
    fn a_child_spawned_but_not_yet_announced_is_stopped_by_its_marker() {
        use std::os::unix::process::{CommandExt, ExitStatusExt};
        // Close-on-exec, so that a child another test spawns meanwhile does not inherit the
        // marker and get stopped by this test's guardian; the marked child gets it as stdin.
        let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
        drop(write);
        let inode = nix::sys::stat::fstat(&read).unwrap().st_ino;
        let mut marked = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & wait"])
            .stdin(Stdio::from(read))
            .process_group(0)
            .spawn()
            .unwrap();
        let mut unmarked = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let group = Pid::from_raw(i32::try_from(marked.id()).unwrap());
        serve(format!("={inode}\n?\n").as_bytes());
        assert_eq!(marked.wait().unwrap().signal(), Some(15));
        // The grandchild went with its group: nothing is left to signal.
        for _ in 0..100 {
            if killpg(group, None).is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(
            killpg(group, None).is_err(),
            "the marked group outlived serve"
        );
        assert_eq!(unmarked.try_wait().unwrap(), None);
        unmarked.kill().unwrap();
        unmarked.wait().unwrap();
    }

    #[test]
    fn a_directory_left_to_the_guardian_is_removed() {
        let dir = tempfile::tempdir().unwrap().keep();
        std::fs::write(dir.join("core"), b"x").unwrap();
        serve(format!("r{}\n", dir.display()).as_bytes());
        assert!(!dir.exists());
    }

    /// With every spawn announced (or failed), the marker is not looked for: a marked process
    /// that was never announced (nothing fwfix spawned) is left alone.
    #[test]
    fn the_marker_is_only_searched_when_a_spawn_was_under_way() {
        use std::os::unix::process::CommandExt;
        // Close-on-exec, so that a child another test spawns meanwhile does not inherit the
        // marker and get stopped by this test's guardian; the marked child gets it as stdin.
        let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
        drop(write);
        let inode = nix::sys::stat::fstat(&read).unwrap().st_ino;
        let mut marked = std::process::Command::new("sleep")
            .arg("30")
            .stdin(Stdio::from(read))
            .process_group(0)
            .spawn()
            .unwrap();
        serve(format!("={inode}\n?\n!\n?\n+999999999\n-999999999\n").as_bytes());
        assert_eq!(marked.try_wait().unwrap(), None);
        marked.kill().unwrap();
        marked.wait().unwrap();
    }
}
