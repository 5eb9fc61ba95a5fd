//! `fwfix test`: build once, run the tests on the board, report.

use super::{cancel_on_signals, finish, runtime, Exit, GlobalArgs};
use crate::orchestrator::{self, TestOptions};
use std::path::PathBuf;
use tokio_util::sync::CancellationToken;

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
}

pub fn run(args: Args, global: &GlobalArgs) -> Exit {
    let opts = TestOptions {
        repo: args.repo,
        board: args.board,
        profile: args.profile,
        repeat: args.repeat,
    };
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => return super::fail_early(global, Exit::Infrastructure, &e.to_string()),
    };
    let sink = super::sink(global);
    let cancel = CancellationToken::new();
    let result = rt.block_on(async {
        cancel_on_signals(cancel.clone());
        orchestrator::test(opts, sink.as_ref(), cancel).await
    });
    finish(result, sink, global)
}
