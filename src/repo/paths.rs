//! Path safety for patches: which paths a patch may name at all (pure), and whether a path would
//! be written through a symlink in the working tree (one `lstat` per parent). It must not write
//! anything; it only says yes, or no with the reason.

use super::error::UnsafeReason;
use std::path::Path;

/// Checks a path as it appears in a patch (prefix already stripped) and returns it as text.
pub(crate) fn check_path(raw: &[u8]) -> Result<String, UnsafeReason> {
    let path = std::str::from_utf8(raw).map_err(|_| UnsafeReason::NotUtf8)?;
    if path.is_empty() {
        return Err(UnsafeReason::Empty);
    }
    let bytes = path.as_bytes();
    let drive = bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':';
    if path.starts_with('/') || path.starts_with('\\') || drive {
        return Err(UnsafeReason::Absolute);
    }
    // Backslashes count as separators too: the same patch may be applied on another OS.
    for component in path.split(['/', '\\']) {
        if component == ".." {
            return Err(UnsafeReason::ParentDir);
        }
        if is_git_dir_name(component) {
            return Err(UnsafeReason::InsideGitDir);
        }
        if component.is_empty() || component == "." {
            return Err(UnsafeReason::OddComponent);
        }
    }
    Ok(path.to_string())
}

/// `.git` in any case, and the names file systems treat as the same directory: trailing dots or
/// spaces (Windows) and the 8.3 short name `GIT~1`.
fn is_git_dir_name(component: &str) -> bool {
    let trimmed = component.trim_end_matches(['.', ' ']);
    trimmed.eq_ignore_ascii_case(".git") || component.eq_ignore_ascii_case("git~1")
}

/// Refuses `rel` when one of its parent directories in `root` is a symlink: the write would land
/// wherever the link points. Parents that do not exist yet are fine: they will be created.
pub(crate) fn check_no_symlink_parent(root: &Path, rel: &str) -> Result<(), UnsafeReason> {
    let components: Vec<&str> = rel.split('/').collect();
    let mut current = root.to_path_buf();
    let mut shown = String::new();
    for component in components.iter().take(components.len().saturating_sub(1)) {
        current.push(component);
        if !shown.is_empty() {
            shown.push('/');
        }
        shown.push_str(component);
        match std::fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(UnsafeReason::ThroughSymlink { link: shown });
            }
            Ok(_) => {}
            Err(_) => return Ok(()),
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_paths_pass() {
        for p in [
            "src/main.c",
            "a",
            "deep/er/file.h",
            ".github/x.yml",
            "src/.gitignore",
        ] {
            assert_eq!(check_path(p.as_bytes()).unwrap(), p);
        }
    }

    #[test]
    fn escapes_are_refused() {
        let cases: &[(&[u8], UnsafeReason)] = &[
            (b"/etc/passwd", UnsafeReason::Absolute),
            (b"\\windows", UnsafeReason::Absolute),
            (b"C:/x", UnsafeReason::Absolute),
            (b"../x", UnsafeReason::ParentDir),
            (b"src/../../x", UnsafeReason::ParentDir),
            (b"src\\..\\x", UnsafeReason::ParentDir),
            (b".git/config", UnsafeReason::InsideGitDir),
            (b".GIT/hooks/pre-commit", UnsafeReason::InsideGitDir),
            (b"sub/.Git/config", UnsafeReason::InsideGitDir),
            (b".git./config", UnsafeReason::InsideGitDir),
            (b"GIT~1/config", UnsafeReason::InsideGitDir),
            (b"a//b", UnsafeReason::OddComponent),
            (b"./a", UnsafeReason::OddComponent),
            (b"", UnsafeReason::Empty),
            (b"caf\xe9.c", UnsafeReason::NotUtf8),
        ];
        for (path, reason) in cases {
            assert_eq!(
                check_path(path).unwrap_err(),
                *reason,
                "{}",
                String::from_utf8_lossy(path)
            );
        }
    }

    #[test]
    fn symlinked_parent_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        std::os::unix::fs::symlink("real", dir.path().join("link")).unwrap();
        assert!(check_no_symlink_parent(dir.path(), "real/x.c").is_ok());
        assert!(check_no_symlink_parent(dir.path(), "new/dir/x.c").is_ok());
        // The file itself may be a symlink: git patches symlinks as their target text.
        assert!(check_no_symlink_parent(dir.path(), "link").is_ok());
        assert_eq!(
            check_no_symlink_parent(dir.path(), "link/x.c").unwrap_err(),
            UnsafeReason::ThroughSymlink {
                link: "link".into()
            }
        );
    }
}
