//! `report.html` of a whole `fwfix matrix`: a timeline with a lane per board (each pair's run a
//! bar, failures marked), the per-test grid across boards (a row per profile's test; FLAKY where
//! the manifest's `repeat` runs disagreed, with the rate and interval on hover), every pair
//! with a link to its own run's report.html, and what was left out. Same rules as a run's page:
//! one self-contained file, inline SVG and CSS, no script, every string escaped. Pure rendering
//! from a [`MatrixReport`].

use super::html::{link, link_up, status_class, STYLE};
use super::matrix::{MatrixPair, MatrixReport};
use super::model::{case_status_name, format_duration};
use super::timeline::{self, Bar};
use super::visible::escape_html as escape;
use crate::machine::flaky::Call;
use std::fmt::Write;
use std::path::{Component, Path, PathBuf};

/// Renders the matrix's `report.html`, to be written into `matrix_dir` (links to the pairs' runs
/// are made relative to it).
pub fn render_matrix_html(report: &MatrixReport, matrix_dir: &Path) -> String {
    let mut out = String::new();
    // Writing into a String cannot fail; the results are discarded for that reason only.
    let _ = write_page(&mut out, report, matrix_dir);
    out
}

fn write_page(out: &mut String, report: &MatrixReport, matrix_dir: &Path) -> std::fmt::Result {
    let title = format!("fwfix matrix: {}", report.status);
    writeln!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">"
    )?;
    writeln!(
        out,
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
    )?;
    writeln!(
        out,
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
    )?;
    writeln!(
        out,
        "<title>{} — {}</title>",
        escape(&title),
        escape(&report.matrix_id)
    )?;
    writeln!(
        out,
        "<style>{STYLE}{}</style>\n</head>\n<body>",
        timeline::STYLE
    )?;
    let class = match report.exit_code {
        0 => "ok",
        3 => "halt",
        _ => "bad",
    };
    let ran = report.pairs.iter().filter(|p| p.report.is_some()).count();
    let passed = report.pairs.iter().filter(|p| p.status == "PASSED").count();
    writeln!(
        out,
        "<header class=\"banner {class}\">\n<h1>{}</h1>\n<p>{}</p>\n</header>\n<main>",
        escape(&title),
        escape(&format!(
            "{passed} of {} pairs passed ({ran} ran) in {}",
            report.pairs.len(),
            format_duration(report.duration_ms)
        ))
    )?;
    writeln!(out, "<h2>Matrix</h2>\n<dl>")?;
    let mut facts = vec![
        ("Matrix", report.matrix_id.clone()),
        ("Manifest", report.manifest.clone()),
        ("Repository", report.repo.clone()),
        ("Jobs at a time", report.jobs.to_string()),
        (
            "Started",
            report
                .started_at
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        ),
        ("Took", format_duration(report.duration_ms)),
        ("Exit code", report.exit_code.to_string()),
    ];
    if let Some(shard) = &report.shard {
        facts.push(("Shard", shard.clone()));
    }
    for (name, value) in facts {
        writeln!(
            out,
            "<dt>{}</dt><dd><code>{}</code></dd>",
            escape(name),
            escape(&value)
        )?;
    }
    writeln!(out, "</dl>")?;
    write_timeline(out, report)?;
    write_grid(out, report)?;
    write_pairs(out, report, matrix_dir)?;
    if !report.left_out.is_empty() {
        writeln!(out, "<h2>Left out</h2>\n<ul>")?;
        for l in &report.left_out {
            writeln!(
                out,
                "<li><code>{}</code> × <code>{}</code>: {}</li>",
                escape(&l.board),
                escape(&l.profile),
                escape(&l.why)
            )?;
        }
        writeln!(out, "</ul>")?;
    }
    writeln!(
        out,
        "<h2>Files</h2>\n<ul>\n<li>machine-readable report: {}</li>\n<li>for CI: {}</li>\n<li>report for people: {}</li>\n</ul>",
        link(super::REPORT_JSON),
        link(super::JUNIT_XML),
        link(super::REPORT_MD)
    )?;
    writeln!(out, "</main>\n</body>\n</html>")
}

/// Boards in the order they first appear among the pairs.
fn boards(report: &MatrixReport) -> Vec<&str> {
    let mut boards: Vec<&str> = Vec::new();
    for pair in &report.pairs {
        if !boards.contains(&pair.board.as_str()) {
            boards.push(&pair.board);
        }
    }
    boards
}

fn write_timeline(out: &mut String, report: &MatrixReport) -> std::fmt::Result {
    // Pairs on one board may run at once (QEMU): each board gets as many rows as it had pairs
    // running together, a pair going to the first row free when it started.
    let mut ran: Vec<&MatrixPair> = report.pairs.iter().filter(|p| p.report.is_some()).collect();
    ran.sort_by_key(|p| p.report.as_ref().map(|r| r.started_at));
    let mut rows: Vec<(&str, Vec<chrono::DateTime<chrono::Utc>>)> = boards(report)
        .into_iter()
        .map(|b| (b, Vec::new()))
        .collect();
    let mut placed: Vec<(&MatrixPair, usize, usize)> = Vec::new();
    for pair in ran {
        let Some(run) = &pair.report else { continue };
        let Some(board) = rows.iter().position(|(b, _)| *b == pair.board) else {
            continue;
        };
        let ends = &mut rows[board].1;
        let end = run.finished_at.max(run.started_at);
        let slot = match ends.iter().position(|e| *e <= run.started_at) {
            Some(slot) => {
                ends[slot] = end;
                slot
            }
            None => {
                ends.push(end);
                ends.len() - 1
            }
        };
        placed.push((pair, board, slot));
    }
    let mut lanes: Vec<String> = Vec::new();
    let mut first_lane: Vec<usize> = Vec::new();
    for (board, ends) in &rows {
        first_lane.push(lanes.len());
        for slot in 0..ends.len().max(1) {
            lanes.push(if slot == 0 {
                board.to_string()
            } else {
                format!("{board} #{}", slot + 1)
            });
        }
    }
    let bars: Vec<Bar> = placed
        .into_iter()
        .filter_map(|(pair, board, slot)| {
            let run = pair.report.as_ref()?;
            let class = match pair.status.as_str() {
                "PASSED" => "p-pass",
                "FAILED" => "p-fail",
                _ => "p-other",
            };
            Some(Bar {
                lane: first_lane.get(board)? + slot,
                iteration: 0,
                state: None,
                start: run.started_at,
                end: run.finished_at.max(run.started_at),
                class,
                failed: pair.status != "PASSED",
                title: format!(
                    "{} on {}: {} ({} passed, {} failed, {} {})",
                    pair.profile,
                    pair.board,
                    pair.status,
                    pair.passed,
                    pair.failed,
                    pair.tries,
                    if pair.tries == 1 { "try" } else { "tries" }
                ),
                text: pair.profile.clone(),
            })
        })
        .collect();
    let lanes: Vec<&str> = lanes.iter().map(String::as_str).collect();
    let svg = timeline::render_svg(&lanes, &bars, &[]);
    if svg.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "<h2>Timeline</h2>\n<p class=\"legend\">A lane per board (more when pairs ran on it at once), a bar per pair's run: green passed, red failed, grey an error; ✕ marks a pair that did not pass. Hover a bar for its counts.</p>\n<figure>{svg}</figure>"
    )
}

/// (profile, test) rows in the order first seen.
fn grid_rows(report: &MatrixReport) -> Vec<(&str, &str)> {
    let mut rows: Vec<(&str, &str)> = Vec::new();
    for pair in &report.pairs {
        for case in pair.report.iter().flat_map(|r| &r.cases) {
            let row = (pair.profile.as_str(), case.name.as_str());
            if !rows.contains(&row) {
                rows.push(row);
            }
        }
    }
    rows
}

fn write_grid(out: &mut String, report: &MatrixReport) -> std::fmt::Result {
    let rows = grid_rows(report);
    if rows.is_empty() {
        return Ok(());
    }
    let boards = boards(report);
    writeln!(
        out,
        "<h2>Tests by board</h2>\n<div class=\"scroll\"><table class=\"grid\">\n<thead><tr><th>Profile</th><th>Test</th>"
    )?;
    for board in &boards {
        write!(out, "<th class=\"col\">{}</th>", escape(board))?;
    }
    writeln!(out, "</tr></thead>\n<tbody>")?;
    for (profile, name) in rows {
        write!(
            out,
            "<tr><td>{}</td><td><code>{}</code></td>",
            escape(profile),
            escape(name)
        )?;
        for board in &boards {
            let pair = report
                .pairs
                .iter()
                .find(|p| p.board == *board && p.profile == profile);
            let case = pair
                .and_then(|p| p.report.as_ref())
                .and_then(|r| r.cases.iter().find(|c| c.name == name));
            let flaky = pair
                .and_then(|p| p.report.as_ref())
                .and_then(|r| r.pass_counts.iter().find(|c| c.name == name))
                .filter(|c| c.call == Some(Call::Flaky));
            match (pair, case) {
                (_, Some(_)) if flaky.is_some() => write!(
                    out,
                    "<td class=\"cell\"><span class=\"badge s-ignore\" title=\"{}\">FLAKY</span></td>",
                    escape(&flaky.map(|c| c.describe()).unwrap_or_default())
                )?,
                (_, Some(case)) => write!(
                    out,
                    "<td class=\"cell\"><span class=\"badge {}\" title=\"{}\">{}</span></td>",
                    status_class(case.status),
                    escape(case.message.as_deref().unwrap_or("")),
                    case_status_name(case.status)
                )?,
                (Some(pair), None) if pair.report.is_none() => write!(
                    out,
                    "<td class=\"cell\" title=\"{}\">{}</td>",
                    escape(pair.reason.as_deref().unwrap_or("")),
                    escape(&pair.status)
                )?,
                (Some(_) | None, None) => write!(out, "<td class=\"cell\">—</td>")?,
            }
        }
        writeln!(out, "</tr>")?;
    }
    writeln!(out, "</tbody>\n</table></div>")
}

fn write_pairs(out: &mut String, report: &MatrixReport, matrix_dir: &Path) -> std::fmt::Result {
    writeln!(
        out,
        "<h2>Pairs</h2>\n<table>\n<thead><tr><th>Board</th><th>Profile</th><th>Status</th><th>Passed</th><th>Failed</th><th>Tries</th><th>Run or reason</th></tr></thead>\n<tbody>"
    )?;
    for pair in &report.pairs {
        let badge = match pair.status.as_str() {
            "PASSED" => "s-pass",
            "FAILED" => "s-fail",
            "SKIPPED" => "s-ignore",
            _ => "s-missing",
        };
        let row = if pair.status == "PASSED" || pair.status == "SKIPPED" {
            ""
        } else {
            " class=\"bad-row\""
        };
        writeln!(
            out,
            "<tr{row}><td><code>{}</code>{}</td><td><code>{}</code></td><td><span class=\"badge {badge}\">{}</span></td><td>{}</td><td>{}</td><td>{}</td><td class=\"message\">{}</td></tr>",
            escape(&pair.board),
            if pair.hardware { " (hardware)" } else { "" },
            escape(&pair.profile),
            escape(&pair.status),
            pair.passed,
            pair.failed,
            pair.tries,
            pair_detail(pair, matrix_dir)
        )?;
    }
    writeln!(out, "</tbody>\n</table>")
}

/// The pair's report.html and logs as links relative to the matrix's page, then its reason.
fn pair_detail(pair: &MatrixPair, matrix_dir: &Path) -> String {
    let mut parts = Vec::new();
    if let Some(run_dir) = &pair.run_dir {
        match relative_path(Path::new(run_dir), matrix_dir) {
            Some(rel) => {
                parts.push(link_up(&format!("{rel}/{}", super::REPORT_HTML)));
                if let Some(run) = &pair.report {
                    for attempt in &run.attempts {
                        parts.push(link_up(&format!("{rel}/{}", attempt.console_log)));
                    }
                }
            }
            None => parts.push(format!("<code>{}</code>", escape(run_dir))),
        }
    }
    if let Some(reason) = &pair.reason {
        parts.push(escape(reason));
    }
    parts.join("<br>")
}

/// `target` as a path relative to `base` (`../../runs/r1`), when both are absolute or both
/// relative to the same place, with no `..` in either; None otherwise.
fn relative_path(target: &Path, base: &Path) -> Option<String> {
    let plain = |p: &Path| {
        p.components()
            .all(|c| !matches!(c, Component::ParentDir | Component::Prefix(_)))
    };
    if target.is_absolute() != base.is_absolute() || !plain(target) || !plain(base) {
        return None;
    }
    let target: Vec<Component> = target
        .components()
        .filter(|c| *c != Component::CurDir)
        .collect();
    let base: Vec<Component> = base
        .components()
        .filter(|c| *c != Component::CurDir)
        .collect();
    let common = target.iter().zip(&base).take_while(|(a, b)| a == b).count();
    let mut rel = PathBuf::new();
    for _ in common..base.len() {
        rel.push("..");
    }
    for c in &target[common..] {
        rel.push(c.as_os_str());
    }
    let rel = rel.to_string_lossy().replace('\\', "/");
    (!rel.is_empty()).then_some(rel)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::machine::State;
    use crate::report::{Command, LeftOut, Status};
    use crate::results::CaseStatus;
    use chrono::DateTime;

    const EVIL: &str = "<script>alert(1)</script>";

    fn pair(board: &str, profile: &str, status: &str, cases: &[(&str, CaseStatus)]) -> MatrixPair {
        let report = (status == "PASSED" || status == "FAILED").then(|| {
            let mut run = crate::report::test_support::report(
                "r1",
                Command::Test,
                Status::Passed,
                State::Success,
                2,
            );
            run.cases = cases
                .iter()
                .map(|(name, s)| crate::report::test_support::case(name, *s, None, None))
                .collect();
            run
        });
        MatrixPair {
            board: board.into(),
            profile: profile.into(),
            hardware: false,
            status: status.into(),
            tries: 1,
            run_dir: report
                .as_ref()
                .map(|_| format!("/fw/.fwfix/runs/{board}-{profile}")),
            reason: (status == "SKIPPED").then(|| "sim-first: not passed on QEMU".into()),
            passed: 0,
            failed: 0,
            report,
        }
    }

    fn matrix(pairs: Vec<MatrixPair>) -> MatrixReport {
        let t = DateTime::from_timestamp(0, 0).unwrap();
        MatrixReport {
            matrix_id: "m1".into(),
            command: "matrix",
            manifest: "nightly.toml".into(),
            repo: "/fw".into(),
            shard: None,
            status: "FAILED".into(),
            exit_code: 1,
            jobs: 2,
            started_at: t,
            finished_at: t,
            duration_ms: 2000,
            pairs,
            left_out: vec![LeftOut {
                board: "q3".into(),
                profile: "crc".into(),
                why: EVIL.into(),
            }],
        }
    }

    #[test]
    fn relative_paths_climb_to_the_common_directory() {
        let rel = |t: &str, b: &str| relative_path(Path::new(t), Path::new(b));
        assert_eq!(
            rel("/fw/.fwfix/runs/r1", "/fw/.fwfix/matrix/m1").as_deref(),
            Some("../../runs/r1")
        );
        assert_eq!(rel("a/b", "a").as_deref(), Some("b"));
        assert_eq!(rel("/a", "b"), None);
        assert_eq!(rel("/a/../b", "/a"), None);
        assert_eq!(rel("/a", "/a"), None);
    }

    #[test]
    fn grid_has_a_row_per_profile_test_and_a_column_per_board() {
        let html = render_matrix_html(
            &matrix(vec![
                pair("q1", "crc", "PASSED", &[("t_a", CaseStatus::Pass)]),
                pair("q2", "crc", "FAILED", &[("t_a", CaseStatus::Fail)]),
                pair("hw", "crc", "SKIPPED", &[]),
            ]),
            Path::new("/fw/.fwfix/matrix/m1"),
        );
        assert!(html.contains(
            "<th class=\"col\">q1</th><th class=\"col\">q2</th><th class=\"col\">hw</th>"
        ));
        assert!(html.contains("<tr><td>crc</td><td><code>t_a</code></td><td class=\"cell\"><span class=\"badge s-pass\""));
        assert!(html.contains(">SKIPPED</td>"));

        let mut repeated = pair("q1", "crc", "PASSED", &[("t_a", CaseStatus::Pass)]);
        if let Some(run) = &mut repeated.report {
            run.pass_counts = vec![crate::report::PassCount::new("t_a", 3, 4)];
        }
        let flaky = render_matrix_html(&matrix(vec![repeated]), Path::new("/fw/.fwfix/matrix/m1"));
        assert!(
            flaky.contains("title=\"3/4 passed, 0.75 [0.30, 0.95], FLAKY\">FLAKY</span>"),
            "{flaky}"
        );
        assert!(html.contains("<a href=\"../../runs/q1-crc/report.html\">"));
        assert!(html.contains("<svg class=\"timeline\""));
        assert!(html.contains("class=\"bar failed\""));
    }

    #[test]
    fn untrusted_names_are_escaped_and_the_page_is_self_contained() {
        let mut bad = pair(EVIL, EVIL, "FAILED", &[(EVIL, CaseStatus::Fail)]);
        bad.reason = Some(EVIL.into());
        bad.run_dir = Some(EVIL.into());
        let html = render_matrix_html(&matrix(vec![bad]), Path::new("/fw/m"));
        assert!(!html.contains("<script"), "{html}");
        assert!(html.contains("&lt;script&gt;"));
        for external in ["<link", "http://", "https://", "src=", "@import"] {
            assert!(!html.contains(external), "{external} in the page");
        }
        assert!(html.trim_end().ends_with("</html>"));
    }
}
