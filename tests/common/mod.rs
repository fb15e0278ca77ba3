//! Helpers shared by the integration tests (each test crate uses some of them).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs the loopsim binary in `dir`. A run that has not ended after 20 minutes (every live
/// run has a wall-clock limit of its own, 600 s by default) is killed and fails the test.
pub fn loopsim_in(dir: &Path, args: &[&str]) -> std::process::Output {
    loopsim_within(dir, args, std::time::Duration::from_secs(1200))
}

/// Runs the loopsim binary in `dir`, killing it by its PID and failing the test if it has not
/// ended within `limit` (a command that should be refused at once must not hang the suite if
/// it starts instead).
pub fn loopsim_within(
    dir: &Path,
    args: &[&str],
    limit: std::time::Duration,
) -> std::process::Output {
    loopsim_with_env(dir, args, &[], limit)
}

/// [`loopsim_within`], with `env` added to the environment loopsim inherits.
pub fn loopsim_with_env(
    dir: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    limit: std::time::Duration,
) -> std::process::Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_loopsim"))
        .args(args)
        .envs(env.iter().copied())
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Both pipes drain while the process runs, so a chatty one cannot block on a full pipe.
    let drain = |r: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut buf);
            }
            buf
        })
    };
    let out = drain(child.stdout.take().map(|r| Box::new(r) as _));
    let err = drain(child.stderr.take().map(|r| Box::new(r) as _));
    // A watchdog ends the process by its PID at the limit: SIGTERM first, so loopsim ends the
    // bridges and servers it started, then SIGKILL if it is still there 10 s later.
    let pid = child.id().to_string();
    let (done, ended) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        let late = ended.recv_timeout(limit).is_err();
        if late {
            let _ = Command::new("kill").args(["-TERM", &pid]).status();
            if ended
                .recv_timeout(std::time::Duration::from_secs(10))
                .is_err()
            {
                let _ = Command::new("kill").args(["-KILL", &pid]).status();
            }
        }
        late
    });
    let status = child.wait().unwrap();
    let _ = done.send(());
    if watchdog.join().unwrap() {
        panic!(
            "loopsim {args:?} did not end within {} s: ended by the test",
            limit.as_secs()
        );
    }
    std::process::Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

/// A command's stdout then stderr, as text.
pub fn output_text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The committed scenario files, sorted.
pub fn scenario_files() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join("scenarios"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    v.sort();
    v
}

/// A Python that imports `imports`: `$env_var` if set, else the venv `target/VENV`, made and
/// filled with `pip install PACKAGES` when it cannot.
fn venv_python(
    env_var: &str,
    venv: &str,
    imports: &str,
    packages: &[&str],
) -> Result<PathBuf, String> {
    venv_python_from(Path::new("python3"), env_var, venv, imports, packages)
}

/// A Python of at least 3.12 to make a venv with: `python3.13` or `python3.12` that runs, else
/// one of pyenv's versions.
fn python_3_12() -> Option<PathBuf> {
    let runs = |py: &Path| {
        Command::new(py)
            .args(["-c", "import sys; assert sys.version_info >= (3, 12)"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    for name in ["python3.13", "python3.12", "python3"] {
        if runs(Path::new(name)) {
            return Some(PathBuf::from(name));
        }
    }
    let versions = PathBuf::from(std::env::var("HOME").ok()?).join(".pyenv/versions");
    let mut found: Vec<PathBuf> = std::fs::read_dir(versions)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin/python3")))
        .filter(|p| runs(p))
        .collect();
    found.sort();
    found.pop()
}

fn venv_python_from(
    base: &Path,
    env_var: &str,
    venv: &str,
    imports: &str,
    packages: &[&str],
) -> Result<PathBuf, String> {
    let can_import = |py: &Path| {
        Command::new(py)
            .args(["-c", &format!("import {imports}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if let Ok(py) = std::env::var(env_var) {
        let py = PathBuf::from(py);
        return if can_import(&py) {
            Ok(py)
        } else {
            Err(format!(
                "{env_var}={} cannot import {imports}",
                py.display()
            ))
        };
    }
    let venv = root().join("target").join(venv);
    let py = venv.join("bin/python");
    if can_import(&py) {
        return Ok(py);
    }
    let made = Command::new(base).args(["-m", "venv"]).arg(&venv).status();
    if !made.is_ok_and(|s| s.success()) {
        return Err("python3 -m venv failed (is Python 3 installed?)".into());
    }
    let pip = Command::new(&py)
        .args(["-m", "pip", "install", "-q"])
        .args(packages)
        .status();
    if !pip.is_ok_and(|s| s.success()) || !can_import(&py) {
        return Err(format!(
            "pip install {} failed (offline?)",
            packages.join(" ")
        ));
    }
    Ok(py)
}

/// The Python with hermes-agent 0.19.0 (its guardrail controller only), installing it into
/// target/hermes-venv when needed.
pub fn hermes_python() -> Result<PathBuf, String> {
    venv_python(
        "LOOPSIM_PYTHON",
        "hermes-venv",
        "agent.tool_guardrails, yaml, hermes_state, hermes_logging",
        &["--no-deps", "hermes-agent==0.19.0", "pyyaml"],
    )
}

/// The Python with Hermes, or `None` after a loud skip message (a failure when
/// `LOOPSIM_REQUIRE_HERMES=1`, as in CI).
pub fn hermes_python_or_skip(what: &str) -> Option<PathBuf> {
    or_skip(what, hermes_python())
}

/// A Python, or `None` after a loud skip message (a panic when `LOOPSIM_REQUIRE_HERMES=1`).
fn or_skip(what: &str, python: Result<PathBuf, String>) -> Option<PathBuf> {
    match python {
        Ok(py) => Some(py),
        Err(why) => {
            if std::env::var("LOOPSIM_REQUIRE_HERMES").is_ok_and(|v| v == "1") {
                panic!("{what} must run here: {why}");
            }
            eprintln!("\n!!!!!!!!\n!!! SKIPPED {what}: {why}\n!!!!!!!!\n");
            None
        }
    }
}

/// A scratch folder under the system's temporary folder, removed when dropped (also when
/// the test fails).
pub struct TempDir(PathBuf);

impl TempDir {
    /// A fresh, empty folder named for the test and this process.
    pub fn new(name: &str) -> TempDir {
        let d = std::env::temp_dir().join(format!("loopsim-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }
}

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The Python with hermes-agent 0.19.0 *and its dependencies* (the whole loop runs live),
/// installing it into target/hermes-live-venv when needed (once per test process).
pub fn hermes_live_python() -> Result<PathBuf, String> {
    static PY: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    PY.get_or_init(|| {
        venv_python(
            "LOOPSIM_LIVE_PYTHON",
            "hermes-live-venv",
            "run_agent, cli, tools.registry",
            &["hermes-agent==0.19.0"],
        )
    })
    .clone()
}

/// The Python with openai-agents 0.24.0 and its dependencies, installing it into
/// target/openai-agents-venv when needed (once per test process).
pub fn openai_agents_python() -> Result<PathBuf, String> {
    static PY: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    PY.get_or_init(|| {
        venv_python(
            "LOOPSIM_OPENAI_AGENTS_PYTHON",
            "openai-agents-venv",
            "agents",
            &["openai-agents==0.24.0"],
        )
    })
    .clone()
}

/// The Python with pydantic-ai-slim[openai] 2.68.0, installing it into target/pydantic-ai-venv
/// when needed (once per test process).
pub fn pydantic_ai_python() -> Result<PathBuf, String> {
    static PY: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    PY.get_or_init(|| {
        venv_python(
            "LOOPSIM_PYDANTIC_AI_PYTHON",
            "pydantic-ai-venv",
            "pydantic_ai.models.openai",
            &["pydantic-ai-slim[openai]==2.68.0"],
        )
    })
    .clone()
}

/// Pydantic AI's Python, or `None` after a loud skip message (a failure when
/// `LOOPSIM_REQUIRE_HERMES=1`, as in CI).
pub fn pydantic_ai_python_or_skip(what: &str) -> Option<PathBuf> {
    or_skip(what, pydantic_ai_python())
}

/// The Python with LangChain 1.5 and LangGraph 1.2.22, installing them into
/// target/langgraph-venv when needed (once per test process).
pub fn langgraph_python() -> Result<PathBuf, String> {
    static PY: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    PY.get_or_init(|| {
        venv_python(
            "LOOPSIM_LANGGRAPH_PYTHON",
            "langgraph-venv",
            "langchain.agents, langchain_openai, langgraph",
            &LANGGRAPH_PACKAGES,
        )
    })
    .clone()
}

/// What the LangGraph venv holds (as .ci/run installs it).
pub const LANGGRAPH_PACKAGES: [&str; 4] = [
    "langchain==1.5.0",
    "langgraph==1.2.22",
    "langgraph-prebuilt==1.1.2",
    "langchain-openai==1.7.4",
];

/// LangGraph's Python, or `None` after a loud skip message (a failure when
/// `LOOPSIM_REQUIRE_HERMES=1`, as in CI).
pub fn langgraph_python_or_skip(what: &str) -> Option<PathBuf> {
    or_skip(what, langgraph_python())
}

/// The Python with smolagents 1.26.0 (and its OpenAI client), installing it into
/// target/smolagents-venv when needed (once per test process).
pub fn smolagents_python() -> Result<PathBuf, String> {
    static PY: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    PY.get_or_init(|| {
        venv_python(
            "LOOPSIM_SMOLAGENTS_PYTHON",
            "smolagents-venv",
            "smolagents, openai",
            &["smolagents[openai]==1.26.0"],
        )
    })
    .clone()
}

/// The Python with openhands-sdk 1.58.2 (which needs Python 3.12 or later), installing it
/// into target/openhands-venv when needed (once per test process).
pub fn openhands_python() -> Result<PathBuf, String> {
    static PY: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    PY.get_or_init(|| {
        let base = python_3_12().ok_or("no Python 3.12 or later for openhands-sdk")?;
        venv_python_from(
            &base,
            "LOOPSIM_OPENHANDS_PYTHON",
            "openhands-venv",
            "openhands.sdk",
            &["openhands-sdk==1.58.2"],
        )
    })
    .clone()
}

/// OpenHands' Python, or `None` after a loud skip message (a failure when
/// `LOOPSIM_REQUIRE_HERMES=1`, as in CI).
pub fn openhands_python_or_skip(what: &str) -> Option<PathBuf> {
    or_skip(what, openhands_python())
}

/// smolagents' Python, or `None` after a loud skip message (a failure when
/// `LOOPSIM_REQUIRE_HERMES=1`, as in CI).
pub fn smolagents_python_or_skip(what: &str) -> Option<PathBuf> {
    or_skip(what, smolagents_python())
}

/// The OpenAI Agents SDK's Python, or `None` after a loud skip message (a failure when
/// `LOOPSIM_REQUIRE_HERMES=1`, as in CI).
pub fn openai_agents_python_or_skip(what: &str) -> Option<PathBuf> {
    or_skip(what, openai_agents_python())
}

/// The live Python, or `None` after a loud skip message (a failure when
/// `LOOPSIM_REQUIRE_HERMES=1`, as in CI).
pub fn hermes_live_python_or_skip(what: &str) -> Option<PathBuf> {
    or_skip(what, hermes_live_python())
}

/// `loopsim diff SCENARIO --live RUNTIME --seed SEED --format json`, which must find the
/// simulation and the real loop identical: its JSON (`compared_events`, ...).
pub fn live_identical(runtime: &str, scenario: &Path, seed: &str) -> serde_json::Value {
    let o = loopsim_in(
        &root(),
        &[
            "diff",
            scenario.to_str().expect("a UTF-8 path"),
            "--live",
            runtime,
            "--seed",
            seed,
            "--format",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v["identical"],
        true,
        "{} seed {seed}: {v}",
        scenario.display()
    );
    v
}

/// Runs a scenario (a path from the repository root) and returns its trace's events. Exit 1
/// is allowed: an expectation of the scenario as written may fail under another seed.
pub fn trace_events(scenario: impl AsRef<Path>, extra: &[&str]) -> Vec<serde_json::Value> {
    // Tests run side by side in one process: each run gets a folder of its own.
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let t = TempDir::new(&format!("trace-events-{n}"));
    let scenario = scenario
        .as_ref()
        .to_str()
        .expect("a UTF-8 path")
        .to_string();
    let mut args = vec!["run", &scenario, "--out", t.to_str().unwrap(), "-q"];
    args.extend_from_slice(extra);
    let o = loopsim_in(&root(), &args);
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{}",
        output_text(&o)
    );
    std::fs::read_to_string(t.join("trace.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The events of one kind.
pub fn of_kind<'a>(evs: &'a [serde_json::Value], kind: &str) -> Vec<&'a serde_json::Value> {
    evs.iter().filter(|e| e["kind"] == kind).collect()
}
