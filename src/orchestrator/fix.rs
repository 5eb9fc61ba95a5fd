//! The handlers only a fix run has: CODE_ANALYSIS (gather evidence, roll the last candidate
//! back), PATCH_GENERATION, PATCH_REVIEW, PATCH_APPLY; and what finalisation does with the
//! repository: restoring the owner's tree, removing the worktree and the snapshots. (COMMIT, the
//! fix branch and fix.patch, is in `commit.rs`.)

use super::job::{Job, Step};
use super::trials::Round;
use super::worktree::Worktree;
use crate::analysis::{evidence, triage};
use crate::capture::RunEnd;
use crate::config::PolicySpec;
use crate::events::{Event, Level};
use crate::governor::{self, CandidateRecord};
use crate::machine::convergence::IterationVerdict;
use crate::machine::{ErrorClass, Outcome};
use crate::policy::{self, Choice, Decision, ReviewRecord};
use crate::repo::Repo;
use crate::report::AttemptSummary;
use crate::rundir;
use crate::strategy::{PatchRequest, StrategyError};
use serde_json::json;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

impl Job<'_> {
    pub(super) fn code_analysis(&mut self) -> Step {
        let dir = match self.iteration_dir() {
            Ok(d) => d,
            Err(step) => return step,
        };
        // Gathered before the rollback: the crash site, the failing lines and the compiler's
        // diagnostics are numbered by the candidate's source, so their excerpts come from it.
        let evidence = self.evidence();
        if let Err(step) = self.roll_back() {
            return step;
        }
        let path = dir.join("analysis.json");
        let written = serde_json::to_vec_pretty(&evidence)
            .map_err(std::io::Error::other)
            .and_then(|b| rundir::write_atomic(&path, &b));
        if let Err(e) = written {
            return Step::error(
                ErrorClass::ArtifactMissing,
                format!("cannot write {}: {e}", path.display()),
            );
        }
        let failing = evidence["failing"].as_array().map(Vec::len).unwrap_or(0);
        Step::ok(
            Outcome::EvidenceReady,
            format!(
                "evidence: {failing} failing case(s), {} earlier attempt(s)",
                self.ctx.history.len()
            ),
        )
        .with_evidence(path)
    }

    /// Restores the work tree to the base snapshot if a candidate may be in it.
    fn roll_back(&mut self) -> Result<(), Step> {
        if !self.ctx.patch_applied {
            return Ok(());
        }
        let (Some(repo), Some(base)) = (&self.repo, &self.ctx.base) else {
            return Err(Step::error(
                ErrorClass::Unhandled,
                "a candidate is applied but there is no snapshot to roll back to",
            ));
        };
        let report = repo
            .restore(base)
            .map_err(|e| Step::error(ErrorClass::Unhandled, format!("rollback failed: {e}")))?;
        self.ctx.patch_applied = false;
        // Why: the verdict its iteration closed with (a regression names the tests it broke).
        let n = self.ctx.ledger.iteration;
        let why = self
            .ctx
            .history
            .iter()
            .rev()
            .find(|r| r.iteration == n && !r.patch.is_empty())
            .map(|r| format!(" ({}: {})", r.origin, r.reason))
            .unwrap_or_default();
        self.events.emit(&Event::Message {
            level: Level::Info,
            text: format!(
                "rolled back iteration {n}{why}: {} file(s) restored, {} removed",
                report.written.len(),
                report.removed.len()
            ),
        });
        Ok(())
    }

    /// The evidence bundle for the next candidate (analysis.json), symbolised on the image the
    /// last iteration built.
    fn evidence(&self) -> serde_json::Value {
        let last = self.ctx.attempts.last();
        let cases = last.map(|a| a.results.cases.as_slice()).unwrap_or_default();
        // A candidate the lint stage rejected: its new findings are what to fix, shown with
        // their source like a compiler's errors.
        let lint_findings: Vec<crate::analysis::Diagnostic> = self
            .ctx
            .lint
            .as_ref()
            .filter(|l| {
                l.iteration == self.ctx.ledger.iteration
                    && l.verdict == crate::report::LintVerdict::Rejected
            })
            .map(|l| l.new_findings.iter().map(|f| f.as_diagnostic()).collect())
            .unwrap_or_default();
        let diagnostics = self
            .ctx
            .build
            .as_ref()
            .filter(|b| !b.summary.success)
            .map(|b| b.summary.diagnostics.as_slice())
            .unwrap_or(&lint_findings);
        let functions = self
            .symbolizer
            .as_ref()
            .map(|s| s.function_names(|_| true))
            .unwrap_or_default();
        let history = self
            .ctx
            .history
            .iter()
            // An iteration cut short said nothing about its candidate, which is tried again.
            .filter(|r| r.verdict != IterationVerdict::Interrupted)
            .map(|r| evidence::Attempt {
                iteration: r.iteration,
                origin: r.origin.clone(),
                // The contract's name (`BROKE_BUILD`), as in report.json.
                outcome: serde_json::to_value(r.verdict)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
                reason: r.reason.clone(),
                // A strategy that failed as a whole left no patch.
                diff: (!r.patch.is_empty())
                    .then(|| std::fs::read_to_string(self.run_dir.path().join(&r.patch)).ok())
                    .flatten(),
            })
            .collect();
        let changed_files = self.changed_files();
        let mut defined_in = BTreeMap::new();
        if let (false, Some(sym)) = (changed_files.is_empty(), &self.symbolizer) {
            for (function, file) in sym.function_files() {
                let mut file = Some(file);
                super::pipeline::relative_to(&self.ctx.work_dir, &mut file);
                defined_in.extend(file.map(|f| (function, f)));
            }
        }
        let work_dir = self.ctx.work_dir.clone();
        // Compared as the file system names it: a work tree reached through a symlink holds
        // its files all the same.
        let real_work_dir = std::fs::canonicalize(&work_dir).unwrap_or_else(|_| work_dir.clone());
        // Only the work tree's own files are read into the bundle.
        let read = |path: &str| -> Option<String> {
            let p = work_dir.join(path);
            let canonical = std::fs::canonicalize(&p).ok()?;
            canonical
                .starts_with(&real_work_dir)
                .then(|| std::fs::read_to_string(canonical).ok())
                .flatten()
        };
        let bundle = evidence::build(
            evidence::Inputs {
                cases,
                crash: last.and_then(|a| a.crash.as_ref()),
                hang_site: last.and_then(|a| a.hang_site.as_ref()),
                diagnostics,
                logs: self.triage_logs(),
                functions: &functions,
                changed_files: &changed_files,
                defined_in,
                history,
                hints: &self.ctx.hints,
            },
            &read,
        );
        let mut value = serde_json::to_value(&bundle).unwrap_or_default();
        if let Some(obj) = value.as_object_mut() {
            obj.insert("iteration".into(), json!(self.ctx.ledger.iteration + 1));
            obj.insert("task".into(), json!(self.task()));
            obj.insert("targets".into(), json!(self.ctx.targets));
        }
        value
    }

    /// The files changed since the last known-good commit (`--good`), committed or not; none
    /// when no known-good commit was named.
    fn changed_files(&self) -> Vec<String> {
        let (Some(good), Some(repo), Some(base)) =
            (&self.ctx.request.good, &self.repo, &self.ctx.base)
        else {
            return Vec::new();
        };
        repo.changed_since(good, base).unwrap_or_else(|e| {
            self.events.emit(&Event::Message {
                level: Level::Warning,
                text: format!("the files changed since {good} are not in the evidence: {e}"),
            });
            Vec::new()
        })
    }

    /// The triage of every log in the directory of the last build (build.log, console.log,
    /// flash.log, ...), named relative to the run directory. A console log whose attempt ended at
    /// its timeout is triaged as timed out, so output that just stops reads as a HANG.
    fn triage_logs(&self) -> Vec<triage::LogTriage> {
        let Some(build) = &self.ctx.build else {
            return Vec::new();
        };
        let Some(dir) = self
            .run_dir
            .path()
            .join(&build.summary.log)
            .parent()
            .map(Path::to_path_buf)
        else {
            return Vec::new();
        };
        let mut logs: Vec<PathBuf> = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "log"))
            // The lint stage's output is read by its own reader; its findings are in the
            // diagnostics, and triage would take them for compiler errors.
            .filter(|p| p.file_name().is_none_or(|n| n != "lint.log"))
            .collect();
        logs.sort();
        logs.into_iter()
            .filter_map(|path| {
                let name = self.run_dir.relative(&path);
                let timed_out = self.ctx.attempts.iter().any(|a| {
                    a.summary.console_log == name
                        && a.summary.end == AttemptSummary::end_text(&RunEnd::Timeout)
                });
                let found = triage::classify_file(&path, &triage::TriageContext { timed_out });
                found.ok().map(|t| triage::LogTriage::new(name, &t))
            })
            .collect()
    }

    pub(super) async fn patch_generation(&mut self) -> Step {
        // CODE_ANALYSIS's bundle, as traced: gathered before the rollback, its excerpts show the
        // source the last image was built from, which the tree no longer holds.
        let analysed = self
            .iteration_dir()
            .ok()
            .and_then(|d| std::fs::read(d.join("analysis.json")).ok())
            .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok());
        let iteration = self.ctx.ledger.begin_iteration();
        let dir = match self.iteration_dir() {
            Ok(d) => d,
            Err(step) => return step,
        };
        // A round a stop left unreviewed is reviewed now; survivors of an earlier round are
        // tried before the strategy is asked again.
        let carried: Vec<(String, PathBuf)> = self
            .ctx
            .carried_round()
            .iter()
            .map(|c| {
                (
                    format!("{} {}", c.id, c.origin),
                    self.run_dir.path().join(&c.diff),
                )
            })
            .collect();
        if carried.is_empty() && !self.ctx.pool.is_empty() {
            return self.take_pooled(&dir);
        }
        // Where the round's trial builds and agents' workspaces go.
        let trees = dir.join("candidates");
        if let Err(e) = std::fs::create_dir_all(&trees) {
            return Step::error(
                ErrorClass::ArtifactMissing,
                format!("cannot create {}: {e}", trees.display()),
            );
        }
        if !carried.is_empty() {
            let listed: Vec<&str> = carried.iter().map(|(what, _)| what.as_str()).collect();
            let step = Step::ok(
                Outcome::CandidatesReady,
                format!(
                    "iteration {iteration}: {} candidate(s) of the round a stop left unreviewed: {}",
                    listed.len(),
                    listed.join(", ")
                ),
            );
            return carried
                .into_iter()
                .map(|(_, path)| path)
                .fold(step, Step::with_evidence);
        }
        let Some(edits_tree) = self.strategy.as_ref().map(|s| s.edits_tree()) else {
            return Step::error(ErrorClass::Unhandled, "no patch strategy");
        };
        // Agents asked for several candidates each get a worktree of their own; the guards
        // remove them when this step ends, however it ends.
        let mut workspaces = Vec::new();
        if edits_tree && self.candidates_wanted > 1 {
            for n in 1..=self.candidates_wanted {
                match self.candidate_worktree(&trees, "agent", iteration, &format!("c{n}")) {
                    Ok(w) => workspaces.push(w),
                    Err(step) => return step,
                }
            }
        }
        let evidence = analysed.unwrap_or_else(|| self.evidence());
        let req = PatchRequest {
            iteration,
            task: self.task(),
            evidence_markdown: render_evidence(&evidence),
            evidence,
            work_dir: self.ctx.work_dir.clone(),
            iteration_dir: dir.clone(),
            candidates: self.candidates_wanted,
            workspaces: workspaces.iter().map(|w| w.path.clone()).collect(),
        };
        let Some(strategy) = self.strategy.as_mut() else {
            return Step::error(ErrorClass::Unhandled, "no patch strategy");
        };
        let name = strategy.name();
        let answer = strategy.candidates(&req, &self.cancel).await;
        // Whatever an agent did to the work tree comes out of it now, however it ended: a
        // failed agent leaves nothing behind, and a candidate reaches the tree only through
        // PATCH_APPLY.
        let tree_edits = if edits_tree {
            match self.take_tree_edits() {
                Ok(edits) => edits,
                Err(step) => return step,
            }
        } else {
            String::new()
        };
        let candidates = match answer {
            Ok(c) => c,
            Err(StrategyError::Cancelled) => return Step::ok(Outcome::Abort, "interrupted"),
            Err(e) => return Step::error(e.error_class(), format!("{name}: {e}")),
        };
        if candidates.is_empty() {
            return Step::error(ErrorClass::NoCandidate, format!("{name} proposed nothing"));
        }
        if !tree_edits.is_empty() {
            let printed = candidates.iter().any(|c| !c.diff.trim().is_empty());
            let text = if !workspaces.is_empty() {
                Some("an agent edited the work tree instead of its workspace; the work tree was put back")
            } else if printed {
                Some("the agent printed a diff and also edited the work tree; the printed diff is the candidate and the work tree was put back")
            } else {
                None
            };
            if let Some(text) = text {
                self.events.emit(&Event::Message {
                    level: Level::Warning,
                    text: text.into(),
                });
            }
        }
        let mut round = Vec::with_capacity(candidates.len());
        let mut paths = Vec::with_capacity(candidates.len());
        for (index, mut candidate) in candidates.into_iter().enumerate() {
            if edits_tree && candidate.failed.is_none() && candidate.diff.trim().is_empty() {
                candidate.diff = match workspaces.get(index) {
                    Some(w) => match self.workspace_edits(w) {
                        Ok(edits) => edits,
                        Err(step) => return step,
                    },
                    None => tree_edits.clone(),
                };
            }
            let id = format!("c{}", index + 1);
            let path = trees.join(format!("{id}.diff"));
            if let Err(e) = rundir::write_atomic(&path, candidate.diff.as_bytes()) {
                return Step::error(
                    ErrorClass::ArtifactMissing,
                    format!("cannot write {}: {e}", path.display()),
                );
            }
            let mut record = CandidateRecord {
                iteration,
                id,
                origin: candidate.origin,
                diff: self.run_dir.relative(&path),
                changed_lines: 0,
                checks: governor::Checks::pending(),
                verdict: governor::Verdict::Pending,
                reason: String::new(),
                build_log: None,
                new_findings: Vec::new(),
            };
            if let Some(reason) = &candidate.failed {
                governor::drop_failed(&mut record, reason);
            } else if candidate.diff.trim().is_empty() {
                governor::drop_empty(&mut record);
            }
            round.push(record);
            paths.push(path);
        }
        self.ctx.candidate = None;
        let all_empty = round
            .iter()
            .all(|c| c.verdict != governor::Verdict::Pending);
        let what = if all_empty {
            let failed_agent = |c: &CandidateRecord| {
                matches!(
                    c.verdict,
                    governor::Verdict::Dropped {
                        stage: governor::Stage::Generation,
                        ..
                    }
                )
            };
            if round.iter().any(failed_agent) {
                // Agents that failed beside ones that answered nothing: each says which.
                format!("{name}: nothing usable: {}", governor::summary(&round))
            } else {
                let origins: Vec<&str> = round.iter().map(|c| c.origin.as_str()).collect();
                format!("{name}: {} is an empty patch", origins.join(", "))
            }
        } else {
            let listed: Vec<String> = round
                .iter()
                .map(|c| format!("{} {}", c.id, c.origin))
                .collect();
            format!(
                "iteration {iteration}: {} candidate(s) from {name}: {}",
                round.len(),
                listed.join(", ")
            )
        };
        // An empty round fails as its most telling drop: agents that only failed are
        // MODEL_FAILURE, answers with nothing in them NO_CANDIDATE.
        let failed = governor::round_failure(&round);
        self.ctx.candidates.extend(round);
        let step = if let Some(class) = failed {
            Step::error(class, what)
        } else {
            Step::ok(Outcome::CandidatesReady, what)
        };
        paths.into_iter().fold(step, Step::with_evidence)
    }

    /// A candidate ranked in an earlier round becomes this iteration's: its diff is this
    /// iteration's patch.diff, and PATCH_REVIEW puts it through the policy and the approval
    /// gate again (but not through a second trial build).
    fn take_pooled(&mut self, dir: &std::path::Path) -> Step {
        let entry = self.ctx.pool.remove(0);
        let path = dir.join("patch.diff");
        let copied = std::fs::read(self.run_dir.path().join(&entry.diff))
            .and_then(|diff| rundir::write_atomic(&path, &diff));
        if let Err(e) = copied {
            return Step::error(
                ErrorClass::ArtifactMissing,
                format!("cannot copy {} to {}: {e}", entry.diff, path.display()),
            );
        }
        self.ctx.candidate = Some((entry.origin.clone(), self.run_dir.relative(&path)));
        Step::ok(
            Outcome::CandidatesReady,
            format!(
                "iteration {}: candidate {} ({}), already reviewed",
                self.ctx.ledger.iteration, entry.origin, entry.ranked
            ),
        )
        .with_evidence(path)
    }

    /// What an agent changed in the work tree, as a diff against the base snapshot; the tree is
    /// restored so the candidate goes through review and apply like any other.
    fn take_tree_edits(&mut self) -> Result<String, Step> {
        let (Some(repo), Some(base)) = (&self.repo, &self.ctx.base) else {
            return Err(Step::error(ErrorClass::Unhandled, "no repository"));
        };
        let diff = repo.diff_since(base).map_err(|e| {
            Step::error(
                ErrorClass::Unhandled,
                format!("reading the agent's edits: {e}"),
            )
        })?;
        if !diff.is_empty() {
            repo.restore(base)
                .map_err(|e| Step::error(ErrorClass::Unhandled, format!("rollback failed: {e}")))?;
        }
        Ok(diff)
    }

    /// What an agent changed in its workspace, as a diff against the base snapshot.
    fn workspace_edits(&self, workspace: &Worktree) -> Result<String, Step> {
        let Some(base) = &self.ctx.base else {
            return Err(Step::error(ErrorClass::Unhandled, "no repository"));
        };
        workspace.repo.diff_since(base).map_err(|e| {
            Step::error(
                ErrorClass::Unhandled,
                format!("reading the edits in {}: {e}", workspace.path.display()),
            )
        })
    }

    /// One line saying what the candidate must achieve.
    fn task(&self) -> String {
        match &self.ctx.targets {
            Some(t) if t.build_was_broken && t.fail_to_pass.is_empty() => {
                "make the firmware build, and every test pass".to_string()
            }
            Some(t) => format!(
                "make {} pass without breaking the {} test(s) that pass now",
                t.fail_to_pass
                    .iter()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", "),
                t.pass_to_pass.len()
            ),
            None => "make the failing tests pass".to_string(),
        }
    }

    /// A fresh round is checked and ranked first (`trials.rs`); then the iteration's
    /// candidate — the round's best, or one taken from the pool — goes through the policy and
    /// the approval gate.
    pub(super) async fn patch_review(&mut self) -> Step {
        if !self.round_pending() {
            return self.review_candidate().await;
        }
        match self.govern().await {
            Err(step) => step,
            Ok(Round::AllDropped(step)) => step,
            Ok(Round::Ranked { summary, record }) => {
                let mut step = self.review_candidate().await;
                step.reason = format!("{summary}; {}", step.reason);
                step.with_evidence(record)
            }
        }
    }

    async fn review_candidate(&mut self) -> Step {
        let Some((origin, patch)) = self.ctx.candidate.clone() else {
            return Step::error(ErrorClass::Unhandled, "no candidate to review");
        };
        let patch_path = self.run_dir.path().join(&patch);
        let diff = match std::fs::read_to_string(&patch_path) {
            Ok(d) => d,
            Err(e) => return Step::error(ErrorClass::ArtifactMissing, format!("{patch}: {e}")),
        };
        let review_path = match self.iteration_dir() {
            Ok(d) => d.join("review.json"),
            Err(step) => return step,
        };
        let review = match self.gated(&diff, &origin, &review_path) {
            Ok(review) => review,
            Err(step) => return step,
        };
        if !policy::needs_human(self.approve, &review, policy::DEFAULT_RISK_THRESHOLD) {
            let decision = Decision::by_policy(&review);
            return self.record_review(
                &review_path,
                &diff,
                &review,
                &decision,
                &origin,
                |reason| Step::ok(Outcome::Approved, reason),
            );
        }
        let asking = Self::ask_a_person(
            &diff,
            &review,
            &origin,
            self.ctx.ledger.iteration,
            self.approver.clone(),
            self.cancel.clone(),
        );
        // The terminal's progress drawing stays down while the person reads and answers.
        self.events.emit(&Event::InputWanted {
            what: format!(
                "approval of iteration {}'s candidate ({origin})",
                self.ctx.ledger.iteration
            ),
        });
        let answered = asking.await;
        self.events.emit(&Event::InputDone);
        let decision = match answered {
            Ok(d) => d,
            Err(step) => return step,
        };
        match decision.choice.clone() {
            Choice::Approved => {
                self.record_review(&review_path, &diff, &review, &decision, &origin, |reason| {
                    Step::ok(Outcome::Approved, reason)
                })
            }
            Choice::Rejected { reason } => {
                self.ctx.hints.push(format!(
                    "a reviewer rejected iteration {}'s candidate ({origin}): {reason}",
                    self.ctx.ledger.iteration
                ));
                let step =
                    self.record_review(&review_path, &diff, &review, &decision, &origin, |r| {
                        Step::ok(Outcome::Rejected, r)
                    });
                self.close_iteration(IterationVerdict::Rejected, &reason, None, None);
                step
            }
            Choice::Edited { diff: edited } => {
                // The person's version goes through the same gate before it is used.
                let again = match self.gated(&edited, &origin, &review_path) {
                    Ok(review) => review,
                    Err(step) => return step,
                };
                if let Err(e) = rundir::write_atomic(&patch_path, edited.as_bytes()) {
                    return Step::error(ErrorClass::ArtifactMissing, format!("{patch}: {e}"));
                }
                self.record_review(
                    &review_path,
                    &edited,
                    &again,
                    &decision,
                    &origin,
                    |reason| Step::ok(Outcome::Approved, format!("{reason} (edited by a person)")),
                )
            }
        }
    }

    /// Puts `diff` through the [`gate`]; a refusal is recorded in review.json and becomes the
    /// step's error.
    fn gated(
        &self,
        diff: &str,
        origin: &str,
        review_path: &std::path::Path,
    ) -> Result<policy::Review, Step> {
        let Some(repo) = &self.repo else {
            return Err(Step::error(ErrorClass::Unhandled, "no repository"));
        };
        match gate(repo, diff, &self.profile.policy, origin) {
            Gate::Passed(review) => Ok(review),
            Gate::Refused {
                review,
                decision,
                class,
            } => Err(
                self.record_review(review_path, diff, &review, &decision, origin, |reason| {
                    Step::error(class, reason)
                }),
            ),
        }
    }

    /// Asks the approver the run was given (nobody to ask is [`policy::NonInteractive`]); an
    /// abort does not wait for the answer.
    /// It takes no `&Job`, so the engine's future stays `Send` (the revert strategy runs bisect
    /// steps, whole engine runs, from inside a strategy's future).
    async fn ask_a_person(
        diff: &str,
        review: &policy::Review,
        origin: &str,
        iteration: u32,
        approver: Option<std::sync::Arc<dyn policy::Approver>>,
        cancel: tokio_util::sync::CancellationToken,
    ) -> Result<Decision, Step> {
        let request = policy::ApprovalRequest {
            diff,
            review,
            iteration,
            origin,
        };
        let approver = approver.unwrap_or_else(|| std::sync::Arc::new(policy::NonInteractive));
        tokio::select! {
            answer = approver.ask(request) => answer.map_err(|e| {
                Step::error(ErrorClass::Unhandled, format!("asking for approval: {e}"))
            }),
            _ = cancel.cancelled() => Err(Step::ok(Outcome::Abort, "interrupted while waiting for approval")),
        }
    }

    /// Writes review.json and turns the decision into the step `to_step` makes of its reason.
    pub(super) fn record_review(
        &self,
        path: &std::path::Path,
        diff: &str,
        review: &policy::Review,
        decision: &Decision,
        origin: &str,
        to_step: impl FnOnce(String) -> Step,
    ) -> Step {
        let request = policy::ApprovalRequest {
            diff,
            review,
            iteration: self.ctx.ledger.iteration,
            origin,
        };
        let record = ReviewRecord::new(&request, decision, chrono::Utc::now());
        if let Err(e) = serde_json::to_vec_pretty(&record)
            .map_err(std::io::Error::other)
            .and_then(|b| rundir::write_atomic(path, &b))
        {
            return Step::error(
                ErrorClass::ArtifactMissing,
                format!("cannot write {}: {e}", path.display()),
            );
        }
        let who = match &decision.decided_by {
            policy::DecidedBy::Policy => "policy".to_string(),
            policy::DecidedBy::Human { user } => format!("{user} (a person)"),
        };
        let what = match &decision.choice {
            Choice::Approved | Choice::Edited { .. } => format!(
                "{origin}: approved by {who}; risk {:.2}{}",
                review.risk.score,
                if review.risk.reasons.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", review.risk.reasons.join("; "))
                }
            ),
            Choice::Rejected { reason } => format!("{origin}: rejected by {who}: {reason}"),
        };
        to_step(what).with_evidence(path.to_path_buf())
    }

    pub(super) fn patch_apply(&mut self) -> Step {
        let Some((origin, patch)) = self.ctx.candidate.clone() else {
            return Step::error(ErrorClass::Unhandled, "no candidate to apply");
        };
        let patch_path = self.run_dir.path().join(&patch);
        let diff = match std::fs::read(&patch_path) {
            Ok(d) => d,
            Err(e) => return Step::error(ErrorClass::ArtifactMissing, format!("{patch}: {e}")),
        };
        let Some(repo) = &self.repo else {
            return Step::error(ErrorClass::Unhandled, "no repository");
        };
        let label = rundir::iteration_name(self.ctx.ledger.iteration);
        if let Err(e) = repo.snapshot(&self.ctx.run_id, &label) {
            return Step::error(ErrorClass::Unhandled, format!("rollback point: {e}"));
        }
        // Set before touching the tree: a crash from here on is rolled back on resume.
        self.ctx.patch_applied = true;
        match repo.apply_patch(&diff) {
            Ok(report) => {
                let adapted = report.line_endings_adapted();
                let how = if !adapted.is_empty() {
                    format!(
                        " (its lines matched {} only with line endings ignored: written with \
                         the file's own line endings)",
                        adapted.join(", ")
                    )
                } else if report.is_exact() {
                    String::new()
                } else {
                    " (with offset or fuzz)".to_string()
                };
                Step::ok(
                    Outcome::Applied,
                    format!(
                        "applied {origin}{how} on rollback point refs/fwfix/{}/{label}",
                        self.ctx.run_id
                    ),
                )
                .with_evidence(patch_path)
            }
            Err(e) => {
                let class = e.error_class().unwrap_or(ErrorClass::Unhandled);
                Step::error(class, format!("{origin} does not apply: {e}"))
                    .with_evidence(patch_path)
            }
        }
    }

    /// Puts the work tree back exactly as the owner had it.
    pub(super) fn restore_owner_tree(&mut self) -> Result<(), String> {
        let (Some(repo), Some(base)) = (&self.repo, &self.ctx.base) else {
            return Ok(());
        };
        repo.restore(base).map_err(|e| e.to_string())?;
        self.ctx.patch_applied = false;
        Ok(())
    }

    /// Removes the run's rollback points (`refs/fwfix/<run-id>/*`) once it can no longer be
    /// resumed; a failure to is a warning, and `fwfix runs prune` can finish the job.
    pub(super) fn remove_snapshots(&mut self) {
        let removed = crate::repo::Repo::open(&self.ctx.request.repo)
            .and_then(|owner| owner.remove_snapshots(&self.ctx.run_id));
        // The large untracked files they kept aside go with them.
        let aside = self.run_dir.path().join(rundir::UNTRACKED_DIR);
        if let Err(e) = std::fs::remove_dir_all(&aside) {
            if e.kind() != std::io::ErrorKind::NotFound {
                self.events.emit(&Event::Message {
                    level: Level::Warning,
                    text: format!("could not remove {}: {e}", aside.display()),
                });
            }
        }
        if let Err(e) = removed {
            self.events.emit(&Event::Message {
                level: Level::Warning,
                text: format!(
                    "could not remove the snapshots refs/fwfix/{}/: {e} (fwfix runs prune removes them)",
                    self.ctx.run_id
                ),
            });
        }
    }

    /// Removes the run's linked worktree once the run no longer needs it.
    pub(super) fn remove_worktree(&mut self) {
        let Some(path) = self.ctx.worktree.clone() else {
            return;
        };
        let removed = crate::repo::Repo::open(&self.ctx.request.repo)
            .map_err(|e| e.to_string())
            .and_then(|owner| owner.remove_worktree(&path).map_err(|e| e.to_string()));
        if let Err(e) = removed {
            self.events.emit(&Event::Message {
                level: Level::Warning,
                text: format!("could not remove the worktree {}: {e}", path.display()),
            });
        }
    }
}

/// What the gate makes of a diff before anyone is asked about it.
enum Gate {
    Passed(policy::Review),
    /// Refused with the decision to record and the error class the iteration ends with.
    Refused {
        review: policy::Review,
        decision: Decision,
        class: ErrorClass,
    },
}

/// The one gate a diff passes before it may be applied — a strategy's candidate and a person's
/// edit of it alike: its paths are checked against the real tree (symlinks, `.git`, ignored
/// paths), then the profile's policy reads it.
fn gate(repo: &Repo, diff: &str, spec: &PolicySpec, origin: &str) -> Gate {
    let review = policy::evaluate(diff, spec);
    if let Err(e) = repo.check_patch_paths(diff.as_bytes()) {
        return Gate::Refused {
            review,
            decision: Decision::rejected_by_policy(format!("{origin}: {e}")),
            class: e.error_class().unwrap_or(ErrorClass::PolicyViolation),
        };
    }
    if review.verdict == policy::Verdict::Deny {
        return Gate::Refused {
            decision: Decision::by_policy(&review),
            review,
            class: ErrorClass::PolicyViolation,
        };
    }
    Gate::Passed(review)
}

/// The evidence as markdown, for a person or a model.
fn render_evidence(evidence: &serde_json::Value) -> String {
    let mut out = String::from("# Evidence\n\n");
    if let Some(logs) = evidence["logs"].as_array().filter(|l| !l.is_empty()) {
        out.push_str("## Logs\n\n");
        for l in logs {
            let _ = writeln!(
                out,
                "- {}: {} ({})",
                l["file"].as_str().unwrap_or(""),
                l["class"].as_str().unwrap_or(""),
                l["reason"].as_str().unwrap_or("")
            );
        }
        out.push('\n');
    }
    if let Some(failing) = evidence["failing"].as_array() {
        out.push_str("## Failing tests\n\n");
        for c in failing {
            let _ = writeln!(
                out,
                "- {} {} at {}:{}: {}",
                c["status"].as_str().unwrap_or(""),
                c["name"].as_str().unwrap_or(""),
                c["file"].as_str().unwrap_or("?"),
                c["line"].as_u64().unwrap_or(0),
                c["message"].as_str().unwrap_or("")
            );
        }
    }
    if let Some(failing) = evidence["failing"].as_array() {
        for c in failing {
            if let Some(src) = c["source"]["text"].as_str() {
                let _ = writeln!(
                    out,
                    "\n`{}`:\n```c\n{src}```",
                    c["source"]["file"].as_str().unwrap_or("")
                );
            }
        }
    }
    if let Some(summary) = evidence["crash"]["summary"].as_str() {
        let _ = writeln!(out, "\n## Crash\n\n{summary}");
        for src in evidence["crash_source"].as_array().into_iter().flatten() {
            let _ = writeln!(
                out,
                "\n`{}`:\n```c\n{}```",
                src["file"].as_str().unwrap_or(""),
                src["text"].as_str().unwrap_or("")
            );
        }
    }
    if let Some(site) = evidence["hang_site"]["function"].as_str() {
        let _ = writeln!(out, "\n## Hang\n\nThe image was stuck in {site}.");
        if let Some(src) = evidence["hang_source"]["text"].as_str() {
            let _ = writeln!(out, "```c\n{src}```");
        }
    }
    if let Some(changed) = evidence["changed_files"]
        .as_array()
        .filter(|c| !c.is_empty())
    {
        out.push_str("\n## Changed since the last known-good commit\n\n");
        for f in changed {
            let _ = writeln!(out, "- {}", f.as_str().unwrap_or(""));
        }
    }
    if let Some(suspects) = evidence["suspects"].as_array().filter(|s| !s.is_empty()) {
        out.push_str("\n## Most likely at fault\n\n");
        for s in suspects.iter().take(8) {
            let reasons: Vec<&str> = s["reasons"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|r| r.as_str())
                .collect();
            let _ = writeln!(
                out,
                "- {} ({:.2}): {}",
                s["name"].as_str().unwrap_or(""),
                s["score"].as_f64().unwrap_or(0.0),
                reasons.join("; ")
            );
        }
    }
    if let Some(diags) = evidence["diagnostics"].as_array().filter(|d| !d.is_empty()) {
        // The lint stage's findings travel as diagnostics of kind `lint:<rule>`.
        let lint = diags
            .iter()
            .all(|d| d["kind"].as_str().is_some_and(|k| k.starts_with("lint:")));
        out.push_str(if lint {
            "\n## Lint findings the last candidate added (the unpatched tree did not have them)\n\n"
        } else {
            "\n## Build diagnostics\n\n"
        });
        for d in diags {
            let _ = writeln!(
                out,
                "- {}:{}: {}",
                d["file"].as_str().unwrap_or("?"),
                d["line"].as_u64().unwrap_or(0),
                d["message"].as_str().unwrap_or("")
            );
            if let Some(src) = d["source"]["text"].as_str() {
                let _ = writeln!(out, "```c\n{src}```");
            }
        }
    }
    if let Some(history) = evidence["history"].as_array().filter(|h| !h.is_empty()) {
        out.push_str("\n## Earlier attempts\n\n");
        for h in history {
            let _ = writeln!(
                out,
                "- iteration {} ({}): {}: {}",
                h["iteration"],
                h["origin"].as_str().unwrap_or(""),
                h["outcome"].as_str().unwrap_or(""),
                h["reason"].as_str().unwrap_or("")
            );
        }
    }
    if let Some(hints) = evidence["hints"].as_array().filter(|h| !h.is_empty()) {
        out.push_str("\n## Hints from a person\n\n");
        for h in hints {
            let _ = writeln!(out, "- {}", h.as_str().unwrap_or(""));
        }
    }
    out
}
