//! The Hermes side of live mode: `bridges/hermes/live.py`, the config.yaml it gives Hermes, and
//! what a scenario asks of live Hermes that it cannot do yet. Running the bridge is
//! [`crate::runtime_run`]'s.

use loopsim_world::engine_bridge::node_to_json;
use loopsim_world::scenario::Scenario;
use loopsim_world::user_config::UserConfig;
use serde_json::{Value, json};

/// The bridge script, as committed in `bridges/hermes/live.py`.
pub const LIVE_PY: &str = include_str!("../../../bridges/hermes/live.py");

/// What a scenario asks for that live mode cannot reproduce yet, if anything.
pub fn unsupported(sc: &Scenario) -> Option<String> {
    let parent = window_of(sc, "parent");
    sc.file
        .agents
        .iter()
        .find(|(name, _)| window_of(sc, name) != parent)
        .map(|(name, a)| {
            format!(
                "{}: agents.{name}: its model `{}` has another context window than the \
                 parent's; Hermes gives every agent of a run one window (model.context_length), \
                 so this cannot run live; run the scenario simulated",
                sc.path,
                a.model.get_ref()
            )
        })
}

/// The context window of agent `name`'s model, if the scenario gives it one.
fn window_of(sc: &Scenario, name: &str) -> Option<u64> {
    let model = sc.file.agents[name].model.get_ref();
    sc.file.models[model]
        .context_window
        .as_ref()
        .map(|w| *w.get_ref())
}

fn merge(base: &mut Value, over: &Value) {
    match (base, over) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                match b.get_mut(k) {
                    Some(slot) if slot.is_object() && v.is_object() => merge(slot, v),
                    _ => {
                        b.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (b, o) => *b = o.clone(),
    }
}

/// The config.yaml Hermes reads: the harness's keys (its model and auxiliary models at
/// loopsim, nothing that reaches the network), then the scenario's and the user's keys.
pub fn config_yaml(sc: &Scenario, user: Option<&UserConfig>, base_url: &str) -> String {
    let parent_model = sc.file.agents["parent"].model.get_ref().clone();
    let aux_model = sc
        .file
        .approval_model
        .as_ref()
        .map_or_else(|| parent_model.clone(), |m| m.get_ref().clone());
    let aux = |model: &str| json!({ "provider": "custom", "model": model, "base_url": base_url, "api_key": "loopsim" });
    let mut auxiliary = serde_json::Map::new();
    for task in [
        "vision",
        "web_extract",
        "skills_hub",
        "approval",
        "mcp",
        "title_generation",
        "memory_query_rewrite",
    ] {
        auxiliary.insert(task.into(), aux(&aux_model));
    }
    // The window: the scenario's, else one no scenario fills (a config's key wins over both).
    let window = window_of(sc, "parent").unwrap_or(1_000_000);
    // Compression summaries go to a model of their own, so the server tells them from the
    // agents' calls; its window is the run's, so Hermes probes no endpoint for it.
    let mut compression = aux(crate::live_world::COMPRESSION_MODEL);
    compression["context_length"] = json!(window);
    auxiliary.insert("compression".into(), compression);
    let mut cfg = json!({
        "model": {
            "default": parent_model,
            "provider": "custom",
            "base_url": base_url,
            "api_key": "loopsim",
            "context_length": window,
        },
        "agent": { "environment_probe": false },
        "memory": { "memory_enabled": false, "user_profile_enabled": false, "provider": "" },
        "compression": { "enabled": true },
        // The skills toolset is offered (scenarios call skill_view); its background review
        // after long turns would be a model call no scenario scripts.
        "skills": { "creation_nudge_interval": 0 },
        "approvals": { "mode": "off" },
        "security": { "tirith_enabled": false, "redact_secrets": false },
        "auxiliary": Value::Object(auxiliary),
        "sessions": { "auto_prune": false },
        "display": { "turn_completion_explainer": false, "file_mutation_verifier": false },
    });
    merge(&mut cfg, &node_to_json(&sc.config_node_over(user)));
    // JSON is YAML: Hermes's loader reads it as written.
    serde_json::to_string_pretty(&cfg).expect("json")
}

/// The bridge's spec: where loopsim is, the config, the task and the later turns.
pub fn spec(
    sc: &Scenario,
    opts: &crate::runtime_run::LiveOptions,
    server: &str,
    base_url: &str,
) -> Value {
    let background = sc.steps().any(|s| s.delegate.is_some());
    json!({
        "server": server,
        "model": sc.file.agents["parent"].model.get_ref(),
        "config_yaml": config_yaml(sc, opts.config.as_deref(), base_url),
        "platform": opts.platform.clone().or_else(|| sc.file.platform.clone()).unwrap_or_else(|| "cli".into()),
        "task": crate::runtime_run::task(sc),
        "max_background_turns": if background { 16 } else { 0 },
        "user_turns": crate::runtime_run::user_turns(sc),
        // Background children run at the dispatcher's virtual pace, so a large fan-out may still
        // be working when the turn ends: wait for each completion up to this many seconds.
        "background_wait_s": 300,
        // The bridge asks loopsim at the top of each iteration of a child's loop whether it
        // crashes there.
        "child_crashes": sc.file.agents.values().any(|a| *a.crash_probability.get_ref() > 0.0),
    })
}
