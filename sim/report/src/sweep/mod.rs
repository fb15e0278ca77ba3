//! Threshold sweeps: a grid over engine settings (in Hermes's key shapes) times seeds,
//! scenarios and profiles, run in parallel; per setting, the waste of loop scenarios before
//! their stop and the false stops of healthy ones; the Pareto-optimal settings and a
//! recommendation.
//!
//! This module is what a sweep is ([`SweepSpec`], its grid's axes) and what its rows add up
//! to ([`Aggregate`], the summary); `loopsim-runner`'s `sweep` runs the jobs.

use loopsim_engine::profile::ProfileName;
use loopsim_world::scenario::Scenario;
use serde::{Deserialize, Serialize};

use crate::shell::quote;

mod aggregate;
pub mod grid;
mod summary_md;

pub use aggregate::{
    Aggregate, Aggregator, OWN_PROFILES, aggregate, mark_pareto, recommend, to_csv as aggregate_csv,
};
pub use grid::{Axis, GridReport};
pub use summary_md::summary_md;

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

    /// Every setting as the number of its value on each axis: the baseline first (no axis
    /// set), then the grid's cross product in axis order.
    pub fn setting_values(&self) -> Vec<Vec<usize>> {
        let mut out: Vec<Vec<usize>> = vec![vec![]];
        if self.axes.is_empty() {
            return out;
        }
        let mut grid: Vec<Vec<usize>> = vec![vec![]];
        for axis in &self.axes {
            grid = grid
                .into_iter()
                .flat_map(|prefix| {
                    (0..axis.values.len()).map(move |i| {
                        let mut p = prefix.clone();
                        p.push(i);
                        p
                    })
                })
                .collect();
        }
        out.extend(grid);
        out
    }

    /// Every setting as `(key, value)` pairs, in [`SweepSpec::setting_values`]'s order.
    pub fn settings(&self) -> Vec<Vec<(String, String)>> {
        self.setting_values()
            .iter()
            .map(|s| {
                self.axes
                    .iter()
                    .zip(s)
                    .map(|(a, &i)| (a.key.clone(), a.values[i].clone()))
                    .collect()
            })
            .collect()
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
}
