//! Live mode: scenarios through the real Hermes 0.19.0 loop (hermes-agent from PyPI with its
//! dependencies, installed into target/hermes-live-venv), compared with their simulation; and
//! `loopsim serve` spoken to over HTTP, with the failures a runtime can cause.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};

use common::{TempDir, Venv, loopsim_in, loopsim_with_env, output_text, python_or_skip, root};

/// scenarios/README.md's live table: (scenario, status, reason).
fn live_table() -> Vec<(String, String, String)> {
    table_under("Hermes 0.19.0")
}

/// The live table of scenarios/README.md's section `## Live under RUNTIME`.
fn table_under(runtime: &str) -> Vec<(String, String, String)> {
    let text = std::fs::read_to_string(root().join("scenarios/README.md")).unwrap();
    let heading = format!("\n## Live under {runtime}");
    let section = text
        .split(heading.as_str())
        .nth(1)
        .unwrap_or_else(|| panic!("scenarios/README.md has a `{}` section", heading.trim()));
    let section = section.split("\n## ").next().unwrap();
    section
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split('|').map(str::trim).collect();
            (
                cells[0].trim_matches('`').to_string(),
                cells[1].to_string(),
                cells.get(2).unwrap_or(&"").to_string(),
            )
        })
        .collect()
}

#[test]
fn every_scenario_has_a_live_status_and_a_reason_when_it_is_not_identical() {
    let table = live_table();
    for f in common::scenario_files() {
        let name = f.file_stem().unwrap().to_str().unwrap().to_string();
        let rows: Vec<_> = table.iter().filter(|r| r.0 == name).collect();
        assert_eq!(rows.len(), 1, "{name}: one row in the live table");
        let (_, status, reason) = rows[0];
        assert!(
            ["identical", "diverges", "not live-runnable"].contains(&status.as_str()),
            "{name}: unknown status {status}"
        );
        if status != "identical" {
            assert!(reason.len() > 20, "{name}: {status} needs its reason");
        }
    }
    let identical = table.iter().filter(|r| r.1 == "identical").count();
    assert!(identical >= 47, "only {identical} scenarios run live");
}

#[test]
fn the_live_suite_matches_its_simulation_event_for_event() {
    let Some(py) = python_or_skip(Venv::HermesLive, "the live suite") else {
        return;
    };
    let runtime = format!("hermes={}", py.display());
    let mut failures = Vec::new();
    let mut compared = 0;
    for (name, status, _) in live_table() {
        if status != "identical" {
            continue;
        }
        let path = format!("scenarios/{name}.toml");
        let o = loopsim_in(
            &root(),
            &["diff", &path, "--live", &runtime, "--format", "json"],
        );
        let text = output_text(&o);
        if o.status.code() != Some(0) {
            failures.push(format!("{name}: {text}"));
            continue;
        }
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["identical"], true, "{name}");
        let (s, l) = (
            v["compared_events"]["simulated"].as_u64().unwrap(),
            v["compared_events"]["live"].as_u64().unwrap(),
        );
        assert_eq!(s, l, "{name}: as many events on both sides");
        assert!(l >= 2, "{name}: only {l} events compared");
        compared += l;
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(compared > 2000, "{compared} events compared in all");
}

/// An agent SDK with a live bridge: its table's heading, profile, `--live` name, package
/// version, and the exception its cap raises.
struct Sdk {
    heading: &'static str,
    profile: &'static str,
    runtime: &'static str,
    version: &'static str,
    cap_raises: &'static str,
    cap: usize,
}

const OPENAI_AGENTS: Sdk = Sdk {
    heading: "the OpenAI Agents SDK 0.24.0",
    profile: "openai-agents-0.24",
    runtime: "openai-agents",
    version: "0.24.0",
    cap_raises: "raised(MaxTurnsExceeded)",
    cap: 10,
};

const PYDANTIC_AI: Sdk = Sdk {
    heading: "Pydantic AI 2.68.0",
    profile: "pydantic-ai-2.68",
    runtime: "pydantic-ai",
    version: "2.68.0",
    cap_raises: "raised(UsageLimitExceeded)",
    cap: 50,
};

const LANGGRAPH: Sdk = Sdk {
    heading: "LangGraph 1.2.22",
    profile: "langgraph-1.2",
    runtime: "langgraph",
    version: "1.2.22",
    cap_raises: "raised(GraphRecursionError)",
    cap: 5000,
};

const SMOLAGENTS: Sdk = Sdk {
    heading: "smolagents 1.26.0",
    profile: "smolagents-1.26",
    runtime: "smolagents",
    version: "1.26.0",
    cap_raises: "max_steps_error",
    cap: 20,
};

const OPENHANDS: Sdk = Sdk {
    heading: "OpenHands SDK 1.58.2",
    profile: "openhands-sdk-1.58",
    runtime: "openhands",
    version: "1.58.2",
    cap_raises: "conversation_error(MaxIterationsReached)",
    cap: 500,
};

/// Every scenario has a row in the SDK's live table, and a scenario is `not expressible`
/// exactly when the simulation refuses it under the SDK's profile, for the table's reason.
fn every_scenario_has_a_status_under(sdk: &Sdk, min_identical: usize) {
    let table = table_under(sdk.heading);
    for f in common::scenario_files() {
        let name = f.file_stem().unwrap().to_str().unwrap().to_string();
        let rows: Vec<_> = table.iter().filter(|r| r.0 == name).collect();
        assert_eq!(
            rows.len(),
            1,
            "{name}: one row in the {} table",
            sdk.heading
        );
        let (_, status, reason) = rows[0];
        let t = TempDir::new(&format!("table-{}-{name}", sdk.runtime));
        let o = loopsim_in(
            &root(),
            &[
                "run",
                f.to_str().unwrap(),
                "--profile",
                sdk.profile,
                "--out",
                t.to_str().unwrap(),
                "-q",
            ],
        );
        match status.as_str() {
            "identical" => assert_eq!(o.status.code(), Some(0), "{name}: {}", output_text(&o)),
            // Expressible, but too many calls to run live on every CI run: the reason says
            // where its mechanism is proved instead.
            "too long live" => {
                assert_eq!(o.status.code(), Some(0), "{name}: {}", output_text(&o));
                assert!(reason.contains("proved live on"), "{name}: {reason}");
            }
            "not expressible" => {
                assert_eq!(o.status.code(), Some(2), "{name}");
                let text = output_text(&o);
                assert!(
                    text.contains(reason.as_str()) && text.contains("cannot express"),
                    "{name}: the table's reason `{reason}` is the simulation's: {text}"
                );
            }
            other => panic!("{name}: unknown status {other}"),
        }
    }
    let identical = table.iter().filter(|r| r.1 == "identical").count();
    assert!(
        identical >= min_identical,
        "only {identical} scenarios run live under {}",
        sdk.heading
    );
}

#[test]
fn every_scenario_has_a_status_under_each_agent_sdk() {
    every_scenario_has_a_status_under(&OPENAI_AGENTS, 31);
    every_scenario_has_a_status_under(&PYDANTIC_AI, 31);
    every_scenario_has_a_status_under(&LANGGRAPH, 30);
    every_scenario_has_a_status_under(&SMOLAGENTS, 31);
    every_scenario_has_a_status_under(&OPENHANDS, 30);
}

/// The SDK's live suite: every `identical` scenario of its table through its real loop,
/// compared with the simulation event for event; returns how many runs its cap ended.
fn live_suite_under(sdk: &Sdk, py: &Path) -> usize {
    let runtime = format!("{}={}", sdk.runtime, py.display());
    let mut failures = Vec::new();
    let mut compared = 0;
    let mut capped = 0;
    for (name, status, _) in table_under(sdk.heading) {
        if status != "identical" {
            continue;
        }
        let path = format!("scenarios/{name}.toml");
        let t = TempDir::new(&format!("live-{}-{name}", sdk.runtime));
        let o = loopsim_in(
            &root(),
            &[
                "live",
                &path,
                "--runtime",
                &runtime,
                "--out",
                t.to_str().unwrap(),
            ],
        );
        if o.status.code() != Some(0) {
            failures.push(format!("{name}: {}", output_text(&o)));
            continue;
        }
        let read = |f: &str| std::fs::read_to_string(t.join(f)).unwrap();
        let v: serde_json::Value = serde_json::from_str(&read("summary.json")).unwrap();
        if v["identical"] != true {
            failures.push(format!("{name}: {}", v["first_divergence"]));
            continue;
        }
        assert_eq!(v["compared_under"], sdk.profile, "{name}");
        assert_eq!(
            v["runtime"],
            format!("{} {}", sdk.runtime, sdk.version),
            "{name}"
        );
        let (s, l) = (
            v["compared_events"]["simulated"].as_u64().unwrap(),
            v["compared_events"]["live"].as_u64().unwrap(),
        );
        assert_eq!(s, l, "{name}: as many events on both sides");
        assert!(l >= 2, "{name}: only {l} events compared");
        compared += l;
        // The runs the runtime's cap ended, as its bridge saw them.
        let turns = v["parent_turns"].as_array().unwrap();
        if turns.iter().any(|t| t == sdk.cap_raises) {
            capped += 1;
            let calls = read("trace.jsonl")
                .matches(r#""kind":"model_call""#)
                .count();
            assert!(
                calls >= sdk.cap,
                "{name}: {calls} model calls before the cap"
            );
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(compared > 400, "{compared} events compared in all");
    capped
}

#[test]
fn the_openai_agents_live_suite_matches_its_simulation_event_for_event() {
    let Some(py) = python_or_skip(Venv::OpenAiAgents, "the OpenAI Agents SDK live suite") else {
        return;
    };
    let capped = live_suite_under(&OPENAI_AGENTS, &py);
    assert!(capped >= 20, "only {capped} runs reached max_turns");
    // error_handlers["max_turns"]: the handler's final output at the cap, no further call;
    // through Runner.run and, for a scenario whose user stops, Runner.run_streamed.
    let handled = "max_turns: 5\nerror_handlers:\n  max_turns: true\n";
    settings_runs_match(
        "openai-agents",
        &py,
        &[
            ("two-call-cycle", handled, "max_turns_handled", 5),
            ("live-user-stop", handled, "max_turns_handled", 5),
        ],
    );
}

#[test]
fn the_langgraph_live_suite_matches_its_simulation_event_for_event() {
    let Some(py) = python_or_skip(Venv::LangGraph, "the LangGraph live suite") else {
        return;
    };
    // create_agent's limit of 9,999 steps is never reached by the suite.
    assert_eq!(live_suite_under(&LANGGRAPH, &py), 0);
    // The limits users set: an even one ends after its last call's tools, an odd one drops the
    // last call's reply; each with the model call count the graph's steps allow. Then
    // LangChain's call-limit middleware, each exit_behavior, alone, together and under a
    // recursion limit (each hook is a step; a reply whose calls are all blocked has no tools
    // step, so 25 steps allow 11 calls, not 9).
    const GRE: &str = "raised(GraphRecursionError)";
    let mcl = "model_call_limit:\n  run_limit: 4\n";
    settings_runs_match(
        "langgraph",
        &py,
        &[
            ("two-call-cycle", "recursion_limit: 24\n", GRE, 12),
            ("two-call-cycle", "recursion_limit: 25\n", GRE, 13),
            ("two-call-cycle", "recursion_limit: 7\n", GRE, 4),
            ("two-call-cycle", mcl, "model_call_limit_reached", 4),
            (
                "two-call-cycle",
                "model_call_limit:\n  thread_limit: 4\n  exit_behavior: error\n",
                "raised(ModelCallLimitExceededError)",
                4,
            ),
            (
                "two-call-cycle",
                "tool_call_limit:\n  run_limit: 3\n  exit_behavior: end\n",
                "tool_call_limit_reached",
                2,
            ),
            (
                "two-call-cycle",
                "tool_call_limit:\n  run_limit: 3\n  exit_behavior: error\n",
                "raised(ToolCallLimitExceededError)",
                2,
            ),
            (
                "two-call-cycle",
                "model_call_limit:\n  run_limit: 4\ntool_call_limit:\n  run_limit: 2\n",
                "model_call_limit_reached",
                4,
            ),
            (
                "two-call-cycle",
                "recursion_limit: 10\ntool_call_limit:\n  tool_name: terminal\n  run_limit: 1\n",
                GRE,
                4,
            ),
            (
                "incident-112535-identical-terminal",
                "recursion_limit: 25\ntool_call_limit:\n  run_limit: 3\n",
                GRE,
                11,
            ),
            (
                "two-call-cycle",
                "recursion_limit: 9\nmodel_call_limit:\n  run_limit: 2\n",
                GRE,
                2,
            ),
        ],
    );
}

/// Runs each `(scenario, settings, exit, model calls)` live under `runtime` with the settings
/// as `--config`, and checks that the run is identical to its simulation, ends the first turn
/// with `exit` and makes that many model calls. Returns the live traces.
fn settings_runs_match(
    runtime: &str,
    py: &Path,
    cases: &[(&str, &str, &str, usize)],
) -> Vec<String> {
    let t = TempDir::new(&format!("live-{runtime}-settings"));
    let mut traces = Vec::new();
    for (k, (scenario, settings, exit, calls)) in cases.iter().enumerate() {
        let cfg = t.join(format!("c{k}.yaml"));
        std::fs::write(&cfg, settings).unwrap();
        let out = t.join(format!("r{k}"));
        let o = loopsim_in(
            &root(),
            &[
                "live",
                &format!("scenarios/{scenario}.toml"),
                "--runtime",
                &format!("{runtime}={}", py.display()),
                "--config",
                cfg.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ],
        );
        let case = format!("{scenario} with {settings:?}");
        assert_eq!(o.status.code(), Some(0), "{case}: {}", output_text(&o));
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap())
                .unwrap();
        assert_eq!(v["identical"], true, "{case}: {}", v["first_divergence"]);
        assert_eq!(v["parent_turns"][0], *exit, "{case}");
        let trace = std::fs::read_to_string(out.join("trace.jsonl")).unwrap();
        assert_eq!(
            trace.matches(r#""kind":"model_call""#).count(),
            *calls,
            "{case}"
        );
        traces.push(trace);
    }
    traces
}

#[test]
fn the_smolagents_live_suite_matches_its_simulation_event_for_event() {
    let Some(py) = python_or_skip(Venv::Smolagents, "the smolagents live suite") else {
        return;
    };
    let capped = live_suite_under(&SMOLAGENTS, &py);
    assert!(capped >= 20, "only {capped} runs reached max_steps");
    // The agent's max_steps as users set it: that many steps, then one tools-free call for
    // the final answer.
    let cases = [1, 2, 5].map(|n| (format!("max_steps: {n}\n"), n));
    let cases: Vec<_> = cases
        .iter()
        .map(|(c, n)| ("two-call-cycle", c.as_str(), "max_steps_error", *n))
        .collect();
    for trace in settings_runs_match("smolagents", &py, &cases) {
        assert_eq!(trace.matches(r#""kind":"summary_call""#).count(), 1);
    }
    // planning_interval: a tools-free plan before steps 1, 3 and 5 of 5 (not steps
    // themselves), then the final-answer call; and over a conversation of several runs.
    let traces = settings_runs_match(
        "smolagents",
        &py,
        &[
            (
                "two-call-cycle",
                "planning_interval: 2\nmax_steps: 5\n",
                "max_steps_error",
                5,
            ),
            (
                "live-user-turns",
                "planning_interval: 3\n",
                "text_response(finish_reason=stop)",
                11,
            ),
        ],
    );
    let plans = |t: &str| t.matches(r#""kind":"planning_call""#).count();
    assert_eq!(plans(&traces[0]), 3);
    assert!(plans(&traces[1]) >= 3, "a plan in each of the three runs");
}

#[test]
fn the_openhands_live_suite_matches_its_simulation_event_for_event() {
    let Some(py) = python_or_skip(Venv::OpenHands, "the OpenHands live suite") else {
        return;
    };
    // Its stuck detector ends the loops long before max_iteration_per_run.
    assert_eq!(live_suite_under(&OPENHANDS, &py), 0);
    // The cap, which is checked after each step; a detector that waits for 7 repeats, which
    // its alternation rule overtakes at 6 (one call six times over alternates too); and none
    // at all.
    settings_runs_match(
        "openhands",
        &py,
        &[
            (
                "healthy-distinct-execute-code",
                "max_iteration_per_run: 5\n",
                "conversation_error(MaxIterationsReached)",
                5,
            ),
            (
                "incident-112535-identical-terminal",
                "stuck_detection_thresholds:\n  action_observation: 7\n",
                "conversation_stuck",
                6,
            ),
            (
                "incident-112535-identical-terminal",
                "stuck_detection: false\nmax_iteration_per_run: 8\n",
                "conversation_error(MaxIterationsReached)",
                8,
            ),
        ],
    );
}

#[test]
fn the_pydantic_ai_live_suite_matches_its_simulation_event_for_event() {
    let Some(py) = python_or_skip(Venv::PydanticAi, "the Pydantic AI live suite") else {
        return;
    };
    let capped = live_suite_under(&PYDANTIC_AI, &py);
    assert!(capped >= 5, "only {capped} runs reached request_limit");
    // UsageLimits' other fields: two calls per reply, so a tool-call limit of 4 is reached
    // exactly by two replies (both run) and passed by the third (none of its calls runs); 0
    // refuses the first reply's; each token limit trips on the response that passes it.
    const RAISED: &str = "raised(UsageLimitExceeded)";
    settings_runs_match(
        "pydantic-ai",
        &py,
        &[
            ("two-call-cycle", "tool_calls_limit: 4\n", RAISED, 3),
            ("two-call-cycle", "tool_calls_limit: 0\n", RAISED, 1),
            ("two-call-cycle", "total_tokens_limit: 30000\n", RAISED, 4),
            ("two-call-cycle", "output_tokens_limit: 500\n", RAISED, 2),
            ("two-call-cycle", "input_tokens_limit: 20000\n", RAISED, 3),
            (
                "healthy-research-40-searches",
                "tool_calls_limit: 40\n",
                "text_response(finish_reason=stop)",
                41,
            ),
        ],
    );
}

#[test]
fn a_python_without_the_sdk_is_a_clear_error() {
    // The system's Python has none of the SDKs (the tests install them into venvs of their own).
    for (runtime, name) in [
        ("openai-agents", "the OpenAI Agents SDK"),
        ("pydantic-ai", "Pydantic AI"),
        ("langgraph", "LangGraph"),
        ("smolagents", "smolagents"),
        ("openhands", "OpenHands"),
    ] {
        let o = loopsim_in(
            &root(),
            &[
                "diff",
                "scenarios/two-call-cycle.toml",
                "--live",
                &format!("{runtime}=python3"),
            ],
        );
        let text = output_text(&o);
        if text.contains("cannot start it") {
            eprintln!("SKIPPED a_python_without_the_sdk_is_a_clear_error: no python3");
            return;
        }
        assert_eq!(o.status.code(), Some(2), "{runtime}: {text}");
        assert!(
            text.contains(&format!("{name} is not importable")),
            "{runtime}: {text}"
        );
    }
}

#[test]
fn loopsim_live_writes_a_trace_and_a_report_of_the_real_run() {
    let Some(py) = python_or_skip(Venv::HermesLive, "loopsim live") else {
        return;
    };
    let t = TempDir::new("live-report");
    let out = t.join("report");
    let o = loopsim_in(
        &root(),
        &[
            "live",
            "scenarios/repeated-identical-failure.toml",
            "--runtime",
            &format!("hermes={}", py.display()),
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let trace = std::fs::read_to_string(out.join("trace.jsonl")).unwrap();
    let header: serde_json::Value = serde_json::from_str(trace.lines().next().unwrap()).unwrap();
    assert_eq!(header["engine"], "live:hermes-0.19.0");
    // Hermes's own decisions and exit reason, as the real loop made them.
    assert!(trace.contains(r#""code":"repeated_exact_failure_block""#));
    assert!(trace.contains(r#""detail":"guardrail_halt""#));
    assert_eq!(trace.matches(r#""kind":"model_call""#).count(), 6);
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["identical"], true);
    assert!(
        summary["live_wall_s"].as_f64().unwrap() > summary["simulated_wall_s"].as_f64().unwrap()
    );
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.contains("matches the live run event for event"), "{md}");
}

#[test]
fn a_python_without_hermes_is_a_clear_error() {
    let o = loopsim_in(
        &root(),
        &[
            "diff",
            "scenarios/repeated-identical-failure.toml",
            "--live",
            "hermes=python3",
        ],
    );
    let text = output_text(&o);
    if text.contains("identical") {
        // This machine's python3 has Hermes: nothing to test here.
        return;
    }
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(text.contains("not importable"), "{text}");
}

#[test]
fn a_runtime_that_hangs_is_killed_at_the_timeout_with_its_whole_process_group() {
    let t = TempDir::new("live-hang");
    // A "Python" that starts a grandchild and sleeps: both must be gone after the timeout.
    let fake = t.join("python");
    let pids = t.join("pids");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\nsleep 300 &\necho $$ $! > {}\nsleep 300\n",
            pids.display()
        ),
    )
    .unwrap();
    std::os::unix::fs::PermissionsExt::set_mode(
        &mut std::fs::metadata(&fake).unwrap().permissions(),
        0o755,
    );
    Command::new("chmod")
        .arg("755")
        .arg(&fake)
        .status()
        .unwrap();
    let started = std::time::Instant::now();
    let o = loopsim_in(
        &root(),
        &[
            "diff",
            "scenarios/repeated-identical-failure.toml",
            "--live",
            &format!("hermes={}", fake.display()),
            "--timeout",
            "2",
        ],
    );
    let text = output_text(&o);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(text.contains("longer than"), "{text}");
    assert!(started.elapsed().as_secs() < 60);
    let pids = std::fs::read_to_string(&pids).unwrap();
    for pid in pids.split_whitespace() {
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists()
                || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .is_ok_and(|s| s.contains(") Z ")),
            "process {pid} outlived the run"
        );
    }
}

#[test]
fn bad_runtime_and_listen_values_are_errors() {
    for (args, want) in [
        (
            vec!["diff", "scenarios/two-call-cycle.toml", "--live", "crewai"],
            "--runtime `crewai`",
        ),
        (
            vec![
                "diff",
                "scenarios/two-call-cycle.toml",
                "--live",
                "openai-agent",
            ],
            "did you mean `openai-agents`?",
        ),
        // The simulation compared must be of the live runtime's governance.
        (
            vec![
                "diff",
                "scenarios/two-call-cycle.toml",
                "--live",
                "openai-agents=/nonexistent/python",
                "--profile",
                "hermes-main",
            ],
            "--profile hermes-main is a hermes profile",
        ),
        // Nor is it served to any runtime.
        (
            vec![
                "serve",
                "scenarios/live-delegation.toml",
                "--profile",
                "pydantic-ai-2.68",
                "--listen",
                "127.0.0.1:0",
            ],
            "which pydantic-ai-2.68 cannot express",
        ),
        // What the SDK cannot express is refused before any Python is looked for.
        (
            vec![
                "diff",
                "scenarios/live-delegation.toml",
                "--live",
                "openai-agents=/nonexistent/python",
            ],
            "delegates to child agents (Hermes's delegate_task), which openai-agents-0.24 cannot express",
        ),
        (
            vec!["diff", "scenarios/two-call-cycle.toml", "--live", "hermes="],
            "is empty",
        ),
        (
            vec![
                "serve",
                "scenarios/two-call-cycle.toml",
                "--listen",
                "0.0.0.0:0",
            ],
            "loopback only",
        ),
        (
            vec![
                "serve",
                "scenarios/two-call-cycle.toml",
                "--listen",
                "localhost",
            ],
            "expected 127.0.0.1:PORT",
        ),
        (
            vec![
                "serve",
                "scenarios/two-call-cycle.toml",
                "--platform",
                "telegram",
                "--listen",
                "127.0.0.1:0",
            ],
            "the platform is the runtime's own setting",
        ),
    ] {
        // Each is refused at once: one that started a server instead would otherwise wait.
        let o = common::loopsim_within(&root(), &args, std::time::Duration::from_secs(60));
        let text = output_text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {text}");
        assert!(text.contains(want), "{args:?}: {text}");
    }
}

/// A `loopsim serve` process, killed by its PID when dropped (also when the test fails).
struct Served {
    child: std::process::Child,
    addr: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The tests' own limit works: a server, which waits for requests until it is told to end,
/// is ended by its PID at the limit and the test fails, instead of hanging the suite.
#[test]
fn a_loopsim_run_past_the_tests_limit_is_ended_and_fails_the_test() {
    let started = std::time::Instant::now();
    let ended = std::panic::catch_unwind(|| {
        common::loopsim_within(
            &root(),
            &["serve", "live-user-turns", "--listen", "127.0.0.1:0"],
            std::time::Duration::from_secs(2),
        )
    });
    let message = ended.expect_err("a server ended by itself within 2 s");
    let text = message
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(text.contains("did not end within 2 s"), "{text}");
    // SIGTERM ends it (loopsim's own handler), well before the SIGKILL 10 s later.
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}

fn serve(scenario: &str, listen: &str) -> Served {
    let mut child = Command::new(env!("CARGO_BIN_EXE_loopsim"))
        .args(["serve", scenario, "--listen", listen])
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|s| s.split('/').next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    Served { child, addr }
}

/// One HTTP/1.1 request; the status and the body.
fn http(addr: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out[9..12].parse().unwrap();
    let body = out.split_once("\r\n\r\n").map_or("", |x| x.1).to_string();
    (status, body)
}

#[test]
fn serve_speaks_chat_completions_and_runs_the_scripted_tools() {
    let s = serve("scenarios/two-call-cycle.toml", "127.0.0.1:0");
    let (st, body) = http(&s.addr, "GET", "/v1/models", "");
    assert_eq!(st, 200);
    assert!(body.contains(r#""id":"main""#), "{body}");
    // A local-server probe is answered 404, so the runtime does not take loopsim for Ollama.
    assert_eq!(http(&s.addr, "GET", "/api/tags", "").0, 404);
    let first = r#"{"model":"main","tools":[{"type":"function"}],"messages":[{"role":"user","content":"go"}]}"#;
    let (st, body) = http(&s.addr, "POST", "/v1/chat/completions", first);
    assert_eq!(st, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let calls = v["choices"][0]["message"]["tool_calls"].as_array().unwrap();
    assert_eq!(
        calls.len(),
        2,
        "the scenario's step makes two calls in one reply"
    );
    assert_eq!(calls[0]["function"]["name"], "terminal");
    assert_eq!(v["usage"]["prompt_tokens"], 8000);
    assert_eq!(v["usage"]["prompt_tokens_details"]["cached_tokens"], 7200);
    // The runtime's fake handler asks for the first call's result.
    let id = calls[0]["id"].as_str().unwrap();
    let (st, body) = http(
        &s.addr,
        "POST",
        "/loopsim/v1/tool",
        &format!(r#"{{"id":"{id}","tool":"terminal","args":{{"command":"deploy status"}}}}"#),
    );
    assert_eq!(st, 200, "{body}");
    assert!(body.contains("deploy: pending"), "{body}");
    // A call the model never made, or a different tool under its id: refused, named.
    let (st, body) = http(
        &s.addr,
        "POST",
        "/loopsim/v1/tool",
        r#"{"id":"call_9_9_9","tool":"terminal","args":{}}"#,
    );
    assert_eq!(st, 422);
    assert!(body.contains("never issued"), "{body}");
    let (st, body) = http(
        &s.addr,
        "POST",
        "/loopsim/v1/tool",
        &format!(r#"{{"id":"{id}","tool":"read_file","args":{{}}}}"#),
    );
    assert_eq!(st, 422);
    assert!(body.contains("the model called `terminal`"), "{body}");
    // Streaming: the same kind of reply as server-sent events, usage in a last chunk.
    let streamed = r#"{"model":"main","stream":true,"stream_options":{"include_usage":true},"tools":[{"type":"function"}],"messages":[{"role":"user","content":"go"},{"role":"assistant","content":""},{"role":"tool","tool_call_id":"x","content":"{}"}]}"#;
    let (st, body) = http(&s.addr, "POST", "/v1/chat/completions", streamed);
    assert_eq!(st, 200);
    assert!(body.contains("data: [DONE]"), "{body}");
    assert!(body.contains(r#""finish_reason":"tool_calls""#), "{body}");
    assert!(
        body.contains(r#""choices":[],"#) || body.contains(r#""choices":[]}"#),
        "{body}"
    );
    // What happened so far, as trace event lines.
    let (st, body) = http(&s.addr, "GET", "/loopsim/v1/events", "");
    assert_eq!(st, 200);
    let kinds: Vec<String> = body
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["kind"].to_string())
        .collect();
    assert!(kinds.contains(&"\"tool_call\"".to_string()), "{body}");
    assert_eq!(
        kinds.iter().filter(|k| k.contains("model_call")).count(),
        2,
        "{body}"
    );
    // A body that is not a chat request: 400 with the reason.
    let (st, body) = http(&s.addr, "POST", "/v1/chat/completions", "{");
    assert_eq!(st, 400);
    assert!(body.contains("not JSON"), "{body}");
}

#[test]
fn a_port_in_use_is_a_clear_error() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let o = loopsim_in(
        &root(),
        &["serve", "scenarios/two-call-cycle.toml", "--listen", &addr],
    );
    let text = output_text(&o);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(text.contains(&format!("--listen {addr}")), "{text}");
}

#[test]
fn a_deliberately_wrong_port_is_caught_by_the_live_diff_at_the_event_where_it_shows() {
    let Some(py) = python_or_skip(Venv::HermesLive, "the wrong-port check") else {
        return;
    };
    // Under hermes-0.19.0 an execute_code-only round refunds the budget but not the API call,
    // so the incident's parent meets the cap of 90 at its 91st call; the wrong port also gives
    // the call back and sails past it.
    let o = Command::new(env!("CARGO_BIN_EXE_loopsim"))
        .args([
            "diff",
            "scenarios/execute-code-spin-wait.toml",
            "--live",
            &format!("hermes={}", py.display()),
            "--format",
            "json",
        ])
        .env("LOOPSIM_TEST_WRONG_PORT", "refund-extends-call-cap")
        .current_dir(root())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", output_text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let d = &v["first_divergence"];
    assert_eq!(d["agent"], "parent");
    assert_eq!(d["simulated"]["kind"], "model_call");
    assert_eq!(d["simulated"]["call"], 91);
    assert_eq!(d["live"]["kind"], "summary_call");
    assert!(stderr_has(&o, "deliberately wrong port"));
    // An unknown switch is refused, not ignored.
    let o = Command::new(env!("CARGO_BIN_EXE_loopsim"))
        .args(["run", "scenarios/two-call-cycle.toml", "--format", "json"])
        .env("LOOPSIM_TEST_WRONG_PORT", "refund")
        .current_dir(root())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr_has(&o, "expected one of refund-extends-call-cap"));
}

fn stderr_has(o: &std::process::Output, s: &str) -> bool {
    String::from_utf8_lossy(&o.stderr).contains(s)
}

#[test]
fn a_live_trace_replays_against_its_simulation_and_an_edited_one_is_refused() {
    let Some(py) = python_or_skip(Venv::HermesLive, "live trace replay") else {
        return;
    };
    let t = TempDir::new("live-replay");
    let out = t.join("r");
    let o = loopsim_in(
        &root(),
        &[
            "live",
            "scenarios/live-user-stop.toml",
            "--runtime",
            &format!("hermes={}", py.display()),
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let trace = out.join("trace.jsonl");
    let o = loopsim_in(&root(), &["replay", trace.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    assert!(output_text(&o).contains("identical"), "{}", output_text(&o));
    let o = loopsim_in(&root(), &["validate", trace.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let text = std::fs::read_to_string(&trace).unwrap();
    std::fs::write(
        &trace,
        text.replacen("interrupted_by_user", "guardrail_halt", 1),
    )
    .unwrap();
    let o = loopsim_in(&root(), &["replay", trace.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", output_text(&o));
    assert!(
        output_text(&o).contains("hash mismatch"),
        "{}",
        output_text(&o)
    );
}

/// A stand-in for Python: a shell script given the bridge's arguments (script, spec).
fn fake_runtime(t: &TempDir, body: &str) -> std::path::PathBuf {
    let p = t.join("python");
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    Command::new("chmod").arg("755").arg(&p).status().unwrap();
    p
}

#[test]
fn a_runtime_that_crashes_or_speaks_another_api_is_a_clear_error() {
    let t = TempDir::new("live-faults");
    let crash = fake_runtime(&t, "echo 'Traceback: boom' >&2\nexit 1");
    let o = loopsim_in(
        &root(),
        &[
            "diff",
            "scenarios/two-call-cycle.toml",
            "--live",
            &format!("hermes={}", crash.display()),
        ],
    );
    let text = output_text(&o);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(
        text.contains("Hermes failed (exit 1)") && text.contains("boom"),
        "{text}"
    );
    // A runtime that posts something that is not a chat request: named, exit 2.
    let garbled = fake_runtime(
        &t,
        r#"url=$(sed 's/.*"server":"\([^"]*\)".*/\1/' "$2")
curl -s -o /dev/null -X POST -H 'Content-Type: application/json' -d '{"messages": 3}' "$url/v1/chat/completions"
echo '{"ok": true}'"#,
    );
    let o = loopsim_in(
        &root(),
        &[
            "diff",
            "scenarios/two-call-cycle.toml",
            "--live",
            &format!("hermes={}", garbled.display()),
        ],
    );
    let text = output_text(&o);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(
        text.contains("could not answer") && text.contains("no `model`"),
        "{text}"
    );
}

/// The runtime's Python never sees the caller's CA-bundle variables (with them, Hermes loads a
/// whole bundle per model call) and gets an empty folder of trust roots of the run's own.
#[test]
fn a_live_runtime_gets_no_ca_bundle_and_an_empty_folder_of_trust_roots() {
    let t = TempDir::new("live-trust-roots");
    let bundle = t.join("bundle.pem");
    std::fs::write(&bundle, "not read").unwrap();
    let bundle = bundle.to_str().unwrap();
    let probe = fake_runtime(
        &t,
        r#"for v in SSL_CERT_FILE REQUESTS_CA_BUNDLE CURL_CA_BUNDLE HERMES_CA_BUNDLE; do
  eval "x=\${$v+set}"; echo "$v=${x:-unset}" >&2
done
echo "roots=$SSL_CERT_DIR entries=$(ls -A "$SSL_CERT_DIR" | wc -l | tr -d ' ')" >&2
case "$SSL_CERT_DIR" in "$(pwd)"/*) echo "roots in the run's folder" >&2;; esac
exit 1"#,
    );
    for runtime in ["hermes", "openhands"] {
        let o = loopsim_with_env(
            &root(),
            &[
                "live",
                "scenarios/two-call-cycle.toml",
                "--runtime",
                &format!("{runtime}={}", probe.display()),
                "--out",
                t.join("out").to_str().unwrap(),
            ],
            &[
                ("SSL_CERT_FILE", bundle),
                ("REQUESTS_CA_BUNDLE", bundle),
                ("CURL_CA_BUNDLE", bundle),
                ("HERMES_CA_BUNDLE", bundle),
            ],
            std::time::Duration::from_secs(120),
        );
        let text = output_text(&o);
        assert_eq!(o.status.code(), Some(2), "{text}");
        for v in [
            "SSL_CERT_FILE",
            "REQUESTS_CA_BUNDLE",
            "CURL_CA_BUNDLE",
            "HERMES_CA_BUNDLE",
        ] {
            assert!(
                text.contains(&format!("{v}=unset")),
                "{runtime}: {v}: {text}"
            );
        }
        assert!(
            text.contains("entries=0") && text.contains("roots in the run's folder"),
            "{runtime}: {text}"
        );
        assert!(!t.join("out").exists(), "a failed run writes no report");
    }
}
