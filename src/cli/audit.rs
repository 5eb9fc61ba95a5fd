//! `fwfix audit RUN`: replays a run's trace through the state machine and checks its evidence.
//! Exit 0 only when the audit finds nothing; 1 with every finding printed; 2 when there is no
//! such run.

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
    let run_dir = match inspect::resolve_run(&args.run, &args.repo) {
        Ok(dir) => dir,
        Err(e) => return fail_early(global, Exit::of_inspect(&e), &e.to_string()),
    };
    let audit = inspect::audit(&run_dir);
    let text = if global.json {
        let line = serde_json::json!({
            "event": "audit",
            "run_dir": run_dir.display().to_string(),
            "ok": audit.ok,
            "steps": audit.steps,
            "findings": audit.findings,
            "notes": audit.notes,
        });
        format!("{line}\n")
    } else {
        inspect::render::render_audit(&audit, &run_dir, global.color.for_stdout())
    };
    print_out(&text);
    if audit.ok {
        Exit::Success
    } else {
        Exit::Failed
    }
}
