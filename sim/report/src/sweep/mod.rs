//! Threshold sweeps: a grid over engine settings (in Hermes's key shapes) times seeds,
//! scenarios and profiles, run in parallel; per setting, the waste of loop scenarios before
//! their stop and the false stops of healthy ones; the Pareto-optimal settings and a
//! recommendation.
//!
//! Jobs are numbered in a fixed order and results are collected in that order, so the output
//! does not depend on the thread count; `--shard K/N` runs the jobs with `job % N == K - 1`
//! and [`merge`] puts shards back together into exactly the unsharded output.

use loopsim_engine::profile::ProfileName;
use loopsim_world::scenario::Scenario;
use loopsim_world::sim::{RunOptions, run};
use loopsim_world::trace::TraceWriter;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::metrics::RunMetrics;
use crate::shell::quote;

mod aggregate;
pub mod grid;
mod summary;

pub use aggregate::{
    Aggregate, Aggregator, OWN_PROFILES, aggregate, mark_pareto, recommend, to_csv as aggregate_csv,
};
pub use grid::{Axis, GridReport};
pub use summary::summary_md;

/// A sweep that cannot run as asked.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    #[error("--grid `{spec}`: {message}")]
    Grid { spec: String, message: String },
    #[error("--seeds `{spec}`: {message}")]
    Seeds { spec: String, message: String },
    #[error("--profiles `{spec}`: {message}")]
    Profiles { spec: String, message: String },
    #[error("--shard `{0}`: expected K/N with 1 <= K <= N")]
    Shard(String),
    #[error("sweep: {0}")]
    Size(String),
    #[error(transparent)]
    Scenario(#[from] loopsim_world::scenario::ScenarioError),
    #[error("run {job}: {message}")]
    Run { job: u64, message: String },
    #[error("merge: {0}")]
    Merge(String),
}

/// Settings (the grid's cross product and the baseline), at most.
pub const MAX_SETTINGS: u64 = 100_000;

/// `0..64` (64 seeds), `0..=63` (the same) or `7`.
pub fn parse_seeds(spec: &str) -> Result<std::ops::Range<u64>, SweepError> {
    let bad = |message: String| SweepError::Seeds {
        spec: spec.into(),
        message,
    };
    let (start, last) = match crate::range::parse(spec, false) {
        Some(r) => {
            let r = r.map_err(bad)?;
            (r.start, r.last)
        }
        None => {
            let s: i128 = spec.trim().parse().map_err(|_| {
                bad("expected START..END (END excluded), START..=END or one seed".into())
            })?;
            (s, s)
        }
    };
    if start < 0 || last >= u64::MAX as i128 {
        return Err(bad(format!("seeds are 0 to {}", u64::MAX - 1)));
    }
    Ok(start as u64..last as u64 + 1)
}

/// `K/N`.
pub fn parse_shard(spec: &str) -> Result<(u64, u64), SweepError> {
    let bad = || SweepError::Shard(spec.into());
    let (k, n) = spec.split_once('/').ok_or_else(bad)?;
    let (k, n): (u64, u64) = (
        k.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    if k == 0 || n == 0 || k > n {
        Err(bad())
    } else {
        Ok((k, n))
    }
}

/// Profiles by name, for `--profiles`.
pub fn parse_profiles(names: &[String]) -> Result<Vec<ProfileName>, SweepError> {
    let mut out: Vec<ProfileName> = Vec::new();
    for p in names {
        let name: ProfileName =
            p.parse()
                .map_err(
                    |e: loopsim_engine::profile::UnknownProfile| SweepError::Profiles {
                        spec: p.clone(),
                        message: e.to_string(),
                    },
                )?;
        if out.contains(&name) {
            return Err(SweepError::Profiles {
                spec: p.clone(),
                message: "listed twice".into(),
            });
        }
        out.push(name);
    }
    Ok(out)
}

/// What a sweep is: enough to rebuild every job (shards check they agree on it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepSpec {
    /// Scenario paths and their content hashes.
    pub scenarios: Vec<(String, String)>,
    /// Profiles to run (empty: each scenario's own).
    pub profiles: Vec<String>,
    pub platform: Option<String>,
    /// The config.yaml laid over every scenario: its name and hash.
    #[serde(default)]
    pub config: Option<(String, String)>,
    pub axes: Vec<Axis>,
    pub seeds: (u64, u64),
    /// How the baseline runs each scenario (its hard-stop rule), for the summary.
    #[serde(default)]
    pub baseline: Vec<String>,
}

impl SweepSpec {
    /// How many settings: the baseline and the grid's cross product.
    pub fn setting_count(&self) -> Result<u64, SweepError> {
        let grid = self
            .axes
            .iter()
            .try_fold(1u64, |n, a| n.checked_mul(a.values.len() as u64))
            .filter(|&n| n < MAX_SETTINGS)
            .ok_or_else(|| {
                SweepError::Size(format!(
                    "the grid has more than {MAX_SETTINGS} settings; sweep fewer values at once"
                ))
            })?;
        Ok(if self.axes.is_empty() { 1 } else { grid + 1 })
    }

    /// Every setting: the baseline first, then the grid's cross product in axis order.
    pub fn settings(&self) -> Vec<Vec<(String, String)>> {
        let mut out: Vec<Vec<(String, String)>> = vec![vec![]];
        if self.axes.is_empty() {
            return out;
        }
        let mut grid: Vec<Vec<(String, String)>> = vec![vec![]];
        for axis in &self.axes {
            grid = grid
                .into_iter()
                .flat_map(|prefix| {
                    axis.values.iter().map(move |v| {
                        let mut p = prefix.clone();
                        p.push((axis.key.clone(), v.clone()));
                        p
                    })
                })
                .collect();
        }
        out.extend(grid);
        out
    }

    /// The command that runs this sweep again (every setting that changes its rows).
    pub fn command(&self) -> String {
        let mut cmd = String::from("loopsim sweep");
        for (path, _) in &self.scenarios {
            cmd += &format!(" {}", quote(path));
        }
        for a in &self.axes {
            cmd += &format!(
                " --grid {}",
                quote(&format!("{}={}", a.key, a.values.join(",")))
            );
        }
        cmd += &format!(" --seeds {}..{}", self.seeds.0, self.seeds.1);
        if !self.profiles.is_empty() {
            cmd += &format!(" --profiles {}", self.profiles.join(","));
        }
        if let Some(p) = &self.platform {
            cmd += &format!(" --platform {}", quote(p));
        }
        if let Some((file, _)) = &self.config {
            cmd += &format!(" --config {}", quote(file));
        }
        cmd
    }

    /// Checks the grid against the scenarios before anything runs: keys, values and their
    /// effect (see [`grid::check_effect`]). Returns the warnings.
    pub fn validate(&self, scenarios: &[Scenario]) -> Result<GridReport, SweepError> {
        grid::check_axes(&self.axes)?;
        self.setting_count()?;
        let profiles: Vec<ProfileName> = self
            .profiles
            .iter()
            .filter_map(|p| p.parse().ok())
            .collect();
        grid::check_effect(&self.axes, scenarios, &profiles, self.platform.as_deref())
    }

    /// The plan of all jobs; each is computed from its index, so none is kept in memory.
    pub fn plan(&self) -> Result<Plan, SweepError> {
        let profiles: Vec<Option<ProfileName>> = if self.profiles.is_empty() {
            vec![None]
        } else {
            parse_profiles(&self.profiles)?
                .into_iter()
                .map(Some)
                .collect()
        };
        let count = self.setting_count()?;
        let seeds = self.seeds.1.saturating_sub(self.seeds.0);
        count
            .checked_mul(self.scenarios.len() as u64)
            .and_then(|n| n.checked_mul(profiles.len() as u64))
            .and_then(|n| n.checked_mul(seeds))
            .ok_or_else(|| {
                SweepError::Size("the sweep has more jobs than can be counted".into())
            })?;
        let settings = self.settings();
        let labels = settings.iter().map(|s| setting_label(s)).collect();
        Ok(Plan {
            settings,
            labels,
            profiles,
            scenarios: self.scenarios.len() as u64,
            seeds: self.seeds,
        })
    }
}

/// Every job of a sweep in its fixed order: setting, scenario, profile, seed.
pub struct Plan {
    settings: Vec<Vec<(String, String)>>,
    labels: Vec<String>,
    profiles: Vec<Option<ProfileName>>,
    scenarios: u64,
    seeds: (u64, u64),
}

/// One run of a sweep. Setting 0 is the scenario as written (the baseline).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Job {
    pub index: u64,
    pub setting: usize,
    pub scenario: usize,
    pub profile: Option<ProfileName>,
    pub seed: u64,
}

impl Plan {
    pub fn len(&self) -> u64 {
        self.settings.len() as u64
            * self.scenarios
            * self.profiles.len() as u64
            * (self.seeds.1 - self.seeds.0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The job with this index.
    pub fn job(&self, index: u64) -> Job {
        let seeds = self.seeds.1 - self.seeds.0;
        let profiles = self.profiles.len() as u64;
        let seed = self.seeds.0 + index % seeds;
        let rest = index / seeds;
        let profile = self.profiles[(rest % profiles) as usize];
        let rest = rest / profiles;
        let scenario = (rest % self.scenarios) as usize;
        let setting = (rest / self.scenarios) as usize;
        Job {
            index,
            setting,
            scenario,
            profile,
            seed,
        }
    }

    pub fn setting(&self, i: usize) -> &[(String, String)] {
        &self.settings[i]
    }

    /// `key=value;key=value` of setting `i` (empty for the baseline).
    pub fn label(&self, i: usize) -> &str {
        &self.labels[i]
    }
}

/// `key=value;key=value` (empty for the baseline).
pub fn setting_label(setting: &[(String, String)]) -> String {
    setting
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(";")
}

/// Jobs run in parallel in chunks of this many; results leave each chunk in job order, so
/// memory stays flat however long the sweep.
pub const CHUNK: usize = 1024;

fn run_job(
    spec: &SweepSpec,
    plan: &Plan,
    sc: &Scenario,
    job: &Job,
) -> Result<RunMetrics, SweepError> {
    let opts = RunOptions {
        seed: Some(job.seed),
        profile: job.profile,
        platform: spec.platform.clone(),
        ..RunOptions::default()
    };
    let summary = run(sc, &opts, TraceWriter::off()).map_err(|e| SweepError::Run {
        job: job.index,
        message: e.to_string(),
    })?;
    let mut m = RunMetrics::from_summary(&summary, plan.label(job.setting));
    m.job = job.index;
    Ok(m)
}

/// Runs one chunk of jobs in parallel: each (setting, scenario) is configured once.
fn run_chunk(
    spec: &SweepSpec,
    plan: &Plan,
    scenarios: &[Scenario],
    jobs: &[Job],
    done: &(dyn Fn() + Sync),
    encode: &(dyn Fn(&RunMetrics) -> Vec<u8> + Sync),
) -> Result<Vec<(RunMetrics, Vec<u8>)>, SweepError> {
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    for j in jobs {
        if !pairs.contains(&(j.setting, j.scenario)) {
            pairs.push((j.setting, j.scenario));
        }
    }
    let prepared: Vec<((usize, usize), Scenario)> = pairs
        .par_iter()
        .map(|&(setting, scenario)| {
            let mut sc = scenarios[scenario].clone();
            for (k, v) in plan.setting(setting) {
                let axis = spec.axes.iter().find(|a| a.key == *k).expect("a grid key");
                sc = axis.apply(&sc, v)?;
            }
            Ok(((setting, scenario), sc))
        })
        .collect::<Result<_, SweepError>>()?;
    // Small pieces: the chunk ends when its last piece does, and a large last piece would
    // leave the other threads idle at the barrier.
    jobs.par_iter()
        .with_max_len(4)
        .map(|job| {
            let sc = &prepared
                .iter()
                .find(|(k, _)| *k == (job.setting, job.scenario))
                .expect("prepared")
                .1;
            let m = run_job(spec, plan, sc, job)?;
            let bytes = encode(&m);
            done();
            Ok((m, bytes))
        })
        .collect()
}

/// Runs the jobs with these indices (ascending) on rayon's pool. Each result is encoded by
/// `encode` in parallel (a CSV line, say) and handed to `sink` in job order, while the next
/// chunk already runs; `done` is called once per finished job (for a progress bar).
pub fn run_jobs(
    spec: &SweepSpec,
    plan: &Plan,
    scenarios: &[Scenario],
    indices: impl Iterator<Item = u64>,
    done: &(dyn Fn() + Sync),
    encode: &(dyn Fn(&RunMetrics) -> Vec<u8> + Sync),
    sink: &mut (dyn FnMut(RunMetrics, Vec<u8>) -> Result<(), SweepError> + Send),
) -> Result<(), SweepError> {
    let mut indices = indices.peekable();
    let mut pending: Vec<(RunMetrics, Vec<u8>)> = Vec::new();
    loop {
        let jobs: Vec<Job> = indices.by_ref().take(CHUNK).map(|i| plan.job(i)).collect();
        if jobs.is_empty() && pending.is_empty() {
            return Ok(());
        }
        let previous = std::mem::take(&mut pending);
        let (computed, sunk) = rayon::join(
            || run_chunk(spec, plan, scenarios, &jobs, done, encode),
            || previous.into_iter().try_for_each(|(r, b)| sink(r, b)),
        );
        sunk?;
        pending = computed?;
    }
}

/// Puts shard outputs back together: the rows of every shard, checked to be one sweep with
/// every job exactly once, in job order.
pub fn merge(
    parts: Vec<(SweepSpec, Vec<RunMetrics>)>,
    total_jobs: u64,
) -> Result<(SweepSpec, Vec<RunMetrics>), SweepError> {
    let mut iter = parts.into_iter();
    let (spec, mut rows) = iter
        .next()
        .ok_or_else(|| SweepError::Merge("no shards given".into()))?;
    for (s, r) in iter {
        if s != spec {
            return Err(SweepError::Merge(
                "the shards come from different sweeps (their sweep.json differ)".into(),
            ));
        }
        rows.extend(r);
    }
    rows.sort_by_key(|r| r.job);
    for (i, r) in rows.iter().enumerate() {
        if r.job != i as u64 {
            return Err(SweepError::Merge(format!(
                "job {i} is {}",
                if r.job > i as u64 {
                    "missing"
                } else {
                    "duplicated"
                }
            )));
        }
    }
    if rows.len() as u64 != total_jobs {
        return Err(SweepError::Merge(format!(
            "{} of {total_jobs} jobs present",
            rows.len()
        )));
    }
    Ok((spec, rows))
}
