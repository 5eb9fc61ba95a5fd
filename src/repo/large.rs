//! Untracked files too large to become git objects (a 200 MB capture, a disk image): a rollback
//! point records each by path, size, mode and SHA-256 in its commit message, and keeps one copy
//! per content aside in a store outside `.git` (a run's directory); a rollback puts them back
//! byte-exact from there. Git never holds them, so a snapshot costs neither the time to hash
//! them into objects nor their size in `.git`.

use super::error::RepoError;
use super::files::{self, MODE_EXEC, MODE_FILE};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Which untracked files are kept aside, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LargeFiles {
    /// Untracked regular files larger than this many bytes.
    pub above_bytes: u64,
    /// Where their copies go, one per content, named by SHA-256.
    pub store: PathBuf,
}

/// A large untracked file as a rollback point recorded it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LargeFile {
    /// Relative to the work tree's root.
    pub path: String,
    pub size: u64,
    /// Git's mode: regular or executable.
    pub mode: u32,
    pub sha256: String,
}

/// How a snapshot commit's message names one: `fwfix-large-file: SHA256 SIZE MODE PATH`.
pub(crate) const TRAILER: &str = "fwfix-large-file: ";

impl LargeFile {
    pub(crate) fn trailer(&self) -> String {
        format!(
            "{TRAILER}{} {} {:o} {}",
            self.sha256, self.size, self.mode, self.path
        )
    }

    /// Reads what [`LargeFile::trailer`] wrote (the text after the key).
    pub(crate) fn parse(text: &str) -> Option<LargeFile> {
        let mut fields = text.splitn(4, ' ');
        let sha256 = fields.next()?.to_string();
        let size = fields.next()?.parse().ok()?;
        let mode = u32::from_str_radix(fields.next()?, 8).ok()?;
        let path = fields.next()?.to_string();
        let hex = sha256.len() == 64 && sha256.bytes().all(|b| b.is_ascii_hexdigit());
        (hex && !path.is_empty()).then_some(LargeFile {
            path,
            size,
            mode,
            sha256,
        })
    }
}

impl LargeFiles {
    /// Whether the untracked entry at `rel` (whose metadata is `meta`) is kept aside: a regular
    /// file over the limit whose name fits on a trailer line.
    pub(crate) fn takes(&self, rel: &[u8], meta: &std::fs::Metadata) -> bool {
        meta.is_file()
            && meta.len() > self.above_bytes
            && std::str::from_utf8(rel).is_ok_and(|p| !p.contains('\n'))
    }

    /// Copies `workdir/rel` into the store (unless a copy of that content is there already) and
    /// describes it.
    pub(crate) fn keep(&self, workdir: &Path, rel: &str) -> Result<LargeFile, RepoError> {
        let full = workdir.join(rel);
        std::fs::create_dir_all(&self.store)
            .map_err(|e| RepoError::io("create directory", &self.store, e))?;
        let meta = std::fs::metadata(&full).map_err(|e| RepoError::io("stat", &full, e))?;
        let tmp = self.store.join(format!(".incoming-{}", std::process::id()));
        let copied = copy_hashing(&full, &tmp).map_err(|e| RepoError::io("copy", &full, e))?;
        let (sha256, size) = copied;
        let kept = self.store.join(&sha256);
        if kept.is_file() {
            let _ = std::fs::remove_file(&tmp);
        } else {
            std::fs::rename(&tmp, &kept).map_err(|e| RepoError::io("store", &kept, e))?;
        }
        Ok(LargeFile {
            path: rel.to_string(),
            size,
            mode: if meta.permissions().mode() & 0o100 != 0 {
                MODE_EXEC
            } else {
                MODE_FILE
            },
            sha256,
        })
    }

    /// Whether the work tree holds `file` as recorded: same size, mode and content.
    pub(crate) fn intact(workdir: &Path, file: &LargeFile) -> Result<bool, RepoError> {
        let full = workdir.join(&file.path);
        let meta = match std::fs::symlink_metadata(&full) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(RepoError::io("stat", &full, e)),
        };
        let exec = meta.permissions().mode() & 0o100 != 0;
        if !meta.is_file() || meta.len() != file.size || exec != (file.mode == MODE_EXEC) {
            return Ok(false);
        }
        let digest = sha256_of(&full).map_err(|e| RepoError::io("read", &full, e))?;
        Ok(digest == file.sha256)
    }

    /// Puts `file` back in the work tree from its copy in the store.
    pub(crate) fn put_back(&self, workdir: &Path, file: &LargeFile) -> Result<(), RepoError> {
        let kept = self.store.join(&file.sha256);
        if !kept.is_file() {
            return Err(RepoError::io(
                "restore",
                &kept,
                std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("the copy of {} kept aside is gone", file.path),
                ),
            ));
        }
        files::copy_atomically(&kept, &workdir.join(&file.path), file.mode)
    }
}

/// Copies `from` to a new file `to`, returning the content's SHA-256 (hex) and size.
fn copy_hashing(from: &Path, to: &Path) -> std::io::Result<(String, u64)> {
    let mut source = std::fs::File::open(from)?;
    let _ = std::fs::remove_file(to);
    let mut dest = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(to)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut size = 0u64;
    loop {
        let n = source.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        dest.write_all(&buf[..n])?;
        size += n as u64;
    }
    dest.sync_all()?;
    Ok((hex(&hasher.finalize()), size))
}

fn sha256_of(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher)?;
    Ok(hex(&hasher.finalize()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailers_round_trip_and_garbage_is_no_file() {
        let file = LargeFile {
            path: "captures/run 1.bin".into(),
            size: 209_715_200,
            mode: MODE_FILE,
            sha256: "ab".repeat(32),
        };
        let line = file.trailer();
        assert_eq!(
            LargeFile::parse(line.strip_prefix(TRAILER).unwrap()),
            Some(file)
        );
        assert_eq!(LargeFile::parse("xyz 1 100644 a"), None);
        assert_eq!(
            LargeFile::parse(&format!("{} 1 100644", "ab".repeat(32))),
            None
        );
    }
}
