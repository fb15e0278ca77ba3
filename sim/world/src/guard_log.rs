//! The calls a run makes to its guardrail engine, in order: what the engine alone would be
//! asked, to measure the engine's share of a run (the benches) or to feed the same calls to
//! another engine.

use std::sync::{Arc, Mutex};

use loopsim_engine::engine::GuardrailEngine;
use loopsim_engine::guardrails::{
    CallFacts, Controller, Decision, GuardrailConfig, GuardrailRules, Observation,
};
use loopsim_engine::hash::Signature;
use loopsim_engine::json::Value;

/// One call to an agent's engine (`agent` is the agent's index in the run).
#[derive(Clone, Debug)]
pub enum GuardCall {
    /// The agent's engine was made with these settings.
    New {
        agent: usize,
        config: GuardrailConfig,
        rules: GuardrailRules,
    },
    Reset {
        agent: usize,
    },
    Before {
        agent: usize,
        signature: Signature,
        args: Value,
    },
    After {
        agent: usize,
        signature: Signature,
        result: Option<Vec<u8>>,
        failed: bool,
    },
    Spawn {
        agent: usize,
        count: u32,
    },
}

/// Where a run writes its engine calls (set [`RunOptions::guard_log`](crate::sim::RunOptions)).
pub type GuardLog = Arc<Mutex<Vec<GuardCall>>>;

/// An engine that writes every call to the log before answering it.
pub(crate) struct Logged {
    pub inner: Box<dyn GuardrailEngine>,
    pub agent: usize,
    pub log: GuardLog,
}

impl Logged {
    fn push(&self, c: GuardCall) {
        self.log.lock().expect("guard log").push(c);
    }
}

impl GuardrailEngine for Logged {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn rules(&self) -> &GuardrailRules {
        self.inner.rules()
    }

    fn reset_turn(&mut self) {
        self.push(GuardCall::Reset { agent: self.agent });
        self.inner.reset_turn();
    }

    fn before_call(&mut self, signature: Signature, args: &Value) -> Decision {
        self.push(GuardCall::Before {
            agent: self.agent,
            signature: signature.clone(),
            args: args.clone(),
        });
        self.inner.before_call(signature, args)
    }

    fn after_call(&mut self, facts: &CallFacts<'_>, failed: bool) -> (Decision, Observation) {
        self.push(GuardCall::After {
            agent: self.agent,
            signature: facts.signature.clone(),
            result: facts.result.map(<[u8]>::to_vec),
            failed,
        });
        self.inner.after_call(facts, failed)
    }

    fn halt_decision(&self) -> Option<&Decision> {
        self.inner.halt_decision()
    }

    fn spawn_subagents(&mut self, count: u32) -> u32 {
        self.push(GuardCall::Spawn {
            agent: self.agent,
            count,
        });
        self.inner.spawn_subagents(count)
    }

    fn failure(&self) -> Option<String> {
        self.inner.failure()
    }
}

/// Answers logged calls again with fresh built-in controllers (one per agent, made with the
/// logged settings), in order, handing every `before` and `after` decision to `each` (with the
/// stall guards' observation for an `after`).
pub fn replay(calls: &[GuardCall], mut each: impl FnMut(&Decision, Option<&Observation>)) {
    fn engine(engines: &mut [Option<Controller>], agent: usize) -> Option<&mut Controller> {
        engines.get_mut(agent)?.as_mut()
    }
    let mut engines: Vec<Option<Controller>> = Vec::new();
    for c in calls {
        match c {
            GuardCall::New {
                agent,
                config,
                rules,
            } => {
                if engines.len() <= *agent {
                    engines.resize_with(agent + 1, || None);
                }
                engines[*agent] = Some(Controller::new(*config, *rules));
            }
            GuardCall::Reset { agent } => {
                if let Some(e) = engine(&mut engines, *agent) {
                    e.reset_turn();
                }
            }
            GuardCall::Spawn { agent, count } => {
                if let Some(e) = engine(&mut engines, *agent) {
                    e.spawn_subagents(*count);
                }
            }
            GuardCall::Before {
                agent,
                signature,
                args,
            } => {
                if let Some(e) = engine(&mut engines, *agent) {
                    each(
                        &GuardrailEngine::before_call(e, signature.clone(), args),
                        None,
                    );
                }
            }
            GuardCall::After {
                agent,
                signature,
                result,
                failed,
            } => {
                if let Some(e) = engine(&mut engines, *agent) {
                    let facts =
                        CallFacts::with_signature(signature.clone(), result.as_deref(), e.rules());
                    let (d, o) = GuardrailEngine::after_call(e, &facts, *failed);
                    each(&d, Some(&o));
                }
            }
        }
    }
}
