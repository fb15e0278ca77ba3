//! An engine that answers what a recorded session's guardrails did.
//!
//! An imported session (`loopsim import`) is a scenario whose calls carry the decisions read
//! back from the session's tool results. Running it as written replays those decisions, so the
//! run is the session as it happened; naming a profile or config swaps in that engine instead
//! and shows what it would have done with the same calls.

use loopsim_engine::GuardrailEngine;
use loopsim_engine::guardrails::{
    Action, CallFacts, Decision, DecisionCode, GuardrailRules, NoticeKind, Observation,
};
use loopsim_engine::hash::Signature;
use loopsim_engine::json::Value;

use crate::scenario::{AgentSpec, CallSpec, RecordedDecision, RecordedNotice, Step};

/// One call's recorded decision, resolved to engine types.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Recorded {
    action: Action,
    code: DecisionCode,
    count: u32,
}

/// What the record says about one call.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct RecordedCall {
    decision: Option<Recorded>,
    notice: Option<Observation>,
}

fn observation(n: &RecordedNotice) -> Option<Observation> {
    let kind = NoticeKind::parse(n.kind.get_ref())?;
    Some(match kind {
        NoticeKind::IdenticalCallStreak => Observation {
            kind: Some(kind),
            streak: n.count,
            ..Observation::default()
        },
        NoticeKind::IdenticalCycle => Observation {
            kind: Some(kind),
            laps: n.count,
            period: n.period,
            ..Observation::default()
        },
    })
}

fn recorded_call(c: &CallSpec) -> RecordedCall {
    RecordedCall {
        decision: c.guardrail.as_ref().map(resolve),
        notice: c.notice.as_ref().and_then(observation),
    }
}

/// The recorded decisions of one agent: per user turn, in the order its calls are made.
pub struct RecordedGuard {
    rules: GuardrailRules,
    turns: Vec<Vec<RecordedCall>>,
    /// The current turn (none before the first).
    turn: Option<usize>,
    /// The next call's index in the turn; `before_call` moves it on.
    next: usize,
    halt: Option<Decision>,
}

fn resolve(d: &RecordedDecision) -> Recorded {
    Recorded {
        action: Action::parse(d.action.get_ref()).unwrap_or(Action::Warn),
        code: DecisionCode::parse(d.code.get_ref()).unwrap_or(DecisionCode::Allow),
        count: d.count,
    }
}

impl RecordedGuard {
    /// Lays out the agent's calls in script order, per turn: its first turn, then each user
    /// turn. Recorded scripts make every call once (no choices or open-ended repeats), so the
    /// order in which the simulator asks is this order.
    pub fn new(spec: &AgentSpec, rules: GuardrailRules) -> RecordedGuard {
        let scripts = std::iter::once(&spec.script).chain(spec.turns.iter().map(|t| &t.script));
        let turns = scripts
            .map(|script| {
                let mut calls = Vec::new();
                for step in script {
                    push_step(&mut calls, step);
                }
                calls
            })
            .collect();
        RecordedGuard {
            rules,
            turns,
            turn: None,
            next: 0,
            halt: None,
        }
    }

    fn call(&self, i: usize) -> Option<RecordedCall> {
        self.turns.get(self.turn?)?.get(i).copied()
    }

    fn decision(&mut self, signature: Signature, r: Option<Recorded>) -> Decision {
        let Some(r) = r else {
            return Decision::allow(signature, 0);
        };
        let d = Decision {
            action: r.action,
            code: r.code,
            count: r.count,
            signature,
            detail: 0,
        };
        if d.action.halts() && self.halt.is_none() {
            self.halt = Some(d.clone());
        }
        d
    }
}

fn push_step(calls: &mut Vec<RecordedCall>, step: &Step) {
    for _ in 0..step.times {
        if step.delegate.is_some() {
            calls.push(RecordedCall::default());
        }
        for c in &step.calls {
            calls.push(recorded_call(c));
        }
    }
    // A cycle's replies are taken in turn, one per model call.
    for k in 0..step.times as usize {
        if let Some(entry) = step.cycle.get(k % step.cycle.len().max(1)) {
            for c in &entry.calls {
                calls.push(recorded_call(c));
            }
        }
    }
}

impl GuardrailEngine for RecordedGuard {
    fn name(&self) -> &str {
        "recorded"
    }

    fn rules(&self) -> &GuardrailRules {
        &self.rules
    }

    fn reset_turn(&mut self) {
        // A turn cut short (by another stop) does not shift the next turn's decisions.
        self.turn = Some(self.turn.map_or(0, |t| t + 1));
        self.next = 0;
        self.halt = None;
    }

    fn before_call(&mut self, signature: Signature, _args: &Value) -> Decision {
        let r = self.call(self.next).and_then(|c| c.decision);
        self.next += 1;
        // Only a refusal happens before the call; warnings and halts come after it.
        let r = r.filter(|r| r.action == Action::Block);
        self.decision(signature, r)
    }

    fn after_call(&mut self, facts: &CallFacts<'_>, _failed: bool) -> (Decision, Observation) {
        let call = self
            .next
            .checked_sub(1)
            .and_then(|i| self.call(i))
            .unwrap_or_default();
        let r = call.decision.filter(|r| r.action != Action::Block);
        let signature = facts.signature.clone();
        // A stall-guard halt is the controller's halt, not the call's decision (as in Hermes).
        if let Some(h) = r.filter(|r| {
            matches!(
                r.code,
                DecisionCode::IdenticalCallStreakHalt | DecisionCode::IdenticalCycleHalt
            )
        }) {
            self.decision(signature.clone(), Some(h));
            return (
                Decision::allow(signature, 0),
                call.notice.unwrap_or_default(),
            );
        }
        (self.decision(signature, r), call.notice.unwrap_or_default())
    }

    fn halt_decision(&self) -> Option<&Decision> {
        self.halt.as_ref()
    }

    fn spawn_subagents(&mut self, count: u32) -> u32 {
        count
    }
}
