//! `fwfix graph`: prints the state machine from the transition table itself.

use super::Exit;
use std::io::Write;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Graphviz DOT instead of Mermaid.
    #[arg(long)]
    dot: bool,
}

pub fn run(args: Args) -> Exit {
    let text = if args.dot {
        crate::machine::dot()
    } else {
        crate::machine::mermaid()
    };
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()) {
        Ok(()) => Exit::Success,
        Err(_) => Exit::Infrastructure,
    }
}
