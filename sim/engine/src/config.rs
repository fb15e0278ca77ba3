//! `EngineConfig`: the engine's settings, read from the same keys as Hermes's `config.yaml`
//! (`agent.max_turns`, `tool_loop_guardrails.*`, `delegation.*`) with Hermes's lenient value
//! parsing, on top of a profile's defaults, plus the platform that decides the hard-stop rule.
//!
//! Hermes never rejects a bad value: junk falls back to the default. We do the same, and also
//! record a [`ConfigNote`] (line and key) for every value that fell back, so a user can see it.

use crate::budget::UNLIMITED;
use crate::delegation::{self, ChildBudget, DelegationPolicy};
use crate::guardrails::{GuardrailConfig, GuardrailRules, LoopCaps};
use crate::profile::{MaxTurnsParsing, Profile, ProfileName};
use crate::turn::TurnRules;
use crate::yaml::{self, Node, Yaml};

/// A config file that could not be read at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("{file}:{line}: invalid YAML: {message}")]
    Yaml {
        file: String,
        line: usize,
        message: String,
    },
    #[error("{file}:{line}: `{key}`: {message}")]
    Value {
        file: String,
        line: usize,
        key: String,
        message: String,
    },
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
    pub turn: TurnRules,
    /// Guardrail settings with the platform rule applied.
    pub guardrails: GuardrailConfig,
    pub rules: GuardrailRules,
    pub delegation: DelegationPolicy,
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
            turn: p.turn,
            guardrails: GuardrailConfig::default(),
            rules: p.guardrails,
            delegation: DelegationPolicy {
                child_max_iterations: p.child_max_iterations,
                max_concurrent_children: p.max_concurrent_children,
                max_spawn_depth: 1,
                child_timeout_us: p.child_timeout_secs.and_then(delegation::child_timeout_us),
                background_top_level: p.background_delegation,
                child_budget: ChildBudget::Independent,
            },
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
        crate::hash::Hash::of(&b)
    }

    fn apply_platform(&mut self) {
        if self.rules.platform_rule {
            self.guardrails = self.guardrails.with_platform(self.platform.as_deref());
        }
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
        // The platform rule must see the file's flags, so start again from raw defaults.
        c.guardrails = GuardrailConfig::default();
        c.read(root, file)?;
        c.apply_platform();
        Ok(c)
    }

    fn note(&mut self, node: &Node, key: &str, message: impl Into<String>) {
        self.notes.push(ConfigNote {
            line: node.line,
            key: key.to_string(),
            message: message.into(),
        });
    }

    fn read(&mut self, root: &Node, file: &str) -> Result<(), ConfigError> {
        let agent = root.get("agent").filter(|n| n.is_map());
        // Legacy root-level max_turns is used when agent.max_turns is missing or null.
        let max_turns = agent
            .and_then(|a| a.get("max_turns"))
            .filter(|n| n.value != Yaml::Null)
            .or_else(|| root.get("max_turns"));
        if let Some(n) = max_turns {
            self.read_max_turns(n, file)?;
        }
        if let Some(n) = agent.and_then(|a| a.get("stall_guards")) {
            let on = self.as_bool(n, "agent.stall_guards", true);
            self.rules.stall_guards &= on;
        }
        match root.get("tool_loop_guardrails") {
            Some(g) if g.is_map() => self.read_guardrails(g),
            Some(g) if g.value != Yaml::Null => self.note(
                g,
                "tool_loop_guardrails",
                "not a mapping: all defaults apply",
            ),
            _ => {}
        }
        if let Some(d) = root.get("delegation").filter(|n| n.is_map()) {
            self.read_delegation(d);
        }
        Ok(())
    }

    fn read_max_turns(&mut self, n: &Node, file: &str) -> Result<(), ConfigError> {
        let key = "agent.max_turns";
        let default = Profile::get(self.profile).max_iterations;
        match Profile::get(self.profile).max_turns_parsing {
            MaxTurnsParsing::Truthy => {
                self.max_iterations = match &n.value {
                    Yaml::Null | Yaml::Bool(false) => default,
                    Yaml::Int(0) => default,
                    Yaml::Float(f) if *f == 0.0 => default,
                    Yaml::Bool(true) => 1,
                    Yaml::Int(i) if *i < 0 => {
                        self.note(n, key, "a negative cap allows no model call");
                        0
                    }
                    Yaml::Int(i) => (*i).min(UNLIMITED as i128) as u64,
                    Yaml::Float(f) if f.is_finite() && *f > 0.0 => f.ceil() as u64,
                    other => {
                        return Err(ConfigError::Value {
                            file: file.to_string(),
                            line: n.line,
                            key: key.to_string(),
                            message: format!(
                                "this profile compares the cap as a number, and {} would crash Hermes; use a positive integer",
                                describe(other)
                            ),
                        });
                    }
                };
            }
            MaxTurnsParsing::ResolveTurnLimit => {
                let unlimited_words = [
                    "none",
                    "null",
                    "unlimited",
                    "infinite",
                    "infinity",
                    "inf",
                    "∞",
                    "-1",
                    "0",
                ];
                self.max_iterations = match &n.value {
                    Yaml::Null | Yaml::Bool(_) => default,
                    Yaml::Int(i) if *i <= 0 => UNLIMITED,
                    Yaml::Int(i) => (*i).min(UNLIMITED as i128) as u64,
                    Yaml::Float(f) if f.is_nan() => default,
                    Yaml::Float(f) if *f <= 0.0 || f.is_infinite() => UNLIMITED,
                    Yaml::Float(f) => f.ceil() as u64,
                    Yaml::Str(s) if unlimited_words.contains(&s.trim().to_lowercase().as_str()) => {
                        UNLIMITED
                    }
                    Yaml::Str(s) => match py_int_str(s) {
                        Some(i) if i <= 0 => UNLIMITED,
                        Some(i) => i.min(UNLIMITED as i128) as u64,
                        None => {
                            self.note(n, key, format!("`{s}` is not a number: unlimited"));
                            default
                        }
                    },
                    _ => {
                        self.note(n, key, "not a number: unlimited");
                        default
                    }
                };
            }
        }
        Ok(())
    }

    /// Hermes's `_as_bool`: real booleans and numbers by truth, the words 1/true/yes/on/enabled
    /// and 0/false/no/off/disabled, anything else the default.
    fn as_bool(&mut self, n: &Node, key: &str, default: bool) -> bool {
        match &n.value {
            Yaml::Bool(b) => *b,
            Yaml::Int(i) => *i != 0,
            Yaml::Float(f) => *f != 0.0,
            Yaml::Str(s) => match s.trim().to_lowercase().as_str() {
                "1" | "true" | "yes" | "on" | "enabled" => true,
                "0" | "false" | "no" | "off" | "disabled" => false,
                _ => {
                    self.note(
                        n,
                        key,
                        format!("`{s}` is not a yes/no word: default {default}"),
                    );
                    default
                }
            },
            Yaml::Null => default,
            other => {
                self.note(
                    n,
                    key,
                    format!("{} is not a boolean: default {default}", describe(other)),
                );
                default
            }
        }
    }

    /// Hermes's threshold parsing: Python `int(value)`, falling back below `minimum`.
    fn int_at_least(&mut self, n: &Node, key: &str, default: u32, minimum: i128) -> u32 {
        match py_int(&n.value) {
            Some(i) if i >= minimum => i.min(u32::MAX as i128) as u32,
            Some(i) => {
                self.note(n, key, format!("{i} is below {minimum}: default {default}"));
                default
            }
            None if n.value == Yaml::Null => default,
            None => {
                self.note(
                    n,
                    key,
                    format!(
                        "{} is not an integer: default {default}",
                        describe(&n.value)
                    ),
                );
                default
            }
        }
    }

    fn read_guardrails(&mut self, g: &Node) {
        let d = GuardrailConfig::default();
        let mut c = d;
        let newest = self.rules.platform_rule;
        if let Some(n) = g.get("warnings_enabled") {
            c.warnings_enabled = self.as_bool(
                n,
                "tool_loop_guardrails.warnings_enabled",
                d.warnings_enabled,
            );
        }
        if let Some(n) = g.get("hard_stop_enabled") {
            c.hard_stop_enabled = self.as_bool(
                n,
                "tool_loop_guardrails.hard_stop_enabled",
                d.hard_stop_enabled,
            );
        }
        if newest && let Some(n) = g.get("non_interactive_hard_stop_enabled") {
            c.non_interactive_hard_stop_enabled = self.as_bool(
                n,
                "tool_loop_guardrails.non_interactive_hard_stop_enabled",
                true,
            );
        }
        let thresholds: [Threshold; 6] = [
            (
                "exact_failure_warn_after",
                "warn_after",
                "exact_failure",
                |c| &mut c.exact_failure_warn_after,
            ),
            (
                "same_tool_failure_warn_after",
                "warn_after",
                "same_tool_failure",
                |c| &mut c.same_tool_failure_warn_after,
            ),
            (
                "no_progress_warn_after",
                "warn_after",
                "idempotent_no_progress",
                |c| &mut c.no_progress_warn_after,
            ),
            (
                "exact_failure_block_after",
                "hard_stop_after",
                "exact_failure",
                |c| &mut c.exact_failure_block_after,
            ),
            (
                "same_tool_failure_halt_after",
                "hard_stop_after",
                "same_tool_failure",
                |c| &mut c.same_tool_failure_halt_after,
            ),
            (
                "no_progress_block_after",
                "hard_stop_after",
                "idempotent_no_progress",
                |c| &mut c.no_progress_block_after,
            ),
        ];
        for (flat, section, nested, field) in thresholds {
            // A nested key that is present wins, even when its value is null.
            let section_node = g.get(section).filter(|s| s.is_map());
            let (node, key) = match section_node.and_then(|s| s.get(nested)) {
                Some(n) => (Some(n), format!("tool_loop_guardrails.{section}.{nested}")),
                None => (g.get(flat), format!("tool_loop_guardrails.{flat}")),
            };
            let default = *field(&mut d.clone());
            if let Some(n) = node {
                *field(&mut c) = self.int_at_least(n, &key, default, 1);
            }
        }
        if newest && let Some(caps) = g.get("loop_caps").filter(|n| n.is_map()) {
            let dc = LoopCaps::default();
            if let Some(n) = caps.get("max_web_searches") {
                c.loop_caps.max_web_searches = self.int_at_least(
                    n,
                    "tool_loop_guardrails.loop_caps.max_web_searches",
                    dc.max_web_searches,
                    0,
                );
            }
            if let Some(n) = caps.get("max_subagents") {
                c.loop_caps.max_subagents = self.int_at_least(
                    n,
                    "tool_loop_guardrails.loop_caps.max_subagents",
                    dc.max_subagents,
                    0,
                );
            }
        }
        self.guardrails = c;
    }

    fn read_delegation(&mut self, d: &Node) {
        if let Some(n) = d.get("max_iterations") {
            match py_int(&n.value) {
                Some(i) if i > 0 => {
                    self.delegation.child_max_iterations = i.min(UNLIMITED as i128) as u64
                }
                _ if n.value == Yaml::Null => {}
                _ => self.note(
                    n,
                    "delegation.max_iterations",
                    "not a positive integer: default 50",
                ),
            }
        }
        if let Some(n) = d
            .get("max_concurrent_children")
            .filter(|n| n.value != Yaml::Null)
        {
            match py_int(&n.value) {
                Some(i) => {
                    self.delegation.max_concurrent_children = i.clamp(1, u32::MAX as i128) as u32
                }
                None => self.note(
                    n,
                    "delegation.max_concurrent_children",
                    "not an integer: default 3",
                ),
            }
        }
        if let Some(n) = d.get("max_spawn_depth").filter(|n| n.value != Yaml::Null) {
            match py_int(&n.value) {
                Some(i) => self.delegation.max_spawn_depth = i.clamp(1, u32::MAX as i128) as u32,
                None => self.note(n, "delegation.max_spawn_depth", "not an integer: default 1"),
            }
        }
        if let Some(n) = d
            .get("child_timeout_seconds")
            .filter(|n| n.value != Yaml::Null)
        {
            match py_float(&n.value) {
                Some(f) => self.delegation.child_timeout_us = delegation::child_timeout_us(f),
                None => self.note(
                    n,
                    "delegation.child_timeout_seconds",
                    "not a number: default",
                ),
            }
        }
    }
}

/// A threshold's flat key, nested section and key, and field.
type Threshold = (
    &'static str,
    &'static str,
    &'static str,
    fn(&mut GuardrailConfig) -> &mut u32,
);

fn describe(v: &Yaml) -> String {
    match v {
        Yaml::Null => "null".into(),
        Yaml::Bool(b) => format!("{b}"),
        Yaml::Int(i) => format!("{i}"),
        Yaml::Float(f) => format!("{f}"),
        Yaml::Str(s) => format!("`{s}`"),
        Yaml::Seq(_) => "a list".into(),
        Yaml::Map(_) => "a mapping".into(),
    }
}

/// Python's `int(value)` on a YAML value; `None` where Python raises (or would overflow).
pub fn py_int(v: &Yaml) -> Option<i128> {
    match v {
        Yaml::Bool(b) => Some(*b as i128),
        Yaml::Int(i) => Some(*i),
        Yaml::Float(f) if f.is_finite() => Some(f.trunc() as i128),
        Yaml::Str(s) => py_int_str(s),
        _ => None,
    }
}

/// Python's `int(str)`: surrounding whitespace, a sign, digits with single underscores.
pub fn py_int_str(s: &str) -> Option<i128> {
    let t = s.trim();
    let (neg, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    if body.is_empty() || body.starts_with('_') || body.ends_with('_') || body.contains("__") {
        return None;
    }
    if !body.bytes().all(|b| b.is_ascii_digit() || b == b'_') {
        return None;
    }
    let v: i128 = body.replace('_', "").parse().ok()?;
    Some(if neg { -v } else { v })
}

/// Python's `float(value)` on a YAML value.
pub fn py_float(v: &Yaml) -> Option<f64> {
    match v {
        Yaml::Bool(b) => Some(*b as u8 as f64),
        Yaml::Int(i) => Some(*i as f64),
        Yaml::Float(f) => Some(*f),
        Yaml::Str(s) => {
            let t = s.trim();
            if t.starts_with('_') || t.ends_with('_') || t.contains("__") {
                return None;
            }
            t.replace('_', "").parse().ok()
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
