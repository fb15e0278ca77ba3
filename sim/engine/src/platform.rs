//! Hermes's platforms: where an agent runs decides the hard-stop rule of newer versions.
//!
//! Hermes accepts any platform name (plugins add their own) and treats every name outside its
//! attended list as unattended. loopsim does the same, but warns about a name Hermes does not
//! ship, since a typo (`telgram`) silently changes the rule.

use crate::config::keys::nearest;
use crate::guardrails::{ATTENDED_PLATFORMS, is_unattended};

/// Unattended surfaces Hermes ships: its cron scheduler and its messaging gateways.
pub const UNATTENDED_PLATFORMS: &[&str] = &[
    "cron",
    "local",
    "telegram",
    "discord",
    "whatsapp",
    "whatsapp_cloud",
    "slack",
    "signal",
    "mattermost",
    "matrix",
    "homeassistant",
    "email",
    "sms",
    "dingtalk",
    "webhook",
    "msgraph_webhook",
    "feishu",
    "wecom",
    "wecom_callback",
    "weixin",
    "bluebubbles",
    "qqbot",
    "yuanbao",
    "relay",
];

/// Every platform name Hermes ships, attended first.
pub fn all() -> impl Iterator<Item = &'static str> {
    ATTENDED_PLATFORMS
        .iter()
        .chain(UNATTENDED_PLATFORMS)
        .copied()
}

/// Whether Hermes ships this platform (compared as Hermes does: trimmed, lowercased).
pub fn is_known(name: &str) -> bool {
    let p = name.trim().to_lowercase();
    all().any(|k| k == p)
}

/// The warning for a platform name Hermes does not ship, naming the rule that applies.
pub fn warning(name: &str) -> Option<String> {
    if is_known(name) {
        return None;
    }
    let lower = name.trim().to_lowercase();
    let hint = nearest(&lower, all())
        .map(|s| format!(" (did you mean `{s}`?)"))
        .unwrap_or_default();
    let rule = if is_unattended(Some(name)) {
        "it counts as unattended: profiles with the platform rule turn hard stops on"
    } else {
        "an empty name counts as attended"
    };
    Some(format!(
        "platform `{name}` is not one Hermes ships{hint}; {rule}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_names_and_typos() {
        assert!(is_known("telegram") && is_known(" CLI ") && is_known("cron"));
        let w = warning("telgram").unwrap();
        assert!(w.contains("did you mean `telegram`"), "{w}");
        assert!(w.contains("unattended"), "{w}");
        assert_eq!(warning("subagent"), None);
        assert!(warning("irc").unwrap().contains("not one Hermes ships"));
    }
}
