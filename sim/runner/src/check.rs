//! Regression checks (`loopsim check`): every scenario's expectations over its seeds and
//! profiles, each `[expect.under]` block under its own profile and platform, run in parallel;
//! the coverage marks the runs reached. The results and their reports are
//! `loopsim_report::check`'s.

use loopsim_engine::profile::ProfileName;
use loopsim_report::check::{Case, CheckError, CoverageRow};
use loopsim_report::metrics::RunMetrics;
use loopsim_report::shell::quote;
use loopsim_world::scenario::Scenario;
use loopsim_world::sim::{RunOptions, run};
use loopsim_world::trace::TraceWriter;
use loopsim_world::verdict::{self, Verdict};
use rayon::prelude::*;

/// The expectations of a scenario's run: its `[expect]` block (or, for a run under another
/// profile, that profile's `[expect.under]` block), and for a `healthy` scenario that says
/// nothing about stops, that it finished without one (what the label means).
pub fn verdicts(sc: &Scenario, summary: &loopsim_world::sim::RunSummary) -> Vec<Verdict> {
    block_verdicts(sc, &sc.file.expect, summary)
}

/// The block of expectations a run of the scenario with these overrides is checked against:
/// `[expect]` for the scenario as written and the profiles it lists, an `[expect.under]`
/// entry for its key (`PROFILE` or `PROFILE@PLATFORM`), none for any other what-if.
pub fn block_for<'a>(
    sc: &'a Scenario,
    profile: Option<ProfileName>,
    platform: Option<&str>,
) -> Option<&'a loopsim_world::scenario::Expect> {
    let e = &sc.file.expect;
    let p = profile.unwrap_or(sc.profile);
    if let Some(platform) = platform {
        return e.under.get(&format!("{p}@{platform}"));
    }
    let listed = e.profiles.iter().any(|q| q.get_ref() == p.as_str());
    match profile {
        None => Some(e),
        Some(_) if sc.file.recorded => e.under.get(p.as_str()),
        Some(_) if p == sc.profile || listed => Some(e),
        Some(_) => e.under.get(p.as_str()),
    }
}

/// A block's verdicts for one run (see [`verdicts`]).
pub fn block_verdicts(
    sc: &Scenario,
    block: &loopsim_world::scenario::Expect,
    summary: &loopsim_world::sim::RunSummary,
) -> Vec<Verdict> {
    let mut expect = block.clone();
    if sc.file.label == loopsim_world::scenario::Label::Healthy
        && expect.no_hard_stop.is_none()
        && expect.stop_code.is_none()
    {
        expect.no_hard_stop = Some(true);
    }
    verdict::check(&expect, summary)
}

/// One run `loopsim check` makes of a scenario.
struct Job<'a> {
    sc: &'a Scenario,
    seed: u64,
    profile: ProfileName,
    /// Another platform than the scenario's (an `[expect.under]` key's `@PLATFORM`).
    platform: Option<&'a str>,
    /// The block it is checked against; its `[expect.under]` key, if any.
    expect: &'a loopsim_world::scenario::Expect,
    under: Option<&'a str>,
}

/// What to run for a scenario: its `[expect] seeds` and `profiles` (or its own), then each
/// `[expect.under]` entry over the same seeds.
fn matrix(sc: &Scenario) -> Vec<Job<'_>> {
    let e = &sc.file.expect;
    let seeds = if e.seeds.is_empty() {
        vec![sc.file.seed]
    } else {
        e.seeds.clone()
    };
    let profiles: Vec<ProfileName> = if e.profiles.is_empty() {
        vec![sc.profile]
    } else {
        e.profiles
            .iter()
            .filter_map(|p| p.get_ref().parse().ok())
            .collect()
    };
    let mut jobs = Vec::new();
    for profile in profiles {
        for &seed in &seeds {
            jobs.push(Job {
                sc,
                seed,
                profile,
                platform: None,
                expect: e,
                under: None,
            });
        }
    }
    for (key, block) in &e.under {
        let (p, platform) = loopsim_world::scenario::under_key(key);
        let Ok(profile) = p.parse() else { continue };
        for &seed in &seeds {
            jobs.push(Job {
                sc,
                seed,
                profile,
                platform,
                expect: block,
                under: Some(key),
            });
        }
    }
    jobs
}

/// Runs every case (in parallel; results in a fixed order: scenario, profile, seed), with a
/// user's config.yaml laid over every scenario when given.
pub fn run_checks(
    scenarios: &[Scenario],
    config: Option<&std::sync::Arc<loopsim_world::user_config::UserConfig>>,
) -> Result<Vec<Case>, CheckError> {
    let jobs: Vec<Job<'_>> = scenarios.iter().flat_map(matrix).collect();
    jobs.par_iter()
        .map(|job| {
            let (sc, seed, profile) = (job.sc, job.seed, job.profile);
            let opts = RunOptions {
                seed: Some(seed),
                // The scenario's own profile is the scenario as written (for an imported
                // session, its recorded decisions).
                profile: (profile != sc.profile || job.platform.is_some()).then_some(profile),
                platform: job.platform.map(str::to_string),
                config: config.cloned(),
                ..RunOptions::default()
            };
            let shown = job
                .under
                .map_or_else(|| profile.to_string(), str::to_string);
            let summary = run(sc, &opts, TraceWriter::hash_only()).map_err(|e| CheckError {
                path: sc.path.clone(),
                seed,
                profile: shown.clone(),
                message: e.to_string(),
            })?;
            let mut rerun = format!("loopsim run {} --seed {seed}", quote(&sc.path));
            if opts.profile.is_some() {
                rerun += &format!(" --profile {profile}");
            }
            if let Some(p) = job.platform {
                rerun += &format!(" --platform {}", quote(p));
            }
            if let Some(c) = config {
                rerun += &format!(" --config {}", quote(&c.file));
            }
            Ok(Case {
                scenario: sc.file.name.clone(),
                path: sc.path.clone(),
                scenario_hash: sc.content_hash.hex(),
                seed,
                profile: shown,
                verdicts: block_verdicts(sc, job.expect, &summary),
                metrics: RunMetrics::from_summary(&summary, ""),
                rerun,
                coverage: summary.coverage.clone(),
            })
        })
        .collect()
}

/// Every mark over the runs (in the marks' order), and the claims no run of the claiming
/// scenario met.
pub fn coverage(cases: &[Case], scenarios: &[Scenario]) -> (Vec<CoverageRow>, Vec<String>) {
    use loopsim_world::coverage::Mark;
    let mut rows = Vec::new();
    let mut unmet = Vec::new();
    for m in Mark::all() {
        let name = m.name();
        let claimed_by: Vec<String> = scenarios
            .iter()
            .filter(|sc| claims(sc, &name))
            .map(|sc| sc.file.name.clone())
            .collect();
        for sc in &claimed_by {
            if !cases
                .iter()
                .any(|c| &c.scenario == sc && c.coverage.get(m) > 0)
            {
                unmet.push(format!(
                    "{sc} claims {name}, which none of its runs reached"
                ));
            }
        }
        rows.push(CoverageRow {
            runs: cases.iter().filter(|c| c.coverage.get(m) > 0).count(),
            hits: cases.iter().map(|c| c.coverage.get(m)).sum(),
            mark: name,
            claimed_by,
        });
    }
    (rows, unmet)
}

/// Whether the scenario's `[expect]` (or one of its `under` blocks) claims the mark.
fn claims(sc: &Scenario, mark: &str) -> bool {
    let e = &sc.file.expect;
    e.covers.iter().any(|c| c == mark)
        || e.under.values().any(|u| u.covers.iter().any(|c| c == mark))
}
