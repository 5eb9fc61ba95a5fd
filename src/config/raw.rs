//! The raw shape of board and profile files: serde types that mirror the TOML one to one, with
//! every value `Spanned` so later checks can point at it, and the key schema that names the
//! tables and keys each file may contain. No defaults and no cross-field checks here: those are
//! `resolve`'s, so that every default lives in one place.

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use serde_spanned::Spanned;
use std::collections::BTreeMap;
use std::fmt;

/// A string value with its span.
pub type Str = Spanned<String>;
/// A list of strings, each element with its own span.
pub type StrList = Spanned<Vec<Str>>;

/// A number of seconds: an integer or a float in the file. Range checks happen in `resolve`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Seconds(pub f64);

impl<'de> Deserialize<'de> for Seconds {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SecondsVisitor;
        impl Visitor<'_> for SecondsVisitor {
            type Value = Seconds;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number of seconds")
            }
            // Integer seconds are far below 2^53 in any sane file, so `as f64` is exact here.
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Seconds, E> {
                Ok(Seconds(v as f64))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Seconds, E> {
                Ok(Seconds(v as f64))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Seconds, E> {
                Ok(Seconds(v))
            }
        }
        deserializer.deserialize_any(SecondsVisitor)
    }
}

/// A board file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawBoard {
    pub name: Option<Str>,
    pub backend: Option<Str>,
    pub qemu: Option<Spanned<RawQemu>>,
    pub flash: Option<Spanned<RawFlash>>,
    pub gdb: Option<Spanned<RawGdb>>,
    pub serial: Option<Spanned<RawSerial>>,
    pub probe: Option<Spanned<RawProbe>>,
    pub labgrid: Option<Spanned<RawLabgrid>>,
    pub power: Option<Spanned<RawPower>>,
    pub health: Option<Spanned<RawHealth>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawQemu {
    pub binary: Option<Str>,
    pub machine: Option<Str>,
    pub cpu: Option<Str>,
    pub extra_args: Option<StrList>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFlash {
    pub method: Option<Str>,
    pub command: Option<Str>,
    pub timeout_s: Option<Spanned<Seconds>>,
    pub reset_command: Option<Str>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGdb {
    pub remote: Option<Str>,
    pub gdb: Option<Str>,
    pub init: Option<StrList>,
    pub start: Option<Str>,
    pub reset: Option<Str>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSerial {
    pub port: Option<Str>,
    pub baud: Option<Spanned<u32>>,
    pub data_bits: Option<Spanned<u32>>,
    pub parity: Option<Str>,
    pub stop_bits: Option<Spanned<u32>>,
    pub flow_control: Option<Str>,
    pub reset: Option<Str>,
    pub reset_ms: Option<Spanned<u32>>,
    pub reconnect: Option<Spanned<u32>>,
    pub nonce: Option<Spanned<bool>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawProbe {
    pub chip: Option<Str>,
    pub selector: Option<Str>,
    pub protocol: Option<Str>,
    pub speed_khz: Option<Spanned<u32>>,
    pub rtt: Option<Spanned<bool>>,
    pub rtt_channels: Option<Spanned<Vec<Spanned<u32>>>>,
    pub nonce: Option<Spanned<bool>>,
    pub connect_under_reset: Option<Spanned<bool>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLabgrid {
    pub place: Option<Str>,
    pub tags: Option<StrList>,
    pub coordinator: Option<Str>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPower {
    pub on: Option<Str>,
    pub off: Option<Str>,
    pub cycle: Option<Str>,
    pub off_s: Option<Spanned<Seconds>>,
    pub timeout_s: Option<Spanned<Seconds>>,
    pub retry_on_hang: Option<Spanned<bool>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawHealth {
    pub profile: Option<Str>,
}

/// A profile file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawProfile {
    pub name: Option<Str>,
    pub build: Option<Spanned<RawBuild>>,
    pub test: Option<Spanned<RawTest>>,
    pub goal: Option<Spanned<RawGoal>>,
    #[serde(rename = "loop")]
    pub loop_: Option<Spanned<RawLoop>>,
    pub policy: Option<Spanned<RawPolicy>>,
    pub strategy: Option<Spanned<RawStrategy>>,
    /// Lower-case state name → seconds.
    pub timeouts: Option<Spanned<BTreeMap<Str, Spanned<Seconds>>>>,
    /// Lower-case error class name → retry budget.
    pub recovery: Option<Spanned<BTreeMap<Str, Spanned<u32>>>>,
    pub snapshot: Option<Spanned<RawSnapshot>>,
    pub commit: Option<Spanned<RawCommit>>,
    pub lint: Option<Spanned<RawLint>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLint {
    pub command: Option<Str>,
    pub format: Option<Str>,
    pub pattern: Option<Str>,
    pub timeout_s: Option<Spanned<Seconds>>,
    pub build_warnings: Option<Spanned<bool>>,
    pub new_findings: Option<Str>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSnapshot {
    pub max_untracked_mb: Option<Spanned<u32>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCommit {
    pub hooks: Option<Spanned<bool>>,
    pub timeout_s: Option<Spanned<Seconds>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawBuild {
    pub command: Option<Str>,
    pub cwd: Option<Str>,
    pub artifact: Option<Str>,
    pub timeout_s: Option<Spanned<Seconds>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTest {
    pub harness: Option<Str>,
    pub timeout_s: Option<Spanned<Seconds>>,
    pub regex: Option<Spanned<RawRegex>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRegex {
    #[serde(rename = "type")]
    pub type_: Option<Str>,
    pub ordered: Option<Spanned<bool>>,
    pub patterns: Option<StrList>,
    pub fail_patterns: Option<StrList>,
    pub crash_patterns: Option<StrList>,
    pub case_name: Option<Str>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGoal {
    pub fail_to_pass: Option<StrList>,
    pub confirm_runs: Option<Spanned<u32>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLoop {
    pub max_iterations: Option<Spanned<u32>>,
    pub no_progress_limit: Option<Spanned<u32>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPolicy {
    pub allow: Option<StrList>,
    pub deny: Option<StrList>,
    pub max_changed_lines: Option<Spanned<u32>>,
    pub max_changed_files: Option<Spanned<u32>>,
    pub allow_builtin: Option<StrList>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawStrategy {
    pub llm: Option<Spanned<RawLlm>>,
    pub command: Option<Spanned<RawCommandStrategy>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLlm {
    pub base_url: Option<Str>,
    pub model: Option<Str>,
    pub api_key_env: Option<Str>,
    pub temperature: Option<Spanned<f64>>,
    pub timeout_s: Option<Spanned<Seconds>>,
    pub connect_timeout_s: Option<Spanned<Seconds>>,
    pub idle_timeout_s: Option<Spanned<Seconds>>,
    pub candidates: Option<Spanned<u32>>,
    pub parallel: Option<Spanned<u32>>,
    pub max_retries: Option<Spanned<u32>>,
    pub token_budget: Option<Spanned<u64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCommandStrategy {
    pub argv: Option<StrList>,
    pub timeout_s: Option<Spanned<Seconds>>,
    pub candidates: Option<Spanned<u32>>,
}

/// What a key in the schema holds.
#[derive(Debug, Clone, Copy)]
pub enum Node {
    /// A string, number, boolean or array.
    Value,
    /// A table with exactly these keys (all optional as far as the schema goes).
    Table(&'static [(&'static str, Node)]),
    /// A table whose keys come from a list computed at run time (state names, error classes),
    /// each holding a value.
    Names(fn() -> Vec<String>),
}

const V: Node = Node::Value;

const QEMU: &[(&str, Node)] = &[("binary", V), ("machine", V), ("cpu", V), ("extra_args", V)];
const FLASH: &[(&str, Node)] = &[
    ("method", V),
    ("command", V),
    ("timeout_s", V),
    ("reset_command", V),
];
const GDB: &[(&str, Node)] = &[
    ("remote", V),
    ("gdb", V),
    ("init", V),
    ("start", V),
    ("reset", V),
];
const SERIAL: &[(&str, Node)] = &[
    ("port", V),
    ("baud", V),
    ("data_bits", V),
    ("parity", V),
    ("stop_bits", V),
    ("flow_control", V),
    ("reset", V),
    ("reset_ms", V),
    ("reconnect", V),
    ("nonce", V),
];
const PROBE: &[(&str, Node)] = &[
    ("chip", V),
    ("selector", V),
    ("protocol", V),
    ("speed_khz", V),
    ("rtt", V),
    ("rtt_channels", V),
    ("nonce", V),
    ("connect_under_reset", V),
];
const LABGRID: &[(&str, Node)] = &[("place", V), ("tags", V), ("coordinator", V)];
const POWER: &[(&str, Node)] = &[
    ("on", V),
    ("off", V),
    ("cycle", V),
    ("off_s", V),
    ("timeout_s", V),
    ("retry_on_hang", V),
];
const HEALTH: &[(&str, Node)] = &[("profile", V)];

/// Every key a board file may contain, in the order the contract documents them.
pub const BOARD: &[(&str, Node)] = &[
    ("name", V),
    ("backend", V),
    ("qemu", Node::Table(QEMU)),
    ("flash", Node::Table(FLASH)),
    ("gdb", Node::Table(GDB)),
    ("serial", Node::Table(SERIAL)),
    ("probe", Node::Table(PROBE)),
    ("labgrid", Node::Table(LABGRID)),
    ("power", Node::Table(POWER)),
    ("health", Node::Table(HEALTH)),
];

const BUILD: &[(&str, Node)] = &[
    ("command", V),
    ("cwd", V),
    ("artifact", V),
    ("timeout_s", V),
];
const REGEX: &[(&str, Node)] = &[
    ("type", V),
    ("ordered", V),
    ("patterns", V),
    ("fail_patterns", V),
    ("crash_patterns", V),
    ("case_name", V),
];
const TEST: &[(&str, Node)] = &[
    ("harness", V),
    ("timeout_s", V),
    ("regex", Node::Table(REGEX)),
];
const GOAL: &[(&str, Node)] = &[("fail_to_pass", V), ("confirm_runs", V)];
const LOOP: &[(&str, Node)] = &[("max_iterations", V), ("no_progress_limit", V)];
const SNAPSHOT: &[(&str, Node)] = &[("max_untracked_mb", V)];
const LINT: &[(&str, Node)] = &[
    ("command", V),
    ("format", V),
    ("pattern", V),
    ("timeout_s", V),
    ("build_warnings", V),
    ("new_findings", V),
];
const COMMIT: &[(&str, Node)] = &[("hooks", V), ("timeout_s", V)];
const POLICY: &[(&str, Node)] = &[
    ("allow", V),
    ("deny", V),
    ("max_changed_lines", V),
    ("max_changed_files", V),
    ("allow_builtin", V),
];
const LLM: &[(&str, Node)] = &[
    ("base_url", V),
    ("model", V),
    ("api_key_env", V),
    ("temperature", V),
    ("timeout_s", V),
    ("connect_timeout_s", V),
    ("idle_timeout_s", V),
    ("candidates", V),
    ("parallel", V),
    ("max_retries", V),
    ("token_budget", V),
];
const COMMAND_STRATEGY: &[(&str, Node)] = &[("argv", V), ("timeout_s", V), ("candidates", V)];
const STRATEGY: &[(&str, Node)] = &[
    ("llm", Node::Table(LLM)),
    ("command", Node::Table(COMMAND_STRATEGY)),
];

/// Every key a profile file may contain, in the order the contract documents them.
pub const PROFILE: &[(&str, Node)] = &[
    ("name", V),
    ("build", Node::Table(BUILD)),
    ("test", Node::Table(TEST)),
    ("goal", Node::Table(GOAL)),
    ("loop", Node::Table(LOOP)),
    ("policy", Node::Table(POLICY)),
    ("strategy", Node::Table(STRATEGY)),
    ("timeouts", Node::Names(super::names::timeout_state_names)),
    ("recovery", Node::Names(super::names::recovery_class_names)),
    ("snapshot", Node::Table(SNAPSHOT)),
    ("lint", Node::Table(LINT)),
    ("commit", Node::Table(COMMIT)),
];
