//! A real crash, end to end through the pure parts: the fwtests fixture's test_sensor image is
//! built with make and arm-none-eabi-gcc, run on QEMU under gdb-multiarch until it spins in its
//! fault handler, and the stacked frame and fault registers gdb reads are decoded, symbolised
//! and handed to the Unity parser with the console QEMU wrote.
//!
//! Needs make, arm-none-eabi-gcc, qemu-system-arm and gdb-multiarch; without them it fails.
#![allow(
    clippy::unwrap_used,
    reason = "test helpers too should stop the test loudly on anything unexpected"
)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fwfix::analysis::fault::{crash_report, site_functions};
use fwfix::analysis::Symbolizer;
use fwfix::capture::{Capture, ConsoleLine, FaultSnapshot, RunEnd, Stream};
use fwfix::config::Harness;
use fwfix::results::{parser_for, CaseStatus, ParseContext, Verdict};

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            if entry.file_name() != "build" {
                copy_tree(&entry.path(), &target);
            }
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Runs a command to completion, killing it after `limit`; returns its stdout. With `check`, a
/// non-zero exit fails the test.
fn run(program: &str, args: &[&str], cwd: &Path, limit: Duration, check: bool) -> String {
    let mut child = Command::new(program)
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {program} ({e}): this test needs it installed"));
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            child.kill().unwrap();
            let output = child.wait_with_output().unwrap();
            panic!(
                "{program} {args:?} did not finish in {limit:?}:\n{}\n{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    assert!(
        !check || output.status.success(),
        "{program} {args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// `key=hexvalue` pairs gdb printed.
fn registers(gdb_output: &str) -> HashMap<String, u32> {
    gdb_output
        .split_whitespace()
        .filter_map(|word| {
            let (key, value) = word.split_once('=')?;
            Some((key.to_string(), u32::from_str_radix(value, 16).ok()?))
        })
        .collect()
}

fn line_of(path: &Path, needle: &str) -> u32 {
    let source = std::fs::read_to_string(path).unwrap();
    let index = source
        .lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("{needle:?} is not in {}", path.display()));
    u32::try_from(index + 1).unwrap()
}

#[test]
fn sensor_crash_is_decoded_symbolised_and_blamed_on_the_running_test() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/fwtests");
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("fwtests");
    copy_tree(&fixture, &work);
    let image = "build/mps2-an385/test_sensor.elf";
    run(
        "make",
        &["-s", "BOARD=mps2-an385", image],
        &work,
        Duration::from_secs(120),
        true,
    );
    let elf: PathBuf = work.join(image);
    let console = work.join("console.log");

    // gdb starts QEMU itself on a pipe (no TCP port to collide on), stops in the fault handler
    // and prints the frame the core stacked on entry: r0-r3, r12, LR, PC, xPSR.
    let qemu = format!(
        "target remote | exec qemu-system-arm -M mps2-an385 -display none -monitor none \
         -serial file:{} -semihosting-config enable=on,target=native -gdb stdio -S -kernel {}",
        console.display(),
        elf.display()
    );
    let out = run(
        "gdb-multiarch",
        &[
            "-q",
            "-batch",
            "-nx",
            "-ex",
            &qemu,
            "-ex",
            "break Default_Handler",
            "-ex",
            "continue",
            "-ex",
            "printf \"exc=%x sp=%x lr=%x pc=%x xpsr=%x\\n\", $xpsr & 0x1ff, $sp, \
             *(unsigned *)($sp + 20), *(unsigned *)($sp + 24), *(unsigned *)($sp + 28)",
            "-ex",
            "printf \"cfsr=%x hfsr=%x mmfar=%x bfar=%x\\n\", *(unsigned *)0xe000ed28, \
             *(unsigned *)0xe000ed2c, *(unsigned *)0xe000ed34, *(unsigned *)0xe000ed38",
            "-ex",
            "kill",
            elf.to_str().unwrap(),
        ],
        &work,
        Duration::from_secs(60),
        // Killing QEMU through the pipe sometimes ends gdb with "Broken pipe" after everything
        // was printed; the register lines below are what the test checks.
        false,
    );
    let regs = registers(&out);
    let snap = FaultSnapshot {
        exception: regs.get("exc").copied(),
        pc: regs.get("pc").copied(),
        lr: regs.get("lr").copied(),
        sp: regs.get("sp").copied(),
        xpsr: regs.get("xpsr").copied(),
        cfsr: regs.get("cfsr").copied(),
        hfsr: regs.get("hfsr").copied(),
        mmfar: regs.get("mmfar").copied(),
        bfar: regs.get("bfar").copied(),
        raw: out.clone(),
        ..FaultSnapshot::default()
    };

    let symbols = Symbolizer::open(&elf).unwrap();
    let report = crash_report(&snap, Some(&symbols));
    assert_eq!(report.exception.as_deref(), Some("HardFault"), "{out}");
    assert_eq!(report.pc.as_deref(), Some("0xfffffffe"));
    assert_eq!(report.fault_bits, vec!["FORCED", "IACCVIOL"]);
    assert_eq!(report.fault_address, None, "MMARVALID is clear");
    // The bad call target is in no function, so the crash site is the caller.
    assert_eq!(report.function.as_deref(), Some("calibrate"));
    let caller = report.caller.clone().unwrap();
    let hook_line = line_of(
        &work.join("src/sensor.c"),
        "millidegrees = cal->correct(millidegrees);",
    );
    assert_eq!(caller.function.as_deref(), Some("calibrate"), "{caller:?}");
    assert!(caller.file.as_deref().unwrap().ends_with("src/sensor.c"));
    assert_eq!(caller.line, Some(hook_line));
    assert!(
        report
            .summary
            .starts_with("HardFault (FORCED; IACCVIOL) at 0xfffffffe called from calibrate (")
            && report.summary.contains("the caller is where to look"),
        "{}",
        report.summary
    );

    let site = site_functions(&snap, &symbols);
    assert_eq!(site, vec!["calibrate", "sensor_sample"]);

    let expected = symbols.test_functions();
    assert_eq!(
        expected,
        vec![
            "test_sensor_converts_raw_reading",
            "test_sensor_applies_calibration",
            "test_sensor_uncalibrated_unit_uses_raw_reading",
            "test_sensor_reports_bus_error",
        ]
    );
    let text = std::fs::read_to_string(&console).unwrap();
    let capture = Capture {
        lines: text
            .lines()
            .map(|line| ConsoleLine {
                t_ms: 0,
                stream: Stream::Uart,
                text: line.to_string(),
            })
            .collect(),
        end: RunEnd::Crashed,
        fault: Some(snap),
        duration_ms: 0,
        truncated: false,
        exit_code: None,
        stopped_at: None,
        nonce: None,
        faults_watched: false,
    };
    let parser = parser_for(&Harness::Unity);
    let results = parser.parse(
        &capture,
        &ParseContext {
            expected,
            site_functions: site,
        },
    );
    assert_eq!(results.verdict, Verdict::Fail);
    let statuses: Vec<_> = results.cases.iter().map(|c| c.status).collect();
    assert_eq!(
        statuses,
        vec![
            CaseStatus::Pass,
            CaseStatus::Pass,
            CaseStatus::Crash,
            CaseStatus::Missing
        ],
        "{text}"
    );
    assert_eq!(
        results.cases[2].name,
        "test_sensor_uncalibrated_unit_uses_raw_reading"
    );
}
