//! Mutation fuzzing of every input path: each committed scenario, a full Hermes config.yaml,
//! traces and guard streams are mutated thousands of times (seeded, so a failure reproduces)
//! and fed to the libraries in-process and to the binary. Every outcome must be a result or
//! an error that names the file; never a panic, an abort or a hang.
//!
//! `LOOPSIM_FUZZ_ROUNDS` scales it (default 1; CI runs 2).

use crate::common;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use common::{loopsim_in, root, scenario_files};
use loopsim_engine::config::EngineConfig;
use loopsim_engine::config::keys::{self, Scope};
use loopsim_engine::guard_protocol::GuardSession;
use loopsim_engine::profile::ProfileName;
use loopsim_world::rng::stream;
use loopsim_world::scenario::Scenario;
use loopsim_world::sim::{RunOptions, run};
use loopsim_world::trace::{self, SharedBuf, TraceWriter};
use loopsim_world::user_config::UserConfig;
use rand::RngExt;
use rand::rngs::ChaCha8Rng;

fn rounds() -> usize {
    std::env::var("LOOPSIM_FUZZ_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
}

/// Values that break parsers and simulators: extremes, wrong types, odd text.
const NASTY: &[&str] = &[
    "0",
    "-1",
    "1e308",
    "-1e308",
    "nan",
    "inf",
    "18446744073709551616",
    "99999999999",
    "1000000000",
    "\"\"",
    "\"x\"",
    "true",
    "[]",
    "{}",
    "[1, 2",
    "{ uniform = [5, 1] }",
    "{ lognormal = [0, 1] }",
    "\"\\u0000\"",
    "'''",
    "\"é\u{2028}\"",
];

/// One random edit of `text`.
fn mutate(rng: &mut ChaCha8Rng, text: &str) -> Vec<u8> {
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let n = lines.len().max(1);
    let pick = |rng: &mut ChaCha8Rng| rng.random_range(0..n);
    match rng.random_range(0..9) {
        // Replace a value.
        0 | 1 => {
            let i = pick(rng);
            if let Some(l) = lines.get_mut(i)
                && let Some((k, _)) = l.split_once('=')
            {
                *l = format!("{k}= {}", NASTY[rng.random_range(0..NASTY.len())]);
            }
        }
        // Misspell a key.
        2 => {
            let i = pick(rng);
            if let Some(l) = lines.get_mut(i)
                && let Some(pos) = l.find(|c: char| c.is_ascii_lowercase())
            {
                l.insert(pos + 1, 'x');
            }
        }
        // Duplicate, delete or swap lines.
        3 => {
            let i = pick(rng);
            if i < lines.len() {
                let l = lines[i].clone();
                lines.insert(i, l);
            }
        }
        4 => {
            let i = pick(rng);
            if i < lines.len() {
                lines.remove(i);
            }
        }
        5 => {
            let (a, b) = (pick(rng), pick(rng));
            if a < lines.len() && b < lines.len() {
                lines.swap(a, b);
            }
        }
        // Change a number inside a line.
        6 => {
            let i = pick(rng);
            if let Some(l) = lines.get_mut(i)
                && let Some(pos) = l.find(|c: char| c.is_ascii_digit())
            {
                l.replace_range(pos..pos + 1, NASTY[rng.random_range(0..7)]);
            }
        }
        // Truncate anywhere.
        7 => {
            let joined = lines.join("\n");
            let cut = rng.random_range(0..joined.len().max(1));
            return joined.as_bytes()[..cut].to_vec();
        }
        // Raw bytes, invalid UTF-8 included.
        _ => {
            let mut bytes = lines.join("\n").into_bytes();
            let at = rng.random_range(0..bytes.len().max(1));
            let junk = [0xff, 0xfe, b'"', b'[', b'{', b'=', b'\n', 0x00];
            bytes.insert(at.min(bytes.len()), junk[rng.random_range(0..junk.len())]);
            return bytes;
        }
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out.into_bytes()
}

/// Runs `f`, turning a panic into a test failure that names the input.
fn no_panic<T>(what: &str, input: &[u8], f: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => v,
        Err(_) => panic!(
            "{what} panicked on this input:\n{}",
            String::from_utf8_lossy(input)
        ),
    }
}

#[test]
fn mutated_scenarios_load_run_or_fail_naming_the_file() {
    let mut loaded = 0;
    let mut refused = 0;
    for path in scenario_files() {
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let mut rng = stream(11, &name);
        for _ in 0..rounds() * 400 {
            let bytes = mutate(&mut rng, &text);
            let Ok(text) = String::from_utf8(bytes.clone()) else {
                continue; // non-UTF-8 files go through the binary below
            };
            let parsed = no_panic("Scenario::parse", &bytes, || {
                Scenario::parse(&text, "fuzz.toml")
            });
            match parsed {
                Err(e) => {
                    refused += 1;
                    assert!(e.to_string().starts_with("fuzz.toml:"), "{e}");
                }
                Ok(sc) => {
                    loaded += 1;
                    // A scenario that loads runs to an end (its horizon and the event cap
                    // bound it), under every profile.
                    for profile in [None, Some(ProfileName::Hermes0_19_0)] {
                        let opts = RunOptions {
                            profile,
                            ..RunOptions::default()
                        };
                        no_panic("run", &bytes, || {
                            let _ = run(&sc, &opts, TraceWriter::off());
                        });
                    }
                }
            }
        }
    }
    assert!(
        loaded > 100 && refused > 100,
        "both paths exercised: {loaded} loaded, {refused} refused"
    );
}

#[test]
fn the_binary_exits_0_1_or_2_and_names_the_file() {
    let dir = std::env::temp_dir().join(format!("loopsim-fuzz-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let files = scenario_files();
    let mut rng = stream(12, "binary");
    for i in 0..rounds() * 80 {
        let path = &files[i % files.len()];
        let text = std::fs::read_to_string(path).unwrap();
        let bytes = mutate(&mut rng, &text);
        let file = dir.join(format!("m{i}.toml"));
        std::fs::write(&file, &bytes).unwrap();
        let f = file.to_str().unwrap();
        for args in [
            vec!["validate", f],
            vec!["run", f, "--out", dir.join("out").to_str().unwrap(), "-q"],
        ] {
            let o = loopsim_in(&dir, &args);
            let code = o.status.code();
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(
                matches!(code, Some(0..=2)),
                "{args:?} exited {code:?} on:\n{}\n{err}",
                String::from_utf8_lossy(&bytes)
            );
            assert!(!err.contains("panicked"), "{args:?}: {err}");
            if code == Some(2) {
                let named = err.contains(f) || String::from_utf8_lossy(&o.stdout).contains(f);
                assert!(named, "{args:?}: the error names the file: {err}");
            }
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// A config.yaml as Hermes writes it, every section loopsim reads filled in.
const CONFIG: &str = "model:\n  default: anthropic/claude-sonnet-4\n  provider: openrouter\nagent:\n  max_turns: 90\n  stall_guards: true\n  api_max_retries: 3\ntool_loop_guardrails:\n  warnings_enabled: true\n  hard_stop_enabled: false\n  non_interactive_hard_stop_enabled: true\n  warn_after:\n    exact_failure: 2\n    same_tool_failure: 3\n    idempotent_no_progress: 2\n  hard_stop_after:\n    exact_failure: 5\n    same_tool_failure: 8\n    idempotent_no_progress: 5\n  loop_caps:\n    max_web_searches: 50\n    max_subagents: 50\ndelegation:\n  max_iterations: 50\n  max_concurrent_children: 3\n  max_spawn_depth: 1\n  child_timeout_seconds: 0\nbase: &b\n  x: [1, 2, 3]\nother:\n  <<: *b\n";

#[test]
fn mutated_config_files_read_as_hermes_would_or_fail_naming_the_file() {
    let mut rng = stream(13, "config");
    let sc = Scenario::load(&root().join("scenarios/read-only-no-progress.toml")).unwrap();
    for _ in 0..rounds() * 4000 {
        // YAML's own syntax: colons, dashes, anchors.
        let text = String::from_utf8_lossy(&mutate(&mut rng, CONFIG))
            .replace(" = ", ": ")
            .to_string();
        let bytes = text.as_bytes().to_vec();
        match no_panic("UserConfig::parse", &bytes, || {
            UserConfig::parse(&text, "cfg.yaml")
        }) {
            Err(e) => assert!(e.to_string().starts_with("cfg.yaml:"), "{e}"),
            Ok(user) => {
                for p in ProfileName::ALL {
                    no_panic("config", &bytes, || {
                        let _ = keys::check(&user.root, p, Scope::UserFile);
                        let _ = user.key_warnings(p);
                        match EngineConfig::from_node(p, Some("telegram"), &user.root, "cfg.yaml") {
                            Ok(c) => {
                                for n in &c.notes {
                                    let _ = user.note_warning(n, "s.toml");
                                }
                            }
                            Err(e) => assert!(e.to_string().starts_with("cfg.yaml:"), "{e}"),
                        }
                        let _ = sc.engine_config_over(p, None, Some(&user));
                    });
                }
            }
        }
    }
}

#[test]
fn mutated_traces_are_verified_or_refused_naming_the_file() {
    let sc = Scenario::load(&root().join("scenarios/two-call-cycle.toml")).unwrap();
    let buf = SharedBuf::default();
    run(
        &sc,
        &RunOptions::default(),
        TraceWriter::to_writer(Box::new(buf.clone())),
    )
    .unwrap();
    let good = buf.bytes();
    assert!(trace::verify(&good, "t.jsonl").is_ok());
    let text = String::from_utf8(good.clone()).unwrap();
    let mut rng = stream(14, "trace");
    let mut caught = 0;
    for _ in 0..rounds() * 4000 {
        let bytes = mutate(&mut rng, &text);
        match no_panic("trace::verify", &bytes, || trace::verify(&bytes, "t.jsonl")) {
            Ok(_) => assert_eq!(bytes, good, "only the unedited trace verifies"),
            Err(e) => {
                caught += 1;
                assert!(e.to_string().starts_with("t.jsonl:"), "{e}");
            }
        }
    }
    assert!(caught > 2000, "{caught}");
}

#[test]
fn mutated_guard_streams_are_answered_or_stopped_at_their_line() {
    let stream_text =
        std::fs::read_to_string(root().join("traces/examples/spin-wait-guard.jsonl")).unwrap();
    let mut rng = stream(15, "guard");
    for _ in 0..rounds() * 1500 {
        let bytes = mutate(&mut rng, &stream_text);
        for profile in [ProfileName::Hermes0_19_0, ProfileName::HermesMain] {
            no_panic("guard", &bytes, || {
                let cfg = EngineConfig::new(profile, Some("telegram"));
                let mut session = GuardSession::new(&cfg);
                let mut out = Vec::new();
                for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
                    if let Err(e) = session.handle_line(line, &mut out) {
                        assert_eq!(e.line, i + 1, "{e}");
                        break;
                    }
                }
            });
        }
    }
}

#[test]
fn non_utf8_files_are_refused_naming_the_byte() {
    let dir = std::env::temp_dir().join(format!("loopsim-fuzz-bytes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("latin1.toml");
    std::fs::write(&bad, b"name = \"caf\xe9\"\n").unwrap();
    let o = loopsim_in(Path::new(&dir), &["validate", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stdout).contains("latin1.toml: not UTF-8 text (byte 11)"));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn random_command_lines_exit_0_1_or_2_and_never_panic() {
    let dir = std::env::temp_dir().join(format!("loopsim-fuzz-flags-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let commands = [
        "run", "replay", "sweep", "check", "gate", "diff", "list", "codes", "validate", "merge",
        "init", "guard", "explore",
    ];
    let flags = [
        "--profile",
        "--platform",
        "--config",
        "--seed",
        "--seeds",
        "--grid",
        "--profiles",
        "--shard",
        "--format",
        "--schedule",
        "--max-increase",
        "--compare-profiles",
        "--compare-configs",
        "--suite",
        "--baseline",
        "--out",
        "--expectations",
        "-q",
    ];
    let values = [
        "",
        "-1",
        "0",
        "18446744073709551616",
        "hermes-main",
        "hermes-0.19.0",
        "telgram",
        "cli",
        "0..2",
        "5..1",
        "0..=1",
        "a..b",
        "x=1",
        "1/0",
        "2/1",
        "nope.yaml",
        "/dev/null",
        "poller-exempt",
        "\u{221e}",
        "json",
        "text",
        "5%",
        "-5%",
        "tool_loop_guardrails.hard_stop_after.exact_failure=2..=3",
        "tool_loop_guardrails.hard_stop_afterr.exact_failure=2",
        "agent.max_turns=0,-1",
        "tool_loop_guardrails.warn_after.exact_failure=0",
    ];
    let mut rng = stream(16, "flags");
    for _ in 0..rounds() * 60 {
        let mut args: Vec<String> = vec![commands[rng.random_range(0..commands.len())].into()];
        if rng.random_range(0..3) > 0 {
            args.push(values[rng.random_range(0..values.len())].into());
        }
        for _ in 0..rng.random_range(0..4) {
            let flag = flags[rng.random_range(0..flags.len())];
            args.push(flag.into());
            if !["-q", "--expectations"].contains(&flag) {
                args.push(values[rng.random_range(0..values.len())].into());
            }
        }
        // Default outputs go below the scratch folder, the working folder.
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = loopsim_in(&dir, &a);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            matches!(o.status.code(), Some(0..=2)),
            "{a:?} exited {:?}: {err}",
            o.status.code()
        );
        assert!(!err.contains("panicked"), "{a:?}: {err}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}
