//! `fwfix run` and `fwfix resume`: the fix loop's commands over the engine (`job.rs`). They
//! resolve what the run needs before anything is created — the repository, the known-good
//! commit, the configuration and the patch strategy — and hand the engine its strategy. The
//! engine never makes one itself: the revert strategy searches history with bisect steps
//! (`bisect.rs`), each a whole engine run, so the strategy is chosen above both.

use super::bisect::{resolve_range, EngineFinder};
use super::board::ClaimError;
use super::context::{RunContext, RunRequest, StrategyChoice};
use super::error::OrchestratorError;
use super::job::{
    canonical_repo, load_config, lock_owner_tree, Finished, Job, PickedStrategy, Placement,
    ResumeOptions, RunOptions, Step,
};
use crate::config::{self, Board, Profile};
use crate::events::EventSink;
use crate::machine::{Outcome, State};
use crate::repo::Repo;
use crate::report::Command;
use crate::rundir::RunDir;
use crate::strategy::command::CommandStrategy;
use crate::strategy::llm::LlmStrategy;
use crate::strategy::queue::QueueStrategy;
use crate::strategy::revert::RevertStrategy;
use crate::strategy::Strategy;
use tokio_util::sync::CancellationToken;

/// `fwfix run`: the fix loop.
pub async fn run(
    opts: RunOptions,
    events: &dyn EventSink,
    cancel: CancellationToken,
) -> Result<Finished, OrchestratorError> {
    let repo = canonical_repo(&opts.repo)?;
    // Refuse a repository fwfix cannot protect before anything is created in it. The known-good
    // commit is resolved now, so a resumed run compares against the same commit.
    let good = {
        let owner = Repo::open(&repo)
            .and_then(|owner| owner.check_snapshot_ready().map(|()| owner))
            .map_err(|e| OrchestratorError::Usage(e.to_string()))?;
        match &opts.good {
            Some(spec) => Some(
                owner
                    .resolve_commit(spec)
                    .map_err(|e| OrchestratorError::Usage(format!("--good: {e}")))?
                    .id,
            ),
            None => None,
        }
    };
    let strategy = match opts.strategy {
        StrategyChoice::Queue { patches } => {
            QueueStrategy::open(&patches).map_err(|e| OrchestratorError::Usage(e.to_string()))?;
            StrategyChoice::Queue { patches }
        }
        // The refs are resolved now, so a resumed run bisects the same commits.
        StrategyChoice::Revert { good, bad } => {
            let line = resolve_range(&repo, &good, &bad)?;
            match (line.first(), line.last()) {
                (Some(good), Some(bad)) => StrategyChoice::Revert {
                    good: good.id.clone(),
                    bad: bad.id.clone(),
                },
                _ => return Err(OrchestratorError::Usage("no commits to bisect".to_string())),
            }
        }
        other => other,
    };
    let request = RunRequest {
        repo,
        board: opts.board,
        profile: opts.profile,
        repeat: 1,
        strategy: Some(strategy),
        worktree: opts.worktree,
        good,
    };
    let config = load_config(&request)?;
    let strategy = make_strategy(
        &request,
        &config.0,
        &config.1,
        &serde_json::Value::Null,
        events,
    )?;
    let tree_lock = lock_owner_tree(&request, "fwfix run", None, events)?;
    let mut job = Job::start(
        Command::Run,
        request,
        config,
        strategy,
        Placement::Runs,
        opts.max_iterations,
        events,
        cancel,
    )?;
    job.tree_lock = tree_lock;
    job.kill_at = opts.kill_at;
    job.approve = opts.approve;
    job.approver = opts.approver;
    job.access = Some(opts.access);
    job.arm_deadline(opts.deadline);
    job.drive(State::Idle, Step::ok(Outcome::TaskReceived, "fwfix run"))
        .await
}

/// `fwfix resume`: reconcile the repository with the last checkpoint and carry on.
///
/// A run killed in a working state re-runs that state's handler. A run that was ABORTED, or that
/// ended in FAILURE and is given `--more-iterations`, goes round through IDLE and INIT again:
/// the unpatched tree is measured once more, then the work the stop cut short is done again
/// ([`RunContext::restart`]) before the next candidate.
pub async fn resume(
    opts: ResumeOptions,
    events: &dyn EventSink,
    cancel: CancellationToken,
) -> Result<Finished, OrchestratorError> {
    let mut ctx = RunContext::load(&opts.run_dir).map_err(OrchestratorError::Usage)?;
    let run_dir = RunDir::open(&opts.run_dir).map_err(|source| OrchestratorError::RunDir {
        path: opts.run_dir.clone(),
        source,
    })?;
    let state = ctx.state;
    let restart = match (state, opts.more_iterations) {
        (State::Failure, Some(n)) => {
            ctx.limits.max_iterations = ctx.ledger.tried() + n;
            ctx.ledger.no_progress = 0;
            Some(format!("resumed with {n} more iteration(s)"))
        }
        (_, Some(_)) => {
            return Err(OrchestratorError::Usage(format!(
                "--more-iterations applies to a run that ended in FAILURE; run {} is in {state}",
                ctx.run_id
            )))
        }
        // Killed after its last transition but before finalising: finalise now.
        (State::Success | State::Failure, None) if !opts.run_dir.join("report.json").is_file() => {
            None
        }
        (State::Success | State::Failure, None) => {
            return Err(OrchestratorError::Usage(format!(
                "run {} already ended in {state}{}",
                ctx.run_id,
                if state == State::Failure {
                    "; add --more-iterations N to try again"
                } else {
                    ""
                }
            )))
        }
        (State::Aborted, None) => Some("resumed after being aborted".to_string()),
        (_, None) => None,
    };
    if let Some(hint) = &opts.hint {
        ctx.hints.push(hint.clone());
    }
    let config = load_config(&ctx.request)?;
    let strategy = make_strategy(
        &ctx.request,
        &config.0,
        &config.1,
        &ctx.strategy_state,
        events,
    )?;
    let mut job = Job::reopen(ctx, run_dir, config, strategy, events, cancel)?;
    // Before reconciling, which may roll the owner's tree back.
    let holder = format!("fwfix resume {}", job.ctx.run_id);
    job.tree_lock = lock_owner_tree(&job.ctx.request, &holder, Some(&job.ctx.run_id), events)?;
    // This process carries the run on now (`fwfix runs` tells running from killed by it).
    job.ctx.pid = std::process::id();
    job.ctx.host = crate::process::host_name();
    job.kill_at = opts.kill_at;
    job.approve = opts.approve;
    job.approver = opts.approver;
    job.access = Some(opts.access);
    job.arm_deadline(opts.deadline);
    job.reconcile()?;
    // A run that goes on needs its board: claimed now, so a busy or refused board ends this
    // resume with the run where the kill left it. Finalising a run needs no board.
    let finalising = matches!(state, State::Success | State::Failure) && restart.is_none();
    let claimed = if finalising {
        Ok(())
    } else {
        job.claim_board_now().await
    };
    match claimed {
        Ok(()) => {}
        Err(e @ ClaimError::Lease(crate::dut::lease::LeaseError::Cancelled { .. })) => {
            return Err(OrchestratorError::Interrupted(e.to_string()))
        }
        Err(e) => return Err(OrchestratorError::Board(e.to_string())),
    }
    match restart {
        Some(reason) => job.drive(state, Step::ok(Outcome::Finalised, reason)).await,
        None => job.drive_from(state).await,
    }
}

/// The run's patch strategy (None for `fwfix test`) and how many candidates to ask it for, with
/// its saved position restored.
fn make_strategy<'a>(
    request: &RunRequest,
    board: &Board,
    profile: &Profile,
    saved: &serde_json::Value,
    events: &'a dyn EventSink,
) -> Result<PickedStrategy<'a>, OrchestratorError> {
    let usage = |e: crate::strategy::StrategyError| OrchestratorError::Usage(e.to_string());
    let (mut strategy, candidates_wanted): (Option<Box<dyn Strategy + 'a>>, u32) = match &request
        .strategy
    {
        // Every remaining entry is one round: the governor ranks them all at once.
        Some(StrategyChoice::Queue { patches }) => (
            Some(Box::new(QueueStrategy::open(patches).map_err(usage)?)),
            u32::MAX,
        ),
        Some(StrategyChoice::Llm) => {
            let settings = config::llm_settings_from_env(profile.strategy.llm.as_ref())?;
            let candidates = settings.candidates;
            (
                Some(Box::new(LlmStrategy::new(settings).map_err(usage)?)),
                candidates,
            )
        }
        Some(StrategyChoice::Command) => {
            let spec = profile.strategy.command.clone().ok_or_else(|| {
                OrchestratorError::Usage(format!(
                    "{}: --strategy command needs a [strategy.command] table with argv",
                    profile.source.display()
                ))
            })?;
            // A program that cannot start would cost a baseline run and every retry first.
            if let Some(program) = spec.argv.first() {
                let found = if program.contains('/') {
                    // Relative to the repository, where the agent runs.
                    crate::doctor::find_program(&request.repo.join(program).to_string_lossy(), &[])
                } else {
                    crate::doctor::find_program(program, &crate::config::host::program_dirs())
                };
                if found.is_none() {
                    return Err(OrchestratorError::Usage(format!(
                        "{}: [strategy.command] argv runs `{program}`, which is not an \
                             executable {}",
                        profile.source.display(),
                        if program.contains('/') {
                            "file (a path with a / is taken from the repository's root)"
                        } else {
                            "on PATH"
                        }
                    )));
                }
            }
            let candidates = spec.candidates;
            (Some(Box::new(CommandStrategy::new(spec))), candidates)
        }
        Some(StrategyChoice::Revert { good, bad }) => {
            // The bisect tests each commit as many times as a fix must pass to count.
            let finder = EngineFinder {
                owner: request.repo.clone(),
                board_arg: request.board.clone(),
                profile_arg: request.profile.clone(),
                board: board.clone(),
                profile: profile.clone(),
                runs: profile.goal.confirm_runs.max(1),
                events,
            };
            let revert = RevertStrategy::new(good.clone(), bad.clone(), Box::new(finder));
            (Some(Box::new(revert)), 1)
        }
        None => (None, 1),
    };
    if let Some(s) = strategy.as_mut() {
        s.load(saved);
    }
    Ok((strategy, candidates_wanted))
}
