//! Keeping fwfix's own files (`.fwfix/`) out of git through `.git/info/exclude`, the repository's
//! private ignore file. It must never edit `.gitignore` (that is the user's, and versioned) and
//! must write nothing outside a git repository.
//!
//! What is in place stays in place for the process's life: `fwfix test` over several boards and
//! profiles locks its one tree once per job, and opening the repository to read its exclude file
//! again (about half a millisecond of a core) was a cost every job paid.

use super::error::RepoError;
use super::files::{self, MODE_FILE};
use git2::{ErrorCode, Repository};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// The directories and patterns already seen in place by this process.
static IN_PLACE: Mutex<Option<HashSet<(PathBuf, String)>>> = Mutex::new(None);

/// Adds `pattern` (e.g. `/.fwfix/`) to the exclude file of the repository containing `repo_dir`,
/// once. Uses the common git directory, so linked worktrees share it. An anchored pattern is
/// rebased when `repo_dir` is a subdirectory of the working tree. Returns `Ok(true)` when the
/// pattern is in place (added now or already there), `Ok(false)` when `repo_dir` is not in a git
/// repository (nothing is written).
pub fn ensure_excluded(repo_dir: &Path, pattern: &str) -> Result<bool, RepoError> {
    let key = (repo_dir.to_path_buf(), pattern.to_string());
    let mut seen = IN_PLACE.lock().unwrap_or_else(PoisonError::into_inner);
    if seen.as_ref().is_some_and(|seen| seen.contains(&key)) {
        return Ok(true);
    }
    let in_place = add_once(repo_dir, pattern)?;
    if in_place {
        seen.get_or_insert_with(HashSet::new).insert(key);
    }
    Ok(in_place)
}

/// [`ensure_excluded`]'s work, asked of the repository.
fn add_once(repo_dir: &Path, pattern: &str) -> Result<bool, RepoError> {
    let git = match Repository::discover(repo_dir) {
        Ok(git) => git,
        Err(e) if e.code() == ErrorCode::NotFound => return Ok(false),
        Err(e) => return Err(RepoError::git("open repository", repo_dir, e)),
    };
    let subdir = git.workdir().and_then(|workdir| {
        let workdir = std::fs::canonicalize(workdir).ok()?;
        let dir = std::fs::canonicalize(repo_dir).ok()?;
        Some(dir.strip_prefix(workdir).ok()?.to_str()?.to_string())
    });
    let pattern = anchored(pattern, subdir.as_deref().unwrap_or(""));
    let file = git.commondir().join("info").join("exclude");
    let mut content = match std::fs::read(&file) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(RepoError::io("read", &file, e)),
    };
    let present = content
        .split(|&b| b == b'\n')
        .any(|line| line.strip_suffix(b"\r").unwrap_or(line) == pattern.as_bytes());
    if present {
        return Ok(true);
    }
    if !content.is_empty() && !content.ends_with(b"\n") {
        content.push(b'\n');
    }
    content.extend_from_slice(pattern.as_bytes());
    content.push(b'\n');
    files::write_atomically(&file, &content, MODE_FILE)?;
    Ok(true)
}

/// An anchored pattern (`/x`) is relative to the working tree's root: put `subdir` in front.
fn anchored(pattern: &str, subdir: &str) -> String {
    match pattern.strip_prefix('/') {
        Some(rest) if !subdir.is_empty() => format!("/{}/{rest}", subdir.trim_matches('/')),
        _ => pattern.to_string(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn anchored_patterns_follow_the_subdirectory() {
        assert_eq!(anchored("/.fwfix/", ""), "/.fwfix/");
        assert_eq!(anchored("/.fwfix/", "fw/app"), "/fw/app/.fwfix/");
        assert_eq!(anchored("*.o", "fw"), "*.o");
    }

    // Only a pattern found in place is remembered: a directory that was no repository is asked
    // again, and written to once it is one.
    #[test]
    fn a_directory_outside_git_is_asked_again_once_it_is_a_repository() {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("fw");
        std::fs::create_dir(&tree).unwrap();
        // A tempdir may itself sit in a repository; this test needs one that does not.
        if Repository::discover(&tree).is_ok() {
            return;
        }
        assert!(!ensure_excluded(&tree, "/.fwfix/").unwrap());
        Repository::init(&tree).unwrap();
        assert!(ensure_excluded(&tree, "/.fwfix/").unwrap());
        assert!(ensure_excluded(&tree, "/.fwfix/").unwrap());
        let exclude = std::fs::read_to_string(tree.join(".git/info/exclude")).unwrap();
        assert_eq!(exclude.matches("/.fwfix/").count(), 1, "{exclude}");
    }
}
