//! The engine settings a run actually used, as reports show them: thresholds, caps and the
//! hard-stop rule as resolved for the platform. They answer "why did nothing stop?" from the
//! report alone.

use loopsim_engine::budget::UNLIMITED;
use loopsim_engine::config::EngineConfig;
use loopsim_engine::delegation::ChildBudget;
use loopsim_engine::hash::ResultHashing;
use loopsim_engine::profile::{Profile, Runtime};
use loopsim_engine::turn::AtCap;
use loopsim_engine::turn::invalid_calls::MalformedArgs;
use serde::Serialize;

fn runtime_settings(c: &EngineConfig) -> Option<RuntimeSettings> {
    let p = Profile::get(c.profile);
    if p.runtime == Runtime::Hermes {
        return None;
    }
    let key = p.runtime.cap_key();
    let calls = if c.max_iterations < UNLIMITED {
        format!("{} model calls", c.max_iterations)
    } else {
        "no cap".into()
    };
    Some(RuntimeSettings {
        runtime: p.runtime.package(),
        cap: match c.cap_setting {
            Some(v) if c.turn.graph.is_some() => {
                format!("{key} {v} (graph steps: at most {calls})")
            }
            Some(v) if v != c.max_iterations => {
                format!("{key} {v} ({calls})")
            }
            Some(v) => format!("{key} {v} (model calls)"),
            None => format!("{key} unlimited"),
        },
        at_cap: match c.turn.at_cap {
            AtCap::Raise(e) => format!("raises {}", e.as_str()),
            AtCap::RaiseDroppingLastReply(e) => {
                format!("raises {} on the last call's reply", e.as_str())
            }
            AtCap::MaxIterationsReached
                if c.turn.grace == loopsim_engine::turn::GraceMode::SummaryCall =>
            {
                "ends max_iterations_reached after a summary call".into()
            }
            AtCap::MaxIterationsReached => "ends max_iterations_reached".into(),
            AtCap::FinalAnswerCall => "ends max_steps_error after a final-answer call".into(),
            AtCap::HandledFinalOutput => {
                "ends max_turns_handled: the error handler's final output, no further call".into()
            }
            AtCap::ConversationError => {
                "ends conversation_error(MaxIterationsReached), with no further call".into()
            }
        },
        tool_guardrails: p.tool_guardrails,
        limits: other_limits(c),
    })
}

/// Hermes's compression settings, when a config changed them: a threshold or a tail of its
/// own, or compression off.
fn compression_settings(c: &EngineConfig) -> Option<String> {
    use loopsim_engine::turn::compression::Compression;
    if Profile::get(c.profile).runtime != Runtime::Hermes {
        return None;
    }
    let d = Compression::default();
    match c.compression {
        None => Some("off (compression.enabled)".into()),
        Some(k) if k == d => None,
        Some(k) => Some(format!(
            "threshold {} of the window, target_ratio {} (a tail of that share of the threshold)",
            k.threshold, k.target_ratio
        )),
    }
}

/// The limits a runtime has besides its cap (the article loop's token budget and its rules
/// for tool results), one line each.
fn other_limits(c: &EngineConfig) -> Vec<String> {
    let o = &c.observation;
    let mut out = Vec::new();
    if Profile::get(c.profile).runtime == Runtime::OpenHands {
        out.push(match c.stuck {
            Some(t) => format!(
                "stuck detection: action_observation {}, action_error {}, monologue {}, alternating_pattern {} (then conversation_stuck)",
                t.action_observation, t.action_error, t.monologue, t.alternating_pattern
            ),
            None => "stuck detection off".into(),
        });
    }
    if p_is_react(c) {
        out.push(match c.turn.token_budget {
            Some(b) => format!("max_total_tokens {b}, then token_budget_exhausted"),
            None => "max_total_tokens none".into(),
        });
        out.push(match o.tool_timeout_s {
            Some(t) => format!("tool_timeout_s {t} (a timeout observation)"),
            None => "tool_timeout_s none".into(),
        });
        out.push(match o.max_chars {
            Some(n) => format!("max_observation_chars {n} (the head kept)"),
            None => "max_observation_chars none".into(),
        });
        out.push(match o.failure_hint_after {
            Some(n) => format!("failure_hint_after {n} (failures of one tool in a row)"),
            None => "failure_hint_after none".into(),
        });
        out.push(match o.trim_context_at {
            Some(f) => format!("trim_context_at {f} (of the window; the oldest results dropped)"),
            None => "trim_context_at none".into(),
        });
        if let Some(MalformedArgs::FailedIteration { format_error_after }) =
            c.turn.invalid_calls.map(|r| r.malformed_args)
        {
            out.push(match format_error_after {
                Some(n) => format!(
                    "format_error_after {n} (replies it cannot parse in a row, then a format-error observation)"
                ),
                None => "format_error_after none".into(),
            });
        }
    }
    if let Some(n) = c.turn.planning_interval {
        out.push(format!(
            "planning_interval {n} (a tools-free planning call before steps 1, {}, ...)",
            n.saturating_add(1)
        ));
    }
    out.extend(call_limits(&c.limits));
    out
}

/// The opt-in call limits that are set, one line each.
fn call_limits(l: &loopsim_engine::call_limits::CallLimits) -> Vec<String> {
    let mut out = Vec::new();
    let u = &l.usage;
    for (key, v) in [
        ("tool_calls_limit", u.tool_calls),
        ("input_tokens_limit", u.input_tokens),
        ("output_tokens_limit", u.output_tokens),
        ("total_tokens_limit", u.total_tokens),
    ] {
        if let Some(n) = v {
            out.push(format!("{key} {n}, then UsageLimitExceeded"));
        }
    }
    if let Some(m) = l.model_calls {
        out.push(format!(
            "model_call_limit {} per run (exit_behavior {})",
            m.limit,
            m.exit.as_str()
        ));
    }
    if let Some(t) = &l.tool_calls {
        out.push(format!(
            "tool_call_limit {} per run of {} (exit_behavior {})",
            t.limit,
            t.tool
                .as_deref()
                .map_or("every tool".to_string(), |n| format!("`{n}`")),
            t.exit.as_str()
        ));
    }
    out
}

fn p_is_react(c: &EngineConfig) -> bool {
    Profile::get(c.profile).runtime == Runtime::ReactLoop
}

/// One detector family's three thresholds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Thresholds {
    pub exact_failure: u32,
    pub same_tool_failure: u32,
    pub idempotent_no_progress: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct LoopCapSettings {
    pub max_web_searches: u32,
    pub max_subagents: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DelegationSettings {
    pub child_max_iterations: u64,
    pub max_concurrent_children: u32,
    pub max_spawn_depth: u32,
    /// `None`: no child timeout.
    pub child_timeout_s: Option<f64>,
    /// `independent`, `shared` or `reserved N`.
    pub child_budget: String,
    /// Top-level delegations run in the background.
    pub background: bool,
}

/// The resolved engine configuration of a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Settings {
    pub profile: String,
    pub platform: Option<String>,
    /// The parent's iteration cap; `None` is unlimited.
    pub max_iterations: Option<u64>,
    pub warnings_enabled: bool,
    pub hard_stops: bool,
    /// Why hard stops are on or off.
    pub hard_stop_rule: String,
    pub warn_after: Thresholds,
    pub hard_stop_after: Thresholds,
    /// `None` where the profile has no loop caps.
    pub loop_caps: Option<LoopCapSettings>,
    pub stall_guards: bool,
    /// `whole result`, or `execute_code volatile fields dropped`.
    pub result_hashing: &'static str,
    pub delegation: DelegationSettings,
    /// The user's config.yaml laid over the scenario's, with its SHA-256.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config_file: Option<(String, String)>,
    /// The hash of all of it (the trace header's and report rows' `config_hash`).
    pub config_hash: String,
    /// For a runtime other than Hermes: its name, and how it ends a run at its cap.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime: Option<RuntimeSettings>,
    /// The window a config set for every model (Hermes's `model.context_length`), and
    /// where compression starts in it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_window: Option<String>,
    /// Hermes's compression settings, where a config changed them from its defaults.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compression: Option<String>,
}

/// What a non-Hermes runtime's governance is, in its own terms.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RuntimeSettings {
    pub runtime: &'static str,
    /// The loop's cap in the runtime's key, e.g. `max_turns 10`.
    pub cap: String,
    /// What reaching it does, e.g. `raises MaxTurnsExceeded`.
    pub at_cap: String,
    pub tool_guardrails: bool,
    /// Its other limits, e.g. `max_total_tokens 200000, then token_budget_exhausted`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub limits: Vec<String>,
}

impl Settings {
    /// `config_hash` is `c.fingerprint()` in hex, which the caller has already computed.
    pub fn of(
        c: &EngineConfig,
        config_file: Option<(String, String)>,
        config_hash: String,
    ) -> Settings {
        let g = &c.guardrails;
        let d = &c.delegation;
        Settings {
            profile: c.profile.to_string(),
            platform: c.platform.clone(),
            max_iterations: (c.max_iterations < UNLIMITED).then_some(c.max_iterations),
            warnings_enabled: g.warnings_enabled,
            hard_stops: g.hard_stop_enabled,
            hard_stop_rule: c.hard_stop_rule.to_string(),
            warn_after: Thresholds {
                exact_failure: g.exact_failure_warn_after,
                same_tool_failure: g.same_tool_failure_warn_after,
                idempotent_no_progress: g.no_progress_warn_after,
            },
            hard_stop_after: Thresholds {
                exact_failure: g.exact_failure_block_after,
                same_tool_failure: g.same_tool_failure_halt_after,
                idempotent_no_progress: g.no_progress_block_after,
            },
            loop_caps: c.rules.loop_caps.then_some(LoopCapSettings {
                max_web_searches: g.loop_caps.max_web_searches,
                max_subagents: g.loop_caps.max_subagents,
            }),
            stall_guards: c.rules.stall_guards,
            result_hashing: match c.rules.result_hashing {
                ResultHashing::Plain => "whole result",
                ResultHashing::StripExecuteCodeVolatile => "execute_code volatile fields dropped",
            },
            delegation: DelegationSettings {
                child_max_iterations: d.child_max_iterations,
                max_concurrent_children: d.max_concurrent_children,
                max_spawn_depth: d.max_spawn_depth,
                child_timeout_s: d.child_timeout_us.map(|t| t as f64 / 1e6),
                child_budget: match d.child_budget {
                    ChildBudget::Independent => "independent".into(),
                    ChildBudget::Shared => "shared".into(),
                    ChildBudget::Reserved(n) => format!("reserved {n}"),
                },
                background: d.background_top_level,
            },
            config_file,
            config_hash,
            runtime: runtime_settings(c),
            context_window: c.context_length.map(|w| match c.compression {
                Some(k) => format!(
                    "{w} tokens (model.context_length): compression from {} tokens",
                    k.threshold_tokens(w)
                ),
                None => format!("{w} tokens (model.context_length): compression off"),
            }),
            compression: compression_settings(c),
        }
    }

    /// One line per setting, for text and Markdown reports.
    pub fn lines(&self) -> Vec<(String, String)> {
        if let Some(r) = &self.runtime {
            let mut out = vec![
                ("engine".into(), format!("{} ({})", self.profile, r.runtime)),
                ("hard stops".into(), self.hard_stop_rule.clone()),
                (
                    "parent cap".into(),
                    format!("{}, then the run {}", r.cap, r.at_cap),
                ),
            ];
            if !r.limits.is_empty() {
                out.push(("other limits".into(), r.limits.join("; ")));
            }
            return out;
        }
        let t = |t: &Thresholds| {
            format!(
                "exact_failure {}, same_tool_failure {}, idempotent_no_progress {}",
                t.exact_failure, t.same_tool_failure, t.idempotent_no_progress
            )
        };
        let mut out = vec![
            (
                "engine".to_string(),
                format!(
                    "{} on {}",
                    self.profile,
                    self.platform.as_deref().unwrap_or("no platform")
                ),
            ),
            ("hard stops".into(), self.hard_stop_rule.clone()),
            (
                "warnings".into(),
                if self.warnings_enabled { "on" } else { "off" }.into(),
            ),
            ("warn after".into(), t(&self.warn_after)),
            ("hard stop after".into(), t(&self.hard_stop_after)),
            (
                "loop caps".into(),
                self.loop_caps.map_or("none in this profile".into(), |c| {
                    format!(
                        "{} web searches, {} subagents per turn (0: off)",
                        c.max_web_searches, c.max_subagents
                    )
                }),
            ),
            (
                "stall guards".into(),
                if self.stall_guards { "on" } else { "off" }.into(),
            ),
            ("result hashing".into(), self.result_hashing.into()),
            (
                "parent cap".into(),
                self.max_iterations
                    .map_or("unlimited".into(), |n| format!("{n} iterations")),
            ),
            (
                "delegation".into(),
                format!(
                    "children {} iterations ({} budgets), {} at once, depth {}, timeout {}, {}",
                    self.delegation.child_max_iterations,
                    self.delegation.child_budget,
                    self.delegation.max_concurrent_children,
                    self.delegation.max_spawn_depth,
                    self.delegation
                        .child_timeout_s
                        .map_or("none".into(), |s| format!("{s} s")),
                    if self.delegation.background {
                        "top level in the background"
                    } else {
                        "synchronous"
                    }
                ),
            ),
        ];
        if let Some(w) = &self.context_window {
            out.push(("context window".into(), w.clone()));
        }
        if let Some(k) = &self.compression {
            out.push(("compression".into(), k.clone()));
        }
        if let Some((file, hash)) = &self.config_file {
            out.push((
                "config file".into(),
                format!("{file} (sha256 {})", &hash[..12.min(hash.len())]),
            ));
        }
        out
    }
}
