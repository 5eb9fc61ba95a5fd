//! `fwfix test`: build once, run the tests on the board, report. Several `--board`s or
//! `--profile`s test every pair, `--jobs N` at a time.

use super::{Exit, GlobalArgs};
use crate::orchestrator::{self, TestManyOptions, TestOptions};
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The firmware repository.
    #[arg(long, default_value = ".")]
    repo: PathBuf,
    /// Board file, or a board name looked up in the repository's boards/ then fwfix's own.
    /// Repeat it to test on several boards.
    #[arg(long, required = true)]
    board: Vec<String>,
    /// Profile file, or a profile name looked up in the repository's profiles/ then fwfix's own.
    /// Repeat it to test several profiles: every board × profile pair is tested.
    #[arg(long, required = true)]
    profile: Vec<String>,
    /// Run the same image N times and report each test's pass count.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    repeat: u32,
    /// Pairs tested at once (each with its own QEMU or board, console and run directory; a
    /// hardware board takes one pair at a time, builds of the tree take turns).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    jobs: u16,
    #[command(flatten)]
    board_access: super::BoardArgs,
}

pub fn run(args: Args, global: &GlobalArgs) -> Exit {
    let access = match args.board_access.access(global) {
        Ok(access) => access,
        Err(exit) => return exit,
    };
    if let ([board], [profile]) = (args.board.as_slice(), args.profile.as_slice()) {
        let opts = TestOptions {
            repo: args.repo,
            board: board.clone(),
            profile: profile.clone(),
            repeat: args.repeat,
            access,
        };
        return super::execute(global, |sink, cancel| {
            Box::pin(orchestrator::test(opts, sink, cancel))
        });
    }
    let opts = TestManyOptions {
        repo: args.repo,
        boards: args.board,
        profiles: args.profile,
        repeat: args.repeat,
        jobs: usize::from(args.jobs),
        access,
    };
    super::execute_many(global, |sink, cancel| {
        Box::pin(orchestrator::test_many(opts, sink, cancel))
    })
}
