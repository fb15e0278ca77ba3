//! The smolagents side of live mode: `bridges/smolagents/live.py` runs a real
//! `ToolCallingAgent` against loopsim's server, with the scenario's tools as smolagents
//! `Tool`s.
//!
//! smolagents speaks to the model differently from the other runtimes, and the live world
//! follows it ([`crate::live_world::LiveWorld::for_runtime`]): the model answers by calling the
//! `final_answer` tool, tool results come back as a user message without call ids, and a
//! tool is not told its call's id (the bridge's tools ask for their result by tool and
//! arguments, which the world matches to the call it issued).

use std::collections::{BTreeMap, BTreeSet};

use loopsim_engine::json::{self, Value};
use loopsim_world::scenario::{CallSpec, Scenario};

/// The bridge script, as committed in `bridges/smolagents/live.py`.
pub const LIVE_PY: &str = include_str!("../../../bridges/smolagents/live.py");

/// The arguments a scripted call passes, as an object's keys; `None` for arguments that are
/// not an object.
fn arg_names(c: &CallSpec) -> Option<Vec<String>> {
    let mut names: Vec<String> = match &c.args_json {
        Some(text) => match json::parse(text.get_ref().as_bytes()) {
            Ok(Value::Object(pairs)) => pairs
                .iter()
                .map(|(k, _)| String::from_utf8_lossy(k).into_owned())
                .collect(),
            _ => return None,
        },
        None => c.args.keys().cloned().collect(),
    };
    if c.distinct {
        names.push("n".into());
    }
    Some(names)
}

/// Each tool's argument names over all the scenario's calls. smolagents checks a call's
/// arguments against its tool's declared inputs, so each fake tool declares every name the
/// scripted model passes it (any type, each optional).
pub fn tool_inputs(sc: &Scenario) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = sc
        .file
        .tools
        .keys()
        .map(|t| (t.clone(), BTreeSet::new()))
        .collect();
    for c in sc.calls() {
        let names = arg_names(c).unwrap_or_default();
        out.entry(c.tool.get_ref().clone())
            .or_default()
            .extend(names);
    }
    out
}

/// What a scenario asks of live smolagents that the bridge cannot do: arguments that are not
/// an object (smolagents passes a tool its arguments by name), or a tool of its own named
/// `final_answer` (the name smolagents keeps for the answer).
pub fn unsupported(sc: &Scenario) -> Option<String> {
    if sc.file.tools.contains_key("final_answer") {
        return Some(format!(
            "{}: a tool named `final_answer`, the name smolagents keeps for its answer tool",
            sc.file.name
        ));
    }
    let odd = sc.calls().find(|c| arg_names(c).is_none())?;
    Some(format!(
        "{}: a `{}` call whose arguments are not an object, which a smolagents tool cannot \
         take (it passes arguments by name)",
        sc.file.name,
        odd.tool.get_ref()
    ))
}
