//! The QEMU backend against the real qemu-system-arm and real images: the fwtests fixture (built
//! with its Makefile) and a few tiny images compiled here for what the fixture does not do
//! (lockup, awkward console bytes). Every test fails loudly when QEMU or the cross compiler is
//! missing, and checks that no QEMU process is left behind.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers too should stop the test loudly on anything unexpected"
)]

use fwfix::capture::{Capture, EndDetector, RunEnd, Stream};
use fwfix::config::QemuSpec;
use fwfix::dut::qemu::QemuDut;
use fwfix::dut::{Dut, DutError, Image, RunSpec};
use fwfix::events::{Event, EventSink};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const MPS2: &str = "mps2-an385";
const LM3S: &str = "lm3s6965evb";

// ---------------------------------------------------------------------------------------------
// Helpers

use crate::common::dut::{compile_cortex_m3, fixture_image, uart, NeverFinal, Recorder, UnityEnd};
use crate::common::require_tools;

/// A tiny mps2-an385 image for what the fixture does not cover; `body` runs after the UART is
/// set up and may use `puts_`, `putc_`, `sexit`.
fn mini_image(dir: &Path, name: &str, handler: &str, body: &str) -> PathBuf {
    mini_image_with_vectors(dir, name, handler, body, "Fault_Handler")
}

/// [`mini_image`] with `fault_vector` in the NMI and fault entries of the vector table (`0` for
/// none, `Reset_Handler` for a fault that restarts the image).
fn mini_image_with_vectors(
    dir: &Path,
    name: &str,
    handler: &str,
    body: &str,
    fault_vector: &str,
) -> PathBuf {
    require_tools();
    let source = format!(
        r#"
#include <stdint.h>
#define REG(a) (*(volatile uint32_t *)(a))
static void putc_(char c) {{ while (REG(0x40004004u) & 1u) {{}} REG(0x40004000u) = (uint8_t)c; }}
static void puts_(const char *s) {{ while (*s) putc_(*s++); }}
static void sexit(int code) {{
    uint32_t block[2] = {{0x20026u, (uint32_t)code}};
    register uint32_t r0 __asm__("r0") = 0x20u;
    register void *r1 __asm__("r1") = block;
    __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    for (;;) {{}}
}}
void Reset_Handler(void);
__attribute__((used)) void Fault_Handler(void) {{ {handler} }}
extern uint32_t _estack;
__attribute__((section(".vectors"), used)) const void *vectors[8] = {{
    &_estack, Reset_Handler, {fault_vector}, {fault_vector},
    {fault_vector}, {fault_vector}, {fault_vector}, 0 }};
void Reset_Handler(void) {{
    REG(0x40004010u) = 16u;
    REG(0x40004008u) = 1u;
    {body}
    sexit(0);
}}
"#
    );
    let link = "MEMORY { FLASH (rx) : ORIGIN = 0x0, LENGTH = 256K  RAM (rwx) : ORIGIN = 0x20000000, LENGTH = 64K }
_estack = ORIGIN(RAM) + LENGTH(RAM);
SECTIONS { .text : { KEEP(*(.vectors)) *(.text*) *(.rodata*) } > FLASH
           .bss : { *(.bss*) *(COMMON) } > RAM }
";
    compile_cortex_m3(dir, name, &source, link)
}

fn qemu(machine: &str) -> QemuDut {
    QemuDut::new(
        format!("test-{machine}"),
        QemuSpec {
            binary: "qemu-system-arm".into(),
            machine: machine.into(),
            cpu: None,
            extra_args: vec![],
        },
    )
}

struct Attempt {
    dir: tempfile::TempDir,
    spec: RunSpec,
}

fn attempt(timeout: Duration, detector: Box<dyn EndDetector>) -> Attempt {
    let dir = tempfile::tempdir().unwrap();
    let spec = RunSpec {
        timeout,
        detector,
        console_log: dir.path().join("console.log"),
        append: None,
        nonce: None,
        cancel: CancellationToken::new(),
        attempt: 1,
        prepare_next: false,
    };
    Attempt { dir, spec }
}

fn console_log(a: &Path) -> String {
    std::fs::read_to_string(a.join("console.log")).unwrap()
}

/// Whether a process is gone (or a zombie, which runs nothing).
fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state == "Z" || state == "X"),
    }
}

/// The QEMU whose command line holds `marker` (passed with `-append`), waiting up to 10 s for it.
fn find_qemu_with(marker: &str) -> Option<u32> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            if String::from_utf8_lossy(&cmdline).contains(marker) {
                if let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() {
                    return Some(pid);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

fn assert_qemu_gone(dut: &QemuDut) {
    assert_pid_gone(dut.last_pid().expect("QEMU was started"));
}

fn assert_pid_gone(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(3);
    while !process_gone(pid) {
        assert!(
            Instant::now() < deadline,
            "QEMU (pid {pid}) is still running after the attempt"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

async fn run(
    dut: &mut QemuDut,
    elf: &Path,
    a: Attempt,
) -> (Result<Capture, DutError>, tempfile::TempDir, Recorder) {
    let events = Recorder::default();
    let image = Image {
        elf: elf.to_path_buf(),
    };
    let result = dut.run(&image, a.spec, &events).await;
    (result, a.dir, events)
}

// ---------------------------------------------------------------------------------------------
// Passing, failing

#[tokio::test]
async fn passing_image_ends_at_the_verdict_with_exit_code_zero() {
    let elf = fixture_image(MPS2, "math");
    let mut dut = qemu(MPS2);
    let (result, dir, events) = run(
        &mut dut,
        &elf,
        attempt(Duration::from_secs(20), Box::new(UnityEnd)),
    )
    .await;
    let capture = result.unwrap();
    assert_eq!(capture.end, RunEnd::Verdict);
    assert_eq!(capture.exit_code, Some(0), "{capture:?}");
    assert!(capture.fault.is_none() && capture.stopped_at.is_none());
    assert!(!capture.truncated);
    let lines = uart(&capture);
    assert!(
        lines.contains(&"tests/test_math.c:7:test_imath_clamp:PASS"),
        "{lines:?}"
    );
    assert_eq!(lines.last(), Some(&"OK"));
    // QEMU no longer logs every exception (`-d int`): semihosting calls leave no host line.
    assert!(!capture
        .lines
        .iter()
        .any(|l| l.stream == Stream::Host && l.text.starts_with("Taking exception")));

    let log = console_log(dir.path());
    assert!(
        log.contains("] uart  tests/test_math.c:7:test_imath_clamp:PASS"),
        "{log}"
    );
    assert_eq!(log.lines().count(), capture.lines.len());

    let events = events.events();
    assert!(matches!(
        events.first(),
        Some(Event::BootStarted { attempt: 1, .. })
    ));
    let console_events = events
        .iter()
        .filter(|e| matches!(e, Event::ConsoleLine { .. }))
        .count();
    assert_eq!(console_events, capture.lines.len());
    assert_qemu_gone(&dut);
}

#[tokio::test]
async fn passing_image_without_a_verdict_detector_exits_zero() {
    let elf = fixture_image(MPS2, "ringbuf");
    let mut dut = qemu(MPS2);
    let (result, _dir, _) = run(
        &mut dut,
        &elf,
        attempt(Duration::from_secs(20), Box::new(NeverFinal)),
    )
    .await;
    let capture = result.unwrap();
    assert_eq!(capture.end, RunEnd::Exited { code: 0 });
    assert_eq!(capture.exit_code, Some(0));
    assert_eq!(uart(&capture).last(), Some(&"OK"));
    assert_qemu_gone(&dut);
}

#[tokio::test]
async fn failing_image_exits_one() {
    let elf = fixture_image(MPS2, "crc");
    let mut dut = qemu(MPS2);
    let (result, _dir, _) = run(
        &mut dut,
        &elf,
        attempt(Duration::from_secs(20), Box::new(NeverFinal)),
    )
    .await;
    let capture = result.unwrap();
    assert_eq!(capture.end, RunEnd::Exited { code: 1 });
    assert!(uart(&capture)
        .iter()
        .any(|l| l.contains("test_crc16_known_vector:FAIL")));
    assert_qemu_gone(&dut);

    let (result, _dir, _) = run(
        &mut dut,
        &elf,
        attempt(Duration::from_secs(20), Box::new(UnityEnd)),
    )
    .await;
    let capture = result.unwrap();
    assert_eq!(capture.end, RunEnd::Verdict);
    assert_eq!(capture.exit_code, Some(1));
    assert_qemu_gone(&dut);
}

// ---------------------------------------------------------------------------------------------
// Crash, lockup, hang

fn assert_crash_reported_fast(capture: &Capture) {
    assert_eq!(capture.end, RunEnd::Crashed, "{capture:?}");
    let fault = capture.fault.as_ref().expect("a fault snapshot");
    // Stopped at the handler's first instruction, where EXC_RETURN is still in LR.
    assert!(
        fault
            .raw
            .starts_with("core stopped at the entry of HardFault"),
        "{}",
        fault.raw
    );
    assert!(fault.exc_return.is_some(), "{}", fault.raw);
    // No `-d int` exception log any more: the host lines are few.
    assert!(
        capture
            .lines
            .iter()
            .all(|l| l.stream != Stream::Host || !l.text.starts_with("Taking exception")),
        "{:?}",
        capture.lines
    );
}

#[tokio::test]
async fn crash_is_reported_within_a_second_with_the_fault_state() {
    let elf = fixture_image(MPS2, "sensor");
    let mut dut = qemu(MPS2);
    let started = Instant::now();
    let (result, dir, _) = run(
        &mut dut,
        &elf,
        attempt(Duration::from_secs(20), Box::new(UnityEnd)),
    )
    .await;
    let capture = result.unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_crash_reported_fast(&capture);
    let fault = capture.fault.as_ref().expect("a fault snapshot");
    assert_eq!(fault.exception, Some(3), "{}", fault.raw);
    // The driver called its erased 0xFFFFFFFF hook: PC is that address, LR the call site.
    assert_eq!(fault.pc, Some(0xffff_fffe), "{}", fault.raw);
    let lr = fault.lr.expect("stacked LR");
    assert!(
        lr > 0 && lr < 0x0040_0000,
        "LR {lr:#x} is not in flash\n{}",
        fault.raw
    );
    let cfsr = fault.cfsr.expect("CFSR");
    assert_ne!(cfsr & 1, 0, "IACCVIOL expected in CFSR {cfsr:#x}");
    assert!(fault.hfsr.is_some());
    assert!(!fault.lockup);
    // The frame was read exactly at the SP EXC_RETURN names.
    assert!(fault.raw.contains("frame at MSP="), "{}", fault.raw);
    assert!(uart(&capture)
        .iter()
        .any(|l| l.contains("test_sensor_applies_calibration:PASS")));
    let log = console_log(dir.path());
    assert!(
        log.contains("] host  HardFault at pc=0xfffffffe lr="),
        "{log}"
    );
    assert_qemu_gone(&dut);
}

#[tokio::test]
async fn lockup_is_a_crash_with_the_register_dump() {
    let dir = tempfile::tempdir().unwrap();
    // The fault handler itself jumps to a bad address: QEMU cannot escalate and aborts.
    let elf = mini_image(
        dir.path(),
        "lockup",
        "((void (*)(void))0xFFFFFFF0u)();",
        "puts_(\"going down\\n\"); ((void (*)(void))0xFFFFFFF0u)();",
    );
    let mut dut = qemu(MPS2);
    let (result, _log_dir, _) = run(
        &mut dut,
        &elf,
        attempt(Duration::from_secs(20), Box::new(NeverFinal)),
    )
    .await;
    let capture = result.unwrap();
    assert_eq!(capture.end, RunEnd::Crashed, "{capture:?}");
    let fault = capture.fault.expect("a fault snapshot");
    assert!(fault.lockup, "{}", fault.raw);
    assert!(fault.pc.is_some(), "{}", fault.raw);
    assert!(fault.cfsr.is_some_and(|c| c & 1 != 0), "{}", fault.raw);
    assert!(fault.raw.contains("Lockup"), "{}", fault.raw);
    assert!(capture.duration_ms < 3000);
    assert_qemu_gone(&dut);
}

#[tokio::test]
async fn hang_times_out_and_says_where_the_core_was() {
    let elf = fixture_image(MPS2, "event");
    let mut dut = qemu(MPS2);
    let started = Instant::now();
    let (result, dir, _) = run(
        &mut dut,
        &elf,
        attempt(Duration::from_secs(2), Box::new(UnityEnd)),
    )
    .await;
    let capture = result.unwrap();
    let took = started.elapsed();
    assert_eq!(capture.end, RunEnd::Timeout);
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(5),
        "took {took:?}"
    );
    let stopped = capture.stopped_at.as_ref().expect("where the core was");
    let pc = stopped.pc.expect("PC");
    assert!(pc < 0x0040_0000, "PC {pc:#x} is not in flash");
    assert!(stopped.sp.is_some() && stopped.xpsr.is_some());
    assert!(capture.fault.is_none());
    assert!(uart(&capture)
        .iter()
        .any(|l| l.contains("test_event_wait_returns_posted_event:PASS")));
    assert!(console_log(dir.path()).contains("test_event_wait_returns_posted_event"));
    assert_qemu_gone(&dut);
}

// ---------------------------------------------------------------------------------------------
// Cancellation, dropping, a runner killed from outside

#[tokio::test]
async fn cancellation_stops_qemu_at_once() {
    let elf = fixture_image(MPS2, "event");
    let mut dut = qemu(MPS2);
    let a = attempt(Duration::from_secs(30), Box::new(UnityEnd));
    let cancel = a.spec.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(400)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let (result, _dir, _) = run(&mut dut, &elf, a).await;
    let capture = result.unwrap();
    assert_eq!(capture.end, RunEnd::Cancelled);
    assert!(
        started.elapsed() < Duration::from_millis(2000),
        "took {:?}",
        started.elapsed()
    );
    assert_qemu_gone(&dut);
}

#[tokio::test]
async fn dropping_the_run_kills_qemu() {
    let elf = fixture_image(MPS2, "event");
    let mut dut = qemu(MPS2);
    let a = attempt(Duration::from_secs(30), Box::new(UnityEnd));
    let events = Recorder::default();
    let image = Image { elf };
    let dropped =
        tokio::time::timeout(Duration::from_millis(500), dut.run(&image, a.spec, &events)).await;
    assert!(dropped.is_err(), "the hang image should still be running");
    assert_qemu_gone(&dut);
    // What was captured before the drop is on disk.
    assert!(console_log(a.dir.path()).contains("test_event_starts_with_nothing_pending"));
}

/// Panics on the first console line, so the run unwinds out of the middle of a capture. At boot
/// it notes QEMU's pid (found by the `-append` marker) for the test to check afterwards.
struct PanickingSink {
    marker: String,
    pid: std::sync::Arc<Mutex<Option<u32>>>,
}

impl EventSink for PanickingSink {
    fn emit(&self, event: &Event) {
        match event {
            Event::BootStarted { .. } => {
                *self.pid.lock().unwrap() = find_qemu_with(&self.marker);
            }
            Event::ConsoleLine { text, .. } => panic!("event sink failed on {text:?}"),
            _ => {}
        }
    }
}

#[tokio::test]
async fn a_panic_mid_run_leaves_no_qemu() {
    let elf = fixture_image(MPS2, "event");
    let mut a = attempt(Duration::from_secs(30), Box::new(UnityEnd));
    let marker = format!("fwfix-test-panic-{}", std::process::id());
    a.spec.append = Some(marker.clone());
    let pid = std::sync::Arc::new(Mutex::new(None));
    let sink = PanickingSink {
        marker,
        pid: pid.clone(),
    };
    let task = tokio::spawn(async move {
        let mut dut = qemu(MPS2);
        let image = Image { elf };
        dut.run(&image, a.spec, &sink).await
    });
    let joined = task.await;
    assert!(joined.is_err_and(|e| e.is_panic()));
    let pid = pid.lock().unwrap().expect("QEMU was found at boot");
    assert_pid_gone(pid);
}

#[tokio::test]
async fn qemu_killed_from_outside_is_a_runner_failure() {
    let elf = fixture_image(MPS2, "event");
    let mut dut = qemu(MPS2);
    let mut a = attempt(Duration::from_secs(30), Box::new(UnityEnd));
    let marker = format!("fwfix-test-kill-{}", std::process::id());
    a.spec.append = Some(marker.clone());
    // Find this attempt's QEMU by its -append marker, then kill it as the OOM killer would.
    let killer = std::thread::spawn(move || {
        let pid = find_qemu_with(&marker)?;
        std::thread::sleep(Duration::from_millis(300));
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        )
        .ok()
    });
    let (result, _dir, _) = run(&mut dut, &elf, a).await;
    assert!(
        killer.join().unwrap().is_some(),
        "the test never found QEMU"
    );
    let capture = result.unwrap();
    assert_eq!(
        capture.end,
        RunEnd::RunnerDied {
            signal: Some(9),
            code: None
        }
    );
    assert_qemu_gone(&dut);
}

// ---------------------------------------------------------------------------------------------
// QEMU refusing to run

#[tokio::test]
async fn missing_binary_is_tool_missing() {
    let mut dut = QemuDut::new(
        "b",
        QemuSpec {
            binary: "qemu-system-arm-that-does-not-exist".into(),
            machine: MPS2.into(),
            cpu: None,
            extra_args: vec![],
        },
    );
    let err = dut.check().await.unwrap_err();
    assert!(matches!(err, DutError::ToolMissing { .. }), "{err}");
    let (result, _dir, _) = run(
        &mut dut,
        Path::new("x.elf"),
        attempt(Duration::from_secs(5), Box::new(NeverFinal)),
    )
    .await;
    let err = result.unwrap_err();
    assert!(matches!(err, DutError::ToolMissing { .. }), "{err}");

    let mut arm = qemu(MPS2);
    arm.check().await.unwrap();
    let hint = fwfix::dut::qemu::process::install_hint("qemu-system-arm");
    assert!(hint.contains("sudo apt-get install qemu-system-arm"));
}

#[tokio::test]
async fn bad_machine_is_bad_arguments_naming_the_machine() {
    let elf = fixture_image(MPS2, "math");
    let mut dut = qemu("no-such-board");
    let err = dut.check().await.unwrap_err();
    assert!(matches!(err, DutError::BadArguments { .. }), "{err}");
    assert!(err.to_string().contains("no-such-board"), "{err}");

    let (result, _dir, _) = run(
        &mut dut,
        &elf,
        attempt(Duration::from_secs(5), Box::new(UnityEnd)),
    )
    .await;
    let err = result.unwrap_err();
    assert!(matches!(err, DutError::BadArguments { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("-M no-such-board"), "{text}");
    assert!(text.contains("unsupported machine type"), "{text}");
    assert_qemu_gone(&dut);
}

#[tokio::test]
async fn bad_option_and_missing_kernel_say_which_argument() {
    let elf = fixture_image(MPS2, "math");
    let mut dut = QemuDut::new(
        "b",
        QemuSpec {
            binary: "qemu-system-arm".into(),
            machine: MPS2.into(),
            cpu: None,
            extra_args: vec!["-no-such-option".into()],
        },
    );
    let (result, _dir, _) = run(
        &mut dut,
        &elf,
        attempt(Duration::from_secs(5), Box::new(UnityEnd)),
    )
    .await;
    let err = result.unwrap_err();
    assert!(matches!(err, DutError::BadArguments { .. }), "{err}");
    assert!(err.to_string().contains("-no-such-option"), "{err}");

    let mut dut = qemu(MPS2);
    let (result, _dir, _) = run(
        &mut dut,
        Path::new("/nonexistent/fw.elf"),
        attempt(Duration::from_secs(5), Box::new(UnityEnd)),
    )
    .await;
    let err = result.unwrap_err();
    assert!(matches!(err, DutError::StartFailed { .. }), "{err}");
    assert!(err.to_string().contains("/nonexistent/fw.elf"), "{err}");
}

#[tokio::test]
async fn unknown_cpu_fails_the_check() {
    let mut dut = QemuDut::new(
        "b",
        QemuSpec {
            binary: "qemu-system-arm".into(),
            machine: MPS2.into(),
            cpu: Some("cortex-m99".into()),
            extra_args: vec![],
        },
    );
    let err = dut.check().await.unwrap_err();
    assert!(err.to_string().contains("cortex-m99"), "{err}");
}

/// A QEMU that never opens its gdbstub (here a stand-in that only sleeps: a real QEMU always opens
/// it) is an environment failure naming the gdbstub, not a hang of the firmware's.
#[tokio::test]
async fn a_qemu_whose_gdbstub_never_answers_is_a_start_failure_not_a_hang() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("qemu-system-arm");
    std::fs::write(&fake, "#!/bin/sh\nexec sleep 30\n").unwrap();
    let mut perms = std::fs::metadata(&fake).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&fake, perms).unwrap();
    let mut dut = QemuDut::new(
        "b",
        QemuSpec {
            binary: fake.to_string_lossy().into_owned(),
            machine: MPS2.into(),
            cpu: None,
            extra_args: vec![],
        },
    );
    let started = Instant::now();
    let (result, _log_dir, _) = run(
        &mut dut,
        &fixture_image(MPS2, "math"),
        attempt(Duration::from_secs(1), Box::new(UnityEnd)),
    )
    .await;
    let err = result.unwrap_err();
    assert!(matches!(err, DutError::StartFailed { .. }), "{err}");
    assert!(err.to_string().contains("gdbstub"), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    assert_qemu_gone(&dut);
}

#[tokio::test]
async fn a_gdbstub_in_extra_args_fails_the_check_and_the_run() {
    let mut dut = QemuDut::new(
        "b",
        QemuSpec {
            binary: "qemu-system-arm".into(),
            machine: MPS2.into(),
            cpu: None,
            extra_args: vec!["-s".into()],
        },
    );
    let err = dut.check().await.unwrap_err();
    assert!(matches!(err, DutError::BadArguments { .. }), "{err}");
    assert!(
        err.to_string().contains("-s in board b's extra_args"),
        "{err}"
    );
    let (result, _dir, _) = run(
        &mut dut,
        &fixture_image(MPS2, "math"),
        attempt(Duration::from_secs(5), Box::new(UnityEnd)),
    )
    .await;
    assert!(matches!(result, Err(DutError::BadArguments { .. })));
    assert_eq!(dut.last_pid(), None);
}

// ---------------------------------------------------------------------------------------------
// The other machine

#[tokio::test]
async fn lm3s6965evb_passes_fails_and_crashes() {
    let mut dut = qemu(LM3S);
    dut.check().await.unwrap();

    let (result, _dir, _) = run(
        &mut dut,
        &fixture_image(LM3S, "math"),
        attempt(Duration::from_secs(20), Box::new(UnityEnd)),
    )
    .await;
    let capture = result.unwrap();
    assert_eq!(capture.end, RunEnd::Verdict);
    assert_eq!(capture.exit_code, Some(0));
    assert_qemu_gone(&dut);

    let (result, _dir, _) = run(
        &mut dut,
        &fixture_image(LM3S, "crc"),
        attempt(Duration::from_secs(20), Box::new(NeverFinal)),
    )
    .await;
    assert_eq!(result.unwrap().end, RunEnd::Exited { code: 1 });
    assert_qemu_gone(&dut);

    let (result, _dir, _) = run(
        &mut dut,
        &fixture_image(LM3S, "sensor"),
        attempt(Duration::from_secs(20), Box::new(UnityEnd)),
    )
    .await;
    let capture = result.unwrap();
    assert_crash_reported_fast(&capture);
    let fault = capture.fault.expect("a fault snapshot");
    assert_eq!(fault.pc, Some(0xffff_fffe), "{}", fault.raw);
    assert!(fault.cfsr.is_some());
    let symbols = fwfix::analysis::Symbolizer::open(&fixture_image(LM3S, "sensor")).unwrap();
    let report = fwfix::analysis::crash_report(&fault, Some(&symbols));
    assert_eq!(
        report.function.as_deref(),
        Some("calibrate"),
        "{}",
        report.summary
    );
    assert!(
        report
            .file
            .as_deref()
            .is_some_and(|f| f.ends_with("src/sensor.c")),
        "{}",
        report.summary
    );
    assert_qemu_gone(&dut);
}

// ---------------------------------------------------------------------------------------------
// Console bytes

#[tokio::test]
async fn awkward_console_output_is_framed() {
    let dir = tempfile::tempdir().unwrap();
    let body = r#"
        register uint32_t op __asm__("r0") = 0x04u; /* SYS_WRITE0: to QEMU's stderr */
        register const char *text __asm__("r1") = "semihost hello\n";
        __asm__ volatile("bkpt 0xab" : "+r"(op) : "r"(text) : "memory");
        puts_("crlf line\r\n");
        puts_("bad \xff\xfe bytes\n");
        for (int i = 0; i < 10000; i++) putc_('x');
        puts_("\n");
        puts_("no newline at the end");
        sexit(7);
    "#;
    let elf = mini_image(dir.path(), "awkward", "for (;;) {}", body);
    let mut dut = qemu(MPS2);
    let (result, log_dir, _) = run(
        &mut dut,
        &elf,
        attempt(Duration::from_secs(20), Box::new(NeverFinal)),
    )
    .await;
    let capture = result.unwrap();
    assert_eq!(capture.end, RunEnd::Exited { code: 7 });
    let lines = uart(&capture);
    assert_eq!(lines[0], "crlf line");
    assert_eq!(lines[1], "bad \u{fffd}\u{fffd} bytes");
    let xs: Vec<&&str> = lines.iter().filter(|l| l.starts_with('x')).collect();
    assert_eq!(xs.len(), 3, "10000 bytes split at 4096");
    assert_eq!(xs.iter().map(|l| l.len()).sum::<usize>(), 10000);
    assert_eq!(lines.last(), Some(&"no newline at the end"));
    let log = console_log(log_dir.path());
    assert!(log.contains("uart  no newline at the end"), "{log}");
    // Semihosting text is the host's stream, never the UART's.
    assert!(log.contains("host  semihost hello"), "{log}");
    assert!(!lines.contains(&"semihost hello"));
    assert_qemu_gone(&dut);
}

/// The attempt ends at the gdbstub's report of the exit, not when QEMU has torn down and closed
/// its pipes: every byte written before the exit must still reach the capture, with the code.
#[tokio::test]
async fn the_last_lines_before_a_semihosting_exit_are_all_captured_with_the_code() {
    let dir = tempfile::tempdir().unwrap();
    // 3,000 numbered lines (more than a pipe holds) right before the exit, a semihosting line
    // on QEMU's stderr, and a last line without its newline.
    let body = r#"
        char line[] = "burst 0000\n";
        for (int i = 0; i < 3000; i++) {
            line[6] = (char)('0' + i / 1000);
            line[7] = (char)('0' + i / 100 % 10);
            line[8] = (char)('0' + i / 10 % 10);
            line[9] = (char)('0' + i % 10);
            puts_(line);
        }
        register uint32_t op __asm__("r0") = 0x04u; /* SYS_WRITE0: to QEMU's stderr */
        register const char *text __asm__("r1") = "semihost last words\n";
        __asm__ volatile("bkpt 0xab" : "+r"(op) : "r"(text) : "memory");
        puts_("the very last line, no newline");
        sexit(3);
    "#;
    let elf = mini_image(dir.path(), "last_words", "for (;;) {}", body);
    let mut dut = qemu(MPS2);
    for _ in 0..3 {
        let (result, log_dir, _) = run(
            &mut dut,
            &elf,
            attempt(Duration::from_secs(20), Box::new(NeverFinal)),
        )
        .await;
        let capture = result.unwrap();
        assert_eq!(capture.end, RunEnd::Exited { code: 3 }, "{capture:?}");
        assert_eq!(capture.exit_code, Some(3));
        let lines = uart(&capture);
        let expected: Vec<String> = (0..3000)
            .map(|i| format!("burst {i:04}"))
            .chain(["the very last line, no newline".to_string()])
            .collect();
        assert_eq!(lines, expected);
        assert!(capture
            .lines
            .iter()
            .any(|l| l.stream == Stream::Host && l.text == "semihost last words"));
        let log = console_log(log_dir.path());
        assert!(log.contains("uart  burst 2999\n"), "{log}");
        assert!(
            log.contains("uart  the very last line, no newline"),
            "{log}"
        );
        assert_qemu_gone(&dut);
    }
}

#[tokio::test]
async fn a_console_flood_still_times_out_and_stays_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let body = r#"
        for (unsigned n = 0;; n++) {
            char line[16] = "spam 0000000\n";
            unsigned v = n;
            for (int i = 11; i >= 5; i--) { line[i] = (char)('0' + v % 10); v /= 10; }
            puts_(line);
        }
    "#;
    let elf = mini_image(dir.path(), "flood", "for (;;) {}", body);
    let mut dut = qemu(MPS2);
    let started = Instant::now();
    let (result, log_dir, _) = run(
        &mut dut,
        &elf,
        attempt(Duration::from_secs(2), Box::new(NeverFinal)),
    )
    .await;
    let took = started.elapsed();
    let capture = result.unwrap();
    assert_eq!(capture.end, RunEnd::Timeout);
    assert!(took < Duration::from_secs(6), "took {took:?}");
    assert!(
        capture.lines.len() <= 40_000 + 64,
        "{} lines kept",
        capture.lines.len()
    );
    let logged = console_log(log_dir.path()).lines().count();
    assert!(logged >= capture.lines.len());
    assert_eq!(capture.truncated, logged > capture.lines.len());
    assert_qemu_gone(&dut);
}

#[tokio::test]
async fn a_frame_at_the_end_of_ram_is_read_whole_on_lm3s6965evb() {
    let dir = tempfile::tempdir().unwrap();
    // Called straight from the reset handler, whose stack starts at the end of RAM (0x20010000):
    // the frame's last word is RAM's last word, and nothing above it can be read.
    let elf = mini_image(
        dir.path(),
        "topofram",
        "for (;;) {}",
        "((void (*)(void))0)();",
    );
    let mut dut = qemu(LM3S);
    let (result, _log_dir, _) = run(
        &mut dut,
        &elf,
        attempt(Duration::from_secs(5), Box::new(NeverFinal)),
    )
    .await;
    let capture = result.unwrap();
    assert_crash_reported_fast(&capture);
    let fault = capture.fault.expect("a fault snapshot");
    assert_eq!(fault.pc, Some(0), "{}", fault.raw);
    let lr = fault.lr.expect("the stacked LR");
    assert!(lr > 0 && lr < 0x1000, "{}", fault.raw);
    let frame_top = fault.sp.expect("the caller's SP");
    assert!(
        frame_top > 0x2000_ff00 && frame_top <= 0x2001_0000,
        "{}",
        fault.raw
    );
    let symbols = fwfix::analysis::Symbolizer::open(&elf).unwrap();
    let report = fwfix::analysis::crash_report(&fault, Some(&symbols));
    assert_eq!(
        report.function.as_deref(),
        Some("Reset_Handler"),
        "{}",
        report.summary
    );
    assert!(
        report.summary.contains("called a null function pointer"),
        "{}",
        report.summary
    );
    assert_qemu_gone(&dut);
}

// ---------------------------------------------------------------------------------------------
// Bad input: no fault handlers, a stripped image, a console that is all host noise

#[tokio::test]
async fn a_vector_table_without_fault_handlers_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let body = "puts_(\"calling\\n\"); ((void (*)(void))0)();";
    let elf = mini_image_with_vectors(dir.path(), "nohandlers", "for (;;) {}", body, "0");
    let mut dut = qemu(MPS2);
    let (result, _log_dir, _) = run(
        &mut dut,
        &elf,
        attempt(Duration::from_secs(5), Box::new(NeverFinal)),
    )
    .await;
    let capture = result.unwrap();
    assert_eq!(capture.end, RunEnd::Crashed, "{capture:?}");
    let fault = capture.fault.expect("a fault snapshot");
    let notes = fault.notes.join("\n");
    assert!(
        notes.contains(
            "the vector table has no NMI, HardFault, MemManage, BusFault, UsageFault handler"
        ),
        "{notes}\n{}",
        fault.raw
    );
    // The core is stopped where the empty vector sends it (0), one instruction before the
    // lockup, with the frame stacked: the call is named from the frame, and the lockup said.
    let symbols = fwfix::analysis::Symbolizer::open(&elf).unwrap();
    let report = fwfix::analysis::crash_report(&fault, Some(&symbols));
    assert!(report.lockup, "{}", report.summary);
    assert!(
        report
            .summary
            .contains("Reset_Handler called a null function pointer"),
        "{}",
        report.summary
    );
    assert!(
        notes.contains("no fault handler ran: the core was stopped at 0x00000000"),
        "{notes}"
    );
    assert_qemu_gone(&dut);

    // A fault vector that points at the reset handler: the fault restarts the image, and is
    // still stopped at (the reset at boot runs in thread mode and is let through).
    let elf = mini_image_with_vectors(dir.path(), "resets", "for (;;) {}", body, "Reset_Handler");
    let (result, _log_dir, _) = run(
        &mut dut,
        &elf,
        attempt(Duration::from_secs(5), Box::new(NeverFinal)),
    )
    .await;
    let capture = result.unwrap();
    assert_eq!(capture.end, RunEnd::Crashed, "{capture:?}");
    assert_eq!(uart(&capture), vec!["calling"]);
    let fault = capture.fault.expect("a fault snapshot");
    assert_eq!(fault.pc, Some(0), "{}", fault.raw);
    assert_qemu_gone(&dut);
}

#[tokio::test]
async fn a_stripped_image_crashes_without_a_wrong_function() {
    let elf = fixture_image(MPS2, "sensor");
    let dir = tempfile::tempdir().unwrap();
    let stripped = dir.path().join("test_sensor.stripped.elf");
    let out = Command::new("arm-none-eabi-strip")
        .arg("-o")
        .arg(&stripped)
        .arg(&elf)
        .output()
        .expect("arm-none-eabi-strip runs");
    assert!(out.status.success());
    let mut dut = qemu(MPS2);
    let (result, _log_dir, _) = run(
        &mut dut,
        &stripped,
        attempt(Duration::from_secs(20), Box::new(UnityEnd)),
    )
    .await;
    let capture = result.unwrap();
    assert_crash_reported_fast(&capture);
    let fault = capture.fault.as_ref().unwrap();
    let symbols = fwfix::analysis::Symbolizer::open(&stripped).unwrap();
    let report = fwfix::analysis::crash_report(fault, Some(&symbols));
    assert_eq!(report.function, None, "{}", report.summary);
    assert_eq!(report.pc.as_deref(), Some("0xfffffffe"));
    assert!(
        report
            .summary
            .contains("test_sensor.stripped.elf has no symbols (stripped?)"),
        "{}",
        report.summary
    );
    assert_qemu_gone(&dut);
}

#[tokio::test]
async fn a_flood_of_guest_errors_keeps_every_uart_line_and_a_small_log() {
    let dir = tempfile::tempdir().unwrap();
    // Writes to a register the UART does not have: QEMU reports each one as a guest error.
    let body = r#"
        for (unsigned i = 0; i < 200000u; i++) {
            REG(0x40004100u) = i;
            if (i % 20000u == 0) puts_("still here\n");
        }
        puts_("DONE\n");
        sexit(0);
    "#;
    let elf = mini_image(dir.path(), "noisy", "for (;;) {}", body);
    let mut dut = qemu(MPS2);
    let (result, log_dir, _) = run(
        &mut dut,
        &elf,
        attempt(Duration::from_secs(30), Box::new(NeverFinal)),
    )
    .await;
    let capture = result.unwrap();
    assert_eq!(capture.end, RunEnd::Exited { code: 0 }, "{capture:?}");
    let lines = uart(&capture);
    assert_eq!(lines.iter().filter(|l| **l == "still here").count(), 10);
    assert_eq!(lines.last(), Some(&"DONE"));
    let log = console_log(log_dir.path());
    let host: Vec<&str> = log.lines().filter(|l| l.contains("] host  ")).collect();
    assert!(host.len() < 100, "{} host lines:\n{log}", host.len());
    assert!(
        host.iter().any(|l| l.contains("fwfix: left out ")),
        "the flood is counted, not silently dropped:\n{log}"
    );
    assert_qemu_gone(&dut);
}
