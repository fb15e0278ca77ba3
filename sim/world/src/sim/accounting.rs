//! What a run spends and records: usage per agent, budget and activity series, guardrail
//! decisions, and whether a price was unknown.

use super::*;
use crate::script::ModelCall;

impl World<'_> {
    pub(super) fn account(&mut self, a: AgentId, u: &Usage) {
        let now = self.now();
        let ag = &mut self.agents[a];
        ag.tally.usage.add(u);
        self.totals.total.add(u);
        if let Some((from, to)) = self.totals.window
            && (from..to).contains(&now)
        {
            ag.tally.window.add(u);
        }
        if self.totals.loop_began.is_some() {
            ag.tally.after_loop.add(u);
        }
        if let Some(s) = &mut ag.tally.series {
            s.cost.push((now, ag.tally.usage.cost_micro_usd));
        }
    }

    /// Records the budget after a change, and marks the agent active.
    pub(super) fn note_budget(&mut self, a: AgentId) {
        let now = self.now();
        let ag = &mut self.agents[a];
        ag.tally.last_activity = self.sched.now();
        if let Some(s) = &mut ag.tally.series {
            s.budget_used.push((now, ag.gov.budget().used()));
        }
    }

    pub(super) fn note_span(&mut self, a: AgentId, start: Instant, kind: SpanKind) {
        let now = self.sched.now();
        let ag = &mut self.agents[a];
        ag.tally.last_activity = now;
        if kind == SpanKind::Waiting {
            ag.tally.wait_us += now.since(start).0;
        }
        if let Some(s) = &mut ag.tally.series {
            s.spans.push((start.0, now.0, kind));
        }
    }

    pub(super) fn record_decision(
        &mut self,
        a: AgentId,
        tool: &str,
        action: Action,
        code: DecisionCode,
        count: u32,
    ) {
        if self.checks {
            self.check_halt_armed(a, action, code);
        }
        if code != DecisionCode::Allow {
            self.coverage.hit(Mark::Decision(code));
        }
        let ag = &mut self.agents[a];
        if let Some(s) = &mut ag.tally.series {
            if action == Action::Warn {
                s.warnings_us.push(self.sched.now().0);
            } else if action.halts() {
                s.stops_us.push(self.sched.now().0);
            }
        }
        if action == Action::Warn {
            ag.tally.warnings += 1;
            ag.round.round_flagged = true;
            if ag.tally.first_warning.is_none() {
                ag.tally.first_warning = Some((ag.tally.calls, self.sched.now().0));
            }
        }
        if action.halts() && ag.tally.stop.is_none() {
            ag.tally.stop = Some(Stop {
                call: ag.tally.calls,
                t_us: self.sched.now().0,
                code: code.as_str().into(),
            });
        }
        if self.trace.enabled() {
            let mut e = self.event(a, EventKind::Decision);
            e.tool = Some(tool.into());
            e.action = Some(action.as_str());
            e.code = Some(code.as_str());
            e.count = Some(count);
            self.trace.line(&e);
        }
    }

    /// Whether any model that was called has an unknown price.
    pub(super) fn price_unknown(&self) -> bool {
        let f = &self.setup.sc.file;
        let unknown = |m: &str| f.models.get(m).is_some_and(|m| m.price.unknown);
        self.agents
            .iter()
            .any(|a| a.tally.calls > 0 && unknown(a.spec.model.get_ref()))
            || (self.totals.total.approval_calls > 0
                && f.approval_model
                    .as_ref()
                    .is_some_and(|m| unknown(m.get_ref())))
    }
}

impl<'s> World<'s> {
    /// Bills agent `a`'s model call and traces it; its request goes out `delay` from now
    /// (after a compression, provider errors and their waits, or replies sent again).
    pub(super) fn bill_model_call(&mut self, a: AgentId, call: &ModelCall<'s>, delay: Duration) {
        let ag = &mut self.agents[a];
        let model = ag.script.model();
        ag.tally.calls += 1;
        ag.gov.note_tokens(call.input_tokens + call.output_tokens);
        ag.round.last_tokens = (call.input_tokens, call.output_tokens);
        let latency = call.latency;
        // The request goes out once a compression before it is done.
        let now = self.sched.now().0 + delay.0;
        if let Some(s) = &mut ag.tally.series {
            s.spans.push((now, now + latency.0, SpanKind::Model));
            s.budget_used.push((now, ag.gov.budget().used()));
        }
        let u = Usage::recorded_call(
            &model.price,
            call.input_tokens,
            call.cache_read_tokens,
            call.cache_write_tokens,
            call.output_tokens,
            latency.0,
        );
        let n = ag.tally.calls;
        let used = ag.gov.budget().used();
        let slow = |mean_s: f64| mean_s > 0.0 && latency.0 as f64 >= 2e6 * mean_s;
        if self.setup.wrong_port == Some(WrongPort::UnchargedSlowCall)
            && slow(model.latency_s.get_ref().mean())
        {
            // The deliberate break: a slow call reaches the total but no agent.
            self.totals.total.add(&u);
        } else {
            self.account(a, &u);
        }
        if self.trace.enabled() {
            let mut e = self.event(a, EventKind::ModelCall);
            // After a compression the request goes out when it is done.
            e.t_us = now;
            e.call = Some(n);
            e.input_tokens = Some(call.input_tokens);
            e.cache_read_tokens = Some(call.cache_read_tokens);
            e.cache_write_tokens = (call.cache_write_tokens > 0).then_some(call.cache_write_tokens);
            e.output_tokens = Some(call.output_tokens);
            e.latency_us = Some(latency.0);
            e.budget_used = Some(used);
            e.detail = call.detail().map(str::to_string);
            self.trace.line(&e);
        }
    }
}
