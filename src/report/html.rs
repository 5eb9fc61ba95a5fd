//! `report.html`: the run for a browser, in one self-contained file — inline CSS, no script, no
//! external resource, so it can be archived by CI or mailed and still open anywhere. Pure
//! rendering from a [`Report`]; no I/O and no decisions.
//!
//! Every string from the run (test names, messages, paths, compiler output) is untrusted: it is
//! escaped with [`escape`], links are only made from relative paths and percent-encoded, and the
//! page's Content-Security-Policy forbids scripts and remote loads even if something slipped by.

use super::history::{Column, History};
use super::model::{
    call_name, case_status_name, crash_lines, describe_hang, file_line, format_duration, plural,
    verdict_name, Command, Report, Status,
};
use super::timeline::{self, Bar, Mark, Phase};
use super::visible::escape_html as escape;
use crate::machine::flaky::{self, Call};
use crate::machine::State;
use crate::results::{CaseStatus, Verdict};
use std::fmt::Write;
use std::path::{Component, Path};

/// Build diagnostics listed before pointing at the log.
const MAX_DIAGNOSTICS: usize = 50;

pub(super) const STYLE: &str = "
body{font:15px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:0;color:#1f2328;background:#fff}
main{max-width:72rem;margin:0 auto;padding:0 1.25rem 2rem}
header.banner{padding:1rem 1.25rem;color:#fff}
header.banner h1{margin:0;font-size:1.5rem}
header.banner p{margin:.3rem 0 0}
.ok{background:#1a7f37}.bad{background:#cf222e}.halt{background:#9a6700}
h2{font-size:1.15rem;border-bottom:1px solid #d0d7de;padding-bottom:.2rem;margin-top:1.6rem}
table{border-collapse:collapse;width:100%;font-size:14px}
th,td{border:1px solid #d0d7de;padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:#f6f8fa}
td.message{white-space:pre-wrap;word-break:break-word}
div.scroll{overflow-x:auto}
table.grid td.cell{text-align:center;padding:.2rem}
table.grid th.col{writing-mode:horizontal-tb;white-space:nowrap}
.legend span{display:inline-block;margin-right:1rem}
.legend i{display:inline-block;width:.8rem;height:.8rem;margin-right:.3rem;vertical-align:middle}
section.column{border:1px solid #d0d7de;border-radius:4px;padding:.2rem .8rem;margin:.6rem 0}
section.column h3{font-size:1rem;margin:.4rem 0}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:13px}
pre{background:#f6f8fa;padding:.6rem;overflow-x:auto;white-space:pre-wrap}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem}
dt{font-weight:600}dd{margin:0}
.badge{display:inline-block;min-width:4.5rem;text-align:center;border-radius:3px;padding:0 .3rem;font-weight:600;color:#fff}
.s-pass{background:#1a7f37}.s-fail{background:#cf222e}.s-crash{background:#8250df}
.s-hang{background:#bc4c00}.s-missing{background:#6e7781}.s-ignore{background:#9a6700}
tr.bad-row td{background:#fff5f5}
footer{color:#6e7781;font-size:13px;margin-top:2rem}
i.lg.p-build{background:#0969da}i.lg.p-flash{background:#8250df}i.lg.p-test{background:#1a7f37}
i.lg.p-analysis{background:#9a6700}i.lg.p-patch{background:#bf3989}i.lg.p-recovery{background:#cf222e}
figure{margin:0}
";

/// Renders `report.html` from the report and the run's history (its trace and per-column
/// results, read from the run directory by `history::load`).
pub fn render_html(report: &Report, history: &History) -> String {
    let mut out = String::new();
    // Writing into a String cannot fail; the results are discarded for that reason only.
    let _ = write_page(&mut out, report, history);
    out
}

fn write_page(out: &mut String, report: &Report, history: &History) -> std::fmt::Result {
    let title = format!("fwfix {}: {}", report.command, report.status);
    writeln!(out, "<!DOCTYPE html>")?;
    writeln!(out, "<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">")?;
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
        escape(&report.run_id)
    )?;
    writeln!(
        out,
        "<style>{STYLE}{}</style>\n</head>\n<body>",
        timeline::STYLE
    )?;
    write_banner(out, report, &title)?;
    writeln!(out, "<main>")?;
    write_facts(out, report)?;
    write_outcome(out, report, history)?;
    write_timeline(out, report, history)?;
    write_cases(out, report)?;
    write_grid(out, report, history)?;
    write_columns(out, report, history)?;
    write_crash(out, report)?;
    write_hang(out, report)?;
    write_build(out, report)?;
    write_lint(out, report)?;
    write_attempts(out, report)?;
    write_pass_counts(out, report)?;
    write_candidates(out, report)?;
    write_notes(out, report)?;
    write_files(out, report)?;
    writeln!(
        out,
        "<footer>Written by fwfix {}.</footer>",
        escape(&report.version)
    )?;
    writeln!(out, "</main>\n</body>\n</html>")
}

fn write_banner(out: &mut String, report: &Report, title: &str) -> std::fmt::Result {
    let class = match report.status {
        Status::Success | Status::Passed => "ok",
        Status::Aborted => "halt",
        Status::Failure | Status::Failed | Status::Error => "bad",
    };
    writeln!(out, "<header class=\"banner {class}\">")?;
    writeln!(out, "<h1>{}</h1>", escape(title))?;
    if !report.message.is_empty() {
        writeln!(out, "<p>{}</p>", escape(&report.message))?;
    }
    let counts = report.counts();
    let mut line = format!(
        "{} ({}) in {}",
        counts.describe(),
        plural(counts.total(), "test"),
        format_duration(report.duration_ms)
    );
    if let Some(class) = report.error_class {
        let _ = write!(line, " — error class {class}");
    }
    writeln!(out, "<p>{}</p>", escape(&line))?;
    writeln!(out, "</header>")
}

fn write_facts(out: &mut String, report: &Report) -> std::fmt::Result {
    writeln!(out, "<h2>Run</h2>\n<dl>")?;
    let mut fact = |name: &str, value: &str| {
        writeln!(
            out,
            "<dt>{}</dt><dd><code>{}</code></dd>",
            escape(name),
            escape(value)
        )
    };
    fact("Run", &report.run_id)?;
    for (name, value) in [
        ("Board", &report.board),
        ("Profile", &report.profile),
        ("Repository", &report.repo),
    ] {
        if !value.is_empty() {
            fact(name, value)?;
        }
    }
    fact("Final state", report.final_state.name())?;
    fact(
        "Error class",
        report.error_class.map(|c| c.name()).unwrap_or("none"),
    )?;
    if let Some(verdict) = report.verdict {
        fact("Verdict", verdict_name(verdict))?;
    }
    if report.command != Command::Test {
        fact("Iterations", &report.iterations.to_string())?;
    }
    fact(
        "Started",
        &report
            .started_at
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    )?;
    fact("Took", &format_duration(report.duration_ms))?;
    writeln!(out, "</dl>")
}

fn write_outcome(out: &mut String, report: &Report, history: &History) -> std::fmt::Result {
    match report.command {
        Command::Test => Ok(()),
        Command::Run => {
            writeln!(out, "<h2>Fix</h2>\n<dl>")?;
            let fixed = match &report.fixed {
                Some(fixed) if !fixed.is_empty() => fixed
                    .iter()
                    .map(|name| format!("<code>{}</code>", escape(name)))
                    .collect::<Vec<_>>()
                    .join(", "),
                Some(_) | None => "none of the targets".to_string(),
            };
            writeln!(out, "<dt>Now passing</dt><dd>{fixed}</dd>")?;
            // report.json names the fix by its absolute path; the page links it inside the run.
            let patch = history
                .fix_patch
                .as_deref()
                .or(report.patch.as_deref())
                .map(link)
                .unwrap_or("none".into());
            writeln!(out, "<dt>Patch</dt><dd>{patch}</dd>")?;
            let branch = report
                .branch
                .as_deref()
                .map(|b| format!("<code>{}</code>", escape(b)))
                .unwrap_or("none".into());
            writeln!(out, "<dt>Branch</dt><dd>{branch}</dd>\n</dl>")
        }
        Command::Bisect => {
            writeln!(out, "<h2>Culprit</h2>")?;
            match &report.culprit {
                Some(culprit) => writeln!(
                    out,
                    "<p>The first bad commit is <code>{}</code>.</p>",
                    escape(culprit)
                ),
                None => writeln!(out, "<p>No culprit commit was found.</p>"),
            }
        }
    }
}

pub(super) fn status_class(status: CaseStatus) -> &'static str {
    match status {
        CaseStatus::Pass => "s-pass",
        CaseStatus::Fail => "s-fail",
        CaseStatus::Ignore => "s-ignore",
        CaseStatus::Crash => "s-crash",
        CaseStatus::Hang => "s-hang",
        CaseStatus::Missing => "s-missing",
    }
}

fn write_cases(out: &mut String, report: &Report) -> std::fmt::Result {
    let counts = report.counts();
    writeln!(
        out,
        "<h2>Test cases ({} total: {})</h2>",
        counts.total(),
        escape(&counts.describe())
    )?;
    if report.cases.is_empty() {
        return writeln!(out, "<p>No test results were collected.</p>");
    }
    writeln!(
        out,
        "<table class=\"cases\">\n<thead><tr><th>Status</th><th>Test</th><th>Location</th><th>Message</th></tr></thead>\n<tbody>"
    )?;
    for case in &report.cases {
        let row = match case.status {
            CaseStatus::Pass | CaseStatus::Ignore => "",
            CaseStatus::Fail | CaseStatus::Crash | CaseStatus::Hang | CaseStatus::Missing => {
                " class=\"bad-row\""
            }
        };
        let location = file_line(case.file.as_deref(), case.line)
            .map(|place| format!("<code>{}</code>", escape(&place)))
            .unwrap_or_default();
        writeln!(
            out,
            "<tr{row}><td><span class=\"badge {}\">{}</span></td><td><code>{}</code></td><td>{location}</td><td class=\"message\">{}</td></tr>",
            status_class(case.status),
            case_status_name(case.status),
            escape(&case.name),
            escape(case.message.as_deref().unwrap_or(""))
        )?;
    }
    writeln!(out, "</tbody>\n</table>")
}

/// What a column of the grid is called in headings.
fn column_noun(report: &Report) -> &'static str {
    match report.command {
        Command::Test => "attempt",
        Command::Run => "iteration",
        Command::Bisect => "step",
    }
}

fn write_timeline(out: &mut String, report: &Report, history: &History) -> std::fmt::Result {
    let mut bars: Vec<Bar> = Vec::new();
    let mut marks: Vec<Mark> = Vec::new();
    for (index, trace) in history.traces.iter().enumerate() {
        let label = |iteration: u32| match (&trace.label, iteration) {
            (Some(label), _) => label.clone(),
            (None, 0) => "baseline".to_string(),
            (None, n) => format!("iteration {n}"),
        };
        let mut traced = timeline::phase_bars(&trace.lines, &label);
        // A test run that reached a verdict other than PASS is a failure too, though the machine
        // went on normally: mark its test bars with the verdict of their column (in a `test`
        // run, the attempt: each TEST_RUN starts the next one).
        let mut attempt = 0usize;
        for bar in traced.iter_mut().filter(|b| b.lane == Phase::Test.index()) {
            if bar.state == Some(State::TestRun) {
                attempt += 1;
            }
            let verdict = match report.command {
                Command::Test => history
                    .columns
                    .get(attempt.saturating_sub(1))
                    .and_then(|c| c.verdict),
                Command::Run => usize::try_from(bar.iteration)
                    .ok()
                    .and_then(|i| history.columns.get(i))
                    .and_then(|c| c.verdict),
                Command::Bisect => history.columns.get(index).and_then(|c| c.verdict),
            };
            if let Some(verdict) = verdict.filter(|v| *v != Verdict::Pass) {
                bar.failed = true;
                bar.title = format!("{} — verdict {}", bar.title, verdict_name(verdict));
            }
        }
        bars.extend(traced);
        marks.extend(timeline::iteration_marks(&trace.lines, &label));
    }
    // A test run is one iteration: its one mark would only repeat the axis's start.
    if report.command == Command::Test {
        marks.clear();
    }
    let lanes: Vec<&str> = Phase::ALL.iter().map(|p| p.label()).collect();
    let svg = timeline::render_svg(&lanes, &bars, &marks);
    if svg.is_empty() {
        return Ok(());
    }
    writeln!(out, "<h2>Timeline</h2>")?;
    write!(out, "<p class=\"legend\">")?;
    for phase in Phase::ALL {
        write!(
            out,
            "<span><i class=\"lg {}\"></i>{}</span>",
            phase.class(),
            escape(phase.label())
        )?;
    }
    writeln!(
        out,
        "<span>✕ ended in an error or a failure (hover a bar for its state and reason)</span></p>"
    )?;
    writeln!(out, "<figure>{svg}</figure>")
}

/// Every test name of the columns, in the order first seen.
fn grid_rows(columns: &[Column]) -> Vec<&str> {
    let mut names: Vec<&str> = Vec::new();
    for column in columns {
        for case in &column.cases {
            if !names.contains(&case.name.as_str()) {
                names.push(&case.name);
            }
        }
    }
    names
}

fn write_grid(out: &mut String, report: &Report, history: &History) -> std::fmt::Result {
    let columns = &history.columns;
    if columns.len() < 2 && report.command == Command::Test {
        return Ok(());
    }
    let rows = grid_rows(columns);
    if rows.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "<h2>Tests by {}</h2>\n<div class=\"scroll\"><table class=\"grid\">\n<thead><tr><th>Test</th>",
        column_noun(report)
    )?;
    for column in columns {
        write!(out, "<th class=\"col\">{}</th>", escape(&column.label))?;
    }
    writeln!(out, "</tr></thead>\n<tbody>")?;
    for name in rows {
        write!(out, "<tr><td><code>{}</code></td>", escape(name))?;
        for column in columns {
            match column.cases.iter().find(|c| c.name == name) {
                Some(case) => write!(
                    out,
                    "<td class=\"cell\"><span class=\"badge {}\" title=\"{}\">{}</span></td>",
                    status_class(case.status),
                    escape(case.message.as_deref().unwrap_or("")),
                    case_status_name(case.status)
                )?,
                None => write!(out, "<td class=\"cell\">—</td>")?,
            }
        }
        writeln!(out, "</tr>")?;
    }
    write!(out, "<tr><th>Verdict</th>")?;
    for column in columns {
        let verdict = column.verdict.map(verdict_name).unwrap_or("—");
        write!(out, "<th class=\"col\">{}</th>", escape(verdict))?;
    }
    writeln!(out, "</tr>\n</tbody>\n</table></div>")
}

fn write_columns(out: &mut String, report: &Report, history: &History) -> std::fmt::Result {
    if report.command == Command::Test || history.columns.is_empty() {
        return Ok(());
    }
    let heading = match report.command {
        Command::Test | Command::Run => "Iterations",
        Command::Bisect => "Steps",
    };
    writeln!(out, "<h2>{heading}</h2>")?;
    for column in &history.columns {
        let verdict = column.verdict.map(verdict_name).unwrap_or("no verdict");
        writeln!(
            out,
            "<section class=\"column\">\n<h3>{} — {}</h3>",
            escape(&column.label),
            escape(verdict)
        )?;
        if let Some(patch) = &column.patch {
            let origin = column
                .patch_origin
                .as_deref()
                .map(|o| format!(" (from <code>{}</code>)", escape(o)))
                .unwrap_or_default();
            writeln!(out, "<p>Patch: {}{origin}</p>", link(patch))?;
        }
        if let Some(crash) = &column.crash {
            writeln!(out, "<p>Crash:</p>\n<ul>")?;
            for line in crash_lines(crash) {
                writeln!(out, "<li>{}</li>", escape(&line))?;
            }
            writeln!(out, "</ul>")?;
        }
        let failing: Vec<String> = column
            .cases
            .iter()
            .filter(|c| !matches!(c.status, CaseStatus::Pass | CaseStatus::Ignore))
            .map(|c| format!("<code>{}</code>", escape(&c.name)))
            .collect();
        if !failing.is_empty() {
            writeln!(out, "<p>Not passing: {}</p>", failing.join(", "))?;
        }
        if !column.logs.is_empty() {
            let logs: Vec<String> = column
                .logs
                .iter()
                .map(|(what, path)| format!("{}: {}", escape(what), link(path)))
                .collect();
            writeln!(out, "<p>Logs: {}</p>", logs.join(" · "))?;
        }
        writeln!(out, "</section>")?;
    }
    Ok(())
}

fn write_crash(out: &mut String, report: &Report) -> std::fmt::Result {
    let Some(crash) = &report.crash else {
        return Ok(());
    };
    writeln!(out, "<h2>Crash</h2>\n<ul>")?;
    for line in crash_lines(crash) {
        writeln!(out, "<li>{}</li>", escape(&line))?;
    }
    writeln!(out, "</ul>")
}

fn write_hang(out: &mut String, report: &Report) -> std::fmt::Result {
    if let Some(silence) = &report.console_silence {
        writeln!(
            out,
            "<h2>Console</h2>\n<p><strong>At the timeout:</strong> {}.</p>",
            escape(silence)
        )?;
    }
    let Some(site) = &report.hang_site else {
        return Ok(());
    };
    writeln!(
        out,
        "<h2>Hang</h2>\n<p>The image stopped making progress; it was stuck in <code>{}</code>.</p>",
        escape(&describe_hang(site, report.hang_handler.as_ref()))
    )
}

fn write_build(out: &mut String, report: &Report) -> std::fmt::Result {
    let Some(build) = &report.build else {
        return Ok(());
    };
    writeln!(out, "<h2>Build</h2>\n<dl>")?;
    writeln!(
        out,
        "<dt>Command</dt><dd><code>{}</code></dd>",
        escape(&build.command)
    )?;
    let result = build.result_text();
    writeln!(out, "<dt>Result</dt><dd>{}</dd>", escape(&result))?;
    writeln!(out, "<dt>Log</dt><dd>{}</dd>\n</dl>", link(&build.log))?;
    let (lines, more) = build.first_diagnostics(MAX_DIAGNOSTICS);
    if lines.is_empty() {
        return Ok(());
    }
    let lines: Vec<String> = lines.iter().map(|line| escape(line)).collect();
    writeln!(out, "<pre>{}</pre>", lines.join("\n"))?;
    if more > 0 {
        writeln!(out, "<p>{more} more in {}.</p>", link(&build.log))?;
    }
    Ok(())
}

fn write_lint(out: &mut String, report: &Report) -> std::fmt::Result {
    let Some(lint) = &report.lint else {
        return Ok(());
    };
    writeln!(out, "<h2>Lint</h2>\n<dl>")?;
    if let Some(command) = &lint.command {
        writeln!(
            out,
            "<dt>Command</dt><dd><code>{}</code> (read as {})</dd>",
            escape(command),
            lint.format.name()
        )?;
    }
    let baseline = lint
        .baseline_findings
        .map(|n| format!("; the unpatched tree had {n}"))
        .unwrap_or_default();
    writeln!(
        out,
        "<dt>Iteration {}</dt><dd>{}{baseline}: {}</dd>",
        lint.iteration,
        escape(&super::plural(lint.findings, "finding")),
        lint.verdict.words()
    )?;
    writeln!(
        out,
        "<dt>Findings</dt><dd>{}</dd>\n</dl>",
        link(&lint.findings_file)
    )?;
    if lint.new_findings.is_empty() {
        return Ok(());
    }
    let lines: Vec<String> = lint
        .new_findings
        .iter()
        .map(|f| escape(&f.describe()))
        .collect();
    writeln!(out, "<p>New findings:</p>\n<pre>{}</pre>", lines.join("\n"))
}

fn write_attempts(out: &mut String, report: &Report) -> std::fmt::Result {
    if report.attempts.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "<h2>Attempts</h2>\n<table>\n<thead><tr><th>#</th><th>Verdict</th><th>Ended</th><th>Exit code</th><th>Duration</th><th>Passed</th><th>Failed</th><th>Crash</th><th>Console log</th></tr></thead>\n<tbody>"
    )?;
    for attempt in &report.attempts {
        let cells: String = attempt
            .cells()
            .iter()
            .map(|cell| format!("<td>{}</td>", escape(cell)))
            .collect();
        writeln!(
            out,
            "<tr>{cells}<td>{}</td></tr>",
            link(&attempt.console_log)
        )?;
    }
    writeln!(out, "</tbody>\n</table>")
}

fn write_pass_counts(out: &mut String, report: &Report) -> std::fmt::Result {
    if report.pass_counts.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "<h2>Pass counts over {} attempts</h2>\n<p>Rates with their Wilson 95% interval; a test is flaky when the interval excludes both 0 and 1 (it both passed and failed).</p>\n<table>\n<thead><tr><th>Test</th><th>Call</th><th>Passed</th><th>Runs</th><th>Rate [95% interval]</th></tr></thead>\n<tbody>",
        report.attempts.len()
    )?;
    for count in &report.pass_counts {
        let class = match count.call {
            Some(Call::Pass) => "s-pass",
            Some(Call::Fail) => "s-fail",
            Some(Call::Flaky) => "s-ignore",
            None => "s-missing",
        };
        writeln!(
            out,
            "<tr><td><code>{}</code></td><td><span class=\"badge {class}\">{}</span></td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&count.name),
            call_name(count.call),
            count.passed,
            count.runs,
            escape(&flaky::describe(count.passed, count.runs))
        )?;
    }
    writeln!(out, "</tbody>\n</table>")
}

fn write_candidates(out: &mut String, report: &Report) -> std::fmt::Result {
    if report.candidates.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "<h2>Candidates</h2>\n<table>\n<thead><tr><th>Iteration</th><th>Id</th><th>Origin</th><th>Verdict</th><th>Changed lines</th><th>Why</th></tr></thead>\n<tbody>"
    )?;
    for candidate in &report.candidates {
        let cells: String = candidate
            .cells()
            .iter()
            .map(|cell| format!("<td>{}</td>", escape(cell)))
            .collect();
        writeln!(out, "<tr>{cells}</tr>")?;
    }
    writeln!(out, "</tbody>\n</table>")
}

fn write_notes(out: &mut String, report: &Report) -> std::fmt::Result {
    if report.notes.is_empty() {
        return Ok(());
    }
    writeln!(out, "<h2>Notes</h2>\n<ul>")?;
    for note in &report.notes {
        writeln!(out, "<li>{}</li>", escape(note))?;
    }
    writeln!(out, "</ul>")
}

fn write_files(out: &mut String, report: &Report) -> std::fmt::Result {
    writeln!(
        out,
        "<h2>Files</h2>\n<p>Relative to the run directory.</p>\n<ul>"
    )?;
    for (what, path) in [
        ("machine-readable report", super::REPORT_JSON),
        ("report for people", super::REPORT_MD),
        ("for CI", super::JUNIT_XML),
    ] {
        writeln!(out, "<li>{what}: {}</li>", link(path))?;
    }
    if let Some(build) = &report.build {
        writeln!(out, "<li>build log: {}</li>", link(&build.log))?;
    }
    for attempt in &report.attempts {
        writeln!(
            out,
            "<li>console log of attempt {}: {}</li>",
            attempt.attempt,
            link(&attempt.console_log)
        )?;
    }
    if let Some(patch) = &report.patch {
        writeln!(out, "<li>fix: {}</li>", link(patch))?;
    }
    writeln!(out, "</ul>")
}

/// A link to a file of the run by its relative path, or just the path as code when it is not a
/// plain relative path (absolute, `..`, empty): a report must not link out of its run directory.
pub(super) fn link(path: &str) -> String {
    link_to(path, false)
}

/// A link by a relative path that may climb out of the page's directory first (`../../runs/r1/`):
/// the matrix's page links to its pairs' runs beside it. Absolute paths and a `..` after a
/// normal component are still refused.
pub(super) fn link_up(path: &str) -> String {
    link_to(path, true)
}

fn link_to(path: &str, up: bool) -> String {
    let mut climbing = up;
    let relative = !path.is_empty()
        && Path::new(path).components().all(|c| match c {
            Component::ParentDir => climbing,
            Component::Normal(_) | Component::CurDir => {
                climbing = false;
                true
            }
            Component::RootDir | Component::Prefix(_) => false,
        });
    if relative {
        format!(
            "<a href=\"{}\"><code>{}</code></a>",
            percent_encode(path),
            escape(path)
        )
    } else {
        format!("<code>{}</code>", escape(path))
    }
}

/// Percent-encodes everything but unreserved characters and `/`, so no path can become a scheme
/// (`javascript:`), a query or a fragment, or break out of the attribute.
fn percent_encode(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for byte in path.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                out.push(char::from(byte))
            }
            _ => {
                let _ = write!(out, "%{byte:02X}");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{CrashReport, Diagnostic, Severity};
    use crate::machine::State;
    use crate::report::{AttemptSummary, BuildSummary};
    use crate::results::{TestCase, Verdict};

    const EVIL: &str = "<script>alert('x')</script>\"&<img src=x onerror=alert(1)>";

    fn report() -> Report {
        let mut report = crate::report::test_support::report(
            "20240501-120000-beef",
            Command::Test,
            Status::Failed,
            State::Failure,
            3,
        );
        report.message = "tests failed".into();
        report.board = "qemu-mps2-an385".into();
        report.profile = "crc".into();
        report.verdict = Some(Verdict::Fail);
        report.cases = vec![
            TestCase {
                name: "test_ok".into(),
                status: CaseStatus::Pass,
                message: None,
                file: Some("tests/test_crc.c".into()),
                line: Some(11),
            },
            TestCase {
                name: "test_bad".into(),
                status: CaseStatus::Fail,
                message: Some("Expected 0x29B1 Was 0x31C3".into()),
                file: Some("tests/test_crc.c".into()),
                line: Some(23),
            },
        ];
        report.build = Some(BuildSummary {
            command: "make".into(),
            success: true,
            duration_ms: 300,
            log: "iter-000/build.log".into(),
            diagnostics: vec![],
        });
        report.attempts = vec![AttemptSummary {
            attempt: 1,
            verdict: Verdict::Fail,
            end: "verdict".into(),
            exit_code: None,
            duration_ms: 40,
            console_log: "iter-000/console.log".into(),
            passed: 1,
            failed: 1,
            nonce: None,
            crash: None,
        }];
        report
    }

    #[test]
    fn links_stay_relative_and_cannot_become_a_scheme() {
        assert_eq!(
            link("iter-000/console.log"),
            "<a href=\"iter-000/console.log\"><code>iter-000/console.log</code></a>"
        );
        assert_eq!(
            link("javascript:alert(1)"),
            "<a href=\"javascript%3Aalert%281%29\"><code>javascript:alert(1)</code></a>"
        );
        assert_eq!(
            link("a\" onclick=\"x"),
            "<a href=\"a%22%20onclick%3D%22x\"><code>a&quot; onclick=&quot;x</code></a>"
        );
        assert_eq!(link("/etc/passwd"), "<code>/etc/passwd</code>");
        assert_eq!(link("../../x"), "<code>../../x</code>");
        assert_eq!(
            link_up("../../runs/r1/report.html"),
            "<a href=\"../../runs/r1/report.html\"><code>../../runs/r1/report.html</code></a>"
        );
        assert_eq!(link_up("a/../../x"), "<code>a/../../x</code>");
        assert_eq!(link_up("/etc/passwd"), "<code>/etc/passwd</code>");
        assert_eq!(link(""), "<code></code>");
    }

    #[test]
    fn untrusted_strings_from_the_run_never_reach_the_page_raw() {
        let mut report = report();
        report.run_id = EVIL.into();
        report.message = EVIL.into();
        report.board = EVIL.into();
        report.cases[1].name = EVIL.into();
        report.cases[1].message = Some(EVIL.into());
        report.cases[1].file = Some(EVIL.into());
        report.notes = vec![EVIL.into()];
        report.crash = Some(CrashReport {
            pc: Some(EVIL.into()),
            lr: None,
            cfsr: None,
            hfsr: None,
            function: Some(EVIL.into()),
            file: None,
            line: None,
            caller: None,
            fault_bits: vec![EVIL.into()],
            fault_address: None,
            exception: None,
            lockup: false,
            summary: EVIL.into(),
        });
        if let Some(build) = &mut report.build {
            build.command = EVIL.into();
            build.log = EVIL.into();
            build.diagnostics = vec![Diagnostic {
                severity: Severity::Error,
                tool: "compiler".into(),
                kind: "compile".into(),
                file: Some(EVIL.into()),
                line: Some(1),
                column: None,
                message: EVIL.into(),
                log_line: 1,
            }];
        }
        report.attempts[0].console_log = EVIL.into();
        report.attempts[0].end = EVIL.into();
        let html = render_html(&report, &History::default());
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("alert('x')"), "{html}");
        assert!(html.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"));
        // Every tag on the page is one the renderer wrote.
        let allowed = [
            "!DOCTYPE", "html", "head", "meta", "title", "style", "body", "header", "h1", "h2",
            "p", "main", "dl", "dt", "dd", "code", "table", "thead", "tbody", "tr", "th", "td",
            "span", "ul", "li", "pre", "a", "footer", "figure", "svg", "g", "rect", "line", "text",
            "title", "path", "section", "h3", "i",
        ];
        for tag in html.split('<').skip(1) {
            let name: String = tag
                .trim_start_matches('/')
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '!')
                .collect();
            assert!(allowed.contains(&name.as_str()), "unexpected tag <{tag}");
        }
    }

    #[test]
    fn the_page_is_self_contained() {
        let html = render_html(&report(), &History::default());
        assert!(html.starts_with("<!DOCTYPE html>\n<html lang=\"en\">"));
        assert!(html.trim_end().ends_with("</html>"));
        assert!(html.contains("default-src 'none'"));
        for external in ["<script", "<link", "http://", "https://", "src=", "@import"] {
            assert!(!html.contains(external), "{external} in the page");
        }
    }

    #[test]
    fn banner_cases_logs_and_status_colours() {
        let html = render_html(&report(), &History::default());
        assert!(html.contains("<header class=\"banner bad\">\n<h1>fwfix test: FAILED</h1>"));
        assert!(html.contains("1 passed, 1 failed (2 tests) in 3.0 s"));
        assert!(html.contains(
            "<tr class=\"bad-row\"><td><span class=\"badge s-fail\">FAIL</span></td><td><code>test_bad</code></td><td><code>tests/test_crc.c:23</code></td><td class=\"message\">Expected 0x29B1 Was 0x31C3</td></tr>"
        ));
        assert!(html.contains("<span class=\"badge s-pass\">PASS</span>"));
        assert!(html.contains("<a href=\"iter-000/build.log\">"));
        assert!(html.contains("<a href=\"iter-000/console.log\">"));
        assert!(html.contains("<a href=\"junit.xml\">"));

        let mut passed = report();
        passed.status = Status::Passed;
        assert!(render_html(&passed, &History::default()).contains("<header class=\"banner ok\">"));
    }

    /// A fix run's history with hostile names everywhere a run can put them.
    fn hostile_history() -> History {
        use crate::machine::Outcome;
        use crate::report::history::{Column, Trace};
        let line = |seq: u64, ms: u32, from: State, to: State| crate::rundir::TraceLine {
            seq,
            ts: format!("2026-01-01T00:00:00.{ms:03}Z"),
            from,
            to,
            outcome: Outcome::TaskReceived,
            reason: EVIL.into(),
            iteration: 0,
            error_class: None,
            evidence: vec![],
            evidence_sha256: vec![],
        };
        let mut case = crate::report::test_support::case(EVIL, CaseStatus::Fail, Some(EVIL), None);
        case.file = Some(EVIL.into());
        History {
            traces: vec![Trace {
                label: None,
                lines: vec![
                    line(1, 0, State::BuildSetup, State::BuildRun),
                    line(2, 300, State::BuildRun, State::TestSetup),
                    line(3, 400, State::TestSetup, State::TestRun),
                    line(4, 600, State::TestRun, State::ResultCollection),
                ],
            }],
            columns: vec![Column {
                label: EVIL.into(),
                verdict: Some(Verdict::Fail),
                cases: vec![case],
                crash: None,
                patch: Some(EVIL.into()),
                patch_origin: Some(EVIL.into()),
                logs: vec![(EVIL.into(), EVIL.into())],
            }],
            fix_patch: Some(EVIL.into()),
        }
    }

    #[test]
    fn the_history_sections_escape_everything_the_run_wrote() {
        let mut report = report();
        report.command = Command::Run;
        report.status = Status::Failure;
        let html = render_html(&report, &hostile_history());
        assert!(html.contains("<h2>Timeline</h2>") && html.contains("<svg class=\"timeline\""));
        assert!(html.contains("<h2>Tests by iteration</h2>"));
        assert!(html.contains("<h2>Iterations</h2>"));
        assert!(
            html.contains("class=\"bar failed\""),
            "the failed test run is marked"
        );
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("href=\"<"), "{html}");
    }

    #[test]
    fn run_and_bisect_outcomes() {
        let mut report = report();
        report.command = Command::Run;
        report.status = Status::Success;
        report.fixed = Some(vec!["test_bad".into()]);
        report.patch = Some("fix.patch".into());
        report.branch = Some("fwfix/r1".into());
        let html = render_html(&report, &History::default());
        assert!(html.contains("<dt>Now passing</dt><dd><code>test_bad</code></dd>"));
        assert!(html.contains("<a href=\"fix.patch\"><code>fix.patch</code></a>"));
        assert!(html.contains("<dt>Iterations</dt>"));

        report.command = Command::Bisect;
        report.culprit = None;
        assert!(render_html(&report, &History::default()).contains("No culprit commit was found."));
    }
}
