//! Which `config.yaml` keys Hermes reads, which of them loopsim simulates, and the nearest
//! known key for a typo.
//!
//! Hermes ignores keys it does not know, so a misspelled threshold silently keeps its default.
//! loopsim checks every key inside the sections it reads against this table: a user's
//! `config.yaml` gets a warning (Hermes would accept the file), a scenario's `[config]` and a
//! sweep's `--grid` key get an error.

use crate::profile::{Profile, ProfileName};
use crate::yaml::{Node, Yaml};

/// How Hermes reads a key's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyKind {
    /// A mapping of further keys.
    Section,
    /// Hermes's lenient boolean (`true`, `yes`, `on`, `1`, ...).
    Bool,
    /// An integer of at least `min`; smaller values and junk take the default.
    Int { min: i64 },
    /// The iteration cap (`agent.max_turns`), read differently by each profile.
    TurnLimit,
    /// A number of seconds.
    Seconds,
    /// A share: a number above 0 and at most 1.
    Fraction,
    /// A number Hermes reads with `float()` as a share of something (compression's ratios:
    /// Hermes clamps or floors them itself).
    Ratio,
    /// One of these words (another runtime's string options).
    Choice(&'static [&'static str]),
    /// A name (another runtime's string setting, e.g. a tool's name).
    Text,
}

impl KeyKind {
    /// What a value of this kind looks like, for messages and `loopsim codes`.
    pub fn describe(self) -> String {
        match self {
            KeyKind::Section => "a mapping".into(),
            KeyKind::Bool => "true or false".into(),
            KeyKind::Int { min } => format!("an integer >= {min}"),
            KeyKind::TurnLimit => {
                "an integer (0 or less: unlimited where the profile allows)".into()
            }
            KeyKind::Seconds => "a number of seconds".into(),
            KeyKind::Fraction => "a number above 0 and at most 1".into(),
            KeyKind::Ratio => "a number (a share, e.g. 0.5)".into(),
            KeyKind::Choice(words) => format!("one of: {}", words.join(", ")),
            KeyKind::Text => "a name".into(),
        }
    }
}

/// Which profiles read a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadBy {
    All,
    /// Versions with the platform rule and loop caps (`hermes-v0.21.5`, `hermes-main`).
    PlatformRule,
    /// Versions with stall guards.
    StallGuards,
}

impl ReadBy {
    pub fn reads(self, profile: ProfileName) -> bool {
        let rules = Profile::get(profile).guardrails;
        match self {
            ReadBy::All => true,
            ReadBy::PlatformRule => rules.platform_rule,
            ReadBy::StallGuards => rules.stall_guards,
        }
    }
}

/// A key loopsim simulates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeySpec {
    /// The dotted path, e.g. `tool_loop_guardrails.hard_stop_after.exact_failure`.
    pub path: &'static str,
    pub kind: KeyKind,
    pub read_by: ReadBy,
    /// Another spelling of the same setting, and whether this one wins when both are given.
    pub alias: Option<(&'static str, bool)>,
}

const fn key(path: &'static str, kind: KeyKind, read_by: ReadBy) -> KeySpec {
    KeySpec {
        path,
        kind,
        read_by,
        alias: None,
    }
}

const fn aliased(path: &'static str, other: &'static str, wins: bool) -> KeySpec {
    KeySpec {
        path,
        kind: KeyKind::Int { min: 1 },
        read_by: ReadBy::All,
        alias: Some((other, wins)),
    }
}

const THRESHOLD: KeyKind = KeyKind::Int { min: 1 };

/// Every key the engine reads, in the order `loopsim codes` lists them.
pub const SIMULATED: &[KeySpec] = &[
    key("max_turns", KeyKind::TurnLimit, ReadBy::All),
    key("agent", KeyKind::Section, ReadBy::All),
    key("agent.max_turns", KeyKind::TurnLimit, ReadBy::All),
    key("agent.stall_guards", KeyKind::Bool, ReadBy::StallGuards),
    key("agent.api_max_retries", THRESHOLD, ReadBy::All),
    key("compression", KeyKind::Section, ReadBy::All),
    key("compression.enabled", KeyKind::Bool, ReadBy::All),
    key("compression.threshold", KeyKind::Ratio, ReadBy::All),
    key("compression.target_ratio", KeyKind::Ratio, ReadBy::All),
    key("model.context_length", KeyKind::Int { min: 1 }, ReadBy::All),
    key("tool_loop_guardrails", KeyKind::Section, ReadBy::All),
    key(
        "tool_loop_guardrails.warnings_enabled",
        KeyKind::Bool,
        ReadBy::All,
    ),
    key(
        "tool_loop_guardrails.hard_stop_enabled",
        KeyKind::Bool,
        ReadBy::All,
    ),
    key(
        "tool_loop_guardrails.non_interactive_hard_stop_enabled",
        KeyKind::Bool,
        ReadBy::PlatformRule,
    ),
    key(
        "tool_loop_guardrails.warn_after",
        KeyKind::Section,
        ReadBy::All,
    ),
    aliased(
        "tool_loop_guardrails.warn_after.exact_failure",
        "tool_loop_guardrails.exact_failure_warn_after",
        true,
    ),
    aliased(
        "tool_loop_guardrails.warn_after.same_tool_failure",
        "tool_loop_guardrails.same_tool_failure_warn_after",
        true,
    ),
    aliased(
        "tool_loop_guardrails.warn_after.idempotent_no_progress",
        "tool_loop_guardrails.no_progress_warn_after",
        true,
    ),
    key(
        "tool_loop_guardrails.hard_stop_after",
        KeyKind::Section,
        ReadBy::All,
    ),
    aliased(
        "tool_loop_guardrails.hard_stop_after.exact_failure",
        "tool_loop_guardrails.exact_failure_block_after",
        true,
    ),
    aliased(
        "tool_loop_guardrails.hard_stop_after.same_tool_failure",
        "tool_loop_guardrails.same_tool_failure_halt_after",
        true,
    ),
    aliased(
        "tool_loop_guardrails.hard_stop_after.idempotent_no_progress",
        "tool_loop_guardrails.no_progress_block_after",
        true,
    ),
    aliased(
        "tool_loop_guardrails.exact_failure_warn_after",
        "tool_loop_guardrails.warn_after.exact_failure",
        false,
    ),
    aliased(
        "tool_loop_guardrails.same_tool_failure_warn_after",
        "tool_loop_guardrails.warn_after.same_tool_failure",
        false,
    ),
    aliased(
        "tool_loop_guardrails.no_progress_warn_after",
        "tool_loop_guardrails.warn_after.idempotent_no_progress",
        false,
    ),
    aliased(
        "tool_loop_guardrails.exact_failure_block_after",
        "tool_loop_guardrails.hard_stop_after.exact_failure",
        false,
    ),
    aliased(
        "tool_loop_guardrails.same_tool_failure_halt_after",
        "tool_loop_guardrails.hard_stop_after.same_tool_failure",
        false,
    ),
    aliased(
        "tool_loop_guardrails.no_progress_block_after",
        "tool_loop_guardrails.hard_stop_after.idempotent_no_progress",
        false,
    ),
    key(
        "tool_loop_guardrails.loop_caps",
        KeyKind::Section,
        ReadBy::PlatformRule,
    ),
    key(
        "tool_loop_guardrails.loop_caps.max_web_searches",
        KeyKind::Int { min: 0 },
        ReadBy::PlatformRule,
    ),
    key(
        "tool_loop_guardrails.loop_caps.max_subagents",
        KeyKind::Int { min: 0 },
        ReadBy::PlatformRule,
    ),
    key("delegation", KeyKind::Section, ReadBy::All),
    key("delegation.max_iterations", THRESHOLD, ReadBy::All),
    key("delegation.max_concurrent_children", THRESHOLD, ReadBy::All),
    key("delegation.max_spawn_depth", THRESHOLD, ReadBy::All),
    key(
        "delegation.child_timeout_seconds",
        KeyKind::Seconds,
        ReadBy::All,
    ),
];

/// Keys Hermes reads in the sections above that do not touch loop governance, so loopsim does
/// not simulate them (a user's file may set them freely; a scenario may not).
pub const HERMES_ONLY: &[&str] = &[
    "compression.abort_on_summary_failure",
    "compression.codex_app_server_auto",
    "compression.codex_gpt55_autoraise",
    "compression.codex_gpt55_autoraise_notice",
    "compression.hygiene_hard_message_limit",
    "compression.in_place",
    "compression.protect_first_n",
    "compression.protect_last_n",
    "compression.summary_model",
    "agent.agent_cache",
    "agent.auto_recovery_cycles",
    "agent.bot_mode_protocol",
    "agent.build_wait_timeout",
    "agent.clarify_timeout",
    "agent.coding_context",
    "agent.coding_instructions",
    "agent.cron_drain_timeout",
    "agent.disabled_toolsets",
    "agent.empty_response_guard",
    "agent.environment_hint",
    "agent.environment_probe",
    "agent.execution_guidance",
    "agent.fast_auto_seconds",
    "agent.gateway_auto_continue_freshness",
    "agent.gateway_notify_interval",
    "agent.gateway_startup_restore_drain_timeout",
    "agent.gateway_startup_warmup_timeout",
    "agent.gateway_timeout",
    "agent.gateway_timeout_warning",
    "agent.gateway_turn_lease_timeout",
    "agent.image_input_mode",
    "agent.inherit_mcp_toolsets",
    "agent.intent_ack_continuation",
    "agent.local_stream_stale_timeout",
    "agent.max_verify_nudges",
    "agent.parallel_tool_call_guidance",
    "agent.personalities",
    "agent.prefill_messages_file",
    "agent.reasoning_echo",
    "agent.reasoning_effort",
    "agent.reasoning_overrides",
    "agent.reconnect_attention_after",
    "agent.restart_after_turn_timeout",
    "agent.restart_drain_timeout",
    "agent.run_budget_seconds",
    "agent.sanitizer_heal_escalation_threshold",
    "agent.service_tier",
    "agent.session_stall_timeout",
    "agent.stream_drain_timeout",
    "agent.system_prompt",
    "agent.task_completion_guidance",
    "agent.text_verbosity",
    "agent.tool_use_enforcement",
    "agent.turn_liveness",
    "agent.verbose",
    "agent.verify_guidance",
    "agent.verify_on_stop",
    "delegation.api_key",
    "delegation.api_mode",
    "delegation.base_url",
    "delegation.compression_threshold_tokens",
    "delegation.inherit_mcp_toolsets",
    "delegation.max_summary_chars",
    "delegation.model",
    "delegation.orchestrator_enabled",
    "delegation.provider",
    "delegation.reasoning_effort",
    "delegation.subagent_auto_approve",
];

/// Top-level sections of Hermes's config that loopsim does not read at all.
pub const HERMES_SECTIONS: &[&str] = &[
    "approvals",
    "auxiliary",
    "bedrock",
    "browser",
    "checkpoints",
    "code_execution",
    "command_allowlist",
    "context",
    "cron",
    "custom_providers",
    "dashboard",
    "desktop",
    "discord",
    "display",
    "fallback_model",
    "fallback_providers",
    "gateway",
    "goals",
    "hooks",
    "honcho",
    "human_delay",
    "logging",
    "lsp",
    "mattermost",
    "matrix",
    "mcp",
    "mcp_servers",
    "memory",
    "model",
    "moa",
    "network",
    "openrouter",
    "personalities",
    "platforms",
    "plugins",
    "privacy",
    "prompt_caching",
    "providers",
    "quick_commands",
    "security",
    "sessions",
    "skills",
    "slack",
    "streaming",
    "stt",
    "telegram",
    "terminal",
    "timeouts",
    "timezone",
    "tool_output",
    "toolsets",
    "tools",
    "tts",
    "updates",
    "voice",
    "web",
    "whatsapp",
];

/// The simulated key at `path`.
pub fn lookup(path: &str) -> Option<&'static KeySpec> {
    SIMULATED.iter().find(|k| k.path == path)
}

/// How close `name` is to `candidate` as a typo, lower is closer; `None` when not close.
/// Small edits rank first (`max_turn`), then a long shared start (`max_concurency` for
/// `max_concurrent_children`).
fn closeness(name: &str, candidate: &str) -> Option<(u8, usize)> {
    let limit = (name.chars().count() / 3).clamp(2, 4);
    let d = strsim::damerau_levenshtein(name, candidate);
    if d <= limit {
        return Some((0, d));
    }
    let jw = strsim::jaro_winkler(name, candidate);
    (jw >= 0.88 && name.len() >= 4).then_some((1, ((1.0 - jw) * 1000.0) as usize))
}

/// The nearest of `candidates` to `name`, if any is close enough to be a likely typo.
pub fn nearest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .filter_map(|c| closeness(name, c).map(|s| (s, c)))
        .min()
        .map(|(_, c)| c)
}

/// The keys inside `section` (`""` for the top level), at any depth, relative to it.
fn descendants(section: &str) -> impl Iterator<Item = &'static str> + '_ {
    let prefix = if section.is_empty() {
        String::new()
    } else {
        format!("{section}.")
    };
    let simulated = SIMULATED.iter().map(|k| k.path);
    simulated
        .chain(HERMES_ONLY.iter().copied())
        .filter_map(move |p| p.strip_prefix(prefix.as_str()))
}

/// A whole-path suggestion for an unknown `name` inside `section`: the nearest key below it
/// (by its own name or its last segment), with the rest of `tail` kept when that names a key.
fn suggest(section: &str, name: &str, tail: &[String]) -> Option<String> {
    let near = descendants(section)
        .filter_map(|rel| {
            let last = rel.rsplit('.').next().unwrap_or(rel);
            let whole = closeness(name, rel);
            // Matching a nested key's own name counts one edit more (its section is missing).
            let nested = (rel != last)
                .then(|| closeness(name, last).map(|(k, d)| (k, d + 1)))
                .flatten();
            whole.into_iter().chain(nested).min().map(|s| (s, rel))
        })
        .min()?
        .1;
    let mut path = if section.is_empty() {
        near.to_string()
    } else {
        format!("{section}.{near}")
    };
    let with_tail = tail.iter().fold(path.clone(), |p, t| format!("{p}.{t}"));
    if !tail.is_empty() && lookup(&with_tail).is_some() {
        path = with_tail;
    }
    Some(path)
}

/// Why a key is not used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyProblem {
    /// Not a key Hermes reads there; the nearest known key, as a whole path.
    Unknown { suggestion: Option<String> },
    /// A key Hermes reads that has nothing to do with loop governance.
    NotSimulated,
    /// A newer key that this profile's Hermes does not read.
    NotRead { profile: ProfileName },
    /// Not a setting of the profile's runtime (not Hermes): [`super::runtime`].
    NotARuntimeKey(super::runtime::UnknownKey),
    /// Another runtime's setting in a file read as Hermes's: Hermes ignores it.
    OtherRuntimes { runtime: crate::profile::Runtime },
}

/// A key, where it is, and why it is not used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyIssue {
    pub line: usize,
    pub key: String,
    pub problem: KeyProblem,
}

impl KeyIssue {
    pub fn message(&self) -> String {
        match &self.problem {
            KeyProblem::Unknown {
                suggestion: Some(s),
            } => format!("not a key Hermes reads (did you mean `{s}`?)"),
            KeyProblem::Unknown { suggestion: None } => "not a key Hermes reads".into(),
            KeyProblem::NotSimulated => {
                "a Hermes key loopsim does not simulate (it does not govern the loop)".into()
            }
            KeyProblem::NotRead { profile } => {
                format!("{profile} does not read this key (newer Hermes versions do)")
            }
            KeyProblem::NotARuntimeKey(u) => u.message(),
            KeyProblem::OtherRuntimes { runtime } => format!(
                "a setting of {}, not of Hermes (run it under that runtime's profile)",
                runtime.title()
            ),
        }
    }
}

/// Where a config tree comes from: a user's `config.yaml` (Hermes's other sections are its
/// business) or a scenario's `[config]` (every key must be one loopsim simulates).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    UserFile,
    Scenario,
}

fn key_text(k: &Node) -> String {
    match &k.value {
        Yaml::Str(s) => s.clone(),
        Yaml::Bool(b) => format!("{b} (YAML 1.1 reads this key as a boolean)"),
        Yaml::Null => "null".into(),
        Yaml::Int(i) => i.to_string(),
        Yaml::Float(f) => f.to_string(),
        Yaml::Seq(_) | Yaml::Map(_) => "a collection".into(),
    }
}

/// Every key of `root` inside the sections loopsim reads that is unknown, not simulated, or not
/// read by `profile`, in document order.
pub fn check(root: &Node, profile: ProfileName, scope: Scope) -> Vec<KeyIssue> {
    if profile.runtime() != crate::profile::Runtime::Hermes {
        return super::runtime::unknown_keys(root, profile)
            .into_iter()
            .map(|u| KeyIssue {
                line: u.line,
                key: u.key.clone(),
                problem: KeyProblem::NotARuntimeKey(u),
            })
            .collect();
    }
    let mut out = Vec::new();
    let Yaml::Map(pairs) = &root.value else {
        return out;
    };
    for (k, v) in pairs {
        let name = key_text(k);
        match lookup(&name) {
            Some(spec) if spec.kind == KeyKind::Section => walk(&name, v, profile, &mut out),
            Some(_) => {}
            None if name == "model" => check_model(k, v, scope, &mut out),
            None if HERMES_SECTIONS.contains(&name.as_str()) && scope == Scope::UserFile => {}
            // Another runtime's cap in a Hermes file: Hermes would ignore it.
            None if super::runtime::lookup(&name).is_some() => {
                let runtime = crate::profile::Runtime::ALL
                    .into_iter()
                    .find(|&r| super::runtime::reads(r, &name))
                    .expect("a runtime reads it");
                out.push(KeyIssue {
                    line: k.line,
                    key: name,
                    problem: KeyProblem::OtherRuntimes { runtime },
                });
            }
            // Hermes passes unknown top-level keys on as environment variables, so a user's
            // file may hold any; only a near miss of a section loopsim reads is a typo.
            None if scope == Scope::UserFile => {
                let sections = ["agent", "tool_loop_guardrails", "delegation", "max_turns"];
                if nearest(&name, sections).is_some() {
                    out.push(unknown(k.line, "", &name, v));
                }
            }
            None if HERMES_SECTIONS.contains(&name.as_str()) => out.push(KeyIssue {
                line: k.line,
                key: name,
                problem: KeyProblem::NotSimulated,
            }),
            None => out.push(unknown(k.line, "", &name, v)),
        }
    }
    out
}

fn unknown(line: usize, section: &str, name: &str, value: &Node) -> KeyIssue {
    // Keep the first nested key for the suggestion (`hard_stop_afterr.idempotent_no_progress`).
    let tail: Vec<String> = match &value.value {
        Yaml::Map(pairs) if pairs.len() == 1 => vec![key_text(&pairs[0].0)],
        _ => vec![],
    };
    let key = if section.is_empty() {
        name.to_string()
    } else {
        format!("{section}.{name}")
    };
    KeyIssue {
        line,
        key,
        problem: KeyProblem::Unknown {
            suggestion: suggest(section, name, &tail),
        },
    }
}

/// Hermes's `model` section: of its settings only the window (`context_length`) governs the
/// loop. A user's file may hold any other (and `model` may be a plain name); only a near miss
/// of the window is reported. A scenario may set the window and nothing else there.
fn check_model(k: &Node, v: &Node, scope: Scope, out: &mut Vec<KeyIssue>) {
    const WINDOW: &str = "model.context_length";
    let Yaml::Map(pairs) = &v.value else {
        if scope == Scope::Scenario {
            out.push(KeyIssue {
                line: k.line,
                key: "model".into(),
                problem: KeyProblem::NotSimulated,
            });
        }
        return;
    };
    for (mk, mv) in pairs {
        let name = key_text(mk);
        let path = format!("model.{name}");
        if path == WINDOW {
            continue;
        }
        if nearest(&path, [WINDOW]).is_some() {
            out.push(unknown(mk.line, "model", &name, mv));
        } else if scope == Scope::Scenario {
            out.push(KeyIssue {
                line: mk.line,
                key: path,
                problem: KeyProblem::NotSimulated,
            });
        }
    }
}

fn walk(section: &str, node: &Node, profile: ProfileName, out: &mut Vec<KeyIssue>) {
    let Yaml::Map(pairs) = &node.value else {
        return; // not a mapping: the reader notes it
    };
    for (k, v) in pairs {
        let name = key_text(k);
        let path = format!("{section}.{name}");
        match lookup(&path) {
            Some(spec) if !spec.read_by.reads(profile) => out.push(KeyIssue {
                line: k.line,
                key: path,
                problem: KeyProblem::NotRead { profile },
            }),
            Some(spec) if spec.kind == KeyKind::Section => walk(&path, v, profile, out),
            Some(_) => {}
            None if HERMES_ONLY.contains(&path.as_str()) => out.push(KeyIssue {
                line: k.line,
                key: path,
                problem: KeyProblem::NotSimulated,
            }),
            None => out.push(unknown(k.line, section, &name, v)),
        }
    }
}
