//! What must hold after every event of a run, whatever the scenario, seed or profile: the
//! simulator's own consistency, checked in debug builds and whenever a caller asks for it
//! (`loopsim explore`, `run --check-invariants`). The first broken invariant stops the run and
//! comes back as [`RunError::Invariant`] with the seed and the event where it broke.

use std::fmt;

use super::*;

/// An invariant of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Invariant {
    /// A turn ended while one of its tool calls had not come back.
    OrphanedToolCall,
    /// `api_call_count` or the budget's `used` disagrees with the calls and refunds taken.
    BudgetAccounting,
    /// A budget went above its cap.
    BudgetRange,
    /// A block or halt decision did not arm the guardrails' turn halt.
    BlockWithoutHalt,
    /// More children than `delegation.max_concurrent_children` were started at once.
    TooManyChildren,
    /// The run's total holds figures no agent's call accounts for.
    UntracedCost,
    /// No event is due while an agent still runs or waits.
    Deadlock,
    /// The run reached the global event cap ([`MAX_EVENTS`]).
    EventCap,
}

impl Invariant {
    pub const ALL: [Invariant; 8] = [
        Invariant::OrphanedToolCall,
        Invariant::BudgetAccounting,
        Invariant::BudgetRange,
        Invariant::BlockWithoutHalt,
        Invariant::TooManyChildren,
        Invariant::UntracedCost,
        Invariant::Deadlock,
        Invariant::EventCap,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Invariant::OrphanedToolCall => "orphaned-tool-call",
            Invariant::BudgetAccounting => "budget-accounting",
            Invariant::BudgetRange => "budget-range",
            Invariant::BlockWithoutHalt => "block-without-halt",
            Invariant::TooManyChildren => "too-many-children",
            Invariant::UntracedCost => "untraced-cost",
            Invariant::Deadlock => "deadlock",
            Invariant::EventCap => "event-cap",
        }
    }
}

impl fmt::Display for Invariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// When a run checks its invariants.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum InvariantChecks {
    /// In debug builds only (tests built without `--release`).
    #[default]
    DebugBuilds,
    Always,
    Never,
}

impl InvariantChecks {
    pub fn enabled(self) -> bool {
        match self {
            InvariantChecks::DebugBuilds => cfg!(debug_assertions),
            InvariantChecks::Always => true,
            InvariantChecks::Never => false,
        }
    }
}

/// A broken invariant: which, where in the run, and what was seen.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Violation {
    pub invariant: Invariant,
    pub seed: u64,
    /// Events handled when it broke (the event that broke it included).
    pub event: u64,
    pub t_us: u64,
    pub agent: String,
    pub detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invariant {} broken at event {} (t = {:.3} s, agent {}, seed {}): {}",
            self.invariant,
            self.event,
            self.t_us as f64 / 1e6,
            self.agent,
            self.seed,
            self.detail
        )
    }
}

impl World<'_> {
    /// Records a broken invariant (the first one only: the run stops at it).
    pub(super) fn violate(&mut self, invariant: Invariant, a: AgentId, detail: String) {
        if self.violation.is_some() {
            return;
        }
        self.violation = Some(Violation {
            invariant,
            seed: self.setup.seed,
            event: self.sched.events_handled(),
            t_us: self.now(),
            agent: self.agents[a].name.clone(),
            detail,
        });
    }

    /// The checks that hold after every event.
    pub(super) fn check_after_event(&mut self) {
        if let Some((a, detail)) = self.budget_mismatch() {
            return self.violate(Invariant::BudgetAccounting, a, detail);
        }
        for a in 0..self.agents.len() {
            let b = self.agents[a].gov.budget();
            if b.used() > b.max_total() {
                let detail = format!("budget used {} above its cap {}", b.used(), b.max_total());
                return self.violate(Invariant::BudgetRange, a, detail);
            }
        }
        let mut sum = Usage::default();
        for ag in &self.agents {
            sum.add(&ag.tally.usage);
        }
        if sum != self.totals.total {
            let detail = format!(
                "the run's total is {} model calls, {} input tokens, {} micro-dollars; its agents' calls add up to {}, {}, {}",
                self.totals.total.model_calls,
                self.totals.total.input_tokens,
                self.totals.total.cost_micro_usd,
                sum.model_calls,
                sum.input_tokens,
                sum.cost_micro_usd
            );
            self.violate(Invariant::UntracedCost, 0, detail);
        }
    }

    /// An agent whose counters disagree with its turn's ledger. A budget shared with children
    /// is checked against the ledgers of every turn drawing on it.
    fn budget_mismatch(&self) -> Option<(AgentId, String)> {
        for (a, ag) in self.agents.iter().enumerate() {
            let l = ag.gov.ledger();
            let expected = l.calls_begun.checked_sub(l.calls_returned);
            if expected != Some(ag.gov.api_call_count()) {
                return Some((
                    a,
                    format!(
                        "api_call_count is {} after {} calls begun and {} given back",
                        ag.gov.api_call_count(),
                        l.calls_begun,
                        l.calls_returned
                    ),
                ));
            }
            let budget = ag.gov.budget();
            let (mut taken, mut returned) = (0u64, 0u64);
            let live = self.agents.iter().map(|o| (o.gov.budget(), o.gov.ledger()));
            let retired = self.retired_ledgers.iter().map(|(b, l)| (b, *l));
            for (b, o) in live.chain(retired) {
                if Arc::ptr_eq(b, budget) {
                    taken += o.taken;
                    returned += o.returned;
                }
            }
            if taken.checked_sub(returned) != Some(budget.used()) {
                return Some((
                    a,
                    format!(
                        "budget used is {} after {taken} iterations taken and {returned} refunded",
                        budget.used()
                    ),
                ));
            }
        }
        None
    }

    /// A turn ends: none of its tool calls may still be out.
    pub(super) fn check_turn_end(&mut self, a: AgentId) {
        if let Some(p) = &self.agents[a].round.pending {
            let detail = format!("the turn ended with its {} call still running", p.tool);
            self.violate(Invariant::OrphanedToolCall, a, detail);
        }
    }

    /// A block or halt was decided: the guardrails must now hold the turn's halt.
    pub(super) fn check_halt_armed(&mut self, a: AgentId, action: Action, code: DecisionCode) {
        if action.halts() && self.agents[a].guard.halt_decision().is_none() {
            let detail = format!("{} {} left no halt armed", action.as_str(), code.as_str());
            self.violate(Invariant::BlockWithoutHalt, a, detail);
        }
    }

    /// A batch of children was started: neither the batch nor the background batches still
    /// running may exceed the spawning agent's `max_concurrent_children`.
    pub(super) fn check_children(&mut self, a: AgentId) {
        let max = self.agents[a].cfg.delegation.max_concurrent_children as usize;
        let Some(batch) = self.batches.last() else {
            return;
        };
        if batch.children.len() > max {
            let detail = format!(
                "a batch of {} children under max_concurrent_children {max}",
                batch.children.len()
            );
            return self.violate(Invariant::TooManyChildren, a, detail);
        }
        let running = self
            .batches
            .iter()
            .filter(|b| {
                b.background
                    && b.children
                        .first()
                        .and_then(|c| self.agents[*c].family.parent)
                        == Some(a)
                    && !b.children.iter().all(|c| self.finished(*c))
            })
            .count();
        if running > max {
            let detail =
                format!("{running} background batches running under max_concurrent_children {max}");
            self.violate(Invariant::TooManyChildren, a, detail);
        }
    }

    /// No event is due: every agent must have come to rest. One that still runs or waits
    /// would wait forever.
    pub(super) fn check_at_rest(&mut self) {
        for a in 0..self.agents.len() {
            let ag = &self.agents[a];
            let detail = match ag.status {
                Status::Running => format!("{} is running with no event due", ag.name),
                Status::Waiting => {
                    let on: Vec<String> = ag
                        .family
                        .waiting_batch
                        .map(|b| {
                            self.batches[b]
                                .children
                                .iter()
                                .map(|c| {
                                    let c = &self.agents[*c];
                                    format!("{} ({:?})", c.name, c.status).to_lowercase()
                                })
                                .collect()
                        })
                        .unwrap_or_default();
                    if on.is_empty() {
                        format!("{} waits on no batch", ag.name)
                    } else {
                        format!("{} waits on {}", ag.name, on.join(", "))
                    }
                }
                _ => continue,
            };
            return self.violate(Invariant::Deadlock, a, detail);
        }
        for a in 0..self.agents.len() {
            if self.agents[a].round.pending.is_some() && !self.finished_early(a) {
                self.check_turn_end(a);
                return;
            }
        }
    }

    /// A child stopped by its timeout abandons its call in flight, as the runtime does.
    fn finished_early(&self, a: AgentId) -> bool {
        matches!(
            self.agents[a].status,
            Status::TimedOut | Status::Interrupted
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCENARIO: &str = r#"name = "inv"
description = "a search, a fan-out of two, an answer"
provenance = "unit test"
profile = "hermes-main"

[models.m]
latency_s = 1
output_tokens = 10

[tools.web_search]
latency_s = 1
result = '{"hits": ["{counter}"]}'

[agents.parent]
model = "m"
script = [
  { calls = [{ tool = "web_search", args = { q = "x" } }] },
  { delegate = "worker", tasks = 2 },
  { answer = "done" },
]

[agents.worker]
model = "m"
script = [{ answer = "found" }]
"#;

    fn world(sc: &Scenario) -> World<'_> {
        let opts = RunOptions {
            invariants: InvariantChecks::Always,
            ..RunOptions::default()
        };
        World::new(sc, &opts, TraceWriter::hash_only()).unwrap()
    }

    fn scenario() -> Scenario {
        Scenario::parse(SCENARIO, "inv.toml").unwrap()
    }

    fn broken(w: &World<'_>) -> Option<Invariant> {
        w.violation.as_ref().map(|v| v.invariant)
    }

    #[test]
    fn an_untouched_run_breaks_nothing() {
        let sc = scenario();
        let mut w = world(&sc);
        w.run();
        assert_eq!(broken(&w), None);
        let s = w.finish().unwrap();
        assert_eq!(s.agents.len(), 3);
    }

    #[test]
    fn a_budget_changed_outside_the_turn_rules_is_caught() {
        let sc = scenario();
        let mut w = world(&sc);
        w.check_after_event();
        assert_eq!(broken(&w), None);
        assert!(w.agents[0].gov.budget().consume());
        w.check_after_event();
        assert_eq!(broken(&w), Some(Invariant::BudgetAccounting));
        let v = w.violation.clone().unwrap();
        assert_eq!(v.agent, "parent");
        assert!(
            v.detail.contains("budget used is 1 after 0 iterations"),
            "{v}"
        );
    }

    #[test]
    fn a_shared_budget_counts_the_turns_its_owner_has_left() {
        // Children draw on the parent's budget; the parent's next turn has a budget of its
        // own, and the old one's accounting must still include the turn that ended.
        let text = SCENARIO.replace(
            "profile = \"hermes-main\"",
            "profile = \"hermes-main\"\nchild_budget = \"shared\"",
        );
        let sc = Scenario::parse(&text, "shared.toml").unwrap();
        let mut w = world(&sc);
        assert_eq!(
            w.agents[0].gov.begin_iteration(false),
            TurnStep::Call { tools: true }
        );
        let c = w.spawn_agent("worker-1".into(), "worker", 1, Some(0));
        w.start_turn(c, false);
        assert!(Arc::ptr_eq(
            w.agents[c].gov.budget(),
            w.agents[0].gov.budget()
        ));
        assert_eq!(
            w.agents[c].gov.begin_iteration(false),
            TurnStep::Call { tools: true }
        );
        w.start_turn(0, true);
        assert_eq!(
            w.agents[c].gov.begin_iteration(false),
            TurnStep::Call { tools: true }
        );
        w.check_after_event();
        assert_eq!(broken(&w), None, "{:?}", w.violation);
        assert_eq!(w.agents[c].gov.budget().used(), 3);
    }

    #[test]
    fn a_cost_no_agent_made_is_caught() {
        let sc = scenario();
        let mut w = world(&sc);
        w.totals.total.add(&Usage {
            cost_micro_usd: 7,
            ..Usage::default()
        });
        w.check_after_event();
        assert_eq!(broken(&w), Some(Invariant::UntracedCost));
    }

    #[test]
    fn a_turn_ending_with_a_call_out_is_an_orphan() {
        let sc = scenario();
        let mut w = world(&sc);
        w.agents[0].round.pending = Some(PendingCall {
            tool: "web_search",
            signature: Signature::new("web_search", &Value::Null),
            args: Value::Null.into(),
            result: String::new(),
            failed: false,
            dur: Duration::ZERO,
        });
        w.end_turn(0);
        assert_eq!(broken(&w), Some(Invariant::OrphanedToolCall));
        assert!(w.violation.unwrap().detail.contains("web_search"));
    }

    #[test]
    fn a_block_that_arms_no_halt_is_caught() {
        let sc = scenario();
        let mut w = world(&sc);
        w.check_halt_armed(0, Action::Warn, DecisionCode::Allow);
        assert_eq!(broken(&w), None);
        w.check_halt_armed(0, Action::Block, DecisionCode::IdenticalCallStreakHalt);
        assert_eq!(broken(&w), Some(Invariant::BlockWithoutHalt));
    }

    #[test]
    fn a_batch_above_max_concurrent_children_is_caught() {
        let sc = scenario();
        let mut w = world(&sc);
        let max = w.agents[0].cfg.delegation.max_concurrent_children;
        let children: Vec<AgentId> = (0..=max)
            .map(|i| w.spawn_agent(format!("worker-{i}"), "worker", 1, Some(0)))
            .collect();
        w.batches.push(Batch {
            children,
            background: false,
            delivered: false,
        });
        w.check_children(0);
        assert_eq!(broken(&w), Some(Invariant::TooManyChildren));
    }

    #[test]
    fn an_agent_waiting_with_nothing_due_is_a_deadlock_naming_whom_it_waits_on() {
        let sc = scenario();
        let mut w = world(&sc);
        let c = w.spawn_agent("worker-1".into(), "worker", 1, Some(0));
        w.agents[c].status = Status::Idle;
        w.batches.push(Batch {
            children: vec![c],
            background: false,
            delivered: false,
        });
        w.agents[0].status = Status::Waiting;
        w.agents[0].family.waiting_batch = Some(0);
        w.check_at_rest();
        let v = w.violation.unwrap();
        assert_eq!(v.invariant, Invariant::Deadlock);
        assert_eq!(v.detail, "parent waits on worker-1 (idle)");
    }

    #[test]
    fn the_event_cap_is_an_invariant_when_checking_and_a_horizon_otherwise() {
        // A loop without latency: virtual time never moves, only the event count does.
        let text = r#"name = "zero"
description = "d"
provenance = "test"
profile = "hermes-main"

[models.m]
latency_s = 0
output_tokens = 1

[tools.terminal]
latency_s = 0
result = '{"output": "{counter}", "exit_code": 0}'

[agents.parent]
model = "m"
script = [{ calls = [{ tool = "terminal", args = { command = "x" } }], until = "stopped" }]
"#;
        let sc = Scenario::parse(text, "cap.toml").unwrap();
        let mut w = world(&sc);
        w.run();
        assert_eq!(broken(&w), Some(Invariant::EventCap));
        match w.finish() {
            Err(RunError::Invariant(v)) => assert!(v.event > MAX_EVENTS, "{v}"),
            other => panic!("expected the event cap, got {other:?}"),
        }
        let opts = RunOptions {
            invariants: InvariantChecks::Never,
            ..RunOptions::default()
        };
        let s = run(&sc, &opts, TraceWriter::hash_only()).unwrap();
        assert!(s.hit_horizon);
    }

    #[test]
    fn names_are_unique_and_kebab_case() {
        for (i, a) in Invariant::ALL.iter().enumerate() {
            assert!(Invariant::ALL[..i].iter().all(|b| b.as_str() != a.as_str()));
            assert_eq!(serde_json::to_value(a).unwrap(), a.as_str());
        }
    }
}
