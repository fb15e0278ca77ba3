//! loopsim does what it was told or says why not: every setting checked (scenario config,
//! config.yaml, grid keys and values, platforms, expectations), the settings a run used in its
//! report, and `--config` / `--compare-configs` wherever a team tunes its own config.

use crate::common;

use std::path::Path;

use common::{TempDir, loopsim_in, output_text, root};

fn tmp(name: &str) -> TempDir {
    TempDir::new(&format!("settings-{name}"))
}

fn loopsim(args: &[&str]) -> std::process::Output {
    loopsim_in(&root(), args)
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

const SMALL: &str = r#"name = "small"
description = "A read loop."
provenance = "test"
profile = "hermes-main"
platform = "cli"

[config.tool_loop_guardrails]
hard_stop_enabled = true

[models.m]
latency_s = 1.0
output_tokens = 10

[tools.read_file]
latency_s = 0.1

[agents.parent]
model = "m"
script = [
  { calls = [{ tool = "read_file", args = { path = "a" } }], times = 8, loop_begins = true },
  { answer = "x" },
]
"#;

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn typos_in_a_scenarios_config_are_errors_with_line_and_nearest_key() {
    let dir = tmp("scenario-typos");
    for (name, from, to, want) in [
        (
            "key",
            "hard_stop_enabled = true",
            "hard_stop_enabeld = true",
            ":8: config.tool_loop_guardrails.hard_stop_enabeld: not a key loopsim simulates (did you mean `tool_loop_guardrails.hard_stop_enabled`?)",
        ),
        (
            "section",
            "[config.tool_loop_guardrails]\nhard_stop_enabled = true",
            "[config.agnet]\nmax_turns = 30",
            ":7: config.agnet: not a key loopsim simulates (did you mean `agent.max_turns`?)",
        ),
        (
            "hermes-only",
            "hard_stop_enabled = true",
            "hard_stop_enabled = true\n[config.model]\ndefault = \"x\"",
            "config.model.default: a Hermes key loopsim does not simulate",
        ),
        (
            "replaced-value",
            "hard_stop_enabled = true",
            "hard_stop_enabled = true\n[config.tool_loop_guardrails.hard_stop_after]\nexact_failure = 0",
            ":10: config.tool_loop_guardrails.hard_stop_after.exact_failure: 0 is below 1: default 5 under hermes-main; Hermes would replace this value",
        ),
        (
            "not-a-bool",
            "hard_stop_enabled = true",
            "hard_stop_enabled = \"maybe\"",
            ":8: config.tool_loop_guardrails.hard_stop_enabled: `maybe` is not a yes/no word",
        ),
    ] {
        let path = write(&dir, &format!("{name}.toml"), &SMALL.replace(from, to));
        for cmd in [
            &["run", path.as_str()][..],
            &["validate", path.as_str()],
            &["check", path.as_str()],
        ] {
            let o = loopsim_in(&dir, cmd);
            assert_eq!(
                o.status.code(),
                Some(2),
                "{name} {cmd:?}: {}",
                output_text(&o)
            );
            assert!(
                output_text(&o).contains(want),
                "{name} {cmd:?}: {}",
                output_text(&o)
            );
        }
    }
    assert!(
        !dir.join("reports").exists(),
        "nothing is written for bad input"
    );
}

/// A config.yaml with the issue's typos, a replaced value and a section loopsim does not read.
const TYPO_CONFIG: &str = "model:\n  default: gpt-x\n  provider: nobody\nagent:\n  max_turn: 60\ntool_loop_guardrails:\n  hard_stop_enable: true\n  exact_failures: 3\n  warn_after:\n    exact_failure: 0\n";

fn assert_config_warnings(what: &str, o: &std::process::Output, cfg: &str) {
    let e = stderr(o);
    for want in [
        format!(
            "{cfg}:5: `agent.max_turn`: not a key Hermes reads (did you mean `agent.max_turns`?)"
        ),
        format!(
            "{cfg}:7: `tool_loop_guardrails.hard_stop_enable`: not a key Hermes reads (did you mean `tool_loop_guardrails.hard_stop_enabled`?)"
        ),
        format!("{cfg}:8: `tool_loop_guardrails.exact_failures`: not a key Hermes reads"),
        format!(
            "{cfg}:10: `tool_loop_guardrails.warn_after.exact_failure`: 0 is below 1: default 2"
        ),
    ] {
        assert!(e.contains(&want), "{what}: expected `{want}` in:\n{e}");
    }
    assert!(
        !e.contains("model"),
        "{what}: Hermes's other sections are its business: {e}"
    );
}

#[test]
fn typos_in_a_users_config_yaml_are_warnings_in_every_command_that_takes_it() {
    let dir = tmp("yaml-typos");
    let cfg = write(&dir, "cfg.yaml", TYPO_CONFIG);
    let sc = root().join("scenarios/read-only-no-progress.toml");
    let sc = sc.to_str().unwrap();
    let out = |n: &str| dir.join(n).to_str().unwrap().to_string();
    let run = loopsim(&["run", sc, "--config", &cfg, "--out", &out("run")]);
    assert_eq!(run.status.code(), Some(0), "{}", output_text(&run));
    assert_config_warnings("run", &run, &cfg);
    let trace = out("run/trace.jsonl");
    let commands: Vec<(&str, Vec<String>)> = vec![
        (
            "replay",
            vec![
                "replay".into(),
                trace.clone(),
                "--config".into(),
                cfg.clone(),
                "--out".into(),
                out("what-if"),
            ],
        ),
        (
            "sweep",
            vec![
                "sweep".into(),
                sc.into(),
                "--config".into(),
                cfg.clone(),
                "--grid".into(),
                "tool_loop_guardrails.hard_stop_after.idempotent_no_progress=3,6".into(),
                "--seeds".into(),
                "0..2".into(),
                "--out".into(),
                out("sweep"),
            ],
        ),
        (
            "check",
            vec!["check".into(), sc.into(), "--config".into(), cfg.clone()],
        ),
        (
            "diff",
            vec![
                "diff".into(),
                sc.into(),
                "--engine".into(),
                "builtin".into(),
                "--engine".into(),
                "builtin".into(),
                "--config".into(),
                cfg.clone(),
            ],
        ),
        (
            "guard",
            vec!["guard".into(), "--config".into(), cfg.clone()],
        ),
        ("validate", vec!["validate".into(), cfg.clone()]),
    ];
    for (what, args) in &commands {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = loopsim(&args);
        assert!(
            o.status.code().is_some_and(|c| c <= 1),
            "{what}: {}",
            output_text(&o)
        );
        if *what == "validate" {
            // validate reports on stdout, every warning under its profile.
            let text = stdout(&o);
            assert!(
                text.contains("`agent.max_turn`: not a key Hermes reads"),
                "{text}"
            );
            continue;
        }
        assert_config_warnings(what, &o, &cfg);
    }
    // gate takes it too.
    let baseline = out("baseline.json");
    let o = loopsim(&["check", sc, "--save-baseline", &baseline]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let o = loopsim(&["gate", "--baseline", &baseline, "--config", &cfg]);
    assert_config_warnings("gate", &o, &cfg);
    assert!(
        stdout(&o).contains("| all runs | config | none | "),
        "{}",
        stdout(&o)
    );
}

#[test]
fn every_report_carries_the_settings_the_run_used() {
    let dir = tmp("settings");
    let o = loopsim(&[
        "run",
        "scenarios/poller-exempt.toml",
        "--platform",
        "cli",
        "--out",
        dir.join("r").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    assert!(
        stdout(&o)
            .contains("hard stops are off on attended platform cli (hard_stop_enabled is false)"),
        "{}",
        stdout(&o)
    );
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("r/summary.json")).unwrap()).unwrap();
    let s = &json["summary"]["settings"];
    assert_eq!(s["hard_stops"], false);
    assert_eq!(s["platform"], "cli");
    assert_eq!(s["warn_after"]["idempotent_no_progress"], 2);
    assert_eq!(s["loop_caps"]["max_web_searches"], 50);
    assert_eq!(s["max_iterations"], serde_json::Value::Null, "unlimited");
    let md = std::fs::read_to_string(dir.join("r/summary.md")).unwrap();
    assert!(
        md.contains("| hard stops | off on attended platform cli"),
        "{md}"
    );
    assert!(md.contains("| stall guards | on |"), "{md}");
}

#[test]
fn unknown_platforms_warn_and_name_the_rule() {
    let dir = tmp("platform");
    let o = loopsim(&[
        "run",
        "scenarios/poller-exempt.toml",
        "--platform",
        "telgram",
        "--out",
        dir.join("r").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0));
    let e = stderr(&o);
    assert!(
        e.contains("platform `telgram` is not one Hermes ships (did you mean `telegram`?)"),
        "{e}"
    );
    assert!(e.contains("it counts as unattended"), "{e}");
    let sc = write(
        &dir,
        "p.toml",
        &SMALL.replace("platform = \"cli\"", "platform = \"discrod\""),
    );
    let o = loopsim(&["validate", &sc]);
    assert!(
        stdout(&o).contains("did you mean `discord`?"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn codes_lists_every_name_loopsim_accepts() {
    let o = loopsim(&["codes", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["profiles"].as_array().unwrap().len(), 10);
    assert_eq!(j["decision_codes"].as_array().unwrap().len(), 11);
    assert_eq!(j["exit_reasons"].as_array().unwrap().len(), 35);
    assert!(
        j["exit_reasons"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r == "raised(EXCEPTION)")
    );
    // Each other runtime's settings, in its own names.
    let runtime_keys = |profile: &str| -> Vec<String> {
        j["runtime_keys"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["profile"] == profile)
            .unwrap_or_else(|| panic!("{profile} lists its settings"))["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k["key"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        runtime_keys("openai-agents-0.24"),
        ["max_turns", "error_handlers", "error_handlers.max_turns"]
    );
    assert_eq!(
        runtime_keys("pydantic-ai-2.68"),
        [
            "request_limit",
            "tool_calls_limit",
            "input_tokens_limit",
            "output_tokens_limit",
            "total_tokens_limit"
        ]
    );
    assert_eq!(
        runtime_keys("langgraph-1.2"),
        [
            "recursion_limit",
            "model_call_limit",
            "model_call_limit.run_limit",
            "model_call_limit.thread_limit",
            "model_call_limit.exit_behavior",
            "tool_call_limit",
            "tool_call_limit.tool_name",
            "tool_call_limit.run_limit",
            "tool_call_limit.thread_limit",
            "tool_call_limit.exit_behavior"
        ]
    );
    assert_eq!(
        runtime_keys("smolagents-1.26"),
        ["max_steps", "planning_interval"]
    );
    assert_eq!(
        runtime_keys("openhands-sdk-1.58")[..2],
        ["max_iteration_per_run", "stuck_detection"]
    );
    assert_eq!(
        runtime_keys("react-loop-article"),
        [
            "max_iterations",
            "max_total_tokens",
            "tool_timeout_s",
            "max_observation_chars",
            "failure_hint_after",
            "format_error_after",
            "trim_context_at"
        ]
    );
    assert!(
        j["platforms"]["attended"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p == "cli")
    );
    assert!(
        j["platforms"]["unattended"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p == "telegram")
    );
    let keys: Vec<&str> = j["config_keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["key"].as_str().unwrap())
        .collect();
    assert!(keys.contains(&"tool_loop_guardrails.hard_stop_after.idempotent_no_progress"));
    assert!(keys.contains(&"agent.max_turns"));
    let text = loopsim(&["codes"]);
    assert!(stdout(&text).contains("identical_call_streak_halt"));
}

#[test]
fn expectations_are_checked_when_the_file_loads() {
    let dir = tmp("expect");
    for (name, expect, want) in [
        (
            "exit",
            "exit_reason = \"interupted_by_user\"",
            "expect.exit_reason: `interupted_by_user` is not an exit reason Hermes prints (did you mean `interrupted_by_user`?)",
        ),
        (
            "warning-code",
            "stop_code = \"idempotent_no_progress_warning\"",
            "expect.stop_code: `idempotent_no_progress_warning` is a warning or allow code, not a stop",
        ),
        (
            "unknown-code",
            "stop_code = \"identical_call_streak_hault\"",
            "(did you mean `identical_call_streak_halt`?)",
        ),
        (
            "contradiction",
            "stop_code = \"identical_call_streak_halt\"\nno_hard_stop = true",
            "contradicts `no_hard_stop = true`",
        ),
    ] {
        let path = write(
            &dir,
            &format!("{name}.toml"),
            &format!("{SMALL}\n[expect]\n{expect}\n"),
        );
        let o = loopsim(&["validate", &path]);
        assert_eq!(o.status.code(), Some(2), "{name}");
        assert!(stdout(&o).contains(want), "{name}: {}", stdout(&o));
    }
}

#[test]
fn two_configs_compare_directly_and_the_rerun_line_reproduces_the_run() {
    let dir = tmp("compare-configs");
    let strict = write(
        &dir,
        "strict.yaml",
        "tool_loop_guardrails:\n  hard_stop_after:\n    idempotent_no_progress: 3\n",
    );
    let lax = write(
        &dir,
        "lax.yaml",
        "tool_loop_guardrails:\n  hard_stop_after:\n    idempotent_no_progress: 8\n",
    );
    let out = dir.join("r");
    let o = loopsim(&[
        "run",
        "scenarios/read-only-no-progress.toml",
        "--compare-configs",
        &format!("{strict},{lax}"),
        "--schedule",
        "shuffle",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        md.contains(&format!("| config {strict}: hermes-0.19.0 cli |")),
        "{md}"
    );
    assert!(md.contains("## What each run would have saved"), "{md}");
    // The settings table has a row for every setting any run has: the run as written has no
    // config file, and its cell says so.
    let row = md
        .lines()
        .find(|l| l.starts_with("| config file |"))
        .unwrap_or_else(|| panic!("no config file row: {md}"));
    assert!(
        row.starts_with("| config file | - | ")
            && row.contains("strict.yaml")
            && row.contains("lax.yaml"),
        "{row}"
    );
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let calls = |i: usize| json["metrics"][i]["calls"].as_u64().unwrap();
    assert!(
        calls(1) < calls(0) && calls(0) < calls(2),
        "3 < as written (6) < 8: {json}"
    );
    let rerun = json["rerun"].as_str().unwrap();
    assert!(
        rerun.contains("--schedule shuffle") && rerun.contains("--compare-configs"),
        "{rerun}"
    );
    // Running the rerun line gives the same trace.
    let again = dir.join("again");
    let mut args: Vec<String> = rerun.split(' ').skip(1).map(String::from).collect();
    args.extend(["--out".into(), again.to_str().unwrap().into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = loopsim(&args);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    assert_eq!(
        std::fs::read(out.join("trace.jsonl")).unwrap(),
        std::fs::read(again.join("trace.jsonl")).unwrap()
    );
    assert_eq!(
        std::fs::read(out.join("runs.csv")).unwrap(),
        std::fs::read(again.join("runs.csv")).unwrap()
    );
}

#[test]
fn sweep_check_and_gate_run_a_teams_own_config() {
    let dir = tmp("team-config");
    let team = write(
        &dir,
        "team.yaml",
        "tool_loop_guardrails:\n  hard_stop_after:\n    idempotent_no_progress: 3\n",
    );
    let sc = "scenarios/read-only-no-progress.toml";
    let sweep = |extra: &[&str], name: &str| {
        let out = dir.join(name);
        let mut args = vec![
            "sweep",
            sc,
            "--grid",
            "tool_loop_guardrails.warn_after.idempotent_no_progress=1,2",
            "--seeds",
            "0..2",
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend(extra);
        let o = loopsim(&args);
        assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
        std::fs::read_to_string(out.join("aggregate.csv")).unwrap()
    };
    let own = sweep(&[], "own");
    let with_team = sweep(&["--config", &team], "team");
    assert_ne!(own, with_team, "the team's config changes the runs");
    let manifest = std::fs::read_to_string(dir.join("team/sweep.json")).unwrap();
    assert!(manifest.contains("team.yaml"), "{manifest}");
    // The summary's rerun line makes the same rows.
    let md = std::fs::read_to_string(dir.join("team/summary.md")).unwrap();
    let rerun = md
        .lines()
        .find_map(|l| l.strip_prefix("Rerun: `loopsim "))
        .and_then(|l| l.strip_suffix('`'))
        .expect("a rerun line");
    let again = dir.join("again");
    let mut args: Vec<&str> = rerun.split(' ').collect();
    args.extend(["--out", again.to_str().unwrap()]);
    let o = loopsim(&args);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    assert_eq!(
        std::fs::read(dir.join("team/sweep.csv")).unwrap(),
        std::fs::read(again.join("sweep.csv")).unwrap()
    );
    // aggregate.csv has a column per swept key.
    assert!(
        with_team
            .starts_with("setting,tool_loop_guardrails.warn_after.idempotent_no_progress,profile,")
    );
    // check with the config: the rerun lines name it.
    let o = loopsim(&["check", sc, "--config", &team, "--format", "json"]);
    let cases: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        cases[0]["rerun"]
            .as_str()
            .unwrap()
            .ends_with(&format!("--config {team}"))
    );
    // A baseline saved with the config, gated without it: the config is a reported change.
    let b = dir.join("b.json");
    let o = loopsim(&[
        "check",
        sc,
        "--config",
        &team,
        "--save-baseline",
        b.to_str().unwrap(),
    ]);
    assert!(o.status.code().is_some_and(|c| c <= 1));
    let o = loopsim(&["gate", "--baseline", b.to_str().unwrap()]);
    assert!(
        stdout(&o).contains("| all runs | config | "),
        "{}",
        stdout(&o)
    );
    // The same config again: every metric equal.
    let o = loopsim(&["gate", "--baseline", b.to_str().unwrap(), "--config", &team]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    assert!(stdout(&o).contains("every metric equal"), "{}", stdout(&o));
}

#[test]
fn healthy_means_unstopped_and_unchecked_scenarios_are_reported_as_such() {
    let dir = tmp("labels");
    // A healthy scenario without [expect] that its own config stops: check fails it.
    let stopped = SMALL.replace(
        "profile = \"hermes-main\"",
        "label = \"healthy\"\nprofile = \"hermes-main\"",
    );
    let path = write(&dir, "stopped.toml", &stopped);
    let o = loopsim(&["check", &path]);
    assert_eq!(o.status.code(), Some(1), "{}", output_text(&o));
    assert!(
        stdout(&o).contains("FAIL small seed 0 hermes-main: no_hard_stop"),
        "{}",
        stdout(&o)
    );
    // A loop scenario without expectations is neither passed nor failed.
    let path = write(&dir, "unchecked.toml", SMALL);
    let o = loopsim(&[
        "check",
        &path,
        "--junit",
        dir.join("j.xml").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    assert!(
        stdout(&o).contains("none small seed 0 hermes-main: no expectations"),
        "{}",
        stdout(&o)
    );
    assert!(
        stdout(&o).contains("0 passed, 0 failed, 1 without expectations"),
        "{}",
        stdout(&o)
    );
    let xml = std::fs::read_to_string(dir.join("j.xml")).unwrap();
    assert!(
        xml.contains("skipped=\"1\"") && xml.contains("<skipped message=\"no expectations\"/>"),
        "{xml}"
    );
}

#[test]
fn gate_fail_on_any_change_says_what_changed() {
    let dir = tmp("any-change");
    let lax = SMALL.replace(
        "hard_stop_enabled = true",
        "hard_stop_enabled = true\nno_progress_block_after = 7",
    );
    let path = write(&dir, "s.toml", &lax);
    let b = dir.join("b.json");
    let o = loopsim(&["check", &path, "--save-baseline", b.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    // Stricter: every figure improves.
    std::fs::write(&path, SMALL).unwrap();
    let o = loopsim(&["gate", "--baseline", b.to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "improvements pass: {}",
        output_text(&o)
    );
    let o = loopsim(&[
        "gate",
        "--baseline",
        b.to_str().unwrap(),
        "--fail-on-any-change",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(e.contains("better") && !e.contains("worse"), "{e}");
    assert!(
        stdout(&o).contains("| small (all runs) | scenario |"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn bad_flags_name_the_flag() {
    let dir = tmp("flags");
    let o = dir.join("o");
    let o = o.to_str().unwrap();
    for (args, want) in [
        (
            vec!["sweep", "--profiles", "hermes-main,hermes-9", "--out", o],
            "--profiles `hermes-9`",
        ),
        (
            vec!["sweep", "--seeds", "0..1000000000000000", "--out", o],
            "loopsim runs at most 20000000 in one",
        ),
        (
            vec![
                "sweep",
                "--grid",
                "tool_loop_guardrails.hard_stop_after.exact_failure=1..=10000",
                "--grid",
                "tool_loop_guardrails.hard_stop_after.same_tool_failure=1..=10000",
                "--out",
                o,
            ],
            "more than 100000 settings",
        ),
        (
            vec![
                "sweep",
                "--grid",
                "tool_loop_guardrails.hard_stop_after.exact_failure=1..=20000",
                "--out",
                o,
            ],
            "20000 values: at most 10000 per key",
        ),
        (
            vec![
                "run",
                "scenarios/poller-exempt.toml",
                "--schedule",
                "shufle",
            ],
            "invalid value 'shufle'",
        ),
        (
            vec![
                "sweep",
                "scenarios/poller-exempt.toml",
                "--grid",
                "tool_loop_guardrails.hard_stop_enabled=true,false",
                "--platform",
                "telegram",
                "--out",
                o,
            ],
            "on telegram (unattended) hermes-main's platform rule turns hard stops on whatever hard_stop_enabled says",
        ),
        (
            vec!["gate", "--baseline", "x.json", "--max-increase", "five"],
            "--max-increase `five`",
        ),
    ] {
        let r = loopsim(&args);
        assert_eq!(r.status.code(), Some(2), "{args:?}: {}", output_text(&r));
        assert!(stderr(&r).contains(want), "{args:?}: {}", stderr(&r));
    }
    assert!(!dir.join("o").exists(), "nothing written");
}

#[test]
fn a_grid_value_an_sdk_refuses_names_the_grid_not_a_line() {
    let t = tmp("grid-place");
    let o = loopsim(&[
        "sweep",
        "scenarios/two-call-cycle.toml",
        "--profiles",
        "langgraph-1.2",
        "--grid",
        "tool_call_limit.exit_behavior=end,error",
        "--seeds",
        "0..1",
        "--out",
        t.join("s").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", output_text(&o));
    let err = stderr(&o);
    assert!(
        err.contains("--grid `tool_call_limit.exit_behavior=end`")
            && err.contains("run_limit or thread_limit"),
        "{err}"
    );
    assert!(
        !err.contains(":0:"),
        "no line a grid value does not have: {err}"
    );
    assert!(!t.join("s").exists(), "nothing written");
}

#[test]
fn errors_name_the_right_place() {
    let dir = tmp("places");
    for (name, from, to, want) in [
        (
            "inline-table-value",
            "latency_s = 1.0\noutput_tokens = 10",
            "latency_s = 1.0\noutput_tokens = 10\nprice = { input = 3.0,\n  output = -1.0 }",
            ":14: models.m.price.output: -1 is not a price from 0 to 1e6 dollars per million tokens",
        ),
        (
            "inline-key",
            "{ answer = \"x\" }",
            "{ choose = [{ weight = \"heavy\", answer = \"x\" }] }",
            "agents.parent.script[1].choose[0].weight: invalid type",
        ),
        (
            "inline-unknown",
            "{ answer = \"x\" }",
            "{ answer = \"x\", untill = \"stopped\" }",
            "agents.parent.script[1].untill: unknown key (did you mean `until`?)",
        ),
        (
            "duplicate-key",
            "platform = \"cli\"",
            "platform = \"cli\"\nplatform = \"cron\"",
            ":6: platform: duplicate key: already set at line 5",
        ),
        (
            "duplicate-table",
            "[tools.read_file]\nlatency_s = 0.1",
            "[tools.read_file]\nlatency_s = 0.1\n[tools.read_file]\nlatency_s = 0.2",
            ":16: tools.read_file: duplicate table: already opened at line 14",
        ),
        (
            "times-and-until",
            "times = 8, loop_begins = true",
            "times = 8, until = \"stopped\", loop_begins = true",
            "agents.parent.script[0].until: `until` repeats the step until its condition and ignores `times`",
        ),
        (
            "two-loop-begins",
            "{ answer = \"x\" }",
            "{ calls = [{ tool = \"read_file\" }], loop_begins = true },\n  { answer = \"x\" }",
            "agents.parent.script[1].loop_begins: a second loop_begins",
        ),
        (
            "huge-delegation",
            "{ answer = \"x\" }",
            "{ delegate = \"child\", tasks = 1000000000 },\n  { answer = \"x\" }",
            "agents.parent.script[1].tasks: must be from 1 to 10000",
        ),
    ] {
        let mut text = SMALL.replace(from, to);
        if name == "huge-delegation" {
            text.push_str("\n[agents.child]\nmodel = \"m\"\nscript = [{ answer = \"y\" }]\n");
        }
        assert_ne!(text, SMALL, "{name}: the replacement applies");
        let path = write(&dir, &format!("{name}.toml"), &text);
        let o = loopsim(&["run", &path, "--out", dir.join("out").to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{name}: {}", output_text(&o));
        let e = stderr(&o);
        assert!(e.contains(path.as_str()), "{name}: the file is named: {e}");
        assert!(e.contains(want), "{name}: expected `{want}` in: {e}");
    }
}
