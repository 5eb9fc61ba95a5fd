//! report.html in a real headless browser (Debian's Chromium): a real fix run's page renders,
//! its timeline SVG and per-iteration grid are in the DOM the browser built, and a screenshot is
//! kept under `target/test-artefacts/` for a person to look at.

use crate::common::{fixture_queue, fwfix, report, run_dir, text, FixtureRepo};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Fails loudly when Chromium is missing: the page is checked in a real browser, never skipped.
fn chromium() -> &'static str {
    let found = Command::new("sh")
        .args(["-c", "command -v chromium"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    assert!(
        found,
        "chromium is not installed: run `bash scripts/prerequisites.sh` (report.html is tested in a real browser)"
    );
    "chromium"
}

/// Runs headless Chromium on `page` with `args` and a profile of its own, and returns its stdout.
fn headless(page: &Path, args: &[&str]) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            &format!("--user-data-dir={}", profile.path().display()),
        ])
        .args(args)
        .arg(format!("file://{}", page.display()))
        .env("HOME", profile.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "chromium failed on {}: {}",
        page.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn artefacts() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-artefacts");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_failed_fix_run_page_renders_in_chromium_with_its_timeline_grid_and_logs() {
    let repo = FixtureRepo::new();
    // One candidate that fixes the target and breaks two others: a baseline, an iteration that
    // regressed, the loop out of candidates — failures to mark on every part of the page.
    let q = fixture_queue(&["03-regresses-crc32.diff"]);
    let out = fwfix(
        &[
            "run",
            "--json",
            "--board",
            "qemu-mps2-an385",
            "--profile",
            "crc",
            "--strategy",
            "queue",
            "--patches",
            q.path().to_str().unwrap(),
        ],
        repo.path(),
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let dir = run_dir(&out);
    assert_eq!(report(&dir)["status"], "FAILURE");
    let page = dir.join("report.html");
    let html = std::fs::read_to_string(&page).unwrap();
    for external in ["<script", "<link", "http://", "https://", "src="] {
        assert!(!html.contains(external), "{external} in the page");
    }

    let dom = headless(&page, &["--dump-dom"]);
    assert!(dom.contains("<svg class=\"timeline\""), "{dom}");
    for lane in [
        "build",
        "flash/boot",
        "test",
        "analysis",
        "patch",
        "recovery",
    ] {
        assert!(
            dom.contains(&format!("\">{lane}</text>")),
            "lane {lane} missing"
        );
    }
    assert!(dom.contains("class=\"bar failed\""), "no failure marked");
    assert!(dom.contains("<h2>Tests by iteration</h2>"));
    for test in ["test_crc16_known_vector", "test_crc32_known_vector"] {
        assert!(dom.contains(test), "{test} missing");
    }
    assert!(dom.contains("<th class=\"col\">baseline</th><th class=\"col\">iteration 1</th>"));
    assert!(dom.contains("<a href=\"iter-001/patch.diff\">"));
    assert!(dom.contains("<a href=\"iter-000/console.log\">"));
    // Every relative link of the page leads to a file of the run.
    for href in html.split("href=\"").skip(1) {
        let target = &href[..href.find('"').unwrap()];
        assert!(dir.join(target).is_file(), "broken link {target}");
    }

    let png = artefacts().join("report.png");
    let _ = std::fs::remove_file(&png);
    headless(
        &page,
        &[
            &format!("--screenshot={}", png.display()),
            "--window-size=1200,2000",
            "--hide-scrollbars",
        ],
    );
    let bytes = std::fs::read(&png).unwrap();
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    let width = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
    let height = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
    assert_eq!((width, height), (1200, 2000));
}

#[test]
fn a_matrix_page_renders_in_chromium_with_a_lane_per_board_and_links_to_each_run() {
    let repo = FixtureRepo::new();
    repo.write(
        "ci/nightly.toml",
        "boards = [\"qemu-mps2-an385\", \"qemu-lm3s6965evb\"]\nprofiles = [\"crc\", \"ringbuf\"]\n",
    );
    let out = fwfix(
        &["matrix", "ci/nightly.toml", "--json", "--jobs", "2"],
        repo.path(),
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let dir = run_dir(&out);
    let page = dir.join("report.html");
    let html = std::fs::read_to_string(&page).unwrap();
    for href in html.split("href=\"").skip(1) {
        let target = &href[..href.find('"').unwrap()];
        assert!(dir.join(target).is_file(), "broken link {target}");
    }
    assert_eq!(
        html.matches("/report.html\">").count(),
        4,
        "a link per pair"
    );

    let dom = headless(&page, &["--dump-dom"]);
    assert!(dom.contains("<svg class=\"timeline\""), "{dom}");
    for board in ["qemu-mps2-an385", "qemu-lm3s6965evb"] {
        assert!(dom.contains(&format!("\">{board}</text>")), "lane {board}");
        assert!(dom.contains(&format!("<th class=\"col\">{board}</th>")));
    }
    assert!(dom.contains("<h2>Tests by board</h2>"));
    assert!(dom.contains("test_crc16_known_vector") && dom.contains("class=\"bar failed\""));

    let png = artefacts().join("matrix.png");
    let _ = std::fs::remove_file(&png);
    headless(
        &page,
        &[
            &format!("--screenshot={}", png.display()),
            "--window-size=1200,1600",
            "--hide-scrollbars",
        ],
    );
    assert!(std::fs::read(&png)
        .unwrap()
        .starts_with(b"\x89PNG\r\n\x1a\n"));
}

#[test]
fn a_bisect_page_renders_in_chromium_with_a_column_and_a_mark_per_step() {
    let repo = FixtureRepo::new();
    // good (the fix) → an unrelated change → the bug comes back → another unrelated change.
    repo.apply_fixture_patch("04-fixes-crc16.diff");
    repo.git(&["commit", "-qam", "crc16 fixed"]);
    repo.write("src/ringbuf.c", &{
        let text = std::fs::read_to_string(repo.path().join("src/ringbuf.c")).unwrap();
        format!("{text}/* tidy */\n")
    });
    repo.git(&["commit", "-qam", "ringbuf tidy"]);
    repo.git(&["revert", "--no-edit", "HEAD~1"]);
    let out = fwfix(
        &[
            "bisect",
            "--json",
            "--board",
            "qemu-mps2-an385",
            "--profile",
            "crc",
            "--good",
            "HEAD~2",
        ],
        repo.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let dir = run_dir(&out);
    let page = dir.join("report.html");
    let html = std::fs::read_to_string(&page).unwrap();
    for href in html.split("href=\"").skip(1) {
        let target = &href[..href.find('"').unwrap()];
        assert!(dir.join(target).is_file(), "broken link {target}");
    }
    let dom = headless(&page, &["--dump-dom"]);
    assert!(dom.contains("<svg class=\"timeline\""), "{dom}");
    assert!(dom.contains("<h2>Tests by step</h2>"), "{dom}");
    let steps = report(&dir)["steps"].as_array().unwrap().len();
    assert!(steps >= 1);
    assert_eq!(
        dom.matches("<th class=\"col\">step ").count(),
        steps,
        "a column per step"
    );
    assert!(
        dom.contains("class=\"bar failed\""),
        "the failing step is marked"
    );
}
