//! The simulation: agents running turns through the engine under the seeded scheduler.
//!
//! A turn is the engine's loop: the governor admits an iteration, the fake model answers after
//! its latency with what its script says (tool calls, a delegation, or text), each tool call
//! goes through `before_call`, runs for its latency (after an approval-model call where the
//! tool needs one), and comes back through `after_call` and the stall guards; then the round
//! ends with a halt, a refund or the next iteration. Background delegations report back only
//! as a new turn after the parent's turn has ended.

use std::rc::Rc;
use std::sync::Arc;

use loopsim_engine::GuardrailEngine;
use loopsim_engine::budget::IterationBudget;
use loopsim_engine::config::EngineConfig;
use loopsim_engine::delegation::{Admission, ChildBudget};
use loopsim_engine::guardrails::{Action, CallFacts, Controller, DecisionCode, NoticeKind};

use crate::guard_log::{GuardCall, Logged};
use loopsim_engine::call_limits::{LimitCounter, LimitStop, Tools};
use loopsim_engine::hash::Signature;
use loopsim_engine::json::Value;
use loopsim_engine::observation::FailureStreaks;
use loopsim_engine::stuck::{Check, LogEvent, StuckDetector};
use loopsim_engine::turn::{
    EmptyReply, ExitReason, FinishReason, OnEmptyReply, Step as TurnStep, TurnGovernor, batch,
};
use serde::Serialize;

use crate::clock::{Duration, Instant};
use crate::coverage::{Admitted, Coverage, Mark, RefundSite};
use crate::model::Usage;
use crate::rng::stream;
use crate::scenario::{CallSpec, Scenario};
use crate::scheduler::{Order, Scheduler};
use crate::script::{ArgsCache, ContextGate, Reply, ScriptedAgent, call_args};
use crate::trace::{self, Event, EventKind, Header, TraceWriter};

mod accounting;
mod agent;
mod context;
mod delegation;
mod invariants;
mod provider;
mod rounds;
mod summary;
mod turns;

use agent::{Agent, Family, Round, Tally, Trouble};
pub use invariants::{Invariant, InvariantChecks, Violation};
pub use summary::*;

type AgentId = usize;

#[derive(Clone, Copy, Debug)]
enum Ev {
    Wake(AgentId),
    ModelDone(AgentId),
    CallDone(AgentId),
    Interrupt,
    ChildTimeout(AgentId),
    BatchDone(AgentId, usize),
    /// The user's next message opens the agent's next user turn.
    UserTurn(AgentId),
    /// The provider refused the agent's prompt past its window, and Hermes gave up.
    ContextExhausted(AgentId),
}

struct Batch {
    children: Vec<AgentId>,
    background: bool,
    delivered: bool,
}

/// A tool call in flight.
#[derive(Clone, Debug)]
struct PendingCall<'s> {
    tool: &'s str,
    signature: Signature,
    /// Shared with the call spec's cache unless the call is distinct.
    args: Rc<Value>,
    result: String,
    failed: bool,
    dur: Duration,
}

/// Runs a scenario once. The trace goes to `trace` (hash-only if you do not keep it).
pub fn run(
    scenario: &Scenario,
    opts: &RunOptions,
    trace: TraceWriter,
) -> Result<RunSummary, RunError> {
    let mut w = World::new(scenario, opts, trace)?;
    w.run();
    w.finish()
}

struct World<'s> {
    /// How the run is set up: fixed once it starts.
    setup: Setup<'s>,
    sched: Scheduler<Ev>,
    agents: Vec<Agent<'s>>,
    batches: Vec<Batch>,
    trace: TraceWriter,
    horizon: Instant,
    hit_horizon: bool,
    bridge: Option<crate::engine_bridge::Bridge>,
    /// Parsed arguments per call spec (the specs live as long as the scenario).
    args_cache: ArgsCache,
    guard_log: Option<crate::guard_log::GuardLog>,
    /// Check the invariants after every event ([`invariants`]).
    checks: bool,
    /// The first invariant broken: the run stops there.
    violation: Option<Violation>,
    /// The run reached a state whose handling loopsim does not simulate: it stops there and
    /// fails with this reason.
    unsupported: Option<String>,
    /// How often this run reached each coverage mark.
    coverage: Coverage,
    /// Ledgers of ended turns whose budget children still draw on (the budget invariant
    /// sums every turn that used a budget).
    retired_ledgers: Vec<(Arc<IterationBudget>, loopsim_engine::turn::Ledger)>,
    /// What the whole run has spent, and when it was last active.
    totals: Totals,
}

/// How a run is set up: its scenario and seed, what the seed drew, its engine configuration,
/// and what its report says it used.
struct Setup<'s> {
    sc: &'s Scenario,
    seed: u64,
    /// Faults the seed drew for models without their own (`RunOptions::seeded_faults`).
    seeded_faults: Vec<(String, crate::scenario::ModelFaults)>,
    /// Hang probabilities the seed drew for timed tools without their own.
    seeded_hangs: Vec<(String, f64)>,
    /// Crash probabilities the seed drew for delegated agents without their own.
    seeded_crashes: Vec<(String, f64)>,
    cfg: EngineConfig,
    child_cfg: EngineConfig,
    record_series: bool,
    config_hash: String,
    /// The user's config file and its hash, for the settings in reports.
    config_file: Option<(String, String)>,
    /// Guardrail decisions come from the record (an imported scenario run as written).
    recorded: bool,
    wrong_port: Option<WrongPort>,
}

/// What the whole run has spent, and when.
struct Totals {
    total: Usage,
    window: Option<(u64, u64)>,
    loop_began: Option<u64>,
    last_activity: Instant,
}

impl<'s> World<'s> {
    fn new(sc: &'s Scenario, opts: &RunOptions, trace: TraceWriter) -> Result<Self, RunError> {
        let seed = opts.seed.unwrap_or(sc.file.seed);
        let recorded = sc.file.recorded
            && opts.profile.is_none()
            && opts.config.is_none()
            && opts.platform.is_none()
            && matches!(opts.engine, crate::engine_bridge::EngineChoice::Builtin);
        let profile = opts.profile.unwrap_or(sc.profile);
        if let Some(why) = sc.unsupported_under(profile) {
            return Err(RunError::Unsupported(why));
        }
        let platform = opts.platform.as_deref();
        let build = |platform: Option<&str>| -> Result<EngineConfig, RunError> {
            let mut c = sc.engine_config_over(profile, platform, opts.config.as_deref())?;
            c.delegation.child_budget = sc.child_budget;
            Ok(c)
        };
        let mut cfg = build(platform)?;
        let mut child_cfg = build(Some("subagent"))?;
        if opts.wrong_port == Some(WrongPort::RefundExtendsCallCap) {
            for c in [&mut cfg, &mut child_cfg] {
                c.turn.refund_extends_call_cap = !c.turn.refund_extends_call_cap;
            }
        }
        if recorded {
            // The record is what the budget allowed: no cap of the scenario's profile may cut
            // it short (a what-if under a profile keeps that profile's cap).
            cfg.max_iterations = loopsim_engine::budget::UNLIMITED;
        }
        let bridge = match &opts.engine {
            crate::engine_bridge::EngineChoice::Builtin => None,
            crate::engine_bridge::EngineChoice::HermesPython { python, adapter } => {
                let merged = sc.config_node_over(opts.config.as_deref());
                let section = merged.get("tool_loop_guardrails");
                Some(crate::engine_bridge::Bridge::start(
                    python,
                    adapter,
                    profile.as_str(),
                    section,
                )?)
            }
        };
        let mut w = World {
            checks: opts.invariants.enabled(),
            violation: None,
            unsupported: None,
            coverage: Coverage::default(),
            retired_ledgers: Vec::new(),
            guard_log: opts.guard_log.clone(),
            bridge,
            sched: Scheduler::new(opts.order, stream(seed, "schedule")),
            agents: Vec::new(),
            batches: Vec::new(),
            trace,
            horizon: Instant::START
                + Duration::from_secs_f64(sc.file.report.horizon_s.unwrap_or(86_400.0)),
            args_cache: ArgsCache::default(),
            hit_horizon: false,
            setup: Setup {
                sc,
                seed,
                seeded_faults: if opts.seeded_faults {
                    crate::faults::seeded_sites(sc, seed)
                } else {
                    Vec::new()
                },
                seeded_hangs: if opts.seeded_faults {
                    crate::faults::seeded_tool_hangs(sc, seed)
                } else {
                    Vec::new()
                },
                seeded_crashes: if opts.seeded_faults {
                    crate::faults::seeded_child_crashes(sc, seed)
                } else {
                    Vec::new()
                },
                cfg,

                child_cfg,
                record_series: opts.record_series,
                config_hash: String::new(),
                config_file: opts.config.as_ref().map(|u| (u.file.clone(), u.hash.hex())),
                recorded,
                wrong_port: opts.wrong_port,
            },
            totals: Totals {
                total: Usage::default(),
                window: sc.file.report.window_s.as_ref().map(|w| {
                    let [a, b] = *w.get_ref();
                    (Duration::from_secs_f64(a).0, Duration::from_secs_f64(b).0)
                }),
                loop_began: None,
                last_activity: Instant::START,
            },
        };
        let config_hash = w.setup.cfg.fingerprint().hex();
        w.setup.config_hash = config_hash.clone();
        // Sweeps keep no trace: building the header (it embeds the scenario) would be waste.
        if w.trace.enabled() {
            let header = Header {
                format: trace::FORMAT.into(),
                version: trace::VERSION,
                loopsim: env!("CARGO_PKG_VERSION").into(),
                scenario: sc.file.name.clone(),
                scenario_path: sc.path.clone(),
                scenario_hash: sc.content_hash.hex(),
                seed,
                profile: w.setup.cfg.profile.to_string(),
                platform: w.setup.cfg.platform.clone(),
                config_hash,
                schedule: format!("{:?}", opts.order).to_lowercase(),
                engine: recorded.then(|| "recorded".to_string()),
                config_file: opts.config.as_ref().map(|u| u.file.clone()),
                config_text: opts.config.as_ref().map(|u| u.text.clone()),
                scenario_text: Some(sc.text.to_string()),
                faults: opts.seeded_faults.then(|| "seeded".to_string()),
            };
            w.trace.line(&header);
        }
        let parent = w.spawn_agent("parent".into(), "parent", 0, None);
        w.start_turn(parent, false);
        if let Some(t) = &sc.file.human.interrupt_at_s {
            w.sched.at(
                Instant::START + Duration::from_secs_f64(*t.get_ref()),
                Ev::Interrupt,
            );
        }
        Ok(w)
    }

    fn spawn_agent(
        &mut self,
        name: String,
        spec_name: &str,
        depth: u32,
        parent: Option<AgentId>,
    ) -> AgentId {
        let spec = &self.setup.sc.file.agents[spec_name];
        let name_for_engine = name.clone();
        let cfg = if depth == 0 {
            self.setup.cfg.clone()
        } else {
            self.setup.child_cfg.clone()
        };
        let max = if depth == 0 {
            cfg.max_iterations
        } else {
            cfg.delegation.child_max_iterations
        };
        let gov = TurnGovernor::new(cfg.turn, max);
        let stuck = cfg.stuck.map(|t| {
            let mut d = StuckDetector::new(t);
            d.push(LogEvent::System);
            d
        });
        let crash = crate::faults::CrashStream::new(
            self.setup.seed,
            &name,
            self.crash_rate(spec_name, depth),
        );
        let id = self.agents.len();
        self.agents.push(Agent {
            script: {
                let mut s =
                    ScriptedAgent::new(&self.setup.sc.file, &name, spec_name, self.setup.seed)
                        .with_observation_rules(cfg.observation)
                        .with_context_length(cfg.context_length);
                // A seeded site, where the model has no faults of its own and the runtime's
                // handling of both reply faults is proved.
                if let Some((_, f)) = self
                    .setup
                    .seeded_faults
                    .iter()
                    .find(|(m, _)| m == spec.model.get_ref())
                    && cfg
                        .turn
                        .invalid_calls
                        .is_some_and(|r| r.unknown_tool_strikes.is_some())
                {
                    s = s.with_reply_faults(f);
                }
                if !self.setup.seeded_hangs.is_empty() {
                    s = s.with_tool_hangs(&self.setup.seeded_hangs);
                }
                match cfg.compression {
                    Some(c) => s.with_compression(c),
                    None => s.without_compression(),
                }
            },
            name,
            spec,
            guard: {
                let guard: Box<dyn GuardrailEngine> = match &self.bridge {
                    Some(b) => {
                        Box::new(b.agent(&name_for_engine, cfg.platform.as_deref(), cfg.rules))
                    }
                    None if self.setup.recorded => {
                        Box::new(crate::recorded::RecordedGuard::new(spec, cfg.rules))
                    }
                    None => Box::new(Controller::new(cfg.guardrails, cfg.rules)),
                };
                match &self.guard_log {
                    None => guard,
                    Some(log) => {
                        log.lock().expect("guard log").push(GuardCall::New {
                            agent: id,
                            config: cfg.guardrails,
                            rules: cfg.rules,
                        });
                        Box::new(Logged {
                            inner: guard,
                            agent: id,
                            log: log.clone(),
                        })
                    }
                }
            },
            gov,
            cfg,
            status: Status::Idle,
            failure_streaks: FailureStreaks::default(),
            limits: LimitCounter::default(),
            stuck,
            interrupted: false,
            round: Round {
                plan: None,
                call_index: 0,
                round_tools: Vec::new(),
                round_calls: Vec::new(),
                since_tool: None,
                round_flagged: false,
                blocked: Vec::new(),
                last_tokens: (0, 0),
                call_started: self.sched.now(),
                pending: None,
            },
            tally: Tally {
                calls: 0,
                turns: 0,
                exit_reasons: Vec::new(),
                last_turn_exit: None,
                warnings: 0,
                notices: 0,
                first_warning: None,
                stop: None,
                summary_calls: 0,
                usage: Usage::default(),
                window: Usage::default(),
                after_loop: Usage::default(),
                wait_us: 0,
                last_activity: self.sched.now(),
                series: self.setup.record_series.then(AgentSeries::default),
                tool_calls: Vec::new(),
                stubs: 0,
                compressions: Default::default(),
            },
            trouble: Trouble {
                provider: None,
                failed_call: None,
                batch_error: None,

                crash,
            },
            family: Family {
                depth,
                parent,
                waiting_batch: None,
                pending_results: Vec::new(),
            },
        });
        id
    }

    fn now(&self) -> u64 {
        self.sched.now().0
    }

    fn event(&mut self, agent: AgentId, kind: EventKind) -> Event {
        Event::new(self.now(), self.agents[agent].name.clone(), kind)
    }

    fn run(&mut self) {
        while let Some((t, ev)) = self.sched.pop() {
            if self.sched.events_handled() > MAX_EVENTS && self.checks {
                let detail = format!("more than {MAX_EVENTS} events by t = {} us", t.0);
                self.violate(Invariant::EventCap, 0, detail);
                break;
            }
            if t > self.horizon || self.sched.events_handled() > MAX_EVENTS {
                self.hit_horizon = true;
                break;
            }
            if !matches!(ev, Ev::Interrupt) {
                self.totals.last_activity = t;
            }
            if self.bridge.as_ref().is_some_and(|b| b.failure().is_some()) {
                break;
            }
            match ev {
                Ev::Wake(a) => self.wake(a),
                Ev::ContextExhausted(a) => self.end_turn(a),
                Ev::ModelDone(a) => self.model_done(a),
                Ev::CallDone(a) => self.call_done(a),
                Ev::Interrupt => self.interrupt(),
                Ev::ChildTimeout(c) => self.child_timeout(c),
                Ev::BatchDone(p, b) => self.deliver(p, b),
                Ev::UserTurn(a) => self.start_turn(a, false),
            }
            if self.unsupported.is_some() {
                return;
            }
            if self.checks {
                self.check_after_event();
                if self.violation.is_some() {
                    return;
                }
            }
        }
        let engine_failed = self.bridge.as_ref().is_some_and(|b| b.failure().is_some());
        if self.checks && !self.hit_horizon && !engine_failed {
            self.check_at_rest();
        }
    }

    fn interrupt(&mut self) {
        if self
            .agents
            .iter()
            .all(|a| !matches!(a.status, Status::Running | Status::Waiting))
        {
            // Nothing is running: the user's stop comes after the work ended.
            return;
        }
        self.totals.last_activity = self.sched.now();
        self.coverage.hit(Mark::UserStop);
        if self.trace.enabled() {
            let e = self.event(0, EventKind::Interrupt);
            self.trace.line(&e);
        }
        for a in 0..self.agents.len() {
            self.agents[a].interrupted = true;
        }
        // An idle parent has nothing to stop; a running one stops at its next iteration.
        if self.agents[0].status == Status::Waiting {
            self.sched.at(self.sched.now(), Ev::CallDone(0));
        }
    }
}
