//! Threshold sweeps: a grid over engine settings (in Hermes's key shapes) times seeds,
//! scenarios and profiles, run in parallel; per setting, the waste of loop scenarios before
//! their stop and the false stops of healthy ones; the Pareto-optimal settings and a
//! recommendation.
//!
//! Jobs are numbered in a fixed order and results are collected in that order, so the output
//! does not depend on the thread count; `--shard K/N` runs the jobs with `job % N == K - 1`
//! and [`merge`] puts shards back together into exactly the unsharded output.

use std::fmt::Write as _;

use loopsim_engine::profile::ProfileName;
use loopsim_world::scenario::Scenario;
use loopsim_world::sim::{RunOptions, run};
use loopsim_world::trace::TraceWriter;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::metrics::{RunMetrics, round};

/// A sweep that cannot run as asked.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    #[error("--grid `{spec}`: {message}")]
    Grid { spec: String, message: String },
    #[error("--seeds `{0}`: expected START..END (end exclusive) or a single seed")]
    Seeds(String),
    #[error("--shard `{0}`: expected K/N with 1 <= K <= N")]
    Shard(String),
    #[error(transparent)]
    Scenario(#[from] loopsim_world::scenario::ScenarioError),
    #[error("run {job}: {message}")]
    Run { job: u64, message: String },
    #[error("merge: {0}")]
    Merge(String),
}

/// One swept key and its values.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Axis {
    pub key: String,
    pub values: Vec<String>,
}

/// A swept value as TOML: integers, floats and booleans are typed, anything else is a string.
pub fn toml_value(s: &str) -> toml::Value {
    if let Ok(i) = s.parse::<i64>() {
        toml::Value::Integer(i)
    } else if let Ok(f) = s.parse::<f64>() {
        toml::Value::Float(f)
    } else if s == "true" || s == "false" {
        toml::Value::Boolean(s == "true")
    } else {
        toml::Value::String(s.to_string())
    }
}

impl Axis {
    /// `key=2..8` (inclusive), `key=2..8:2` (step) or `key=a,b,c`.
    pub fn parse(spec: &str) -> Result<Axis, SweepError> {
        let err = |m: &str| SweepError::Grid {
            spec: spec.into(),
            message: m.into(),
        };
        let (key, values) = spec
            .split_once('=')
            .ok_or_else(|| err("expected KEY=VALUES"))?;
        let key = key.trim();
        if key.is_empty() || key.split('.').any(str::is_empty) {
            return Err(err("the key must be a dotted Hermes config key"));
        }
        let values: Vec<String> = if let Some((a, b)) = values.split_once("..") {
            let (b, step) = b.split_once(':').map_or((b, "1"), |(b, s)| (b, s));
            let (a, b, step): (i64, i64, i64) = (
                a.trim()
                    .parse()
                    .map_err(|_| err("range start is not an integer"))?,
                b.trim()
                    .parse()
                    .map_err(|_| err("range end is not an integer"))?,
                step.trim()
                    .parse()
                    .map_err(|_| err("range step is not an integer"))?,
            );
            if step <= 0 || a > b {
                return Err(err("a range needs START <= END and a positive step"));
            }
            if (b - a) / step > 10_000 {
                return Err(err("more than 10,000 values"));
            }
            (a..=b)
                .step_by(step as usize)
                .map(|v| v.to_string())
                .collect()
        } else {
            values.split(',').map(|v| v.trim().to_string()).collect()
        };
        if values.iter().any(String::is_empty) {
            return Err(err("empty value"));
        }
        Ok(Axis {
            key: key.into(),
            values,
        })
    }
}

/// `0..64` or `7`.
pub fn parse_seeds(spec: &str) -> Result<std::ops::Range<u64>, SweepError> {
    let bad = || SweepError::Seeds(spec.into());
    match spec.split_once("..") {
        Some((a, b)) => {
            let (a, b): (u64, u64) = (
                a.trim().parse().map_err(|_| bad())?,
                b.trim().parse().map_err(|_| bad())?,
            );
            if a >= b { Err(bad()) } else { Ok(a..b) }
        }
        None => {
            let s: u64 = spec.trim().parse().map_err(|_| bad())?;
            Ok(s..s + 1)
        }
    }
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

/// What a sweep is: enough to rebuild every job (shards check they agree on it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepSpec {
    /// Scenario paths and their content hashes.
    pub scenarios: Vec<(String, String)>,
    /// Profiles to run (empty: each scenario's own).
    pub profiles: Vec<String>,
    pub platform: Option<String>,
    pub axes: Vec<Axis>,
    pub seeds: (u64, u64),
}

impl SweepSpec {
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

    /// Checks that every setting gives a valid config for every scenario, before anything runs.
    pub fn validate(&self, scenarios: &[Scenario]) -> Result<(), SweepError> {
        for setting in self.settings() {
            for sc in scenarios {
                let mut s = sc.clone();
                for (k, v) in &setting {
                    s = s.with_config(k, toml_value(v))?;
                }
            }
        }
        Ok(())
    }

    /// The plan of all jobs; each is computed from its index, so none is kept in memory.
    pub fn plan(&self) -> Result<Plan, SweepError> {
        let profiles: Vec<Option<ProfileName>> = if self.profiles.is_empty() {
            vec![None]
        } else {
            self.profiles
                .iter()
                .map(|p| {
                    p.parse()
                        .map(Some)
                        .map_err(
                            |e: loopsim_engine::profile::UnknownProfile| SweepError::Grid {
                                spec: p.clone(),
                                message: e.to_string(),
                            },
                        )
                })
                .collect::<Result<_, _>>()?
        };
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
                sc = sc.with_config(k, toml_value(v))?;
            }
            Ok(((setting, scenario), sc))
        })
        .collect::<Result<_, SweepError>>()?;
    jobs.par_iter()
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

/// Aggregated figures of one setting (and profile).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Aggregate {
    pub setting: String,
    pub profile: String,
    pub loop_runs: u64,
    pub waste_usd_mean: f64,
    pub waste_usd_p50: f64,
    pub waste_usd_p95: f64,
    pub waste_calls_mean: f64,
    pub waste_calls_p50: f64,
    pub waste_calls_p95: f64,
    pub waste_min_mean: f64,
    pub waste_min_p50: f64,
    pub waste_min_p95: f64,
    /// Share of loop runs no guardrail ever stopped.
    pub never_stopped: f64,
    pub healthy_runs: u64,
    /// Share of healthy runs that were stopped.
    pub false_stop_rate: f64,
    /// Mean dollars saved per loop run against the baseline (the scenarios as written).
    pub saved_usd_mean: f64,
    pub pareto: bool,
}

/// Nearest-rank percentile of sorted values.
fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

fn stats(mut v: Vec<f64>) -> (f64, f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    v.sort_by(f64::total_cmp);
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    (
        round(mean, 6),
        round(pct(&v, 50.0), 6),
        round(pct(&v, 95.0), 6),
    )
}

/// The profile column when each scenario runs under its own profile.
pub const OWN_PROFILES: &str = "(each scenario's)";

/// The label of loop scenarios in rows.
const LOOP: &str = "loop";

#[derive(Default)]
struct Acc {
    waste_usd: Vec<f64>,
    waste_calls: Vec<f64>,
    waste_min: Vec<f64>,
    loops_stopped: u64,
    healthy: u64,
    healthy_stopped: u64,
    saved: Vec<f64>,
}

/// Baseline waste by scenario, profile and seed (looked up by `&str`, without allocating).
type Baselines = std::collections::BTreeMap<
    String,
    std::collections::BTreeMap<String, std::collections::BTreeMap<u64, f64>>,
>;

/// Aggregates rows as they stream by, keeping a few numbers per run, not the rows. It runs
/// on the sweep's one serial path, so a push allocates only for new keys and baselines.
pub struct Aggregator {
    by_profile: bool,
    keys: Vec<(String, String)>,
    accs: Vec<Acc>,
    /// Baseline waste per (scenario, profile, seed): baseline jobs come first.
    baseline: Baselines,
}

impl Aggregator {
    /// Per setting, and per profile too when `by_profile` (the sweep named profiles).
    pub fn new(by_profile: bool) -> Self {
        Aggregator {
            by_profile,
            keys: Vec::new(),
            accs: Vec::new(),
            baseline: Baselines::new(),
        }
    }

    pub fn push(&mut self, r: &RunMetrics) {
        let profile = if self.by_profile {
            r.profile.as_str()
        } else {
            OWN_PROFILES
        };
        // Rows come setting by setting, so the key is almost always the last one.
        let i = match self
            .keys
            .iter()
            .rposition(|(s, p)| *s == r.setting && p == profile)
        {
            Some(i) => i,
            None => {
                self.keys.push((r.setting.clone(), profile.to_string()));
                self.accs.push(Acc::default());
                self.accs.len() - 1
            }
        };
        if r.setting.is_empty() {
            self.baseline
                .entry(r.scenario.clone())
                .or_default()
                .entry(r.profile.clone())
                .or_default()
                .insert(r.seed, r.waste_usd);
        }
        let base = self
            .baseline
            .get(r.scenario.as_str())
            .and_then(|m| m.get(r.profile.as_str()))
            .and_then(|m| m.get(&r.seed))
            .copied();
        let a = &mut self.accs[i];
        if r.label == LOOP {
            a.waste_usd.push(r.waste_usd);
            a.waste_calls.push(r.waste_calls as f64);
            a.waste_min.push(r.waste_min);
            a.loops_stopped += u64::from(r.stopped());
            if let Some(b) = base {
                a.saved.push(b - r.waste_usd);
            }
        } else {
            a.healthy += 1;
            a.healthy_stopped += u64::from(r.stopped());
        }
    }

    /// The aggregates in first-seen order, with the Pareto-optimal ones marked.
    pub fn finish(self) -> Vec<Aggregate> {
        let share = |n: u64, of: usize| {
            if of == 0 {
                0.0
            } else {
                round(n as f64 / of as f64, 6)
            }
        };
        let mut out: Vec<Aggregate> = self
            .keys
            .into_iter()
            .zip(self.accs)
            .map(|((setting, profile), a)| {
                let loops = a.waste_usd.len();
                let (wu, wu50, wu95) = stats(a.waste_usd);
                let (wc, wc50, wc95) = stats(a.waste_calls);
                let (wm, wm50, wm95) = stats(a.waste_min);
                Aggregate {
                    setting,
                    profile,
                    loop_runs: loops as u64,
                    waste_usd_mean: wu,
                    waste_usd_p50: wu50,
                    waste_usd_p95: wu95,
                    waste_calls_mean: wc,
                    waste_calls_p50: wc50,
                    waste_calls_p95: wc95,
                    waste_min_mean: wm,
                    waste_min_p50: wm50,
                    waste_min_p95: wm95,
                    never_stopped: share(loops as u64 - a.loops_stopped, loops),
                    healthy_runs: a.healthy,
                    false_stop_rate: share(a.healthy_stopped, a.healthy as usize),
                    saved_usd_mean: if a.saved.is_empty() {
                        0.0
                    } else {
                        round(a.saved.iter().sum::<f64>() / a.saved.len() as f64, 6)
                    },
                    pareto: false,
                }
            })
            .collect();
        mark_pareto(&mut out);
        out
    }
}

/// Marks the Pareto-optimal settings: no other saves at least as much with at most as many
/// false stops and is strictly better in one of the two.
pub fn mark_pareto(aggs: &mut [Aggregate]) {
    let points: Vec<(f64, f64)> = aggs
        .iter()
        .map(|a| (a.saved_usd_mean, a.false_stop_rate))
        .collect();
    for a in aggs.iter_mut() {
        a.pareto = !points.iter().any(|&(saved, fs)| {
            saved >= a.saved_usd_mean
                && fs <= a.false_stop_rate
                && (saved > a.saved_usd_mean || fs < a.false_stop_rate)
        });
    }
}

/// Aggregates rows already in memory (see [`Aggregator`]).
pub fn aggregate(rows: &[RunMetrics], by_profile: bool) -> Vec<Aggregate> {
    let mut a = Aggregator::new(by_profile);
    rows.iter().for_each(|r| a.push(r));
    a.finish()
}

/// The recommended setting and why: among Pareto-optimal settings, the one that saves most
/// without false stops; if every one stops healthy work, the one with the fewest false stops.
pub fn recommend(aggs: &[Aggregate]) -> Option<(&Aggregate, String)> {
    let frontier: Vec<&Aggregate> = aggs.iter().filter(|a| a.pareto).collect();
    let clean: Vec<&&Aggregate> = frontier
        .iter()
        .filter(|a| a.false_stop_rate == 0.0)
        .collect();
    if let Some(best) = clean.iter().max_by(|a, b| {
        a.saved_usd_mean
            .total_cmp(&b.saved_usd_mean)
            .then_with(|| b.setting.cmp(&a.setting))
    }) {
        let why = format!(
            "it saves the most (${:.2} per loop run on average; loops never stopped: {:.0}%) without stopping any healthy run",
            best.saved_usd_mean,
            best.never_stopped * 100.0
        );
        return Some((best, why));
    }
    let least = frontier.iter().min_by(|a, b| {
        a.false_stop_rate
            .total_cmp(&b.false_stop_rate)
            .then_with(|| b.saved_usd_mean.total_cmp(&a.saved_usd_mean))
    })?;
    let why = format!(
        "every Pareto-optimal setting stops some healthy work; this one stops the fewest ({:.0}%) and saves ${:.2} per loop run",
        least.false_stop_rate * 100.0,
        least.saved_usd_mean
    );
    Some((least, why))
}

/// The sweep's Markdown summary.
pub fn summary_md(spec: &SweepSpec, runs: usize, aggs: &[Aggregate], plots: &[String]) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# Sweep\n");
    let _ = writeln!(
        o,
        "{} runs: {} settings (the baseline first) x {} scenarios x {} profiles x seeds {}..{}.\n",
        runs,
        spec.settings().len(),
        spec.scenarios.len(),
        spec.profiles.len().max(1),
        spec.seeds.0,
        spec.seeds.1
    );
    for a in &spec.axes {
        let _ = writeln!(o, "- `{}`: {}", a.key, a.values.join(", "));
    }
    let _ = writeln!(
        o,
        "\nThe baseline is every scenario as written. Waste is what the parent spent after its loop began; savings are against the baseline.\n"
    );
    let _ = writeln!(
        o,
        "| setting | profile | loop runs | waste $ mean / p50 / p95 | waste calls mean / p95 | waste min mean / p95 | loops never stopped | healthy runs | false stops | saved $ / loop run | Pareto |"
    );
    let _ = writeln!(
        o,
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    );
    for a in aggs {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {:.2} / {:.2} / {:.2} | {:.1} / {:.0} | {:.1} / {:.1} | {:.0}% | {} | {:.0}% | {:.2} | {} |",
            if a.setting.is_empty() {
                "(baseline)"
            } else {
                &a.setting
            },
            a.profile,
            a.loop_runs,
            a.waste_usd_mean,
            a.waste_usd_p50,
            a.waste_usd_p95,
            a.waste_calls_mean,
            a.waste_calls_p95,
            a.waste_min_mean,
            a.waste_min_p95,
            a.never_stopped * 100.0,
            a.healthy_runs,
            a.false_stop_rate * 100.0,
            a.saved_usd_mean,
            if a.pareto { "yes" } else { "" }
        );
    }
    if let Some((best, why)) = recommend(aggs) {
        let _ = writeln!(
            o,
            "\n**Recommended:** `{}` ({}): {why}.",
            if best.setting.is_empty() {
                "(baseline)"
            } else {
                &best.setting
            },
            best.profile
        );
    }
    for p in plots.iter().filter(|p| p.ends_with(".png")) {
        let _ = writeln!(o, "\n![{p}]({p})");
    }
    o
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

#[cfg(test)]
mod tests {
    use super::*;

    fn agg(setting: &str, saved: f64, false_stops: f64) -> Aggregate {
        Aggregate {
            setting: setting.into(),
            profile: "p".into(),
            loop_runs: 1,
            waste_usd_mean: 0.0,
            waste_usd_p50: 0.0,
            waste_usd_p95: 0.0,
            waste_calls_mean: 0.0,
            waste_calls_p50: 0.0,
            waste_calls_p95: 0.0,
            waste_min_mean: 0.0,
            waste_min_p50: 0.0,
            waste_min_p95: 0.0,
            never_stopped: 0.0,
            healthy_runs: 1,
            false_stop_rate: false_stops,
            saved_usd_mean: saved,
            pareto: false,
        }
    }

    fn frontier(aggs: &[Aggregate]) -> Vec<Aggregate> {
        let mut v = aggs.to_vec();
        mark_pareto(&mut v);
        v
    }

    #[test]
    fn pareto_and_recommendation() {
        let aggs = frontier(&[
            agg("", 0.0, 0.0),
            agg("a", 5.0, 0.0),
            agg("b", 4.0, 0.0),
            agg("c", 9.0, 0.5),
            agg("d", 8.0, 0.6),
        ]);
        let on: Vec<&str> = aggs
            .iter()
            .filter(|a| a.pareto)
            .map(|a| a.setting.as_str())
            .collect();
        assert_eq!(
            on,
            ["a", "c"],
            "b is dominated by a, d by c, the baseline by a"
        );
        let (best, why) = recommend(&aggs).unwrap();
        assert_eq!(best.setting, "a");
        assert!(why.contains("without stopping any healthy run"));
        let dirty = frontier(&[agg("x", 3.0, 0.2), agg("y", 6.0, 0.4)]);
        let (best, why) = recommend(&dirty).unwrap();
        assert_eq!(best.setting, "x", "fewest false stops when none is clean");
        assert!(why.contains("stops the fewest (20%)"), "{why}");
    }

    #[test]
    fn aggregator_matches_the_definitions() {
        let row = |setting: &str, label: &str, seed: u64, waste: f64, stopped: bool| {
            let mut r: RunMetrics = serde_json::from_value(serde_json::json!({
                "job": 0, "scenario": format!("{label}-s"), "label": label, "scenario_hash": "", "config_hash": "",
                "setting": setting, "profile": "p", "platform": "", "seed": seed, "exit_reason": "",
                "duration_min": 0.0, "calls": 0, "parent_calls": 0, "input_tokens": 0, "cache_read_tokens": 0,
                "output_tokens": 0, "approval_calls": 0, "cost_usd": 0.0, "model_latency_s": 0.0, "tool_time_s": 0.0,
                "wait_s": 0.0, "warnings": 0, "first_warning_call": null, "first_warning_min": null,
                "stop_code": if stopped { "x" } else { "" }, "stop_call": null, "stop_min": null,
                "waste_calls": 0, "waste_input_tokens": 0, "waste_usd": waste, "waste_min": 0.0,
                "hit_horizon": false, "trace_hash": ""
            }))
            .unwrap();
            r.waste_usd = waste;
            r
        };
        let rows = vec![
            row("", "loop", 0, 10.0, false),
            row("", "loop", 1, 20.0, false),
            row("", "healthy", 0, 0.0, false),
            row("k=1", "loop", 0, 1.0, true),
            row("k=1", "loop", 1, 3.0, true),
            row("k=1", "healthy", 0, 0.0, true),
        ];
        let a = aggregate(&rows, true);
        assert_eq!(a.len(), 2);
        assert_eq!(
            (a[0].waste_usd_mean, a[0].never_stopped, a[0].saved_usd_mean),
            (15.0, 1.0, 0.0)
        );
        assert_eq!(
            (a[1].waste_usd_mean, a[1].waste_usd_p50, a[1].waste_usd_p95),
            (2.0, 1.0, 3.0)
        );
        assert_eq!((a[1].never_stopped, a[1].false_stop_rate), (0.0, 1.0));
        assert_eq!(a[1].saved_usd_mean, 13.0, "((10-1) + (20-3)) / 2");
        assert!(
            a[0].pareto && a[1].pareto,
            "no false stops vs more savings: both optimal"
        );
    }
}
