//! `fwfix report RUN`: renders report.md, junit.xml and report.html again from report.json.

use super::{fail_early, print_out, Exit, GlobalArgs};
use crate::inspect;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A run directory, or a run id (or a unique prefix of one) in the repository's .fwfix/runs/.
    run: String,
    /// The firmware repository whose runs a run id is looked up in.
    #[arg(long, default_value = ".")]
    repo: PathBuf,
}

pub fn run(args: Args, global: &GlobalArgs) -> Exit {
    let (run_dir, written) = match inspect::resolve_run(&args.run, &args.repo).and_then(|dir| {
        let written = inspect::rerender(&dir)?;
        Ok((dir, written))
    }) {
        Ok(done) => done,
        Err(e) => return fail_early(global, Exit::of_inspect(&e), &e.to_string()),
    };
    let text = if global.json {
        let line = serde_json::json!({
            "event": "report",
            "run_dir": run_dir.display().to_string(),
            "written": written.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
        });
        format!("{line}\n")
    } else {
        written
            .iter()
            .map(|path| format!("wrote {}\n", path.display()))
            .collect()
    };
    print_out(&text);
    Exit::Success
}
