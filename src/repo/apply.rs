//! Applying a candidate patch to the working tree, all or nothing, and committing the fix on its
//! own branch. Every path is checked before anything is written. libgit2 applies the patch when
//! its context matches exactly; when the context drifted, our own applier searches offsets and then
//! fuzz like GNU patch, and says per hunk what it used. This module must never apply a patch in
//! reverse, write through a symlink, write ignored files, or move the user's branch or HEAD.

use super::error::{RepoError, UnsafeReason};
use super::files::{self, MODE_FILE, MODE_LINK};
use super::hunks::{self, Placement};
use super::patch::{self, ChangeKind, FilePatch};
use super::paths;
use super::snapshot::entry;
use super::{check_name, Repo, Snapshot};
use git2::{ApplyLocation, ApplyOptions, BranchType, Delta, Diff, Index, ObjectType, Oid, Tree};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::Path;

/// How many leading and trailing context lines the fallback may ignore, as GNU patch's default.
const MAX_FUZZ: usize = 2;

/// What a patch does to one file, with its paths already checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathChange {
    pub kind: ChangeKind,
    /// `None` for an added file.
    pub old_path: Option<String>,
    /// `None` for a deleted file.
    pub new_path: Option<String>,
    pub old_mode: Option<u32>,
    pub new_mode: Option<u32>,
    pub binary: bool,
    pub added_lines: usize,
    pub removed_lines: usize,
}

impl PathChange {
    /// The path the change is known by: the new one, or the old one for a deletion.
    pub fn path(&self) -> &str {
        self.new_path
            .as_deref()
            .or(self.old_path.as_deref())
            .unwrap_or_default()
    }
}

/// Which applier succeeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApplyMethod {
    /// libgit2, context matched exactly.
    Libgit2,
    /// fwfix's own applier, with the offsets and fuzz reported per hunk.
    Fallback,
}

/// Where one hunk landed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HunkApply {
    /// `@@ -12,7 +12,8 @@`
    pub header: String,
    /// Lines away from the position in the header.
    pub offset: i64,
    /// Context lines ignored at each end.
    pub fuzz: usize,
    /// Its lines matched only with line endings ignored (an LF patch on a CRLF file); it was
    /// written with the file's endings.
    #[serde(default)]
    pub line_endings: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileApply {
    pub change: PathChange,
    pub hunks: Vec<HunkApply>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApplyReport {
    pub method: ApplyMethod,
    pub files: Vec<FileApply>,
}

impl ApplyReport {
    /// Every hunk landed where its header said, with all its context.
    pub fn is_exact(&self) -> bool {
        self.files
            .iter()
            .flat_map(|f| &f.hunks)
            .all(|h| h.offset == 0 && h.fuzz == 0 && !h.line_endings)
    }

    /// The files whose hunks matched only with line endings ignored, and so were written with
    /// the file's own endings.
    pub fn line_endings_adapted(&self) -> Vec<&str> {
        self.files
            .iter()
            .filter(|f| f.hunks.iter().any(|h| h.line_endings))
            .map(|f| f.change.path())
            .collect()
    }
}

/// Which tree the fix commit's patch was applied to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FixBase {
    /// HEAD's tree: the commit holds only the fix.
    Head,
    /// The patch needed the user's uncommitted changes, so the files it touches are taken from
    /// the snapshot's working tree (those files' uncommitted edits included) plus the fix; every
    /// other file is HEAD's.
    Snapshot,
}

/// The commit on `fwfix/<run-id>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FixCommit {
    /// Commit id, hex.
    pub commit: String,
    /// `fwfix/<run-id>`
    pub branch: String,
    pub base: FixBase,
    pub report: ApplyReport,
}

/// A fix commit's content before it is committed: its tree and parent exist as objects, nothing
/// points at them yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedFix {
    /// The fix commit's tree, hex.
    pub tree: String,
    /// Its parent: the HEAD the run started from, hex.
    pub parent: String,
    /// `fwfix/<run-id>`
    pub branch: String,
    pub base: FixBase,
    /// With [`FixBase::Snapshot`]: the files the patch touches that hold uncommitted changes
    /// (the snapshot's differ from HEAD's), which the fix commit takes with those changes in.
    pub uncommitted: Vec<String>,
    pub report: ApplyReport,
}

/// Where the fallback reads files from: the working tree, or a commit's tree.
trait Source {
    fn read(&self, path: &str) -> Result<FileState, RepoError>;
}

struct WorkdirSource<'a>(&'a Path);

impl Source for WorkdirSource<'_> {
    fn read(&self, path: &str) -> Result<FileState, RepoError> {
        files::read_entry(&files::join(self.0, path.as_bytes()))
    }
}

struct TreeSource<'r> {
    repo: &'r git2::Repository,
    tree: &'r Tree<'r>,
}

impl Source for TreeSource<'_> {
    fn read(&self, path: &str) -> Result<FileState, RepoError> {
        let Ok(entry) = self.tree.get_path(Path::new(path)) else {
            return Ok(None);
        };
        if entry.kind() != Some(ObjectType::Blob) {
            return Ok(None);
        }
        let blob = self
            .repo
            .find_blob(entry.id())
            .map_err(|e| RepoError::git("read file from tree", path, e))?;
        let mode = u32::try_from(entry.filemode()).unwrap_or(MODE_FILE);
        Ok(Some((blob.content().to_vec(), mode)))
    }
}

/// A file's content and git mode, or `None` when it does not exist.
type FileState = Option<(Vec<u8>, u32)>;

/// The outcome of the fallback before anything is written: the final state of every touched path
/// (`None`: removed), and where each hunk landed.
struct Plan {
    results: Vec<(String, FileState)>,
    files: Vec<FileApply>,
}

impl Repo {
    /// Parses `diff` and checks every path it names, without touching anything: refuses absolute
    /// paths, `..`, anything inside `.git`, paths through a symlinked directory, non-UTF-8 paths,
    /// and ignored untracked paths (a rollback could not restore them).
    pub fn check_patch_paths(&self, diff: impl AsRef<[u8]>) -> Result<Vec<PathChange>, RepoError> {
        let patches = patch::parse(diff.as_ref())?;
        let changes = describe_all(&patches)?;
        self.check_in_workdir(&changes)?;
        Ok(changes)
    }

    /// Applies `diff` to the working tree (never the index), all or nothing: libgit2 first,
    /// then, when the context drifted, offset and fuzz search. A patch that is already applied
    /// is an error, not a silent reverse.
    pub fn apply_patch(&self, diff: impl AsRef<[u8]>) -> Result<ApplyReport, RepoError> {
        let bytes = diff.as_ref();
        self.check_state()?;
        let patches = patch::parse(bytes)?;
        let changes = describe_all(&patches)?;
        self.check_in_workdir(&changes)?;

        // libgit2's dry run does not notice an untracked file where the patch creates one (its
        // checkout then refuses); such patches go to the fallback, which reports it properly.
        let targets_free = changes
            .iter()
            .filter(|c| c.new_path.is_some() && c.new_path != c.old_path)
            .all(|c| {
                let path = files::join(&self.workdir, c.path().as_bytes());
                std::fs::symlink_metadata(path).is_err()
            });
        let parsed = libgit2_diff(bytes, &patches).filter(|_| targets_free);
        if let Some(parsed) = parsed {
            let mut dry_run = ApplyOptions::new();
            dry_run.check(true);
            if self
                .git
                .apply(&parsed, ApplyLocation::WorkDir, Some(&mut dry_run))
                .is_ok()
            {
                self.git
                    .apply(&parsed, ApplyLocation::WorkDir, None)
                    .map_err(|e| self.err("apply patch", e))?;
                return Ok(exact_report(&patches, changes));
            }
        }

        let source = WorkdirSource(&self.workdir);
        let plan = match plan(&source, &patches, &changes, 0) {
            Ok(plan) => plan,
            Err(_) => {
                // Before fuzz, which could apply an already-applied patch a second time.
                let reversed: Vec<FilePatch> =
                    patches.iter().rev().map(FilePatch::reversed).collect();
                let reversed_changes = describe_all(&reversed)?;
                if plan(&source, &reversed, &reversed_changes, 0).is_ok() {
                    return Err(RepoError::AlreadyApplied {
                        file: changes
                            .first()
                            .map(|c| c.path().to_string())
                            .unwrap_or_default(),
                    });
                }
                plan(&source, &patches, &changes, MAX_FUZZ)?
            }
        };
        for (path, result) in &plan.results {
            if result.is_none() {
                files::remove_and_prune(
                    &self.workdir,
                    &files::join(&self.workdir, path.as_bytes()),
                    &BTreeSet::new(),
                )?;
            }
        }
        for (path, result) in &plan.results {
            if let Some((content, mode)) = result {
                // Checked again just before writing: an earlier write may have made a link.
                paths::check_no_symlink_parent(&self.workdir, path).map_err(|reason| {
                    RepoError::UnsafePath {
                        path: path.clone(),
                        reason,
                    }
                })?;
                files::write_atomically(
                    &files::join(&self.workdir, path.as_bytes()),
                    content,
                    *mode,
                )?;
            }
        }
        Ok(ApplyReport {
            method: ApplyMethod::Fallback,
            files: plan.files,
        })
    }

    /// Commits `diff` on a new branch `fwfix/<run_id>` whose parent is the HEAD the run started
    /// from: [`Repo::prepare_fix`] then [`Repo::commit_prepared`], with no hook in between.
    pub fn commit_fix(
        &self,
        run_id: &str,
        base: &Snapshot,
        diff: impl AsRef<[u8]>,
        message: &str,
    ) -> Result<FixCommit, RepoError> {
        let prepared = self.prepare_fix(run_id, base, diff)?;
        self.commit_prepared(prepared, message)
    }

    /// The tree the fix commit will have, written as git objects but referenced by nothing: no
    /// commit, no branch, so a fix the commit hooks refuse leaves nothing behind to clean up. The
    /// patch is applied to HEAD's tree; when it does not apply there (it depended on uncommitted
    /// changes) it is applied to the snapshot's working tree, the commit takes from that only
    /// the files the patch touches, and the result says so. Refuses when the branch
    /// `fwfix/<run_id>` exists. The user's branch, HEAD, index and working tree are not touched.
    pub fn prepare_fix(
        &self,
        run_id: &str,
        base: &Snapshot,
        diff: impl AsRef<[u8]>,
    ) -> Result<PreparedFix, RepoError> {
        check_name("run id", run_id)?;
        let branch = format!("fwfix/{run_id}");
        if self.git.find_branch(&branch, BranchType::Local).is_ok() {
            return Err(RepoError::BranchExists { branch });
        }
        self.fix_tree(base, diff.as_ref(), branch)
    }

    /// The commit on `fwfix/<run_id>` when it already holds this fix (the fix's tree on the
    /// snapshot's HEAD), as a run stopped between committing and recording it leaves it; None
    /// when there is no such branch. A branch of that name holding anything else is refused.
    pub fn committed_fix(
        &self,
        run_id: &str,
        base: &Snapshot,
        diff: impl AsRef<[u8]>,
    ) -> Result<Option<FixCommit>, RepoError> {
        check_name("run id", run_id)?;
        let branch = format!("fwfix/{run_id}");
        let Ok(existing) = self.git.find_branch(&branch, BranchType::Local) else {
            return Ok(None);
        };
        let commit = existing
            .get()
            .peel_to_commit()
            .map_err(|e| RepoError::git("read branch", &branch, e))?;
        let prepared = self.fix_tree(base, diff.as_ref(), branch.clone())?;
        let same = commit.tree_id().to_string() == prepared.tree
            && commit.parent_count() == 1
            && commit.parent_id(0).ok().map(|id| id.to_string()) == Some(prepared.parent.clone());
        if !same {
            return Err(RepoError::BranchExists { branch });
        }
        Ok(Some(FixCommit {
            commit: commit.id().to_string(),
            branch,
            base: prepared.base,
            report: prepared.report,
        }))
    }

    /// [`Repo::prepare_fix`] without the branch check.
    fn fix_tree(
        &self,
        base: &Snapshot,
        bytes: &[u8],
        branch: String,
    ) -> Result<PreparedFix, RepoError> {
        let patches = patch::parse(bytes)?;
        let changes = describe_all(&patches)?;
        let ids = base.ids()?;
        let head = self
            .git
            .find_commit(ids.head)
            .map_err(|e| RepoError::git("read snapshot HEAD", &base.refname, e))?;
        let head_tree = head
            .tree()
            .map_err(|e| RepoError::git("read snapshot HEAD tree", &base.refname, e))?;
        let snapshot_tree = self
            .git
            .find_tree(ids.worktree_tree)
            .map_err(|e| RepoError::git("read snapshot tree", &base.refname, e))?;

        let (fix_base, tree, report) =
            match self.apply_to_tree(&head_tree, bytes, &patches, &changes, 0) {
                Ok((tree, report)) => (FixBase::Head, tree, report),
                // An unsafe path stays refused; any other misfit may be the user's uncommitted
                // changes, which only the snapshot has.
                Err(e) if e.is_patch_fault() && !matches!(e, RepoError::UnsafePath { .. }) => {
                    let (patched, report) =
                        self.apply_to_tree(&snapshot_tree, bytes, &patches, &changes, MAX_FUZZ)?;
                    let tree = self.touched_paths_only(&head_tree, patched, &changes)?;
                    (FixBase::Snapshot, tree, report)
                }
                Err(e) => return Err(e),
            };
        let uncommitted = match fix_base {
            FixBase::Head => Vec::new(),
            FixBase::Snapshot => changes
                .iter()
                .filter_map(|c| c.old_path.as_deref())
                .map(|path| {
                    let head = head_tree.get_path(Path::new(path)).ok().map(|e| e.id());
                    let ours = match snapshot_tree.get_path(Path::new(path)) {
                        Ok(found) => Some(self.as_stored(path, found.id(), found.filemode())?),
                        Err(_) => None,
                    };
                    Ok((head != ours).then(|| path.to_string()))
                })
                .collect::<Result<BTreeSet<_>, RepoError>>()?
                .into_iter()
                .flatten()
                .collect(),
        };
        Ok(PreparedFix {
            tree: tree.to_string(),
            parent: ids.head.to_string(),
            branch,
            base: fix_base,
            uncommitted,
            report,
        })
    }

    /// The blob git would store for a file of the snapshot's working tree at `path`: a snapshot
    /// keeps the bytes on disk (a CRLF checkout's CRLF), a commit what git's filters make of
    /// them (`core.autocrlf`, `eol` attributes), as `git add` would. Links and submodules are
    /// kept as they are.
    fn as_stored(&self, path: &str, id: Oid, filemode: i32) -> Result<Oid, RepoError> {
        if filemode != i32::from(git2::FileMode::Blob)
            && filemode != i32::from(git2::FileMode::BlobExecutable)
        {
            return Ok(id);
        }
        let blob = self
            .git
            .find_blob(id)
            .map_err(|e| self.err("read patched file", e))?;
        let mut writer = self
            .git
            .blob_writer(Some(Path::new(path)))
            .map_err(|e| self.err("store file content", e))?;
        std::io::Write::write_all(&mut writer, blob.content())
            .map_err(|e| RepoError::io("store file content", self.workdir.join(path), e))?;
        writer
            .commit()
            .map_err(|e| self.err("store file content", e))
    }

    /// HEAD's tree with only the paths the patch touches taken from `patched` (the snapshot's
    /// working tree with the patch applied): the user's other uncommitted and untracked files
    /// (notes, a `.env`, work in progress) never ride along in the fix commit.
    fn touched_paths_only(
        &self,
        head_tree: &Tree<'_>,
        patched: Oid,
        changes: &[PathChange],
    ) -> Result<Oid, RepoError> {
        let patched = self
            .git
            .find_tree(patched)
            .map_err(|e| self.err("read patched tree", e))?;
        let mut index = Index::new().map_err(|e| self.err("create in-memory index", e))?;
        index
            .read_tree(head_tree)
            .map_err(|e| self.err("read tree into index", e))?;
        let paths: BTreeSet<&str> = changes
            .iter()
            .flat_map(|c| [c.old_path.as_deref(), c.new_path.as_deref()])
            .flatten()
            .collect();
        for path in paths {
            match patched.get_path(Path::new(path)) {
                Ok(found) => {
                    let id = self.as_stored(path, found.id(), found.filemode())?;
                    let size = self
                        .git
                        .find_blob(id)
                        .map(|blob| u32::try_from(blob.size()).unwrap_or(u32::MAX))
                        .map_err(|e| self.err("read patched file", e))?;
                    let mode = u32::try_from(found.filemode()).unwrap_or(MODE_FILE);
                    index
                        .add(&entry(path.as_bytes().to_vec(), id, mode, size))
                        .map_err(|e| self.err("add file to tree", e))?;
                }
                // Not in the patched tree: the patch deleted or renamed it away.
                Err(_) => {
                    if index.get_path(Path::new(path), 0).is_some() {
                        index
                            .remove(Path::new(path), 0)
                            .map_err(|e| self.err("remove file from tree", e))?;
                    }
                }
            }
        }
        index
            .write_tree_to(&self.git)
            .map_err(|e| self.err("write fix tree", e))
    }

    /// Commits a prepared fix with `message` and points the new branch `fwfix/<run-id>` at it.
    pub fn commit_prepared(
        &self,
        prepared: PreparedFix,
        message: &str,
    ) -> Result<FixCommit, RepoError> {
        let PreparedFix {
            tree,
            parent,
            branch,
            base,
            report,
            ..
        } = prepared;
        let oid = |hex: &str| Oid::from_str(hex).map_err(|e| self.err("read prepared fix", e));
        let tree = self
            .git
            .find_tree(oid(&tree)?)
            .map_err(|e| self.err("read fix tree", e))?;
        let head = self
            .git
            .find_commit(oid(&parent)?)
            .map_err(|e| self.err("read fix parent", e))?;
        let sig = self.signature()?;
        let commit = self
            .git
            .commit(None, &sig, &sig, message, &tree, &[&head])
            .and_then(|id| self.git.find_commit(id))
            .map_err(|e| self.err("commit fix", e))?;
        self.git
            .branch(&branch, &commit, false)
            .map_err(|e| match e.code() {
                git2::ErrorCode::Exists => RepoError::BranchExists {
                    branch: branch.clone(),
                },
                _ => RepoError::git("create branch", &branch, e),
            })?;
        Ok(FixCommit {
            commit: commit.id().to_string(),
            branch,
            base,
            report,
        })
    }

    /// `tree` with `diff` applied as [`Repo::apply_patch`] would apply it to a working tree
    /// holding it, in memory only: what a run's tree held with its candidate in.
    pub(super) fn patched_tree(&self, tree: &Tree<'_>, diff: &[u8]) -> Result<Oid, RepoError> {
        let patches = patch::parse(diff)?;
        let changes = describe_all(&patches)?;
        self.apply_to_tree(tree, diff, &patches, &changes, MAX_FUZZ)
            .map(|(id, _)| id)
    }

    /// Applies the patch to `tree` in memory and writes the resulting tree.
    fn apply_to_tree(
        &self,
        tree: &Tree<'_>,
        bytes: &[u8],
        patches: &[FilePatch],
        changes: &[PathChange],
        max_fuzz: usize,
    ) -> Result<(Oid, ApplyReport), RepoError> {
        check_in_tree(tree, changes)?;
        if let Some(parsed) = libgit2_diff(bytes, patches) {
            if let Ok(mut index) = self.git.apply_to_tree(tree, &parsed, None) {
                let id = index
                    .write_tree_to(&self.git)
                    .map_err(|e| self.err("write patched tree", e))?;
                return Ok((id, exact_report(patches, changes.to_vec())));
            }
        }
        let source = TreeSource {
            repo: &self.git,
            tree,
        };
        let plan = plan(&source, patches, changes, max_fuzz)?;
        let mut index = Index::new().map_err(|e| self.err("create in-memory index", e))?;
        index
            .read_tree(tree)
            .map_err(|e| self.err("read tree into index", e))?;
        for (path, result) in &plan.results {
            match result {
                None => index
                    .remove(Path::new(path), 0)
                    .map_err(|e| self.err("remove file from tree", e))?,
                Some((content, mode)) => {
                    let id = self
                        .git
                        .blob(content)
                        .map_err(|e| self.err("store patched file", e))?;
                    let size = u32::try_from(content.len()).unwrap_or(u32::MAX);
                    index
                        .add(&entry(path.as_bytes().to_vec(), id, *mode, size))
                        .map_err(|e| self.err("add file to tree", e))?;
                }
            }
        }
        let id = index
            .write_tree_to(&self.git)
            .map_err(|e| self.err("write patched tree", e))?;
        Ok((
            id,
            ApplyReport {
                method: ApplyMethod::Fallback,
                files: plan.files,
            },
        ))
    }

    /// The checks that need the working tree: symlinked parents, ignored untracked paths.
    fn check_in_workdir(&self, changes: &[PathChange]) -> Result<(), RepoError> {
        let mut index = self.git.index().map_err(|e| self.err("open index", e))?;
        index.read(false).map_err(|e| self.err("read index", e))?;
        for path in changes
            .iter()
            .flat_map(|c| [&c.old_path, &c.new_path])
            .flatten()
        {
            let refuse = |reason| RepoError::UnsafePath {
                path: path.clone(),
                reason,
            };
            paths::check_no_symlink_parent(&self.workdir, path).map_err(refuse)?;
            let tracked = index.get_path(Path::new(path), 0).is_some();
            let ignored = self
                .git
                .status_should_ignore(Path::new(path))
                .map_err(|e| self.err("check ignore rules", e))?;
            if ignored && !tracked {
                return Err(refuse(UnsafeReason::Ignored));
            }
        }
        Ok(())
    }
}

/// Turns parsed file sections into checked changes: the path checks that need nothing but text.
fn describe_all(patches: &[FilePatch]) -> Result<Vec<PathChange>, RepoError> {
    let changes: Vec<PathChange> = patches.iter().map(describe).collect::<Result<_, _>>()?;
    // A symlink the patch itself creates is as dangerous a parent as one already on disk.
    let links: Vec<&str> = changes
        .iter()
        .filter(|c| c.new_mode == Some(MODE_LINK))
        .filter_map(|c| c.new_path.as_deref())
        .collect();
    for path in changes
        .iter()
        .flat_map(|c| [&c.old_path, &c.new_path])
        .flatten()
    {
        if let Some(link) = links.iter().find(|l| {
            path.len() > l.len() && path.starts_with(**l) && path.as_bytes()[l.len()] == b'/'
        }) {
            return Err(RepoError::UnsafePath {
                path: path.clone(),
                reason: UnsafeReason::ThroughSymlink {
                    link: link.to_string(),
                },
            });
        }
    }
    Ok(changes)
}

fn describe(p: &FilePatch) -> Result<PathChange, RepoError> {
    let check = |raw: &Option<Vec<u8>>| {
        raw.as_ref()
            .map(|raw| {
                paths::check_path(raw).map_err(|reason| RepoError::UnsafePath {
                    path: String::from_utf8_lossy(raw).into_owned(),
                    reason,
                })
            })
            .transpose()
    };
    Ok(PathChange {
        kind: p.kind,
        old_path: check(&p.old_path)?,
        new_path: check(&p.new_path)?,
        old_mode: p.old_mode,
        new_mode: p.new_mode,
        binary: p.binary,
        added_lines: p.added_lines(),
        removed_lines: p.removed_lines(),
    })
}

/// In a tree, a path "goes through a symlink" when one of its parents is a symlink entry.
fn check_in_tree(tree: &Tree<'_>, changes: &[PathChange]) -> Result<(), RepoError> {
    for path in changes
        .iter()
        .flat_map(|c| [&c.old_path, &c.new_path])
        .flatten()
    {
        let mut prefix = String::new();
        let parts: Vec<&str> = path.split('/').collect();
        for part in &parts[..parts.len().saturating_sub(1)] {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(part);
            match tree.get_path(Path::new(&prefix)) {
                Ok(e) if u32::try_from(e.filemode()).ok() == Some(MODE_LINK) => {
                    return Err(RepoError::UnsafePath {
                        path: path.clone(),
                        reason: UnsafeReason::ThroughSymlink { link: prefix },
                    });
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
    }
    Ok(())
}

/// libgit2's reading of the patch, when it reads it and agrees with ours about every file. On
/// any disagreement our parse wins: it is the one whose paths were checked.
fn libgit2_diff(bytes: &[u8], patches: &[FilePatch]) -> Option<Diff<'static>> {
    let diff = Diff::from_buffer(bytes).ok()?;
    let deltas: Vec<_> = diff.deltas().collect();
    let agrees = deltas.len() == patches.len()
        && deltas.iter().zip(patches).all(|(d, p)| {
            let old = d.old_file().path_bytes();
            let new = d.new_file().path_bytes();
            let (want_old, want_new) = (p.old_path.as_deref(), p.new_path.as_deref());
            match (p.kind, d.status()) {
                (ChangeKind::Added, Delta::Added) => new == want_new,
                (ChangeKind::Deleted, Delta::Deleted) => old == want_old,
                (ChangeKind::Modified, Delta::Modified)
                | (ChangeKind::Renamed, Delta::Renamed)
                | (ChangeKind::Copied, Delta::Copied) => old == want_old && new == want_new,
                _ => false,
            }
        });
    agrees.then_some(diff)
}

fn exact_report(patches: &[FilePatch], changes: Vec<PathChange>) -> ApplyReport {
    ApplyReport {
        method: ApplyMethod::Libgit2,
        files: patches
            .iter()
            .zip(changes)
            .map(|(p, change)| FileApply {
                change,
                hunks: p
                    .hunks
                    .iter()
                    .map(|h| HunkApply {
                        header: h.header.clone(),
                        offset: 0,
                        fuzz: 0,
                        line_endings: false,
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// Works out the whole patch in memory; nothing is written unless every file and hunk applies.
fn plan(
    source: &dyn Source,
    patches: &[FilePatch],
    changes: &[PathChange],
    max_fuzz: usize,
) -> Result<Plan, RepoError> {
    let mut results: Vec<(String, FileState)> = Vec::new();
    let read = |results: &[(String, FileState)], path: &str| match results
        .iter()
        .rev()
        .find(|(p, _)| p == path)
    {
        Some((_, state)) => Ok(state.clone()),
        None => source.read(path),
    };
    let conflict = |file: &str, reason: &str| RepoError::PatchConflict {
        file: file.to_string(),
        reason: reason.to_string(),
    };
    let mut reports = Vec::with_capacity(patches.len());
    for (p, change) in patches.iter().zip(changes) {
        let name = change.path();
        if p.binary {
            return Err(conflict(
                name,
                "binary change did not apply (only an exact match can apply one)",
            ));
        }
        let old = change.old_path.as_deref();
        let new = change.new_path.as_deref();
        let placements = match (old, new) {
            (None, Some(new)) => {
                if read(&results, new)?.is_some() {
                    return Err(conflict(new, "the patch adds it but it already exists"));
                }
                let (content, placed) = run_hunks(b"", p, max_fuzz, new)?;
                results.push((
                    new.to_string(),
                    Some((content, p.new_mode.unwrap_or(MODE_FILE))),
                ));
                placed
            }
            (Some(old), None) => {
                let Some((current, _)) = read(&results, old)? else {
                    return Err(conflict(old, "the patch deletes it but it does not exist"));
                };
                let (content, placed) = run_hunks(&current, p, max_fuzz, old)?;
                if !content.is_empty() {
                    return Err(conflict(
                        old,
                        "the patch deletes it but the file has lines the patch does not remove",
                    ));
                }
                results.push((old.to_string(), None));
                placed
            }
            (Some(old), Some(new)) => {
                let Some((current, mode)) = read(&results, old)? else {
                    return Err(conflict(old, "the patch changes it but it does not exist"));
                };
                if old != new && read(&results, new)?.is_some() {
                    return Err(conflict(
                        new,
                        "the patch renames a file onto it but it already exists",
                    ));
                }
                let (content, placed) = run_hunks(&current, p, max_fuzz, old)?;
                if p.kind == ChangeKind::Renamed {
                    results.push((old.to_string(), None));
                }
                results.push((new.to_string(), Some((content, p.new_mode.unwrap_or(mode)))));
                placed
            }
            (None, None) => return Err(conflict("", "a file section names no path")),
        };
        reports.push(FileApply {
            change: change.clone(),
            hunks: p
                .hunks
                .iter()
                .zip(placements)
                .map(|(h, placed)| HunkApply {
                    header: h.header.clone(),
                    offset: placed.offset,
                    fuzz: placed.fuzz,
                    line_endings: placed.line_endings,
                })
                .collect(),
        });
    }
    // One final state per path, in the order paths were first touched.
    let mut finals: Vec<(String, FileState)> = Vec::new();
    for (path, state) in results {
        match finals.iter_mut().find(|(p, _)| *p == path) {
            Some(slot) => slot.1 = state,
            None => finals.push((path, state)),
        }
    }
    Ok(Plan {
        results: finals,
        files: reports,
    })
}

/// Says so when the file's line endings and the hunk's differ (an LF patch on a CRLF file), which
/// a person cannot see in the lines themselves; empty when they agree.
fn endings_differ(content: &[u8], hunk: &patch::Hunk) -> String {
    let crlf = |line: &[u8]| line.ends_with(b"\r\n");
    let file_crlf = content
        .split_inclusive(|&b| b == b'\n')
        .find(|l| l.ends_with(b"\n"))
        .map(crlf);
    let hunk_crlf = hunk
        .lines
        .iter()
        .filter_map(|l| match l {
            patch::HunkLine::Context(b) | patch::HunkLine::Remove(b) => Some(b.as_slice()),
            patch::HunkLine::Add(_) => None,
        })
        .find(|l| l.ends_with(b"\n"))
        .map(crlf);
    let name = |crlf: bool| if crlf { "CRLF" } else { "LF" };
    match (file_crlf, hunk_crlf) {
        (Some(file), Some(hunk)) if file != hunk => format!(
            " (the line endings differ: the file has {}, the patch {}; its lines did not match \
             with endings ignored either)",
            name(file),
            name(hunk)
        ),
        _ => String::new(),
    }
}

fn run_hunks(
    content: &[u8],
    p: &FilePatch,
    max_fuzz: usize,
    file: &str,
) -> Result<(Vec<u8>, Vec<Placement>), RepoError> {
    hunks::apply(content, &p.hunks, max_fuzz).map_err(|index| {
        let hunk = &p.hunks[index];
        let reason = if hunks::apply(content, &[hunk.reversed()], 0).is_ok() {
            "its change is already there (the reversed hunk applies)".to_string()
        } else if max_fuzz > 0 {
            format!("its lines were not found at any offset, even ignoring {max_fuzz} context lines at each end{}", endings_differ(content, hunk))
        } else {
            format!("its lines were not found at any offset{}", endings_differ(content, hunk))
        };
        RepoError::HunkFailed {
            file: file.to_string(),
            hunk: hunk.header.clone(),
            reason,
        }
    })
}
