//! The live world: a scenario's agents answering a real runtime's requests.
//!
//! The runtime owns the loop (budgets, guardrails, turns); this side owns what the scenario
//! scripts: each agent's replies, tokens and virtual clock, and its tools' results. Every
//! decision comes from [`loopsim_world::script::ScriptedAgent`], the same code the simulator
//! runs, so a live run and a simulated one differ only where the runtime differs from the
//! engine.
//!
//! Agents are told apart by what the request carries: the auxiliary approval model by its model
//! name, a child by the tag its goal carries (`[loopsim agent worker#3]`, written by its
//! parent's scripted `delegate_task` call), and the parent by the absence of one.

use std::collections::HashMap;

use loopsim_engine::guardrails::GuardrailRules;
use loopsim_engine::hash::{ResultHashing, Signature, result_hash};
use loopsim_engine::json::{self, Value};
use loopsim_engine::profile::Runtime;
use loopsim_engine::retry::{ProviderRetry, RetryStep};
use loopsim_engine::turn::compression::Compression;
use loopsim_world::clock::Duration;
use loopsim_world::faults::{
    CrashStream, Failure, FaultStream, MALFORMED_ARGS, UNKNOWN_TOOL, UNKNOWN_TOOL_ERROR,
};
use loopsim_world::scenario::{CallSpec, Scenario};
use loopsim_world::script::{
    ArgsCache, ContextGate, ModelCall, Reply, ScriptedAgent, call_args, find_agent_tag,
};
use loopsim_world::trace::{Event, EventKind};

use crate::openai::{ChatReply, ChatRequest, ToolCall};

mod crash;
mod runtime;
#[cfg(test)]
mod tests;

/// The marker Hermes puts before a guardrail warning it appends to a tool result.
pub const WARNING_MARKER: &str = "[Tool loop warning:";
/// The marker of a stall-guard notice appended to a tool result.
pub const NOTICE_MARKER: &str = "[Tool loop notice:";

/// The runtime context an emulated Ollama reports: Ollama's own default, far below what
/// Hermes needs for tool use.
pub const OLLAMA_SMALL_NUM_CTX: u64 = 2048;

/// What the text of a later user turn carries (`loopsim live` writes it).
pub const USER_TURN_MARK: &str = ", user turn ";

/// What every task loopsim writes carries (the first user message and each later one).
pub const TASK_MARK: &str = "(loopsim scenario ";

/// The model name live mode gives Hermes's auxiliary compression model: a request for it is
/// a summary of the conversation's middle, made before the agent's next call.
pub const COMPRESSION_MODEL: &str = "loopsim-compression";

/// Tokens of a tool message around its content (role, call id, quoting), as Hermes's rough
/// estimate counts them.
const TOOL_MESSAGE_OVERHEAD: u64 = 20;

/// The text that pads a tool result (it names no agent and no task).
const PAD_TEXT: &str = "filler to the scripted size. ";

/// The tool smolagents' model answers with: its `answer` argument is the final answer.
pub const SMOLAGENTS_ANSWER_TOOL: &str = "final_answer";

/// Whether a user message is one loopsim wrote (a task, a child's goal, a background note
/// naming its children), not one the runtime added to its own conversation.
fn is_ours(content: &str) -> bool {
    content.contains("[loopsim agent ") || content.contains("(loopsim scenario ")
}

/// Why a request could not be answered.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LiveError {
    #[error("{0}")]
    BadRequest(String),
    #[error("a request for agent `{0}`, which the scenario never delegated")]
    UnknownAgent(String),
    #[error("tool call `{0}` was never issued by the scripted model")]
    UnknownToolCall(String),
    #[error("a `{0}` call with these arguments was not issued by the scripted model, or has run")]
    UnmatchedToolCall(String),
    #[error("tool call `{id}` asks for `{asked}`, but the model called `{issued}`")]
    WrongTool {
        id: String,
        asked: String,
        issued: String,
    },
    /// Not a refusal: the scenario's provider fails this attempt ([`loopsim_world::faults`]).
    #[error("{}", .0.detail())]
    Provider(Failure),
    #[error("{0}")]
    Unsupported(String),
    /// Not a refusal: the prompt is larger than the model's window, which a provider
    /// answers with an error of its own.
    #[error(
        "loopsim: the scenario's model has a context length of {window} tokens, and this \
         prompt holds {tokens}"
    )]
    ContextOverflow { window: u64, tokens: u64 },
}

/// A tool call the scripted model issued, waiting for the runtime to run it.
struct Issued {
    agent: usize,
    /// The scripted call (none for a `delegate_task`, which the runtime runs itself).
    spec: Option<&'static CallSpec>,
    signature: Signature,
    args: Value,
    executed: bool,
}

struct LiveAgent {
    script: ScriptedAgent<'static>,
    /// Virtual time, in microseconds since the run started.
    clock_us: u64,
    calls: u64,
    /// User messages seen so far (a new one opens a turn).
    user_messages: usize,
    /// Tool call ids of the last reply, waiting for the next request to close their round.
    round: Vec<String>,
    /// The last reply was empty (a user message the runtime adds next is its nudge).
    last_empty: bool,
    /// A turn has started and not ended yet.
    turn_open: bool,
    /// Children this agent delegated, by name.
    children: Vec<String>,
    /// Each delegation's children, and whether its result has opened a turn yet.
    batches: Vec<(Vec<String>, bool)>,
    /// The delegate_task call of the current round and its children's names, if any (the
    /// runtime runs it itself).
    delegate_call: Option<(String, Vec<String>)>,
    finished: bool,
    interrupted: bool,
    /// Steps (tools calls) of the current run, for telling a plan from the final answer.
    run_steps: u64,
    /// Its provider errors (made on its first request to a model with faults).
    faults: Option<FaultStream>,
    /// Tool call ids of the last reply when it called only unknown tools: the next request
    /// carries the runtime's error results for them, if it sent any.
    unknown_round: Vec<String>,
    /// Hermes's rough estimate of the agent's next request so far (its last request, the
    /// reply and the results served since): where padding starts from.
    rough_next: u64,
    /// Each result text as padded the first time it came back.
    padded: HashMap<String, String>,
    /// The runtime compacted the conversation since the agent's last request: the user
    /// messages of its next one are counted afresh (a summary may be one of them).
    compacted: bool,
    /// A child's crashes at the tops of its iterations (none where it never crashes).
    crash: Option<CrashStream>,
}

/// Where an agent's background children stand at its virtual time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Children {
    /// All finished by now.
    Done,
    /// One finishes later (its clock is already past now).
    Running,
    /// One is behind and still running: it may finish before now or after.
    Unknown,
}

/// What a tool call through the tool endpoint returns.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolAnswer {
    pub result: String,
    pub failed: bool,
    /// The human's stop has come: the runtime should interrupt this agent now.
    pub interrupt: bool,
}

/// The live state of one run.
pub struct LiveWorld {
    sc: &'static Scenario,
    seed: u64,
    hashing: ResultHashing,
    agents: Vec<LiveAgent>,
    by_name: HashMap<String, usize>,
    /// Children delegated but not yet seen: their start time and script.
    expected: HashMap<String, (u64, String)>,
    issued: HashMap<String, Issued>,
    interrupt_at_us: Option<u64>,
    events: Vec<Event>,
    next_reply: u64,
    /// Background children (by name) and the agent that dispatched them: the runtime's
    /// threads run them at their own pace, which virtual time must lead ([`Self::must_wait`]).
    background_of: HashMap<String, usize>,
    /// Whose wire conventions the requests follow.
    runtime: Runtime,
    /// smolagents' planning: `(planning_interval, max_steps)`.
    planning: Option<(u64, u64)>,
    /// How the runtime retries provider errors (Hermes's, with the config's attempts).
    provider_retry: ProviderRetry,
    /// Hermes's compression settings (none: off) and the window a config sets.
    compression: Option<Compression>,
    context_length: Option<u64>,
}

impl LiveWorld {
    /// The scenario lives as long as the process (a server serves one scenario).
    pub fn new(sc: &'static Scenario, seed: u64, rules: &GuardrailRules) -> Self {
        let mut w = LiveWorld {
            sc,
            seed,
            hashing: rules.result_hashing,
            agents: Vec::new(),
            by_name: HashMap::new(),
            expected: HashMap::new(),
            issued: HashMap::new(),
            interrupt_at_us: sc
                .file
                .human
                .interrupt_at_s
                .as_ref()
                .map(|t| Duration::from_secs_f64(*t.get_ref()).0),
            events: Vec::new(),
            next_reply: 0,
            background_of: HashMap::new(),
            runtime: Runtime::Hermes,
            planning: None,
            provider_retry: ProviderRetry::HERMES,
            compression: None,
            context_length: None,
        };
        w.add_agent("parent", "parent", 0);
        w
    }

    /// Serves `runtime`'s requests. Every runtime but smolagents sends tool results as `tool`
    /// messages naming their calls; smolagents sends them as one user message, and its model
    /// answers by calling its `final_answer` tool (see [`crate::smolagents`]).
    pub fn for_runtime(mut self, runtime: Runtime) -> Self {
        self.runtime = runtime;
        self
    }

    /// The runtime retries provider errors so (Hermes with `agent.api_max_retries` set).
    pub fn with_provider_retry(mut self, retry: Option<ProviderRetry>) -> Self {
        if let Some(r) = retry {
            self.provider_retry = r;
        }
        self
    }

    /// The runtime compresses contexts so (Hermes; `None`: it does not), in windows a
    /// config may set for every model. Agents made before this call keep what they had.
    pub fn with_compression(mut self, rules: Option<Compression>, window: Option<u64>) -> Self {
        self.compression = rules;
        self.context_length = window;
        // The parent has not been asked anything yet: it starts over under these rules.
        let parent = ScriptedAgent::new(&self.sc.file, "parent", "parent", self.seed);
        self.agents[0].script = self.script_rules(parent);
        self
    }

    fn script_rules(&self, s: ScriptedAgent<'static>) -> ScriptedAgent<'static> {
        let s = s.with_context_length(self.context_length);
        match self.compression {
            Some(c) => s.with_compression(c),
            None => s.without_compression(),
        }
    }

    /// The runtime plans every `interval` steps of at most `max_steps` (smolagents): a
    /// tools-free request is then a planning call unless the run has made its last step.
    pub fn with_planning(mut self, planning: Option<(u64, u64)>) -> Self {
        self.planning = planning;
        self
    }

    /// Whether a tools-free request of agent `a` is a planning call (else it is the summary
    /// or final-answer call at the cap).
    fn is_planning(&self, a: usize) -> bool {
        self.planning
            .is_some_and(|(_, max_steps)| self.agents[a].run_steps < max_steps)
    }

    fn add_agent(&mut self, name: &str, spec: &str, start_us: u64) -> usize {
        let id = self.agents.len();
        let script = self.script_rules(ScriptedAgent::new(&self.sc.file, name, spec, self.seed));
        self.agents.push(LiveAgent {
            script,
            clock_us: start_us,
            calls: 0,
            user_messages: 0,
            round: Vec::new(),
            last_empty: false,
            turn_open: false,
            children: Vec::new(),
            batches: Vec::new(),
            delegate_call: None,
            finished: false,
            interrupted: false,
            run_steps: 0,
            faults: None,
            unknown_round: Vec::new(),
            rough_next: 0,
            padded: HashMap::new(),
            compacted: false,
            crash: CrashStream::new(self.seed, name, self.crash_probability(spec)),
        });
        self.by_name.insert(name.to_string(), id);
        id
    }

    /// The events seen so far, in the order they happened to each agent.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    fn event(&self, a: usize, kind: EventKind) -> Event {
        let ag = &self.agents[a];
        Event::new(ag.clock_us, ag.script.name().to_string(), kind)
    }

    /// Which agent a request comes from (a child is seen here first).
    fn agent_of(&mut self, req: &ChatRequest) -> Result<usize, LiveError> {
        match req.first_user().and_then(find_agent_tag) {
            Some(tag) => self.agent_named(tag),
            None => Ok(0),
        }
    }

    /// The agent of this name: one seen before, or a delegated child seen for the first time.
    fn agent_named(&mut self, name: &str) -> Result<usize, LiveError> {
        if let Some(&a) = self.by_name.get(name) {
            return Ok(a);
        }
        let (start, spec) = self
            .expected
            .remove(name)
            .ok_or_else(|| LiveError::UnknownAgent(name.to_string()))?;
        Ok(self.add_agent(name, &spec, start))
    }

    /// Whether a request is the auxiliary approval model's.
    pub fn is_approval(&self, req: &ChatRequest) -> bool {
        self.sc
            .file
            .approval_model
            .as_ref()
            .is_some_and(|m| m.get_ref() == &req.model)
            && !self
                .sc
                .file
                .agents
                .values()
                .any(|a| a.model.get_ref() == &req.model)
    }

    /// Answers one chat completion request.
    pub fn chat(&mut self, req: &ChatRequest) -> Result<ChatReply, LiveError> {
        if self.is_approval(req) {
            // The approval call's figures are drawn with the tool call it guards.
            return Ok(ChatReply {
                content: "APPROVE".into(),
                tool_calls: Vec::new(),
                prompt_tokens: 0,
                cached_tokens: 0,
                completion_tokens: 1,
            });
        }
        if req.model == COMPRESSION_MODEL {
            return Ok(self.compression_reply(req));
        }
        let a = self.agent_of(req)?;
        self.unknown_tool_errors(a, req);
        let planning = !req.tools && self.is_planning(a);
        if !req.tools && !planning {
            // The summary call: its prompt is the runtime's, not a user's turn.
            if !self.agents[a].round.is_empty() {
                self.close_round(a, req);
            }
            // The run is over; a plan may open the next one.
            self.agents[a].run_steps = 0;
            return Ok(self.summary_reply(a));
        }
        let smolagents = self.runtime == Runtime::Smolagents;
        let users = if smolagents {
            // Tool results and step errors are user messages too, and smolagents merges
            // neighbouring ones: count loopsim's tasks instead.
            req.messages
                .iter()
                .filter(|m| m.role == "user")
                .map(|m| m.content.matches(TASK_MARK).count())
                .sum()
        } else {
            req.messages.iter().filter(|m| m.role == "user").count()
        };
        let ag = &mut self.agents[a];
        if std::mem::take(&mut ag.compacted) {
            // Compaction happens between two calls of a turn: no user turn opens here.
            ag.user_messages = users;
        }
        let last_user = req
            .messages
            .iter()
            .rev()
            // A plan's request ends with the runtime's own planning prompt: the user's
            // message is the newest task.
            .find(|m| m.role == "user" && (!planning || m.content.contains(TASK_MARK)))
            .map_or("", |m| m.content.as_str());
        if !smolagents && users > ag.user_messages && ag.user_messages > 0 && !is_ours(last_user) {
            // The runtime's own request to go on (after an empty reply), not a user's turn.
            ag.user_messages = users;
        } else if users > ag.user_messages {
            // A new user message opens a turn.
            let first = ag.user_messages == 0;
            ag.user_messages = users;
            ag.round.clear();
            if first {
                ag.script.start_turn(false);
            } else if let Some(at_s) = ag
                .script
                .next_user_message_at()
                .filter(|_| last_user.contains(USER_TURN_MARK))
            {
                // The user's next message: after the turn before it, and not before it was sent.
                ag.clock_us = ag.clock_us.max(Duration::from_secs_f64(at_s).0);
                ag.script.open_user_turn();
                ag.script.start_turn(false);
            } else {
                ag.script.start_turn(true);
                let text = req
                    .messages
                    .iter()
                    .rev()
                    .find(|m| m.role == "user")
                    .map_or("", |m| m.content.as_str());
                self.open_result_turn(a, text);
            }
            self.agents[a].turn_open = true;
            self.agents[a].run_steps = 0;
            let e = self.event(a, EventKind::TurnStart);
            self.events.push(e);
        } else if !ag.round.is_empty() {
            self.close_round(a, req);
        }
        if planning {
            return Ok(self.planning_reply(a));
        }
        let script = &self.agents[a].script;
        if let Some(window) = script
            .window()
            .filter(|_| script.compression_threshold().is_some())
            && script.context() > window
        {
            // The provider refuses it; the runtime compacts and asks again, or gives up.
            return Err(LiveError::ContextOverflow {
                window,
                tokens: script.context(),
            });
        }
        self.provider_attempt(a)?;
        self.agents[a].run_steps += 1;
        let call = self.agents[a].script.reply(true);
        if !matches!(call.reply, Reply::MalformedArgs { .. })
            && let Some(f) = &mut self.agents[a].faults
        {
            // The call is over; a reply the runtime drops is asked again in the same call.
            f.call_answered();
        }
        self.agents[a].last_empty = matches!(call.reply, Reply::Empty);
        self.agents[a].rough_next = req.rough_tokens;
        self.reply_with(a, call)
    }

    /// Hermes's auxiliary compression call: the summary of the middle of the conversation
    /// of the agent whose context reached the threshold, made before that agent's next
    /// call. It is answered with the scripted summary's size and figures, and the agent's
    /// context becomes what the simulator's gate makes of it.
    fn compression_reply(&mut self, req: &ChatRequest) -> ChatReply {
        let due: Vec<usize> = (0..self.agents.len())
            .filter(|&a| {
                let ag = &self.agents[a];
                ag.turn_open && !ag.finished && ag.script.compression_due()
            })
            .collect();
        let tagged = req
            .messages
            .iter()
            .find_map(|m| find_agent_tag(&m.content))
            .and_then(|t| self.by_name.get(t).copied());
        let a = match (due.as_slice(), tagged) {
            ([a], _) => *a,
            (_, Some(t)) => t,
            (more, None) => more.first().copied().unwrap_or(0),
        };
        let (input, output, latency, e) = match self.agents[a].script.context_gate() {
            ContextGate::Compressed(c) => {
                let mut e = self.event(a, EventKind::Compression);
                e.count = Some(c.attempt);
                e.detail = Some(format!("context {} -> {} tokens", c.before, c.after));
                (c.input_tokens, c.output_tokens, c.latency.0, e)
            }
            _ => {
                // The simulator would send the request as it is: the comparison shows this.
                let mut e = self.event(a, EventKind::Compression);
                e.detail = Some(format!(
                    "the runtime compresses a context of {} tokens, below the simulator's \
                     threshold",
                    self.agents[a].script.context()
                ));
                (0, 0, 0, e)
            }
        };
        let mut e = e;
        e.input_tokens = Some(input);
        e.output_tokens = Some(output);
        e.latency_us = Some(latency);
        self.events.push(e);
        // What the summary request really holds, beside the scripted figure (not compared).
        let mut e = self.event(a, EventKind::ContextEstimate);
        e.input_tokens = Some(req.rough_tokens);
        e.detail = Some(format!("summary prompt, scripted {input} tokens"));
        self.events.push(e);
        self.agents[a].clock_us += latency;
        self.agents[a].compacted = true;
        ChatReply {
            content: padding(output.max(1) as usize * 4),
            tool_calls: Vec::new(),
            prompt_tokens: input,
            cached_tokens: 0,
            completion_tokens: output,
        }
    }

    /// One attempt of the agent's next model call against the scenario's provider faults,
    /// drawn as the simulator draws them: a failed one moves the agent's clock past the
    /// error and the runtime's wait, and is answered with the provider's error.
    fn provider_attempt(&mut self, a: usize) -> Result<(), LiveError> {
        let Some(faults) = self.agents[a].script.model().faults.as_ref() else {
            return Ok(());
        };
        let policy = match self.runtime {
            Runtime::Hermes => self.provider_retry,
            other => {
                return Err(LiveError::Unsupported(format!(
                    "the scenario's model has provider faults, whose retries loopsim has proved \
                     for Hermes only, not {other:?}"
                )));
            }
        };
        let seed = self.seed;
        let ag = &mut self.agents[a];
        let name = ag.script.name().to_string();
        let Some(f) = ag
            .faults
            .get_or_insert_with(|| FaultStream::new(seed, &name))
            .attempt(faults, &policy)
        else {
            return Ok(());
        };
        ag.clock_us += f.latency_us;
        let mut e = self.event(a, EventKind::ModelError);
        e.call = Some(self.agents[a].calls + 1);
        e.latency_us = Some(f.latency_us);
        e.detail = Some(f.detail());
        self.events.push(e);
        if let RetryStep::Wait { us } | RetryStep::Rebuild { us } = f.then {
            self.agents[a].clock_us += us;
        }
        Err(LiveError::Provider(f))
    }

    /// The runtime's error results for the last reply's calls of unknown tools, one
    /// `tool_error` event each (Hermes sends none when it gives up on the turn instead).
    fn unknown_tool_errors(&mut self, a: usize, req: &ChatRequest) {
        let ids = std::mem::take(&mut self.agents[a].unknown_round);
        let expected = format!("Tool '{UNKNOWN_TOOL}' does not exist");
        for id in ids {
            let Some(m) = req
                .messages
                .iter()
                .find(|m| m.role == "tool" && m.tool_call_id.as_deref() == Some(id.as_str()))
            else {
                continue;
            };
            let mut e = self.event(a, EventKind::ToolError);
            e.call = Some(self.agents[a].calls);
            e.tool = Some(UNKNOWN_TOOL.into());
            e.detail = Some(if m.content.starts_with(&expected) {
                UNKNOWN_TOOL_ERROR.into()
            } else {
                // Not the error loopsim expects: the comparison shows what came back.
                m.content.chars().take(80).collect()
            });
            self.events.push(e);
        }
    }

    /// The tool results of the last reply came back: the model reads them and moves on.
    fn close_round(&mut self, a: usize, req: &ChatRequest) {
        let round = std::mem::take(&mut self.agents[a].round);
        let mut flagged = false;
        let echoed: std::collections::HashSet<&str> = req
            .messages
            .iter()
            .flat_map(|m| m.tool_call_ids.iter().map(String::as_str))
            .collect();
        // smolagents names no call in its tool results; it runs every call of a reply.
        let names_calls = self.runtime != Runtime::Smolagents;
        for id in &round {
            if names_calls && !echoed.contains(id.as_str()) {
                // The runtime dropped the call before running any (an identical one of the
                // same reply): no result joins the context.
                continue;
            }
            let content = req
                .messages
                .iter()
                .rev()
                .find(|m| m.role == "tool" && m.tool_call_id.as_deref() == Some(id.as_str()))
                .map(|m| m.content.as_str())
                .unwrap_or("");
            flagged |= content.contains(WARNING_MARKER) || content.contains(NOTICE_MARKER);
            let executed = self.issued.get(id).is_some_and(|i| i.executed);
            if !executed {
                self.agents[a].script.refused_call();
            }
        }
        let children_done = self.children_state(a) == Children::Done;
        self.agents[a].script.advance(flagged, children_done);
    }

    /// Where this agent's background children stand at its own virtual time: a child that
    /// has not finished but whose clock is still behind may yet finish first.
    fn children_state(&self, a: usize) -> Children {
        let now = self.agents[a].clock_us;
        let mut state = Children::Done;
        for name in &self.agents[a].children {
            let (clock, finished) = match self.by_name.get(name) {
                Some(&c) => (self.agents[c].clock_us, self.agents[c].finished),
                // Delegated, not yet heard from: it starts at its parent's clock then.
                None => match self.expected.get(name) {
                    Some((start, _)) => (*start, false),
                    None => continue,
                },
            };
            match (finished, clock <= now) {
                (true, true) => {}
                (true, false) | (false, false) => return Children::Running,
                (false, true) => state = Children::Unknown,
            }
        }
        state
    }

    /// Whether a request must wait for children to catch up in virtual time before it is
    /// answered: the agent's step repeats until its children are done, and some child is
    /// behind the agent's clock and still running (threads run at their own pace).
    ///
    /// Background children and their dispatcher are also kept in step, so that what the
    /// runtime sees at a moment of virtual time (is its async pool full?) is what the
    /// simulation has at that moment: a background child whose clock is ahead of its
    /// dispatcher's waits while the dispatcher's turn is open, and a dispatcher waits while
    /// one of its running background children is behind it.
    pub fn must_wait(&mut self, req: &ChatRequest) -> bool {
        if self.is_approval(req) || req.model == COMPRESSION_MODEL {
            return false;
        }
        let Ok(a) = self.agent_of(req) else {
            return false;
        };
        let clock = self.agents[a].clock_us;
        if let Some(&p) = self.background_of.get(self.agents[a].script.name())
            && self.agents[p].turn_open
            && clock > self.agents[p].clock_us
        {
            return true;
        }
        let behind = self.background_of.iter().any(|(child, &p)| {
            p == a
                && self
                    .by_name
                    .get(child)
                    .is_some_and(|&c| !self.agents[c].finished && self.agents[c].clock_us < clock)
        });
        if behind {
            return true;
        }
        !self.agents[a].round.is_empty()
            && self.agents[a].script.waits_for_children()
            && self.children_state(a) == Children::Unknown
    }

    /// A planning call: drawn as the simulator draws it, and it takes its time.
    fn planning_reply(&mut self, a: usize) -> ChatReply {
        let (reply, latency) =
            self.tools_free_reply(a, EventKind::PlanningCall, "Plan: go on with the task.");
        self.agents[a].clock_us += latency;
        reply
    }

    fn summary_reply(&mut self, a: usize) -> ChatReply {
        // The simulator does not advance the clock for the summary call either.
        self.tools_free_reply(a, EventKind::SummaryCall, "Summary of the work so far.")
            .0
    }

    /// A tools-free call's reply and its latency, recorded as `kind`.
    fn tools_free_reply(&mut self, a: usize, kind: EventKind, text: &str) -> (ChatReply, u64) {
        let s = self.agents[a].script.summary();
        let mut e = self.event(a, kind);
        e.input_tokens = Some(s.input_tokens);
        e.output_tokens = Some(s.output_tokens);
        e.latency_us = Some(s.latency.0);
        self.events.push(e);
        let reply = ChatReply {
            content: text.into(),
            tool_calls: Vec::new(),
            prompt_tokens: s.input_tokens,
            cached_tokens: s.cache_read_tokens,
            completion_tokens: s.output_tokens,
        };
        (reply, s.latency.0)
    }

    fn reply_with(&mut self, a: usize, call: ModelCall<'static>) -> Result<ChatReply, LiveError> {
        let n = {
            let ag = &mut self.agents[a];
            ag.calls += 1;
            ag.calls
        };
        let mut e = self.event(a, EventKind::ModelCall);
        e.call = Some(n);
        e.input_tokens = Some(call.input_tokens);
        e.cache_read_tokens = Some(call.cache_read_tokens);
        e.cache_write_tokens = (call.cache_write_tokens > 0).then_some(call.cache_write_tokens);
        e.output_tokens = Some(call.output_tokens);
        e.latency_us = Some(call.latency.0);
        e.detail = call.detail().map(str::to_string);
        self.events.push(e);
        if self.agents[a].script.compression_threshold().is_some() {
            // What Hermes's check before this call saw, beside what the scenario scripts
            // (not compared: the check's outcome is, through the compression events).
            let mut e = self.event(a, EventKind::ContextEstimate);
            e.call = Some(n);
            e.input_tokens = Some(self.agents[a].rough_next);
            e.detail = Some(format!("scripted {} tokens", call.input_tokens));
            self.events.push(e);
        }
        self.agents[a].clock_us += call.latency.0;
        let mut tool_calls = Vec::new();
        let mut content = String::new();
        match call.reply {
            Reply::Empty => {}
            Reply::MalformedArgs { tool } => {
                // One call is enough: the runtime drops the whole reply.
                let id = self.call_id(a, n, 0);
                tool_calls.push(ToolCall {
                    id,
                    name: tool.to_string(),
                    arguments: MALFORMED_ARGS.into(),
                });
                return Ok(self.unrun_reply(a, &call, tool_calls));
            }
            Reply::UnknownTool { calls } => {
                for i in 0..calls as usize {
                    let id = self.call_id(a, n, i);
                    tool_calls.push(ToolCall {
                        id: id.clone(),
                        name: UNKNOWN_TOOL.into(),
                        arguments: "{}".into(),
                    });
                    self.agents[a].unknown_round.push(id);
                }
                return Ok(self.unrun_reply(a, &call, tool_calls));
            }
            Reply::Answer | Reply::ContextTooSmall => {
                content = call
                    .step
                    .and_then(|s| s.answer.clone())
                    .unwrap_or_else(|| "Done.".into());
            }
            Reply::Calls(specs) => {
                let rep = self.agents[a].script.rep();
                for (i, spec) in specs.iter().enumerate() {
                    // A fresh cache: its raw-pointer keys would keep the world off other threads.
                    let (args, signature) = call_args(&mut ArgsCache::default(), spec, rep);
                    let args = std::rc::Rc::unwrap_or_clone(args);
                    let id = self.call_id(a, n, i);
                    tool_calls.push(ToolCall {
                        id: id.clone(),
                        name: spec.tool.get_ref().clone(),
                        arguments: String::from_utf8_lossy(&json::canonical(&args)).into_owned(),
                    });
                    self.issued.insert(
                        id,
                        Issued {
                            agent: a,
                            spec: Some(spec),
                            signature,
                            args,
                            executed: false,
                        },
                    );
                }
            }
            Reply::Delegate { agent, tasks } => {
                let d = self.agents[a].script.delegate(agent, tasks);
                let start = self.agents[a].clock_us;
                for name in &d.names {
                    self.expected
                        .insert(name.clone(), (start, agent.to_string()));
                }
                self.agents[a].children.extend(d.names.iter().cloned());
                let id = self.call_id(a, n, 0);
                self.agents[a].delegate_call = Some((id.clone(), d.names.clone()));
                self.issued.insert(
                    id.clone(),
                    Issued {
                        agent: a,
                        spec: None,
                        signature: d.signature.clone(),
                        args: d.args.clone(),
                        executed: false,
                    },
                );
                tool_calls.push(ToolCall {
                    id,
                    name: "delegate_task".into(),
                    arguments: String::from_utf8_lossy(&json::canonical(&d.args)).into_owned(),
                });
            }
        }
        self.agents[a].round = tool_calls.iter().map(|c| c.id.clone()).collect();
        if call.unknown_in_batch {
            // A mixed batch: one call of a tool that does not exist after the real ones. It
            // is in no round: the runtime answers it with an error result of its own.
            let id = self.call_id(a, n, tool_calls.len());
            tool_calls.push(ToolCall {
                id: id.clone(),
                name: UNKNOWN_TOOL.into(),
                arguments: "{}".into(),
            });
            self.agents[a].unknown_round.push(id);
        }
        if self.runtime == Runtime::Smolagents && matches!(call.reply, Reply::Answer) {
            // smolagents' model answers through its own tool, which the runtime runs itself.
            let answer = serde_json::json!({ "answer": std::mem::take(&mut content) });
            tool_calls.push(ToolCall {
                id: format!("call_{a}_{n}_answer"),
                name: SMOLAGENTS_ANSWER_TOOL.into(),
                arguments: answer.to_string(),
            });
        }
        if !tool_calls.is_empty() && content.is_empty() {
            content = self.padded_reply(a, &tool_calls);
        }
        Ok(ChatReply {
            content,
            tool_calls,
            prompt_tokens: call.input_tokens,
            cached_tokens: call.cache_read_tokens,
            completion_tokens: call.output_tokens,
        })
    }

    /// The text of a reply that calls tools, where Hermes compacts: filler that makes
    /// Hermes's own estimate of the conversation (characters over 4), from which it decides
    /// to compact, the context the scenario scripts after the reply. It makes up for what
    /// the real messages lack: the reply's own output tokens, the scenario's size of the
    /// system prompt and task, and any difference left by the last round's results (whose
    /// padding follows their text alone). Tool calls and results are untouched, so the
    /// guardrails see what they would see without it.
    fn padded_reply(&self, a: usize, calls: &[ToolCall]) -> String {
        let ag = &self.agents[a];
        if ag.script.compression_threshold().is_none() {
            return String::new();
        }
        let own: usize = calls
            .iter()
            .map(|c| c.id.len() + c.name.len() + c.arguments.len() + 70)
            .sum::<usize>()
            + 40;
        let now = ag.rough_next + own.div_ceil(4) as u64;
        let missing = ag.script.context().saturating_sub(now);
        padding(missing as usize * 4)
    }

    /// A reply of tool calls the runtime will not run (unknown tools, arguments that are not
    /// JSON): no round waits for their results.
    fn unrun_reply(
        &mut self,
        a: usize,
        call: &ModelCall<'_>,
        tool_calls: Vec<ToolCall>,
    ) -> ChatReply {
        self.agents[a].round.clear();
        ChatReply {
            content: String::new(),
            tool_calls,
            prompt_tokens: call.input_tokens,
            cached_tokens: call.cache_read_tokens,
            completion_tokens: call.output_tokens,
        }
    }

    fn call_id(&mut self, a: usize, n: u64, i: usize) -> String {
        self.next_reply += 1;
        format!("call_{a}_{n}_{i}")
    }

    /// Runs the issued call of the current round with this tool and these arguments that
    /// has not run yet, the first in the reply's order: for a runtime that does not tell its
    /// tools their call's id (smolagents).
    pub fn tool_by_args(&mut self, tool: &str, args: &Value) -> Result<ToolAnswer, LiveError> {
        let wanted = json::canonical(args);
        let id = self
            .agents
            .iter()
            .flat_map(|ag| &ag.round)
            .find(|id| {
                self.issued.get(*id).is_some_and(|i| {
                    !i.executed
                        && i.spec.is_some_and(|s| s.tool.get_ref() == tool)
                        && json::canonical(&i.args) == wanted
                })
            })
            .cloned()
            .ok_or_else(|| LiveError::UnmatchedToolCall(tool.to_string()))?;
        self.tool(&id, tool, args)
    }

    /// Runs one issued tool call for the runtime's fake handler.
    pub fn tool(&mut self, id: &str, tool: &str, args: &Value) -> Result<ToolAnswer, LiveError> {
        let issued = self
            .issued
            .get_mut(id)
            .ok_or_else(|| LiveError::UnknownToolCall(id.to_string()))?;
        let issued_tool = issued
            .spec
            .map_or("delegate_task", |s| s.tool.get_ref().as_str());
        let Some(spec) = issued.spec.filter(|_| issued_tool == tool) else {
            return Err(LiveError::WrongTool {
                id: id.into(),
                asked: tool.into(),
                issued: issued_tool.to_string(),
            });
        };
        issued.executed = true;
        let a = issued.agent;
        let now_s = self.agents[a].clock_us as f64 / 1e6;
        let run = self.agents[a].script.run_tool(spec, now_s);
        if let Some(ap) = run.approval {
            let mut e = self.event(a, EventKind::ApprovalCall);
            e.tool = Some(tool.to_string());
            e.latency_us = Some(ap.latency.0);
            e.output_tokens = Some(ap.output_tokens);
            self.events.push(e);
        }
        self.agents[a].clock_us += run.dur.0;
        let mut e = self.event(a, EventKind::ToolCall);
        e.call = Some(self.agents[a].calls);
        e.tool = Some(tool.to_string());
        e.args_hash = Some(Signature::new(tool, args).args_hash.hex());
        e.result_hash = Some(result_hash(Some(run.result.as_bytes()), tool, self.hashing).hex());
        e.failed = Some(run.failed);
        e.latency_us = Some(run.dur.0);
        self.events.push(e);
        // The recorded user's stop after this round, once its last call has run.
        let round_done = self.agents[a]
            .round
            .iter()
            .all(|id| self.issued.get(id).is_some_and(|i| i.executed));
        let recorded_stop = round_done
            && self.agents[a]
                .script
                .user_stop_after_round(self.children_state(a) == Children::Done)
                == Some(true);
        let ag = &mut self.agents[a];
        // The human's stop comes once, when the parent's clock crosses it.
        let human_stop =
            a == 0 && !ag.interrupted && self.interrupt_at_us.is_some_and(|t| ag.clock_us >= t);
        if human_stop {
            ag.interrupted = true;
        }
        let interrupt = human_stop || (a == 0 && recorded_stop);
        if interrupt {
            let e = self.event(a, EventKind::Interrupt);
            self.events.push(e);
        }
        let mut result = run.result;
        if self.agents[a].script.compression_threshold().is_some() {
            // A result as long as its scripted size (see `padded_reply`). The first size
            // of a text holds for every later copy: identical results stay identical.
            let chars = (run.tokens.saturating_sub(TOOL_MESSAGE_OVERHEAD) * 4) as usize;
            result = self.agents[a]
                .padded
                .entry(result)
                .or_insert_with_key(|r| {
                    let mut p = r.clone();
                    if chars > r.len() + 1 {
                        p.push('\n');
                        p.push_str(&padding(chars - r.len() - 1));
                    }
                    p
                })
                .clone();
        }
        Ok(ToolAnswer {
            result,
            failed: run.failed,
            interrupt,
        })
    }

    /// The runtime context an Ollama server would report for the parent's model, when the
    /// scenario's parent starts with `context_too_small` (below Hermes's 64K minimum); `None`:
    /// the server is no Ollama.
    pub fn ollama_num_ctx(&self) -> Option<u64> {
        let parent = &self.sc.file.agents["parent"];
        parent
            .script
            .first()
            .is_some_and(|s| s.context_too_small)
            .then_some(OLLAMA_SMALL_NUM_CTX)
    }

    /// The model names a client may ask for.
    pub fn model_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.sc.file.models.keys().cloned().collect();
        names.push(COMPRESSION_MODEL.into());
        names
    }

    /// A fresh id for a reply.
    pub fn reply_id(&mut self) -> String {
        self.next_reply += 1;
        format!("chatcmpl-loopsim-{}", self.next_reply)
    }

    /// The signature the scripted model meant for an issued call (what the runtime should
    /// have passed on unchanged).
    pub fn issued_signature(&self, id: &str) -> Option<&Signature> {
        self.issued.get(id).map(|i| &i.signature)
    }

    /// The arguments the scripted model sent with an issued call.
    pub fn issued_args(&self, id: &str) -> Option<&Value> {
        self.issued.get(id).map(|i| &i.args)
    }
}

/// `chars` characters of filler text.
fn padding(chars: usize) -> String {
    PAD_TEXT.chars().cycle().take(chars).collect()
}
