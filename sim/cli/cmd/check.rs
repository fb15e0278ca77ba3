//! `loopsim check` (every scenario's expectations) and `loopsim gate` (a baseline's runs
//! against their recorded figures).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use loopsim_engine::profile::ProfileName;
use loopsim_report::check;
use loopsim_report::output::Outputs;
use loopsim_world::scenario::Scenario;

use crate::args::Format;
use crate::inputs;
use crate::out::{CheckFailed, emit, say, say_raw};

/// Each (scenario, profile) a check runs, for the config warnings.
fn checked_profiles(scenarios: &[Scenario]) -> Vec<(&Scenario, ProfileName)> {
    scenarios
        .iter()
        .flat_map(|sc| {
            let mut ps = vec![sc.profile];
            ps.extend(
                sc.file
                    .expect
                    .profiles
                    .iter()
                    .filter_map(|p| p.get_ref().parse::<ProfileName>().ok()),
            );
            ps.dedup();
            ps.into_iter().map(move |p| (sc, p))
        })
        .collect()
}

pub struct CheckArgs<'a> {
    pub paths: &'a [PathBuf],
    pub junit: Option<&'a PathBuf>,
    pub save: Option<&'a PathBuf>,
    pub config: Option<&'a Path>,
    pub suite: Option<&'a Path>,
    pub format: Format,
    pub coverage: bool,
}

pub fn run_check(a: CheckArgs<'_>) -> Result<()> {
    let scenarios = inputs::scenarios(a.paths, a.suite)?;
    let user = inputs::user_config(a.config)?;
    inputs::config_warnings(&checked_profiles(&scenarios), None, user.as_deref())?;
    let cases = loopsim_runner::check::run_checks(&scenarios, user.as_ref())?;
    let mut outputs = Outputs::new();
    if let Some(j) = a.junit {
        outputs
            .write(j, check::junit_xml(&cases).as_bytes())
            .with_context(|| format!("{}: cannot write", j.display()))?;
    }
    if let Some(b) = a.save {
        let baseline = check::Baseline::from_cases(
            &cases,
            user.as_ref().map(|u| (u.file.clone(), u.hash.hex())),
        );
        outputs
            .write(b, &serde_json::to_vec_pretty(&baseline)?)
            .with_context(|| format!("{}: cannot write", b.display()))?;
    }
    outputs
        .commit()
        .context("cannot write the check's outputs")?;
    let (rows, unmet) = loopsim_runner::check::coverage(&cases, &scenarios);
    match (a.format, a.coverage) {
        (Format::Json, false) => emit!("{}", serde_json::to_string_pretty(&cases)?),
        (Format::Json, true) => emit!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "cases": cases, "coverage": rows, "unmet": unmet,
            }))?
        ),
        (Format::Text, coverage) => {
            say_raw!("{}", check::text_report(&cases));
            if coverage {
                say_raw!("\n{}", check::coverage_table(&rows, cases.len(), &unmet));
            }
        }
    }
    let failed = cases.iter().filter(|c| !c.passed()).count();
    if !unmet.is_empty() {
        return Err(CheckFailed(format!(
            "{} claimed coverage marks unreached (and {failed} of {} checks failed)",
            unmet.len(),
            cases.len()
        ))
        .into());
    }
    if failed > 0 {
        return Err(CheckFailed(format!("{failed} of {} checks failed", cases.len())).into());
    }
    Ok(())
}

/// The baseline's scenarios, found by name: with `--suite DIR`, in that folder; otherwise at
/// the path the baseline recorded if a scenario of that name is there, else in the suite
/// (`./scenarios` or the built-in one). A scenario whose content changed since the baseline
/// is run as it is now and reported by the gate.
fn baseline_scenarios(b: &check::Baseline, suite: Option<&Path>) -> Result<Vec<Scenario>> {
    let available = inputs::suite(suite)?;
    let mut out = Vec::new();
    for name in b.scenario_names() {
        let entry = b
            .entries
            .iter()
            .find(|e| e.scenario == name)
            .expect("named");
        let at = Path::new(&entry.path);
        let recorded = (suite.is_none() && at.is_file())
            .then(|| inputs::scenario(at))
            .transpose()?
            .filter(|s| s.file.name == name);
        match recorded.or_else(|| available.iter().find(|s| s.file.name == name).cloned()) {
            Some(s) => out.push(s),
            None => bail!(
                "the baseline's scenario `{name}` is not in the suite{} (give --suite DIR)",
                if suite.is_none() {
                    format!(" nor at {}", entry.path)
                } else {
                    String::new()
                }
            ),
        }
    }
    Ok(out)
}

pub struct GateArgs<'a> {
    pub baseline: &'a Path,
    /// The allowed increase per metric, as a fraction.
    pub max_increase: f64,
    pub any: bool,
    pub update: bool,
    pub bmf: Option<&'a PathBuf>,
    pub config: Option<&'a Path>,
    pub suite: Option<&'a Path>,
    pub format: Format,
}

pub fn run_gate(a: GateArgs<'_>) -> Result<()> {
    let tolerance = a.max_increase;
    let path = a.baseline;
    let text = loopsim_world::input::read_bounded(path, 256 << 20, "baselines")
        .with_context(|| format!("{}: the baseline", path.display()))?;
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
    if !(1..=2).contains(&baseline.version) {
        bail!(
            "{}: version {} is not one this loopsim reads (1 or 2)",
            path.display(),
            baseline.version
        );
    }
    if baseline.entries.is_empty() {
        bail!(
            "{}: the baseline has no runs, so it gates nothing (save one with `loopsim check --save-baseline`)",
            path.display()
        );
    }
    let scenarios = baseline_scenarios(&baseline, a.suite)?;
    let user = inputs::user_config(a.config)?;
    inputs::config_warnings(&checked_profiles(&scenarios), None, user.as_deref())?;
    let cases = loopsim_runner::check::run_checks(&scenarios, user.as_ref())?;
    let current = check::Baseline::from_cases(
        &cases,
        user.as_ref().map(|u| (u.file.clone(), u.hash.hex())),
    );
    let diffs = check::gate(&baseline, &current, tolerance, a.any);
    let mut outputs = Outputs::new();
    if let Some(b) = a.bmf {
        outputs
            .write(b, &serde_json::to_vec_pretty(&current.bmf())?)
            .with_context(|| format!("{}: cannot write", b.display()))?;
    }
    if a.update {
        outputs
            .write(path, &serde_json::to_vec_pretty(&current)?)
            .with_context(|| format!("{}: cannot write", path.display()))?;
    }
    outputs
        .commit()
        .context("cannot write the gate's outputs")?;
    let failure = check::failure_reason(&diffs);
    match a.format {
        Format::Json => emit!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "runs": current.entries.len(),
                "changes": diffs,
                "summary": check::change_counts(&diffs),
                "failed": failure.is_some() && !a.update,
            }))?
        ),
        Format::Text => say_raw!("{}", check::gate_report(&diffs, current.entries.len())),
    }
    if a.update {
        say!("baseline updated: {}", path.display());
        return Ok(());
    }
    if let Some(why) = failure {
        return Err(CheckFailed(format!(
            "gate failed: {why} against {} (rerun with --update to accept)",
            path.display()
        ))
        .into());
    }
    Ok(())
}
