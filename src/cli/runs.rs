//! `fwfix runs`: the runs of a repository, newest first.

use super::{fail_early, print_out, Exit, GlobalArgs};
use crate::inspect;
use std::fmt::Write as _;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The firmware repository.
    #[arg(long, default_value = ".")]
    repo: PathBuf,
    /// Show at most N runs (the newest).
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
}

pub fn run(args: Args, global: &GlobalArgs) -> Exit {
    if let Some(why) = crate::rundir::runs_dir_blocked(&args.repo) {
        return fail_early(global, Exit::Usage, &why);
    }
    let mut runs = match inspect::list_runs(&args.repo) {
        Ok(runs) => runs,
        Err(e) => return fail_early(global, Exit::of_inspect(&e), &e.to_string()),
    };
    if let Some(limit) = args.limit {
        runs.truncate(limit);
    }
    let text = if global.json {
        let mut text = String::new();
        for run in &runs {
            let line = serde_json::to_string(run).unwrap_or_default();
            let _ = writeln!(text, "{line}");
        }
        text
    } else if runs.is_empty() {
        format!(
            "no runs in {}\n",
            args.repo.join(crate::rundir::RUNS_DIR).display()
        )
    } else {
        inspect::render::render_runs(&runs, global.color.for_stdout())
    };
    print_out(&text);
    Exit::Success
}
