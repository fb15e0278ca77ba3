//! Helpers shared by the integration tests (each test crate uses some of them).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod python;
#[allow(unused_imports)] // each area uses some of them
pub use python::{Venv, python, python_or_skip, skips_fail, venv_table};

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

/// A scratch folder under the system's temporary folder, removed when dropped (also when
/// the test fails).
pub struct TempDir(PathBuf);

impl TempDir {
    /// A fresh, empty folder named for the test and this process.
    pub fn new(name: &str) -> TempDir {
        // The tests of an area share one process: a counter keeps two folders of one name
        // (from two modules) apart.
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let d = std::env::temp_dir().join(format!("loopsim-{name}-{}-{n}", std::process::id()));
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
