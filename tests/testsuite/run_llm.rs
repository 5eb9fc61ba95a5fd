//! `fwfix run --strategy llm` end to end: the loop asks a real HTTP server on 127.0.0.1 (standing
//! in for an OpenAI-compatible endpoint) for candidates, and verifies them on real QEMU.
#![allow(clippy::unwrap_used, clippy::expect_used)] // panics are how tests fail

use crate::common::model_server::{text_answer, tool_answer, Server, Step};
use crate::common::*;
use serde_json::json;

const KEY: &str = "sk-fwfix-LOOPLEAKCHECK-90ab12";

#[tokio::test(flavor = "multi_thread")]
async fn a_model_that_answers_garbage_then_the_fix_converges_and_the_key_is_never_written() {
    let server = Server::start(vec![
        Step::ok(text_answer(
            "I think the CRC is fine, try turning it off and on again.",
        )),
        Step::ok(tool_answer(&crc_fix())),
    ])
    .await;
    let repo = FixtureRepo::new();
    let base_url = server.base_url.clone();
    let repo_path = repo.path().to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_fwfix"))
            .args([
                "run",
                "--json",
                "--board",
                "qemu-mps2-an385",
                "--profile",
                "crc",
                "--strategy",
                "llm",
            ])
            .current_dir(&repo_path)
            .env("FWFIX_LLM_BASE_URL", base_url)
            .env("FWFIX_LLM_MODEL", "test-model")
            .env("FWFIX_LLM_API_KEY", KEY)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let dir = run_dir(&out);
    let report = report(&dir);
    assert_eq!(report["status"], "SUCCESS");
    assert_eq!(report["iterations"], 2);
    // Both answers' tokens are in the report, per iteration and for the run.
    let tokens = &report["tokens"];
    assert_eq!(
        (&tokens["prompt"], &tokens["completion"], &tokens["total"]),
        (&json!(1512), &json!(154), &json!(1666)),
        "{tokens}"
    );
    assert!(tokens["budget"].is_null());
    assert_eq!(tokens["per_iteration"].as_array().unwrap().len(), 2);
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        md.contains("- **Tokens:** 1666 (1512 prompt + 154 completion)"),
        "{md}"
    );
    // The garbage answer was a MODEL_FAILURE, recovered from by asking again.
    let trace = std::fs::read_to_string(dir.join("trace.jsonl")).unwrap();
    assert!(
        trace.contains("\"error_class\":\"MODEL_FAILURE\""),
        "{trace}"
    );
    // The model was sent the evidence: the failing test and its source.
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let prompt = requests[0].body.to_string();
    assert!(
        prompt.contains("test_crc16_known_vector") && prompt.contains("TEST_ASSERT"),
        "{prompt}"
    );
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    // The key is in no file of the run directory, nor in fwfix's output.
    for f in files_under(&dir) {
        let bytes = std::fs::read(&f).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(KEY),
            "the key leaked into {}",
            f.display()
        );
    }
    assert!(!text(&out).contains(KEY));
}

#[test]
fn a_missing_model_setting_is_a_configuration_error_naming_the_variable() {
    let repo = FixtureRepo::new();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fwfix"))
        .args([
            "run",
            "--board",
            "qemu-mps2-an385",
            "--profile",
            "crc",
            "--strategy",
            "llm",
        ])
        .current_dir(repo.path())
        .env_remove("FWFIX_LLM_BASE_URL")
        .env_remove("FWFIX_LLM_MODEL")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("FWFIX_LLM_BASE_URL"),
        "{}",
        text(&out)
    );
}

/// A candidate that makes the failing test pass by changing what it expects.
const WEAKEN_TEST: &str = "diff --git a/tests/test_crc.c b/tests/test_crc.c
--- a/tests/test_crc.c
+++ b/tests/test_crc.c
@@ -21,4 +21,4 @@
 void test_crc16_known_vector(void)
 {
-    TEST_ASSERT_EQUAL_HEX16(0x29B1, crc16_ccitt(check_input, sizeof(check_input)));
+    TEST_ASSERT_EQUAL_HEX16(0x31C3, crc16_ccitt(check_input, sizeof(check_input)));
 }
";

#[tokio::test(flavor = "multi_thread")]
async fn a_model_that_first_weakens_the_test_is_denied_then_its_fix_converges() {
    let server = Server::start(vec![
        Step::ok(tool_answer(WEAKEN_TEST)),
        Step::ok(tool_answer(&crc_fix())),
    ])
    .await;
    let repo = FixtureRepo::new();
    let test_source = std::fs::read_to_string(repo.path().join("tests/test_crc.c")).unwrap();
    let base_url = server.base_url.clone();
    let repo_path = repo.path().to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_fwfix"))
            .args([
                "run",
                "--json",
                "--board",
                "qemu-mps2-an385",
                "--profile",
                "crc",
                "--strategy",
                "llm",
                "--approve",
                "never",
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
    let dir = run_dir(&out);
    assert_eq!(report(&dir)["status"], "SUCCESS");
    let trace = std::fs::read_to_string(dir.join("trace.jsonl")).unwrap();
    let denied: Vec<&str> = trace
        .lines()
        .filter(|l| l.contains("\"error_class\":\"POLICY_VIOLATION\""))
        .collect();
    assert_eq!(denied.len(), 1, "{trace}");
    assert!(
        denied[0].contains("\"from\":\"PATCH_REVIEW\""),
        "{}",
        denied[0]
    );
    // The weakened test was never applied: no iteration-1 build, and the review says why.
    assert!(!dir.join("iter-001/build.log").exists());
    let review: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("iter-001/review.json")).unwrap())
            .unwrap();
    assert_eq!(review["verdict"], "deny", "{review:#}");
    let review_text = review.to_string();
    assert!(
        review_text.contains("path.deny.builtin.tests")
            || review_text.contains("test.expected_changed"),
        "{review:#}"
    );
    assert_eq!(
        std::fs::read_to_string(repo.path().join("tests/test_crc.c")).unwrap(),
        test_source
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_run_stops_asking_once_its_token_budget_is_spent_and_says_so() {
    let regresses =
        std::fs::read_to_string(fixture_dir().join("patches/03-regresses-crc32.diff")).unwrap();
    let server = Server::start(vec![
        Step::ok(tool_answer(&regresses)),
        Step::ok(tool_answer(&crc_fix())),
    ])
    .await;
    let repo = FixtureRepo::new();
    let base_url = server.base_url.clone();
    let repo_path = repo.path().to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_fwfix"))
            .args([
                "run",
                "--json",
                "--board",
                "qemu-mps2-an385",
                "--profile",
                "crc",
                "--strategy",
                "llm",
            ])
            .current_dir(&repo_path)
            .env("FWFIX_LLM_BASE_URL", base_url)
            .env("FWFIX_LLM_MODEL", "test-model")
            .env("FWFIX_LLM_TOKEN_BUDGET", "500")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    // Not converged within the budget: a failed run, not an infrastructure error.
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let dir = run_dir(&out);
    let report = report(&dir);
    assert_eq!(report["status"], "FAILURE");
    let message = report["message"].as_str().unwrap();
    assert!(
        message.contains("token budget of 500 spent after 876 tokens"),
        "{message}"
    );
    assert_eq!(
        server.requests().len(),
        1,
        "nothing was sent past the budget"
    );
    assert_eq!(report["tokens"]["total"], 876);
    assert_eq!(report["tokens"]["budget"], 500);
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
}
