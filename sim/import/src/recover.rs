//! What the guardrails did, read back from stored tool results.
//!
//! Hermes writes every guardrail action into the tool result the model sees: a refused call's
//! result is a JSON object with the refusal under `guardrail` (action, code, count); a warning
//! or a halt after a call is appended to its result as a bracketed line with the code and
//! `count=N`. Reading them back gives the recorded decisions, and the tool's own result
//! without them (which is what the engine hashed).

use loopsim_engine::guardrails::{Action, DecisionCode, NoticeKind};

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

/// Where newer Hermes appends a stall-guard notice, and how its two kinds begin.
const NOTE: &str = "\n\n[hermes note: ";
const STREAK_NOTE: &str = "this is the ";
const CYCLE_NOTE: &str = "the last ";

/// The start of the reference newer Hermes stores instead of a byte-identical result.
pub const STUB: &str = "[hermes note: this result is byte-identical to the ";

/// A stall-guard notice read back from a result (newer Hermes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Notice {
    pub kind: NoticeKind,
    /// The streak length, or the number of laps of a cycle.
    pub count: u32,
    /// A cycle's period (0 for a streak).
    pub period: u32,
}

/// A stored tool result taken apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parts<'a> {
    /// The tool's own output (or the stub that replaced it).
    pub raw: &'a str,
    pub decision: Option<Recovered>,
    pub notice: Option<Notice>,
    /// The tool_call_id a stub points at, when the result was replaced by a stub.
    pub stub_of: Option<&'a str>,
    /// The result is a stub (the tool's bytes equalled an earlier result).
    pub stub: bool,
}

/// The leading number of `s` (`3rd` gives 3).
fn leading_number(s: &str) -> Option<u32> {
    let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// A stored tool result split into the tool's own output and what the guardrails added.
pub fn split(content: &str) -> (&str, Option<Recovered>) {
    let p = parts(content);
    (p.raw, p.decision)
}

/// Every guardrail trace in a stored result: a refusal, an appended decision, a stall-guard
/// notice, a stub. Appended lines count only at the end of the result, one bracketed block
/// after another, as Hermes appends them; the same words quoted inside a tool's output are
/// the tool's.
pub fn parts(content: &str) -> Parts<'_> {
    let mut out = Parts {
        raw: content,
        decision: refusal(content),
        notice: None,
        stub_of: None,
        stub: false,
    };
    if out.decision.is_some() {
        return out;
    }
    let mut rest = content;
    while let Some(at) = rest.rfind("\n\n[") {
        let block = &rest[at..];
        if !block.trim_end().ends_with(']') {
            break;
        }
        if let Some((label, action)) = APPENDED.iter().find(|(l, _)| block.starts_with(l)) {
            let mut fields = block[label.len()..].splitn(3, "; ");
            let code = fields.next().and_then(DecisionCode::parse);
            let count = fields
                .next()
                .and_then(|c| c.strip_prefix("count="))
                .and_then(|c| c.parse().ok());
            let (Some(code), Some(count)) = (code, count) else {
                break;
            };
            // A warning and a halt can both be there; the halt is what ended the turn.
            if out.decision.as_ref().is_none_or(|d| !d.action.halts()) {
                out.decision = Some(Recovered {
                    action: *action,
                    code,
                    count,
                });
            }
        } else if let Some(tail) = block.strip_prefix(NOTE) {
            let notice = if let Some(r) = tail.strip_prefix(STREAK_NOTE) {
                leading_number(r).map(|count| Notice {
                    kind: NoticeKind::IdenticalCallStreak,
                    count,
                    period: 0,
                })
            } else if let Some(r) = tail.strip_prefix(CYCLE_NOTE) {
                let laps = leading_number(r);
                let period = r
                    .find(" cycle of ")
                    .and_then(|i| leading_number(&r[i + " cycle of ".len()..]));
                laps.zip(period).map(|(count, period)| Notice {
                    kind: NoticeKind::IdenticalCycle,
                    count,
                    period,
                })
            } else {
                None
            };
            let Some(n) = notice else { break };
            out.notice = Some(n);
        } else {
            break;
        }
        rest = &rest[..at];
    }
    out.raw = rest;
    if out.raw.starts_with(STUB) {
        out.stub = true;
        out.stub_of = out.raw.find("(tool_call_id ").and_then(|i| {
            let tail = &out.raw[i + "(tool_call_id ".len()..];
            tail.find(')').map(|j| &tail[..j])
        });
    }
    out
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
    fn newer_notices_halts_and_stubs_are_read_back() {
        let r = "{\"status\": \"success\"}\n\n[Tool loop hard stop: identical_call_streak_halt; count=5; words]\n\n[hermes note: this is the 5th ...]";
        let p = parts(r);
        assert_eq!(p.raw, "{\"status\": \"success\"}");
        assert_eq!(
            p.decision.unwrap().code,
            DecisionCode::IdenticalCallStreakHalt
        );
        assert_eq!(
            p.notice,
            Some(Notice {
                kind: NoticeKind::IdenticalCallStreak,
                count: 5,
                period: 0
            })
        );
        let c = parts("x\n\n[hermes note: the last 3 rounds ... cycle of 2 ...]");
        assert_eq!(
            c.notice,
            Some(Notice {
                kind: NoticeKind::IdenticalCycle,
                count: 3,
                period: 2
            })
        );
        let stub = "[hermes note: this result is byte-identical to the read_file ... (tool_call_id call_7) ...]";
        let s = parts(stub);
        assert!(s.stub);
        assert_eq!(s.stub_of, Some("call_7"));
    }

    #[test]
    fn look_alikes_are_left_alone() {
        for r in [
            "out

[Tool loop hard stop: same_tool_failure_halt; count=5; quoted]
more output",
            "plain output",
            "{\"guardrail\": 3}",
            "x\n\n[Tool loop warning: not_a_code; count=2; m]",
            "x\n\n[Tool loop warning: repeated_exact_failure_warning; count=two; m]",
        ] {
            assert_eq!(split(r), (r, None), "{r}");
        }
    }
}
