//! `fwfix validate FILE...`: checks board and profile files without running anything.

use super::{Exit, GlobalArgs};
use crate::config::Validated;
use std::io::Write;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Board or profile files.
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

pub fn run(args: Args, global: &GlobalArgs) -> Exit {
    let mut exit = Exit::Success;
    let mut out = std::io::stdout().lock();
    for file in &args.files {
        let (ok, text) = match crate::config::validate_file(file) {
            Ok(Validated::Board(b)) => (true, format!("ok: {} (board {})", file.display(), b.name)),
            Ok(Validated::Profile(p)) => {
                (true, format!("ok: {} (profile {})", file.display(), p.name))
            }
            Err(e) => {
                exit = Exit::Usage;
                (false, e.to_string())
            }
        };
        let written = if global.json {
            let line = serde_json::json!({
                "event": "validated", "file": file.display().to_string(), "ok": ok, "message": text,
            });
            writeln!(out, "{line}")
        } else if ok {
            writeln!(out, "{text}")
        } else {
            let mut err = std::io::stderr().lock();
            writeln!(err, "error: {}", crate::report::visible(&text))
        };
        if written.is_err() {
            return Exit::Infrastructure;
        }
    }
    exit
}
