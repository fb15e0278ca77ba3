//! Reports and sweeps: hand-checked metric arithmetic, file schemas, plots, thread-count
//! independence, sharding, and bad sweep arguments.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("loopsim-reports-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn loopsim(args: &[&str], threads: Option<&str>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_loopsim"));
    c.args(args).current_dir(root());
    if let Some(t) = threads {
        c.env("RAYON_NUM_THREADS", t);
    }
    c.output().unwrap()
}

fn ok(o: &Output) {
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

const TINY: &str = r#"name = "tiny"
description = "Numbers small enough to check by hand."
provenance = "tests/commands/reports.rs"
profile = "hermes-main"
platform = "cli"

[models.m]
latency_s = 2
output_tokens = 100
cache_read_share = 0.5
price = { input = 2.0, cache_read = 1.0, output = 10.0 }

[tools.read_file]
latency_s = 1
result = '{"n": {n}}'
result_tokens = 50

[agents.parent]
model = "m"
context_tokens = 1000
script = [
  { calls = [{ tool = "read_file", args = { path = "a" }, distinct = true }] },
  { calls = [{ tool = "read_file", args = { path = "a" }, distinct = true }], times = 2, loop_begins = true },
  { answer = "done" },
]
"#;

fn csv_rows(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap().split(',').map(String::from).collect();
    let rows = lines
        .map(|l| l.split(',').map(String::from).collect())
        .collect();
    (header, rows)
}

fn field<'a>(header: &[String], row: &'a [String], name: &str) -> &'a str {
    &row[header
        .iter()
        .position(|h| h == name)
        .unwrap_or_else(|| panic!("no column {name}"))]
}

#[test]
fn metrics_match_a_hand_computed_run() {
    let dir = tmp("tiny");
    let sc = dir.join("tiny.toml");
    std::fs::write(&sc, TINY).unwrap();
    let out = dir.join("out");
    ok(&loopsim(
        &["run", sc.to_str().unwrap(), "--out", out.to_str().unwrap()],
        None,
    ));
    let (h, rows) = csv_rows(&out.join("runs.csv"));
    assert_eq!(rows.len(), 1);
    let r = &rows[0];
    // Context: 1000, then +100 output +50 result per round: inputs 1000, 1150, 1300, 1450.
    assert_eq!(field(&h, r, "calls"), "4");
    assert_eq!(field(&h, r, "input_tokens"), "4900");
    assert_eq!(field(&h, r, "cache_read_tokens"), "2450");
    assert_eq!(field(&h, r, "output_tokens"), "400");
    // Fresh 2450 x $2 + cached 2450 x $1 + output 400 x $10, per million.
    assert_eq!(field(&h, r, "cost_usd"), "0.01135");
    assert_eq!(field(&h, r, "model_latency_s"), "8.0");
    assert_eq!(field(&h, r, "tool_time_s"), "3.0");
    // 4 model calls of 2 s and 3 tool calls of 1 s.
    assert_eq!(field(&h, r, "duration_min"), "0.183");
    // The loop begins at the 2nd call (t = 3 s): calls 2-4, $0.002725 + 0.00295 + 0.003175.
    assert_eq!(field(&h, r, "waste_calls"), "3");
    assert_eq!(field(&h, r, "waste_usd"), "0.00885");
    assert_eq!(field(&h, r, "waste_min"), "0.133");
    assert_eq!(
        field(&h, r, "exit_reason"),
        "text_response(finish_reason=stop)"
    );
}

fn png_size(path: &Path) -> (u32, u32) {
    let b = std::fs::read(path).unwrap();
    assert_eq!(&b[..8], b"\x89PNG\r\n\x1a\n", "{} is a PNG", path.display());
    assert_eq!(&b[12..16], b"IHDR");
    (
        u32::from_be_bytes(b[16..20].try_into().unwrap()),
        u32::from_be_bytes(b[20..24].try_into().unwrap()),
    )
}

#[test]
fn a_run_report_has_its_files_plots_and_comparison() {
    let out = tmp("run");
    ok(&loopsim(
        &[
            "run",
            "scenarios/execute-code-spin-wait.toml",
            "--compare-profiles",
            "hermes-main",
            "--platform",
            "telegram",
            "--out",
            out.to_str().unwrap(),
        ],
        None,
    ));
    for stem in ["cost", "timeline", "budget"] {
        let svg = std::fs::read_to_string(out.join(format!("{stem}.svg"))).unwrap();
        assert!(
            svg.starts_with("<svg") || svg.starts_with("<?xml"),
            "{stem}.svg"
        );
        assert!(
            svg.contains("execute-code-spin-wait"),
            "{stem}.svg has its title"
        );
        assert_eq!(png_size(&out.join(format!("{stem}.png"))), (1200, 700));
    }
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        md.contains("## What each run would have saved (against hermes-v0.21.5 telegram)"),
        "{md}"
    );
    assert!(md.contains("| hermes-main telegram |"));
    assert!(md.contains("![cost.png](cost.png)"));
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    for key in ["summary", "expectations", "compared", "metrics"] {
        assert!(json.get(key).is_some(), "summary.json has {key}");
    }
    assert_eq!(json["compared"][0]["summary"]["profile"], "hermes-main");
    // The settings each run used are in the report: why hard stops were on, and the rule.
    let settings = &json["summary"]["settings"];
    // The incident's version had hard stops on too: it hashed execute_code's whole result.
    assert_eq!(settings["hard_stops"], true);
    assert_eq!(settings["result_hashing"], "whole result");
    assert_eq!(settings["hard_stop_after"]["idempotent_no_progress"], 5);
    let main = &json["compared"][0]["summary"]["settings"];
    assert_eq!(
        main["result_hashing"],
        "execute_code volatile fields dropped"
    );
    assert!(
        main["hard_stop_rule"]
            .as_str()
            .unwrap()
            .contains("telegram is unattended"),
        "{main}"
    );
    assert!(md.contains("| hard stops | "), "the settings table: {md}");
    assert_eq!(
        json["metrics"][1]["stop_code"],
        "identical_call_streak_halt"
    );
    let (h, rows) = csv_rows(&out.join("runs.csv"));
    assert_eq!(rows.len(), 2);
    for col in [
        "scenario",
        "scenario_hash",
        "config_hash",
        "seed",
        "profile",
        "cost_usd",
        "waste_usd",
        "stop_code",
        "trace_hash",
    ] {
        assert!(h.iter().any(|c| c == col), "runs.csv has {col}");
    }
    assert_ne!(
        field(&h, &rows[0], "config_hash"),
        field(&h, &rows[1], "config_hash")
    );
}

const GRID: [&str; 8] = [
    "--grid",
    "tool_loop_guardrails.hard_stop_after.idempotent_no_progress=2..=6",
    "--grid",
    "tool_loop_guardrails.warn_after.idempotent_no_progress=1..=2",
    "--seeds",
    "0..3",
    "--platform",
    "cron",
];

fn sweep(out: &Path, extra: &[&str], threads: Option<&str>) {
    let mut args = vec![
        "sweep",
        "scenarios/read-only-no-progress.toml",
        "scenarios/two-call-cycle.toml",
        "scenarios/healthy-repeated-check.toml",
        "scenarios/poller-exempt.toml",
    ];
    args.extend(GRID);
    args.extend(["--out", out.to_str().unwrap()]);
    args.extend(extra);
    ok(&loopsim(&args, threads));
}

const OUTPUTS: [&str; 9] = [
    "sweep.csv",
    "aggregate.csv",
    "summary.md",
    "heatmap-waste.svg",
    "heatmap-waste.png",
    "heatmap-false-stops.svg",
    "heatmap-false-stops.png",
    "pareto.svg",
    "pareto.png",
];

#[test]
fn sweeps_do_not_depend_on_threads_and_shards_merge_to_the_same_output() {
    let one = tmp("t1");
    let two = tmp("t2");
    sweep(&one, &[], Some("1"));
    sweep(&two, &[], Some("2"));
    for f in OUTPUTS {
        assert_eq!(
            std::fs::read(one.join(f)).unwrap(),
            std::fs::read(two.join(f)).unwrap(),
            "{f} differs between 1 and 2 threads"
        );
    }
    let shards: Vec<PathBuf> = (1..=3).map(|k| tmp(&format!("shard{k}"))).collect();
    for (k, dir) in shards.iter().enumerate() {
        sweep(dir, &["--shard", &format!("{}/3", k + 1)], None);
        assert!(
            !dir.join("summary.md").exists(),
            "a shard writes only its rows"
        );
    }
    let merged = tmp("merged");
    let mut args = vec!["merge"];
    args.extend(shards.iter().map(|p| p.to_str().unwrap()));
    args.extend(["--out", merged.to_str().unwrap()]);
    ok(&loopsim(&args, None));
    for f in OUTPUTS {
        assert_eq!(
            std::fs::read(one.join(f)).unwrap(),
            std::fs::read(merged.join(f)).unwrap(),
            "{f} differs after merge"
        );
    }
    // A missing shard is refused.
    let o = loopsim(
        &[
            "merge",
            shards[0].to_str().unwrap(),
            shards[2].to_str().unwrap(),
            "--out",
            merged.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("missing"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn the_sweep_finds_the_trade_off_and_recommends_a_safe_setting() {
    let out = tmp("tradeoff");
    sweep(&out, &[], None);
    let (h, rows) = csv_rows(&out.join("aggregate.csv"));
    let get = |setting: &str, col: &str| -> String {
        let r = rows
            .iter()
            .find(|r| field(&h, r, "setting") == setting)
            .unwrap_or_else(|| panic!("no {setting}"));
        field(&h, r, col).to_string()
    };
    let s = |block: u32, warn: u32| {
        format!(
            "tool_loop_guardrails.hard_stop_after.idempotent_no_progress={block};tool_loop_guardrails.warn_after.idempotent_no_progress={warn}"
        )
    };
    // Aggressive blocking stops the careful healthy agent; the default does not.
    assert_eq!(
        get(&s(2, 1), "false_stop_rate"),
        "0.5",
        "one of two healthy scenarios stopped"
    );
    assert_eq!(get(&s(5, 1), "false_stop_rate"), "0.0");
    let waste = |b| get(&s(b, 1), "waste_usd_mean").parse::<f64>().unwrap();
    assert!(waste(2) < waste(6), "stopping earlier wastes less");
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    let rec = md
        .lines()
        .find(|l| l.starts_with("**Recommended:**"))
        .expect("a recommendation");
    assert!(rec.contains("without stopping any healthy run"), "{rec}");
    assert!(
        rec.contains("idempotent_no_progress=4"),
        "the most aggressive setting without false stops: {rec}"
    );
    // The sweep's rows carry what a rerun needs.
    let (sh, srows) = csv_rows(&out.join("sweep.csv"));
    assert_eq!(
        srows.len(),
        11 * 4 * 3,
        "11 settings (baseline first) x 4 scenarios x 3 seeds"
    );
    for col in ["job", "setting", "scenario_hash", "config_hash", "seed"] {
        assert!(sh.iter().any(|c| c == col), "sweep.csv has {col}");
    }
    assert_eq!(
        field(&sh, &srows[0], "setting"),
        "",
        "the baseline runs first"
    );
    assert_eq!(png_size(&out.join("pareto.png")), (1200, 700));
}

#[test]
fn bad_sweep_arguments_are_usage_errors() {
    let out = tmp("bad");
    let o = out.to_str().unwrap();
    for (args, want) in [
        (
            vec!["sweep", "--grid", "nokey", "--out", o],
            "--grid `nokey`: expected KEY=VALUES",
        ),
        (
            vec![
                "sweep",
                "--grid",
                "tool_loop_guardrails.hard_stop_after.exact_failure=5..1",
                "--out",
                o,
            ],
            "`5..1` is empty",
        ),
        (
            vec![
                "sweep",
                "--grid",
                "tool_loop_guardrails.hard_stop_afterr.idempotent_no_progress=2..4",
                "--out",
                o,
            ],
            "did you mean `tool_loop_guardrails.hard_stop_after.idempotent_no_progress`?",
        ),
        (
            vec![
                "sweep",
                "--grid",
                "tool_loop_guardrails.hard_stop_after.idempotent_no_progress=foo,bar",
                "--out",
                o,
            ],
            "`foo`: expected an integer >= 1",
        ),
        (
            vec![
                "sweep",
                "--grid",
                "tool_loop_guardrails.hard_stop_after.idempotent_no_progress=0..=2",
                "--out",
                o,
            ],
            "`0`: Hermes replaces values below 1 by the default",
        ),
        (
            vec![
                "sweep",
                "--grid",
                "tool_loop_guardrails.hard_stop_enabled=yes,no",
                "--out",
                o,
            ],
            "`yes`: expected true or false",
        ),
        (
            vec![
                "sweep",
                "--grid",
                "tool_loop_guardrails.warn_after.exact_failure=2,3",
                "--grid",
                "tool_loop_guardrails.warn_after.exact_failure=4",
                "--out",
                o,
            ],
            "the same key is given twice",
        ),
        (
            vec![
                "sweep",
                "--grid",
                "tool_loop_guardrails.warn_after.exact_failure=2,3",
                "--grid",
                "tool_loop_guardrails.exact_failure_warn_after=4",
                "--out",
                o,
            ],
            "are one setting (the nested key wins)",
        ),
        (
            vec![
                "sweep",
                "scenarios/read-only-no-progress.toml",
                "--profiles",
                "hermes-0.19.0",
                "--grid",
                "tool_loop_guardrails.loop_caps.max_web_searches=5,10",
                "--out",
                o,
            ],
            "no value changes any run: hermes-0.19.0 does not read `tool_loop_guardrails.loop_caps.max_web_searches`",
        ),
        (
            vec!["sweep", "--seeds", "9..3", "--out", o],
            "--seeds `9..3`",
        ),
        (vec!["sweep", "--shard", "3/2", "--out", o], "--shard `3/2`"),
        (
            vec!["sweep", "--profiles", "hermes-9", "--out", o],
            "--profiles `hermes-9`: unknown profile `hermes-9`",
        ),
        (
            vec![
                "sweep",
                "--grid",
                "agent.max_turns=lots",
                "--profiles",
                "hermes-0.19.0",
                "--out",
                o,
            ],
            "--grid `agent.max_turns=lots`: `lots`: expected an integer",
        ),
    ] {
        let r = loopsim(&args, None);
        assert_eq!(r.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&r.stderr).contains(want),
            "{args:?}: {}",
            String::from_utf8_lossy(&r.stderr)
        );
    }
    assert!(
        !out.join("sweep.csv").exists(),
        "nothing is written for bad input"
    );
}
