//! Rebuilding a session's turns from its rows: user messages open turns, assistant rows are
//! model calls (or Hermes's own replies, which are not), tool rows are their results, matched
//! by id or by position; stubbed results are restored and refused calls given their likeliest
//! result.

use std::collections::{HashMap, HashSet};

use loopsim_engine::guardrails::{Action, DecisionCode, classify};

use super::{
    MAX_GAP_S, ModelCall, Rebuilt, ToolCall, Turn, TurnEnd, compaction_copies, parse_tool_calls,
};
use crate::db::{MessageRow, SessionRow};
use crate::recover;

/// Rebuilds the turns of one session from its rows.
pub fn rebuild(rows: &[MessageRow], session: &SessionRow) -> Rebuilt {
    let mut r = Rebuild::new(rows, session);
    for (i, row) in rows.iter().enumerate() {
        if r.copies[i] {
            continue;
        }
        match row.role.as_str() {
            "user" => r.user(i),
            "assistant" => r.assistant(i),
            _ => {}
        }
    }
    r.finish()
}

/// Seconds since the first row, per row: never going back, gaps capped (a broken clock);
/// and how many gaps were capped.
fn row_times(rows: &[MessageRow], session: &SessionRow) -> (Vec<f64>, usize) {
    let t0 = rows
        .iter()
        .filter_map(|r| r.timestamp)
        .find(|t| t.is_finite())
        .or(session.started_at)
        .unwrap_or(0.0);
    let mut times = Vec::with_capacity(rows.len());
    let mut clamped = 0;
    let mut now = 0.0f64;
    let mut prev_raw: Option<f64> = None;
    for r in rows {
        if let Some(t) = r.timestamp.filter(|t| t.is_finite()) {
            let gap = prev_raw.map_or(t - t0, |p| t - p);
            if gap > MAX_GAP_S || gap < 0.0 && -gap > MAX_GAP_S {
                clamped += 1;
            } else if gap > 0.0 {
                now += gap;
            }
            prev_raw = Some(t);
        }
        times.push(now);
    }
    (times, clamped)
}

/// A rebuild as it walks a session's rows: what it has built, and what it remembers.
struct Rebuild<'r> {
    rows: &'r [MessageRow],
    out: Rebuilt,
    /// Seconds since the first row, per row.
    times: Vec<f64>,
    /// The rows a compaction re-inserted (skipped).
    copies: Vec<bool>,
    /// Real model replies carry a finish_reason; rows the runtime writes itself do not.
    finish_reasons: bool,
    /// Tool rows by their tool_call_id.
    results_by_id: HashMap<&'r str, Vec<usize>>,
    /// Tool rows already given to a call.
    used: HashSet<usize>,
    /// When the last model call or tool result ended.
    last: f64,
    context_chars: u64,
    /// Raw results by tool_call_id and by (tool, arguments): where a stub points, and what a
    /// refused call would most likely have returned.
    raw_by_id: HashMap<String, String>,
    raw_by_call: HashMap<(String, String), (String, bool)>,
}

impl<'r> Rebuild<'r> {
    fn new(rows: &'r [MessageRow], session: &SessionRow) -> Rebuild<'r> {
        let (times, clamped_times) = row_times(rows, session);
        let copies = compaction_copies(rows);
        let mut results_by_id: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, r) in rows.iter().enumerate() {
            if r.role == "tool"
                && !copies[i]
                && let Some(id) = r.tool_call_id.as_deref()
            {
                results_by_id.entry(id).or_default().push(i);
            }
        }
        Rebuild {
            rows,
            out: Rebuilt {
                rows: rows.len(),
                inactive_rows: rows.iter().filter(|r| !r.active).count(),
                clamped_times,
                compaction_rows: copies.iter().filter(|c| **c).count(),
                ..Rebuilt::default()
            },
            times,
            finish_reasons: rows
                .iter()
                .any(|r| r.role == "assistant" && r.finish_reason.is_some()),
            copies,
            results_by_id,
            used: HashSet::new(),
            last: 0.0,
            context_chars: 0,
            raw_by_id: HashMap::new(),
            raw_by_call: HashMap::new(),
        }
    }

    /// A user message opens a turn.
    fn user(&mut self, i: usize) {
        let content = self.rows[i].content.as_deref().unwrap_or("");
        let at = self.times[i];
        self.raw_by_call.clear();
        self.last = at;
        self.context_chars += content.len() as u64;
        self.out.turns.push(Turn {
            at_s: at,
            calls: Vec::new(),
            end: TurnEnd::NoAnswer,
        });
    }

    /// An assistant row: a model call that answered, one that called tools, or a reply the
    /// runtime wrote itself (not a call).
    fn assistant(&mut self, i: usize) {
        let r = &self.rows[i];
        let content = r.content.as_deref().unwrap_or("");
        let at = self.times[i];
        let parsed = r
            .tool_calls
            .as_deref()
            .map(parse_tool_calls)
            .unwrap_or_default();
        if self.out.turns.is_empty() {
            self.out.turns.push(Turn {
                at_s: self.last,
                calls: Vec::new(),
                end: TurnEnd::NoAnswer,
            });
        }
        if parsed.is_empty() {
            self.answer(i);
            return;
        }
        let mut calls = Vec::new();
        let mut prev = at;
        let mut reply_chars = content.len() as u64;
        for (id, name, args) in parsed {
            reply_chars += (name.len() + args.len()) as u64;
            let (call, done) = self.tool_call(i, id, name, args, prev);
            calls.push(call);
            prev = done;
        }
        let (last, context_chars) = (self.last, self.context_chars);
        let turn = self.out.turns.last_mut().expect("a turn");
        turn.calls.push(ModelCall {
            at_s: at,
            latency_s: at - last,
            input_tokens: 0,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            output_tokens: 0,
            calls,
            answer: None,
            from_log: false,
            context_chars,
            reply_chars,
        });
        self.last = prev;
    }

    /// An assistant row without tool calls: the model's answer, or Hermes's own closing reply
    /// (after a halt, an interrupt), which is not a call.
    fn answer(&mut self, i: usize) {
        let r = &self.rows[i];
        let content = r.content.as_deref().unwrap_or("");
        let at = self.times[i];
        let turn = self.out.turns.last_mut().expect("a turn");
        let after_halt = turn.calls.last().is_some_and(|c| {
            c.answer.is_none()
                && c.calls
                    .iter()
                    .any(|t| t.decision.as_ref().is_some_and(|d| d.action.halts()))
        });
        let runtime = if self.finish_reasons {
            r.finish_reason.is_none()
        } else {
            after_halt || content.starts_with("Operation interrupted")
        };
        if runtime {
            self.out.runtime_replies += 1;
            return;
        }
        turn.calls.push(ModelCall {
            at_s: at,
            latency_s: at - self.last,
            input_tokens: 0,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            output_tokens: 0,
            calls: Vec::new(),
            answer: Some(content.to_string()),
            from_log: false,
            context_chars: self.context_chars,
            reply_chars: content.len() as u64,
        });
        self.context_chars += content.len() as u64;
        self.last = at;
    }

    /// The result row of a call in row `i`: the first unclaimed row with its id, else (no id)
    /// the next unclaimed tool row after the call. Claimed here.
    fn result_row(&mut self, i: usize, id: Option<&str>) -> Option<usize> {
        let by_id = id.and_then(|id| {
            self.results_by_id.get(id).and_then(|js| {
                js.iter()
                    .copied()
                    .find(|j| *j > i && !self.used.contains(j))
                    .or_else(|| js.iter().copied().find(|j| !self.used.contains(j)))
            })
        });
        let j = by_id.or_else(|| {
            (i + 1..self.rows.len())
                .take_while(|j| self.rows[*j].role == "tool")
                .find(|j| !self.used.contains(j) && !self.copies[*j])
        })?;
        self.used.insert(j);
        Some(j)
    }

    /// One tool call of the reply in row `i`, begun at `prev`: its result (restored where the
    /// runtime stubbed it, guessed where a guardrail refused it), its failure and its decision;
    /// and when it ended.
    fn tool_call(
        &mut self,
        i: usize,
        id: Option<String>,
        name: String,
        args: String,
        prev: f64,
    ) -> (ToolCall, f64) {
        let (stored, has_result, done) = match self.result_row(i, id.as_deref()) {
            Some(j) => (
                self.rows[j].content.clone().unwrap_or_default(),
                true,
                self.times[j].max(prev),
            ),
            None => {
                self.out.missing_results += 1;
                (String::new(), false, prev)
            }
        };
        let p = recover::parts(&stored);
        let (decision, notice) = (p.decision, p.notice);
        let mut raw = p.raw.to_string();
        let refused = decision.as_ref().is_some_and(|d| d.action == Action::Block);
        let mut failed = false;
        let key = (name.clone(), args.clone());
        if refused {
            // Never run: should a laxer engine run it, the likeliest result is the one its
            // signature last gave (the refusal came because the results were not changing),
            // else nothing.
            let before = self.raw_by_call.get(&key).cloned();
            self.out.refused_calls += 1;
            (raw, failed) = before.unwrap_or_default();
        } else if p.stub {
            // The tool returned the bytes of an earlier call this turn.
            let earlier = p
                .stub_of
                .and_then(|id| self.raw_by_id.get(id).cloned())
                .or_else(|| self.raw_by_call.get(&key).map(|r| r.0.clone()));
            match earlier {
                Some(r) => {
                    raw = r;
                    self.out.stubs_restored += 1;
                }
                None => self.out.stubs_unresolved += 1,
            }
        }
        if !refused {
            let failure_code = decision.as_ref().is_some_and(|d| {
                matches!(
                    d.code,
                    DecisionCode::RepeatedExactFailureWarning
                        | DecisionCode::SameToolFailureWarning
                        | DecisionCode::SameToolFailureHalt
                )
            });
            failed = has_result
                && (failure_code || classify::classify_failure(&name, Some(raw.as_bytes()), false));
            if let Some(id) = &id {
                self.raw_by_id.insert(id.clone(), raw.clone());
            }
            self.raw_by_call.insert(key, (raw.clone(), failed));
        }
        self.context_chars += (stored.len() + args.len()) as u64;
        let call = ToolCall {
            id,
            tool: name,
            args_json: args,
            result: raw,
            has_result,
            failed,
            latency_s: done - prev,
            decision,
            notice,
        };
        (call, done)
    }

    /// Tool rows no call claimed, empty turns dropped, and how each turn ended.
    fn finish(self) -> Rebuilt {
        let mut out = self.out;
        out.orphan_results = self
            .rows
            .iter()
            .enumerate()
            .filter(|(i, r)| r.role == "tool" && !self.used.contains(i) && !self.copies[*i])
            .count();
        out.turns.retain(|t| !t.calls.is_empty());
        for t in &mut out.turns {
            let last = t.calls.last().expect("non-empty");
            t.end = if last.answer.is_some() {
                TurnEnd::Answer
            } else if last
                .calls
                .iter()
                .any(|c| c.decision.as_ref().is_some_and(|d| d.action.halts()))
            {
                TurnEnd::GuardrailStop
            } else {
                TurnEnd::NoAnswer
            };
        }
        out
    }
}
