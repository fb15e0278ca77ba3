//! The scripted agent: given what it has observed, what a scenario's agent does next.
//!
//! One implementation of script semantics, used by the simulator's event loop
//! ([`crate::sim`]) and by `loopsim serve`, where a real runtime's loop drives it over HTTP.
//! A [`ScriptedAgent`] owns an agent's place in its script, its context size (the token
//! model), its random streams and its fake tools; the caller owns time, budgets and
//! guardrails (the engine in a simulation, the runtime itself when live).
//!
//! ```
//! use loopsim_world::scenario::Scenario;
//! use loopsim_world::script::{Reply, ScriptedAgent};
//!
//! let sc = Scenario::parse(r#"
//! name = "demo"
//! description = "one read, then an answer"
//! provenance = "doc example"
//! profile = "hermes-main"
//! [models.m]
//! latency_s = 2.0
//! output_tokens = 50
//! [tools.read_file]
//! latency_s = 0.5
//! [agents.parent]
//! model = "m"
//! context_tokens = 1000
//! script = [{ calls = [{ tool = "read_file" }] }, { answer = "done" }]
//! "#, "demo.toml").unwrap();
//! let mut agent = ScriptedAgent::new(&sc.file, "parent", "parent", 1);
//! agent.start_turn(false);
//! let call = agent.reply(true);
//! assert!(matches!(call.reply, Reply::Calls(c) if c.len() == 1));
//! assert_eq!((call.input_tokens, call.output_tokens), (1000, 50));
//! agent.advance(false, true);
//! assert!(matches!(agent.reply(true).reply, Reply::Answer));
//! ```

use loopsim_engine::hash::Signature;
use loopsim_engine::json::{self, Value};
use loopsim_engine::observation::{ObservationRules, cut_head, cut_tokens};
use loopsim_engine::turn::compaction_plan::Message;
use loopsim_engine::turn::compression::Compression;
use rand::RngExt;
use rand::rngs::ChaCha8Rng;

use crate::clock::Duration;
use crate::rng::stream;
use crate::scenario::{AgentSpec, CallSpec, Dist, ModelSpec, ScenarioFile, Step, Until};

mod args;
mod context;
mod tools;

pub use args::{ArgsCache, call_args};
pub use tools::{ApprovalCall, ToolRun, render_result};

/// Context tokens a refused call's short synthetic result adds.
pub const REFUSED_RESULT_TOKENS: u64 = 60;
/// Context tokens a runtime's strategy-switch hint adds to the result it joins.
pub const STRATEGY_HINT_TOKENS: u64 = 30;
/// Context tokens a runtime's format-error observation adds (the expected format, in short).
pub const FORMAT_ERROR_TOKENS: u64 = 60;

/// Context tokens each child's report adds to its parent's context.
pub const CHILD_REPORT_TOKENS: u64 = 300;

/// What the check before a model call decided ([`ScriptedAgent::context_gate`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ContextGate {
    Send,
    /// The context was compressed first, by this summary call.
    Compressed(CompressionCall),
    /// The context no longer fits the window: the turn dies of it.
    Exhausted,
    /// The runtime dropped the oldest results first (the article's loop): the context before
    /// and after.
    Trimmed {
        before: u64,
        after: u64,
    },
}

/// One compression: its summary call and the context before and after.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CompressionCall {
    /// 1 for the turn's first compression.
    pub attempt: u32,
    pub before: u64,
    pub after: u64,
    pub latency: Duration,
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// What the model's reply is at one call.
#[derive(Clone, Copy, Debug)]
pub enum Reply<'s> {
    /// Final text: the turn ends.
    Answer,
    /// No text and no tool calls (the model's `empty_reply_probability`): the runtime's
    /// empty-reply recovery decides what happens next.
    Empty,
    /// Tool calls, every one naming a tool that does not exist
    /// ([`crate::faults::UNKNOWN_TOOL`]; the model's `faults.unknown_tool`): `calls` of them.
    UnknownTool { calls: u32 },
    /// Tool calls whose arguments are not JSON ([`crate::faults::MALFORMED_ARGS`]; the
    /// model's `faults.malformed_args`), the first of them a call of `tool`.
    MalformedArgs { tool: &'s str },
    /// The local runtime's context window is too small: no request is sent.
    ContextTooSmall,
    /// Tool calls in one reply.
    Calls(&'s [CallSpec]),
    /// One `delegate_task` call for `tasks` children running `agent`'s script.
    Delegate { agent: &'s str, tasks: u32 },
}

impl Reply<'_> {
    /// What a trace's `model_call` says of a reply that is not what the script asked for.
    pub fn detail(&self) -> Option<&'static str> {
        match self {
            Reply::Empty => Some("empty reply"),
            Reply::UnknownTool { .. } => Some("unknown tool"),
            Reply::MalformedArgs { .. } => Some("malformed arguments"),
            _ => None,
        }
    }
}

/// A fault rate of the agent's model (0 without faults).
fn fault(
    file: &ScenarioFile,
    spec: &AgentSpec,
    rate: impl Fn(&crate::scenario::ModelFaults) -> f64,
) -> f64 {
    file.models[spec.model.get_ref()]
        .faults
        .as_ref()
        .map_or(0.0, rate)
}

/// One model call: the reply and its figures.
#[derive(Clone, Copy, Debug)]
pub struct ModelCall<'s> {
    pub reply: Reply<'s>,
    /// The script step the reply came from (none for the grace call or a finished script).
    pub step: Option<&'s Step>,
    pub latency: Duration,
    pub input_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    pub output_tokens: u64,
    /// The reply also calls [`crate::faults::UNKNOWN_TOOL`], after the script's calls (the
    /// model's `faults.unknown_tool_in_batch`): the runtime errors that call and runs the
    /// others.
    pub unknown_in_batch: bool,
}

impl ModelCall<'_> {
    /// What a trace's `model_call` says of a reply that is not what the script asked for.
    pub fn detail(&self) -> Option<&'static str> {
        if self.unknown_in_batch {
            return Some("unknown tool in batch");
        }
        self.reply.detail()
    }
}

/// The summary call a turn ends with when its budget ran out.
#[derive(Clone, Copy, Debug)]
pub struct SummaryCall {
    pub latency: Duration,
    pub input_tokens: u64,
    pub cache_read_tokens: u64,
    pub output_tokens: u64,
}

/// One agent of a scenario, following its script.
pub struct ScriptedAgent<'s> {
    name: String,
    spec: &'s AgentSpec,
    model: &'s ModelSpec,
    file: &'s ScenarioFile,
    rng: ChaCha8Rng,
    /// The current turn was opened by a background delegation's result.
    on_result: bool,
    /// 0 for the first user turn's script, k for `turns[k - 1]`.
    user_turn: usize,
    step: usize,
    rep: u32,
    /// The step of the last reply (none: it did not come from a step).
    reply_step: Option<usize>,
    context: u64,
    /// Compressions this turn, and whether the prompt cache was lost by the last one.
    compressions: u32,
    cold_cache: bool,
    /// Draws for compression's summary calls: a stream of their own, so a scenario without
    /// a context window draws exactly what it did before (made at the first compression).
    compression_rng: Option<ChaCha8Rng>,
    seed: u64,
    tools: tools::Tools,
    /// Tasks this agent has delegated so far (its children's names count on from it).
    delegated: u32,
    /// What the runtime does to a result before the model sees it.
    observation: ObservationRules,
    /// The runtime compresses a context that nears the window (Hermes); another one sends it
    /// until it no longer fits.
    compresses: bool,
    /// The chance that a reply with tool calls names an unknown tool instead, that it
    /// carries arguments that are not JSON, and that it calls an unknown tool besides.
    unknown_tool: f64,
    malformed_args: f64,
    unknown_tool_in_batch: f64,
    /// The output tokens of the last reply with arguments that are not JSON (out of the
    /// context unless the runtime keeps it: [`ScriptedAgent::format_error`]).
    dropped_output: u64,
    /// The model's context window: the scenario's, or the one a config sets.
    window: Option<u64>,
    /// Hermes's compression settings (`compresses` says whether it runs at all).
    compression: Compression,
    /// The conversation message by message, where the agent compacts it.
    conversation: context::Conversation,
}

impl<'s> ScriptedAgent<'s> {
    /// The agent named `name` running the script of `spec_name`, with its own random streams.
    pub fn new(file: &'s ScenarioFile, name: &str, spec_name: &str, seed: u64) -> Self {
        let spec = &file.agents[spec_name];
        ScriptedAgent {
            rng: stream(seed, &format!("agent:{name}/model")),
            tools: tools::Tools::new(seed),
            name: name.to_string(),
            model: &file.models[spec.model.get_ref()],
            spec,
            file,
            on_result: false,
            user_turn: 0,
            step: 0,
            rep: 0,
            reply_step: None,
            context: spec.context_tokens,
            compressions: 0,
            cold_cache: false,
            compression_rng: None,
            seed,
            delegated: 0,
            observation: ObservationRules::NONE,
            compresses: true,
            unknown_tool: fault(file, spec, |f| *f.unknown_tool.get_ref()),
            malformed_args: fault(file, spec, |f| *f.malformed_args.get_ref()),
            unknown_tool_in_batch: fault(file, spec, |f| *f.unknown_tool_in_batch.get_ref()),
            dropped_output: 0,
            window: file.models[spec.model.get_ref()]
                .context_window
                .as_ref()
                .map(|w| *w.get_ref()),
            compression: Compression::default(),
            conversation: context::Conversation::default(),
        }
    }

    /// The agent with other chances per reply of calling an unknown tool and of sending
    /// malformed arguments (a fault site a seed switched on: `loopsim explore --faults`).
    pub fn with_reply_faults(mut self, f: &crate::scenario::ModelFaults) -> Self {
        self.unknown_tool = *f.unknown_tool.get_ref();
        self.malformed_args = *f.malformed_args.get_ref();
        self.unknown_tool_in_batch = *f.unknown_tool_in_batch.get_ref();
        self
    }

    /// The agent whose timed tools hang with these probabilities (sites a seed switched on:
    /// `loopsim explore --faults`).
    pub fn with_tool_hangs(mut self, hangs: &[(String, f64)]) -> Self {
        self.tools.set_hangs(hangs);
        self
    }

    /// The agent's model with the window a config sets (Hermes's `model.context_length`),
    /// over the scenario's `context_window`.
    pub fn with_context_length(mut self, window: Option<u64>) -> Self {
        if window.is_some() {
            self.window = window;
        }
        self
    }

    /// The model's context window in tokens, if it has one loopsim models.
    pub fn window(&self) -> Option<u64> {
        self.window
    }

    /// The agent under a runtime without Hermes's context compression, or with it off.
    pub fn without_compression(mut self) -> Self {
        self.compresses = false;
        self
    }

    /// The agent under Hermes's compression with these settings.
    pub fn with_compression(mut self, rules: Compression) -> Self {
        self.compression = rules;
        self
    }

    /// The agent under a runtime that times tools out, cuts their results or adds a hint
    /// to them ([`ObservationRules`]).
    pub fn with_observation_rules(mut self, rules: ObservationRules) -> Self {
        self.observation = rules;
        self
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn spec(&self) -> &'s AgentSpec {
        self.spec
    }

    pub fn model(&self) -> &'s ModelSpec {
        self.model
    }

    /// Context tokens the next call sends.
    pub fn context(&self) -> u64 {
        self.context
    }

    /// The repetition of the current step (what `distinct` adds as `n`).
    pub fn rep(&self) -> u32 {
        self.rep
    }

    /// A new turn: the first (or a result turn's) script from its start.
    pub fn start_turn(&mut self, on_result: bool) {
        if on_result {
            // The children's results come as a user message.
            self.record(Message::user(0));
        }
        self.on_result = on_result;
        self.step = 0;
        self.rep = 0;
        self.compressions = 0;
    }

    /// When the user's next message comes (seconds), if the agent has one left.
    pub fn next_user_message_at(&self) -> Option<f64> {
        self.spec
            .turns
            .get(self.user_turn)
            .map(|t| *t.at_s.get_ref())
    }

    /// Moves on to the user's next message: the next [`start_turn`](Self::start_turn) follows
    /// its script.
    pub fn open_user_turn(&mut self) {
        self.user_turn += 1;
        self.record(Message::user(0));
    }

    fn steps(&self) -> &'s [Step] {
        // A result turn without its own script just answers (an empty script ends in text).
        if self.on_result {
            &self.spec.on_result
        } else if self.user_turn == 0 {
            &self.spec.script
        } else {
            &self.spec.turns[self.user_turn - 1].script
        }
    }

    /// Whether the recorded user pressed stop before the next call.
    pub fn user_stop_next(&self) -> bool {
        self.steps().get(self.step).is_some_and(|s| s.user_stop)
    }

    /// The model's next reply. `tools` is false for the call a turn makes without tools
    /// (Hermes's grace call): a finished script, or no tools, ends in text.
    pub fn reply(&mut self, tools: bool) -> ModelCall<'s> {
        let steps = self.steps();
        let (reply, step_idx) = if !tools || self.step >= steps.len() {
            (Reply::Answer, None)
        } else {
            let step = &steps[self.step];
            let reply = if step.context_too_small {
                Reply::ContextTooSmall
            } else if let Some(d) = &step.delegate {
                Reply::Delegate {
                    agent: d.get_ref(),
                    tasks: step.tasks,
                }
            } else if step.answer.is_some() {
                Reply::Answer
            } else if !step.choose.is_empty() {
                let total: f64 = step.choose.iter().map(|c| c.weight).sum();
                let mut x = self.rng.random::<f64>() * total;
                let pick = step.choose.iter().find(|c| {
                    x -= c.weight;
                    x < 0.0
                });
                let pick = pick.unwrap_or(step.choose.last().expect("validated"));
                if pick.answer.is_some() {
                    Reply::Answer
                } else {
                    Reply::Calls(&pick.calls)
                }
            } else if !step.cycle.is_empty() {
                Reply::Calls(&step.cycle[self.rep as usize % step.cycle.len()].calls)
            } else {
                Reply::Calls(&step.calls)
            };
            (reply, Some(self.step))
        };
        self.reply_step = step_idx;
        let step = step_idx.map(|i| &steps[i]);
        let none = ModelCall {
            reply,
            step,
            latency: Duration::ZERO,
            input_tokens: 0,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            output_tokens: 0,
            unknown_in_batch: false,
        };
        if matches!(reply, Reply::ContextTooSmall) {
            // The preflight gate fails before any request is sent: nothing is drawn.
            return none;
        }
        let model = self.model;
        let lat_dist: &Dist = step
            .and_then(|s| s.latency_s.as_ref())
            .unwrap_or(&model.latency_s)
            .get_ref();
        let out_dist: &Dist = step
            .and_then(|s| s.output_tokens.as_ref())
            .unwrap_or(&model.output_tokens)
            .get_ref();
        let latency = Duration::from_secs_f64(lat_dist.sample(&mut self.rng));
        let share = *model.cache_read_share.get_ref();
        let mut input = self.context;
        let mut cache = if std::mem::take(&mut self.cold_cache) {
            0
        } else {
            (self.context as f64 * share).round() as u64
        };
        if self.rng.random::<f64>() < *model.empty_reply_probability.get_ref() {
            // The model will try the same step again.
            self.reply_step = None;
            self.responded(input, false);
            return ModelCall {
                reply: Reply::Empty,
                latency,
                input_tokens: input,
                cache_read_tokens: cache,
                ..none
            };
        }
        let output = out_dist.sample(&mut self.rng).round() as u64;
        let (unknown, malformed) = (self.unknown_tool, self.malformed_args);
        let in_batch = self.unknown_tool_in_batch;
        // Drawn only where a fault is on, so every other scenario keeps its draws.
        let u = if unknown + malformed + in_batch > 0.0 {
            self.rng.random::<f64>()
        } else {
            1.0
        };
        let first_tool = match reply {
            Reply::Calls(c) => c.first().map(|c| c.tool.get_ref().as_str()),
            Reply::Delegate { .. } => Some("delegate_task"),
            _ => None,
        };
        if let Some(tool) = first_tool.filter(|_| u < unknown + malformed) {
            // The model will try the same step again.
            self.reply_step = None;
            self.responded(input, false);
            let reply = if u < unknown {
                // The reply joins the conversation, with the runtime's error results.
                self.context += output;
                self.record(Message::calls(output));
                let calls = match reply {
                    Reply::Calls(c) => c.len() as u32,
                    _ => 1,
                };
                Reply::UnknownTool { calls }
            } else {
                // The runtime drops the reply and sends the same request again (or keeps
                // it, with a format-error observation).
                self.dropped_output = output;
                Reply::MalformedArgs { tool }
            };
            return ModelCall {
                reply,
                latency,
                input_tokens: input,
                cache_read_tokens: cache,
                output_tokens: output,
                ..none
            };
        }
        let mut cache_write = 0;
        // A recorded call keeps its own figures.
        if let Some(s) = step {
            if let Some(i) = s.input_tokens {
                input = i;
                self.context = i;
            }
            cache = s.cache_read_tokens.unwrap_or(cache);
            cache_write = s.cache_write_tokens.unwrap_or(0);
        }
        self.context += output;
        let calls = matches!(reply, Reply::Calls(_) | Reply::Delegate { .. });
        self.record(if calls {
            Message::calls(output)
        } else {
            Message::text(output)
        });
        self.responded(input, calls);
        // A mixed batch: the script's calls and, after them, one of a tool that does not
        // exist (only in a reply of ordinary tool calls).
        let unknown_in_batch =
            matches!(reply, Reply::Calls(c) if !c.is_empty()) && u < unknown + malformed + in_batch;
        ModelCall {
            latency,
            input_tokens: input,
            cache_read_tokens: cache,
            cache_write_tokens: cache_write,
            output_tokens: output,
            unknown_in_batch,
            ..none
        }
    }

    /// Moves the script on after a reply's round, unless its step repeats. `flagged`: a
    /// guardrail warning or notice came back in the round (the model may heed it);
    /// `children_done`: every background child this agent started has finished.
    pub fn advance(&mut self, flagged: bool, children_done: bool) {
        let Some(i) = self.reply_step else { return };
        let step = &self.steps()[i];
        self.rep += 1;
        // Draw only when heeding is possible: otherwise a warning would shift the model's
        // random stream and another engine's run would not replay the same behaviour.
        let heed = *self.model.heed_probability.get_ref();
        let heeded = flagged && heed > 0.0 && self.rng.random::<f64>() < heed;
        let done = heeded
            || match step.until {
                None => self.rep >= step.times,
                Some(Until::Stopped) => false,
                Some(Until::ChildrenDone) => children_done,
            };
        if done {
            self.step += 1;
            self.rep = 0;
        }
    }

    /// Whether the user's recorded stop (`user_stop`) comes right after the round of the last
    /// reply, as far as that is known before the round's results are read: `None` when it
    /// depends on whether the model heeds a warning in them.
    pub fn user_stop_after_round(&self, children_done: bool) -> Option<bool> {
        let Some(i) = self.reply_step else {
            return Some(false);
        };
        let steps = self.steps();
        let step = &steps[i];
        let advances = match step.until {
            None => self.rep + 1 >= step.times,
            Some(Until::Stopped) => false,
            Some(Until::ChildrenDone) => children_done,
        };
        let stop_at = |k: usize| steps.get(k).is_some_and(|s| s.user_stop);
        let plain = stop_at(if advances { i + 1 } else { i });
        let heed_possible = *self.model.heed_probability.get_ref() > 0.0;
        if heed_possible && plain != stop_at(i + 1) {
            return None;
        }
        Some(plain)
    }

    /// Whether the step of the last reply repeats until this agent's background children are
    /// done (what it does next depends on where they are).
    pub fn waits_for_children(&self) -> bool {
        self.reply_step
            .and_then(|i| self.steps().get(i))
            .is_some_and(|s| s.until == Some(Until::ChildrenDone))
    }

    /// The summary call at the end of a turn whose budget ran out.
    pub fn summary(&mut self) -> SummaryCall {
        let model = self.model;
        let latency = Duration::from_secs_f64(model.latency_s.get_ref().sample(&mut self.rng));
        let out = model.output_tokens.get_ref().sample(&mut self.rng).round() as u64;
        let input = self.context;
        let cache = (input as f64 * model.cache_read_share.get_ref()).round() as u64;
        self.context += out;
        self.record(Message::text(out));
        SummaryCall {
            latency,
            input_tokens: input,
            cache_read_tokens: cache,
            output_tokens: out,
        }
    }

    /// A call the guardrails refused: its short synthetic result joins the context.
    pub fn refused_call(&mut self) {
        self.context += REFUSED_RESULT_TOKENS;
        self.record(Message::tool(REFUSED_RESULT_TOKENS));
    }

    /// `n` children reported back (a synchronous delegation's result, or a background
    /// batch's new turn).
    pub fn children_reported(&mut self, n: usize) {
        self.context += CHILD_REPORT_TOKENS * n as u64;
        self.record(Message::tool(CHILD_REPORT_TOKENS * n as u64));
    }

    /// Runs one scripted tool call started at `now_s` (virtual seconds): its duration,
    /// failure, result text and tokens (added to the context), and the approval call first
    /// where the tool needs one.
    pub fn run_tool(&mut self, c: &CallSpec, now_s: f64) -> ToolRun {
        let timeout = self.observation.tool_timeout_s;
        let mut run = self
            .tools
            .run(self.file, &self.name, c, self.rep, now_s, timeout);
        if let Some(max) = self.observation.max_chars {
            // The model sees the result's head: its text cut, its size at most the cut's.
            run.result = cut_head(&run.result, max).0;
            run.tokens = cut_tokens(run.tokens, max);
        }
        self.context += run.tokens;
        self.record(Message::tool(run.tokens));
        run
    }

    /// Takes back a tool result the run is done with (its buffer holds the next one).
    pub fn recycle_result(&mut self, result: String) {
        self.tools.recycle(result);
    }

    /// The runtime's hint to change strategy joins the last result.
    pub fn strategy_hint(&mut self) {
        self.context += STRATEGY_HINT_TOKENS;
        self.record_growth(STRATEGY_HINT_TOKENS);
    }

    /// The runtime kept the last reply it could not parse and told the model the format it
    /// expects: both join the context.
    pub fn format_error(&mut self) {
        self.context += std::mem::take(&mut self.dropped_output) + FORMAT_ERROR_TOKENS;
    }

    /// A `delegate_task` call for `tasks` children running `child_spec`: its arguments and
    /// the children's names. Each task's goal carries its child's name in a tag
    /// ([`agent_tag`]), so a live server can tell which child a request comes from.
    pub fn delegate(&mut self, child_spec: &str, tasks: u32) -> Delegation {
        let first = self.delegated;
        self.delegated += tasks;
        let names: Vec<String> = (0..tasks)
            .map(|i| child_name(&self.name, child_spec, first + i + 1))
            .collect();
        // A child whose own script delegates is asked for as an orchestrator: Hermes gives a
        // child the delegation tool only in that role (tools/delegate_tool.py).
        let spec = &self.file.agents[child_spec];
        let orchestrator = spec
            .script
            .iter()
            .chain(&spec.on_result)
            .any(|s| s.delegate.is_some());
        let goals: Vec<serde_json::Value> = names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let goal = format!("{child_spec} task {} {}", i + 1, agent_tag(n));
                if orchestrator {
                    serde_json::json!({ "goal": goal, "role": "orchestrator" })
                } else {
                    serde_json::json!({ "goal": goal })
                }
            })
            .collect();
        let args = json::parse(serde_json::json!({ "tasks": goals }).to_string().as_bytes())
            .expect("json");
        Delegation {
            signature: Signature::new("delegate_task", &args),
            args,
            names,
        }
    }
}

/// A `delegate_task` call the script makes.
#[derive(Clone, Debug)]
pub struct Delegation {
    pub args: Value,
    pub signature: Signature,
    /// The children's names, in task order.
    pub names: Vec<String>,
}

/// The name of the `k`-th child (1-based) an agent delegates: `worker#3` for the parent's,
/// `worker#1/helper#2` below it.
pub fn child_name(parent: &str, child_spec: &str, k: u32) -> String {
    if parent == "parent" {
        format!("{child_spec}#{k}")
    } else {
        format!("{parent}/{child_spec}#{k}")
    }
}

/// The tag a child's goal carries: `[loopsim agent worker#3]`.
pub fn agent_tag(name: &str) -> String {
    format!("[loopsim agent {name}]")
}

/// The agent named by the first tag in `text`, if any.
pub fn find_agent_tag(text: &str) -> Option<&str> {
    let start = text.find("[loopsim agent ")? + "[loopsim agent ".len();
    let len = text[start..].find(']')?;
    Some(&text[start..start + len])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seeded_hang_runs_every_call_of_the_tool_to_its_timeout() {
        let sc = crate::scenario::Scenario::parse(
            include_str!("../../../../scenarios/live-tool-timeouts.toml"),
            "t.toml",
        )
        .unwrap();
        let spec = &sc.file.agents["parent"].script[0].calls[0];
        let runs = |hangs: &[(String, f64)]| {
            let mut a = ScriptedAgent::new(&sc.file, "parent", "parent", 37).with_tool_hangs(hangs);
            (0..8)
                .map(|i| a.run_tool(spec, f64::from(i)))
                .collect::<Vec<_>>()
        };
        let hung = runs(&[("terminal".into(), 1.0)]);
        assert!(
            hung.iter()
                .all(|r| r.hung && r.failed && r.dur.as_secs_f64() == 30.0)
        );
        assert!(
            hung[0].result.contains("\"exit_code\": 124"),
            "{}",
            hung[0].result
        );
        let plain = runs(&[]);
        assert!(plain.iter().all(|r| !r.hung));
        assert!(plain.iter().any(|r| r.dur.as_secs_f64() < 30.0));
    }

    #[test]
    fn tags_round_trip_and_children_are_named_per_parent() {
        let n = child_name("parent", "worker", 3);
        assert_eq!(n, "worker#3");
        assert_eq!(child_name(&n, "helper", 1), "worker#3/helper#1");
        let goal = format!("worker task 3 {}: go", agent_tag(&n));
        assert_eq!(find_agent_tag(&goal), Some("worker#3"));
        assert_eq!(find_agent_tag("no tag here"), None);
        assert_eq!(find_agent_tag("[loopsim agent unterminated"), None);
    }
}
