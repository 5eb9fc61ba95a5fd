//! `fwfix run --strategy command` end to end: real shell scripts stand in for an external agent
//! (any coding CLI); the loop verifies what they produce on real QEMU.
#![allow(clippy::unwrap_used, clippy::expect_used)] // panics are how tests fail

use crate::common::*;

/// A profile whose `[strategy.command]` runs `script` (written into the repository's scratch
/// area, outside git's view through .git/info/exclude).
fn agent(repo: &FixtureRepo, script: &str, timeout_s: u32) {
    agents(repo, script, timeout_s, 1);
}

/// [`agent`], asking for `candidates` agents per iteration.
fn agents(repo: &FixtureRepo, script: &str, timeout_s: u32, candidates: u32) {
    let path = repo.path().join(".git/agent.sh");
    std::fs::write(&path, script).unwrap();
    repo.write(
        "profiles/crc-agent.toml",
        &format!(
            r#"name = "crc-agent"
[build]
command = "make BOARD={{machine}} build/{{machine}}/test_crc.elf"
artifact = "build/{{machine}}/test_crc.elf"
[test]
harness = "unity"
timeout_s = 20
[loop]
max_iterations = 3
[recovery]
model_failure = 1
[strategy.command]
argv = ["sh", "{}"]
timeout_s = {timeout_s}
candidates = {candidates}
"#,
            path.display()
        ),
    );
    repo.git(&["add", "profiles/crc-agent.toml"]);
    repo.git(&["commit", "-q", "-m", "agent profile"]);
}

fn run(repo: &FixtureRepo) -> std::process::Output {
    fwfix(
        &[
            "run",
            "--json",
            "--board",
            "qemu-mps2-an385",
            "--profile",
            "crc-agent",
            "--strategy",
            "command",
        ],
        repo.path(),
    )
}

#[test]
fn an_agent_that_edits_the_tree_converges_and_got_the_task_and_evidence() {
    let repo = FixtureRepo::new();
    agent(
        &repo,
        r#"set -e
cat > "$FWFIX_ITERATION_DIR/stdin.json"
echo "$FWFIX_TASK" > "$FWFIX_ITERATION_DIR/task.txt"
sed -i 's/uint16_t crc = 0x0000u;/uint16_t crc = 0xFFFFu;/' src/crc.c
echo "edited src/crc.c"
"#,
        60,
    );
    let out = run(&repo);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let dir = run_dir(&out);
    assert_eq!(report(&dir)["status"], "SUCCESS");
    let stdin: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("iter-001/stdin.json")).unwrap())
            .unwrap();
    assert_eq!(stdin["iteration"], 1);
    assert!(
        stdin["evidence"]["failing"][0]["name"] == "test_crc16_known_vector",
        "{stdin:#}"
    );
    let task = std::fs::read_to_string(dir.join("iter-001/task.txt")).unwrap();
    assert!(task.contains("test_crc16_known_vector"), "{task}");
    // The agent's edit became the candidate diff; the owner's tree is as it was.
    let patch = std::fs::read_to_string(dir.join("iter-001/patch.diff")).unwrap();
    assert!(patch.contains("+    uint16_t crc = 0xFFFFu;"), "{patch}");
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
}

#[test]
fn an_agent_that_prints_a_diff_converges() {
    let repo = FixtureRepo::new();
    let fix = fixture_dir().join("patches/04-fixes-crc16.diff");
    agent(
        &repo,
        &format!(
            "echo 'Here is the fix:'\necho '```diff'\ncat {}\necho '```'\n",
            fix.display()
        ),
        60,
    );
    let out = run(&repo);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

/// Regression: an agent that left a process in the background (holding its output pipes) was
/// read until that process ended: a finished agent was taken as hanging until its timeout.
#[test]
fn an_agent_that_leaves_a_process_running_ends_when_it_exits() {
    let repo = FixtureRepo::new();
    let fix = fixture_dir().join("patches/04-fixes-crc16.diff");
    let pids = repo.path().join(".git/agent-children.pid");
    agent(
        &repo,
        &format!(
            "sleep 300 &\necho $! >> {}\necho '```diff'\ncat {}\necho '```'\n",
            pids.display(),
            fix.display()
        ),
        60,
    );
    let out = run(&repo);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let children = pids_in(&pids);
    assert!(!children.is_empty());
    for pid in children {
        assert!(gone_soon(pid), "the agent's child {pid} outlived it");
    }
}

#[test]
fn an_agent_that_fails_or_hangs_is_a_model_failure_and_one_that_changes_nothing_did_not_converge() {
    // An agent that crashed or hung is infrastructure (exit 4); one that answered with nothing
    // usable left the loop without a candidate: not converged (exit 1).
    for (script, expect, class, code) in [
        (
            "echo 'no idea' >&2; exit 3",
            "exited with",
            "MODEL_FAILURE",
            4,
        ),
        (
            "echo 'reading src/crc.c'; sleep 30",
            "did not finish within 1 s",
            "MODEL_FAILURE",
            4,
        ),
        (
            "echo 'I looked but changed nothing'",
            "is an empty patch",
            "NO_CANDIDATE",
            1,
        ),
    ] {
        let repo = FixtureRepo::new();
        agent(&repo, script, 1);
        let out = run(&repo);
        assert_eq!(out.status.code(), Some(code), "{script}: {}", text(&out));
        let dir = run_dir(&out);
        let report = report(&dir);
        assert_eq!(report["error_class"], class, "{script}");
        assert!(
            report["message"].as_str().unwrap().contains(expect),
            "{script}: {report:#}"
        );
        assert_eq!(repo.git(&["status", "--porcelain"]), "", "{script}");
        // What the agent printed is kept however it ended, a timeout included.
        let log = std::fs::read_to_string(dir.join("iter-001/agent.log")).unwrap();
        let printed = script.split('\'').nth(1).unwrap_or("no idea");
        assert!(log.contains(printed), "{script}: {log}");
    }
}

#[test]
fn several_agents_work_side_by_side_in_worktrees_and_the_governor_picks_the_fix() {
    let repo = FixtureRepo::new();
    // Each agent waits until all three have started: they can only all get past the barrier
    // if they run at the same time. Then #1 weakens the test, #2 gives up, #3 fixes the code.
    agents(
        &repo,
        r#"set -e
cd "$FWFIX_WORK_DIR"
echo "$PWD" > "$FWFIX_ITERATION_DIR/dir-$FWFIX_CANDIDATE.txt"
cat > "$FWFIX_ITERATION_DIR/stdin-$FWFIX_CANDIDATE.json"
touch "$FWFIX_ITERATION_DIR/started-$FWFIX_CANDIDATE"
n=0
until [ -e "$FWFIX_ITERATION_DIR/started-1" ] && [ -e "$FWFIX_ITERATION_DIR/started-2" ] \
      && [ -e "$FWFIX_ITERATION_DIR/started-3" ]; do
    n=$((n + 1)); [ "$n" -lt 600 ] || { echo "alone at the barrier" >&2; exit 9; }
    sleep 0.1
done
case "$FWFIX_CANDIDATE/$FWFIX_CANDIDATES" in
    1/3) sed -i 's/0x29B1/0x31C3/' tests/test_crc.c ;;
    2/3) echo 'no idea' >&2; exit 3 ;;
    3/3) sed -i 's/uint16_t crc = 0x0000u;/uint16_t crc = 0xFFFFu;/' src/crc.c ;;
esac
"#,
        120,
        3,
    );
    let out = run(&repo);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let dir = run_dir(&out);
    let report = report(&dir);
    assert_eq!(report["status"], "SUCCESS");
    assert_eq!(report["iterations"], 1);

    // Three workspaces, none of them the owner's tree, each told which candidate it is.
    let iter = dir.join("iter-001");
    let dirs: Vec<String> = (1..=3)
        .map(|n| std::fs::read_to_string(iter.join(format!("dir-{n}.txt"))).unwrap())
        .collect();
    for (n, d) in dirs.iter().enumerate() {
        assert!(
            d.contains("agent-") && d.trim_end().ends_with(&format!("-c{}", n + 1)),
            "{d}"
        );
        assert_ne!(std::path::Path::new(d.trim()), repo.path());
        let stdin: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(iter.join(format!("stdin-{}.json", n + 1))).unwrap(),
        )
        .unwrap();
        assert_eq!(
            (stdin["candidate"].as_u64(), stdin["candidates"].as_u64()),
            (Some(n as u64 + 1), Some(3))
        );
    }
    // Each agent's $FWFIX_REQUEST names its own workspace and seat.
    let request: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(iter.join("request-c2.json")).unwrap())
            .unwrap();
    assert_eq!(request["candidate"], 2);
    assert_eq!(request["work_dir"].as_str(), Some(dirs[1].trim()));
    // The workspaces are gone; the agents' logs are kept.
    assert!(!std::path::Path::new(dirs[0].trim()).exists());
    assert!(iter.join("agent-c2.log").is_file());

    let listed = report["candidates"].as_array().unwrap();
    let by_id = |id: &str| listed.iter().find(|c| c["id"] == id).unwrap().clone();
    let c1 = by_id("c1");
    assert_eq!(
        (c1["verdict"].as_str(), c1["error_class"].as_str()),
        (Some("dropped"), Some("POLICY_VIOLATION")),
        "{c1:#}"
    );
    let c2 = by_id("c2");
    assert_eq!(c2["verdict"], "dropped", "{c2:#}");
    assert_eq!(c2["error_class"], "MODEL_FAILURE", "{c2:#}");
    assert!(
        c2["reason"].as_str().unwrap().contains("not generated")
            && c2["reason"].as_str().unwrap().contains("exited with"),
        "{c2:#}"
    );
    let c3 = by_id("c3");
    assert_eq!(
        (c3["verdict"].as_str(), c3["rank"].as_u64()),
        (Some("ranked"), Some(1)),
        "{c3:#}"
    );
    let patch = std::fs::read_to_string(iter.join("patch.diff")).unwrap();
    assert!(patch.contains("+    uint16_t crc = 0xFFFFu;"), "{patch}");
    // The weakened test never reached the tree; the owner's tree is as it was.
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
    assert_eq!(
        repo.git(&["worktree", "list", "--porcelain"])
            .matches("worktree ")
            .count(),
        1
    );
}

#[test]
fn a_failed_agent_leaves_nothing_behind_and_a_printed_diff_wins_over_tree_edits() {
    let repo = FixtureRepo::new();
    let fix = fixture_dir().join("patches/04-fixes-crc16.diff");
    // Iteration 1: weakens the test, floods stderr (more than a pipe holds) and fails.
    // Iteration 2: notes what the tree looks like, edits a file and also prints the fix.
    agent(
        &repo,
        &format!(
            r#"if [ "$FWFIX_ITERATION" = 1 ]; then
    sed -i 's/0x29B1/0x31C3/' tests/test_crc.c
    head -c 300000 /dev/zero | tr '\0' 'x' >&2
    exit 3
fi
git status --porcelain > "$FWFIX_ITERATION_DIR/status-before.txt"
echo '/* stray */' >> src/ringbuf.c
echo '```diff'
cat {}
echo '```'
"#,
            fix.display()
        ),
        60,
    );
    let out = run(&repo);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let dir = run_dir(&out);
    let report = report(&dir);
    assert_eq!(report["status"], "SUCCESS", "{report:#}");
    // The flood did not stall the first agent: it failed on its exit status, not a timeout.
    let trace = std::fs::read_to_string(dir.join("trace.jsonl")).unwrap();
    assert!(trace.contains("exited with"), "{trace}");
    assert!(!trace.contains("did not finish"), "{trace}");
    // The second agent started from the owner's tree, not the first one's leftovers.
    let before = std::fs::read_to_string(dir.join("iter-002/status-before.txt")).unwrap();
    assert_eq!(before, "");
    let patch = std::fs::read_to_string(dir.join("iter-002/patch.diff")).unwrap();
    assert!(patch.contains("0xFFFF"), "{patch}");
    assert!(!patch.contains("stray"), "{patch}");
    assert!(dir.join("iter-002/request.json").is_file());
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
}

#[test]
fn a_single_candidate_that_only_adds_a_comment_is_dropped_as_a_no_op_without_a_test_run() {
    let repo = FixtureRepo::new();
    // Iteration 1: a comment only, so the image loads the same bytes as the baseline's.
    // Iteration 2: the fix.
    agent(
        &repo,
        r#"if [ "$FWFIX_ITERATION" = 1 ]; then
    sed -i 's|uint16_t crc = 0x0000u;|uint16_t crc = 0x0000u; /* the XMODEM start value */|' src/crc.c
else
    sed -i 's/uint16_t crc = 0x0000u;/uint16_t crc = 0xFFFFu;/' src/crc.c
fi
"#,
        60,
    );
    let out = run(&repo);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let dir = run_dir(&out);
    let report = report(&dir);
    assert_eq!(report["status"], "SUCCESS", "{report:#}");
    assert_eq!(report["iterations"], 2, "{report:#}");

    // Built, found to change nothing, and never tested.
    let lines = trace(&dir);
    let in_iteration_1: Vec<&serde_json::Value> =
        lines.iter().filter(|l| l["iteration"] == 1).collect();
    assert!(
        !in_iteration_1.iter().any(|l| l["to"] == "TEST_RUN"),
        "{in_iteration_1:#?}"
    );
    let dropped = in_iteration_1
        .iter()
        .find(|l| l["from"] == "BUILD_RUN")
        .unwrap();
    assert_eq!(dropped["to"], "ERROR_RECOVERY", "{dropped}");
    assert_eq!(dropped["error_class"], "NO_CANDIDATE", "{dropped}");
    assert!(
        dropped["reason"].as_str().unwrap().contains("is a no-op"),
        "{dropped}"
    );
    assert!(!dir.join("iter-001/console.log").exists());

    // The review ranked it (its candidates.json is the review's evidence); the report drops it.
    let listed = &report["candidates"][0];
    assert_eq!(
        (listed["verdict"].as_str(), listed["error_class"].as_str()),
        (Some("dropped"), Some("NO_CANDIDATE")),
        "{listed:#}"
    );
    assert!(
        listed["reason"]
            .as_str()
            .unwrap()
            .starts_with("dropped (no-op image)"),
        "{listed:#}"
    );

    // The next candidate learned it was a no-op.
    let analysis: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("iter-001/analysis.json")).unwrap())
            .unwrap();
    let earlier = &analysis["history"][0];
    assert_eq!(earlier["iteration"], 1, "{analysis:#}");
    assert_eq!(earlier["outcome"], "NO_PROGRESS", "{earlier:#}");
    assert!(
        earlier["reason"].as_str().unwrap().contains("is a no-op"),
        "{earlier:#}"
    );
    assert!(
        earlier["diff"]
            .as_str()
            .unwrap()
            .contains("XMODEM start value"),
        "{earlier:#}"
    );
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
    let audit = fwfix(&["audit", dir.to_str().unwrap()], repo.path());
    assert_eq!(audit.status.code(), Some(0), "{}", text(&audit));
}

#[test]
fn an_agent_program_that_does_not_exist_is_a_configuration_error_before_anything_runs() {
    let repo = FixtureRepo::new();
    for (program, says) in [
        ("no-such-agent-cli", "on PATH"),
        ("./tools/no-such-agent.sh", "from the repository's root"),
    ] {
        repo.write(
            "profiles/crc-agent.toml",
            &format!(
                "name = \"crc-agent\"\n[build]\ncommand = \"make BOARD={{machine}} \
                 build/{{machine}}/test_crc.elf\"\nartifact = \"build/{{machine}}/test_crc.elf\"\n\
                 [test]\nharness = \"unity\"\n[strategy.command]\nargv = [\"{program}\", \"--fix\"]\n"
            ),
        );
        let out = run(&repo);
        assert_eq!(out.status.code(), Some(2), "{program}: {}", text(&out));
        let said = text(&out);
        assert!(
            said.contains("crc-agent.toml") && said.contains(program) && said.contains(says),
            "{said}"
        );
        assert!(
            !repo.path().join(".fwfix/runs").exists()
                || std::fs::read_dir(repo.path().join(".fwfix/runs"))
                    .unwrap()
                    .next()
                    .is_none(),
            "a run directory was made"
        );
    }
}
