//! The Pydantic AI side of live mode: `bridges/pydantic-ai/live.py` drives Pydantic AI's own
//! agent graph (`Agent.iter`) against loopsim's server, with the scenario's tools as
//! `Tool.from_schema` tools.

use loopsim_world::scenario::Scenario;

/// The bridge script, as committed in `bridges/pydantic-ai/live.py`.
pub const LIVE_PY: &str = include_str!("../../../bridges/pydantic-ai/live.py");

/// What a scenario asks of live Pydantic AI that the bridge cannot do yet: nothing so far
/// (what Pydantic AI cannot express at all is refused by `Scenario::unsupported_under`).
pub fn unsupported(_sc: &Scenario) -> Option<String> {
    None
}
