//! `fwfix run`: the fix loop.

use super::{Exit, GlobalArgs};
use crate::orchestrator::{self, KillAt, RunOptions, StrategyChoice};
use crate::policy::ApproveMode;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The firmware repository.
    #[arg(long, default_value = ".")]
    repo: PathBuf,
    /// Board file, or a board name looked up in the repository's boards/ then fwfix's own.
    #[arg(long)]
    board: String,
    /// Profile file, or a profile name looked up in the repository's profiles/ then fwfix's own.
    #[arg(long)]
    profile: String,
    /// Where candidate patches come from.
    #[arg(long, value_enum)]
    strategy: StrategyArg,
    /// `--strategy queue`: a directory of *.diff / *.patch files, tried in name order.
    #[arg(long, required_if_eq("strategy", "queue"))]
    patches: Option<PathBuf>,
    /// The last known-good commit: the files changed since it are evidence and their code is
    /// suspect. `--strategy revert` bisects from it and reverts the culprit after it.
    #[arg(long, required_if_eq("strategy", "revert"))]
    good: Option<String>,
    /// `--strategy revert`: a later commit whose tests fail (default HEAD).
    #[arg(long)]
    bad: Option<String>,
    /// Overrides the profile's `[loop] max_iterations`.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    max_iterations: Option<u32>,
    /// Run the loop in a linked git worktree, so your checkout is not touched at all.
    #[arg(long)]
    worktree: bool,
    /// Stop the whole run after this long, e.g. `90s`, `30m`, `2h`.
    #[arg(long, value_parser = super::parse_duration)]
    deadline: Option<std::time::Duration>,
    /// When a person must approve a candidate: never, risky (when the policy's risk score is
    /// high), always. Default: risky on a terminal, never elsewhere; without a terminal nothing
    /// ever waits for input.
    #[arg(long, value_parser = super::parse_approve)]
    approve: Option<ApproveMode>,
    /// Test hook: the process kills itself right after entering STATE[@ITERATION].
    #[arg(long, hide = true, value_parser = super::parse_kill_at)]
    test_kill_at: Option<KillAt>,
    #[command(flatten)]
    board_access: super::BoardArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum StrategyArg {
    /// Candidate patches from a directory, in name order.
    Queue,
    /// An OpenAI-compatible chat-completions endpoint (OpenAI, Ollama, llama.cpp, vLLM).
    Llm,
    /// An external agent program from the profile's `[strategy.command]`.
    Command,
    /// Bisect between --good and --bad, and propose the culprit's revert.
    Revert,
}

pub fn run(args: Args, global: &GlobalArgs) -> Exit {
    if args.bad.is_some() && args.strategy != StrategyArg::Revert {
        return super::fail_early(global, Exit::Usage, "--bad goes with --strategy revert");
    }
    let strategy = match (args.strategy, args.patches, args.good.clone()) {
        (StrategyArg::Queue, Some(patches), _) => StrategyChoice::Queue { patches },
        (StrategyArg::Queue, None, _) => {
            return super::fail_early(global, Exit::Usage, "--strategy queue needs --patches DIR")
        }
        (StrategyArg::Revert, None, Some(good)) => StrategyChoice::Revert {
            good,
            bad: args.bad.unwrap_or_else(|| "HEAD".to_string()),
        },
        (StrategyArg::Revert, None, None) => {
            return super::fail_early(global, Exit::Usage, "--strategy revert needs --good REF")
        }
        (StrategyArg::Llm, None, _) => StrategyChoice::Llm,
        (StrategyArg::Command, None, _) => StrategyChoice::Command,
        (StrategyArg::Llm | StrategyArg::Command | StrategyArg::Revert, Some(_), _) => {
            return super::fail_early(global, Exit::Usage, "--patches goes with --strategy queue")
        }
    };
    let access = match args.board_access.access(global) {
        Ok(access) => access,
        Err(exit) => return exit,
    };
    let opts = RunOptions {
        repo: args.repo,
        board: args.board,
        profile: args.profile,
        strategy,
        max_iterations: args.max_iterations,
        worktree: args.worktree,
        good: args.good,
        deadline: args.deadline,
        approve: super::approve_mode(args.approve),
        approver: Some(super::console_approver(global)),
        kill_at: args.test_kill_at,
        access,
    };
    super::execute(global, |sink, cancel| {
        Box::pin(orchestrator::run(opts, sink, cancel))
    })
}
