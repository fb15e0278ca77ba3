//! The opt-in call limits' settings: Pydantic AI's `UsageLimits` fields and LangChain's
//! call-limit middleware, each checked as the runtime checks its arguments (what it refuses
//! with a `ValueError` is an error here).

use super::super::keys::nearest;
use super::super::{ConfigError, ConfigNote, EngineConfig};
use super::{MODEL_CALL_EXITS, TOOL_CALL_EXITS};
use crate::call_limits::{ExitBehavior, ModelCallLimit, ToolCallLimit};
use crate::profile::{GraphLayout, recursion_limit_cap};
use crate::yaml::{Node, Yaml};

fn bad(file: &str, n: &Node, key: &str, message: impl Into<String>) -> ConfigError {
    ConfigError::Value {
        file: file.to_string(),
        line: n.line,
        key: key.to_string(),
        message: message.into(),
    }
}

/// An integer of at least 0 or `null` (no limit); `Ok(None)` when the key is absent.
fn limit(
    root: &Node,
    key: &str,
    path: &str,
    file: &str,
) -> Result<Option<Option<u64>>, ConfigError> {
    let Some(n) = root.get(key) else {
        return Ok(None);
    };
    match n.value {
        Yaml::Null => Ok(Some(None)),
        Yaml::Int(v) if v >= 0 => Ok(Some(Some(u64::try_from(v).unwrap_or(u64::MAX)))),
        _ => Err(bad(
            file,
            n,
            path,
            "an integer of at least 0, or null for no limit",
        )),
    }
}

/// A section of arguments (a middleware's, the error handlers): a mapping whose keys are all
/// among `names`.
fn section<'a>(
    root: &'a Node,
    key: &str,
    names: &[&str],
    file: &str,
) -> Result<Option<&'a Node>, ConfigError> {
    let Some(n) = root.get(key) else {
        return Ok(None);
    };
    let Yaml::Map(pairs) = &n.value else {
        return Err(bad(
            file,
            n,
            key,
            format!("a mapping of `{key}`'s arguments"),
        ));
    };
    for (k, _) in pairs {
        let name = match &k.value {
            Yaml::Str(s) => s.as_str(),
            _ => "",
        };
        if !names.contains(&name) {
            let hint = nearest(name, names.iter().copied()).map_or_else(
                || format!(" (it takes: {})", names.join(", ")),
                |n| format!(" (did you mean `{n}`?)"),
            );
            return Err(bad(
                file,
                k,
                &format!("{key}.{name}"),
                format!("not an argument `{key}` takes{hint}"),
            ));
        }
    }
    Ok(Some(n))
}

fn exit_behavior(
    n: &Node,
    key: &str,
    allowed: &[&str],
    default: ExitBehavior,
    file: &str,
) -> Result<ExitBehavior, ConfigError> {
    let path = format!("{key}.exit_behavior");
    let Some(v) = n.get("exit_behavior") else {
        return Ok(default);
    };
    let word = match &v.value {
        Yaml::Str(s) => s.as_str(),
        _ => "",
    };
    if !allowed.contains(&word) {
        let hint = nearest(word, allowed.iter().copied())
            .map_or(String::new(), |w| format!(" (did you mean `{w}`?)"));
        return Err(bad(
            file,
            v,
            &path,
            format!("one of: {}{hint}", allowed.join(", ")),
        ));
    }
    Ok(match word {
        "continue" => ExitBehavior::Continue,
        "error" => ExitBehavior::Error,
        _ => ExitBehavior::End,
    })
}

impl EngineConfig {
    /// Pydantic AI's `UsageLimits` besides `request_limit`.
    pub(super) fn read_usage_limits(&mut self, root: &Node, file: &str) -> Result<(), ConfigError> {
        let u = &mut self.limits.usage;
        for (key, slot) in [
            ("tool_calls_limit", &mut u.tool_calls),
            ("input_tokens_limit", &mut u.input_tokens),
            ("output_tokens_limit", &mut u.output_tokens),
            ("total_tokens_limit", &mut u.total_tokens),
        ] {
            if let Some(v) = limit(root, key, key, file)? {
                *slot = v;
            }
        }
        Ok(())
    }

    /// A middleware's `run_limit` and `thread_limit`: at least one (LangChain refuses
    /// neither). Without a checkpointer, as loopsim runs LangGraph, LangChain keeps no
    /// thread count between invocations: a thread limit then counts one run, like a run
    /// limit (noted).
    fn middleware_limit(
        &mut self,
        n: &Node,
        key: &str,
        file: &str,
    ) -> Result<(u64, Option<u64>, Option<u64>), ConfigError> {
        let run = limit(n, "run_limit", &format!("{key}.run_limit"), file)?.flatten();
        let thread = limit(n, "thread_limit", &format!("{key}.thread_limit"), file)?.flatten();
        if let Some(t) = n.get("thread_limit").filter(|_| thread.is_some()) {
            self.notes.push(ConfigNote {
                line: t.line,
                key: format!("{key}.thread_limit"),
                message: "without a checkpointer LangChain starts the thread count over at \
                          each invoke, so it limits each run, as run_limit does"
                    .into(),
            });
        }
        match run.into_iter().chain(thread).min() {
            Some(l) => Ok((l, run, thread)),
            None => Err(bad(
                file,
                n,
                key,
                "run_limit or thread_limit: the middleware refuses neither (ValueError)",
            )),
        }
    }

    /// LangChain's `ModelCallLimitMiddleware` and `ToolCallLimitMiddleware`.
    pub(super) fn read_middleware(&mut self, root: &Node, file: &str) -> Result<(), ConfigError> {
        if let Some(n) = section(
            root,
            "model_call_limit",
            &["run_limit", "thread_limit", "exit_behavior"],
            file,
        )? {
            let (limit, _, _) = self.middleware_limit(n, "model_call_limit", file)?;
            let exit = exit_behavior(
                n,
                "model_call_limit",
                MODEL_CALL_EXITS,
                ExitBehavior::End,
                file,
            )?;
            self.limits.model_calls = Some(ModelCallLimit { limit, exit });
        }
        if let Some(n) = section(
            root,
            "tool_call_limit",
            &["tool_name", "run_limit", "thread_limit", "exit_behavior"],
            file,
        )? {
            let (limit, run, thread) = self.middleware_limit(n, "tool_call_limit", file)?;
            if let (Some(r), Some(t)) = (run, thread)
                && r > t
            {
                return Err(bad(
                    file,
                    n,
                    "tool_call_limit.run_limit",
                    format!(
                        "{r}: above thread_limit {t}, which the middleware refuses (ValueError)"
                    ),
                ));
            }
            let tool = match n.get("tool_name") {
                None => None,
                Some(v) => match &v.value {
                    Yaml::Null => None,
                    Yaml::Str(s) if !s.is_empty() => Some(s.clone()),
                    _ => {
                        return Err(bad(
                            file,
                            v,
                            "tool_call_limit.tool_name",
                            "a tool's name, or null for every tool",
                        ));
                    }
                },
            };
            let exit = exit_behavior(
                n,
                "tool_call_limit",
                TOOL_CALL_EXITS,
                ExitBehavior::Continue,
                file,
            )?;
            self.limits.tool_calls = Some(ToolCallLimit { tool, limit, exit });
        }
        Ok(())
    }

    /// LangGraph's `recursion_limit` with the middleware's hooks: the governor counts the
    /// steps, the cap in calls is their bound (a round whose calls are all blocked takes a
    /// step less, so the bound counts such rounds when a tool-call limit lets the loop go on).
    pub(super) fn set_recursion_limit(&mut self, limit: u64) {
        let layout = GraphLayout::create_agent(limit, self.limits.graph_hooks());
        let (mut calls, at_cap) = recursion_limit_cap(layout);
        if self
            .limits
            .tool_calls
            .as_ref()
            .is_some_and(|t| t.exit == ExitBehavior::Continue)
            && limit > layout.before_model
        {
            calls = (limit - layout.before_model - 1) / (layout.round() - 1) + 1;
        }
        self.max_iterations = calls;
        self.turn.at_cap = at_cap;
        self.turn.graph = Some(layout);
        self.cap_setting = Some(limit);
    }
}

impl EngineConfig {
    /// The OpenAI Agents SDK's `error_handlers`: `max_turns: true` stands for a handler that
    /// returns a final output (the run then ends at the cap without raising); `false` for
    /// none, or one that returns `None` (the SDK raises as usual). The SDK's other handlers
    /// answer for a model's refusal and an invalid final output, which loopsim's scripted
    /// models never give.
    pub(super) fn read_error_handlers(
        &mut self,
        root: &Node,
        file: &str,
    ) -> Result<(), ConfigError> {
        let Some(n) = section(root, "error_handlers", &["max_turns"], file)? else {
            return Ok(());
        };
        if let Some(v) = n.get("max_turns") {
            let Yaml::Bool(on) = v.value else {
                return Err(bad(
                    file,
                    v,
                    "error_handlers.max_turns",
                    "true (a handler that returns a final output) or false (none)",
                ));
            };
            self.turn.at_cap = if on {
                crate::turn::AtCap::HandledFinalOutput
            } else {
                crate::turn::AtCap::Raise(crate::turn::LimitError::MaxTurnsExceeded)
            };
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::ProfileName;
    use crate::yaml;

    fn read(profile: ProfileName, text: &str) -> Result<EngineConfig, ConfigError> {
        let root = yaml::parse(text).unwrap();
        EngineConfig::from_node(profile, None, &root, "c.yaml")
    }

    fn message(r: Result<EngineConfig, ConfigError>) -> String {
        r.unwrap_err().to_string()
    }

    #[test]
    fn pydantic_ai_reads_its_usage_limits() {
        let c = read(
            ProfileName::PydanticAi2_68,
            "tool_calls_limit: 4\ntotal_tokens_limit: 30000\ninput_tokens_limit: null\n",
        )
        .unwrap();
        let u = c.limits.usage;
        assert_eq!(
            (
                u.tool_calls,
                u.total_tokens,
                u.input_tokens,
                u.output_tokens
            ),
            (Some(4), Some(30000), None, None)
        );
        assert_ne!(
            c.fingerprint(),
            EngineConfig::new(ProfileName::PydanticAi2_68, None).fingerprint()
        );
        let m = message(read(
            ProfileName::PydanticAi2_68,
            "\noutput_tokens_limit: -1\n",
        ));
        assert!(
            m.contains("c.yaml:2") && m.contains("output_tokens_limit"),
            "{m}"
        );
        let m = message(read(ProfileName::PydanticAi2_68, "tool_call_limit: 3\n"));
        assert!(m.contains("did you mean `tool_calls_limit`"), "{m}");
    }

    #[test]
    fn langgraph_reads_the_middleware_and_refuses_what_langchain_refuses() {
        let c = read(
            ProfileName::LangGraph1_2,
            "recursion_limit: 25\nmodel_call_limit:\n  run_limit: 4\ntool_call_limit:\n  tool_name: search\n  thread_limit: 2\n  exit_behavior: end\n",
        )
        .unwrap();
        assert_eq!(
            c.limits.model_calls,
            Some(ModelCallLimit {
                limit: 4,
                exit: ExitBehavior::End
            })
        );
        let t = c.limits.tool_calls.as_ref().unwrap();
        assert_eq!(
            (t.tool.as_deref(), t.limit, t.exit),
            (Some("search"), 2, ExitBehavior::End)
        );
        // A thread limit acts as a run limit without a checkpointer: said, not silent.
        assert!(
            c.notes
                .iter()
                .any(|n| n.key == "tool_call_limit.thread_limit" && n.line == 6),
            "{:?}",
            c.notes
        );
        // Both middlewares' hooks: 1 before and 2 after each model call, 5 steps a round.
        let g = c.turn.graph.unwrap();
        assert_eq!((g.limit, g.before_model, g.after_model), (25, 1, 2));
        assert_eq!(c.max_iterations, 5);
        for (text, says) in [
            (
                "model_call_limit:\n  exit_behavior: end\n",
                "run_limit or thread_limit",
            ),
            (
                "model_call_limit:\n  run_limit: 2\n  exit_behavior: continue\n",
                "one of: end, error",
            ),
            (
                "tool_call_limit:\n  run_limit: 2\n  exit_behavior: contineu\n",
                "did you mean `continue`",
            ),
            (
                "tool_call_limit:\n  run_limit: 3\n  thread_limit: 2\n",
                "above thread_limit 2",
            ),
            (
                "tool_call_limit:\n  run_limt: 3\n",
                "did you mean `run_limit`",
            ),
            (
                "tool_call_limit:\n  run_limit: 3\n  tool_name: 7\n",
                "a tool's name",
            ),
            ("model_call_limit: 3\n", "a mapping"),
        ] {
            let m = message(read(ProfileName::LangGraph1_2, text));
            assert!(m.contains(says), "{text:?}: {m}");
            assert!(m.contains("c.yaml:"), "{m}");
        }
    }

    #[test]
    fn openai_agents_reads_its_max_turns_handler() {
        let c = read(
            ProfileName::OpenAiAgents0_24,
            "max_turns: 5\nerror_handlers:\n  max_turns: true\n",
        )
        .unwrap();
        assert_eq!(c.turn.at_cap, crate::turn::AtCap::HandledFinalOutput);
        assert_ne!(
            c.fingerprint(),
            read(ProfileName::OpenAiAgents0_24, "max_turns: 5\n")
                .unwrap()
                .fingerprint()
        );
        let m = message(read(
            ProfileName::OpenAiAgents0_24,
            "error_handlers:\n  max_turn: true\n",
        ));
        assert!(
            m.contains("c.yaml:2") && m.contains("did you mean `max_turns`"),
            "{m}"
        );
        let m = message(read(
            ProfileName::OpenAiAgents0_24,
            "error_handlers:\n  max_turns: handled\n",
        ));
        assert!(m.contains("true (a handler"), "{m}");
    }

    #[test]
    fn smolagents_reads_its_planning_interval() {
        let c = read(ProfileName::Smolagents1_26, "planning_interval: 3\n").unwrap();
        assert_eq!(c.turn.planning_interval, Some(3));
        let m = message(read(ProfileName::Smolagents1_26, "planning_interval: 0\n"));
        assert!(m.contains("c.yaml:1") && m.contains("at least 1"), "{m}");
        let m = message(read(ProfileName::Smolagents1_26, "planing_interval: 2\n"));
        assert!(m.contains("did you mean `planning_interval`"), "{m}");
    }

    #[test]
    fn a_tool_call_limit_that_lets_the_loop_go_on_widens_the_call_bound() {
        // Rounds whose calls are all blocked take 2 steps instead of 3.
        let c = read(
            ProfileName::LangGraph1_2,
            "recursion_limit: 25\ntool_call_limit:\n  run_limit: 3\n",
        )
        .unwrap();
        assert_eq!(c.max_iterations, 13);
        let c = read(
            ProfileName::LangGraph1_2,
            "recursion_limit: 25\ntool_call_limit:\n  run_limit: 3\n  exit_behavior: error\n",
        )
        .unwrap();
        assert_eq!(c.max_iterations, 9);
    }
}
