//! The OpenAI Agents SDK side of live mode: `bridges/openai-agents/live.py` runs the SDK's own
//! `Runner.run` against loopsim's server, with the scenario's tools as function tools.

use loopsim_engine::budget::UNLIMITED;
use loopsim_world::scenario::Scenario;
use serde_json::{Value, json};

use crate::bridge_run::LiveOptions;

/// The bridge script, as committed in `bridges/openai-agents/live.py`.
pub const LIVE_PY: &str = include_str!("../../../bridges/openai-agents/live.py");

/// What a scenario asks of the live SDK that the bridge cannot do yet: nothing so far (what
/// the SDK cannot express at all is refused before, by `Scenario::unsupported_under`).
pub fn unsupported(_sc: &Scenario) -> Option<String> {
    None
}

/// The bridge's spec: where loopsim is, the tools, `max_turns`, the task and the later turns.
pub fn spec(sc: &Scenario, opts: &LiveOptions, server: &str) -> Value {
    let cfg = sc
        .engine_config_over(opts.profile, None, opts.config.as_deref())
        .ok();
    let max_turns = cfg.map(|c| c.max_iterations).filter(|&m| m < UNLIMITED);
    json!({
        "server": server,
        "model": sc.file.agents["parent"].model.get_ref(),
        "tools": sc.file.tools.keys().collect::<Vec<_>>(),
        "max_turns": max_turns,
        "task": crate::bridge_run::task(sc),
        "user_turns": crate::bridge_run::user_turns(sc),
        "streamed": sc.file.human.interrupt_at_s.is_some()
            || sc.file.agents.values().flat_map(|a| &a.script).any(|s| s.user_stop),
    })
}
