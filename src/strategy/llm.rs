//! The `llm` strategy: asks any OpenAI-compatible chat-completions endpoint (OpenAI, Ollama,
//! llama.cpp's server, vLLM) for candidate patches.
//!
//! One call of [`Strategy::candidates`]:
//! 1. build the request (`prompt`): system and user messages, the `propose_patch` tool, and write
//!    `prompt.md` to the iteration directory before anything is sent;
//! 2. send one request per candidate, `parallel` at a time, each retried with backoff on connect
//!    errors and HTTP 408/409/429/5xx (honouring `Retry-After`), never on other 4xx; an endpoint
//!    that refuses tools is asked again without them for the rest of the run;
//! 3. count the tokens each answer reports, per iteration and for the run, against the run's
//!    `token_budget`: once the run's total reaches it, no further request is sent (the answer
//!    that reached it is still used: its tokens are spent), and the strategy has nothing more;
//! 4. read each answer's proposals (`answer`), write the raw answers to `response.json`, and
//!    return the diffs that parse, or say why there is none.
//!
//! It must never write, log or return the API key: the key travels only in a sensitive
//! `Authorization` header (never in a URL), and every text that leaves this module — records,
//! error messages, raw answers — is scrubbed of it. It never touches the repository.

mod answer;
mod prompt;
mod retry;

pub use answer::TokenUsage;

use crate::config::{LlmSettings, LlmSpec};
use crate::report::{IterationTokens, Tokens};
use crate::rundir::write_atomic;
use crate::strategy::{Candidate, PatchRequest, Strategy, StrategyError, StrategyFacts};
use answer::Proposal;
use retry::StatusClass;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::hash::{BuildHasher, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// The longest one call of [`Strategy::candidates`] can take with `spec`'s settings (`None`:
/// the defaults), every wait included, so the state around it can leave it room. Requests run
/// in waves of `parallel`; one request sends at most twice (once more without tools when the
/// endpoint refuses them), each send `max_retries + 1` attempts of up to `timeout` with up to
/// [`retry::MAX_RETRY_AFTER`] between them.
pub fn longest_call(spec: Option<&LlmSpec>) -> Duration {
    let defaults = LlmSpec::default();
    let spec = spec.unwrap_or(&defaults);
    let waits = retry::MAX_RETRY_AFTER.max(retry::MAX_BACKOFF);
    let send = spec
        .timeout
        .saturating_mul(spec.max_retries.saturating_add(1))
        .saturating_add(waits.saturating_mul(spec.max_retries));
    let candidates = spec.candidates.max(1);
    let waves = candidates.div_ceil(spec.parallel.clamp(1, candidates));
    send.saturating_mul(2).saturating_mul(waves)
}

/// An answer larger than this is not a chat completion; reading stops there.
const MAX_ANSWER_BYTES: usize = 8 << 20;
/// What the API key is replaced with wherever it would have appeared.
const REDACTED: &str = "<redacted>";
/// How much of an error answer goes into a message.
const EXCERPT_CHARS: usize = 300;

/// The `llm` strategy. Cheap to keep for a whole run: token usage is summed across iterations.
pub struct LlmStrategy {
    shared: Arc<Shared>,
}

/// What the concurrent requests of one call share.
struct Shared {
    settings: LlmSettings,
    client: reqwest::Client,
    url: String,
    usage: Mutex<TokenUsage>,
    /// The same usage per iteration.
    per_iteration: Mutex<BTreeMap<u32, TokenUsage>>,
    /// Set once the endpoint has refused the `tools` parameter.
    tools_refused: AtomicBool,
}

impl LlmStrategy {
    /// An HTTP client for `settings`' endpoint. Fails only when the client cannot be built or the
    /// key cannot be carried in a header.
    pub fn new(settings: LlmSettings) -> Result<LlmStrategy, StrategyError> {
        let mut headers = reqwest::header::HeaderMap::new();
        if let Some(key) = &settings.api_key {
            let mut value =
                reqwest::header::HeaderValue::from_str(&format!("Bearer {}", key.expose()))
                    .map_err(|_| {
                        StrategyError::Failed(format!(
                            "the API key in {} cannot be sent in an HTTP header",
                            key.source()
                        ))
                    })?;
            // Keeps the value out of the client's own Debug output.
            value.set_sensitive(true);
            headers.insert(reqwest::header::AUTHORIZATION, value);
        }
        let client = reqwest::Client::builder()
            .default_headers(headers)
            .connect_timeout(settings.connect_timeout)
            .read_timeout(settings.idle_timeout)
            .timeout(settings.timeout)
            .user_agent(concat!("fwfix/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| {
                StrategyError::Failed(scrub(
                    &format!("cannot set up the HTTP client: {}", describe(e)),
                    &settings,
                ))
            })?;
        let url = chat_url(&settings.base_url);
        Ok(LlmStrategy {
            shared: Arc::new(Shared {
                settings,
                client,
                url,
                usage: Mutex::new(TokenUsage::default()),
                per_iteration: Mutex::new(BTreeMap::new()),
                tools_refused: AtomicBool::new(false),
            }),
        })
    }

    /// Tokens spent so far in this run, for report.json.
    pub fn usage(&self) -> TokenUsage {
        self.shared.usage()
    }
}

#[async_trait::async_trait]
impl Strategy for LlmStrategy {
    fn name(&self) -> &'static str {
        "llm"
    }

    /// A model can always be asked again, until the run's token budget is spent.
    fn has_more(&self) -> bool {
        self.shared.budget_spent().is_none()
    }

    fn stopped(&self) -> Option<String> {
        self.shared.budget_spent()
    }

    fn facts(&self) -> StrategyFacts {
        let run = self.shared.usage();
        let per_iteration = self
            .shared
            .per_iteration()
            .into_iter()
            .map(|(iteration, u)| IterationTokens {
                iteration,
                prompt: u.prompt_tokens,
                completion: u.completion_tokens,
                total: u.total(),
                unknown_responses: u32::try_from(u.unknown).unwrap_or(u32::MAX),
            })
            .collect();
        StrategyFacts {
            tokens: Some(Tokens {
                prompt: run.prompt_tokens,
                completion: run.completion_tokens,
                total: run.total(),
                budget: self.shared.settings.token_budget,
                unknown_responses: u32::try_from(run.unknown).unwrap_or(u32::MAX),
                per_iteration,
            }),
            ..StrategyFacts::default()
        }
    }

    /// Asks for `settings.candidates` answers (at most `req.candidates`), one request each, and
    /// returns every usable diff among them.
    async fn candidates(
        &mut self,
        req: &PatchRequest,
        cancel: &CancellationToken,
    ) -> Result<Vec<Candidate>, StrategyError> {
        if cancel.is_cancelled() {
            return Err(StrategyError::Cancelled);
        }
        let shared = &self.shared;
        let count = shared.settings.candidates.min(req.candidates).max(1);
        let user = shared.scrub(&prompt::user_message(req));
        let with_tools = !shared.tools_refused.load(Ordering::Relaxed);
        let body = prompt::request_body(&shared.settings, &user, with_tools);
        let md = prompt::prompt_markdown(&shared.settings, req, &shared.url, count, &body);
        write_record(&req.iteration_dir, "prompt.md", shared.scrub(&md)).await?;

        let group = cancel.child_token();
        let parallel = usize::try_from(shared.settings.parallel.clamp(1, count))
            .map_or(1, |n| n.min(Semaphore::MAX_PERMITS));
        let limit = Arc::new(Semaphore::new(parallel));
        let mut tasks = JoinSet::new();
        for index in 1..=count {
            tasks.spawn(ask(
                Arc::clone(shared),
                body.clone(),
                req.iteration,
                index,
                group.clone(),
                Arc::clone(&limit),
            ));
        }
        let mut exchanges = Vec::new();
        loop {
            let next = tokio::select! {
                biased;
                () = cancel.cancelled() => {
                    tasks.abort_all();
                    return Err(StrategyError::Cancelled);
                }
                next = tasks.join_next() => next,
            };
            let Some(joined) = next else { break };
            let exchange = joined.unwrap_or_else(|e| Exchange {
                index: 0,
                record: json!({"error": format!("the request task failed: {e}")}),
                outcome: Err(Failure::Failed(format!("the request task failed: {e}"))),
            });
            // A refused key or an exhausted budget will not get better for the siblings.
            if matches!(
                exchange.outcome,
                Err(Failure::Fatal(_) | Failure::Budget(_))
            ) {
                group.cancel();
            }
            exchanges.push(exchange);
        }
        exchanges.sort_by_key(|e| e.index);

        let records = json!({
            "endpoint": shared.url,
            "model": shared.settings.model,
            "answers": exchanges.iter().map(|e| e.record.clone()).collect::<Vec<_>>(),
            "run_usage": shared.usage(),
        });
        let text = serde_json::to_string_pretty(&records).unwrap_or_else(|e| e.to_string());
        write_record(&req.iteration_dir, "response.json", shared.scrub(&text)).await?;

        gather(exchanges, count, &shared.settings.model)
    }

    /// The tokens spent and whether the endpoint refused tools, so a resumed run keeps its
    /// budget and does not ask again.
    fn save(&self) -> Value {
        json!({
            "usage": self.shared.usage(),
            "per_iteration": self.shared.per_iteration(),
            "tools_refused": self.shared.tools_refused.load(Ordering::Relaxed),
        })
    }

    fn load(&mut self, saved: &Value) {
        if let Some(usage) = saved
            .get("usage")
            .and_then(|u| serde_json::from_value::<TokenUsage>(u.clone()).ok())
        {
            *self
                .shared
                .usage
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = usage;
        }
        if let Some(per_iteration) = saved
            .get("per_iteration")
            .and_then(|u| serde_json::from_value::<BTreeMap<u32, TokenUsage>>(u.clone()).ok())
        {
            *self
                .shared
                .per_iteration
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = per_iteration;
        }
        if saved.get("tools_refused").and_then(Value::as_bool) == Some(true) {
            self.shared.tools_refused.store(true, Ordering::Relaxed);
        }
    }
}

/// What went wrong with one request.
#[derive(Debug)]
enum Failure {
    /// Stopped because the call was cancelled or a sibling failed for good.
    Cancelled,
    /// Will fail the same way for every request of the run: a refused request.
    Fatal(String),
    /// The run's token budget was spent before this request could be sent.
    Budget(String),
    /// This request failed: timeouts, transport errors, retries spent.
    Failed(String),
    /// An answer came, but holds no usable diff.
    Unusable { reason: String, raw: String },
}

/// One request: its record for `response.json`, and what came of it.
struct Exchange {
    index: u32,
    record: Value,
    outcome: Result<Vec<Proposal>, Failure>,
}

/// A successful HTTP exchange.
struct Reply {
    text: String,
    attempts: u32,
}

/// Why [`Shared::send`] got no successful answer.
enum SendError {
    Cancelled,
    Status {
        status: u16,
        text: String,
        attempts: u32,
        /// Set when fwfix gave up because `Retry-After` asked for too long.
        retry_after: Option<Duration>,
    },
    TimedOut {
        attempts: u32,
    },
    Transport {
        detail: String,
        attempts: u32,
    },
}

/// Sends one request for one candidate and reads its answer.
async fn ask(
    shared: Arc<Shared>,
    mut body: Value,
    iteration: u32,
    index: u32,
    cancel: CancellationToken,
    limit: Arc<Semaphore>,
) -> Exchange {
    let _permit = tokio::select! {
        () = cancel.cancelled() => None,
        permit = limit.acquire_owned() => permit.ok(),
    };
    let exchange = |record: Value, outcome| Exchange {
        index,
        record,
        outcome,
    };
    if cancel.is_cancelled() {
        return exchange(
            json!({"request": index, "error": "cancelled"}),
            Err(Failure::Cancelled),
        );
    }
    if let Some(message) = shared.budget_spent() {
        return exchange(
            json!({"request": index, "error": message}),
            Err(Failure::Budget(message)),
        );
    }

    let mut result = shared.send(&body, &cancel).await;
    if let Err(SendError::Status {
        status: 400, text, ..
    }) = &result
    {
        if body.get("tools").is_some() && text.to_lowercase().contains("tool") {
            shared.tools_refused.store(true, Ordering::Relaxed);
            if let Some(map) = body.as_object_mut() {
                map.remove("tools");
                map.remove("tool_choice");
            }
            result = shared.send(&body, &cancel).await;
        }
    }
    let with_tools = body.get("tools").is_some();

    let reply = match result {
        Ok(reply) => reply,
        Err(e) => {
            let (record, failure) = shared.send_failure(index, e);
            return exchange(record, Err(failure));
        }
    };
    let text = shared.scrub(&reply.text);
    let Ok(answer) = serde_json::from_str::<Value>(&text) else {
        return exchange(
            json!({"request": index, "attempts": reply.attempts, "status": 200, "tools": with_tools, "answer": text}),
            Err(Failure::Unusable {
                reason: "the endpoint answered HTTP 200 with something that is not JSON".into(),
                raw: text,
            }),
        );
    };
    let record = json!({
        "request": index,
        "attempts": reply.attempts,
        "status": 200,
        "tools": with_tools,
        "answer": answer,
    });
    shared.count_usage(iteration, answer::usage_of(&answer));
    let (proposals, reasons): (Vec<_>, Vec<_>) = answer::proposals(&answer)
        .into_iter()
        .partition(Result::is_ok);
    let proposals: Vec<Proposal> = proposals.into_iter().filter_map(Result::ok).collect();
    if proposals.is_empty() {
        let reason = reasons
            .into_iter()
            .filter_map(Result::err)
            .collect::<Vec<_>>()
            .join("; ");
        return exchange(record, Err(Failure::Unusable { reason, raw: text }));
    }
    exchange(record, Ok(proposals))
}

impl Shared {
    fn usage(&self) -> TokenUsage {
        *self.usage.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn per_iteration(&self) -> BTreeMap<u32, TokenUsage> {
        self.per_iteration
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Why no further request may be sent, once the run's total has reached its budget.
    fn budget_spent(&self) -> Option<String> {
        let budget = self.settings.token_budget?;
        let used = self.usage();
        (used.total() >= budget).then(|| {
            let unknown = match used.unknown {
                0 => String::new(),
                n => format!(" (and {n} answer(s) whose usage the endpoint did not report)"),
            };
            format!(
                "token budget of {budget} spent after {} tokens{unknown}",
                used.total()
            )
        })
    }

    /// Adds one answer's usage to the run's and its iteration's.
    fn count_usage(&self, iteration: u32, spent: TokenUsage) {
        self.usage
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .add(spent);
        self.per_iteration
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(iteration)
            .or_default()
            .add(spent);
    }

    fn scrub(&self, text: &str) -> String {
        scrub(text, &self.settings)
    }

    /// POSTs `body`, retrying what is worth retrying, until an answer, a permanent failure, the
    /// retries running out, or `cancel`.
    async fn send(&self, body: &Value, cancel: &CancellationToken) -> Result<Reply, SendError> {
        let mut retries = 0u32;
        loop {
            let attempts = retries + 1;
            let exchange = async {
                let response = self.client.post(&self.url).json(body).send().await?;
                let status = response.status().as_u16();
                let retry_after = response
                    .headers()
                    .get(reqwest::header::RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string);
                let text = read_limited(response).await?;
                Ok::<_, ReadError>((status, retry_after, text))
            };
            let outcome = tokio::select! {
                () = cancel.cancelled() => return Err(SendError::Cancelled),
                outcome = exchange => outcome,
            };
            let last = retries >= self.settings.max_retries;
            let jitter = jitter();
            let wait = match outcome {
                Ok((status, retry_after, text)) => match retry::classify(status) {
                    StatusClass::Success => return Ok(Reply { text, attempts }),
                    StatusClass::Permanent => {
                        return Err(SendError::Status {
                            status,
                            text,
                            attempts,
                            retry_after: None,
                        })
                    }
                    StatusClass::Transient => {
                        let asked = retry_after
                            .and_then(|v| retry::parse_retry_after(&v, chrono::Utc::now()));
                        if last || asked.is_some_and(|w| w > retry::MAX_RETRY_AFTER) {
                            return Err(SendError::Status {
                                status,
                                text,
                                attempts,
                                retry_after: asked.filter(|w| *w > retry::MAX_RETRY_AFTER),
                            });
                        }
                        asked.unwrap_or_else(|| {
                            retry::backoff(self.settings.backoff_base, retries, jitter)
                        })
                    }
                },
                Err(ReadError::TooLarge) => {
                    return Err(SendError::Transport {
                        detail: format!("the answer is larger than {MAX_ANSWER_BYTES} bytes"),
                        attempts,
                    })
                }
                // A connect timeout is a connect error (below), not a slow answer.
                Err(ReadError::Http(e)) if e.is_timeout() && !e.is_connect() => {
                    return Err(SendError::TimedOut { attempts })
                }
                Err(ReadError::Http(e)) => {
                    // Connection refused or dropped before an answer: the server may be starting.
                    let transient = e.is_connect() || e.is_request();
                    if last || !transient {
                        let detail = if e.is_connect() && e.is_timeout() {
                            format!(
                                "no connection within {} (connect_timeout_s in [strategy.llm])",
                                seconds(self.settings.connect_timeout)
                            )
                        } else {
                            describe(e)
                        };
                        return Err(SendError::Transport { detail, attempts });
                    }
                    retry::backoff(self.settings.backoff_base, retries, jitter)
                }
            };
            tokio::select! {
                () = cancel.cancelled() => return Err(SendError::Cancelled),
                () = tokio::time::sleep(wait) => {}
            }
            retries += 1;
        }
    }

    /// The record and the failure for a request that got no usable HTTP answer.
    fn send_failure(&self, index: u32, error: SendError) -> (Value, Failure) {
        let settings = &self.settings;
        let url = &self.url;
        let retried = |attempts: u32| match attempts {
            1 => String::new(),
            n => format!(" (after {} retries)", n - 1),
        };
        let (record, failure) = match error {
            SendError::Cancelled => (
                json!({"request": index, "error": "cancelled"}),
                Failure::Cancelled,
            ),
            SendError::TimedOut { attempts } => {
                let silence = if settings.idle_timeout < settings.timeout {
                    format!(
                        ", or {} without a byte (idle_timeout_s)",
                        seconds(settings.idle_timeout)
                    )
                } else {
                    String::new()
                };
                let message = format!(
                    "POST {url} timed out: no complete answer within {} (timeout_s in \
                     [strategy.llm]){silence}{}",
                    seconds(settings.timeout),
                    retried(attempts)
                );
                (
                    json!({"request": index, "attempts": attempts, "error": message}),
                    Failure::Failed(message),
                )
            }
            SendError::Transport { detail, attempts } => {
                let message = format!("POST {url} failed: {detail}{}", retried(attempts));
                (
                    json!({"request": index, "attempts": attempts, "error": message}),
                    Failure::Failed(message),
                )
            }
            SendError::Status {
                status,
                text,
                attempts,
                retry_after,
            } => {
                let text = self.scrub(&text);
                let mut message = status_message(status, &text, url, settings);
                match retry_after {
                    Some(wait) => message.push_str(&format!(
                        "; it asked to wait {}, longer than fwfix waits ({})",
                        seconds(wait),
                        seconds(retry::MAX_RETRY_AFTER)
                    )),
                    None => message.push_str(&retried(attempts)),
                }
                let body = serde_json::from_str::<Value>(&text).unwrap_or(Value::String(text));
                let record = json!({
                    "request": index,
                    "attempts": attempts,
                    "status": status,
                    "answer": body,
                    "error": message,
                });
                let failure = match retry::classify(status) {
                    StatusClass::Permanent => Failure::Fatal(message),
                    StatusClass::Success | StatusClass::Transient => Failure::Failed(message),
                };
                (record, failure)
            }
        };
        match failure {
            Failure::Fatal(m) => (record, Failure::Fatal(self.scrub(&m))),
            Failure::Failed(m) => (record, Failure::Failed(self.scrub(&m))),
            other @ (Failure::Cancelled | Failure::Budget(_) | Failure::Unusable { .. }) => {
                (record, other)
            }
        }
    }
}

/// What an HTTP status means for the user, with what to do about it.
fn status_message(status: u16, body: &str, url: &str, settings: &LlmSettings) -> String {
    let detail = error_excerpt(body);
    let detail = if detail.is_empty() {
        String::new()
    } else {
        format!(": {detail}")
    };
    match status {
        401 => match &settings.api_key {
            Some(key) => format!(
                "the endpoint rejected the API key (HTTP 401){detail}; check the key in {}, or \
                 set FWFIX_LLM_API_KEY or api_key_env in [strategy.llm]",
                key.source()
            ),
            None => format!(
                "the endpoint rejected the request for lack of an API key (HTTP 401){detail}; \
                 set FWFIX_LLM_API_KEY or api_key_env in [strategy.llm]"
            ),
        },
        403 => format!(
            "the endpoint refused access (HTTP 403){detail}; the API key may not be allowed to \
             use model `{}`",
            settings.model
        ),
        404 => format!(
            "POST {url} found nothing (HTTP 404){detail}; check base_url (it usually ends in \
             /v1) and the model name `{}`",
            settings.model
        ),
        400 => format!("the endpoint refused the request as malformed (HTTP 400){detail}"),
        _ => format!("POST {url} answered HTTP {status}{detail}"),
    }
}

/// The useful part of an error answer: `error.message` when it is OpenAI-shaped JSON, else the
/// start of the text on one line.
fn error_excerpt(body: &str) -> String {
    let parsed = serde_json::from_str::<Value>(body).ok();
    let message = parsed.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("error"))
            .or_else(|| v.get("message"))
            .and_then(Value::as_str)
    });
    let text = message.unwrap_or(body);
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(EXCERPT_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

/// Picks the candidates, or the error that explains why there are none.
fn gather(
    exchanges: Vec<Exchange>,
    count: u32,
    model: &str,
) -> Result<Vec<Candidate>, StrategyError> {
    let limit = usize::try_from(count).unwrap_or(usize::MAX);
    let mut candidates = Vec::new();
    let mut failed = None;
    let mut budget = None;
    let mut unusable = Vec::new();
    for exchange in exchanges {
        match exchange.outcome {
            Ok(proposals) => {
                for p in proposals {
                    if candidates.len() < limit {
                        candidates.push(Candidate::new(
                            format!("model {model} #{}", candidates.len() + 1),
                            p.diff.text,
                        ));
                    }
                }
            }
            Err(Failure::Budget(m)) => {
                budget.get_or_insert(m);
            }
            Err(Failure::Fatal(m) | Failure::Failed(m)) => {
                failed.get_or_insert(m);
            }
            Err(Failure::Unusable { reason, raw }) => unusable.push((exchange.index, reason, raw)),
            Err(Failure::Cancelled) => {}
        }
    }
    if !candidates.is_empty() {
        return Ok(candidates);
    }
    if let Some(message) = budget {
        return Err(StrategyError::Exhausted(message));
    }
    if let Some(message) = failed {
        return Err(StrategyError::Failed(message));
    }
    match unusable.len() {
        0 => Err(StrategyError::Cancelled),
        1 => {
            let (_, reason, raw) = unusable.remove(0);
            Err(StrategyError::Unusable { reason, raw })
        }
        n => Err(StrategyError::Unusable {
            reason: format!(
                "none of the {n} answers holds a usable patch: {}",
                unusable
                    .iter()
                    .map(|(i, reason, _)| format!("#{i}: {reason}"))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
            raw: unusable
                .iter()
                .map(|(i, _, raw)| format!("----- answer #{i} -----\n{raw}"))
                .collect::<Vec<_>>()
                .join("\n"),
        }),
    }
}

enum ReadError {
    Http(reqwest::Error),
    TooLarge,
}

impl From<reqwest::Error> for ReadError {
    fn from(e: reqwest::Error) -> Self {
        ReadError::Http(e)
    }
}

/// The body, up to [`MAX_ANSWER_BYTES`]; invalid UTF-8 is replaced, not refused.
async fn read_limited(mut response: reqwest::Response) -> Result<String, ReadError> {
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if bytes.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(ReadError::TooLarge);
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// `{base_url}/chat/completions`, unless the base URL already names the endpoint.
fn chat_url(base_url: &str) -> String {
    let base = base_url.trim_end_matches('/');
    if base.ends_with("/chat/completions") {
        base.to_string()
    } else {
        format!("{base}/chat/completions")
    }
}

/// An error and its causes on one line, without the URL reqwest would add.
fn describe(error: reqwest::Error) -> String {
    let error = error.without_url();
    let mut parts: Vec<String> = Vec::new();
    let mut next: Option<&dyn std::error::Error> = Some(&error);
    while let Some(e) = next {
        let text = e.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        next = e.source();
    }
    parts.join(": ")
}

/// `text` with the API key replaced, wherever it came from.
fn scrub(text: &str, settings: &LlmSettings) -> String {
    match &settings.api_key {
        Some(key) if !key.expose().is_empty() => text.replace(key.expose(), REDACTED),
        Some(_) | None => text.to_string(),
    }
}

/// A draw in `[0, 1)`. The standard library's hasher keys are random per instance, which is all
/// the randomness backoff jitter needs.
fn jitter() -> f64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

fn seconds(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

/// Writes one record atomically in the iteration directory, off the async threads.
async fn write_record(dir: &Path, name: &str, text: String) -> Result<(), StrategyError> {
    let path: PathBuf = dir.join(name);
    let dir = dir.to_path_buf();
    let target = path.clone();
    let written = tokio::task::spawn_blocking(move || {
        std::fs::create_dir_all(&dir)?;
        write_atomic(&target, text.as_bytes())
    })
    .await;
    match written {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(StrategyError::Failed(format!(
            "cannot write {}: {e}",
            path.display()
        ))),
        Err(e) => Err(StrategyError::Failed(format!(
            "cannot write {}: {e}",
            path.display()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{llm_settings, ApiKey};

    fn settings(key: Option<&str>) -> LlmSettings {
        let mut s = llm_settings(None, &|name| match name {
            "FWFIX_LLM_BASE_URL" => Some("http://127.0.0.1:9/v1".into()),
            "FWFIX_LLM_MODEL" => Some("m".into()),
            _ => None,
        })
        .unwrap();
        s.api_key = key.map(|k| ApiKey::new(k, "FWFIX_LLM_API_KEY"));
        s
    }

    #[test]
    fn the_chat_url_is_built_once() {
        assert_eq!(chat_url("http://h:1/v1"), "http://h:1/v1/chat/completions");
        assert_eq!(chat_url("http://h:1/v1/"), "http://h:1/v1/chat/completions");
        assert_eq!(
            chat_url("https://h/v1/chat/completions"),
            "https://h/v1/chat/completions"
        );
    }

    #[test]
    fn status_messages_say_what_to_do() {
        let s = settings(Some("sk-1"));
        let m = status_message(401, r#"{"error":{"message":"bad key"}}"#, "u", &s);
        assert!(
            m.contains("rejected the API key") && m.contains("FWFIX_LLM_API_KEY"),
            "{m}"
        );
        assert!(m.contains("bad key"), "{m}");
        let m = status_message(401, "", "u", &settings(None));
        assert!(m.contains("lack of an API key"), "{m}");
        let m = status_message(404, "not found", "http://h/v1/chat/completions", &s);
        assert!(m.contains("check base_url") && m.contains("`m`"), "{m}");
        let m = status_message(503, "overloaded", "u", &s);
        assert_eq!(m, "POST u answered HTTP 503: overloaded");
    }

    #[test]
    fn error_excerpts_are_short_single_lines() {
        assert_eq!(
            error_excerpt(r#"{"error":"model not loaded"}"#),
            "model not loaded"
        );
        assert_eq!(error_excerpt("a\n  b"), "a b");
        let long = "x".repeat(1000);
        assert_eq!(error_excerpt(&long).chars().count(), EXCERPT_CHARS + 1);
    }

    #[test]
    fn scrubbing_removes_every_copy_of_the_key() {
        let s = settings(Some("sk-abc"));
        assert_eq!(
            scrub("Bearer sk-abc and sk-abc", &s),
            "Bearer <redacted> and <redacted>"
        );
        assert_eq!(scrub("sk-abc", &settings(None)), "sk-abc");
    }

    #[test]
    fn usage_and_tool_refusal_survive_a_resume() {
        let first = LlmStrategy::new(settings(None)).unwrap();
        first.shared.count_usage(
            2,
            TokenUsage {
                prompt_tokens: 10,
                completion_tokens: 5,
                total_tokens: 15,
                requests: 1,
                unknown: 0,
            },
        );
        first.shared.tools_refused.store(true, Ordering::Relaxed);
        let saved = first.save();
        let mut resumed = LlmStrategy::new(settings(None)).unwrap();
        resumed.load(&saved);
        assert_eq!(resumed.usage(), first.usage());
        assert_eq!(resumed.facts(), first.facts());
        assert_eq!(
            resumed.facts().tokens.unwrap().per_iteration[0].iteration,
            2
        );
        assert!(resumed.shared.tools_refused.load(Ordering::Relaxed));
        resumed.load(&Value::Null);
        assert_eq!(resumed.usage().total(), 15);
    }

    #[test]
    fn the_longest_call_leaves_room_for_every_attempt_wait_and_wave() {
        // The defaults: one request, 4 attempts of 120 s and 3 waits, sent at most twice.
        assert_eq!(
            longest_call(None),
            Duration::from_secs(2 * (4 * 120 + 3 * 300))
        );
        let spec = LlmSpec {
            timeout: Duration::from_secs(300),
            max_retries: 1,
            candidates: 5,
            parallel: 2,
            ..LlmSpec::default()
        };
        // Three waves (2 + 2 + 1) of requests that each take up to 2 × (2 × 300 + 300) s.
        assert_eq!(longest_call(Some(&spec)), Duration::from_secs(3 * 2 * 900));
        let all_at_once = LlmSpec {
            parallel: 8,
            ..spec.clone()
        };
        assert_eq!(
            longest_call(Some(&all_at_once)),
            Duration::from_secs(2 * 900)
        );
        let no_retries = LlmSpec {
            max_retries: 0,
            candidates: 1,
            ..spec
        };
        assert_eq!(longest_call(Some(&no_retries)), Duration::from_secs(600));
    }

    #[test]
    fn jitter_is_in_range() {
        for _ in 0..100 {
            let j = jitter();
            assert!((0.0..1.0).contains(&j));
        }
    }

    fn proposal() -> Proposal {
        let diff = crate::strategy::diff_extract::parse_unified_diff(
            "--- a/x.c\n+++ b/x.c\n@@ -1 +1 @@\n-a\n+b\n",
        )
        .unwrap();
        Proposal {
            diff,
            explanation: None,
        }
    }

    fn exchange(index: u32, outcome: Result<Vec<Proposal>, Failure>) -> Exchange {
        Exchange {
            index,
            record: Value::Null,
            outcome,
        }
    }

    #[test]
    fn usable_answers_win_over_failed_ones_and_are_numbered() {
        let got = gather(
            vec![
                exchange(1, Err(Failure::Failed("timed out".into()))),
                exchange(2, Ok(vec![proposal(), proposal()])),
                exchange(3, Ok(vec![proposal()])),
            ],
            2,
            "m",
        )
        .unwrap();
        let origins: Vec<_> = got.iter().map(|c| c.origin.as_str()).collect();
        assert_eq!(origins, ["model m #1", "model m #2"]);
    }

    #[test]
    fn failures_come_before_unusable_answers_and_the_budget_before_failures() {
        let err = gather(
            vec![
                exchange(
                    1,
                    Err(Failure::Unusable {
                        reason: "r".into(),
                        raw: "x".into(),
                    }),
                ),
                exchange(2, Err(Failure::Failed("HTTP 500".into()))),
            ],
            2,
            "m",
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "HTTP 500");
        let got = gather(
            vec![
                exchange(1, Ok(vec![proposal()])),
                exchange(2, Err(Failure::Budget("token budget of 5 spent".into()))),
            ],
            2,
            "m",
        )
        .unwrap();
        assert_eq!(got.len(), 1, "the answer that spent the budget is used");
        let err = gather(
            vec![
                exchange(1, Err(Failure::Failed("HTTP 500".into()))),
                exchange(2, Err(Failure::Budget("token budget of 5 spent".into()))),
            ],
            2,
            "m",
        )
        .unwrap_err();
        assert!(matches!(err, StrategyError::Exhausted(_)), "{err}");
    }

    #[test]
    fn the_budget_stops_further_requests_once_reached_and_says_so() {
        let mut s = settings(None);
        s.token_budget = Some(100);
        let strategy = LlmStrategy::new(s).unwrap();
        assert!(strategy.has_more());
        let spent = |p, c| TokenUsage {
            prompt_tokens: p,
            completion_tokens: c,
            total_tokens: p + c,
            requests: 1,
            unknown: 0,
        };
        strategy.shared.count_usage(1, spent(60, 30));
        assert!(strategy.has_more());
        strategy.shared.count_usage(2, spent(8, 2));
        assert!(!strategy.has_more());
        assert_eq!(
            strategy.stopped().unwrap(),
            "token budget of 100 spent after 100 tokens"
        );
        let tokens = strategy.facts().tokens.unwrap();
        assert_eq!(
            (
                tokens.prompt,
                tokens.completion,
                tokens.total,
                tokens.budget
            ),
            (68, 32, 100, Some(100))
        );
        assert_eq!(tokens.per_iteration.len(), 2);
        assert_eq!(tokens.per_iteration[1].total, 10);
    }

    #[test]
    fn several_unusable_answers_are_reported_together() {
        let unusable = |raw: &str| {
            Err(Failure::Unusable {
                reason: "no diff".into(),
                raw: raw.into(),
            })
        };
        match gather(
            vec![exchange(1, unusable("one")), exchange(2, unusable("two"))],
            2,
            "m",
        ) {
            Err(StrategyError::Unusable { reason, raw }) => {
                assert!(reason.contains("#1: no diff; #2: no diff"), "{reason}");
                assert!(raw.contains("answer #1") && raw.contains("two"), "{raw}");
            }
            other => panic!("{other:?}"),
        }
    }
}
