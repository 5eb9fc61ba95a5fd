//! Reading a chat-completions answer: the token usage, and for each choice the diff it proposes,
//! from a `propose_patch` tool call (arguments as a JSON string or object, a diff possibly
//! escaped once too often) or from the text of the message. Pure: JSON in, diffs or reasons out.

use crate::strategy::diff_extract::{extract_diff, UnifiedDiff};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The function the model is offered for its answer.
pub const TOOL_NAME: &str = "propose_patch";

/// Tokens spent, as the endpoint reports them in `usage`. An answer without `usage` adds nothing
/// to the counts and one to `unknown`: its tokens are not known, which is not zero.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// The endpoint's `total_tokens`, or prompt + completion when it gives none.
    #[serde(default)]
    pub total_tokens: u64,
    /// Answers received (retries not counted).
    pub requests: u64,
    /// Answers that reported no usage.
    #[serde(default)]
    pub unknown: u64,
}

impl TokenUsage {
    pub fn total(&self) -> u64 {
        self.total_tokens
            .max(self.prompt_tokens.saturating_add(self.completion_tokens))
    }

    pub fn add(&mut self, other: TokenUsage) {
        self.total_tokens = self.total().saturating_add(other.total());
        self.prompt_tokens = self.prompt_tokens.saturating_add(other.prompt_tokens);
        self.completion_tokens = self
            .completion_tokens
            .saturating_add(other.completion_tokens);
        self.requests = self.requests.saturating_add(other.requests);
        self.unknown = self.unknown.saturating_add(other.unknown);
    }
}

/// The usage one answer reports, counted as one request; unknown when it reports none.
pub fn usage_of(answer: &Value) -> TokenUsage {
    let Some(usage) = answer.get("usage").filter(|u| u.is_object()) else {
        return TokenUsage {
            requests: 1,
            unknown: 1,
            ..TokenUsage::default()
        };
    };
    let field = |name: &str| usage.get(name).and_then(Value::as_u64).unwrap_or(0);
    let (prompt, completion) = (field("prompt_tokens"), field("completion_tokens"));
    TokenUsage {
        prompt_tokens: prompt,
        completion_tokens: completion,
        total_tokens: field("total_tokens").max(prompt.saturating_add(completion)),
        requests: 1,
        unknown: 0,
    }
}

/// What one choice of an answer proposes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proposal {
    pub diff: UnifiedDiff,
    /// The model's `explanation`, when it used the tool and gave one.
    pub explanation: Option<String>,
}

/// One result per choice, in order; an answer without `choices` gives one reason.
pub fn proposals(answer: &Value) -> Vec<Result<Proposal, String>> {
    match answer.get("choices").and_then(Value::as_array) {
        Some(choices) if !choices.is_empty() => choices.iter().map(proposal).collect(),
        Some(_) | None => vec![Err(
            "the answer holds no `choices`: it is not a chat-completions answer".to_string(),
        )],
    }
}

fn proposal(choice: &Value) -> Result<Proposal, String> {
    let message = choice.get("message").unwrap_or(&Value::Null);
    let cut_off = choice.get("finish_reason").and_then(Value::as_str) == Some("length");
    let result = from_tool_call(message)
        .or_else(|| from_text_call(message))
        .unwrap_or_else(|| from_text(message));
    result.map_err(|reason| {
        if cut_off {
            format!("{reason} (the answer was cut off at the model's token limit)")
        } else {
            reason
        }
    })
}

/// A `propose_patch` call in `tool_calls`, or in the older `function_call`.
fn from_tool_call(message: &Value) -> Option<Result<Proposal, String>> {
    let calls = message.get("tool_calls").and_then(Value::as_array);
    let function = calls
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("function"))
        .chain(message.get("function_call"))
        .find(|f| f.get("name").and_then(Value::as_str) == Some(TOOL_NAME))?;
    Some(from_arguments(
        function.get("arguments").unwrap_or(&Value::Null),
    ))
}

/// Some local models write the call as JSON in their text instead of calling the tool.
fn from_text_call(message: &Value) -> Option<Result<Proposal, String>> {
    let text = text_of(message)?;
    let value: Value = serde_json::from_str(text.trim()).ok()?;
    if value.get("name").and_then(Value::as_str) != Some(TOOL_NAME) {
        return None;
    }
    let args = value.get("arguments").or_else(|| value.get("parameters"))?;
    Some(from_arguments(args))
}

fn from_text(message: &Value) -> Result<Proposal, String> {
    let text = text_of(message).unwrap_or_default();
    if text.trim().is_empty() {
        return Err(format!(
            "the answer is empty: no {TOOL_NAME} call and no text"
        ));
    }
    extract_diff(&text)
        .map(|diff| Proposal {
            diff,
            explanation: None,
        })
        .map_err(|e| format!("no {TOOL_NAME} call, and the text holds no usable diff: {e}"))
}

/// `content` as a string, or the text parts of a content array joined.
fn text_of(message: &Value) -> Option<String> {
    match message.get("content")? {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => Some(
            parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        _ => None,
    }
}

fn from_arguments(arguments: &Value) -> Result<Proposal, String> {
    let parsed;
    let args = match arguments {
        Value::String(s) => {
            parsed = parse_lenient(s)
                .ok_or_else(|| format!("the {TOOL_NAME} call's arguments are not JSON"))?;
            &parsed
        }
        other => other,
    };
    let diff = args
        .get("diff")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("the {TOOL_NAME} call has no `diff` string"))?;
    let diff = unescape_once(diff);
    let diff = extract_diff(&diff).map_err(|e| format!("the {TOOL_NAME} diff is unusable: {e}"))?;
    Ok(Proposal {
        diff,
        explanation: args
            .get("explanation")
            .and_then(Value::as_str)
            .map(str::to_string),
    })
}

/// JSON, or JSON whose strings hold raw newlines and tabs (which models emit and strict parsers
/// refuse): those are escaped inside strings and the text parsed again.
fn parse_lenient(text: &str) -> Option<Value> {
    if let Ok(v) = serde_json::from_str(text) {
        return Some(v);
    }
    let mut fixed = String::with_capacity(text.len() + 16);
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        match c {
            _ if escaped => {
                escaped = false;
                fixed.push(c);
            }
            '\\' if in_string => {
                escaped = true;
                fixed.push(c);
            }
            '"' => {
                in_string = !in_string;
                fixed.push(c);
            }
            '\n' if in_string => fixed.push_str("\\n"),
            '\r' if in_string => fixed.push_str("\\r"),
            '\t' if in_string => fixed.push_str("\\t"),
            _ => fixed.push(c),
        }
    }
    serde_json::from_str(&fixed).ok()
}

/// A diff that arrived escaped twice has literal `\n` and no newline: undo one level.
fn unescape_once(diff: &str) -> String {
    if diff.contains('\n') || !diff.contains("\\n") {
        return diff.to_string();
    }
    let mut out = String::with_capacity(diff.len());
    let mut chars = diff.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => {}
            Some('"') => out.push('"'),
            Some('\\') => out.push('\\'),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const CRC_FIX: &str = include_str!("../../../fixtures/fwtests/patches/04-fixes-crc16.diff");

    fn tool_answer(arguments: Value) -> Value {
        json!({
            "choices": [{
                "message": {
                    "role": "assistant",
                    "content": null,
                    "tool_calls": [{
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "propose_patch", "arguments": arguments}
                    }]
                },
                "finish_reason": "tool_calls"
            }],
            "usage": {"prompt_tokens": 812, "completion_tokens": 64, "total_tokens": 876}
        })
    }

    fn text_answer(content: &str, finish: &str) -> Value {
        json!({"choices": [{"message": {"role": "assistant", "content": content}, "finish_reason": finish}]})
    }

    fn only(answer: &Value) -> Result<Proposal, String> {
        let mut all = proposals(answer);
        assert_eq!(all.len(), 1);
        all.remove(0)
    }

    #[test]
    fn a_tool_call_with_string_arguments() {
        let args = json!({"diff": CRC_FIX, "explanation": "CCITT-FALSE starts at 0xFFFF"});
        let p = only(&tool_answer(Value::String(args.to_string()))).unwrap();
        assert_eq!(p.diff.text, CRC_FIX);
        assert_eq!(
            p.explanation.as_deref(),
            Some("CCITT-FALSE starts at 0xFFFF")
        );
    }

    #[test]
    fn a_tool_call_with_object_arguments_and_a_doubly_escaped_diff() {
        let escaped = CRC_FIX.replace('\n', "\\n");
        let p = only(&tool_answer(json!({"diff": escaped, "explanation": ""}))).unwrap();
        assert_eq!(p.diff.text, CRC_FIX);
    }

    #[test]
    fn arguments_with_raw_newlines_inside_strings_still_parse() {
        let raw = format!(
            "{{\"diff\": \"{}\", \"explanation\": \"seed\"}}",
            CRC_FIX.replace('"', "\\\"")
        );
        assert!(serde_json::from_str::<Value>(&raw).is_err());
        let p = only(&tool_answer(Value::String(raw))).unwrap();
        assert_eq!(p.diff.text, CRC_FIX);
    }

    #[test]
    fn a_tool_call_written_as_text() {
        let call = json!({"name": "propose_patch", "arguments": {"diff": CRC_FIX}}).to_string();
        let p = only(&text_answer(&call, "stop")).unwrap();
        assert_eq!(p.diff.text, CRC_FIX);
    }

    #[test]
    fn a_fenced_diff_in_the_text() {
        let content = format!("The seed is wrong:\n```diff\n{CRC_FIX}```\n");
        assert_eq!(
            only(&text_answer(&content, "stop")).unwrap().diff.text,
            CRC_FIX
        );
    }

    #[test]
    fn garbage_and_cut_off_answers_give_reasons() {
        let reason = only(&text_answer("I am not sure what is wrong.", "stop")).unwrap_err();
        assert!(reason.contains("no usable diff"), "{reason}");
        let reason = only(&text_answer(
            "```diff\n--- a/x\n+++ b/x\n@@ -1,4 +1,4 @@\n a\n",
            "length",
        ))
        .unwrap_err();
        assert!(
            reason.contains("truncated") && reason.contains("token limit"),
            "{reason}"
        );
        let reason = only(&tool_answer(Value::String("{not json".into()))).unwrap_err();
        assert!(reason.contains("not JSON"), "{reason}");
        let reason = only(&json!({"error": "nope"})).unwrap_err();
        assert!(reason.contains("no `choices`"), "{reason}");
    }

    #[test]
    fn usage_is_read_and_summed() {
        let mut total = TokenUsage::default();
        total.add(usage_of(&tool_answer(Value::Null)));
        total.add(usage_of(&json!({})));
        assert_eq!(
            total,
            TokenUsage {
                prompt_tokens: 812,
                completion_tokens: 64,
                total_tokens: 876,
                requests: 2,
                unknown: 1,
            },
            "the answer without usage is unknown, not zero"
        );
        assert_eq!(total.total(), 876);
    }

    #[test]
    fn the_endpoints_total_is_kept_when_it_counts_more() {
        // Some servers count reasoning or cached tokens only in the total.
        let u = usage_of(
            &json!({"usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 40}}),
        );
        assert_eq!((u.total(), u.unknown), (40, 0));
        let u = usage_of(&json!({"usage": {"prompt_tokens": 10, "completion_tokens": 5}}));
        assert_eq!(u.total(), 15);
        let old: TokenUsage = serde_json::from_value(
            json!({"prompt_tokens": 3, "completion_tokens": 4, "requests": 1}),
        )
        .unwrap();
        assert_eq!(
            old.total(),
            7,
            "a usage saved before totals were kept still adds up"
        );
    }

    #[test]
    fn several_choices_give_several_results() {
        let answer = json!({"choices": [
            {"message": {"content": format!("```diff\n{CRC_FIX}```")}},
            {"message": {"content": "no idea"}}
        ]});
        let all = proposals(&answer);
        assert!(all[0].is_ok() && all[1].is_err());
    }
}
