//! Keeping fwfix's own files (`.fwfix/`) out of git through `.git/info/exclude`, the repository's
//! private ignore file. It must never edit `.gitignore` (that is the user's, and versioned) and
//! must write nothing outside a git repository.

use super::error::RepoError;
use super::files::{self, MODE_FILE};
use git2::{ErrorCode, Repository};
use std::path::Path;

/// Adds `pattern` (e.g. `/.fwfix/`) to the exclude file of the repository containing `repo_dir`,
/// once. Uses the common git directory, so linked worktrees share it. An anchored pattern is
/// rebased when `repo_dir` is a subdirectory of the working tree. Returns `Ok(true)` when the
/// pattern is in place (added now or already there), `Ok(false)` when `repo_dir` is not in a git
/// repository (nothing is written).
pub fn ensure_excluded(repo_dir: &Path, pattern: &str) -> Result<bool, RepoError> {
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
}
