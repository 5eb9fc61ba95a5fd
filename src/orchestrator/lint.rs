//! LINT: the stage between the build and the test run of a profile with a `[lint]` table, and
//! the lint of a trial build's tree for the governor (`governor.rs`).
//!
//! 1. The tree's findings: the build's own compiler warnings (`build_warnings`, read from the
//!    build's log) and the lint command's (`sh -c` at the root of the tree, under `timeout_s`,
//!    its output in `lint.log`), each with the text of its source line; all of them go into
//!    `lint.json`. A command that cannot run, is killed, or fails without a finding fwfix can
//!    read is the environment's failure (BUILD_ENV_FAILURE, or TIMEOUT), never a clean bill.
//! 2. In a fix run the unpatched tree's findings are the baseline. A candidate's findings are
//!    compared with them (`analysis::lint::new_findings`; a build warning counts only on a line
//!    the candidate's patch added, `analysis::lint::answerable`): new ones are a LINT_FAILURE —
//!    the candidate is rolled back and its findings are the next analysis's evidence — or, with
//!    `new_findings = "warn"`, reported only.
//! 3. `fwfix test` patches nothing and has no baseline: its findings are reported, never a
//!    failure. So are a candidate's when the unpatched tree did not build (it was never linted).

use super::job::{Job, Step};
use crate::analysis::lint::{self, Finding, Format, Reader};
use crate::build::{self, BuildEnd, BuildRequest};
use crate::config::{LintSpec, NewFindings};
use crate::events::{Event, Level, NullSink};
use crate::governor::{Check, Verdict};
use crate::machine::{ErrorClass, Outcome};
use crate::report::{self, LintSummary, LintVerdict};
use crate::rundir;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use tokio_util::sync::CancellationToken;

/// How many findings a reason or a check names before it says "and N more".
const NAMED: usize = 3;

impl Job<'_> {
    pub(super) async fn lint(&mut self) -> Step {
        let Some(spec) = self.profile.lint.clone() else {
            return Step::ok(Outcome::LintPassed, "the profile has no [lint]");
        };
        let dir = match self.measure_dir() {
            Ok(d) => d,
            Err(step) => return step,
        };
        let log = dir.join("lint.log");
        let build_log =
            self.ctx.build.as_ref().and_then(|b| {
                std::fs::read_to_string(self.run_dir.path().join(&b.summary.log)).ok()
            });
        let root = self.ctx.work_dir.clone();
        let findings = match lint_tree(
            &spec,
            &root,
            &self.build.cwd,
            build_log.as_deref(),
            &log,
            &self.board.name,
            &self.cancel,
        )
        .await
        {
            Ok(f) => f,
            Err(step) if log.is_file() => return step.with_evidence(log),
            Err(step) => return step,
        };
        let record = dir.join("lint.json");
        let written = serde_json::to_vec_pretty(&findings)
            .map_err(std::io::Error::other)
            .and_then(|b| rundir::write_atomic(&record, &b));
        if let Err(e) = written {
            return Step::error(
                ErrorClass::ArtifactMissing,
                format!("cannot write {}: {e}", record.display()),
            );
        }
        let (verdict, new, reason) = self.judge(&spec, &findings);
        self.ctx.lint = Some(LintSummary {
            iteration: self.ctx.ledger.iteration,
            command: spec.command.clone(),
            format: spec.format,
            log: spec.command.as_ref().map(|_| self.run_dir.relative(&log)),
            findings_file: self.run_dir.relative(&record),
            findings: findings.len(),
            baseline_findings: match verdict {
                LintVerdict::Reported => None,
                LintVerdict::Baseline
                | LintVerdict::Clean
                | LintVerdict::Rejected
                | LintVerdict::Warned => self.ctx.lint_baseline.as_ref().map(Vec::len),
            },
            new_findings: new.clone(),
            verdict,
        });
        self.note_candidate_findings(&new);
        for f in &new {
            self.events.emit(&Event::Message {
                level: Level::Warning,
                text: format!("new lint finding: {}", f.describe()),
            });
        }
        let step = match verdict {
            LintVerdict::Rejected => Step::error(ErrorClass::LintFailure, reason),
            LintVerdict::Baseline
            | LintVerdict::Clean
            | LintVerdict::Warned
            | LintVerdict::Reported => Step::ok(Outcome::LintPassed, reason),
        };
        let step = step.with_evidence(record);
        if log.is_file() {
            step.with_evidence(log)
        } else {
            step
        }
    }

    /// What the lint stage makes of the current image's findings: the verdict, the new
    /// findings, and the reason for the trace.
    fn judge(
        &mut self,
        spec: &LintSpec,
        findings: &[Finding],
    ) -> (LintVerdict, Vec<Finding>, String) {
        let n = report::plural(findings.len(), "finding");
        if !self.patching() {
            return (
                LintVerdict::Reported,
                Vec::new(),
                format!("{n}, reported only: fwfix test has no baseline to compare them with"),
            );
        }
        if !self.ctx.baseline_done {
            self.ctx.lint_baseline = Some(findings.to_vec());
            return (
                LintVerdict::Baseline,
                Vec::new(),
                format!("the unpatched tree has {n}: the baseline a candidate is judged by"),
            );
        }
        let candidate = self
            .ctx
            .candidate
            .as_ref()
            .filter(|_| self.ctx.patch_applied);
        let (Some((origin, _)), Some(baseline)) = (candidate, &self.ctx.lint_baseline) else {
            return (
                LintVerdict::Reported,
                Vec::new(),
                format!(
                    "{n}, reported only: the unpatched tree was never linted (it did not build)"
                ),
            );
        };
        let diff = self
            .ctx
            .candidate
            .as_ref()
            .and_then(|(_, patch)| std::fs::read(self.run_dir.path().join(patch)).ok())
            .unwrap_or_default();
        let new = lint::answerable(lint::new_findings(baseline, findings), &added_lines(&diff));
        if new.is_empty() {
            return (
                LintVerdict::Clean,
                new,
                format!(
                    "no new findings ({n}, the unpatched tree had {})",
                    baseline.len()
                ),
            );
        }
        let what = format!(
            "{origin} adds {} the unpatched tree did not have: {}",
            report::plural(new.len(), "lint finding"),
            name_some(&new)
        );
        match spec.new_findings {
            NewFindings::Reject => (LintVerdict::Rejected, new, what),
            NewFindings::Warn => (
                LintVerdict::Warned,
                new,
                format!("{what} (reported only: new_findings = \"warn\")"),
            ),
        }
    }

    /// The current candidate's record in the report says what its lint found, as a trial
    /// build's would have.
    fn note_candidate_findings(&mut self, new: &[Finding]) {
        let (Some((origin, _)), true) = (&self.ctx.candidate, self.ctx.baseline_done) else {
            return;
        };
        let iteration = self.ctx.ledger.iteration;
        if let Some(c) = self.ctx.candidates.iter_mut().find(|c| {
            c.iteration == iteration
                && &c.origin == origin
                && matches!(c.verdict, Verdict::Ranked { .. })
        }) {
            (c.checks.lint, c.new_findings) = lint_check(new);
        }
    }
}

/// The findings of the tree at `root`: the build's warnings (from `build_log`, of a build that
/// ran in `build_cwd`) and the lint command's (its output in `log`), with their lines' text. The
/// error is the step the lint stage fails with. It takes no `&Job`, so the engine's future
/// stays `Send`.
pub(super) async fn lint_tree(
    spec: &LintSpec,
    root: &Path,
    build_cwd: &Path,
    build_log: Option<&str>,
    log: &Path,
    board: &str,
    cancel: &CancellationToken,
) -> Result<Vec<Finding>, Step> {
    let mut findings = Vec::new();
    if let (true, Some(text)) = (spec.build_warnings, build_log) {
        let dirs = super::pipeline::build_dirs(root, &root.join(build_cwd));
        findings.extend(lint::build_warnings(text, &dirs));
    }
    if let Some(command) = &spec.command {
        let req = BuildRequest {
            command: command.clone(),
            cwd: root.to_path_buf(),
            timeout: spec.timeout,
            log_path: log.to_path_buf(),
            env: vec![("FWFIX_BOARD".into(), board.to_string())],
            lock: None,
        };
        let env_failure = |what: String| Step::error(ErrorClass::BuildEnvFailure, what);
        let out = build::run(&req, cancel, &NullSink)
            .await
            .map_err(|e| env_failure(format!("the lint command could not run: {e}")))?;
        let reader = match (spec.format, &spec.pattern) {
            (Format::Gcc, _) => Reader::Gcc,
            (Format::Cppcheck, _) => Reader::Cppcheck,
            (Format::ClangTidy, _) => Reader::ClangTidy,
            (Format::Regex, Some(pattern)) => Reader::Regex(pattern.regex()),
            (Format::Regex, None) => {
                return Err(Step::error(
                    ErrorClass::Unhandled,
                    "[lint] format = \"regex\" without a pattern",
                ))
            }
        };
        let found = lint::read(reader, &out.log, root);
        match (&out.end, &out.missing_tool) {
            (BuildEnd::Cancelled, _) => return Err(Step::ok(Outcome::Abort, "lint interrupted")),
            (BuildEnd::TimedOut, _) => {
                return Err(Step::error(
                    ErrorClass::Timeout,
                    format!(
                        "the lint command did not finish within {} s",
                        spec.timeout.as_secs()
                    ),
                ))
            }
            (BuildEnd::Signalled(sig), _) => {
                return Err(env_failure(format!(
                    "the lint command was killed by signal {sig}"
                )))
            }
            (BuildEnd::Exited(code), Some(tool)) => {
                return Err(env_failure(format!(
                    "the lint command needs `{tool}`, which is not installed (exit {code})"
                )))
            }
            // Many linters say "findings" with their exit status; one that says so
            // without a finding fwfix can read has failed, or its format is not the
            // profile's: calling that clean would hide every finding.
            (BuildEnd::Exited(code), None) if *code != 0 && found.is_empty() => {
                return Err(env_failure(format!(
                    "the lint command failed (exit {code}) and printed no finding fwfix \
                         can read as {}; see lint.log",
                    spec.format.name()
                )))
            }
            (BuildEnd::Exited(_), None) => {}
        }
        findings.extend(found);
    }
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    // Only the tree's own files are read.
    let read = |file: &str| -> Option<String> {
        let canonical = std::fs::canonicalize(root.join(file)).ok()?;
        canonical
            .starts_with(&root)
            .then(|| std::fs::read_to_string(canonical).ok())
            .flatten()
    };
    lint::with_source_text(&mut findings, &read);
    Ok(findings)
}

/// The lines `diff` adds, per file (its path after the patch), normalised as a finding's text.
pub(super) fn added_lines(diff: &[u8]) -> BTreeMap<String, BTreeSet<String>> {
    let mut added: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in crate::repo::patch::parse(diff).unwrap_or_default() {
        let Some(path) = &file.new_path else { continue };
        let lines = added
            .entry(String::from_utf8_lossy(path).into_owned())
            .or_default();
        for hunk in &file.hunks {
            for line in &hunk.lines {
                if let crate::repo::patch::HunkLine::Add(bytes) = line {
                    lines.insert(lint::normalise_line(&String::from_utf8_lossy(bytes)));
                }
            }
        }
    }
    added
}

/// The governor's lint check for a candidate with these new findings.
pub(super) fn lint_check(new: &[Finding]) -> (Check, Vec<Finding>) {
    if new.is_empty() {
        return (Check::Passed, Vec::new());
    }
    (
        Check::failed(format!(
            "{} the unpatched tree did not have: {}",
            report::plural(new.len(), "new lint finding"),
            name_some(new)
        )),
        new.to_vec(),
    )
}

/// The first few findings, described, and how many more there are.
fn name_some(findings: &[Finding]) -> String {
    let mut named: Vec<String> = findings.iter().take(NAMED).map(Finding::describe).collect();
    if findings.len() > NAMED {
        named.push(format!("and {} more", findings.len() - NAMED));
    }
    named.join("; ")
}
