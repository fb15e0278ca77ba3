//! What a scenario asks of a runtime other than Hermes, and whether that runtime can express
//! it: a scenario written for Hermes may lean on mechanisms another runtime does not have
//! (child agents, an approval model, Hermes's context compression), and running it there
//! anyway would report a run that runtime could never make.

use loopsim_engine::profile::{Profile, ProfileName, Runtime};

use super::{CallSpec, ModelFaults, Scenario, Step};

impl Scenario {
    /// Every step of every agent's scripts: the first turn, background results' turns and the
    /// user's later turns.
    pub fn steps(&self) -> impl Iterator<Item = &Step> {
        self.file.agents.values().flat_map(|a| {
            a.script
                .iter()
                .chain(&a.on_result)
                .chain(a.turns.iter().flat_map(|t| &t.script))
        })
    }

    /// Every tool call any step may make: its own, its `choose` options' and its `cycle`
    /// replies'.
    pub fn calls(&self) -> impl Iterator<Item = &CallSpec> {
        self.steps().flat_map(|s| {
            s.calls
                .iter()
                .chain(s.choose.iter().flat_map(|c| &c.calls))
                .chain(s.cycle.iter().flat_map(|c| &c.calls))
        })
    }

    /// Why this scenario cannot run under `profile`, if it cannot: the first mechanism it
    /// uses that the profile's runtime lacks.
    pub fn unsupported_under(&self, profile: ProfileName) -> Option<String> {
        let p = Profile::get(profile);
        let f = &self.file;
        let steps = || self.steps();
        let why = |what: &str| {
            Some(format!(
                "{}: {what}, which {profile} cannot express; run it under a Hermes profile",
                self.path
            ))
        };
        if p.provider_retry.is_none()
            && let Some((name, _)) = f.models.iter().find(|(_, m)| {
                m.faults.as_ref().is_some_and(|f| {
                    *f.rate_limit.get_ref() > 0.0
                        || *f.server_error.get_ref() > 0.0
                        || *f.dropped_stream.get_ref() > 0.0
                })
            })
        {
            return why(&format!(
                "models.{name}.faults draws provider errors (Hermes's retries)"
            ));
        }
        type Rate = fn(&ModelFaults) -> f64;
        let rules = p.turn.invalid_calls;
        let reply_faults: [(&str, Rate, &str, bool); 3] = [
            (
                "unknown_tool",
                |f| *f.unknown_tool.get_ref(),
                "calls tools that do not exist (Hermes's error results and three strikes)",
                rules.is_some_and(|r| r.unknown_tool_strikes.is_some()),
            ),
            (
                "unknown_tool_in_batch",
                |f| *f.unknown_tool_in_batch.get_ref(),
                "calls a tool that does not exist beside real ones (Hermes's mixed-batch errors)",
                rules.is_some_and(|r| r.unknown_tool_strikes.is_some()),
            ),
            (
                "malformed_args",
                |f| *f.malformed_args.get_ref(),
                "sends arguments that are not JSON (Hermes's truncated-reply retries)",
                rules.is_some(),
            ),
        ];
        for (key, rate, what, proved) in reply_faults {
            if !proved
                && let Some((name, _)) = f
                    .models
                    .iter()
                    .find(|(_, m)| m.faults.as_ref().is_some_and(|f| rate(f) > 0.0))
            {
                return why(&format!("models.{name}.faults.{key} {what}"));
            }
        }
        if p.runtime == Runtime::Hermes {
            return None;
        }
        if !p.delegation && steps().any(|s: &Step| s.delegate.is_some()) {
            return why("the scenario delegates to child agents (Hermes's delegate_task)");
        }
        if f.recorded {
            return why("the scenario replays Hermes's recorded guardrail decisions");
        }
        if steps().any(|s| s.context_too_small) {
            return why("a step ends on Hermes's local-model context preflight");
        }
        if let Some((name, _)) = f.tools.iter().find(|(_, t)| t.approval) {
            return why(&format!(
                "tools.{name} asks Hermes's auxiliary approval model before each call"
            ));
        }
        if p.observation.trim_context_at.is_none()
            && let Some((name, _)) = f.models.iter().find(|(_, m)| m.context_window.is_some())
        {
            return why(&format!(
                "models.{name}.context_window fills and compresses the context (Hermes's compression)"
            ));
        }
        None
    }
}
