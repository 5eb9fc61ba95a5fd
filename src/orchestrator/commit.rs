//! COMMIT: the converged fix committed on `fwfix/<run-id>` the way `git commit` would commit it,
//! through the repository's own `pre-commit` and `commit-msg` hooks.
//!
//! 1. `fix.patch` is written first: whatever the hooks decide, the fix is kept.
//! 2. The fix commit's tree is computed on the owner's HEAD (objects only; nothing points at it).
//! 3. Unless the profile says `[commit] hooks = false`: `pre-commit` runs in the run's work tree
//!    (the candidate is in it) against an index file holding the fix staged on that work tree's
//!    HEAD (the commit's tree itself, unless the run is in a linked worktree), then `commit-msg`
//!    on a file holding fwfix's message, which is read back as git reads it.
//! 4. A hook that fails, times out, or changes a file or the index refuses the fix:
//!    COMMIT_FAILURE with the hook's output, and neither a commit nor a branch is made. The run
//!    then ends, and finalisation restores the owner's tree as for any other end.
//! 5. Otherwise the commit and its branch are written.

use super::context::FixRecord;
use super::job::{Job, Step};
use crate::analysis::evidence::Evidence;
use crate::analysis::Severity;
use crate::events::{Event, Level};
use crate::machine::convergence::IterationVerdict;
use crate::machine::{ErrorClass, Outcome};
use crate::repo::hooks::{self, HookEnv, HookRun, Lookup};
use crate::repo::message::{self, FailingCase, FixMessage};
use crate::repo::{FixBase, PreparedFix, Repo, RepoError, Snapshot, TreeEdit};
use crate::report::{case_status_name, crash_headline};
use crate::rundir;
use std::path::{Path, PathBuf};

/// A refused commit's reason quotes at most this many of the hook's last lines.
const OUTPUT_LINES: usize = 40;
/// The run directory's folder for the hooks' logs and the message given to `commit-msg`.
const COMMIT_DIR: &str = "commit";
/// The index file the hooks are given, in [`COMMIT_DIR`] while they run.
const INDEX_FILE: &str = "index";

impl Job<'_> {
    pub(super) async fn commit(&mut self) -> Step {
        let Some(record) = self
            .ctx
            .history
            .iter()
            .rev()
            .find(|r| r.verdict == IterationVerdict::Fixed)
            .cloned()
        else {
            return Step::error(ErrorClass::Unhandled, "COMMIT without a fixed iteration");
        };
        let diff = match std::fs::read(self.run_dir.path().join(&record.patch)) {
            Ok(d) => d,
            Err(e) => {
                return Step::error(
                    ErrorClass::ArtifactMissing,
                    format!("{}: {e}", record.patch),
                )
            }
        };
        let fix_path = self.run_dir.path().join("fix.patch");
        if let Err(e) = rundir::write_atomic(&fix_path, &diff) {
            return Step::error(
                ErrorClass::ArtifactMissing,
                format!("cannot write {}: {e}", fix_path.display()),
            );
        }
        let fixed = record
            .judgement
            .as_ref()
            .map(|j| j.fixed.clone())
            .unwrap_or_default();
        self.ctx.fix = Some(FixRecord {
            branch: None,
            commit: None,
            patch: self.run_dir.relative(&fix_path),
            fixed: fixed.clone(),
            needs_uncommitted: None,
        });

        // The fix goes on the owner's HEAD, in the owner's repository, also when the loop ran
        // in a linked worktree (whose HEAD is a snapshot of the owner's tree).
        let owner = match Repo::open(&self.ctx.request.repo) {
            Ok(r) => r,
            Err(e) => return Step::error(ErrorClass::Unhandled, e.to_string()),
        };
        let owner_base = match &self.ctx.worktree {
            Some(_) => Snapshot::load(&owner, &format!("refs/fwfix/{}/owner", self.ctx.run_id)),
            None => self.ctx.base.clone().ok_or_else(|| RepoError::BadSnapshot {
                refname: format!("refs/fwfix/{}/base", self.ctx.run_id),
                reason: "the run has no base snapshot".into(),
            }),
        };
        let owner_base = match owner_base {
            Ok(b) => b,
            Err(e) => return Step::error(ErrorClass::Unhandled, format!("fix commit: {e}")),
        };
        // A run stopped between committing and recording it finds its commit made.
        if let Ok(Some(commit)) = owner.committed_fix(&self.ctx.run_id, &owner_base, &diff) {
            if let Some(fix) = &mut self.ctx.fix {
                fix.branch = Some(commit.branch.clone());
                fix.commit = Some(commit.commit.clone());
            }
            return Step::ok(
                Outcome::Committed,
                format!(
                    "the fix was committed on {} before the run was stopped",
                    commit.branch
                ),
            )
            .with_evidence(fix_path);
        }
        let prepared = match owner.prepare_fix(&self.ctx.run_id, &owner_base, &diff) {
            Ok(p) => p,
            Err(e @ RepoError::BranchExists { .. }) => {
                return Step::error(ErrorClass::CommitFailure, e.to_string())
                    .with_evidence(fix_path)
            }
            Err(e) => return Step::error(ErrorClass::Unhandled, format!("fix commit: {e}")),
        };
        if prepared.base == FixBase::Snapshot {
            let files: Vec<&str> = prepared.uncommitted.iter().map(String::as_str).collect();
            self.note_fix_needs_uncommitted_work(&prepared.branch, &files);
        }

        let (failing, crash, build_errors) = self.baseline_evidence();
        let mut message = message::build(&FixMessage {
            run_id: &self.ctx.run_id,
            iteration: record.iteration,
            fixed: &fixed,
            failing: &failing,
            crash: crash.as_deref(),
            build_errors: &build_errors,
            origin: &record.origin,
            verdict: &record.reason,
            on_uncommitted: prepared.base == FixBase::Snapshot,
        });

        let mut evidence = vec![fix_path];
        let mut ran = Vec::new();
        if self.profile.commit.hooks {
            let hooked = self.run_hooks(&prepared, &diff, &mut message).await;
            // The index file held the fix for the hooks only; their logs and the message stay.
            let _ = std::fs::remove_file(self.run_dir.path().join(COMMIT_DIR).join(INDEX_FILE));
            match hooked {
                Ok((logs, names)) => {
                    evidence.extend(logs);
                    ran = names;
                }
                Err(mut refused) => {
                    refused.evidence.extend(evidence);
                    return refused;
                }
            }
        }
        let commit = match owner.commit_prepared(prepared, &message) {
            Ok(c) => c,
            Err(e) => return Step::error(ErrorClass::Unhandled, format!("fix commit: {e}")),
        };
        if let Some(fix) = &mut self.ctx.fix {
            fix.branch = Some(commit.branch.clone());
            fix.commit = Some(commit.commit.clone());
        }
        let hooks = match (self.profile.commit.hooks, ran.as_slice()) {
            (false, _) => "; hooks skipped ([commit] hooks = false)".to_string(),
            (true, []) => "; the repository has no commit hook".to_string(),
            (true, names) => format!("; {} passed", names.join(" and ")),
        };
        let short: String = commit.commit.chars().take(12).collect();
        let mut step = Step::ok(
            Outcome::Committed,
            format!("committed the fix on {} ({short}){hooks}", commit.branch),
        );
        step.evidence = evidence;
        step
    }

    /// Tells the owner that the fix on `branch` needs their uncommitted work: the patch did not
    /// apply to HEAD, so the commit takes `files` (those the patch touches that hold uncommitted
    /// changes) with that work in them.
    fn note_fix_needs_uncommitted_work(&mut self, branch: &str, files: &[&str]) {
        let which = if files.is_empty() {
            "the files it touches".to_string()
        } else {
            files.join(", ")
        };
        let note = format!(
            "the fix applied only on top of your uncommitted changes, not on HEAD: its commit \
             on {branch} takes {which} with those changes in them; commit them first, or review \
             that commit before merging it"
        );
        self.events.emit(&Event::Message {
            level: Level::Warning,
            text: note.clone(),
        });
        self.ctx.notes.push(note);
        // For report.json and the summary.
        if let Some(fix) = &mut self.ctx.fix {
            fix.needs_uncommitted = Some(files.iter().map(|f| f.to_string()).collect());
        }
    }

    /// Runs `pre-commit` and `commit-msg` as git would on the fix; `message` becomes what
    /// `commit-msg` left. Ok: the hooks' logs and the names of the hooks that ran; Err: the step
    /// refusing the fix.
    async fn run_hooks(
        &mut self,
        prepared: &PreparedFix,
        diff: &[u8],
        message: &mut String,
    ) -> Result<(Vec<PathBuf>, Vec<&'static str>), Step> {
        let unhandled = |what: &str, e: &dyn std::fmt::Display| {
            Step::error(ErrorClass::Unhandled, format!("{what}: {e}"))
        };
        let Some(base) = self.ctx.base.clone() else {
            return Err(Step::error(
                ErrorClass::Unhandled,
                "no snapshot of the work tree",
            ));
        };
        let dir = self.run_dir.path().join(COMMIT_DIR);
        std::fs::create_dir_all(&dir).map_err(|e| unhandled(&dir.display().to_string(), &e))?;
        // The work tree's repository is only borrowed between the hooks' runs: a git handle may
        // not be shared across them.
        let (env, before, staged) = {
            let work = self.work_repo()?;
            let env = HookEnv {
                work_dir: work.workdir().to_path_buf(),
                git_dir: work.git_dir().to_path_buf(),
                index_file: dir.join(INDEX_FILE),
            };
            let staged = work
                .staged_fix_tree(prepared, diff)
                .and_then(|tree| {
                    work.write_index_file(&tree, &env.index_file)?;
                    Ok(tree)
                })
                .map_err(|e| unhandled("the fix's index", &e))?;
            // What the tree holds besides the snapshot and the candidate before any hook runs
            // (normally nothing): a hook is judged on what it changes.
            let before = work
                .edits_since(&base, Some(diff))
                .map_err(|e| unhandled("reading the work tree", &e))?;
            (env, before, staged)
        };
        let message_file = dir.join("COMMIT_EDITMSG");
        let mut logs = Vec::new();
        let mut ran = Vec::new();
        for name in [hooks::PRE_COMMIT, hooks::COMMIT_MSG] {
            let found = self.work_repo()?.find_hook(name);
            let path = match found {
                Ok(Lookup::Found(path)) => path,
                Ok(Lookup::NotExecutable(path)) => {
                    self.events.emit(&Event::Message {
                        level: Level::Warning,
                        text: format!(
                            "the {name} hook {} was ignored because it is not executable, as \
                             git ignores it",
                            path.display()
                        ),
                    });
                    continue;
                }
                Ok(Lookup::Missing) => continue,
                Err(e) => return Err(unhandled(&format!("finding the {name} hook"), &e)),
            };
            let args: Vec<&Path> = if name == hooks::COMMIT_MSG {
                rundir::write_atomic(&message_file, message.as_bytes())
                    .map_err(|e| unhandled(&message_file.display().to_string(), &e))?;
                vec![message_file.as_path()]
            } else {
                Vec::new()
            };
            self.events.emit(&Event::HookStarted {
                hook: name.to_string(),
                path: path.display().to_string(),
            });
            let run = hooks::run(
                &path,
                &args,
                &env,
                self.profile.commit.timeout,
                &self.cancel,
            )
            .await;
            let log = dir.join(format!("{name}.log"));
            let written = std::fs::write(&log, &run.output);
            if written.is_ok() {
                logs.push(log.clone());
            }
            if run.ending == hooks::Ending::Interrupted {
                return Err(Step::ok(
                    Outcome::Abort,
                    format!("interrupted while the {name} hook ran"),
                ));
            }
            // A hook that changed the tree or the index changed what was tested or what would be
            // committed: either way the commit would not be the fix fwfix confirmed.
            let changed = if run.passed() {
                let work = self.work_repo()?;
                changed_files(work, &base, diff, &before, &env.index_file, &staged)
            } else {
                Ok(Vec::new())
            };
            let changed = match changed {
                Ok(c) => c,
                Err(RepoError::HeadMoved { found, .. }) => vec![format!("HEAD (now {found})")],
                Err(e) => return Err(unhandled("reading the work tree", &e)),
            };
            let passed = run.passed() && changed.is_empty();
            self.events.emit(&Event::HookFinished {
                hook: name.to_string(),
                passed,
                ending: if changed.is_empty() {
                    run.ending.to_string()
                } else {
                    format!("changed {}", changed.join(", "))
                },
                duration_ms: u64::try_from(run.duration.as_millis()).unwrap_or(u64::MAX),
                output: tail(&run.output),
            });
            if !passed {
                let mut step =
                    Step::error(ErrorClass::CommitFailure, refusal(name, &run, &changed));
                step.evidence = logs;
                return Err(step);
            }
            ran.push(name);
            if name == hooks::COMMIT_MSG {
                // Git takes the message the hook left, cleaned up as for a commit made
                // without an editor; an empty one aborts the commit.
                let edited = std::fs::read_to_string(&message_file)
                    .map_err(|e| unhandled(&message_file.display().to_string(), &e))?;
                let cleaned = message::cleanup(&edited);
                if cleaned.is_empty() {
                    let mut step = Step::error(
                        ErrorClass::CommitFailure,
                        "the commit-msg hook left an empty commit message; git aborts such a \
                         commit",
                    );
                    step.evidence = logs;
                    return Err(step);
                }
                *message = cleaned;
            }
        }
        Ok((logs, ran))
    }

    fn work_repo(&self) -> Result<&Repo, Step> {
        self.repo
            .as_ref()
            .ok_or_else(|| Step::error(ErrorClass::Unhandled, "no work tree to run hooks in"))
    }

    /// What the fix repaired, from the baseline's evidence (iter-000's analysis.json): the
    /// tests that failed, the crash, the build's errors.
    fn baseline_evidence(&self) -> (Vec<FailingCase>, Option<String>, Vec<String>) {
        let path = self
            .run_dir
            .path()
            .join(rundir::iteration_name(0))
            .join("analysis.json");
        let Some(evidence) = std::fs::read_to_string(path)
            .ok()
            .and_then(|text| serde_json::from_str::<Evidence>(&text).ok())
        else {
            return (Vec::new(), None, Vec::new());
        };
        let failing = evidence
            .failing
            .into_iter()
            .map(|f| FailingCase {
                name: f.case.name,
                status: case_status_name(f.case.status).to_string(),
                location: f.case.file.map(|file| match f.case.line {
                    Some(line) => format!("{file}:{line}"),
                    None => file,
                }),
                message: f.case.message.unwrap_or_default(),
            })
            .collect();
        let build_errors = evidence
            .diagnostics
            .into_iter()
            .map(|d| d.diagnostic)
            .filter(|d| d.severity == Severity::Error)
            .map(|d| match (d.file, d.line) {
                (Some(file), Some(line)) => format!("{file}:{line}: {}", d.message),
                (Some(file), None) => format!("{file}: {}", d.message),
                (None, _) => d.message,
            })
            .collect();
        (
            failing,
            evidence.crash.as_ref().map(crash_headline),
            build_errors,
        )
    }
}

/// What a hook changed: paths of the work tree (beyond what was there before it ran) and the
/// index it was given.
fn changed_files(
    work: &Repo,
    base: &Snapshot,
    diff: &[u8],
    before: &[TreeEdit],
    index_file: &Path,
    tree: &str,
) -> Result<Vec<String>, RepoError> {
    let mut changed: Vec<String> = work
        .edits_since(base, Some(diff))?
        .into_iter()
        .filter(|e| !before.contains(e))
        .map(|e| e.to_string())
        .collect();
    if work.index_file_tree(index_file)? != tree {
        changed.push("the index".to_string());
    }
    Ok(changed)
}

/// Why the fix was refused, with the hook's last words.
fn refusal(name: &str, run: &HookRun, changed: &[String]) -> String {
    let what = if changed.is_empty() {
        run.ending.to_string()
    } else {
        format!(
            "changed {} (fwfix commits only the fix it tested)",
            changed.join(", ")
        )
    };
    let output = tail(&run.output);
    let mut reason = format!("the {name} hook refused the fix: it {what}");
    if !output.trim().is_empty() {
        reason.push_str(":\n");
        reason.push_str(output.trim_end());
    }
    reason
}

/// The last [`OUTPUT_LINES`] lines of a hook's output.
fn tail(output: &str) -> String {
    let lines: Vec<&str> = output.lines().collect();
    let from = lines.len().saturating_sub(OUTPUT_LINES);
    let mut kept = lines[from..].join("\n");
    if from > 0 {
        kept = format!("[{from} earlier line(s) in the log]\n{kept}");
    }
    kept
}
