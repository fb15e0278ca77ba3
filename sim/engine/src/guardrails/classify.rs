//! The fallback failure classifier: decides whether a tool result failed when the runtime did
//! not say. It mirrors the CLI's `[error]` tag so the guardrail and the user agree.

use crate::json::{self, Value};

use super::tools::is_file_mutating;

/// A word the pre-filters look for, with its searcher built once (building one per call
/// costs more than searching a short result).
struct Word(std::sync::LazyLock<memchr::memmem::Finder<'static>>);

macro_rules! word {
    ($name:ident, $text:literal) => {
        static $name: Word = Word(std::sync::LazyLock::new(|| {
            memchr::memmem::Finder::new($text)
        }));
    };
}

word!(TRUE, "true");
word!(FALSE, "false");
word!(EXIT_CODE, "exit_code");
word!(SUCCESS, "success");
word!(BYTES_WRITTEN, "bytes_written");
word!(GUARDRAIL_REFUSAL, "guardrail_refusal");

impl Word {
    fn in_text(&self, text: &[u8]) -> bool {
        self.0.find(text).is_some()
    }
}

/// Whether `text` can decode to JSON holding the member `"key": literal` anywhere: the literal
/// (`true`, `false`) has no escaped spelling, and the key is written as it is unless the text
/// has an escape. A cheap, sound test before a parse: most results fail it.
fn may_hold(text: &[u8], key: &Word, literal: &Word) -> bool {
    literal.in_text(text) && may_name(text, key)
}

/// Whether `text` can decode to JSON naming `key` (written as it is, or behind an escape).
fn may_name(text: &[u8], key: &Word) -> bool {
    key.in_text(text) || memchr::memchr(b'\\', text).is_some()
}

/// Parses after Python's `str.strip()`, as Hermes's result classifiers do.
fn parse_stripped(result: &[u8]) -> Option<Value> {
    json::parse(json::py_strip(result)).ok()
}

/// A write_file or patch result proving the write landed (it counts as success and progress).
pub fn file_mutation_landed(tool: &str, result: Option<&[u8]>) -> bool {
    if !is_file_mutating(tool) {
        return false;
    }
    let Some(text) = result else {
        return false;
    };
    if !(may_name(text, &BYTES_WRITTEN) || may_name(text, &SUCCESS)) {
        return false;
    }
    let Some(data) = result.and_then(parse_stripped) else {
        return false;
    };
    if !data.is_object() || data.get("error").is_some_and(Value::truthy) {
        return false;
    }
    match tool {
        "write_file" => data.get("bytes_written").is_some(),
        _ => data.get("success") == Some(&Value::Bool(true)),
    }
}

/// A harness refusal (`"guardrail_refusal": true`) carries `"error"` but is not a failure.
pub fn is_guardrail_refusal(result: &[u8]) -> bool {
    may_hold(result, &GUARDRAIL_REFUSAL, &TRUE)
        && parse_stripped(result)
            .is_some_and(|d| d.get("guardrail_refusal") == Some(&Value::Bool(true)))
}

/// Python's `needle in data.get("error", "")`: substring, list membership or key membership.
fn error_mentions(error: Option<&Value>, needle: &str) -> bool {
    match error {
        None => false,
        Some(Value::Str(s)) => contains(s, needle.as_bytes()),
        Some(Value::Array(items)) => items
            .iter()
            .any(|v| v.as_str_bytes() == Some(needle.as_bytes())),
        Some(Value::Object(pairs)) => pairs.iter().any(|(k, _)| k.as_slice() == needle.as_bytes()),
        // Python raises TypeError here; Hermes would crash. We read it as "no mention".
        Some(_) => false,
    }
}

/// `'"error"' in hay.lower() or '"failed"' in hay.lower()`, without building the lowered copy:
/// both start with a quote, which has no case, so only the bytes after each quote are
/// compared. ASCII case is enough for these words: the only non-ASCII letters Python lowers to
/// ASCII are the Kelvin sign (to `k`) and `İ` (to `i` plus a combining dot, which breaks the
/// word).
fn quotes_error_or_failed(hay: &[u8]) -> bool {
    let after = |at: usize, word: &[u8]| {
        hay.get(at + 1..at + 1 + word.len())
            .is_some_and(|w| w.eq_ignore_ascii_case(word))
    };
    memchr::memchr_iter(b'"', hay).any(|at| after(at, b"error\"") || after(at, b"failed\""))
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle)
}

/// The terminal rule read member by member, building no tree: `Some(failed)` when the text is
/// a strict JSON object (whose members the tree parser would read the same), `None` for
/// anything else, which the tree parser decides (Python's looser grammar: `NaN`, bytes that
/// are not UTF-8). The last `exit_code` written is the one that counts; Python's `code == 0`
/// holds for `0`, `0.0`, `-0.0` and `false`, read from the canonical print.
fn exit_code_failed(result: &[u8]) -> Option<bool> {
    /// The canonicalizer, a key buffer, the value just printed, and the exit code's print.
    type Scratch = (json::Canonicalizer, Vec<u8>, Vec<u8>, Vec<u8>);
    thread_local! {
        static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::default();
    }
    SCRATCH.with(|scratch| {
        let (canon, key_buf, printed, code) = &mut *scratch.borrow_mut();
        let mut members = json::Members::new(result)?;
        let mut kind = None;
        while let Some(key) = members.next_key(key_buf).ok()? {
            let is_code = key == b"exit_code";
            let k = members.value(canon, None, printed).ok()?;
            if is_code {
                kind = Some(k);
                std::mem::swap(code, printed);
            }
        }
        members.finish().ok()?;
        Some(match kind {
            None | Some(json::Kind::Null) => false,
            Some(json::Kind::Bool) => code.as_slice() != b"false",
            Some(json::Kind::Int) => code.as_slice() != b"0",
            Some(json::Kind::Float) => !matches!(code.as_slice(), b"0.0" | b"-0.0"),
            Some(_) => true,
        })
    })
}

/// Whether a result failed, by Hermes's fallback rules. `refusals` enables the newer rule that
/// a harness refusal is not a failure.
pub fn classify_failure(tool: &str, result: Option<&[u8]>, refusals: bool) -> bool {
    let Some(result) = result else {
        return false;
    };
    if file_mutation_landed(tool, Some(result)) {
        return false;
    }
    if refusals && is_guardrail_refusal(result) {
        return false;
    }
    if tool == "terminal" {
        if !may_name(result, &EXIT_CODE) {
            return false;
        }
        if let Some(failed) = exit_code_failed(result) {
            return failed;
        }
        return match json::parse(result) {
            Ok(data @ Value::Object(_)) => match data.get("exit_code") {
                None | Some(Value::Null) => false,
                Some(code) => !code.equals_zero(),
            },
            _ => false,
        };
    }
    if tool == "memory"
        && may_hold(result, &SUCCESS, &FALSE)
        && let Ok(data @ Value::Object(_)) = json::parse(result)
        && data.get("success") == Some(&Value::Bool(false))
        && error_mentions(data.get("error"), "exceed the limit")
    {
        return true;
    }
    let head = json::char_prefix(result, 500);
    quotes_error_or_failed(head) || result.starts_with(b"Error")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(tool: &str, r: &str) -> bool {
        classify_failure(tool, Some(r.as_bytes()), true)
    }

    #[test]
    fn terminal_uses_exit_code_with_python_equality() {
        assert!(failed("terminal", r#"{"exit_code":1}"#));
        assert!(failed("terminal", r#"{"exit_code":"0"}"#));
        assert!(!failed("terminal", r#"{"exit_code":0.0}"#));
        assert!(!failed("terminal", r#"{"exit_code":false}"#));
        assert!(!failed("terminal", r#"{"exit_code":null,"error":"x"}"#));
        assert!(!failed("terminal", "Error: not json"));
    }

    #[test]
    fn generic_rule_looks_at_the_first_500_characters() {
        assert!(failed("web_search", r#"{"ERROR": 1}"#));
        assert!(failed("web_search", "Error here"));
        assert!(!failed("web_search", "error here"));
        let late = format!("{}\"error\"", "é".repeat(500));
        assert!(!failed("web_search", &late));
        let early = format!("{}\"error\"", "é".repeat(493));
        assert!(failed("web_search", &early));
        // ASCII text: the 500 characters are the first 500 bytes.
        assert!(failed(
            "web_search",
            &format!("{}\"Failed\"", "a".repeat(492))
        ));
        assert!(!failed(
            "web_search",
            &format!("{}\"Failed\"", "a".repeat(493))
        ));
        assert!(!failed(
            "web_search",
            &format!("{}\"error", "a".repeat(900))
        ));
        assert!(!classify_failure("web_search", None, true));
    }

    #[test]
    fn landed_mutations_and_refusals_are_not_failures() {
        assert!(!failed(
            "write_file",
            r#" {"bytes_written": 3, "note": "error"} "#
        ));
        assert!(failed(
            "write_file",
            r#"{"bytes_written": 3, "error": "disk"}"#
        ));
        assert!(!failed(
            "patch",
            r#"{"success": true, "msg": "\"failed\""}"#
        ));
        assert!(!failed(
            "read_file",
            r#"{"error":"again","guardrail_refusal":true}"#
        ));
        assert!(classify_failure(
            "read_file",
            Some(br#"{"error":"again","guardrail_refusal":true}"#),
            false
        ));
    }

    /// The classifier as it was before the pre-filters: every rule on the parsed tree.
    fn by_tree(tool: &str, result: &[u8], refusals: bool) -> bool {
        let stripped = parse_stripped(result);
        let landed = is_file_mutating(tool)
            && stripped.as_ref().is_some_and(|d| {
                d.is_object()
                    && !d.get("error").is_some_and(Value::truthy)
                    && match tool {
                        "write_file" => d.get("bytes_written").is_some(),
                        _ => d.get("success") == Some(&Value::Bool(true)),
                    }
            });
        if landed {
            return false;
        }
        if refusals
            && stripped
                .as_ref()
                .is_some_and(|d| d.get("guardrail_refusal") == Some(&Value::Bool(true)))
        {
            return false;
        }
        let parsed = json::parse(result);
        if tool == "terminal" {
            return match parsed {
                Ok(data @ Value::Object(_)) => match data.get("exit_code") {
                    None | Some(Value::Null) => false,
                    Some(code) => !code.equals_zero(),
                },
                _ => false,
            };
        }
        if tool == "memory"
            && let Ok(data @ Value::Object(_)) = &parsed
            && data.get("success") == Some(&Value::Bool(false))
            && error_mentions(data.get("error"), "exceed the limit")
        {
            return true;
        }
        let head = json::char_prefix(result, 500);
        contains(&head.to_ascii_lowercase(), b"\"error\"")
            || contains(&head.to_ascii_lowercase(), b"\"failed\"")
            || result.starts_with(b"Error")
    }

    #[test]
    fn pre_filters_change_no_verdict() {
        let keys = [
            "\"exit_code\"",
            "\"exit\\u005fcode\"",
            "\"guardrail_refusal\"",
            "\"guardrail\\u005frefusal\"",
            "\"success\"",
            "\"succ\\u0065ss\"",
            "\"bytes_written\"",
            "\"error\"",
            "\"ERROR\"",
            "\"x\"",
        ];
        let values = [
            "true",
            "false",
            "null",
            "0",
            "1",
            "0.0",
            "\"0\"",
            "\"would exceed the limit\"",
            "[\"exceed the limit\"]",
            "{\"exceed the limit\": 1}",
            "\"a\\nb\"",
            "{\"exit_code\": 2}",
            "-0",
            "-0.0",
            "0e0",
            "0E-3",
            "1e400",
            "-1e-400",
            "NaN",
            "00",
            "[0]",
        ];
        let tools = [
            "terminal",
            "memory",
            "write_file",
            "patch",
            "read_file",
            "web_search",
        ];
        let mut state = 11u64;
        let mut next = |n: usize| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) as usize % n
        };
        for _ in 0..40_000 {
            let members: Vec<String> = (0..next(4))
                .map(|_| format!("{}: {}", keys[next(keys.len())], values[next(values.len())]))
                .collect();
            let mut text = format!("{{{}}}", members.join(", "));
            match next(6) {
                0 => text = format!("  {text}\n"),
                1 => text = format!("[{text}]"),
                2 => text.insert_str(0, "Error: "),
                _ => {}
            }
            let tool = tools[next(tools.len())];
            for refusals in [false, true] {
                assert_eq!(
                    classify_failure(tool, Some(text.as_bytes()), refusals),
                    by_tree(tool, text.as_bytes(), refusals),
                    "{tool} {text}"
                );
            }
        }
    }

    #[test]
    fn memory_full_is_a_failure() {
        assert!(failed(
            "memory",
            r#"{"success":false,"error":"would exceed the limit"}"#
        ));
        assert!(!failed("memory", r#"{"success":false,"message":"nope"}"#));
    }
}
