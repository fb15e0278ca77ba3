//! The engine bridge: every scenario runs identically under loopsim's engine and the real
//! Python Hermes package (profile hermes-0.19.0), divergences are reported at their line, and
//! a broken engine gives a clear error instead of a hang.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{Venv, python_or_skip, root, scenario_files};

fn loopsim(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_loopsim"));
    c.args(args).current_dir(root());
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn every_scenario_is_identical_under_the_real_hermes_0_19_0() {
    let Some(py) = python_or_skip(Venv::Hermes, "the engine-bridge diff") else {
        return;
    };
    let engine = format!("hermes-python={}", py.display());
    for sc in scenario_files() {
        let o = loopsim(
            &[
                "diff",
                sc.to_str().unwrap(),
                "--profile",
                "hermes-0.19.0",
                "--engine",
                "builtin",
                "--engine",
                &engine,
            ],
            &[],
        );
        assert_eq!(o.status.code(), Some(0), "{}: {}", sc.display(), text(&o));
        assert!(
            text(&o).starts_with("identical: builtin and "),
            "{}",
            text(&o)
        );
    }
}

/// A stand-in engine written for the test: `body` runs after the real adapter's setup.
fn fake_adapter(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(format!("{name}.py"));
    std::fs::write(&path, body).unwrap();
    path
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("loopsim-bridge-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn a_divergence_is_reported_at_its_trace_line() {
    let Some(py) = python_or_skip(Venv::Hermes, "the divergence test") else {
        return;
    };
    let dir = tmp("diverge");
    // The real adapter, except that the 7th `after` answer is turned into a warning.
    let adapter = fake_adapter(
        &dir,
        "flip",
        &format!(
            r#"import sys
sys.path.insert(0, {bridge:?})
import hermes_guard, adapter
real = hermes_guard.answer
n = [0]
def flipped(tg, ctrl, req):
    out = real(tg, ctrl, req)
    if req.get("op") == "after":
        n[0] += 1
        if n[0] == 7:
            out["action"], out["code"] = "warn", "repeated_exact_failure_warning"
    return out
adapter.answer = flipped
sys.exit(adapter.main())
"#,
            bridge = root().join("bridges/hermes").display().to_string()
        ),
    );
    let engine = format!("hermes-python={}", py.display());
    let o = loopsim(
        &[
            "diff",
            "scenarios/web-search-flood.toml",
            "--profile",
            "hermes-0.19.0",
            "--engine",
            "builtin",
            "--engine",
            &engine,
        ],
        &[("LOOPSIM_HERMES_ADAPTER", adapter.to_str().unwrap())],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("engines diverge at trace line"), "{t}");
    assert!(
        t.contains("\"kind\":\"decision\"") && t.contains("repeated_exact_failure_warning"),
        "{t}"
    );
}

#[test]
fn a_broken_engine_is_a_clear_error_not_a_hang() {
    let Some(py) = ["python3", "python"].into_iter().find(|p| {
        Command::new(p)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    }) else {
        eprintln!("\n!!! SKIPPED the broken-engine tests: no python3 on this machine\n");
        return;
    };
    let dir = tmp("broken");
    let hello = r#"import sys, json
first = sys.stdin.readline()
"#;
    let cases = [
        (
            "crash",
            format!(
                "{hello}print(json.dumps({{'op': 'hello', 'protocol': 1, 'engine': 'x', 'hermes': 'x'}}), flush=True)\nsys.stdin.readline()\nsys.stderr.write('boom: adapter failed\\n')\nsys.exit(3)\n"
            ),
            "the engine exited after the request",
        ),
        (
            "version",
            format!("{hello}print(json.dumps({{'op': 'hello', 'protocol': 9}}), flush=True)\n"),
            "the engine speaks protocol 9, loopsim speaks 1",
        ),
        (
            "timeout",
            format!(
                "{hello}print(json.dumps({{'op': 'hello', 'protocol': 1}}), flush=True)\nimport time\ntime.sleep(30)\n"
            ),
            "did not answer within 1 s",
        ),
        (
            "garbage",
            format!("{hello}print('not json', flush=True)\n"),
            "is not understood",
        ),
    ];
    for (name, body, want) in cases {
        let adapter = fake_adapter(&dir, name, &body);
        let o = loopsim(
            &[
                "run",
                "scenarios/two-call-cycle.toml",
                "--profile",
                "hermes-0.19.0",
                "--engine",
                &format!("hermes-python={py}"),
                "--out",
                dir.join("out").to_str().unwrap(),
            ],
            &[
                ("LOOPSIM_HERMES_ADAPTER", adapter.to_str().unwrap()),
                ("LOOPSIM_ENGINE_TIMEOUT_SECS", "1"),
            ],
        );
        assert_eq!(o.status.code(), Some(2), "{name}: {}", text(&o));
        assert!(
            text(&o).contains(want),
            "{name}: expected `{want}` in {}",
            text(&o)
        );
        if name == "crash" {
            assert!(
                text(&o).contains("boom: adapter failed"),
                "the engine's last words are shown: {}",
                text(&o)
            );
        }
        assert!(
            !dir.join("out/summary.json").exists(),
            "{name}: no report from a failed engine"
        );
    }
    // The real adapter without the package: it says how to install it.
    let o = loopsim(
        &[
            "run",
            "scenarios/two-call-cycle.toml",
            "--profile",
            "hermes-0.19.0",
            "--engine",
            &format!("hermes-python={py}"),
            "--out",
            dir.join("out").to_str().unwrap(),
        ],
        &[],
    );
    if !text(&o).contains("identical") && o.status.code() == Some(2) {
        assert!(
            text(&o).contains("pip install --no-deps hermes-agent==0.19.0"),
            "{}",
            text(&o)
        );
    }
    // Not Python at all.
    let o = loopsim(
        &[
            "run",
            "scenarios/two-call-cycle.toml",
            "--profile",
            "hermes-0.19.0",
            "--engine",
            "hermes-python=/nonexistent/python",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).contains("cannot start `/nonexistent/python`"),
        "{}",
        text(&o)
    );
    // The wrong profile for the installed package.
    let o = loopsim(
        &[
            "run",
            "scenarios/two-call-cycle.toml",
            "--engine",
            "hermes-python",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).contains("use --profile hermes-0.19.0"),
        "{}",
        text(&o)
    );
}
