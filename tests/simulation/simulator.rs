//! The simulator end to end: every scenario meets its expectations and replays byte for byte,
//! runs are deterministic within and across processes, the incident's figures are reproduced,
//! the fix stops the loop where Hermes would, and bad scenario files get clear errors.

use crate::common;

use std::path::PathBuf;

use common::{root, scenario_files};
use std::process::Command;

use loopsim_engine::profile::ProfileName;
use loopsim_world::scenario::Scenario;
use loopsim_world::scheduler::Order;
use loopsim_world::sim::{RunOptions, RunSummary, Status, run};
use loopsim_world::trace::{SharedBuf, TraceWriter};
use loopsim_world::user_config::UserConfig;
use loopsim_world::verdict;

fn scenario(name: &str) -> Scenario {
    Scenario::load(&root().join("scenarios").join(format!("{name}.toml"))).unwrap()
}

fn run_mem(sc: &Scenario, opts: &RunOptions) -> (RunSummary, Vec<u8>) {
    let buf = SharedBuf::default();
    let s = run(sc, opts, TraceWriter::to_writer(Box::new(buf.clone()))).unwrap();
    (s, buf.bytes())
}

fn loopsim(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_loopsim"))
        .args(args)
        .current_dir(root())
        .output()
        .unwrap()
}

#[test]
fn every_scenario_meets_its_expectations_and_is_deterministic() {
    let paths = scenario_files();
    assert!(paths.len() >= 15, "the suite needs at least 15 scenarios");
    let mut healthy = 0;
    for p in paths {
        let sc = Scenario::load(&p).unwrap();
        let (s1, t1) = run_mem(&sc, &RunOptions::default());
        let (s2, t2) = run_mem(&sc, &RunOptions::default());
        assert_eq!(t1, t2, "{}: same seed, different trace", p.display());
        assert_eq!(s1, s2);
        let verdicts = verdict::check(&sc.file.expect, &s1);
        assert!(
            !verdicts.is_empty(),
            "{}: a scenario must expect something",
            p.display()
        );
        for v in &verdicts {
            assert!(
                v.pass,
                "{}: expectation {} failed: expected {}, got {}",
                p.display(),
                v.key,
                v.expected,
                v.actual
            );
        }
        if sc.file.label == loopsim_world::scenario::Label::Healthy {
            healthy += 1;
            assert!(
                s1.agents.iter().all(|a| a.stop.is_none()),
                "{}: a healthy run was stopped",
                p.display()
            );
        }
        // Shuffling same-time events is seeded too.
        let shuffled = RunOptions {
            order: Order::Shuffle,
            ..RunOptions::default()
        };
        assert_eq!(
            run_mem(&sc, &shuffled).1,
            run_mem(&sc, &shuffled).1,
            "{}",
            p.display()
        );
    }
    assert!(healthy >= 3, "healthy workloads that must not be stopped");
}

#[test]
fn traces_replay_byte_for_byte_across_processes() {
    let out = std::env::temp_dir().join(format!("loopsim-replay-{}", std::process::id()));
    for p in scenario_files() {
        let rel = p
            .strip_prefix(root())
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        let dir = out.join(p.file_stem().unwrap());
        let o = loopsim(&[
            "run",
            &rel,
            "--out",
            dir.to_str().unwrap(),
            "--format",
            "json",
        ]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{rel}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let trace = dir.join("trace.jsonl");
        let o = loopsim(&["replay", trace.to_str().unwrap()]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{rel}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(String::from_utf8_lossy(&o.stdout).starts_with("identical:"));
    }
    // A second process writes the same bytes.
    let a = out.join("again");
    let o = loopsim(&[
        "run",
        "scenarios/two-call-cycle.toml",
        "--out",
        a.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        std::fs::read(a.join("trace.jsonl")).unwrap(),
        std::fs::read(out.join("two-call-cycle/trace.jsonl")).unwrap()
    );

    // An edited trace is bad input, caught by its hash before anything runs.
    let trace = out.join("web-search-flood/trace.jsonl");
    let text = std::fs::read_to_string(&trace).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    lines[5] = lines[5].replace("\"t_us\":", "\"t_us\":1");
    std::fs::write(&trace, lines.join("\n") + "\n").unwrap();
    let o = loopsim(&["replay", trace.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("hash mismatch"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // So is a truncated one, for a what-if too, naming the line it stops at.
    let cut = text.lines().take(7).collect::<Vec<_>>().join("\n") + "\n";
    std::fs::write(&trace, cut).unwrap();
    for what_if in [false, true] {
        let mut args = vec!["replay", trace.to_str().unwrap()];
        if what_if {
            args.extend(["--profile", "hermes-0.19.0"]);
        }
        let o = loopsim(&args);
        assert_eq!(o.status.code(), Some(2));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(":7: truncated at line 7"),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    std::fs::remove_dir_all(out).unwrap();
}

fn within(got: f64, want: f64, what: &str) {
    let off = (got - want) / want;
    assert!(
        off.abs() <= 0.05,
        "{what}: {got} is {:+.1}% from {want}",
        off * 100.0
    );
}

#[test]
fn the_incident_is_reproduced_within_five_percent() {
    let sc = scenario("execute-code-spin-wait");
    let (s, _) = run_mem(&sc, &RunOptions::default());
    assert_eq!(s.profile.as_str(), "hermes-v0.21.5");
    assert_eq!(
        s.parent_exit_reason, "interrupted_by_user",
        "only the user's stop ends it"
    );
    let p = &s.agents[0];
    assert!(
        p.stop.is_none() && p.notices == 0 && p.warnings == 0,
        "nothing fires under v0.21.5"
    );
    let w = p.window.as_ref().unwrap();
    within(w.model_calls as f64, 190.0, "window calls");
    within(w.input_tokens as f64, 31_365_131.0, "window input tokens");
    within(
        w.cache_read_tokens as f64,
        31_272_448.0,
        "window cache reads",
    );
    within(w.output_tokens as f64, 25_896.0, "window output tokens");
    within(
        w.model_latency_us as f64 / 1e6,
        1_869.8,
        "window model latency",
    );
    within(w.approval_calls as f64, 193.0, "window approval calls");
    within(p.usage.model_calls as f64, 267.0, "session calls");
    within(
        p.usage.cache_read_tokens as f64,
        40_377_600.0,
        "session cache reads",
    );
    within(
        p.usage.output_tokens as f64,
        73_059.0,
        "session output tokens",
    );
    within(s.duration_us as f64 / 60e6, 84.0, "session minutes");
}

#[test]
fn the_fix_notices_at_the_third_call_and_hard_stops_at_the_fifth_unattended() {
    let sc = scenario("execute-code-spin-wait");
    let (base, _) = run_mem(&sc, &RunOptions::default());
    // The spin's first call comes after 46 working calls and the delegation.
    let first_spin = 48;
    for (platform, stop) in [("cli", false), ("telegram", true), ("cron", true)] {
        let opts = RunOptions {
            profile: Some(ProfileName::HermesMain),
            platform: Some(platform.into()),
            ..RunOptions::default()
        };
        let (s, _) = run_mem(&sc, &opts);
        let p = &s.agents[0];
        assert_eq!(
            p.first_warning_call,
            Some(first_spin + 2),
            "{platform}: notice at the 3rd identical call"
        );
        match (stop, &p.stop) {
            (true, Some(st)) => {
                assert_eq!(
                    (st.call, st.code.as_str()),
                    (first_spin + 4, "identical_call_streak_halt"),
                    "{platform}"
                );
                assert_eq!(p.exit_reasons[0], "guardrail_halt");
                assert!(
                    s.total.cost_usd() < base.total.cost_usd() / 2.0,
                    "{platform}: the stop saves most of the money"
                );
            }
            (false, None) => assert_eq!(
                s.parent_exit_reason, "interrupted_by_user",
                "attended: notices only"
            ),
            (want, got) => panic!("{platform}: stop expected {want}, got {got:?}"),
        }
    }
}

#[test]
fn shared_budgets_starve_the_parent_and_independent_ones_do_not() {
    let (shared, _) = run_mem(
        &scenario("budget-starvation-shared"),
        &RunOptions::default(),
    );
    let (indep, _) = run_mem(
        &scenario("budget-starvation-independent"),
        &RunOptions::default(),
    );
    let child_calls = |s: &RunSummary| -> Vec<u64> {
        s.agents[1..].iter().map(|a| a.usage.model_calls).collect()
    };
    assert_eq!(child_calls(&indep), [30, 25, 20]);
    assert_eq!(child_calls(&shared), [30, 25, 20]);
    // Shared: the parent's 90 is spent by everyone; it gets 7 of its 15 synthesis calls.
    assert_eq!(shared.agents[0].budget_used, 90);
    assert_eq!(shared.agents[0].usage.model_calls, 16);
    // Independent: every budget is its own and the tree exceeds 90.
    assert_eq!(
        indep
            .agents
            .iter()
            .map(|a| a.budget_used)
            .collect::<Vec<_>>(),
        [24, 30, 25, 20]
    );
    assert_eq!(indep.total.model_calls, 99);
    assert!(indep.total.model_calls > 90);
}

fn bad(name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("loopsim-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    let o = loopsim(&[
        "run",
        path.to_str().unwrap(),
        "--out",
        dir.join("out").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{name}: bad input exits 2");
    assert!(
        !dir.join("out/summary.json").exists(),
        "{name}: no report for bad input"
    );
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(
        err.contains(&format!("{}:", path.display())),
        "{name}: names the file: {err}"
    );
    err
}

const GOOD: &str = r#"name = "t"
description = "d"
provenance = "test"
profile = "hermes-main"

[models.m]
latency_s = 1.0
output_tokens = 10

[tools.read_file]
latency_s = 0.5

[agents.parent]
model = "m"
script = [{ calls = [{ tool = "read_file" }] }, { answer = "x" }]
"#;

#[test]
fn a_good_minimal_scenario_runs() {
    let dir = std::env::temp_dir().join(format!("loopsim-good-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("good.toml");
    std::fs::write(&path, GOOD).unwrap();
    let o = loopsim(&[
        "run",
        path.to_str().unwrap(),
        "--out",
        dir.join("out").to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(dir.join("out/summary.json").exists() && dir.join("out/trace.jsonl").exists());
}

#[test]
fn bad_scenarios_name_file_line_and_key() {
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "syntax",
            GOOD.replace("latency_s = 1.0", "latency_s = = 1.0"),
            ":7: latency_s:",
        ),
        (
            "unknown-key",
            GOOD.replace("output_tokens = 10", "output_tokens = 10\ncolour = 3"),
            ":9: models.m.colour: unknown key; unknown field `colour`",
        ),
        (
            "wrong-type",
            GOOD.replace("latency_s = 0.5", "latency_s = \"slow\""),
            ":11: tools.read_file.latency_s: expected a number or { uniform | normal | lognormal = [a, b] }, found a string",
        ),
        (
            "negative-latency",
            GOOD.replace("latency_s = 0.5", "latency_s = -0.5"),
            ":11: tools.read_file.latency_s: -0.5 is not a number from 0 to 1e9",
        ),
        (
            "bad-uniform",
            GOOD.replace("latency_s = 0.5", "latency_s = { uniform = [3, 1] }"),
            ":11: tools.read_file.latency_s: uniform [3, 1] needs 0 <= a <= b <= 1e9",
        ),
        (
            "missing-child",
            GOOD.replace("{ answer = \"x\" }", "{ delegate = \"helper\" }"),
            ":15: agents.parent.script[1].delegate: no child agent named `helper`",
        ),
        (
            "unknown-tool",
            GOOD.replace("tool = \"read_file\"", "tool = \"fly\""),
            ":15: agents.parent.script[0].calls[0].tool: no tool named `fly`",
        ),
        (
            "unknown-model",
            GOOD.replace("model = \"m\"", "model = \"gpt\""),
            ":14: agents.parent.model: no model named `gpt`",
        ),
        (
            "unknown-profile",
            GOOD.replace("hermes-main", "hermes-9"),
            ":4: profile: unknown profile `hermes-9`",
        ),
        (
            "probability",
            GOOD.replace(
                "output_tokens = 10",
                "output_tokens = 10\nheed_probability = 1.5",
            ),
            ":9: models.m.heed_probability: 1.5 is not a probability",
        ),
        (
            "no-parent",
            GOOD.replace("[agents.parent]", "[agents.boss]"),
            ": agents: a scenario needs an agent named `parent`",
        ),
        (
            "two-kinds",
            GOOD.replace(
                "{ answer = \"x\" }",
                "{ answer = \"x\", delegate = \"parent\" }",
            ),
            "agents.parent.script[1]: a step needs exactly one of",
        ),
        (
            "missing-field",
            GOOD.replace("provenance = \"test\"\n", ""),
            ": provenance: missing: missing field `provenance`",
        ),
        (
            "bad-config",
            GOOD.replace(
                "[models.m]",
                "[config.agent]\nmax_turns = \"lots\"\n\n[models.m]",
            )
            .replace("hermes-main", "hermes-0.19.0"),
            "config.agent.max_turns",
        ),
        (
            "delegate-call-without-tool",
            GOOD.replace("{ tool = \"read_file\" }", "{ tool = \"delegate_task\" }"),
            "agents.parent.script[0].calls[0].tool: no tool named `delegate_task` in [tools] (a `delegate` step starts children",
        ),
        (
            "args-json-not-json",
            GOOD.replace(
                "{ tool = \"read_file\" }",
                "{ tool = \"read_file\", args_json = \"{oops\" }",
            ),
            ":15: agents.parent.script[0].calls[0].args_json: not JSON",
        ),
        (
            "recorded-code",
            GOOD.replace(
                "{ tool = \"read_file\" }",
                "{ tool = \"read_file\", guardrail = { action = \"warn\", code = \"loud\" } }",
            ),
            "agents.parent.script[0].calls[0].guardrail.code: `loud` is not a guardrail decision code",
        ),
        (
            "recorded-action",
            GOOD.replace(
                "{ tool = \"read_file\" }",
                "{ tool = \"read_file\", guardrail = { action = \"allow\", code = \"allow\" } }",
            ),
            "guardrail.action: `allow` is not warn, block or halt",
        ),
        (
            "turns-back-in-time",
            format!(
                "{GOOD}turns = [{{ at_s = 9.0, script = [{{ answer = \"a\" }}] }}, {{ at_s = 3.0, script = [{{ answer = \"b\" }}] }}]\n"
            ),
            "agents.parent.turns[1].at_s: must be a number of seconds, not before the previous turn's",
        ),
        (
            "under-unknown-profile",
            format!("{GOOD}\n[expect.under.hermes-mian]\nno_hard_stop = true\n"),
            "expect.under.hermes-mian: `hermes-mian`: unknown profile",
        ),
        (
            "under-own-profile",
            format!("{GOOD}\n[expect.under.hermes-main]\nno_hard_stop = true\n"),
            "is the scenario's own profile: its expectations go in [expect] itself",
        ),
        (
            "under-nested",
            format!("{GOOD}\n[expect.under.\"hermes-0.19.0\"]\nseeds = [1]\n"),
            "takes expectations only",
        ),
        (
            "under-platform-typo",
            format!("{GOOD}\n[expect.under.\"hermes-0.19.0@telgram\"]\nno_hard_stop = true\n"),
            "did you mean `telegram`",
        ),
        (
            "under-bad-stop-code",
            format!("{GOOD}\n[expect.under.\"hermes-0.19.0\"]\nstop_code = \"identical_call_streak_hlat\"\n"),
            "expect.under.hermes-0.19.0.stop_code: `identical_call_streak_hlat` is not a guardrail decision code or another runtime's limit (did you mean `identical_call_streak_halt`?)",
        ),
        (
            "figures-unknown-tool",
            format!("{GOOD}\n[expect.figures]\ntool_calls = {{ raed_file = 3 }}\n"),
            "expect.figures.tool_calls.raed_file: no tool named `raed_file` in [tools] (did you mean `read_file`?)",
        ),
        (
            "figures-unknown-key",
            format!("{GOOD}\n[expect.figures]\ncals = 3\n"),
            "expect.figures.cals: unknown key",
        ),
        (
            "figures-tolerance",
            format!("{GOOD}\n[expect.figures]\ntolerance = 5\ncalls = 3\n"),
            "expect.figures.tolerance: 5 is not a share between 0 and 1",
        ),
        (
            "figures-negative",
            format!("{GOOD}\n[expect.figures]\nminutes = -1\n"),
            "expect.figures.minutes: -1 is not a non-negative figure",
        ),
        (
            "cycle-empty-entry",
            GOOD.replace(
                "{ calls = [{ tool = \"read_file\" }] }",
                "{ times = 2, cycle = [{ calls = [] }] }",
            ),
            "agents.parent.script[0].cycle[0].calls: a cycle entry needs at least one call",
        ),
        (
            "cycle-unknown-tool",
            GOOD.replace(
                "{ calls = [{ tool = \"read_file\" }] }",
                "{ times = 2, cycle = [{ calls = [{ tool = \"fly\" }] }] }",
            ),
            "agents.parent.script[0].cycle[0].calls[0].tool: no tool named `fly`",
        ),
        (
            "cycle-and-calls",
            GOOD.replace(
                "{ calls = [{ tool = \"read_file\" }] }",
                "{ calls = [{ tool = \"read_file\" }], cycle = [{ calls = [{ tool = \"read_file\" }] }] }",
            ),
            "a step needs exactly one of calls, answer, delegate, choose, cycle",
        ),
        (
            "context-window-tiny",
            GOOD.replace("output_tokens = 10", "output_tokens = 10\ncontext_window = 10"),
            ":9: models.m.context_window: 10 tokens is not a model's window",
        ),
        (
            "context-window-below-start",
            GOOD.replace("output_tokens = 10", "output_tokens = 10\ncontext_window = 2000")
                .replace("model = \"m\"", "model = \"m\"\ncontext_tokens = 5000"),
            "agents.parent.context_tokens: 5000 tokens at the start do not fit model `m`'s window of 2000",
        ),
        (
            "unknown-and-priced",
            GOOD.replace(
                "output_tokens = 10",
                "output_tokens = 10\nprice = { unknown = true, input = 3.0 }",
            ),
            "models.m.price.unknown: a price cannot be both unknown and given",
        ),
    ];
    let mut wrong = Vec::new();
    for (name, text, want) in cases {
        let err = bad(name, &text);
        if !err.contains(want) {
            wrong.push(format!("{name}: expected `{want}` in: {err}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    let missing = loopsim(&["run", "scenarios/does-not-exist.toml"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("cannot read"));
}

#[test]
fn list_prints_one_line_per_scenario() {
    let o = loopsim(&["list"]);
    assert_eq!(o.status.code(), Some(0));
    let out = String::from_utf8(o.stdout).unwrap();
    assert_eq!(out.lines().count(), scenario_files().len());
    assert!(
        out.lines()
            .any(|l| l.starts_with("execute-code-spin-wait") && l.contains("hermes-v0.21.5"))
    );
}

#[test]
fn children_and_timeouts_are_reported() {
    let (s, _) = run_mem(&scenario("child-timeout"), &RunOptions::default());
    assert_eq!(s.agents[1].status, Status::TimedOut);
    assert!(
        s.agents[1].usage.model_calls < 40,
        "cut off before its 40 searches"
    );
}

fn write_scenario(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("loopsim-sc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_model_that_heeds_notices_moves_on_and_one_that_does_not_is_halted() {
    let text = |heed: f64| {
        format!(
            r#"name = "heed"
description = "d"
provenance = "test"
profile = "hermes-main"
platform = "cron"

[models.m]
latency_s = 1.0
output_tokens = 10
heed_probability = {heed}

[tools.read_file]
latency_s = 0.5
result = "same"

[agents.parent]
model = "m"
script = [{{ calls = [{{ tool = "read_file", args = {{ path = "a" }} }}], until = "stopped" }}, {{ answer = "ok" }}]
"#
        )
    };
    let run_one = |heed| {
        let sc = Scenario::load(&write_scenario(&format!("heed{heed}"), &text(heed))).unwrap();
        run_mem(&sc, &RunOptions::default()).0
    };
    let stubborn = run_one(0.0);
    assert_eq!(stubborn.parent_exit_reason, "guardrail_halt");
    let heeding = run_one(1.0);
    assert_eq!(
        heeding.parent_exit_reason,
        "text_response(finish_reason=stop)"
    );
    assert!(
        heeding.agents[0].warnings >= 1,
        "it moved on after its first warning"
    );
    assert!(heeding.agents[0].stop.is_none());
}

#[test]
fn a_loop_without_latency_stops_at_the_horizon_instead_of_hanging() {
    let sc = Scenario::load(&write_scenario(
        "zero",
        r#"name = "zero"
description = "d"
provenance = "test"
profile = "hermes-main"

[models.m]
latency_s = 0
output_tokens = 1

[tools.terminal]
latency_s = 0
result = '{"output": "{counter}", "exit_code": 0}'

[agents.parent]
model = "m"
script = [{ calls = [{ tool = "terminal", args = { command = "x" } }], until = "stopped" }]

[report]
horizon_s = 10
"#,
    ))
    .unwrap();
    // Checking invariants makes the cap a broken invariant (debug builds check by default).
    let opts = RunOptions {
        invariants: loopsim_world::sim::InvariantChecks::Never,
        ..RunOptions::default()
    };
    let (s, _) = run_mem(&sc, &opts);
    assert!(s.hit_horizon);
    assert!(s.events > loopsim_world::sim::MAX_EVENTS);
}

#[test]
fn check_determinism_and_counterfactual_replay_from_the_command_line() {
    let out = std::env::temp_dir().join(format!("loopsim-cf-{}", std::process::id()));
    let o = loopsim(&[
        "run",
        "scenarios/execute-code-spin-wait.toml",
        "--check-determinism",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("determinism: two runs gave the same trace")
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("rerun: loopsim run scenarios/execute-code-spin-wait.toml --seed 1"),
        "{stdout}"
    );
    let trace = out.join("trace.jsonl");
    let what_if = out.join("what-if");
    let o = loopsim(&[
        "replay",
        trace.to_str().unwrap(),
        "--profile",
        "hermes-main",
        "--platform",
        "telegram",
        "--out",
        what_if.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("| counterfactual | hermes-main telegram |"),
        "{text}"
    );
    assert!(
        text.contains("call 52 (identical_call_streak_halt)"),
        "{text}"
    );
    let saved_line = text.lines().find(|l| l.starts_with("saved: ")).unwrap();
    let saved_calls: i64 = saved_line["saved: ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(saved_calls > 150, "{saved_line}");
    std::fs::remove_dir_all(out).unwrap();
}

#[test]
fn a_users_config_yaml_is_laid_over_the_scenarios_config() {
    let dir = std::env::temp_dir().join(format!("loopsim-overlay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("config.yaml");
    std::fs::write(&cfg, "tool_loop_guardrails:\n  hard_stop_enabled: yes\n").unwrap();
    let sc = scenario("execute-code-spin-wait");
    let opts = RunOptions {
        profile: Some(ProfileName::HermesMain),
        config: Some(std::sync::Arc::new(UserConfig::load(&cfg).unwrap())),
        ..RunOptions::default()
    };
    let (s, _) = run_mem(&sc, &opts);
    // The file turned hard stops on (the platform is cli) ...
    assert_eq!(
        s.agents[0].stop.as_ref().map(|st| st.code.as_str()),
        Some("identical_call_streak_halt")
    );
    // ... and the scenario's own delegation.max_concurrent_children = 10 still applies.
    assert_eq!(s.agents.len(), 11, "all ten children were admitted");
    let err = UserConfig::parse("a: [1,\n", "bad.yaml")
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("bad.yaml:"), "{err}");
}

#[test]
fn a_context_that_keeps_filling_its_window_is_compacted_until_it_no_longer_fits() {
    let text = r#"name = "fills"
description = "d"
provenance = "test"
profile = "hermes-main"
platform = "cli"

[models.m]
latency_s = 1.0
output_tokens = 100
cache_read_share = 0.9
price = { input = 1.0, cache_read = 0.1, output = 4.0 }
context_window = 100_000

[tools.read_file]
latency_s = 0.1
result_tokens = 900

[agents.parent]
model = "m"
context_tokens = 10000
script = [{ calls = [{ tool = "read_file", args = { path = "a" }, distinct = true }], until = "stopped" }]
"#;
    let sc = Scenario::parse(text, "fills.toml").unwrap();
    let (s, trace) = run_mem(&sc, &RunOptions::default());
    let trace = String::from_utf8(trace).unwrap();
    let events: Vec<serde_json::Value> = trace
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["kind"].as_str()).collect();
    let compressions: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["kind"] == "compression")
        .collect();
    // Three counted attempts before calls; the compactions after a response over the threshold
    // are not counted, so a context that keeps growing is compacted until one leaves it past
    // the window.
    let counts: Vec<u64> = compressions
        .iter()
        .map(|e| e["count"].as_u64().unwrap())
        .collect();
    assert!(counts.len() > 3, "{counts:?}");
    assert_eq!(counts[..3], [1, 2, 3]);
    assert!(counts[3..].iter().all(|c| *c == 3), "{counts:?}");
    assert_eq!(
        kinds.iter().filter(|k| **k == "context_exhausted").count(),
        1
    );
    assert_eq!(s.parent_exit_reason, "context_compression_exhausted");
    // 75% of a 100 k window triggers; the head, the summary and the tail are what is left.
    let sizes = |e: &serde_json::Value| -> (u64, u64) {
        let d = e["detail"].as_str().unwrap();
        let d = d
            .strip_prefix("context ")
            .unwrap()
            .strip_suffix(" tokens")
            .unwrap();
        let (before, after) = d.split_once(" -> ").unwrap();
        (before.parse().unwrap(), after.parse().unwrap())
    };
    let (before, after) = sizes(compressions[0]);
    assert_eq!(before, 75_000, "{}", compressions[0]);
    assert!((20_000..40_000).contains(&after), "{}", compressions[0]);
    // Each compaction keeps less of the loop's growth: the last leaves it near the threshold.
    let (_, last_after) = sizes(compressions.last().unwrap());
    assert!(
        last_after > after,
        "{last_after} after the last, {after} after the first"
    );
    // The call after a compression reads nothing from the cache, and sends what was left.
    let at = events
        .iter()
        .position(|e| e["kind"] == "compression")
        .unwrap();
    let next = events[at..]
        .iter()
        .find(|e| e["kind"] == "model_call")
        .unwrap();
    assert_eq!(next["cache_read_tokens"], 0, "{next}");
    assert_eq!(next["input_tokens"], after, "{next}");
    let c = &s.agents[0].compressions;
    assert_eq!(c.calls as usize, compressions.len());
    assert_eq!(
        c.output_tokens,
        compressions
            .iter()
            .map(|e| e["output_tokens"].as_u64().unwrap())
            .sum::<u64>()
    );
    // The last call sent fit the window; the one that would not is never made.
    let last = events
        .iter()
        .rev()
        .find(|e| e["kind"] == "model_call")
        .unwrap();
    assert!(last["input_tokens"].as_u64().unwrap() <= 100_000, "{last}");
    // 0.19.0 returns before it names a reason.
    let old = run_mem(
        &sc,
        &RunOptions {
            profile: Some(ProfileName::Hermes0_19_0),
            config: None,
            ..RunOptions::default()
        },
    )
    .0;
    assert_eq!(old.parent_exit_reason, "max_iterations_reached(90/90)");
    // Without a window nothing is compressed: the same scenario runs until its horizon.
    let plain = Scenario::parse(
        &text.replace("context_window = 100_000\n", "").replace(
            "until = \"stopped\" }]",
            "times = 200 }, { answer = \"done\" }]",
        ),
        "plain.toml",
    )
    .unwrap();
    let (p, t) = run_mem(&plain, &RunOptions::default());
    assert!(!String::from_utf8(t).unwrap().contains("compression"));
    assert_eq!(p.agents[0].compressions.calls, 0);
    assert_eq!(p.parent_exit_reason, "text_response(finish_reason=stop)");
}

#[test]
fn a_cycle_step_takes_its_entries_in_turn() {
    let text = r#"name = "osc"
description = "d"
provenance = "test"
profile = "hermes-main"
platform = "cron"

[models.m]
latency_s = 1.0
output_tokens = 10

[tools.memory]
latency_s = 0.01

[agents.parent]
model = "m"
script = [
  { times = 12, cycle = [
      { calls = [{ tool = "memory", args = { action = "add" }, result = "added" }] },
      { calls = [{ tool = "memory", args = { action = "remove" }, result = "removed" }] },
  ] },
  { answer = "ok" },
]
"#;
    let sc = Scenario::parse(text, "osc.toml").unwrap();
    let (s, trace) = run_mem(&sc, &RunOptions::default());
    let hashes: Vec<String> = String::from_utf8(trace)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["kind"] == "tool_call")
        .map(|e| e["args_hash"].as_str().unwrap().to_string())
        .collect();
    // A, B, A, B: two argument hashes in alternation.
    assert_ne!(hashes[0], hashes[1]);
    assert!(hashes.iter().step_by(2).all(|h| *h == hashes[0]));
    assert!(hashes.iter().skip(1).step_by(2).all(|h| *h == hashes[1]));
    // The cycle detector halts the 5th lap on an unattended platform: call 10.
    let stop = s.agents[0].stop.as_ref().unwrap();
    assert_eq!(
        (stop.code.as_str(), stop.call),
        ("identical_cycle_halt", 10)
    );
    assert_eq!(s.agents[0].tool_calls["memory"], 10);
}

/// The guard log holds every call a run makes to its engines: replayed through fresh
/// controllers, it gives the decisions the run's trace recorded, in order, on every scenario.
#[test]
fn the_guard_log_replays_to_the_runs_decisions() {
    use loopsim_engine::guardrails::Action;
    use loopsim_world::guard_log::{self, GuardLog};
    let mut compared = 0;
    for path in scenario_files() {
        let sc = Scenario::load(&path).unwrap();
        if sc.file.recorded {
            continue;
        }
        let log: GuardLog = Default::default();
        let opts = RunOptions {
            guard_log: Some(log.clone()),
            ..RunOptions::default()
        };
        let buf = SharedBuf::default();
        run(&sc, &opts, TraceWriter::to_writer(Box::new(buf.clone()))).unwrap();
        let traced: Vec<String> = String::from_utf8(buf.bytes())
            .unwrap()
            .lines()
            .filter(|l| l.contains("\"kind\":\"decision\""))
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                format!("{} {} {}", v["action"], v["code"], v["count"])
            })
            .collect();
        let mut replayed = Vec::new();
        guard_log::replay(&log.lock().unwrap(), |d, _| {
            if d.action != Action::Allow {
                replayed.push(format!(
                    "\"{}\" \"{}\" {}",
                    d.action.as_str(),
                    d.code.as_str(),
                    d.count
                ));
            }
        });
        assert_eq!(replayed, traced, "{}", path.display());
        compared += traced.len();
    }
    assert!(compared > 100, "{compared} decisions compared");
}
