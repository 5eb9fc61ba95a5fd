//! Test support: throwaway firmware repositories made from the bundled fixtures, a runner for the
//! real `fwfix` binary, and checks that no QEMU outlived a test.
#![allow(dead_code)] // not every helper is used by every build of the suite

pub mod dut;
pub mod labgrid;
pub mod model_server;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A TCP port on 127.0.0.1 that nothing listens on, for a child the test starts (QEMU's gdbstub
/// or UART server, a labgrid coordinator) to bind. Taken below Linux's ephemeral range (32768
/// up), where outgoing connections pick their source ports, and never handed out twice in one
/// run: a port that `bind(0)` gave and released could go to a parallel test, or become some
/// connection's source port, before the child binds it (QEMU then exits and nothing listens).
pub fn free_port() -> u16 {
    use std::net::TcpListener;
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    // Each run starts at its own place, so that two suites on one machine rarely meet.
    let start = 20_000 + (std::process::id() % 1_000) * 10;
    let _ = NEXT.compare_exchange(0, start, Ordering::SeqCst, Ordering::SeqCst);
    loop {
        let port = NEXT.fetch_add(1, Ordering::SeqCst);
        let port = u16::try_from(port)
            .ok()
            .filter(|&p| p < 32_768)
            .expect("a free port below the ephemeral range");
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// Fails loudly when a tool the integration tests drive is missing: these tests never skip.
pub fn require_tools() {
    require(
        &[
            "qemu-system-arm",
            "arm-none-eabi-gcc",
            "gdb-multiarch",
            "socat",
            "make",
            "git",
        ],
        "the test suite needs the real tools",
    );
}

/// Fails loudly when the static analysers the lint stage's tests run are missing, as
/// [`require_tools`] does for the firmware tools.
pub fn require_lint_tools() {
    require_tools();
    require(
        &["cppcheck", "clang-tidy", "gcc"],
        "the lint tests run the real analysers",
    );
}

fn require(tools: &[&str], why: &str) {
    for tool in tools {
        let found = Command::new("sh")
            .arg("-c")
            .arg(format!("command -v {tool}"))
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        assert!(
            found,
            "{tool} is not installed: run `bash scripts/prerequisites.sh` ({why})"
        );
    }
}

pub fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/fwtests")
}

/// The RTOS-shaped fixture: a scheduler that prints a status line a second and never exits.
pub fn rtos_fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/rtos")
}

/// The fixture's real CRC-16 fix, as a model or an agent would propose it.
pub fn crc_fix() -> String {
    std::fs::read_to_string(fixture_dir().join("patches/04-fixes-crc16.diff")).unwrap()
}

/// A patch queue made of some of the fixture's candidate patches (copied, so tests can add more).
pub fn fixture_queue(names: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for name in names {
        std::fs::copy(
            fixture_dir().join("patches").join(name),
            dir.path().join(name),
        )
        .unwrap();
    }
    dir
}

/// Every file below `dir`, recursively.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// The RTOS fixture's shipped profile built as another variant (`make VARIANT=...`), written as
/// `rtos-<variant>.toml` into `dir` (outside the repository, so the tree stays as committed).
pub fn rtos_variant_profile(dir: &Path, variant: &str) -> PathBuf {
    let shipped = std::fs::read_to_string(rtos_fixture_dir().join("profiles/rtos.toml")).unwrap();
    let text = shipped
        .replace("name = \"rtos\"", &format!("name = \"rtos-{variant}\""))
        .replace("VARIANT=ok", &format!("VARIANT={variant}"))
        .replace("/ok/", &format!("/{variant}/"));
    assert_ne!(
        text, shipped,
        "profiles/rtos.toml no longer names its variant"
    );
    let path = dir.join(format!("rtos-{variant}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

/// The UART lines of an attempt's console.log (`[   0.056] uart  text`), without the prefix.
pub fn uart_lines(console_log: &Path) -> Vec<String> {
    std::fs::read_to_string(console_log)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once("] uart  ").map(|(_, text)| text.to_string()))
        .collect()
}

/// A git repository holding a copy of a fixture firmware, committed, in a temp dir.
pub struct FixtureRepo {
    pub dir: tempfile::TempDir,
}

impl FixtureRepo {
    /// The Unity fixture (fixtures/fwtests).
    pub fn new() -> FixtureRepo {
        FixtureRepo::of(&fixture_dir())
    }

    /// The RTOS fixture (fixtures/rtos).
    pub fn rtos() -> FixtureRepo {
        FixtureRepo::of(&rtos_fixture_dir())
    }

    fn of(fixture: &Path) -> FixtureRepo {
        require_tools();
        let dir = tempfile::Builder::new()
            .prefix("fwfix-test-")
            .tempdir()
            .unwrap();
        copy_tree(fixture, dir.path());
        let repo = FixtureRepo { dir };
        repo.git(&["init", "-q", "-b", "main"]);
        repo.git(&["add", "-A"]);
        repo.git(&["commit", "-q", "-m", "fixture firmware"]);
        repo
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn git(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(args)
            .current_dir(self.path())
            .env("GIT_AUTHOR_NAME", "Fixture")
            .env("GIT_AUTHOR_EMAIL", "fixture@example.com")
            .env("GIT_COMMITTER_NAME", "Fixture")
            .env("GIT_COMMITTER_EMAIL", "fixture@example.com")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", self.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Applies one of the fixture's patches (as a user editing the tree would).
    pub fn apply_fixture_patch(&self, name: &str) {
        let patch = fixture_dir().join("patches").join(name);
        self.git(&["apply", patch.to_str().unwrap()]);
    }

    /// A candidate made the way a person would: edit `file`, take `git diff`, put it back.
    pub fn diff_of(&self, file: &str, edit: impl Fn(&str) -> String) -> String {
        let original = std::fs::read_to_string(self.path().join(file)).unwrap();
        let edited = edit(&original);
        assert_ne!(edited, original, "the edit changed nothing in {file}");
        self.write(file, &edited);
        let diff = self.git(&["diff", "--", file]);
        self.git(&["checkout", "--", file]);
        diff
    }

    pub fn write(&self, rel: &str, text: &str) -> PathBuf {
        let p = self.path().join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&p, text).unwrap();
        p
    }
}

fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name == "build" {
            continue;
        }
        let src = entry.path();
        let dst = to.join(&name);
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&dst).unwrap();
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

/// Runs the real fwfix binary, with board leases and health in a state directory of the test
/// process's own (never the user's).
/// `fwfix run --json` on the mps2-an385 QEMU board with `profile`, taking the candidates of the
/// patch queue `queue`.
pub fn run_queue(cwd: &Path, profile: &str, queue: &Path) -> Output {
    let queue = queue.to_string_lossy();
    fwfix(
        &[
            "run",
            "--json",
            "--board",
            "qemu-mps2-an385",
            "--profile",
            profile,
            "--strategy",
            "queue",
            "--patches",
            &queue,
        ],
        cwd,
    )
}

/// Candidate `id` of iteration `iteration`'s round, from its candidates.json.
pub fn candidate(run_dir: &Path, iteration: u32, id: &str) -> Value {
    let path = run_dir.join(format!("iter-{iteration:03}/candidates.json"));
    let round: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    round["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap()
        .clone()
}

/// `sh -c script` in `cwd`, as a user would paste a command fwfix printed.
pub fn sh(script: &str, cwd: &Path) -> Output {
    Command::new("sh")
        .args(["-c", script])
        .current_dir(cwd)
        .output()
        .unwrap()
}

pub fn fwfix(args: &[&str], cwd: &Path) -> Output {
    static STATE: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    let state = STATE.get_or_init(|| {
        tempfile::Builder::new()
            .prefix("fwfix-state-")
            .tempdir()
            .unwrap()
    });
    fwfix_command(args, cwd, state.path()).output().unwrap()
}

/// The real fwfix binary, ready to run with its state directory at `state_dir`.
pub fn fwfix_command(args: &[&str], cwd: &Path, state_dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_fwfix"));
    command
        .args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .env("FWFIX_STATE_DIR", state_dir);
    command
}

/// Ctrl+C to `child`, as a terminal sends it.
pub fn ctrl_c(child: &std::process::Child) {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
}

/// The process ids written one a line into `file` (by a build, hook or agent that left a
/// process in the background).
pub fn pids_in(file: &Path) -> Vec<i32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// Whether `pid` is running.
pub fn alive(pid: i32) -> bool {
    // A zombie still answers kill(0); /proc says whether it is really running.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s.contains(") Z "))
        .unwrap_or(false)
}

/// Whether `pid` is gone within a few seconds: a killed process is reaped by whoever adopted it
/// a moment later.
pub fn gone_soon(pid: i32) -> bool {
    (0..50).any(|_| {
        let running = alive(pid);
        if running {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        !running
    })
}

pub fn text(out: &Output) -> String {
    format!(
        "status: {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The JSON event lines a `--json` run printed.
pub fn events(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
        .collect()
}

/// The run directory named by the last (`finished`) event.
pub fn run_dir(out: &Output) -> PathBuf {
    let events = events(out);
    let last = events
        .last()
        .unwrap_or_else(|| panic!("no events\n{}", text(out)));
    assert_eq!(last["event"], "finished", "{}", text(out));
    PathBuf::from(last["run_dir"].as_str().unwrap())
}

/// The run's trace, one JSON value per transition.
pub fn trace(run_dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(run_dir.join("trace.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

pub fn report(run_dir: &Path) -> Value {
    let text = std::fs::read_to_string(run_dir.join("report.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

pub fn case<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no case {name} in {:#}", report["cases"]))
}

/// QEMU processes whose command line mentions `needle` (a test's unique temp dir).
pub fn qemu_processes_mentioning(needle: &Path) -> Vec<String> {
    qemu_pids_mentioning(needle)
        .into_iter()
        .map(|(_, cmdline)| cmdline)
        .collect()
}

/// As [`qemu_processes_mentioning`], each with its process id.
pub fn qemu_pids_mentioning(needle: &Path) -> Vec<(i32, String)> {
    let needle = needle.to_string_lossy().into_owned();
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains("qemu-system") && cmdline.contains(&needle) {
            found.push((pid, cmdline));
        }
    }
    found
}
