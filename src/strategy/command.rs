//! Strategy `command`: any external agent program (an AI coding CLI, a script, a person's tool)
//! gets the task and the evidence as JSON on stdin and `FWFIX_*` variables in its environment,
//! runs in the working tree, and either prints a unified diff or edits the tree. A printed diff is
//! the candidate; tree edits are taken by the orchestrator as a diff against the rollback point
//! (this module never touches the repository).

use super::diff_extract::{extract_diff, DiffError};
use super::{Candidate, PatchRequest, Strategy, StrategyError};
use crate::config::CommandStrategySpec;
use crate::process::spawn_group;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

/// The agent's output kept for errors and records.
const MAX_OUTPUT: usize = 4 * 1024 * 1024;

/// Runs the agent once per iteration.
#[derive(Debug)]
pub struct CommandStrategy {
    spec: CommandStrategySpec,
}

impl CommandStrategy {
    pub fn new(spec: CommandStrategySpec) -> CommandStrategy {
        CommandStrategy { spec }
    }
}

#[async_trait::async_trait]
impl Strategy for CommandStrategy {
    fn name(&self) -> &'static str {
        "command"
    }

    fn has_more(&self) -> bool {
        true
    }

    fn edits_tree(&self) -> bool {
        true
    }

    async fn candidates(
        &mut self,
        req: &PatchRequest,
        cancel: &CancellationToken,
    ) -> Result<Vec<Candidate>, StrategyError> {
        let Some((program, args)) = self.spec.argv.split_first() else {
            return Err(StrategyError::Failed(
                "[strategy.command] argv is empty".into(),
            ));
        };
        let input = serde_json::json!({
            "task": req.task,
            "iteration": req.iteration,
            "work_dir": req.work_dir,
            "iteration_dir": req.iteration_dir,
            "evidence": req.evidence,
            "evidence_markdown": req.evidence_markdown,
        });
        let request_path = req.iteration_dir.join("request.json");
        let bytes =
            serde_json::to_vec_pretty(&input).map_err(|e| StrategyError::Failed(e.to_string()))?;
        crate::rundir::write_atomic(&request_path, &bytes)
            .map_err(|e| StrategyError::Failed(format!("{}: {e}", request_path.display())))?;
        let mut cmd = Command::new(program);
        cmd.args(args)
            .current_dir(&req.work_dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env("FWFIX_TASK", &req.task)
            .env("FWFIX_ITERATION", req.iteration.to_string())
            .env("FWFIX_WORK_DIR", &req.work_dir)
            .env("FWFIX_ITERATION_DIR", &req.iteration_dir)
            .env("FWFIX_REQUEST", &request_path);
        let (mut child, mut guard) = spawn_group(&mut cmd)
            .map_err(|e| StrategyError::Failed(format!("cannot start `{program}`: {e}")))?;
        // The agent may not read its stdin at all: write in the background, ignore a closed pipe.
        if let Some(mut stdin) = child.stdin.take() {
            let body = serde_json::to_vec(&input).unwrap_or_default();
            tokio::spawn(async move {
                let _ = stdin.write_all(&body).await;
            });
        }
        let mut stdout = child.stdout.take();
        let mut stderr = child.stderr.take();
        let read_all = async {
            let (mut out, mut err) = (Vec::new(), Vec::new());
            if let Some(s) = stdout.as_mut() {
                let _ = s.take(MAX_OUTPUT as u64).read_to_end(&mut out).await;
            }
            if let Some(s) = stderr.as_mut() {
                let _ = s.take(MAX_OUTPUT as u64).read_to_end(&mut err).await;
            }
            (out, err)
        };
        let timeout = self.spec.timeout;
        let outcome = tokio::select! {
            r = async { let io = read_all.await; (io, child.wait().await) } => Ok(r),
            _ = tokio::time::sleep(timeout) => Err(StrategyError::Failed(format!(
                "`{program}` did not finish within {} s", timeout.as_secs()
            ))),
            _ = cancel.cancelled() => Err(StrategyError::Cancelled),
        };
        let ((out, err), status) = match outcome {
            Ok(r) => r,
            Err(e) => {
                guard.terminate(&mut child, Duration::from_secs(2)).await;
                return Err(e);
            }
        };
        guard.kill_rest();
        let stdout = String::from_utf8_lossy(&out).into_owned();
        let stderr = String::from_utf8_lossy(&err).into_owned();
        let _ = crate::rundir::write_atomic(
            &req.iteration_dir.join("agent.log"),
            format!("--- stdout\n{stdout}\n--- stderr\n{stderr}").as_bytes(),
        );
        let status = status.map_err(|e| StrategyError::Failed(format!("`{program}`: {e}")))?;
        if !status.success() {
            return Err(StrategyError::Failed(format!(
                "`{program}` exited with {status}: {}",
                tail(&stderr, 5)
            )));
        }
        match extract_diff(&stdout) {
            Ok(diff) => Ok(vec![Candidate {
                origin: format!("{program} (printed diff)"),
                diff: diff.text,
            }]),
            // No diff printed: the agent edited the tree, or did nothing (the orchestrator sees).
            Err(DiffError::NoDiff) => Ok(vec![Candidate {
                origin: format!("{program} (tree edits)"),
                diff: String::new(),
            }]),
            Err(e) => Err(StrategyError::Unusable {
                reason: format!("`{program}` printed a diff that does not parse: {e}"),
                raw: stdout,
            }),
        }
    }
}

/// The last `n` lines of `text`, on one line.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join(" / ")
}
