//! A scenario's `[expect]` block: what a run must show, under the scenario's own profile and,
//! in `[expect.under]`, under others; and the figures a report gave, within a tolerance.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

/// Assertions on the outcome. Missing keys assert nothing.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// The parent's last exit reason, exactly as Hermes prints it.
    pub exit_reason: Option<String>,
    /// No guardrail block or halt anywhere.
    pub no_hard_stop: Option<bool>,
    /// A guardrail stop with this decision code happened.
    pub stop_code: Option<String>,
    /// The first warning or notice came at or before this parent call.
    pub first_warning_before_call: Option<u64>,
    /// Parent model calls, inclusive bounds.
    pub parent_calls_min: Option<u64>,
    pub parent_calls_max: Option<u64>,
    /// Total dollars at most.
    pub max_cost_usd: Option<f64>,
    /// How many children were started, and how many hit the child timeout.
    pub spawned_children: Option<u64>,
    pub timed_out_children: Option<u64>,
    /// How many children crashed (`agents.NAME.crash_probability`).
    pub crashed_children: Option<u64>,
    /// The parent's first guardrail stop came at exactly this model call.
    pub stop_call: Option<u64>,
    /// The parent's first warning or notice came at exactly this model call.
    pub first_warning_call: Option<u64>,
    /// Outcome figures a report gave (an issue thread, a ledger), each to be reproduced within
    /// the block's tolerance.
    pub figures: Option<Figures>,
    /// Coverage marks each run must reach at least once (`decision.identical_cycle_halt`,
    /// `refund.execute_code_round`, ...; `loopsim codes` lists them): what the scenario
    /// claims to exercise.
    #[serde(default)]
    pub covers: Vec<String>,
    /// `loopsim check` runs the expectations for each of these seeds (default: `seed`).
    #[serde(default)]
    pub seeds: Vec<u64>,
    /// ... and each of these profiles (default: `profile`).
    #[serde(default)]
    pub profiles: Vec<Spanned<String>>,
    /// Other expectations for the same scenario under another profile (`"hermes-main"`), or
    /// another profile on another platform (`"hermes-main@cron"`): what a newer version does
    /// to the same behaviour.
    #[serde(default)]
    pub under: BTreeMap<String, Expect>,
}

/// Reported outcome figures. A run reproduces one when it lands within `tolerance` (a share,
/// default 0.05) of it.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Figures {
    pub tolerance: Option<f64>,
    /// The parent's model calls (its summary call included).
    pub parent_calls: Option<f64>,
    /// Every agent's model calls.
    pub calls: Option<f64>,
    /// The children's model calls.
    pub child_calls: Option<f64>,
    /// The run's virtual duration.
    pub minutes: Option<f64>,
    /// Prompt tokens of every agent, cache reads included.
    pub input_tokens: Option<f64>,
    pub cache_read_tokens: Option<f64>,
    /// Prompt tokens not read from the cache.
    pub fresh_input_tokens: Option<f64>,
    pub output_tokens: Option<f64>,
    /// Dollars, auxiliary models included.
    pub cost_usd: Option<f64>,
    /// Children started.
    pub children: Option<f64>,
    /// Guardrail warnings in every agent (notices not included).
    pub warnings: Option<f64>,
    /// Results replaced by the identical-result stub, in every agent.
    pub stubs: Option<f64>,
    /// Tool calls the model made, by tool, in every agent (refused ones included).
    #[serde(default)]
    pub tool_calls: BTreeMap<String, f64>,
}

/// An `[expect.under]` key: a profile, and the platform after an `@` when one is named.
pub fn under_key(key: &str) -> (&str, Option<&str>) {
    match key.split_once('@') {
        Some((p, platform)) => (p, Some(platform)),
        None => (key, None),
    }
}

impl Figures {
    pub const DEFAULT_TOLERANCE: f64 = 0.05;
}
