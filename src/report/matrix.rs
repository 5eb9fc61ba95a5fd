//! The report of a whole `fwfix matrix`: `report.json` (every pair, its status, tries and run
//! directory, and the pairs the manifest or the shard left out), one `junit.xml` for CI with a
//! test suite per board, and `report.md`. Pure rendering from a [`MatrixReport`]; the
//! orchestrator gathers the pairs' own reports and writes the files.
//!
//! JUnit mapping: a pair's firmware tests are the board's test cases with the profile as their
//! class (as in the pair's own junit.xml); a pair skipped by sim-first is one `<skipped>` case
//! named after the profile; a pair that could not run (its error before any run existed, or the
//! run was interrupted before it started) is one `<error>` case.

use super::junit::report_cases;
use super::model::Report;
use chrono::{DateTime, Utc};
use quick_junit::{NonSuccessKind, TestCaseStatus, TestSuite};
use serde::Serialize;
use std::fmt::Write as _;
use std::time::Duration;

/// One pair of the matrix.
#[derive(Debug, Clone, Serialize)]
pub struct MatrixPair {
    pub board: String,
    pub profile: String,
    pub hardware: bool,
    /// `PASSED`, `FAILED`, `ERROR`, `ABORTED`, `SKIPPED` or `NOT RUN`.
    pub status: String,
    /// Runs it took (more than one after infrastructure errors; 0 when it never ran).
    pub tries: u32,
    pub run_dir: Option<String>,
    /// Why it was skipped or could not run.
    pub reason: Option<String>,
    pub passed: usize,
    pub failed: usize,
    /// The pair's own report, for junit.xml and report.md; not repeated in report.json.
    #[serde(skip)]
    pub report: Option<Report>,
}

/// A pair the manifest's `[[exclude]]` or the shard left out.
#[derive(Debug, Clone, Serialize)]
pub struct LeftOut {
    pub board: String,
    pub profile: String,
    pub why: String,
}

/// `report.json` of a matrix.
#[derive(Debug, Clone, Serialize)]
pub struct MatrixReport {
    pub matrix_id: String,
    pub command: &'static str,
    pub manifest: String,
    pub repo: String,
    /// `K/N` with `--shard`.
    pub shard: Option<String>,
    pub status: String,
    pub exit_code: i32,
    pub jobs: usize,
    pub started_at: DateTime<Utc>,
    pub finished_at: DateTime<Utc>,
    pub duration_ms: u64,
    pub pairs: Vec<MatrixPair>,
    pub left_out: Vec<LeftOut>,
}

/// One `junit.xml` for the whole matrix: a suite per board, in the order boards first appear.
pub fn render_matrix_junit(report: &MatrixReport) -> Result<String, quick_junit::SerializeError> {
    let mut junit = quick_junit::Report::new("fwfix matrix");
    junit.set_timestamp(report.started_at.fixed_offset());
    junit.set_time(Duration::from_millis(report.duration_ms));
    let mut boards: Vec<&str> = Vec::new();
    for pair in &report.pairs {
        if !boards.contains(&pair.board.as_str()) {
            boards.push(&pair.board);
        }
    }
    for board in boards {
        let mut suite = TestSuite::new(board);
        suite.set_timestamp(report.started_at.fixed_offset());
        let mut skipped = 0usize;
        for pair in report.pairs.iter().filter(|p| p.board == board) {
            match (&pair.report, pair.status.as_str()) {
                (Some(run), _) => {
                    skipped += run
                        .cases
                        .iter()
                        .filter(|c| c.status == crate::results::CaseStatus::Ignore)
                        .count();
                    suite.add_test_cases(report_cases(run));
                }
                (None, "SKIPPED") => {
                    skipped += 1;
                    let mut status = TestCaseStatus::skipped();
                    status.set_message(pair.reason.clone().unwrap_or_default());
                    suite.add_test_case(pair_case(pair, status));
                }
                (None, _) => {
                    let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
                    status
                        .set_type(pair.status.clone())
                        .set_message(pair.reason.clone().unwrap_or_default());
                    suite.add_test_case(pair_case(pair, status));
                }
            }
        }
        // quick-junit counts skips only as `disabled`; readers look for `skipped`.
        suite
            .extra
            .insert("skipped".into(), skipped.to_string().into());
        junit.add_test_suite(suite);
    }
    junit.to_string()
}

fn pair_case(pair: &MatrixPair, status: TestCaseStatus) -> quick_junit::TestCase {
    let mut case = quick_junit::TestCase::new(pair.profile.as_str(), status);
    case.set_classname(pair.profile.as_str());
    case.set_time(Duration::ZERO);
    case
}

/// `report.md` of a matrix: one row a pair, then what was left out.
pub fn render_matrix_markdown(report: &MatrixReport) -> String {
    let mut md = String::new();
    // Writing into a String cannot fail.
    let _ = writeln!(
        md,
        "# fwfix matrix {}: {}\n\nManifest `{}`{}, {} at a time, {} ms.\n",
        report.matrix_id,
        report.status,
        super::visible(&report.manifest),
        report
            .shard
            .as_deref()
            .map(|s| format!(", shard {s}"))
            .unwrap_or_default(),
        report.jobs,
        report.duration_ms
    );
    md.push_str("| board | profile | status | passed | failed | tries | run or reason |\n");
    md.push_str("|---|---|---|---|---|---|---|\n");
    for p in &report.pairs {
        let detail = p
            .run_dir
            .clone()
            .or_else(|| p.reason.clone())
            .unwrap_or_default();
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} |",
            p.board,
            p.profile,
            p.status,
            p.passed,
            p.failed,
            p.tries,
            super::visible(&detail).replace('|', "\\|")
        );
    }
    if !report.left_out.is_empty() {
        md.push_str("\nLeft out:\n\n");
        for l in &report.left_out {
            let _ = writeln!(
                md,
                "- {} × {}: {}",
                l.board,
                l.profile,
                super::visible(&l.why)
            );
        }
    }
    md
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn pair(board: &str, profile: &str, status: &str, reason: Option<&str>) -> MatrixPair {
        MatrixPair {
            board: board.into(),
            profile: profile.into(),
            hardware: board.starts_with("hw"),
            status: status.into(),
            tries: u32::from(status != "SKIPPED"),
            run_dir: None,
            reason: reason.map(str::to_string),
            passed: 0,
            failed: 0,
            report: None,
        }
    }

    fn matrix(pairs: Vec<MatrixPair>) -> MatrixReport {
        let t = DateTime::from_timestamp(0, 0).unwrap();
        MatrixReport {
            matrix_id: "m".into(),
            command: "matrix",
            manifest: "nightly.toml".into(),
            repo: "/fw".into(),
            shard: Some("1/2".into()),
            status: "FAILED".into(),
            exit_code: 1,
            jobs: 2,
            started_at: t,
            finished_at: t,
            duration_ms: 5,
            pairs,
            left_out: vec![LeftOut {
                board: "q2".into(),
                profile: "crc".into(),
                why: "excluded: no CRC unit".into(),
            }],
        }
    }

    #[test]
    fn junit_has_a_suite_per_board_with_skips_and_errors() {
        let xml = render_matrix_junit(&matrix(vec![
            pair("q1", "crc", "ERROR", Some("cannot write the run directory")),
            pair(
                "hw1",
                "crc",
                "SKIPPED",
                Some("sim-first: crc passed on no QEMU board"),
            ),
            pair("q1", "ringbuf", "NOT RUN", Some("interrupted")),
        ]))
        .unwrap();
        assert_eq!(xml.matches("<testsuite ").count(), 2, "{xml}");
        assert!(
            xml.contains("name=\"q1\"") && xml.contains("name=\"hw1\""),
            "{xml}"
        );
        assert!(xml.contains("<skipped message=\"sim-first"), "{xml}");
        assert!(xml.contains("type=\"NOT RUN\""), "{xml}");
        assert!(xml.contains("skipped=\"1\""), "{xml}");
    }

    #[test]
    fn markdown_lists_every_pair_and_what_was_left_out() {
        let md = render_matrix_markdown(&matrix(vec![pair(
            "q1",
            "crc",
            "ERROR",
            Some("a | in \u{1b}[2J a reason"),
        )]));
        assert!(md.contains("shard 1/2"), "{md}");
        assert!(md.contains("| q1 | crc | ERROR |"), "{md}");
        assert!(md.contains("\\|") && !md.contains('\u{1b}'), "{md}");
        assert!(md.contains("- q2 × crc: excluded: no CRC unit"), "{md}");
    }
}
