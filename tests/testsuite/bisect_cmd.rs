//! `fwfix bisect` and `fwfix run --strategy revert` end to end: real git histories made from the
//! fixture firmware, real builds, real QEMU. The main history has 32 commits on its mainline: the
//! CRC-16 fix first (good), harmless work, a flaky test, a commit that does not build (fixed by
//! the next), the culprit (the fix reverted) in the middle, and more harmless work up to HEAD.
#![allow(clippy::unwrap_used, clippy::expect_used)] // panics are how tests fail

use crate::common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

const MPS2: &str = "qemu-mps2-an385";
/// Where things are on the main history's mainline (index 0 is the good commit).
const LEN: usize = 32;
const FLAKY: usize = 5;
const BROKEN: usize = 15;
const CULPRIT: usize = 20;

/// A flaky test for test_crc.c: it counts its runs in a file on the host (semihosting file I/O,
/// path baked in at build time) and fails every third run.
const FLAKY_TEST: &str = r#"
/* Semihosting on the host (QEMU runs the image in a scratch directory, so the path is absolute). */
static int host_call(unsigned op, void *block)
{
    register unsigned r0 __asm__("r0") = op;
    register void *r1 __asm__("r1") = block;

    __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
    return (int)r0;
}

static unsigned text_len(const char *s)
{
    unsigned n = 0;

    while (s[n] != '\0') {
        n++;
    }
    return n;
}

void test_flaky_every_third_run(void)
{
    const char *path = FLAKY_COUNTER;
    char text[12] = { 0 };
    char out[12];
    unsigned n = 0, len = 0, i;
    unsigned open_r[3] = { (unsigned)path, 0u, text_len(path) };
    int h = host_call(0x01u, open_r);

    if (h != -1) {
        unsigned rd[3] = { (unsigned)h, (unsigned)text, sizeof(text) - 1u };
        unsigned cl[1] = { (unsigned)h };

        host_call(0x06u, rd);
        host_call(0x02u, cl);
        for (i = 0; text[i] >= '0' && text[i] <= '9'; i++) {
            n = n * 10u + (unsigned)(text[i] - '0');
        }
    }
    n++;
    for (i = n; i > 0u || len == 0u; i /= 10u) {
        len++;
    }
    for (i = 0; i < len; i++) {
        unsigned v = n, k;

        for (k = 1; k < len - i; k++) {
            v /= 10u;
        }
        out[i] = (char)('0' + v % 10u);
    }
    unsigned open_w[3] = { (unsigned)path, 4u, text_len(path) };
    h = host_call(0x01u, open_w);
    if (h != -1) {
        unsigned wr[3] = { (unsigned)h, (unsigned)out, len };
        unsigned cl[1] = { (unsigned)h };

        host_call(0x05u, wr);
        host_call(0x02u, cl);
    }
    if (n % 3u == 0u) {
        TEST_FAIL_MESSAGE("every third run fails");
    }
}
"#;

/// A fixture repository with a generated history, and the ids of its mainline from the good
/// commit on.
struct History {
    repo: FixtureRepo,
    line: Vec<String>,
}

impl History {
    fn id(&self, index: usize) -> &str {
        &self.line[index]
    }
}

fn commit(repo: &FixtureRepo, message: &str) -> String {
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", message]);
    repo.git(&["rev-parse", "HEAD"]).trim().to_string()
}

fn append(repo: &FixtureRepo, rel: &str, text: &str) {
    let old = std::fs::read_to_string(repo.path().join(rel)).unwrap_or_default();
    repo.write(rel, &(old + text));
}

/// A harmless commit: notes, or a comment in a module the CRC image does not link.
fn harmless(repo: &FixtureRepo, i: usize) -> String {
    if i.is_multiple_of(3) {
        append(repo, "src/ringbuf.c", &format!("/* note {i} */\n"));
    } else {
        append(repo, "NOTES.md", &format!("- change {i}\n"));
    }
    commit(repo, &format!("work {i}"))
}

/// Adds the flaky test to test_crc.c and the counter path to the build.
fn add_flaky_test(repo: &FixtureRepo) -> String {
    let path = repo.path().join("tests/test_crc.c");
    let text = std::fs::read_to_string(&path).unwrap();
    let marker = "/* The second RUN_TEST argument";
    let (head, tail) = text.split_once(marker).unwrap();
    let with_test = format!("{head}{}\n{marker}{tail}", FLAKY_TEST.trim_start());
    let line = with_test
        .lines()
        .position(|l| l == "void test_flaky_every_third_run(void)")
        .unwrap()
        + 1;
    let with_run = with_test.replace(
        "    return UNITY_END();",
        &format!("    RUN_TEST(test_flaky_every_third_run, {line});\n    return UNITY_END();"),
    );
    std::fs::write(&path, with_run).unwrap();
    let makefile = std::fs::read_to_string(repo.path().join("Makefile")).unwrap();
    let makefile = makefile.replace(
        "# -MMD -MP:",
        "# The flaky test's run counter on the host (empty: no counter, the test passes).\n\
         FLAKY_COUNTER ?=\nCFLAGS += -DFLAKY_COUNTER='\"$(FLAKY_COUNTER)\"'\n# -MMD -MP:",
    );
    repo.write("Makefile", &makefile);
    commit(repo, "tests: a test that fails every third run")
}

/// The main history: see the file's header.
fn history() -> History {
    let repo = FixtureRepo::new();
    repo.apply_fixture_patch("04-fixes-crc16.diff");
    let mut line = vec![commit(&repo, "crc16: start from 0xFFFF")];
    for i in 1..LEN {
        let id = match i {
            FLAKY => add_flaky_test(&repo),
            BROKEN => {
                append(&repo, "src/crc.c", "\nint half_done = ;\n");
                commit(&repo, "crc: start a refactor (does not build)")
            }
            i if i == BROKEN + 1 => {
                let text = std::fs::read_to_string(repo.path().join("src/crc.c")).unwrap();
                repo.write("src/crc.c", &text.replace("\nint half_done = ;\n", ""));
                commit(&repo, "crc: finish the refactor")
            }
            CULPRIT => {
                let patch = fixture_dir().join("patches/04-fixes-crc16.diff");
                repo.git(&["apply", "-R", patch.to_str().unwrap()]);
                commit(&repo, "crc16: simplify the start value")
            }
            i => harmless(&repo, i),
        };
        line.push(id);
    }
    History { repo, line }
}

/// A profile that bakes the flaky test's counter file (outside the repository) into the build.
fn flaky_profile(dir: &Path) -> PathBuf {
    let counter = dir.join("runs.count");
    let profile = dir.join("crc-flaky.toml");
    std::fs::write(
        &profile,
        format!(
            r#"name = "crc-flaky"
[build]
command = "make BOARD={{machine}} FLAKY_COUNTER={} build/{{machine}}/test_crc.elf"
artifact = "build/{{machine}}/test_crc.elf"
[test]
harness = "unity"
timeout_s = 20
"#,
            counter.display()
        ),
    )
    .unwrap();
    profile
}

fn bisect(repo: &Path, profile: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "bisect",
        "--json",
        "--repo",
        repo.to_str().unwrap(),
        "--board",
        MPS2,
        "--profile",
        profile,
    ];
    args.extend_from_slice(extra);
    fwfix(&args, repo)
}

/// Everything about the owner's checkout that fwfix must leave alone: HEAD, the index file's
/// bytes, and every file of the working tree (fwfix's own `.fwfix/` and the ignored `build/`
/// aside).
fn owner_state(repo: &FixtureRepo) -> BTreeMap<String, String> {
    let mut state = BTreeMap::new();
    let git = repo.path().join(".git");
    for f in ["HEAD", "index"] {
        state.insert(format!(".git/{f}"), digest(&git.join(f)));
    }
    let head_ref = std::fs::read_to_string(git.join("HEAD")).unwrap();
    if let Some(r) = head_ref.trim().strip_prefix("ref: ") {
        state.insert(r.to_string(), digest(&git.join(r)));
    }
    files(repo.path(), repo.path(), &mut state);
    state
}

/// A file's SHA-256, so a difference reads as which file changed.
fn digest(path: &Path) -> String {
    use sha2::Digest;
    let hash = sha2::Sha256::digest(std::fs::read(path).unwrap());
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

fn files(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let rel = path
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        // A fix run builds in the owner's tree: `build/` is ignored output, not the owner's work.
        if rel == ".git" || rel == ".fwfix" || rel == "build" {
            continue;
        }
        if path.is_dir() {
            files(root, &path, out);
        } else {
            out.insert(rel, digest(&path));
        }
    }
}

/// The owner's work in progress, which a bisect must not disturb.
fn make_owner_work(repo: &FixtureRepo) {
    append(repo, "NOTES.md", "- my uncommitted note\n");
    repo.write("scratch/idea.txt", "untracked\n");
    append(repo, "src/ringbuf.c", "/* staged */\n");
    repo.git(&["add", "src/ringbuf.c"]);
    // git reads and may refresh the index; from here on only fwfix runs until the check.
    repo.git(&["status", "--porcelain"]);
}

fn worktrees(repo: &FixtureRepo) -> usize {
    repo.git(&["worktree", "list", "--porcelain"])
        .lines()
        .filter(|l| l.starts_with("worktree "))
        .count()
}

fn steps(report: &Value) -> &Vec<Value> {
    report["steps"].as_array().unwrap()
}

#[test]
fn finds_the_culprit_past_a_commit_that_does_not_build_and_a_flaky_test() {
    let h = history();
    make_owner_work(&h.repo);
    let before = owner_state(&h.repo);
    let scratch = tempfile::tempdir().unwrap();
    let profile = flaky_profile(scratch.path());
    let out = bisect(
        h.repo.path(),
        profile.to_str().unwrap(),
        &["--good", h.id(0), "--runs", "3"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let dir = run_dir(&out);
    let report = report(&dir);
    assert_eq!(report["command"], "bisect");
    assert_eq!(report["status"], "SUCCESS");
    assert_eq!(report["final_state"], "SUCCESS");
    assert_eq!(report["culprit"], h.id(CULPRIT), "{:#}", report["steps"]);
    assert!(report["message"]
        .as_str()
        .unwrap()
        .contains("crc16: simplify the start value"));
    // The report shows what fails at the culprit.
    assert_eq!(case(&report, "test_crc16_known_vector")["status"], "FAIL");

    let steps = steps(&report);
    let at =
        |i: usize| -> Vec<&Value> { steps.iter().filter(|s| s["commit"] == h.id(i)).collect() };
    assert_eq!(steps[0]["role"], "GOOD_CHECK");
    assert_eq!(steps[0]["verdict"], "GOOD");
    assert_eq!(steps[1]["role"], "BAD_CHECK");
    assert_eq!(steps[1]["verdict"], "BAD");
    // The commit that does not build was skipped, not taken for bad.
    let broken = at(BROKEN);
    assert_eq!(broken.len(), 1, "{steps:#?}");
    assert_eq!(broken[0]["verdict"], "SKIP");
    assert!(broken[0]["reason"]
        .as_str()
        .unwrap()
        .contains("does not build"));
    // The flaky test failed one run of three on good commits; the majority decided them.
    let flaky: Vec<&Value> = steps
        .iter()
        .filter(|s| s["verdict"] == "GOOD" && s["failed"] == 1)
        .collect();
    assert!(!flaky.is_empty(), "{steps:#?}");
    for s in &flaky {
        assert_eq!(s["passed"], 2, "{s}");
        assert_eq!(s["unanimous"], false);
        let i = h.line.iter().position(|id| s["commit"] == *id).unwrap();
        assert!((FLAKY..CULPRIT).contains(&i), "{s}");
    }
    // The culprit fails and its first parent passes; the parent was not unanimous, so it was
    // tested again.
    assert!(at(CULPRIT).iter().all(|s| s["verdict"] == "BAD"));
    let parent = at(CULPRIT - 1);
    assert!(parent.iter().all(|s| s["verdict"] == "GOOD"), "{parent:#?}");
    assert!(parent.iter().any(|s| s["role"] == "VERIFY"), "{parent:#?}");
    let confidence = report["confidence"].as_f64().unwrap();
    assert!(confidence < 1.0 && confidence > 0.5, "{confidence}");
    // Bounded: the ends, log2(32) probes, the skip, the verification.
    assert!(steps.len() <= 2 + 5 + 1 + 2, "{} steps", steps.len());

    // Every step is a real run directory, which `fwfix audit` replays.
    for s in steps {
        let step_dir = dir.join(s["run_dir"].as_str().unwrap());
        let step_report = crate::common::report(&step_dir);
        assert_eq!(step_report["command"], "test");
        let audit = fwfix(&["audit", step_dir.to_str().unwrap()], h.repo.path());
        assert_eq!(audit.status.code(), Some(0), "{}", text(&audit));
    }
    assert!(dir.join("bisect.json").is_file() && dir.join("run.json").is_file());
    // Nothing left behind, nothing of the owner's touched.
    assert_eq!(worktrees(&h.repo), 1);
    assert!(std::fs::read_dir(&dir).unwrap().all(|e| !e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .starts_with("worktree")));
    assert_eq!(owner_state(&h.repo), before);
    assert!(
        !h.repo.path().join("build").exists(),
        "the bisect built in the owner's tree"
    );
    assert!(qemu_processes_mentioning(h.repo.path()).is_empty());
}

/// A short history: the fixture (CRC-16 broken), the fix, then harmless work.
fn short_history() -> (FixtureRepo, Vec<String>) {
    let repo = FixtureRepo::new();
    let mut ids = vec![repo.git(&["rev-parse", "HEAD"]).trim().to_string()];
    repo.apply_fixture_patch("04-fixes-crc16.diff");
    ids.push(commit(&repo, "crc16: start from 0xFFFF"));
    ids.push(harmless(&repo, 1));
    (repo, ids)
}

#[test]
fn a_good_ref_that_fails_or_a_bad_ref_that_passes_stops_the_bisect() {
    let (repo, ids) = short_history();
    let before = owner_state(&repo);
    let out = bisect(repo.path(), "crc", &["--good", "HEAD~2"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let report = report(&run_dir(&out));
    assert_eq!(report["status"], "FAILURE");
    assert!(report["culprit"].is_null());
    assert_eq!(report["confidence"], 0.0);
    let message = report["message"].as_str().unwrap();
    assert!(message.starts_with("good ref `HEAD~2`"), "{message}");
    assert!(
        message.contains(&ids[0][..7]) && message.contains("BAD"),
        "{message}"
    );
    assert_eq!(steps(&report).len(), 1);
    assert_eq!(case(&report, "test_crc16_known_vector")["status"], "FAIL");

    let out = bisect(repo.path(), "crc", &["--good", &ids[1]]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let report = crate::common::report(&run_dir(&out));
    let message = report["message"].as_str().unwrap();
    assert!(message.starts_with("bad ref `HEAD`"), "{message}");
    assert!(message.contains("GOOD"), "{message}");
    assert_eq!(steps(&report).len(), 2);
    assert_eq!(worktrees(&repo), 1);
    assert_eq!(owner_state(&repo), before);

    // `fwfix audit` on the bisect's own directory audits each step's run.
    let dir = run_dir(&out);
    let audit = fwfix(&["audit", dir.to_str().unwrap()], repo.path());
    assert_eq!(audit.status.code(), Some(0), "{}", text(&audit));
    assert!(text(&audit).contains("audit OK"), "{}", text(&audit));
    // `fwfix show` on it lists the steps, each with the run directory to open next.
    let step = steps(&report)[1]["run_dir"].as_str().unwrap().to_string();
    let show = fwfix(&["show", dir.to_str().unwrap()], repo.path());
    assert_eq!(show.status.code(), Some(0), "{}", text(&show));
    assert!(text(&show).contains("bisect steps"), "{}", text(&show));
    assert!(text(&show).contains(&step), "{}", text(&show));
    assert!(!text(&show).contains("trace.jsonl"), "{}", text(&show));
    // A step whose evidence changed afterwards fails it, named by its step.
    let console = dir.join(&step).join("iter-000/console.log");
    std::fs::write(&console, "tampered\n").unwrap();
    let audit = fwfix(&["audit", dir.to_str().unwrap()], repo.path());
    assert_eq!(audit.status.code(), Some(1), "{}", text(&audit));
    assert!(
        text(&audit).contains(&format!("{step}/trace.jsonl:")),
        "{}",
        text(&audit)
    );
}

#[test]
fn an_unknown_ref_is_a_usage_error_naming_it() {
    let (repo, ids) = short_history();
    for (args, name) in [
        (vec!["--good", "v0.9-nope"], "v0.9-nope"),
        (
            vec!["--good", ids[1].as_str(), "--bad", "no-such-branch"],
            "no-such-branch",
        ),
    ] {
        let out = bisect(repo.path(), "crc", &args);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        let events = events(&out);
        let last = events.last().unwrap();
        assert!(last["run_dir"].is_null());
        let message = last["message"].as_str().unwrap();
        assert!(message.contains(&format!("'{name}'")), "{message}");
    }
    // The good commit must come before the bad one on its mainline.
    let out = bisect(repo.path(), "crc", &["--good", "HEAD", "--bad", &ids[1]]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(!repo.path().join(".fwfix/runs").exists());
}

fn run_revert(repo: &Path, good: &str) -> Output {
    fwfix(
        &[
            "run",
            "--json",
            "--repo",
            repo.to_str().unwrap(),
            "--board",
            MPS2,
            "--profile",
            "crc",
            "--strategy",
            "revert",
            "--good",
            good,
        ],
        repo,
    )
}

#[test]
fn the_revert_strategy_bisects_and_converges_on_the_culprits_revert() {
    let h = history();
    make_owner_work(&h.repo);
    let before = owner_state(&h.repo);
    let out = run_revert(h.repo.path(), h.id(0));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let dir = run_dir(&out);
    let report = report(&dir);
    assert_eq!(report["status"], "SUCCESS");
    assert_eq!(report["iterations"], 1);
    assert_eq!(
        report["fixed"],
        serde_json::json!(["test_crc16_known_vector"])
    );
    // The bisect it ran is recorded in the iteration, with its own steps, which audit clean.
    let audit = fwfix(
        &["audit", dir.join("iter-001/bisect").to_str().unwrap()],
        h.repo.path(),
    );
    assert_eq!(audit.status.code(), Some(0), "{}", text(&audit));
    let bisect = crate::common::report(&dir.join("iter-001/bisect"));
    assert_eq!(bisect["culprit"], h.id(CULPRIT));
    assert!(steps(&bisect)
        .iter()
        .any(|s| s["commit"] == h.id(BROKEN) && s["verdict"] == "SKIP"));
    // The fix is the culprit's revert, on its own branch off the owner's HEAD.
    let fix = std::fs::read_to_string(report["patch"].as_str().unwrap()).unwrap();
    assert!(
        fix.contains("-    uint16_t crc = 0x0000u;\n+    uint16_t crc = 0xFFFFu;"),
        "{fix}"
    );
    let branch = report["branch"].as_str().unwrap();
    assert_eq!(
        h.repo.git(&["rev-parse", &format!("{branch}^")]).trim(),
        h.id(LEN - 1)
    );
    assert!(h
        .repo
        .git(&["log", "-1", "--format=%B", branch])
        .contains("revert of"));
    assert_eq!(worktrees(&h.repo), 1);
    assert_eq!(owner_state(&h.repo), before);
}

#[test]
fn a_revert_that_conflicts_is_reported_and_never_forced() {
    let (repo, ids) = short_history();
    let patch = fixture_dir().join("patches/04-fixes-crc16.diff");
    repo.git(&["apply", "-R", patch.to_str().unwrap()]);
    let culprit = commit(&repo, "crc16: simplify the start value");
    // Later work rewrites the very line the culprit changed: its revert cannot apply cleanly.
    let crc = std::fs::read_to_string(repo.path().join("src/crc.c")).unwrap();
    repo.write(
        "src/crc.c",
        &crc.replace(
            "uint16_t crc = 0x0000u;",
            "uint16_t crc = 0x0000u; /* XMODEM */",
        ),
    );
    commit(&repo, "crc16: document the start value");
    let before = owner_state(&repo);
    let out = run_revert(repo.path(), &ids[1]);
    // Not an infrastructure error: the patch does not apply, and nothing else can be tried.
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let dir = run_dir(&out);
    let report = report(&dir);
    assert_eq!(report["status"], "FAILURE");
    assert_eq!(report["error_class"], "PATCH_APPLY_FAILURE");
    assert_eq!(
        report["revert_conflict"]["paths"],
        serde_json::json!(["src/crc.c"])
    );
    assert_eq!(report["revert_conflict"]["commit"], &culprit[..7]);
    assert!(report["branch"].is_null() && report["patch"].is_null());
    let message = report["message"].as_str().unwrap();
    assert!(
        message.contains("conflicts")
            && message.contains("src/crc.c")
            && message.contains(&culprit[..7]),
        "{message}"
    );
    assert_eq!(
        crate::common::report(&dir.join("iter-001/bisect"))["culprit"],
        culprit
    );
    assert!(!dir.join("iter-001/patch.diff").exists());
    assert_eq!(worktrees(&repo), 1);
    assert_eq!(owner_state(&repo), before);
}

#[test]
fn an_environment_that_keeps_failing_is_retried_then_an_infrastructure_error() {
    let (repo, ids) = short_history();
    let scratch = tempfile::tempdir().unwrap();
    let board = scratch.path().join("qemu-gone.toml");
    std::fs::write(
        &board,
        "name = \"qemu-gone\"\nbackend = \"qemu\"\n[qemu]\n\
         binary = \"fwfix-test-no-such-qemu\"\nmachine = \"mps2-an385\"\n",
    )
    .unwrap();
    let out = fwfix(
        &[
            "bisect",
            "--json",
            "--board",
            board.to_str().unwrap(),
            "--profile",
            "crc",
            "--good",
            &ids[1],
        ],
        repo.path(),
    );
    assert_eq!(out.status.code(), Some(4), "{}", text(&out));
    let report = report(&run_dir(&out));
    assert_eq!(report["status"], "FAILURE");
    assert_eq!(report["error_class"], "TEST_ENV_FAILURE");
    assert!(report["culprit"].is_null());
    // Tried three times, never taken for a verdict on the commit.
    let steps = steps(&report);
    assert_eq!(steps.len(), 3, "{steps:#?}");
    for s in steps {
        assert_eq!(s["verdict"], "ERROR", "{s}");
        assert_eq!(s["commit"], ids[1].as_str());
    }
    let message = report["message"].as_str().unwrap();
    assert!(
        message.contains("could not be tested in 3 tries"),
        "{message}"
    );
    assert_eq!(worktrees(&repo), 1);
}

#[test]
fn ctrl_c_mid_step_aborts_with_exit_3_and_leaves_no_worktree() {
    use std::io::BufRead;
    let (repo, ids) = short_history();
    let before = owner_state(&repo);
    let scratch = tempfile::tempdir().unwrap();
    let marker = scratch.path().join("building");
    let profile = scratch.path().join("slow.toml");
    std::fs::write(
        &profile,
        format!(
            "name = \"slow\"\n[build]\ncommand = \"touch {} && sleep 30\"\n\
             artifact = \"build/x.elf\"\n[test]\nharness = \"unity\"\n",
            marker.display()
        ),
    )
    .unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_fwfix"))
        .args([
            "bisect",
            "--json",
            "--board",
            MPS2,
            "--profile",
            profile.to_str().unwrap(),
            "--good",
            &ids[1],
        ])
        .current_dir(repo.path())
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    for _ in 0..400 {
        if marker.is_file() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    assert!(marker.is_file(), "the first step's build never started");
    ctrl_c(&child);
    let lines: Vec<String> = std::io::BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map(|l| l.unwrap())
        .collect();
    assert_eq!(child.wait().unwrap().code(), Some(3), "{lines:#?}");
    let last: Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    assert_eq!(last["status"], "ABORTED");
    let report = report(Path::new(last["run_dir"].as_str().unwrap()));
    assert_eq!(report["final_state"], "ABORTED");
    assert_eq!(worktrees(&repo), 1);
    assert_eq!(owner_state(&repo), before);
}

#[test]
fn a_revert_run_killed_mid_bisect_resumes_and_leaves_no_worktree() {
    let (repo, ids) = short_history();
    let patch = fixture_dir().join("patches/04-fixes-crc16.diff");
    repo.git(&["apply", "-R", patch.to_str().unwrap()]);
    let culprit = commit(&repo, "crc16: simplify the start value");
    harmless(&repo, 2);
    let scratch = tempfile::tempdir().unwrap();
    let sleeper = scratch.path().join("sleeper.pid");
    // The first build in a bisect worktree hangs, so the run can be killed mid-bisect.
    let profile = scratch.path().join("crc-once-slow.toml");
    std::fs::write(
        &profile,
        format!(
            r#"name = "crc-once-slow"
[build]
command = "make BOARD={{machine}} build/{{machine}}/test_crc.elf && case $PWD in *worktree-*) if [ ! -f {s} ]; then sleep 30 & echo $! > {s}; wait; fi;; esac"
artifact = "build/{{machine}}/test_crc.elf"
[test]
harness = "unity"
timeout_s = 20
"#,
            s = sleeper.display()
        ),
    )
    .unwrap();
    let before = owner_state(&repo);
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_fwfix"))
        .args([
            "run",
            "--json",
            "--board",
            MPS2,
            "--profile",
            profile.to_str().unwrap(),
            "--strategy",
            "revert",
            "--good",
            &ids[1],
        ])
        .current_dir(repo.path())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // A power cut: no cleanup at all.
    power_cut_once_building(child, &sleeper);
    assert_eq!(
        worktrees(&repo),
        2,
        "the bisect's worktree is left by the kill"
    );

    let runs: Vec<PathBuf> = std::fs::read_dir(repo.path().join(".fwfix/runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let run_dir = runs[0].clone();
    let out = fwfix(
        &["resume", "--json", run_dir.to_str().unwrap()],
        repo.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report = report(&run_dir);
    assert_eq!(report["status"], "SUCCESS");
    let bisect = crate::common::report(&run_dir.join("iter-001/bisect-2"));
    assert_eq!(bisect["culprit"], culprit);
    assert_eq!(worktrees(&repo), 1);
    assert_eq!(owner_state(&repo), before);
    let audit = fwfix(&["audit", run_dir.to_str().unwrap()], repo.path());
    assert_eq!(audit.status.code(), Some(0), "{}", text(&audit));
}

#[test]
fn a_bisect_killed_with_sigkill_has_its_worktree_removed_by_the_next_bisect() {
    let (repo, ids) = short_history();
    let scratch = tempfile::tempdir().unwrap();
    let marker = scratch.path().join("building");
    let profile = scratch.path().join("slow.toml");
    std::fs::write(
        &profile,
        format!(
            "name = \"slow\"\n[build]\ncommand = \"echo $$ > {m} && exec sleep 30\"\n\
             artifact = \"build/x.elf\"\n[test]\nharness = \"unity\"\n",
            m = marker.display()
        ),
    )
    .unwrap();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_fwfix"))
        .args([
            "bisect",
            "--board",
            MPS2,
            "--profile",
            profile.to_str().unwrap(),
            "--good",
            &ids[1],
        ])
        .current_dir(repo.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // SIGKILL, as a power cut would: no cleanup runs, the step's worktree stays registered.
    power_cut_once_building(child, &marker);
    assert_eq!(worktrees(&repo), 2);

    // A bisect is not resumed, and says what to do instead.
    let run = std::fs::read_dir(repo.path().join(".fwfix/runs"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let resumed = fwfix(&["resume", run.to_str().unwrap()], repo.path());
    assert_eq!(resumed.status.code(), Some(2), "{}", text(&resumed));
    assert!(
        text(&resumed).contains("is a bisect") && text(&resumed).contains("run fwfix bisect again"),
        "{}",
        text(&resumed)
    );

    // The next bisect in the repository removes the dead one's worktree first.
    let next = fwfix(
        &[
            "bisect",
            "--board",
            MPS2,
            "--profile",
            "crc",
            "--good",
            &ids[1],
        ],
        repo.path(),
    );
    assert!(next.status.code().is_some(), "{}", text(&next));
    assert_eq!(worktrees(&repo), 1, "{}", text(&next));
}

/// Once the build fwfix started has written its pid to `pid_file`, kills fwfix with SIGKILL (no
/// cleanup runs, as in a power cut), then that orphaned build.
fn power_cut_once_building(mut child: std::process::Child, pid_file: &Path) {
    for _ in 0..1200 {
        if std::fs::read_to_string(pid_file).is_ok_and(|p| !p.trim().is_empty()) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let build: i32 = std::fs::read_to_string(pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(build),
        nix::sys::signal::Signal::SIGKILL,
    );
}
