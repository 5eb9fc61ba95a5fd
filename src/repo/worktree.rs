//! Linked worktrees, so a whole run can happen beside the user's checkout instead of in it.
//! fwfix only removes worktrees it created (their names start with `fwfix-`); it never touches
//! the user's own worktrees or branches (the branch libgit2 needs to create a worktree is a
//! temporary one of ours, deleted at once).

use super::error::RepoError;
use super::{Repo, Snapshot};
use git2::{BranchType, Oid, Repository, WorktreeAddOptions, WorktreePruneOptions};
use std::path::Path;

pub(super) const NAME_PREFIX: &str = "fwfix-";

impl Repo {
    /// Creates a linked worktree at `path` (which must not exist), checked out detached at the
    /// snapshot's commit: the user's working tree as it was, uncommitted and untracked files
    /// included (the large untracked files the snapshot kept aside are copied in). Returns the
    /// worktree as a [`Repo`] that keeps large untracked files aside as this one does, so a diff
    /// of the worktree does not take them for new files.
    pub fn add_worktree(&self, path: &Path, snap: &Snapshot) -> Result<Repo, RepoError> {
        let mut worktree = self.add_worktree_at_oid(path, snap.ids()?.commit, &snap.refname)?;
        worktree.large = self.large.clone();
        if !snap.large_files.is_empty() {
            let large = self.large_store(snap)?;
            for file in &snap.large_files {
                if super::paths::check_path(file.path.as_bytes()).is_ok() {
                    large.put_back(path, file)?;
                }
            }
        }
        Ok(worktree)
    }

    /// Creates a linked worktree at `path` (which must not exist), checked out detached at
    /// `commit`: a bisect's place to build one commit after another.
    pub fn add_worktree_at(&self, path: &Path, commit: &str) -> Result<Repo, RepoError> {
        self.add_worktree_at_oid(path, self.oid(commit)?, commit)
    }

    fn add_worktree_at_oid(
        &self,
        path: &Path,
        commit_id: Oid,
        what: &str,
    ) -> Result<Repo, RepoError> {
        let fail = |reason: String| RepoError::Worktree {
            path: path.to_path_buf(),
            reason,
        };
        if std::fs::symlink_metadata(path).is_ok() {
            return Err(fail("the path already exists".into()));
        }
        let name = worktree_name(path);
        if self.git.find_worktree(&name).is_ok() {
            return Err(fail(format!("a worktree named {name} already exists")));
        }
        let commit = self
            .git
            .find_commit(commit_id)
            .map_err(|e| RepoError::git("read worktree commit", what, e))?;
        // libgit2 checks a worktree out on a branch; ours lives only until HEAD is detached.
        let temp_branch = format!("fwfix-worktree/{name}");
        if self
            .git
            .find_branch(&temp_branch, BranchType::Local)
            .is_ok()
        {
            return Err(fail(format!("branch {temp_branch} is in the way")));
        }
        let branch = self
            .git
            .branch(&temp_branch, &commit, false)
            .map_err(|e| RepoError::git("create temporary branch", &temp_branch, e))?;
        let created = (|| {
            let mut opts = WorktreeAddOptions::new();
            opts.reference(Some(branch.get()));
            self.git.worktree(&name, path, Some(&opts))?;
            Repository::open(path)?.set_head_detached(commit_id)
        })();
        let deleted = self
            .git
            .find_branch(&temp_branch, BranchType::Local)
            .and_then(|mut b| b.delete());
        created.map_err(|e| RepoError::git("add worktree", path, e))?;
        deleted.map_err(|e| RepoError::git("delete temporary branch", &temp_branch, e))?;
        Repo::open(path)
    }

    /// Removes a worktree made by [`Repo::add_worktree`]: its directory (build outputs included)
    /// and git's record of it. Refuses worktrees fwfix did not create, and locked ones.
    pub fn remove_worktree(&self, path: &Path) -> Result<(), RepoError> {
        let fail = |reason: &str| RepoError::Worktree {
            path: path.to_path_buf(),
            reason: reason.to_string(),
        };
        let wanted = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let names = self
            .git
            .worktrees()
            .map_err(|e| self.err("list worktrees", e))?;
        for name in names.iter().flatten().flatten() {
            let wt = self
                .git
                .find_worktree(name)
                .map_err(|e| self.err("open worktree", e))?;
            let at = std::fs::canonicalize(wt.path()).unwrap_or_else(|_| wt.path().to_path_buf());
            if at != wanted {
                continue;
            }
            if !name.starts_with(NAME_PREFIX) {
                return Err(fail(
                    "not created by fwfix; remove it yourself with git worktree remove",
                ));
            }
            let mut opts = WorktreePruneOptions::new();
            opts.valid(true).working_tree(true).locked(false);
            return wt
                .prune(Some(&mut opts))
                .map_err(|e| RepoError::git("remove worktree", path, e));
        }
        Err(fail("no linked worktree of this repository is there"))
    }
}

/// `fwfix-` and the directory's name in a safe alphabet: git's admin directory name.
fn worktree_name(path: &Path) -> String {
    let base = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let clean: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("{NAME_PREFIX}{}", clean.trim_matches('-'))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn names_are_prefixed_and_sanitised() {
        assert_eq!(worktree_name(Path::new("/tmp/run 1.x")), "fwfix-run-1-x");
        assert_eq!(worktree_name(Path::new("wt")), "fwfix-wt");
    }
}
