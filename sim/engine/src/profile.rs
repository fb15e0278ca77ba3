//! Engine profiles: named versions of Hermes's semantics. A profile is data, defaults plus
//! switches, read by the one engine; nothing is copied per version.

use std::fmt;
use std::str::FromStr;

use crate::budget::UNLIMITED;
use crate::guardrails::GuardrailRules;
use crate::hash::ResultHashing;
use crate::turn::{GraceMode, TurnRules};

/// The versions loopsim can reproduce.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProfileName {
    /// The June 2026 article: 90/50, three children, 600 s child timeout, a grace call.
    Article2026_06,
    /// The PyPI wheel hermes-agent 0.19.0.
    Hermes0_19_0,
    /// Newest loop and guardrails without execute_code hash stripping: the incident version.
    HermesV0_21_5,
    /// The newest semantics, with the volatile-field fix.
    HermesMain,
}

impl ProfileName {
    pub const ALL: [ProfileName; 4] = [
        ProfileName::Article2026_06,
        ProfileName::Hermes0_19_0,
        ProfileName::HermesV0_21_5,
        ProfileName::HermesMain,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ProfileName::Article2026_06 => "article-2026-06",
            ProfileName::Hermes0_19_0 => "hermes-0.19.0",
            ProfileName::HermesV0_21_5 => "hermes-v0.21.5",
            ProfileName::HermesMain => "hermes-main",
        }
    }
}

impl fmt::Display for ProfileName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown profile name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown profile `{0}` (expected one of: article-2026-06, hermes-0.19.0, hermes-v0.21.5, hermes-main)"
)]
pub struct UnknownProfile(pub String);

impl FromStr for ProfileName {
    type Err = UnknownProfile;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ProfileName::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| UnknownProfile(s.to_string()))
    }
}

/// How `agent.max_turns` is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MaxTurnsParsing {
    /// 0.19.0: any truthy value is used as is; falsy values give the default.
    Truthy,
    /// Newest `resolve_turn_limit`: null, 0, negatives and words like `unlimited` mean unlimited.
    ResolveTurnLimit,
}

/// Everything that differs between versions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Profile {
    pub name: ProfileName,
    /// Default parent cap (`agent.max_turns`); [`UNLIMITED`] is Python's `sys.maxsize`.
    pub max_iterations: u64,
    pub max_turns_parsing: MaxTurnsParsing,
    pub turn: TurnRules,
    pub guardrails: GuardrailRules,
    pub child_max_iterations: u64,
    pub max_concurrent_children: u32,
    pub child_timeout_secs: Option<f64>,
    /// Top-level delegations go to the background and come back as a new message.
    pub background_delegation: bool,
}

impl Profile {
    pub fn get(name: ProfileName) -> Profile {
        let summary = TurnRules {
            grace: GraceMode::SummaryCall,
            refund_extends_call_cap: false,
            dedupe_identical_calls: true,
            names_context_exhaustion: false,
        };
        let newest_turn = TurnRules {
            names_context_exhaustion: true,
            ..summary
        };
        let v0_19 = Profile {
            name,
            max_iterations: 90,
            max_turns_parsing: MaxTurnsParsing::Truthy,
            turn: summary,
            guardrails: GuardrailRules::V0_19,
            child_max_iterations: 50,
            max_concurrent_children: 3,
            child_timeout_secs: None,
            background_delegation: true,
        };
        match name {
            ProfileName::Article2026_06 => Profile {
                turn: TurnRules {
                    grace: GraceMode::ExtraToolsFreeCall,
                    refund_extends_call_cap: true,
                    dedupe_identical_calls: false,
                    names_context_exhaustion: false,
                },
                child_timeout_secs: Some(600.0),
                background_delegation: false,
                ..v0_19
            },
            ProfileName::Hermes0_19_0 => v0_19,
            // Hermes raised the delegation defaults after 0.19 (PRs #86506 and #86745, first
            // in v0.20.2): a child's budget from 50 to 250 iterations, and from 3 to 10
            // children at once.
            ProfileName::HermesV0_21_5 => Profile {
                max_iterations: UNLIMITED,
                child_max_iterations: 250,
                max_concurrent_children: 10,
                turn: newest_turn,
                max_turns_parsing: MaxTurnsParsing::ResolveTurnLimit,
                guardrails: GuardrailRules {
                    result_hashing: ResultHashing::Plain,
                    ..GuardrailRules::NEWEST
                },
                ..v0_19
            },
            ProfileName::HermesMain => Profile {
                max_iterations: UNLIMITED,
                child_max_iterations: 250,
                max_concurrent_children: 10,
                turn: newest_turn,
                max_turns_parsing: MaxTurnsParsing::ResolveTurnLimit,
                guardrails: GuardrailRules::NEWEST,
                ..v0_19
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for p in ProfileName::ALL {
            assert_eq!(p.as_str().parse::<ProfileName>().unwrap(), p);
        }
        assert!("hermes-9".parse::<ProfileName>().is_err());
    }

    #[test]
    fn profiles_differ_where_versions_did() {
        let main = Profile::get(ProfileName::HermesMain);
        let v0215 = Profile::get(ProfileName::HermesV0_21_5);
        assert_eq!(
            main.guardrails.result_hashing,
            ResultHashing::StripExecuteCodeVolatile
        );
        assert_eq!(v0215.guardrails.result_hashing, ResultHashing::Plain);
        assert!(v0215.guardrails.stall_guards);
        assert_eq!(main.max_iterations, UNLIMITED);
        let old = Profile::get(ProfileName::Hermes0_19_0);
        assert!(!old.guardrails.stall_guards && !old.guardrails.loop_caps);
        let article = Profile::get(ProfileName::Article2026_06);
        assert_eq!(article.turn.grace, GraceMode::ExtraToolsFreeCall);
        assert_eq!(article.child_timeout_secs, Some(600.0));
        // Delegation defaults: 50 iterations and 3 at once in 0.19.0, 250 and 10 from v0.20.2.
        assert_eq!(
            (old.child_max_iterations, old.max_concurrent_children),
            (50, 3)
        );
        for newer in [main, v0215] {
            assert_eq!(
                (newer.child_max_iterations, newer.max_concurrent_children),
                (250, 10)
            );
        }
    }
}
