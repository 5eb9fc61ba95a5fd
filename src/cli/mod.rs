//! The command line: clap definitions, one file per subcommand, and the exit-code table.

use std::process::ExitCode;

/// Parses the command line, runs the command, and maps the outcome to an exit code.
pub fn main() -> ExitCode {
    ExitCode::from(2)
}
