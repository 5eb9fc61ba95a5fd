//! Raw types to the model: every default, every cross-field rule, every range and path check,
//! and placeholder validation. Errors point at the value at fault, or at the table (or key) that
//! requires a missing one. It must not read files: it gets text already parsed by `parse`.

use super::error::{ConfigError, KeyPath};
use super::model::{
    Board, BoardBackend, BuildSpec, BuiltinDeny, CommandStrategySpec, CommitSpec, ConsoleSpec,
    FlashSpec, GdbSpec, GdbStart, GoalSpec, HardwareSpec, Harness, HealthSpec, LabgridFlash,
    LabgridSpec, LlmSpec, LoopSpec, Pattern, PolicySpec, PowerSpec, ProbeSpec, Profile, QemuSpec,
    RegexMode, RegexSpec, SerialPort, SnapshotSpec, StrategySpec, TestSpec, BUILD_PLACEHOLDERS,
    FLASH_PLACEHOLDERS, POWER_PLACEHOLDERS,
};
use super::model::{FlowControl, LintSpec, NewFindings, Parity, SerialLine, SerialReset};
use super::names;
use super::parse::Source;
use super::placeholder;
use super::raw::{
    RawBoard, RawBuild, RawCommandStrategy, RawCommit, RawFlash, RawGdb, RawGoal, RawHealth,
    RawLabgrid, RawLint, RawLlm, RawLoop, RawPolicy, RawPower, RawProbe, RawProfile, RawQemu,
    RawRegex, RawSerial, RawSnapshot, RawStrategy, RawTest, Seconds, Str, StrList,
};
use crate::analysis::lint::Format;
use serde_spanned::Spanned;
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

const DEFAULT_QEMU_BINARY: &str = "qemu-system-arm";
const DEFAULT_GDB: &str = "gdb-multiarch";
/// What OpenOCD, pyOCD and J-Link's GDB server all understand as "reset, then halt".
const DEFAULT_GDB_RESET: &str = "monitor reset halt";
const DEFAULT_BAUD: u32 = 115_200;
/// `[power] off_s`: long enough for a board's supply capacitors to drain.
const DEFAULT_POWER_OFF: Duration = Duration::from_secs(2);
/// `[power] timeout_s`.
const DEFAULT_POWER_TIMEOUT: Duration = Duration::from_secs(60);
/// Long enough for a board's reset supervisor to see the pulse, short next to any boot.
const DEFAULT_RESET_PULSE_MS: u32 = 100;
const PARITY_NAMES: &[&str] = &["none", "odd", "even"];
const FLOW_CONTROL_NAMES: &[&str] = &["none", "software", "hardware"];
const SERIAL_RESET_NAMES: &[&str] = &["none", "dtr", "rts"];
const DEFAULT_FLASH_TIMEOUT: Duration = Duration::from_secs(120);
const DEFAULT_BUILD_CWD: &str = ".";
const DEFAULT_BUILD_TIMEOUT: Duration = Duration::from_secs(300);
const DEFAULT_LINT_TIMEOUT: Duration = Duration::from_secs(300);
const DEFAULT_TEST_TIMEOUT: Duration = Duration::from_secs(30);
const DEFAULT_CONFIRM_RUNS: u32 = 1;
const DEFAULT_MAX_ITERATIONS: u32 = 10;
const DEFAULT_NO_PROGRESS_LIMIT: u32 = 3;
const DEFAULT_MAX_UNTRACKED_MB: u32 = 16;
const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(300);
const DEFAULT_ALLOW: &[&str] = &["src/**"];
const DEFAULT_MAX_CHANGED_LINES: u32 = 60;
const DEFAULT_MAX_CHANGED_FILES: u32 = 5;
pub(super) const DEFAULT_LLM_TIMEOUT: Duration = Duration::from_secs(120);
pub(super) const DEFAULT_LLM_CANDIDATES: u32 = 1;
pub(super) const DEFAULT_LLM_MAX_RETRIES: u32 = 3;
/// Connecting should take a moment; a host that does not answer within this is down.
pub(super) const DEFAULT_LLM_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// One request at a time: a local server with one slot queues the others, and a queued request
/// spends its timeout waiting.
pub(super) const DEFAULT_LLM_PARALLEL: u32 = 1;
const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(600);
const MAX_TEMPERATURE: f64 = 2.0;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Backend {
    Qemu,
    Board,
    Labgrid,
}

impl Backend {
    const NAMES: &[&str] = &["qemu", "board", "labgrid"];

    fn name(self) -> &'static str {
        match self {
            Backend::Qemu => "qemu",
            Backend::Board => "board",
            Backend::Labgrid => "labgrid",
        }
    }

    /// The tables a board file with this backend may have besides `name` and `backend`.
    fn tables(self) -> &'static [&'static str] {
        match self {
            Backend::Qemu => &["qemu", "health"],
            Backend::Board => &["flash", "gdb", "serial", "probe", "power", "health"],
            // A place is powered through its coordinator (`labgrid-client power`).
            Backend::Labgrid => &["labgrid", "flash", "health"],
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    ProbeRs,
    Gdb,
    Command,
}

impl Method {
    const NAMES: &[&str] = &["probe-rs", "gdb", "command"];
}

const HARNESS_NAMES: &[&str] = &["unity", "ztest", "regex"];
const REGEX_TYPE_NAMES: &[&str] = &["one_line", "multi_line"];
const PROTOCOL_NAMES: &[&str] = &["swd", "jtag"];

/// Resolves a parsed board file.
pub fn board(src: Source<'_>, raw: RawBoard) -> Result<Board, ConfigError> {
    let c = Checker { src };
    let name_key = KeyPath::new(&["name"]);
    let name = c.required(raw.name.as_ref(), 0, &name_key, "every board has a name")?;
    let name = c.name(name, &name_key)?;

    let backend_key = KeyPath::new(&["backend"]);
    let backend_value = c.required(
        raw.backend.as_ref(),
        0,
        &backend_key,
        "one of: qemu, board, labgrid",
    )?;
    let backend = match backend_value.get_ref().as_str() {
        "qemu" => Backend::Qemu,
        "board" => Backend::Board,
        "labgrid" => Backend::Labgrid,
        other => return Err(c.unknown_choice(backend_value, &backend_key, other, Backend::NAMES)),
    };
    let backend_at = backend_value.span().start;

    let present = [
        ("qemu", raw.qemu.as_ref().map(Spanned::span)),
        ("flash", raw.flash.as_ref().map(Spanned::span)),
        ("gdb", raw.gdb.as_ref().map(Spanned::span)),
        ("serial", raw.serial.as_ref().map(Spanned::span)),
        ("probe", raw.probe.as_ref().map(Spanned::span)),
        ("labgrid", raw.labgrid.as_ref().map(Spanned::span)),
        ("power", raw.power.as_ref().map(Spanned::span)),
        ("health", raw.health.as_ref().map(Spanned::span)),
    ];
    let stray = present
        .into_iter()
        .filter_map(|(table, span)| span.map(|span| (table, span)))
        .filter(|(table, _)| !backend.tables().contains(table))
        .min_by_key(|(_, span)| span.start);
    if let Some((table, span)) = stray {
        let uses: Vec<String> = backend.tables().iter().map(|t| format!("[{t}]")).collect();
        return Err(c.not_allowed(
            span,
            table,
            format!(
                "backend = \"{}\" uses only {}",
                backend.name(),
                uses.join(", ")
            ),
        ));
    }

    let resolved_backend = match backend {
        Backend::Qemu => BoardBackend::Qemu(c.qemu(raw.qemu, backend_at)?),
        Backend::Board => BoardBackend::Hardware(
            c.hardware(raw.flash, raw.gdb, raw.serial, raw.probe, backend_at)?,
        ),
        Backend::Labgrid => BoardBackend::Labgrid(c.labgrid(raw.labgrid, raw.flash, backend_at)?),
    };
    Ok(Board {
        name,
        source: src.file.to_path_buf(),
        backend: resolved_backend,
        power: raw.power.map(|p| c.power(p)).transpose()?,
        health: raw.health.map(|h| c.health(h)).transpose()?,
    })
}

/// Resolves a parsed profile file.
pub fn profile(src: Source<'_>, raw: RawProfile) -> Result<Profile, ConfigError> {
    let c = Checker { src };
    let name_key = KeyPath::new(&["name"]);
    let name = c.required(raw.name.as_ref(), 0, &name_key, "every profile has a name")?;
    let name = c.name(name, &name_key)?;

    let Some(build) = raw.build else {
        return Err(c.missing(
            0,
            KeyPath::new(&["build"]),
            "every profile has a [build] table with `command` and `artifact`",
        ));
    };
    let build = c.build(build)?;
    let Some(test) = raw.test else {
        return Err(c.missing(
            0,
            KeyPath::new(&["test"]),
            "every profile has a [test] table with `harness`",
        ));
    };
    let test = c.test(test, &name)?;
    Ok(Profile {
        name,
        source: src.file.to_path_buf(),
        build,
        test,
        goal: c.goal(raw.goal)?,
        limits: c.limits(raw.loop_)?,
        policy: c.policy(raw.policy)?,
        strategy: c.strategy(raw.strategy)?,
        timeouts: c.timeouts(raw.timeouts)?,
        recovery: c.recovery(raw.recovery)?,
        snapshot: c.snapshot(raw.snapshot)?,
        lint: raw.lint.map(|l| c.lint(&l)).transpose()?,
        commit: c.commit(raw.commit)?,
    })
}

/// The checks, with the file they report against.
struct Checker<'a> {
    src: Source<'a>,
}

impl Checker<'_> {
    fn invalid(&self, span: Range<usize>, key: &KeyPath, reason: impl Into<String>) -> ConfigError {
        ConfigError::InvalidValue {
            at: self.src.at(span.start),
            key: key.clone(),
            reason: reason.into(),
        }
    }

    fn missing(&self, offset: usize, key: KeyPath, why: impl Into<String>) -> ConfigError {
        ConfigError::MissingKey {
            at: self.src.at(offset),
            key,
            why: why.into(),
        }
    }

    fn not_allowed(&self, span: Range<usize>, table: &str, reason: String) -> ConfigError {
        ConfigError::TableNotAllowed {
            at: self.src.at(span.start),
            key: KeyPath::new(&[table]),
            reason,
        }
    }

    fn unknown_choice(&self, value: &Str, key: &KeyPath, got: &str, names: &[&str]) -> ConfigError {
        self.invalid(
            value.span(),
            key,
            format!(
                "unknown {} `{got}` (expected one of: {})",
                key.leaf(),
                names.join(", ")
            ),
        )
    }

    /// `value`, or a MissingKey error at `offset` (the table header, or whatever requires it).
    fn required<'v, T>(
        &self,
        value: Option<&'v Spanned<T>>,
        offset: usize,
        key: &KeyPath,
        why: &str,
    ) -> Result<&'v Spanned<T>, ConfigError> {
        value.ok_or_else(|| self.missing(offset, key.clone(), why))
    }

    fn non_empty(&self, value: &Str, key: &KeyPath) -> Result<String, ConfigError> {
        if value.get_ref().trim().is_empty() {
            return Err(self.invalid(value.span(), key, "must not be empty"));
        }
        Ok(value.get_ref().clone())
    }

    fn optional_non_empty(
        &self,
        value: Option<&Str>,
        key: &KeyPath,
    ) -> Result<Option<String>, ConfigError> {
        value.map(|v| self.non_empty(v, key)).transpose()
    }

    /// Board and profile names end up in shell commands and paths through `{board}`: keep them to
    /// characters that are safe in both.
    fn name(&self, value: &Str, key: &KeyPath) -> Result<String, ConfigError> {
        if !is_safe_word(value.get_ref(), "._-") {
            return Err(self.invalid(
                value.span(),
                key,
                format!(
                    "`{}` is not a valid name: use letters, digits, `.`, `_` and `-`, starting \
                     with a letter or digit",
                    value.get_ref()
                ),
            ));
        }
        Ok(value.get_ref().clone())
    }

    fn seconds(
        &self,
        value: Option<&Spanned<Seconds>>,
        key: &KeyPath,
        default: Duration,
    ) -> Result<Duration, ConfigError> {
        let Some(value) = value else {
            return Ok(default);
        };
        let Seconds(secs) = *value.get_ref();
        let valid = secs.is_finite() && secs > 0.0;
        match Duration::try_from_secs_f64(secs) {
            Ok(duration) if valid && !duration.is_zero() => Ok(duration),
            Ok(_) | Err(_) => Err(self.invalid(
                value.span(),
                key,
                format!("must be a number of seconds greater than 0, got {secs}"),
            )),
        }
    }

    fn at_least(
        &self,
        value: Option<&Spanned<u32>>,
        key: &KeyPath,
        min: u32,
        default: u32,
    ) -> Result<u32, ConfigError> {
        match value {
            None => Ok(default),
            Some(v) if *v.get_ref() >= min => Ok(*v.get_ref()),
            Some(v) => Err(self.invalid(
                v.span(),
                key,
                format!("must be at least {min}, got {}", v.get_ref()),
            )),
        }
    }

    fn strings(&self, list: &StrList, key: &KeyPath) -> Result<Vec<String>, ConfigError> {
        list.get_ref()
            .iter()
            .map(|item| self.non_empty(item, key))
            .collect()
    }

    fn placeholders(&self, value: &Str, key: &KeyPath, known: &[&str]) -> Result<(), ConfigError> {
        match placeholder::first_unknown(value.get_ref(), known) {
            None => Ok(()),
            Some((index, name)) => {
                let offset = self
                    .src
                    .offset_in_string(value.span(), value.get_ref(), index);
                let expected: Vec<String> = known.iter().map(|k| format!("{{{k}}}")).collect();
                Err(ConfigError::InvalidValue {
                    at: self.src.at(offset),
                    key: key.clone(),
                    reason: format!(
                        "unknown placeholder `{{{name}}}` (expected one of: {})",
                        expected.join(", ")
                    ),
                })
            }
        }
    }

    /// A path relative to the repository root that stays inside it.
    fn repo_path(&self, value: &Str, key: &KeyPath, file: bool) -> Result<PathBuf, ConfigError> {
        let text = value.get_ref();
        if text.is_empty() {
            return Err(self.invalid(value.span(), key, "must not be empty"));
        }
        let path = Path::new(text);
        let mut depth = 0usize;
        for component in path.components() {
            match component {
                Component::Normal(_) => depth += 1,
                Component::CurDir => {}
                Component::ParentDir if depth > 0 => depth -= 1,
                Component::ParentDir => {
                    return Err(self.invalid(
                        value.span(),
                        key,
                        format!("`{text}` leads outside the repository through `..`"),
                    ))
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(self.invalid(
                        value.span(),
                        key,
                        format!("`{text}` must be relative to the repository root"),
                    ))
                }
            }
        }
        if file && depth == 0 {
            return Err(self.invalid(
                value.span(),
                key,
                format!("`{text}` must name a file inside the repository"),
            ));
        }
        Ok(path.to_path_buf())
    }

    fn qemu(
        &self,
        raw: Option<Spanned<RawQemu>>,
        needed_at: usize,
    ) -> Result<QemuSpec, ConfigError> {
        let table = KeyPath::new(&["qemu"]);
        let Some(raw) = raw else {
            return Err(self.missing(
                needed_at,
                table,
                "backend = \"qemu\" needs a [qemu] table with `machine`",
            ));
        };
        let at = raw.span().start;
        let q = raw.get_ref();
        let machine_key = table.child("machine");
        let machine = self.required(
            q.machine.as_ref(),
            at,
            &machine_key,
            "the QEMU machine to boot, e.g. \"mps2-an385\"",
        )?;
        // `{machine}` expands into build commands and paths: same safety rule as names, plus the
        // `,` and `=` of machine options.
        if !is_safe_word(machine.get_ref(), "._-,=") {
            return Err(self.invalid(
                machine.span(),
                &machine_key,
                format!(
                    "`{}` is not a QEMU machine name: use letters, digits, `.`, `_`, `-`, `,` and \
                     `=`, starting with a letter or digit",
                    machine.get_ref()
                ),
            ));
        }
        Ok(QemuSpec {
            binary: self
                .optional_non_empty(q.binary.as_ref(), &table.child("binary"))?
                .unwrap_or_else(|| DEFAULT_QEMU_BINARY.to_string()),
            machine: machine.get_ref().clone(),
            cpu: self.optional_non_empty(q.cpu.as_ref(), &table.child("cpu"))?,
            extra_args: q
                .extra_args
                .as_ref()
                .map(|args| args.get_ref().iter().map(|a| a.get_ref().clone()).collect())
                .unwrap_or_default(),
        })
    }

    fn hardware(
        &self,
        flash: Option<Spanned<RawFlash>>,
        gdb: Option<Spanned<RawGdb>>,
        serial: Option<Spanned<RawSerial>>,
        probe: Option<Spanned<RawProbe>>,
        backend_at: usize,
    ) -> Result<HardwareSpec, ConfigError> {
        let table = KeyPath::new(&["flash"]);
        let Some(flash) = flash else {
            return Err(self.missing(
                backend_at,
                table,
                "backend = \"board\" needs a [flash] table with `method`",
            ));
        };
        let f = flash.get_ref();
        let method_key = table.child("method");
        let method_value = self.required(
            f.method.as_ref(),
            flash.span().start,
            &method_key,
            "one of: probe-rs, gdb, command",
        )?;
        let method = match method_value.get_ref().as_str() {
            "probe-rs" => Method::ProbeRs,
            "gdb" => Method::Gdb,
            "command" => Method::Command,
            other => {
                return Err(self.unknown_choice(method_value, &method_key, other, Method::NAMES))
            }
        };
        let method_at = method_value.span().start;

        if let Some(command) = f.command.as_ref().filter(|_| method != Method::Command) {
            return Err(self.invalid(
                command.span(),
                &table.child("command"),
                "only used with method = \"command\"",
            ));
        }
        if let Some(gdb) = gdb.as_ref().filter(|_| method != Method::Gdb) {
            return Err(self.not_allowed(
                gdb.span(),
                "gdb",
                "[gdb] is only used with [flash] method = \"gdb\"".to_string(),
            ));
        }
        if let Some(probe) = probe.as_ref().filter(|_| method != Method::ProbeRs) {
            return Err(self.not_allowed(
                probe.span(),
                "probe",
                "[probe] is only used with [flash] method = \"probe-rs\"".to_string(),
            ));
        }

        let mut rtt_console = None;
        let flash_spec = match method {
            Method::ProbeRs => {
                let (spec, rtt) = self.probe(probe, method_at)?;
                rtt_console = rtt;
                FlashSpec::ProbeRs(spec)
            }
            Method::Gdb => FlashSpec::Gdb(self.gdb(gdb, method_at)?),
            Method::Command => {
                let key = table.child("command");
                let command = self.required(
                    f.command.as_ref(),
                    flash.span().start,
                    &key,
                    "method = \"command\" needs the flasher's command line",
                )?;
                self.placeholders(command, &key, FLASH_PLACEHOLDERS)?;
                FlashSpec::Command {
                    command: self.non_empty(command, &key)?,
                }
            }
        };
        let flash_timeout = self.seconds(
            f.timeout_s.as_ref(),
            &table.child("timeout_s"),
            DEFAULT_FLASH_TIMEOUT,
        )?;

        let console =
            match (serial, rtt_console) {
                (Some(serial), Some(_)) => {
                    return Err(self.not_allowed(
                        serial.span(),
                        "serial",
                        "[probe] rtt = true already makes RTT the console; keep one of the two"
                            .to_string(),
                    ))
                }
                (Some(serial), None) => self.serial(serial)?,
                (None, Some(rtt)) => rtt,
                (None, None) => return Err(self.missing(
                    backend_at,
                    KeyPath::new(&["serial"]),
                    "backend = \"board\" needs a console: a [serial] table, or [probe] rtt = true",
                )),
            };
        let reset_command =
            self.optional_non_empty(f.reset_command.as_ref(), &table.child("reset_command"))?;
        Ok(HardwareSpec {
            flash: flash_spec,
            flash_timeout,
            console,
            reset_command,
        })
    }

    /// `[probe]`, and the RTT console when `rtt = true`.
    fn probe(
        &self,
        raw: Option<Spanned<RawProbe>>,
        needed_at: usize,
    ) -> Result<(ProbeSpec, Option<ConsoleSpec>), ConfigError> {
        let table = KeyPath::new(&["probe"]);
        let Some(raw) = raw else {
            return Err(self.missing(
                needed_at,
                table,
                "method = \"probe-rs\" needs a [probe] table with `chip`",
            ));
        };
        let p = raw.get_ref();
        let chip_key = table.child("chip");
        let chip = self.required(
            p.chip.as_ref(),
            raw.span().start,
            &chip_key,
            "method = \"probe-rs\" needs the target chip, e.g. \"STM32F401RETx\"",
        )?;
        let selector_key = table.child("selector");
        let selector = self.optional_non_empty(p.selector.as_ref(), &selector_key)?;
        if let (Some(value), Some(selector)) = (&p.selector, &selector) {
            if !is_probe_selector(selector) {
                return Err(self.invalid(
                    value.span(),
                    &selector_key,
                    format!("`{selector}` is not VID:PID[:SERIAL] with VID and PID in hex"),
                ));
            }
        }
        let protocol_key = table.child("protocol");
        let protocol = match &p.protocol {
            None => None,
            Some(value) => {
                let lower = value.get_ref().to_ascii_lowercase();
                if !PROTOCOL_NAMES.contains(&lower.as_str()) {
                    return Err(self.unknown_choice(
                        value,
                        &protocol_key,
                        value.get_ref(),
                        PROTOCOL_NAMES,
                    ));
                }
                Some(lower)
            }
        };
        let speed_khz = p
            .speed_khz
            .as_ref()
            .map(|s| self.at_least(Some(s), &table.child("speed_khz"), 1, 0))
            .transpose()?;
        let rtt = p.rtt.as_ref().is_some_and(|r| *r.get_ref());
        let console = match rtt {
            true => Some(ConsoleSpec::Rtt {
                channels: p
                    .rtt_channels
                    .as_ref()
                    .map(|list| self.rtt_channels(list, &table.child("rtt_channels")))
                    .transpose()?,
                nonce: p.nonce.as_ref().is_some_and(|n| *n.get_ref()),
            }),
            false => {
                let rtt_only = [
                    ("rtt_channels", p.rtt_channels.as_ref().map(Spanned::span)),
                    ("nonce", p.nonce.as_ref().map(Spanned::span)),
                ];
                if let Some((key, span)) = first_set(rtt_only) {
                    return Err(self.invalid(
                        span,
                        &table.child(key),
                        "only used with rtt = true; with a [serial] console, its own `nonce` \
                         key hands the image the nonce",
                    ));
                }
                None
            }
        };
        let spec = ProbeSpec {
            chip: self.non_empty(chip, &chip_key)?,
            selector,
            protocol,
            speed_khz,
            connect_under_reset: p.connect_under_reset.as_ref().is_some_and(|r| *r.get_ref()),
        };
        Ok((spec, console))
    }

    /// `[probe] rtt_channels`: up channel numbers, at least one, none twice.
    fn rtt_channels(
        &self,
        list: &Spanned<Vec<Spanned<u32>>>,
        key: &KeyPath,
    ) -> Result<Vec<usize>, ConfigError> {
        if list.get_ref().is_empty() {
            return Err(self.invalid(
                list.span(),
                key,
                "must name at least one RTT up channel (leave the key out to read them all)",
            ));
        }
        let mut channels: Vec<usize> = Vec::new();
        for value in list.get_ref() {
            let channel = *value.get_ref() as usize;
            if channels.contains(&channel) {
                return Err(self.invalid(
                    value.span(),
                    key,
                    format!("up channel {channel} is listed twice"),
                ));
            }
            channels.push(channel);
        }
        Ok(channels)
    }

    fn gdb(&self, raw: Option<Spanned<RawGdb>>, needed_at: usize) -> Result<GdbSpec, ConfigError> {
        let table = KeyPath::new(&["gdb"]);
        let Some(raw) = raw else {
            return Err(self.missing(
                needed_at,
                table,
                "method = \"gdb\" needs a [gdb] table with `remote`",
            ));
        };
        let g = raw.get_ref();
        let remote_key = table.child("remote");
        let remote = self.required(
            g.remote.as_ref(),
            raw.span().start,
            &remote_key,
            "the GDB server, e.g. \"127.0.0.1:3333\"",
        )?;
        let text = remote.get_ref();
        // A serial GDB server (Black Magic Probe) is a device path; anything else is HOST:PORT.
        if !text.starts_with('/') {
            parse_host_port(text).map_err(|why| {
                self.invalid(
                    remote.span(),
                    &remote_key,
                    format!("`{text}` is not HOST:PORT or a device path: {why}"),
                )
            })?;
        }
        Ok(GdbSpec {
            remote: text.clone(),
            gdb: self
                .optional_non_empty(g.gdb.as_ref(), &table.child("gdb"))?
                .unwrap_or_else(|| DEFAULT_GDB.to_string()),
            init: g
                .init
                .as_ref()
                .map(|list| self.strings(list, &table.child("init")))
                .transpose()?
                .unwrap_or_default(),
            start: self.gdb_start(g, &table)?,
        })
    }

    fn gdb_start(&self, g: &RawGdb, table: &KeyPath) -> Result<GdbStart, ConfigError> {
        let monitor = match &g.start {
            None => false,
            Some(value) => match value.get_ref().as_str() {
                "vector-table" => false,
                "monitor-reset" => true,
                other => {
                    return Err(self.unknown_choice(
                        value,
                        &table.child("start"),
                        other,
                        GdbStart::NAMES,
                    ))
                }
            },
        };
        let reset_key = table.child("reset");
        match (monitor, &g.reset) {
            (true, reset) => Ok(GdbStart::MonitorReset {
                command: self
                    .optional_non_empty(reset.as_ref(), &reset_key)?
                    .unwrap_or_else(|| DEFAULT_GDB_RESET.to_string()),
            }),
            // A reset command that would never run is a mistake in the file.
            (false, Some(reset)) => Err(self.invalid(
                reset.span(),
                &reset_key,
                "only used with start = \"monitor-reset\"",
            )),
            (false, None) => Ok(GdbStart::VectorTable),
        }
    }

    fn serial(&self, raw: Spanned<RawSerial>) -> Result<ConsoleSpec, ConfigError> {
        let table = KeyPath::new(&["serial"]);
        let s = raw.get_ref();
        let port_key = table.child("port");
        let port = self.required(
            s.port.as_ref(),
            raw.span().start,
            &port_key,
            "a device path like \"/dev/ttyACM0\", or \"socket://HOST:PORT\"",
        )?;
        let parsed = parse_serial_port(port.get_ref())
            .map_err(|why| self.invalid(port.span(), &port_key, why))?;
        if let SerialPort::Socket { .. } = parsed {
            // A raw TCP console has no framing and no modem lines to set: a key that cannot take
            // effect is a mistake in the file, not something to ignore.
            let device_only = [
                ("data_bits", s.data_bits.as_ref().map(Spanned::span)),
                ("parity", s.parity.as_ref().map(Spanned::span)),
                ("stop_bits", s.stop_bits.as_ref().map(Spanned::span)),
                ("flow_control", s.flow_control.as_ref().map(Spanned::span)),
                ("reset", s.reset.as_ref().map(Spanned::span)),
                ("reset_ms", s.reset_ms.as_ref().map(Spanned::span)),
            ];
            if let Some((key, span)) = first_set(device_only) {
                return Err(self.invalid(
                    span,
                    &table.child(key),
                    format!(
                        "only used with a serial device: {} is a TCP socket, which has no \
                         framing or modem lines (set them on the terminal server)",
                        port.get_ref()
                    ),
                ));
            }
        }
        Ok(ConsoleSpec::Serial {
            port: parsed,
            baud: self.at_least(s.baud.as_ref(), &table.child("baud"), 1, DEFAULT_BAUD)?,
            line: self.serial_line(s, &table)?,
            reset: self.serial_reset(s, &table)?,
            reconnect: self.at_least(s.reconnect.as_ref(), &table.child("reconnect"), 0, 0)?,
            nonce: s.nonce.as_ref().is_some_and(|n| *n.get_ref()),
        })
    }

    fn serial_line(&self, s: &RawSerial, table: &KeyPath) -> Result<SerialLine, ConfigError> {
        let default = SerialLine::default();
        let in_range = |value: Option<&Spanned<u32>>, key: &str, range: &[u32], default: u8| {
            let Some(value) = value else {
                return Ok(default);
            };
            let n = *value.get_ref();
            match u8::try_from(n) {
                Ok(small) if range.contains(&n) => Ok(small),
                _ => Err(self.invalid(
                    value.span(),
                    &table.child(key),
                    format!(
                        "must be one of {}, got {n}",
                        range
                            .iter()
                            .map(u32::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )),
            }
        };
        let parity = match &s.parity {
            None => default.parity,
            Some(value) => match value.get_ref().as_str() {
                "none" => Parity::None,
                "odd" => Parity::Odd,
                "even" => Parity::Even,
                other => {
                    return Err(self.unknown_choice(
                        value,
                        &table.child("parity"),
                        other,
                        PARITY_NAMES,
                    ))
                }
            },
        };
        let flow_control = match &s.flow_control {
            None => default.flow_control,
            Some(value) => match value.get_ref().as_str() {
                "none" => FlowControl::None,
                "software" => FlowControl::Software,
                "hardware" => FlowControl::Hardware,
                other => {
                    return Err(self.unknown_choice(
                        value,
                        &table.child("flow_control"),
                        other,
                        FLOW_CONTROL_NAMES,
                    ))
                }
            },
        };
        Ok(SerialLine {
            data_bits: in_range(
                s.data_bits.as_ref(),
                "data_bits",
                &[5, 6, 7, 8],
                default.data_bits,
            )?,
            parity,
            stop_bits: in_range(
                s.stop_bits.as_ref(),
                "stop_bits",
                &[1, 2],
                default.stop_bits,
            )?,
            flow_control,
        })
    }

    fn serial_reset(&self, s: &RawSerial, table: &KeyPath) -> Result<SerialReset, ConfigError> {
        let pulse = Duration::from_millis(u64::from(self.at_least(
            s.reset_ms.as_ref(),
            &table.child("reset_ms"),
            1,
            DEFAULT_RESET_PULSE_MS,
        )?));
        let reset = match &s.reset {
            None => SerialReset::None,
            Some(value) => match value.get_ref().as_str() {
                "none" => SerialReset::None,
                "dtr" => SerialReset::Dtr { pulse },
                "rts" => SerialReset::Rts { pulse },
                other => {
                    return Err(self.unknown_choice(
                        value,
                        &table.child("reset"),
                        other,
                        SERIAL_RESET_NAMES,
                    ))
                }
            },
        };
        if let (SerialReset::None, Some(ms)) = (reset, &s.reset_ms) {
            return Err(self.invalid(
                ms.span(),
                &table.child("reset_ms"),
                "only used with reset = \"dtr\" or \"rts\"",
            ));
        }
        Ok(reset)
    }

    fn labgrid(
        &self,
        raw: Option<Spanned<RawLabgrid>>,
        flash: Option<Spanned<RawFlash>>,
        needed_at: usize,
    ) -> Result<LabgridSpec, ConfigError> {
        let table = KeyPath::new(&["labgrid"]);
        let Some(raw) = raw else {
            return Err(self.missing(
                needed_at,
                table,
                "backend = \"labgrid\" needs a [labgrid] table with `place` or `tags`",
            ));
        };
        let l = raw.get_ref();
        let place = self.optional_non_empty(l.place.as_ref(), &table.child("place"))?;
        let tags_key = table.child("tags");
        let mut tags = Vec::new();
        for tag in l.tags.iter().flat_map(|t| t.get_ref()) {
            let well_formed = tag
                .get_ref()
                .split_once('=')
                .is_some_and(|(k, v)| !k.trim().is_empty() && !v.trim().is_empty());
            if !well_formed {
                return Err(self.invalid(
                    tag.span(),
                    &tags_key,
                    format!("`{}` is not KEY=VALUE", tag.get_ref()),
                ));
            }
            tags.push(tag.get_ref().clone());
        }
        if place.is_none() && tags.is_empty() {
            return Err(self.missing(
                raw.span().start,
                table.child("place"),
                "[labgrid] needs `place` or `tags` to know which place to reserve",
            ));
        }
        let coordinator =
            self.optional_non_empty(l.coordinator.as_ref(), &table.child("coordinator"))?;
        let flash = flash.map(|f| self.labgrid_flash(f)).transpose()?;
        Ok(LabgridSpec {
            place,
            tags,
            coordinator,
            flash,
        })
    }

    /// `[flash]` of a labgrid board: a command only, whose placeholders are the place's resource
    /// values as well as the image's, known only once the place is acquired.
    fn labgrid_flash(&self, flash: Spanned<RawFlash>) -> Result<LabgridFlash, ConfigError> {
        let table = KeyPath::new(&["flash"]);
        let f = flash.get_ref();
        let method_key = table.child("method");
        let method = self.required(
            f.method.as_ref(),
            flash.span().start,
            &method_key,
            "a labgrid board flashes with method = \"command\"",
        )?;
        if method.get_ref() != "command" {
            return Err(self.invalid(
                method.span(),
                &method_key,
                "a labgrid board flashes with method = \"command\" (the place's resource values \
                 such as {host} and {port} are its placeholders)",
            ));
        }
        if let Some(reset) = &f.reset_command {
            return Err(self.invalid(
                reset.span(),
                &table.child("reset_command"),
                "a labgrid board is reset through its place's power switch",
            ));
        }
        let key = table.child("command");
        let command = self.required(
            f.command.as_ref(),
            flash.span().start,
            &key,
            "method = \"command\" needs the flasher's command line",
        )?;
        let timeout = self.seconds(
            f.timeout_s.as_ref(),
            &table.child("timeout_s"),
            DEFAULT_FLASH_TIMEOUT,
        )?;
        Ok(LabgridFlash {
            command: self.non_empty(command, &key)?,
            timeout,
        })
    }

    fn power(&self, raw: Spanned<RawPower>) -> Result<PowerSpec, ConfigError> {
        let table = KeyPath::new(&["power"]);
        let p = raw.get_ref();
        let command = |value: Option<&Str>, key: &str| {
            let key = table.child(key);
            if let Some(value) = value {
                self.placeholders(value, &key, POWER_PLACEHOLDERS)?;
            }
            self.optional_non_empty(value, &key)
        };
        let spec = PowerSpec {
            on: command(p.on.as_ref(), "on")?,
            off: command(p.off.as_ref(), "off")?,
            cycle: command(p.cycle.as_ref(), "cycle")?,
            off_pause: self.seconds(p.off_s.as_ref(), &table.child("off_s"), DEFAULT_POWER_OFF)?,
            timeout: self.seconds(
                p.timeout_s.as_ref(),
                &table.child("timeout_s"),
                DEFAULT_POWER_TIMEOUT,
            )?,
            retry_on_hang: false,
        };
        if spec.on.is_none() && spec.off.is_none() && spec.cycle.is_none() {
            return Err(self.missing(
                raw.span().start,
                table.child("cycle"),
                "[power] needs at least one of `on`, `off`, `cycle`",
            ));
        }
        // On by default whenever the board can be power-cycled; asked for without a way to
        // cycle it, it is a mistake in the file rather than a retry that silently never happens.
        let retry_on_hang = match &p.retry_on_hang {
            None => spec.can_cycle(),
            Some(retry) if *retry.get_ref() && !spec.can_cycle() => {
                return Err(self.invalid(
                    retry.span(),
                    &table.child("retry_on_hang"),
                    "needs `cycle`, or both `off` and `on`, to power-cycle the board",
                ))
            }
            Some(retry) => *retry.get_ref(),
        };
        Ok(PowerSpec {
            retry_on_hang,
            ..spec
        })
    }

    fn health(&self, raw: Spanned<RawHealth>) -> Result<HealthSpec, ConfigError> {
        let key = KeyPath::new(&["health", "profile"]);
        let profile = self.required(
            raw.get_ref().profile.as_ref(),
            raw.span().start,
            &key,
            "the known-good profile that checks the board",
        )?;
        Ok(HealthSpec {
            profile: self.non_empty(profile, &key)?,
        })
    }

    fn build(&self, raw: Spanned<RawBuild>) -> Result<BuildSpec, ConfigError> {
        let table = KeyPath::new(&["build"]);
        let at = raw.span().start;
        let b = raw.get_ref();

        let command_key = table.child("command");
        let command = self.required(
            b.command.as_ref(),
            at,
            &command_key,
            "the shell command that builds the image",
        )?;
        self.placeholders(command, &command_key, BUILD_PLACEHOLDERS)?;
        let command = self.non_empty(command, &command_key)?;

        let cwd_key = table.child("cwd");
        let cwd = match &b.cwd {
            None => PathBuf::from(DEFAULT_BUILD_CWD),
            Some(value) => {
                self.placeholders(value, &cwd_key, BUILD_PLACEHOLDERS)?;
                self.repo_path(value, &cwd_key, false)?
            }
        };

        let artifact_key = table.child("artifact");
        let artifact = self.required(
            b.artifact.as_ref(),
            at,
            &artifact_key,
            "the ELF the build produces, relative to the repository root",
        )?;
        self.placeholders(artifact, &artifact_key, BUILD_PLACEHOLDERS)?;
        let artifact = self.repo_path(artifact, &artifact_key, true)?;

        Ok(BuildSpec {
            command,
            cwd,
            artifact,
            timeout: self.seconds(
                b.timeout_s.as_ref(),
                &table.child("timeout_s"),
                DEFAULT_BUILD_TIMEOUT,
            )?,
        })
    }

    fn test(&self, raw: Spanned<RawTest>, profile_name: &str) -> Result<TestSpec, ConfigError> {
        let table = KeyPath::new(&["test"]);
        let t = raw.get_ref();
        let harness_key = table.child("harness");
        let harness_value = self.required(
            t.harness.as_ref(),
            raw.span().start,
            &harness_key,
            "one of: unity, ztest, regex",
        )?;
        let harness = match (harness_value.get_ref().as_str(), &t.regex) {
            ("regex", Some(regex)) => Harness::Regex(Box::new(self.regex(regex, profile_name)?)),
            ("regex", None) => {
                return Err(self.missing(
                    raw.span().start,
                    table.child("regex"),
                    "harness = \"regex\" needs a [test.regex] table with `patterns`",
                ))
            }
            ("unity" | "ztest", Some(regex)) => {
                return Err(ConfigError::TableNotAllowed {
                    at: self.src.at(regex.span().start),
                    key: table.child("regex"),
                    reason: format!(
                        "it is only read with harness = \"regex\", not \"{}\"",
                        harness_value.get_ref()
                    ),
                })
            }
            ("unity", None) => Harness::Unity,
            ("ztest", None) => Harness::Ztest,
            (other, _) => {
                return Err(self.unknown_choice(harness_value, &harness_key, other, HARNESS_NAMES))
            }
        };
        Ok(TestSpec {
            harness,
            timeout: self.seconds(
                t.timeout_s.as_ref(),
                &table.child("timeout_s"),
                DEFAULT_TEST_TIMEOUT,
            )?,
        })
    }

    /// `[test.regex]`: every pattern compiles here, so a typo is reported before anything runs.
    fn regex(&self, raw: &Spanned<RawRegex>, profile_name: &str) -> Result<RegexSpec, ConfigError> {
        let table = KeyPath::new(&["test", "regex"]);
        let r = raw.get_ref();

        let type_key = table.child("type");
        let mode = match &r.type_ {
            None => RegexMode::MultiLine,
            Some(value) => match value.get_ref().as_str() {
                "one_line" => RegexMode::OneLine,
                "multi_line" => RegexMode::MultiLine,
                other => {
                    return Err(self.unknown_choice(value, &type_key, other, REGEX_TYPE_NAMES))
                }
            },
        };

        let patterns_key = table.child("patterns");
        let list = self.required(
            r.patterns.as_ref(),
            raw.span().start,
            &patterns_key,
            "the regular expressions the console must show for a PASS",
        )?;
        let patterns = self.patterns(list, &patterns_key)?;
        match (mode, patterns.len()) {
            (_, 0) => {
                return Err(self.invalid(
                    list.span(),
                    &patterns_key,
                    "needs at least one pattern (a run that checks nothing proves nothing)",
                ))
            }
            (RegexMode::OneLine, 1) | (RegexMode::MultiLine, _) => {}
            (RegexMode::OneLine, _) => {
                return Err(self.invalid(
                    list.span(),
                    &patterns_key,
                    "type = \"one_line\" takes exactly one pattern; use type = \"multi_line\" \
                     for several",
                ))
            }
        }
        // Ordered, a repeated pattern asks for its line that many times (as Twister's console
        // harness reads it), and its later cases are named `<pattern> #2`, ...; unordered,
        // every pattern is tried on every line, so a repeat would match the first one's line and
        // check nothing more.
        let ordered = r.ordered.as_ref().is_none_or(|o| *o.get_ref());
        let repeat = list.get_ref().iter().enumerate().find_map(|(index, item)| {
            list.get_ref()[..index]
                .iter()
                .position(|earlier| earlier.get_ref() == item.get_ref())
                .map(|first| (first, index, item))
        });
        if let (Some((first, index, item)), false) =
            (repeat, ordered && mode == RegexMode::MultiLine)
        {
            return Err(self.invalid(
                item.span(),
                &patterns_key,
                format!(
                    "`{}` is listed twice (patterns {} and {}): with ordered = false every \
                     pattern is looked for on every line, so the second would match the first \
                     one's line and check nothing more; remove it, or set ordered = true to \
                     require the line twice",
                    item.get_ref(),
                    first + 1,
                    index + 1
                ),
            ));
        }
        let case_names = crate::config::model::pattern_case_names(
            list.get_ref().iter().map(|item| item.get_ref().as_str()),
        );
        if let Some((index, name)) = case_names
            .iter()
            .enumerate()
            .find(|(index, name)| case_names[..*index].contains(name))
        {
            return Err(self.invalid(
                list.get_ref()[index].span(),
                &patterns_key,
                format!(
                    "pattern {} names its case `{name}`, as another pattern's case is named: \
                     write it differently",
                    index + 1
                ),
            ));
        }

        let case_key = table.child("case_name");
        let case_name = match &r.case_name {
            None => profile_name.to_string(),
            Some(value) => {
                let name = self.non_empty(value, &case_key)?;
                if mode == RegexMode::MultiLine && case_names.contains(&name) {
                    return Err(self.invalid(
                        value.span(),
                        &case_key,
                        format!(
                            "`{name}` is also a pattern, and multi_line names each pattern's case \
                             after the pattern: pick another name"
                        ),
                    ));
                }
                name
            }
        };

        let optional = |list: &Option<StrList>, name: &str| match list {
            None => Ok(Vec::new()),
            Some(list) => {
                self.not_required(list, &patterns, &table.child(name))?;
                self.patterns(list, &table.child(name))
            }
        };
        let fail_patterns = optional(&r.fail_patterns, "fail_patterns")?;
        let crash_patterns = optional(&r.crash_patterns, "crash_patterns")?;
        Ok(RegexSpec {
            mode,
            ordered,
            patterns,
            fail_patterns,
            crash_patterns,
            case_name,
        })
    }

    /// A fail or crash pattern that is also a required pattern could never fire: a line a
    /// required pattern matches is never a failure line (so `Error count: 0` can be required
    /// while `Error` fails the run). A pattern listed twice in one of these lists is harmless
    /// (the first decides) and taken as it is.
    fn not_required(
        &self,
        list: &StrList,
        required: &[Pattern],
        key: &KeyPath,
    ) -> Result<(), ConfigError> {
        let Some(item) = list
            .get_ref()
            .iter()
            .find(|item| required.iter().any(|p| p.as_str() == item.get_ref()))
        else {
            return Ok(());
        };
        Err(self.invalid(
            item.span(),
            key,
            format!(
                "`{}` is also in `patterns`: a line a required pattern matches is never a \
                 failure or crash line, so this one could never fire; keep it in one list",
                item.get_ref()
            ),
        ))
    }

    /// Compiles each pattern; an invalid one is reported at the character the regex parser
    /// complains about when the string literal allows pointing there.
    fn patterns(&self, list: &StrList, key: &KeyPath) -> Result<Vec<Pattern>, ConfigError> {
        let mut patterns = Vec::new();
        for item in list.get_ref() {
            let source = item.get_ref();
            if source.is_empty() {
                return Err(self.invalid(
                    item.span(),
                    key,
                    "must not be empty (it would match every line)",
                ));
            }
            match Pattern::new(source) {
                Ok(pattern) => patterns.push(pattern),
                Err(e) => {
                    let (reason, index) = regex_error(source, &e);
                    let offset = match index {
                        Some(index) => self.src.offset_in_string(item.span(), source, index),
                        None => item.span().start,
                    };
                    return Err(ConfigError::InvalidValue {
                        at: self.src.at(offset),
                        key: key.clone(),
                        reason: format!("`{source}` is not a valid regex: {reason}"),
                    });
                }
            }
        }
        Ok(patterns)
    }

    fn goal(&self, raw: Option<Spanned<RawGoal>>) -> Result<GoalSpec, ConfigError> {
        let table = KeyPath::new(&["goal"]);
        let g = raw.as_ref().map(Spanned::get_ref);
        Ok(GoalSpec {
            fail_to_pass: g
                .and_then(|g| g.fail_to_pass.as_ref())
                .map(|list| self.strings(list, &table.child("fail_to_pass")))
                .transpose()?
                .unwrap_or_default(),
            confirm_runs: self.at_least(
                g.and_then(|g| g.confirm_runs.as_ref()),
                &table.child("confirm_runs"),
                1,
                DEFAULT_CONFIRM_RUNS,
            )?,
        })
    }

    /// `[lint]`: a format the command's output can be read with, a regex with the groups the
    /// reader needs, and something to judge.
    fn lint(&self, raw: &Spanned<RawLint>) -> Result<LintSpec, ConfigError> {
        let table = KeyPath::new(&["lint"]);
        let l = raw.get_ref();
        let command = self.optional_non_empty(l.command.as_ref(), &table.child("command"))?;
        let format_key = table.child("format");
        let format = match (&l.format, &command) {
            (Some(value), _) => Format::from_name(value.get_ref()).ok_or_else(|| {
                self.unknown_choice(value, &format_key, value.get_ref(), Format::NAMES)
            })?,
            (None, Some(_)) => return Err(self.missing(
                raw.span().start,
                format_key,
                "how the lint command's output is read: one of gcc, cppcheck, clang-tidy, regex",
            )),
            (None, None) => Format::Gcc,
        };
        let pattern_key = table.child("pattern");
        let pattern =
            match (&l.pattern, format) {
                (Some(value), Format::Regex) => {
                    let list = Spanned::new(value.span(), vec![value.clone()]);
                    let compiled = self.patterns(&list, &pattern_key)?.remove(0);
                    let groups: Vec<&str> = compiled.regex().capture_names().flatten().collect();
                    if let Some(group) = ["file", "message"].iter().find(|g| !groups.contains(g)) {
                        return Err(self.invalid(
                            value.span(),
                            &pattern_key,
                            format!(
                            "needs a named group `(?P<{group}>...)`: a finding has a file and a \
                             message (`line`, `column`, `id` and `severity` are optional)"
                        ),
                        ));
                    }
                    Some(compiled)
                }
                (None, Format::Regex) => return Err(self.missing(
                    raw.span().start,
                    pattern_key,
                    "format = \"regex\" reads the output with a pattern with named groups file, \
                     message (and optionally line, column, id, severity)",
                )),
                (Some(value), _) => {
                    return Err(self.invalid(
                        value.span(),
                        &pattern_key,
                        format!(
                            "it is only read with format = \"regex\", not \"{}\"",
                            format.name()
                        ),
                    ))
                }
                (None, _) => None,
            };
        let build_warnings = l.build_warnings.as_ref().is_none_or(|b| *b.get_ref());
        if command.is_none() && !build_warnings {
            return Err(self.missing(
                raw.span().start,
                table.child("command"),
                "with build_warnings = false and no command, [lint] has nothing to check",
            ));
        }
        let new_findings = match &l.new_findings {
            None => NewFindings::Reject,
            Some(value) => match value.get_ref().as_str() {
                "reject" => NewFindings::Reject,
                "warn" => NewFindings::Warn,
                other => {
                    return Err(self.unknown_choice(
                        value,
                        &table.child("new_findings"),
                        other,
                        &["reject", "warn"],
                    ))
                }
            },
        };
        Ok(LintSpec {
            command,
            format,
            pattern,
            timeout: self.seconds(
                l.timeout_s.as_ref(),
                &table.child("timeout_s"),
                DEFAULT_LINT_TIMEOUT,
            )?,
            build_warnings,
            new_findings,
        })
    }

    fn snapshot(&self, raw: Option<Spanned<RawSnapshot>>) -> Result<SnapshotSpec, ConfigError> {
        let table = KeyPath::new(&["snapshot"]);
        let mb = self.at_least(
            raw.as_ref()
                .and_then(|s| s.get_ref().max_untracked_mb.as_ref()),
            &table.child("max_untracked_mb"),
            1,
            DEFAULT_MAX_UNTRACKED_MB,
        )?;
        Ok(SnapshotSpec {
            max_untracked_bytes: u64::from(mb) << 20,
        })
    }

    fn commit(&self, raw: Option<Spanned<RawCommit>>) -> Result<CommitSpec, ConfigError> {
        let table = KeyPath::new(&["commit"]);
        let c = raw.as_ref().map(Spanned::get_ref);
        Ok(CommitSpec {
            hooks: c
                .and_then(|c| c.hooks.as_ref())
                .is_none_or(|h| *h.get_ref()),
            timeout: self.seconds(
                c.and_then(|c| c.timeout_s.as_ref()),
                &table.child("timeout_s"),
                DEFAULT_HOOK_TIMEOUT,
            )?,
        })
    }

    fn limits(&self, raw: Option<Spanned<RawLoop>>) -> Result<LoopSpec, ConfigError> {
        let table = KeyPath::new(&["loop"]);
        let l = raw.as_ref().map(Spanned::get_ref);
        Ok(LoopSpec {
            max_iterations: self.at_least(
                l.and_then(|l| l.max_iterations.as_ref()),
                &table.child("max_iterations"),
                1,
                DEFAULT_MAX_ITERATIONS,
            )?,
            no_progress_limit: self.at_least(
                l.and_then(|l| l.no_progress_limit.as_ref()),
                &table.child("no_progress_limit"),
                1,
                DEFAULT_NO_PROGRESS_LIMIT,
            )?,
        })
    }

    fn policy(&self, raw: Option<Spanned<RawPolicy>>) -> Result<PolicySpec, ConfigError> {
        let table = KeyPath::new(&["policy"]);
        let p = raw.as_ref().map(Spanned::get_ref);
        let allow = match p.and_then(|p| p.allow.as_ref()) {
            None => DEFAULT_ALLOW.iter().map(|g| g.to_string()).collect(),
            Some(list) => self.globs(list, &table.child("allow"))?,
        };
        let deny = match p.and_then(|p| p.deny.as_ref()) {
            None => Vec::new(),
            Some(list) => self.globs(list, &table.child("deny"))?,
        };
        Ok(PolicySpec {
            allow,
            deny,
            max_changed_lines: self.at_least(
                p.and_then(|p| p.max_changed_lines.as_ref()),
                &table.child("max_changed_lines"),
                1,
                DEFAULT_MAX_CHANGED_LINES,
            )?,
            max_changed_files: self.at_least(
                p.and_then(|p| p.max_changed_files.as_ref()),
                &table.child("max_changed_files"),
                1,
                DEFAULT_MAX_CHANGED_FILES,
            )?,
            allow_builtin: match p.and_then(|p| p.allow_builtin.as_ref()) {
                None => Vec::new(),
                Some(list) => self.builtin_denies(list, &table.child("allow_builtin"))?,
            },
        })
    }

    fn builtin_denies(
        &self,
        list: &StrList,
        key: &KeyPath,
    ) -> Result<Vec<BuiltinDeny>, ConfigError> {
        let names: Vec<&str> = BuiltinDeny::ALL.iter().map(|f| f.name()).collect();
        list.get_ref()
            .iter()
            .map(|item| {
                BuiltinDeny::from_name(item.get_ref()).ok_or_else(|| {
                    self.invalid(
                        item.span(),
                        key,
                        format!(
                            "`{}` is not a built-in deny (expected one of: {})",
                            item.get_ref(),
                            names.join(", ")
                        ),
                    )
                })
            })
            .collect()
    }

    /// Globs matched against repository-relative paths: they must compile, and a leading `/`
    /// would never match anything.
    fn globs(&self, list: &StrList, key: &KeyPath) -> Result<Vec<String>, ConfigError> {
        let mut globs = Vec::new();
        for item in list.get_ref() {
            let glob = self.non_empty(item, key)?;
            if glob.starts_with('/') {
                return Err(self.invalid(
                    item.span(),
                    key,
                    format!("`{glob}` must be relative to the repository root"),
                ));
            }
            if let Err(e) = globset::Glob::new(&glob) {
                return Err(self.invalid(
                    item.span(),
                    key,
                    format!("`{glob}` is not a valid glob: {}", e.kind()),
                ));
            }
            globs.push(glob);
        }
        Ok(globs)
    }

    fn strategy(&self, raw: Option<Spanned<RawStrategy>>) -> Result<StrategySpec, ConfigError> {
        let Some(raw) = raw else {
            return Ok(StrategySpec::default());
        };
        let s = raw.into_inner();
        Ok(StrategySpec {
            llm: s.llm.map(|l| self.llm(l)).transpose()?,
            command: s.command.map(|c| self.command_strategy(c)).transpose()?,
        })
    }

    fn llm(&self, raw: Spanned<RawLlm>) -> Result<LlmSpec, ConfigError> {
        let table = KeyPath::new(&["strategy", "llm"]);
        let l = raw.get_ref();

        let url_key = table.child("base_url");
        let base_url = self.optional_non_empty(l.base_url.as_ref(), &url_key)?;
        if let (Some(value), Some(url)) = (&l.base_url, &base_url) {
            let rest = url
                .strip_prefix("http://")
                .or_else(|| url.strip_prefix("https://"));
            if rest.is_none_or(|r| r.is_empty() || r.starts_with('/')) {
                return Err(self.invalid(
                    value.span(),
                    &url_key,
                    format!("`{url}` is not an http:// or https:// URL with a host"),
                ));
            }
        }

        let env_key = table.child("api_key_env");
        let api_key_env = self.optional_non_empty(l.api_key_env.as_ref(), &env_key)?;
        if let (Some(value), Some(var)) = (&l.api_key_env, &api_key_env) {
            let is_var_name = var.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !is_var_name {
                return Err(self.invalid(
                    value.span(),
                    &env_key,
                    "must be the name of the environment variable that holds the key (like \
                     OPENAI_API_KEY), never the key itself",
                ));
            }
        }

        let temperature = match &l.temperature {
            None => None,
            Some(value) => {
                let t = *value.get_ref();
                if !(t.is_finite() && (0.0..=MAX_TEMPERATURE).contains(&t)) {
                    return Err(self.invalid(
                        value.span(),
                        &table.child("temperature"),
                        format!("must be between 0.0 and {MAX_TEMPERATURE:.1}, got {t}"),
                    ));
                }
                Some(t)
            }
        };

        let token_budget = match &l.token_budget {
            None => None,
            Some(value) if *value.get_ref() == 0 => {
                return Err(self.invalid(
                    value.span(),
                    &table.child("token_budget"),
                    "must be at least 1 (leave it out for no limit)",
                ));
            }
            Some(value) => Some(*value.get_ref()),
        };

        let timeout = self.seconds(
            l.timeout_s.as_ref(),
            &table.child("timeout_s"),
            DEFAULT_LLM_TIMEOUT,
        )?;
        // Both are parts of the one request `timeout_s` bounds.
        let within_timeout = |value: Option<&Spanned<Seconds>>, name: &str, default: Duration| {
            let key = table.child(name);
            let limit = self.seconds(value, &key, default)?;
            match value {
                Some(v) if limit > timeout => Err(self.invalid(
                    v.span(),
                    &key,
                    format!(
                        "must not be longer than timeout_s ({} s), which bounds the whole request",
                        timeout.as_secs_f64()
                    ),
                )),
                Some(_) | None => Ok(limit),
            }
        };
        let connect_timeout = within_timeout(
            l.connect_timeout_s.as_ref(),
            "connect_timeout_s",
            DEFAULT_LLM_CONNECT_TIMEOUT.min(timeout),
        )?;
        let idle_timeout = within_timeout(l.idle_timeout_s.as_ref(), "idle_timeout_s", timeout)?;

        Ok(LlmSpec {
            base_url,
            model: self.optional_non_empty(l.model.as_ref(), &table.child("model"))?,
            api_key_env,
            temperature,
            timeout,
            connect_timeout,
            idle_timeout,
            candidates: self.at_least(
                l.candidates.as_ref(),
                &table.child("candidates"),
                1,
                DEFAULT_LLM_CANDIDATES,
            )?,
            max_retries: self.at_least(
                l.max_retries.as_ref(),
                &table.child("max_retries"),
                0,
                DEFAULT_LLM_MAX_RETRIES,
            )?,
            parallel: self.at_least(
                l.parallel.as_ref(),
                &table.child("parallel"),
                1,
                DEFAULT_LLM_PARALLEL,
            )?,
            token_budget,
        })
    }

    fn command_strategy(
        &self,
        raw: Spanned<RawCommandStrategy>,
    ) -> Result<CommandStrategySpec, ConfigError> {
        let table = KeyPath::new(&["strategy", "command"]);
        let c = raw.get_ref();
        let argv_key = table.child("argv");
        let argv = self.required(
            c.argv.as_ref(),
            raw.span().start,
            &argv_key,
            "the agent program and its arguments, e.g. [\"my-agent\", \"--json\"]",
        )?;
        if argv.get_ref().is_empty() {
            return Err(self.invalid(argv.span(), &argv_key, "must name a program"));
        }
        Ok(CommandStrategySpec {
            argv: self.strings(argv, &argv_key)?,
            timeout: self.seconds(
                c.timeout_s.as_ref(),
                &table.child("timeout_s"),
                DEFAULT_COMMAND_TIMEOUT,
            )?,
            candidates: self.at_least(c.candidates.as_ref(), &table.child("candidates"), 1, 1)?,
        })
    }

    fn timeouts(
        &self,
        raw: Option<Spanned<BTreeMap<Str, Spanned<Seconds>>>>,
    ) -> Result<BTreeMap<crate::machine::State, Duration>, ConfigError> {
        let table = KeyPath::new(&["timeouts"]);
        let mut timeouts = BTreeMap::new();
        for (key, value) in raw.iter().flat_map(|t| t.get_ref()) {
            let here = table.child(key.get_ref());
            let state =
                names::state_for_key(key.get_ref()).ok_or_else(|| ConfigError::UnknownKey {
                    at: self.src.at(key.span().start),
                    key: here.clone(),
                    expected: names::timeout_state_names(),
                })?;
            timeouts.insert(state, self.seconds(Some(value), &here, Duration::ZERO)?);
        }
        Ok(timeouts)
    }

    fn recovery(
        &self,
        raw: Option<Spanned<BTreeMap<Str, Spanned<u32>>>>,
    ) -> Result<BTreeMap<crate::machine::ErrorClass, u32>, ConfigError> {
        let table = KeyPath::new(&["recovery"]);
        let mut budgets = BTreeMap::new();
        for (key, value) in raw.iter().flat_map(|t| t.get_ref()) {
            let class =
                names::class_for_key(key.get_ref()).ok_or_else(|| ConfigError::UnknownKey {
                    at: self.src.at(key.span().start),
                    key: table.child(key.get_ref()),
                    expected: names::recovery_class_names(),
                })?;
            budgets.insert(class, *value.get_ref());
        }
        Ok(budgets)
    }
}

/// Non-empty, starts with an ASCII letter or digit, and otherwise holds only ASCII letters,
/// digits and `extra`.
/// The regex parser's complaint in one line, and the character index (in `source`) it points at.
///
/// regex prints a syntax error as the pattern, a line of carets under the offending part, then
/// `error: ...`; the caret's column is the position. A pattern with a line break gets numbered
/// lines instead, so no position is taken from it.
fn regex_error(source: &str, err: &regex::Error) -> (String, Option<usize>) {
    const INDENT: usize = 4;
    match err {
        regex::Error::Syntax(text) => {
            let reason = text
                .lines()
                .rev()
                .find_map(|line| line.strip_prefix("error: "))
                .unwrap_or(text.as_str())
                .to_string();
            let column = text
                .lines()
                .find(|line| {
                    line.contains('^') && line.chars().all(|c| matches!(c, ' ' | '^' | '-'))
                })
                .and_then(|line| line.find('^'))
                .and_then(|caret| caret.checked_sub(INDENT));
            let index = column
                .filter(|_| !source.contains('\n'))
                .and_then(|column| source.char_indices().nth(column).map(|(i, _)| i));
            (reason, index)
        }
        regex::Error::CompiledTooBig(limit) => (
            format!("it compiles to more than the {limit} bytes a regex may take"),
            None,
        ),
        other => (other.to_string(), None),
    }
}

fn is_safe_word(text: &str, extra: &str) -> bool {
    text.starts_with(|c: char| c.is_ascii_alphanumeric())
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || extra.contains(c))
}

/// `VID:PID[:SERIAL]`, as probe-rs takes it.
fn is_probe_selector(text: &str) -> bool {
    let mut parts = text.splitn(3, ':');
    let is_hex_id = |p: Option<&str>| {
        p.is_some_and(|p| (1..=4).contains(&p.len()) && p.chars().all(|c| c.is_ascii_hexdigit()))
    };
    let ids = is_hex_id(parts.next()) && is_hex_id(parts.next());
    ids && parts.next().is_none_or(|serial| !serial.is_empty())
}

/// `HOST:PORT`, `[IPV6]:PORT`. The host comes back without brackets.
fn parse_host_port(text: &str) -> Result<(String, u16), String> {
    let (host, port) = match text.strip_prefix('[') {
        Some(rest) => {
            let (host, after) = rest
                .split_once(']')
                .ok_or_else(|| "`[` without `]`".to_string())?;
            let port = after
                .strip_prefix(':')
                .ok_or_else(|| "no `:PORT` after the address".to_string())?;
            (host, port)
        }
        None => {
            let (host, port) = text
                .rsplit_once(':')
                .ok_or_else(|| "no `:PORT`".to_string())?;
            if host.contains(':') {
                return Err("write an IPv6 address in brackets, like [::1]:3333".to_string());
            }
            (host, port)
        }
    };
    if host.is_empty() || host.contains(|c: char| c.is_whitespace() || c == '/') {
        return Err(format!("`{host}` is not a host name or address"));
    }
    match port.parse::<u16>() {
        Ok(port) if port > 0 => Ok((host.to_string(), port)),
        Ok(_) | Err(_) => Err(format!("`{port}` is not a port number (1-65535)")),
    }
}

fn parse_serial_port(text: &str) -> Result<SerialPort, String> {
    if let Some(rest) = text.strip_prefix("socket://") {
        let (host, port) = parse_host_port(rest).map_err(|why| format!("`{text}`: {why}"))?;
        return Ok(SerialPort::Socket { host, port });
    }
    if text.contains("://") {
        return Err(format!(
            "`{text}`: unsupported scheme; use a device path like /dev/ttyACM0 or \
             socket://HOST:PORT"
        ));
    }
    if !text.starts_with('/') {
        return Err(format!(
            "`{text}` is not an absolute device path like /dev/ttyACM0, nor socket://HOST:PORT"
        ));
    }
    Ok(SerialPort::Device(PathBuf::from(text)))
}

/// Of keys that must not be set here, the first one that is (by its place in the file): the
/// one the error names.
fn first_set<'k>(
    keys: impl IntoIterator<Item = (&'k str, Option<std::ops::Range<usize>>)>,
) -> Option<(&'k str, std::ops::Range<usize>)> {
    keys.into_iter()
        .filter_map(|(key, span)| span.map(|span| (key, span)))
        .min_by_key(|(_, span)| span.start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_port_forms() {
        assert_eq!(
            parse_host_port("127.0.0.1:3333"),
            Ok(("127.0.0.1".into(), 3333))
        );
        assert_eq!(parse_host_port("lab-pi:2000"), Ok(("lab-pi".into(), 2000)));
        assert_eq!(parse_host_port("[::1]:5000"), Ok(("::1".into(), 5000)));
        assert!(parse_host_port("::1:5000").is_err());
        assert!(parse_host_port("host").is_err());
        assert!(parse_host_port(":3333").is_err());
        assert!(parse_host_port("host:0").is_err());
        assert!(parse_host_port("host:70000").is_err());
        assert!(parse_host_port("host:port").is_err());
    }

    #[test]
    fn serial_port_forms() {
        assert_eq!(
            parse_serial_port("/dev/ttyACM0"),
            Ok(SerialPort::Device(PathBuf::from("/dev/ttyACM0")))
        );
        assert_eq!(
            parse_serial_port("socket://10.0.0.5:4000"),
            Ok(SerialPort::Socket {
                host: "10.0.0.5".into(),
                port: 4000
            })
        );
        assert!(parse_serial_port("rfc2217://h:1").is_err());
        assert!(parse_serial_port("ttyACM0").is_err());
        assert!(parse_serial_port("socket://h").is_err());
    }

    #[test]
    fn serial_port_display_round_trips() {
        for text in ["/dev/ttyUSB1", "socket://lab:4000", "socket://[::1]:4000"] {
            assert_eq!(
                parse_serial_port(text).map(|p| p.to_string()),
                Ok(text.to_string())
            );
        }
    }

    #[test]
    fn probe_selectors() {
        assert!(is_probe_selector("0483:374b"));
        assert!(is_probe_selector("0483:374B:066DFF515551"));
        assert!(!is_probe_selector("0483"));
        assert!(!is_probe_selector("0483:zzzz"));
        assert!(!is_probe_selector("04830:374b"));
        assert!(!is_probe_selector("0483:374b:"));
    }

    #[test]
    fn safe_words() {
        assert!(is_safe_word("qemu-mps2-an385", "._-"));
        assert!(!is_safe_word("..", "._-"));
        assert!(!is_safe_word("a b", "._-"));
        assert!(!is_safe_word("a/b", "._-"));
        assert!(!is_safe_word("", "._-"));
        assert!(is_safe_word("virt,gic-version=3", "._-,="));
    }
}
