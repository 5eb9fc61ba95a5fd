//! The firmware repository, through git2: snapshots, exact rollback, safe patch apply, linked
//! worktrees and the fix branch. The user's repository is sacred: this module never resets,
//! force-checks-out or cleans the user's checkout, never touches ignored files, and refuses a
//! patch before writing anything when one of its paths is unsafe. It does not shell out to `git`
//! (the repository's own commit hooks are the one program it runs), decide what a run does next,
//! or print: callers turn its results into events.
//!
//! A run uses it in this order:
//! 1. [`Repo::open`] refuses a repository it cannot work on safely (bare, mid-merge, ...).
//! 2. [`Repo::snapshot`] records HEAD, the index and the working tree under
//!    `refs/fwfix/<run-id>/<label>` without touching any of them.
//! 3. [`Repo::check_patch_paths`] then [`Repo::apply_patch`] apply a candidate, all or nothing.
//! 4. [`Repo::restore`] rolls the working tree and index back to a snapshot, exactly.
//! 5. On success [`Repo::prepare_fix`] computes the fix commit's tree, the repository's own
//!    commit hooks judge it ([`hooks`]), and [`Repo::commit_prepared`] commits it on
//!    `fwfix/<run-id>` beside the user's branch.
//!
//! Culprit finding reads history through [`Repo::resolve_commit`] and
//! [`Repo::first_parent_range`], tests commits in a worktree of its own moved with
//! [`Repo::checkout_detached`], and proposes [`Repo::revert_diff`].

mod apply;
mod error;
mod exclude;
mod files;
mod history;
pub mod hooks;
mod hunks;
mod large;
pub mod message;
pub(crate) mod patch;
mod paths;
mod snapshot;
mod status;
#[cfg(test)]
pub(crate) mod test_support;
mod tree_lock;
mod worktree;

pub use apply::{
    ApplyMethod, ApplyReport, FileApply, FixBase, FixCommit, HunkApply, PathChange, PreparedFix,
};
pub use error::{Fault, RepoError, UnsafeReason};
pub use exclude::ensure_excluded;
pub use history::CommitInfo;
pub use large::{LargeFile, LargeFiles};
pub use patch::ChangeKind;
pub use snapshot::{set_aside_command, RestoreReport, Snapshot, TreeEdit};
pub use tree_lock::{lock_tree, TreeLock, TreeUse};

use git2::{ErrorCode, Oid, Repository, RepositoryState, Signature};
use std::path::{Path, PathBuf};

/// An open working-tree repository that fwfix may work on.
pub struct Repo {
    git: Repository,
    workdir: PathBuf,
    /// Untracked files this handle's snapshots keep aside instead of in git objects.
    large: Option<LargeFiles>,
}

impl std::fmt::Debug for Repo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Repo")
            .field("workdir", &self.workdir)
            .finish()
    }
}

impl Repo {
    /// Opens the repository containing `path` (a linked worktree works too). Refuses a bare
    /// repository and one in the middle of a merge, rebase, cherry-pick, revert or `git am`.
    pub fn open(path: &Path) -> Result<Repo, RepoError> {
        let git = Repository::discover(path).map_err(|e| match e.code() {
            ErrorCode::NotFound => RepoError::NotARepository { path: path.into() },
            _ => RepoError::git("open repository", path, e),
        })?;
        let workdir = match git.workdir() {
            Some(dir) if !git.is_bare() => dir.to_path_buf(),
            _ => return Err(RepoError::Bare { path: path.into() }),
        };
        let repo = Repo {
            git,
            workdir,
            large: None,
        };
        repo.check_state()?;
        Ok(repo)
    }

    /// From now on this handle's snapshots keep untracked files larger than
    /// `large.above_bytes` aside in `large.store`, out of git objects, and its rollbacks restore
    /// them from there.
    pub fn keep_large_files_aside(&mut self, large: LargeFiles) {
        self.large = Some(large);
    }

    /// The root of the working tree.
    pub fn workdir(&self) -> &Path {
        &self.workdir
    }

    /// Refuses to go on while git is half-way through an operation: our rollback would fight it.
    /// A bisect is fine: `git bisect run fwfix test` is a normal way to use fwfix.
    fn check_state(&self) -> Result<(), RepoError> {
        let state = match self.git.state() {
            RepositoryState::Clean | RepositoryState::Bisect => return Ok(()),
            RepositoryState::Merge => "merge",
            RepositoryState::Revert | RepositoryState::RevertSequence => "revert",
            RepositoryState::CherryPick | RepositoryState::CherryPickSequence => "cherry-pick",
            RepositoryState::Rebase
            | RepositoryState::RebaseInteractive
            | RepositoryState::RebaseMerge
            | RepositoryState::ApplyMailboxOrRebase => "rebase",
            RepositoryState::ApplyMailbox => "am",
        };
        Err(RepoError::OperationInProgress {
            path: self.workdir.clone(),
            state,
        })
    }

    /// The commit HEAD points at and the branch it goes through (`None` when detached).
    fn head(&self) -> Result<(Oid, Option<String>), RepoError> {
        let head = match self.git.head() {
            Ok(head) => head,
            Err(e) if matches!(e.code(), ErrorCode::UnbornBranch | ErrorCode::NotFound) => {
                return Err(RepoError::UnbornHead {
                    path: self.workdir.clone(),
                })
            }
            Err(e) => return Err(self.err("read HEAD", e)),
        };
        let oid = head
            .peel_to_commit()
            .map_err(|e| self.err("read HEAD commit", e))?
            .id();
        let branch = head
            .is_branch()
            .then(|| head.name().unwrap_or_default().to_string());
        Ok((oid, branch))
    }

    /// Who fwfix's own commits are by: the user's identity when configured, so the fix branch
    /// looks like theirs, else a fixed one (unattended CI often has no `user.name`).
    fn signature(&self) -> Result<Signature<'static>, RepoError> {
        self.git
            .signature()
            .or_else(|_| Signature::now("fwfix", "fwfix@localhost"))
            .map_err(|e| self.err("make commit signature", e))
    }

    fn err(&self, op: &'static str, e: git2::Error) -> RepoError {
        RepoError::git(op, &self.workdir, e)
    }
}

/// Run ids and labels become ref and branch name components: keep them to a safe alphabet.
fn check_name(what: &'static str, value: &str) -> Result<(), RepoError> {
    let reason = if value.is_empty() {
        Some("it is empty")
    } else if value.len() > 128 {
        Some("it is longer than 128 characters")
    } else if !value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    {
        Some("only letters, digits, '.', '_' and '-' are allowed")
    } else if value.starts_with(['.', '-']) {
        Some("it must not start with '.' or '-'")
    } else if value.contains("..") || value.ends_with(".lock") || value.ends_with('.') {
        Some("git does not allow '..' or a trailing '.lock' or '.' in ref names")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(RepoError::InvalidName {
            what,
            value: value.to_string(),
            reason,
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn names_must_be_ref_safe() {
        for good in ["20240101-120000-ab12", "base", "iter-001", "run_1.2"] {
            assert!(check_name("label", good).is_ok(), "{good}");
        }
        for bad in [
            "", "a/b", "..", ".x", "-x", "x.lock", "a..b", "sp ace", "x.", "ü",
        ] {
            assert!(check_name("label", bad).is_err(), "{bad}");
        }
    }
}
