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
    // The garbage answer held no candidate, recovered from by asking again.
    let trace = std::fs::read_to_string(dir.join("trace.jsonl")).unwrap();
    assert!(
        trace.contains("\"error_class\":\"NO_CANDIDATE\""),
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

#[tokio::test(flavor = "multi_thread")]
async fn an_endpoint_that_fails_every_way_is_handled_per_budget_and_the_key_is_never_written() {
    // One iteration per way an endpoint can fail. The answer cut off at the token limit came
    // back, but holds no usable patch (NO_CANDIDATE); the four failures of the endpoint itself
    // are MODEL_FAILUREs, and the fourth spends the budget.
    let cut: String = crc_fix()
        .lines()
        .take(9)
        .map(|l| format!("{l}\n"))
        .collect();
    let mut truncated = text_answer(&format!("```diff\n{cut}"));
    truncated["choices"][0]["finish_reason"] = json!("length");
    let echo = |what: &str| json!({"error": {"message": format!("{what} (you sent {{auth}})")}});
    let server = Server::start(vec![
        // 1: rate limited, waited out, then a diff cut off at the token limit.
        Step::json(429, json!({"error": {"message": "rate limited"}})).header("Retry-After", "1"),
        Step::ok(truncated),
        // 2: three server errors: the first try and both retries.
        Step::json(500, echo("upstream exploded")),
        Step::json(500, echo("upstream exploded")),
        Step::json(500, echo("upstream exploded")),
        // 3: slower than timeout_s; a timeout is not retried.
        Step::ok(tool_answer(&crc_fix())).delay(std::time::Duration::from_secs(3)),
        // 4 and 5: refused requests, never retried.
        Step::json(
            400,
            json!({"error": {"message": "maximum context length is 8192"}}),
        ),
        Step::json(403, echo("this key may not use test-model")),
        // Never asked for: the fix, had anything retried a refused request.
        Step::ok(tool_answer(&crc_fix())),
    ])
    .await;
    let repo = FixtureRepo::new();
    repo.write(
        "profiles/crc-endpoint.toml",
        r#"name = "crc-endpoint"
[build]
command = "make BOARD={machine} build/{machine}/test_crc.elf"
artifact = "build/{machine}/test_crc.elf"
[test]
harness = "unity"
timeout_s = 20
[policy]
allow = ["src/**"]
[loop]
max_iterations = 8
no_progress_limit = 8
[recovery]
model_failure = 3
[strategy.llm]
timeout_s = 1
max_retries = 2
"#,
    );
    repo.git(&["add", "profiles/crc-endpoint.toml"]);
    repo.git(&["commit", "-q", "-m", "a profile with short llm timeouts"]);
    let base_url = server.base_url.clone();
    let repo_path = repo.path().to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        let state = tempfile::tempdir().unwrap();
        fwfix_command(
            &[
                "run",
                "--json",
                "--board",
                "qemu-mps2-an385",
                "--profile",
                "crc-endpoint",
                "--strategy",
                "llm",
            ],
            &repo_path,
            state.path(),
        )
        .env("FWFIX_LLM_BASE_URL", base_url)
        .env("FWFIX_LLM_MODEL", "test-model")
        .env("FWFIX_LLM_API_KEY", KEY)
        .output()
        .unwrap()
    })
    .await
    .unwrap();

    // A model that never delivers is the endpoint's failure: exit 4, not a test failure.
    assert_eq!(out.status.code(), Some(4), "{}", text(&out));
    let dir = run_dir(&out);
    let report = report(&dir);
    assert_eq!(report["status"], "FAILURE");
    assert_eq!(report["error_class"], "MODEL_FAILURE");
    let message = report["message"].as_str().unwrap();
    assert!(message.contains("HTTP 403"), "{message}");
    assert_eq!(
        report["tokens"]["total"], 790,
        "only the truncated answer had usage"
    );
    let trace = std::fs::read_to_string(dir.join("trace.jsonl")).unwrap();
    let failures: Vec<&str> = trace
        .lines()
        .filter(|l| l.contains("\"outcome\":\"error:MODEL_FAILURE\""))
        .collect();
    assert_eq!(failures.len(), 4, "{trace}");
    let no_candidate: Vec<&str> = trace
        .lines()
        .filter(|l| l.contains("\"outcome\":\"error:NO_CANDIDATE\""))
        .collect();
    let [truncated] = no_candidate[..] else {
        panic!("{trace}");
    };

    // Every request the server saw: nothing retried after a 400 or 403, nothing after the budget.
    let requests = server.requests();
    assert_eq!(requests.len(), 8, "{requests:#?}");
    let waited = requests[1].at - requests[0].at;
    assert!(
        waited >= std::time::Duration::from_millis(900),
        "Retry-After was not honoured: {waited:?}"
    );

    // Each failed answer is told to the next prompt, so the model learns why it was not taken.
    let prompt = std::fs::read_to_string(dir.join("iter-002/prompt.md")).unwrap();
    assert!(
        prompt.contains("## Earlier attempts")
            && prompt.contains("iteration 1 (llm): NO_PROGRESS:"),
        "{prompt}"
    );
    let analysis: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("iter-004/analysis.json")).unwrap())
            .unwrap();
    let history = analysis["history"].as_array().unwrap();
    assert_eq!(history.len(), 4, "{analysis:#}");
    assert!(history.iter().all(|h| h["diff"].is_null()), "{analysis:#}");

    // Each iteration kept its prompt and the raw exchange.
    let response = |n: u32| -> serde_json::Value {
        let iter = dir.join(format!("iter-{n:03}"));
        assert!(iter.join("prompt.md").is_file(), "{}", iter.display());
        serde_json::from_str(&std::fs::read_to_string(iter.join("response.json")).unwrap()).unwrap()
    };
    let answer = |n: u32| response(n)["answers"][0].clone();
    let first = answer(1);
    assert_eq!(
        (&first["status"], &first["attempts"]),
        (&json!(200), &json!(2))
    );
    assert_eq!(first["answer"]["choices"][0]["finish_reason"], "length");
    let second = answer(2);
    assert_eq!(
        (&second["status"], &second["attempts"]),
        (&json!(500), &json!(3))
    );
    let third = answer(3);
    assert_eq!(third["attempts"], 1);
    assert!(
        third["error"].as_str().unwrap().contains("timed out"),
        "{third:#}"
    );
    for (n, status) in [(4, 400), (5, 403)] {
        let a = answer(n);
        assert_eq!(
            (&a["status"], &a["attempts"]),
            (&json!(status), &json!(1)),
            "{a:#}"
        );
    }
    assert!(truncated.contains("truncated"), "{truncated}");
    assert!(failures[0].contains("HTTP 500"), "{}", failures[0]);
    assert!(failures[1].contains("timed out"), "{}", failures[1]);
    assert!(failures[2].contains("HTTP 400"), "{}", failures[2]);
    assert!(failures[3].contains("HTTP 403"), "{}", failures[3]);

    // The endpoint echoed the key back; it is in no file of the run directory nor the output.
    for f in files_under(&dir) {
        let bytes = std::fs::read(&f).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(KEY),
            "the key leaked into {}",
            f.display()
        );
    }
    assert!(!text(&out).contains(KEY));
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
}
