//! A simulated trace against a live one, event by event.
//!
//! Both sides' events are grouped per agent (threads of a real runtime interleave agents in any
//! order; each agent's own sequence is what must agree) and compared on what both can observe:
//! model calls (tokens, latency), tool calls (tool, argument and result hashes, failure,
//! latency), guardrail decisions and notices, summary and approval calls, and turn ends
//! (Hermes's exit reason, the budget used, the calls so far). Not compared: what only the
//! engine sees inside the runtime (budget refunds, spawn and child bookkeeping events, the
//! budget at each model call), the result text of `delegate_task` (the runtime writes it) and
//! wall-clock figures.

use loopsim_world::trace::EventKind;
use serde_json::Value;

/// Event kinds both sides record.
pub const COMPARED_KINDS: &[EventKind] = &[
    EventKind::TurnStart,
    EventKind::ModelCall,
    EventKind::ModelError,
    EventKind::ToolCall,
    EventKind::ToolError,
    EventKind::ApprovalCall,
    EventKind::Decision,
    EventKind::Notice,
    EventKind::SummaryCall,
    EventKind::PlanningCall,
    EventKind::Compression,
    EventKind::TurnEnd,
    EventKind::ChildCrash,
];

/// Fields compared on every compared event (a field neither side has is equal).
pub const COMPARED_FIELDS: &[&str] = &[
    "t_us",
    "kind",
    "call",
    "tool",
    "args_hash",
    "result_hash",
    "failed",
    "action",
    "code",
    "count",
    "input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "output_tokens",
    "latency_us",
    "detail",
];

/// Where the two runs first part.
#[derive(Clone, Debug, PartialEq)]
pub struct Divergence {
    pub agent: String,
    /// The position in that agent's compared events (0-based).
    pub index: usize,
    /// The fields that differ (empty when one side has no event there).
    pub fields: Vec<String>,
    pub simulated: Option<Value>,
    pub live: Option<Value>,
}

fn compared(e: &Value) -> Option<Value> {
    let kind = EventKind::parse(e.get("kind")?.as_str()?)?;
    if !COMPARED_KINDS.contains(&kind) {
        return None;
    }
    let mut out = serde_json::Map::new();
    for f in COMPARED_FIELDS {
        if let Some(v) = e.get(*f) {
            out.insert((*f).to_string(), v.clone());
        }
    }
    if matches!(kind, EventKind::TurnEnd | EventKind::ChildCrash)
        && let Some(b) = e.get("budget_used")
    {
        out.insert("budget_used".into(), b.clone());
    }
    if kind == EventKind::ToolCall && e.get("tool").and_then(Value::as_str) == Some("delegate_task")
    {
        // delegate_task's result is the runtime's own text, not a scripted one.
        out.remove("result_hash");
    }
    Some(Value::Object(out))
}

fn by_agent(events: &[Value]) -> Vec<(String, Vec<Value>)> {
    let mut groups: Vec<(String, Vec<Value>)> = Vec::new();
    for e in events {
        let Some(agent) = e.get("agent").and_then(Value::as_str) else {
            continue;
        };
        let Some(c) = compared(e) else { continue };
        match groups.iter_mut().find(|(a, _)| a == agent) {
            Some((_, v)) => v.push(c),
            None => groups.push((agent.to_string(), vec![c])),
        }
    }
    groups
}

/// The first divergence, agent by agent in the order the simulation met them, or none.
pub fn first_divergence(simulated: &[Value], live: &[Value]) -> Option<Divergence> {
    let sim = by_agent(simulated);
    let live = by_agent(live);
    let mut names: Vec<&str> = sim.iter().map(|(a, _)| a.as_str()).collect();
    for (a, _) in &live {
        if !names.contains(&a.as_str()) {
            names.push(a);
        }
    }
    let empty = Vec::new();
    for name in names {
        let s = sim.iter().find(|(a, _)| a == name).map_or(&empty, |x| &x.1);
        let l = live
            .iter()
            .find(|(a, _)| a == name)
            .map_or(&empty, |x| &x.1);
        for i in 0..s.len().max(l.len()) {
            let (a, b) = (s.get(i), l.get(i));
            if a == b {
                continue;
            }
            let fields = match (a, b) {
                (Some(Value::Object(x)), Some(Value::Object(y))) => {
                    let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
                    keys.sort();
                    keys.dedup();
                    keys.into_iter()
                        .filter(|k| x.get(*k) != y.get(*k))
                        .cloned()
                        .collect()
                }
                _ => Vec::new(),
            };
            return Some(Divergence {
                agent: name.to_string(),
                index: i,
                fields,
                simulated: a.cloned(),
                live: b.cloned(),
            });
        }
    }
    None
}

/// How many events of each side were compared.
pub fn compared_counts(simulated: &[Value], live: &[Value]) -> (usize, usize) {
    let n = |v: &[Value]| v.iter().filter(|e| compared(e).is_some()).count();
    (n(simulated), n(live))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn agents_are_compared_on_their_own_sequences() {
        let sim = vec![
            json!({"t_us": 0, "agent": "parent", "kind": "model_call", "call": 1}),
            json!({"t_us": 5, "agent": "worker#1", "kind": "model_call", "call": 1}),
            json!({"t_us": 6, "agent": "parent", "kind": "budget_refund", "budget_used": 0}),
            json!({"t_us": 9, "agent": "parent", "kind": "turn_end", "detail": "x", "budget_used": 1}),
        ];
        // The same per agent, interleaved differently, without the engine-only refund.
        let live = vec![sim[1].clone(), sim[0].clone(), sim[3].clone()];
        assert_eq!(first_divergence(&sim, &live), None);
        let mut changed = live.clone();
        changed[2]["budget_used"] = json!(2);
        let d = first_divergence(&sim, &changed).unwrap();
        assert_eq!((d.agent.as_str(), d.index), ("parent", 1));
        assert_eq!(d.fields, vec!["budget_used".to_string()]);
        let short = vec![sim[0].clone(), sim[1].clone()];
        let d = first_divergence(&sim, &short).unwrap();
        assert!(d.live.is_none() && d.fields.is_empty());
    }
}
