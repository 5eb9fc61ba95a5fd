//! The errors that stop a command before its state machine starts, or break its records: one
//! type for every orchestrator command, mapped to an exit code in `cli::exit`.

use crate::config::ConfigError;
use std::path::PathBuf;

/// Errors that stop a command before its state machine starts, or break its records.
#[derive(Debug, thiserror::Error)]
pub enum OrchestratorError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("{0}")]
    Usage(String),
    #[error("cannot write the run directory {}: {source}", path.display())]
    RunDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("internal error: {0}")]
    Internal(String),
    /// The board could not be claimed (busy past --lock-timeout, bad or in maintenance) before
    /// a resumed run went on; the run is left as it was.
    #[error("{0}; the run is left as it was: resume it once the board is free")]
    Board(String),
    /// Interrupted before the resumed run went on; the run is left as it was.
    #[error("{0}")]
    Interrupted(String),
}
