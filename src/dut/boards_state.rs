//! What fwfix keeps about each hardware board on this host, under `<state>/boards/` (lease files
//! and health records), and who holds a board. Plain data, below both `lease` and `health` and
//! the events that name them.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// `<state>/boards`: lease files and health records.
pub fn boards_dir(state_dir: &Path) -> PathBuf {
    state_dir.join("boards")
}

/// Who holds (or held) a lease.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Holder {
    pub run_id: String,
    pub pid: u32,
    pub host: String,
    pub user: String,
    /// `test`, `run`, `bisect`, `boards check`.
    pub command: String,
    pub started_at: DateTime<Utc>,
}

impl Holder {
    /// This process, for the run `run_id` of `command`.
    pub fn this_process(run_id: &str, command: &str) -> Holder {
        Holder {
            run_id: run_id.to_string(),
            pid: std::process::id(),
            host: crate::process::host_name(),
            user: crate::process::login_name(),
            command: command.to_string(),
            started_at: Utc::now(),
        }
    }

    /// `run R (fwfix test, pid N on host H, user U, since T)`.
    pub fn describe(&self) -> String {
        format!(
            "run {} (fwfix {}, pid {} on host {}, user {}, since {})",
            self.run_id,
            self.command,
            self.pid,
            self.host,
            self.user,
            self.started_at.to_rfc3339_opts(SecondsFormat::Secs, true)
        )
    }

    /// Whether the holder's process is known to be gone: only a process on this host can be
    /// looked at.
    pub fn known_gone(&self) -> bool {
        self.host == crate::process::host_name() && !crate::process::alive(self.pid)
    }
}
