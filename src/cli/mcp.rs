//! `fwfix mcp`: serves fwfix's tools over the Model Context Protocol on stdin/stdout (see
//! [`crate::mcp`]). stdout carries protocol messages only; a problem starting or ending the session
//! goes to stderr.

use super::Exit;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Register fwfix with an MCP-capable agent as a stdio server: command `fwfix`, args [\"mcp\"]. \
Runs started through it are governed as on the command line: the tree is restored whatever \
happens, and a cancelled call aborts its run.")]
pub struct Args {}

pub fn run(_args: Args) -> Exit {
    let rt = match super::runtime() {
        Ok(rt) => rt,
        Err(e) => return report(Exit::Infrastructure, &e.to_string()),
    };
    let served = rt.block_on(crate::mcp::serve_stdio());
    rt.shutdown_timeout(std::time::Duration::from_millis(200));
    match served {
        Ok(()) => Exit::Success,
        Err(e) => report(Exit::Infrastructure, &e.to_string()),
    }
}

/// An error of the session itself, on stderr: stdout belongs to the protocol.
fn report(exit: Exit, message: &str) -> Exit {
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr().lock(),
        "error: {}",
        crate::report::visible(message)
    );
    exit
}
