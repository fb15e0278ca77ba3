//! An agent of a run, in parts: who it is and the engines that govern it ([`Agent`]), its
//! round in progress ([`Round`]), what it has done and spent ([`Tally`]), what goes wrong for it
//! ([`Trouble`]) and its place in delegation ([`Family`]).

use loopsim_engine::GuardrailEngine;
use loopsim_engine::call_limits::LimitCounter;
use loopsim_engine::config::EngineConfig;
use loopsim_engine::hash::Signature;
use loopsim_engine::observation::FailureStreaks;
use loopsim_engine::stuck::StuckDetector;
use loopsim_engine::turn::{ExitReason, TurnGovernor};

use super::{AgentId, AgentSeries, PendingCall, Status, Stop};
use crate::clock::Instant;
use crate::model::Usage;
use crate::scenario::AgentSpec;
use crate::script::{Reply, ScriptedAgent};

pub(super) struct Agent<'s> {
    pub(super) name: String,
    pub(super) spec: &'s AgentSpec,
    pub(super) cfg: EngineConfig,
    pub(super) guard: Box<dyn GuardrailEngine>,
    pub(super) gov: TurnGovernor,
    /// Its script, context and fake tools.
    pub(super) script: ScriptedAgent<'s>,
    pub(super) status: Status,
    /// Failures in a row per tool, for a runtime that hints at a change of strategy.
    pub(super) failure_streaks: FailureStreaks,
    /// The runtime's stuck detector over this agent's conversation (OpenHands).
    pub(super) stuck: Option<StuckDetector>,
    /// This run's usage against the opt-in call limits (`cfg.limits`).
    pub(super) limits: LimitCounter,
    pub(super) interrupted: bool,
    pub(super) round: Round<'s>,
    pub(super) tally: Tally<'s>,
    pub(super) trouble: Trouble,
    pub(super) family: Family,
}

/// The round in progress: the reply being worked through, its calls, and the call in flight.
pub(super) struct Round<'s> {
    pub(super) plan: Option<Reply<'s>>,
    pub(super) call_index: usize,
    pub(super) round_tools: Vec<&'s str>,
    /// The calls of this round that ran (identical ones after them are dropped).
    pub(super) round_calls: Vec<Signature>,
    /// Messages in the conversation since its last tool result (none yet: `None`).
    pub(super) since_tool: Option<u32>,
    pub(super) round_flagged: bool,
    /// The calls of this round a limit blocked (answered with an error, not run).
    pub(super) blocked: Vec<bool>,
    /// The last model call's input and output tokens, for limits checked on its response.
    pub(super) last_tokens: (u64, u64),
    pub(super) call_started: Instant,
    pub(super) pending: Option<PendingCall<'s>>,
}

/// What the agent has done and spent: calls, turns and how they ended, warnings and stops,
/// tokens and time.
pub(super) struct Tally<'s> {
    pub(super) calls: u64,
    pub(super) turns: u32,
    pub(super) exit_reasons: Vec<String>,
    /// How its last turn ended, as the engine said it (the run's exit reason for the parent).
    pub(super) last_turn_exit: Option<ExitReason>,
    pub(super) warnings: u32,
    pub(super) notices: u32,
    pub(super) first_warning: Option<(u64, u64)>,
    pub(super) stop: Option<Stop>,
    pub(super) summary_calls: u32,
    pub(super) usage: Usage,
    pub(super) window: Usage,
    pub(super) after_loop: Usage,
    pub(super) wait_us: u64,
    pub(super) last_activity: Instant,
    pub(super) series: Option<AgentSeries>,
    /// Tool calls the model made, per call spec (refused ones included): a few entries,
    /// found by the spec's own name pointer first ([`Agent::count_tool_call`]).
    pub(super) tool_calls: Vec<(&'s str, u64)>,
    /// Results the runtime replaced by a reference to an identical earlier one.
    pub(super) stubs: u64,
    pub(super) compressions: crate::model::Compressions,
}

/// What goes wrong for it: provider errors, a call that gave up, a tool the runtime lacks, a
/// child's crashes.
pub(super) struct Trouble {
    /// Its provider errors (made on its first request to a model with faults).
    pub(super) provider: Option<crate::faults::FaultStream>,
    /// The model call in flight gave up on this error: the turn fails when it is back.
    pub(super) failed_call: Option<loopsim_engine::retry::ProviderFault>,
    /// The reply of this call also called a tool that does not exist: the runtime's error
    /// result for it is traced when the agent next calls its model, where a live run sees it.
    pub(super) batch_error: Option<u64>,
    /// A child's crashes at the tops of its iterations (none where it never crashes).
    pub(super) crash: Option<crate::faults::CrashStream>,
}

/// Its place in delegation: how deep, whose child, the batch it waits on, results to come.
pub(super) struct Family {
    pub(super) depth: u32,
    pub(super) parent: Option<AgentId>,
    pub(super) waiting_batch: Option<usize>,
    pub(super) pending_results: Vec<usize>,
}

impl<'s> Agent<'s> {
    /// Counts a tool call. Calls of one spec share its name's pointer, so the scan rarely
    /// compares bytes; one tool may have several entries, merged in the summary.
    pub(super) fn count_tool_call(&mut self, tool: &'s str) {
        match self
            .tally
            .tool_calls
            .iter_mut()
            .find(|(t, _)| std::ptr::eq(*t, tool) || *t == tool)
        {
            Some((_, n)) => *n += 1,
            None => self.tally.tool_calls.push((tool, 1)),
        }
    }

    /// `n` messages that are not tool results joined the conversation.
    pub(super) fn messages_after_tools(&mut self, n: u32) {
        if let Some(k) = &mut self.round.since_tool {
            *k += n;
        }
    }

    /// Charges admitted subagents against the per-turn cap.
    pub(super) fn guard_spawn(&mut self, n: u32) -> u32 {
        if self.guard.rules().loop_caps {
            self.guard.spawn_subagents(n)
        } else {
            n
        }
    }
}
