//! What fwfix asks the model: the system message (what a usable answer is), the user message
//! (the task and the evidence), the `propose_patch` tool, the request body, and `prompt.md`, the
//! readable record of all of it. Pure: it sees the settings but never the API key's value.

use super::answer::TOOL_NAME;
use crate::config::LlmSettings;
use crate::strategy::PatchRequest;
use serde_json::{json, Value};

/// What fwfix needs back, said once for every request.
pub const SYSTEM_PROMPT: &str = "\
You are fixing a bug in a firmware repository. fwfix will apply your patch, build the firmware, \
run its tests on the target, and tell you the result.

Answer with a patch by calling the `propose_patch` function. If you cannot call functions, put the \
patch in a single ```diff fenced block instead.

The patch must be:
- a minimal unified diff against the repository as it is now, in `git diff` format;
- with `--- a/PATH` and `+++ b/PATH` headers, PATH relative to the repository root;
- with every hunk header's line counts matching the lines that follow, and a few lines of \
unchanged context around each change, copied exactly;
- a fix of the code under test: never change, weaken or delete the tests, the test harness, or \
the build and linker files.

Change as little as possible, and explain the fix in one or two sentences.";

/// The `tools` entry offering `propose_patch`.
pub fn tools() -> Value {
    json!([{
        "type": "function",
        "function": {
            "name": TOOL_NAME,
            "description": "Propose a patch that fixes the failing tests.",
            "parameters": {
                "type": "object",
                "properties": {
                    "diff": {
                        "type": "string",
                        "description": "A unified diff with a/ and b/ paths relative to the repository root."
                    },
                    "explanation": {
                        "type": "string",
                        "description": "Why this change fixes the failure, in one or two sentences."
                    }
                },
                "required": ["diff", "explanation"]
            }
        }
    }])
}

/// The user message: the task, then the evidence.
pub fn user_message(req: &PatchRequest) -> String {
    format!(
        "# Task\n\n{}\n\n# Evidence\n\n{}\n",
        req.task.trim(),
        req.evidence_markdown.trim()
    )
}

/// The body of one `POST /chat/completions`; `with_tools` false for endpoints that refuse them.
pub fn request_body(settings: &LlmSettings, user: &str, with_tools: bool) -> Value {
    let mut body = json!({
        "model": settings.model,
        "messages": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": user},
        ],
    });
    if let Some(t) = settings.temperature {
        body["temperature"] = json!(t);
    }
    if with_tools {
        body["tools"] = tools();
        body["tool_choice"] = json!("auto");
    }
    body
}

/// `prompt.md`: what was sent, for a person to read. It names where the key came from, never
/// the key.
pub fn prompt_markdown(
    settings: &LlmSettings,
    req: &PatchRequest,
    url: &str,
    count: u32,
    body: &Value,
) -> String {
    let auth = match &settings.api_key {
        Some(key) => format!("Bearer key from `{}`", key.source()),
        None => "none".to_string(),
    };
    let temperature = settings
        .temperature
        .map_or("endpoint default".to_string(), |t| t.to_string());
    let tools = body
        .get("tools")
        .and_then(|t| serde_json::to_string_pretty(t).ok())
        .map_or(
            "none (the endpoint refused tools earlier in this run)".to_string(),
            |t| format!("`tool_choice: auto`\n\n```json\n{t}\n```"),
        );
    let user = body
        .pointer("/messages/1/content")
        .and_then(Value::as_str)
        .unwrap_or_default();
    format!(
        "# Prompt, iteration {iteration}\n\n\
         - endpoint: `POST {url}`\n\
         - model: `{model}`\n\
         - temperature: {temperature}\n\
         - requests: {count} (one candidate each)\n\
         - authorization: {auth}\n\n\
         ## System\n\n{SYSTEM_PROMPT}\n\n\
         ## User\n\n{user}\n\
         ## Tools\n\n{tools}\n",
        iteration = req.iteration,
        model = settings.model,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{llm_settings, ApiKey};
    use std::path::PathBuf;

    fn settings() -> LlmSettings {
        let mut s = llm_settings(None, &|name| match name {
            "FWFIX_LLM_BASE_URL" => Some("http://127.0.0.1:11434/v1".into()),
            "FWFIX_LLM_MODEL" => Some("qwen2.5-coder".into()),
            _ => None,
        })
        .unwrap();
        s.temperature = Some(0.2);
        s
    }

    fn request() -> PatchRequest {
        PatchRequest {
            iteration: 1,
            task: "make test_crc16_known_vector pass".into(),
            evidence: serde_json::Value::Null,
            evidence_markdown: "test_crc.c:42: Expected 0x29B1 Was 0x31C3".into(),
            work_dir: PathBuf::from("."),
            iteration_dir: PathBuf::from("."),
            candidates: 1,
            workspaces: Vec::new(),
        }
    }

    #[test]
    fn the_body_carries_model_messages_temperature_and_the_tool() {
        let s = settings();
        let body = request_body(&s, &user_message(&request()), true);
        assert_eq!(body["model"], "qwen2.5-coder");
        assert_eq!(body["temperature"], 0.2);
        assert_eq!(body["messages"][0]["role"], "system");
        let user = body["messages"][1]["content"].as_str().unwrap();
        assert!(user.contains("test_crc16_known_vector") && user.contains("0x29B1"));
        assert_eq!(body["tools"][0]["function"]["name"], TOOL_NAME);
        assert_eq!(body["tool_choice"], "auto");
        assert!(body.get("n").is_none());
        let bare = request_body(&s, "u", false);
        assert!(bare.get("tools").is_none() && bare.get("tool_choice").is_none());
    }

    #[test]
    fn prompt_md_names_the_key_source_not_the_key() {
        let mut s = settings();
        s.api_key = Some(ApiKey::new("sk-hidden-123", "FWFIX_LLM_API_KEY"));
        let body = request_body(&s, &user_message(&request()), true);
        let md = prompt_markdown(&s, &request(), "http://h/v1/chat/completions", 3, &body);
        assert!(md.contains("Bearer key from `FWFIX_LLM_API_KEY`"));
        assert!(!md.contains("sk-hidden-123"));
        assert!(md.contains("## System") && md.contains("## User") && md.contains("propose_patch"));
        assert!(md.contains("requests: 3"));
    }
}
