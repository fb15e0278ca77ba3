//! The simulation: agents running turns through the engine under the seeded scheduler.
//!
//! A turn is the engine's loop: the governor admits an iteration, the fake model answers after
//! its latency with what its script says (tool calls, a delegation, or text), each tool call
//! goes through `before_call`, runs for its latency (after an approval-model call where the
//! tool needs one), and comes back through `after_call` and the stall guards; then the round
//! ends with a halt, a refund or the next iteration. Background delegations report back only
//! as a new turn after the parent's turn has ended.

use std::collections::BTreeMap;
use std::sync::Arc;

use loopsim_engine::GuardrailEngine;
use loopsim_engine::budget::IterationBudget;
use loopsim_engine::config::EngineConfig;
use loopsim_engine::delegation::{Admission, ChildBudget};
use loopsim_engine::guardrails::{Action, CallFacts, Controller, DecisionCode, NoticeKind};
use loopsim_engine::hash::Signature;
use loopsim_engine::json::Value;
use loopsim_engine::turn::{
    EmptyReply, ExitReason, FinishReason, Step as TurnStep, TurnGovernor, batch,
};
use serde::Serialize;

use crate::clock::{Duration, Instant};
use crate::model::Usage;
use crate::rng::stream;
use crate::scenario::{AgentSpec, CallSpec, Scenario};
use crate::scheduler::{Order, Scheduler};
use crate::script::{ArgsCache, ContextGate, Reply, ScriptedAgent, call_args};
use crate::trace::{self, Event, Header, TraceWriter};

mod accounting;
mod delegation;
mod summary;
mod turns;

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
    /// Its script, context and fake tools.
    script: ScriptedAgent<'s>,
    status: Status,
    plan: Option<Reply<'s>>,
    call_index: usize,
    round_tools: Vec<&'s str>,
    /// Tool calls the model made, by tool (refused ones included).
    tool_calls: BTreeMap<&'s str, u64>,
    /// Results the runtime replaced by a reference to an identical earlier one.
    stubs: u64,
    /// The calls of this round that ran (identical ones after them are dropped).
    round_calls: Vec<Signature>,
    /// Messages in the conversation since its last tool result (none yet: `None`).
    since_tool: Option<u32>,
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
    trace: TraceWriter,
    total: Usage,
    window: Option<(u64, u64)>,
    loop_began: Option<u64>,
    horizon: Instant,
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
    args_cache: ArgsCache,
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
            trace,
            total: Usage::default(),
            window: sc.file.report.window_s.as_ref().map(|w| {
                let [a, b] = *w.get_ref();
                (Duration::from_secs_f64(a).0, Duration::from_secs_f64(b).0)
            }),
            loop_began: None,
            horizon: Instant::START
                + Duration::from_secs_f64(sc.file.report.horizon_s.unwrap_or(86_400.0)),
            last_activity: Instant::START,
            args_cache: ArgsCache::default(),
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
            script: ScriptedAgent::new(&self.sc.file, &name, spec_name, self.seed),
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
            status: Status::Idle,
            plan: None,
            call_index: 0,
            round_tools: Vec::new(),
            tool_calls: BTreeMap::new(),
            stubs: 0,
            round_calls: Vec::new(),
            since_tool: None,
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

    fn wake(&mut self, a: AgentId) {
        if self.agents[a].status != Status::Running {
            return;
        }
        let stop_here = {
            let ag = &self.agents[a];
            !ag.interrupted && ag.script.user_stop_next()
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
                let delay = match self.context_gate(a) {
                    Some(delay) => delay,
                    None => return self.end_turn(a),
                };
                let ag = &mut self.agents[a];
                let call = ag.script.reply(tools);
                if matches!(call.reply, Reply::ContextTooSmall) {
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
                if call.step.is_some_and(|s| s.loop_begins) && self.loop_began.is_none() {
                    self.loop_began = Some(self.sched.now().0);
                }
                let ag = &mut self.agents[a];
                let model = ag.script.model();
                ag.calls += 1;
                ag.plan = Some(call.reply);
                let latency = call.latency;
                // The request goes out once a compression before it is done.
                let now = self.sched.now().0 + delay.0;
                if let Some(s) = &mut ag.series {
                    s.spans.push((now, now + latency.0, SpanKind::Model));
                    s.budget_used.push((now, ag.gov.budget().used()));
                }
                let u = Usage::recorded_call(
                    &model.price,
                    call.input_tokens,
                    call.cache_read_tokens,
                    call.cache_write_tokens,
                    call.output_tokens,
                    latency.0,
                );
                let n = ag.calls;
                let used = ag.gov.budget().used();
                self.account(a, &u);
                if self.trace.enabled() {
                    let mut e = self.event(a, "model_call");
                    e.call = Some(n);
                    e.input_tokens = Some(call.input_tokens);
                    e.cache_read_tokens = Some(call.cache_read_tokens);
                    e.cache_write_tokens =
                        (call.cache_write_tokens > 0).then_some(call.cache_write_tokens);
                    e.output_tokens = Some(call.output_tokens);
                    e.latency_us = Some(latency.0);
                    e.budget_used = Some(used);
                    e.detail = matches!(call.reply, Reply::Empty).then(|| "empty reply".into());
                    self.trace.line(&e);
                }
                self.sched
                    .at(self.sched.now() + delay + latency, Ev::ModelDone(a));
            }
        }
    }

    /// Hermes's context check before a model call: the time a compression takes first, or
    /// none when the context no longer fits and the turn has died of it.
    fn context_gate(&mut self, a: AgentId) -> Option<Duration> {
        let ag = &mut self.agents[a];
        match ag.script.context_gate() {
            ContextGate::Send => Some(Duration::ZERO),
            ContextGate::Exhausted => {
                ag.gov.context_exhausted();
                if self.trace.enabled() {
                    let mut e = self.event(a, "context_exhausted");
                    e.input_tokens = Some(self.agents[a].script.context());
                    self.trace.line(&e);
                }
                None
            }
            ContextGate::Compressed(c) => {
                let price = &ag.script.model().price;
                let u = Usage {
                    compression_calls: 1,
                    compression_input_tokens: c.input_tokens,
                    compression_output_tokens: c.output_tokens,
                    compression_latency_us: c.latency.0,
                    cost_micro_usd: crate::model::cost_micro_usd(
                        price,
                        c.input_tokens,
                        0,
                        c.output_tokens,
                    ),
                    ..Usage::default()
                };
                self.account(a, &u);
                if self.trace.enabled() {
                    let mut e = self.event(a, "compression");
                    e.input_tokens = Some(c.input_tokens);
                    e.output_tokens = Some(c.output_tokens);
                    e.latency_us = Some(c.latency.0);
                    e.count = Some(c.attempt);
                    e.detail = Some(format!("context {} -> {} tokens", c.before, c.after));
                    self.trace.line(&e);
                }
                Some(c.latency)
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
            Reply::Answer => {
                self.agents[a].messages_after_tools(1);
                self.agents[a].gov.text_reply(FinishReason::Stop);
                self.end_turn(a);
            }
            Reply::Empty => {
                let ag = &mut self.agents[a];
                // Hermes looks for a tool result among the conversation's last five messages.
                let recent = ag.since_tool.is_some_and(|k| k <= 4);
                match ag.gov.empty_reply(recent) {
                    EmptyReply::Nudge => {
                        // A placeholder reply and a request to go on join the conversation.
                        ag.messages_after_tools(2);
                        self.sched.at(self.sched.now(), Ev::Wake(a));
                    }
                    EmptyReply::Retry => self.sched.at(self.sched.now(), Ev::Wake(a)),
                    EmptyReply::Exhausted => self.end_turn(a),
                }
            }
            Reply::ContextTooSmall => unreachable!("handled before the call"),
            Reply::Calls(_) | Reply::Delegate { .. } => {
                let ag = &mut self.agents[a];
                ag.call_index = 0;
                ag.round_tools.clear();
                ag.round_calls.clear();
                ag.round_flagged = false;
                self.next_call(a);
            }
        }
    }

    /// Starts the next call of the round, or ends the round.
    fn next_call(&mut self, a: AgentId) {
        let plan = self.agents[a].plan.expect("a plan");
        let calls: &[CallSpec] = match plan {
            Reply::Calls(c) => c,
            Reply::Delegate { .. } => &[],
            Reply::Answer | Reply::Empty | Reply::ContextTooSmall => {
                unreachable!("no tool round")
            }
        };
        let idx = self.agents[a].call_index;
        if let Reply::Delegate { agent, tasks } = plan {
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
        let rep = self.agents[a].script.rep();
        let (args, signature) = call_args(&mut self.args_cache, c, rep);
        let ag = &mut self.agents[a];
        if ag.cfg.turn.dedupe_identical_calls {
            if !batch::runs(&ag.round_calls, &signature) {
                // The runtime drops an identical call of the same reply before running any.
                ag.call_index += 1;
                return self.next_call(a);
            }
            ag.round_calls.push(signature.clone());
        }
        self.agents[a].round_tools.push(tool);
        *self.agents[a].tool_calls.entry(tool).or_default() += 1;
        let d = self.agents[a].guard.before_call(signature, &args);
        if !d.action.allows_execution() {
            self.record_decision(a, tool, d.action, d.code, d.count);
            // A refused call is not run; its synthetic result is short.
            self.agents[a].script.refused_call();
            self.agents[a].call_index += 1;
            return self.next_call(a);
        }
        let now_s = self.sched.now().0 as f64 / 1e6;
        let run = self.agents[a].script.run_tool(c, now_s);
        if let Some(ap) = run.approval {
            let u = Usage {
                approval_calls: 1,
                approval_input_tokens: ap.input_tokens,
                approval_output_tokens: ap.output_tokens,
                approval_latency_us: ap.latency.0,
                cost_micro_usd: ap.cost_micro_usd,
                ..Usage::default()
            };
            self.account(a, &u);
            if self.trace.enabled() {
                let mut e = self.event(a, "approval_call");
                e.tool = Some(tool.to_string());
                e.latency_us = Some(ap.latency.0);
                e.output_tokens = Some(ap.output_tokens);
                self.trace.line(&e);
            }
        }
        let (result, failed, dur) = (run.result, run.failed, run.dur);
        let ag = &mut self.agents[a];
        ag.call_started = self.sched.now();
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
        if obs.stub {
            self.agents[a].stubs += 1;
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
}

impl Agent<'_> {
    /// `n` messages that are not tool results joined the conversation.
    fn messages_after_tools(&mut self, n: u32) {
        if let Some(k) = &mut self.since_tool {
            *k += n;
        }
    }

    /// Charges admitted subagents against the per-turn cap.
    fn guard_spawn(&mut self, n: u32) -> u32 {
        if self.guard.rules().loop_caps {
            self.guard.spawn_subagents(n)
        } else {
            n
        }
    }
}
