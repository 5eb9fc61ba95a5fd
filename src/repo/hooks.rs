//! The repository's own commit hooks, found and run the way `git commit` finds and runs them, so
//! a fix commit meets the checks every person's commit meets: `pre-commit` with no arguments,
//! then `commit-msg` with the path of a file holding the message (which it may edit).
//!
//! Found in `core.hooksPath` (a relative path is taken from the work tree's top, where hooks run)
//! or else in `hooks/` of the common git directory (linked worktrees share it); only executable
//! files run. A hook runs in the work tree's top with `GIT_DIR`, `GIT_INDEX_FILE` (an index file
//! holding the fix, never the person's own index) and `GIT_EDITOR=:` set as git sets them for a
//! commit made without an editor, stdin closed, its output and errors in one stream, in a process
//! group of its own that is killed at the hook's timeout. What a hook's verdict means for a run
//! is the caller's to decide.

use super::{PreparedFix, Repo, RepoError};
use crate::process::output::{self, Ended, Limits};
use crate::process::spawn_group;
use git2::{Index, Oid};
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

/// The hook git runs before it asks for a message.
pub const PRE_COMMIT: &str = "pre-commit";
/// The hook git runs on the message file.
pub const COMMIT_MSG: &str = "commit-msg";

/// What the repository has for one hook name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// An executable file: git runs it.
    Found(PathBuf),
    /// A file git ignores because it is not executable (git says so with a hint).
    NotExecutable(PathBuf),
    Missing,
}

impl Repo {
    /// The work tree's own git directory (`.git`, or `.git/worktrees/<name>` for a linked
    /// worktree): what git exports as `GIT_DIR` to a hook.
    pub fn git_dir(&self) -> &Path {
        self.git.path()
    }

    /// Where git looks for hooks: `core.hooksPath`, else the common git directory's `hooks/`.
    pub fn hooks_dir(&self) -> Result<PathBuf, RepoError> {
        let config = self.git.config().map_err(|e| self.err("read config", e))?;
        match config.get_path("core.hooksPath") {
            Ok(path) if path.is_absolute() => Ok(path),
            Ok(path) => Ok(self.workdir.join(path)),
            Err(e) if e.code() == git2::ErrorCode::NotFound => {
                Ok(self.git.commondir().join("hooks"))
            }
            Err(e) => Err(self.err("read core.hooksPath", e)),
        }
    }

    /// The hook `name` as git would find it.
    pub fn find_hook(&self, name: &str) -> Result<Lookup, RepoError> {
        let path = self.hooks_dir()?.join(name);
        // Followed like git follows it: a link to an executable is a hook.
        if !std::fs::metadata(&path).is_ok_and(|m| m.is_file()) {
            return Ok(Lookup::Missing);
        }
        let executable = nix::unistd::access(&path, nix::unistd::AccessFlags::X_OK).is_ok();
        Ok(if executable {
            Lookup::Found(path)
        } else {
            Lookup::NotExecutable(path)
        })
    }

    /// The tree a hook is given staged for `prepared`: the fix commit's own tree when this work
    /// tree's HEAD is its parent; in a run's linked worktree, whose HEAD is a snapshot of the
    /// owner's tree, the fix on that HEAD, so that the staged changes are the fix and nothing
    /// else, as they are against the commit's parent.
    pub fn staged_fix_tree(
        &self,
        prepared: &PreparedFix,
        diff: &[u8],
    ) -> Result<String, RepoError> {
        let (head, _) = self.head()?;
        if head.to_string() == prepared.parent {
            return Ok(prepared.tree.clone());
        }
        let tree = self
            .git
            .find_commit(head)
            .and_then(|c| c.tree())
            .map_err(|e| self.err("read HEAD tree", e))?;
        Ok(self
            .patched_tree(&tree, diff)
            .map_or_else(|_| prepared.tree.clone(), |id| id.to_string()))
    }

    /// Writes an index file at `path` holding exactly `tree` (hex): what a hook reads as the
    /// staged changes, without the person's own index being touched.
    pub fn write_index_file(&self, tree: &str, path: &Path) -> Result<(), RepoError> {
        let id = Oid::from_str(tree).map_err(|e| self.err("read tree id", e))?;
        let tree = self
            .git
            .find_tree(id)
            .map_err(|e| self.err("read fix tree", e))?;
        let mut index = Index::open(path).map_err(|e| RepoError::git("open index", path, e))?;
        index
            .read_tree(&tree)
            .map_err(|e| RepoError::git("fill index", path, e))?;
        index
            .write()
            .map_err(|e| RepoError::git("write index", path, e))
    }

    /// The tree (hex) an index file at `path` holds now, to tell whether a hook changed it.
    pub fn index_file_tree(&self, path: &Path) -> Result<String, RepoError> {
        let mut index = Index::open(path).map_err(|e| RepoError::git("open index", path, e))?;
        index
            .write_tree_to(&self.git)
            .map(|id| id.to_string())
            .map_err(|e| RepoError::git("read index", path, e))
    }
}

/// Where a hook runs and what it is told.
#[derive(Debug, Clone)]
pub struct HookEnv {
    /// The work tree's top: the hook's working directory.
    pub work_dir: PathBuf,
    /// `GIT_DIR`.
    pub git_dir: PathBuf,
    /// `GIT_INDEX_FILE`: the index holding the fix.
    pub index_file: PathBuf,
}

/// How a hook run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    Exited(i32),
    /// Killed by a signal it did not send itself from fwfix (e.g. the OOM killer).
    Signalled(i32),
    /// Still running at the timeout: its process group was killed.
    TimedOut(Duration),
    /// The run was stopped while the hook ran: its process group was killed.
    Interrupted,
    /// It could not be started or waited for.
    Broken(String),
}

impl fmt::Display for Ending {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ending::Exited(code) => write!(f, "exited with status {code}"),
            Ending::Signalled(signal) => write!(f, "was killed by signal {signal}"),
            Ending::TimedOut(limit) => write!(
                f,
                "did not finish within {} s ([commit] timeout_s) and was killed",
                limit.as_secs_f64()
            ),
            Ending::Interrupted => f.write_str("was stopped: the run was interrupted"),
            Ending::Broken(why) => write!(f, "could not be run: {why}"),
        }
    }
}

/// One hook run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookRun {
    /// What it printed, standard output and errors interleaved as they came.
    pub output: String,
    pub ending: Ending,
    pub duration: Duration,
}

impl HookRun {
    /// Whether the hook let the commit go on.
    pub fn passed(&self) -> bool {
        self.ending == Ending::Exited(0)
    }
}

/// How long a hook stopped at its timeout gets to end after SIGTERM.
const GRACE: Duration = Duration::from_secs(2);
/// A hook's output kept in memory (the rest is read and dropped).
const OUTPUT_MAX: usize = 1 << 20;

/// Runs the hook at `hook` with `args` as git would, under `limit`.
pub async fn run(
    hook: &Path,
    args: &[&Path],
    env: &HookEnv,
    limit: Duration,
    cancel: &CancellationToken,
) -> HookRun {
    let started = Instant::now();
    // `sh` joins the two streams so the output keeps its order, then becomes the hook itself
    // (and runs it as a script when it has no `#!`, as git does).
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg("exec 2>&1; exec \"$0\" \"$@\"")
        .arg(hook)
        .args(args)
        .current_dir(&env.work_dir)
        .env("GIT_DIR", &env.git_dir)
        .env("GIT_INDEX_FILE", &env.index_file)
        .env("GIT_EDITOR", ":")
        .env_remove("GIT_WORK_TREE")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let (mut child, mut guard) = match spawn_group(&mut command) {
        Ok(spawned) => spawned,
        Err(e) => {
            return HookRun {
                output: String::new(),
                ending: Ending::Broken(format!("cannot start sh: {e}")),
                duration: started.elapsed(),
            }
        }
    };
    // Read as it comes, so a hook stopped at its timeout still says what it was doing.
    let limits = Limits {
        timeout: limit,
        cancel: Some(cancel),
        term_grace: GRACE,
    };
    let captured = output::capture(&mut child, &mut guard, limits, OUTPUT_MAX).await;
    let ending = match captured.ended {
        Ended::Cancelled => Ending::Interrupted,
        Ended::TimedOut => Ending::TimedOut(limit),
        Ended::WaitFailed(e) => Ending::Broken(format!("cannot wait: {e}")),
        Ended::Exited(status) => {
            use std::os::unix::process::ExitStatusExt;
            match (status.code(), status.signal()) {
                (Some(code), _) => Ending::Exited(code),
                (None, Some(signal)) => Ending::Signalled(signal),
                (None, None) => Ending::Broken(format!("ended with {status}")),
            }
        }
    };
    let output = String::from_utf8_lossy(&captured.stdout).into_owned();
    HookRun {
        output,
        ending,
        duration: started.elapsed(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repo::test_support::git;
    use std::os::unix::fs::PermissionsExt;

    fn write_hook(dir: &Path, name: &str, body: &str, mode: u32) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, body).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    #[test]
    fn hooks_come_from_the_git_dir_or_core_hooks_path_and_must_be_executable() {
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "-q"]);
        let repo = Repo::open(dir.path()).unwrap();
        assert_eq!(repo.find_hook(PRE_COMMIT).unwrap(), Lookup::Missing);
        let default_dir = repo.git_dir().join("hooks");
        let hook = write_hook(&default_dir, PRE_COMMIT, "#!/bin/sh\nexit 0\n", 0o755);
        assert_eq!(repo.find_hook(PRE_COMMIT).unwrap(), Lookup::Found(hook));
        let sample = write_hook(&default_dir, COMMIT_MSG, "#!/bin/sh\nexit 1\n", 0o644);
        assert_eq!(
            repo.find_hook(COMMIT_MSG).unwrap(),
            Lookup::NotExecutable(sample)
        );
        // A relative core.hooksPath is taken from the work tree's top.
        git(dir.path(), &["config", "core.hooksPath", "ci/hooks"]);
        let repo = Repo::open(dir.path()).unwrap();
        assert_eq!(repo.hooks_dir().unwrap(), repo.workdir().join("ci/hooks"));
        assert_eq!(repo.find_hook(PRE_COMMIT).unwrap(), Lookup::Missing);
    }
}
