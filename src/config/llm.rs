//! The `llm` strategy's settings: the profile's `[strategy.llm]` table merged with the
//! environment (`FWFIX_LLM_BASE_URL`, `FWFIX_LLM_MODEL`, `FWFIX_LLM_API_KEY`,
//! `FWFIX_LLM_TOKEN_BUDGET`, and the variable `api_key_env` names). This is the one place fwfix reads those variables; [`llm_settings`] takes
//! the environment as a function so the merge stays pure and testable.
//!
//! It must never put the API key anywhere a person or a file could see it: [`ApiKey`] has no
//! `Display`, no `Serialize`, and a `Debug` that redacts, and no error built here quotes it.

use crate::config::resolve::{
    DEFAULT_LLM_CANDIDATES, DEFAULT_LLM_CONNECT_TIMEOUT, DEFAULT_LLM_MAX_RETRIES,
    DEFAULT_LLM_PARALLEL, DEFAULT_LLM_TIMEOUT,
};
use crate::config::{ConfigError, LlmSpec};
use std::fmt;
use std::time::Duration;

/// Overrides `[strategy.llm] base_url`.
pub const ENV_BASE_URL: &str = "FWFIX_LLM_BASE_URL";
/// Overrides `[strategy.llm] model`.
pub const ENV_MODEL: &str = "FWFIX_LLM_MODEL";
/// Holds the API key; wins over the variable `api_key_env` names.
pub const ENV_API_KEY: &str = "FWFIX_LLM_API_KEY";
/// Overrides `[strategy.llm] token_budget`: the most tokens a run may spend.
pub const ENV_TOKEN_BUDGET: &str = "FWFIX_LLM_TOKEN_BUDGET";

/// The first retry waits about this long; each further one twice as long.
const DEFAULT_BACKOFF_BASE: Duration = Duration::from_secs(1);

/// An API key. It can be handed to an HTTP header and nowhere else.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey {
    value: String,
    /// The environment variable it came from, so messages can say which one to fix.
    source: String,
}

impl ApiKey {
    pub fn new(value: impl Into<String>, source: impl Into<String>) -> ApiKey {
        ApiKey {
            value: value.into(),
            source: source.into(),
        }
    }

    /// The key itself, for the `Authorization` header and for scrubbing text; never print it.
    pub fn expose(&self) -> &str {
        &self.value
    }

    /// The name of the variable that held it.
    pub fn source(&self) -> &str {
        &self.source
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ApiKey(<redacted>, from {})", self.source)
    }
}

/// Everything the `llm` strategy needs, resolved: nothing optional that must be there.
#[derive(Debug, Clone, PartialEq)]
pub struct LlmSettings {
    /// `http://` or `https://`, without a trailing `/`; requests go to `{base_url}/chat/completions`.
    pub base_url: String,
    pub model: String,
    /// `None`: no `Authorization` header (Ollama and llama.cpp need none).
    pub api_key: Option<ApiKey>,
    pub temperature: Option<f64>,
    /// One request from connect to the last byte of the answer (`timeout_s`).
    pub timeout: Duration,
    /// Establishing the connection (`connect_timeout_s`).
    pub connect_timeout: Duration,
    /// The longest silence while waiting for the answer (`idle_timeout_s`).
    pub idle_timeout: Duration,
    pub candidates: u32,
    /// Requests in flight at once.
    pub parallel: u32,
    pub max_retries: u32,
    pub token_budget: Option<u64>,
    /// The wait before the first retry when the server gives no `Retry-After`; it doubles each
    /// time, with jitter.
    pub backoff_base: Duration,
}

/// Merges `[strategy.llm]` (absent: all defaults) with the environment `env` gives. An empty
/// variable counts as unset. A missing base URL or model is an error naming the key and the
/// variable that would set it.
pub fn llm_settings(
    spec: Option<&LlmSpec>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<LlmSettings, ConfigError> {
    let get = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    let defaults = LlmSpec::default();
    let spec = spec.unwrap_or(&defaults);

    let base_url = match get(ENV_BASE_URL) {
        Some(url) => {
            let url = url.trim().to_string();
            if !has_http_host(&url) {
                return Err(ConfigError::Environment {
                    variable: ENV_BASE_URL.into(),
                    reason: format!("`{url}` is not an http:// or https:// URL with a host"),
                });
            }
            url
        }
        None => spec.base_url.clone().ok_or_else(|| ConfigError::Unset {
            setting: "the llm endpoint's base URL".into(),
            hint: format!(
                "set `base_url` in the profile's [strategy.llm] or the environment variable \
                     {ENV_BASE_URL} (e.g. http://127.0.0.1:11434/v1)"
            ),
        })?,
    };

    let model = get(ENV_MODEL)
        .map(|m| m.trim().to_string())
        .or_else(|| spec.model.clone())
        .ok_or_else(|| ConfigError::Unset {
            setting: "the llm model".into(),
            hint: format!(
                "set `model` in the profile's [strategy.llm] or the environment variable {ENV_MODEL}"
            ),
        })?;

    let api_key = match (get(ENV_API_KEY), spec.api_key_env.as_deref()) {
        (Some(key), _) => Some(checked_key(key, ENV_API_KEY)?),
        (None, Some(var)) => match get(var) {
            Some(key) => Some(checked_key(key, var)?),
            None => {
                return Err(ConfigError::Unset {
                    setting: "the API key".into(),
                    hint: format!(
                        "[strategy.llm] api_key_env names {var}, which is not set or empty: \
                         export {var}, or set {ENV_API_KEY}"
                    ),
                })
            }
        },
        (None, None) => None,
    };

    let token_budget = match get(ENV_TOKEN_BUDGET) {
        Some(text) => match text.trim().parse::<u64>() {
            Ok(n) if n > 0 => Some(n),
            _ => {
                return Err(ConfigError::Environment {
                    variable: ENV_TOKEN_BUDGET.into(),
                    reason: format!("`{}` is not a whole number of tokens above 0", text.trim()),
                })
            }
        },
        None => spec.token_budget,
    };

    Ok(LlmSettings {
        base_url: base_url.trim_end_matches('/').to_string(),
        model,
        api_key,
        temperature: spec.temperature,
        timeout: spec.timeout,
        connect_timeout: spec.connect_timeout,
        idle_timeout: spec.idle_timeout,
        candidates: spec.candidates,
        parallel: spec.parallel,
        max_retries: spec.max_retries,
        token_budget,
        backoff_base: DEFAULT_BACKOFF_BASE,
    })
}

/// What an empty `[strategy.llm]` resolves to, for a profile without the table.
impl Default for LlmSpec {
    fn default() -> LlmSpec {
        LlmSpec {
            base_url: None,
            model: None,
            api_key_env: None,
            temperature: None,
            timeout: DEFAULT_LLM_TIMEOUT,
            connect_timeout: DEFAULT_LLM_CONNECT_TIMEOUT.min(DEFAULT_LLM_TIMEOUT),
            idle_timeout: DEFAULT_LLM_TIMEOUT,
            candidates: DEFAULT_LLM_CANDIDATES,
            parallel: DEFAULT_LLM_PARALLEL,
            max_retries: DEFAULT_LLM_MAX_RETRIES,
            token_budget: None,
        }
    }
}

/// [`llm_settings`] with the process environment.
pub fn llm_settings_from_env(spec: Option<&LlmSpec>) -> Result<LlmSettings, ConfigError> {
    llm_settings(spec, &|name| std::env::var(name).ok())
}

fn has_http_host(url: &str) -> bool {
    url.strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .is_some_and(|rest| !rest.is_empty() && !rest.starts_with('/'))
}

/// A key goes into an HTTP header: surrounding whitespace (a trailing newline from a file) is
/// dropped, and anything a header cannot carry is refused without quoting the key.
fn checked_key(key: String, source: &str) -> Result<ApiKey, ConfigError> {
    let key = key.trim();
    if !key.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(ConfigError::Environment {
            variable: source.into(),
            reason: "the API key holds spaces or characters an HTTP header cannot carry".into(),
        });
    }
    Ok(ApiKey::new(key, source))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    const KEY: &str = "sk-test-9f8e7d6c5b4a";

    fn spec() -> LlmSpec {
        LlmSpec {
            base_url: Some("http://profile.example:8080/v1/".into()),
            model: Some("profile-model".into()),
            api_key_env: None,
            temperature: Some(0.2),
            timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(3),
            idle_timeout: Duration::from_secs(20),
            candidates: 2,
            parallel: 2,
            max_retries: 5,
            token_budget: Some(1000),
        }
    }

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: BTreeMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn profile_values_are_used_when_the_environment_is_silent() {
        let s = llm_settings(Some(&spec()), &env(&[])).unwrap();
        assert_eq!(s.base_url, "http://profile.example:8080/v1");
        assert_eq!(s.model, "profile-model");
        assert_eq!(s.api_key, None);
        assert_eq!(s.temperature, Some(0.2));
        assert_eq!(s.timeout, Duration::from_secs(30));
        assert_eq!(s.connect_timeout, Duration::from_secs(3));
        assert_eq!(s.idle_timeout, Duration::from_secs(20));
        assert_eq!((s.candidates, s.parallel, s.max_retries), (2, 2, 5));
        assert_eq!(s.token_budget, Some(1000));
    }

    #[test]
    fn the_environment_overrides_the_profile() {
        let s = llm_settings(
            Some(&spec()),
            &env(&[
                (ENV_BASE_URL, "http://127.0.0.1:11434/v1"),
                (ENV_MODEL, "qwen2.5-coder"),
                (ENV_API_KEY, KEY),
            ]),
        )
        .unwrap();
        assert_eq!(s.base_url, "http://127.0.0.1:11434/v1");
        assert_eq!(s.model, "qwen2.5-coder");
        assert_eq!(s.api_key.as_ref().map(ApiKey::expose), Some(KEY));
        assert_eq!(s.api_key.as_ref().map(ApiKey::source), Some(ENV_API_KEY));
    }

    #[test]
    fn no_table_at_all_takes_everything_from_the_environment() {
        let s = llm_settings(
            None,
            &env(&[(ENV_BASE_URL, "https://api.example/v1"), (ENV_MODEL, "m")]),
        )
        .unwrap();
        assert_eq!(s.timeout, DEFAULT_LLM_TIMEOUT);
        assert_eq!(s.connect_timeout, DEFAULT_LLM_CONNECT_TIMEOUT);
        assert_eq!(s.idle_timeout, DEFAULT_LLM_TIMEOUT);
        assert_eq!(s.candidates, DEFAULT_LLM_CANDIDATES);
        assert_eq!(s.parallel, 1);
        assert_eq!(s.max_retries, DEFAULT_LLM_MAX_RETRIES);
        assert_eq!(s.token_budget, None);
    }

    #[test]
    fn a_missing_base_url_or_model_says_what_to_set() {
        let err = llm_settings(None, &env(&[(ENV_MODEL, "m")]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("`base_url`") && err.contains(ENV_BASE_URL),
            "{err}"
        );
        let err = llm_settings(
            None,
            &env(&[(ENV_BASE_URL, "http://h/v1"), (ENV_MODEL, " ")]),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("`model`") && err.contains(ENV_MODEL), "{err}");
    }

    #[test]
    fn the_token_budget_comes_from_the_environment_when_set_and_must_be_a_count() {
        let s = llm_settings(Some(&spec()), &env(&[(ENV_TOKEN_BUDGET, " 5000 ")])).unwrap();
        assert_eq!(s.token_budget, Some(5000));
        let s = llm_settings(Some(&spec()), &env(&[(ENV_TOKEN_BUDGET, "")])).unwrap();
        assert_eq!(s.token_budget, Some(1000), "empty counts as unset");
        for bad in ["0", "-3", "lots", "1e6"] {
            let err = llm_settings(Some(&spec()), &env(&[(ENV_TOKEN_BUDGET, bad)]))
                .unwrap_err()
                .to_string();
            assert!(
                err.contains(ENV_TOKEN_BUDGET) && err.contains(&format!("`{bad}`")),
                "{err}"
            );
        }
    }

    #[test]
    fn a_bad_base_url_in_the_environment_is_refused() {
        let err = llm_settings(Some(&spec()), &env(&[(ENV_BASE_URL, "localhost:11434")]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(ENV_BASE_URL) && err.contains("not an http"),
            "{err}"
        );
    }

    #[test]
    fn api_key_env_names_the_variable_and_the_fwfix_variable_wins() {
        let mut s = spec();
        s.api_key_env = Some("OPENAI_API_KEY".into());
        let got = llm_settings(Some(&s), &env(&[("OPENAI_API_KEY", "sk-from-openai\n")])).unwrap();
        assert_eq!(
            got.api_key.as_ref().map(ApiKey::expose),
            Some("sk-from-openai")
        );
        assert_eq!(
            got.api_key.as_ref().map(ApiKey::source),
            Some("OPENAI_API_KEY")
        );

        let got = llm_settings(
            Some(&s),
            &env(&[("OPENAI_API_KEY", "sk-from-openai"), (ENV_API_KEY, KEY)]),
        )
        .unwrap();
        assert_eq!(got.api_key.as_ref().map(ApiKey::expose), Some(KEY));

        let err = llm_settings(Some(&s), &env(&[])).unwrap_err().to_string();
        assert!(
            err.contains("OPENAI_API_KEY") && err.contains(ENV_API_KEY),
            "{err}"
        );
    }

    #[test]
    fn a_key_a_header_cannot_carry_is_refused_without_quoting_it() {
        let err = llm_settings(Some(&spec()), &env(&[(ENV_API_KEY, "sk-a b")]))
            .unwrap_err()
            .to_string();
        assert!(err.contains(ENV_API_KEY) && !err.contains("sk-a"), "{err}");
    }

    #[test]
    fn debug_never_shows_the_key() {
        let s = llm_settings(Some(&spec()), &env(&[(ENV_API_KEY, KEY)])).unwrap();
        let shown = format!("{s:?} {:?}", s.api_key);
        assert!(!shown.contains(KEY), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
    }
}
