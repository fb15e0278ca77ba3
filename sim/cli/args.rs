//! The command line: every command, argument and flag, with its help text.
// Its doc comments are the command line's help text, written for a terminal, not rustdoc.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]

use std::ops::Range;
use std::path::PathBuf;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Parser, Subcommand, ValueEnum};
use loopsim_engine::profile::ProfileName;

/// Deterministic simulation and benchmarking of LLM agent-loop governance.
///
/// Ranges in flags: `START..END` stops before END, `START..=END` includes it (`--seeds 0..16`
/// is 16 seeds; `--grid KEY=2..=8` is 2 to 8). Exit codes: 0 done, 1 a check or expectation
/// failed, 2 bad input or usage.
#[derive(Parser)]
#[command(name = "loopsim", version, about, long_about)]
pub struct Cli {
    /// Print no reports on stdout (files are still written; errors and warnings still go to
    /// stderr; `--format json` output is still printed).
    #[arg(long, short, global = true)]
    pub quiet: bool,
    #[command(subcommand)]
    pub command: Command,
}

/// A profile flag's parser: clap lists the names and suggests the nearest.
pub fn profile_parser() -> impl TypedValueParser<Value = ProfileName> {
    PossibleValuesParser::new(ProfileName::ALL.map(|p| p.as_str()))
        .map(|s| s.parse::<ProfileName>().expect("a listed profile"))
}

#[derive(Subcommand)]
pub enum Command {
    /// Run a scenario: print a summary and write its report, trace and plots.
    Run {
        /// The scenario file, or the name of a scenario of the built-in suite.
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
        /// Check the simulator's invariants after every event (`loopsim explore` does): a
        /// broken one fails the run with its event (exit 1).
        #[arg(long)]
        check_invariants: bool,
        /// The seed also draws provider faults (429, 500) for models without their own, as
        /// `loopsim explore --faults` does for each seed.
        #[arg(long)]
        seeded_faults: bool,
        #[command(flatten)]
        output: FormatArg,
        /// Also run the same scenario and seed under these profiles (comma-separated) and add
        /// the counterfactual table.
        #[arg(long, value_delimiter = ',', value_parser = profile_parser())]
        compare_profiles: Vec<ProfileName>,
        /// Also run the same scenario and seed with each of these config.yaml files laid over
        /// the scenario's config (comma-separated), and add the counterfactual table.
        #[arg(long, value_delimiter = ',')]
        compare_configs: Vec<PathBuf>,
        /// Which engine decides guardrails: builtin, or hermes-python[=PYTHON] (the installed
        /// hermes-agent package through bridges/hermes/adapter.py).
        #[arg(long = "engine", default_value = "builtin", value_parser = EngineName::parse)]
        guard_engine: EngineName,
    },
    /// Re-run a trace: prove it byte-identical, or (with --profile, --config or --platform)
    /// show what another engine would have done, with its report and plots.
    Replay {
        /// A trace.jsonl written by `run`, `import` or a what-if; it carries its scenario.
        trace: PathBuf,
        #[command(flatten)]
        engine: EngineArgs,
        #[command(flatten)]
        output: FormatArg,
        /// Where a what-if writes its report and plots (default:
        /// reports/<scenario>-what-if-<profile>-<platform>-<config>/).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Import a Hermes session (state.db, agent.log) as a scenario and trace that replay it;
    /// then `loopsim replay OUT/trace.jsonl --profile P` shows what P would have done.
    Import {
        /// Hermes's state database ($HERMES_HOME/state.db); read, never written.
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
        #[arg(long, value_parser = profile_parser())]
        profile: Option<ProfileName>,
        /// Where to write (default: imported/<scenario name>/).
        #[arg(long)]
        out: Option<PathBuf>,
        #[command(flatten)]
        output: FormatArg,
    },
    /// Sweep engine settings over seeds, scenarios and profiles, in parallel.
    Sweep {
        /// Scenario files or folders (default: the suite).
        scenarios: Vec<PathBuf>,
        /// A swept Hermes config key: KEY=START..END[:STEP] (END excluded),
        /// KEY=START..=END[:STEP] (END included) or KEY=A,B,C; or a fault rate for every
        /// model, faults.RATE=A,B,C (rate_limit, server_error, dropped_stream, unknown_tool,
        /// malformed_args, unknown_tool_in_batch). Repeat for more keys.
        #[arg(long = "grid")]
        grid: Vec<String>,
        /// Seeds: START..END (END excluded), START..=END, or one seed.
        #[arg(long, default_value = "0..8", value_parser = seeds_parser)]
        seeds: Range<u64>,
        /// Profiles, comma-separated (default: each scenario's own).
        #[arg(long, value_delimiter = ',')]
        profiles: Vec<String>,
        /// The platform for every run (default: each scenario's).
        #[arg(long)]
        platform: Option<String>,
        /// A Hermes config.yaml laid over every scenario's config (the grid's keys win).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Where to write (default: reports/sweep).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Run only the jobs of shard K of N (K/N); combine shards with `loopsim merge`.
        #[arg(long, value_parser = shard_parser)]
        shard: Option<(u64, u64)>,
        #[command(flatten)]
        suite: SuiteArg,
        #[command(flatten)]
        output: FormatArg,
    },
    /// Combine the outputs of `loopsim sweep --shard K/N` into the unsharded sweep's output.
    Merge {
        /// The shards' output folders.
        #[arg(required = true)]
        shards: Vec<PathBuf>,
        /// Where to write the merged sweep.
        #[arg(long)]
        out: PathBuf,
        #[command(flatten)]
        output: FormatArg,
    },
    /// The same scenarios under several runtimes' governance, each at its defaults: where each
    /// stops the loops, and which healthy runs it stops (docs/runtimes.md).
    Compare {
        /// Scenario files or folders (default: the suite).
        paths: Vec<PathBuf>,
        /// The profiles to compare, in the table's order.
        #[arg(long, value_delimiter = ',', value_parser = profile_parser(),
              default_value = "hermes-main,hermes-0.19.0,openai-agents-0.24,pydantic-ai-2.68,langgraph-1.2,smolagents-1.26,openhands-sdk-1.58,react-loop-article")]
        profiles: Vec<ProfileName>,
        /// Where to write summary.md and summary.json (default: reports/compare).
        #[arg(long)]
        out: Option<PathBuf>,
        #[command(flatten)]
        suite: SuiteArg,
        #[command(flatten)]
        output: FormatArg,
    },
    /// Check scenarios' expectations over their seeds and profiles (exit 1 if any fails).
    /// A `healthy` scenario must finish without a stop even without an [expect] block.
    Check {
        /// Scenario files or folders (default: the suite).
        paths: Vec<PathBuf>,
        /// Also write JUnit XML (one test case per scenario x seed x profile).
        #[arg(long)]
        junit: Option<PathBuf>,
        /// Print how often the runs reached each coverage mark (decision codes, exit reasons,
        /// refund sites, recovery paths) and fail where a scenario's `[expect] covers` claims
        /// a mark none of its runs reached.
        #[arg(long)]
        coverage: bool,
        /// Write the exact metrics of every run as a baseline for `loopsim gate`.
        #[arg(long)]
        save_baseline: Option<PathBuf>,
        /// A Hermes config.yaml laid over every scenario's config.
        #[arg(long)]
        config: Option<PathBuf>,
        #[command(flatten)]
        suite: SuiteArg,
        #[command(flatten)]
        output: FormatArg,
    },
    /// Run many seeds of each scenario with the simulator's invariants checked after every
    /// event; print every seed that breaks one (exit 1), with the event and a rerun line.
    Explore {
        /// Scenario files or folders (default: the suite).
        paths: Vec<PathBuf>,
        /// Seeds to run per scenario: START..END (END excluded), START..=END or one seed.
        #[arg(long, default_value = "0..100", value_parser = seeds_parser)]
        seeds: Range<u64>,
        /// Also report seeds whose run fails the scenario's [expect] block.
        #[arg(long)]
        expectations: bool,
        /// Each seed also draws which provider fault sites are on: for each model without
        /// faults of its own, rate limits and server errors at a drawn rate, or none.
        #[arg(long)]
        faults: bool,
        /// Reduce each scenario's first failing run to a smaller scenario that fails the same
        /// way, written next to it as STEM.shrunk-seedN.toml.
        #[arg(long)]
        shrink: bool,
        /// A Hermes config.yaml laid over every scenario's config.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Run every scenario under this profile instead of its own (another runtime's
        /// governance too); scenarios it cannot express are left out, each with its reason.
        #[arg(long, value_parser = profile_parser())]
        profile: Option<ProfileName>,
        #[command(flatten)]
        suite: SuiteArg,
        #[command(flatten)]
        output: FormatArg,
    },
    /// Re-run a baseline's runs and fail when a metric got worse than allowed.
    Gate {
        /// A baseline written by `loopsim check --save-baseline`.
        #[arg(long)]
        baseline: PathBuf,
        /// Allowed increase per metric: `5%` (default) or `0.05`.
        #[arg(long, default_value = "5%", value_parser = fraction_parser)]
        max_increase: f64,
        /// Fail on any change, better or worse, and on moved stops and warnings.
        #[arg(long)]
        fail_on_any_change: bool,
        /// Rewrite the baseline with the current figures (and pass).
        #[arg(long)]
        update: bool,
        /// Also write the current figures in the Bencher Metric Format.
        #[arg(long)]
        bmf: Option<PathBuf>,
        /// A Hermes config.yaml laid over every scenario's config (compare it with the
        /// baseline's).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Where the baseline's scenarios are found by name (default: ./scenarios if it
        /// exists, else the built-in suite; then the paths the baseline recorded).
        #[arg(long)]
        suite: Option<PathBuf>,
        #[command(flatten)]
        output: FormatArg,
    },
    /// Run a scenario under two engines and report identical traces or the first divergence.
    Diff {
        /// The scenario file, or the name of a scenario of the built-in suite.
        scenario: PathBuf,
        /// The two engines (default: builtin and hermes-python).
        #[arg(long = "engine", value_parser = EngineName::parse)]
        engines: Vec<EngineName>,
        #[command(flatten)]
        engine_args: EngineArgs,
        /// The run seed (default: the scenario's).
        #[arg(long)]
        seed: Option<u64>,
        /// Compare the simulation with a real runtime's loop instead: hermes, openai-agents,
        /// pydantic-ai, langgraph or smolagents, each optionally =PYTHON (the simulation runs
        /// under --profile, default the runtime's tested version: hermes-0.19.0,
        /// openai-agents-0.24, pydantic-ai-2.68, langgraph-1.2, smolagents-1.26).
        #[arg(long, conflicts_with = "engines", value_parser = RuntimeName::parse)]
        live: Option<RuntimeName>,
        /// A live run's wall-clock limit in seconds.
        #[arg(long, default_value_t = 600.0)]
        timeout: f64,
        #[command(flatten)]
        output: FormatArg,
    },
    /// Run a scenario through a real runtime's loop (the scripted model and tools served to
    /// it) and report it beside the simulation (docs/live.md).
    Live {
        /// The scenario file, or the name of a scenario of the built-in suite.
        scenario: PathBuf,
        /// The runtime: hermes, openai-agents, pydantic-ai, langgraph or smolagents, each
        /// optionally =PYTHON (a Python that imports it).
        #[arg(long, default_value = "hermes", value_parser = RuntimeName::parse)]
        runtime: RuntimeName,
        #[command(flatten)]
        engine_args: EngineArgs,
        /// The run seed (default: the scenario's).
        #[arg(long)]
        seed: Option<u64>,
        /// The report folder (default: reports/NAME-live).
        #[arg(long)]
        out: Option<PathBuf>,
        /// The live run's wall-clock limit in seconds.
        #[arg(long, default_value_t = 600.0)]
        timeout: f64,
        #[command(flatten)]
        output: FormatArg,
    },
    /// Serve a scenario's scripted model (OpenAI Chat Completions) and tools on loopback,
    /// for any runtime to run against (docs/live.md).
    Serve {
        /// The scenario file, or the name of a scenario of the built-in suite.
        scenario: PathBuf,
        /// The run seed (default: the scenario's).
        #[arg(long)]
        seed: Option<u64>,
        /// Where to listen: loopback only (port 0: any free port).
        #[arg(long, default_value = "127.0.0.1:8642")]
        listen: String,
        #[command(flatten)]
        engine_args: EngineArgs,
    },
    /// List the scenarios, one line each.
    List {
        /// A scenario folder (default: ./scenarios if it exists, else the built-in suite).
        dir: Option<PathBuf>,
        #[command(flatten)]
        output: FormatArg,
    },
    /// Run the guardrail controller over JSON lines on stdin (docs/guard-protocol.md).
    Guard {
        /// Engine profile.
        #[arg(long, default_value = "hermes-main", value_parser = profile_parser())]
        profile: ProfileName,
        /// A Hermes config.yaml (its agent, tool_loop_guardrails and delegation sections).
        #[arg(long)]
        config: Option<PathBuf>,
        /// The platform the agent runs on (cli, telegram, cron, ...): unattended ones hard-stop.
        #[arg(long)]
        platform: Option<String>,
    },
    /// List what loopsim knows: profiles, platforms, guardrail decision codes, exit reasons and
    /// the Hermes config keys the engine reads.
    Codes {
        #[command(flatten)]
        output: FormatArg,
    },
    /// Load and check scenarios, config files and traces without running anything.
    Validate {
        /// Files or folders: .toml scenarios, .yaml/.yml Hermes configs, .jsonl traces.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// The profile a config file is checked under (default: every profile).
        #[arg(long, value_parser = profile_parser())]
        profile: Option<ProfileName>,
        #[command(flatten)]
        output: FormatArg,
    },
    /// Write a commented scenario to start from.
    Init {
        /// Where to write it.
        #[arg(default_value = "scenario.toml")]
        path: PathBuf,
        /// Replace an existing file.
        #[arg(long)]
        force: bool,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Write the manual pages (loopsim.1 and one per command).
    Man {
        /// The folder to write them to.
        #[arg(long, default_value = "man")]
        out: PathBuf,
    },
}

/// The engine a run uses, when not the scenario's own.
#[derive(clap::Args, Clone, Default)]
pub struct EngineArgs {
    /// Engine profile (default: the scenario's).
    #[arg(long, value_parser = profile_parser())]
    pub profile: Option<ProfileName>,
    /// A config.yaml laid over the scenario's config (its keys win): Hermes's keys, or the
    /// settings of the profile's runtime (`loopsim codes`).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// The platform (default: the scenario's): cli, telegram, cron, ... (`loopsim codes`).
    #[arg(long)]
    pub platform: Option<String>,
}

impl EngineArgs {
    pub fn is_set(&self) -> bool {
        self.profile.is_some() || self.config.is_some() || self.platform.is_some()
    }

    /// The flags as a command line would give them, for rerun lines.
    pub fn flags(&self) -> String {
        let mut s = String::new();
        if let Some(p) = self.profile {
            s += &format!(" --profile {p}");
        }
        if let Some(c) = &self.config {
            s += &format!(
                " --config {}",
                loopsim_report::shell::quote(&c.display().to_string())
            );
        }
        if let Some(p) = &self.platform {
            s += &format!(" --platform {}", loopsim_report::shell::quote(p));
        }
        s
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Schedule {
    Fifo,
    Shuffle,
}

/// Which engine decides the guardrails, as the line names it. Which Python and adapter
/// `hermes-python` means is found when the run starts (`inputs::engine_choice`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EngineName {
    /// loopsim's own engine.
    Builtin,
    /// The installed hermes-agent package through `bridges/hermes/adapter.py`, in this Python
    /// (default: `LOOPSIM_PYTHON`, then target/hermes-venv, then python3).
    HermesPython(Option<PathBuf>),
}

impl EngineName {
    /// `builtin`, `hermes-python` or `hermes-python=PYTHON`.
    pub fn parse(s: &str) -> Result<EngineName, String> {
        let bad =
            || format!("--engine `{s}`: expected builtin, hermes-python or hermes-python=PYTHON");
        match s.split_once('=') {
            None if s == "builtin" => Ok(EngineName::Builtin),
            None if s == "hermes-python" => Ok(EngineName::HermesPython(None)),
            Some(("hermes-python", py)) if !py.is_empty() => {
                Ok(EngineName::HermesPython(Some(PathBuf::from(py))))
            }
            _ => Err(bad()),
        }
    }
}

/// As the line wrote it (rerun lines and reports print it back).
impl std::fmt::Display for EngineName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EngineName::Builtin => f.write_str("builtin"),
            EngineName::HermesPython(None) => f.write_str("hermes-python"),
            EngineName::HermesPython(Some(py)) => write!(f, "hermes-python={}", py.display()),
        }
    }
}

/// A runtime with a live bridge, as the line names it: `NAME` or `NAME=PYTHON`. Which Python
/// that means when none is given is found when the run starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeName {
    pub runtime: loopsim_engine::profile::Runtime,
    pub python: Option<PathBuf>,
}

impl RuntimeName {
    /// `NAME` or `NAME=PYTHON`, NAME a runtime with a live bridge; the nearest name is
    /// suggested for a misspelled one.
    pub fn parse(s: &str) -> Result<RuntimeName, String> {
        let (name, python) = s.split_once('=').map_or((s, None), |(n, p)| (n, Some(p)));
        let live = crate::cmd::live::LIVE_RUNTIMES.iter().map(|r| r.0);
        let names: Vec<&str> = live.clone().map(|r| r.as_str()).collect();
        let Some(runtime) = live.into_iter().find(|r| r.as_str() == name) else {
            let near = loopsim_engine::config::keys::nearest(name, names.iter().copied())
                .map_or(String::new(), |n| format!(" (did you mean `{n}`?)"));
            return Err(format!(
                "--runtime `{s}`: expected NAME or NAME=PYTHON, NAME one of {}{near}",
                names.join(", ")
            ));
        };
        if python == Some("") {
            return Err(format!("--runtime `{s}`: the Python after `=` is empty"));
        }
        Ok(RuntimeName {
            runtime,
            python: python.map(PathBuf::from),
        })
    }
}

/// As the line wrote it (rerun lines print it back).
impl std::fmt::Display for RuntimeName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.runtime.as_str())?;
        match &self.python {
            Some(py) => write!(f, "={}", py.display()),
            None => Ok(()),
        }
    }
}

/// `--format`, the same for every command that prints a result.
#[derive(clap::Args, Clone, Copy)]
pub struct FormatArg {
    /// Print the result as text (Markdown tables where there are tables) or JSON.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// `--suite`, for the commands that run every scenario when given none.
#[derive(clap::Args, Clone)]
pub struct SuiteArg {
    /// The scenario folder used when no scenario is given (default: ./scenarios if it exists,
    /// else the built-in suite).
    #[arg(long = "suite")]
    pub dir: Option<PathBuf>,
}

/// `--seeds START..END`, `START..=END` or one seed, made a range once, here.
fn seeds_parser(s: &str) -> Result<Range<u64>, String> {
    loopsim_report::sweep::parse_seeds(s).map_err(|e| e.to_string())
}

/// `--shard K/N`.
fn shard_parser(s: &str) -> Result<(u64, u64), String> {
    loopsim_report::sweep::parse_shard(s).map_err(|e| e.to_string())
}

/// `--max-increase`: a percentage (`5%`) or a fraction (`0.05`), not negative.
fn fraction_parser(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let v: f64 = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|p| p / 100.0),
        None => t.parse::<f64>(),
    }
    .map_err(|_| {
        format!("--max-increase `{s}`: expected a percentage like 5% or a fraction like 0.05")
    })?;
    if !(v.is_finite() && v >= 0.0) {
        return Err(format!("--max-increase `{s}`: must not be negative"));
    }
    Ok(v)
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Json,
}
