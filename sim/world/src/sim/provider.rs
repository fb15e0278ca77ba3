//! A model call's attempts against a provider that fails some of them
//! ([`crate::faults`]): each failed attempt is traced, the runtime's waits move the request
//! later, and a call that gives up fails its turn when the last error is back. And replies
//! that call tools the runtime does not have.

use loopsim_engine::retry::{ProviderFault, RetryStep};
use loopsim_engine::turn::invalid_calls::{MalformedArgs, ParseFailure, Truncated, UnknownTool};

use super::*;
use crate::faults::{FaultStream, UNKNOWN_TOOL, UNKNOWN_TOOL_ERROR};
use crate::script::ModelCall;

impl<'s> World<'s> {
    /// Agent `a`'s model call: its attempts against the provider, and the replies the
    /// runtime drops and asks again (malformed arguments), each billed and traced. The reply
    /// the runtime takes, and the delay before its request goes out; `None`: the turn ends
    /// (its `ModelDone` is due).
    pub(super) fn request(
        &mut self,
        a: AgentId,
        tools: bool,
        mut delay: Duration,
    ) -> Option<(ModelCall<'s>, Duration)> {
        loop {
            delay = match self.provider_attempts(a, tools, delay) {
                Ok(delay) => delay,
                Err(at) => {
                    self.sched.at(at, Ev::ModelDone(a));
                    return None;
                }
            };
            let call = self.agents[a].script.reply(tools);
            // A loop that parses the reply itself takes a broken one as its iteration's reply.
            let dropped = matches!(call.reply, Reply::MalformedArgs { .. })
                && matches!(
                    self.agents[a].gov.malformed_args_rule(),
                    None | Some(MalformedArgs::SendAgain { .. })
                );
            if !dropped {
                if let Some(f) = &mut self.agents[a].trouble.provider {
                    f.call_answered();
                }
                return Some((call, delay));
            }
            self.coverage.hit(Mark::MalformedArgs);
            self.bill_model_call(a, &call, delay);
            delay = Duration(delay.0 + call.latency.0);
            if self.agents[a].gov.truncated_reply() == Truncated::GiveUp {
                // The turn ends once the last of them is back.
                self.agents[a].round.plan = Some(call.reply);
                self.sched.at(self.sched.now() + delay, Ev::ModelDone(a));
                return None;
            }
        }
    }

    /// The delay before agent `a`'s request goes out, `delay` plus its failed attempts and
    /// waits; `Err(at)`: the call gave up, its last error back at `at`. Only the loop's
    /// requests with tools meet faults (the summary call has retries of its own).
    pub(super) fn provider_attempts(
        &mut self,
        a: AgentId,
        tools: bool,
        delay: Duration,
    ) -> Result<Duration, Instant> {
        let Some(policy) = self.agents[a].cfg.provider_retry.filter(|_| tools) else {
            return Ok(delay);
        };
        let faults = match &self.agents[a].script.model().faults {
            Some(f) => std::borrow::Cow::Borrowed(f),
            None if self.setup.seeded_faults.is_empty() => return Ok(delay),
            None => {
                let model = self.agents[a].spec.model.get_ref();
                match self.setup.seeded_faults.iter().find(|(m, _)| m == model) {
                    Some((_, f)) => std::borrow::Cow::Owned(f.clone()),
                    None => return Ok(delay),
                }
            }
        };
        let start = self.sched.now().0 + delay.0;
        let mut t = start;
        let seed = self.setup.seed;
        loop {
            let ag = &mut self.agents[a];
            let stream = ag
                .trouble
                .provider
                .get_or_insert_with(|| FaultStream::new(seed, &ag.name));
            let Some(f) = stream.attempt(&faults, &policy) else {
                return Ok(Duration(t - self.sched.now().0));
            };
            t += f.latency_us;
            self.coverage.hit(Mark::Fault(f.fault));
            if self.trace.enabled() {
                let mut e = self.event(a, EventKind::ModelError);
                e.t_us = t;
                e.call = Some(self.agents[a].tally.calls + 1);
                e.latency_us = Some(f.latency_us);
                e.detail = Some(f.detail());
                self.trace.line(&e);
            }
            let wait = match f.then {
                RetryStep::Wait { us } | RetryStep::Rebuild { us } => us,
                RetryStep::Reconnect | RetryStep::GiveUp => 0,
            };
            let u = Usage {
                provider_errors: 1,
                retry_wait_us: wait,
                ..Usage::default()
            };
            self.account(a, &u);
            if f.fault == ProviderFault::DroppedStream
                && f.then != RetryStep::Reconnect
                && let Some(why) = self.large_session(a)
            {
                // Hermes reads the attempt's transport error as a context overflow here and
                // compresses instead of retrying: not simulated, so the run stops.
                self.unsupported.get_or_insert(why);
                return Err(Instant(t));
            }
            match f.then {
                RetryStep::Wait { us } => {
                    self.coverage.hit(Mark::ProviderRetry);
                    t += us;
                }
                RetryStep::Reconnect => self.coverage.hit(Mark::StreamRetry),
                RetryStep::Rebuild { us } => {
                    self.coverage.hit(Mark::ClientRebuild);
                    t += us;
                }
                RetryStep::GiveUp => {
                    self.agents[a].trouble.failed_call = Some(f.fault);
                    return Err(Instant(t));
                }
            }
        }
    }

    /// Why Hermes 0.19.0 would call agent `a`'s session large at a dropped stream (its error
    /// classifier: more than 60% of the context window, or, on windows of 256 k tokens or
    /// less, more than 120 k tokens or 200 messages); `None` when it is not. The messages
    /// are bounded from above: the system prompt, a user message per turn, and each reply
    /// and tool result so far.
    fn large_session(&self, a: AgentId) -> Option<String> {
        let ag = &self.agents[a];
        let tokens = ag.script.context();
        let window = ag.script.window();
        let results: u64 = ag.tally.tool_calls.iter().map(|(_, n)| n).sum();
        let messages = 1 + u64::from(ag.tally.turns) + ag.tally.calls + results;
        let small_window = window.is_none_or(|w| w <= 256_000);
        let large = window.is_some_and(|w| tokens as f64 > w as f64 * 0.6)
            || (small_window && (tokens > 120_000 || messages > 200));
        large.then(|| {
            format!(
                "agent {}'s stream dropped at call {} with {tokens} context tokens and up to \
                 {messages} messages: Hermes reads a dropped stream on a session that large as \
                 a context overflow and compresses, which loopsim does not simulate; lower \
                 models.{}.faults.dropped_stream to 0 for this scenario, or shorten it",
                ag.name,
                ag.tally.calls + 1,
                ag.spec.model.get_ref()
            )
        })
    }
}

impl<'s> World<'s> {
    /// The reply's `calls` calls all name a tool that does not exist: Hermes sends an error
    /// result for each and goes on (the next call is an iteration), or, at its last strike,
    /// ends the turn.
    pub(super) fn unknown_tool_reply(&mut self, a: AgentId, calls: u32) {
        self.coverage.hit(Mark::UnknownTool);
        let what = self.agents[a].gov.unknown_tool_reply();
        if what == UnknownTool::GiveUp {
            return self.end_turn(a);
        }
        if self.trace.enabled() {
            for _ in 0..calls {
                let mut e = self.event(a, EventKind::ToolError);
                e.call = Some(self.agents[a].tally.calls);
                e.tool = Some(UNKNOWN_TOOL.into());
                e.detail = Some(UNKNOWN_TOOL_ERROR.into());
                self.trace.line(&e);
            }
        }
        // The reply and its error results join the conversation.
        self.agents[a].round.since_tool = Some(0);
        self.sched.at(self.sched.now(), Ev::Wake(a));
    }

    /// The runtime's error result for the unknown tool of agent `a`'s last mixed batch, now
    /// that its next request carries it.
    pub(super) fn trace_batch_error(&mut self, a: AgentId) {
        let Some(call) = self.agents[a].trouble.batch_error.take() else {
            return;
        };
        if self.trace.enabled() {
            let mut e = self.event(a, EventKind::ToolError);
            e.call = Some(call);
            e.tool = Some(UNKNOWN_TOOL.into());
            e.detail = Some(UNKNOWN_TOOL_ERROR.into());
            self.trace.line(&e);
        }
    }

    /// A loop that parses the model's action could not parse this reply's arguments: the
    /// iteration is spent and the loop asks again, after a run of them with an observation
    /// telling the model the format it expects.
    pub(super) fn parse_failure(&mut self, a: AgentId) {
        self.coverage.hit(Mark::MalformedArgs);
        let ag = &mut self.agents[a];
        if ag.gov.parse_failure() == ParseFailure::FormatError {
            ag.script.format_error();
            ag.tally.notices += 1;
            if ag.tally.first_warning.is_none() {
                ag.tally.first_warning = Some((ag.tally.calls, self.sched.now().0));
            }
            if let Some(s) = &mut ag.tally.series {
                s.warnings_us.push(self.sched.now().0);
            }
            self.coverage.hit(Mark::FormatError);
            if self.trace.enabled() {
                let mut e = self.event(a, EventKind::Notice);
                e.call = Some(self.agents[a].tally.calls);
                e.detail = Some(FORMAT_ERROR.into());
                self.trace.line(&e);
            }
        }
        self.sched.at(self.sched.now(), Ev::Wake(a));
    }
}

/// The notice a runtime's format-error observation is traced as.
pub const FORMAT_ERROR: &str = "format_error_observation";
