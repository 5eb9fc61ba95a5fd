//! Resolved configuration: what the rest of fwfix uses. Built from the raw TOML by `resolve`; by
//! the time a value is here it has been checked (paths relative, durations positive, names known).
//! Nothing here reads files or the environment.

use crate::config::placeholder;
use crate::machine::{ErrorClass, State};
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// A board definition (`boards/NAME.toml`).
#[derive(Debug, Clone, PartialEq)]
pub struct Board {
    /// Letters, digits, `.`, `_`, `-`, starting with a letter or digit: safe to expand into a
    /// shell command or a path component.
    pub name: String,
    /// The file it was loaded from; `<shipped>/boards/NAME.toml` for a board shipped with fwfix.
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

impl Board {
    /// What `{machine}` expands to: the QEMU machine for a QEMU board, the board's name otherwise.
    pub fn machine(&self) -> &str {
        match &self.backend {
            BoardBackend::Qemu(qemu) => &qemu.machine,
            BoardBackend::Hardware(_) | BoardBackend::Labgrid(_) => &self.name,
        }
    }
}

/// `[qemu]`
#[derive(Debug, Clone, PartialEq)]
pub struct QemuSpec {
    /// Program name or path, default `qemu-system-arm`.
    pub binary: String,
    /// Same character set as a board name, plus `,` and `=` for machine options.
    pub machine: String,
    pub cpu: Option<String>,
    pub extra_args: Vec<String>,
}

/// `backend = "board"`: how the image gets onto the target, and where its console is.
#[derive(Debug, Clone, PartialEq)]
pub struct HardwareSpec {
    pub flash: FlashSpec,
    /// `[flash] timeout_s`, default 120 s: a flash that takes longer is a FLASH_FAILURE.
    pub flash_timeout: Duration,
    pub console: ConsoleSpec,
    /// `[flash] reset_command`: run with `sh -c` to reset the target so the image starts from
    /// its first instruction with the console already open (after a command flash; before a gdb
    /// one). Its timeout is [`HardwareSpec::flash_timeout`].
    pub reset_command: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum FlashSpec {
    ProbeRs(ProbeSpec),
    Gdb(GdbSpec),
    /// A flasher command line with `{elf}`, `{bin}`, `{hex}` placeholders (see
    /// [`FLASH_PLACEHOLDERS`]), run with `sh -c`. Its timeout is [`HardwareSpec::flash_timeout`].
    Command {
        command: String,
    },
}

/// `[probe]`
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeSpec {
    pub chip: String,
    /// `VID:PID[:SERIAL]`, VID and PID in hex.
    pub selector: Option<String>,
    /// `swd` or `jtag`, lower-case.
    pub protocol: Option<String>,
    pub speed_khz: Option<u32>,
    /// `[probe] connect_under_reset`: attach while the target is held in reset, without trying
    /// a plain attach first (default false: plain, then under reset when that fails).
    pub connect_under_reset: bool,
}

/// `[gdb]`
#[derive(Debug, Clone, PartialEq)]
pub struct GdbSpec {
    /// `HOST:PORT` of the GDB server, or the absolute path of a serial GDB server (a Black Magic
    /// Probe's `/dev/ttyACM0`).
    pub remote: String,
    /// Program name or path, default `gdb-multiarch`.
    pub gdb: String,
    /// `[gdb] init`: commands run after connecting and before `load`, e.g. `monitor reset halt`
    /// for OpenOCD, or `monitor arm semihosting enable` for an image that uses semihosting. Empty
    /// by default, as QEMU's gdbstub knows no monitor commands.
    pub init: Vec<String>,
    /// `[gdb] start` (and `reset`): how the loaded image is started.
    pub start: GdbStart,
}

/// `[gdb] start`: how the core gets to the image's first instruction after `load`.
#[derive(Debug, Clone, PartialEq)]
pub enum GdbStart {
    /// `vector-table` (the default): SP and PC set from the image's vector table, as the core's
    /// own reset would set them. Works with any GDB server, and resets nothing else.
    VectorTable,
    /// `monitor-reset`: the GDB server resets the target and leaves it halted, so peripherals
    /// start from their reset state too. `command` is `[gdb] reset`, the gdb command that asks
    /// for it: `monitor reset halt` (OpenOCD, pyOCD, J-Link) by default, `monitor system_reset`
    /// for QEMU's gdbstub.
    MonitorReset { command: String },
}

impl GdbStart {
    /// The names `[gdb] start` accepts.
    pub const NAMES: &'static [&'static str] = &["vector-table", "monitor-reset"];
}

#[derive(Debug, Clone, PartialEq)]
pub enum ConsoleSpec {
    /// `[serial]`: a device path or `socket://HOST:PORT`.
    Serial {
        port: SerialPort,
        baud: u32,
        /// Character framing and flow control of a device (a socket has none).
        line: SerialLine,
        /// How to reset the target through the adapter's modem lines before capture.
        reset: SerialReset,
        /// `[serial] reconnect`: how many times a console that vanishes mid-run is opened again
        /// before the attempt ends as a lost port (default 0).
        reconnect: u32,
        /// `[serial] nonce`: the image reads a `fwfix-nonce=<hex>` line from its console after
        /// reset and prints `fwfix-nonce: <hex>` first, so output left on the console by an
        /// earlier run is told apart and ignored (default false).
        nonce: bool,
    },
    /// `[probe] rtt = true`: the image's RTT up channels, read through the debug probe.
    Rtt {
        /// `[probe] rtt_channels`: the up channels read, in order; None reads every up channel
        /// the image has. Up channel 0 is the console the harness prints on (defmt-decoded when
        /// the ELF carries defmt data); lines from the others are shown as `rtt<N>: <text>`.
        channels: Option<Vec<usize>>,
        /// `[probe] nonce`: the image reads a `fwfix-nonce=<hex>` line from RTT down channel 0
        /// after reset and prints `fwfix-nonce: <hex>` first (default false), as `[serial] nonce`.
        nonce: bool,
    },
}

/// `[serial] port`, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SerialPort {
    /// An absolute device path, e.g. `/dev/ttyACM0`.
    Device(PathBuf),
    /// `socket://HOST:PORT`: a raw TCP console (ser2net, QEMU's `-serial tcp:`). An IPv6 host is
    /// kept without its brackets.
    Socket { host: String, port: u16 },
}

impl fmt::Display for SerialPort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SerialPort::Device(path) => write!(f, "{}", path.display()),
            SerialPort::Socket { host, port } if host.contains(':') => {
                write!(f, "socket://[{host}]:{port}")
            }
            SerialPort::Socket { host, port } => write!(f, "socket://{host}:{port}"),
        }
    }
}

/// `[serial]` `data_bits`, `parity`, `stop_bits`, `flow_control`. The default is 8N1 without
/// flow control, what nearly every firmware console uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SerialLine {
    /// 5 to 8.
    pub data_bits: u8,
    pub parity: Parity,
    /// 1 or 2.
    pub stop_bits: u8,
    pub flow_control: FlowControl,
}

impl Default for SerialLine {
    fn default() -> Self {
        Self {
            data_bits: 8,
            parity: Parity::None,
            stop_bits: 1,
            flow_control: FlowControl::None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parity {
    None,
    Odd,
    Even,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowControl {
    None,
    /// XON/XOFF.
    Software,
    /// RTS/CTS.
    Hardware,
}

/// `[serial] reset` and `reset_ms`: a pulse on a modem line wired to the target's reset (as on
/// many development boards' USB-serial adapters): the line is asserted for `pulse` (the adapter's
/// active-low pin driven low, the target held in reset), then released.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SerialReset {
    None,
    Dtr { pulse: Duration },
    Rts { pulse: Duration },
}

/// `[labgrid]`: a place by name, or any place matching the tags; at least one of the two.
#[derive(Debug, Clone, PartialEq)]
pub struct LabgridSpec {
    pub place: Option<String>,
    /// `KEY=VALUE` each, as `labgrid-client reserve` takes them.
    pub tags: Vec<String>,
    /// `[labgrid] coordinator` (`HOST:PORT`); `LG_COORDINATOR` overrides it, and without either
    /// labgrid's own default applies.
    pub coordinator: Option<String>,
    /// `[flash] method = "command"`: how the image gets onto the place's board. None: the
    /// place needs no flashing (its power switch boots what it finds).
    pub flash: Option<LabgridFlash>,
}

/// A labgrid board's flash command: `{elf}`, `{bin}`, `{hex}`, `{place}` and the place's
/// resource values (see `dut::labgrid::resources`) expanded when the place is known.
#[derive(Debug, Clone, PartialEq)]
pub struct LabgridFlash {
    pub command: String,
    pub timeout: Duration,
}

/// `[power]`: commands run with `sh -c`, `{board}` (see [`POWER_PLACEHOLDERS`]) expanded; at
/// least one is set.
#[derive(Debug, Clone, PartialEq)]
pub struct PowerSpec {
    pub on: Option<String>,
    pub off: Option<String>,
    pub cycle: Option<String>,
    /// `off_s`: how long the board stays off between `off` and `on` when there is no `cycle`
    /// command (default 2 s).
    pub off_pause: Duration,
    /// `timeout_s`: a power command that takes longer is stuck (default 60 s).
    pub timeout: Duration,
    /// `retry_on_hang`: a board that hangs or stops answering is power-cycled once and the
    /// attempt run again before the hang is trusted (default true).
    pub retry_on_hang: bool,
}

impl PowerSpec {
    /// Whether the board can be power-cycled: a `cycle` command, or both `off` and `on`.
    pub fn can_cycle(&self) -> bool {
        self.cycle.is_some() || (self.off.is_some() && self.on.is_some())
    }
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
    pub strategy: StrategySpec,
    /// `[timeouts]`: per-state watchdogs that override the orchestrator's defaults. Only
    /// non-terminal states other than IDLE can have one.
    pub timeouts: BTreeMap<State, Duration>,
    /// `[recovery]`: retry budgets per error class that override the machine's defaults.
    pub recovery: BTreeMap<ErrorClass, u32>,
    pub snapshot: SnapshotSpec,
    pub commit: CommitSpec,
    /// `[lint]`: the lint stage; None when the profile has no `[lint]` table.
    pub lint: Option<LintSpec>,
}

/// `[lint]`: what judges a built candidate's source before it is tested.
#[derive(Debug, Clone, PartialEq)]
pub struct LintSpec {
    /// Run with `sh -c` at the root of the work tree; None when only the build's own warnings
    /// are judged.
    pub command: Option<String>,
    /// How the command's output is read.
    pub format: crate::analysis::lint::Format,
    /// `format = "regex"`: the pattern, with named groups `file` and `message` (and optionally
    /// `line`, `column`, `id`, `severity`).
    pub pattern: Option<Pattern>,
    pub timeout: Duration,
    /// Whether the build's own compiler warnings count as findings.
    pub build_warnings: bool,
    pub new_findings: NewFindings,
}

/// `[lint] new_findings`: what a candidate's new findings do to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NewFindings {
    /// A LINT_FAILURE: the candidate is rolled back and the findings become evidence.
    Reject,
    /// Reported, never a reason to reject.
    Warn,
}

/// `[snapshot]`: what a fix run's rollback points keep in git.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotSpec {
    /// Untracked files larger than this are copied aside into the run directory instead of
    /// becoming git objects (restored byte-exact all the same).
    pub max_untracked_bytes: u64,
}

/// `[commit]`: how a fix run commits its fix on `fwfix/<run-id>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommitSpec {
    /// `hooks`: run the repository's own `pre-commit` and `commit-msg` hooks (default true);
    /// false commits as `git commit --no-verify` would.
    pub hooks: bool,
    /// `timeout_s`: each hook's time limit; a hook still running then is killed, and the fix
    /// is refused (default 300).
    pub timeout: Duration,
}

impl Profile {
    /// The build for `board`: `{board}` and `{machine}` (see [`BUILD_PLACEHOLDERS`]) expanded in
    /// the command, the working directory and the artifact. Board names and QEMU machines contain
    /// no `/` and never start with `.`, so the expanded paths stay inside the repository.
    pub fn build_for(&self, board: &Board) -> BuildSpec {
        let values = [("board", board.name.as_str()), ("machine", board.machine())];
        BuildSpec {
            command: placeholder::expand(&self.build.command, &values),
            cwd: PathBuf::from(placeholder::expand(
                &self.build.cwd.to_string_lossy(),
                &values,
            )),
            artifact: PathBuf::from(placeholder::expand(
                &self.build.artifact.to_string_lossy(),
                &values,
            )),
            timeout: self.build.timeout,
        }
    }
}

/// The placeholders `[build]` `command`, `cwd` and `artifact` may use.
pub const BUILD_PLACEHOLDERS: &[&str] = &["board", "machine"];

/// The placeholders `[power]` `on`, `off` and `cycle` may use.
pub const POWER_PLACEHOLDERS: &[&str] = &["board"];

/// The placeholders `[flash] command` may use.
pub const FLASH_PLACEHOLDERS: &[&str] = &["elf", "bin", "hex"];

/// `[build]`. In a [`Profile`] the strings may still hold placeholders; [`Profile::build_for`]
/// gives the expanded one.
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

/// `[test] harness`: which console format the image prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Harness {
    Unity,
    /// Zephyr's ztest, as Twister reads it (Zephyr 2.x and 3.x output).
    Ztest,
    /// Patterns the console must show, like Twister's console harness: `[test.regex]`. Boxed:
    /// it is several times the size of the other variants, and a profile is moved around whole.
    Regex(Box<RegexSpec>),
}

impl Harness {
    /// The name a profile uses for it.
    pub fn name(&self) -> &'static str {
        match self {
            Harness::Unity => "unity",
            Harness::Ztest => "ztest",
            Harness::Regex(_) => "regex",
        }
    }
}

/// `[test.regex]`: what the console must show for a PASS, and what makes it a FAIL or a CRASH.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegexSpec {
    pub mode: RegexMode,
    /// `multi_line` only: a pattern counts only after the one before it has matched.
    pub ordered: bool,
    /// Never empty; exactly one for `one_line`. Only an ordered list repeats a pattern (the line
    /// must then come that many times).
    pub patterns: Vec<Pattern>,
    /// Any line matching one of these makes the run a FAIL. Named groups `file` and `line`, when
    /// the pattern has them, are where the case failed.
    pub fail_patterns: Vec<Pattern>,
    /// Any line matching one of these makes the run a CRASH (named groups `file` and `line` as
    /// for `fail_patterns`).
    pub crash_patterns: Vec<Pattern>,
    /// The case that carries the run's own outcome (the only case of `one_line`); the profile's
    /// name unless `case_name` says otherwise.
    pub case_name: String,
}

impl RegexSpec {
    /// The name of each pattern's case, in order: the pattern itself, and for a pattern an
    /// ordered list repeats (a line that must come more than once) `<pattern> #2`, `#3`, ...
    /// on its later occurrences, so no two cases share a name.
    pub fn pattern_case_names(&self) -> Vec<String> {
        pattern_case_names(self.patterns.iter().map(Pattern::as_str))
    }
}

/// [`RegexSpec::pattern_case_names`] over the patterns' sources.
pub fn pattern_case_names<'a>(sources: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for source in sources {
        let before = seen.iter().filter(|s| **s == source).count();
        seen.push(source);
        names.push(match before {
            0 => source.to_string(),
            n => format!("{source} #{}", n + 1),
        });
    }
    names
}

/// `[test.regex] type`
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegexMode {
    /// One pattern; its case is named `case_name`.
    OneLine,
    /// One case per pattern, named by the pattern.
    MultiLine,
}

/// A regular expression that compiled when the profile was loaded. Two patterns are equal when
/// their source text is.
#[derive(Debug, Clone)]
pub struct Pattern(regex::Regex);

impl Pattern {
    pub fn new(source: &str) -> Result<Pattern, regex::Error> {
        regex::Regex::new(source).map(Pattern)
    }

    /// The pattern as written in the profile.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    pub fn is_match(&self, line: &str) -> bool {
        self.0.is_match(line)
    }

    pub fn regex(&self) -> &regex::Regex {
        &self.0
    }
}

impl PartialEq for Pattern {
    fn eq(&self, other: &Pattern) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Pattern {}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
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
    /// Default 5.
    pub max_changed_files: u32,
    /// Built-in deny families the profile lifts explicitly, e.g. `allow_builtin = ["tests"]`.
    pub allow_builtin: Vec<BuiltinDeny>,
}

/// A family of paths a patch may not touch unless the profile lifts it by name in
/// `[policy] allow_builtin`. The globs of each family are the policy's (`policy::rules`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BuiltinDeny {
    /// Test sources and the test harness.
    Tests,
    /// Linker scripts.
    Linker,
    /// Startup code and vector tables.
    Startup,
    /// Vendored and third-party code.
    Vendor,
    /// Build-system files.
    Build,
    /// Anything under `.git`.
    Git,
    /// CI configuration.
    Ci,
}

impl BuiltinDeny {
    pub const ALL: [BuiltinDeny; 7] = [
        BuiltinDeny::Tests,
        BuiltinDeny::Linker,
        BuiltinDeny::Startup,
        BuiltinDeny::Vendor,
        BuiltinDeny::Build,
        BuiltinDeny::Git,
        BuiltinDeny::Ci,
    ];

    /// The name a profile uses in `allow_builtin`.
    pub fn name(self) -> &'static str {
        match self {
            BuiltinDeny::Tests => "tests",
            BuiltinDeny::Linker => "linker",
            BuiltinDeny::Startup => "startup",
            BuiltinDeny::Vendor => "vendor",
            BuiltinDeny::Build => "build",
            BuiltinDeny::Git => "git",
            BuiltinDeny::Ci => "ci",
        }
    }

    pub fn from_name(name: &str) -> Option<BuiltinDeny> {
        BuiltinDeny::ALL.into_iter().find(|f| f.name() == name)
    }
}

/// `[strategy.*]`: settings for the patch strategies that need them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StrategySpec {
    pub llm: Option<LlmSpec>,
    pub command: Option<CommandStrategySpec>,
}

/// `[strategy.llm]`: an OpenAI-compatible chat-completions endpoint. Every field can be left to
/// the environment (`FWFIX_LLM_*`), so none is required here.
#[derive(Debug, Clone, PartialEq)]
pub struct LlmSpec {
    /// `http://` or `https://`, e.g. `http://127.0.0.1:11434/v1`.
    pub base_url: Option<String>,
    pub model: Option<String>,
    /// The name of the environment variable that holds the API key (never the key itself).
    pub api_key_env: Option<String>,
    /// 0.0 to 2.0.
    pub temperature: Option<f64>,
    /// One request from connect to the last byte of the answer, default 120 s.
    pub timeout: Duration,
    /// Establishing the connection: default 10 s, or `timeout` when that is shorter.
    pub connect_timeout: Duration,
    /// The longest silence while waiting for the answer, default `timeout`. The answer comes
    /// in one piece, so the wait for it counts as silence: a shorter value only suits an
    /// endpoint that starts answering at once.
    pub idle_timeout: Duration,
    /// Candidate patches asked for per iteration, default 1.
    pub candidates: u32,
    /// Requests in flight at once, default 1; never more than `candidates`.
    pub parallel: u32,
    /// Retries of one request after a connect error or HTTP 408/409/429/5xx, default 3.
    pub max_retries: u32,
    /// Prompt plus completion tokens one run may spend; `None` (the default) is no limit.
    pub token_budget: Option<u64>,
}

/// `[strategy.command]`: an external agent program.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandStrategySpec {
    /// Program and arguments, run without a shell; never empty.
    pub argv: Vec<String>,
    /// One invocation, default 600 s.
    pub timeout: Duration,
    /// Agents run side by side per iteration, each in its own worktree; default 1 (in the work
    /// tree itself).
    pub candidates: u32,
}
