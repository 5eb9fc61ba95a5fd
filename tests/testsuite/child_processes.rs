//! Nothing fwfix starts outlives it: fwfix is killed with SIGKILL (as the OOM killer or a closed
//! laptop lid on a remote shell would: none of its own cleanup runs) while a build, a trial build
//! or an agent runs, and every process of that child's group is gone soon after, with nothing
//! written after the kill. Checked in /proc, with real shells, sleeps and the real fwfix binary.
#![allow(clippy::unwrap_used, clippy::expect_used)] // panics are how tests fail

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

/// A script that records its process group in `groups`, starts a grandchild that appends to
/// `marker` every 50 ms, and waits for a minute: a slow build (or agent) whose children must not
/// outlive fwfix.
fn slow_script(groups: &Path, marker: &Path) -> String {
    format!(
        "cut -d' ' -f5 /proc/$$/stat >> '{p}'\n( while :; do echo tick >> '{m}'; sleep 0.05; done ) &\nsleep 60\n",
        p = groups.display(),
        m = marker.display()
    )
}

/// The process groups the scripts recorded in `groups`.
fn recorded(groups: &Path) -> Vec<i32> {
    std::fs::read_to_string(groups)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// Waits until `count` scripts recorded their process groups in `groups`.
fn wait_for_groups(groups: &Path, count: usize, fwfix: &mut Child) {
    for _ in 0..2400 {
        if recorded(groups).len() >= count {
            return;
        }
        if let Some(status) = fwfix.try_wait().unwrap() {
            panic!("fwfix ended ({status}) before {count} script(s) started");
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("{count} script(s) never started");
}

/// A process's state letter and process group, from /proc/<pid>/stat.
fn stat(pid: i32) -> Option<(char, i32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut fields = text[text.rfind(')')? + 1..].split_whitespace();
    let state = fields.next()?.chars().next()?;
    let pgid = fields.nth(1)?.parse().ok()?;
    Some((state, pgid))
}

/// The processes (zombies aside: they run nothing) in process group `pgid`.
fn members(pgid: i32) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| matches!(stat(pid), Some((state, group)) if group == pgid && state != 'Z'))
        .collect()
}

/// Kills fwfix with SIGKILL once `count` scripts run, then checks that their groups empty and
/// that `marker` stops growing.
fn kill_and_check(mut fwfix: Child, groups: &Path, count: usize, marker: &Path) {
    wait_for_groups(groups, count, &mut fwfix);
    for group in recorded(groups) {
        assert!(!members(group).is_empty(), "group {group} is not running");
    }
    fwfix.kill().unwrap();
    fwfix.wait().unwrap();
    // Read again: another script may have started meanwhile.
    for group in recorded(groups) {
        let mut left = members(group);
        // Generous: the guardian gives the groups a grace period before SIGKILL.
        for _ in 0..400 {
            if left.is_empty() {
                break;
            }
            std::thread::sleep(Duration::from_millis(25));
            left = members(group);
        }
        if !left.is_empty() {
            for &pid in &left {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            panic!("processes {left:?} of group {group} outlived fwfix");
        }
    }
    let size = std::fs::metadata(marker).map(|m| m.len()).unwrap_or(0);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        std::fs::metadata(marker).map(|m| m.len()).unwrap_or(0),
        size,
        "{} was written after fwfix and its children were gone",
        marker.display()
    );
}

/// Where a test keeps its scripts, pid list and marker: outside the repository.
struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    fn new() -> Scratch {
        Scratch {
            dir: tempfile::tempdir().unwrap(),
        }
    }
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A script `name` that the first time `guard` holds does `first` and then hangs as
    /// [`slow_script`] does, and otherwise goes on: `prefix`, the guarded part, `suffix`.
    /// Returns the pid list, the marker and the script.
    fn slow_once(
        &self,
        name: &str,
        prefix: &str,
        guard: &str,
        first: &str,
        suffix: &str,
    ) -> (PathBuf, PathBuf, PathBuf) {
        let (pids, marker, once) = (self.path("pids"), self.path("marker"), self.path("once"));
        let script = self.path(name);
        std::fs::write(
            &script,
            format!(
                "{prefix}if {guard}[ ! -f '{o}' ]; then\ntouch '{o}'\n{first}{}fi\n{suffix}",
                slow_script(&pids, &marker),
                o = once.display()
            ),
        )
        .unwrap();
        (pids, marker, script)
    }
}

fn spawn_fwfix(args: &[&str], repo: &Path) -> Child {
    let state = tempfile::tempdir().unwrap().keep();
    fwfix_command(args, repo, &state)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn sigkill_of_fwfix_test_mid_build_takes_the_build_and_its_children_along() {
    let repo = FixtureRepo::new();
    let scratch = Scratch::new();
    let (pids, marker) = (scratch.path("pids"), scratch.path("marker"));
    let script = scratch.path("build.sh");
    std::fs::write(&script, slow_script(&pids, &marker)).unwrap();
    let profile = scratch.path("slow.toml");
    std::fs::write(
        &profile,
        format!(
            "name = \"slow\"\n[build]\ncommand = \"sh {}\"\nartifact = \"build/x.elf\"\n\
             [test]\nharness = \"unity\"\n",
            script.display()
        ),
    )
    .unwrap();
    let fwfix = spawn_fwfix(
        &[
            "test",
            "--board",
            "qemu-mps2-an385",
            "--profile",
            profile.to_str().unwrap(),
        ],
        repo.path(),
    );
    kill_and_check(fwfix, &pids, 1, &marker);
}

#[test]
fn sigkill_of_fwfix_run_mid_trial_builds_takes_every_trial_build_along() {
    let repo = FixtureRepo::new();
    let scratch = Scratch::new();
    let (pids, marker) = (scratch.path("pids"), scratch.path("marker"));
    let script = scratch.path("build.sh");
    // The loop's own builds are real; the trial builds in the governor's worktrees hang.
    std::fs::write(
        &script,
        format!(
            "case \"$PWD\" in */wt-*)\n{}\n;; esac\nexec make BOARD=$1 build/$1/test_crc.elf\n",
            slow_script(&pids, &marker)
        ),
    )
    .unwrap();
    commit_script_profile(&repo, "crc-slow-trials", &script);
    let queue = fixture_queue(&["02-breaks-build.diff", "04-fixes-crc16.diff"]);
    let fwfix = spawn_fwfix(
        &[
            "run",
            "--board",
            "qemu-mps2-an385",
            "--profile",
            "crc-slow-trials",
            "--strategy",
            "queue",
            "--patches",
            queue.path().to_str().unwrap(),
        ],
        repo.path(),
    );
    kill_and_check(fwfix, &pids, 1, &marker);
}

#[test]
fn sigkill_of_fwfix_run_mid_agent_takes_the_agent_and_its_children_along() {
    let repo = FixtureRepo::new();
    let scratch = Scratch::new();
    let (pids, marker) = (scratch.path("pids"), scratch.path("marker"));
    let script = scratch.path("agent.sh");
    std::fs::write(&script, slow_script(&pids, &marker)).unwrap();
    commit_agent_profile(&repo, &script, 1);
    let fwfix = spawn_fwfix(
        &[
            "run",
            "--board",
            "qemu-mps2-an385",
            "--profile",
            "crc-slow-agent",
            "--strategy",
            "command",
        ],
        repo.path(),
    );
    kill_and_check(fwfix, &pids, 1, &marker);
}

#[test]
fn a_fresh_run_refuses_a_tree_a_killed_run_left_its_candidate_in() {
    let repo = FixtureRepo::new();
    let scratch = Scratch::new();
    // The first build of a patched tree (the candidate's, in BUILD_RUN) hangs; the rest are real.
    let (pids, marker, script) = scratch.slow_once(
        "build.sh",
        "",
        "! git diff --quiet -- src && ",
        "",
        "exec make BOARD=$1 build/$1/test_crc.elf\n",
    );
    commit_script_profile(&repo, "crc-slow-candidate", &script);
    let queue = fixture_queue(&["04-fixes-crc16.diff"]);
    let args = [
        "run",
        "--board",
        "qemu-mps2-an385",
        "--profile",
        "crc-slow-candidate",
        "--strategy",
        "queue",
        "--patches",
        queue.path().to_str().unwrap(),
    ];
    kill_and_check(spawn_fwfix(&args, repo.path()), &pids, 1, &marker);
    assert!(
        !repo.git(&["diff", "--", "src"]).is_empty(),
        "the killed run's candidate is not in the tree"
    );
    let killed = std::fs::read_dir(repo.path().join(".fwfix/runs"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .file_name()
        .into_string()
        .unwrap();

    // The candidate is the killed run's, not the owner's work: a fresh run does not start from it.
    let fresh = fwfix(&args, repo.path());
    assert_eq!(fresh.status.code(), Some(2), "{}", text(&fresh));
    let said = text(&fresh);
    assert!(
        said.contains(&format!("run {killed} was killed"))
            && said.contains(&format!("fwfix resume {killed}")),
        "{said}"
    );
    assert_eq!(
        std::fs::read_dir(repo.path().join(".fwfix/runs"))
            .unwrap()
            .count(),
        1,
        "the refused run left a run directory"
    );
    // Nor does `fwfix test` build and pass the candidate as the owner's code.
    let test = fwfix(
        &[
            "test",
            "--board",
            "qemu-mps2-an385",
            "--profile",
            "crc-slow-candidate",
        ],
        repo.path(),
    );
    assert_eq!(test.status.code(), Some(2), "{}", text(&test));
    assert!(
        text(&test).contains(&format!("fwfix resume {killed}")),
        "{}",
        text(&test)
    );

    // Resuming it carries it on to its end, and the owner's tree is as it was.
    let resumed = fwfix(&["resume", &killed], repo.path());
    assert_eq!(resumed.status.code(), Some(0), "{}", text(&resumed));
    assert_eq!(repo.git(&["diff", "--", "src"]), "");
    // Nothing killed is left: a fresh run starts.
    let again = fwfix(&args, repo.path());
    assert_ne!(again.status.code(), Some(2), "{}", text(&again));
}

#[test]
fn a_tree_a_killed_agent_edited_is_refused_by_run_and_test_until_the_run_is_dealt_with() {
    let repo = FixtureRepo::new();
    let scratch = Scratch::new();
    let (pids, marker) = (scratch.path("pids"), scratch.path("marker"));
    let script = scratch.path("agent.sh");
    // The agent edits a tracked file, adds one of its own, and is still at work when fwfix dies.
    std::fs::write(
        &script,
        format!(
            "cat > /dev/null\necho '/* agent */' >> src/crc.c\necho junk > src/agent_tmp.c\n{}",
            slow_script(&pids, &marker)
        ),
    )
    .unwrap();
    commit_agent_profile(&repo, &script, 1);
    let run = [
        "run",
        "--board",
        "qemu-mps2-an385",
        "--profile",
        "crc-slow-agent",
        "--strategy",
        "command",
    ];
    kill_and_check(spawn_fwfix(&run, repo.path()), &pids, 1, &marker);
    assert!(repo.path().join("src/agent_tmp.c").exists());
    let killed = std::fs::read_dir(repo.path().join(".fwfix/runs"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .file_name()
        .into_string()
        .unwrap();

    // Neither a fresh run nor `fwfix test` takes the agent's edits for the owner's work.
    let test = [
        "test",
        "--board",
        "qemu-mps2-an385",
        "--profile",
        "crc-slow-agent",
    ];
    for args in [&run[..], &test[..]] {
        let out = fwfix(args, repo.path());
        let said = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {said}");
        assert!(
            said.contains(&format!("run {killed} was killed while its agent edited"))
                && said.contains(&format!("fwfix resume {killed}")),
            "{args:?}: {said}"
        );
    }
    assert_eq!(
        std::fs::read_dir(repo.path().join(".fwfix/runs"))
            .unwrap()
            .count(),
        1,
        "a refused command left a run directory"
    );

    // Forgetting the run leaves the tree as it is and lets commands use it again.
    let pruned = fwfix(&["runs", "prune", "--resumable"], repo.path());
    assert_eq!(pruned.status.code(), Some(0), "{}", text(&pruned));
    assert!(repo.path().join("src/agent_tmp.c").exists());
    let out = fwfix(&test, repo.path());
    assert_ne!(out.status.code(), Some(2), "{}", text(&out));
}

/// The first agent edits a tracked file, adds one of its own, and is still at work when fwfix
/// dies, and the power goes while the trace's last line is half written. `fwfix resume` sets
/// the agent's tree aside under a ref of the run, restores the owner's, carries the run on
/// from patch generation (the agent proposes nothing more), and sets the torn line aside so
/// the trace audits.
#[test]
fn resume_sets_a_killed_agents_edits_and_a_torn_trace_line_aside() {
    let repo = FixtureRepo::new();
    let scratch = Scratch::new();
    let (pids, marker, script) = scratch.slow_once(
        "agent.sh",
        "cat > /dev/null\n",
        "",
        "echo '/* agent */' >> src/crc.c\necho junk > src/agent_tmp.c\n",
        "",
    );
    commit_agent_profile(&repo, &script, 1);
    let run = [
        "run",
        "--board",
        "qemu-mps2-an385",
        "--profile",
        "crc-slow-agent",
        "--strategy",
        "command",
    ];
    kill_and_check(spawn_fwfix(&run, repo.path()), &pids, 1, &marker);
    let run_dir = std::fs::read_dir(repo.path().join(".fwfix/runs"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let id = run_dir.file_name().unwrap().to_str().unwrap().to_string();
    let trace_file = run_dir.join("trace.jsonl");
    let mut trace = std::fs::read(&trace_file).unwrap();
    trace.extend_from_slice(br#"{"seq":99,"ts":"2026-"#);
    std::fs::write(&trace_file, trace).unwrap();

    let resumed = fwfix(&["resume", "--json", &id], repo.path());
    let said = text(&resumed);
    assert_ne!(resumed.status.code(), Some(2), "{said}");
    assert!(run_dir.join("report.json").is_file(), "{said}");
    // The owner's tree is back; the agent's is under the run's ref, and the way back is named.
    assert!(!repo.path().join("src/agent_tmp.c").exists());
    assert_eq!(repo.git(&["status", "--porcelain", "--", "src"]), "");
    let left = format!("refs/fwfix/{id}/left-1");
    assert_eq!(
        repo.git(&["show", &format!("{left}:src/agent_tmp.c")]),
        "junk\n"
    );
    assert!(repo
        .git(&["show", &format!("{left}:src/crc.c")])
        .ends_with("/* agent */\n"));
    let take_back = format!("git diff-tree -r -p --binary --no-commit-id {left} | git apply");
    assert!(
        said.contains(&take_back) && said.contains("src/agent_tmp.c (new)"),
        "{said}"
    );
    let notes = report(&run_dir)["notes"].to_string();
    assert!(
        notes.contains(&take_back) && notes.contains("killed while its agent edited"),
        "{notes}"
    );
    assert!(notes.contains("recorded as torn"), "{notes}");
    // The torn line went aside, not into the trace: the run audits, and the audit says so.
    assert_eq!(
        std::fs::read_to_string(run_dir.join("trace.torn")).unwrap(),
        "{\"seq\":99,\"ts\":\"2026-\n"
    );
    let audit = fwfix(&["audit", &id], repo.path());
    assert_eq!(audit.status.code(), Some(0), "{}", text(&audit));
    assert!(text(&audit).contains("torn trace line"), "{}", text(&audit));
    // Bringing the agent's tree back takes one command.
    let back = sh(&take_back, repo.path());
    assert!(back.status.success(), "{}", text(&back));
    assert_eq!(
        std::fs::read_to_string(repo.path().join("src/agent_tmp.c")).unwrap(),
        "junk\n"
    );
}

/// Agents asked for several candidates work in worktrees of their own and never edit the
/// owner's tree: a run killed while they work leaves the tree to later commands, and
/// `fwfix runs prune` takes the worktrees it left along with the run.
#[test]
fn a_killed_multi_candidate_agent_run_leaves_the_tree_usable() {
    let repo = FixtureRepo::new();
    let scratch = Scratch::new();
    let (pids, marker) = (scratch.path("pids"), scratch.path("marker"));
    let script = scratch.path("agent.sh");
    std::fs::write(
        &script,
        format!("cat > /dev/null\n{}", slow_script(&pids, &marker)),
    )
    .unwrap();
    commit_agent_profile(&repo, &script, 2);
    let run = [
        "run",
        "--board",
        "qemu-mps2-an385",
        "--profile",
        "crc-slow-agent",
        "--strategy",
        "command",
    ];
    kill_and_check(spawn_fwfix(&run, repo.path()), &pids, 2, &marker);
    let worktrees = || {
        repo.git(&["worktree", "list", "--porcelain"])
            .matches("worktree ")
            .count()
    };
    assert_eq!(worktrees(), 3, "the agents' workspaces are gone");
    let test = [
        "test",
        "--board",
        "qemu-mps2-an385",
        "--profile",
        "crc-slow-agent",
    ];
    let out = fwfix(&test, repo.path());
    assert_ne!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("left 2 worktree(s) of its own"),
        "{}",
        text(&out)
    );
    let pruned = fwfix(&["runs", "prune", "--resumable"], repo.path());
    assert_eq!(pruned.status.code(), Some(0), "{}", text(&pruned));
    assert_eq!(worktrees(), 1, "{}", repo.git(&["worktree", "list"]));
}

/// Commits `profiles/crc-slow-agent.toml`, whose command strategy runs `script` as the agent,
/// asked for `candidates` candidates (each in a worktree of its own when more than one).
fn commit_agent_profile(repo: &FixtureRepo, script: &Path, candidates: u32) {
    repo.write(
        "profiles/crc-slow-agent.toml",
        &format!(
            r#"name = "crc-slow-agent"
[build]
command = "make BOARD={{machine}} build/{{machine}}/test_crc.elf"
artifact = "build/{{machine}}/test_crc.elf"
[test]
harness = "unity"
timeout_s = 20
[strategy.command]
argv = ["sh", "{}"]
timeout_s = 120
candidates = {candidates}
"#,
            script.display()
        ),
    );
    repo.git(&["add", "profiles/crc-slow-agent.toml"]);
    repo.git(&["commit", "-q", "-m", "profile"]);
}

/// Commits `profiles/<name>.toml`, whose build runs `script` with the board's machine.
fn commit_script_profile(repo: &FixtureRepo, name: &str, script: &Path) {
    repo.write(
        &format!("profiles/{name}.toml"),
        &format!(
            "name = \"{name}\"\n[build]\ncommand = \"sh {} {{machine}}\"\n\
             artifact = \"build/{{machine}}/test_crc.elf\"\n[test]\nharness = \"unity\"\ntimeout_s = 20\n",
            script.display()
        ),
    );
    repo.git(&["add", &format!("profiles/{name}.toml")]);
    repo.git(&["commit", "-q", "-m", "profile"]);
}
