//! Support for the tests that drive DUT backends directly: fixture images built once per suite,
//! end detectors, and an event recorder.

use super::{fixture_dir, require_tools};
use fwfix::capture::{Capture, EndDetector, LineRead};
use fwfix::events::{Event, EventSink};
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// Builds one fixture image with its Makefile in the fixture directory, once per suite: tests run
/// in parallel and make must not run twice at once in the same build directory.
pub fn fixture_image(board: &str, name: &str) -> PathBuf {
    require_tools();
    static BUILT: OnceLock<Mutex<HashMap<String, PathBuf>>> = OnceLock::new();
    let built = BUILT.get_or_init(|| Mutex::new(HashMap::new()));
    let mut built = built.lock().unwrap_or_else(|e| e.into_inner());
    let target = format!("build/{board}/test_{name}.elf");
    if let Some(path) = built.get(&target) {
        return path.clone();
    }
    let out = Command::new("make")
        .arg("-C")
        .arg(fixture_dir())
        .arg(format!("BOARD={board}"))
        .arg(&target)
        .output()
        .expect("make runs");
    assert!(
        out.status.success(),
        "building {target} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let path = fixture_dir().join(&target);
    built.insert(target, path.clone());
    path
}

/// Unity's last line: `OK` or `FAIL`.
pub struct UnityEnd;

impl EndDetector for UnityEnd {
    fn read_line(&mut self, line: &str) -> LineRead {
        LineRead {
            verdict: line == "OK" || line == "FAIL",
            ..LineRead::default()
        }
    }
}

/// Never final: the attempt ends by exit, crash, timeout, a lost port or cancellation.
pub struct NeverFinal;

impl EndDetector for NeverFinal {
    fn read_line(&mut self, _line: &str) -> LineRead {
        LineRead::default()
    }
}

/// Keeps every event a backend emits.
#[derive(Default)]
pub struct Recorder(Mutex<Vec<Event>>);

impl EventSink for Recorder {
    fn emit(&self, event: &Event) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(event.clone());
    }
}

impl Recorder {
    pub fn events(&self) -> Vec<Event> {
        self.0.lock().unwrap().clone()
    }
}

/// The UART lines of a capture.
pub fn uart(capture: &Capture) -> Vec<&str> {
    capture.uart_lines().collect()
}

/// Compiles one C file and its linker script, written to `dir` as `<name>.c` and `<name>.ld`,
/// into `<name>.elf` for a Cortex-M3 with no C library: the tests' own tiny images.
pub fn compile_cortex_m3(dir: &std::path::Path, name: &str, source: &str, link: &str) -> PathBuf {
    require_tools();
    let (c, ld, elf) = (
        dir.join(format!("{name}.c")),
        dir.join(format!("{name}.ld")),
        dir.join(format!("{name}.elf")),
    );
    std::fs::write(&c, source).unwrap();
    std::fs::write(&ld, link).unwrap();
    let out = Command::new("arm-none-eabi-gcc")
        .args([
            "-mcpu=cortex-m3",
            "-mthumb",
            "-O1",
            "-nostdlib",
            "-ffreestanding",
            "-T",
        ])
        .arg(&ld)
        .arg(&c)
        .arg("-o")
        .arg(&elf)
        .output()
        .expect("arm-none-eabi-gcc runs");
    assert!(
        out.status.success(),
        "compiling {name} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    elf
}
