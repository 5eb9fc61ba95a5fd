//! Crashes inside a preemptive scheduler, as the QEMU backend catches them: every crash variant of
//! the RTOS fixture (fixtures/rtos) on both machines is stopped at its fault handler's entry, its
//! frame read from the PSP (a task) or the MSP at the top of RAM (an interrupt), decoded and
//! symbolised on the image that ran, and must name the function, file and line the fixture marks
//! with `/* FAULT-LINE: <variant> */`. A run of the passing image under its 1 kHz tick keeps
//! console.log's host lines to a few bytes, where QEMU's `-d int` log wrote thousands of lines a
//! second. Real builds, real QEMU; fails loudly without them.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers too should stop the test loudly on anything unexpected"
)]

use crate::common::dut::{uart, NeverFinal, Recorder};
use crate::common::{require_tools, rtos_fixture_dir};
use fwfix::analysis::fault::crash_report;
use fwfix::analysis::{CrashReport, Symbolizer};
use fwfix::capture::{Capture, RunEnd, Stream};
use fwfix::config::QemuSpec;
use fwfix::dut::qemu::QemuDut;
use fwfix::dut::{Dut, Image, RunSpec};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const MPS2: &str = "mps2-an385";
const LM3S: &str = "lm3s6965evb";
const CRASHES: [&str; 5] = [
    "null_call",
    "bad_read",
    "undef",
    "stack_overflow",
    "isr_fault",
];

/// A copy of the fixture with every variant built for `board`.
fn built(board: &str) -> tempfile::TempDir {
    built_with(board, "variants")
}

/// A copy of the fixture with `make BOARD=<board> <target>` run in it.
fn built_with(board: &str, target: &str) -> tempfile::TempDir {
    require_tools();
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new("cp")
        .arg("-r")
        .arg(rtos_fixture_dir())
        .arg(dir.path().join("rtos"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let _ = std::fs::remove_dir_all(dir.path().join("rtos/build"));
    let out = Command::new("make")
        .args(["-s", &format!("BOARD={board}"), target])
        .current_dir(dir.path().join("rtos"))
        .output()
        .expect("make runs");
    assert!(
        out.status.success(),
        "building the rtos fixture ({target}) for {board} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir
}

fn image(dir: &Path, board: &str, variant: &str) -> PathBuf {
    dir.join(format!("rtos/build/{board}/{variant}/rtos.elf"))
}

/// The file (relative to the fixture) and line the fixture marks for `variant`.
fn fault_line(dir: &Path, variant: &str) -> (String, u32) {
    let marker = format!("/* FAULT-LINE: {variant} */");
    let src = dir.join("rtos/src");
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        if let Some(i) = text.lines().position(|l| l.contains(&marker)) {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            return (format!("src/{name}"), u32::try_from(i + 1).unwrap());
        }
    }
    panic!("no {marker} in {}", src.display());
}

async fn run(machine: &str, elf: &Path, timeout: Duration) -> (Capture, String) {
    let mut dut = QemuDut::new(
        format!("test-{machine}"),
        QemuSpec {
            binary: "qemu-system-arm".into(),
            machine: machine.into(),
            cpu: None,
            extra_args: vec![],
        },
    );
    let dir = tempfile::tempdir().unwrap();
    let console = dir.path().join("console.log");
    let spec = RunSpec {
        timeout,
        detector: Box::new(NeverFinal),
        console_log: console.clone(),
        append: None,
        nonce: None,
        cancel: CancellationToken::new(),
        attempt: 1,
        prepare_next: false,
    };
    let capture = dut
        .run(
            &Image {
                elf: elf.to_path_buf(),
            },
            spec,
            &Recorder::default(),
        )
        .await
        .unwrap();
    let log = std::fs::read_to_string(&console).unwrap();
    (capture, log)
}

fn report_of(capture: &Capture, elf: &Path) -> CrashReport {
    let fault = capture.fault.as_ref().expect("a fault snapshot");
    let symbols = Symbolizer::open(elf).unwrap();
    crash_report(fault, Some(&symbols))
}

async fn every_crash_names_its_fault_line(board: &str) {
    let dir = built(board);
    for variant in CRASHES {
        let elf = image(dir.path(), board, variant);
        let (capture, log) = run(board, &elf, Duration::from_secs(10)).await;
        assert_eq!(capture.end, RunEnd::Crashed, "{board} {variant}: {log}");
        let fault = capture.fault.as_ref().unwrap();
        let report = report_of(&capture, &elf);
        let what = format!("{board} {variant}: {}\n{}", report.summary, fault.raw);
        let (file, line) = fault_line(dir.path(), variant);
        assert!(
            report.file.as_deref().is_some_and(|f| f.ends_with(&file)),
            "{what}"
        );
        assert_eq!(report.line, Some(line), "{what}");
        assert!(report.pc.is_some() && report.lr.is_some(), "{what}");
        // The fault is recorded in console.log, in one host line.
        assert!(
            log.contains("(read by fwfix at the handler's entry)"),
            "{what}\n{log}"
        );
        match variant {
            "isr_fault" => {
                assert_eq!(fault.exc_return, Some(0xFFFF_FFF1), "{what}");
                assert_eq!(report.function.as_deref(), Some("watchdog_kick"), "{what}");
                assert!(
                    report
                        .summary
                        .contains("in SysTick's handler context, in watchdog_kick"),
                    "{what}"
                );
            }
            _ => {
                // Every task faults in thread mode with its frame on the PSP.
                assert_eq!(fault.exc_return, Some(0xFFFF_FFFD), "{what}");
                assert!(report.summary.contains("an RTOS task"), "{what}");
            }
        }
        match variant {
            "null_call" => {
                assert_eq!(report.pc.as_deref(), Some("0x00000000"), "{what}");
                assert_eq!(report.function.as_deref(), Some("events_post"), "{what}");
                assert!(
                    report.summary.contains(&format!(
                        "events_post ({file}:{line}) called a null function pointer"
                    )) || report.summary.contains("called a null function pointer"),
                    "{what}"
                );
                assert!(
                    report.fault_bits.contains(&"INVSTATE".to_string()),
                    "{what}"
                );
            }
            "bad_read" => {
                assert_eq!(report.function.as_deref(), Some("sensor_read"), "{what}");
                assert_eq!(
                    report.fault_address.as_deref(),
                    Some("0x60000100"),
                    "{what}"
                );
            }
            "undef" => {
                assert_eq!(report.function.as_deref(), Some("checksum_add"), "{what}");
                assert!(
                    report.fault_bits.contains(&"UNDEFINSTR".to_string()),
                    "{what}"
                );
                assert!(report.summary.contains("from a UsageFault"), "{what}");
            }
            "stack_overflow" => {
                assert_eq!(report.function.as_deref(), Some("record_history"), "{what}");
                assert!(
                    report.fault_bits.contains(&"DACCVIOL".to_string()),
                    "{what}"
                );
            }
            _ => {}
        }
    }
}

#[tokio::test]
async fn every_rtos_crash_names_its_fault_line_on_mps2_an385() {
    every_crash_names_its_fault_line(MPS2).await;
}

#[tokio::test]
async fn every_rtos_crash_names_its_fault_line_on_lm3s6965evb() {
    every_crash_names_its_fault_line(LM3S).await;
}

/// A minute of the scheduler under its 1 kHz tick writes a few hundred bytes of host lines (one
/// per board quirk), where `-d int` wrote some 150,000 lines a second; every status line is kept.
/// Three seconds stand for the minute here.
#[tokio::test]
async fn a_busy_scheduler_keeps_host_lines_small_and_every_uart_line() {
    for board in [MPS2, LM3S] {
        let dir = built_ok(board);
        let elf = dir.path().join(format!("rtos/build/{board}/ok/rtos.elf"));
        let (capture, log) = run(board, &elf, Duration::from_secs(10)).await;
        assert_eq!(capture.end, RunEnd::Timeout, "{board}: {log}");
        let host: usize = capture
            .lines
            .iter()
            .filter(|l| l.stream == Stream::Host)
            .map(|l| l.text.len() + 1)
            .sum();
        assert!(host < 200, "{board}: {host} bytes of host lines\n{log}");
        let status: Vec<&str> = uart(&capture)
            .into_iter()
            .filter(|l| l.starts_with("status: "))
            .collect();
        assert!(!status.is_empty(), "{board}: {log}");
        assert!(status.iter().all(|l| l.starts_with("status: OK ")), "{log}");
        assert!(!capture.truncated);
        // Where the core was at the timeout: a task or the idle loop, never a fault handler.
        let stopped = capture.stopped_at.as_ref().expect("where the core was");
        assert!(stopped.pc.is_some(), "{board}: {stopped:?}");
        assert!(capture.fault.is_none());
    }
}

fn built_ok(board: &str) -> tempfile::TempDir {
    built_with(board, "VARIANT=ok")
}

/// The `vtor_*` variants keep their vector table in RAM and make `null_call`'s call through a null
/// pointer from a task; the breakpoints taken from the image's table would miss the handler that
/// runs. `vtor_ram` copies the table, installs a fault handler of its own there and writes VTOR
/// before `main`, as RTOS kernels and bootloader-started applications do: fwfix follows the VTOR
/// write. `vtor_fill_after` writes VTOR while its RAM table is still all zeros and copies the
/// flash table into it afterwards; `vtor_set_vector` copies the table, writes VTOR, and in `main`
/// installs a HardFault handler of its own with one store (CMSIS' `NVIC_SetVector`): fwfix
/// follows the stores to the RAM table's fault vectors. Each crash is stopped at the entry of the
/// handler the RAM table names when the fault comes (`handler`, any of the names its address
/// has), and named at `events_post`'s line.
async fn a_ram_vector_table_is_followed(board: &str, variant: &str, handler: &[&str]) {
    let dir = built_with(board, &format!("VARIANT={variant}"));
    let elf = image(dir.path(), board, variant);
    let symbols = Symbolizer::open(&elf).unwrap();
    let (capture, log) = run(board, &elf, Duration::from_secs(10)).await;
    assert_eq!(
        capture.end,
        RunEnd::Crashed,
        "{board} {variant}: {log} {capture:?}"
    );
    let fault = capture.fault.as_ref().unwrap();
    let report = report_of(&capture, &elf);
    let what = format!(
        "{board} {variant}: {}\n{}\n{:?}\n{log}",
        report.summary, fault.raw, fault.notes
    );
    // Read at the entry of the RAM table's handler, not searched for at the timeout.
    assert!(
        log.contains("(read by fwfix at the handler's entry)"),
        "{what}"
    );
    let entry = fault
        .raw
        .lines()
        .find_map(|l| l.split_whitespace().find_map(|w| w.strip_prefix("r15=0x")))
        .and_then(|pc| u32::from_str_radix(pc, 16).ok())
        .expect("the PC at the handler's entry");
    let entered = symbols.locate(u64::from(entry)).function;
    assert!(
        entered.as_deref().is_some_and(|f| handler.contains(&f)),
        "entered {entered:?}: {what}"
    );
    let (file, line) = fault_line(dir.path(), "null_call");
    assert_eq!(report.function.as_deref(), Some("events_post"), "{what}");
    assert!(
        report.file.as_deref().is_some_and(|f| f.ends_with(&file)),
        "{what}"
    );
    assert_eq!(report.line, Some(line), "{what}");
    assert!(report.summary.contains("null function pointer"), "{what}");
    // The table's state when the fault came: every fault vector holds a handler.
    assert!(!fault.notes.iter().any(|n| n.contains("vector")), "{what}");
}

const DEFAULT_HANDLER: &[&str] = &["Default_Handler", "HardFault_Handler"];

#[tokio::test]
async fn a_vector_table_moved_to_ram_is_followed_on_mps2_an385() {
    a_ram_vector_table_is_followed(MPS2, "vtor_ram", &["RamFault_Handler"]).await;
}

#[tokio::test]
async fn a_vector_table_moved_to_ram_is_followed_on_lm3s6965evb() {
    a_ram_vector_table_is_followed(LM3S, "vtor_ram", &["RamFault_Handler"]).await;
}

#[tokio::test]
async fn a_ram_vector_table_filled_after_the_vtor_write_is_followed_on_mps2_an385() {
    a_ram_vector_table_is_followed(MPS2, "vtor_fill_after", DEFAULT_HANDLER).await;
}

#[tokio::test]
async fn a_ram_vector_table_filled_after_the_vtor_write_is_followed_on_lm3s6965evb() {
    a_ram_vector_table_is_followed(LM3S, "vtor_fill_after", DEFAULT_HANDLER).await;
}

#[tokio::test]
async fn a_hardfault_handler_installed_later_is_followed_on_mps2_an385() {
    a_ram_vector_table_is_followed(MPS2, "vtor_set_vector", &["RamFault_Handler"]).await;
}

#[tokio::test]
async fn a_hardfault_handler_installed_later_is_followed_on_lm3s6965evb() {
    a_ram_vector_table_is_followed(LM3S, "vtor_set_vector", &["RamFault_Handler"]).await;
}

/// The image built for mps2-an385 (4 MB of RAM, the stack from 0x20400000) run on lm3s6965evb (64
/// KB): the first push faults, the frame cannot be stacked, the core locks up. The crash report
/// says the image does not fit the machine, rather than leaving a frame nobody could read as the
/// only clue.
#[tokio::test]
async fn an_image_built_for_another_machine_is_named_as_such() {
    let dir = built_ok(MPS2);
    let elf = image(dir.path(), MPS2, "ok");
    let (capture, log) = run(LM3S, &elf, Duration::from_secs(10)).await;
    assert_eq!(capture.end, RunEnd::Crashed, "{log}");
    let report = report_of(&capture, &elf);
    assert!(
        report.summary.contains(
            "the image's initial stack pointer 0x20400000 (its vector table's first word) is \
             outside this machine's memory"
        ),
        "{}\n{log}",
        report.summary
    );
    assert!(report.function.is_none(), "{}", report.summary);
}

/// The `no_fault_handlers` variant makes `null_call`'s call through a null pointer with every
/// fault vector 0: the HardFault has no handler, and the core locks up (QEMU aborts) at the first
/// instruction it would run there. fwfix stops it at that instruction, where the frame is
/// stacked: the crash still names `events_post`'s line, and says that no handler ran and why.
async fn a_fault_with_no_handler_keeps_its_evidence(board: &str) {
    let dir = built_with(board, "VARIANT=no_fault_handlers");
    let elf = image(dir.path(), board, "no_fault_handlers");
    let (capture, log) = run(board, &elf, Duration::from_secs(10)).await;
    assert_eq!(capture.end, RunEnd::Crashed, "{board}: {log} {capture:?}");
    let fault = capture.fault.as_ref().unwrap();
    let report = report_of(&capture, &elf);
    let what = format!(
        "{board}: {}\n{}\n{:?}\n{log}",
        report.summary, fault.raw, fault.notes
    );
    let (file, line) = fault_line(dir.path(), "null_call");
    assert_eq!(report.function.as_deref(), Some("events_post"), "{what}");
    assert!(
        report.file.as_deref().is_some_and(|f| f.ends_with(&file)),
        "{what}"
    );
    assert_eq!(report.line, Some(line), "{what}");
    assert!(report.lockup, "{what}");
    assert!(
        fault.notes.iter().any(|n| n.starts_with(
            "no fault handler ran: the core was stopped at 0x00000000, where the HardFault vector \
             sends it"
        )),
        "{what}"
    );
    assert!(
        fault
            .notes
            .iter()
            .any(|n| n.contains("has no NMI, HardFault, MemManage, BusFault, UsageFault handler")),
        "{what}"
    );
}

#[tokio::test]
async fn a_fault_with_no_handler_keeps_its_evidence_on_mps2_an385() {
    a_fault_with_no_handler_keeps_its_evidence(MPS2).await;
}

#[tokio::test]
async fn a_fault_with_no_handler_keeps_its_evidence_on_lm3s6965evb() {
    a_fault_with_no_handler_keeps_its_evidence(LM3S).await;
}

/// `(address, name)` of every function symbol (FUNC) in the image, from arm-none-eabi-readelf,
/// without the Thumb bit.
fn elf_functions(elf: &Path) -> Vec<(u64, String)> {
    let out = Command::new("arm-none-eabi-readelf")
        .arg("-sW")
        .arg(elf)
        .output()
        .expect("arm-none-eabi-readelf runs (install gcc-arm-none-eabi)");
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| {
            // `Num: Value Size Type Bind Vis Ndx Name`
            let words: Vec<&str> = l.split_whitespace().collect();
            let (value, kind, name) = (words.get(1)?, words.get(3)?, words.get(7)?);
            let address = u64::from_str_radix(value, 16).ok()? & !1;
            (*kind == "FUNC").then(|| (address, (*name).to_string()))
        })
        .collect()
}

/// What binutils' addr2line calls the function at `address`.
fn binutils_function(elf: &Path, address: u64) -> String {
    let out = Command::new("arm-none-eabi-addr2line")
        .arg("-f")
        .arg("-e")
        .arg(elf)
        .arg(format!("{address:#x}"))
        .output()
        .expect("arm-none-eabi-addr2line runs (install gcc-arm-none-eabi)");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .next()
        .unwrap_or_default()
        .to_string()
}

/// `vector_jump` (a `-ffunction-sections -Wl,--gc-sections` build, like FreeRTOS's demos) calls a
/// hook left at 0x21: the core runs into its vector table and faults on the `udf` in a reserved
/// entry at 0x20. `sensor_calibrate` is never called, so the linker dropped its code, but its
/// DWARF stayed with addresses from 0, over the vector table and the first functions of `.text`.
/// The report must say PC is in `.isr_vector`, not code, name the call's line in `sensor_read`,
/// and never the dropped function; every live function must be named as itself.
async fn a_jump_into_the_vector_table_names_no_dropped_function(board: &str) {
    let dir = built_with(board, "VARIANT=vector_jump");
    let elf = image(dir.path(), board, "vector_jump");
    // The trap this test is about: the dropped function's DWARF covers 0x20.
    assert!(!elf_functions(&elf)
        .iter()
        .any(|(_, n)| n == "sensor_calibrate"));
    assert_eq!(binutils_function(&elf, 0x20), "sensor_calibrate");

    let (capture, log) = run(board, &elf, Duration::from_secs(10)).await;
    assert_eq!(capture.end, RunEnd::Crashed, "{board}: {log}");
    let fault = capture.fault.as_ref().unwrap();
    let report = report_of(&capture, &elf);
    let what = format!("{board}: {}\n{}", report.summary, fault.raw);
    assert_eq!(report.pc.as_deref(), Some("0x00000020"), "{what}");
    assert!(
        report
            .summary
            .contains("at 0x00000020 (in .isr_vector, not code)"),
        "{what}"
    );
    assert!(!report.summary.contains("sensor_calibrate"), "{what}");
    let (file, line) = fault_line(dir.path(), "vector_jump");
    assert_eq!(report.function.as_deref(), Some("sensor_read"), "{what}");
    assert!(
        report.file.as_deref().is_some_and(|f| f.ends_with(&file)),
        "{what}"
    );
    assert_eq!(report.line, Some(line), "{what}");
    let symbols = Symbolizer::open(&elf).unwrap();
    assert!(
        !fwfix::analysis::fault::site_functions(fault, &symbols)
            .contains(&"sensor_calibrate".to_string()),
        "{what}"
    );

    // Live code under the dropped function's range is named by the symbol table.
    let functions = elf_functions(&elf);
    for (address, name) in &functions {
        let at = symbols.locate(*address).function;
        let aliases: Vec<&str> = functions
            .iter()
            .filter(|(a, _)| a == address)
            .map(|(_, n)| n.as_str())
            .collect();
        assert!(
            at.as_deref().is_some_and(|f| aliases.contains(&f)),
            "{board}: {name} at {address:#x} named {at:?}"
        );
    }
}

#[tokio::test]
async fn a_jump_into_the_vector_table_names_no_dropped_function_on_mps2_an385() {
    a_jump_into_the_vector_table_names_no_dropped_function(MPS2).await;
}

#[tokio::test]
async fn a_jump_into_the_vector_table_names_no_dropped_function_on_lm3s6965evb() {
    a_jump_into_the_vector_table_names_no_dropped_function(LM3S).await;
}

/// `tail_call`: `sensor_read` calls `sensor_calibrated` with a `bl`, and that function's last act,
/// a call through a null hook, is compiled as `ldr r3, ...; bx r3`. The stacked LR is the return
/// into `sensor_read`, but the null call was made in `sensor_calibrated`: the report names it,
/// read from the `bl` before LR, and never says `sensor_read`'s line called the null pointer.
async fn a_tail_called_null_pointer_is_blamed_on_the_callee(board: &str) {
    let dir = built_with(board, "VARIANT=tail_call");
    let elf = image(dir.path(), board, "tail_call");
    let (capture, log) = run(board, &elf, Duration::from_secs(10)).await;
    assert_eq!(capture.end, RunEnd::Crashed, "{board}: {log}");
    let fault = capture.fault.as_ref().unwrap();
    let report = report_of(&capture, &elf);
    let what = format!("{board}: {}\n{}", report.summary, fault.raw);
    assert_eq!(report.pc.as_deref(), Some("0x00000000"), "{what}");
    let (file, line) = fault_line(dir.path(), "tail_call");
    assert_eq!(
        report.function.as_deref(),
        Some("sensor_calibrated"),
        "{what}"
    );
    assert!(
        report.file.as_deref().is_some_and(|f| f.ends_with(&file)),
        "{what}"
    );
    assert_eq!(report.line, Some(line), "{what}");
    assert!(
        report.summary.contains(&format!(
            "sensor_calibrated ({}:{line}) called a null function pointer, probably by a tail call",
            report.file.as_deref().unwrap()
        )),
        "{what}"
    );
    let caller = report.caller.as_ref().unwrap();
    assert_eq!(caller.function.as_deref(), Some("sensor_read"), "{what}");
    let caller_line = caller.line.unwrap();
    assert!(
        !report
            .summary
            .contains(&format!(":{caller_line}) called a null")),
        "{what}"
    );
}

#[tokio::test]
async fn a_tail_called_null_pointer_is_blamed_on_the_callee_on_mps2_an385() {
    a_tail_called_null_pointer_is_blamed_on_the_callee(MPS2).await;
}

#[tokio::test]
async fn a_tail_called_null_pointer_is_blamed_on_the_callee_on_lm3s6965evb() {
    a_tail_called_null_pointer_is_blamed_on_the_callee(LM3S).await;
}

/// The address of the `bl <callee>` instruction inside `function` of `elf`, from objdump.
fn call_in(elf: &Path, function: &str, callee: &str) -> u32 {
    let out = Command::new("arm-none-eabi-objdump")
        .arg("-d")
        .arg(format!("--disassemble={function}"))
        .arg(elf)
        .output()
        .expect("objdump runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.contains("\tbl\t") && l.ends_with(&format!("<{callee}>")))
        .unwrap_or_else(|| panic!("no bl <{callee}> in {function}:\n{text}"));
    let address = line.trim().split(':').next().unwrap();
    u32::from_str_radix(address, 16).unwrap()
}

/// A task function faults just after a call it made has returned: the stacked LR is that call's
/// return address, inside the faulting function, and names no caller (a task function has
/// none); the report says so instead of "called from" the place the call was made. LR right
/// after the `bl` that called the faulting function is its caller, as before.
#[test]
fn a_return_address_left_by_a_call_that_returned_names_no_caller() {
    let dir = built_with(MPS2, "all");
    let elf = image(dir.path(), MPS2, "ok");
    let symbols = Symbolizer::open(&elf).unwrap();
    let call = call_in(&elf, "producer_task", "queue_put");
    let snap = |pc: u32, lr: u32| fwfix::capture::FaultSnapshot {
        exception: Some(3),
        pc: Some(pc),
        lr: Some(lr),
        xpsr: Some(0x0100_0000),
        cfsr: Some(0x0000_8200),
        bfar: Some(0x6000_0100),
        ..Default::default()
    };
    // Faulting in producer_task after `bl queue_put` returned.
    let stale = crash_report(&snap(call + 4, (call + 4) | 1), Some(&symbols));
    assert_eq!(
        stale.function.as_deref(),
        Some("producer_task"),
        "{}",
        stale.summary
    );
    assert!(stale.caller.is_none(), "{:?}", stale.caller);
    assert!(
        stale
            .summary
            .contains("was left by a call this code made, which has returned: a leftover"),
        "{}",
        stale.summary
    );
    // Faulting inside queue_put, called from there: the caller is producer_task.
    let queue_put = call_in(&elf, "producer_task", "queue_put");
    let target = symbols.call_target(u64::from((queue_put + 4) | 1)).unwrap();
    let inside = crash_report(
        &snap(u32::try_from(target).unwrap() + 2, (queue_put + 4) | 1),
        Some(&symbols),
    );
    assert_eq!(
        inside.function.as_deref(),
        Some("queue_put"),
        "{}",
        inside.summary
    );
    assert_eq!(
        inside.caller.as_ref().and_then(|c| c.function.as_deref()),
        Some("producer_task"),
        "{}",
        inside.summary
    );
    assert!(
        inside.summary.contains("called from producer_task"),
        "{}",
        inside.summary
    );
}
