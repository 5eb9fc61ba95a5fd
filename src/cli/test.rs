//! `fwfix test`: build once, run the tests on the board, report.

use super::{Exit, GlobalArgs};
use crate::orchestrator::{self, TestOptions};
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
    /// Run the same image N times and report each test's pass count.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    repeat: u32,
    #[command(flatten)]
    board_access: super::BoardArgs,
}

pub fn run(args: Args, global: &GlobalArgs) -> Exit {
    let access = match args.board_access.access(global) {
        Ok(access) => access,
        Err(exit) => return exit,
    };
    let opts = TestOptions {
        repo: args.repo,
        board: args.board,
        profile: args.profile,
        repeat: args.repeat,
        access,
    };
    super::execute(global, |sink, cancel| {
        Box::pin(orchestrator::test(opts, sink, cancel))
    })
}
