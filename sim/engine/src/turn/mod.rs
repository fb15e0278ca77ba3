//! The per-turn loop governor: counts model calls, draws on the iteration budget, applies the
//! refund rules, decides when the loop ends and with which exit reason, and whether an
//! out-of-budget summary call follows.
//!
//! It keeps two counters, as Hermes does: `api_call_count` (every model call this turn) and
//! the budget's `used` (what refunds give back). The loop runs while
//! `api_call_count < max_iterations && budget.remaining() > 0`.

use std::sync::Arc;

use crate::budget::IterationBudget;
use crate::call_limits::LimitStop;
use crate::profile::GraphLayout;

pub mod batch;
pub mod compaction_plan;
pub mod compression;
mod exit;
pub mod invalid_calls;
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
    /// How the runtime takes replies whose calls it cannot run: unknown tools, arguments
    /// that are not JSON ([`invalid_calls`]). `None`: loopsim has not proved its handling.
    pub invalid_calls: Option<invalid_calls::InvalidCallRules>,
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
        invalid_calls: Some(invalid_calls::InvalidCallRules::HERMES),
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
    /// Replies in a row that called only unknown tools ([`invalid_calls`]).
    unknown_tool_strikes: u32,
    /// Replies with broken arguments sent again since tools last ran ([`invalid_calls`]).
    truncated_retries: u32,
    /// Replies in a row a ReAct loop could not parse ([`invalid_calls::ParseFailure`]).
    parse_failures: u32,
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
            unknown_tool_strikes: 0,
            truncated_retries: 0,
            parse_failures: 0,
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

    /// Whether the loop's test admits another iteration: the turn has not ended, and it is
    /// within its limits or has its grace call left. What a runtime does at the top of an
    /// iteration (before its interrupt check) happens only then.
    pub fn iteration_due(&self) -> bool {
        self.exit == ExitReason::Unknown
            && (self.within_limits()
                || (self.rules.grace == GraceMode::ExtraToolsFreeCall
                    && self.grace_state == GraceState::Unused))
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
        // Nothing to parse: a run of parse failures ends here too.
        self.parse_failures = 0;
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
        self.unknown_tool_strikes = 0;
        self.truncated_retries = 0;
        self.parse_failures = 0;
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
mod tests;
