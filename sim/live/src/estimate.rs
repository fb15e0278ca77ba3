//! Hermes's rough estimate of a request's size (0.19.0, `agent/model_metadata.py`), from
//! which it decides to compact a conversation. Live mode pads what it returns by it, so that
//! Hermes's decision follows the context the scenario scripts (docs/live.md).

use serde_json::Value;

/// The characters Python's `str()` gives a JSON value (the shape Hermes's messages have):
/// JSON's own, plus the space Python puts after each `:` and `,`.
fn python_str_len(v: &Value) -> usize {
    match v {
        Value::Object(m) => {
            2 + m
                .iter()
                .map(|(k, v)| json_str_len(k) + 2 + python_str_len(v))
                .sum::<usize>()
                + 2 * m.len().saturating_sub(1)
        }
        Value::Array(a) => {
            2 + a.iter().map(python_str_len).sum::<usize>() + 2 * a.len().saturating_sub(1)
        }
        Value::String(s) => json_str_len(s),
        Value::Null => 4,
        Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(n) => n.to_string().len(),
    }
}

/// A quoted string's length in characters, escapes counted as Python shows them.
fn json_str_len(s: &str) -> usize {
    2 + s
        .chars()
        .map(|c| match c {
            '\\' | '\n' | '\t' | '\r' => 2,
            c if (c as u32) < 0x20 => 4,
            _ => 1,
        })
        .sum::<usize>()
}

/// Hermes's rough token estimate of a request before it sends it (0.19.0,
/// `agent/model_metadata.py`): the messages' `str()` length over 4, rounded up, plus the
/// tool schemas' names, descriptions and compact JSON parameters over 4. Within a few
/// characters per message of Hermes's own figure: what live mode pads tool results by, so
/// that Hermes's check before a call sees the context the scenario scripts.
pub fn rough_tokens(messages: &[Value], tools: Option<&Vec<Value>>) -> u64 {
    let chars: usize = messages.iter().map(python_str_len).sum();
    let mut total = chars.div_ceil(4) as u64;
    if let Some(tools) = tools {
        let schema: usize = tools
            .iter()
            .filter_map(|t| t.get("function").or(Some(t)))
            .map(|f| {
                let text = |k: &str| {
                    f.get(k)
                        .and_then(Value::as_str)
                        .map_or(0, |s| s.chars().count())
                };
                let params = f.get("parameters").map_or(2, |p| {
                    serde_json::to_string(p).map_or(0, |s| s.chars().count())
                });
                text("name") + text("description") + params
            })
            .sum();
        total += schema.div_ceil(4) as u64;
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_are_measured_as_python_prints_them() {
        // str({"role": "user", "content": "hi"}) is 33 characters; inside it a string is quoted
        // and a newline is 2 characters (a backslash and n).
        assert_eq!(
            python_str_len(&json!({"role": "user", "content": "hi"})),
            33
        );
        assert_eq!(python_str_len(&json!("a\nb")), 6);
        assert_eq!(python_str_len(&json!([1, null, true])), 15);
        // (33 + 3) / 4, then the tool's name, description and compact parameters over 4.
        let tools = vec![json!({"type": "function", "function": {
            "name": "read", "description": "Reads.", "parameters": {"type": "object"}}})];
        assert_eq!(
            rough_tokens(&[json!({"role": "user", "content": "hi"})], None),
            9
        );
        assert_eq!(
            rough_tokens(&[json!({"role": "user", "content": "hi"})], Some(&tools)),
            9 + (4 + 6 + 17usize).div_ceil(4) as u64
        );
    }
}
