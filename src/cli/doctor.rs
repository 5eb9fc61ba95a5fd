//! `fwfix doctor`: host tool check with install hints.

use super::{Exit, GlobalArgs};
use std::io::Write;

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args, global: &GlobalArgs) -> Exit {
    let statuses = crate::doctor::check();
    let as_root = nix::unistd::Uid::effective().is_root();
    let install = crate::doctor::install_command(&statuses, as_root);
    let mut out = std::io::stdout().lock();
    let mut text = String::new();
    if global.json {
        let tools: Vec<_> = statuses
            .iter()
            .map(|s| {
                serde_json::json!({
                    "program": s.tool.program,
                    "found": s.found(),
                    "path": s.path.as_ref().map(|p| p.display().to_string()),
                    "version": s.version,
                    "package": s.tool.package,
                    "purpose": s.tool.purpose,
                })
            })
            .collect();
        let line = serde_json::json!({"event": "doctor", "tools": tools, "install": install});
        text.push_str(&format!("{line}\n"));
    } else {
        for s in &statuses {
            let mark = if s.found() { "ok     " } else { "MISSING" };
            let detail = match (&s.path, &s.version) {
                (Some(p), Some(v)) => format!("{} ({v})", p.display()),
                (Some(p), None) => p.display().to_string(),
                (None, _) => format!("needed for: {}", s.tool.purpose),
            };
            text.push_str(&format!("{mark} {:<18} {detail}\n", s.tool.program));
        }
        match &install {
            Some(cmd) => text.push_str(&format!("\nInstall what is missing with:\n  {cmd}\n")),
            None => text.push_str("\nEverything fwfix needs is installed.\n"),
        }
    }
    if out.write_all(text.as_bytes()).is_err() {
        return Exit::Infrastructure;
    }
    if install.is_some() {
        Exit::Infrastructure
    } else {
        Exit::Success
    }
}
