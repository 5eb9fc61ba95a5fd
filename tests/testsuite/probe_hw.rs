//! The probe-rs backend against the real `fwfix` binary. Without hardware: `fwfix boards probes`
//! on a host with no debug probe, and a `fwfix test` on a probe-rs board that stops as an
//! infrastructure error naming the missing probe. With a probe, when FWFIX_HW_PROBE names its
//! chip:
//!
//! ```text
//! FWFIX_HW_PROBE=STM32F401RETx FWFIX_HW_PROBE_ELF=path/to/unity-test.elf \
//!   [FWFIX_HW_PROBE_SELECTOR=0483:374b:SERIAL] cargo test --test testsuite probe_hw
//! ```
//!
//! flashes that image (a Unity test built for the chip, printing on RTT up channel 0) through
//! the probe, and checks the run produced test results, a flash log and no infrastructure error.
//! No image can be built for an arbitrary chip here, so the image is the caller's; naming a chip
//! without an image that exists fails the test.

use crate::common::{events, fwfix, report, run_dir, text, FixtureRepo};

fn probe_board(repo: &FixtureRepo, chip: &str, selector: Option<&str>) {
    let selector = selector
        .map(|s| format!("selector = \"{s}\"\n"))
        .unwrap_or_default();
    repo.write(
        "boards/probe.toml",
        &format!(
            "name = \"probe\"\nbackend = \"board\"\n[flash]\nmethod = \"probe-rs\"\n\
             [probe]\nchip = \"{chip}\"\n{selector}rtt = true\n"
        ),
    );
}

#[test]
fn boards_probes_says_when_none_is_connected() {
    let dir = tempfile::tempdir().unwrap();
    let out = fwfix(&["boards", "probes"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "no debug probes found\n"
    );
    let out = fwfix(&["boards", "probes", "--json"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(out.stdout.is_empty(), "{}", text(&out));
}

#[test]
fn a_missing_probe_is_an_infrastructure_error_before_anything_runs() {
    let repo = FixtureRepo::new();
    probe_board(&repo, "STM32F401RETx", Some("0483:374b:NOSUCH"));
    repo.write(
        "profiles/crc-probe.toml",
        "name = \"crc-probe\"\n[build]\ncommand = \"make BOARD=mps2-an385 \
         build/mps2-an385/test_crc.elf\"\nartifact = \"build/mps2-an385/test_crc.elf\"\n\
         [test]\nharness = \"unity\"\ntimeout_s = 10\n",
    );
    let out = fwfix(
        &[
            "test",
            "--json",
            "--board",
            "probe",
            "--profile",
            "crc-probe",
        ],
        repo.path(),
    );
    assert_eq!(out.status.code(), Some(4), "{}", text(&out));
    let finished = events(&out).pop().unwrap();
    assert_eq!(finished["error_class"], "TEST_ENV_FAILURE", "{finished:#}");
    let dir = run_dir(&out);
    let trace = std::fs::read_to_string(dir.join("trace.jsonl")).unwrap();
    assert!(
        trace.contains("no debug probe matches [probe] selector 0483:374b:NOSUCH"),
        "{trace}"
    );
    assert_eq!(report(&dir)["status"], "ERROR");
}

/// The image the hardware test flashes, when FWFIX_HW_PROBE names a chip: FWFIX_HW_PROBE_ELF,
/// which must be an existing file. Panics saying what to set otherwise.
fn hw_image(chip: &str) -> String {
    let elf = std::env::var("FWFIX_HW_PROBE_ELF").unwrap_or_default();
    assert!(
        !elf.is_empty() && std::path::Path::new(&elf).is_file(),
        "FWFIX_HW_PROBE={chip} asks for the hardware test, but FWFIX_HW_PROBE_ELF ({elf:?}) does \
         not name an image file: set it to a Unity test ELF built for {chip} that prints on RTT \
         up channel 0"
    );
    elf
}

/// The hardware test: a debug probe cannot exist on a machine without one, so it runs when
/// FWFIX_HW_PROBE names the chip on the probe, and there is nothing to run otherwise. A chip
/// named without its image fails here instead of the test passing unseen.
#[test]
fn probe_hw_flashes_and_runs_a_unity_image_on_the_chip_fwfix_hw_probe_names() {
    let Ok(chip) = std::env::var("FWFIX_HW_PROBE") else {
        return;
    };
    let elf = hw_image(&chip);
    let selector = std::env::var("FWFIX_HW_PROBE_SELECTOR").ok();
    let repo = FixtureRepo::new();
    probe_board(&repo, &chip, selector.as_deref());
    repo.write(
        "profiles/hw.toml",
        &format!(
            "name = \"hw\"\n[build]\ncommand = \"mkdir -p build && cp '{elf}' build/hw.elf\"\n\
             artifact = \"build/hw.elf\"\n[test]\nharness = \"unity\"\ntimeout_s = 60\n"
        ),
    );
    let out = fwfix(
        &["test", "--json", "--board", "probe", "--profile", "hw"],
        repo.path(),
    );
    // Passed or failed, but a test result: not an infrastructure error.
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(&out));
    let dir = run_dir(&out);
    assert!(dir.join("iter-000/flash.log").exists(), "{}", text(&out));
    let report = report(&dir);
    assert!(
        !report["cases"].as_array().unwrap().is_empty(),
        "{report:#}"
    );
}
