//! The names `[timeouts]` and `[recovery]` accept as keys: lower-case state names and error
//! class names, derived from `machine`'s own types so they cannot drift from them.

use crate::machine::{ErrorClass, State};

/// States that can have a watchdog: everything that runs, i.e. not IDLE and not terminal.
fn timeout_states() -> impl Iterator<Item = State> {
    State::ALL
        .into_iter()
        .filter(|state| *state != State::Idle && !state.is_terminal())
}

/// Error classes with a retry budget. UNHANDLED is a bug in fwfix and is never retried.
const RECOVERY_CLASSES: [ErrorClass; 11] = [
    ErrorClass::BuildFailure,
    ErrorClass::BuildEnvFailure,
    ErrorClass::TestEnvFailure,
    ErrorClass::FlashFailure,
    ErrorClass::Timeout,
    ErrorClass::ArtifactMissing,
    ErrorClass::ModelFailure,
    ErrorClass::NoCandidate,
    ErrorClass::PolicyViolation,
    ErrorClass::PatchApplyFailure,
    ErrorClass::LintFailure,
];

/// `build_run` for BUILD_RUN.
fn key_of(name: &str) -> String {
    name.to_ascii_lowercase()
}

pub fn timeout_state_names() -> Vec<String> {
    timeout_states().map(|s| key_of(s.name())).collect()
}

pub fn state_for_key(key: &str) -> Option<State> {
    timeout_states().find(|s| key_of(s.name()) == key)
}

pub fn recovery_class_names() -> Vec<String> {
    RECOVERY_CLASSES.iter().map(|c| key_of(c.name())).collect()
}

pub fn class_for_key(key: &str) -> Option<ErrorClass> {
    RECOVERY_CLASSES
        .into_iter()
        .find(|c| key_of(c.name()) == key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_keys_are_lower_case_names_of_running_states() {
        let names = timeout_state_names();
        assert!(names.contains(&"build_run".to_string()));
        assert!(names.contains(&"patch_generation".to_string()));
        assert!(!names.contains(&"idle".to_string()));
        assert!(!names.contains(&"success".to_string()));
        assert_eq!(state_for_key("test_run"), Some(State::TestRun));
        assert_eq!(state_for_key("TEST_RUN"), None);
        assert_eq!(state_for_key("aborted"), None);
    }

    #[test]
    fn class_keys_cover_every_retryable_class() {
        assert_eq!(
            class_for_key("flash_failure"),
            Some(ErrorClass::FlashFailure)
        );
        assert_eq!(class_for_key("unhandled"), None);
        for key in [
            "build_failure",
            "test_env_failure",
            "flash_failure",
            "timeout",
            "artifact_missing",
            "model_failure",
            "policy_violation",
            "patch_apply_failure",
        ] {
            assert!(class_for_key(key).is_some(), "{key}");
        }
    }
}
