//! Inputs, outputs and files: traces replay anywhere, the binary works outside the repository,
//! outputs are all or nothing, a closed pipe ends quietly, hostile input is bounded, and the
//! commands that start a project (init, validate, completions, man) work.

use crate::common;

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};

use common::{TempDir, loopsim_in, output_text, root};

fn tmp(name: &str) -> TempDir {
    TempDir::new(&format!("inputs-{name}"))
}

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Every file below `dir` with its bytes, sorted.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                out.push((p.display().to_string(), b"<dir>".to_vec()));
                stack.push(p);
            } else {
                out.push((p.display().to_string(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_trace_replays_from_any_folder_and_a_what_if_does_not_replace_another() {
    let dir = tmp("anywhere");
    let o = loopsim_in(
        &root(),
        &[
            "run",
            "scenarios/two-call-cycle.toml",
            "--out",
            dir.join("run").to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    // Carried to a folder with no scenarios (a CI artefact on another machine).
    let away = dir.join("away");
    std::fs::create_dir_all(&away).unwrap();
    std::fs::copy(dir.join("run/trace.jsonl"), away.join("t.jsonl")).unwrap();
    let o = loopsim_in(&away, &["replay", "t.jsonl"]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    assert!(stdout(&o).starts_with("identical:"), "{}", stdout(&o));
    // Two what-ifs go to two folders, each named by what it changes.
    for args in [
        &["replay", "t.jsonl", "--profile", "hermes-0.19.0"][..],
        &["replay", "t.jsonl", "--platform", "telegram"],
    ] {
        let o = loopsim_in(&away, args);
        assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    }
    for d in [
        "two-call-cycle-what-if-hermes-0.19.0",
        "two-call-cycle-what-if-telegram",
    ] {
        assert!(
            away.join("reports").join(d).join("summary.md").exists(),
            "{d}"
        );
    }
    // A what-if's own trace replays as that what-if.
    let o = loopsim_in(
        &away,
        &[
            "replay",
            "reports/two-call-cycle-what-if-telegram/trace.jsonl",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    // A header that names an unknown profile is bad input naming the trace and line 1.
    let text = std::fs::read_to_string(away.join("t.jsonl")).unwrap();
    std::fs::write(
        away.join("bad.jsonl"),
        text.replacen("\"profile\":\"hermes-main\"", "\"profile\":\"hermes-9\"", 1),
    )
    .unwrap();
    let o = loopsim_in(&away, &["replay", "bad.jsonl"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("bad.jsonl:1: profile: unknown profile `hermes-9`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn the_installed_binary_works_outside_the_repository() {
    let dir = tmp("outside");
    let o = loopsim_in(&dir, &["list", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let list: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        list.as_array().unwrap().len(),
        common::scenario_files().len()
    );
    let o = loopsim_in(&dir, &["check"]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    // The built-in suite's runs are the scenarios folder's, every one passing.
    let here = loopsim_in(&root(), &["check"]);
    let total = |o: &std::process::Output| {
        stdout(o)
            .lines()
            .find(|l| l.ends_with(" passed, 0 failed"))
            .map(str::to_string)
    };
    assert!(total(&o).is_some(), "{}", stdout(&o));
    assert_eq!(total(&o), total(&here));
    // The committed baseline names scenarios by name and hash: it gates from here too.
    std::fs::copy(root().join("reports/baseline.json"), dir.join("b.json")).unwrap();
    let o = loopsim_in(&dir, &["gate", "--baseline", "b.json"]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    assert!(stdout(&o).contains("every metric equal"), "{}", stdout(&o));
    // A built-in scenario runs by name, and its rerun line works here.
    let o = loopsim_in(&dir, &["run", "poller-exempt", "--out", "r"]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let o = loopsim_in(
        &dir,
        &[
            "run",
            "scenarios/poller-exempt.toml",
            "--seed",
            "10",
            "--out",
            "r2",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    assert_eq!(
        std::fs::read(dir.join("r/trace.jsonl")).unwrap(),
        std::fs::read(dir.join("r2/trace.jsonl")).unwrap()
    );
    // --suite points at another folder.
    let suite = dir.join("mine");
    std::fs::create_dir_all(&suite).unwrap();
    std::fs::copy(
        root().join("scenarios/poller-exempt.toml"),
        suite.join("p.toml"),
    )
    .unwrap();
    let o = loopsim_in(&dir, &["check", "--suite", "mine"]);
    assert!(
        stdout(&o).contains("3 passed, 0 failed"),
        "{}",
        output_text(&o)
    );
}

#[test]
fn outputs_are_all_or_nothing() {
    let dir = tmp("atomic");
    let out = dir.join("r");
    let run = |out: &Path| {
        loopsim_in(
            &root(),
            &[
                "run",
                "scenarios/two-call-cycle.toml",
                "--out",
                out.to_str().unwrap(),
            ],
        )
    };
    assert_eq!(run(&out).status.code(), Some(0));
    // A folder where the last file (summary.md) goes: nothing may be replaced.
    std::fs::remove_file(out.join("summary.md")).unwrap();
    std::fs::create_dir(out.join("summary.md")).unwrap();
    std::fs::write(out.join("summary.md/keep"), b"x").unwrap();
    // Make the old files distinguishable from what a new run would write.
    std::fs::write(out.join("runs.csv"), b"old").unwrap();
    let before = snapshot(&out);
    let o = run(&out);
    assert_eq!(o.status.code(), Some(2), "{}", output_text(&o));
    assert!(stderr(&o).contains("summary.md"), "{}", stderr(&o));
    assert_eq!(
        snapshot(&out),
        before,
        "old files intact, no temporaries left"
    );
    // An output folder that cannot be made: a clear error, nothing left behind.
    std::fs::write(dir.join("file"), b"x").unwrap();
    let o = run(&dir.join("file/sub"));
    assert_eq!(o.status.code(), Some(2));
    // And a sweep whose last output fails leaves no sweep.csv.
    let sweep = dir.join("sweep");
    std::fs::create_dir_all(sweep.join("summary.md")).unwrap();
    let o = loopsim_in(
        &root(),
        &[
            "sweep",
            "scenarios/two-call-cycle.toml",
            "--grid",
            "tool_loop_guardrails.hard_stop_after.idempotent_no_progress=3,4",
            "--seeds",
            "0..2",
            "--out",
            sweep.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", output_text(&o));
    let names: Vec<String> = std::fs::read_dir(&sweep)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["summary.md"], "nothing else written or left behind");
}

#[test]
fn a_closed_pipe_ends_quietly() {
    for args in [
        &["list"][..],
        &["codes"],
        &["check", "scenarios/poller-exempt.toml"],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_loopsim"))
            .args(args)
            .current_dir(root())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Read one line (as `head -1` does), then close the pipe.
        let mut out = child.stdout.take().unwrap();
        let mut first = [0u8; 16];
        let _ = out.read(&mut first);
        drop(out);
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn hostile_config_files_are_bounded() {
    let dir = tmp("hostile");
    // Nine levels of nine aliases: PyYAML shares them, loopsim refuses past its limit.
    let mut bomb = String::from(
        "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    let names = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"];
    for w in names.windows(2) {
        let refs = vec![format!("*{}", w[0]); 9].join(",");
        bomb += &format!("{}: &{} [{refs}]\n", w[1], w[1]);
    }
    std::fs::write(dir.join("bomb.yaml"), bomb).unwrap();
    std::fs::write(
        dir.join("two.yaml"),
        "agent:\n  max_turns: 5\n---\nagent:\n  max_turns: 6\n",
    )
    .unwrap();
    for (file, want) in [
        ("bomb.yaml", "expands past loopsim's limit"),
        ("two.yaml", ":3: invalid YAML"),
    ] {
        let path = dir.join(file);
        let o = loopsim_in(
            &root(),
            &[
                "run",
                "scenarios/poller-exempt.toml",
                "--config",
                path.to_str().unwrap(),
                "--out",
                dir.join("r").to_str().unwrap(),
            ],
        );
        assert_eq!(o.status.code(), Some(2), "{file}: {}", output_text(&o));
        assert!(
            stderr(&o).contains(&format!("{}", path.display())) && stderr(&o).contains(want),
            "{file}: {}",
            stderr(&o)
        );
    }
}

#[test]
fn init_writes_a_scenario_that_validates_and_runs() {
    let dir = tmp("init");
    let o = loopsim_in(&dir, &["init"]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let again = loopsim_in(&dir, &["init"]);
    assert_eq!(again.status.code(), Some(2), "no silent overwrite");
    assert!(stderr(&again).contains("already exists (give --force"));
    let o = loopsim_in(&dir, &["validate", "scenario.toml"]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    assert!(stdout(&o).contains("ok scenario.toml: scenario `my-scenario` (loop, hermes-main)"));
    let o = loopsim_in(&dir, &["check", "scenario.toml"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "its expectations hold: {}",
        output_text(&o)
    );
    // validate takes traces and configs too, and reports each file.
    let o = loopsim_in(&dir, &["run", "scenario.toml", "--out", "r", "-q"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(o.stdout.is_empty(), "--quiet prints no report");
    std::fs::write(
        dir.join("c.yaml"),
        "tool_loop_guardrails:\n  warnings_enabled: true\n",
    )
    .unwrap();
    let o = loopsim_in(
        &dir,
        &["validate", "r/trace.jsonl", "c.yaml", "--format", "json"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[0]["kind"], "trace");
    assert_eq!(v[1]["kind"], "config");
    let text = std::fs::read_to_string(dir.join("r/trace.jsonl")).unwrap();
    std::fs::write(dir.join("cut.jsonl"), &text[..text.len() / 2]).unwrap();
    let o = loopsim_in(&dir, &["validate", "cut.jsonl", "scenario.toml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stdout(&o).contains("cut.jsonl:") && stdout(&o).contains("truncated at line"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn completions_and_manual_pages_come_from_the_command_line_definitions() {
    let dir = tmp("man");
    for shell in ["bash", "zsh", "fish"] {
        let o = loopsim_in(&dir, &["completions", shell]);
        assert_eq!(o.status.code(), Some(0));
        let s = stdout(&o);
        assert!(
            s.contains("compare-configs") && s.contains("sweep"),
            "{shell}"
        );
    }
    let o = loopsim_in(&dir, &["man", "--out", "pages"]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let page = std::fs::read_to_string(dir.join("pages/loopsim-sweep.1")).unwrap();
    assert!(page.contains(".TH") && page.contains("grid"), "{page}");
    assert!(dir.join("pages/loopsim.1").exists());
}

#[test]
fn every_command_that_prints_a_result_prints_json_when_asked() {
    let dir = tmp("json");
    let out = |n: &str| dir.join(n).to_str().unwrap().to_string();
    let cases: Vec<Vec<String>> = vec![
        vec!["list".into()],
        vec!["codes".into()],
        vec!["check".into(), "scenarios/poller-exempt.toml".into()],
        vec![
            "diff".into(),
            "scenarios/poller-exempt.toml".into(),
            "--engine".into(),
            "builtin".into(),
            "--engine".into(),
            "builtin".into(),
        ],
        vec![
            "run".into(),
            "scenarios/poller-exempt.toml".into(),
            "--out".into(),
            out("run"),
        ],
        vec![
            "sweep".into(),
            "scenarios/poller-exempt.toml".into(),
            "--grid".into(),
            "tool_loop_guardrails.hard_stop_after.idempotent_no_progress=3,5".into(),
            "--seeds".into(),
            "0..2".into(),
            "--out".into(),
            out("sweep"),
        ],
        vec![
            "gate".into(),
            "--baseline".into(),
            root().join("reports/baseline.json").display().to_string(),
        ],
        vec!["validate".into(), "scenarios/poller-exempt.toml".into()],
    ];
    for mut args in cases {
        args.extend(["--format".into(), "json".into()]);
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = loopsim_in(&root(), &a);
        assert_eq!(o.status.code(), Some(0), "{a:?}: {}", output_text(&o));
        let v: Result<serde_json::Value, _> = serde_json::from_slice(&o.stdout);
        assert!(v.is_ok(), "{a:?} prints JSON: {}", stdout(&o));
    }
}
