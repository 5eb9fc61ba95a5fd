//! Resolved configuration: what the rest of fwfix uses. Built from the raw TOML by `load`; by the
//! time a value is here it has been checked (paths relative, durations positive, names known).

use std::path::PathBuf;
use std::time::Duration;

/// A board definition (`boards/NAME.toml`).
#[derive(Debug, Clone, PartialEq)]
pub struct Board {
    pub name: String,
    /// The file it was loaded from.
    pub source: PathBuf,
    pub backend: BoardBackend,
    pub power: Option<PowerSpec>,
    pub health: Option<HealthSpec>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum BoardBackend {
    Qemu(QemuSpec),
    Hardware(HardwareSpec),
    Labgrid(LabgridSpec),
}

/// `[qemu]`
#[derive(Debug, Clone, PartialEq)]
pub struct QemuSpec {
    /// Program name or path, default `qemu-system-arm`.
    pub binary: String,
    pub machine: String,
    pub cpu: Option<String>,
    pub extra_args: Vec<String>,
}

/// `backend = "board"`: how the image gets onto the target, and where its console is.
#[derive(Debug, Clone, PartialEq)]
pub struct HardwareSpec {
    pub flash: FlashSpec,
    pub console: ConsoleSpec,
}

#[derive(Debug, Clone, PartialEq)]
pub enum FlashSpec {
    ProbeRs(ProbeSpec),
    Gdb(GdbSpec),
    /// A flasher command line with `{elf}`, `{bin}`, `{hex}` placeholders, run with `sh -c`.
    Command {
        command: String,
        timeout: Duration,
    },
}

/// `[probe]`
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeSpec {
    pub chip: String,
    /// `VID:PID[:SERIAL]`
    pub selector: Option<String>,
    pub protocol: Option<String>,
    pub speed_khz: Option<u32>,
    /// Use the RTT up channel as the console.
    pub rtt: bool,
}

/// `[gdb]`
#[derive(Debug, Clone, PartialEq)]
pub struct GdbSpec {
    /// `HOST:PORT` of the GDB server.
    pub remote: String,
    /// Program name or path, default `gdb-multiarch`.
    pub gdb: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ConsoleSpec {
    /// `[serial]`: a device path or `socket://HOST:PORT`.
    Serial { port: String, baud: u32 },
    /// The probe's RTT up channel.
    Rtt,
}

/// `[labgrid]`
#[derive(Debug, Clone, PartialEq)]
pub struct LabgridSpec {
    pub place: Option<String>,
    pub tags: Vec<String>,
}

/// `[power]`: commands run with `sh -c`.
#[derive(Debug, Clone, PartialEq)]
pub struct PowerSpec {
    pub on: Option<String>,
    pub off: Option<String>,
    pub cycle: Option<String>,
}

/// `[health]`: the known-good profile that checks the board.
#[derive(Debug, Clone, PartialEq)]
pub struct HealthSpec {
    pub profile: String,
}

/// A test profile (`profiles/NAME.toml`).
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    pub name: String,
    pub source: PathBuf,
    pub build: BuildSpec,
    pub test: TestSpec,
    pub goal: GoalSpec,
    pub limits: LoopSpec,
    pub policy: PolicySpec,
}

/// `[build]`
#[derive(Debug, Clone, PartialEq)]
pub struct BuildSpec {
    /// Run with `sh -c`.
    pub command: String,
    /// Relative to the repository root.
    pub cwd: PathBuf,
    /// The ELF the build produces, relative to the repository root.
    pub artifact: PathBuf,
    pub timeout: Duration,
}

/// `[test]`
#[derive(Debug, Clone, PartialEq)]
pub struct TestSpec {
    pub harness: Harness,
    /// Firmware that prints no verdict by then is a HANG.
    pub timeout: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Harness {
    Unity,
    Ztest,
    Regex,
}

/// `[goal]`
#[derive(Debug, Clone, PartialEq)]
pub struct GoalSpec {
    /// Empty: every test that fails at baseline.
    pub fail_to_pass: Vec<String>,
    pub confirm_runs: u32,
}

/// `[loop]`
#[derive(Debug, Clone, PartialEq)]
pub struct LoopSpec {
    pub max_iterations: u32,
    pub no_progress_limit: u32,
}

/// `[policy]`
#[derive(Debug, Clone, PartialEq)]
pub struct PolicySpec {
    pub allow: Vec<String>,
    pub deny: Vec<String>,
    pub max_changed_lines: u32,
}
