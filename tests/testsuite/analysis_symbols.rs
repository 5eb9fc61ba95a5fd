//! Symbolisation and crash reports against real images built by arm-none-eabi-gcc.
//!
//! The addresses are not hard-coded: each test reads them from the image it just built, with
//! arm-none-eabi-nm and arm-none-eabi-objdump, so a different toolchain version still checks the
//! same facts. Without the cross toolchain these tests fail: they must never pass by skipping.
#![allow(
    clippy::unwrap_used,
    reason = "test helpers too should stop the test loudly on anything unexpected"
)]

use std::path::{Path, PathBuf};
use std::process::Command;

use fwfix::analysis::fault::{crash_report, site_functions};
use fwfix::analysis::{SymbolError, Symbolizer};
use fwfix::capture::FaultSnapshot;

const SENSOR_C: &str = "\
volatile int sink;

int sensor_read(int x)
{
    return x * 3;
}

int sensor_poll(void)
{
    int v = sensor_read(2);
    sink = v;
    return v;
}

void test_zeta(void)
{
    sink = sensor_poll();
}

void test_alpha(void)
{
    sink = 2;
}

void (*volatile sensor_hook)(int);

void sensor_notify(void)
{
    sensor_hook(1);
    sink = 4;
}

int main(void)
{
    test_zeta();
    test_alpha();
    return 0;
}
";

/// The 1-based line of the first line in `source` containing `needle`.
fn line_of(source: &str, needle: &str) -> u32 {
    let index = source
        .lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("{needle:?} is not in the source"));
    u32::try_from(index + 1).unwrap()
}

fn run(program: &str, args: &[&str], cwd: &Path) -> String {
    let output = Command::new(program)
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run {program} ({e}): install gcc-arm-none-eabi; these tests need it")
        });
    assert!(
        output.status.success(),
        "{program} {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// Builds `source` into `name.elf` in a fresh temporary directory.
fn build(
    compiler: &str,
    file_name: &str,
    source: &str,
    extra: &[&str],
) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(file_name), source).unwrap();
    let elf = dir.path().join("image.elf");
    let mut args = vec![
        "-mcpu=cortex-m3",
        "-mthumb",
        "-O0",
        "-nostdlib",
        "-Wl,-e,main",
        file_name,
        "-o",
        "image.elf",
    ];
    args.extend_from_slice(extra);
    run(compiler, &args, dir.path());
    (dir, elf)
}

/// Function addresses from `arm-none-eabi-nm` (without the Thumb bit, as nm prints them).
fn nm_address(elf: &Path, symbol: &str) -> u64 {
    let out = run(
        "arm-none-eabi-nm",
        &[elf.to_str().unwrap()],
        elf.parent().unwrap(),
    );
    out.lines()
        .find_map(|l| {
            let mut words = l.split_whitespace();
            let address = words.next()?;
            let _kind = words.next()?;
            (words.next()? == symbol).then(|| u64::from_str_radix(address, 16).unwrap())
        })
        .unwrap_or_else(|| panic!("{symbol} not in nm output:\n{out}"))
}

/// The address of the `bl <callee>` instruction inside the image.
fn call_address(elf: &Path, callee: &str) -> u64 {
    let out = run(
        "arm-none-eabi-objdump",
        &["-d", elf.to_str().unwrap()],
        elf.parent().unwrap(),
    );
    let target = format!("<{callee}>");
    out.lines()
        .find(|l| l.contains("\tbl\t") && l.trim_end().ends_with(&target))
        .and_then(|l| l.split(':').next())
        .map(|a| u64::from_str_radix(a.trim(), 16).unwrap())
        .unwrap_or_else(|| panic!("no call to {callee} in:\n{out}"))
}

/// The line binutils' addr2line gives for an address.
fn reference_line(elf: &Path, address: u64) -> u32 {
    let out = run(
        "arm-none-eabi-addr2line",
        &["-e", elf.to_str().unwrap(), &format!("{address:#x}")],
        elf.parent().unwrap(),
    );
    let line = out.trim().rsplit(':').next().unwrap();
    line.split_whitespace().next().unwrap().parse().unwrap()
}

#[test]
fn locates_functions_files_and_lines_from_dwarf() {
    let (_dir, elf) = build("arm-none-eabi-gcc", "sensor.c", SENSOR_C, &["-g"]);
    let symbols = Symbolizer::open(&elf).unwrap();
    assert_eq!(symbols.path(), elf);

    let read = nm_address(&elf, "sensor_read");
    // A Thumb function pointer has bit 0 set; both spellings must land in the same place.
    for address in [read, read | 1] {
        let l = symbols.locate(address);
        assert_eq!(l.function.as_deref(), Some("sensor_read"), "{l:?}");
        assert!(l.file.as_deref().unwrap().ends_with("sensor.c"), "{l:?}");
        // gcc puts a function's first line entry on its signature or its opening brace;
        // binutils' addr2line is the reference.
        assert_eq!(l.line, Some(reference_line(&elf, read)));
        assert!(l.line >= Some(line_of(SENSOR_C, "int sensor_read(int x)")));
        assert_eq!(l.address, format!("{address:#010x}"));
    }

    let call = call_address(&elf, "sensor_read");
    let call_line = line_of(SENSOR_C, "int v = sensor_read(2);");
    let l = symbols.locate(call);
    assert_eq!(l.function.as_deref(), Some("sensor_poll"));
    assert_eq!(l.line, Some(call_line));

    // A stacked LR: the return address after the 4-byte `bl`, with the Thumb bit.
    let lr = (call + 4) | 1;
    let l = symbols.locate_call_site(lr);
    assert_eq!(l.function.as_deref(), Some("sensor_poll"));
    assert_eq!(l.line, Some(call_line));
    assert_eq!(l.address, format!("{lr:#010x}"));

    let nowhere = symbols.locate(0x0bad_0000);
    assert_eq!(
        (nowhere.function, nowhere.file, nowhere.line),
        (None, None, None)
    );
    assert!(symbols.functions_at(0x0bad_0000).is_empty());
    assert_eq!(symbols.functions_at(read | 1), vec!["sensor_read"]);
}

#[test]
fn each_function_is_mapped_to_the_file_that_defines_it() {
    let (_dir, elf) = build("arm-none-eabi-gcc", "sensor.c", SENSOR_C, &["-g"]);
    let files = Symbolizer::open(&elf).unwrap().function_files();
    let read = files
        .get("sensor_read")
        .unwrap_or_else(|| panic!("{files:?}"));
    assert!(read.ends_with("sensor.c"), "{read}");
    let (_dir, bare) = build("arm-none-eabi-gcc", "sensor.c", SENSOR_C, &[]);
    assert!(Symbolizer::open(&bare).unwrap().function_files().is_empty());
}

#[test]
fn test_functions_come_in_address_order() {
    let (_dir, elf) = build("arm-none-eabi-gcc", "sensor.c", SENSOR_C, &["-g"]);
    let symbols = Symbolizer::open(&elf).unwrap();
    assert!(nm_address(&elf, "test_zeta") < nm_address(&elf, "test_alpha"));
    assert_eq!(symbols.test_functions(), vec!["test_zeta", "test_alpha"]);
}

#[test]
fn falls_back_to_the_symbol_table_without_debug_info() {
    let (_dir, elf) = build("arm-none-eabi-gcc", "sensor.c", SENSOR_C, &[]);
    let symbols = Symbolizer::open(&elf).unwrap();
    let poll = nm_address(&elf, "sensor_poll");
    let l = symbols.locate(poll + 4);
    assert_eq!(l.function.as_deref(), Some("sensor_poll"));
    assert_eq!((l.file, l.line), (None, None));
    assert_eq!(symbols.functions_at(poll + 4), vec!["sensor_poll"]);
    assert_eq!(symbols.test_functions(), vec!["test_zeta", "test_alpha"]);
}

#[test]
fn demangles_cpp_names() {
    let source = "\
namespace drv {
int poll(int x)
{
    return x + 1;
}
}
int main()
{
    return drv::poll(1);
}
";
    for debug in [&["-g"][..], &[]] {
        let mut extra = vec!["-fno-exceptions", "-fno-rtti"];
        extra.extend_from_slice(debug);
        let (_dir, elf) = build("arm-none-eabi-g++", "drv.cpp", source, &extra);
        let symbols = Symbolizer::open(&elf).unwrap();
        let address = nm_address(&elf, "_ZN3drv4pollEi");
        let l = symbols.locate(address | 1);
        let function = l.function.unwrap_or_default();
        assert!(
            function == "drv::poll(int)",
            "{function:?} (debug info: {debug:?})"
        );
    }
}

#[test]
fn bad_call_crash_points_at_the_caller() {
    let (_dir, elf) = build("arm-none-eabi-gcc", "sensor.c", SENSOR_C, &["-g"]);
    let symbols = Symbolizer::open(&elf).unwrap();
    let lr = (register_call_address(&elf, "sensor_notify") + 2) | 1;
    let call_line = line_of(SENSOR_C, "sensor_hook(1);");
    // What a call through a null function pointer leaves behind: PC 0, LR into the caller.
    let snap = FaultSnapshot {
        exception: Some(3),
        pc: Some(0),
        lr: Some(u32::try_from(lr).unwrap()),
        sp: Some(0x2000_0fd8),
        xpsr: Some(0x4000_0000),
        cfsr: Some(0x0000_0001),
        hfsr: Some(0x4000_0000),
        ..FaultSnapshot::default()
    };
    let report = crash_report(&snap, Some(&symbols));
    assert_eq!(report.pc.as_deref(), Some("0x00000000"));
    // PC is in no function, so the crash site is the caller.
    assert_eq!(report.function.as_deref(), Some("sensor_notify"));
    let caller = report.caller.clone().unwrap();
    assert_eq!(caller.function.as_deref(), Some("sensor_notify"));
    assert_eq!(caller.line, Some(call_line));
    let file = caller.file.unwrap();
    assert!(
        report.summary.starts_with(&format!(
            "HardFault (FORCED; IACCVIOL) at 0x00000000: sensor_notify ({file}:{call_line}) \
             called a null function pointer"
        )),
        "{}",
        report.summary
    );
    assert_eq!(site_functions(&snap, &symbols), vec!["sensor_notify"]);

    // The same fault with LR after a `bl sensor_read`: the null call was sensor_read's own (a
    // tail call leaves no return address), not the caller's line.
    let lr = (call_address(&elf, "sensor_read") + 4) | 1;
    let tail = FaultSnapshot {
        lr: Some(u32::try_from(lr).unwrap()),
        ..snap
    };
    let report = crash_report(&tail, Some(&symbols));
    assert_eq!(report.function.as_deref(), Some("sensor_read"));
    assert!(
        report
            .summary
            .contains("called a null function pointer, probably by a tail call"),
        "{}",
        report.summary
    );
}

/// The address of the first `blx <register>` inside `function`.
fn register_call_address(elf: &Path, function: &str) -> u64 {
    let out = run(
        "arm-none-eabi-objdump",
        &["-d", elf.to_str().unwrap()],
        elf.parent().unwrap(),
    );
    let start = format!("<{function}>:");
    out.lines()
        .skip_while(|l| !l.ends_with(&start))
        .take_while(|l| !l.trim().is_empty())
        .find(|l| l.contains("\tblx\tr"))
        .and_then(|l| l.split(':').next())
        .map(|a| u64::from_str_radix(a.trim(), 16).unwrap())
        .unwrap_or_else(|| panic!("no blx in {function}:\n{out}"))
}

#[test]
fn crash_inside_a_function_names_it_and_its_caller() {
    let (_dir, elf) = build("arm-none-eabi-gcc", "sensor.c", SENSOR_C, &["-g"]);
    let symbols = Symbolizer::open(&elf).unwrap();
    let pc = nm_address(&elf, "sensor_read") + 2;
    let lr = (call_address(&elf, "sensor_poll") + 4) | 1;
    let snap = FaultSnapshot {
        exception: Some(5),
        pc: Some(u32::try_from(pc).unwrap()),
        lr: Some(u32::try_from(lr).unwrap()),
        cfsr: Some(0x0000_8200),
        bfar: Some(0x4001_0000),
        ..FaultSnapshot::default()
    };
    let report = crash_report(&snap, Some(&symbols));
    assert_eq!(report.function.as_deref(), Some("sensor_read"));
    assert!(report.file.as_deref().unwrap().ends_with("sensor.c"));
    assert!(report.line.is_some());
    assert_eq!(
        report.caller.as_ref().unwrap().function.as_deref(),
        Some("test_zeta")
    );
    assert!(
        report.summary.starts_with("BusFault (PRECISERR) at ")
            && report.summary.contains(" in sensor_read (")
            && report.summary.contains(", called from test_zeta (")
            && report.summary.ends_with("; data address 0x40010000"),
        "{}",
        report.summary
    );
    // The test at the crash site is what the Unity parser blames.
    assert_eq!(
        site_functions(&snap, &symbols),
        vec!["sensor_read", "test_zeta"]
    );
}

#[test]
fn a_stripped_image_opens() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("empty.c"), "int main(void) { return 0; }\n").unwrap();
    run(
        "arm-none-eabi-gcc",
        &[
            "-mcpu=cortex-m3",
            "-mthumb",
            "-nostdlib",
            "-Wl,-e,main",
            "-s",
            "empty.c",
            "-o",
            "stripped.elf",
        ],
        dir.path(),
    );
    let symbols = Symbolizer::open(&dir.path().join("stripped.elf")).unwrap();
    assert!(symbols.test_functions().is_empty());
    assert_eq!(symbols.locate(0x8000).function, None);
}

#[test]
fn opening_a_missing_image_names_it() {
    let err = Symbolizer::open(Path::new("build/missing.elf")).unwrap_err();
    assert!(matches!(err, SymbolError::Read { .. }));
    assert!(err.to_string().contains("build/missing.elf"), "{err}");
}

/// A Makefile in a build subdirectory that reaches its sources through `..` (FreeRTOS's demos
/// build in `Demo/<port>/build/gcc` from `./../../../../Source`): the debug information names
/// `<dir>/Demo/build/gcc/./../../../Source/sensor.c`; fwfix names the file where it is.
#[test]
fn a_source_reached_through_dot_dot_is_named_where_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("Source")).unwrap();
    std::fs::create_dir_all(root.join("Demo/build/gcc")).unwrap();
    std::fs::write(root.join("Source/sensor.c"), SENSOR_C).unwrap();
    run(
        "arm-none-eabi-gcc",
        &[
            "-mcpu=cortex-m3",
            "-mthumb",
            "-O0",
            "-g",
            "-nostdlib",
            "-Wl,-e,main",
            "./../../../Source/sensor.c",
            "-o",
            "image.elf",
        ],
        &root.join("Demo/build/gcc"),
    );
    let elf = root.join("Demo/build/gcc/image.elf");
    let symbols = Symbolizer::open(&elf).unwrap();
    let l = symbols.locate(nm_address(&elf, "sensor_read"));
    let expected = root.join("Source/sensor.c");
    assert_eq!(l.file.as_deref(), expected.to_str(), "{l:?}");
}
