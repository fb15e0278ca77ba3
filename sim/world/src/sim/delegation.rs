//! Delegation inside a run: admitting children, their timeouts, and the results they send
//! back (synchronously, or as a new turn of a background parent).

use super::*;

impl World<'_> {
    pub(super) fn delegate(&mut self, a: AgentId, child_spec: &str, tasks: u32) {
        let call = self.agents[a].script.delegate(child_spec, tasks);
        let args = Rc::new(call.args);
        self.agents[a].round.round_tools.push("delegate_task");
        self.agents[a].count_tool_call("delegate_task");
        self.agents[a].round.call_index = 1;
        let d = self.agents[a].guard.before_call(call.signature, &args);
        let signature = d.signature.clone();
        if !d.action.allows_execution() {
            self.record_decision(a, "delegate_task", d.action, d.code, d.count);
            self.agents[a].script.refused_call();
            return self.next_call(a);
        }
        let running_bg = self
            .batches
            .iter()
            .filter(|b| b.background && !b.children.iter().all(|c| self.finished(*c)))
            .count() as u32;
        let ag = &self.agents[a];
        let admission = ag.cfg.delegation.admit(ag.family.depth, tasks, running_bg);
        self.coverage.hit(Mark::Delegation(match admission {
            Admission::Rejected(_) => Admitted::Rejected,
            Admission::Synchronous { .. } => Admitted::Synchronous,
            Admission::Background { .. } => Admitted::Background,
        }));
        let (n, background) = match admission {
            Admission::Rejected(why) => {
                let result = format!("{{\"error\": \"delegation refused: {why:?}\"}}");
                self.agents[a].round.pending = Some(PendingCall {
                    tool: "delegate_task",
                    signature: signature.clone(),
                    args: args.clone(),
                    result,
                    failed: true,
                    dur: Duration::ZERO,
                });
                self.agents[a].round.call_started = self.sched.now();
                self.sched.at(self.sched.now(), Ev::CallDone(a));
                return;
            }
            Admission::Synchronous { children } => (children, false),
            Admission::Background { children } => (children, true),
        };
        let n = self.agents[a].guard_spawn(n);
        let b = self.batches.len();
        let depth = self.agents[a].family.depth + 1;
        let timeout = self.agents[a].cfg.delegation.child_timeout_us;
        let mut children = Vec::new();
        for name in call.names.into_iter().take(n as usize) {
            let c = self.spawn_agent(name, child_spec, depth, Some(a));
            self.agents[c].interrupted = self.agents[a].interrupted;
            children.push(c);
        }
        self.batches.push(Batch {
            children: children.clone(),
            background,
            delivered: false,
        });
        if self.checks {
            self.check_children(a);
        }
        if self.trace.enabled() {
            let mut e = self.event(a, EventKind::Spawn);
            e.children = Some(n);
            e.detail = Some(
                if background {
                    "background"
                } else {
                    "synchronous"
                }
                .into(),
            );
            self.trace.line(&e);
        }
        for &c in &children {
            self.start_turn(c, false);
            if let Some(t) = timeout {
                self.sched
                    .at(self.sched.now() + Duration(t), Ev::ChildTimeout(c));
            }
        }
        let ag = &mut self.agents[a];
        ag.round.call_started = self.sched.now();
        if background {
            let result =
                format!("{{\"status\": \"dispatched\", \"mode\": \"background\", \"count\": {n}}}");
            ag.round.pending = Some(PendingCall {
                tool: "delegate_task",
                signature: signature.clone(),
                args: args.clone(),
                result,
                failed: false,
                dur: Duration::ZERO,
            });
            ag.family.pending_results.push(b);
            self.sched.at(self.sched.now(), Ev::CallDone(a));
        } else {
            ag.round.pending = Some(PendingCall {
                tool: "delegate_task",
                signature: signature.clone(),
                args: args.clone(),
                result: String::new(),
                failed: false,
                dur: Duration::ZERO,
            });
            ag.status = Status::Waiting;
            ag.family.waiting_batch = Some(b);
            if n == 0 {
                self.batch_finished(b);
            }
        }
    }

    pub(super) fn child_timeout(&mut self, c: AgentId) {
        if self.finished(c) {
            return;
        }
        let ag = &mut self.agents[c];
        ag.status = Status::TimedOut;
        ag.tally.exit_reasons.push("timeout".into());
        self.coverage.hit(Mark::ChildTimeout);
        if self.trace.enabled() {
            let e = self.event(c, EventKind::ChildTimeout);
            self.trace.line(&e);
        }
        self.child_finished(c);
    }

    /// A child's chance of crashing per iteration: its own, else the seed's for its script.
    pub(super) fn crash_rate(&self, spec_name: &str, depth: u32) -> f64 {
        if depth == 0 {
            return 0.0;
        }
        let own = *self.setup.sc.file.agents[spec_name]
            .crash_probability
            .get_ref();
        if own > 0.0 {
            return own;
        }
        self.setup
            .seeded_crashes
            .iter()
            .find(|(n, _)| n == spec_name)
            .map_or(0.0, |(_, p)| *p)
    }

    /// Whether child `c`'s own code raises at the top of this iteration: one draw of its
    /// crash stream for each iteration the loop's test admits (the runtime's code there runs
    /// before its interrupt check).
    pub(super) fn crashes_now(&mut self, c: AgentId) -> bool {
        let ag = &mut self.agents[c];
        let Some(crash) = ag.trouble.crash.as_mut() else {
            return false;
        };
        ag.gov.iteration_due() && crash.crashes()
    }

    /// Child `c` crashed: its thread ends with the exception, and the runtime's delegation
    /// reports it failed (`error`) with the calls it had begun. No turn end: the loop never
    /// got to one.
    pub(super) fn child_crash(&mut self, c: AgentId) {
        let ag = &mut self.agents[c];
        ag.status = Status::Crashed;
        ag.tally.exit_reasons.push("error".into());
        self.coverage.hit(Mark::ChildCrash);
        if self.trace.enabled() {
            let mut e = self.event(c, EventKind::ChildCrash);
            e.call = Some(self.agents[c].gov.api_call_count());
            e.budget_used = Some(self.agents[c].gov.budget().used());
            e.detail = Some("error".into());
            self.trace.line(&e);
        }
        self.child_finished(c);
    }

    pub(super) fn child_finished(&mut self, c: AgentId) {
        if self.trace.enabled() {
            let mut e = self.event(c, EventKind::ChildDone);
            e.call = Some(self.agents[c].tally.calls);
            e.detail = Some(format!("{:?}", self.agents[c].status).to_lowercase());
            self.trace.line(&e);
        }
        if let Some(b) = self.batches.iter().position(|b| b.children.contains(&c))
            && self.batches[b].children.iter().all(|x| self.finished(*x))
        {
            self.batch_finished(b);
        }
    }

    pub(super) fn batch_finished(&mut self, b: usize) {
        let Some(&first) = self.batches[b].children.first() else {
            // An empty synchronous batch: find its waiting parent.
            if let Some(p) = self
                .agents
                .iter()
                .position(|x| x.family.waiting_batch == Some(b))
            {
                self.finish_wait(p, b);
            }
            return;
        };
        let p = self.agents[first]
            .family
            .parent
            .expect("children have parents");
        if self.batches[b].background {
            self.sched.at(self.sched.now(), Ev::BatchDone(p, b));
        } else {
            self.finish_wait(p, b);
        }
    }

    pub(super) fn finish_wait(&mut self, p: AgentId, b: usize) {
        let n = self.batches[b].children.len();
        let statuses: Vec<String> = self.batches[b]
            .children
            .iter()
            .map(|c| format!("\"{:?}\"", self.agents[*c].status).to_lowercase())
            .collect();
        let ag = &mut self.agents[p];
        ag.family.waiting_batch = None;
        if let Some(pc) = &mut ag.round.pending {
            pc.result = format!("{{\"results\": [{}], \"count\": {n}}}", statuses.join(", "));
        }
        ag.script.children_reported(n);
        self.sched.at(self.sched.now(), Ev::CallDone(p));
    }

    /// A background batch's result: a new turn if the parent is idle, else after its turn.
    pub(super) fn deliver(&mut self, p: AgentId, b: usize) {
        if self.batches[b].delivered || self.agents[p].interrupted {
            return;
        }
        if self.agents[p].status == Status::Idle || self.agents[p].status == Status::Done {
            self.batches[b].delivered = true;
            self.agents[p].family.pending_results.retain(|x| *x != b);
            if self.trace.enabled() {
                let mut e = self.event(p, EventKind::BackgroundResult);
                e.children = Some(self.batches[b].children.len() as u32);
                self.trace.line(&e);
            }
            let n = self.batches[b].children.len();
            self.agents[p].script.children_reported(n);
            self.start_turn(p, true);
        }
        // Otherwise end_turn delivers it.
    }
}
