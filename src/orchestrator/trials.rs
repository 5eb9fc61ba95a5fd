//! The governor's trials: PATCH_REVIEW's first half when a round brings fresh candidates, the
//! checks behind the governor's ranking, done for every candidate before any of them costs a
//! test run. The governor's decisions are pure and live in `crate::governor`; this module is
//! the I/O they are made from (worktrees, builds, digests), so it lives with the engine.
//!
//! 1. Policy: the repository's path checks and the profile's `[policy]`.
//! 2. With more than one candidate, each one the policy allows gets a linked worktree off the
//!    rollback point (the base snapshot, the owner's uncommitted work included): the candidate
//!    is applied there, and the profile's build runs there — several at once, at most one per
//!    CPU, each under the build timeout, cancellable, its process group killed when it ends.
//! 3. The trial image's loadable-content digest is compared with the baseline image's, and with
//!    a `[lint]` table the trial tree is linted (`lint.rs`): findings the unpatched tree did not
//!    have rank the candidate after every clean one that builds.
//! 4. `governor::rank` decides; `candidates.json` records every candidate, its checks, verdict,
//!    reason, rank and build log; the worktrees are removed on every path (their guards do it
//!    when a cancel or timeout drops this future half-way).
//!
//! A single candidate is not trial-built: its only alternative is no candidate at all, and
//! BUILD_RUN builds it anyway, so it is ranked by policy alone and goes on as before; BUILD_RUN
//! then compares its image with the baseline's ([`Job::no_op_image`]) and drops a no-op there.

use super::context::PoolEntry;
use super::job::{Job, Step};
use super::worktree::Worktree;
use crate::analysis::triage::{self, Stage as TriageStage, TriageContext};
use crate::build::{self, BuildEnd, BuildRequest};
use crate::events::{Event, Level, NullSink};
use crate::governor::{self, image, CandidateRecord, Check, Verdict};
use crate::machine::ErrorClass;
use crate::policy::{self, Decision};
use crate::rundir;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How a round's review went.
pub(super) enum Round {
    /// The best candidate is the iteration's candidate now; the rest are pooled.
    Ranked { summary: String, record: PathBuf },
    /// Every candidate was dropped: the iteration fails with this step.
    AllDropped(Step),
}

/// A candidate under trial: its index in the round, its diff, and its worktree once made.
struct Trial {
    index: usize,
    worktree: Option<Worktree>,
}

impl Job<'_> {
    /// Whether the current iteration has candidates that were generated but not reviewed yet.
    pub(super) fn round_pending(&self) -> bool {
        let iteration = self.ctx.ledger.iteration;
        self.ctx
            .candidates
            .iter()
            .any(|c| c.iteration == iteration && c.verdict == Verdict::Pending)
    }

    /// Checks and ranks the current iteration's round (see the module outline).
    pub(super) async fn govern(&mut self) -> Result<Round, Step> {
        let iteration = self.ctx.ledger.iteration;
        let dir = self.iteration_dir()?;
        let mut round: Vec<CandidateRecord> = self
            .ctx
            .candidates
            .iter()
            .filter(|c| c.iteration == iteration)
            .cloned()
            .collect();
        let Some(repo) = &self.repo else {
            return Err(Step::error(ErrorClass::Unhandled, "no repository"));
        };
        let mut diffs = Vec::with_capacity(round.len());
        let mut reviews = Vec::with_capacity(round.len());
        for c in &mut round {
            let diff = std::fs::read_to_string(self.run_dir.path().join(&c.diff)).map_err(|e| {
                Step::error(ErrorClass::ArtifactMissing, format!("{}: {e}", c.diff))
            })?;
            let review = policy::evaluate(&diff, &self.profile.policy);
            if c.verdict == Verdict::Pending {
                c.changed_lines = review.stats.added + review.stats.removed;
                c.checks.policy = Check::Passed;
                // Paths are checked against the real tree (symlinks) as well as by the rules.
                match repo.check_patch_paths(diff.as_bytes()) {
                    Err(e) if e.error_class() == Some(ErrorClass::PolicyViolation) => {
                        c.checks.policy = Check::failed(e.to_string());
                    }
                    Err(e) => c.checks.applies = Check::failed(e.to_string()),
                    Ok(_) => {}
                }
                if review.verdict == policy::Verdict::Deny && c.checks.policy == Check::Passed {
                    if let policy::Choice::Rejected { reason } = Decision::by_policy(&review).choice
                    {
                        c.checks.policy = Check::failed(reason);
                    }
                }
            }
            diffs.push(diff);
            reviews.push(review);
        }
        let pending: Vec<usize> = (0..round.len())
            .filter(|&i| round[i].verdict == Verdict::Pending)
            .collect();
        if pending.len() > 1 {
            self.trial_builds(&mut round, &diffs, &pending, &dir)
                .await?;
        } else {
            for &i in &pending {
                let c = &mut round[i];
                let single = "single candidate: applied and built by the loop itself";
                if !matches!(c.checks.applies, Check::Failed { .. }) {
                    c.checks.applies = Check::unknown(single);
                }
                c.checks.builds = Check::unknown(single);
                c.checks.image = Check::unknown(single);
            }
        }
        governor::rank(&mut round);
        let record = dir.join("candidates.json");
        let written = serde_json::to_vec_pretty(&serde_json::json!({
            "iteration": iteration,
            "summary": governor::summary(&round),
            "candidates": round,
        }))
        .map_err(std::io::Error::other)
        .and_then(|b| rundir::write_atomic(&record, &b));
        if let Err(e) = written {
            return Err(Step::error(
                ErrorClass::ArtifactMissing,
                format!("cannot write {}: {e}", record.display()),
            ));
        }
        for c in &round {
            self.events.emit(&Event::Message {
                level: Level::Info,
                text: format!("candidate {} ({}): {}", c.id, c.origin, c.reason),
            });
        }
        let summary = governor::summary(&round);
        self.remember_round(&round);
        if let Some(class) = governor::round_failure(&round) {
            // The lead candidate's review stands for the round in review.json: the first one
            // the policy denied, else the first one.
            let lead = round
                .iter()
                .position(|c| matches!(c.checks.policy, Check::Failed { .. }))
                .unwrap_or(0);
            let c = &round[lead];
            let decision = match &c.checks.policy {
                Check::Failed { reason } if reviews[lead].verdict == policy::Verdict::Allow => {
                    Decision::rejected_by_policy(format!("{}: {reason}", c.origin))
                }
                Check::Failed { .. } => Decision::by_policy(&reviews[lead]),
                Check::Passed | Check::Unknown { .. } => {
                    Decision::rejected_by_policy(format!("{}: {}", c.origin, c.reason))
                }
            };
            let origin = c.origin.clone();
            let step = self.record_review(
                &dir.join("review.json"),
                &diffs[lead],
                &reviews[lead],
                &decision,
                &origin,
                |reason| Step::error(class, format!("{summary}; {reason}")),
            );
            return Ok(Round::AllDropped(step.with_evidence(record)));
        }
        let best: Vec<CandidateRecord> = governor::ranked(&round).into_iter().cloned().collect();
        let Some((top, rest)) = best.split_first() else {
            return Err(Step::error(
                ErrorClass::Unhandled,
                "a ranked round has no candidate",
            ));
        };
        self.ctx.pool = rest
            .iter()
            .map(|c| PoolEntry {
                origin: c.origin.clone(),
                diff: c.diff.clone(),
                ranked: format!("{} of iteration {iteration}, {}", c.id, rank_word(c)),
            })
            .collect();
        let patch = dir.join("patch.diff");
        let top_diff = round
            .iter()
            .position(|c| c.id == top.id)
            .map(|i| diffs[i].as_bytes())
            .unwrap_or_default();
        if let Err(e) = rundir::write_atomic(&patch, top_diff) {
            return Err(Step::error(
                ErrorClass::ArtifactMissing,
                format!("cannot write {}: {e}", patch.display()),
            ));
        }
        self.ctx.candidate = Some((top.origin.clone(), self.run_dir.relative(&patch)));
        Ok(Round::Ranked { summary, record })
    }

    /// A linked worktree off the rollback point for candidate `id` of `iteration`, under
    /// `trees`; `kind` keeps an agent's workspace and a trial build's tree apart.
    pub(super) fn candidate_worktree(
        &self,
        trees: &Path,
        kind: &str,
        iteration: u32,
        id: &str,
    ) -> Result<Worktree, Step> {
        let (Some(repo), Some(base)) = (&self.repo, &self.ctx.base) else {
            return Err(Step::error(
                ErrorClass::Unhandled,
                "no snapshot to make a candidate's worktree from",
            ));
        };
        // Unique among the repository's worktrees: the run, the iteration and the candidate.
        let path = trees.join(format!(
            "{kind}-{}-{}-{id}",
            self.ctx.run_id,
            rundir::iteration_name(iteration)
        ));
        // Left behind by a run killed half-way through this step.
        let _ = repo.remove_worktree(&path);
        let added = repo
            .add_worktree(&path, base)
            .map_err(|e| Step::error(ErrorClass::Unhandled, format!("worktree for {id}: {e}")))?;
        Ok(Worktree {
            owner: self.ctx.work_dir.clone(),
            path,
            repo: added,
            removed: false,
        })
    }

    /// Applies and builds each of `pending` in a worktree of its own, builds in parallel.
    async fn trial_builds(
        &mut self,
        round: &mut [CandidateRecord],
        diffs: &[String],
        pending: &[usize],
        dir: &Path,
    ) -> Result<(), Step> {
        let trees = dir.join("candidates");
        let mut trials = Vec::new();
        for &index in pending {
            let c = &mut round[index];
            if !matches!(c.checks.policy, Check::Passed)
                || matches!(c.checks.applies, Check::Failed { .. })
            {
                c.checks.applies = not_tried(&c.checks.applies, "the policy denied it");
                c.checks.builds = Check::unknown("not tried");
                c.checks.image = Check::unknown("not tried");
                continue;
            }
            let worktree = self.candidate_worktree(&trees, "wt", c.iteration, &c.id)?;
            match worktree.repo.apply_patch(diffs[index].as_bytes()) {
                Ok(_) => {
                    c.checks.applies = Check::Passed;
                    trials.push(Trial {
                        index,
                        worktree: Some(worktree),
                    });
                }
                Err(e) => {
                    c.checks.applies = Check::failed(e.to_string());
                    c.checks.builds = Check::unknown("not tried");
                    c.checks.image = Check::unknown("not tried");
                    trials.push(Trial {
                        index,
                        worktree: None,
                    });
                    drop(worktree);
                }
            }
        }
        let parallel = std::thread::available_parallelism().map_or(1, |n| n.get());
        let slots = Arc::new(tokio::sync::Semaphore::new(parallel));
        let mut builds = tokio::task::JoinSet::new();
        for trial in &trials {
            let Some(wt) = &trial.worktree else { continue };
            let c = &round[trial.index];
            let log = trees.join(format!("{}-build.log", c.id));
            let req = BuildRequest {
                command: self.build.command.clone(),
                cwd: wt.path.join(&self.build.cwd),
                timeout: self.build.timeout,
                log_path: log,
                env: vec![("FWFIX_BOARD".into(), self.board.name.clone())],
                // Each trial builds in a worktree of its own.
                lock: None,
            };
            let (cancel, slots, index) = (self.cancel.clone(), slots.clone(), trial.index);
            let root = wt.path.clone();
            builds.spawn(async move {
                let _slot = slots.acquire_owned().await;
                // The trial builds' lines would interleave: each has its own log instead.
                let out = build::run(&req, &cancel, &NullSink).await;
                let dirs = super::pipeline::build_dirs(&root, &req.cwd);
                (index, req.log_path, dirs, out)
            });
        }
        self.events.emit(&Event::Message {
            level: Level::Info,
            text: format!(
                "trial-building {} candidate(s), {} at a time",
                builds.len(),
                parallel
            ),
        });
        while let Some(joined) = builds.join_next().await {
            let Ok((index, log, dirs, out)) = joined else {
                continue;
            };
            let c = &mut round[index];
            c.build_log = Some(self.run_dir.relative(&log));
            let out = match out {
                Ok(out) => out,
                Err(e) => {
                    c.checks.builds = Check::unknown(format!("the build could not run: {e}"));
                    continue;
                }
            };
            c.checks.builds = match (&out.end, &out.missing_tool) {
                (BuildEnd::Cancelled, _) => {
                    return Err(Step::ok(
                        crate::machine::Outcome::Abort,
                        "interrupted while trial-building candidates",
                    ))
                }
                (BuildEnd::Exited(0), _) => Check::Passed,
                (BuildEnd::Exited(code), None) => {
                    // As for the loop's own build: the log's triage tells a candidate that
                    // broke the build from an environment that did (a full disk, a killed
                    // compiler), which says nothing about the candidate.
                    let triage = triage::classify(&out.log, &TriageContext::default());
                    let name = self.run_dir.relative(&log);
                    match triage.class.error_class_in(TriageStage::Build) {
                        Some(ErrorClass::BuildEnvFailure) => Check::unknown(format!(
                            "the environment broke the build (exit {code}); triage: {}",
                            triage.verdict_in(&name)
                        )),
                        _ => {
                            let diagnostics =
                                crate::analysis::diagnostics::parse_build_log_in(&out.log, &dirs);
                            let first = diagnostics
                                .iter()
                                .find(|d| d.severity == crate::analysis::Severity::Error)
                                .map(|d| format!(": {}", crate::report::describe_diagnostic(d)))
                                .unwrap_or_default();
                            Check::failed(format!("build failed (exit {code}){first}"))
                        }
                    }
                }
                (BuildEnd::Exited(code), Some(tool)) => Check::unknown(format!(
                    "the build needs `{tool}`, which is not installed (exit {code})"
                )),
                (BuildEnd::Signalled(sig), _) => {
                    Check::unknown(format!("the build was killed by signal {sig}"))
                }
                (BuildEnd::TimedOut, _) => Check::unknown(format!(
                    "the build did not finish within {} s",
                    self.build.timeout.as_secs()
                )),
            };
        }
        for trial in trials {
            let c = &mut round[trial.index];
            let Some(wt) = trial.worktree else { continue };
            if c.checks.builds == Check::Passed {
                c.checks.image = self.compare_image(&wt.path.join(&self.build.artifact));
                if let Some(spec) = &self.profile.lint {
                    let log = trees.join(format!("{}-lint.log", c.id));
                    let build_log = c
                        .build_log
                        .as_ref()
                        .and_then(|l| std::fs::read_to_string(self.run_dir.path().join(l)).ok());
                    let linted = super::lint::lint_tree(
                        spec,
                        &wt.path,
                        &self.build.cwd,
                        build_log.as_deref(),
                        &log,
                        &self.board.name,
                        &self.cancel,
                    )
                    .await;
                    match (linted, &self.ctx.lint_baseline) {
                        (Ok(findings), Some(baseline)) => {
                            let new = crate::analysis::lint::answerable(
                                crate::analysis::lint::new_findings(baseline, &findings),
                                &super::lint::added_lines(diffs[trial.index].as_bytes()),
                            );
                            (c.checks.lint, c.new_findings) = super::lint::lint_check(&new);
                        }
                        (Ok(_), None) => {
                            c.checks.lint = Check::unknown("the unpatched tree was never linted")
                        }
                        (Err(step), _) if step.outcome == crate::machine::Outcome::Abort => {
                            return Err(step)
                        }
                        (Err(step), _) => c.checks.lint = Check::unknown(step.reason),
                    }
                }
            } else {
                c.checks.image = Check::unknown("not built");
            }
            if let Err(e) = wt.remove() {
                self.events.emit(&Event::Message {
                    level: Level::Warning,
                    text: format!("could not remove the trial worktree of {}: {e}", c.id),
                });
            }
        }
        Ok(())
    }

    /// Passed when the trial image differs from the baseline's, Failed when it loads the same.
    fn compare_image(&self, artifact: &Path) -> Check {
        let Some(baseline) = &self.ctx.baseline_image else {
            return Check::unknown("no baseline image to compare with");
        };
        let digest = std::fs::read(artifact)
            .map_err(|e| format!("{}: {e}", artifact.display()))
            .and_then(|bytes| image::loadable_digest(&bytes).map_err(|e| e.to_string()));
        match digest {
            Ok(d) if &d == baseline => Check::failed(
                "its image loads the same bytes as the baseline's: the patch changes nothing",
            ),
            Ok(_) => Check::Passed,
            Err(e) => Check::unknown(format!("cannot digest the image: {e}")),
        }
    }

    /// A single candidate is not trial-built (see the outline), so its image is compared once
    /// BUILD_RUN has built it — a pooled one's too, in case its trial could not compare it: an
    /// image that loads the same bytes as the baseline's ends the iteration as the round's image
    /// check would have dropped it (NO_CANDIDATE, no progress), before any test time. The
    /// report's record of the candidate says so; the round's candidates.json stays what the
    /// review decided (it is the review's evidence).
    pub(super) fn no_op_image(&mut self, artifact: &Path) -> Option<Step> {
        let (origin, _) = self.ctx.candidate.clone()?;
        if !self.ctx.patch_applied || !self.ctx.baseline_done {
            return None;
        }
        let Check::Failed { reason } = self.compare_image(artifact) else {
            return None;
        };
        let iteration = self.ctx.ledger.iteration;
        if let Some(c) = self.ctx.candidates.iter_mut().find(|c| {
            c.iteration == iteration
                && c.origin == origin
                && matches!(c.verdict, Verdict::Ranked { .. })
        }) {
            governor::drop_no_op(c, &reason);
        }
        Some(Step::error(
            governor::Stage::Image.error_class(),
            format!("{origin} is a no-op: {reason}; not tested"),
        ))
    }

    /// Records the round's verdicts in the context; the dropped candidates go into the history,
    /// so the next analysis learns why they were not worth a test run.
    fn remember_round(&mut self, round: &[CandidateRecord]) {
        let iteration = self.ctx.ledger.iteration;
        self.ctx.candidates.retain(|c| c.iteration != iteration);
        self.ctx.candidates.extend(round.iter().cloned());
        for c in round {
            if let Verdict::Dropped { stage, class } = c.verdict {
                self.ctx.history.push(super::context::IterationRecord {
                    iteration,
                    origin: c.origin.clone(),
                    patch: c.diff.clone(),
                    verdict: stage_verdict(stage),
                    reason: format!("{} {}", c.id, c.reason),
                    error_class: Some(class),
                    judgement: None,
                });
            }
        }
    }

    /// Records the baseline image's digest, for the no-op check of later rounds.
    pub(super) fn note_baseline_image(&mut self, artifact: &Path) {
        if self.ctx.baseline_done || !self.patching() {
            return;
        }
        let digest = std::fs::read(artifact)
            .map_err(|e| e.to_string())
            .and_then(|bytes| image::loadable_digest(&bytes).map_err(|e| e.to_string()));
        match digest {
            Ok(d) => self.ctx.baseline_image = Some(d),
            Err(e) => {
                self.ctx.baseline_image = None;
                self.events.emit(&Event::Message {
                    level: Level::Warning,
                    text: format!(
                        "no-op candidates cannot be recognised: the baseline image {}: {e}",
                        artifact.display()
                    ),
                });
            }
        }
    }
}

/// A check that was not reached keeps a failure it already has.
fn not_tried(check: &Check, why: &str) -> Check {
    match check {
        Check::Failed { .. } => check.clone(),
        Check::Passed | Check::Unknown { .. } => Check::unknown(format!("not tried: {why}")),
    }
}

fn rank_word(c: &CandidateRecord) -> String {
    match c.verdict {
        Verdict::Ranked { rank } => format!("ranked {}", governor::ordinal(rank)),
        Verdict::Pending | Verdict::Dropped { .. } => "not ranked".to_string(),
    }
}

fn stage_verdict(stage: governor::Stage) -> crate::machine::convergence::IterationVerdict {
    use crate::machine::convergence::IterationVerdict as V;
    match stage {
        governor::Stage::Policy => V::PolicyDenied,
        governor::Stage::Apply => V::DidNotApply,
        governor::Stage::Build => V::BrokeBuild,
        governor::Stage::Generation | governor::Stage::Empty | governor::Stage::Image => {
            V::NoProgress
        }
    }
}
