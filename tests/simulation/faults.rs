//! Provider errors: Hermes's retry loop in the simulation (attempts, waits, what a retry
//! spends, the failed turn), the scenario keys checked, and the same errors at the same
//! attempts through the real Hermes 0.19.0 loop (`loopsim diff --live`).

use crate::common;

use common::{
    TempDir, Venv, live_identical, loopsim_in, of_kind, output_text, python_or_skip, root,
    trace_events,
};
use serde_json::Value;

#[test]
fn a_provider_that_always_fails_gets_three_attempts_with_backoff_then_the_turn_fails() {
    let evs = trace_events("scenarios/live-provider-down.toml", &[]);
    let errors = of_kind(&evs, "model_error");
    let details: Vec<&str> = errors
        .iter()
        .map(|e| e["detail"].as_str().unwrap())
        .collect();
    assert_eq!(
        details,
        [
            "server_error (HTTP 500), attempt 1 of 3",
            "server_error (HTTP 500), attempt 2 of 3",
            "server_error (HTTP 500), attempt 3 of 3"
        ]
    );
    assert!(errors.iter().all(|e| e["call"] == 1));
    // Each error takes 0.5 s; the waits are 2 s and 4 s, each plus up to half again.
    let t: Vec<u64> = errors.iter().map(|e| e["t_us"].as_u64().unwrap()).collect();
    let (w1, w2) = (t[1] - t[0] - 500_000, t[2] - t[1] - 500_000);
    assert!((2_000_000..=3_000_000).contains(&w1), "first wait {w1}");
    assert!((4_000_000..=6_000_000).contains(&w2), "second wait {w2}");
    assert!(
        of_kind(&evs, "model_call").is_empty(),
        "no reply, no billed call"
    );
    let end = of_kind(&evs, "turn_end")[0];
    assert_eq!(end["detail"], "api_call_failed(server_error)");
    assert_eq!(
        end["budget_used"], 1,
        "the call's one iteration, not one per attempt"
    );
    assert_eq!(
        end["t_us"].as_u64(),
        Some(t[2]),
        "the turn ends with the last error"
    );
    assert!(
        of_kind(&evs, "summary_call").is_empty(),
        "Hermes returns: no summary call"
    );
    let footer = evs.last().unwrap();
    let parent = &footer["summary"]["agents"][0];
    assert_eq!(parent["usage"]["provider_errors"], 3, "{parent}");
    assert_eq!(parent["usage"]["retry_wait_us"].as_u64(), Some(w1 + w2));
    assert_eq!(parent["usage"]["cost_micro_usd"], 0);
}

#[test]
fn retried_attempts_spend_no_iteration_and_rate_limits_wait_their_retry_after() {
    let evs = trace_events("scenarios/live-provider-errors.toml", &[]);
    let errors = of_kind(&evs, "model_error");
    let calls = of_kind(&evs, "model_call");
    assert!(errors.len() >= 3, "{} errors", errors.len());
    let end = of_kind(&evs, "turn_end")[0];
    assert_eq!(end["detail"], "text_response(finish_reason=stop)");
    assert_eq!(end["budget_used"].as_u64(), Some(calls.len() as u64));
    assert_eq!(end["call"].as_u64(), Some(calls.len() as u64));
    // A rate limit's next attempt goes out after its 0.3 s error and the 0.05 s Retry-After.
    for (i, e) in evs.iter().enumerate() {
        if e["kind"] == "model_error"
            && e["detail"].as_str().unwrap().starts_with("rate_limit")
            && let Some(next) = evs[i + 1..]
                .iter()
                .find(|n| n["kind"] == "model_error" || n["kind"] == "model_call")
        {
            let gap = next["t_us"].as_u64().unwrap() - e["t_us"].as_u64().unwrap();
            let wanted = if next["kind"] == "model_error" {
                350_000
            } else {
                50_000
            };
            assert_eq!(gap, wanted, "{e} then {next}");
        }
    }
    // The errors are the scenario's: the same seed draws them again, byte for byte.
    assert_eq!(
        evs,
        trace_events("scenarios/live-provider-errors.toml", &[])
    );
    // Another seed meets other errors: seed 1 rate-limits one call three times in a row.
    let other = trace_events("scenarios/live-provider-errors.toml", &["--seed", "1"]);
    assert_eq!(
        of_kind(&other, "turn_end")[0]["detail"],
        "api_call_failed(rate_limit)"
    );
}

fn with_faults(t: &TempDir, faults: &str, profile: &str) -> std::path::PathBuf {
    let text = std::fs::read_to_string(root().join("scenarios/live-provider-down.toml"))
        .unwrap()
        .replace(
            "faults = { server_error = 1.0, latency_s = 0.5 }",
            &format!("faults = {faults}"),
        )
        .replace(
            "profile = \"hermes-0.19.0\"",
            &format!("profile = \"{profile}\""),
        );
    let p = t.join("s.toml");
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn fault_keys_are_checked_and_other_runtimes_refuse_faults() {
    let t = TempDir::new("faults-keys");
    let cases = [
        (
            "{ rate_limt = 0.5 }",
            "hermes-0.19.0",
            vec!["s.toml:18", "rate_limt", "rate_limit"],
        ),
        (
            "{ rate_limit = 0.7, server_error = 0.6 }",
            "hermes-0.19.0",
            vec![
                "s.toml:18",
                "models.main.faults.server_error",
                "more than 1",
            ],
        ),
        (
            "{ rate_limit = 0.5, retry_after_s = -1 }",
            "hermes-0.19.0",
            vec!["models.main.faults.retry_after_s"],
        ),
        (
            "{ server_error = 1.5 }",
            "hermes-0.19.0",
            vec!["models.main.faults.server_error", "probability"],
        ),
        (
            "{ server_error = 0.5 }",
            "openai-agents-0.24",
            vec!["models.main.faults draws provider errors", "cannot express"],
        ),
        (
            "{ server_error = 0.5 }",
            "article-2026-06",
            vec!["models.main.faults draws provider errors", "cannot express"],
        ),
    ];
    for (faults, profile, wants) in cases {
        let p = with_faults(&t, faults, profile);
        let o = loopsim_in(
            &root(),
            &[
                "run",
                p.to_str().unwrap(),
                "--out",
                t.join("out").to_str().unwrap(),
            ],
        );
        let text = output_text(&o);
        assert_eq!(o.status.code(), Some(2), "{faults}: {text}");
        for w in wants {
            assert!(
                text.contains(w),
                "{faults} under {profile}: `{w}` in {text}"
            );
        }
    }
    // Zero probabilities draw nothing and are accepted anywhere.
    let p = with_faults(&t, "{ server_error = 0.0 }", "openai-agents-0.24");
    let o = loopsim_in(
        &root(),
        &[
            "run",
            p.to_str().unwrap(),
            "--out",
            t.join("ok").to_str().unwrap(),
            "-q",
        ],
    );
    // (Exit 1: the scenario's own expectation of a failed call does not hold without faults.)
    let text = output_text(&o);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(
        text.contains("got text_response(finish_reason=stop)"),
        "{text}"
    );
}

#[test]
fn the_real_hermes_loop_gives_up_on_a_rate_limited_call_as_the_simulation_does() {
    let Some(py) = python_or_skip(Venv::HermesLive, "rate-limit exhaustion live") else {
        return;
    };
    let runtime = format!("hermes={}", py.display());
    let o = loopsim_in(
        &root(),
        &[
            "diff",
            "scenarios/live-provider-errors.toml",
            "--live",
            &runtime,
            "--seed",
            "1",
            "--format",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["identical"], true, "{v}");
    // The live trace has the errors the server answered, and Hermes's failed return.
    let t = TempDir::new("faults-live");
    let o = loopsim_in(
        &root(),
        &[
            "live",
            "scenarios/live-provider-errors.toml",
            "--runtime",
            &runtime,
            "--seed",
            "1",
            "--out",
            t.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let trace = std::fs::read_to_string(t.join("trace.jsonl")).unwrap();
    let errors = trace
        .lines()
        .filter(|l| l.contains(r#""kind":"model_error""#))
        .count();
    assert!(errors >= 3, "{errors} provider errors in the live trace");
    assert!(trace.contains("api_call_failed(rate_limit)"), "{trace}");
}

#[test]
fn explore_draws_fault_sites_per_seed_and_its_rerun_line_and_replay_reproduce_them() {
    // Over 0..40 seeds some runs of a fault-free scenario meet provider errors, and none
    // breaks an invariant.
    let o = loopsim_in(
        &root(),
        &[
            "explore",
            "scenarios/two-call-cycle.toml",
            "--seeds",
            "0..40",
            "--faults",
            "--format",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["runs"], 40, "{v}");
    let mut met = 0;
    for seed in 0..12u64 {
        let s = seed.to_string();
        let with = trace_events(
            "scenarios/two-call-cycle.toml",
            &["--seed", &s, "--seeded-faults"],
        );
        let without = trace_events("scenarios/two-call-cycle.toml", &["--seed", &s]);
        let errors = of_kind(&with, "model_error").len();
        assert!(of_kind(&without, "model_error").is_empty());
        if errors > 0 {
            met += 1;
            assert_eq!(with[0]["faults"], "seeded", "the header says so");
            assert_ne!(with, without);
        }
    }
    assert!(
        (2..=10).contains(&met),
        "{met} of 12 seeds met provider errors"
    );
    // A seeded-fault trace replays byte for byte: the header carries the switch.
    let t = TempDir::new("faults-replay");
    let o = loopsim_in(
        &root(),
        &[
            "run",
            "scenarios/two-call-cycle.toml",
            "--seed",
            "4",
            "--seeded-faults",
            "--out",
            t.to_str().unwrap(),
            "-q",
        ],
    );
    // (Exit 1: the scenario's expected halt does not come when the provider gives out.)
    assert_eq!(o.status.code(), Some(1), "{}", output_text(&o));
    let trace = t.join("trace.jsonl");
    let summary = std::fs::read_to_string(t.join("summary.md")).unwrap();
    assert!(
        summary.contains("--seed 4 --seeded-faults"),
        "the rerun line: {summary}"
    );
    let o = loopsim_in(&root(), &["replay", trace.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    assert!(output_text(&o).contains("identical"));
}

#[test]
fn agent_api_max_retries_sets_the_attempts_as_hermes_reads_it() {
    let t = TempDir::new("faults-retries");
    let attempts = |yaml: &str| -> (usize, String) {
        let cfg = t.join("config.yaml");
        std::fs::write(&cfg, yaml).unwrap();
        let evs = trace_events(
            "scenarios/live-provider-down.toml",
            &["--config", cfg.to_str().unwrap()],
        );
        let errors = of_kind(&evs, "model_error");
        let last = errors.last().unwrap()["detail"]
            .as_str()
            .unwrap()
            .to_string();
        (errors.len(), last)
    };
    assert_eq!(attempts("agent:\n  api_max_retries: 5\n").0, 5);
    // Python's int(): a float is cut, 0 is raised to 1, a word falls back to 3.
    assert_eq!(attempts("agent:\n  api_max_retries: 2.9\n").0, 2);
    let (n, last) = attempts("agent:\n  api_max_retries: 0\n");
    assert_eq!(
        (n, last.as_str()),
        (1, "server_error (HTTP 500), attempt 1 of 1")
    );
    assert_eq!(attempts("agent:\n  api_max_retries: many\n").0, 3);
    // The real loop reads the same key from the same file.
    let Some(py) = python_or_skip(Venv::HermesLive, "api_max_retries live") else {
        return;
    };
    let cfg = t.join("two.yaml");
    std::fs::write(&cfg, "agent:\n  api_max_retries: 2\n").unwrap();
    let o = loopsim_in(
        &root(),
        &[
            "diff",
            "scenarios/live-provider-down.toml",
            "--live",
            &format!("hermes={}", py.display()),
            "--config",
            cfg.to_str().unwrap(),
            "--format",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["identical"], true, "{v}");
    assert_eq!(v["compared_events"]["live"], 4, "{v}");
}

/// live-delegation with its workers on a model of their own whose requests fail with HTTP 500
/// at `rate`: a child that meets a provider it cannot get through.
fn failing_children(t: &TempDir, rate: f64) -> std::path::PathBuf {
    let text = std::fs::read_to_string(root().join("scenarios/live-delegation.toml")).unwrap();
    let (head, worker) = text.split_once("[agents.worker]").unwrap();
    let flaky = format!(
        "[models.flaky]\nlatency_s = {{ lognormal = [5.0, 0.2] }}\noutput_tokens = {{ normal = [200, 40] }}\ncache_read_share = 0.9\nprice = {{ input = 3.0, cache_read = 0.30, output = 15.0 }}\nfaults = {{ server_error = {rate} }}\n\n"
    );
    let worker = worker.replacen("model = \"main\"", "model = \"flaky\"", 1);
    let p = t.join(format!("children-{rate}.toml"));
    std::fs::write(&p, format!("{head}{flaky}[agents.worker]{worker}")).unwrap();
    p
}

#[test]
fn a_child_whose_provider_fails_ends_its_task_and_the_parent_reads_the_results() {
    let t = TempDir::new("failing-children");
    let down = failing_children(&t, 1.0);
    let evs = trace_events(&down, &[]);
    let of_agent = |agent: &str, kind: &str| -> Vec<Value> {
        evs.iter()
            .filter(|e| e["agent"] == agent && e["kind"] == kind)
            .cloned()
            .collect()
    };
    for w in ["worker#1", "worker#2"] {
        // Three attempts of its first call, then the child's run fails: no reply, no tool.
        assert_eq!(of_agent(w, "model_error").len(), 3, "{w}");
        assert!(of_agent(w, "model_call").is_empty(), "{w}");
        let end = &of_agent(w, "turn_end")[0];
        assert_eq!(end["detail"], "api_call_failed(server_error)", "{w}");
        assert_eq!(of_agent(w, "child_done").len(), 1, "{w}");
    }
    // The parent's next turn opens on the two results all the same, and answers.
    assert_eq!(of_agent("parent", "background_result")[0]["children"], 2);
    let ends: Vec<Value> = of_agent("parent", "turn_end")
        .iter()
        .map(|e| e["detail"].clone())
        .collect();
    assert_eq!(
        ends,
        [
            "text_response(finish_reason=stop)",
            "text_response(finish_reason=stop)"
        ]
    );
    // At a lower rate, seed 1 fails one child and lets the other finish its searches.
    let some = failing_children(&t, 0.6);
    let evs = trace_events(&some, &["--seed", "1"]);
    let child_ends: Vec<&str> = of_kind(&evs, "turn_end")
        .iter()
        .filter(|e| e["agent"] != "parent")
        .map(|e| e["detail"].as_str().unwrap())
        .collect();
    assert!(
        child_ends.contains(&"api_call_failed(server_error)"),
        "{child_ends:?}"
    );
    assert!(
        child_ends.contains(&"text_response(finish_reason=stop)"),
        "{child_ends:?}"
    );
    // The real loop: Hermes's children retry and give up as the simulation's do, and its
    // parent goes on.
    let Some(py) = python_or_skip(Venv::HermesLive, "failing children live") else {
        return;
    };
    let runtime = format!("hermes={}", py.display());
    for (path, seed) in [(&down, "34"), (&some, "1"), (&some, "3")] {
        live_identical(&runtime, path, seed);
    }
}

#[test]
fn the_report_counts_each_agents_failed_attempts_and_its_waits() {
    let t = TempDir::new("provider-errors-report");
    let out = t.join("r");
    let o = loopsim_in(
        &root(),
        &[
            "run",
            "scenarios/live-provider-errors.toml",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let evs: Vec<Value> = std::fs::read_to_string(out.join("trace.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let failed = of_kind(&evs, "model_error").len();
    let usage = &evs.last().unwrap()["summary"]["agents"][0]["usage"];
    let wait_s = usage["retry_wait_us"].as_u64().unwrap() as f64 / 1e6;
    let line =
        format!("provider errors: parent {failed} failed attempts, {wait_s:.1} s waiting to retry");
    assert!(failed >= 3);
    assert!(
        output_text(&o).contains(&line),
        "{line} in {}",
        output_text(&o)
    );
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.contains(&line), "{line} in {md}");
    // A run without provider errors says nothing of them.
    let o = loopsim_in(
        &root(),
        &[
            "run",
            "scenarios/two-call-cycle.toml",
            "--out",
            t.join("c").to_str().unwrap(),
        ],
    );
    assert!(!output_text(&o).contains("provider errors"));
}

/// Tool hangs: a hung call runs until its tool's timeout and comes back as the timeout error
/// (for `terminal`, with Hermes's exit code 124); the key is checked; a sweep sets it on every
/// timed tool; and the run matches the real Hermes 0.19.0 loop, warnings included.
#[test]
fn a_hung_call_runs_until_its_timeout_and_the_real_loop_warns_as_the_simulation_does() {
    let t = TempDir::new("tool-hangs");
    let sc = "scenarios/live-tool-hangs.toml";
    let evs = trace_events(sc, &[]);
    let calls = of_kind(&evs, "tool_call");
    let hung: Vec<&&Value> = calls
        .iter()
        .filter(|e| e["latency_us"] == 30_000_000)
        .collect();
    // Seed 44 draws three hangs (calls 2, 3 and 7), each a failure at exactly 30 s.
    assert_eq!(hung.len(), 3, "{calls:?}");
    assert!(hung.iter().all(|e| e["failed"] == true));
    assert!(
        calls
            .iter()
            .filter(|e| e["latency_us"] != 30_000_000)
            .all(|e| e["failed"] == false && e["latency_us"].as_u64().unwrap() < 6_000_000)
    );
    // The second identical timeout error is a repeated failure.
    let warn = of_kind(&evs, "decision");
    assert_eq!(warn.len(), 1, "{warn:?}");
    assert_eq!(warn[0]["code"], "repeated_exact_failure_warning");

    // Without a timeout a hang would never end: refused, naming the file, line and key.
    let text = std::fs::read_to_string(root().join(sc)).unwrap();
    let p = t.join("s.toml");
    std::fs::write(&p, text.replace("timeout_s = 30\n", "")).unwrap();
    let o = loopsim_in(&root(), &["run", p.to_str().unwrap()]);
    let out = output_text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}");
    assert!(
        out.contains("s.toml:") && out.contains("tools.terminal.hang_probability"),
        "{out}"
    );
    std::fs::write(
        &p,
        text.replace("hang_probability = 0.4", "hang_probability = 1.5"),
    )
    .unwrap();
    let o = loopsim_in(&root(), &["run", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", output_text(&o));

    // A sweep sets it on every timed tool, and refuses a scenario with none.
    sweep_sets_the_rate_and_refuses_a_scenario_without_the_site(&t, sc, "tool_hang", "timeout_s");

    if python_or_skip(Venv::HermesLive, "live tool hangs").is_none() {
        return;
    }
    for seed in ["44", "1", "2"] {
        live_identical("hermes", std::path::Path::new(sc), seed);
    }
}

/// Child crashes: a child's code raises at the top of an iteration; its parent's delegation
/// reports it failed with the calls it had begun, the other children run on, the key is
/// checked, a sweep sets it on every delegated agent, seeds draw it under `--seeded-faults`,
/// and the run matches the real Hermes 0.19.0 loop, synchronous and background.
#[test]
fn a_crashed_child_is_reported_failed_and_the_real_loop_does_as_the_simulation_does() {
    let t = TempDir::new("child-crash");
    let sc = "scenarios/live-child-crash.toml";
    let evs = trace_events(sc, &[]);
    let crashes = of_kind(&evs, "child_crash");
    // Seed 3: helper#1 raises at its first iteration, helper#2 after two searches.
    let at: Vec<(&str, u64, u64)> = crashes
        .iter()
        .map(|e| {
            (
                e["agent"].as_str().unwrap(),
                e["call"].as_u64().unwrap(),
                e["budget_used"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        at,
        [("lead#1/helper#1", 0, 0), ("lead#1/helper#2", 2, 2)],
        "{crashes:?}"
    );
    assert!(crashes.iter().all(|e| e["detail"] == "error"));
    for c in &crashes {
        let agent = c["agent"].as_str().unwrap();
        let after = evs
            .iter()
            .skip_while(|e| *e != *c)
            .filter(|e| e["agent"] == agent);
        // Nothing after the crash but the delegation's record of the child: no call, no turn end.
        let kinds: Vec<&str> = after.map(|e| e["kind"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["child_crash", "child_done"], "{agent}");
        let searches = of_kind(&evs, "tool_call")
            .into_iter()
            .filter(|e| e["agent"] == agent)
            .count() as u64;
        assert_eq!(searches, c["call"].as_u64().unwrap(), "{agent}");
    }
    // The third helper finishes, and the lead merges and answers.
    let ends = of_kind(&evs, "turn_end");
    for agent in ["lead#1/helper#3", "lead#1", "parent"] {
        assert!(
            ends.iter()
                .any(|e| e["agent"] == agent && e["detail"] == "text_response(finish_reason=stop)"),
            "{agent}: {ends:?}"
        );
    }
    let o = loopsim_in(
        &root(),
        &["run", sc, "--out", t.join("run").to_str().unwrap()],
    );
    let out = output_text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains(
            "children cut short: crashed: lead#1/helper#1 after 0 model calls, \
             lead#1/helper#2 after 2 model calls"
        ),
        "{out}"
    );
    assert!(
        out.contains("expect crashed_children: pass (expected 2, got 2)"),
        "{out}"
    );

    // Only a delegated agent can crash, and the rate is a probability.
    let text = std::fs::read_to_string(root().join(sc)).unwrap();
    let p = t.join("s.toml");
    for (from, to, key) in [
        (
            "context_tokens = 5000\n",
            "context_tokens = 5000\ncrash_probability = 0.1\n",
            "agents.parent.crash_probability",
        ),
        (
            "crash_probability = 0.25",
            "crash_probability = 1.5",
            "agents.helper.crash_probability",
        ),
        (
            "{ delegate = \"helper\", tasks = 3 }",
            "{ answer = \"alone\" }",
            "agents.helper.crash_probability",
        ),
    ] {
        assert!(text.contains(from), "{from}");
        std::fs::write(&p, text.replace(from, to)).unwrap();
        let o = loopsim_in(&root(), &["run", p.to_str().unwrap()]);
        let out = output_text(&o);
        assert_eq!(o.status.code(), Some(2), "{out}");
        assert!(out.contains("s.toml:") && out.contains(key), "{key}: {out}");
    }

    // A sweep sets it on every delegated agent (at 1 the lead itself crashes at once), and
    // refuses a scenario that never delegates.
    sweep_sets_the_rate_and_refuses_a_scenario_without_the_site(&t, sc, "child_crash", "delegates");
    assert!(!of_kind(&trace_events(sc, &["--seed", "5"]), "child_crash").is_empty());

    // Seeds switch crashes on for delegated agents without a rate: some seeds of
    // live-delegation crash a worker, and none does without --seeded-faults.
    let crashed_seeds = (0..12)
        .filter(|s| {
            let s = s.to_string();
            let seeded = trace_events(
                "scenarios/live-delegation.toml",
                &["--seed", &s, "--seeded-faults"],
            );
            let plain = trace_events("scenarios/live-delegation.toml", &["--seed", &s]);
            assert!(of_kind(&plain, "child_crash").is_empty());
            !of_kind(&seeded, "child_crash").is_empty()
        })
        .count();
    assert!((1..12).contains(&crashed_seeds), "{crashed_seeds}");

    if python_or_skip(Venv::HermesLive, "live child crashes").is_none() {
        return;
    }
    for seed in ["3", "1", "2"] {
        live_identical("hermes", std::path::Path::new(sc), seed);
    }
    // Background workers crashing under the parent's own delegation.
    let bg = t.join("background.toml");
    let text = std::fs::read_to_string(root().join("scenarios/live-delegation.toml")).unwrap();
    std::fs::write(
        &bg,
        text.replace(
            "context_tokens = 4000\n",
            "context_tokens = 4000\ncrash_probability = 0.3\n",
        ),
    )
    .unwrap();
    for seed in ["34", "1"] {
        let evs = trace_events(&bg, &["--seed", seed]);
        assert!(!of_kind(&evs, "child_crash").is_empty(), "seed {seed}");
        live_identical("hermes", &bg, seed);
    }
}

/// `--grid faults.KEY=0,1` over two seeds runs both values, and a scenario without the fault's
/// site (`two-call-cycle`) is refused with exit 2, the message mentioning `hint`.
fn sweep_sets_the_rate_and_refuses_a_scenario_without_the_site(
    t: &TempDir,
    sc: &str,
    key: &str,
    hint: &str,
) {
    let out = t.join(format!("sweep-{key}"));
    let o = loopsim_in(
        &root(),
        &[
            "sweep",
            sc,
            "--grid",
            &format!("faults.{key}=0,1"),
            "--seeds",
            "0..2",
            "--out",
            out.to_str().unwrap(),
            "-q",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let csv = std::fs::read_to_string(out.join("sweep.csv")).unwrap();
    let at_one = format!("faults.{key}=1");
    assert_eq!(
        csv.lines().filter(|l| l.contains(&at_one)).count(),
        2,
        "{csv}"
    );
    let o = loopsim_in(
        &root(),
        &[
            "sweep",
            "scenarios/two-call-cycle.toml",
            "--grid",
            &format!("faults.{key}=0.1"),
            "--out",
            t.join(format!("sweep-{key}-refused")).to_str().unwrap(),
            "-q",
        ],
    );
    let text = output_text(&o);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(text.contains(hint), "{text}");
}
