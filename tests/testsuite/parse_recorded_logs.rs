//! The parsers against console and build logs recorded from the fwtests fixture on QEMU
//! (`tests/data/`): what fwfix must conclude from real output of a pass, a failure, a crash, a
//! hang and a broken build. The `unity_fixture_repeat*` consoles were recorded from upstream
//! Unity Fixture (`UnityMain` with `-r 3`, and `-v`) in a FreeRTOS task on QEMU's mps2-an385,
//! with one test that fails only in the second run.

use fwfix::analysis::{parse_build_log, Severity};
use fwfix::capture::{Capture, ConsoleLine, RunEnd, Stream};
use fwfix::config::Harness;
use fwfix::results::{parser_for, CaseStatus, HarnessParser, ParseContext, TestResults, Verdict};

const UNITY_PASS: &str = include_str!("../data/console/unity_pass.log");
const UNITY_FAIL: &str = include_str!("../data/console/unity_fail.log");
const UNITY_CRASH: &str = include_str!("../data/console/unity_crash_truncated.log");
const UNITY_HANG: &str = include_str!("../data/console/unity_hang_truncated.log");
const QEMU_STDERR_CRASH: &str = include_str!("../data/console/qemu_stderr_crash.log");
const FIXTURE_REPEAT: &str = include_str!("../data/console/unity_fixture_repeat.log");
const FIXTURE_REPEAT_VERBOSE: &str =
    include_str!("../data/console/unity_fixture_repeat_verbose.log");
const GCC_ERROR: &str = include_str!("../data/build/gcc_error.log");

/// The tests of test_sensor and test_event, in run order (as a baseline or the ELF gives them).
const SENSOR_TESTS: [&str; 4] = [
    "test_sensor_converts_raw_reading",
    "test_sensor_applies_calibration",
    "test_sensor_uncalibrated_unit_uses_raw_reading",
    "test_sensor_reports_bus_error",
];
const EVENT_TESTS: [&str; 5] = [
    "test_event_starts_with_nothing_pending",
    "test_event_take_clears_posted_events",
    "test_event_wait_returns_posted_event",
    "test_event_wait_for_tick",
    "test_event_wait_leaves_other_events_pending",
];

fn unity() -> Box<dyn HarnessParser> {
    parser_for(&Harness::Unity)
}

fn lines(text: &str, stream: Stream) -> Vec<ConsoleLine> {
    text.lines()
        .enumerate()
        .map(|(i, line)| ConsoleLine {
            t_ms: i as u64,
            stream,
            text: line.to_string(),
        })
        .collect()
}

fn capture(uart: &str, end: RunEnd) -> Capture {
    Capture {
        lines: lines(uart, Stream::Uart),
        end,
        fault: None,
        duration_ms: 40,
        truncated: false,
        exit_code: None,
        stopped_at: None,
        nonce: None,
        faults_watched: false,
    }
}

fn parse(capture: &Capture, expected: &[&str], site: &[&str]) -> TestResults {
    let parser = unity();
    let ctx = ParseContext {
        expected: expected.iter().map(|s| s.to_string()).collect(),
        site_functions: site.iter().map(|s| s.to_string()).collect(),
    };
    parser.parse(capture, &ctx)
}

fn statuses(results: &TestResults) -> Vec<(&str, CaseStatus)> {
    results
        .cases
        .iter()
        .map(|c| (c.name.as_str(), c.status))
        .collect()
}

/// Which lines the harness's end detector fires on, 1-based.
fn detector_fires(text: &str) -> Vec<usize> {
    let parser = unity();
    let mut detector = parser.stream();
    text.lines()
        .enumerate()
        .filter(|(_, line)| detector.read_line(line).verdict)
        .map(|(i, _)| i + 1)
        .collect()
}

/// Unity Fixture's `-r 3`: the run ends at the third run's word, each test is one case, and the
/// test that failed only in run 2 fails the result.
#[test]
fn repeated_fixture_runs() {
    for console in [FIXTURE_REPEAT, FIXTURE_REPEAT_VERBOSE] {
        assert_eq!(detector_fires(console), vec![console.lines().count()]);
        // The task loops after UnityMain returns: the detector's word ends the attempt.
        let r = parse(&capture(console, RunEnd::Verdict), &[], &[]);
        assert_eq!(r.verdict, Verdict::Fail, "{:?}", r.notes);
        assert_eq!(
            statuses(&r),
            vec![
                ("TEST(fletcher, abcde)", CaseStatus::Fail),
                ("TEST(fletcher, flaky)", CaseStatus::Fail),
            ],
            "{:?}",
            r.notes
        );
        let flaky = &r.cases[1];
        assert_eq!(
            flaky.message.as_deref(),
            Some("run 2 of 3: Expected 2 to be not equal to 2")
        );
        assert_eq!(flaky.file.as_deref(), Some("tests/test_fixture.c"));
        assert_eq!(flaky.line, Some(20));
        assert!(r.notes.iter().any(|n| n.contains("flaky")), "{:?}", r.notes);
    }
}

#[test]
fn passing_image() {
    let r = parse(&capture(UNITY_PASS, RunEnd::Exited { code: 0 }), &[], &[]);
    assert_eq!(r.verdict, Verdict::Pass, "{:?}", r.notes);
    assert_eq!(r.cases.len(), 5);
    assert!(r.cases.iter().all(|c| c.status == CaseStatus::Pass));
    assert_eq!(
        r.cases[4].file.as_deref(),
        Some("tests/test_ringbuf.c"),
        "{:?}",
        r.cases[4]
    );
    assert_eq!(r.cases[4].line, Some(57));
    assert_eq!(detector_fires(UNITY_PASS), vec![UNITY_PASS.lines().count()]);
}

#[test]
fn failing_image() {
    let r = parse(&capture(UNITY_FAIL, RunEnd::Exited { code: 1 }), &[], &[]);
    assert_eq!(r.verdict, Verdict::Fail, "{:?}", r.notes);
    let failed: Vec<_> = r
        .cases
        .iter()
        .filter(|c| c.status == CaseStatus::Fail)
        .collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].name, "test_crc16_known_vector");
    assert_eq!(
        failed[0].message.as_deref(),
        Some("Expected 0x29B1 Was 0x31C3")
    );
    assert_eq!(
        r.cases
            .iter()
            .filter(|c| c.status == CaseStatus::Ignore)
            .count(),
        1
    );
    let summary = r.summary.unwrap();
    assert_eq!(
        (summary.tests, summary.failures, summary.ignored, summary.ok),
        (6, 1, 1, Some(false))
    );
    assert_eq!(detector_fires(UNITY_FAIL), vec![UNITY_FAIL.lines().count()]);

    // The same output with an exit status that disagrees cannot be trusted.
    let r = parse(&capture(UNITY_FAIL, RunEnd::Exited { code: 0 }), &[], &[]);
    assert_eq!(r.verdict, Verdict::Inconclusive);
}

#[test]
fn crashing_image() {
    let mut c = capture(UNITY_CRASH, RunEnd::Crashed);
    // QEMU's exception log is host output: the parser must not read it as test output.
    c.lines.extend(lines(QEMU_STDERR_CRASH, Stream::Host));
    // The fault's PC is 0xfffffffe and its LR is in calibrate, inlined in sensor_sample: no
    // test on the crash site, so Unity's run order decides.
    let r = parse(&c, &SENSOR_TESTS, &["calibrate", "sensor_sample"]);
    assert_eq!(r.verdict, Verdict::Fail);
    assert_eq!(
        statuses(&r),
        vec![
            (SENSOR_TESTS[0], CaseStatus::Pass),
            (SENSOR_TESTS[1], CaseStatus::Pass),
            (SENSOR_TESTS[2], CaseStatus::Crash),
            (SENSOR_TESTS[3], CaseStatus::Missing),
        ]
    );
    assert!(detector_fires(UNITY_CRASH).is_empty());

    // Without a list of expected tests the crash cannot be pinned on a test.
    let r = parse(&c, &[], &["calibrate", "sensor_sample"]);
    assert_eq!(r.cases[2].name, "(run)");
    assert_eq!(r.cases[2].status, CaseStatus::Crash);
}

#[test]
fn hanging_image() {
    let r = parse(&capture(UNITY_HANG, RunEnd::Timeout), &EVENT_TESTS, &[]);
    assert_eq!(r.verdict, Verdict::Fail);
    assert_eq!(
        statuses(&r),
        vec![
            (EVENT_TESTS[0], CaseStatus::Pass),
            (EVENT_TESTS[1], CaseStatus::Pass),
            (EVENT_TESTS[2], CaseStatus::Pass),
            (EVENT_TESTS[3], CaseStatus::Hang),
            (EVENT_TESTS[4], CaseStatus::Missing),
        ]
    );
    assert!(detector_fires(UNITY_HANG).is_empty());
}

#[test]
fn output_that_just_stops_is_inconclusive() {
    // The same truncated output, had the image exited instead of hanging.
    let r = parse(
        &capture(UNITY_HANG, RunEnd::Exited { code: 0 }),
        &EVENT_TESTS,
        &[],
    );
    assert_eq!(r.verdict, Verdict::Inconclusive);
}

#[test]
fn broken_build() {
    let d = parse_build_log(GCC_ERROR);
    assert_eq!(d.len(), 2, "{d:#?}");
    assert_eq!(d[0].severity, Severity::Error);
    assert_eq!(d[0].tool, "compiler");
    assert_eq!(d[0].file.as_deref(), Some("src/crc.c"));
    assert_eq!((d[0].line, d[0].column), (Some(42), Some(20)));
    assert_eq!(
        d[0].message,
        "'CRC16_CCITT_INIT' undeclared (first use in this function); did you mean \
         'CRC16_CCITT_POLY'?"
    );
    assert_eq!(d[0].log_line, 3);
    assert_eq!(d[1].severity, Severity::Note);
    assert_eq!(d[1].log_line, 7);
}
