//! Checking a parsed scenario: every value in range, every name defined, every step one
//! thing, every expectation a value a run can produce.

use loopsim_engine::guardrails::DecisionCode;
use loopsim_engine::profile::ProfileName;
use loopsim_engine::turn::ExitReason;
use toml::Spanned;

use super::{CallSpec, Dist, Expect, Lines, REPLY_FAULTS, Scenario, ScenarioError, Step};

/// The most children one `delegate` step may ask for.
pub const MAX_TASKS: u32 = 10_000;

impl Scenario {
    pub(super) fn validate(&self, l: &Lines<'_>) -> Result<(), ScenarioError> {
        let f = &self.file;
        let prob = |v: &Spanned<f64>, key: &str| -> Result<(), ScenarioError> {
            let x = *v.get_ref();
            if (0.0..=1.0).contains(&x) {
                Ok(())
            } else {
                l.err(key, format!("{x} is not a probability between 0 and 1"))
            }
        };
        let dist = |d: &Spanned<Dist>, key: &str| -> Result<(), ScenarioError> {
            d.get_ref().check().or_else(|m| l.err(key, m))
        };
        for (name, m) in &f.models {
            dist(&m.latency_s, &format!("models.{name}.latency_s"))?;
            dist(&m.output_tokens, &format!("models.{name}.output_tokens"))?;
            prob(
                &m.cache_read_share,
                &format!("models.{name}.cache_read_share"),
            )?;
            prob(
                &m.heed_probability,
                &format!("models.{name}.heed_probability"),
            )?;
            prob(
                &m.empty_reply_probability,
                &format!("models.{name}.empty_reply_probability"),
            )?;
            if let Some(faults) = &m.faults {
                let key = |k: &str| format!("models.{name}.faults.{k}");
                prob(&faults.rate_limit, &key("rate_limit"))?;
                prob(&faults.server_error, &key("server_error"))?;
                prob(&faults.dropped_stream, &key("dropped_stream"))?;
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
                        format!(
                            "rate_limit, server_error and dropped_stream add up to {all}, more than 1"
                        ),
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
                    dist(d, &key("latency_s"))?;
                }
                prob(&faults.unknown_tool, &key("unknown_tool"))?;
                prob(&faults.malformed_args, &key("malformed_args"))?;
                prob(&faults.unknown_tool_in_batch, &key("unknown_tool_in_batch"))?;
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
            dist(&t.latency_s, &format!("tools.{name}.latency_s"))?;
            dist(&t.result_tokens, &format!("tools.{name}.result_tokens"))?;
            prob(
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
        }
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
        for (name, a) in &f.agents {
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
                    self.validate_step(l, step, &format!("agents.{name}.{which}[{i}]"), dist)?;
                }
            }
            let crash = format!("agents.{name}.crash_probability");
            prob(&a.crash_probability, &crash)?;
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
