//! In-process kernels of fwfix, timed with criterion: the parts that run once per console line,
//! per log byte, per transition or per candidate, where a slow implementation multiplies into a
//! night of lab CI. Whole-process figures (fwfix against raw QEMU, grep, git stash) are in
//! `benches/figures.rs`; `scripts/bench` runs both and writes BENCHMARKS.md.
//!
//! Inputs are the recorded logs and the fixture firmware shipped in this repository, so every
//! number can be reproduced from a clean clone.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a benchmark's setup fails loudly

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use fwfix::analysis::triage::{self, TriageContext};
use fwfix::capture::{Capture, ConsoleLine, RunEnd, Stream};
use fwfix::config::Harness;
use fwfix::machine::{next, Outcome, State};
use fwfix::repo::Repo;
use fwfix::results::{parser_for, ParseContext};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// Every recorded triage log, concatenated: build errors, flash tools, crashes, runner output.
fn triage_corpus() -> String {
    let mut names: Vec<PathBuf> = std::fs::read_dir(data("tests/data/triage"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    names.sort();
    let mut text = String::new();
    for name in names {
        text.push_str(&String::from_utf8_lossy(&std::fs::read(name).unwrap()));
        text.push('\n');
    }
    text
}

fn triage_kernel(c: &mut Criterion) {
    // The corpus repeated to about 4 MiB, so per-call overhead does not dominate.
    let one = triage_corpus();
    let text = one.repeat((4 << 20) / one.len().max(1) + 1);
    let mut group = c.benchmark_group("triage");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.sample_size(10);
    group.bench_function("classify_4MiB", |b| {
        b.iter(|| triage::classify(black_box(&text), &TriageContext::default()))
    });
    group.finish();
}

fn unity_capture() -> Capture {
    let text = std::fs::read_to_string(data("tests/data/triage/unity_fail.log")).unwrap();
    // A long run: the recorded failing image's output, repeated as a board would print it over
    // many test groups, ending with the last copy's verdict.
    let lines = text.lines().cycle().take(text.lines().count() * 200);
    Capture {
        lines: lines
            .enumerate()
            .map(|(i, l)| ConsoleLine {
                t_ms: i as u64,
                stream: Stream::Uart,
                text: l.to_string(),
            })
            .collect(),
        end: RunEnd::Verdict,
        fault: None,
        duration_ms: 0,
        truncated: false,
        exit_code: None,
        stopped_at: None,
        nonce: None,
        faults_watched: false,
    }
}

fn parser_kernel(c: &mut Criterion) {
    let capture = unity_capture();
    let parser = parser_for(&Harness::Unity);
    let ctx = ParseContext::default();
    let mut group = c.benchmark_group("parse");
    group.throughput(Throughput::Elements(capture.lines.len() as u64));
    group.bench_function("unity_lines", |b| {
        b.iter(|| parser.parse(black_box(&capture), &ctx))
    });
    group.finish();
}

fn transition_kernel(c: &mut Criterion) {
    let pairs: Vec<(State, Outcome)> = State::ALL
        .into_iter()
        .flat_map(|s| Outcome::all().into_iter().map(move |o| (s, o)))
        .collect();
    let mut group = c.benchmark_group("machine");
    group.throughput(Throughput::Elements(pairs.len() as u64));
    group.bench_function("next_every_pair", |b| {
        b.iter(|| {
            for (s, o) in &pairs {
                let _ = black_box(next(*s, *o));
            }
        })
    });
    group.finish();
}

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args([
            "-c",
            "user.name=bench",
            "-c",
            "user.email=bench@example.invalid",
        ])
        .args(args)
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?} failed");
}

/// A copy of the fixture firmware committed in a fresh repository.
fn fixture_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let status = Command::new("cp")
        .arg("-a")
        .arg(data("fixtures/fwtests/."))
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(status.success());
    git(dir.path(), &["init", "-q"]);
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-q", "-m", "fixture"]);
    dir
}

fn apply_kernel(c: &mut Criterion) {
    let dir = fixture_repo();
    let repo = Repo::open(dir.path()).unwrap();
    let diff = std::fs::read(data("fixtures/fwtests/patches/04-fixes-crc16.diff")).unwrap();
    let crc = dir.path().join("src/crc.c");
    let original = std::fs::read(&crc).unwrap();
    c.bench_function("repo/apply_fix_patch", |b| {
        b.iter_batched(
            || std::fs::write(&crc, &original).unwrap(),
            |()| repo.apply_patch(black_box(&diff)).unwrap(),
            BatchSize::PerIteration,
        )
    });
}

/// The repository shape: 20,000 tracked files, 100 modified, 20 staged, 20 untracked.
fn large_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for d in 0..200 {
        let sub = dir.path().join(format!("src/m{d:03}"));
        std::fs::create_dir_all(&sub).unwrap();
        for f in 0..100 {
            std::fs::write(
                sub.join(format!("f{f:03}.c")),
                format!("int m{d}_f{f}(void) {{ return {f}; }}\n"),
            )
            .unwrap();
        }
    }
    git(dir.path(), &["init", "-q"]);
    // No `git gc --auto` behind the benchmark's back: the commit of 20k loose objects would start
    // one in the background, and its deleting them while criterion samples is what was measured.
    // The history is packed, as in a repository that has seen a gc, without deleting the loose
    // copies (a burst of deletions slows every file creation after it on ext4 for minutes).
    git(dir.path(), &["config", "gc.auto", "0"]);
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-q", "-m", "20k files"]);
    git(dir.path(), &["repack", "-a", "-q"]);
    // As in a repository whose files were not all written this second: an index written in the
    // same second as the files holds them "racily clean", and every status would hash them all.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    git(dir.path(), &["update-index", "-q", "--refresh"]);
    for i in 0..100 {
        let f = dir.path().join(format!("src/m{:03}/f{:03}.c", i, i % 100));
        std::fs::write(f, format!("int modified_{i};\n")).unwrap();
    }
    for i in 0..20 {
        let rel = format!("src/m{:03}/f{:03}.c", 100 + i, i);
        std::fs::write(dir.path().join(&rel), format!("int staged_{i};\n")).unwrap();
        git(dir.path(), &["add", &rel]);
    }
    for i in 0..20 {
        std::fs::write(
            dir.path().join(format!("src/new_{i}.c")),
            format!("int untracked_{i};\n"),
        )
        .unwrap();
    }
    dir
}

fn snapshot_kernel(c: &mut Criterion) {
    let dir = large_repo();
    let repo = Repo::open(dir.path()).unwrap();
    let patched = dir.path().join("src/m150/f050.c");
    let mut round = 0u64;
    let mut group = c.benchmark_group("repo");
    group.sample_size(10);
    group.bench_function("snapshot_and_rollback_20k", |b| {
        b.iter(|| {
            round += 1;
            let snap = repo.snapshot("bench", &format!("r{round}")).unwrap();
            std::fs::write(&patched, "int patched;\n").unwrap();
            repo.restore(&snap).unwrap()
        })
    });
    group.finish();
}

criterion_group!(
    kernels,
    triage_kernel,
    parser_kernel,
    transition_kernel,
    apply_kernel,
    snapshot_kernel
);
criterion_main!(kernels);
