//! `fwfix boards list`: every board fwfix knows of on this host — the repository's `boards/`, the
//! shipped ones, and any other board the state directory has a lease or health file for — with
//! its backend, its health and who holds its lease. Only reads; a file it cannot read is shown
//! as such on the board's row rather than failing the whole listing.

use crate::config::{self, BoardBackend, ConfigError};
use crate::dut::boards_state::{boards_dir, Holder};
use crate::dut::health::{self, Health, HealthRecord};
use crate::dut::lease::{self, LeaseState};
use serde::Serialize;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// One board's row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BoardStatus {
    pub name: String,
    /// `qemu`, `board`, `labgrid`; None for a board known only from the state directory, or
    /// whose file does not load.
    pub backend: Option<&'static str>,
    /// The board file, or `<shipped>/boards/NAME.toml`.
    pub source: Option<String>,
    pub health: HealthRecord,
    pub lease: LeaseView,
    /// Why the board's file does not load (file:line:col and what is wrong), so an operator sees
    /// why the board has no backend and is never checked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A board's lease as the listing shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "lowercase")]
pub enum LeaseView {
    Free,
    /// Held now; `holder` is None while its record is being written.
    Held {
        holder: Option<Holder>,
    },
    /// Free, with a killed holder's record left in it: the next run takes it over.
    Stale {
        holder: Holder,
    },
    /// The lease file could not be looked at.
    Unreadable {
        error: String,
    },
}

impl LeaseView {
    fn of(state_dir: &Path, board: &str) -> LeaseView {
        match lease::probe(state_dir, board) {
            Ok(LeaseState::Free) => LeaseView::Free,
            Ok(LeaseState::Held(holder)) => LeaseView::Held { holder },
            Ok(LeaseState::Stale(holder)) => LeaseView::Stale { holder },
            Err(e) => LeaseView::Unreadable {
                error: e.to_string(),
            },
        }
    }
}

/// The boards of `repo` and the shipped ones (a repository board shadows a shipped one of the
/// same name), then the other boards the state directory knows, by name.
pub fn list_boards(repo: &Path, state_dir: &Path) -> Result<Vec<BoardStatus>, ConfigError> {
    let mut rows = Vec::new();
    let mut seen = BTreeSet::new();
    for listed in config::list_boards(repo)? {
        // Leases and health go by the name inside the file; a file that does not load goes by
        // its file name.
        let name = match &listed.loaded {
            Ok(board) => board.name.clone(),
            Err(_) => listed.name.clone(),
        };
        if listed.shadowed || !seen.insert(name.clone()) {
            continue;
        }
        let backend = listed.loaded.as_ref().ok().map(|b| match b.backend {
            BoardBackend::Qemu(_) => "qemu",
            BoardBackend::Hardware(_) => "board",
            BoardBackend::Labgrid(_) => "labgrid",
        });
        let mut status = row(
            state_dir,
            &name,
            backend,
            Some(listed.source.display().to_string()),
        );
        status.error = listed.loaded.as_ref().err().map(ToString::to_string);
        rows.push(status);
    }
    for name in state_file_boards(state_dir) {
        if seen.insert(name.clone()) {
            rows.push(row(state_dir, &name, None, None));
        }
    }
    Ok(rows)
}

/// What `fwfix boards set|check ARG` means by ARG: first the board whose `name` is ARG (as
/// leases and health call boards) among the listed ones — the repository's `boards/`, fwfix's
/// own, and boards known only from the state directory — else a board file (a path, or
/// `NAME.toml` looked up as `--board` does). Returns the name and the board's file, when known.
pub fn find_board(
    arg: &str,
    repo: &Path,
    state_dir: &Path,
) -> Result<(String, Option<PathBuf>), ConfigError> {
    let path_like = arg.contains('/') || arg.ends_with(".toml");
    if !path_like {
        let rows = list_boards(repo, state_dir)?;
        if let Some(row) = rows.iter().find(|r| r.name == arg) {
            let file = row
                .source
                .as_ref()
                .map(PathBuf::from)
                .filter(|p| p.is_file());
            return Ok((row.name.clone(), file));
        }
    }
    let board = config::resolve_board(arg, repo)?;
    let file = board.source.is_file().then(|| board.source.clone());
    Ok((board.name, file))
}

fn row(
    state_dir: &Path,
    name: &str,
    backend: Option<&'static str>,
    source: Option<String>,
) -> BoardStatus {
    let health = health::load(state_dir, name).unwrap_or_else(|e| HealthRecord {
        reason: e.to_string(),
        ..HealthRecord::unknown(name)
    });
    BoardStatus {
        name: name.to_string(),
        backend,
        source,
        health,
        lease: LeaseView::of(state_dir, name),
        error: None,
    }
}

/// Board names with a `.lock` or `.json` file in `<state>/boards`, in name order.
fn state_file_boards(state_dir: &Path) -> BTreeSet<String> {
    let Ok(entries) = std::fs::read_dir(boards_dir(state_dir)) else {
        return BTreeSet::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let path = entry.path();
            let ext = path.extension()?.to_str()?;
            let stem = path.file_stem()?.to_str()?;
            // The temporary files of an atomic write start with a dot.
            (matches!(ext, "lock" | "json") && !stem.starts_with('.')).then(|| stem.to_string())
        })
        .collect()
}

/// The listing as text: a line per board (name, backend, health, lease), and under a board whose
/// health was set, when and why.
pub fn render_boards(rows: &[BoardStatus]) -> String {
    use std::fmt::Write as _;
    let width = |f: fn(&BoardStatus) -> usize| rows.iter().map(f).max().unwrap_or(0);
    let name_w = width(|r| r.name.len()).max("BOARD".len());
    let backend_w = width(|r| r.backend.unwrap_or("?").len()).max("BACKEND".len());
    let health_w = "maintenance".len();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:name_w$}  {:backend_w$}  {:health_w$}  LEASE",
        "BOARD", "BACKEND", "HEALTH"
    );
    for r in rows {
        let lease = match &r.lease {
            LeaseView::Free => "free".to_string(),
            LeaseView::Held { holder: Some(h) } => format!("held by {}", h.describe()),
            LeaseView::Held { holder: None } => "held".to_string(),
            LeaseView::Stale { holder } => format!(
                "free (stale: {}{})",
                holder.describe(),
                if holder.known_gone() {
                    ", process gone"
                } else {
                    ""
                }
            ),
            LeaseView::Unreadable { error } => format!("unknown: {error}"),
        };
        let _ = writeln!(
            out,
            "{:name_w$}  {:backend_w$}  {:health_w$}  {lease}",
            r.name,
            r.backend.unwrap_or("?"),
            r.health.state.name(),
        );
        if let Some(error) = &r.error {
            let _ = writeln!(out, "{:name_w$}  {error}", "");
        }
        if r.health.state != Health::Unknown {
            let _ = writeln!(out, "{:name_w$}  {}", "", r.health.describe());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holder() -> Holder {
        Holder {
            run_id: "20240501-120304-beef".into(),
            pid: 4242,
            host: "lab1".into(),
            user: "ci".into(),
            command: "test".into(),
            started_at: "2024-05-01T12:03:04Z".parse().unwrap(),
        }
    }

    fn status(name: &str, backend: &'static str, state: Health, lease: LeaseView) -> BoardStatus {
        BoardStatus {
            name: name.into(),
            backend: Some(backend),
            source: None,
            health: HealthRecord {
                state,
                reason: "test_crc16_known_vector FAIL".into(),
                checked_at: "2024-05-02T08:00:00Z".parse().unwrap(),
                run_id: Some("20240502-080000-cafe".into()),
                by: "ci".into(),
                ..HealthRecord::unknown(name)
            },
            lease,
            error: None,
        }
    }

    #[test]
    fn the_listing_shows_health_and_holder_per_board() {
        let text = render_boards(&[
            status(
                "nucleo",
                "board",
                Health::Bad,
                LeaseView::Held {
                    holder: Some(holder()),
                },
            ),
            status("qemu-mps2-an385", "qemu", Health::Unknown, LeaseView::Free),
            status(
                "stm32",
                "board",
                Health::Good,
                LeaseView::Stale { holder: holder() },
            ),
        ]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "BOARD            BACKEND  HEALTH       LEASE");
        assert_eq!(
            lines[1],
            "nucleo           board    bad          held by run 20240501-120304-beef (fwfix test, \
             pid 4242 on host lab1, user ci, since 2024-05-01T12:03:04Z)"
        );
        assert_eq!(
            lines[2],
            "                 bad since 2024-05-02T08:00:00Z (health check \
             20240502-080000-cafe): test_crc16_known_vector FAIL"
        );
        assert_eq!(lines[3], "qemu-mps2-an385  qemu     unknown      free");
        assert!(
            lines[4]
                .starts_with("stm32            board    good         free (stale: run 20240501"),
            "{}",
            lines[4]
        );
        assert_eq!(lines.len(), 6);
    }

    #[test]
    fn the_json_row_names_the_lease_state_and_holder() {
        let row = status(
            "nucleo",
            "board",
            Health::Bad,
            LeaseView::Held {
                holder: Some(holder()),
            },
        );
        let json = serde_json::to_value(&row).unwrap();
        assert_eq!(json["health"]["state"], "bad");
        assert_eq!(json["lease"]["state"], "held");
        assert_eq!(json["lease"]["holder"]["pid"], 4242);
        assert_eq!(json["backend"], "board");
    }
}
