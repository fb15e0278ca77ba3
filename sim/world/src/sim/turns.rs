//! Turns: how one opens (a fresh budget, unless shared with a parent), how a round of tool
//! calls ends (the halt, refunds, the script moving on) and how a turn ends (the summary
//! call, the exit reason, what a child or a parent does next).

use super::*;

impl World<'_> {
    /// A new user turn: fresh budget (unless shared with a parent), guardrails reset.
    pub(super) fn start_turn(&mut self, a: AgentId, on_result: bool) {
        let budget_src = self.agents[a].family.parent.map(|p| {
            (
                Arc::clone(self.agents[p].gov.budget()),
                self.agents[a].cfg.delegation.child_budget,
            )
        });
        let ag = &mut self.agents[a];
        if self.checks && Arc::strong_count(ag.gov.budget()) > 1 {
            // Children still draw on the old budget: its accounting goes on without this turn.
            self.retired_ledgers
                .push((Arc::clone(ag.gov.budget()), ag.gov.ledger()));
        }
        let max = ag.gov.max_iterations();
        ag.gov = match budget_src {
            Some((b, ChildBudget::Shared)) => TurnGovernor::with_budget(ag.cfg.turn, max, b, 0),
            Some((b, ChildBudget::Reserved(r))) => {
                TurnGovernor::with_budget(ag.cfg.turn, max, b, r)
            }
            _ => {
                TurnGovernor::with_budget(ag.cfg.turn, max, Arc::new(IterationBudget::new(max)), 0)
            }
        };
        ag.guard.reset_turn();
        ag.failure_streaks.reset();
        // Each user turn is a run of its own: the limits count afresh.
        ag.limits = LimitCounter::default();
        if let Some(d) = &mut ag.stuck {
            // The turn's user message: the detector reads only what follows it.
            d.push(LogEvent::UserMessage);
        }
        ag.script.start_turn(on_result);
        // The turn's user message (or the background result's note).
        ag.messages_after_tools(1);
        ag.status = Status::Running;
        ag.tally.turns += 1;
        self.note_budget(a);
        if self.trace.enabled() {
            let e = self.event(a, EventKind::TurnStart);
            self.trace.line(&e);
        }
        self.sched.at(self.sched.now(), Ev::Wake(a));
    }

    /// The turn halt the runtime acts on after the batch.
    pub(super) fn turn_halt(&self, a: AgentId) -> Option<DecisionCode> {
        let ag = &self.agents[a];
        let h = ag.guard.halt_decision()?;
        if h.code == DecisionCode::IdenticalCycleHalt && !ag.guard.rules().cycle_halt_ends_turn {
            return None;
        }
        Some(h.code)
    }

    pub(super) fn end_round(&mut self, a: AgentId) {
        let halt = self.turn_halt(a);
        if let Some(code) = halt {
            let ag = &mut self.agents[a];
            if ag.tally.stop.is_none() {
                // A stall guard's halt is first seen here (a block was counted when decided).
                self.coverage.hit(Mark::Decision(code));
                ag.tally.stop = Some(Stop {
                    call: ag.tally.calls,
                    t_us: self.sched.now().0,
                    code: code.as_str().into(),
                });
                if let Some(s) = &mut ag.tally.series {
                    s.stops_us.push(self.sched.now().0);
                }
            }
        }
        self.advance_script(a);
        let ag = &mut self.agents[a];
        ag.round.since_tool = Some(0);
        let before = ag.gov.budget().used();
        let go_on = ag
            .gov
            .tool_round(ag.round.round_tools.iter().copied(), halt.is_some());
        // Kept for the next round (cleared when it is planned).
        ag.round.round_tools.clear();
        if ag.gov.budget().used() < before {
            self.coverage
                .hit(Mark::Refund(RefundSite::ExecuteCodeRound));
            let used = ag.gov.budget().used();
            self.note_budget(a);
            if self.trace.enabled() {
                let mut e = self.event(a, EventKind::BudgetRefund);
                e.budget_used = Some(used);
                self.trace.line(&e);
            }
        }
        if go_on {
            self.sched.at(self.sched.now(), Ev::Wake(a));
        } else {
            self.end_turn(a);
        }
    }

    /// Moves the script on after a model call, unless the step repeats.
    pub(super) fn advance_script(&mut self, a: AgentId) {
        let children_done = self.background_done(a);
        let ag = &mut self.agents[a];
        ag.script.advance(ag.round.round_flagged, children_done);
    }

    /// Whether every background batch this agent started has finished.
    pub(super) fn background_done(&self, a: AgentId) -> bool {
        self.batches.iter().filter(|b| b.background).all(|b| {
            b.children
                .first()
                .is_none_or(|c| self.agents[*c].family.parent != Some(a))
                || b.children.iter().all(|c| self.finished(*c))
        })
    }

    pub(super) fn finished(&self, a: AgentId) -> bool {
        matches!(
            self.agents[a].status,
            Status::Done | Status::TimedOut | Status::Crashed | Status::Interrupted
        )
    }

    /// A planning call now (smolagents' `planning_interval`): tools-free, not a step; the
    /// plan joins the context. Returns how long it takes.
    pub(super) fn planning_call(&mut self, a: AgentId) -> Duration {
        self.coverage.hit(Mark::PlanningCall);
        self.tools_free_call(a, EventKind::PlanningCall)
    }

    /// A tools-free call outside the loop's count (a summary, a plan): the runtime's request
    /// and the reply join the context, the call is charged and traced as `kind`.
    fn tools_free_call(&mut self, a: AgentId, kind: EventKind) -> Duration {
        self.trace_batch_error(a);
        let ag = &mut self.agents[a];
        let model = ag.script.model();
        let call = ag.script.summary();
        let (lat, input, out) = (call.latency, call.input_tokens, call.output_tokens);
        ag.messages_after_tools(2);
        let u = Usage::model_call(&model.price, input, call.cache_read_tokens, out, lat.0);
        self.account(a, &u);
        if self.trace.enabled() {
            let mut e = self.event(a, kind);
            e.input_tokens = Some(input);
            e.output_tokens = Some(out);
            e.latency_us = Some(lat.0);
            self.trace.line(&e);
        }
        lat
    }

    /// The top of an iteration: the runtime's checks before it, then the loop's test and
    /// the model call it admits.
    pub(super) fn wake(&mut self, a: AgentId) {
        if self.agents[a].status != Status::Running {
            return;
        }
        let stop_here = {
            let ag = &self.agents[a];
            !ag.interrupted && ag.script.user_stop_next()
        };
        if stop_here {
            // The recorded user pressed stop: the running turn ends at this iteration.
            self.agents[a].interrupted = true;
            self.coverage.hit(Mark::UserStop);
            if self.trace.enabled() {
                let e = self.event(a, EventKind::Interrupt);
                self.trace.line(&e);
            }
        }
        let interrupt = self.agents[a].interrupted;
        // OpenHands looks at a pause (the user's stop) before its stuck check.
        if !interrupt && self.stuck_before_step(a) {
            return self.end_turn(a);
        }
        if self.crashes_now(a) {
            return self.child_crash(a);
        }
        let ag = &mut self.agents[a];
        let limit = ag.limits.before_model(&ag.cfg.limits);
        match ag.gov.begin_iteration_unless(interrupt, limit) {
            TurnStep::Exit => self.end_turn(a),
            TurnStep::Call { tools } => {
                self.trace_batch_error(a);
                // smolagents plans (a tools-free call) before some steps: the step's request
                // goes out once the plan is back.
                let plan = if tools && self.agents[a].gov.planning_due() {
                    self.planning_call(a)
                } else {
                    Duration(0)
                };
                let delay = match self.context_gate(a) {
                    Ok(delay) => Duration(delay.0 + plan.0),
                    Err(Duration(0)) => return self.end_turn(a),
                    Err(after) => {
                        // The turn dies once the compressions before it are done.
                        let at = self.sched.now() + after;
                        return self.sched.at(at, Ev::ContextExhausted(a));
                    }
                };
                // Provider errors come before the reply: retries wait, a give-up fails the turn.
                let Some((call, delay)) = self.request(a, tools, delay) else {
                    return;
                };
                let ag = &mut self.agents[a];
                if matches!(call.reply, Reply::ContextTooSmall) {
                    // The preflight gate fails before any request is sent.
                    ag.gov.runtime_context_too_small();
                    self.coverage.hit(Mark::Refund(RefundSite::BeforeSend));
                    self.note_budget(a);
                    let ag = &mut self.agents[a];
                    let used = ag.gov.budget().used();
                    if self.trace.enabled() {
                        let mut e = self.event(a, EventKind::BudgetRefund);
                        e.budget_used = Some(used);
                        e.detail = Some("runtime context too small".into());
                        self.trace.line(&e);
                    }
                    return self.end_turn(a);
                }
                if call.step.is_some_and(|s| s.loop_begins) && self.totals.loop_began.is_none() {
                    self.totals.loop_began = Some(self.sched.now().0);
                }
                self.agents[a].round.plan = Some(call.reply);
                self.bill_model_call(a, &call, delay);
                if call.unknown_in_batch {
                    self.coverage.hit(Mark::UnknownToolInBatch);
                    self.agents[a].trouble.batch_error = Some(self.agents[a].tally.calls);
                }
                self.sched
                    .at(self.sched.now() + delay + call.latency, Ev::ModelDone(a));
            }
        }
    }

    pub(super) fn end_turn(&mut self, a: AgentId) {
        if self.checks {
            self.check_turn_end(a);
        }
        let fin = self.agents[a].gov.finish();
        if fin.summary_call {
            // The runtime's request for a summary, and the summary (the simulator does not
            // advance the clock for it).
            self.agents[a].tally.summary_calls += 1;
            self.coverage.hit(Mark::SummaryCall);
            self.tools_free_call(a, EventKind::SummaryCall);
        }
        let reason = fin.exit_reason.to_string();
        self.coverage.hit(Mark::exit(&reason));
        if self.trace.enabled() {
            let mut e = self.event(a, EventKind::TurnEnd);
            e.call = Some(self.agents[a].tally.calls);
            e.budget_used = Some(fin.budget_used);
            e.detail = Some(reason.clone());
            self.trace.line(&e);
        }
        let ag = &mut self.agents[a];
        if fin.exit_reason.is_runtime_limit() && ag.tally.stop.is_none() {
            // Another runtime's limit ended the turn (an exception, smolagents' final answer
            // at max_steps): that is its governance's stop, as a guardrail halt is Hermes's
            // (reports, sweeps and `check` count it so).
            ag.tally.stop = Some(Stop {
                call: ag.tally.calls,
                t_us: self.sched.now().0,
                code: reason.clone(),
            });
            if let Some(s) = &mut ag.tally.series {
                s.stops_us.push(self.sched.now().0);
            }
        }
        ag.tally.exit_reasons.push(reason);
        ag.tally.last_turn_exit = Some(fin.exit_reason.clone());
        let interrupted = matches!(
            fin.exit_reason,
            ExitReason::InterruptedByUser | ExitReason::InterruptedDuringApiCall
        );
        if ag.family.parent.is_some() {
            ag.status = if interrupted {
                Status::Interrupted
            } else {
                Status::Done
            };
            self.child_finished(a);
            return;
        }
        if let Some(at_s) = ag.script.next_user_message_at()
            && ag.family.pending_results.is_empty()
        {
            // The user's next message (a recorded session's later turn): after this turn,
            // and not before the message was sent.
            let at = Instant::START + Duration::from_secs_f64(at_s);
            ag.script.open_user_turn();
            ag.interrupted = false;
            ag.status = Status::Idle;
            let at = at.max(self.sched.now());
            self.sched.at(at, Ev::UserTurn(a));
            return;
        }
        if interrupted {
            ag.status = Status::Interrupted;
            return;
        }
        // A finished background batch waiting for this turn to end opens the next one.
        let pending = ag.family.pending_results.clone();
        let ready = pending
            .into_iter()
            .find(|b| self.batches[*b].children.iter().all(|c| self.finished(*c)));
        let ag = &mut self.agents[a];
        if let Some(b) = ready {
            ag.status = Status::Idle;
            self.deliver(a, b);
        } else if ag.family.pending_results.is_empty() {
            ag.status = Status::Done;
        } else {
            ag.status = Status::Idle;
        }
    }
}
