//! Engine profiles: named versions of a runtime's loop governance (Hermes's, and other agent
//! runtimes' ported from their packages). A profile is data, defaults plus switches, read by
//! the one engine; nothing is copied per version or per runtime.

use std::fmt;
use std::str::FromStr;

use crate::budget::UNLIMITED;
use crate::guardrails::GuardrailRules;
use crate::hash::ResultHashing;
use crate::observation::ObservationRules;
use crate::retry::ProviderRetry;
use crate::stuck::StuckThresholds;
use crate::turn::invalid_calls::InvalidCallRules;
use crate::turn::{AtCap, GraceMode, LimitError, OnEmptyReply, TurnRules};

/// The agent runtime whose governance a profile ports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Runtime {
    /// Hermes Agent (`hermes-agent`): the reference.
    Hermes,
    /// OpenAI Agents SDK (`openai-agents`): `Runner.run(..., max_turns=10)`.
    OpenAiAgents,
    /// Pydantic AI (`pydantic-ai-slim`): `agent.run(..., usage_limits=UsageLimits(...))`.
    PydanticAi,
    /// LangGraph, through LangChain's `create_agent`: `invoke(..., {"recursion_limit": L})`.
    LangGraph,
    /// smolagents (`smolagents`): `ToolCallingAgent(..., max_steps=20).run(task)`.
    Smolagents,
    /// The ReAct loop of the loop-design article: no package, its numbers.
    ReactLoop,
    /// OpenHands' agent SDK (`openhands-sdk`): `Conversation(agent, max_iteration_per_run=500)`.
    OpenHands,
}

impl Runtime {
    pub const ALL: [Runtime; 7] = [
        Runtime::Hermes,
        Runtime::OpenAiAgents,
        Runtime::PydanticAi,
        Runtime::LangGraph,
        Runtime::Smolagents,
        Runtime::ReactLoop,
        Runtime::OpenHands,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Runtime::Hermes => "hermes",
            Runtime::OpenAiAgents => "openai-agents",
            Runtime::PydanticAi => "pydantic-ai",
            Runtime::LangGraph => "langgraph",
            Runtime::Smolagents => "smolagents",
            Runtime::ReactLoop => "react-loop",
            Runtime::OpenHands => "openhands",
        }
    }

    /// The runtime's name in prose.
    pub fn title(self) -> &'static str {
        match self {
            Runtime::Hermes => "Hermes",
            Runtime::OpenAiAgents => "the OpenAI Agents SDK",
            Runtime::PydanticAi => "Pydantic AI",
            Runtime::LangGraph => "LangGraph",
            Runtime::Smolagents => "smolagents",
            Runtime::ReactLoop => "the article's ReAct loop",
            Runtime::OpenHands => "OpenHands",
        }
    }

    /// The setting that caps a run's model calls, in the runtime's own name.
    pub fn cap_key(self) -> &'static str {
        match self {
            Runtime::Hermes => "agent.max_turns",
            Runtime::OpenAiAgents => "max_turns",
            Runtime::PydanticAi => "request_limit",
            Runtime::LangGraph => "recursion_limit",
            Runtime::Smolagents => "max_steps",
            Runtime::ReactLoop => "max_iterations",
            Runtime::OpenHands => "max_iteration_per_run",
        }
    }

    /// The least value of [`Runtime::cap_key`] that lets a run of `calls` model calls end
    /// by answering: LangGraph counts a step for the model and one for its tools, and the run
    /// must end before the limit's last step.
    pub fn cap_for_calls(self, calls: u64) -> u64 {
        match self {
            Runtime::LangGraph => calls.saturating_mul(2),
            _ => calls,
        }
    }

    /// The PyPI package that holds the runtime's loop (the article's loop has none).
    pub fn package(self) -> &'static str {
        match self {
            Runtime::Hermes => "hermes-agent",
            Runtime::OpenAiAgents => "openai-agents",
            Runtime::PydanticAi => "pydantic-ai-slim",
            Runtime::LangGraph => "langgraph",
            Runtime::Smolagents => "smolagents",
            Runtime::ReactLoop => "none (the loop-design article)",
            Runtime::OpenHands => "openhands-sdk",
        }
    }
}

impl fmt::Display for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The versions loopsim can reproduce.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProfileName {
    /// The June 2026 article: 90/50, three children, 600 s child timeout, a grace call.
    Article2026_06,
    /// The PyPI wheel hermes-agent 0.19.0.
    Hermes0_19_0,
    /// Newest loop and guardrails without execute_code hash stripping: the incident version.
    HermesV0_21_5,
    /// The newest semantics, with the volatile-field fix.
    HermesMain,
    /// The OpenAI Agents SDK 0.24 (`openai-agents` 0.24.0 on PyPI).
    OpenAiAgents0_24,
    /// Pydantic AI 2.68 (`pydantic-ai-slim` 2.68.0 on PyPI).
    PydanticAi2_68,
    /// LangGraph 1.2 (`langgraph` 1.2.22) under LangChain 1.5's `create_agent`.
    LangGraph1_2,
    /// smolagents 1.26 (`smolagents` 1.26.0), its `ToolCallingAgent`.
    Smolagents1_26,
    /// The loop-design article's ReAct loop, from its numbers.
    ReactLoopArticle,
    /// OpenHands' agent SDK 1.58 (`openhands-sdk` 1.58.2).
    OpenHandsSdk1_58,
}

impl ProfileName {
    pub const ALL: [ProfileName; 10] = [
        ProfileName::Article2026_06,
        ProfileName::Hermes0_19_0,
        ProfileName::HermesV0_21_5,
        ProfileName::HermesMain,
        ProfileName::OpenAiAgents0_24,
        ProfileName::PydanticAi2_68,
        ProfileName::LangGraph1_2,
        ProfileName::Smolagents1_26,
        ProfileName::ReactLoopArticle,
        ProfileName::OpenHandsSdk1_58,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ProfileName::Article2026_06 => "article-2026-06",
            ProfileName::Hermes0_19_0 => "hermes-0.19.0",
            ProfileName::HermesV0_21_5 => "hermes-v0.21.5",
            ProfileName::HermesMain => "hermes-main",
            ProfileName::OpenAiAgents0_24 => "openai-agents-0.24",
            ProfileName::PydanticAi2_68 => "pydantic-ai-2.68",
            ProfileName::LangGraph1_2 => "langgraph-1.2",
            ProfileName::Smolagents1_26 => "smolagents-1.26",
            ProfileName::ReactLoopArticle => "react-loop-article",
            ProfileName::OpenHandsSdk1_58 => "openhands-sdk-1.58",
        }
    }

    pub fn runtime(self) -> Runtime {
        Profile::get(self).runtime
    }
}

impl fmt::Display for ProfileName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown profile name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown profile `{0}` (expected one of: article-2026-06, hermes-0.19.0, hermes-v0.21.5, hermes-main, openai-agents-0.24, pydantic-ai-2.68, langgraph-1.2, smolagents-1.26, react-loop-article, openhands-sdk-1.58)"
)]
pub struct UnknownProfile(pub String);

impl FromStr for ProfileName {
    type Err = UnknownProfile;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ProfileName::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| UnknownProfile(s.to_string()))
    }
}

/// How `agent.max_turns` is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MaxTurnsParsing {
    /// 0.19.0: any truthy value is used as is; falsy values give the default.
    Truthy,
    /// Newest `resolve_turn_limit`: null, 0, negatives and words like `unlimited` mean unlimited.
    ResolveTurnLimit,
}

/// Everything that differs between versions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Profile {
    pub name: ProfileName,
    pub runtime: Runtime,
    /// Default parent cap (`agent.max_turns`); [`UNLIMITED`] is Python's `sys.maxsize`.
    pub max_iterations: u64,
    pub max_turns_parsing: MaxTurnsParsing,
    pub turn: TurnRules,
    pub guardrails: GuardrailRules,
    pub child_max_iterations: u64,
    pub max_concurrent_children: u32,
    pub child_timeout_secs: Option<f64>,
    /// Top-level delegations go to the background and come back as a new message.
    pub background_delegation: bool,
    /// Hermes's tool-loop guardrails (`tool_loop_guardrails`); a runtime without them allows
    /// every call.
    pub tool_guardrails: bool,
    /// The runtime has Hermes's `delegate_task` (child agents with budgets of their own).
    pub delegation: bool,
    /// What the runtime does to tool results before the model sees them.
    pub observation: ObservationRules,
    /// OpenHands' stuck detector and its thresholds (`None`: the runtime has none).
    pub stuck_detection: Option<StuckThresholds>,
    /// How the runtime retries provider errors (`None`: loopsim has not proved the
    /// runtime's retries, and a scenario with provider faults is refused under it).
    pub provider_retry: Option<ProviderRetry>,
}

impl Profile {
    pub fn get(name: ProfileName) -> Profile {
        let summary = TurnRules::HERMES;
        let newest_turn = TurnRules {
            names_context_exhaustion: true,
            ..summary
        };
        let v0_19 = Profile {
            name,
            runtime: Runtime::Hermes,
            max_iterations: 90,
            max_turns_parsing: MaxTurnsParsing::Truthy,
            turn: summary,
            guardrails: GuardrailRules::V0_19,
            child_max_iterations: 50,
            max_concurrent_children: 3,
            child_timeout_secs: None,
            background_delegation: true,
            tool_guardrails: true,
            delegation: true,
            observation: ObservationRules::NONE,
            stuck_detection: None,
            provider_retry: Some(ProviderRetry::HERMES),
        };
        match name {
            ProfileName::Article2026_06 => Profile {
                turn: TurnRules {
                    grace: GraceMode::ExtraToolsFreeCall,
                    refund_extends_call_cap: true,
                    dedupe_identical_calls: false,
                    invalid_calls: None,
                    ..summary
                },
                child_timeout_secs: Some(600.0),
                background_delegation: false,
                provider_retry: None,
                ..v0_19
            },
            ProfileName::Hermes0_19_0 => v0_19,
            // Hermes raised the delegation defaults after 0.19 (PRs #86506 and #86745, first
            // in v0.20.2): a child's budget from 50 to 250 iterations, and from 3 to 10
            // children at once.
            ProfileName::HermesV0_21_5 => Profile {
                max_iterations: UNLIMITED,
                child_max_iterations: 250,
                max_concurrent_children: 10,
                turn: newest_turn,
                max_turns_parsing: MaxTurnsParsing::ResolveTurnLimit,
                guardrails: GuardrailRules {
                    result_hashing: ResultHashing::Plain,
                    ..GuardrailRules::NEWEST
                },
                ..v0_19
            },
            ProfileName::HermesMain => Profile {
                max_iterations: UNLIMITED,
                child_max_iterations: 250,
                max_concurrent_children: 10,
                turn: newest_turn,
                max_turns_parsing: MaxTurnsParsing::ResolveTurnLimit,
                guardrails: GuardrailRules::NEWEST,
                ..v0_19
            },
            // `Runner.run` counts every model call as a turn and raises `MaxTurnsExceeded`
            // before the call past `max_turns` (default 10); a reply with neither text nor
            // tool calls is the final output, "".
            ProfileName::OpenAiAgents0_24 => sdk(
                name,
                Runtime::OpenAiAgents,
                10,
                AtCap::Raise(LimitError::MaxTurnsExceeded),
                OnEmptyReply::FinalAnswer,
            ),
            // `UsageLimits.request_limit` (default 50) counts model requests and raises
            // `UsageLimitExceeded` before the one past it; an empty reply gets one retry
            // request per run (the output-retry budget), the next raises
            // `UnexpectedModelBehavior`.
            ProfileName::PydanticAi2_68 => sdk(
                name,
                Runtime::PydanticAi,
                50,
                AtCap::Raise(LimitError::UsageLimitExceeded),
                OnEmptyReply::RetryThenRaise {
                    retries: 1,
                    error: LimitError::UnexpectedModelBehavior,
                },
            ),
            // Every node run is a graph step: the model's, then the tools' (all of a reply's
            // calls in one). A run must end within recursion_limit - 1 steps, else
            // GraphRecursionError; create_agent binds 9,999. See `recursion_limit_cap`. An
            // AI message with neither text nor tool calls ends the graph.
            ProfileName::LangGraph1_2 => {
                let layout = GraphLayout::create_agent(LANGGRAPH_CREATE_AGENT_LIMIT, (0, 0));
                let (max_iterations, at_cap) = recursion_limit_cap(layout);
                let mut p = sdk(
                    name,
                    Runtime::LangGraph,
                    max_iterations,
                    at_cap,
                    OnEmptyReply::FinalAnswer,
                );
                p.turn.graph = Some(layout);
                p
            }
            // A `ToolCallingAgent` run takes at most `max_steps` steps (default 20), one model
            // call each; a run still without an answer then makes one tools-free call whose
            // text is the final answer (`max_steps_error`). The model answers by calling the
            // `final_answer` tool; a reply without a usable tool call (an empty one) fails
            // its step, and the loop goes on.
            ProfileName::Smolagents1_26 => sdk(
                name,
                Runtime::Smolagents,
                20,
                AtCap::FinalAnswerCall,
                OnEmptyReply::ErrorStep,
            ),
            // The article's ReAct loop: 12 iterations, then a tools-free final summary call;
            // a total-token budget and the user's stop checked between rounds; tools timed
            // out at 30 s, results cut to their first 2,000 characters, a hint to change
            // strategy after 3 failures of one tool (`observation`). A reply with no action
            // to parse is a failed iteration, and the second such in a row brings a
            // format-error observation (`invalid_calls`). Its token budget has no figure in the article:
            // 200,000 is loopsim's (`max_total_tokens`).
            ProfileName::ReactLoopArticle => {
                let mut p = sdk(
                    name,
                    Runtime::ReactLoop,
                    REACT_LOOP_ITERATIONS,
                    AtCap::MaxIterationsReached,
                    OnEmptyReply::ErrorStep,
                );
                p.turn.grace = GraceMode::SummaryCall;
                p.turn.token_budget = Some(REACT_LOOP_TOKEN_BUDGET);
                p.turn.invalid_calls = Some(InvalidCallRules::REACT_LOOP);
                p.observation = ObservationRules::REACT_LOOP_ARTICLE;
                p
            }
            // A conversation's `run()` makes at most `max_iteration_per_run` steps (500), one
            // model call each, checked after each step: then status ERROR and no further
            // call. Before every step the stuck detector reads the last events and stops the
            // run (status STUCK) when they repeat. A reply with neither text nor tool calls
            // gets a nudge and the loop goes on (three in a row are stuck).
            ProfileName::OpenHandsSdk1_58 => {
                let mut p = sdk(
                    name,
                    Runtime::OpenHands,
                    500,
                    AtCap::ConversationError,
                    OnEmptyReply::ErrorStep,
                );
                p.stuck_detection = Some(StuckThresholds::DEFAULT);
                p
            }
        }
    }
}

/// An agent SDK's profile: a cap and what reaching it does, its empty-reply rule, and what
/// none of the SDKs ported so far has: no refunds, no de-duplication of identical calls, no
/// tool-loop guardrails, no `delegate_task`.
fn sdk(
    name: ProfileName,
    runtime: Runtime,
    max_iterations: u64,
    at_cap: AtCap,
    on_empty_reply: OnEmptyReply,
) -> Profile {
    Profile {
        name,
        runtime,
        max_iterations,
        max_turns_parsing: MaxTurnsParsing::Truthy,
        turn: TurnRules {
            grace: GraceMode::None,
            refund_extends_call_cap: false,
            dedupe_identical_calls: false,
            names_context_exhaustion: false,
            refund_execute_code: false,
            at_cap,
            on_empty_reply,
            token_budget: None,
            graph: None,
            planning_interval: None,
            invalid_calls: None,
        },
        guardrails: GuardrailRules::V0_19,
        child_max_iterations: 50,
        max_concurrent_children: 3,
        child_timeout_secs: None,
        background_delegation: false,
        tool_guardrails: false,
        delegation: false,
        observation: ObservationRules::NONE,
        stuck_detection: None,
        provider_retry: None,
    }
}

/// The article loop's iteration cap (it names 30 to 50 for exploration tasks).
pub const REACT_LOOP_ITERATIONS: u64 = 12;

/// The article loop's total-token budget: the article sets one without a figure; this is
/// loopsim's default (`max_total_tokens`).
pub const REACT_LOOP_TOKEN_BUDGET: u64 = 200_000;

/// The recursion limit LangChain's `create_agent` binds (`langchain/agents/factory.py`).
pub const LANGGRAPH_CREATE_AGENT_LIMIT: u64 = 9_999;

/// How LangChain's `create_agent` graph spends LangGraph's steps: every node run is one, and
/// the run raises `GraphRecursionError` once step `limit` has run without the graph ending
/// (a graph that ends at step `limit` itself raises too). A round is the middleware's
/// `before_model` hooks, the model, its `after_model` hooks, then the tools (all of a reply's
/// calls in one step, none when every call was blocked).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GraphLayout {
    /// `recursion_limit`.
    pub limit: u64,
    pub before_model: u64,
    pub after_model: u64,
}

impl GraphLayout {
    /// `limit` with `(before, after)` hook nodes per round ([`crate::call_limits::CallLimits::graph_hooks`]).
    pub fn create_agent(limit: u64, (before_model, after_model): (u64, u64)) -> GraphLayout {
        GraphLayout {
            limit,
            before_model,
            after_model,
        }
    }

    /// Steps of a round whose tools run.
    pub fn round(self) -> u64 {
        self.before_model + self.after_model + 2
    }

    /// The least recursion limit that lets a run of `calls` model calls end by answering
    /// with these hooks: the last call's hooks and the end before the last step.
    pub fn limit_for_calls(self, calls: u64) -> u64 {
        calls.saturating_mul(self.round())
    }
}

/// A LangGraph layout as a call cap, when every round runs its tools: the model runs at
/// steps `before + 1`, `before + 1 + round`, ... So `(L - before - 1) / round + 1` model
/// calls; the last one's reply is acted on (its tools run, its text is the answer) only if
/// its round fits in L, else the run raises right after it. Without middleware: the model at
/// the odd steps, its tools at the even ones, ceil(L/2) calls, and an odd L drops the last
/// reply. Rounds whose calls are all blocked take a step less: the governor counts steps
/// ([`crate::turn::TurnRules::graph`]), this is the bound it starts from.
pub fn recursion_limit_cap(g: GraphLayout) -> (u64, AtCap) {
    if g.limit < g.before_model + 1 {
        return (0, AtCap::Raise(LimitError::GraphRecursionError));
    }
    let calls = (g.limit - g.before_model - 1) / g.round() + 1;
    let at_cap = if calls * g.round() > g.limit {
        AtCap::RaiseDroppingLastReply(LimitError::GraphRecursionError)
    } else {
        AtCap::Raise(LimitError::GraphRecursionError)
    };
    (calls, at_cap)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for p in ProfileName::ALL {
            assert_eq!(p.as_str().parse::<ProfileName>().unwrap(), p);
        }
        assert!("hermes-9".parse::<ProfileName>().is_err());
    }

    #[test]
    fn profiles_differ_where_versions_did() {
        let main = Profile::get(ProfileName::HermesMain);
        let v0215 = Profile::get(ProfileName::HermesV0_21_5);
        assert_eq!(
            main.guardrails.result_hashing,
            ResultHashing::StripExecuteCodeVolatile
        );
        assert_eq!(v0215.guardrails.result_hashing, ResultHashing::Plain);
        assert!(v0215.guardrails.stall_guards);
        assert_eq!(main.max_iterations, UNLIMITED);
        let old = Profile::get(ProfileName::Hermes0_19_0);
        assert!(!old.guardrails.stall_guards && !old.guardrails.loop_caps);
        let article = Profile::get(ProfileName::Article2026_06);
        assert_eq!(article.turn.grace, GraceMode::ExtraToolsFreeCall);
        assert_eq!(article.child_timeout_secs, Some(600.0));
        // Delegation defaults: 50 iterations and 3 at once in 0.19.0, 250 and 10 from v0.20.2.
        assert_eq!(
            (old.child_max_iterations, old.max_concurrent_children),
            (50, 3)
        );
        for newer in [main, v0215] {
            assert_eq!(
                (newer.child_max_iterations, newer.max_concurrent_children),
                (250, 10)
            );
        }
    }

    #[test]
    fn openai_agents_is_its_own_runtime_with_the_sdks_defaults() {
        let p = Profile::get(ProfileName::OpenAiAgents0_24);
        assert_eq!(p.runtime, Runtime::OpenAiAgents);
        // DEFAULT_MAX_TURNS in the SDK's run_config.py.
        assert_eq!(p.max_iterations, 10);
        assert_eq!(p.turn.at_cap, AtCap::Raise(LimitError::MaxTurnsExceeded));
        assert_eq!(p.turn.grace, GraceMode::None);
        assert_eq!(p.turn.on_empty_reply, OnEmptyReply::FinalAnswer);
        assert!(!p.turn.dedupe_identical_calls && !p.turn.refund_execute_code);
        assert!(!p.tool_guardrails && !p.delegation);
        let p = Profile::get(ProfileName::PydanticAi2_68);
        assert_eq!(p.runtime, Runtime::PydanticAi);
        // UsageLimits.request_limit's default in usage.py.
        assert_eq!(p.max_iterations, 50);
        assert_eq!(p.turn.at_cap, AtCap::Raise(LimitError::UsageLimitExceeded));
        assert_eq!(
            p.turn.on_empty_reply,
            OnEmptyReply::RetryThenRaise {
                retries: 1,
                error: LimitError::UnexpectedModelBehavior
            }
        );
        let p = Profile::get(ProfileName::Smolagents1_26);
        assert_eq!(p.runtime, Runtime::Smolagents);
        // MultiStepAgent's max_steps default in agents.py.
        assert_eq!(p.max_iterations, 20);
        assert_eq!(p.turn.at_cap, AtCap::FinalAnswerCall);
        assert_eq!(p.turn.on_empty_reply, OnEmptyReply::ErrorStep);
        assert_eq!(Runtime::Smolagents.cap_for_calls(41), 41);
        for name in ProfileName::ALL {
            let hermes = name.runtime() == Runtime::Hermes;
            assert_eq!(Profile::get(name).tool_guardrails, hermes, "{name}");
        }
    }
}
