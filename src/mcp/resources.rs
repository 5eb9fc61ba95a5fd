//! Run directories as MCP resources: every file of a run (report.json, report.md, trace.jsonl,
//! build and console logs) is a `file://` resource. The server lists the files of the runs it
//! made in this session, and reads any file under a repository's `.fwfix/runs/<run-id>/` — and
//! nothing else, so a client cannot read the rest of the machine through it.

use rmcp::model::{Resource, ResourceContents};
use std::path::{Component, Path, PathBuf};

/// Largest file served whole; a longer one is cut at this many bytes with a note saying so.
const MAX_BYTES: u64 = 4 * 1024 * 1024;

/// The resource URI of `file` in `run_dir`.
pub fn uri_of(run_dir: &Path, file: &str) -> String {
    format!("file://{}", run_dir.join(file).display())
}

/// The files of `run_dir`, recursively, as resources.
pub fn list(run_dir: &Path) -> Vec<Resource> {
    let mut files = Vec::new();
    collect(run_dir, &mut files);
    files.sort();
    files
        .into_iter()
        .filter_map(|path| {
            let rel = path.strip_prefix(run_dir).ok()?.display().to_string();
            let size = std::fs::metadata(&path).ok()?.len();
            Some(
                Resource::new(format!("file://{}", path.display()), rel.clone())
                    .with_description(format!("{rel} of run {}", run_dir.display()))
                    .with_mime_type(mime_type(&path))
                    .with_size(size),
            )
        })
        .collect()
}

fn collect(dir: &Path, into: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            collect(&entry.path(), into);
        } else if kind.is_file() {
            into.push(entry.path());
        }
    }
}

/// Why a resource cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ResourceError {
    #[error("`{0}` is not a file:// URI")]
    NotFile(String),
    #[error("{}: not inside a run directory (.fwfix/runs/<run-id>/)", .0.display())]
    OutsideRuns(PathBuf),
    #[error(transparent)]
    Input(#[from] crate::input::InputError),
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Reads the run file `uri` names.
pub fn read(uri: &str) -> Result<ResourceContents, ResourceError> {
    let path = uri
        .strip_prefix("file://")
        .ok_or_else(|| ResourceError::NotFile(uri.to_string()))?;
    let meta = crate::input::regular(Path::new(path))?;
    let real = std::fs::canonicalize(path).map_err(|source| ResourceError::Read {
        path: PathBuf::from(path),
        source,
    })?;
    if !in_a_run_dir(&real) {
        return Err(ResourceError::OutsideRuns(real));
    }
    let read = |source| ResourceError::Read {
        path: real.clone(),
        source,
    };
    let mut bytes = Vec::new();
    use std::io::Read;
    std::fs::File::open(&real)
        .map_err(read)?
        .take(MAX_BYTES)
        .read_to_end(&mut bytes)
        .map_err(read)?;
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if meta.len() > MAX_BYTES {
        text.push_str(&format!(
            "\n[fwfix: cut at {MAX_BYTES} of {} bytes; the whole file is {}]\n",
            meta.len(),
            real.display()
        ));
    }
    Ok(ResourceContents::TextResourceContents {
        uri: uri.to_string(),
        mime_type: Some(mime_type(&real).to_string()),
        text,
        meta: None,
    })
}

/// Whether `path` (canonical) lies inside `.fwfix/runs/<run-id>/`.
fn in_a_run_dir(path: &Path) -> bool {
    let parts: Vec<Component<'_>> = path.components().collect();
    // `.fwfix`, `runs`, the run id, then at least the file itself.
    parts.windows(4).any(|w| {
        matches!(w, [Component::Normal(a), Component::Normal(b), Component::Normal(_), Component::Normal(_)]
            if *a == ".fwfix" && *b == "runs")
    })
}

fn mime_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()) {
        Some("json") => "application/json",
        Some("jsonl") => "application/jsonl",
        Some("md") => "text/markdown",
        Some("html") => "text/html",
        Some("xml") => "application/xml",
        Some("diff" | "patch") => "text/x-diff",
        _ => "text/plain",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_files_inside_a_run_directory_are_served() {
        assert!(in_a_run_dir(Path::new(
            "/r/.fwfix/runs/20260101-x/report.json"
        )));
        assert!(in_a_run_dir(Path::new(
            "/r/.fwfix/runs/id/iter-1/build.log"
        )));
        assert!(!in_a_run_dir(Path::new("/r/.fwfix/runs/report.json")));
        assert!(!in_a_run_dir(Path::new("/etc/passwd")));
        assert!(!in_a_run_dir(Path::new("/r/.fwfix/cache/x/y")));
    }

    #[test]
    fn a_uri_that_is_not_a_run_file_is_refused() {
        assert!(matches!(read("http://x/y"), Err(ResourceError::NotFile(_))));
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("secret.txt");
        std::fs::write(&file, "x").unwrap();
        assert!(matches!(
            read(&format!("file://{}", file.display())),
            Err(ResourceError::OutsideRuns(_))
        ));
    }
}
