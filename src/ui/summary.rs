//! The summary a command prints on stdout when it ends: the cases, the crash, the hang site, the
//! build's first diagnostics, pass counts over repeated attempts, and one status line. Rendering is
//! pure ([`render_summary`]) so it can be tested; [`print_summary`] only adds the terminal.

use super::{paint, truncate, ColorChoice, Paint};
use crate::analysis::Severity;
use crate::report::{
    case_status_name, crash_headline, describe_hang, file_line, format_duration, plural, visible,
    Command, Report,
};
use crate::results::CaseStatus;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

/// Width used when stdout is not a terminal (or its size is unknown).
const DEFAULT_WIDTH: usize = 100;
/// Build diagnostics shown before pointing at the log.
const MAX_DIAGNOSTICS: usize = 5;
const MAX_NAME_WIDTH: usize = 40;
const MAX_LOCATION_WIDTH: usize = 32;
/// A message column narrower than this is not worth having; it wraps instead.
const MIN_MESSAGE_WIDTH: usize = 20;
/// `MISSING`, the longest case status.
const STATUS_WIDTH: usize = 7;

/// How to render the summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SummaryStyle {
    pub color: bool,
    /// Line width to fit the case table into.
    pub width: usize,
}

/// Prints the summary of `report` (written to `run_dir`) on stdout. A closed stdout is ignored:
/// the report files hold the same facts.
pub fn print_summary(report: &Report, run_dir: &Path, color: ColorChoice) {
    print_stdout(&render_summary(report, run_dir, stdout_style(color)));
}

/// One pair of several tested at once, for [`print_pairs_summary`].
#[derive(Debug)]
pub struct PairRow<'a> {
    /// `<board>/<profile>`.
    pub job: &'a str,
    /// `PASSED`, `FAILED`, `ERROR`, `ABORTED` or `NOT RUN`.
    pub status: &'a str,
    /// The pair's report and run directory, when it ran.
    pub report: Option<(&'a Report, &'a Path)>,
    /// Why a pair could not run at all.
    pub error: Option<String>,
}

/// Prints the summary of several pairs: each pair that did not pass in full (its cases, crash,
/// build errors), then one line a pair.
pub fn print_pairs_summary(rows: &[PairRow<'_>], color: ColorChoice) {
    print_stdout(&render_pairs_summary(rows, stdout_style(color)));
}

/// The pairs' summary as text.
pub fn render_pairs_summary(rows: &[PairRow<'_>], style: SummaryStyle) -> String {
    let mut out = String::new();
    for row in rows.iter().filter(|r| r.status != "PASSED") {
        if let Some((report, run_dir)) = row.report {
            out.push_str(&paint(
                &format!("── {} ──", row.job),
                Paint::Bold,
                style.color,
            ));
            out.push('\n');
            out.push_str(&render_summary(report, run_dir, style));
            out.push('\n');
        }
    }
    let job_width = rows
        .iter()
        .map(|r| r.job.chars().count())
        .max()
        .unwrap_or(0)
        .min(MAX_NAME_WIDTH);
    for row in rows {
        let tint = match row.status {
            "PASSED" => Paint::Green,
            "NOT RUN" | "ABORTED" | "SKIPPED" => Paint::Yellow,
            _ => Paint::Red,
        };
        let detail = match (row.report, &row.error) {
            (Some((report, run_dir)), _) => {
                // Counted as the run's own summary counts them: a case that never reported is
                // missing, not failed.
                format!("{}  {}", report.counts().describe(), run_dir.display())
            }
            (None, Some(error)) => error.clone(),
            (None, None) => String::new(),
        };
        let line = format!(
            "{}  {:<job_width$}  {}",
            paint(&format!("{:<STATUS_WIDTH$}", row.status), tint, style.color),
            truncate(row.job, job_width),
            detail.replace('\n', " ")
        );
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn stdout_style(color: ColorChoice) -> SummaryStyle {
    let width = console::Term::stdout()
        .size_checked()
        .map(|(_rows, columns)| usize::from(columns))
        .unwrap_or(DEFAULT_WIDTH);
    SummaryStyle {
        color: color.for_stdout(),
        width,
    }
}

fn print_stdout(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush());
}

/// The summary as text, one `\n`-terminated line after another.
pub fn render_summary(report: &Report, run_dir: &Path, style: SummaryStyle) -> String {
    let mut out = String::new();
    // Writing into a String cannot fail; the results are discarded for that reason only.
    let _ = write_summary(&mut out, report, run_dir, style);
    out
}

fn write_summary(
    out: &mut String,
    report: &Report,
    run_dir: &Path,
    style: SummaryStyle,
) -> std::fmt::Result {
    write_cases(out, report, style)?;
    let color = style.color;
    let width = style.width.max(MIN_MESSAGE_WIDTH);

    if let Some(crash) = &report.crash {
        let mut line = format!("crash: {}", crash_headline(crash));
        if !crash.fault_bits.is_empty() {
            write!(line, " [{}]", crash.fault_bits.join(", "))?;
        }
        if let Some(cfsr) = &crash.cfsr {
            write!(line, " CFSR {cfsr}")?;
        }
        writeln!(out, "{}", paint(&truncate(&line, width), Paint::Red, color))?;
    }
    if let Some(site) = &report.hang_site {
        let line = format!(
            "hang: stuck in {}",
            describe_hang(site, report.hang_handler.as_ref())
        );
        writeln!(out, "{}", paint(&truncate(&line, width), Paint::Red, color))?;
    }
    // Whole: it says what to check.
    if let Some(silence) = &report.console_silence {
        let line = format!("console: {}", visible(silence));
        writeln!(out, "{}", paint(&line, Paint::Yellow, color))?;
    }
    if let Some(build) = &report.build {
        if !build.success || !build.diagnostics.is_empty() {
            let errors = build.count(Severity::Error);
            let warnings = build.count(Severity::Warning);
            let result = if build.success { "built" } else { "failed" };
            let line = format!(
                "build: {result}, {}, {} (log: {})",
                plural(errors, "error"),
                plural(warnings, "warning"),
                run_dir.join(&build.log).display()
            );
            let tint = if build.success {
                Paint::Yellow
            } else {
                Paint::Red
            };
            writeln!(out, "{}", paint(&line, tint, color))?;
            let (lines, more) = build.first_diagnostics(MAX_DIAGNOSTICS);
            for line in &lines {
                writeln!(out, "  {}", truncate(line, width.saturating_sub(2)))?;
            }
            if more > 0 {
                writeln!(out, "  … and {more} more")?;
            }
        }
    }
    if report.attempts.len() > 1 && !report.pass_counts.is_empty() {
        writeln!(out, "pass counts over {} attempts:", report.attempts.len())?;
        let name_width = report
            .pass_counts
            .iter()
            .map(|c| c.name.chars().count())
            .max()
            .unwrap_or(0)
            .min(MAX_NAME_WIDTH);
        for count in &report.pass_counts {
            let ratio = count.describe();
            let tint = if count.passed == count.runs {
                Paint::Green
            } else if count.passed == 0 {
                Paint::Red
            } else {
                Paint::Yellow
            };
            writeln!(
                out,
                "  {:<name_width$}  {}",
                truncate(&count.name, name_width),
                paint(&ratio, tint, color)
            )?;
        }
    }
    write_outcome(out, report)?;

    let counts = report.counts();
    let status = paint(
        report.status.name(),
        if report.status.is_ok() {
            Paint::Green
        } else {
            Paint::Red
        },
        color,
    );
    // A bisect's status is about the search; the cases are only its last step's, which
    // (at the culprit) failed, so its counts would read as a failed SUCCESS.
    let what = match report.command {
        Command::Bisect => plural(report.steps.len(), "step"),
        Command::Test | Command::Run => {
            format!("{} ({})", counts.describe(), plural(counts.total(), "test"))
        }
    };
    let mut line = format!(
        "{} {what} in {}",
        paint(&status, Paint::Bold, color),
        format_duration(report.duration_ms)
    );
    if let Some(class) = report.error_class {
        write!(line, " [{class}]")?;
    }
    writeln!(out, "{line}")?;
    if !report.message.is_empty() {
        writeln!(out, "{}", visible(&report.message))?;
    }
    writeln!(out, "run: {}", run_dir.display())
}

fn write_cases(out: &mut String, report: &Report, style: SummaryStyle) -> std::fmt::Result {
    if report.cases.is_empty() {
        return Ok(());
    }
    let name_width = report
        .cases
        .iter()
        .map(|c| c.name.chars().count())
        .max()
        .unwrap_or(0)
        .min(MAX_NAME_WIDTH);
    let locations: Vec<String> = report
        .cases
        .iter()
        .map(|c| file_line(c.file.as_deref(), c.line).unwrap_or_default())
        .collect();
    let location_width = locations
        .iter()
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(0)
        .min(MAX_LOCATION_WIDTH);
    let used = STATUS_WIDTH + 2 + name_width + 2 + location_width + 2;
    let message_width = style.width.saturating_sub(used).max(MIN_MESSAGE_WIDTH);

    for (case, location) in report.cases.iter().zip(&locations) {
        let status = format!("{:<STATUS_WIDTH$}", case_status_name(case.status));
        let tint = match case.status {
            CaseStatus::Pass => Paint::Green,
            CaseStatus::Ignore => Paint::Yellow,
            CaseStatus::Fail | CaseStatus::Crash | CaseStatus::Hang | CaseStatus::Missing => {
                Paint::Red
            }
        };
        let message = case.message.as_deref().unwrap_or("").replace('\n', " ");
        let line = format!(
            "{}  {:<name_width$}  {:<location_width$}  {}",
            paint(&status, tint, style.color),
            truncate(&case.name, name_width),
            truncate(location, location_width),
            truncate(&message, message_width)
        );
        writeln!(out, "{}", line.trim_end())?;
    }
    writeln!(out)
}

fn write_outcome(out: &mut String, report: &Report) -> std::fmt::Result {
    match report.command {
        Command::Test => Ok(()),
        Command::Run => {
            if let Some(fixed) = report.fixed.as_ref().filter(|f| !f.is_empty()) {
                writeln!(out, "fixed: {}", visible(&fixed.join(", ")))?;
            }
            if let Some(patch) = &report.patch {
                writeln!(out, "patch: {}", visible(patch))?;
            }
            if let Some(branch) = &report.branch {
                writeln!(out, "branch: {}", visible(branch))?;
            }
            if let Some(files) = &report.fix_needs_uncommitted {
                let which = if files.is_empty() {
                    "the files it touches".to_string()
                } else {
                    files.join(", ")
                };
                let held = if report.branch.is_some() {
                    "the branch holds them"
                } else {
                    "fix.patch is a diff against them"
                };
                writeln!(
                    out,
                    "note: the fix needs your uncommitted work in {}: {held}",
                    visible(&which)
                )?;
            }
            Ok(())
        }
        Command::Bisect => {
            for step in &report.steps {
                writeln!(
                    out,
                    "{:>3}  {}  {:<4}  {}: {}",
                    step.step,
                    step.commit.get(..7).unwrap_or(&step.commit),
                    step.verdict.name(),
                    visible(&step.subject),
                    visible(&step.reason)
                )?;
            }
            match &report.culprit {
                Some(culprit) => writeln!(out, "culprit: {culprit}")?,
                None => writeln!(out, "culprit: not found")?,
            }
            match report.confidence {
                Some(c) if !report.steps.is_empty() => writeln!(out, "confidence: {c}"),
                _ => Ok(()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{CrashReport, Diagnostic, Location};
    use crate::machine::{ErrorClass, State};
    use crate::report::test_support::case;
    use crate::report::{AttemptSummary, BuildSummary, PassCount, Status};
    use crate::results::Verdict;

    const PLAIN: SummaryStyle = SummaryStyle {
        color: false,
        width: 100,
    };

    fn sample() -> Report {
        let mut report = crate::report::test_support::report(
            "r1",
            Command::Test,
            Status::Failed,
            State::ResultAnalysis,
            3,
        );
        report.message = "1 test failed, 1 crashed".into();
        report.cases = vec![
            case("test_crc_basic", CaseStatus::Pass, None, Some(12)),
            case(
                "test_crc_empty",
                CaseStatus::Fail,
                Some("Expected 0 Was 255"),
                Some(42),
            ),
            case("test_crc_null", CaseStatus::Crash, None, None),
        ];
        report
    }

    fn run_dir() -> &'static Path {
        Path::new(".fwfix/runs/r1")
    }

    #[test]
    fn summary_lists_cases_then_status_line_and_run_dir() {
        let text = render_summary(&sample(), run_dir(), PLAIN);
        let expected = "\
PASS     test_crc_basic  test/test_crc.c:12
FAIL     test_crc_empty  test/test_crc.c:42  Expected 0 Was 255
CRASH    test_crc_null

FAILED 1 passed, 1 failed, 1 crashed (3 tests) in 3.0 s
1 test failed, 1 crashed
run: .fwfix/runs/r1
";
        assert_eq!(text, expected);
    }

    #[test]
    fn long_messages_are_cut_to_the_width() {
        let mut report = sample();
        report.cases[1].message = Some("x".repeat(300));
        let text = render_summary(&report, run_dir(), PLAIN);
        let fail = text.lines().nth(1).unwrap();
        assert_eq!(fail.chars().count(), 100, "{fail}");
        assert!(fail.ends_with('…'));

        let narrow = render_summary(
            &report,
            run_dir(),
            SummaryStyle {
                color: false,
                width: 70,
            },
        );
        let fail = narrow.lines().nth(1).unwrap();
        assert_eq!(fail.chars().count(), 70, "{fail}");
    }

    #[test]
    fn colour_only_when_asked() {
        let report = sample();
        let plain = render_summary(&report, run_dir(), PLAIN);
        assert!(!plain.contains('\x1b'));
        let coloured = render_summary(
            &report,
            run_dir(),
            SummaryStyle {
                color: true,
                width: 100,
            },
        );
        assert!(coloured.contains("\x1b[32mPASS   \x1b[0m"));
        assert!(coloured.contains("\x1b[31mFAIL   \x1b[0m"));
        assert!(coloured.contains("\x1b[31mFAILED\x1b[0m"));
    }

    #[test]
    fn crash_hang_build_and_pass_counts() {
        let mut report = sample();
        report.crash = Some(CrashReport {
            pc: Some("0x000001a4".into()),
            lr: None,
            cfsr: Some("0x00008200".into()),
            hfsr: None,
            function: Some("crc_update".into()),
            file: Some("src/crc.c".into()),
            line: Some(17),
            caller: None,
            fault_bits: vec!["PRECISERR".into(), "BFARVALID".into()],
            fault_address: None,
            exception: Some("HardFault".into()),
            lockup: false,
            summary: String::new(),
        });
        report.hang_site = Some(Location {
            address: "0x00000210".into(),
            function: Some("wait_ready".into()),
            file: Some("src/uart.c".into()),
            line: Some(33),
        });
        let diagnostic = Diagnostic {
            severity: Severity::Warning,
            tool: "compiler".into(),
            kind: "compile".into(),
            file: Some("src/crc.c".into()),
            line: Some(9),
            column: Some(3),
            message: "unused variable 'x'".into(),
            log_line: 4,
        };
        report.build = Some(BuildSummary {
            command: "make".into(),
            success: true,
            duration_ms: 800,
            log: "iter-000/build.log".into(),
            diagnostics: vec![diagnostic; 7],
        });
        let attempt = AttemptSummary {
            attempt: 1,
            verdict: Verdict::Fail,
            end: "verdict".into(),
            exit_code: None,
            duration_ms: 40,
            console_log: "iter-000/console-1.log".into(),
            passed: 1,
            failed: 2,
            nonce: None,
            crash: None,
        };
        report.attempts = vec![attempt.clone(), attempt];
        report.pass_counts = vec![
            PassCount::new("test_crc_basic", 2, 2),
            PassCount::new("test_crc_empty", 1, 2),
        ];
        report.error_class = Some(ErrorClass::Timeout);
        let silence =
            "the firmware printed nothing on its console in 15.0 s, and it did not fault \
                       (fwfix's breakpoints on its fault handlers never fired); check which UART";
        report.console_silence = Some(silence.into());
        let text = render_summary(&report, run_dir(), PLAIN);
        // Whole, however narrow the terminal: it says what to check.
        assert!(text.contains(&format!("console: {silence}\n")), "{text}");
        assert!(text.contains(
            "crash: HardFault in crc_update (src/crc.c:17) [PRECISERR, BFARVALID] CFSR 0x00008200\n"
        ));
        assert!(text.contains("hang: stuck in wait_ready (src/uart.c:33) at 0x00000210\n"));
        assert!(text.contains(
            "build: built, 0 errors, 7 warnings (log: .fwfix/runs/r1/iter-000/build.log)\n"
        ));
        assert_eq!(
            text.matches("  src/crc.c:9:3: warning: unused variable 'x'\n")
                .count(),
            5
        );
        assert!(text.contains("  … and 2 more\n"));
        assert!(text.contains(
            "pass counts over 2 attempts:\n  test_crc_basic  2/2 passed, 1.00 [0.34, 1.00], PASS\n  test_crc_empty  1/2 passed, 0.50 [0.09, 0.91], FLAKY\n"
        ));
        assert!(text.contains("(3 tests) in 3.0 s [TIMEOUT]\n"));
    }

    #[test]
    fn run_and_bisect_outcomes_and_no_cases() {
        let mut report = sample();
        report.cases.clear();
        report.command = Command::Run;
        report.status = Status::Success;
        report.fixed = Some(vec!["test_crc_empty".into()]);
        report.patch = Some("fix.patch".into());
        report.branch = Some("fwfix/r1".into());
        let text = render_summary(&report, run_dir(), PLAIN);
        assert!(text.starts_with(
            "fixed: test_crc_empty\npatch: fix.patch\nbranch: fwfix/r1\nSUCCESS 0 passed (0 tests)"
        ));
        report.fix_needs_uncommitted = Some(vec!["src/crc.c".into()]);
        assert!(render_summary(&report, run_dir(), PLAIN).starts_with(
            "fixed: test_crc_empty\npatch: fix.patch\nbranch: fwfix/r1\nnote: the fix needs your \
             uncommitted work in src/crc.c: the branch holds them\n"
        ));
        report.fix_needs_uncommitted = None;
        report.cases = vec![case("test_crc_empty", CaseStatus::Fail, None, None)];
        assert!(render_summary(&report, run_dir(), PLAIN).contains("(1 test) in"));
        report.cases.clear();

        report.command = Command::Bisect;
        report.culprit = Some("a1b2c3d".into());
        let text = render_summary(&report, run_dir(), PLAIN);
        assert!(text.contains("culprit: a1b2c3d\n"));

        report.steps = vec![crate::bisect::BisectStep {
            step: 3,
            role: crate::bisect::StepRole::Probe,
            commit: "a1b2c3d4e5f6".into(),
            subject: "crc16: simplify".into(),
            verdict: crate::bisect::StepVerdict::Good,
            runs: 3,
            passed: 2,
            failed: 1,
            duration_ms: 10,
            run_dir: "steps/03-a1b2c3d".into(),
            reason: "the tests pass on 2 of 3 runs (flaky: 1 failed)".into(),
            unanimous: false,
        }];
        report.confidence = Some(crate::bisect::Confidence::new(2.0 / 3.0));
        let text = render_summary(&report, run_dir(), PLAIN);
        assert!(
            text.starts_with(
                "  3  a1b2c3d  GOOD  crc16: simplify: the tests pass on 2 of 3 runs (flaky: 1 failed)\n\
                 culprit: a1b2c3d\nconfidence: 0.67\n"
            ),
            "{text}"
        );
    }

    /// Regression: a bisect that found its culprit printed "SUCCESS 0 passed, 1 failed (1 tests)",
    /// the counts of the culprit step's failing test.
    #[test]
    fn a_bisect_status_line_counts_its_steps_not_the_last_steps_cases() {
        let mut report = sample();
        report.command = Command::Bisect;
        report.status = Status::Success;
        report.cases = vec![case("test_crc_empty", CaseStatus::Fail, None, None)];
        report.culprit = Some("a1b2c3d".into());
        let text = render_summary(&report, run_dir(), PLAIN);
        assert!(text.contains("\nSUCCESS 0 steps in 3.0 s"), "{text}");
        assert!(!text.contains("passed"), "{text}");
    }

    /// Regression: `--jobs` said "0 passed, 4 failed" for a pair whose own summary said
    /// "1 failed, 3 missing".
    #[test]
    fn a_pair_counts_its_cases_as_its_own_summary_does() {
        let mut report = sample();
        report.cases = vec![
            case("a", CaseStatus::Fail, None, None),
            case("b", CaseStatus::Missing, None, None),
            case("c", CaseStatus::Missing, None, None),
            case("d", CaseStatus::Missing, None, None),
        ];
        let rows = [PairRow {
            job: "qemu/crc",
            status: "FAILED",
            report: Some((&report, run_dir())),
            error: None,
        }];
        let text = render_pairs_summary(&rows, PLAIN);
        let last = text.lines().last().unwrap();
        assert_eq!(
            last,
            "FAILED   qemu/crc  0 passed, 1 failed, 3 missing  .fwfix/runs/r1"
        );
        assert!(text.contains("FAILED 0 passed, 1 failed, 3 missing (4 tests)"));
    }
}
