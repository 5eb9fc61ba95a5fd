//! Compiler diagnostics of a build that runs below the repository's root, end to end: the
//! fixture firmware in a git repository in a temp dir, compiled by the real arm-none-eabi-gcc
//! from a makefile two directories down (`make -C demo/gcc`, as FreeRTOS's demos are built),
//! with a header from an SDK outside the repository. The files a diagnostic names are the
//! repository's (`src/crc.c`, with its source in the evidence) or, outside it, left as printed
//! and never a suspect.
#![allow(clippy::unwrap_used, clippy::expect_used)] // panics are how tests fail

use crate::common::*;
use serde_json::Value;
use std::path::Path;

/// Compiles the fixture's src/crc.c the way a demo's build directory does: through a path that
/// climbs out of the build directory first.
const MAKEFILE: &str = "\
CC := arm-none-eabi-gcc
CFLAGS := -mcpu=cortex-m3 -mthumb -ffreestanding -Wall -I./../../src -I$(SDK)

out/crc.o: ./../../src/crc.c
\tmkdir -p out
\t$(CC) $(CFLAGS) -c ./../../src/crc.c -o $@
";

/// The repository with the demo build directory and a src/crc.c broken on its last line, which
/// also includes the outside SDK's broken header. Returns the repository and the line.
fn broken_repo() -> (FixtureRepo, u32) {
    let repo = FixtureRepo::new();
    repo.write("demo/gcc/Makefile", MAKEFILE);
    let crc = std::fs::read_to_string(repo.path().join("src/crc.c")).unwrap();
    let broken = format!("{crc}#include \"sdk.h\"\nint crc_broken(void) {{ return 1 }}\n");
    let line = broken.lines().count() as u32;
    repo.write("src/crc.c", &broken);
    repo.git(&["add", "-A"]);
    repo.git(&[
        "commit",
        "-q",
        "-m",
        "a demo build, and a change that breaks it",
    ]);
    (repo, line)
}

/// An SDK outside the repository whose header does not compile either.
fn outside_sdk() -> tempfile::TempDir {
    let sdk = tempfile::tempdir().unwrap();
    std::fs::write(
        sdk.path().join("sdk.h"),
        "int sdk_broken(void) { return 2 }\n",
    )
    .unwrap();
    sdk
}

/// A profile building the demo with `command` in `cwd`, written outside the repository.
fn profile(dir: &Path, command: &str, cwd: &str) -> String {
    let path = dir.join("demo.toml");
    std::fs::write(
        &path,
        format!(
            r#"name = "demo"
[build]
command = {}
cwd = "{cwd}"
artifact = "demo/gcc/out/demo.elf"
[test]
harness = "unity"
timeout_s = 20
[loop]
max_iterations = 1
[policy]
allow = ["src/**"]
"#,
            toml::Value::String(command.to_string())
        ),
    )
    .unwrap();
    path.display().to_string()
}

/// `fwfix run` with a queue of one candidate that does not apply: the baseline fails to build,
/// its evidence is written, and the run stops for want of a candidate. Returns the run
/// directory.
fn run(repo: &FixtureRepo, profile: &str) -> std::path::PathBuf {
    let queue = tempfile::tempdir().unwrap();
    std::fs::write(
        queue.path().join("01-stale.diff"),
        "--- a/src/crc.c\n+++ b/src/crc.c\n@@ -1,1 +1,1 @@\n-no such line\n+still none\n",
    )
    .unwrap();
    let out = run_queue(repo.path(), profile, queue.path());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    run_dir(&out)
}

fn errors(diagnostics: &Value) -> Vec<(String, u64)> {
    diagnostics
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["severity"] == "error")
        .map(|d| {
            (
                d["file"].as_str().unwrap().to_string(),
                d["line"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Regression: FreeRTOS's demo built with `make -C FreeRTOS/Demo/CORTEX_MPS2_QEMU_IAR_GCC/build/gcc`
/// reported its broken file as `./../../../../Demo/Common/Minimal/PollQ.c`, with no source
/// attached, and a path outside the repository as the top suspect.
#[test]
fn diagnostics_of_a_make_dash_c_build_name_the_repositorys_files() {
    let (repo, line) = broken_repo();
    let sdk = outside_sdk();
    let sdk_header = sdk.path().join("sdk.h").display().to_string();
    let profiles = tempfile::tempdir().unwrap();
    let command = format!("make -C demo/gcc SDK={}", sdk.path().display());
    let dir = run(&repo, &profile(profiles.path(), &command, "."));

    let report = report(&dir);
    let expected = vec![
        (sdk_header.clone(), 1),
        ("src/crc.c".to_string(), line as u64),
    ];
    assert_eq!(
        errors(&report["build"]["diagnostics"]),
        expected,
        "{report:#}"
    );

    let analysis: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("iter-000/analysis.json")).unwrap())
            .unwrap();
    assert_eq!(errors(&analysis["diagnostics"]), expected);
    let ours = &analysis["diagnostics"].as_array().unwrap()[1];
    let source = ours["source"]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{ours:#}"));
    assert!(
        source.contains(&format!(">{line:>5} | int crc_broken(void) {{ return 1 }}")),
        "{source}"
    );
    // The SDK's header is outside the repository: shown as printed, no source, no suspect.
    assert!(
        analysis["diagnostics"][0]["source"].is_null(),
        "{analysis:#}"
    );
    let suspects = analysis["suspects"].as_array().unwrap();
    assert_eq!(suspects[0]["name"], "src/crc.c", "{suspects:#?}");
    assert!(suspects.iter().all(|s| s["name"] != sdk_header.as_str()));
}

/// The profile's own build directory is what a compiler's relative paths start from when make
/// does not say (no `-C`, no recursion).
#[test]
fn diagnostics_of_a_build_run_in_the_profiles_cwd_name_the_repositorys_files() {
    let (repo, line) = broken_repo();
    let sdk = outside_sdk();
    let profiles = tempfile::tempdir().unwrap();
    let command = format!("make SDK={}", sdk.path().display());
    let dir = run(&repo, &profile(profiles.path(), &command, "demo/gcc"));
    let report = report(&dir);
    let files = errors(&report["build"]["diagnostics"]);
    assert_eq!(
        files[1],
        ("src/crc.c".to_string(), line as u64),
        "{report:#}"
    );
}
