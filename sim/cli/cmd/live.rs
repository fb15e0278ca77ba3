//! `loopsim live` and `loopsim serve`: a scenario through a real runtime's loop.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use loopsim_engine::profile::{ProfileName, Runtime};
use loopsim_live::compare::{self, Divergence};
use loopsim_live::runtime_run::{self, LiveOptions, LiveRun};
use loopsim_world::scenario::Scenario;
use loopsim_world::trace::{self, EventKind, Header};
use serde_json::{Value, json};

use crate::args::{EngineArgs, Format, RuntimeName};
use crate::inputs;
use crate::out::{CheckFailed, emit, say};
use crate::run_to_memory;

/// The profile a live Hermes run is compared under when none is given: the version PyPI's
/// `hermes-agent==0.19.0` is.
pub const LIVE_PROFILE: ProfileName = ProfileName::Hermes0_19_0;

/// The runtimes with a live bridge, their profile by default (the version the tests install),
/// the variable naming their Python, and the venv under `target/` the tests create.
pub(crate) const LIVE_RUNTIMES: &[(Runtime, ProfileName, &str, &str)] = &[
    (
        Runtime::Hermes,
        LIVE_PROFILE,
        "LOOPSIM_LIVE_PYTHON",
        "hermes-live-venv",
    ),
    (
        Runtime::OpenAiAgents,
        ProfileName::OpenAiAgents0_24,
        "LOOPSIM_OPENAI_AGENTS_PYTHON",
        "openai-agents-venv",
    ),
    (
        Runtime::PydanticAi,
        ProfileName::PydanticAi2_68,
        "LOOPSIM_PYDANTIC_AI_PYTHON",
        "pydantic-ai-venv",
    ),
    (
        Runtime::LangGraph,
        ProfileName::LangGraph1_2,
        "LOOPSIM_LANGGRAPH_PYTHON",
        "langgraph-venv",
    ),
    (
        Runtime::Smolagents,
        ProfileName::Smolagents1_26,
        "LOOPSIM_SMOLAGENTS_PYTHON",
        "smolagents-venv",
    ),
    (
        Runtime::OpenHands,
        ProfileName::OpenHandsSdk1_58,
        "LOOPSIM_OPENHANDS_PYTHON",
        "openhands-venv",
    ),
];

/// A live runtime: which, the Python that has it, and its default profile.
pub struct LiveRuntime {
    pub runtime: Runtime,
    pub python: PathBuf,
    pub profile: ProfileName,
}

/// The runtime a line named, with the Python that has it (the one named, else its variable,
/// else the venv the tests create, else python3) and its default profile.
pub fn parse_runtime(name: &RuntimeName) -> Result<LiveRuntime> {
    let &(runtime, profile, var, venv) = LIVE_RUNTIMES
        .iter()
        .find(|r| r.0 == name.runtime)
        .expect("RuntimeName::parse takes only live runtimes");
    let mut python = inputs::python_for(name.python.as_deref(), var, venv);
    // The bridge runs in a folder of its own: a relative path must not change meaning there.
    if python.components().count() > 1 && python.is_relative() {
        python = std::env::current_dir()?.join(python);
    }
    Ok(LiveRuntime {
        runtime,
        python,
        profile,
    })
}

/// One scenario through the real loop and through the simulation, with both traces.
pub struct LiveAndSimulated {
    pub sc: &'static Scenario,
    pub runtime: Runtime,
    pub profile: ProfileName,
    pub seed: u64,
    pub live: LiveRun,
    pub live_events: Vec<Value>,
    pub simulated: Vec<Value>,
    pub sim_wall: std::time::Duration,
    pub divergence: Option<Divergence>,
    /// The user's config.yaml text, for the trace header.
    pub config_text: Option<String>,
}

pub fn run_both(
    path: &Path,
    runtime: &RuntimeName,
    args: &EngineArgs,
    seed: Option<u64>,
    timeout_s: f64,
) -> Result<LiveAndSimulated> {
    if !(timeout_s.is_finite() && timeout_s > 0.0) {
        bail!("--timeout {timeout_s}: expected a positive number of seconds");
    }
    // A server serves one scenario for the life of the process.
    let sc: &'static Scenario = Box::leak(Box::new(inputs::scenario(path)?));
    let live_runtime = parse_runtime(runtime)?;
    if let Some(why) = runtime_run::unsupported(sc, live_runtime.runtime) {
        bail!(why);
    }
    inputs::check_platform(args.platform.as_deref())?;
    let mut opts = inputs::run_options(args)?;
    let profile = args.profile.unwrap_or(live_runtime.profile);
    if profile.runtime() != live_runtime.runtime {
        bail!(
            "--profile {profile} is a {} profile; live under {} compares with one of {}'s",
            profile.runtime(),
            live_runtime.runtime,
            live_runtime.runtime
        );
    }
    if let Some(why) = sc.unsupported_under(profile) {
        bail!(why);
    }
    opts.profile = Some(profile);
    opts.seed = seed;
    inputs::config_warnings(
        &[(sc, profile)],
        args.platform.as_deref(),
        opts.config.as_deref(),
    )?;
    let seed = seed.unwrap_or(sc.file.seed);
    let started = Instant::now();
    let (_, sim_trace) = run_to_memory(sc, &opts)?;
    let sim_wall = started.elapsed();
    let simulated = trace_events(&sim_trace);
    let live = runtime_run::run(
        sc,
        &LiveOptions {
            runtime: live_runtime.runtime,
            python: live_runtime.python,
            seed,
            profile,
            platform: args.platform.clone(),
            config: opts.config.clone(),
            timeout: std::time::Duration::from_secs_f64(timeout_s),
        },
    )
    .with_context(|| format!("{}: live run", sc.path))?;
    let live_events: Vec<Value> = live
        .events
        .iter()
        .map(|e| serde_json::to_value(e).expect("event"))
        .collect();
    let divergence = compare::first_divergence(&simulated, &live_events);
    let config_text = opts.config.as_ref().map(|c| c.text.clone());
    Ok(LiveAndSimulated {
        config_text,
        runtime: live_runtime.runtime,
        sc,
        profile,
        seed,
        live,
        live_events,
        simulated,
        sim_wall,
        divergence,
    })
}

/// A trace's events: neither its header nor its end line.
pub fn trace_events(bytes: &[u8]) -> Vec<Value> {
    bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .skip(1)
        .filter_map(|l| serde_json::from_slice::<Value>(l).ok())
        .filter(|e| e.get("kind").and_then(Value::as_str) != Some("end"))
        .collect()
}

pub fn describe(d: &Divergence) -> String {
    let show = |v: &Option<Value>| {
        v.as_ref()
            .map_or("(no event)".to_string(), Value::to_string)
    };
    format!(
        "{} event {} differs{}\n  simulated: {}\n  live:      {}",
        d.agent,
        d.index + 1,
        if d.fields.is_empty() {
            String::new()
        } else {
            format!(" in {}", d.fields.join(", "))
        },
        show(&d.simulated),
        show(&d.live),
    )
}

/// `loopsim live SCENARIO`: the report of the real loop's run, beside the simulation's.
pub fn live(
    path: &Path,
    runtime: &RuntimeName,
    args: &EngineArgs,
    seed: Option<u64>,
    out: Option<&PathBuf>,
    timeout_s: f64,
    format: Format,
) -> Result<()> {
    let r = run_both(path, runtime, args, seed, timeout_s)?;
    let dir = out
        .cloned()
        .unwrap_or_else(|| PathBuf::from("reports").join(format!("{}-live", r.sc.file.name)));
    let header = Header {
        format: trace::FORMAT.into(),
        version: trace::VERSION,
        loopsim: env!("CARGO_PKG_VERSION").into(),
        scenario: r.sc.file.name.clone(),
        scenario_path: r.sc.path.clone(),
        scenario_hash: r.sc.content_hash.hex(),
        seed: r.seed,
        profile: r.profile.to_string(),
        platform: args.platform.clone().or_else(|| r.sc.file.platform.clone()),
        config_hash: String::new(),
        schedule: "live".into(),
        engine: Some(format!("live:{}-{}", r.runtime, r.live.version)),
        config_file: args.config.as_ref().map(|c| c.display().to_string()),
        config_text: r.config_text.clone(),
        scenario_text: Some(r.sc.text.to_string()),
        faults: None,
    };
    let mut trace_text = serde_json::to_string(&header)?;
    trace_text.push('\n');
    for e in &r.live_events {
        trace_text.push_str(&e.to_string());
        trace_text.push('\n');
    }
    // The end line, as every trace has: the hash of every byte above it.
    let end = json!({
        "kind": "end",
        "hash_above": loopsim_engine::hash::Hash::of(trace_text.as_bytes()).hex(),
    });
    trace_text.push_str(&end.to_string());
    trace_text.push('\n');
    let summary = summary_json(&r, runtime, args);
    let md = summary_md(&summary, &r);
    let mut outputs = loopsim_report::output::Outputs::new();
    let write = |o: &mut loopsim_report::output::Outputs, name: &str, bytes: &[u8]| {
        o.write(&dir.join(name), bytes)
            .map_err(|e| anyhow::anyhow!("{}: cannot write: {e}", dir.join(name).display()))
    };
    write(&mut outputs, "trace.jsonl", trace_text.as_bytes())?;
    write(
        &mut outputs,
        "summary.json",
        serde_json::to_string_pretty(&summary)?.as_bytes(),
    )?;
    write(&mut outputs, "summary.md", md.as_bytes())?;
    outputs
        .commit()
        .map_err(|e| anyhow::anyhow!("{}: cannot write: {e}", dir.display()))?;
    if format == Format::Json {
        emit!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        say!("{md}");
        say!(
            "wrote {}/{{trace.jsonl, summary.json, summary.md}}",
            dir.display()
        );
    }
    Ok(())
}

/// What one agent of a live run did, tallied from its events.
#[derive(Default)]
struct AgentTally {
    agent: String,
    model_calls: u64,
    input_tokens: u64,
    output_tokens: u64,
    tool_calls: u64,
    exits: Vec<String>,
}

fn per_agent(events: &[Value]) -> Vec<Value> {
    let mut agents: Vec<AgentTally> = Vec::new();
    for e in events {
        let Some(a) = e.get("agent").and_then(Value::as_str) else {
            continue;
        };
        let i = match agents.iter().position(|x| x.agent == a) {
            Some(i) => i,
            None => {
                agents.push(AgentTally {
                    agent: a.to_string(),
                    ..AgentTally::default()
                });
                agents.len() - 1
            }
        };
        let n = |k: &str| e.get(k).and_then(Value::as_u64).unwrap_or(0);
        let row = &mut agents[i];
        let kind = e
            .get("kind")
            .and_then(Value::as_str)
            .and_then(EventKind::parse);
        match kind {
            Some(EventKind::ModelCall) => {
                row.model_calls += 1;
                row.input_tokens += n("input_tokens");
                row.output_tokens += n("output_tokens");
            }
            Some(EventKind::ToolCall) => row.tool_calls += 1,
            Some(EventKind::TurnEnd) => row.exits.push(
                e.get("detail")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            ),
            _ => {}
        }
    }
    agents
        .into_iter()
        .map(|t| {
            json!({ "agent": t.agent, "model_calls": t.model_calls, "input_tokens": t.input_tokens,
                    "output_tokens": t.output_tokens, "tool_calls": t.tool_calls, "exits": t.exits })
        })
        .collect()
}

fn summary_json(r: &LiveAndSimulated, runtime: &RuntimeName, args: &EngineArgs) -> Value {
    let (ns, nl) = compare::compared_counts(&r.simulated, &r.live_events);
    json!({
        "scenario": r.sc.file.name,
        "seed": r.seed,
        "runtime": format!("{} {}", r.runtime, r.live.version),
        "compared_under": r.profile.as_str(),
        "live_wall_s": r.live.wall.as_secs_f64(),
        "simulated_wall_s": r.sim_wall.as_secs_f64(),
        "speedup": r.live.wall.as_secs_f64() / r.sim_wall.as_secs_f64().max(1e-9),
        "parent_turns": r.live.turns,
        "agents": per_agent(&r.live_events),
        "compared_events": { "simulated": ns, "live": nl },
        "identical": r.divergence.is_none(),
        "first_divergence": r.divergence.as_ref().map(|d| json!({
            "agent": d.agent, "index": d.index, "fields": d.fields,
            "simulated": d.simulated, "live": d.live,
        })),
        "rerun": format!(
            "loopsim live {} --runtime {} --seed {}{}",
            loopsim_report::shell::quote(&r.sc.path),
            loopsim_report::shell::quote(&runtime.to_string()),
            r.seed,
            args.flags()
        ),
    })
}

fn summary_md(s: &Value, r: &LiveAndSimulated) -> String {
    let mut md = format!(
        "# {} live under {}\n\nSeed {} | rerun: `{}`\n\n",
        r.sc.file.name,
        s["runtime"].as_str().unwrap_or(""),
        r.seed,
        s["rerun"].as_str().unwrap_or("")
    );
    md += "| agent | model calls | input tokens | output tokens | tool calls | exits |\n";
    md += "| --- | --- | --- | --- | --- | --- |\n";
    for a in s["agents"].as_array().into_iter().flatten() {
        md += &format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            a["agent"].as_str().unwrap_or(""),
            a["model_calls"],
            a["input_tokens"],
            a["output_tokens"],
            a["tool_calls"],
            a["exits"]
                .as_array()
                .map(|x| x
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(", "))
                .unwrap_or_default(),
        );
    }
    md += &format!(
        "\nWall time: live {:.2} s, simulated {:.4} s ({:.0}x).\n\n",
        r.live.wall.as_secs_f64(),
        r.sim_wall.as_secs_f64(),
        s["speedup"].as_f64().unwrap_or(0.0)
    );
    md += &match &r.divergence {
        None => format!(
            "The simulation under {} matches the live run event for event ({} events compared).\n",
            r.profile, s["compared_events"]["live"]
        ),
        Some(d) => format!(
            "The simulation under {} diverges from the live run: {}\n",
            r.profile,
            describe(d)
        ),
    };
    md
}

/// `loopsim diff SCENARIO --live hermes`: exit 1 at the first divergent event.
pub fn diff(
    path: &Path,
    runtime: &RuntimeName,
    args: &EngineArgs,
    seed: Option<u64>,
    timeout_s: f64,
    format: Format,
) -> Result<()> {
    let r = run_both(path, runtime, args, seed, timeout_s)?;
    let (ns, nl) = compare::compared_counts(&r.simulated, &r.live_events);
    if format == Format::Json {
        emit!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "scenario": r.sc.file.name,
                "seed": r.seed,
                "simulated": r.profile.as_str(),
                "live": format!("{} {}", r.runtime, r.live.version),
                "identical": r.divergence.is_none(),
                "compared_events": { "simulated": ns, "live": nl },
                "first_divergence": r.divergence.as_ref().map(|d| json!({
                    "agent": d.agent, "index": d.index, "fields": d.fields,
                    "simulated": d.simulated, "live": d.live,
                })),
            }))?
        );
    }
    match &r.divergence {
        None => {
            if format == Format::Text {
                say!(
                    "identical: {} under {} and live under {} {} agree on all {nl} compared events (seed {}; live {:.2} s, simulated {:.4} s)",
                    r.sc.file.name,
                    r.profile,
                    r.runtime,
                    r.live.version,
                    r.seed,
                    r.live.wall.as_secs_f64(),
                    r.sim_wall.as_secs_f64()
                );
            }
            Ok(())
        }
        Some(d) => Err(CheckFailed(format!(
            "{} under {} and live under {} {} diverge: {}",
            r.sc.file.name,
            r.profile,
            r.runtime,
            r.live.version,
            describe(d)
        ))
        .into()),
    }
}

/// `loopsim serve SCENARIO`: the scripted model and tools until Ctrl-C.
pub fn serve(path: &Path, args: &EngineArgs, seed: Option<u64>, listen: &str) -> Result<()> {
    let addr: std::net::SocketAddr = listen
        .parse()
        .map_err(|e| anyhow::anyhow!("--listen {listen}: expected 127.0.0.1:PORT ({e})"))?;
    let sc: &'static Scenario = Box::leak(Box::new(inputs::scenario(path)?));
    let profile = args.profile.unwrap_or(LIVE_PROFILE);
    if let Some(why) = sc
        .unsupported_under(profile)
        .or_else(|| runtime_run::unsupported(sc, profile.runtime()))
    {
        bail!(why);
    }
    if let Some(p) = &args.platform {
        bail!(
            "--platform {p}: the platform is the runtime's own setting (the one you point at \
             this server); loopsim serve has none"
        );
    }
    let opts = inputs::run_options(args)?;
    let world = runtime_run::world_for(
        sc,
        seed.unwrap_or(sc.file.seed),
        profile,
        opts.config.as_deref(),
    )
    .map_err(|why| anyhow::anyhow!(why))?;
    let handle = loopsim_live::server::start(world, addr)?;
    say!(
        "serving {} on {} (models: {}); tools at http://{}/loopsim/v1/tool; Ctrl-C stops",
        sc.file.name,
        handle.base_url(),
        sc.file
            .models
            .keys()
            .cloned()
            .collect::<Vec<_>>()
            .join(", "),
        handle.addr()
    );
    crate::out::flush();
    loop {
        std::thread::park();
    }
}
