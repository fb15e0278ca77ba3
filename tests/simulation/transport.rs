//! Dropped response streams: Hermes 0.19.0's stream retries, its backoff between attempts and
//! its one client rebuild in the simulation, the scenario key checked, the sessions whose
//! handling loopsim does not simulate refused, and the same drops through the real Hermes loop
//! (`loopsim diff --live`).

use crate::common;

use common::{
    TempDir, Venv, live_identical, loopsim_in, of_kind, output_text, python_or_skip, root,
    trace_events,
};
use serde_json::Value;

fn t_us(e: &Value) -> u64 {
    e["t_us"].as_u64().unwrap()
}

#[test]
fn an_unreachable_provider_gets_eighteen_streams_then_the_turn_fails_as_a_timeout() {
    let evs = trace_events("scenarios/live-provider-unreachable.toml", &[]);
    let errors = of_kind(&evs, "model_error");
    assert_eq!(errors.len(), 18);
    for (i, e) in errors.iter().enumerate() {
        let (round, attempt, stream) = (i / 9, (i % 9) / 3 + 1, i % 3 + 1);
        let mut want =
            format!("timeout (stream dropped), attempt {attempt} of 3, stream {stream} of 3");
        if round == 1 {
            want.push_str(", rebuilt client");
        }
        assert_eq!(e["detail"], want.as_str(), "error {i}");
    }
    // Each drop takes its 0.2 s; a new stream goes out at once, a new attempt after the
    // backoff (2-3 s, then 4-6 s), and the rebuilt client's first after exactly 6 s.
    for i in 1..18 {
        let gap = t_us(errors[i]) - t_us(errors[i - 1]) - 200_000;
        let wanted = match i % 9 {
            0 => 6_000_000..=6_000_000,
            3 => 2_000_000..=3_000_000,
            6 => 4_000_000..=6_000_000,
            _ => 0..=0,
        };
        assert!(wanted.contains(&gap), "gap before error {i}: {gap} us");
    }
    let end = of_kind(&evs, "turn_end")[0];
    assert_eq!(end["detail"], "api_call_failed(timeout)");
    assert_eq!(end["budget_used"], 1, "one iteration for all of it");
    assert_eq!(
        t_us(end),
        t_us(errors[17]),
        "the turn fails when the last drop is back"
    );
    assert!(of_kind(&evs, "model_call").is_empty(), "no reply billed");
}

#[test]
fn dropped_streams_spend_no_iteration_and_only_a_third_drop_fails_an_attempt() {
    let evs = trace_events("scenarios/live-dropped-streams.toml", &[]);
    let calls = of_kind(&evs, "model_call");
    let errors = of_kind(&evs, "model_error");
    let end = of_kind(&evs, "turn_end")[0];
    assert_eq!(end["detail"], "text_response(finish_reason=stop)");
    assert_eq!(end["budget_used"].as_u64(), Some(calls.len() as u64));
    let details: Vec<&str> = errors
        .iter()
        .map(|e| e["detail"].as_str().unwrap())
        .collect();
    assert!(
        details.iter().any(|d| d.contains("stream 3 of 3")),
        "{details:?}"
    );
    assert!(
        details.iter().any(|d| d.contains("attempt 2 of 3")),
        "{details:?}"
    );
    // Within one call, an attempt's streams count 1, 2, 3 and the next attempt starts at 1.
    for w in errors.windows(2) {
        let (a, b) = (
            w[0]["detail"].as_str().unwrap(),
            w[1]["detail"].as_str().unwrap(),
        );
        if w[0]["call"] == w[1]["call"] {
            let stream = |d: &str| d.rsplit("stream ").next().unwrap().to_string();
            let next = match stream(a).as_str() {
                "1 of 3" => "2 of 3",
                "2 of 3" => "3 of 3",
                _ => "1 of 3",
            };
            assert_eq!(stream(b), next, "{a} then {b}");
        }
    }
    // The same seed drops the same streams.
    assert_eq!(
        evs,
        trace_events("scenarios/live-dropped-streams.toml", &[])
    );
}

/// `live-dropped-streams` with these faults, written to `t`.
fn with_faults(t: &TempDir, faults: &str, profile: &str) -> std::path::PathBuf {
    let text = std::fs::read_to_string(root().join("scenarios/live-dropped-streams.toml"))
        .unwrap()
        .replace(
            "faults = { dropped_stream = 0.4, latency_s = 0.3 }",
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
fn the_key_is_checked_and_runtimes_without_hermes_s_retries_refuse_it() {
    let t = TempDir::new("transport-keys");
    let cases = [
        (
            "{ droped_stream = 0.4 }",
            "hermes-0.19.0",
            vec!["s.toml:19", "droped_stream", "dropped_stream"],
        ),
        (
            "{ dropped_stream = 1.2 }",
            "hermes-0.19.0",
            vec!["models.main.faults.dropped_stream", "probability"],
        ),
        (
            "{ server_error = 0.5, dropped_stream = 0.6 }",
            "hermes-0.19.0",
            vec!["models.main.faults.dropped_stream", "add up to 1.1"],
        ),
        (
            "{ dropped_stream = 0.4 }",
            "openai-agents-0.24",
            vec!["models.main.faults", "Hermes"],
        ),
    ];
    for (faults, profile, wanted) in cases {
        let p = with_faults(&t, faults, profile);
        let o = loopsim_in(
            &root(),
            &[
                "run",
                p.to_str().unwrap(),
                "-q",
                "--out",
                t.join("r").to_str().unwrap(),
            ],
        );
        let text = output_text(&o);
        assert_eq!(o.status.code(), Some(2), "{faults}: {text}");
        for w in wanted {
            assert!(text.contains(w), "{faults}: wanted {w:?} in {text}");
        }
    }
}

#[test]
fn a_zero_rate_keeps_every_draw_of_the_scenario_without_it() {
    let t = TempDir::new("transport-zero");
    let base = "scenarios/live-provider-errors.toml";
    let text = std::fs::read_to_string(root().join(base)).unwrap();
    let zero = text.replace(
        "server_error = 0.1,",
        "server_error = 0.1, dropped_stream = 0.0,",
    );
    assert_ne!(zero, text);
    let p = t.join("zero.toml");
    std::fs::write(&p, zero).unwrap();
    // The header names the file and its hash, and the end line hashes the header: the
    // events between them must be the same.
    let (with, without) = (trace_events(&p, &[]), trace_events(base, &[]));
    assert_eq!(with.len(), without.len());
    assert_eq!(with[1..with.len() - 1], without[1..without.len() - 1]);
    let summary = |evs: &[Value]| {
        let mut s = evs.last().unwrap()["summary"].clone();
        s.as_object_mut().unwrap().remove("scenario_hash");
        s
    };
    assert_eq!(summary(&with), summary(&without));
}

#[test]
fn a_drop_on_a_session_hermes_calls_large_is_refused_not_guessed() {
    // Hermes reads a dropped stream on more than 120 k tokens as a context overflow and
    // compresses; loopsim stops the run with the reason and the key to change.
    let t = TempDir::new("transport-large");
    let text = std::fs::read_to_string(root().join("scenarios/live-provider-unreachable.toml"))
        .unwrap()
        .replace("context_tokens = 5000", "context_tokens = 130000");
    let p = t.join("large.toml");
    std::fs::write(&p, text).unwrap();
    let o = loopsim_in(
        &root(),
        &[
            "run",
            p.to_str().unwrap(),
            "-q",
            "--out",
            t.join("r").to_str().unwrap(),
        ],
    );
    let text = output_text(&o);
    assert_eq!(o.status.code(), Some(2), "{text}");
    for w in [
        "large.toml",
        "130000 context tokens",
        "context overflow",
        "models.main.faults.dropped_stream",
    ] {
        assert!(text.contains(w), "wanted {w:?} in {text}");
    }
    assert!(
        !t.join("r").join("summary.json").exists(),
        "no report for a run not simulated"
    );
}

/// Drops mixed with server errors: seed 4 rebuilds the client and then fails on a 500,
/// seed 2 rebuilds and finishes, seed 11 fails on a 500 with no rebuild.
#[test]
fn the_real_hermes_loop_retries_dropped_streams_as_the_simulation_does() {
    let Some(py) = python_or_skip(Venv::HermesLive, "dropped streams live") else {
        return;
    };
    let runtime = format!("hermes={}", py.display());
    let t = TempDir::new("transport-live");
    let mixed = with_faults(
        &t,
        "{ dropped_stream = 0.5, server_error = 0.25, latency_s = 0.3 }",
        "hermes-0.19.0",
    );
    for (seed, exit, rebuilt) in [
        ("4", "api_call_failed(server_error)", true),
        ("2", "text_response(finish_reason=stop)", true),
        ("11", "api_call_failed(server_error)", false),
    ] {
        let sim = trace_events(&mixed, &["--seed", seed]);
        assert_eq!(of_kind(&sim, "turn_end")[0]["detail"], exit, "seed {seed}");
        let any_rebuilt = of_kind(&sim, "model_error")
            .iter()
            .any(|e| e["detail"].as_str().unwrap().ends_with("rebuilt client"));
        assert_eq!(any_rebuilt, rebuilt, "seed {seed}");
        let v = live_identical(&runtime, &mixed, seed);
        assert!(v["compared_events"]["live"].as_u64().unwrap() >= 15, "{v}");
    }
}

/// The rows of a sweep's `sweep.csv` with this setting: (seed, exit reason, duration).
fn rows(csv: &str, setting: &str) -> Vec<(String, String, f64)> {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (s, seed, exit, dur) = (
        col("setting"),
        col("seed"),
        col("exit_reason"),
        col("duration_min"),
    );
    lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|f| f[s] == setting)
        .map(|f| (f[seed].into(), f[exit].into(), f[dur].parse().unwrap()))
        .collect()
}

#[test]
fn a_sweep_sets_a_fault_rate_for_every_model_and_checks_its_values() {
    let t = TempDir::new("transport-sweep");
    let out = t.join("sweep");
    let o = loopsim_in(
        &root(),
        &[
            "sweep",
            "scenarios/live-provider-errors.toml",
            "--grid",
            "faults.dropped_stream=0,0.6",
            "--seeds",
            "0..6",
            "--out",
            out.to_str().unwrap(),
            "-q",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let csv = std::fs::read_to_string(out.join("sweep.csv")).unwrap();
    let (base, zero, high) = (
        rows(&csv, ""),
        rows(&csv, "faults.dropped_stream=0.0"),
        rows(&csv, "faults.dropped_stream=0.6"),
    );
    assert_eq!(base.len(), 6);
    // A zero rate is the scenario as written. At 0.6 the scenario's 429s (0.3) and 500s
    // (0.1) leave no attempt answered: every run's first call runs out of attempts.
    assert_eq!(zero, base);
    assert!(
        base.iter().any(|r| r.1.starts_with("text_response")),
        "{base:?}"
    );
    assert_eq!(high.len(), 6);
    assert!(
        high.iter().all(|r| r.1.starts_with("api_call_failed(")),
        "{high:?}"
    );
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        summary.contains("--grid faults.dropped_stream=0.0,0.6"),
        "{summary}"
    );
    // Bad values are refused before any run, naming the flag.
    for (grid, wanted) in [
        ("faults.droped_stream=0.1", "faults.dropped_stream"),
        ("faults.dropped_stream=0..1", "not a range"),
        ("faults.server_error=1.5", "probability"),
        ("faults.dropped_stream=0.7", "more than 1"),
    ] {
        let o = loopsim_in(
            &root(),
            &[
                "sweep",
                "scenarios/live-provider-errors.toml",
                "--grid",
                grid,
                "--seeds",
                "0..1",
                "--out",
                t.join("bad").to_str().unwrap(),
            ],
        );
        let text = output_text(&o);
        assert_eq!(o.status.code(), Some(2), "{grid}: {text}");
        assert!(text.contains(wanted), "{grid}: wanted {wanted:?} in {text}");
    }
    // A profile without Hermes's retries is refused too.
    let o = loopsim_in(
        &root(),
        &[
            "sweep",
            "scenarios/live-heeded-warning.toml",
            "--grid",
            "faults.dropped_stream=0,0.1",
            "--profiles",
            "openai-agents-0.24",
            "--seeds",
            "0..1",
            "--out",
            t.join("sdk").to_str().unwrap(),
        ],
    );
    let text = output_text(&o);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(text.contains("under openai-agents-0.24"), "{text}");
}
