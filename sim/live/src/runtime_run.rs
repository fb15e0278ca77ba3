//! Running a scenario through a real runtime's loop: the server, the runtime's bridge script
//! (`bridges/<runtime>/live.py`) in a Python of the user's choice, and the events both sides
//! recorded.
//!
//! The bridge scripts are compiled into the binary and written to a temporary folder per run,
//! so `loopsim live` works from any directory. The Python process gets a process group of its
//! own and is killed by it on timeout or failure; the server is stopped before returning.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration as WallDuration, Instant as WallInstant};

use loopsim_engine::profile::{ProfileName, Runtime};
use loopsim_world::scenario::Scenario;
use loopsim_world::trace::Event;
use loopsim_world::user_config::UserConfig;
use serde_json::Value;

use crate::live_world::LiveWorld;
use crate::server::{self, ServeError};

/// How long a live run may take before it is killed (wall clock).
pub const DEFAULT_TIMEOUT: WallDuration = WallDuration::from_secs(600);

/// What a live run needs besides its scenario.
#[derive(Clone, Debug)]
pub struct LiveOptions {
    pub runtime: Runtime,
    pub python: PathBuf,
    pub seed: u64,
    /// The profile whose result hashing the trace uses (the runtime's version).
    pub profile: ProfileName,
    pub platform: Option<String>,
    pub config: Option<std::sync::Arc<UserConfig>>,
    pub timeout: WallDuration,
}

/// What the real loop did.
#[derive(Clone, Debug)]
pub struct LiveRun {
    pub events: Vec<Event>,
    /// The wall time of the whole live run (Python start to finish).
    pub wall: WallDuration,
    /// The runtime's package version that ran (`unknown` for a checkout without metadata).
    pub version: String,
    /// Each parent turn's exit reason, as the runtime's bridge reported it.
    pub turns: Vec<String>,
}

/// Why a live run failed.
#[derive(Debug, thiserror::Error)]
pub enum LiveRunError {
    #[error(transparent)]
    Serve(#[from] ServeError),
    #[error("{python}: cannot start it: {source}")]
    Spawn {
        python: String,
        source: std::io::Error,
    },
    #[error("the live run's temporary folder: {0}")]
    Temp(std::io::Error),
    #[error("{} is not usable with {python}: {message}", runtime.title())]
    Setup {
        runtime: Runtime,
        python: String,
        message: String,
    },
    #[error("the live run attempted connections off loopback: {0}")]
    Network(String),
    #[error("{} failed (exit {code}): {message}", capital(runtime.title()))]
    Runtime {
        runtime: Runtime,
        code: i32,
        message: String,
    },
    #[error("the live run took longer than {0:?} and was killed")]
    Timeout(WallDuration),
    #[error("the runtime sent requests loopsim could not answer: {0}")]
    Protocol(String),
    #[error("{0}")]
    Unsupported(String),
}

/// A runtime's name at the start of a sentence: "The OpenAI Agents SDK", but "smolagents"
/// as its authors write it.
fn capital(s: &str) -> String {
    match s.strip_prefix("the ") {
        Some(rest) => format!("The {rest}"),
        None => s.to_string(),
    }
}

/// The first user message: the scenario's description and name.
pub fn task(sc: &Scenario) -> String {
    format!(
        "{} (loopsim scenario {})",
        sc.file.description.trim(),
        sc.file.name
    )
}

/// The parent's later user messages, one per `turns` entry.
pub fn user_turns(sc: &Scenario) -> Vec<String> {
    sc.file.agents["parent"]
        .turns
        .iter()
        .enumerate()
        .map(|(k, _)| {
            format!(
                "The user's next message (loopsim scenario {}, user turn {}).",
                sc.file.name,
                k + 2
            )
        })
        .collect()
}

/// What the SDK bridges share, as committed in `bridges/sdk_bridge.py`.
pub const SDK_BRIDGE_PY: &str = include_str!("../../../bridges/sdk_bridge.py");

/// The LangGraph bridge, as committed in `bridges/langgraph/live.py`.
pub const LANGGRAPH_PY: &str = include_str!("../../../bridges/langgraph/live.py");

/// The spec of a bridge to an agent SDK (every runtime but Hermes): where loopsim is, the
/// scenario's tools, the run's cap in the runtime's setting (`cap`), the task, the later turns,
/// and whether a user's stop must be able to cancel the run.
pub fn sdk_spec(sc: &Scenario, opts: &LiveOptions, server: &str) -> Result<Value, LiveRunError> {
    let cfg = sc
        .engine_config_over(opts.profile, None, opts.config.as_deref())
        .map_err(|e| LiveRunError::Unsupported(e.to_string()))?;
    let cap = cfg.cap_setting;
    // A stop anywhere (a later turn, a background result's turn) needs the cancellable run.
    let user_stops = sc.file.human.interrupt_at_s.is_some() || sc.steps().any(|s| s.user_stop);
    Ok(serde_json::json!({
        "server": server,
        "model": sc.file.agents["parent"].model.get_ref(),
        "tools": sc.file.tools.keys().collect::<Vec<_>>(),
        "cap": cap,
        "task": task(sc),
        "user_turns": user_turns(sc),
        "streamed": user_stops,
        "planning_interval": cfg.turn.planning_interval,
        "limits": limits_spec(&cfg.limits),
        // The OpenAI Agents SDK's error_handlers["max_turns"]: a handler that gives the final
        // output at the cap.
        "max_turns_handler": cfg.turn.at_cap == loopsim_engine::turn::AtCap::HandledFinalOutput,
    }))
}

/// The opt-in call limits as a bridge passes them to its runtime, in the runtime's own
/// argument names (a thread limit is passed as the run limit it acts as without a
/// checkpointer).
fn limits_spec(l: &loopsim_engine::call_limits::CallLimits) -> Value {
    let u = &l.usage;
    serde_json::json!({
        "usage": {
            "tool_calls_limit": u.tool_calls,
            "input_tokens_limit": u.input_tokens,
            "output_tokens_limit": u.output_tokens,
            "total_tokens_limit": u.total_tokens,
        },
        "model_call_limit": l.model_calls.map(|m| serde_json::json!({
            "run_limit": m.limit,
            "exit_behavior": m.exit.as_str(),
        })),
        "tool_call_limit": l.tool_calls.as_ref().map(|t| serde_json::json!({
            "tool_name": t.tool,
            "run_limit": t.limit,
            "exit_behavior": t.exit.as_str(),
        })),
    })
}

/// What a scenario asks of `runtime` live that its bridge cannot do yet, if anything.
pub fn unsupported(sc: &Scenario, runtime: Runtime) -> Option<String> {
    match runtime {
        Runtime::Hermes => crate::hermes::unsupported(sc),
        Runtime::OpenAiAgents => crate::openai_agents::unsupported(sc),
        Runtime::PydanticAi => crate::pydantic_ai::unsupported(sc),
        Runtime::LangGraph => None,
        Runtime::Smolagents => crate::smolagents::unsupported(sc),
        Runtime::OpenHands => crate::openhands::unsupported(sc),
        Runtime::ReactLoop => Some(
            "the loop-design article's ReAct loop has no package to run live: its profile is \
             proved against the article's numbers (docs/runtimes.md)"
                .into(),
        ),
    }
}

/// A temporary folder removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> std::io::Result<TempDir> {
        let base = std::env::temp_dir();
        for i in 0..1000u32 {
            let p = base.join(format!("loopsim-live-{}-{i}", std::process::id()));
            match std::fs::create_dir(&p) {
                Ok(()) => return Ok(TempDir(p)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(std::io::Error::other("no free temporary folder name"))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The live world that serves `sc` under `profile`, with a user's config laid over the
/// scenario's (the settings the server itself honours: smolagents' planning, the provider
/// retries); why not, when a setting asks for what live mode cannot do.
pub fn world_for(
    sc: &'static Scenario,
    seed: u64,
    profile: ProfileName,
    config: Option<&UserConfig>,
) -> Result<LiveWorld, String> {
    let runtime = profile.runtime();
    let rules = loopsim_engine::profile::Profile::get(profile).guardrails;
    let cfg = sc
        .engine_config_over(profile, None, config)
        .map_err(|e| e.to_string())?;
    if let Some(w) = cfg.context_length.filter(|_| runtime != Runtime::Hermes) {
        return Err(format!(
            "{}: model.context_length {w}: a window is Hermes's setting; {runtime:?}'s live \
             loop has no context compression loopsim has proved",
            sc.path
        ));
    }
    let planning = if runtime == Runtime::Smolagents {
        cfg.turn.planning_interval.map(|n| (n, cfg.max_iterations))
    } else {
        None
    };
    Ok(LiveWorld::new(sc, seed, &rules)
        .for_runtime(runtime)
        .with_planning(planning)
        .with_provider_retry(cfg.provider_retry)
        .with_compression(cfg.compression, cfg.context_length))
}

/// Runs `sc` through the real loop of `opts.runtime` in `opts.python`.
pub fn run(sc: &'static Scenario, opts: &LiveOptions) -> Result<LiveRun, LiveRunError> {
    if let Some(why) = unsupported(sc, opts.runtime) {
        return Err(LiveRunError::Unsupported(why));
    }
    let world = world_for(sc, opts.seed, opts.profile, opts.config.as_deref())
        .map_err(LiveRunError::Unsupported)?;
    let handle = server::start(world, "127.0.0.1:0".parse().expect("addr"))?;
    let dir = TempDir::new().map_err(LiveRunError::Temp)?;
    let script = dir.0.join("live.py");
    let server = format!("http://{}", handle.addr());
    let (text, spec) = match opts.runtime {
        Runtime::Hermes => (
            crate::hermes::LIVE_PY,
            crate::hermes::spec(sc, opts, &server, &handle.base_url()),
        ),
        Runtime::OpenAiAgents => (crate::openai_agents::LIVE_PY, sdk_spec(sc, opts, &server)?),
        Runtime::PydanticAi => (crate::pydantic_ai::LIVE_PY, sdk_spec(sc, opts, &server)?),
        Runtime::LangGraph => (LANGGRAPH_PY, sdk_spec(sc, opts, &server)?),
        Runtime::Smolagents => {
            let mut spec = sdk_spec(sc, opts, &server)?;
            spec["tool_inputs"] = serde_json::json!(crate::smolagents::tool_inputs(sc));
            (crate::smolagents::LIVE_PY, spec)
        }
        Runtime::OpenHands => {
            let mut spec = sdk_spec(sc, opts, &server)?;
            let cfg = sc
                .engine_config_over(opts.profile, None, opts.config.as_deref())
                .map_err(|e| LiveRunError::Unsupported(e.to_string()))?;
            spec["stuck_detection"] = crate::openhands::stuck_spec(cfg.stuck);
            (crate::openhands::LIVE_PY, spec)
        }
        Runtime::ReactLoop => unreachable!("refused by `unsupported`"),
    };
    std::fs::write(&script, text).map_err(LiveRunError::Temp)?;
    if opts.runtime != Runtime::Hermes {
        // What the SDK bridges share; Python finds it beside the script.
        std::fs::write(dir.0.join("sdk_bridge.py"), SDK_BRIDGE_PY).map_err(LiveRunError::Temp)?;
    }
    let spec_path = dir.0.join("spec.json");
    std::fs::write(&spec_path, spec.to_string()).map_err(LiveRunError::Temp)?;
    let started = WallInstant::now();
    let out = run_python(&opts.python, &script, &spec_path, &dir.0, opts.timeout)?;
    let wall = started.elapsed();
    let errors = handle.errors();
    let events = handle.with_world(|w| w.take_events());
    handle.stop();
    if out.code != 0 {
        let message = out.stderr.trim().to_string();
        return Err(match out.code {
            2 => LiveRunError::Setup {
                runtime: opts.runtime,
                python: opts.python.display().to_string(),
                message,
            },
            3 => LiveRunError::Network(message),
            code => LiveRunError::Runtime {
                runtime: opts.runtime,
                code,
                message,
            },
        });
    }
    if !errors.is_empty() {
        return Err(LiveRunError::Protocol(errors.join("; ")));
    }
    let summary: Value = out
        .stdout
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or(Value::Null);
    Ok(LiveRun {
        events,
        wall,
        version: summary
            .get("hermes")
            .or_else(|| summary.get("version"))
            .and_then(Value::as_str)
            .unwrap_or("unknown")
            .to_string(),
        turns: summary
            .get("turns")
            .and_then(Value::as_array)
            .map(|t| {
                t.iter()
                    .map(|x| x.as_str().unwrap_or("unknown").to_string())
                    .collect()
            })
            .unwrap_or_default(),
    })
}

struct Output {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Process groups of live runtimes still running, for a signal handler to end.
static CHILDREN: std::sync::Mutex<Vec<i32>> = std::sync::Mutex::new(Vec::new());

/// Kills every live runtime this process started that is still running (a signal handler's
/// last act).
pub fn kill_children() {
    if let Ok(c) = CHILDREN.lock() {
        for &pid in c.iter() {
            // SAFETY: kill(2) on a process group this process created.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
    }
}

/// The variables that name a file of trust roots to Python's HTTP clients and to Hermes
/// (`agent/ssl_verify.py`); a live run clears them (see `run_python`).
const CA_BUNDLE_VARS: [&str; 4] = [
    "SSL_CERT_FILE",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "HERMES_CA_BUNDLE",
];

/// Runs the bridge with a deadline; its whole process group is killed if it overstays.
fn run_python(
    python: &Path,
    script: &Path,
    spec: &Path,
    cwd: &Path,
    timeout: WallDuration,
) -> Result<Output, LiveRunError> {
    use std::os::unix::process::CommandExt;
    // An empty folder of trust roots, which OpenSSL reads lazily (per certificate looked up):
    // the run speaks plain HTTP to 127.0.0.1 and nothing else may connect, so no root is ever
    // needed. A CA-bundle variable of the caller's, by contrast, has Hermes and httpx load the
    // whole bundle for every client they build, one or two per model call: about half of a
    // long Hermes run's CPU on a machine that sets them (docs/live.md, "Trust roots").
    let no_roots = cwd.join("no-trust-roots");
    std::fs::create_dir_all(&no_roots).map_err(LiveRunError::Temp)?;
    let mut command = Command::new(python);
    for var in CA_BUNDLE_VARS {
        command.env_remove(var);
    }
    let mut child = command
        .env("SSL_CERT_DIR", &no_roots)
        .arg(script)
        .arg(spec)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONUNBUFFERED", "1")
        // Not the caller's folder: Hermes resolves relative paths against the process's
        // folder (its verify-on-stop looks for a project there), and a run must not depend
        // on where loopsim was started.
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|source| LiveRunError::Spawn {
            python: python.display().to_string(),
            source,
        })?;
    let pid = child.id() as i32;
    if let Ok(mut c) = CHILDREN.lock() {
        c.push(pid);
    }
    let mut stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    // Readers on threads of their own, so a chatty child cannot fill a pipe and stall.
    let out_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let deadline = WallInstant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if WallInstant::now() >= deadline => break None,
            Ok(None) => std::thread::sleep(WallDuration::from_millis(10)),
            Err(_) => break None,
        }
    };
    // Whatever happened, nothing of the group outlives the run.
    // SAFETY: kill(2) on our own child's process group.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
    }
    if let Ok(mut c) = CHILDREN.lock() {
        c.retain(|&p| p != pid);
    }
    let status = match status {
        Some(s) => s,
        None => {
            let _ = child.wait();
            return Err(LiveRunError::Timeout(timeout));
        }
    };
    let stdout = out_t.join().unwrap_or_default();
    let stderr = err_t.join().unwrap_or_default();
    Ok(Output {
        code: status.code().unwrap_or(-1),
        stdout,
        stderr: tail(&stderr, 4000),
    })
}

fn tail(s: &str, n: usize) -> String {
    if s.len() <= n {
        return s.to_string();
    }
    let mut start = s.len() - n;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    s[start..].to_string()
}
