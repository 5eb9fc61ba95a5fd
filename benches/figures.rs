//! Whole-process figures: fwfix against the tool a lab would otherwise run, measured side by side
//! in the same run, and written to BENCHMARKS.md. Run through `scripts/bench` (which builds the
//! release binary, installs hyperfine and the pytest-embedded reference, and runs the criterion
//! kernels first); `cargo test` builds this target but never runs the measurements.
//!
//! Each figure is a pair (or more) of shell commands timed with hyperfine in interleaved rounds —
//! every command gets a few runs in round 1, then again in round 2, ... — so a drift of the machine
//! during the run lands on both sides. The table gives medians with min and max over every run,
//! and the ratio of fwfix's median to its reference's.
//!
//! Usage (after `cargo bench --no-run`): `figures --bench [--quick] [--out FILE]`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a benchmark's setup fails loudly
#![allow(clippy::print_stdout, clippy::print_stderr)] // a benchmark reports on the terminal

use serde_json::Value;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const FWFIX: &str = env!("CARGO_BIN_EXE_fwfix");

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// How hard to measure.
#[derive(Clone, Copy)]
struct Effort {
    rounds: usize,
    runs: usize,
    triage_bytes: u64,
    /// How long the RTOS capture figure runs the scheduler fixture.
    rtos_seconds: u64,
    /// Whether the first round starts with a warm-up run of each command (the first fwfix run in
    /// a repository fills its caches).
    warmup: bool,
    quick: bool,
}

impl Effort {
    /// For what takes seconds a run (pytest-embedded's expect timeout, a hang): one round of one
    /// run and no warm-up in quick mode, which still shows its order of magnitude.
    fn slow(self) -> Effort {
        if self.quick {
            Effort {
                rounds: 1,
                runs: 1,
                warmup: false,
                ..self
            }
        } else {
            self
        }
    }
}

/// One measured command: every run's wall time, and its mean user and system CPU time.
#[derive(Clone, Default)]
struct Timing {
    times: Vec<f64>,
    user: Vec<f64>,
    system: Vec<f64>,
}

impl Timing {
    fn median(&self) -> f64 {
        median(&self.times)
    }
    fn min(&self) -> f64 {
        self.times.iter().copied().fold(f64::INFINITY, f64::min)
    }
    fn max(&self) -> f64 {
        self.times.iter().copied().fold(0.0, f64::max)
    }
    /// Median CPU time (user + system, children included) of one run.
    fn cpu(&self) -> f64 {
        median(&self.user) + median(&self.system)
    }
}

fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len().is_multiple_of(2) {
        (v[mid - 1] + v[mid]) / 2.0
    } else {
        v[mid]
    }
}

fn hyperfine() -> String {
    let local = root().join("target/bench-tools/bin/hyperfine");
    if local.exists() {
        return local.display().to_string();
    }
    "hyperfine".to_string()
}

/// Times `commands` (label, shell command) in `effort.rounds` interleaved rounds of
/// `effort.runs` runs each, the first round after a warm-up run if `effort.warmup`. Non-zero
/// exits are expected (a failing test exits 1).
fn measure(commands: &[(&str, String)], effort: Effort, scratch: &Path) -> Vec<Timing> {
    let mut timings = vec![Timing::default(); commands.len()];
    for round in 0..effort.rounds {
        for (i, (label, command)) in commands.iter().enumerate() {
            let json = scratch.join("hyperfine.json");
            let mut cmd = Command::new(hyperfine());
            cmd.args(["--style", "none", "-i", "--runs"])
                .arg(effort.runs.to_string())
                .arg("--export-json")
                .arg(&json);
            if round == 0 && effort.warmup {
                cmd.args(["--warmup", "1"]);
            }
            let status = cmd
                .arg("--command-name")
                .arg(label)
                .arg(command)
                .stdout(Stdio::null())
                .status()
                .expect("hyperfine runs (scripts/bench installs it)");
            assert!(status.success(), "hyperfine failed on {command}");
            let value: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
            let result = &value["results"][0];
            let floats = |key: &str| -> Vec<f64> {
                result[key]
                    .as_array()
                    .map(|a| a.iter().filter_map(Value::as_f64).collect())
                    .unwrap_or_default()
            };
            timings[i].times.extend(floats("times"));
            timings[i]
                .user
                .push(result["user"].as_f64().unwrap_or(f64::NAN));
            timings[i]
                .system
                .push(result["system"].as_f64().unwrap_or(f64::NAN));
        }
    }
    timings
}

fn sh(dir: &Path, script: &str) {
    let status = Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "`{script}` failed in {}", dir.display());
}

fn quote(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', r"'\''"))
}

/// The fixture firmware in a fresh git repository, every image built for mps2-an385.
fn fixture_repo(scratch: &Path) -> PathBuf {
    let repo = scratch.join("fw");
    std::fs::create_dir_all(&repo).unwrap();
    sh(
        scratch,
        &format!(
            "cp -a {}/. {} && cd {} && rm -rf build && git init -q && git add -A && \
             git -c user.name=bench -c user.email=bench@example.invalid commit -q -m fixture && \
             make -s BOARD=mps2-an385",
            quote(&root().join("fixtures/fwtests")),
            quote(&repo),
            quote(&repo)
        ),
    );
    // A profile like the shipped `event` one with the 3 s timeout of the hang figure.
    std::fs::write(
        repo.join("hang3s.toml"),
        "name = \"hang3s\"\n[build]\ncommand = \"make BOARD={machine} build/{machine}/test_event.elf\"\n\
         artifact = \"build/{machine}/test_event.elf\"\n[test]\nharness = \"unity\"\ntimeout_s = 3\n",
    )
    .unwrap();
    repo
}

fn qemu_raw(elf: &Path, extra: &str) -> String {
    qemu_raw_on("mps2-an385", elf, extra)
}

fn qemu_raw_on(machine: &str, elf: &Path, extra: &str) -> String {
    format!(
        "qemu-system-arm -M {machine} -display none -monitor none -serial stdio \
         -semihosting-config enable=on,target=native {extra} -kernel {} >/dev/null 2>&1",
        quote(elf)
    )
}

/// pytest-embedded running `benches/pytest_embedded/test_unity.py` on `elf` under its QEMU
/// service, when scripts/bench made its venv.
fn pytest_embedded(elf: &Path) -> Option<String> {
    let pytest = root().join("target/bench-venv/bin/pytest");
    pytest.exists().then(|| {
        format!(
            "cd {} && {} -q -p no:cacheprovider --embedded-services qemu \
             --qemu-prog-path qemu-system-arm \
             --qemu-cli-args '-M mps2-an385 -nographic -semihosting-config enable=on,target=native' \
             --qemu-image-path {} test_unity.py >/dev/null 2>&1",
            quote(&root().join("benches/pytest_embedded")),
            quote(&pytest),
            quote(elf)
        )
    })
}

fn fwfix_test(repo: &Path, profile: &str, extra: &str) -> String {
    format!(
        "{} test --repo {} --board qemu-mps2-an385 --profile {profile} --quiet {extra} >/dev/null 2>&1",
        quote(Path::new(FWFIX)),
        quote(repo)
    )
}

/// A row of BENCHMARKS.md.
struct Row {
    figure: String,
    fwfix: String,
    reference: String,
    ratio: String,
    target: String,
    met: String,
    command: String,
}

fn ms(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.3} s")
    } else {
        format!("{:.1} ms", s * 1000.0)
    }
}

fn spread(t: &Timing) -> String {
    format!("{} [{}–{}]", ms(t.median()), ms(t.min()), ms(t.max()))
}

fn verdict(ok: bool) -> String {
    if ok { "yes" } else { "**no**" }.to_string()
}

/// Wall time from QEMU's launch to the first fault line on its `-d int` log, as a runner reading
/// that log would see it; the reference of the crash figure.
fn qemu_fault_line_latency(elf: &Path) -> f64 {
    let start = Instant::now();
    let mut child = Command::new("qemu-system-arm")
        .args(["-M", "mps2-an385", "-display", "none", "-monitor", "none"])
        .args([
            "-serial",
            "null",
            "-semihosting-config",
            "enable=on,target=native",
        ])
        .args(["-d", "int,guest_errors", "-kernel"])
        .arg(elf)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut seen = f64::NAN;
    for line in BufReader::new(stderr).lines().map_while(Result::ok) {
        if line.contains("taking pending nonsecure exception 3") {
            seen = start.elapsed().as_secs_f64();
            break;
        }
        if start.elapsed() > Duration::from_secs(5) {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    seen
}

fn figure_pass(repo: &Path, effort: Effort, scratch: &Path, rows: &mut Vec<Row>) {
    let elf = repo.join("build/mps2-an385/test_ringbuf.elf");
    let make = format!(
        "make -s -C {} BOARD=mps2-an385 build/mps2-an385/test_ringbuf.elf",
        quote(repo)
    );
    let cmds = [
        ("fwfix test", fwfix_test(repo, "ringbuf", "")),
        ("make + qemu", format!("{make} && {}", qemu_raw(&elf, ""))),
        ("qemu", qemu_raw(&elf, "")),
    ];
    let t = measure(&cmds, effort, scratch);
    let ratio = t[0].median() / t[1].median();
    let pytest = pytest_embedded(&elf)
        .map(|c| measure(&[("pytest-embedded", c)], effort.slow(), scratch))
        .map(|p| format!("; pytest-embedded one test {}", spread(&p[0])))
        .unwrap_or_default();
    rows.push(Row {
        figure: "one passing test, image up to date".into(),
        fwfix: spread(&t[0]),
        reference: format!(
            "make-nothing + QEMU {}; raw QEMU {}{pytest}",
            spread(&t[1]),
            spread(&t[2])
        ),
        ratio: format!(
            "{ratio:.2}× (raw QEMU {:.2}×)",
            t[0].median() / t[2].median()
        ),
        target: "≤ 1.10× make + QEMU".into(),
        met: verdict(ratio <= 1.10),
        command: "fwfix test --profile ringbuf --board qemu-mps2-an385 --quiet".into(),
    });
}

fn figure_repeat(repo: &Path, effort: Effort, scratch: &Path, rows: &mut Vec<Row>) {
    let elf = repo.join("build/mps2-an385/test_ringbuf.elf");
    let loop20 = format!("for i in $(seq 20); do {}; done", qemu_raw(&elf, ""));
    let cmds = [
        (
            "fwfix --repeat 20",
            fwfix_test(repo, "ringbuf", "--repeat 20"),
        ),
        ("20 × qemu", loop20),
    ];
    let t = measure(&cmds, effort, scratch);
    let per = |x: &Timing| x.median() / 20.0;
    let ratio = per(&t[0]) / per(&t[1]);
    let added = per(&t[0]) - per(&t[1]);
    rows.push(Row {
        figure: "`--repeat 20`, per test".into(),
        fwfix: ms(per(&t[0])),
        reference: format!("20 raw QEMU runs: {} each", ms(per(&t[1]))),
        // With the next attempt's QEMU started during the current one, fwfix can beat a plain
        // loop: a negative difference is "less", not "+-".
        ratio: if added >= 0.0 {
            format!("{ratio:.2}× (+{} a test)", ms(added))
        } else {
            format!("{ratio:.2}× ({} less a test)", ms(-added))
        },
        target: "≤ 1.05×, ≤ 2 ms added per test".into(),
        met: verdict(ratio <= 1.05 && added <= 0.002),
        command: "fwfix test --profile ringbuf --repeat 20 --quiet".into(),
    });
}

fn figure_crash(repo: &Path, effort: Effort, scratch: &Path, rows: &mut Vec<Row>) {
    let elf = repo.join("build/mps2-an385/test_sensor.elf");
    let t = measure(
        &[("fwfix crash", fwfix_test(repo, "sensor", ""))],
        effort,
        scratch,
    );
    let pytest = pytest_embedded(&elf)
        .map(|c| measure(&[("pytest-embedded", c)], effort.slow(), scratch))
        .map(|p| format!("; pytest-embedded (its expect timeout) {}", spread(&p[0])))
        .unwrap_or_default();
    let samples: Vec<f64> = (0..effort.rounds * effort.runs)
        .map(|_| qemu_fault_line_latency(&elf))
        .collect();
    let reference = median(&samples);
    rows.push(Row {
        figure: "spinning HardFault, launch to verdict".into(),
        fwfix: spread(&t[0]),
        reference: format!(
            "fault line on QEMU's `-d int` log {}{pytest}",
            ms(reference)
        ),
        ratio: format!("{:.1}×", t[0].median() / reference),
        target: "≤ 100 ms, function named".into(),
        met: verdict(t[0].median() <= 0.100),
        command: "fwfix test --profile sensor --board qemu-mps2-an385 --quiet".into(),
    });
}

fn figure_hang(repo: &Path, effort: Effort, scratch: &Path, rows: &mut Vec<Row>) {
    let elf = repo.join("build/mps2-an385/test_event.elf");
    let profile = repo.join("hang3s.toml");
    let hang_effort = if effort.quick {
        effort.slow()
    } else {
        Effort {
            rounds: 2,
            runs: 3,
            ..effort
        }
    };
    let cmds = [
        (
            "fwfix hang",
            fwfix_test(repo, &profile.display().to_string(), ""),
        ),
        (
            "timeout 3 qemu",
            format!("timeout 3 {}", qemu_raw(&elf, "")),
        ),
    ];
    let t = measure(&cmds, hang_effort, scratch);
    let added = t[0].median() - t[1].median();
    rows.push(Row {
        figure: "hang at a 3 s timeout".into(),
        fwfix: spread(&t[0]),
        reference: format!("`timeout 3 qemu…` {}", spread(&t[1])),
        ratio: format!("+{}", ms(added)),
        target: "≤ +30 ms".into(),
        met: verdict(added <= 0.030),
        command: "fwfix test --profile hang3s.toml (timeout_s = 3) --quiet".into(),
    });
}

/// Four QEMU tests (two boards × two profiles, images up to date) with `--jobs 2` against the
/// same four one at a time.
fn figure_jobs(repo: &Path, effort: Effort, scratch: &Path, rows: &mut Vec<Row>) {
    sh(repo, "make -s BOARD=lm3s6965evb");
    let four = |jobs: u32| {
        format!(
            "{} test --repo {} --board qemu-mps2-an385 --board qemu-lm3s6965evb \
             --profile ringbuf --profile math --jobs {jobs} --quiet >/dev/null 2>&1",
            quote(Path::new(FWFIX)),
            quote(repo)
        )
    };
    // The bound the machine sets: the same four make + QEMU pairs with no fwfix at all, two
    // shells taking two pairs each against one shell taking all four.
    let pair = |machine: &str, profile: &str| {
        let target = format!("build/{machine}/test_{profile}.elf");
        format!(
            "make -s -C {} BOARD={machine} {target} && {}",
            quote(repo),
            qemu_raw_on(machine, &repo.join(&target), "")
        )
    };
    let [a, b, c, d] = [
        pair("mps2-an385", "ringbuf"),
        pair("mps2-an385", "math"),
        pair("lm3s6965evb", "ringbuf"),
        pair("lm3s6965evb", "math"),
    ];
    let raw_two = format!("({a}; {b}) & ({c}; {d}) & wait");
    let raw_one = format!("{a}; {b}; {c}; {d}");
    let t = measure(
        &[
            ("jobs 2", four(2)),
            ("jobs 1", four(1)),
            ("raw pairs 2 at a time", raw_two),
            ("raw pairs 1 at a time", raw_one),
        ],
        effort,
        scratch,
    );
    let speedup = t[1].median() / t[0].median();
    let raw_speedup = t[3].median() / t[2].median();
    // No schedule runs a `--jobs 2` run's CPU time in less than that time over the cores, so
    // `--jobs 1`'s wall time over that floor bounds the ratio this machine allows fwfix.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let floor = t[0].cpu() / cores as f64;
    let cpu_bound = t[1].median() / floor;
    rows.push(Row {
        figure: "4 QEMU tests at once on this machine".into(),
        fwfix: format!("`--jobs 2` {}", spread(&t[0])),
        reference: format!(
            "`--jobs 1` {}; the same 4 make + QEMU pairs without fwfix: 2 at a time {}, one at \
             a time {} ({raw_speedup:.2}× throughput, the machine's bound); CPU of a run \
             (children included): `--jobs 2` {}, `--jobs 1` {}, the bare pairs {}: {cores} \
             cores run the `--jobs 2` run's in no less than {}, so at most \
             {cpu_bound:.2}× here",
            spread(&t[1]),
            spread(&t[2]),
            spread(&t[3]),
            ms(t[0].cpu()),
            ms(t[1].cpu()),
            ms(t[3].cpu()),
            ms(floor)
        ),
        ratio: format!("{speedup:.2}× throughput"),
        target: "`--jobs 2` ≥ 1.8× one job's throughput".into(),
        met: verdict(speedup >= 1.8),
        command: "fwfix test --board qemu-mps2-an385 --board qemu-lm3s6965evb --profile ringbuf --profile math --jobs 2".into(),
    });
}

/// A log `name` of `bytes` made of the logs in `dir` (below `tests/data/triage`), repeated.
fn triage_log(scratch: &Path, name: &str, dir: &str, bytes: u64) -> PathBuf {
    let path = scratch.join(name);
    let mut seed = Vec::new();
    let mut names: Vec<PathBuf> = std::fs::read_dir(root().join("tests/data/triage").join(dir))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    names.sort();
    for n in names {
        seed.extend(std::fs::read(n).unwrap());
        seed.push(b'\n');
    }
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let mut written = 0u64;
    while written < bytes {
        out.write_all(&seed).unwrap();
        written += seed.len() as u64;
    }
    out.flush().unwrap();
    path
}

/// Peak RSS in KiB of one run of `argv`, from the kernel's accounting of this process's children
/// (measured before any other child ran, so the peak is this one's).
fn peak_rss_kib(argv: &[String]) -> i64 {
    let status = Command::new(&argv[0])
        .args(&argv[1..])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    let _ = status;
    nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
        .map(|u| u.max_rss())
        .unwrap_or(-1)
}

/// Triage's speed on the recorded fixture logs repeated (ordinary build and boot output with
/// its failures), and on the real corpus repeated (varied evidence, every line a kind of its
/// own: the lazy DFA's states are what it costs).
fn figure_triage(effort: Effort, scratch: &Path, rows: &mut Vec<Row>) {
    let big = triage_log(scratch, "big.log", "", effort.triage_bytes);
    triage_row(effort, scratch, &big, "", rows);
    let real = triage_log(scratch, "real.log", "real", effort.triage_bytes / 4);
    triage_row(effort, scratch, &real, " of the real corpus repeated", rows);
}

fn triage_row(effort: Effort, scratch: &Path, log: &Path, what: &str, rows: &mut Vec<Row>) {
    let size = std::fs::metadata(log).unwrap().len() as f64;
    let rss = peak_rss_kib(&[
        FWFIX.to_string(),
        "triage".into(),
        log.display().to_string(),
    ]);
    // The RSS reading just read the log: it is in the page cache already.
    let triage_effort = Effort {
        rounds: 2,
        runs: if effort.quick { 1 } else { 3 },
        warmup: !effort.quick,
        ..effort
    };
    let cmds = [
        (
            "fwfix triage",
            format!(
                "{} triage {} >/dev/null",
                quote(Path::new(FWFIX)),
                quote(log)
            ),
        ),
        (
            "grep -c -E",
            format!(
                // Into a file: GNU grep stops at the first match when its output is /dev/null.
                "grep -c -E 'error|fatal|FAIL|panic|Fault|assert' {} > {}",
                quote(log),
                quote(&scratch.join("grep.out"))
            ),
        ),
    ];
    let t = measure(&cmds, triage_effort, scratch);
    let mbs = |x: &Timing| size / x.median() / 1e6;
    rows.push(Row {
        figure: format!("`fwfix triage` on a {:.0} MB log{what}", size / 1e6),
        fwfix: format!("{:.0} MB/s, peak RSS {} MiB", mbs(&t[0]), rss / 1024),
        reference: format!("`grep -c -E` {:.0} MB/s", mbs(&t[1])),
        ratio: format!("{:.2}× grep's time", t[0].median() / t[1].median()),
        target: "≥ 400 MB/s, RSS flat".into(),
        met: verdict(mbs(&t[0]) >= 400.0),
        command: format!(
            "fwfix triage {}",
            log.file_name().unwrap_or_default().to_string_lossy()
        ),
    });
}

/// The criterion estimate (median, seconds) of a kernel that `cargo bench --bench kernels` ran.
fn criterion_median(id: &str) -> Option<f64> {
    let path = root()
        .join("target/criterion")
        .join(id)
        .join("new/estimates.json");
    let value: Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    value["median"]["point_estimate"]
        .as_f64()
        .map(|ns| ns / 1e9)
}

/// The stash round trip on the repository shape the snapshot kernel (benches/kernels.rs) builds:
/// 20,000 tracked files of their own content, 100 modified, 20 staged, 20 untracked.
fn figure_snapshot(effort: Effort, scratch: &Path, rows: &mut Vec<Row>) {
    let repo = scratch.join("big-repo");
    std::fs::create_dir_all(&repo).unwrap();
    sh(
        &repo,
        "for d in $(seq -f %03g 0 199); do mkdir -p src/m$d; for f in $(seq -f %03g 0 99); do \
           echo \"int m${d}_f$f(void) { return $f; }\" > src/m$d/f$f.c; done; done && \
         git init -q && git config gc.auto 0 && git add -A && \
         git -c user.name=bench -c user.email=bench@example.invalid commit -q -m 20k && git repack -a -q && \
         sleep 1.1 && git update-index -q --refresh && \
         for i in $(seq -f %03g 0 99); do echo \"int modified_$i;\" > src/m$i/f$i.c; done && \
         for i in $(seq -f %02g 0 19); do echo \"int staged_$i;\" > src/m1$i/f0$i.c; done && \
         git add -u src/m1[01]? && \
         for i in $(seq 0 19); do echo \"int untracked_$i;\" > src/new_$i.c; done",
    );
    let stash = format!(
        "cd {} && git stash push -q -u && git stash pop -q",
        quote(&repo)
    );
    let t = measure(&[("git stash -u round trip", stash)], effort, scratch);
    let kernel = criterion_median("repo/snapshot_and_rollback_20k");
    let (fwfix, ratio, met) = match kernel {
        Some(k) => (
            ms(k),
            format!("{:.2}×", k / t[0].median()),
            verdict(k <= 0.5 * t[0].median()),
        ),
        None => (
            "not measured (run `cargo bench --bench kernels` first)".into(),
            "—".into(),
            "—".into(),
        ),
    };
    rows.push(Row {
        figure: "snapshot + rollback, 20k-file repo, 100 modified / 20 staged / 20 untracked"
            .into(),
        fwfix,
        reference: format!("`git stash push -u` + `pop` {}", spread(&t[0])),
        ratio,
        target: "≤ 0.5× the stash round trip".into(),
        met,
        command: "cargo bench --bench kernels -- repo/snapshot_and_rollback_20k".into(),
    });
}

/// The scheduler fixture (fixtures/rtos: 1 kHz SysTick, PendSV, five tasks, a status line a
/// second, never exits) for `effort.rtos_seconds` under fwfix — a pass pattern that never comes,
/// so the run lasts until its timeout — against bare QEMU for as long: CPU time, and the host
/// lines fwfix keeps in console.log per minute of run.
fn figure_rtos(effort: Effort, scratch: &Path, rows: &mut Vec<Row>) {
    let repo = scratch.join("rtos");
    std::fs::create_dir_all(&repo).unwrap();
    sh(
        scratch,
        &format!(
            "cp -a {}/. {} && cd {} && rm -rf build && git init -q && git add -A && \
             git -c user.name=bench -c user.email=bench@example.invalid commit -q -m rtos && \
             make -s BOARD=mps2-an385 VARIANT=ok",
            quote(&root().join("fixtures/rtos")),
            quote(&repo),
            quote(&repo)
        ),
    );
    let secs = effort.rtos_seconds;
    let profile = repo.join("minute.toml");
    std::fs::write(
        &profile,
        format!(
            "name = \"minute\"\n[build]\ncommand = \"make BOARD={{machine}} VARIANT=ok\"\n\
             artifact = \"build/{{machine}}/ok/rtos.elf\"\n[test]\nharness = \"regex\"\n\
             timeout_s = {secs}\n[test.regex]\ntype = \"one_line\"\npatterns = [\"^never printed$\"]\n"
        ),
    )
    .unwrap();
    let elf = repo.join("build/mps2-an385/ok/rtos.elf");
    let once = Effort {
        rounds: 1,
        runs: if effort.quick { 1 } else { 2 },
        ..effort.slow()
    };
    let cmds = [
        (
            "fwfix rtos",
            fwfix_test(&repo, &profile.display().to_string(), ""),
        ),
        (
            "bare qemu",
            format!("timeout {secs} {}", qemu_raw(&elf, "")),
        ),
    ];
    let t = measure(&cmds, once, scratch);
    // The newest run's console: every UART byte plus the host lines fwfix kept.
    let runs = repo.join(".fwfix/runs");
    let console = std::fs::read_dir(&runs)
        .unwrap()
        .flatten()
        .map(|e| e.path().join("iter-000/console.log"))
        .filter(|p| p.is_file())
        .max_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok());
    let bytes = console
        .and_then(|p| std::fs::metadata(p).ok())
        .map_or(0, |m| m.len());
    let per_minute = bytes as f64 * 60.0 / secs as f64;
    rows.push(Row {
        figure: format!("RTOS capture cost, {secs} s of the scheduler fixture"),
        fwfix: format!(
            "CPU {:.2} s; console.log {:.0} KiB/min",
            t[0].cpu(),
            per_minute / 1024.0
        ),
        reference: format!("bare QEMU CPU {:.2} s", t[1].cpu()),
        ratio: format!("{:.2}× CPU", t[0].cpu() / t[1].cpu()),
        target: "host lines < 1 MB per minute".into(),
        met: verdict(per_minute < 1e6),
        command: format!("fwfix test on fixtures/rtos, timeout_s = {secs}"),
    });
}

fn machine_facts() -> String {
    let out = |cmd: &str| {
        Command::new("sh")
            .arg("-c")
            .arg(cmd)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default()
    };
    format!(
        "{} cores ({}), {}, {}, {}",
        out("nproc"),
        out("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'"),
        out("uname -sr"),
        out("qemu-system-arm --version | head -n1"),
        out("hyperfine --version 2>/dev/null || echo hyperfine")
    )
}

fn render(rows: &[Row], effort: Effort) -> String {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# fwfix benchmarks\n\nWritten by `scripts/bench{}` — do not edit by hand. Medians with \
         [min–max] over {} interleaved rounds of {} runs (hyperfine); ratios are fwfix's median \
         over its reference's, measured in the same run.{}\n\nMachine: {}\n",
        if effort.quick { " --quick" } else { "" },
        effort.rounds,
        effort.runs,
        if effort.quick {
            " Quick mode: what takes seconds a run (pytest-embedded, the hang, the RTOS capture) \
             runs once, without a warm-up run."
        } else {
            " The hang runs in 2 rounds of 3 runs, the RTOS capture in one of 2."
        },
        machine_facts()
    );
    md.push_str("| figure | fwfix | reference (same run) | ratio | target | met | reproduce |\n");
    md.push_str("|---|---|---|---|---|---|---|\n");
    for r in rows {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | `{}` |",
            r.figure, r.fwfix, r.reference, r.ratio, r.target, r.met, r.command
        );
    }
    md.push_str(include_str!("bounds.md"));
    md
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if !args.iter().any(|a| a == "--bench") {
        // `cargo test --all-targets` runs bench targets without --bench: nothing to measure.
        return;
    }
    let quick = args.iter().any(|a| a == "--quick");
    let out = args
        .iter()
        .position(|a| a == "--out")
        .and_then(|i| args.get(i + 1))
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("BENCHMARKS.md"));
    let effort = if quick {
        Effort {
            rounds: 2,
            runs: 3,
            // The size the target names: on less, the fixed start (compiling the rule set,
            // building its first DFA states) weighs in and the figure is another one.
            triage_bytes: 1 << 30,
            rtos_seconds: 3,
            warmup: true,
            quick,
        }
    } else {
        Effort {
            rounds: 4,
            runs: 5,
            triage_bytes: 1 << 30,
            rtos_seconds: 60,
            warmup: true,
            quick,
        }
    };
    let scratch = tempfile::tempdir().unwrap();
    let mut rows = Vec::new();
    let scratch = scratch.path();
    let timed = |name: &str, figure: &mut dyn FnMut()| {
        let start = Instant::now();
        figure();
        eprintln!(
            "figures: {name} took {:.1} s",
            start.elapsed().as_secs_f64()
        );
    };
    // First: its RSS reading needs to be the first child's.
    timed("triage", &mut || figure_triage(effort, scratch, &mut rows));
    let repo = fixture_repo(scratch);
    timed("pass", &mut || {
        figure_pass(&repo, effort, scratch, &mut rows)
    });
    timed("repeat", &mut || {
        figure_repeat(&repo, effort, scratch, &mut rows)
    });
    timed("crash", &mut || {
        figure_crash(&repo, effort, scratch, &mut rows)
    });
    timed("hang", &mut || {
        figure_hang(&repo, effort, scratch, &mut rows)
    });
    timed("jobs", &mut || {
        figure_jobs(&repo, effort, scratch, &mut rows)
    });
    timed("snapshot", &mut || {
        figure_snapshot(effort, scratch, &mut rows)
    });
    timed("rtos", &mut || figure_rtos(effort, scratch, &mut rows));
    let md = render(&rows, effort);
    std::fs::write(&out, &md).unwrap();
    print!("{md}");
    eprintln!("figures: wrote {}", out.display());
}
