//! Several `fwfix test` jobs at once: board × profile pairs of one repository, for `fwfix test`
//! with several boards or profiles and for `fwfix matrix`. Each pair is an ordinary test run with
//! its own run directory, console and report; what this module adds is the schedule:
//! - at most `jobs` pairs run at a time, started in the order given;
//! - a hardware board (or a labgrid place) runs one pair at a time — a second pair on it waits
//!   while pairs on other boards go ahead — since its console and flash cannot be shared; QEMU
//!   boards run as many pairs as there are slots;
//! - builds of the one tree take turns (the build lock in `build`), while images already built
//!   boot side by side, so two `make`s never race in one `build/`;
//! - sim-first (`fwfix matrix`): a hardware pair waits for the QEMU pairs of its profile and runs
//!   only when one of them passed; otherwise it is skipped, saying which failed;
//! - a pair that ended on an infrastructure error runs again, up to `retries` more times (a test
//!   that failed is a result and is never retried);
//! - every event reaches the sink with its pair's name, so nothing a person or a script reads
//!   mixes two pairs' lines;
//! - once the run is cancelled no further pair starts; the ones running end as `fwfix test`
//!   does on Ctrl+C.
//!
//! Every board and profile is loaded before the first pair starts: a bad file is a configuration
//! error with nothing run.

use super::job::{canonical_repo, test, Finished, OrchestratorError, TestOptions};
use super::BoardAccess;
use crate::config::{self, Board, BoardBackend, Profile};
use crate::events::{Event, EventSink, JobSink, Level};
use crate::machine::State;
use crate::report::Status;
use futures_util::stream::{FuturesUnordered, StreamExt};
use std::collections::{HashSet, VecDeque};
use std::path::{Path, PathBuf};
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

/// How a set of pairs is run.
#[derive(Debug, Clone)]
pub struct Schedule {
    pub jobs: usize,
    pub repeat: u32,
    /// Further runs of a pair that ended on an infrastructure error.
    pub retries: u32,
    /// Hardware pairs run only after a QEMU pair of their profile passed.
    pub sim_first: bool,
    pub access: BoardAccess,
}

/// A board × profile pair to test: the arguments that name its files (as `--board` and
/// `--profile` take them) and what they resolved to.
#[derive(Debug, Clone)]
pub struct PairSpec {
    pub board_arg: String,
    pub profile_arg: String,
    pub board: Board,
    pub profile: Profile,
}

impl PairSpec {
    /// `<board>/<profile>`, by the names in their files.
    pub fn job(&self) -> String {
        format!("{}/{}", self.board.name, self.profile.name)
    }

    /// A real board (or labgrid place), as opposed to QEMU.
    pub fn is_hardware(&self) -> bool {
        !matches!(self.board.backend, BoardBackend::Qemu(_))
    }
}

/// How one pair ended.
// One per pair of a matrix: the size difference between the variants costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum PairEnd {
    /// It ran: the last try's run (earlier tries ended on infrastructure errors).
    Ran(Result<Finished, OrchestratorError>),
    /// Sim-first held it back: no QEMU pair of its profile passed.
    Skipped { reason: String },
    /// The run was cancelled before it started.
    NotStarted,
}

/// One pair and how it ended.
#[derive(Debug)]
pub struct PairOutcome {
    /// `<board>/<profile>`: how events and the summary name it.
    pub job: String,
    pub board: String,
    pub profile: String,
    pub hardware: bool,
    /// Runs it took (0 when it never ran).
    pub tries: u32,
    pub end: PairEnd,
}

impl PairOutcome {
    /// `PASSED`, `FAILED`, `ERROR` (a run that could not run its tests), `ABORTED`,
    /// `SKIPPED` or `NOT RUN`.
    pub fn status(&self) -> &'static str {
        match &self.end {
            PairEnd::Ran(Ok(f)) => f.report.status.name(),
            PairEnd::Ran(Err(_)) => "ERROR",
            PairEnd::Skipped { .. } => "SKIPPED",
            PairEnd::NotStarted => "NOT RUN",
        }
    }

    pub fn finished(&self) -> Option<&Finished> {
        match &self.end {
            PairEnd::Ran(Ok(f)) => Some(f),
            PairEnd::Ran(Err(_)) | PairEnd::Skipped { .. } | PairEnd::NotStarted => None,
        }
    }
}

/// Whether a run's end is the infrastructure's fault (worth another try), not the firmware's.
fn infrastructure(result: &Result<Finished, OrchestratorError>) -> bool {
    match result {
        Ok(f) => {
            f.final_state == State::Failure && f.error_class.is_some_and(|c| c.is_infrastructure())
        }
        Err(OrchestratorError::RunDir { .. } | OrchestratorError::Board(_)) => true,
        Err(
            OrchestratorError::Config(_)
            | OrchestratorError::Usage(_)
            | OrchestratorError::Internal(_)
            | OrchestratorError::Interrupted(_),
        ) => false,
    }
}

/// Every board × profile pair (boards outer, profiles inner), `opts.jobs` at a time.
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
            pairs.push(PairSpec {
                board_arg: board_arg.clone(),
                profile_arg: profile_arg.clone(),
                board: board.clone(),
                profile: config::resolve_profile(profile_arg, &repo)?,
            });
        }
    }
    let schedule = Schedule {
        jobs: opts.jobs,
        repeat: opts.repeat,
        retries: 0,
        sim_first: false,
        access: opts.access,
    };
    run_pairs(&repo, pairs, &schedule, events, cancel).await
}

/// Runs `pairs` on `schedule`; the outcomes come back in the order of `pairs`.
pub async fn run_pairs(
    repo: &Path,
    pairs: Vec<PairSpec>,
    schedule: &Schedule,
    events: &dyn EventSink,
    cancel: CancellationToken,
) -> Result<Vec<PairOutcome>, OrchestratorError> {
    let jobs: Vec<String> = pairs.iter().map(PairSpec::job).collect();
    if let Some(twice) = jobs
        .iter()
        .enumerate()
        .find(|(i, n)| jobs[..*i].contains(n))
        .map(|(_, n)| n)
    {
        return Err(OrchestratorError::Usage(format!(
            "the pair {twice} is given twice: name each board and profile once"
        )));
    }
    let sinks: Vec<JobSink<'_>> = jobs
        .iter()
        .map(|job| JobSink {
            inner: events,
            job: job.clone(),
        })
        .collect();
    let mut ends: Vec<Option<PairEnd>> = pairs.iter().map(|_| None).collect();
    let mut tries = vec![0u32; pairs.len()];
    let mut pending: VecDeque<usize> = (0..pairs.len()).collect();
    let mut busy: HashSet<String> = HashSet::new();
    let mut running = FuturesUnordered::new();
    let slots = schedule.jobs.max(1);
    loop {
        while running.len() < slots && !cancel.is_cancelled() {
            // The first pair in order whose board is free and whose profile's QEMU pairs are
            // done (under sim-first); a held-back pair whose QEMU pairs all failed is skipped.
            let mut start = None;
            let mut index = 0;
            while index < pending.len() {
                let i = pending[index];
                let pair = &pairs[i];
                if schedule.sim_first && pair.is_hardware() {
                    match sim_gate(i, &pairs, &ends) {
                        SimGate::Wait => {
                            index += 1;
                            continue;
                        }
                        SimGate::Skip(reason) => {
                            pending.remove(index);
                            sinks[i].emit(&Event::Message {
                                level: Level::Info,
                                text: format!("skipped: {reason}"),
                            });
                            ends[i] = Some(PairEnd::Skipped { reason });
                            continue;
                        }
                        SimGate::Go => {}
                    }
                }
                if pair.is_hardware() && busy.contains(&pair.board.name) {
                    index += 1;
                    continue;
                }
                start = pending.remove(index);
                break;
            }
            let Some(i) = start else { break };
            let pair = &pairs[i];
            if pair.is_hardware() {
                busy.insert(pair.board.name.clone());
            }
            tries[i] += 1;
            let run = TestOptions {
                repo: repo.to_path_buf(),
                board: pair.board_arg.clone(),
                profile: pair.profile_arg.clone(),
                repeat: schedule.repeat,
                access: schedule.access.clone(),
            };
            let (sink, cancel) = (&sinks[i], cancel.clone());
            running.push(async move { (i, test(run, sink, cancel).await) });
        }
        // Nothing running means nothing could start: every pair ended or was skipped, or the
        // run was cancelled.
        let Some((i, result)) = running.next().await else {
            break;
        };
        if pairs[i].is_hardware() {
            busy.remove(&pairs[i].board.name);
        }
        if infrastructure(&result) && tries[i] <= schedule.retries && !cancel.is_cancelled() {
            sinks[i].emit(&Event::Message {
                level: Level::Warning,
                text: format!(
                    "infrastructure error, trying the pair again ({} of {})",
                    tries[i] + 1,
                    schedule.retries + 1
                ),
            });
            pending.push_front(i);
            continue;
        }
        ends[i] = Some(PairEnd::Ran(result));
    }
    Ok(pairs
        .into_iter()
        .zip(ends)
        .zip(tries)
        .map(|((p, end), tries)| PairOutcome {
            job: p.job(),
            hardware: p.is_hardware(),
            board: p.board.name,
            profile: p.profile.name,
            tries,
            end: end.unwrap_or(PairEnd::NotStarted),
        })
        .collect())
}

/// What sim-first says of a hardware pair now.
#[derive(Debug, PartialEq, Eq)]
enum SimGate {
    Go,
    Wait,
    Skip(String),
}

/// A hardware pair goes once every QEMU pair of its profile has ended and one of them passed (or
/// when its profile has none); it is skipped when they all ended without a pass.
fn sim_gate(i: usize, pairs: &[PairSpec], ends: &[Option<PairEnd>]) -> SimGate {
    let profile = &pairs[i].profile.name;
    let sims: Vec<usize> = (0..pairs.len())
        .filter(|&j| !pairs[j].is_hardware() && pairs[j].profile.name == *profile)
        .collect();
    if sims.is_empty() {
        return SimGate::Go;
    }
    if sims.iter().any(|&j| ends[j].is_none()) {
        return SimGate::Wait;
    }
    let passed = |j: &usize| matches!(&ends[*j], Some(PairEnd::Ran(Ok(f))) if f.report.status == Status::Passed);
    if sims.iter().any(passed) {
        return SimGate::Go;
    }
    let failed: Vec<String> = sims.iter().map(|&j| pairs[j].job()).collect();
    SimGate::Skip(format!(
        "sim-first: {profile} passed on no QEMU board ({} did not pass)",
        failed.join(", ")
    ))
}
