//! Strategy `command`: any external agent program (an AI coding CLI, a script, a person's tool)
//! gets the task and the evidence as JSON on stdin and `FWFIX_*` variables in its environment,
//! runs in the working tree, and either prints a unified diff or edits the tree. A printed diff is
//! the candidate; tree edits are taken by the orchestrator as a diff against the rollback point
//! (this module never touches the repository). With `candidates = N`, N agents run side by side,
//! each in its own workspace (a linked worktree the orchestrator made), told which one they are
//! by `FWFIX_CANDIDATE` / `FWFIX_CANDIDATES`; an agent that fails costs only its own candidate.

use super::diff_extract::{extract_diff, DiffError};
use super::{Candidate, PatchRequest, Strategy, StrategyError};
use crate::config::CommandStrategySpec;
use crate::process::output::{self, Ended, Limits};
use crate::process::spawn_group;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// The agent's output kept for errors and records.
const MAX_OUTPUT: usize = 4 * 1024 * 1024;

/// Runs the agent once per iteration, or once per workspace when asked for several candidates.
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
        if self.spec.argv.is_empty() {
            return Err(StrategyError::Failed(
                "[strategy.command] argv is empty".into(),
            ));
        }
        let input = serde_json::json!({
            "task": req.task,
            "iteration": req.iteration,
            "work_dir": req.work_dir,
            "iteration_dir": req.iteration_dir,
            "evidence": req.evidence,
            "evidence_markdown": req.evidence_markdown,
        });
        let agent = |seat: Option<Seat>, work_dir: &Path| Agent {
            argv: self.spec.argv.clone(),
            timeout: self.spec.timeout,
            input: input.clone(),
            iteration_dir: req.iteration_dir.clone(),
            iteration: req.iteration,
            task: req.task.clone(),
            work_dir: work_dir.to_path_buf(),
            seat,
        };
        if req.workspaces.is_empty() {
            return agent(None, &req.work_dir)
                .run(cancel.clone())
                .await
                .map(|c| vec![c]);
        }
        // Side by side, one agent per workspace; each ends on its own (timeout, exit status).
        let of = req.workspaces.len();
        let mut running = JoinSet::new();
        for (index, dir) in req.workspaces.iter().enumerate() {
            let seat = Seat {
                number: index + 1,
                of,
            };
            let a = agent(Some(seat), dir);
            let cancel = cancel.clone();
            running.spawn(async move { (index, a.run(cancel).await) });
        }
        let mut results: Vec<Option<Result<Candidate, StrategyError>>> =
            (0..of).map(|_| None).collect();
        while let Some(joined) = running.join_next().await {
            let (index, result) = joined
                .map_err(|e| StrategyError::Failed(format!("an agent's task failed: {e}")))?;
            results[index] = Some(result);
        }
        gather(results.into_iter().flatten().collect(), &self.spec.argv[0])
    }
}

/// One of several agents run side by side: number `number` of `of`, from 1.
#[derive(Debug, Clone, Copy)]
struct Seat {
    number: usize,
    of: usize,
}

/// Everything one agent run needs, owned so that several can run as tasks.
struct Agent {
    argv: Vec<String>,
    timeout: Duration,
    input: serde_json::Value,
    iteration_dir: PathBuf,
    iteration: u32,
    task: String,
    work_dir: PathBuf,
    seat: Option<Seat>,
}

impl Agent {
    /// Runs the agent to its end and reads its answer: a printed diff, or tree edits (an empty
    /// diff the orchestrator fills from the tree).
    async fn run(self, cancel: CancellationToken) -> Result<Candidate, StrategyError> {
        let (program, args) = self
            .argv
            .split_first()
            .ok_or_else(|| StrategyError::Failed("[strategy.command] argv is empty".into()))?;
        let mut input = self.input.clone();
        input["work_dir"] = serde_json::json!(self.work_dir);
        let (who, suffix) = match self.seat {
            Some(seat) => {
                input["candidate"] = seat.number.into();
                input["candidates"] = seat.of.into();
                (
                    format!("{program} #{}", seat.number),
                    format!("-c{}", seat.number),
                )
            }
            None => (program.clone(), String::new()),
        };
        let seat = self.seat.unwrap_or(Seat { number: 1, of: 1 });
        // Each agent's own request: its workspace and seat, as on its stdin.
        let request_path = self.iteration_dir.join(format!("request{suffix}.json"));
        let bytes =
            serde_json::to_vec_pretty(&input).map_err(|e| StrategyError::Failed(e.to_string()))?;
        crate::rundir::write_atomic(&request_path, &bytes)
            .map_err(|e| StrategyError::Failed(format!("{}: {e}", request_path.display())))?;
        let mut cmd = Command::new(program);
        cmd.args(args)
            .current_dir(&self.work_dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env("FWFIX_TASK", &self.task)
            .env("FWFIX_ITERATION", self.iteration.to_string())
            .env("FWFIX_WORK_DIR", &self.work_dir)
            .env("FWFIX_ITERATION_DIR", &self.iteration_dir)
            .env("FWFIX_REQUEST", &request_path)
            .env("FWFIX_CANDIDATE", seat.number.to_string())
            .env("FWFIX_CANDIDATES", seat.of.to_string());
        let (mut child, mut guard) = spawn_group(&mut cmd)
            .map_err(|e| StrategyError::Failed(format!("cannot start `{program}`: {e}")))?;
        // The agent may not read its stdin at all: write in the background, ignore a closed pipe.
        if let Some(mut stdin) = child.stdin.take() {
            let body = serde_json::to_vec(&input).unwrap_or_default();
            tokio::spawn(async move {
                let _ = stdin.write_all(&body).await;
            });
        }
        // What the agent printed is kept however it ended (a timed-out agent's output says how
        // far it got).
        let limits = Limits {
            timeout: self.timeout,
            cancel: Some(&cancel),
            term_grace: Duration::from_secs(2),
        };
        let captured = output::capture(&mut child, &mut guard, limits, MAX_OUTPUT).await;
        let ended = match captured.ended {
            Ended::Exited(status) => Ok(status),
            Ended::WaitFailed(e) => Err(StrategyError::Failed(format!("`{who}`: {e}"))),
            Ended::TimedOut => Err(StrategyError::Failed(format!(
                "`{who}` did not finish within {} s",
                self.timeout.as_secs()
            ))),
            Ended::Cancelled => Err(StrategyError::Cancelled),
        };
        let (out, err) = (captured.stdout, captured.stderr);
        let stdout = String::from_utf8_lossy(&out).into_owned();
        let stderr = String::from_utf8_lossy(&err).into_owned();
        let _ = crate::rundir::write_atomic(
            &self.iteration_dir.join(format!("agent{suffix}.log")),
            format!("--- stdout\n{stdout}\n--- stderr\n{stderr}").as_bytes(),
        );
        let status = ended?;
        if !status.success() {
            return Err(StrategyError::Failed(format!(
                "`{who}` exited with {status}: {}",
                tail(&stderr, 5)
            )));
        }
        match extract_diff(&stdout) {
            Ok(diff) => Ok(Candidate::new(format!("{who} (printed diff)"), diff.text)),
            // No diff printed: the agent edited the tree, or did nothing (the orchestrator sees).
            Err(DiffError::NoDiff) => Ok(Candidate::new(format!("{who} (tree edits)"), "")),
            Err(e) => Err(StrategyError::Unusable {
                reason: format!("`{who}` printed a diff that does not parse: {e}"),
                raw: stdout,
            }),
        }
    }
}

/// A round from the agents' results, in workspace order: the agents that failed are kept as
/// failed candidates while any agent produced something; when none did, the round fails with
/// the first agent's error (an interrupt wins).
fn gather(
    results: Vec<Result<Candidate, StrategyError>>,
    program: &str,
) -> Result<Vec<Candidate>, StrategyError> {
    if results
        .iter()
        .any(|r| matches!(r, Err(StrategyError::Cancelled)))
    {
        return Err(StrategyError::Cancelled);
    }
    if !results.iter().any(Result::is_ok) {
        let first = results.into_iter().find_map(Result::err);
        return Err(
            first.unwrap_or_else(|| StrategyError::Failed(format!("`{program}` ran no agent")))
        );
    }
    Ok(results
        .into_iter()
        .enumerate()
        .map(|(index, r)| {
            r.unwrap_or_else(|e| Candidate {
                origin: format!("{program} #{}", index + 1),
                diff: String::new(),
                failed: Some(e.to_string()),
            })
        })
        .collect())
}

/// The last `n` lines of `text`, on one line.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join(" / ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(origin: &str) -> Result<Candidate, StrategyError> {
        Ok(Candidate::new(origin, ""))
    }

    #[test]
    fn failed_agents_are_kept_as_failed_candidates_while_another_produced_one() {
        let round = gather(
            vec![
                Err(StrategyError::Failed("`agent #1` exited with 3".into())),
                ok("agent #2 (tree edits)"),
            ],
            "agent",
        )
        .unwrap();
        assert_eq!(round.len(), 2);
        assert_eq!(round[0].origin, "agent #1");
        assert_eq!(round[0].failed.as_deref(), Some("`agent #1` exited with 3"));
        assert_eq!(round[1].failed, None);
    }

    #[test]
    fn a_round_where_every_agent_failed_fails_with_the_first_error() {
        let e = gather(
            vec![
                Err(StrategyError::Failed("first".into())),
                Err(StrategyError::Failed("second".into())),
            ],
            "agent",
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "first");
    }

    #[test]
    fn an_interrupt_ends_the_round() {
        let e = gather(vec![ok("a"), Err(StrategyError::Cancelled)], "agent").unwrap_err();
        assert!(matches!(e, StrategyError::Cancelled));
    }
}
