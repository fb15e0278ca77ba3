//! `loopsim sweep` and `loopsim merge`: a grid of settings over seeds, scenarios and
//! profiles; shards put back together.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use loopsim_engine::profile::ProfileName;
use loopsim_report::output::Outputs;
use loopsim_report::{metrics, plots, sweep};
use loopsim_world::scenario::Scenario;

use crate::args::Format;
use crate::inputs;
use crate::out::{emit, say, say_raw, warn};

/// Runs one process makes at most: the aggregation keeps a few numbers per run, so a larger
/// sweep is split with `--shard`.
pub const MAX_RUNS: u64 = 20_000_000;

/// What a sweep folder holds besides its rows: the spec and how many jobs the whole sweep has.
#[derive(serde::Serialize, serde::Deserialize)]
struct Manifest {
    spec: sweep::SweepSpec,
    total_jobs: u64,
    shard: Option<(u64, u64)>,
}

pub struct Args<'a> {
    pub paths: &'a [PathBuf],
    pub grid: &'a [String],
    pub seeds: &'a std::ops::Range<u64>,
    pub profiles: &'a [String],
    pub platform: Option<&'a str>,
    pub config: Option<&'a Path>,
    pub out: Option<&'a PathBuf>,
    pub shard: Option<(u64, u64)>,
    pub suite: Option<&'a Path>,
    pub format: Format,
}

pub fn run(a: Args<'_>) -> Result<()> {
    let axes: Vec<sweep::Axis> = a
        .grid
        .iter()
        .map(|g| sweep::Axis::parse(g))
        .collect::<Result<_, _>>()?;
    let seeds = a.seeds.clone();
    let profiles = sweep::parse_profiles(a.profiles)?;
    let shard = a.shard;
    inputs::check_platform(a.platform)?;
    let user = inputs::user_config(a.config)?;
    let loaded = inputs::scenarios(a.paths, a.suite)?;
    let checks: Vec<(&Scenario, ProfileName)> = loaded
        .iter()
        .flat_map(|sc| {
            let own = vec![sc.profile];
            let ps = if profiles.is_empty() {
                own
            } else {
                profiles.clone()
            };
            ps.into_iter().map(move |p| (sc, p))
        })
        .collect();
    inputs::config_warnings(&checks, a.platform, user.as_deref())?;
    // The grid's keys are laid over the config file, which is laid over each scenario.
    let scenarios: Vec<Scenario> = match &user {
        Some(u) => loaded.iter().map(|s| s.with_user_config(u)).collect(),
        None => loaded,
    };
    let spec = sweep::SweepSpec {
        scenarios: scenarios
            .iter()
            .map(|s| (s.path.clone(), s.content_hash.hex()))
            .collect(),
        profiles: a.profiles.to_vec(),
        platform: a.platform.map(str::to_string),
        config: user.as_ref().map(|u| (u.file.clone(), u.hash.hex())),
        axes,
        seeds: (seeds.start, seeds.end),
        baseline: vec![],
    };
    let mut spec = spec;
    let report = spec.validate(&scenarios)?;
    for w in &report.warnings {
        warn(w);
    }
    spec.baseline = report.baseline;
    let plan = loopsim_runner::sweep::plan(&spec)?;
    let total = plan.len();
    let (first, step) = match shard {
        Some((k, n)) => (k - 1, n),
        None => (0, 1),
    };
    let mine = total.saturating_sub(first).div_ceil(step);
    if mine > MAX_RUNS {
        bail!(
            "sweep: {mine} runs in this process; loopsim runs at most {MAX_RUNS} in one (split the sweep with --shard K/N, N >= {})",
            total.div_ceil(MAX_RUNS)
        );
    }
    let dir = a
        .out
        .cloned()
        .unwrap_or_else(|| PathBuf::from("reports/sweep"));
    let manifest = Manifest {
        spec,
        total_jobs: total,
        shard,
    };
    // Rows stream to sweep.csv and into the aggregation as they come: memory stays flat.
    let mut outputs = Outputs::new();
    let csv_path = dir.join("sweep.csv");
    let ctx = || format!("{}: cannot write", csv_path.display());
    let mut file = outputs.create(&csv_path).with_context(ctx)?;
    file.write_all(&metrics::csv_header()).with_context(ctx)?;
    let mut agg = sweep::Aggregator::new(!manifest.spec.profiles.is_empty());
    let mut runs = 0usize;
    let bar = progress_bar(mine);
    loopsim_runner::sweep::run_jobs(
        &manifest.spec,
        &plan,
        &scenarios,
        (first..total).step_by(step as usize),
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
    outputs.finish(file).with_context(ctx)?;
    finish(outputs, &dir, &manifest, runs, agg, a.format)
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

/// Stages the manifest, and for a whole sweep the aggregate, its plots and summary.md; then
/// puts every file in place.
fn finish(
    mut outputs: Outputs,
    dir: &Path,
    manifest: &Manifest,
    runs: usize,
    agg: sweep::Aggregator,
    format: Format,
) -> Result<()> {
    let ctx = || format!("{}: cannot write", dir.display());
    outputs
        .write(
            &dir.join("sweep.json"),
            &serde_json::to_vec_pretty(manifest)?,
        )
        .with_context(ctx)?;
    if let Some((k, n)) = manifest.shard {
        outputs.commit().with_context(ctx)?;
        match format {
            Format::Json => emit!(
                "{}",
                serde_json::json!({"shard": [k, n], "runs": runs, "out": dir.display().to_string()})
            ),
            Format::Text => say!(
                "shard: {runs} runs written to {} (combine shards with `loopsim merge`)",
                dir.display()
            ),
        }
        return Ok(());
    }
    let aggs = agg.finish();
    let keys: Vec<&str> = manifest.spec.axes.iter().map(|a| a.key.as_str()).collect();
    outputs
        .write(
            &dir.join("aggregate.csv"),
            &sweep::aggregate_csv(&keys, &aggs)?,
        )
        .with_context(ctx)?;
    let staging = outputs.staging_dir(dir).with_context(ctx)?;
    plots::sweep_plots(&staging, &manifest.spec, &aggs).with_context(ctx)?;
    let plot_files = outputs.adopt(&staging, dir).with_context(ctx)?;
    let md = sweep::summary_md(&manifest.spec, runs, &aggs, &plot_files);
    outputs
        .write(&dir.join("summary.md"), md.as_bytes())
        .with_context(ctx)?;
    outputs
        .commit()
        .map_err(|e| anyhow::anyhow!("{}: cannot write: {e}", dir.display()))?;
    match format {
        Format::Json => {
            let best = sweep::recommend(&aggs).map(|(a, why)| {
                serde_json::json!({"setting": a.setting, "profile": a.profile, "why": why})
            });
            emit!(
                "{}",
                serde_json::to_string_pretty(&serde_json::json!({
                    "runs": runs,
                    "spec": &manifest.spec,
                    "aggregates": aggs,
                    "recommended": best,
                    "out": dir.display().to_string(),
                }))?
            );
        }
        Format::Text => {
            say_raw!("{md}");
            say!(
                "\nwrote {}/{{sweep.csv, aggregate.csv, summary.md, sweep.json}} and {} plots",
                dir.display(),
                plot_files.len()
            );
        }
    }
    Ok(())
}

pub fn merge(shards: &[PathBuf], out: &Path, format: Format) -> Result<()> {
    let mut parts = Vec::new();
    let mut total = None;
    for dir in shards {
        let manifest = loopsim_world::input::read_bounded(
            &dir.join("sweep.json"),
            64 << 20,
            "sweep manifests",
        )
        .with_context(|| format!("{}: not a sweep folder (sweep.json)", dir.display()))?;
        let m: Manifest = serde_json::from_slice(&manifest)
            .with_context(|| format!("{}/sweep.json", dir.display()))?;
        if total.is_some_and(|t| t != m.total_jobs) {
            bail!("{}: the shards come from different sweeps", dir.display());
        }
        total = Some(m.total_jobs);
        let csv_path = dir.join("sweep.csv");
        let bytes = loopsim_world::input::read_bounded(&csv_path, 16 << 30, "sweep rows")
            .with_context(|| csv_path.display().to_string())?;
        if bytes.is_empty() {
            bail!(
                "{}: empty (not even a header): the shard did not finish",
                csv_path.display()
            );
        }
        let rows = metrics::from_csv(&bytes).with_context(|| csv_path.display().to_string())?;
        // A shard holds every job whose index is K-1 modulo N.
        let expected = match m.shard {
            Some((k, n)) if k == 0 || k > n => {
                bail!("{}/sweep.json: shard {k}/{n} is not a shard", dir.display())
            }
            Some((k, n)) => m.total_jobs.saturating_sub(k - 1).div_ceil(n),
            None => m.total_jobs,
        };
        if rows.len() as u64 != expected {
            bail!(
                "{}: {} of the shard's {expected} rows (it did not finish)",
                csv_path.display(),
                rows.len()
            );
        }
        parts.push((m.spec, rows));
    }
    let total = total.unwrap_or(0);
    let (spec, rows) = loopsim_runner::sweep::merge(parts, total)?;
    let manifest = Manifest {
        spec,
        total_jobs: total,
        shard: None,
    };
    let mut outputs = Outputs::new();
    outputs
        .write(&out.join("sweep.csv"), &metrics::to_csv(&rows)?)
        .with_context(|| format!("{}: cannot write", out.join("sweep.csv").display()))?;
    let mut agg = sweep::Aggregator::new(!manifest.spec.profiles.is_empty());
    rows.iter().for_each(|r| agg.push(r));
    finish(outputs, out, &manifest, rows.len(), agg, format)
}
