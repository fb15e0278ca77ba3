//! The context window before each model call: Hermes's compression gate, the summary call it
//! makes, and the turn that dies of its context ([`loopsim_engine::turn::compression`]).

use super::*;

impl World<'_> {
    /// Hermes's context check before a model call: the time compressions take first, or
    /// none when the context no longer fits and the turn has died of it. A compaction that
    /// leaves the prompt past the window is followed by the provider's refusal, after which
    /// Hermes compacts again or gives up: the check runs again.
    ///
    /// `Err` holds the time the compressions before the end took.
    pub(super) fn context_gate(&mut self, a: AgentId) -> Result<Duration, Duration> {
        let mut total = Duration::ZERO;
        loop {
            let made = self.agents[a].tally.compressions.calls;
            let Some(d) = self.context_gate_once(a) else {
                return Err(total);
            };
            total = Duration(total.0 + d.0);
            let s = &self.agents[a].script;
            let overflows = s.window().is_some_and(|w| s.context() > w);
            if self.agents[a].tally.compressions.calls == made || !overflows {
                return Ok(total);
            }
        }
    }

    fn context_gate_once(&mut self, a: AgentId) -> Option<Duration> {
        let ag = &mut self.agents[a];
        match ag.script.context_gate() {
            ContextGate::Send => Some(Duration::ZERO),
            ContextGate::Trimmed { before, after } => {
                self.coverage.hit(Mark::ContextTrim);
                if self.trace.enabled() {
                    let mut e = self.event(a, EventKind::ContextTrim);
                    e.detail = Some(format!("context {before} -> {after} tokens"));
                    self.trace.line(&e);
                }
                Some(Duration::ZERO)
            }
            ContextGate::Exhausted => {
                // The request went out and the provider refused it.
                ag.gov.context_exhausted();
                self.coverage.hit(Mark::ContextExhausted);
                if self.trace.enabled() {
                    let mut e = self.event(a, EventKind::ContextExhausted);
                    e.input_tokens = Some(self.agents[a].script.context());
                    self.trace.line(&e);
                }
                None
            }
            ContextGate::Compressed(c) => {
                self.coverage.hit(Mark::Compression);
                let price = &ag.script.model().price;
                let made = &mut ag.tally.compressions;
                made.calls += 1;
                made.input_tokens += c.input_tokens;
                made.output_tokens += c.output_tokens;
                made.latency_us += c.latency.0;
                let u = Usage {
                    cost_micro_usd: crate::model::cost_micro_usd(
                        price,
                        c.input_tokens,
                        0,
                        c.output_tokens,
                    ),
                    ..Usage::default()
                };
                self.account(a, &u);
                if self.trace.enabled() {
                    let mut e = self.event(a, EventKind::Compression);
                    e.input_tokens = Some(c.input_tokens);
                    e.output_tokens = Some(c.output_tokens);
                    e.latency_us = Some(c.latency.0);
                    e.count = Some(c.attempt);
                    e.detail = Some(format!("context {} -> {} tokens", c.before, c.after));
                    self.trace.line(&e);
                }
                Some(c.latency)
            }
        }
    }
}
