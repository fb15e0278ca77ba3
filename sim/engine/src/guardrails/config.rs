//! Guardrail thresholds and switches: Hermes's `tool_loop_guardrails` section.

/// Loop caps: per-turn ceilings that apply whether or not hard stops are on. 0 disables one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoopCaps {
    pub max_web_searches: u32,
    pub max_subagents: u32,
}

impl Default for LoopCaps {
    fn default() -> Self {
        LoopCaps {
            max_web_searches: 50,
            max_subagents: 50,
        }
    }
}

/// The effective guardrail configuration (after the platform rule).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GuardrailConfig {
    pub warnings_enabled: bool,
    pub hard_stop_enabled: bool,
    pub non_interactive_hard_stop_enabled: bool,
    pub exact_failure_warn_after: u32,
    pub exact_failure_block_after: u32,
    pub same_tool_failure_warn_after: u32,
    pub same_tool_failure_halt_after: u32,
    pub no_progress_warn_after: u32,
    pub no_progress_block_after: u32,
    pub loop_caps: LoopCaps,
}

impl Default for GuardrailConfig {
    fn default() -> Self {
        GuardrailConfig {
            warnings_enabled: true,
            hard_stop_enabled: false,
            non_interactive_hard_stop_enabled: true,
            exact_failure_warn_after: 2,
            exact_failure_block_after: 5,
            same_tool_failure_warn_after: 3,
            same_tool_failure_halt_after: 8,
            no_progress_warn_after: 2,
            no_progress_block_after: 5,
            loop_caps: LoopCaps::default(),
        }
    }
}

impl GuardrailConfig {
    /// No detector on: what a runtime without Hermes's guardrails does (every call allowed).
    pub const OFF: GuardrailConfig = GuardrailConfig {
        warnings_enabled: false,
        hard_stop_enabled: false,
        non_interactive_hard_stop_enabled: false,
        exact_failure_warn_after: 0,
        exact_failure_block_after: 0,
        same_tool_failure_warn_after: 0,
        same_tool_failure_halt_after: 0,
        no_progress_warn_after: 0,
        no_progress_block_after: 0,
        loop_caps: LoopCaps {
            max_web_searches: 0,
            max_subagents: 0,
        },
    };
}

/// Surfaces where a person watches the loop; anything else is unattended.
pub const ATTENDED_PLATFORMS: &[&str] = &["cli", "tui", "desktop", "acp", "subagent", "api_server"];

/// Gateways and cron run unattended: there the platform rule turns hard stops on.
pub fn is_unattended(platform: Option<&str>) -> bool {
    match platform.map(str::trim) {
        None | Some("") => false,
        Some(p) => !ATTENDED_PLATFORMS.contains(&p.to_lowercase().as_str()),
    }
}

impl GuardrailConfig {
    /// Applies the platform rule of newer Hermes versions.
    pub fn with_platform(mut self, platform: Option<&str>) -> Self {
        if self.non_interactive_hard_stop_enabled && is_unattended(platform) {
            self.hard_stop_enabled = true;
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platform_rule() {
        let c = GuardrailConfig::default();
        assert!(!c.with_platform(Some(" CLI ")).hard_stop_enabled);
        assert!(!c.with_platform(None).hard_stop_enabled);
        assert!(!c.with_platform(Some("  ")).hard_stop_enabled);
        assert!(c.with_platform(Some("Telegram")).hard_stop_enabled);
        assert!(c.with_platform(Some("cron")).hard_stop_enabled);
        let off = GuardrailConfig {
            non_interactive_hard_stop_enabled: false,
            ..c
        };
        assert!(!off.with_platform(Some("cron")).hard_stop_enabled);
    }
}
