//! Running a sweep: every job of a [`SweepSpec`] (setting x scenario x profile x seed) on
//! rayon's pool, in chunks, results handed on in job order; shards put back together.
//!
//! Jobs are numbered in a fixed order and results are collected in that order, so the output
//! does not depend on the thread count; `--shard K/N` runs the jobs with `job % N == K - 1`
//! and [`merge`] puts shards back together into exactly the unsharded output.

use loopsim_engine::profile::ProfileName;
use loopsim_report::metrics::RunMetrics;
use loopsim_report::sweep::{SweepError, SweepSpec, parse_profiles};
use loopsim_world::scenario::Scenario;
use loopsim_world::sim::{RunOptions, run};
use loopsim_world::trace::TraceWriter;
use rayon::prelude::*;

/// The plan of all of a sweep's jobs; each is computed from its index, so none is kept in memory.
pub fn plan(spec: &SweepSpec) -> Result<Plan, SweepError> {
    let profiles: Vec<Option<ProfileName>> = if spec.profiles.is_empty() {
        vec![None]
    } else {
        parse_profiles(&spec.profiles)?
            .into_iter()
            .map(Some)
            .collect()
    };
    let count = spec.setting_count()?;
    let seeds = spec.seeds.1.saturating_sub(spec.seeds.0);
    count
        .checked_mul(spec.scenarios.len() as u64)
        .and_then(|n| n.checked_mul(profiles.len() as u64))
        .and_then(|n| n.checked_mul(seeds))
        .ok_or_else(|| SweepError::Size("the sweep has more jobs than can be counted".into()))?;
    let settings = spec.setting_values();
    let labels = spec.settings().iter().map(|s| setting_label(s)).collect();
    Ok(Plan {
        settings,
        labels,
        profiles,
        scenarios: spec.scenarios.len() as u64,
        seeds: spec.seeds,
    })
}

/// Every job of a sweep in its fixed order: setting, scenario, profile, seed.
pub struct Plan {
    /// Each setting as its value's number on each axis (the baseline: none).
    settings: Vec<Vec<usize>>,
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

    /// Setting `i` as its value's number on each axis, in axis order (empty: the baseline).
    pub fn setting(&self, i: usize) -> &[usize] {
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
            for (axis, &value) in spec.axes.iter().zip(plan.setting(setting)) {
                sc = axis.apply(&sc, value)?;
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
