//! A model reply's round: the calls it makes, one after another, each through the
//! guardrails before and after it runs, until the round ends.

use loopsim_engine::turn::invalid_calls::MalformedArgs;

use super::*;

impl<'s> World<'s> {
    pub(super) fn model_done(&mut self, a: AgentId) {
        if self.agents[a].status != Status::Running {
            // Timed out (or stopped) while the model was answering.
            return;
        }
        self.agents[a].tally.last_activity = self.sched.now();
        if let Some(fault) = self.agents[a].trouble.failed_call.take() {
            self.agents[a].gov.api_call_failed(fault);
            return self.end_turn(a);
        }
        let plan = self.agents[a].round.plan.expect("a plan");
        let stop = self.reply_limits(a, plan);
        if self.agents[a].gov.reply_stops(stop) {
            // The runtime raised at its limit (or its middleware ended the run) before
            // acting on this reply.
            self.end_turn(a);
            return;
        }
        match plan {
            Reply::Answer => {
                self.log_event(a, LogEvent::AgentMessage);
                self.agents[a].messages_after_tools(1);
                self.agents[a].gov.text_reply(FinishReason::Stop);
                self.end_turn(a);
            }
            Reply::Empty if self.agents[a].cfg.turn.on_empty_reply == OnEmptyReply::FinalAnswer => {
                self.agents[a].messages_after_tools(1);
                self.agents[a].gov.text_reply(FinishReason::Stop);
                self.end_turn(a);
            }
            Reply::Empty => {
                // OpenHands logs the empty message and its own nudge to use a tool.
                self.log_event(a, LogEvent::AgentMessage);
                self.log_event(a, LogEvent::EnvironmentMessage);
                let ag = &mut self.agents[a];
                // Hermes looks for a tool result among the conversation's last five messages.
                let recent = ag.round.since_tool.is_some_and(|k| k <= 4);
                let what = ag.gov.empty_reply(recent);
                self.coverage.hit(Mark::EmptyReply(what));
                match what {
                    EmptyReply::Nudge => {
                        // A placeholder reply and a request to go on join the conversation.
                        ag.messages_after_tools(2);
                        self.sched.at(self.sched.now(), Ev::Wake(a));
                    }
                    EmptyReply::Retry => self.sched.at(self.sched.now(), Ev::Wake(a)),
                    EmptyReply::Exhausted => self.end_turn(a),
                }
            }
            Reply::UnknownTool { calls } => self.unknown_tool_reply(a, calls),
            Reply::MalformedArgs { .. } => match self.agents[a].gov.malformed_args_rule() {
                Some(MalformedArgs::FailedIteration { .. }) => self.parse_failure(a),
                // Only the reply that used up the retries is waited for: the turn ends
                // with it.
                _ => self.end_turn(a),
            },
            Reply::ContextTooSmall => unreachable!("handled before the call"),
            Reply::Calls(_) | Reply::Delegate { .. } => {
                let ag = &mut self.agents[a];
                ag.round.call_index = 0;
                ag.round.round_tools.clear();
                ag.round.round_calls.clear();
                ag.round.round_flagged = false;
                if let Reply::Calls(calls) = plan
                    && self.agents[a].stuck.is_some()
                {
                    // The reply's actions are logged before any of them runs.
                    let rep = self.agents[a].script.rep();
                    for c in calls {
                        let (args, _) = call_args(&mut self.args_cache, c, rep);
                        self.log_event(a, LogEvent::Action(action_key(c.tool.get_ref(), &args)));
                    }
                }
                self.next_call(a);
            }
        }
    }

    /// The opt-in limits checked on a reply before the runtime acts on it: its tokens, then
    /// its tool calls (which of them a limit blocks, into `blocked`).
    fn reply_limits(&mut self, a: AgentId, plan: Reply<'s>) -> Option<LimitStop> {
        let ag = &mut self.agents[a];
        ag.round.blocked.clear();
        if !ag.cfg.limits.any() {
            return None;
        }
        let (input, output) = ag.round.last_tokens;
        if let Some(stop) = ag.limits.after_response(&ag.cfg.limits, input, output) {
            return Some(stop);
        }
        let Reply::Calls(calls) = plan else {
            return None;
        };
        let tools: Vec<&str> = calls.iter().map(|c| c.tool.get_ref().as_str()).collect();
        match ag.limits.before_tools(&ag.cfg.limits, &tools) {
            Tools::Stop(stop) => Some(stop),
            Tools::Run(blocked) => {
                ag.round.blocked = blocked;
                None
            }
        }
    }

    /// Adds an event to the agent's log for a runtime that reads it (OpenHands' stuck
    /// detector).
    pub(super) fn log_event(&mut self, a: AgentId, e: LogEvent) {
        if let Some(d) = &mut self.agents[a].stuck {
            d.push(e);
        }
    }

    /// The runtime's stuck check before a step (OpenHands): true when the run stops here.
    pub(super) fn stuck_before_step(&mut self, a: AgentId) -> bool {
        let ag = &mut self.agents[a];
        if ag.gov.at_cap() || *ag.gov.exit_reason() != ExitReason::Unknown {
            return false;
        }
        let Some(d) = &mut ag.stuck else {
            return false;
        };
        match d.check() {
            Check::Go => false,
            Check::Nudge => {
                // The runtime's message about the repeated error joins the conversation.
                ag.messages_after_tools(1);
                false
            }
            Check::Stuck(_) => {
                ag.gov.stuck();
                true
            }
        }
    }

    /// Starts the next call of the round, or ends the round.
    pub(super) fn next_call(&mut self, a: AgentId) {
        let plan = self.agents[a].round.plan.expect("a plan");
        let calls: &[CallSpec] = match plan {
            Reply::Calls(c) => c,
            Reply::Delegate { .. } => &[],
            Reply::Answer
            | Reply::Empty
            | Reply::ContextTooSmall
            | Reply::UnknownTool { .. }
            | Reply::MalformedArgs { .. } => {
                unreachable!("no tool round")
            }
        };
        let idx = self.agents[a].round.call_index;
        if let Reply::Delegate { agent, tasks } = plan {
            if idx == 0 {
                self.delegate(a, agent, tasks);
            } else {
                self.end_round(a);
            }
            return;
        }
        if idx >= calls.len() {
            let ag = &mut self.agents[a];
            if !ag.round.blocked.is_empty() && ag.round.blocked.iter().all(|&b| b) {
                ag.gov.all_calls_blocked();
            }
            return self.end_round(a);
        }
        let c = &calls[idx];
        let tool: &'s str = c.tool.get_ref();
        if self.agents[a].round.blocked.get(idx) == Some(&true) {
            // A call-limit middleware answers it with an error; it never runs.
            self.coverage.hit(Mark::LimitBlockedCall);
            self.agents[a].count_tool_call(tool);
            self.agents[a].script.refused_call();
            if self.trace.enabled() {
                let mut e = self.event(a, EventKind::ToolBlocked);
                e.tool = Some(tool.to_string());
                e.detail = Some("tool_call_limit".into());
                self.trace.line(&e);
            }
            self.agents[a].round.call_index += 1;
            return self.next_call(a);
        }
        let rep = self.agents[a].script.rep();
        let (args, signature) = call_args(&mut self.args_cache, c, rep);
        let ag = &mut self.agents[a];
        if ag.cfg.turn.dedupe_identical_calls {
            if !batch::runs(&ag.round.round_calls, &signature) {
                // The runtime drops an identical call of the same reply before running any.
                ag.round.call_index += 1;
                self.coverage.hit(Mark::DuplicateCallDropped);
                return self.next_call(a);
            }
            ag.round.round_calls.push(signature.clone());
        }
        self.agents[a].round.round_tools.push(tool);
        self.agents[a].count_tool_call(tool);
        let d = self.agents[a].guard.before_call(signature, &args);
        if !d.action.allows_execution() {
            self.record_decision(a, tool, d.action, d.code, d.count);
            // A refused call is not run; its synthetic result is short.
            self.agents[a].script.refused_call();
            self.agents[a].round.call_index += 1;
            return self.next_call(a);
        }
        let now_s = self.sched.now().0 as f64 / 1e6;
        let run = self.agents[a].script.run_tool(c, now_s);
        if run.hung {
            self.coverage.hit(Mark::ToolHang);
        }
        if let Some(ap) = run.approval {
            let u = Usage {
                approval_calls: 1,
                approval_input_tokens: ap.input_tokens,
                approval_output_tokens: ap.output_tokens,
                approval_latency_us: ap.latency.0,
                cost_micro_usd: ap.cost_micro_usd,
                ..Usage::default()
            };
            self.account(a, &u);
            if self.trace.enabled() {
                let mut e = self.event(a, EventKind::ApprovalCall);
                e.tool = Some(tool.to_string());
                e.latency_us = Some(ap.latency.0);
                e.output_tokens = Some(ap.output_tokens);
                self.trace.line(&e);
            }
        }
        let (result, failed, dur) = (run.result, run.failed, run.dur);
        let ag = &mut self.agents[a];
        ag.round.call_started = self.sched.now();
        ag.round.pending = Some(PendingCall {
            tool,
            signature: d.signature,
            args,
            result,
            failed,
            dur,
        });
        self.sched.at(self.sched.now() + dur, Ev::CallDone(a));
    }
}

impl World<'_> {
    pub(super) fn call_done(&mut self, a: AgentId) {
        if !matches!(self.agents[a].status, Status::Running | Status::Waiting) {
            return;
        }
        let Some(p) = self.agents[a].round.pending.take() else {
            return;
        };
        let waited = self.agents[a].status == Status::Waiting;
        self.agents[a].status = Status::Running;
        let started = self.agents[a].round.call_started;
        self.note_span(
            a,
            started,
            if waited {
                SpanKind::Waiting
            } else {
                SpanKind::Tool
            },
        );
        let elapsed = if waited {
            0
        } else {
            self.sched.now().since(started).0
        };
        let u = Usage {
            tool_time_us: elapsed,
            ..Usage::default()
        };
        self.account(a, &u);
        let ag = &mut self.agents[a];
        let facts = CallFacts::with_signature(
            p.signature.clone(),
            Some(p.result.as_bytes()),
            ag.guard.rules(),
        )
        .with_args(&p.args);
        let (d, obs) = ag.guard.after_call(&facts, p.failed);
        if self.trace.enabled() {
            let mut e = self.event(a, EventKind::ToolCall);
            e.call = Some(self.agents[a].tally.calls);
            e.tool = Some(p.tool.to_string());
            e.args_hash = Some(facts.signature.args_hash.hex());
            e.result_hash = Some(facts.result_hash().hex());
            e.failed = Some(p.failed);
            e.latency_us = Some(p.dur.0);
            self.trace.line(&e);
        }
        if d.action != Action::Allow {
            self.record_decision(a, p.tool, d.action, d.code, d.count);
        }
        if obs.stub {
            self.agents[a].tally.stubs += 1;
            self.coverage.hit(Mark::ResultStub);
        }
        if let Some(kind) = obs.kind {
            self.coverage.hit(Mark::Notice(kind));
            let ag = &mut self.agents[a];
            ag.tally.notices += 1;
            ag.round.round_flagged = true;
            if let Some(s) = &mut ag.tally.series {
                s.warnings_us.push(self.sched.now().0);
            }
            if ag.tally.first_warning.is_none() {
                ag.tally.first_warning = Some((ag.tally.calls, self.sched.now().0));
            }
            if self.trace.enabled() {
                let mut e = self.event(a, EventKind::Notice);
                e.tool = Some(p.tool.to_string());
                e.detail = Some(kind.as_str().into());
                e.count = Some(if kind == NoticeKind::IdenticalCallStreak {
                    obs.streak
                } else {
                    obs.laps
                });
                self.trace.line(&e);
            }
        }
        self.strategy_hint(a, p.tool, p.failed);
        if self.agents[a].stuck.is_some() {
            let key = observation_key(p.tool, &p.result, p.failed);
            self.log_event(a, LogEvent::Observation(key));
        }
        self.agents[a].script.recycle_result(p.result);
        self.agents[a].round.call_index += 1;
        self.next_call(a);
    }

    /// A runtime that hints at a change of strategy after failures in a row of one tool
    /// (the article's loop): the hint joins this result, and the model may heed it as it
    /// would a warning.
    fn strategy_hint(&mut self, a: AgentId, tool: &str, failed: bool) {
        let ag = &mut self.agents[a];
        let Some(after) = ag.cfg.observation.failure_hint_after else {
            return;
        };
        if !ag.failure_streaks.observe(tool, failed, after) {
            return;
        }
        ag.script.strategy_hint();
        self.coverage.hit(Mark::StrategyHint);
        ag.tally.notices += 1;
        ag.round.round_flagged = true;
        if ag.tally.first_warning.is_none() {
            ag.tally.first_warning = Some((ag.tally.calls, self.sched.now().0));
        }
        if let Some(s) = &mut ag.tally.series {
            s.warnings_us.push(self.sched.now().0);
        }
        if self.trace.enabled() {
            let mut e = self.event(a, EventKind::Notice);
            e.tool = Some(tool.to_string());
            e.detail = Some(STRATEGY_HINT.into());
            e.count = Some(after);
            self.trace.line(&e);
        }
    }
}

/// An action as OpenHands' stuck detector compares it: its tool and arguments (the reply's
/// text, which it also compares, is empty in a scripted tool-call reply), arguments whose value
/// is null dropped as OpenHands drops them.
fn action_key(tool: &str, args: &Value) -> loopsim_engine::hash::Hash {
    let mut b = tool.as_bytes().to_vec();
    b.push(0);
    let kept = match args {
        Value::Object(pairs) => Value::Object(
            pairs
                .iter()
                .filter(|(_, v)| !matches!(v, Value::Null))
                .cloned()
                .collect(),
        ),
        other => other.clone(),
    };
    b.extend_from_slice(&loopsim_engine::json::canonical(&kept));
    loopsim_engine::hash::Hash::of(&b)
}

/// An observation as the stuck detector compares it: its tool, text and error flag.
fn observation_key(tool: &str, result: &str, failed: bool) -> loopsim_engine::hash::Hash {
    let mut b = tool.as_bytes().to_vec();
    b.push(0);
    b.extend_from_slice(result.as_bytes());
    b.push(0);
    b.push(failed as u8);
    loopsim_engine::hash::Hash::of(&b)
}

/// The notice a runtime's strategy-switch hint is traced as.
pub const STRATEGY_HINT: &str = "strategy_switch_hint";
