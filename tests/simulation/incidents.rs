//! The suite replays Hermes's reported runaway loops: each incident scenario reproduces the
//! thread's figures within 5% under the version that misbehaved, and is caught under
//! hermes-main exactly where main's guardrails catch it (code and call), or by nothing where
//! that is the truth. The table below is this test's own statement of those outcomes, so a
//! scenario file cannot quietly weaken them.

use crate::common;

use common::root;
use loopsim_engine::profile::ProfileName;
use loopsim_runner::check::{block_for, block_verdicts};
use loopsim_world::scenario::Scenario;
use loopsim_world::sim::{RunOptions, RunSummary, run};
use loopsim_world::trace::TraceWriter;

/// Where hermes-main stops an incident, on the platform given (none: the scenario's).
#[derive(Clone, Copy, Debug)]
enum Main {
    /// A guardrail stop with this code at this parent call.
    Caught {
        platform: Option<&'static str>,
        code: &'static str,
        call: u64,
    },
    /// No guardrail stops it; the run ends with this exit reason.
    Nothing {
        platform: Option<&'static str>,
        exit: &'static str,
    },
    /// Not a guardrail matter (the scenario states why it has no hermes-main block).
    NotApplicable,
}

struct Incident {
    scenario: &'static str,
    /// The Hermes issue or PR numbers the provenance must name.
    threads: &'static [&'static str],
    /// The version that misbehaved: its exit reason.
    exit: &'static str,
    main: Vec<Main>,
}

fn incidents() -> Vec<Incident> {
    use Main::*;
    vec![
        Incident {
            scenario: "incident-17327-process-poll",
            threads: &["#17327"],
            exit: "interrupted_by_user",
            main: vec![Nothing {
                platform: None,
                exit: "interrupted_by_user",
            }],
        },
        Incident {
            scenario: "incident-75569-process-wait",
            threads: &["#75569"],
            exit: "max_iterations_reached(90/90)",
            main: vec![Nothing {
                platform: None,
                exit: "max_iterations_reached(90/90)",
            }],
        },
        Incident {
            scenario: "incident-112535-identical-terminal",
            threads: &["#112535"],
            exit: "text_response(finish_reason=stop)",
            main: vec![
                Nothing {
                    platform: None,
                    exit: "text_response(finish_reason=stop)",
                },
                Caught {
                    platform: Some("telegram"),
                    code: "identical_call_streak_halt",
                    call: 5,
                },
            ],
        },
        Incident {
            scenario: "incident-100849-telegram-replays",
            threads: &["#100967", "#89069", "#49075"],
            exit: "interrupted_by_user",
            main: vec![Caught {
                platform: None,
                code: "identical_call_streak_halt",
                call: 5,
            }],
        },
        Incident {
            scenario: "incident-89069-feishu-terminal",
            threads: &["#89069", "#100967"],
            exit: "interrupted_by_user",
            main: vec![Caught {
                platform: None,
                code: "identical_call_streak_halt",
                call: 5,
            }],
        },
        Incident {
            scenario: "incident-67829-memory-no-action",
            threads: &["#67829"],
            exit: "interrupted_by_user",
            main: vec![Nothing {
                platform: None,
                exit: "interrupted_by_user",
            }],
        },
        Incident {
            scenario: "incident-37911-memory-signal",
            threads: &["#37911"],
            exit: "interrupted_by_user",
            main: vec![Caught {
                platform: None,
                code: "identical_call_streak_halt",
                call: 5,
            }],
        },
        Incident {
            scenario: "incident-94855-memory-oscillation",
            threads: &["#94855"],
            exit: "interrupted_by_user",
            main: vec![
                Nothing {
                    platform: None,
                    exit: "interrupted_by_user",
                },
                Caught {
                    platform: Some("telegram"),
                    code: "identical_cycle_halt",
                    call: 10,
                },
            ],
        },
        Incident {
            scenario: "incident-115193-execute-code-probe",
            threads: &["#115193"],
            exit: "interrupted_by_user",
            main: vec![Caught {
                platform: None,
                code: "identical_call_streak_halt",
                call: 12,
            }],
        },
        Incident {
            scenario: "incident-2873-shared-budget",
            threads: &["#2873", "#3004"],
            exit: "text_response(finish_reason=stop)",
            main: vec![NotApplicable],
        },
        Incident {
            scenario: "incident-52868-async-pool-full",
            threads: &["#52868", "#52484"],
            exit: "text_response(finish_reason=stop)",
            main: vec![Nothing {
                platform: None,
                exit: "text_response(finish_reason=stop)",
            }],
        },
        Incident {
            scenario: "incident-85233-fan-out-tokens",
            threads: &["#85233"],
            exit: "text_response(finish_reason=stop)",
            main: vec![Nothing {
                platform: None,
                exit: "text_response(finish_reason=stop)",
            }],
        },
        Incident {
            scenario: "incident-96247-tool-search-context",
            threads: &["#96247", "#96318"],
            exit: "context_compression_exhausted",
            main: vec![
                Nothing {
                    platform: None,
                    exit: "context_compression_exhausted",
                },
                Nothing {
                    platform: Some("telegram"),
                    exit: "context_compression_exhausted",
                },
            ],
        },
        Incident {
            scenario: "incident-64927-qqbot-terminal",
            threads: &["#64927"],
            exit: "interrupted_by_user",
            main: vec![Caught {
                platform: None,
                code: "identical_call_streak_halt",
                call: 32,
            }],
        },
    ]
}

fn load(name: &str) -> Scenario {
    Scenario::load(&root().join("scenarios").join(format!("{name}.toml"))).unwrap()
}

fn run_under(sc: &Scenario, profile: Option<ProfileName>, platform: Option<&str>) -> RunSummary {
    let opts = RunOptions {
        profile,
        platform: platform.map(str::to_string),
        ..RunOptions::default()
    };
    run(sc, &opts, TraceWriter::hash_only()).unwrap()
}

#[test]
fn the_table_covers_every_incident_scenario_and_at_least_ten_threads() {
    let mut on_disk: Vec<String> = std::fs::read_dir(root().join("scenarios"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("incident-") && n.ends_with(".toml"))
        .map(|n| n.trim_end_matches(".toml").to_string())
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = incidents().iter().map(|i| i.scenario.into()).collect();
    listed.sort();
    assert_eq!(
        on_disk, listed,
        "tests/simulation/incidents.rs lists every incident scenario"
    );
    // The table groups threads into incidents; its first thread names each group.
    let groups = [
        "#17327", "#75569", "#112535", "#89069", "#67829", "#94855", "#115193", "#2873", "#52868",
        "#85233", "#96247", "#64927",
    ];
    let covered = groups
        .iter()
        .filter(|g| incidents().iter().any(|i| i.threads.contains(g)))
        .count();
    assert!(covered >= 10, "{covered} of the 12 incidents replayed");
}

#[test]
fn each_incident_misbehaves_under_its_version_with_the_threads_figures() {
    for inc in incidents() {
        let sc = load(inc.scenario);
        for t in inc.threads {
            assert!(
                sc.file.provenance.contains(t),
                "{}: provenance names {t}",
                inc.scenario
            );
        }
        assert!(
            sc.file.platform.is_some(),
            "{}: the thread's platform",
            inc.scenario
        );
        let figures =
            sc.file.expect.figures.as_ref().unwrap_or_else(|| {
                panic!("{}: the thread's figures are expectations", inc.scenario)
            });
        assert!(
            figures.tolerance.is_none_or(|t| t <= 0.05),
            "{}: within 5%",
            inc.scenario
        );
        let s = run_under(&sc, None, None);
        assert_eq!(s.parent_exit_reason, inc.exit, "{}", inc.scenario);
        let verdicts = block_verdicts(&sc, &sc.file.expect, &s);
        let figure_checks = verdicts
            .iter()
            .filter(|v| v.key.starts_with("figures."))
            .count();
        assert!(
            figure_checks >= 1,
            "{}: at least one reported figure checked",
            inc.scenario
        );
        for v in &verdicts {
            assert!(
                v.pass,
                "{} under {}: {}: expected {}, got {}",
                inc.scenario, sc.profile, v.key, v.expected, v.actual
            );
        }
    }
}

#[test]
fn hermes_main_catches_each_incident_where_its_guardrails_do_or_nothing_does() {
    for inc in incidents() {
        let sc = load(inc.scenario);
        for m in &inc.main {
            let platform = match m {
                Main::Caught { platform, .. } | Main::Nothing { platform, .. } => *platform,
                Main::NotApplicable => {
                    assert!(
                        sc.file.child_budget.is_some() && sc.file.expect.under.is_empty(),
                        "{}: only a scenario whose budget mode overrides the profile's has no hermes-main block",
                        inc.scenario
                    );
                    continue;
                }
            };
            let s = run_under(&sc, Some(ProfileName::HermesMain), platform);
            let parent = &s.agents[0];
            match m {
                Main::Caught { code, call, .. } => {
                    let stop = parent.stop.as_ref().unwrap_or_else(|| {
                        panic!("{}: hermes-main stops the parent", inc.scenario)
                    });
                    assert_eq!(
                        (stop.code.as_str(), stop.call),
                        (*code, *call),
                        "{}",
                        inc.scenario
                    );
                }
                Main::Nothing { exit, .. } => {
                    assert!(
                        s.agents.iter().all(|a| a.stop.is_none()),
                        "{}: nothing stops it under hermes-main",
                        inc.scenario
                    );
                    assert_eq!(&s.parent_exit_reason, exit, "{}", inc.scenario);
                }
                Main::NotApplicable => unreachable!(),
            }
            // The scenario states the same outcome, and `loopsim check` holds it to it.
            let block =
                block_for(&sc, Some(ProfileName::HermesMain), platform).unwrap_or_else(|| {
                    panic!(
                        "{}: an [expect.under] block for hermes-main{}",
                        inc.scenario,
                        platform.map(|p| format!("@{p}")).unwrap_or_default()
                    )
                });
            let verdicts = block_verdicts(&sc, block, &s);
            assert!(
                verdicts
                    .iter()
                    .any(|v| v.key == "stop_call" || v.key == "no_hard_stop"),
                "{}: the block says where (or that nothing) stops it",
                inc.scenario
            );
            for v in &verdicts {
                assert!(
                    v.pass,
                    "{} under hermes-main: {}: expected {}, got {}",
                    inc.scenario, v.key, v.expected, v.actual
                );
            }
        }
    }
}

#[test]
fn a_figure_or_catch_point_off_by_more_than_its_tolerance_fails() {
    // Half the user's patience: half the polls, which the 5% figure must reject.
    let text = std::fs::read_to_string(root().join("scenarios/incident-17327-process-poll.toml"))
        .unwrap()
        .replace("interrupt_at_s = 420", "interrupt_at_s = 210");
    let sc = Scenario::parse(&text, "incident-17327-process-poll.toml").unwrap();
    let s = run_under(&sc, None, None);
    let failed: Vec<String> = block_verdicts(&sc, &sc.file.expect, &s)
        .into_iter()
        .filter(|v| !v.pass)
        .map(|v| v.key)
        .collect();
    assert_eq!(
        failed,
        ["figures.minutes", "figures.tool_calls.process"],
        "both figures fail"
    );
    // A catch point one call off fails too.
    let text = std::fs::read_to_string(root().join("scenarios/incident-37911-memory-signal.toml"))
        .unwrap()
        .replace("stop_call = 5", "stop_call = 6");
    let sc = Scenario::parse(&text, "incident-37911-memory-signal.toml").unwrap();
    let block = block_for(&sc, Some(ProfileName::HermesMain), None).unwrap();
    let s = run_under(&sc, Some(ProfileName::HermesMain), None);
    let v = block_verdicts(&sc, block, &s);
    let stop = v.iter().find(|v| v.key == "stop_call").unwrap();
    assert!(!stop.pass, "{stop:?}");
    assert_eq!(stop.actual, "identical_call_streak_halt at call 5");
}

#[test]
fn the_readme_tables_every_incident() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let section = readme
        .split("## Reported runaway loops")
        .nth(1)
        .expect("README has a section on the incidents");
    for inc in incidents() {
        assert!(
            section.contains(&format!("`{}`", inc.scenario)),
            "README's incident table lists {}",
            inc.scenario
        );
    }
}

#[test]
fn the_committed_sweep_sample_is_what_its_rerun_line_makes() {
    let dir = root().join("reports/sample/sweep");
    let summary = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    let rerun = summary
        .lines()
        .find_map(|l| l.strip_prefix("Rerun: `loopsim "))
        .and_then(|l| l.strip_suffix('`'))
        .expect("the sample names its rerun line");
    assert!(
        rerun.contains("scenarios/incident-96247-tool-search-context.toml"),
        "the sample sweeps the incident loops"
    );
    let out = std::env::temp_dir().join(format!("loopsim-sweep-sample-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let mut args: Vec<&str> = rerun.split_whitespace().collect();
    let out_s = out.to_string_lossy().into_owned();
    args.extend(["--out", &out_s]);
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_loopsim"))
        .args(&args)
        .current_dir(root())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for f in ["summary.md", "sweep.csv", "aggregate.csv"] {
        let committed = std::fs::read(dir.join(f)).unwrap();
        let fresh = std::fs::read(out.join(f)).unwrap();
        assert!(
            committed == fresh,
            "reports/sample/sweep/{f} is stale: rerun its line"
        );
    }
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn the_committed_runtime_comparison_is_what_its_rerun_line_makes() {
    let dir = root().join("reports/sample/runtimes");
    let summary = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    let rerun = summary
        .lines()
        .find_map(|l| l.split_once("Rerun: `loopsim ").map(|(_, r)| r))
        .and_then(|l| l.strip_suffix('`'))
        .expect("the sample names its rerun line");
    assert!(rerun.contains("openai-agents-0.24") && rerun.contains("hermes-main"));
    let out = std::env::temp_dir().join(format!("loopsim-compare-sample-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let mut args: Vec<&str> = rerun.split_whitespace().collect();
    let out_s = out.to_string_lossy().into_owned();
    args.extend(["--out", &out_s, "--format", "json"]);
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_loopsim"))
        .args(&args)
        .current_dir(root())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for f in ["summary.md", "summary.json"] {
        let committed = std::fs::read(dir.join(f)).unwrap();
        let fresh = std::fs::read(out.join(f)).unwrap();
        assert!(
            committed == fresh,
            "reports/sample/runtimes/{f} is stale: rerun its line"
        );
    }
    // What the comparison must show: a healthy run the SDK's default cap stops, with the
    // setting that avoids it, and an incident loop it stops that Hermes main never does.
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let col = v["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .position(|p| p == "openai-agents-0.24")
        .unwrap();
    let row = |name: &str| {
        v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["scenario"] == name)
            .unwrap_or_else(|| panic!("{name} is compared"))
            .clone()
    };
    let h40 = &row("healthy-research-40-searches")["cells"][col];
    assert_eq!(h40["outcome"], "stopped");
    assert_eq!(h40["by"], "raised(MaxTurnsExceeded)");
    assert_eq!(h40["call"], 10);
    assert_eq!(h40["avoid_with"], "max_turns: 41");
    let spin = row("incident-17327-process-poll");
    assert_eq!(spin["cells"][col]["outcome"], "stopped");
    assert_eq!(spin["cells"][0]["outcome"], "not_stopped");
    let fan = &row("incident-52868-async-pool-full")["cells"][col];
    assert_eq!(fan["outcome"], "not_expressible");
    let _ = std::fs::remove_dir_all(&out);
}
