//! Replies the runtime cannot run: calls of a tool that does not exist (Hermes's error results
//! and three strikes) and arguments that are not JSON (dropped and asked again, five at most),
//! in the simulation, the scenario keys checked, and the same replies through the real Hermes
//! 0.19.0 loop (`loopsim diff --live`).

use crate::common;

use common::{
    TempDir, Venv, live_identical, loopsim_in, of_kind, output_text, python_or_skip, root,
    trace_events,
};
use serde_json::Value;

fn scenario(name: &str) -> std::path::PathBuf {
    root().join("scenarios").join(format!("{name}.toml"))
}

#[test]
fn three_replies_of_unknown_tools_in_a_row_end_the_turn_without_a_summary() {
    let evs = trace_events(scenario("live-unknown-tool-strikes"), &[]);
    let calls = of_kind(&evs, "model_call");
    assert_eq!(calls.len(), 3);
    assert!(
        calls.iter().all(|c| c["detail"] == "unknown tool"),
        "{calls:?}"
    );
    // Error results go back after the first two replies only: the third ends the turn.
    let errors = of_kind(&evs, "tool_error");
    let at: Vec<u64> = errors.iter().map(|e| e["call"].as_u64().unwrap()).collect();
    assert_eq!(at, [1, 2]);
    assert!(errors.iter().all(|e| e["tool"] == "hallucinated_call"));
    assert!(of_kind(&evs, "tool_call").is_empty(), "nothing ran");
    assert!(of_kind(&evs, "summary_call").is_empty(), "no summary call");
    let end = of_kind(&evs, "turn_end")[0];
    assert_eq!(end["detail"], "invalid_tool_call");
    assert_eq!(end["budget_used"], 3, "each reply is an iteration");
}

#[test]
fn a_reply_of_real_tools_starts_the_count_over_and_every_step_still_runs() {
    let evs = trace_events(scenario("live-unknown-tools"), &[]);
    let calls = of_kind(&evs, "model_call");
    let unknown: Vec<bool> = calls
        .iter()
        .map(|c| c["detail"] == "unknown tool")
        .collect();
    // This seed strikes twice in a row (the two-call first step, both times), never three.
    assert!(unknown.windows(2).any(|w| w[0] && w[1]), "{unknown:?}");
    assert!(!unknown.windows(3).any(|w| w.iter().all(|&u| u)));
    // One error result per call of each unknown reply: the first step has two calls.
    let errors = of_kind(&evs, "tool_error").len();
    assert!(errors > unknown.iter().filter(|&&u| u).count(), "{errors}");
    // The script's seven calls all ran, after the strikes, and the answer came.
    assert_eq!(of_kind(&evs, "tool_call").len(), 7);
    let end = of_kind(&evs, "turn_end")[0];
    assert_eq!(end["detail"], "text_response(finish_reason=stop)");
    assert_eq!(end["budget_used"].as_u64(), Some(calls.len() as u64));
}

#[test]
fn a_mixed_batch_runs_its_real_calls_errors_the_unknown_one_and_starts_the_strikes_over() {
    let evs = trace_events(scenario("live-unknown-tool-in-batch"), &[]);
    let calls = of_kind(&evs, "model_call");
    let kinds: String = calls
        .iter()
        .map(|c| match c["detail"].as_str() {
            Some("unknown tool") => 'U',
            Some("unknown tool in batch") => 'M',
            _ => 'o',
        })
        .collect();
    // Seed 38: two strikes (calls 5 and 6), a mixed batch (7), then another reply of only
    // unknown tools (8). Were the mixed batch a strike, or no reset, call 8 would be the
    // third and end the turn.
    assert_eq!(&kinds[4..8], "UUMU", "{kinds}");
    assert!(!kinds.contains("UUU"), "{kinds}");
    let end = of_kind(&evs, "turn_end")[0];
    assert_eq!(end["detail"], "text_response(finish_reason=stop)");
    // Every step of the script ran (2 + 8 calls), the mixed batches' real calls among them.
    assert_eq!(of_kind(&evs, "tool_call").len(), 10);
    // One error result per mixed batch, traced after its round's real calls and before the
    // next model call, where the runtime's next request carries it.
    for (i, c) in calls.iter().enumerate() {
        if c["detail"] != "unknown tool in batch" {
            continue;
        }
        let n = c["call"].as_u64().unwrap();
        let at = evs.iter().position(|e| std::ptr::eq(e, *c)).unwrap();
        let next = calls
            .get(i + 1)
            .map(|x| evs.iter().position(|e| std::ptr::eq(e, *x)).unwrap());
        let between = &evs[at + 1..next.unwrap_or(evs.len())];
        let ran = between.iter().filter(|e| e["kind"] == "tool_call").count();
        let errors: Vec<&Value> = between
            .iter()
            .filter(|e| e["kind"] == "tool_error")
            .collect();
        assert!(ran >= 1, "call {n}: the step's real calls run");
        assert_eq!(errors.len(), 1, "call {n}");
        assert_eq!(errors[0]["call"].as_u64(), Some(n));
        assert_eq!(errors[0]["tool"], "hallucinated_call");
        let last_run = between
            .iter()
            .rposition(|e| e["kind"] == "tool_call")
            .unwrap();
        let err_at = between
            .iter()
            .position(|e| e["kind"] == "tool_error")
            .unwrap();
        assert!(err_at > last_run, "call {n}");
    }
    assert!(kinds.matches('M').count() >= 3, "{kinds}");
}

#[test]
fn the_real_hermes_loop_runs_mixed_batches_as_the_simulation_does() {
    let Some(py) = python_or_skip(Venv::HermesLive, "mixed batches live") else {
        return;
    };
    let runtime = format!("hermes={}", py.display());
    // Seed 38 is the live suite's; seed 2 gives up on three unknown replies after mixed
    // batches; seed 20 strikes twice right before a mixed batch.
    for seed in ["2", "20"] {
        let v = live_identical(
            &runtime,
            std::path::Path::new("scenarios/live-unknown-tool-in-batch.toml"),
            seed,
        );
        assert!(v["compared_events"]["live"].as_u64().unwrap() >= 25, "{v}");
    }
}

#[test]
fn a_zero_rate_keeps_every_draw_of_the_scenario_without_it() {
    let t = TempDir::new("unknown-tools-zero");
    let text = std::fs::read_to_string(scenario("live-unknown-tools")).unwrap();
    let write = |name: &str, faults: &str| {
        let p = t.join(name);
        std::fs::write(&p, text.replace("faults = { unknown_tool = 0.35 }", faults)).unwrap();
        p
    };
    let zero = write("zero.toml", "faults = { unknown_tool = 0.0 }");
    let none = write("none.toml", "");
    // The header and the end line name the scenario's own hash; the events between agree.
    let body = |evs: Vec<Value>| {
        let n = evs.len();
        evs.into_iter().take(n - 1).skip(1).collect::<Vec<_>>()
    };
    let (a, b) = (
        body(trace_events(&zero, &[])),
        body(trace_events(&none, &[])),
    );
    assert_eq!(a, b);
    assert!(of_kind(&a, "tool_error").is_empty());
}

#[test]
fn the_key_is_checked_and_other_runtimes_refuse_the_fault() {
    let t = TempDir::new("unknown-tools-keys");
    let text = std::fs::read_to_string(scenario("live-unknown-tool-strikes")).unwrap();
    let cases = [
        (
            "faults = { unknown_tool = 1.5 }",
            "hermes-0.19.0",
            "",
            vec!["s.toml:", "models.main.faults.unknown_tool", "probability"],
        ),
        (
            "faults = { unknown_tol = 0.5 }",
            "hermes-0.19.0",
            "",
            vec!["unknown_tol", "unknown_tool"],
        ),
        (
            "faults = { unknown_tool = 0.5 }",
            "hermes-0.19.0",
            "[tools.Hallucinated-Call]\nlatency_s = 0.1\n",
            vec![
                "models.main.faults.unknown_tool",
                "too close to tool `Hallucinated-Call`",
            ],
        ),
        (
            "faults = { unknown_tool = 0.5 }",
            "openai-agents-0.24",
            "",
            vec!["calls tools that do not exist", "cannot express"],
        ),
        (
            "faults = { unknown_tool = 0.5 }",
            "article-2026-06",
            "",
            vec!["calls tools that do not exist", "cannot express"],
        ),
        (
            "faults = { malformed_args = -0.1 }",
            "hermes-0.19.0",
            "",
            vec!["models.main.faults.malformed_args", "probability"],
        ),
        (
            "faults = { unknown_tool = 0.6, malformed_args = 0.6 }",
            "hermes-0.19.0",
            "",
            vec!["models.main.faults.malformed_args", "more than 1"],
        ),
        (
            "faults = { malformed_args = 0.5 }",
            "pydantic-ai-2.68",
            "",
            vec!["sends arguments that are not JSON", "cannot express"],
        ),
        (
            "faults = { unknown_tool_in_batch = 1.5 }",
            "hermes-0.19.0",
            "",
            vec!["models.main.faults.unknown_tool_in_batch", "probability"],
        ),
        (
            "faults = { unknown_tool = 0.5, unknown_tool_in_batch = 0.6 }",
            "hermes-0.19.0",
            "",
            vec![
                "unknown_tool, malformed_args and unknown_tool_in_batch add up to 1.1",
                "more than 1",
            ],
        ),
        (
            "faults = { unknown_tool_in_batch = 0.5 }",
            "hermes-0.19.0",
            "[tools.Hallucinated-Call]\nlatency_s = 0.1\n",
            vec!["too close to tool `Hallucinated-Call`"],
        ),
        (
            "faults = { unknown_tool_in_batch = 0.5 }",
            "langgraph-1.2",
            "",
            vec![
                "models.main.faults.unknown_tool_in_batch",
                "beside real ones",
                "cannot express",
            ],
        ),
        (
            "faults = { unknown_tool_in_batch = 0.5 }",
            "react-loop-article",
            "",
            vec!["beside real ones", "cannot express"],
        ),
    ];
    for (faults, profile, extra_tool, wants) in cases {
        let body = text
            .replace("faults = { unknown_tool = 1.0 }", faults)
            .replace(
                "profile = \"hermes-0.19.0\"",
                &format!("profile = \"{profile}\""),
            )
            .replace("[agents.parent]", &format!("{extra_tool}[agents.parent]"));
        let p = t.join("s.toml");
        std::fs::write(&p, body).unwrap();
        let o = loopsim_in(
            &root(),
            &[
                "run",
                p.to_str().unwrap(),
                "--out",
                t.join("out").to_str().unwrap(),
            ],
        );
        let out = output_text(&o);
        assert_eq!(o.status.code(), Some(2), "{faults} under {profile}: {out}");
        for w in wants {
            assert!(out.contains(w), "{faults} under {profile}: `{w}` in {out}");
        }
        assert!(!t.join("out").exists(), "no output on an error");
    }
}

#[test]
fn the_real_hermes_loop_rejects_unknown_tools_as_the_simulation_does_on_other_seeds() {
    let Some(py) = python_or_skip(Venv::HermesLive, "unknown tools live") else {
        return;
    };
    let runtime = format!("hermes={}", py.display());
    // Seed 10 strikes the two-call step once and later steps four times; seed 18 strikes
    // twice in a row late in the script.
    for seed in ["10", "18"] {
        let v = live_identical(
            &runtime,
            std::path::Path::new("scenarios/live-unknown-tools.toml"),
            seed,
        );
        assert!(v["compared_events"]["live"].as_u64().unwrap() >= 20, "{v}");
    }
}

#[test]
fn explore_s_seeded_sites_switch_unknown_tools_on_for_some_seeds() {
    // Seeds 0..16 of an 80-search loop: some meet an unknown tool (seed 15 three times in a
    // row), the rest keep their runs without one.
    let flood = scenario("web-search-flood");
    let mut met = 0;
    let mut gave_up = false;
    for seed in 0..16u64 {
        let s = seed.to_string();
        let evs = trace_events(&flood, &["--seed", &s, "--seeded-faults"]);
        if !of_kind(&evs, "tool_error").is_empty() || gave_up_in(&evs) {
            met += 1;
        }
        gave_up |= gave_up_in(&evs);
    }
    assert!(
        (1..16).contains(&met),
        "{met} of 16 seeds met an unknown tool"
    );
    assert!(gave_up, "no seed ended invalid_tool_call");
}

fn gave_up_in(evs: &[Value]) -> bool {
    of_kind(evs, "turn_end")
        .iter()
        .any(|e| e["detail"] == "invalid_tool_call")
}

#[test]
fn five_malformed_replies_in_one_iteration_end_the_turn_billed_but_spending_one_iteration() {
    let evs = trace_events(scenario("live-malformed-args-exhausted"), &[]);
    let calls = of_kind(&evs, "model_call");
    assert_eq!(calls.len(), 5);
    assert!(calls.iter().all(|c| c["detail"] == "malformed arguments"));
    // Each asked again as soon as the last is back: 2 s apart.
    let t: Vec<u64> = calls.iter().map(|c| c["t_us"].as_u64().unwrap()).collect();
    assert_eq!(t, [0, 2_000_000, 4_000_000, 6_000_000, 8_000_000]);
    assert!(calls.iter().all(|c| c["budget_used"] == 1), "one iteration");
    assert!(of_kind(&evs, "tool_call").is_empty());
    assert!(of_kind(&evs, "summary_call").is_empty());
    let end = of_kind(&evs, "turn_end")[0];
    assert_eq!(end["detail"], "truncated_tool_call");
    assert_eq!(end["budget_used"], 1);
    let footer = evs.last().unwrap();
    assert_eq!(
        footer["summary"]["total"]["model_calls"], 5,
        "every reply billed"
    );
}

#[test]
fn malformed_replies_spend_no_iteration_and_the_task_still_finishes() {
    let evs = trace_events(scenario("live-malformed-args"), &["--seed", "25"]);
    let calls = of_kind(&evs, "model_call");
    let dropped = calls
        .iter()
        .filter(|c| c["detail"] == "malformed arguments")
        .count();
    assert!(dropped >= 5, "seed 25 drops {dropped}");
    // Seven iterations whatever was dropped: the two-call step, five reads, the answer.
    let end = of_kind(&evs, "turn_end")[0];
    assert_eq!(end["detail"], "text_response(finish_reason=stop)");
    assert_eq!(end["budget_used"], 7);
    assert_eq!(calls.len(), 7 + dropped);
    assert_eq!(of_kind(&evs, "tool_call").len(), 7);
}

/// `live-malformed-args` with server errors as well (0.35 of the attempts, 0.1 s each).
fn with_server_errors(t: &TempDir) -> std::path::PathBuf {
    let text = std::fs::read_to_string(scenario("live-malformed-args"))
        .unwrap()
        .replace(
            "faults = { malformed_args = 0.3 }",
            "faults = { malformed_args = 0.3, server_error = 0.35, latency_s = 0.1 }",
        );
    let p = t.join("mixed.toml");
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn a_dropped_reply_does_not_give_the_provider_retries_back() {
    // Seed 7: a 500, a 500, a dropped reply, a 500: the call's third failed attempt ends it.
    let t = TempDir::new("invalid-calls-mixed");
    let evs = trace_events(with_server_errors(&t), &["--seed", "7"]);
    let seq: Vec<&str> = evs
        .iter()
        .filter_map(|e| match e["kind"].as_str()? {
            "model_error" => Some("error"),
            "model_call" => Some("dropped"),
            "turn_end" => e["detail"].as_str(),
            _ => None,
        })
        .collect();
    assert_eq!(
        seq,
        [
            "error",
            "error",
            "dropped",
            "error",
            "api_call_failed(server_error)"
        ]
    );
    let details: Vec<&str> = of_kind(&evs, "model_error")
        .iter()
        .map(|e| e["detail"].as_str().unwrap())
        .collect();
    assert_eq!(details[2], "server_error (HTTP 500), attempt 3 of 3");
}

#[test]
fn the_real_hermes_loop_drops_malformed_replies_as_the_simulation_does() {
    let Some(py) = python_or_skip(Venv::HermesLive, "malformed arguments live") else {
        return;
    };
    let runtime = format!("hermes={}", py.display());
    let t = TempDir::new("invalid-calls-mixed-live");
    let mixed = with_server_errors(&t);
    // Seed 25 drops ten replies; the mixed scenario's seed 7 ends on the provider's third
    // error after a dropped reply, seed 15 after two.
    let cases = [
        (scenario("live-malformed-args"), "25"),
        (mixed.clone(), "7"),
        (mixed, "15"),
    ];
    for (path, seed) in cases {
        live_identical(&runtime, &path, seed);
    }
}
