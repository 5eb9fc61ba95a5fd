//! The working-tree lock: one fwfix process at a time applies candidates to, and rolls back, a
//! checkout's files, and nothing else of fwfix reads them meanwhile. Two runs on one checkout
//! would each snapshot the other's candidate as the owner's work and put it back at the end,
//! leaving it in the tree; a `fwfix test` or a `--worktree` run would build or snapshot a
//! candidate as if it were the owner's code. The lock is a `flock` on `.fwfix/tree.lock`,
//! exclusive for a process that patches the tree and shared for one that only reads it, holding
//! the holder's description; the kernel drops it when the holder dies, however it dies. It
//! guards only fwfix against itself: a person's edits are what the snapshots are for.

use super::error::RepoError;
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;

/// The lock file, relative to the working tree's root.
const TREE_LOCK: &str = ".fwfix/tree.lock";

/// What a process does with the checkout's files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TreeUse {
    /// Applies candidates and rolls them back: alone.
    Patch,
    /// Builds or snapshots the files as they are: beside other readers.
    Read,
}

/// The working-tree lock, held until dropped.
#[derive(Debug)]
pub struct TreeLock {
    _file: Flock<File>,
}

/// Takes the working-tree lock of the checkout at `root` for `holder` (who, for the message a
/// process refused gets), without waiting. `.fwfix/` is kept out of git first, so the lock file
/// never shows in `git status`.
pub fn lock_tree(root: &Path, holder: &str, usage: TreeUse) -> Result<TreeLock, RepoError> {
    let path = root.join(TREE_LOCK);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| RepoError::io("create", dir, e))?;
    }
    super::ensure_excluded(root, "/.fwfix/")?;
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| RepoError::io("open", &path, e))?;
    let how = match usage {
        TreeUse::Patch => FlockArg::LockExclusiveNonblock,
        TreeUse::Read => FlockArg::LockSharedNonblock,
    };
    let file = match Flock::lock(file, how) {
        Ok(locked) => locked,
        Err((_, Errno::EWOULDBLOCK)) => {
            let holder = std::fs::read_to_string(&path).unwrap_or_default();
            return Err(RepoError::TreeBusy {
                path: root.to_path_buf(),
                holder: holder.trim().to_string(),
            });
        }
        Err((_, errno)) => return Err(RepoError::io("lock", &path, errno.into())),
    };
    // Over the last holder, then cut to length: ext4 flushes a file emptied with a truncate when
    // it is closed, milliseconds on a busy disk.
    file.write_all_at(holder.as_bytes(), 0)
        .and_then(|()| file.set_len(holder.len() as u64))
        .map_err(|e| RepoError::io("write", &path, e))?;
    Ok(TreeLock { _file: file })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    // flock treats each open of the file as its own holder, as it does two processes.
    #[test]
    fn a_held_tree_is_busy_naming_its_holder_and_free_once_released() {
        let dir = tempfile::tempdir().unwrap();
        let first = lock_tree(dir.path(), "fwfix run, pid 1", TreeUse::Patch).unwrap();
        let err = lock_tree(dir.path(), "fwfix run, pid 2", TreeUse::Patch).unwrap_err();
        assert!(matches!(err, RepoError::TreeBusy { .. }), "{err:?}");
        assert!(err.to_string().contains("fwfix run, pid 1"), "{err}");
        let err = lock_tree(dir.path(), "fwfix test, pid 3", TreeUse::Read).unwrap_err();
        assert!(err.to_string().contains("fwfix run, pid 1"), "{err}");
        drop(first);
        lock_tree(dir.path(), "fwfix run, pid 2", TreeUse::Patch).unwrap();
    }

    #[test]
    fn readers_share_the_tree_and_keep_a_patching_run_out() {
        let dir = tempfile::tempdir().unwrap();
        let a = lock_tree(dir.path(), "fwfix test, pid 1", TreeUse::Read).unwrap();
        let b = lock_tree(dir.path(), "fwfix test, pid 2", TreeUse::Read).unwrap();
        let err = lock_tree(dir.path(), "fwfix run, pid 3", TreeUse::Patch).unwrap_err();
        assert!(matches!(err, RepoError::TreeBusy { .. }), "{err:?}");
        drop((a, b));
        lock_tree(dir.path(), "fwfix run, pid 3", TreeUse::Patch).unwrap();
    }
}
