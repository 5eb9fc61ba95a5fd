//! `fwfix matrix MANIFEST`: every board × profile pair a manifest names, `--jobs` at a time,
//! with one report and one junit.xml for them all; `--shard K/N` for one of N CI runners.

use super::{Exit, GlobalArgs};
use crate::orchestrator::{self, MatrixOptions, PairOutcome, Shard};
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The matrix manifest (TOML): `boards`, `profiles`, `[[exclude]]`, `repeat`, `retries`,
    /// `sim_first`.
    manifest: PathBuf,
    /// The firmware repository.
    #[arg(long, default_value = ".")]
    repo: PathBuf,
    /// Pairs tested at once (a hardware board takes one pair at a time).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    jobs: u16,
    /// This runner's part of the pairs, K of N (e.g. `2/4`): the profiles in name order are dealt
    /// out to the N shards in turn, so N runners with `--shard 1/N` … `--shard N/N` test every
    /// pair exactly once.
    #[arg(long, value_name = "K/N", value_parser = parse_shard)]
    shard: Option<Shard>,
    #[command(flatten)]
    board_access: super::BoardArgs,
}

/// Parses `K/N` with 1 ≤ K ≤ N.
fn parse_shard(text: &str) -> Result<Shard, String> {
    let bad = || format!("`{text}` is not a shard like 1/4 (K of N, 1 ≤ K ≤ N)");
    let (k, n) = text.split_once('/').ok_or_else(bad)?;
    let index: u32 = k.trim().parse().map_err(|_| bad())?;
    let count: u32 = n.trim().parse().map_err(|_| bad())?;
    if index == 0 || count == 0 || index > count {
        return Err(bad());
    }
    Ok(Shard { index, count })
}

/// The exit code and status word a matrix report records.
fn exit_of(pairs: &[PairOutcome]) -> (i32, &'static str) {
    let exit = Exit::of_pairs(pairs);
    (exit.code(), super::pairs_status(exit))
}

pub fn run(args: Args, global: &GlobalArgs) -> Exit {
    let access = match args.board_access.access(global) {
        Ok(access) => access,
        Err(exit) => return exit,
    };
    let opts = MatrixOptions {
        repo: args.repo,
        manifest: args.manifest,
        jobs: usize::from(args.jobs),
        shard: args.shard,
        access,
    };
    let (result, sink, engine) = match super::drive(global, |sink, cancel| {
        Box::pin(orchestrator::matrix(opts, exit_of, sink, cancel))
    }) {
        Ok(done) => done,
        Err(exit) => return exit,
    };
    let exit = match result {
        Ok(run) => super::finish_pairs(&run.pairs, sink, global, Some(&run.dir)),
        Err(e) => {
            drop(sink);
            super::fail_early(global, Exit::of_error(&e), &e.to_string())
        }
    };
    engine.close();
    exit
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_are_k_of_n() {
        assert_eq!(parse_shard("2/4"), Ok(Shard { index: 2, count: 4 }));
        for bad in ["0/2", "3/2", "1/0", "1", "a/b", "1/2/3"] {
            assert!(parse_shard(bad).is_err(), "{bad}");
        }
    }
}
