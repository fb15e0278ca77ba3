//! What the guardrails did, read back from stored tool results.
//!
//! Hermes writes every guardrail action into the tool result the model sees: a refused call's
//! result is a JSON object with the refusal under `guardrail` (action, code, count); a warning
//! or a halt after a call is appended to its result as a bracketed line with the code and
//! `count=N`. Reading them back gives the recorded decisions, and the tool's own result
//! without them (which is what the engine hashed).

use loopsim_engine::guardrails::{Action, DecisionCode};

/// A decision read back from a result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recovered {
    pub action: Action,
    pub code: DecisionCode,
    pub count: u32,
}

/// The two labels of an appended decision (Hermes's own, matched as data).
const APPENDED: [(&str, Action); 2] = [
    ("\n\n[Tool loop warning: ", Action::Warn),
    ("\n\n[Tool loop hard stop: ", Action::Halt),
];

/// A stored tool result split into the tool's own output and the recorded decision.
pub fn split(content: &str) -> (&str, Option<Recovered>) {
    if let Some(d) = refusal(content) {
        return (content, Some(d));
    }
    let found = APPENDED
        .iter()
        .filter_map(|(label, action)| content.find(label).map(|at| (at, *label, *action)))
        .min_by_key(|(at, _, _)| *at);
    let Some((at, label, action)) = found else {
        return (content, None);
    };
    let tail = &content[at + label.len()..];
    let mut parts = tail.splitn(3, "; ");
    let code = parts.next().and_then(DecisionCode::parse);
    let count = parts
        .next()
        .and_then(|c| c.strip_prefix("count="))
        .and_then(|c| c.parse().ok());
    match (code, count) {
        (Some(code), Some(count)) => (
            &content[..at],
            Some(Recovered {
                action,
                code,
                count,
            }),
        ),
        _ => (content, None),
    }
}

/// A refused call's synthetic result: `{"error": ..., "guardrail": {"action": "block", ...}}`.
fn refusal(content: &str) -> Option<Recovered> {
    let t = content.trim_start();
    if !t.starts_with('{') || !t.contains("\"guardrail\"") {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(t).ok()?;
    let g = v.get("guardrail")?.as_object()?;
    v.get("error")?;
    let action = Action::parse(g.get("action")?.as_str()?)?;
    if !action.halts() {
        return None;
    }
    Some(Recovered {
        action: Action::Block,
        code: DecisionCode::parse(g.get("code")?.as_str()?)?,
        count: u32::try_from(g.get("count")?.as_u64()?).ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appended_warning_is_split_off() {
        let r = "{\"ok\": 1}\n\n[Tool loop warning: repeated_exact_failure_warning; count=2; some words; more]";
        let (raw, d) = split(r);
        assert_eq!(raw, "{\"ok\": 1}");
        let d = d.unwrap();
        assert_eq!(d.action, Action::Warn);
        assert_eq!(d.code, DecisionCode::RepeatedExactFailureWarning);
        assert_eq!(d.count, 2);
    }

    #[test]
    fn refusal_json_is_a_block() {
        let r = r#"{"error": "no", "guardrail": {"action": "block", "code": "idempotent_no_progress_block", "message": "m", "tool_name": "read_file", "count": 5}}"#;
        let (raw, d) = split(r);
        assert_eq!(raw, r);
        assert_eq!(
            d,
            Some(Recovered {
                action: Action::Block,
                code: DecisionCode::IdempotentNoProgressBlock,
                count: 5
            })
        );
    }

    #[test]
    fn look_alikes_are_left_alone() {
        for r in [
            "plain output",
            "{\"guardrail\": 3}",
            "x\n\n[Tool loop warning: not_a_code; count=2; m]",
            "x\n\n[Tool loop warning: repeated_exact_failure_warning; count=two; m]",
        ] {
            assert_eq!(split(r), (r, None), "{r}");
        }
    }
}
