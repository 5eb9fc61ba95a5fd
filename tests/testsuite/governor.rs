//! The multi-candidate governor end to end: a round of candidates is checked and ranked in
//! PATCH_REVIEW — policy, a trial apply and build in worktrees with the real cross compiler, the
//! image compared with the baseline's — before any of them costs a test run on QEMU. Also the
//! image digest itself, on ELFs built by arm-none-eabi-gcc.
#![allow(clippy::unwrap_used, clippy::expect_used)] // panics are how tests fail

use crate::common::*;
use fwfix::governor::image::loadable_digest;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

#[test]
fn a_no_op_and_a_policy_violation_are_dropped_in_review_before_any_test_runs() {
    let repo = FixtureRepo::new();
    let queue = tempfile::tempdir().unwrap();
    // A comment: the image loads the same bytes as the baseline's.
    let no_op = repo.diff_of("src/crc.c", |c| {
        c.replace(
            "    uint16_t crc = 0x0000u;",
            "    /* The register starts at zero, as the CRC-16/XMODEM variant wants. */\n    uint16_t crc = 0x0000u;",
        )
    });
    // Makes the failing test pass by expecting what the code computes.
    let weakens = repo.diff_of("tests/test_crc.c", |c| {
        c.replace("0x29B1, crc16_ccitt", "0x31C3, crc16_ccitt")
    });
    std::fs::write(queue.path().join("01-comment.diff"), no_op).unwrap();
    std::fs::write(queue.path().join("02-weakens-test.diff"), weakens).unwrap();
    for (name, fixture) in [
        ("03-breaks-build.diff", "02-breaks-build.diff"),
        ("04-fixes-crc16.diff", "04-fixes-crc16.diff"),
    ] {
        std::fs::copy(
            fixture_dir().join("patches").join(fixture),
            queue.path().join(name),
        )
        .unwrap();
    }
    let test_source = std::fs::read_to_string(repo.path().join("tests/test_crc.c")).unwrap();
    let out = run_queue(repo.path(), "crc", queue.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let dir = run_dir(&out);
    let report = report(&dir);
    assert_eq!(report["status"], "SUCCESS");
    // The whole queue was one round: the fix was tested first and converged.
    assert_eq!(report["iterations"], 1);

    let by_id = |id: &str| candidate(&dir, 1, id);
    let c1 = by_id("c1");
    assert_eq!(c1["origin"], "01-comment.diff");
    assert_eq!(c1["verdict"], "dropped", "{c1:#}");
    assert_eq!(c1["stage"], "image", "{c1:#}");
    assert_eq!(c1["checks"]["builds"]["result"], "passed", "{c1:#}");
    assert!(c1["build_log"].as_str().unwrap().ends_with("c1-build.log"));
    let c2 = by_id("c2");
    assert_eq!(c2["verdict"], "dropped", "{c2:#}");
    assert_eq!(c2["stage"], "policy", "{c2:#}");
    assert_eq!(c2["class"], "POLICY_VIOLATION");
    assert_eq!(c2["checks"]["builds"]["result"], "unknown", "{c2:#}");
    let c3 = by_id("c3");
    assert_eq!(c3["stage"], "build", "{c3:#}");
    assert!(c3["reason"].as_str().unwrap().contains("does not build"));
    let c4 = by_id("c4");
    assert_eq!(c4["verdict"], "ranked", "{c4:#}");
    assert_eq!(c4["rank"], 1);
    assert_eq!(c4["checks"]["image"]["result"], "passed", "{c4:#}");

    // The trace says it on the review's line, and names candidates.json as evidence.
    let lines = trace(&dir);
    let review = lines
        .iter()
        .find(|l| l["from"] == "PATCH_REVIEW" && l["iteration"] == 1)
        .unwrap();
    assert_eq!(review["to"], "PATCH_APPLY", "{review:#}");
    let reason = review["reason"].as_str().unwrap();
    assert!(
        reason.starts_with(
            "4 candidates: c4 ranked 1st, c1 dropped (no-op image), c2 dropped (POLICY_VIOLATION"
        ),
        "{reason}"
    );
    assert!(reason.contains("c3 dropped (BUILD_FAILURE"), "{reason}");
    assert!(review["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e == "iter-001/candidates.json"));

    // Exactly one test run in iteration 1: the fix's. The dropped ones never reached QEMU.
    let test_runs = lines
        .iter()
        .filter(|l| l["to"] == "TEST_RUN" && l["iteration"] == 1)
        .count();
    assert_eq!(test_runs, 1, "{lines:#?}");
    let consoles: Vec<String> = std::fs::read_dir(dir.join("iter-001"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("console"))
        .collect();
    assert_eq!(consoles, ["console.log"]);

    // report.json lists every candidate with its verdict and reason.
    let listed = report["candidates"].as_array().unwrap();
    assert_eq!(listed.len(), 4, "{listed:#?}");
    let c1 = listed.iter().find(|c| c["id"] == "c1").unwrap();
    assert_eq!(c1["verdict"], "dropped");
    assert_eq!(c1["error_class"], "NO_CANDIDATE");
    assert!(c1["reason"].as_str().unwrap().contains("no-op image"));
    let c4 = listed.iter().find(|c| c["id"] == "c4").unwrap();
    assert_eq!(
        (c4["verdict"].as_str(), c4["rank"].as_u64()),
        (Some("ranked"), Some(1))
    );
    assert_eq!(c4["changed_lines"], 2);
    let markdown = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(markdown.contains("## Candidates"), "{markdown}");

    // No trial worktree is left, and the test file was never touched.
    let worktrees = repo.git(&["worktree", "list", "--porcelain"]);
    assert_eq!(worktrees.matches("worktree ").count(), 1, "{worktrees}");
    assert_eq!(
        std::fs::read_to_string(repo.path().join("tests/test_crc.c")).unwrap(),
        test_source
    );
    let audit = fwfix(&["audit", dir.to_str().unwrap()], repo.path());
    assert_eq!(audit.status.code(), Some(0), "{}", text(&audit));
}

#[test]
fn a_trial_build_the_environment_broke_keeps_its_candidate_in_the_round() {
    let repo = FixtureRepo::new();
    // The fix's trial build runs out of disk; the loop's own build of it does not.
    repo.write(
        "profiles/crc-disk.toml",
        r#"name = "crc-disk"
[build]
command = "case \"$PWD\" in */wt-*-c2) echo 'cc1: fatal error: build/crc.d: No space left on device' >&2; exit 1;; esac; make BOARD={machine} build/{machine}/test_crc.elf"
artifact = "build/{machine}/test_crc.elf"
[test]
harness = "unity"
timeout_s = 20
"#,
    );
    repo.git(&["add", "profiles/crc-disk.toml"]);
    repo.git(&["commit", "-q", "-m", "profile"]);
    let queue = fixture_queue(&["02-breaks-build.diff", "04-fixes-crc16.diff"]);
    let out = run_queue(repo.path(), "crc-disk", queue.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let dir = run_dir(&out);
    let listed = report(&dir)["candidates"].clone();
    let by_origin = |origin: &str| -> Value {
        listed
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["origin"] == origin)
            .unwrap()
            .clone()
    };
    // The candidate that breaks the build is dropped for it; the fix, whose trial build only
    // met a full disk, is not held to it.
    let broken = by_origin("02-breaks-build.diff");
    assert_eq!(broken["error_class"], "BUILD_FAILURE", "{broken:#}");
    let fix = by_origin("04-fixes-crc16.diff");
    assert_eq!(
        (fix["verdict"].as_str(), fix["rank"].as_u64()),
        (Some("ranked"), Some(1)),
        "{fix:#}"
    );
    let round: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("iter-001/candidates.json")).unwrap(),
    )
    .unwrap();
    let builds = round["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["origin"] == "04-fixes-crc16.diff")
        .unwrap()["checks"]["builds"]
        .clone();
    assert_eq!(builds["result"], "unknown", "{builds:#}");
    assert!(
        builds["reason"]
            .as_str()
            .unwrap()
            .contains("the environment broke the build"),
        "{builds:#}"
    );
}

/// Builds `source` into an ELF with arm-none-eabi-gcc and the given extra flags.
fn elf(dir: &Path, name: &str, source: &str, flags: &[&str]) -> Vec<u8> {
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, source).unwrap();
    let out = dir.join(format!("{name}.elf"));
    let status = Command::new("arm-none-eabi-gcc")
        .args([
            "-mcpu=cortex-m3",
            "-mthumb",
            "-nostdlib",
            "-O1",
            "-Wl,-e,entry",
        ])
        .args(flags)
        .arg("-o")
        .arg(&out)
        .arg(&c)
        .status()
        .unwrap();
    assert!(status.success(), "arm-none-eabi-gcc failed for {name}");
    std::fs::read(out).unwrap()
}

const PROGRAM: &str = "volatile unsigned int sink;
static const unsigned int table[4] = { 1, 2, 3, 4 };
void entry(void)
{
    unsigned int i;
    for (i = 0; i < 4; i++) {
        sink += table[i] * 0x1021u;
    }
    for (;;) {
    }
}
";

#[test]
fn the_image_digest_ignores_debug_info_and_build_ids_but_not_a_changed_constant() {
    require_tools();
    let dir = tempfile::tempdir().unwrap();
    let plain = elf(dir.path(), "plain", PROGRAM, &["-g0"]);
    let debug = elf(dir.path(), "debug", PROGRAM, &["-g3"]);
    // The build id hashes the whole file, debug info included: the two ids differ.
    let id_plain = elf(dir.path(), "id-plain", PROGRAM, &["-g0", "-Wl,--build-id"]);
    let id_debug = elf(dir.path(), "id-debug", PROGRAM, &["-g3", "-Wl,--build-id"]);
    // A comment moves every line: the debug info changes, the loaded bytes do not.
    let commented = elf(
        dir.path(),
        "commented",
        &format!("/* a comment\n   over two lines */\n{PROGRAM}"),
        &["-g"],
    );
    let changed = elf(
        dir.path(),
        "changed",
        &PROGRAM.replace("0x1021u", "0x8005u"),
        &["-g"],
    );
    assert_ne!(plain, debug, "the files themselves differ");
    let digest = loadable_digest(&plain).unwrap();
    assert_eq!(loadable_digest(&debug).unwrap(), digest);
    assert_eq!(
        loadable_digest(&id_plain).unwrap(),
        loadable_digest(&id_debug).unwrap()
    );
    assert_eq!(loadable_digest(&commented).unwrap(), digest);
    assert_ne!(loadable_digest(&changed).unwrap(), digest);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_llm_round_of_three_is_ranked_and_only_the_fix_is_tested() {
    use crate::common::model_server::{tool_answer, Server, Step};
    let repo = FixtureRepo::new();
    repo.write(
        "profiles/crc-three.toml",
        r#"name = "crc-three"
[build]
command = "make BOARD={machine} build/{machine}/test_crc.elf"
artifact = "build/{machine}/test_crc.elf"
[test]
harness = "unity"
timeout_s = 20
[policy]
allow = ["src/**"]
[strategy.llm]
candidates = 3
"#,
    );
    repo.git(&["add", "profiles/crc-three.toml"]);
    repo.git(&[
        "commit",
        "-q",
        "-m",
        "a profile asking for three candidates",
    ]);
    let no_op = repo.diff_of("src/crc.c", |c| {
        c.replace("    unsigned int bit;", "    unsigned int bit;  ")
    });
    let weakens = repo.diff_of("tests/test_crc.c", |c| {
        c.replace("0x29B1, crc16_ccitt", "0x31C3, crc16_ccitt")
    });
    let fix = std::fs::read_to_string(fixture_dir().join("patches/04-fixes-crc16.diff")).unwrap();
    let server = Server::start(vec![
        Step::ok(tool_answer(&weakens)),
        Step::ok(tool_answer(&no_op)),
        Step::ok(tool_answer(&fix)),
    ])
    .await;
    let base_url = server.base_url.clone();
    let repo_path = repo.path().to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_fwfix"))
            .args([
                "run",
                "--json",
                "--board",
                "qemu-mps2-an385",
                "--profile",
                "crc-three",
                "--strategy",
                "llm",
            ])
            .current_dir(&repo_path)
            .env("FWFIX_LLM_BASE_URL", base_url)
            .env("FWFIX_LLM_MODEL", "test-model")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(server.requests().len(), 3);
    let dir = run_dir(&out);
    let report = report(&dir);
    assert_eq!(report["iterations"], 1);
    // Which request got which answer is up to the network: judge the candidates by content.
    let mut seen: Vec<(String, String)> = Vec::new();
    for c in report["candidates"].as_array().unwrap() {
        let diff = std::fs::read_to_string(
            dir.join("iter-001/candidates")
                .join(format!("{}.diff", c["id"].as_str().unwrap())),
        )
        .unwrap();
        let kind = if diff.contains("0xFFFFu") {
            "fix"
        } else if diff.contains("tests/test_crc.c") {
            "weakens"
        } else {
            "no-op"
        };
        let verdict = match c["rank"].as_u64() {
            Some(rank) => format!("ranked {rank}"),
            None => c["reason"].as_str().unwrap().to_string(),
        };
        seen.push((kind.to_string(), verdict));
    }
    seen.sort();
    assert_eq!(seen.len(), 3, "{seen:#?}");
    assert_eq!(seen[0], ("fix".to_string(), "ranked 1".to_string()));
    assert!(
        seen[1].0 == "no-op" && seen[1].1.starts_with("dropped (no-op image)"),
        "{seen:#?}"
    );
    assert!(
        seen[2].0 == "weakens" && seen[2].1.starts_with("dropped (POLICY_VIOLATION)"),
        "{seen:#?}"
    );
    let tests_run = trace(&dir)
        .iter()
        .filter(|l| l["to"] == "TEST_RUN" && l["iteration"] == 1)
        .count();
    assert_eq!(tests_run, 1);
}
