//! `fwfix matrix` end to end: the real binary tests every pair of a manifest on real QEMU (and a
//! board whose console cannot be reached, standing in for hardware that is offline), and the
//! tests read the matrix's report.json and junit.xml.

use crate::common::*;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn matrix(repo: &FixtureRepo, manifest: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["matrix", manifest, "--json", "--repo"];
    args.push(repo.path().to_str().unwrap());
    args.extend_from_slice(extra);
    fwfix(&args, repo.path())
}

/// The matrix directory the final event names, and its report.json.
fn matrix_report(out: &std::process::Output) -> (PathBuf, Value) {
    let dir = run_dir(out);
    let report =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    (dir, report)
}

fn pair<'a>(report: &'a Value, board: &str, profile: &str) -> &'a Value {
    report["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["board"] == board && p["profile"] == profile)
        .unwrap_or_else(|| panic!("no pair {board}/{profile} in {report:#}"))
}

/// A hardware board whose console is refused (nothing listens on the port): every run on it is
/// an infrastructure error. The profile builds the mps2-an385 image for it.
fn offline_bench(repo: &FixtureRepo) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    repo.write(
        "ci/bench.toml",
        &format!(
            "name = \"bench\"\nbackend = \"board\"\n[flash]\nmethod = \"command\"\ncommand = \"true\"\n\
             [serial]\nport = \"socket://127.0.0.1:{port}\"\n"
        ),
    );
    // The board's image is the mps2-an385 one; QEMU boards get their own.
    for name in ["crc", "ringbuf"] {
        repo.write(
            &format!("ci/{name}.toml"),
            &format!(
                "name = \"{name}\"\n[build]\ncommand = \"b=$(case {{machine}} in lm3s6965evb) echo lm3s6965evb;; \
                 *) echo mps2-an385;; esac); make BOARD=$b build/$b/test_{name}.elf && mkdir -p out/{{machine}} \
                 && cp build/$b/test_{name}.elf out/{{machine}}/\"\n\
                 artifact = \"out/{{machine}}/test_{name}.elf\"\n[test]\nharness = \"unity\"\ntimeout_s = 10\n"
            ),
        );
    }
}

#[test]
fn a_nightly_matrix_runs_sim_first_retries_infrastructure_and_writes_one_junit() {
    let repo = FixtureRepo::new();
    offline_bench(&repo);
    repo.write(
        "ci/nightly.toml",
        "boards = [\"qemu-mps2-an385\", \"qemu-lm3s6965evb\", \"bench.toml\"]\n\
         profiles = [\"crc.toml\", \"ringbuf.toml\"]\nretries = 1\n\
         [[exclude]]\nboard = \"qemu-lm3s6965evb\"\nprofile = \"crc\"\nreason = \"not on this part\"\n",
    );
    let out = matrix(&repo, "ci/nightly.toml", &["--jobs", "2"]);
    // The offline board's infrastructure error is the most serious outcome.
    assert_eq!(out.status.code(), Some(4), "{}", text(&out));
    let (dir, report) = matrix_report(&out);
    assert_eq!(report["command"], "matrix");
    assert_eq!(report["exit_code"], 4);
    assert_eq!(pair(&report, "qemu-mps2-an385", "crc")["status"], "FAILED");
    assert_eq!(
        pair(&report, "qemu-mps2-an385", "ringbuf")["status"],
        "PASSED"
    );
    assert_eq!(
        pair(&report, "qemu-lm3s6965evb", "ringbuf")["status"],
        "PASSED"
    );
    // Sim-first: crc failed on every QEMU board it ran on, so the hardware pair never ran.
    let skipped = pair(&report, "bench", "crc");
    assert_eq!(skipped["status"], "SKIPPED");
    assert_eq!(skipped["tries"], 0);
    assert!(skipped["reason"]
        .as_str()
        .unwrap()
        .contains("qemu-mps2-an385/crc"));
    // ringbuf passed in simulation, so it ran on the board: an infrastructure error, tried again
    // once, each try in a run directory of its own.
    let offline = pair(&report, "bench", "ringbuf");
    assert_eq!(offline["status"], "ERROR", "{offline:#}");
    assert_eq!(offline["tries"], 2);
    assert!(Path::new(offline["run_dir"].as_str().unwrap()).is_dir());
    // The exclusion is recorded with where it was written.
    let left = &report["left_out"][0];
    assert_eq!(left["board"], "qemu-lm3s6965evb");
    assert!(
        left["why"].as_str().unwrap().contains("nightly.toml:4:1"),
        "{left}"
    );
    assert_eq!(report["pairs"].as_array().unwrap().len(), 5);

    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    assert_eq!(junit.matches("<testsuite ").count(), 3, "{junit}");
    assert!(junit.contains("<testsuite name=\"bench\""), "{junit}");
    assert!(junit.contains("<skipped message=\"sim-first"), "{junit}");
    assert!(junit.contains("test_crc16_known_vector"), "{junit}");
    assert!(std::fs::read_to_string(dir.join("report.md"))
        .unwrap()
        .contains("| bench | crc | SKIPPED |"));
    assert_eq!(
        repo.git(&["status", "--porcelain", "--untracked-files=no"]),
        ""
    );
}

#[test]
fn shards_split_the_pairs_by_profile_and_cover_each_once() {
    let repo = FixtureRepo::new();
    repo.write(
        "nightly.toml",
        "boards = [\"qemu-mps2-an385\", \"qemu-lm3s6965evb\"]\nprofiles = [\"crc\", \"ringbuf\", \"math\"]\n",
    );
    let mut seen = BTreeSet::new();
    for shard in ["1/2", "2/2"] {
        let out = matrix(&repo, "nightly.toml", &["--shard", shard, "--jobs", "2"]);
        assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(&out));
        let (_, report) = matrix_report(&out);
        assert_eq!(report["shard"], shard);
        let pairs = report["pairs"].as_array().unwrap();
        let left_out = report["left_out"].as_array().unwrap();
        assert_eq!(pairs.len() + left_out.len(), 6);
        let profiles: BTreeSet<&str> = pairs
            .iter()
            .map(|p| p["profile"].as_str().unwrap())
            .collect();
        for p in pairs {
            // A profile's pairs stay together, on every board.
            assert!(
                seen.insert(format!("{}/{}", p["board"], p["profile"])),
                "{p} twice"
            );
        }
        assert_eq!(pairs.len(), profiles.len() * 2, "{report:#}");
    }
    assert_eq!(seen.len(), 6, "{seen:?}");
}

#[test]
fn manifest_mistakes_are_named_at_their_line_before_anything_runs() {
    let repo = FixtureRepo::new();
    repo.write(
        "typo.toml",
        "boards = [\"qemu-mps2-an385\"]\nprofiles = [\"crc\"]\n[[exclude]]\nboard = \"qemu-mps2-an38\"\n",
    );
    let out = matrix(&repo, "typo.toml", &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("typo.toml:3:1"), "{}", text(&out));
    assert!(text(&out).contains("matches no pair"), "{}", text(&out));

    repo.write(
        "missing.toml",
        "boards = [\"qemu-mps2-an385\"]\nprofiles = [\"crc\", \"no-such-profile\"]\n",
    );
    let out = matrix(&repo, "missing.toml", &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("missing.toml:2:20"), "{}", text(&out));
    assert!(!repo.path().join(".fwfix/runs").exists());
    assert!(!repo.path().join(".fwfix/matrix").exists());

    let out = matrix(&repo, "missing.toml", &["--shard", "3/2"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

/// The manifest's `repeat` runs each pair that many times: the fixture's really flaky image
/// (its verdict follows the random run nonce) gets the flaky call in the pair's report, Surefire's
/// `<flakyFailure>`s in the matrix's one junit.xml, and FLAKY in the page's grid. (All 24 runs
/// agreeing by chance: 1 in 8 million.)
#[test]
fn a_repeated_matrix_calls_a_really_flaky_test_flaky_everywhere() {
    let repo = FixtureRepo::new();
    repo.write(
        "ci/flaky.toml",
        "name = \"flaky\"\n[build]\ncommand = \"make BOARD={machine} build/{machine}/test_flaky.elf\"\n\
         artifact = \"build/{machine}/test_flaky.elf\"\n[test]\nharness = \"unity\"\ntimeout_s = 20\n",
    );
    repo.write(
        "ci/nightly.toml",
        "boards = [\"qemu-mps2-an385\"]\nprofiles = [\"flaky.toml\"]\nrepeat = 24\n",
    );
    let out = matrix(&repo, "ci/nightly.toml", &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let (dir, report) = matrix_report(&out);
    let flaky_pair = pair(&report, "qemu-mps2-an385", "flaky");
    let run = crate::common::report(Path::new(flaky_pair["run_dir"].as_str().unwrap()));
    let count = run["pass_counts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "test_flaky_depends_on_the_run")
        .unwrap()
        .clone();
    assert_eq!(count["runs"], 24);
    assert_eq!(count["call"], "FLAKY", "{count}");
    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    let failed = 24 - count["passed"].as_u64().unwrap() as usize;
    assert_eq!(junit.matches("<flakyFailure").count(), failed, "{junit}");
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains(">FLAKY</span>"), "{html}");
}
