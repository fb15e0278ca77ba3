//! The Python venvs the tests run against, from one table (`tests/python-venvs.tsv`, which
//! `.ci/run` installs from too): find or make a venv, or skip loudly, or (in CI) fail.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use super::root;

/// A venv of the table, by what it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Venv {
    /// hermes-agent 0.19.0 without its dependencies: the guardrail controller, the session
    /// store and the compressor, imported by the drivers.
    Hermes,
    /// hermes-agent 0.19.0 with its dependencies: the whole loop, live.
    HermesLive,
    OpenAiAgents,
    PydanticAi,
    LangGraph,
    Smolagents,
    /// openhands-sdk, which needs Python 3.12 or later.
    OpenHands,
}

impl Venv {
    /// Its folder under `target/`, the first column of the table.
    fn folder(self) -> &'static str {
        match self {
            Venv::Hermes => "hermes-venv",
            Venv::HermesLive => "hermes-live-venv",
            Venv::OpenAiAgents => "openai-agents-venv",
            Venv::PydanticAi => "pydantic-ai-venv",
            Venv::LangGraph => "langgraph-venv",
            Venv::Smolagents => "smolagents-venv",
            Venv::OpenHands => "openhands-venv",
        }
    }
}

/// One row of `tests/python-venvs.tsv`.
#[derive(Clone, Debug)]
pub struct VenvSpec {
    pub folder: String,
    pub env_var: String,
    /// The least Python version, as (3, minor).
    pub min_minor: u32,
    pub imports: String,
    pub pip_args: Vec<String>,
}

/// Every row of the table, in its order.
pub fn venv_table() -> Vec<VenvSpec> {
    include_str!("../python-venvs.tsv")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let cols: Vec<&str> = l.split('\t').collect();
            assert_eq!(
                cols.len(),
                5,
                "tests/python-venvs.tsv: five columns in {l:?}"
            );
            let minor = cols[2]
                .strip_prefix("3.")
                .and_then(|m| m.parse().ok())
                .unwrap_or_else(|| panic!("tests/python-venvs.tsv: version {:?}", cols[2]));
            VenvSpec {
                folder: cols[0].into(),
                env_var: cols[1].into(),
                min_minor: minor,
                imports: cols[3].into(),
                pip_args: cols[4].split_whitespace().map(String::from).collect(),
            }
        })
        .collect()
}

fn spec(v: Venv) -> VenvSpec {
    venv_table()
        .into_iter()
        .find(|s| s.folder == v.folder())
        .unwrap_or_else(|| panic!("tests/python-venvs.tsv has no row {}", v.folder()))
}

/// The venv's Python: the table's variable if set, else `target/FOLDER`, made and filled with
/// pip when it cannot import what it must (once per test process and venv).
pub fn python(v: Venv) -> Result<PathBuf, String> {
    static FOUND: Mutex<Vec<(Venv, Result<PathBuf, String>)>> = Mutex::new(Vec::new());
    // One lock for the whole search: two tests must not make the same venv at once.
    let mut found = FOUND.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, r)) = found.iter().find(|(w, _)| *w == v) {
        return r.clone();
    }
    let r = find_or_make(&spec(v));
    found.push((v, r.clone()));
    r
}

fn can_import(py: &Path, imports: &str) -> bool {
    Command::new(py)
        .args(["-c", &format!("import {imports}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn find_or_make(s: &VenvSpec) -> Result<PathBuf, String> {
    if let Ok(py) = std::env::var(&s.env_var) {
        let py = PathBuf::from(py);
        return if can_import(&py, &s.imports) {
            Ok(py)
        } else {
            Err(format!(
                "{}={} cannot import {}",
                s.env_var,
                py.display(),
                s.imports
            ))
        };
    }
    let venv = root().join("target").join(&s.folder);
    let py = venv.join("bin/python");
    if can_import(&py, &s.imports) {
        return Ok(py);
    }
    let base = base_python(s.min_minor)
        .ok_or_else(|| format!("no Python 3.{} or later for {}", s.min_minor, s.folder))?;
    let made = Command::new(base).args(["-m", "venv"]).arg(&venv).status();
    if !made.is_ok_and(|st| st.success()) {
        return Err("python3 -m venv failed (is Python 3 installed?)".into());
    }
    let pip = Command::new(&py)
        .args(["-m", "pip", "install", "-q"])
        .args(&s.pip_args)
        .status();
    if !pip.is_ok_and(|st| st.success()) || !can_import(&py, &s.imports) {
        return Err(format!(
            "pip install {} failed (offline?)",
            s.pip_args.join(" ")
        ));
    }
    Ok(py)
}

/// A Python of at least 3.`minor` to make a venv with: `python3` when it is recent enough,
/// else `python3.13` or `python3.12`, else the newest of pyenv's versions that is.
fn base_python(minor: u32) -> Option<PathBuf> {
    let runs = |py: &Path| {
        Command::new(py)
            .args([
                "-c",
                &format!("import sys; assert sys.version_info >= (3, {minor})"),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    for name in ["python3", "python3.13", "python3.12"] {
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

/// Whether a missing runtime must fail the test instead of skipping it: under `CI=true` (as
/// `.ci/run` runs), or `LOOPSIM_REQUIRE_HERMES=1`.
pub fn skips_fail() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
        || std::env::var("LOOPSIM_REQUIRE_HERMES").is_ok_and(|v| v == "1")
}

/// The venv's Python, or `None` after a SKIPPED line on the terminal (not captured by the
/// test harness, so a person sees it) and in `target/test-skips.txt`, which `.ci/run` counts;
/// a failure where [`skips_fail`].
pub fn python_or_skip(v: Venv, what: &str) -> Option<PathBuf> {
    match python(v) {
        Ok(py) => Some(py),
        Err(why) => {
            if skips_fail() {
                panic!("{what} must run here (CI=true): {why}");
            }
            let line = format!("SKIPPED {what}: {why}");
            let _ = writeln!(std::io::stderr(), "\n!!! {line}\n");
            let skips = root().join("target/test-skips.txt");
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(skips)
            {
                let _ = writeln!(f, "{line}");
            }
            None
        }
    }
}
