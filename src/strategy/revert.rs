//! Strategy `revert`: find the commit that broke the tests between a good and a bad commit, and
//! propose its revert as the one candidate. The search is `fwfix bisect`'s, reached through a
//! [`CulpritFinder`] the orchestrator provides (this module does not build or run anything).
//!
//! It never commits, resets or reverts anything itself: the revert is computed in memory as a diff
//! against the work tree's HEAD, and the normal loop reviews, applies and verifies it like any
//! other candidate. A revert that conflicts with later work is reported with its paths, never
//! forced.

use super::{Candidate, PatchRequest, Strategy, StrategyError, StrategyFacts};
use crate::repo::{CommitInfo, Repo, RepoError};
use crate::report::RevertConflict;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use tokio_util::sync::CancellationToken;

/// The commit a bisect found: it fails and its first parent passes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Culprit {
    pub commit: CommitInfo,
    /// The bisect's confidence in [0, 1].
    pub confidence: f64,
    /// The bisect's own run directory (its steps and report).
    pub record: PathBuf,
}

/// Finds the first bad commit between two commits; the orchestrator implements it with the
/// build-and-test engine.
#[async_trait::async_trait]
pub trait CulpritFinder: Send {
    /// Bisects the first-parent history from `good` to `bad` (commit ids), keeping its records
    /// under `records`. A search that ends without a verified culprit is
    /// [`StrategyError::Failed`] saying why.
    async fn find(
        &mut self,
        good: &str,
        bad: &str,
        records: &Path,
        cancel: &CancellationToken,
    ) -> Result<Culprit, StrategyError>;
}

/// The revert strategy and how far it got.
pub struct RevertStrategy<'a> {
    good: String,
    bad: String,
    finder: Box<dyn CulpritFinder + 'a>,
    culprit: Option<Culprit>,
    /// The one candidate was asked for (whether or not it could be made).
    done: bool,
    /// The culprit's revert conflicted with later work.
    conflict: Option<RevertConflict>,
}

impl std::fmt::Debug for RevertStrategy<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RevertStrategy")
            .field("good", &self.good)
            .field("bad", &self.bad)
            .field("culprit", &self.culprit)
            .field("done", &self.done)
            .field("conflict", &self.conflict)
            .finish()
    }
}

impl<'a> RevertStrategy<'a> {
    pub fn new(
        good: impl Into<String>,
        bad: impl Into<String>,
        finder: Box<dyn CulpritFinder + 'a>,
    ) -> RevertStrategy<'a> {
        RevertStrategy {
            good: good.into(),
            bad: bad.into(),
            finder,
            culprit: None,
            done: false,
            conflict: None,
        }
    }

    /// The culprit, once the bisect has found it.
    pub fn culprit(&self) -> Option<&Culprit> {
        self.culprit.as_ref()
    }
}

#[async_trait::async_trait]
impl Strategy for RevertStrategy<'_> {
    fn name(&self) -> &'static str {
        "revert"
    }

    fn has_more(&self) -> bool {
        !self.done
    }

    async fn candidates(
        &mut self,
        req: &PatchRequest,
        cancel: &CancellationToken,
    ) -> Result<Vec<Candidate>, StrategyError> {
        if self.done {
            return Err(StrategyError::Exhausted(
                "the culprit's revert was the one candidate".to_string(),
            ));
        }
        let culprit = match &self.culprit {
            // A resumed run does not bisect again.
            Some(c) => c.clone(),
            None => {
                let found = self
                    .finder
                    .find(&self.good, &self.bad, &req.iteration_dir, cancel)
                    .await;
                match found {
                    Ok(c) => {
                        self.culprit = Some(c.clone());
                        c
                    }
                    // Interrupted: a resumed run may bisect again.
                    Err(StrategyError::Cancelled) => return Err(StrategyError::Cancelled),
                    Err(e) => {
                        self.done = true;
                        return Err(e);
                    }
                }
            }
        };
        self.done = true;
        let commit = &culprit.commit;
        let diff = Repo::open(&req.work_dir)
            .and_then(|repo| repo.revert_diff(&commit.id))
            .map_err(|e| match e {
                RepoError::RevertConflict { paths, .. } => {
                    let conflict = RevertConflict {
                        commit: commit.short().to_string(),
                        subject: commit.subject.clone(),
                        paths,
                    };
                    self.conflict = Some(conflict.clone());
                    StrategyError::Conflict {
                        commit: conflict.commit,
                        subject: conflict.subject,
                        paths: conflict.paths,
                    }
                }
                other => StrategyError::Failed(format!(
                    "culprit {} ({}): {other}",
                    commit.short(),
                    commit.subject
                )),
            })?;
        if diff.trim().is_empty() {
            return Err(StrategyError::Unusable {
                reason: format!(
                    "reverting culprit {} ({}) changes nothing in the current tree",
                    commit.short(),
                    commit.subject
                ),
                raw: String::new(),
            });
        }
        Ok(vec![Candidate::new(
            format!("revert of {} ({})", commit.short(), commit.subject),
            diff,
        )])
    }

    fn save(&self) -> serde_json::Value {
        serde_json::json!({ "culprit": self.culprit, "done": self.done, "conflict": self.conflict })
    }

    fn facts(&self) -> StrategyFacts {
        StrategyFacts {
            revert_conflict: self.conflict.clone(),
            ..StrategyFacts::default()
        }
    }

    fn load(&mut self, saved: &serde_json::Value) {
        if let Some(c) = saved
            .get("culprit")
            .and_then(|c| serde_json::from_value::<Culprit>(c.clone()).ok())
        {
            self.culprit = Some(c);
        }
        if let Some(done) = saved.get("done").and_then(|d| d.as_bool()) {
            self.done = done;
        }
        if let Some(c) = saved
            .get("conflict")
            .and_then(|c| serde_json::from_value::<RevertConflict>(c.clone()).ok())
        {
            self.conflict = Some(c);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::repo::test_support::git;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// A finder that answers from a script and counts how often it was asked.
    struct Scripted {
        answer: Result<Culprit, String>,
        calls: Arc<AtomicUsize>,
    }

    #[async_trait::async_trait]
    impl CulpritFinder for Scripted {
        async fn find(
            &mut self,
            _good: &str,
            _bad: &str,
            _records: &Path,
            _cancel: &CancellationToken,
        ) -> Result<Culprit, StrategyError> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            self.answer.clone().map_err(StrategyError::Failed)
        }
    }

    fn commit(dir: &Path, text: &str, message: &str) -> CommitInfo {
        std::fs::write(dir.join("crc.c"), text).unwrap();
        git(dir, &["add", "-A"]);
        git(dir, &["commit", "-q", "-m", message]);
        CommitInfo {
            id: git(dir, &["rev-parse", "HEAD"]),
            subject: message.to_string(),
        }
    }

    fn request(dir: &Path) -> PatchRequest {
        PatchRequest {
            iteration: 1,
            task: String::new(),
            evidence: serde_json::Value::Null,
            evidence_markdown: String::new(),
            work_dir: dir.to_path_buf(),
            iteration_dir: dir.join(".fwfix-iter"),
            candidates: 1,
            workspaces: Vec::new(),
        }
    }

    fn strategy(answer: Result<Culprit, String>) -> (RevertStrategy<'static>, Arc<AtomicUsize>) {
        let calls = Arc::new(AtomicUsize::new(0));
        let finder = Scripted {
            answer,
            calls: calls.clone(),
        };
        (RevertStrategy::new("g", "b", Box::new(finder)), calls)
    }

    fn culprit(commit: CommitInfo) -> Culprit {
        Culprit {
            commit,
            confidence: 1.0,
            record: PathBuf::from("bisect"),
        }
    }

    #[tokio::test]
    async fn proposes_the_culprits_revert_once() {
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "-q", "-b", "main"]);
        commit(dir.path(), "init = 0xFFFF;\n", "good crc");
        let bad = commit(dir.path(), "init = 0x0000;\n", "break crc16");
        std::fs::write(dir.path().join("notes.txt"), "unrelated\n").unwrap();
        git(dir.path(), &["add", "-A"]);
        git(dir.path(), &["commit", "-q", "-m", "unrelated"]);
        let (mut s, calls) = strategy(Ok(culprit(bad.clone())));
        let cancel = CancellationToken::new();
        assert!(s.has_more());
        let c = s.candidates(&request(dir.path()), &cancel).await.unwrap();
        assert_eq!(c.len(), 1);
        assert_eq!(
            c[0].origin,
            format!("revert of {} (break crc16)", &bad.id[..7])
        );
        assert!(
            c[0].diff.contains("-init = 0x0000;\n+init = 0xFFFF;\n"),
            "{}",
            c[0].diff
        );
        assert!(c[0].diff.contains("--- a/crc.c\n+++ b/crc.c\n"));
        assert!(!s.has_more());
        assert!(matches!(
            s.candidates(&request(dir.path()), &cancel).await,
            Err(StrategyError::Exhausted(_))
        ));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert_eq!(s.culprit().unwrap().commit, bad);
    }

    #[tokio::test]
    async fn a_conflicting_revert_is_reported_with_its_paths() {
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "-q", "-b", "main"]);
        commit(dir.path(), "init = 0xFFFF;\n", "good crc");
        let bad = commit(dir.path(), "init = 0x0000;\n", "break crc16");
        commit(dir.path(), "init = 0x1D0F;\n", "rewrite the same line");
        let (mut s, _) = strategy(Ok(culprit(bad)));
        let e = s
            .candidates(&request(dir.path()), &CancellationToken::new())
            .await
            .unwrap_err();
        assert!(matches!(e, StrategyError::Conflict { .. }), "{e}");
        assert_eq!(
            e.error_class(),
            crate::machine::ErrorClass::PatchApplyFailure
        );
        assert!(
            e.to_string().contains("conflicts") && e.to_string().contains("crc.c"),
            "{e}"
        );
        assert!(!s.has_more());
        let conflict = s.facts().revert_conflict.unwrap();
        assert_eq!(conflict.paths, vec!["crc.c".to_string()]);
        let mut resumed = strategy(Err(String::new())).0;
        resumed.load(&s.save());
        assert_eq!(resumed.facts().revert_conflict, Some(conflict));
    }

    #[tokio::test]
    async fn a_bisect_without_culprit_ends_the_strategy() {
        let dir = tempfile::tempdir().unwrap();
        let (mut s, _) = strategy(Err("the good ref fails".into()));
        let e = s
            .candidates(&request(dir.path()), &CancellationToken::new())
            .await
            .unwrap_err();
        assert!(e.to_string().contains("the good ref fails"), "{e}");
        assert!(!s.has_more());
    }

    #[tokio::test]
    async fn a_resumed_run_reuses_the_culprit_found_before() {
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "-q", "-b", "main"]);
        commit(dir.path(), "a\n", "one");
        let bad = commit(dir.path(), "b\n", "two");
        let (first, _) = strategy(Ok(culprit(bad.clone())));
        let mut first = first;
        first.culprit = Some(culprit(bad.clone()));
        let saved = first.save();
        let (mut resumed, calls) = strategy(Err("must not bisect again".into()));
        resumed.load(&saved);
        assert!(resumed.has_more());
        let c = resumed
            .candidates(&request(dir.path()), &CancellationToken::new())
            .await
            .unwrap();
        assert!(c[0].diff.contains("-b\n+a\n"), "{}", c[0].diff);
        assert_eq!(calls.load(Ordering::SeqCst), 0);
        let mut done = strategy(Err(String::new())).0;
        done.load(&resumed.save());
        assert!(!done.has_more());
    }
}
