//! The seam the simulator calls. The built-in [`Controller`] implements it; another
//! implementation (the bridge to the real Python Hermes package in `loopsim-world`) can be
//! plugged in for differential runs.

use crate::guardrails::{
    CallFacts, Controller, Decision, GuardrailRules, Observation, SpawnReservation,
};
use crate::hash::Signature;
use crate::json::Value;

/// A tool-loop guardrail engine for one agent.
pub trait GuardrailEngine {
    /// A short name for reports (`builtin`, `hermes-python`, ...).
    fn name(&self) -> &str;
    /// Which behaviours the engine has (hashing, loop caps, stall guards...).
    fn rules(&self) -> &GuardrailRules;
    /// A new user turn: forget all per-turn state.
    fn reset_turn(&mut self);
    /// Decides before a call runs (the signature is computed once by the caller).
    fn before_call(&mut self, signature: Signature, args: &Value) -> Decision;
    /// Records an executed call (`after_call`, then the stall guards where the engine has them).
    fn after_call(&mut self, facts: &CallFacts<'_>, failed: bool) -> (Decision, Observation);
    /// The first halting decision of this turn.
    fn halt_decision(&self) -> Option<&Decision>;
    /// Admits up to `count` subagent spawns under the per-turn cap and charges them.
    fn spawn_subagents(&mut self, count: u32) -> u32;
    /// Why the engine stopped answering, if it did (an external engine can fail).
    fn failure(&self) -> Option<String> {
        None
    }
}

impl GuardrailEngine for Controller {
    fn name(&self) -> &str {
        "builtin"
    }

    fn rules(&self) -> &GuardrailRules {
        Controller::rules(self)
    }

    fn reset_turn(&mut self) {
        self.reset_for_turn();
    }

    fn before_call(&mut self, signature: Signature, args: &Value) -> Decision {
        self.before_call_signed(signature, args)
    }

    fn after_call(&mut self, facts: &CallFacts<'_>, failed: bool) -> (Decision, Observation) {
        let d = self.after_call_facts(facts, failed);
        let o = self.observe_call(facts, failed);
        (d, o)
    }

    fn halt_decision(&self) -> Option<&Decision> {
        Controller::halt_decision(self)
    }

    fn spawn_subagents(&mut self, count: u32) -> u32 {
        let r: SpawnReservation = self.reserve_subagents(count);
        let n = r.admitted;
        self.commit_subagents(r, n);
        n
    }
}
