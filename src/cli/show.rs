//! `fwfix show RUN`: a run's timeline, then its summary.

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
    let timeline = match inspect::resolve_run(&args.run, &args.repo)
        .and_then(|run_dir| inspect::timeline(&run_dir))
    {
        Ok(timeline) => timeline,
        Err(e) => return fail_early(global, Exit::of_inspect(&e), &e.to_string()),
    };
    if global.json {
        let line = serde_json::to_string(&timeline).unwrap_or_default();
        print_out(&format!("{line}\n"));
        return Exit::Success;
    }
    let color = global.color.for_stdout();
    print_out(&inspect::render::render_timeline(&timeline, color));
    if let Some(report) = &timeline.report {
        crate::ui::print_summary(report, &timeline.run_dir, global.color);
    }
    Exit::Success
}
