//! The OpenAI Agents SDK side of live mode: `bridges/openai-agents/live.py` runs the SDK's own
//! `Runner.run` against loopsim's server, with the scenario's tools as function tools.

use loopsim_world::scenario::Scenario;

/// The bridge script, as committed in `bridges/openai-agents/live.py`.
pub const LIVE_PY: &str = include_str!("../../../bridges/openai-agents/live.py");

/// What a scenario asks of the live SDK that the bridge cannot do yet: nothing so far (what
/// the SDK cannot express at all is refused before, by `Scenario::unsupported_under`).
pub fn unsupported(_sc: &Scenario) -> Option<String> {
    None
}
