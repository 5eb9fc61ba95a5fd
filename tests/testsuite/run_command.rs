//! `fwfix run --strategy command` end to end: real shell scripts stand in for an external agent
//! (any coding CLI); the loop verifies what they produce on real QEMU.
#![allow(clippy::unwrap_used, clippy::expect_used)] // panics are how tests fail

use crate::common::*;

/// A profile whose `[strategy.command]` runs `script` (written into the repository's scratch
/// area, outside git's view through .git/info/exclude).
fn agent(repo: &FixtureRepo, script: &str, timeout_s: u32) {
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

#[test]
fn an_agent_that_fails_or_hangs_is_a_model_failure() {
    for (script, expect) in [
        ("echo 'no idea' >&2; exit 3", "exited with"),
        ("sleep 30", "did not finish within 1 s"),
        ("echo 'I looked but changed nothing'", "is an empty patch"),
    ] {
        let repo = FixtureRepo::new();
        agent(&repo, script, 1);
        let out = run(&repo);
        assert_eq!(out.status.code(), Some(4), "{script}: {}", text(&out));
        let dir = run_dir(&out);
        let report = report(&dir);
        assert_eq!(report["error_class"], "MODEL_FAILURE", "{script}");
        assert!(
            report["message"].as_str().unwrap().contains(expect),
            "{script}: {report:#}"
        );
        assert_eq!(repo.git(&["status", "--porcelain"]), "", "{script}");
    }
}
