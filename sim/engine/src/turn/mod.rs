//! The per-turn loop governor: counts model calls, draws on the iteration budget, applies the
//! refund rules, decides when the loop ends and with which exit reason, and whether an
//! out-of-budget summary call follows.
//!
//! It keeps two counters, as Hermes does: `api_call_count` (every model call this turn) and
//! the budget's `used` (what refunds give back). The loop runs while
//! `api_call_count < max_iterations && budget.remaining() > 0`.

use std::sync::Arc;

use crate::budget::IterationBudget;
use crate::limits::LimitStop;
use crate::profile::GraphLayout;

pub mod batch;
pub mod compression;
mod exit;
pub use exit::{ExitReason, FailureMapping, FinishReason, LimitError};

/// What happens when the budget runs out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GraceMode {
    /// Nothing: the turn ends without a final answer.
    None,
    /// After the loop, one tools-free summary call that uses no budget (at most two attempts).
    SummaryCall,
    /// One extra in-loop model call without tools that uses no budget; its text is final.
    ExtraToolsFreeCall,
}

/// Where the turn loop differs between versions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TurnRules {
    pub grace: GraceMode,
    /// An execute_code-only round also gives back its model call (the article's reading).
    pub refund_extends_call_cap: bool,
    /// Identical calls in one reply run once ([`batch::kept_calls`]; Hermes does, the
    /// article's loop does not).
    pub dedupe_identical_calls: bool,
    /// A turn that dies of its context says so (`context_compression_exhausted`); 0.19.0
    /// returns before it names a reason (`unknown`).
    pub names_context_exhaustion: bool,
    /// An execute_code-only round gives back its iteration (Hermes); other runtimes count
    /// every model call alike.
    pub refund_execute_code: bool,
    /// What the loop does when its call cap is reached without a final answer.
    pub at_cap: AtCap,
    /// What an empty reply (no text, no tool calls) does.
    pub on_empty_reply: OnEmptyReply,
    /// The run's total-token budget (input and output of its model calls), checked before
    /// each call: spent, the turn ends `token_budget_exhausted` (the article's loop).
    pub token_budget: Option<u64>,
    /// LangGraph's steps under `recursion_limit`, counted node by node: the cap in calls
    /// is then a bound, and the steps decide.
    pub graph: Option<GraphLayout>,
    /// smolagents' `planning_interval`: a tools-free planning call before steps 1, 1 + N,
    /// 1 + 2N, ... that is not a step itself.
    pub planning_interval: Option<u64>,
}

/// How a runtime takes an empty reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnEmptyReply {
    /// Hermes's recovery: a nudge after a tool round, then up to [`EMPTY_REPLY_RETRIES`]
    /// retries ([`TurnGovernor::empty_reply`]).
    Recover,
    /// The empty text is the final answer (OpenAI Agents SDK with a plain-text output).
    FinalAnswer,
    /// Up to `retries` retry requests in a run, then the runtime raises `error` (Pydantic
    /// AI's output retries).
    RetryThenRaise { retries: u32, error: LimitError },
    /// The step fails (the runtime finds no tool call to parse) and the loop goes on: the
    /// failed step counts like any other (smolagents).
    ErrorStep,
}

/// How a loop that reached its cap ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtCap {
    /// Hermes: `max_iterations_reached(N/M)`, then the [`GraceMode`]'s call.
    MaxIterationsReached,
    /// The runtime raises: the run ends with no final answer and no further call.
    Raise(LimitError),
    /// The runtime raises right after the cap's last call, before acting on its reply (its
    /// tool calls do not run, its text is no answer): LangGraph with an odd recursion limit.
    RaiseDroppingLastReply(LimitError),
    /// One tools-free call whose text is the run's final answer, outside the cap
    /// (smolagents' `max_steps_error`).
    FinalAnswerCall,
    /// The conversation's status becomes ERROR with no further call (OpenHands'
    /// `MaxIterationsReached`).
    ConversationError,
    /// The runtime's error handler answers for the exception: the run ends with its final
    /// output and no further call (the OpenAI Agents SDK's `error_handlers["max_turns"]`).
    HandledFinalOutput,
}

impl TurnRules {
    /// Hermes's turn loop as 0.19.0 has it: a summary call at the cap, identical calls of a
    /// reply run once, execute_code-only rounds refunded.
    pub const HERMES: TurnRules = TurnRules {
        grace: GraceMode::SummaryCall,
        refund_extends_call_cap: false,
        dedupe_identical_calls: true,
        names_context_exhaustion: false,
        refund_execute_code: true,
        at_cap: AtCap::MaxIterationsReached,
        on_empty_reply: OnEmptyReply::Recover,
        token_budget: None,
        graph: None,
        planning_interval: None,
    };
}

/// What the runtime should do next in the loop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Make a model call; `tools` is false for the grace call.
    Call { tools: bool },
    /// The loop is over; call [`TurnGovernor::finish`].
    Exit,
}

/// Which restart refunds both counters and continues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Restart {
    PreCallCompression,
    Redirect,
    CompressionAfterOverflow,
    RebuiltMessages,
}

/// How the turn ended, and whether the runtime owes a summary call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TurnEnd {
    pub exit_reason: ExitReason,
    /// Make the out-of-budget summary call (no budget, no tools, at most two attempts).
    pub summary_call: bool,
    pub api_calls: u64,
    pub budget_used: u64,
}

/// One user turn's loop state.
#[derive(Debug)]
pub struct TurnGovernor {
    rules: TurnRules,
    max_iterations: u64,
    budget: Arc<IterationBudget>,
    /// Children with a shared or reserved budget may not take the owner's last iterations.
    reserve: u64,
    api_call_count: u64,
    exit: ExitReason,
    grace_state: GraceState,
    interrupted: bool,
    failed: bool,
    final_answer: bool,
    /// Empty replies retried this turn (a text reply starts over).
    empty_retries: u32,
    /// The empty-reply nudge was used since the last tool round.
    nudged_this_round: bool,
    /// The last reply was empty: an exhausted budget then ends the turn without a summary.
    last_reply_empty: bool,
    /// Input and output tokens of this turn's model calls ([`TurnRules::token_budget`]).
    tokens_used: u64,
    /// Graph steps run this turn ([`TurnRules::graph`]).
    steps: u64,
    /// The round's tool calls run as a step of their own (not all of them blocked).
    tools_step: bool,
    ledger: Ledger,
}

/// Every change this turn made to its two counters, kept apart from the counters themselves
/// so a simulator can check that they agree (a refund with nothing to give back, or a count
/// changed outside these rules, shows as a mismatch).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ledger {
    /// Model calls counted into `api_call_count`.
    pub calls_begun: u64,
    /// Calls given back to `api_call_count` (refunds that extend the call cap, restarts).
    pub calls_returned: u64,
    /// Iterations this turn took from its budget.
    pub taken: u64,
    /// Refunds this turn asked of its budget.
    pub returned: u64,
}

/// Empty replies Hermes retries in a turn before it gives up (`agent/conversation_loop.py`,
/// the empty-response recovery in the main loop).
pub const EMPTY_REPLY_RETRIES: u32 = 3;

/// What the runtime does after an empty reply (no text, no tool calls).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EmptyReply {
    /// A tool result is among the last messages: Hermes appends a placeholder reply and a
    /// request to continue, once per tool round, without using a retry.
    Nudge,
    /// The same request again, counted as an iteration like any other.
    Retry,
    /// The retries are used up: the turn ends `empty_response_exhausted`.
    Exhausted,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum GraceState {
    Unused,
    Pending,
    Used,
}

impl TurnGovernor {
    /// A turn with a fresh budget of `max_iterations`.
    pub fn new(rules: TurnRules, max_iterations: u64) -> Self {
        Self::with_budget(
            rules,
            max_iterations,
            Arc::new(IterationBudget::new(max_iterations)),
            0,
        )
    }

    /// A turn drawing on an existing (possibly shared) budget, keeping `reserve` for its owner.
    pub fn with_budget(
        rules: TurnRules,
        max_iterations: u64,
        budget: Arc<IterationBudget>,
        reserve: u64,
    ) -> Self {
        TurnGovernor {
            rules,
            max_iterations,
            budget,
            reserve,
            api_call_count: 0,
            exit: ExitReason::Unknown,
            grace_state: GraceState::Unused,
            interrupted: false,
            failed: false,
            final_answer: false,
            empty_retries: 0,
            nudged_this_round: false,
            last_reply_empty: false,
            tokens_used: 0,
            steps: 0,
            tools_step: true,
            ledger: Ledger::default(),
        }
    }

    /// What this turn took and gave back ([`Ledger`]).
    pub fn ledger(&self) -> Ledger {
        self.ledger
    }

    fn return_call(&mut self) {
        self.ledger.calls_returned += 1;
        self.api_call_count = self.api_call_count.saturating_sub(1);
    }

    fn refund(&mut self) {
        self.ledger.returned += 1;
        self.budget.refund();
    }

    /// Whether the cap is reached: the loop makes no further call, whatever else says.
    pub fn at_cap(&self) -> bool {
        !self.within_limits()
    }

    /// The runtime's stuck detector stopped the run before its next call (OpenHands).
    pub fn stuck(&mut self) {
        self.exit = ExitReason::ConversationStuck;
    }

    /// A model call of this turn used `tokens` (input and output).
    pub fn note_tokens(&mut self, tokens: u64) {
        self.tokens_used = self.tokens_used.saturating_add(tokens);
    }

    pub fn api_call_count(&self) -> u64 {
        self.api_call_count
    }

    pub fn budget(&self) -> &Arc<IterationBudget> {
        &self.budget
    }

    pub fn max_iterations(&self) -> u64 {
        self.max_iterations
    }

    pub fn exit_reason(&self) -> &ExitReason {
        &self.exit
    }

    fn within_limits(&self) -> bool {
        let calls =
            self.api_call_count < self.max_iterations && self.budget.remaining() > self.reserve;
        // The next model call's step, after the middleware's hooks before it.
        calls
            && self
                .rules
                .graph
                .is_none_or(|g| self.steps + g.before_model < g.limit)
    }

    /// Starts the next iteration: the loop test, the interrupt check, then the counters.
    pub fn begin_iteration(&mut self, interrupt_requested: bool) -> Step {
        self.begin_iteration_unless(interrupt_requested, None)
    }

    /// [`TurnGovernor::begin_iteration`], with a limit checked before the model call
    /// (`ModelCallLimitMiddleware`'s): it acts after the cap, before the user's stop.
    pub fn begin_iteration_unless(
        &mut self,
        interrupt_requested: bool,
        limit: Option<LimitStop>,
    ) -> Step {
        if self.exit != ExitReason::Unknown {
            return Step::Exit;
        }
        let grace = if self.within_limits() {
            false
        } else if self.rules.grace == GraceMode::ExtraToolsFreeCall
            && self.grace_state == GraceState::Unused
        {
            self.grace_state = GraceState::Pending;
            true
        } else {
            return Step::Exit;
        };
        if let Some(stop) = limit {
            self.limit_stop(stop);
            return Step::Exit;
        }
        if interrupt_requested {
            self.exit = ExitReason::InterruptedByUser;
            self.interrupted = true;
            return Step::Exit;
        }
        if self
            .rules
            .token_budget
            .is_some_and(|b| self.tokens_used >= b)
        {
            self.exit = ExitReason::TokenBudgetExhausted;
            return Step::Exit;
        }
        self.api_call_count += 1;
        self.ledger.calls_begun += 1;
        if grace {
            self.grace_state = GraceState::Used;
            return Step::Call { tools: false };
        }
        if let Some(g) = self.rules.graph {
            self.steps += g.before_model + 1;
        }
        if !self.budget.consume_keeping(self.reserve) {
            self.exit = ExitReason::BudgetExhausted;
            return Step::Exit;
        }
        self.ledger.taken += 1;
        Step::Call { tools: true }
    }

    /// Whether the step just begun opens with a planning call ([`TurnRules::planning_interval`]).
    pub fn planning_due(&self) -> bool {
        let k = self.api_call_count;
        self.rules
            .planning_interval
            .is_some_and(|n| k == 1 || (k >= 1 && (k - 1) % n == 0))
    }

    /// Whether the runtime ends the run on the reply of the call just made, before acting on
    /// it ([`AtCap::RaiseDroppingLastReply`]): then the turn is over with the limit's exception.
    pub fn drops_reply(&mut self) -> bool {
        if let Some(g) = self.rules.graph {
            // The reply's hooks and its tools (or the end) must come before the last step.
            if self.steps + g.after_model < g.limit {
                return false;
            }
            self.exit = ExitReason::Raised(crate::turn::LimitError::GraphRecursionError);
            self.failed = true;
            return true;
        }
        let AtCap::RaiseDroppingLastReply(e) = self.rules.at_cap else {
            return false;
        };
        if self.api_call_count < self.max_iterations {
            return false;
        }
        self.exit = ExitReason::Raised(e);
        self.failed = true;
        true
    }

    /// Whether the run ends on the reply just received, before acting on it: `stop`, a
    /// limit checked on the reply (a token or tool-call limit), or the cap's own rule
    /// ([`TurnGovernor::drops_reply`]). Under LangGraph a limit's hook is the first step
    /// after the model's, so it acts only if the recursion limit lets that step run (and, to
    /// end the run, the step after it).
    pub fn reply_stops(&mut self, stop: Option<LimitStop>) -> bool {
        let Some(stop) = stop else {
            return self.drops_reply();
        };
        if let Some(g) = self.rules.graph {
            let hook = self.steps + 1;
            let acts = match stop {
                LimitStop::Raise(_) => hook <= g.limit,
                LimitStop::End(_) => hook < g.limit,
            };
            if !acts {
                return self.drops_reply();
            }
        }
        self.limit_stop(stop);
        true
    }

    /// A limit ended the run: the runtime raised, or its middleware ended it.
    pub fn limit_stop(&mut self, stop: LimitStop) {
        self.exit = stop.exit_reason();
        match stop {
            LimitStop::Raise(_) => self.failed = true,
            LimitStop::End(_) => self.final_answer = true,
        }
    }

    /// Every call of the round was blocked by a limit that lets the loop go on: no tools
    /// step runs, the graph goes back to the model.
    pub fn all_calls_blocked(&mut self) {
        self.tools_step = false;
    }

    /// The model answered with text: the turn is over.
    pub fn text_reply(&mut self, finish: FinishReason) {
        self.exit = ExitReason::TextResponse(finish);
        self.final_answer = true;
        self.empty_retries = 0;
        self.last_reply_empty = false;
    }

    /// The model's reply was empty. Each empty reply already counted as an iteration (Hermes
    /// refunds nothing); `tool_result_recent`: a tool result is among the last five messages
    /// of the conversation.
    pub fn empty_reply(&mut self, tool_result_recent: bool) -> EmptyReply {
        self.last_reply_empty = true;
        if self.rules.on_empty_reply == OnEmptyReply::ErrorStep {
            return EmptyReply::Retry;
        }
        if let OnEmptyReply::RetryThenRaise { retries, error } = self.rules.on_empty_reply {
            if self.empty_retries < retries {
                self.empty_retries += 1;
                return EmptyReply::Retry;
            }
            self.exit = ExitReason::Raised(error);
            self.failed = true;
            return EmptyReply::Exhausted;
        }
        if tool_result_recent && !self.nudged_this_round {
            self.nudged_this_round = true;
            return EmptyReply::Nudge;
        }
        if self.empty_retries < EMPTY_REPLY_RETRIES {
            self.empty_retries += 1;
            return EmptyReply::Retry;
        }
        self.exit = ExitReason::EmptyResponseExhausted;
        self.final_answer = true;
        EmptyReply::Exhausted
    }

    /// A tool round finished. `halted` is the guardrail's turn halt; `tools` the batch's names.
    /// Returns false when the turn ends here.
    pub fn tool_round<'a>(
        &mut self,
        tools: impl IntoIterator<Item = &'a str>,
        halted: bool,
    ) -> bool {
        self.nudged_this_round = false;
        self.last_reply_empty = false;
        if let Some(g) = self.rules.graph {
            self.steps += g.after_model + u64::from(self.tools_step);
            self.tools_step = true;
        }
        if halted {
            self.exit = ExitReason::GuardrailHalt;
            self.final_answer = true;
            return false;
        }
        let mut any = false;
        let only_exec = tools.into_iter().all(|t| {
            any = true;
            t == "execute_code"
        });
        if any && only_exec && self.rules.refund_execute_code {
            self.refund();
            if self.rules.refund_extends_call_cap {
                self.return_call();
            }
        }
        true
    }

    /// A restart that gives back the call it interrupted.
    pub fn restart(&mut self, _why: Restart) {
        self.return_call();
        self.refund();
    }

    /// The local model's context window is too small to run at all.
    pub fn runtime_context_too_small(&mut self) {
        self.restart(Restart::PreCallCompression);
        self.exit = ExitReason::OllamaRuntimeContextTooSmall;
        self.failed = true;
    }

    /// The context outgrew the model's window with no compression left this turn
    /// ([`compression::Gate::Exhausted`]): the turn fails.
    pub fn context_exhausted(&mut self) {
        self.exit = if self.rules.names_context_exhaustion {
            ExitReason::ContextCompressionExhausted
        } else {
            ExitReason::Unknown
        };
        self.failed = true;
    }

    /// The model call's last attempt met a provider error: Hermes returns the turn as
    /// failed. The iteration stays spent (its attempts cost nothing more).
    pub fn api_call_failed(&mut self, fault: crate::retry::ProviderFault) {
        self.exit = ExitReason::ApiCallFailed(fault);
        self.failed = true;
    }

    /// The user interrupted during a model call.
    pub fn interrupted_during_call(&mut self) {
        self.exit = ExitReason::InterruptedDuringApiCall;
        self.interrupted = true;
    }

    /// Ends the turn with another exit reason (errors, persistence failures...).
    pub fn fail(&mut self, reason: ExitReason) {
        self.failed = reason.failure_mapping().is_some_and(|m| m.fails_turn);
        self.exit = reason;
    }

    /// Runs the finalizer: rewrites an exhausted turn's reason and says whether a summary
    /// call is owed.
    pub fn finish(&mut self) -> TurnEnd {
        let exhausted = !self.within_limits();
        let mut summary_call = false;
        // Hermes's rules for a loop that stopped on an empty reply; another runtime's cap
        // acts whatever the last reply was.
        let hermes_rules = self.rules.on_empty_reply == OnEmptyReply::Recover;
        let last_reply_empty = self.last_reply_empty && hermes_rules;
        if last_reply_empty && matches!(self.exit, ExitReason::BudgetExhausted) {
            // The loop stopped on an empty reply: Hermes's final response is an empty string,
            // not none, so its finalizer neither rewrites the reason nor asks for a summary.
            self.exit = ExitReason::Unknown;
        }
        if !self.final_answer
            && !last_reply_empty
            && exhausted
            && !self.interrupted
            && !self.failed
            && matches!(self.exit, ExitReason::Unknown | ExitReason::BudgetExhausted)
        {
            match self.rules.at_cap {
                AtCap::MaxIterationsReached => {
                    self.exit = ExitReason::MaxIterationsReached {
                        calls: self.api_call_count,
                        max: self.max_iterations,
                    };
                    summary_call = self.rules.grace == GraceMode::SummaryCall;
                }
                AtCap::Raise(e) | AtCap::RaiseDroppingLastReply(e) => {
                    self.exit = ExitReason::Raised(e);
                    self.failed = true;
                }
                AtCap::FinalAnswerCall => {
                    self.exit = ExitReason::MaxStepsError;
                    summary_call = true;
                }
                AtCap::ConversationError => {
                    self.exit = ExitReason::ConversationMaxIterations;
                    self.failed = true;
                }
                AtCap::HandledFinalOutput => {
                    self.exit = ExitReason::MaxTurnsHandled;
                    self.final_answer = true;
                }
            }
        }
        TurnEnd {
            exit_reason: self.exit.clone(),
            summary_call,
            api_calls: self.api_call_count,
            budget_used: self.budget.used(),
        }
    }

    /// Hermes's `completed`: a final answer, not failed or interrupted, and within the cap or
    /// ended by text.
    pub fn completed(&self, has_final_answer: bool) -> bool {
        has_final_answer
            && !self.failed
            && !self.interrupted
            && (self.api_call_count < self.max_iterations
                || matches!(self.exit, ExitReason::TextResponse(_)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUMMARY: TurnRules = TurnRules {
        grace: GraceMode::SummaryCall,
        refund_extends_call_cap: false,
        dedupe_identical_calls: true,
        names_context_exhaustion: true,
        ..TurnRules::HERMES
    };

    fn run_tools(g: &mut TurnGovernor, tool: &str) -> u64 {
        let mut calls = 0;
        while let Step::Call { tools } = g.begin_iteration(false) {
            calls += 1;
            if !tools {
                g.text_reply(FinishReason::Stop);
                continue;
            }
            g.tool_round([tool], false);
        }
        calls
    }

    #[test]
    fn exhaustion_ends_with_max_iterations_and_a_summary_call() {
        let mut g = TurnGovernor::new(SUMMARY, 90);
        assert_eq!(run_tools(&mut g, "terminal"), 90);
        let end = g.finish();
        assert_eq!(end.exit_reason.to_string(), "max_iterations_reached(90/90)");
        assert!(end.summary_call);
        assert_eq!(end.budget_used, 90);
    }

    #[test]
    fn the_ledger_agrees_with_both_counters_after_refunds_and_restarts() {
        let mut g = TurnGovernor::new(SUMMARY, 10);
        for tool in ["terminal", "execute_code", "execute_code"] {
            assert_eq!(g.begin_iteration(false), Step::Call { tools: true });
            g.tool_round([tool], false);
        }
        assert_eq!(g.begin_iteration(false), Step::Call { tools: true });
        g.restart(Restart::PreCallCompression);
        let l = g.ledger();
        assert_eq!((l.calls_begun, l.calls_returned), (4, 1));
        assert_eq!((l.taken, l.returned), (4, 3));
        assert_eq!(g.api_call_count(), l.calls_begun - l.calls_returned);
        assert_eq!(g.budget().used(), l.taken - l.returned);
    }

    #[test]
    fn execute_code_refund_lowers_used_but_not_the_call_cap() {
        let mut g = TurnGovernor::new(SUMMARY, 10);
        assert_eq!(run_tools(&mut g, "execute_code"), 10);
        let end = g.finish();
        assert_eq!((end.api_calls, end.budget_used), (10, 0));
        assert_eq!(end.exit_reason.to_string(), "max_iterations_reached(10/10)");
    }

    #[test]
    fn article_refund_buys_calls_and_grace_is_tools_free() {
        let rules = TurnRules {
            grace: GraceMode::ExtraToolsFreeCall,
            refund_extends_call_cap: true,
            dedupe_identical_calls: false,
            names_context_exhaustion: true,
            ..TurnRules::HERMES
        };
        let mut g = TurnGovernor::new(rules, 5);
        for _ in 0..3 {
            assert_eq!(g.begin_iteration(false), Step::Call { tools: true });
            g.tool_round(["execute_code"], false);
        }
        assert_eq!(g.api_call_count(), 0);
        let mut g = TurnGovernor::new(rules, 2);
        assert_eq!(
            run_tools(&mut g, "terminal"),
            3,
            "two budgeted calls and one grace call"
        );
        let end = g.finish();
        assert_eq!(
            end.exit_reason.to_string(),
            "text_response(finish_reason=stop)"
        );
        assert!(!end.summary_call);
    }

    #[test]
    fn openai_agents_raises_before_the_call_past_max_turns_and_refunds_nothing() {
        let rules =
            crate::profile::Profile::get(crate::profile::ProfileName::OpenAiAgents0_24).turn;
        // Ten model calls, execute_code-only rounds included: no refund buys an eleventh.
        let mut g = TurnGovernor::new(rules, 10);
        assert_eq!(run_tools(&mut g, "execute_code"), 10);
        let end = g.finish();
        assert_eq!(end.exit_reason.to_string(), "raised(MaxTurnsExceeded)");
        assert!(!end.summary_call, "the SDK makes no call after it raises");
        assert_eq!((end.api_calls, end.budget_used), (10, 10));
        assert!(!g.completed(true));
        // A text reply at the last allowed call is the final output, not an exception.
        let mut g = TurnGovernor::new(rules, 2);
        g.begin_iteration(false);
        g.tool_round(["terminal"], false);
        assert_eq!(g.begin_iteration(false), Step::Call { tools: true });
        g.text_reply(FinishReason::Stop);
        assert_eq!(
            g.finish().exit_reason.to_string(),
            "text_response(finish_reason=stop)"
        );
        // max_turns 0: it raises before the first call.
        let mut g = TurnGovernor::new(rules, 0);
        assert_eq!(g.begin_iteration(false), Step::Exit);
        assert_eq!(
            g.finish().exit_reason,
            ExitReason::Raised(LimitError::MaxTurnsExceeded)
        );
    }

    #[test]
    fn pydantic_ai_retries_one_empty_reply_per_run_then_raises() {
        let rules = crate::profile::Profile::get(crate::profile::ProfileName::PydanticAi2_68).turn;
        let mut g = TurnGovernor::new(rules, 50);
        g.begin_iteration(false);
        // The first empty reply of the run: one retry request, counted like any other.
        assert_eq!(g.empty_reply(true), EmptyReply::Retry);
        g.begin_iteration(false);
        g.tool_round(["terminal"], false);
        g.begin_iteration(false);
        // The output-retry budget is the run's, not the round's: the second one raises.
        assert_eq!(g.empty_reply(true), EmptyReply::Exhausted);
        assert_eq!(g.begin_iteration(false), Step::Exit);
        let end = g.finish();
        assert_eq!(
            end.exit_reason.to_string(),
            "raised(UnexpectedModelBehavior)"
        );
        assert_eq!(end.api_calls, 3);
        assert!(!end.summary_call);
        // An empty reply at the last allowed request: its retry would pass the limit.
        let mut g = TurnGovernor::new(rules, 2);
        g.begin_iteration(false);
        g.tool_round(["terminal"], false);
        g.begin_iteration(false);
        assert_eq!(g.empty_reply(true), EmptyReply::Retry);
        assert_eq!(g.begin_iteration(false), Step::Exit);
        assert_eq!(
            g.finish().exit_reason.to_string(),
            "raised(UsageLimitExceeded)"
        );
        // request_limit: fifty requests, then UsageLimitExceeded before the fifty-first.
        let mut g = TurnGovernor::new(rules, 50);
        assert_eq!(run_tools(&mut g, "execute_code"), 50);
        assert_eq!(
            g.finish().exit_reason.to_string(),
            "raised(UsageLimitExceeded)"
        );
    }

    /// A LangGraph turn under `limit` with `hooks` middleware nodes per round.
    fn graph_turn(limit: u64, hooks: (u64, u64)) -> TurnGovernor {
        use crate::profile::{GraphLayout, recursion_limit_cap};
        let base = crate::profile::Profile::get(crate::profile::ProfileName::LangGraph1_2).turn;
        let layout = GraphLayout::create_agent(limit, hooks);
        let (max, at_cap) = recursion_limit_cap(layout);
        let rules = TurnRules {
            at_cap,
            graph: Some(layout),
            ..base
        };
        TurnGovernor::new(rules, max)
    }

    /// Model calls made and tool rounds run until the graph stops, the model always calling.
    fn graph_run(g: &mut TurnGovernor) -> (u64, u64) {
        let (mut made, mut ran) = (0, 0);
        while let Step::Call { .. } = g.begin_iteration(false) {
            made += 1;
            if g.drops_reply() {
                break;
            }
            g.tool_round(["terminal"], false);
            ran += 1;
        }
        (made, ran)
    }

    #[test]
    fn langgraph_counts_graph_steps_and_an_odd_limit_drops_the_last_reply() {
        // (limit, model calls, tool rounds run): the model at odd steps, its tools at even.
        for (limit, calls, rounds) in [(1, 1, 0), (2, 1, 1), (6, 3, 3), (7, 4, 3), (25, 13, 12)] {
            let mut g = graph_turn(limit, (0, 0));
            assert_eq!(
                graph_run(&mut g),
                (calls, rounds),
                "recursion_limit {limit}"
            );
            assert_eq!(
                g.finish().exit_reason.to_string(),
                "raised(GraphRecursionError)"
            );
        }
        // An even limit's last call may answer; an odd one's answer comes one step too late.
        let mut g = graph_turn(4, (0, 0));
        g.begin_iteration(false);
        g.tool_round(["terminal"], false);
        g.begin_iteration(false);
        assert!(!g.drops_reply());
        g.text_reply(FinishReason::Stop);
        assert_eq!(
            g.finish().exit_reason.to_string(),
            "text_response(finish_reason=stop)"
        );
        let mut g = graph_turn(3, (0, 0));
        g.begin_iteration(false);
        g.tool_round(["terminal"], false);
        g.begin_iteration(false);
        assert!(g.drops_reply());
    }

    #[test]
    fn langgraph_middleware_hooks_are_steps_of_their_own() {
        // Measured against langchain 1.5: at recursion_limit 25, ModelCallLimitMiddleware
        // alone (a hook before the model and one after) leaves 6 calls, all of whose tools run.
        let mut g = graph_turn(25, (1, 1));
        assert_eq!(graph_run(&mut g), (6, 6));
        // The least limits for one tool round and an answer: 4, 6 with the tool-call limit's
        // hook, 8 with the model-call limit's two, 10 with both.
        use crate::profile::GraphLayout;
        for (hooks, least) in [((0, 0), 4), ((0, 1), 6), ((1, 1), 8), ((1, 2), 10)] {
            assert_eq!(
                GraphLayout::create_agent(0, hooks).limit_for_calls(2),
                least
            );
            for limit in [least - 1, least] {
                let mut g = graph_turn(limit, hooks);
                assert_eq!(g.begin_iteration(false), Step::Call { tools: true });
                assert!(!g.drops_reply());
                g.tool_round(["terminal"], false);
                assert_eq!(g.begin_iteration(false), Step::Call { tools: true });
                if g.drops_reply() {
                    assert_eq!(limit, least - 1, "{hooks:?}");
                    continue;
                }
                g.text_reply(FinishReason::Stop);
                assert_eq!(limit, least, "{hooks:?}");
            }
        }
        // A round whose calls were all blocked has no tools step: the next call comes sooner
        // (the steps decide; the cap in calls is only their bound).
        let rules = graph_turn(9, (0, 1)).rules;
        let mut g = TurnGovernor::new(rules, 100);
        let mut made = 0;
        while let Step::Call { .. } = g.begin_iteration(false) {
            made += 1;
            if g.drops_reply() {
                break;
            }
            g.all_calls_blocked();
            g.tool_round(["terminal"], false);
        }
        // Model at steps 1, 3, 5, 7, 9 (each round: the model and the hook).
        assert_eq!(made, 5);
    }

    #[test]
    fn a_limit_hook_acts_only_if_its_step_runs() {
        use crate::limits::{LimitStop, Limited};
        // Tool-call limit's hook right after the model's step, at recursion_limit 3 with
        // (0, 1) hooks: model at 1, hook at 2, tools at 3.
        let end = LimitStop::End(Limited::ToolCalls);
        let raise = LimitStop::Raise(LimitError::ToolCallLimitExceededError);
        for (limit, stop, exit) in [
            (3, end, "tool_call_limit_reached"),
            (2, end, "raised(GraphRecursionError)"),
            (2, raise, "raised(ToolCallLimitExceededError)"),
            (1, raise, "raised(GraphRecursionError)"),
        ] {
            let mut g = graph_turn(limit, (0, 1));
            g.begin_iteration(false);
            assert!(g.reply_stops(Some(stop)));
            assert_eq!(g.finish().exit_reason.to_string(), exit, "limit {limit}");
        }
        // The model-call limit's hook comes before the model: the cap goes first.
        let mut g = graph_turn(9999, (1, 1));
        let stop = LimitStop::End(Limited::ModelCalls);
        assert_eq!(g.begin_iteration_unless(true, Some(stop)), Step::Exit);
        let end = g.finish();
        assert_eq!(end.exit_reason.to_string(), "model_call_limit_reached");
        assert_eq!(end.api_calls, 0, "no model call past the limit");
    }

    #[test]
    fn smolagents_runs_max_steps_then_makes_its_final_answer_call() {
        let rules = crate::profile::Profile::get(crate::profile::ProfileName::Smolagents1_26).turn;
        // Twenty steps, execute_code-only ones included, then the tools-free final-answer call.
        let mut g = TurnGovernor::new(rules, 20);
        let mut steps = 0;
        while let Step::Call { tools } = g.begin_iteration(false) {
            assert!(tools, "every step offers the tools");
            steps += 1;
            g.tool_round(["execute_code"], false);
        }
        assert_eq!(steps, 20);
        let end = g.finish();
        assert_eq!(end.exit_reason.to_string(), "max_steps_error");
        assert!(end.summary_call && end.exit_reason.is_runtime_limit());
        assert_eq!((end.api_calls, end.budget_used), (20, 20));
        // An empty reply fails its step, which counts, and the loop goes on, every time.
        let mut g = TurnGovernor::new(rules, 3);
        for _ in 0..3 {
            assert_eq!(g.begin_iteration(false), Step::Call { tools: true });
            assert_eq!(g.empty_reply(true), EmptyReply::Retry);
        }
        assert_eq!(g.begin_iteration(false), Step::Exit);
        assert!(
            g.finish().summary_call,
            "the last step's empty reply changes nothing"
        );
        // The user's stop at the cap: the step loop is over first, so the call is made.
        let mut g = TurnGovernor::new(rules, 1);
        g.begin_iteration(false);
        g.tool_round(["terminal"], false);
        assert_eq!(g.begin_iteration(true), Step::Exit);
        assert_eq!(g.finish().exit_reason, ExitReason::MaxStepsError);
        // Before it, the stop ends the run with no call.
        let mut g = TurnGovernor::new(rules, 5);
        g.begin_iteration(false);
        g.tool_round(["terminal"], false);
        assert_eq!(g.begin_iteration(true), Step::Exit);
        let end = g.finish();
        assert_eq!(end.exit_reason, ExitReason::InterruptedByUser);
        assert!(!end.summary_call);
    }

    #[test]
    fn halts_interrupts_and_context_refunds() {
        let mut g = TurnGovernor::new(SUMMARY, 90);
        g.begin_iteration(false);
        assert!(!g.tool_round(["read_file"], true));
        assert_eq!(g.begin_iteration(false), Step::Exit);
        assert_eq!(g.finish().exit_reason, ExitReason::GuardrailHalt);

        let mut g = TurnGovernor::new(SUMMARY, 90);
        g.begin_iteration(false);
        assert_eq!(g.begin_iteration(true), Step::Exit);
        let end = g.finish();
        assert_eq!(end.exit_reason.to_string(), "interrupted_by_user");
        assert!(!end.summary_call);

        let mut g = TurnGovernor::new(SUMMARY, 90);
        g.begin_iteration(false);
        g.runtime_context_too_small();
        let end = g.finish();
        assert_eq!((end.api_calls, end.budget_used), (0, 0));
        assert_eq!(
            end.exit_reason.to_string(),
            "ollama_runtime_context_too_small"
        );
    }

    #[test]
    fn shared_budget_with_reserve_stops_the_child_first() {
        let parent = Arc::new(IterationBudget::new(90));
        let mut child = TurnGovernor::with_budget(SUMMARY, 50, Arc::clone(&parent), 10);
        let calls = run_tools(&mut child, "web_search");
        assert_eq!(calls, 50, "the child's own cap binds first");
        let mut child2 = TurnGovernor::with_budget(SUMMARY, 50, Arc::clone(&parent), 10);
        assert_eq!(run_tools(&mut child2, "web_search"), 30, "then the reserve");
        assert_eq!(parent.remaining(), 10);
    }

    #[test]
    fn exit_strings() {
        assert_eq!(
            ExitReason::LocalProcessingError("x".repeat(100))
                .to_string()
                .len(),
            "local_processing_error()".len() + 80
        );
        assert_eq!(
            ExitReason::TextResponse(FinishReason::Other("end_turn".into())).to_string(),
            "text_response(finish_reason=end_turn)"
        );
        assert_eq!(
            ExitReason::PendingToolResult
                .failure_mapping()
                .unwrap()
                .failure_reason,
            "loop_error"
        );
    }
}

/// What the out-of-budget summary call produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SummaryOutcome {
    /// The model's summary (think blocks removed, trimmed): the turn's final answer.
    Text(String),
    /// Nothing usable came back: the runtime answers with a fixed note that the limit was hit.
    Fallback,
}

/// Hermes makes at most two summary attempts: an empty reply is retried once.
pub const SUMMARY_CALL_MAX_ATTEMPTS: u32 = 2;

/// Runs the summary call's rules over `call`, which makes one tools-free model call and
/// returns its raw text. An empty reply is retried once; text that is empty only after think
/// blocks are removed is not retried.
pub fn summary_call(mut call: impl FnMut() -> String) -> SummaryOutcome {
    let mut reply = call();
    if reply.is_empty() {
        reply = call();
    }
    let text = strip_think_blocks(&reply);
    let text = text.trim();
    if text.is_empty() {
        SummaryOutcome::Fallback
    } else {
        SummaryOutcome::Text(text.to_string())
    }
}

/// Removes `<think>...</think>` blocks (an unclosed one runs to the end).
pub fn strip_think_blocks(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find("<think>") {
        out.push_str(&rest[..start]);
        match rest[start..].find("</think>") {
            Some(end) => rest = &rest[start + end + "</think>".len()..],
            None => return out,
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod empty_reply_tests {
    use super::*;

    const RULES: TurnRules = TurnRules {
        grace: GraceMode::SummaryCall,
        refund_extends_call_cap: false,
        dedupe_identical_calls: true,
        names_context_exhaustion: true,
        ..TurnRules::HERMES
    };

    /// Runs replies through a turn: `e` empty, `t` a tool round, `x` text. Returns the calls
    /// made, the budget used and the exit reason.
    fn run(max: u64, replies: &str) -> (u64, u64, String) {
        let mut g = TurnGovernor::new(RULES, max);
        let mut recent = false;
        for r in replies.chars() {
            match g.begin_iteration(false) {
                Step::Exit => break,
                Step::Call { .. } => {}
            }
            let go_on = match r {
                'e' => g.empty_reply(recent) != EmptyReply::Exhausted,
                't' => {
                    recent = true;
                    g.tool_round(["terminal"], false)
                }
                _ => {
                    g.text_reply(FinishReason::Stop);
                    false
                }
            };
            if !go_on {
                break;
            }
        }
        let end = g.finish();
        (end.api_calls, end.budget_used, end.exit_reason.to_string())
    }

    // The cases observed in the real hermes-agent 0.19.0 loop (agent/conversation_loop.py):
    // every empty reply, nudge and retry is a counted request; nothing is refunded.
    #[test]
    fn empty_replies_are_counted_retried_three_times_and_nudged_once_after_tools() {
        let exhausted = "empty_response_exhausted".to_string();
        assert_eq!(run(90, "eeeeeeee"), (4, 4, exhausted.clone()));
        assert_eq!(
            run(90, "ex"),
            (2, 2, "text_response(finish_reason=stop)".into())
        );
        assert_eq!(
            run(90, "tex"),
            (3, 3, "text_response(finish_reason=stop)".into())
        );
        assert_eq!(run(90, "teeeeeeee"), (6, 6, exhausted.clone()));
        // A tool round does not give the retries back, but it brings a new nudge.
        assert_eq!(run(90, "eetteeeee"), (7, 7, exhausted));
    }

    #[test]
    fn a_budget_spent_on_empty_replies_ends_unknown_without_a_summary() {
        let g = run(2, "eeee");
        assert_eq!(g, (2, 2, "unknown".to_string()));
        let mut gov = TurnGovernor::new(RULES, 2);
        for _ in 0..2 {
            assert_eq!(gov.begin_iteration(false), Step::Call { tools: true });
            gov.empty_reply(false);
        }
        assert_eq!(gov.begin_iteration(false), Step::Exit);
        assert!(!gov.finish().summary_call);
    }
}

#[cfg(test)]
mod summary_tests {
    use super::*;

    #[test]
    fn an_empty_reply_is_retried_once() {
        let mut replies = vec!["", "", "late"].into_iter();
        let mut calls = 0;
        let out = summary_call(|| {
            calls += 1;
            replies.next().unwrap().to_string()
        });
        assert_eq!((out, calls), (SummaryOutcome::Fallback, 2));
        let mut replies = vec!["", "  done  "].into_iter();
        assert_eq!(
            summary_call(|| replies.next().unwrap().to_string()),
            SummaryOutcome::Text("done".into())
        );
    }

    #[test]
    fn think_only_replies_fall_back_without_retry() {
        let mut calls = 0;
        let out = summary_call(|| {
            calls += 1;
            "<think>hmm</think>  ".to_string()
        });
        assert_eq!((out, calls), (SummaryOutcome::Fallback, 1));
        assert_eq!(strip_think_blocks("a<think>x</think>b<think>y"), "ab");
    }
}
