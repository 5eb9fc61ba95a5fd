//! Tests of the whole loading pipeline: golden files of each kind, defaults, every error with its
//! exact line and column, placeholders, name resolution and the shipped files.

// A failed unwrap is a failed test, which is what it should be here.
#![allow(clippy::unwrap_used)]

use super::error::{ConfigError, KeyPath};
use super::model::*;
use super::raw::{self, Node, RawBoard, RawProfile};
use super::{
    list_boards, list_shipped_boards, parse, parse_board, parse_profile, resolve_board,
    resolve_profile, shipped_files, validate_file, ConfigKind, Origin, Validated,
};
use crate::machine::{ErrorClass, State};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn board(text: &str) -> Result<Board, ConfigError> {
    parse_board(text, Path::new("boards/t.toml"))
}

fn profile(text: &str) -> Result<Profile, ConfigError> {
    parse_profile(text, Path::new("profiles/t.toml"))
}

/// Asserts the error's position and that its message (with the `file:line:col: ` prefix) holds
/// `needle`.
#[track_caller]
fn assert_error<T: std::fmt::Debug>(
    result: Result<T, ConfigError>,
    line: usize,
    column: usize,
    needle: &str,
) -> ConfigError {
    let err = match result {
        Ok(value) => panic!("expected an error, got {value:?}"),
        Err(err) => err,
    };
    assert_eq!(err.line_col(), Some((line, column)), "{err}");
    let message = err.to_string();
    assert!(
        message.contains(needle),
        "`{message}` does not contain `{needle}`"
    );
    let prefix = format!(
        "{}:{line}:{column}: ",
        err.location()
            .map(|l| l.file.display().to_string())
            .unwrap_or_default()
    );
    assert!(
        message.starts_with(&prefix),
        "`{message}` does not start with `{prefix}`"
    );
    err
}

const QEMU_BOARD: &str = r#"
name = "qemu-mps2-an385"
backend = "qemu"
[qemu]
binary = "/opt/qemu/bin/qemu-system-arm"
machine = "mps2-an385"
cpu = "cortex-m3"
extra_args = ["-d", "guest_errors"]
[health]
profile = "crc"
"#;

const MINIMAL_PROFILE: &str = r#"
name = "crc"
[build]
command = "make"
artifact = "build/test_crc.elf"
[test]
harness = "unity"
"#;

// ---- golden files ---------------------------------------------------------------------------

#[test]
fn golden_qemu_board() {
    let b = board(QEMU_BOARD).unwrap();
    assert_eq!(
        b,
        Board {
            name: "qemu-mps2-an385".into(),
            source: PathBuf::from("boards/t.toml"),
            backend: BoardBackend::Qemu(QemuSpec {
                binary: "/opt/qemu/bin/qemu-system-arm".into(),
                machine: "mps2-an385".into(),
                cpu: Some("cortex-m3".into()),
                extra_args: vec!["-d".into(), "guest_errors".into()],
            }),
            power: None,
            health: Some(HealthSpec {
                profile: "crc".into()
            }),
        }
    );
    assert_eq!(b.machine(), "mps2-an385");
}

#[test]
fn golden_gdb_board_with_serial_console() {
    let b = board(
        r#"
name = "bench-nucleo-f401"
backend = "board"
[flash]
method = "gdb"
timeout_s = 45
[gdb]
remote = "127.0.0.1:3333"
[serial]
port = "/dev/ttyACM0"
baud = 921600
[power]
cycle = "uhubctl -a cycle -p 2"
"#,
    )
    .unwrap();
    assert_eq!(
        b.backend,
        BoardBackend::Hardware(HardwareSpec {
            flash: FlashSpec::Gdb(GdbSpec {
                remote: "127.0.0.1:3333".into(),
                gdb: "gdb-multiarch".into(),
                init: vec![],
                start: GdbStart::VectorTable,
            }),
            flash_timeout: Duration::from_secs(45),
            console: ConsoleSpec::Serial {
                port: SerialPort::Device("/dev/ttyACM0".into()),
                baud: 921_600,
                line: SerialLine::default(),
                reset: SerialReset::None,
                reconnect: 0,
                nonce: false,
            },
            reset_command: None,
        })
    );
    assert_eq!(
        b.power,
        Some(PowerSpec {
            on: None,
            off: None,
            cycle: Some("uhubctl -a cycle -p 2".into()),
            off_pause: Duration::from_secs(2),
            timeout: Duration::from_secs(60),
            retry_on_hang: true,
        })
    );
    assert_eq!(b.machine(), "bench-nucleo-f401");
}

#[test]
fn golden_probe_rs_board_with_rtt_console() {
    let b = board(
        r#"
name = "nrf52-dk"
backend = "board"
flash = { method = "probe-rs" }
[probe]
chip = "nRF52832_xxAA"
selector = "1366:1015:000682123456"
protocol = "SWD"
speed_khz = 4000
rtt = true
rtt_channels = [0, 2]
nonce = true
connect_under_reset = true
"#,
    )
    .unwrap();
    assert_eq!(
        b.backend,
        BoardBackend::Hardware(HardwareSpec {
            flash: FlashSpec::ProbeRs(ProbeSpec {
                chip: "nRF52832_xxAA".into(),
                selector: Some("1366:1015:000682123456".into()),
                protocol: Some("swd".into()),
                speed_khz: Some(4000),
                connect_under_reset: true,
            }),
            flash_timeout: Duration::from_secs(120),
            console: ConsoleSpec::Rtt {
                channels: Some(vec![0, 2]),
                nonce: true,
            },
            reset_command: None,
        })
    );
}

#[test]
fn golden_command_board_with_socket_console() {
    let b = board(
        r#"
name = "lab-stm32"
backend = "board"
[flash]
method = "command"
command = "st-flash --reset write {bin} 0x08000000"
timeout_s = 2.5
[serial]
port = "socket://10.1.2.3:4001"
"#,
    )
    .unwrap();
    assert_eq!(
        b.backend,
        BoardBackend::Hardware(HardwareSpec {
            flash: FlashSpec::Command {
                command: "st-flash --reset write {bin} 0x08000000".into(),
            },
            flash_timeout: Duration::from_millis(2500),
            console: ConsoleSpec::Serial {
                port: SerialPort::Socket {
                    host: "10.1.2.3".into(),
                    port: 4001
                },
                baud: 115_200,
                line: SerialLine::default(),
                reset: SerialReset::None,
                reconnect: 0,
                nonce: false,
            },
            reset_command: None,
        })
    );
}

fn gdb_board(gdb_keys: &str) -> Result<Board, ConfigError> {
    board(&format!(
        "name = \"b\"\nbackend = \"board\"\n[flash]\nmethod = \"gdb\"\n[gdb]\n\
         remote = \"h:1\"\n{gdb_keys}\n[serial]\nport = \"/dev/x\"\n"
    ))
}

fn gdb_start(b: Board) -> GdbStart {
    match b.backend {
        BoardBackend::Hardware(HardwareSpec {
            flash: FlashSpec::Gdb(gdb),
            ..
        }) => gdb.start,
        other => panic!("not a gdb board: {other:?}"),
    }
}

#[test]
fn gdb_start_by_vector_table_or_monitor_reset() {
    assert_eq!(gdb_start(gdb_board("").unwrap()), GdbStart::VectorTable);
    assert_eq!(
        gdb_start(gdb_board("start = \"vector-table\"").unwrap()),
        GdbStart::VectorTable
    );
    assert_eq!(
        gdb_start(gdb_board("start = \"monitor-reset\"").unwrap()),
        GdbStart::MonitorReset {
            command: "monitor reset halt".into()
        }
    );
    assert_eq!(
        gdb_start(
            gdb_board("start = \"monitor-reset\"\nreset = \"monitor system_reset\"").unwrap()
        ),
        GdbStart::MonitorReset {
            command: "monitor system_reset".into()
        }
    );
}

#[test]
fn gdb_start_errors_name_the_key_and_place() {
    let err = assert_error(
        gdb_board("start = \"reset\""),
        7,
        9,
        "invalid value for `start` in [gdb]: unknown start `reset` (expected one of: \
         vector-table, monitor-reset)",
    );
    assert!(err.to_string().starts_with("boards/t.toml:7:9"), "{err}");
    assert_error(
        gdb_board("reset = \"monitor reset halt\""),
        7,
        9,
        "invalid value for `reset` in [gdb]: only used with start = \"monitor-reset\"",
    );
    assert_error(
        gdb_board("start = \"vector-table\"\nreset = \"monitor reset\""),
        8,
        9,
        "invalid value for `reset` in [gdb]: only used with start = \"monitor-reset\"",
    );
    assert_error(
        gdb_board("start = \"monitor-reset\"\nreset = \" \""),
        8,
        9,
        "invalid value for `reset` in [gdb]: must not be empty",
    );
    assert_error(gdb_board("start = 1"), 7, 9, "`start`");
}

#[test]
fn golden_serial_line_reset_and_gdb_init() {
    let b = board(
        r#"
name = "bench-f401"
backend = "board"
[flash]
method = "gdb"
reset_command = "st-info --reset"
[gdb]
remote = "[::1]:3333"
init = ["monitor reset halt", "monitor arm semihosting enable"]
[serial]
port = "/dev/serial/by-id/usb-STMicroelectronics_STLINK-V3_0042-if02"
baud = 9600
data_bits = 7
parity = "even"
stop_bits = 2
flow_control = "hardware"
reset = "rts"
reset_ms = 20
reconnect = 3
"#,
    )
    .unwrap();
    assert_eq!(
        b.backend,
        BoardBackend::Hardware(HardwareSpec {
            flash: FlashSpec::Gdb(GdbSpec {
                remote: "[::1]:3333".into(),
                gdb: "gdb-multiarch".into(),
                init: vec![
                    "monitor reset halt".into(),
                    "monitor arm semihosting enable".into()
                ],
                start: GdbStart::VectorTable,
            }),
            flash_timeout: Duration::from_secs(120),
            console: ConsoleSpec::Serial {
                port: SerialPort::Device(
                    "/dev/serial/by-id/usb-STMicroelectronics_STLINK-V3_0042-if02".into()
                ),
                baud: 9600,
                line: SerialLine {
                    data_bits: 7,
                    parity: Parity::Even,
                    stop_bits: 2,
                    flow_control: FlowControl::Hardware,
                },
                reset: SerialReset::Rts {
                    pulse: Duration::from_millis(20)
                },
                reconnect: 3,
                nonce: false,
            },
            reset_command: Some("st-info --reset".into()),
        })
    );
    let dtr = board(
        "name = \"b\"\nbackend = \"board\"\n[flash]\nmethod = \"command\"\ncommand = \"f {hex}\"\n\
         [serial]\nport = \"/dev/ttyUSB0\"\nreset = \"dtr\"\n",
    )
    .unwrap();
    let BoardBackend::Hardware(hw) = dtr.backend else {
        panic!("not a board: {dtr:?}");
    };
    assert!(matches!(
        hw.console,
        ConsoleSpec::Serial {
            reset: SerialReset::Dtr { pulse },
            ..
        } if pulse == Duration::from_millis(100)
    ));
}

#[test]
fn serial_line_and_reset_errors_point_at_the_value() {
    let serial_board = |port: &str, serial: &str| {
        board(&format!(
            "name = \"b\"\nbackend = \"board\"\n[flash]\nmethod = \"gdb\"\n[gdb]\n\
             remote = \"h:1\"\n[serial]\nport = \"{port}\"\n{serial}\n"
        ))
    };
    let err = assert_error(
        serial_board("/dev/ttyACM0", "data_bits = 9"),
        9,
        13,
        "invalid value for `data_bits` in [serial]: must be one of 5, 6, 7, 8, got 9",
    );
    assert_eq!(err.key(), Some(&KeyPath::new(&["serial", "data_bits"])));
    assert_error(
        serial_board("/dev/ttyACM0", "stop_bits = 3"),
        9,
        13,
        "invalid value for `stop_bits` in [serial]: must be one of 1, 2, got 3",
    );
    assert_error(
        serial_board("/dev/ttyACM0", "parity = \"mark\""),
        9,
        10,
        "unknown parity `mark` (expected one of: none, odd, even)",
    );
    assert_error(
        serial_board("/dev/ttyACM0", "flow_control = \"xon\""),
        9,
        16,
        "unknown flow_control `xon` (expected one of: none, software, hardware)",
    );
    assert_error(
        serial_board("/dev/ttyACM0", "reset = \"power\""),
        9,
        9,
        "unknown reset `power` (expected one of: none, dtr, rts)",
    );
    assert_error(
        serial_board("/dev/ttyACM0", "reset_ms = 50"),
        9,
        12,
        "invalid value for `reset_ms` in [serial]: only used with reset = \"dtr\" or \"rts\"",
    );
    assert_error(
        serial_board("/dev/ttyACM0", "reset = \"dtr\"\nreset_ms = 0"),
        10,
        12,
        "invalid value for `reset_ms` in [serial]: must be at least 1, got 0",
    );
    assert_error(
        serial_board("socket://lab:4000", "baud = 9600\nreset = \"dtr\""),
        10,
        9,
        "invalid value for `reset` in [serial]: only used with a serial device: \
         socket://lab:4000 is a TCP socket",
    );
    assert_error(
        serial_board("/dev/ttyACM0", "reconnect = -1"),
        9,
        13,
        "invalid value for `reconnect` in [serial]",
    );
    assert_error(
        board(
            "name = \"b\"\nbackend = \"board\"\n[flash]\nmethod = \"gdb\"\n[gdb]\n\
             remote = \"h:1\"\ninit = [\"monitor reset halt\", \"\"]\n[serial]\nport = \"/dev/x\"\n",
        ),
        7,
        31,
        "invalid value for `init` in [gdb]",
    );
    assert_error(
        board(
            "name = \"b\"\nbackend = \"board\"\n[flash]\nmethod = \"gdb\"\nreset_command = \"\"\n\
             [gdb]\nremote = \"h:1\"\n[serial]\nport = \"/dev/x\"\n",
        ),
        5,
        17,
        "invalid value for `reset_command` in [flash]",
    );
}

#[test]
fn golden_labgrid_board() {
    let b = board(
        r#"
name = "farm-rpi"
backend = "labgrid"
[labgrid]
place = "rpi-3"
tags = ["board=rpi3", "rack=2"]
"#,
    )
    .unwrap();
    assert_eq!(
        b.backend,
        BoardBackend::Labgrid(LabgridSpec {
            place: Some("rpi-3".into()),
            tags: vec!["board=rpi3".into(), "rack=2".into()],
            coordinator: None,
            flash: None,
        })
    );
    let flashed = board(
        r#"
name = "farm-an385"
backend = "labgrid"
[labgrid]
tags = ["board=mps2-an385"]
coordinator = "lab.example:20408"
[flash]
method = "command"
command = "scp {elf} {host}:/srv/{place}.elf"
timeout_s = 30
"#,
    )
    .unwrap();
    let BoardBackend::Labgrid(spec) = flashed.backend else {
        panic!("not labgrid")
    };
    assert_eq!(spec.coordinator.as_deref(), Some("lab.example:20408"));
    assert_eq!(
        spec.flash,
        Some(LabgridFlash {
            command: "scp {elf} {host}:/srv/{place}.elf".into(),
            timeout: std::time::Duration::from_secs(30),
        })
    );
    assert_error(
        board("name = \"x\"\nbackend = \"labgrid\"\n[labgrid]\nplace = \"p\"\n[flash]\nmethod = \"gdb\"\n"),
        6,
        10,
        "invalid value for `method` in [flash]: a labgrid board flashes with method = \"command\"",
    );
}

#[test]
fn golden_full_profile() {
    let p = profile(
        r#"
name = "crc"
[build]
command = "make BOARD={machine} build/{machine}/test_crc.elf"
cwd = "firmware"
artifact = "build/{machine}/test_crc.elf"
timeout_s = 600
[test]
harness = "ztest"
timeout_s = 12.5
[goal]
fail_to_pass = ["test_crc16_ccitt"]
confirm_runs = 3
[loop]
max_iterations = 4
no_progress_limit = 2
[policy]
allow = ["src/**", "lib/crc/*.c"]
deny = ["src/startup.c"]
max_changed_lines = 20
max_changed_files = 2
allow_builtin = ["tests", "linker"]
[strategy.llm]
base_url = "http://127.0.0.1:11434/v1"
model = "qwen2.5-coder"
api_key_env = "OLLAMA_KEY"
temperature = 0
timeout_s = 90
connect_timeout_s = 5
idle_timeout_s = 45
candidates = 3
parallel = 2
max_retries = 5
token_budget = 200000
[strategy.command]
argv = ["my-agent", "--json"]
candidates = 2
[timeouts]
build_run = 900
patch_generation = 120
[recovery]
flash_failure = 3
timeout = 0
"#,
    )
    .unwrap();
    assert_eq!(p.build.cwd, PathBuf::from("firmware"));
    assert_eq!(p.build.timeout, Duration::from_secs(600));
    assert_eq!(
        p.test,
        TestSpec {
            harness: Harness::Ztest,
            timeout: Duration::from_millis(12_500)
        }
    );
    assert_eq!(
        p.goal,
        GoalSpec {
            fail_to_pass: vec!["test_crc16_ccitt".into()],
            confirm_runs: 3
        }
    );
    assert_eq!(
        p.limits,
        LoopSpec {
            max_iterations: 4,
            no_progress_limit: 2
        }
    );
    assert_eq!(
        p.policy,
        PolicySpec {
            allow: vec!["src/**".into(), "lib/crc/*.c".into()],
            deny: vec!["src/startup.c".into()],
            max_changed_lines: 20,
            max_changed_files: 2,
            allow_builtin: vec![BuiltinDeny::Tests, BuiltinDeny::Linker],
        }
    );
    assert_eq!(
        p.strategy.llm,
        Some(LlmSpec {
            base_url: Some("http://127.0.0.1:11434/v1".into()),
            model: Some("qwen2.5-coder".into()),
            api_key_env: Some("OLLAMA_KEY".into()),
            temperature: Some(0.0),
            timeout: Duration::from_secs(90),
            connect_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(45),
            candidates: 3,
            parallel: 2,
            max_retries: 5,
            token_budget: Some(200_000),
        })
    );
    assert_eq!(
        p.strategy.command,
        Some(CommandStrategySpec {
            argv: vec!["my-agent".into(), "--json".into()],
            timeout: Duration::from_secs(600),
            candidates: 2,
        })
    );
    assert_eq!(
        p.timeouts,
        BTreeMap::from([
            (State::BuildRun, Duration::from_secs(900)),
            (State::PatchGeneration, Duration::from_secs(120)),
        ])
    );
    assert_eq!(
        p.recovery,
        BTreeMap::from([(ErrorClass::FlashFailure, 3), (ErrorClass::Timeout, 0)])
    );
}

// ---- defaults -------------------------------------------------------------------------------

#[test]
fn qemu_board_defaults() {
    let b = board("name = \"q\"\nbackend = \"qemu\"\n[qemu]\nmachine = \"lm3s6965evb\"\n").unwrap();
    assert_eq!(
        b.backend,
        BoardBackend::Qemu(QemuSpec {
            binary: "qemu-system-arm".into(),
            machine: "lm3s6965evb".into(),
            cpu: None,
            extra_args: vec![],
        })
    );
    assert_eq!(b.power, None);
    assert_eq!(b.health, None);
}

#[test]
fn profile_defaults() {
    let p = profile(MINIMAL_PROFILE).unwrap();
    assert_eq!(
        p,
        Profile {
            name: "crc".into(),
            source: PathBuf::from("profiles/t.toml"),
            build: BuildSpec {
                command: "make".into(),
                cwd: PathBuf::from("."),
                artifact: PathBuf::from("build/test_crc.elf"),
                timeout: Duration::from_secs(300),
            },
            test: TestSpec {
                harness: Harness::Unity,
                timeout: Duration::from_secs(30),
            },
            goal: GoalSpec {
                fail_to_pass: vec![],
                confirm_runs: 1,
            },
            limits: LoopSpec {
                max_iterations: 10,
                no_progress_limit: 3,
            },
            policy: PolicySpec {
                allow: vec!["src/**".into()],
                deny: vec![],
                max_changed_lines: 60,
                max_changed_files: 5,
                allow_builtin: vec![],
            },
            strategy: StrategySpec::default(),
            timeouts: BTreeMap::new(),
            recovery: BTreeMap::new(),
            snapshot: SnapshotSpec {
                max_untracked_bytes: 16 << 20,
            },
            lint: None,
            commit: CommitSpec {
                hooks: true,
                timeout: Duration::from_secs(300),
            },
        }
    );
}

#[test]
fn snapshot_size_limit_is_read_and_checked_where_it_is_written() {
    let p = profile(&format!(
        "{MINIMAL_PROFILE}[snapshot]\nmax_untracked_mb = 2\n"
    ))
    .unwrap();
    assert_eq!(p.snapshot.max_untracked_bytes, 2 << 20);
    assert_error(
        profile(&format!(
            "{MINIMAL_PROFILE}[snapshot]\nmax_untracked_mb = 0\n"
        )),
        9,
        20,
        "max_untracked_mb",
    );
    assert_error(
        profile(&format!("{MINIMAL_PROFILE}[snapshot]\nmax_untracked = 2\n")),
        9,
        1,
        "unknown key `max_untracked`",
    );
}

#[test]
fn commit_hooks_can_be_skipped_and_their_timeout_is_checked_where_it_is_written() {
    let p = profile(&format!(
        "{MINIMAL_PROFILE}[commit]\nhooks = false\ntimeout_s = 2.5\n"
    ))
    .unwrap();
    assert!(!p.commit.hooks);
    assert_eq!(p.commit.timeout, Duration::from_millis(2500));
    assert_error(
        profile(&format!("{MINIMAL_PROFILE}[commit]\ntimeout_s = 0\n")),
        9,
        13,
        "timeout_s",
    );
    assert_error(
        profile(&format!("{MINIMAL_PROFILE}[commit]\nno_verify = true\n")),
        9,
        1,
        "unknown key `no_verify`",
    );
}

#[test]
fn llm_and_command_strategy_defaults() {
    let p = profile(&format!(
        "{MINIMAL_PROFILE}[strategy.llm]\n[strategy.command]\nargv = [\"agent\"]\n"
    ))
    .unwrap();
    assert_eq!(
        p.strategy.llm,
        Some(LlmSpec {
            base_url: None,
            model: None,
            api_key_env: None,
            temperature: None,
            timeout: Duration::from_secs(120),
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(120),
            candidates: 1,
            parallel: 1,
            max_retries: 3,
            token_budget: None,
        })
    );
    assert_eq!(p.strategy.llm, Some(LlmSpec::default()));
    assert_eq!(
        p.strategy.command.map(|c| (c.timeout, c.candidates)),
        Some((Duration::from_secs(600), 1))
    );
    // The connect timeout never outlasts the request's.
    let p = profile(&format!("{MINIMAL_PROFILE}[strategy.llm]\ntimeout_s = 4\n")).unwrap();
    let llm = p.strategy.llm.unwrap();
    assert_eq!(
        (llm.connect_timeout, llm.idle_timeout),
        (Duration::from_secs(4), Duration::from_secs(4))
    );
}

// ---- placeholders ---------------------------------------------------------------------------

#[test]
fn build_for_expands_board_and_machine() {
    let p = profile(
        r#"
name = "crc"
[build]
command = "make BOARD={machine} NAME={board} build/{machine}/test_crc.elf"
cwd = "fw/{board}"
artifact = "build/{machine}/test_crc.elf"
[test]
harness = "unity"
"#,
    )
    .unwrap();
    let qemu = board(QEMU_BOARD).unwrap();
    let spec = p.build_for(&qemu);
    assert_eq!(
        spec.command,
        "make BOARD=mps2-an385 NAME=qemu-mps2-an385 build/mps2-an385/test_crc.elf"
    );
    assert_eq!(spec.cwd, PathBuf::from("fw/qemu-mps2-an385"));
    assert_eq!(
        spec.artifact,
        PathBuf::from("build/mps2-an385/test_crc.elf")
    );
    assert_eq!(spec.timeout, p.build.timeout);

    let hw = board(
        "name = \"nucleo\"\nbackend = \"board\"\n[flash]\nmethod = \"gdb\"\n[gdb]\n\
         remote = \"localhost:3333\"\n[serial]\nport = \"/dev/ttyACM0\"\n",
    )
    .unwrap();
    assert_eq!(
        p.build_for(&hw).artifact,
        PathBuf::from("build/nucleo/test_crc.elf")
    );
}

#[test]
fn shell_braces_are_not_placeholders() {
    let p = profile(
        "name = \"x\"\n[build]\ncommand = \"make O=${HOME} && awk '{print $1}' {machine}.map\"\n\
         artifact = \"a.elf\"\n[test]\nharness = \"unity\"\n",
    )
    .unwrap();
    let b = board(QEMU_BOARD).unwrap();
    assert_eq!(
        p.build_for(&b).command,
        "make O=${HOME} && awk '{print $1}' mps2-an385.map"
    );
}

#[test]
fn unknown_placeholder_in_build_command_points_at_it() {
    let err = assert_error(
        profile("name = \"x\"\n[build]\ncommand = \"make BOARD={bord}\"\nartifact = \"a.elf\"\n"),
        3,
        23,
        "invalid value for `command` in [build]: unknown placeholder `{bord}` (expected one of: \
         {board}, {machine})",
    );
    assert_eq!(err.key(), Some(&KeyPath::new(&["build", "command"])));
}

#[test]
fn unknown_placeholder_in_artifact_and_flash_command() {
    assert_error(
        profile("name = \"x\"\n[build]\ncommand = \"make\"\nartifact = 'out/{target}.elf'\n"),
        4,
        17,
        "unknown placeholder `{target}`",
    );
    assert_error(
        board(
            "name = \"b\"\nbackend = \"board\"\n[flash]\nmethod = \"command\"\n\
             command = \"flash {elf} {image}\"\n[serial]\nport = \"/dev/ttyUSB0\"\n",
        ),
        5,
        24,
        "unknown placeholder `{image}` (expected one of: {elf}, {bin}, {hex})",
    );
}

#[test]
fn placeholder_in_an_escaped_string_points_at_the_string() {
    // With escapes the column inside the literal is not exact: point at the literal itself.
    assert_error(
        profile("name = \"x\"\n[build]\ncommand = \"make \\\"{nope}\\\"\"\nartifact = \"a.elf\"\n"),
        3,
        11,
        "unknown placeholder `{nope}`",
    );
}

// ---- syntax and unknown keys ----------------------------------------------------------------

#[test]
fn syntax_error_has_line_and_column() {
    assert_error(
        board("name = \"x\"\n[qemu\nmachine = \"m\"\n"),
        2,
        6,
        "TOML syntax error: unclosed table, expected `]`",
    );
    assert_error(board("name = \"x\"\nname = \"y\"\n"), 2, 1, "duplicate key");
}

#[test]
fn unknown_key_in_inline_table_renders_like_the_contract() {
    let err = board("name = \"x\"\nbackend = \"qemu\"\nqemu = { machin = \"m\" }\n").unwrap_err();
    assert_eq!(
        err.to_string(),
        "boards/t.toml:3:10: unknown key `machin` in [qemu] (expected one of: binary, machine, \
         cpu, extra_args)"
    );
    assert_eq!(err.key(), Some(&KeyPath::new(&["qemu", "machin"])));
}

#[test]
fn unknown_key_in_standard_table_dotted_key_and_top_level() {
    assert_error(
        board("name = \"x\"\nbackend = \"qemu\"\n[qemu]\nmachine = \"m\"\n  machin = \"m\"\n"),
        5,
        3,
        "unknown key `machin` in [qemu]",
    );
    assert_error(
        board("name = \"x\"\nbackend = \"qemu\"\nqemu.mashine = \"m\"\n"),
        3,
        6,
        "unknown key `mashine` in [qemu]",
    );
    assert_error(
        board("nmae = \"x\"\n"),
        1,
        1,
        "unknown key `nmae` at the top level (expected one of: name, backend, qemu, flash, gdb, \
         serial, probe, labgrid, power, health)",
    );
    assert_error(
        profile(&format!("{MINIMAL_PROFILE}[strategy.llm]\nmodle = \"m\"\n")),
        9,
        1,
        "unknown key `modle` in [strategy.llm] (expected one of: base_url, model, api_key_env, \
         temperature, timeout_s, connect_timeout_s, idle_timeout_s, candidates, parallel, max_retries, \
         token_budget)",
    );
    assert_error(
        profile(&format!("{MINIMAL_PROFILE}[strategy.queue]\n")),
        8,
        11,
        "unknown key `queue` in [strategy] (expected one of: llm, command)",
    );
}

#[test]
fn the_first_unknown_key_in_file_order_is_reported() {
    assert_error(
        board("name = \"x\"\nzzz = 1\naaa = 2\n"),
        2,
        1,
        "unknown key `zzz`",
    );
}

#[test]
fn unknown_state_and_error_class_names() {
    let err = assert_error(
        profile(&format!(
            "{MINIMAL_PROFILE}[timeouts]\nbuild_run = 60\nbuildrun = 60\n"
        )),
        10,
        1,
        "unknown key `buildrun` in [timeouts] (expected one of: init, code_analysis, ",
    );
    assert!(err.to_string().contains("build_run"));
    assert!(!err.to_string().contains("idle"));
    assert_error(
        profile(&format!("{MINIMAL_PROFILE}[timeouts]\nBUILD_RUN = 60\n")),
        9,
        1,
        "unknown key `BUILD_RUN` in [timeouts]",
    );
    assert_error(
        profile(&format!(
            "{MINIMAL_PROFILE}[recovery]\nflash_failures = 2\n"
        )),
        9,
        1,
        "unknown key `flash_failures` in [recovery] (expected one of: build_failure, \
         build_env_failure, test_env_failure, flash_failure, timeout, artifact_missing, \
         model_failure, no_candidate, policy_violation, patch_apply_failure, lint_failure)",
    );
}

// ---- value types ----------------------------------------------------------------------------

#[test]
fn wrong_value_types_point_at_the_value() {
    let serial_board = |serial: &str| {
        board(&format!(
            "name = \"b\"\nbackend = \"board\"\n[flash]\nmethod = \"gdb\"\n[gdb]\n\
             remote = \"h:1\"\n[serial]\nport = \"/dev/ttyACM0\"\n{serial}\n"
        ))
    };
    let err = assert_error(
        serial_board("baud = \"fast\""),
        9,
        8,
        "invalid value for `baud` in [serial]: invalid type: string \"fast\", expected u32",
    );
    assert_eq!(err.key(), Some(&KeyPath::new(&["serial", "baud"])));
    assert_error(
        serial_board("baud = -9600"),
        9,
        8,
        "invalid value for `baud` in [serial]: invalid value: integer `-9600`, expected u32",
    );
    assert_error(
        serial_board("baud = 0"),
        9,
        8,
        "invalid value for `baud` in [serial]: must be at least 1, got 0",
    );
    assert_error(
        board("name = \"x\"\nbackend = \"qemu\"\nqemu = \"mps2\"\n"),
        3,
        8,
        "invalid value for `qemu` at the top level: expected a table, found string",
    );
    assert_error(
        board("name = \"x\"\nbackend = \"qemu\"\n[qemu.machine]\n"),
        3,
        1,
        "invalid value for `machine` in [qemu]: expected a value, found table",
    );
    assert_error(
        board(
            "name = \"x\"\nbackend = \"qemu\"\n[qemu]\nmachine = \"m\"\nextra_args = [\"-s\", 1]\n",
        ),
        5,
        21,
        "invalid value for `extra_args` in [qemu]: invalid type: integer `1`, expected a string",
    );
    assert_error(
        profile(&format!(
            "{MINIMAL_PROFILE}[timeouts]\ntest_run = \"10s\"\n"
        )),
        9,
        12,
        "invalid value for `test_run` in [timeouts]: invalid type: string \"10s\", expected a \
         number of seconds",
    );
}

// ---- board cross-field rules ----------------------------------------------------------------

#[test]
fn board_required_keys() {
    assert_error(
        board("backend = \"qemu\"\n"),
        1,
        1,
        "missing key `name` at the top level",
    );
    assert_error(
        board("name = \"x\"\n"),
        1,
        1,
        "missing key `backend` at the top level: one of: qemu, board, labgrid",
    );
    assert_error(
        board("name = \"x\"\nbackend = \"renode\"\n"),
        2,
        11,
        "invalid value for `backend` at the top level: unknown backend `renode` (expected one \
         of: qemu, board, labgrid)",
    );
    assert_error(
        board("name = \"x y\"\nbackend = \"qemu\"\n"),
        1,
        8,
        "`x y` is not a valid name",
    );
}

#[test]
fn qemu_backend_needs_a_machine() {
    assert_error(
        board("name = \"x\"\nbackend = \"qemu\"\n"),
        2,
        11,
        "missing key `qemu` at the top level: backend = \"qemu\" needs a [qemu] table",
    );
    let err = assert_error(
        board("name = \"x\"\nbackend = \"qemu\"\n\n[qemu]\ncpu = \"cortex-m3\"\n"),
        4,
        1,
        "missing key `machine` in [qemu]",
    );
    assert_eq!(err.key(), Some(&KeyPath::new(&["qemu", "machine"])));
    assert_error(
        board("name = \"x\"\nbackend = \"qemu\"\n[qemu]\nmachine = \"mps2 an385\"\n"),
        4,
        11,
        "is not a QEMU machine name",
    );
}

#[test]
fn tables_that_do_not_belong_to_the_backend() {
    assert_error(
        board(
            "name = \"x\"\nbackend = \"qemu\"\n[qemu]\nmachine = \"m\"\n[power]\non = \"x\"\n\
             [serial]\nport = \"/dev/ttyS0\"\n",
        ),
        5,
        1,
        "table [power] is not allowed here: backend = \"qemu\" uses only [qemu], [health]",
    );
    assert_error(
        board("name = \"x\"\nbackend = \"labgrid\"\n[labgrid]\nplace = \"p\"\n[qemu]\n"),
        5,
        1,
        "table [qemu] is not allowed here: backend = \"labgrid\"",
    );
    assert_error(
        board(
            "name = \"x\"\nbackend = \"board\"\n[flash]\nmethod = \"gdb\"\n[gdb]\nremote = \"h:1\"\n\
             [serial]\nport = \"/dev/ttyS0\"\n[labgrid]\nplace = \"p\"\n",
        ),
        9,
        1,
        "table [labgrid] is not allowed here: backend = \"board\"",
    );
}

#[test]
fn board_backend_needs_flash_and_a_console() {
    assert_error(
        board("name = \"x\"\nbackend = \"board\"\n[serial]\nport = \"/dev/ttyS0\"\n"),
        2,
        11,
        "missing key `flash` at the top level: backend = \"board\" needs a [flash] table",
    );
    assert_error(
        board("name = \"x\"\nbackend = \"board\"\n[flash]\nmethod = \"gdb\"\n[gdb]\nremote = \"h:1\"\n"),
        2,
        11,
        "missing key `serial` at the top level: backend = \"board\" needs a console: a [serial] \
         table, or [probe] rtt = true",
    );
    assert_error(
        board(
            "name = \"x\"\nbackend = \"board\"\n[flash]\nmethod = \"probe-rs\"\n[probe]\n\
             chip = \"c\"\nrtt = true\n[serial]\nport = \"/dev/ttyS0\"\n",
        ),
        8,
        1,
        "table [serial] is not allowed here: [probe] rtt = true already makes RTT the console",
    );
    assert_error(
        board("name = \"x\"\nbackend = \"board\"\n[flash]\ntimeout_s = 3\n"),
        3,
        1,
        "missing key `method` in [flash]",
    );
    assert_error(
        board("name = \"x\"\nbackend = \"board\"\n[flash]\nmethod = \"jlink\"\n"),
        4,
        10,
        "unknown method `jlink` (expected one of: probe-rs, gdb, command)",
    );
}

#[test]
fn flash_methods_need_their_settings() {
    let base = "name = \"x\"\nbackend = \"board\"\n[serial]\nport = \"/dev/ttyS0\"\n[flash]\n";
    assert_error(
        board(&format!("{base}method = \"gdb\"\n")),
        6,
        10,
        "missing key `gdb` at the top level: method = \"gdb\" needs a [gdb] table with `remote`",
    );
    assert_error(
        board(&format!(
            "{base}method = \"gdb\"\n[gdb]\ngdb = \"arm-none-eabi-gdb\"\n"
        )),
        7,
        1,
        "missing key `remote` in [gdb]",
    );
    assert_error(
        board(&format!(
            "{base}method = \"gdb\"\n[gdb]\nremote = \"3333\"\n"
        )),
        8,
        10,
        "invalid value for `remote` in [gdb]: `3333` is not HOST:PORT or a device path",
    );
    assert_error(
        board(&format!("{base}method = \"probe-rs\"\n")),
        6,
        10,
        "missing key `probe` at the top level: method = \"probe-rs\" needs a [probe] table with \
         `chip`",
    );
    assert_error(
        board(&format!(
            "{base}method = \"probe-rs\"\n[probe]\nspeed_khz = 100\n"
        )),
        7,
        1,
        "missing key `chip` in [probe]",
    );
    assert_error(
        board(&format!(
            "{base}method = \"probe-rs\"\n[probe]\nchip = \"c\"\nprotocol = \"spi\"\n"
        )),
        9,
        12,
        "unknown protocol `spi` (expected one of: swd, jtag)",
    );
    assert_error(
        board(&format!(
            "{base}method = \"probe-rs\"\n[probe]\nchip = \"c\"\nselector = \"stlink\"\n"
        )),
        9,
        12,
        "`stlink` is not VID:PID[:SERIAL]",
    );
    let probe = format!("{base}method = \"probe-rs\"\n[probe]\nchip = \"c\"\n");
    assert_error(
        board(&format!("{probe}connect_under_reset = \"yes\"\n")),
        9,
        23,
        "invalid value for `connect_under_reset` in [probe]: invalid type: string \"yes\", \
         expected a boolean",
    );
    assert_error(
        board(&format!("{probe}rtt = true\nrtt_channels = [0, -1]\n")),
        10,
        20,
        "invalid value for `rtt_channels` in [probe]: invalid value: integer `-1`, expected u32",
    );
    assert_error(
        board(&format!("{probe}rtt = true\nrtt_channels = [1, 0, 1]\n")),
        10,
        23,
        "invalid value for `rtt_channels` in [probe]: up channel 1 is listed twice",
    );
    assert_error(
        board(&format!("{probe}rtt = true\nrtt_channels = []\n")),
        10,
        16,
        "invalid value for `rtt_channels` in [probe]: must name at least one RTT up channel",
    );
    assert_error(
        board(&format!("{probe}nonce = true\n")),
        9,
        9,
        "invalid value for `nonce` in [probe]: only used with rtt = true; with a [serial] \
         console, its own `nonce` key",
    );
    assert_error(
        board(&format!("{base}method = \"command\"\n")),
        5,
        1,
        "missing key `command` in [flash]: method = \"command\" needs the flasher's command line",
    );
    assert_error(
        board(&format!(
            "{base}method = \"gdb\"\ncommand = \"x\"\n[gdb]\nremote = \"h:1\"\n"
        )),
        7,
        11,
        "invalid value for `command` in [flash]: only used with method = \"command\"",
    );
    assert_error(
        board(&format!(
            "{base}method = \"probe-rs\"\n[probe]\nchip = \"c\"\n[gdb]\nremote = \"h:1\"\n"
        )),
        9,
        1,
        "table [gdb] is not allowed here: [gdb] is only used with [flash] method = \"gdb\"",
    );
    assert_error(
        board(&format!(
            "{base}method = \"gdb\"\n[gdb]\nremote = \"h:1\"\n[probe]\nchip = \"c\"\n"
        )),
        9,
        1,
        "table [probe] is not allowed here: [probe] is only used with [flash] method = \
         \"probe-rs\"",
    );
    // A Black Magic Probe is a GDB server on a serial device.
    assert!(board(&format!(
        "{base}method = \"gdb\"\n[gdb]\nremote = \"/dev/ttyBmpGdb\"\n"
    ))
    .is_ok());
}

#[test]
fn serial_ports_must_parse() {
    let with_port = |port: &str| {
        board(&format!(
            "name = \"x\"\nbackend = \"board\"\n[flash]\nmethod = \"gdb\"\n[gdb]\n\
             remote = \"h:1\"\n[serial]\nport = \"{port}\"\n"
        ))
    };
    assert_error(
        with_port("socket://lab-pi"),
        8,
        8,
        "invalid value for `port` in [serial]: `socket://lab-pi`: no `:PORT`",
    );
    assert_error(
        with_port("socket://lab-pi:99999"),
        8,
        8,
        "`99999` is not a port number (1-65535)",
    );
    assert_error(with_port("rfc2217://h:1"), 8, 8, "unsupported scheme");
    assert_error(with_port("ttyACM0"), 8, 8, "not an absolute device path");
    assert_error(
        board(
            "name = \"x\"\nbackend = \"board\"\n[flash]\nmethod = \"gdb\"\n[gdb]\nremote = \"h:1\"\n\
             [serial]\nbaud = 9600\n",
        ),
        7,
        1,
        "missing key `port` in [serial]",
    );
}

#[test]
fn labgrid_power_and_health_rules() {
    assert_error(
        board("name = \"x\"\nbackend = \"labgrid\"\n"),
        2,
        11,
        "missing key `labgrid` at the top level",
    );
    assert_error(
        board("name = \"x\"\nbackend = \"labgrid\"\n[labgrid]\ntags = []\n"),
        3,
        1,
        "[labgrid] needs `place` or `tags`",
    );
    assert_error(
        board("name = \"x\"\nbackend = \"labgrid\"\n[labgrid]\ntags = [\"board=a\", \"rpi\"]\n"),
        4,
        20,
        "invalid value for `tags` in [labgrid]: `rpi` is not KEY=VALUE",
    );
    // The place's power port is the board's power.
    assert_error(
        board("name = \"x\"\nbackend = \"labgrid\"\n[labgrid]\nplace = \"p\"\n[power]\non = \"relay\"\n"),
        5,
        1,
        "table [power] is not allowed here: backend = \"labgrid\" uses only [labgrid], [flash], [health]",
    );
    assert_error(
        board("name = \"x\"\nbackend = \"qemu\"\n[qemu]\nmachine = \"m\"\n[health]\n"),
        5,
        1,
        "missing key `profile` in [health]",
    );
}

// ---- profile rules --------------------------------------------------------------------------

#[test]
fn profile_required_tables_and_keys() {
    assert_error(
        profile("name = \"x\"\n"),
        1,
        1,
        "missing key `build` at the top level",
    );
    assert_error(
        profile("name = \"x\"\n[build]\ncommand = \"make\"\nartifact = \"a.elf\"\n"),
        1,
        1,
        "missing key `test` at the top level",
    );
    assert_error(
        profile("name = \"x\"\n[build]\nartifact = \"a.elf\"\n"),
        2,
        1,
        "missing key `command` in [build]",
    );
    assert_error(
        profile("name = \"x\"\n[build]\ncommand = \"make\"\n"),
        2,
        1,
        "missing key `artifact` in [build]",
    );
    assert_error(
        profile("name = \"x\"\n[build]\ncommand = \"  \"\nartifact = \"a.elf\"\n"),
        3,
        11,
        "invalid value for `command` in [build]: must not be empty",
    );
    assert_error(
        profile(
            "name = \"x\"\n[build]\ncommand = \"make\"\nartifact = \"a.elf\"\n[test]\n\
             timeout_s = 5\n",
        ),
        5,
        1,
        "missing key `harness` in [test]",
    );
    assert_error(
        profile(
            "name = \"x\"\n[build]\ncommand = \"make\"\nartifact = \"a.elf\"\n[test]\n\
             harness = \"gtest\"\n",
        ),
        6,
        11,
        "invalid value for `harness` in [test]: unknown harness `gtest` (expected one of: unity, \
         ztest, regex)",
    );
}

#[test]
fn build_paths_stay_inside_the_repository() {
    let with = |cwd: &str, artifact: &str| {
        profile(&format!(
            "name = \"x\"\n[build]\ncommand = \"make\"\ncwd = \"{cwd}\"\nartifact = \"{artifact}\"\n\
             [test]\nharness = \"unity\"\n"
        ))
    };
    assert_error(
        with("/home/me/fw", "a.elf"),
        4,
        7,
        "invalid value for `cwd` in [build]: `/home/me/fw` must be relative to the repository root",
    );
    assert_error(
        with(".", "../other/a.elf"),
        5,
        12,
        "invalid value for `artifact` in [build]: `../other/a.elf` leads outside the repository \
         through `..`",
    );
    assert_error(
        with("fw/../..", "a.elf"),
        4,
        7,
        "leads outside the repository",
    );
    assert_error(
        with(".", "build/.."),
        5,
        12,
        "must name a file inside the repository",
    );
    assert_error(with(".", ""), 5, 12, "must not be empty");
    assert_error(with("", "a.elf"), 4, 7, "must not be empty");
    let ok = with("fw/../fw2", "./build/a.elf").unwrap();
    assert_eq!(ok.build.cwd, PathBuf::from("fw/../fw2"));
}

#[test]
fn timeouts_must_be_positive() {
    let with_test_timeout = |value: &str| {
        profile(&format!(
            "name = \"x\"\n[build]\ncommand = \"make\"\nartifact = \"a.elf\"\n[test]\n\
             harness = \"unity\"\ntimeout_s = {value}\n"
        ))
    };
    for value in ["0", "-5", "0.0", "nan", "inf", "1e300"] {
        assert_error(
            with_test_timeout(value),
            7,
            13,
            "invalid value for `timeout_s` in [test]: must be a number of seconds greater than 0",
        );
    }
    assert_eq!(
        with_test_timeout("0.25").unwrap().test.timeout,
        Duration::from_millis(250)
    );
    assert_error(
        profile(
            "name = \"x\"\n[build]\ncommand = \"make\"\nartifact = \"a.elf\"\ntimeout_s = 0\n\
             [test]\nharness = \"unity\"\n",
        ),
        5,
        13,
        "invalid value for `timeout_s` in [build]",
    );
    assert_error(
        profile(&format!("{MINIMAL_PROFILE}[timeouts]\ntest_run = 0\n")),
        9,
        12,
        "invalid value for `test_run` in [timeouts]: must be a number of seconds greater than 0",
    );
    assert_error(
        profile(&format!(
            "{MINIMAL_PROFILE}[strategy.command]\nargv = [\"a\"]\ntimeout_s = -1\n"
        )),
        10,
        13,
        "invalid value for `timeout_s` in [strategy.command]",
    );
    assert_error(
        profile(&format!(
            "{MINIMAL_PROFILE}[strategy.command]\nargv = [\"a\"]\ncandidates = 0\n"
        )),
        10,
        14,
        "invalid value for `candidates` in [strategy.command]: must be at least 1, got 0",
    );
}

#[test]
fn loop_and_goal_limits() {
    assert_error(
        profile(&format!("{MINIMAL_PROFILE}[goal]\nconfirm_runs = 0\n")),
        9,
        16,
        "invalid value for `confirm_runs` in [goal]: must be at least 1, got 0",
    );
    assert_error(
        profile(&format!("{MINIMAL_PROFILE}[loop]\nmax_iterations = 0\n")),
        9,
        18,
        "invalid value for `max_iterations` in [loop]: must be at least 1, got 0",
    );
    assert_error(
        profile(&format!("{MINIMAL_PROFILE}[loop]\nno_progress_limit = 0\n")),
        9,
        21,
        "invalid value for `no_progress_limit` in [loop]",
    );
    assert_error(
        profile(&format!(
            "{MINIMAL_PROFILE}[goal]\nfail_to_pass = [\"a\", \"\"]\n"
        )),
        9,
        22,
        "invalid value for `fail_to_pass` in [goal]: must not be empty",
    );
}

#[test]
fn policy_globs_must_compile_and_be_relative() {
    assert_error(
        profile(&format!(
            "{MINIMAL_PROFILE}[policy]\nallow = [\"src/**\", \"src/[ab\"]\n"
        )),
        9,
        20,
        "invalid value for `allow` in [policy]: `src/[ab` is not a valid glob",
    );
    assert_error(
        profile(&format!("{MINIMAL_PROFILE}[policy]\ndeny = [\"/etc/*\"]\n")),
        9,
        9,
        "`/etc/*` must be relative to the repository root",
    );
    assert_error(
        profile(&format!(
            "{MINIMAL_PROFILE}[policy]\nmax_changed_lines = 0\n"
        )),
        9,
        21,
        "must be at least 1",
    );
    assert_error(
        profile(&format!(
            "{MINIMAL_PROFILE}[policy]\nmax_changed_files = 0\n"
        )),
        9,
        21,
        "must be at least 1",
    );
    assert_error(
        profile(&format!(
            "{MINIMAL_PROFILE}[policy]\nallow_builtin = [\"tests\", \"startups\"]\n"
        )),
        9,
        27,
        "invalid value for `allow_builtin` in [policy]: `startups` is not a built-in deny \
         (expected one of: tests, linker, startup, vendor, build, git, ci)",
    );
}

#[test]
fn strategy_settings_are_validated() {
    assert_error(
        profile(&format!(
            "{MINIMAL_PROFILE}[strategy.llm]\nbase_url = \"127.0.0.1:11434\"\n"
        )),
        9,
        12,
        "`127.0.0.1:11434` is not an http:// or https:// URL with a host",
    );
    assert_error(
        profile(&format!(
            "{MINIMAL_PROFILE}[strategy.llm]\napi_key_env = \"sk-abc123\"\n"
        )),
        9,
        15,
        "never the key itself",
    );
    assert_error(
        profile(&format!(
            "{MINIMAL_PROFILE}[strategy.llm]\ntemperature = 3.5\n"
        )),
        9,
        15,
        "must be between 0.0 and 2.0, got 3.5",
    );
    assert_error(
        profile(&format!(
            "{MINIMAL_PROFILE}[strategy.llm]\ncandidates = 0\n"
        )),
        9,
        14,
        "invalid value for `candidates` in [strategy.llm]",
    );
    assert_error(
        profile(&format!(
            "{MINIMAL_PROFILE}[strategy.llm]\ntoken_budget = 0\n"
        )),
        9,
        16,
        "invalid value for `token_budget` in [strategy.llm]: must be at least 1",
    );
    assert_error(
        profile(&format!("{MINIMAL_PROFILE}[strategy.llm]\nparallel = 0\n")),
        9,
        12,
        "invalid value for `parallel` in [strategy.llm]: must be at least 1, got 0",
    );
    assert_error(
        profile(&format!(
            "{MINIMAL_PROFILE}[strategy.llm]\nidle_timeout_s = 0\n"
        )),
        9,
        18,
        "invalid value for `idle_timeout_s` in [strategy.llm]: must be a number of seconds \
         greater than 0, got 0",
    );
    assert_error(
        profile(&format!(
            "{MINIMAL_PROFILE}[strategy.llm]\ntimeout_s = 30\nidle_timeout_s = 60\n"
        )),
        10,
        18,
        "invalid value for `idle_timeout_s` in [strategy.llm]: must not be longer than \
         timeout_s (30 s), which bounds the whole request",
    );
    // Against the default timeout_s when it is left out.
    assert_error(
        profile(&format!(
            "{MINIMAL_PROFILE}[strategy.llm]\nconnect_timeout_s = 600\n"
        )),
        9,
        21,
        "invalid value for `connect_timeout_s` in [strategy.llm]: must not be longer than \
         timeout_s (120 s)",
    );
    assert_error(
        profile(&format!(
            "{MINIMAL_PROFILE}[strategy.command]\ntimeout_s = 5\n"
        )),
        8,
        1,
        "missing key `argv` in [strategy.command]",
    );
    assert_error(
        profile(&format!("{MINIMAL_PROFILE}[strategy.command]\nargv = []\n")),
        9,
        8,
        "invalid value for `argv` in [strategy.command]: must name a program",
    );
}

// ---- schema -----------------------------------------------------------------------------------

/// Every key path the schema allows, for the consistency test below.
fn schema_paths(schema: &[(&str, Node)], prefix: &str, out: &mut Vec<String>) {
    for (name, node) in schema {
        let path = format!("{prefix}{name}");
        match node {
            Node::Value => out.push(path),
            Node::Table(inner) => schema_paths(inner, &format!("{path}."), out),
            Node::Names(names) => out.extend(names().into_iter().map(|n| format!("{path}.{n}"))),
        }
    }
}

/// A file using every key the schema knows must get through serde: the schema and the `Raw*`
/// types agree. (The reverse — a serde field the schema lacks — is rejected as unknown by every
/// golden test that uses it.)
#[test]
fn schema_and_raw_types_agree() {
    let board_text = r#"
name = "x"
backend = "board"
qemu = { binary = "q", machine = "m", cpu = "c", extra_args = [] }
flash = { method = "gdb", command = "c", timeout_s = 1, reset_command = "r" }
gdb = { remote = "h:1", gdb = "g", init = [], start = "monitor-reset", reset = "monitor r" }
serial = { port = "/dev/x", baud = 1, data_bits = 8, parity = "none", stop_bits = 1, flow_control = "none", reset = "dtr", reset_ms = 5, reconnect = 1, nonce = true }
probe = { chip = "c", selector = "1:2", protocol = "swd", speed_khz = 1, rtt = true, rtt_channels = [0], nonce = true, connect_under_reset = true }
labgrid = { place = "p", tags = [], coordinator = "c:1" }
power = { on = "a", off = "b", cycle = "c", off_s = 1, timeout_s = 1, retry_on_hang = true }
health = { profile = "p" }
"#;
    let mut timeouts = String::new();
    for name in super::names::timeout_state_names() {
        timeouts.push_str(&format!("{name} = 1\n"));
    }
    let mut recovery = String::new();
    for name in super::names::recovery_class_names() {
        recovery.push_str(&format!("{name} = 1\n"));
    }
    let profile_text = format!(
        r#"
name = "x"
build = {{ command = "c", cwd = ".", artifact = "a", timeout_s = 1 }}
test = {{ harness = "unity", timeout_s = 1, regex = {{ type = "one_line", ordered = true, patterns = [], fail_patterns = [], crash_patterns = [], case_name = "c" }} }}
goal = {{ fail_to_pass = [], confirm_runs = 1 }}
loop = {{ max_iterations = 1, no_progress_limit = 1 }}
policy = {{ allow = [], deny = [], max_changed_lines = 1, max_changed_files = 1, allow_builtin = [] }}
strategy.llm = {{ base_url = "u", model = "m", api_key_env = "K", temperature = 0.5, timeout_s = 1, connect_timeout_s = 1, idle_timeout_s = 1, candidates = 1, parallel = 1, max_retries = 0, token_budget = 1 }}
strategy.command = {{ argv = ["a"], timeout_s = 1, candidates = 1 }}
snapshot = {{ max_untracked_mb = 1 }}
lint = {{ command = "c", format = "regex", pattern = "(?P<file>\\S+): (?P<message>.*)", timeout_s = 1, build_warnings = true, new_findings = "warn" }}
commit = {{ hooks = true, timeout_s = 1 }}
[timeouts]
{timeouts}
[recovery]
{recovery}
"#
    );
    for (text, schema) in [
        (board_text, raw::BOARD),
        (profile_text.as_str(), raw::PROFILE),
    ] {
        let mut expected = Vec::new();
        schema_paths(schema, "", &mut expected);
        let table: toml::Table = toml::from_str(text).unwrap();
        let mut present = Vec::new();
        collect_paths(&table, "", &mut present);
        expected.sort();
        present.sort();
        assert_eq!(present, expected, "the test file must use every schema key");
    }
    let src = parse::Source {
        file: Path::new("all.toml"),
        text: board_text,
    };
    parse::raw::<RawBoard>(&src, raw::BOARD).unwrap();
    let src = parse::Source {
        file: Path::new("all.toml"),
        text: &profile_text,
    };
    parse::raw::<RawProfile>(&src, raw::PROFILE).unwrap();
}

fn collect_paths(table: &toml::Table, prefix: &str, out: &mut Vec<String>) {
    for (key, value) in table {
        let path = format!("{prefix}{key}");
        match value {
            toml::Value::Table(inner) => collect_paths(inner, &format!("{path}."), out),
            _ => out.push(path),
        }
    }
}

// ---- files, resolution, shipped -------------------------------------------------------------

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn read_errors_name_the_path() {
    let err = super::load_board(Path::new("does/not/exist.toml")).unwrap_err();
    assert!(matches!(err, ConfigError::Read { .. }));
    assert_eq!(err.line_col(), None);
    assert!(
        err.to_string()
            .starts_with("does/not/exist.toml: cannot read: "),
        "{err}"
    );
}

#[test]
fn resolution_prefers_the_repository_then_the_shipped_files() {
    let repo = tempfile::tempdir().unwrap();
    let boards = repo.path().join("boards");
    fs::create_dir(&boards).unwrap();
    fs::write(
        boards.join("qemu-mps2-an385.toml"),
        "name = \"qemu-mps2-an385\"\nbackend = \"qemu\"\n[qemu]\nmachine = \"mps2-an386\"\n",
    )
    .unwrap();
    fs::write(
        boards.join("mine.toml"),
        "name = \"mine\"\nbackend = \"qemu\"\n[qemu]\nmachine = \"lm3s6965evb\"\n",
    )
    .unwrap();

    let shadowing = resolve_board("qemu-mps2-an385", repo.path()).unwrap();
    assert_eq!(shadowing.machine(), "mps2-an386");
    assert_eq!(shadowing.source, boards.join("qemu-mps2-an385.toml"));

    let shipped = resolve_board("qemu-lm3s6965evb", repo.path()).unwrap();
    assert_eq!(
        shipped.source,
        PathBuf::from("<shipped>/boards/qemu-lm3s6965evb.toml")
    );
    assert_eq!(shipped.machine(), "lm3s6965evb");

    // A path (anything with a `/` or ending in `.toml`) is loaded as such.
    let by_path = boards.join("mine.toml");
    let loaded = resolve_board(&by_path.to_string_lossy(), Path::new("/nonexistent")).unwrap();
    assert_eq!(loaded.name, "mine");
    let err = resolve_board("mine2.toml", repo.path()).unwrap_err();
    assert!(
        matches!(&err, ConfigError::Read { path, .. } if path == Path::new("mine2.toml")),
        "{err}"
    );

    let err = resolve_board("qemu-virt", repo.path()).unwrap_err();
    let ConfigError::NotFound {
        kind,
        searched,
        available,
        ..
    } = &err
    else {
        panic!("{err}");
    };
    assert_eq!(*kind, ConfigKind::Board);
    assert_eq!(
        searched,
        &vec![
            boards.join("qemu-virt.toml"),
            PathBuf::from("<shipped>/boards/qemu-virt.toml")
        ]
    );
    assert_eq!(
        available,
        &vec![
            "mine".to_string(),
            "qemu-lm3s6965evb".to_string(),
            "qemu-mps2-an385".to_string()
        ]
    );
    assert!(err
        .to_string()
        .starts_with("board `qemu-virt` not found (looked for "));
}

#[test]
fn a_broken_repository_file_is_reported_not_skipped() {
    let repo = tempfile::tempdir().unwrap();
    let profiles = repo.path().join("profiles");
    fs::create_dir(&profiles).unwrap();
    fs::write(
        profiles.join("crc.toml"),
        "name = \"crc\"\n[build]\ncomand = \"make\"\n",
    )
    .unwrap();
    let err = resolve_profile("crc", repo.path()).unwrap_err();
    assert_eq!(err.line_col(), Some((3, 1)));
    assert!(
        err.to_string().contains("unknown key `comand` in [build]"),
        "{err}"
    );

    let shipped = resolve_profile("ringbuf", repo.path()).unwrap();
    assert_eq!(
        shipped.source,
        PathBuf::from("<shipped>/profiles/ringbuf.toml")
    );
}

#[test]
fn listing_marks_shadowed_shipped_boards() {
    let repo = tempfile::tempdir().unwrap();
    let boards = repo.path().join("boards");
    fs::create_dir(&boards).unwrap();
    fs::write(
        boards.join("qemu-mps2-an385.toml"),
        "name = \"qemu-mps2-an385\"\nbackend = \"qemu\"\n[qemu]\nmachine = \"mps2-an385\"\n",
    )
    .unwrap();
    fs::write(boards.join("broken.toml"), "name = \n").unwrap();
    fs::write(boards.join("README.md"), "not a board").unwrap();

    let listed = list_boards(repo.path()).unwrap();
    let summary: Vec<_> = listed
        .iter()
        .map(|l| (l.name.as_str(), l.origin, l.shadowed, l.loaded.is_ok()))
        .collect();
    assert_eq!(
        summary,
        vec![
            ("broken", Origin::Repo, false, false),
            ("qemu-mps2-an385", Origin::Repo, false, true),
            ("qemu-lm3s6965evb", Origin::Shipped, false, true),
            ("qemu-mps2-an385", Origin::Shipped, true, true),
        ]
    );
    let without_repo_dir = list_boards(&repo.path().join("nowhere")).unwrap();
    assert_eq!(without_repo_dir.len(), list_shipped_boards().len());
}

#[test]
fn every_shipped_file_validates_and_is_named_after_its_file() {
    for file in shipped_files() {
        let source = file.source();
        match file.kind {
            ConfigKind::Board => {
                let b = parse_board(file.text, &source).unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(b.name, file.name);
                assert!(matches!(b.backend, BoardBackend::Qemu(_)));
            }
            ConfigKind::Profile => {
                let p = parse_profile(file.text, &source).unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(p.name, file.name);
                assert_eq!(p.test.harness, Harness::Unity);
                assert_eq!(p.test.timeout, Duration::from_secs(20));
            }
        }
    }
}

#[test]
fn the_embedded_list_matches_the_shipped_directories() {
    for kind in [ConfigKind::Board, ConfigKind::Profile] {
        let mut on_disk: Vec<String> = fs::read_dir(manifest_dir().join(kind.dir()))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        on_disk.sort();
        let mut embedded: Vec<String> = shipped_files()
            .iter()
            .filter(|f| f.kind == kind)
            .map(|f| format!("{}.toml", f.name))
            .collect();
        embedded.sort();
        assert_eq!(embedded, on_disk, "update FILES in config/shipped.rs");
    }
}

#[test]
fn shipped_profiles_build_the_fixture_for_each_shipped_board() {
    let crc = resolve_profile("crc", Path::new("/nonexistent")).unwrap();
    assert_eq!(crc.policy.allow, vec!["src/**".to_string()]);
    let an385 = resolve_board("qemu-mps2-an385", Path::new("/nonexistent")).unwrap();
    let lm3s = resolve_board("qemu-lm3s6965evb", Path::new("/nonexistent")).unwrap();
    assert_eq!(
        crc.build_for(&an385).command,
        "make BOARD=mps2-an385 build/mps2-an385/test_crc.elf"
    );
    assert_eq!(
        crc.build_for(&lm3s).artifact,
        PathBuf::from("build/lm3s6965evb/test_crc.elf")
    );
    let an385_qemu = match &an385.backend {
        BoardBackend::Qemu(q) => q.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(an385_qemu.cpu.as_deref(), Some("cortex-m3"));
}

// ---- validate_file and the sample bad files ---------------------------------------------------

#[test]
fn validate_file_decides_the_kind() {
    let shipped_board = manifest_dir().join("boards/qemu-mps2-an385.toml");
    assert!(matches!(
        validate_file(&shipped_board),
        Ok(Validated::Board(_))
    ));
    assert!(matches!(
        validate_file(&manifest_dir().join("profiles/crc.toml")),
        Ok(Validated::Profile(_))
    ));

    let dir = tempfile::tempdir().unwrap();
    let by_content = dir.path().join("anything.toml");
    fs::write(&by_content, MINIMAL_PROFILE).unwrap();
    assert!(matches!(
        validate_file(&by_content),
        Ok(Validated::Profile(_))
    ));
    fs::write(&by_content, QEMU_BOARD).unwrap();
    assert!(matches!(
        validate_file(&by_content),
        Ok(Validated::Board(_))
    ));
    fs::write(&by_content, "\nname = \"x\"\n").unwrap();
    assert_error(
        validate_file(&by_content),
        1,
        1,
        "cannot tell whether this is a board or a profile",
    );

    // In `boards/`, a profile is judged as a board.
    let boards = dir.path().join("boards");
    fs::create_dir(&boards).unwrap();
    fs::write(boards.join("p.toml"), MINIMAL_PROFILE).unwrap();
    assert_error(
        validate_file(&boards.join("p.toml")),
        3,
        2,
        "unknown key `build` at the top level",
    );
}

#[test]
fn sample_bad_files_fail_where_they_say() {
    let data = manifest_dir().join("tests/data/config");
    let cases = [
        (
            "bad_unknown_key.toml",
            3,
            10,
            "unknown key `machin` in [qemu] (expected one of: binary, machine, cpu, extra_args)",
        ),
        ("bad_syntax.toml", 4, 6, "TOML syntax error: unclosed table"),
        (
            "bad_missing_machine.toml",
            5,
            1,
            "missing key `machine` in [qemu]",
        ),
        (
            "bad_placeholder.toml",
            5,
            23,
            "unknown placeholder `{bord}`",
        ),
        (
            "bad_backend_table.toml",
            8,
            1,
            "table [serial] is not allowed here: backend = \"qemu\"",
        ),
    ];
    for (file, line, column, needle) in cases {
        let path = data.join(file);
        let err = assert_error(validate_file(&path), line, column, needle);
        assert_eq!(err.location().map(|l| l.file.clone()), Some(path));
    }
}

// ---- [test.regex] ------------------------------------------------------------------------------

const REGEX_PROFILE_HEAD: &str =
    "name = \"boot\"\n[build]\ncommand = \"make\"\nartifact = \"a.elf\"\n\
                                  [test]\nharness = \"regex\"\n";

fn regex_profile(table: &str) -> Result<Profile, ConfigError> {
    profile(&format!("{REGEX_PROFILE_HEAD}{table}"))
}

fn sources(patterns: &[Pattern]) -> Vec<&str> {
    patterns.iter().map(Pattern::as_str).collect()
}

#[test]
fn regex_harness_settings() {
    let p = regex_profile(
        r#"timeout_s = 5
[test.regex]
type = "multi_line"
ordered = false
patterns = ["Hello", "tick [0-9]+"]
fail_patterns = ["ASSERT", "Error"]
crash_patterns = ["HardFault", "Guru Meditation"]
case_name = "console"
"#,
    )
    .unwrap();
    assert_eq!(p.test.timeout, Duration::from_secs(5));
    let Harness::Regex(spec) = &p.test.harness else {
        panic!("not a regex harness: {:?}", p.test.harness);
    };
    assert_eq!(spec.mode, RegexMode::MultiLine);
    assert!(!spec.ordered);
    assert_eq!(sources(&spec.patterns), ["Hello", "tick [0-9]+"]);
    assert_eq!(sources(&spec.fail_patterns), ["ASSERT", "Error"]);
    assert_eq!(
        sources(&spec.crash_patterns),
        ["HardFault", "Guru Meditation"]
    );
    assert_eq!(spec.case_name, "console");
    assert!(spec.patterns[1].is_match("tick 42"));
    assert_eq!(p.test.harness.name(), "regex");
}

/// An ordered list may ask for a line more than once (Twister's console harness reads it so);
/// each repeat is a case of its own. A fail or crash pattern listed twice is harmless.
#[test]
fn regex_patterns_repeated_in_order_are_cases_of_their_own() {
    let p = regex_profile(
        "[test.regex]\npatterns = [\"^boot\", \"^tick\", \"^tick\", \"^tick\"]\n\
         fail_patterns = [\"ERROR\", \"ERROR\"]\ncrash_patterns = [\"ERROR\"]\n",
    )
    .unwrap();
    let Harness::Regex(spec) = &p.test.harness else {
        panic!("not a regex harness: {:?}", p.test.harness);
    };
    assert_eq!(
        spec.pattern_case_names(),
        ["^boot", "^tick", "^tick #2", "^tick #3"]
    );
    assert_eq!(sources(&spec.fail_patterns), ["ERROR", "ERROR"]);
}

#[test]
fn regex_harness_defaults() {
    let p = regex_profile("[test.regex]\npatterns = [\"Hello\"]\n").unwrap();
    let Harness::Regex(spec) = &p.test.harness else {
        panic!("not a regex harness: {:?}", p.test.harness);
    };
    assert_eq!(spec.mode, RegexMode::MultiLine);
    assert!(spec.ordered);
    assert!(spec.fail_patterns.is_empty());
    assert!(spec.crash_patterns.is_empty());
    // The case carrying the run's outcome is named after the profile by default.
    assert_eq!(spec.case_name, "boot");

    let p = regex_profile("regex = { type = \"one_line\", patterns = [\"^OK$\"] }\n").unwrap();
    let Harness::Regex(spec) = &p.test.harness else {
        panic!("not a regex harness: {:?}", p.test.harness);
    };
    assert_eq!(spec.mode, RegexMode::OneLine);
}

#[test]
fn invalid_regexes_point_at_the_character_at_fault() {
    // Line 8 is the patterns line; `[` of `tick [0-9` is column 28.
    let err = assert_error(
        regex_profile("[test.regex]\npatterns = [\"Hello\", \"tick [0-9\"]\n"),
        8,
        28,
        "invalid value for `patterns` in [test.regex]: `tick [0-9` is not a valid regex: \
         unclosed character class",
    );
    assert_eq!(
        err.key().map(ToString::to_string).as_deref(),
        Some("test.regex.patterns")
    );

    assert_error(
        regex_profile("[test.regex]\npatterns = [\"ok\"]\nfail_patterns = [\"a(b\"]\n"),
        9,
        20,
        "invalid value for `fail_patterns` in [test.regex]: `a(b` is not a valid regex: \
         unclosed group",
    );
    assert_error(
        regex_profile("[test.regex]\npatterns = [\"ok\"]\ncrash_patterns = ['x{2,1}']\n"),
        9,
        21,
        "`x{2,1}` is not a valid regex: invalid repetition count range",
    );
    // An escaped string cannot be pointed into: the error points at the string.
    assert_error(
        regex_profile("[test.regex]\npatterns = [\"\\\\q\"]\n"),
        8,
        13,
        "`\\q` is not a valid regex: unrecognized escape sequence",
    );
}

#[test]
fn regex_harness_rules() {
    assert_error(
        regex_profile(""),
        5,
        1,
        "missing key `regex` in [test]: harness = \"regex\" needs a [test.regex] table with \
         `patterns`",
    );
    assert_error(
        regex_profile("[test.regex]\nordered = true\n"),
        7,
        1,
        "missing key `patterns` in [test.regex]",
    );
    assert_error(
        regex_profile("[test.regex]\npatterns = []\n"),
        8,
        12,
        "invalid value for `patterns` in [test.regex]: needs at least one pattern",
    );
    assert_error(
        regex_profile("[test.regex]\ntype = \"one_line\"\npatterns = [\"a\", \"b\"]\n"),
        9,
        12,
        "type = \"one_line\" takes exactly one pattern",
    );
    assert_error(
        regex_profile("[test.regex]\ntype = \"two_line\"\npatterns = [\"a\"]\n"),
        8,
        8,
        "invalid value for `type` in [test.regex]: unknown type `two_line` (expected one of: \
         one_line, multi_line)",
    );
    assert_error(
        regex_profile("[test.regex]\nordered = false\npatterns = [\"a\", \"b\", \"a\"]\n"),
        9,
        23,
        "`a` is listed twice (patterns 1 and 3): with ordered = false every pattern is looked for \
         on every line, so the second would match the first one's line and check nothing more; \
         remove it, or set ordered = true to require the line twice",
    );
    assert_error(
        regex_profile("[test.regex]\npatterns = [\"a\", \"a #2\", \"a\"]\n"),
        8,
        26,
        "pattern 3 names its case `a #2`, as another pattern's case is named",
    );
    assert_error(
        regex_profile("[test.regex]\npatterns = [\"a\", \"a\"]\ncase_name = \"a #2\"\n"),
        9,
        13,
        "`a #2` is also a pattern",
    );
    assert_error(
        regex_profile(
            "[test.regex]\npatterns = [\"^status: OK\"]\n\
             fail_patterns = [\"^status: ERROR\", \"^status: OK\"]\n",
        ),
        9,
        36,
        "invalid value for `fail_patterns` in [test.regex]: `^status: OK` is also in \
         `patterns`: a line a required pattern matches is never a failure or crash line, so this \
         one could never fire; keep it in one list",
    );
    assert_error(
        regex_profile(
            "[test.regex]\ntype = \"one_line\"\npatterns = [\"OK\"]\ncrash_patterns = [\"OK\"]\n",
        ),
        10,
        19,
        "invalid value for `crash_patterns` in [test.regex]: `OK` is also in `patterns`",
    );
    assert_error(
        regex_profile("[test.regex]\npatterns = [\"\"]\n"),
        8,
        13,
        "must not be empty",
    );
    assert_error(
        regex_profile("[test.regex]\npatterns = [\"a\"]\ncase_name = \"a\"\n"),
        9,
        13,
        "`a` is also a pattern",
    );
    assert_error(
        regex_profile("[test.regex]\npatterns = [\"a\"]\ncase_name = \" \"\n"),
        9,
        13,
        "must not be empty",
    );
    assert_error(
        regex_profile("[test.regex]\npatterns = [\"a\"]\norder = true\n"),
        9,
        1,
        "unknown key `order` in [test.regex] (expected one of: type, ordered, patterns, \
         fail_patterns, crash_patterns, case_name)",
    );
    assert_error(
        regex_profile("[test.regex]\npatterns = \"a\"\n"),
        8,
        12,
        "invalid value for `patterns` in [test.regex]",
    );
    assert_error(
        profile(
            "name = \"x\"\n[build]\ncommand = \"make\"\nartifact = \"a.elf\"\n[test]\n\
             harness = \"unity\"\n[test.regex]\npatterns = [\"a\"]\n",
        ),
        7,
        1,
        "table [test.regex] is not allowed here: it is only read with harness = \"regex\", not \
         \"unity\"",
    );
}

const POWER_BOARD: &str =
    "name = \"bench-7\"\nbackend = \"board\"\n[flash]\nmethod = \"command\"\n\
                           command = \"f {elf}\"\n[serial]\nport = \"/dev/ttyUSB0\"\n";

#[test]
fn power_defaults_and_retry_follow_what_can_cycle() {
    let b = board(&format!(
        "{POWER_BOARD}[power]\non = \"pdu on {{board}}\"\noff = \"pdu off {{board}}\"\n"
    ))
    .unwrap();
    let p = b.power.unwrap();
    assert_eq!(p.on.as_deref(), Some("pdu on {board}"));
    assert_eq!(p.off_pause, Duration::from_secs(2));
    assert_eq!(p.timeout, Duration::from_secs(60));
    assert!(p.can_cycle() && p.retry_on_hang);

    let on_only = board(&format!("{POWER_BOARD}[power]\non = \"pdu on\"\n")).unwrap();
    let p = on_only.power.unwrap();
    assert!(!p.can_cycle() && !p.retry_on_hang);

    let off = board(&format!(
        "{POWER_BOARD}[power]\ncycle = \"c\"\nretry_on_hang = false\noff_s = 0.5\ntimeout_s = 9\n"
    ))
    .unwrap();
    let p = off.power.unwrap();
    assert!(!p.retry_on_hang);
    assert_eq!(p.off_pause, Duration::from_millis(500));
    assert_eq!(p.timeout, Duration::from_secs(9));
}

#[test]
fn power_errors_point_at_the_value() {
    assert_error(
        board(&format!(
            "{POWER_BOARD}[power]\non = \"pdu on\"\nretry_on_hang = true\n"
        )),
        10,
        17,
        "`retry_on_hang` in [power]: needs `cycle`, or both `off` and `on`",
    );
    assert_error(
        board(&format!(
            "{POWER_BOARD}[power]\ncycle = \"relay {{port}}\"\n"
        )),
        9,
        16,
        "unknown placeholder `{port}` (expected one of: {board})",
    );
    assert_error(
        board(&format!("{POWER_BOARD}[power]\ncycle = \"c\"\noff_s = 0\n")),
        10,
        9,
        "must be a number of seconds greater than 0",
    );
    assert_error(
        board(&format!(
            "{POWER_BOARD}[power]\ncycle = \"c\"\nretries = 2\n"
        )),
        10,
        1,
        "unknown key",
    );
}

#[test]
fn serial_nonce_is_off_unless_asked_for() {
    let nonce = |b: Board| match b.backend {
        BoardBackend::Hardware(HardwareSpec {
            console: ConsoleSpec::Serial { nonce, .. },
            ..
        }) => nonce,
        other => panic!("{other:?}"),
    };
    assert!(!nonce(board(POWER_BOARD).unwrap()));
    assert!(nonce(
        board(&format!("{POWER_BOARD}nonce = true\n")).unwrap()
    ));
}

#[test]
fn lint_table_defaults_and_errors() {
    use crate::analysis::lint::Format;
    let p = profile(&format!(
        "{MINIMAL_PROFILE}[lint]\ncommand = \"cppcheck -q --xml src\"\nformat = \"cppcheck\"\n"
    ))
    .unwrap();
    let lint = p.lint.unwrap();
    assert_eq!(lint.format, Format::Cppcheck);
    assert!(lint.build_warnings);
    assert_eq!(lint.new_findings, crate::config::NewFindings::Reject);
    assert_eq!(lint.timeout, Duration::from_secs(300));
    // Only the build's warnings: no command, no format needed.
    let p = profile(&format!(
        "{MINIMAL_PROFILE}[lint]\nnew_findings = \"warn\"\n"
    ))
    .unwrap();
    assert_eq!(p.lint.unwrap().command, None);
    assert!(profile(MINIMAL_PROFILE).unwrap().lint.is_none());

    assert_error(
        profile(&format!(
            "{MINIMAL_PROFILE}[lint]\ncommand = \"x\"\nformat = \"pylint\"\n"
        )),
        10,
        10,
        "unknown format `pylint` (expected one of: gcc, cppcheck, clang-tidy, regex)",
    );
    assert_error(
        profile(&format!("{MINIMAL_PROFILE}[lint]\ncommand = \"x\"\n")),
        8,
        1,
        "missing key `format` in [lint]",
    );
    assert_error(
        profile(&format!(
            "{MINIMAL_PROFILE}[lint]\ncommand = \"x\"\nformat = \"regex\"\npattern = \"(?P<file>\\\\S+) (?P<msg>.*)\"\n"
        )),
        11,
        11,
        "needs a named group `(?P<message>...)`",
    );
    assert_error(
        profile(&format!(
            "{MINIMAL_PROFILE}[lint]\ncommand = \"x\"\nformat = \"gcc\"\npattern = \"x\"\n"
        )),
        11,
        11,
        "only read with format = \"regex\"",
    );
    assert_error(
        profile(&format!(
            "{MINIMAL_PROFILE}[lint]\nbuild_warnings = false\n"
        )),
        8,
        1,
        "nothing to check",
    );
    assert_error(
        profile(&format!(
            "{MINIMAL_PROFILE}[lint]\nnew_findings = \"block\"\n"
        )),
        9,
        16,
        "unknown new_findings `block` (expected one of: reject, warn)",
    );
    assert_error(
        profile(&format!("{MINIMAL_PROFILE}[lint]\ncomand = \"x\"\n")),
        9,
        1,
        "unknown key `comand` in [lint]",
    );
}
