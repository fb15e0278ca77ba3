//! Hermes's compression settings (`compression.enabled`, `threshold`, `target_ratio`) read as
//! 0.19.0 reads them and used by the simulator: when compression fires, what it keeps, the
//! turn without it, bad values, and sweeps over them.

mod common;

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
    assert_eq!(compressions(&base)[0], "context 97602 -> 46000 tokens");
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
    assert!(compressions(&tail)[0].starts_with("context 97602 -> "));
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
        assert_eq!(compressions(&evs).len(), 3, "enabled: {value}");
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
