//! Board health, as LAVA keeps it: each board is good, bad, in maintenance, or unknown (never
//! checked), with when and why it last changed. The state lives in `<state>/boards/<board>.json`,
//! shared by every fwfix on the host, and is written atomically.
//!
//! Only a health check (`fwfix boards check`) and an operator (`fwfix boards set`) change it; a
//! normal run that hits an infrastructure error leaves it alone, because one flaky flash says less
//! than a known-good image failing. A run refuses a board that is bad or in maintenance unless it
//! is forced. This module reads and writes the state and words the refusal; it runs nothing.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::{Path, PathBuf};

/// A board's health.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[derive(schemars::JsonSchema)]
pub enum Health {
    /// Its last health check passed, or an operator said so.
    Good,
    /// Its last health check failed, or an operator said so: runs refuse it.
    Bad,
    /// Taken out of service by an operator: runs refuse it, `boards check` without a board skips it.
    Maintenance,
    /// Never checked.
    Unknown,
}

impl Health {
    pub fn name(self) -> &'static str {
        match self {
            Health::Good => "good",
            Health::Bad => "bad",
            Health::Maintenance => "maintenance",
            Health::Unknown => "unknown",
        }
    }

    /// Whether a run must refuse a board in this state (unless forced).
    pub fn refuses_runs(self) -> bool {
        match self {
            Health::Bad | Health::Maintenance => true,
            Health::Good | Health::Unknown => false,
        }
    }

    /// The state a health check leaves behind.
    pub fn after_check(passed: bool) -> Health {
        if passed {
            Health::Good
        } else {
            Health::Bad
        }
    }
}

impl fmt::Display for Health {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Health {
    type Err = String;

    fn from_str(text: &str) -> Result<Health, String> {
        match text {
            "good" => Ok(Health::Good),
            "bad" => Ok(Health::Bad),
            "maintenance" => Ok(Health::Maintenance),
            other => Err(format!(
                "`{other}` is not a health state an operator can set (good, bad, maintenance)"
            )),
        }
    }
}

/// `<state>/boards/<board>.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HealthRecord {
    pub board: String,
    pub state: Health,
    /// Why: the check's first failing case, crash or infrastructure error, or the operator's words.
    pub reason: String,
    /// When the state was last set, by a check or an operator.
    pub checked_at: DateTime<Utc>,
    /// The run of the health check that set it; None when an operator set it.
    pub run_id: Option<String>,
    /// Who set it (login name).
    #[serde(default)]
    pub by: String,
}

impl HealthRecord {
    /// The record of a board nobody has checked yet.
    pub fn unknown(board: &str) -> HealthRecord {
        HealthRecord {
            board: board.to_string(),
            state: Health::Unknown,
            reason: "never checked".to_string(),
            checked_at: DateTime::<Utc>::UNIX_EPOCH,
            run_id: None,
            by: String::new(),
        }
    }

    /// `bad since 2024-05-01T12:03:04Z (run R): reason`.
    pub fn describe(&self) -> String {
        if self.state == Health::Unknown {
            return format!("{} ({})", self.state, self.reason);
        }
        let source = match &self.run_id {
            Some(run) => format!("health check {run}"),
            None if self.by.is_empty() => "set by an operator".to_string(),
            None => format!("set by {}", self.by),
        };
        let state = match self.state {
            Health::Maintenance => "in maintenance",
            Health::Good | Health::Bad | Health::Unknown => self.state.name(),
        };
        format!(
            "{state} since {} ({source}): {}",
            self.checked_at.to_rfc3339_opts(SecondsFormat::Secs, true),
            self.reason
        )
    }

    /// Why a run refuses this board, and how to clear it; None when the state lets runs in.
    /// `file` is how `fwfix boards check` finds the board's file (its name, or its path when the
    /// name does not find it); `boards set` takes the name the health state goes by.
    pub fn refusal(&self, file: &str) -> Option<String> {
        self.state.refuses_runs().then(|| {
            format!(
                "board {board} is {what}; run `fwfix boards check {file}` to check it again, or \
                 `fwfix boards set {board} good --reason TEXT` to clear it (or pass --force)",
                board = self.board,
                what = self.describe(),
            )
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum HealthError {
    #[error("cannot {doing} the health state {}: {source}", path.display())]
    Io {
        doing: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "the health state {} is not valid: {message}; fix it, or remove it to mark the board unknown",
        path.display()
    )]
    Corrupt { path: PathBuf, message: String },
}

/// Where `board`'s health state is kept.
pub fn record_path(state_dir: &Path, board: &str) -> PathBuf {
    super::boards_state::boards_dir(state_dir).join(format!("{board}.json"))
}

/// `board`'s health; unknown when it has no state file.
pub fn load(state_dir: &Path, board: &str) -> Result<HealthRecord, HealthError> {
    let path = record_path(state_dir, board);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(HealthRecord::unknown(board))
        }
        Err(source) => {
            return Err(HealthError::Io {
                doing: "read",
                path,
                source,
            })
        }
    };
    serde_json::from_str(&text).map_err(|e| HealthError::Corrupt {
        path,
        message: e.to_string(),
    })
}

/// Writes `record` whole (a reader never sees half a file).
pub fn store(state_dir: &Path, record: &HealthRecord) -> Result<(), HealthError> {
    let path = record_path(state_dir, &record.board);
    let io = |source| HealthError::Io {
        doing: "write",
        path: path.clone(),
        source,
    };
    std::fs::create_dir_all(super::boards_state::boards_dir(state_dir)).map_err(io)?;
    let bytes = serde_json::to_vec_pretty(record).map_err(|e| io(std::io::Error::other(e)))?;
    crate::rundir::write_atomic(&path, &bytes).map_err(io)
}

/// An operator sets `board`'s health (`fwfix boards set`): now, by the user running fwfix.
pub fn set(
    state_dir: &Path,
    board: &str,
    state: Health,
    reason: &str,
) -> Result<HealthRecord, HealthError> {
    let record = HealthRecord {
        board: board.to_string(),
        state,
        reason: reason.to_string(),
        checked_at: Utc::now(),
        run_id: None,
        by: crate::process::login_name(),
    };
    store(state_dir, &record)?;
    Ok(record)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(state: Health, run_id: Option<&str>) -> HealthRecord {
        HealthRecord {
            board: "nucleo".into(),
            state,
            reason: "test_crc16_known_vector FAIL".into(),
            checked_at: "2024-05-01T12:03:04Z".parse().unwrap(),
            run_id: run_id.map(String::from),
            by: "lab".into(),
        }
    }

    #[test]
    fn a_check_marks_good_or_bad_and_only_bad_and_maintenance_refuse() {
        assert_eq!(Health::after_check(true), Health::Good);
        assert_eq!(Health::after_check(false), Health::Bad);
        assert!(Health::Bad.refuses_runs());
        assert!(Health::Maintenance.refuses_runs());
        assert!(!Health::Good.refuses_runs());
        assert!(!Health::Unknown.refuses_runs());
        assert_eq!(record(Health::Good, None).refusal("nucleo"), None);
    }

    #[test]
    fn operators_set_good_bad_or_maintenance_but_not_unknown() {
        assert_eq!("maintenance".parse::<Health>(), Ok(Health::Maintenance));
        assert_eq!("good".parse::<Health>(), Ok(Health::Good));
        assert!("unknown".parse::<Health>().is_err());
        assert!("Good".parse::<Health>().is_err());
    }

    #[test]
    fn the_refusal_names_state_reason_time_and_the_way_out() {
        let text = record(Health::Bad, Some("20240501-120304-beef"))
            .refusal("nucleo")
            .unwrap();
        assert!(
            text.contains("board nucleo is bad since 2024-05-01T12:03:04Z"),
            "{text}"
        );
        assert!(text.contains("health check 20240501-120304-beef"), "{text}");
        assert!(text.contains("test_crc16_known_vector FAIL"), "{text}");
        assert!(text.contains("fwfix boards check nucleo"), "{text}");
        assert!(text.contains("fwfix boards set nucleo good"), "{text}");
        let manual = record(Health::Maintenance, None).describe();
        assert!(manual.contains("in maintenance since"), "{manual}");
        assert!(manual.contains("set by lab"), "{manual}");
    }

    #[test]
    fn state_files_round_trip_and_a_missing_one_is_unknown() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(load(dir.path(), "nucleo").unwrap().state, Health::Unknown);
        let r = record(Health::Bad, Some("r1"));
        store(dir.path(), &r).unwrap();
        assert_eq!(load(dir.path(), "nucleo").unwrap(), r);
        std::fs::write(record_path(dir.path(), "nucleo"), "{").unwrap();
        let e = load(dir.path(), "nucleo").unwrap_err().to_string();
        assert!(e.contains("nucleo.json is not valid"), "{e}");
    }
}
