//! Why hard stops are on or off for a run: the answer to "why did nothing stop?".

use std::fmt;

use crate::guardrails::{GuardrailConfig, is_unattended};
use crate::profile::ProfileName;

/// How `hard_stop_enabled` was resolved for the platform. `Display` completes "hard stops
/// are ...".
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HardStopRule {
    /// `hard_stop_enabled` as the config set it (true), whatever the platform.
    Configured,
    /// Off as configured, on an attended platform (or none, which counts as attended).
    OffAttended { platform: Option<String> },
    /// Turned on by the platform rule: the platform is unattended.
    Unattended { platform: String },
    /// Unattended, but `non_interactive_hard_stop_enabled` is off.
    OptedOut { platform: String },
    /// Off as configured, and this profile has no platform rule.
    NoPlatformRule { profile: ProfileName },
    /// The profile's runtime has no tool-loop guardrails at all.
    NoGuardrails { profile: ProfileName },
}

impl HardStopRule {
    pub(super) fn resolve(
        profile: ProfileName,
        platform_rule: bool,
        configured: bool,
        effective: &GuardrailConfig,
        platform: Option<&str>,
    ) -> HardStopRule {
        let unattended = is_unattended(platform);
        let named = || platform.unwrap_or("").trim().to_string();
        if configured {
            HardStopRule::Configured
        } else if !platform_rule {
            HardStopRule::NoPlatformRule { profile }
        } else if effective.hard_stop_enabled {
            HardStopRule::Unattended { platform: named() }
        } else if unattended {
            HardStopRule::OptedOut { platform: named() }
        } else {
            HardStopRule::OffAttended {
                platform: platform
                    .map(|p| p.trim().to_string())
                    .filter(|p| !p.is_empty()),
            }
        }
    }

    /// Whether hard stops are on.
    pub fn on(&self) -> bool {
        matches!(
            self,
            HardStopRule::Configured | HardStopRule::Unattended { .. }
        )
    }
}

impl fmt::Display for HardStopRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HardStopRule::Configured => f.write_str("on (hard_stop_enabled is true)"),
            HardStopRule::OffAttended { platform: Some(p) } => write!(
                f,
                "off on attended platform {p} (hard_stop_enabled is false)"
            ),
            HardStopRule::OffAttended { platform: None } => f.write_str(
                "off: no platform, which counts as attended (hard_stop_enabled is false)",
            ),
            HardStopRule::Unattended { platform } => write!(
                f,
                "on: {platform} is unattended (the platform rule, non_interactive_hard_stop_enabled)"
            ),
            HardStopRule::OptedOut { platform } => write!(
                f,
                "off: {platform} is unattended, but non_interactive_hard_stop_enabled is false"
            ),
            HardStopRule::NoPlatformRule { profile } => write!(
                f,
                "off: hard_stop_enabled is false and {profile} has no platform rule"
            ),
            HardStopRule::NoGuardrails { profile } => write!(
                f,
                "off: {profile} has no tool-loop guardrails (every call runs)"
            ),
        }
    }
}
