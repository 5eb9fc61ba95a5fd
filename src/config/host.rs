//! What fwfix takes from the host's environment beyond the profile: where board leases and
//! health live, where tool facts are cached, the editor a person chose, the labgrid coordinator,
//! and the directories programs are looked up in. With
//! `llm` (the model endpoint), the only place fwfix reads environment variables, so that what a
//! run depends on is found here. `NO_COLOR` is the exception: a display convention `ui/` reads.

use std::path::PathBuf;

/// The state directory for board leases and health when `--state-dir` and `FWFIX_STATE_DIR`
/// (read by the command line) give none: `$XDG_STATE_HOME/fwfix`, else
/// `$HOME/.local/state/fwfix`.
pub fn state_dir() -> Result<PathBuf, String> {
    state_dir_from(|name| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned()))
}

fn state_dir_from(lookup: impl Fn(&str) -> Option<String>) -> Result<PathBuf, String> {
    let non_empty = |name: &str| lookup(name).filter(|v| !v.is_empty());
    if let Some(state) = non_empty("XDG_STATE_HOME") {
        return Ok(PathBuf::from(state).join("fwfix"));
    }
    match non_empty("HOME") {
        Some(home) => Ok(PathBuf::from(home).join(".local/state/fwfix")),
        None => Err(
            "no state directory for board leases and health: set FWFIX_STATE_DIR, \
                     XDG_STATE_HOME or HOME, or pass --state-dir"
                .to_string(),
        ),
    }
}

/// The editor a person has chosen: `EDITOR`, else `VISUAL`, else `vi`. Read when they ask to
/// edit, as every terminal tool does, so it is the one their shell has now.
pub fn editor() -> String {
    editor_from(|key| std::env::var(key).ok())
}

fn editor_from(lookup: impl Fn(&str) -> Option<String>) -> String {
    ["EDITOR", "VISUAL"]
        .iter()
        .filter_map(|k| lookup(k))
        .find(|v| !v.trim().is_empty())
        .unwrap_or_else(|| "vi".to_string())
}

/// Where fwfix keeps what it learnt about the host's tools (what a QEMU binary supports):
/// `$XDG_CACHE_HOME/fwfix`, else `$HOME/.cache/fwfix`; None without either.
pub fn cache_dir() -> Option<PathBuf> {
    cache_dir_from(|name| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned()))
}

fn cache_dir_from(lookup: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let non_empty = |name: &str| lookup(name).filter(|v| !v.is_empty());
    non_empty("XDG_CACHE_HOME")
        .map(|dir| PathBuf::from(dir).join("fwfix"))
        .or_else(|| non_empty("HOME").map(|home| PathBuf::from(home).join(".cache/fwfix")))
}

/// The labgrid coordinator `LG_COORDINATOR` names (`HOST:PORT`), as labgrid's own tools read it;
/// it overrides a board file's `[labgrid] coordinator`, so one CI job can point every board at
/// its farm.
pub fn labgrid_coordinator() -> Option<String> {
    std::env::var("LG_COORDINATOR")
        .ok()
        .filter(|v| !v.trim().is_empty())
}

/// The directories of `PATH`, in order.
pub fn program_dirs() -> Vec<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_follows_xdg_then_home() {
        assert_eq!(
            cache_dir_from(env(&[("XDG_CACHE_HOME", "/c"), ("HOME", "/h")])),
            Some(PathBuf::from("/c/fwfix"))
        );
        assert_eq!(
            cache_dir_from(env(&[("XDG_CACHE_HOME", ""), ("HOME", "/h")])),
            Some(PathBuf::from("/h/.cache/fwfix"))
        );
        assert_eq!(cache_dir_from(env(&[])), None);
    }

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |key| pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone())
    }

    #[test]
    fn editor_is_editor_then_visual_then_vi() {
        assert_eq!(
            editor_from(env(&[("EDITOR", "nano"), ("VISUAL", "code -w")])),
            "nano"
        );
        assert_eq!(
            editor_from(env(&[("EDITOR", " "), ("VISUAL", "code -w")])),
            "code -w"
        );
        assert_eq!(editor_from(env(&[])), "vi");
    }

    #[test]
    fn state_dir_is_xdg_then_home() {
        assert_eq!(
            state_dir_from(env(&[("XDG_STATE_HOME", "/s"), ("HOME", "/h")])),
            Ok(PathBuf::from("/s/fwfix"))
        );
        assert_eq!(
            state_dir_from(env(&[("XDG_STATE_HOME", ""), ("HOME", "/h")])),
            Ok(PathBuf::from("/h/.local/state/fwfix"))
        );
        let none = state_dir_from(env(&[])).unwrap_err();
        assert!(none.contains("--state-dir"), "{none}");
        assert!(!none.contains("  "), "{none}");
    }
}
