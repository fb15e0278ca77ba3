//! Tool-loop guardrails: a pure per-turn controller that records tool-call observations and
//! returns decisions (allow, warn, block, halt). The runtime decides what a decision does.
//!
//! The controller mirrors Hermes's `ToolCallGuardrailController` decision for decision: codes,
//! actions, counts and hashes match; the wording of messages is loopsim's own.

pub mod classify;
pub mod config;
mod stall;
pub mod tools;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::fmt;

use crate::hash::{self, Hash, ResultHashCache, ResultHashing, Signature};
use crate::json::Value;
use crate::tool_name::ToolName;

pub use classify::classify_failure;
pub use config::{ATTENDED_PLATFORMS, GuardrailConfig, LoopCaps, is_unattended};
pub use stall::{NoticeKind, Observation};
pub use tools::ToolSets;

/// What the runtime should do with a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Action {
    Allow,
    Warn,
    Block,
    Halt,
}

impl Action {
    pub fn parse(s: &str) -> Option<Action> {
        [Action::Allow, Action::Warn, Action::Block, Action::Halt]
            .into_iter()
            .find(|a| a.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Action::Allow => "allow",
            Action::Warn => "warn",
            Action::Block => "block",
            Action::Halt => "halt",
        }
    }

    /// Allow and warn let the call run.
    pub fn allows_execution(self) -> bool {
        matches!(self, Action::Allow | Action::Warn)
    }

    /// Block and halt end the turn after the batch.
    pub fn halts(self) -> bool {
        matches!(self, Action::Block | Action::Halt)
    }
}

/// Hermes's decision codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DecisionCode {
    Allow,
    RepeatedExactFailureWarning,
    SameToolFailureWarning,
    IdempotentNoProgressWarning,
    RepeatedExactFailureBlock,
    IdempotentNoProgressBlock,
    SameToolFailureHalt,
    IdenticalCallStreakHalt,
    IdenticalCycleHalt,
    LoopWebSearchCap,
    LoopSubagentCap,
}

impl DecisionCode {
    pub const ALL: [DecisionCode; 11] = [
        DecisionCode::Allow,
        DecisionCode::RepeatedExactFailureWarning,
        DecisionCode::SameToolFailureWarning,
        DecisionCode::IdempotentNoProgressWarning,
        DecisionCode::RepeatedExactFailureBlock,
        DecisionCode::IdempotentNoProgressBlock,
        DecisionCode::SameToolFailureHalt,
        DecisionCode::IdenticalCallStreakHalt,
        DecisionCode::IdenticalCycleHalt,
        DecisionCode::LoopWebSearchCap,
        DecisionCode::LoopSubagentCap,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            DecisionCode::Allow => "allow",
            DecisionCode::RepeatedExactFailureWarning => "repeated_exact_failure_warning",
            DecisionCode::SameToolFailureWarning => "same_tool_failure_warning",
            DecisionCode::IdempotentNoProgressWarning => "idempotent_no_progress_warning",
            DecisionCode::RepeatedExactFailureBlock => "repeated_exact_failure_block",
            DecisionCode::IdempotentNoProgressBlock => "idempotent_no_progress_block",
            DecisionCode::SameToolFailureHalt => "same_tool_failure_halt",
            DecisionCode::IdenticalCallStreakHalt => "identical_call_streak_halt",
            DecisionCode::IdenticalCycleHalt => "identical_cycle_halt",
            DecisionCode::LoopWebSearchCap => "loop_web_search_cap",
            DecisionCode::LoopSubagentCap => "loop_subagent_cap",
        }
    }

    pub fn parse(s: &str) -> Option<DecisionCode> {
        Self::ALL.into_iter().find(|c| c.as_str() == s)
    }

    /// Whether the code stops a call or the turn (block, halt, loop cap) rather than warning.
    pub fn is_stop(self) -> bool {
        !matches!(
            self,
            DecisionCode::Allow
                | DecisionCode::RepeatedExactFailureWarning
                | DecisionCode::SameToolFailureWarning
                | DecisionCode::IdempotentNoProgressWarning
        )
    }
}

impl fmt::Display for DecisionCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One guardrail decision. `detail` carries the cycle period or the loop cap for messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub action: Action,
    pub code: DecisionCode,
    pub count: u32,
    pub signature: Signature,
    pub detail: u32,
}

impl Decision {
    pub fn allow(signature: Signature, count: u32) -> Decision {
        Decision {
            action: Action::Allow,
            code: DecisionCode::Allow,
            count,
            signature,
            detail: 0,
        }
    }

    pub fn tool(&self) -> &str {
        &self.signature.tool
    }

    /// loopsim's own wording of what the decision tells the model.
    pub fn message(&self) -> String {
        let (t, n, d) = (self.tool(), self.count, self.detail);
        match self.code {
            DecisionCode::Allow => String::new(),
            DecisionCode::RepeatedExactFailureWarning => format!(
                "{t} has now failed {n} times with the very same arguments; you appear to be \
                 looping. Read the error and try a different approach."
            ),
            DecisionCode::SameToolFailureWarning => {
                let tip = if t == "terminal" {
                    "check where you are with a tiny command first, then prefer absolute paths \
                     or a simpler command"
                } else {
                    "vary the arguments or use another tool, and if something outside is \
                     blocking you, report it after one check"
                };
                format!(
                    "{t} failed {n} times in this turn. Keep working with tools, but diagnose before the next attempt: {tip}."
                )
            }
            DecisionCode::IdempotentNoProgressWarning => format!(
                "{t} gave an unchanged result {n} times. Work with what it already returned or ask something different."
            ),
            DecisionCode::RepeatedExactFailureBlock => format!(
                "Refused {t}: this exact call already failed {n} times. Change strategy or explain what blocks you."
            ),
            DecisionCode::IdempotentNoProgressBlock => format!(
                "Refused {t}: this read-only call returned the same result {n} times. Use the earlier result."
            ),
            DecisionCode::SameToolFailureHalt => {
                format!("{t} is stopped for this turn after {n} failures. Pick another approach.")
            }
            DecisionCode::IdenticalCallStreakHalt => format!(
                "{t} is stopped: {n} consecutive calls had identical arguments and identical results."
            ),
            DecisionCode::IdenticalCycleHalt => format!(
                "Stopped at {t}: a repeating cycle of {d} calls with identical arguments and results ran {n} times."
            ),
            DecisionCode::LoopWebSearchCap => format!(
                "Refused web_search: the per-turn limit of {d} searches is reached. Answer with what you found."
            ),
            DecisionCode::LoopSubagentCap => format!(
                "Refused delegate_task: {n} subagents already started this turn (limit {d}). Finish with the results at hand."
            ),
        }
    }
}

/// Which behaviours of the controller are present: the difference between Hermes versions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GuardrailRules {
    pub tool_sets: ToolSets,
    /// Unattended platforms force hard stops on.
    pub platform_rule: bool,
    /// Per-turn web_search and subagent caps.
    pub loop_caps: bool,
    /// A successful mutating call resets failure streaks.
    pub progress_reset: bool,
    /// Failure-tolerant tools never get a same-tool halt.
    pub failure_tolerant: bool,
    /// A harness refusal is not a failure.
    pub refusal_not_failure: bool,
    pub result_hashing: ResultHashing,
    /// Identical-call streaks, cycles and reference stubs (`observe_call`).
    pub stall_guards: bool,
    /// The runtime also turns a recorded `identical_cycle_halt` into a turn halt.
    pub cycle_halt_ends_turn: bool,
}

impl GuardrailRules {
    pub const V0_19: GuardrailRules = GuardrailRules {
        tool_sets: ToolSets::V0_19,
        platform_rule: false,
        loop_caps: false,
        progress_reset: false,
        failure_tolerant: false,
        refusal_not_failure: false,
        result_hashing: ResultHashing::Plain,
        stall_guards: false,
        cycle_halt_ends_turn: false,
    };
    pub const NEWEST: GuardrailRules = GuardrailRules {
        tool_sets: ToolSets::Newest,
        platform_rule: true,
        loop_caps: true,
        progress_reset: true,
        failure_tolerant: true,
        refusal_not_failure: true,
        result_hashing: ResultHashing::StripExecuteCodeVolatile,
        stall_guards: true,
        cycle_halt_ends_turn: true,
    };
}

/// What the controller needs to know about one executed call, hashed once.
///
/// Computing the signature and result hash is most of the cost of a decision; a simulator that
/// sees the same call many times can build these once and reuse them.
#[derive(Clone, Debug)]
pub struct CallFacts<'a> {
    pub signature: Signature,
    pub result: Option<&'a [u8]>,
    /// The arguments, for engines that need them again (an external engine).
    pub args: Option<&'a Value>,
    result_hash: std::cell::OnceCell<Hash>,
    hashing: ResultHashing,
}

impl<'a> CallFacts<'a> {
    pub fn new(
        tool: &str,
        args: &'a Value,
        result: Option<&'a [u8]>,
        rules: &GuardrailRules,
    ) -> Self {
        Self::with_signature(Signature::new(tool, args), result, rules).with_args(args)
    }

    /// Keeps the arguments (an external engine sends them again).
    pub fn with_args(mut self, args: &'a Value) -> Self {
        self.args = Some(args);
        self
    }

    pub fn with_signature(
        signature: Signature,
        result: Option<&'a [u8]>,
        rules: &GuardrailRules,
    ) -> Self {
        CallFacts {
            signature,
            result,
            args: None,
            result_hash: std::cell::OnceCell::new(),
            hashing: rules.result_hashing,
        }
    }

    /// Supplies a result hash computed elsewhere (a cache).
    pub fn with_result_hash(self, h: Hash) -> Self {
        let _ = self.result_hash.set(h);
        self
    }

    /// The result hash if it was supplied or has been computed.
    pub fn known_result_hash(&self) -> Option<Hash> {
        self.result_hash.get().copied()
    }

    pub fn result_hash(&self) -> Hash {
        *self
            .result_hash
            .get_or_init(|| hash::result_hash(self.result, &self.signature.tool, self.hashing))
    }
}

/// The per-turn controller.
#[derive(Clone, Debug)]
pub struct Controller {
    config: GuardrailConfig,
    rules: GuardrailRules,
    exact_failures: HashMap<Signature, u32>,
    same_tool_failures: HashMap<ToolName, u32>,
    progress_since_failure: HashSet<Signature>,
    no_progress: HashMap<Signature, (Hash, u32)>,
    halt: Option<Decision>,
    stall: stall::StallState,
    web_searches: u32,
    subagents: u32,
    subagents_reserved: u32,
    hashes: ResultHashCache,
}

impl Controller {
    /// A controller for one agent; `config` is used as given (apply the platform rule first).
    pub fn new(config: GuardrailConfig, rules: GuardrailRules) -> Self {
        Controller {
            config,
            rules,
            exact_failures: HashMap::default(),
            same_tool_failures: HashMap::default(),
            progress_since_failure: HashSet::default(),
            no_progress: HashMap::default(),
            halt: None,
            stall: stall::StallState::default(),
            web_searches: 0,
            subagents: 0,
            subagents_reserved: 0,
            hashes: ResultHashCache::default(),
        }
    }

    /// The facts' result hash, from the facts, the cache, or computed (and remembered).
    fn result_hash(&mut self, facts: &CallFacts<'_>) -> Hash {
        if let Some(h) = facts.result_hash.get() {
            return *h;
        }
        let h = self
            .hashes
            .get(facts.result, &facts.signature.tool, facts.hashing);
        let _ = facts.result_hash.set(h);
        h
    }

    pub fn config(&self) -> &GuardrailConfig {
        &self.config
    }

    pub fn rules(&self) -> &GuardrailRules {
        &self.rules
    }

    /// Forgets everything: a new user turn.
    pub fn reset_for_turn(&mut self) {
        self.exact_failures.clear();
        self.same_tool_failures.clear();
        self.progress_since_failure.clear();
        self.no_progress.clear();
        self.halt = None;
        self.stall.reset();
        self.web_searches = 0;
        self.subagents = 0;
        self.subagents_reserved = 0;
    }

    /// The first halting decision recorded this turn.
    pub fn halt_decision(&self) -> Option<&Decision> {
        self.halt.as_ref()
    }

    fn decide(
        &mut self,
        action: Action,
        code: DecisionCode,
        count: u32,
        signature: Signature,
        detail: u32,
    ) -> Decision {
        let d = Decision {
            action,
            code,
            count,
            signature,
            detail,
        };
        if action.halts() {
            // Hermes records every block as the halt (the runtime keeps the first it sees).
            self.halt = Some(d.clone());
        }
        d
    }

    fn is_idempotent(&self, tool: &str) -> bool {
        self.rules.tool_sets.is_idempotent(tool)
    }

    /// Decides before a call runs.
    pub fn before_call(&mut self, tool: &str, args: &Value) -> Decision {
        self.before_call_signed(Signature::new(tool, args), args)
    }

    /// `before_call` with a precomputed signature (the args are still needed for loop caps).
    pub fn before_call_signed(&mut self, signature: Signature, args: &Value) -> Decision {
        self.before_call_with(signature, || subagent_spawn_count(args))
    }

    /// `before_call` with a precomputed signature; `spawns` tells how many subagents the call
    /// would start ([`subagent_spawn_count`] of its arguments), and is asked only of a
    /// `delegate_task` call under loop caps.
    pub fn before_call_with(
        &mut self,
        signature: Signature,
        spawns: impl FnOnce() -> u32,
    ) -> Decision {
        if self.rules.loop_caps
            && let Some(block) = self.check_loop_cap(&signature, spawns)
        {
            return block;
        }
        if !self.config.hard_stop_enabled {
            return Decision::allow(signature, 0);
        }
        let exact = if self.rules.progress_reset && self.progress_since_failure.contains(&signature)
        {
            0
        } else {
            self.exact_failures.get(&signature).copied().unwrap_or(0)
        };
        if exact >= self.config.exact_failure_block_after {
            return self.decide(
                Action::Block,
                DecisionCode::RepeatedExactFailureBlock,
                exact,
                signature,
                0,
            );
        }
        if self.is_idempotent(&signature.tool)
            && let Some(&(_, repeats)) = self.no_progress.get(&signature)
            && repeats >= self.config.no_progress_block_after
        {
            return self.decide(
                Action::Block,
                DecisionCode::IdempotentNoProgressBlock,
                repeats,
                signature,
                0,
            );
        }
        Decision::allow(signature, 0)
    }

    fn check_loop_cap(
        &mut self,
        signature: &Signature,
        spawns: impl FnOnce() -> u32,
    ) -> Option<Decision> {
        match &*signature.tool {
            "web_search" => {
                let cap = self.config.loop_caps.max_web_searches;
                if cap != 0 && self.web_searches >= cap {
                    let n = self.web_searches;
                    return Some(self.decide(
                        Action::Block,
                        DecisionCode::LoopWebSearchCap,
                        n,
                        signature.clone(),
                        cap,
                    ));
                }
                self.web_searches += 1;
                None
            }
            "delegate_task" => {
                if spawns() == 0 {
                    return None;
                }
                let cap = self.config.loop_caps.max_subagents;
                let n = self.subagents + self.subagents_reserved;
                if cap != 0 && n >= cap {
                    return Some(self.decide(
                        Action::Block,
                        DecisionCode::LoopSubagentCap,
                        n,
                        signature.clone(),
                        cap,
                    ));
                }
                None
            }
            _ => None,
        }
    }

    /// Reserves up to `count` subagent spawns under the per-turn cap; returns how many were
    /// admitted. Commit or roll back with the returned [`SpawnReservation`].
    pub fn reserve_subagents(&mut self, count: u32) -> SpawnReservation {
        let cap = self.config.loop_caps.max_subagents;
        let admitted = if self.rules.loop_caps && cap != 0 {
            count.min(cap.saturating_sub(self.subagents + self.subagents_reserved))
        } else {
            count
        };
        self.subagents_reserved += admitted;
        SpawnReservation { admitted }
    }

    /// Charges `actual` (at most the admitted number) and releases the rest of a reservation.
    pub fn commit_subagents(&mut self, r: SpawnReservation, actual: u32) {
        let actual = actual.min(r.admitted);
        self.subagents_reserved -= r.admitted;
        self.subagents += actual;
    }

    /// Releases a reservation without charging it.
    pub fn rollback_subagents(&mut self, r: SpawnReservation) {
        self.subagents_reserved -= r.admitted;
    }

    /// Decides after a call ran. `failed: None` asks the fallback classifier.
    pub fn after_call(
        &mut self,
        tool: &str,
        args: &Value,
        result: Option<&[u8]>,
        failed: Option<bool>,
    ) -> Decision {
        let facts = CallFacts::new(tool, args, result, &self.rules);
        let failed = failed.unwrap_or_else(|| self.classify(tool, result));
        self.after_call_facts(&facts, failed)
    }

    /// The fallback classifier with this controller's rules.
    pub fn classify(&self, tool: &str, result: Option<&[u8]>) -> bool {
        classify_failure(tool, result, self.rules.refusal_not_failure)
    }

    /// `after_call` on precomputed facts, with the failure already decided.
    pub fn after_call_facts(&mut self, facts: &CallFacts<'_>, failed: bool) -> Decision {
        let signature = facts.signature.clone();
        let tool: &str = &facts.signature.tool;
        let warnings = self.config.warnings_enabled;
        if failed {
            if self.rules.progress_reset && self.progress_since_failure.remove(&signature) {
                self.exact_failures.remove(&signature);
            }
            let exact = {
                let e = self.exact_failures.entry(signature.clone()).or_insert(0);
                *e += 1;
                *e
            };
            let same = {
                let s = self
                    .same_tool_failures
                    .entry(facts.signature.tool.clone())
                    .or_insert(0);
                *s += 1;
                *s
            };
            self.no_progress.remove(&signature);
            let tolerant = self.rules.failure_tolerant && tools::is_failure_tolerant(tool);
            if self.config.hard_stop_enabled
                && !tolerant
                && same >= self.config.same_tool_failure_halt_after
            {
                return self.decide(
                    Action::Halt,
                    DecisionCode::SameToolFailureHalt,
                    same,
                    signature,
                    0,
                );
            }
            if warnings && exact >= self.config.exact_failure_warn_after {
                return self.decide(
                    Action::Warn,
                    DecisionCode::RepeatedExactFailureWarning,
                    exact,
                    signature,
                    0,
                );
            }
            if warnings && same >= self.config.same_tool_failure_warn_after {
                return self.decide(
                    Action::Warn,
                    DecisionCode::SameToolFailureWarning,
                    same,
                    signature,
                    0,
                );
            }
            return Decision::allow(signature, exact);
        }

        self.exact_failures.remove(&signature);
        self.same_tool_failures.remove(tool);
        if self.rules.progress_reset
            && (tools::is_progress_reset(tool)
                || classify::file_mutation_landed(tool, facts.result))
        {
            self.progress_since_failure
                .extend(self.exact_failures.keys().cloned());
            self.same_tool_failures.clear();
        }
        if !self.is_idempotent(tool) {
            self.no_progress.remove(&signature);
            return Decision::allow(signature, 0);
        }
        let h = self.result_hash(facts);
        let repeats = match self.no_progress.get(&signature) {
            Some(&(prev, n)) if prev == h => n + 1,
            _ => 1,
        };
        self.no_progress.insert(signature.clone(), (h, repeats));
        if warnings && repeats >= self.config.no_progress_warn_after {
            return self.decide(
                Action::Warn,
                DecisionCode::IdempotentNoProgressWarning,
                repeats,
                signature,
                0,
            );
        }
        Decision::allow(signature, repeats)
    }

    /// The stall guards (`observe_call`): identical-call streaks, cycles and reference stubs.
    /// Runs after `after_call` on the raw result; it never blocks, but may record a halt.
    /// Profiles without stall guards observe nothing.
    pub fn observe_call(&mut self, facts: &CallFacts<'_>, failed: bool) -> Observation {
        if !self.rules.stall_guards {
            return Observation::default();
        }
        let hard = self.config.hard_stop_enabled;
        let block_after = self.config.no_progress_block_after;
        let h = facts.result.map(|_| self.result_hash(facts));
        let obs = self.stall.observe(facts, h, failed);
        if hard && self.halt.is_none() {
            if obs.kind == Some(NoticeKind::IdenticalCallStreak) && obs.streak >= block_after {
                self.decide(
                    Action::Halt,
                    DecisionCode::IdenticalCallStreakHalt,
                    obs.streak,
                    facts.signature.clone(),
                    0,
                );
            } else if obs.kind == Some(NoticeKind::IdenticalCycle) && obs.laps >= block_after {
                self.decide(
                    Action::Halt,
                    DecisionCode::IdenticalCycleHalt,
                    obs.laps,
                    facts.signature.clone(),
                    obs.period,
                );
            }
        }
        obs
    }
}

/// Subagents one delegate_task call would start: control actions 0, a task list its length, else 1.
pub fn subagent_spawn_count(args: &Value) -> u32 {
    if let Some(Value::Str(a)) = args.get("action") {
        let a = crate::json::py_strip(a).to_ascii_lowercase();
        if matches!(a.as_slice(), b"list" | b"steer" | b"stop") {
            return 0;
        }
    }
    match args.get("tasks") {
        Some(Value::Array(t)) if !t.is_empty() => t.len() as u32,
        _ => 1,
    }
}

/// An admitted number of subagent spawns, charged only on commit.
#[derive(Debug, PartialEq, Eq)]
#[must_use = "commit or roll back a reservation"]
pub struct SpawnReservation {
    pub admitted: u32,
}

#[cfg(test)]
mod tests;
