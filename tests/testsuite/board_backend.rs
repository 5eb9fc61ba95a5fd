//! The board backend against real tools, with QEMU standing in for the board: its gdbstub is the
//! GDB server (as OpenOCD or a J-Link would be), its UART goes to a TCP socket (as ser2net would
//! serve it) or to a real pty (as a USB serial adapter would appear), and a flash "command" talks
//! to QEMU's monitor the way a real flasher talks to a probe. The images are the fwtests fixture
//! built with arm-none-eabi-gcc, and one tiny image compiled here. Every test fails loudly when
//! qemu-system-arm, arm-none-eabi-gcc, gdb-multiarch, socat or make is missing, and checks that
//! no QEMU or gdb is left behind.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers too should stop the test loudly on anything unexpected"
)]

pub(crate) use crate::common::free_port;
use crate::common::{gone_soon, pids_in};
use fwfix::capture::{Capture, EndDetector, RunEnd, Stream};
use fwfix::config::parse_board;
use fwfix::dut::board::image;
use fwfix::dut::{self, Dut, DutError, Image, RunSpec};
use fwfix::events::Event;
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

// ---------------------------------------------------------------------------------------------
// Helpers

use crate::common::dut::{compile_cortex_m3, fixture_image, uart, NeverFinal, Recorder, UnityEnd};
use crate::common::require_tools;

/// A tiny mps2-an385 image: sets up UART0, prints `text`, then exits with `exit` through
/// semihosting, or spins forever when `exit` is None. Its vector table is in `.isr_vector`, away
/// from the entry point.
fn mini_image(dir: &Path, name: &str, text: &str, exit: Option<u32>) -> PathBuf {
    require_tools();
    let text = text
        .replace('\\', "\\\\")
        .replace('\n', "\\n")
        .replace('"', "\\\"");
    let ending = match exit {
        Some(code) => format!(
            "uint32_t block[2] = {{0x20026u, {code}u}};
    register uint32_t r0 __asm__(\"r0\") = 0x20u;
    register void *r1 __asm__(\"r1\") = block;
    __asm__ volatile(\"bkpt 0xab\" : \"+r\"(r0) : \"r\"(r1) : \"memory\");"
        ),
        None => String::new(),
    };
    let source = format!(
        r#"
#include <stdint.h>
#define REG(a) (*(volatile uint32_t *)(a))
static void putc_(char c) {{ while (REG(0x40004004u) & 1u) {{}} REG(0x40004000u) = (uint8_t)c; }}
static void puts_(const char *s) {{ while (*s) putc_(*s++); }}
void Reset_Handler(void);
void Fault_Handler(void) {{ for (;;) {{}} }}
extern uint32_t _estack;
__attribute__((section(".isr_vector"), used)) const void *vectors[8] = {{
    &_estack, Reset_Handler, Fault_Handler, Fault_Handler,
    Fault_Handler, Fault_Handler, Fault_Handler, 0 }};
void Reset_Handler(void) {{
    REG(0x40004010u) = 16u;
    REG(0x40004008u) = 1u;
    puts_("{text}");
    {ending}
    for (;;) {{}}
}}
"#
    );
    let link = "MEMORY { FLASH (rx) : ORIGIN = 0x0, LENGTH = 256K  RAM (rwx) : ORIGIN = 0x20000000, LENGTH = 64K }
_estack = ORIGIN(RAM) + LENGTH(RAM);
ENTRY(Reset_Handler)
SECTIONS { .isr_vector : { KEEP(*(.isr_vector)) } > FLASH
           .text : { *(.text*) *(.rodata*) } > FLASH
           .bss : { *(.bss*) *(COMMON) } > RAM }
";
    compile_cortex_m3(dir, name, &source, link)
}

fn exit42_image(dir: &Path) -> PathBuf {
    mini_image(dir, "exit42", "about to exit with 42\n", Some(42))
}

/// A Unity transcript that passes.
const UNITY_PASS: &str = "tests/t.c:3:test_one:PASS\ntests/t.c:9:test_two:PASS\n\n-----------------------\n2 Tests 0 Failures 0 Ignored \nOK\n";

pub(crate) fn wait_for_listener(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "nothing listens on port {port}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A QEMU started by a test, killed when dropped.
pub(crate) struct Qemu {
    child: Child,
}

impl Qemu {
    fn spawn(args: &[String]) -> Qemu {
        require_tools();
        let child = Command::new("qemu-system-arm")
            .args([
                "-M",
                "mps2-an385",
                "-display",
                "none",
                "-monitor",
                "none",
                "-semihosting-config",
                "enable=on,target=native",
            ])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("qemu-system-arm starts");
        Qemu { child }
    }

    /// Paused with its gdbstub on `gdb` and UART0 served on TCP port `uart`: a board behind
    /// OpenOCD with its console behind ser2net.
    pub(crate) fn board(gdb: u16, uart: u16) -> Qemu {
        let q = Qemu::spawn(&[
            "-S".into(),
            "-gdb".into(),
            format!("tcp:127.0.0.1:{gdb}"),
            "-serial".into(),
            format!("tcp:127.0.0.1:{uart},server=on,wait=off"),
        ]);
        wait_for_listener(gdb);
        q
    }
}

impl Drop for Qemu {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One attempt's directory, board file and run settings.
struct Bench {
    dir: tempfile::TempDir,
}

impl Bench {
    fn new() -> Bench {
        Bench {
            dir: tempfile::Builder::new()
                .prefix("fwfix-board-")
                .tempdir()
                .unwrap(),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn dut(&self, board_toml: &str) -> Box<dyn Dut> {
        let file = self.path().join("board.toml");
        std::fs::write(&file, board_toml).unwrap();
        let board = parse_board(board_toml, &file).unwrap_or_else(|e| panic!("{e}"));
        dut::open(&board).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Runs `elf` on a QEMU board reached through its gdbstub and a UART socket (the `gdb`
    /// flash method), with `gdb_keys` added to the board's `[gdb]` table.
    fn capture_on_gdb_board(
        &self,
        elf: &Path,
        gdb_keys: &str,
        timeout: Duration,
        detector: Box<dyn EndDetector>,
    ) -> Capture {
        let (gdb, uart_port) = (free_port(), free_port());
        let _qemu = Qemu::board(gdb, uart_port);
        let mut dut = self.dut(&gdb_board_with(gdb, uart_port, gdb_keys));
        run(
            dut.as_mut(),
            elf,
            self.spec(timeout, detector),
            &Recorder::default(),
        )
        .unwrap()
    }

    fn spec(&self, timeout: Duration, detector: Box<dyn EndDetector>) -> RunSpec {
        RunSpec {
            timeout,
            detector,
            console_log: self.path().join("console.log"),
            append: None,
            nonce: None,
            cancel: CancellationToken::new(),
            attempt: 1,
            prepare_next: false,
        }
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    /// No process (gdb, QEMU, a flash command) whose command line mentions this bench is left.
    fn assert_nothing_left(&self) {
        let needle = self.path().to_string_lossy().into_owned();
        let deadline = Instant::now() + Duration::from_secs(3);
        loop {
            let left = processes_mentioning(&needle);
            if left.is_empty() {
                return;
            }
            assert!(Instant::now() < deadline, "left running: {left:#?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

pub(crate) fn processes_mentioning(needle: &str) -> Vec<String> {
    let me = std::process::id().to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if entry.file_name().to_string_lossy() == me {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let zombie = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|s| s == "Z" || s == "X");
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if !zombie && cmdline.contains(needle) {
            found.push(cmdline);
        }
    }
    found
}

fn gdb_board(gdb: u16, uart: u16) -> String {
    gdb_board_with(gdb, uart, "")
}

/// A gdb board with more `[gdb]` keys.
fn gdb_board_with(gdb: u16, uart: u16, gdb_keys: &str) -> String {
    format!(
        "name = \"bench\"\nbackend = \"board\"\n[flash]\nmethod = \"gdb\"\ntimeout_s = 30\n\
         [gdb]\nremote = \"127.0.0.1:{gdb}\"\n{gdb_keys}\n\
         [serial]\nport = \"socket://127.0.0.1:{uart}\"\n"
    )
}

fn run(
    dut: &mut dyn Dut,
    elf: &Path,
    spec: RunSpec,
    events: &Recorder,
) -> Result<Capture, DutError> {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(dut.run(
        &Image {
            elf: elf.to_path_buf(),
        },
        spec,
        events,
    ))
}

/// A console server like ser2net, scripted: the nth connection gets the nth list of lines (later
/// ones get none), then is held open for `hold` and closed. Returns the port and a handle that
/// says how many scripted sessions were served.
fn console_server(
    sessions: Vec<Vec<&'static str>>,
    hold: Duration,
) -> (u16, std::thread::JoinHandle<usize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let handle = std::thread::spawn(move || {
        let scripted = sessions.len();
        let mut sessions = sessions.into_iter();
        let mut served = 0;
        while served < scripted {
            let Ok((mut stream, _)) = listener.accept() else {
                break;
            };
            let lines = sessions.next().unwrap_or_default();
            served += 1;
            let last = served == scripted;
            let session = std::thread::spawn(move || {
                for line in lines {
                    if stream.write_all(format!("{line}\r\n").as_bytes()).is_err() {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                std::thread::sleep(hold);
            });
            if !last || hold.is_zero() {
                session.join().unwrap();
            }
        }
        // Later connections (retries of a failed attempt) are held open and say nothing.
        listener.set_nonblocking(false).unwrap();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                std::thread::spawn(move || {
                    std::thread::sleep(hold);
                    drop(stream);
                });
            }
        });
        served
    });
    (port, handle)
}

/// Long enough for any attempt a test makes: the console stays up until fwfix closes it.
const HOLD: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------------------------------------
// (a) gdb method against QEMU's gdbstub, console on a TCP socket

#[test]
fn gdb_method_passing_image_reaches_the_verdict_with_its_exit_code() {
    let elf = fixture_image("mps2-an385", "math");
    let bench = Bench::new();
    let (gdb, uart_port) = (free_port(), free_port());
    let qemu = Qemu::board(gdb, uart_port);
    let mut dut = bench.dut(&gdb_board(gdb, uart_port));
    let events = Recorder::default();
    let started = Instant::now();
    let capture = run(
        dut.as_mut(),
        &elf,
        bench.spec(Duration::from_secs(20), Box::new(UnityEnd)),
        &events,
    )
    .unwrap();
    assert_eq!(capture.end, RunEnd::Verdict, "{capture:#?}");
    assert_eq!(capture.exit_code, Some(0), "{capture:#?}");
    assert_eq!(uart(&capture).last(), Some(&"OK"));
    assert!(started.elapsed() < Duration::from_secs(15));

    let console = bench.read("console.log");
    assert!(console.contains("] uart  OK"), "{console}");
    let flash = bench.read("flash.log");
    assert!(flash.contains("Loading section"), "{flash}");
    assert!(flash.contains("vector table at 0x00000000"), "{flash}");
    assert!(bench.path().join("flash.gdb").is_file());

    let events = events.events();
    let progress = events
        .iter()
        .filter(|e| matches!(e, Event::FlashProgress { .. }))
        .count();
    assert!(progress > 0, "no flash progress events: {events:#?}");
    let boot = events
        .iter()
        .position(|e| matches!(e, Event::BootStarted { .. }))
        .expect("a BootStarted event");
    let first_line = events
        .iter()
        .position(|e| {
            matches!(
                e,
                Event::ConsoleLine {
                    stream: Stream::Uart,
                    ..
                }
            )
        })
        .expect("console lines");
    assert!(
        boot < first_line,
        "the image printed before it was started?"
    );
    drop(qemu);
    bench.assert_nothing_left();
}

#[test]
fn gdb_method_failing_image_reports_the_failing_case() {
    let elf = fixture_image("mps2-an385", "crc");
    let bench = Bench::new();
    let capture = bench.capture_on_gdb_board(&elf, "", Duration::from_secs(20), Box::new(UnityEnd));
    assert_eq!(capture.end, RunEnd::Verdict);
    assert_eq!(capture.exit_code, Some(1), "one failure: {capture:#?}");
    let lines = uart(&capture);
    assert!(
        lines.contains(
            &"tests/test_crc.c:23:test_crc16_known_vector:FAIL: Expected 0x29B1 Was 0x31C3"
        ),
        "{lines:#?}"
    );
    assert_eq!(lines.last(), Some(&"FAIL"));
    bench.assert_nothing_left();
}

#[test]
fn gdb_method_keeps_an_exit_code_that_is_not_a_failure_count() {
    let bench = Bench::new();
    let elf = exit42_image(bench.path());
    let capture =
        bench.capture_on_gdb_board(&elf, "", Duration::from_secs(20), Box::new(NeverFinal));
    assert_eq!(capture.end, RunEnd::Exited { code: 42 }, "{capture:#?}");
    assert_eq!(capture.exit_code, Some(42));
    assert_eq!(uart(&capture), vec!["about to exit with 42"]);
    // The vector table is in its own section here, away from the entry point.
    assert!(bench.read("flash.log").contains("section .isr_vector"));
    bench.assert_nothing_left();
}

// QEMU's gdbstub passes `monitor` commands to its human monitor, whose `system_reset` is the
// reset-and-halt OpenOCD's `monitor reset halt` is on a real probe: QEMU stays stopped under gdb.
#[test]
fn gdb_method_starts_the_image_by_a_monitor_reset() {
    let bench = Bench::new();
    let elf = exit42_image(bench.path());
    let capture = bench.capture_on_gdb_board(
        &elf,
        "start = \"monitor-reset\"\nreset = \"monitor system_reset\"",
        Duration::from_secs(20),
        Box::new(NeverFinal),
    );
    // QEMU starts with nothing loaded, so its PC and SP are 0: only the reset after `load`
    // brings the core to the image's reset handler.
    assert_eq!(capture.end, RunEnd::Exited { code: 42 }, "{capture:#?}");
    assert_eq!(uart(&capture), vec!["about to exit with 42"]);
    let script = bench.read("flash.gdb");
    assert!(!script.contains("set $pc"), "{script}");
    let load = script.find("load\n").unwrap();
    let reset = script.find("monitor system_reset\n").unwrap();
    assert!(load < reset, "{script}");
    let flash = bench.read("flash.log");
    assert!(
        flash.contains("started by `monitor system_reset` after load"),
        "{flash}"
    );
    bench.assert_nothing_left();
}

#[test]
fn gdb_method_reads_a_spinning_hardfault_at_the_timeout() {
    let elf = fixture_image("mps2-an385", "sensor");
    let bench = Bench::new();
    let capture = bench.capture_on_gdb_board(&elf, "", Duration::from_secs(2), Box::new(UnityEnd));
    assert_eq!(capture.end, RunEnd::Crashed, "{capture:#?}");
    let fault = capture.fault.as_ref().expect("a fault snapshot");
    assert_eq!(fault.exception, Some(3), "{}", fault.raw);
    // The call through the erased calibration page's 0xFFFFFFFF hook.
    assert_eq!(fault.pc, Some(0xffff_fffe), "{}", fault.raw);
    assert!(
        fault.lr.is_some_and(|lr| lr & 1 == 1 && lr < 0x1000),
        "{}",
        fault.raw
    );
    assert_eq!(fault.cfsr, Some(1), "IACCVIOL: {}", fault.raw);
    assert_eq!(fault.hfsr, Some(0x4000_0000), "FORCED: {}", fault.raw);
    assert!(
        fault.raw.contains("core stopped in HardFault"),
        "{}",
        fault.raw
    );
    assert_eq!(uart(&capture).len(), 2, "two tests passed before the crash");
    bench.assert_nothing_left();
}

#[test]
fn gdb_method_locates_a_hang_at_the_timeout() {
    let elf = fixture_image("mps2-an385", "event");
    let bench = Bench::new();
    let (gdb, uart_port) = (free_port(), free_port());
    let _qemu = Qemu::board(gdb, uart_port);
    let mut dut = bench.dut(&gdb_board(gdb, uart_port));
    let started = Instant::now();
    let capture = run(
        dut.as_mut(),
        &elf,
        bench.spec(Duration::from_secs(2), Box::new(UnityEnd)),
        &Recorder::default(),
    )
    .unwrap();
    assert_eq!(capture.end, RunEnd::Timeout, "{capture:#?}");
    assert!(capture.fault.is_none());
    let at = capture.stopped_at.as_ref().expect("where the core was");
    assert_eq!(at.exception, Some(0), "thread mode: {}", at.raw);
    assert!(at.pc.is_some_and(|pc| pc > 0 && pc < 0x1000), "{}", at.raw);
    assert_eq!(
        uart(&capture).len(),
        3,
        "three tests passed before the hang"
    );
    assert!(started.elapsed() < Duration::from_secs(15));
    bench.assert_nothing_left();
}

// ---------------------------------------------------------------------------------------------
// (b) console on a real pty, image started by a flash command talking QMP

/// Asks QMP for the pty QEMU gave `s0`.
fn pty_of(qmp: &Path) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    let stream = loop {
        match UnixStream::connect(qmp) {
            Ok(s) => break s,
            Err(e) => {
                assert!(Instant::now() < deadline, "no QMP socket: {e}");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    };
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap(); // greeting
    writer
        .write_all(b"{\"execute\":\"qmp_capabilities\"}\n{\"execute\":\"query-chardev\"}\n")
        .unwrap();
    loop {
        line.clear();
        assert!(reader.read_line(&mut line).unwrap() > 0, "QMP closed");
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        if let Some(list) = v["return"].as_array() {
            if let Some(s0) = list.iter().find(|c| c["label"] == "s0") {
                let name = s0["filename"].as_str().unwrap();
                return name.strip_prefix("pty:").unwrap().to_string();
            }
        }
    }
}

#[test]
fn console_on_a_real_pty_with_the_image_started_over_qmp() {
    pty_console_reaches_the_verdict(|_, pty| pty.to_string());
}

/// A USB adapter's stable name is a `/dev/serial/by-id/` link to its `/dev/ttyACMn`: a link in a
/// temp dir to the pty stands in for it.
#[test]
fn console_through_a_by_id_style_link_to_a_real_pty() {
    pty_console_reaches_the_verdict(|bench, pty| {
        let link = bench.path().join("usb-QEMU_UART0_0001-if00");
        std::os::unix::fs::symlink(pty, &link).unwrap();
        link.display().to_string()
    });
}

/// The spinning Unity image on QEMU with UART0 on a real pty, started by a flash command over
/// QMP, its console opened at `port_for(bench, pty)`; the attempt must reach the verdict.
fn pty_console_reaches_the_verdict(port_for: impl FnOnce(&Bench, &str) -> String) {
    let bench = Bench::new();
    // An image that spins after its verdict: a pty loses what its reader has not read yet when
    // QEMU exits and closes it, which a board's USB adapter never does.
    let elf = mini_image(bench.path(), "spin", UNITY_PASS, None);
    let qmp = bench.path().join("qmp.sock");
    let qemu = Qemu::spawn(&[
        "-S".into(),
        "-kernel".into(),
        elf.display().to_string(),
        "-qmp".into(),
        format!("unix:{},server=on,wait=off", qmp.display()),
        "-chardev".into(),
        "pty,id=s0".into(),
        "-serial".into(),
        "chardev:s0".into(),
    ]);
    let pty = pty_of(&qmp);
    assert!(pty.starts_with("/dev/pts/"), "{pty}");
    let port = port_for(&bench, &pty);
    // The "flasher": QEMU already has the image; starting it is what is left.
    let cont = format!(
        "printf '{{\"execute\":\"qmp_capabilities\"}}\\n{{\"execute\":\"cont\"}}\\n' | socat -t 1 - UNIX-CONNECT:{}",
        qmp.display()
    );
    let mut dut = bench.dut(&format!(
        "name = \"bench\"\nbackend = \"board\"\n[flash]\nmethod = \"command\"\ncommand = \"{}\"\n\
         [serial]\nport = \"{port}\"\nbaud = 115200\n",
        cont.replace('\\', "\\\\").replace('"', "\\\"")
    ));
    let capture = run(
        dut.as_mut(),
        &elf,
        bench.spec(Duration::from_secs(20), Box::new(UnityEnd)),
        &Recorder::default(),
    )
    .unwrap();
    assert_eq!(capture.end, RunEnd::Verdict, "{capture:#?}");
    let lines = uart(&capture);
    assert_eq!(lines.last(), Some(&"OK"), "{lines:#?}");
    assert_eq!(
        lines.first(),
        Some(&"tests/t.c:3:test_one:PASS"),
        "{lines:#?}"
    );
    assert!(bench.read("flash.log").contains("socat"));
    drop(qemu);
    bench.assert_nothing_left();
}

// ---------------------------------------------------------------------------------------------
// (c) command method: placeholders, .bin and .hex

#[test]
fn command_method_expands_elf_bin_and_hex_and_makes_the_files() {
    let elf = fixture_image("mps2-an385", "math");
    let bench = Bench::new();
    let record = bench.path().join("args.txt");
    let flashed = bench.path().join("flashed");
    let script = bench.path().join("flasher.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nfor a in \"$@\"; do echo \"$a\"; done > '{}'\n\
             echo 'Erasing sector 0'\necho 'Programming 100%'\ntouch '{}'\n",
            record.display(),
            flashed.display()
        ),
    )
    .unwrap();
    // The console server waits for the flasher before the "board" prints: the console was
    // opened before flashing, so nothing is lost.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let flag = flashed.clone();
    let server = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while !flag.exists() {
            assert!(Instant::now() < deadline, "the flasher never ran");
            std::thread::sleep(Duration::from_millis(10));
        }
        stream
            .write_all(b"t.c:1:test_a:PASS\r\n\r\n-----------------------\r\n1 Tests 0 Failures 0 Ignored \r\nOK\r\n")
            .unwrap();
        std::thread::sleep(Duration::from_secs(2));
    });
    let mut dut = bench.dut(&format!(
        "name = \"bench\"\nbackend = \"board\"\n[flash]\nmethod = \"command\"\n\
         command = \"sh {} --elf {{elf}} --bin {{bin}} --hex {{hex}}\"\n\
         [serial]\nport = \"socket://127.0.0.1:{port}\"\n",
        script.display()
    ));
    let events = Recorder::default();
    let capture = run(
        dut.as_mut(),
        &elf,
        bench.spec(Duration::from_secs(20), Box::new(UnityEnd)),
        &events,
    )
    .unwrap();
    server.join().unwrap();
    assert_eq!(capture.end, RunEnd::Verdict, "{capture:#?}");
    assert_eq!(capture.exit_code, None, "no debugger, no exit code");

    let args = std::fs::read_to_string(&record).unwrap();
    let args: Vec<&str> = args.lines().collect();
    assert_eq!(args[0], "--elf");
    assert_eq!(Path::new(args[1]), std::path::absolute(&elf).unwrap());
    assert_eq!(args[2], "--bin");
    assert_eq!(args[4], "--hex");
    let (bin, hex) = (Path::new(args[3]), Path::new(args[5]));
    assert_eq!(bin, bench.path().join("image.bin"));
    assert_eq!(hex, bench.path().join("image.hex"));
    // Made by objcopy: the same bytes fwfix would write itself.
    let bytes = std::fs::read(&elf).unwrap();
    let segments = image::segments(&bytes).unwrap();
    assert_eq!(
        std::fs::read(bin).unwrap(),
        image::flat_binary(&segments).unwrap()
    );
    assert!(std::fs::read_to_string(hex).unwrap().starts_with(':'));

    let flash = bench.read("flash.log");
    assert!(flash.contains("Erasing sector 0"), "{flash}");
    let phases: Vec<(String, Option<u8>)> = events
        .events()
        .into_iter()
        .filter_map(|e| match e {
            Event::FlashProgress { phase, percent, .. } => Some((phase, percent)),
            _ => None,
        })
        .collect();
    assert!(phases.contains(&("erase".into(), None)), "{phases:?}");
    assert!(
        phases.contains(&("program".into(), Some(100))),
        "{phases:?}"
    );
    bench.assert_nothing_left();
}

#[test]
fn fwfix_writes_the_same_bin_and_hex_as_objcopy() {
    require_tools();
    let bench = Bench::new();
    for elf in [
        fixture_image("mps2-an385", "crc"),
        exit42_image(bench.path()),
    ] {
        let bytes = std::fs::read(&elf).unwrap();
        let segments = image::segments(&bytes).unwrap();
        let objcopy_bin = bench.path().join("objcopy.bin");
        let status = Command::new("arm-none-eabi-objcopy")
            .args(["-O", "binary"])
            .arg(&elf)
            .arg(&objcopy_bin)
            .status()
            .unwrap();
        assert!(status.success());
        let ours = image::flat_binary(&segments).unwrap();
        assert_eq!(
            std::fs::read(&objcopy_bin).unwrap(),
            ours,
            "{}",
            elf.display()
        );
        // Our hex, read back by objcopy, is the same image.
        let hex = bench.path().join("ours.hex");
        std::fs::write(
            &hex,
            image::intel_hex(&segments, image::entry_point(&bytes)),
        )
        .unwrap();
        let back = bench.path().join("back.bin");
        let out = Command::new("arm-none-eabi-objcopy")
            .args(["-I", "ihex", "-O", "binary"])
            .arg(&hex)
            .arg(&back)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(std::fs::read(&back).unwrap(), ours, "{}", elf.display());
    }
}

// ---------------------------------------------------------------------------------------------
// (d) a port that vanishes mid-run

fn command_board(port: u16, extra_serial: &str) -> String {
    format!(
        "name = \"bench\"\nbackend = \"board\"\n[flash]\nmethod = \"command\"\ncommand = \"true\"\n\
         [serial]\nport = \"socket://127.0.0.1:{port}\"\n{extra_serial}"
    )
}

#[test]
fn a_port_that_vanishes_mid_run_ends_as_port_lost_with_the_console_kept() {
    let elf = fixture_image("mps2-an385", "math");
    let bench = Bench::new();
    let (port, server) = console_server(
        vec![vec![
            "t.c:1:test_a:PASS",
            "t.c:2:test_b:PASS",
            "t.c:3:test_c:PA",
        ]],
        Duration::ZERO,
    );
    let mut dut = bench.dut(&command_board(port, ""));
    let events = Recorder::default();
    let started = Instant::now();
    let capture = run(
        dut.as_mut(),
        &elf,
        bench.spec(Duration::from_secs(30), Box::new(UnityEnd)),
        &events,
    )
    .unwrap();
    assert_eq!(server.join().unwrap(), 1);
    assert_eq!(capture.end, RunEnd::PortLost, "{capture:#?}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "not at the timeout"
    );
    assert_eq!(
        uart(&capture),
        vec!["t.c:1:test_a:PASS", "t.c:2:test_b:PASS", "t.c:3:test_c:PA"]
    );
    let console = bench.read("console.log");
    assert!(console.contains("uart  t.c:3:test_c:PA"), "{console}");
    assert!(console.contains("closed (end of stream)"), "{console}");
    assert!(events
        .events()
        .iter()
        .any(|e| matches!(e, Event::Message { text, .. } if text.contains("closed"))));
}

#[test]
fn a_port_that_comes_back_within_the_reconnect_budget_finishes_the_run() {
    let elf = fixture_image("mps2-an385", "math");
    let bench = Bench::new();
    let (port, server) = console_server(
        vec![
            vec!["t.c:1:test_a:PASS"],
            vec![
                "t.c:2:test_b:PASS",
                "",
                "-----------------------",
                "2 Tests 0 Failures 0 Ignored ",
                "OK",
            ],
        ],
        Duration::ZERO,
    );
    let mut dut = bench.dut(&command_board(port, "reconnect = 1\n"));
    let capture = run(
        dut.as_mut(),
        &elf,
        bench.spec(Duration::from_secs(30), Box::new(UnityEnd)),
        &Recorder::default(),
    )
    .unwrap();
    assert_eq!(server.join().unwrap(), 2);
    assert_eq!(capture.end, RunEnd::Verdict, "{capture:#?}");
    let uart = uart(&capture);
    assert_eq!(uart.first(), Some(&"t.c:1:test_a:PASS"));
    assert_eq!(uart.last(), Some(&"OK"));
    let console = bench.read("console.log");
    assert!(console.contains("open again (reconnect 1)"), "{console}");
}

// ---------------------------------------------------------------------------------------------
// (e) flash failures

#[test]
fn gdb_server_that_is_not_there_is_a_flash_failure_with_gdbs_words() {
    let elf = fixture_image("mps2-an385", "math");
    let bench = Bench::new();
    let (port, _server) = console_server(vec![vec![]], HOLD);
    let mut dut = bench.dut(&gdb_board(free_port(), port));
    let err = run(
        dut.as_mut(),
        &elf,
        bench.spec(Duration::from_secs(10), Box::new(UnityEnd)),
        &Recorder::default(),
    )
    .unwrap_err();
    let DutError::Flash {
        ref method,
        ref log,
        ..
    } = err
    else {
        panic!("not a flash error: {err}");
    };
    assert_eq!(method, "gdb");
    assert!(log.contains("Connection refused"), "{log}");
    assert!(err.to_string().contains("Connection refused"), "{err}");
    assert!(bench.read("flash.log").contains("Connection refused"));
    bench.assert_nothing_left();
}

#[test]
fn flash_command_exiting_1_is_a_flash_failure_with_its_output() {
    let elf = fixture_image("mps2-an385", "math");
    let bench = Bench::new();
    let (port, _server) = console_server(vec![vec![]], HOLD);
    let mut dut = bench.dut(&format!(
        "name = \"bench\"\nbackend = \"board\"\n[flash]\nmethod = \"command\"\n\
         command = \"echo 'Error: no ST-Link found' >&2; exit 1\"\n\
         [serial]\nport = \"socket://127.0.0.1:{port}\"\n"
    ));
    let err = run(
        dut.as_mut(),
        &elf,
        bench.spec(Duration::from_secs(10), Box::new(UnityEnd)),
        &Recorder::default(),
    )
    .unwrap_err();
    assert!(
        matches!(&err, DutError::Flash { method, log, .. } if method == "command" && log.contains("no ST-Link found")),
        "{err:?}"
    );
    assert!(err.to_string().contains("exit status: 1"), "{err}");
}

#[test]
fn flash_command_overrunning_its_timeout_is_killed_and_a_flash_failure() {
    let elf = fixture_image("mps2-an385", "math");
    let bench = Bench::new();
    let (port, _server) = console_server(vec![vec![]], HOLD);
    let marker = bench.path().join("slow-flasher");
    let mut dut = bench.dut(&format!(
        "name = \"bench\"\nbackend = \"board\"\n[flash]\nmethod = \"command\"\n\
         command = \"echo {} >/dev/null; sleep 30\"\ntimeout_s = 0.5\n\
         [serial]\nport = \"socket://127.0.0.1:{port}\"\n",
        marker.display()
    ));
    let started = Instant::now();
    let err = run(
        dut.as_mut(),
        &elf,
        bench.spec(Duration::from_secs(10), Box::new(UnityEnd)),
        &Recorder::default(),
    )
    .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(
        err.to_string().contains("did not finish within 0.5 s"),
        "{err}"
    );
    bench.assert_nothing_left();
}

/// Regression: a flash command that left a process in the background (a probe server, holding
/// its output pipes) could be waited on until its timeout; it ends when the command exits and
/// what it left is killed.
#[test]
fn a_flash_command_that_leaves_a_process_running_ends_when_it_exits() {
    let elf = fixture_image("mps2-an385", "math");
    let bench = Bench::new();
    let (port, _server) = console_server(
        vec![vec![
            "tests/t.c:3:test_one:PASS",
            "",
            "-----------------------",
            "1 Tests 0 Failures 0 Ignored ",
            "OK",
        ]],
        HOLD,
    );
    let pids = bench.path().join("flasher-children.pid");
    let mut dut = bench.dut(&format!(
        "name = \"bench\"\nbackend = \"board\"\n[flash]\nmethod = \"command\"\n\
         command = \"sleep 300 & echo $! > {}; echo flashed\"\ntimeout_s = 60\n\
         [serial]\nport = \"socket://127.0.0.1:{port}\"\n",
        pids.display()
    ));
    let capture = run(
        dut.as_mut(),
        &elf,
        bench.spec(Duration::from_secs(30), Box::new(UnityEnd)),
        &Recorder::default(),
    )
    .unwrap();
    assert_eq!(capture.end, RunEnd::Verdict, "{capture:#?}");
    assert!(bench.read("flash.log").contains("flashed"));
    let children = pids_in(&pids);
    assert_eq!(children.len(), 1);
    assert!(
        gone_soon(children[0]),
        "the flasher's child {} outlived it",
        children[0]
    );
}

// ---------------------------------------------------------------------------------------------
// (f) opening errors

#[test]
fn a_busy_port_names_the_way_to_find_its_holder() {
    let elf = fixture_image("mps2-an385", "math");
    let bench = Bench::new();
    // Another program holds the port: fwfix's own serial library, which locks it exclusively
    // (a lock that binds root too, unlike TIOCEXCL).
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let _entered = runtime.enter();
    let (_master, slave) = tokio_serial::SerialStream::pair().unwrap();
    let path = tokio_serial::SerialPort::name(&slave).unwrap();
    let _holder = tokio_serial::SerialPortBuilderExt::open_native_async(tokio_serial::new(
        path.clone(),
        115_200,
    ))
    .unwrap();
    let mut dut = bench.dut(&format!(
        "name = \"bench\"\nbackend = \"board\"\n[flash]\nmethod = \"command\"\ncommand = \"true\"\n\
         [serial]\nport = \"{path}\"\n"
    ));
    let err = run(
        dut.as_mut(),
        &elf,
        bench.spec(Duration::from_secs(10), Box::new(UnityEnd)),
        &Recorder::default(),
    )
    .unwrap_err();
    assert!(matches!(err, DutError::PortBusy { .. }), "{err:?}");
    assert!(
        err.to_string().contains(&format!("fuser -v {path}")),
        "{err}"
    );
}

#[test]
fn a_missing_device_says_to_plug_the_board_in() {
    let elf = fixture_image("mps2-an385", "math");
    let bench = Bench::new();
    let link = bench.path().join("usb-STMicroelectronics_STLINK-V3-if02");
    std::os::unix::fs::symlink("/dev/ttyACM99-not-here", &link).unwrap();
    let mut dut = bench.dut(&format!(
        "name = \"bench\"\nbackend = \"board\"\n[flash]\nmethod = \"command\"\ncommand = \"true\"\n\
         [serial]\nport = \"{}\"\n",
        link.display()
    ));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let err = runtime.block_on(dut.check()).unwrap_err();
    assert!(matches!(err, DutError::NoSuchPort { .. }), "{err:?}");
    let err = run(
        dut.as_mut(),
        &elf,
        bench.spec(Duration::from_secs(10), Box::new(UnityEnd)),
        &Recorder::default(),
    )
    .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("/dev/ttyACM99-not-here, which does not exist"),
        "{text}"
    );
    assert!(text.contains("plugged in"), "{text}");
}

// Permission denied cannot be produced for real here: the suite runs as root in CI, and root
// opens a device node whatever its mode. Its message is checked as a unit test of the mapping in
// `dut::board::serial` instead.

// ---------------------------------------------------------------------------------------------
// End to end: `fwfix test --board FILE` with the gdb method

fn keys(v: &serde_json::Value) -> BTreeSet<String> {
    v.as_object().unwrap().keys().cloned().collect()
}

#[test]
fn fwfix_test_on_a_board_writes_the_same_report_as_on_qemu() {
    let repo = crate::common::FixtureRepo::new();
    require_tools();
    let (gdb, uart_port) = (free_port(), free_port());
    let qemu = Qemu::board(gdb, uart_port);
    // Named after the QEMU machine: the fixture's profile builds for `{machine}`, which is a
    // board's name.
    let board = repo.write(
        "boards/mps2-an385.toml",
        &format!(
            "name = \"mps2-an385\"\nbackend = \"board\"\n[flash]\nmethod = \"gdb\"\n\
             [gdb]\nremote = \"127.0.0.1:{gdb}\"\n[serial]\nport = \"socket://127.0.0.1:{uart_port}\"\n"
        ),
    );
    let repo_arg = repo.path().to_str().unwrap();
    let on_board = crate::common::fwfix(
        &[
            "test",
            "--repo",
            repo_arg,
            "--board",
            board.to_str().unwrap(),
            "--profile",
            "crc",
            "--json",
        ],
        repo.path(),
    );
    assert_eq!(
        on_board.status.code(),
        Some(1),
        "{}",
        crate::common::text(&on_board)
    );
    let board_run = crate::common::run_dir(&on_board);
    let board_report = crate::common::report(&board_run);
    assert!(board_run.join("iter-000/flash.log").is_file());
    drop(qemu);
    assert!(!processes_mentioning(&format!("{}", board_run.display()))
        .iter()
        .any(|p| p.contains("gdb")));

    let on_qemu = crate::common::fwfix(
        &[
            "test",
            "--repo",
            repo_arg,
            "--board",
            "qemu-mps2-an385",
            "--profile",
            "crc",
            "--json",
        ],
        repo.path(),
    );
    assert_eq!(
        on_qemu.status.code(),
        Some(1),
        "{}",
        crate::common::text(&on_qemu)
    );
    let qemu_report = crate::common::report(&crate::common::run_dir(&on_qemu));

    assert_eq!(keys(&board_report), keys(&qemu_report));
    for key in [
        "command",
        "status",
        "final_state",
        "iterations",
        "error_class",
        "crash",
    ] {
        assert_eq!(board_report[key], qemu_report[key], "{key}");
    }
    let cases = |r: &serde_json::Value| -> Vec<(String, String)> {
        r["cases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["name"].as_str().unwrap().to_string(),
                    c["status"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    assert_eq!(cases(&board_report), cases(&qemu_report));
    let failing = crate::common::case(&board_report, "test_crc16_known_vector");
    assert_eq!(failing["status"], "FAIL");
    assert_eq!(failing["file"], "tests/test_crc.c");
    assert_eq!(
        keys(&board_report["attempts"][0]),
        keys(&qemu_report["attempts"][0])
    );
    assert_eq!(
        board_report["attempts"][0]["exit_code"], 1,
        "{board_report:#}"
    );
    assert_eq!(
        repo.git(&["status", "--porcelain"]),
        "?? boards/mps2-an385.toml\n"
    );
}

#[test]
fn fwfix_test_maps_a_flash_failure_to_flash_failure() {
    let repo = crate::common::FixtureRepo::new();
    let (port, _server) = console_server(vec![vec![]], HOLD);
    let board = repo.write(
        "boards/mps2-an385.toml",
        &format!(
            "name = \"mps2-an385\"\nbackend = \"board\"\n[flash]\nmethod = \"command\"\n\
             command = \"echo 'Error: target not halted' >&2; exit 1\"\n\
             [serial]\nport = \"socket://127.0.0.1:{port}\"\n"
        ),
    );
    let out = crate::common::fwfix(
        &[
            "test",
            "--repo",
            repo.path().to_str().unwrap(),
            "--board",
            board.to_str().unwrap(),
            "--profile",
            "crc",
            "--json",
        ],
        repo.path(),
    );
    assert_eq!(out.status.code(), Some(4), "{}", crate::common::text(&out));
    let report = crate::common::report(&crate::common::run_dir(&out));
    assert_eq!(report["error_class"], "FLASH_FAILURE", "{report:#}");
    assert_eq!(report["status"], "ERROR");
    let mut flash_log = String::new();
    // The failed try's log is kept under a name of its own, as the trace names it.
    std::fs::File::open(crate::common::run_dir(&out).join("iter-000/flash-failed.log"))
        .unwrap()
        .read_to_string(&mut flash_log)
        .unwrap();
    assert!(flash_log.contains("target not halted"), "{flash_log}");
}

// ---------------------------------------------------------------------------------------------
// End to end: the console and the flasher failing under `fwfix test --board FILE`

/// `fwfix test --json` of `profile` on the board file `board`, with a state directory of its own
/// in `bench` (no lease shared with other tests on a board of the same name).
fn fwfix_test_on(
    repo: &crate::common::FixtureRepo,
    bench: &Bench,
    board: &Path,
    profile: &str,
) -> Command {
    crate::common::fwfix_command(
        &[
            "test",
            "--repo",
            repo.path().to_str().unwrap(),
            "--board",
            board.to_str().unwrap(),
            "--profile",
            profile,
            "--json",
        ],
        repo.path(),
        &bench.path().join("state"),
    )
}

/// A process started in a group of its own, killed with everything it started when dropped.
struct ProcessGroup(Option<Child>);

impl ProcessGroup {
    /// Once: after the wait, the group's id may be anyone's.
    fn kill(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(-(child.id() as i32)),
                nix::sys::signal::Signal::SIGKILL,
            );
            let _ = child.wait();
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A board file for the fixture's profiles (which build for the board's name) in `bench`.
fn command_board_file(bench: &Bench, command: &str, port: &str) -> PathBuf {
    let file = bench.path().join("mps2-an385.toml");
    std::fs::write(
        &file,
        format!(
            "name = \"mps2-an385\"\nbackend = \"board\"\n[flash]\nmethod = \"command\"\n\
             command = \"{}\"\n[serial]\nport = \"{port}\"\n",
            command.replace('\\', "\\\\").replace('"', "\\\"")
        ),
    )
    .unwrap();
    file
}

#[test]
fn fwfix_test_keeps_the_console_of_a_port_killed_mid_run() {
    let repo = crate::common::FixtureRepo::new();
    let bench = Bench::new();
    // The console server is a process of its own (as ser2net is), killed mid-run.
    let lines = bench.path().join("lines.txt");
    std::fs::write(
        &lines,
        "tests/test_crc.c:10:test_crc8_empty:PASS\r\ntests/test_crc.c:15:test_crc8_vec",
    )
    .unwrap();
    let port = free_port();
    let mut server = ProcessGroup(Some(
        Command::new("socat")
            .arg(format!("TCP-LISTEN:{port},bind=127.0.0.1,reuseaddr,fork"))
            .arg(format!("SYSTEM:cat '{}'; exec sleep 60", lines.display()))
            .process_group(0)
            .stdin(Stdio::null())
            .spawn()
            .expect("socat starts"),
    ));
    wait_for_listener(port);
    let flashed = bench.path().join("flashed");
    let board = command_board_file(
        &bench,
        &format!("touch '{}'", flashed.display()),
        &format!("socket://127.0.0.1:{port}"),
    );
    let fwfix = fwfix_test_on(&repo, &bench, &board, "crc")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Once flashed, the image "runs": the port goes away under it.
    let deadline = Instant::now() + Duration::from_secs(120);
    while !flashed.exists() {
        assert!(Instant::now() < deadline, "the flash command never ran");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    server.kill();
    let out = fwfix.wait_with_output().unwrap();

    assert_eq!(out.status.code(), Some(4), "{}", crate::common::text(&out));
    let run = crate::common::run_dir(&out);
    let report = crate::common::report(&run);
    assert_eq!(report["status"], "ERROR", "{report:#}");
    assert_eq!(report["error_class"], "TEST_ENV_FAILURE", "{report:#}");
    // The lost try's console is kept under a name of its own, as the trace names it.
    let console = std::fs::read_to_string(run.join("iter-000/console-failed.log")).unwrap();
    assert!(
        console.contains("uart  tests/test_crc.c:10:test_crc8_empty:PASS"),
        "{console}"
    );
    assert!(
        console.contains("uart  tests/test_crc.c:15:test_crc8_vec"),
        "the partial line: {console}"
    );
    assert!(console.contains("closed (end of stream)"), "{console}");
    // The retries, refused by the dead server, left the first try's evidence as it was traced.
    let audit = crate::common::fwfix(&["audit", run.to_str().unwrap()], repo.path());
    assert_eq!(
        audit.status.code(),
        Some(0),
        "{}",
        crate::common::text(&audit)
    );
    assert!(
        !report["cases"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["status"] == "FAIL"),
        "{report:#}"
    );
}

#[test]
fn fwfix_test_on_a_busy_port_says_how_to_find_its_holder() {
    let repo = crate::common::FixtureRepo::new();
    let bench = Bench::new();
    // Another program holds the port: this test, with fwfix's own serial library, which locks it
    // exclusively (a lock that binds root too, unlike TIOCEXCL).
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let _entered = runtime.enter();
    let (_master, slave) = tokio_serial::SerialStream::pair().unwrap();
    let pty = tokio_serial::SerialPort::name(&slave).unwrap();
    let _holder = tokio_serial::SerialPortBuilderExt::open_native_async(tokio_serial::new(
        pty.clone(),
        115_200,
    ))
    .unwrap();
    // Configured by its stable name, as a by-id link: the fix names the device behind it.
    let link = bench
        .path()
        .join("usb-FTDI_FT232R_USB_UART_A50285BI-if00-port0");
    std::os::unix::fs::symlink(&pty, &link).unwrap();
    let board = command_board_file(&bench, "true", link.to_str().unwrap());
    let out = fwfix_test_on(&repo, &bench, &board, "crc")
        .output()
        .unwrap();

    assert_eq!(out.status.code(), Some(4), "{}", crate::common::text(&out));
    let all = crate::common::text(&out);
    assert!(
        all.contains(&format!("serial port {} is busy", link.display())),
        "{all}"
    );
    assert!(all.contains(&format!("`fuser -v {pty}`")), "{all}");
    let report = crate::common::report(&crate::common::run_dir(&out));
    assert_eq!(report["status"], "ERROR", "{report:#}");
    assert_eq!(report["error_class"], "TEST_ENV_FAILURE", "{report:#}");
}

#[test]
fn fwfix_test_retries_a_failing_flasher_per_budget_and_fails_no_test() {
    let repo = crate::common::FixtureRepo::new();
    let bench = Bench::new();
    let (port, _server) = console_server(vec![vec![]], HOLD);
    let calls = bench.path().join("calls");
    let board = command_board_file(
        &bench,
        &format!(
            "echo flash >> '{}'; echo 'Error: target not halted' >&2; exit 1",
            calls.display()
        ),
        &format!("socket://127.0.0.1:{port}"),
    );
    // The shipped crc profile with a flash budget of its own.
    let shipped =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles/crc.toml"))
            .unwrap();
    let profile = bench.path().join("crc.toml");
    std::fs::write(
        &profile,
        format!("{shipped}\n[recovery]\nflash_failure = 2\n"),
    )
    .unwrap();
    let out = fwfix_test_on(&repo, &bench, &board, profile.to_str().unwrap())
        .output()
        .unwrap();

    assert_eq!(out.status.code(), Some(4), "{}", crate::common::text(&out));
    let flashes = std::fs::read_to_string(&calls).unwrap();
    assert_eq!(flashes.lines().count(), 3, "the first flash and 2 retries");
    let run = crate::common::run_dir(&out);
    let report = crate::common::report(&run);
    assert_eq!(report["error_class"], "FLASH_FAILURE", "{report:#}");
    assert_eq!(report["status"], "ERROR", "{report:#}");
    assert!(report["cases"].as_array().unwrap().is_empty(), "{report:#}");
    // Each try's flasher output is kept, as the trace names it.
    for kept in [
        "flash-failed.log",
        "flash-failed-2.log",
        "flash-failed-3.log",
    ] {
        let flash_log = std::fs::read_to_string(run.join("iter-000").join(kept)).unwrap();
        assert!(
            flash_log.contains("target not halted"),
            "{kept}: {flash_log}"
        );
    }
    let audit = crate::common::fwfix(&["audit", run.to_str().unwrap()], repo.path());
    assert_eq!(
        audit.status.code(),
        Some(0),
        "{}",
        crate::common::text(&audit)
    );
}
