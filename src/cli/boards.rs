//! `fwfix boards`: the boards of this host. `list` shows each one's backend, health and lease
//! holder; `check [BOARD]` runs a board's `[health]` profile and records the verdict; `set`
//! lets an operator mark a board good, bad or in maintenance; `probes` lists the debug probes
//! connected now, with the `[probe] selector` that picks each one. Each subcommand is one
//! variant of [`Sub`].

use super::{fail_early, print_out, Exit, GlobalArgs, StateArgs};
use crate::dut::health::{self, Health};
use crate::dut::probe::ProbeInfo;
use crate::events::{Event, Level};
use crate::orchestrator::{self, CheckOptions};
use std::fmt::Write as _;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    sub: Sub,
}

#[derive(Debug, clap::Subcommand)]
enum Sub {
    /// Every known board: backend, health (good, bad, maintenance, unknown) and lease holder.
    List(ListArgs),
    /// Run a board's `[health]` profile under its lease and record the verdict as its health;
    /// without BOARD, every board with a `[health]` table that is not in maintenance.
    Check(CheckArgs),
    /// Set a board's health by hand: `maintenance` takes it out of service, `good` puts it back.
    Set(SetArgs),
    /// List the debug probes connected to this host (probe-rs), with their selectors.
    Probes,
}

#[derive(Debug, clap::Args)]
struct ListArgs {
    /// The firmware repository whose boards/ are listed beside the shipped ones.
    #[arg(long, default_value = ".")]
    repo: PathBuf,
    #[command(flatten)]
    state: StateArgs,
}

#[derive(Debug, clap::Args)]
struct CheckArgs {
    /// Board file, or a board name looked up in the repository's boards/ then fwfix's own.
    board: Option<String>,
    /// The firmware repository that builds the health profile's image.
    #[arg(long, default_value = ".")]
    repo: PathBuf,
    /// How long to wait for a board another run holds, e.g. `30s`, `5m`; `0` does not wait.
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = super::parse_wait)]
    lock_timeout: std::time::Duration,
    #[command(flatten)]
    state: StateArgs,
}

#[derive(Debug, clap::Args)]
struct SetArgs {
    /// Board file, or a board name looked up in the repository's boards/ then fwfix's own.
    board: String,
    /// good, bad or maintenance.
    #[arg(value_parser = parse_health)]
    health: Health,
    /// Why, for whoever finds the board in this state.
    #[arg(long)]
    reason: Option<String>,
    /// The firmware repository whose boards/ BOARD is looked up in.
    #[arg(long, default_value = ".")]
    repo: PathBuf,
    #[command(flatten)]
    state: StateArgs,
}

fn parse_health(text: &str) -> Result<Health, String> {
    text.parse()
}

pub fn run(args: Args, global: &GlobalArgs) -> Exit {
    match args.sub {
        Sub::List(args) => list(args, global),
        Sub::Check(args) => check(args, global),
        Sub::Set(args) => set(args, global),
        Sub::Probes => probes(global),
    }
}

fn list(args: ListArgs, global: &GlobalArgs) -> Exit {
    let state_dir = match args.state.dir() {
        Ok(dir) => dir,
        Err(e) => return fail_early(global, Exit::Usage, &e),
    };
    let rows = match crate::inspect::list_boards(&args.repo, &state_dir) {
        Ok(rows) => rows,
        Err(e) => return fail_early(global, Exit::Usage, &e.to_string()),
    };
    let text = if global.json {
        let mut text = String::new();
        for row in &rows {
            let _ = writeln!(text, "{}", serde_json::to_string(row).unwrap_or_default());
        }
        text
    } else {
        crate::inspect::render_boards(&rows)
    };
    print_out(&text);
    Exit::Success
}

fn check(args: CheckArgs, global: &GlobalArgs) -> Exit {
    let state_dir = match args.state.dir() {
        Ok(dir) => dir,
        Err(e) => return fail_early(global, Exit::Usage, &e),
    };
    let boards = match args.board {
        // A board named as leases and health name it is checked from its file.
        Some(board) => match crate::inspect::find_board(&board, &args.repo, &state_dir) {
            Ok((_, Some(file))) => vec![file.display().to_string()],
            Ok((_, None)) | Err(_) => vec![board],
        },
        None => match orchestrator::boards_to_check(&args.repo, &state_dir) {
            Ok((check, skipped)) => {
                let sink = super::sink(global);
                for name in skipped {
                    sink.emit(&Event::Message {
                        level: Level::Warning,
                        text: format!("board {name} is in maintenance: not checked"),
                    });
                }
                if check.is_empty() {
                    drop(sink);
                    return fail_early(
                        global,
                        Exit::Usage,
                        "no board to check: none of the repository's boards/ or the shipped \
                         ones has a [health] table (or all are in maintenance)",
                    );
                }
                check
            }
            Err(e) => return fail_early(global, Exit::of_error(&e), &e.to_string()),
        },
    };
    let mut exits = Vec::new();
    for board in boards {
        let opts = CheckOptions {
            repo: args.repo.clone(),
            board: board.clone(),
            state_dir: state_dir.clone(),
            lock_timeout: args.lock_timeout,
        };
        let exit = super::execute(global, |sink, cancel| {
            Box::pin(orchestrator::check_board(opts, sink, cancel))
        });
        if !global.json {
            print_verdict(&board, &args.repo, &state_dir);
        }
        exits.push(exit);
        if exit == Exit::Aborted {
            break;
        }
    }
    Exit::worst(exits)
}

/// `board hw: bad since ...: reason`, after a check that got as far as recording a verdict.
fn print_verdict(board: &str, repo: &std::path::Path, state_dir: &std::path::Path) {
    let Ok(board) = crate::config::resolve_board(board, repo) else {
        return;
    };
    if let Ok(record) = health::load(state_dir, &board.name) {
        print_out(&format!("board {}: {}\n", record.board, record.describe()));
    }
}

fn set(args: SetArgs, global: &GlobalArgs) -> Exit {
    let state_dir = match args.state.dir() {
        Ok(dir) => dir,
        Err(e) => return fail_early(global, Exit::Usage, &e),
    };
    let name = match crate::inspect::find_board(&args.board, &args.repo, &state_dir) {
        Ok((name, _)) => name,
        Err(e) => return fail_early(global, Exit::Usage, &e.to_string()),
    };
    let reason = args
        .reason
        .unwrap_or_else(|| format!("set to {} with fwfix boards set", args.health));
    match health::set(&state_dir, &name, args.health, &reason) {
        Ok(record) => {
            if global.json {
                super::sink(global).emit(&Event::BoardHealth {
                    board: record.board,
                    state: record.state,
                    reason: record.reason,
                });
            } else {
                print_out(&format!("board {}: {}\n", record.board, record.describe()));
            }
            Exit::Success
        }
        Err(e) => fail_early(global, Exit::of_health(&e), &e.to_string()),
    }
}

fn probes(global: &GlobalArgs) -> Exit {
    print_out(&probe_listing(
        &crate::dut::probe::list_probes(),
        global.json,
    ));
    Exit::Success
}

/// What `fwfix boards probes` prints for `probes`: one line each with its selector, or a JSON
/// object per line.
fn probe_listing(probes: &[ProbeInfo], json: bool) -> String {
    let mut text = String::new();
    if json {
        for p in probes {
            let line = serde_json::json!({
                "event": "probe",
                "identifier": p.identifier,
                "selector": p.selector(),
                "kind": p.kind,
            });
            let _ = writeln!(text, "{line}");
        }
    } else if probes.is_empty() {
        text.push_str("no debug probes found\n");
    } else {
        for p in probes {
            let _ = writeln!(text, "{:<28} {:<12} {}", p.selector(), p.kind, p.identifier);
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dut::probe::fake::{FakeDriver, FakeScript};
    use crate::dut::probe::ProbeDriver;

    /// Two probes through the fake driver (no debug probe can exist on a test machine): each
    /// listed with the selector a board file takes.
    #[test]
    fn the_probe_listing_shows_each_probes_selector() {
        let mut driver = FakeDriver::new(FakeScript::default());
        let mut second = driver.probes[0].clone();
        second.serial = None;
        second.kind = "CMSIS-DAP".into();
        driver.probes.push(second);
        let probes = driver.list();
        assert_eq!(
            probe_listing(&probes, false),
            "0483:374b:FAKE0001           ST-LINK      Fake STLink\n\
             0483:374b                    CMSIS-DAP    Fake STLink\n"
        );
        let json: Vec<serde_json::Value> = probe_listing(&probes, true)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(json.len(), 2);
        assert_eq!(json[0]["event"], "probe");
        assert_eq!(json[0]["selector"], "0483:374b:FAKE0001");
        assert_eq!(json[1]["kind"], "CMSIS-DAP");
        assert_eq!(probe_listing(&[], false), "no debug probes found\n");
    }
}
