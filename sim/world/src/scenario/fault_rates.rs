//! A fault rate set over a whole scenario (`loopsim sweep --grid faults.KEY=...`): every
//! model of the scenario gets the rate, and the result is checked as a scenario file's faults
//! are.

use toml::Spanned;

use super::{ModelFaults, REPLY_FAULTS, Scenario, ScenarioError};

/// The fault rates a sweep can set, as the scenario's `faults` table names them (and
/// `tool_hang`, every timed tool's `hang_probability`; `child_crash`, every delegated
/// agent's `crash_probability`).
pub const FAULT_RATES: [&str; 8] = [
    "rate_limit",
    "server_error",
    "dropped_stream",
    "unknown_tool",
    "malformed_args",
    "unknown_tool_in_batch",
    "tool_hang",
    "child_crash",
];

fn rate_of<'a>(f: &'a mut ModelFaults, key: &str) -> Option<&'a mut Spanned<f64>> {
    Some(match key {
        "rate_limit" => &mut f.rate_limit,
        "server_error" => &mut f.server_error,
        "dropped_stream" => &mut f.dropped_stream,
        "unknown_tool" => &mut f.unknown_tool,
        "malformed_args" => &mut f.malformed_args,
        "unknown_tool_in_batch" => &mut f.unknown_tool_in_batch,
        _ => return None,
    })
}

impl Scenario {
    /// The scenario with fault `key` at probability `rate` for every model: a model without
    /// faults gets a table with only this one. The sums a scenario file may not exceed, and
    /// a made-up tool name close to one of the scenario's tools, are errors here too.
    pub fn with_fault_rate(&self, key: &str, rate: f64) -> Result<Scenario, ScenarioError> {
        let bad = |model: &str, k: &str, message: String| ScenarioError {
            file: self.path.clone(),
            line: 0,
            key: format!("models.{model}.faults.{k}"),
            message,
        };
        if !(0.0..=1.0).contains(&rate) {
            return Err(bad("*", key, format!("{rate} is not a probability")));
        }
        if key == "tool_hang" {
            return self.with_tool_hangs(rate);
        }
        if key == "child_crash" {
            return self.with_child_crashes(rate);
        }
        let mut s = self.clone();
        for (name, m) in &mut s.file.models {
            let f = m.faults.get_or_insert_with(ModelFaults::none);
            let slot = rate_of(f, key).ok_or_else(|| {
                bad(
                    name,
                    key,
                    format!("not a fault rate: one of {}", FAULT_RATES.join(", ")),
                )
            })?;
            *slot = Spanned::new(0..0, rate);
            let provider =
                f.rate_limit.get_ref() + f.server_error.get_ref() + f.dropped_stream.get_ref();
            if provider > 1.0 {
                return Err(bad(
                    name,
                    key,
                    format!(
                        "rate_limit, server_error and dropped_stream add up to {provider}, more than 1"
                    ),
                ));
            }
            let reply = f.reply_faults();
            if reply > 1.0 {
                return Err(bad(
                    name,
                    key,
                    format!("{REPLY_FAULTS} add up to {reply}, more than 1"),
                ));
            }
            if f.calls_unknown_tools()
                && let Some(t) = s
                    .file
                    .tools
                    .keys()
                    .find(|t| crate::faults::close_to_unknown_tool(t))
            {
                return Err(bad(
                    name,
                    key,
                    format!(
                        "the made-up tool `{}` is too close to tool `{t}` for Hermes's repair to leave it unknown",
                        crate::faults::UNKNOWN_TOOL
                    ),
                ));
            }
        }
        s.file.recorded = false;
        Ok(s)
    }
}

impl Scenario {
    /// The scenario with every tool that has a timeout hanging with probability `rate`.
    fn with_tool_hangs(&self, rate: f64) -> Result<Scenario, ScenarioError> {
        let mut s = self.clone();
        let mut timed = 0;
        for t in s.file.tools.values_mut().filter(|t| t.timeout_s.is_some()) {
            t.hang_probability = Spanned::new(0..0, rate);
            timed += 1;
        }
        if timed == 0 {
            return Err(ScenarioError {
                file: self.path.clone(),
                line: 0,
                key: "tools.*.hang_probability".into(),
                message: "no tool of the scenario has a timeout_s: a call that hangs needs one \
                          to end"
                    .into(),
            });
        }
        s.file.recorded = false;
        Ok(s)
    }
}

impl Scenario {
    /// The scenario with every delegated agent crashing with probability `rate` at the top
    /// of each iteration.
    fn with_child_crashes(&self, rate: f64) -> Result<Scenario, ScenarioError> {
        let mut s = self.clone();
        let children: Vec<String> = s
            .file
            .agents
            .keys()
            .filter(|n| *n != "parent" && self.file.delegated_to(n))
            .cloned()
            .collect();
        if children.is_empty() {
            return Err(ScenarioError {
                file: self.path.clone(),
                line: 0,
                key: "agents.*.crash_probability".into(),
                message: "no step of the scenario delegates: only a child can crash".into(),
            });
        }
        for n in children {
            if let Some(a) = s.file.agents.get_mut(&n) {
                a.crash_probability = Spanned::new(0..0, rate);
            }
        }
        s.file.recorded = false;
        Ok(s)
    }
}

impl ModelFaults {
    /// No faults at all (every rate 0, no `Retry-After`, no latency).
    pub fn none() -> ModelFaults {
        let zero = || Spanned::new(0..0, 0.0);
        ModelFaults {
            rate_limit: zero(),
            retry_after_s: None,
            server_error: zero(),
            dropped_stream: zero(),
            latency_s: None,
            unknown_tool: zero(),
            malformed_args: zero(),
            unknown_tool_in_batch: zero(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario() -> Scenario {
        let text = include_str!("../../../../scenarios/live-provider-errors.toml");
        Scenario::parse(text, "s.toml").unwrap()
    }

    #[test]
    fn a_rate_reaches_every_model_and_keeps_the_others() {
        let s = scenario().with_fault_rate("dropped_stream", 0.2).unwrap();
        let f = s.file.models["main"].faults.as_ref().unwrap();
        assert_eq!(*f.dropped_stream.get_ref(), 0.2);
        assert_eq!(
            *f.rate_limit.get_ref(),
            0.3,
            "the scenario's own rates stay"
        );
        assert_eq!(f.retry_after_s.as_ref().map(|r| *r.get_ref()), Some(0.05));
    }

    #[test]
    fn sums_above_one_and_unknown_keys_are_errors_naming_the_key() {
        let e = scenario()
            .with_fault_rate("dropped_stream", 0.7)
            .unwrap_err();
        assert_eq!(e.key, "models.main.faults.dropped_stream");
        assert!(e.message.contains("more than 1"), "{}", e.message);
        let e = scenario().with_fault_rate("timeouts", 0.1).unwrap_err();
        assert!(e.message.contains("one of rate_limit"), "{}", e.message);
    }
}
