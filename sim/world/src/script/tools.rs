//! An agent's fake tools: durations, failures, timeouts, approval calls and result text.
//!
//! Every agent draws from streams of its own (`agent:NAME/tool:TOOL`, `agent:NAME/approval`)
//! and counts `{counter}` on its own, so agents running side by side (children in threads
//! of a live runtime) cannot change each other's results, whatever order they run in.

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
    /// One stream per tool, in first-use order (an agent uses a handful of tools).
    streams: Vec<(String, ChaCha8Rng)>,
    /// Made at the first approval (most agents never need one).
    approval: Option<ChaCha8Rng>,
    /// Calls run so far (what `{counter}` shows).
    counter: u64,
    /// Hang probabilities over the tools' own (seeded sites).
    hangs: Vec<(String, f64)>,
    /// A result the run is done with, whose buffer the next result is written into.
    spare: String,
}

impl Tools {
    pub(super) fn new(seed: u64) -> Self {
        Tools {
            seed,
            streams: Vec::new(),
            approval: None,
            counter: 0,
            hangs: Vec::new(),
            spare: String::new(),
        }
    }

    /// Takes back a result the run is done with: the next one is written into its buffer.
    pub(super) fn recycle(&mut self, result: String) {
        self.spare = result;
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
        let at = match self.streams.iter().position(|(t, _)| t == tool) {
            Some(at) => at,
            None => {
                let r = stream(self.seed, &format!("agent:{agent}/tool:{tool}"));
                self.streams.push((tool.clone(), r));
                self.streams.len() - 1
            }
        };
        let rng = &mut self.streams[at].1;
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
        let mut result = std::mem::take(&mut self.spare);
        result.clear();
        if let Some(r) = &c.result {
            result.push_str(r);
        } else if timed_out {
            use std::fmt::Write as _;
            // Hermes's terminal reports a timeout as `timeout` does, by exit code 124: what
            // makes it a failure to its guardrails (`classify_tool_failure`).
            let head = if tool == "terminal" {
                "{\"output\": \"\", \"exit_code\": 124, "
            } else {
                "{"
            };
            let secs = dur.as_secs_f64();
            let _ = write!(result, "{head}\"error\": \"timed out after {secs:.0} s\"}}");
        } else if failed {
            result.push_str(&spec.fail_result);
        } else {
            render_into(
                &mut result,
                &spec.result,
                agent,
                self.counter,
                rep,
                now_s,
                dur,
            );
        }
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
    let mut out = String::with_capacity(template.len() + 16);
    render_into(&mut out, template, agent, counter, rep, now_s, dur);
    out
}

/// [`render_result`] appended to `out`.
fn render_into(
    out: &mut String,
    template: &str,
    agent: &str,
    counter: u64,
    rep: u32,
    now_s: f64,
    dur: Duration,
) {
    let mut rest = template;
    while let Some(open) = rest.bytes().position(|b| b == b'{') {
        out.push_str(&rest[..open]);
        let tail = &rest[open..];
        let field = ["{elapsed_s}", "{counter}", "{timestamp}", "{id}", "{n}"]
            .into_iter()
            .find(|f| tail.starts_with(f));
        match field {
            Some("{elapsed_s}") => push_fixed3(out, dur.as_secs_f64()),
            Some("{counter}") => push_u64(out, counter),
            Some("{timestamp}") => push_fixed3(out, now_s),
            Some("{id}") => {
                let mut key = String::with_capacity(agent.len() + 21);
                key.push_str(agent);
                key.push(':');
                push_u64(&mut key, counter);
                let hex = Hash::of(key.as_bytes()).hex_bytes();
                out.push_str(std::str::from_utf8(&hex[..16]).expect("hex digits"));
            }
            Some(_) => push_u64(out, u64::from(rep)),
            None => {
                out.push('{');
                rest = &tail[1..];
                continue;
            }
        }
        rest = &tail[field.map_or(1, str::len)..];
    }
    out.push_str(rest);
}

/// `n` in decimal, as `{}` prints it.
fn push_u64(out: &mut String, n: u64) {
    out.push_str(itoa::Buffer::new().format(n));
}

/// `x` with three decimals, exactly as `{:.3}` prints it: a template is filled on every
/// call, and the formatter's exact-digit machinery was a tenth of a simulated run.
fn push_fixed3(out: &mut String, x: f64) {
    // Below 2^20, x * 1000 is off from the exact product by at most 2^-23 (half an ulp):
    // unless its fraction is that close to one half, it rounds to the same thousandths as
    // the exact value does. Anything else (ties, negatives, large or odd values) is left
    // to the formatter.
    if x.is_sign_positive() && x < 1_048_576.0 {
        let y = x * 1000.0;
        let whole = y as u64;
        let frac = y - whole as f64;
        if (frac - 0.5).abs() > 1e-6 {
            let n = whole + u64::from(frac > 0.5);
            push_u64(out, n / 1000);
            let m = (n % 1000) as u32;
            out.push('.');
            for d in [m / 100, m / 10 % 10, m % 10] {
                out.push(char::from(b'0' + d as u8));
            }
            return;
        }
    }
    use std::fmt::Write as _;
    let _ = write!(out, "{x:.3}");
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
        assert_eq!(id1, &Hash::of(b"parent:1").hex()[..16]);
        assert_ne!(id1, id2);
    }

    /// The fast paths print what the formatter prints, on values around every rounding edge.
    #[test]
    fn numbers_print_as_the_formatter_prints_them() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            state >> 11
        };
        let mut xs = vec![
            0.0, -0.0, 0.0005, 0.0015, 0.0025, 1.0005, 2.5e-4, 1e-9, 1e300,
        ];
        xs.extend([
            f64::NAN,
            f64::INFINITY,
            -1.5,
            1_048_575.999_5,
            1_048_576.0,
            999.9995,
        ]);
        for _ in 0..200_000 {
            let r = next();
            xs.push(match r % 4 {
                // Whole microseconds as seconds: what durations and clocks are.
                0 => (r >> 2) as f64 % 5e9 / 1e6,
                // Thousandths and halves of them, and their neighbours.
                1 => {
                    let t = ((r >> 2) % 2_000_000_000) as f64 / 2000.0;
                    [t, t.next_up(), t.next_down()][(r >> 40) as usize % 3]
                }
                2 => f64::from_bits(r >> 1 | 0x3000_0000_0000_0000) % 2e6,
                _ => (r >> 2) as f64 / (1u64 << 30) as f64,
            });
        }
        for x in xs {
            let mut fast = String::new();
            push_fixed3(&mut fast, x);
            assert_eq!(fast, format!("{x:.3}"), "{x:e}");
        }
        for n in [
            0,
            1,
            9,
            10,
            99,
            100,
            12_345,
            u64::MAX,
            next(),
            next() % 1000,
        ] {
            let mut fast = String::new();
            push_u64(&mut fast, n);
            assert_eq!(fast, n.to_string());
        }
    }
}
