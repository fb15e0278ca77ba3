//! `loopsim check` and `loopsim gate`: failing expectations, JUnit XML, baselines, the gate's
//! tolerance, `--update` and the Bencher Metric Format.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::root;

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("loopsim-gate-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn loopsim(args: &[&str]) -> Output {
    common::loopsim_in(&root(), args)
}

fn text(o: &Output) -> String {
    common::output_text(o)
}

/// A copy of a committed scenario with one line replaced.
fn variant(dir: &Path, name: &str, from: &str, to: &str) -> PathBuf {
    let src = std::fs::read_to_string(root().join(format!("scenarios/{name}.toml"))).unwrap();
    assert!(src.contains(from), "{name} has `{from}`");
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, src.replacen(from, to, 1)).unwrap();
    path
}

#[test]
fn the_committed_suite_passes_its_checks_and_its_baseline() {
    let o = loopsim(&["check"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let last = String::from_utf8_lossy(&o.stdout)
        .lines()
        .last()
        .unwrap()
        .to_string();
    assert!(last.ends_with(" passed, 0 failed"), "{last}");
    let o = loopsim(&["gate", "--baseline", "reports/baseline.json"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "the committed baseline matches: {}",
        text(&o)
    );
}

#[test]
fn a_wrong_expectation_fails_check_with_the_rerun_command_and_junit() {
    let dir = tmp("wrong");
    let sc = variant(
        &dir,
        "web-search-flood",
        "stop_code = \"loop_web_search_cap\"",
        "stop_code = \"loop_subagent_cap\"",
    );
    let junit = dir.join("junit.xml");
    let o = loopsim(&[
        "check",
        sc.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let out = text(&o);
    assert!(out.contains("FAIL web-search-flood seed 4 hermes-main: stop_code: expected loop_subagent_cap, got parent: loop_web_search_cap"), "{out}");
    assert!(
        out.contains(&format!("(rerun: loopsim run {} --seed 4)", sc.display())),
        "{out}"
    );
    assert!(out.contains("0 passed, 3 failed"), "{out}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites "));
    assert!(xml.contains(
        "<testsuite name=\"scenarios\" tests=\"3\" failures=\"3\" errors=\"0\" skipped=\"0\">"
    ));
    assert_eq!(xml.matches("<testcase ").count(), 3);
    assert_eq!(xml.matches("<failure ").count(), 3);
    assert_eq!(xml.matches("</testcase>").count(), 3);
    assert!(xml.trim_end().ends_with("</testsuites>"));
}

#[test]
fn a_changed_threshold_fails_the_gate_naming_the_metric_and_update_accepts_it() {
    let dir = tmp("threshold");
    // A copy of the no-progress loop, checked and saved as the baseline.
    let sc = variant(&dir, "read-only-no-progress", "", "");
    let baseline = dir.join("baseline.json");
    let o = loopsim(&[
        "check",
        sc.to_str().unwrap(),
        "--save-baseline",
        baseline.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // Raise the no-progress block threshold: the loop now runs longer before it is refused.
    let src = std::fs::read_to_string(&sc).unwrap();
    std::fs::write(
        &sc,
        src.replace(
            "hard_stop_enabled = true",
            "hard_stop_enabled = true\nno_progress_block_after = 8",
        ),
    )
    .unwrap();
    let bmf = dir.join("bmf.json");
    let o = loopsim(&[
        "gate",
        "--baseline",
        baseline.to_str().unwrap(),
        "--bmf",
        bmf.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let out = text(&o);
    assert!(
        out.contains("| read-only-no-progress seed 8 hermes-0.19.0 | calls | "),
        "{out}"
    );
    assert!(
        out.contains("| cost_usd |") && out.contains("| Worse | FAIL |"),
        "{out}"
    );
    assert!(out.contains("| stop | idempotent_no_progress_block at call 6 | idempotent_no_progress_block at call 9 | Moved |"), "{out}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&bmf).unwrap()).unwrap();
    assert!(
        v["read-only-no-progress/seed-8/hermes-0.19.0"]["cost_usd"]["value"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    // 40% is not enough: 9 calls instead of 6 is 50% more.
    let o = loopsim(&[
        "gate",
        "--baseline",
        baseline.to_str().unwrap(),
        "--max-increase",
        "40%",
    ]);
    assert_eq!(o.status.code(), Some(1));
    // --update accepts the new figures; then the gate passes.
    let o = loopsim(&["gate", "--baseline", baseline.to_str().unwrap(), "--update"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = loopsim(&["gate", "--baseline", baseline.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("every metric equal to its baseline"));
    // Improvements pass and are reported; --fail-on-any-change fails them.
    std::fs::write(&sc, src).unwrap();
    let o = loopsim(&["gate", "--baseline", baseline.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("| Better |"));
    let o = loopsim(&[
        "gate",
        "--baseline",
        baseline.to_str().unwrap(),
        "--fail-on-any-change",
    ]);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn bad_gate_input_is_a_usage_error() {
    let dir = tmp("bad");
    let junk = dir.join("junk.json");
    std::fs::write(
        &junk,
        "{\"format\": \"other\", \"version\": 1, \"entries\": []}",
    )
    .unwrap();
    let o = loopsim(&["gate", "--baseline", junk.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("format is `other`"), "{}", text(&o));
    let o = loopsim(&[
        "gate",
        "--baseline",
        "reports/baseline.json",
        "--max-increase",
        "lots",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("--max-increase `lots`"));
    let o = loopsim(&[
        "gate",
        "--baseline",
        dir.join("missing.json").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
}

/// The instruction-count gate (benches/check_instructions.py) on made-up Callgrind results.
#[test]
fn the_instruction_gate_fails_above_five_percent() {
    let python = ["python3", "python"].into_iter().find(|p| {
        Command::new(p)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    });
    let Some(python) = python else {
        eprintln!("\n!!! SKIPPED the instruction-gate test: no python3 on this machine\n");
        return;
    };
    let dir = tmp("instructions");
    let results = dir.join("results");
    let summary = |group: &str, function: &str, id: &str, ir: u64| {
        let d = results.join(group).join(format!("{function}.{id}"));
        std::fs::create_dir_all(&d).unwrap();
        let body = serde_json::json!({
            "group": group, "function_name": function, "id": id,
            "profiles": [{"data": {"parts": [{"metrics": {"Ir": {"values": {"new": ir}}}}]}}]
        });
        std::fs::write(d.join("summary.json"), body.to_string()).unwrap();
    };
    let limits = dir.join("limits.json");
    std::fs::write(
        &limits,
        r#"{"tolerance": 0.05, "instructions": {"engine/a.x": 1000, "simulator/b.y": 2000}}"#,
    )
    .unwrap();
    let run = || {
        Command::new(python)
            .arg(root().join("benches/check_instructions.py"))
            .env("LOOPSIM_GUNGRAUN_RESULTS", &results)
            .env("LOOPSIM_INSTRUCTION_LIMITS", &limits)
            .output()
            .unwrap()
    };
    summary("engine", "a", "x", 1040);
    summary("simulator", "b", "y", 1500);
    let o = run();
    assert_eq!(
        o.status.code(),
        Some(0),
        "4% more and an improvement pass: {}",
        text(&o)
    );
    summary("engine", "a", "x", 1060);
    let o = run();
    assert_eq!(o.status.code(), Some(1), "6% more fails: {}", text(&o));
    assert!(
        text(&o).contains("| engine/a.x | 1000 | 1060 | +6.00% | FAIL |"),
        "{}",
        text(&o)
    );
    summary("simulator", "c", "z", 10);
    assert_eq!(
        run().status.code(),
        Some(2),
        "an unrecorded benchmark is an error"
    );
}
