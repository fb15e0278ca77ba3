//! How a turn ends: [`ExitReason`], printing and parsing Hermes's exact strings.

use std::fmt;

use crate::retry::ProviderFault;

/// Why a model reply ended.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FinishReason {
    Stop,
    Length,
    ToolCalls,
    ContentFilter,
    Other(String),
}

impl fmt::Display for FinishReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
            FinishReason::ToolCalls => "tool_calls",
            FinishReason::ContentFilter => "content_filter",
            FinishReason::Other(s) => s,
        })
    }
}

/// An exception another runtime ends a run with (its limits, its give-up on the model's
/// replies), named by the exception's class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LimitError {
    /// OpenAI Agents SDK: the run reached `max_turns` model calls.
    MaxTurnsExceeded,
    /// Pydantic AI: a `UsageLimits` limit (`request_limit`) would be exceeded.
    UsageLimitExceeded,
    /// Pydantic AI: the model's replies used up the output retries (empty replies).
    UnexpectedModelBehavior,
    /// LangGraph: the graph ran `recursion_limit` steps without ending.
    GraphRecursionError,
    /// LangChain's `ModelCallLimitMiddleware` with `exit_behavior="error"`.
    ModelCallLimitExceededError,
    /// LangChain's `ToolCallLimitMiddleware` with `exit_behavior="error"`.
    ToolCallLimitExceededError,
}

impl LimitError {
    pub const ALL: [LimitError; 6] = [
        LimitError::MaxTurnsExceeded,
        LimitError::UsageLimitExceeded,
        LimitError::UnexpectedModelBehavior,
        LimitError::GraphRecursionError,
        LimitError::ModelCallLimitExceededError,
        LimitError::ToolCallLimitExceededError,
    ];

    /// Whether the exception is the runtime's limit on the loop (its governance), not its
    /// giving up on the model's replies.
    pub fn is_limit(self) -> bool {
        !matches!(self, LimitError::UnexpectedModelBehavior)
    }

    /// The exception's class name, as the runtime raises it.
    pub fn as_str(self) -> &'static str {
        match self {
            LimitError::MaxTurnsExceeded => "MaxTurnsExceeded",
            LimitError::UsageLimitExceeded => "UsageLimitExceeded",
            LimitError::UnexpectedModelBehavior => "UnexpectedModelBehavior",
            LimitError::GraphRecursionError => "GraphRecursionError",
            LimitError::ModelCallLimitExceededError => "ModelCallLimitExceededError",
            LimitError::ToolCallLimitExceededError => "ToolCallLimitExceededError",
        }
    }
}

/// Every way a turn ends. `Display` prints Hermes's exact strings, and `raised(CLASS)` for a
/// limit another runtime raises.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ExitReason {
    Unknown,
    InterruptedByUser,
    ReviewInputBudgetExhausted,
    BudgetExhausted,
    OllamaRuntimeContextTooSmall,
    InterruptedDuringApiCall,
    RedirectRestartLimitExceeded,
    CompactionHandoffNotActionable,
    RebuiltRestartLimitExceeded,
    AllRetriesExhaustedNoResponse,
    SessionPersistenceFailed,
    GuardrailHalt,
    TextResponse(FinishReason),
    PartialStreamRecovery,
    FallbackPriorTurnContent,
    EmptyResponseExhausted,
    /// The argument is cut to 80 characters, as Hermes does.
    LocalProcessingError(String),
    RepeatedOuterErrors(String),
    ErrorNearMaxIterations(String),
    InterpreterShutdown,
    MaxIterationsReached {
        calls: u64,
        max: u64,
    },
    PendingToolResult,
    ContextCompressionExhausted,
    ContextCompressionTimeout,
    /// Another runtime raised its limit's exception: no final answer.
    Raised(LimitError),
    /// smolagents ran `max_steps` steps without an answer and made its final-answer call
    /// (the run's `state`).
    MaxStepsError,
    /// The run spent its total-token budget (the article's loop): no further call.
    TokenBudgetExhausted,
    /// OpenHands: the run made `max_iteration_per_run` steps (status ERROR).
    ConversationMaxIterations,
    /// OpenHands: the stuck detector stopped the run (status STUCK).
    ConversationStuck,
    /// LangChain's `ModelCallLimitMiddleware` ended the run at its limit (`exit_behavior`
    /// "end"): the middleware's own message is the last, no further call.
    ModelCallLimitReached,
    /// LangChain's `ToolCallLimitMiddleware` ended the run at its limit (`exit_behavior`
    /// "end"): none of the reply's calls ran.
    ToolCallLimitReached,
    /// OpenAI Agents SDK: the run reached `max_turns` and its `error_handlers["max_turns"]`
    /// handler gave the final output instead of the exception: no further call.
    MaxTurnsHandled,
    /// Hermes gave up on a model call after its last attempt met a provider error, and
    /// returned the turn as failed without naming an exit reason; loopsim names it by the
    /// error's classified reason (the returned `failure_reason`).
    ApiCallFailed(ProviderFault),
    /// Hermes ended the turn after replies in a row that called only tools that do not
    /// exist ([`super::invalid_calls`]), returning it as partial without naming an exit
    /// reason; loopsim names it.
    InvalidToolCall,
    /// Hermes ended the turn after replies whose arguments it could not repair
    /// ([`super::invalid_calls`]), returning it as partial without naming an exit reason;
    /// loopsim names it.
    TruncatedToolCall,
}

fn cut80(s: &str) -> &str {
    match s.char_indices().nth(80) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

impl fmt::Display for ExitReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ExitReason::*;
        match self {
            Unknown => f.write_str("unknown"),
            InterruptedByUser => f.write_str("interrupted_by_user"),
            ReviewInputBudgetExhausted => f.write_str("review_input_budget_exhausted"),
            BudgetExhausted => f.write_str("budget_exhausted"),
            OllamaRuntimeContextTooSmall => f.write_str("ollama_runtime_context_too_small"),
            InterruptedDuringApiCall => f.write_str("interrupted_during_api_call"),
            RedirectRestartLimitExceeded => f.write_str("redirect_restart_limit_exceeded"),
            CompactionHandoffNotActionable => f.write_str("compaction_handoff_not_actionable"),
            RebuiltRestartLimitExceeded => f.write_str("rebuilt_restart_limit_exceeded"),
            AllRetriesExhaustedNoResponse => f.write_str("all_retries_exhausted_no_response"),
            SessionPersistenceFailed => f.write_str("session_persistence_failed"),
            GuardrailHalt => f.write_str("guardrail_halt"),
            TextResponse(fr) => write!(f, "text_response(finish_reason={fr})"),
            PartialStreamRecovery => f.write_str("partial_stream_recovery"),
            FallbackPriorTurnContent => f.write_str("fallback_prior_turn_content"),
            EmptyResponseExhausted => f.write_str("empty_response_exhausted"),
            LocalProcessingError(e) => write!(f, "local_processing_error({})", cut80(e)),
            RepeatedOuterErrors(e) => write!(f, "repeated_outer_errors({})", cut80(e)),
            ErrorNearMaxIterations(e) => write!(f, "error_near_max_iterations({})", cut80(e)),
            InterpreterShutdown => f.write_str("interpreter_shutdown"),
            MaxIterationsReached { calls, max } => {
                write!(f, "max_iterations_reached({calls}/{max})")
            }
            PendingToolResult => f.write_str("pending_tool_result"),
            ContextCompressionExhausted => f.write_str("context_compression_exhausted"),
            ContextCompressionTimeout => f.write_str("context_compression_timeout"),
            Raised(e) => write!(f, "raised({})", e.as_str()),
            MaxStepsError => f.write_str("max_steps_error"),
            TokenBudgetExhausted => f.write_str("token_budget_exhausted"),
            ConversationMaxIterations => f.write_str("conversation_error(MaxIterationsReached)"),
            ConversationStuck => f.write_str("conversation_stuck"),
            ModelCallLimitReached => f.write_str("model_call_limit_reached"),
            ToolCallLimitReached => f.write_str("tool_call_limit_reached"),
            MaxTurnsHandled => f.write_str("max_turns_handled"),
            ApiCallFailed(e) => write!(f, "api_call_failed({e})"),
            InvalidToolCall => f.write_str("invalid_tool_call"),
            TruncatedToolCall => f.write_str("truncated_tool_call"),
        }
    }
}

impl ExitReason {
    /// Every exit reason's form, as `loopsim codes` lists them (`N`, `M`, `...` stand for the
    /// parts a run fills in).
    pub const FORMS: [&'static str; 35] = [
        "unknown",
        "interrupted_by_user",
        "review_input_budget_exhausted",
        "budget_exhausted",
        "ollama_runtime_context_too_small",
        "interrupted_during_api_call",
        "redirect_restart_limit_exceeded",
        "compaction_handoff_not_actionable",
        "rebuilt_restart_limit_exceeded",
        "all_retries_exhausted_no_response",
        "session_persistence_failed",
        "guardrail_halt",
        "text_response(finish_reason=...)",
        "partial_stream_recovery",
        "fallback_prior_turn_content",
        "empty_response_exhausted",
        "local_processing_error(...)",
        "repeated_outer_errors(...)",
        "error_near_max_iterations(...)",
        "interpreter_shutdown",
        "max_iterations_reached(N/M)",
        "pending_tool_result",
        "context_compression_exhausted",
        "context_compression_timeout",
        "raised(EXCEPTION)",
        "max_steps_error",
        "token_budget_exhausted",
        "conversation_error(MaxIterationsReached)",
        "conversation_stuck",
        "model_call_limit_reached",
        "tool_call_limit_reached",
        "max_turns_handled",
        "api_call_failed(REASON)",
        "invalid_tool_call",
        "truncated_tool_call",
    ];

    /// The exit reason a string prints, the inverse of `Display`.
    pub fn parse(s: &str) -> Option<ExitReason> {
        use ExitReason::*;
        let inner = |prefix: &str| {
            s.strip_prefix(prefix)
                .and_then(|r| r.strip_suffix(')'))
                .map(str::to_string)
        };
        if let Some(fr) = inner("text_response(finish_reason=") {
            return Some(TextResponse(match fr.as_str() {
                "stop" => FinishReason::Stop,
                "length" => FinishReason::Length,
                "tool_calls" => FinishReason::ToolCalls,
                "content_filter" => FinishReason::ContentFilter,
                _ => FinishReason::Other(fr),
            }));
        }
        if let Some(e) = inner("local_processing_error(") {
            return Some(LocalProcessingError(e));
        }
        if let Some(e) = inner("repeated_outer_errors(") {
            return Some(RepeatedOuterErrors(e));
        }
        if let Some(e) = inner("error_near_max_iterations(") {
            return Some(ErrorNearMaxIterations(e));
        }
        if let Some(e) = inner("raised(") {
            return LimitError::ALL
                .into_iter()
                .find(|l| l.as_str() == e)
                .map(Raised);
        }
        if let Some(e) = inner("api_call_failed(") {
            return ProviderFault::parse(&e).map(ApiCallFailed);
        }
        if let Some(nm) = inner("max_iterations_reached(") {
            let (n, m) = nm.split_once('/')?;
            let (calls, max): (u64, u64) = (n.parse().ok()?, m.parse().ok()?);
            if n != calls.to_string() || m != max.to_string() {
                return None;
            }
            return Some(MaxIterationsReached { calls, max });
        }
        let plain = [
            Unknown,
            InterruptedByUser,
            ReviewInputBudgetExhausted,
            BudgetExhausted,
            OllamaRuntimeContextTooSmall,
            InterruptedDuringApiCall,
            RedirectRestartLimitExceeded,
            CompactionHandoffNotActionable,
            RebuiltRestartLimitExceeded,
            AllRetriesExhaustedNoResponse,
            SessionPersistenceFailed,
            GuardrailHalt,
            PartialStreamRecovery,
            FallbackPriorTurnContent,
            EmptyResponseExhausted,
            InterpreterShutdown,
            PendingToolResult,
            ContextCompressionExhausted,
            ContextCompressionTimeout,
            MaxStepsError,
            TokenBudgetExhausted,
            ConversationMaxIterations,
            ConversationStuck,
            ModelCallLimitReached,
            ToolCallLimitReached,
            MaxTurnsHandled,
            InvalidToolCall,
            TruncatedToolCall,
        ];
        plain.into_iter().find(|r| *r == s)
    }
}

impl ExitReason {
    /// Whether another runtime's own limit ended the turn: an exception it raises at its
    /// cap, smolagents' final answer at `max_steps`, the article loop's token budget, a
    /// call-limit middleware's end. Reports, sweeps and `check` count it as the run's stop,
    /// as a guardrail halt is Hermes's.
    pub fn is_runtime_limit(&self) -> bool {
        match self {
            ExitReason::Raised(e) => e.is_limit(),
            ExitReason::MaxStepsError
            | ExitReason::TokenBudgetExhausted
            | ExitReason::ConversationMaxIterations
            | ExitReason::ConversationStuck
            | ExitReason::ModelCallLimitReached
            | ExitReason::ToolCallLimitReached
            | ExitReason::MaxTurnsHandled => true,
            _ => false,
        }
    }
}

/// How a failed turn is reported (Hermes's failure table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FailureMapping {
    pub failure_reason: &'static str,
    pub retryable: bool,
    pub fails_turn: bool,
}

impl ExitReason {
    /// The failure mapping for exit reasons that have one.
    pub fn failure_mapping(&self) -> Option<FailureMapping> {
        use ExitReason::*;
        let m = |failure_reason, retryable, fails_turn| {
            Some(FailureMapping {
                failure_reason,
                retryable,
                fails_turn,
            })
        };
        match self {
            EmptyResponseExhausted => m("empty_response", true, false),
            AllRetriesExhaustedNoResponse => m("server_error", true, true),
            ApiCallFailed(e) => m(e.as_str(), true, true),
            PendingToolResult | RepeatedOuterErrors(_) | ErrorNearMaxIterations(_) => {
                m("loop_error", true, true)
            }
            InterpreterShutdown => m("interpreter_shutdown", false, true),
            LocalProcessingError(_) => m("loop_error", false, false),
            ContextCompressionTimeout
            | ContextCompressionExhausted
            | OllamaRuntimeContextTooSmall => m("context_overflow", false, true),
            RedirectRestartLimitExceeded | RebuiltRestartLimitExceeded => {
                m("loop_error", true, false)
            }
            _ => None,
        }
    }
}

/// An exit reason equals the word it prints (`"guardrail_halt"`,
/// `"max_iterations_reached(90/90)"`), compared as it is printed, without a copy.
impl PartialEq<&str> for ExitReason {
    fn eq(&self, other: &&str) -> bool {
        struct Rest<'a>(&'a str);
        impl fmt::Write for Rest<'_> {
            fn write_str(&mut self, s: &str) -> fmt::Result {
                self.0 = self.0.strip_prefix(s).ok_or(fmt::Error)?;
                Ok(())
            }
        }
        let mut rest = Rest(other);
        fmt::write(&mut rest, format_args!("{self}")).is_ok() && rest.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exit_reason_equals_exactly_the_word_it_prints() {
        let r = ExitReason::MaxIterationsReached { calls: 90, max: 90 };
        assert!(r == "max_iterations_reached(90/90)");
        assert!(r != "max_iterations_reached(90/9");
        assert!(r != "max_iterations_reached(90/90))");
        assert!(r != "");
        assert!(ExitReason::GuardrailHalt == "guardrail_halt");
        assert!(ExitReason::Unknown != "guardrail_halt");
    }

    #[test]
    fn every_exit_reason_parses_back() {
        let samples = [
            ExitReason::InterruptedByUser,
            ExitReason::GuardrailHalt,
            ExitReason::TextResponse(FinishReason::Stop),
            ExitReason::TextResponse(FinishReason::Other("weird".into())),
            ExitReason::MaxIterationsReached { calls: 90, max: 90 },
            ExitReason::LocalProcessingError("boom".into()),
            ExitReason::ContextCompressionTimeout,
            ExitReason::Raised(LimitError::MaxTurnsExceeded),
            ExitReason::MaxStepsError,
            ExitReason::ApiCallFailed(ProviderFault::RateLimit),
            ExitReason::InvalidToolCall,
            ExitReason::TruncatedToolCall,
            ExitReason::TokenBudgetExhausted,
            ExitReason::ConversationStuck,
            ExitReason::ConversationMaxIterations,
            ExitReason::ModelCallLimitReached,
            ExitReason::ToolCallLimitReached,
            ExitReason::MaxTurnsHandled,
            ExitReason::Raised(LimitError::ToolCallLimitExceededError),
        ];
        for r in samples {
            assert_eq!(ExitReason::parse(&r.to_string()), Some(r.clone()), "{r}");
        }
        for bad in [
            "max_iterations_reached(90)",
            "max_iterations_reached(090/90)",
            "interupted_by_user",
            "raised(MaxTurnsExceded)",
            "",
        ] {
            assert_eq!(ExitReason::parse(bad), None, "{bad}");
        }
        assert_eq!(ExitReason::FORMS.len(), 35);
    }
}
