//! `fwfix resume RUN`: carry on with a run that was killed, aborted, or ended in FAILURE.

use super::{Exit, GlobalArgs};
use crate::orchestrator::{self, KillAt, ResumeOptions};
use crate::policy::ApproveMode;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The run: its directory, or its id (or a unique prefix) under the repository's .fwfix/runs/.
    run: String,
    /// The firmware repository, to look the run id up in.
    #[arg(long, default_value = ".")]
    repo: PathBuf,
    /// For a run that ended in FAILURE: try this many more iterations.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    more_iterations: Option<u32>,
    /// A hint for the next candidates, added to the evidence.
    #[arg(long)]
    hint: Option<String>,
    /// Stop the resumed run after this long, e.g. `90s`, `30m`.
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

pub fn run(args: Args, global: &GlobalArgs) -> Exit {
    let run_dir = match crate::inspect::resolve_run(&args.run, &args.repo) {
        Ok(dir) => dir,
        Err(e) => return super::fail_early(global, Exit::Usage, &e.to_string()),
    };
    let access = match args.board_access.access(global) {
        Ok(access) => access,
        Err(exit) => return exit,
    };
    let opts = ResumeOptions {
        run_dir,
        more_iterations: args.more_iterations,
        hint: args.hint,
        deadline: args.deadline,
        approve: super::approve_mode(args.approve),
        approver: Some(super::console_approver(global)),
        kill_at: args.test_kill_at,
        access,
    };
    super::execute(global, |sink, cancel| {
        Box::pin(orchestrator::resume(opts, sink, cancel))
    })
}
