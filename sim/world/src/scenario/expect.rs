//! A scenario's `[expect]` block: what a run must show, under the scenario's own profile and,
//! in `[expect.under]`, under others; and the figures a report gave, within a tolerance.

use std::collections::BTreeMap;

use loopsim_engine::guardrails::DecisionCode;
use loopsim_engine::profile::ProfileName;
use loopsim_engine::turn::ExitReason;
use serde::Deserialize;
use toml::Spanned;

use super::{Lines, Scenario, ScenarioError};

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

/// Checking `[expect]`: every value one a run can produce, every profile and platform one loopsim
/// knows.
impl Scenario {
    /// `[expect]` values are ones a run can produce, and one step at most marks the loop.
    pub(super) fn validate_expect(&self, l: &Lines<'_>) -> Result<(), ScenarioError> {
        let e = &self.file.expect;
        self.validate_expect_block(e, "expect", l)?;
        for (key, block) in &e.under {
            let at = format!("expect.under.{key}");
            let (profile, platform) = super::under_key(key);
            if let Err(err) = profile.parse::<ProfileName>() {
                return l.err(
                    &at,
                    format!("`{key}`: {err}; a key is PROFILE or PROFILE@PLATFORM"),
                );
            }
            if platform.is_some_and(|p| p.trim().is_empty()) {
                return l.err(&at, format!("`{key}`: an empty platform after `@`"));
            }
            if profile == self.file.profile.get_ref() && platform.is_none() {
                return l.err(
                    &at,
                    "is the scenario's own profile: its expectations go in [expect] itself",
                );
            }
            if !block.under.is_empty() || !block.seeds.is_empty() || !block.profiles.is_empty() {
                return l.err(
                    &at,
                    "takes expectations only (`under`, `seeds` and `profiles` belong to [expect])",
                );
            }
            if let Some(w) = platform.and_then(loopsim_engine::platform::warning) {
                return l.err(&at, w);
            }
            self.validate_expect_block(block, &at, l)?;
        }
        let mut marks = Vec::new();
        for (name, a) in &self.file.agents {
            let mut scripts = vec![
                ("script".to_string(), &a.script),
                ("on_result".to_string(), &a.on_result),
            ];
            for (k, t) in a.turns.iter().enumerate() {
                scripts.push((format!("turns[{k}].script"), &t.script));
            }
            for (which, steps) in scripts {
                for (i, s) in steps.iter().enumerate() {
                    if s.loop_begins {
                        marks.push(format!("agents.{name}.{which}[{i}]"));
                    }
                }
            }
        }
        if marks.len() > 1 {
            return l.err(
                &format!("{}.loop_begins", marks[1]),
                format!(
                    "a second loop_begins (the first is {}): waste counts from one point",
                    marks[0]
                ),
            );
        }
        Ok(())
    }
    /// One block of expectations (`[expect]` or one of its `under` entries).
    fn validate_expect_block(
        &self,
        e: &Expect,
        at: &str,
        l: &Lines<'_>,
    ) -> Result<(), ScenarioError> {
        for (i, m) in e.covers.iter().enumerate() {
            if crate::coverage::Mark::parse(m).is_none() {
                let hint = crate::coverage::Mark::nearest(m)
                    .map(|n| format!(" (did you mean `{n}`?)"))
                    .unwrap_or_default();
                return l.err(
                    &format!("{at}.covers[{i}]"),
                    format!("`{m}` is not a coverage mark{hint}; `loopsim codes` lists them"),
                );
            }
        }
        if let Some(r) = &e.exit_reason
            && ExitReason::parse(r).is_none()
        {
            let names = ExitReason::FORMS
                .iter()
                .map(|f| f.split('(').next().unwrap_or(f));
            let base = r.split('(').next().unwrap_or(r);
            let hint = loopsim_engine::config::keys::nearest(base, names)
                .and_then(|n| ExitReason::FORMS.iter().find(|f| f.starts_with(n)))
                .map(|f| {
                    if f.contains("N/M") || f.contains("...") {
                        format!(" (its form is `{f}`, with the run's figures filled in)")
                    } else {
                        format!(" (did you mean `{f}`?)")
                    }
                })
                .unwrap_or_default();
            return l.err(
                &format!("{at}.exit_reason"),
                format!(
                    "`{r}` is not an exit reason Hermes prints{hint}; `loopsim codes` lists them"
                ),
            );
        }
        if let Some(c) = &e.stop_code {
            match DecisionCode::parse(c) {
                Some(code) if code.is_stop() => {}
                Some(_) => {
                    return l.err(
                        &format!("{at}.stop_code"),
                        format!("`{c}` is a warning or allow code, not a stop (block or halt)"),
                    );
                }
                // Another runtime's limit stops a run too (`raised(MaxTurnsExceeded)`,
                // `token_budget_exhausted`).
                None if ExitReason::parse(c).is_some_and(|r| r.is_runtime_limit()) => {}
                None => {
                    let hint = loopsim_engine::config::keys::nearest(
                        c,
                        DecisionCode::ALL.iter().map(|d| d.as_str()),
                    )
                    .map(|n| format!(" (did you mean `{n}`?)"))
                    .unwrap_or_default();
                    return l.err(
                        &format!("{at}.stop_code"),
                        format!(
                            "`{c}` is not a guardrail decision code or another runtime's limit{hint}; `loopsim codes` lists them"
                        ),
                    );
                }
            }
        }
        if e.no_hard_stop == Some(true) && e.stop_code.is_some() {
            return l.err(
                &format!("{at}.stop_code"),
                "contradicts `no_hard_stop = true`",
            );
        }
        if let (Some(a), Some(b)) = (e.parent_calls_min, e.parent_calls_max)
            && a > b
        {
            return l.err(
                &format!("{at}.parent_calls_min"),
                format!("{a} is above parent_calls_max {b}"),
            );
        }
        if let Some(c) = e.max_cost_usd
            && !(c.is_finite() && c >= 0.0)
        {
            return l.err(
                &format!("{at}.max_cost_usd"),
                "must be a non-negative number of dollars",
            );
        }
        if let Some(f) = &e.figures {
            let mut values: Vec<(String, f64)> = [
                ("parent_calls", f.parent_calls),
                ("calls", f.calls),
                ("child_calls", f.child_calls),
                ("warnings", f.warnings),
                ("stubs", f.stubs),
                ("minutes", f.minutes),
                ("input_tokens", f.input_tokens),
                ("cache_read_tokens", f.cache_read_tokens),
                ("fresh_input_tokens", f.fresh_input_tokens),
                ("output_tokens", f.output_tokens),
                ("cost_usd", f.cost_usd),
                ("children", f.children),
            ]
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k.to_string(), v)))
            .collect();
            values.extend(
                f.tool_calls
                    .iter()
                    .map(|(t, v)| (format!("tool_calls.{t}"), *v)),
            );
            for (k, v) in values {
                if !(v.is_finite() && v >= 0.0) {
                    return l.err(
                        &format!("{at}.figures.{k}"),
                        format!("{v} is not a non-negative figure"),
                    );
                }
            }
            if let Some(t) = f.tolerance
                && !(t.is_finite() && (0.0..1.0).contains(&t))
            {
                return l.err(
                    &format!("{at}.figures.tolerance"),
                    format!("{t} is not a share between 0 and 1 (0.05 is 5%)"),
                );
            }
            for tool in f.tool_calls.keys() {
                if !self.file.tools.contains_key(tool) && tool != "delegate_task" {
                    let hint = loopsim_engine::config::keys::nearest(
                        tool,
                        self.file.tools.keys().map(String::as_str),
                    )
                    .map(|n| format!(" (did you mean `{n}`?)"))
                    .unwrap_or_default();
                    return l.err(
                        &format!("{at}.figures.tool_calls.{tool}"),
                        format!("no tool named `{tool}` in [tools]{hint}"),
                    );
                }
            }
        }
        Ok(())
    }
}
