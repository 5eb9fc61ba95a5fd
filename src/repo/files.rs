//! Reading and writing single working-tree files the way a rollback needs: content and git mode
//! (regular, executable, symlink) read without following links, writes through a temporary file
//! and a rename so an interrupted write never leaves half a file. It must not decide which files
//! to touch; callers pass paths they have already checked.

use super::error::RepoError;
use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::fs;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

pub(crate) const MODE_FILE: u32 = 0o100644;
pub(crate) const MODE_EXEC: u32 = 0o100755;
pub(crate) const MODE_LINK: u32 = 0o120000;
pub(crate) const MODE_GITLINK: u32 = 0o160000;

/// Prefix of the temporary files; a leftover one is an untracked file the next rollback removes.
const TMP_PREFIX: &str = ".fwfix-tmp-";

/// A repository-relative path (bytes, `/`-separated) under `root`.
pub(crate) fn join(root: &Path, rel: &[u8]) -> PathBuf {
    root.join(Path::new(OsStr::from_bytes(rel)))
}

/// Content and git mode of a working-tree entry, `None` when there is no file (or a directory).
pub(crate) fn read_entry(path: &Path) -> Result<Option<(Vec<u8>, u32)>, RepoError> {
    let meta = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(RepoError::io("stat", path, e)),
    };
    let kind = meta.file_type();
    if kind.is_symlink() {
        let target = fs::read_link(path).map_err(|e| RepoError::io("read link", path, e))?;
        return Ok(Some((target.as_os_str().as_bytes().to_vec(), MODE_LINK)));
    }
    if !kind.is_file() {
        return Ok(None);
    }
    let bytes = fs::read(path).map_err(|e| RepoError::io("read", path, e))?;
    Ok(Some((bytes, mode_of(&meta))))
}

fn mode_of(meta: &fs::Metadata) -> u32 {
    // git records only the owner's execute bit.
    if meta.permissions().mode() & 0o100 != 0 {
        MODE_EXEC
    } else {
        MODE_FILE
    }
}

/// Writes `content` at `path` with git `mode`, creating parent directories, via a temporary file
/// in the same directory and a rename.
pub(crate) fn write_atomically(path: &Path, content: &[u8], mode: u32) -> Result<(), RepoError> {
    write_with(path, mode, content, |file| file.write_all(content))
}

/// Writes the file at `path` through a temporary file and a rename: a symlink to `link` when
/// `mode` is a link's, else a regular file `fill` writes.
fn write_with(
    path: &Path,
    mode: u32,
    link: &[u8],
    fill: impl FnOnce(&mut fs::File) -> std::io::Result<()>,
) -> Result<(), RepoError> {
    let parent = path
        .parent()
        .ok_or_else(|| RepoError::io("write", path, std::io::ErrorKind::InvalidInput.into()))?;
    fs::create_dir_all(parent).map_err(|e| RepoError::io("create directory", parent, e))?;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = parent.join(format!(
        "{TMP_PREFIX}{}-{name}",
        crate::rundir::temp_suffix()
    ));
    match fs::remove_file(&tmp) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(RepoError::io("remove stale temporary file", &tmp, e)),
    }
    if mode == MODE_LINK {
        std::os::unix::fs::symlink(OsStr::from_bytes(link), &tmp)
            .map_err(|e| RepoError::io("create symlink", &tmp, e))?;
    } else {
        // Keep the permissions the file already has when its executable bit does not change.
        let perms = match fs::symlink_metadata(path) {
            Ok(meta) if meta.is_file() && mode_of(&meta) == mode => meta.permissions().mode(),
            _ if mode == MODE_EXEC => 0o755,
            _ => 0o644,
        };
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|e| RepoError::io("create", &tmp, e))?;
        fill(&mut file)
            .and_then(|()| file.set_permissions(fs::Permissions::from_mode(perms & 0o7777)))
            .and_then(|()| file.sync_all())
            .map_err(|e| RepoError::io("write", &tmp, e))?;
    }
    fs::rename(&tmp, path).map_err(|e| {
        let _ = fs::remove_file(&tmp);
        RepoError::io("replace", path, e)
    })
}

/// As [`write_atomically`] for a regular file whose content is copied from `from` (a file too
/// large to hold in memory).
pub(crate) fn copy_atomically(from: &Path, path: &Path, mode: u32) -> Result<(), RepoError> {
    let mut source = fs::File::open(from).map_err(|e| RepoError::io("open", from, e))?;
    write_with(path, mode, b"", |file| {
        std::io::copy(&mut source, file).map(|_| ())
    })
}

/// Removes the file or symlink at `path` (already gone is fine), then the directories that this
/// left empty, up to but not including `root` and stopping at any directory in `keep`.
pub(crate) fn remove_and_prune(
    root: &Path,
    path: &Path,
    keep: &BTreeSet<PathBuf>,
) -> Result<(), RepoError> {
    match fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(RepoError::io("remove", path, e)),
    }
    let mut dir = path.parent();
    while let Some(d) = dir {
        if d == root || !d.starts_with(root) || keep.contains(d) || fs::remove_dir(d).is_err() {
            break;
        }
        dir = d.parent();
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn write_read_and_prune_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let file = root.join("a/b/c.sh");
        write_atomically(&file, b"#!/bin/sh\n", MODE_EXEC).unwrap();
        assert_eq!(
            read_entry(&file).unwrap(),
            Some((b"#!/bin/sh\n".to_vec(), MODE_EXEC))
        );
        write_atomically(&file, b"echo\n", MODE_FILE).unwrap();
        assert_eq!(
            read_entry(&file).unwrap(),
            Some((b"echo\n".to_vec(), MODE_FILE))
        );
        let link = root.join("a/link");
        write_atomically(&link, b"b/c.sh", MODE_LINK).unwrap();
        assert_eq!(
            read_entry(&link).unwrap(),
            Some((b"b/c.sh".to_vec(), MODE_LINK))
        );
        remove_and_prune(root, &file, &BTreeSet::new()).unwrap();
        assert!(!root.join("a/b").exists());
        assert!(root.join("a").exists(), "a still holds the link");
        let keep = BTreeSet::from([root.join("a")]);
        remove_and_prune(root, &link, &keep).unwrap();
        assert!(root.join("a").exists(), "kept");
        std::fs::remove_dir(root.join("a")).unwrap();
        assert!(root.exists());
        assert_eq!(read_entry(&file).unwrap(), None);
        assert_eq!(
            std::fs::read_dir(root).unwrap().count(),
            0,
            "no temporary file left"
        );
    }
}
