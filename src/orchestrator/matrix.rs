//! Several `fwfix test` jobs at once: every board × profile pair of one repository, at most `jobs`
//! running together. Each pair is an ordinary test run with its own run directory, console and
//! report; what this module adds is the schedule:
//! - at most `jobs` pairs run at a time, started in the order given;
//! - a hardware board (or a labgrid place) runs one pair at a time — a second pair on it waits
//!   while pairs on other boards go ahead — since its console and flash cannot be shared; QEMU
//!   boards run as many pairs as there are slots;
//! - builds of the one tree take turns (the build lock in `build`), while images already built
//!   boot side by side, so two `make`s never race in one `build/`;
//! - every event reaches the sink with its pair's name, so nothing a person or a script reads
//!   mixes two pairs' lines;
//! - once the run is cancelled no further pair starts; the ones running end as `fwfix test`
//!   does on Ctrl+C.
//!
//! Every board and profile is loaded before the first pair starts: a bad file is a configuration
//! error with nothing run.

use super::job::{canonical_repo, test, Finished, OrchestratorError, TestOptions};
use super::BoardAccess;
use crate::config::{self, BoardBackend};
use crate::events::{EventSink, JobSink};
use futures_util::stream::{FuturesUnordered, StreamExt};
use std::collections::{HashSet, VecDeque};
use std::path::PathBuf;
use tokio_util::sync::CancellationToken;

/// Options of `fwfix test` over several boards or profiles.
#[derive(Debug, Clone)]
pub struct TestManyOptions {
    pub repo: PathBuf,
    /// Board files or names, in the order the pairs are made.
    pub boards: Vec<String>,
    /// Profile files or names.
    pub profiles: Vec<String>,
    pub repeat: u32,
    /// Pairs running at once (at least 1).
    pub jobs: usize,
    pub access: BoardAccess,
}

/// One board × profile pair and how its test run ended.
#[derive(Debug)]
pub struct PairOutcome {
    /// `<board>/<profile>`, by the names in their files: how events and the summary name it.
    pub job: String,
    pub board: String,
    pub profile: String,
    /// None for a pair that never started because the run was cancelled first.
    pub result: Option<Result<Finished, OrchestratorError>>,
}

/// A pair to run, with what the schedule needs to know about its board.
struct Pair {
    job: String,
    board_arg: String,
    profile_arg: String,
    board: String,
    profile: String,
    /// The board takes one pair at a time.
    exclusive: bool,
}

/// Runs every board × profile pair (boards outer, profiles inner), `opts.jobs` at a time.
/// Returns the pairs in that order.
pub async fn test_many(
    opts: TestManyOptions,
    events: &dyn EventSink,
    cancel: CancellationToken,
) -> Result<Vec<PairOutcome>, OrchestratorError> {
    let repo = canonical_repo(&opts.repo)?;
    let mut pairs = Vec::new();
    for board_arg in &opts.boards {
        let board = config::resolve_board(board_arg, &repo)?;
        for profile_arg in &opts.profiles {
            let profile = config::resolve_profile(profile_arg, &repo)?;
            pairs.push(Pair {
                job: format!("{}/{}", board.name, profile.name),
                board_arg: board_arg.clone(),
                profile_arg: profile_arg.clone(),
                board: board.name.clone(),
                profile: profile.name.clone(),
                exclusive: !matches!(board.backend, BoardBackend::Qemu(_)),
            });
        }
    }
    let names: Vec<&str> = pairs.iter().map(|p| p.job.as_str()).collect();
    if let Some(twice) = names
        .iter()
        .enumerate()
        .find(|(i, n)| names[..*i].contains(n))
        .map(|(_, n)| n)
    {
        return Err(OrchestratorError::Usage(format!(
            "the pair {twice} is given twice: name each board and profile once"
        )));
    }

    let mut results: Vec<Option<Result<Finished, OrchestratorError>>> =
        pairs.iter().map(|_| None).collect();
    let sinks: Vec<JobSink<'_>> = pairs
        .iter()
        .map(|p| JobSink {
            inner: events,
            job: p.job.clone(),
        })
        .collect();
    let mut pending: VecDeque<usize> = (0..pairs.len()).collect();
    let mut busy: HashSet<&str> = HashSet::new();
    let mut running = FuturesUnordered::new();
    loop {
        while running.len() < opts.jobs.max(1) && !cancel.is_cancelled() {
            // The first pair in order whose board is free.
            let Some(pos) = pending
                .iter()
                .position(|&i| !(pairs[i].exclusive && busy.contains(pairs[i].board.as_str())))
            else {
                break;
            };
            let Some(i) = pending.remove(pos) else { break };
            let pair = &pairs[i];
            if pair.exclusive {
                busy.insert(pair.board.as_str());
            }
            let run = TestOptions {
                repo: repo.clone(),
                board: pair.board_arg.clone(),
                profile: pair.profile_arg.clone(),
                repeat: opts.repeat,
                access: opts.access.clone(),
            };
            let (sink, cancel) = (&sinks[i], cancel.clone());
            running.push(async move { (i, test(run, sink, cancel).await) });
        }
        let Some((i, result)) = running.next().await else {
            break;
        };
        if pairs[i].exclusive {
            busy.remove(pairs[i].board.as_str());
        }
        results[i] = Some(result);
    }
    Ok(pairs
        .into_iter()
        .zip(results)
        .map(|(p, result)| PairOutcome {
            job: p.job,
            board: p.board,
            profile: p.profile,
            result,
        })
        .collect())
}
