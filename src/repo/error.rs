//! `RepoError`: everything that can go wrong while fwfix touches the user's repository, with the
//! path, ref or hunk involved in fields, and whose fault it was (the patch's, or the environment's).
//! It must not decide what the run does next; it only says enough for the machine to decide.

use crate::machine::ErrorClass;
use std::fmt;
use std::path::PathBuf;

/// Why a path in a patch was refused before anything was touched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnsafeReason {
    /// The path is not valid UTF-8.
    NotUtf8,
    /// The path is empty.
    Empty,
    /// The path starts at the file-system root (or a drive).
    Absolute,
    /// A `..` component would leave the repository.
    ParentDir,
    /// A `.git` component (any case, or an alias of it) would write into git's own data.
    InsideGitDir,
    /// An empty or `.` component: not a path git would ever produce.
    OddComponent,
    /// A parent directory in the working tree is a symlink, so the write could land anywhere.
    ThroughSymlink { link: String },
    /// The path is ignored by git and not tracked (a build output, `.fwfix/`): a rollback could
    /// not bring it back, so a patch must not write it.
    Ignored,
}

impl fmt::Display for UnsafeReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UnsafeReason::NotUtf8 => f.write_str("the path is not valid UTF-8"),
            UnsafeReason::Empty => f.write_str("the path is empty"),
            UnsafeReason::Absolute => f.write_str("the path is absolute"),
            UnsafeReason::ParentDir => f.write_str("the path contains '..'"),
            UnsafeReason::InsideGitDir => f.write_str("the path is inside a .git directory"),
            UnsafeReason::OddComponent => f.write_str("the path has an empty or '.' component"),
            UnsafeReason::ThroughSymlink { link } => {
                write!(
                    f,
                    "the path goes through the symlink '{link}' in the working tree"
                )
            }
            UnsafeReason::Ignored => f.write_str(
                "the path is ignored by git and not tracked, so a rollback could not restore it",
            ),
        }
    }
}

/// Whose fault an error is: it decides between "feed it back to analysis" and "stop or retry".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The patch is wrong, unsafe or stale: try another one.
    Patch,
    /// The repository or the machine is not in a state fwfix can work with.
    Environment,
}

#[derive(Debug, thiserror::Error)]
pub enum RepoError {
    #[error("{path}: not inside a git repository (fwfix needs one to snapshot and roll back)")]
    NotARepository { path: PathBuf },

    #[error("{path}: bare repository: fwfix needs a working tree to build and patch")]
    Bare { path: PathBuf },

    #[error("{path}: a {state} is in progress; finish or abort it (git {state} --abort) first")]
    OperationInProgress { path: PathBuf, state: &'static str },

    #[error("{path}: HEAD has no commit yet; make a first commit so fwfix has something to roll back to")]
    UnbornHead { path: PathBuf },

    #[error("{path}: the index has unresolved conflicts; resolve them before running fwfix")]
    IndexConflicts { path: PathBuf },

    #[error("invalid {what} '{value}': {reason}")]
    InvalidName {
        what: &'static str,
        value: String,
        reason: &'static str,
    },

    #[error("rollback point {refname} already exists; fwfix never overwrites one")]
    SnapshotExists { refname: String },

    #[error("{refname}: not a fwfix rollback point: {reason}")]
    BadSnapshot { refname: String, reason: String },

    #[error("HEAD moved during the run (was {expected}, now {found}): someone committed or switched branch; fwfix touched nothing. Restore by hand from {refname} (git stash apply {refname}) if you need it")]
    HeadMoved {
        refname: String,
        expected: String,
        found: String,
    },

    #[error("patch refused before anything was touched: '{path}': {reason}")]
    UnsafePath { path: String, reason: UnsafeReason },

    #[error("patch could not be parsed at line {line}: {reason}")]
    PatchParse { line: usize, reason: String },

    #[error("the patch changes no file")]
    EmptyPatch,

    /// A hunk whose body has fewer lines than its header counts: the patch was cut off, or (with
    /// `ended_at`) something that is not a hunk line interrupts it.
    #[error("{file}: hunk `{header}` has {old} of {expected_old} old and {new} of {expected_new} new lines: {}", truncation(.ended_at))]
    TruncatedHunk {
        file: String,
        /// The hunk header line as written.
        header: String,
        expected_old: usize,
        expected_new: usize,
        old: usize,
        new: usize,
        /// The line (1-based) that interrupts the hunk; None when the patch simply ends.
        ended_at: Option<usize>,
    },

    #[error("{file}: hunk {hunk} did not apply: {reason}; nothing was written")]
    HunkFailed {
        file: String,
        hunk: String,
        reason: String,
    },

    #[error("{file}: {reason}; nothing was written")]
    PatchConflict { file: String, reason: String },

    #[error("the patch is already applied (it applies cleanly in reverse, first to {file}); nothing was written")]
    AlreadyApplied { file: String },

    #[error("branch {branch} already exists; fwfix does not overwrite branches")]
    BranchExists { branch: String },

    #[error("worktree {path}: {reason}")]
    Worktree { path: PathBuf, reason: String },

    #[error("{}: another fwfix process is using this working tree ({holder}); wait for it to end", path.display())]
    TreeBusy { path: PathBuf, holder: String },

    #[error("{path}: unknown revision '{spec}': no branch, tag or commit has that name")]
    UnknownRef { spec: String, path: PathBuf },

    #[error("{good} is not an ancestor of {bad} along first parents (the mainline a bisect walks); pick a good commit on the bad one's own history")]
    NotOnFirstParentLine { good: String, bad: String },

    #[error("reverting {commit} conflicts with later changes in {}; fwfix does not force a revert", paths.join(", "))]
    RevertConflict { commit: String, paths: Vec<String> },

    #[error("the diff since {refname} is not valid UTF-8 (a file with another encoding changed)")]
    DiffNotUtf8 { refname: String },

    #[error("{op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("git: {op} ({path}): {source}")]
    Git {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: git2::Error,
    },
}

fn truncation(ended_at: &Option<usize>) -> String {
    match ended_at {
        None => "the diff is truncated".to_string(),
        Some(line) => {
            format!("it ends early at line {line}, before the lines its header counts")
        }
    }
}

impl RepoError {
    /// Whether the patch is to blame (another patch may do better) or the environment is.
    pub fn fault(&self) -> Fault {
        match self {
            RepoError::UnsafePath { .. }
            | RepoError::PatchParse { .. }
            | RepoError::EmptyPatch
            | RepoError::TruncatedHunk { .. }
            | RepoError::HunkFailed { .. }
            | RepoError::PatchConflict { .. }
            | RepoError::AlreadyApplied { .. }
            | RepoError::RevertConflict { .. } => Fault::Patch,
            RepoError::NotARepository { .. }
            | RepoError::Bare { .. }
            | RepoError::OperationInProgress { .. }
            | RepoError::UnbornHead { .. }
            | RepoError::IndexConflicts { .. }
            | RepoError::InvalidName { .. }
            | RepoError::SnapshotExists { .. }
            | RepoError::BadSnapshot { .. }
            | RepoError::HeadMoved { .. }
            | RepoError::BranchExists { .. }
            | RepoError::UnknownRef { .. }
            | RepoError::NotOnFirstParentLine { .. }
            | RepoError::Worktree { .. }
            | RepoError::TreeBusy { .. }
            | RepoError::DiffNotUtf8 { .. }
            | RepoError::Io { .. }
            | RepoError::Git { .. } => Fault::Environment,
        }
    }

    pub fn is_patch_fault(&self) -> bool {
        self.fault() == Fault::Patch
    }

    /// The machine's error class for a patch's fault: an unsafe path is a policy violation, any
    /// other refusal a failed apply. Environment errors have no fixed class: the caller knows
    /// which step it was in and classifies them.
    pub fn error_class(&self) -> Option<ErrorClass> {
        match self {
            RepoError::UnsafePath { .. } => Some(ErrorClass::PolicyViolation),
            _ if self.is_patch_fault() => Some(ErrorClass::PatchApplyFailure),
            _ => None,
        }
    }

    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        RepoError::Io {
            op,
            path: path.into(),
            source,
        }
    }

    pub(crate) fn git(op: &'static str, path: impl Into<PathBuf>, source: git2::Error) -> Self {
        RepoError::Git {
            op,
            path: path.into(),
            source,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn patch_errors_are_the_patch_fault() {
        let unsafe_path = RepoError::UnsafePath {
            path: "../x".into(),
            reason: UnsafeReason::ParentDir,
        };
        assert!(unsafe_path.is_patch_fault());
        assert_eq!(unsafe_path.error_class(), Some(ErrorClass::PolicyViolation));
        let hunk = RepoError::HunkFailed {
            file: "src/a.c".into(),
            hunk: "@@ -1,3 +1,4 @@".into(),
            reason: "context not found".into(),
        };
        assert_eq!(hunk.error_class(), Some(ErrorClass::PatchApplyFailure));
        assert!(hunk.to_string().contains("@@ -1,3 +1,4 @@"));
        assert!(hunk.to_string().contains("src/a.c"));
    }

    #[test]
    fn environment_errors_have_no_patch_class() {
        let moved = RepoError::HeadMoved {
            refname: "refs/fwfix/r1/base".into(),
            expected: "aaaa".into(),
            found: "bbbb".into(),
        };
        assert_eq!(moved.fault(), Fault::Environment);
        assert_eq!(moved.error_class(), None);
        let state = RepoError::OperationInProgress {
            path: "/x".into(),
            state: "merge",
        };
        assert!(state.to_string().contains("merge is in progress"));
    }
}
