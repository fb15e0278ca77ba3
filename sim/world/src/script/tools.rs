//! An agent's fake tools: durations, failures, timeouts, approval calls and result text.
//!
//! Every agent draws from streams of its own (`agent:NAME/tool:TOOL`, `agent:NAME/approval`)
//! and counts `{counter}` on its own, so agents running side by side (children in threads
//! of a live runtime) cannot change each other's results, whatever order they run in.

use std::collections::BTreeMap;

use loopsim_engine::hash::Hash;
use rand::RngExt;
use rand::rngs::ChaCha8Rng;

use crate::clock::Duration;
use crate::model::cost_micro_usd;
use crate::rng::stream;
use crate::scenario::{CallSpec, ScenarioFile};

/// What one tool call did.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolRun {
    /// Its duration, approval call included.
    pub dur: Duration,
    /// It failed, or it timed out.
    pub failed: bool,
    pub timed_out: bool,
    /// It hung and ran until its timeout (`hang_probability`).
    pub hung: bool,
    /// Tokens the result adds to the context.
    pub tokens: u64,
    pub result: String,
    pub approval: Option<ApprovalCall>,
}

/// The call to the approval model a tool with `approval = true` makes first.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ApprovalCall {
    pub latency: Duration,
    pub input_tokens: u64,
    pub cache_read_tokens: u64,
    pub output_tokens: u64,
    pub cost_micro_usd: u64,
}

pub(super) struct Tools {
    seed: u64,
    streams: BTreeMap<String, ChaCha8Rng>,
    /// Made at the first approval (most agents never need one).
    approval: Option<ChaCha8Rng>,
    /// Calls run so far (what `{counter}` shows).
    counter: u64,
    /// Hang probabilities over the tools' own (seeded sites).
    hangs: Vec<(String, f64)>,
}

impl Tools {
    pub(super) fn new(seed: u64) -> Self {
        Tools {
            seed,
            streams: BTreeMap::new(),
            approval: None,
            counter: 0,
            hangs: Vec::new(),
        }
    }

    pub(super) fn set_hangs(&mut self, hangs: &[(String, f64)]) {
        self.hangs = hangs.to_vec();
    }

    pub(super) fn run(
        &mut self,
        file: &ScenarioFile,
        agent: &str,
        c: &CallSpec,
        rep: u32,
        now_s: f64,
        runtime_timeout_s: Option<f64>,
    ) -> ToolRun {
        let tool = c.tool.get_ref();
        let spec = &file.tools[tool];
        // Looked up before inserting: a String key per call would cost a sweep dearly.
        if !self.streams.contains_key(tool.as_str()) {
            let r = stream(self.seed, &format!("agent:{agent}/tool:{tool}"));
            self.streams.insert(tool.clone(), r);
        }
        let rng = self.streams.get_mut(tool.as_str()).expect("inserted");
        let mut dur = Duration::from_secs_f64(match &c.latency_s {
            Some(l) => *l.get_ref(),
            None => spec.latency_s.get_ref().sample(rng),
        });
        let failed = c
            .fail
            .unwrap_or_else(|| rng.random::<f64>() < *spec.fail_probability.get_ref());
        let tokens = spec.result_tokens.get_ref().sample(rng).round() as u64;
        // Drawn only where hangs are on, so every other scenario keeps its draws.
        let hang = self
            .hangs
            .iter()
            .find(|(t, _)| t == tool)
            .map_or(*spec.hang_probability.get_ref(), |h| h.1);
        let hung = hang > 0.0 && rng.random::<f64>() < hang;
        if hung {
            dur = Duration(u64::MAX / 4);
        }
        let mut timed_out = false;
        // The tool's own timeout, or the runtime's, whichever comes first.
        let timeout = match (
            spec.timeout_s.as_ref().map(|t| *t.get_ref()),
            runtime_timeout_s,
        ) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let Some(to) = timeout {
            let to = Duration::from_secs_f64(to);
            if dur > to {
                dur = to;
                timed_out = true;
            }
        }
        let seed = self.seed;
        let approval = spec.approval.then(|| {
            let rng = self
                .approval
                .get_or_insert_with(|| stream(seed, &format!("agent:{agent}/approval")));
            let name = file.approval_model.as_ref().expect("validated").get_ref();
            let m = &file.models[name];
            let lat = Duration::from_secs_f64(m.latency_s.get_ref().sample(rng));
            let out = m.output_tokens.get_ref().sample(rng).round() as u64;
            let cache = (m.input_tokens as f64 * m.cache_read_share.get_ref()).round() as u64;
            ApprovalCall {
                latency: lat,
                input_tokens: m.input_tokens,
                cache_read_tokens: cache,
                output_tokens: out,
                cost_micro_usd: cost_micro_usd(&m.price, m.input_tokens, cache, out),
            }
        });
        if let Some(a) = &approval {
            dur += a.latency;
        }
        self.counter += 1;
        let result = if let Some(r) = &c.result {
            r.clone()
        } else if timed_out && tool == "terminal" {
            // Hermes's terminal reports a timeout as `timeout` does, by exit code 124: what
            // makes it a failure to its guardrails (`classify_tool_failure`).
            format!(
                "{{\"output\": \"\", \"exit_code\": 124, \"error\": \"timed out after {:.0} s\"}}",
                dur.as_secs_f64()
            )
        } else if timed_out {
            format!(
                "{{\"error\": \"timed out after {:.0} s\"}}",
                dur.as_secs_f64()
            )
        } else if failed {
            spec.fail_result.clone()
        } else {
            render_result(&spec.result, agent, self.counter, rep, now_s, dur)
        };
        ToolRun {
            dur,
            failed: failed || timed_out,
            timed_out,
            hung,
            tokens,
            result,
            approval,
        }
    }
}

/// Fills a result template's volatile fields, in one pass: `{elapsed_s}` (the call's
/// duration), `{counter}` (the agent's calls so far), `{timestamp}` (virtual seconds when it
/// started), `{id}` (a per-call id) and `{n}` (the step's repetition).
pub fn render_result(
    template: &str,
    agent: &str,
    counter: u64,
    rep: u32,
    now_s: f64,
    dur: Duration,
) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(template.len() + 16);
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let tail = &rest[open..];
        let field = ["{elapsed_s}", "{counter}", "{timestamp}", "{id}", "{n}"]
            .into_iter()
            .find(|f| tail.starts_with(f));
        let _ = match field {
            Some("{elapsed_s}") => write!(out, "{:.3}", dur.as_secs_f64()),
            Some("{counter}") => write!(out, "{counter}"),
            Some("{timestamp}") => write!(out, "{now_s:.3}"),
            Some("{id}") => {
                let h = Hash::of(format!("{agent}:{counter}").as_bytes());
                write!(out, "{}", &h.hex()[..16])
            }
            Some(_) => write!(out, "{rep}"),
            None => {
                out.push('{');
                rest = &tail[1..];
                continue;
            }
        };
        rest = &tail[field.map_or(1, str::len)..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_fill_every_volatile_field_and_keep_other_braces() {
        let d = Duration::from_secs_f64(1.5);
        let r = render_result(
            r#"{"t": {timestamp}, "e": {elapsed_s}, "c": {counter}, "n": {n}, "x": {other}}"#,
            "parent",
            7,
            2,
            12.0,
            d,
        );
        assert_eq!(
            r,
            r#"{"t": 12.000, "e": 1.500, "c": 7, "n": 2, "x": {other}}"#
        );
        let id1 = render_result("{id}", "parent", 1, 0, 0.0, d);
        let id2 = render_result("{id}", "worker#1", 1, 0, 0.0, d);
        assert_eq!(id1.len(), 16);
        assert_ne!(id1, id2);
    }
}
