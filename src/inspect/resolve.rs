//! Finds the run a user means: a run directory given as a path, or a run id (whole, or a unique
//! prefix) looked up in the repository's `.fwfix/runs/`. Only reads directory listings.

use super::{InspectError, BISECT_JSON, RUN_JSON, TRACE_FILE};
use crate::report::REPORT_JSON;
use crate::rundir::RUNS_DIR;
use std::path::{Path, PathBuf};

/// The run directory `arg` names: a path to a run directory, or a run id (or a prefix of exactly
/// one) under `<repo>/.fwfix/runs/`. An exact id wins over longer ids it is a prefix of.
pub fn resolve_run(arg: &str, repo: &Path) -> Result<PathBuf, InspectError> {
    let as_path = PathBuf::from(arg);
    if !arg.is_empty() && as_path.is_dir() {
        if is_run_dir(&as_path) {
            return Ok(as_path);
        }
        // A bare word that happens to name some other directory may still be a run id.
        if has_separator(arg) {
            return Err(InspectError::NotARunDir { path: as_path });
        }
    }
    let runs_dir = repo.join(RUNS_DIR);
    let not_found = || {
        // A bare word naming a directory that is no run (and no run id either) is that directory.
        if !arg.is_empty() && as_path.is_dir() {
            return InspectError::NotARunDir {
                path: as_path.clone(),
            };
        }
        InspectError::NotFound {
            arg: arg.to_string(),
            path: as_path.clone(),
            runs_dir: runs_dir.clone(),
        }
    };
    if arg.is_empty() || has_separator(arg) {
        return Err(not_found());
    }
    let entries = match std::fs::read_dir(&runs_dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(not_found()),
        Err(source) => {
            return Err(InspectError::Io {
                path: runs_dir,
                source,
            })
        }
    };
    let mut matches: Vec<String> = entries
        .flatten()
        .filter(|entry| entry.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|entry| entry.file_name().to_str().map(str::to_string))
        .filter(|id| id.starts_with(arg))
        .collect();
    matches.sort();
    if matches.iter().any(|id| id == arg) {
        return Ok(runs_dir.join(arg));
    }
    match matches.as_slice() {
        [] => Err(not_found()),
        [only] => Ok(runs_dir.join(only)),
        _ => Err(InspectError::Ambiguous {
            prefix: arg.to_string(),
            runs_dir,
            matches,
        }),
    }
}

/// A directory some run wrote: a trace, a report, a bisect's record, or at least run.json, which
/// a run writes first (one killed before its first transition or bisect step has nothing else).
fn is_run_dir(dir: &Path) -> bool {
    dir.join(TRACE_FILE).is_file()
        || dir.join(REPORT_JSON).is_file()
        || dir.join(BISECT_JSON).is_file()
        || dir.join(RUN_JSON).is_file()
}

fn has_separator(arg: &str) -> bool {
    arg.contains(std::path::MAIN_SEPARATOR) || arg.contains('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo_with_runs(ids: &[&str]) -> tempfile::TempDir {
        let repo = tempfile::tempdir().unwrap();
        for id in ids {
            let dir = repo.path().join(RUNS_DIR).join(id);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(TRACE_FILE), "").unwrap();
        }
        repo
    }

    #[test]
    fn a_unique_prefix_or_an_exact_id_finds_the_run() {
        let repo = repo_with_runs(&["20240501-120000-aaaa", "20240501-130000-bbbb"]);
        let runs = repo.path().join(RUNS_DIR);
        assert_eq!(
            resolve_run("20240501-12", repo.path()).unwrap(),
            runs.join("20240501-120000-aaaa")
        );
        assert_eq!(
            resolve_run("20240501-130000-bbbb", repo.path()).unwrap(),
            runs.join("20240501-130000-bbbb")
        );
    }

    #[test]
    fn an_exact_id_wins_over_longer_ids_it_prefixes() {
        let repo = repo_with_runs(&["r1", "r10"]);
        assert!(resolve_run("r1", repo.path()).unwrap().ends_with("r1"));
    }

    #[test]
    fn an_ambiguous_prefix_lists_every_match() {
        let repo = repo_with_runs(&["20240501-120000-aaaa", "20240501-120000-bbbb"]);
        let err = resolve_run("20240501", repo.path()).unwrap_err();
        match &err {
            InspectError::Ambiguous { matches, .. } => assert_eq!(
                matches,
                &vec![
                    "20240501-120000-aaaa".to_string(),
                    "20240501-120000-bbbb".to_string()
                ]
            ),
            other => panic!("expected ambiguity, got {other:?}"),
        }
        let text = err.to_string();
        assert!(
            text.contains("20240501-120000-aaaa, 20240501-120000-bbbb"),
            "{text}"
        );
    }

    #[test]
    fn nothing_found_says_where_it_looked() {
        let repo = repo_with_runs(&["20240501-120000-aaaa"]);
        let err = resolve_run("2023", repo.path()).unwrap_err();
        assert!(matches!(err, InspectError::NotFound { .. }), "{err:?}");
        let text = err.to_string();
        assert!(
            text.contains(&repo.path().join(RUNS_DIR).display().to_string()),
            "{text}"
        );
        let empty = tempfile::tempdir().unwrap();
        assert!(matches!(
            resolve_run("x", empty.path()),
            Err(InspectError::NotFound { .. })
        ));
        assert!(matches!(
            resolve_run("", repo.path()),
            Err(InspectError::NotFound { .. })
        ));
    }

    #[test]
    fn a_path_must_be_a_run_directory() {
        let repo = repo_with_runs(&["r1"]);
        let run = repo.path().join(RUNS_DIR).join("r1");
        assert_eq!(
            resolve_run(run.to_str().unwrap(), repo.path()).unwrap(),
            run
        );
        let err = resolve_run(repo.path().to_str().unwrap(), repo.path()).unwrap_err();
        assert!(matches!(err, InspectError::NotARunDir { .. }), "{err:?}");
    }
}
