//! `fwfix mcp` driven by a real MCP client, as a coding agent drives it: rmcp's client (the
//! official Rust SDK) over the stdio of the real `fwfix mcp` process, against real builds, real
//! QEMU and real git repositories. rmcp's client rather than another language's SDK because it
//! speaks the same protocol revision as the server, exposes request ids for cancellation and
//! progress tokens directly, and needs nothing at test time beyond the suite's own build.

use crate::common::{fixture_dir, fixture_queue, FixtureRepo};
use crate::run_cmd::{make_owner_work, owner_state, slow_when_patched};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, CancelledNotificationParam, ClientRequest,
    ProgressNotificationParam, ReadResourceRequestParams, Request,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const MPS2: &str = "qemu-mps2-an385";

/// The client's side: it keeps every progress message the server sends.
#[derive(Clone, Default)]
struct Recorder {
    progress: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for Recorder {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress
            .lock()
            .unwrap()
            .push(params.message.unwrap_or_default());
    }
}

/// A running `fwfix mcp` and the client connected to it.
struct Session {
    client: RunningService<RoleClient, Recorder>,
    server: tokio::process::Child,
    progress: Arc<Mutex<Vec<String>>>,
    _state: tempfile::TempDir,
}

impl Session {
    async fn start(cwd: &Path) -> Session {
        let state = tempfile::Builder::new()
            .prefix("fwfix-state-")
            .tempdir()
            .unwrap();
        let mut server = tokio::process::Command::new(env!("CARGO_BIN_EXE_fwfix"))
            .arg("mcp")
            .current_dir(cwd)
            .env("NO_COLOR", "1")
            .env("FWFIX_STATE_DIR", state.path())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdout = server.stdout.take().unwrap();
        let stdin = server.stdin.take().unwrap();
        let recorder = Recorder::default();
        let progress = recorder.progress.clone();
        let client = recorder.serve((stdout, stdin)).await.unwrap();
        Session {
            client,
            server,
            progress,
            _state: state,
        }
    }

    async fn call(&self, tool: &str, args: Value) -> CallToolResult {
        self.client
            .call_tool(params(tool, args))
            .await
            .unwrap_or_else(|e| panic!("calling {tool}: {e}"))
    }

    fn progress(&self) -> Vec<String> {
        self.progress.lock().unwrap().clone()
    }

    /// Closes the session (the server's stdin) and waits for the server to exit: it exits only
    /// once every run it started has ended and restored its tree.
    async fn close(self) -> std::process::ExitStatus {
        let Session {
            client, mut server, ..
        } = self;
        let _ = client.cancel().await;
        tokio::time::timeout(Duration::from_secs(120), server.wait())
            .await
            .expect("fwfix mcp did not exit after its client closed the session")
            .unwrap()
    }
}

fn params(tool: &str, args: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(tool.to_string()).with_arguments(args.as_object().unwrap().clone())
}

fn structured(result: &CallToolResult) -> Value {
    result
        .structured_content
        .clone()
        .unwrap_or_else(|| panic!("no structured content: {result:?}"))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn the_tools_are_listed_with_their_schemas() {
    runtime().block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let session = Session::start(dir.path()).await;
        let info = session.client.peer_info().unwrap();
        assert_eq!(info.server_info.as_ref().unwrap().name, "fwfix");
        let tools = session.client.list_all_tools().await.unwrap();
        let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        names.sort_unstable();
        assert_eq!(
            names,
            [
                "audit", "bisect", "boards", "doctor", "report", "run", "runs", "show", "test",
                "triage", "validate"
            ]
        );
        let test = tools.iter().find(|t| t.name == "test").unwrap();
        let required = test.input_schema["required"].as_array().unwrap();
        for field in ["repo", "board", "profile"] {
            assert!(required.contains(&json!(field)), "{:#?}", test.input_schema);
        }
        let output = test
            .output_schema
            .as_ref()
            .expect("test has an output schema");
        for field in ["verdict", "cases", "crash", "run_dir", "exit_code"] {
            assert!(
                output["properties"].get(field).is_some(),
                "{field} missing from {output:#?}"
            );
        }
        assert!(tools
            .iter()
            .find(|t| t.name == "triage")
            .unwrap()
            .output_schema
            .is_some());
        assert!(session.close().await.success());
    });
}

#[test]
fn test_on_the_fixture_answers_fail_with_the_case_and_line_and_its_report_is_a_resource() {
    let repo = FixtureRepo::new();
    runtime().block_on(async {
        let session = Session::start(repo.path()).await;
        let result = session
            .call(
                "test",
                json!({"repo": repo.path(), "board": MPS2, "profile": "crc"}),
            )
            .await;
        assert_ne!(result.is_error, Some(true), "{result:?}");
        let outcome = structured(&result);
        assert_eq!(outcome["verdict"], "FAIL", "{outcome:#}");
        assert_eq!(outcome["exit_code"], 1);
        assert_eq!(outcome["exit_class"], "failed");
        let failed: Vec<&Value> = outcome["cases"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["status"] == "FAIL")
            .collect();
        assert_eq!(failed.len(), 1, "{outcome:#}");
        assert_eq!(failed[0]["name"], "test_crc16_known_vector");
        assert_eq!(failed[0]["file"], "tests/test_crc.c");
        let line = failed[0]["line"].as_u64().unwrap() as usize;
        let source = std::fs::read_to_string(repo.path().join("tests/test_crc.c")).unwrap();
        assert!(source
            .lines()
            .nth(line - 1)
            .unwrap()
            .contains("TEST_ASSERT"));
        let run_dir = PathBuf::from(outcome["run_dir"].as_str().unwrap());
        assert!(run_dir.join("report.json").is_file());

        // The run's files are resources; report.json reads back as the report.
        let listed = session.client.list_all_resources().await.unwrap();
        let uri = outcome["report_uri"].as_str().unwrap();
        assert!(listed.iter().any(|r| r.uri == uri), "{listed:#?}");
        let read = session
            .client
            .read_resource(ReadResourceRequestParams::new(uri))
            .await
            .unwrap();
        let text = match &read.contents[0] {
            rmcp::model::ResourceContents::TextResourceContents { text, .. } => text.clone(),
            other => panic!("{other:?}"),
        };
        let report: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(report["verdict"], "FAIL");
        // The inspection tools answer on the same run.
        let runs = structured(&session.call("runs", json!({"repo": repo.path()})).await);
        let id = runs["runs"][0]["id"].as_str().unwrap().to_string();
        assert!(run_dir.ends_with(&id), "{runs:#}");
        let run = json!({"repo": repo.path(), "run": id});
        let timeline = structured(&session.call("show", run.clone()).await);
        assert!(
            !timeline["entries"].as_array().unwrap().is_empty(),
            "{timeline:#}"
        );
        let audit = structured(&session.call("audit", run.clone()).await);
        assert_eq!(audit["ok"], true, "{audit:#}");
        let rendered = structured(&session.call("report", run).await);
        assert!(!rendered["written"].as_array().unwrap().is_empty());
        let boards = structured(
            &session
                .call("boards", json!({"action": "list", "repo": repo.path()}))
                .await,
        );
        assert!(boards["boards"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["name"] == MPS2));
        let doctor = structured(&session.call("doctor", json!({})).await);
        assert_eq!(doctor["exit_code"], 0, "{doctor:#}");
        let board_file = repo.path().join("boards").join("broken.toml");
        std::fs::create_dir_all(board_file.parent().unwrap()).unwrap();
        std::fs::write(&board_file, "name = 3\n").unwrap();
        let validated = structured(
            &session
                .call("validate", json!({"files": [board_file]}))
                .await,
        );
        assert_eq!(validated["exit_code"], 2, "{validated:#}");
        assert!(validated["files"][0]["message"]
            .as_str()
            .unwrap()
            .contains("broken.toml"));
        std::fs::remove_file(&board_file).unwrap();
        let missing = session
            .call("show", json!({"repo": repo.path(), "run": "no-such-run"}))
            .await;
        assert_eq!(missing.is_error, Some(true));
        assert_eq!(structured(&missing)["exit_class"], "usage");

        // A file outside any run directory is not served.
        let outside = format!("file://{}", repo.path().join("Makefile").display());
        assert!(session
            .client
            .read_resource(ReadResourceRequestParams::new(outside))
            .await
            .is_err());
        assert!(session.close().await.success());
    });
}

#[test]
fn triage_of_a_recorded_log_names_its_class_and_lines() {
    let log = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/triage/esp_idf_abort.log");
    runtime().block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let session = Session::start(dir.path()).await;
        let by_path = structured(&session.call("triage", json!({"path": log})).await);
        assert_eq!(by_path["class"], "CRASH", "{by_path:#}");
        assert_eq!(by_path["lines"], json!([3]));
        assert!(!by_path["reason"].as_str().unwrap().is_empty());
        let text = std::fs::read_to_string(&log).unwrap();
        let inline = structured(&session.call("triage", json!({"text": text})).await);
        assert_eq!(inline["class"], by_path["class"]);
        assert_eq!(inline["lines"], by_path["lines"]);
        assert!(session.close().await.success());
    });
}

#[test]
fn run_with_the_queue_strategy_converges_with_progress_and_restores_the_tree() {
    let repo = FixtureRepo::new();
    let queue = fixture_queue(&["04-fixes-crc16.diff"]);
    make_owner_work(&repo);
    let before = owner_state(&repo);
    runtime().block_on(async {
        let session = Session::start(repo.path()).await;
        let result = session
            .call(
                "run",
                json!({
                    "repo": repo.path(), "board": MPS2, "profile": "crc",
                    "strategy": "queue", "patches": queue.path(),
                }),
            )
            .await;
        let outcome = structured(&result);
        assert_eq!(outcome["status"], "SUCCESS", "{outcome:#}");
        assert_eq!(outcome["exit_code"], 0);
        assert_eq!(outcome["fixed"], json!(["test_crc16_known_vector"]));
        assert!(outcome["branch"].as_str().unwrap().starts_with("fwfix/"));
        let progress = session.progress();
        assert!(
            progress.iter().any(|m| m.contains("-> BUILD_RUN")),
            "{progress:#?}"
        );
        assert!(
            progress.iter().any(|m| m.contains("-> SUCCESS")),
            "{progress:#?}"
        );
        assert!(session.close().await.success());
    });
    assert_eq!(owner_state(&repo), before);
}

#[test]
fn a_cancelled_run_is_aborted_and_leaves_the_tree_as_it_was() {
    let repo = FixtureRepo::new();
    let queue = slow_when_patched(&repo);
    make_owner_work(&repo);
    let before = owner_state(&repo);
    let run_dir = runtime().block_on(async {
        let session = Session::start(repo.path()).await;
        let handle = start_slow_run(&session, &repo, &queue).await;
        session
            .client
            .notify_cancelled(CancelledNotificationParam::new(
                Some(handle.id.clone()),
                Some("the agent changed its mind".to_string()),
            ))
            .await
            .unwrap();
        let started = session
            .progress()
            .iter()
            .find_map(|m| m.split_once(" started: ").map(|(_, d)| PathBuf::from(d)))
            .unwrap();
        // The server exits only after the aborted run restored the tree and wrote its report.
        assert!(session.close().await.success());
        started
    });
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("report.json")).unwrap())
            .unwrap();
    assert_eq!(report["status"], "ABORTED", "{report:#}");
    let mut after = owner_state(&repo);
    after.remove("sleepers.pid");
    assert_eq!(after, before);
    assert!(!repo.path().join("sleepers.pid").exists());
}

/// Starts a `run` on the slow queue and returns once its patched build is running.
async fn start_slow_run(
    session: &Session,
    repo: &FixtureRepo,
    queue: &Path,
) -> rmcp::service::RequestHandle<RoleClient> {
    let request = ClientRequest::CallToolRequest(Request::new(params(
        "run",
        json!({
            "repo": repo.path(), "board": MPS2, "profile": "crc-slow",
            "strategy": "queue", "patches": queue,
        }),
    )));
    let handle = session
        .client
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .unwrap();
    let sleepers = repo.path().join("sleepers.pid");
    let mut waited = 0;
    while !(sleepers.is_file()
        && session
            .progress()
            .iter()
            .any(|m| m.starts_with("[1]") && m.contains("-> BUILD_RUN")))
    {
        assert!(
            waited < 1200,
            "the patched build never started: {:#?}",
            session.progress()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        waited += 1;
    }
    handle
}

/// SIGTERM to the server while a run patches the tree: the run is aborted, the tree restored,
/// and only then does the server exit.
#[test]
fn sigterm_to_the_server_aborts_its_runs_and_restores_the_tree_before_it_exits() {
    let repo = FixtureRepo::new();
    let queue = slow_when_patched(&repo);
    make_owner_work(&repo);
    let before = owner_state(&repo);
    runtime().block_on(async {
        let mut session = Session::start(repo.path()).await;
        let _handle = start_slow_run(&session, &repo, &queue).await;
        let pid = session.server.id().unwrap() as i32;
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGTERM,
        )
        .unwrap();
        let status = tokio::time::timeout(Duration::from_secs(120), session.server.wait())
            .await
            .expect("fwfix mcp did not exit after SIGTERM")
            .unwrap();
        assert!(status.success(), "{status:?}");
    });
    let mut after = owner_state(&repo);
    after.remove("sleepers.pid");
    assert_eq!(after, before);
    assert!(!repo.path().join("sleepers.pid").exists());
}

#[test]
fn bad_arguments_get_a_clear_tool_error_with_the_cli_exit_class() {
    let repo = FixtureRepo::new();
    runtime().block_on(async {
        let session = Session::start(repo.path()).await;
        let result = session
            .call(
                "test",
                json!({"repo": repo.path(), "board": "no-such-board", "profile": "crc"}),
            )
            .await;
        assert_eq!(result.is_error, Some(true), "{result:?}");
        let error = structured(&result);
        assert_eq!(error["exit_code"], 2, "{error:#}");
        assert_eq!(error["exit_class"], "usage");
        assert!(
            error["message"].as_str().unwrap().contains("no-such-board"),
            "{error:#}"
        );

        let repeat = structured(
            &session
                .call(
                    "test",
                    json!({"repo": repo.path(), "board": MPS2, "profile": "crc", "repeat": 0}),
                )
                .await,
        );
        assert_eq!(repeat["exit_class"], "usage");
        assert!(repeat["message"].as_str().unwrap().contains("repeat"));

        // Approval by a person cannot be skipped: without one to ask, the run is refused.
        let gated = session
            .call(
                "run",
                json!({
                    "repo": repo.path(), "board": MPS2, "profile": "crc", "strategy": "queue",
                    "patches": fixture_dir().join("patches"), "approve": "always",
                }),
            )
            .await;
        assert_eq!(gated.is_error, Some(true));
        assert!(structured(&gated)["message"]
            .as_str()
            .unwrap()
            .contains("approve"));
        assert!(!repo.path().join(".fwfix/runs").exists());

        // An argument of the wrong type is answered as a tool error saying what was expected.
        let wrong = session
            .call(
                "test",
                json!({"repo": repo.path(), "board": 3, "profile": "crc"}),
            )
            .await;
        assert_eq!(wrong.is_error, Some(true), "{wrong:?}");
        assert!(
            format!("{:?}", wrong.content).contains("expected a string"),
            "{wrong:?}"
        );
        assert!(session.close().await.success());
    });
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
}

/// The server answers on stdout with protocol messages only: a session whose every line is a
/// JSON-RPC message.
#[test]
fn stdout_carries_protocol_messages_only() {
    let repo = FixtureRepo::new();
    runtime().block_on(async {
        let state = tempfile::tempdir().unwrap();
        let mut server = tokio::process::Command::new(env!("CARGO_BIN_EXE_fwfix"))
            .arg("mcp")
            .current_dir(repo.path())
            .env("FWFIX_STATE_DIR", state.path())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdout = server.stdout.take().unwrap();
        let stdin = server.stdin.take().unwrap();
        let (tap_read, tap_write) = tokio::io::duplex(1 << 20);
        let copier = tokio::spawn(async move {
            let mut stdout = stdout;
            let mut tap = Vec::new();
            let mut forward = tap_write;
            let mut buf = [0u8; 8192];
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            loop {
                let n = stdout.read(&mut buf).await.unwrap();
                if n == 0 {
                    break;
                }
                tap.extend_from_slice(&buf[..n]);
                if forward.write_all(&buf[..n]).await.is_err() {
                    break;
                }
            }
            tap
        });
        let client = ().serve((tap_read, stdin)).await.unwrap();
        let answer = client
            .call_tool(params(
                "test",
                json!({"repo": repo.path(), "board": MPS2, "profile": "crc"}),
            ))
            .await
            .unwrap();
        assert_eq!(structured(&answer)["verdict"], "FAIL");
        let _ = client.cancel().await;
        server.wait().await.unwrap();
        let tap = copier.await.unwrap();
        for line in String::from_utf8(tap).unwrap().lines() {
            let message: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("not a protocol message ({e}): {line}"));
            assert_eq!(message["jsonrpc"], "2.0", "{line}");
        }
    });
}

/// A client whose user answers every approval question the same way, keeping the questions.
#[derive(Clone)]
struct Reviewer {
    approve: bool,
    asked: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for Reviewer {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let mut info = rmcp::model::ClientConfig::new(
            rmcp::model::ClientCapabilities::builder()
                .enable_elicitation()
                .build(),
            rmcp::model::Implementation::new("reviewer", "1"),
        );
        // A revision that lets the server ask in the middle of a call.
        info.protocol_version = rmcp::model::ProtocolVersion::V_2025_11_25;
        info
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        let message = match request {
            rmcp::model::ElicitRequestParams::FormElicitationParams { message, .. } => message,
            other => panic!("{other:?}"),
        };
        self.asked.lock().unwrap().push(message);
        Ok(
            rmcp::model::ElicitResult::new(rmcp::model::ElicitationAction::Accept).with_content(
                json!({"approve": self.approve, "reason": "not this way: fix the init value"}),
            ),
        )
    }
}

/// `run` with `approve always` asks the client's user through elicitation: a yes applies the
/// candidate, a no rejects it; either way the decision and who made it are in review.json.
#[test]
fn approval_is_asked_through_the_client_and_its_answer_decides() {
    for approve in [true, false] {
        let repo = FixtureRepo::new();
        let queue = fixture_queue(&["04-fixes-crc16.diff"]);
        let before = owner_state(&repo);
        let asked = Arc::new(Mutex::new(Vec::new()));
        runtime().block_on(async {
            let state = tempfile::tempdir().unwrap();
            let mut server = tokio::process::Command::new(env!("CARGO_BIN_EXE_fwfix"))
                .arg("mcp")
                .current_dir(repo.path())
                .env("FWFIX_STATE_DIR", state.path())
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .kill_on_drop(true)
                .spawn()
                .unwrap();
            let stdout = server.stdout.take().unwrap();
            let stdin = server.stdin.take().unwrap();
            let reviewer = Reviewer {
                approve,
                asked: asked.clone(),
            };
            let client = reviewer.serve((stdout, stdin)).await.unwrap();
            let result = client
                .call_tool(params(
                    "run",
                    json!({
                        "repo": repo.path(), "board": MPS2, "profile": "crc",
                        "strategy": "queue", "patches": queue.path(), "approve": "always",
                    }),
                ))
                .await
                .unwrap();
            let outcome = structured(&result);
            let expected = if approve { "SUCCESS" } else { "FAILURE" };
            assert_eq!(outcome["status"], expected, "{outcome:#}");
            let run_dir = PathBuf::from(outcome["run_dir"].as_str().unwrap());
            let review: Value = serde_json::from_str(
                &std::fs::read_to_string(run_dir.join("iter-001/review.json")).unwrap(),
            )
            .unwrap();
            assert_eq!(review["decided_by"]["kind"], "human", "{review:#}");
            assert!(review["decided_by"]["user"]
                .as_str()
                .unwrap()
                .contains("reviewer"));
            let decision = if approve { "approved" } else { "rejected" };
            assert_eq!(review["decision"], decision, "{review:#}");
            let _ = client.cancel().await;
            server.wait().await.unwrap();
        });
        let asked = asked.lock().unwrap().clone();
        assert_eq!(asked.len(), 1, "{asked:#?}");
        assert!(asked[0].contains("04-fixes-crc16.diff"), "{}", asked[0]);
        assert!(asked[0].contains("+++ b/src/crc.c"), "{}", asked[0]);
        assert_eq!(owner_state(&repo), before);
    }
}
