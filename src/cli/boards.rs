//! `fwfix boards`: the boards and probes this host can use. `probes` lists the debug probes
//! connected now, with the `[probe] selector` that picks each one.

use super::{print_out, Exit, GlobalArgs};
use std::fmt::Write as _;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: BoardsCommand,
}

#[derive(Debug, clap::Subcommand)]
enum BoardsCommand {
    /// List the debug probes connected to this host (probe-rs), with their selectors.
    Probes,
}

pub fn run(args: Args, global: &GlobalArgs) -> Exit {
    match args.command {
        BoardsCommand::Probes => probes(global),
    }
}

fn probes(global: &GlobalArgs) -> Exit {
    let probes = crate::dut::probe::list_probes();
    let mut text = String::new();
    if global.json {
        for p in &probes {
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
        for p in &probes {
            let _ = writeln!(text, "{:<28} {:<12} {}", p.selector(), p.kind, p.identifier);
        }
    }
    print_out(&text);
    Exit::Success
}
