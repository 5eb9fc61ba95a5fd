//! What a QEMU binary can do — the machines of `-machine help`, the CPUs of `-cpu help` — kept
//! between runs. Asking QEMU takes about 50 ms a list, more than a whole test run of a small
//! image, and the answer only changes when the binary does; so the lists are kept in the host's
//! cache directory under a key made of the binary's resolved path, size and modification time.
//! A replaced or upgraded QEMU has a new key and is asked again. A cache that cannot be read or
//! written is only a slower run: QEMU is asked, nothing fails.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// A cached list: what it was asked of which binary, so a hash collision cannot mislead.
#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
struct Entry {
    binary: PathBuf,
    size: u64,
    mtime_ns: i128,
    option: String,
    names: Vec<String>,
}

/// Where the list of `option` (`-machine`, `-cpu`) for `program` is kept, and the entry it must
/// hold; None when the binary cannot be found or has no usable metadata (no caching then).
fn slot(
    cache_dir: &Path,
    program: &str,
    option: &str,
    dirs: &[PathBuf],
) -> Option<(PathBuf, Entry)> {
    let binary = crate::doctor::find_program(program, dirs)?;
    let binary = std::fs::canonicalize(&binary).unwrap_or(binary);
    let meta = std::fs::metadata(&binary).ok()?;
    let mtime_ns = meta
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_nanos();
    let entry = Entry {
        binary,
        size: meta.len(),
        mtime_ns: i128::try_from(mtime_ns).ok()?,
        option: option.to_string(),
        names: Vec::new(),
    };
    let key = format!(
        "{}\0{}\0{}\0{}",
        entry.binary.display(),
        entry.size,
        entry.mtime_ns,
        option
    );
    let digest = Sha256::digest(key.as_bytes());
    let name: String = digest.iter().take(12).map(|b| format!("{b:02x}")).collect();
    Some((cache_dir.join(format!("qemu-{name}.json")), entry))
}

/// The cached names of `option` for `program`, if this very binary was asked before.
pub fn lookup(
    cache_dir: &Path,
    program: &str,
    option: &str,
    dirs: &[PathBuf],
) -> Option<Vec<String>> {
    let (path, want) = slot(cache_dir, program, option, dirs)?;
    let found: Entry = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    let same = found.binary == want.binary
        && found.size == want.size
        && found.mtime_ns == want.mtime_ns
        && found.option == want.option;
    (same && !found.names.is_empty()).then_some(found.names)
}

/// Keeps `names` as the answer of `program` to `option`. Best effort.
pub fn store(cache_dir: &Path, program: &str, option: &str, dirs: &[PathBuf], names: &[String]) {
    let Some((path, mut entry)) = slot(cache_dir, program, option, dirs) else {
        return;
    };
    entry.names = names.to_vec();
    if std::fs::create_dir_all(cache_dir).is_err() {
        return;
    }
    if let Ok(bytes) = serde_json::to_vec(&entry) {
        let _ = crate::rundir::write_atomic(&path, &bytes);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn fake_qemu(dir: &Path, body: &str) -> PathBuf {
        let bin = dir.join("qemu-system-arm");
        std::fs::write(&bin, body).unwrap();
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        bin
    }

    #[test]
    fn a_list_is_kept_for_the_binary_it_came_from_and_no_other() {
        let bins = tempfile::tempdir().unwrap();
        let cache = tempfile::tempdir().unwrap();
        let dirs = vec![bins.path().to_path_buf()];
        fake_qemu(bins.path(), "#!/bin/sh\n");
        assert_eq!(
            lookup(cache.path(), "qemu-system-arm", "-machine", &dirs),
            None
        );
        let names = vec!["mps2-an385".to_string(), "lm3s6965evb".to_string()];
        store(cache.path(), "qemu-system-arm", "-machine", &dirs, &names);
        assert_eq!(
            lookup(cache.path(), "qemu-system-arm", "-machine", &dirs),
            Some(names.clone())
        );
        // Another option of the same binary is another list.
        assert_eq!(lookup(cache.path(), "qemu-system-arm", "-cpu", &dirs), None);
        // A replaced binary (other size) is asked again.
        fake_qemu(bins.path(), "#!/bin/sh\n# a newer QEMU\n");
        assert_eq!(
            lookup(cache.path(), "qemu-system-arm", "-machine", &dirs),
            None
        );
    }

    #[test]
    fn a_missing_binary_or_cache_is_only_a_miss() {
        let cache = tempfile::tempdir().unwrap();
        assert_eq!(lookup(cache.path(), "no-such-qemu", "-machine", &[]), None);
        store(cache.path(), "no-such-qemu", "-machine", &[], &["x".into()]);
        let bins = tempfile::tempdir().unwrap();
        fake_qemu(bins.path(), "#!/bin/sh\n");
        let dirs = vec![bins.path().to_path_buf()];
        let unwritable = bins.path().join("qemu-system-arm").join("cache");
        store(
            &unwritable,
            "qemu-system-arm",
            "-machine",
            &dirs,
            &["x".into()],
        );
        assert_eq!(
            lookup(&unwritable, "qemu-system-arm", "-machine", &dirs),
            None
        );
    }
}
