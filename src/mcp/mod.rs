//! The MCP server (`fwfix mcp`): fwfix as the hardware-in-the-loop tool of a coding agent, over
//! the Model Context Protocol on stdio. Its tools are thin calls into the same library functions
//! the CLI's commands call (`test`, `run`, `bisect`, `triage`, `runs`, `show`, `audit`, `report`,
//! `boards`, `doctor`, `validate`); run directories are readable as resources (`resources.rs`).
//!
//! What the CLI guarantees holds here too: a tool error carries the exit-code class and message
//! the CLI would print ([`crate::cli::Exit`] decides), a long call reports progress and honours
//! cancellation by aborting the run and restoring the tree (`engine.rs`), and nothing but
//! protocol messages reaches stdout (the library never prints; the terminal UI is not used).

mod approval;
mod engine;
mod output;
mod resources;
mod tools;

pub use output::{ErrorOutcome, RunOutcome, TriageOutcome};

use engine::Engines;
use rmcp::ServiceExt;

/// Errors that stop the server itself (not a tool call: those are answered to the client).
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("the MCP session could not start: {0}")]
    Start(String),
    #[error("the MCP session ended with an error: {0}")]
    Session(String),
}

/// Serves MCP on stdin/stdout until the client closes stdin or a signal arrives; then cancels
/// every run still going, and returns only once each has restored its tree and written its
/// report.
pub async fn serve_stdio() -> Result<(), McpError> {
    let signalled = crate::cli::signal_received();
    let engines = Engines::default();
    let server = tools::Server::new(engines.clone());
    let service = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| McpError::Start(e.to_string()))?;
    let cancel = service.cancellation_token();
    let stop = tokio::spawn(async move {
        signalled.await;
        cancel.cancel();
    });
    let ended = service.waiting().await;
    stop.abort();
    engines.cancel_all();
    let waiting = engines.clone();
    let _ = tokio::task::spawn_blocking(move || waiting.wait_all()).await;
    ended
        .map(|_| ())
        .map_err(|e| McpError::Session(e.to_string()))
}
