//! `loopsim replay`: a trace re-executed byte for byte, or a what-if under another profile,
//! config or platform beside the recorded run.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use loopsim_report::markdown::ReportRun;
use loopsim_report::metrics::RunMetrics;
use loopsim_report::output::Outputs;
use loopsim_world::engine_bridge::EngineChoice;
use loopsim_world::scenario::Scenario;
use loopsim_world::scheduler::Order;
use loopsim_world::sim::{RunOptions, RunSummary};
use loopsim_world::trace::{self, Header};
use loopsim_world::user_config::UserConfig;

use crate::args::{EngineArgs, Format};
use crate::inputs;
use crate::out::{CheckFailed, emit, say};
use crate::run_to_memory;
use loopsim_report::report_files;
use loopsim_report::shell::quote;

/// The scenario a trace carries (or, for a version 1 trace, names by path), checked against
/// the hash the trace recorded.
fn trace_scenario(h: &Header, shown: &str, trace_path: &Path) -> Result<Scenario> {
    if let Some(sc) = trace::carried_scenario(h, shown)? {
        return Ok(sc);
    }
    // A version 1 trace names its scenario by path: here, or beside the trace.
    let named = PathBuf::from(&h.scenario_path);
    let beside = trace_path.parent().map(|d| d.join(&named));
    let path = if named.exists() {
        named
    } else {
        beside.filter(|b| b.exists()).unwrap_or(named)
    };
    let sc = inputs::scenario(&path).with_context(|| format!("{shown}: the trace's scenario"))?;
    if sc.content_hash.hex() != h.scenario_hash {
        bail!(
            "{shown}:1: scenario_hash: {} has changed since the trace was recorded",
            h.scenario_path
        );
    }
    Ok(sc)
}

/// The default folder of a what-if: named by what it changes, so a second what-if does not
/// replace the first.
fn what_if_dir(name: &str, engine: &EngineArgs) -> PathBuf {
    let mut parts = vec![format!("{name}-what-if")];
    if let Some(p) = engine.profile {
        parts.push(p.to_string());
    }
    if let Some(p) = &engine.platform {
        parts.push(loopsim_report::plots::slug(p));
    }
    if let Some(c) = &engine.config {
        let stem = c
            .file_stem()
            .map_or("config".into(), |s| s.to_string_lossy().into_owned());
        parts.push(loopsim_report::plots::slug(&stem));
    }
    PathBuf::from("reports").join(parts.join("-"))
}

/// The rerun line of the report in `dir`, if it holds one.
fn existing_rerun(dir: &Path) -> Option<String> {
    let bytes = std::fs::read(dir.join("summary.json")).ok()?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    v.get("rerun")?.as_str().map(str::to_string)
}

/// The events of a trace: neither header nor end line (they differ by construction).
fn body(t: &[u8]) -> &[u8] {
    let start = t
        .iter()
        .position(|&b| b == b'\n')
        .map_or(t.len(), |i| i + 1);
    let end = t[..t.len().saturating_sub(1)]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(start, |i| (i + 1).max(start));
    &t[start..end]
}

pub fn run(path: &Path, engine: &EngineArgs, format: Format, out: Option<&PathBuf>) -> Result<()> {
    let recorded = trace::read_file(path)?;
    let shown = path.display().to_string();
    let h = trace::verify(&recorded, &shown)?;
    let sc = trace_scenario(&h, &shown, path)?;
    if h.schedule == "live" {
        return replay_live(&recorded, &h, &sc, &shown, engine, format);
    }
    let traced = Traced::read(&h, &shown)?;
    if !engine.is_set() {
        return prove_identical(&sc, &traced.options, &recorded, &h, format);
    }
    let w = what_if(&sc, &traced, &h, &recorded, engine, &shown, out)?;
    print_what_if(&w, format)
}

/// How a trace was run, read from its header: the options that re-run it as it was.
struct Traced {
    options: RunOptions,
    /// The config.yaml the trace carries, if any.
    config: Option<Arc<UserConfig>>,
    /// A recorded session's trace replays its own decisions: no profile override.
    own_decisions: bool,
}

impl Traced {
    fn read(h: &Header, shown: &str) -> Result<Traced> {
        let config = match (&h.config_file, &h.config_text) {
            (Some(name), Some(text)) => Some(Arc::new(
                UserConfig::parse(text, name)
                    .with_context(|| format!("{shown}:1: the embedded config file"))?,
            )),
            _ => None,
        };
        let order = if h.schedule == "shuffle" {
            Order::Shuffle
        } else {
            Order::Fifo
        };
        let own_decisions = h.engine.as_deref() == Some("recorded");
        let options = RunOptions {
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
            config: config.clone(),
            record_series: false,
            engine: EngineChoice::Builtin,
            wrong_port: None,
            guard_log: None,
            invariants: Default::default(),
            seeded_faults: match h.faults.as_deref() {
                None => false,
                Some("seeded") => true,
                Some(other) => bail!(
                    "{shown}:1: header field `faults`: unknown value `{other}` (expected `seeded`)"
                ),
            },
        };
        Ok(Traced {
            options,
            config,
            own_decisions,
        })
    }
}

/// Re-runs the trace as it was and requires it byte for byte (exit 1 at the first difference).
fn prove_identical(
    sc: &Scenario,
    base: &RunOptions,
    recorded: &[u8],
    h: &Header,
    format: Format,
) -> Result<()> {
    let (_, bytes) = run_to_memory(sc, base)?;
    match trace::first_difference(recorded, &bytes) {
        None => {
            let lines = bytes.iter().filter(|&&b| b == b'\n').count();
            match format {
                Format::Json => emit!(
                    "{}",
                    serde_json::json!({"identical": true, "lines": lines, "scenario": h.scenario, "seed": h.seed})
                ),
                Format::Text => say!(
                    "identical: {lines} lines re-executed byte for byte ({} seed {})",
                    h.scenario,
                    h.seed
                ),
            }
            Ok(())
        }
        Some((line, old, new)) => Err(CheckFailed(format!(
            "traces differ at line {line}\n  recorded: {old}\n  replayed: {new}"
        ))
        .into()),
    }
}

/// A what-if: the traced run and the same run under other settings, with its report written.
struct WhatIf {
    before: RunSummary,
    after: RunSummary,
    own_decisions: bool,
    /// The first trace line where the two differ (1-based, header included), if any.
    diverged: Option<usize>,
    rerun: String,
    dir: PathBuf,
}

fn what_if(
    sc: &Scenario,
    traced: &Traced,
    h: &Header,
    recorded: &[u8],
    engine: &EngineArgs,
    shown: &str,
    out: Option<&PathBuf>,
) -> Result<WhatIf> {
    inputs::check_platform(engine.platform.as_deref())?;
    let base = &traced.options;
    let series = RunOptions {
        record_series: true,
        ..base.clone()
    };
    let (before, _) = run_to_memory(sc, &series)?;
    let mut what_if = inputs::run_options(engine)?;
    if what_if.config.is_none() {
        what_if.config = traced.config.clone();
    }
    what_if.seed = Some(h.seed);
    what_if.order = base.order;
    what_if.record_series = true;
    what_if.profile = what_if
        .profile
        .or(base.profile)
        .or_else(|| h.profile.parse().ok());
    what_if.platform = what_if.platform.or(base.platform.clone());
    let profile = what_if.profile.unwrap_or(sc.profile);
    inputs::config_warnings(
        &[(sc, profile)],
        what_if.platform.as_deref(),
        what_if.config.as_deref(),
    )?;
    let (after, after_trace) = run_to_memory(sc, &what_if)?;
    let rerun = format!("loopsim replay {}{}", quote(shown), engine.flags());
    let dir = report_dir(out, sc, engine, &rerun)?;
    let label_of = |s: &RunSummary, what: &str| {
        let platform = s.platform.as_deref().unwrap_or("no platform");
        if s.recorded {
            format!("{what} ({platform})")
        } else {
            format!("{what} ({} {platform})", s.profile)
        }
    };
    let traced_as = if traced.own_decisions {
        "recorded"
    } else {
        "traced"
    };
    let runs = vec![
        ReportRun {
            label: label_of(&before, traced_as),
            metrics: RunMetrics::from_summary(&before, ""),
            summary: before.clone(),
        },
        ReportRun {
            label: label_of(&after, "what if"),
            metrics: RunMetrics::from_summary(&after, ""),
            summary: after.clone(),
        },
    ];
    let mut outputs = Outputs::new();
    report_files::stage(&mut outputs, &dir, &runs, &[], &rerun, &after_trace)?;
    outputs
        .commit()
        .map_err(|e| anyhow::anyhow!("{}: cannot write: {e}", dir.display()))?;
    let diverged = trace::first_difference(body(recorded), body(&after_trace)).map(|d| d.0 + 1);
    Ok(WhatIf {
        before,
        after,
        own_decisions: traced.own_decisions,
        diverged,
        rerun,
        dir,
    })
}

/// Where a what-if's report goes: `--out`, else a folder named by what the what-if changes,
/// which never replaces the report of another what-if (another trace, say) unasked.
fn report_dir(
    out: Option<&PathBuf>,
    sc: &Scenario,
    engine: &EngineArgs,
    rerun: &str,
) -> Result<PathBuf> {
    if let Some(d) = out {
        return Ok(d.clone());
    }
    let d = what_if_dir(&sc.file.name, engine);
    if let Some(other) = existing_rerun(&d)
        && other != rerun
    {
        bail!(
            "{} holds the report of another what-if (rerun: {other}); give --out DIR, or remove it",
            d.display()
        );
    }
    Ok(d)
}

/// The what-if as JSON, or as a table of the two runs with what the what-if saved.
fn print_what_if(w: &WhatIf, format: Format) -> Result<()> {
    let (before, after) = (&w.before, &w.after);
    if format == Format::Json {
        emit!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "recorded": before,
                "counterfactual": after,
                "first_divergent_line": w.diverged,
                "rerun": w.rerun,
                "out": w.dir.display().to_string(),
            }))?
        );
        return Ok(());
    }
    let unknown = before.price_unknown || after.price_unknown;
    let usd = |x: f64| loopsim_report::terminal::usd(x, unknown);
    let row = |name: &str, s: &RunSummary| {
        let p = &s.agents[0];
        format!(
            "| {name} | {} {} | {} | {} | {} | {} | {:.1} min | {} | {} |",
            if s.recorded {
                "recorded"
            } else {
                s.profile.as_str()
            },
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
    say!(
        "| run | engine | calls | input tokens | output tokens | cost | duration | first warning or notice | stop |"
    );
    say!("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    say!(
        "{}",
        row(
            if w.own_decisions {
                "recorded"
            } else {
                "traced"
            },
            before
        )
    );
    say!("{}", row("counterfactual", after));
    say!(
        "saved: {} calls, {} input tokens, {}, {:.1} min; {}",
        before.total.model_calls as i64 - after.total.model_calls as i64,
        before.total.input_tokens as i64 - after.total.input_tokens as i64,
        usd(before.total.cost_usd() - after.total.cost_usd()),
        (before.duration_us as f64 - after.duration_us as f64) / 60e6,
        w.diverged
            .map_or("no divergence: the same events".into(), |l| format!(
                "first divergence at trace line {l}"
            ))
    );
    if let Some(st) = &after.settings {
        say!("in the what-if, hard stops are {}", st.hard_stop_rule);
    }
    if let Some(n) = &before.source_note {
        say!("{n}");
    }
    say!(
        "wrote {}/{{summary.md, summary.json, runs.csv, trace.jsonl}} and plots",
        w.dir.display()
    );
    say!("rerun: {}", w.rerun);
    Ok(())
}

/// A live run's trace: the simulation of the same scenario, seed, profile and settings,
/// compared with what the runtime did, as `loopsim diff --live` compares them.
fn replay_live(
    recorded: &[u8],
    h: &Header,
    sc: &Scenario,
    shown: &str,
    engine: &EngineArgs,
    format: Format,
) -> Result<()> {
    if engine.is_set() {
        bail!(
            "{shown}: a live run's trace replays as it was run; --profile, --config and --platform are for simulated traces"
        );
    }
    let config = match (&h.config_file, &h.config_text) {
        (Some(name), Some(text)) => Some(Arc::new(
            UserConfig::parse(text, name)
                .with_context(|| format!("{shown}:1: the embedded config file"))?,
        )),
        _ => None,
    };
    let opts = RunOptions {
        seed: Some(h.seed),
        profile: Some(h.profile.parse()?),
        platform: h.platform.clone(),
        config,
        ..RunOptions::default()
    };
    let (_, bytes) = run_to_memory(sc, &opts)?;
    let live = super::live::trace_events(recorded);
    let simulated = super::live::trace_events(&bytes);
    let d = loopsim_live::compare::first_divergence(&simulated, &live);
    let engine_name = h.engine.as_deref().unwrap_or("live");
    if format == Format::Json {
        emit!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "trace": shown,
                "runtime": engine_name,
                "simulated": h.profile,
                "identical": d.is_none(),
            }))?
        );
    }
    match d {
        None => {
            if format == Format::Text {
                say!(
                    "identical: {shown} ({engine_name}) and the simulation under {} agree on every compared event",
                    h.profile
                );
            }
            Ok(())
        }
        Some(d) => Err(CheckFailed(format!(
            "{shown} ({engine_name}) and the simulation under {} diverge: {}",
            h.profile,
            super::live::describe(&d)
        ))
        .into()),
    }
}
