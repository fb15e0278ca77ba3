//! What a careful user tried, each once a silent wrong answer or a crash: inert sweeps,
//! near-miss sections, shadowed keys, duplicate values, colliding what-ifs, unquoted rerun
//! lines, rerun lines that do not reproduce, lost exit codes, interrupted commands, devices
//! as files, and baselines that gate nothing.

use crate::common;

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};

use common::{TempDir, loopsim_in, output_text, root};

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `loopsim init` in `dir`, and the path of the scenario it wrote.
fn init(dir: &Path) -> String {
    let o = loopsim_in(dir, &["init", "s.toml", "-q"]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    dir.join("s.toml").to_str().unwrap().to_string()
}

#[test]
fn a_sweep_of_a_threshold_whose_detector_is_off_is_refused_with_the_reason() {
    let dir = TempDir::new("edge-inert");
    let s = init(&dir);
    let text = std::fs::read_to_string(&s).unwrap();
    let off: String = text
        .lines()
        .filter(|l| !l.starts_with("hard_stop_enabled"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(dir.join("off.toml"), off).unwrap();
    let o = loopsim_in(
        &dir,
        &[
            "sweep",
            "off.toml",
            "--grid",
            "tool_loop_guardrails.hard_stop_after.idempotent_no_progress=2..=4",
            "--seeds",
            "0..2",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", output_text(&o));
    assert!(
        stderr(&o).contains("no value changes any run: for my-scenario under hermes-main, hard stops are off on attended platform cli"),
        "{}",
        stderr(&o)
    );
    // Values Hermes reads alike are one value.
    for (grid, want) in [
        (
            "tool_loop_guardrails.hard_stop_after.idempotent_no_progress=3,03",
            "`03` is listed twice (as 3)",
        ),
        (
            "agent.max_turns=5,0,-1",
            "`0` and `-1` make the same decisions in every run",
        ),
    ] {
        let o = loopsim_in(&dir, &["sweep", &s, "--grid", grid, "--seeds", "0..1"]);
        assert_eq!(o.status.code(), Some(2), "{grid}: {}", output_text(&o));
        assert!(stderr(&o).contains(want), "{grid}: {}", stderr(&o));
    }
    // A sweep's summary says how its baseline runs each scenario.
    let o = loopsim_in(
        &dir,
        &[
            "sweep",
            &s,
            "--grid",
            "tool_loop_guardrails.hard_stop_after.idempotent_no_progress=3,4",
            "--seeds",
            "0..1",
            "--out",
            "sw",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let md = std::fs::read_to_string(dir.join("sw/summary.md")).unwrap();
    assert!(
        md.contains(
            "- my-scenario under hermes-main on cli: hard stops are on (hard_stop_enabled is true)"
        ),
        "{md}"
    );
}

#[test]
fn near_miss_sections_and_shadowed_keys_in_a_config_file_are_warnings() {
    let dir = TempDir::new("edge-shadow");
    let s = init(&dir);
    std::fs::write(
        dir.join("typo.yaml"),
        "tool_loop_guardrail:\n  hard_stop_enabled: true\nMY_API_TOKEN: x\n",
    )
    .unwrap();
    let o = loopsim_in(
        &dir,
        &["run", &s, "--config", "typo.yaml", "--out", "r1", "-q"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let e = stderr(&o);
    assert!(e.contains("typo.yaml:1: `tool_loop_guardrail`: not a key Hermes reads (did you mean `tool_loop_guardrails.hard_stop_enabled`?)"), "{e}");
    assert!(
        !e.contains("MY_API_TOKEN"),
        "Hermes passes other top-level keys on: {e}"
    );
    // The scenario sets the nested threshold, which wins over the file's flat one.
    std::fs::write(
        dir.join("flat.yaml"),
        "tool_loop_guardrails:\n  no_progress_block_after: 3\n",
    )
    .unwrap();
    let o = loopsim_in(
        &dir,
        &["run", &s, "--config", "flat.yaml", "--out", "r2", "-q"],
    );
    assert!(
        stderr(&o).contains("flat.yaml:2: `tool_loop_guardrails.no_progress_block_after`: `tool_loop_guardrails.hard_stop_after.idempotent_no_progress` (set in"),
        "{}",
        stderr(&o)
    );
    // A scenario that sets both spellings is refused.
    let text = std::fs::read_to_string(&s).unwrap().replace(
        "hard_stop_enabled = true",
        "hard_stop_enabled = true\nno_progress_block_after = 3",
    );
    std::fs::write(dir.join("both.toml"), text).unwrap();
    let o = loopsim_in(&dir, &["validate", "both.toml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stdout(&o).contains("config.tool_loop_guardrails.no_progress_block_after: `tool_loop_guardrails.hard_stop_after.idempotent_no_progress` is the same setting and wins"), "{}", stdout(&o));
}

#[test]
fn a_what_if_never_replaces_another_and_every_rerun_line_runs_as_printed() {
    let dir = TempDir::new("edge-what-if");
    let sc = root().join("scenarios/read-only-no-progress.toml");
    let sc = sc.to_str().unwrap();
    for seed in ["1", "2"] {
        let o = loopsim_in(
            &dir,
            &[
                "run",
                sc,
                "--seed",
                seed,
                "--out",
                &format!("s{seed}"),
                "-q",
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    }
    let first = loopsim_in(
        &dir,
        &["replay", "s1/trace.jsonl", "--profile", "hermes-main"],
    );
    assert_eq!(first.status.code(), Some(0), "{}", output_text(&first));
    // The same what-if again replaces its own report; another trace's is refused.
    let again = loopsim_in(
        &dir,
        &["replay", "s1/trace.jsonl", "--profile", "hermes-main"],
    );
    assert_eq!(again.status.code(), Some(0));
    let other = loopsim_in(
        &dir,
        &["replay", "s2/trace.jsonl", "--profile", "hermes-main"],
    );
    assert_eq!(other.status.code(), Some(2));
    assert!(stderr(&other).contains("holds the report of another what-if (rerun: loopsim replay s1/trace.jsonl --profile hermes-main)"), "{}", stderr(&other));
    // An empty platform is not a platform.
    let o = loopsim_in(&dir, &["replay", "s1/trace.jsonl", "--platform", ""]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--platform: give a platform name"),
        "{}",
        stderr(&o)
    );
    // Paths with spaces are quoted, so the printed line runs in a shell.
    std::fs::create_dir_all(dir.join("my dir")).unwrap();
    std::fs::write(
        dir.join("my dir/team cfg.yaml"),
        "tool_loop_guardrails:\n  warnings_enabled: true\n",
    )
    .unwrap();
    let o = loopsim_in(
        &dir,
        &["run", sc, "--config", "my dir/team cfg.yaml", "--out", "q"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let rerun = stdout(&o)
        .lines()
        .find_map(|l| l.split_once("rerun: ").map(|(_, r)| r.to_string()))
        .unwrap();
    assert!(rerun.contains("--config 'my dir/team cfg.yaml'"), "{rerun}");
    let sh = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "{} --out q2 -q",
            rerun.replacen("loopsim", env!("CARGO_BIN_EXE_loopsim"), 1)
        ))
        .current_dir(&*dir)
        .output()
        .unwrap();
    assert_eq!(sh.status.code(), Some(0), "{}", output_text(&sh));
    assert_eq!(
        std::fs::read(dir.join("q/trace.jsonl")).unwrap(),
        std::fs::read(dir.join("q2/trace.jsonl")).unwrap()
    );
}

#[test]
fn a_failing_checks_rerun_line_shows_the_failure_and_a_closed_pipe_keeps_the_exit_code() {
    let dir = TempDir::new("edge-rerun");
    let text = std::fs::read_to_string(root().join("scenarios/read-only-no-progress.toml"))
        .unwrap()
        .replace("parent_calls_max = 6", "parent_calls_max = 3");
    assert!(text.contains("parent_calls_max = 3"));
    std::fs::write(dir.join("f.toml"), text).unwrap();
    let o = loopsim_in(&dir, &["check", "f.toml"]);
    assert_eq!(o.status.code(), Some(1));
    let rerun = stdout(&o)
        .lines()
        .filter(|l| l.contains("article-2026-06"))
        .find_map(|l| {
            l.split_once("(rerun: loopsim ")
                .map(|(_, r)| r.trim_end_matches(')').to_string())
        })
        .expect("a failing case under a listed profile");
    let mut args: Vec<&str> = rerun.split(' ').collect();
    args.extend(["--out", "r", "-q"]);
    let o = loopsim_in(&dir, &args);
    assert_eq!(
        o.status.code(),
        Some(1),
        "the rerun line fails as the check did: {}",
        output_text(&o)
    );
    assert!(
        stderr(&o).contains("expectation parent_calls_max failed"),
        "{}",
        stderr(&o)
    );
    // A reader that stops early does not turn that failure into success.
    let mut child = Command::new(env!("CARGO_BIN_EXE_loopsim"))
        .args(["check", "f.toml"])
        .current_dir(&*dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut first = [0u8; 8];
    let _ = out.read(&mut first);
    drop(out);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
}

#[test]
fn validate_refuses_a_trace_whose_scenario_was_edited() {
    let dir = TempDir::new("edge-carried");
    let o = loopsim_in(&dir, &["run", "two-call-cycle", "--out", "r", "-q"]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    // Edit the carried scenario and recompute the end line's hash: only the scenario hash
    // can tell.
    let text = std::fs::read_to_string(dir.join("r/trace.jsonl")).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    lines[0] = lines[0].replacen("A, B, A, B", "A, B, A, C", 1);
    assert_ne!(lines[0], text.lines().next().unwrap(), "the edit applies");
    let above: String = lines[..lines.len() - 1]
        .iter()
        .map(|l| format!("{l}\n"))
        .collect();
    let hash = sha_hex(above.as_bytes());
    let mut end: serde_json::Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    end["hash_above"] = hash.into();
    let edited = format!("{above}{}\n", serde_json::to_string(&end).unwrap());
    std::fs::write(dir.join("e.jsonl"), edited).unwrap();
    for cmd in [&["validate", "e.jsonl"][..], &["replay", "e.jsonl"]] {
        let o = loopsim_in(&dir, cmd);
        assert_eq!(o.status.code(), Some(2), "{cmd:?}");
        assert!(
            output_text(&o).contains(
                "e.jsonl:1: scenario_hash: the scenario it carries is not the one it recorded"
            ),
            "{cmd:?}: {}",
            output_text(&o)
        );
    }
}

fn sha_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn an_interrupted_sweep_leaves_no_temporary_behind() {
    let dir = TempDir::new("edge-signal");
    let mut child = Command::new(env!("CARGO_BIN_EXE_loopsim"))
        .args([
            "sweep",
            "read-only-no-progress",
            "--seeds",
            "0..10000000",
            "--out",
            "ki",
            "-q",
        ])
        .current_dir(&*dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the rows file exists (the sweep is running), then interrupt it.
    for _ in 0..200 {
        let started = std::fs::read_dir(dir.join("ki"))
            .map(|d| d.count() > 0)
            .unwrap_or(false);
        if started {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let left: Vec<String> = std::fs::read_dir(dir.join("ki"))
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn devices_empty_baselines_and_duplicate_comparisons_are_refused() {
    let dir = TempDir::new("edge-devices");
    for (args, want) in [
        (
            vec!["run", "/dev/zero"],
            "/dev/zero: more than 67108864 bytes",
        ),
        (
            vec!["run", "poller-exempt", "--config", "/dev/zero"],
            "/dev/zero: more than 16777216 bytes",
        ),
        (
            vec![
                "run",
                "poller-exempt",
                "--compare-profiles",
                "hermes-main,hermes-main",
            ],
            "hermes-main is listed twice",
        ),
    ] {
        let o = loopsim_in(&dir, &args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", output_text(&o));
        assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
    }
    std::fs::write(
        dir.join("empty.json"),
        r#"{"format":"loopsim-baseline","version":2,"entries":[]}"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("future.json"),
        r#"{"format":"loopsim-baseline","version":99,"entries":[]}"#,
    )
    .unwrap();
    for (file, want) in [
        ("empty.json", "has no runs"),
        ("future.json", "version 99 is not one this loopsim reads"),
    ] {
        let o = loopsim_in(&dir, &["gate", "--baseline", file]);
        assert_eq!(o.status.code(), Some(2), "{file}");
        assert!(stderr(&o).contains(want), "{file}: {}", stderr(&o));
    }
    // A run cut short by its horizon says so.
    let text = std::fs::read_to_string(root().join("scenarios/poller-exempt.toml"))
        .unwrap()
        .replace(
            "latency_s = { lognormal = [6.0, 0.3] }",
            "latency_s = 100000",
        );
    std::fs::write(dir.join("slow.toml"), text).unwrap();
    let o = loopsim_in(&dir, &["run", "slow.toml", "--out", "r"]);
    assert!(
        stdout(&o).contains("the run reached its horizon"),
        "{}",
        output_text(&o)
    );
}

#[test]
fn each_profile_of_a_sweep_gets_its_own_heatmaps_and_a_shard_prints_json() {
    let dir = TempDir::new("edge-profiles");
    let o = loopsim_in(
        &dir,
        &[
            "sweep",
            "read-only-no-progress",
            "healthy-repeated-check",
            "--profiles",
            "hermes-main,hermes-0.19.0",
            "--grid",
            "tool_loop_guardrails.hard_stop_after.idempotent_no_progress=2..=3",
            "--seeds",
            "0..2",
            "--out",
            "sw",
            "-q",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    for p in ["hermes-main", "hermes-0.19.0"] {
        assert!(
            dir.join(format!("sw/heatmap-false-stops-{p}.png")).exists(),
            "{p}"
        );
    }
    let o = loopsim_in(
        &dir,
        &[
            "sweep",
            "read-only-no-progress",
            "--seeds",
            "0..3",
            "--shard",
            "1/2",
            "--out",
            "sh",
            "--format",
            "json",
        ],
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["runs"], 2);
}
