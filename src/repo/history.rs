//! Reading history for culprit finding: naming commits (a ref the user typed, resolved once),
//! the first-parent line between a good and a bad commit, the files changed since a known-good
//! commit, moving a worktree fwfix created from one
//! commit to another, and a commit's revert as a diff. Only reads the user's repository (the
//! revert is computed in memory, never applied); the one thing it writes is the checkout of
//! fwfix's own bisect worktree, which it refuses anywhere else.

use super::error::RepoError;
use super::{Repo, Snapshot};
use git2::build::CheckoutBuilder;
use git2::{Commit, DiffOptions, ErrorCode, Oid};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// A commit as bisect reports name it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitInfo {
    /// The full id.
    pub id: String,
    /// The first line of the message.
    pub subject: String,
}

impl CommitInfo {
    /// The id abbreviated to 7 hex digits, as people quote commits.
    pub fn short(&self) -> &str {
        self.id.get(..7).unwrap_or(&self.id)
    }

    fn of(commit: &Commit<'_>) -> CommitInfo {
        CommitInfo {
            id: commit.id().to_string(),
            subject: String::from_utf8_lossy(commit.summary_bytes().unwrap_or_default())
                .into_owned(),
        }
    }
}

impl Repo {
    /// The commit `spec` names (a branch, a tag, `HEAD~3`, an id or its prefix).
    pub fn resolve_commit(&self, spec: &str) -> Result<CommitInfo, RepoError> {
        let unknown = || RepoError::UnknownRef {
            spec: spec.to_string(),
            path: self.workdir.clone(),
        };
        if spec.trim().is_empty() {
            return Err(unknown());
        }
        let object = self.git.revparse_single(spec).map_err(|e| match e.code() {
            ErrorCode::NotFound | ErrorCode::InvalidSpec | ErrorCode::Ambiguous => unknown(),
            _ => self.err("resolve ref", e),
        })?;
        let commit = object.peel_to_commit().map_err(|_| unknown())?;
        Ok(CommitInfo::of(&commit))
    }

    /// The first-parent line from `good` to `bad`, oldest first, both included: what a bisect
    /// searches. `good` must be an ancestor of `bad` along first parents (the mainline).
    pub fn first_parent_range(&self, good: &str, bad: &str) -> Result<Vec<CommitInfo>, RepoError> {
        let not_on_line = || RepoError::NotOnFirstParentLine {
            good: good.to_string(),
            bad: bad.to_string(),
        };
        let good_id = self.oid(good)?;
        let bad_id = self.oid(bad)?;
        if good_id == bad_id {
            return Err(not_on_line());
        }
        let descends = self
            .git
            .graph_descendant_of(bad_id, good_id)
            .map_err(|e| self.err("compare commits", e))?;
        if !descends {
            return Err(not_on_line());
        }
        let mut line = Vec::new();
        let mut commit = self.commit(bad_id)?;
        loop {
            line.push(CommitInfo::of(&commit));
            if commit.id() == good_id {
                break;
            }
            commit = match commit.parent(0) {
                Ok(parent) => parent,
                // Reached the root: good is an ancestor only through a merged side branch.
                Err(_) => return Err(not_on_line()),
            };
        }
        line.reverse();
        Ok(line)
    }

    /// Moves this worktree, detached, to `commit`: tracked files are rewritten where they differ,
    /// untracked and ignored files (build outputs) stay, so builds stay incremental. Only in a
    /// worktree fwfix created; anywhere else it refuses and touches nothing.
    pub fn checkout_detached(&self, commit: &str) -> Result<(), RepoError> {
        let ours = self.git.is_worktree()
            && self.git.path().file_name().is_some_and(|n| {
                n.to_string_lossy()
                    .starts_with(super::worktree::NAME_PREFIX)
            });
        if !ours {
            return Err(RepoError::Worktree {
                path: self.workdir.clone(),
                reason: "fwfix only checks out commits in worktrees it created".to_string(),
            });
        }
        let id = self.oid(commit)?;
        let target = self.commit(id)?;
        let mut checkout = CheckoutBuilder::new();
        checkout.force();
        self.git
            .checkout_tree(target.as_object(), Some(&mut checkout))
            .and_then(|()| self.git.set_head_detached(id))
            .map_err(|e| self.err("check out commit in worktree", e))
    }

    /// The revert of `commit` on top of HEAD, as a unified diff against HEAD (`a/` and `b/`
    /// prefixes): computed in memory, nothing is written to the working tree or the index. A merge
    /// commit is reverted against its first parent. Conflicts are an error naming the paths.
    pub fn revert_diff(&self, commit: &str) -> Result<String, RepoError> {
        let culprit = self.commit(self.oid(commit)?)?;
        let (head, _) = self.head()?;
        let ours = self.commit(head)?;
        let mainline = if culprit.parent_count() > 1 { 1 } else { 0 };
        let mut index = self
            .git
            .revert_commit(&culprit, &ours, mainline, None)
            .map_err(|e| self.err("revert commit", e))?;
        if index.has_conflicts() {
            let mut paths: Vec<String> = index
                .conflicts()
                .map_err(|e| self.err("read revert conflicts", e))?
                .flatten()
                .filter_map(|c| c.our.or(c.their).or(c.ancestor))
                .map(|entry| String::from_utf8_lossy(&entry.path).into_owned())
                .collect();
            paths.sort();
            paths.dedup();
            return Err(RepoError::RevertConflict {
                commit: commit.to_string(),
                paths,
            });
        }
        let tree_id = index
            .write_tree_to(&self.git)
            .map_err(|e| self.err("write revert tree", e))?;
        let new = self
            .git
            .find_tree(tree_id)
            .map_err(|e| self.err("read revert tree", e))?;
        let old = ours.tree().map_err(|e| self.err("read HEAD tree", e))?;
        let mut opts = DiffOptions::new();
        opts.show_binary(true);
        let diff = self
            .git
            .diff_tree_to_tree(Some(&old), Some(&new), Some(&mut opts))
            .map_err(|e| self.err("diff revert", e))?;
        let bytes = super::snapshot::patch_bytes(&diff).map_err(|e| self.err("format diff", e))?;
        String::from_utf8(bytes).map_err(|_| RepoError::DiffNotUtf8 {
            refname: commit.to_string(),
        })
    }

    /// The files that differ between `good` and the snapshot's working tree, sorted: what was
    /// committed on the way from the last known-good commit, plus the owner's uncommitted and
    /// untracked changes the snapshot holds. A renamed file is named by its new path.
    pub fn changed_since(&self, good: &str, snap: &Snapshot) -> Result<Vec<String>, RepoError> {
        let old = self
            .commit(self.oid(good)?)?
            .tree()
            .map_err(|e| self.err("read known-good tree", e))?;
        let ids = snap.ids()?;
        let new = self
            .git
            .find_tree(ids.worktree_tree)
            .map_err(|e| RepoError::git("read snapshot tree", &snap.refname, e))?;
        let diff = self
            .git
            .diff_tree_to_tree(Some(&old), Some(&new), None)
            .map_err(|e| self.err("diff since known-good commit", e))?;
        let mut paths: Vec<String> = diff
            .deltas()
            .filter_map(|d| {
                d.new_file()
                    .path()
                    .or(d.old_file().path())
                    .map(Path::to_path_buf)
            })
            .map(|p| p.to_string_lossy().replace('\\', "/"))
            .collect();
        paths.sort();
        paths.dedup();
        Ok(paths)
    }

    pub(super) fn oid(&self, id: &str) -> Result<Oid, RepoError> {
        Oid::from_str(id).map_err(|_| RepoError::UnknownRef {
            spec: id.to_string(),
            path: self.workdir.clone(),
        })
    }

    fn commit(&self, id: Oid) -> Result<Commit<'_>, RepoError> {
        self.git.find_commit(id).map_err(|e| match e.code() {
            ErrorCode::NotFound => RepoError::UnknownRef {
                spec: id.to_string(),
                path: self.workdir.clone(),
            },
            _ => self.err("read commit", e),
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::super::test_support::git;
    use super::*;
    use std::path::Path;

    fn commit(dir: &Path, file: &str, text: &str, message: &str) -> String {
        std::fs::write(dir.join(file), text).unwrap();
        git(dir, &["add", "-A"]);
        git(dir, &["commit", "-q", "-m", message]);
        git(dir, &["rev-parse", "HEAD"])
    }

    /// main: c0 - c1 - c2 - merge(side) - c4, side: s1 branching at c1.
    fn repo() -> (tempfile::TempDir, Vec<String>, String) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        git(p, &["init", "-q", "-b", "main"]);
        let c0 = commit(p, "a.txt", "one\ntwo\nthree\n", "c0: start");
        let c1 = commit(p, "b.txt", "b\n", "c1: add b");
        git(p, &["checkout", "-q", "-b", "side"]);
        let s1 = commit(p, "s.txt", "side\n", "s1: side work");
        git(p, &["checkout", "-q", "main"]);
        let c2 = commit(p, "a.txt", "one\nTWO\nthree\n", "c2: shout two");
        git(p, &["merge", "-q", "--no-ff", "-m", "merge side", "side"]);
        let m = git(p, &["rev-parse", "HEAD"]);
        let c4 = commit(p, "c.txt", "c\n", "c4: add c");
        (dir, vec![c0, c1, c2, m, c4], s1)
    }

    #[test]
    fn refs_resolve_and_unknown_ones_are_named() {
        let (dir, ids, _) = repo();
        let r = Repo::open(dir.path()).unwrap();
        let head = r.resolve_commit("HEAD").unwrap();
        assert_eq!(head.id, ids[4]);
        assert_eq!(head.subject, "c4: add c");
        assert_eq!(head.short(), &ids[4][..7]);
        assert_eq!(r.resolve_commit("main~4").unwrap().id, ids[0]);
        for bad in ["nope", "", "main~99"] {
            let e = r.resolve_commit(bad).unwrap_err();
            assert!(matches!(e, RepoError::UnknownRef { .. }), "{bad}: {e}");
            assert!(e.to_string().contains(&format!("'{bad}'")), "{e}");
        }
    }

    #[test]
    fn the_range_follows_first_parents_only() {
        let (dir, ids, side) = repo();
        let r = Repo::open(dir.path()).unwrap();
        let line = r.first_parent_range(&ids[0], &ids[4]).unwrap();
        let got: Vec<&str> = line.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(got, ids.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(line[3].subject, "merge side");
        // The side branch is an ancestor, but not on the mainline.
        let e = r.first_parent_range(&side, &ids[4]).unwrap_err();
        assert!(matches!(e, RepoError::NotOnFirstParentLine { .. }), "{e}");
        // Backwards, or the same commit twice, is no range.
        assert!(r.first_parent_range(&ids[4], &ids[0]).is_err());
        assert!(r.first_parent_range(&ids[2], &ids[2]).is_err());
    }

    #[test]
    fn a_bisect_worktree_moves_between_commits_and_keeps_untracked_files() {
        let (dir, ids, _) = repo();
        let owner = Repo::open(dir.path()).unwrap();
        let status_before = git(dir.path(), &["status", "--porcelain"]);
        let wt_path = dir.path().join(".fwfix").join("bisect-x");
        std::fs::create_dir_all(wt_path.parent().unwrap()).unwrap();
        let wt = owner.add_worktree_at(&wt_path, &ids[1]).unwrap();
        assert_eq!(
            std::fs::read_to_string(wt_path.join("a.txt")).unwrap(),
            "one\ntwo\nthree\n"
        );
        std::fs::write(wt_path.join("build.o"), "object").unwrap();
        wt.checkout_detached(&ids[4]).unwrap();
        assert_eq!(
            std::fs::read_to_string(wt_path.join("a.txt")).unwrap(),
            "one\nTWO\nthree\n"
        );
        assert!(wt_path.join("c.txt").is_file() && wt_path.join("s.txt").is_file());
        wt.checkout_detached(&ids[0]).unwrap();
        assert!(
            !wt_path.join("b.txt").exists(),
            "files the commit lacks are removed"
        );
        assert!(
            wt_path.join("build.o").is_file(),
            "untracked build outputs stay"
        );
        // The owner's checkout is never moved.
        assert!(owner.checkout_detached(&ids[0]).is_err());
        assert_eq!(git(dir.path(), &["rev-parse", "HEAD"]), ids[4]);
        owner.remove_worktree(&wt_path).unwrap();
        assert_eq!(git(dir.path(), &["status", "--porcelain"]), status_before);
    }

    #[test]
    fn a_revert_is_a_diff_against_head_and_a_conflict_names_its_paths() {
        let (dir, ids, _) = repo();
        let r = Repo::open(dir.path()).unwrap();
        let diff = r.revert_diff(&ids[2]).unwrap();
        assert!(diff.contains("--- a/a.txt\n+++ b/a.txt\n"), "{diff}");
        assert!(diff.contains("-TWO\n+two\n"), "{diff}");
        // The merge is reverted against its first parent: the side branch's file goes.
        let diff = r.revert_diff(&ids[3]).unwrap();
        assert!(
            diff.contains("deleted file mode") && diff.contains("a/s.txt"),
            "{diff}"
        );
        // A later commit rewrote the reverted line: the revert conflicts and nothing is written.
        commit(dir.path(), "a.txt", "one\nTwo!\nthree\n", "c5: reword two");
        let status = git(dir.path(), &["status", "--porcelain"]);
        let e = r.revert_diff(&ids[2]).unwrap_err();
        match &e {
            RepoError::RevertConflict { paths, .. } => assert_eq!(paths, &["a.txt"]),
            other => panic!("{other}"),
        }
        assert!(e.to_string().contains("a.txt"), "{e}");
        assert_eq!(git(dir.path(), &["status", "--porcelain"]), status);
    }
}
