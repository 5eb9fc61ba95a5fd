//! Rollback points: recording HEAD, the index and the working tree (tracked and untracked, not
//! ignored) as commits under `refs/fwfix/<run-id>/<label>`, restoring them exactly, and diffing
//! the working tree against one. Recording must not touch the working tree, the index or HEAD;
//! restoring must not touch ignored files or HEAD, and never resets, checks out or cleans.
//!
//! The snapshot commit is shaped like `git stash`'s: its tree is the working tree and its parents
//! are HEAD and a commit of the index, so `git log`, `git show` and `git stash apply` understand it.

use super::error::RepoError;
use super::files::{self, MODE_EXEC, MODE_GITLINK, MODE_LINK};
use super::large::{self, LargeFile, LargeFiles};
use super::paths;
use super::status::{self, Change, INTENT_TO_ADD};
use super::{check_name, Repo};
use git2::{Delta, DiffFormat, DiffOptions, Index, IndexEntry, IndexTime, Oid};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// A rollback point. Ids are hex so a run's checkpoint can hold it and a resumed run reload it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    pub run_id: String,
    pub label: String,
    /// `refs/fwfix/<run-id>/<label>`
    pub refname: String,
    /// The snapshot commit: tree = working tree, parents = [head, index_commit].
    pub commit: String,
    /// The commit HEAD pointed at.
    pub head: String,
    /// The branch HEAD went through (`refs/heads/...`), `None` when HEAD was detached.
    pub head_ref: Option<String>,
    pub index_commit: String,
    pub index_tree: String,
    pub worktree_tree: String,
    /// Empty directories (not ignored), which a git tree cannot hold: a rollback keeps them, or
    /// makes them again.
    #[serde(default)]
    pub empty_dirs: Vec<String>,
    /// Untracked files too large for git objects, kept aside (see `large.rs`).
    #[serde(default)]
    pub large_files: Vec<LargeFile>,
}

/// A path someone changed since a run left the tree ([`Repo::edits_since`]).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct TreeEdit {
    /// Relative to the work tree's root.
    pub path: String,
    /// `modified`, `new`, `deleted` (the working tree) or `staged` (the index).
    pub what: &'static str,
}

impl TreeEdit {
    fn new(path: &Path, what: &'static str) -> TreeEdit {
        TreeEdit {
            path: path.to_string_lossy().into_owned(),
            what,
        }
    }
}

impl std::fmt::Display for TreeEdit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.path, self.what)
    }
}

/// What a rollback changed, for the `RolledBack` event and the run's log.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RestoreReport {
    /// Files written back (deleted or modified since the snapshot).
    pub written: Vec<String>,
    /// Files removed (added since the snapshot).
    pub removed: Vec<String>,
    /// Empty directories made again.
    pub dirs_restored: Vec<String>,
    /// Whether the index had changed and was rebuilt.
    pub index_restored: bool,
}

impl RestoreReport {
    /// Nothing had changed since the snapshot.
    pub fn is_noop(&self) -> bool {
        self.written.is_empty()
            && self.removed.is_empty()
            && self.dirs_restored.is_empty()
            && !self.index_restored
    }
}

/// The index and the working tree as trees, written to the object database only.
pub(crate) struct Trees {
    pub index: Oid,
    pub worktree: Oid,
    /// Untracked files left out of `worktree` because they are kept aside instead.
    pub large: Vec<String>,
    /// Empty directories (not ignored), which `worktree` cannot hold.
    pub empty_dirs: Vec<String>,
}

/// Parsed ids of a [`Snapshot`].
pub(crate) struct SnapshotIds {
    pub commit: Oid,
    pub head: Oid,
    pub index_tree: Oid,
    pub worktree_tree: Oid,
}

const TRAILER_RUN: &str = "fwfix-run: ";
const TRAILER_LABEL: &str = "fwfix-label: ";
const TRAILER_HEAD_REF: &str = "fwfix-head-ref: ";
const TRAILER_EMPTY_DIR: &str = "fwfix-empty-dir: ";
const DETACHED: &str = "(detached)";

impl Snapshot {
    /// Reloads a snapshot from its ref, e.g. when a killed run is resumed.
    pub fn load(repo: &Repo, refname: &str) -> Result<Snapshot, RepoError> {
        let bad = |reason: &str| RepoError::BadSnapshot {
            refname: refname.to_string(),
            reason: reason.to_string(),
        };
        let reference = repo
            .git
            .find_reference(refname)
            .map_err(|e| match e.code() {
                git2::ErrorCode::NotFound => bad("no such ref"),
                _ => RepoError::git("read ref", refname, e),
            })?;
        let commit = reference
            .peel_to_commit()
            .map_err(|_| bad("it does not point at a commit"))?;
        if commit.parent_count() != 2 {
            return Err(bad(
                "the commit does not have HEAD and the index as parents",
            ));
        }
        let (head, index_commit) = match (commit.parent(0), commit.parent(1)) {
            (Ok(head), Ok(index)) => (head, index),
            _ => return Err(bad("a parent commit is missing")),
        };
        let message = commit.message_bytes();
        let message = String::from_utf8_lossy(message);
        let trailer = |key: &str| {
            message
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .map(str::to_string)
        };
        let (Some(run_id), Some(label), Some(head_ref)) = (
            trailer(TRAILER_RUN),
            trailer(TRAILER_LABEL),
            trailer(TRAILER_HEAD_REF),
        ) else {
            return Err(bad("the commit message lacks fwfix's trailers"));
        };
        Ok(Snapshot {
            run_id,
            label,
            refname: refname.to_string(),
            commit: commit.id().to_string(),
            head: head.id().to_string(),
            head_ref: (head_ref != DETACHED).then_some(head_ref),
            index_commit: index_commit.id().to_string(),
            index_tree: index_commit.tree_id().to_string(),
            worktree_tree: commit.tree_id().to_string(),
            empty_dirs: message
                .lines()
                .filter_map(|l| l.strip_prefix(TRAILER_EMPTY_DIR))
                .map(str::to_string)
                .collect(),
            large_files: message
                .lines()
                .filter_map(|l| l.strip_prefix(large::TRAILER))
                .filter_map(LargeFile::parse)
                .collect(),
        })
    }

    pub(crate) fn ids(&self) -> Result<SnapshotIds, RepoError> {
        let parse = |hex: &str| {
            Oid::from_str(hex).map_err(|_| RepoError::BadSnapshot {
                refname: self.refname.clone(),
                reason: format!("'{hex}' is not an object id"),
            })
        };
        Ok(SnapshotIds {
            commit: parse(&self.commit)?,
            head: parse(&self.head)?,
            index_tree: parse(&self.index_tree)?,
            worktree_tree: parse(&self.worktree_tree)?,
        })
    }
}

/// The one command that applies the changes a tree set aside ([`Repo::set_aside`] under
/// `refname`) holds over its run's snapshot to the work tree again: only those changes, all or
/// nothing, refused (touching nothing) where the tree has moved on, as `git apply` does.
pub fn set_aside_command(refname: &str) -> String {
    format!("git diff-tree -r -p --binary --no-commit-id {refname} | git apply")
}

/// Whether `refname` is a tree a resume set aside (`refs/fwfix/<run-id>/left-<n>`): what
/// differed from the run's snapshot of the owner's work when it was resumed. Unlike rollback
/// points these hold work nothing else keeps, so they outlive the run and its pruning.
fn is_set_aside(refname: &str) -> bool {
    refname
        .rsplit('/')
        .next()
        .is_some_and(|label| label.starts_with("left-"))
}

impl Repo {
    /// Whether a rollback point can be recorded now: HEAD has a commit and the index has no
    /// unresolved conflicts. Only reads. A command checks it before it creates anything, so a
    /// repository fwfix cannot protect is refused up front rather than half-way into a run.
    pub fn check_snapshot_ready(&self) -> Result<(), RepoError> {
        self.head()?;
        self.check_no_conflicts(&self.open_index()?)
    }

    fn open_index(&self) -> Result<Index, RepoError> {
        let mut index = self.git.index().map_err(|e| self.err("open index", e))?;
        index.read(false).map_err(|e| self.err("read index", e))?;
        Ok(index)
    }

    fn check_no_conflicts(&self, index: &Index) -> Result<(), RepoError> {
        if index.has_conflicts() {
            return Err(RepoError::IndexConflicts {
                path: self.workdir.clone(),
            });
        }
        Ok(())
    }

    /// Records a rollback point `refs/fwfix/<run_id>/<label>` (`base` before the first patch,
    /// `iter-NNN` per iteration). HEAD must have a commit. The working tree, the index and HEAD
    /// are only read; new objects go to the object database.
    pub fn snapshot(&self, run_id: &str, label: &str) -> Result<Snapshot, RepoError> {
        self.check_state()?;
        check_name("run id", run_id)?;
        check_name("snapshot label", label)?;
        let refname = format!("refs/fwfix/{run_id}/{label}");
        if self.git.find_reference(&refname).is_ok() {
            return Err(RepoError::SnapshotExists { refname });
        }
        let (head, head_ref) = self.head()?;
        let mut trees = self.capture_trees()?;
        let empty_dirs = std::mem::take(&mut trees.empty_dirs);
        let large_files = match &self.large {
            Some(large) => trees
                .large
                .iter()
                .map(|path| large.keep(&self.workdir, path))
                .collect::<Result<Vec<_>, _>>()?,
            None => Vec::new(),
        };
        let sig = self.signature()?;
        let head_commit = self
            .git
            .find_commit(head)
            .map_err(|e| self.err("read HEAD commit", e))?;
        let index_tree = self
            .git
            .find_tree(trees.index)
            .map_err(|e| self.err("read index tree", e))?;
        let index_commit = self
            .git
            .commit(
                None,
                &sig,
                &sig,
                &format!("fwfix index of run {run_id} at {label}\n"),
                &index_tree,
                &[&head_commit],
            )
            .and_then(|id| self.git.find_commit(id))
            .map_err(|e| self.err("commit index snapshot", e))?;
        let worktree_tree = self
            .git
            .find_tree(trees.worktree)
            .map_err(|e| self.err("read working tree snapshot", e))?;
        let mut message = format!(
            "fwfix snapshot {label} of run {run_id}\n\n\
             The working tree (tracked and untracked, not ignored) when fwfix run {run_id}\n\
             took rollback point {label}. Parents: HEAD, then the index.\n\n\
             {TRAILER_RUN}{run_id}\n{TRAILER_LABEL}{label}\n{TRAILER_HEAD_REF}{}\n",
            head_ref.as_deref().unwrap_or(DETACHED)
        );
        for dir in &empty_dirs {
            message.push_str(&format!("{TRAILER_EMPTY_DIR}{dir}\n"));
        }
        for file in &large_files {
            message.push_str(&format!("{}\n", file.trailer()));
        }
        let commit = self
            .git
            .commit(
                None,
                &sig,
                &sig,
                &message,
                &worktree_tree,
                &[&head_commit, &index_commit],
            )
            .map_err(|e| self.err("commit snapshot", e))?;
        self.create_ref(&refname, commit, "fwfix: rollback point")?;
        Ok(Snapshot {
            run_id: run_id.to_string(),
            label: label.to_string(),
            refname,
            commit: commit.to_string(),
            head: head.to_string(),
            head_ref,
            index_commit: index_commit.id().to_string(),
            index_tree: trees.index.to_string(),
            worktree_tree: trees.worktree.to_string(),
            empty_dirs,
            large_files,
        })
    }

    /// Rolls the working tree and the index back to `snap`: files added since are removed,
    /// deleted ones come back, modified ones get their bytes and mode back, directories left empty
    /// are pruned (those that were empty at the snapshot are kept, or made again). Ignored files
    /// are never touched. Refuses, touching nothing, when HEAD moved.
    /// Safe to run twice, and to re-run after an interruption.
    pub fn restore(&self, snap: &Snapshot) -> Result<RestoreReport, RepoError> {
        self.check_state()?;
        let ids = snap.ids()?;
        let target = self
            .git
            .find_tree(ids.worktree_tree)
            .map_err(|e| RepoError::git("read snapshot tree", &snap.refname, e))?;
        let index_tree = self
            .git
            .find_tree(ids.index_tree)
            .map_err(|e| RepoError::git("read snapshot index tree", &snap.refname, e))?;
        self.check_head_unmoved(snap, &ids)?;

        let current = self.capture_trees()?;
        let mut report = RestoreReport::default();
        // Only names a patch could also have used: a hand-edited checkpoint cannot point outside.
        let empty_dirs: Vec<(&String, PathBuf)> = snap
            .empty_dirs
            .iter()
            .filter(|d| paths::check_path(d.as_bytes()).is_ok())
            .map(|d| (d, self.workdir.join(d)))
            .collect();
        let keep: BTreeSet<PathBuf> = empty_dirs.iter().map(|(_, full)| full.clone()).collect();
        if current.worktree != ids.worktree_tree {
            let now = self
                .git
                .find_tree(current.worktree)
                .map_err(|e| self.err("read working tree", e))?;
            let diff = self
                .git
                .diff_tree_to_tree(Some(&now), Some(&target), None)
                .map_err(|e| self.err("compare working tree with snapshot", e))?;
            let mut writes = Vec::new();
            for delta in diff.deltas() {
                match delta.status() {
                    Delta::Deleted => {
                        let path = delta.old_file().path_bytes().unwrap_or_default();
                        if delta.old_file().mode() != git2::FileMode::Commit {
                            files::remove_and_prune(
                                &self.workdir,
                                &files::join(&self.workdir, path),
                                &keep,
                            )?;
                            report
                                .removed
                                .push(String::from_utf8_lossy(path).into_owned());
                        }
                    }
                    _ => {
                        let new = delta.new_file();
                        writes.push((
                            new.path_bytes().unwrap_or_default().to_vec(),
                            new.id(),
                            u32::from(new.mode()),
                        ));
                    }
                }
            }
            // Removals first: a file may come back where a directory the patch made used to be.
            for (path, id, mode) in writes {
                if mode == MODE_GITLINK {
                    continue;
                }
                let text = String::from_utf8_lossy(&path).into_owned();
                // Whatever made a symlink where the snapshot has a directory must not redirect
                // the rollback's writes.
                paths::check_no_symlink_parent(&self.workdir, &text).map_err(|reason| {
                    RepoError::UnsafePath {
                        path: text.clone(),
                        reason,
                    }
                })?;
                let blob = self
                    .git
                    .find_blob(id)
                    .map_err(|e| RepoError::git("read snapshot file", &snap.refname, e))?;
                files::write_atomically(&files::join(&self.workdir, &path), blob.content(), mode)?;
                report.written.push(text);
            }
        }
        self.restore_large(snap, &current.large, &target, &keep, &mut report)?;
        for (dir, full) in &empty_dirs {
            if std::fs::symlink_metadata(full).is_err() {
                std::fs::create_dir_all(full)
                    .map_err(|e| RepoError::io("create directory", full, e))?;
                report.dirs_restored.push((*dir).clone());
            }
        }
        // The index last: an interrupted restore leaves it as the run left it, and re-running
        // recomputes everything from the files.
        if current.index != ids.index_tree {
            let mut index = self.git.index().map_err(|e| self.err("open index", e))?;
            index
                .read(true)
                .and_then(|()| index.read_tree(&index_tree))
                .and_then(|()| index.write())
                .map_err(|e| self.err("write index", e))?;
            report.index_restored = true;
        }
        Ok(report)
    }

    /// Commits the working tree as it is now under `refs/fwfix/<run-id>/<label>` (a tree a
    /// resume sets aside), its one parent the run's snapshot `base`, so that the commit's diff
    /// is exactly what changed since `base` and [`set_aside_command`] applies it again. Untracked
    /// files are in it, large ones too (in git objects: this is a person's work, and nothing
    /// else keeps it), but for the large files `base` kept aside that are still intact, which
    /// are in neither tree. Only reads the tree. Returns the ref.
    pub fn set_aside(
        &self,
        base: &Snapshot,
        label: &str,
        message: &str,
    ) -> Result<String, RepoError> {
        self.check_state()?;
        check_name("snapshot label", label)?;
        let ids = base.ids()?;
        let refname = format!("refs/fwfix/{}/{label}", base.run_id);
        let trees = self.capture_trees()?;
        let captured = self
            .git
            .find_tree(trees.worktree)
            .map_err(|e| self.err("read working tree", e))?;
        let mut updates = git2::build::TreeUpdateBuilder::new();
        let mut added = false;
        for path in &trees.large {
            if let Some(kept) = base.large_files.iter().find(|f| f.path == *path) {
                if LargeFiles::intact(&self.workdir, kept)? {
                    continue;
                }
            }
            let full = files::join(&self.workdir, path.as_bytes());
            if let Some((content, mode)) = files::read_entry(&full)? {
                let id = self
                    .git
                    .blob(&content)
                    .map_err(|e| self.err("store file content", e))?;
                updates.upsert(Path::new(path), id, blob_mode(mode));
                added = true;
            }
        }
        let tree_id = if added {
            updates
                .create_updated(&self.git, &captured)
                .map_err(|e| self.err("write working tree", e))?
        } else {
            captured.id()
        };
        let tree = self
            .git
            .find_tree(tree_id)
            .map_err(|e| self.err("read working tree", e))?;
        let parent = self
            .git
            .find_commit(ids.commit)
            .map_err(|e| RepoError::git("read snapshot", &base.refname, e))?;
        let sig = self.signature()?;
        let commit = self
            .git
            .commit(None, &sig, &sig, message, &tree, &[&parent])
            .map_err(|e| self.err("commit the tree set aside", e))?;
        self.create_ref(&refname, commit, "fwfix: tree set aside")?;
        Ok(refname)
    }

    /// Points the new ref `refname` at `commit`; one that exists already is never moved.
    fn create_ref(&self, refname: &str, commit: git2::Oid, log: &str) -> Result<(), RepoError> {
        self.git
            .reference(refname, commit, false, log)
            .map(drop)
            .map_err(|e| match e.code() {
                git2::ErrorCode::Exists => RepoError::SnapshotExists {
                    refname: refname.to_string(),
                },
                _ => RepoError::git("create ref", refname, e),
            })
    }

    /// Removes every rollback point of run `run_id` (`refs/fwfix/<run-id>/*`), once the run can
    /// no longer be resumed: the files they hold (untracked ones included) are no longer kept
    /// by fwfix, and git's garbage collection can drop them. Trees set aside on resume
    /// ([`is_set_aside`]) stay: they are nobody's copy but theirs. Returns the refs removed.
    pub fn remove_snapshots(&self, run_id: &str) -> Result<Vec<String>, RepoError> {
        let names = self.snapshot_refs(run_id)?;
        for name in &names {
            let mut reference = self
                .git
                .find_reference(name)
                .map_err(|e| RepoError::git("read ref", name, e))?;
            reference
                .delete()
                .map_err(|e| RepoError::git("delete ref", name, e))?;
        }
        Ok(names)
    }

    /// The rollback points of run `run_id`: `refs/fwfix/<run-id>/*`, but for the trees its
    /// resumes set aside.
    pub fn snapshot_refs(&self, run_id: &str) -> Result<Vec<String>, RepoError> {
        check_name("run id", run_id)?;
        let mut names = self.refs_matching(&format!("refs/fwfix/{run_id}/*"))?;
        names.retain(|name| !is_set_aside(name));
        Ok(names)
    }

    /// The trees the resumes of run `run_id` set aside: `refs/fwfix/<run-id>/left-*`.
    pub fn set_aside_refs(&self, run_id: &str) -> Result<Vec<String>, RepoError> {
        check_name("run id", run_id)?;
        self.refs_matching(&format!("refs/fwfix/{run_id}/left-*"))
    }

    /// The ids of the runs that have rollback points in this repository.
    pub fn snapshot_runs(&self) -> Result<Vec<String>, RepoError> {
        let mut ids: Vec<String> = self
            .refs_matching("refs/fwfix/*")?
            .iter()
            .filter(|name| !is_set_aside(name))
            .filter_map(|name| name.strip_prefix("refs/fwfix/")?.split('/').next())
            .map(str::to_string)
            .collect();
        ids.dedup();
        Ok(ids)
    }

    fn refs_matching(&self, glob: &str) -> Result<Vec<String>, RepoError> {
        let mut names: Vec<String> = self
            .git
            .references_glob(glob)
            .map_err(|e| RepoError::git("list refs", glob, e))?
            .names()
            .filter_map(|name| name.ok().map(str::to_string))
            .collect();
        names.sort();
        Ok(names)
    }

    /// The large untracked files of a rollback: the snapshot's put back where they changed or
    /// went, and those made since (nowhere in the snapshot) removed, as for any file.
    fn restore_large(
        &self,
        snap: &Snapshot,
        now: &[String],
        target: &git2::Tree<'_>,
        keep: &BTreeSet<PathBuf>,
        report: &mut RestoreReport,
    ) -> Result<(), RepoError> {
        if snap.large_files.is_empty() && now.is_empty() {
            return Ok(());
        }
        let large = self.large_store(snap)?;
        for file in &snap.large_files {
            // Only names a patch could also have used: a hand-edited ref cannot point outside.
            if paths::check_path(file.path.as_bytes()).is_err()
                || LargeFiles::intact(&self.workdir, file)?
            {
                continue;
            }
            paths::check_no_symlink_parent(&self.workdir, &file.path).map_err(|reason| {
                RepoError::UnsafePath {
                    path: file.path.clone(),
                    reason,
                }
            })?;
            large.put_back(&self.workdir, file)?;
            report.written.push(file.path.clone());
        }
        for path in now {
            let recorded = snap.large_files.iter().any(|f| f.path == *path);
            if !recorded && target.get_path(Path::new(path)).is_err() {
                files::remove_and_prune(&self.workdir, &self.workdir.join(path), keep)?;
                report.removed.push(path.clone());
            }
        }
        Ok(())
    }

    /// Where `snap`'s large untracked files were kept aside: this handle's store.
    pub(super) fn large_store(&self, snap: &Snapshot) -> Result<&LargeFiles, RepoError> {
        self.large.as_ref().ok_or_else(|| RepoError::BadSnapshot {
            refname: snap.refname.clone(),
            reason: "its large untracked files were kept aside, and this repository was not \
                     told where"
                .to_string(),
        })
    }

    /// Refuses with [`RepoError::HeadMoved`] when HEAD is not where `snap` recorded it.
    fn check_head_unmoved(&self, snap: &Snapshot, ids: &SnapshotIds) -> Result<(), RepoError> {
        let found = match self.head() {
            Ok((oid, branch)) if oid == ids.head && branch == snap.head_ref => None,
            Ok((oid, branch)) => Some(format!(
                "{oid} on {}",
                branch.as_deref().unwrap_or(DETACHED)
            )),
            Err(RepoError::UnbornHead { .. }) => Some("no commit".to_string()),
            Err(e) => return Err(e),
        };
        if let Some(found) = found {
            return Err(RepoError::HeadMoved {
                refname: snap.refname.clone(),
                expected: format!(
                    "{} on {}",
                    snap.head,
                    snap.head_ref.as_deref().unwrap_or(DETACHED)
                ),
                found,
            });
        }
        Ok(())
    }

    /// What someone else changed since a run left the tree as `snap` holds it — with
    /// `candidate` applied, when the run was killed with its candidate in the tree: every path
    /// of the working tree whose content is neither the snapshot's nor the candidate's (a kill
    /// can leave a candidate half applied or half rolled back, file by file), and every path
    /// whose index entry changed (fwfix never stages anything), in path order. Only reads.
    /// Refuses when HEAD moved.
    pub fn edits_since(
        &self,
        snap: &Snapshot,
        candidate: Option<&[u8]>,
    ) -> Result<Vec<TreeEdit>, RepoError> {
        let ids = snap.ids()?;
        self.check_head_unmoved(snap, &ids)?;
        let current = self.capture_trees()?;
        let mut edits = BTreeSet::new();
        if current.worktree != ids.worktree_tree {
            let tree = |id: Oid| {
                self.git
                    .find_tree(id)
                    .map_err(|e| RepoError::git("read snapshot tree", &snap.refname, e))
            };
            let left = tree(ids.worktree_tree)?;
            let now = tree(current.worktree)?;
            // A candidate that no longer applies to the snapshot cannot explain anything.
            let patched = match candidate.map(|diff| self.patched_tree(&left, diff)) {
                Some(Ok(id)) => Some(tree(id)?),
                Some(Err(_)) | None => None,
            };
            let diff = self
                .git
                .diff_tree_to_tree(Some(&left), Some(&now), None)
                .map_err(|e| self.err("compare working tree with snapshot", e))?;
            for delta in diff.deltas() {
                let (file, what) = match delta.status() {
                    Delta::Added => (delta.new_file(), "new"),
                    Delta::Deleted => (delta.old_file(), "deleted"),
                    _ => (delta.new_file(), "modified"),
                };
                let Some(path) = file.path() else { continue };
                let content = (delta.status() != Delta::Deleted)
                    .then(|| (delta.new_file().id(), u32::from(delta.new_file().mode())));
                let the_candidates = patched.as_ref().is_some_and(|p| {
                    let entry = p.get_path(path).ok();
                    entry.map(|e| (e.id(), u32::try_from(e.filemode()).unwrap_or(0))) == content
                });
                if !the_candidates {
                    edits.insert(TreeEdit::new(path, what));
                }
            }
        }
        for file in &snap.large_files {
            if !LargeFiles::intact(&self.workdir, file)? {
                let gone = std::fs::symlink_metadata(self.workdir.join(&file.path)).is_err();
                let what = if gone { "deleted" } else { "modified" };
                edits.insert(TreeEdit::new(Path::new(&file.path), what));
            }
        }
        for path in &current.large {
            if !snap.large_files.iter().any(|f| f.path == *path) {
                edits.insert(TreeEdit::new(Path::new(path), "new"));
            }
        }
        if current.index != ids.index_tree {
            let tree = |id: Oid| {
                self.git
                    .find_tree(id)
                    .map_err(|e| self.err("read index tree", e))
            };
            let (left, now) = (tree(ids.index_tree)?, tree(current.index)?);
            let diff = self
                .git
                .diff_tree_to_tree(Some(&left), Some(&now), None)
                .map_err(|e| self.err("compare index with snapshot", e))?;
            for delta in diff.deltas() {
                let file = match delta.status() {
                    Delta::Deleted => delta.old_file(),
                    _ => delta.new_file(),
                };
                if let Some(path) = file.path() {
                    edits.insert(TreeEdit::new(path, "staged"));
                }
            }
        }
        Ok(edits.into_iter().collect())
    }

    /// A unified diff (`a/` and `b/` prefixes, binary files included) from the snapshot's working
    /// tree to the current one, untracked files included: what an external agent changed.
    pub fn diff_since(&self, snap: &Snapshot) -> Result<String, RepoError> {
        String::from_utf8(self.diff_since_bytes(snap)?).map_err(|_| RepoError::DiffNotUtf8 {
            refname: snap.refname.clone(),
        })
    }

    /// [`Repo::diff_since`] as bytes, for files that are not UTF-8.
    pub fn diff_since_bytes(&self, snap: &Snapshot) -> Result<Vec<u8>, RepoError> {
        let ids = snap.ids()?;
        let old = self
            .git
            .find_tree(ids.worktree_tree)
            .map_err(|e| RepoError::git("read snapshot tree", &snap.refname, e))?;
        let current = self.capture_trees()?;
        let new = self
            .git
            .find_tree(current.worktree)
            .map_err(|e| self.err("read working tree", e))?;
        let mut opts = DiffOptions::new();
        opts.show_binary(true);
        let diff = self
            .git
            .diff_tree_to_tree(Some(&old), Some(&new), Some(&mut opts))
            .map_err(|e| self.err("diff working tree", e))?;
        patch_bytes(&diff).map_err(|e| self.err("format diff", e))
    }

    /// Writes the index and the working tree as trees, without touching either: the index is
    /// copied into an in-memory one, and the working tree is that copy updated with what
    /// `git status` reports changed, new (untracked, not ignored) or deleted.
    pub(crate) fn capture_trees(&self) -> Result<Trees, RepoError> {
        let index = self.open_index()?;
        self.check_no_conflicts(&index)?;
        // The index's tree: git keeps its subtrees' ids cached in the index file (the
        // cache-tree extension), so this rewrites only what was staged since. It is read from a
        // copy of the index of its own: the repository's index object must not take the cache
        // in, or the next write of the index would not give the person's bytes back. Entries
        // added with `git add -N` hold no content yet and are left out, as `git stash` does.
        let has_intent_to_add = index
            .iter()
            .any(|entry| entry.flags_extended & INTENT_TO_ADD != 0);
        let own_copy = Index::open(&self.git.path().join("index"))
            .ok()
            .filter(|copy| !has_intent_to_add && copy.len() == index.len());
        let index_tree = match own_copy {
            Some(mut copy) => copy.write_tree_to(&self.git),
            None => {
                let mut staged = Index::new().map_err(|e| self.err("create in-memory index", e))?;
                for entry in index.iter() {
                    if entry.flags_extended & INTENT_TO_ADD == 0 {
                        staged
                            .add(&entry)
                            .map_err(|e| self.err("copy index entry", e))?;
                    }
                }
                staged.write_tree_to(&self.git)
            }
        }
        .map_err(|e| self.err("write index tree", e))?;

        let filemode = self
            .git
            .config()
            .and_then(|c| c.get_bool("core.filemode"))
            .unwrap_or(true);
        let found = status::scan(&self.git, &self.workdir, &index, filemode)?;
        let base = self
            .git
            .find_tree(index_tree)
            .map_err(|e| self.err("read index tree", e))?;
        // The working tree's tree is the index's with only the paths status names as dirty
        // rewritten: the subtrees nobody touched keep their ids, whatever the tree's size.
        // Removals and writes go in two passes: libgit2 refuses a file and a directory of one
        // name in one update (a file the person turned into a directory, or back).
        let mut removals = git2::build::TreeUpdateBuilder::new();
        let mut updates = git2::build::TreeUpdateBuilder::new();
        let remove_from = |removals: &mut git2::build::TreeUpdateBuilder, path: &[u8]| {
            let path = Path::new(OsStr::from_bytes(path));
            if base.get_path(path).is_ok() {
                removals.remove(path);
            }
        };
        let mut changed = Vec::new();
        let mut large = Vec::new();
        for (path, change) in found.changes {
            match change {
                Change::Deleted => remove_from(&mut removals, &path),
                Change::New | Change::Modified => {
                    if let (Change::New, Some(aside)) = (change, &self.large) {
                        let full = files::join(&self.workdir, &path);
                        if std::fs::symlink_metadata(&full).is_ok_and(|m| aside.takes(&path, &m)) {
                            large.push(String::from_utf8_lossy(&path).into_owned());
                            continue;
                        }
                    }
                    changed.push(path);
                }
            }
        }
        for path in changed {
            match files::read_entry(&files::join(&self.workdir, &path))? {
                Some((content, mode)) => {
                    let recorded = index.get_path(Path::new(OsStr::from_bytes(&path)), 0);
                    let mode =
                        recorded.map_or(mode, |old| status::kept_mode(mode, old.mode, filemode));
                    let id = self
                        .git
                        .blob(&content)
                        .map_err(|e| self.err("store file content", e))?;
                    updates.upsert(Path::new(OsStr::from_bytes(&path)), id, blob_mode(mode));
                }
                None => remove_from(&mut removals, &path),
            }
        }
        let worktree = removals
            .create_updated(&self.git, &base)
            .and_then(|id| self.git.find_tree(id))
            .and_then(|removed| updates.create_updated(&self.git, &removed))
            .map_err(|e| self.err("write working tree", e))?;
        Ok(Trees {
            index: index_tree,
            worktree,
            large,
            empty_dirs: found.empty_dirs,
        })
    }
}

/// The tree mode of a file read from the working tree (its mode as [`files::read_entry`] gives it).
fn blob_mode(mode: u32) -> git2::FileMode {
    match mode {
        MODE_EXEC => git2::FileMode::BlobExecutable,
        MODE_LINK => git2::FileMode::Link,
        _ => git2::FileMode::Blob,
    }
}

/// An index entry for content that exists only as a blob: no stat data, which is fine for an
/// in-memory index that only becomes a tree.
pub(crate) fn entry(path: Vec<u8>, id: Oid, mode: u32, size: u32) -> IndexEntry {
    let flags = u16::try_from(path.len().min(0xfff)).unwrap_or(0xfff);
    IndexEntry {
        ctime: IndexTime::new(0, 0),
        mtime: IndexTime::new(0, 0),
        dev: 0,
        ino: 0,
        mode,
        uid: 0,
        gid: 0,
        file_size: size,
        id,
        flags,
        flags_extended: 0,
        path,
    }
}

/// A diff as unified-diff text (`a/` and `b/` prefixes), as `git diff` prints it.
pub(super) fn patch_bytes(diff: &git2::Diff<'_>) -> Result<Vec<u8>, git2::Error> {
    let mut out = Vec::new();
    diff.print(DiffFormat::Patch, |_, _, line| {
        if matches!(line.origin(), '+' | '-' | ' ') {
            out.push(line.origin() as u8);
        }
        out.extend_from_slice(line.content());
        true
    })?;
    Ok(out)
}
