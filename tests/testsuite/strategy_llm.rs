//! The `llm` strategy against a real HTTP server on 127.0.0.1, started by each test: a small
//! scripted chat-completions endpoint that answers each request with the next canned step and
//! records what it was sent. The "model" answers with the fixture's real fix for the CRC-16 bug.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by panicking

use fwfix::config::{llm_settings, ApiKey, LlmSettings};
use fwfix::strategy::llm::{LlmStrategy, TokenUsage};
use fwfix::strategy::{PatchRequest, Strategy, StrategyError};
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

use crate::common::model_server::{text_answer, tool_answer, Server, Step};
use crate::common::{crc_fix, files_under};

const KEY: &str = "sk-fwfix-LEAKCHECK-7f3a9c1e5b";

/// Settings pointing at `server`, from the environment as a user would set it; no key, fast
/// backoff unless a test says otherwise.
fn settings(server: &Server) -> LlmSettings {
    let base = server.base_url.clone();
    let mut s = llm_settings(None, &move |name| match name {
        "FWFIX_LLM_BASE_URL" => Some(base.clone()),
        "FWFIX_LLM_MODEL" => Some("test-model".into()),
        _ => None,
    })
    .unwrap();
    s.temperature = Some(0.2);
    s.timeout = Duration::from_secs(10);
    s.idle_timeout = Duration::from_secs(10);
    s.backoff_base = Duration::from_millis(10);
    s
}

fn with_key(mut s: LlmSettings) -> LlmSettings {
    s.api_key = Some(ApiKey::new(KEY, "FWFIX_LLM_API_KEY"));
    s
}

struct Iteration {
    dir: tempfile::TempDir,
    req: PatchRequest,
}

fn iteration(candidates: u32) -> Iteration {
    let dir = tempfile::Builder::new()
        .prefix("fwfix-llm-")
        .tempdir()
        .unwrap();
    let req = PatchRequest {
        iteration: 1,
        task: "make test_crc16_known_vector pass without breaking the 4 tests that pass now".into(),
        evidence: json!({"failing": ["test_crc16_known_vector"]}),
        evidence_markdown:
            "tests/test_crc.c:31: test_crc16_known_vector: Expected 0x29B1 Was 0x31C3".into(),
        work_dir: dir.path().to_path_buf(),
        iteration_dir: dir.path().join("iter-001"),
        candidates,
        workspaces: Vec::new(),
    };
    Iteration { dir, req }
}

async fn run(
    s: LlmSettings,
    it: &Iteration,
) -> Result<Vec<fwfix::strategy::Candidate>, StrategyError> {
    let mut strategy = LlmStrategy::new(s).unwrap();
    strategy
        .candidates(&it.req, &CancellationToken::new())
        .await
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.join(name).display()))
}

/// The candidate really applies to the fixture firmware's source.
fn assert_applies_to_fixture(diff: &str) {
    let tree = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tree.path().join("src")).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/fwtests/src/crc.c"),
        tree.path().join("src/crc.c"),
    )
    .unwrap();
    std::fs::write(tree.path().join("fix.diff"), diff).unwrap();
    let out = std::process::Command::new("git")
        .args(["apply", "--check", "fix.diff"])
        .current_dir(tree.path())
        .output()
        .expect("git is needed to check the candidate applies");
    assert!(
        out.status.success(),
        "git apply --check: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

// ---------------------------------------------------------------------------------------------
// Answers.

#[tokio::test]
async fn a_propose_patch_call_becomes_a_candidate_and_the_exchange_is_recorded() {
    let server = Server::start(vec![Step::ok(tool_answer(&crc_fix()))]).await;
    let it = iteration(1);
    let mut strategy = LlmStrategy::new(settings(&server)).unwrap();
    let got = strategy
        .candidates(&it.req, &CancellationToken::new())
        .await
        .unwrap();

    assert_eq!(got.len(), 1);
    assert_eq!(got[0].diff, crc_fix());
    assert_eq!(got[0].origin, "model test-model #1");
    assert_applies_to_fixture(&got[0].diff);
    assert_eq!(
        strategy.usage(),
        TokenUsage {
            prompt_tokens: 812,
            completion_tokens: 64,
            total_tokens: 876,
            requests: 1,
            unknown: 0,
        }
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(r.header("authorization"), None, "no key, no Authorization");
    assert_eq!(r.body["model"], "test-model");
    assert_eq!(r.body["temperature"], 0.2);
    assert_eq!(r.body["tool_choice"], "auto");
    assert_eq!(r.body["tools"][0]["function"]["name"], "propose_patch");
    let params = &r.body["tools"][0]["function"]["parameters"];
    assert_eq!(params["required"], json!(["diff", "explanation"]));
    let system = r.body["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("unified diff") && system.contains("a/"),
        "{system}"
    );
    let user = r.body["messages"][1]["content"].as_str().unwrap();
    assert!(user.contains("test_crc16_known_vector pass") && user.contains("0x29B1"));

    let dir = &it.req.iteration_dir;
    let prompt = read(dir, "prompt.md");
    assert!(
        prompt.contains(user.trim()) && prompt.contains("propose_patch"),
        "{prompt}"
    );
    assert!(prompt.contains("authorization: none"), "{prompt}");
    let response: Value = serde_json::from_str(&read(dir, "response.json")).unwrap();
    assert_eq!(response["answers"].as_array().unwrap().len(), 1);
    assert_eq!(response["answers"][0]["answer"], tool_answer(&crc_fix()));
    assert_eq!(response["answers"][0]["attempts"], 1);
    assert_eq!(response["run_usage"]["prompt_tokens"], 812);
}

#[tokio::test]
async fn a_fenced_diff_in_the_text_becomes_a_candidate() {
    let content = format!(
        "The CRC-16 seed is wrong; CCITT-FALSE starts at 0xFFFF.\n\n```diff\n{}```\n\nThis fixes \
         test_crc16_known_vector.",
        crc_fix()
    );
    let server = Server::start(vec![Step::ok(text_answer(&content))]).await;
    let it = iteration(1);
    let got = run(settings(&server), &it).await.unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].diff, crc_fix());
    assert_applies_to_fixture(&got[0].diff);
}

#[tokio::test]
async fn garbage_is_unusable_and_the_raw_answer_is_kept() {
    let garbage = "I looked at the CRC code and it seems fine to me. Maybe the test is wrong?";
    let server = Server::start(vec![Step::ok(text_answer(garbage))]).await;
    let it = iteration(1);
    match run(settings(&server), &it).await {
        Err(StrategyError::Unusable { reason, raw }) => {
            assert!(reason.contains("no usable diff"), "{reason}");
            assert!(raw.contains(garbage), "{raw}");
        }
        other => panic!("expected Unusable, got {other:?}"),
    }
    let response = read(&it.req.iteration_dir, "response.json");
    assert!(response.contains(garbage));
}

#[tokio::test]
async fn a_truncated_diff_is_unusable() {
    let cut: String = crc_fix()
        .lines()
        .take(9)
        .map(|l| format!("{l}\n"))
        .collect();
    let mut answer = text_answer(&format!("```diff\n{cut}"));
    answer["choices"][0]["finish_reason"] = json!("length");
    let server = Server::start(vec![Step::ok(answer)]).await;
    let it = iteration(1);
    match run(settings(&server), &it).await {
        Err(StrategyError::Unusable { reason, raw }) => {
            assert!(reason.contains("truncated"), "{reason}");
            assert!(reason.contains("token limit"), "{reason}");
            assert!(raw.contains("@@ -39,7 +39,7 @@"), "{raw}");
        }
        other => panic!("expected Unusable, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Retries and timeouts.

#[tokio::test]
async fn a_429_with_retry_after_is_waited_out_then_retried() {
    let server = Server::start(vec![
        Step::json(429, json!({"error": {"message": "rate limited"}})).header("Retry-After", "1"),
        Step::ok(tool_answer(&crc_fix())),
    ])
    .await;
    let it = iteration(1);
    // The backoff alone would retry after ~10 ms: a wait near 1 s is Retry-After's.
    let got = run(settings(&server), &it).await.unwrap();
    assert_eq!(got[0].diff, crc_fix());
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let waited = requests[1].at - requests[0].at;
    assert!(
        waited >= Duration::from_millis(900) && waited < Duration::from_secs(5),
        "waited {waited:?}"
    );
    let response: Value =
        serde_json::from_str(&read(&it.req.iteration_dir, "response.json")).unwrap();
    assert_eq!(response["answers"][0]["attempts"], 2);
}

#[tokio::test]
async fn three_500s_fail_after_the_retries() {
    let error = || Step::json(500, json!({"error": {"message": "upstream exploded"}}));
    let server = Server::start(vec![
        error(),
        error(),
        error(),
        Step::ok(tool_answer(&crc_fix())),
    ])
    .await;
    let it = iteration(1);
    let mut s = settings(&server);
    s.max_retries = 2;
    match run(s, &it).await {
        Err(StrategyError::Failed(message)) => {
            assert!(message.contains("HTTP 500"), "{message}");
            assert!(message.contains("upstream exploded"), "{message}");
            assert!(message.contains("after 2 retries"), "{message}");
        }
        other => panic!("expected Failed, got {other:?}"),
    }
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn an_answer_slower_than_the_timeout_fails_with_timed_out() {
    let server = Server::start(vec![
        Step::ok(tool_answer(&crc_fix())).delay(Duration::from_secs(5))
    ])
    .await;
    let it = iteration(1);
    let mut s = settings(&server);
    s.timeout = Duration::from_millis(800);
    let started = Instant::now();
    match run(s, &it).await {
        Err(StrategyError::Failed(message)) => {
            assert!(message.contains("timed out"), "{message}");
            assert!(message.contains("timeout_s"), "{message}");
        }
        other => panic!("expected Failed, got {other:?}"),
    }
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(server.requests().len(), 1, "a timeout is not retried");
}

#[tokio::test]
async fn a_server_that_goes_silent_mid_answer_hits_the_idle_timeout() {
    let server = Server::start(vec![
        Step::ok(tool_answer(&crc_fix())).stall(Duration::from_secs(5))
    ])
    .await;
    let it = iteration(1);
    let mut s = settings(&server);
    s.idle_timeout = Duration::from_millis(500);
    let started = Instant::now();
    match run(s, &it).await {
        Err(StrategyError::Failed(message)) => assert!(
            message.contains("timed out")
                && message.contains("0.5 s without a byte (idle_timeout_s)"),
            "{message}"
        ),
        other => panic!("expected Failed, got {other:?}"),
    }
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_401_is_not_retried_and_says_which_key_to_set() {
    let server = Server::start(vec![
        Step::json(
            401,
            json!({"error": {"message": "Incorrect API key provided"}}),
        ),
        Step::ok(tool_answer(&crc_fix())),
    ])
    .await;
    let it = iteration(1);
    match run(settings(&server), &it).await {
        Err(StrategyError::Failed(message)) => {
            assert!(message.contains("HTTP 401"), "{message}");
            assert!(message.contains("FWFIX_LLM_API_KEY"), "{message}");
            assert!(message.contains("api_key_env"), "{message}");
        }
        other => panic!("expected Failed, got {other:?}"),
    }
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_refused_connection_is_retried_then_reported() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let server = Server::start(vec![]).await;
    let mut s = settings(&server);
    s.base_url = format!("http://{addr}/v1");
    s.max_retries = 2;
    let it = iteration(1);
    match run(s, &it).await {
        Err(StrategyError::Failed(message)) => {
            assert!(message.contains(&addr.to_string()), "{message}");
            assert!(message.contains("after 2 retries"), "{message}");
            assert!(message.to_lowercase().contains("connect"), "{message}");
        }
        other => panic!("expected Failed, got {other:?}"),
    }
}

#[tokio::test]
async fn a_server_that_never_accepts_hits_the_connect_timeout_and_is_retried() {
    // A listener whose accept queue is full: the kernel drops further SYNs, so a connect hangs
    // the way it does towards a host that is down.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let listener = socket.listen(1).unwrap();
    let addr = listener.local_addr().unwrap();
    let mut queued = Vec::new();
    while let Ok(stream) = std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)) {
        queued.push(stream);
        assert!(queued.len() < 64, "the accept queue never filled");
    }
    let server = Server::start(vec![]).await;
    let mut s = settings(&server);
    s.base_url = format!("http://{addr}/v1");
    s.connect_timeout = Duration::from_millis(300);
    s.max_retries = 1;
    let it = iteration(1);
    let started = Instant::now();
    match run(s, &it).await {
        Err(StrategyError::Failed(message)) => {
            assert!(
                message.contains("no connection within 0.3 s")
                    && message.contains("connect_timeout_s"),
                "{message}"
            );
            assert!(message.contains("after 1 retries"), "{message}");
        }
        other => panic!("expected Failed, got {other:?}"),
    }
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    drop(listener);
}

#[tokio::test]
async fn a_retry_after_longer_than_fwfix_waits_fails_at_once() {
    let server = Server::start(vec![
        Step::json(503, json!({"error": "maintenance"})).header("Retry-After", "3600")
    ])
    .await;
    let it = iteration(1);
    let started = Instant::now();
    match run(settings(&server), &it).await {
        Err(StrategyError::Failed(message)) => {
            assert!(
                message.contains("HTTP 503") && message.contains("3600 s"),
                "{message}"
            )
        }
        other => panic!("expected Failed, got {other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn cancelling_aborts_a_request_in_flight_at_once() {
    let server = Server::start(vec![
        Step::ok(tool_answer(&crc_fix())).delay(Duration::from_secs(10))
    ])
    .await;
    let it = iteration(1);
    let mut strategy = LlmStrategy::new(settings(&server)).unwrap();
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let result = strategy.candidates(&it.req, &cancel).await;
    assert!(
        matches!(result, Err(StrategyError::Cancelled)),
        "{result:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

// ---------------------------------------------------------------------------------------------
// Candidates, tools, budget.

#[tokio::test]
async fn three_candidates_are_asked_for_in_parallel() {
    let slow = || Step::ok(tool_answer(&crc_fix())).delay(Duration::from_millis(400));
    let server = Server::start(vec![slow(), slow(), slow()]).await;
    let it = iteration(3);
    let mut s = settings(&server);
    s.candidates = 3;
    s.parallel = 3;
    let mut strategy = LlmStrategy::new(s).unwrap();
    let got = strategy
        .candidates(&it.req, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(got.len(), 3);
    let origins: Vec<_> = got.iter().map(|c| c.origin.as_str()).collect();
    assert_eq!(
        origins,
        [
            "model test-model #1",
            "model test-model #2",
            "model test-model #3"
        ]
    );
    assert_eq!(server.requests().len(), 3);
    assert_eq!(server.max_active(), 3, "the three requests overlapped");
    assert_eq!(strategy.usage().requests, 3);
    assert_eq!(strategy.usage().prompt_tokens, 3 * 812);
    let response: Value =
        serde_json::from_str(&read(&it.req.iteration_dir, "response.json")).unwrap();
    assert_eq!(response["answers"].as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn no_more_than_parallel_requests_are_in_flight_at_once() {
    // A server with fewer slots than candidates: `parallel` bounds what it is sent at once, so no
    // request waits in its queue while its own timeout runs.
    for (parallel, expected) in [(1, 1), (2, 2)] {
        let slow = || Step::ok(tool_answer(&crc_fix())).delay(Duration::from_millis(300));
        let server = Server::start(vec![slow(), slow(), slow()]).await;
        let it = iteration(3);
        let mut s = settings(&server);
        s.candidates = 3;
        s.parallel = parallel;
        let got = run(s, &it).await.unwrap();
        assert_eq!(got.len(), 3, "parallel = {parallel}");
        assert_eq!(server.requests().len(), 3, "parallel = {parallel}");
        assert_eq!(server.max_active(), expected, "parallel = {parallel}");
    }
}

#[tokio::test]
async fn an_endpoint_that_refuses_tools_is_asked_again_without_them() {
    let server = Server::start(vec![
        Step::json(
            400,
            json!({"error": {"message": "registry.ollama.ai/library/tiny:latest does not support tools"}}),
        ),
        Step::ok(text_answer(&format!("```diff\n{}```", crc_fix()))),
        Step::ok(text_answer(&format!("```diff\n{}```", crc_fix()))),
    ])
    .await;
    let it = iteration(1);
    let mut strategy = LlmStrategy::new(settings(&server)).unwrap();
    let cancel = CancellationToken::new();
    assert_eq!(
        strategy.candidates(&it.req, &cancel).await.unwrap().len(),
        1
    );
    let next = iteration(1);
    assert_eq!(
        strategy.candidates(&next.req, &cancel).await.unwrap().len(),
        1
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert!(requests[0].body.get("tools").is_some());
    assert!(requests[1].body.get("tools").is_none());
    assert!(
        requests[2].body.get("tools").is_none(),
        "remembered for the run"
    );
    assert!(read(&next.req.iteration_dir, "prompt.md").contains("refused tools"));
}

#[tokio::test]
async fn reaching_the_token_budget_keeps_that_answer_and_sends_no_further_request() {
    let server = Server::start(vec![
        Step::ok(tool_answer(&crc_fix())),
        Step::ok(tool_answer(&crc_fix())),
    ])
    .await;
    let it = iteration(1);
    let mut s = settings(&server);
    s.token_budget = Some(500);
    let mut strategy = LlmStrategy::new(s).unwrap();
    let cancel = CancellationToken::new();
    let got = strategy.candidates(&it.req, &cancel).await.unwrap();
    assert_eq!(got.len(), 1, "the tokens are spent: the answer is used");
    assert_eq!(strategy.usage().total(), 876);
    assert!(!strategy.has_more());
    assert_eq!(
        strategy.stopped().as_deref(),
        Some("token budget of 500 spent after 876 tokens")
    );
    match strategy.candidates(&iteration(1).req, &cancel).await {
        Err(StrategyError::Exhausted(message)) => {
            assert_eq!(message, "token budget of 500 spent after 876 tokens")
        }
        other => panic!("expected Exhausted, got {other:?}"),
    }
    assert_eq!(
        server.requests().len(),
        1,
        "no request once the budget is spent"
    );
}

#[tokio::test]
async fn an_answer_without_usage_is_counted_as_unknown_not_as_zero() {
    let mut silent = tool_answer(&crc_fix());
    silent.as_object_mut().unwrap().remove("usage");
    let server = Server::start(vec![Step::ok(silent), Step::ok(tool_answer(&crc_fix()))]).await;
    let mut strategy = LlmStrategy::new(settings(&server)).unwrap();
    let cancel = CancellationToken::new();
    let (first, mut second) = (iteration(1), iteration(1));
    second.req.iteration = 2;
    strategy.candidates(&first.req, &cancel).await.unwrap();
    strategy.candidates(&second.req, &cancel).await.unwrap();
    let usage = strategy.usage();
    assert_eq!((usage.requests, usage.unknown, usage.total()), (2, 1, 876));
    let tokens = strategy.facts().tokens.unwrap();
    assert_eq!(tokens.unknown_responses, 1);
    let per: Vec<_> = tokens
        .per_iteration
        .iter()
        .map(|i| (i.iteration, i.total, i.unknown_responses))
        .collect();
    assert_eq!(per, [(1, 0, 1), (2, 876, 0)]);
}

// ---------------------------------------------------------------------------------------------
// The key.

#[tokio::test]
async fn the_key_is_sent_as_a_bearer_header_and_never_written_or_shown() {
    let echo_key = json!({"error": {"message": "key {auth} is not valid for this model"}});
    let server = Server::start(vec![
        // A hostile or careless endpoint echoes the key back: in an answer...
        Step::ok(text_answer("You sent me {auth}. No patch today.")),
        // ...and in an error.
        Step::json(401, echo_key.clone()),
        Step::json(500, echo_key),
    ])
    .await;
    let mut it = iteration(1);
    // The key can even turn up in the evidence (a console log that printed the environment).
    it.req.evidence_markdown = format!("console: FWFIX_LLM_API_KEY={KEY}\n");
    let s = with_key(settings(&server));
    assert!(!format!("{s:?}").contains(KEY));
    let mut strategy = LlmStrategy::new(s).unwrap();
    let cancel = CancellationToken::new();

    let mut shown = Vec::new();
    match strategy.candidates(&it.req, &cancel).await {
        Err(StrategyError::Unusable { reason, raw }) => {
            assert!(raw.contains("You sent me Bearer"), "{raw}");
            shown.push(reason);
            shown.push(raw);
        }
        other => panic!("expected Unusable, got {other:?}"),
    }
    let second = iteration(1);
    let err = strategy.candidates(&second.req, &cancel).await.unwrap_err();
    assert!(err.to_string().contains("HTTP 401"), "{err}");
    shown.push(err.to_string());
    shown.push(format!("{err:?}"));
    let mut third_settings = with_key(settings(&server));
    third_settings.max_retries = 0;
    let third = iteration(1);
    let err = LlmStrategy::new(third_settings)
        .unwrap()
        .candidates(&third.req, &cancel)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("HTTP 500"), "{err}");
    shown.push(err.to_string());

    for r in server.requests() {
        assert_eq!(
            r.header("authorization"),
            Some(format!("Bearer {KEY}").as_str())
        );
        assert!(!r.path.contains(KEY), "the key never goes in the URL");
        assert!(!r.body.to_string().contains(KEY), "nor in the body");
    }
    for text in &shown {
        assert!(!text.contains(KEY), "the key leaked into: {text}");
    }
    let mut files = Vec::new();
    for i in [&it, &second, &third] {
        files.extend(files_under(i.dir.path()));
    }
    assert!(files.len() >= 6, "{files:?}");
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(
            !text.contains(KEY),
            "the key leaked into {}",
            file.display()
        );
    }
    assert!(
        read(&it.req.iteration_dir, "prompt.md").contains("Bearer key from `FWFIX_LLM_API_KEY`")
    );
}
