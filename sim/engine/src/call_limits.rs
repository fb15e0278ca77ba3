//! Call limits some runtimes check around each model reply besides their cap, all off by
//! default: Pydantic AI's `UsageLimits` on tool calls and tokens, and LangChain's call-limit
//! middleware under `create_agent` (`ModelCallLimitMiddleware`, `ToolCallLimitMiddleware`).
//!
//! Every count is per run, a loopsim turn: Pydantic AI starts a run's usage afresh unless it is
//! handed one, and LangChain keeps no thread count between invocations without a
//! checkpointer (loopsim's runs have none). The world reports what each reply holds and
//! what it used; [`LimitCounter`] says whether the run goes on.
//!
//! ```
//! use loopsim_engine::call_limits::{CallLimits, LimitCounter, LimitStop, Tools, UsageLimits};
//! use loopsim_engine::turn::LimitError;
//!
//! let limits = CallLimits {
//!     usage: UsageLimits { tool_calls: Some(2), ..UsageLimits::default() },
//!     ..CallLimits::default()
//! };
//! let mut run = LimitCounter::default();
//! assert_eq!(run.before_tools(&limits, &["search"]), Tools::Run(vec![false]));
//! // A reply of two more calls would make three: none of them runs.
//! assert_eq!(
//!     run.before_tools(&limits, &["search", "search"]),
//!     Tools::Stop(LimitStop::Raise(LimitError::UsageLimitExceeded))
//! );
//! ```

use crate::turn::{ExitReason, LimitError};

/// Pydantic AI's `UsageLimits` besides `request_limit` (the runtime's cap). Each compares
/// with "above": a run may reach a limit exactly.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UsageLimits {
    /// `tool_calls_limit`: checked once per reply, before any of its calls runs, against the
    /// run's calls so far plus all of the reply's.
    pub tool_calls: Option<u64>,
    /// `input_tokens_limit`: prompt tokens (cached ones included) over the run's responses.
    pub input_tokens: Option<u64>,
    /// `output_tokens_limit`: completion tokens over the run's responses.
    pub output_tokens: Option<u64>,
    /// `total_tokens_limit`: both.
    pub total_tokens: Option<u64>,
}

impl UsageLimits {
    pub fn any(&self) -> bool {
        *self != UsageLimits::default()
    }
}

/// What LangChain's call-limit middleware does at its limit (its `exit_behavior`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitBehavior {
    /// The calls past the limit get an error result instead of running; the loop goes on
    /// (`ToolCallLimitMiddleware`'s default).
    Continue,
    /// The run ends with the middleware's own message (`ModelCallLimitMiddleware`'s default).
    End,
    /// The middleware raises.
    Error,
}

impl ExitBehavior {
    pub fn as_str(self) -> &'static str {
        match self {
            ExitBehavior::Continue => "continue",
            ExitBehavior::End => "end",
            ExitBehavior::Error => "error",
        }
    }
}

/// `ModelCallLimitMiddleware`: at most `limit` model calls in a run, checked before each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelCallLimit {
    pub limit: u64,
    /// [`ExitBehavior::End`] or [`ExitBehavior::Error`].
    pub exit: ExitBehavior,
}

/// `ToolCallLimitMiddleware`: at most `limit` calls (of one tool, or of all) in a run,
/// checked on each reply, call by call in the reply's order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolCallLimit {
    /// `tool_name`: `None` counts every tool.
    pub tool: Option<String>,
    pub limit: u64,
    pub exit: ExitBehavior,
}

/// A run's opt-in limits (none by default).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallLimits {
    pub usage: UsageLimits,
    pub model_calls: Option<ModelCallLimit>,
    pub tool_calls: Option<ToolCallLimit>,
}

impl CallLimits {
    pub fn any(&self) -> bool {
        self.usage.any() || self.model_calls.is_some() || self.tool_calls.is_some()
    }

    /// The graph nodes the middleware adds to each model round, `(before the model, after
    /// it)`: every hook is a step of its own under LangGraph's `recursion_limit`.
    /// `ModelCallLimitMiddleware` has both hooks, `ToolCallLimitMiddleware` one after.
    pub fn graph_hooks(&self) -> (u64, u64) {
        let m = u64::from(self.model_calls.is_some());
        let t = u64::from(self.tool_calls.is_some());
        (m, m + t)
    }
}

/// How a limit ends the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitStop {
    /// The runtime raises: no final answer.
    Raise(LimitError),
    /// The middleware ends the run with its own message: the turn's exit reason.
    End(Limited),
}

/// Which middleware ended a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limited {
    ModelCalls,
    ToolCalls,
}

impl LimitStop {
    pub fn exit_reason(self) -> ExitReason {
        match self {
            LimitStop::Raise(e) => ExitReason::Raised(e),
            LimitStop::End(Limited::ModelCalls) => ExitReason::ModelCallLimitReached,
            LimitStop::End(Limited::ToolCalls) => ExitReason::ToolCallLimitReached,
        }
    }
}

/// What happens to a reply's tool calls.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tools {
    /// They run, except those marked `true`: blocked, each answered with an error result.
    Run(Vec<bool>),
    /// None of them runs and the run ends.
    Stop(LimitStop),
}

/// One run's usage against its [`CallLimits`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LimitCounter {
    model_calls: u64,
    tool_calls: u64,
    input_tokens: u64,
    output_tokens: u64,
    /// Calls counted by `ToolCallLimitMiddleware` (its run count takes blocked ones too).
    limited_calls: u64,
}

impl LimitCounter {
    /// Before a model call: whether `ModelCallLimitMiddleware` ends the run instead.
    pub fn before_model(&self, limits: &CallLimits) -> Option<LimitStop> {
        let m = limits.model_calls?;
        (self.model_calls >= m.limit).then_some(match m.exit {
            ExitBehavior::Error => LimitStop::Raise(LimitError::ModelCallLimitExceededError),
            ExitBehavior::End | ExitBehavior::Continue => LimitStop::End(Limited::ModelCalls),
        })
    }

    /// A response came back with these tokens: whether a token limit is now exceeded (Pydantic
    /// AI raises before acting on the response, whatever it holds).
    pub fn after_response(
        &mut self,
        limits: &CallLimits,
        input_tokens: u64,
        output_tokens: u64,
    ) -> Option<LimitStop> {
        self.model_calls += 1;
        self.input_tokens = self.input_tokens.saturating_add(input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(output_tokens);
        let u = &limits.usage;
        let over = |limit: Option<u64>, used: u64| limit.is_some_and(|l| used > l);
        let exceeded = over(u.input_tokens, self.input_tokens)
            || over(u.output_tokens, self.output_tokens)
            || over(
                u.total_tokens,
                self.input_tokens.saturating_add(self.output_tokens),
            );
        exceeded.then_some(LimitStop::Raise(LimitError::UsageLimitExceeded))
    }

    /// A reply's tool calls, by tool name in the reply's order: which of them run.
    pub fn before_tools(&mut self, limits: &CallLimits, tools: &[&str]) -> Tools {
        let n = tools.len() as u64;
        if let Some(l) = limits.usage.tool_calls {
            if self.tool_calls.saturating_add(n) > l {
                return Tools::Stop(LimitStop::Raise(LimitError::UsageLimitExceeded));
            }
            // loopsim's tools never raise for a retry, so every call counts as done.
            self.tool_calls += n;
        }
        let mut blocked = vec![false; tools.len()];
        if let Some(t) = &limits.tool_calls {
            let mut any = false;
            for (i, tool) in tools.iter().enumerate() {
                if t.tool.as_deref().is_some_and(|name| name != *tool) {
                    continue;
                }
                self.limited_calls += 1;
                if self.limited_calls > t.limit {
                    blocked[i] = true;
                    any = true;
                }
            }
            if any {
                match t.exit {
                    ExitBehavior::Continue => {}
                    ExitBehavior::End => return Tools::Stop(LimitStop::End(Limited::ToolCalls)),
                    ExitBehavior::Error => {
                        return Tools::Stop(LimitStop::Raise(
                            LimitError::ToolCallLimitExceededError,
                        ));
                    }
                }
            }
        }
        Tools::Run(blocked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(u: UsageLimits) -> CallLimits {
        CallLimits {
            usage: u,
            ..CallLimits::default()
        }
    }

    #[test]
    fn pydantic_tool_calls_limit_counts_the_whole_reply_and_allows_reaching_it() {
        let l = usage(UsageLimits {
            tool_calls: Some(3),
            ..UsageLimits::default()
        });
        let mut c = LimitCounter::default();
        assert_eq!(c.before_tools(&l, &["a"]), Tools::Run(vec![false]));
        // 1 + 2 = 3: exactly the limit, both run.
        assert_eq!(c.before_tools(&l, &["a", "b"]), Tools::Run(vec![false; 2]));
        assert_eq!(
            c.before_tools(&l, &["a"]),
            Tools::Stop(LimitStop::Raise(LimitError::UsageLimitExceeded))
        );
        let l = usage(UsageLimits {
            tool_calls: Some(2),
            ..UsageLimits::default()
        });
        let mut c = LimitCounter::default();
        c.before_tools(&l, &["a"]);
        assert!(matches!(c.before_tools(&l, &["a", "a"]), Tools::Stop(_)));
    }

    #[test]
    fn token_limits_trip_on_the_response_that_passes_them() {
        let l = usage(UsageLimits {
            total_tokens: Some(330),
            ..UsageLimits::default()
        });
        let mut c = LimitCounter::default();
        for _ in 0..3 {
            assert_eq!(c.after_response(&l, 100, 10), None, "330 is not above 330");
        }
        assert_eq!(
            c.after_response(&l, 100, 10),
            Some(LimitStop::Raise(LimitError::UsageLimitExceeded))
        );
        let l = usage(UsageLimits {
            output_tokens: Some(15),
            ..UsageLimits::default()
        });
        let mut c = LimitCounter::default();
        assert_eq!(c.after_response(&l, 5000, 10), None);
        assert!(c.after_response(&l, 0, 10).is_some());
        let l = usage(UsageLimits {
            input_tokens: Some(150),
            ..UsageLimits::default()
        });
        let mut c = LimitCounter::default();
        assert_eq!(c.after_response(&l, 100, 1000), None);
        assert!(c.after_response(&l, 100, 0).is_some());
    }

    #[test]
    fn model_call_limit_stops_before_the_call_past_it() {
        let mut l = CallLimits {
            model_calls: Some(ModelCallLimit {
                limit: 2,
                exit: ExitBehavior::End,
            }),
            ..CallLimits::default()
        };
        let mut c = LimitCounter::default();
        for _ in 0..2 {
            assert_eq!(c.before_model(&l), None);
            c.after_response(&l, 1, 1);
        }
        assert_eq!(
            c.before_model(&l),
            Some(LimitStop::End(Limited::ModelCalls))
        );
        assert_eq!(
            LimitStop::End(Limited::ModelCalls)
                .exit_reason()
                .to_string(),
            "model_call_limit_reached"
        );
        l.model_calls = Some(ModelCallLimit {
            limit: 2,
            exit: ExitBehavior::Error,
        });
        assert_eq!(
            c.before_model(&l),
            Some(LimitStop::Raise(LimitError::ModelCallLimitExceededError))
        );
        assert_eq!(l.graph_hooks(), (1, 1));
    }

    #[test]
    fn tool_call_limit_blocks_call_by_call_and_counts_blocked_ones() {
        let l = CallLimits {
            tool_calls: Some(ToolCallLimit {
                tool: Some("search".into()),
                limit: 2,
                exit: ExitBehavior::Continue,
            }),
            ..CallLimits::default()
        };
        let mut c = LimitCounter::default();
        // Other tools are not counted; the third search is blocked.
        assert_eq!(
            c.before_tools(&l, &["search", "read", "search", "search"]),
            Tools::Run(vec![false, false, false, true])
        );
        assert_eq!(c.before_tools(&l, &["read"]), Tools::Run(vec![false]));
        assert_eq!(c.before_tools(&l, &["search"]), Tools::Run(vec![true]));
        assert_eq!(l.graph_hooks(), (0, 1));
        for (exit, stop) in [
            (ExitBehavior::End, LimitStop::End(Limited::ToolCalls)),
            (
                ExitBehavior::Error,
                LimitStop::Raise(LimitError::ToolCallLimitExceededError),
            ),
        ] {
            let l = CallLimits {
                tool_calls: Some(ToolCallLimit {
                    tool: None,
                    limit: 1,
                    exit,
                }),
                ..CallLimits::default()
            };
            let mut c = LimitCounter::default();
            // One over the limit in a reply: none of the reply's calls runs.
            assert_eq!(c.before_tools(&l, &["a", "b"]), Tools::Stop(stop));
        }
    }
}
