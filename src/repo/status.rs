//! What a snapshot must record of the working tree, found against the index: tracked files whose
//! content or mode is not the index's, tracked files gone, untracked files that are not ignored,
//! and empty directories that are not ignored. Only reads.
//!
//! It answers what `git status --porcelain=v2 -uall` answers for the working tree, at the cost of
//! one `lstat` per index entry and one listing per directory that holds tracked files, both
//! spread over the machine's cores: an entry whose stat data is the index's is taken as
//! unchanged, unless the index was written in the same second as the file or later ("racily
//! clean", git's rule), and every other one is hashed and compared. Only directories that hold no
//! tracked file pay for the ignore rules (one check each, which prunes an ignored build tree
//! whole), and so do the few untracked files. Content is compared as the bytes on disk, without
//! git's filters; submodules and nested repositories are left alone.
//!
//! Where git may convert content between the index and the disk (`core.autocrlf`, an attributes
//! file), a file git calls clean can hold other bytes than its blob: a CRLF checkout of an LF
//! blob. Such an entry is found by its size (the index records the file's, the object database
//! the blob's) and hashed, so that a snapshot keeps the bytes on disk, not the blob.

use super::error::RepoError;
use super::files::{self, MODE_EXEC, MODE_FILE, MODE_GITLINK, MODE_LINK};
use git2::{Index, IndexEntry, ObjectType, Oid, Repository};
use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::{fstatat, FileStat, Mode, SFlag};
use std::ffi::OsStr;
use std::fs;
use std::io::ErrorKind;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// `GIT_INDEX_ENTRY_INTENT_TO_ADD`: such entries have no content in the index yet.
pub(crate) const INTENT_TO_ADD: u16 = 1 << 13;
/// `GIT_INDEX_ENTRY_SKIP_WORKTREE`: git leaves such files alone (sparse checkouts).
const SKIP_WORKTREE: u16 = 1 << 14;
/// `GIT_INDEX_ENTRY_VALID` (`git update-index --assume-unchanged`): git takes them as unchanged.
const ASSUME_VALID: u16 = 0x8000;

/// How a path differs from the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Change {
    /// Tracked, and its content or mode is not the index's (or it was added with `git add -N`).
    Modified,
    /// Tracked, and no file is there any more (or something that is not a file).
    Deleted,
    /// Untracked and not ignored.
    New,
}

/// The working tree's differences from the index.
#[derive(Debug, Default)]
pub(crate) struct WorkStatus {
    /// Repository-relative paths (`/`-separated) in path order.
    pub changes: Vec<(Vec<u8>, Change)>,
    /// Empty directories that are not ignored, in path order. A name that cannot go in a trailer
    /// line (not UTF-8, or with a newline) is left out.
    pub empty_dirs: Vec<String>,
}

/// Compares the working tree at `workdir` with `index` (read from `git`'s index file, whose
/// modification time decides which entries are racily clean). `filemode` is `core.filemode`.
pub(crate) fn scan(
    git: &Repository,
    workdir: &Path,
    index: &Index,
    filemode: bool,
) -> Result<WorkStatus, RepoError> {
    let entries: Vec<IndexEntry> = index.iter().collect();
    // An entry written in the index's own second (or later) may have changed after the index
    // took its stat data without its stat data showing it: hash those.
    let index_written = fs::metadata(git.path().join("index"))
        .map(|m| m.mtime())
        .unwrap_or(i64::MAX);
    let converted = converted_entries(git, workdir, &entries)?;
    let dirs = tracked_dirs(&entries);
    let mut own: Vec<Vec<usize>> = vec![Vec::new(); dirs.len()];
    for (i, entry) in entries.iter().enumerate() {
        let parent =
            entry.path[..entry.path.iter().rposition(|&b| b == b'/').unwrap_or(0)].to_vec();
        if let Ok(d) = dirs.binary_search(&parent) {
            own[d].push(i);
        }
    }
    let jobs: Vec<(&Vec<u8>, &Vec<usize>)> = dirs.iter().zip(&own).collect();
    let ctx = Context {
        workdir,
        entries: &entries,
        dirs: &dirs,
        index_written,
        converted: &converted,
        filemode,
    };
    // A second thread costs about what a few directories of files do.
    let scanned = in_parallel(&jobs, 16, |(dir, own)| ctx.scan_dir(dir, own))?;

    let mut status = WorkStatus::default();
    let mut candidates = Vec::new();
    let mut not_dirs: Vec<&[u8]> = Vec::new();
    let mut emptied = Vec::new();
    for ((dir, _), found) in jobs.iter().zip(scanned) {
        candidates.extend(found.candidates);
        not_dirs.extend(found.not_dirs.iter().map(|&d| dirs[d].as_slice()));
        if found.empty && !dir.is_empty() {
            emptied.push(dir.to_vec());
        }
        for (i, change) in found.changes {
            status.changes.push((entries[i].path.clone(), change));
        }
    }
    if !not_dirs.is_empty() {
        // What was tracked under a directory that is now a symlink or a file is gone, whatever
        // the link leads to, and nothing found through the link is the repository's.
        let under = |path: &[u8]| {
            not_dirs
                .iter()
                .any(|d| path.len() > d.len() && path.starts_with(d) && path[d.len()] == b'/')
        };
        status.changes.retain(|(path, _)| !under(path));
        candidates.retain(|(path, _)| !under(path));
        emptied.retain(|path| !under(path));
        for entry in &entries {
            if under(&entry.path) && entry.mode != MODE_GITLINK {
                status.changes.push((entry.path.clone(), Change::Deleted));
            }
        }
    }

    let ignored = |rel: &[u8]| {
        git.status_should_ignore(Path::new(OsStr::from_bytes(rel)))
            .map_err(|e| RepoError::git("check ignore rules", workdir, e))
    };
    for dir in emptied {
        if !ignored(&dir)? {
            push_empty_dir(&mut status.empty_dirs, &dir);
        }
    }
    candidates.sort();
    for (rel, is_dir) in candidates {
        untracked(workdir, rel, is_dir, &ignored, &mut status)?;
    }
    status.changes.sort_by(|a, b| a.0.cmp(&b.0));
    status.empty_dirs.sort();
    Ok(status)
}

/// Per entry, whether git may have written its file with other bytes than its blob's: only
/// where conversion is configured at all, and then where the size the index recorded for the
/// file is not the blob's (or the blob cannot be read). All false otherwise, without a look at
/// the object database. A filter that keeps a file's size is not seen.
fn converted_entries(
    git: &Repository,
    workdir: &Path,
    entries: &[IndexEntry],
) -> Result<Vec<bool>, RepoError> {
    if !conversion_configured(git, workdir, entries) {
        return Ok(vec![false; entries.len()]);
    }
    let odb = git
        .odb()
        .map_err(|e| RepoError::git("open object database", git.path(), e))?;
    Ok(entries
        .iter()
        .map(|entry| {
            // The index keeps a file's size in 32 bits.
            compared(entry)
                && odb
                    .read_header(entry.id)
                    .map_or(true, |(size, _)| size as u32 != entry.file_size)
        })
        .collect())
}

/// Whether git converts content for this repository anywhere: `core.autocrlf` (`true` or
/// `input`), a `.gitattributes` (tracked, or at the top of the working tree), `info/attributes`
/// (in the common git directory, which linked worktrees share), the system's or the user's
/// attributes file. A configuration that cannot be read counts as converting.
fn conversion_configured(git: &Repository, workdir: &Path, entries: &[IndexEntry]) -> bool {
    let Ok(config) = git.config() else {
        return true;
    };
    let autocrlf = config.get_bool("core.autocrlf").unwrap_or_else(|_| {
        config
            .get_string("core.autocrlf")
            .is_ok_and(|v| v.eq_ignore_ascii_case("input"))
    });
    let tracked = entries
        .iter()
        .any(|entry| entry.path == b".gitattributes" || entry.path.ends_with(b"/.gitattributes"));
    let user = config.get_string("core.attributesFile").is_ok()
        || std::env::var_os("XDG_CONFIG_HOME")
            .filter(|dir| !dir.is_empty())
            .map(|dir| Path::new(&dir).join("git/attributes"))
            .or_else(|| {
                std::env::var_os("HOME").map(|home| Path::new(&home).join(".config/git/attributes"))
            })
            .is_some_and(|file| file.exists());
    let system =
        std::env::var_os("GIT_ATTR_NOSYSTEM").is_none() && Path::new("/etc/gitattributes").exists();
    autocrlf
        || tracked
        || user
        || system
        || workdir.join(".gitattributes").exists()
        || git.commondir().join("info/attributes").exists()
}

/// Whether `entry` is one the scan compares: submodules are not ours, and git leaves
/// skip-worktree and assume-unchanged entries alone.
fn compared(entry: &IndexEntry) -> bool {
    entry.mode != MODE_GITLINK
        && entry.flags & ASSUME_VALID == 0
        && entry.flags_extended & SKIP_WORKTREE == 0
}

/// Every directory that holds a tracked entry, the root (empty path) included, sorted.
fn tracked_dirs(entries: &[IndexEntry]) -> Vec<Vec<u8>> {
    let mut dirs: Vec<Vec<u8>> = vec![Vec::new()];
    let mut last: &[u8] = &[];
    for entry in entries {
        let Some(slash) = entry.path.iter().rposition(|&b| b == b'/') else {
            continue;
        };
        let dir = &entry.path[..slash];
        if dir == last {
            continue;
        }
        last = dir;
        // The ancestors too: `a/b/c.c` makes `a` and `a/b`.
        for (i, &b) in dir.iter().enumerate() {
            if b == b'/' {
                dirs.push(dir[..i].to_vec());
            }
        }
        dirs.push(dir.to_vec());
    }
    dirs.sort();
    dirs.dedup();
    dirs
}

/// What the scan needs to look at one directory.
struct Context<'a> {
    workdir: &'a Path,
    /// The index's entries, in path order.
    entries: &'a [IndexEntry],
    /// [`tracked_dirs`].
    dirs: &'a [Vec<u8>],
    /// When the index file was written (seconds).
    index_written: i64,
    /// Per entry, whether its file may hold other bytes than its blob ([`converted_entries`]).
    converted: &'a [bool],
    filemode: bool,
}

/// What one directory holding tracked files holds.
#[derive(Default)]
struct DirScan {
    /// Its tracked entries that changed: `(index of the entry, change)`.
    changes: Vec<(usize, Change)>,
    /// Names that are no tracked entry: `(path, is a directory)`.
    candidates: Vec<(Vec<u8>, bool)>,
    /// Tracked directories found as something else (a symlink, a file), as indexes in `dirs`.
    not_dirs: Vec<usize>,
    empty: bool,
}

impl Context<'_> {
    /// Lists directory `dir` and checks its tracked entries `own` (indexes in `entries`), both
    /// through one descriptor of the directory: a stat relative to it resolves one name, not the
    /// whole path.
    fn scan_dir(&self, dir: &[u8], own: &[usize]) -> Result<DirScan, RepoError> {
        let full = files::join(self.workdir, dir);
        let mut found = DirScan::default();
        // The root may be reached through a symlink; a directory below it must not be.
        let nofollow = if dir.is_empty() {
            OFlag::empty()
        } else {
            OFlag::O_NOFOLLOW
        };
        let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC | nofollow;
        let fd = match nix::fcntl::open(&full, flags, Mode::empty()) {
            Ok(fd) => fd,
            // Gone, or no longer a directory: its tracked entries are gone with it.
            Err(Errno::ENOENT | Errno::ENOTDIR | Errno::ELOOP) => {
                for &i in own {
                    if compared(&self.entries[i]) {
                        found.changes.push((i, Change::Deleted));
                    }
                }
                return Ok(found);
            }
            Err(e) => return Err(RepoError::io("open directory", &full, e.into())),
        };
        self.list(dir, own, &full, &mut found)?;
        for &i in own {
            let entry = &self.entries[i];
            if !compared(entry) {
                continue;
            }
            let name = base_name(&entry.path);
            let stat = match fstatat(&fd, OsStr::from_bytes(name), AtFlags::AT_SYMLINK_NOFOLLOW) {
                Ok(stat) => stat,
                Err(Errno::ENOENT | Errno::ENOTDIR) => {
                    found.changes.push((i, Change::Deleted));
                    continue;
                }
                Err(e) => {
                    let path = files::join(self.workdir, &entry.path);
                    return Err(RepoError::io("stat", path, e.into()));
                }
            };
            if let Some(change) = self.compare(entry, self.converted[i], &stat)? {
                found.changes.push((i, change));
            }
        }
        Ok(found)
    }

    /// Lists `dir`, whose tracked entries are `own`, for what is not tracked in it.
    fn list(
        &self,
        dir: &[u8],
        own: &[usize],
        full: &Path,
        found: &mut DirScan,
    ) -> Result<(), RepoError> {
        let read = match fs::read_dir(full) {
            Ok(read) => read,
            // Gone since it was opened: its entries are found deleted.
            Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
                return Ok(())
            }
            Err(e) => return Err(RepoError::io("list directory", full, e)),
        };
        found.empty = true;
        for item in read {
            let item = item.map_err(|e| RepoError::io("list directory", full, e))?;
            found.empty = false;
            let name = item.file_name();
            let name = name.as_bytes();
            if name == b".git" {
                continue;
            }
            let kind = item
                .file_type()
                .map_err(|e| RepoError::io("stat", item.path(), e))?;
            let (is_dir, is_file) = (kind.is_dir(), kind.is_file() || kind.is_symlink());
            // A directory's entries are contiguous in the index and in name order.
            let tracked = own.binary_search_by(|&i| base_name(&self.entries[i].path).cmp(name));
            let rel = || {
                let mut rel = dir.to_vec();
                if !rel.is_empty() {
                    rel.push(b'/');
                }
                rel.extend_from_slice(name);
                rel
            };
            if let Ok(k) = tracked {
                // A tracked file that became a directory holds untracked files; a submodule is
                // a directory and not ours to look into.
                if is_dir && self.entries[own[k]].mode != MODE_GITLINK {
                    found.candidates.push((rel(), true));
                }
                continue;
            }
            let rel = rel();
            if let Ok(d) = self.dirs.binary_search(&rel) {
                if !is_dir {
                    if is_file {
                        found.candidates.push((rel, false));
                    }
                    found.not_dirs.push(d);
                }
            } else if is_dir || is_file {
                found.candidates.push((rel, is_dir));
            }
        }
        Ok(())
    }

    /// Whether the tracked `entry`, found with `stat`, still holds the index's content and mode;
    /// a `converted` entry is hashed whatever its stat data says.
    fn compare(
        &self,
        entry: &IndexEntry,
        converted: bool,
        stat: &FileStat,
    ) -> Result<Option<Change>, RepoError> {
        let intent_to_add = entry.flags_extended & INTENT_TO_ADD != 0;
        if !intent_to_add
            && !converted
            && stat_matches(entry, stat, self.filemode)
            && i64::from(entry.mtime.seconds()) < self.index_written
        {
            return Ok(None);
        }
        let path = files::join(self.workdir, &entry.path);
        let Some((content, mode)) = files::read_entry(&path)? else {
            return Ok(Some(Change::Deleted));
        };
        if intent_to_add {
            return Ok(Some(Change::Modified));
        }
        let mode = kept_mode(mode, entry.mode, self.filemode);
        let id = Oid::hash_object(ObjectType::Blob, &content)
            .map_err(|e| RepoError::git("hash file", &path, e))?;
        Ok((id != entry.id || mode != entry.mode).then_some(Change::Modified))
    }
}

/// The last component of a repository-relative path.
fn base_name(path: &[u8]) -> &[u8] {
    &path[path.iter().rposition(|&b| b == b'/').map_or(0, |p| p + 1)..]
}

/// A stat's file type: regular file, symlink, or something git does not track.
fn kind_of(mode: u32) -> Option<SFlag> {
    let kind = SFlag::from_bits_truncate(mode & SFlag::S_IFMT.bits());
    (kind == SFlag::S_IFREG || kind == SFlag::S_IFLNK).then_some(kind)
}

/// The mode git records for a file found with `found`, tracked with `recorded`: with
/// `core.filemode` off git keeps the recorded executable bit.
pub(crate) fn kept_mode(found: u32, recorded: u32, filemode: bool) -> u32 {
    let plain = |m: u32| m == MODE_FILE || m == MODE_EXEC;
    if !filemode && plain(found) && plain(recorded) {
        recorded
    } else {
        found
    }
}

/// Whether the file's stat data is what the index recorded for it: type, executable bit (when
/// `core.filemode` is on), size, modification and change times, inode and owner. The index's
/// fields are 32 bits wide and git truncates into them, so they are compared truncated.
fn stat_matches(entry: &IndexEntry, stat: &FileStat, filemode: bool) -> bool {
    let same_kind = match kind_of(stat.st_mode) {
        Some(SFlag::S_IFLNK) => entry.mode == MODE_LINK,
        Some(_) => {
            entry.mode != MODE_LINK
                && (!filemode || (stat.st_mode & 0o100 != 0) == (entry.mode == MODE_EXEC))
        }
        None => false,
    };
    let low = |v: i64| v as u32;
    same_kind
        && entry.file_size == low(stat.st_size)
        && entry.mtime.seconds() == stat.st_mtime as i32
        && entry.mtime.nanoseconds() == low(stat.st_mtime_nsec)
        && entry.ctime.seconds() == stat.st_ctime as i32
        && entry.ctime.nanoseconds() == low(stat.st_ctime_nsec)
        && entry.ino == stat.st_ino as u32
        && entry.uid == stat.st_uid
        && entry.gid == stat.st_gid
}

/// An untracked file or directory found in a listing: a file not ignored is new; a directory
/// that is not ignored and not a repository of its own is walked, its empty directories noted.
fn untracked(
    workdir: &Path,
    rel: Vec<u8>,
    is_dir: bool,
    ignored: &impl Fn(&[u8]) -> Result<bool, RepoError>,
    status: &mut WorkStatus,
) -> Result<(), RepoError> {
    if !is_dir {
        if !ignored(&rel)? {
            status.changes.push((rel, Change::New));
        }
        return Ok(());
    }
    let full = files::join(workdir, &rel);
    if fs::symlink_metadata(full.join(".git")).is_ok() || ignored(&rel)? {
        return Ok(());
    }
    let read = match fs::read_dir(&full) {
        Ok(read) => read,
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
            return Ok(())
        }
        Err(e) => return Err(RepoError::io("list directory", &full, e)),
    };
    let mut children = Vec::new();
    for item in read {
        let item = item.map_err(|e| RepoError::io("list directory", &full, e))?;
        let kind = item
            .file_type()
            .map_err(|e| RepoError::io("stat", item.path(), e))?;
        let mut child = rel.clone();
        child.push(b'/');
        child.extend_from_slice(item.file_name().as_bytes());
        if kind.is_dir() {
            children.push((child, true));
        } else if kind.is_file() || kind.is_symlink() {
            children.push((child, false));
        } else {
            // A socket or a fifo: not content git records, but the directory is not empty.
            children.push((Vec::new(), false));
        }
    }
    if children.is_empty() {
        push_empty_dir(&mut status.empty_dirs, &rel);
    }
    for (child, is_dir) in children {
        if !child.is_empty() {
            untracked(workdir, child, is_dir, ignored, status)?;
        }
    }
    Ok(())
}

fn push_empty_dir(found: &mut Vec<String>, rel: &[u8]) {
    if let Ok(text) = std::str::from_utf8(rel) {
        if !text.contains('\n') {
            found.push(text.to_string());
        }
    }
}

/// `check` on every item, the items split in contiguous runs over the machine's cores when there
/// are at least `parallel_from` of them; results in the items' order, the first error in that
/// order.
fn in_parallel<T: Sync, R: Send>(
    items: &[T],
    parallel_from: usize,
    check: impl Fn(&T) -> Result<R, RepoError> + Sync,
) -> Result<Vec<R>, RepoError> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    if threads < 2 || items.len() < parallel_from {
        return items.iter().map(&check).collect();
    }
    let run = items.len().div_ceil(threads);
    let check = &check;
    let parts: Vec<Result<Vec<R>, RepoError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .chunks(run)
            .map(|part| scope.spawn(move || part.iter().map(check).collect()))
            .collect();
        handles
            .into_iter()
            .map(|h| match h.join() {
                Ok(result) => result,
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    });
    let mut all = Vec::with_capacity(items.len());
    for part in parts {
        all.extend(part?);
    }
    Ok(all)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::repo::test_support::git;
    use std::collections::BTreeSet;
    use std::os::unix::fs::PermissionsExt;

    fn write(root: &Path, rel: &str, content: &str) {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
    }

    fn set_exec(root: &Path, rel: &str, exec: bool) {
        let path = root.join(rel);
        let mode = if exec { 0o755 } else { 0o644 };
        fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
    }

    fn scan_of(root: &Path) -> WorkStatus {
        let repo = Repository::open(root).unwrap();
        let mut index = repo.index().unwrap();
        index.read(true).unwrap();
        let filemode = repo
            .config()
            .and_then(|c| c.get_bool("core.filemode"))
            .unwrap_or(true);
        scan(&repo, root, &index, filemode).unwrap()
    }

    /// What `git status --porcelain=v2 -uall` says of the working tree, in the scan's terms:
    /// submodules and nested repositories (shown as `dir/`) left out, as the scan leaves them.
    fn git_says(root: &Path) -> BTreeSet<(String, Change)> {
        let out = git(
            root,
            &[
                "--no-optional-locks",
                "status",
                "--porcelain=v2",
                "-uall",
                "--no-renames",
                "-z",
            ],
        );
        let mut found = BTreeSet::new();
        for record in out.split('\0').filter(|r| !r.is_empty()) {
            if let Some(path) = record.strip_prefix("? ") {
                if !path.ends_with('/') {
                    found.insert((path.to_string(), Change::New));
                }
                continue;
            }
            let fields: Vec<&str> = record.splitn(9, ' ').collect();
            assert_eq!(fields[0], "1", "unexpected status record {record:?}");
            if fields[2].starts_with('S') {
                continue;
            }
            let change = match fields[1].as_bytes()[1] {
                b'.' => continue,
                b'D' => Change::Deleted,
                _ => Change::Modified,
            };
            found.insert((fields[8].to_string(), change));
        }
        found
    }

    fn scan_says(root: &Path) -> BTreeSet<(String, Change)> {
        scan_of(root)
            .changes
            .into_iter()
            .map(|(path, change)| (String::from_utf8(path).unwrap(), change))
            .collect()
    }

    fn assert_agrees(root: &Path) -> BTreeSet<(String, Change)> {
        // Ours first: git's status may refresh the index, and the scan must not need that.
        let ours = scan_says(root);
        assert_eq!(ours, git_says(root));
        ours
    }

    fn repo_with(files: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "-q"]);
        for rel in files {
            write(dir.path(), rel, &format!("{rel}\n"));
        }
        git(dir.path(), &["add", "-A"]);
        git(dir.path(), &["commit", "-q", "-m", "base"]);
        dir
    }

    fn expect(items: &[(&str, Change)]) -> BTreeSet<(String, Change)> {
        items.iter().map(|(p, c)| (p.to_string(), *c)).collect()
    }

    #[test]
    fn finds_what_git_status_finds() {
        let dir = repo_with(&[
            "a.c",
            "gone.c",
            "staged.c",
            "run.sh",
            "src/deep/x.c",
            "src/y.c",
            "link",
        ]);
        let root = dir.path();
        fs::remove_file(root.join("link")).unwrap();
        std::os::unix::fs::symlink("a.c", root.join("link")).unwrap();
        git(root, &["add", "link"]);
        git(root, &["commit", "-q", "-m", "link"]);
        write(root, ".gitignore", "*.o\nbuild/\n");
        write(root, "src/.gitignore", "gen.c\n");
        write(root, "a.c", "changed, and longer\n");
        fs::remove_file(root.join("gone.c")).unwrap();
        write(root, "staged.c", "staged\n");
        git(root, &["add", "staged.c"]);
        set_exec(root, "run.sh", true);
        fs::remove_file(root.join("link")).unwrap();
        std::os::unix::fs::symlink("src/y.c", root.join("link")).unwrap();
        write(root, "src/deep/x.o", "ignored\n");
        write(root, "src/gen.c", "ignored by a nested .gitignore\n");
        write(root, "build/out/new.c", "inside an ignored directory\n");
        write(
            root,
            "notes/todo/list.txt",
            "untracked in untracked directories\n",
        );
        std::os::unix::fs::symlink("nowhere", root.join("dangling")).unwrap();
        let found = assert_agrees(root);
        assert_eq!(
            found,
            expect(&[
                (".gitignore", Change::New),
                ("a.c", Change::Modified),
                ("dangling", Change::New),
                ("gone.c", Change::Deleted),
                ("link", Change::Modified),
                ("notes/todo/list.txt", Change::New),
                ("run.sh", Change::Modified),
                ("src/.gitignore", Change::New),
            ])
        );
    }

    #[test]
    fn a_change_in_the_second_the_index_was_written_is_found() {
        let dir = repo_with(&["a.c", "b.c"]);
        let root = dir.path();
        // Same size, written right after the index: the stat data may well be the index's to
        // the nanosecond, and only the racy-clean rule catches it.
        write(root, "a.c", "x.c\n");
        git(root, &["add", "a.c"]);
        write(root, "a.c", "y.c\n");
        assert_eq!(assert_agrees(root), expect(&[("a.c", Change::Modified)]));
        // Racily clean but unchanged: hashed, and found unchanged.
        git(root, &["add", "a.c"]);
        assert_eq!(assert_agrees(root), expect(&[]));
    }

    #[test]
    fn a_touched_file_with_the_same_content_is_unchanged() {
        let dir = repo_with(&["a.c"]);
        let root = dir.path();
        std::thread::sleep(std::time::Duration::from_millis(1100));
        git(root, &["update-index", "-q", "--refresh"]);
        fs::write(root.join("a.c"), "a.c\n").unwrap();
        assert_eq!(assert_agrees(root), expect(&[]));
    }

    #[test]
    fn type_changes_both_ways() {
        let dir = repo_with(&[
            "file_to_dir",
            "dir_to_file/x.c",
            "dir_to_link/y.c",
            "keep.c",
        ]);
        let root = dir.path();
        fs::remove_file(root.join("file_to_dir")).unwrap();
        write(root, "file_to_dir/inner.c", "now a directory\n");
        fs::remove_dir_all(root.join("dir_to_file")).unwrap();
        write(root, "dir_to_file", "now a file\n");
        fs::remove_dir_all(root.join("dir_to_link")).unwrap();
        write(root, "elsewhere/y.c", "dir_to_link/y.c\n");
        std::os::unix::fs::symlink("elsewhere", root.join("dir_to_link")).unwrap();
        assert_eq!(
            assert_agrees(root),
            expect(&[
                ("dir_to_file", Change::New),
                ("dir_to_file/x.c", Change::Deleted),
                ("dir_to_link", Change::New),
                ("dir_to_link/y.c", Change::Deleted),
                ("elsewhere/y.c", Change::New),
                ("file_to_dir", Change::Deleted),
                ("file_to_dir/inner.c", Change::New),
            ])
        );
    }

    #[test]
    fn excludes_from_info_exclude_and_core_excludes_file() {
        let dir = repo_with(&["a.c"]);
        let root = dir.path();
        let elsewhere = tempfile::tempdir().unwrap();
        let global = elsewhere.path().join("ignore");
        fs::write(&global, "*.log\n").unwrap();
        git(
            root,
            &["config", "core.excludesFile", global.to_str().unwrap()],
        );
        write(root, ".git/info/exclude", "scratch/\n");
        write(root, "run.log", "ignored by core.excludesFile\n");
        write(root, "scratch/notes.txt", "ignored by info/exclude\n");
        write(root, "kept.txt", "untracked\n");
        assert_eq!(assert_agrees(root), expect(&[("kept.txt", Change::New)]));
    }

    #[test]
    fn submodules_and_nested_repositories_are_left_alone() {
        let dir = repo_with(&["a.c"]);
        let root = dir.path();
        let sub = root.join("sub");
        fs::create_dir(&sub).unwrap();
        git(&sub, &["init", "-q"]);
        write(&sub, "s.c", "s\n");
        git(&sub, &["add", "-A"]);
        git(&sub, &["commit", "-q", "-m", "sub"]);
        git(root, &["add", "sub"]);
        git(root, &["commit", "-q", "-m", "gitlink"]);
        write(&sub, "s.c", "changed inside the submodule\n");
        write(&sub, "new.c", "new inside the submodule\n");
        let nested = root.join("nested");
        fs::create_dir(&nested).unwrap();
        git(&nested, &["init", "-q"]);
        write(&nested, "n.c", "a repository of its own\n");
        assert_eq!(assert_agrees(root), expect(&[]));
    }

    #[test]
    fn filemode_off_keeps_the_recorded_executable_bit() {
        let dir = repo_with(&["run.sh"]);
        let root = dir.path();
        git(root, &["config", "core.filemode", "false"]);
        set_exec(root, "run.sh", true);
        assert_eq!(assert_agrees(root), expect(&[]));
    }

    #[test]
    fn intent_to_add_is_modified_and_its_absence_is_nothing() {
        let dir = repo_with(&["a.c"]);
        let root = dir.path();
        write(root, "later.c", "added with -N\n");
        write(root, "gone.c", "added with -N, then removed\n");
        git(root, &["add", "-N", "later.c", "gone.c"]);
        fs::remove_file(root.join("gone.c")).unwrap();
        let found = scan_says(root);
        assert_eq!(
            found,
            expect(&[("gone.c", Change::Deleted), ("later.c", Change::Modified)])
        );
    }

    #[test]
    fn empty_directories_that_are_not_ignored() {
        let dir = repo_with(&["a.c", "emptied/x.c"]);
        let root = dir.path();
        write(root, ".gitignore", "ignored_empty/\n");
        fs::remove_file(root.join("emptied/x.c")).unwrap();
        fs::create_dir_all(root.join("new/empty")).unwrap();
        fs::create_dir_all(root.join("ignored_empty")).unwrap();
        let status = scan_of(root);
        assert_eq!(status.empty_dirs, ["emptied", "new/empty"]);
    }

    #[test]
    fn many_entries_are_checked_on_several_threads_alike() {
        let files: Vec<String> = (0..1500)
            .map(|i| format!("d{:02}/f{i}.c", i % 40))
            .collect();
        let names: Vec<&str> = files.iter().map(String::as_str).collect();
        let dir = repo_with(&names);
        let root = dir.path();
        write(root, "d07/f7.c", "changed\n");
        fs::remove_file(root.join("d39/f1439.c")).unwrap();
        write(root, "d20/new.c", "new\n");
        assert_eq!(
            assert_agrees(root),
            expect(&[
                ("d07/f7.c", Change::Modified),
                ("d20/new.c", Change::New),
                ("d39/f1439.c", Change::Deleted),
            ])
        );
    }
}
