//! A command's hold on its board, from before the first step to after the report: the lease of a
//! hardware board (one run per board on a host), the health gate (a bad board or one in
//! maintenance is refused before anything is built, unless forced), and for `fwfix boards
//! check`, the check's verdict as the board's health (the job writes it back).
//!
//! A job claims its board once, before the first handler that runs (INIT, or wherever a resumed
//! run starts), and keeps the lease until it is dropped, after its report is written. A bisect
//! claims it for all its steps; the steps (and the steps of a `revert` strategy's bisect, inside
//! a fix run that holds the lease) claim nothing.

use super::error::OrchestratorError;
use crate::config::{Board, BoardBackend};
use crate::dut::boards_state::Holder;
use crate::dut::health::{self, Health, HealthError};
use crate::dut::lease::{self, Lease, LeaseError};
use crate::events::{Event, EventSink, Level};
use crate::machine::State;
use crate::report::{Report, Status};
use crate::results::CaseStatus;
use std::path::PathBuf;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How a command may use its board.
#[derive(Debug, Clone)]
pub struct BoardAccess {
    /// The host-wide state directory: `boards/<board>.lock` and `boards/<board>.json`.
    pub state_dir: PathBuf,
    /// How long to wait for a board another run holds (zero: do not wait).
    pub lock_timeout: Duration,
    pub gate: HealthGate,
}

/// What the board's health means for this command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HealthGate {
    /// Refuse a board that is bad or in maintenance.
    Enforce,
    /// `--force`: run anyway, with a warning and a note in the report.
    Force,
    /// A health check: run whatever the state, then record the verdict.
    Check,
}

/// A claimed board: the lease (None for a board that needs none), the labgrid place acquired
/// for a labgrid board, and what the report should say.
#[derive(Debug, Default)]
pub(super) struct Claim {
    pub lease: Option<Lease>,
    pub place: Option<std::sync::Arc<crate::dut::labgrid::place::Acquired>>,
    pub notes: Vec<String>,
}

/// Why a board could not be claimed.
#[derive(Debug, thiserror::Error)]
pub(super) enum ClaimError {
    #[error(transparent)]
    Lease(#[from] LeaseError),
    #[error(transparent)]
    Health(#[from] HealthError),
    /// The labgrid place could not be acquired (busy past the deadline, coordinator away).
    #[error("{0}")]
    Place(crate::dut::DutError),
    #[error("{0}")]
    Refused(String),
}

/// Whether runs on `board` take its lease: hardware is one at a time; every QEMU run has a QEMU
/// of its own; a labgrid place is locked by its coordinator, across hosts, instead.
pub(super) fn needs_lease(board: &Board) -> bool {
    match board.backend {
        BoardBackend::Hardware(_) => true,
        BoardBackend::Qemu(_) | BoardBackend::Labgrid(_) => false,
    }
}

/// Takes `board` for the run `run_id` of `command`: its lease when it needs one, then its health
/// gate (looked at before waiting too, so a refused board is refused at once).
pub(super) async fn claim(
    board: &Board,
    access: &BoardAccess,
    run_id: &str,
    command: &str,
    cancel: &CancellationToken,
    events: &dyn EventSink,
) -> Result<Claim, ClaimError> {
    let mut claim = Claim::default();
    gate(board, access, events, &mut Vec::new())?;
    if needs_lease(board) {
        let lease = lease::acquire(
            &access.state_dir,
            &board.name,
            Holder::this_process(run_id, command),
            access.lock_timeout,
            cancel,
            events,
        )
        .await?;
        claim.notes.push(lease.info().note());
        claim.lease = Some(lease);
    }
    if let BoardBackend::Labgrid(spec) = &board.backend {
        let (place, waited) = crate::dut::labgrid::place::acquire(
            spec,
            &board.name,
            &access.state_dir,
            Holder::this_process(run_id, command),
            access.lock_timeout,
            cancel,
            events,
        )
        .await
        .map_err(ClaimError::Place)?;
        claim.notes.push(place.note(waited));
        claim.place = Some(place);
    }
    gate(board, access, events, &mut claim.notes)?;
    Ok(claim)
}

/// How `fwfix boards check` finds `board`'s file: by its name when the file is `NAME.toml` in a
/// `boards/` directory (the repository's, or fwfix's own), else by its path.
fn check_arg(board: &Board) -> String {
    let in_boards = board.source.file_stem().and_then(|s| s.to_str()) == Some(&board.name)
        && board.source.parent().and_then(|p| p.file_name()) == Some("boards".as_ref());
    if in_boards || !board.source.is_file() {
        board.name.clone()
    } else {
        crate::dut::board::flash::shell_quote(&board.source.display().to_string())
    }
}

/// Applies the health gate to the board's current state.
fn gate(
    board: &Board,
    access: &BoardAccess,
    events: &dyn EventSink,
    notes: &mut Vec<String>,
) -> Result<(), ClaimError> {
    let record = health::load(&access.state_dir, &board.name)?;
    let Some(refusal) = record.refusal(&check_arg(board)) else {
        return Ok(());
    };
    match access.gate {
        HealthGate::Enforce => Err(ClaimError::Refused(refusal)),
        HealthGate::Force => {
            let text = format!(
                "running on board {} although it is {} (--force)",
                board.name,
                record.describe()
            );
            events.emit(&Event::Message {
                level: Level::Warning,
                text: text.clone(),
            });
            notes.push(text);
            Ok(())
        }
        HealthGate::Check => Ok(()),
    }
}

/// The health a check's report gives the board, and why: the first failing case, the crash, or
/// the error that stopped it. None when the check did not decide anything (it was aborted).
pub(super) fn check_verdict(report: &Report) -> Option<(Health, String)> {
    // A check is a `test` run, whose report says ERROR when it was interrupted.
    if report.final_state == State::Aborted {
        return None;
    }
    match report.status {
        Status::Passed | Status::Success => Some((
            Health::after_check(true),
            format!("health check passed ({} cases)", report.cases.len()),
        )),
        Status::Aborted => None,
        Status::Failed | Status::Error | Status::Failure => {
            let crash = report
                .crash
                .as_ref()
                .map(|c| format!("crash: {}", c.summary));
            let case = report.cases.iter().find_map(|c| {
                let status = failing(c.status)?;
                Some(match c.message.as_deref() {
                    Some(m) if !m.is_empty() => format!("{} {status}: {m}", c.name),
                    Some(_) | None => format!("{} {status}", c.name),
                })
            });
            let reason = match (report.error_class, crash, case) {
                (Some(class), _, _) if class.is_infrastructure() => {
                    format!("{class}: {}", report.message)
                }
                (_, Some(crash), _) => crash,
                (_, None, Some(case)) => case,
                (_, None, None) => report.message.clone(),
            };
            Some((Health::after_check(false), reason))
        }
    }
}

/// The status word of a case that did not pass; None for one that did (or was ignored).
fn failing(status: CaseStatus) -> Option<&'static str> {
    match status {
        CaseStatus::Pass | CaseStatus::Ignore => None,
        CaseStatus::Fail => Some("FAIL"),
        CaseStatus::Crash => Some("CRASH"),
        CaseStatus::Hang => Some("HANG"),
        CaseStatus::Missing => Some("MISSING"),
    }
}

/// The boards `fwfix boards check` without a board checks: those of `repo`'s `boards/` and the
/// shipped ones that have a `[health]` table, by name, and any whose file does not load (its check
/// then fails naming the file, line and column, rather than the board silently going unchecked);
/// and the names of those skipped because they are in maintenance.
pub fn boards_to_check(
    repo: &std::path::Path,
    state_dir: &std::path::Path,
) -> Result<(Vec<String>, Vec<String>), OrchestratorError> {
    let mut check = Vec::new();
    let mut skipped = Vec::new();
    for listed in crate::config::list_boards(repo)? {
        if listed.shadowed {
            continue;
        }
        let Ok(board) = listed.loaded else {
            check.push(listed.name);
            continue;
        };
        if board.health.is_none() {
            continue;
        }
        let in_maintenance =
            health::load(state_dir, &board.name).is_ok_and(|r| r.state == Health::Maintenance);
        if in_maintenance {
            skipped.push(listed.name);
        } else {
            check.push(listed.name);
        }
    }
    Ok((check, skipped))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::ErrorClass;
    use crate::report::Command;
    use crate::results::TestCase;
    use chrono::Utc;

    fn report(status: Status) -> Report {
        Report::new(
            "r1",
            Command::Test,
            status,
            State::Failure,
            Utc::now(),
            Utc::now(),
        )
    }

    fn case(name: &str, status: CaseStatus, message: Option<&str>) -> TestCase {
        TestCase {
            name: name.into(),
            status,
            message: message.map(String::from),
            file: None,
            line: None,
        }
    }

    #[test]
    fn a_passing_check_is_good_and_an_aborted_one_decides_nothing() {
        let mut passed = report(Status::Passed);
        passed.cases.push(case("test_a", CaseStatus::Pass, None));
        assert_eq!(
            check_verdict(&passed),
            Some((Health::Good, "health check passed (1 cases)".into()))
        );
        assert_eq!(check_verdict(&report(Status::Aborted)), None);
        // Ctrl+C, SIGTERM or --deadline during a check: a test run's status is ERROR then.
        let mut interrupted = report(Status::Error);
        interrupted.final_state = State::Aborted;
        interrupted.message = "interrupted".into();
        assert_eq!(check_verdict(&interrupted), None);
    }

    #[test]
    fn a_failed_check_is_bad_with_the_first_failing_case_or_the_infrastructure_error() {
        let mut failed = report(Status::Failed);
        failed.cases.push(case("test_a", CaseStatus::Pass, None));
        failed.cases.push(case(
            "test_crc16_known_vector",
            CaseStatus::Fail,
            Some("Expected 0x29B1 Was 0x0000"),
        ));
        assert_eq!(
            check_verdict(&failed),
            Some((
                Health::Bad,
                "test_crc16_known_vector FAIL: Expected 0x29B1 Was 0x0000".into()
            ))
        );
        let mut infra = report(Status::Error);
        infra.error_class = Some(ErrorClass::FlashFailure);
        infra.message = "flashing with command failed".into();
        assert_eq!(
            check_verdict(&infra),
            Some((
                Health::Bad,
                "FLASH_FAILURE: flashing with command failed".into()
            ))
        );
    }

    #[test]
    fn only_hardware_takes_a_lease() {
        let qemu = crate::config::parse_board(
            "name = \"q\"\nbackend = \"qemu\"\n[qemu]\nmachine = \"mps2-an385\"\n",
            std::path::Path::new("q.toml"),
        )
        .unwrap();
        assert!(!needs_lease(&qemu));
        let hw = crate::config::parse_board(
            "name = \"h\"\nbackend = \"board\"\n[flash]\nmethod = \"command\"\ncommand = \"true\"\n\
             [serial]\nport = \"socket://127.0.0.1:1\"\n",
            std::path::Path::new("h.toml"),
        )
        .unwrap();
        assert!(needs_lease(&hw));
        let place = crate::config::parse_board(
            "name = \"l\"\nbackend = \"labgrid\"\n[labgrid]\nplace = \"p\"\n",
            std::path::Path::new("l.toml"),
        )
        .unwrap();
        // The coordinator locks a place, across hosts.
        assert!(!needs_lease(&place));
    }
}
