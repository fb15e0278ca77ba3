//! The OpenHands side of live mode: `bridges/openhands/live.py` runs a real OpenHands SDK
//! `Conversation` against loopsim's server, with the scenario's tools as OpenHands tools.

use loopsim_engine::json::{self, Value};
use loopsim_engine::stuck::StuckThresholds;
use loopsim_world::scenario::Scenario;

/// The bridge script, as committed in `bridges/openhands/live.py`.
pub const LIVE_PY: &str = include_str!("../../../bridges/openhands/live.py");

/// What a scenario asks of live OpenHands that the bridge cannot do: an argument whose value
/// is null (OpenHands drops such keys before the tool sees them).
pub fn unsupported(sc: &Scenario) -> Option<String> {
    let nulls = sc.calls().find(|c| {
        c.args_json.as_ref().is_some_and(|t| {
            matches!(json::parse(t.get_ref().as_bytes()),
                Ok(Value::Object(p)) if p.iter().any(|(_, v)| matches!(v, Value::Null)))
        })
    })?;
    Some(format!(
        "{}: a `{}` call with a null argument, which OpenHands drops before its tool runs",
        sc.file.name,
        nulls.tool.get_ref()
    ))
}

/// The run's stuck detector as the bridge passes it to `Conversation(...)`: `false` for none,
/// else its thresholds (`stuck_detection_thresholds`).
pub fn stuck_spec(stuck: Option<StuckThresholds>) -> serde_json::Value {
    match stuck {
        None => serde_json::Value::Bool(false),
        Some(t) => serde_json::json!({
            "action_observation": t.action_observation,
            "action_error": t.action_error,
            "monologue": t.monologue,
            "alternating_pattern": t.alternating_pattern,
        }),
    }
}
