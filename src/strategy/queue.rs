//! Strategy `queue`: a directory of candidate patches (`*.diff`, `*.patch`) handed out in name
//! order, as many as asked for (the fix loop asks for all of them: one round the governor ranks).
//! Reproducible, and the way to feed human-written candidates to the loop.

use super::{Candidate, PatchRequest, Strategy, StrategyError};
use std::path::{Path, PathBuf};
use tokio_util::sync::CancellationToken;

/// Larger than any patch a person would review.
const MAX_PATCH_BYTES: u64 = 16 * 1024 * 1024;

/// The queue and how far into it the run is.
#[derive(Debug)]
pub struct QueueStrategy {
    files: Vec<PathBuf>,
    next: usize,
}

impl QueueStrategy {
    /// Lists the patches in `dir`. An unreadable or empty directory is an error naming it.
    pub fn open(dir: &Path) -> Result<QueueStrategy, StrategyError> {
        let entries = std::fs::read_dir(dir).map_err(|e| {
            StrategyError::Failed(format!(
                "cannot read patch directory {}: {e}",
                dir.display()
            ))
        })?;
        let mut files: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| {
                !p.is_dir()
                    && matches!(
                        p.extension().and_then(|e| e.to_str()),
                        Some("diff") | Some("patch")
                    )
            })
            .collect();
        files.sort();
        // A FIFO or a device named like a patch is refused now, by name, not met mid-run.
        for file in &files {
            crate::input::regular(file).map_err(|e| StrategyError::Failed(e.to_string()))?;
        }
        if files.is_empty() {
            return Err(StrategyError::Failed(format!(
                "{} holds no *.diff or *.patch files",
                dir.display()
            )));
        }
        Ok(QueueStrategy { files, next: 0 })
    }

    /// How many candidates the queue holds.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

#[async_trait::async_trait]
impl Strategy for QueueStrategy {
    fn name(&self) -> &'static str {
        "queue"
    }

    fn has_more(&self) -> bool {
        self.next < self.files.len()
    }

    async fn candidates(
        &mut self,
        req: &PatchRequest,
        _cancel: &CancellationToken,
    ) -> Result<Vec<Candidate>, StrategyError> {
        let mut out = Vec::new();
        while out.len() < req.candidates.max(1) as usize {
            let Some(path) = self.files.get(self.next) else {
                break;
            };
            let diff = crate::input::read_regular_text(path, MAX_PATCH_BYTES)
                .map_err(|e| StrategyError::Failed(e.to_string()))?;
            self.next += 1;
            let origin = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            out.push(Candidate::new(origin, diff));
        }
        if out.is_empty() {
            return Err(StrategyError::Exhausted(format!(
                "all {} queued patches were tried",
                self.files.len()
            )));
        }
        Ok(out)
    }

    fn save(&self) -> serde_json::Value {
        serde_json::json!({ "next": self.next })
    }

    fn load(&mut self, saved: &serde_json::Value) {
        if let Some(n) = saved.get("next").and_then(|v| v.as_u64()) {
            self.next = (n as usize).min(self.files.len());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> PatchRequest {
        PatchRequest {
            iteration: 1,
            task: String::new(),
            evidence: serde_json::Value::Null,
            evidence_markdown: String::new(),
            work_dir: PathBuf::new(),
            iteration_dir: PathBuf::new(),
            candidates: 1,
            workspaces: Vec::new(),
        }
    }

    #[tokio::test]
    async fn hands_out_patches_in_name_order_and_resumes() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["02-b.patch", "01-a.diff", "notes.txt", "03-c.diff"] {
            std::fs::write(dir.path().join(name), name).unwrap();
        }
        let mut q = QueueStrategy::open(dir.path()).unwrap();
        assert_eq!(q.len(), 3);
        let cancel = CancellationToken::new();
        let first = q.candidates(&request(), &cancel).await.unwrap();
        assert_eq!(first[0].origin, "01-a.diff");
        let saved = q.save();
        let mut resumed = QueueStrategy::open(dir.path()).unwrap();
        resumed.load(&saved);
        let second = resumed.candidates(&request(), &cancel).await.unwrap();
        assert_eq!(second[0].origin, "02-b.patch");
        let third = resumed.candidates(&request(), &cancel).await.unwrap();
        assert_eq!(third[0].diff, "03-c.diff");
        assert!(!resumed.has_more());
        assert!(matches!(
            resumed.candidates(&request(), &cancel).await,
            Err(StrategyError::Exhausted(_))
        ));
    }

    #[test]
    fn an_empty_or_missing_directory_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let e = QueueStrategy::open(dir.path()).unwrap_err();
        assert!(e.to_string().contains("holds no"), "{e}");
        let e = QueueStrategy::open(&dir.path().join("nope")).unwrap_err();
        assert!(e.to_string().contains("nope"), "{e}");
    }
}
