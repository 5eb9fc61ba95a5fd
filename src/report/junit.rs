//! `junit.xml` for CI (Jenkins, GitLab, anything that reads JUnit XML): one test suite named after
//! the profile and board, one test case per firmware test. Pure rendering from a [`Report`]; no
//! I/O and no decisions.
//!
//! Mapping, chosen for what CI servers actually read (GitLab shows only the text of `<failure>` and
//! `<error>` and the `file` attribute; Jenkins shows the `message` attribute and the text):
//! - PASS → a plain test case; IGNORE → `<skipped>`;
//! - FAIL → `<failure>` with the harness message, the text leading with `file:line`;
//! - CRASH and HANG → `<error>`: the firmware did not finish the test, so it neither passed nor
//!   failed; the text carries the crash (site, registers, fault bits) or where the image hung;
//! - MISSING → `<error>` "never reported".
//!
//! - a test repeated with `--repeat` that failed on some runs and passed on others →
//!   `<flakyFailure>`s in a passing case; one that failed every run → `<rerunFailure>`s beside
//!   its failure (Maven Surefire's re-run elements, read by Jenkins and GitLab).
//!
//! `file` and `line` are attributes of `<testcase>` (the form GitLab and pytest use). When the
//! build failed, or the run ended badly before any test reported, a test case named after that
//! step (classname `fwfix`) carries the error, so CI never shows an empty green run.

use super::model::{
    crash_headline, crash_lines, describe_hang, file_line, plural, verdict_name, Report,
};
use crate::analysis::Severity;
use crate::machine::flaky;
use crate::results::{CaseStatus, TestCase};
use quick_junit::{NonSuccessKind, Property, TestCaseStatus, TestRerun, TestSuite};
use std::path::Path;
use std::time::Duration;

/// How many build diagnostics the synthetic `build` case lists.
const MAX_DIAGNOSTICS: usize = 20;

/// Renders `junit.xml`.
pub fn render_junit(report: &Report) -> Result<String, quick_junit::SerializeError> {
    let mut junit = quick_junit::Report::new("fwfix");
    junit.set_timestamp(report.started_at.fixed_offset());
    junit.set_time(Duration::from_millis(report.duration_ms));

    let mut suite = TestSuite::new(suite_name(report));
    suite.set_timestamp(report.started_at.fixed_offset());
    if let Some(attempt) = report.attempts.last() {
        suite.set_time(Duration::from_millis(attempt.duration_ms));
    }
    suite.add_properties(suite_properties(report));
    if !report.message.is_empty() {
        suite.set_system_out(format!(
            "{}\nDetails: report.md in the run directory.\n",
            report.message
        ));
    }

    for case in report_cases(report) {
        suite.add_test_case(case);
    }

    // quick-junit counts skips only as `disabled`; Jenkins and most readers look for `skipped`.
    let skipped = report
        .cases
        .iter()
        .filter(|c| c.status == CaseStatus::Ignore)
        .count();
    suite
        .extra
        .insert("skipped".into(), skipped.to_string().into());

    junit.add_test_suite(suite);
    junit.to_string()
}

/// The test cases of one run: a failed build's, each firmware test's, and the run's own error
/// when it ended badly with nothing else to show it. `fwfix matrix` gathers these per board.
pub fn report_cases(report: &Report) -> Vec<quick_junit::TestCase> {
    let mut cases = Vec::new();
    if let Some(build) = report.build.as_ref().filter(|b| !b.success) {
        let errors = build.count(Severity::Error);
        let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
        status
            .set_type("BUILD_FAILURE")
            .set_message(format!("the build failed with {}", plural(errors, "error")));
        let mut text: Vec<String> = vec![format!("$ {}", build.command)];
        text.extend(build.first_diagnostics(MAX_DIAGNOSTICS).0);
        text.push(format!("full log: {}", build.log));
        status.set_description(text.join("\n"));
        cases.push(fwfix_case("build", status));
    }

    for case in &report.cases {
        cases.push(test_case(report, case));
    }

    if let Some(status) = run_error(report) {
        cases.push(fwfix_case("run", status));
    }

    cases
}

/// `crc on qemu-mps2-an385`, or just the profile when the board is unknown.
fn suite_name(report: &Report) -> String {
    match (report.profile.is_empty(), report.board.is_empty()) {
        (false, false) => format!("{} on {}", report.profile, report.board),
        (false, true) => report.profile.clone(),
        (true, false) => report.board.clone(),
        (true, true) => "fwfix".to_string(),
    }
}

fn suite_properties(report: &Report) -> Vec<Property> {
    let mut properties = vec![
        Property::new("fwfix.version", report.version.as_str()),
        Property::new("fwfix.run_id", report.run_id.as_str()),
        Property::new("fwfix.command", report.command.name()),
        Property::new("fwfix.status", report.status.name()),
        Property::new("fwfix.final_state", report.final_state.name()),
        Property::new("fwfix.board", report.board.as_str()),
        Property::new("fwfix.profile", report.profile.as_str()),
    ];
    if let Some(verdict) = report.verdict {
        properties.push(Property::new("fwfix.verdict", verdict_name(verdict)));
    }
    if let Some(class) = report.error_class {
        properties.push(Property::new("fwfix.error_class", class.name()));
    }
    if let Some(culprit) = &report.culprit {
        properties.push(Property::new("fwfix.culprit", culprit.as_str()));
    }
    properties
}

fn test_case(report: &Report, case: &TestCase) -> quick_junit::TestCase {
    let place = file_line(case.file.as_deref(), case.line);
    let message = case.message.as_deref().filter(|m| !m.is_empty());
    // The text of the element: the location first (what GitLab shows), then the details.
    let mut text: Vec<String> = Vec::new();
    if let Some(place) = &place {
        text.push(match message {
            Some(message) => format!("{place}: {message}"),
            None => place.clone(),
        });
    } else if let Some(message) = message {
        text.push(message.to_string());
    }

    let mut status = match case.status {
        CaseStatus::Pass => TestCaseStatus::success(),
        CaseStatus::Ignore => {
            let mut status = TestCaseStatus::skipped();
            if let Some(message) = message {
                status.set_message(message);
            }
            status
        }
        CaseStatus::Fail => {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
            status
                .set_type("FAIL")
                .set_message(message.unwrap_or("failed"));
            status
        }
        CaseStatus::Crash => {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
            status.set_type("CRASH");
            match &report.crash {
                Some(crash) => {
                    status.set_message(format!("crashed: {}", crash_headline(crash)));
                    extend_new(&mut text, crash_lines(crash));
                }
                None => {
                    status.set_message(message.unwrap_or("crashed"));
                }
            }
            status
        }
        CaseStatus::Hang => {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
            status.set_type("HANG");
            let hang = match &report.hang_site {
                Some(site) => format!(
                    "hung: stuck in {}",
                    describe_hang(site, report.hang_handler.as_ref())
                ),
                None => "hung: no result before the test timeout".to_string(),
            };
            status.set_message(hang.as_str());
            text.push(hang);
            status
        }
        CaseStatus::Missing => {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
            status.set_type("MISSING").set_message("never reported");
            // A case's own message (an interrupted run says so) is already the text.
            if message.is_none() {
                text.push("the firmware never reported a result for this test".to_string());
            }
            status
        }
    };
    if !text.is_empty() {
        status.set_description(text.join("\n"));
    }

    let status = with_repeats(report, case, status);
    let mut junit_case = quick_junit::TestCase::new(case.name.as_str(), status);
    junit_case.set_classname(classname(report, case));
    junit_case.set_time(Duration::ZERO);
    if let Some(file) = &case.file {
        junit_case.extra.insert("file".into(), file.as_str().into());
    }
    if let Some(line) = case.line {
        junit_case
            .extra
            .insert("line".into(), line.to_string().into());
    }
    junit_case
}

/// A repeated test as Maven Surefire writes a re-run one (what Jenkins, GitLab and most readers
/// understand): one that passed on some runs and failed on others is a passing case with a
/// `<flakyFailure>` per failed run; one that never passed is the failure (or error) of its last
/// run with a `<rerunFailure>` per earlier run. The counts and the Wilson interval go in each
/// run's message; a test that passed every run, or ran once, is left as it is.
fn with_repeats(report: &Report, case: &TestCase, status: TestCaseStatus) -> TestCaseStatus {
    let Some(count) = report
        .pass_counts
        .iter()
        .find(|c| c.name == case.name && c.runs > 1 && c.passed < c.runs)
    else {
        return status;
    };
    if case.status == CaseStatus::Ignore {
        return status;
    }
    let summary = format!(
        "failed on {} of {} runs; pass rate {}",
        count.runs - count.passed,
        count.runs,
        flaky::describe(count.passed, count.runs)
    );
    let rerun = |kind| {
        let mut rerun = TestRerun::new(kind);
        rerun.set_type("FAIL").set_message(summary.as_str());
        rerun
    };
    if count.passed > 0 {
        let mut flaky = TestCaseStatus::success();
        flaky.add_reruns((0..count.runs - count.passed).map(|_| rerun(NonSuccessKind::Failure)));
        return flaky;
    }
    let mut status = status;
    let kind = match &status {
        TestCaseStatus::NonSuccess { kind, .. } => *kind,
        TestCaseStatus::Success { .. } | TestCaseStatus::Skipped { .. } => NonSuccessKind::Failure,
    };
    status.add_reruns((1..count.runs).map(|_| rerun(kind)));
    status
}

/// The file stem (`test_crc` for `test/test_crc.c`), so CI groups cases by test file; the profile
/// when the harness gave no file.
fn classname(report: &Report, case: &TestCase) -> String {
    case.file
        .as_deref()
        .and_then(|file| Path::new(file).file_stem())
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_else(|| {
            if report.profile.is_empty() {
                "fwfix".to_string()
            } else {
                report.profile.clone()
            }
        })
}

/// The error for a run that ended badly with nothing in the cases to show it: no test reported
/// (and the build did not fail — that has its own case), or a crash no case was blamed for.
fn run_error(report: &Report) -> Option<TestCaseStatus> {
    let build_failed = report.build.as_ref().is_some_and(|b| !b.success);
    let unreported_failure = report.cases.is_empty() && !report.status.is_ok() && !build_failed;
    let orphan_crash =
        report.crash.is_some() && !report.cases.iter().any(|c| c.status == CaseStatus::Crash);
    if !unreported_failure && !orphan_crash {
        return None;
    }
    let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
    let mut text = Vec::new();
    if !report.message.is_empty() {
        text.push(report.message.clone());
    }
    match (&report.crash, report.error_class) {
        (Some(crash), _) => {
            status
                .set_type("CRASH")
                .set_message(format!("crashed: {}", crash_headline(crash)));
            extend_new(&mut text, crash_lines(crash));
        }
        (None, Some(class)) => {
            status
                .set_type(class.name())
                .set_message(report.message.as_str());
        }
        (None, None) => {
            status
                .set_type(report.status.name())
                .set_message(report.message.as_str());
        }
    }
    if let Some(site) = &report.hang_site {
        text.push(format!(
            "hung: stuck in {}",
            describe_hang(site, report.hang_handler.as_ref())
        ));
    }
    if !text.is_empty() {
        status.set_description(text.join("\n"));
    }
    Some(status)
}

/// Adds the lines the text does not already end a line with: the crash summary is often the
/// case's message (or the run's), which the text already opens with.
fn extend_new(text: &mut Vec<String>, lines: Vec<String>) {
    for line in lines {
        if !text.iter().any(|t| t.ends_with(line.as_str())) {
            text.push(line);
        }
    }
}

fn fwfix_case(name: &str, status: TestCaseStatus) -> quick_junit::TestCase {
    let mut case = quick_junit::TestCase::new(name, status);
    case.set_classname("fwfix");
    case.set_time(Duration::ZERO);
    case
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{CrashReport, Diagnostic, Location};
    use crate::machine::{ErrorClass, State};
    use crate::report::model::{AttemptSummary, BuildSummary, Command, Status};
    use crate::report::test_support::case;
    use crate::results::Verdict;
    use regex::Regex;

    fn crash() -> CrashReport {
        CrashReport {
            pc: Some("0x000001a4".into()),
            lr: None,
            cfsr: Some("0x00000082".into()),
            hfsr: None,
            function: Some("crc_update".into()),
            file: Some("src/crc.c".into()),
            line: Some(17),
            caller: None,
            fault_bits: vec!["DACCVIOL".into(), "MMARVALID".into()],
            fault_address: None,
            exception: Some("MemManage".into()),
            lockup: false,
            summary: "MemManage: data access violation".into(),
        }
    }

    fn sample() -> Report {
        let mut report = crate::report::test_support::report(
            "r1",
            Command::Test,
            Status::Failed,
            State::ResultAnalysis,
            2,
        );
        report.board = "qemu-mps2-an385".into();
        report.profile = "crc".into();
        report.message = "tests failed".into();
        report.verdict = Some(Verdict::Fail);
        report.cases = vec![
            case("test_pass", CaseStatus::Pass, None, Some(10)),
            case(
                "test_fail",
                CaseStatus::Fail,
                Some("Expected 1 Was 2"),
                Some(20),
            ),
            case(
                "test_ignored",
                CaseStatus::Ignore,
                Some("not on QEMU"),
                Some(30),
            ),
            case("test_crash", CaseStatus::Crash, None, Some(40)),
            case("test_hang", CaseStatus::Hang, None, None),
            case("test_missing", CaseStatus::Missing, None, None),
        ];
        report.crash = Some(crash());
        report.hang_site = Some(Location {
            address: "0x00000210".into(),
            function: Some("wait_ready".into()),
            file: Some("src/uart.c".into()),
            line: Some(33),
        });
        report.attempts = vec![AttemptSummary {
            attempt: 1,
            verdict: Verdict::Fail,
            end: "timeout".into(),
            exit_code: None,
            duration_ms: 1_500,
            console_log: "iter-000/console.log".into(),
            passed: 1,
            failed: 4,
            nonce: None,
            crash: None,
        }];
        report
    }

    /// The `<testcase ...>` element named `name`, up to its end.
    fn testcase_xml<'a>(xml: &'a str, name: &str) -> &'a str {
        let start = xml
            .find(&format!("<testcase name=\"{name}\""))
            .unwrap_or_else(|| panic!("no testcase {name} in\n{xml}"));
        let rest = &xml[start..];
        let end = rest
            .find("</testcase>")
            .map(|i| i + "</testcase>".len())
            .or_else(|| rest.find("/>").map(|i| i + 2))
            .unwrap();
        &rest[..end]
    }

    #[test]
    fn junit_parses_back_with_one_suite_and_the_right_counts() {
        let xml = render_junit(&sample()).unwrap();
        let parsed = quick_junit::Report::deserialize_from_str(&xml).unwrap();
        assert_eq!(parsed.test_suites.len(), 1);
        let suite = &parsed.test_suites[0];
        assert_eq!(suite.name.as_str(), "crc on qemu-mps2-an385");
        assert_eq!(suite.test_cases.len(), 6);
        assert_eq!(suite.failures, 1);
        assert_eq!(suite.errors, 3);
        assert_eq!(suite.time, Some(Duration::from_millis(1_500)));
        assert!(Regex::new(r#"<testsuite name="crc on qemu-mps2-an385" tests="6" disabled="1" errors="3" failures="1"[^>]* skipped="1""#)
            .unwrap()
            .is_match(&xml));
        assert!(suite
            .properties
            .iter()
            .any(|p| p.name.as_str() == "fwfix.status" && p.value.as_str() == "FAILED"));
    }

    #[test]
    fn repeated_tests_carry_surefire_flaky_and_rerun_elements() {
        let mut report = sample();
        report.pass_counts = vec![
            crate::report::PassCount::new("test_pass", 19, 20),
            crate::report::PassCount::new("test_fail", 0, 3),
            crate::report::PassCount::new("test_ignored", 0, 3),
        ];
        let xml = render_junit(&report).unwrap();
        let flaky = testcase_xml(&xml, "test_pass");
        assert_eq!(flaky.matches("<flakyFailure").count(), 1, "{flaky}");
        assert!(
            flaky.contains("message=\"failed on 1 of 20 runs; pass rate 0.95 [0.76, 0.99]\""),
            "{flaky}"
        );
        assert!(!flaky.contains("<failure"), "a flaky test passed: {flaky}");
        let never = testcase_xml(&xml, "test_fail");
        assert!(
            never.contains("<failure message=\"Expected 1 Was 2\""),
            "{never}"
        );
        assert_eq!(never.matches("<rerunFailure").count(), 2, "{never}");
        let skipped = testcase_xml(&xml, "test_ignored");
        assert!(!skipped.contains("rerun"), "{skipped}");
        // Readers count the flaky test as passed, the one that never passed as failed.
        let parsed = quick_junit::Report::deserialize_from_str(&xml).unwrap();
        assert_eq!(parsed.test_suites[0].failures, 1);
    }

    #[test]
    fn junit_cases_carry_classname_file_and_line() {
        let xml = render_junit(&sample()).unwrap();
        let pass = testcase_xml(&xml, "test_pass");
        assert!(pass.contains(r#"classname="test_crc""#), "{pass}");
        assert!(pass.contains(r#"file="test/test_crc.c""#), "{pass}");
        assert!(pass.contains(r#"line="10""#), "{pass}");
        assert!(!pass.contains("<failure"), "{pass}");
        let hang = testcase_xml(&xml, "test_hang");
        assert!(
            hang.contains(r#"classname="crc""#),
            "no file: the profile: {hang}"
        );
        assert!(!hang.contains("file="), "{hang}");
    }

    #[test]
    fn junit_fail_is_a_failure_with_message_and_location() {
        let xml = render_junit(&sample()).unwrap();
        let fail = testcase_xml(&xml, "test_fail");
        assert!(
            Regex::new(r#"<failure message="Expected 1 Was 2" type="FAIL">test/test_crc.c:20: Expected 1 Was 2</failure>"#)
                .unwrap()
                .is_match(fail),
            "{fail}"
        );
    }

    /// Regression: the `<error>` body of a crashed case said the crash summary twice, as the
    /// case's message and again as the crash's first line.
    #[test]
    fn junit_crash_body_says_the_summary_once() {
        let mut report = sample();
        let summary = crash().summary;
        for c in report
            .cases
            .iter_mut()
            .filter(|c| c.status == CaseStatus::Crash)
        {
            c.message = Some(summary.clone());
        }
        let xml = render_junit(&report).unwrap();
        let crash = testcase_xml(&xml, "test_crash");
        assert_eq!(crash.matches(summary.as_str()).count(), 1, "{crash}");
    }

    #[test]
    fn junit_crash_hang_and_missing_are_errors_with_their_text() {
        let xml = render_junit(&sample()).unwrap();
        let crash = testcase_xml(&xml, "test_crash");
        assert!(
            crash.contains(
                r#"<error message="crashed: MemManage in crc_update (src/crc.c:17)" type="CRASH">"#
            ),
            "{crash}"
        );
        assert!(crash.contains("fault bits: DACCVIOL, MMARVALID"), "{crash}");
        assert!(crash.contains("PC 0x000001a4"), "{crash}");

        let hang = testcase_xml(&xml, "test_hang");
        assert!(hang.contains(r#"type="HANG""#), "{hang}");
        assert!(
            hang.contains("hung: stuck in wait_ready (src/uart.c:33) at 0x00000210"),
            "{hang}"
        );

        let missing = testcase_xml(&xml, "test_missing");
        assert!(
            missing.contains(r#"<error message="never reported" type="MISSING">"#),
            "{missing}"
        );

        let ignored = testcase_xml(&xml, "test_ignored");
        assert!(
            ignored.contains(r#"<skipped message="not on QEMU">"#),
            "{ignored}"
        );
        assert!(
            !xml.contains(r#"<testcase name="run""#),
            "the crash is blamed on a case"
        );
    }

    #[test]
    fn junit_failed_build_becomes_an_error_case() {
        let mut report = sample();
        report.cases.clear();
        report.crash = None;
        report.hang_site = None;
        report.status = Status::Error;
        report.error_class = Some(ErrorClass::BuildFailure);
        report.build = Some(BuildSummary {
            command: "make".into(),
            success: false,
            duration_ms: 900,
            log: "iter-000/build.log".into(),
            diagnostics: vec![Diagnostic {
                severity: Severity::Error,
                tool: "compiler".into(),
                kind: "compile".into(),
                file: Some("src/crc.c".into()),
                line: Some(12),
                column: Some(5),
                message: "expected ';'".into(),
                log_line: 7,
            }],
        });
        let xml = render_junit(&report).unwrap();
        let build = testcase_xml(&xml, "build");
        assert!(build.contains(r#"classname="fwfix""#), "{build}");
        assert!(
            build.contains(
                r#"<error message="the build failed with 1 error" type="BUILD_FAILURE">"#
            ),
            "{build}"
        );
        assert!(
            build.contains("src/crc.c:12:5: error: expected &apos;;&apos;")
                || build.contains("src/crc.c:12:5: error: expected ';'"),
            "{build}"
        );
        assert!(!xml.contains(r#"<testcase name="run""#), "{xml}");
    }

    #[test]
    fn junit_run_without_results_is_never_empty_and_green() {
        let mut report = sample();
        report.cases.clear();
        report.crash = None;
        report.hang_site = None;
        report.status = Status::Error;
        report.error_class = Some(ErrorClass::TestEnvFailure);
        report.message = "QEMU died: killed by signal 9".into();
        let xml = render_junit(&report).unwrap();
        let run = testcase_xml(&xml, "run");
        assert!(
            run.contains(
                r#"<error message="QEMU died: killed by signal 9" type="TEST_ENV_FAILURE">"#
            ),
            "{run}"
        );

        report.status = Status::Passed;
        let xml = render_junit(&report).unwrap();
        assert!(!xml.contains("<testcase"), "{xml}");
    }
}
