//! `fwfix bisect`: find the commit that made the tests fail.

use super::{Exit, GlobalArgs};
use crate::orchestrator::{self, BisectOptions};
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The firmware repository (its HEAD, index and working tree are never touched).
    #[arg(long, default_value = ".")]
    repo: PathBuf,
    /// Board file, or a board name looked up in the repository's boards/ then fwfix's own.
    #[arg(long)]
    board: String,
    /// Profile file, or a profile name looked up in the repository's profiles/ then fwfix's own.
    #[arg(long)]
    profile: String,
    /// A commit (branch, tag, id) whose tests pass.
    #[arg(long)]
    good: String,
    /// A later commit whose tests fail.
    #[arg(long, default_value = "HEAD")]
    bad: String,
    /// Run each commit's tests N times; the majority decides (for flaky tests).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    runs: u32,
    #[command(flatten)]
    board_access: super::BoardArgs,
}

pub fn run(args: Args, global: &GlobalArgs) -> Exit {
    let access = match args.board_access.access(global) {
        Ok(access) => access,
        Err(exit) => return exit,
    };
    let opts = BisectOptions {
        repo: args.repo,
        board: args.board,
        profile: args.profile,
        good: args.good,
        bad: args.bad,
        runs: args.runs,
        access,
    };
    super::execute(global, |sink, cancel| {
        Box::pin(orchestrator::bisect(opts, sink, cancel))
    })
}
