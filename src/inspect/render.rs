//! Text for people: the audit's findings, the list of runs, and a run's timeline, as the `cli`
//! commands print them. Pure: values in, `\n`-terminated lines out, ANSI colour only when asked.

use super::{AuditReport, RunStatus, RunSummary, Timeline, TimelineEntry};
use crate::bisect::StepVerdict;
use crate::machine::State;
use crate::report::{format_duration, plural};
use crate::ui::{paint, Paint};
use std::fmt::Write as _;
use std::path::Path;

/// Widest `FROM -> TO` column before it stops aligning.
const MAX_TRANSITION_WIDTH: usize = 44;
/// Fields of run.json / context.json worth a line in the timeline's header, in this order.
const SHOWN_FIELDS: [&str; 6] = [
    "command",
    "state",
    "pid",
    "host",
    "started_at",
    "fwfix_version",
];

/// Every finding as `trace.jsonl:7: ...`, then one verdict line.
pub fn render_audit(audit: &AuditReport, run_dir: &Path, color: bool) -> String {
    let mut out = String::new();
    for finding in &audit.findings {
        let _ = writeln!(out, "{finding}");
    }
    for note in &audit.notes {
        let _ = writeln!(out, "note: {note}");
    }
    let verdict = if audit.ok {
        format!(
            "{}: {}, every one legal and in order, evidence intact",
            paint("audit OK", Paint::Green, color),
            plural(audit.steps, "step")
        )
    } else {
        format!(
            "{}: {} in {}",
            paint("audit FAILED", Paint::Red, color),
            plural(audit.findings.len(), "finding"),
            plural(audit.steps, "step")
        )
    };
    let _ = writeln!(out, "{verdict}");
    let _ = writeln!(out, "run: {}", run_dir.display());
    out
}

/// The runs as a table, newest first as given.
pub fn render_runs(runs: &[RunSummary], color: bool) -> String {
    let header = [
        "ID",
        "COMMAND",
        "STATUS",
        "ITER",
        "STARTED (UTC)",
        "DURATION",
        "BOARD / PROFILE",
    ];
    let rows: Vec<[String; 7]> = runs
        .iter()
        .map(|run| {
            [
                run.id.clone(),
                run.command.clone().unwrap_or_else(|| "?".into()),
                status_text(run),
                run.iterations
                    .map(|n| n.to_string())
                    .unwrap_or_else(|| "-".into()),
                run.started_at
                    .map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
                    .unwrap_or_else(|| "-".into()),
                run.duration_ms
                    .map(format_duration)
                    .unwrap_or_else(|| "-".into()),
                board_profile(run),
            ]
        })
        .collect();
    let mut widths = header.map(|h| h.chars().count());
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let line = |cells: [&str; 7], status_paint: Option<Paint>| {
        let mut text = String::new();
        for (index, (cell, width)) in cells.iter().zip(widths).enumerate() {
            let padded = format!("{cell:<width$}");
            let padded = match (index, status_paint) {
                (2, Some(tint)) => paint(&padded, tint, color),
                _ => padded,
            };
            text.push_str(&padded);
            text.push_str("  ");
        }
        format!("{}\n", text.trim_end())
    };
    out.push_str(&paint(&line(header, None), Paint::Bold, color));
    for (run, row) in runs.iter().zip(&rows) {
        let cells = [
            row[0].as_str(),
            &row[1],
            &row[2],
            &row[3],
            &row[4],
            &row[5],
            &row[6],
        ];
        out.push_str(&line(cells, Some(status_paint(run.status))));
    }
    out
}

fn status_text(run: &RunSummary) -> String {
    let at = run.state.map(|s| format!(" at {s}")).unwrap_or_default();
    match run.status {
        RunStatus::Finished(status) => status.name().to_string(),
        RunStatus::Running => format!("running{at}"),
        RunStatus::Killed => format!("killed{at}"),
        RunStatus::RunningOrKilled => format!("running or killed{at}"),
        RunStatus::Unreadable => "report unreadable".to_string(),
    }
}

fn status_paint(status: RunStatus) -> Paint {
    match status {
        RunStatus::Finished(status) if status.is_ok() => Paint::Green,
        RunStatus::Finished(_) | RunStatus::Killed | RunStatus::Unreadable => Paint::Red,
        RunStatus::Running | RunStatus::RunningOrKilled => Paint::Yellow,
    }
}

fn board_profile(run: &RunSummary) -> String {
    match (&run.board, &run.profile) {
        (Some(board), Some(profile)) => format!("{board} / {profile}"),
        (Some(one), None) | (None, Some(one)) => one.clone(),
        (None, None) => "-".into(),
    }
}

/// The run's header and every transition with its offset from the start, reason, error class and
/// evidence; then what is known about the report. The report's own summary is not included.
pub fn render_timeline(timeline: &Timeline, color: bool) -> String {
    let mut out = String::new();
    // Writing into a String cannot fail; the results are discarded for that reason only.
    let _ = write_timeline(&mut out, timeline, color);
    out
}

fn write_timeline(out: &mut String, timeline: &Timeline, color: bool) -> std::fmt::Result {
    let mut title = format!("run {}", timeline.run_id);
    if let Some(report) = &timeline.report {
        write!(title, ": fwfix {}", report.command)?;
        if !report.board.is_empty() {
            write!(title, " on {}", report.board)?;
        }
        if !report.profile.is_empty() {
            write!(title, ", profile {}", report.profile)?;
        }
    }
    writeln!(out, "{}", paint(&title, Paint::Bold, color))?;
    writeln!(out, "dir: {}", timeline.run_dir.display())?;
    if let Some(started) = &timeline.started {
        writeln!(out, "started: {started}")?;
    }
    for (name, value) in [
        (super::RUN_JSON, &timeline.run_json),
        (super::CONTEXT_JSON, &timeline.context_json),
    ] {
        if let Some(value) = value {
            writeln!(out, "{name}: {}", describe_json(value))?;
        }
    }
    writeln!(out)?;
    if let Some(problem) = &timeline.trace_problem {
        writeln!(out, "{}", paint(problem, Paint::Red, color))?;
    }
    if timeline.bisect {
        write_bisect_steps(out, timeline, color)?;
    }

    let width = timeline
        .entries
        .iter()
        .filter_map(|entry| match entry {
            TimelineEntry::Transition { transition, .. } => {
                Some(transition.from.name().len() + 4 + transition.to.name().len())
            }
            TimelineEntry::Unreadable { .. } => None,
        })
        .max()
        .unwrap_or(0)
        .min(MAX_TRANSITION_WIDTH);
    let mut iteration = 0;
    for entry in &timeline.entries {
        match entry {
            TimelineEntry::Transition {
                offset_ms,
                transition: t,
                ..
            } => {
                if t.iteration != iteration {
                    iteration = t.iteration;
                    writeln!(
                        out,
                        "{}",
                        paint(&format!("-- iteration {iteration}"), Paint::Dim, color)
                    )?;
                }
                let offset = offset_ms.map(format_offset).unwrap_or_else(|| "?".into());
                let step = format!("{} -> {}", t.from, t.to);
                let step = format!("{step:<width$}");
                let step = match state_paint(t.to) {
                    Some(tint) => paint(&step, tint, color),
                    None => step,
                };
                let mut line = format!("{offset:>11}  #{:<3} {step}", t.seq);
                if let Some(class) = t.error_class {
                    write!(
                        line,
                        "  {}",
                        paint(&format!("[{class}]"), Paint::Red, color)
                    )?;
                }
                write!(line, "  {}", t.reason.replace(['\r', '\n'], " "))?;
                writeln!(out, "{}", line.trim_end())?;
                for evidence in &t.evidence {
                    writeln!(
                        out,
                        "{:>18}{}",
                        "",
                        paint(&format!("evidence: {evidence}"), Paint::Dim, color)
                    )?;
                }
            }
            TimelineEntry::Unreadable { line, problem } => {
                let text = format!("{}:{line}: unreadable line: {problem}", super::TRACE_FILE);
                writeln!(out, "{:>13}{}", "", paint(&text, Paint::Red, color))?;
            }
        }
    }
    writeln!(out)?;
    if let Some(problem) = &timeline.report_problem {
        writeln!(out, "{}", paint(problem, Paint::Red, color))?;
    } else if timeline.report.is_none() {
        let at = timeline
            .last_state()
            .map(|s| format!(" (last state {s})"))
            .unwrap_or_default();
        writeln!(
            out,
            "{}",
            paint(
                &format!("no report.json: the run is still going or was killed{at}"),
                Paint::Yellow,
                color
            )
        )?;
    }
    Ok(())
}

/// A bisect's steps, each a run of its own that `fwfix show` and `fwfix audit` open.
fn write_bisect_steps(out: &mut String, timeline: &Timeline, color: bool) -> std::fmt::Result {
    let steps = timeline.report.as_ref().map(|r| r.steps.as_slice());
    let Some(steps) = steps.filter(|s| !s.is_empty()) else {
        return writeln!(out, "a bisect with no step recorded");
    };
    writeln!(
        out,
        "{}",
        paint(
            "bisect steps (each is a run of its own: fwfix show DIR/STEP_DIR)",
            Paint::Bold,
            color
        )
    )?;
    for s in steps {
        let commit = s.commit.get(..12).unwrap_or(&s.commit);
        let verdict = format!("{:<5}", s.verdict.name());
        let verdict = match s.verdict {
            StepVerdict::Good => paint(&verdict, Paint::Green, color),
            StepVerdict::Bad | StepVerdict::Error => paint(&verdict, Paint::Red, color),
            StepVerdict::Skip => paint(&verdict, Paint::Yellow, color),
        };
        writeln!(
            out,
            "  {:>3}  {commit}  {verdict}  {}  {}",
            s.step,
            s.run_dir,
            s.subject.replace(['\r', '\n'], " ")
        )?;
    }
    Ok(())
}

fn state_paint(state: State) -> Option<Paint> {
    match state {
        State::Success => Some(Paint::Green),
        State::Failure | State::Aborted => Some(Paint::Red),
        State::ErrorRecovery => Some(Paint::Yellow),
        State::Idle
        | State::Init
        | State::CodeAnalysis
        | State::PatchGeneration
        | State::PatchReview
        | State::PatchApply
        | State::BuildSetup
        | State::BuildRun
        | State::Lint
        | State::TestSetup
        | State::TestRun
        | State::ResultCollection
        | State::ResultAnalysis
        | State::ConvergenceCheck
        | State::Commit => None,
    }
}

/// `+00:01.234`, or `+1:02:03.456` past an hour.
fn format_offset(ms: i64) -> String {
    let sign = if ms < 0 { '-' } else { '+' };
    let ms = ms.unsigned_abs();
    let (hours, minutes) = (ms / 3_600_000, (ms / 60_000) % 60);
    let (seconds, millis) = ((ms / 1_000) % 60, ms % 1_000);
    if hours > 0 {
        format!("{sign}{hours}:{minutes:02}:{seconds:02}.{millis:03}")
    } else {
        format!("{sign}{minutes:02}:{seconds:02}.{millis:03}")
    }
}

/// The few fields of run.json / context.json a person looks for, `key value, ...`, in a fixed
/// order; the rest is in the file (and in `--json`).
fn describe_json(value: &serde_json::Value) -> String {
    use serde_json::Value;
    let Value::Object(fields) = value else {
        return "present, not a JSON object".to_string();
    };
    let shown: Vec<String> = SHOWN_FIELDS
        .iter()
        .filter_map(|key| match fields.get(*key)? {
            Value::String(s) => Some(format!("{key} {}", s.replace(['\r', '\n'], " "))),
            Value::Number(n) => Some(format!("{key} {n}")),
            Value::Bool(b) => Some(format!("{key} {b}")),
            Value::Null | Value::Array(_) | Value::Object(_) => None,
        })
        .collect();
    if shown.is_empty() {
        format!("present ({})", plural(fields.len(), "field"))
    } else {
        shown.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inspect::{Finding, FindingKind};
    use crate::machine::{ErrorClass, Outcome};
    use crate::report::Status;
    use crate::rundir::TraceLine;
    use std::path::PathBuf;

    fn transition(seq: u64, from: State, to: State, outcome: Outcome) -> TimelineEntry {
        TimelineEntry::Transition {
            line: seq as usize,
            offset_ms: Some((seq as i64 - 1) * 1_250),
            transition: TraceLine {
                seq,
                ts: String::new(),
                from,
                to,
                outcome,
                reason: format!("reason {seq}"),
                iteration: 0,
                error_class: match outcome {
                    Outcome::Error(class) => Some(class),
                    _ => None,
                },
                evidence: if seq == 2 {
                    vec!["iter-000/build.log".into()]
                } else {
                    vec![]
                },
                evidence_sha256: vec![],
            },
        }
    }

    fn timeline() -> Timeline {
        Timeline {
            run_id: "r1".into(),
            run_dir: PathBuf::from(".fwfix/runs/r1"),
            started: Some("2024-05-01T12:00:00.000Z".into()),
            entries: vec![
                transition(1, State::Idle, State::Init, Outcome::TaskReceived),
                transition(
                    2,
                    State::Init,
                    State::ErrorRecovery,
                    Outcome::Error(ErrorClass::TestEnvFailure),
                ),
                TimelineEntry::Unreadable {
                    line: 3,
                    problem: "expected value".into(),
                },
            ],
            trace_problem: None,
            bisect: false,
            report: None,
            report_problem: None,
            run_json: Some(serde_json::json!({"pid": 42, "command": "run", "argv": []})),
            context_json: Some(serde_json::json!({"ledger": {}})),
        }
    }

    #[test]
    fn the_timeline_lists_offsets_states_reasons_and_evidence_in_order() {
        let text = render_timeline(&timeline(), false);
        let expected = "\
run r1
dir: .fwfix/runs/r1
started: 2024-05-01T12:00:00.000Z
run.json: command run, pid 42
context.json: present (1 field)

 +00:00.000  #1   IDLE -> INIT            reason 1
 +00:01.250  #2   INIT -> ERROR_RECOVERY  [TEST_ENV_FAILURE]  reason 2
                  evidence: iter-000/build.log
             trace.jsonl:3: unreadable line: expected value

no report.json: the run is still going or was killed (last state ERROR_RECOVERY)
";
        assert_eq!(text, expected);
        let coloured = render_timeline(&timeline(), true);
        assert!(coloured.contains("\x1b[33mINIT -> ERROR_RECOVERY\x1b[0m"));
        assert!(coloured.contains("\x1b[31m[TEST_ENV_FAILURE]\x1b[0m"));
    }

    #[test]
    fn offsets_read_as_minutes_seconds_and_milliseconds() {
        assert_eq!(format_offset(0), "+00:00.000");
        assert_eq!(format_offset(61_005), "+01:01.005");
        assert_eq!(format_offset(3_723_456), "+1:02:03.456");
        assert_eq!(format_offset(-1_000), "-00:01.000");
    }

    #[test]
    fn the_audit_prints_each_finding_then_a_verdict() {
        let audit = AuditReport {
            ok: false,
            steps: 9,
            findings: vec![Finding {
                line: Some(4),
                kind: FindingKind::IllegalTransition,
                message: "illegal transition BUILD_RUN -> SUCCESS (outcome built)".into(),
                step: None,
            }],
            notes: vec!["1 torn trace line(s) set aside".into()],
        };
        assert_eq!(
            render_audit(&audit, Path::new("runs/r1"), false),
            "trace.jsonl:4: illegal transition BUILD_RUN -> SUCCESS (outcome built)\n\
             note: 1 torn trace line(s) set aside\n\
             audit FAILED: 1 finding in 9 steps\nrun: runs/r1\n"
        );
        let clean = AuditReport {
            ok: true,
            steps: 9,
            findings: vec![],
            notes: vec![],
        };
        assert!(render_audit(&clean, Path::new("r1"), false)
            .starts_with("audit OK: 9 steps, every one legal and in order, evidence intact\n"));
    }

    #[test]
    fn runs_line_up_in_columns() {
        let finished = RunSummary {
            id: "20240501-120000-aaaa".into(),
            dir: PathBuf::from("a"),
            command: Some("test".into()),
            status: RunStatus::Finished(Status::Passed),
            state: Some(State::Success),
            iterations: Some(0),
            started_at: Some("2024-05-01T12:00:00.500Z".parse().unwrap()),
            duration_ms: Some(480),
            board: Some("qemu-mps2-an385".into()),
            profile: Some("crc".into()),
            pid: None,
            problem: None,
        };
        let mut unfinished = finished.clone();
        unfinished.id = "20240501-130000-bbbb".into();
        unfinished.command = None;
        unfinished.status = RunStatus::RunningOrKilled;
        unfinished.state = Some(State::TestRun);
        unfinished.duration_ms = None;
        unfinished.board = None;
        unfinished.profile = None;
        let text = render_runs(&[unfinished, finished], false);
        let expected = "\
ID                    COMMAND  STATUS                         ITER  STARTED (UTC)        DURATION  BOARD / PROFILE
20240501-130000-bbbb  ?        running or killed at TEST_RUN  0     2024-05-01 12:00:00  -         -
20240501-120000-aaaa  test     PASSED                         0     2024-05-01 12:00:00  480 ms    qemu-mps2-an385 / crc
";
        assert_eq!(text, expected);
    }
}
