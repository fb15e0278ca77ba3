//! The simulation: agents running turns through the engine under the seeded scheduler.
//!
//! A turn is the engine's loop: the governor admits an iteration, the fake model answers after
//! its latency with what its script says (tool calls, a delegation, or text), each tool call
//! goes through `before_call`, runs for its latency (after an approval-model call where the
//! tool needs one), and comes back through `after_call` and the stall guards; then the round
//! ends with a halt, a refund or the next iteration. Background delegations report back only
//! as a new turn after the parent's turn has ended.

use std::sync::Arc;

use loopsim_engine::GuardrailEngine;
use loopsim_engine::budget::IterationBudget;
use loopsim_engine::config::EngineConfig;
use loopsim_engine::delegation::{Admission, ChildBudget};
use loopsim_engine::guardrails::{Action, CallFacts, Controller, DecisionCode, NoticeKind};
use loopsim_engine::hash::{Hash, Signature};
use loopsim_engine::json::{self, Value};
use loopsim_engine::turn::{ExitReason, FinishReason, Step as TurnStep, TurnGovernor};
use rand::RngExt;
use rand::rngs::ChaCha8Rng;
use serde::Serialize;

use crate::clock::{Duration, Instant};
use crate::model::{Usage, cost_micro_usd};
use crate::rng::stream;
use crate::scenario::{AgentSpec, CallSpec, Dist, Scenario, Step, Until};
use crate::scheduler::{Order, Scheduler};
use crate::trace::{self, Event, Header, TraceWriter};

mod delegation;
mod summary;

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
}

/// What the model decided at its last call.
#[derive(Clone, Copy, Debug)]
enum Plan<'s> {
    Answer,
    /// The local runtime's context window is too small: the call is refunded and the turn fails.
    ContextTooSmall,
    Calls(&'s [CallSpec]),
    Delegate {
        agent: &'s str,
        tasks: u32,
    },
}

struct Batch {
    children: Vec<AgentId>,
    background: bool,
    delivered: bool,
}

struct Agent<'s> {
    name: String,
    spec: &'s AgentSpec,
    depth: u32,
    parent: Option<AgentId>,
    cfg: EngineConfig,
    guard: Box<dyn GuardrailEngine>,
    gov: TurnGovernor,
    /// The budget children share in shared/reserved modes (the current turn's).
    rng: ChaCha8Rng,
    on_result: bool,
    /// 0 for the first turn's script, k for `turns[k - 1]`.
    user_turn: usize,
    step: usize,
    rep: u32,
    context: u64,
    status: Status,
    plan: Option<Plan<'s>>,
    plan_step: Option<usize>,
    call_index: usize,
    round_tools: Vec<&'s str>,
    round_flagged: bool,
    call_started: Instant,
    waiting_batch: Option<usize>,
    pending_results: Vec<usize>,
    calls: u64,
    turns: u32,
    exit_reasons: Vec<String>,
    warnings: u32,
    notices: u32,
    first_warning: Option<(u64, u64)>,
    stop: Option<Stop>,
    summary_calls: u32,
    usage: Usage,
    window: Usage,
    after_loop: Usage,
    wait_us: u64,
    last_activity: Instant,
    series: Option<AgentSeries>,
    interrupted: bool,
    pending: Option<PendingCall<'s>>,
}

/// A tool call in flight.
#[derive(Clone, Debug)]
struct PendingCall<'s> {
    tool: &'s str,
    signature: Signature,
    args: Value,
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
    sc: &'s Scenario,
    seed: u64,
    cfg: EngineConfig,
    child_cfg: EngineConfig,
    sched: Scheduler<Ev>,
    agents: Vec<Agent<'s>>,
    batches: Vec<Batch>,
    tool_rng: std::collections::BTreeMap<String, ChaCha8Rng>,
    approval_rng: ChaCha8Rng,
    trace: TraceWriter,
    total: Usage,
    window: Option<(u64, u64)>,
    loop_began: Option<u64>,
    horizon: Instant,
    counter: u64,
    last_activity: Instant,
    hit_horizon: bool,
    record_series: bool,
    config_hash: String,
    /// The user's config file and its hash, for the settings in reports.
    config_file: Option<(String, String)>,
    bridge: Option<crate::bridge::Bridge>,
    /// Guardrail decisions come from the record (an imported scenario run as written).
    recorded: bool,
    /// Parsed arguments per call spec (the specs live as long as the scenario).
    args_cache: rustc_hash::FxHashMap<*const CallSpec, (Value, Signature)>,
}

/// A scenario's TOML arguments as the JSON value a model would send.
fn toml_args(args: &toml::Table) -> Value {
    let v = serde_json::to_value(args).unwrap_or(serde_json::Value::Null);
    json::parse(v.to_string().as_bytes()).unwrap_or(Value::Object(vec![]))
}

/// The arguments and signature of one call: parsed and hashed once per call spec; distinct
/// repetitions add `n` and are hashed again.
fn call_args(
    cache: &mut rustc_hash::FxHashMap<*const CallSpec, (Value, Signature)>,
    c: &CallSpec,
    rep: u32,
) -> (Value, Signature) {
    let tool = c.tool.get_ref();
    let (base, sig) = cache.entry(c as *const CallSpec).or_insert_with(|| {
        let v = match &c.args_json {
            // Validated when the scenario was loaded.
            Some(text) => json::parse(text.get_ref().as_bytes()).unwrap_or(Value::Object(vec![])),
            None => toml_args(&c.args),
        };
        let sig = Signature::new(tool, &v);
        (v, sig)
    });
    if !c.distinct {
        return (base.clone(), sig.clone());
    }
    let mut v = base.clone();
    if let Value::Object(pairs) = &mut v {
        pairs.retain(|(k, _)| k.as_slice() != b"n");
        pairs.push((b"n".to_vec(), Value::Int(rep.to_string().into())));
    }
    let sig = Signature::new(tool, &v);
    (v, sig)
}

impl<'s> World<'s> {
    fn new(sc: &'s Scenario, opts: &RunOptions, trace: TraceWriter) -> Result<Self, RunError> {
        let seed = opts.seed.unwrap_or(sc.file.seed);
        let recorded = sc.file.recorded
            && opts.profile.is_none()
            && opts.config.is_none()
            && opts.platform.is_none()
            && matches!(opts.engine, crate::bridge::EngineChoice::Builtin);
        let profile = opts.profile.unwrap_or(sc.profile);
        let platform = opts.platform.as_deref();
        let build = |platform: Option<&str>| -> Result<EngineConfig, RunError> {
            let mut c = sc.engine_config_over(profile, platform, opts.config.as_deref())?;
            c.delegation.child_budget = sc.child_budget;
            Ok(c)
        };
        let mut cfg = build(platform)?;
        let child_cfg = build(Some("subagent"))?;
        if recorded {
            // The record is what the budget allowed: no cap of the scenario's profile may cut
            // it short (a what-if under a profile keeps that profile's cap).
            cfg.max_iterations = loopsim_engine::budget::UNLIMITED;
        }
        let bridge = match &opts.engine {
            crate::bridge::EngineChoice::Builtin => None,
            crate::bridge::EngineChoice::HermesPython { python, adapter } => {
                let merged = sc.config_node_over(opts.config.as_deref());
                let section = merged.get("tool_loop_guardrails");
                Some(crate::bridge::Bridge::start(
                    python,
                    adapter,
                    profile.as_str(),
                    section,
                )?)
            }
        };
        let mut w = World {
            recorded,
            bridge,
            sc,
            seed,
            child_cfg,
            sched: Scheduler::new(opts.order, stream(seed, "schedule")),
            agents: Vec::new(),
            batches: Vec::new(),
            tool_rng: sc
                .file
                .tools
                .keys()
                .map(|t| (t.clone(), stream(seed, &format!("tool:{t}"))))
                .collect(),
            approval_rng: stream(seed, "approval"),
            trace,
            total: Usage::default(),
            window: sc.file.report.window_s.as_ref().map(|w| {
                let [a, b] = *w.get_ref();
                (Duration::from_secs_f64(a).0, Duration::from_secs_f64(b).0)
            }),
            loop_began: None,
            horizon: Instant::START
                + Duration::from_secs_f64(sc.file.report.horizon_s.unwrap_or(86_400.0)),
            counter: 0,
            last_activity: Instant::START,
            args_cache: rustc_hash::FxHashMap::default(),
            hit_horizon: false,
            record_series: opts.record_series,
            config_hash: String::new(),
            config_file: opts.config.as_ref().map(|u| (u.file.clone(), u.hash.hex())),
            cfg,
        };
        let config_hash = w.cfg.fingerprint().hex();
        w.config_hash = config_hash.clone();
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
                profile: w.cfg.profile.to_string(),
                platform: w.cfg.platform.clone(),
                config_hash,
                schedule: format!("{:?}", opts.order).to_lowercase(),
                engine: recorded.then(|| "recorded".to_string()),
                config_file: opts.config.as_ref().map(|u| u.file.clone()),
                config_text: opts.config.as_ref().map(|u| u.text.clone()),
                scenario_text: Some(sc.text.to_string()),
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
        let spec = &self.sc.file.agents[spec_name];
        let name_for_engine = name.clone();
        let cfg = if depth == 0 {
            self.cfg.clone()
        } else {
            self.child_cfg.clone()
        };
        let max = if depth == 0 {
            cfg.max_iterations
        } else {
            cfg.delegation.child_max_iterations
        };
        let gov = TurnGovernor::new(cfg.turn, max);
        let id = self.agents.len();
        self.agents.push(Agent {
            rng: stream(self.seed, &format!("agent:{name}/model")),
            name,
            spec,
            depth,
            parent,
            guard: match &self.bridge {
                Some(b) => Box::new(b.agent(&name_for_engine, cfg.platform.as_deref(), cfg.rules)),
                None if self.recorded => {
                    Box::new(crate::recorded::RecordedGuard::new(spec, cfg.rules))
                }
                None => Box::new(Controller::new(cfg.guardrails, cfg.rules)),
            },
            gov,
            cfg,
            on_result: false,
            user_turn: 0,
            step: 0,
            rep: 0,
            context: spec.context_tokens,
            status: Status::Idle,
            plan: None,
            plan_step: None,
            call_index: 0,
            round_tools: Vec::new(),
            round_flagged: false,
            call_started: self.sched.now(),
            waiting_batch: None,
            pending_results: Vec::new(),
            calls: 0,
            turns: 0,
            exit_reasons: Vec::new(),
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
            series: self.record_series.then(AgentSeries::default),
            interrupted: false,
            pending: None,
        });
        id
    }

    fn now(&self) -> u64 {
        self.sched.now().0
    }

    fn event(&mut self, agent: AgentId, kind: &'static str) -> Event {
        Event {
            t_us: self.now(),
            agent: self.agents[agent].name.clone(),
            kind,
            ..Event::default()
        }
    }

    /// A new user turn: fresh budget (unless shared with a parent), guardrails reset.
    fn start_turn(&mut self, a: AgentId, on_result: bool) {
        let budget_src = self.agents[a].parent.map(|p| {
            (
                Arc::clone(self.agents[p].gov.budget()),
                self.agents[a].cfg.delegation.child_budget,
            )
        });
        let ag = &mut self.agents[a];
        let max = ag.gov.max_iterations();
        ag.gov = match budget_src {
            Some((b, ChildBudget::Shared)) => TurnGovernor::with_budget(ag.cfg.turn, max, b, 0),
            Some((b, ChildBudget::Reserved(r))) => {
                TurnGovernor::with_budget(ag.cfg.turn, max, b, r)
            }
            _ => {
                TurnGovernor::with_budget(ag.cfg.turn, max, Arc::new(IterationBudget::new(max)), 0)
            }
        };
        ag.guard.reset_turn();
        ag.on_result = on_result;
        ag.step = 0;
        ag.rep = 0;
        ag.status = Status::Running;
        ag.turns += 1;
        self.note_budget(a);
        if self.trace.enabled() {
            let e = self.event(a, "turn_start");
            self.trace.line(&e);
        }
        self.sched.at(self.sched.now(), Ev::Wake(a));
    }

    fn script(&self, a: AgentId) -> &'s [Step] {
        let ag = &self.agents[a];
        // A result turn without its own script just answers (an empty script ends in text).
        if ag.on_result {
            &ag.spec.on_result
        } else if ag.user_turn == 0 {
            &ag.spec.script
        } else {
            &ag.spec.turns[ag.user_turn - 1].script
        }
    }

    fn run(&mut self) {
        while let Some((t, ev)) = self.sched.pop() {
            if t > self.horizon || self.sched.events_handled() > MAX_EVENTS {
                self.hit_horizon = true;
                break;
            }
            if !matches!(ev, Ev::Interrupt) {
                self.last_activity = t;
            }
            if self.bridge.as_ref().is_some_and(|b| b.failure().is_some()) {
                break;
            }
            match ev {
                Ev::Wake(a) => self.wake(a),
                Ev::ModelDone(a) => self.model_done(a),
                Ev::CallDone(a) => self.call_done(a),
                Ev::Interrupt => self.interrupt(),
                Ev::ChildTimeout(c) => self.child_timeout(c),
                Ev::BatchDone(p, b) => self.deliver(p, b),
                Ev::UserTurn(a) => self.start_turn(a, false),
            }
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
        self.last_activity = self.sched.now();
        if self.trace.enabled() {
            let e = self.event(0, "interrupt");
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

    fn account(&mut self, a: AgentId, u: &Usage) {
        let now = self.now();
        let ag = &mut self.agents[a];
        ag.usage.add(u);
        self.total.add(u);
        if let Some((from, to)) = self.window
            && (from..to).contains(&now)
        {
            ag.window.add(u);
        }
        if self.loop_began.is_some() {
            ag.after_loop.add(u);
        }
        if let Some(s) = &mut ag.series {
            s.cost.push((now, ag.usage.cost_micro_usd));
        }
    }

    /// Records the budget after a change, and marks the agent active.
    fn note_budget(&mut self, a: AgentId) {
        let now = self.now();
        let ag = &mut self.agents[a];
        ag.last_activity = self.sched.now();
        if let Some(s) = &mut ag.series {
            s.budget_used.push((now, ag.gov.budget().used()));
        }
    }

    fn note_span(&mut self, a: AgentId, start: Instant, kind: SpanKind) {
        let now = self.sched.now();
        let ag = &mut self.agents[a];
        ag.last_activity = now;
        if kind == SpanKind::Waiting {
            ag.wait_us += now.since(start).0;
        }
        if let Some(s) = &mut ag.series {
            s.spans.push((start.0, now.0, kind));
        }
    }

    fn wake(&mut self, a: AgentId) {
        if self.agents[a].status != Status::Running {
            return;
        }
        let stop_here = {
            let ag = &self.agents[a];
            let script = self.script(a);
            !ag.interrupted && script.get(ag.step).is_some_and(|s| s.user_stop)
        };
        if stop_here {
            // The recorded user pressed stop: the running turn ends at this iteration.
            self.agents[a].interrupted = true;
            if self.trace.enabled() {
                let e = self.event(a, "interrupt");
                self.trace.line(&e);
            }
        }
        let interrupt = self.agents[a].interrupted;
        match self.agents[a].gov.begin_iteration(interrupt) {
            TurnStep::Exit => self.end_turn(a),
            TurnStep::Call { tools } => {
                let script = self.script(a);
                let ag = &mut self.agents[a];
                // The grace call has no tools, and a finished script ends in text.
                let (plan, step_idx) = if !tools || ag.step >= script.len() {
                    (Plan::Answer, None)
                } else {
                    let step = &script[ag.step];
                    let plan = if step.context_too_small {
                        Plan::ContextTooSmall
                    } else if let Some(d) = &step.delegate {
                        Plan::Delegate {
                            agent: d.get_ref(),
                            tasks: step.tasks,
                        }
                    } else if step.answer.is_some() {
                        Plan::Answer
                    } else if !step.choose.is_empty() {
                        let total: f64 = step.choose.iter().map(|c| c.weight).sum();
                        let mut x = ag.rng.random::<f64>() * total;
                        let pick = step.choose.iter().find(|c| {
                            x -= c.weight;
                            x < 0.0
                        });
                        let pick = pick.unwrap_or(step.choose.last().expect("validated"));
                        if pick.answer.is_some() {
                            Plan::Answer
                        } else {
                            Plan::Calls(&pick.calls)
                        }
                    } else {
                        Plan::Calls(&step.calls)
                    };
                    (plan, Some(ag.step))
                };
                if matches!(plan, Plan::ContextTooSmall) {
                    // The preflight gate fails before any request is sent.
                    ag.gov.runtime_context_too_small();
                    self.note_budget(a);
                    let ag = &mut self.agents[a];
                    let used = ag.gov.budget().used();
                    if self.trace.enabled() {
                        let mut e = self.event(a, "budget_refund");
                        e.budget_used = Some(used);
                        e.detail = Some("runtime context too small".into());
                        self.trace.line(&e);
                    }
                    return self.end_turn(a);
                }
                let model = &self.sc.file.models[ag.spec.model.get_ref()];
                let step = step_idx.map(|i| &script[i]);
                let lat_dist: &Dist = step
                    .and_then(|s| s.latency_s.as_ref())
                    .unwrap_or(&model.latency_s)
                    .get_ref();
                let out_dist: &Dist = step
                    .and_then(|s| s.output_tokens.as_ref())
                    .unwrap_or(&model.output_tokens)
                    .get_ref();
                let mut latency = Duration::from_secs_f64(lat_dist.sample(&mut ag.rng));
                // An empty reply is retried inside the same iteration: time and tokens, no count.
                let mut attempts = 1;
                while attempts < 4
                    && ag.rng.random::<f64>() < *model.empty_reply_probability.get_ref()
                {
                    latency += Duration::from_secs_f64(lat_dist.sample(&mut ag.rng));
                    attempts += 1;
                }
                let output = out_dist.sample(&mut ag.rng).round() as u64;
                let mut input = ag.context * attempts;
                let mut cache = (ag.context as f64 * model.cache_read_share.get_ref()).round()
                    as u64
                    * attempts;
                let mut cache_write = 0;
                // A recorded call keeps its own figures.
                if let Some(s) = step {
                    if let Some(i) = s.input_tokens {
                        input = i;
                        ag.context = i;
                    }
                    cache = s.cache_read_tokens.unwrap_or(cache);
                    cache_write = s.cache_write_tokens.unwrap_or(0);
                }
                if step.is_some_and(|s| s.loop_begins) && self.loop_began.is_none() {
                    self.loop_began = Some(self.sched.now().0);
                }
                let ag = &mut self.agents[a];
                ag.calls += 1;
                ag.context += output;
                ag.plan = Some(plan);
                ag.plan_step = step_idx;
                let now = self.sched.now().0;
                if let Some(s) = &mut ag.series {
                    s.spans.push((now, now + latency.0, SpanKind::Model));
                    s.budget_used.push((now, ag.gov.budget().used()));
                }
                let u = Usage::recorded_call(
                    &model.price,
                    input,
                    cache,
                    cache_write,
                    output,
                    latency.0,
                );
                let call = ag.calls;
                let used = ag.gov.budget().used();
                self.account(a, &u);
                if self.trace.enabled() {
                    let mut e = self.event(a, "model_call");
                    e.call = Some(call);
                    e.input_tokens = Some(input);
                    e.cache_read_tokens = Some(cache);
                    e.cache_write_tokens = (cache_write > 0).then_some(cache_write);
                    e.output_tokens = Some(output);
                    e.latency_us = Some(latency.0);
                    e.budget_used = Some(used);
                    self.trace.line(&e);
                }
                self.sched.at(self.sched.now() + latency, Ev::ModelDone(a));
            }
        }
    }

    fn model_done(&mut self, a: AgentId) {
        if self.agents[a].status != Status::Running {
            // Timed out (or stopped) while the model was answering.
            return;
        }
        self.agents[a].last_activity = self.sched.now();
        let plan = self.agents[a].plan.expect("a plan");
        match plan {
            Plan::Answer => {
                self.agents[a].gov.text_reply(FinishReason::Stop);
                self.end_turn(a);
            }
            Plan::ContextTooSmall => unreachable!("handled before the call"),
            Plan::Calls(_) | Plan::Delegate { .. } => {
                let ag = &mut self.agents[a];
                ag.call_index = 0;
                ag.round_tools.clear();
                ag.round_flagged = false;
                self.next_call(a);
            }
        }
    }

    /// Starts the next call of the round, or ends the round.
    fn next_call(&mut self, a: AgentId) {
        let plan = self.agents[a].plan.expect("a plan");
        let calls: &[CallSpec] = match plan {
            Plan::Calls(c) => c,
            Plan::Delegate { .. } => &[],
            Plan::Answer | Plan::ContextTooSmall => unreachable!("no tool round"),
        };
        let idx = self.agents[a].call_index;
        if let Plan::Delegate { agent, tasks } = plan {
            if idx == 0 {
                self.delegate(a, agent, tasks);
            } else {
                self.end_round(a);
            }
            return;
        }
        if idx >= calls.len() {
            return self.end_round(a);
        }
        let c = &calls[idx];
        let tool: &'s str = c.tool.get_ref();
        let rep = self.agents[a].rep;
        let (args, signature) = call_args(&mut self.args_cache, c, rep);
        self.agents[a].round_tools.push(tool);
        let d = self.agents[a].guard.before_call(signature, &args);
        if !d.action.allows_execution() {
            self.record_decision(a, tool, d.action, d.code, d.count);
            // A refused call is not run; its synthetic result is short.
            self.agents[a].context += 60;
            self.agents[a].call_index += 1;
            return self.next_call(a);
        }
        let spec = &self.sc.file.tools[tool];
        let rng = self.tool_rng.get_mut(tool).expect("tool stream");
        let mut dur = Duration::from_secs_f64(match &c.latency_s {
            Some(l) => *l.get_ref(),
            None => spec.latency_s.get_ref().sample(rng),
        });
        let failed = c
            .fail
            .unwrap_or_else(|| rng.random::<f64>() < *spec.fail_probability.get_ref());
        let tokens = spec.result_tokens.get_ref().sample(rng).round() as u64;
        let mut timed_out = false;
        if let Some(to) = &spec.timeout_s {
            let to = Duration::from_secs_f64(*to.get_ref());
            if dur > to {
                dur = to;
                timed_out = true;
            }
        }
        if spec.approval {
            let name = self
                .sc
                .file
                .approval_model
                .as_ref()
                .expect("validated")
                .get_ref();
            let m = &self.sc.file.models[name];
            let lat = Duration::from_secs_f64(m.latency_s.get_ref().sample(&mut self.approval_rng));
            let out = m
                .output_tokens
                .get_ref()
                .sample(&mut self.approval_rng)
                .round() as u64;
            let cache = (m.input_tokens as f64 * m.cache_read_share.get_ref()).round() as u64;
            let u = Usage {
                approval_calls: 1,
                approval_input_tokens: m.input_tokens,
                approval_output_tokens: out,
                approval_latency_us: lat.0,
                cost_micro_usd: cost_micro_usd(&m.price, m.input_tokens, cache, out),
                ..Usage::default()
            };
            self.account(a, &u);
            if self.trace.enabled() {
                let mut e = self.event(a, "approval_call");
                e.tool = Some(tool.to_string());
                e.latency_us = Some(lat.0);
                e.output_tokens = Some(out);
                self.trace.line(&e);
            }
            dur += lat;
        }
        self.counter += 1;
        let result = if let Some(r) = &c.result {
            r.clone()
        } else if timed_out {
            format!(
                "{{\"error\": \"timed out after {:.0} s\"}}",
                dur.as_secs_f64()
            )
        } else if failed {
            spec.fail_result.clone()
        } else {
            self.render(&spec.result, a, rep, dur)
        };
        let ag = &mut self.agents[a];
        ag.context += tokens;
        ag.call_started = self.sched.now();
        let failed = failed || timed_out;
        ag.pending = Some(PendingCall {
            tool,
            signature: d.signature,
            args,
            result,
            failed,
            dur,
        });
        self.sched.at(self.sched.now() + dur, Ev::CallDone(a));
    }
}

impl World<'_> {
    /// Fills a result template's volatile fields, in one pass.
    fn render(&self, template: &str, a: AgentId, rep: u32, dur: Duration) -> String {
        use std::fmt::Write as _;
        let mut out = String::with_capacity(template.len() + 16);
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            out.push_str(&rest[..open]);
            let tail = &rest[open..];
            let field = ["{elapsed_s}", "{counter}", "{timestamp}", "{id}", "{n}"]
                .into_iter()
                .find(|f| tail.starts_with(f));
            let _ = match field {
                Some("{elapsed_s}") => write!(out, "{:.3}", dur.as_secs_f64()),
                Some("{counter}") => write!(out, "{}", self.counter),
                Some("{timestamp}") => write!(out, "{:.3}", self.sched.now().0 as f64 / 1e6),
                Some("{id}") => {
                    let h =
                        Hash::of(format!("{}:{}", self.agents[a].name, self.counter).as_bytes());
                    write!(out, "{}", &h.hex()[..16])
                }
                Some(_) => write!(out, "{rep}"),
                None => {
                    out.push('{');
                    rest = &tail[1..];
                    continue;
                }
            };
            rest = &tail[field.map_or(1, str::len)..];
        }
        out.push_str(rest);
        out
    }

    fn record_decision(
        &mut self,
        a: AgentId,
        tool: &str,
        action: Action,
        code: DecisionCode,
        count: u32,
    ) {
        let ag = &mut self.agents[a];
        if let Some(s) = &mut ag.series {
            if action == Action::Warn {
                s.warnings_us.push(self.sched.now().0);
            } else if action.halts() {
                s.stops_us.push(self.sched.now().0);
            }
        }
        if action == Action::Warn {
            ag.warnings += 1;
            ag.round_flagged = true;
            if ag.first_warning.is_none() {
                ag.first_warning = Some((ag.calls, self.sched.now().0));
            }
        }
        if action.halts() && ag.stop.is_none() {
            ag.stop = Some(Stop {
                call: ag.calls,
                t_us: self.sched.now().0,
                code: code.as_str().into(),
            });
        }
        if self.trace.enabled() {
            let mut e = self.event(a, "decision");
            e.tool = Some(tool.into());
            e.action = Some(action.as_str());
            e.code = Some(code.as_str());
            e.count = Some(count);
            self.trace.line(&e);
        }
    }

    fn call_done(&mut self, a: AgentId) {
        if !matches!(self.agents[a].status, Status::Running | Status::Waiting) {
            return;
        }
        let Some(p) = self.agents[a].pending.take() else {
            return;
        };
        let waited = self.agents[a].status == Status::Waiting;
        self.agents[a].status = Status::Running;
        let started = self.agents[a].call_started;
        self.note_span(
            a,
            started,
            if waited {
                SpanKind::Waiting
            } else {
                SpanKind::Tool
            },
        );
        let elapsed = if waited {
            0
        } else {
            self.sched.now().since(started).0
        };
        let u = Usage {
            tool_time_us: elapsed,
            ..Usage::default()
        };
        self.account(a, &u);
        let ag = &mut self.agents[a];
        let facts = CallFacts::with_signature(
            p.signature.clone(),
            Some(p.result.as_bytes()),
            ag.guard.rules(),
        )
        .with_args(&p.args);
        let (d, obs) = ag.guard.after_call(&facts, p.failed);
        if self.trace.enabled() {
            let mut e = self.event(a, "tool_call");
            e.call = Some(self.agents[a].calls);
            e.tool = Some(p.tool.to_string());
            e.args_hash = Some(facts.signature.args_hash.hex());
            e.result_hash = Some(facts.result_hash().hex());
            e.failed = Some(p.failed);
            e.latency_us = Some(p.dur.0);
            self.trace.line(&e);
        }
        if d.action != Action::Allow {
            self.record_decision(a, p.tool, d.action, d.code, d.count);
        }
        if let Some(kind) = obs.kind {
            let ag = &mut self.agents[a];
            ag.notices += 1;
            ag.round_flagged = true;
            if let Some(s) = &mut ag.series {
                s.warnings_us.push(self.sched.now().0);
            }
            if ag.first_warning.is_none() {
                ag.first_warning = Some((ag.calls, self.sched.now().0));
            }
            if self.trace.enabled() {
                let mut e = self.event(a, "notice");
                e.tool = Some(p.tool.to_string());
                e.detail = Some(kind.as_str().into());
                e.count = Some(if kind == NoticeKind::IdenticalCallStreak {
                    obs.streak
                } else {
                    obs.laps
                });
                self.trace.line(&e);
            }
        }
        self.agents[a].call_index += 1;
        self.next_call(a);
    }

    /// The turn halt the runtime acts on after the batch.
    fn turn_halt(&self, a: AgentId) -> Option<DecisionCode> {
        let ag = &self.agents[a];
        let h = ag.guard.halt_decision()?;
        if h.code == DecisionCode::IdenticalCycleHalt && !ag.guard.rules().cycle_halt_ends_turn {
            return None;
        }
        Some(h.code)
    }

    fn end_round(&mut self, a: AgentId) {
        let halt = self.turn_halt(a);
        if let Some(code) = halt {
            let ag = &mut self.agents[a];
            if ag.stop.is_none() {
                ag.stop = Some(Stop {
                    call: ag.calls,
                    t_us: self.sched.now().0,
                    code: code.as_str().into(),
                });
                if let Some(s) = &mut ag.series {
                    s.stops_us.push(self.sched.now().0);
                }
            }
        }
        self.advance_script(a);
        let ag = &mut self.agents[a];
        let tools = std::mem::take(&mut ag.round_tools);
        let before = ag.gov.budget().used();
        let go_on = ag.gov.tool_round(tools.iter().copied(), halt.is_some());
        if ag.gov.budget().used() < before {
            let used = ag.gov.budget().used();
            self.note_budget(a);
            if self.trace.enabled() {
                let mut e = self.event(a, "budget_refund");
                e.budget_used = Some(used);
                self.trace.line(&e);
            }
        }
        if go_on {
            self.sched.at(self.sched.now(), Ev::Wake(a));
        } else {
            self.end_turn(a);
        }
    }

    /// Moves the script on after a model call, unless the step repeats.
    fn advance_script(&mut self, a: AgentId) {
        let script = self.script(a);
        let children_done = self.background_done(a);
        let ag = &mut self.agents[a];
        let Some(i) = ag.plan_step else { return };
        let step = &script[i];
        ag.rep += 1;
        let model = &self.sc.file.models[ag.spec.model.get_ref()];
        // Draw only when heeding is possible: otherwise a warning would shift the model's
        // random stream and another engine's run would not replay the same behaviour.
        let heed = *model.heed_probability.get_ref();
        let heeded = ag.round_flagged && heed > 0.0 && ag.rng.random::<f64>() < heed;
        let done = heeded
            || match step.until {
                None => ag.rep >= step.times,
                Some(Until::Stopped) => false,
                Some(Until::ChildrenDone) => children_done,
            };
        if done {
            ag.step += 1;
            ag.rep = 0;
        }
    }

    /// Whether every background batch this agent started has finished.
    fn background_done(&self, a: AgentId) -> bool {
        self.batches.iter().filter(|b| b.background).all(|b| {
            b.children
                .first()
                .is_none_or(|c| self.agents[*c].parent != Some(a))
                || b.children.iter().all(|c| self.finished(*c))
        })
    }

    fn finished(&self, a: AgentId) -> bool {
        matches!(
            self.agents[a].status,
            Status::Done | Status::TimedOut | Status::Interrupted
        )
    }

    fn end_turn(&mut self, a: AgentId) {
        let fin = self.agents[a].gov.finish();
        if fin.summary_call {
            let ag = &mut self.agents[a];
            let model = &self.sc.file.models[ag.spec.model.get_ref()];
            let lat = Duration::from_secs_f64(model.latency_s.get_ref().sample(&mut ag.rng));
            let out = model.output_tokens.get_ref().sample(&mut ag.rng).round() as u64;
            let input = ag.context;
            let cache = (input as f64 * model.cache_read_share.get_ref()).round() as u64;
            ag.summary_calls += 1;
            ag.context += out;
            let u = Usage::model_call(&model.price, input, cache, out, lat.0);
            self.account(a, &u);
            if self.trace.enabled() {
                let mut e = self.event(a, "summary_call");
                e.input_tokens = Some(input);
                e.output_tokens = Some(out);
                e.latency_us = Some(lat.0);
                self.trace.line(&e);
            }
        }
        let reason = fin.exit_reason.to_string();
        if self.trace.enabled() {
            let mut e = self.event(a, "turn_end");
            e.call = Some(self.agents[a].calls);
            e.budget_used = Some(fin.budget_used);
            e.detail = Some(reason.clone());
            self.trace.line(&e);
        }
        let ag = &mut self.agents[a];
        ag.exit_reasons.push(reason);
        let interrupted = matches!(
            fin.exit_reason,
            ExitReason::InterruptedByUser | ExitReason::InterruptedDuringApiCall
        );
        if ag.parent.is_some() {
            ag.status = if interrupted {
                Status::Interrupted
            } else {
                Status::Done
            };
            self.child_finished(a);
            return;
        }
        if ag.user_turn < ag.spec.turns.len() && ag.pending_results.is_empty() {
            // The user's next message (a recorded session's later turn): after this turn,
            // and not before the message was sent.
            let at = Instant::START
                + Duration::from_secs_f64(*ag.spec.turns[ag.user_turn].at_s.get_ref());
            ag.user_turn += 1;
            ag.interrupted = false;
            ag.status = Status::Idle;
            let at = at.max(self.sched.now());
            self.sched.at(at, Ev::UserTurn(a));
            return;
        }
        if interrupted {
            ag.status = Status::Interrupted;
            return;
        }
        // A finished background batch waiting for this turn to end opens the next one.
        let pending = ag.pending_results.clone();
        let ready = pending
            .into_iter()
            .find(|b| self.batches[*b].children.iter().all(|c| self.finished(*c)));
        let ag = &mut self.agents[a];
        if let Some(b) = ready {
            ag.status = Status::Idle;
            self.deliver(a, b);
        } else if ag.pending_results.is_empty() {
            ag.status = Status::Done;
        } else {
            ag.status = Status::Idle;
        }
    }
}

impl World<'_> {
    /// Whether any model that was called has an unknown price.
    fn price_unknown(&self) -> bool {
        let f = &self.sc.file;
        let unknown = |m: &str| f.models.get(m).is_some_and(|m| m.price.unknown);
        self.agents
            .iter()
            .any(|a| a.calls > 0 && unknown(a.spec.model.get_ref()))
            || (self.total.approval_calls > 0
                && f.approval_model
                    .as_ref()
                    .is_some_and(|m| unknown(m.get_ref())))
    }
}

impl Agent<'_> {
    /// Charges admitted subagents against the per-turn cap.
    fn guard_spawn(&mut self, n: u32) -> u32 {
        if self.guard.rules().loop_caps {
            self.guard.spawn_subagents(n)
        } else {
            n
        }
    }
}
