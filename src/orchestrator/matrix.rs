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
//! - every pair runs on a thread of its own, so one job's own work never holds up another's;
//! - every event reaches the sink with its pair's name, so nothing a person or a script reads
//!   mixes two pairs' lines;
//! - once the run is cancelled no further pair starts; the ones running end as `fwfix test`
//!   does on Ctrl+C.
//!
//! Every board and profile is loaded before the first pair starts: a bad file is a configuration
//! error with nothing run.

use super::error::OrchestratorError;
use super::job::{canonical_repo, test, Finished, TestOptions};
use super::BoardAccess;
use crate::config::{self, Board, BoardBackend, Profile};
use crate::events::{Event, EventSink, JobSink, Level};
use crate::machine::State;
use crate::report::Status;
use futures_util::stream::{FuturesUnordered, StreamExt};
use std::collections::{HashSet, VecDeque};
use std::path::{Path, PathBuf};
use tokio::sync::{mpsc, oneshot};
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
    let (event_tx, mut event_rx) = mpsc::unbounded_channel();
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
            running.push(on_own_thread(i, run, &cancel, &event_tx));
        }
        // Nothing running means nothing could start: every pair ended or was skipped, or the
        // run was cancelled.
        let next = loop {
            tokio::select! {
                biased;
                Some((pair, event)) = event_rx.recv() => sinks[pair].emit(&event),
                next = running.next() => break next,
            }
        };
        // What a pair said before it ended comes before anything said of its end.
        while let Ok((pair, event)) = event_rx.try_recv() {
            sinks[pair].emit(&event);
        }
        let Some((i, result)) = next else {
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

/// Runs pair `i`'s test on a thread of its own, with a runtime of its own: run as futures of one
/// task, the jobs took turns on one thread, and whatever one did between two awaits (writing its
/// records, starting QEMU, reading symbols, rendering its report) held up the others, the QEMUs
/// they wait on included. Its events come back on `events`, to be emitted under the pair's name
/// by the caller. Dropping the returned future cancels the job, which then ends as `fwfix test`
/// does on Ctrl+C (its QEMU stopped, its report written).
fn on_own_thread(
    i: usize,
    run: TestOptions,
    cancel: &CancellationToken,
    events: &mpsc::UnboundedSender<(usize, Event)>,
) -> impl std::future::Future<Output = (usize, Result<Finished, OrchestratorError>)> {
    let cancel = cancel.child_token();
    let stop = cancel.clone().drop_guard();
    let sink = Forward {
        pair: i,
        events: events.clone(),
    };
    let (done_tx, done_rx) = oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name(format!("fwfix-job-{i}"))
        .spawn(move || {
            let result = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime.block_on(test(run, &sink, cancel)),
                Err(e) => Err(OrchestratorError::Internal(format!(
                    "cannot start the runtime of a job: {e}"
                ))),
            };
            let _ = done_tx.send(result);
        });
    async move {
        let _stop = stop;
        let result = match spawned {
            Ok(_) => done_rx.await.unwrap_or_else(|_| {
                Err(OrchestratorError::Internal(
                    "a job's thread ended without a result".into(),
                ))
            }),
            Err(e) => Err(OrchestratorError::Internal(format!(
                "cannot start the thread of a job: {e}"
            ))),
        };
        (i, result)
    }
}

/// A job's events, sent to the thread that runs the schedule.
struct Forward {
    pair: usize,
    events: mpsc::UnboundedSender<(usize, Event)>,
}

impl EventSink for Forward {
    fn emit(&self, event: &Event) {
        let _ = self.events.send((self.pair, event.clone()));
    }
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

/// Where a matrix's own report goes, under the repository.
pub const MATRIX_DIR: &str = ".fwfix/matrix";

/// `--shard K/N`: this runner's part of the pairs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// 1-based.
    pub index: u32,
    pub count: u32,
}

impl Shard {
    /// Whether the pairs of `profile` are this shard's. Shards split by profile, so a hardware
    /// pair and the QEMU pairs sim-first waits for are always on one runner: the profiles in name
    /// order are dealt out in turn, the first to shard 1.
    pub fn has(&self, profiles_in_order: &[&str], profile: &str) -> bool {
        profiles_in_order
            .iter()
            .position(|p| *p == profile)
            .is_some_and(|i| i as u64 % u64::from(self.count) + 1 == u64::from(self.index))
    }
}

/// Options of `fwfix matrix`.
#[derive(Debug, Clone)]
pub struct MatrixOptions {
    pub repo: PathBuf,
    pub manifest: PathBuf,
    pub jobs: usize,
    pub shard: Option<Shard>,
    pub access: BoardAccess,
}

/// A finished matrix: its pairs and the report written for them.
#[derive(Debug)]
pub struct MatrixRun {
    pub dir: PathBuf,
    pub pairs: Vec<PairOutcome>,
    pub report: crate::report::MatrixReport,
}

/// `fwfix matrix`: every pair of the manifest's boards and profiles less its exclusions (and,
/// with a shard, less the other shards' pairs), on the manifest's schedule; then `report.json`,
/// `junit.xml`, `report.md` and `report.html` for them all in `.fwfix/matrix/<id>/`. The exit status is left to
/// the caller, which knows the exit-code table.
pub async fn matrix(
    opts: MatrixOptions,
    exit_code: fn(&[PairOutcome]) -> (i32, &'static str),
    events: &dyn EventSink,
    cancel: CancellationToken,
) -> Result<MatrixRun, OrchestratorError> {
    use crate::report::{LeftOut, MatrixPair, MatrixReport};
    let started = chrono::Utc::now();
    let repo = canonical_repo(&opts.repo)?;
    let manifest = config::load_manifest(&opts.manifest)?;
    // A board or profile that does not load is the manifest's mistake at that line.
    let at_entry = |entry: &config::ManifestEntry, key: &str, e: config::ConfigError| {
        config::ConfigError::InvalidValue {
            at: entry.at.clone(),
            key: config::KeyPath::new(&[key]),
            reason: e.to_string(),
        }
    };
    let mut boards = Vec::new();
    for entry in &manifest.boards {
        let board =
            config::resolve_board(&entry.arg, &repo).map_err(|e| at_entry(entry, "boards", e))?;
        boards.push((entry.arg.clone(), board));
    }
    let mut profiles = Vec::new();
    for entry in &manifest.profiles {
        let profile = config::resolve_profile(&entry.arg, &repo)
            .map_err(|e| at_entry(entry, "profiles", e))?;
        profiles.push((entry.arg.clone(), profile));
    }
    let mut in_order: Vec<&str> = profiles.iter().map(|(_, p)| p.name.as_str()).collect();
    in_order.sort_unstable();
    in_order.dedup();

    let mut pairs = Vec::new();
    let mut left_out = Vec::new();
    let mut used = vec![false; manifest.exclude.len()];
    for (board_arg, board) in &boards {
        for (profile_arg, profile) in &profiles {
            let excluded = manifest.exclude.iter().enumerate().find(|(_, x)| {
                x.matches(
                    [board.name.as_str(), board_arg.as_str()],
                    [profile.name.as_str(), profile_arg.as_str()],
                )
            });
            if let Some((k, x)) = excluded {
                used[k] = true;
                left_out.push(LeftOut {
                    board: board.name.clone(),
                    profile: profile.name.clone(),
                    why: format!(
                        "excluded at {}{}",
                        x.at,
                        x.reason
                            .as_deref()
                            .map(|r| format!(": {r}"))
                            .unwrap_or_default()
                    ),
                });
                continue;
            }
            if let Some(shard) = opts.shard.filter(|s| !s.has(&in_order, &profile.name)) {
                left_out.push(LeftOut {
                    board: board.name.clone(),
                    profile: profile.name.clone(),
                    why: format!("another shard's (this is {}/{})", shard.index, shard.count),
                });
                continue;
            }
            pairs.push(PairSpec {
                board_arg: board_arg.clone(),
                profile_arg: profile_arg.clone(),
                board: board.clone(),
                profile: profile.clone(),
            });
        }
    }
    if let Some(k) = used.iter().position(|u| !u) {
        return Err(config::ConfigError::Invalid {
            at: manifest.exclude[k].at.clone(),
            message: "this [[exclude]] matches no pair of the matrix's boards and profiles".into(),
        }
        .into());
    }

    let dir =
        crate::rundir::RunDir::create_under(&repo.join(MATRIX_DIR), started).map_err(|source| {
            OrchestratorError::RunDir {
                path: repo.join(MATRIX_DIR),
                source,
            }
        })?;
    let schedule = Schedule {
        jobs: opts.jobs,
        repeat: manifest.repeat,
        retries: manifest.retries,
        sim_first: manifest.sim_first,
        access: opts.access,
    };
    let outcomes = run_pairs(&repo, pairs, &schedule, events, cancel).await?;
    let finished_at = chrono::Utc::now();
    let (code, status) = exit_code(&outcomes);
    let report = MatrixReport {
        matrix_id: dir.id().to_string(),
        command: "matrix",
        manifest: manifest.source.display().to_string(),
        repo: repo.display().to_string(),
        shard: opts.shard.map(|s| format!("{}/{}", s.index, s.count)),
        status: status.to_string(),
        exit_code: code,
        jobs: schedule.jobs,
        started_at: started,
        finished_at,
        duration_ms: u64::try_from((finished_at - started).num_milliseconds()).unwrap_or(0),
        pairs: outcomes
            .iter()
            .map(|o| {
                let run = o.finished();
                let count = |ok: bool| {
                    run.map_or(0, |f| {
                        f.report
                            .cases
                            .iter()
                            .filter(|c| match c.status {
                                crate::results::CaseStatus::Pass => ok,
                                crate::results::CaseStatus::Ignore => false,
                                crate::results::CaseStatus::Fail
                                | crate::results::CaseStatus::Crash
                                | crate::results::CaseStatus::Hang
                                | crate::results::CaseStatus::Missing => !ok,
                            })
                            .count()
                    })
                };
                MatrixPair {
                    board: o.board.clone(),
                    profile: o.profile.clone(),
                    hardware: o.hardware,
                    status: o.status().to_string(),
                    tries: o.tries,
                    run_dir: run.map(|f| f.run_dir.display().to_string()),
                    reason: match &o.end {
                        PairEnd::Ran(Ok(f)) => {
                            (!f.report.status.is_ok()).then(|| f.report.message.clone())
                        }
                        PairEnd::Ran(Err(e)) => Some(e.to_string()),
                        PairEnd::Skipped { reason } => Some(reason.clone()),
                        PairEnd::NotStarted => Some("not started: the run was interrupted".into()),
                    },
                    passed: count(true),
                    failed: count(false),
                    report: run.map(|f| f.report.clone()),
                }
            })
            .collect(),
        left_out,
    };
    let write = |name: &str, bytes: &[u8]| {
        crate::rundir::write_atomic(&dir.path().join(name), bytes).map_err(|source| {
            OrchestratorError::RunDir {
                path: dir.path().join(name),
                source,
            }
        })
    };
    let json = serde_json::to_vec_pretty(&report)
        .map_err(|e| OrchestratorError::Internal(format!("matrix report: {e}")))?;
    write(crate::report::REPORT_JSON, &json)?;
    let junit = crate::report::render_matrix_junit(&report)
        .map_err(|e| OrchestratorError::Internal(format!("matrix junit.xml: {e}")))?;
    write("junit.xml", junit.as_bytes())?;
    write(
        "report.md",
        crate::report::render_matrix_markdown(&report).as_bytes(),
    )?;
    write(
        crate::report::REPORT_HTML,
        crate::report::render_matrix_html(&report, dir.path()).as_bytes(),
    )?;
    Ok(MatrixRun {
        dir: dir.path().to_path_buf(),
        pairs: outcomes,
        report,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_deal_profiles_out_in_turn_and_cover_each_once() {
        let profiles = ["crc", "math", "ringbuf", "sensor", "zz"];
        for count in 1..=6u32 {
            for p in profiles {
                let owners = (1..=count)
                    .filter(|&index| Shard { index, count }.has(&profiles, p))
                    .count();
                assert_eq!(owners, 1, "{p} with {count} shards");
            }
        }
        let one_of_two = Shard { index: 1, count: 2 };
        assert!(one_of_two.has(&profiles, "crc") && one_of_two.has(&profiles, "ringbuf"));
        assert!(!one_of_two.has(&profiles, "math") && !one_of_two.has(&profiles, "unknown"));
    }
}
