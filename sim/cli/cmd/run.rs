//! `loopsim run`: one scenario and seed, its report and plots, and the same model behaviour
//! under other profiles or configs.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use loopsim_engine::profile::ProfileName;
use loopsim_report::markdown::ReportRun;
use loopsim_report::metrics::RunMetrics;
use loopsim_report::output::Outputs;
use loopsim_world::engine_bridge::EngineChoice;
use loopsim_world::scheduler::Order;
use loopsim_world::sim::RunOptions;

use crate::args::{EngineArgs, EngineName, Format, Schedule};
use crate::inputs;
use crate::out::{CheckFailed, emit, say, say_raw};
use crate::run_to_memory;
use loopsim_report::report_files;
use loopsim_report::shell::quote;

pub struct Args<'a> {
    pub path: &'a Path,
    pub engine: &'a EngineArgs,
    pub seed: Option<u64>,
    pub out: Option<&'a PathBuf>,
    pub schedule: Schedule,
    pub check: bool,
    pub check_invariants: bool,
    pub seeded_faults: bool,
    pub format: Format,
    pub compare_profiles: &'a [ProfileName],
    pub compare_configs: &'a [PathBuf],
    pub guard_engine: &'a EngineName,
}

/// Every flag that changes the result, so the line reproduces the run.
fn rerun_command(a: &Args<'_>, seed: u64) -> String {
    let mut cmd = format!(
        "loopsim run {} --seed {seed}",
        quote(&a.path.display().to_string())
    );
    cmd += &a.engine.flags();
    if a.schedule == Schedule::Shuffle {
        cmd += " --schedule shuffle";
    }
    if a.check_invariants {
        cmd += " --check-invariants";
    }
    if a.seeded_faults {
        cmd += " --seeded-faults";
    }
    if !a.compare_profiles.is_empty() {
        let names: Vec<&str> = a.compare_profiles.iter().map(|p| p.as_str()).collect();
        cmd += &format!(" --compare-profiles {}", names.join(","));
    }
    if !a.compare_configs.is_empty() {
        let names: Vec<String> = a
            .compare_configs
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        cmd += &format!(" --compare-configs {}", quote(&names.join(",")));
    }
    if *a.guard_engine != EngineName::Builtin {
        cmd += &format!(" --engine {}", quote(&a.guard_engine.to_string()));
    }
    cmd
}

/// How a run is named in the report.
fn label(profile: &str, platform: Option<&str>, what: &str) -> String {
    format!("{what}{profile} {}", platform.unwrap_or("-"))
}

pub fn run(a: Args<'_>) -> Result<()> {
    let choice = inputs::engine_choice(a.guard_engine)?;
    for (i, p) in a.compare_profiles.iter().enumerate() {
        if a.compare_profiles[..i].contains(p) {
            bail!("--compare-profiles: {p} is listed twice");
        }
    }
    for (i, c) in a.compare_configs.iter().enumerate() {
        if a.compare_configs[..i].contains(c) {
            bail!("--compare-configs: {} is listed twice", c.display());
        }
    }
    let sc = inputs::scenario(a.path)?;
    let mut opts = inputs::run_options(a.engine)?;
    opts.seed = a.seed;
    let profile = a.engine.profile.unwrap_or(sc.profile);
    inputs::check_engine_profile(&choice, profile)?;
    inputs::check_platform(a.engine.platform.as_deref())?;
    let compared_configs: Vec<_> = a
        .compare_configs
        .iter()
        .map(|p| inputs::user_config(Some(p)).map(|c| c.expect("a path")))
        .collect::<Result<_>>()?;
    // What the config files and scenario values do under each profile this command runs.
    let mut checks: Vec<(&loopsim_world::scenario::Scenario, ProfileName)> = vec![(&sc, profile)];
    checks.extend(a.compare_profiles.iter().map(|p| (&sc, *p)));
    inputs::config_warnings(
        &checks,
        a.engine.platform.as_deref(),
        opts.config.as_deref(),
    )?;
    for c in &compared_configs {
        inputs::config_warnings(&[(&sc, profile)], a.engine.platform.as_deref(), Some(c))?;
    }
    opts.engine = choice;
    opts.record_series = true;
    if a.check_invariants {
        opts.invariants = loopsim_world::sim::InvariantChecks::Always;
    }
    opts.seeded_faults = a.seeded_faults;
    opts.order = match a.schedule {
        Schedule::Fifo => Order::Fifo,
        Schedule::Shuffle => Order::Shuffle,
    };
    let dir = a
        .out
        .cloned()
        .unwrap_or_else(|| PathBuf::from("reports").join(&sc.file.name));
    let (summary, trace_bytes) = run_to_memory(&sc, &opts)?;
    if a.check {
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
    let first_label =
        if a.engine.is_set() || !a.compare_profiles.is_empty() || !compared_configs.is_empty() {
            label(summary.profile.as_str(), summary.platform.as_deref(), "")
        } else {
            "as written".to_string()
        };
    let mut runs = vec![(first_label, summary)];
    // The same model behaviour (scenario and seed) under other engines.
    for p in a.compare_profiles {
        let o = RunOptions {
            profile: Some(*p),
            engine: EngineChoice::Builtin,
            ..opts.clone()
        };
        let s = run_to_memory(&sc, &o)?.0;
        runs.push((label(s.profile.as_str(), s.platform.as_deref(), ""), s));
    }
    for c in &compared_configs {
        let o = RunOptions {
            config: Some(c.clone()),
            engine: EngineChoice::Builtin,
            ..opts.clone()
        };
        let s = run_to_memory(&sc, &o)?.0;
        runs.push((
            label(
                s.profile.as_str(),
                s.platform.as_deref(),
                &format!("config {}: ", c.file),
            ),
            s,
        ));
    }
    // Expectations are checked for every engine `loopsim check` checks them under (the
    // scenario's profile and those its [expect] lists or has an [expect.under] block for,
    // with any config file), so a check's rerun line shows the failure; any other profile or
    // platform is a what-if.
    let block =
        loopsim_runner::check::block_for(&sc, a.engine.profile, a.engine.platform.as_deref());
    let verdicts = block.map_or_else(Vec::new, |b| {
        loopsim_runner::check::block_verdicts(&sc, b, &runs[0].1)
    });
    if block.is_none() && !loopsim_runner::check::verdicts(&sc, &runs[0].1).is_empty() {
        let why = match (a.engine.platform.as_ref(), a.engine.profile) {
            (Some(p), _) => format!("--platform {p}"),
            (None, Some(p)) => format!("--profile {p}"),
            (None, None) => unreachable!("the scenario as written has its block"),
        };
        crate::out::warn(format!(
            "expectations not checked: {why} makes this a what-if (`loopsim check` does not run the scenario that way)"
        ));
    }
    let report_runs: Vec<ReportRun> = runs
        .into_iter()
        .map(|(label, s)| ReportRun {
            label,
            metrics: RunMetrics::from_summary(&s, ""),
            summary: s,
        })
        .collect();
    let rerun = rerun_command(&a, report_runs[0].summary.seed);
    let mut out = Outputs::new();
    let staged = report_files::stage(
        &mut out,
        &dir,
        &report_runs,
        &verdicts,
        &rerun,
        &trace_bytes,
    )?;
    out.commit()
        .map_err(|e| anyhow::anyhow!("{}: cannot write: {e}", dir.display()))?;
    match a.format {
        Format::Json => emit!("{}", String::from_utf8_lossy(&staged.json)),
        Format::Text => {
            say_raw!(
                "{}",
                loopsim_report::terminal::render(&report_runs[0].summary, &verdicts, &rerun)
            );
            if report_runs.len() > 1 {
                say!();
                for r in &report_runs {
                    let m = &r.metrics;
                    say!(
                        "{:<40} {:>6} calls  ${:>8.2}  {:>6.1} min  stop: {}  exit: {}",
                        r.label,
                        m.calls,
                        m.cost_usd,
                        m.duration_min,
                        if m.stopped() {
                            format!("{} at call {}", m.stop_code, m.stop_call.unwrap_or(0))
                        } else {
                            "-".into()
                        },
                        r.summary.parent_exit_reason
                    );
                }
            }
            say!(
                "wrote {}/{{summary.md, summary.json, runs.csv, trace.jsonl}} and {} plots",
                dir.display(),
                staged.plots.len()
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
