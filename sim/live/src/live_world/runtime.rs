//! What the runtime reports and what the world does with it: guardrail decisions and turn
//! ends posted by the bridge, the `delegate_task` runs the runtime did itself, background
//! results opening turns, and the events in a deterministic order.

use loopsim_engine::hash::{Signature, result_hash};
use loopsim_engine::json;
use loopsim_world::script::agent_tag;
use loopsim_world::trace::{Event, EventKind};

use super::{LiveError, LiveWorld};

impl LiveWorld {
    /// The events so far: ordered by virtual time, then by agent name, each agent's own
    /// events in the order they happened. Threads of a runtime may interleave agents any
    /// way; this order does not depend on it.
    pub fn events_in_order(&self) -> Vec<Event> {
        let mut events = self.events.clone();
        // Ties in time go by name: the order agents first spoke in is the threads' choice.
        events.sort_by(|x, y| (x.t_us, &x.agent).cmp(&(y.t_us, &y.agent)));
        events
    }

    /// The events in order, taken out of the world.
    pub fn take_events(&mut self) -> Vec<Event> {
        let events = self.events_in_order();
        self.events.clear();
        events
    }

    /// Adds an event the runtime reported (a guardrail decision, a turn's end).
    pub fn push_event(&mut self, mut e: Event) {
        if let Some(&a) = self.by_name.get(&e.agent) {
            e.t_us = self.agents[a].clock_us;
            if matches!(e.kind, EventKind::TurnEnd | EventKind::ChildCrash) {
                if !self.agents[a].turn_open {
                    // The runtime ended the turn before its first request (a preflight, a
                    // child that crashed at once).
                    let start = self.event(a, EventKind::TurnStart);
                    self.events.push(start);
                }
                self.agents[a].turn_open = false;
                self.agents[a].finished = true;
            }
            if e.kind == EventKind::TurnEnd {
                e.call = Some(self.agents[a].calls);
            }
        }
        self.events.push(e);
    }

    /// Records what the runtime reports it did: `{"agent", "kind", ...}` with kind `decision`
    /// (`tool`, `action`, `code`, `count`), `notice` (`tool`, `detail`, `count`), `turn_end`
    /// (`detail`: the exit reason, `budget_used`, `call`: its API calls), `child_crash` (the
    /// same, as the runtime's delegation reported a child that raised) or `spawn`.
    pub fn runtime_event(&mut self, v: &serde_json::Value) -> Result<(), LiveError> {
        use loopsim_engine::guardrails::{Action, DecisionCode};
        let s = |k: &str| v.get(k).and_then(serde_json::Value::as_str);
        let n = |k: &str| v.get(k).and_then(serde_json::Value::as_u64);
        let bad = |m: String| LiveError::BadRequest(format!("event: {m}"));
        let agent = s("agent").ok_or_else(|| bad("no `agent`".into()))?;
        let word = s("kind").unwrap_or("");
        if word == "delegated" {
            return self.delegated(agent, v);
        }
        let kind = match EventKind::parse(word) {
            // A child's exception as the runtime's delegation reported it: `call` is the
            // API calls it counted for the child, `detail` its exit reason.
            Some(
                k @ (EventKind::Decision
                | EventKind::Notice
                | EventKind::TurnEnd
                | EventKind::Spawn
                | EventKind::BudgetRefund
                | EventKind::ChildCrash),
            ) => k,
            _ => return Err(bad(format!("unknown kind `{word}`"))),
        };
        // t_us is the agent's clock, set when the event is pushed.
        let mut e = Event::new(0, agent.to_string(), kind);
        e.tool = s("tool").map(str::to_string);
        e.count = n("count").map(|c| c as u32);
        e.detail = s("detail").map(str::to_string);
        e.budget_used = n("budget_used");
        e.call = n("call");
        e.children = n("children").map(|c| c as u32);
        if kind == EventKind::Decision {
            let action = s("action").unwrap_or("");
            let code = s("code").unwrap_or("");
            e.action = Some(
                Action::parse(action)
                    .ok_or_else(|| bad(format!("unknown action `{action}`")))?
                    .as_str(),
            );
            e.code = Some(
                DecisionCode::parse(code)
                    .ok_or_else(|| bad(format!("unknown decision code `{code}`")))?
                    .as_str(),
            );
        }
        self.push_event(e);
        Ok(())
    }

    /// The runtime ran an agent's `delegate_task` itself: `{"args", "result"}` as it saw them.
    pub(super) fn delegated(
        &mut self,
        agent: &str,
        v: &serde_json::Value,
    ) -> Result<(), LiveError> {
        let bad = |m: &str| LiveError::BadRequest(format!("event: delegated: {m}"));
        let &a = self
            .by_name
            .get(agent)
            .ok_or_else(|| LiveError::UnknownAgent(agent.to_string()))?;
        let (id, names) = self.agents[a]
            .delegate_call
            .take()
            .ok_or_else(|| bad("the scripted model made no delegate_task call"))?;
        let args_text = v.get("args").map(|x| x.to_string()).unwrap_or("{}".into());
        let args = json::parse(args_text.as_bytes()).map_err(|_| bad("bad `args`"))?;
        let result = v
            .get("result")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("");
        if let Some(i) = self.issued.get_mut(&id) {
            i.executed = true;
        }
        let parsed = serde_json::from_str::<serde_json::Value>(result).ok();
        let failed = parsed
            .as_ref()
            .is_some_and(|r| r.get("error").is_some_and(|e| !e.is_null()));
        let background = parsed.as_ref().is_some_and(|r| {
            r.get("mode").and_then(serde_json::Value::as_str) == Some("background")
        });
        if !failed && !background {
            // A synchronous delegation came back with its children's results: the agent
            // waited for the last of them, and their reports join its context.
            self.children_report(a, &names);
        }
        if !failed && background {
            for n in &names {
                self.background_of.insert(n.clone(), a);
            }
        }
        let mut e = self.event(a, EventKind::ToolCall);
        e.call = Some(self.agents[a].calls);
        e.tool = Some("delegate_task".into());
        e.args_hash = Some(Signature::new("delegate_task", &args).args_hash.hex());
        e.result_hash =
            Some(result_hash(Some(result.as_bytes()), "delegate_task", self.hashing).hex());
        e.failed = Some(failed);
        e.latency_us = Some(0);
        self.events.push(e);
        if !failed && background {
            self.agents[a].batches.push((names, false));
        }
        Ok(())
    }

    /// A background delegation's result opens this turn: the oldest batch not yet reported
    /// joins the context, and the turn starts when both the parent and its children are done.
    pub(super) fn open_result_turn(&mut self, a: usize, text: &str) {
        let batches = &self.agents[a].batches;
        let named = batches
            .iter()
            .position(|b| !b.1 && b.0.iter().any(|n| text.contains(&agent_tag(n))));
        let Some(k) = named.or_else(|| batches.iter().position(|b| !b.1)) else {
            return;
        };
        self.agents[a].batches[k].1 = true;
        let names = self.agents[a].batches[k].0.clone();
        self.children_report(a, &names);
    }

    /// Children's results reach agent `a`: not before the last of them finished, and each
    /// child's report joins its context.
    fn children_report(&mut self, a: usize, names: &[String]) {
        let done = names
            .iter()
            .filter_map(|n| self.by_name.get(n))
            .map(|&c| self.agents[c].clock_us)
            .max()
            .unwrap_or(0);
        let ag = &mut self.agents[a];
        ag.clock_us = ag.clock_us.max(done);
        ag.script.children_reported(names.len());
    }

    /// When each background result (the runtime's note, naming its children by their tags)
    /// finished in virtual time: the order the scripted world delivers them in.
    pub fn result_order(&self, agent: &str, notes: &[String]) -> Vec<usize> {
        let finish = |note: &str| -> u64 {
            self.agents
                .iter()
                .filter(|c| note.contains(&agent_tag(c.script.name())))
                .map(|c| c.clock_us)
                .max()
                .unwrap_or(u64::MAX)
        };
        let _ = agent;
        let mut order: Vec<usize> = (0..notes.len()).collect();
        order.sort_by_key(|&i| finish(&notes[i]));
        order
    }
}
