//! Reading Hermes's config keys the way Hermes does: junk falls back to the default, and
//! every fallback is recorded as a [`ConfigNote`].

use super::{ConfigError, ConfigNote, EngineConfig};
use crate::budget::UNLIMITED;
use crate::delegation;
use crate::guardrails::{GuardrailConfig, LoopCaps};
use crate::profile::{MaxTurnsParsing, Profile};
use crate::yaml::{Node, Yaml};

impl EngineConfig {
    fn note(&mut self, node: &Node, key: &str, message: impl Into<String>) {
        self.notes.push(ConfigNote {
            line: node.line,
            key: key.to_string(),
            message: message.into(),
        });
    }

    pub(super) fn read(&mut self, root: &Node, file: &str) -> Result<(), ConfigError> {
        if !root.is_map() && root.value != Yaml::Null {
            self.note(
                root,
                "(top level)",
                "not a mapping: Hermes uses its defaults",
            );
            return Ok(());
        }
        let agent = self.section(root, "agent");
        // Legacy root-level max_turns is used when agent.max_turns is missing or null.
        let max_turns = agent
            .and_then(|a| a.get("max_turns"))
            .filter(|n| n.value != Yaml::Null)
            .or_else(|| root.get("max_turns"));
        if let Some(n) = max_turns {
            self.read_max_turns(n, file)?;
        }
        if self.rules.stall_guards
            && let Some(n) = agent.and_then(|a| a.get("stall_guards"))
        {
            let on = self.as_bool(n, "agent.stall_guards", true);
            self.rules.stall_guards &= on;
        }
        if let Some(n) = agent.and_then(|a| a.get("api_max_retries")) {
            self.read_api_max_retries(n);
        }
        if let Some(g) = self.section(root, "tool_loop_guardrails") {
            self.read_guardrails(g);
        }
        if let Some(d) = self.section(root, "delegation") {
            self.read_delegation(d);
        }
        if let Some(c) = self.section(root, "compression") {
            self.read_compression(c, file)?;
        }
        // `model` may be a plain name; only a mapping holds the window.
        if let Some(n) = root
            .get("model")
            .filter(|m| m.is_map())
            .and_then(|m| m.get("context_length"))
        {
            self.read_context_length(n);
        }
        Ok(())
    }

    /// `model.context_length` as 0.19.0 reads it: `int(value)` (a value it refuses, like
    /// `256K`, is dropped with a warning), then used only when above 0; otherwise Hermes
    /// detects the window itself, which in loopsim is the scenario's `context_window`.
    fn read_context_length(&mut self, n: &Node) {
        let key = "model.context_length";
        let fallback = "Hermes detects the window itself (here: the model's context_window)";
        match py_int(&n.value) {
            Some(i) if i > 0 => {
                if let Yaml::Bool(_) = n.value {
                    self.note(n, key, format!("a boolean is read as the integer {i}"));
                }
                self.context_length = Some(i.min(u64::MAX as i128) as u64);
            }
            Some(i) => self.note(n, key, format!("{i} is not above 0: {fallback}")),
            None if n.value == Yaml::Null => {}
            None => self.note(
                n,
                key,
                format!(
                    "{} is not a plain integer (256000, not 256K): {fallback}",
                    describe(&n.value)
                ),
            ),
        }
    }

    /// A section as Hermes reads it: a mapping, or (with a note) nothing.
    fn section<'n>(&mut self, parent: &'n Node, key: &str) -> Option<&'n Node> {
        self.section_at(parent, key, key)
    }

    fn section_at<'n>(&mut self, parent: &'n Node, key: &str, path: &str) -> Option<&'n Node> {
        let n = parent.get(key)?;
        if n.is_map() {
            return Some(n);
        }
        if n.value != Yaml::Null {
            self.note(n, path, "not a mapping: all its defaults apply");
        }
        None
    }

    fn read_max_turns(&mut self, n: &Node, file: &str) -> Result<(), ConfigError> {
        let key = "agent.max_turns";
        let default = Profile::get(self.profile).max_iterations;
        match Profile::get(self.profile).max_turns_parsing {
            MaxTurnsParsing::Truthy => {
                self.max_iterations = match &n.value {
                    Yaml::Null => default,
                    Yaml::Bool(false) | Yaml::Int(0) => {
                        self.note(
                            n,
                            key,
                            format!("a false value means the default {default} in this profile"),
                        );
                        default
                    }
                    Yaml::Float(f) if *f == 0.0 => {
                        self.note(
                            n,
                            key,
                            format!("a false value means the default {default} in this profile"),
                        );
                        default
                    }
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
        for section in ["warn_after", "hard_stop_after"] {
            self.section_at(g, section, &format!("tool_loop_guardrails.{section}"));
        }
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
        if newest
            && let Some(caps) = self.section_at(g, "loop_caps", "tool_loop_guardrails.loop_caps")
        {
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

    /// Hermes's `int(value)`, at least 1 (one attempt, no retry); anything `int()` refuses,
    /// null included, means the default 3.
    fn read_api_max_retries(&mut self, n: &Node) {
        let key = "agent.api_max_retries";
        let Some(mut retry) = self.provider_retry else {
            return;
        };
        retry.attempts = match py_int(&n.value) {
            Some(i) if i < 1 => {
                self.note(n, key, format!("{i} is raised to 1 (a single attempt)"));
                1
            }
            Some(i) => i.min(u32::MAX as i128) as u32,
            None => {
                self.note(n, key, "not an integer: default 3");
                crate::retry::ProviderRetry::HERMES.attempts
            }
        };
        self.provider_retry = Some(retry);
    }

    /// The `compression` section as 0.19.0's agent setup reads it: `enabled` is on only
    /// for `str(value).lower()` in true/1/yes (so a null turns it off), and the two ratios go
    /// through `float()`, which would stop Hermes on anything else.
    fn read_compression(&mut self, c: &Node, file: &str) -> Result<(), ConfigError> {
        let Some(mut rules) = self.compression else {
            return Ok(());
        };
        let mut enabled = true;
        if let Some(n) = c.get("enabled") {
            enabled = match &n.value {
                Yaml::Bool(b) => *b,
                Yaml::Int(i) => *i == 1,
                Yaml::Str(s) => matches!(s.to_lowercase().as_str(), "true" | "1" | "yes"),
                _ => false,
            };
            if !enabled && !matches!(n.value, Yaml::Bool(false)) {
                self.note(
                    n,
                    "compression.enabled",
                    "not true, 1 or yes: compression off",
                );
            }
        }
        for (name, slot) in [
            ("threshold", &mut rules.threshold),
            ("target_ratio", &mut rules.target_ratio),
        ] {
            let Some(n) = c.get(name) else { continue };
            match py_float(&n.value).filter(|f| f.is_finite()) {
                Some(f) => *slot = f,
                None => {
                    return Err(ConfigError::Value {
                        file: file.to_string(),
                        line: n.line,
                        key: format!("compression.{name}"),
                        message: format!(
                            "{} is not a number, and Hermes's float() would stop the agent",
                            describe(&n.value)
                        ),
                    });
                }
            }
        }
        self.compression = enabled.then_some(rules);
        Ok(())
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
                    if i < 1 {
                        self.note(
                            n,
                            "delegation.max_concurrent_children",
                            format!("{i} is raised to 1"),
                        );
                    }
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
                Some(i) => {
                    if i < 1 {
                        self.note(
                            n,
                            "delegation.max_spawn_depth",
                            format!("{i} is raised to 1"),
                        );
                    }
                    self.delegation.max_spawn_depth = i.clamp(1, u32::MAX as i128) as u32
                }
                None => self.note(n, "delegation.max_spawn_depth", "not an integer: default 1"),
            }
        }
        if let Some(n) = d
            .get("child_timeout_seconds")
            .filter(|n| n.value != Yaml::Null)
        {
            match py_float(&n.value) {
                Some(f) => {
                    if f > 0.0 && f < delegation::MIN_CHILD_TIMEOUT_SECS {
                        self.note(
                            n,
                            "delegation.child_timeout_seconds",
                            format!(
                                "{f} s is raised to the {} s floor",
                                delegation::MIN_CHILD_TIMEOUT_SECS
                            ),
                        );
                    }
                    self.delegation.child_timeout_us = delegation::child_timeout_us(f)
                }
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
