//! Scenario files: a workload and its expectations, in TOML a person can read and edit.
//!
//! A scenario names the engine profile and Hermes config (in Hermes's own key shapes), the
//! models and tools with their latencies, tokens and prices, the agents and their scripts, the
//! human, and an `[expect]` block. Unknown keys, bad values and impossible combinations are
//! errors that name the file, line and key. See `scenarios/README.md` for the format.

use std::collections::BTreeMap;
use std::fmt;

use loopsim_engine::delegation::ChildBudget;
use loopsim_engine::hash::Hash;
use loopsim_engine::profile::ProfileName;
use loopsim_engine::yaml::Node;
use serde::Deserialize;
use toml::Spanned;

mod config;
mod expect;
mod fault_rates;
mod runtimes;
mod spans;
mod validate;

pub use config::merge_nodes;
pub use expect::{Expect, Figures, under_key};
pub use fault_rates::FAULT_RATES;
use spans::SpanTree;
pub use validate::MAX_TASKS;

/// A scenario that cannot be used, with where and why (line 0: the file as a whole).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.shown())]
pub struct ScenarioError {
    pub file: String,
    pub line: usize,
    pub key: String,
    pub message: String,
}

impl ScenarioError {
    fn shown(&self) -> String {
        match (self.line, self.key.as_str()) {
            (0, "file") => format!("{}: {}", self.file, self.message),
            (0, key) => format!("{}: {key}: {}", self.file, self.message),
            (line, key) => format!("{}:{line}: {key}: {}", self.file, self.message),
        }
    }
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
    /// The largest value a distribution may name or draw (a billion seconds or tokens): past
    /// it, durations and token sums would overflow.
    pub const MAX: f64 = 1e9;

    fn check(&self) -> Result<(), String> {
        let ok = |x: f64| x.is_finite() && (0.0..=Self::MAX).contains(&x);
        match self {
            Dist::Fixed(x) if !ok(*x) => {
                Err(format!("{x} is not a number from 0 to {:e}", Self::MAX))
            }
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
                    return Err(format!("uniform [{a}, {b}] needs 0 <= a <= b <= 1e9"));
                }
                if let Some([m, sd]) = s.normal
                    && !(ok(m) && ok(sd))
                {
                    return Err(format!(
                        "normal [{m}, {sd}] needs a mean and sd from 0 to 1e9"
                    ));
                }
                if let Some([m, sg]) = s.lognormal
                    && !(ok(m) && m > 0.0 && ok(sg))
                {
                    return Err(format!(
                        "lognormal [{m}, {sg}] needs a median above 0 and a sigma from 0, both at most 1e9"
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
    /// Probability of an empty reply (no text, no tool call): the runtime's empty-reply
    /// recovery counts it as an iteration and asks again, or ends the turn.
    #[serde(default = "zero")]
    pub empty_reply_probability: Spanned<f64>,
    /// For auxiliary models: input tokens per call (main models use the agent's context).
    #[serde(default)]
    pub input_tokens: u64,
    /// The model's context window in tokens: Hermes compresses the context as it nears it,
    /// and a turn whose context no longer fits dies of it. None: the context never fills.
    pub context_window: Option<Spanned<u64>>,
    /// Provider errors on the agent loop's requests to this model (none by default).
    pub faults: Option<ModelFaults>,
}

/// Seeded provider errors: each attempt of a model call draws each kind with its
/// probability, and the runtime's retry policy decides what follows
/// ([`loopsim_engine::retry`]).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelFaults {
    /// HTTP 429 with the rate-limit classification.
    #[serde(default = "zero")]
    pub rate_limit: Spanned<f64>,
    /// The 429's `Retry-After` in seconds (none: no header, the runtime backs off).
    pub retry_after_s: Option<Spanned<f64>>,
    /// HTTP 500.
    #[serde(default = "zero")]
    pub server_error: Spanned<f64>,
    /// The response stream closes before its first token (a transport error: the runtime's
    /// stream retries, then its attempts, then a rebuilt client), drawn per stream.
    #[serde(default = "zero")]
    pub dropped_stream: Spanned<f64>,
    /// How long an error response takes to come back (default 0).
    pub latency_s: Option<Spanned<Dist>>,
    /// A reply with tool calls names a tool that does not exist instead, every call of it
    /// ([`crate::faults::UNKNOWN_TOOL`]), drawn per reply.
    #[serde(default = "zero")]
    pub unknown_tool: Spanned<f64>,
    /// A reply with tool calls carries arguments that are not JSON instead
    /// ([`crate::faults::MALFORMED_ARGS`]), drawn per reply.
    #[serde(default = "zero")]
    pub malformed_args: Spanned<f64>,
    /// A reply with tool calls also calls a tool that does not exist, after its own calls
    /// (a mixed batch: Hermes runs the real ones), drawn per reply.
    #[serde(default = "zero")]
    pub unknown_tool_in_batch: Spanned<f64>,
}

/// The reply faults, as an error about their sum names them.
pub const REPLY_FAULTS: &str = "unknown_tool, malformed_args and unknown_tool_in_batch";

impl ModelFaults {
    /// The chance that a reply with tool calls is not the script's as written: the three
    /// reply faults share one draw per reply, so this may not pass 1.
    pub fn reply_faults(&self) -> f64 {
        self.unknown_tool.get_ref()
            + self.malformed_args.get_ref()
            + self.unknown_tool_in_batch.get_ref()
    }

    /// Whether some reply may call [`crate::faults::UNKNOWN_TOOL`].
    pub fn calls_unknown_tools(&self) -> bool {
        *self.unknown_tool.get_ref() > 0.0 || *self.unknown_tool_in_batch.get_ref() > 0.0
    }
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
    /// The chance that a call never finishes by itself (a process that never exits, a server
    /// that never answers): it runs until its timeout, which the tool must then have.
    #[serde(default = "zero")]
    pub hang_probability: Spanned<f64>,
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
    /// Replies taken in turn, one per model call (`times = 6` over two entries: A, B, A, B,
    /// A, B): a model that oscillates.
    #[serde(default)]
    pub cycle: Vec<CycleEntry>,
}

/// One reply of a `cycle` step.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CycleEntry {
    pub calls: Vec<CallSpec>,
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
    /// The chance, at the top of each of its iterations, that the agent's own code raises
    /// (a bug, a dependency that throws): only a delegated agent's is caught, by its
    /// parent's delegate_task, which reports the child failed with the calls it made.
    #[serde(default = "zero")]
    pub crash_probability: Spanned<f64>,
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

impl ScenarioFile {
    /// Whether some step of some agent's scripts delegates to agent `name`.
    pub fn delegated_to(&self, name: &str) -> bool {
        self.agents.values().any(|a| {
            a.script
                .iter()
                .chain(&a.on_result)
                .chain(a.turns.iter().flat_map(|t| &t.script))
                .any(|s| s.delegate.as_ref().is_some_and(|d| d.get_ref() == name))
        })
    }
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
    /// The file's text (traces embed it, so they replay anywhere).
    pub text: std::sync::Arc<str>,
    pub file: ScenarioFile,
    pub profile: ProfileName,
    pub child_budget: ChildBudget,
    /// `[config]` as the values Hermes would have read, with their lines (sweep settings and
    /// a `--config` file are laid over it).
    config_node: Node,
    /// Settings laid over the scenario for each runtime other than its own (sweep values, a
    /// `--config` file), in that runtime's keys: its own `[config]` does not apply there.
    foreign_config: std::collections::BTreeMap<loopsim_engine::profile::Runtime, Node>,
    /// What loads but deserves a word (an unknown platform name).
    pub warnings: Vec<ScenarioError>,
}

/// Larger scenario files are refused: an imported session of a few thousand calls is well
/// under it.
pub const MAX_SCENARIO_BYTES: usize = 64 << 20;

/// Errors at a key path, on the line the file has it.
pub(crate) struct Lines<'a> {
    pub(crate) file: &'a str,
    pub(crate) spans: &'a SpanTree,
}

impl Lines<'_> {
    pub(crate) fn error(&self, key: &str, message: impl Into<String>) -> ScenarioError {
        ScenarioError {
            file: self.file.to_string(),
            line: self.spans.line_of_path(key),
            key: key.to_string(),
            message: message.into(),
        }
    }

    pub(crate) fn err<T>(&self, key: &str, message: impl Into<String>) -> Result<T, ScenarioError> {
        Err(self.error(key, message))
    }
}

/// A TOML parse or type error, with the whole key path and the line of the offending key or
/// value.
fn toml_error(e: &toml::de::Error, spans: &SpanTree, text: &str, file: &str) -> ScenarioError {
    let span = e.span().unwrap_or(0..0);
    let msg = e.message().trim().to_string();
    let at = span.start.min(text.len());
    let quoted = msg.split('`').nth(1).map(str::to_string);
    let inner = spans.path_at(at);
    let join = |a: &str, b: &str| {
        if a.is_empty() {
            b.to_string()
        } else {
            format!("{a}.{b}")
        }
    };
    let (key, message) = if msg.starts_with("unknown field") {
        // The key is the unknown one; serde lists what it expected.
        let name = quoted.unwrap_or_default();
        let expected: Vec<&str> = msg
            .split_once("expected")
            .map(|(_, rest)| rest.split('`').skip(1).step_by(2).collect())
            .unwrap_or_default();
        let hint = loopsim_engine::config::keys::nearest(&name, expected.iter().copied())
            .map(|n| format!(" (did you mean `{n}`?)"))
            .unwrap_or_default();
        let path = if inner.ends_with(&name) {
            inner
        } else {
            join(&inner, &name)
        };
        (path, format!("unknown key{hint}; {msg}"))
    } else if msg.starts_with("missing field") {
        let name = quoted.unwrap_or_default();
        (
            join(&spans.table_containing(&span), &name),
            format!("missing: {msg}"),
        )
    } else if msg.starts_with("duplicate key") {
        duplicate(text, at, &span)
    } else {
        // The `key =` on the offending line, below the innermost key found.
        let line_text = text[..at].rsplit('\n').next().unwrap_or("");
        let line_key = line_text
            .split_once('=')
            .map(|(k, _)| {
                k.trim()
                    .trim_start_matches(['{', '[', ','])
                    .trim()
                    .to_string()
            })
            .filter(|k| !k.is_empty() && !k.contains(' '))
            .unwrap_or_default();
        let key = match (inner.is_empty(), line_key.is_empty()) {
            (true, true) => "toml".to_string(),
            (true, false) => line_key,
            (false, false) if spans.is_table(&inner) && !inner.ends_with(&line_key) => {
                join(&inner, &line_key)
            }
            _ => inner,
        };
        (key, msg)
    };
    ScenarioError {
        file: file.to_string(),
        line: spans.line_of(at),
        key,
        message,
    }
}

/// A duplicate key or table: its whole path, and the line where it was first set.
fn duplicate(text: &str, at: usize, span: &std::ops::Range<usize>) -> (String, String) {
    let line = text[..at].matches('\n').count() + 1;
    let heads = spans::headers(text);
    let current = heads.iter().rev().find(|h| h.line <= line);
    let first_of = |name: &str| heads.iter().find(|h| h.name == name).map(|h| h.line);
    match current {
        // The header itself is the duplicate: `[config.tool_loop_guardrails]` twice.
        Some(h) if h.line == line => {
            let first = first_of(&h.name).filter(|&f| f < line);
            let message = first.map_or("duplicate table".into(), |f| {
                format!("duplicate table: already opened at line {f}")
            });
            (h.path.clone(), message)
        }
        // A key set twice in one table: look for its first line from the header on.
        _ => {
            let name = text
                .get(span.clone())
                .map(|k| k.trim().trim_matches('"').to_string())
                .unwrap_or_default();
            let from = current.map_or(1, |h| h.line + 1);
            let first = text
                .lines()
                .enumerate()
                .skip(from - 1)
                .take(line.saturating_sub(from))
                .find(|(_, l)| {
                    l.trim_start()
                        .strip_prefix(name.as_str())
                        .is_some_and(|r| r.trim_start().starts_with('='))
                })
                .map(|(i, _)| i + 1);
            let path = match current {
                Some(h) => format!("{}.{name}", h.path),
                None => name,
            };
            let message = first.map_or("duplicate key".into(), |f| {
                format!("duplicate key: already set at line {f}")
            });
            (path, message)
        }
    }
}

impl Scenario {
    /// Reads and validates a scenario file.
    pub fn load(path: &std::path::Path) -> Result<Scenario, ScenarioError> {
        let shown = path.display().to_string();
        let bytes = crate::input::read_bounded(path, MAX_SCENARIO_BYTES as u64, "scenarios")
            .map_err(|e| ScenarioError {
                file: shown.clone(),
                line: 0,
                key: "file".into(),
                message: e.to_string(),
            })?;
        let text = String::from_utf8(bytes).map_err(|e| ScenarioError {
            file: shown.clone(),
            line: 0,
            key: "file".into(),
            message: format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to()),
        })?;
        Scenario::parse(&text, &shown)
    }

    /// Parses and validates scenario text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Scenario, ScenarioError> {
        if text.len() > MAX_SCENARIO_BYTES {
            return Err(ScenarioError {
                file: file.to_string(),
                line: 0,
                key: "file".into(),
                message: format!(
                    "{} bytes: loopsim reads scenarios of at most {} MiB",
                    text.len(),
                    MAX_SCENARIO_BYTES >> 20
                ),
            });
        }
        let (spans, syntax) = SpanTree::parse(text);
        if let Some(e) = syntax.first() {
            return Err(toml_error(e, &spans, text, file));
        }
        let lines = Lines {
            file,
            spans: &spans,
        };
        let parsed: ScenarioFile =
            toml::from_str(text).map_err(|e| toml_error(&e, &spans, text, file))?;
        let profile = match parsed.profile.get_ref().parse::<ProfileName>() {
            Ok(p) => p,
            Err(e) => return lines.err("profile", e.to_string()),
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
                        "child_budget",
                        "expected \"independent\", \"shared\" or { reserved = N } with N >= 0",
                    );
                }
            },
        };
        let mut s = Scenario {
            path: file.to_string(),
            content_hash: Hash::of(text.as_bytes()),
            text: text.into(),
            config_node: config::table_to_node(parsed.config.get_ref(), &spans, "config"),
            foreign_config: Default::default(),
            file: parsed,
            profile,
            child_budget,
            warnings: Vec::new(),
        };
        s.validate(&lines)?;
        s.validate_expect(&lines)?;
        s.check_config(&lines)?;
        if let Some(p) = &s.file.platform
            && let Some(w) = loopsim_engine::platform::warning(p)
        {
            s.warnings.push(lines.error("platform", w));
        }
        Ok(s)
    }
}
