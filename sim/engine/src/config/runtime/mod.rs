//! Other runtimes' settings, in each runtime's own key names: what a user passes to that
//! runtime (`Runner.run(..., max_turns=25)` is `max_turns: 25`), read on top of the profile's
//! defaults. Hermes's keys are read by [`super::read`]; a runtime reads only its own table.

mod limit_settings;

use super::keys::{KeyKind, KeySpec, ReadBy, nearest};
use super::{ConfigError, ConfigNote, EngineConfig};
use crate::profile::{ProfileName, Runtime};
use crate::turn::invalid_calls::MalformedArgs;
use crate::yaml::{Node, Yaml};

const fn key(path: &'static str, kind: KeyKind) -> KeySpec {
    KeySpec {
        path,
        kind,
        read_by: ReadBy::All,
        alias: None,
    }
}

/// OpenAI Agents SDK: the arguments of `Runner.run` that govern the loop.
const OPENAI_AGENTS: &[KeySpec] = &[
    key("max_turns", KeyKind::Int { min: 0 }),
    key("error_handlers", KeyKind::Section),
    key("error_handlers.max_turns", KeyKind::Bool),
];

/// Pydantic AI: the fields of `UsageLimits` loopsim simulates (`usage_limits=` of `run`).
const PYDANTIC_AI: &[KeySpec] = &[
    key("request_limit", KeyKind::Int { min: 0 }),
    key("tool_calls_limit", KeyKind::Int { min: 0 }),
    key("input_tokens_limit", KeyKind::Int { min: 0 }),
    key("output_tokens_limit", KeyKind::Int { min: 0 }),
    key("total_tokens_limit", KeyKind::Int { min: 0 }),
];

/// `exit_behavior` of LangChain's `ModelCallLimitMiddleware`.
pub const MODEL_CALL_EXITS: &[&str] = &["end", "error"];
/// `exit_behavior` of LangChain's `ToolCallLimitMiddleware`.
pub const TOOL_CALL_EXITS: &[&str] = &["continue", "error", "end"];

/// LangGraph: the run's config (`invoke(..., config={"recursion_limit": L})`), and
/// LangChain's call-limit middleware, by its constructor's arguments.
const LANGGRAPH: &[KeySpec] = &[
    key("recursion_limit", KeyKind::Int { min: 1 }),
    key("model_call_limit", KeyKind::Section),
    key("model_call_limit.run_limit", KeyKind::Int { min: 0 }),
    key("model_call_limit.thread_limit", KeyKind::Int { min: 0 }),
    key(
        "model_call_limit.exit_behavior",
        KeyKind::Choice(MODEL_CALL_EXITS),
    ),
    key("tool_call_limit", KeyKind::Section),
    key("tool_call_limit.tool_name", KeyKind::Text),
    key("tool_call_limit.run_limit", KeyKind::Int { min: 0 }),
    key("tool_call_limit.thread_limit", KeyKind::Int { min: 0 }),
    key(
        "tool_call_limit.exit_behavior",
        KeyKind::Choice(TOOL_CALL_EXITS),
    ),
];

/// smolagents: the agent's own `max_steps` (`ToolCallingAgent(..., max_steps=N)`).
const SMOLAGENTS: &[KeySpec] = &[
    key("max_steps", KeyKind::Int { min: 1 }),
    key("planning_interval", KeyKind::Int { min: 1 }),
];

/// The article's ReAct loop: its numbers, in loopsim's names (the article names none).
const REACT_LOOP: &[KeySpec] = &[
    key("max_iterations", KeyKind::Int { min: 0 }),
    key("max_total_tokens", KeyKind::Int { min: 1 }),
    key("tool_timeout_s", KeyKind::Seconds),
    key("max_observation_chars", KeyKind::Int { min: 1 }),
    key("failure_hint_after", KeyKind::Int { min: 1 }),
    key("format_error_after", KeyKind::Int { min: 1 }),
    key("trim_context_at", KeyKind::Fraction),
];

/// OpenHands: the arguments of `Conversation(...)` that govern the loop.
const OPENHANDS: &[KeySpec] = &[
    key("max_iteration_per_run", KeyKind::Int { min: 0 }),
    key("stuck_detection", KeyKind::Bool),
    key("stuck_detection_thresholds", KeyKind::Section),
    key(
        "stuck_detection_thresholds.action_observation",
        KeyKind::Int { min: 1 },
    ),
    key(
        "stuck_detection_thresholds.action_error",
        KeyKind::Int { min: 1 },
    ),
    key(
        "stuck_detection_thresholds.monologue",
        KeyKind::Int { min: 1 },
    ),
    key(
        "stuck_detection_thresholds.alternating_pattern",
        KeyKind::Int { min: 1 },
    ),
];

/// The keys `runtime` reads (empty for Hermes, whose table is [`super::keys::SIMULATED`]).
pub fn keys(runtime: Runtime) -> &'static [KeySpec] {
    match runtime {
        Runtime::Hermes => &[],
        Runtime::OpenAiAgents => OPENAI_AGENTS,
        Runtime::PydanticAi => PYDANTIC_AI,
        Runtime::LangGraph => LANGGRAPH,
        Runtime::Smolagents => SMOLAGENTS,
        Runtime::ReactLoop => REACT_LOOP,
        Runtime::OpenHands => OPENHANDS,
    }
}

/// Whether `runtime` reads the setting `path` (Hermes: one of its simulated keys).
pub fn reads(runtime: Runtime, path: &str) -> bool {
    match runtime {
        Runtime::Hermes => super::keys::lookup(path).is_some(),
        r => keys(r).iter().any(|k| k.path == path),
    }
}

/// The setting `path` of any runtime other than Hermes.
pub fn lookup(path: &str) -> Option<&'static KeySpec> {
    Runtime::ALL
        .into_iter()
        .flat_map(keys)
        .find(|k| k.path == path)
}

/// A key of a config tree that `profile`'s runtime does not read, with its line and the
/// nearest key it does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownKey {
    pub line: usize,
    pub key: String,
    pub suggestion: Option<&'static str>,
    pub profile: ProfileName,
}

impl UnknownKey {
    pub fn message(&self) -> String {
        let known: Vec<&str> = keys(self.profile.runtime())
            .iter()
            .map(|k| k.path)
            .collect();
        match self.suggestion {
            Some(s) => format!("not a setting {} reads (did you mean `{s}`?)", self.profile),
            None => format!(
                "not a setting {} reads (it reads: {})",
                self.profile,
                known.join(", ")
            ),
        }
    }
}

/// Every top-level key of `root` that `profile`'s runtime does not read, in file order.
pub fn unknown_keys(root: &Node, profile: ProfileName) -> Vec<UnknownKey> {
    let table = keys(profile.runtime());
    let Yaml::Map(pairs) = &root.value else {
        return Vec::new();
    };
    pairs
        .iter()
        .filter_map(|(k, _)| {
            let name = match &k.value {
                Yaml::Str(s) => s.clone(),
                other => format!("{other:?}"),
            };
            (!table.iter().any(|t| t.path == name)).then(|| UnknownKey {
                line: k.line,
                suggestion: nearest(&name, table.iter().map(|t| t.path)),
                key: name,
                profile,
            })
        })
        .collect()
}

impl EngineConfig {
    /// A runtime's cap on model calls: an integer; 0 or less means no call at all (noted).
    fn read_cap(
        &mut self,
        root: &Node,
        key: &str,
        raised: &str,
        file: &str,
    ) -> Result<(), ConfigError> {
        let Some(n) = root.get(key) else {
            return Ok(());
        };
        let Yaml::Int(v) = n.value else {
            return Err(ConfigError::Value {
                file: file.to_string(),
                line: n.line,
                key: key.to_string(),
                message: "an integer, the number of model calls a run may make".into(),
            });
        };
        if v <= 0 {
            // The runtime accepts it and raises before the first model call.
            self.notes.push(ConfigNote {
                line: n.line,
                key: key.to_string(),
                message: format!("{v}: the run raises {raised} before its first model call"),
            });
        }
        self.max_iterations = u64::try_from(v.max(0)).unwrap_or(u64::MAX);
        self.cap_setting = Some(self.max_iterations);
        Ok(())
    }

    /// The article loop's settings; `null` turns a limit off (the cap excepted).
    fn read_react_loop(&mut self, root: &Node, file: &str) -> Result<(), ConfigError> {
        let bad = |n: &Node, key: &str, message: &str| ConfigError::Value {
            file: file.to_string(),
            line: n.line,
            key: key.to_string(),
            message: message.to_string(),
        };
        // An integer of at least `min`, or `null` for none.
        let int = |key: &str, min: i128, what: &str| -> Result<Option<Option<u64>>, ConfigError> {
            let Some(n) = root.get(key) else {
                return Ok(None);
            };
            match n.value {
                Yaml::Null if key != "max_iterations" => Ok(Some(None)),
                Yaml::Int(v) if v >= min => Ok(Some(Some(u64::try_from(v).unwrap_or(u64::MAX)))),
                _ => Err(bad(n, key, what)),
            }
        };
        if let Some(Some(v)) = int("max_iterations", 0, "an integer of at least 0, iterations")? {
            self.max_iterations = v;
            self.cap_setting = Some(v);
        }
        if let Some(v) = int(
            "max_total_tokens",
            1,
            "an integer of at least 1 (tokens), or null for no budget",
        )? {
            self.turn.token_budget = v;
        }
        if let Some(v) = int(
            "max_observation_chars",
            1,
            "an integer of at least 1 (characters), or null for whole results",
        )? {
            self.observation.max_chars = v.map(|c| usize::try_from(c).unwrap_or(usize::MAX));
        }
        if let Some(v) = int(
            "failure_hint_after",
            1,
            "an integer of at least 1 (failures in a row), or null for no hint",
        )? {
            self.observation.failure_hint_after = v.map(|c| u32::try_from(c).unwrap_or(u32::MAX));
        }
        if let Some(v) = int(
            "format_error_after",
            1,
            "an integer of at least 1 (parse failures in a row), or null for no format-error observation",
        )? {
            let format_error_after = v.map(|c| u32::try_from(c).unwrap_or(u32::MAX));
            if let Some(r) = &mut self.turn.invalid_calls {
                r.malformed_args = MalformedArgs::FailedIteration { format_error_after };
            }
        }
        if let Some(n) = root.get("trim_context_at") {
            self.observation.trim_context_at = match n.value {
                Yaml::Null => None,
                Yaml::Int(1) => Some(1.0),
                Yaml::Float(v) if v > 0.0 && v <= 1.0 => Some(v),
                _ => {
                    return Err(bad(
                        n,
                        "trim_context_at",
                        "a share of the window above 0 and at most 1, or null for no trimming",
                    ));
                }
            };
        }
        if let Some(n) = root.get("tool_timeout_s") {
            let secs = match n.value {
                Yaml::Null => None,
                Yaml::Int(v) if v > 0 => Some(v as f64),
                Yaml::Float(v) if v > 0.0 && v.is_finite() => Some(v),
                _ => {
                    return Err(bad(
                        n,
                        "tool_timeout_s",
                        "a number of seconds above 0, or null for no timeout",
                    ));
                }
            };
            self.observation.tool_timeout_s = secs;
        }
        Ok(())
    }

    /// OpenHands' settings: the cap, and the stuck detector (off, or its thresholds).
    fn read_openhands(&mut self, root: &Node, file: &str) -> Result<(), ConfigError> {
        let bad = |n: &Node, key: &str, message: String| ConfigError::Value {
            file: file.to_string(),
            line: n.line,
            key: key.to_string(),
            message,
        };
        if let Some(n) = root.get("max_iteration_per_run") {
            let Yaml::Int(v) = n.value else {
                return Err(bad(n, "max_iteration_per_run", "an integer, steps".into()));
            };
            if v < 0 {
                return Err(bad(
                    n,
                    "max_iteration_per_run",
                    format!("{v}: a number of steps of at least 0"),
                ));
            }
            if v == 0 {
                // The cap is checked after each step: the first one always runs.
                self.notes.push(ConfigNote {
                    line: n.line,
                    key: "max_iteration_per_run".into(),
                    message: "0: OpenHands checks it after each step, so one step runs".into(),
                });
            }
            self.max_iterations = u64::try_from(v.max(1)).unwrap_or(u64::MAX);
            self.cap_setting = Some(u64::try_from(v).unwrap_or(u64::MAX));
        }
        if let Some(n) = root.get("stuck_detection") {
            let Yaml::Bool(on) = n.value else {
                return Err(bad(n, "stuck_detection", "true or false".into()));
            };
            self.stuck = on.then_some(crate::stuck::StuckThresholds::DEFAULT);
        }
        if let Some(t) = root.get("stuck_detection_thresholds") {
            let Yaml::Map(pairs) = &t.value else {
                return Err(bad(
                    t,
                    "stuck_detection_thresholds",
                    "a mapping of thresholds".into(),
                ));
            };
            let mut th = self.stuck.unwrap_or(crate::stuck::StuckThresholds::DEFAULT);
            let names = [
                "action_observation",
                "action_error",
                "monologue",
                "alternating_pattern",
            ];
            for (k, v) in pairs {
                let name = match &k.value {
                    Yaml::Str(s) => s.as_str(),
                    _ => "",
                };
                let path = format!("stuck_detection_thresholds.{name}");
                let Some(slot) = (match name {
                    "action_observation" => Some(&mut th.action_observation),
                    "action_error" => Some(&mut th.action_error),
                    "monologue" => Some(&mut th.monologue),
                    "alternating_pattern" => Some(&mut th.alternating_pattern),
                    _ => None,
                }) else {
                    let hint = nearest(name, names.iter().copied())
                        .map_or(String::new(), |n| format!(" (did you mean `{n}`?)"));
                    return Err(bad(
                        k,
                        &path,
                        format!("not a threshold OpenHands has{hint}"),
                    ));
                };
                match v.value {
                    Yaml::Int(x) if x >= 1 => *slot = usize::try_from(x).unwrap_or(usize::MAX),
                    _ => return Err(bad(v, &path, "an integer of at least 1".into())),
                }
            }
            if self.stuck.is_some() || root.get("stuck_detection").is_none() {
                self.stuck = Some(th);
            }
        }
        Ok(())
    }

    /// Reads a non-Hermes runtime's settings. Values are checked strictly: the runtime takes
    /// them as Python arguments, where a wrong type is an error, not a default.
    pub(super) fn read_runtime(&mut self, root: &Node, file: &str) -> Result<(), ConfigError> {
        let bad = |n: &Node, key: &str, message: String| ConfigError::Value {
            file: file.to_string(),
            line: n.line,
            key: key.to_string(),
            message,
        };
        match &root.value {
            Yaml::Null => return Ok(()),
            Yaml::Map(_) => {}
            _ => return Err(bad(root, "(top level)", "not a mapping of settings".into())),
        }
        if let Some(u) = unknown_keys(root, self.profile).first() {
            return Err(ConfigError::Value {
                file: file.to_string(),
                line: u.line,
                key: u.key.clone(),
                message: u.message(),
            });
        }
        match self.profile.runtime() {
            Runtime::Hermes => unreachable!("Hermes's keys are read by EngineConfig::read"),
            Runtime::OpenAiAgents => {
                self.read_cap(root, "max_turns", "MaxTurnsExceeded", file)?;
                self.read_error_handlers(root, file)?;
            }
            Runtime::PydanticAi => {
                self.read_cap(root, "request_limit", "UsageLimitExceeded", file)?;
                self.read_usage_limits(root, file)?;
            }
            Runtime::LangGraph => {
                self.read_middleware(root, file)?;
                let mut limit = self
                    .cap_setting
                    .unwrap_or(crate::profile::LANGGRAPH_CREATE_AGENT_LIMIT);
                if let Some(n) = root.get("recursion_limit") {
                    let Yaml::Int(v) = n.value else {
                        return Err(bad(n, "recursion_limit", "an integer, graph steps".into()));
                    };
                    if v < 1 {
                        // LangGraph refuses it (ValueError) before the run starts.
                        return Err(bad(
                            n,
                            "recursion_limit",
                            format!("{v}: LangGraph requires at least 1"),
                        ));
                    }
                    limit = u64::try_from(v).unwrap_or(u64::MAX);
                }
                self.set_recursion_limit(limit);
            }
            Runtime::Smolagents => {
                if let Some(n) = root.get("max_steps") {
                    let Yaml::Int(v) = n.value else {
                        return Err(bad(n, "max_steps", "an integer, the run's steps".into()));
                    };
                    if v < 1 {
                        // No step runs, and the run fails after (0) or instead of (below 0)
                        // its final-answer call, with an UnboundLocalError.
                        return Err(bad(
                            n,
                            "max_steps",
                            format!("{v}: smolagents fails on a max_steps below 1"),
                        ));
                    }
                    self.max_iterations = u64::try_from(v).unwrap_or(u64::MAX);
                    self.cap_setting = Some(self.max_iterations);
                }
                if let Some(n) = root.get("planning_interval") {
                    self.turn.planning_interval = match n.value {
                        Yaml::Null => None,
                        Yaml::Int(v) if v >= 1 => Some(u64::try_from(v).unwrap_or(u64::MAX)),
                        // smolagents divides by it: 0 fails the run (ZeroDivisionError).
                        _ => {
                            return Err(bad(
                                n,
                                "planning_interval",
                                "an integer of at least 1 (steps), or null for no planning".into(),
                            ));
                        }
                    };
                }
            }
            Runtime::ReactLoop => self.read_react_loop(root, file)?,
            Runtime::OpenHands => self.read_openhands(root, file)?,
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml;

    fn read(text: &str) -> Result<EngineConfig, ConfigError> {
        let root = yaml::parse(text).unwrap();
        EngineConfig::from_node(ProfileName::OpenAiAgents0_24, None, &root, "c.yaml")
    }

    #[test]
    fn openai_agents_reads_max_turns_and_nothing_else() {
        assert_eq!(read("").unwrap().max_iterations, 10);
        assert_eq!(read("max_turns: 25\n").unwrap().max_iterations, 25);
        let zero = read("max_turns: 0\n").unwrap();
        assert_eq!(zero.max_iterations, 0);
        assert_eq!(zero.notes[0].key, "max_turns");
        let typo = read("max_turns: 5\nmax_turn: 4\n").unwrap_err().to_string();
        assert!(typo.contains("c.yaml:2"), "{typo}");
        assert!(typo.contains("did you mean `max_turns`"), "{typo}");
        let hermes = read("agent:\n  max_turns: 4\n").unwrap_err().to_string();
        assert!(hermes.contains("openai-agents-0.24"), "{hermes}");
        let word = read("max_turns: ten\n").unwrap_err().to_string();
        assert!(word.contains("an integer"), "{word}");
    }

    #[test]
    fn langgraph_reads_recursion_limit_as_graph_steps() {
        let read = |text: &str| {
            let root = yaml::parse(text).unwrap();
            EngineConfig::from_node(ProfileName::LangGraph1_2, None, &root, "g.yaml")
        };
        let d = read("").unwrap();
        assert_eq!((d.max_iterations, d.cap_setting), (5000, Some(9_999)));
        let c = read("recursion_limit: 25\n").unwrap();
        assert_eq!((c.max_iterations, c.cap_setting), (13, Some(25)));
        assert!(matches!(
            c.turn.at_cap,
            crate::turn::AtCap::RaiseDroppingLastReply(_)
        ));
        let even = read("recursion_limit: 24\n").unwrap();
        assert!(matches!(even.turn.at_cap, crate::turn::AtCap::Raise(_)));
        let zero = read("recursion_limit: 0\n").unwrap_err().to_string();
        assert!(
            zero.contains("g.yaml:1") && zero.contains("at least 1"),
            "{zero}"
        );
    }

    #[test]
    fn a_runtime_cap_that_acts_differently_has_its_own_fingerprint() {
        let lg = |t: &str| {
            let root = yaml::parse(t).unwrap();
            EngineConfig::from_node(ProfileName::LangGraph1_2, None, &root, "c.yaml")
                .unwrap()
                .fingerprint()
        };
        // Both allow 12 model calls; only 24 acts on the last one's reply.
        assert_ne!(lg("recursion_limit: 23\n"), lg("recursion_limit: 24\n"));
        assert_eq!(lg("recursion_limit: 24\n"), lg("recursion_limit: 24\n"));
    }

    #[test]
    fn the_article_loop_reads_its_limits_and_null_turns_one_off() {
        let read = |t: &str| {
            let root = yaml::parse(t).unwrap();
            EngineConfig::from_node(ProfileName::ReactLoopArticle, None, &root, "c.yaml")
        };
        let d = read("{}\n").unwrap();
        assert_eq!((d.max_iterations, d.turn.token_budget), (12, Some(200_000)));
        assert_eq!(d.observation.tool_timeout_s, Some(30.0));
        let c = read(
            "max_iterations: 40\nmax_total_tokens: null\ntool_timeout_s: 2.5\nmax_observation_chars: 100\nfailure_hint_after: 2\n",
        )
        .unwrap();
        assert_eq!((c.max_iterations, c.turn.token_budget), (40, None));
        assert_eq!(c.observation.tool_timeout_s, Some(2.5));
        assert_eq!(c.observation.max_chars, Some(100));
        assert_eq!(c.observation.failure_hint_after, Some(2));
        assert_ne!(c.fingerprint(), d.fingerprint());
        let format_error = |c: &EngineConfig| c.turn.invalid_calls.unwrap().malformed_args;
        assert_eq!(
            format_error(&d),
            MalformedArgs::FailedIteration {
                format_error_after: Some(2)
            }
        );
        let f = read("format_error_after: 3\n").unwrap();
        assert_eq!(
            format_error(&f),
            MalformedArgs::FailedIteration {
                format_error_after: Some(3)
            }
        );
        assert_ne!(f.fingerprint(), d.fingerprint());
        let off = read("format_error_after: null\n").unwrap();
        assert_eq!(
            format_error(&off),
            MalformedArgs::FailedIteration {
                format_error_after: None
            }
        );
        assert_ne!(off.fingerprint(), d.fingerprint());
        // The default spelled out is the default: the same fingerprint.
        assert_eq!(
            read("format_error_after: 2\n").unwrap().fingerprint(),
            d.fingerprint()
        );
        for (text, key) in [
            ("max_iterations: null\n", "max_iterations"),
            ("max_total_tokens: 0\n", "max_total_tokens"),
            ("tool_timeout_s: -1\n", "tool_timeout_s"),
            ("failure_hint_after: three\n", "failure_hint_after"),
            ("format_error_after: 0\n", "format_error_after"),
            ("trim_context_at: 1.5\n", "trim_context_at"),
        ] {
            let e = read(text).unwrap_err().to_string();
            assert!(e.contains("c.yaml") && e.contains(key), "{text}: {e}");
        }
        let typo = read("max_total_token: 5\n").unwrap_err().to_string();
        assert!(typo.contains("did you mean `max_total_tokens`"), "{typo}");
    }

    #[test]
    fn openhands_reads_its_cap_and_its_stuck_detector() {
        let read = |t: &str| {
            let root = yaml::parse(t).unwrap();
            EngineConfig::from_node(ProfileName::OpenHandsSdk1_58, None, &root, "c.yaml")
        };
        let d = read("{}\n").unwrap();
        assert_eq!(d.max_iterations, 500);
        assert_eq!(d.stuck, Some(crate::stuck::StuckThresholds::DEFAULT));
        let c = read(
            "max_iteration_per_run: 30\nstuck_detection_thresholds:\n  action_observation: 6\n",
        )
        .unwrap();
        assert_eq!(c.max_iterations, 30);
        assert_eq!(c.stuck.unwrap().action_observation, 6);
        assert_eq!(c.stuck.unwrap().monologue, 3);
        assert_ne!(c.fingerprint(), d.fingerprint());
        let off = read("stuck_detection: false\n").unwrap();
        assert_eq!(off.stuck, None);
        assert_ne!(off.fingerprint(), d.fingerprint());
        let zero = read("max_iteration_per_run: 0\n").unwrap();
        assert_eq!(zero.max_iterations, 1);
        assert!(zero.notes[0].message.contains("one step"));
        let typo = read("stuck_detection_thresholds:\n  monolog: 2\n")
            .unwrap_err()
            .to_string();
        assert!(
            typo.contains("did you mean `monologue`") && typo.contains(":2:"),
            "{typo}"
        );
        let bad = read("stuck_detection_thresholds:\n  monologue: 0\n")
            .unwrap_err()
            .to_string();
        assert!(bad.contains("at least 1"), "{bad}");
    }

    #[test]
    fn smolagents_reads_max_steps_and_refuses_a_negative_one() {
        let read = |t: &str| {
            let root = yaml::parse(t).unwrap();
            EngineConfig::from_node(ProfileName::Smolagents1_26, None, &root, "c.yaml")
        };
        let c = read("max_steps: 6\n").unwrap();
        assert_eq!((c.max_iterations, c.cap_setting), (6, Some(6)));
        for v in ["0", "-1"] {
            let e = read(&format!("max_steps: {v}\n")).unwrap_err().to_string();
            assert!(e.contains("c.yaml") && e.contains("below 1"), "{e}");
        }
        let typo = read("max_step: 6\n").unwrap_err().to_string();
        assert!(typo.contains("did you mean `max_steps`"), "{typo}");
        let other = read("max_turns: 6\n").unwrap_err().to_string();
        assert!(other.contains("max_turns"), "{other}");
    }

    #[test]
    fn pydantic_ai_reads_request_limit_in_its_own_name() {
        let read = |text: &str| {
            let root = yaml::parse(text).unwrap();
            EngineConfig::from_node(ProfileName::PydanticAi2_68, None, &root, "p.yaml")
        };
        assert_eq!(read("").unwrap().max_iterations, 50);
        assert_eq!(read("request_limit: 8\n").unwrap().max_iterations, 8);
        // The OpenAI Agents SDK's key is not Pydantic AI's.
        let other = read("max_turns: 8\n").unwrap_err().to_string();
        assert!(
            other.contains("not a setting pydantic-ai-2.68 reads"),
            "{other}"
        );
        let typo = read("request_limt: 8\n").unwrap_err().to_string();
        assert!(typo.contains("did you mean `request_limit`"), "{typo}");
    }
}
