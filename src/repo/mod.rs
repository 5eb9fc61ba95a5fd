//! The firmware repository through git2: snapshots, rollback, patch apply, worktrees, fix branch.
