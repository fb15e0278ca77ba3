use loopsim_engine::profile::{Profile, ProfileName};
use loopsim_world::scenario::Scenario;

use super::*;

fn world(text: &str) -> LiveWorld {
    let sc: &'static Scenario = Box::leak(Box::new(Scenario::parse(text, "t.toml").unwrap()));
    LiveWorld::new(sc, 1, &Profile::get(ProfileName::Hermes0_19_0).guardrails)
}

const SCENARIO: &str = r#"
name = "t"
description = "d"
provenance = "p"
profile = "hermes-0.19.0"
approval_model = "aux"
[models.m]
latency_s = 2.0
output_tokens = 50
[models.aux]
latency_s = 1.0
output_tokens = 5
input_tokens = 100
[tools.read_file]
latency_s = 10.0
result_tokens = 40
[tools.terminal]
latency_s = 1.0
result_tokens = 30
[agents.parent]
model = "m"
context_tokens = 1000
script = [
  { calls = [{ tool = "read_file", args = { path = "a" } }, { tool = "terminal", args = { command = "x" } }] },
  { delegate = "w", tasks = 2 },
  { answer = "done" },
]
[agents.w]
model = "m"
context_tokens = 500
script = [{ answer = "w done" }]
[human]
interrupt_at_s = 11
"#;

fn req(v: serde_json::Value) -> ChatRequest {
    ChatRequest::parse(v.to_string().as_bytes()).unwrap()
}

fn user(text: &str) -> serde_json::Value {
    serde_json::json!({"role": "user", "content": text})
}

#[test]
fn a_round_reads_what_ran_and_what_was_refused() {
    let mut w = world(SCENARIO);
    let tools = serde_json::json!([{"type": "function"}]);
    let first = req(
        serde_json::json!({"model": "m", "tools": tools, "messages": [user("go (loopsim scenario t)")]}),
    );
    let r = w.chat(&first).unwrap();
    assert_eq!((r.prompt_tokens, r.tool_calls.len()), (1000, 2));
    let (read, term) = (r.tool_calls[0].id.clone(), r.tool_calls[1].id.clone());
    // The read runs; its clock crosses the user's stop at 11 s (2 s reply + 10 s read).
    let a = w
        .tool(
            &read,
            "read_file",
            &json::parse(br#"{"path":"a"}"#).unwrap(),
        )
        .unwrap();
    assert!(a.interrupt);
    assert!(matches!(
        w.tool(&term, "read_file", &Value::Object(vec![])),
        Err(LiveError::WrongTool { .. })
    ));
    // The terminal call was refused (echoed, never run): its short result joins the context.
    let second = req(
        serde_json::json!({"model": "m", "tools": tools, "messages": [
            user("go (loopsim scenario t)"),
            {"role": "assistant", "content": "", "tool_calls": [{"id": read}, {"id": term}]},
            {"role": "tool", "tool_call_id": read, "content": "{}"},
            {"role": "tool", "tool_call_id": term, "content": "{\"error\": \"blocked\"}"},
        ]}),
    );
    let r = w.chat(&second).unwrap();
    assert_eq!(r.prompt_tokens, 1000 + 50 + 40 + REFUSED_TOKENS);
    assert_eq!(r.tool_calls[0].name, "delegate_task");
    assert!(r.tool_calls[0].arguments.contains("[loopsim agent w#2]"));
    // A request without tools is the summary call: no new turn.
    let summary = req(
        serde_json::json!({"model": "m", "messages": [user("go (loopsim scenario t)"), user("sum up")]}),
    );
    assert_eq!(
        w.chat(&summary).unwrap().content,
        "Summary of the work so far."
    );
    let kinds: Vec<EventKind> = w.events().iter().map(|e| e.kind).collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == EventKind::TurnStart).count(),
        1,
        "{kinds:?}"
    );
    assert!(kinds.contains(&EventKind::Interrupt));
}

const REFUSED_TOKENS: u64 = loopsim_world::script::REFUSED_RESULT_TOKENS;

#[test]
fn children_are_known_by_their_tags_and_only_when_delegated() {
    let mut w = world(SCENARIO);
    let tools = serde_json::json!([{"type": "function"}]);
    let stranger = req(
        serde_json::json!({"model": "m", "tools": tools, "messages": [user("x [loopsim agent w#1]")]}),
    );
    assert_eq!(
        w.chat(&stranger).unwrap_err(),
        LiveError::UnknownAgent("w#1".into())
    );
    // The approval model is told apart by its name and costs nothing here.
    let approval = req(serde_json::json!({"model": "aux", "messages": [user("ok?")]}));
    assert!(w.is_approval(&approval));
    assert_eq!(w.chat(&approval).unwrap().content, "APPROVE");
}

#[test]
fn events_come_out_by_time_then_name_whatever_order_they_arrived_in() {
    let mut w = world(SCENARIO);
    for name in ["b", "a", "c"] {
        w.push_event(Event::new(5, name.into(), EventKind::Decision));
    }
    let order: Vec<String> = w.take_events().into_iter().map(|e| e.agent).collect();
    assert_eq!(order, ["a", "b", "c"]);
}

#[test]
fn a_call_the_runtime_dropped_from_the_reply_adds_nothing() {
    let mut w = world(SCENARIO);
    let tools = serde_json::json!([{"type": "function"}]);
    let first = req(
        serde_json::json!({"model": "m", "tools": tools, "messages": [user("go (loopsim scenario t)")]}),
    );
    let r = w.chat(&first).unwrap();
    let read = r.tool_calls[0].id.clone();
    w.tool(
        &read,
        "read_file",
        &json::parse(br#"{"path":"a"}"#).unwrap(),
    )
    .unwrap();
    // The echoed reply keeps only the read: the terminal call never was, for the runtime.
    let second = req(
        serde_json::json!({"model": "m", "tools": tools, "messages": [
            user("go (loopsim scenario t)"),
            {"role": "assistant", "content": "", "tool_calls": [{"id": read}]},
            {"role": "tool", "tool_call_id": read, "content": "{}"},
        ]}),
    );
    assert_eq!(w.chat(&second).unwrap().prompt_tokens, 1000 + 50 + 40);
}
