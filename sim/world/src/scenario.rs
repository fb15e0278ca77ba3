//! Scenario files: a workload and its expectations, in TOML a person can read and edit.
//!
//! A scenario names the engine profile and Hermes config (in Hermes's own key shapes), the
//! models and tools with their latencies, tokens and prices, the agents and their scripts, the
//! human, and an `[expect]` block. Unknown keys, bad values and impossible combinations are
//! errors that name the file, line and key. See `scenarios/README.md` for the format.

use std::collections::BTreeMap;
use std::fmt;

use loopsim_engine::config::{ConfigError, EngineConfig};
use loopsim_engine::delegation::ChildBudget;
use loopsim_engine::guardrails::DecisionCode;
use loopsim_engine::hash::Hash;
use loopsim_engine::profile::ProfileName;
use loopsim_engine::yaml::{KeyIndex, Node, Yaml};
use serde::Deserialize;
use toml::Spanned;

/// A scenario that cannot be used, with where and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {key}: {message}")]
pub struct ScenarioError {
    pub file: String,
    pub line: usize,
    pub key: String,
    pub message: String,
}

/// What a scenario is for: a loop that must be caught, or work that must not be stopped.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, serde::Serialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Label {
    #[default]
    Loop,
    Healthy,
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Label::Loop => "loop",
            Label::Healthy => "healthy",
        })
    }
}

/// A non-negative random quantity: a number, or `{ uniform = [a, b] }`,
/// `{ normal = [mean, sd] }` (clamped at 0) or `{ lognormal = [median, sigma] }`.
#[derive(Clone, Debug, PartialEq)]
pub enum Dist {
    Fixed(f64),
    Spec(DistSpec),
}

impl<'de> Deserialize<'de> for Dist {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match toml::Value::deserialize(d)? {
            toml::Value::Integer(i) => Ok(Dist::Fixed(i as f64)),
            toml::Value::Float(f) => Ok(Dist::Fixed(f)),
            toml::Value::Table(t) => t
                .try_into()
                .map(Dist::Spec)
                .map_err(|e| D::Error::custom(e.message().trim())),
            other => Err(D::Error::custom(format!(
                "expected a number or {{ uniform | normal | lognormal = [a, b] }}, found a {}",
                other.type_str()
            ))),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DistSpec {
    pub uniform: Option<[f64; 2]>,
    pub normal: Option<[f64; 2]>,
    pub lognormal: Option<[f64; 2]>,
}

impl Dist {
    fn check(&self) -> Result<(), String> {
        let ok = |x: f64| x.is_finite() && x >= 0.0;
        match self {
            Dist::Fixed(x) if !ok(*x) => Err(format!("{x} is not a non-negative number")),
            Dist::Fixed(_) => Ok(()),
            Dist::Spec(s) => {
                let set = [
                    s.uniform.is_some(),
                    s.normal.is_some(),
                    s.lognormal.is_some(),
                ];
                if set.iter().filter(|b| **b).count() != 1 {
                    return Err("give exactly one of uniform, normal, lognormal".into());
                }
                if let Some([a, b]) = s.uniform
                    && !(ok(a) && ok(b) && a <= b)
                {
                    return Err(format!("uniform [{a}, {b}] needs 0 <= a <= b"));
                }
                if let Some([m, sd]) = s.normal
                    && !(ok(m) && ok(sd))
                {
                    return Err(format!(
                        "normal [{m}, {sd}] needs a non-negative mean and sd"
                    ));
                }
                if let Some([m, sg]) = s.lognormal
                    && !(ok(m) && m > 0.0 && ok(sg))
                {
                    return Err(format!(
                        "lognormal [{m}, {sg}] needs a positive median and a non-negative sigma"
                    ));
                }
                Ok(())
            }
        }
    }
}

/// Prices in dollars per million tokens.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    #[serde(default)]
    pub input: f64,
    #[serde(default)]
    pub cache_read: f64,
    /// Tokens written to the prompt cache (default: the input price).
    #[serde(default)]
    pub cache_write: Option<f64>,
    #[serde(default)]
    pub output: f64,
    /// Nobody knows this model's price: reports say "unknown" instead of a dollar figure.
    #[serde(default)]
    pub unknown: bool,
}

/// A fake model: how long a call takes and what it costs.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    pub latency_s: Spanned<Dist>,
    pub output_tokens: Spanned<Dist>,
    /// Share of the input read from the prompt cache.
    #[serde(default = "zero")]
    pub cache_read_share: Spanned<f64>,
    #[serde(default)]
    pub price: Price,
    /// Probability that the model heeds a guardrail warning or notice and moves on.
    #[serde(default = "zero")]
    pub heed_probability: Spanned<f64>,
    /// Probability of an empty reply (it ends the turn as text).
    #[serde(default = "zero")]
    pub empty_reply_probability: Spanned<f64>,
    /// For auxiliary models: input tokens per call (main models use the agent's context).
    #[serde(default)]
    pub input_tokens: u64,
}

/// A fake tool.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSpec {
    pub latency_s: Spanned<Dist>,
    /// Result text; `{elapsed_s}`, `{counter}`, `{timestamp}`, `{id}` and `{n}` are volatile.
    #[serde(default = "default_result")]
    pub result: String,
    /// Tokens the result adds to the context.
    #[serde(default = "default_result_tokens")]
    pub result_tokens: Spanned<Dist>,
    #[serde(default = "zero")]
    pub fail_probability: Spanned<f64>,
    #[serde(default = "default_fail_result")]
    pub fail_result: String,
    /// The call gives up after this long with a timeout error.
    pub timeout_s: Option<Spanned<f64>>,
    /// Each call first asks the auxiliary approval model.
    #[serde(default)]
    pub approval: bool,
}

fn zero() -> Spanned<f64> {
    Spanned::new(0..0, 0.0)
}
fn empty_table() -> Spanned<toml::Table> {
    Spanned::new(0..0, toml::Table::new())
}
fn default_result() -> String {
    "{\"ok\": true}".into()
}
fn default_result_tokens() -> Spanned<Dist> {
    Spanned::new(0..0, Dist::Fixed(50.0))
}
fn default_fail_result() -> String {
    "{\"error\": \"failed\"}".into()
}

/// When a repeating step stops repeating (besides its count).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Until {
    /// Only an interrupt, a halt or the budget ends it.
    Stopped,
    /// The background delegations of this turn have all finished (the model cannot know; a
    /// model that polls correctly would).
    ChildrenDone,
}

/// One tool call in a step.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallSpec {
    pub tool: Spanned<String>,
    #[serde(default)]
    pub args: toml::Table,
    /// Add a per-repetition counter `n` to the arguments, so every call is distinct.
    #[serde(default)]
    pub distinct: bool,
    /// Force this call to fail (true) or succeed (false) instead of drawing.
    pub fail: Option<bool>,
    /// The arguments as JSON text, used exactly (an imported call keeps its nulls and floats).
    pub args_json: Option<Spanned<String>>,
    /// This call's result, word for word, instead of the tool's template.
    pub result: Option<String>,
    /// This call's duration in seconds, instead of a draw from the tool's latency.
    pub latency_s: Option<Spanned<f64>>,
    /// What the recorded session's guardrails did to this call (used by `recorded` scenarios).
    pub guardrail: Option<RecordedDecision>,
    /// The stall-guard notice the recorded session appended to this call's result.
    pub notice: Option<RecordedNotice>,
    /// The recorded tool_call_id, for the reader.
    pub id: Option<String>,
}

/// A stall-guard notice read back from a recorded session.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedNotice {
    /// identical_call_streak or identical_cycle.
    pub kind: Spanned<String>,
    /// The streak length, or a cycle's laps.
    pub count: u32,
    #[serde(default)]
    pub period: u32,
}

/// A guardrail decision read back from a recorded session.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedDecision {
    /// warn, block or halt.
    pub action: Spanned<String>,
    /// The decision code, as Hermes names it.
    pub code: Spanned<String>,
    #[serde(default)]
    pub count: u32,
}

/// One step of a model script: what the model does at its next call(s).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// Tool calls made together in one model reply.
    #[serde(default)]
    pub calls: Vec<CallSpec>,
    /// Final text: the turn ends.
    pub answer: Option<String>,
    /// The preflight finds the local model's runtime context too small: the call is given
    /// back and the turn fails.
    #[serde(default)]
    pub context_too_small: bool,
    /// Delegate this many tasks to children running the named agent's script.
    pub delegate: Option<Spanned<String>>,
    #[serde(default = "one")]
    pub tasks: u32,
    /// How many model calls this step takes (each makes the step's calls again).
    #[serde(default = "one")]
    pub times: u32,
    pub until: Option<Until>,
    /// The loop the scenario is about starts here (waste is counted from it).
    #[serde(default)]
    pub loop_begins: bool,
    /// Overrides of the model for this step.
    pub latency_s: Option<Spanned<Dist>>,
    pub output_tokens: Option<Spanned<Dist>>,
    /// Recorded figures of this call: exact prompt tokens (cache reads and writes included),
    /// instead of the agent's running context.
    pub input_tokens: Option<u64>,
    pub cache_read_tokens: Option<u64>,
    pub cache_write_tokens: Option<u64>,
    /// The user pressed stop here: the turn ends `interrupted_by_user` at this iteration.
    #[serde(default)]
    pub user_stop: bool,
    /// Weighted random choice among sub-steps (each `{ weight = w, ... }` one call).
    #[serde(default)]
    pub choose: Vec<Choice>,
}

fn one() -> u32 {
    1
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Choice {
    pub weight: f64,
    #[serde(default)]
    pub calls: Vec<CallSpec>,
    pub answer: Option<String>,
}

/// An agent: a model and a script. The agent named `parent` starts the run.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    pub model: Spanned<String>,
    /// Context tokens at the start of its first turn.
    #[serde(default)]
    pub context_tokens: u64,
    pub script: Vec<Step>,
    /// The script of a turn opened by a background delegation's result.
    #[serde(default)]
    pub on_result: Vec<Step>,
    /// The user's later messages: each opens a new turn with its own script, at `at_s` or
    /// when the previous turn has ended, whichever is later.
    #[serde(default)]
    pub turns: Vec<UserTurn>,
}

/// A later user message and what the model does in the turn it opens.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserTurn {
    pub at_s: Spanned<f64>,
    pub script: Vec<Step>,
}

/// The person at the keyboard.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HumanSpec {
    /// Press stop at this virtual time (seconds from the start).
    pub interrupt_at_s: Option<Spanned<f64>>,
}

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
    /// `loopsim check` runs the expectations for each of these seeds (default: `seed`).
    #[serde(default)]
    pub seeds: Vec<u64>,
    /// ... and each of these profiles (default: `profile`).
    #[serde(default)]
    pub profiles: Vec<Spanned<String>>,
}

/// The file as written.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    pub name: String,
    pub description: String,
    /// Which issue, PR or incident this replays.
    pub provenance: String,
    #[serde(default)]
    pub label: Label,
    pub profile: Spanned<String>,
    pub platform: Option<String>,
    #[serde(default)]
    pub seed: u64,
    /// Hermes config keys, in config.yaml's shape (`[config.tool_loop_guardrails]`, ...).
    #[serde(default = "empty_table")]
    pub config: Spanned<toml::Table>,
    /// loopsim's child budget mode: "independent", "shared", or `{ reserved = N }`.
    #[serde(default)]
    pub child_budget: Option<Spanned<toml::Value>>,
    pub models: BTreeMap<String, ModelSpec>,
    #[serde(default)]
    pub tools: BTreeMap<String, ToolSpec>,
    /// The auxiliary model for approval calls.
    pub approval_model: Option<Spanned<String>>,
    pub agents: BTreeMap<String, AgentSpec>,
    #[serde(default)]
    pub human: HumanSpec,
    #[serde(default)]
    pub expect: Expect,
    #[serde(default)]
    pub report: ReportSpec,
    /// The guardrail decisions come from the calls' recorded `guardrail` fields (an imported
    /// session), unless a run names a profile, config or platform.
    #[serde(default)]
    pub recorded: bool,
    /// Where an imported scenario came from; `note` is shown in reports.
    #[serde(default)]
    pub source: Option<SourceSpec>,
}

/// Provenance of an imported scenario.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceSpec {
    /// What was read (`hermes-state-db`).
    pub kind: String,
    pub database: Option<String>,
    pub session: Option<String>,
    pub model: Option<String>,
    /// Which figures are estimated rather than recorded (latency, tokens, cache_write...).
    #[serde(default)]
    pub estimated: Vec<String>,
    /// One paragraph for reports.
    #[serde(default)]
    pub note: String,
}

/// Extra measurements a scenario asks for.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReportSpec {
    /// A window of virtual time `[from, to)` in seconds whose figures are reported separately
    /// (for example the window an incident write-up measured).
    pub window_s: Option<Spanned<[f64; 2]>>,
    /// Stop the run at this virtual time if nothing else has (a safety net; default 24 h).
    pub horizon_s: Option<f64>,
}

/// A loaded, validated scenario.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Where it came from, as given.
    pub path: String,
    /// SHA-256 of the file's bytes.
    pub content_hash: Hash,
    pub file: ScenarioFile,
    pub profile: ProfileName,
    pub child_budget: ChildBudget,
    /// `[config]` as the values Hermes would have read (kept in step with `file.config`).
    config_node: Node,
}

struct Lines<'a> {
    text: &'a str,
    file: &'a str,
}

impl Lines<'_> {
    fn line_of(&self, span: std::ops::Range<usize>) -> usize {
        let at = span.start.min(self.text.len());
        self.text[..at].bytes().filter(|&b| b == b'\n').count() + 1
    }

    fn err<T>(
        &self,
        span: std::ops::Range<usize>,
        key: &str,
        message: impl Into<String>,
    ) -> Result<T, ScenarioError> {
        Err(ScenarioError {
            file: self.file.to_string(),
            line: self.line_of(span),
            key: key.to_string(),
            message: message.into(),
        })
    }
}

impl Scenario {
    /// Reads and validates a scenario file.
    pub fn load(path: &std::path::Path) -> Result<Scenario, ScenarioError> {
        let shown = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|e| ScenarioError {
            file: shown.clone(),
            line: 0,
            key: "file".into(),
            message: format!("cannot read: {e}"),
        })?;
        let text = String::from_utf8(bytes).map_err(|_| ScenarioError {
            file: shown.clone(),
            line: 0,
            key: "file".into(),
            message: "not UTF-8 text".into(),
        })?;
        Scenario::parse(&text, &shown)
    }

    /// Parses and validates scenario text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Scenario, ScenarioError> {
        let lines = Lines { text, file };
        let parsed: ScenarioFile = toml::from_str(text).map_err(|e| {
            let span = e.span().unwrap_or(0..0);
            let msg = e.message().trim().to_string();
            // The key: named in the message, else the `key =` on the offending line.
            let line_text = text[..span.start.min(text.len())]
                .rsplit('\n')
                .next()
                .unwrap_or("");
            let key = msg
                .split('`')
                .nth(1)
                .filter(|_| msg.starts_with("unknown field") || msg.starts_with("missing field"))
                .map(str::to_string)
                .or_else(|| {
                    line_text
                        .split_once('=')
                        .map(|(k, _)| k.trim().trim_start_matches('{').trim().to_string())
                })
                .filter(|k| !k.is_empty())
                .unwrap_or_else(|| "toml".into());
            ScenarioError {
                file: file.to_string(),
                line: lines.line_of(span),
                key,
                message: msg,
            }
        })?;
        let profile = match parsed.profile.get_ref().parse::<ProfileName>() {
            Ok(p) => p,
            Err(e) => return lines.err(parsed.profile.span(), "profile", e.to_string()),
        };
        let child_budget = match &parsed.child_budget {
            None => ChildBudget::Independent,
            Some(v) => match v.get_ref() {
                toml::Value::String(s) if s == "independent" => ChildBudget::Independent,
                toml::Value::String(s) if s == "shared" => ChildBudget::Shared,
                toml::Value::Table(t)
                    if t.len() == 1
                        && t.get("reserved")
                            .and_then(|r| r.as_integer())
                            .is_some_and(|r| r >= 0) =>
                {
                    ChildBudget::Reserved(t["reserved"].as_integer().unwrap() as u64)
                }
                _ => {
                    return lines.err(
                        v.span(),
                        "child_budget",
                        "expected \"independent\", \"shared\" or { reserved = N } with N >= 0",
                    );
                }
            },
        };
        let s = Scenario {
            path: file.to_string(),
            content_hash: Hash::of(text.as_bytes()),
            config_node: table_to_node(parsed.config.get_ref()),
            file: parsed,
            profile,
            child_budget,
        };
        s.validate(&lines)?;
        s.engine_config(None).map_err(|e| match e {
            ConfigError::Value {
                line, key, message, ..
            } => ScenarioError {
                file: file.to_string(),
                line: lines.line_of(s.file.config.span()).max(line),
                key: format!("config.{key}"),
                message,
            },
            ConfigError::Yaml { message, .. } => ScenarioError {
                file: file.to_string(),
                line: lines.line_of(s.file.config.span()),
                key: "config".into(),
                message,
            },
        })?;
        Ok(s)
    }

    fn validate(&self, l: &Lines<'_>) -> Result<(), ScenarioError> {
        let f = &self.file;
        let prob = |v: &Spanned<f64>, key: &str| -> Result<(), ScenarioError> {
            let x = *v.get_ref();
            if (0.0..=1.0).contains(&x) {
                Ok(())
            } else {
                l.err(
                    v.span(),
                    key,
                    format!("{x} is not a probability between 0 and 1"),
                )
            }
        };
        let dist = |d: &Spanned<Dist>, key: &str| -> Result<(), ScenarioError> {
            d.get_ref().check().or_else(|m| l.err(d.span(), key, m))
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
            for (k, p) in [
                ("input", m.price.input),
                ("cache_read", m.price.cache_read),
                ("cache_write", m.price.cache_write.unwrap_or(0.0)),
                ("output", m.price.output),
            ] {
                if !(p.is_finite() && p >= 0.0) {
                    return l.err(
                        0..0,
                        &format!("models.{name}.price.{k}"),
                        format!("{p} is not a non-negative price"),
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
                    m.latency_s.span(),
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
                    to.span(),
                    &format!("tools.{name}.timeout_s"),
                    "must be a positive number of seconds",
                );
            }
            if t.approval && f.approval_model.is_none() {
                return l.err(
                    t.latency_s.span(),
                    &format!("tools.{name}.approval"),
                    "approval calls need a top-level approval_model",
                );
            }
        }
        if let Some(a) = &f.approval_model
            && !f.models.contains_key(a.get_ref())
        {
            return l.err(
                a.span(),
                "approval_model",
                format!("no model named `{}` in [models]", a.get_ref()),
            );
        }
        if let Some(w) = &f.report.window_s {
            let [a, b] = *w.get_ref();
            if !(a.is_finite() && b.is_finite() && 0.0 <= a && a < b) {
                return l.err(w.span(), "report.window_s", "needs 0 <= from < to");
            }
        }
        if let Some(h) = f.report.horizon_s
            && !(h.is_finite() && h > 0.0)
        {
            return l.err(
                0..0,
                "report.horizon_s",
                "must be a positive number of seconds",
            );
        }
        for p in &f.expect.profiles {
            if let Err(e) = p.get_ref().parse::<ProfileName>() {
                return l.err(p.span(), "expect.profiles", e.to_string());
            }
        }
        if !f.agents.contains_key("parent") {
            return l.err(0..0, "agents", "a scenario needs an agent named `parent`");
        }
        if let Some(t) = &f.human.interrupt_at_s
            && !(t.get_ref().is_finite() && *t.get_ref() >= 0.0)
        {
            return l.err(
                t.span(),
                "human.interrupt_at_s",
                "must be a non-negative number of seconds",
            );
        }
        for (name, a) in &f.agents {
            if !f.models.contains_key(a.model.get_ref()) {
                return l.err(
                    a.model.span(),
                    &format!("agents.{name}.model"),
                    format!("no model named `{}` in [models]", a.model.get_ref()),
                );
            }
            if a.script.is_empty() {
                return l.err(
                    a.model.span(),
                    &format!("agents.{name}.script"),
                    "the script is empty",
                );
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
                        t.at_s.span(),
                        &format!("agents.{name}.turns[{k}].at_s"),
                        "must be a number of seconds, not before the previous turn's",
                    );
                }
                if t.script.is_empty() {
                    return l.err(
                        t.at_s.span(),
                        &format!("agents.{name}.turns[{k}].script"),
                        "the script is empty",
                    );
                }
                last_at = at;
                scripts.push((format!("turns[{k}].script"), &t.script));
            }
            if !a.turns.is_empty() && name != "parent" {
                return l.err(
                    a.model.span(),
                    &format!("agents.{name}.turns"),
                    "only the parent takes user turns",
                );
            }
            for (which, steps) in scripts {
                for (i, step) in steps.iter().enumerate() {
                    self.validate_step(
                        l,
                        step,
                        &format!("agents.{name}.{which}[{i}]"),
                        a.model.span(),
                        dist,
                    )?;
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
        near: std::ops::Range<usize>,
        dist: impl Fn(&Spanned<Dist>, &str) -> Result<(), ScenarioError>,
    ) -> Result<(), ScenarioError> {
        let f = &self.file;
        let kinds = [
            !step.calls.is_empty(),
            step.answer.is_some(),
            step.delegate.is_some(),
            !step.choose.is_empty(),
            step.context_too_small,
            step.user_stop,
        ];
        if kinds.iter().filter(|k| **k).count() != 1 {
            return l.err(
                near,
                key,
                "a step needs exactly one of calls, answer, delegate, choose, context_too_small, user_stop",
            );
        }
        if step.user_stop && (step.times != 1 || step.until.is_some()) {
            return l.err(near, key, "a user_stop step cannot repeat (times, until)");
        }
        if step.times == 0 {
            return l.err(near, &format!("{key}.times"), "must be at least 1");
        }
        if (step.answer.is_some() || step.delegate.is_some())
            && (step.times != 1 || step.until.is_some())
        {
            return l.err(
                near,
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
                        c.tool.span(),
                        &format!("{ck}.tool"),
                        format!("no tool named `{t}` in [tools]{hint}"),
                    );
                }
                if let Some(a) = &c.args_json {
                    if !c.args.is_empty() || c.distinct {
                        return l.err(
                            a.span(),
                            &format!("{ck}.args_json"),
                            "args_json replaces args and distinct: give one",
                        );
                    }
                    if let Err(e) = loopsim_engine::json::parse(a.get_ref().as_bytes()) {
                        return l.err(
                            a.span(),
                            &format!("{ck}.args_json"),
                            format!("not JSON: {e}"),
                        );
                    }
                }
                if let Some(d) = &c.latency_s
                    && !(d.get_ref().is_finite() && *d.get_ref() >= 0.0)
                {
                    return l.err(
                        d.span(),
                        &format!("{ck}.latency_s"),
                        "must be a non-negative number of seconds",
                    );
                }
                if let Some(n) = &c.notice
                    && loopsim_engine::guardrails::NoticeKind::parse(n.kind.get_ref()).is_none()
                {
                    return l.err(
                        n.kind.span(),
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
                            g.action.span(),
                            &format!("{ck}.guardrail.action"),
                            format!("`{action}` is not warn, block or halt"),
                        );
                    }
                    if DecisionCode::parse(g.code.get_ref()).is_none() {
                        return l.err(
                            g.code.span(),
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
                    near.clone(),
                    &format!("{key}.choose[{j}].weight"),
                    "must be a positive number",
                );
            }
            if c.calls.is_empty() == c.answer.is_none() {
                return l.err(
                    near.clone(),
                    &format!("{key}.choose[{j}]"),
                    "a choice needs exactly one of calls, answer",
                );
            }
            check_calls(&c.calls, &format!("{key}.choose[{j}]"))?;
        }
        if let Some(d) = &step.delegate {
            if !f.agents.contains_key(d.get_ref()) || d.get_ref() == "parent" {
                return l.err(
                    d.span(),
                    &format!("{key}.delegate"),
                    format!("no child agent named `{}` in [agents]", d.get_ref()),
                );
            }
            if step.tasks == 0 {
                return l.err(d.span(), &format!("{key}.tasks"), "must be at least 1");
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

    /// The scenario with one Hermes config key set, e.g.
    /// `tool_loop_guardrails.hard_stop_after.idempotent_no_progress` = 3 (a sweep setting).
    /// The result is validated like a loaded scenario.
    pub fn with_config(&self, key: &str, value: toml::Value) -> Result<Scenario, ScenarioError> {
        let mut s = self.clone();
        let bad = |message: String| ScenarioError {
            file: self.path.clone(),
            line: 0,
            key: format!("config.{key}"),
            message,
        };
        let parts: Vec<&str> = key.split('.').collect();
        if parts.iter().any(|p| p.is_empty()) {
            return Err(bad("not a dotted key".into()));
        }
        let mut table = s.file.config.get_mut();
        for part in &parts[..parts.len() - 1] {
            let entry = table
                .entry(part.to_string())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            table = match entry {
                toml::Value::Table(t) => t,
                _ => {
                    return Err(bad(format!(
                        "`{part}` is not a table in the scenario's config"
                    )));
                }
            };
        }
        table.insert(parts[parts.len() - 1].to_string(), value);
        s.config_node = table_to_node(s.file.config.get_ref());
        // Another config is another engine: a recording's own decisions no longer apply.
        s.file.recorded = false;
        s.engine_config(None).map_err(|e| bad(e.to_string()))?;
        Ok(s)
    }

    /// The scenario's `[config]` with a Hermes config.yaml laid over it: keys the file sets
    /// win, the scenario's other keys stay (a user's file rarely repeats what the workload
    /// needs, such as its delegation limits).
    pub fn config_with_yaml(&self, yaml_text: &str, file: &str) -> Result<Node, ConfigError> {
        let user = loopsim_engine::yaml::parse(yaml_text).map_err(|e| ConfigError::Yaml {
            file: file.to_string(),
            line: e.line,
            message: format!("column {}: {}", e.col, e.message),
        })?;
        Ok(if user.value == Yaml::Null {
            self.config_node.clone()
        } else {
            merge_nodes(&self.config_node, &user)
        })
    }

    /// [`Scenario::engine_config_as`] with a config.yaml laid over `[config]`.
    pub fn engine_config_with_yaml(
        &self,
        profile: ProfileName,
        platform: Option<&str>,
        yaml_text: &str,
        file: &str,
    ) -> Result<EngineConfig, ConfigError> {
        let merged = self.config_with_yaml(yaml_text, file)?;
        let platform = platform.or(self.file.platform.as_deref());
        let mut c = EngineConfig::from_node(profile, platform, &merged, file)?;
        c.delegation.child_budget = self.child_budget;
        Ok(c)
    }

    /// A top-level section of `[config]` (e.g. `tool_loop_guardrails`) as Hermes reads it.
    pub fn config_section(&self, key: &str) -> Option<&Node> {
        self.config_node.get(key)
    }

    /// The engine configuration: the profile, the scenario's `[config]`, and the platform
    /// (`platform` overrides the scenario's).
    pub fn engine_config(&self, platform: Option<&str>) -> Result<EngineConfig, ConfigError> {
        self.engine_config_as(self.profile, platform)
    }

    /// [`Scenario::engine_config`] under another profile.
    pub fn engine_config_as(
        &self,
        profile: ProfileName,
        platform: Option<&str>,
    ) -> Result<EngineConfig, ConfigError> {
        let platform = platform.or(self.file.platform.as_deref());
        let mut c = EngineConfig::from_node(profile, platform, &self.config_node, &self.path)?;
        c.delegation.child_budget = self.child_budget;
        Ok(c)
    }
}

/// `over` laid on `base`: mappings merge key by key (recursively), anything else replaces.
pub fn merge_nodes(base: &Node, over: &Node) -> Node {
    match (&base.value, &over.value) {
        (Yaml::Map(b), Yaml::Map(o)) => {
            let mut pairs: Vec<(Node, Node)> = b.clone();
            let mut index = KeyIndex::new(&pairs);
            for (k, v) in o {
                match index.find(&pairs, &k.value) {
                    Some(pos) => pairs[pos].1 = merge_nodes(&pairs[pos].1, v),
                    None => {
                        index.add(&k.value, pairs.len());
                        pairs.push((k.clone(), v.clone()));
                    }
                }
            }
            Node {
                value: Yaml::Map(pairs),
                line: over.line,
            }
        }
        _ => over.clone(),
    }
}

/// A TOML table as the YAML mapping Hermes would have read.
pub fn table_to_node(t: &toml::Table) -> Node {
    Node {
        value: Yaml::Map(
            t.iter()
                .map(|(k, v)| {
                    (
                        Node {
                            value: Yaml::Str(k.clone()),
                            line: 0,
                        },
                        toml_to_node(v),
                    )
                })
                .collect(),
        ),
        line: 0,
    }
}

/// TOML values in Hermes's config shapes become the YAML values Hermes would have read.
pub fn toml_to_node(v: &toml::Value) -> Node {
    let value = match v {
        toml::Value::String(s) => Yaml::Str(s.clone()),
        toml::Value::Integer(i) => Yaml::Int(*i as i128),
        toml::Value::Float(f) => Yaml::Float(*f),
        toml::Value::Boolean(b) => Yaml::Bool(*b),
        toml::Value::Datetime(d) => Yaml::Str(d.to_string()),
        toml::Value::Array(a) => Yaml::Seq(a.iter().map(toml_to_node).collect()),
        toml::Value::Table(t) => return table_to_node(t),
    };
    Node { value, line: 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_a_config_with_many_keys_is_not_quadratic() {
        // 60,000 new keys: ~1.8 billion key comparisons if each were compared with all before.
        let text: String = (0..60_000).map(|i| format!("k{i}: {i}\n")).collect();
        let over = loopsim_engine::yaml::parse(&text).unwrap();
        let base = loopsim_engine::yaml::parse("k5: {a: 1}\nz: 2\n").unwrap();
        let merged = merge_nodes(&base, &over);
        let Yaml::Map(pairs) = &merged.value else {
            panic!("a mapping")
        };
        assert_eq!(pairs.len(), 60_001);
        assert_eq!(merged.get("k5").unwrap().value, Yaml::Int(5));
        assert_eq!(merged.get("z").unwrap().value, Yaml::Int(2));
        // Mappings still merge key by key, the first equal key taking the value.
        let deep = merge_nodes(
            &loopsim_engine::yaml::parse("g: {a: 1, b: 2}\n").unwrap(),
            &loopsim_engine::yaml::parse("g: {b: 3}\n").unwrap(),
        );
        let g = deep.get("g").unwrap();
        assert_eq!(g.get("a").unwrap().value, Yaml::Int(1));
        assert_eq!(g.get("b").unwrap().value, Yaml::Int(3));
    }
}
