//! `fwfix triage`: the real binary over the recorded logs in `tests/data/triage/`, with and
//! without `--json` and `--timed-out`, and its exit status when a file cannot be read; and its
//! accuracy on the real public logs in `tests/data/triage/real/` (the tuning set) and on a
//! held-out set nobody tuning it has seen (see the README in `real/`).
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by panicking

use crate::common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/triage")
}

/// `expected.tsv`: (file, class, lines, class with --timed-out, lines with --timed-out).
fn manifest() -> Vec<[String; 5]> {
    std::fs::read_to_string(data_dir().join("expected.tsv"))
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let cols: Vec<String> = l.split('\t').map(str::to_string).collect();
            cols.try_into().unwrap()
        })
        .collect()
}

fn json_lines(lines: &str) -> Value {
    if lines == "-" {
        return Value::Array(Vec::new());
    }
    Value::Array(
        lines
            .split(',')
            .map(|n| Value::from(n.parse::<u64>().unwrap()))
            .collect(),
    )
}

fn triage(args: &[&str]) -> std::process::Output {
    let mut all = vec!["triage"];
    all.extend_from_slice(args);
    fwfix(&all, &data_dir())
}

#[test]
fn json_has_one_object_per_file_in_order() {
    let rows = manifest();
    let files: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    for timed_out in [false, true] {
        let mut args = files.clone();
        args.push("--json");
        if timed_out {
            args.push("--timed-out");
        }
        let out = triage(&args);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let objects = events(&out);
        assert_eq!(objects.len(), rows.len(), "{}", text(&out));
        for (row, object) in rows.iter().zip(&objects) {
            let (class, lines) = if timed_out {
                (&row[3], &row[4])
            } else {
                (&row[1], &row[2])
            };
            assert_eq!(object["file"], row[0].as_str());
            assert_eq!(object["class"], class.as_str(), "{}: {object:#}", row[0]);
            assert_eq!(object["lines"], json_lines(lines), "{}: {object:#}", row[0]);
            assert!(!object["reason"].as_str().unwrap().is_empty(), "{object:#}");
        }
    }
}

#[test]
fn json_carries_the_error_class_and_the_matches() {
    let out = triage(&[
        "ld_undefined_reference.log",
        "unity_crash_qemu.log",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let objects = events(&out);
    assert_eq!(objects[0]["class"], "LINK_ERROR");
    assert_eq!(objects[0]["error_class"], "BUILD_FAILURE");
    assert_eq!(
        objects[0]["reason"],
        "/home/dev/fw/src/crc.c:46: undefined reference to `crc16_table_init'"
    );
    let rules: Vec<&str> = objects[0]["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["rule_id"].as_str().unwrap())
        .collect();
    // make's generic `Error 1` is claimed too, but the linker's lines explain the log.
    assert_eq!(
        rules,
        ["ld.undefined_reference", "ld.collect2", "make.error"]
    );
    assert_eq!(objects[1]["class"], "CRASH");
    assert_eq!(objects[1]["error_class"], Value::Null);
}

#[test]
fn text_output_names_class_lines_and_reason_and_quotes_the_lines() {
    let out = triage(&["ld_region_overflow.log", "unity_pass.log"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[0],
        "ld_region_overflow.log: LINK_ERROR (lines 3, 4): build/lm3s6965evb/test_crc.elf section `.text' will not fit in region `FLASH'"
    );
    assert!(lines[1].trim_start().starts_with("3 | "), "{stdout}");
    assert!(
        lines[2].ends_with("ld: region `FLASH' overflowed by 2308 bytes"),
        "{stdout}"
    );
    assert_eq!(
        lines[3],
        "unity_pass.log: PASS (lines 8, 9): 5 Tests 0 Failures 0 Ignored"
    );
    assert!(lines[4].trim_start().starts_with("8 | 5 Tests"), "{stdout}");
    assert!(lines[5].trim_start().starts_with("9 | OK"), "{stdout}");
    assert_eq!(lines.len(), 6, "{stdout}");
}

#[test]
fn timed_out_turns_output_that_just_stops_into_a_hang() {
    let out = triage(&["unity_hang_stdout.log"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Tests that passed so far are no verdict.
    assert!(
        stdout.starts_with("unity_hang_stdout.log: UNKNOWN (lines 1, 2, 3): "),
        "{stdout}"
    );
    assert!(stdout.contains("but no final verdict"), "{stdout}");

    let out = triage(&["--timed-out", "unity_hang_stdout.log", "unity_pass.log"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with(
            "unity_hang_stdout.log: HANG (line 3): the run timed out with no verdict; the output stops at line 3\n"
        ),
        "{stdout}"
    );
    // A log that reached its verdict did not hang, timeout or not.
    assert!(
        stdout.contains("unity_pass.log: PASS (lines 8, 9)"),
        "{stdout}"
    );
}

#[test]
fn a_missing_file_is_named_and_exits_2_after_the_others() {
    let out = triage(&["unity_fail.log", "no-such.log", "unity_pass.log"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("unity_fail.log: TEST_FAILURE"), "{stdout}");
    assert!(stdout.contains("unity_pass.log: PASS"), "{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no-such.log") && stderr.contains("No such file or directory"),
        "{stderr}"
    );

    let out = triage(&["unity_fail.log", "no-such.log", "--json"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let objects = events(&out);
    assert_eq!(objects.len(), 2, "{}", text(&out));
    assert_eq!(objects[0]["class"], "TEST_FAILURE");
    assert_eq!(objects[1]["file"], "no-such.log");
    // The contract's fields are there, with no class: nothing was read.
    assert!(objects[1]["class"].is_null(), "{:#}", objects[1]);
    assert_eq!(objects[1]["lines"], serde_json::json!([]));
    assert!(objects[1]["reason"]
        .as_str()
        .unwrap()
        .contains("No such file"));
    assert!(
        objects[1]["error"]
            .as_str()
            .unwrap()
            .contains("No such file or directory"),
        "{:#}",
        objects[1]
    );
}

#[test]
fn a_directory_is_not_a_readable_log() {
    let out = triage(&["."]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

/// Regression: fwfix's own binary (an ELF, like the firmware image a user may give by mistake)
/// was classified as a FLASH_ERROR quoting binary garbage, with exit 0.
#[test]
fn an_elf_image_is_named_as_no_log_and_exits_2() {
    let elf = env!("CARGO_BIN_EXE_fwfix");
    let out = triage(&["unity_pass.log", elf]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("unity_pass.log: PASS"), "{stdout}");
    assert!(!stdout.contains(elf), "{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("{elf} is an ELF image, not a log")),
        "{stderr}"
    );
}

#[test]
fn help_documents_the_exit_status() {
    let out = triage(&["--help"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("--timed-out"), "{help}");
    assert!(
        help.contains("Exit status: 0 when every file was read"),
        "{help}"
    );
    assert!(help.contains("2 when a file could not be read"), "{help}");
}

#[test]
fn no_file_is_a_usage_error() {
    let out = triage(&[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

#[test]
fn a_fresh_console_log_from_fwfix_test_is_triaged_like_the_recorded_one() {
    // The recorded console.log came from this very fixture; a run made now must read the same
    // class, decided by the fault line fwfix writes when it reads a crash at the handler's entry.
    let repo = FixtureRepo::new();
    let out = fwfix(
        &[
            "test",
            "--repo",
            repo.path().to_str().unwrap(),
            "--board",
            "qemu-mps2-an385",
            "--profile",
            "sensor",
            "--json",
        ],
        repo.path(),
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let console = run_dir(&out).join("iter-000/console.log");
    let out = fwfix(
        &["triage", "--json", console.to_str().unwrap()],
        repo.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let object = &events(&out)[0];
    assert_eq!(object["class"], "CRASH", "{object:#}");
    assert!(
        object["reason"]
            .as_str()
            .unwrap()
            .starts_with("HardFault at pc="),
        "{object:#}"
    );
}

/// Regression: an empty file and a device of zeros were PASS, and `/dev/zero` was read forever.
#[test]
fn empty_and_binary_inputs_are_unknown_and_an_endless_one_ends() {
    let dir = tempfile::tempdir().unwrap();
    let random = dir.path().join("random.bin");
    let bytes: Vec<u8> = (0..100_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(&random, bytes).unwrap();
    let out = triage(&["empty.log", "/dev/zero", random.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let objects = events(&out);
    assert_eq!(objects.len(), 3, "{}", text(&out));
    for object in &objects {
        assert_eq!(object["class"], "UNKNOWN", "{object:#}");
        assert_eq!(object["error_class"], Value::Null, "{object:#}");
    }
    assert_eq!(objects[0]["reason"], "the log is empty");
    for object in &objects[1..] {
        let reason = object["reason"].as_str().unwrap();
        assert!(
            reason.starts_with("the input is binary, not a log"),
            "{reason}"
        );
    }
}

/// The held-out corpus of real logs: collected and labelled by someone who never tuned triage
/// nor read its rules, and never tuned on (see `real/README.md`).
const HELD_OUT_SET: &str = "unprobed";

/// One corpus of real logs (`real/`: the tuning set; [`HELD_OUT_SET`]: the held-out set):
/// (name, label, source address) per log. A corpus that is missing fails the test that reads it.
fn corpus(set: &str) -> Vec<(String, String, String)> {
    let index = data_dir().join(set).join("index.tsv");
    std::fs::read_to_string(&index)
        .unwrap_or_else(|e| {
            panic!(
                "the corpus {set}/ cannot be read ({}): {e}",
                index.display()
            )
        })
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let cols: Vec<&str> = l.split('\t').collect();
            assert_eq!(cols.len(), 3, "{set}: {l}");
            (cols[0].into(), cols[1].into(), cols[2].into())
        })
        .collect()
}

/// Triage's accuracy on one corpus: (correct, total, one line per miss).
fn corpus_accuracy(set: &str) -> (usize, usize, Vec<String>) {
    let rows = corpus(set);
    let files: Vec<String> = rows.iter().map(|r| format!("{set}/{}.log", r.0)).collect();
    let mut args: Vec<&str> = files.iter().map(String::as_str).collect();
    args.push("--json");
    let out = triage(&args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let objects = events(&out);
    assert_eq!(objects.len(), rows.len(), "{}", text(&out));
    let mut misses = Vec::new();
    for (row, object) in rows.iter().zip(&objects) {
        if object["class"] != row.1.as_str() {
            misses.push(format!(
                "{}: labelled {}, triaged {} ({}) [{}]",
                row.0, row.1, object["class"], object["reason"], row.2
            ));
        }
    }
    (rows.len() - misses.len(), rows.len(), misses)
}

#[allow(clippy::print_stderr)] // the figure is the point of the test
fn report(set: &str, (correct, total, misses): &(usize, usize, Vec<String>)) -> f64 {
    let accuracy = 100.0 * *correct as f64 / *total as f64;
    eprintln!("real logs, {set}: {correct}/{total} = {accuracy:.1}%");
    for miss in misses {
        eprintln!("  miss {miss}");
    }
    accuracy
}

/// The thread an address belongs to: `owner/repo#number` of a GitHub issue or pull request
/// (one thread, whichever); for a forum its site and topic number (a phpBB `t=`, else the
/// longest number in the path), so a thread found under two addresses is still one.
fn thread(source: &str) -> String {
    let rest = source
        .trim_start_matches("https://")
        .trim_start_matches("http://")
        .trim_start_matches("www.");
    let parts: Vec<&str> = rest.split('/').collect();
    // GitHub's own addresses, a proxy's that keeps its path (`github.<mirror>/owner/repo/
    // issues/N`) and githubissues.com's `owner/repo/N`: one issue.
    match parts.as_slice() {
        [host, owner, repo, "issues" | "pull", number, ..] if host.contains("github") => {
            return format!("{}/{}#{number}", owner.to_lowercase(), repo.to_lowercase());
        }
        ["githubissues.com", owner, repo, number, ..]
            if number.bytes().all(|b| b.is_ascii_digit()) =>
        {
            return format!("{}/{}#{number}", owner.to_lowercase(), repo.to_lowercase());
        }
        _ => {}
    }
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    let path = path.split('#').next().unwrap_or_default();
    let topic = regex::Regex::new(r"[?&]t=(\d+)")
        .unwrap()
        .captures(path)
        .map(|c| c[1].to_string())
        .or_else(|| {
            // Outside phpBB's `t=`, a query says how the page was reached (`?action=lastPost&s=`
            // and a session hash), not which thread it is.
            let path = format!("/{}", path.split('?').next().unwrap_or_default());
            // Discourse's and TI's `/t/slug/1242132`, Nordic's and TI's `/f/forum/67364`: the
            // topic, whatever reply number follows it.
            let topic =
                regex::Regex::new(r"/t/(?:[^/]*/)?(\d{3,})(?:/|$)|/f/[^/]+/(\d{3,})(?:/|$)")
                    .unwrap()
                    .captures(&path)
                    .and_then(|c| c.get(1).or_else(|| c.get(2)))
                    .map(|m| m.as_str().to_string());
            if topic.is_some() {
                return topic;
            }
            regex::Regex::new(r"\d{3,}")
                .unwrap()
                .find_iter(&path)
                .map(|m| m.as_str())
                .fold(None, |longest: Option<&str>, n| match longest {
                    Some(l) if l.len() >= n.len() => Some(l),
                    _ => Some(n),
                })
                .map(str::to_string)
        });
    match topic {
        Some(topic) => format!("{host}#{topic}"),
        None => source.to_string(),
    }
}

#[test]
fn a_thread_is_one_thread_under_any_of_its_addresses() {
    assert_eq!(
        thread("https://github.com/zephyrproject-rtos/zephyr/issues/41982"),
        thread("https://github.com/ZephyrProject-RTOS/zephyr/pull/41982/files")
    );
    assert_eq!(
        thread("https://forum.micropython.org/viewtopic.php?f=2&t=9781"),
        thread("https://forum.micropython.org/viewtopic.php?f=2&p=54746&t=9781")
    );
    assert_eq!(
        thread("https://e2e.ti.com/support/microcontrollers/msp430/f/166/t/460430"),
        "e2e.ti.com#460430"
    );
    assert_eq!(
        thread("https://devzone.nordicsemi.com/f/nordic-q-a/67364/resetting-system/277401"),
        "devzone.nordicsemi.com#67364"
    );
    assert_eq!(
        thread("https://forum.arduino.cc/t/guru-meditation-error/1242132/5"),
        thread("https://forum.arduino.cc/t/guru-meditation-error/1242132")
    );
    assert_eq!(
        thread("https://forum.segger.com/index.php/Thread/6552-failed-to-connect/"),
        thread(
            "https://forum.segger.com/index.php/Thread/6552-failed-to-connect/?action=lastPost&s=e28f0df9c896a693ae7e63d58d5be49ebda46539"
        )
    );
    assert_ne!(
        thread("https://forum.arduino.cc/t/guru-meditation-error/1242132"),
        thread("https://forum.arduino.cc/t/guru-meditation-error/1242133")
    );
    assert_eq!(
        thread("https://githubissues.com/technyon/nuki_hub/454"),
        thread("https://github.com/technyon/nuki_hub/issues/454")
    );
    assert_eq!(
        thread("https://github.tiyicn.workers.dev/zephyrproject-rtos/zephyr/issues/71397"),
        thread("https://github.com/zephyrproject-rtos/zephyr/issues/71397")
    );
}

#[test]
fn real_corpora_are_complete_labelled_and_apart() {
    let classes = [
        "BUILD_ERROR",
        "LINK_ERROR",
        "TOOL_MISSING",
        "FLASH_ERROR",
        "INFRA_ERROR",
        "CRASH",
        "ASSERT",
        "TEST_FAILURE",
        "HANG",
        "PASS",
        "UNKNOWN",
    ];
    let mut threads = std::collections::BTreeMap::new();
    // The long lines of each tuning log, to find a held-out log copied from a mirror of a
    // thread (a Reddit or Stack Overflow mirror, under an address no key ties to it).
    let mut tuning_lines: std::collections::HashMap<String, Vec<String>> =
        std::collections::HashMap::new();
    // The bound guards against a set lost or cut short, not its size.
    for (set, at_least) in [("real", 380), (HELD_OUT_SET, 80)] {
        let rows = corpus(set);
        assert!(rows.len() >= at_least, "{set}: {} logs", rows.len());
        let mut listed = std::collections::BTreeSet::new();
        for (name, label, source) in &rows {
            assert!(classes.contains(&label.as_str()), "{set}/{name}: {label}");
            assert!(
                source.starts_with("https://") || source.starts_with("http://"),
                "{set}/{name}: {source}"
            );
            assert!(
                listed.insert(format!("{name}.log")),
                "{set}/{name} listed twice"
            );
            let text =
                std::fs::read_to_string(data_dir().join(set).join(format!("{name}.log"))).unwrap();
            let lines = text.lines().count();
            assert!((1..=60).contains(&lines), "{set}/{name}: {lines} lines");
            let long: std::collections::BTreeSet<String> = text
                .lines()
                .map(str::trim)
                .filter(|l| l.len() >= 40)
                .map(str::to_string)
                .collect();
            if set == "real" {
                for line in &long {
                    tuning_lines
                        .entry(line.clone())
                        .or_default()
                        .push(name.clone());
                }
            } else if long.len() >= 3 {
                let mut shared: std::collections::HashMap<&str, usize> =
                    std::collections::HashMap::new();
                for name in long.iter().filter_map(|l| tuning_lines.get(l)).flatten() {
                    *shared.entry(name).or_default() += 1;
                }
                let most = shared.into_iter().max_by_key(|(_, n)| *n);
                assert!(
                    most.is_none_or(|(_, n)| n * 5 < long.len() * 4),
                    "{set}/{name}: most of its lines are in real/{}.log: one thread twice?",
                    most.map_or("", |(other, _)| other)
                );
            }
            // A thread's logs all sit on one side, or the held-out set is not held out.
            let side = threads.entry(thread(source)).or_insert(set);
            assert_eq!(
                *side, set,
                "{set}/{name}: its thread {source} is in {side}/ too"
            );
        }
        let present: std::collections::BTreeSet<String> = std::fs::read_dir(data_dir().join(set))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".log"))
            .collect();
        assert_eq!(listed, present, "{set}");
    }
}

/// What triage gets right on the held-out set must not fall below its first-sight figure, less
/// one log (unprobed/: 86/116, 74.1%, on round 45's rules; see unprobed/README.md). The goal
/// is 95%: this floor only catches a fall, it does not say the goal is met.
const HELD_OUT_FLOOR: f64 = 73.2;

/// Triage on real public logs nobody tuning it has seen ([`HELD_OUT_SET`]).
#[test]
fn real_logs_held_out_accuracy() {
    let result = corpus_accuracy(HELD_OUT_SET);
    let accuracy = report(&format!("held out ({HELD_OUT_SET}/)"), &result);
    assert!(
        accuracy >= HELD_OUT_FLOOR,
        "held-out accuracy {accuracy:.1}% is below {HELD_OUT_FLOOR}%"
    );
}

/// What the tuning set gets must not fall: 1532/1605 (95.5%) after round 10's tuning (see
/// real/README.md); 1584/1672 (94.7%) since round 10b's 67 logs joined untuned; 1706/1803
/// (94.6%) after round 11 (blind/ joined, its misses tuned on); 1833/1930 (95.0%) after round
/// 12 (sealed/ joined, its misses tuned on); 1956/2052 (95.3%) after round 13 (hidden/ joined,
/// its misses tuned on); 2063/2159 (95.6%) after round 14 (unseen/ joined, its misses tuned on); 2181/2278
/// (95.7%) after round 15 (unread/ joined, its misses tuned on); 2299/2396 (96.0%) after round 16
/// (untouched/ joined, its misses tuned on); 2416/2516 (96.0%) after round 17 (unopened/ joined,
/// its misses tuned on); 2528/2627 (96.2%) after round 18 (unvisited/ joined, its misses tuned
/// on); 2633/2733 (96.3%) after round 19 (unexplored/ joined, its misses tuned on); 2674/2774
/// (96.4%) after round 20 (uncharted/ joined, its misses tuned on); 2760/2860 (96.5%) after
/// round 21 (untrodden/ joined, its misses tuned on); 2870/2967 (96.7%) after round 22
/// (unmarked/ joined, its misses tuned on); 3003/3102 (96.8%) after round 23 (unheard/
/// joined, its misses tuned on); 3136/3237 (96.9%) after round 24 (unsung/ joined, its misses
/// tuned on); 3268/3368 (97.0%) after round 25 (unsaid/ joined, its misses tuned on);
/// 3401/3501 (97.1%) after round 26 (untold/ joined, its misses tuned on); 3511/3611 (97.2%)
/// after round 27 (unvoiced/ joined, its misses tuned on); 3641/3743 (97.3%) after round 28
/// (unlisted/ joined, its misses tuned on); 3733/3835 (97.3%) after round 29 (unheeded/
/// joined, its misses tuned on); 3847/3950 (97.4%) after round 30 (unsought/ joined, its
/// misses tuned on); 3984/4088 (97.5%) after round 31 (unasked/ joined, its misses tuned on);
/// 4090/4196 (97.5%) after round 32 (unbidden/ joined, its misses tuned on); 4246/4358
/// (97.4%) after round 33 (unscored/ joined, its misses tuned on); 4390/4511 (97.3%) after
/// round 34 (unjudged/ joined, its misses tuned on); 4535/4658 (97.4%) after round 35
/// (unweighed/ joined, its misses tuned on); 4667/4791 (97.4%) after round 36 (unrated/
/// joined, its misses tuned on), 4664/4791 (97.3%) after its review withdrew two rules and
/// narrowed four; 4805/4937 (97.3%) after round 37 (untallied/ joined, its misses tuned on);
/// 4942/5081 (97.3%) after round 38 (uncounted/ joined, its misses tuned on); 5074/5215
/// (97.3%) after round 39 (unsifted/ joined, its misses tuned on); 5202/5347 (97.3%) after
/// round 40 (unmeasured/ joined, its misses tuned on); 5330/5481 (97.2%) after round 41
/// (unscreened/ joined, its misses tuned on); 5461/5615 (97.3%) after round 42 (unproven/
/// joined, its misses tuned on); 5590/5745 (97.3%) after round 43 (unvetted/ joined, its
/// misses tuned on); 5720/5878 (97.3%) after round 44 (unsettled/ joined, its misses tuned
/// on); 5826/5987 (97.3%) after round 45 (untapped/ joined, its misses tuned on).
const TUNING_FLOOR: f64 = 96.5;

/// The logs the rules were tuned on: reported, and guarded against regressions.
#[test]
fn real_logs_tuning_accuracy() {
    let result = corpus_accuracy("real");
    let accuracy = report("tuning (real/)", &result);
    assert!(
        accuracy >= TUNING_FLOOR,
        "tuning accuracy {accuracy:.1}% is below {TUNING_FLOOR}%"
    );
}

/// A log piped in, named `/dev/stdin` or `-` (standard input, as for grep and ripgrep).
#[test]
fn a_log_piped_in_through_stdin_is_classified() {
    use std::io::Write;
    let log = std::fs::read(data_dir().join("gcc_undeclared.log")).unwrap();
    for name in ["/dev/stdin", "-"] {
        let mut child = fwfix_command(&["triage", "--json", name], &data_dir(), &data_dir())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(&log).unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        assert_eq!(events(&out)[0]["class"], "BUILD_ERROR", "{}", text(&out));
        assert_eq!(events(&out)[0]["file"], name, "{}", text(&out));
    }
}

/// A FIFO nobody writes to is not waited on, and the reason says nothing was written to it; a
/// FIFO with a writer is read to the writer's end.
#[test]
fn a_fifo_without_a_writer_says_so_and_one_with_a_writer_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("console.fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let out = triage(&[fifo.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let object = &events(&out)[0];
    assert_eq!(object["class"], "UNKNOWN", "{object:#}");
    let reason = object["reason"].as_str().unwrap();
    assert!(
        reason.contains("no program had this FIFO open for writing"),
        "{reason}"
    );

    // A real writer: a shell that opens the FIFO, writes a log, and closes it.
    let log = data_dir().join("gcc_undeclared.log");
    let mut writer = std::process::Command::new("sh")
        .arg("-c")
        .arg("exec cat \"$0\" > \"$1\"")
        .arg(&log)
        .arg(&fifo)
        .spawn()
        .unwrap();
    // Its open waits for a reader (in the kernel's `wait_for_partner`), already counted as the
    // FIFO's writer: once it waits there, fwfix's read blocks for its data rather than ending.
    let wchan = format!("/proc/{}/wchan", writer.id());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::fs::read_to_string(&wchan).unwrap_or_default() != "wait_for_partner" {
        assert!(
            std::time::Instant::now() < deadline,
            "the writer never opened the FIFO"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let out = triage(&[fifo.to_str().unwrap(), "--json"]);
    assert!(writer.wait().unwrap().success());
    assert_eq!(events(&out)[0]["class"], "BUILD_ERROR", "{}", text(&out));
}

/// A log saved as UTF-16 (PowerShell's `>`), with or without a byte-order mark, one with a
/// UTF-8 byte-order mark, one that starts with a UART break's NULs, and one with a 3 MiB line
/// before its text: each gets the class and lines of the plain log (the long line counted as
/// one line).
#[test]
fn encodings_a_uart_break_and_an_overlong_line_keep_class_and_lines() {
    let dir = tempfile::tempdir().unwrap();
    let plain = std::fs::read_to_string(data_dir().join("gcc_undeclared.log")).unwrap();
    let utf16 = |big: bool, bom: bool| -> Vec<u8> {
        let mut bytes = Vec::new();
        let units = (if bom { "\u{feff}" } else { "" })
            .encode_utf16()
            .chain(plain.encode_utf16());
        for unit in units {
            bytes.extend(if big {
                unit.to_be_bytes()
            } else {
                unit.to_le_bytes()
            });
        }
        bytes
    };
    let mut variants: Vec<(&str, Vec<u8>, usize)> = vec![
        ("plain.log", plain.clone().into_bytes(), 0),
        ("utf16le-bom.log", utf16(false, true), 0),
        ("utf16be-bom.log", utf16(true, true), 0),
        ("utf16le.log", utf16(false, false), 0),
        (
            "utf8-bom.log",
            [b"\xef\xbb\xbf", plain.as_bytes()].concat(),
            0,
        ),
    ];
    let mut broken = vec![0u8; 10_000];
    broken.extend_from_slice(plain.as_bytes());
    variants.push(("uart-break.log", broken, 0));
    let mut long = vec![b'x'; 3 << 20];
    long.push(b'\n');
    long.extend_from_slice(plain.as_bytes());
    variants.push(("long-line.log", long, 1));
    let mut args = Vec::new();
    for (name, bytes, _) in &variants {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        args.push(path.to_str().unwrap().to_string());
    }
    args.push("--json".into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = triage(&args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let objects = events(&out);
    let expected = &objects[0];
    assert_eq!(expected["class"], "BUILD_ERROR", "{expected:#}");
    let lines = |object: &Value| -> Vec<u64> {
        object["lines"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_u64().unwrap())
            .collect()
    };
    for ((name, _, shift), object) in variants.iter().zip(&objects) {
        assert_eq!(object["class"], expected["class"], "{name}: {object:#}");
        let shifted: Vec<u64> = lines(expected).iter().map(|l| l + *shift as u64).collect();
        assert_eq!(lines(object), shifted, "{name}: {object:#}");
        assert_eq!(object["reason"], expected["reason"], "{name}: {object:#}");
    }
}
