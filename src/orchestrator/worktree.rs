//! A linked worktree fwfix made for a bisect or a candidate's trial build: removed when its work
//! ends, or when it is dropped half-way (a state timeout cancels the future), so none is ever
//! left behind.

use crate::repo::Repo;
use std::path::PathBuf;

/// One such worktree of the repository `owner`.
pub(super) struct Worktree {
    pub owner: PathBuf,
    pub path: PathBuf,
    pub repo: Repo,
    pub removed: bool,
}

impl Worktree {
    pub fn remove(mut self) -> Result<(), crate::repo::RepoError> {
        self.removed = true;
        Repo::open(&self.owner)?.remove_worktree(&self.path)
    }
}

impl Drop for Worktree {
    fn drop(&mut self) {
        if !self.removed {
            let _ = Repo::open(&self.owner).and_then(|o| o.remove_worktree(&self.path));
        }
    }
}
