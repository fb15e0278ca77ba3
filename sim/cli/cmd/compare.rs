//! `loopsim compare`: the suite (or the given scenarios) under several runtimes' governance.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Result;
use loopsim_engine::profile::{Profile, ProfileName, Runtime};
use loopsim_engine::turn::ExitReason;
use loopsim_report::comparison::{Comparison, Outcome, Row};
use loopsim_report::metrics::RunMetrics;
use loopsim_world::scenario::{Label, Scenario};
use loopsim_world::sim::RunOptions;
use loopsim_world::user_config::UserConfig;

use crate::args::Format;
use crate::inputs;
use crate::out::{emit, say, say_raw};
use crate::run_to_memory;

pub struct Args<'a> {
    pub paths: &'a [PathBuf],
    pub profiles: &'a [ProfileName],
    pub out: Option<&'a Path>,
    pub suite: Option<&'a Path>,
    pub format: Format,
}

/// The key of a profile's iteration cap and a config that lifts it, in its runtime's keys.
fn cap_key(profile: ProfileName) -> (&'static str, String) {
    let key = profile.runtime().cap_key();
    let lifted = match profile.runtime() {
        Runtime::Hermes => "agent:\n  max_turns: 1000000\n".to_string(),
        // The article's loop has a token budget besides its cap: both are lifted.
        Runtime::ReactLoop => format!("{key}: 1000000\nmax_total_tokens: null\n"),
        _ => format!("{key}: 1000000\n"),
    };
    (key, lifted)
}

fn run_one(
    sc: &Scenario,
    profile: ProfileName,
    config: Option<Arc<UserConfig>>,
) -> Result<RunMetrics> {
    let opts = RunOptions {
        profile: Some(profile),
        config,
        ..RunOptions::default()
    };
    let (summary, _) = run_to_memory(sc, &opts)?;
    Ok(RunMetrics::from_summary(&summary, ""))
}

fn outcome(sc: &Scenario, profile: ProfileName) -> Result<Outcome> {
    if let Some(why) = sc.unsupported_under(profile) {
        // The reason without the file name and the advice: the table names both.
        let why = why
            .split_once(": ")
            .map_or(why.as_str(), |(_, w)| w)
            .split(", which ")
            .next()
            .unwrap_or_default()
            .to_string();
        return Ok(Outcome::NotExpressible { why });
    }
    let m = run_one(sc, profile, None)?;
    let mut o = Outcome::of(&m);
    if let Outcome::Stopped { by, avoid_with, .. } = &mut o
        && sc.file.label == Label::Healthy
        && ExitReason::parse(by).is_some_and(|r| {
            r.is_runtime_limit() || matches!(r, ExitReason::MaxIterationsReached { .. })
        })
    {
        // The cap stopped a healthy run: the cap it needs is its calls with none.
        let (key, lifted) = cap_key(profile);
        let uncapped = UserConfig::parse(&lifted, "(no cap)")?;
        let free = run_one(sc, profile, Some(Arc::new(uncapped)))?;
        if loopsim_report::comparison::stopped_by(&free).is_none() {
            let needed = profile.runtime().cap_for_calls(free.parent_calls);
            let mut setting = format!("{key}: {needed}");
            let tokens = free.input_tokens + free.output_tokens;
            if let Some(budget) = Profile::get(profile).turn.token_budget
                && tokens >= budget
            {
                setting.push_str(&format!(", max_total_tokens: {tokens}"));
            }
            *avoid_with = Some(setting);
        }
    }
    Ok(o)
}

pub fn run(a: Args<'_>) -> Result<()> {
    let scenarios = inputs::scenarios(a.paths, a.suite)?;
    let mut rows = Vec::new();
    for sc in &scenarios {
        let cells = a
            .profiles
            .iter()
            .map(|&p| outcome(sc, p))
            .collect::<Result<Vec<_>>>()?;
        rows.push(Row {
            scenario: sc.file.name.clone(),
            label: sc.file.label.to_string(),
            cells,
        });
    }
    let names: Vec<String> = a.profiles.iter().map(|p| p.to_string()).collect();
    let mut rerun = String::from("loopsim compare");
    for p in a.paths {
        rerun.push(' ');
        rerun.push_str(&loopsim_report::shell::quote(&p.display().to_string()));
    }
    rerun.push_str(&format!(" --profiles {}", names.join(",")));
    let c = Comparison {
        profiles: names,
        rows,
        rerun,
    };
    let dir = a
        .out
        .map_or_else(|| PathBuf::from("reports/compare"), Path::to_path_buf);
    let md = c.markdown();
    let json = serde_json::to_string_pretty(&c)? + "\n";
    let mut out = loopsim_report::output::Outputs::new();
    for (name, bytes) in [
        ("summary.md", md.as_bytes()),
        ("summary.json", json.as_bytes()),
    ] {
        out.write(&dir.join(name), bytes)
            .map_err(|e| anyhow::anyhow!("{}: cannot write: {e}", dir.join(name).display()))?;
    }
    out.commit()
        .map_err(|e| anyhow::anyhow!("{}: cannot write: {e}", dir.display()))?;
    match a.format {
        Format::Json => emit!("{json}"),
        Format::Text => {
            say_raw!("{md}");
            say!("wrote {}/{{summary.md, summary.json}}", dir.display());
        }
    }
    Ok(())
}
