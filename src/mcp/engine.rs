//! Running one engine command (`test`, `run`, `bisect`, a board check) for a tool call: on a
//! thread and runtime of its own, as the CLI runs it, with the library's events turned into MCP
//! progress notifications and the call's cancellation (or the server's shutdown) cancelling the
//! library's token — the run is then aborted and the owner's tree restored, as on Ctrl+C.
//!
//! The engine is never cut off half-way: when the client cancels or goes away, the engine still
//! runs to its end (restoring the tree, writing its report), and the server waits for every
//! engine it started before it exits ([`Engines::wait_all`]).

use crate::events::{Event, EventSink};
use crate::orchestrator::{Finished, OrchestratorError};
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// What an engine command returns.
pub type EngineResult = Result<Finished, OrchestratorError>;

/// The future of an engine command, borrowing the sink it emits into.
pub type EngineFuture<'a> = Pin<Box<dyn Future<Output = EngineResult> + 'a>>;

/// The engines the server has started and not yet seen finish, and the server's own token: a
/// shutdown (the client closed stdin, or a signal) cancels every one of them.
#[derive(Clone, Default)]
pub struct Engines {
    shutdown: CancellationToken,
    running: Arc<Mutex<Vec<std::thread::JoinHandle<()>>>>,
}

impl Engines {
    /// Cancels every running engine: each aborts and restores its tree.
    pub fn cancel_all(&self) {
        self.shutdown.cancel();
    }

    /// Waits until every engine started has finished (its report written, its tree restored).
    pub fn wait_all(&self) {
        let handles: Vec<_> = match self.running.lock() {
            Ok(mut running) => running.drain(..).collect(),
            Err(poisoned) => poisoned.into_inner().drain(..).collect(),
        };
        for handle in handles {
            // A panicked engine thread has nothing left to wait for.
            let _ = handle.join();
        }
    }

    /// Remembers a started engine, forgetting those that have ended.
    fn keep(&self, handle: std::thread::JoinHandle<()>) {
        let mut running = match self.running.lock() {
            Ok(running) => running,
            Err(poisoned) => poisoned.into_inner(),
        };
        running.retain(|h| !h.is_finished());
        running.push(handle);
    }

    /// Runs `body` on its own thread and runtime. Events become progress notifications on
    /// `progress` (when the client asked for them); `call` cancelled, or the server shutting
    /// down, cancels the engine.
    pub async fn run<F>(
        &self,
        peer: Peer<RoleServer>,
        progress: Option<ProgressToken>,
        call: CancellationToken,
        body: F,
    ) -> EngineResult
    where
        F: for<'a> FnOnce(&'a dyn EventSink, CancellationToken) -> EngineFuture<'a>
            + Send
            + 'static,
    {
        let cancel = self.shutdown.child_token();
        // The call's token is rmcp's; the engine's is a child of the server's, cancelled by either.
        let linked = cancel.clone();
        let link = tokio::spawn(async move {
            call.cancelled().await;
            linked.cancel();
        });
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let forward = tokio::spawn(forward_progress(peer, progress, events_rx));
        let (done_tx, done_rx) = tokio::sync::oneshot::channel();
        let spawned = std::thread::Builder::new()
            .name("fwfix-mcp-engine".to_string())
            .spawn(move || {
                let sink = ChannelSink(events_tx);
                let result = match crate::cli::runtime() {
                    Ok(rt) => {
                        let result = rt.block_on(body(&sink, cancel));
                        rt.shutdown_timeout(std::time::Duration::from_millis(200));
                        result
                    }
                    Err(e) => Err(OrchestratorError::Internal(format!(
                        "cannot start the engine's runtime: {e}"
                    ))),
                };
                let _ = done_tx.send(result);
            });
        let result = match spawned {
            Ok(handle) => {
                self.keep(handle);
                done_rx.await.unwrap_or_else(|_| {
                    Err(OrchestratorError::Internal(
                        "the engine thread ended without a result".to_string(),
                    ))
                })
            }
            Err(e) => Err(OrchestratorError::Internal(format!(
                "cannot start the engine thread: {e}"
            ))),
        };
        link.abort();
        // The sink is gone with the thread: the forwarder drains what is left and ends.
        let _ = forward.await;
        result
    }
}

/// Hands progress lines from the engine's runtime to the server's, without blocking the engine.
struct ChannelSink(mpsc::UnboundedSender<String>);

impl EventSink for ChannelSink {
    fn emit(&self, event: &Event) {
        if let Some(message) = progress_message(event) {
            let _ = self.0.send(message);
        }
    }
}

/// Sends each progress line as a notification, numbered in order; without a token (the client
/// asked for none) the lines are dropped.
async fn forward_progress(
    peer: Peer<RoleServer>,
    token: Option<ProgressToken>,
    mut lines: mpsc::UnboundedReceiver<String>,
) {
    let mut step = 0u32;
    while let Some(message) = lines.recv().await {
        let Some(token) = &token else {
            continue;
        };
        step += 1;
        let param = ProgressNotificationParam::new(token.clone(), f64::from(step))
            .with_message(crate::report::visible(&message).into_owned());
        // A client that stopped listening does not stop the run.
        let _ = peer.notify_progress(param).await;
    }
}

/// The progress line of an event; None for the per-line floods (console and build output).
fn progress_message(event: &Event) -> Option<String> {
    match event {
        Event::RunStarted {
            command, run_dir, ..
        } => Some(format!("{command} started: {run_dir}")),
        Event::Transition {
            from,
            to,
            reason,
            iteration,
            ..
        } => Some(format!(
            "[{iteration}] {} -> {}: {reason}",
            from.name(),
            to.name()
        )),
        Event::BuildStarted { command } => Some(format!("build: {command}")),
        Event::BuildFinished {
            duration_ms,
            interrupted: true,
            ..
        } => Some(format!("build interrupted after {duration_ms} ms")),
        Event::BuildFinished {
            success,
            duration_ms,
            errors,
            warnings,
            interrupted: false,
        } => Some(format!(
            "build {} in {duration_ms} ms ({errors} errors, {warnings} warnings)",
            if *success { "ok" } else { "failed" }
        )),
        Event::BootStarted { target, attempt } => {
            Some(format!("boot {target} (attempt {attempt})"))
        }
        Event::FlashProgress { phase, percent, .. } => Some(match percent {
            Some(p) => format!("flash {phase} {p}%"),
            None => format!("flash {phase}"),
        }),
        Event::CaseResult { name, status, .. } => Some(format!("{name}: {status:?}")),
        Event::AttemptFinished {
            attempt,
            verdict,
            passed,
            failed,
            ..
        } => Some(format!(
            "attempt {attempt}: {verdict:?} ({passed} passed, {failed} failed)"
        )),
        Event::HookStarted { hook, .. } => Some(format!("{hook} hook")),
        Event::HookFinished {
            hook,
            passed,
            ending,
            ..
        } => Some(format!(
            "{hook} hook {}",
            if *passed { "passed" } else { ending.as_str() }
        )),
        Event::LeaseWaiting { board, .. } => Some(format!("waiting for board {board}'s lease")),
        Event::LeaseAcquired { board, .. } => Some(format!("board {board} leased")),
        Event::BoardHealth {
            board,
            state,
            reason,
        } => Some(format!("board {board} health {state:?}: {reason}")),
        Event::Message { text, .. } => Some(text.clone()),
        Event::Finished {
            status, message, ..
        } => Some(match message {
            Some(m) => format!("{status}: {m}"),
            None => status.clone(),
        }),
        Event::ConsoleLine { .. }
        | Event::BuildOutput { .. }
        | Event::InputWanted { .. }
        | Event::InputDone => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::State;

    #[test]
    fn transitions_become_progress_lines_and_console_floods_do_not() {
        let transition = Event::Transition {
            seq: 3,
            from: State::PatchApply,
            to: State::BuildRun,
            reason: "applied 04-fixes-crc16.diff".to_string(),
            iteration: 1,
            error_class: None,
        };
        assert_eq!(
            progress_message(&transition).as_deref(),
            Some("[1] PATCH_APPLY -> BUILD_RUN: applied 04-fixes-crc16.diff")
        );
        let console = Event::BuildOutput {
            line: "cc -c crc.c".to_string(),
        };
        assert_eq!(progress_message(&console), None);
    }
}
