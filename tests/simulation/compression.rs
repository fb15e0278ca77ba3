//! Hermes's compression settings (`compression.enabled`, `threshold`, `target_ratio`) read as
//! 0.19.0 reads them and used by the simulator: when compression fires, what it keeps, the
//! turn without it, bad values, and sweeps over them.

use crate::common;

use common::{TempDir, loopsim_in, output_text, root};
use serde_json::Value;

const SCENARIO: &str = "scenarios/incident-96247-tool-search-context.toml";

/// Runs the incident with a config (none for `""`): the trace's events and the exit code.
fn run(t: &TempDir, name: &str, config: &str) -> (Vec<Value>, Option<i32>, String) {
    let out = t.join(name);
    let mut args = vec!["run", SCENARIO, "--out", out.to_str().unwrap(), "-q"];
    let cfg = t.join(format!("{name}.yaml"));
    if !config.is_empty() {
        std::fs::write(&cfg, config).unwrap();
        args.extend(["--config", cfg.to_str().unwrap()]);
    }
    let o = loopsim_in(&root(), &args);
    let evs = std::fs::read_to_string(out.join("trace.jsonl"))
        .map(|s| {
            s.lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect()
        })
        .unwrap_or_default();
    (evs, o.status.code(), output_text(&o))
}

fn compressions(evs: &[Value]) -> Vec<String> {
    evs.iter()
        .filter(|e| e["kind"] == "compression")
        .map(|e| e["detail"].as_str().unwrap().to_string())
        .collect()
}

fn config_hash(evs: &[Value]) -> Value {
    evs.last().unwrap()["summary"]["config_hash"].clone()
}

#[test]
fn the_threshold_and_the_tail_move_compression_and_defaults_hash_as_before() {
    let t = TempDir::new("compression-settings");
    let (base, code, text) = run(&t, "base", "");
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(compressions(&base)[0], "context 97533 -> 56326 tokens");
    // 90% of the 130 K window: the first compression waits for a larger context.
    let (late, _, _) = run(&t, "late", "compression:\n  threshold: 0.9\n");
    let first = &compressions(&late)[0];
    let before: u64 = first
        .trim_start_matches("context ")
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(before >= 117_000, "{first}");
    // A larger tail keeps more after each compression.
    let (tail, _, _) = run(&t, "tail", "compression:\n  target_ratio: 0.5\n");
    assert_ne!(compressions(&tail)[0], compressions(&base)[0]);
    assert!(compressions(&tail)[0].starts_with("context 97533 -> "));
    // Hermes's own defaults written out change nothing, not even the fingerprint.
    let (same, code, text) = run(
        &t,
        "same",
        "compression:\n  enabled: true\n  threshold: 0.5\n  target_ratio: 0.2\n",
    );
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(config_hash(&same), config_hash(&base));
    assert_ne!(config_hash(&late), config_hash(&base));
}

#[test]
fn enabled_is_on_only_for_true_1_or_yes_and_off_means_no_compression() {
    let t = TempDir::new("compression-enabled");
    for (i, value) in ["false", "'on'", "null", "0"].iter().enumerate() {
        let (evs, _, text) = run(
            &t,
            &format!("off{i}"),
            &format!("compression:\n  enabled: {value}\n"),
        );
        assert!(compressions(&evs).is_empty(), "enabled: {value}: {text}");
        let end = evs.iter().find(|e| e["kind"] == "turn_end").unwrap();
        assert_eq!(end["detail"], "context_compression_exhausted", "{value}");
    }
    for (i, value) in ["true", "'YES'", "1"].iter().enumerate() {
        let (evs, _, _) = run(
            &t,
            &format!("on{i}"),
            &format!("compression:\n  enabled: {value}\n"),
        );
        // One that frees 41 K tokens, three that free nothing (docs/hermes-semantics.md).
        assert_eq!(compressions(&evs).len(), 4, "enabled: {value}");
    }
}

#[test]
fn a_ratio_hermes_cannot_read_is_an_error_and_a_typo_gets_the_nearest_key() {
    let t = TempDir::new("compression-bad");
    let (evs, code, text) = run(
        &t,
        "bad",
        "compression:\n  enabled: true\n  threshold: half\n",
    );
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("bad.yaml:3"), "{text}");
    assert!(text.contains("compression.threshold"), "{text}");
    assert!(evs.is_empty(), "no output on an error");
    let (_, code, text) = run(&t, "typo", "compression:\n  treshold: 0.6\n");
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("did you mean `compression.threshold`"),
        "{text}"
    );
}

#[test]
fn sweeps_take_the_threshold_and_a_later_compression_costs_more() {
    let t = TempDir::new("compression-sweep");
    let o = loopsim_in(
        &root(),
        &[
            "sweep",
            SCENARIO,
            "--grid",
            "compression.threshold=0.75,0.9",
            "--seeds",
            "0..3",
            "--out",
            t.to_str().unwrap(),
            "-q",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let csv = std::fs::read_to_string(t.join("aggregate.csv")).unwrap();
    let waste = |setting: &str| -> f64 {
        let line = csv
            .lines()
            .find(|l| l.starts_with(&format!("{setting},")))
            .unwrap_or_else(|| panic!("{setting} in {csv}"));
        line.split(',').nth(4).unwrap().parse().unwrap()
    };
    assert!(
        waste("compression.threshold=0.9") > waste("compression.threshold=0.75") * 1.1,
        "{csv}"
    );
    let o = loopsim_in(
        &root(),
        &[
            "sweep",
            SCENARIO,
            "--grid",
            "compression.threshold=-1",
            "--seeds",
            "0..1",
            "--out",
            t.join("bad").to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", output_text(&o));
}

/// Runs `scenario` with a config (none for `""`): the parent's events, the run's summary
/// (`--format json`), and the exit code with the output.
fn run_json(
    t: &TempDir,
    scenario: &str,
    name: &str,
    config: &str,
) -> (Vec<Value>, Value, Option<i32>, String) {
    let out = t.join(name);
    let mut args = vec![
        "run",
        scenario,
        "--out",
        out.to_str().unwrap(),
        "--format",
        "json",
    ];
    let cfg = t.join(format!("{name}.yaml"));
    if !config.is_empty() {
        std::fs::write(&cfg, config).unwrap();
        args.extend(["--config", cfg.to_str().unwrap()]);
    }
    let o = loopsim_in(&root(), &args);
    let text = output_text(&o);
    let summary = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    let evs = std::fs::read_to_string(out.join("trace.jsonl"))
        .map(|s| {
            s.lines()
                .map(|l| serde_json::from_str::<Value>(l).unwrap())
                .filter(|e| e["agent"] == "parent")
                .collect()
        })
        .unwrap_or_default();
    (evs, summary, o.status.code(), text)
}

#[test]
fn a_window_in_the_config_compresses_the_incident_and_its_cache_reads_fall() {
    let t = TempDir::new("context-length");
    let spin = "scenarios/execute-code-spin-wait.toml";
    let parent = |s: &Value, k: &str| s["summary"]["agents"][0]["usage"][k].as_u64().unwrap();
    let (plain, s0, code, text) = run_json(&t, spin, "plain", "");
    assert_eq!(code, Some(0), "{text}");
    assert!(
        compressions(&plain).is_empty(),
        "the scenario gives no window"
    );
    // The incident's model under a 200 K window: Hermes compresses from 75% (150 K), which
    // its context passes once, early in the spin-wait.
    let cfg = "model:\n  default: anthropic/claude-sonnet-4\n  context_length: 200000\n";
    let (w200, s1, code, text) = run_json(&t, spin, "w200", cfg);
    assert_eq!(code, Some(0), "{text}");
    let comp = compressions(&w200);
    assert_eq!(comp.len(), 1, "{comp:?}");
    let (before, after) = comp[0]
        .trim_start_matches("context ")
        .trim_end_matches(" tokens")
        .split_once(" -> ")
        .map(|(a, b)| (a.parse::<u64>().unwrap(), b.parse::<u64>().unwrap()))
        .unwrap();
    assert!((150_000..152_000).contains(&before), "{}", comp[0]);
    assert!(after < 70_000, "{}", comp[0]);
    // The call after it reads the compressed context, none of it from the cache.
    let i = w200
        .iter()
        .position(|e| e["kind"] == "compression")
        .unwrap();
    let next = w200[i..]
        .iter()
        .find(|e| e["kind"] == "model_call")
        .unwrap();
    assert_eq!(next["input_tokens"].as_u64(), Some(after));
    assert_eq!(next["cache_read_tokens"].as_u64(), Some(0));
    // Every later call re-reads far less: the parent's input and cache reads fall by more
    // than 40%, its cost with them, and the loop still runs until the user's stop.
    let (in0, in1) = (parent(&s0, "input_tokens"), parent(&s1, "input_tokens"));
    let (c0, c1) = (
        parent(&s0, "cache_read_tokens"),
        parent(&s1, "cache_read_tokens"),
    );
    assert!(in1 * 10 < in0 * 6, "{in1} of {in0}");
    assert!(c1 * 10 < c0 * 6, "{c1} of {c0}");
    assert_eq!(s1["summary"]["parent_exit_reason"], "interrupted_by_user");
    assert_ne!(s1["summary"]["config_hash"], s0["summary"]["config_hash"]);
    assert_eq!(
        s1["summary"]["settings"]["context_window"],
        "200000 tokens (model.context_length): compression from 150000 tokens"
    );
    let md = std::fs::read_to_string(t.join("w200").join("summary.md")).unwrap();
    assert!(md.contains("| context window | 200000 tokens"), "{md}");
    assert!(s0["summary"]["settings"].get("context_window").is_none());
    // A window the context never nears changes nothing but the config's hash.
    let (w1m, s2, _, _) = run_json(&t, spin, "w1m", "model:\n  context_length: 1000000\n");
    assert!(compressions(&w1m).is_empty());
    assert_eq!(parent(&s2, "input_tokens"), in0);
    // Compression off: the window is set, nothing compresses.
    let (off, s3, _, _) = run_json(
        &t,
        spin,
        "off",
        "model:\n  context_length: 200000\ncompression:\n  enabled: false\n",
    );
    assert!(compressions(&off).is_empty());
    assert_eq!(
        s3["summary"]["settings"]["context_window"],
        "200000 tokens (model.context_length): compression off"
    );
}

#[test]
fn the_window_is_read_as_hermes_reads_it() {
    let t = TempDir::new("context-length-keys");
    let cycle = "scenarios/two-call-cycle.toml";
    // Hermes's model section holds much else (and may be a plain name): none of it is
    // reported; a near miss of the window and a value int() refuses are.
    for (cfg, want) in [
        ("model: gpt-4o\n", None),
        (
            "model:\n  default: gpt-4o\n  provider: openrouter\n  max_tokens: 4096\n",
            None,
        ),
        (
            "model:\n  context_lenght: 200000\n",
            Some(
                "`model.context_lenght`: not a key Hermes reads (did you mean `model.context_length`?)",
            ),
        ),
        (
            "model:\n  context_length: 256K\n",
            Some("`model.context_length`: `256K` is not a plain integer"),
        ),
        (
            "model:\n  context_length: 0\n",
            Some("`model.context_length`: 0 is not above 0: Hermes detects the window itself"),
        ),
    ] {
        let (_, _, code, text) = run_json(&t, cycle, "k", cfg);
        assert_eq!(code, Some(0), "{cfg}: {text}");
        match want {
            Some(w) => assert!(
                text.contains(w) && text.contains("k.yaml:2"),
                "{cfg}: {text}"
            ),
            None => assert!(!text.contains("loopsim: warning"), "{cfg}: {text}"),
        }
    }
    // A scenario says exactly what it means: the window only, and a value Hermes reads.
    let text = std::fs::read_to_string(root().join(cycle)).unwrap();
    for (table, want) in [
        (
            "[config.model]\ncontext_length = \"256K\"\n",
            "config.model.context_length",
        ),
        (
            "[config.model]\ndefault = \"gpt-4o\"\n",
            "config.model.default",
        ),
    ] {
        let p = t.join("s.toml");
        std::fs::write(
            &p,
            text.replace("[models.main]", &format!("{table}\n[models.main]")),
        )
        .unwrap();
        let (_, _, code, out) = run_json(&t, p.to_str().unwrap(), "s", "");
        assert_eq!(code, Some(2), "{table}: {out}");
        assert!(
            out.contains(want) && out.contains("s.toml:"),
            "{table}: {out}"
        );
    }
    // Live, Hermes gets the same window (docs/live.md); the runs stay identical.
    let Some(_) = common::python_or_skip(common::Venv::HermesLive, "a window set live") else {
        return;
    };
    let p = t.join("w.yaml");
    std::fs::write(&p, "model:\n  context_length: 200000\n").unwrap();
    let o = loopsim_in(
        &root(),
        &[
            "diff",
            cycle,
            "--live",
            "hermes",
            "--config",
            p.to_str().unwrap(),
        ],
    );
    let out = output_text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
}

#[test]
fn sweeps_take_the_window() {
    let t = TempDir::new("context-length-sweep");
    let out = t.join("sweep");
    let o = loopsim_in(
        &root(),
        &[
            "sweep",
            "scenarios/execute-code-spin-wait.toml",
            "--grid",
            "model.context_length=200000,1000000",
            "--seeds",
            "0..2",
            "--out",
            out.to_str().unwrap(),
            "--format",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let csv = std::fs::read_to_string(out.join("aggregate.csv")).unwrap();
    let waste = |setting: &str| -> f64 {
        let line = csv.lines().find(|l| l.starts_with(setting)).unwrap();
        let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
        let col = header.iter().position(|h| *h == "waste_usd_mean").unwrap();
        line.split(',').nth(col).unwrap().parse().unwrap()
    };
    // A 200 K window compresses the spin-wait's context once: every later call is cheaper.
    assert!(waste("model.context_length=200000") < 0.7 * waste("model.context_length=1000000"));
}

#[test]
fn the_report_names_compression_settings_a_config_changed() {
    let t = TempDir::new("compression-report");
    let setting = |s: &Value| s["summary"]["settings"]["compression"].clone();
    let (_, s, _, _) = run_json(&t, SCENARIO, "d", "");
    assert_eq!(setting(&s), Value::Null, "the defaults go unsaid");
    let (_, s, _, _) = run_json(&t, SCENARIO, "t", "compression:\n  threshold: 0.9\n");
    assert_eq!(
        setting(&s),
        "threshold 0.9 of the window, target_ratio 0.2 (a tail of that share of the threshold)"
    );
    let md = std::fs::read_to_string(t.join("t").join("summary.md")).unwrap();
    assert!(
        md.contains("| compression | threshold 0.9 of the window"),
        "{md}"
    );
    let (_, s, _, _) = run_json(&t, SCENARIO, "o", "compression:\n  enabled: no\n");
    assert_eq!(setting(&s), "off (compression.enabled)");
}

/// `loopsim live SCENARIO` under Hermes: its exit code, its output and the live trace.
fn live_run(t: &TempDir, scenario: &str) -> (Option<i32>, String, Vec<Value>) {
    let out = t.join(scenario.replace('/', "_"));
    let o = loopsim_in(&root(), &["live", scenario, "--out", out.to_str().unwrap()]);
    let evs = std::fs::read_to_string(out.join("trace.jsonl"))
        .map(|s| {
            s.lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect()
        })
        .unwrap_or_default();
    (o.status.code(), output_text(&o), evs)
}

/// The live trace's estimates: (call, Hermes's own estimate of the request, the scripted
/// size), the summary requests with no call.
fn estimates(evs: &[Value]) -> Vec<(Option<u64>, u64, u64)> {
    evs.iter()
        .filter(|e| e["kind"] == "context_estimate")
        .map(|e| {
            let scripted = e["detail"]
                .as_str()
                .unwrap()
                .rsplit("scripted ")
                .next()
                .unwrap();
            let scripted: u64 = scripted.trim_end_matches(" tokens").parse().unwrap();
            (
                e["call"].as_u64(),
                e["input_tokens"].as_u64().unwrap(),
                scripted,
            )
        })
        .collect()
}

/// Compression against the real Hermes 0.19.0 loop (docs/live.md). The server pads what it
/// returns so that Hermes's own estimate of each request, from which it decides to compact,
/// is the context the scenario scripts; the run must then be identical event by event
/// (compressions where the simulator makes them, their attempt counts and figures, the calls
/// and their budget after them), and Hermes's estimate of what its compaction left must be
/// the simulator's figure.
#[test]
fn live_hermes_compacts_where_and_as_the_simulator_does() {
    let Some(_) = common::python_or_skip(common::Venv::HermesLive, "live compression") else {
        return;
    };
    let t = TempDir::new("live-compression");
    let (code, text, evs) = live_run(&t, "scenarios/live-compression.toml");
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("matches the live run event for event"),
        "{text}"
    );
    let comps: Vec<&Value> = evs.iter().filter(|e| e["kind"] == "compression").collect();
    assert_eq!(comps.len(), 2, "{comps:?}");
    assert_eq!(comps[0]["detail"], "context 58414 -> 46442 tokens");
    let est = estimates(&evs);
    // Call 1 is the system prompt, the tools and the task (the scenario says 12,000 tokens;
    // the first reply makes up the rest). From call 2 to call 11 (across the first compaction,
    // before call 10) Hermes's estimate is the scripted context within 50 tokens: the
    // compaction kept what the simulator keeps.
    for &(call, hermes, scripted) in &est {
        if let Some(c @ 2..=11) = call {
            assert!(
                hermes.abs_diff(scripted) <= 50,
                "call {c}: {hermes} vs {scripted}"
            );
        }
    }
    // The summary request reads what the simulator says it reads, within 5%.
    let (_, hermes, scripted) = est.iter().find(|e| e.0.is_none()).unwrap();
    assert!(
        hermes.abs_diff(*scripted) * 20 <= *scripted,
        "{hermes} vs {scripted}"
    );
    // The call after each compaction reads nothing from the cache.
    let after = evs
        .iter()
        .skip_while(|e| e["kind"] != "compression")
        .find(|e| e["kind"] == "model_call")
        .unwrap();
    assert_eq!(after["call"], 10);
    assert_eq!(after["input_tokens"], 46442);
    assert_eq!(after["cache_read_tokens"], 0);

    // Past the attempts: the third compaction frees nothing, the check after call 13
    // compacts once more, uncounted, and the provider refuses call 14 as larger than the
    // window: the turn ends there, its iteration spent (budget 14, 13 calls answered).
    let (code, text, evs) = live_run(&t, "scenarios/live-compression-exhausted.toml");
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("matches the live run event for event"),
        "{text}"
    );
    let counts: Vec<u64> = evs
        .iter()
        .filter(|e| e["kind"] == "compression")
        .map(|e| e["count"].as_u64().unwrap())
        .collect();
    assert_eq!(counts, [1, 2, 3, 3]);
    let end = evs.iter().find(|e| e["kind"] == "turn_end").unwrap();
    assert_eq!(
        (&end["detail"], &end["call"], &end["budget_used"]),
        (&Value::from("unknown"), &Value::from(13), &Value::from(14))
    );
}
