//! What a run reports: its options, the summary of every agent and of the run, and the
//! summary's assembly at the end of a run.

use std::collections::BTreeMap;

use loopsim_engine::profile::ProfileName;

use super::*;

/// How a run is set up beyond its scenario.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    pub seed: Option<u64>,
    /// Overrides the scenario's profile.
    pub profile: Option<loopsim_engine::profile::ProfileName>,
    /// A Hermes config.yaml laid over the scenario's `[config]` (its keys win).
    pub config: Option<std::sync::Arc<crate::user_config::UserConfig>>,
    pub platform: Option<String>,
    pub order: Order,
    /// Keep per-agent time series (cost, budget, activity spans) for plots.
    pub record_series: bool,
    /// Which engine decides the guardrails.
    pub engine: crate::engine_bridge::EngineChoice,
    /// A deliberately wrong port, for tests that prove a live diff catches one.
    pub wrong_port: Option<WrongPort>,
    /// Where to write every call to the agents' guardrail engines (the benches replay them).
    pub guard_log: Option<crate::guard_log::GuardLog>,
    /// Whether the run checks its invariants after every event.
    pub invariants: InvariantChecks,
    /// The seed also draws provider faults for the models that have none
    /// ([`crate::faults::seeded_sites`]; `loopsim explore --faults`).
    pub seeded_faults: bool,
}

/// A deliberately wrong reading of the reference, switched on only by tests
/// (`LOOPSIM_TEST_WRONG_PORT`): the live diff must catch it at the event where it shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WrongPort {
    /// Flips whether an execute_code-only round also gives back its API call.
    RefundExtendsCallCap,
    /// Charges a model call at least twice its model's mean latency to the run's total but
    /// not to its agent: an invariant break that only some seeds show (`loopsim explore`
    /// must find one).
    UnchargedSlowCall,
}

impl WrongPort {
    pub const NAMES: [&'static str; 2] = ["refund-extends-call-cap", "uncharged-slow-call"];

    pub fn parse(s: &str) -> Option<WrongPort> {
        match s {
            "refund-extends-call-cap" => Some(WrongPort::RefundExtendsCallCap),
            "uncharged-slow-call" => Some(WrongPort::UnchargedSlowCall),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            WrongPort::RefundExtendsCallCap => "refund-extends-call-cap",
            WrongPort::UnchargedSlowCall => "uncharged-slow-call",
        }
    }
}

/// What an agent was doing during a span of virtual time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SpanKind {
    Model,
    Tool,
    /// Inside a synchronous delegation, waiting for children.
    Waiting,
}

/// One agent's time series, kept when [`RunOptions::record_series`] is set.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct AgentSeries {
    /// `(t_us, cumulative micro-dollars)` after every priced call.
    pub cost: Vec<(u64, u64)>,
    /// `(t_us, iterations used)` after every change of the budget.
    pub budget_used: Vec<(u64, u64)>,
    /// `(start_us, end_us, kind)`.
    pub spans: Vec<(u64, u64, SpanKind)>,
    /// When warnings or notices came, and when guardrail stops happened.
    pub warnings_us: Vec<u64>,
    pub stops_us: Vec<u64>,
}

/// Where an agent stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Running,
    /// Inside a delegate_task call, waiting for its children.
    Waiting,
    /// Between turns (a background result may still open one).
    Idle,
    Done,
    TimedOut,
    /// A child whose own code raised: its parent's delegate_task reported it failed.
    Crashed,
    Interrupted,
}

/// A guardrail stop: which call, when, why.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Stop {
    pub call: u64,
    pub t_us: u64,
    pub code: String,
}

/// One agent's outcome.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AgentSummary {
    pub name: String,
    pub status: Status,
    pub turns: u32,
    pub exit_reasons: Vec<String>,
    pub budget_used: u64,
    pub budget_max: u64,
    pub warnings: u32,
    pub notices: u32,
    pub first_warning_call: Option<u64>,
    pub first_warning_us: Option<u64>,
    pub stop: Option<Stop>,
    pub summary_calls: u32,
    pub usage: Usage,
    /// Figures inside the scenario's `[report] window_s`.
    pub window: Option<Usage>,
    /// Figures from the first `loop_begins` step of the run on (the waste).
    pub after_loop_began: Option<Usage>,
    /// Time spent inside synchronous delegations waiting for children.
    pub wait_us: u64,
    /// Virtual time of this agent's last activity.
    pub last_activity_us: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub series: Option<AgentSeries>,
    /// Tool calls the model made, by tool (refused ones included). Not in traces: their
    /// events already carry every call.
    #[serde(skip)]
    pub tool_calls: BTreeMap<String, u64>,
    /// Results replaced by the identical-result stub (newest guardrails). Not in traces.
    #[serde(skip)]
    pub stubs: u64,
    /// Context compressions and their summary calls (a model with a context window).
    #[serde(skip_serializing_if = "crate::model::Compressions::is_none")]
    pub compressions: crate::model::Compressions,
}

/// A run's outcome.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunSummary {
    pub scenario: String,
    pub scenario_hash: String,
    pub label: crate::scenario::Label,
    /// A hash of the effective engine configuration (profile, config, platform).
    pub config_hash: String,
    /// The engine settings the run used (left out of sweeps, whose rows name their setting).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub settings: Option<crate::settings::Settings>,
    pub seed: u64,
    #[serde(serialize_with = "as_display")]
    pub profile: ProfileName,
    pub platform: Option<String>,
    pub duration_us: u64,
    /// How the parent's last turn ended (`unknown` when it never ended one).
    #[serde(serialize_with = "as_display")]
    pub parent_exit_reason: ExitReason,
    pub agents: Vec<AgentSummary>,
    pub total: Usage,
    /// When the first `loop_begins` step ran.
    pub loop_began_us: Option<u64>,
    pub events: u64,
    /// The run hit the horizon (virtual time or event count) before it ended by itself.
    pub hit_horizon: bool,
    pub trace_hash: String,
    /// A model's price is unknown: the dollar figures are not real and reports say so.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub price_unknown: bool,
    /// The guardrail decisions were the recorded session's own (an imported scenario).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub recorded: bool,
    /// Where an imported scenario came from and which figures are estimated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_note: Option<String>,
    /// How often the run reached each coverage mark (not in traces or reports).
    #[serde(skip)]
    pub coverage: crate::coverage::Coverage,
}

/// Writes a typed value as the word it prints (profiles and exit reasons, whose engine crate
/// has no serde).
fn as_display<T: std::fmt::Display, S: serde::Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

/// Runs stop after this many events whatever the scenario says: a script that loops without
/// latency would otherwise never advance time.
pub const MAX_EVENTS: u64 = 1_000_000;

/// A failed run (the scenario cannot be run as configured).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Config(#[from] loopsim_engine::config::ConfigError),
    #[error("writing the trace: {0}")]
    Trace(#[from] std::io::Error),
    #[error("engine {engine}: {error}")]
    Engine { engine: String, error: String },
    #[error(transparent)]
    Bridge(#[from] crate::engine_bridge::BridgeError),
    /// The scenario uses a mechanism the profile's runtime does not have.
    #[error("{0}")]
    Unsupported(String),
    /// The run broke one of the simulator's invariants: a bug in loopsim, not in the input.
    #[error("{0}")]
    Invariant(Box<Violation>),
}

impl World<'_> {
    pub(super) fn finish(mut self) -> Result<RunSummary, RunError> {
        if let Some(v) = self.violation.take() {
            return Err(RunError::Invariant(Box::new(v)));
        }
        if let Some(why) = self.unsupported.take() {
            return Err(RunError::Unsupported(format!(
                "{}: {why}",
                self.setup.sc.path
            )));
        }
        if let Some(e) = self.bridge.as_ref().and_then(|b| b.failure()) {
            return Err(RunError::Engine {
                engine: "hermes-python".into(),
                error: e.to_string(),
            });
        }
        let agents: Vec<AgentSummary> =
            self.agents
                .iter()
                .map(|ag| AgentSummary {
                    name: ag.name.clone(),
                    status: ag.status,
                    turns: ag.tally.turns,
                    exit_reasons: ag.tally.exit_reasons.clone(),
                    budget_used: ag.gov.budget().used(),
                    budget_max: ag.gov.budget().max_total(),
                    warnings: ag.tally.warnings,
                    notices: ag.tally.notices,
                    first_warning_call: ag.tally.first_warning.map(|w| w.0),
                    first_warning_us: ag.tally.first_warning.map(|w| w.1),
                    stop: ag.tally.stop.clone(),
                    summary_calls: ag.tally.summary_calls,
                    usage: ag.tally.usage.clone(),
                    window: self.totals.window.map(|_| ag.tally.window.clone()),
                    after_loop_began: self.totals.loop_began.map(|_| ag.tally.after_loop.clone()),
                    wait_us: ag.tally.wait_us,
                    last_activity_us: ag.tally.last_activity.0,
                    series: ag.tally.series.clone(),
                    tool_calls: ag.tally.tool_calls.iter().fold(
                        BTreeMap::new(),
                        |mut m, (t, n)| {
                            *m.entry(t.to_string()).or_default() += n;
                            m
                        },
                    ),
                    stubs: ag.tally.stubs,
                    compressions: ag.tally.compressions,
                })
                .collect();
        let mut summary = RunSummary {
            scenario: self.setup.sc.file.name.clone(),
            scenario_hash: self.setup.sc.content_hash.hex(),
            label: self.setup.sc.file.label,
            config_hash: self.setup.config_hash.clone(),
            settings: (self.trace.enabled() || self.setup.record_series).then(|| {
                crate::settings::Settings::of(
                    &self.setup.cfg,
                    self.setup.config_file.clone(),
                    self.setup.config_hash.clone(),
                )
            }),
            seed: self.setup.seed,
            profile: self.setup.cfg.profile,
            platform: self.setup.cfg.platform.clone(),
            duration_us: self.totals.last_activity.0,
            parent_exit_reason: self.agents[0]
                .tally
                .last_turn_exit
                .clone()
                .unwrap_or(ExitReason::Unknown),
            agents,
            total: self.totals.total.clone(),
            loop_began_us: self.totals.loop_began,
            events: self.sched.events_handled(),
            hit_horizon: self.hit_horizon,
            trace_hash: String::new(),
            price_unknown: self.price_unknown(),
            recorded: self.setup.recorded,
            source_note: self
                .setup
                .sc
                .file
                .source
                .as_ref()
                .map(|s| s.note.clone())
                .filter(|n| !n.is_empty()),
            coverage: std::mem::take(&mut self.coverage),
        };
        if self.trace.enabled() {
            let above = self.trace.hash_so_far();
            // The footer holds the summary without time series, so it does not depend on
            // whether series were recorded.
            let mut lean = summary.clone();
            lean.agents.iter_mut().for_each(|a| a.series = None);
            self.trace
                .line(&serde_json::json!({ "kind": "end", "summary": &lean, "hash_above": above }));
        }
        summary.trace_hash = self.trace.finish()?;
        Ok(summary)
    }
}
