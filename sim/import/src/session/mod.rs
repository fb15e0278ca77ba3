//! A stored session rebuilt as turns of model calls with their tool calls.
//!
//! Rows are read in insertion order, inactive ones included: a rewind's rows and the turns
//! compaction summarised away were still paid for. Compaction re-inserts a summary and the
//! kept tail of the conversation as new rows; the summary is not a call, and the copies are
//! recognised (by tool_call_id, or as rows equal to compacted ones right after the summary)
//! and not counted twice. Each assistant row is one model call, except the reply Hermes
//! writes itself after a guardrail halt.

use std::collections::BTreeMap;

use crate::agentlog::LoggedCall;
use crate::db::{MessageRow, SessionRow};
use crate::recover::{Notice, Recovered};

mod rebuild;
pub use rebuild::rebuild;

/// One tool call and its stored result.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    pub id: Option<String>,
    pub tool: String,
    /// The arguments as the model sent them (JSON text).
    pub args_json: String,
    /// The tool's own result, without appended guardrail lines.
    pub result: String,
    /// Whether a result row was found.
    pub has_result: bool,
    pub failed: bool,
    /// From the call's row to its result's row (estimated from timestamps).
    pub latency_s: f64,
    pub decision: Option<Recovered>,
    pub notice: Option<Notice>,
}

/// One model call.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelCall {
    /// Seconds from the session's first row to the row this call wrote.
    pub at_s: f64,
    pub latency_s: f64,
    /// Prompt tokens, cache reads and writes included.
    pub input_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    pub output_tokens: u64,
    pub calls: Vec<ToolCall>,
    /// Final text, for a call without tool calls.
    pub answer: Option<String>,
    /// Latency and tokens came from agent.log.
    pub from_log: bool,
    /// Characters of context before the call and of its reply (for spreading totals).
    context_chars: u64,
    reply_chars: u64,
}

/// How a turn ended in the record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TurnEnd {
    /// The model answered.
    Answer,
    /// A guardrail refused or halted a call and Hermes ended the turn.
    GuardrailStop,
    /// The record stops after a tool round: the user stopped it, or the process died.
    NoAnswer,
}

/// One user turn.
#[derive(Clone, Debug, PartialEq)]
pub struct Turn {
    pub at_s: f64,
    pub calls: Vec<ModelCall>,
    pub end: TurnEnd,
}

/// What was read, and what could not be used.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rebuilt {
    pub turns: Vec<Turn>,
    pub rows: usize,
    pub inactive_rows: usize,
    /// Rows compaction re-inserted (summaries and kept copies), not counted again.
    pub compaction_rows: usize,
    /// Tool results no call claimed.
    pub orphan_results: usize,
    /// Tool calls with no result row.
    pub missing_results: usize,
    /// Replies Hermes writes itself (after a guardrail halt or an interrupt): not model calls.
    pub runtime_replies: usize,
    /// Calls a guardrail refused (never run).
    pub refused_calls: usize,
    /// Rows whose timestamp jumped by more than [`MAX_GAP_S`] (taken as no time passing).
    pub clamped_times: usize,
    /// Results newer Hermes replaced by a reference to an identical earlier one: restored.
    pub stubs_restored: usize,
    /// ... and those whose earlier result could not be found (kept as the reference text).
    pub stubs_unresolved: usize,
}

impl Rebuilt {
    pub fn model_calls(&self) -> usize {
        self.turns.iter().map(|t| t.calls.len()).sum()
    }

    pub fn tool_calls(&self) -> usize {
        self.turns
            .iter()
            .flat_map(|t| &t.calls)
            .map(|c| c.calls.len())
            .sum()
    }

    fn calls_mut(&mut self) -> impl Iterator<Item = &mut ModelCall> {
        self.turns.iter_mut().flat_map(|t| t.calls.iter_mut())
    }
}

/// A compaction summary row (Hermes's current and earlier prefixes, and the form merged into
/// the first kept message when roles would collide).
fn is_summary(content: &str) -> bool {
    content.starts_with("[CONTEXT COMPACTION")
        || content.starts_with("[CONTEXT SUMMARY]")
        || content.starts_with("[PRIOR CONTEXT")
}

/// `(id, name, arguments)` of an assistant row's `tool_calls` JSON, in both stored shapes:
/// OpenAI's `{id, function: {name, arguments}}` and Hermes's `{name, arguments}`.
pub fn parse_tool_calls(text: &str) -> Vec<(Option<String>, String, String)> {
    let Ok(serde_json::Value::Array(items)) = serde_json::from_str::<serde_json::Value>(text)
    else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|it| {
            let f = it.get("function").unwrap_or(it);
            let name = f.get("name")?.as_str()?.to_string();
            let args = match f.get("arguments") {
                Some(serde_json::Value::String(s)) => s.clone(),
                Some(v @ serde_json::Value::Object(_)) => v.to_string(),
                _ => "{}".to_string(),
            };
            let id = it.get("id").and_then(|v| v.as_str()).map(str::to_string);
            Some((id, name, args))
        })
        .collect()
}

/// The longest gap between two rows taken at face value; a larger jump is a broken clock.
pub const MAX_GAP_S: f64 = 30.0 * 86_400.0;

type RowKey = (String, Option<String>, Option<String>);

fn row_key(r: &MessageRow) -> RowKey {
    (r.role.clone(), r.content.clone(), r.tool_calls.clone())
}

/// Rows a compaction inserted again. Where live rows follow archived ones, Hermes inserted
/// the summary and copies of rows it kept (the head and the tail of the conversation), in
/// order. A copy has the content of an archived row and either that row's timestamp or the
/// compaction's; a new row the loop wrote afterwards has a later one. Returns a flag per row.
fn compaction_copies(rows: &[MessageRow]) -> Vec<bool> {
    let mut copy = vec![false; rows.len()];
    let mut i = 1;
    while i < rows.len() {
        let starts = rows[i].active && !rows[i - 1].active && rows[..i].iter().any(|r| r.compacted);
        if !starts {
            i += 1;
            continue;
        }
        let archived: Vec<(RowKey, Option<f64>)> = rows[..i]
            .iter()
            .filter(|r| r.compacted)
            .map(|r| (row_key(r), r.timestamp))
            .collect();
        // The compaction's own time: its summary's, else its first row's.
        let block: Vec<usize> = (i..rows.len()).take_while(|x| rows[*x].active).collect();
        let batch = block
            .iter()
            .find(|x| is_summary(rows[**x].content.as_deref().unwrap_or("")))
            .map_or(rows[i].timestamp, |x| rows[*x].timestamp);
        let mut next = 0;
        let mut end = i;
        for &x in &block {
            let r = &rows[x];
            if is_summary(r.content.as_deref().unwrap_or("")) {
                copy[x] = true;
                end = x + 1;
                continue;
            }
            let key = row_key(r);
            let same_time = |t: Option<f64>| match (r.timestamp, t) {
                (Some(a), Some(b)) => a == b || Some(a) == batch,
                _ => true,
            };
            match (next..archived.len())
                .find(|k| archived[*k].0 == key && same_time(archived[*k].1))
            {
                Some(k) => {
                    copy[x] = true;
                    next = k + 1;
                    end = x + 1;
                }
                None => break,
            }
        }
        i = end.max(i + 1);
    }
    copy
}

/// Which figures came from where.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Provenance {
    /// Calls whose latency and tokens came from agent.log.
    pub logged_calls: usize,
    pub calls: usize,
    /// Session token totals were present (else tokens are text-length estimates).
    pub session_totals: bool,
}

/// Splits `total` over `weights` in proportion, exactly (largest remainders).
pub fn apportion(total: u64, weights: &[u64]) -> Vec<u64> {
    let sum: u128 = weights.iter().map(|w| *w as u128).sum();
    if weights.is_empty() {
        return Vec::new();
    }
    if sum == 0 {
        return apportion(total, &vec![1; weights.len()]);
    }
    let mut shares: Vec<u64> = weights
        .iter()
        .map(|w| (total as u128 * *w as u128 / sum) as u64)
        .collect();
    let mut rest = total - shares.iter().sum::<u64>();
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by_key(|i| {
        (
            std::cmp::Reverse(total as u128 * weights[*i] as u128 % sum),
            *i,
        )
    });
    for i in order {
        if rest == 0 {
            break;
        }
        shares[i] += 1;
        rest -= 1;
    }
    shares
}

/// Fills every call's latency and tokens: agent.log where it has the call, else estimates
/// (latency from timestamps, the session's token totals spread over the other calls).
pub fn fill_figures(
    rebuilt: &mut Rebuilt,
    session: &SessionRow,
    log: &BTreeMap<u64, LoggedCall>,
) -> Provenance {
    let mut prov = Provenance {
        calls: rebuilt.model_calls(),
        ..Provenance::default()
    };
    let mut logged = (0u64, 0u64, 0u64);
    for (k, c) in rebuilt.calls_mut().enumerate() {
        if let Some(l) = log.get(&(k as u64 + 1)) {
            c.from_log = true;
            c.latency_s = l.latency_s;
            c.input_tokens = l.input_tokens;
            c.output_tokens = l.output_tokens;
            c.cache_read_tokens = l.cache_read_tokens.min(l.input_tokens);
            logged.0 = logged.0.saturating_add(c.input_tokens);
            logged.1 = logged.1.saturating_add(c.output_tokens);
            logged.2 = logged.2.saturating_add(c.cache_read_tokens);
            prov.logged_calls += 1;
        }
    }
    let input = session.input_tokens.unwrap_or(0);
    let cache_read = session.cache_read_tokens.unwrap_or(0);
    let cache_write = session.cache_write_tokens.unwrap_or(0);
    let output = session.output_tokens.unwrap_or(0);
    let prompt_total = input.saturating_add(cache_read).saturating_add(cache_write);
    prov.session_totals = prompt_total.saturating_add(output) > 0;
    let calls: Vec<&mut ModelCall> = rebuilt.calls_mut().collect();
    let open: Vec<usize> = (0..calls.len()).filter(|i| !calls[*i].from_log).collect();
    let in_w: Vec<u64> = open.iter().map(|i| calls[*i].context_chars + 1).collect();
    let out_w: Vec<u64> = open.iter().map(|i| calls[*i].reply_chars + 1).collect();
    let (ins, outs, reads) = if prov.session_totals {
        (
            apportion(prompt_total.saturating_sub(logged.0), &in_w),
            apportion(output.saturating_sub(logged.1), &out_w),
            apportion(cache_read.saturating_sub(logged.2), &in_w),
        )
    } else {
        // No totals: about four characters a token.
        (
            in_w.iter().map(|w| w / 4).collect(),
            out_w.iter().map(|w| w / 4).collect(),
            vec![0; open.len()],
        )
    };
    let mut calls = calls;
    for (k, i) in open.iter().enumerate() {
        let c = &mut calls[*i];
        c.input_tokens = ins[k];
        c.output_tokens = outs[k];
        c.cache_read_tokens = reads[k].min(c.input_tokens);
    }
    // The log has no cache writes: spread the session's over every call's fresh input.
    let fresh: Vec<u64> = calls
        .iter()
        .map(|c| c.input_tokens - c.cache_read_tokens)
        .collect();
    let writes = apportion(cache_write, &fresh);
    for (c, w) in calls.iter_mut().zip(writes) {
        c.cache_write_tokens = w.min(c.input_tokens - c.cache_read_tokens);
    }
    prov
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apportion_is_exact_and_proportional() {
        assert_eq!(apportion(10, &[1, 1, 2]), vec![3, 2, 5]);
        assert_eq!(apportion(7, &[0, 0]), vec![4, 3]);
        assert_eq!(apportion(0, &[5, 5]), vec![0, 0]);
        let s = apportion(1_000_003, &[3, 7, 11, 13]);
        assert_eq!(s.iter().sum::<u64>(), 1_000_003);
    }

    #[test]
    fn both_tool_call_shapes_parse() {
        let openai = r#"[{"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"a\"}"}}]"#;
        assert_eq!(
            parse_tool_calls(openai),
            vec![(
                Some("c1".into()),
                "read_file".into(),
                "{\"path\": \"a\"}".into()
            )]
        );
        let hermes = r#"[{"name": "terminal", "arguments": {"command": "ls"}}]"#;
        assert_eq!(
            parse_tool_calls(hermes),
            vec![(None, "terminal".into(), "{\"command\":\"ls\"}".into())]
        );
        assert!(parse_tool_calls("not json").is_empty());
    }
}
