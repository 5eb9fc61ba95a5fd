//! The run's outputs in the run directory: `report.json` (the contract scripts read), `report.md`
//! (for people), `junit.xml` (for CI) and `report.html` (for a browser); and the same for a whole
//! `fwfix matrix` (`matrix`). This module owns their
//! shape and writes them atomically; it must not decide anything about the run — the caller fills
//! in a [`Report`] and hands it over.

mod history;
mod html;
mod junit;
mod markdown;
mod matrix;
mod matrix_html;
mod model;
#[cfg(test)]
pub(crate) mod test_support;
mod timeline;
mod visible;

pub use history::History;
pub use html::render_html;
pub use junit::render_junit;
pub use markdown::render_markdown;
pub use matrix::{render_matrix_junit, render_matrix_markdown, LeftOut, MatrixPair, MatrixReport};
pub use matrix_html::render_matrix_html;
pub use model::{
    call_name, case_status_name, crash_headline, crash_lines, crash_sites_differ,
    describe_diagnostic, describe_hang, describe_location, file_line, format_duration,
    mark_interrupted, pass_counts, plural, verdict_name, AttemptSummary, BuildSummary,
    CandidateSummary, CaseCounts, Command, IterationTokens, LintSummary, LintVerdict, PassCount,
    PowerCycle, Report, RevertConflict, Status, Tokens,
};
pub use visible::{escape_html, visible, visible_char};

use crate::rundir::Durability;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// `report.json` in the run directory.
pub const REPORT_JSON: &str = "report.json";
/// `report.md` in the run directory.
pub const REPORT_MD: &str = "report.md";
/// `junit.xml` in the run directory.
pub const JUNIT_XML: &str = "junit.xml";
/// `report.html` in the run directory.
pub const REPORT_HTML: &str = "report.html";

/// Why a report could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("cannot {action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot serialise the report for {path}: {source}")]
    Serialize {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("cannot render {path}: {source}")]
    Junit {
        path: PathBuf,
        #[source]
        source: quick_junit::SerializeError,
    },
    #[error("{path} is not a valid fwfix report (line {line}, column {column}): {source}")]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        #[source]
        source: serde_json::Error,
    },
}

/// Writes `report.json`, `report.md`, `junit.xml` and `report.html` into `run_dir`, each
/// atomically (a reader sees the old file or the new one, never half of one). All are attempted
/// even when one fails, so a broken renderer never costs the others; the first error is returned.
pub fn write(run_dir: &Path, report: &Report, durability: Durability) -> Result<(), ReportError> {
    fs::create_dir_all(run_dir).map_err(|source| ReportError::Io {
        action: "create the run directory",
        path: run_dir.to_path_buf(),
        source,
    })?;

    let json_path = run_dir.join(REPORT_JSON);
    let write_json = || {
        serde_json::to_string_pretty(report)
            .map(|mut text| {
                text.push('\n');
                text
            })
            .map_err(|source| ReportError::Serialize {
                path: json_path.clone(),
                source,
            })
            .and_then(|text| write_atomic(&json_path, text.as_bytes(), durability))
    };
    // One after the other, on this thread: each file takes about a tenth of a millisecond, what
    // starting a thread for it costs, and a loaded host may start that thread milliseconds late
    // while the run's end waits for it.
    let json = write_json();
    let renderings = write_renderings(run_dir, report, durability);
    json.and(renderings.map(|_| ()))
}

/// Writes the files rendered from a report — `report.md`, `junit.xml` and `report.html` — but not
/// `report.json` itself, and returns their paths. All are attempted even when one fails; the
/// first error is returned.
pub fn write_renderings(
    run_dir: &Path,
    report: &Report,
    durability: Durability,
) -> Result<Vec<PathBuf>, ReportError> {
    let md_path = run_dir.join(REPORT_MD);
    let junit_path = run_dir.join(JUNIT_XML);
    let html_path = run_dir.join(REPORT_HTML);
    let junit = render_junit(report).map_err(|source| ReportError::Junit {
        path: junit_path.clone(),
        source,
    });
    let write_html = || {
        write_atomic(
            &html_path,
            render_html(report, &history::load(run_dir, report)).as_bytes(),
            durability,
        )
    };
    let md = write_atomic(&md_path, render_markdown(report).as_bytes(), durability);
    let junit = junit.and_then(|text| write_atomic(&junit_path, text.as_bytes(), durability));
    [md, junit, write_html()]
        .into_iter()
        .collect::<Result<(), _>>()?;
    Ok(vec![md_path, junit_path, html_path])
}

/// Reads `report.json` back from a run directory.
pub fn load(run_dir: &Path) -> Result<Report, ReportError> {
    let path = run_dir.join(REPORT_JSON);
    let text = fs::read_to_string(&path).map_err(|source| ReportError::Io {
        action: "read",
        path: path.clone(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| ReportError::Parse {
        line: source.line(),
        column: source.column(),
        path,
        source,
    })
}

/// Writes `path` through a temporary file in the same directory: write, fsync, rename, then fsync
/// the directory so the rename itself survives a power cut — the fsyncs only when `durability`
/// says so.
fn write_atomic(path: &Path, contents: &[u8], durability: Durability) -> Result<(), ReportError> {
    let io_error = |action: &'static str, path: &Path| {
        let path = path.to_path_buf();
        move |source| ReportError::Io {
            action,
            path,
            source,
        }
    };
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        Some(_) | None => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}", crate::rundir::temp_suffix()));

    let written = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&tmp)
        .and_then(|mut file| {
            file.write_all(contents)?;
            durability.sync(&file)
        })
        .map_err(io_error("write", &tmp))
        .and_then(|()| fs::rename(&tmp, path).map_err(io_error("replace", path)));
    if written.is_err() {
        // Best effort: a leftover temp file is only clutter, the error below is what matters.
        let _ = fs::remove_file(&tmp);
    }
    written?;
    match durability {
        Durability::Synced => File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(io_error("sync", dir)),
        Durability::Cached => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::CrashReport;
    use crate::machine::State;
    use crate::results::{CaseStatus, TestCase, Verdict};
    use serde_json::{json, Value};

    fn minimal() -> Report {
        let mut report = crate::report::test_support::report(
            "20240501-120000-crc",
            Command::Test,
            Status::Failed,
            State::ResultAnalysis,
            3,
        );
        report.message = "1 of 2 tests failed".into();
        report.repo = "fw".into();
        report.board = "qemu-mps2-an385".into();
        report.profile = "crc".into();
        report.verdict = Some(Verdict::Fail);
        report.cases = vec![
            TestCase {
                name: "test_ok".into(),
                status: CaseStatus::Pass,
                message: None,
                file: None,
                line: None,
            },
            TestCase {
                name: "test_bad".into(),
                status: CaseStatus::Fail,
                message: Some("Expected 1 Was 2".into()),
                file: Some("test/test_crc.c".into()),
                line: Some(20),
            },
        ];
        report
    }

    #[test]
    fn json_has_every_contract_field_with_nulls_not_omissions() {
        let value = serde_json::to_value(minimal()).unwrap();
        let Value::Object(fields) = &value else {
            panic!("not an object: {value}");
        };
        let mut keys: Vec<&str> = fields.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            vec![
                "attempts",
                "board",
                "branch",
                "build",
                "candidates",
                "cases",
                "command",
                "confidence",
                "console_silence",
                "crash",
                "culprit",
                "duration_ms",
                "error_class",
                "final_state",
                "finished_at",
                "fixed",
                "hang_handler",
                "hang_site",
                "iterations",
                "lease",
                "lint",
                "message",
                "notes",
                "pass_counts",
                "patch",
                "power_cycles",
                "profile",
                "repo",
                "revert_conflict",
                "run_id",
                "started_at",
                "status",
                "steps",
                "tokens",
                "verdict",
                "version",
            ]
        );
        for key in [
            "error_class",
            "crash",
            "fixed",
            "patch",
            "branch",
            "culprit",
            "confidence",
        ] {
            assert_eq!(value[key], Value::Null, "{key}");
        }
        assert_eq!(value["command"], "test");
        assert_eq!(value["status"], "FAILED");
        assert_eq!(value["final_state"], "RESULT_ANALYSIS");
        assert_eq!(value["iterations"], 0);
        assert_eq!(value["verdict"], "FAIL");
        assert_eq!(value["started_at"], "2024-05-01T12:00:00Z");
        assert_eq!(value["finished_at"], "2024-05-01T12:00:03Z");
        assert_eq!(value["duration_ms"], 3000);
        assert_eq!(value["version"], env!("CARGO_PKG_VERSION"));
    }

    #[test]
    fn json_cases_are_exactly_name_status_message_file_line() {
        let value = serde_json::to_value(minimal()).unwrap();
        assert_eq!(
            value["cases"],
            json!([
                {"name": "test_ok", "status": "PASS", "message": null, "file": null, "line": null},
                {"name": "test_bad", "status": "FAIL", "message": "Expected 1 Was 2",
                 "file": "test/test_crc.c", "line": 20}
            ])
        );
    }

    #[test]
    fn json_crash_embeds_the_contract_fields() {
        let mut report = minimal();
        report.crash = Some(CrashReport {
            pc: Some("0x000001a4".into()),
            lr: Some("0x00000151".into()),
            cfsr: Some("0x00000082".into()),
            hfsr: None,
            function: Some("crc_update".into()),
            file: Some("src/crc.c".into()),
            line: Some(17),
            caller: None,
            fault_bits: vec!["DACCVIOL".into()],
            fault_address: None,
            exception: Some("MemManage".into()),
            lockup: false,
            summary: "MemManage in crc_update".into(),
        });
        report.fixed = Some(vec![]);
        let value = serde_json::to_value(&report).unwrap();
        let crash = &value["crash"];
        assert_eq!(crash["pc"], "0x000001a4");
        assert_eq!(crash["lr"], "0x00000151");
        assert_eq!(crash["cfsr"], "0x00000082");
        assert_eq!(crash["function"], "crc_update");
        assert_eq!(crash["file"], "src/crc.c");
        assert_eq!(crash["line"], 17);
        assert_eq!(value["fixed"], json!([]));
    }

    #[test]
    fn write_then_load_round_trips_and_leaves_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let run_dir = dir.path().join("runs").join("r1");
        let report = minimal();
        write(&run_dir, &report, Durability::Synced).unwrap();

        let mut names: Vec<String> = fs::read_dir(&run_dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, vec![JUNIT_XML, REPORT_HTML, REPORT_JSON, REPORT_MD]);
        assert_eq!(load(&run_dir).unwrap(), report);

        let json = fs::read_to_string(run_dir.join(REPORT_JSON)).unwrap();
        assert!(json.starts_with("{\n  \""), "pretty-printed: {json}");
        let md = fs::read_to_string(run_dir.join(REPORT_MD)).unwrap();
        assert!(md.starts_with("# fwfix test: FAILED"));
        let xml = fs::read_to_string(run_dir.join(JUNIT_XML)).unwrap();
        assert!(quick_junit::Report::deserialize_from_str(&xml).is_ok());
        let html = fs::read_to_string(run_dir.join(REPORT_HTML)).unwrap();
        assert!(html.starts_with("<!DOCTYPE html>"));

        // Rewriting replaces the files in place.
        let mut again = report.clone();
        again.status = Status::Passed;
        write(&run_dir, &again, Durability::Cached).unwrap();
        assert_eq!(load(&run_dir).unwrap().status, Status::Passed);
    }

    #[test]
    fn load_names_the_file_and_position_of_a_broken_report() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(REPORT_JSON), "{\n  \"run_id\": 3\n}\n").unwrap();
        match load(dir.path()) {
            Err(ReportError::Parse { path, line, .. }) => {
                assert_eq!(path, dir.path().join(REPORT_JSON));
                assert_eq!(line, 2);
            }
            other => panic!("expected a parse error, got {other:?}"),
        }
        match load(&dir.path().join("missing")) {
            Err(ReportError::Io { path, .. }) => assert!(path.ends_with("missing/report.json")),
            other => panic!("expected an I/O error, got {other:?}"),
        }
    }

    #[test]
    fn write_into_an_unusable_directory_says_which_path() {
        let dir = tempfile::tempdir().unwrap();
        let not_a_dir = dir.path().join("file");
        fs::write(&not_a_dir, "x").unwrap();
        let err = write(&not_a_dir, &minimal(), Durability::Synced).unwrap_err();
        assert!(
            err.to_string().contains(&not_a_dir.display().to_string()),
            "{err}"
        );
    }

    #[test]
    fn a_report_from_an_older_fwfix_without_the_extension_fields_still_loads() {
        let mut value = serde_json::to_value(minimal()).unwrap();
        let Value::Object(fields) = &mut value else {
            panic!("not an object");
        };
        for key in [
            "verdict",
            "hang_site",
            "build",
            "attempts",
            "pass_counts",
            "notes",
        ] {
            fields.remove(key);
        }
        let report: Report = serde_json::from_value(value).unwrap();
        assert!(report.attempts.is_empty());
        assert_eq!(report.verdict, None);
    }
}
