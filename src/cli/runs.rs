//! `fwfix runs`: the runs of a repository, newest first; `fwfix runs prune` removes what
//! finished runs keep.

use super::{fail_early, print_out, Exit, GlobalArgs};
use crate::inspect;
use crate::orchestrator::{self, PruneOptions};
use std::fmt::Write as _;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    sub: Option<Sub>,
    /// The firmware repository.
    #[arg(long, default_value = ".")]
    repo: PathBuf,
    /// Show at most N runs (the newest).
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
}

#[derive(Debug, clap::Subcommand)]
enum Sub {
    /// Remove finished runs: their directory, worktree and snapshot refs (refs/fwfix/<run-id>/,
    /// which hold your files); runs still going are never touched, runs that can still be
    /// resumed only with --resumable.
    Prune(PruneArgs),
}

#[derive(Debug, clap::Args)]
struct PruneArgs {
    /// The firmware repository.
    #[arg(long, default_value = ".")]
    repo: PathBuf,
    /// Only runs started longer ago than this, e.g. `7d`, `12h`.
    #[arg(long, value_name = "DURATION", value_parser = super::parse_duration)]
    older_than: Option<std::time::Duration>,
    /// Also prune runs that could still be resumed (ABORTED, FAILURE, killed).
    #[arg(long)]
    resumable: bool,
    /// List what would be pruned, and remove nothing.
    #[arg(long)]
    dry_run: bool,
}

pub fn run(args: Args, global: &GlobalArgs) -> Exit {
    if let Some(Sub::Prune(prune)) = args.sub {
        return run_prune(prune, global);
    }
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

fn run_prune(args: PruneArgs, global: &GlobalArgs) -> Exit {
    let opts = PruneOptions {
        repo: args.repo,
        older_than: args.older_than,
        resumable: args.resumable,
        dry_run: args.dry_run,
    };
    let entries = match orchestrator::prune(&opts, chrono::Utc::now()) {
        Ok(entries) => entries,
        Err(e) => return fail_early(global, Exit::of_error(&e), &e.to_string()),
    };
    let mut text = String::new();
    for e in &entries {
        if global.json {
            let _ = writeln!(text, "{}", serde_json::to_string(e).unwrap_or_default());
            continue;
        }
        let verb = match (e.pruned, opts.dry_run) {
            (true, true) => "would prune",
            (true, false) => "pruned",
            (false, _) => "kept",
        };
        let refs = match e.refs.len() {
            0 => String::new(),
            1 => ", 1 snapshot ref".to_string(),
            n => format!(", {n} snapshot refs"),
        };
        let _ = writeln!(text, "{verb} {} ({}): {}{refs}", e.id, e.status, e.reason);
    }
    if entries.is_empty() && !global.json {
        text.push_str("no runs to prune\n");
    }
    print_out(&text);
    Exit::Success
}
