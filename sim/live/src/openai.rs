//! The OpenAI Chat Completions wire format: what a request says, and a reply as plain JSON or
//! as server-sent events.

use serde_json::{Value, json};

/// What loopsim reads from a `POST /v1/chat/completions` body.
#[derive(Clone, Debug, PartialEq)]
pub struct ChatRequest {
    pub model: String,
    pub messages: Vec<Message>,
    /// The request offers tools (a request without them is a summary or grace call).
    pub tools: bool,
    pub stream: bool,
    pub include_usage: bool,
    /// Hermes's rough size of the request in tokens ([`crate::estimate::rough_tokens`]).
    pub rough_tokens: u64,
}

/// One message of the conversation, as far as the scripted model reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct Message {
    pub role: String,
    /// Text content (array content parts joined).
    pub content: String,
    /// For `role = "tool"`: which call this is the result of.
    pub tool_call_id: Option<String>,
    /// For `role = "assistant"`: the ids of the tool calls it made.
    pub tool_call_ids: Vec<String>,
}

/// A request body loopsim cannot read, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("chat request: {0}")]
pub struct BadRequest(pub String);

fn text_of(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

impl ChatRequest {
    pub fn parse(body: &[u8]) -> Result<ChatRequest, BadRequest> {
        let v: Value =
            serde_json::from_slice(body).map_err(|e| BadRequest(format!("not JSON: {e}")))?;
        let model = v
            .get("model")
            .and_then(Value::as_str)
            .ok_or_else(|| BadRequest("no `model`".into()))?
            .to_string();
        let raw = v
            .get("messages")
            .and_then(Value::as_array)
            .ok_or_else(|| BadRequest("no `messages` array".into()))?;
        let messages = raw
            .iter()
            .map(|m| {
                let role = m
                    .get("role")
                    .and_then(Value::as_str)
                    .ok_or_else(|| BadRequest("a message without `role`".into()))?;
                Ok(Message {
                    role: role.to_string(),
                    content: text_of(m.get("content")),
                    tool_call_id: m
                        .get("tool_call_id")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    tool_call_ids: m
                        .get("tool_calls")
                        .and_then(Value::as_array)
                        .map(|calls| {
                            calls
                                .iter()
                                .filter_map(|c| c.get("id").and_then(Value::as_str))
                                .map(str::to_string)
                                .collect()
                        })
                        .unwrap_or_default(),
                })
            })
            .collect::<Result<Vec<_>, BadRequest>>()?;
        Ok(ChatRequest {
            model,
            messages,
            tools: v
                .get("tools")
                .and_then(Value::as_array)
                .is_some_and(|t| !t.is_empty()),
            stream: v.get("stream").and_then(Value::as_bool).unwrap_or(false),
            include_usage: v
                .pointer("/stream_options/include_usage")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            rough_tokens: crate::estimate::rough_tokens(
                raw,
                v.get("tools").and_then(Value::as_array),
            ),
        })
    }

    /// The first user message: the task (a child's carries its agent tag).
    pub fn first_user(&self) -> Option<&str> {
        self.messages
            .iter()
            .find(|m| m.role == "user")
            .map(|m| m.content.as_str())
    }
}

/// One tool call of a reply.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The arguments as JSON text.
    pub arguments: String,
}

/// What the scripted model answers.
#[derive(Clone, Debug, PartialEq)]
pub struct ChatReply {
    pub content: String,
    pub tool_calls: Vec<ToolCall>,
    pub prompt_tokens: u64,
    pub cached_tokens: u64,
    pub completion_tokens: u64,
}

impl ChatReply {
    fn finish_reason(&self) -> &'static str {
        if self.tool_calls.is_empty() {
            "stop"
        } else {
            "tool_calls"
        }
    }

    fn usage(&self) -> Value {
        json!({
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
            "prompt_tokens_details": { "cached_tokens": self.cached_tokens },
        })
    }

    fn calls_json(&self) -> Vec<Value> {
        self.tool_calls
            .iter()
            .map(|c| {
                json!({
                    "id": c.id,
                    "type": "function",
                    "function": { "name": c.name, "arguments": c.arguments },
                })
            })
            .collect()
    }

    /// The reply as one `chat.completion` object.
    pub fn to_json(&self, id: &str, model: &str) -> Value {
        let mut message = json!({ "role": "assistant", "content": self.content });
        if !self.tool_calls.is_empty() {
            message["tool_calls"] = Value::Array(self.calls_json());
        }
        json!({
            "id": id,
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [{ "index": 0, "message": message, "finish_reason": self.finish_reason() }],
            "usage": self.usage(),
        })
    }

    /// The reply as server-sent `chat.completion.chunk` events, ending in `[DONE]`.
    pub fn to_sse(&self, id: &str, model: &str, include_usage: bool) -> String {
        let chunk = |delta: Value, finish: Option<&str>| {
            json!({
                "id": id,
                "object": "chat.completion.chunk",
                "created": 0,
                "model": model,
                "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }],
            })
        };
        let mut events = vec![chunk(json!({ "role": "assistant", "content": "" }), None)];
        if !self.content.is_empty() {
            events.push(chunk(json!({ "content": self.content }), None));
        }
        for (i, c) in self.tool_calls.iter().enumerate() {
            events.push(chunk(
                json!({ "tool_calls": [{
                    "index": i,
                    "id": c.id,
                    "type": "function",
                    "function": { "name": c.name, "arguments": c.arguments },
                }] }),
                None,
            ));
        }
        let mut last = chunk(json!({}), Some(self.finish_reason()));
        if !include_usage {
            last["usage"] = self.usage();
        }
        events.push(last);
        if include_usage {
            events.push(json!({
                "id": id,
                "object": "chat.completion.chunk",
                "created": 0,
                "model": model,
                "choices": [],
                "usage": self.usage(),
            }));
        }
        let mut out = String::new();
        for e in events {
            out.push_str("data: ");
            out.push_str(&e.to_string());
            out.push_str("\n\n");
        }
        out.push_str("data: [DONE]\n\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_read_and_bad_ones_named() {
        let r = ChatRequest::parse(
            br#"{"model": "m", "stream": true, "stream_options": {"include_usage": true},
                 "tools": [{"type": "function"}],
                 "messages": [{"role": "system", "content": "sys"},
                              {"role": "user", "content": [{"type": "text", "text": "go"}]},
                              {"role": "assistant", "content": null,
                               "tool_calls": [{"id": "c1", "function": {}}]},
                              {"role": "tool", "tool_call_id": "c1", "content": "ok"}]}"#,
        )
        .unwrap();
        assert!(r.tools && r.stream && r.include_usage);
        assert_eq!(r.first_user(), Some("go"));
        assert_eq!(r.messages[2].tool_call_ids, vec!["c1".to_string()]);
        assert_eq!(r.messages[3].tool_call_id.as_deref(), Some("c1"));
        let no_tools = ChatRequest::parse(br#"{"model": "m", "messages": [], "tools": []}"#);
        assert!(!no_tools.unwrap().tools);
        let e = ChatRequest::parse(br#"{"messages": []}"#).unwrap_err();
        assert_eq!(e.to_string(), "chat request: no `model`");
        assert!(ChatRequest::parse(b"{").is_err());
    }

    #[test]
    fn replies_carry_calls_and_usage_in_both_encodings() {
        let reply = ChatReply {
            content: String::new(),
            tool_calls: vec![ToolCall {
                id: "call_1".into(),
                name: "terminal".into(),
                arguments: r#"{"command":"ls"}"#.into(),
            }],
            prompt_tokens: 1000,
            cached_tokens: 900,
            completion_tokens: 50,
        };
        let j = reply.to_json("x", "m");
        assert_eq!(j["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(j["usage"]["prompt_tokens_details"]["cached_tokens"], 900);
        assert_eq!(
            j["choices"][0]["message"]["tool_calls"][0]["function"]["name"],
            "terminal"
        );
        let sse = reply.to_sse("x", "m", true);
        assert!(sse.ends_with("data: [DONE]\n\n"));
        let events: Vec<Value> = sse
            .split("\n\n")
            .filter_map(|e| e.strip_prefix("data: "))
            .filter(|e| *e != "[DONE]")
            .map(|e| serde_json::from_str(e).unwrap())
            .collect();
        assert_eq!(events.last().unwrap()["usage"]["completion_tokens"], 50);
        assert!(
            events.last().unwrap()["choices"]
                .as_array()
                .unwrap()
                .is_empty()
        );
        assert!(
            events
                .iter()
                .any(|e| e["choices"][0]["finish_reason"] == "tool_calls")
        );
    }
}
