//! `report.md`: the run told to a person — what happened, which tests failed where, the crash,
//! the build's diagnostics, the attempts, and where the logs are. Pure rendering from a
//! [`Report`]; no I/O and no decisions.

use super::model::{
    call_name, case_status_name, crash_lines, describe_hang, file_line, format_duration, plural,
    verdict_name, Command, Report, Tokens,
};
use super::visible;
use crate::machine::flaky;
use crate::results::CaseStatus;
use std::fmt::Write;

/// How many build diagnostics the report lists before pointing at the log.
const MAX_DIAGNOSTICS: usize = 20;

/// Renders `report.md`.
pub fn render_markdown(report: &Report) -> String {
    let mut out = String::new();
    // Writing into a String cannot fail; the results are discarded for that reason only.
    let _ = write_report(&mut out, report);
    out
}

fn write_report(out: &mut String, report: &Report) -> std::fmt::Result {
    writeln!(out, "# fwfix {}: {}", report.command, report.status)?;
    writeln!(out)?;
    if !report.message.is_empty() {
        writeln!(out, "{}", text(&report.message))?;
        writeln!(out)?;
    }
    write_facts(out, report)?;
    write_outcome(out, report)?;
    write_cases(out, report)?;
    write_crash(out, report)?;
    write_hang(out, report)?;
    write_build(out, report)?;
    write_lint(out, report)?;
    write_attempts(out, report)?;
    write_pass_counts(out, report)?;
    write_candidates(out, report)?;
    write_notes(out, report)?;
    write_files(out, report)
}

fn write_facts(out: &mut String, report: &Report) -> std::fmt::Result {
    writeln!(out, "- **Run:** {}", code(&report.run_id))?;
    if !report.board.is_empty() || !report.profile.is_empty() {
        writeln!(
            out,
            "- **Board:** {} — **profile:** {}",
            optional_code(Some(&report.board)),
            optional_code(Some(&report.profile))
        )?;
    }
    if !report.repo.is_empty() {
        writeln!(out, "- **Repository:** {}", code(&report.repo))?;
    }
    let error_class = report
        .error_class
        .map(|class| code(class.name()))
        .unwrap_or_else(|| "none".to_string());
    writeln!(
        out,
        "- **Final state:** {} — **error class:** {error_class}",
        code(report.final_state.name())
    )?;
    if let Some(verdict) = report.verdict {
        writeln!(out, "- **Verdict:** {}", code(verdict_name(verdict)))?;
    }
    if report.command != Command::Test {
        writeln!(out, "- **Iterations:** {}", report.iterations)?;
    }
    writeln!(
        out,
        "- **Started:** {} — **took:** {}",
        report
            .started_at
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        format_duration(report.duration_ms)
    )?;
    writeln!(out, "- **fwfix:** {}", report.version)?;
    writeln!(out)
}

fn write_outcome(out: &mut String, report: &Report) -> std::fmt::Result {
    match report.command {
        Command::Test => Ok(()),
        Command::Run => {
            writeln!(out, "## Fix")?;
            writeln!(out)?;
            match &report.fixed {
                Some(fixed) if !fixed.is_empty() => {
                    let names: Vec<String> = fixed.iter().map(|n| code(n)).collect();
                    writeln!(out, "- **Now passing:** {}", names.join(", "))?;
                }
                Some(_) | None => writeln!(out, "- **Now passing:** none of the targets")?,
            }
            writeln!(
                out,
                "- **Patch:** {}",
                optional_code(report.patch.as_deref())
            )?;
            writeln!(
                out,
                "- **Branch:** {}",
                optional_code(report.branch.as_deref())
            )?;
            if let Some(c) = &report.revert_conflict {
                let paths: Vec<String> = c.paths.iter().map(|p| code(p)).collect();
                writeln!(
                    out,
                    "- **Revert not forced:** reverting {} ({}) conflicts with later changes in {}",
                    code(&c.commit),
                    text(&c.subject),
                    paths.join(", ")
                )?;
            }
            if let Some(t) = &report.tokens {
                write_tokens(out, t)?;
            }
            writeln!(out)
        }
        Command::Bisect => {
            writeln!(out, "## Culprit")?;
            writeln!(out)?;
            match &report.culprit {
                Some(culprit) => writeln!(out, "The first bad commit is {}.", code(culprit))?,
                None => writeln!(out, "No culprit commit was found.")?,
            }
            writeln!(out)
        }
    }
}

/// The tokens line, and one line per iteration when there were several.
fn write_tokens(out: &mut String, t: &Tokens) -> std::fmt::Result {
    let budget = t
        .budget
        .map(|b| format!(" of a budget of {b}"))
        .unwrap_or_default();
    let unknown = |n: u32| match n {
        0 => String::new(),
        n => format!("; {} without usage (unknown)", plural(n as usize, "answer")),
    };
    writeln!(
        out,
        "- **Tokens:** {} ({} prompt + {} completion){budget}{}",
        t.total,
        t.prompt,
        t.completion,
        unknown(t.unknown_responses)
    )?;
    if t.per_iteration.len() > 1 {
        for i in &t.per_iteration {
            writeln!(
                out,
                "  - iteration {}: {} ({} prompt + {} completion){}",
                i.iteration,
                i.total,
                i.prompt,
                i.completion,
                unknown(i.unknown_responses)
            )?;
        }
    }
    Ok(())
}

fn write_cases(out: &mut String, report: &Report) -> std::fmt::Result {
    let counts = report.counts();
    writeln!(
        out,
        "## Test cases ({} total: {})",
        counts.total(),
        counts.describe()
    )?;
    writeln!(out)?;
    if report.cases.is_empty() {
        writeln!(out, "No test results were collected.")?;
        return writeln!(out);
    }
    writeln!(out, "| Status | Test | Location | Message |")?;
    writeln!(out, "|---|---|---|---|")?;
    for case in &report.cases {
        let status = case_status_name(case.status);
        let status = match case.status {
            CaseStatus::Pass | CaseStatus::Ignore => status.to_string(),
            CaseStatus::Fail | CaseStatus::Crash | CaseStatus::Hang | CaseStatus::Missing => {
                format!("**{status}**")
            }
        };
        let location = file_line(case.file.as_deref(), case.line)
            .map(|place| code(&place))
            .unwrap_or_default();
        writeln!(
            out,
            "| {status} | {} | {location} | {} |",
            code(&case.name),
            text(case.message.as_deref().unwrap_or(""))
        )?;
    }
    writeln!(out)
}

fn write_crash(out: &mut String, report: &Report) -> std::fmt::Result {
    let Some(crash) = &report.crash else {
        return Ok(());
    };
    writeln!(out, "## Crash")?;
    writeln!(out)?;
    for line in crash_lines(crash) {
        writeln!(out, "- {}", text(&line))?;
    }
    writeln!(out)
}

fn write_hang(out: &mut String, report: &Report) -> std::fmt::Result {
    if let Some(silence) = &report.console_silence {
        writeln!(out, "## Console")?;
        writeln!(out)?;
        writeln!(out, "**At the timeout:** {}.", text(silence))?;
        writeln!(out)?;
    }
    let Some(site) = &report.hang_site else {
        return Ok(());
    };
    writeln!(out, "## Hang")?;
    writeln!(out)?;
    writeln!(
        out,
        "The image stopped making progress; it was stuck in {}.",
        code(&describe_hang(site, report.hang_handler.as_ref()))
    )?;
    writeln!(out)
}

fn write_build(out: &mut String, report: &Report) -> std::fmt::Result {
    let Some(build) = &report.build else {
        return Ok(());
    };
    writeln!(out, "## Build")?;
    writeln!(out)?;
    writeln!(out, "- **Command:** {}", code(&build.command))?;
    writeln!(out, "- **Result:** {}", build.result_text())?;
    writeln!(out, "- **Log:** {}", code(&build.log))?;
    writeln!(out)?;
    let (lines, more) = build.first_diagnostics(MAX_DIAGNOSTICS);
    if lines.is_empty() {
        return Ok(());
    }
    write_fenced(out, &lines.join("\n"))?;
    if more > 0 {
        writeln!(out, "{more} more in {}.", code(&build.log))?;
        writeln!(out)?;
    }
    Ok(())
}

fn write_lint(out: &mut String, report: &Report) -> std::fmt::Result {
    let Some(lint) = &report.lint else {
        return Ok(());
    };
    writeln!(out, "## Lint")?;
    writeln!(out)?;
    match &lint.command {
        Some(command) => writeln!(
            out,
            "- **Command:** {} (read as {})",
            code(command),
            lint.format.name()
        )?,
        None => writeln!(out, "- **Command:** none: the build's warnings only")?,
    }
    let baseline = lint
        .baseline_findings
        .map(|n| format!("; the unpatched tree had {n}"))
        .unwrap_or_default();
    writeln!(
        out,
        "- **Iteration {}:** {}{baseline}: {}",
        lint.iteration,
        plural(lint.findings, "finding"),
        lint.verdict.words()
    )?;
    writeln!(out, "- **Findings:** {}", code(&lint.findings_file))?;
    writeln!(out)?;
    write_findings(out, &lint.new_findings)
}

/// New lint findings as a list, one per line.
fn write_findings(
    out: &mut String,
    findings: &[crate::analysis::lint::Finding],
) -> std::fmt::Result {
    if findings.is_empty() {
        return Ok(());
    }
    for f in findings {
        writeln!(out, "- new: {}", code(&f.describe()))?;
    }
    writeln!(out)
}

fn write_attempts(out: &mut String, report: &Report) -> std::fmt::Result {
    if report.attempts.is_empty() {
        return Ok(());
    }
    writeln!(out, "## Attempts")?;
    writeln!(out)?;
    writeln!(
        out,
        "| # | Verdict | Ended | Exit code | Duration | Passed | Failed | Crash | Console log |"
    )?;
    writeln!(out, "|---|---|---|---|---|---|---|---|---|")?;
    for attempt in &report.attempts {
        let cells = attempt.cells().map(|cell| text(&cell));
        writeln!(
            out,
            "| {} | {} |",
            cells.join(" | "),
            code(&attempt.console_log)
        )?;
    }
    writeln!(out)
}

fn write_pass_counts(out: &mut String, report: &Report) -> std::fmt::Result {
    if report.pass_counts.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "## Pass counts over {} attempts",
        report.attempts.len()
    )?;
    writeln!(out)?;
    writeln!(out, "| Test | Passed | Runs | Rate [95% interval] | Call |")?;
    writeln!(out, "|---|---|---|---|---|")?;
    for count in &report.pass_counts {
        writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            code(&count.name),
            count.passed,
            count.runs,
            flaky::describe(count.passed, count.runs),
            call_name(count.call)
        )?;
    }
    writeln!(out)
}

fn write_candidates(out: &mut String, report: &Report) -> std::fmt::Result {
    if report.candidates.is_empty() {
        return Ok(());
    }
    writeln!(out, "## Candidates")?;
    writeln!(out)?;
    writeln!(
        out,
        "| Iteration | Id | Origin | Verdict | Changed lines | Why |"
    )?;
    writeln!(out, "|---|---|---|---|---|---|")?;
    for candidate in &report.candidates {
        let cells = candidate.cells().map(|cell| text(&cell));
        writeln!(out, "| {} |", cells.join(" | "))?;
    }
    writeln!(out)?;
    for candidate in report
        .candidates
        .iter()
        .filter(|c| !c.new_findings.is_empty())
    {
        writeln!(
            out,
            "Lint findings {} of iteration {} ({}) adds:",
            candidate.id,
            candidate.iteration,
            text(&candidate.origin)
        )?;
        writeln!(out)?;
        write_findings(out, &candidate.new_findings)?;
    }
    Ok(())
}

fn write_notes(out: &mut String, report: &Report) -> std::fmt::Result {
    if report.notes.is_empty() {
        return Ok(());
    }
    writeln!(out, "## Notes")?;
    writeln!(out)?;
    for note in &report.notes {
        writeln!(out, "- {}", text(note))?;
    }
    writeln!(out)
}

fn write_files(out: &mut String, report: &Report) -> std::fmt::Result {
    writeln!(out, "## Files")?;
    writeln!(out)?;
    writeln!(
        out,
        "Relative to the run directory: {} (machine-readable), {} (for CI).",
        code(super::REPORT_JSON),
        code(super::JUNIT_XML)
    )?;
    writeln!(out)?;
    if let Some(build) = &report.build {
        writeln!(out, "- build log: {}", code(&build.log))?;
    }
    for attempt in &report.attempts {
        writeln!(
            out,
            "- console log of attempt {}: {}",
            attempt.attempt,
            code(&attempt.console_log)
        )?;
    }
    if let Some(patch) = &report.patch {
        writeln!(out, "- fix: {}", code(patch))?;
    }
    Ok(())
}

/// Plain text safe inside a table cell or list item: one line, no table breaks, no raw HTML, no
/// terminal escapes (a report.md is read with `cat` too).
fn text(s: &str) -> String {
    visible(&s.replace("\r\n", " ").replace('\n', " "))
        .replace('|', "\\|")
        .replace('<', "&lt;")
}

/// An inline code span that survives backticks in the content and pipes inside tables.
fn code(s: &str) -> String {
    let s = visible(&s.replace("\r\n", " ").replace('\n', " ")).replace('|', "\\|");
    let longest_run = longest_backtick_run(&s);
    let fence = "`".repeat(longest_run + 1);
    if longest_run > 0 {
        format!("{fence} {s} {fence}")
    } else {
        format!("{fence}{s}{fence}")
    }
}

/// A code span, or `none` for a missing or empty value.
fn optional_code(s: Option<&str>) -> String {
    s.filter(|s| !s.is_empty())
        .map(code)
        .unwrap_or_else(|| "none".to_string())
}

/// A fenced block longer than any backtick run in `body`, so compiler output cannot close it.
fn write_fenced(out: &mut String, body: &str) -> std::fmt::Result {
    let fence = "`".repeat(longest_backtick_run(body).max(2) + 1);
    writeln!(out, "{fence}text")?;
    writeln!(out, "{}", visible(&body.replace("\r\n", "\n")))?;
    writeln!(out, "{fence}")?;
    writeln!(out)
}

fn longest_backtick_run(s: &str) -> usize {
    s.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{CrashReport, Diagnostic, Location, Severity};
    use crate::machine::{ErrorClass, State};
    use crate::report::model::{
        AttemptSummary, BuildSummary, IterationTokens, PassCount, RevertConflict, Status,
    };
    use crate::results::{TestCase, Verdict};

    fn sample() -> Report {
        let mut report = crate::report::test_support::report(
            "20240501-120000-crc",
            Command::Test,
            Status::Failed,
            State::ResultAnalysis,
            3,
        );
        report.message = "1 of 3 tests failed, 1 crashed: test_crc_empty".into();
        report.board = "qemu-mps2-an385".into();
        report.profile = "crc".into();
        report.repo = "fw".into();
        report.verdict = Some(Verdict::Fail);
        report.cases = vec![
            TestCase {
                name: "test_crc_basic".into(),
                status: CaseStatus::Pass,
                message: None,
                file: Some("test/test_crc.c".into()),
                line: Some(12),
            },
            TestCase {
                name: "test_crc_empty".into(),
                status: CaseStatus::Fail,
                message: Some("Expected 0 Was 255 | <odd>".into()),
                file: Some("test/test_crc.c".into()),
                line: Some(42),
            },
            TestCase {
                name: "test_crc_null".into(),
                status: CaseStatus::Crash,
                message: None,
                file: None,
                line: None,
            },
        ];
        report.crash = Some(CrashReport {
            pc: Some("0x000001a4".into()),
            lr: Some("0x00000151".into()),
            cfsr: Some("0x00008200".into()),
            hfsr: None,
            function: Some("crc_update".into()),
            file: Some("src/crc.c".into()),
            line: Some(17),
            caller: None,
            fault_bits: vec!["PRECISERR".into(), "BFARVALID".into()],
            fault_address: Some("0x00000000".into()),
            exception: Some("HardFault".into()),
            lockup: false,
            summary: "HardFault: bus error reading 0x00000000".into(),
        });
        report.build = Some(BuildSummary {
            command: "make test".into(),
            success: true,
            duration_ms: 3_200,
            log: "iter-000/build.log".into(),
            diagnostics: vec![Diagnostic {
                severity: Severity::Warning,
                tool: "compiler".into(),
                kind: "compile".into(),
                file: Some("src/crc.c".into()),
                line: Some(9),
                column: Some(3),
                message: "unused variable `x`".into(),
                log_line: 4,
            }],
        });
        report.attempts = vec![AttemptSummary {
            attempt: 1,
            verdict: Verdict::Fail,
            end: "crash".into(),
            exit_code: None,
            duration_ms: 420,
            console_log: "iter-000/console.log".into(),
            passed: 1,
            failed: 2,
            nonce: None,
            crash: None,
        }];
        report
    }

    #[test]
    fn markdown_states_status_message_and_context() {
        let md = render_markdown(&sample());
        assert!(md.starts_with("# fwfix test: FAILED\n"));
        assert!(md.contains("1 of 3 tests failed, 1 crashed: test_crc_empty"));
        assert!(md.contains("`qemu-mps2-an385`"));
        assert!(md.contains("`RESULT_ANALYSIS`"));
        assert!(md.contains("- **Started:** 2024-05-01T12:00:00Z — **took:** 3.0 s"));
        assert!(md.contains("**Verdict:** `FAIL`"));
        assert!(!md.contains("Iterations"), "test runs have no iterations");
    }

    #[test]
    fn markdown_case_table_has_status_location_and_escaped_message() {
        let md = render_markdown(&sample());
        assert!(md.contains("## Test cases (3 total: 1 passed, 1 failed, 1 crashed)"));
        assert!(md.contains(
            "| **FAIL** | `test_crc_empty` | `test/test_crc.c:42` | Expected 0 Was 255 \\| &lt;odd> |"
        ));
        assert!(md.contains("| PASS | `test_crc_basic` | `test/test_crc.c:12` |  |"));
        assert!(md.contains("| **CRASH** | `test_crc_null` |  |  |"));
    }

    #[test]
    fn markdown_crash_section_has_location_and_fault_bits() {
        let md = render_markdown(&sample());
        assert!(md.contains("## Crash"));
        assert!(md.contains("- HardFault in crc_update (src/crc.c:17)"));
        assert!(md.contains("- fault bits: PRECISERR, BFARVALID"));
        assert!(md.contains("CFSR 0x00008200"));
    }

    #[test]
    fn markdown_build_attempts_and_files() {
        let md = render_markdown(&sample());
        assert!(md.contains("- **Result:** built in 3.2 s (0 errors, 1 warning)"));
        assert!(md.contains("```text\nsrc/crc.c:9:3: warning: unused variable `x`\n```"));
        assert!(md.contains("| 1 | FAIL | crash |  | 420 ms | 1 | 2 |  | `iter-000/console.log` |"));
        assert!(md.contains("- console log of attempt 1: `iter-000/console.log`"));
        assert!(md.contains("- build log: `iter-000/build.log`"));
    }

    #[test]
    fn markdown_run_and_bisect_outcomes() {
        let mut report = sample();
        report.command = Command::Run;
        report.status = Status::Success;
        report.iterations = 2;
        report.fixed = Some(vec!["test_crc_empty".into()]);
        report.patch = Some("fix.patch".into());
        report.branch = Some("fwfix/20240501-120000-crc".into());
        let md = render_markdown(&report);
        assert!(md.contains("- **Iterations:** 2"));
        assert!(md.contains("- **Now passing:** `test_crc_empty`"));
        assert!(md.contains("- **Branch:** `fwfix/20240501-120000-crc`"));
        assert!(!md.contains("Tokens"));
        report.tokens = Some(Tokens {
            prompt: 1500,
            completion: 200,
            total: 1700,
            budget: Some(5000),
            unknown_responses: 1,
            per_iteration: vec![
                IterationTokens {
                    iteration: 1,
                    prompt: 800,
                    completion: 100,
                    total: 900,
                    unknown_responses: 0,
                },
                IterationTokens {
                    iteration: 2,
                    prompt: 700,
                    completion: 100,
                    total: 800,
                    unknown_responses: 1,
                },
            ],
        });
        report.revert_conflict = Some(RevertConflict {
            commit: "a1b2c3d".into(),
            subject: "crc: faster".into(),
            paths: vec!["src/crc.c".into()],
        });
        let md = render_markdown(&report);
        assert!(
            md.contains("- **Tokens:** 1700 (1500 prompt + 200 completion) of a budget of 5000; 1 answer without usage (unknown)"),
            "{md}"
        );
        assert!(md.contains("  - iteration 2: 800 (700 prompt + 100 completion); 1 answer"));
        assert!(md.contains(
            "reverting `a1b2c3d` (crc: faster) conflicts with later changes in `src/crc.c`"
        ));
        report.tokens = None;
        report.revert_conflict = None;

        report.command = Command::Bisect;
        report.status = Status::Failure;
        report.error_class = Some(ErrorClass::Timeout);
        let md = render_markdown(&report);
        assert!(md.contains("No culprit commit was found."));
        assert!(md.contains("**error class:** `TIMEOUT`"));
        report.culprit = Some("a1b2c3d".into());
        assert!(render_markdown(&report).contains("The first bad commit is `a1b2c3d`."));
    }

    #[test]
    fn markdown_hang_pass_counts_and_empty_cases() {
        let mut report = sample();
        report.cases.clear();
        report.crash = None;
        report.hang_site = Some(Location {
            address: "0x00000210".into(),
            function: Some("wait_ready".into()),
            file: Some("src/uart.c".into()),
            line: Some(33),
        });
        report.pass_counts = vec![PassCount::new("test_flaky", 2, 3)];
        let md = render_markdown(&report);
        assert!(md.contains("No test results were collected."));
        report.repo.clear();
        report.profile.clear();
        let md = render_markdown(&report);
        assert!(!md.contains("Repository"));
        assert!(md.contains("- **Board:** `qemu-mps2-an385` — **profile:** none"));
        assert!(!md.contains("## Crash"));
        assert!(md.contains("stuck in `wait_ready (src/uart.c:33) at 0x00000210`"));
        assert!(md.contains("| `test_flaky` | 2 | 3 | 0.67 [0.21, 0.94] | FLAKY |"));
    }

    #[test]
    fn markdown_lint_section_and_a_candidates_new_findings() {
        use crate::analysis::lint::{Finding, Format};
        use crate::report::model::{CandidateSummary, LintSummary, LintVerdict};
        let finding = Finding {
            tool: "cppcheck".into(),
            file: "src/crc.c".into(),
            line: Some(46),
            column: Some(17),
            severity: "error".into(),
            id: "nullPointer".into(),
            message: "Null pointer dereference: first".into(),
            text: "return *first;".into(),
        };
        let mut report = sample();
        report.lint = Some(LintSummary {
            iteration: 1,
            command: Some("cppcheck -q src".into()),
            format: Format::Cppcheck,
            log: Some("iter-001/lint.log".into()),
            findings_file: "iter-001/lint.json".into(),
            findings: 3,
            baseline_findings: Some(2),
            new_findings: vec![finding.clone()],
            verdict: LintVerdict::Rejected,
        });
        report.candidates = vec![CandidateSummary {
            iteration: 1,
            id: "c1".into(),
            origin: "01-dirty.diff".into(),
            verdict: "ranked".into(),
            rank: Some(2),
            error_class: None,
            changed_lines: 2,
            reason: "ranked 2nd: builds, 1 new lint finding(s)".into(),
            new_findings: vec![finding],
        }];
        let md = render_markdown(&report);
        assert!(md.contains("## Lint"), "{md}");
        assert!(
            md.contains("- **Command:** `cppcheck -q src` (read as cppcheck)"),
            "{md}"
        );
        assert!(
            md.contains(
                "- **Iteration 1:** 3 findings; the unpatched tree had 2: new findings: rejected"
            ),
            "{md}"
        );
        assert!(
            md.contains("- new: `src/crc.c:46: nullPointer: Null pointer dereference: first`"),
            "{md}"
        );
        assert!(
            md.contains("Lint findings c1 of iteration 1 (01-dirty.diff) adds:"),
            "{md}"
        );
    }

    #[test]
    fn code_spans_survive_backticks() {
        assert_eq!(code("a`b"), "`` a`b ``");
        assert_eq!(code("plain"), "`plain`");
        let mut out = String::new();
        write_fenced(&mut out, "x ``` y").unwrap();
        assert!(out.starts_with("````text\n"));
    }
}
