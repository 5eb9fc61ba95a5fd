//! The MCP tools: each one's input schema, and a thin call into the library function the CLI's
//! command of the same name calls. A run that reaches its end answers its outcome (a FAIL is an
//! answer, not an error); a call that cannot run answers a tool error with the exit-code class
//! and message the CLI would print.

use super::engine::{EngineFuture, Engines};
use super::output::{ErrorOutcome, RunOutcome, TriageOutcome};
use crate::cli::Exit;
use crate::orchestrator::{self, BoardAccess, HealthGate, StrategyChoice};
use crate::policy::ApproveMode;
use rmcp::handler::server::common::schema_for_output;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ListResourcesResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{tool, tool_handler, tool_router, ErrorData, Peer, RoleServer, ServerHandler};
use schemars::JsonSchema;
use serde::Deserialize;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// Board-sharing settings for tools that use a board (as `--lock-timeout`, `--force`,
/// `--state-dir` on the command line).
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct Access {
    /// How long to wait for a hardware board another run holds, e.g. `30s`, `5m`; `0` does not
    /// wait. Default 10m.
    #[serde(default)]
    pub lock_timeout: Option<String>,
    /// Run on a board even though its health is bad or maintenance.
    #[serde(default)]
    pub force: bool,
    /// The host-wide state directory for board leases and health (default: FWFIX_STATE_DIR,
    /// else $XDG_STATE_HOME/fwfix).
    #[serde(default)]
    pub state_dir: Option<PathBuf>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct TestArgs {
    /// The firmware repository (an absolute path is best: the server's working directory is the
    /// agent's).
    pub repo: PathBuf,
    /// Board file, or a board name (e.g. `qemu-mps2-an385`).
    pub board: String,
    /// Profile file, or a profile name looked up in the repository's profiles/ then fwfix's own.
    pub profile: String,
    /// Run the same image N times (1..=1000) and report each test's pass count.
    #[serde(default)]
    pub repeat: Option<u32>,
    #[serde(flatten)]
    pub access: Access,
}

/// Where candidate patches come from.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// Candidate patches from a directory (`patches`), in name order.
    Queue,
    /// Bisect between `good` and `bad`, and propose the culprit's revert.
    Revert,
    /// An external agent program from the profile's `[strategy.command]`.
    Command,
    /// An OpenAI-compatible chat-completions endpoint.
    Llm,
}

/// When a person must approve a candidate.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Approve {
    /// What the policy allows is applied; what it denies never is.
    Never,
    /// Ask when the patch is risky or a finding warns.
    Risky,
    /// Ask for every patch.
    Always,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct RunArgs {
    /// The firmware repository.
    pub repo: PathBuf,
    /// Board file, or a board name.
    pub board: String,
    /// Profile file, or a profile name.
    pub profile: String,
    pub strategy: Strategy,
    /// `queue`: a directory of *.diff / *.patch files, tried in name order.
    #[serde(default)]
    pub patches: Option<PathBuf>,
    /// The last known-good commit; `revert` bisects from it.
    #[serde(default)]
    pub good: Option<String>,
    /// `revert`: a later commit whose tests fail (default HEAD).
    #[serde(default)]
    pub bad: Option<String>,
    /// Overrides the profile's `[loop] max_iterations` (1..=1000).
    #[serde(default)]
    pub max_iterations: Option<u32>,
    /// Run the loop in a linked git worktree, so the checkout is not touched at all.
    #[serde(default)]
    pub worktree: bool,
    /// Stop the whole run after this long, e.g. `90s`, `30m`, `2h`.
    #[serde(default)]
    pub deadline: Option<String>,
    /// When a person must approve a candidate (default never: the policy decides). With `risky`
    /// or `always` the person is asked through the client (MCP elicitation); a client that
    /// cannot be asked gets the call refused rather than run with the gate open.
    #[serde(default)]
    pub approve: Option<Approve>,
    #[serde(flatten)]
    pub access: Access,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct BisectArgs {
    /// The firmware repository.
    pub repo: PathBuf,
    /// Board file, or a board name.
    pub board: String,
    /// Profile file, or a profile name.
    pub profile: String,
    /// A ref whose tests pass.
    pub good: String,
    /// A ref whose tests fail (default HEAD).
    #[serde(default)]
    pub bad: Option<String>,
    /// Test runs of each step (1..=100); the majority decides.
    #[serde(default)]
    pub runs: Option<u32>,
    #[serde(flatten)]
    pub access: Access,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct TriageArgs {
    /// A log file: build output, flasher or debugger output, a console capture.
    #[serde(default)]
    pub path: Option<PathBuf>,
    /// The log's text itself, instead of `path`.
    #[serde(default)]
    pub text: Option<String>,
    /// The log ended at a timeout: a log with no verdict in it is a HANG.
    #[serde(default)]
    pub timed_out: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct RunsArgs {
    /// The firmware repository.
    pub repo: PathBuf,
    /// At most this many runs, newest first.
    #[serde(default)]
    pub limit: Option<usize>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct RunRef {
    /// A run id (or a unique prefix, or `last`), or a run directory.
    pub run: String,
    /// The firmware repository whose runs the id is looked up in.
    pub repo: PathBuf,
}

/// What `boards` does.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BoardsAction {
    /// Every known board: backend, health and lease holder.
    List,
    /// Run a board's `[health]` profile under its lease and record the verdict as its health.
    Check,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct BoardsArgs {
    pub action: BoardsAction,
    /// The firmware repository whose boards/ are listed beside the shipped ones.
    pub repo: PathBuf,
    /// `check`: the board to check.
    #[serde(default)]
    pub board: Option<String>,
    #[serde(flatten)]
    pub access: Access,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ValidateArgs {
    /// Board and profile files to check.
    pub files: Vec<PathBuf>,
}

/// The server: the tool router, the engines it started, and the run directories it made (listed
/// as resources).
#[derive(Clone)]
pub struct Server {
    tool_router: ToolRouter<Server>,
    engines: Engines,
    run_dirs: Arc<Mutex<Vec<PathBuf>>>,
}

/// A tool error: the exit-code class and message the CLI would print.
fn failed(exit: Exit, message: impl Into<String>) -> CallToolResult {
    let outcome = ErrorOutcome::new(exit, message);
    let mut result = CallToolResult::structured_error(serde_json::json!(outcome));
    // The text a model reads first is the CLI's own line.
    result.content = vec![rmcp::model::ContentBlock::text(format!(
        "error (exit {} {}): {}",
        outcome.exit_code,
        outcome.exit_class,
        crate::report::visible(&outcome.message)
    ))];
    result
}

fn structured(value: impl serde::Serialize) -> CallToolResult {
    CallToolResult::structured(serde_json::json!(value))
}

impl Access {
    fn resolve(&self) -> Result<BoardAccess, CallToolResult> {
        let state_dir = match &self.state_dir {
            Some(dir) => dir.clone(),
            None => match std::env::var_os("FWFIX_STATE_DIR") {
                Some(dir) if !dir.is_empty() => PathBuf::from(dir),
                _ => crate::config::host::state_dir().map_err(|e| failed(Exit::Usage, e))?,
            },
        };
        let lock_timeout = match &self.lock_timeout {
            Some(text) => crate::cli::parse_wait(text)
                .map_err(|e| failed(Exit::Usage, format!("lock_timeout: {e}")))?,
            None => std::time::Duration::from_secs(600),
        };
        Ok(BoardAccess {
            state_dir,
            lock_timeout,
            gate: if self.force {
                HealthGate::Force
            } else {
                HealthGate::Enforce
            },
        })
    }
}

/// `value` when it lies in `range`, else a usage error naming the argument.
fn in_range(
    name: &str,
    value: Option<u32>,
    default: u32,
    range: std::ops::RangeInclusive<u32>,
) -> Result<u32, CallToolResult> {
    let value = value.unwrap_or(default);
    if range.contains(&value) {
        Ok(value)
    } else {
        Err(failed(
            Exit::Usage,
            format!(
                "{name}: {value} is not in {}..={}",
                range.start(),
                range.end()
            ),
        ))
    }
}

/// Unwraps a checked argument, or answers its tool error.
macro_rules! checked {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(answer) => return Ok(answer),
        }
    };
}

#[tool_router]
impl Server {
    pub fn new(engines: Engines) -> Server {
        Server {
            tool_router: Self::tool_router(),
            engines,
            run_dirs: Arc::default(),
        }
    }

    /// Runs an engine command and answers its outcome; remembers its run directory.
    async fn engine<F>(&self, ctx: &RequestContext<RoleServer>, body: F) -> CallToolResult
    where
        F: for<'a> FnOnce(&'a dyn crate::events::EventSink, CancellationToken) -> EngineFuture<'a>
            + Send
            + 'static,
    {
        let progress = ctx.meta.get_progress_token();
        let peer: Peer<RoleServer> = ctx.peer.clone();
        match self.engines.run(peer, progress, ctx.ct.clone(), body).await {
            Ok(finished) => {
                if let Ok(mut dirs) = self.run_dirs.lock() {
                    dirs.push(finished.run_dir.clone());
                }
                structured(RunOutcome::of(&finished))
            }
            Err(e) => failed(Exit::of_error(&e), e.to_string()),
        }
    }

    /// Build the firmware and run its tests once on a board (QEMU or hardware), without
    /// patching: the verdict, each case with its file and line, a crash symbolised on the image
    /// that ran, and the run directory (report.json, logs, trace).
    #[tool(output_schema = schema_for_output::<RunOutcome>())]
    async fn test(
        &self,
        Parameters(args): Parameters<TestArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let repeat = checked!(in_range("repeat", args.repeat, 1, 1..=1000));
        let access = checked!(args.access.resolve());
        let opts = orchestrator::TestOptions {
            repo: args.repo,
            board: args.board,
            profile: args.profile,
            repeat,
            access,
        };
        Ok(self
            .engine(&ctx, move |sink, cancel| {
                Box::pin(orchestrator::test(opts, sink, cancel))
            })
            .await)
    }

    /// The governed fix loop: reproduce the failure, try candidate patches (queue, revert,
    /// command, llm) under the policy gate, build and test each, until fixed. The owner's tree
    /// is restored whatever happens; a fix is committed on its own branch. Cancelling the call
    /// aborts the run and restores the tree.
    #[tool(output_schema = schema_for_output::<RunOutcome>())]
    async fn run(
        &self,
        Parameters(args): Parameters<RunArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let strategy = checked!(strategy_of(&args));
        let approve = match args.approve.unwrap_or(Approve::Never) {
            Approve::Never => ApproveMode::Never,
            Approve::Risky => ApproveMode::Risky,
            Approve::Always => ApproveMode::Always,
        };
        // The gate is never opened for want of a person: one who cannot be asked means no run.
        let approver: Option<Arc<dyn crate::policy::Approver>> = match approve {
            ApproveMode::Never => None,
            ApproveMode::Risky | ApproveMode::Always => {
                if !can_elicit(&ctx) {
                    return Ok(failed(
                        Exit::Usage,
                        format!(
                            "approve {} needs a person to answer, and this MCP session cannot ask \
                             one (the client offers no form elicitation, or the protocol revision \
                             forbids asking mid-call): the run was not started. Pass \
                             approve never to apply only what the policy allows, or run `fwfix \
                             run --approve {}` in a terminal",
                            approve.name(),
                            approve.name()
                        ),
                    ));
                }
                Some(Arc::new(super::approval::Eliciting {
                    peer: ctx.peer.clone(),
                }))
            }
        };
        let max_iterations = match args.max_iterations {
            Some(n) => Some(checked!(in_range("max_iterations", Some(n), 1, 1..=1000))),
            None => None,
        };
        let deadline = match &args.deadline {
            Some(text) => Some(checked!(crate::cli::parse_duration(text)
                .map_err(|e| failed(Exit::Usage, format!("deadline: {e}"))))),
            None => None,
        };
        let access = checked!(args.access.resolve());
        let opts = orchestrator::RunOptions {
            repo: args.repo,
            board: args.board,
            profile: args.profile,
            strategy,
            max_iterations,
            worktree: args.worktree,
            good: args.good,
            deadline,
            approve,
            approver,
            kill_at: None,
            access,
        };
        Ok(self
            .engine(&ctx, move |sink, cancel| {
                Box::pin(orchestrator::run(opts, sink, cancel))
            })
            .await)
    }

    /// Find the first commit between a good and a bad one whose tests fail, each step a test run
    /// in a worktree of its own.
    #[tool(output_schema = schema_for_output::<RunOutcome>())]
    async fn bisect(
        &self,
        Parameters(args): Parameters<BisectArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let runs = checked!(in_range("runs", args.runs, 1, 1..=100));
        let access = checked!(args.access.resolve());
        let opts = orchestrator::BisectOptions {
            repo: args.repo,
            board: args.board,
            profile: args.profile,
            good: args.good,
            bad: args.bad.unwrap_or_else(|| "HEAD".to_string()),
            runs,
            access,
        };
        Ok(self
            .engine(&ctx, move |sink, cancel| {
                Box::pin(orchestrator::bisect(opts, sink, cancel))
            })
            .await)
    }

    /// Classify a log (a file, or its text): build error, link error, missing tool, flash error,
    /// infrastructure, crash, assertion, test failure, hang or pass, with the lines that decided.
    #[tool(output_schema = schema_for_output::<TriageOutcome>())]
    async fn triage(
        &self,
        Parameters(args): Parameters<TriageArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        use crate::analysis::triage::{classify, classify_file, TriageContext};
        let ctx = TriageContext {
            timed_out: args.timed_out,
        };
        Ok(match (args.path, args.text) {
            (Some(path), None) => {
                // Only a regular file is a log: a device never ends, a FIFO may never open.
                match crate::input::regular(&path)
                    .map_err(|e| e.to_string())
                    .and_then(|_| classify_file(&path, &ctx).map_err(|e| e.to_string()))
                {
                    Ok(triage) => {
                        structured(TriageOutcome::of(path.display().to_string(), &triage))
                    }
                    Err(e) => failed(Exit::Usage, e),
                }
            }
            (None, Some(text)) => structured(TriageOutcome::of(
                "<text>".to_string(),
                &classify(&text, &ctx),
            )),
            (Some(_), Some(_)) | (None, None) => {
                failed(Exit::Usage, "give exactly one of path and text")
            }
        })
    }

    /// The runs of a repository, newest first.
    #[tool]
    async fn runs(
        &self,
        Parameters(args): Parameters<RunsArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        if let Some(why) = crate::rundir::runs_dir_blocked(&args.repo) {
            return Ok(failed(Exit::Usage, why));
        }
        Ok(match crate::inspect::list_runs(&args.repo) {
            Ok(mut runs) => {
                if let Some(limit) = args.limit {
                    runs.truncate(limit);
                }
                structured(serde_json::json!({ "runs": runs }))
            }
            Err(e) => failed(Exit::of_inspect(&e), e.to_string()),
        })
    }

    /// A run's timeline: every transition with its time, reason and evidence, then its report.
    #[tool]
    async fn show(
        &self,
        Parameters(args): Parameters<RunRef>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(
            match crate::inspect::resolve_run(&args.run, &args.repo)
                .and_then(|dir| crate::inspect::timeline(&dir))
            {
                Ok(timeline) => structured(timeline),
                Err(e) => failed(Exit::of_inspect(&e), e.to_string()),
            },
        )
    }

    /// Replay a run's trace through the state machine and check its evidence files; `ok` is
    /// true only when nothing was found.
    #[tool]
    async fn audit(
        &self,
        Parameters(args): Parameters<RunRef>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(match crate::inspect::resolve_run(&args.run, &args.repo) {
            Ok(dir) => {
                let audit = crate::inspect::audit(&dir);
                structured(serde_json::json!({
                    "run_dir": dir.display().to_string(),
                    "ok": audit.ok,
                    "exit_code": if audit.ok { Exit::Success.code() } else { Exit::Failed.code() },
                    "steps": audit.steps,
                    "findings": audit.findings,
                }))
            }
            Err(e) => failed(Exit::of_inspect(&e), e.to_string()),
        })
    }

    /// Render report.md, junit.xml and report.html again from a run's report.json.
    #[tool]
    async fn report(
        &self,
        Parameters(args): Parameters<RunRef>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(
            match crate::inspect::resolve_run(&args.run, &args.repo).and_then(|dir| {
                let written = crate::inspect::rerender(&dir)?;
                Ok((dir, written))
            }) {
                Ok((dir, written)) => structured(serde_json::json!({
                    "run_dir": dir.display().to_string(),
                    "written": written.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
                })),
                Err(e) => failed(Exit::of_inspect(&e), e.to_string()),
            },
        )
    }

    /// The boards of this host: `list` them with their health and lease, or `check` one (run its
    /// `[health]` profile and record the verdict).
    #[tool]
    async fn boards(
        &self,
        Parameters(args): Parameters<BoardsArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let access = checked!(args.access.resolve());
        match (args.action, args.board) {
            (BoardsAction::List, _) => Ok(
                match crate::inspect::list_boards(&args.repo, &access.state_dir) {
                    Ok(boards) => structured(serde_json::json!({ "boards": boards })),
                    Err(e) => failed(Exit::Usage, e.to_string()),
                },
            ),
            (BoardsAction::Check, Some(board)) => {
                let opts = orchestrator::CheckOptions {
                    repo: args.repo,
                    board,
                    state_dir: access.state_dir,
                    lock_timeout: access.lock_timeout,
                };
                Ok(self
                    .engine(&ctx, move |sink, cancel| {
                        Box::pin(orchestrator::check_board(opts, sink, cancel))
                    })
                    .await)
            }
            (BoardsAction::Check, None) => Ok(failed(Exit::Usage, "check needs a board")),
        }
    }

    /// Check the host tools fwfix needs (compiler, QEMU, GDB, ...) and say how to install what is
    /// missing.
    #[tool]
    async fn doctor(&self) -> Result<CallToolResult, ErrorData> {
        let statuses = crate::doctor::check();
        let install =
            crate::doctor::install_command(&statuses, nix::unistd::Uid::effective().is_root());
        let tools: Vec<_> = statuses
            .iter()
            .map(|s| {
                serde_json::json!({
                    "program": s.tool.program,
                    "found": s.found(),
                    "path": s.path.as_ref().map(|p| p.display().to_string()),
                    "version": s.version,
                    "package": s.tool.package,
                    "purpose": s.tool.purpose,
                })
            })
            .collect();
        let exit = if install.is_some() {
            Exit::Infrastructure
        } else {
            Exit::Success
        };
        Ok(structured(serde_json::json!({
            "tools": tools, "install": install, "exit_code": exit.code(),
        })))
    }

    /// Check board and profile files without running anything: each file is ok, or its error
    /// at file:line:col.
    #[tool]
    async fn validate(
        &self,
        Parameters(args): Parameters<ValidateArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        use crate::config::Validated;
        if args.files.is_empty() {
            return Ok(failed(Exit::Usage, "files: give at least one file"));
        }
        let mut exit = Exit::Success;
        let results: Vec<_> = args
            .files
            .iter()
            .map(|file| {
                let (ok, message) = match crate::config::validate_file(file) {
                    Ok(Validated::Board(b)) => {
                        (true, format!("ok: {} (board {})", file.display(), b.name))
                    }
                    Ok(Validated::Profile(p)) => {
                        (true, format!("ok: {} (profile {})", file.display(), p.name))
                    }
                    Err(e) => {
                        exit = Exit::Usage;
                        (false, e.to_string())
                    }
                };
                serde_json::json!({"file": file.display().to_string(), "ok": ok, "message": message})
            })
            .collect();
        Ok(structured(serde_json::json!({
            "files": results, "exit_code": exit.code(),
        })))
    }
}

/// Whether the server may ask the client's user a question in the middle of this call: the
/// client offers form elicitation, and the session's protocol revision allows a server-to-client
/// request (2026-07-28 and later forbid it).
fn can_elicit(ctx: &RequestContext<RoleServer>) -> bool {
    let allowed = ctx
        .protocol_version()
        .is_some_and(|v| v < rmcp::model::ProtocolVersion::V_2026_07_28);
    allowed
        && ctx
            .peer
            .supported_elicitation_modes()
            .contains(&rmcp::service::ElicitationMode::Form)
}

/// The strategy `args` ask for, with the CLI's checks of what goes with what.
fn strategy_of(args: &RunArgs) -> Result<StrategyChoice, CallToolResult> {
    let usage = |m: &str| Err(failed(Exit::Usage, m));
    if args.bad.is_some() && !matches!(args.strategy, Strategy::Revert) {
        return usage("bad goes with strategy revert");
    }
    match (args.strategy, &args.patches, &args.good) {
        (Strategy::Queue, Some(patches), _) => Ok(StrategyChoice::Queue {
            patches: patches.clone(),
        }),
        (Strategy::Queue, None, _) => usage("strategy queue needs patches (a directory)"),
        (Strategy::Revert, None, Some(good)) => Ok(StrategyChoice::Revert {
            good: good.clone(),
            bad: args.bad.clone().unwrap_or_else(|| "HEAD".to_string()),
        }),
        (Strategy::Revert, None, None) => usage("strategy revert needs good (a ref)"),
        (Strategy::Llm, None, _) => Ok(StrategyChoice::Llm),
        (Strategy::Command, None, _) => Ok(StrategyChoice::Command),
        (Strategy::Llm | Strategy::Command | Strategy::Revert, Some(_), _) => {
            usage("patches goes with strategy queue")
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(rmcp::model::Implementation::new(
            "fwfix",
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions(
            "fwfix builds firmware, runs its tests on QEMU or a board, triages logs, bisects, and \
             runs a governed fix loop that never leaves the repository dirty. Pass repo as an \
             absolute path. A finished run answers its verdict and run directory; its files are \
             resources (file:// URIs under .fwfix/runs/).",
        )
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let dirs = match self.run_dirs.lock() {
            Ok(dirs) => dirs.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        };
        let resources = dirs
            .iter()
            .flat_map(|d| super::resources::list(d))
            .collect();
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        match super::resources::read(&request.uri) {
            Ok(contents) => Ok(ReadResourceResult::new(vec![contents]).into()),
            Err(e) => Err(ErrorData::resource_not_found(e.to_string(), None)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(strategy: Strategy, patches: bool, good: bool, bad: bool) -> RunArgs {
        RunArgs {
            repo: PathBuf::from("/r"),
            board: "b".to_string(),
            profile: "p".to_string(),
            strategy,
            patches: patches.then(|| PathBuf::from("/q")),
            good: good.then(|| "v1".to_string()),
            bad: bad.then(|| "HEAD~1".to_string()),
            max_iterations: None,
            worktree: false,
            deadline: None,
            approve: None,
            access: Access::default(),
        }
    }

    #[test]
    fn strategies_take_the_arguments_the_cli_takes() {
        assert!(matches!(
            strategy_of(&args(Strategy::Queue, true, false, false)),
            Ok(StrategyChoice::Queue { .. })
        ));
        assert!(matches!(
            strategy_of(&args(Strategy::Revert, false, true, true)),
            Ok(StrategyChoice::Revert { ref bad, .. }) if bad == "HEAD~1"
        ));
        for wrong in [
            args(Strategy::Queue, false, false, false),
            args(Strategy::Revert, false, false, false),
            args(Strategy::Llm, true, false, false),
            args(Strategy::Queue, true, false, true),
        ] {
            let answer = strategy_of(&wrong).err().unwrap();
            assert_eq!(answer.is_error, Some(true));
            assert_eq!(answer.structured_content.unwrap()["exit_code"], 2);
        }
    }
}
