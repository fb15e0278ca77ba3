//! `EngineConfig`: the engine's settings, read from the same keys as Hermes's `config.yaml`
//! (`agent.max_turns`, `tool_loop_guardrails.*`, `delegation.*`) with Hermes's lenient value
//! parsing, on top of a profile's defaults, plus the platform that decides the hard-stop rule.
//!
//! Hermes never rejects a bad value: junk falls back to the default. We do the same, and also
//! record a [`ConfigNote`] (line and key) for every value that fell back, so a user can see it.
//! Keys are checked separately ([`keys::check`]): Hermes ignores unknown ones.

pub mod keys;
mod read;
mod rule;
pub mod runtime;

pub use read::{py_float, py_int, py_int_str};
pub use rule::HardStopRule;

use crate::delegation::{self, ChildBudget, DelegationPolicy};
use crate::guardrails::{GuardrailConfig, GuardrailRules};
use crate::profile::{Profile, ProfileName};
use crate::turn::TurnRules;
use crate::yaml::{self, Node};

/// A config file that could not be read at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("{file}:{line}: invalid YAML: {message}")]
    Yaml {
        file: String,
        line: usize,
        message: String,
    },
    #[error("{}", shown_value(file, *line, key, message))]
    Value {
        file: String,
        line: usize,
        key: String,
        message: String,
    },
}

/// `file:line: `key`: message`, or for the file as a whole (line 0) `file: message`.
fn shown_value(file: &str, line: usize, key: &str, message: &str) -> String {
    match (line, key) {
        (0, "file") => format!("{file}: {message}"),
        // A value from no file's line (a sweep's --grid): no line to name.
        (0, key) => format!("{file}: `{key}`: {message}"),
        _ => format!("{file}:{line}: `{key}`: {message}"),
    }
}

/// A value Hermes would silently replace by its default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigNote {
    pub line: usize,
    pub key: String,
    pub message: String,
}

/// Everything the engine needs for one agent tree.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineConfig {
    pub profile: ProfileName,
    /// The platform name, e.g. `cli`, `telegram`, `cron` (none counts as attended).
    pub platform: Option<String>,
    /// The parent's iteration cap ([`UNLIMITED`] for none).
    pub max_iterations: u64,
    /// Another runtime's cap as its own setting says it (`recursion_limit` counts graph
    /// steps, not calls); `None` for Hermes, whose cap is `max_iterations`.
    pub cap_setting: Option<u64>,
    pub turn: TurnRules,
    /// Guardrail settings with the platform rule applied.
    pub guardrails: GuardrailConfig,
    pub rules: GuardrailRules,
    pub delegation: DelegationPolicy,
    /// Why hard stops are on or off, as resolved for the platform.
    pub hard_stop_rule: HardStopRule,
    /// What the runtime does to tool results before the model sees them.
    pub observation: crate::observation::ObservationRules,
    /// OpenHands' stuck detector (`None`: off, or a runtime without one).
    pub stuck: Option<crate::stuck::StuckThresholds>,
    /// Opt-in call limits (Pydantic AI's token and tool-call limits, LangChain's middleware).
    pub limits: crate::call_limits::CallLimits,
    /// How the runtime retries provider errors (`agent.api_max_retries` sets the attempts);
    /// `None` for a runtime whose retries loopsim has not proved.
    pub provider_retry: Option<crate::retry::ProviderRetry>,
    /// Hermes's context compression (`compression.enabled`, `threshold`, `target_ratio`);
    /// `None`: off, or a runtime without it (the context grows until it no longer fits).
    pub compression: Option<crate::turn::compression::Compression>,
    /// Hermes's `model.context_length`: the model's window, over the one the scenario gives
    /// its models (Hermes takes the setting before any detection of its own).
    pub context_length: Option<u64>,
    pub notes: Vec<ConfigNote>,
}

impl EngineConfig {
    /// A profile's defaults on a platform.
    pub fn new(profile: ProfileName, platform: Option<&str>) -> Self {
        let p = Profile::get(profile);
        let mut c = EngineConfig {
            profile,
            platform: platform.map(str::to_string),
            max_iterations: p.max_iterations,
            cap_setting: match p.runtime {
                crate::profile::Runtime::Hermes => None,
                crate::profile::Runtime::LangGraph => {
                    Some(crate::profile::LANGGRAPH_CREATE_AGENT_LIMIT)
                }
                _ => Some(p.max_iterations),
            },
            turn: p.turn,
            guardrails: if p.tool_guardrails {
                GuardrailConfig::default()
            } else {
                GuardrailConfig::OFF
            },
            rules: p.guardrails,
            delegation: DelegationPolicy {
                child_max_iterations: p.child_max_iterations,
                max_concurrent_children: p.max_concurrent_children,
                max_spawn_depth: 1,
                child_timeout_us: p.child_timeout_secs.and_then(delegation::child_timeout_us),
                background_top_level: p.background_delegation,
                child_budget: ChildBudget::Independent,
            },
            hard_stop_rule: HardStopRule::Configured,
            observation: p.observation,
            stuck: p.stuck_detection,
            limits: crate::call_limits::CallLimits::default(),
            provider_retry: p.provider_retry,
            compression: (p.runtime == crate::profile::Runtime::Hermes)
                .then(crate::turn::compression::Compression::default),
            context_length: None,
            notes: Vec::new(),
        };
        c.apply_platform();
        c
    }

    /// A hash of everything that decides the engine's behaviour (not the notes or the
    /// platform's name, only its effect), for report rows and trace headers.
    pub fn fingerprint(&self) -> crate::hash::Hash {
        use crate::delegation::ChildBudget;
        use crate::turn::GraceMode;
        let g = &self.guardrails;
        let r = &self.rules;
        let d = &self.delegation;
        let mut b: Vec<u8> = Vec::with_capacity(128);
        b.extend_from_slice(self.profile.as_str().as_bytes());
        b.push(0);
        for n in [
            self.max_iterations,
            g.exact_failure_warn_after as u64,
            g.exact_failure_block_after as u64,
            g.same_tool_failure_warn_after as u64,
            g.same_tool_failure_halt_after as u64,
            g.no_progress_warn_after as u64,
            g.no_progress_block_after as u64,
            g.loop_caps.max_web_searches as u64,
            g.loop_caps.max_subagents as u64,
            d.child_max_iterations,
            d.max_concurrent_children as u64,
            d.max_spawn_depth as u64,
            d.child_timeout_us.map_or(u64::MAX, |t| t),
            match d.child_budget {
                ChildBudget::Independent => u64::MAX,
                ChildBudget::Shared => u64::MAX - 1,
                ChildBudget::Reserved(n) => n,
            },
            match self.turn.grace {
                GraceMode::None => 0,
                GraceMode::SummaryCall => 1,
                GraceMode::ExtraToolsFreeCall => 2,
            },
        ] {
            b.extend_from_slice(&n.to_le_bytes());
        }
        for f in [
            g.warnings_enabled,
            g.hard_stop_enabled,
            g.non_interactive_hard_stop_enabled,
            r.platform_rule,
            r.loop_caps,
            r.progress_reset,
            r.failure_tolerant,
            r.refusal_not_failure,
            r.result_hashing == crate::hash::ResultHashing::StripExecuteCodeVolatile,
            r.stall_guards,
            r.cycle_halt_ends_turn,
            r.tool_sets == crate::guardrails::ToolSets::Newest,
            d.background_top_level,
            self.turn.refund_extends_call_cap,
        ] {
            b.push(f as u8);
        }
        if let Some(r) = self.provider_retry
            && r.attempts != crate::retry::ProviderRetry::HERMES.attempts
        {
            // Only a changed attempt count is hashed, so configs that leave it alone keep
            // the fingerprints they had before it was read.
            b.extend_from_slice(b"api_max_retries");
            b.extend_from_slice(&r.attempts.to_le_bytes());
        }
        let default_compression = (Profile::get(self.profile).runtime
            == crate::profile::Runtime::Hermes)
            .then(crate::turn::compression::Compression::default);
        if self.compression != default_compression {
            // Only changed compression settings are hashed, as with the attempts above.
            b.extend_from_slice(b"compression");
            match self.compression {
                None => b.push(0),
                Some(c) => {
                    b.push(1);
                    b.extend_from_slice(&c.threshold.to_le_bytes());
                    b.extend_from_slice(&c.target_ratio.to_le_bytes());
                }
            }
        }
        if let Some(w) = self.context_length {
            // Only a window that is set is hashed, as with the attempts above.
            b.extend_from_slice(b"context_length");
            b.extend_from_slice(&w.to_le_bytes());
        }
        if let Some(cap) = self.cap_setting {
            // Another runtime's cap as set, and what reaching it does: LangGraph's limits 23
            // and 24 both allow 12 calls, but only 24 acts on the last reply. (Hermes's
            // fingerprint, which has neither, is unchanged by this.)
            use crate::turn::AtCap;
            b.extend_from_slice(&cap.to_le_bytes());
            b.push(match self.turn.at_cap {
                AtCap::MaxIterationsReached => 0,
                AtCap::Raise(_) => 1,
                AtCap::RaiseDroppingLastReply(_) => 2,
                AtCap::FinalAnswerCall => 3,
                AtCap::ConversationError => 4,
                AtCap::HandledFinalOutput => 5,
            });
        }
        if let Some(t) = self.stuck {
            for n in [
                t.action_observation,
                t.action_error,
                t.monologue,
                t.alternating_pattern,
            ] {
                b.extend_from_slice(&(n as u64).to_le_bytes());
            }
        } else if self.profile.runtime() == crate::profile::Runtime::OpenHands {
            b.push(0xff);
        }
        let o = &self.observation;
        if self.turn.token_budget.is_some() || o.any() {
            // The article loop's limits (none of them in other profiles, whose hashes this
            // leaves unchanged).
            for n in [
                self.turn.token_budget.unwrap_or(u64::MAX),
                o.tool_timeout_s.map_or(u64::MAX, f64::to_bits),
                o.max_chars.map_or(u64::MAX, |c| c as u64),
                o.failure_hint_after.map_or(u64::MAX, u64::from),
                o.trim_context_at.map_or(u64::MAX, f64::to_bits),
            ] {
                b.extend_from_slice(&n.to_le_bytes());
            }
        }
        if self.turn.invalid_calls != Profile::get(self.profile).turn.invalid_calls {
            // Only a changed format-error rule is hashed, so the article loop's default runs
            // keep the fingerprints they had before it was read.
            b.extend_from_slice(b"format_error_after");
            if let Some(crate::turn::invalid_calls::MalformedArgs::FailedIteration {
                format_error_after,
            }) = self.turn.invalid_calls.map(|r| r.malformed_args)
            {
                b.extend_from_slice(&format_error_after.map_or(u64::MAX, u64::from).to_le_bytes());
            }
        }
        if let Some(n) = self.turn.planning_interval {
            b.extend_from_slice(b"plan");
            b.extend_from_slice(&n.to_le_bytes());
        }
        let l = &self.limits;
        if l.any() {
            // Opt-in limits (none by default, so defaults' hashes are unchanged).
            let u = &l.usage;
            for n in [
                u.tool_calls,
                u.input_tokens,
                u.output_tokens,
                u.total_tokens,
            ] {
                b.extend_from_slice(&n.unwrap_or(u64::MAX).to_le_bytes());
            }
            if let Some(m) = l.model_calls {
                b.extend_from_slice(&m.limit.to_le_bytes());
                b.extend_from_slice(m.exit.as_str().as_bytes());
            }
            b.push(0xfe);
            if let Some(t) = &l.tool_calls {
                b.extend_from_slice(&t.limit.to_le_bytes());
                b.extend_from_slice(t.exit.as_str().as_bytes());
                b.push(0);
                b.extend_from_slice(t.tool.as_deref().unwrap_or("\u{0}all").as_bytes());
            }
        }
        crate::hash::Hash::of(&b)
    }

    /// Why a threshold key changes nothing in this configuration, if it does not: the
    /// detector it tunes is off (block and halt thresholds without hard stops, warning
    /// thresholds without warnings).
    pub fn inert_reason(&self, key: &str) -> Option<String> {
        let k = key.strip_prefix("tool_loop_guardrails.")?;
        let hard = [
            "hard_stop_after.",
            "exact_failure_block_after",
            "same_tool_failure_halt_after",
            "no_progress_block_after",
        ];
        let warn = [
            "warn_after.",
            "exact_failure_warn_after",
            "same_tool_failure_warn_after",
            "no_progress_warn_after",
        ];
        if !self.guardrails.hard_stop_enabled && hard.iter().any(|h| k.starts_with(h)) {
            return Some(format!("hard stops are {}", self.hard_stop_rule));
        }
        if !self.guardrails.warnings_enabled && warn.iter().any(|w| k.starts_with(w)) {
            return Some("warnings are off (warnings_enabled is false)".into());
        }
        None
    }

    /// [`EngineConfig::fingerprint`] with the thresholds of detectors that are off set aside:
    /// two configurations with the same one make the same decisions.
    pub fn behaviour_fingerprint(&self) -> crate::hash::Hash {
        let mut c = self.clone();
        let g = &mut c.guardrails;
        if !g.hard_stop_enabled {
            g.exact_failure_block_after = 0;
            g.same_tool_failure_halt_after = 0;
            g.no_progress_block_after = 0;
        }
        if !g.warnings_enabled {
            g.exact_failure_warn_after = 0;
            g.same_tool_failure_warn_after = 0;
            g.no_progress_warn_after = 0;
        }
        c.fingerprint()
    }

    fn apply_platform(&mut self) {
        if !Profile::get(self.profile).tool_guardrails {
            self.hard_stop_rule = HardStopRule::NoGuardrails {
                profile: self.profile,
            };
            return;
        }
        let configured = self.guardrails.hard_stop_enabled;
        if self.rules.platform_rule {
            self.guardrails = self.guardrails.with_platform(self.platform.as_deref());
        }
        self.hard_stop_rule = HardStopRule::resolve(
            self.profile,
            self.rules.platform_rule,
            configured,
            &self.guardrails,
            self.platform.as_deref(),
        );
    }

    /// Reads a Hermes `config.yaml` text on top of the profile's defaults. `file` names the
    /// source in errors.
    pub fn from_yaml(
        profile: ProfileName,
        platform: Option<&str>,
        text: &str,
        file: &str,
    ) -> Result<Self, ConfigError> {
        let root = yaml::parse(text).map_err(|e| ConfigError::Yaml {
            file: file.to_string(),
            line: e.line,
            message: format!("column {}: {}", e.col, e.message),
        })?;
        Self::from_node(profile, platform, &root, file)
    }

    /// Reads an already parsed config tree (for example a scenario's `[config]` table).
    pub fn from_node(
        profile: ProfileName,
        platform: Option<&str>,
        root: &Node,
        file: &str,
    ) -> Result<Self, ConfigError> {
        let mut c = EngineConfig::new(profile, platform);
        if profile.runtime() != crate::profile::Runtime::Hermes {
            c.read_runtime(root, file)?;
            return Ok(c);
        }
        // The platform rule must see the file's flags, so start again from raw defaults.
        c.guardrails = GuardrailConfig::default();
        c.read(root, file)?;
        c.apply_platform();
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::UNLIMITED;

    fn cfg(profile: ProfileName, platform: Option<&str>, text: &str) -> EngineConfig {
        EngineConfig::from_yaml(profile, platform, text, "config.yaml").unwrap()
    }

    #[test]
    fn yaml_booleans_and_their_word_spellings_agree() {
        for spelling in [
            "yes",
            "'yes'",
            "on",
            "\"on\"",
            "true",
            "'enabled'",
            "1",
            "'1'",
        ] {
            let c = cfg(
                ProfileName::HermesMain,
                None,
                &format!("tool_loop_guardrails:\n  hard_stop_enabled: {spelling}\n"),
            );
            assert!(c.guardrails.hard_stop_enabled, "{spelling}");
        }
        for spelling in ["no", "'no'", "off", "'off'", "false", "disabled", "0"] {
            let c = cfg(
                ProfileName::HermesMain,
                Some("cli"),
                &format!("tool_loop_guardrails:\n  warnings_enabled: {spelling}\n"),
            );
            assert!(!c.guardrails.warnings_enabled, "{spelling}");
        }
        let junk = cfg(
            ProfileName::HermesMain,
            None,
            "tool_loop_guardrails:\n  warnings_enabled: maybe\n",
        );
        assert!(junk.guardrails.warnings_enabled);
        assert_eq!(junk.notes[0].line, 2);
        assert_eq!(junk.notes[0].key, "tool_loop_guardrails.warnings_enabled");
    }

    #[test]
    fn thresholds_nested_wins_and_junk_falls_back() {
        let c = cfg(
            ProfileName::HermesMain,
            None,
            "tool_loop_guardrails:\n  exact_failure_warn_after: 7\n  warn_after:\n    exact_failure: 4\n  no_progress_block_after: 0\n  same_tool_failure_halt_after: ' 12 '\n  hard_stop_after:\n    exact_failure: null\n  exact_failure_block_after: 9\n",
        );
        assert_eq!(c.guardrails.exact_failure_warn_after, 4);
        assert_eq!(c.guardrails.no_progress_block_after, 5);
        assert_eq!(c.guardrails.same_tool_failure_halt_after, 12);
        assert_eq!(
            c.guardrails.exact_failure_block_after, 5,
            "a present nested null wins over the flat key"
        );
    }

    #[test]
    fn platform_rule_and_profiles() {
        assert!(
            cfg(ProfileName::HermesMain, Some("telegram"), "")
                .guardrails
                .hard_stop_enabled
        );
        assert!(
            !cfg(ProfileName::Hermes0_19_0, Some("telegram"), "")
                .guardrails
                .hard_stop_enabled
        );
        let off = cfg(
            ProfileName::HermesMain,
            Some("cron"),
            "tool_loop_guardrails:\n  non_interactive_hard_stop_enabled: off\n",
        );
        assert!(!off.guardrails.hard_stop_enabled);
    }

    #[test]
    fn max_turns_by_profile() {
        for v in ["null", "0", "-1", "unlimited", "'Infinity'", "'∞'"] {
            let c = cfg(
                ProfileName::HermesMain,
                None,
                &format!("agent:\n  max_turns: {v}\n"),
            );
            assert_eq!(c.max_iterations, UNLIMITED, "{v}");
        }
        assert_eq!(
            cfg(ProfileName::HermesMain, None, "agent:\n  max_turns: 60\n").max_iterations,
            60
        );
        assert_eq!(
            cfg(ProfileName::Hermes0_19_0, None, "agent:\n  max_turns: 0\n").max_iterations,
            90
        );
        assert_eq!(
            cfg(ProfileName::Hermes0_19_0, None, "max_turns: 40\n").max_iterations,
            40
        );
        let err = EngineConfig::from_yaml(
            ProfileName::Hermes0_19_0,
            None,
            "agent:\n  max_turns: lots\n",
            "c.yaml",
        )
        .unwrap_err();
        assert!(
            err.to_string().starts_with("c.yaml:2: `agent.max_turns`"),
            "{err}"
        );
    }

    #[test]
    fn delegation_keys() {
        let c = cfg(
            ProfileName::HermesMain,
            None,
            "delegation:\n  max_iterations: 30\n  max_concurrent_children: 0\n  max_spawn_depth: 2\n  child_timeout_seconds: 5\n",
        );
        assert_eq!(c.delegation.child_max_iterations, 30);
        assert_eq!(c.delegation.max_concurrent_children, 1);
        assert_eq!(c.delegation.max_spawn_depth, 2);
        assert_eq!(c.delegation.child_timeout_us, Some(30_000_000));
        let off = cfg(
            ProfileName::Article2026_06,
            None,
            "delegation:\n  child_timeout_seconds: 0\n",
        );
        assert_eq!(off.delegation.child_timeout_us, None);
        assert_eq!(
            cfg(ProfileName::Article2026_06, None, "")
                .delegation
                .child_timeout_us,
            Some(600_000_000)
        );
    }

    #[test]
    fn bad_yaml_names_the_file_and_line() {
        let err =
            EngineConfig::from_yaml(ProfileName::HermesMain, None, "a: 1\nb: [1,\n", "my.yaml")
                .unwrap_err();
        assert!(err.to_string().starts_with("my.yaml:"), "{err}");
    }

    #[test]
    fn unknown_keys_are_found_with_their_nearest_known_key() {
        use keys::{KeyProblem, Scope, check};
        let text = "model:\n  default: x\nagent:\n  max_turn: 60\n  gateway_timeout: 5\ntool_loop_guardrails:\n  hard_stop_enable: true\n  exact_failures: 3\n  hard_stop_afterr:\n    idempotent_no_progress: 3\n  loop_caps:\n    max_web_searches: 9\ndelegation:\n  max_concurency: 2\n";
        let root = yaml::parse(text).unwrap();
        let found = check(&root, ProfileName::Hermes0_19_0, Scope::UserFile);
        let got: Vec<(usize, &str, String)> = found
            .iter()
            .map(|i| (i.line, i.key.as_str(), i.message()))
            .collect();
        let want_keys = [
            (4, "agent.max_turn"),
            (5, "agent.gateway_timeout"),
            (7, "tool_loop_guardrails.hard_stop_enable"),
            (8, "tool_loop_guardrails.exact_failures"),
            (9, "tool_loop_guardrails.hard_stop_afterr"),
            (11, "tool_loop_guardrails.loop_caps"),
            (14, "delegation.max_concurency"),
        ];
        assert_eq!(
            got.iter().map(|g| (g.0, g.1)).collect::<Vec<_>>(),
            want_keys,
            "{got:#?}"
        );
        assert!(
            got[0].2.contains("did you mean `agent.max_turns`"),
            "{}",
            got[0].2
        );
        assert_eq!(found[1].problem, KeyProblem::NotSimulated);
        assert!(
            got[2]
                .2
                .contains("`tool_loop_guardrails.hard_stop_enabled`")
        );
        assert!(
            got[3]
                .2
                .contains("did you mean `tool_loop_guardrails.hard_stop_after.exact_failure`"),
            "{}",
            got[3].2
        );
        assert!(
            got[4]
                .2
                .contains("`tool_loop_guardrails.hard_stop_after.idempotent_no_progress`"),
            "{}",
            got[4].2
        );
        assert!(matches!(found[5].problem, KeyProblem::NotRead { .. }));
        assert!(got[6].2.contains("`delegation.max_concurrent_children`"));
        // A misspelled section is a near miss of one loopsim reads; other keys are Hermes's.
        let typo = yaml::parse(
            "tool_loop_guardrail:\n  hard_stop_enabled: true\nagnet: {}\nMY_TOKEN: x\n",
        )
        .unwrap();
        let found = check(&typo, ProfileName::HermesMain, Scope::UserFile);
        let names: Vec<&str> = found.iter().map(|i| i.key.as_str()).collect();
        assert_eq!(names, ["tool_loop_guardrail", "agnet"]);
        assert!(
            found[0]
                .message()
                .contains("did you mean `tool_loop_guardrails.hard_stop_enabled`"),
            "{}",
            found[0].message()
        );
        // The same file under hermes-main reads loop_caps; a scenario may set the model's
        // window, and no other model setting.
        let main = check(&root, ProfileName::HermesMain, Scope::UserFile);
        assert!(
            main.iter()
                .all(|i| i.key != "tool_loop_guardrails.loop_caps")
        );
        let strict = check(&root, ProfileName::HermesMain, Scope::Scenario);
        assert_eq!(
            (strict[0].line, strict[0].key.as_str()),
            (2, "model.default")
        );
    }

    #[test]
    fn the_hard_stop_rule_says_why() {
        let on = |p, platform: Option<&str>, text: &str| {
            let c = cfg(p, platform, text);
            (c.guardrails.hard_stop_enabled, c.hard_stop_rule.to_string())
        };
        let (hs, why) = on(ProfileName::HermesMain, Some("cli"), "");
        assert!(!hs && why.contains("off on attended platform cli"), "{why}");
        let (hs, why) = on(ProfileName::HermesMain, Some("telegram"), "");
        assert!(hs && why.contains("telegram is unattended"), "{why}");
        let (hs, why) = on(ProfileName::Hermes0_19_0, Some("telegram"), "");
        assert!(
            !hs && why.contains("hermes-0.19.0 has no platform rule"),
            "{why}"
        );
        let (hs, why) = on(
            ProfileName::HermesMain,
            Some("cron"),
            "tool_loop_guardrails:\n  non_interactive_hard_stop_enabled: false\n",
        );
        assert!(
            !hs && why.contains("non_interactive_hard_stop_enabled is false"),
            "{why}"
        );
        let (hs, why) = on(
            ProfileName::HermesMain,
            None,
            "tool_loop_guardrails:\n  hard_stop_enabled: true\n",
        );
        assert!(hs && why.contains("hard_stop_enabled is true"), "{why}");
    }

    #[test]
    fn values_hermes_replaces_are_noted() {
        let c = cfg(
            ProfileName::Hermes0_19_0,
            None,
            "agent:\n  max_turns: 0\ndelegation:\n  max_concurrent_children: 0\n  child_timeout_seconds: 5\ntool_loop_guardrails:\n  warn_after: 3\n",
        );
        let keys: Vec<(usize, &str)> = c.notes.iter().map(|n| (n.line, n.key.as_str())).collect();
        assert_eq!(
            keys,
            [
                (2, "agent.max_turns"),
                (7, "tool_loop_guardrails.warn_after"),
                (4, "delegation.max_concurrent_children"),
                (5, "delegation.child_timeout_seconds"),
            ]
        );
        assert_eq!(c.max_iterations, 90);
    }

    #[test]
    fn thresholds_of_detectors_that_are_off_change_nothing() {
        let off = cfg(ProfileName::HermesMain, Some("cli"), "");
        let key = "tool_loop_guardrails.hard_stop_after.idempotent_no_progress";
        assert!(
            off.inert_reason(key)
                .unwrap()
                .contains("off on attended platform cli")
        );
        assert!(
            off.inert_reason("tool_loop_guardrails.no_progress_block_after")
                .is_some()
        );
        assert_eq!(
            off.inert_reason("tool_loop_guardrails.warn_after.exact_failure"),
            None
        );
        let lower = cfg(
            ProfileName::HermesMain,
            Some("cli"),
            "tool_loop_guardrails:\n  hard_stop_after:\n    idempotent_no_progress: 3\n",
        );
        assert_ne!(off.fingerprint(), lower.fingerprint());
        assert_eq!(off.behaviour_fingerprint(), lower.behaviour_fingerprint());
        let on = cfg(ProfileName::HermesMain, Some("telegram"), "");
        assert_eq!(on.inert_reason(key), None);
    }
}
