//! Other runtimes' governance in the simulator, without their packages: settings in each
//! runtime's own keys, what a runtime cannot express, its limit's exception as its stop,
//! sweeps over its knobs, and the cross-runtime comparison. (The live proof against the real
//! packages is in tests/reference/live.rs.)

use crate::common;

use common::{TempDir, loopsim_in, output_text, root};

fn json_run(args: &[&str]) -> serde_json::Value {
    let o = loopsim_in(&root(), args);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", output_text(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn a_runtimes_cap_is_its_own_setting_and_its_exception_is_the_runs_stop() {
    let t = TempDir::new("rt-cap");
    let out = t.join("r");
    let out = out.to_str().unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "scenarios/healthy-research-40-searches.toml",
            "--out",
            out,
            "--format",
            "json",
        ];
        args.extend_from_slice(extra);
        json_run(&args)
    };
    let v = run(&["--profile", "openai-agents-0.24"]);
    assert_eq!(
        v["summary"]["parent_exit_reason"],
        "raised(MaxTurnsExceeded)"
    );
    assert_eq!(v["metrics"][0]["calls"], 10);
    assert_eq!(v["metrics"][0]["stop_code"], "raised(MaxTurnsExceeded)");
    assert_eq!(v["metrics"][0]["stop_call"], 10);
    // The runtime's own key, in a config file of its own.
    std::fs::write(t.join("oa.yaml"), "max_turns: 41\n").unwrap();
    let cfg = t.join("oa.yaml");
    let v = run(&[
        "--profile",
        "openai-agents-0.24",
        "--config",
        cfg.to_str().unwrap(),
    ]);
    assert_eq!(
        v["summary"]["parent_exit_reason"],
        "text_response(finish_reason=stop)"
    );
    assert_eq!(v["metrics"][0]["calls"], 41);
    assert_eq!(v["metrics"][0]["stop_code"], "");
    // Pydantic AI's default of 50 lets the 41 calls through.
    let v = run(&["--profile", "pydantic-ai-2.68"]);
    assert_eq!(v["metrics"][0]["calls"], 41);
    // Pydantic AI's cap in a file read as Hermes's: Hermes would ignore it, and loopsim says so.
    std::fs::write(t.join("p.yaml"), "request_limit: 20\n").unwrap();
    let o = loopsim_in(
        &root(),
        &[
            "run",
            "scenarios/healthy-research-40-searches.toml",
            "--profile",
            "hermes-main",
            "--config",
            t.join("p.yaml").to_str().unwrap(),
            "--out",
            out,
            "-q",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    assert!(
        output_text(&o)
            .contains("p.yaml:1: `request_limit`: a setting of Pydantic AI, not of Hermes"),
        "{}",
        output_text(&o)
    );
    // A Hermes key, or a typo, under a runtime that does not read it: exit 2, file, line, key.
    for (text, want) in [
        (
            "agent:\n  max_turns: 5\n",
            "oa.yaml:1: `agent`: not a setting openai-agents-0.24 reads",
        ),
        (
            "max_turns: 5\nmax_turn: 4\n",
            "oa.yaml:2: `max_turn`: not a setting openai-agents-0.24 reads (did you mean `max_turns`?)",
        ),
        ("max_turns: ten\n", "oa.yaml:1: `max_turns`: an integer"),
    ] {
        std::fs::write(t.join("oa.yaml"), text).unwrap();
        let o = loopsim_in(
            &root(),
            &[
                "run",
                "scenarios/healthy-research-40-searches.toml",
                "--profile",
                "openai-agents-0.24",
                "--config",
                cfg.to_str().unwrap(),
                "--out",
                out,
            ],
        );
        assert_eq!(o.status.code(), Some(2), "{text}");
        assert!(
            output_text(&o).contains(want),
            "{text}: {}",
            output_text(&o)
        );
    }
}

#[test]
fn what_a_runtime_cannot_express_is_refused_with_the_mechanism_named() {
    let t = TempDir::new("rt-refuse");
    for (scenario, mechanism) in [
        (
            "scenarios/incident-52868-async-pool-full.toml",
            "delegates to child agents (Hermes's delegate_task)",
        ),
        (
            "scenarios/incident-96247-tool-search-context.toml",
            "models.fast.context_window fills and compresses the context",
        ),
    ] {
        for profile in ["openai-agents-0.24", "pydantic-ai-2.68"] {
            let o = loopsim_in(
                &root(),
                &[
                    "run",
                    scenario,
                    "--profile",
                    profile,
                    "--out",
                    t.to_str().unwrap(),
                ],
            );
            assert_eq!(o.status.code(), Some(2), "{scenario} {profile}");
            let text = output_text(&o);
            assert!(
                text.contains(mechanism)
                    && text.contains(&format!("which {profile} cannot express")),
                "{text}"
            );
            assert!(
                !t.join("summary.json").exists(),
                "nothing written for a refused run"
            );
        }
    }
}

#[test]
fn runs_under_another_runtime_are_deterministic() {
    let t = TempDir::new("rt-determinism");
    // Each runtime's own rules: a raised limit, a final-answer call, the stuck detector, the
    // article loop's budget, hint and cuts.
    for profile in [
        "pydantic-ai-2.68",
        "smolagents-1.26",
        "openhands-sdk-1.58",
        "react-loop-article",
    ] {
        let o = loopsim_in(
            &root(),
            &[
                "run",
                "scenarios/incident-64927-qqbot-terminal.toml",
                "--profile",
                profile,
                "--check-determinism",
                "--out",
                t.to_str().unwrap(),
                "-q",
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{profile}: {}", output_text(&o));
    }
    let a = t.join("a");
    let b = t.join("b");
    for d in [&a, &b] {
        let o = loopsim_in(
            &root(),
            &[
                "compare",
                "scenarios/two-call-cycle.toml",
                "--out",
                d.to_str().unwrap(),
                "-q",
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    }
    for f in ["summary.md", "summary.json"] {
        assert_eq!(
            std::fs::read(a.join(f)).unwrap(),
            std::fs::read(b.join(f)).unwrap(),
            "{f}"
        );
    }
}

#[test]
fn a_sweep_over_a_runtimes_own_knob_recommends_the_cap_that_spares_the_healthy_run() {
    let t = TempDir::new("rt-sweep");
    let o = loopsim_in(
        &root(),
        &[
            "sweep",
            "scenarios/healthy-research-40-searches.toml",
            "scenarios/incident-17327-process-poll.toml",
            "--profiles",
            "pydantic-ai-2.68",
            "--grid",
            "request_limit=20,45,60",
            "--seeds",
            "0..2",
            "--out",
            t.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let md = std::fs::read_to_string(t.join("summary.md")).unwrap();
    // 20 stops the loop soonest but also the 41-call healthy run; 45 is the best that spares it.
    assert!(md.contains("**Recommended:** `request_limit=45`"), "{md}");
    // One sweep over two SDKs and a Hermes profile, with a Hermes config file: each runtime
    // takes the keys it reads, and says which it does not.
    let h = t.join("h.yaml");
    std::fs::write(&h, "agent:\n  max_turns: 30\n").unwrap();
    let o = loopsim_in(
        &root(),
        &[
            "sweep",
            "scenarios/healthy-research-40-searches.toml",
            "--profiles",
            "hermes-main,openai-agents-0.24,pydantic-ai-2.68",
            "--grid",
            "request_limit=20,60",
            "--config",
            h.to_str().unwrap(),
            "--seeds",
            "0..2",
            "--out",
            t.join("mixed").to_str().unwrap(),
        ],
    );
    let text = output_text(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(
        text.contains("changes nothing for healthy-research-40-searches under hermes-main, healthy-research-40-searches under openai-agents-0.24"),
        "{text}"
    );
    let md = std::fs::read_to_string(t.join("mixed/summary.md")).unwrap();
    // Hermes main ran under the file's cap of 30: the 41-call healthy run hit it.
    assert!(
        md.contains("| request_limit=20 | pydantic-ai-2.68 |"),
        "{md}"
    );
    // A Hermes knob changes nothing under a runtime without Hermes's guardrails: an error.
    let o = loopsim_in(
        &root(),
        &[
            "sweep",
            "scenarios/incident-17327-process-poll.toml",
            "--profiles",
            "openai-agents-0.24",
            "--grid",
            "tool_loop_guardrails.hard_stop_enabled=true,false",
            "--out",
            t.join("h").to_str().unwrap(),
        ],
    );
    let text = output_text(&o);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(
        text.contains("not a setting openai-agents-0.24 reads") || text.contains("changes"),
        "{text}"
    );
}

#[test]
fn compare_shows_a_false_stop_with_the_setting_that_avoids_it() {
    let t = TempDir::new("rt-compare");
    let v = json_run(&[
        "compare",
        "scenarios/healthy-research-40-searches.toml",
        "scenarios/live-delegation.toml",
        "--profiles",
        "hermes-main,openai-agents-0.24,pydantic-ai-2.68",
        "--out",
        t.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let cells = &v["rows"][0]["cells"];
    assert_eq!(cells[0]["outcome"], "not_stopped");
    assert_eq!(cells[1]["outcome"], "stopped");
    assert_eq!(cells[1]["avoid_with"], "max_turns: 41");
    assert_eq!(cells[2]["outcome"], "not_stopped");
    assert_eq!(v["rows"][1]["cells"][1]["outcome"], "not_expressible");
    let md = std::fs::read_to_string(t.join("summary.md")).unwrap();
    assert!(
        md.contains("**false stop**, `max_turns: 41` lets it finish"),
        "{md}"
    );
}

#[test]
fn openhands_stuck_detector_ends_a_loop_and_its_settings_move_it() {
    let t = TempDir::new("rt-openhands");
    let out = t.join("r");
    let out = out.to_str().unwrap().to_string();
    let run = |scenario: &str, config: Option<&str>| {
        let mut args = vec![
            "run".to_string(),
            format!("scenarios/{scenario}.toml"),
            "--profile".into(),
            "openhands-sdk-1.58".into(),
            "--out".into(),
            out.clone(),
            "--format".into(),
            "json".into(),
        ];
        if let Some(c) = config {
            let f = t.join("oh.yaml");
            std::fs::write(&f, c).unwrap();
            args.extend(["--config".into(), f.display().to_string()]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        json_run(&args)
    };
    // Four identical calls with identical results: stuck before the fifth step, no call more.
    let v = run("incident-112535-identical-terminal", None);
    assert_eq!(v["summary"]["parent_exit_reason"], "conversation_stuck");
    assert_eq!(v["metrics"][0]["calls"], 4);
    assert_eq!(v["metrics"][0]["stop_code"], "conversation_stuck");
    assert_eq!(v["metrics"][0]["stop_call"], 4);
    // A read, then three empty replies in a row, whatever the runtime's nudges between them.
    let v = run("live-empty-exhausted", None);
    assert_eq!(v["summary"]["parent_exit_reason"], "conversation_stuck");
    assert_eq!(v["metrics"][0]["calls"], 4);
    // A/B alternation with alternating results, over six steps.
    let v = run("incident-94855-memory-oscillation", None);
    assert_eq!(v["metrics"][0]["calls"], 6);
    // A result that changes every call is no repetition: the user's stop ends it.
    let v = run("incident-17327-process-poll", None);
    assert_eq!(v["summary"]["parent_exit_reason"], "interrupted_by_user");
    // Its thresholds and its switch, in OpenHands' own names.
    let v = run(
        "incident-112535-identical-terminal",
        Some("stuck_detection_thresholds:\n  action_observation: 5\n"),
    );
    assert_eq!(v["metrics"][0]["calls"], 5);
    // Above 6, the alternation rule comes first: one call six times over alternates too.
    let v = run(
        "incident-112535-identical-terminal",
        Some("stuck_detection_thresholds:\n  action_observation: 7\n"),
    );
    assert_eq!(v["metrics"][0]["calls"], 6);
    let v = run(
        "incident-112535-identical-terminal",
        Some("stuck_detection: false\nmax_iteration_per_run: 30\n"),
    );
    assert_eq!(
        v["summary"]["parent_exit_reason"],
        "conversation_error(MaxIterationsReached)"
    );
    assert_eq!(v["metrics"][0]["calls"], 30);
    // A misspelt threshold names the file, its line and the nearest name.
    std::fs::write(
        t.join("bad.yaml"),
        "stuck_detection_thresholds:\n  monolog: 2\n",
    )
    .unwrap();
    let bad = t.join("bad.yaml");
    let o = loopsim_in(
        &root(),
        &[
            "run",
            "scenarios/two-call-cycle.toml",
            "--profile",
            "openhands-sdk-1.58",
            "--config",
            bad.to_str().unwrap(),
            "--out",
            &out,
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    let text = output_text(&o);
    assert!(
        text.contains("bad.yaml:2") && text.contains("did you mean `monologue`"),
        "{text}"
    );
}

#[test]
fn sweeps_run_over_each_new_runtimes_own_knobs() {
    let t = TempDir::new("rt-knobs");
    for (profile, grid, column, want) in [
        (
            "smolagents-1.26",
            "max_steps=5,30",
            "max_steps",
            ["5", "30"],
        ),
        (
            "openhands-sdk-1.58",
            "stuck_detection_thresholds.action_observation=3,5",
            "stuck_detection_thresholds.action_observation",
            ["3", "5"],
        ),
        (
            "react-loop-article",
            "max_total_tokens=50000,400000",
            "max_total_tokens",
            ["50000", "400000"],
        ),
        (
            "pydantic-ai-2.68",
            "tool_calls_limit=5,30",
            "tool_calls_limit",
            ["5", "30"],
        ),
        (
            "langgraph-1.2",
            "model_call_limit.run_limit=5,30",
            "model_call_limit.run_limit",
            ["5", "30"],
        ),
    ] {
        let out = t.join(profile);
        let o = loopsim_in(
            &root(),
            &[
                "sweep",
                "scenarios/incident-112535-identical-terminal.toml",
                "--profiles",
                profile,
                "--grid",
                grid,
                "--seeds",
                "0..2",
                "--out",
                out.to_str().unwrap(),
                "-q",
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{profile}: {}", output_text(&o));
        let csv = std::fs::read_to_string(out.join("aggregate.csv")).unwrap();
        let head: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
        let col = head.iter().position(|h| *h == column).expect(column);
        let waste = head.iter().position(|h| *h == "waste_calls_mean").unwrap();
        let rows: Vec<Vec<&str>> = csv
            .lines()
            .skip(1)
            .map(|l| l.split(',').collect())
            .collect();
        let at = |v: &str| -> f64 {
            rows.iter().find(|r| r[col] == v).expect(v)[waste]
                .parse()
                .unwrap()
        };
        // A looser setting lets the loop waste more calls before its stop.
        assert!(at(want[0]) < at(want[1]), "{profile}: {csv}");
    }
}

#[test]
fn opt_in_call_limits_stop_runs_where_the_runtimes_would() {
    let t = TempDir::new("rt-limits");
    let run = |scenario: &str, profile: &str, settings: &str, name: &str| {
        let cfg = t.join(format!("{name}.yaml"));
        std::fs::write(&cfg, settings).unwrap();
        let out = t.join(name);
        let v = json_run(&[
            "run",
            &format!("scenarios/{scenario}.toml"),
            "--profile",
            profile,
            "--config",
            cfg.to_str().unwrap(),
            "--check-determinism",
            "--out",
            out.to_str().unwrap(),
            "--format",
            "json",
        ]);
        let trace = std::fs::read_to_string(out.join("trace.jsonl")).unwrap();
        (v, trace)
    };
    // (scenario, profile, settings, stop, model calls): the figures the live suite proves.
    for (k, (scenario, profile, settings, stop, calls)) in [
        (
            "two-call-cycle",
            "pydantic-ai-2.68",
            "tool_calls_limit: 4\n",
            "raised(UsageLimitExceeded)",
            3,
        ),
        (
            "two-call-cycle",
            "pydantic-ai-2.68",
            "output_tokens_limit: 500\n",
            "raised(UsageLimitExceeded)",
            2,
        ),
        (
            "two-call-cycle",
            "openai-agents-0.24",
            "max_turns: 5\nerror_handlers:\n  max_turns: true\n",
            "max_turns_handled",
            5,
        ),
        (
            "two-call-cycle",
            "langgraph-1.2",
            "model_call_limit:\n  run_limit: 4\n",
            "model_call_limit_reached",
            4,
        ),
        (
            "two-call-cycle",
            "langgraph-1.2",
            "tool_call_limit:\n  run_limit: 3\n  exit_behavior: end\n",
            "tool_call_limit_reached",
            2,
        ),
        (
            "incident-112535-identical-terminal",
            "langgraph-1.2",
            "recursion_limit: 25\ntool_call_limit:\n  run_limit: 3\n",
            "raised(GraphRecursionError)",
            11,
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let (v, trace) = run(scenario, profile, settings, &format!("c{k}"));
        let m = &v["metrics"][0];
        assert_eq!(m["stop_code"], stop, "{settings}");
        assert_eq!(m["calls"], calls, "{settings}");
        assert_eq!(v["summary"]["parent_exit_reason"], stop, "{settings}");
        let blocked = trace.matches(r#""kind":"tool_blocked""#).count();
        if settings.contains("tool_call_limit") && !settings.contains("exit_behavior") {
            // Each call past the third is answered by the middleware, never run; the 11th
            // reply comes at the 25th step and is dropped by the recursion limit.
            assert_eq!(blocked, calls - 3 - 1, "{trace}");
            assert_eq!(trace.matches(r#""kind":"tool_call""#).count(), 3);
        } else {
            assert_eq!(blocked, 0);
        }
    }
    // smolagents' planning calls: not steps, but calls that cost, each in the trace.
    let (v, trace) = run(
        "two-call-cycle",
        "smolagents-1.26",
        "planning_interval: 2\nmax_steps: 5\n",
        "plan",
    );
    assert_eq!(trace.matches(r#""kind":"planning_call""#).count(), 3);
    assert_eq!(v["metrics"][0]["stop_code"], "max_steps_error");
    let (without, _) = run(
        "two-call-cycle",
        "smolagents-1.26",
        "max_steps: 5\n",
        "noplan",
    );
    let cost = |v: &serde_json::Value| v["metrics"][0]["cost_usd"].as_f64().unwrap();
    assert!(cost(&v) > cost(&without), "the plans cost");
    // The report names the limits in force.
    let cfg = t.join("c3.yaml");
    let o = loopsim_in(
        &root(),
        &[
            "run",
            "scenarios/two-call-cycle.toml",
            "--profile",
            "langgraph-1.2",
            "--config",
            cfg.to_str().unwrap(),
            "--out",
            t.join("text").to_str().unwrap(),
        ],
    );
    let text = output_text(&o);
    assert!(
        text.contains("model_call_limit 4 per run (exit_behavior end)"),
        "{text}"
    );
    assert!(
        text.contains("graph steps: at most 2500 model calls"),
        "{text}"
    );
}
