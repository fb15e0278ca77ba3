//! `loopsim explore`: a deliberately broken invariant is found within a bounded number of
//! seeds, reported with its seed, event and a rerun line that reproduces it, and shrunk to a
//! scenario of a few steps; the committed suite breaks none; the findings do not depend on
//! the thread count.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::root;
use loopsim_world::scenario::Scenario;

const WRONG_PORT: (&str, &str) = ("LOOPSIM_TEST_WRONG_PORT", "uncharged-slow-call");

fn loopsim(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_loopsim"));
    c.args(args).current_dir(dir).env_remove(WRONG_PORT.0);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A scratch folder holding a copy of a committed scenario.
fn scratch(name: &str, scenario: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("loopsim-explore-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(root().join("scenarios").join(scenario), dir.join(scenario)).unwrap();
    dir
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", String::from_utf8_lossy(&o.stdout), stderr(o)))
}

/// Runs a rerun line (`VAR=value loopsim run ...`) in `dir`.
fn rerun(dir: &Path, line: &str, extra: &[&str]) -> Output {
    let mut words: Vec<&str> = line.split(' ').collect();
    let mut env = Vec::new();
    while let Some((k, v)) = words[0].split_once('=') {
        env.push((k, v));
        words.remove(0);
    }
    assert_eq!(words[0], "loopsim", "{line}");
    let mut args: Vec<&str> = words[1..].to_vec();
    args.extend_from_slice(extra);
    loopsim(dir, &args, &env)
}

#[test]
fn a_broken_invariant_is_found_reported_with_its_event_reproduced_and_shrunk() {
    let dir = scratch("found", "two-call-cycle.toml");
    let o = loopsim(
        &dir,
        &[
            "explore",
            "two-call-cycle.toml",
            "--seeds",
            "0..200",
            "--shrink",
            "--format",
            "json",
        ],
        &[WRONG_PORT],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let r = json(&o);
    assert_eq!(r["runs"], 200);
    let findings = r["findings"].as_array().unwrap();
    // Only slow calls break it: some seeds, not all.
    assert!(
        !findings.is_empty() && findings.len() < 100,
        "{}",
        findings.len()
    );
    let f = &findings[0];
    let p = &f["problem"];
    assert_eq!(p["kind"], "invariant");
    assert_eq!(p["invariant"], "untraced-cost");
    assert_eq!(p["agent"], "parent");
    assert_eq!(p["seed"], f["seed"]);
    let event = p["event"].as_u64().unwrap();
    assert!(event > 0);
    let seed = f["seed"].as_u64().unwrap();
    let line = f["rerun"].as_str().unwrap();
    assert_eq!(
        line,
        format!(
            "LOOPSIM_TEST_WRONG_PORT=uncharged-slow-call loopsim run two-call-cycle.toml --seed {seed} --check-invariants"
        )
    );

    // The rerun line fails the same way, at the same event; without the switch it passes.
    let again = rerun(&dir, line, &["--out", "r1"]);
    assert_eq!(again.status.code(), Some(1), "{}", stderr(&again));
    let err = stderr(&again);
    assert!(
        err.contains("invariant untraced-cost broken at event"),
        "{err}"
    );
    assert!(err.contains(&format!("at event {event} ")), "{err}");
    assert!(!dir.join("r1").exists(), "a failed run writes no report");
    let clean = rerun(
        &dir,
        line.trim_start_matches("LOOPSIM_TEST_WRONG_PORT=uncharged-slow-call "),
        &["--out", "r2"],
    );
    assert_eq!(clean.status.code(), Some(0), "{}", stderr(&clean));

    // Shrunk to a scenario of a few steps that still breaks it.
    let shrunk = &r["shrunk"][0];
    let path = dir.join(shrunk["path"].as_str().unwrap());
    let small = Scenario::load(&path).unwrap();
    let steps: usize = small.file.agents.values().map(|a| a.script.len()).sum();
    assert!(steps <= 3, "{steps} steps left");
    assert!(small.file.agents.len() == 1);
    assert!(shrunk["size_after"].as_u64() < shrunk["size_before"].as_u64());
    assert_eq!(shrunk["problem"]["invariant"], "untraced-cost");
    let s = rerun(&dir, shrunk["rerun"].as_str().unwrap(), &["--out", "r3"]);
    assert_eq!(s.status.code(), Some(1), "{}", stderr(&s));
    assert!(stderr(&s).contains("invariant untraced-cost"));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn the_suite_breaks_no_invariant() {
    let o = loopsim(&root(), &["explore", "scenarios", "--seeds", "0..20"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let runs = 20 * common::scenario_files().len();
    assert!(
        out.contains(&format!(
            "{runs} runs: 0 broke an invariant, 0 failed expectations"
        )),
        "{out}"
    );
}

#[test]
fn findings_are_the_same_on_one_thread_and_on_two() {
    let dir = scratch("threads", "execute-code-spin-wait.toml");
    let run = |threads: &str| {
        let o = loopsim(
            &dir,
            &[
                "explore",
                "execute-code-spin-wait.toml",
                "--seeds",
                "0..16",
                "--format",
                "json",
            ],
            &[WRONG_PORT, ("RAYON_NUM_THREADS", threads)],
        );
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        o.stdout
    };
    let one = run("1");
    assert_eq!(one, run("2"));
    let r: serde_json::Value = serde_json::from_slice(&one).unwrap();
    assert!(r["findings"].as_array().unwrap().len() >= 2);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn expectations_are_opt_in_and_bad_seed_ranges_are_refused() {
    let dir = scratch("expect", "live-empty-exhausted.toml");
    let plain = loopsim(
        &dir,
        &["explore", "live-empty-exhausted.toml", "--seeds", "0..10"],
        &[],
    );
    assert_eq!(plain.status.code(), Some(0), "{}", stderr(&plain));
    // Its expectations hold for the seeds it lists, not for every seed.
    let o = loopsim(
        &dir,
        &[
            "explore",
            "live-empty-exhausted.toml",
            "--seeds",
            "0..10",
            "--expectations",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("expectations failed: "), "{out}");
    assert!(out.contains("0 broke an invariant"), "{out}");
    let bad = loopsim(&dir, &["explore", "--seeds", "5..1"], &[]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("--seeds"), "{}", stderr(&bad));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn explore_runs_the_suite_under_another_runtimes_profile_and_its_reruns_name_it() {
    // The suite under OpenHands' governance: what it cannot express is left out, each with
    // its reason; the rest breaks no invariant.
    let o = loopsim(
        &root(),
        &[
            "explore",
            "scenarios",
            "--seeds",
            "0..10",
            "--profile",
            "openhands-sdk-1.58",
            "--format",
            "json",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json(&o);
    let left: Vec<&serde_json::Value> = v["left_out"].as_array().unwrap().iter().collect();
    let files = std::fs::read_dir(root().join("scenarios"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "toml")
        })
        .count() as u64;
    assert!(!left.is_empty());
    assert_eq!(
        v["runs"].as_u64().unwrap(),
        10 * (files - left.len() as u64)
    );
    assert!(
        left.iter()
            .any(|l| l["path"] == "scenarios/live-delegation.toml"
                && l["reason"]
                    .as_str()
                    .unwrap()
                    .contains("delegates to child agents")),
        "{left:?}"
    );
    // A broken invariant under the article's loop: the rerun line runs that profile.
    let dir = scratch("profile", "two-call-cycle.toml");
    let o = loopsim(
        &dir,
        &[
            "explore",
            "two-call-cycle.toml",
            "--seeds",
            "0..300",
            "--profile",
            "react-loop-article",
            "--format",
            "json",
        ],
        &[WRONG_PORT],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v = json(&o);
    let f = &v["findings"][0];
    assert_eq!(f["profile"], "react-loop-article");
    let line = f["rerun"].as_str().unwrap();
    assert!(line.contains("--profile react-loop-article"), "{line}");
    let again = rerun(&dir, line, &["--out", dir.join("r").to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(1), "{}", stderr(&again));
    assert!(
        stderr(&again).contains("untraced-cost"),
        "{}",
        stderr(&again)
    );
    std::fs::remove_dir_all(dir).unwrap();
}
