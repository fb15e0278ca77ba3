//! The `loopsim` command: argument parsing and wiring only.

use std::io::{BufRead, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand, ValueEnum};
use loopsim_engine::config::EngineConfig;
use loopsim_engine::guard::GuardSession;
use loopsim_engine::profile::ProfileName;
use loopsim_import::plural;
use loopsim_import::prices::Prices;
use loopsim_report::metrics::{self, RunMetrics};
use loopsim_report::output::{AtomicFile, write_atomic};
use loopsim_report::{check, plots, sweep};
use loopsim_world::bridge::EngineChoice;
use loopsim_world::scenario::Scenario;
use loopsim_world::scheduler::Order;
use loopsim_world::sim::{RunOptions, RunSummary, run};
use loopsim_world::trace::{self, SharedBuf, TraceWriter};

/// glibc's allocator serialises frees of memory allocated on another thread, which a sweep
/// does for every row; mimalloc does not (see the sweep bench).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Deterministic simulation and benchmarking of LLM agent-loop governance.
#[derive(Parser)]
#[command(name = "loopsim", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the guardrail controller over JSON lines on stdin (docs/guard-protocol.md).
    Guard {
        /// Engine profile: article-2026-06, hermes-0.19.0, hermes-v0.21.5, hermes-main.
        #[arg(long, default_value = "hermes-main")]
        profile: ProfileName,
        /// A Hermes config.yaml (its agent, tool_loop_guardrails and delegation sections).
        #[arg(long)]
        config: Option<PathBuf>,
        /// The platform the agent runs on (cli, telegram, cron, ...): unattended ones hard-stop.
        #[arg(long)]
        platform: Option<String>,
    },
    /// Run a scenario: print a summary, write summary.json and trace.jsonl.
    Run {
        /// The scenario file (scenarios/*.toml).
        scenario: PathBuf,
        #[command(flatten)]
        engine: EngineArgs,
        /// The run seed (default: the scenario's).
        #[arg(long)]
        seed: Option<u64>,
        /// Where to write (default: reports/<scenario name>/).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Order of same-time events: fifo, or a seeded shuffle.
        #[arg(long, value_enum, default_value_t = Schedule::Fifo)]
        schedule: Schedule,
        /// Run twice and require byte-identical traces.
        #[arg(long)]
        check_determinism: bool,
        /// Print the summary as JSON instead of text.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Also run the same scenario and seed under these profiles and compare (comma-separated).
        #[arg(long, value_delimiter = ',')]
        compare_profiles: Vec<ProfileName>,
        /// Which engine decides guardrails: builtin, or hermes-python[=PYTHON] (the installed
        /// hermes-agent package through bridges/hermes/adapter.py).
        #[arg(long = "engine", default_value = "builtin")]
        guard_engine: String,
    },
    /// Re-run a trace's scenario and seed: prove it byte-identical, or (with --profile,
    /// --config or --platform) show what another engine would have done.
    Replay {
        trace: PathBuf,
        #[command(flatten)]
        engine: EngineArgs,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Where a what-if writes its report and plots (default: reports/<scenario>-what-if/).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Import a Hermes session (state.db, agent.log) as a scenario and trace that replay it;
    /// then `loopsim replay OUT/trace.jsonl --profile P` shows what P would have done.
    Import {
        /// Hermes's state database ($HERMES_HOME/state.db); opened read-only.
        database: PathBuf,
        /// The session to import (`--list` shows them).
        #[arg(long, required_unless_present = "list")]
        session: Option<String>,
        /// List the sessions: source, model, start, calls, tokens, cost.
        #[arg(long, conflicts_with = "session")]
        list: bool,
        /// Hermes's agent.log (default: logs/agent.log beside the database, if present).
        #[arg(long)]
        agent_log: Option<PathBuf>,
        /// Model prices per million tokens over the built-in table (TOML, [models."name"]).
        #[arg(long)]
        prices: Option<PathBuf>,
        /// The profile the scenario names, for the recorded run's turn rules and hashing
        /// (default: hermes-0.19.0, or hermes-main when the record shows stall guards).
        #[arg(long)]
        profile: Option<ProfileName>,
        /// Where to write (default: imported/<scenario name>/).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Sweep engine settings over seeds, scenarios and profiles, in parallel.
    Sweep {
        /// Scenario files (default: every file in scenarios/).
        scenarios: Vec<PathBuf>,
        /// A swept Hermes config key: KEY=START..END[:STEP] or KEY=A,B,C (repeatable).
        #[arg(long = "grid")]
        grid: Vec<String>,
        /// Seeds, START..END (end exclusive).
        #[arg(long, default_value = "0..8")]
        seeds: String,
        /// Profiles, comma-separated (default: each scenario's own).
        #[arg(long, value_delimiter = ',')]
        profiles: Vec<String>,
        /// The platform for every run (default: each scenario's).
        #[arg(long)]
        platform: Option<String>,
        /// Where to write (default: reports/sweep).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Run only the jobs of shard K of N (K/N); combine shards with `loopsim merge`.
        #[arg(long)]
        shard: Option<String>,
    },
    /// Combine the outputs of `loopsim sweep --shard K/N` into the unsharded sweep's output.
    Merge {
        /// The shards' output folders.
        #[arg(required = true)]
        shards: Vec<PathBuf>,
        #[arg(long)]
        out: PathBuf,
    },
    /// Check scenarios' expectations over their seeds and profiles (exit 1 if any fails).
    Check {
        /// Scenario files or folders (default: scenarios/).
        paths: Vec<PathBuf>,
        /// Also write JUnit XML (one test case per scenario x seed x profile).
        #[arg(long)]
        junit: Option<PathBuf>,
        /// Write the exact metrics of every run as a baseline for `loopsim gate`.
        #[arg(long)]
        save_baseline: Option<PathBuf>,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Re-run a baseline's runs and fail when a metric got worse than allowed.
    Gate {
        #[arg(long)]
        baseline: PathBuf,
        /// Allowed increase per metric: `5%` (default) or `0.05`.
        #[arg(long, default_value = "5%")]
        max_increase: String,
        /// Fail on any change, better or worse, and on moved stops and warnings.
        #[arg(long)]
        fail_on_any_change: bool,
        /// Rewrite the baseline with the current figures (and pass).
        #[arg(long)]
        update: bool,
        /// Also write the current figures in the Bencher Metric Format.
        #[arg(long)]
        bmf: Option<PathBuf>,
    },
    /// Run a scenario under two engines and report identical traces or the first divergence.
    Diff {
        scenario: PathBuf,
        /// The two engines (default: builtin and hermes-python).
        #[arg(long = "engine")]
        engines: Vec<String>,
        #[command(flatten)]
        engine_args: EngineArgs,
        #[arg(long)]
        seed: Option<u64>,
    },
    /// List the scenarios, one line each.
    List {
        #[arg(default_value = "scenarios")]
        dir: PathBuf,
    },
}

#[derive(clap::Args, Clone, Default)]
struct EngineArgs {
    /// Engine profile (default: the scenario's): article-2026-06, hermes-0.19.0, hermes-v0.21.5, hermes-main.
    #[arg(long)]
    profile: Option<ProfileName>,
    /// A Hermes config.yaml laid over the scenario's [config] (its keys win).
    #[arg(long)]
    config: Option<PathBuf>,
    /// The platform (default: the scenario's).
    #[arg(long)]
    platform: Option<String>,
}

impl EngineArgs {
    fn is_set(&self) -> bool {
        self.profile.is_some() || self.config.is_some() || self.platform.is_some()
    }

    fn options(&self) -> Result<RunOptions> {
        let config_yaml = match &self.config {
            None => None,
            Some(p) => Some((
                p.display().to_string(),
                std::fs::read_to_string(p)
                    .with_context(|| format!("{}: cannot read the config file", p.display()))?,
            )),
        };
        Ok(RunOptions {
            profile: self.profile,
            config_yaml,
            platform: self.platform.clone(),
            ..RunOptions::default()
        })
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum Schedule {
    Fifo,
    Shuffle,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    Text,
    Json,
}

/// Exit code for bad input or usage.
const BAD_INPUT: u8 = 2;
/// Exit code for a failed expectation or check.
const FAILED: u8 = 1;

/// Bad input (exit 2) versus a failed check (exit 1).
#[derive(Debug)]
struct CheckFailed(String);

impl std::fmt::Display for CheckFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CheckFailed {}

fn load_scenario(path: &std::path::Path) -> Result<Scenario> {
    Ok(Scenario::load(path)?)
}

/// Runs once, keeping the trace in memory.
fn run_to_memory(sc: &Scenario, opts: &RunOptions) -> Result<(RunSummary, Vec<u8>)> {
    let buf = SharedBuf::default();
    let summary = run(sc, opts, TraceWriter::to_writer(Box::new(buf.clone())))?;
    Ok((summary, buf.bytes()))
}

/// `builtin`, `hermes-python` or `hermes-python=PYTHON`.
fn parse_engine(s: &str) -> Result<EngineChoice> {
    let (name, python) = s.split_once('=').map_or((s, None), |(n, p)| (n, Some(p)));
    match name {
        "builtin" if python.is_none() => Ok(EngineChoice::Builtin),
        "hermes-python" => {
            let python = python
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("LOOPSIM_PYTHON").map(PathBuf::from))
                .unwrap_or_else(|| {
                    let venv = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                        .join("target/hermes-venv/bin/python");
                    if venv.exists() {
                        venv
                    } else {
                        PathBuf::from("python3")
                    }
                });
            let adapter = std::env::var_os("LOOPSIM_HERMES_ADAPTER")
                .map(PathBuf::from)
                .unwrap_or_else(|| {
                    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("bridges/hermes/adapter.py")
                });
            if !adapter.exists() {
                bail!(
                    "--engine hermes-python: the adapter {} does not exist (set LOOPSIM_HERMES_ADAPTER)",
                    adapter.display()
                );
            }
            Ok(EngineChoice::HermesPython { python, adapter })
        }
        _ => bail!("--engine `{s}`: expected builtin, hermes-python or hermes-python=PYTHON"),
    }
}

/// The Python package is one version: only its profile can be compared fairly.
fn check_engine_profile(choice: &EngineChoice, profile: ProfileName) -> Result<()> {
    if matches!(choice, EngineChoice::HermesPython { .. }) && profile != ProfileName::Hermes0_19_0 {
        bail!(
            "--engine hermes-python runs the installed hermes-agent 0.19.0; use --profile hermes-0.19.0 (the scenario's profile is {profile})"
        );
    }
    Ok(())
}

fn diff_cmd(
    path: &std::path::Path,
    engines: &[String],
    args: &EngineArgs,
    seed: Option<u64>,
) -> Result<()> {
    let names: Vec<String> = if engines.is_empty() {
        vec!["builtin".into(), "hermes-python".into()]
    } else {
        engines.to_vec()
    };
    if names.len() != 2 {
        bail!("diff compares two engines: give --engine twice (or neither)");
    }
    let sc = load_scenario(path)?;
    let mut traces = Vec::new();
    for n in &names {
        let choice = parse_engine(n)?;
        check_engine_profile(&choice, args.profile.unwrap_or(sc.profile))?;
        let mut opts = args.options()?;
        opts.seed = seed;
        opts.engine = choice;
        traces.push(run_to_memory(&sc, &opts)?);
    }
    match trace::first_difference(&traces[0].1, &traces[1].1) {
        None => {
            let calls = traces[0]
                .1
                .split(|&b| b == b'\n')
                .filter(|l| l.windows(11).any(|w| w == b"\"tool_call\""))
                .count();
            println!(
                "identical: {} and {} give the same {} trace lines ({}, seed {}, {calls} tool calls through both engines)",
                names[0],
                names[1],
                traces[0].1.iter().filter(|&&b| b == b'\n').count(),
                sc.file.name,
                traces[0].0.seed,
            );
            Ok(())
        }
        Some((line, a, b)) => Err(CheckFailed(format!(
            "engines diverge at trace line {line}\n  {}: {a}\n  {}: {b}",
            names[0], names[1]
        ))
        .into()),
    }
}

fn rerun_command(path: &std::path::Path, seed: u64, engine: &EngineArgs) -> String {
    let mut cmd = format!("loopsim run {} --seed {seed}", path.display());
    if let Some(p) = engine.profile {
        cmd += &format!(" --profile {p}");
    }
    if let Some(c) = &engine.config {
        cmd += &format!(" --config {}", c.display());
    }
    if let Some(p) = &engine.platform {
        cmd += &format!(" --platform {p}");
    }
    cmd
}

#[allow(clippy::too_many_arguments)]
fn run_cmd(
    path: &std::path::Path,
    engine: &EngineArgs,
    seed: Option<u64>,
    out: Option<&PathBuf>,
    schedule: Schedule,
    check: bool,
    format: Format,
    compare: &[ProfileName],
    choice: EngineChoice,
) -> Result<()> {
    let sc = load_scenario(path)?;
    let mut opts = engine.options()?;
    opts.seed = seed;
    check_engine_profile(&choice, engine.profile.unwrap_or(sc.profile))?;
    opts.engine = choice;
    opts.record_series = true;
    opts.order = match schedule {
        Schedule::Fifo => Order::Fifo,
        Schedule::Shuffle => Order::Shuffle,
    };
    let dir = out
        .cloned()
        .unwrap_or_else(|| PathBuf::from("reports").join(&sc.file.name));
    let (summary, trace_bytes) = run_to_memory(&sc, &opts)?;
    if check {
        let (again, _) = run_to_memory(&sc, &opts)?;
        if again.trace_hash != summary.trace_hash {
            return Err(CheckFailed(format!(
                "not deterministic: trace {} then {}",
                summary.trace_hash, again.trace_hash
            ))
            .into());
        }
        eprintln!(
            "determinism: two runs gave the same trace {}",
            summary.trace_hash
        );
    }
    // The same model behaviour (scenario and seed) under other engines.
    let mut runs = vec![summary];
    for p in compare {
        let o = RunOptions {
            profile: Some(*p),
            ..opts.clone()
        };
        runs.push(run_to_memory(&sc, &o)?.0);
    }
    // Expectations hold for the scenario as written; an overridden engine is a what-if.
    let verdicts = if engine.is_set() {
        vec![]
    } else {
        loopsim_world::expect::check(&sc.file.expect, &runs[0])
    };
    let rows: Vec<RunMetrics> = runs
        .iter()
        .map(|s| RunMetrics::from_summary(s, ""))
        .collect();
    let rerun = rerun_command(path, runs[0].seed, engine);
    let (json, pairs, plots) = write_report(&dir, &runs, &rows, &verdicts, &rerun, &trace_bytes)?;
    match format {
        Format::Json => println!("{}", String::from_utf8_lossy(&json)),
        Format::Text => {
            print!(
                "{}",
                loopsim_report::summary::render(&runs[0], &verdicts, &rerun)
            );
            if runs.len() > 1 {
                println!();
                for (_, m) in &pairs {
                    println!(
                        "{:<16} {:<10} {:>6} calls  ${:>8.2}  {:>6.1} min  stop: {}",
                        m.profile,
                        m.platform,
                        m.calls,
                        m.cost_usd,
                        m.duration_min,
                        if m.stopped() {
                            format!("{} at call {}", m.stop_code, m.stop_call.unwrap_or(0))
                        } else {
                            "-".into()
                        }
                    );
                }
            }
            println!(
                "wrote {}/{{summary.md, summary.json, runs.csv, trace.jsonl}} and {} plots",
                dir.display(),
                plots.len()
            );
        }
    }
    if let Some(v) = verdicts.iter().find(|v| !v.pass) {
        return Err(CheckFailed(format!(
            "expectation {} failed: expected {}, got {} (rerun: {rerun})",
            v.key, v.expected, v.actual
        ))
        .into());
    }
    Ok(())
}

/// Writes a run's trace, plots, summary.json, runs.csv and summary.md into `dir`, each file
/// whole or not at all.
#[allow(clippy::type_complexity)]
fn write_report(
    dir: &std::path::Path,
    runs: &[RunSummary],
    rows: &[RunMetrics],
    verdicts: &[loopsim_world::expect::Verdict],
    rerun: &str,
    trace_bytes: &[u8],
) -> Result<(Vec<u8>, Vec<(RunSummary, RunMetrics)>, Vec<String>)> {
    let ctx = |f: &str| format!("{}: cannot write", dir.join(f).display());
    write_atomic(&dir.join("trace.jsonl"), trace_bytes).with_context(|| ctx("trace.jsonl"))?;
    let plots = plots::run_plots(dir, runs).with_context(|| ctx("plots"))?;
    let lean: Vec<RunSummary> = runs
        .iter()
        .map(|s| {
            let mut s = s.clone();
            s.agents.iter_mut().for_each(|a| a.series = None);
            s
        })
        .collect();
    let json = serde_json::to_vec_pretty(&serde_json::json!({
        "summary": &lean[0],
        "expectations": &verdicts,
        "compared": &lean[1..],
        "metrics": &rows,
    }))?;
    write_atomic(&dir.join("summary.json"), &json).with_context(|| ctx("summary.json"))?;
    write_atomic(&dir.join("runs.csv"), &metrics::to_csv(rows)?)
        .with_context(|| ctx("runs.csv"))?;
    let pairs: Vec<(RunSummary, RunMetrics)> = lean.into_iter().zip(rows.iter().cloned()).collect();
    let md = loopsim_report::markdown::run_report(&pairs, verdicts, &plots, rerun);
    write_atomic(&dir.join("summary.md"), md.as_bytes()).with_context(|| ctx("summary.md"))?;
    Ok((json, pairs, plots))
}

fn replay_cmd(
    path: &std::path::Path,
    engine: &EngineArgs,
    format: Format,
    out: Option<&PathBuf>,
) -> Result<()> {
    let recorded = std::fs::read(path)
        .with_context(|| format!("{}: cannot read the trace", path.display()))?;
    let shown = path.display().to_string();
    let h = trace::read_header(&recorded, &shown)?;
    let sc = load_scenario(std::path::Path::new(&h.scenario_path))
        .with_context(|| format!("{shown}: the trace's scenario"))?;
    if sc.content_hash.hex() != h.scenario_hash {
        bail!(
            "{shown}:1: scenario_hash: {} has changed since the trace was recorded",
            h.scenario_path
        );
    }
    let order = if h.schedule == "shuffle" {
        Order::Shuffle
    } else {
        Order::Fifo
    };
    // A recorded session's trace replays its own decisions: no profile override.
    let own_decisions = h.engine.as_deref() == Some("recorded");
    let base = RunOptions {
        seed: Some(h.seed),
        profile: if own_decisions {
            None
        } else {
            Some(h.profile.parse()?)
        },
        platform: if own_decisions {
            None
        } else {
            h.platform.clone()
        },
        order,
        config_yaml: None,
        record_series: false,
        engine: EngineChoice::Builtin,
    };
    if !engine.is_set() {
        let (_, bytes) = run_to_memory(&sc, &base)?;
        return match trace::first_difference(&recorded, &bytes) {
            None => {
                println!(
                    "identical: {} lines re-executed byte for byte ({} seed {})",
                    bytes.iter().filter(|&&b| b == b'\n').count(),
                    h.scenario,
                    h.seed
                );
                Ok(())
            }
            Some((line, old, new)) => Err(CheckFailed(format!(
                "traces differ at line {line}\n  recorded: {old}\n  replayed: {new}"
            ))
            .into()),
        };
    }
    let series = RunOptions {
        record_series: true,
        ..base.clone()
    };
    let (before, _) = run_to_memory(&sc, &series)?;
    let mut what_if = engine.options()?;
    what_if.seed = Some(h.seed);
    what_if.order = order;
    what_if.record_series = true;
    what_if.profile = what_if
        .profile
        .or(base.profile)
        .or_else(|| h.profile.parse().ok());
    what_if.platform = what_if.platform.or(base.platform.clone());
    let (after, after_trace) = run_to_memory(&sc, &what_if)?;
    let dir = out
        .cloned()
        .unwrap_or_else(|| PathBuf::from("reports").join(format!("{}-what-if", sc.file.name)));
    let runs = [before.clone(), after.clone()];
    let rows: Vec<RunMetrics> = runs
        .iter()
        .map(|s| RunMetrics::from_summary(s, ""))
        .collect();
    let rerun = format!("loopsim replay {shown}");
    write_report(&dir, &runs, &rows, &[], &rerun, &after_trace)?;
    // The headers differ by construction (the engine); compare the events.
    // The headers and footers differ by construction (the engine); compare the events.
    let body = |t: &[u8]| {
        let start = t
            .iter()
            .position(|&b| b == b'\n')
            .map_or(t.len(), |i| i + 1);
        let end = t[..t.len().saturating_sub(1)]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(start, |i| (i + 1).max(start));
        t[start..end].to_vec()
    };
    let diverged = trace::first_difference(&body(&recorded), &body(&after_trace)).map(|d| d.0 + 1);
    if format == Format::Json {
        println!(
            "{}",
            serde_json::to_string_pretty(
                &serde_json::json!({ "recorded": &before, "counterfactual": &after, "first_divergent_line": diverged })
            )?
        );
        return Ok(());
    }
    let unknown = before.price_unknown || after.price_unknown;
    let usd = |x: f64| loopsim_report::summary::usd(x, unknown);
    let row = |name: &str, s: &RunSummary| {
        let p = &s.agents[0];
        format!(
            "| {name} | {} {} | {} | {} | {} | {} | {:.1} min | {} | {} |",
            if s.recorded { "recorded" } else { &s.profile },
            s.platform.as_deref().unwrap_or("-"),
            s.total.model_calls,
            s.total.input_tokens,
            s.total.output_tokens,
            usd(s.total.cost_usd()),
            s.duration_us as f64 / 60e6,
            p.first_warning_call
                .map_or("-".into(), |c| format!("call {c}")),
            p.stop
                .as_ref()
                .map_or("-".into(), |st| format!("call {} ({})", st.call, st.code)),
        )
    };
    println!(
        "| run | engine | calls | input tokens | output tokens | cost | duration | first warning | stop |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    println!("{}", row("recorded", &before));
    println!("{}", row("counterfactual", &after));
    println!(
        "saved: {} calls, {} input tokens, {}, {:.1} min; first divergence at trace line {}",
        before.total.model_calls as i64 - after.total.model_calls as i64,
        before.total.input_tokens as i64 - after.total.input_tokens as i64,
        usd(before.total.cost_usd() - after.total.cost_usd()),
        (before.duration_us as f64 - after.duration_us as f64) / 60e6,
        diverged.map_or("none".into(), |l| l.to_string())
    );
    if let Some(n) = &before.source_note {
        println!("{n}");
    }
    println!(
        "wrote {}/{{summary.md, summary.json, runs.csv, trace.jsonl}} and plots",
        dir.display()
    );
    Ok(())
}

fn import_cmd(
    database: &std::path::Path,
    session: Option<&str>,
    list: bool,
    agent_log: Option<&std::path::Path>,
    prices: Option<&std::path::Path>,
    profile: Option<ProfileName>,
    out: Option<&PathBuf>,
) -> Result<()> {
    let prices = match prices {
        Some(p) => Prices::with_file(p)?,
        None => Prices::built_in(),
    };
    if list {
        let (rows, missing) = loopsim_import::list(database, &prices)?;
        println!("| session | source | model | started (UTC) | calls | tokens | cost |");
        println!("| --- | --- | --- | --- | --- | --- | --- |");
        for l in &rows {
            let s = &l.session;
            println!(
                "| {} | {} | {} | {} | {} | {} | {} |",
                s.id,
                s.source.as_deref().unwrap_or("-"),
                s.model.as_deref().unwrap_or("-"),
                s.started_at.map_or("-".into(), loopsim_import::utc),
                l.calls,
                l.tokens,
                l.cost_usd.map_or("unknown".into(), |c| format!("${c:.2}"))
            );
        }
        if !missing.is_empty() {
            println!("columns this database lacks: {}", missing.join(", "));
        }
        return Ok(());
    }
    let session = session.context("--session is required (or --list)")?;
    let imported = loopsim_import::import(&loopsim_import::Request {
        database,
        session,
        agent_log,
        prices: &prices,
        profile,
    })?;
    let dir = out
        .cloned()
        .unwrap_or_else(|| PathBuf::from("imported").join(&imported.name));
    let scenario_path = dir.join("scenario.toml");
    let shown = scenario_path.display().to_string();
    // Validated and run before anything is written.
    let sc = Scenario::parse(&imported.scenario, &shown)
        .with_context(|| "the imported scenario does not load (a loopsim bug)")?;
    let opts = RunOptions {
        record_series: true,
        ..RunOptions::default()
    };
    let (summary, trace_bytes) = run_to_memory(&sc, &opts)?;
    let r = &imported.rebuilt;
    if summary.total.model_calls != r.model_calls() as u64 || summary.hit_horizon {
        bail!(
            "{}: session {}: the replay makes {} of the {} recorded model calls{}; nothing was written (please report this session's shape)",
            database.display(),
            imported.session.id,
            summary.total.model_calls,
            r.model_calls(),
            if summary.hit_horizon {
                " before its horizon"
            } else {
                ""
            }
        );
    }
    // Everything goes to a scratch folder first and moves in at the end, so a failure leaves
    // neither half a file nor a new scenario beside an old trace.
    let scratch = dir.with_file_name(format!(
        ".{}.partial-{}",
        dir.file_name()
            .map_or("import".into(), |n| n.to_string_lossy()),
        std::process::id()
    ));
    let written = (|| -> Result<Vec<String>> {
        let runs = [summary.clone()];
        let rows = vec![RunMetrics::from_summary(&runs[0], "")];
        let rerun = format!("loopsim replay {}", dir.join("trace.jsonl").display());
        write_report(&scratch, &runs, &rows, &[], &rerun, &trace_bytes)?;
        write_atomic(&scratch.join("scenario.toml"), imported.scenario.as_bytes())?;
        let mut names = Vec::new();
        for e in std::fs::read_dir(&scratch)? {
            names.push(e?.file_name().to_string_lossy().into_owned());
        }
        // The scenario last: a failed move leaves no new scenario beside an old trace.
        names.sort_by_key(|n| (n == "scenario.toml", n.clone()));
        std::fs::create_dir_all(&dir)?;
        for n in &names {
            std::fs::rename(scratch.join(n), dir.join(n))?;
        }
        Ok(names)
    })();
    let _ = std::fs::remove_dir_all(&scratch);
    written.with_context(|| format!("{}: cannot write", dir.display()))?;
    let runs = [summary];
    let decisions: Vec<String> = r
        .turns
        .iter()
        .flat_map(|t| &t.calls)
        .flat_map(|c| &c.calls)
        .filter_map(|c| c.decision.as_ref())
        .map(|d| {
            format!(
                "{} {} (count {})",
                d.action.as_str(),
                d.code.as_str(),
                d.count
            )
        })
        .collect();
    println!(
        "session {}: {} rows ({} inactive, {} re-inserted by compaction), {}, {}, {}",
        imported.session.id,
        r.rows,
        r.inactive_rows,
        r.compaction_rows,
        plural(r.turns.len(), "turn"),
        plural(r.model_calls(), "model call"),
        plural(r.tool_calls(), "tool call")
    );
    let notices = r
        .turns
        .iter()
        .flat_map(|t| &t.calls)
        .flat_map(|c| &c.calls)
        .filter(|c| c.notice.is_some())
        .count();
    println!(
        "recorded guardrail actions: {}; {}",
        if decisions.is_empty() {
            "none".to_string()
        } else {
            decisions.join(", ")
        },
        plural(notices, "stall-guard notice")
    );
    if r.stubs_restored + r.stubs_unresolved > 0 {
        println!(
            "identical-result references: {} restored to the earlier result, {} not found",
            r.stubs_restored, r.stubs_unresolved
        );
    }
    println!("{}", imported.note);
    println!("scenario profile: {}", imported.profile);
    match &imported.agent_log {
        Some(p) => println!(
            "agent.log: {} ({} lines for this session)",
            p.display(),
            imported.logged_calls
        ),
        None => println!("agent.log: none found (give --agent-log)"),
    }
    println!("estimated: {}", imported.estimated.join(", "));
    if !imported.missing_columns.is_empty() {
        println!(
            "not in this database: {}",
            imported.missing_columns.join(", ")
        );
    }
    if r.runtime_replies + r.refused_calls > 0 {
        println!(
            "not model calls: {} replies Hermes wrote itself (after a halt or an interrupt); refused calls: {}",
            r.runtime_replies, r.refused_calls
        );
    }
    if r.clamped_times > 0 {
        println!(
            "timestamps: {} rows jumped by more than 30 days and were taken as no time passing",
            r.clamped_times
        );
    }
    for w in &imported.warnings {
        println!("warning: {w}");
    }
    if r.orphan_results + r.missing_results > 0 {
        println!(
            "unmatched: {} tool results without a call, {} calls without a result",
            r.orphan_results, r.missing_results
        );
    }
    let s = &runs[0];
    println!(
        "as recorded: {} calls, {} input tokens, {}, {:.1} min; exits {}",
        s.total.model_calls,
        s.total.input_tokens,
        loopsim_report::summary::usd(s.total.cost_usd(), s.price_unknown),
        s.duration_us as f64 / 60e6,
        s.agents[0].exit_reasons.join(", ")
    );
    println!(
        "wrote {shown} and {}/{{trace.jsonl, summary.md, summary.json, runs.csv}} and plots",
        dir.display()
    );
    println!(
        "what if: loopsim replay {} --profile hermes-main [--platform telegram] [--config my-config.yaml]",
        dir.join("trace.jsonl").display()
    );
    Ok(())
}

fn scenario_paths(dir: &std::path::Path) -> Result<Vec<PathBuf>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("{}: cannot read the scenario folder", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    paths.sort();
    Ok(paths)
}

/// What a sweep folder holds besides its rows: the spec and how many jobs the whole sweep has.
#[derive(serde::Serialize, serde::Deserialize)]
struct Manifest {
    spec: sweep::SweepSpec,
    total_jobs: u64,
    shard: Option<(u64, u64)>,
}

#[allow(clippy::too_many_arguments)]
fn sweep_cmd(
    paths: &[PathBuf],
    grid: &[String],
    seeds: &str,
    profiles: &[String],
    platform: Option<&str>,
    out: Option<&PathBuf>,
    shard: Option<&str>,
) -> Result<()> {
    let paths = if paths.is_empty() {
        scenario_paths(std::path::Path::new("scenarios"))?
    } else {
        paths.to_vec()
    };
    let scenarios: Vec<Scenario> = paths
        .iter()
        .map(|p| load_scenario(p))
        .collect::<Result<_>>()?;
    let axes: Vec<sweep::Axis> = grid
        .iter()
        .map(|g| sweep::Axis::parse(g))
        .collect::<Result<_, _>>()?;
    let seeds = sweep::parse_seeds(seeds)?;
    let shard = shard.map(sweep::parse_shard).transpose()?;
    let spec = sweep::SweepSpec {
        scenarios: scenarios
            .iter()
            .map(|s| (s.path.clone(), s.content_hash.hex()))
            .collect(),
        profiles: profiles.to_vec(),
        platform: platform.map(str::to_string),
        axes,
        seeds: (seeds.start, seeds.end),
    };
    let plan = spec.plan()?;
    spec.validate(&scenarios)?;
    let total = plan.len();
    let (first, step) = match shard {
        Some((k, n)) => (k - 1, n),
        None => (0, 1),
    };
    let indices = (first..total).step_by(step as usize);
    let dir = out
        .cloned()
        .unwrap_or_else(|| PathBuf::from("reports/sweep"));
    let manifest = Manifest {
        spec,
        total_jobs: total,
        shard,
    };
    // Rows stream to sweep.csv and into the aggregation as they come: memory stays flat.
    let csv_path = dir.join("sweep.csv");
    let mut file = AtomicFile::create(&csv_path)
        .with_context(|| format!("{}: cannot write", csv_path.display()))?;
    file.write_all(&metrics::csv_header())?;
    let mut agg = sweep::Aggregator::new(!manifest.spec.profiles.is_empty());
    let mut runs = 0usize;
    let bar = progress_bar(total.saturating_sub(first).div_ceil(step));
    sweep::run_jobs(
        &manifest.spec,
        &plan,
        &scenarios,
        indices,
        &|| {
            if let Some(b) = &bar {
                b.inc(1);
            }
        },
        &metrics::csv_line,
        &mut |row, line| {
            runs += 1;
            agg.push(&row);
            file.write_all(&line).map_err(|e| sweep::SweepError::Run {
                job: row.job,
                message: format!("writing sweep.csv: {e}"),
            })
        },
    )?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    file.commit()
        .with_context(|| format!("{}: cannot write", csv_path.display()))?;
    finish_sweep(&dir, &manifest, runs, agg)
}

fn progress_bar(len: u64) -> Option<indicatif::ProgressBar> {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let b = indicatif::ProgressBar::new(len);
    b.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} runs, {eta} left").ok()?,
    );
    Some(b)
}

/// Writes the manifest, and for a whole sweep the aggregate, its plots and summary.md.
fn finish_sweep(
    dir: &std::path::Path,
    manifest: &Manifest,
    runs: usize,
    agg: sweep::Aggregator,
) -> Result<()> {
    let ctx = |f: &str| format!("{}: cannot write", dir.join(f).display());
    write_atomic(
        &dir.join("sweep.json"),
        &serde_json::to_vec_pretty(manifest)?,
    )
    .with_context(|| ctx("sweep.json"))?;
    if manifest.shard.is_some() {
        println!(
            "shard: {runs} runs written to {} (combine shards with `loopsim merge`)",
            dir.display()
        );
        return Ok(());
    }
    let aggs = agg.finish();
    let mut w = csv::Writer::from_writer(Vec::new());
    for a in &aggs {
        w.serialize(a)?;
    }
    write_atomic(&dir.join("aggregate.csv"), &w.into_inner()?)
        .with_context(|| ctx("aggregate.csv"))?;
    let plots = plots::sweep_plots(dir, &manifest.spec, &aggs)?;
    let md = sweep::summary_md(&manifest.spec, runs, &aggs, &plots);
    write_atomic(&dir.join("summary.md"), md.as_bytes()).with_context(|| ctx("summary.md"))?;
    print!("{md}");
    println!(
        "\nwrote {}/{{sweep.csv, aggregate.csv, summary.md, sweep.json}} and {} plots",
        dir.display(),
        plots.len()
    );
    Ok(())
}

fn merge_cmd(shards: &[PathBuf], out: &std::path::Path) -> Result<()> {
    let mut parts = Vec::new();
    let mut total = None;
    for dir in shards {
        let m: Manifest = serde_json::from_slice(
            &std::fs::read(dir.join("sweep.json"))
                .with_context(|| format!("{}: not a sweep folder", dir.display()))?,
        )
        .with_context(|| format!("{}/sweep.json", dir.display()))?;
        if total.is_some_and(|t| t != m.total_jobs) {
            bail!("{}: the shards come from different sweeps", dir.display());
        }
        total = Some(m.total_jobs);
        let rows = metrics::from_csv(
            &std::fs::read(dir.join("sweep.csv"))
                .with_context(|| format!("{}/sweep.csv", dir.display()))?,
        )
        .with_context(|| format!("{}/sweep.csv", dir.display()))?;
        parts.push((m.spec, rows));
    }
    let total = total.unwrap_or(0);
    let (spec, rows) = sweep::merge(parts, total)?;
    let manifest = Manifest {
        spec,
        total_jobs: total,
        shard: None,
    };
    write_atomic(&out.join("sweep.csv"), &metrics::to_csv(&rows)?)
        .with_context(|| format!("{}: cannot write", out.join("sweep.csv").display()))?;
    let mut agg = sweep::Aggregator::new(!manifest.spec.profiles.is_empty());
    rows.iter().for_each(|r| agg.push(r));
    finish_sweep(out, &manifest, rows.len(), agg)
}

/// Scenario files from paths that may be files or folders (default: scenarios/).
fn collect_scenarios(paths: &[PathBuf]) -> Result<Vec<Scenario>> {
    let paths = if paths.is_empty() {
        vec![PathBuf::from("scenarios")]
    } else {
        paths.to_vec()
    };
    let mut files = Vec::new();
    for p in paths {
        if p.is_dir() {
            files.extend(scenario_paths(&p)?);
        } else {
            files.push(p);
        }
    }
    files.iter().map(|p| load_scenario(p)).collect()
}

fn check_cmd(
    paths: &[PathBuf],
    junit: Option<&PathBuf>,
    save: Option<&PathBuf>,
    format: Format,
) -> Result<()> {
    let scenarios = collect_scenarios(paths)?;
    let cases = check::run_checks(&scenarios)?;
    if let Some(j) = junit {
        write_atomic(j, check::junit_xml(&cases).as_bytes())
            .with_context(|| format!("{}: cannot write", j.display()))?;
    }
    if let Some(b) = save {
        let baseline = check::Baseline::from_cases(&cases);
        write_atomic(b, &serde_json::to_vec_pretty(&baseline)?)
            .with_context(|| format!("{}: cannot write", b.display()))?;
    }
    match format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&cases)?),
        Format::Text => print!("{}", check::text_report(&cases)),
    }
    let failed = cases.iter().filter(|c| !c.passed()).count();
    if failed > 0 {
        return Err(CheckFailed(format!("{failed} of {} checks failed", cases.len())).into());
    }
    Ok(())
}

fn parse_fraction(s: &str) -> Result<f64> {
    let t = s.trim();
    let v: f64 = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|p| p / 100.0),
        None => t.parse::<f64>(),
    }
    .map_err(|_| {
        anyhow::anyhow!(
            "--max-increase `{s}`: expected a percentage like 5% or a fraction like 0.05"
        )
    })?;
    if !(v.is_finite() && v >= 0.0) {
        bail!("--max-increase `{s}`: must not be negative");
    }
    Ok(v)
}

fn gate_cmd(
    path: &std::path::Path,
    max_increase: &str,
    any: bool,
    update: bool,
    bmf: Option<&PathBuf>,
) -> Result<()> {
    let tolerance = parse_fraction(max_increase)?;
    let text = std::fs::read(path)
        .with_context(|| format!("{}: cannot read the baseline", path.display()))?;
    let baseline: check::Baseline = serde_json::from_slice(&text)
        .with_context(|| format!("{}: not a loopsim baseline", path.display()))?;
    if baseline.format != check::Baseline::FORMAT {
        bail!(
            "{}: format is `{}`, expected `{}`",
            path.display(),
            baseline.format,
            check::Baseline::FORMAT
        );
    }
    let mut files: Vec<PathBuf> = baseline
        .entries
        .iter()
        .map(|e| PathBuf::from(&e.path))
        .collect();
    files.dedup();
    let scenarios = collect_scenarios(&files)?;
    let cases = check::run_checks(&scenarios)?;
    let current = check::Baseline::from_cases(&cases);
    if let Some(b) = bmf {
        write_atomic(b, &serde_json::to_vec_pretty(&current.bmf())?)
            .with_context(|| format!("{}: cannot write", b.display()))?;
    }
    let diffs = check::gate(&baseline, &current, tolerance, any);
    print!("{}", check::gate_report(&diffs, current.entries.len()));
    if update {
        write_atomic(path, &serde_json::to_vec_pretty(&current)?)
            .with_context(|| format!("{}: cannot write", path.display()))?;
        println!("baseline updated: {}", path.display());
        return Ok(());
    }
    let failing = diffs.iter().filter(|d| d.fails).count();
    if failing > 0 {
        return Err(CheckFailed(format!(
            "gate failed: {failing} metrics worse than {} (rerun with --update to accept)",
            path.display()
        ))
        .into());
    }
    Ok(())
}

fn list_cmd(dir: &std::path::Path) -> Result<()> {
    for p in scenario_paths(dir)? {
        let sc = load_scenario(&p)?;
        let text = sc
            .file
            .description
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let first = text.split_inclusive(". ").next().unwrap_or("").trim_end();
        println!(
            "{:<40} {:<8} {:<16} {}",
            sc.file.name,
            sc.file.label.to_string(),
            sc.profile.to_string(),
            first
        );
    }
    Ok(())
}

fn load_config(
    profile: ProfileName,
    config: Option<&PathBuf>,
    platform: Option<&str>,
) -> Result<EngineConfig> {
    let Some(path) = config else {
        return Ok(EngineConfig::new(profile, platform));
    };
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("{}: cannot read the config file", path.display()))?;
    let cfg = EngineConfig::from_yaml(profile, platform, &text, &path.display().to_string())?;
    for note in &cfg.notes {
        eprintln!(
            "loopsim: {}:{}: `{}`: {} (Hermes does the same)",
            path.display(),
            note.line,
            note.key,
            note.message
        );
    }
    Ok(cfg)
}

fn guard(profile: ProfileName, config: Option<&PathBuf>, platform: Option<&str>) -> Result<()> {
    let cfg = load_config(profile, config, platform)?;
    let mut session = GuardSession::new(&cfg);
    let stdin = std::io::stdin().lock();
    let mut out = BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let mut buf = Vec::with_capacity(256);
    for line in stdin.split(b'\n') {
        let line = line.context("reading stdin")?;
        buf.clear();
        let handled = session.handle_line(&line, &mut buf);
        out.write_all(&buf)?;
        if let Err(e) = handled {
            out.flush()?;
            return Err(anyhow::Error::new(e).context("stdin"));
        }
    }
    out.flush()?;
    Ok(())
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { BAD_INPUT } else { 0 });
        }
    };
    let result = match &cli.command {
        Command::Guard {
            profile,
            config,
            platform,
        } => guard(*profile, config.as_ref(), platform.as_deref()),
        Command::Run {
            scenario,
            engine,
            seed,
            out,
            schedule,
            check_determinism,
            format,
            compare_profiles,
            guard_engine: which,
        } => parse_engine(which).and_then(|choice| {
            run_cmd(
                scenario,
                engine,
                *seed,
                out.as_ref(),
                *schedule,
                *check_determinism,
                *format,
                compare_profiles,
                choice,
            )
        }),
        Command::Diff {
            scenario,
            engines,
            engine_args,
            seed,
        } => diff_cmd(scenario, engines, engine_args, *seed),
        Command::Replay {
            trace,
            engine,
            format,
            out,
        } => replay_cmd(trace, engine, *format, out.as_ref()),
        Command::Import {
            database,
            session,
            list,
            agent_log,
            prices,
            profile,
            out,
        } => import_cmd(
            database,
            session.as_deref(),
            *list,
            agent_log.as_deref(),
            prices.as_deref(),
            *profile,
            out.as_ref(),
        ),
        Command::List { dir } => list_cmd(dir),
        Command::Check {
            paths,
            junit,
            save_baseline,
            format,
        } => check_cmd(paths, junit.as_ref(), save_baseline.as_ref(), *format),
        Command::Gate {
            baseline,
            max_increase,
            fail_on_any_change,
            update,
            bmf,
        } => gate_cmd(
            baseline,
            max_increase,
            *fail_on_any_change,
            *update,
            bmf.as_ref(),
        ),
        Command::Sweep {
            scenarios,
            grid,
            seeds,
            profiles,
            platform,
            out,
            shard,
        } => sweep_cmd(
            scenarios,
            grid,
            seeds,
            profiles,
            platform.as_deref(),
            out.as_ref(),
            shard.as_deref(),
        ),
        Command::Merge { shards, out } => merge_cmd(shards, out),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.downcast_ref::<CheckFailed>().is_some() => {
            eprintln!("loopsim: {e:#}");
            ExitCode::from(FAILED)
        }
        Err(e) => {
            eprintln!("loopsim: error: {e:#}");
            ExitCode::from(BAD_INPUT)
        }
    }
}
