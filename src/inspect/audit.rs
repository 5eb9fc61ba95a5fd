//! `fwfix audit`: replays a run's `trace.jsonl` through [`machine::next`] and checks that the run
//! directory still holds the evidence the trace names, byte for byte.
//!
//! A bisect's directory (`fwfix bisect`, or a `revert` strategy's `iter-NNN/bisect/`) has no trace
//! of its own: every step it took is a whole run under `steps/`. Its audit is the audit of each
//! step its record (`bisect.json`) lists, with each finding naming the step, and a step the record
//! lists without its directory is a finding too.
//!
//! The checks are pure ([`check_trace`]): the trace text, what report.json says, and a lookup of
//! evidence hashes go in, findings come out. [`audit`] only reads the files and hands them over.
//! A broken line is a finding with its line number, never a panic; the audit never stops at the
//! first problem, so one run shows everything that is wrong with it.

use super::{load_report, parse_trace, TRACE_FILE};
use crate::bisect::BisectStep;
use crate::machine::{self, Outcome, State};
use crate::report::REPORT_JSON;
use crate::rundir::{self, TraceLine};
use chrono::{DateTime, FixedOffset};
use serde::Serialize;
use std::collections::HashMap;
use std::fmt;
use std::path::{Component, Path};

/// What the audit of one run found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditReport {
    /// True when there are no findings: every step legal, in order, with its evidence intact, and
    /// the run finished.
    pub ok: bool,
    /// Transitions read from the trace.
    pub steps: usize,
    pub findings: Vec<Finding>,
    /// What the audit found that is not wrong: e.g. a torn trace line a resume set aside.
    pub notes: Vec<String>,
}

impl AuditReport {
    fn new(steps: usize, findings: Vec<Finding>) -> AuditReport {
        AuditReport {
            ok: findings.is_empty(),
            steps,
            findings,
            notes: Vec::new(),
        }
    }
}

/// One thing wrong with a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// 1-based line of `trace.jsonl`, when the finding is about one line.
    pub line: Option<usize>,
    pub kind: FindingKind,
    pub message: String,
    /// In a bisect's audit: the step's run directory, relative to the bisect's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
}

impl fmt::Display for Finding {
    /// `trace.jsonl:7: illegal transition ...`, or `report.json: ...` for a whole-file finding;
    /// `steps/03-1a2b3c4/trace.jsonl:7: ...` for a bisect step's.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = match &self.step {
            Some(step) => format!("{step}/{}", self.kind.file()),
            None => self.kind.file().to_string(),
        };
        match self.line {
            Some(line) => write!(f, "{file}:{line}: {}", self.message),
            None => write!(f, "{file}: {}", self.message),
        }
    }
}

/// A bisect's record of its steps, rewritten after each one.
pub const BISECT_JSON: &str = "bisect.json";

/// The kinds of finding, stable for `--json` readers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    /// trace.jsonl is missing or cannot be read.
    TraceUnreadable,
    /// No transition could be read at all.
    EmptyTrace,
    /// A line is not a trace line (bad JSON, unknown state or outcome, missing field).
    Malformed,
    /// The first transition does not leave IDLE.
    BadStart,
    /// `seq` does not count up by one from 1.
    SeqGap,
    /// A transition does not start where the previous one ended.
    Discontinuity,
    /// `next(from, outcome)` is not `to`.
    IllegalTransition,
    /// `ts` is not RFC 3339.
    BadTimestamp,
    /// `ts` is earlier than the line before.
    TimeWentBackwards,
    /// A transition into ERROR_RECOVERY without an error class.
    MissingErrorClass,
    /// The error class disagrees with the outcome's.
    ErrorClassMismatch,
    /// An evidence file no longer exists.
    EvidenceMissing,
    /// An evidence file's contents changed after it was recorded.
    EvidenceModified,
    /// An evidence file cannot be checked: no hash recorded, unreadable, or outside the run.
    EvidenceUnverifiable,
    /// The trace stops before a terminal state and there is no report: still going, or killed.
    Incomplete,
    /// There is a report but the trace does not end in a terminal state.
    NotTerminal,
    /// The trace ends in a terminal state but report.json is missing.
    ReportMissing,
    /// report.json exists but cannot be read.
    ReportUnreadable,
    /// report.json disagrees with the trace.
    ReportMismatch,
    /// A bisect's bisect.json cannot be read, or lists no step.
    BisectRecordUnreadable,
    /// A step the bisect's record lists has no run directory (or one outside the bisect's).
    StepMissing,
}

impl FindingKind {
    /// The file a finding of this kind is about.
    pub fn file(self) -> &'static str {
        match self {
            FindingKind::ReportMissing
            | FindingKind::ReportUnreadable
            | FindingKind::ReportMismatch => REPORT_JSON,
            FindingKind::BisectRecordUnreadable | FindingKind::StepMissing => BISECT_JSON,
            FindingKind::TraceUnreadable
            | FindingKind::EmptyTrace
            | FindingKind::Malformed
            | FindingKind::BadStart
            | FindingKind::SeqGap
            | FindingKind::Discontinuity
            | FindingKind::IllegalTransition
            | FindingKind::BadTimestamp
            | FindingKind::TimeWentBackwards
            | FindingKind::MissingErrorClass
            | FindingKind::ErrorClassMismatch
            | FindingKind::EvidenceMissing
            | FindingKind::EvidenceModified
            | FindingKind::EvidenceUnverifiable
            | FindingKind::Incomplete
            | FindingKind::NotTerminal => TRACE_FILE,
        }
    }
}

/// What report.json says, as far as the audit needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReportFacts {
    /// No report.json: the run has not finished (or was killed).
    Absent,
    Present {
        final_state: State,
    },
    Unreadable(String),
}

/// An evidence file as found on disk now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EvidenceFile {
    /// Its hex SHA-256.
    Hash(String),
    Missing,
    Unreadable(String),
}

/// Audits the run in `run_dir`: reads its trace, its report and its evidence, and checks them. A
/// bisect's directory is audited step by step.
pub fn audit(run_dir: &Path) -> AuditReport {
    if !run_dir.join(TRACE_FILE).exists() && run_dir.join(BISECT_JSON).exists() {
        return audit_bisect(run_dir);
    }
    audit_run(run_dir)
}

/// Audits every step a bisect's record lists; `steps` counts the transitions of all of them.
fn audit_bisect(dir: &Path) -> AuditReport {
    let record = dir.join(BISECT_JSON);
    let unreadable = |message: String| {
        AuditReport::new(
            0,
            vec![Finding {
                line: None,
                kind: FindingKind::BisectRecordUnreadable,
                message,
                step: None,
            }],
        )
    };
    let steps: Vec<BisectStep> = match std::fs::read_to_string(&record)
        .map_err(|e| e.to_string())
        .and_then(|text| serde_json::from_str::<BisectRecord>(&text).map_err(|e| e.to_string()))
    {
        Ok(r) => r.steps,
        Err(e) => return unreadable(format!("cannot read {}: {e}", record.display())),
    };
    if steps.is_empty() {
        return unreadable("the bisect recorded no step".to_string());
    }
    let mut transitions = 0;
    let mut findings = Vec::new();
    for s in &steps {
        let step_dir = dir.join(&s.run_dir);
        if !stays_inside(&s.run_dir) || !step_dir.is_dir() {
            findings.push(Finding {
                line: None,
                kind: FindingKind::StepMissing,
                message: format!(
                    "step {} ({}) names run directory `{}`, which is not in the bisect's",
                    s.step,
                    short(&s.commit),
                    s.run_dir
                ),
                step: None,
            });
            continue;
        }
        let audited = audit_run(&step_dir);
        transitions += audited.steps;
        findings.extend(audited.findings.into_iter().map(|f| Finding {
            step: Some(s.run_dir.clone()),
            ..f
        }));
    }
    AuditReport::new(transitions, findings)
}

/// What the audit reads of bisect.json.
#[derive(serde::Deserialize)]
struct BisectRecord {
    steps: Vec<BisectStep>,
}

fn audit_run(run_dir: &Path) -> AuditReport {
    let trace_path = run_dir.join(TRACE_FILE);
    let trace = match std::fs::read(&trace_path) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) => {
            return AuditReport::new(
                0,
                vec![Finding {
                    line: None,
                    kind: FindingKind::TraceUnreadable,
                    message: format!("cannot read {}: {e}", trace_path.display()),
                    step: None,
                }],
            )
        }
    };
    let report = match load_report(run_dir) {
        Ok(Some(report)) => ReportFacts::Present {
            final_state: report.final_state,
        },
        Ok(None) => ReportFacts::Absent,
        Err(e) => ReportFacts::Unreadable(e.to_string()),
    };
    // Several transitions name the same file (the console log is evidence twice); hash it once.
    let mut hashes: HashMap<String, EvidenceFile> = HashMap::new();
    let mut audit = check_trace(&trace, &report, |relative| {
        hashes
            .entry(relative.to_string())
            .or_insert_with(|| hash_evidence(&run_dir.join(relative)))
            .clone()
    });
    if let Ok(torn) = std::fs::read_to_string(run_dir.join(rundir::TORN_TRACE_FILE)) {
        let lines = torn.lines().count();
        audit.notes.push(format!(
            "{} torn trace line(s), cut short when the run stopped, were set aside on resume in \
             {}: the trace was whole again before anything was appended",
            lines,
            rundir::TORN_TRACE_FILE
        ));
    }
    audit
}

fn hash_evidence(path: &Path) -> EvidenceFile {
    match rundir::sha256_file(path) {
        Ok(hash) => EvidenceFile::Hash(hash),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => EvidenceFile::Missing,
        Err(e) => EvidenceFile::Unreadable(e.to_string()),
    }
}

/// The previous readable transition.
struct Previous {
    line: usize,
    seq: u64,
    to: State,
}

/// Checks a trace's text against the transition function, its own numbering and clock, the
/// report's facts, and the evidence files `evidence` looks up by their run-relative path.
pub fn check_trace(
    trace: &str,
    report: &ReportFacts,
    mut evidence: impl FnMut(&str) -> EvidenceFile,
) -> AuditReport {
    let mut findings = Vec::new();
    let mut found = |line: Option<usize>, kind: FindingKind, message: String| {
        findings.push(Finding {
            line,
            kind,
            message,
            step: None,
        });
    };
    let mut steps = 0;
    let mut previous: Option<Previous> = None;
    // After an unreadable line, the next line's seq and `from` cannot be judged: the lost line
    // may have been the step in between. Judging them anyway would report one problem three times.
    let mut after_unreadable = false;
    let mut last_time: Option<(DateTime<FixedOffset>, usize)> = None;

    for entry in parse_trace(trace) {
        let n = entry.line;
        let t = match entry.parsed {
            Ok(t) => t,
            Err(problem) => {
                found(
                    Some(n),
                    FindingKind::Malformed,
                    format!("not a trace line: {problem}"),
                );
                after_unreadable = true;
                continue;
            }
        };
        steps += 1;
        match (&previous, after_unreadable) {
            (_, true) => {}
            (None, false) => {
                if t.from != State::Idle {
                    found(
                        Some(n),
                        FindingKind::BadStart,
                        format!("the run starts at {}, not at IDLE", t.from),
                    );
                }
                if t.seq != 1 {
                    found(
                        Some(n),
                        FindingKind::SeqGap,
                        format!("the first transition has seq {}, not 1", t.seq),
                    );
                }
            }
            (Some(p), false) => {
                if t.seq != p.seq + 1 {
                    found(
                        Some(n),
                        FindingKind::SeqGap,
                        format!(
                            "seq {} follows seq {} (expected {})",
                            t.seq,
                            p.seq,
                            p.seq + 1
                        ),
                    );
                }
                if t.from != p.to {
                    found(
                        Some(n),
                        FindingKind::Discontinuity,
                        format!("starts at {} but line {} ended at {}", t.from, p.line, p.to),
                    );
                }
            }
        }
        if machine::next(t.from, t.outcome) != Ok(t.to) {
            found(
                Some(n),
                FindingKind::IllegalTransition,
                format!(
                    "illegal transition {} -> {} (outcome {})",
                    t.from,
                    t.to,
                    t.outcome.code()
                ),
            );
        }
        match DateTime::parse_from_rfc3339(&t.ts) {
            Ok(ts) => {
                if let Some((before, line)) = last_time {
                    if ts < before {
                        found(
                            Some(n),
                            FindingKind::TimeWentBackwards,
                            format!("time goes backwards: {} is before line {line}", t.ts),
                        );
                    }
                }
                last_time = Some((ts, n));
            }
            Err(e) => found(
                Some(n),
                FindingKind::BadTimestamp,
                format!("timestamp `{}` is not RFC 3339 ({e})", t.ts),
            ),
        }
        check_error_class(&t, n, &mut found);
        check_evidence(&t, n, &mut evidence, &mut found);
        previous = Some(Previous {
            line: n,
            seq: t.seq,
            to: t.to,
        });
        after_unreadable = false;
    }

    match previous {
        None => found(
            None,
            FindingKind::EmptyTrace,
            "records no readable transition".to_string(),
        ),
        Some(last) => check_ending(last.to, report, &mut found),
    }
    if let ReportFacts::Unreadable(problem) = report {
        found(None, FindingKind::ReportUnreadable, problem.clone());
    }
    AuditReport::new(steps, findings)
}

fn check_error_class(
    t: &TraceLine,
    n: usize,
    found: &mut impl FnMut(Option<usize>, FindingKind, String),
) {
    if t.to == State::ErrorRecovery && t.error_class.is_none() {
        found(
            Some(n),
            FindingKind::MissingErrorClass,
            format!(
                "enters ERROR_RECOVERY from {} without an error class",
                t.from
            ),
        );
    }
    if let (Outcome::Error(class), Some(recorded)) = (t.outcome, t.error_class) {
        if class != recorded {
            found(
                Some(n),
                FindingKind::ErrorClassMismatch,
                format!(
                    "error class {recorded} disagrees with outcome {}",
                    t.outcome.code()
                ),
            );
        }
    }
}

fn check_evidence(
    t: &TraceLine,
    n: usize,
    evidence: &mut impl FnMut(&str) -> EvidenceFile,
    found: &mut impl FnMut(Option<usize>, FindingKind, String),
) {
    let hashes = &t.evidence_sha256;
    if !hashes.is_empty() && hashes.len() != t.evidence.len() {
        found(
            Some(n),
            FindingKind::EvidenceUnverifiable,
            format!(
                "{} evidence paths but {} hashes",
                t.evidence.len(),
                hashes.len()
            ),
        );
    }
    for (index, relative) in t.evidence.iter().enumerate() {
        if !stays_inside(relative) {
            found(
                Some(n),
                FindingKind::EvidenceUnverifiable,
                format!("evidence path `{relative}` is not inside the run directory"),
            );
            continue;
        }
        match evidence(relative) {
            EvidenceFile::Missing => found(
                Some(n),
                FindingKind::EvidenceMissing,
                format!("evidence {relative} is missing"),
            ),
            EvidenceFile::Unreadable(problem) => found(
                Some(n),
                FindingKind::EvidenceUnverifiable,
                format!("cannot read evidence {relative}: {problem}"),
            ),
            EvidenceFile::Hash(now) => match hashes.get(index) {
                Some(recorded) if !recorded.eq_ignore_ascii_case(&now) => found(
                    Some(n),
                    FindingKind::EvidenceModified,
                    format!(
                        "evidence {relative} changed after it was recorded (SHA-256 now {}…, recorded {}…)",
                        short(&now),
                        short(recorded)
                    ),
                ),
                Some(_) => {}
                None if hashes.is_empty() => found(
                    Some(n),
                    FindingKind::EvidenceUnverifiable,
                    format!("no SHA-256 was recorded for evidence {relative}"),
                ),
                // Already reported as a count mismatch above.
                None => {}
            },
        }
    }
}

fn check_ending(
    last: State,
    report: &ReportFacts,
    found: &mut impl FnMut(Option<usize>, FindingKind, String),
) {
    match (last.is_terminal(), report) {
        (true, ReportFacts::Absent) => found(
            None,
            FindingKind::ReportMissing,
            format!("the trace ends at {last} but there is no report.json"),
        ),
        (false, ReportFacts::Absent) => found(
            None,
            FindingKind::Incomplete,
            format!(
                "incomplete: the trace stops at {last} and there is no report.json \
                 (the run is still going, or was killed)"
            ),
        ),
        (false, ReportFacts::Present { .. } | ReportFacts::Unreadable(_)) => found(
            None,
            FindingKind::NotTerminal,
            format!("the trace ends at {last}, not at SUCCESS, FAILURE or ABORTED"),
        ),
        (true, ReportFacts::Present { .. } | ReportFacts::Unreadable(_)) => {}
    }
    if let ReportFacts::Present { final_state } = report {
        if *final_state != last {
            found(
                None,
                FindingKind::ReportMismatch,
                format!("final_state is {final_state} but the trace ends at {last}"),
            );
        }
    }
}

/// A relative path that cannot leave the run directory.
fn stays_inside(relative: &str) -> bool {
    !relative.is_empty()
        && Path::new(relative)
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

/// The first 12 hex digits: enough to tell two hashes apart in a message.
fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::ErrorClass;

    const LOG_HASH: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

    fn line(seq: u64, from: State, to: State, outcome: Outcome) -> TraceLine {
        TraceLine {
            seq,
            ts: format!("2024-05-01T12:00:{:02}.000Z", seq),
            from,
            to,
            outcome,
            reason: "because".into(),
            iteration: 0,
            error_class: match outcome {
                Outcome::Error(class) => Some(class),
                _ => None,
            },
            evidence: vec![],
            evidence_sha256: vec![],
        }
    }

    /// A whole `fwfix test` run that failed its tests, with the build log as evidence.
    fn failing_run() -> Vec<TraceLine> {
        use Outcome as O;
        use State as S;
        let mut lines = vec![
            line(1, S::Idle, S::Init, O::TaskReceived),
            line(2, S::Init, S::BuildSetup, O::ContextReady),
            line(3, S::BuildSetup, S::BuildRun, O::BuildReady),
            line(4, S::BuildRun, S::TestSetup, O::Built),
            line(5, S::TestSetup, S::TestRun, O::DutReady),
            line(6, S::TestRun, S::ResultCollection, O::RunFinished),
            line(7, S::ResultCollection, S::ResultAnalysis, O::Collected),
            line(8, S::ResultAnalysis, S::ConvergenceCheck, O::Decided),
            line(9, S::ConvergenceCheck, S::Failure, O::GiveUp),
        ];
        lines[3].evidence = vec!["iter-000/build.log".into()];
        lines[3].evidence_sha256 = vec![LOG_HASH.into()];
        lines
    }

    fn text(lines: &[TraceLine]) -> String {
        lines
            .iter()
            .map(|l| serde_json::to_string(l).unwrap() + "\n")
            .collect()
    }

    fn files(relative: &str) -> EvidenceFile {
        match relative {
            "iter-000/build.log" => EvidenceFile::Hash(LOG_HASH.into()),
            _ => EvidenceFile::Missing,
        }
    }

    fn finished(state: State) -> ReportFacts {
        ReportFacts::Present { final_state: state }
    }

    fn run(lines: &[TraceLine]) -> AuditReport {
        check_trace(&text(lines), &finished(State::Failure), files)
    }

    fn kinds(report: &AuditReport) -> Vec<(Option<usize>, FindingKind)> {
        report.findings.iter().map(|f| (f.line, f.kind)).collect()
    }

    #[test]
    fn a_whole_legal_run_with_intact_evidence_is_ok() {
        let report = run(&failing_run());
        assert_eq!(report.findings, vec![]);
        assert!(report.ok);
        assert_eq!(report.steps, 9);
    }

    #[test]
    fn a_step_the_machine_does_not_allow_is_named_with_its_line() {
        let mut lines = failing_run();
        lines[3].to = State::Success;
        let report = run(&lines);
        assert!(!report.ok);
        assert_eq!(
            report.findings[0].to_string(),
            "trace.jsonl:4: illegal transition BUILD_RUN -> SUCCESS (outcome built)"
        );
        // The next line no longer starts where this one claims to end.
        assert_eq!(
            kinds(&report),
            vec![
                (Some(4), FindingKind::IllegalTransition),
                (Some(5), FindingKind::Discontinuity)
            ]
        );
    }

    #[test]
    fn an_outcome_the_state_cannot_produce_is_illegal() {
        let mut lines = failing_run();
        lines[8].outcome = Outcome::Converged;
        let report = run(&lines);
        assert_eq!(
            kinds(&report),
            vec![(Some(9), FindingKind::IllegalTransition)]
        );
        assert!(report.findings[0].message.contains("(outcome converged)"));
    }

    #[test]
    fn the_first_step_must_leave_idle_with_seq_1() {
        let lines = failing_run();
        let report = run(&lines[1..]);
        assert_eq!(
            kinds(&report),
            vec![
                (Some(1), FindingKind::BadStart),
                (Some(1), FindingKind::SeqGap)
            ]
        );
    }

    #[test]
    fn a_missing_line_is_a_seq_gap_and_a_discontinuity() {
        let mut lines = failing_run();
        lines.remove(4);
        let report = run(&lines);
        assert_eq!(
            kinds(&report),
            vec![
                (Some(5), FindingKind::SeqGap),
                (Some(5), FindingKind::Discontinuity)
            ]
        );
        assert_eq!(
            report.findings[0].message,
            "seq 6 follows seq 4 (expected 5)"
        );
    }

    #[test]
    fn a_garbage_line_is_one_finding_with_its_number_and_never_a_panic() {
        let lines = failing_run();
        let mut trace = text(&lines[..4]);
        trace.push_str("{\"seq\": 5, \"ts\": \n");
        trace.push_str(&text(&lines[5..]));
        let report = check_trace(&trace, &finished(State::Failure), files);
        assert_eq!(kinds(&report), vec![(Some(5), FindingKind::Malformed)]);
        assert_eq!(report.steps, 8);
        for garbage in ["", "[]", "\u{0}\u{1}", "{\"seq\":-1}", "null"] {
            let report = check_trace(garbage, &ReportFacts::Absent, files);
            assert!(!report.ok, "{garbage:?}");
        }
    }

    #[test]
    fn unknown_states_and_outcomes_are_malformed_lines() {
        let text = text(&failing_run()).replacen("\"INIT\"", "\"LIMBO\"", 1);
        let report = check_trace(&text, &finished(State::Failure), files);
        assert_eq!(kinds(&report)[0], (Some(1), FindingKind::Malformed));
    }

    #[test]
    fn time_must_not_go_backwards_and_must_be_rfc3339() {
        let mut lines = failing_run();
        lines[5].ts = "2024-05-01T11:59:00.000Z".into();
        lines[6].ts = "yesterday".into();
        let report = run(&lines);
        assert_eq!(
            kinds(&report),
            vec![
                (Some(6), FindingKind::TimeWentBackwards),
                (Some(7), FindingKind::BadTimestamp)
            ]
        );
    }

    #[test]
    fn error_recovery_needs_an_error_class_that_matches_the_outcome() {
        use Outcome as O;
        use State as S;
        let mut lines = failing_run()[..4].to_vec();
        lines[3] = line(
            4,
            S::BuildRun,
            S::ErrorRecovery,
            O::Error(ErrorClass::BuildFailure),
        );
        lines[3].error_class = None;
        let mut unrecoverable = line(5, S::ErrorRecovery, S::Failure, O::Unrecoverable);
        unrecoverable.error_class = Some(ErrorClass::BuildFailure);
        lines.push(unrecoverable);
        let report = run(&lines);
        assert_eq!(
            kinds(&report),
            vec![(Some(4), FindingKind::MissingErrorClass)]
        );

        lines[3].error_class = Some(ErrorClass::Timeout);
        let report = run(&lines);
        assert_eq!(
            kinds(&report),
            vec![(Some(4), FindingKind::ErrorClassMismatch)]
        );
    }

    #[test]
    fn evidence_must_exist_match_its_hash_and_stay_inside_the_run() {
        let mut lines = failing_run();
        lines[5].evidence = vec!["iter-000/console.log".into()];
        lines[5].evidence_sha256 = vec![LOG_HASH.into()];
        lines[6].evidence = vec!["iter-000/build.log".into()];
        lines[6].evidence_sha256 = vec!["b".repeat(64)];
        lines[7].evidence = vec!["../../etc/passwd".into(), "/etc/passwd".into()];
        lines[7].evidence_sha256 = vec![LOG_HASH.into(), LOG_HASH.into()];
        let report = run(&lines);
        assert_eq!(
            kinds(&report),
            vec![
                (Some(6), FindingKind::EvidenceMissing),
                (Some(7), FindingKind::EvidenceModified),
                (Some(8), FindingKind::EvidenceUnverifiable),
                (Some(8), FindingKind::EvidenceUnverifiable),
            ]
        );
        assert_eq!(
            report.findings[1].message,
            "evidence iter-000/build.log changed after it was recorded \
             (SHA-256 now aaaaaaaaaaaa…, recorded bbbbbbbbbbbb…)"
        );
    }

    #[test]
    fn evidence_without_hashes_cannot_be_verified() {
        let mut lines = failing_run();
        lines[3].evidence_sha256.clear();
        let report = run(&lines);
        assert_eq!(
            kinds(&report),
            vec![(Some(4), FindingKind::EvidenceUnverifiable)]
        );
        lines[3].evidence_sha256 = vec![LOG_HASH.into(), LOG_HASH.into()];
        let report = run(&lines);
        assert_eq!(
            kinds(&report),
            vec![(Some(4), FindingKind::EvidenceUnverifiable)]
        );
    }

    #[test]
    fn a_run_without_report_that_stops_midway_is_incomplete() {
        let lines = failing_run();
        let report = check_trace(&text(&lines[..5]), &ReportFacts::Absent, files);
        assert_eq!(kinds(&report), vec![(None, FindingKind::Incomplete)]);
        assert!(report.findings[0]
            .to_string()
            .starts_with("trace.jsonl: incomplete: the trace stops at TEST_RUN"));
    }

    #[test]
    fn the_report_must_agree_with_the_trace() {
        let lines = failing_run();
        let report = check_trace(&text(&lines), &finished(State::Success), files);
        assert_eq!(kinds(&report), vec![(None, FindingKind::ReportMismatch)]);
        assert_eq!(
            report.findings[0].to_string(),
            "report.json: final_state is SUCCESS but the trace ends at FAILURE"
        );

        let report = check_trace(&text(&lines[..5]), &finished(State::Failure), files);
        assert_eq!(
            kinds(&report),
            vec![
                (None, FindingKind::NotTerminal),
                (None, FindingKind::ReportMismatch)
            ]
        );

        let report = check_trace(&text(&lines), &ReportFacts::Absent, files);
        assert_eq!(kinds(&report), vec![(None, FindingKind::ReportMissing)]);

        let broken = ReportFacts::Unreadable("report.json is not valid".into());
        let report = check_trace(&text(&lines), &broken, files);
        assert_eq!(kinds(&report), vec![(None, FindingKind::ReportUnreadable)]);
    }

    #[test]
    fn recovery_loops_and_aborts_replay_cleanly() {
        use Outcome as O;
        use State as S;
        let mut lines = failing_run()[..5].to_vec();
        lines.push(line(
            6,
            S::TestRun,
            S::ErrorRecovery,
            O::Error(ErrorClass::TestEnvFailure),
        ));
        lines.push(line(
            7,
            S::ErrorRecovery,
            S::TestSetup,
            O::Recovered(machine::RecoveryTarget::TestSetup),
        ));
        lines.push(line(8, S::TestSetup, S::Aborted, O::Abort));
        let report = check_trace(&text(&lines), &finished(S::Aborted), files);
        assert_eq!(report.findings, vec![]);
        assert_eq!(report.steps, 8);
    }

    #[test]
    fn findings_serialise_with_snake_case_kinds() {
        let mut lines = failing_run();
        lines[3].to = State::Success;
        let value = serde_json::to_value(run(&lines)).unwrap();
        assert_eq!(value["ok"], false);
        assert_eq!(value["findings"][0]["kind"], "illegal_transition");
        assert_eq!(value["findings"][0]["line"], 4);
    }
}
