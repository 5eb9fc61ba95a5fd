//! `fwfix doctor`: finds the host tools fwfix drives, reports their versions, and names the exact
//! command that installs whatever is missing. Only looks; never installs anything itself.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A host tool fwfix needs.
#[derive(Debug, Clone, Copy)]
pub struct Tool {
    pub program: &'static str,
    /// What fwfix uses it for.
    pub purpose: &'static str,
    /// The Debian/Ubuntu package that provides it.
    pub package: &'static str,
}

/// The tools the bundled fixtures and the QEMU and GDB backends need.
pub const TOOLS: [Tool; 5] = [
    Tool {
        program: "qemu-system-arm",
        purpose: "runs Cortex-M images (QEMU boards)",
        package: "qemu-system-arm",
    },
    Tool {
        program: "arm-none-eabi-gcc",
        purpose: "builds the bundled fixture firmware",
        package: "gcc-arm-none-eabi",
    },
    Tool {
        program: "gdb-multiarch",
        purpose: "loads images through GDB servers (method = \"gdb\")",
        package: "gdb-multiarch",
    },
    Tool {
        program: "make",
        purpose: "runs the fixture firmware's build",
        package: "make",
    },
    Tool {
        program: "git",
        purpose: "firmware repositories",
        package: "git",
    },
];

/// What was found for one tool.
#[derive(Debug, Clone)]
pub struct ToolStatus {
    pub tool: Tool,
    pub path: Option<PathBuf>,
    /// First line of `--version`.
    pub version: Option<String>,
}

impl ToolStatus {
    pub fn found(&self) -> bool {
        self.path.is_some()
    }
}

/// Checks every tool in [`TOOLS`] on `PATH`.
pub fn check() -> Vec<ToolStatus> {
    let dirs = crate::config::host::program_dirs();
    TOOLS
        .iter()
        .map(|tool| {
            let path = find_program(tool.program, &dirs);
            let version = path.as_deref().and_then(version_of);
            ToolStatus {
                tool: *tool,
                path,
                version,
            }
        })
        .collect()
}

/// The command that installs the packages of the missing tools, or None when nothing is missing.
pub fn install_command(statuses: &[ToolStatus], as_root: bool) -> Option<String> {
    let packages: Vec<&str> = statuses
        .iter()
        .filter(|s| !s.found())
        .map(|s| s.tool.package)
        .collect();
    if packages.is_empty() {
        return None;
    }
    let sudo = if as_root { "" } else { "sudo " };
    Some(format!(
        "{sudo}apt-get update && {sudo}apt-get install -y --no-install-recommends {}",
        packages.join(" ")
    ))
}

/// Looks a program up in `dirs` the way a shell would (a name with a `/` is taken as a path).
pub fn find_program(program: &str, dirs: &[PathBuf]) -> Option<PathBuf> {
    if program.contains('/') {
        let p = PathBuf::from(program);
        return is_executable(&p).then_some(p);
    }
    dirs.iter()
        .map(|d| d.join(program))
        .find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

fn version_of(path: &Path) -> Option<String> {
    let out = Command::new(path).arg("--version").output().ok()?;
    let text = if out.stdout.is_empty() {
        out.stderr
    } else {
        out.stdout
    };
    String::from_utf8_lossy(&text)
        .lines()
        .find(|l| !l.trim().is_empty())
        .map(|l| l.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(program: &'static str, found: bool) -> ToolStatus {
        let tool = TOOLS
            .iter()
            .copied()
            .find(|t| t.program == program)
            .unwrap();
        ToolStatus {
            tool,
            path: found.then(|| PathBuf::from("/usr/bin").join(program)),
            version: None,
        }
    }

    #[test]
    fn install_command_names_only_missing_packages() {
        let s = [
            status("qemu-system-arm", false),
            status("arm-none-eabi-gcc", false),
            status("git", true),
        ];
        assert_eq!(
            install_command(&s, false).unwrap(),
            "sudo apt-get update && sudo apt-get install -y --no-install-recommends \
             qemu-system-arm gcc-arm-none-eabi"
        );
        assert!(!install_command(&s, true).unwrap().contains("sudo"));
        assert_eq!(install_command(&[status("git", true)], false), None);
    }

    #[test]
    fn finds_programs_on_the_given_path_only() {
        let dirs = vec![PathBuf::from("/bin"), PathBuf::from("/usr/bin")];
        assert!(find_program("sh", &dirs).is_some());
        assert!(find_program("fwfix-no-such-program", &dirs).is_none());
        assert!(find_program("/bin/sh", &[]).is_some());
    }
}
