//! Checking a parsed scenario: every value in range, every name defined, every step one
//! thing. (`[expect]` is checked in `expect.rs`, beside its parsing.)

use loopsim_engine::guardrails::DecisionCode;
use loopsim_engine::profile::ProfileName;
use toml::Spanned;

use super::{
    AgentSpec, CallSpec, Dist, Lines, ModelFaults, ModelSpec, REPLY_FAULTS, Scenario,
    ScenarioError, Step, ToolSpec,
};

/// The most children one `delegate` step may ask for.
pub const MAX_TASKS: u32 = 10_000;

/// A probability: 0 to 1.
fn prob(l: &Lines<'_>, v: &Spanned<f64>, key: &str) -> Result<(), ScenarioError> {
    let x = *v.get_ref();
    if (0.0..=1.0).contains(&x) {
        Ok(())
    } else {
        l.err(key, format!("{x} is not a probability between 0 and 1"))
    }
}

/// A distribution its own check accepts.
fn dist(l: &Lines<'_>, d: &Spanned<Dist>, key: &str) -> Result<(), ScenarioError> {
    d.get_ref().check().or_else(|m| l.err(key, m))
}

impl Scenario {
    pub(super) fn validate(&self, l: &Lines<'_>) -> Result<(), ScenarioError> {
        let f = &self.file;
        // In this order, so the first error a file has is the one named.
        for (name, m) in &f.models {
            self.validate_model(l, name, m)?;
        }
        for (name, m) in &f.models {
            let p = &m.price;
            if p.unknown
                && (p.input != 0.0
                    || p.cache_read != 0.0
                    || p.output != 0.0
                    || p.cache_write.is_some())
            {
                return l.err(
                    &format!("models.{name}.price.unknown"),
                    "a price cannot be both unknown and given",
                );
            }
        }
        for (name, t) in &f.tools {
            self.validate_tool(l, name, t)?;
        }
        self.validate_run_settings(l)?;
        for (name, a) in &f.agents {
            self.validate_agent(l, name, a)?;
        }
        Ok(())
    }

    /// A model's distributions, probabilities, faults, window and prices.
    fn validate_model(
        &self,
        l: &Lines<'_>,
        name: &str,
        m: &ModelSpec,
    ) -> Result<(), ScenarioError> {
        let f = &self.file;
        dist(l, &m.latency_s, &format!("models.{name}.latency_s"))?;
        dist(l, &m.output_tokens, &format!("models.{name}.output_tokens"))?;
        prob(
            l,
            &m.cache_read_share,
            &format!("models.{name}.cache_read_share"),
        )?;
        prob(
            l,
            &m.heed_probability,
            &format!("models.{name}.heed_probability"),
        )?;
        prob(
            l,
            &m.empty_reply_probability,
            &format!("models.{name}.empty_reply_probability"),
        )?;
        if let Some(faults) = &m.faults {
            self.validate_model_faults(l, name, faults)?;
        }
        if let Some(w) = &m.context_window {
            let w = *w.get_ref();
            if w < 1_000 {
                return l.err(
                    &format!("models.{name}.context_window"),
                    format!("{w} tokens is not a model's window (at least 1,000)"),
                );
            }
            if let Some((agent, a)) = f
                .agents
                .iter()
                .find(|(_, a)| a.model.get_ref() == name && a.context_tokens >= w)
            {
                return l.err(
                    &format!("agents.{agent}.context_tokens"),
                    format!(
                        "{} tokens at the start do not fit model `{name}`'s window of {w}",
                        a.context_tokens
                    ),
                );
            }
        }
        for (k, p) in [
            ("input", m.price.input),
            ("cache_read", m.price.cache_read),
            ("cache_write", m.price.cache_write.unwrap_or(0.0)),
            ("output", m.price.output),
        ] {
            // A million dollars per million tokens is far past any price, and keeps a long
            // sweep's sums inside their integers.
            if !(p.is_finite() && (0.0..=1e6).contains(&p)) {
                return l.err(
                    &format!("models.{name}.price.{k}"),
                    format!("{p} is not a price from 0 to 1e6 dollars per million tokens"),
                );
            }
        }
        Ok(())
    }

    /// A model's provider and reply faults: probabilities that add up to at most 1, and a
    /// made-up tool name no real tool is close to.
    fn validate_model_faults(
        &self,
        l: &Lines<'_>,
        name: &str,
        faults: &ModelFaults,
    ) -> Result<(), ScenarioError> {
        let f = &self.file;
        let key = |k: &str| format!("models.{name}.faults.{k}");
        prob(l, &faults.rate_limit, &key("rate_limit"))?;
        prob(l, &faults.server_error, &key("server_error"))?;
        prob(l, &faults.dropped_stream, &key("dropped_stream"))?;
        let both = faults.rate_limit.get_ref() + faults.server_error.get_ref();
        if both > 1.0 {
            return l.err(
                &key("server_error"),
                format!("rate_limit and server_error add up to {both}, more than 1"),
            );
        }
        let all = both + faults.dropped_stream.get_ref();
        if all > 1.0 {
            return l.err(
                &key("dropped_stream"),
                format!("rate_limit, server_error and dropped_stream add up to {all}, more than 1"),
            );
        }
        if let Some(ra) = &faults.retry_after_s {
            let x = *ra.get_ref();
            if !(x.is_finite() && x >= 0.0) {
                return l.err(
                    &key("retry_after_s"),
                    format!("{x} is not a number of seconds (0 or more)"),
                );
            }
        }
        if let Some(d) = &faults.latency_s {
            dist(l, d, &key("latency_s"))?;
        }
        prob(l, &faults.unknown_tool, &key("unknown_tool"))?;
        prob(l, &faults.malformed_args, &key("malformed_args"))?;
        prob(
            l,
            &faults.unknown_tool_in_batch,
            &key("unknown_tool_in_batch"),
        )?;
        let all = faults.reply_faults();
        if all > 1.0 {
            return l.err(
                &key("malformed_args"),
                format!("{REPLY_FAULTS} add up to {all}, more than 1"),
            );
        }
        if faults.calls_unknown_tools()
            && let Some(t) = f
                .tools
                .keys()
                .find(|t| crate::faults::close_to_unknown_tool(t))
        {
            return l.err(
                &key("unknown_tool"),
                format!(
                    "the made-up tool name `{}` is too close to tool `{t}`: Hermes would \
                     repair it to that tool",
                    crate::faults::UNKNOWN_TOOL
                ),
            );
        }
        Ok(())
    }

    /// A tool's latency, result size, failure and hang, timeout and approval.
    fn validate_tool(&self, l: &Lines<'_>, name: &str, t: &ToolSpec) -> Result<(), ScenarioError> {
        let f = &self.file;
        dist(l, &t.latency_s, &format!("tools.{name}.latency_s"))?;
        dist(l, &t.result_tokens, &format!("tools.{name}.result_tokens"))?;
        prob(
            l,
            &t.fail_probability,
            &format!("tools.{name}.fail_probability"),
        )?;
        if let Some(to) = &t.timeout_s
            && !(to.get_ref().is_finite() && *to.get_ref() > 0.0)
        {
            return l.err(
                &format!("tools.{name}.timeout_s"),
                "must be a positive number of seconds",
            );
        }
        prob(
            l,
            &t.hang_probability,
            &format!("tools.{name}.hang_probability"),
        )?;
        if *t.hang_probability.get_ref() > 0.0 && t.timeout_s.is_none() {
            return l.err(
                &format!("tools.{name}.hang_probability"),
                "a call that hangs runs until its timeout: give the tool a timeout_s",
            );
        }
        if t.approval && f.approval_model.is_none() {
            return l.err(
                &format!("tools.{name}.approval"),
                "approval calls need a top-level approval_model",
            );
        }
        Ok(())
    }

    /// The run's own settings: the approval model, the report's window and horizon, the
    /// profiles expected, the parent, the user's stop.
    fn validate_run_settings(&self, l: &Lines<'_>) -> Result<(), ScenarioError> {
        let f = &self.file;
        if let Some(a) = &f.approval_model
            && !f.models.contains_key(a.get_ref())
        {
            return l.err(
                "approval_model",
                format!("no model named `{}` in [models]", a.get_ref()),
            );
        }
        if let Some(w) = &f.report.window_s {
            let [a, b] = *w.get_ref();
            if !(a.is_finite() && b.is_finite() && 0.0 <= a && a < b) {
                return l.err("report.window_s", "needs 0 <= from < to");
            }
        }
        if let Some(h) = f.report.horizon_s
            && !(h.is_finite() && h > 0.0)
        {
            return l.err("report.horizon_s", "must be a positive number of seconds");
        }
        for p in &f.expect.profiles {
            if let Err(e) = p.get_ref().parse::<ProfileName>() {
                return l.err("expect.profiles", e.to_string());
            }
        }
        if !f.agents.contains_key("parent") {
            return l.err("agents", "a scenario needs an agent named `parent`");
        }
        if let Some(t) = &f.human.interrupt_at_s
            && !(t.get_ref().is_finite() && *t.get_ref() >= 0.0)
        {
            return l.err(
                "human.interrupt_at_s",
                "must be a non-negative number of seconds",
            );
        }
        Ok(())
    }

    /// An agent: its model, its scripts and every step in them, its user turns, its crashes.
    fn validate_agent(
        &self,
        l: &Lines<'_>,
        name: &str,
        a: &AgentSpec,
    ) -> Result<(), ScenarioError> {
        let f = &self.file;
        if !f.models.contains_key(a.model.get_ref()) {
            return l.err(
                &format!("agents.{name}.model"),
                format!("no model named `{}` in [models]", a.model.get_ref()),
            );
        }
        if a.script.is_empty() {
            return l.err(&format!("agents.{name}.script"), "the script is empty");
        }
        let mut scripts = vec![
            ("script".to_string(), &a.script),
            ("on_result".to_string(), &a.on_result),
        ];
        let mut last_at = 0.0;
        for (k, t) in a.turns.iter().enumerate() {
            let at = *t.at_s.get_ref();
            if !(at.is_finite() && at >= last_at) {
                return l.err(
                    &format!("agents.{name}.turns[{k}].at_s"),
                    "must be a number of seconds, not before the previous turn's",
                );
            }
            if t.script.is_empty() {
                return l.err(
                    &format!("agents.{name}.turns[{k}].script"),
                    "the script is empty",
                );
            }
            last_at = at;
            scripts.push((format!("turns[{k}].script"), &t.script));
        }
        if !a.turns.is_empty() && name != "parent" {
            return l.err(
                &format!("agents.{name}.turns"),
                "only the parent takes user turns",
            );
        }
        for (which, steps) in scripts {
            for (i, step) in steps.iter().enumerate() {
                self.validate_step(l, step, &format!("agents.{name}.{which}[{i}]"), |d, k| {
                    dist(l, d, k)
                })?;
            }
        }
        let crash = format!("agents.{name}.crash_probability");
        prob(l, &a.crash_probability, &crash)?;
        if *a.crash_probability.get_ref() > 0.0 {
            if name == "parent" {
                return l.err(
                    &crash,
                    "only a child's crash is caught (by its parent's delegate_task); the \
                     parent's would end the runtime's process",
                );
            }
            if !f.delegated_to(name) {
                return l.err(
                    &crash,
                    format!("no step delegates to `{name}`: only a child can crash"),
                );
            }
        }
        Ok(())
    }

    fn validate_step(
        &self,
        l: &Lines<'_>,
        step: &Step,
        key: &str,
        dist: impl Fn(&Spanned<Dist>, &str) -> Result<(), ScenarioError>,
    ) -> Result<(), ScenarioError> {
        let f = &self.file;
        let kinds = [
            !step.calls.is_empty(),
            step.answer.is_some(),
            step.delegate.is_some(),
            !step.choose.is_empty(),
            !step.cycle.is_empty(),
            step.context_too_small,
            step.user_stop,
        ];
        if kinds.iter().filter(|k| **k).count() != 1 {
            return l.err(
                key,
                "a step needs exactly one of calls, answer, delegate, choose, cycle, context_too_small, user_stop");
        }
        if step.user_stop && (step.times != 1 || step.until.is_some()) {
            return l.err(key, "a user_stop step cannot repeat (times, until)");
        }
        if step.times == 0 {
            return l.err(&format!("{key}.times"), "must be at least 1");
        }
        if step.until.is_some() && l.spans.has(&format!("{key}.times")) {
            return l.err(
                &format!("{key}.until"),
                "`until` repeats the step until its condition and ignores `times`: give one",
            );
        }
        if (step.answer.is_some() || step.delegate.is_some())
            && (step.times != 1 || step.until.is_some())
        {
            return l.err(
                key,
                "answer and delegate steps cannot repeat (times, until)",
            );
        }
        let check_calls = |calls: &[CallSpec], key: &str| -> Result<(), ScenarioError> {
            for (j, c) in calls.iter().enumerate() {
                let t = c.tool.get_ref();
                let ck = format!("{key}.calls[{j}]");
                if !f.tools.contains_key(t) {
                    let hint = if t == "delegate_task" {
                        " (a `delegate` step starts children; a delegate_task call in `calls` is an ordinary tool)"
                    } else {
                        ""
                    };
                    return l.err(
                        &format!("{ck}.tool"),
                        format!("no tool named `{t}` in [tools]{hint}"),
                    );
                }
                if let Some(a) = &c.args_json {
                    if !c.args.is_empty() || c.distinct {
                        return l.err(
                            &format!("{ck}.args_json"),
                            "args_json replaces args and distinct: give one",
                        );
                    }
                    if let Err(e) = loopsim_engine::json::parse(a.get_ref().as_bytes()) {
                        return l.err(&format!("{ck}.args_json"), format!("not JSON: {e}"));
                    }
                }
                if let Some(d) = &c.latency_s
                    && !(d.get_ref().is_finite() && *d.get_ref() >= 0.0)
                {
                    return l.err(
                        &format!("{ck}.latency_s"),
                        "must be a non-negative number of seconds",
                    );
                }
                if let Some(n) = &c.notice
                    && loopsim_engine::guardrails::NoticeKind::parse(n.kind.get_ref()).is_none()
                {
                    return l.err(
                        &format!("{ck}.notice.kind"),
                        format!(
                            "`{}` is not identical_call_streak or identical_cycle",
                            n.kind.get_ref()
                        ),
                    );
                }
                if let Some(g) = &c.guardrail {
                    let action = g.action.get_ref();
                    if !matches!(action.as_str(), "warn" | "block" | "halt") {
                        return l.err(
                            &format!("{ck}.guardrail.action"),
                            format!("`{action}` is not warn, block or halt"),
                        );
                    }
                    if DecisionCode::parse(g.code.get_ref()).is_none() {
                        return l.err(
                            &format!("{ck}.guardrail.code"),
                            format!("`{}` is not a guardrail decision code", g.code.get_ref()),
                        );
                    }
                }
            }
            Ok(())
        };
        check_calls(&step.calls, key)?;
        for (j, c) in step.choose.iter().enumerate() {
            if !(c.weight.is_finite() && c.weight > 0.0) {
                return l.err(
                    &format!("{key}.choose[{j}].weight"),
                    "must be a positive number",
                );
            }
            if c.calls.is_empty() == c.answer.is_none() {
                return l.err(
                    &format!("{key}.choose[{j}]"),
                    "a choice needs exactly one of calls, answer",
                );
            }
            check_calls(&c.calls, &format!("{key}.choose[{j}]"))?;
        }
        for (j, c) in step.cycle.iter().enumerate() {
            if c.calls.is_empty() {
                return l.err(
                    &format!("{key}.cycle[{j}].calls"),
                    "a cycle entry needs at least one call",
                );
            }
            check_calls(&c.calls, &format!("{key}.cycle[{j}]"))?;
        }
        if let Some(d) = &step.delegate {
            if !f.agents.contains_key(d.get_ref()) || d.get_ref() == "parent" {
                return l.err(
                    &format!("{key}.delegate"),
                    format!("no child agent named `{}` in [agents]", d.get_ref()),
                );
            }
            if step.tasks == 0 || step.tasks > MAX_TASKS {
                return l.err(
                    &format!("{key}.tasks"),
                    format!("must be from 1 to {MAX_TASKS}"),
                );
            }
        }
        if let Some(d) = &step.latency_s {
            dist(d, &format!("{key}.latency_s"))?;
        }
        if let Some(d) = &step.output_tokens {
            dist(d, &format!("{key}.output_tokens"))?;
        }
        Ok(())
    }
}
